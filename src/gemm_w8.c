/* gemm_w8.c -- weight-only FP8 inside the WMMA backend: f16/bf16
 * activations A (at most 16 rows: decode) against 8-bit weights B, both
 * with k contiguous (row-major x W^T: TRANSA = N, TRANSB = T), on gko's
 * kernel in kernels/gemm_w8.cu.  cuBLASLt has no 16-bit x 8-bit kernel on
 * Hopper; dequantizing B in the kernel streams half the bytes of a 16-bit
 * weight.  scale_b dequantizes (one factor, or one per column of op(B):
 * per output channel); alpha, beta * C, bias and the activation as for
 * every GEMM. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../kernels/gemm_w8.h"
#include "gemm.h"

typedef struct w8_state {
  gk_w8_problem wp;
  gk_w8_config cfg;
  size_t partials;
} w8_state;

int gk_w8_supports(gko_handle_t h, const gk_gemm_problem *p, char *why, size_t cap) {
  char buf[400];
  const char *no = NULL;
  if (!gk_w8_device_ok(h->cc, buf, sizeof buf)) {
    no = buf;
  } else if (p->compute != GKO_GEMM_COMPUTE_DEFAULT) {
    no = "it accumulates in f32 (GKO_GEMM_COMPUTE_DEFAULT)";
  } else if (p->m > 16) {
    snprintf(buf, sizeof buf,
             "it serves decode, m <= 16 rows of A against the 8-bit B, but m = %lld (quantize "
             "A for an 8-bit GEMM, or dequantize B: gko_dequantize)",
             (long long)p->m);
    no = buf;
  } else if (!p->opa_l || p->opb_l) {
    snprintf(buf, sizeof buf,
             "both operands must be stored with k contiguous: %s needs TRANSA = %s and TRANSB = "
             "%s (D = A B^T with B stored n x k, nn.Linear's weight), this descriptor has "
             "TRANSA = %s, TRANSB = %s",
             p->swap ? "row-major" : "column-major", p->swap ? "N" : "T", p->swap ? "T" : "N",
             p->transa ? "T" : "N", p->transb ? "T" : "N");
    no = buf;
  } else if (p->invariant > 0) {
    no = "it has no GKO_GEMM_ATTR_INVARIANT mode";
  }
  if (no && why)
    snprintf(why, cap, "weight-only FP8 (%s x %s): %s", gk_dtype_name(p->ab_dtype),
             gk_dtype_name(p->b_dtype), no);
  return no == NULL;
}

/* The kernel's terms (kernels/gemm_w8.h) from the lt view: the 8-bit B is
 * W, whose rows are D's columns; A is X. */
static void w8_problem_of(const gk_gemm_problem *p, gk_w8_problem *wp) {
  memset(wp, 0, sizeof *wp);
  wp->x_dtype = p->ab_dtype;
  wp->w_dtype = p->b_dtype;
  wp->cd_dtype = p->cd_dtype;
  wp->act = p->epilogue >> 1;
  wp->has_bias = p->epilogue & 1;
  wp->scale_per_j = p->scale_b_mode == GKO_SCALE_ROWWISE;
  wp->nb = p->n;
  wp->ns = p->m;
  wp->k = p->k;
  wp->batch = p->batch;
  wp->swj = p->ldb;
  wp->sxi = p->lda;
  wp->bw = p->stride_b;
  wp->bx = p->stride_a;
  /* D (m x n): row-major (i, j) at i * ldd + j, column-major at i + j * ldd */
  const int row = p->layout == GKO_LAYOUT_ROW_MAJOR;
  wp->sdj = row ? 1 : p->ldd;
  wp->sdi = row ? p->ldd : 1;
  wp->scj = row ? 1 : p->ldc;
  wp->sci = row ? p->ldc : 1;
  wp->bc = p->stride_c;
  wp->bd = p->stride_d;
  wp->bbias = p->stride_bias;
  wp->bias_on_j = 1; /* the bias is per column of D: per row of W */
}

