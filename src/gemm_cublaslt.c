/* gemm_cublaslt.c -- the cuBLASLt backend of gko's GEMM.
 *
 * cuBLASLt (NVIDIA's cublasLtMatmul) is column-major.  gemm.c has already
 * turned the problem into its "lt view": a row-major D = op(A) op(B) is the
 * column-major D^T = op(B)^T op(A)^T, i.e. the same memory with the operands
 * swapped (never CUBLASLT_ORDER_ROW, which the bias epilogue rejects).
 *
 * Plan time (host only): types and compute type; which part of the epilogue
 * cuBLASLt fuses and which part gko's elementwise pass applies afterwards;
 * whether to copy A and/or B into aligned, zero-padded operands first (the
 * padding rule, lt_pad_pays); then cuBLASLt's heuristic for that
 * configuration, with MIN_ALIGNMENT preferences from the caller's alignment
 * promise (the heuristic assumes 256 bytes otherwise) and a stand-in bias
 * pointer of the promised alignment (the heuristic reads the pointer value
 * to infer its alignment).  Heuristic answers are cached in the handle
 * (gk_gemm_cache_*) keyed by everything that determines them; zero results
 * make the plan try the next configuration (unfused, padded or not) and
 * end in NOT_SUPPORTED with the list of what was tried.
 *
 * Execute time: the real pointers' alignments are compared with the plan's;
 * a less aligned pointer (or a bias below 16 bytes) selects another
 * configuration whose algorithm comes from the cache or one more heuristic
 * query (host work, capture-safe).  Then: the padding copies (gko kernel),
 * cublasLtMatmul, and gko's epilogue pass if the plan needs one. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include "gemm.h"
#include "../kernels/gemm_epilogue.h"
#include "../kernels/gemm_pad.h"

/* What selects an algorithm within a plan.  No implicit padding: the
 * struct is compared and hashed bytewise. */
typedef struct lt_config {
  /* bit 0: A_l copied to a padded operand, bit 1: B_l; bit 2 (LT_KEEP_K):
   * the copies keep k (only their leading dimension and base are fixed),
   * else k is rounded up to k_pad with zeros in both copies */
  int32_t padded;
  int32_t epilogue; /* cublasLtEpilogue_t */
  int32_t c_is_d;   /* C described (and passed) as D: beta == 0 or equal layouts */
  int32_t align_a, align_b, align_c, align_d, align_bias; /* bytes */
  uint64_t max_ws;  /* cuBLASLt's workspace budget */
} lt_config;

/* Cache key: every input of the heuristic. */
typedef struct lt_key {
  int32_t tag, compute, scale, ab, cd, opa, opb, epilogue;
  int32_t batch, align_a, align_b, align_c, align_d, align_bias;
  int64_t ml, nl, k, lda, ldb, ldc, ldd, sa, sb, sc, sd, sbias;
  uint64_t max_ws;
} lt_key;

enum { LT_MAX_RESULTS = 8, LT_EP_BIAS_BIT = 4, LT_KEEP_K = 4 };

/* The heuristic's answer: its results in its order of preference. */
typedef struct lt_value {
  cublasLtMatmulAlgo_t algo[LT_MAX_RESULTS];
  uint64_t ws[LT_MAX_RESULTS]; /* workspace each algorithm needs */
  int32_t found;  /* 0: the heuristic returned no algorithm */
  int32_t count;  /* results returned */
} lt_value;

/* A padded copy of A_l or B_l: the source (column-major rows x cols) and
 * the padded block (ld_pad x cols_pad). */
typedef struct lt_operand {
  int64_t rows, cols, ld, stride;
  int64_t ld_pad, cols_pad, stride_pad, batch_pad;
  size_t bytes;
  int overflow; /* the padded copy's size does not fit int64 / size_t: never padded */
} lt_operand;

typedef struct lt_state {
  cublasComputeType_t compute;
  cudaDataType_t scale, ab, cd;
  int esab, escd;
  int g;               /* elements per 16 bytes of A/B */
  int64_t k_pad;       /* k rounded up to g */
  lt_operand pa, pb;   /* padded copies with k_pad */
  lt_operand pak, pbk; /* padded copies keeping k (LT_KEEP_K) */
  /* layouts: A_l, B_l as given, padded (k_pad) and padded keeping k; C, D */
  cublasLtMatrixLayoutOpaque_t la, lb, la_pad, lb_pad, la_padk, lb_padk, lc, ld;
  int64_t lt_default_budget;
  /* the plan's choice */
  lt_config cfg;
  cublasLtMatmulAlgo_t algo;
  uint64_t algo_ws;
  int32_t rank, count; /* heuristic result #rank (0-based) of count */
  int32_t ref_rank;    /* GKO_GEMM_ATTR_INVARIANT: its rank for the reference problem */
  /* the matmul descriptor of the plan's configuration, built once (used
   * as is when no bias pointer has to be set; execute only reads it) */
  cublasLtMatmulDescOpaque_t od;
  int post_bias, post_act; /* applied by gko's pass after cuBLASLt */
  size_t off_b, off_ws;    /* offsets from the 256-byte aligned workspace base */
} lt_state;

static const uint64_t kMiB = 1024 * 1024;
/* fixed cost of one padding copy (launch + tail), expressed in bytes of
 * copy traffic: about 2 us at 4 TB/s */
static const double kPadFixedBytes = 8.0 * 1024 * 1024;

/* ---- helpers ------------------------------------------------------------------ */

