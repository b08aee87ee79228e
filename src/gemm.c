/* gemm.c -- the GEMM C ABI: descriptors, validation, plans, the dispatcher
 * over backends (gk_gemm_backend tables), the one-shot gko_gemm, and the
 * handle's GEMM state (the device's shared cuBLASLt handle, the algorithm
 * cache).
 *
 * Flow: gko_gemm_plan_create resolves the descriptor into a gk_gemm_problem
 * (defaults filled in, every size and extent checked, the column-major "lt
 * view" derived), then asks the backends in order (AUTO: gk_gemm_auto_order)
 * to plan it.  gko_gemm_execute checks the pointers and the workspace,
 * handles the cases without a product (k == 0 or alpha == 0: one epilogue
 * pass over D) and hands the rest to the plan's backend, which only
 * enqueues. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include "gemm.h"
#include "../kernels/gemm_epilogue.h"

enum { GK_NATTR = 28 };

static int gk_gemm_pools(gko_handle_t h);

struct gko_gemm_desc_s {
  int64_t v[GK_NATTR];
};

static const char *const kAttrName[GK_NATTR] = {
    "GKO_GEMM_ATTR_AB_DTYPE",    "GKO_GEMM_ATTR_CD_DTYPE",     "GKO_GEMM_ATTR_M",
    "GKO_GEMM_ATTR_N",           "GKO_GEMM_ATTR_K",            "GKO_GEMM_ATTR_TRANSA",
    "GKO_GEMM_ATTR_TRANSB",      "GKO_GEMM_ATTR_LAYOUT",       "GKO_GEMM_ATTR_LDA",
    "GKO_GEMM_ATTR_LDB",         "GKO_GEMM_ATTR_LDC",          "GKO_GEMM_ATTR_LDD",
    "GKO_GEMM_ATTR_BATCH_COUNT", "GKO_GEMM_ATTR_STRIDE_A",     "GKO_GEMM_ATTR_STRIDE_B",
    "GKO_GEMM_ATTR_STRIDE_C",    "GKO_GEMM_ATTR_STRIDE_D",     "GKO_GEMM_ATTR_STRIDE_BIAS",
    "GKO_GEMM_ATTR_EPILOGUE",    "GKO_GEMM_ATTR_COMPUTE",      "GKO_GEMM_ATTR_BACKEND",
    "GKO_GEMM_ATTR_ALIGNMENT",   "GKO_GEMM_ATTR_FUSION",       "GKO_GEMM_ATTR_PAD",
    "GKO_GEMM_ATTR_MAX_WORKSPACE", "GKO_GEMM_ATTR_AUTOTUNE",
    "GKO_GEMM_ATTR_INVARIANT",   "GKO_GEMM_ATTR_STATIC_OPERANDS"};

static void gk_desc_defaults(struct gko_gemm_desc_s *d, int ab, int cd, int64_t m,
                             int64_t n, int64_t k) {
  for (int i = 0; i < GK_NATTR; i++) d->v[i] = 0;
  d->v[GKO_GEMM_ATTR_AB_DTYPE] = ab;
  d->v[GKO_GEMM_ATTR_CD_DTYPE] = cd;
  d->v[GKO_GEMM_ATTR_M] = m;
  d->v[GKO_GEMM_ATTR_N] = n;
  d->v[GKO_GEMM_ATTR_K] = k;
  for (int a = GKO_GEMM_ATTR_LDA; a <= GKO_GEMM_ATTR_LDD; a++) d->v[a] = -1;
  d->v[GKO_GEMM_ATTR_BATCH_COUNT] = 1;
  for (int a = GKO_GEMM_ATTR_STRIDE_A; a <= GKO_GEMM_ATTR_STRIDE_BIAS; a++) d->v[a] = -1;
  d->v[GKO_GEMM_ATTR_ALIGNMENT] = 16;
  d->v[GKO_GEMM_ATTR_MAX_WORKSPACE] = -1;
}

static int gk_is_dtype(int64_t v) {
  return v == GKO_DTYPE_F32 || v == GKO_DTYPE_F16 || v == GKO_DTYPE_BF16;
}

/* The range each attribute accepts on its own. */
static gko_status_t gk_attr_check(int attr, int64_t v) {
  const char *name = kAttrName[attr];
  switch (attr) {
    case GKO_GEMM_ATTR_AB_DTYPE:
    case GKO_GEMM_ATTR_CD_DTYPE:
      if (!gk_is_dtype(v))
        return gk_fail(GKO_STATUS_INVALID_VALUE, "%s = %lld is not a gko_dtype_t", name,
                       (long long)v);
      return GKO_STATUS_SUCCESS;
    case GKO_GEMM_ATTR_M:
    case GKO_GEMM_ATTR_N:
    case GKO_GEMM_ATTR_K:
      if (v < 0)
        return gk_fail(GKO_STATUS_INVALID_VALUE, "%s = %lld is negative", name, (long long)v);
      return GKO_STATUS_SUCCESS;
    case GKO_GEMM_ATTR_TRANSA:
    case GKO_GEMM_ATTR_TRANSB:
      if (v != GKO_OP_N && v != GKO_OP_T)
        return gk_fail(GKO_STATUS_INVALID_VALUE,
                       "%s = %lld is not GKO_OP_N (0) or GKO_OP_T (1)", name, (long long)v);
      return GKO_STATUS_SUCCESS;
    case GKO_GEMM_ATTR_LAYOUT:
      if (v != GKO_LAYOUT_ROW_MAJOR && v != GKO_LAYOUT_COL_MAJOR)
        return gk_fail(GKO_STATUS_INVALID_VALUE,
                       "%s = %lld is not GKO_LAYOUT_ROW_MAJOR (0) or GKO_LAYOUT_COL_MAJOR (1)",
                       name, (long long)v);
      return GKO_STATUS_SUCCESS;
    case GKO_GEMM_ATTR_LDA:
    case GKO_GEMM_ATTR_LDB:
    case GKO_GEMM_ATTR_LDC:
    case GKO_GEMM_ATTR_LDD:
      if (v != -1 && v < 1)
        return gk_fail(GKO_STATUS_INVALID_VALUE,
                       "%s = %lld: a leading dimension is >= 1 (or -1 for the default)", name,
                       (long long)v);
      return GKO_STATUS_SUCCESS;
    case GKO_GEMM_ATTR_BATCH_COUNT:
      if (v < 0 || v > INT32_MAX)
        return gk_fail(GKO_STATUS_INVALID_VALUE, "%s = %lld is outside [0, 2^31 - 1]", name,
                       (long long)v);
      return GKO_STATUS_SUCCESS;
    case GKO_GEMM_ATTR_STRIDE_A:
    case GKO_GEMM_ATTR_STRIDE_B:
    case GKO_GEMM_ATTR_STRIDE_C:
    case GKO_GEMM_ATTR_STRIDE_D:
    case GKO_GEMM_ATTR_STRIDE_BIAS:
      if (v < -1)
        return gk_fail(GKO_STATUS_INVALID_VALUE,
                       "%s = %lld is negative (-1 selects the default)", name, (long long)v);
      return GKO_STATUS_SUCCESS;
    case GKO_GEMM_ATTR_EPILOGUE:
      if (v < GKO_EPILOGUE_NONE || v > GKO_EPILOGUE_BIAS_GELU_TANH)
        return gk_fail(GKO_STATUS_INVALID_VALUE, "%s = %lld is not a gko_epilogue_t", name,
                       (long long)v);
      return GKO_STATUS_SUCCESS;
    case GKO_GEMM_ATTR_COMPUTE:
      if (v < GKO_GEMM_COMPUTE_DEFAULT || v > GKO_GEMM_COMPUTE_F16_ACCUMULATE)
        return gk_fail(GKO_STATUS_INVALID_VALUE, "%s = %lld is not a gko_gemm_compute_t",
                       name, (long long)v);
      return GKO_STATUS_SUCCESS;
    case GKO_GEMM_ATTR_BACKEND:
      if (v < GKO_GEMM_BACKEND_AUTO || v > GKO_GEMM_BACKEND_WMMA)
        return gk_fail(GKO_STATUS_INVALID_VALUE, "%s = %lld is not a gko_gemm_backend_t",
                       name, (long long)v);
      return GKO_STATUS_SUCCESS;
    case GKO_GEMM_ATTR_ALIGNMENT:
      if (v < 1 || v > 256 || (v & (v - 1)) != 0)
        return gk_fail(GKO_STATUS_INVALID_VALUE,
                       "%s = %lld is not a power of two between 1 and 256 (bytes)", name,
                       (long long)v);
      return GKO_STATUS_SUCCESS;
    case GKO_GEMM_ATTR_FUSION:
      if (v < GKO_GEMM_FUSION_AUTO || v > GKO_GEMM_FUSION_NEVER)
        return gk_fail(GKO_STATUS_INVALID_VALUE, "%s = %lld is not a gko_gemm_fusion_t", name,
                       (long long)v);
      return GKO_STATUS_SUCCESS;
    case GKO_GEMM_ATTR_PAD:
      if (v < GKO_GEMM_PAD_AUTO || v > GKO_GEMM_PAD_ALWAYS)
        return gk_fail(GKO_STATUS_INVALID_VALUE, "%s = %lld is not a gko_gemm_pad_t", name,
                       (long long)v);
      return GKO_STATUS_SUCCESS;
    case GKO_GEMM_ATTR_AUTOTUNE:
      if (v != 0 && v != 1)
        return gk_fail(GKO_STATUS_INVALID_VALUE, "%s = %lld is not 0 or 1", name, (long long)v);
      return GKO_STATUS_SUCCESS;
    case GKO_GEMM_ATTR_MAX_WORKSPACE:
      if (v < -1)
        return gk_fail(GKO_STATUS_INVALID_VALUE,
                       "%s = %lld is negative (-1 means no bound)", name, (long long)v);
      return GKO_STATUS_SUCCESS;
    case GKO_GEMM_ATTR_INVARIANT: /* conv's chunking: see gko.h */
      if (v < 0)
        return gk_fail(GKO_STATUS_INVALID_VALUE,
                       "%s = %lld is negative (0: off; R >= 1: the reference number of D's "
                       "lines)",
                       name, (long long)v);
      return GKO_STATUS_SUCCESS;
    case GKO_GEMM_ATTR_STATIC_OPERANDS:
      if (v < GKO_GEMM_STATIC_NONE || v > GKO_GEMM_STATIC_AB)
        return gk_fail(GKO_STATUS_INVALID_VALUE, "%s = %lld is not a gko_gemm_static_t", name,
                       (long long)v);
      return GKO_STATUS_SUCCESS;
  }
  return gk_fail(GKO_STATUS_INVALID_VALUE, "attr = %d is not a gko_gemm_attr_t", attr);
}

