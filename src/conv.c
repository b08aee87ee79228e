/* conv.c -- Conv2d forward: descriptors, checks, the im2col + GEMM lowering
 * and its plans, execute.
 *
 * Flow: gko_conv_plan_create resolves the descriptor (every size and byte
 * count checked for int64 overflow), picks the path -- DIRECT for a 1x1
 * filter with stride 1 and no padding (x is the GEMM's operand), IM2COL
 * otherwise -- and, for IM2COL, the chunk (images per im2col pass) from the
 * workspace bound, then creates the GEMM plans through the public GEMM API
 * (at most two: a full chunk and the last, partial chunk), so the
 * convolution inherits cuBLASLt's dispatch, the fused epilogues and gko's
 * epilogue pass.  gko_conv_execute checks the pointers and the workspace,
 * then per chunk enqueues im2col (kernels/im2col.cu) and the GEMM calls.
 *
 * GEMMs, per layout (Cg = C/G, Kg = K/G, L = Cg*R*S, kp = L rounded up to 16
 * bytes, OHW = OH*OW):
 *   NHWC  row-major D[cnt*OHW x Kg] (ldd K) = col_g[cnt*OHW x kp] . W_g^T,
 *         W_g the Kg x kp rows of the (copied) filter: one call per group;
 *         the bias runs along D's rows: cuBLASLt fuses it.
 *   NCHW  column-major D[OHW x Kg] (ldd OHW) = col_n,g[OHW x kp] . W_g[kp x
 *         Kg] -- the same memory as y_n[Kg][OHW] = W_g . col -- batched over
 *         the chunk's images with one call per group, or over the groups
 *         with one call per image, whichever makes fewer calls.  The bias
 *         runs along D's columns, which cuBLASLt's bias epilogue cannot do:
 *         the GEMM applies it (and the activation) in gko's pass.
 *   DIRECT the same with x in place of col (k = Cg, lda C (NHWC) or H*W).
 * The filter is copied into the workspace with k padded to kp when L is
 * not a multiple of 16 bytes, and NCHW column rows are padded to 16 bytes,
 * so cuBLASLt sees aligned operands and never pads the column matrix
 * itself. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gemm.h"
#include "../kernels/im2col.h"

enum { GK_CONV_NATTR = 23, GK_CONV_WHY = 2048 };

struct gko_conv_desc_s {
  int64_t v[GK_CONV_NATTR];
};

static const char *const kAttrName[GK_CONV_NATTR] = {
    "GKO_CONV_ATTR_DTYPE",      "GKO_CONV_ATTR_LAYOUT",        "GKO_CONV_ATTR_N",
    "GKO_CONV_ATTR_C",          "GKO_CONV_ATTR_H",             "GKO_CONV_ATTR_W",
    "GKO_CONV_ATTR_K",          "GKO_CONV_ATTR_R",             "GKO_CONV_ATTR_S",
    "GKO_CONV_ATTR_STRIDE_H",   "GKO_CONV_ATTR_STRIDE_W",      "GKO_CONV_ATTR_PAD_H",
    "GKO_CONV_ATTR_PAD_W",      "GKO_CONV_ATTR_DILATION_H",    "GKO_CONV_ATTR_DILATION_W",
    "GKO_CONV_ATTR_GROUPS",     "GKO_CONV_ATTR_EPILOGUE",      "GKO_CONV_ATTR_COMPUTE",
    "GKO_CONV_ATTR_MAX_WORKSPACE", "GKO_CONV_ATTR_MAX_CHUNK",  "GKO_CONV_ATTR_ALIGNMENT",
    "GKO_CONV_ATTR_PAD_H_END",  "GKO_CONV_ATTR_PAD_W_END"};

/* The resolved problem. */
typedef struct gk_conv_problem {
  int dtype, layout, epilogue, compute;
  int64_t es;
  int64_t n, c, h, w, k, r, s;
  int64_t sh, sw, ph, pw, ph_end, pw_end, dh, dw, groups;
  int64_t max_ws, max_chunk, alignment;
  int64_t oh, ow, cg, kg;
} gk_conv_problem;

struct gko_conv_plan_s {
  gko_handle_t handle;
  gk_conv_problem p;
  int path;                 /* gko_conv_path_t */
  int by_group;             /* NCHW: GEMM batched over groups, one call per image */
  int via_nhwc;             /* NCHW im2col lowered through NHWC (see gko_conv_plan_create) */
  int64_t chunk, nchunks, last;
  int64_t l, kp, ohw_ld;
  int wpad;                 /* filter copied to [K][kp] in the workspace */
  size_t wpad_bytes, col_img_bytes, col_bytes;
  size_t xt_img_bytes, d_img_bytes; /* via_nhwc: one image of x and of D, transposed */
  size_t off_col, off_xt, off_d, off_gemm, gemm_ws, ws_bytes, ws_full, ws_min;
  int64_t gemm_calls;
  gko_gemm_plan_t gemm[2];  /* full chunk, last partial chunk (or NULL) */
  int block_nhwc[4];        /* im2col threads per block, 2/4/8/16-byte vectors */
  int block_nchw;
  char why[GK_CONV_WHY];
};

/* ---- descriptor ------------------------------------------------------------------ */

static void gk_conv_defaults(struct gko_conv_desc_s *d) {
  for (int i = 0; i < GK_CONV_NATTR; i++) d->v[i] = 0;
  d->v[GKO_CONV_ATTR_STRIDE_H] = d->v[GKO_CONV_ATTR_STRIDE_W] = 1;
  d->v[GKO_CONV_ATTR_DILATION_H] = d->v[GKO_CONV_ATTR_DILATION_W] = 1;
  d->v[GKO_CONV_ATTR_GROUPS] = 1;
  d->v[GKO_CONV_ATTR_MAX_WORKSPACE] = -1;
  d->v[GKO_CONV_ATTR_ALIGNMENT] = 16;
  d->v[GKO_CONV_ATTR_PAD_H_END] = d->v[GKO_CONV_ATTR_PAD_W_END] = -1;
}

static gko_status_t gk_conv_attr_check(int attr, int64_t v) {
  const char *name = kAttrName[attr];
  switch (attr) {
    case GKO_CONV_ATTR_DTYPE:
      if (v != GKO_DTYPE_F32 && v != GKO_DTYPE_F16 && v != GKO_DTYPE_BF16)
        return gk_fail(GKO_STATUS_INVALID_VALUE, "%s = %lld is not a gko_dtype_t", name,
                       (long long)v);
      return GKO_STATUS_SUCCESS;
    case GKO_CONV_ATTR_LAYOUT:
      if (v != GKO_CONV_LAYOUT_NCHW && v != GKO_CONV_LAYOUT_NHWC)
        return gk_fail(GKO_STATUS_INVALID_VALUE,
                       "%s = %lld is not GKO_CONV_LAYOUT_NCHW (0) or GKO_CONV_LAYOUT_NHWC (1)",
                       name, (long long)v);
      return GKO_STATUS_SUCCESS;
    case GKO_CONV_ATTR_N:
    case GKO_CONV_ATTR_H:
    case GKO_CONV_ATTR_W:
    case GKO_CONV_ATTR_PAD_H:
    case GKO_CONV_ATTR_PAD_W:
    case GKO_CONV_ATTR_MAX_CHUNK:
      if (v < 0)
        return gk_fail(GKO_STATUS_INVALID_VALUE, "%s = %lld is negative", name, (long long)v);
      return GKO_STATUS_SUCCESS;
    case GKO_CONV_ATTR_C:
    case GKO_CONV_ATTR_K:
    case GKO_CONV_ATTR_R:
    case GKO_CONV_ATTR_S:
    case GKO_CONV_ATTR_STRIDE_H:
    case GKO_CONV_ATTR_STRIDE_W:
    case GKO_CONV_ATTR_DILATION_H:
    case GKO_CONV_ATTR_DILATION_W:
    case GKO_CONV_ATTR_GROUPS:
      if (v < 1)
        return gk_fail(GKO_STATUS_INVALID_VALUE, "%s = %lld must be at least 1", name,
                       (long long)v);
      return GKO_STATUS_SUCCESS;
    case GKO_CONV_ATTR_EPILOGUE:
      if (v < GKO_EPILOGUE_NONE || v > GKO_EPILOGUE_BIAS_GELU_TANH)
        return gk_fail(GKO_STATUS_INVALID_VALUE, "%s = %lld is not a gko_epilogue_t", name,
                       (long long)v);
      return GKO_STATUS_SUCCESS;
    case GKO_CONV_ATTR_COMPUTE:
      if (v < GKO_GEMM_COMPUTE_DEFAULT || v > GKO_GEMM_COMPUTE_F16_ACCUMULATE)
        return gk_fail(GKO_STATUS_INVALID_VALUE, "%s = %lld is not a gko_gemm_compute_t", name,
                       (long long)v);
      return GKO_STATUS_SUCCESS;
    case GKO_CONV_ATTR_MAX_WORKSPACE:
    case GKO_CONV_ATTR_PAD_H_END:
    case GKO_CONV_ATTR_PAD_W_END:
      if (v < -1)
        return gk_fail(GKO_STATUS_INVALID_VALUE, "%s = %lld is below -1 (-1 selects the default)",
                       name, (long long)v);
      return GKO_STATUS_SUCCESS;
    case GKO_CONV_ATTR_ALIGNMENT:
      if (v < 1 || v > 256 || (v & (v - 1)) != 0)
        return gk_fail(GKO_STATUS_INVALID_VALUE,
                       "%s = %lld is not a power of two between 1 and 256 (bytes)", name,
                       (long long)v);
      return GKO_STATUS_SUCCESS;
  }
  return gk_fail(GKO_STATUS_INVALID_VALUE, "attr = %d is not a gko_conv_attr_t", attr);
}

