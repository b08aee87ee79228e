/* gemm_sm90.c -- the SM90 backend: gko's Hopper GEMM (kernels/gemm_sm90*.cu,
 * CUTLASS's TMA + wgmma warp-specialized persistent kernels with gko's
 * epilogue fused) behind the gk_gemm_backend interface.
 *
 * Serves f16/bf16 inputs with f32 accumulation on sm_90 (the kernels are
 * sm_90a code: they run on compute capability 9.0 only), every transpose
 * pair, strided batches, alpha/beta, and the epilogues bias (along D's
 * rows in the lt view: a row-major D's columns), ReLU, GELU-erf and
 * GELU-tanh with gko's GELU math, C as a residual before the activation.
 * TMA needs 16-byte-aligned pointers, leading dimensions and batch strides
 * (and contiguous extents in multiples of 16 bytes): plans that cannot
 * promise that are NOT_SUPPORTED, and an AUTO plan (sm90_auto_first's rule,
 * AUTOTUNE, or where cuBLASLt and WMMA declined) keeps a cuBLASLt plan of
 * the same problem (WMMA's where cuBLASLt has none) for calls whose
 * pointers turn out less aligned.  A
 * misaligned bias runs in gko's epilogue pass.
 * Configuration (gemm_sm90.h): sm90_config's rule, or the autotune
 * variant (1 + configuration). */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gemm.h"
#include "../kernels/gemm_epilogue.h"
#include "../kernels/gemm_sm90.h"

typedef struct sm90_state {
  gk_sm90_problem kp;
  int cfg;
  int post;            /* bias and activation run in gko's pass after the product */
  size_t cutlass_ws;   /* bytes CUTLASS's workspace needs (0: none) */
  gko_gemm_plan_t fallback; /* AUTO plans: cuBLASLt's (or WMMA's) plan for misaligned pointers */
} sm90_state;

static const char *const kCfgName[GK_SM90_NCONFIGS] = {
    "128x256x64 tile, cluster 2x1, cooperative",
    "128x128x64 tile, cluster 1x2, ping-pong",
    "128x192x64 tile, cluster 2x1, cooperative",
};
static const int kCfgTileN[GK_SM90_NCONFIGS] = {256, 128, 192};

static const char *const kActName[4] = {"", " + ReLU", " + GELU-erf", " + GELU-tanh"};

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* The kernel's problem: the lt view (column-major) of the resolved one. */
static void sm90_problem_of(gko_handle_t h, const gk_gemm_problem *p, int fused,
                            gk_sm90_problem *kp) {
  memset(kp, 0, sizeof *kp);
  kp->ab_dtype = p->ab_dtype;
  kp->cd_dtype = p->cd_dtype;
  kp->opa = p->opa_l;
  kp->opb = p->opb_l;
  kp->act = fused ? p->epilogue >> 1 : 0;
  kp->m = p->ml;
  kp->n = p->nl;
  kp->k = p->k;
  kp->batch = p->batch;
  kp->lda = p->lda_l;
  kp->ldb = p->ldb_l;
  kp->ldc = p->ldc;
  kp->ldd = p->ldd;
  kp->stride_a = p->stride_a_l;
  kp->stride_b = p->stride_b_l;
  kp->stride_c = p->stride_c;
  kp->stride_d = p->stride_d;
  kp->stride_bias = p->stride_bias;
  if (p->batch <= 1) { /* one batch: strides TMA accepts, never used to address */
    kp->stride_a = kp->lda;
    kp->stride_b = kp->ldb;
    kp->stride_c = kp->ldc;
    kp->stride_d = kp->ldd;
    kp->stride_bias = 0;
  }
  kp->device = h->device;
  kp->sm_count = h->sm_count;
}