GKO_API gko_status_t gko_gemm_desc_create(gko_gemm_desc_t *desc, gko_dtype_t ab_dtype,
                                          gko_dtype_t cd_dtype, int64_t m, int64_t n,
                                          int64_t k) {
  gk_clear_error();
  if (!desc) return gk_fail(GKO_STATUS_INVALID_VALUE, "desc is NULL");
  gko_status_t s;
  if (!gk_is_dtype(ab_dtype))
    return gk_fail(GKO_STATUS_INVALID_VALUE, "ab_dtype = %d is not a gko_dtype_t",
                   (int)ab_dtype);
  if (!gk_is_dtype(cd_dtype))
    return gk_fail(GKO_STATUS_INVALID_VALUE, "cd_dtype = %d is not a gko_dtype_t",
                   (int)cd_dtype);
  if (cd_dtype != ab_dtype && cd_dtype != GKO_DTYPE_F32)
    return gk_fail(GKO_STATUS_INVALID_VALUE,
                   "cd_dtype = %d must be ab_dtype (%d) or GKO_DTYPE_F32", (int)cd_dtype,
                   (int)ab_dtype);
  if ((s = gk_attr_check(GKO_GEMM_ATTR_M, m)) || (s = gk_attr_check(GKO_GEMM_ATTR_N, n)) ||
      (s = gk_attr_check(GKO_GEMM_ATTR_K, k)))
    return s;
  struct gko_gemm_desc_s *d = malloc(sizeof *d);
  if (!d) return gk_fail(GKO_STATUS_ALLOC_FAILED, "host allocation of the descriptor failed");
  gk_desc_defaults(d, ab_dtype, cd_dtype, m, n, k);
  *desc = d;
  return GKO_STATUS_SUCCESS;
}

GKO_API gko_status_t gko_gemm_desc_destroy(gko_gemm_desc_t desc) {
  gk_clear_error();
  free(desc);
  return GKO_STATUS_SUCCESS;
}

GKO_API gko_status_t gko_gemm_desc_set(gko_gemm_desc_t desc, gko_gemm_attr_t attr,
                                       int64_t value) {
  gk_clear_error();
  if (!desc) return gk_fail(GKO_STATUS_INVALID_VALUE, "desc is NULL");
  if ((int)attr < 0 || (int)attr >= GK_NATTR)
    return gk_fail(GKO_STATUS_INVALID_VALUE, "attr = %d is not a gko_gemm_attr_t", (int)attr);
  gko_status_t s = gk_attr_check((int)attr, value);
  if (s) return s;
  desc->v[attr] = value;
  return GKO_STATUS_SUCCESS;
}

/* ---- resolution and validation --------------------------------------------- */

/* Stored shape of a matrix: r x c, its "line" length (contiguous dimension)
 * and number of lines. */
typedef struct {
  int64_t r, c;
} gk_shape;

static int64_t gk_line_len(gk_shape s, int layout) {
  return layout == GKO_LAYOUT_ROW_MAJOR ? s.c : s.r;
}
static int64_t gk_nlines(gk_shape s, int layout) {
  return layout == GKO_LAYOUT_ROW_MAJOR ? s.r : s.c;
}
static int64_t gk_tight_ld(gk_shape s, int layout) {
  int64_t l = gk_line_len(s, layout);
  return l > 1 ? l : 1;
}

static void gk_shapes(const int64_t *v, gk_shape *a, gk_shape *b, gk_shape *cd) {
  int64_t m = v[GKO_GEMM_ATTR_M], n = v[GKO_GEMM_ATTR_N], k = v[GKO_GEMM_ATTR_K];
  a->r = v[GKO_GEMM_ATTR_TRANSA] ? k : m;
  a->c = v[GKO_GEMM_ATTR_TRANSA] ? m : k;
  b->r = v[GKO_GEMM_ATTR_TRANSB] ? n : k;
  b->c = v[GKO_GEMM_ATTR_TRANSB] ? k : n;
  cd->r = m;
  cd->c = n;
}

/* Value of an attribute with defaults resolved; overflow of a default
 * stride saturates (plan_create reports it). */
static int64_t gk_resolved(const int64_t *v, int attr) {
  gk_shape a, b, cd;
  gk_shapes(v, &a, &b, &cd);
  int layout = (int)v[GKO_GEMM_ATTR_LAYOUT];
  gk_shape sh = attr == GKO_GEMM_ATTR_LDA || attr == GKO_GEMM_ATTR_STRIDE_A   ? a
                : attr == GKO_GEMM_ATTR_LDB || attr == GKO_GEMM_ATTR_STRIDE_B ? b
                                                                               : cd;
  switch (attr) {
    case GKO_GEMM_ATTR_LDA:
    case GKO_GEMM_ATTR_LDB:
    case GKO_GEMM_ATTR_LDC:
    case GKO_GEMM_ATTR_LDD:
      return v[attr] == -1 ? gk_tight_ld(sh, layout) : v[attr];
    case GKO_GEMM_ATTR_STRIDE_A:
    case GKO_GEMM_ATTR_STRIDE_B:
    case GKO_GEMM_ATTR_STRIDE_C:
    case GKO_GEMM_ATTR_STRIDE_D: {
      if (v[attr] != -1) return v[attr];
      int ld_attr = attr - GKO_GEMM_ATTR_STRIDE_A + GKO_GEMM_ATTR_LDA;
      int64_t ld = gk_resolved(v, ld_attr), r;
      if (__builtin_mul_overflow(ld, gk_nlines(sh, layout), &r)) return INT64_MAX;
      return r;
    }
    case GKO_GEMM_ATTR_STRIDE_BIAS:
      return v[attr] == -1 ? 0 : v[attr];
  }
  return v[attr];
}

GKO_API gko_status_t gko_gemm_desc_get(gko_gemm_desc_t desc, gko_gemm_attr_t attr,
                                       int64_t *value) {
  gk_clear_error();
  if (!desc) return gk_fail(GKO_STATUS_INVALID_VALUE, "desc is NULL");
  if (!value) return gk_fail(GKO_STATUS_INVALID_VALUE, "value is NULL");
  if ((int)attr < 0 || (int)attr >= GK_NATTR)
    return gk_fail(GKO_STATUS_INVALID_VALUE, "attr = %d is not a gko_gemm_attr_t", (int)attr);
  *value = gk_resolved(desc->v, (int)attr);
  return GKO_STATUS_SUCCESS;
}

