/* softmax.h -- the interface of kernels/softmax.cu: scaled, masked softmax
 * over the last dimension. */
#ifndef GK_KERNELS_SOFTMAX_H
#define GK_KERNELS_SOFTMAX_H

#include <stdint.h>

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Enqueues y = softmax(scale * x + mask) over rows x cols with the
 * key-padding lengths (gko_softmax's contract; mask and lengths may be
 * NULL, group >= 1 when either is given).  Arguments are already
 * validated; rows > 0, cols > 0.  dtype F32, F16 or BF16. */
gko_status_t gk_softmax_launch(int dtype, int64_t rows, int64_t cols, float scale, const void *x,
                               int64_t ldx, const float *mask, int64_t ldmask,
                               const int32_t *lengths, int64_t group, void *y, int64_t ldy,
                               void *stream);

#ifdef __cplusplus
}
#endif

#endif /* GK_KERNELS_SOFTMAX_H */
