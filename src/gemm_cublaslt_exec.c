/* gemm_cublaslt_exec.c -- the cuBLASLt backend's execute: the real
 * pointers' alignments are compared with the plan's; a less aligned pointer
 * (or a bias below 16 bytes) selects another configuration whose algorithm
 * comes from the cache or one more heuristic query (host work,
 * capture-safe).  Then: the padding copies (gko kernel), cublasLtMatmul,
 * and gko's epilogue pass if the plan needs one. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include "gemm_cublaslt.h"
#include "../kernels/gemm_epilogue.h"
#include "../kernels/gemm_pad.h"

/* alpha and beta for CUBLAS_COMPUTE_16F: f16, rounded to nearest even. */
static uint16_t lt_float_to_half(float f) {
  if (isnan(f)) return 0x7e00;
  uint16_t sign = signbit(f) ? 0x8000 : 0;
  double a = fabs((double)f);
  if (a >= 65520.0) return sign | 0x7c00;
  if (a < 0x1p-14) return sign | (uint16_t)nearbyint(a * 0x1p24); /* subnormal (or 0x400) */
  int e;
  frexp(a, &e);
  int ex = e - 1; /* a in [2^ex, 2^(ex+1)) */
  double q = nearbyint(ldexp(a, 10 - ex));
  if (q >= 2048) {
    q /= 2;
    ex++;
  }
  if (ex > 15) return sign | 0x7c00;
  return sign | (uint16_t)(((ex + 15) << 10) | ((uint32_t)q - 1024));
}

