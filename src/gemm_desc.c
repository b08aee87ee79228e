/* gemm_desc.c -- the GEMM descriptor: its attributes, the range each one
 * accepts, and the resolution of a descriptor into a gk_gemm_problem
 * (defaults filled in, every size and extent checked, the column-major "lt
 * view" derived), for gko_gemm_plan_create and the one-shot gko_gemm. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gemm.h"

enum { GK_NATTR = 31 };

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
    "GKO_GEMM_ATTR_INVARIANT",   "GKO_GEMM_ATTR_STATIC_OPERANDS", "GKO_GEMM_ATTR_B_DTYPE",
    "GKO_GEMM_ATTR_SCALE_A_MODE", "GKO_GEMM_ATTR_SCALE_B_MODE"};

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
  d->v[GKO_GEMM_ATTR_B_DTYPE] = -1;
}

static int gk_is_dtype(int64_t v) {
  return v == GKO_DTYPE_F32 || v == GKO_DTYPE_F16 || v == GKO_DTYPE_BF16 || gk_is_fp8(v);
}

/* The range each attribute accepts on its own: [lo, hi] (every
 * enumeration starts at 0), and for some a further rule; the detail is
 * "<attribute> = <value><what>". */
static gko_status_t gk_attr_check(int attr, int64_t v) {
  int64_t lo = 0, hi = INT64_MAX;
  int ok = 1;
  const char *what;
  switch (attr) {
    case GKO_GEMM_ATTR_AB_DTYPE:
    case GKO_GEMM_ATTR_CD_DTYPE:
      ok = gk_is_dtype(v), what = " is not a gko_dtype_t";
      break;
    case GKO_GEMM_ATTR_B_DTYPE:
      lo = -1, ok = v == -1 || gk_is_dtype(v), what = " is not a gko_dtype_t or -1";
      break;
    case GKO_GEMM_ATTR_SCALE_A_MODE:
    case GKO_GEMM_ATTR_SCALE_B_MODE:
      hi = GKO_SCALE_ROWWISE, what = " is not a gko_scale_mode_t";
      break;
    case GKO_GEMM_ATTR_M:
    case GKO_GEMM_ATTR_N:
    case GKO_GEMM_ATTR_K:
    case GKO_GEMM_ATTR_INVARIANT: /* conv's chunking: see gko.h */
      what = attr == GKO_GEMM_ATTR_INVARIANT
                 ? " is negative (0: off; R >= 1: the reference number of D's lines)"
                 : " is negative";
      break;
    case GKO_GEMM_ATTR_TRANSA:
    case GKO_GEMM_ATTR_TRANSB:
      hi = GKO_OP_T, what = " is not GKO_OP_N (0) or GKO_OP_T (1)";
      break;
    case GKO_GEMM_ATTR_LAYOUT:
      hi = GKO_LAYOUT_COL_MAJOR;
      what = " is not GKO_LAYOUT_ROW_MAJOR (0) or GKO_LAYOUT_COL_MAJOR (1)";
      break;
    case GKO_GEMM_ATTR_LDA:
    case GKO_GEMM_ATTR_LDB:
    case GKO_GEMM_ATTR_LDC:
    case GKO_GEMM_ATTR_LDD:
      lo = -1, ok = v != 0, what = ": a leading dimension is >= 1 (or -1 for the default)";
      break;
    case GKO_GEMM_ATTR_BATCH_COUNT: hi = INT32_MAX, what = " is outside [0, 2^31 - 1]"; break;
    case GKO_GEMM_ATTR_STRIDE_A:
    case GKO_GEMM_ATTR_STRIDE_B:
    case GKO_GEMM_ATTR_STRIDE_C:
    case GKO_GEMM_ATTR_STRIDE_D:
    case GKO_GEMM_ATTR_STRIDE_BIAS:
    case GKO_GEMM_ATTR_MAX_WORKSPACE:
      lo = -1;
      what = attr == GKO_GEMM_ATTR_MAX_WORKSPACE ? " is negative (-1 means no bound)"
                                                 : " is negative (-1 selects the default)";
      break;
    case GKO_GEMM_ATTR_EPILOGUE:
      hi = GKO_EPILOGUE_BIAS_GELU_TANH, what = " is not a gko_epilogue_t";
      break;
    case GKO_GEMM_ATTR_COMPUTE:
      hi = GKO_GEMM_COMPUTE_FP8_FAST_ACCUMULATE, what = " is not a gko_gemm_compute_t";
      break;
    case GKO_GEMM_ATTR_BACKEND: /* AUTO or a row of the table */
      ok = v == GKO_GEMM_BACKEND_AUTO || gk_gemm_backend_of(v) != NULL;
      what = " is not a gko_gemm_backend_t";
      break;
    case GKO_GEMM_ATTR_ALIGNMENT:
      lo = 1, hi = 256, ok = v >= 1 && (v & (v - 1)) == 0;
      what = " is not a power of two between 1 and 256 (bytes)";
      break;
    case GKO_GEMM_ATTR_FUSION:
      hi = GKO_GEMM_FUSION_NEVER, what = " is not a gko_gemm_fusion_t";
      break;
    case GKO_GEMM_ATTR_PAD: hi = GKO_GEMM_PAD_ALWAYS, what = " is not a gko_gemm_pad_t"; break;
    case GKO_GEMM_ATTR_AUTOTUNE: hi = 1, what = " is not 0 or 1"; break;
    case GKO_GEMM_ATTR_STATIC_OPERANDS:
      hi = GKO_GEMM_STATIC_AB, what = " is not a gko_gemm_static_t";
      break;
    default:
      return gk_fail(GKO_STATUS_INVALID_VALUE, "attr = %d is not a gko_gemm_attr_t", attr);
  }
  if (ok && v >= lo && v <= hi) return GKO_STATUS_SUCCESS;
  return gk_fail(GKO_STATUS_INVALID_VALUE, "%s = %lld%s", kAttrName[attr], (long long)v, what);
}

