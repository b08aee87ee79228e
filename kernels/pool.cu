/* pool.cu -- 2-D max and average pooling forward, one pass over x.
 *
 * window kernel: one thread per output element (NCHW, output width
 * fastest) or per vector of V channels of one output pixel (NHWC: 16-byte
 * loads and stores when C and both pointers allow, else V = 1); the loop
 * runs over the window's taps inside the input.  MAX keeps a NaN once
 * seen (as torch); AVG divides by the window clipped to the padded input,
 * AVG_EXCLUDE_PAD by the taps inside the input.
 * plane kernels (one window per plane, no padding: global average or max
 * pooling): NCHW one warp per plane, coalesced loads, a shuffle reduction;
 * NHWC a block per image and 32 channel vectors, 8 pixels at a time.
 * f32 math in all. */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "gko.h"
#include "convert.cuh"
#include "pool.h"

namespace {

using gk::elem;

constexpr int kBlock = 256;

struct acc {
  float v;
  __device__ void init(int mode) { v = mode == GKO_POOL_MAX ? -INFINITY : 0.0f; }
  __device__ void add(int mode, float x) {
    if (mode != GKO_POOL_MAX) v += x;
    else if (x > v || x != x) v = v != v ? v : x; /* a NaN stays */
  }
};

/* Folds the V elements at p (one 16-byte load when V > 1) into m[0..V). */
template <typename T, int V>
__device__ __forceinline__ void fold(acc *m, int mode, const T *p) {
  if (V > 1) {
    float f[V];
    elem<T>::unpack(__ldg(reinterpret_cast<const uint4 *>(p)), f);
#pragma unroll
    for (int j = 0; j < V; j++) m[j].add(mode, f[j]);
  } else {
    m[0].add(mode, elem<T>::load(p));
  }
}

/* Writes m[0..V) / d (max: m itself) at q (one 16-byte store when V > 1). */
template <typename T, int V>
__device__ __forceinline__ void put(T *q, const acc *m, int mode, float d) {
  float f[V];
#pragma unroll
  for (int j = 0; j < V; j++) f[j] = mode == GKO_POOL_MAX ? m[j].v : m[j].v / d;
  if (V > 1) *reinterpret_cast<uint4 *>(q) = elem<T>::pack(f);
  else *q = elem<T>::from_f(f[0]);
}

/* I: the index type, 32-bit when every index and window coordinate fits
 * (64-bit division and multiplication dominated the window loop) */
template <typename T, int V, typename I>
__global__ void __launch_bounds__(kBlock) pool_window(gk_pool_args a64, int64_t total64) {
  const T *x = static_cast<const T *>(a64.x);
  T *y = static_cast<T *>(a64.y);
  struct {
    int mode, layout;
    I n, c, h, w, r, s, oh, ow, sh, sw, ph, pw, dh, dw;
  } const a = {a64.mode, a64.layout, (I)a64.n, (I)a64.c, (I)a64.h, (I)a64.w, (I)a64.r,
               (I)a64.s, (I)a64.oh, (I)a64.ow, (I)a64.sh, (I)a64.sw, (I)a64.ph, (I)a64.pw,
               (I)a64.dh, (I)a64.dw};
  const I total = (I)total64;
  for (I t = blockIdx.x * (I)blockDim.x + threadIdx.x; t < total;
       t += (I)gridDim.x * blockDim.x) {
    I n, c, oh, ow;
    if (a.layout == GKO_CONV_LAYOUT_NHWC) {
      const I cv = a.c / V;
      c = t % cv * V;
      I q = t / cv;
      ow = q % a.ow;
      q /= a.ow;
      oh = q % a.oh;
      n = q / a.oh;
    } else {
      ow = t % a.ow;
      I q = t / a.ow;
      oh = q % a.oh;
      q /= a.oh;
      c = q % a.c;
      n = q / a.c;
    }
    const I h0 = oh * a.sh - a.ph, w0 = ow * a.sw - a.pw;
    acc m[V];
#pragma unroll
    for (int j = 0; j < V; j++) m[j].init(a.mode);
    I inside = 0;
    for (I r = 0; r < a.r; r++) {
      const I ih = h0 + r * a.dh;
      if (ih < 0 || ih >= a.h) continue;
      for (I s = 0; s < a.s; s++) {
        const I iw = w0 + s * a.dw;
        if (iw < 0 || iw >= a.w) continue;
        inside++;
        if (a.layout == GKO_CONV_LAYOUT_NHWC)
          fold<T, V>(m, a.mode, x + ((n * a.h + ih) * a.w + iw) * a.c + c);
        else
          fold<T, 1>(m, a.mode, x + ((n * a.c + c) * a.h + ih) * a.w + iw);
      }
    }
    float d = (float)inside; /* AVG_EXCLUDE_PAD; AVG: the window clipped to the padding */
    if (a.mode == GKO_POOL_AVG)
      d = (float)(min(h0 + a.r, a.h + a.ph) - h0) * (float)(min(w0 + a.s, a.w + a.pw) - w0);
    if (a.layout == GKO_CONV_LAYOUT_NHWC)
      put<T, V>(y + ((n * a.oh + oh) * a.ow + ow) * a.c + c, m, a.mode, d);
    else
      put<T, 1>(y + t, m, a.mode, d);
  }
}

/* NCHW, the window covering each H x W plane exactly (no padding, one
 * output per plane): one warp per plane. */
template <typename T>
__global__ void __launch_bounds__(kBlock) pool_plane(gk_pool_args a, int64_t planes) {
  using E = elem<T>;
  const T *x = static_cast<const T *>(a.x);
  T *y = static_cast<T *>(a.y);
  const int lane = threadIdx.x % 32;
  const int64_t hw = a.h * a.w;
  for (int64_t p = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) / 32; p < planes;
       p += (int64_t)gridDim.x * blockDim.x / 32) {
    acc m;
    m.init(a.mode);
    const T *src = x + p * hw;
    for (int64_t i = lane; i < hw; i += 32) m.add(a.mode, E::load(src + i));
    for (int off = 16; off > 0; off /= 2) {
      m.add(a.mode, __shfl_xor_sync(0xffffffffu, m.v, off));
    }
    if (lane == 0) put<T, 1>(y + p, &m, a.mode, (float)hw);
  }
}