static int sm90_supports(gko_handle_t h, const gk_gemm_problem *p, char *why, size_t cap) {
  const char *no = NULL;
  char buf[160];
  if (!gk_sm90_built())
    no = "this build has no SM90 kernels (built without 90 in GKO_ARCHS, GKO_SM90=0, or with "
         "an nvcc that lacks sm_90a)";
  else if (h->cc != 90) {
    snprintf(buf, sizeof buf,
             "the kernels are sm_90a code, which runs on compute capability 9.0 only; this "
             "GPU is sm_%d",
             h->cc);
    no = buf;
  } else if (p->ab_dtype == GKO_DTYPE_F32 || gk_is_fp8(p->ab_dtype))
    no = "the kernels take f16 or bf16 inputs (8-bit ones: GKO_GEMM_BACKEND_CUBLASLT)";
  else if (gk_gemm_w8(p))
    no = "the kernels take one 16-bit type for A and B (weight-only FP8: "
         "GKO_GEMM_BACKEND_AUTO or WMMA)";
  else if (p->compute != GKO_GEMM_COMPUTE_DEFAULT)
    no = "the kernels accumulate in f32 only (GKO_GEMM_COMPUTE_DEFAULT)";
  else if (p->alignment < 16) {
    snprintf(buf, sizeof buf,
             "TMA needs 16-byte-aligned pointers, but GKO_GEMM_ATTR_ALIGNMENT promises %lld",
             (long long)p->alignment);
    no = buf;
  } else if (p->ml > INT_MAX || p->nl > INT_MAX || p->k > INT_MAX)
    no = "m, n and k must fit in 32 bits";
  else if (p->batch > 1 &&
           (p->stride_a == 0 || p->stride_b == 0 || p->stride_c == 0 || p->stride_d == 0))
    no = "a batch stride of 0 (an operand shared by every batch) is not a TMA layout";
  if (no && why) snprintf(why, cap, "GKO_GEMM_BACKEND_SM90: %s", no);
  return no == NULL;
}

/* The plan's own choice of configuration (docs/gemm.md, "The SM90
 * backend", measured on the H200): f32 D and INVARIANT plans take COOP_256
 * (the one built for f32 D); fewer 128 x 256 tiles than SMs take COOP_192
 * where its tiles still fit in one wave (more SMs busy, less work each),
 * else COOP_256, as does long k over two waves of 128 x 256 tiles; the rest
 * (short k, many tiles) PINGPONG. */
static int sm90_config(gko_handle_t h, const gk_gemm_problem *p) {
  if (p->cd_dtype == GKO_DTYPE_F32 || p->invariant > 0) return GK_SM90_COOP_256;
  const int64_t sms = h->sm_count > 0 ? h->sm_count : 1;
  const int64_t tiles256 = ceil_div(p->ml, 128) * ceil_div(p->nl, 256) * p->batch;
  const int64_t tiles192 = ceil_div(p->ml, 128) * ceil_div(p->nl, 192) * p->batch;
  if (tiles256 < sms) return tiles192 <= sms ? GK_SM90_COOP_192 : GK_SM90_COOP_256;
  if (p->k >= 2048 && tiles256 >= 2 * sms) return GK_SM90_COOP_256;
  return GK_SM90_PINGPONG;
}

