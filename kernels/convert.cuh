/* convert.cuh -- the element types on the device: f32, f16 and bf16
 * storage with f32 arithmetic (the elementwise, epilogue and sparse
 * kernels).
 *
 * elem<T>:
 *   kVec      elements in 16 bytes;
 *   kAcc      f32 storage: GELU's accurate form (gelu.cuh), else the fast;
 *   to_f      one element to f32;
 *   from_f    f32 to one element, rounded to nearest even;
 *   from_d    double to one element, rounded once;
 *   load      one element through the read-only data cache (__ldg), as f32;
 *   unpack    a raw 16-byte vector into kVec floats;
 *   pack      kVec floats into a raw 16-byte vector (round to nearest even).
 */
#ifndef GK_CONVERT_CUH
#define GK_CONVERT_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

namespace gk {

struct elem_f32 {
  static constexpr int kVec = 4;
  static constexpr bool kAcc = true;
  __device__ static float load(const float *p) { return __ldg(p); }
  __device__ static float to_f(float v) { return v; }
  __device__ static float from_f(float v) { return v; }
  __device__ static float from_d(double v) { return (float)v; }
  __device__ static void unpack(const uint4 &v, float *f) {
    f[0] = __uint_as_float(v.x);
    f[1] = __uint_as_float(v.y);
    f[2] = __uint_as_float(v.z);
    f[3] = __uint_as_float(v.w);
  }
  __device__ static uint4 pack(const float *f) {
    return make_uint4(__float_as_uint(f[0]), __float_as_uint(f[1]), __float_as_uint(f[2]),
                      __float_as_uint(f[3]));
  }
};

/* The 16-bit types: H one element, H2 a pair, and CUDA's conversions
 * between them and f32 (cuda_fp16.h, cuda_bf16.h). */
template <typename H, typename H2, float (*ToF)(H), H (*FromF)(float), H (*FromD)(double),
          float2 (*ToF2)(H2), H2 (*FromF2)(float, float)>
struct elem16 {
  static constexpr int kVec = 8;
  static constexpr bool kAcc = false;
  __device__ static float load(const H *p) {
    const unsigned short bits = __ldg(reinterpret_cast<const unsigned short *>(p));
    return to_f(*reinterpret_cast<const H *>(&bits));
  }
  __device__ static float to_f(H v) { return ToF(v); }
  __device__ static H from_f(float v) { return FromF(v); }
  __device__ static H from_d(double v) { return FromD(v); }
  __device__ static void unpack(const uint4 &v, float *f) {
    const unsigned w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int i = 0; i < 4; i++) {
      const float2 p = ToF2(*reinterpret_cast<const H2 *>(&w[i]));
      f[2 * i] = p.x;
      f[2 * i + 1] = p.y;
    }
  }
  __device__ static uint4 pack(const float *f) {
    unsigned w[4];
#pragma unroll
    for (int i = 0; i < 4; i++) {
      const H2 h = FromF2(f[2 * i], f[2 * i + 1]);
      w[i] = *reinterpret_cast<const unsigned *>(&h);
    }
    return make_uint4(w[0], w[1], w[2], w[3]);
  }
};

/* elem<T>: the traits of element type T */
template <typename T>
struct elem_of;
template <>
struct elem_of<float> {
  using type = elem_f32;
};
template <>
struct elem_of<__half> {
  using type = elem16<__half, __half2, __half2float, __float2half_rn, __double2half,
                      __half22float2, __floats2half2_rn>;
};
template <>
struct elem_of<__nv_bfloat16> {
  using type = elem16<__nv_bfloat16, __nv_bfloat162, __bfloat162float, __float2bfloat16_rn,
                      __double2bfloat16, __bfloat1622float2, __floats2bfloat162_rn>;
};
template <typename T>
using elem = typename elem_of<T>::type;

} // namespace gk

#endif /* GK_CONVERT_CUH */