GKO_API gko_status_t gko_conv_desc_create(gko_conv_desc_t *desc, gko_dtype_t dtype,
                                          gko_conv_layout_t layout, int64_t n, int64_t c,
                                          int64_t h, int64_t w, int64_t k, int64_t r,
                                          int64_t s) {
  gk_clear_error();
  if (!desc) return gk_fail(GKO_STATUS_INVALID_VALUE, "desc is NULL");
  struct gko_conv_desc_s tmp;
  gk_conv_defaults(&tmp);
  const struct {
    int attr;
    int64_t v;
  } set[] = {{GKO_CONV_ATTR_DTYPE, dtype}, {GKO_CONV_ATTR_LAYOUT, layout},
             {GKO_CONV_ATTR_N, n},         {GKO_CONV_ATTR_C, c},
             {GKO_CONV_ATTR_H, h},         {GKO_CONV_ATTR_W, w},
             {GKO_CONV_ATTR_K, k},         {GKO_CONV_ATTR_R, r},
             {GKO_CONV_ATTR_S, s}};
  for (size_t i = 0; i < sizeof set / sizeof set[0]; i++) {
    gko_status_t st = gk_conv_attr_check(set[i].attr, set[i].v);
    if (st) return st;
    tmp.v[set[i].attr] = set[i].v;
  }
  struct gko_conv_desc_s *d = malloc(sizeof *d);
  if (!d) return gk_fail(GKO_STATUS_ALLOC_FAILED, "host allocation of the descriptor failed");
  *d = tmp;
  *desc = d;
  return GKO_STATUS_SUCCESS;
}

GKO_API gko_status_t gko_conv_desc_destroy(gko_conv_desc_t desc) {
  gk_clear_error();
  free(desc);
  return GKO_STATUS_SUCCESS;
}

GKO_API gko_status_t gko_conv_desc_set(gko_conv_desc_t desc, gko_conv_attr_t attr,
                                       int64_t value) {
  gk_clear_error();
  if (!desc) return gk_fail(GKO_STATUS_INVALID_VALUE, "desc is NULL");
  if ((int)attr < 0 || (int)attr >= GK_CONV_NATTR)
    return gk_fail(GKO_STATUS_INVALID_VALUE, "attr = %d is not a gko_conv_attr_t", (int)attr);
  gko_status_t s = gk_conv_attr_check((int)attr, value);
  if (s) return s;
  desc->v[attr] = value;
  return GKO_STATUS_SUCCESS;
}

static int64_t gk_conv_resolved(const int64_t *v, int attr) {
  if (attr == GKO_CONV_ATTR_PAD_H_END && v[attr] == -1) return v[GKO_CONV_ATTR_PAD_H];
  if (attr == GKO_CONV_ATTR_PAD_W_END && v[attr] == -1) return v[GKO_CONV_ATTR_PAD_W];
  return v[attr];
}

GKO_API gko_status_t gko_conv_desc_get(gko_conv_desc_t desc, gko_conv_attr_t attr,
                                       int64_t *value) {
  gk_clear_error();
  if (!desc) return gk_fail(GKO_STATUS_INVALID_VALUE, "desc is NULL");
  if (!value) return gk_fail(GKO_STATUS_INVALID_VALUE, "value is NULL");
  if ((int)attr < 0 || (int)attr >= GK_CONV_NATTR)
    return gk_fail(GKO_STATUS_INVALID_VALUE, "attr = %d is not a gko_conv_attr_t", (int)attr);
  *value = gk_conv_resolved(desc->v, (int)attr);
  return GKO_STATUS_SUCCESS;
}

/* ---- resolution: shapes and overflow ------------------------------------------- */

/* a * b into *out; 1 on overflow (or a negative result). */
static int gk_mul(int64_t a, int64_t b, int64_t *out) {
  return __builtin_mul_overflow(a, b, out) || *out < 0;
}

static int gk_mul4(int64_t a, int64_t b, int64_t c, int64_t d, int64_t *out) {
  int64_t t, u;
  return gk_mul(a, b, &t) || gk_mul(t, c, &u) || gk_mul(u, d, out);
}

/* One axis: the output size, or a failure naming the axis. */
static gko_status_t gk_conv_axis(const char *axis, int64_t n, int64_t in, int64_t pad,
                                 int64_t pad_end, int64_t dil, int64_t f, int64_t stride,
                                 int64_t *out) {
  int64_t padded, eff;
  if (__builtin_add_overflow(in, pad, &padded) || __builtin_add_overflow(padded, pad_end, &padded))
    return gk_fail(GKO_STATUS_INVALID_VALUE,
                   "the padded input %s (%lld + %lld + %lld) overflows int64", axis,
                   (long long)in, (long long)pad, (long long)pad_end);
  if (gk_mul(dil, f - 1, &eff) || __builtin_add_overflow(eff, 1, &eff))
    return gk_fail(GKO_STATUS_INVALID_VALUE,
                   "the dilated filter %s (dilation %lld x (%lld - 1) + 1) overflows int64", axis,
                   (long long)dil, (long long)f);
  if (padded < eff) {
    if (n > 0)
      return gk_fail(GKO_STATUS_INVALID_VALUE,
                     "padded input smaller than the dilated filter: %s %lld + padding %lld + "
                     "%lld = %lld < dilation %lld x (filter %lld - 1) + 1 = %lld",
                     axis, (long long)in, (long long)pad, (long long)pad_end, (long long)padded,
                     (long long)dil, (long long)f, (long long)eff);
    *out = 0;
    return GKO_STATUS_SUCCESS;
  }
  *out = (padded - eff) / stride + 1;
  return GKO_STATUS_SUCCESS;
}

