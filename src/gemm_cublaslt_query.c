/* gemm_cublaslt_query.c -- the cuBLASLt backend's questions to cuBLASLt:
 * matmul descriptors and matrix layouts, and the heuristic query for a
 * configuration with MIN_ALIGNMENT preferences from the caller's alignment
 * promise (the heuristic assumes 256 bytes otherwise) and a stand-in bias
 * pointer of the promised alignment (the heuristic reads the pointer value
 * to infer its alignment).  Answers, negative ones too, are cached in the
 * handle keyed by everything that determines them.  Invariant plans ask
 * about a reference problem instead (below). */
#include <stdint.h>
#include <string.h>

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include "gemm_cublaslt.h"

gko_status_t gk_lt_fail(cublasStatus_t cs, const char *what) {
  gko_status_t s;
  switch (cs) {
    case CUBLAS_STATUS_ALLOC_FAILED: s = GKO_STATUS_ALLOC_FAILED; break;
    case CUBLAS_STATUS_NOT_SUPPORTED:
    case CUBLAS_STATUS_ARCH_MISMATCH:
    case CUBLAS_STATUS_LICENSE_ERROR:
    case CUBLAS_STATUS_INVALID_VALUE: s = GKO_STATUS_NOT_SUPPORTED; break;
    case CUBLAS_STATUS_EXECUTION_FAILED: {
      cudaError_t e = cudaPeekAtLastError(); /* does not clear it */
      if (e != cudaSuccess) return gk_cuda_fail(e, what);
      s = GKO_STATUS_CUDA_ERROR;
      break;
    }
    case CUBLAS_STATUS_MAPPING_ERROR: s = GKO_STATUS_CUDA_ERROR; break;
    default: s = GKO_STATUS_INTERNAL; break;
  }
  return gk_fail(s, "%s failed: %s: %s", what, cublasLtGetStatusName(cs),
                 cublasLtGetStatusString(cs));
}

cublasStatus_t gk_lt_layout(cublasLtMatrixLayoutOpaque_t *l, cudaDataType_t t, int64_t rows,
                            int64_t cols, int64_t ld, int64_t batch, int64_t stride) {
  cublasStatus_t cs = cublasLtMatrixLayoutInit(l, t, (uint64_t)rows, (uint64_t)cols, ld);
  if (cs != CUBLAS_STATUS_SUCCESS || batch <= 1) return cs;
  int32_t b = (int32_t)batch;
  cs = cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &b, sizeof b);
  if (cs != CUBLAS_STATUS_SUCCESS) return cs;
  return cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                          &stride, sizeof stride);
}

/* The 8-bit attributes: fast accumulation, the factors' modes and
 * pointers, the bias type of an 8-bit D. */
static cublasStatus_t lt_desc_fp8(cublasLtMatmulDescOpaque_t *od, const lt_state *st,
                                  const gk_gemm_problem *p, uint32_t ep, const lt_scales *sc) {
  cublasStatus_t cs = CUBLAS_STATUS_SUCCESS;
  int8_t fast = p->compute == GKO_GEMM_COMPUTE_FP8_FAST_ACCUMULATE;
  const int32_t outer = CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F;
  if (fast)
    cs = cublasLtMatmulDescSetAttribute(od, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast, sizeof fast);
  if (!cs && st->mode_a)
    cs = cublasLtMatmulDescSetAttribute(od, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, &outer,
                                        sizeof outer);
  if (!cs && st->mode_b)
    cs = cublasLtMatmulDescSetAttribute(od, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, &outer,
                                        sizeof outer);
  if (!cs && (ep & LT_EP_BIAS_BIT) && st->biast != st->cd) {
    int32_t bt = (int32_t)st->biast;
    cs = cublasLtMatmulDescSetAttribute(od, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bt, sizeof bt);
  }
  if (cs || !sc) return cs;
  const struct {
    cublasLtMatmulDescAttributes_t attr;
    const void *ptr;
  } ptrs[4] = {{CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, sc->a_l},
               {CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, sc->b_l},
               {CUBLASLT_MATMUL_DESC_D_SCALE_POINTER, sc->d},
               {CUBLASLT_MATMUL_DESC_AMAX_D_POINTER, sc->amax}};
  for (int i = 0; i < 4 && !cs; i++)
    if (ptrs[i].ptr)
      cs = cublasLtMatmulDescSetAttribute(od, ptrs[i].attr, &ptrs[i].ptr, sizeof ptrs[i].ptr);
  return cs;
}

