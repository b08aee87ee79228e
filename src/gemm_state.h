/* gemm_state.h -- the GEMM state a handle owns (src/gemm_state.c): the
 * device's shared cuBLASLt handle, whether the device has stream-ordered
 * memory pools, and the algorithm cache.  Needs nothing of the handle:
 * handle.c creates and destroys the state, the GEMM code passes h->gemm.
 * Every function takes a NULL state (no cuBLASLt handle, no pools, an
 * empty cache that stores nothing). */
#ifndef GK_GEMM_STATE_H
#define GK_GEMM_STATE_H

#include <stddef.h>

#include "gko.h"

#ifdef __cplusplus
extern "C" {
#endif

struct gk_gemm_state;

/* A new state for device `device` (*out untouched on failure):
 * NOT_SUPPORTED beyond gko's device limit, ALLOC_FAILED / CUDA_ERROR when
 * the device's cuBLASLt handle cannot be created, INTERNAL. */
gko_status_t gk_gemm_state_create(int device, struct gk_gemm_state **out);
void gk_gemm_state_destroy(struct gk_gemm_state *st);

/* The process-wide cuBLASLt handle of the state's device (cublasLtHandle_t). */
void *gk_gemm_state_lt(const struct gk_gemm_state *st);
/* Nonzero when the device supports stream-ordered allocation (cudaMallocAsync). */
int gk_gemm_state_pools(const struct gk_gemm_state *st);

/* Algorithm cache: key and value are opaque byte strings of fixed size
 * (the backends').  lookup copies the value out and returns 1 on a hit;
 * insert keeps the first value stored for a key.  Thread-safe. */
int gk_gemm_cache_lookup(struct gk_gemm_state *st, const void *key, size_t key_bytes,
                         void *value, size_t value_bytes);
gko_status_t gk_gemm_cache_insert(struct gk_gemm_state *st, const void *key,
                                  size_t key_bytes, const void *value,
                                  size_t value_bytes);

#ifdef __cplusplus
}
#endif

#endif /* GK_GEMM_STATE_H */