static const char *gk_op_name(int op) { return op ? "T" : "N"; }
static const char *gk_layout_name(int l) { return l ? "column-major" : "row-major"; }

/* Elements from the first to one past the last element of a matrix's
 * batches, or -1 on overflow (0 for an empty matrix). */
static int64_t gk_extent(gk_shape s, int layout, int64_t ld, int64_t batch, int64_t stride) {
  if (s.r == 0 || s.c == 0 || batch == 0) return 0;
  int64_t lines = gk_nlines(s, layout), len = gk_line_len(s, layout), e, t;
  if (__builtin_mul_overflow(lines - 1, ld, &e) || __builtin_add_overflow(e, len, &e))
    return -1;
  if (__builtin_mul_overflow(batch - 1, stride, &t) || __builtin_add_overflow(e, t, &e))
    return -1;
  return e;
}

static gko_status_t gk_check_matrix(const char *mat, const char *ldname, gk_shape s,
                                    int layout, int64_t ld, int64_t batch, int64_t stride,
                                    size_t es, const gk_gemm_problem *p, int op) {
  int64_t len = gk_line_len(s, layout);
  if (ld < len)
    return gk_fail(GKO_STATUS_INVALID_VALUE,
                   "%s = %lld is smaller than %lld, the length of a stored %s of %s "
                   "(%s, %lld x %lld stored%s%s; m = %lld, n = %lld, k = %lld)",
                   ldname, (long long)ld, (long long)len,
                   layout == GKO_LAYOUT_ROW_MAJOR ? "row" : "column", mat,
                   gk_layout_name(layout), (long long)s.r, (long long)s.c,
                   op >= 0 ? ", op " : "", op >= 0 ? gk_op_name(op) : "", (long long)p->m,
                   (long long)p->n, (long long)p->k);
  int64_t e = gk_extent(s, layout, ld, batch, stride);
  if (e < 0 || (uint64_t)e > (uint64_t)INT64_MAX / es)
    return gk_fail(GKO_STATUS_INVALID_VALUE,
                   "%s (%lld x %lld, %s = %lld, %lld batches %lld apart) spans more bytes "
                   "than int64 can count",
                   mat, (long long)s.r, (long long)s.c, ldname, (long long)ld,
                   (long long)batch, (long long)stride);
  return GKO_STATUS_SUCCESS;
}

/* Fills p from the descriptor and checks every combination that does not
 * need the GPU. */
static gko_status_t gk_gemm_resolve(const int64_t *v, gk_gemm_problem *p) {
  memset(p, 0, sizeof *p);
  p->ab_dtype = (int)v[GKO_GEMM_ATTR_AB_DTYPE];
  p->cd_dtype = (int)v[GKO_GEMM_ATTR_CD_DTYPE];
  if (p->cd_dtype != p->ab_dtype && p->cd_dtype != GKO_DTYPE_F32)
    return gk_fail(GKO_STATUS_INVALID_VALUE,
                   "GKO_GEMM_ATTR_CD_DTYPE = %d must be AB_DTYPE (%d) or GKO_DTYPE_F32",
                   p->cd_dtype, p->ab_dtype);
  p->m = v[GKO_GEMM_ATTR_M];
  p->n = v[GKO_GEMM_ATTR_N];
  p->k = v[GKO_GEMM_ATTR_K];
  p->transa = (int)v[GKO_GEMM_ATTR_TRANSA];
  p->transb = (int)v[GKO_GEMM_ATTR_TRANSB];
  p->layout = (int)v[GKO_GEMM_ATTR_LAYOUT];
  p->lda = gk_resolved(v, GKO_GEMM_ATTR_LDA);
  p->ldb = gk_resolved(v, GKO_GEMM_ATTR_LDB);
  p->ldc = gk_resolved(v, GKO_GEMM_ATTR_LDC);
  p->ldd = gk_resolved(v, GKO_GEMM_ATTR_LDD);
  p->batch = v[GKO_GEMM_ATTR_BATCH_COUNT];
  p->stride_a = gk_resolved(v, GKO_GEMM_ATTR_STRIDE_A);
  p->stride_b = gk_resolved(v, GKO_GEMM_ATTR_STRIDE_B);
  p->stride_c = gk_resolved(v, GKO_GEMM_ATTR_STRIDE_C);
  p->stride_d = gk_resolved(v, GKO_GEMM_ATTR_STRIDE_D);
  p->stride_bias = gk_resolved(v, GKO_GEMM_ATTR_STRIDE_BIAS);
  p->epilogue = (int)v[GKO_GEMM_ATTR_EPILOGUE];
  p->compute = (int)v[GKO_GEMM_ATTR_COMPUTE];
  p->backend = (int)v[GKO_GEMM_ATTR_BACKEND];
  p->fusion = (int)v[GKO_GEMM_ATTR_FUSION];
  p->pad = (int)v[GKO_GEMM_ATTR_PAD];
  p->alignment = v[GKO_GEMM_ATTR_ALIGNMENT];
  p->max_workspace = v[GKO_GEMM_ATTR_MAX_WORKSPACE];
  p->autotune = (int)v[GKO_GEMM_ATTR_AUTOTUNE];
  p->invariant = v[GKO_GEMM_ATTR_INVARIANT];
  p->static_ops = (int)v[GKO_GEMM_ATTR_STATIC_OPERANDS];

  if (p->compute == GKO_GEMM_COMPUTE_TF32 && p->ab_dtype != GKO_DTYPE_F32)
    return gk_fail(GKO_STATUS_INVALID_VALUE,
                   "GKO_GEMM_ATTR_COMPUTE = TF32 applies to f32 inputs only (AB_DTYPE = %d)",
                   p->ab_dtype);
  gk_shape a, b, cd;
  gk_shapes(v, &a, &b, &cd);
  size_t esab = gko_dtype_size(p->ab_dtype), escd = gko_dtype_size(p->cd_dtype);
  gko_status_t s;
  int64_t bt = p->batch;
  if ((s = gk_check_matrix("A", "GKO_GEMM_ATTR_LDA", a, p->layout, p->lda, bt, p->stride_a,
                           esab, p, p->transa)) ||
      (s = gk_check_matrix("B", "GKO_GEMM_ATTR_LDB", b, p->layout, p->ldb, bt, p->stride_b,
                           esab, p, p->transb)) ||
      (s = gk_check_matrix("C", "GKO_GEMM_ATTR_LDC", cd, p->layout, p->ldc, bt, p->stride_c,
                           escd, p, -1)) ||
      (s = gk_check_matrix("D", "GKO_GEMM_ATTR_LDD", cd, p->layout, p->ldd, bt, p->stride_d,
                           escd, p, -1)))
    return s;
  if (p->stride_a == INT64_MAX || p->stride_b == INT64_MAX || p->stride_c == INT64_MAX ||
      p->stride_d == INT64_MAX)
    return gk_fail(GKO_STATUS_INVALID_VALUE,
                   "a default batch stride (leading dimension x lines) overflows int64");
  /* D's batches must not overlap each other */
  int64_t dfoot = gk_extent(cd, p->layout, p->ldd, 1, 0);
  if (bt > 1 && dfoot > 0 && p->stride_d < dfoot)
    return gk_fail(GKO_STATUS_INVALID_VALUE,
                   "GKO_GEMM_ATTR_STRIDE_D = %lld is smaller than one batch of D (%lld "
                   "elements): D's batches would overlap",
                   (long long)p->stride_d, (long long)dfoot);
  if ((p->epilogue & 1) && bt > 0 && p->n > 0) {
    int64_t e, t;
    if (__builtin_mul_overflow(bt - 1, p->stride_bias, &t) ||
        __builtin_add_overflow(t, p->n, &e) || (uint64_t)e > (uint64_t)INT64_MAX / escd)
      return gk_fail(GKO_STATUS_INVALID_VALUE,
                     "the bias (n = %lld, %lld batches %lld apart) spans more bytes than "
                     "int64 can count",
                     (long long)p->n, (long long)bt, (long long)p->stride_bias);
  }
  /* lt view */
  p->swap = p->layout == GKO_LAYOUT_ROW_MAJOR;
  if (p->swap) {
    p->ml = p->n;
    p->nl = p->m;
    p->opa_l = p->transb;
    p->lda_l = p->ldb;
    p->stride_a_l = p->stride_b;
    p->opb_l = p->transa;
    p->ldb_l = p->lda;
    p->stride_b_l = p->stride_a;
    p->bias_on_rows = 1;
  } else {
    p->ml = p->m;
    p->nl = p->n;
    p->opa_l = p->transa;
    p->lda_l = p->lda;
    p->stride_a_l = p->stride_a;
    p->opb_l = p->transb;
    p->ldb_l = p->ldb;
    p->stride_b_l = p->stride_b;
    p->bias_on_rows = 0;
  }
  /* GKO_GEMM_ATTR_INVARIANT: the reference problem grows the lt view's nl
   * (D's lines), which B_l must hold as columns (op N) */
  if (p->invariant > 0 && p->opb_l)
    return gk_fail(GKO_STATUS_INVALID_VALUE,
                   "GKO_GEMM_ATTR_INVARIANT needs %s = GKO_OP_N with the %s layout (the "
                   "operand holding D's %s must not be transposed)",
                   p->swap ? "GKO_GEMM_ATTR_TRANSA" : "GKO_GEMM_ATTR_TRANSB",
                   gk_layout_name(p->layout), p->swap ? "rows" : "columns");
  if (p->invariant > 0 && p->autotune)
    return gk_fail(GKO_STATUS_INVALID_VALUE,
                   "GKO_GEMM_ATTR_INVARIANT and GKO_GEMM_ATTR_AUTOTUNE exclude each other "
                   "(timing picks per shape)");
  return GKO_STATUS_SUCCESS;
}