static gko_status_t lt_fail(cublasStatus_t cs, const char *what) {
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

static cudaDataType_t lt_type(int dtype) {
  return dtype == GKO_DTYPE_F32 ? CUDA_R_32F : dtype == GKO_DTYPE_F16 ? CUDA_R_16F : CUDA_R_16BF;
}

/* Alignment (bytes) that every batch's pointer has, given the base
 * pointer's alignment: the batch stride can lower it. */
static int32_t lt_batched_align(int64_t base_align, int64_t es, int64_t stride, int64_t batch) {
  int64_t a = base_align > 256 ? 256 : base_align;
  if (batch > 1 && stride != 0) {
    int64_t s = gk_lowbit(stride * es);
    if (s < a) a = s;
  }
  return (int32_t)a;
}

static int64_t lt_ptr_align(const void *p) {
  uintptr_t v = (uintptr_t)p;
  uintptr_t low = v & (~v + 1);
  return (!v || low >= 256) ? 256 : (int64_t)low;
}


static const char *lt_epilogue_name(int ep) {
  switch (ep) {
    case CUBLASLT_EPILOGUE_DEFAULT: return "none";
    case CUBLASLT_EPILOGUE_RELU: return "RELU";
    case CUBLASLT_EPILOGUE_BIAS: return "BIAS";
    case CUBLASLT_EPILOGUE_RELU_BIAS: return "RELU_BIAS";
    case CUBLASLT_EPILOGUE_GELU: return "GELU(tanh)";
    case CUBLASLT_EPILOGUE_GELU_BIAS: return "GELU_BIAS(tanh)";
  }
  return "?";
}

static const char *gk_act_name(int act) {
  static const char *const n[4] = {"none", "ReLU", "GELU-erf", "GELU-tanh"};
  return act >= 0 && act < 4 ? n[act] : "?";
}

/* cuBLASLt's epilogue for bias yes/no and activation 0 none, 1 ReLU, 3
 * GELU-tanh (GELU-erf is never fused here). */
static int32_t lt_epilogue(int bias, int act) {
  if (act == 1) return bias ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_RELU;
  if (act == 3) return bias ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_GELU;
  return bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
}

static cublasStatus_t lt_layout(cublasLtMatrixLayoutOpaque_t *l, cudaDataType_t t,
                                int64_t rows, int64_t cols, int64_t ld, int64_t batch,
                                int64_t stride) {
  cublasStatus_t cs = cublasLtMatrixLayoutInit(l, t, (uint64_t)rows, (uint64_t)cols, ld);
  if (cs != CUBLAS_STATUS_SUCCESS || batch <= 1) return cs;
  int32_t b = (int32_t)batch;
  cs = cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &b, sizeof b);
  if (cs != CUBLAS_STATUS_SUCCESS) return cs;
  return cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                          &stride, sizeof stride);
}

