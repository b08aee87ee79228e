/* gemm_epilogue.h -- the interface of kernels/gemm_epilogue.cu (the
 * unfused bias/activation pass after a GEMM). */
#ifndef GK_KERNELS_GEMM_EPILOGUE_H
#define GK_KERNELS_GEMM_EPILOGUE_H

#include <stdint.h>

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* kernels/gemm_epilogue.cu: for a column-major rows x cols matrix per batch
 * (dtype as gko_dtype_t):
 *   out[r, c] = act(scale * in[r, c] + bias[bias_on_rows ? r : c])
 * in == NULL reads nothing (0); in == out is allowed (same ld and stride);
 * bias == NULL adds nothing; act 0 none, 1 ReLU, 2 GELU-erf, 3 GELU-tanh
 * (math as gko_gelu_forward).  Sizes > 0. */
gko_status_t gk_gemm_epilogue_launch(int dtype, int act, int64_t rows,
                                     int64_t cols, int64_t batch, void *out,
                                     int64_t ld_out, int64_t stride_out,
                                     const void *in, int64_t ld_in,
                                     int64_t stride_in, float scale,
                                     const void *bias, int64_t stride_bias,
                                     int bias_on_rows, void *stream);

#ifdef __cplusplus
}
#endif

#endif /* GK_KERNELS_GEMM_EPILOGUE_H */
