/* gemm_wmma.c -- the WMMA backend: gko's own Tensor-Core kernels
 * (kernels/gemm_wmma_*.cu) behind the gk_gemm_backend interface.
 *
 * Plan: f16/bf16 inputs only (bf16 on sm_80+); the kernel works in the lt
 * view (column-major) of the resolved problem, so row-major problems arrive
 * already swapped.  min(m, n) <= 16 takes the SKINNY kernel: the plan picks
 * how many rows of the big operand (W, the weights) a block streams (bnw)
 * and how many ways k is split:
 *   - the largest bnw in {64, 32, 16} that still gives (nearly) every SM a
 *     block (rows / bnw * batch >= 0.9 SMs): one split, the epilogue in the
 *     kernel;
 *   - otherwise bnw = 16 and k split so that about two blocks per SM run,
 *     each split at least two k tiles long; f32 partials go to the
 *     workspace and a second kernel sums them in split order;
 * then the deepest cp.async pipeline (4..8 stages of 8 KB of W) with which
 * every block is resident at once (one wave: all blocks stream at the same
 * rate and finish together; more bytes in flight per SM).
 * On sm_80+, when X has k contiguous and W either k (x W^T, nn.Linear's
 * layout) or its rows (x B, B stored [k, n]: read transposed by ldmatrix),
 * with leading dimensions and batch strides that are multiples of 8, the
 * plan's own choice is the DECODE kernel instead (mma.sync fed by a
 * per-warp cp.async ring, 16-row tiles (64-row for some x B shapes)
 * shared by kw warps, k split across
 * blocks only when the tiles' warps fill less than half the GPU;
 * gk_wmma_decode_config); execute falls back to the SKINNY configuration
 * when the pointers are not 16-byte aligned.
 * Everything else takes the TILED kernel (one configuration, 128 x 128).
 * Autotune variants (plan->variant > 0): TILED has one; SKINNY enumerates
 * bnw in {16, 32, 64} x splits in {1, 2, 4, 8}.
 * Execute: aligns the workspace to 256 bytes and enqueues; the launcher
 * picks the cp.async or plain-load kernel from the real pointers.
 * Weight-only FP8 (16-bit A, 8-bit B) plans and runs in gemm_w8.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gemm.h"
#include "../kernels/gemm_wmma.h"

typedef struct wmma_state {
  gk_wmma_problem wp;
  gk_wmma_config cfg;
  size_t partials;
} wmma_state;

/* What wmma_plan decided beyond the kernel's configuration, for
 * wmma_describe. */
typedef struct wmma_choice {
  int empty;     /* no product: nothing for the kernel to do */
  int skinny;    /* the SKINNY kernel (and DECODE where it applies), else TILED */
  int64_t rows;  /* SKINNY: rows of W, the streamed operand */
  int w_is_b;    /* SKINNY: W is the user's B (else A) */
  int wk;        /* W has k contiguous (x W^T) */
  int one_split; /* the split-K partials exceeded GKO_GEMM_ATTR_MAX_WORKSPACE */
} wmma_choice;

static const char *const kActName[4] = {"", " + ReLU", " + GELU-erf", " + GELU-tanh"};

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* SKINNY's big dimension (rows of W). */
static int64_t skinny_rows(const gk_wmma_problem *wp) {
  return gk_wmma_small_n(wp) ? wp->m : wp->n;
}

/* Splits of k into chunks of whole k tiles (bk): returns the chunk. */
static int64_t skinny_chunk(int64_t k, int bk, int *splits) {
  int64_t chunk = ceil_div(ceil_div(k, *splits), bk) * bk;
  if (chunk < bk) chunk = bk;
  *splits = (int)ceil_div(k, chunk);
  if (*splits < 1) *splits = 1;
  return chunk;
}

/* The kernel's problem: the lt view (column-major) of the resolved one. */
static void wmma_problem_of(const gk_gemm_problem *p, gk_wmma_problem *wp) {
  wp->ab_dtype = p->ab_dtype;
  wp->cd_dtype = p->cd_dtype;
  wp->opa = p->opa_l;
  wp->opb = p->opb_l;
  wp->act = p->epilogue >> 1;
  wp->has_bias = p->epilogue & 1;
  wp->bias_on_rows = p->bias_on_rows;
  wp->m = p->ml;
  wp->n = p->nl;
  wp->k = p->k;
  wp->batch = p->batch;
  wp->lda = p->lda_l;
  wp->ldb = p->ldb_l;
  wp->ldc = p->ldc;
  wp->ldd = p->ldd;
  wp->stride_a = p->stride_a_l;
  wp->stride_b = p->stride_b_l;
  wp->stride_c = p->stride_c;
  wp->stride_d = p->stride_d;
  wp->stride_bias = p->stride_bias;
}

