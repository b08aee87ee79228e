/* norm.h -- the interface of kernels/norm.cu: layer normalisation over the
 * last dimension, with an optional residual added first. */
#ifndef GK_KERNELS_NORM_H
#define GK_KERNELS_NORM_H

#include <stdint.h>

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Enqueues y = LN(x + r) * gamma + beta over rows x cols (gko_layernorm's
 * contract; r, gamma, beta, s may be NULL; s receives x + r).  Arguments
 * are already validated; rows > 0, cols > 0.  dtype F32, F16 or BF16. */
gko_status_t gk_layernorm_launch(int dtype, int64_t rows, int64_t cols, const void *x,
                                 int64_t ldx, const void *r, int64_t ldr, const void *gamma,
                                 const void *beta, float eps, void *y, int64_t ldy, void *s,
                                 int64_t lds, void *stream);

#ifdef __cplusplus
}
#endif

#endif /* GK_KERNELS_NORM_H */