static void sm90_describe(gko_gemm_plan_t plan, const sm90_state *st) {
  const gk_gemm_problem *p = &plan->p;
  const char *tn = p->ab_dtype == GKO_DTYPE_BF16 ? "bf16" : "f16";
  if (p->invariant > 0)
    GK_WHY(plan, "invariant (GKO_GEMM_ATTR_INVARIANT: one configuration whatever the shape, "
                 "no split-K); ");
  GK_WHY(plan,
         "CUTLASS %s sm90 kernel (TMA + wgmma, %s, f32 accumulate, warp-specialized "
         "persistent): %s; %lld x %lld tiles x %lld batches on %d SMs; ",
         gk_sm90_cutlass_version(), tn, kCfgName[st->cfg],
         (long long)ceil_div(p->ml, 128),
         (long long)ceil_div(p->nl, kCfgTileN[st->cfg]), (long long)p->batch,
         plan->handle->sm_count);
  if (p->swap) GK_WHY(plan, "row-major as D^T = op(B)^T op(A)^T; ");
  if (p->epilogue) {
    const char *bias = (p->epilogue & 1) ? "bias" : "";
    const char *act = (p->epilogue & 1) ? kActName[p->epilogue >> 1]
                                        : kActName[p->epilogue >> 1] + 3;
    if (st->post)
      GK_WHY(plan, "epilogue %s%s in gko's pass after the product (%s); ", bias, act,
             p->fusion == GKO_GEMM_FUSION_NEVER ? "GKO_GEMM_FUSION_NEVER"
                                                : "a column-major D's bias runs along rows");
    else
      GK_WHY(plan, "epilogue fused: %s%s%s; ", bias, act,
             (p->epilogue >> 1) >= 2 ? " (gko's GELU math)" : "");
  }
  if (st->fallback)
    GK_WHY(plan, "pointers less than 16-byte aligned at execute: %s's plan (%s); ",
           st->fallback->backend->name, st->fallback->why);
  GK_WHY(plan, "workspace %zu bytes", plan->ws_bytes);
}

static void sm90_destroy(gko_gemm_plan_t plan) {
  sm90_state *st = plan->state;
  if (st && st->fallback) gk_gemm_plan_free(st->fallback);
  free(st);
  plan->state = NULL;
}

static gko_status_t sm90_plan(gko_gemm_plan_t plan) {
  const gk_gemm_problem *p = &plan->p;
  gko_handle_t h = plan->handle;
  if (plan->variant > GK_SM90_NCONFIGS)
    return gk_fail(GKO_STATUS_NOT_SUPPORTED, "SM90: no variant %d", plan->variant);
  const int has_bias = p->epilogue & 1;
  if (has_bias && !p->bias_on_rows && p->fusion == GKO_GEMM_FUSION_REQUIRED)
    return gk_fail(GKO_STATUS_NOT_SUPPORTED,
                   "GKO_GEMM_FUSION_REQUIRED: the SM90 kernels fuse a bias along the lt "
                   "view's rows (a row-major D's columns), not a column-major D's; use "
                   "GKO_GEMM_FUSION_AUTO");
  /* TMA's rule for every stored matrix: leading dimension and (batched)
   * batch stride in 16-byte multiples; CUTLASS's can_implement checks the
   * contiguous extents only.  C is checked even when a call passes none. */
  const int64_t esab = (int64_t)gko_dtype_size(p->ab_dtype);
  const int64_t es = (int64_t)gko_dtype_size(p->cd_dtype);
  const int fuse_bias = has_bias && p->bias_on_rows && p->fusion != GKO_GEMM_FUSION_NEVER;
  const struct {
    const char *name;
    int64_t ld, stride, es;
  } mats[4] = {{"A", p->lda, p->stride_a, esab},
               {"B", p->ldb, p->stride_b, esab},
               {"C", p->ldc, p->stride_c, es},
               {"D", p->ldd, p->stride_d, es}};
  for (int i = 0; i < 4; i++) {
    const char *what = (mats[i].ld * mats[i].es) % 16 ? "leading dimension"
                       : (p->batch > 1 && (mats[i].stride * mats[i].es) % 16) ? "batch stride"
                                                                               : NULL;
    if (what)
      return gk_fail(GKO_STATUS_NOT_SUPPORTED,
                     "SM90: TMA needs each matrix's leading dimension and batch stride in "
                     "multiples of 16 bytes; %s's %s is %lld elements of %lld bytes",
                     mats[i].name, what, (long long)(what[0] == 'l' ? mats[i].ld : mats[i].stride),
                     (long long)mats[i].es);
  }
  if (fuse_bias && p->batch > 1 && (p->stride_bias * es) % 16)
    return gk_fail(GKO_STATUS_NOT_SUPPORTED,
                   "SM90: the fused bias is read in 16-byte pieces, but STRIDE_BIAS = %lld "
                   "elements of %lld bytes",
                   (long long)p->stride_bias, (long long)es);
  sm90_state *st = calloc(1, sizeof *st);
  if (!st) return gk_fail(GKO_STATUS_ALLOC_FAILED, "host allocation of the SM90 plan failed");
  st->post = p->epilogue && (p->fusion == GKO_GEMM_FUSION_NEVER || (has_bias && !p->bias_on_rows));
  sm90_problem_of(h, p, !st->post, &st->kp);
  st->cfg = plan->variant > 0 ? plan->variant - 1 : sm90_config(h, p);
  gko_status_t s = gk_sm90_setup(&st->kp, st->cfg, &st->cutlass_ws);
  if (s) {
    free(st);
    return s;
  }
  plan->state = st;
  size_t ws = st->cutlass_ws ? st->cutlass_ws + 255 : 0;
  if (p->backend == GKO_GEMM_BACKEND_AUTO) {
    /* cuBLASLt's plan, or WMMA's where cuBLASLt declines (a fused GELU-erf
     * under FUSION_REQUIRED); without either, misaligned calls are refused */
    static const gko_gemm_backend_t kFallback[2] = {GKO_GEMM_BACKEND_CUBLASLT,
                                                    GKO_GEMM_BACKEND_WMMA};
    gk_gemm_problem fp = *p;
    fp.autotune = 0;
    for (int i = 0; i < 2; i++) {
      fp.backend = kFallback[i];
      if (!(s = gk_gemm_plan_build(h, &fp, &st->fallback))) break;
      st->fallback = NULL;
      if (s != GKO_STATUS_NOT_SUPPORTED) {
        sm90_destroy(plan);
        return s;
      }
    }
    if (st->fallback && st->fallback->ws_bytes > ws) ws = st->fallback->ws_bytes;
  }
  plan->ws_bytes = ws;
  if (p->max_workspace >= 0 && (int64_t)ws > p->max_workspace) {
    sm90_destroy(plan);
    return gk_fail(GKO_STATUS_NOT_SUPPORTED,
                   "SM90: the plan needs %zu bytes of workspace, more than "
                   "GKO_GEMM_ATTR_MAX_WORKSPACE = %lld",
                   ws, (long long)p->max_workspace);
  }
  sm90_describe(plan, st);
  return GKO_STATUS_SUCCESS;
}