/* f16 inputs anywhere, bf16 on sm_80+ (its Tensor-Core instructions). */
static int wmma_supports(gko_handle_t h, const gk_gemm_problem *p, char *why, size_t cap) {
  if (gk_gemm_w8(p)) return gk_w8_supports(h, p, why, cap);
  if (gk_is_fp8(p->ab_dtype)) {
    if (why)
      snprintf(why, cap,
               "GKO_GEMM_BACKEND_WMMA: gko's WMMA kernel takes f16 or bf16 inputs, not 8-bit "
               "ones (cuBLASLt serves them: GKO_GEMM_BACKEND_AUTO or CUBLASLT)");
    return 0;
  }
  if (p->ab_dtype == GKO_DTYPE_F32) {
    if (why)
      snprintf(why, cap,
               "GKO_GEMM_BACKEND_WMMA: gko's WMMA kernel takes f16 or bf16 inputs, not f32 "
               "(use GKO_GEMM_BACKEND_AUTO or CUBLASLT)");
    return 0;
  }
  if (p->ab_dtype == GKO_DTYPE_BF16 && h->cc < 80) {
    if (why)
      snprintf(why, cap,
               "GKO_GEMM_BACKEND_WMMA: bf16 Tensor-Core instructions need sm_80 or newer; "
               "this GPU is sm_%d",
               h->cc);
    return 0;
  }
  return 1;
}