cublasStatus_t gk_lt_desc(cublasLtMatmulDescOpaque_t *od, const lt_state *st,
                          const gk_gemm_problem *p, int32_t epilogue, const void *bias,
                          const lt_scales *sc) {
  cublasStatus_t cs = cublasLtMatmulDescInit(od, st->compute, st->scale);
  if (cs != CUBLAS_STATUS_SUCCESS) return cs;
  int32_t ta = p->opa_l ? CUBLAS_OP_T : CUBLAS_OP_N, tb = p->opb_l ? CUBLAS_OP_T : CUBLAS_OP_N;
  uint32_t ep = (uint32_t)epilogue;
  if ((cs = cublasLtMatmulDescSetAttribute(od, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta)) ||
      (cs = cublasLtMatmulDescSetAttribute(od, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb)))
    return cs;
  if (st->fp8 && (cs = lt_desc_fp8(od, st, p, ep, sc))) return cs;
  if (ep == CUBLASLT_EPILOGUE_DEFAULT) return CUBLAS_STATUS_SUCCESS;
  if ((cs = cublasLtMatmulDescSetAttribute(od, CUBLASLT_MATMUL_DESC_EPILOGUE, &ep, sizeof ep)))
    return cs;
  if (ep & LT_EP_BIAS_BIT) {
    if ((cs = cublasLtMatmulDescSetAttribute(od, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
                                             sizeof bias)))
      return cs;
    if (p->batch > 1) {
      int64_t sb = p->stride_bias;
      cs = cublasLtMatmulDescSetAttribute(od, CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE, &sb,
                                          sizeof sb);
    }
  }
  return cs;
}

/* Stand-ins for the 8-bit factors' pointers of a configuration (the
 * heuristic sees which are set, never reads them); NULL without 8-bit
 * inputs. */
static const lt_scales *lt_fake_scales(const lt_state *st, const lt_config *cfg,
                                       lt_scales *f) {
  if (!st->fp8) return NULL;
  const void *fake = (const void *)(uintptr_t)256;
  f->a_l = fake;
  f->b_l = fake;
  f->d = st->fp8d ? fake : NULL;
  f->amax = cfg->amax ? (void *)(uintptr_t)256 : NULL;
  return f;
}