static int aligned16(const void *q) { return ((uintptr_t)q & 15) == 0; }

static gko_status_t sm90_execute(gko_gemm_plan_t plan, const gk_gemm_args *x) {
  const sm90_state *st = plan->state;
  const gk_gemm_problem *p = &plan->p;
  if (!st) return gk_fail(GKO_STATUS_INTERNAL, "SM90 execute without a kernel configuration");
  const void *const ptrs[4] = {x->a, x->b, x->c, x->d};
  static const char *const names[4] = {"a", "b", "c", "d"};
  for (int i = 0; i < 4; i++) {
    if (!ptrs[i] || aligned16(ptrs[i])) continue;
    if (st->fallback) return st->fallback->backend->execute(st->fallback, x);
    return gk_fail(GKO_STATUS_INVALID_VALUE,
                   "GKO_GEMM_BACKEND_SM90: %s = %p is not 16-byte aligned, which TMA needs "
                   "(re-plan with GKO_GEMM_BACKEND_AUTO)",
                   names[i], ptrs[i]);
  }
  /* a fused bias less than 16-byte aligned runs in gko's pass instead, as
   * gko_gemm_execute documents (FUSION_REQUIRED: refused) */
  int post = st->post;
  gk_sm90_problem kp_call;
  const gk_sm90_problem *kp = &st->kp;
  if (!post && x->bias && !aligned16(x->bias)) {
    if (p->fusion == GKO_GEMM_FUSION_REQUIRED)
      return gk_fail(GKO_STATUS_INVALID_VALUE,
                     "GKO_GEMM_FUSION_REQUIRED: the fused bias must be 16-byte aligned, but "
                     "bias = %p",
                     x->bias);
    kp_call = st->kp;
    kp_call.act = 0;
    kp = &kp_call;
    post = 1;
  }
  void *ws = NULL;
  if (st->cutlass_ws) ws = (void *)(((uintptr_t)x->ws + 255) & ~(uintptr_t)255);
  gko_status_t s = gk_sm90_launch(kp, st->cfg, x->alpha, x->beta, x->a_l, x->b_l, x->c, x->d,
                                  post ? NULL : x->bias, ws, x->stream);
  if (s || !post) return s;
  return gk_gemm_epilogue_launch(p->cd_dtype, p->epilogue >> 1, p->ml, p->nl, p->batch, x->d,
                                 p->ldd, p->stride_d, x->d, p->ldd, p->stride_d, 1.0f,
                                 (p->epilogue & 1) ? x->bias : NULL, p->stride_bias,
                                 p->bias_on_rows, x->stream);
}

