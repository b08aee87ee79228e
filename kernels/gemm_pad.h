/* gemm_pad.h -- the interface of kernels/gemm_pad.cu (operand padding). */
#ifndef GK_KERNELS_GEMM_PAD_H
#define GK_KERNELS_GEMM_PAD_H

#include <stdint.h>

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* kernels/gemm_pad.cu: copies a column-major rows x cols matrix (element
 * size esize = 2 or 4, leading dimension ld_src, batch stride stride_src,
 * 0 = the same matrix for every batch) into dst with leading dimension
 * ld_dst (a multiple of 16 bytes, >= rows) and cols_dst >= cols columns
 * per batch, stride_dst apart (a multiple of 16 bytes); every element of
 * the ld_dst x cols_dst block outside the source is written 0.  dst must be
 * 16-byte aligned.  Sizes > 0. */
gko_status_t gk_gemm_pad_launch(int esize, int64_t rows, int64_t cols,
                                int64_t batch, const void *src, int64_t ld_src,
                                int64_t stride_src, void *dst, int64_t ld_dst,
                                int64_t cols_dst, int64_t stride_dst,
                                void *stream);

#ifdef __cplusplus
}
#endif

#endif /* GK_KERNELS_GEMM_PAD_H */
