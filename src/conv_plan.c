/* conv_plan.c -- Conv2d plans: the lowering choice (DIRECT for a 1x1
 * filter with stride 1 and no padding, x being the GEMM's operand; IM2COL
 * otherwise, NCHW possibly through NHWC), the chunk (images per im2col
 * pass) from the workspace bound, the workspace layout, and the GEMM plans,
 * made through the public GEMM API (at most two: a full chunk and the last,
 * partial one), so the convolution inherits cuBLASLt's dispatch, the fused
 * epilogues and gko's epilogue pass.  The decisions go into a
 * gk_conv_choice; gk_conv_explain renders them into the description.
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

#include "conv.h"
#include "gemm.h"
#include "../kernels/im2col.h"

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

gko_status_t gk_conv_gemm_fail(gko_status_t s, const char *what) {
  char inner[400];
  snprintf(inner, sizeof inner, "%s", gko_last_error_detail());
  return gk_fail(s, "conv GEMM %s: %s", what, inner);
}

/* ---- the GEMMs of the lowering ------------------------------------------------- */

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
  if (!s) s = gk_gemm_plan_create_inner(cp->handle, d, out);
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
  const gk_conv_choice *c = &cp->c;
  const int64_t es = p->es, G = p->groups, ohw = p->oh * p->ow, hw = p->h * p->w;
  const int direct = c->path == GKO_CONV_PATH_DIRECT;
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
  if (c->lay == GKO_CONV_LAYOUT_NHWC) {
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
    if (!direct && !c->via_nhwc) GK_LOWER(ohw * p->k * es);
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
    if (c->by_group) {
      g.batch = G;
      g.sa = a_grp;
      g.sb = p->kg * k;
      g.sd = p->kg * ohw;
      g.sbias = p->kg;
      if (cnt > 1 || c->nchunks > 1) {
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
      if (c->nchunks > 1) GK_LOWER(c->chunk * p->k * ohw * es);
    }
    if (c->nchunks > 1 && direct) GK_LOWER(c->chunk * p->c * hw * es);
  }
#undef GK_LOWER
  *align = a;
  return g;
}

/* The GEMM plans for a chunk of `chunk` images and the last chunk.
 * invariant: see gk_conv_gemm_plan. */
static gko_status_t gk_conv_make_gemms(gko_conv_plan_t cp, int64_t budget, int64_t invariant) {
  int64_t al0, al1;
  gk_conv_gemm g0 = gk_conv_gemm_shape(cp, cp->c.chunk, &al0);
  gko_status_t s = gk_conv_gemm_plan(cp, &g0, al0, budget, invariant, &cp->gemm[0], "plan");
  if (s) return s;
  size_t w0 = 0, w1 = 0;
  w0 = cp->gemm[0]->ws_bytes;
  if (cp->c.last != cp->c.chunk) {
    gk_conv_gemm g1 = gk_conv_gemm_shape(cp, cp->c.last, &al1);
    if (memcmp(&g0, &g1, sizeof g0) != 0 || al0 != al1) {
      s = gk_conv_gemm_plan(cp, &g1, al1, budget, invariant, &cp->gemm[1],
                            "plan (last chunk)");
      if (s) return s;
      w1 = cp->gemm[1]->ws_bytes;
    }
  }
  cp->gemm_ws = w0 > w1 ? w0 : w1;
  return GKO_STATUS_SUCCESS;
}

/* Frees a plan, also a half-built one on a failure path (the thread's
 * detail is kept). */
static void gk_conv_plan_free(gko_conv_plan_t plan) {
  if (!plan) return;
  gk_gemm_plan_free(plan->gemm[0]);
  gk_gemm_plan_free(plan->gemm[1]);
  free(plan);
}

/* ---- the decisions ------------------------------------------------------------- */