/* Checks that hold for every backend and need the handle's device. */
static gko_status_t gk_gemm_check_compute(gko_handle_t h, const gk_gemm_problem *p) {
  if (p->compute == GKO_GEMM_COMPUTE_TF32 && h->cc < 80)
    return gk_fail(GKO_STATUS_NOT_SUPPORTED,
                   "GKO_GEMM_COMPUTE_TF32 needs sm_80 or newer; this GPU is sm_%d", h->cc);
  if (p->compute == GKO_GEMM_COMPUTE_F16_ACCUMULATE &&
      (p->ab_dtype != GKO_DTYPE_F16 || p->cd_dtype != GKO_DTYPE_F16))
    return gk_fail(GKO_STATUS_NOT_SUPPORTED,
                   "GKO_GEMM_COMPUTE_F16_ACCUMULATE is available for f16 inputs with f16 "
                   "C/D only (AB_DTYPE = %d, CD_DTYPE = %d)",
                   p->ab_dtype, p->cd_dtype);
  return GKO_STATUS_SUCCESS;
}

/* ---- plans ---------------------------------------------------------------------- */

/* The order in which AUTO tries the backends for a problem; a backend that
 * answers NOT_SUPPORTED passes to the next.  cuBLASLt first everywhere
 * today; gko's WMMA kernel serves what cuBLASLt rejects (zero heuristic
 * results, FUSION_REQUIRED with an epilogue cuBLASLt cannot fuse such as
 * GELU-erf, a misaligned bias or a column-major bias).  WMMA goes first
 * where a backend's measured rule says it wins (auto_first: the decode
 * kernel with static weights, gemm_wmma.c) and, if switched on, for
 * GELU-erf epilogues; docs/gemm.md ("AUTO's rules") has the measurements.
 * The GELU-erf switch stays off: the fused WMMA kernel loses to cuBLASLt
 * plus gko's pass at BERT FFN1 (H200). */
static const int kAutoWmmaGeluErf = 0; /* GELU-erf epilogues, 16-bit inputs */

static int gk_gemm_auto_order(gko_handle_t h, const gk_gemm_problem *p,
                              const gk_gemm_backend **list) {
  const int wmma_ok = p->ab_dtype != GKO_DTYPE_F32 && (p->ab_dtype == GKO_DTYPE_F16 || h->cc >= 80);
  if (!wmma_ok) {
    list[0] = &gk_gemm_cublaslt_backend;
    return 1;
  }
  const int erf = (p->epilogue >> 1) == 2;
  if (gk_gemm_wmma_backend.auto_first(h, p) || (kAutoWmmaGeluErf && erf)) {
    list[0] = &gk_gemm_wmma_backend;
    list[1] = &gk_gemm_cublaslt_backend;
  } else {
    list[0] = &gk_gemm_cublaslt_backend;
    list[1] = &gk_gemm_wmma_backend;
  }
  return 2;
}

static const char *gk_epilogue_name(int e) {
  static const char *const n[8] = {"NONE",     "BIAS",          "RELU",      "BIAS_RELU",
                                   "GELU_ERF", "BIAS_GELU_ERF", "GELU_TANH", "BIAS_GELU_TANH"};
  return e >= 0 && e < 8 ? n[e] : "?";
}

static gko_status_t gk_gemm_execute(gko_gemm_plan_t plan, float alpha, const void *a,
                                    const void *b, float beta, const void *c, void *d,
                                    const void *bias, void *ws, size_t ws_bytes,
                                    gko_stream_t stream);
static void gk_plan_free(gko_gemm_plan_t plan);

/* One backend's plan for p (variant 0: its own choice). */
static gko_status_t gk_plan_one(gko_handle_t h, const gk_gemm_problem *p,
                                const gk_gemm_backend *be, int variant, gko_gemm_plan_t *out) {
  struct gko_gemm_plan_s *plan = calloc(1, sizeof *plan);
  if (!plan) return gk_fail(GKO_STATUS_ALLOC_FAILED, "host allocation of the plan failed");
  plan->handle = h;
  plan->p = *p;
  plan->variant = variant;
  gko_status_t s = be->plan(plan);
  if (s != GKO_STATUS_SUCCESS) {
    free(plan); /* a failing backend frees its own state */
    return s;
  }
  plan->backend = be;
  *out = plan;
  return GKO_STATUS_SUCCESS;
}

static void gk_why_append(gko_gemm_plan_t plan, const char *text) {
  size_t used = strlen(plan->why);
  if (used + 1 < sizeof plan->why) snprintf(plan->why + used, sizeof plan->why - used, "%s", text);
}

/* ---- autotune ------------------------------------------------------------------ */

/* Cache entry of a tuned problem: the problem (every attribute, resolved)
 * is the key; the winner and the account of the timing are the value. */
typedef struct {
  int32_t tag;
  gk_gemm_problem p;
} gk_tune_key;
typedef struct {
  int32_t backend, variant;
  char summary[640];
} gk_tune_value;

enum { GK_TUNE_MAX = 48 };

typedef struct {
  const gk_gemm_backend *be;
  int variant;
  gko_gemm_plan_t plan;
  double us;
} gk_tune_cand;

/* Median of `reps` timings of `calls` back-to-back executes (us per call). */
static gko_status_t gk_time_plan(gko_gemm_plan_t plan, const void *a, const void *b, void *d,
                                 const void *bias, void *ws, size_t ws_bytes,
                                 cudaStream_t st, cudaEvent_t e0, cudaEvent_t e1, double *us) {
  gko_status_t s;
  for (int i = 0; i < 2; i++)
    if ((s = gk_gemm_execute(plan, 1.0f, a, b, 0.0f, NULL, d, bias, ws, ws_bytes, st)))
      return s;
  cudaError_t e = cudaEventRecord(e0, st);
  if (e == cudaSuccess && (s = gk_gemm_execute(plan, 1.0f, a, b, 0.0f, NULL, d, bias, ws,
                                               ws_bytes, st)))
    return s;
  if (e == cudaSuccess) e = cudaEventRecord(e1, st);
  if (e == cudaSuccess) e = cudaEventSynchronize(e1);
  float ms = 0;
  if (e == cudaSuccess) e = cudaEventElapsedTime(&ms, e0, e1);
  if (e != cudaSuccess) return gk_cuda_fail(e, "autotune timing");
  int calls = (int)(300.0 / (ms * 1000.0 + 1.0)) + 1; /* ~0.3 ms per repetition */
  if (calls > 100) calls = 100;
  double t[5];
  for (int r = 0; r < 5; r++) {
    e = cudaEventRecord(e0, st);
    for (int i = 0; e == cudaSuccess && i < calls; i++)
      if ((s = gk_gemm_execute(plan, 1.0f, a, b, 0.0f, NULL, d, bias, ws, ws_bytes, st)))
        return s;
    if (e == cudaSuccess) e = cudaEventRecord(e1, st);
    if (e == cudaSuccess) e = cudaEventSynchronize(e1);
    if (e == cudaSuccess) e = cudaEventElapsedTime(&ms, e0, e1);
    if (e != cudaSuccess) return gk_cuda_fail(e, "autotune timing");
    t[r] = ms * 1000.0 / calls;
  }
  for (int i = 1; i < 5; i++) /* insertion sort, then the median */
    for (int j = i; j > 0 && t[j] < t[j - 1]; j--) {
      double x = t[j];
      t[j] = t[j - 1];
      t[j - 1] = x;
    }
  *us = t[2];
  return GKO_STATUS_SUCCESS;
}