/* The plan's account into plan->why (st NULL when c->empty). */
static void wmma_describe(gko_gemm_plan_t plan, const wmma_state *st, const wmma_choice *c) {
  const gk_gemm_problem *p = &plan->p;
  gko_handle_t h = plan->handle;
  if (c->empty) {
    GK_WHY(plan, "%s: nothing for the kernel to do (execute writes %s)",
           p->k == 0 ? "k = 0" : "empty D",
           p->k == 0 ? "act(beta * C + bias) by gko's epilogue pass" : "nothing");
    return;
  }
  const gk_wmma_problem *wp = &st->wp;
  const gk_wmma_config *cfg = &st->cfg;
  if (c->one_split)
    GK_WHY(plan, "(split-K partials exceed GKO_GEMM_ATTR_MAX_WORKSPACE: one split) ");
  const char *tn = p->ab_dtype == GKO_DTYPE_BF16 ? "bf16" : "f16";
  const int64_t rows = c->rows;
  const int wk = c->wk;
  if (!c->skinny) {
    if (p->invariant > 0)
      GK_WHY(plan, "invariant (GKO_GEMM_ATTR_INVARIANT: the tiled kernel whatever the "
                   "shape, no split-K); ");
    GK_WHY(plan,
           "tiled kernel 128x128x32, 8 warps of 64x32 (%s, %s, f32 accumulate), "
           "%s; %lld x %lld tiles x %lld batches, %d block(s) per SM; ",
           cfg->async_ok ? "mma.sync m16n8k16 fed by ldmatrix" : "WMMA 16x16x16", tn,
           cfg->async_ok ? "cp.async 4-stage pipeline (plain loads with register prefetch "
                           "and WMMA 16x16x16 when A or B is not 16-byte vectorizable)"
                         : "2 stages with register prefetch (plain loads)",
           (long long)ceil_div(wp->m, 128), (long long)ceil_div(wp->n, 128),
           (long long)wp->batch, cfg->blocks_per_sm);
  } else {
    const int64_t blocks = ceil_div(rows, cfg->bnw) * cfg->splits * wp->batch;
    const char *wname = c->w_is_b ? "B" : "A"; /* W in the user's naming */
    if (cfg->decode) {
      const int64_t dblocks = ceil_div(ceil_div(rows, cfg->drows), cfg->dper) *
                              cfg->dsplits * wp->batch;
      GK_WHY(plan,
             "decode kernel (min(m, n) = %lld <= 16, k contiguous in the small operand, %s "
             "in the large one): the %lld x %lld operand %s streamed once from 16-byte "
             "loads straight into mma.sync m16n8k16 %s (f32 accumulate) through a per-warp "
             "cp.async ring%s, %d of its rows per %d warp(s) taking %d-wide k spans in "
             "turn, summed in warp order; ",
             (long long)(wp->m < wp->n ? wp->m : wp->n), wk ? "k" : "its rows",
             (long long)rows, (long long)wp->k, wname, tn,
             wk ? "" : " (read transposed by ldmatrix)", cfg->drows, cfg->dkw,
             cfg->drows == 64 ? 32 : 128);
      if (cfg->dvar == 2)
        GK_WHY(plan, "min(m, n) > 8 kernel capped at 128 registers (two blocks per SM: "
                     "tall W); ");
      if (cfg->dsplits > 1)
        GK_WHY(plan,
               "split-K: k split %d ways (%lld each), f32 partials summed in split order by "
               "a second kernel (deterministic); ",
               cfg->dsplits, (long long)cfg->dkchunk);
      GK_WHY(plan, "%lld blocks of %d %d-row tile(s) (%d warps busy), %d per SM resident, "
             "%d SMs; ", (long long)dblocks, cfg->dper, cfg->drows, cfg->dper * cfg->dkw,
             cfg->dblocks_per_sm, h->sm_count);
      if (cfg->dpdl)
        GK_WHY(plan, "programmatic dependent launch (GKO_GEMM_ATTR_STATIC_OPERANDS: %s "
               "static): the first spans of %s are loaded before the kernel ahead "
               "finishes; ", wname, wname);
      GK_WHY(plan, "when W or X is not 16-byte vectorizable at execute: ");
    }
    GK_WHY(plan,
           "skinny kernel (min(m, n) = %lld <= 16): the %lld x %lld operand %s streamed "
           "once, %d of its rows x %d k per block and stage (WMMA 16x16x16 %s, f32 "
           "accumulate), ",
           (long long)(wp->m < wp->n ? wp->m : wp->n), (long long)rows, (long long)wp->k,
           wname, cfg->bnw, cfg->bk, tn);
    if (cfg->splits > 1)
      GK_WHY(plan,
             "split-K: k split %d ways (%lld each), f32 partials in the workspace summed in "
             "split order by a second kernel (deterministic); ",
             cfg->splits, (long long)cfg->kchunk);
    else
      GK_WHY(plan, "k not split (the epilogue runs in the kernel); ");
    GK_WHY(plan, "%lld blocks, %d per SM resident, %d SMs; ", (long long)blocks,
           cfg->blocks_per_sm, h->sm_count);
    if (cfg->async_ok)
      GK_WHY(plan, "cp.async %d-stage pipeline (plain loads when W or X is not 16-byte "
             "vectorizable); ", cfg->stages);
    else
      GK_WHY(plan, "2 stages with register prefetch; ");
  }
  if (p->swap) GK_WHY(plan, "row-major as D^T = op(B)^T op(A)^T; ");
  if (p->epilogue)
    GK_WHY(plan, "epilogue fused: %s%s; ", (p->epilogue & 1) ? "bias" : "",
           (p->epilogue & 1) ? kActName[p->epilogue >> 1]
                             : kActName[p->epilogue >> 1] + 3);
  GK_WHY(plan, "workspace %zu bytes", plan->ws_bytes);
}