/* The checks of gko_gemm_desc_create's and gko_gemm's type arguments. */
static gko_status_t gk_check_dtypes(gko_dtype_t ab_dtype, gko_dtype_t cd_dtype) {
  if (!gk_is_dtype(ab_dtype))
    return gk_fail(GKO_STATUS_INVALID_VALUE, "ab_dtype = %d is not a gko_dtype_t",
                   (int)ab_dtype);
  if (!gk_is_dtype(cd_dtype))
    return gk_fail(GKO_STATUS_INVALID_VALUE, "cd_dtype = %d is not a gko_dtype_t",
                   (int)cd_dtype);
  return GKO_STATUS_SUCCESS;
}

GKO_API gko_status_t gko_gemm_desc_create(gko_gemm_desc_t *desc, gko_dtype_t ab_dtype,
                                          gko_dtype_t cd_dtype, int64_t m, int64_t n,
                                          int64_t k) {
  gk_clear_error();
  if (!desc) return gk_fail(GKO_STATUS_INVALID_VALUE, "desc is NULL");
  gko_status_t s;
  if ((s = gk_check_dtypes(ab_dtype, cd_dtype))) return s;
  if (cd_dtype != ab_dtype && cd_dtype != GKO_DTYPE_F32 && !gk_is_fp8(ab_dtype))
    return gk_fail(GKO_STATUS_INVALID_VALUE,
                   "cd_dtype = %d must be ab_dtype (%d) or GKO_DTYPE_F32 (any dtype with 8-bit "
                   "inputs)",
                   (int)cd_dtype, (int)ab_dtype);
  if ((s = gk_attr_check(GKO_GEMM_ATTR_M, m)) || (s = gk_attr_check(GKO_GEMM_ATTR_N, n)) ||
      (s = gk_attr_check(GKO_GEMM_ATTR_K, k)))
    return s;
  struct gko_gemm_desc_s *d = malloc(sizeof *d);
  if (!d) return gk_fail(GKO_STATUS_ALLOC_FAILED, "host allocation of the descriptor failed");
  gk_desc_defaults(d, ab_dtype, cd_dtype, m, n, k);
  if ((s = gk_live_add(d, GK_LIVE_GEMM_DESC))) {
    free(d);
    return s;
  }
  *desc = d;
  return GKO_STATUS_SUCCESS;
}

GKO_API gko_status_t gko_gemm_desc_destroy(gko_gemm_desc_t desc) {
  return gk_live_destroy(desc, GK_LIVE_GEMM_DESC, "desc", free);
}

/* set's and get's checks of their descriptor and attribute. */
static gko_status_t gk_desc_attr(gko_gemm_desc_t desc, gko_gemm_attr_t attr) {
  gko_status_t s = gk_live_check(desc, GK_LIVE_GEMM_DESC, "desc");
  if (s) return s;
  if ((int)attr < 0 || (int)attr >= GK_NATTR)
    return gk_fail(GKO_STATUS_INVALID_VALUE, "attr = %d is not a gko_gemm_attr_t", (int)attr);
  return GKO_STATUS_SUCCESS;
}

