/* space_to_depth.h -- the interface of kernels/space_to_depth.cu: the
 * copies that rewrite an NHWC convolution with few channels as a stride-1
 * R2 x 1 one over blocks of stride_h rows x the filter's S columns
 * (src/conv_implicit.c, gk_conv_fold, has the algebra).  2-byte elements (f16, bf16), raw bits. */
#ifndef GK_KERNELS_SPACE_TO_DEPTH_H
#define GK_KERNELS_SPACE_TO_DEPTH_H

#include <stdint.h>

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gk_s2d_args {
  int64_t n, h, w, c;            /* x [n][h][w][c] */
  int64_t r, s;                  /* the filter's taps (KRSC w [k][r][s][c]) */
  int64_t stride_h, stride_w;
  int64_t pad_h, pad_w;          /* x's zero padding before the first row / column */
  int64_t h2, w2, r2, c2;        /* x2 [n][h2][w2][c2], c2 >= stride_h * s * c, a multiple of 8;
                                    w2 [k][r2][1][c2] */
} gk_s2d_args;

/* x2[n][i][j][(dy * s + t) * c + ci] = x[n][stride_h*i + dy - pad_h][stride_w*j + t - pad_w][ci]
 * (dy < stride_h, t < s), 0 outside x and for channels >= stride_h * s * c.  x2 16-byte
 * aligned. */
gko_status_t gk_s2d_launch(const gk_s2d_args *a, const void *x, void *x2, void *stream);
/* w2[kk][a][0][(dy * s + t) * c + ci] = w[kk][stride_h*a + dy][t][ci], 0 past the filter's
 * rows and for channels >= stride_h * s * c. */
gko_status_t gk_s2d_filter_launch(const gk_s2d_args *a, int64_t k, const void *w, void *w2,
                                  void *stream);

#ifdef __cplusplus
}
#endif

#endif /* GK_KERNELS_SPACE_TO_DEPTH_H */