/* DIRECT: x is the GEMM's operand, the whole batch in one pass. */
static gko_status_t gk_conv_plan_direct(gko_conv_plan_t cp) {
  const gk_conv_problem *p = &cp->p;
  gk_conv_choice *c = &cp->c;
  c->path = GKO_CONV_PATH_DIRECT;
  c->lay = p->layout;
  c->chunk = c->last = p->n;
  c->nchunks = 1;
  c->chunk_bound = GK_CONV_CHUNK_BATCH;
  c->by_group = p->layout == GKO_CONV_LAYOUT_NCHW && p->groups > p->n;
  c->gemm_calls = p->layout == GKO_CONV_LAYOUT_NHWC ? p->groups : (c->by_group ? p->n : p->groups);
  gko_status_t s = gk_conv_make_gemms(cp, p->max_ws, 0); /* one chunk: no invariance needed */
  if (s) return s;
  cp->ws_bytes = cp->gemm_ws;
  cp->ws_full = cp->ws_bytes;
  cp->ws_min = 0;
  return GKO_STATUS_SUCCESS;
}

/* NCHW lowered through NHWC (x transposed per chunk, the filter reordered
 * to KRSC, the NHWC column matrix and GEMM, y transposed back): one GEMM
 * over the chunk's N*OH*OW pixels instead of one per image.  Worth the
 * transposes for one group, N > 1, C >= 8 and a column matrix at least
 * twice x (four times for f32, which also needs OH*OW >= 2048): the rule
 * and its measurements are in docs/conv.md ("Lowering"). */
static int gk_conv_via_nhwc(const gk_conv_problem *p) {
  int64_t sarea;
  const int dense_taps =
      !gk_mul(p->sh, p->sw, &sarea) && sarea <= p->r * p->s / (p->es == 2 ? 2 : 4);
  return p->layout == GKO_CONV_LAYOUT_NCHW && p->groups == 1 && p->n > 1 && p->c >= 8 &&
         dense_taps && (p->es == 2 || p->oh * p->ow >= 2048);
}

/* IM2COL: the lowering's layout, the column matrix's row length and one
 * image's share of every part of the workspace; *cap: the most images per
 * pass the kernels (NCHW) or the GEMM (NHWC) take. */
static gko_status_t gk_conv_size_im2col(gko_conv_plan_t cp, int64_t *cap) {
  const gk_conv_problem *p = &cp->p;
  gk_conv_choice *c = &cp->c;
  const int64_t es = p->es, G = p->groups, ohw = p->oh * p->ow;
  const int64_t gel = 16 / es; /* elements per 16 bytes */
  c->path = GKO_CONV_PATH_IM2COL;
  cp->l = p->cg * p->r * p->s; /* fits: w's size was checked */
  if (cp->l >= ((int64_t)1 << 25))
    return gk_fail(GKO_STATUS_NOT_SUPPORTED,
                   "a column-matrix row of C/groups x R x S = %lld elements (2^25 or more) is "
                   "beyond the im2col kernels' limit",
                   (long long)cp->l);
  c->via_nhwc = gk_conv_via_nhwc(p);
  c->lay = c->via_nhwc ? GKO_CONV_LAYOUT_NHWC : p->layout;
  cp->kp = cp->l % gel != 0 ? gk_round_up(cp->l, gel) : cp->l;
  c->wpad = cp->kp != cp->l || c->via_nhwc; /* the filter is copied */
  cp->ohw_ld = c->lay == GKO_CONV_LAYOUT_NCHW ? gk_round_up(ohw, gel) : ohw;
  int64_t col_img;
  const int64_t lim = INT32_MAX;
  if (c->lay == GKO_CONV_LAYOUT_NCHW) {
    if (ohw > lim - 16 || G * cp->kp > lim)
      return gk_fail(GKO_STATUS_NOT_SUPPORTED,
                     "one image's column matrix (%lld x %lld rows of %lld pixels) is beyond the "
                     "im2col kernels' 2^31 limit per dimension",
                     (long long)G, (long long)cp->kp, (long long)ohw);
    *cap = lim / (G * cp->kp);
    if (gk_mul4(G, cp->kp, cp->ohw_ld, es, &col_img)) col_img = -1;
  } else {
    /* the GEMM's m = images * OH * OW: at most 2^30 per pass, the most
     * gko gives cuBLASLt (gemm_cublaslt.c), so that every chunk and the
     * invariant reference (the unchunked plan's m) stay within it */
    const int64_t mlim = GK_LT_MAX_DIM;
    if (ohw > mlim)
      return gk_fail(GKO_STATUS_NOT_SUPPORTED,
                     "OH x OW = %lld output pixels per image is beyond the NHWC GEMM's 2^30 rows "
                     "per pass",
                     (long long)ohw);
    *cap = mlim / ohw;
    if (gk_mul4(ohw, G, cp->kp, es, &col_img)) col_img = -1;
  }
  if (col_img < 0 || (uint64_t)col_img > (uint64_t)SIZE_MAX / 4)
    return gk_fail(GKO_STATUS_NOT_SUPPORTED,
                   "one image's column matrix has more bytes than this machine can address");
  cp->col_img_bytes = (size_t)col_img;
  if (c->via_nhwc) { /* x and y fit in int64 bytes (checked) */
    cp->xt_img_bytes = (size_t)(p->c * p->h * p->w * es);
    cp->d_img_bytes = (size_t)(ohw * p->k * es);
  }
  int64_t wpb = 0;
  if (c->wpad && (gk_mul4(p->k, cp->kp, es, 1, &wpb) || wpb > INT64_MAX - 4096))
    return gk_fail(GKO_STATUS_NOT_SUPPORTED,
                   "the filter copy (K %lld x kp %lld) has more bytes than int64 can count",
                   (long long)p->k, (long long)cp->kp);
  cp->wpad_bytes = (size_t)wpb;
  return GKO_STATUS_SUCCESS;
}