gko_status_t gk_w8_plan(gko_gemm_plan_t plan) {
  const gk_gemm_problem *p = &plan->p;
  gko_handle_t h = plan->handle;
  if (plan->variant > 0)
    return gk_fail(GKO_STATUS_NOT_SUPPORTED, "weight-only FP8: no variant %d", plan->variant);
  w8_state *st = calloc(1, sizeof *st);
  if (!st)
    return gk_fail(GKO_STATUS_ALLOC_FAILED, "host allocation of the GEMM plan failed");
  w8_problem_of(p, &st->wp);
  const int sms = h->sm_count > 0 ? h->sm_count : 1;
  gko_status_t s = gk_w8_config_for(&st->wp, &st->cfg, h->cc, sms);
  if (s) {
    free(st);
    return s;
  }
  gk_w8_config *cfg = &st->cfg;
  cfg->pdl = cfg->pdl_ok && (p->static_ops & GKO_GEMM_STATIC_B);
  st->partials = gk_w8_partials_bytes(&st->wp, cfg);
  if (st->partials && p->max_workspace >= 0 && (int64_t)(st->partials + 255) > p->max_workspace) {
    cfg->splits = 1;
    cfg->kchunk = p->k;
    st->partials = 0;
    GK_WHY(plan, "(split-K partials exceed GKO_GEMM_ATTR_MAX_WORKSPACE: one split) ");
  }
  plan->state = st;
  plan->ws_bytes = st->partials ? st->partials + 255 : 0;
  const char *tn = p->ab_dtype == GKO_DTYPE_BF16 ? "bf16" : "f16";
  const char *sc = st->wp.scale_per_j ? "per column of op(B)" : "per tensor";
  GK_WHY(plan,
         "weight-only FP8 decode kernel (m = %lld <= 16): the %lld x %lld %s B streamed once "
         "from 16-byte loads, widened to %s in registers, into mma.sync m16n8k16 (f32 "
         "accumulate); 16 of its rows per %d warp(s), each reading a contiguous k range in "
         "64-wide steps (through a cp.async ring where the pointers are 16-byte aligned), "
         "summed in warp order; scale_b %s; ",
         (long long)p->m, (long long)p->n, (long long)p->k, gk_dtype_name(p->b_dtype), tn, cfg->kw,
         sc);
  if (cfg->splits > 1)
    GK_WHY(plan,
           "split-K: k split %d ways (%lld each), f32 partials summed in split order by a "
           "second kernel (deterministic); ",
           cfg->splits, (long long)cfg->kchunk);
  if (cfg->bulk)
    GK_WHY(plan,
           "where A and B are 16-byte aligned in every row and batch: the sm_90 kernel whose "
           "copy warp streams B and A by cp.async.bulk into a shared-memory ring, its other "
           "warps widening and multiplying, %lld blocks taking the %lld tiles of 16 rows in "
           "turn; otherwise ",
           (long long)cfg->bulk_grid, (long long)((p->n + 15) / 16 * p->batch));
  GK_WHY(plan, "%lld blocks of %d tile(s), %d per SM resident, %d SMs; ",
         (long long)(((p->n + 15) / 16 + cfg->per - 1) / cfg->per * cfg->splits * p->batch),
         cfg->per, cfg->blocks_per_sm, sms);
  if (cfg->pdl)
    GK_WHY(plan, "programmatic dependent launch (GKO_GEMM_ATTR_STATIC_OPERANDS: B static): "
                 "the first loads of B are issued before the kernel ahead finishes; ");
  if (p->epilogue)
    GK_WHY(plan, "epilogue fused: %s%s%s; ", (p->epilogue & 1) ? "bias" : "",
           (p->epilogue & 1) && (p->epilogue >> 1) ? " + " : "",
           (const char *[]){"", "ReLU", "GELU-erf", "GELU-tanh"}[p->epilogue >> 1]);
  GK_WHY(plan, "workspace %zu bytes", plan->ws_bytes);
  return GKO_STATUS_SUCCESS;
}

gko_status_t gk_w8_execute(gko_gemm_plan_t plan, const gk_gemm_args *x) {
  const w8_state *st = plan->state;
  if (!st)
    return gk_fail(GKO_STATUS_INTERNAL, "weight-only FP8 execute without a plan");
  void *ws = NULL;
  if (st->partials)
    ws = (void *)(((uintptr_t)x->ws + 255) & ~(uintptr_t)255);
  return gk_w8_launch(&st->wp, &st->cfg, x->alpha, x->beta, x->scale_b, x->b, x->a, x->c, x->d,
                      x->bias, ws, x->stream);
}
