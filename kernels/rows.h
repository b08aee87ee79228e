/* rows.h -- the interface of kernels/rows.cu: row gathers (embedding) and
 * masked mean pooling over a sequence. */
#ifndef GK_KERNELS_ROWS_H
#define GK_KERNELS_ROWS_H

#include <stdint.h>

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Enqueues y[i][:] = table[ids[i]][:] for i < n, dim elements a row (an
 * index outside [0, num_rows) gives a NaN row); ids int64 when index64,
 * else int32.  Arguments are already validated; n > 0, dim > 0.  dtype
 * F32, F16 or BF16. */
gko_status_t gk_embedding_launch(int dtype, int64_t num_rows, int64_t dim, const void *table,
                                 int64_t ldt, int index64, const void *ids, int64_t n, void *y,
                                 int64_t ldy, void *stream);

/* Enqueues gko_mean_pool: y[b][:] = the mean of the first L_b rows of
 * sequence b (optionally L2-normalised).  Arguments are already
 * validated; batch > 0, dim > 0 (x may be NULL when seq == 0). */
gko_status_t gk_mean_pool_launch(int dtype, int64_t batch, int64_t seq, int64_t dim,
                                 const void *x, int64_t ldx, const int32_t *lengths,
                                 int normalize, void *y, int64_t ldy, int sm_count,
                                 void *stream);

#ifdef __cplusplus
}
#endif

#endif /* GK_KERNELS_ROWS_H */