/* IM2COL: the images per pass -- the whole batch, within cap, then
 * GKO_CONV_ATTR_MAX_CHUNK and GKO_CONV_ATTR_MAX_WORKSPACE -- and the
 * minimum and chosen workspace; sized: the fixed part of the workspace.
 * *nb_all: the images per pass without the caller's bounds. */
static gko_status_t gk_conv_choose_chunk(gko_conv_plan_t cp, size_t sized, int64_t cap,
                                         int64_t *nb_all) {
  const gk_conv_problem *p = &cp->p;
  gk_conv_choice *c = &cp->c;
  cp->ws_min = gk_conv_ws_for(cp, sized, 1);
  if (cp->ws_min == 0)
    return gk_fail(GKO_STATUS_NOT_SUPPORTED,
                   "one image's workspace (filter copy, column matrix%s) has more bytes than "
                   "int64 can count",
                   c->via_nhwc ? ", x and y transposed" : "");
  int64_t nb = p->n < cap ? p->n : cap;
  *nb_all = nb;
  if (p->max_chunk > 0 && p->max_chunk < nb) nb = p->max_chunk;
  if (p->max_ws >= 0) {
    if ((uint64_t)p->max_ws < (uint64_t)cp->ws_min)
      return gk_fail(GKO_STATUS_INSUFFICIENT_WORKSPACE,
                     "GKO_CONV_ATTR_MAX_WORKSPACE = %lld bytes is below the minimum of %zu "
                     "(one image's column matrix %zu bytes%s%s%s, the GEMM's %d bytes of "
                     "scratch, 255 bytes of alignment slack)",
                     (long long)p->max_ws, cp->ws_min, cp->col_img_bytes,
                     c->via_nhwc ? ", one image of x and of y transposed" : "",
                     c->wpad ? ", the filter copy " : "", c->wpad ? "included" : "",
                     GK_CONV_GEMM_RESERVE);
    /* an estimate from one image's rounded share, then down to a fit */
    const size_t avail = (size_t)p->max_ws - 255 - sized;
    int64_t fit = (int64_t)(avail / (cp->ws_min - 255 - sized));
    if (fit < nb) nb = fit;
    while (nb > 1) {
      const size_t w = gk_conv_ws_for(cp, sized, nb);
      if (w != 0 && w <= (size_t)p->max_ws) break;
      nb--;
    }
  }
  cp->ws_bytes = gk_conv_ws_for(cp, sized, nb);
  if (cp->ws_bytes == 0)
    return gk_fail(GKO_STATUS_NOT_SUPPORTED,
                   "the workspace for %lld images per pass has more bytes than int64 can count "
                   "(bound it with GKO_CONV_ATTR_MAX_WORKSPACE or MAX_CHUNK)",
                   (long long)nb);
  c->chunk = nb;
  c->nchunks = (p->n + nb - 1) / nb;
  c->last = p->n - (c->nchunks - 1) * nb;
  c->chunk_bound = nb == p->n           ? GK_CONV_CHUNK_BATCH
                   : nb == p->max_chunk ? GK_CONV_CHUNK_MAX_CHUNK
                   : nb == cap          ? GK_CONV_CHUNK_ROWS
                                        : GK_CONV_CHUNK_WORKSPACE;
  return GKO_STATUS_SUCCESS;
}