static gko_status_t gk_conv_resolve(const int64_t *v, gk_conv_problem *p) {
  memset(p, 0, sizeof *p);
  p->dtype = (int)v[GKO_CONV_ATTR_DTYPE];
  p->layout = (int)v[GKO_CONV_ATTR_LAYOUT];
  p->epilogue = (int)v[GKO_CONV_ATTR_EPILOGUE];
  p->compute = (int)v[GKO_CONV_ATTR_COMPUTE];
  p->es = (int64_t)gko_dtype_size((gko_dtype_t)p->dtype);
  p->n = v[GKO_CONV_ATTR_N];
  p->c = v[GKO_CONV_ATTR_C];
  p->h = v[GKO_CONV_ATTR_H];
  p->w = v[GKO_CONV_ATTR_W];
  p->k = v[GKO_CONV_ATTR_K];
  p->r = v[GKO_CONV_ATTR_R];
  p->s = v[GKO_CONV_ATTR_S];
  p->sh = v[GKO_CONV_ATTR_STRIDE_H];
  p->sw = v[GKO_CONV_ATTR_STRIDE_W];
  p->ph = v[GKO_CONV_ATTR_PAD_H];
  p->pw = v[GKO_CONV_ATTR_PAD_W];
  p->ph_end = gk_conv_resolved(v, GKO_CONV_ATTR_PAD_H_END);
  p->pw_end = gk_conv_resolved(v, GKO_CONV_ATTR_PAD_W_END);
  p->dh = v[GKO_CONV_ATTR_DILATION_H];
  p->dw = v[GKO_CONV_ATTR_DILATION_W];
  p->groups = v[GKO_CONV_ATTR_GROUPS];
  p->max_ws = v[GKO_CONV_ATTR_MAX_WORKSPACE];
  p->max_chunk = v[GKO_CONV_ATTR_MAX_CHUNK];
  p->alignment = v[GKO_CONV_ATTR_ALIGNMENT];
  if (p->c % p->groups != 0)
    return gk_fail(GKO_STATUS_INVALID_VALUE,
                   "GKO_CONV_ATTR_C = %lld is not a multiple of GKO_CONV_ATTR_GROUPS = %lld",
                   (long long)p->c, (long long)p->groups);
  if (p->k % p->groups != 0)
    return gk_fail(GKO_STATUS_INVALID_VALUE,
                   "GKO_CONV_ATTR_K = %lld is not a multiple of GKO_CONV_ATTR_GROUPS = %lld",
                   (long long)p->k, (long long)p->groups);
  p->cg = p->c / p->groups;
  p->kg = p->k / p->groups;
  if (p->compute == GKO_GEMM_COMPUTE_TF32 && p->dtype != GKO_DTYPE_F32)
    return gk_fail(GKO_STATUS_INVALID_VALUE,
                   "GKO_CONV_ATTR_COMPUTE = TF32 applies to f32 inputs only (DTYPE = %d)",
                   p->dtype);
  gko_status_t s;
  if ((s = gk_conv_axis("height", p->n, p->h, p->ph, p->ph_end, p->dh, p->r, p->sh, &p->oh)) ||
      (s = gk_conv_axis("width", p->n, p->w, p->pw, p->pw_end, p->dw, p->s, p->sw, &p->ow)))
    return s;
  int64_t e, t;
  /* with N = 0 one image's sizes still have to be countable: the plan
   * works with OH*OW and C*H*W whatever N */
  const int64_t n1 = p->n > 0 ? p->n : 1;
  if (gk_mul4(n1, p->c, p->h, p->w, &e) || gk_mul(e, p->es, &t))
    return gk_fail(GKO_STATUS_INVALID_VALUE,
                   "x (N %lld x C %lld x H %lld x W %lld) has more bytes than int64 can count",
                   (long long)p->n, (long long)p->c, (long long)p->h, (long long)p->w);
  if (gk_mul4(p->k, p->cg, p->r, p->s, &e) || gk_mul(e, p->es, &t))
    return gk_fail(GKO_STATUS_INVALID_VALUE,
                   "w (K %lld x C/groups %lld x R %lld x S %lld) has more bytes than int64 can "
                   "count",
                   (long long)p->k, (long long)p->cg, (long long)p->r, (long long)p->s);
  if (gk_mul4(n1, p->k, p->oh, p->ow, &e) || gk_mul(e, p->es, &t))
    return gk_fail(GKO_STATUS_INVALID_VALUE,
                   "y (N %lld x K %lld x OH %lld x OW %lld) has more bytes than int64 can "
                   "count (absurd padding or stride?)",
                   (long long)p->n, (long long)p->k, (long long)p->oh, (long long)p->ow);
  return GKO_STATUS_SUCCESS;
}

GKO_API gko_status_t gko_conv_output_shape(gko_conv_desc_t desc, int64_t *oh, int64_t *ow) {
  gk_clear_error();
  if (!desc) return gk_fail(GKO_STATUS_INVALID_VALUE, "desc is NULL");
  if (!oh) return gk_fail(GKO_STATUS_INVALID_VALUE, "oh is NULL");
  if (!ow) return gk_fail(GKO_STATUS_INVALID_VALUE, "ow is NULL");
  gk_conv_problem p;
  gko_status_t s = gk_conv_resolve(desc->v, &p);
  if (s) return s;
  *oh = p.oh;
  *ow = p.ow;
  return GKO_STATUS_SUCCESS;
}

/* ---- plans ----------------------------------------------------------------------- */

/* The cuBLASLt scratch budget of the im2col path's GEMMs (their
 * GKO_GEMM_ATTR_MAX_WORKSPACE, which includes the GEMM's own 255 bytes of
 * alignment slack), and what the workspace reserves for them: the budget
 * and 256 bytes to spare. */
enum { GK_CONV_GEMM_SCRATCH = 64 * 1024, GK_CONV_GEMM_RESERVE = GK_CONV_GEMM_SCRATCH + 256 };

/* The im2col workspace for passes of nb images: 255 bytes of slack, the
 * fixed part (the filter copy, rounded, and the GEMMs' reserve) and one
 * pass's column matrix, x and D transposed, each rounded up to 256 bytes.
 * 0 when that passes INT64_MAX bytes (absurd sizes: each part alone
 * fits). */
static size_t gk_conv_ws_for(const struct gko_conv_plan_s *cp, size_t fixed, int64_t nb) {
  const size_t part[3] = {cp->col_img_bytes, cp->xt_img_bytes, cp->d_img_bytes};
  uint64_t total = 255 + (uint64_t)fixed, t;
  for (int i = 0; i < 3; i++) {
    if (__builtin_mul_overflow((uint64_t)nb, (uint64_t)part[i], &t) ||
        t > (uint64_t)INT64_MAX - 255)
      return 0;
    t = (t + 255) & ~(uint64_t)255;
    if (__builtin_add_overflow(total, t, &total) || total > (uint64_t)INT64_MAX) return 0;
  }
  return (size_t)total;
}

/* Largest power of two dividing v (bytes), at most 256; 256 for 0. */
static int64_t gk_align_of(int64_t v) {
  if (v <= 0) return 256;
  int64_t b = v & -v;
  return b > 256 ? 256 : b;
}

/* Re-sets the detail of a failed GEMM call with the conv's context.  Call
 * it right after the failing gko_gemm_* call: every public gko_* entry
 * point (gko_gemm_desc_destroy, gko_gemm_plan_destroy, ...) resets the
 * thread's detail. */
static gko_status_t gk_conv_gemm_fail(gko_status_t s, const char *what) {
  char inner[400];
  snprintf(inner, sizeof inner, "%s", gko_last_error_detail());
  return gk_fail(s, "conv GEMM %s: %s", what, inner);
}

/* One GEMM of the lowering. */
typedef struct gk_conv_gemm {
  int layout, transb;
  int64_t m, n, k, lda, ldb, ldd, batch, sa, sb, sd, sbias;
} gk_conv_gemm;

/* invariant: GKO_GEMM_ATTR_INVARIANT (0, or the reference number of D's
 * lines: the im2col plans' GEMMs pick one algorithm for every chunk size) */
