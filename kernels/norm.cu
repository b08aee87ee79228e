/* norm.cu -- layer normalisation over the last dimension, with an optional
 * residual added first (gko_layernorm).
 *
 * Memory-bound: each row is read once and written once (twice with s).
 * Rows up to 1024 elements go one warp per row, up to 8192 one block of
 * 256 threads per row, with the row's h = x + r held in f32 registers
 * (row_io.cuh's chunks: 16-byte vectors where every pointer and leading
 * dimension allows, else scalars), so the two passes (mean, then the sum of
 * squared deviations) cost no second read.  Longer rows go one block of
 * 512 threads per row and read the row three times (mean, variance, then
 * the output); the later passes mostly hit L2.
 *
 * In place: every element of y and s is written by the thread that read
 * x and r at that position, after its reads (the register kernels write
 * only once the whole row is in registers; the streaming kernel writes in
 * its last pass only), so y and s may be x or r. */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "common.cuh"
#include "convert.cuh"
#include "norm.h"
#include "row_io.cuh"

namespace {

using gk::elem;
using gk::rowio::block_of;
using gk::rowio::kStreamBlock;

struct LnArgs {
  const void *x, *r, *gamma, *beta;
  void *y, *s;
  int64_t ldx, ldr, ldy, lds, rows, cols;
  float eps;
};

/* h = x + r (r may be NULL) at [base, base + VE) of row i. */
template <typename T, int VE>
__device__ __forceinline__ void load_h(const LnArgs &a, int64_t i, int64_t base, float *h) {
  gk::rowio::load<T, VE>(static_cast<const T *>(a.x) + i * a.ldx, base, a.cols, h);
  if (a.r) {
    float rr[VE];
    gk::rowio::load<T, VE>(static_cast<const T *>(a.r) + i * a.ldr, base, a.cols, rr);
#pragma unroll
    for (int k = 0; k < VE; k++) h[k] += rr[k];
  }
}

/* s = h (when s is given) and y = (h - mean) * rstd * gamma + beta at
 * [base, base + VE) of row i. */
template <typename T, int VE>
__device__ __forceinline__ void store_out(const LnArgs &a, int64_t i, int64_t base,
                                          const float *h, float mean, float rstd) {
  if (a.s) gk::rowio::store<T, VE>(static_cast<T *>(a.s) + i * a.lds, base, a.cols, h);
  float g[VE], b[VE], o[VE];
  if (a.gamma) {
    gk::rowio::load<T, VE>(static_cast<const T *>(a.gamma), base, a.cols, g);
  } else {
#pragma unroll
    for (int k = 0; k < VE; k++) g[k] = 1.0f;
  }
  if (a.beta) {
    gk::rowio::load<T, VE>(static_cast<const T *>(a.beta), base, a.cols, b);
  } else {
#pragma unroll
    for (int k = 0; k < VE; k++) b[k] = 0.0f;
  }
#pragma unroll
  for (int k = 0; k < VE; k++) o[k] = (h[k] - mean) * rstd * g[k] + b[k];
  gk::rowio::store<T, VE>(static_cast<T *>(a.y) + i * a.ldy, base, a.cols, o);
}

/* The row in registers: TPR threads per row (32: a warp; else the block),
 * K elements per thread (K / VE chunks), cols <= TPR * K. */
template <typename T, int TPR, int K, int VE>
__global__ void __launch_bounds__(block_of<TPR>()) ln_regs(LnArgs a) {
  constexpr int kChunks = K / VE;
  constexpr int kRowsPerBlock = block_of<TPR>() / TPR;
  __shared__ float red[TPR > 32 ? TPR / 32 : 1];
  const int t = threadIdx.x % TPR;
  const float n = (float)a.cols;
  for (int64_t i = (int64_t)blockIdx.x * kRowsPerBlock + threadIdx.x / TPR; i < a.rows;
       i += (int64_t)gridDim.x * kRowsPerBlock) {
    float h[K];
#pragma unroll
    for (int c = 0; c < kChunks; c++) {
      const int64_t base = ((int64_t)c * TPR + t) * VE;
      if (base < a.cols) {
        load_h<T, VE>(a, i, base, h + c * VE);
      } else {
#pragma unroll
        for (int k = 0; k < VE; k++) h[c * VE + k] = 0.0f;
      }
    }
    float sum = 0.0f;
#pragma unroll
    for (int k = 0; k < K; k++) sum += h[k];
    const float mean = gk::rowio::row_reduce<TPR, false>(sum, red) / n;
    float sq = 0.0f;
#pragma unroll
    for (int c = 0; c < kChunks; c++) {
      const int64_t base = ((int64_t)c * TPR + t) * VE;
#pragma unroll
      for (int k = 0; k < VE; k++) {
        const float d = h[c * VE + k] - mean;
        if (base + k < a.cols) sq += d * d;
      }
    }
    const float var = gk::rowio::row_reduce<TPR, false>(sq, red) / n;
    const float rstd = rsqrtf(var + a.eps);
#pragma unroll
    for (int c = 0; c < kChunks; c++) {
      const int64_t base = ((int64_t)c * TPR + t) * VE;
      if (base < a.cols) store_out<T, VE>(a, i, base, h + c * VE, mean, rstd);
    }
  }
}

/* Rows too long for registers: one block per row, three passes. */
template <typename T, int VE>
__global__ void __launch_bounds__(kStreamBlock) ln_stream(LnArgs a) {
  constexpr int TPR = kStreamBlock;
  constexpr int64_t kStep = (int64_t)TPR * VE;
  __shared__ float red[TPR / 32];
  const float n = (float)a.cols;
  const int64_t first = (int64_t)threadIdx.x * VE;
  for (int64_t i = blockIdx.x; i < a.rows; i += gridDim.x) {
    float sum = 0.0f;
    for (int64_t base = first; base < a.cols; base += kStep) {
      float h[VE];
      load_h<T, VE>(a, i, base, h);
#pragma unroll
      for (int k = 0; k < VE; k++) sum += h[k];
    }
    const float mean = gk::rowio::row_reduce<TPR, false>(sum, red) / n;
    float sq = 0.0f;
    for (int64_t base = first; base < a.cols; base += kStep) {
      float h[VE];
      load_h<T, VE>(a, i, base, h);
#pragma unroll
      for (int k = 0; k < VE; k++) {
        const float d = h[k] - mean;
        if (base + k < a.cols) sq += d * d;
      }
    }
    const float var = gk::rowio::row_reduce<TPR, false>(sq, red) / n;
    const float rstd = rsqrtf(var + a.eps);
    for (int64_t base = first; base < a.cols; base += kStep) {
      float h[VE];
      load_h<T, VE>(a, i, base, h);
      store_out<T, VE>(a, i, base, h, mean, rstd);
    }
  }
}

template <typename T, int TPR, int K, int VE>
cudaError_t go_regs(const LnArgs &a, cudaStream_t st) {
  constexpr int kK = K > VE ? K : VE;
  constexpr int64_t kRowsPerBlock = block_of<TPR>() / TPR;
  const int64_t grid = gk::grid_x((a.rows + kRowsPerBlock - 1) / kRowsPerBlock);
  return gk::launch(ln_regs<T, TPR, kK, VE>, dim3((unsigned)grid), dim3(block_of<TPR>()), st,
                    a);
}

template <typename T, int VE>
cudaError_t dispatch(const LnArgs &a, cudaStream_t st) {
  const int64_t c = a.cols;
  if (c <= 32 * 4) return go_regs<T, 32, 4, VE>(a, st);
  if (c <= 32 * 8) return go_regs<T, 32, 8, VE>(a, st);
  if (c <= 32 * 16) return go_regs<T, 32, 16, VE>(a, st);
  if (c <= 32 * 32) return go_regs<T, 32, 32, VE>(a, st);
  if (c <= 256 * 8) return go_regs<T, 256, 8, VE>(a, st);
  if (c <= 256 * 16) return go_regs<T, 256, 16, VE>(a, st);
  if (c <= 256 * 32) return go_regs<T, 256, 32, VE>(a, st);
  return gk::launch(ln_stream<T, VE>, dim3((unsigned)gk::grid_x(a.rows)), dim3(kStreamBlock),
                    st, a);
}

template <typename T>
cudaError_t dispatch_vec(const LnArgs &a, bool vec, cudaStream_t st) {
  return vec ? dispatch<T, elem<T>::kVec>(a, st) : dispatch<T, 1>(a, st);
}

}  // namespace