/* IM2COL: sizes, chunk, GEMM plans (one algorithm for every chunk size),
 * the workspace layout and the im2col launch shapes. */
static gko_status_t gk_conv_plan_im2col(gko_conv_plan_t cp) {
  const gk_conv_problem *p = &cp->p;
  gk_conv_choice *c = &cp->c;
  const int64_t G = p->groups, ohw = p->oh * p->ow;
  int64_t cap = 0, nb_all = 0;
  gko_status_t s = gk_conv_size_im2col(cp, &cap);
  if (s) return s;
  /* the filter copy, then (sizes only; it sits at the end) the GEMMs'
   * cuBLASLt scratch with its alignment slack */
  const size_t fixed = gk_round256(cp->wpad_bytes);
  const size_t sized = fixed + GK_CONV_GEMM_RESERVE;
  if ((s = gk_conv_choose_chunk(cp, sized, cap, &nb_all))) return s;
  const int64_t nb = c->chunk;
  cp->col_bytes = (size_t)nb * cp->col_img_bytes;
  c->by_group = c->lay == GKO_CONV_LAYOUT_NCHW && G > nb;
  if (c->lay == GKO_CONV_LAYOUT_NHWC) c->gemm_calls = c->nchunks * G;
  else c->gemm_calls = c->by_group ? p->n : c->nchunks * G;
  /* Chunked and unchunked plans must give the same bits, so every im2col
   * plan of a problem runs one algorithm whatever its chunk: GEMMs with
   * GKO_GEMM_ATTR_INVARIANT, the reference being the unchunked plan's
   * lines of D per group (NHWC: the N*OHW rows; NCHW: N*Kg columns, the
   * images and the GEMM's batch folded together; N capped by the kernels'
   * 2^31 limit, which depends on the problem only, so that the reference
   * stays below 2^31 lines), and a fixed cuBLASLt scratch budget (a
   * chunk-dependent one could change the algorithm) reserved at the end of
   * the workspace whatever the GEMMs take of it; invariant GEMMs make no
   * padded copies (docs/conv.md, "Workspace and chunking"). */
  int64_t ref_lines = c->lay == GKO_CONV_LAYOUT_NHWC ? nb_all * ohw : nb_all * p->kg;
  /* NCHW per image: the GEMMs' own m and n do not depend on the chunk
   * (the images are the batch), so a reference capped at 2^30 lines (the
   * most gko gives cuBLASLt) is the same question for every chunk; NHWC
   * stays below it through the chunk cap */
  if (c->lay == GKO_CONV_LAYOUT_NCHW && ref_lines > GK_LT_MAX_DIM) ref_lines = GK_LT_MAX_DIM;
  if ((s = gk_conv_make_gemms(cp, GK_CONV_GEMM_SCRATCH, ref_lines))) return s;
  /* the GEMM plans' workspace (their scratch and its alignment slack)
   * fits the reserve; the layout below gives it at least that much */
  if (cp->gemm_ws > GK_CONV_GEMM_RESERVE)
    return gk_fail(GKO_STATUS_INTERNAL,
                   "conv plan: the GEMM asks for %zu bytes of workspace, above the %d reserved",
                   cp->gemm_ws, GK_CONV_GEMM_RESERVE);
  /* [filter copy][column matrix][x transposed][D][GEMM], each part 256-byte
   * aligned; every product fits: gk_conv_ws_for(nb) did not overflow */
  cp->off_col = fixed;
  cp->off_xt = cp->off_col + gk_round256(cp->col_bytes);
  cp->off_d = cp->off_xt + gk_round256((size_t)nb * cp->xt_img_bytes);
  cp->off_gemm = cp->off_d + gk_round256((size_t)nb * cp->d_img_bytes);
  if (p->max_ws >= 0 && cp->ws_bytes > (size_t)p->max_ws)
    return gk_fail(GKO_STATUS_INTERNAL,
                   "conv plan: workspace %zu bytes exceeds GKO_CONV_ATTR_MAX_WORKSPACE = %lld",
                   cp->ws_bytes, (long long)p->max_ws);
  /* INT64_MAX when no bound could hold the whole batch */
  const size_t ws_all = gk_conv_ws_for(cp, sized, nb_all);
  cp->ws_full = ws_all == 0 ? (size_t)INT64_MAX : ws_all;
  /* launch shapes of every kernel variant execute may pick */
  if ((s = gk_im2col_occupancy(c->lay, (int)p->es, 16, &cp->block_nchw))) return s;
  if (c->lay == GKO_CONV_LAYOUT_NHWC)
    for (int i = 0; i < 4; i++)
      if ((s = gk_im2col_occupancy(c->lay, (int)p->es, 2 << i, &cp->block_nhwc[i]))) return s;
  return GKO_STATUS_SUCCESS;
}

