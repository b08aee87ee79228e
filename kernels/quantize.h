/* quantize.h -- the interface of kernels/quantize.cu: f32/f16/bf16 <-> FP8
 * (E4M3, E5M2) with per-tensor or per-row f32 factors, and the amax of the
 * input read in the same pass. */
#ifndef GK_KERNELS_QUANTIZE_H
#define GK_KERNELS_QUANTIZE_H

#include <stdint.h>

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Enqueues y = quantize(x * scale) over n elements of rows of `cols`
 * (rowwise: scale[i / cols], else *scale, or 1 when scale is NULL); amax
 * (may be NULL) must already hold 0 and receives max |x| as its bits
 * combined with atomicMax.  vec: x and y are 16-byte aligned (and, when
 * rowwise, cols % 8 == 0), so whole 16-byte vectors move.  Arguments
 * are already validated; n > 0.  x_dtype F32/F16/BF16, y_dtype FP8. */
gko_status_t gk_quantize_launch(int x_dtype, int y_dtype, int64_t n, int64_t cols, const void *x,
                                void *y, const float *scale, int rowwise, float *amax, int vec,
                                int sm_count, void *stream);

/* Enqueues y = x * scale (x FP8, y F32/F16/BF16); otherwise as above. */
gko_status_t gk_dequantize_launch(int x_dtype, int y_dtype, int64_t n, int64_t cols, const void *x,
                                  void *y, const float *scale, int rowwise, int vec, int sm_count,
                                  void *stream);

#ifdef __cplusplus
}
#endif

#endif /* GK_KERNELS_QUANTIZE_H */