static gko_status_t gk_conv_gemm_plan(gko_conv_plan_t cp, const gk_conv_gemm *g,
                                      int64_t alignment, int64_t budget, int64_t invariant,
                                      gko_gemm_plan_t *out, const char *what) {
  const gk_conv_problem *p = &cp->p;
  gko_gemm_desc_t d = NULL;
  gko_status_t s = gko_gemm_desc_create(&d, (gko_dtype_t)p->dtype, (gko_dtype_t)p->dtype, g->m,
                                        g->n, g->k);
  if (s) return gk_conv_gemm_fail(s, what);
  /* C is never read (beta = 0); describing it as D keeps the plan's
   * configuration the one execute uses (no re-query at execute) */
  const struct {
    gko_gemm_attr_t a;
    int64_t v;
  } set[] = {{GKO_GEMM_ATTR_LAYOUT, g->layout},
             {GKO_GEMM_ATTR_TRANSB, g->transb},
             {GKO_GEMM_ATTR_LDA, g->lda},
             {GKO_GEMM_ATTR_LDB, g->ldb},
             {GKO_GEMM_ATTR_LDC, g->ldd},
             {GKO_GEMM_ATTR_LDD, g->ldd},
             {GKO_GEMM_ATTR_BATCH_COUNT, g->batch},
             {GKO_GEMM_ATTR_STRIDE_A, g->batch > 1 ? g->sa : -1},
             {GKO_GEMM_ATTR_STRIDE_B, g->batch > 1 ? g->sb : -1},
             {GKO_GEMM_ATTR_STRIDE_C, g->batch > 1 ? g->sd : -1},
             {GKO_GEMM_ATTR_STRIDE_D, g->batch > 1 ? g->sd : -1},
             {GKO_GEMM_ATTR_STRIDE_BIAS, g->batch > 1 ? g->sbias : 0},
             {GKO_GEMM_ATTR_EPILOGUE, p->epilogue},
             {GKO_GEMM_ATTR_COMPUTE, p->compute},
             {GKO_GEMM_ATTR_ALIGNMENT, alignment},
             {GKO_GEMM_ATTR_MAX_WORKSPACE, budget},
             {GKO_GEMM_ATTR_INVARIANT, invariant}};
  for (size_t i = 0; i < sizeof set / sizeof set[0] && !s; i++)
    s = gko_gemm_desc_set(d, set[i].a, set[i].v);
  if (!s) s = gko_gemm_plan_create(cp->handle, d, out);
  if (s) {
    s = gk_conv_gemm_fail(s, what); /* before the destroy below resets the detail */
    char keep[512];
    snprintf(keep, sizeof keep, "%s", gko_last_error_detail());
    gko_gemm_desc_destroy(d);
    return gk_fail(s, "%s", keep);
  }
  gko_gemm_desc_destroy(d);
  return GKO_STATUS_SUCCESS;
}

/* The GEMM of a chunk of cnt images, and the alignment its pointers keep
 * (the caller's promise lowered by every offset execute adds). */
static gk_conv_gemm gk_conv_gemm_shape(const gko_conv_plan_t cp, int64_t cnt, int64_t *align) {
  const gk_conv_problem *p = &cp->p;
  const int64_t es = p->es, G = p->groups, ohw = p->oh * p->ow, hw = p->h * p->w;
  const int direct = cp->path == GKO_CONV_PATH_DIRECT;
  const int lay = cp->via_nhwc ? GKO_CONV_LAYOUT_NHWC : p->layout;
  const int64_t k = direct ? p->cg : cp->kp;
  gk_conv_gemm g;
  memset(&g, 0, sizeof g);
  g.n = p->kg;
  g.k = k;
  g.batch = 1;
  int64_t a = p->alignment < 256 ? p->alignment : 256;
#define GK_LOWER(bytes) \
  do {                  \
    int64_t b_ = gk_align_of(bytes); \
    if (b_ < a) a = b_; \
  } while (0)
  if (lay == GKO_CONV_LAYOUT_NHWC) {
    g.layout = GKO_LAYOUT_ROW_MAJOR;
    g.transb = GKO_OP_T;
    g.m = cnt * ohw;
    g.lda = direct ? p->c : cp->kp;
    g.ldb = k;
    g.ldd = p->k;
    if (G > 1) {
      GK_LOWER(p->kg * es); /* y, bias */
      GK_LOWER(p->kg * k * es); /* w */
      if (direct) GK_LOWER(p->cg * es); /* x */
      else GK_LOWER(ohw * cp->kp * es); /* col of group g: g * cnt * OHW * kp in */
    }
    /* y of chunk ci starts ci * chunk images in; lowered by one image's y
     * whatever the chunk, so that every im2col plan of a problem promises
     * the GEMM the same alignment (one algorithm for every chunk size) */
    if (!direct && !cp->via_nhwc) GK_LOWER(ohw * p->k * es);
  } else {
    g.layout = GKO_LAYOUT_COL_MAJOR;
    g.transb = GKO_OP_N;
    g.m = ohw;
    g.lda = direct ? hw : cp->ohw_ld;
    g.ldb = k;
    g.ldd = ohw;
    const int64_t a_img = direct ? p->c * hw : G * cp->kp * cp->ohw_ld;
    const int64_t a_grp = direct ? p->cg * hw : cp->kp * cp->ohw_ld;
    if (!direct) {
      /* every offset either form (over images or over groups) adds, for
       * any chunk: the same promise whatever the chunk size */
      GK_LOWER(a_img * es);
      GK_LOWER(p->k * ohw * es);
      if (G > 1) {
        GK_LOWER(a_grp * es);
        GK_LOWER(p->kg * k * es);
        GK_LOWER(p->kg * ohw * es);
        GK_LOWER(p->kg * es);
      }
    }
    if (cp->by_group) {
      g.batch = G;
      g.sa = a_grp;
      g.sb = p->kg * k;
      g.sd = p->kg * ohw;
      g.sbias = p->kg;
      if (cnt > 1 || cp->nchunks > 1) {
        GK_LOWER(a_img * es);
        GK_LOWER(p->k * ohw * es);
      }
    } else {
      g.batch = cnt;
      g.sa = a_img;
      g.sb = 0;
      g.sd = p->k * ohw;
      g.sbias = 0;
      if (G > 1) {
        GK_LOWER(a_grp * es);
        GK_LOWER(p->kg * k * es);
        GK_LOWER(p->kg * ohw * es);
        GK_LOWER(p->kg * es);
      }
      if (cp->nchunks > 1) GK_LOWER(cp->chunk * p->k * ohw * es);
    }
    if (cp->nchunks > 1 && direct) GK_LOWER(cp->chunk * p->c * hw * es);
  }
#undef GK_LOWER
  *align = a;
  return g;
}

/* Frees a plan, also a half-built one on a failure path, keeping the
 * thread's detail: gko_gemm_plan_destroy is a public entry point and
 * resets it (the first GPU run found plan_create failures with an empty
 * detail for that reason). */
static void gk_conv_plan_free(gko_conv_plan_t plan) {
  if (!plan) return;
  char keep[512];
  snprintf(keep, sizeof keep, "%s", gko_last_error_detail());
  gko_gemm_plan_destroy(plan->gemm[0]);
  gko_gemm_plan_destroy(plan->gemm[1]);
  free(plan);
  if (keep[0]) gk_fail(GKO_STATUS_SUCCESS, "%s", keep);
}

#define gk_why(plan, ...) gk_strappendf((plan)->why, sizeof (plan)->why, __VA_ARGS__)

static const char *gk_dtype_name(int d) {
  return d == GKO_DTYPE_F32 ? "f32" : d == GKO_DTYPE_F16 ? "f16" : "bf16";
}

/* The GEMM plans for a chunk of `chunk` images and the last chunk.
 * invariant: see gk_conv_gemm_plan. */
static gko_status_t gk_conv_make_gemms(gko_conv_plan_t cp, int64_t budget, int64_t invariant) {
  int64_t al0, al1;
  gk_conv_gemm g0 = gk_conv_gemm_shape(cp, cp->chunk, &al0);
  gko_status_t s = gk_conv_gemm_plan(cp, &g0, al0, budget, invariant, &cp->gemm[0], "plan");
  if (s) return s;
  size_t w0 = 0, w1 = 0;
  gko_gemm_workspace_size(cp->gemm[0], &w0);
  if (cp->last != cp->chunk) {
    gk_conv_gemm g1 = gk_conv_gemm_shape(cp, cp->last, &al1);
    if (memcmp(&g0, &g1, sizeof g0) != 0 || al0 != al1) {
      s = gk_conv_gemm_plan(cp, &g1, al1, budget, invariant, &cp->gemm[1],
                            "plan (last chunk)");
      if (s) return s;
      gko_gemm_workspace_size(cp->gemm[1], &w1);
    }
  }
  cp->gemm_ws = w0 > w1 ? w0 : w1;
  return GKO_STATUS_SUCCESS;
}