/* The cache key of a configuration: the sizes and layouts it uses. */
static void lt_key_of(const lt_state *st, const gk_gemm_problem *p, const lt_config *cfg,
                      lt_key *key) {
  const int keep = (cfg->padded & LT_KEEP_K) != 0;
  const lt_operand *oa = keep ? &st->pak : &st->pa, *ob = keep ? &st->pbk : &st->pb;
  memset(key, 0, sizeof *key);
  key->tag = (int32_t)sizeof *key;
  key->compute = st->compute;
  key->scale = st->scale;
  key->ab = st->ab;
  key->cd = st->cd;
  key->opa = p->opa_l;
  key->opb = p->opb_l;
  key->epilogue = cfg->epilogue;
  key->batch = (int32_t)p->batch;
  key->align_a = cfg->align_a;
  key->align_b = cfg->align_b;
  key->align_c = cfg->align_c;
  key->align_d = cfg->align_d;
  key->align_bias = cfg->align_bias;
  key->bt = st->bt;
  key->ct = st->ct;
  key->biast = st->biast;
  key->mode_a = st->mode_a;
  key->mode_b = st->mode_b;
  key->fast = p->compute == GKO_GEMM_COMPUTE_FP8_FAST_ACCUMULATE;
  key->amax = cfg->amax;
  key->ml = p->ml;
  key->nl = p->nl;
  key->k = (cfg->padded & 3) && !keep ? st->k_pad : p->k;
  key->lda = (cfg->padded & 1) ? oa->ld_pad : p->lda_l;
  key->ldb = (cfg->padded & 2) ? ob->ld_pad : p->ldb_l;
  key->ldc = cfg->c_is_d ? p->ldd : p->ldc;
  key->ldd = p->ldd;
  key->sa = (cfg->padded & 1) ? oa->stride_pad : p->stride_a_l;
  key->sb = (cfg->padded & 2) ? ob->stride_pad : p->stride_b_l;
  key->sc = cfg->c_is_d ? p->stride_d : p->stride_c;
  key->sd = p->stride_d;
  key->sbias = (cfg->epilogue & LT_EP_BIAS_BIT) ? p->stride_bias : 0;
  key->max_ws = cfg->max_ws;
  if (p->invariant > 0) { /* GKO_GEMM_ATTR_INVARIANT: the reference problem */
    key->tag = -key->tag;  /* and no split-K: never the same entry as a plain query */
    key->batch = 1;
    key->nl = p->invariant;
    key->sa = key->sb = key->sc = key->sd = key->sbias = 0;
  }
}

/* ---- GKO_GEMM_ATTR_INVARIANT ------------------------------------------------------ */
/* (added for the convolution's chunking, src/conv_plan.c; kept apart from the
 * rest of the backend.)  The heuristic is asked about a reference problem
 * -- one batch, nl = R (D's lines in the lt view) -- with split-K
 * reductions excluded, so every plan that shares the reference gets the
 * same ranked list; lt_invariant_accept then keeps, in that order, the
 * algorithms cuBLASLt accepts for the plan's real problem. */

/* The reference problem's layouts (no padded copies in invariant plans;
 * B_l is k x nl, op N: checked by gk_gemm_resolve). */
static cublasStatus_t lt_invariant_layouts(const lt_state *st, const gk_gemm_problem *p,
                                           const lt_config *cfg,
                                           cublasLtMatrixLayoutOpaque_t *ra,
                                           cublasLtMatrixLayoutOpaque_t *rb,
                                           cublasLtMatrixLayoutOpaque_t *rc,
                                           cublasLtMatrixLayoutOpaque_t *rd) {
  const int64_t ar = p->opa_l ? p->k : p->ml, ac = p->opa_l ? p->ml : p->k;
  cublasStatus_t cs;
  if ((cs = gk_lt_layout(ra, st->ab, ar, ac, p->lda_l, 1, 0)) ||
      (cs = gk_lt_layout(rb, st->bt, p->k, p->invariant, p->ldb_l, 1, 0)) ||
      (cs = gk_lt_layout(rc, cfg->c_is_d ? st->cd : st->ct, p->ml, p->invariant,
                         cfg->c_is_d ? p->ldd : p->ldc, 1, 0)))
    return cs;
  return gk_lt_layout(rd, st->cd, p->ml, p->invariant, p->ldd, 1, 0);
}

/* Keeps, in the heuristic's order, the algorithms of `v` (the reference's
 * answer) that cublasLtMatmulAlgoCheck accepts for the real problem within
 * cfg->max_ws, with the workspace the real problem needs; rank[i] is the
 * reference rank of the i-th kept one. */
