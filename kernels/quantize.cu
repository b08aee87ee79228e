/* quantize.cu -- f32/f16/bf16 <-> FP8 conversion with f32 factors.
 *
 * Memory-bound: one read and one write per element.  A step of a thread is
 * one 16-byte vector of the wider type (4 f32 or 8 f16/bf16) and the 4 or 8
 * FP8 bytes beside it, so a warp's loads and stores are contiguous on both
 * sides; each thread issues kInFlight steps' loads before converting, in a
 * grid-stride loop.  The elements after the last whole vector, and every
 * element when the pointers are not 16-byte aligned, go one by one.  The conversion is CUDA's (cuda_fp8.h: cvt with .satfinite on
 * sm_89+, the same rounding in software before): round to nearest even,
 * finite values beyond the format saturated, NaN kept.  Infinite inputs are
 * fixed up afterwards (E5M2's infinity; NaN in E4M3).  amax: the bits of
 * |x| as unsigned integers order every non-negative float and put NaN
 * above infinity, so a warp/block maximum and one atomicMax per block
 * combine it. */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include "common.cuh"
#include "convert.cuh"
#include "quantize.h"

namespace {

using gk::elem;

constexpr int kBlock = 256;
constexpr int kInFlight = 4; /* 16-byte loads a thread issues before it converts */

template <int FMT>
struct fp8_fmt {
  static constexpr __nv_fp8_interpretation_t kInterp = FMT ? __NV_E5M2 : __NV_E4M3;
  /* an infinite product: E5M2's infinity, E4M3's NaN (it has no infinity) */
  __device__ static unsigned char inf(float p) {
    const unsigned char sign = signbit(p) ? 0x80 : 0;
    return sign | (FMT ? 0x7c : 0x7f);
  }
};

/* Two products to two FP8 bytes (first in the low byte). */
template <int FMT>
__device__ __forceinline__ unsigned short to_fp8x2(float x0, float x1, float s) {
  const float p0 = x0 * s, p1 = x1 * s;
  unsigned short r =
      __nv_cvt_float2_to_fp8x2(make_float2(p0, p1), __NV_SATFINITE, fp8_fmt<FMT>::kInterp);
  if (isinf(x0) && isinf(p0)) r = (r & 0xff00) | fp8_fmt<FMT>::inf(p0);
  if (isinf(x1) && isinf(p1)) r = (r & 0x00ff) | (fp8_fmt<FMT>::inf(p1) << 8);
  return r;
}

template <int FMT>
__device__ __forceinline__ unsigned char to_fp8(float x, float s) {
  return (unsigned char)(to_fp8x2<FMT>(x, 0.0f, s) & 0xff);
}

/* Two FP8 bytes to two floats (exact: both formats embed in f16). */
template <int FMT>
__device__ __forceinline__ float2 from_fp8x2(unsigned short v) {
  const __half2_raw h = __nv_cvt_fp8x2_to_halfraw2(v, fp8_fmt<FMT>::kInterp);
  return __half22float2(*reinterpret_cast<const __half2 *>(&h));
}

__device__ __forceinline__ unsigned abs_bits(float v) { return __float_as_uint(v) & 0x7fffffffu; }

/* The block's maximum of m, combined into *amax by one atomic. */
__device__ void amax_reduce(unsigned m, unsigned *amax) {
  __shared__ unsigned warp_max[kBlock / 32];
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) m = max(m, __shfl_xor_sync(0xffffffffu, m, o));
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  if (lane == 0) warp_max[w] = m;
  __syncthreads();
  if (w == 0) {
    m = lane < (int)(blockDim.x >> 5) ? warp_max[lane] : 0u;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) m = max(m, __shfl_xor_sync(0xffffffffu, m, o));
    if (lane == 0 && m) atomicMax(amax, m);
  }
}

/* V 8-bit values: 4 in a 32-bit word (next to 4 floats), 8 in two (next
 * to 8 halves), so that both sides of a step are whole, coalesced vectors. */
