/* im2col.h -- the interface of kernels/im2col.cu (the convolution's
 * column matrix, filter reordering, batched transposes). */
#ifndef GK_KERNELS_IM2COL_H
#define GK_KERNELS_IM2COL_H

#include <stdint.h>

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Division by a run-time constant d in [1, 2^31) of numerators n < 2^31
 * with one multiply-high and a shift (Granlund & Montgomery, 1994; the form
 * PyTorch's IntDivider uses): q = (umulhi(n, mul) + n) >> shift. */
typedef struct gk_fastdiv {
  uint32_t d, mul, shift;
} gk_fastdiv;
void gk_fastdiv_init(gk_fastdiv *f, uint32_t d);

/* One im2col pass over `images` images (x points at the first).  Element
 * counts; the plan guarantees kp < 2^25 and that images * G * kp (NCHW
 * rows) and images * oh * ow (NHWC rows) stay below 2^31, so per-row and
 * per-block decompositions fit 32 bits (all offsets are int64).
 *   NCHW: col [images][G][kp][ohw_ld], row (g, j) with j < L = Cg*R*S read
 *         from channel g*Cg + j/(R*S), filter tap (j%(R*S))/S, j%S; rows j in
 *         [L, kp) and columns in [oh*ow, ohw_ld) are zeros;
 *   NHWC: col [G][images*oh*ow][kp], column j < L = R*S*Cg read from tap
 *         (j/Cg)/S, (j/Cg)%S, channel g*Cg + j%Cg; columns in [L, kp) zero.
 * col is 256-byte aligned, kp and ohw_ld multiples of 16 bytes.
 * vec_bytes: NHWC load/store width (2, 4, 8 or 16; chosen by the caller so
 * that C, Cg and x's alignment allow it); NCHW always stores 16 bytes. */
typedef struct gk_im2col_args {
  int layout, es, vec_bytes;
  int64_t images, c, h, w, groups, cg, r, s;
  int64_t oh, ow, stride_h, stride_w, pad_h, pad_w, dil_h, dil_w;
  int64_t l, kp, ohw_ld;
  int block; /* threads per block (occupancy API, from the plan) */
  const void *x;
  void *col;
  void *stream;
} gk_im2col_args;

/* Threads per block cudaOccupancyMaxPotentialBlockSize gives the im2col
 * kernel of (layout, es, vec_bytes).  Host query; success or CUDA_ERROR /
 * NO_KERNEL_IMAGE (detail set). */
gko_status_t gk_im2col_occupancy(int layout, int es, int vec_bytes, int *block);
gko_status_t gk_im2col_launch(const gk_im2col_args *a);
/* dst [k][kp] = the KCRS filter src [k][cg][rs] as KRSC (column t*cg + c
 * from tap t of channel c), columns [cg*rs, kp) zero; es 2 or 4; kp < 2^25.
 * rs = 1, cg = L: a plain zero-padded copy of [k][L] rows. */
gko_status_t gk_conv_filter_krsc_launch(int es, int64_t k, int64_t cg, int64_t rs, int64_t kp,
                                        const void *src, void *dst, void *stream);
/* dst [batch][cols][rows] = src [batch][rows][cols] (elements of es = 2 or
 * 4 bytes, raw bits); nothing when a size is 0. */
gko_status_t gk_transpose_batched_launch(int es, int64_t rows, int64_t cols, int64_t batch,
                                         const void *src, void *dst, void *stream);

#ifdef __cplusplus
}
#endif

#endif /* GK_KERNELS_IM2COL_H */