static gko_status_t wmma_plan(gko_gemm_plan_t plan) {
  const gk_gemm_problem *p = &plan->p;
  gko_handle_t h = plan->handle;
  wmma_choice c;
  memset(&c, 0, sizeof c);
  const int empty = p->m == 0 || p->n == 0 || p->batch == 0 || p->k == 0;
  if (gk_gemm_w8(p) && !empty) return gk_w8_plan(plan);
  if (empty) {
    if (plan->variant > 0) return gk_fail(GKO_STATUS_NOT_SUPPORTED, "WMMA: no variant");
    c.empty = 1;
    plan->state = NULL;
    plan->ws_bytes = 0;
    wmma_describe(plan, NULL, &c);
    return GKO_STATUS_SUCCESS;
  }
  wmma_state *st = calloc(1, sizeof *st);
  if (!st) return gk_fail(GKO_STATUS_ALLOC_FAILED, "host allocation of the WMMA plan failed");
  gk_wmma_problem *wp = &st->wp;
  wmma_problem_of(p, wp);

  gk_wmma_config *cfg = &st->cfg;
  /* GKO_GEMM_ATTR_INVARIANT: the tiled kernel whatever the shape, so that
   * an element's reduction order depends on k only */
  const int skinny = (wp->m <= 16 || wp->n <= 16) && p->invariant <= 0;
  cfg->kind = skinny ? GK_WMMA_SKINNY : GK_WMMA_TILED;
  cfg->splits = 1;
  gko_status_t s;
  int want_bnw = 0, want_splits = 0;
  if (plan->variant > 0) {
    const int v = plan->variant - 1;
    if (!skinny ? v > 0 : v >= 12) {
      free(st);
      return gk_fail(GKO_STATUS_NOT_SUPPORTED, "WMMA: no variant %d", plan->variant);
    }
    if (skinny) {
      want_bnw = 16 << (v / 4);
      want_splits = 1 << (v % 4);
    }
  }
  cfg->bnw = want_bnw ? want_bnw : 16;
  cfg->bk = 4096 / cfg->bnw;
  if ((s = gk_wmma_setup(wp, cfg, h->cc))) {
    free(st);
    return s;
  }
  const int64_t rows = skinny ? skinny_rows(wp) : 0;
  /* SKINNY: W, the streamed operand, is the user's B when it is the lt
   * view's a and the view swapped A and B (row-major), or its b and they
   * were not */
  const int w_is_b = gk_wmma_small_n(wp) == p->swap;
  /* W (the streamed operand) has k contiguous: x W^T */
  const int wk = gk_wmma_w_k_contiguous(wp);
  c.skinny = skinny;
  c.rows = rows;
  c.w_is_b = w_is_b;
  c.wk = wk;
  if (skinny) {
    const int64_t sms = h->sm_count > 0 ? h->sm_count : 1;
    int bnw = 16, splits = 1;
    if (want_bnw) {
      bnw = want_bnw;
      splits = want_splits;
      if (splits > 1 && ceil_div(wp->k, splits) < 4096 / bnw) {
        free(st);
        return gk_fail(GKO_STATUS_NOT_SUPPORTED, "WMMA: variant %d splits k too finely",
                       plan->variant);
      }
    } else {
      int found = 0;
      for (int b = 64; b >= 16 && !found; b /= 2)
        if (10 * ceil_div(rows, b) * wp->batch >= 9 * sms) bnw = b, found = 1;
      if (!found) {
        const int64_t units = ceil_div(rows, 16) * wp->batch;
        int64_t want = ceil_div(2 * sms, units), most = wp->k / (2 * 256);
        if (want > most) want = most;
        if (want > 64) want = 64;
        splits = want < 1 ? 1 : (int)want;
      }
    }
    cfg->bnw = bnw;
    cfg->bk = 4096 / bnw;
    cfg->splits = splits;
    cfg->kchunk = skinny_chunk(wp->k, cfg->bk, &cfg->splits);
    /* the DECODE kernel where it applies (the plan's own choice only; the
     * autotune variants are SKINNY configurations) */
    if (!want_bnw && (s = gk_wmma_decode_config(wp, cfg, h->cc, (int)sms))) {
      free(st);
      return s;
    }
    /* GKO_GEMM_ATTR_STATIC_OPERANDS: W promised static lets the DECODE
     * kernel start before the kernel ahead of it finishes (sm_90+ code) */
    cfg->dpdl = cfg->decode && cfg->dpdl_ok &&
                (p->static_ops & (w_is_b ? GKO_GEMM_STATIC_B : GKO_GEMM_STATIC_A)) != 0;
    /* the partial sums must fit the workspace bound */
    st->partials = gk_wmma_partials_bytes(wp, cfg);
    if (st->partials && p->max_workspace >= 0 &&
        (int64_t)(st->partials + 255) > p->max_workspace) {
      if (want_bnw) {
        free(st);
        return gk_fail(GKO_STATUS_NOT_SUPPORTED, "WMMA: variant %d exceeds MAX_WORKSPACE",
                       plan->variant);
      }
      cfg->splits = 1;
      cfg->kchunk = skinny_chunk(wp->k, cfg->bk, &cfg->splits);
      cfg->dsplits = 1;
      cfg->dkchunk = wp->k;
      st->partials = 0;
      c.one_split = 1;
    }
  }
  if (skinny && cfg->async_ok) {
    /* the deepest pipeline that keeps every block resident */
    const int64_t blocks = ceil_div(rows, cfg->bnw) * cfg->splits * wp->batch;
    const int64_t sms = h->sm_count > 0 ? h->sm_count : 1;
    cfg->stages = 4;
    for (int S = cfg->max_stages; S > 4; S--) {
      cfg->stages = S;
      const int occ = gk_wmma_skinny_occupancy(wp, cfg);
      if (occ < 0) {
        free(st);
        return GKO_STATUS_CUDA_ERROR;
      }
      if ((int64_t)occ * sms >= blocks) break;
      cfg->stages = 4;
    }
    const int occ = gk_wmma_skinny_occupancy(wp, cfg);
    if (occ < 0) {
      free(st);
      return GKO_STATUS_CUDA_ERROR;
    }
    cfg->blocks_per_sm = occ;
  }
  plan->state = st;
  plan->ws_bytes = st->partials ? st->partials + 255 : 0;
  wmma_describe(plan, st, &c);
  return GKO_STATUS_SUCCESS;
}

