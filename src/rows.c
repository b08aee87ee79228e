/* rows.c -- the row-wise operators' shared checks (rows.h), and argument
 * checks and dispatch of gko_embedding and gko_mean_pool
 * (kernels/rows.cu). */
#include <stdint.h>

#include "core.h"
#include "rows.h"
#include "../kernels/rows.h"

/* ---- shared checks ------------------------------------------------------------ */

gko_status_t gk_ld_check(int64_t rows, int64_t cols, int64_t ld, const char *ld_name,
                         const char *cols_name, size_t es) {
  if (ld < cols)
    return gk_fail(GKO_STATUS_INVALID_VALUE, "%s = %lld is below %s = %lld", ld_name,
                   (long long)ld, cols_name, (long long)cols);
  int64_t elems, bytes;
  if (rows > 0 && (__builtin_mul_overflow(rows - 1, ld, &elems) ||
                   __builtin_add_overflow(elems, cols, &elems) ||
                   __builtin_mul_overflow(elems, (int64_t)es, &bytes)))
    return gk_fail(GKO_STATUS_INVALID_VALUE,
                   "%lld rows with %s = %lld overflow a byte count", (long long)rows, ld_name,
                   (long long)ld);
  return GKO_STATUS_SUCCESS;
}

gko_status_t gk_ptr_check(const void *p, const char *name, size_t es) {
  if (!p) return gk_fail(GKO_STATUS_INVALID_VALUE, "%s is NULL", name);
  return gk_check_elem_align(p, name, es);
}

static __int128 gk_floor_div(__int128 a, __int128 b) { /* b > 0 */
  __int128 q = a / b;
  return (a % b != 0 && a < 0) ? q - 1 : q;
}

int gk_mat_overlap(gk_mat a, gk_mat b) {
  if (!a.p || !b.p || a.rows <= 0 || b.rows <= 0 || a.width <= 0 || b.width <= 0) return 0;
  const __int128 sa = (__int128)(a.rows - 1) * a.pitch + a.width;
  const __int128 sb = (__int128)(b.rows - 1) * b.pitch + b.width;
  const __int128 d = (__int128)(uintptr_t)b.p - (__int128)(uintptr_t)a.p;
  if (!(d < sa && -d < sb)) return 0; /* the spans are disjoint */
  if (a.rows > 1 && b.rows > 1 && a.pitch != b.pitch) return 1;
  if (a.rows == 1 && b.rows == 1) return 1;
  /* one pitch P: row i of a and row j of b share a byte when
   * -b.width < d + (j - i) P < a.width; k = j - i in [-(a.rows - 1), b.rows - 1] */
  const __int128 P = a.rows > 1 ? a.pitch : b.pitch;
  const __int128 kmin = -(__int128)(a.rows - 1), kmax = b.rows - 1;
  __int128 k = gk_floor_div(-(__int128)b.width - d, P) + 1; /* least k: d + kP > -b.width */
  if (k < kmin) k = kmin;
  return k <= kmax && d + k * P < a.width;
}

int gk_mat_same(gk_mat a, gk_mat b) {
  return a.p == b.p && a.width == b.width && a.rows == b.rows &&
         (a.rows <= 1 || a.pitch == b.pitch);
}

gko_status_t gk_mat_alias_check(gk_mat o, const char *out, gk_mat i, const char *in, int same_ok,
                                const char *out_ld, const char *in_ld) {
  if (!gk_mat_overlap(o, i)) return GKO_STATUS_SUCCESS;
  if (same_ok) {
    if (gk_mat_same(o, i)) return GKO_STATUS_SUCCESS;
    return gk_fail(GKO_STATUS_INVALID_VALUE,
                   "%s overlaps %s without being the same matrix (in place needs %s == %s and "
                   "%s == %s)",
                   out, in, out, in, out_ld, in_ld);
  }
  return gk_fail(GKO_STATUS_INVALID_VALUE, "%s overlaps %s (not allowed)", out, in);
}

/* ---- gko_embedding -------------------------------------------------------------- */