/* ---- the description ------------------------------------------------------------ */

static const char *conv_dtype_name(int d) {
  return d == GKO_DTYPE_F32 ? "f32" : d == GKO_DTYPE_F16 ? "f16" : "bf16";
}

static void gk_conv_explain_gemm(gko_conv_plan_t cp) {
  const gk_conv_choice *c = &cp->c;
  int64_t al;
  gk_conv_gemm g = gk_conv_gemm_shape(cp, c->chunk, &al);
  const int64_t per_chunk = c->gemm_calls / (c->nchunks > 0 ? c->nchunks : 1);
  GK_WHY(cp, "GEMM %s m=%lld n=%lld k=%lld lda=%lld ldb=%lld ldd=%lld batch=%lld%s, %lld call%s "
         "per chunk (%lld per execute), alignment %lld; ",
         g.layout == GKO_LAYOUT_ROW_MAJOR ? "row-major D = A.B^T" : "column-major D = A.B",
         (long long)g.m, (long long)g.n, (long long)g.k, (long long)g.lda, (long long)g.ldb,
         (long long)g.ldd, (long long)g.batch,
         cp->p.layout == GKO_CONV_LAYOUT_NCHW && !c->via_nhwc
             ? (c->by_group ? " (over groups)" : " (over images)")
             : "",
         (long long)per_chunk, per_chunk == 1 ? "" : "s", (long long)c->gemm_calls,
         (long long)al);
}

/* IM2COL: the column matrix, the chunk and the filter copy. */
static void gk_conv_explain_im2col(gko_conv_plan_t cp) {
  const gk_conv_problem *p = &cp->p;
  const gk_conv_choice *c = &cp->c;
  const int64_t nb = c->chunk, G = p->groups, ohw = p->oh * p->ow;
  if (c->via_nhwc)
    GK_WHY(cp,
           "NCHW through NHWC (one group, N > 1): x transposed per chunk (%.1f MB), filter "
           "KCRS -> KRSC, y transposed back from the GEMM's [M][K] (%.1f MB); im2col NHWC: "
           "col [M=%lld][kp=%lld] %s (L = R*S*C = %lld), ",
           (double)((size_t)nb * cp->xt_img_bytes) / 1e6,
           (double)((size_t)nb * cp->d_img_bytes) / 1e6, (long long)(nb * ohw),
           (long long)cp->kp, conv_dtype_name(p->dtype), (long long)cp->l);
  else if (p->layout == GKO_CONV_LAYOUT_NHWC)
    GK_WHY(cp, "im2col NHWC: col [G=%lld][M=%lld][kp=%lld] %s (L = R*S*C/groups = %lld), ",
           (long long)G, (long long)(nb * ohw), (long long)cp->kp, conv_dtype_name(p->dtype),
           (long long)cp->l);
  else
    GK_WHY(cp,
           "im2col NCHW: col [%lld images][G=%lld][kp=%lld][%lld (OH*OW = %lld)] %s (L = "
           "C/groups*R*S = %lld), ",
           (long long)nb, (long long)G, (long long)cp->kp, (long long)cp->ohw_ld,
           (long long)ohw, conv_dtype_name(p->dtype), (long long)cp->l);
  const char *bound =
      c->chunk_bound == GK_CONV_CHUNK_BATCH       ? "the whole batch"
      : c->chunk_bound == GK_CONV_CHUNK_MAX_CHUNK ? "GKO_CONV_ATTR_MAX_CHUNK"
      : c->chunk_bound == GK_CONV_CHUNK_ROWS
          ? (c->lay == GKO_CONV_LAYOUT_NHWC ? "the GEMM's 2^30 rows per pass"
                                            : "the kernels' 2^31-row limit")
          : "as many as GKO_CONV_ATTR_MAX_WORKSPACE allows";
  GK_WHY(cp, "%.1f MB per chunk of %lld image%s (%lld chunk%s, last %lld; %s); ",
         (double)cp->col_bytes / 1e6, (long long)nb, nb == 1 ? "" : "s",
         (long long)c->nchunks, c->nchunks == 1 ? "" : "s", (long long)c->last, bound);
  if (c->wpad)
    GK_WHY(cp, "filter copied to [K=%lld][kp=%lld]%s; ", (long long)p->k, (long long)cp->kp,
           cp->kp != cp->l ? " (L not a multiple of 16 bytes)" : "");
}

