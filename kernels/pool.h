/* pool.h -- the interface of kernels/pool.cu (2-D max and average
 * pooling forward). */
#ifndef GK_KERNELS_POOL_H
#define GK_KERNELS_POOL_H

#include <stdint.h>

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One pooling problem, checked by src/pool.c.  mode: gko_pool_mode_t;
 * layout: gko_conv_layout_t; oh, ow the output size; sizes > 0. */
typedef struct gk_pool_args {
  int mode, dtype, layout;
  int64_t n, c, h, w, r, s, oh, ow;
  int64_t sh, sw, ph, pw, dh, dw;
  const void *x;
  void *y;
  void *stream;
} gk_pool_args;

/* Enqueues the pass: the window kernel (NHWC with 16-byte channel vectors
 * when C, x and y allow), or for an NCHW window covering a whole plane
 * without padding the warp-per-plane reduction. */
gko_status_t gk_pool_launch(const gk_pool_args *a);

#ifdef __cplusplus
}
#endif

#endif /* GK_KERNELS_POOL_H */