template <int V>
struct narrow;
template <>
struct narrow<4> {
  typedef unsigned type;
  __device__ static type pack(const unsigned short *p) { return p[0] | ((unsigned)p[1] << 16); }
  __device__ static void unpack(type v, unsigned short *p) {
    p[0] = (unsigned short)v;
    p[1] = (unsigned short)(v >> 16);
  }
};
template <>
struct narrow<8> {
  typedef uint2 type;
  __device__ static type pack(const unsigned short *p) {
    return make_uint2(p[0] | ((unsigned)p[1] << 16), p[2] | ((unsigned)p[3] << 16));
  }
  __device__ static void unpack(type v, unsigned short *p) {
    narrow<4>::unpack(v.x, p);
    narrow<4>::unpack(v.y, p + 2);
  }
};

template <typename T, int FMT>
__global__ void __launch_bounds__(kBlock)
    quantize_kernel(const T *__restrict__ x, unsigned char *__restrict__ y, int64_t n, int64_t cols,
                    const float *__restrict__ scale, int rowwise, unsigned *amax, int vec) {
  constexpr int V = elem<T>::kVec;
  typedef narrow<V> nv_t;
  const int64_t tid = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  const int64_t nth = (int64_t)gridDim.x * blockDim.x;
  const float s0 = (scale && !rowwise) ? __ldg(scale) : 1.0f;
  unsigned m = 0;
  int64_t start = 0;
  if (vec) {
    const int64_t nv = n / V;
    const uint4 *src = reinterpret_cast<const uint4 *>(x);
    typename nv_t::type *dst = reinterpret_cast<typename nv_t::type *>(y);
    for (int64_t v0 = tid; v0 < nv; v0 += nth * kInFlight) {
      uint4 raw[kInFlight];
#pragma unroll
      for (int u = 0; u < kInFlight; u++)
        if (v0 + u * nth < nv) raw[u] = __ldcs(src + v0 + u * nth);
#pragma unroll
      for (int u = 0; u < kInFlight; u++) {
        const int64_t v = v0 + u * nth;
        if (v >= nv) break;
        float f[V];
        elem<T>::unpack(raw[u], f);
        const float s = rowwise ? __ldg(scale + v * V / cols) : s0;
        unsigned short q[V / 2];
#pragma unroll
        for (int j = 0; j < V / 2; j++) q[j] = to_fp8x2<FMT>(f[2 * j], f[2 * j + 1], s);
        __stcs(dst + v, nv_t::pack(q));
#pragma unroll
        for (int j = 0; j < V; j++) m = max(m, abs_bits(f[j]));
      }
    }
    start = nv * V;
  }
  for (int64_t i = start + tid; i < n; i += nth) {
    const float f = elem<T>::to_f(x[i]);
    y[i] = to_fp8<FMT>(f, rowwise ? __ldg(scale + i / cols) : s0);
    m = max(m, abs_bits(f));
  }
  if (amax) amax_reduce(m, amax);
}

template <typename T, int FMT>
__global__ void __launch_bounds__(kBlock)
    dequantize_kernel(const unsigned char *__restrict__ x, T *__restrict__ y, int64_t n,
                      int64_t cols, const float *__restrict__ scale, int rowwise, int vec) {
  constexpr int V = elem<T>::kVec;
  typedef narrow<V> nv_t;
  const int64_t tid = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  const int64_t nth = (int64_t)gridDim.x * blockDim.x;
  const float s0 = (scale && !rowwise) ? __ldg(scale) : 1.0f;
  int64_t start = 0;
  if (vec) {
    const int64_t nv = n / V;
    const typename nv_t::type *src = reinterpret_cast<const typename nv_t::type *>(x);
    uint4 *dst = reinterpret_cast<uint4 *>(y);
    for (int64_t v0 = tid; v0 < nv; v0 += nth * kInFlight) {
      typename nv_t::type raw[kInFlight];
#pragma unroll
      for (int u = 0; u < kInFlight; u++)
        if (v0 + u * nth < nv) raw[u] = __ldcs(src + v0 + u * nth);
#pragma unroll
      for (int u = 0; u < kInFlight; u++) {
        const int64_t v = v0 + u * nth;
        if (v >= nv) break;
        const float s = rowwise ? __ldg(scale + v * V / cols) : s0;
        unsigned short q[V / 2];
        nv_t::unpack(raw[u], q);
        float f[V];
#pragma unroll
        for (int j = 0; j < V / 2; j++) {
          const float2 p = from_fp8x2<FMT>(q[j]);
          f[2 * j] = p.x * s;
          f[2 * j + 1] = p.y * s;
        }
        __stcs(dst + v, elem<T>::pack(f));
      }
    }
    start = nv * V;
  }
  for (int64_t i = start + tid; i < n; i += nth) {
    const float f = from_fp8x2<FMT>(x[i]).x;
    y[i] = elem<T>::from_f(f * (rowwise ? __ldg(scale + i / cols) : s0));
  }
}