static cublasStatus_t lt_desc(cublasLtMatmulDescOpaque_t *od, const lt_state *st,
                              const gk_gemm_problem *p, int32_t epilogue, const void *bias) {
  cublasStatus_t cs = cublasLtMatmulDescInit(od, st->compute, st->scale);
  if (cs != CUBLAS_STATUS_SUCCESS) return cs;
  int32_t ta = p->opa_l ? CUBLAS_OP_T : CUBLAS_OP_N, tb = p->opb_l ? CUBLAS_OP_T : CUBLAS_OP_N;
  uint32_t ep = (uint32_t)epilogue;
  if ((cs = cublasLtMatmulDescSetAttribute(od, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta)) ||
      (cs = cublasLtMatmulDescSetAttribute(od, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb)))
    return cs;
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

/* The layouts and sizes a configuration uses. */
static void lt_pick(const lt_state *st, const gk_gemm_problem *p, const lt_config *cfg,
                    const cublasLtMatrixLayoutOpaque_t **la,
                    const cublasLtMatrixLayoutOpaque_t **lb,
                    const cublasLtMatrixLayoutOpaque_t **lc, lt_key *key) {
  const int keep = (cfg->padded & LT_KEEP_K) != 0;
  *la = (cfg->padded & 1) ? (keep ? &st->la_padk : &st->la_pad) : &st->la;
  *lb = (cfg->padded & 2) ? (keep ? &st->lb_padk : &st->lb_pad) : &st->lb;
  *lc = cfg->c_is_d ? &st->ld : &st->lc;
  if (!key) return;
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
/* (added for the convolution's chunking, src/conv.c; kept apart from the
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
  if ((cs = lt_layout(ra, st->ab, ar, ac, p->lda_l, 1, 0)) ||
      (cs = lt_layout(rb, st->ab, p->k, p->invariant, p->ldb_l, 1, 0)) ||
      (cs = lt_layout(rc, st->cd, p->ml, p->invariant, cfg->c_is_d ? p->ldd : p->ldc, 1, 0)))
    return cs;
  return lt_layout(rd, st->cd, p->ml, p->invariant, p->ldd, 1, 0);
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
  cublasLtHandle_t lt = (cublasLtHandle_t)gk_gemm_lt_handle(plan->handle);
  cublasLtMatmulDescOpaque_t od;
  const void *fake_bias = (const void *)(uintptr_t)(cfg->align_bias ? cfg->align_bias : 256);
  cublasStatus_t cs = lt_desc(&od, st, p, cfg->epilogue, fake_bias);
  if (cs) return lt_fail(cs, "cublasLtMatmulDescInit/SetAttribute");
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

/* cuBLASLt's best algorithm for a configuration, from the handle's cache or
 * one heuristic query (host only).  Success with out->found == 0 means no
 * algorithm exists; other statuses are failures of the query itself.
 * Invariant plans: the reference problem's answer, filtered for the real
 * one (rank, may be NULL: each kept algorithm's reference rank). */
static gko_status_t lt_query_ranked(gko_gemm_plan_t plan, const lt_config *cfg, lt_value *out,
                                    int32_t *rank);
static gko_status_t lt_query(gko_gemm_plan_t plan, const lt_config *cfg, lt_value *out) {
  int32_t rank[LT_MAX_RESULTS];
  return lt_query_ranked(plan, cfg, out, rank);
}

static gko_status_t lt_query_ranked(gko_gemm_plan_t plan, const lt_config *cfg, lt_value *out,
                                    int32_t *rank) {
  const lt_state *st = plan->state;
  const gk_gemm_problem *p = &plan->p;
  const cublasLtMatrixLayoutOpaque_t *la, *lb, *lc;
  lt_key key;
  lt_pick(st, p, cfg, &la, &lb, &lc, &key);
  const int inv = p->invariant > 0;
  for (int i = 0; i < LT_MAX_RESULTS; i++) rank[i] = i;
  if (inv && (cfg->padded & 3))
    return gk_fail(GKO_STATUS_INTERNAL, "cuBLASLt: an invariant plan with padded copies");
  if (gk_gemm_cache_lookup(plan->handle, &key, sizeof key, out, sizeof *out))
    return inv ? lt_invariant_accept(plan, cfg, la, lb, lc, out, rank) : GKO_STATUS_SUCCESS;
  /* the layouts the heuristic sees: the plan's, or the reference problem's */
  cublasLtMatrixLayoutOpaque_t ra, rb, rc, rd;
  const cublasLtMatrixLayoutOpaque_t *qa = la, *qb = lb, *qc = lc, *qd = &st->ld;
  if (inv) {
    cublasStatus_t cs0 = lt_invariant_layouts(st, p, cfg, &ra, &rb, &rc, &rd);
    if (cs0) return lt_fail(cs0, "cublasLtMatrixLayoutInit (GKO_GEMM_ATTR_INVARIANT's reference)");
    qa = &ra;
    qb = &rb;
    qc = &rc;
    qd = &rd;
  }
  cublasLtHandle_t lt = (cublasLtHandle_t)gk_gemm_lt_handle(plan->handle);
  cublasLtMatmulDescOpaque_t od;
  /* the heuristic infers the bias alignment from the pointer's value */
  const void *fake_bias = (const void *)(uintptr_t)(cfg->align_bias ? cfg->align_bias : 256);
  cublasStatus_t cs = lt_desc(&od, st, p, cfg->epilogue, fake_bias);
  if (cs) return lt_fail(cs, "cublasLtMatmulDescInit/SetAttribute");
  cublasLtMatmulPreferenceOpaque_t pref;
  if ((cs = cublasLtMatmulPreferenceInit(&pref))) return lt_fail(cs, "cublasLtMatmulPreferenceInit");
  /* invariant plans: the reference is ranked as if no scratch were
   * available, so the ranking does not depend on the budget (ranked with
   * conv's 64 KiB, ResNet-18's l4_3x3 NCHW f16 at N = 1 took 818 us against
   * 52 us ranked with none, H200); the real problem's need is checked
   * against the budget in lt_invariant_accept (some of these algorithms
   * ask for 4 bytes) */
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
  if (cs) return lt_fail(cs, "cublasLtMatmulPreferenceSetAttribute");
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
    return lt_fail(cs, "cublasLtMatmulAlgoGetHeuristic"); /* not cached */
  }
  /* negative answers are cached too: a fallback that does not exist is not
   * asked for again on every execute */
  gko_status_t s = gk_gemm_cache_insert(plan->handle, &key, sizeof key, out, sizeof *out);
  if (s || !inv) return s;
  return lt_invariant_accept(plan, cfg, la, lb, lc, out, rank);
}

/* ---- the padding rule ------------------------------------------------------------ */

/* Padding pays when the time the aligned product saves exceeds the copies'
 * cost.  In bytes of copy traffic (the GPU's copy bandwidth cancels out):
 *   unaligned product:  F * s / R      aligned product: F / R
 *   copies:             bytes read + written + kPadFixedBytes per copy
 * with F = 2 m n k batch, R the Tensor-Core rate in FLOP per byte of copy
 * bandwidth (the machine balance) and s the slowdown of cuBLASLt's kernels
 * for unaligned operands.  Pad iff F (s - 1) / R > copies.  Constants from
 * the H200 anchors (docs/gemm.md): f16/bf16 R = 150, s = 4.5 (131 against
 * ~600 TFLOP/s at k = 1027); TF32 R = 75, s = 2.5 (119 against ~300); full
 * f32 (SIMT) R = 12, s = 1.3 (an estimate: to be measured). */
static int lt_pad_pays(const gk_gemm_problem *p, double copy_bytes, int ncopies,
                       double *saved_out) {
  double R, s;
  if (p->ab_dtype != GKO_DTYPE_F32) {
    R = 150;
    s = 4.5;
  } else if (p->compute == GKO_GEMM_COMPUTE_TF32) {
    R = 75;
    s = 2.5;
  } else {
    R = 12;
    s = 1.3;
  }
  double flops = 2.0 * (double)p->m * (double)p->n * (double)p->k * (double)p->batch;
  double saved = flops * (s - 1.0) / R;
  *saved_out = saved;
  return saved > copy_bytes + ncopies * kPadFixedBytes;
}

/* Describes the padded copy of an operand stored (column-major) as
 * k x outer (k_is_rows) or outer x k: k grows to k_pad with zeros, the
 * leading dimension to a multiple of g elements (16 bytes). */
static void lt_operand_init(lt_operand *o, int k_is_rows, int64_t outer, int64_t k,
                            int64_t k_pad, int64_t ld, int64_t stride, int64_t batch, int g,
                            int es) {
  o->rows = k_is_rows ? k : outer;
  o->cols = k_is_rows ? outer : k;
  o->ld = ld;
  o->stride = stride;
  int64_t rows_pad = k_is_rows ? k_pad : o->rows;
  if (rows_pad < 1) rows_pad = 1;
  /* the operand itself fits int64 bytes (gemm.c checks its extent), but
   * rounding its rows up to g may not: such an operand is never padded
   * (sizes saturate, overflow set) */
  o->overflow = rows_pad > INT64_MAX - g;
  o->ld_pad = o->overflow ? rows_pad : gk_round_up(rows_pad, g);
  o->cols_pad = k_is_rows ? o->cols : k_pad;
  o->batch_pad = (stride == 0 && batch > 1) ? 1 : batch;
  int64_t block = INT64_MAX;
  uint64_t bytes = 0;
  if (__builtin_mul_overflow(o->ld_pad, o->cols_pad, &block) ||
      __builtin_mul_overflow((uint64_t)block, (uint64_t)o->batch_pad, &bytes) ||
      __builtin_mul_overflow(bytes, (uint64_t)es, &bytes) || bytes > (uint64_t)INT64_MAX) {
    o->overflow = 1;
    block = INT64_MAX;
  }
  o->stride_pad = (stride == 0 && batch > 1) ? 0 : block;
  o->bytes = o->overflow ? SIZE_MAX : (size_t)bytes;
}

/* ---- plan ----------------------------------------------------------------------- */

static void lt_destroy(gko_gemm_plan_t plan) {
  free(plan->state);
  plan->state = NULL;
}

/* Appends to plan->why. */
#define why_add(plan, ...) gk_strappendf((plan)->why, sizeof (plan)->why, __VA_ARGS__)

static size_t lt_total_ws(const lt_state *st, const lt_config *cfg, uint64_t lt_ws,
                          size_t *off_b, size_t *off_ws) {
  const int keep = (cfg->padded & LT_KEEP_K) != 0;
  size_t a = (cfg->padded & 1) ? gk_round256(keep ? st->pak.bytes : st->pa.bytes) : 0;
  size_t b = (cfg->padded & 2) ? gk_round256(keep ? st->pbk.bytes : st->pb.bytes) : 0;
  *off_b = a;
  *off_ws = a + b;
  size_t total = a + b + (size_t)lt_ws;
  return total ? total + 255 : 0; /* slack to align any base pointer to 256 */
}

static gko_status_t lt_plan(gko_gemm_plan_t plan) {
  const gk_gemm_problem *p = &plan->p;
  gko_handle_t h = plan->handle;
  if (!gk_gemm_lt_handle(h))
    return gk_fail(GKO_STATUS_INTERNAL, "the handle has no cuBLASLt handle");
  /* cuBLASLt's heuristic is not safe near 2^31 in a dimension: a fuzzed
   * GEMM raised SIGFPE inside cublasLtMatmulAlgoGetHeuristic (CUDA 13.0,
   * H200, 2026-11-30).  Such shapes are left to the next backend. */
  if (p->ml > GK_LT_MAX_DIM || p->nl > GK_LT_MAX_DIM || p->k > GK_LT_MAX_DIM ||
      p->invariant > GK_LT_MAX_DIM)
    return gk_fail(GKO_STATUS_NOT_SUPPORTED,
                   "cuBLASLt: m = %lld, n = %lld, k = %lld (or the invariant reference %lld) "
                   "exceeds 2^30, beyond what gko hands to cuBLASLt's heuristic",
                   (long long)p->m, (long long)p->n, (long long)p->k, (long long)p->invariant);
  lt_state *st = calloc(1, sizeof *st);
  if (!st) return gk_fail(GKO_STATUS_ALLOC_FAILED, "host allocation of the cuBLASLt plan failed");
  plan->state = st;
  gko_status_t s = GKO_STATUS_SUCCESS;
  cublasStatus_t cs;
  const char *an = p->swap ? "B" : "A", *bn = p->swap ? "A" : "B"; /* user names of A_l, B_l */

  st->ab = lt_type(p->ab_dtype);
  st->cd = lt_type(p->cd_dtype);
  st->esab = (int)gko_dtype_size(p->ab_dtype);
  st->escd = (int)gko_dtype_size(p->cd_dtype);
  st->g = 16 / st->esab;
  st->compute = CUBLAS_COMPUTE_32F;
  st->scale = CUDA_R_32F;
  if (p->compute == GKO_GEMM_COMPUTE_TF32) st->compute = CUBLAS_COMPUTE_32F_FAST_TF32;
  if (p->compute == GKO_GEMM_COMPUTE_F16_ACCUMULATE) {
    st->compute = CUBLAS_COMPUTE_16F;
    st->scale = CUDA_R_16F;
  }
  st->lt_default_budget = (int64_t)((h->cc >= 90 ? 32 : 4) * kMiB);

  /* ---- epilogue: what cuBLASLt fuses, what gko's pass does -------------- */
  const int has_bias = p->epilogue & 1, act = p->epilogue >> 1;
  const int act_fusable = act != 2; /* cuBLASLt's GELU is the tanh form */
  const int32_t bias_align = lt_batched_align(p->alignment > st->escd ? p->alignment : st->escd,
                                              st->escd, p->stride_bias, p->batch);
  const int bias_fusable = has_bias && p->bias_on_rows && bias_align >= 16;
  if (p->fusion == GKO_GEMM_FUSION_REQUIRED) {
    if (!act_fusable) {
      s = gk_fail(GKO_STATUS_NOT_SUPPORTED,
                  "GKO_GEMM_FUSION_REQUIRED: cuBLASLt cannot fuse GELU-erf (its GELU "
                  "epilogue is the tanh form); use GKO_GEMM_FUSION_AUTO (GEMM + gko's GELU "
                  "pass) or GELU_TANH");
      goto fail;
    }
    if (has_bias && !p->bias_on_rows) {
      s = gk_fail(GKO_STATUS_NOT_SUPPORTED,
                  "GKO_GEMM_FUSION_REQUIRED: a column-major D adds the bias along rows of "
                  "cuBLASLt's output, which its bias epilogue cannot do; use row-major or "
                  "GKO_GEMM_FUSION_AUTO");
      goto fail;
    }
    if (has_bias && bias_align < 16) {
      s = gk_fail(GKO_STATUS_NOT_SUPPORTED,
                  "GKO_GEMM_FUSION_REQUIRED: the fused bias needs 16-byte alignment but the "
                  "plan promises %d bytes (GKO_GEMM_ATTR_ALIGNMENT, STRIDE_BIAS)",
                  (int)bias_align);
      goto fail;
    }
  }
  int32_t fused_ep;
  int post_bias, post_act;
  if (p->fusion == GKO_GEMM_FUSION_NEVER || (has_bias && !bias_fusable)) {
    fused_ep = CUBLASLT_EPILOGUE_DEFAULT;
    post_bias = has_bias;
    post_act = act;
  } else {
    fused_ep = lt_epilogue(has_bias, act_fusable ? act : 0);
    post_bias = 0;
    post_act = act_fusable ? 0 : act;
  }

  /* ---- layouts ------------------------------------------------------------- */
  const int64_t ar = p->opa_l ? p->k : p->ml, ac = p->opa_l ? p->ml : p->k;
  const int64_t br = p->opb_l ? p->nl : p->k, bc = p->opb_l ? p->k : p->nl;
  st->k_pad = gk_round_up(p->k, st->g);
  /* A_l is stored ml x k (op N) or k x ml (op T); B_l k x nl (N) or nl x k */
  lt_operand_init(&st->pa, p->opa_l, p->ml, p->k, st->k_pad, p->lda_l, p->stride_a_l, p->batch,
                  st->g, st->esab);
  lt_operand_init(&st->pb, !p->opb_l, p->nl, p->k, st->k_pad, p->ldb_l, p->stride_b_l,
                  p->batch, st->g, st->esab);
  lt_operand_init(&st->pak, p->opa_l, p->ml, p->k, p->k, p->lda_l, p->stride_a_l, p->batch,
                  st->g, st->esab);
  lt_operand_init(&st->pbk, !p->opb_l, p->nl, p->k, p->k, p->ldb_l, p->stride_b_l, p->batch,
                  st->g, st->esab);
  if ((cs = lt_layout(&st->la, st->ab, ar, ac, p->lda_l, p->batch, p->stride_a_l)) ||
      (cs = lt_layout(&st->lb, st->ab, br, bc, p->ldb_l, p->batch, p->stride_b_l)) ||
      (cs = lt_layout(&st->lc, st->cd, p->ml, p->nl, p->ldc, p->batch, p->stride_c)) ||
      (cs = lt_layout(&st->ld, st->cd, p->ml, p->nl, p->ldd, p->batch, p->stride_d)) ||
      /* the padded operands: k_pad, and k kept */
      (cs = lt_layout(&st->la_pad, st->ab, p->opa_l ? st->k_pad : p->ml,
                      p->opa_l ? p->ml : st->k_pad, st->pa.ld_pad, p->batch,
                      st->pa.stride_pad)) ||
      (cs = lt_layout(&st->lb_pad, st->ab, p->opb_l ? p->nl : st->k_pad,
                      p->opb_l ? st->k_pad : p->nl, st->pb.ld_pad, p->batch,
                      st->pb.stride_pad)) ||
      (cs = lt_layout(&st->la_padk, st->ab, ar, ac, st->pak.ld_pad, p->batch,
                      st->pak.stride_pad)) ||
      (cs = lt_layout(&st->lb_padk, st->ab, br, bc, st->pbk.ld_pad, p->batch,
                      st->pbk.stride_pad))) {
    s = lt_fail(cs, "cublasLtMatrixLayoutInit");
    goto fail;
  }

  /* ---- padding: which operands, and whether it pays ------------------------ */
  const int64_t pr_a = p->alignment > st->esab ? p->alignment : st->esab;
  const int32_t align_a = lt_batched_align(pr_a, st->esab, p->stride_a_l, p->batch);
  const int32_t align_b = lt_batched_align(pr_a, st->esab, p->stride_b_l, p->batch);
  const int64_t pr_c = p->alignment > st->escd ? p->alignment : st->escd;
  const int32_t align_c = lt_batched_align(pr_c, st->escd, p->stride_c, p->batch);
  const int32_t align_d = lt_batched_align(pr_c, st->escd, p->stride_d, p->batch);
  const int k_odd = p->k % st->g != 0;
  /* operands whose leading dimension or base (with batch stride) is off */
  const int ld_mask = (p->lda_l % st->g != 0 || align_a < 16 ? 1 : 0) |
                      (p->ldb_l % st->g != 0 || align_b < 16 ? 2 : 0);
  /* What fixes the shape.  k aligned: copy the misaligned operands.  k not
   * a multiple of 16 bytes: either round k up in both copies (zeros in the
   * extra k of both, so the padding adds exact zeros), or copy only the
   * misaligned operands keeping k (LT_KEEP_K): cuBLASLt's kernels need
   * 16-byte leading dimensions and bases, and on sm_80+ they take any k.
   * AUTO rounds k up: on the H200 (2026-11-30, gko-bench gemm --suite
   * k1027) keeping k ran 3.9x slower than rounding it (f16 278.5 against
   * 71.7 us, bf16 278.2 / 70.5, TF32 291.2 / 145.5: cuBLASLt's kernels for
   * an odd k are slow even on aligned copies), slower even than no copy
   * (248.2 us).  The k-kept form stays as the fallback (docs/gemm.md). */
  const int keep_pref = 0;
  const int fix_kpad = k_odd ? 3 : ld_mask;
  const int fix_keep = ld_mask ? (ld_mask | (k_odd ? LT_KEEP_K : 0)) : 0;
  const int fix_mask = keep_pref ? fix_keep : fix_kpad;
  int pad_mask = 0;
  char pad_why[384] = "", reason[160] = "";
  {
    size_t u = 0;
    const char *lda_name = p->swap ? "ldb" : "lda", *ldb_name = p->swap ? "lda" : "ldb";
#define GK_REASON(...) \
  u += (size_t)snprintf(reason + u, u < sizeof reason ? sizeof reason - u : 0, __VA_ARGS__)
    if (k_odd) GK_REASON("k = %lld %% %d != 0", (long long)p->k, st->g);
    if (p->lda_l % st->g)
      GK_REASON("%s%s = %lld %% %d != 0", u ? ", " : "", lda_name, (long long)p->lda_l, st->g);
    if (p->ldb_l % st->g)
      GK_REASON("%s%s = %lld %% %d != 0", u ? ", " : "", ldb_name, (long long)p->ldb_l, st->g);
    if (align_a < 16) GK_REASON("%s%s %d-byte aligned", u ? ", " : "", an, (int)align_a);
    if (align_b < 16) GK_REASON("%s%s %d-byte aligned", u ? ", " : "", bn, (int)align_b);
#undef GK_REASON
  }
  if (p->pad == GKO_GEMM_PAD_ALWAYS) {
    pad_mask = 3;
    snprintf(pad_why, sizeof pad_why, "GKO_GEMM_PAD_ALWAYS%s%s", reason[0] ? "; " : "", reason);
  } else if (p->pad == GKO_GEMM_PAD_AUTO && fix_mask) {
    const int keep = (fix_mask & LT_KEEP_K) != 0;
    const lt_operand *oa = keep ? &st->pak : &st->pa, *ob = keep ? &st->pbk : &st->pb;
    double copy = 0, saved = 0;
    if (fix_mask & 1) copy += (double)oa->bytes + (double)ar * (double)ac * st->esab * oa->batch_pad;
    if (fix_mask & 2) copy += (double)ob->bytes + (double)br * (double)bc * st->esab * ob->batch_pad;
    int ncopies = (fix_mask & 1) + ((fix_mask >> 1) & 1);
    int pays = lt_pad_pays(p, copy, ncopies, &saved);
    snprintf(pad_why, sizeof pad_why,
             "%s; padding rule: saves ~%.3g MB of copy time, costs %.3g MB copied + %d x "
             "%.3g MB fixed -> %s%s",
             reason, saved / 1e6, copy / 1e6, ncopies, kPadFixedBytes / 1e6,
             pays ? "pad" : "no padding",
             pays && keep ? " (only the misaligned operand, k kept)" : "");
    if (pays) pad_mask = fix_mask;
  } else if (p->pad == GKO_GEMM_PAD_AUTO && k_odd) {
    snprintf(pad_why, sizeof pad_why, "%s; leading dimensions and bases aligned: k kept", reason);
  } else if (p->pad == GKO_GEMM_PAD_NEVER && (k_odd || ld_mask)) {
    snprintf(pad_why, sizeof pad_why, "%s; GKO_GEMM_PAD_NEVER", reason);
  }

  if (p->invariant > 0) { /* GKO_GEMM_ATTR_INVARIANT: one layout for every shape */
    pad_mask = 0;
    snprintf(pad_why, sizeof pad_why, "%s%sGKO_GEMM_ATTR_INVARIANT: no padded copies", reason,
             reason[0] ? "; " : "");
  }

  /* ---- candidates, in order of preference -------------------------------------- */
  /* masks: the chosen padding first, then (AUTO only) the other way to fix
   * an odd k, then unpadded / padded as the other choice.  ALWAYS has no
   * unpadded fallback, NEVER no padded one. */
  int masks[3], nmask = 0;
  masks[nmask++] = pad_mask;
  if (p->pad == GKO_GEMM_PAD_AUTO && p->invariant <= 0) {
    const int alt[3] = {k_odd ? (pad_mask == fix_keep ? fix_kpad : fix_keep) : 0,
                        pad_mask ? 0 : fix_mask, k_odd ? fix_kpad : 0};
    for (int i = 0; i < 3; i++) {
      int dup = 0;
      for (int j = 0; j < nmask; j++) dup |= masks[j] == alt[i];
      if (!dup && (alt[i] != 0 || pad_mask != 0) && nmask < 3) masks[nmask++] = alt[i];
    }
  }
  /* autotune variants: v = 1 + mask index * LT_MAX_RESULTS + heuristic rank */
  int want_mask = -1, want_rank = 0;
  if (plan->variant > 0) {
    int mi = (plan->variant - 1) / LT_MAX_RESULTS;
    want_rank = (plan->variant - 1) % LT_MAX_RESULTS;
    if (mi >= nmask) {
      s = gk_fail(GKO_STATUS_NOT_SUPPORTED, "cuBLASLt: no variant %d", plan->variant);
      goto fail;
    }
    want_mask = masks[mi];
  }
  lt_config cand[6];
  int ncand = 0;
  const int c_is_d = p->ldc == p->ldd && p->stride_c == p->stride_d;
  for (int mi = 0; mi < nmask; mi++) {
    const int mask = masks[mi];
    if (want_mask >= 0 && mask != want_mask) continue;
    const int keep = (mask & LT_KEEP_K) != 0;
    const lt_operand *oa = keep ? &st->pak : &st->pa, *ob = keep ? &st->pbk : &st->pb;
    if (((mask & 1) && oa->overflow) || ((mask & 2) && ob->overflow)) continue;
    size_t pb = 0;
    if (mask & 1) pb += gk_round256(oa->bytes);
    if (mask & 2) pb += gk_round256(ob->bytes);
    int64_t budget = st->lt_default_budget;
    if (p->max_workspace >= 0) {
      int64_t left = p->max_workspace - (int64_t)pb - 255;
      if (left < 0) {
        if (mask) {
          if (mi == 0)
            why_add(plan, "(padding skipped: %zu bytes of copies exceed "
                    "GKO_GEMM_ATTR_MAX_WORKSPACE) ", pb);
          continue;
        }
        left = 0;
      }
      if (left < budget) budget = left;
    }
    for (int fuse = 0; fuse < 2; fuse++) {
      if (fuse == 1 && (fused_ep == CUBLASLT_EPILOGUE_DEFAULT ||
                        p->fusion == GKO_GEMM_FUSION_REQUIRED))
        break;
      lt_config *c = &cand[ncand++];
      memset(c, 0, sizeof *c);
      c->padded = mask;
      c->epilogue = fuse ? CUBLASLT_EPILOGUE_DEFAULT : fused_ep;
      c->c_is_d = c_is_d;
      c->align_a = (mask & 1) ? lt_batched_align(256, st->esab, oa->stride_pad, oa->batch_pad) : align_a;
      c->align_b = (mask & 2) ? lt_batched_align(256, st->esab, ob->stride_pad, ob->batch_pad) : align_b;
      c->align_c = c_is_d ? align_d : align_c;
      c->align_d = align_d;
      c->align_bias = (c->epilogue & LT_EP_BIAS_BIT) ? bias_align : 0;
      c->max_ws = (uint64_t)budget;
    }
  }
  /* (k-padded masks are 3 whenever k is odd: a k_pad layout never meets an
   * unpadded operand of the original k) */

  int chosen = -1;
  char tried[384] = "";
  for (int i = 0; i < ncand; i++) {
    lt_value v;
    int32_t rank[LT_MAX_RESULTS];
    if ((s = lt_query_ranked(plan, &cand[i], &v, rank))) goto fail;
    if (v.found && want_rank < v.count) {
      chosen = i;
      st->cfg = cand[i];
      st->algo = v.algo[want_rank];
      st->algo_ws = v.ws[want_rank];
      st->rank = want_rank;
      st->count = v.count;
      st->ref_rank = rank[want_rank];
      break;
    }
    if (v.found && plan->variant > 0) {
      s = gk_fail(GKO_STATUS_NOT_SUPPORTED, "cuBLASLt: no variant %d", plan->variant);
      goto fail;
    }
    size_t u = strlen(tried);
    snprintf(tried + u, sizeof tried - u, "%s[%s%s%s, epilogue %s, align A/B/C/D %d/%d/%d/%d]",
             u ? ", " : "", (cand[i].padded & 3) ? "padded " : "",
             (cand[i].padded & 3) == 3 ? "A+B" : (cand[i].padded & 3) == 1 ? an
             : (cand[i].padded & 3) == 2 ? bn : "unpadded",
             (cand[i].padded & LT_KEEP_K) ? " (k kept)" : "",
             lt_epilogue_name(cand[i].epilogue), cand[i].align_a, cand[i].align_b,
             cand[i].align_c, cand[i].align_d);
  }
  if (chosen < 0) {
    s = gk_fail(GKO_STATUS_NOT_SUPPORTED,
                "cuBLASLt has no algorithm for this GEMM (m = %lld, n = %lld, k = %lld, "
                "batch = %lld, types %d/%d, compute %d); tried %s",
                (long long)p->m, (long long)p->n, (long long)p->k, (long long)p->batch,
                p->ab_dtype, p->cd_dtype, p->compute, tried);
    goto fail;
  }
  if (st->cfg.epilogue == CUBLASLT_EPILOGUE_DEFAULT && fused_ep != CUBLASLT_EPILOGUE_DEFAULT) {
    post_bias = has_bias;
    post_act = act;
  }
  st->post_bias = post_bias;
  st->post_act = post_act;
  plan->ws_bytes = lt_total_ws(st, &st->cfg, st->algo_ws, &st->off_b, &st->off_ws);
  /* the descriptor of this configuration, reused by execute when it needs
   * no bias pointer */
  if ((cs = lt_desc(&st->od, st, p, st->cfg.epilogue, NULL))) {
    s = lt_fail(cs, "cublasLtMatmulDescInit/SetAttribute");
    goto fail;
  }

  /* ---- why ------------------------------------------------------------------- */
  {
    int32_t id = -1;
    uint32_t tile = 0, stages = 0, splitk = 0, swz = 0;
    size_t w;
    cublasLtMatmulAlgoConfigGetAttribute(&st->algo, CUBLASLT_ALGO_CONFIG_ID, &id, sizeof id, &w);
    cublasLtMatmulAlgoConfigGetAttribute(&st->algo, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile,
                                         sizeof tile, &w);
    cublasLtMatmulAlgoConfigGetAttribute(&st->algo, CUBLASLT_ALGO_CONFIG_STAGES_ID, &stages,
                                         sizeof stages, &w);
    cublasLtMatmulAlgoConfigGetAttribute(&st->algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &splitk,
                                         sizeof splitk, &w);
    cublasLtMatmulAlgoConfigGetAttribute(&st->algo, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, &swz,
                                         sizeof swz, &w);
    const char *tn = gk_gemm_tile_name((int)tile);
    char tbuf[24];
    if (!tn) {
      snprintf(tbuf, sizeof tbuf, "#%u", tile);
      tn = tbuf;
    }
    why_add(plan, "algo %d tile %s stages-id %u splitK %u swizzle %u (heuristic #%d of %d"
            "%s); compute %s; ",
            (int)id, tn, stages, splitk, swz, st->rank + 1, st->count,
            chosen ? ", after fallbacks" : "",
            st->compute == CUBLAS_COMPUTE_32F_FAST_TF32 ? "TF32 (f32 accumulate)"
            : st->compute == CUBLAS_COMPUTE_16F         ? "f16 accumulate"
                                                        : "f32 accumulate");
    if (p->swap) why_add(plan, "row-major as D^T = op(B)^T op(A)^T; ");
    if (p->invariant > 0)
      why_add(plan, "invariant: the algorithm of a reference problem with %lld %s and one "
              "batch, no split-K (its choice #%d; accepted for this shape); ",
              (long long)p->invariant, p->swap ? "rows" : "columns", (int)st->ref_rank + 1);
    if (p->epilogue)
      why_add(plan, "epilogue: cuBLASLt %s%s%s%s%s; ", lt_epilogue_name(st->cfg.epilogue),
              (post_bias || post_act) ? ", then gko's pass " : "",
              post_bias ? "bias" : "", post_bias && post_act ? "+" : "",
              post_act ? gk_act_name(post_act) : "");
    if (st->cfg.padded & 3) {
      const int pm = st->cfg.padded & 3, keep = (st->cfg.padded & LT_KEEP_K) != 0;
      const char *who = pm == 3 ? "A and B" : pm == 1 ? an : bn;
      const lt_operand *oa = keep ? &st->pak : &st->pa, *ob = keep ? &st->pbk : &st->pb;
      why_add(plan, "%s copied to padded operands (k = %lld%s, lds %lld/%lld): %s; ", who,
              (long long)(keep ? p->k : st->k_pad), keep && k_odd ? " kept" : "",
              (long long)((pm & 1) ? oa->ld_pad : p->lda_l),
              (long long)((pm & 2) ? ob->ld_pad : p->ldb_l), pad_why);
    } else if (pad_why[0]) {
      why_add(plan, "not padded: %s; ", pad_why);
    }
    if (chosen) why_add(plan, "no algorithm for: %s; ", tried);
    why_add(plan, "workspace %zu bytes (cuBLASLt %llu of budget %llu)", plan->ws_bytes,
            (unsigned long long)st->algo_ws, (unsigned long long)st->cfg.max_ws);
  }
  return GKO_STATUS_SUCCESS;
fail:
  free(st);
  plan->state = NULL;
  return s;
}

/* ---- execute ------------------------------------------------------------------ */

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

static gko_status_t lt_execute(gko_gemm_plan_t plan, const gk_gemm_args *x) {
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
    int32_t a = lt_batched_align(lt_ptr_align(x->a_l), st->esab, p->stride_a_l, p->batch);
    if (a < cfg.align_a) cfg.align_a = a;
  }
  if (!(cfg.padded & 2)) {
    int32_t b = lt_batched_align(lt_ptr_align(x->b_l), st->esab, p->stride_b_l, p->batch);
    if (b < cfg.align_b) cfg.align_b = b;
  }
  int32_t dal = lt_batched_align(lt_ptr_align(x->d), st->escd, p->stride_d, p->batch);
  if (dal < cfg.align_d) cfg.align_d = dal;
  const void *cptr;
  if (x->beta == 0.0f) { /* never read C: describe and pass D instead */
    cfg.c_is_d = 1;
    cfg.align_c = cfg.align_d;
    cptr = x->d;
  } else {
    int32_t c = lt_batched_align(lt_ptr_align(x->c), st->escd,
                                 cfg.c_is_d ? p->stride_d : p->stride_c, p->batch);
    if (c < cfg.align_c) cfg.align_c = c;
    cptr = x->c;
  }
  if (cfg.epilogue & LT_EP_BIAS_BIT) {
    int32_t bal = lt_batched_align(lt_ptr_align(x->bias), st->escd, p->stride_bias, p->batch);
    if (bal < 16) {
      if (p->fusion == GKO_GEMM_FUSION_REQUIRED)
        return gk_fail(GKO_STATUS_INVALID_VALUE,
                       "bias = %p is %d-byte aligned (with STRIDE_BIAS = %lld): the fused "
                       "bias epilogue needs 16 bytes and the plan has "
                       "GKO_GEMM_FUSION_REQUIRED",
                       x->bias, (int)bal, (long long)p->stride_bias);
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
    gko_status_t s = lt_query(plan, &cfg, &val);
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
  if (cfg.epilogue != st->cfg.epilogue || (cfg.epilogue & LT_EP_BIAS_BIT)) {
    if ((cs = lt_desc(&od_call, st, p, cfg.epilogue, x->bias)))
      return lt_fail(cs, "cublasLtMatmulDescInit/SetAttribute");
    od = &od_call;
  }
  const cublasLtMatrixLayoutOpaque_t *la, *lb, *lc;
  lt_pick(st, p, &cfg, &la, &lb, &lc, NULL);
  uint16_t ah = 0, bh = 0;
  const void *alpha = &x->alpha, *beta = &x->beta;
  if (st->scale == CUDA_R_16F) {
    ah = lt_float_to_half(x->alpha);
    bh = lt_float_to_half(x->beta);
    alpha = &ah;
    beta = &bh;
  }
  cs = cublasLtMatmul((cublasLtHandle_t)gk_gemm_lt_handle(h), (cublasLtMatmulDesc_t)od, alpha, a_l,
                      (cublasLtMatrixLayout_t)la, b_l, (cublasLtMatrixLayout_t)lb, beta, cptr,
                      (cublasLtMatrixLayout_t)lc, x->d, (cublasLtMatrixLayout_t)&st->ld,
                      algo, lt_ws, lt_ws_bytes, (cudaStream_t)x->stream);
  if (cs) return lt_fail(cs, "cublasLtMatmul");

  if (post_bias || post_act) {
    const int contiguous =
        p->ldd == p->ml && (p->batch == 1 || p->stride_d == p->ml * p->nl);
    if (!post_bias && post_act >= 2 && contiguous)
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

const gk_gemm_backend gk_gemm_cublaslt_backend = {GKO_GEMM_BACKEND_CUBLASLT, "cuBLASLt",
                                                  lt_plan, lt_execute, lt_destroy, NULL};