/* Elements spanned by A, B, D of p (for the scratch buffers). */
static int64_t gk_span(gk_shape s, int layout, int64_t ld, int64_t batch, int64_t stride) {
  int64_t e = gk_extent(s, layout, ld, batch, stride);
  return e > 0 ? e : 1;
}

/* Times every candidate (backend, variant) on scratch buffers of the
 * problem's shape and keeps the fastest.  Synchronizes; allocates. */
static gko_status_t gk_gemm_autotune(gko_handle_t h, const gk_gemm_problem *p,
                                     const gk_gemm_backend *const *list, int nb,
                                     gko_gemm_plan_t *out) {
  gk_tune_key key;
  memset(&key, 0, sizeof key);
  key.tag = 0x54554e45; /* "TUNE" */
  key.p = *p;
  gk_tune_value val;
  gko_status_t s;
  if (gk_gemm_cache_lookup(h, &key, sizeof key, &val, sizeof val)) {
    const gk_gemm_backend *be = val.backend == GKO_GEMM_BACKEND_WMMA ? &gk_gemm_wmma_backend
                                                                     : &gk_gemm_cublaslt_backend;
    if (gk_plan_one(h, p, be, val.variant, out) == GKO_STATUS_SUCCESS) {
      gk_why_append(*out, "; autotune (cached in the handle): ");
      gk_why_append(*out, val.summary);
      return GKO_STATUS_SUCCESS;
    }
    gk_clear_error();
  }
  /* the candidates */
  gk_tune_cand cand[GK_TUNE_MAX];
  int nc = 0;
  size_t ws_max = 0;
  for (int i = 0; i < nb; i++) {
    const int vmax = list[i] == &gk_gemm_cublaslt_backend ? 24 : 12;
    for (int v = 0; v <= vmax && nc < GK_TUNE_MAX; v++) { /* 0: the backend's own choice */
      gko_gemm_plan_t pl = NULL;
      s = gk_plan_one(h, p, list[i], v, &pl);
      if (s == GKO_STATUS_NOT_SUPPORTED) continue;
      if (s) goto fail;
      /* the same configuration twice (e.g. a padding fallback that lands
       * on the unpadded algorithm) is timed once */
      int dup = 0;
      for (int j = 0; j < nc && !dup; j++)
        dup = cand[j].be == list[i] && strcmp(cand[j].plan->why, pl->why) == 0;
      if (dup) {
        gk_plan_free(pl);
        continue;
      }
      cand[nc].be = list[i];
      cand[nc].variant = v;
      cand[nc].plan = pl;
      cand[nc].us = -1;
      if (pl->ws_bytes > ws_max) ws_max = pl->ws_bytes;
      nc++;
    }
  }
  gk_clear_error();
  if (nc == 0) {
    /* nothing to time: the ordinary choice says why */
    s = GKO_STATUS_NOT_SUPPORTED;
    for (int i = 0; i < nb && s == GKO_STATUS_NOT_SUPPORTED; i++)
      s = gk_plan_one(h, p, list[i], 0, out);
    return s;
  }
  {
    gk_shape sa, sb, scd;
    int64_t v[GK_NATTR];
    memset(v, 0, sizeof v);
    v[GKO_GEMM_ATTR_M] = p->m;
    v[GKO_GEMM_ATTR_N] = p->n;
    v[GKO_GEMM_ATTR_K] = p->k;
    v[GKO_GEMM_ATTR_TRANSA] = p->transa;
    v[GKO_GEMM_ATTR_TRANSB] = p->transb;
    gk_shapes(v, &sa, &sb, &scd);
    const size_t esab = gko_dtype_size(p->ab_dtype), escd = gko_dtype_size(p->cd_dtype);
    const size_t na = (size_t)gk_span(sa, p->layout, p->lda, p->batch, p->stride_a) * esab;
    const size_t nbb = (size_t)gk_span(sb, p->layout, p->ldb, p->batch, p->stride_b) * esab;
    const size_t nd = (size_t)gk_span(scd, p->layout, p->ldd, p->batch, p->stride_d) * escd;
    const size_t nbias = ((size_t)p->n + (size_t)(p->batch - 1) * (size_t)p->stride_bias) * escd;
    void *da = NULL, *db = NULL, *dd = NULL, *dbias = NULL, *dws = NULL;
    cudaStream_t st = NULL;
    cudaEvent_t e0 = NULL, e1 = NULL;
    /* The timing runs on a private non-blocking stream with its own
     * buffers; relaxed capture mode for this thread meanwhile, so that a
     * capture in progress on another stream (global mode) is not
     * invalidated by the allocations. */
    enum cudaStreamCaptureMode cmode = cudaStreamCaptureModeRelaxed;
    cudaThreadExchangeStreamCaptureMode(&cmode);
    cudaError_t e = cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking);
    if (e == cudaSuccess) e = cudaMalloc(&da, na);
    if (e == cudaSuccess) e = cudaMalloc(&db, nbb);
    if (e == cudaSuccess) e = cudaMalloc(&dd, nd);
    if (e == cudaSuccess && (p->epilogue & 1)) e = cudaMalloc(&dbias, nbias + 16);
    if (e == cudaSuccess && ws_max) e = cudaMalloc(&dws, ws_max);
    /* small finite values: 0x3c3c.. is about 1.06 in f16, 0.011 in bf16/f32 */
    if (e == cudaSuccess) e = cudaMemsetAsync(da, 0x3c, na, st);
    if (e == cudaSuccess) e = cudaMemsetAsync(db, 0x3c, nbb, st);
    if (e == cudaSuccess && dbias) e = cudaMemsetAsync(dbias, 0x3c, nbias + 16, st);
    if (e == cudaSuccess) e = cudaEventCreate(&e0);
    if (e == cudaSuccess) e = cudaEventCreate(&e1);
    s = e == cudaSuccess ? GKO_STATUS_SUCCESS
                         : gk_cuda_fail(e, "autotune: scratch buffers (cudaMalloc)");
    for (int i = 0; i < nc && s == GKO_STATUS_SUCCESS; i++)
      s = gk_time_plan(cand[i].plan, da, db, dd, dbias, dws, ws_max, st, e0, e1, &cand[i].us);
    if (st) cudaStreamSynchronize(st);
    if (e0) cudaEventDestroy(e0);
    if (e1) cudaEventDestroy(e1);
    if (st) cudaStreamDestroy(st);
    cudaFree(da);
    cudaFree(db);
    cudaFree(dd);
    cudaFree(dbias);
    cudaFree(dws);
    cudaThreadExchangeStreamCaptureMode(&cmode);
    if (s) goto fail;
  }
  int best = 0;
  for (int i = 1; i < nc; i++)
    if (cand[i].us < cand[best].us) best = i;
  /* the account: every candidate and its time, the default marked */
  memset(&val, 0, sizeof val);
  val.backend = cand[best].be->id;
  val.variant = cand[best].variant;
  {
    size_t u = 0;
    const size_t cap = sizeof val.summary;
    u += (size_t)snprintf(val.summary + u, cap - u, "%d candidates timed (us per call):", nc);
    for (int i = 0; i < nc && u < cap; i++)
      u += (size_t)snprintf(val.summary + u, cap - u, " %s#%d %.1f%s",
                            cand[i].be == &gk_gemm_wmma_backend ? "wmma" : "lt", cand[i].variant,
                            cand[i].us, i == best ? "*" : "");
    if (u < cap)
      snprintf(val.summary + u, cap - u, " -> %s#%d", cand[best].be->name, cand[best].variant);
  }
  gk_gemm_cache_insert(h, &key, sizeof key, &val, sizeof val);
  for (int i = 0; i < nc; i++)
    if (i != best) gk_plan_free(cand[i].plan);
  *out = cand[best].plan;
  gk_why_append(*out, "; autotune: ");
  gk_why_append(*out, val.summary);
  return GKO_STATUS_SUCCESS;