/* The plan's description: the path, the lowering, the GEMM, the workspace,
 * then the GEMM plan's own description. */
static void gk_conv_explain(gko_conv_plan_t cp) {
  const gk_conv_problem *p = &cp->p;
  if (cp->c.path == GKO_CONV_PATH_NONE) {
    GK_WHY(cp, "N = 0: execute reads and writes nothing; output %lld x %lld", (long long)p->oh,
           (long long)p->ow);
    return;
  }
  if (cp->c.path == GKO_CONV_PATH_IMPLICIT) {
    gk_conv_explain_implicit(cp);
    return;
  }
  if (cp->c.path == GKO_CONV_PATH_DIRECT)
    GK_WHY(cp, "direct %s 1x1 (stride 1, no padding): no im2col, x is the GEMM's operand; ",
           p->layout == GKO_CONV_LAYOUT_NHWC ? "NHWC" : "NCHW");
  else
    gk_conv_explain_im2col(cp);
  gk_conv_explain_gemm(cp);
  GK_WHY(cp, "workspace %zu bytes (whole batch in one pass: %zu, minimum: %zu); GEMM plan: ",
         cp->ws_bytes, cp->ws_full, cp->ws_min);
  char g[1200];
  gk_gemm_plan_text(cp->gemm[0], g, sizeof g);
  GK_WHY(cp, "%s", g);
}

/* ---- entry points --------------------------------------------------------------- */

