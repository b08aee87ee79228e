/* model_util.h -- what the model code in util/ (resnet18.c, minilm.c) shares:
 * error sentences into the caller's buffer, device allocations counted
 * against a total, and parameter uploads rounded to the network's dtype. */
#ifndef GKO_UTIL_MODEL_UTIL_H
#define GKO_UTIL_MODEL_UTIL_H

#include <gko.h>
#include <stddef.h>

/* Writes the sentence into err (n bytes) and returns -1. */
int mu_fail(char *err, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* "what: STATUS: the library's detail" into err; returns -1. */
int mu_gko_fail(char *err, size_t n, const char *what, gko_status_t s);
/* cudaMalloc of bytes (at least 1) into *p, added to *total; 0 or -1 (*p NULL). */
int mu_dalloc(size_t *total, void **p, size_t bytes, char *err, size_t n);
/* len host floats rounded to dt (F32, F16 or BF16), in a new device buffer *dst. */
int mu_upload(size_t *total, void **dst, const float *src, size_t len, gko_dtype_t dt, char *err,
              size_t n);

/* Returns from the calling function with mu_gko_fail when call fails (the
 * caller has err and n in scope). */
#define MU_TRY(what, call)                                              \
  do {                                                                  \
    gko_status_t s_ = (call);                                           \
    if (s_ != GKO_STATUS_SUCCESS) return mu_gko_fail(err, n, what, s_); \
  } while (0)

#endif