static gko_status_t lt_invariant_accept(gko_gemm_plan_t plan, const lt_config *cfg,
                                        const cublasLtMatrixLayoutOpaque_t *la,
                                        const cublasLtMatrixLayoutOpaque_t *lb,
                                        const cublasLtMatrixLayoutOpaque_t *lc,
                                        lt_value *v, int32_t *rank) {
  const lt_state *st = plan->state;
  const gk_gemm_problem *p = &plan->p;
  if (!v->found) return GKO_STATUS_SUCCESS;
  cublasLtHandle_t lt = (cublasLtHandle_t)gk_gemm_state_lt(plan->handle->gemm);
  cublasLtMatmulDescOpaque_t od;
  const void *fake_bias = (const void *)(uintptr_t)(cfg->align_bias ? cfg->align_bias : 256);
  lt_scales fake;
  cublasStatus_t cs =
      gk_lt_desc(&od, st, p, cfg->epilogue, fake_bias, lt_fake_scales(st, cfg, &fake));
  if (cs) return gk_lt_fail(cs, "cublasLtMatmulDescInit/SetAttribute");
  int c = 0;
  for (int i = 0; i < v->count; i++) {
    cublasLtMatmulHeuristicResult_t r;
    memset(&r, 0, sizeof r);
    cs = cublasLtMatmulAlgoCheck(lt, (cublasLtMatmulDesc_t)&od, (cublasLtMatrixLayout_t)la,
                                 (cublasLtMatrixLayout_t)lb, (cublasLtMatrixLayout_t)lc,
                                 (cublasLtMatrixLayout_t)&st->ld, &v->algo[i], &r);
    if (cs != CUBLAS_STATUS_SUCCESS || r.state != CUBLAS_STATUS_SUCCESS ||
        r.workspaceSize > cfg->max_ws)
      continue;
    v->algo[c] = v->algo[i];
    v->ws[c] = r.workspaceSize;
    rank[c] = i;
    c++;
  }
  v->count = c;
  v->found = c > 0;
  return GKO_STATUS_SUCCESS;
}

gko_status_t gk_lt_query(gko_gemm_plan_t plan, const lt_config *cfg, lt_value *out) {
  int32_t rank[LT_MAX_RESULTS];
  return gk_lt_query_ranked(plan, cfg, out, rank);
}