static void gk_conv_describe_gemm(gko_conv_plan_t cp) {
  int64_t al;
  gk_conv_gemm g = gk_conv_gemm_shape(cp, cp->chunk, &al);
  const int64_t per_chunk = cp->gemm_calls / (cp->nchunks > 0 ? cp->nchunks : 1);
  gk_why(cp, "GEMM %s m=%lld n=%lld k=%lld lda=%lld ldb=%lld ldd=%lld batch=%lld%s, %lld call%s "
         "per chunk (%lld per execute), alignment %lld; ",
         g.layout == GKO_LAYOUT_ROW_MAJOR ? "row-major D = A.B^T" : "column-major D = A.B",
         (long long)g.m, (long long)g.n, (long long)g.k, (long long)g.lda, (long long)g.ldb,
         (long long)g.ldd, (long long)g.batch,
         cp->p.layout == GKO_CONV_LAYOUT_NCHW && !cp->via_nhwc
             ? (cp->by_group ? " (over groups)" : " (over images)")
             : "",
         (long long)per_chunk, per_chunk == 1 ? "" : "s", (long long)cp->gemm_calls,
         (long long)al);
}

GKO_API gko_status_t gko_conv_plan_create(gko_handle_t handle, gko_conv_desc_t desc,
                                          gko_conv_plan_t *plan) {
  gk_clear_error();
  if (!handle) return gk_fail(GKO_STATUS_INVALID_VALUE, "handle is NULL");
  if (!desc) return gk_fail(GKO_STATUS_INVALID_VALUE, "desc is NULL");
  if (!plan) return gk_fail(GKO_STATUS_INVALID_VALUE, "plan is NULL");
  gk_conv_problem p;
  gko_status_t s = gk_conv_resolve(desc->v, &p);
  if (s) return s;
  if ((s = gk_check_call(handle, NULL, 0, NULL, NULL))) return s;
  struct gko_conv_plan_s *cp = calloc(1, sizeof *cp);
  if (!cp) return gk_fail(GKO_STATUS_ALLOC_FAILED, "host allocation of the plan failed");
  cp->handle = handle;
  cp->p = p;
  const int64_t es = p.es, G = p.groups, ohw = p.oh * p.ow;
  const char *lay_name = p.layout == GKO_CONV_LAYOUT_NHWC ? "NHWC" : "NCHW";

  if (p.n == 0) {
    cp->path = GKO_CONV_PATH_NONE;
    snprintf(cp->why, sizeof cp->why, "N = 0: execute reads and writes nothing; output %lld x %lld",
             (long long)p.oh, (long long)p.ow);
    *plan = cp;
    return GKO_STATUS_SUCCESS;
  }

  const int direct = p.r == 1 && p.s == 1 && p.sh == 1 && p.sw == 1 && p.ph == 0 &&
                     p.pw == 0 && p.ph_end == 0 && p.pw_end == 0;
  if (direct) {
    cp->path = GKO_CONV_PATH_DIRECT;
    cp->chunk = cp->last = p.n;
    cp->nchunks = 1;
    cp->by_group = p.layout == GKO_CONV_LAYOUT_NCHW && G > p.n;
    cp->gemm_calls = p.layout == GKO_CONV_LAYOUT_NHWC ? G : (cp->by_group ? p.n : G);
    if ((s = gk_conv_make_gemms(cp, p.max_ws, 0))) goto fail; /* one chunk: no invariance needed */
    cp->ws_bytes = cp->gemm_ws;
    cp->ws_full = cp->ws_bytes;
    cp->ws_min = 0;
    snprintf(cp->why, sizeof cp->why,
             "direct %s 1x1 (stride 1, no padding): no im2col, x is the GEMM's operand; ",
             lay_name);
    gk_conv_describe_gemm(cp);
  } else {
    cp->path = GKO_CONV_PATH_IM2COL;
    const int64_t gel = 16 / es; /* elements per 16 bytes */
    cp->l = p.cg * p.r * p.s;    /* fits: w's size was checked */
    if (cp->l >= ((int64_t)1 << 25)) {
      s = gk_fail(GKO_STATUS_NOT_SUPPORTED,
                  "a column-matrix row of C/groups x R x S = %lld elements (2^25 or more) is "
                  "beyond the im2col kernels' limit",
                  (long long)cp->l);
      goto fail;
    }
    /* NCHW lowered through NHWC (x transposed per chunk, the filter
     * reordered to KRSC, the NHWC column matrix and GEMM, y transposed
     * back): the GEMM is one product over the chunk's N*OH*OW pixels
     * instead of one per image of OH*OW, which leaves most of the GPU idle
     * on small late layers.  Worth the two transposes when C >= 8 (x's
     * transpose runs tiles of 32 or 64 rows over C rows: the 3-channel
     * stem wasted most of them, measured with 32) and the column matrix is
     * at least twice as large as x (R*S >= 2 * stride_h * stride_w: 3x3
     * stride 2, at 2.25, measured faster through NHWC, the 1x1 stride-2
     * downsample slower; ratios from 1 to 2 are not measured); for f32,
     * whose per-image GEMMs run near the FMA rate already, only when it is
     * at least 4 times x and on large images (OH*OW >= 2048).  One image,
     * or groups, keep the per-image GEMMs.  Measured on ResNet-18's layers
     * (docs/conv.md). */
    int64_t sarea;
    const int dense_taps =
        !gk_mul(p.sh, p.sw, &sarea) && sarea <= p.r * p.s / (es == 2 ? 2 : 4);
    cp->via_nhwc = p.layout == GKO_CONV_LAYOUT_NCHW && G == 1 && p.n > 1 && p.c >= 8 &&
                   dense_taps && (es == 2 || ohw >= 2048);
    const int lay = cp->via_nhwc ? GKO_CONV_LAYOUT_NHWC : p.layout;
    cp->kp = cp->l % gel != 0 ? gk_round_up(cp->l, gel) : cp->l;
    cp->wpad = cp->kp != cp->l || cp->via_nhwc; /* the filter is copied */
    cp->ohw_ld = lay == GKO_CONV_LAYOUT_NCHW ? gk_round_up(ohw, gel) : ohw;
    int64_t col_img, cap;
    const int64_t lim = INT32_MAX;
    if (lay == GKO_CONV_LAYOUT_NCHW) {
      if (ohw > lim - 16 || G * cp->kp > lim) {
        s = gk_fail(GKO_STATUS_NOT_SUPPORTED,
                    "one image's column matrix (%lld x %lld rows of %lld pixels) is beyond the "
                    "im2col kernels' 2^31 limit per dimension",
                    (long long)G, (long long)cp->kp, (long long)ohw);
        goto fail;
      }
      cap = lim / (G * cp->kp);
      if (gk_mul4(G, cp->kp, cp->ohw_ld, es, &col_img)) col_img = -1;
    } else {
      /* the GEMM's m = images * OH * OW: at most 2^30 per pass, the most
       * gko gives cuBLASLt (gemm_cublaslt.c), so that every chunk and the
       * invariant reference (the unchunked plan's m) stay within it */
      const int64_t mlim = GK_LT_MAX_DIM;
      if (ohw > mlim) {
        s = gk_fail(GKO_STATUS_NOT_SUPPORTED,
                    "OH x OW = %lld output pixels per image is beyond the NHWC GEMM's 2^30 rows "
                    "per pass",
                    (long long)ohw);
        goto fail;
      }
      cap = mlim / ohw;
      if (gk_mul4(ohw, G, cp->kp, es, &col_img)) col_img = -1;
    }
    if (col_img < 0 || (uint64_t)col_img > (uint64_t)SIZE_MAX / 4) {
      s = gk_fail(GKO_STATUS_NOT_SUPPORTED,
                  "one image's column matrix has more bytes than this machine can address");
      goto fail;
    }
    cp->col_img_bytes = (size_t)col_img;
    if (cp->via_nhwc) { /* x and y fit in int64 bytes (checked) */
      cp->xt_img_bytes = (size_t)(p.c * p.h * p.w * es);
      cp->d_img_bytes = (size_t)(ohw * p.k * es);
    }
    int64_t wpb = 0;
    if (cp->wpad && (gk_mul4(p.k, cp->kp, es, 1, &wpb) || wpb > INT64_MAX - 4096)) {
      s = gk_fail(GKO_STATUS_NOT_SUPPORTED,
                  "the filter copy (K %lld x kp %lld) has more bytes than int64 can count",
                  (long long)p.k, (long long)cp->kp);
      goto fail;
    }
    cp->wpad_bytes = (size_t)wpb;
    /* the filter copy, then (sizes only; it sits at the end) the GEMMs'
     * cuBLASLt scratch with its alignment slack */
    const size_t fixed = gk_round256(cp->wpad_bytes);
    const size_t sized = fixed + GK_CONV_GEMM_RESERVE;
    cp->ws_min = gk_conv_ws_for(cp, sized, 1);
    if (cp->ws_min == 0) {
      s = gk_fail(GKO_STATUS_NOT_SUPPORTED,
                  "one image's workspace (filter copy, column matrix%s) has more bytes than "
                  "int64 can count",
                  cp->via_nhwc ? ", x and y transposed" : "");
      goto fail;
    }
    int64_t nb = p.n < cap ? p.n : cap;
    const int64_t nb_all = nb;
    if (p.max_chunk > 0 && p.max_chunk < nb) nb = p.max_chunk;
    if (p.max_ws >= 0) {
      if ((uint64_t)p.max_ws < (uint64_t)cp->ws_min) {
        s = gk_fail(GKO_STATUS_INSUFFICIENT_WORKSPACE,
                    "GKO_CONV_ATTR_MAX_WORKSPACE = %lld bytes is below the minimum of %zu "
                    "(one image's column matrix %zu bytes%s%s%s, the GEMM's %d bytes of "
                    "scratch, 255 bytes of alignment slack)",
                    (long long)p.max_ws, cp->ws_min, cp->col_img_bytes,
                    cp->via_nhwc ? ", one image of x and of y transposed" : "",
                    cp->wpad ? ", the filter copy " : "", cp->wpad ? "included" : "",
                    GK_CONV_GEMM_RESERVE);
        goto fail;
      }
      /* an estimate from one image's rounded share, then down to a fit */
      const size_t avail = (size_t)p.max_ws - 255 - sized;
      int64_t fit = (int64_t)(avail / (cp->ws_min - 255 - sized));
      if (fit < nb) nb = fit;
      while (nb > 1) {
        const size_t w = gk_conv_ws_for(cp, sized, nb);
        if (w != 0 && w <= (size_t)p.max_ws) break;
        nb--;
      }
    }
    const size_t ws_chunk = gk_conv_ws_for(cp, sized, nb);
    if (ws_chunk == 0) {
      s = gk_fail(GKO_STATUS_NOT_SUPPORTED,
                  "the workspace for %lld images per pass has more bytes than int64 can count "
                  "(bound it with GKO_CONV_ATTR_MAX_WORKSPACE or MAX_CHUNK)",
                  (long long)nb);
      goto fail;
    }
    cp->chunk = nb;
    cp->nchunks = (p.n + nb - 1) / nb;
    cp->last = p.n - (cp->nchunks - 1) * nb;
    cp->col_bytes = (size_t)nb * cp->col_img_bytes;
    cp->by_group = lay == GKO_CONV_LAYOUT_NCHW && G > nb;
    if (lay == GKO_CONV_LAYOUT_NHWC) cp->gemm_calls = cp->nchunks * G;
    else cp->gemm_calls = cp->by_group ? p.n : cp->nchunks * G;
    /* Chunked and unchunked plans must give the same bits, so every im2col
     * plan of a problem runs one algorithm whatever its chunk: GEMMs with
     * GKO_GEMM_ATTR_INVARIANT, the reference being the unchunked plan's
     * lines of D per group (NHWC: the N*OHW rows; NCHW: N*Kg columns, the
     * images and the GEMM's batch folded together; N capped by the kernels'
     * 2^31 limit, which depends on the problem only, so that the reference
     * stays below 2^31 lines), and a fixed cuBLASLt scratch budget
     * (GK_CONV_GEMM_SCRATCH: a chunk-dependent budget could change the
     * algorithm) reserved at the end of the workspace whatever the GEMMs
     * take of it; invariant GEMMs make no padded copies.  (Budget 0, until
     * 2026-11-30, left ResNet-18's stem without a cuBLASLt algorithm: its
     * heuristic's choices for m = 401 408, n = 64, k = 152 each need 4
     * bytes, so WMMA ran it, 290 us.) */
    int64_t ref_lines = lay == GKO_CONV_LAYOUT_NHWC ? nb_all * ohw : nb_all * p.kg;
    /* NCHW per image: the GEMMs' own m and n do not depend on the chunk
     * (the images are the batch), so a reference capped at 2^30 lines (the
     * most gko gives cuBLASLt) is the same question for every chunk; NHWC
     * stays below it through the chunk cap above */
    if (lay == GKO_CONV_LAYOUT_NCHW && ref_lines > GK_LT_MAX_DIM) ref_lines = GK_LT_MAX_DIM;
    if ((s = gk_conv_make_gemms(cp, GK_CONV_GEMM_SCRATCH, ref_lines))) goto fail;
    /* the GEMM plans' workspace (their scratch and its alignment slack)
     * fits the reserve; the layout below gives it at least that much */
    if (cp->gemm_ws > GK_CONV_GEMM_RESERVE) {
      s = gk_fail(GKO_STATUS_INTERNAL,
                  "conv plan: the GEMM asks for %zu bytes of workspace, above the %d reserved",
                  cp->gemm_ws, GK_CONV_GEMM_RESERVE);
      goto fail;
    }
    /* every product below fits: gk_conv_ws_for(nb) did not overflow */
    cp->off_col = fixed;
    cp->off_xt = cp->off_col + gk_round256(cp->col_bytes);
    cp->off_d = cp->off_xt + gk_round256((size_t)nb * cp->xt_img_bytes);
    cp->off_gemm = cp->off_d + gk_round256((size_t)nb * cp->d_img_bytes);
    cp->ws_bytes = ws_chunk;
    if (p.max_ws >= 0 && cp->ws_bytes > (size_t)p.max_ws) {
      s = gk_fail(GKO_STATUS_INTERNAL,
                  "conv plan: workspace %zu bytes exceeds GKO_CONV_ATTR_MAX_WORKSPACE = %lld",
                  cp->ws_bytes, (long long)p.max_ws);
      goto fail;
    }
    /* INT64_MAX when no bound could hold the whole batch */
    const size_t ws_all = gk_conv_ws_for(cp, sized, nb_all);
    cp->ws_full = ws_all == 0 ? (size_t)INT64_MAX : ws_all;
    /* launch shapes of every kernel variant execute may pick */
    if ((s = gk_im2col_occupancy(lay, (int)es, 16, &cp->block_nchw))) goto fail;
    if (lay == GKO_CONV_LAYOUT_NHWC)
      for (int i = 0; i < 4; i++)
        if ((s = gk_im2col_occupancy(lay, (int)es, 2 << i, &cp->block_nhwc[i]))) goto fail;
    if (cp->via_nhwc)
      snprintf(cp->why, sizeof cp->why,
               "NCHW through NHWC (one group, N > 1): x transposed per chunk (%.1f MB), filter "
               "KCRS -> KRSC, y transposed back from the GEMM's [M][K] (%.1f MB); im2col NHWC: "
               "col [M=%lld][kp=%lld] %s (L = R*S*C = %lld), ",
               (double)((size_t)nb * cp->xt_img_bytes) / 1e6,
               (double)((size_t)nb * cp->d_img_bytes) / 1e6, (long long)(nb * ohw),
               (long long)cp->kp, gk_dtype_name(p.dtype), (long long)cp->l);
    else if (p.layout == GKO_CONV_LAYOUT_NHWC)
      snprintf(cp->why, sizeof cp->why,
               "im2col NHWC: col [G=%lld][M=%lld][kp=%lld] %s (L = R*S*C/groups = %lld), ",
               (long long)G, (long long)(nb * ohw), (long long)cp->kp, gk_dtype_name(p.dtype),
               (long long)cp->l);
    else
      snprintf(cp->why, sizeof cp->why,
               "im2col NCHW: col [%lld images][G=%lld][kp=%lld][%lld (OH*OW = %lld)] %s (L = "
               "C/groups*R*S = %lld), ",
               (long long)nb, (long long)G, (long long)cp->kp, (long long)cp->ohw_ld,
               (long long)ohw, gk_dtype_name(p.dtype), (long long)cp->l);
    gk_why(cp, "%.1f MB per chunk of %lld image%s (%lld chunk%s, last %lld; %s); ",
           (double)cp->col_bytes / 1e6, (long long)nb, nb == 1 ? "" : "s",
           (long long)cp->nchunks, cp->nchunks == 1 ? "" : "s", (long long)cp->last,
           nb == p.n ? "the whole batch"
           : nb == p.max_chunk ? "GKO_CONV_ATTR_MAX_CHUNK"
           : nb == cap ? (lay == GKO_CONV_LAYOUT_NHWC ? "the GEMM's 2^30 rows per pass"
                                                      : "the kernels' 2^31-row limit")
                       : "as many as GKO_CONV_ATTR_MAX_WORKSPACE allows");
    if (cp->wpad)
      gk_why(cp, "filter copied to [K=%lld][kp=%lld]%s; ", (long long)p.k, (long long)cp->kp,
             cp->kp != cp->l ? " (L not a multiple of 16 bytes)" : "");
    gk_conv_describe_gemm(cp);
  }
  gk_why(cp, "workspace %zu bytes (whole batch in one pass: %zu, minimum: %zu); GEMM plan: ",
         cp->ws_bytes, cp->ws_full, cp->ws_min);
  {
    char g[1200];
    if (gko_gemm_plan_describe(cp->gemm[0], g, sizeof g, NULL) == GKO_STATUS_SUCCESS)
      gk_why(cp, "%s", g);
  }
  gk_clear_error();
  *plan = cp;
  return GKO_STATUS_SUCCESS;
fail:
  gk_conv_plan_free(cp); /* keeps the detail */
  if (!gko_last_error_detail()[0])
    gk_fail(s, "gko_conv_plan_create failed with %s but no detail was recorded (a bug in gko: "
            "please report it)",
            gko_status_name(s));
  return s;
}