GKO_API gko_status_t gko_conv_plan_create(gko_handle_t handle, gko_conv_desc_t desc,
                                          gko_conv_plan_t *plan) {
  gko_status_t s = gk_entry_check(handle, desc, GK_LIVE_CONV_DESC, "desc", plan, "plan");
  if (s) return s;
  gk_conv_problem p;
  if ((s = gk_conv_resolve(desc->v, &p))) return s;
  if ((s = gk_check_call(handle, NULL, 0, NULL, NULL))) return s;
  struct gko_conv_plan_s *cp = calloc(1, sizeof *cp);
  if (!cp) return gk_fail(GKO_STATUS_ALLOC_FAILED, "host allocation of the plan failed");
  cp->handle = handle;
  cp->handle_serial = handle->serial;
  cp->p = p;
  const int direct = p.r == 1 && p.s == 1 && p.sh == 1 && p.sw == 1 && p.ph == 0 &&
                     p.pw == 0 && p.ph_end == 0 && p.pw_end == 0;
  char no_implicit[400] = "";
  int implicit = p.algo != GKO_CONV_ALGO_GEMM &&
                 gk_conv_implicit_applies(handle, &p, no_implicit, sizeof no_implicit, NULL);
  if (p.n == 0) {
    cp->c.path = GKO_CONV_PATH_NONE;
    cp->c.lay = p.layout;
  } else if (p.algo == GKO_CONV_ALGO_IMPLICIT && !implicit) {
    s = gk_fail(GKO_STATUS_NOT_SUPPORTED, "GKO_CONV_ALGO_IMPLICIT: %s", no_implicit);
  } else if (implicit && (p.algo == GKO_CONV_ALGO_IMPLICIT || !direct)) {
    s = gk_conv_plan_implicit(cp);
    if (s == GKO_STATUS_NOT_SUPPORTED && p.algo == GKO_CONV_ALGO_AUTO) {
      /* AUTO: a limit of CUTLASS's that gko's rules missed; the GEMM
       * lowering runs it, and the description keeps the reason */
      snprintf(no_implicit, sizeof no_implicit, "%s", gko_last_error_detail());
      implicit = 0;
      cp->c.path = GKO_CONV_PATH_NONE;
      s = GKO_STATUS_SUCCESS;
    }
  }
  if (!s && p.n > 0 && cp->c.path == GKO_CONV_PATH_NONE)
    s = direct ? gk_conv_plan_direct(cp) : gk_conv_plan_im2col(cp);
  if (s) {
    gk_conv_plan_free(cp); /* keeps the detail */
    if (!gko_last_error_detail()[0])
      gk_fail(s, "gko_conv_plan_create failed with %s but no detail was recorded (a bug in gko: "
              "please report it)",
              gko_status_name(s));
    return s;
  }
  if (cp->c.path == GKO_CONV_PATH_DIRECT || cp->c.path == GKO_CONV_PATH_IM2COL)
    GK_WHY(cp, "GEMM lowering, not implicit GEMM: %s; ",
           p.algo == GKO_CONV_ALGO_GEMM ? "GKO_CONV_ALGO_GEMM asks for it"
           : implicit ? "a 1x1 filter with stride 1 and no padding is one GEMM on x as it is"
                      : no_implicit);
  gk_conv_explain(cp);
  if ((s = gk_live_add(cp, GK_LIVE_CONV_PLAN))) {
    gk_conv_plan_free(cp);
    return s;
  }
  gk_clear_error();
  *plan = cp;
  return GKO_STATUS_SUCCESS;
}

static void gk_conv_plan_release(void *p) { gk_conv_plan_free(p); }

GKO_API gko_status_t gko_conv_plan_destroy(gko_conv_plan_t plan) {
  return gk_live_destroy(plan, GK_LIVE_CONV_PLAN, "plan", gk_conv_plan_release);
}

GKO_API gko_status_t gko_conv_workspace_size(gko_conv_plan_t plan, size_t *bytes) {
  gko_status_t s = gk_getter(plan, GK_LIVE_CONV_PLAN, "plan", bytes, "bytes");
  if (!s) *bytes = plan->ws_bytes;
  return s;
}

GKO_API gko_status_t gko_conv_plan_get(gko_conv_plan_t plan, gko_conv_info_t what,
                                       int64_t *value) {
  gko_status_t s = gk_getter(plan, GK_LIVE_CONV_PLAN, "plan", value, "value");
  if (s) return s;
  int64_t v;
  switch (what) {
    case GKO_CONV_INFO_OH: v = plan->p.oh; break;
    case GKO_CONV_INFO_OW: v = plan->p.ow; break;
    case GKO_CONV_INFO_PATH: v = plan->c.path; break;
    case GKO_CONV_INFO_CHUNK: v = plan->c.chunk; break;
    case GKO_CONV_INFO_CHUNKS: v = plan->c.nchunks; break;
    case GKO_CONV_INFO_COL_BYTES: v = (int64_t)plan->col_bytes; break;
    case GKO_CONV_INFO_WORKSPACE: v = (int64_t)plan->ws_bytes; break;
    case GKO_CONV_INFO_WORKSPACE_FULL: v = (int64_t)plan->ws_full; break;
    case GKO_CONV_INFO_WORKSPACE_MIN: v = (int64_t)plan->ws_min; break;
    case GKO_CONV_INFO_GEMM_CALLS: v = plan->c.gemm_calls; break;
    default:
      return gk_fail(GKO_STATUS_INVALID_VALUE, "what = %d is not a gko_conv_info_t", (int)what);
  }
  *value = v;
  return GKO_STATUS_SUCCESS;
}

GKO_API gko_status_t gko_conv_plan_describe(gko_conv_plan_t plan, char *buf, size_t bytes,
                                            size_t *required) {
  return gk_describe(plan, GK_LIVE_CONV_PLAN, "plan", plan ? plan->why : NULL, buf, bytes, required);
}