/* AUTO's measured rules (docs/gemm.md "AUTO's rules"), for an FFN's
 * up-projection: 16-bit D of the inputs' type, one batch, W with at least 4k
 * rows, m n >= 2^23, a bias (if any) per output feature, and
 *  - GELU-erf fused, x W^T, 768 <= k <= 1280: faster than cuBLASLt plus
 *    gko's pass in f16 and bf16 (H200, 2026-12-04);
 *  - no activation or ReLU, x W^T, 384 <= k <= 1280, with at least 8192
 *    tokens, or k <= 768 and m n >= 3 * 2^22; the plain GEMM also with
 *    B [k, n] where k <= 1024: faster than cuBLASLt with its own fused
 *    epilogue, plain, bias, ReLU and residual alike (H100, 2026-12-07).
 * Fewer tokens at longer k, narrower W (qkv), k = 2048, GELU-tanh (which
 * cuBLASLt fuses) and GELU-erf with B [k, n] did not win. */
static int sm90_auto_first(gko_handle_t h, const gk_gemm_problem *p) {
  (void)h;
  const int act = p->epilogue >> 1;
  const int64_t outputs = p->ml * p->nl; /* ml: W's rows (features), nl: tokens */
  if (p->cd_dtype != p->ab_dtype || p->batch != 1) return 0;
  if ((p->epilogue & 1) && !p->bias_on_rows) return 0; /* would run in gko's pass */
  if (p->opb_l != 0 || p->ml < 4 * p->k || outputs < ((int64_t)1 << 23)) return 0;
  const int xwt = p->opa_l == 1; /* W [n, k]; else B [k, n] */
  if (act == 2)
    return xwt && p->fusion != GKO_GEMM_FUSION_NEVER && p->k >= 768 && p->k <= 1280;
  if (act == 3 || (!xwt && (p->epilogue != 0 || p->k > 1024))) return 0;
  return p->k >= 384 && p->k <= 1280 &&
         (p->nl >= 8192 || (p->k <= 768 && outputs >= ((int64_t)3 << 22)));
}

const gk_gemm_backend gk_gemm_sm90_backend = {
    .id = GKO_GEMM_BACKEND_SM90,
    .name = "SM90",
    .tag = "sm90",
    .max_variant = GK_SM90_NCONFIGS, /* 1 + configuration (gemm_sm90.h) */
    .plans_empty = 0,
    .supports = sm90_supports,
    .auto_first = sm90_auto_first,
    .auto_first_why = "AUTO: SM90 before cuBLASLt (its rules for an FFN up-projection: "
                      "16-bit D, one batch, W of >= 4k rows, m n >= 2^23; GELU-erf fused "
                      "with x W^T and 768 <= k <= 1280, or no activation or ReLU with "
                      "384 <= k <= 1280 and >= 8192 tokens or k <= 768 and m n >= 3 * 2^22; "
                      "measured faster than cuBLASLt, docs/gemm.md)",
    .plan = sm90_plan,
    .execute = sm90_execute,
    .destroy = sm90_destroy,
};