GKO_API gko_status_t gko_conv_plan_destroy(gko_conv_plan_t plan) {
  gk_clear_error();
  gk_conv_plan_free(plan);
  gk_clear_error();
  return GKO_STATUS_SUCCESS;
}

GKO_API gko_status_t gko_conv_workspace_size(gko_conv_plan_t plan, size_t *bytes) {
  gk_clear_error();
  if (!plan) return gk_fail(GKO_STATUS_INVALID_VALUE, "plan is NULL");
  if (!bytes) return gk_fail(GKO_STATUS_INVALID_VALUE, "bytes is NULL");
  *bytes = plan->ws_bytes;
  return GKO_STATUS_SUCCESS;
}

GKO_API gko_status_t gko_conv_plan_get(gko_conv_plan_t plan, gko_conv_info_t what,
                                       int64_t *value) {
  gk_clear_error();
  if (!plan) return gk_fail(GKO_STATUS_INVALID_VALUE, "plan is NULL");
  if (!value) return gk_fail(GKO_STATUS_INVALID_VALUE, "value is NULL");
  int64_t v;
  switch (what) {
    case GKO_CONV_INFO_OH: v = plan->p.oh; break;
    case GKO_CONV_INFO_OW: v = plan->p.ow; break;
    case GKO_CONV_INFO_PATH: v = plan->path; break;
    case GKO_CONV_INFO_CHUNK: v = plan->chunk; break;
    case GKO_CONV_INFO_CHUNKS: v = plan->nchunks; break;
    case GKO_CONV_INFO_COL_BYTES: v = (int64_t)plan->col_bytes; break;
    case GKO_CONV_INFO_WORKSPACE: v = (int64_t)plan->ws_bytes; break;
    case GKO_CONV_INFO_WORKSPACE_FULL: v = (int64_t)plan->ws_full; break;
    case GKO_CONV_INFO_WORKSPACE_MIN: v = (int64_t)plan->ws_min; break;
    case GKO_CONV_INFO_GEMM_CALLS: v = plan->gemm_calls; break;
    default:
      return gk_fail(GKO_STATUS_INVALID_VALUE, "what = %d is not a gko_conv_info_t", (int)what);
  }
  *value = v;
  return GKO_STATUS_SUCCESS;
}