gko_status_t gk_lt_execute(gko_gemm_plan_t plan, const gk_gemm_args *x) {
  const lt_state *st = plan->state;
  const gk_gemm_problem *p = &plan->p;
  gko_handle_t h = plan->handle;
  lt_config cfg = st->cfg;
  const cublasLtMatmulAlgo_t *algo = &st->algo;
  lt_value val;
  int post_bias = st->post_bias, post_act = st->post_act;
  const int act = p->epilogue >> 1;

  /* real alignments against the plan's */
  if (!(cfg.padded & 1)) {
    int32_t a = lt_batched_align(gk_gemm_ptr_align(x->a_l), st->esab, p->stride_a_l, p->batch);
    if (a < cfg.align_a) cfg.align_a = a;
  }
  if (!(cfg.padded & 2)) {
    int32_t b = lt_batched_align(gk_gemm_ptr_align(x->b_l), st->esab, p->stride_b_l, p->batch);
    if (b < cfg.align_b) cfg.align_b = b;
  }
  int32_t dal = lt_batched_align(gk_gemm_ptr_align(x->d), st->escd, p->stride_d, p->batch);
  if (dal < cfg.align_d) cfg.align_d = dal;
  const void *cptr;
  if (x->beta == 0.0f) { /* never read C: describe and pass D instead */
    cfg.c_is_d = !st->fp8d;
    cfg.align_c = st->fp8d ? 16 : cfg.align_d;
    /* an 8-bit D keeps its 16-bit C layout, and cuBLASLt refuses C == D
     * with different layouts: A_l stands in (never read either) */
    cptr = st->fp8d ? x->a_l : x->d;
  } else {
    int32_t c = lt_batched_align(gk_gemm_ptr_align(x->c), st->escd,
                                 cfg.c_is_d ? p->stride_d : p->stride_c, p->batch);
    if (c < cfg.align_c) cfg.align_c = c;
    cptr = x->c;
  }
  if (cfg.epilogue & LT_EP_BIAS_BIT) {
    int32_t bal =
        lt_batched_align(gk_gemm_ptr_align(x->bias), st->esbias, p->stride_bias, p->batch);
    if (bal < 16) {
      if (p->fusion == GKO_GEMM_FUSION_REQUIRED || st->fp8d)
        return gk_fail(GKO_STATUS_INVALID_VALUE,
                       "bias = %p is %d-byte aligned (with STRIDE_BIAS = %lld): the fused "
                       "bias epilogue needs 16 bytes and the plan has %s",
                       x->bias, (int)bal, (long long)p->stride_bias,
                       st->fp8d ? "an 8-bit D (gko's pass cannot follow the quantization)"
                                : "GKO_GEMM_FUSION_REQUIRED");
      cfg.epilogue = CUBLASLT_EPILOGUE_DEFAULT;
      cfg.align_bias = 0;
      post_bias = 1;
      post_act = act;
    } else if (bal < cfg.align_bias) {
      cfg.align_bias = bal;
    }
  }
  /* workspace: [padded A_l][padded B_l][cuBLASLt], base aligned to 256 */
  char *base = NULL;
  size_t avail = 0;
  if (x->ws && x->ws_bytes > 0) {
    uintptr_t u = ((uintptr_t)x->ws + 255) & ~(uintptr_t)255;
    size_t skip = u - (uintptr_t)x->ws;
    if (skip < x->ws_bytes) {
      base = (char *)u;
      avail = x->ws_bytes - skip;
    }
  }
  if (memcmp(&cfg, &st->cfg, sizeof cfg) != 0) {
    /* another algorithm, within the cuBLASLt workspace actually passed */
    uint64_t lt_avail = avail > st->off_ws ? (uint64_t)(avail - st->off_ws) : 0;
    if (lt_avail < cfg.max_ws) cfg.max_ws = lt_avail;
    /* host-only lookup or query; relaxed mode keeps a capture valid */
    enum cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    cudaThreadExchangeStreamCaptureMode(&mode);
    gko_status_t s = gk_lt_query(plan, &cfg, &val);
    cudaThreadExchangeStreamCaptureMode(&mode);
    if (s) return s;
    algo = &val.algo[0];
    if (!val.found)
      return gk_fail(GKO_STATUS_INVALID_VALUE,
                     "the pointers are less aligned than the plan's promise (A/B/C/D/bias: "
                     "%d/%d/%d/%d/%d bytes in cuBLASLt's operand order; planned %d/%d/%d/%d/%d) "
                     "and cuBLASLt has no algorithm for them within the plan's workspace: "
                     "create the plan with a lower GKO_GEMM_ATTR_ALIGNMENT",
                     cfg.align_a, cfg.align_b, cfg.align_c, cfg.align_d, cfg.align_bias,
                     st->cfg.align_a, st->cfg.align_b, st->cfg.align_c, st->cfg.align_d,
                     st->cfg.align_bias);
  }

  const void *a_l = x->a_l, *b_l = x->b_l;
  gko_status_t s;
  const int keep = (cfg.padded & LT_KEEP_K) != 0;
  const lt_operand *oa = keep ? &st->pak : &st->pa, *ob = keep ? &st->pbk : &st->pb;
  if (cfg.padded & 1) {
    s = gk_gemm_pad_launch(st->esab, oa->rows, oa->cols, oa->batch_pad, x->a_l, oa->ld,
                           oa->stride, base, oa->ld_pad, oa->cols_pad, oa->stride_pad,
                           x->stream);
    if (s) return s;
    a_l = base;
  }
  if (cfg.padded & 2) {
    s = gk_gemm_pad_launch(st->esab, ob->rows, ob->cols, ob->batch_pad, x->b_l, ob->ld,
                           ob->stride, base + st->off_b, ob->ld_pad, ob->cols_pad,
                           ob->stride_pad, x->stream);
    if (s) return s;
    b_l = base + st->off_b;
  }
  void *lt_ws = NULL;
  size_t lt_ws_bytes = 0;
  if (base && avail > st->off_ws) {
    lt_ws = base + st->off_ws;
    lt_ws_bytes = avail - st->off_ws;
  }

  /* the plan's descriptor when nothing per call goes into it (execute only
   * reads it, so concurrent executes may share it); else one on the stack */
  cublasLtMatmulDescOpaque_t od_call;
  const cublasLtMatmulDescOpaque_t *od = &st->od;
  cublasStatus_t cs;
  const lt_scales sc = {p->swap ? x->scale_b : x->scale_a, p->swap ? x->scale_a : x->scale_b,
                        x->scale_d, x->amax_d};
  const int any_scale = sc.a_l || sc.b_l || sc.d || sc.amax;
  if (cfg.epilogue != st->cfg.epilogue || (cfg.epilogue & LT_EP_BIAS_BIT) || any_scale) {
    if ((cs = gk_lt_desc(&od_call, st, p, cfg.epilogue, x->bias, any_scale ? &sc : NULL)))
      return gk_lt_fail(cs, "cublasLtMatmulDescInit/SetAttribute");
    od = &od_call;
  }
  const cublasLtMatrixLayoutOpaque_t *la, *lb, *lc;
  lt_layouts(st, &cfg, &la, &lb, &lc);
  uint16_t ah = 0, bh = 0;
  const void *alpha = &x->alpha, *beta = &x->beta;
  if (st->scale == CUDA_R_16F) {
    ah = lt_float_to_half(x->alpha);
    bh = lt_float_to_half(x->beta);
    alpha = &ah;
    beta = &bh;
  }
  cs = cublasLtMatmul((cublasLtHandle_t)gk_gemm_state_lt(h->gemm), (cublasLtMatmulDesc_t)od,
                      alpha, a_l, (cublasLtMatrixLayout_t)la, b_l, (cublasLtMatrixLayout_t)lb,
                      beta, cptr, (cublasLtMatrixLayout_t)lc, x->d,
                      (cublasLtMatrixLayout_t)&st->ld, algo, lt_ws, lt_ws_bytes,
                      (cudaStream_t)x->stream);
  if (cs) return gk_lt_fail(cs, "cublasLtMatmul");

  if (post_bias || post_act) {
    const int contiguous =
        p->ldd == p->ml && (p->batch == 1 || p->stride_d == p->ml * p->nl);
    if (!post_bias && (post_act == 2 || post_act == 3) && contiguous) /* GELU erf | tanh */
      return gk_gelu_launch(h->gelu_occ, 0, post_act == 2 ? GKO_GELU_ERF : GKO_GELU_TANH,
                            p->cd_dtype, p->ml * p->nl * p->batch, x->d, NULL, x->d,
                            x->stream);
    return gk_gemm_epilogue_launch(p->cd_dtype, post_act, p->ml, p->nl, p->batch, x->d, p->ldd,
                                   p->stride_d, x->d, p->ldd, p->stride_d, 1.0f,
                                   post_bias ? x->bias : NULL, p->stride_bias, p->bias_on_rows,
                                   x->stream);
  }
  return GKO_STATUS_SUCCESS;
}
