/* attention.c -- argument checks and dispatch of gko_attention
 * (kernels/attention.cu). */
#include <math.h>
#include <stdint.h>

#include "core.h"
#include "../kernels/attention.h"

/* The bytes a BSHD operand spans: rows = batch * seq rows of ld elements,
 * the last one cols long.  rows >= 1. */
static size_t gk_attn_span(int64_t rows, int64_t ld, int64_t cols, size_t es) {
  return ((size_t)(rows - 1) * (size_t)ld + (size_t)cols) * es;
}

/* An operand's leading dimension against its row length heads * head_dim,
 * and rows * ld elements against a byte count. */
static gko_status_t gk_attn_check_ld(const char *name, int64_t ld, int64_t cols, int64_t rows,
                                     size_t es) {
  if (ld < cols)
    return gk_fail(GKO_STATUS_INVALID_VALUE,
                   "%s = %lld is below heads * head_dim = %lld (a row of the operand)", name,
                   (long long)ld, (long long)cols);
  if (ld > 0 && rows > (int64_t)(INT64_MAX / (uint64_t)es) / ld)
    return gk_fail(GKO_STATUS_INVALID_VALUE,
                   "%s = %lld times %lld rows (batch * seq) overflow a byte count", name,
                   (long long)ld, (long long)rows);
  return GKO_STATUS_SUCCESS;
}

static gko_status_t gk_attn_check_ptr(const void *p, const char *name, size_t es) {
  if (!p) return gk_fail(GKO_STATUS_INVALID_VALUE, "%s is NULL", name);
  return gk_check_elem_align(p, name, es);
}

/* 16-byte vectors along every row: the pointer and ld * es. */
static int gk_attn_vec16(const void *p, int64_t ld, size_t es) {
  return (uintptr_t)p % 16 == 0 && ((uint64_t)ld * es) % 16 == 0;
}

GKO_API gko_status_t gko_attention(gko_handle_t handle, gko_dtype_t dtype, int64_t batch,
                                   int64_t heads, int64_t seq_q, int64_t seq_k, int64_t head_dim,
                                   float scale, const void *q, int64_t ldq, const void *k,
                                   int64_t ldk, const void *v, int64_t ldv, const int32_t *lengths,
                                   void *o, int64_t ldo, gko_stream_t stream) {
  gk_clear_error();
  if (!handle) return gk_fail(GKO_STATUS_INVALID_VALUE, "handle is NULL");
  gko_status_t s;
  size_t es;
  if ((s = gk_check_dtype((int)dtype, "dtype", &es))) return s;
  if (batch < 0 || heads < 0 || seq_q < 0 || seq_k < 0)
    return gk_fail(GKO_STATUS_INVALID_VALUE,
                   "batch = %lld, heads = %lld, seq_q = %lld, seq_k = %lld: sizes are >= 0",
                   (long long)batch, (long long)heads, (long long)seq_q, (long long)seq_k);
  if (head_dim < 1)
    return gk_fail(GKO_STATUS_INVALID_VALUE, "head_dim = %lld is below 1", (long long)head_dim);
  if (head_dim > 256)
    return gk_fail(GKO_STATUS_NOT_SUPPORTED, "head_dim = %lld is above 256 (the largest supported)",
                   (long long)head_dim);
  if (!isfinite(scale))
    return gk_fail(GKO_STATUS_INVALID_VALUE, "scale = %g is not finite", (double)scale);
  if (heads > INT64_MAX / 256)
    return gk_fail(GKO_STATUS_INVALID_VALUE, "heads = %lld overflows a row length",
                   (long long)heads);
  const int64_t cols = heads * head_dim;
  if ((seq_q && batch > INT64_MAX / seq_q) || (seq_k && batch > INT64_MAX / seq_k))
    return gk_fail(GKO_STATUS_INVALID_VALUE,
                   "batch = %lld times seq_q = %lld or seq_k = %lld overflows a row count",
                   (long long)batch, (long long)seq_q, (long long)seq_k);
  const int64_t rq = batch * seq_q, rk = batch * seq_k;
  if ((s = gk_attn_check_ld("ldq", ldq, cols, rq, es)) ||
      (s = gk_attn_check_ld("ldk", ldk, cols, rk, es)) ||
      (s = gk_attn_check_ld("ldv", ldv, cols, rk, es)) ||
      (s = gk_attn_check_ld("ldo", ldo, cols, rq, es)))
    return s;
  if (rq == 0 || heads == 0) return gk_live_check(handle, GK_LIVE_HANDLE, "handle"); /* o has no element */

  /* k, v (and lengths) are read only when there are keys */
  const int keys = rk > 0;
  if ((s = gk_attn_check_ptr(q, "q", es)) || (keys && (s = gk_attn_check_ptr(k, "k", es))) ||
      (keys && (s = gk_attn_check_ptr(v, "v", es))) || (s = gk_attn_check_ptr(o, "o", es)) ||
      (s = gk_check_elem_align(lengths, "lengths", sizeof(int32_t))))
    return s;
  const size_t ob = gk_attn_span(rq, ldo, cols, es);
  if (gk_overlap(o, ob, q, gk_attn_span(rq, ldq, cols, es)))
    return gk_fail(GKO_STATUS_INVALID_VALUE, "o overlaps q (no in-place attention)");
  if (keys && gk_overlap(o, ob, k, gk_attn_span(rk, ldk, cols, es)))
    return gk_fail(GKO_STATUS_INVALID_VALUE, "o overlaps k (no in-place attention)");
  if (keys && gk_overlap(o, ob, v, gk_attn_span(rk, ldv, cols, es)))
    return gk_fail(GKO_STATUS_INVALID_VALUE, "o overlaps v (no in-place attention)");
  if (keys && gk_overlap(o, ob, lengths, (size_t)batch * sizeof(int32_t)))
    return gk_fail(GKO_STATUS_INVALID_VALUE, "o overlaps lengths");
  const void *ptrs[5] = {q, keys ? k : NULL, keys ? v : NULL, o, keys ? lengths : NULL};
  const char *names[5] = {"q", "k", "v", "o", "lengths"};
  if ((s = gk_check_call(handle, stream, 5, ptrs, names))) return s;

  const int tensor = dtype != GKO_DTYPE_F32 && handle->cc >= 80 && head_dim % 8 == 0 &&
                     head_dim <= 128 && gk_attn_vec16(q, ldq, es) && gk_attn_vec16(k, ldk, es) &&
                     gk_attn_vec16(v, ldv, es) && gk_attn_vec16(o, ldo, es);
  const gk_attn_args a = {q,         keys ? k : q, keys ? v : q, o,     keys ? lengths : NULL,
                          batch,     heads,        seq_q,        seq_k, head_dim,
                          ldq,       ldk,          ldv,          ldo,   scale,
                          (int)dtype};
  return gk_attention_launch(&a, tensor, stream);
}