fail:
  for (int i = 0; i < nc; i++) gk_plan_free(cand[i].plan);
  return s;
}

static gko_status_t gk_gemm_plan_build(gko_handle_t h, const gk_gemm_problem *p,
                                       gko_gemm_plan_t *out) {
  gko_status_t s = gk_gemm_check_compute(h, p);
  if (s) return s;
  if (p->backend != GKO_GEMM_BACKEND_WMMA &&
      (p->m == 0 || p->n == 0 || p->batch == 0 || p->k == 0)) {
    /* no product: nothing to choose; execute runs gko's epilogue pass */
    struct gko_gemm_plan_s *plan = calloc(1, sizeof *plan);
    if (!plan) return gk_fail(GKO_STATUS_ALLOC_FAILED, "host allocation of the plan failed");
    plan->handle = h;
    plan->p = *p;
    plan->backend = &gk_gemm_cublaslt_backend;
    if (p->m == 0 || p->n == 0 || p->batch == 0)
      snprintf(plan->why, sizeof plan->why, "empty D (m = %lld, n = %lld, batch = %lld): "
               "execute writes nothing", (long long)p->m, (long long)p->n,
               (long long)p->batch);
    else
      snprintf(plan->why, sizeof plan->why, "k = 0: no product; D = %s(beta * C) by gko's "
               "epilogue pass", gk_epilogue_name(p->epilogue));
    *out = plan;
    return GKO_STATUS_SUCCESS;
  }
  const gk_gemm_backend *list[4];
  int nb = 1;
  if (p->backend == GKO_GEMM_BACKEND_AUTO) nb = gk_gemm_auto_order(h, p, list);
  else list[0] = p->backend == GKO_GEMM_BACKEND_WMMA ? &gk_gemm_wmma_backend
                                                     : &gk_gemm_cublaslt_backend;
  /* GKO_GEMM_ATTR_INVARIANT: cuBLASLt's invariant algorithm first; the
   * WMMA backend implements it with its tiled kernel only (no skinny
   * variant, no split-K: gemm_wmma.c), for 16-bit inputs */
  if (p->invariant > 0 && p->backend == GKO_GEMM_BACKEND_AUTO) {
    list[0] = &gk_gemm_cublaslt_backend;
    nb = 1;
    if (p->ab_dtype != GKO_DTYPE_F32 && (p->ab_dtype == GKO_DTYPE_F16 || h->cc >= 80))
      list[nb++] = &gk_gemm_wmma_backend;
  }
  if (p->autotune && p->m > 0 && p->n > 0 && p->batch > 0 && p->k > 0)
    return gk_gemm_autotune(h, p, list, nb, out);
  /* in order; when every backend declines, the detail lists each reason */
  char details[1024] = "";
  s = GKO_STATUS_NOT_SUPPORTED;
  for (int i = 0; i < nb; i++) {
    s = gk_plan_one(h, p, list[i], 0, out);
    if (s == GKO_STATUS_SUCCESS && p->backend == GKO_GEMM_BACKEND_AUTO && i == 0 && nb > 1 &&
        list[0] == &gk_gemm_wmma_backend)
      gk_why_append(*out, "AUTO: WMMA before cuBLASLt (its rule: the decode kernel with the "
                          "weights promised static, min(m, n) <= 8, 4096 <= weight rows <= k, "
                          "sm_90+; measured faster on the H200, docs/gemm.md); ");
    if (s != GKO_STATUS_NOT_SUPPORTED) return s;
    if (nb > 1) {
      size_t u = strlen(details);
      snprintf(details + u, sizeof details - u, "%s%s: %s", u ? "; " : "", list[i]->name,
               gko_last_error_detail());
    }
  }
  if (nb > 1) return gk_fail(GKO_STATUS_NOT_SUPPORTED, "no backend can run this GEMM: %s", details);
  return s;
}

GKO_API gko_status_t gko_gemm_plan_create(gko_handle_t handle, gko_gemm_desc_t desc,
                                          gko_gemm_plan_t *plan) {
  gk_clear_error();
  if (!handle) return gk_fail(GKO_STATUS_INVALID_VALUE, "handle is NULL");
  if (!desc) return gk_fail(GKO_STATUS_INVALID_VALUE, "desc is NULL");
  if (!plan) return gk_fail(GKO_STATUS_INVALID_VALUE, "plan is NULL");
  gk_gemm_problem p;
  gko_status_t s = gk_gemm_resolve(desc->v, &p);
  if (s) return s;
  /* the current device must be the handle's (host queries only) */
  if ((s = gk_check_call(handle, NULL, 0, NULL, NULL))) return s;
  s = gk_gemm_plan_build(handle, &p, plan);
  /* a backend that declined before another accepted left its reason */
  if (s == GKO_STATUS_SUCCESS) gk_clear_error();
  return s;
}

static void gk_plan_free(gko_gemm_plan_t plan) {
  if (!plan) return;
  if (plan->backend && plan->backend->destroy) plan->backend->destroy(plan);
  free(plan);
}

GKO_API gko_status_t gko_gemm_plan_destroy(gko_gemm_plan_t plan) {
  gk_clear_error();
  gk_plan_free(plan);
  return GKO_STATUS_SUCCESS;
}

GKO_API gko_status_t gko_gemm_workspace_size(gko_gemm_plan_t plan, size_t *bytes) {
  gk_clear_error();
  if (!plan) return gk_fail(GKO_STATUS_INVALID_VALUE, "plan is NULL");
  if (!bytes) return gk_fail(GKO_STATUS_INVALID_VALUE, "bytes is NULL");
  *bytes = plan->ws_bytes;
  return GKO_STATUS_SUCCESS;
}

GKO_API gko_status_t gko_gemm_plan_backend(gko_gemm_plan_t plan, gko_gemm_backend_t *backend) {
  gk_clear_error();
  if (!plan) return gk_fail(GKO_STATUS_INVALID_VALUE, "plan is NULL");
  if (!backend) return gk_fail(GKO_STATUS_INVALID_VALUE, "backend is NULL");
  *backend = (gko_gemm_backend_t)plan->backend->id;
  return GKO_STATUS_SUCCESS;
}

GKO_API gko_status_t gko_gemm_plan_describe(gko_gemm_plan_t plan, char *buf, size_t bytes,
                                            size_t *required) {
  gk_clear_error();
  if (!plan) return gk_fail(GKO_STATUS_INVALID_VALUE, "plan is NULL");
  if (!buf && bytes > 0)
    return gk_fail(GKO_STATUS_INVALID_VALUE, "buf is NULL but bytes = %zu", bytes);
  char text[GK_GEMM_WHY_BYTES + 64];
  int w = snprintf(text, sizeof text, "%s: %s", plan->backend->name, plan->why);
  size_t need = (w < 0 ? 0 : (size_t)w) + 1;
  if (need > sizeof text) need = sizeof text;
  if (bytes > 0) {
    size_t n = need <= bytes ? need - 1 : bytes - 1;
    memcpy(buf, text, n);
    buf[n] = '\0';
  }
  if (required) *required = need;
  return GKO_STATUS_SUCCESS;
}

/* ---- execute ---------------------------------------------------------------------- */

static gko_status_t gk_check_ptr(const void *ptr, const char *name, size_t es, int needed,
                                 const char *why) {
  if (!needed) return GKO_STATUS_SUCCESS;
  if (!ptr) return gk_fail(GKO_STATUS_INVALID_VALUE, "%s is NULL (%s)", name, why);
  if ((uintptr_t)ptr % es != 0)
    return gk_fail(GKO_STATUS_INVALID_VALUE,
                   "%s = %p is not aligned to its element size (%zu bytes)", name, ptr, es);
  return GKO_STATUS_SUCCESS;
}

/* The memo: the last pointer set (and stream) whose checks passed.  A
 * try-lock guards it; a thread that finds it taken just runs the checks.
 * The same pointers again skip cudaPointerGetAttributes and the stream
 * queries (each a driver call); the current device is always checked. */
static int gk_memo_lock(gko_gemm_plan_t plan) {
  return __atomic_exchange_n(&plan->memo_lock, 1, __ATOMIC_ACQUIRE) == 0;
}
static void gk_memo_unlock(gko_gemm_plan_t plan) {
  __atomic_store_n(&plan->memo_lock, 0, __ATOMIC_RELEASE);
}

