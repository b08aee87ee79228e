/* im2col.cuh -- small device helpers of the im2col kernels: division by a
 * run-time constant (quotient, and quotient with remainder), and a raw
 * vector type per access width. */
#ifndef GK_IM2COL_CUH
#define GK_IM2COL_CUH

#include <cuda_runtime.h>
#include <stdint.h>

#include "im2col.h"

namespace gk {

/* n / f.d for n < 2^31 (see gk_fastdiv in im2col.h). */
__device__ __forceinline__ uint32_t fdiv(const gk_fastdiv &f, uint32_t n) {
  return (__umulhi(n, f.mul) + n) >> f.shift;
}

/* n / d and n % d, d the divisor of f (passed as the caller holds it). */
struct qr {
  uint32_t q, r;
};
__device__ __forceinline__ qr divmod(const gk_fastdiv &f, uint32_t d, uint32_t n) {
  const uint32_t q = fdiv(f, n);
  return qr{q, n - q * d};
}

/* Raw bits of one access of B bytes: im2col moves elements without looking
 * at them, so one kernel serves f32, f16 and bf16 (zero is all-zero bits in
 * each). */
template <int B>
struct raw;
template <>
struct raw<2> {
  typedef unsigned short t;
};
template <>
struct raw<4> {
  typedef unsigned int t;
};
template <>
struct raw<8> {
  typedef uint2 t;
};
template <>
struct raw<16> {
  typedef uint4 t;
};

} // namespace gk

#endif /* GK_IM2COL_CUH */
