/* gemm_epilogue.cu -- gko's elementwise GEMM epilogue:
 *   out = act(scale * in + bias)
 * over a column-major rows x cols matrix per batch (the GEMM's "lt view").
 * Used for what cuBLASLt does not fuse: a bias that is not 16-byte aligned
 * or runs along the other dimension (column-major D), GELU-erf after a
 * non-contiguous D, GKO_GEMM_FUSION_NEVER, and the problems without a
 * product (k == 0 or alpha == 0: out = act(beta * C + bias), C not read when
 * in == NULL).
 *
 * Without an activation the sum is formed in double and rounded once to the
 * output type, so D = beta * C is exactly the rounded product.  With one,
 * in f32, and the activation's math is gko's GELU (gelu.cuh: the accurate
 * form for f32 outputs, the fast one for f16/bf16, as gko_gelu_forward).
 * ReLU keeps NaN.  Threads run along a column (contiguous); short columns
 * share a block.  Indices are int64. */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "gemm_epilogue.h"
#include "common.cuh"
#include "convert.cuh"
#include "gelu.cuh"

namespace {

constexpr int kBlock = 256;

using gk::elem;

template <typename T, int ACT>
__device__ __forceinline__ T finish(double td, float tf) {
  if (ACT == 0) return elem<T>::from_d(td);
  float y;
  if (ACT == 1) y = tf != tf ? tf : fmaxf(tf, 0.0f);
  else y = gk::gelu_fwd<ACT == 2 ? 0 : 1, elem<T>::kAcc>(tf);
  return elem<T>::from_f(y);
}

template <typename T, int ACT>
__global__ void epilogue_kernel(T *out, int64_t rows, int64_t cols, int64_t lines,
                                int64_t ld_out, int64_t stride_out, const T *in, int64_t ld_in,
                                int64_t stride_in, float scale, const T *bias,
                                int64_t stride_bias, int bias_on_rows) {
  for (int64_t line = (int64_t)blockIdx.y * blockDim.y + threadIdx.y; line < lines;
       line += (int64_t)gridDim.y * blockDim.y) {
    const int64_t b = line / cols, c = line - b * cols;
    T *o = out + b * stride_out + c * ld_out;
    const T *x = in ? in + b * stride_in + c * ld_in : nullptr;
    const T *bb = bias ? bias + b * stride_bias : nullptr;
    const float bcol = (bb && !bias_on_rows) ? elem<T>::to_f(bb[c]) : 0.0f;
    for (int64_t r = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; r < rows;
         r += (int64_t)gridDim.x * blockDim.x) {
      const float xv = x ? elem<T>::to_f(x[r]) : 0.0f;
      const float bv = bb ? (bias_on_rows ? elem<T>::to_f(bb[r]) : bcol) : 0.0f;
      if (ACT == 0) {
        o[r] = finish<T, 0>((double)scale * (double)xv + (double)bv, 0.0f);
      } else {
        /* x ? scale * x : 0, so that beta == 0 with in == NULL gives act(bias) */
        o[r] = finish<T, ACT>(0.0, fmaf(scale, xv, bv));
      }
    }
  }
}

typedef void (*epi_fn)(void *, int64_t, int64_t, int64_t, int64_t, int64_t, const void *,
                       int64_t, int64_t, float, const void *, int64_t, int);

#define GK_EPI_ROW(T)                                                                   \
  (epi_fn)epilogue_kernel<T, 0>, (epi_fn)epilogue_kernel<T, 1>,                         \
      (epi_fn)epilogue_kernel<T, 2>, (epi_fn)epilogue_kernel<T, 3>
/* index dtype * 4 + act, dtype as gko_dtype_t */
const epi_fn kEpi[12] = {GK_EPI_ROW(float), GK_EPI_ROW(__half), GK_EPI_ROW(__nv_bfloat16)};

} // namespace

extern "C" gko_status_t gk_gemm_epilogue_launch(int dtype, int act, int64_t rows, int64_t cols,
                                                int64_t batch, void *out, int64_t ld_out,
                                                int64_t stride_out, const void *in,
                                                int64_t ld_in, int64_t stride_in, float scale,
                                                const void *bias, int64_t stride_bias,
                                                int bias_on_rows, void *stream) {
  if (dtype < 0 || dtype > 2 || act < 0 || act > 3)
    return gk_fail(GKO_STATUS_INTERNAL, "GEMM epilogue: dtype %d act %d", dtype, act);
  const int64_t lines = cols * batch;
  int bx = rows >= kBlock ? kBlock : (int)((rows + 31) / 32 * 32);
  if (bx < 32) bx = 32;
  const int by = kBlock / bx;
  int64_t gx = (rows + bx - 1) / bx, gy = (lines + by - 1) / by;
  gx = gk::grid_x(gx);
  gy = gk::grid_y(gy);
  void *args[] = {(void *)&out,   (void *)&rows,       (void *)&cols,  (void *)&lines,
                  (void *)&ld_out, (void *)&stride_out, (void *)&in,    (void *)&ld_in,
                  (void *)&stride_in, (void *)&scale,   (void *)&bias,  (void *)&stride_bias,
                  (void *)&bias_on_rows};
  cudaError_t e = cudaLaunchKernel((const void *)kEpi[dtype * 4 + act],
                                   dim3((unsigned)gx, (unsigned)gy), dim3(bx, by), args, 0,
                                   (cudaStream_t)stream);
  if (e != cudaSuccess) return gk_cuda_fail(e, "GEMM epilogue kernel launch");
  return GKO_STATUS_SUCCESS;
}