static gko_status_t gk_gemm_check_pointers(gko_gemm_plan_t plan, void *stream,
                                           const void *const *ptrs, const char *const *names) {
  int hit = 0;
  if (gk_memo_lock(plan)) {
    hit = plan->memo_valid && plan->memo_stream == stream &&
          memcmp(plan->memo_ptr, ptrs, sizeof plan->memo_ptr) == 0;
    gk_memo_unlock(plan);
  }
  if (hit) {
    int cur = -1;
    cudaError_t e = cudaGetDevice(&cur);
    if (e != cudaSuccess) return gk_cuda_fail(e, "cudaGetDevice");
    if (cur == plan->handle->device) return GKO_STATUS_SUCCESS;
    /* another device is current: the full check says why */
  }
  gko_status_t s = gk_check_call(plan->handle, stream, 6, ptrs, names);
  if (s == GKO_STATUS_SUCCESS && gk_memo_lock(plan)) {
    memcpy(plan->memo_ptr, ptrs, sizeof plan->memo_ptr);
    plan->memo_stream = stream;
    plan->memo_valid = 1;
    gk_memo_unlock(plan);
  }
  return s;
}

static gko_status_t gk_gemm_execute(gko_gemm_plan_t plan, float alpha, const void *a,
                                    const void *b, float beta, const void *c, void *d,
                                    const void *bias, void *ws, size_t ws_bytes,
                                    gko_stream_t stream) {
  if (!plan) return gk_fail(GKO_STATUS_INVALID_VALUE, "plan is NULL");
  const gk_gemm_problem *p = &plan->p;
  if (p->m == 0 || p->n == 0 || p->batch == 0) return GKO_STATUS_SUCCESS;
  size_t esab = gko_dtype_size(p->ab_dtype), escd = gko_dtype_size(p->cd_dtype);
  const int need_ab = p->k > 0 && alpha != 0.0f;
  const int need_c = beta != 0.0f;
  const int need_bias = p->epilogue & 1;
  gko_status_t s;
  if ((s = gk_check_ptr(d, "d", escd, 1, "D is always written")) ||
      (s = gk_check_ptr(a, "a", esab, need_ab, "k > 0 and alpha != 0")) ||
      (s = gk_check_ptr(b, "b", esab, need_ab, "k > 0 and alpha != 0")) ||
      (s = gk_check_ptr(c, "c", escd, need_c, "beta != 0")) ||
      (s = gk_check_ptr(bias, "bias", escd, need_bias, "the epilogue has a bias")))
    return s;
  if (need_c && c == d && (p->ldc != p->ldd || p->stride_c != p->stride_d))
    return gk_fail(GKO_STATUS_INVALID_VALUE,
                   "c == d (in place) needs equal layouts, but ldc = %lld, ldd = %lld, "
                   "stride_c = %lld, stride_d = %lld",
                   (long long)p->ldc, (long long)p->ldd, (long long)p->stride_c,
                   (long long)p->stride_d);
  if (!ws && ws_bytes > 0)
    return gk_fail(GKO_STATUS_INVALID_VALUE, "workspace is NULL but workspace_bytes = %zu",
                   ws_bytes);
  if (ws_bytes < plan->ws_bytes)
    return gk_fail(GKO_STATUS_INSUFFICIENT_WORKSPACE,
                   "workspace_bytes = %zu but the plan needs %zu (gko_gemm_workspace_size)",
                   ws_bytes, plan->ws_bytes);
  /* device checks: one attribute query per distinct pointer the call
   * touches (C only when beta != 0 and C is not D), skipped altogether when
   * the plan's last successful call used the same pointers and stream */
  const void *ptrs[6] = {d, need_ab ? a : NULL, need_ab ? b : NULL,
                         need_c && c != d ? c : NULL, need_bias ? bias : NULL,
                         ws_bytes ? ws : NULL};
  const char *names[6] = {"d", "a", "b", "c", "bias", "workspace"};
  for (int i = 1; i < 6; i++)
    for (int j = 0; j < i && ptrs[i]; j++)
      if (ptrs[j] == ptrs[i]) ptrs[i] = NULL; /* already checked under another name */
  if ((s = gk_gemm_check_pointers(plan, stream, ptrs, names))) return s;

  if (!need_ab) {
    /* no product: D = act(beta * C + bias), C not read when beta == 0 */
    return gk_gemm_epilogue_launch(p->cd_dtype, p->epilogue >> 1, p->ml, p->nl, p->batch, d,
                                   p->ldd, p->stride_d, need_c ? c : NULL, p->ldc,
                                   p->stride_c, beta, need_bias ? bias : NULL,
                                   p->stride_bias, p->bias_on_rows, stream);
  }
  gk_gemm_args args;
  args.alpha = alpha;
  args.beta = beta;
  args.a = a;
  args.b = b;
  args.c = need_c ? c : NULL;
  args.d = d;
  args.bias = need_bias ? bias : NULL;
  args.a_l = p->swap ? b : a;
  args.b_l = p->swap ? a : b;
  args.ws = ws;
  args.ws_bytes = ws_bytes;
  args.stream = stream;
  return plan->backend->execute(plan, &args);
}

GKO_API gko_status_t gko_gemm_execute(gko_gemm_plan_t plan, float alpha, const void *a,
                                      const void *b, float beta, const void *c, void *d,
                                      const void *bias, void *workspace,
                                      size_t workspace_bytes, gko_stream_t stream) {
  gk_clear_error();
  return gk_gemm_execute(plan, alpha, a, b, beta, c, d, bias, workspace, workspace_bytes,
                         stream);
}

/* ---- one-shot ---------------------------------------------------------------------- */

static int64_t gk_ptr_align(const void *p) {
  uintptr_t v = (uintptr_t)p;
  if (!v) return 256;
  uintptr_t low = v & (~v + 1);
  return low >= 256 ? 256 : (int64_t)low;
}

GKO_API gko_status_t gko_gemm(gko_handle_t handle, gko_op_t transa, gko_op_t transb,
                              int64_t m, int64_t n, int64_t k, float alpha,
                              gko_dtype_t ab_dtype, const void *a, int64_t lda,
                              const void *b, int64_t ldb, float beta, gko_dtype_t cd_dtype,
                              const void *c, int64_t ldc, void *d, int64_t ldd,
                              gko_epilogue_t epilogue, const void *bias,
                              gko_stream_t stream) {
  gk_clear_error();
  if (!handle) return gk_fail(GKO_STATUS_INVALID_VALUE, "handle is NULL");
  struct gko_gemm_desc_s desc;
  gko_status_t s;
  if (!gk_is_dtype(ab_dtype))
    return gk_fail(GKO_STATUS_INVALID_VALUE, "ab_dtype = %d is not a gko_dtype_t",
                   (int)ab_dtype);
  if (!gk_is_dtype(cd_dtype))
    return gk_fail(GKO_STATUS_INVALID_VALUE, "cd_dtype = %d is not a gko_dtype_t",
                   (int)cd_dtype);
  gk_desc_defaults(&desc, ab_dtype, cd_dtype, m, n, k);
  const struct {
    int attr;
    int64_t v;
  } set[] = {{GKO_GEMM_ATTR_M, m},       {GKO_GEMM_ATTR_N, n},
             {GKO_GEMM_ATTR_K, k},       {GKO_GEMM_ATTR_TRANSA, transa},
             {GKO_GEMM_ATTR_TRANSB, transb}, {GKO_GEMM_ATTR_LDA, lda},
             {GKO_GEMM_ATTR_LDB, ldb},   {GKO_GEMM_ATTR_LDC, ldc},
             {GKO_GEMM_ATTR_LDD, ldd},   {GKO_GEMM_ATTR_EPILOGUE, epilogue}};
  for (size_t i = 0; i < sizeof set / sizeof set[0]; i++) {
    if ((s = gk_attr_check(set[i].attr, set[i].v))) return s;
    desc.v[set[i].attr] = set[i].v;
  }
  /* promise exactly what the pointers give (no fallback needed at execute) */
  int64_t al = 256;
  const int need_ab = k > 0 && alpha != 0.0f;
  const void *ps[5] = {need_ab ? a : NULL, need_ab ? b : NULL, beta != 0.0f ? c : NULL, d,
                       (epilogue & 1) ? bias : NULL};
  for (int i = 0; i < 5; i++)
    if (ps[i] && gk_ptr_align(ps[i]) < al) al = gk_ptr_align(ps[i]);
  desc.v[GKO_GEMM_ATTR_ALIGNMENT] = al;

  gk_gemm_problem p;
  if ((s = gk_gemm_resolve(desc.v, &p))) return s;
  /* device and stream first: the workspace is allocated on that stream */
  if ((s = gk_check_call(handle, stream, 0, NULL, NULL))) return s;
  /* host work (planning may query cuBLASLt) must not invalidate a capture in
   * progress: relaxed mode for this thread while it runs */
  enum cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  cudaThreadExchangeStreamCaptureMode(&mode);
  gko_gemm_plan_t plan = NULL;
  if (!gk_gemm_pools(handle)) p.max_workspace = 0; /* no stream-ordered allocator */
  s = gk_gemm_plan_build(handle, &p, &plan);
  cudaThreadExchangeStreamCaptureMode(&mode);
  if (s) return s;
  void *ws = NULL;
  size_t ws_bytes = plan->ws_bytes;
  if (ws_bytes > 0 && m > 0 && n > 0) {
    cudaError_t e = cudaMallocAsync(&ws, ws_bytes, (cudaStream_t)stream);
    if (e != cudaSuccess) {
      gk_plan_free(plan);
      return gk_cuda_fail(e, "cudaMallocAsync (gko_gemm's workspace)");
    }
  } else {
    ws_bytes = 0;
  }
  s = gk_gemm_execute(plan, alpha, a, b, beta, c, d, bias, ws, ws_bytes, stream);
  /* stream-ordered: freed after the GEMM that uses it (also when execute
   * failed, in which case nothing used it) */
  if (ws) cudaFreeAsync(ws, (cudaStream_t)stream);
  gk_plan_free(plan);
  return s;
}