GKO_API gko_status_t gko_conv_plan_describe(gko_conv_plan_t plan, char *buf, size_t bytes,
                                            size_t *required) {
  gk_clear_error();
  if (!plan) return gk_fail(GKO_STATUS_INVALID_VALUE, "plan is NULL");
  if (!buf && bytes > 0)
    return gk_fail(GKO_STATUS_INVALID_VALUE, "buf is NULL but bytes = %zu", bytes);
  size_t need = strlen(plan->why) + 1;
  if (bytes > 0) {
    size_t n = need <= bytes ? need - 1 : bytes - 1;
    memcpy(buf, plan->why, n);
    buf[n] = '\0';
  }
  if (required) *required = need;
  return GKO_STATUS_SUCCESS;
}

/* ---- execute ---------------------------------------------------------------------- */

static gko_status_t gk_conv_check_ptr(const void *ptr, const char *name, int64_t align,
                                      const char *why) {
  if (!ptr) return gk_fail(GKO_STATUS_INVALID_VALUE, "%s is NULL (%s)", name, why);
  if ((uintptr_t)ptr % (uint64_t)align != 0)
    return gk_fail(GKO_STATUS_INVALID_VALUE,
                   "%s = %p is not aligned to %lld bytes (the element size and the plan's "
                   "GKO_CONV_ATTR_ALIGNMENT promise; lower the promise for such pointers)",
                   name, ptr, (long long)align);
  return GKO_STATUS_SUCCESS;
}

