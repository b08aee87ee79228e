/* softmax.cu -- scaled, masked softmax over the last dimension
 * (gko_softmax).
 *
 * Memory-bound: each row is read once and written once.  As in norm.cu,
 * rows up to 1024 elements go one warp per row and up to 8192 one block of
 * 256 threads per row, the row's z = scale * x + mask held in f32
 * registers; longer rows go one block of 512 threads per row and read the
 * row three times (maximum, sum, output).  Columns at or past the row's
 * length are not loaded.
 *
 * A column is kept when j < length and z != -Inf.  The row maximum is
 * taken over kept z with NaN counted as +Inf, so one reduction tells the
 * three cases apart: -Inf (nothing kept: zeros), +Inf (a NaN or +Inf
 * kept: NaN, as torch), finite (exp(z - max) / sum, in f32).  In place
 * (y == x) is safe: each element is written by the thread that read it,
 * after the row's reads. */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <math_constants.h>

#include "common.cuh"
#include "convert.cuh"
#include "row_io.cuh"
#include "softmax.h"

namespace {

using gk::elem;
using gk::rowio::block_of;
using gk::rowio::kStreamBlock;

struct SmArgs {
  const void *x;
  const float *mask;
  const int32_t *lengths;
  void *y;
  int64_t ldx, ldmask, ldy, rows, cols, group;
  float scale;
};

/* The row's mask row (or NULL) and kept prefix. */
struct RowView {
  const float *mask;
  int64_t lim; /* min(max(length, 0), cols) */
};

__device__ __forceinline__ RowView row_view(const SmArgs &a, int64_t i) {
  RowView v;
  v.mask = nullptr;
  v.lim = a.cols;
  if (a.mask || a.lengths) {
    const int64_t g = i / a.group;
    if (a.mask) v.mask = a.mask + g * a.ldmask;
    if (a.lengths) {
      const int64_t len = a.lengths[g];
      v.lim = len < 0 ? 0 : len < a.cols ? len : a.cols;
    }
  }
  return v;
}

/* z at [base, base + VE) of row i: -Inf at and past the kept prefix. */
template <typename T, int VE>
__device__ __forceinline__ void load_z(const SmArgs &a, const RowView &v, int64_t i,
                                       int64_t base, float *z) {
  if (base >= v.lim) {
#pragma unroll
    for (int k = 0; k < VE; k++) z[k] = -CUDART_INF_F;
    return;
  }
  float xv[VE], m[VE];
  gk::rowio::load<T, VE>(static_cast<const T *>(a.x) + i * a.ldx, base, a.cols, xv);
  if (v.mask) {
    gk::rowio::load_f32<VE>(v.mask, base, a.cols, m);
  } else {
#pragma unroll
    for (int k = 0; k < VE; k++) m[k] = 0.0f;
  }
#pragma unroll
  for (int k = 0; k < VE; k++) z[k] = base + k < v.lim ? fmaf(a.scale, xv[k], m[k]) : -CUDART_INF_F;
}

/* The maximum over kept z, NaN counted as +Inf. */
template <int VE>
__device__ __forceinline__ float chunk_max(const float *z, float mx) {
#pragma unroll
  for (int k = 0; k < VE; k++) mx = fmaxf(mx, isnan(z[k]) ? CUDART_INF_F : z[k]);
  return mx;
}

/* y at [base, base + VE) of row i: e * inv for a finite row maximum, else
 * zeros (max -Inf) or NaN (max +Inf); e is overwritten. */
template <typename T, int VE>
__device__ __forceinline__ void store_y(const SmArgs &a, int64_t i, int64_t base, float *e,
                                        float mx, float inv) {
  const bool finite = mx > -CUDART_INF_F && mx < CUDART_INF_F;
  const float fill = mx == CUDART_INF_F ? CUDART_NAN_F : 0.0f;
#pragma unroll
  for (int k = 0; k < VE; k++) e[k] = finite ? e[k] * inv : fill;
  gk::rowio::store<T, VE>(static_cast<T *>(a.y) + i * a.ldy, base, a.cols, e);
}

/* The row in registers: TPR threads per row (32: a warp; else the block),
 * K elements per thread, cols <= TPR * K. */
template <typename T, int TPR, int K, int VE>
__global__ void __launch_bounds__(block_of<TPR>()) sm_regs(SmArgs a) {
  constexpr int kChunks = K / VE;
  constexpr int kRowsPerBlock = block_of<TPR>() / TPR;
  __shared__ float red[TPR > 32 ? TPR / 32 : 1];
  const int t = threadIdx.x % TPR;
  for (int64_t i = (int64_t)blockIdx.x * kRowsPerBlock + threadIdx.x / TPR; i < a.rows;
       i += (int64_t)gridDim.x * kRowsPerBlock) {
    const RowView v = row_view(a, i);
    float z[K];
    float mx = -CUDART_INF_F;
#pragma unroll
    for (int c = 0; c < kChunks; c++) {
      load_z<T, VE>(a, v, i, ((int64_t)c * TPR + t) * VE, z + c * VE);
      mx = chunk_max<VE>(z + c * VE, mx);
    }
    mx = gk::rowio::row_reduce<TPR, true>(mx, red);
    float sum = 0.0f;
    if (mx > -CUDART_INF_F && mx < CUDART_INF_F) {
#pragma unroll
      for (int k = 0; k < K; k++) {
        z[k] = expf(z[k] - mx);
        sum += z[k];
      }
    }
    sum = gk::rowio::row_reduce<TPR, false>(sum, red);
    const float inv = 1.0f / sum;
#pragma unroll
    for (int c = 0; c < kChunks; c++) {
      const int64_t base = ((int64_t)c * TPR + t) * VE;
      if (base < a.cols) store_y<T, VE>(a, i, base, z + c * VE, mx, inv);
    }
  }
}

/* Rows too long for registers: one block per row, three passes. */
template <typename T, int VE>
__global__ void __launch_bounds__(kStreamBlock) sm_stream(SmArgs a) {
  constexpr int TPR = kStreamBlock;
  constexpr int64_t kStep = (int64_t)TPR * VE;
  __shared__ float red[TPR / 32];
  const int64_t first = (int64_t)threadIdx.x * VE;
  for (int64_t i = blockIdx.x; i < a.rows; i += gridDim.x) {
    const RowView v = row_view(a, i);
    float mx = -CUDART_INF_F;
    for (int64_t base = first; base < v.lim; base += kStep) {
      float z[VE];
      load_z<T, VE>(a, v, i, base, z);
      mx = chunk_max<VE>(z, mx);
    }
    mx = gk::rowio::row_reduce<TPR, true>(mx, red);
    const bool finite = mx > -CUDART_INF_F && mx < CUDART_INF_F;
    float sum = 0.0f;
    for (int64_t base = first; finite && base < v.lim; base += kStep) {
      float z[VE];
      load_z<T, VE>(a, v, i, base, z);
#pragma unroll
      for (int k = 0; k < VE; k++) sum += expf(z[k] - mx);
    }
    sum = gk::rowio::row_reduce<TPR, false>(sum, red);
    const float inv = 1.0f / sum;
    for (int64_t base = first; base < a.cols; base += kStep) {
      float z[VE];
      load_z<T, VE>(a, v, i, base, z);
      if (finite) {
#pragma unroll
        for (int k = 0; k < VE; k++) z[k] = expf(z[k] - mx);
      }
      store_y<T, VE>(a, i, base, z, mx, inv);
    }
  }
}

template <typename T, int TPR, int K, int VE>
cudaError_t go_regs(const SmArgs &a, cudaStream_t st) {
  constexpr int kK = K > VE ? K : VE;
  constexpr int64_t kRowsPerBlock = block_of<TPR>() / TPR;
  const int64_t grid = gk::grid_x((a.rows + kRowsPerBlock - 1) / kRowsPerBlock);
  return gk::launch(sm_regs<T, TPR, kK, VE>, dim3((unsigned)grid), dim3(block_of<TPR>()), st,
                    a);
}

template <typename T, int VE>
cudaError_t dispatch(const SmArgs &a, cudaStream_t st) {
  const int64_t c = a.cols;
  if (c <= 32 * 4) return go_regs<T, 32, 4, VE>(a, st);
  if (c <= 32 * 8) return go_regs<T, 32, 8, VE>(a, st);
  if (c <= 32 * 16) return go_regs<T, 32, 16, VE>(a, st);
  if (c <= 32 * 32) return go_regs<T, 32, 32, VE>(a, st);
  if (c <= 256 * 8) return go_regs<T, 256, 8, VE>(a, st);
  if (c <= 256 * 16) return go_regs<T, 256, 16, VE>(a, st);
  if (c <= 256 * 32) return go_regs<T, 256, 32, VE>(a, st);
  return gk::launch(sm_stream<T, VE>, dim3((unsigned)gk::grid_x(a.rows)), dim3(kStreamBlock),
                    st, a);
}

template <typename T>
cudaError_t dispatch_vec(const SmArgs &a, bool vec, cudaStream_t st) {
  return vec ? dispatch<T, elem<T>::kVec>(a, st) : dispatch<T, 1>(a, st);
}

}  // namespace

extern "C" gko_status_t gk_softmax_launch(int dtype, int64_t rows, int64_t cols, float scale,
                                          const void *x, int64_t ldx, const float *mask,
                                          int64_t ldmask, const int32_t *lengths, int64_t group,
                                          void *y, int64_t ldy, void *stream) {
  const SmArgs a = {x, mask, lengths, y, ldx, ldmask, ldy, rows, cols, group, scale};
  const int64_t es = dtype == GKO_DTYPE_F32 ? 4 : 2;
  using gk::rowio::vec_ok;
  const bool vec = vec_ok(x, ldx, es) && vec_ok(y, ldy, es) && vec_ok(mask, ldmask, 4);
  const cudaStream_t st = (cudaStream_t)stream;
  cudaError_t e;
  if (dtype == GKO_DTYPE_F32) e = dispatch_vec<float>(a, vec, st);
  else if (dtype == GKO_DTYPE_F16) e = dispatch_vec<__half>(a, vec, st);
  else e = dispatch_vec<__nv_bfloat16>(a, vec, st);
  if (e != cudaSuccess) return gk_cuda_fail(e, "softmax kernel launch");
  return GKO_STATUS_SUCCESS;
}