extern "C" gko_status_t gk_layernorm_launch(int dtype, int64_t rows, int64_t cols,
                                            const void *x, int64_t ldx, const void *r,
                                            int64_t ldr, const void *gamma, const void *beta,
                                            float eps, void *y, int64_t ldy, void *s,
                                            int64_t lds, void *stream) {
  const LnArgs a = {x, r, gamma, beta, y, s, ldx, ldr, ldy, lds, rows, cols, eps};
  const int64_t es = dtype == GKO_DTYPE_F32 ? 4 : 2;
  using gk::rowio::vec_ok;
  const bool vec = vec_ok(x, ldx, es) && vec_ok(r, ldr, es) && vec_ok(gamma, 0, es) &&
                   vec_ok(beta, 0, es) && vec_ok(y, ldy, es) && vec_ok(s, lds, es);
  const cudaStream_t st = (cudaStream_t)stream;
  cudaError_t e;
  if (dtype == GKO_DTYPE_F32) e = dispatch_vec<float>(a, vec, st);
  else if (dtype == GKO_DTYPE_F16) e = dispatch_vec<__half>(a, vec, st);
  else e = dispatch_vec<__nv_bfloat16>(a, vec, st);
  if (e != cudaSuccess) return gk_cuda_fail(e, "layernorm kernel launch");
  return GKO_STATUS_SUCCESS;
}