GKO_API gko_status_t gko_conv_execute(gko_conv_plan_t plan, const void *x, const void *w,
                                      const void *bias, void *y, void *workspace,
                                      size_t workspace_bytes, gko_stream_t stream) {
  gk_clear_error();
  if (!plan) return gk_fail(GKO_STATUS_INVALID_VALUE, "plan is NULL");
  const gk_conv_problem *p = &plan->p;
  if (plan->path == GKO_CONV_PATH_NONE) return GKO_STATUS_SUCCESS;
  const int64_t es = p->es, G = p->groups, ohw = p->oh * p->ow, hw = p->h * p->w;
  const int64_t align = p->alignment > es ? p->alignment : es;
  const int need_bias = p->epilogue & 1;
  const size_t xb = (size_t)(p->n * p->c * hw * es), yb = (size_t)(p->n * p->k * ohw * es);
  const size_t wb = (size_t)(p->k * p->cg * p->r * p->s * es), bb = need_bias ? (size_t)(p->k * es) : 0;
  gko_status_t s;
  if ((s = gk_conv_check_ptr(y, "y", align, "y is always written")) ||
      (s = gk_conv_check_ptr(w, "w", align, "the filters are always read")) ||
      (xb > 0 && (s = gk_conv_check_ptr(x, "x", align, "N x C x H x W > 0"))) ||
      (need_bias && (s = gk_conv_check_ptr(bias, "bias", align, "the epilogue has a bias"))))
    return s;
  if (!workspace && workspace_bytes > 0)
    return gk_fail(GKO_STATUS_INVALID_VALUE, "workspace is NULL but workspace_bytes = %zu",
                   workspace_bytes);
  if (workspace_bytes < plan->ws_bytes)
    return gk_fail(GKO_STATUS_INSUFFICIENT_WORKSPACE,
                   "workspace_bytes = %zu but the plan needs %zu (gko_conv_workspace_size)",
                   workspace_bytes, plan->ws_bytes);
  if (xb > 0 && gk_overlap(y, yb, x, xb))
    return gk_fail(GKO_STATUS_INVALID_VALUE, "y overlaps x (in-place convolution is not allowed)");
  if (gk_overlap(y, yb, w, wb)) return gk_fail(GKO_STATUS_INVALID_VALUE, "y overlaps w");
  if (need_bias && gk_overlap(y, yb, bias, bb))
    return gk_fail(GKO_STATUS_INVALID_VALUE, "y overlaps bias");
  /* the workspace's first ws_bytes are written (column matrix, transposes,
   * the GEMM's own, each within them): they must not hold y or an input;
   * bytes past them may be anything (a larger arena) */
  if (gk_overlap(y, yb, workspace, plan->ws_bytes))
    return gk_fail(GKO_STATUS_INVALID_VALUE, "y overlaps the workspace");
  if (plan->ws_bytes > 0) {
    if (xb > 0 && gk_overlap(workspace, plan->ws_bytes, x, xb))
      return gk_fail(GKO_STATUS_INVALID_VALUE, "the workspace overlaps x");
    if (gk_overlap(workspace, plan->ws_bytes, w, wb))
      return gk_fail(GKO_STATUS_INVALID_VALUE, "the workspace overlaps w");
    if (need_bias && gk_overlap(workspace, plan->ws_bytes, bias, bb))
      return gk_fail(GKO_STATUS_INVALID_VALUE, "the workspace overlaps bias");
  }
  const void *ptrs[5] = {y, w, xb > 0 ? x : NULL, need_bias ? bias : NULL,
                         workspace_bytes ? workspace : NULL};
  const char *names[5] = {"y", "w", "x", "bias", "workspace"};
  if ((s = gk_check_call(plan->handle, stream, 5, ptrs, names))) return s;
  if (!need_bias) bias = NULL;

  /* IM2COL workspace: [padded filter][column matrix][GEMM] from a base
   * aligned to 256 (ws_bytes counts the 255 bytes of slack; the GEMM's part
   * starts 256-aligned, so its own slack is not used).  DIRECT: the whole
   * workspace is the GEMM's, passed as it came: the GEMM's size counts its
   * own slack for aligning it, which aligning it here first would eat. */
  char *base = NULL;
  size_t avail = 0;
  if (plan->path == GKO_CONV_PATH_IM2COL && workspace && workspace_bytes > 0) {
    uintptr_t u = ((uintptr_t)workspace + 255) & ~(uintptr_t)255;
    size_t skip = (size_t)(u - (uintptr_t)workspace);
    if (skip < workspace_bytes) { /* always: workspace_bytes >= ws_bytes > 255 */
      base = (char *)u;
      avail = workspace_bytes - skip;
    }
  }
  char *gws = NULL;
  size_t gws_bytes = 0;
  if (plan->path == GKO_CONV_PATH_IM2COL) {
    if (avail > plan->off_gemm) {
      gws = base + plan->off_gemm;
      gws_bytes = avail - plan->off_gemm;
    }
  } else if (workspace && workspace_bytes > 0) {
    gws = workspace;
    gws_bytes = workspace_bytes;
  }
  const int lay = plan->via_nhwc ? GKO_CONV_LAYOUT_NHWC : p->layout;
  const char *wsrc = w;
  if (plan->wpad) {
    /* through NHWC: KCRS -> KRSC; else the rows as they are (one tap of
     * L channels), both zero-padded to kp */
    const int64_t cg = plan->via_nhwc ? p->cg : plan->l, rs = plan->via_nhwc ? p->r * p->s : 1;
    if ((s = gk_conv_filter_krsc_launch((int)es, p->k, cg, rs, plan->kp, w, base, stream)))
      return s;
    wsrc = base;
  }
  const int64_t k = plan->path == GKO_CONV_PATH_DIRECT ? p->cg : plan->kp;
  char what[96];
  for (int64_t ci = 0; ci < plan->nchunks; ci++) {
    const int64_t n0 = ci * plan->chunk;
    const int64_t cnt = ci + 1 < plan->nchunks ? plan->chunk : plan->last;
    gko_gemm_plan_t gp = cnt == plan->chunk || !plan->gemm[1] ? plan->gemm[0] : plan->gemm[1];
    const char *xc = (const char *)x + (xb > 0 ? n0 * p->c * hw * es : 0);
    char *yc = (char *)y + n0 * p->k * ohw * es;
    const char *a = xc; /* the GEMM's A: col, or x itself */
    int64_t a_grp, a_img;
    if (plan->via_nhwc) { /* x_n [C][H*W] -> [H*W][C] in the workspace */
      if (hw > 0 && (s = gk_transpose_batched_launch((int)es, p->c, hw, cnt, xc,
                                                     base + plan->off_xt, stream)))
        return s;
      xc = base + plan->off_xt;
    }
    if (plan->path == GKO_CONV_PATH_IM2COL) {
      gk_im2col_args ia;
      memset(&ia, 0, sizeof ia);
      ia.layout = lay;
      ia.es = (int)es;
      ia.images = cnt;
      ia.c = p->c;
      ia.h = p->h;
      ia.w = p->w;
      ia.groups = G;
      ia.cg = p->cg;
      ia.r = p->r;
      ia.s = p->s;
      ia.oh = p->oh;
      ia.ow = p->ow;
      ia.stride_h = p->sh;
      ia.stride_w = p->sw;
      ia.pad_h = p->ph;
      ia.pad_w = p->pw;
      ia.dil_h = p->dh;
      ia.dil_w = p->dw;
      ia.l = plan->l;
      ia.kp = plan->kp;
      ia.ohw_ld = plan->ohw_ld;
      ia.x = xc;
      ia.col = base + plan->off_col;
      ia.stream = stream;
      if (lay == GKO_CONV_LAYOUT_NHWC) {
        int vb = 16, idx = 3;
        while (vb > es && ((p->c * es) % vb != 0 || (p->cg * es) % vb != 0 ||
                           (xb > 0 && (uintptr_t)xc % (uintptr_t)vb != 0))) {
          vb /= 2;
          idx--;
        }
        ia.vec_bytes = vb;
        ia.block = plan->block_nhwc[idx];
      } else {
        ia.vec_bytes = 16;
        ia.block = plan->block_nchw;
      }
      if ((s = gk_im2col_launch(&ia))) return s;
      a = base + plan->off_col;
      a_grp = lay == GKO_CONV_LAYOUT_NHWC ? cnt * ohw * plan->kp : plan->kp * plan->ohw_ld;
      a_img = G * plan->kp * plan->ohw_ld;
    } else {
      a_grp = p->layout == GKO_CONV_LAYOUT_NHWC ? p->cg : p->cg * hw;
      a_img = p->c * hw;
    }
    const int64_t w_grp = p->kg * k; /* elements between the groups' filters */
    /* via_nhwc: the GEMM writes D [cnt*OH*OW][K] into the workspace */
    char *yd = plan->via_nhwc ? base + plan->off_d : yc;
    if (lay == GKO_CONV_LAYOUT_NCHW && plan->by_group) {
      for (int64_t i = 0; i < cnt; i++) {
        s = gko_gemm_execute(gp, 1.0f, a + i * a_img * es, wsrc, 0.0f, NULL,
                             yc + i * p->k * ohw * es, bias, gws, gws_bytes, stream);
        if (s) {
          snprintf(what, sizeof what, "(image %lld)", (long long)(n0 + i));
          return gk_conv_gemm_fail(s, what);
        }
      }
    } else {
      for (int64_t g = 0; g < G; g++) {
        const int64_t d_off = lay == GKO_CONV_LAYOUT_NHWC ? g * p->kg : g * p->kg * ohw;
        s = gko_gemm_execute(gp, 1.0f, a + g * a_grp * es, wsrc + g * w_grp * es, 0.0f, NULL,
                             yd + d_off * es,
                             bias ? (const char *)bias + g * p->kg * es : NULL, gws, gws_bytes,
                             stream);
        if (s) {
          snprintf(what, sizeof what, "(chunk %lld, group %lld)", (long long)ci, (long long)g);
          return gk_conv_gemm_fail(s, what);
        }
      }
    }
    /* D_n [OH*OW][K] -> y_n [K][OH*OW] */
    if (plan->via_nhwc && (s = gk_transpose_batched_launch((int)es, ohw, p->k, cnt, yd, yc,
                                                           stream)))
      return s;
  }
  gk_clear_error();
  return GKO_STATUS_SUCCESS;
}