/* ---- handle state: the cuBLASLt handle and the algorithm cache ------------------- */

enum { GK_MAX_DEVICES = 256 };
static pthread_mutex_t g_lt_mu = PTHREAD_MUTEX_INITIALIZER;
static cublasLtHandle_t g_lt[GK_MAX_DEVICES];

typedef struct gk_cache_entry {
  uint64_t hash;
  unsigned char *blob; /* key then value; NULL: empty slot */
  size_t key_bytes, value_bytes;
} gk_cache_entry;

struct gk_gemm_state {
  pthread_mutex_t mu;
  cublasLtHandle_t lt;
  int pools;
  gk_cache_entry *slots;
  size_t cap, count;
};

static int gk_gemm_pools(gko_handle_t h) { return h->gemm ? h->gemm->pools : 0; }

gko_status_t gk_gemm_handle_init(gko_handle_t h) {
  struct gk_gemm_state *st = calloc(1, sizeof *st);
  if (!st) return gk_fail(GKO_STATUS_ALLOC_FAILED, "host allocation of the GEMM state failed");
  if (h->device < 0 || h->device >= GK_MAX_DEVICES) {
    free(st);
    return gk_fail(GKO_STATUS_NOT_SUPPORTED, "device ordinal %d is beyond gko's limit of %d",
                   h->device, GK_MAX_DEVICES);
  }
  /* one cuBLASLt handle per device for the whole process, created once and
   * never destroyed (destroying one synchronizes the device) */
  pthread_mutex_lock(&g_lt_mu);
  if (!g_lt[h->device]) {
    cublasLtHandle_t lt = NULL;
    cublasStatus_t cs = cublasLtCreate(&lt);
    if (cs != CUBLAS_STATUS_SUCCESS) {
      pthread_mutex_unlock(&g_lt_mu);
      free(st);
      return gk_fail(cs == CUBLAS_STATUS_ALLOC_FAILED ? GKO_STATUS_ALLOC_FAILED
                                                      : GKO_STATUS_CUDA_ERROR,
                     "cublasLtCreate failed: %s: %s", cublasLtGetStatusName(cs),
                     cublasLtGetStatusString(cs));
    }
    g_lt[h->device] = lt;
  }
  st->lt = g_lt[h->device];
  pthread_mutex_unlock(&g_lt_mu);
  int pools = 0;
  if (cudaDeviceGetAttribute(&pools, cudaDevAttrMemoryPoolsSupported, h->device) !=
      cudaSuccess)
    pools = 0;
  st->pools = pools;
  if (pthread_mutex_init(&st->mu, NULL) != 0) {
    free(st);
    return gk_fail(GKO_STATUS_INTERNAL, "pthread_mutex_init failed");
  }
  h->gemm = st;
  return GKO_STATUS_SUCCESS;
}

void gk_gemm_handle_fini(gko_handle_t h) {
  struct gk_gemm_state *st = h->gemm;
  if (!st) return;
  for (size_t i = 0; i < st->cap; i++) free(st->slots[i].blob);
  free(st->slots);
  pthread_mutex_destroy(&st->mu);
  free(st);
  h->gemm = NULL;
}

void *gk_gemm_lt_handle(gko_handle_t h) { return h->gemm ? (void *)h->gemm->lt : NULL; }

static uint64_t gk_hash(const void *p, size_t n) {
  const unsigned char *b = p;
  uint64_t x = 1469598103934665603ull; /* FNV-1a */
  for (size_t i = 0; i < n; i++) x = (x ^ b[i]) * 1099511628211ull;
  return x;
}

/* Slot of key (an empty one if absent); cap is a power of two. */
static size_t gk_find_slot(gk_cache_entry *slots, size_t cap, uint64_t hash, const void *key,
                           size_t key_bytes) {
  size_t i = (size_t)hash & (cap - 1);
  while (slots[i].blob) {
    if (slots[i].hash == hash && slots[i].key_bytes == key_bytes &&
        memcmp(slots[i].blob, key, key_bytes) == 0)
      return i;
    i = (i + 1) & (cap - 1);
  }
  return i;
}

int gk_gemm_cache_lookup(gko_handle_t h, const void *key, size_t key_bytes, void *value,
                         size_t value_bytes) {
  struct gk_gemm_state *st = h->gemm;
  if (!st) return 0;
  uint64_t hash = gk_hash(key, key_bytes);
  int hit = 0;
  pthread_mutex_lock(&st->mu);
  if (st->cap) {
    size_t i = gk_find_slot(st->slots, st->cap, hash, key, key_bytes);
    if (st->slots[i].blob && st->slots[i].value_bytes == value_bytes) {
      memcpy(value, st->slots[i].blob + key_bytes, value_bytes);
      hit = 1;
    }
  }
  pthread_mutex_unlock(&st->mu);
  return hit;
}

gko_status_t gk_gemm_cache_insert(gko_handle_t h, const void *key, size_t key_bytes,
                                  const void *value, size_t value_bytes) {
  struct gk_gemm_state *st = h->gemm;
  if (!st) return GKO_STATUS_SUCCESS;
  uint64_t hash = gk_hash(key, key_bytes);
  unsigned char *blob = malloc(key_bytes + value_bytes);
  if (!blob) return gk_fail(GKO_STATUS_ALLOC_FAILED, "host allocation for the GEMM cache");
  memcpy(blob, key, key_bytes);
  memcpy(blob + key_bytes, value, value_bytes);
  pthread_mutex_lock(&st->mu);
  if (2 * (st->count + 1) > st->cap) { /* grow: load factor <= 1/2 */
    size_t ncap = st->cap ? 2 * st->cap : 64;
    gk_cache_entry *ns = calloc(ncap, sizeof *ns);
    if (!ns) {
      pthread_mutex_unlock(&st->mu);
      free(blob);
      return gk_fail(GKO_STATUS_ALLOC_FAILED, "host allocation for the GEMM cache");
    }
    for (size_t i = 0; i < st->cap; i++)
      if (st->slots[i].blob) {
        size_t j = gk_find_slot(ns, ncap, st->slots[i].hash, st->slots[i].blob,
                                st->slots[i].key_bytes);
        ns[j] = st->slots[i];
      }
    free(st->slots);
    st->slots = ns;
    st->cap = ncap;
  }
  size_t i = gk_find_slot(st->slots, st->cap, hash, key, key_bytes);
  if (st->slots[i].blob) {
    free(blob); /* another thread stored it first: keep theirs */
  } else {
    st->slots[i].hash = hash;
    st->slots[i].blob = blob;
    st->slots[i].key_bytes = key_bytes;
    st->slots[i].value_bytes = value_bytes;
    st->count++;
  }
  pthread_mutex_unlock(&st->mu);
  return GKO_STATUS_SUCCESS;
}
