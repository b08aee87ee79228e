/* gelu.h -- the interface of kernels/gelu.cu (GELU forward and backward). */
#ifndef GK_KERNELS_GELU_H
#define GK_KERNELS_GELU_H

#include <stdint.h>

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- occupancy cache --------------------------------------------------- */

typedef struct gk_occupancy {
  int block;    /* threads per block from cudaOccupancyMaxPotentialBlockSize */
  int grid;     /* blocks that fill the GPU at that block size */
} gk_occupancy;

/* ---- GELU kernels (kernels/gelu.cu) ------------------------------------ */

/* Kernel index: ((dir * 2 + approx) * 3 + dtype) * 2 + vec. */
enum { GK_GELU_NKERNELS = 2 * 2 * 3 * 2 };

/* Fills occ[GK_GELU_NKERNELS] for the current device.  Returns success,
 * NO_KERNEL_IMAGE or CUDA_ERROR (detail set). */
gko_status_t gk_gelu_occupancy(gk_occupancy *occ);

/* Enqueues one GELU pass.  dir 0 = forward (a = x, b unused, out = y),
 * dir 1 = backward (a = x, b = dy, out = dx).  Arguments are already
 * validated; n > 0. */
gko_status_t gk_gelu_launch(const gk_occupancy *occ, int dir, int approx,
                            int dtype, int64_t n, const void *a,
                            const void *b, void *out, void *stream);

#ifdef __cplusplus
}
#endif

#endif /* GK_KERNELS_GELU_H */