GKO_API gko_status_t gko_embedding(gko_handle_t handle, gko_dtype_t dtype, int64_t num_rows,
                                   int64_t dim, const void *table, int64_t ldt,
                                   gko_index_t index_type, const void *ids, int64_t n, void *y,
                                   int64_t ldy, gko_stream_t stream) {
  gk_clear_error();
  if (!handle) return gk_fail(GKO_STATUS_INVALID_VALUE, "handle is NULL");
  gko_status_t s;
  size_t es;
  if ((s = gk_check_dtype((int)dtype, "dtype", &es))) return s;
  if (num_rows < 0)
    return gk_fail(GKO_STATUS_INVALID_VALUE, "num_rows = %lld is negative", (long long)num_rows);
  if (dim < 0) return gk_fail(GKO_STATUS_INVALID_VALUE, "dim = %lld is negative", (long long)dim);
  /* nothing is read or written without an output element */
  const int live = n > 0 && dim > 0;
  if (live && num_rows > 0 && (s = gk_ptr_check(table, "table", es))) return s;
  if (live && (s = gk_check_elem_align(table, "table", es))) return s;
  if ((s = gk_ld_check(num_rows, dim, ldt, "ldt", "dim", es))) return s;
  if (index_type != GKO_INDEX_INT32 && index_type != GKO_INDEX_INT64)
    return gk_fail(GKO_STATUS_INVALID_VALUE,
                   "index_type = %d is not GKO_INDEX_INT32 (0) or GKO_INDEX_INT64 (1)",
                   (int)index_type);
  const size_t is = index_type == GKO_INDEX_INT64 ? 8 : 4;
  if (live && (s = gk_ptr_check(ids, "ids", is))) return s;
  if (n < 0) return gk_fail(GKO_STATUS_INVALID_VALUE, "n = %lld is negative", (long long)n);
  if ((uint64_t)n > (uint64_t)INT64_MAX / is)
    return gk_fail(GKO_STATUS_INVALID_VALUE, "n = %lld indices overflow a byte count",
                   (long long)n);
  if (live && (s = gk_ptr_check(y, "y", es))) return s;
  if ((s = gk_ld_check(n, dim, ldy, "ldy", "dim", es))) return s;
  if (!live) return gk_live_check(handle, GK_LIVE_HANDLE, "handle");
  const gk_mat ym = gk_mat_of(y, n, dim, ldy, es);
  if ((s = gk_mat_alias_check(ym, "y", gk_mat_of(table, num_rows, dim, ldt, es), "table", 0,
                              NULL, NULL)) ||
      (s = gk_mat_alias_check(ym, "y", gk_mat_of(ids, 1, n, n, is), "ids", 0, NULL, NULL)))
    return s;
  const void *ptrs[3] = {table, ids, y};
  const char *names[3] = {"table", "ids", "y"};
  if ((s = gk_check_call(handle, stream, 3, ptrs, names))) return s;
  return gk_embedding_launch((int)dtype, num_rows, dim, table, ldt,
                             index_type == GKO_INDEX_INT64, ids, n, y, ldy, stream);
}

/* ---- gko_mean_pool ---------------------------------------------------------------- */

GKO_API gko_status_t gko_mean_pool(gko_handle_t handle, gko_dtype_t dtype, int64_t batch,
                                   int64_t seq, int64_t dim, const void *x, int64_t ldx,
                                   const int32_t *lengths, int normalize, void *y, int64_t ldy,
                                   gko_stream_t stream) {
  gk_clear_error();
  if (!handle) return gk_fail(GKO_STATUS_INVALID_VALUE, "handle is NULL");
  gko_status_t s;
  size_t es;
  if ((s = gk_check_dtype((int)dtype, "dtype", &es))) return s;
  if (batch < 0)
    return gk_fail(GKO_STATUS_INVALID_VALUE, "batch = %lld is negative", (long long)batch);
  if (seq < 0) return gk_fail(GKO_STATUS_INVALID_VALUE, "seq = %lld is negative", (long long)seq);
  if (dim < 0) return gk_fail(GKO_STATUS_INVALID_VALUE, "dim = %lld is negative", (long long)dim);
  int64_t xrows;
  if (__builtin_mul_overflow(batch, seq, &xrows))
    return gk_fail(GKO_STATUS_INVALID_VALUE, "batch = %lld x seq = %lld rows overflow int64",
                   (long long)batch, (long long)seq);
  /* nothing is read or written without an output element; x is not read
   * when every sequence is empty */
  const int live = batch > 0 && dim > 0;
  if (live && seq > 0 && (s = gk_ptr_check(x, "x", es))) return s;
  if (live && (s = gk_check_elem_align(x, "x", es))) return s;
  if ((s = gk_ld_check(xrows, dim, ldx, "ldx", "dim", es))) return s;
  if (live && (s = gk_check_elem_align(lengths, "lengths", sizeof(int32_t)))) return s;
  if (live && (s = gk_ptr_check(y, "y", es))) return s;
  if ((s = gk_ld_check(batch, dim, ldy, "ldy", "dim", es))) return s;
  if ((uint64_t)batch > (uint64_t)INT64_MAX / sizeof(int32_t))
    return gk_fail(GKO_STATUS_INVALID_VALUE, "batch = %lld lengths overflow a byte count",
                   (long long)batch);
  if (!live) return gk_live_check(handle, GK_LIVE_HANDLE, "handle");
  const gk_mat ym = gk_mat_of(y, batch, dim, ldy, es);
  if ((s = gk_mat_alias_check(ym, "y", gk_mat_of(x, xrows, dim, ldx, es), "x", 0, NULL, NULL)) ||
      (s = gk_mat_alias_check(ym, "y", gk_mat_of(lengths, 1, batch, batch, sizeof(int32_t)),
                              "lengths", 0, NULL, NULL)))
    return s;
  const void *ptrs[3] = {seq > 0 ? x : NULL, lengths, y};
  const char *names[3] = {"x", "lengths", "y"};
  if ((s = gk_check_call(handle, stream, 3, ptrs, names))) return s;
  return gk_mean_pool_launch((int)dtype, batch, seq, dim, seq > 0 ? x : NULL, ldx, lengths,
                             normalize, y, ldy, handle->sm_count, stream);
}