/* Blocks: enough for the work, at most 8 of 256 threads per SM (a full
 * SM), the grid-stride loop doing the rest. */
dim3 grid_for(int64_t n, int vec, int sm_count) {
  const int64_t work = vec ? (n / 4 > 0 ? n / 4 : 1) : n;
  int64_t blocks = (work + kBlock - 1) / kBlock;
  const int64_t cap = (int64_t)(sm_count > 0 ? sm_count : 1) * (2048 / kBlock);
  return dim3((unsigned)(blocks < cap ? blocks : cap));
}

template <typename T>
gko_status_t quantize_t(int fmt, int64_t n, int64_t cols, const void *x, void *y,
                        const float *scale, int rowwise, float *amax, int vec, int sm_count,
                        cudaStream_t st) {
  auto k = fmt ? quantize_kernel<T, 1> : quantize_kernel<T, 0>;
  cudaError_t e = gk::launch(k, grid_for(n, vec, sm_count), dim3(kBlock), st,
                             static_cast<const T *>(x), static_cast<unsigned char *>(y), n, cols,
                             scale, rowwise, reinterpret_cast<unsigned *>(amax), vec);
  return e == cudaSuccess ? GKO_STATUS_SUCCESS : gk_cuda_fail(e, "quantize kernel launch");
}

template <typename T>
gko_status_t dequantize_t(int fmt, int64_t n, int64_t cols, const void *x, void *y,
                          const float *scale, int rowwise, int vec, int sm_count, cudaStream_t st) {
  auto k = fmt ? dequantize_kernel<T, 1> : dequantize_kernel<T, 0>;
  cudaError_t e = gk::launch(k, grid_for(n, vec, sm_count), dim3(kBlock), st,
                             static_cast<const unsigned char *>(x), static_cast<T *>(y), n, cols,
                             scale, rowwise, vec);
  return e == cudaSuccess ? GKO_STATUS_SUCCESS : gk_cuda_fail(e, "dequantize kernel launch");
}

}  // namespace

extern "C" gko_status_t gk_quantize_launch(int x_dtype, int y_dtype, int64_t n, int64_t cols,
                                           const void *x, void *y, const float *scale, int rowwise,
                                           float *amax, int vec, int sm_count, void *stream) {
  const int fmt = y_dtype == GKO_DTYPE_F8E5M2;
  cudaStream_t st = static_cast<cudaStream_t>(stream);
  switch (x_dtype) {
    case GKO_DTYPE_F32:
      return quantize_t<float>(fmt, n, cols, x, y, scale, rowwise, amax, vec, sm_count, st);
    case GKO_DTYPE_F16:
      return quantize_t<__half>(fmt, n, cols, x, y, scale, rowwise, amax, vec, sm_count, st);
    case GKO_DTYPE_BF16:
      return quantize_t<__nv_bfloat16>(fmt, n, cols, x, y, scale, rowwise, amax, vec, sm_count, st);
  }
  return gk_fail(GKO_STATUS_INTERNAL, "quantize: x_dtype %d has no kernel", x_dtype);
}

extern "C" gko_status_t gk_dequantize_launch(int x_dtype, int y_dtype, int64_t n, int64_t cols,
                                             const void *x, void *y, const float *scale,
                                             int rowwise, int vec, int sm_count, void *stream) {
  const int fmt = x_dtype == GKO_DTYPE_F8E5M2;
  cudaStream_t st = static_cast<cudaStream_t>(stream);
  switch (y_dtype) {
    case GKO_DTYPE_F32:
      return dequantize_t<float>(fmt, n, cols, x, y, scale, rowwise, vec, sm_count, st);
    case GKO_DTYPE_F16:
      return dequantize_t<__half>(fmt, n, cols, x, y, scale, rowwise, vec, sm_count, st);
    case GKO_DTYPE_BF16:
      return dequantize_t<__nv_bfloat16>(fmt, n, cols, x, y, scale, rowwise, vec, sm_count, st);
  }
  return gk_fail(GKO_STATUS_INTERNAL, "dequantize: y_dtype %d has no kernel", y_dtype);
}