GKO_API gko_status_t gko_gemm_desc_set(gko_gemm_desc_t desc, gko_gemm_attr_t attr,
                                       int64_t value) {
  gk_clear_error();
  gko_status_t s;
  if ((s = gk_desc_attr(desc, attr)) || (s = gk_attr_check((int)attr, value))) return s;
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

static void gk_shapes(int64_t m, int64_t n, int64_t k, int transa, int transb, gk_shape *a,
                      gk_shape *b, gk_shape *cd) {
  a->r = transa ? k : m;
  a->c = transa ? m : k;
  b->r = transb ? n : k;
  b->c = transb ? k : n;
  cd->r = m;
  cd->c = n;
}

static void gk_shapes_of(const int64_t *v, gk_shape *a, gk_shape *b, gk_shape *cd) {
  gk_shapes(v[GKO_GEMM_ATTR_M], v[GKO_GEMM_ATTR_N], v[GKO_GEMM_ATTR_K],
            (int)v[GKO_GEMM_ATTR_TRANSA], (int)v[GKO_GEMM_ATTR_TRANSB], a, b, cd);
}

/* Value of an attribute with defaults resolved; overflow of a default
 * stride saturates (plan_create reports it). */
static int64_t gk_resolved(const int64_t *v, int attr) {
  gk_shape a, b, cd;
  gk_shapes_of(v, &a, &b, &cd);
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
  gko_status_t s;
  if ((s = gk_getter(desc, GK_LIVE_GEMM_DESC, "desc", value, "value")) || (s = gk_desc_attr(desc, attr))) return s;
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

/* Fills p from the attributes v and checks every combination that does not
 * need the GPU. */
static gko_status_t gk_resolve_values(const int64_t *v, gk_gemm_problem *p) {
  memset(p, 0, sizeof *p);
  p->ab_dtype = (int)v[GKO_GEMM_ATTR_AB_DTYPE];
  p->cd_dtype = (int)v[GKO_GEMM_ATTR_CD_DTYPE];
  const int fp8 = gk_is_fp8(p->ab_dtype);
  if (p->cd_dtype != p->ab_dtype && p->cd_dtype != GKO_DTYPE_F32 && !fp8)
    return gk_fail(GKO_STATUS_INVALID_VALUE,
                   "GKO_GEMM_ATTR_CD_DTYPE = %d must be AB_DTYPE (%d) or GKO_DTYPE_F32 (any "
                   "dtype with 8-bit inputs)",
                   p->cd_dtype, p->ab_dtype);
  p->b_dtype = v[GKO_GEMM_ATTR_B_DTYPE] == -1 ? p->ab_dtype : (int)v[GKO_GEMM_ATTR_B_DTYPE];
  /* 8-bit pairs may differ (E4M3 with E5M2), and a 16-bit A may take an
   * 8-bit B (weight-only FP8) */
  const int w8 = (p->ab_dtype == GKO_DTYPE_F16 || p->ab_dtype == GKO_DTYPE_BF16) &&
                 gk_is_fp8(p->b_dtype);
  if (p->b_dtype != p->ab_dtype && !(fp8 && gk_is_fp8(p->b_dtype)) && !w8)
    return gk_fail(GKO_STATUS_INVALID_VALUE,
                   "GKO_GEMM_ATTR_B_DTYPE = %s with AB_DTYPE = %s: B may differ only as an "
                   "8-bit type, with an 8-bit A (E4M3 with E5M2) or an f16/bf16 A "
                   "(weight-only FP8)",
                   gk_dtype_name(p->b_dtype), gk_dtype_name(p->ab_dtype));
  p->scale_a_mode = (int)v[GKO_GEMM_ATTR_SCALE_A_MODE];
  p->scale_b_mode = (int)v[GKO_GEMM_ATTR_SCALE_B_MODE];
  if ((!fp8 && p->scale_a_mode) || (!gk_is_fp8(p->b_dtype) && p->scale_b_mode))
    return gk_fail(GKO_STATUS_INVALID_VALUE,
                   "GKO_GEMM_ATTR_SCALE_%s_MODE = GKO_SCALE_ROWWISE needs an 8-bit %s "
                   "(it is %s)",
                   !fp8 && p->scale_a_mode ? "A" : "B", !fp8 && p->scale_a_mode ? "A" : "B",
                   gk_dtype_name(!fp8 && p->scale_a_mode ? p->ab_dtype : p->b_dtype));
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
  if (p->compute == GKO_GEMM_COMPUTE_FP8_FAST_ACCUMULATE && !fp8)
    return gk_fail(GKO_STATUS_INVALID_VALUE,
                   "GKO_GEMM_ATTR_COMPUTE = FP8_FAST_ACCUMULATE applies to 8-bit inputs only "
                   "(AB_DTYPE = %s)",
                   gk_dtype_name(p->ab_dtype));
  gk_shape a, b, cd;
  gk_shapes_of(v, &a, &b, &cd);
  size_t esa = gko_dtype_size(p->ab_dtype), esb = gko_dtype_size(p->b_dtype);
  size_t escd = gko_dtype_size(p->cd_dtype);
  gko_status_t s;
  int64_t bt = p->batch;
  if ((s = gk_check_matrix("A", "GKO_GEMM_ATTR_LDA", a, p->layout, p->lda, bt, p->stride_a,
                           esa, p, p->transa)) ||
      (s = gk_check_matrix("B", "GKO_GEMM_ATTR_LDB", b, p->layout, p->ldb, bt, p->stride_b,
                           esb, p, p->transb)) ||
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
        __builtin_add_overflow(t, p->n, &e) ||
        (uint64_t)e > (uint64_t)INT64_MAX / gko_dtype_size(gk_gemm_bias_dtype(p)))
      return gk_fail(GKO_STATUS_INVALID_VALUE,
                     "the bias (n = %lld, %lld batches %lld apart) spans more bytes than "
                     "int64 can count",
                     (long long)p->n, (long long)bt, (long long)p->stride_bias);
  }
  /* lt view: row-major swaps the operands (D_l = D^T) */
  const int sw = p->swap = p->layout == GKO_LAYOUT_ROW_MAJOR;
  p->ml = sw ? p->n : p->m;
  p->nl = sw ? p->m : p->n;
  p->opa_l = sw ? p->transb : p->transa;
  p->lda_l = sw ? p->ldb : p->lda;
  p->stride_a_l = sw ? p->stride_b : p->stride_a;
  p->opb_l = sw ? p->transa : p->transb;
  p->ldb_l = sw ? p->lda : p->ldb;
  p->stride_b_l = sw ? p->stride_a : p->stride_b;
  p->bias_on_rows = sw;
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

gko_status_t gk_gemm_resolve(gko_gemm_desc_t desc, gk_gemm_problem *p) {
  return gk_resolve_values(desc->v, p);
}

gko_status_t gk_gemm_resolve_args(gko_dtype_t ab_dtype, gko_dtype_t cd_dtype, gko_op_t transa,
                                  gko_op_t transb, int64_t m, int64_t n, int64_t k,
                                  int64_t lda, int64_t ldb, int64_t ldc, int64_t ldd,
                                  gko_epilogue_t epilogue, int64_t alignment,
                                  gk_gemm_problem *p) {
  gko_status_t s;
  if ((s = gk_check_dtypes(ab_dtype, cd_dtype))) return s;
  struct gko_gemm_desc_s desc;
  gk_desc_defaults(&desc, ab_dtype, cd_dtype, m, n, k);
  int64_t *v = desc.v;
  v[GKO_GEMM_ATTR_TRANSA] = transa, v[GKO_GEMM_ATTR_TRANSB] = transb;
  v[GKO_GEMM_ATTR_LDA] = lda, v[GKO_GEMM_ATTR_LDB] = ldb;
  v[GKO_GEMM_ATTR_LDC] = ldc, v[GKO_GEMM_ATTR_LDD] = ldd;
  v[GKO_GEMM_ATTR_EPILOGUE] = epilogue;
  /* each argument's own range, in the order of gko_gemm's arguments */
  static const int kArgs[] = {GKO_GEMM_ATTR_M,      GKO_GEMM_ATTR_N,   GKO_GEMM_ATTR_K,
                              GKO_GEMM_ATTR_TRANSA, GKO_GEMM_ATTR_TRANSB, GKO_GEMM_ATTR_LDA,
                              GKO_GEMM_ATTR_LDB,    GKO_GEMM_ATTR_LDC, GKO_GEMM_ATTR_LDD,
                              GKO_GEMM_ATTR_EPILOGUE};
  for (size_t i = 0; i < sizeof kArgs / sizeof kArgs[0]; i++)
    if ((s = gk_attr_check(kArgs[i], v[kArgs[i]]))) return s;
  v[GKO_GEMM_ATTR_ALIGNMENT] = alignment; /* the pointers' */
  return gk_resolve_values(v, p);
}

/* Elements of a matrix's batches, at least 1 (autotune's scratch buffers). */
static int64_t gk_span(gk_shape s, int layout, int64_t ld, int64_t batch, int64_t stride) {
  int64_t e = gk_extent(s, layout, ld, batch, stride);
  return e > 0 ? e : 1;
}

void gk_gemm_spans(const gk_gemm_problem *p, int64_t *a, int64_t *b, int64_t *d) {
  gk_shape sa, sb, scd;
  gk_shapes(p->m, p->n, p->k, p->transa, p->transb, &sa, &sb, &scd);
  *a = gk_span(sa, p->layout, p->lda, p->batch, p->stride_a);
  *b = gk_span(sb, p->layout, p->ldb, p->batch, p->stride_b);
  *d = gk_span(scd, p->layout, p->ldd, p->batch, p->stride_d);
}