gko_status_t gk_lt_query_ranked(gko_gemm_plan_t plan, const lt_config *cfg, lt_value *out,
                                int32_t *rank) {
  const lt_state *st = plan->state;
  const gk_gemm_problem *p = &plan->p;
  const cublasLtMatrixLayoutOpaque_t *la, *lb, *lc;
  lt_key key;
  lt_layouts(st, cfg, &la, &lb, &lc);
  lt_key_of(st, p, cfg, &key);
  const int inv = p->invariant > 0;
  for (int i = 0; i < LT_MAX_RESULTS; i++) rank[i] = i;
  if (inv && (cfg->padded & 3))
    return gk_fail(GKO_STATUS_INTERNAL, "cuBLASLt: an invariant plan with padded copies");
  if (gk_gemm_cache_lookup(plan->handle->gemm, &key, sizeof key, out, sizeof *out))
    return inv ? lt_invariant_accept(plan, cfg, la, lb, lc, out, rank) : GKO_STATUS_SUCCESS;
  /* the layouts the heuristic sees: the plan's, or the reference problem's */
  cublasLtMatrixLayoutOpaque_t ra, rb, rc, rd;
  const cublasLtMatrixLayoutOpaque_t *qa = la, *qb = lb, *qc = lc, *qd = &st->ld;
  if (inv) {
    cublasStatus_t cs0 = lt_invariant_layouts(st, p, cfg, &ra, &rb, &rc, &rd);
    if (cs0)
      return gk_lt_fail(cs0, "cublasLtMatrixLayoutInit (GKO_GEMM_ATTR_INVARIANT's reference)");
    qa = &ra;
    qb = &rb;
    qc = &rc;
    qd = &rd;
  }
  cublasLtHandle_t lt = (cublasLtHandle_t)gk_gemm_state_lt(plan->handle->gemm);
  cublasLtMatmulDescOpaque_t od;
  /* the heuristic infers the bias alignment from the pointer's value */
  const void *fake_bias = (const void *)(uintptr_t)(cfg->align_bias ? cfg->align_bias : 256);
  lt_scales fake;
  cublasStatus_t cs =
      gk_lt_desc(&od, st, p, cfg->epilogue, fake_bias, lt_fake_scales(st, cfg, &fake));
  if (cs) return gk_lt_fail(cs, "cublasLtMatmulDescInit/SetAttribute");
  cublasLtMatmulPreferenceOpaque_t pref;
  if ((cs = cublasLtMatmulPreferenceInit(&pref)))
    return gk_lt_fail(cs, "cublasLtMatmulPreferenceInit");
  /* invariant plans: the reference is ranked as if no scratch were
   * available, so the ranking does not depend on the budget (ranked with
   * conv's budget it picked much slower algorithms; measured: docs/gemm.md);
   * the real problem's need is checked against the budget in
   * lt_invariant_accept (some of these algorithms ask for 4 bytes) */
  uint64_t ws = inv ? 0 : cfg->max_ws;
  uint32_t al[4] = {(uint32_t)cfg->align_a, (uint32_t)cfg->align_b, (uint32_t)cfg->align_c,
                    (uint32_t)cfg->align_d};
  const cublasLtMatmulPreferenceAttributes_t which[4] = {
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
  cs = cublasLtMatmulPreferenceSetAttribute(&pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws,
                                            sizeof ws);
  for (int i = 0; i < 4 && cs == CUBLAS_STATUS_SUCCESS; i++)
    cs = cublasLtMatmulPreferenceSetAttribute(&pref, which[i], &al[i], sizeof al[i]);
  if (inv && cs == CUBLAS_STATUS_SUCCESS) {
    /* each dot product in one sequence: no split-K of any kind */
    uint32_t red = CUBLASLT_REDUCTION_SCHEME_NONE;
    cs = cublasLtMatmulPreferenceSetAttribute(&pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK,
                                              &red, sizeof red);
  }
  if (cs) return gk_lt_fail(cs, "cublasLtMatmulPreferenceSetAttribute");
  cublasLtMatmulHeuristicResult_t res[LT_MAX_RESULTS];
  int n = 0;
  memset(res, 0, sizeof res);
  cs = cublasLtMatmulAlgoGetHeuristic(
      lt, &od, (cublasLtMatrixLayout_t)qa, (cublasLtMatrixLayout_t)qb,
      (cublasLtMatrixLayout_t)qc, (cublasLtMatrixLayout_t)qd, &pref, LT_MAX_RESULTS, res, &n);
  memset(out, 0, sizeof *out);
  if (cs == CUBLAS_STATUS_SUCCESS && n > 0 && res[0].state == CUBLAS_STATUS_SUCCESS) {
    int c = 0;
    for (int i = 0; i < n && i < LT_MAX_RESULTS; i++) {
      if (res[i].state != CUBLAS_STATUS_SUCCESS) continue;
      if (inv) { /* belt and braces: the mask should already exclude split-K */
        uint32_t splitk = 1;
        size_t w = 0;
        if (cublasLtMatmulAlgoConfigGetAttribute(&res[i].algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM,
                                                 &splitk, sizeof splitk, &w) ==
                CUBLAS_STATUS_SUCCESS &&
            splitk > 1)
          continue;
      }
      out->algo[c] = res[i].algo;
      out->ws[c] = res[i].workspaceSize;
      c++;
    }
    out->found = c > 0;
    out->count = c;
  } else if (cs != CUBLAS_STATUS_SUCCESS && cs != CUBLAS_STATUS_NOT_SUPPORTED &&
             cs != CUBLAS_STATUS_INVALID_VALUE) {
    return gk_lt_fail(cs, "cublasLtMatmulAlgoGetHeuristic"); /* not cached */
  }
  /* negative answers are cached too: a fallback that does not exist is not
   * asked for again on every execute; out of host memory, nothing is
   * cached and the answer still holds (an execute must not fail for it) */
  if (gk_gemm_cache_insert(plan->handle->gemm, &key, sizeof key, out, sizeof *out))
    gk_clear_error();
  if (!inv) return GKO_STATUS_SUCCESS;
  return lt_invariant_accept(plan, cfg, la, lb, lc, out, rank);
}
