/* spmm.cuh -- what the sparse kernels (spmm.cu, csr.cu) share: element
 * traits for f32/f16/bf16 (f32 arithmetic, 16-byte vectors as raw uint4)
 * and a typed launcher that reports launch errors through its return value
 * (cudaLaunchKernel), so the caller's cudaGetLastError state is never
 * touched. */
#ifndef GK_SPMM_CUH
#define GK_SPMM_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

namespace gk_sparse {

/* ---- launching ------------------------------------------------------------ */

template <typename T>
struct same {
  typedef T type;
};

/* k<<<grid, block, 0, stream>>>(args...) with the error returned. */
template <typename... P>
inline cudaError_t launch(void (*k)(P...), dim3 grid, dim3 block, cudaStream_t stream,
                          typename same<P>::type... args) {
  void *argv[] = {(void *)&args..., nullptr};
  return cudaLaunchKernel((const void *)k, grid, block, argv, 0, stream);
}

/* ---- elements --------------------------------------------------------------- */

/* kVec elements make 16 bytes.  load() reads one element as f32; unpack()
 * turns a raw 16-byte vector into kVec floats; pack() the reverse (round to
 * nearest even); partial() reads cnt < kVec elements into a raw vector
 * (the rest zero). */
template <typename T>
struct elt;

template <>
struct elt<float> {
  static constexpr int kVec = 4;
  __device__ static float load(const float *p) { return __ldg(p); }
  __device__ static float to_f(float v) { return v; }
  __device__ static float from_f(float v) { return v; }
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

template <typename H, typename H2>
struct elt16 {
  static constexpr int kVec = 8;
  __device__ static float load(const H *p) {
    const unsigned short bits = __ldg(reinterpret_cast<const unsigned short *>(p));
    return to_f(*reinterpret_cast<const H *>(&bits));
  }
  __device__ static float to_f(H v);
  __device__ static H from_f(float v);
  __device__ static float2 to_f2(H2 v);
  __device__ static H2 from_f2(float a, float b);
  __device__ static void unpack(const uint4 &v, float *f) {
    const unsigned w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int i = 0; i < 4; i++) {
      const float2 p = to_f2(*reinterpret_cast<const H2 *>(&w[i]));
      f[2 * i] = p.x;
      f[2 * i + 1] = p.y;
    }
  }
  __device__ static uint4 pack(const float *f) {
    unsigned w[4];
#pragma unroll
    for (int i = 0; i < 4; i++) {
      const H2 h = from_f2(f[2 * i], f[2 * i + 1]);
      w[i] = *reinterpret_cast<const unsigned *>(&h);
    }
    return make_uint4(w[0], w[1], w[2], w[3]);
  }
};

template <>
__device__ inline float elt16<__half, __half2>::to_f(__half v) { return __half2float(v); }
template <>
__device__ inline __half elt16<__half, __half2>::from_f(float v) { return __float2half_rn(v); }
template <>
__device__ inline float2 elt16<__half, __half2>::to_f2(__half2 v) { return __half22float2(v); }
template <>
__device__ inline __half2 elt16<__half, __half2>::from_f2(float a, float b) {
  return __floats2half2_rn(a, b);
}
template <>
__device__ inline float elt16<__nv_bfloat16, __nv_bfloat162>::to_f(__nv_bfloat16 v) {
  return __bfloat162float(v);
}
template <>
__device__ inline __nv_bfloat16 elt16<__nv_bfloat16, __nv_bfloat162>::from_f(float v) {
  return __float2bfloat16_rn(v);
}
template <>
__device__ inline float2 elt16<__nv_bfloat16, __nv_bfloat162>::to_f2(__nv_bfloat162 v) {
  return __bfloat1622float2(v);
}
template <>
__device__ inline __nv_bfloat162 elt16<__nv_bfloat16, __nv_bfloat162>::from_f2(float a,
                                                                              float b) {
  return __floats2bfloat162_rn(a, b);
}

template <>
struct elt<__half> : elt16<__half, __half2> {};
template <>
struct elt<__nv_bfloat16> : elt16<__nv_bfloat16, __nv_bfloat162> {};

} // namespace gk_sparse

#endif /* GK_SPMM_CUH */
