/* gemm_registry.c -- the table of GEMM backends.  Its order is AUTO's: a
 * backend that supports a problem is tried after the rows above it, unless
 * its auto_first rule puts it ahead (gk_gemm_auto_order).  A new backend is
 * one file defining its gk_gemm_backend and one row here. */
#include "gemm.h"

extern const gk_gemm_backend gk_gemm_cublaslt_backend; /* gemm_cublaslt.c */
extern const gk_gemm_backend gk_gemm_wmma_backend;     /* gemm_wmma.c */
extern const gk_gemm_backend gk_gemm_sm90_backend;     /* gemm_sm90.c */

const gk_gemm_backend *const gk_gemm_backends[] = {
    &gk_gemm_cublaslt_backend,
    &gk_gemm_wmma_backend,
    &gk_gemm_sm90_backend,
};
const int gk_gemm_nbackends = (int)(sizeof gk_gemm_backends / sizeof gk_gemm_backends[0]);

_Static_assert(sizeof gk_gemm_backends / sizeof gk_gemm_backends[0] <= GK_GEMM_MAX_BACKENDS,
               "GK_GEMM_MAX_BACKENDS (gemm.h) bounds the table");

const gk_gemm_backend *gk_gemm_backend_of(int64_t id) {
  for (int i = 0; i < gk_gemm_nbackends; i++)
    if (gk_gemm_backends[i]->id == id) return gk_gemm_backends[i];
  return NULL;
}