static gko_status_t wmma_execute(gko_gemm_plan_t plan, const gk_gemm_args *x) {
  if (gk_gemm_w8(&plan->p)) return gk_w8_execute(plan, x);
  const wmma_state *st = plan->state;
  if (!st) return gk_fail(GKO_STATUS_INTERNAL, "WMMA execute without a kernel configuration");
  void *ws = NULL;
  if (st->partials) {
    uintptr_t u = ((uintptr_t)x->ws + 255) & ~(uintptr_t)255;
    ws = (void *)u;
  }
  return gk_wmma_launch(&st->wp, &st->cfg, x->alpha, x->beta, x->a_l, x->b_l, x->c, x->d,
                        x->bias, ws, x->stream);
}

static void wmma_destroy(gko_gemm_plan_t plan) {
  free(plan->state);
  plan->state = NULL;
}

/* AUTO's measured rule (docs/gemm.md "AUTO's rules"): the DECODE kernel
 * with W promised static (GKO_GEMM_ATTR_STATIC_OPERANDS) on sm_90+, where
 * consecutive calls overlap through programmatic dependent launch, at
 * min(m, n) <= 8 against W of at least 4096 rows and no more rows than
 * columns (k), and W with k contiguous (x W^T): there it beat cuBLASLt;
 * taller W did not (measured: docs/gemm.md).  The switch for GELU-erf
 * epilogues stays off: the fused kernel loses to cuBLASLt plus gko's pass
 * (measured: docs/gemm.md). */
static const int kAutoWmmaGeluErf = 0; /* GELU-erf epilogues, 16-bit inputs */

static int wmma_auto_first(gko_handle_t h, const gk_gemm_problem *p) {
  if (p->invariant > 0 || gk_gemm_w8(p)) return 0; /* weight-only FP8: no other backend */
  if (kAutoWmmaGeluErf && (p->epilogue >> 1) == 2) return 1;
  if (h->cc < 90 || p->k < 4096) return 0;
  gk_wmma_problem wp;
  wmma_problem_of(p, &wp);
  const int small_n = gk_wmma_small_n(&wp);
  const int64_t ns = small_n ? wp.n : wp.m, rows = small_n ? wp.m : wp.n;
  if (ns > 8 || rows < 4096 || rows > p->k) return 0;
  const int w_is_b = small_n == p->swap;
  if (!(p->static_ops & (w_is_b ? GKO_GEMM_STATIC_B : GKO_GEMM_STATIC_A))) return 0;
  /* measured for W with k contiguous (x W^T) only */
  if (!gk_wmma_w_k_contiguous(&wp)) return 0;
  return gk_wmma_decode_layout_ok(&wp);
}

const gk_gemm_backend gk_gemm_wmma_backend = {
    .id = GKO_GEMM_BACKEND_WMMA,
    .name = "WMMA",
    .tag = "wmma",
    .max_variant = 12, /* SKINNY: bnw in {16, 32, 64} x splits in {1, 2, 4, 8}; TILED: one */
    .plans_empty = 1,
    .supports = wmma_supports,
    .auto_first = wmma_auto_first,
    .auto_first_why = "AUTO: WMMA before cuBLASLt (its rule: the decode kernel with the weights "
                      "promised static, min(m, n) <= 8, 4096 <= weight rows <= k, sm_90+; "
                      "measured faster on the H200, docs/gemm.md)",
    .plan = wmma_plan,
    .execute = wmma_execute,
    .destroy = wmma_destroy,
};
