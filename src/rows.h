/*
 * rows.h -- the checks the row-wise operators share (gko_layernorm,
 * gko_softmax, gko_embedding, gko_mean_pool; src/rows.c): row-major
 * matrices with a leading dimension, their pointers, and whether two of
 * them share memory.
 */
#ifndef GK_ROWS_H
#define GK_ROWS_H

#include <stddef.h>
#include <stdint.h>

#include "core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A matrix in bytes: rows rows of width bytes, pitch bytes apart. */
typedef struct gk_mat {
  const void *p;
  int64_t rows, pitch, width;
} gk_mat;

static inline gk_mat gk_mat_of(const void *p, int64_t rows, int64_t cols, int64_t ld,
                               size_t es) {
  gk_mat m = {p, rows, ld * (int64_t)es, cols * (int64_t)es};
  return m;
}

/* A leading dimension: INVALID_VALUE ("<ld_name> = .. is below <cols_name>
 * = ..") when ld < cols, or when rows x ld elements of es bytes overflow a
 * byte count. */
gko_status_t gk_ld_check(int64_t rows, int64_t cols, int64_t ld, const char *ld_name,
                         const char *cols_name, size_t es);

/* A pointer the call reads or writes: INVALID_VALUE naming it when it is
 * NULL or not aligned to es. */
gko_status_t gk_ptr_check(const void *p, const char *name, size_t es);

/* a and b share a byte (exact when their pitches agree or one is a
 * single row; otherwise by their spans, which may refuse interleaved
 * rows). */
int gk_mat_overlap(gk_mat a, gk_mat b);

/* a and b are the same matrix: the same start, width and (unless a single
 * row) pitch -- the in-place form. */
int gk_mat_same(gk_mat a, gk_mat b);

/* INVALID_VALUE ("<out> overlaps <in> ...") when output o shares memory
 * with input i, unless same_ok and they are the same matrix (the detail
 * then says the in-place form needs <out_ld> == <in_ld>). */
gko_status_t gk_mat_alias_check(gk_mat o, const char *out, gk_mat i, const char *in, int same_ok,
                                const char *out_ld, const char *in_ld);

#ifdef __cplusplus
}
#endif

#endif /* GK_ROWS_H */