/* NHWC, the window covering each H x W plane exactly: a block per image
 * and 32 channel vectors, its 8 warps' lanes taking every 8th pixel, then
 * a reduction over the warps in shared memory. */
template <typename T, int V>
__global__ void __launch_bounds__(kBlock) pool_plane_nhwc(gk_pool_args a, int64_t groups) {
  constexpr int kLanes = kBlock / 32;
  __shared__ float part[kLanes][32 * V];
  const T *x = static_cast<const T *>(a.x);
  T *y = static_cast<T *>(a.y);
  const int lane = threadIdx.x % 32, row = threadIdx.x / 32;
  const int64_t cv = a.c / V, hw = a.h * a.w, per_image = (cv + 31) / 32;
  for (int64_t g = blockIdx.x; g < groups; g += gridDim.x) {
    const int64_t n = g / per_image, v = g % per_image * 32 + lane;
    acc m[V];
#pragma unroll
    for (int j = 0; j < V; j++) m[j].init(a.mode);
    if (v < cv)
      for (int64_t px = row; px < hw; px += kLanes)
        fold<T, V>(m, a.mode, x + (n * hw + px) * a.c + v * V);
#pragma unroll
    for (int j = 0; j < V; j++) part[row][lane * V + j] = m[j].v;
    __syncthreads();
    if (row == 0 && v < cv) {
#pragma unroll
      for (int j = 0; j < V; j++)
        for (int k = 1; k < kLanes; k++) m[j].add(a.mode, part[k][lane * V + j]);
      put<T, V>(y + n * a.c + v * V, m, a.mode, (float)hw);
    }
    __syncthreads();
  }
}

template <typename T>
gko_status_t launch_t(const gk_pool_args &a) {
  const int64_t kMaxGrid = 65535LL * 32;
  const bool plane = a.oh == 1 && a.ow == 1 && a.r == a.h && a.s == a.w && a.ph == 0 &&
                     a.pw == 0 && a.dh == 1 && a.dw == 1;
  constexpr int V = elem<T>::kVec;
  const bool vec = a.layout == GKO_CONV_LAYOUT_NHWC && a.c % V == 0 &&
                   (uintptr_t)a.x % 16 == 0 && (uintptr_t)a.y % 16 == 0;
  const void *kernel;
  int64_t items, threads;
  if (plane && a.layout == GKO_CONV_LAYOUT_NCHW) {
    kernel = (const void *)pool_plane<T>;
    items = a.n * a.c;
    threads = items * 32;
  } else if (plane) {
    kernel = vec ? (const void *)pool_plane_nhwc<T, V> : (const void *)pool_plane_nhwc<T, 1>;
    items = a.n * ((a.c / (vec ? V : 1) + 31) / 32);
    threads = items * kBlock;
  } else {
    items = threads = a.n * a.oh * a.ow * (vec ? a.c / V : a.c);
    /* 32-bit indices when every index and window coordinate fits, with
     * room for the grid-stride step */
    const int64_t lim = INT32_MAX / 4;
    const bool narrow = a.n * a.c * a.h * a.w < INT32_MAX && a.n * a.c * a.oh * a.ow < INT32_MAX &&
                        items < INT32_MAX - 65535LL * 32 * kBlock && a.h + 2 * a.ph < lim &&
                        a.w + 2 * a.pw < lim && a.r < lim && a.s < lim && a.dh < lim &&
                        a.dw < lim && a.sh < lim && a.sw < lim &&
                        a.dh * (a.r - 1) + a.oh * a.sh < lim &&
                        a.dw * (a.s - 1) + a.ow * a.sw < lim && a.r * a.s < lim;
    if (narrow)
      kernel = vec ? (const void *)pool_window<T, V, int> : (const void *)pool_window<T, 1, int>;
    else
      kernel = vec ? (const void *)pool_window<T, V, int64_t>
                   : (const void *)pool_window<T, 1, int64_t>;
  }
  const int64_t blocks = (threads + kBlock - 1) / kBlock;
  gk_pool_args args = a;
  void *kargs[] = {&args, &items};
  /* cudaLaunchKernel reports the launch's own error and leaves the
   * caller's last CUDA error alone */
  const cudaError_t e =
      cudaLaunchKernel(kernel, dim3((unsigned)(blocks < kMaxGrid ? blocks : kMaxGrid)),
                       dim3(kBlock), kargs, 0, static_cast<cudaStream_t>(a.stream));
  if (e != cudaSuccess) return gk_cuda_fail(e, "pooling kernel launch");
  return GKO_STATUS_SUCCESS;
}

}  // namespace

extern "C" gko_status_t gk_pool_launch(const gk_pool_args *a) {
  switch (a->dtype) {
    case GKO_DTYPE_F32: return launch_t<float>(*a);
    case GKO_DTYPE_F16: return launch_t<__half>(*a);
    default: return launch_t<__nv_bfloat16>(*a);
  }
}
