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

#include "internal.h"

/* What selects an algorithm within a plan.  No implicit padding: the
 * struct is compared and hashed bytewise. */
typedef struct lt_config {
  int32_t padded;   /* bit 0: A_l copied to a padded operand, bit 1: B_l */
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

typedef struct lt_value {
  cublasLtMatmulAlgo_t algo;
  uint64_t ws;    /* workspace the algorithm needs */
  int32_t found;  /* 0: the heuristic returned no algorithm */
  int32_t count;  /* results returned */
} lt_value;

/* A padded copy of A_l or B_l: the source (column-major rows x cols) and
 * the padded block (ld_pad x cols_pad). */
typedef struct lt_operand {
  int64_t rows, cols, ld, stride;
  int64_t ld_pad, cols_pad, stride_pad, batch_pad;
  size_t bytes;
} lt_operand;

typedef struct lt_state {
  cublasComputeType_t compute;
  cudaDataType_t scale, ab, cd;
  int esab, escd;
  int g;               /* elements per 16 bytes of A/B */
  int64_t k_pad;       /* k rounded up to g */
  lt_operand pa, pb;
  /* layouts: A_l, B_l as given and padded, C, D */
  cublasLtMatrixLayoutOpaque_t la, lb, la_pad, lb_pad, lc, ld;
  int64_t lt_default_budget;
  /* the plan's choice */
  lt_config cfg;
  lt_value val;
  int post_bias, post_act; /* applied by gko's pass after cuBLASLt */
  size_t off_b, off_ws;    /* offsets from the 256-byte aligned workspace base */
} lt_state;

enum { LT_MAX_RESULTS = 8, LT_EP_BIAS_BIT = 4 };
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

static int64_t lowbit(int64_t v) { return v & -v; }

/* Alignment (bytes) that every batch's pointer has, given the base
 * pointer's alignment: the batch stride can lower it. */
static int32_t lt_batched_align(int64_t base_align, int64_t es, int64_t stride, int64_t batch) {
  int64_t a = base_align > 256 ? 256 : base_align;
  if (batch > 1 && stride != 0) {
    int64_t s = lowbit(stride * es);
    if (s < a) a = s;
  }
  return (int32_t)a;
}

static int64_t lt_ptr_align(const void *p) {
  uintptr_t v = (uintptr_t)p;
  uintptr_t low = v & (~v + 1);
  return (!v || low >= 256) ? 256 : (int64_t)low;
}

static int64_t round_up(int64_t v, int64_t g) { return (v + g - 1) / g * g; }
static size_t round256(size_t v) { return (v + 255) & ~(size_t)255; }

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
  *la = (cfg->padded & 1) ? &st->la_pad : &st->la;
  *lb = (cfg->padded & 2) ? &st->lb_pad : &st->lb;
  *lc = cfg->c_is_d ? &st->ld : &st->lc;
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
  key->k = cfg->padded == 3 ? st->k_pad : p->k;
  key->lda = (cfg->padded & 1) ? st->pa.ld_pad : p->lda_l;
  key->ldb = (cfg->padded & 2) ? st->pb.ld_pad : p->ldb_l;
  key->ldc = cfg->c_is_d ? p->ldd : p->ldc;
  key->ldd = p->ldd;
  key->sa = (cfg->padded & 1) ? st->pa.stride_pad : p->stride_a_l;
  key->sb = (cfg->padded & 2) ? st->pb.stride_pad : p->stride_b_l;
  key->sc = cfg->c_is_d ? p->stride_d : p->stride_c;
  key->sd = p->stride_d;
  key->sbias = (cfg->epilogue & LT_EP_BIAS_BIT) ? p->stride_bias : 0;
  key->max_ws = cfg->max_ws;
}

/* cuBLASLt's best algorithm for a configuration, from the handle's cache or
 * one heuristic query (host only).  Success with out->found == 0 means no
 * algorithm exists; other statuses are failures of the query itself. */
static gko_status_t lt_query(gko_gemm_plan_t plan, const lt_config *cfg, lt_value *out) {
  const lt_state *st = plan->state;
  const gk_gemm_problem *p = &plan->p;
  const cublasLtMatrixLayoutOpaque_t *la, *lb, *lc;
  lt_key key;
  lt_pick(st, p, cfg, &la, &lb, &lc, &key);
  if (gk_gemm_cache_lookup(plan->handle, &key, sizeof key, out, sizeof *out))
    return GKO_STATUS_SUCCESS;
  cublasLtHandle_t lt = (cublasLtHandle_t)gk_gemm_lt_handle(plan->handle);
  cublasLtMatmulDescOpaque_t od;
  /* the heuristic infers the bias alignment from the pointer's value */
  const void *fake_bias = (const void *)(uintptr_t)(cfg->align_bias ? cfg->align_bias : 256);
  cublasStatus_t cs = lt_desc(&od, st, p, cfg->epilogue, fake_bias);
  if (cs) return lt_fail(cs, "cublasLtMatmulDescInit/SetAttribute");
  cublasLtMatmulPreferenceOpaque_t pref;
  if ((cs = cublasLtMatmulPreferenceInit(&pref))) return lt_fail(cs, "cublasLtMatmulPreferenceInit");
  uint64_t ws = cfg->max_ws;
  uint32_t al[4] = {(uint32_t)cfg->align_a, (uint32_t)cfg->align_b, (uint32_t)cfg->align_c,
                    (uint32_t)cfg->align_d};
  const cublasLtMatmulPreferenceAttributes_t which[4] = {
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
  cs = cublasLtMatmulPreferenceSetAttribute(&pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws,
                                            sizeof ws);
  for (int i = 0; i < 4 && cs == CUBLAS_STATUS_SUCCESS; i++)
    cs = cublasLtMatmulPreferenceSetAttribute(&pref, which[i], &al[i], sizeof al[i]);
  if (cs) return lt_fail(cs, "cublasLtMatmulPreferenceSetAttribute");
  cublasLtMatmulHeuristicResult_t res[LT_MAX_RESULTS];
  int n = 0;
  memset(res, 0, sizeof res);
  cs = cublasLtMatmulAlgoGetHeuristic(
      lt, &od, (cublasLtMatrixLayout_t)la, (cublasLtMatrixLayout_t)lb,
      (cublasLtMatrixLayout_t)lc, (cublasLtMatrixLayout_t)&st->ld, &pref, LT_MAX_RESULTS, res, &n);
  memset(out, 0, sizeof *out);
  if (cs == CUBLAS_STATUS_SUCCESS && n > 0 && res[0].state == CUBLAS_STATUS_SUCCESS) {
    out->algo = res[0].algo;
    out->ws = res[0].workspaceSize;
    out->found = 1;
    out->count = n;
  } else if (cs != CUBLAS_STATUS_SUCCESS && cs != CUBLAS_STATUS_NOT_SUPPORTED &&
             cs != CUBLAS_STATUS_INVALID_VALUE) {
    return lt_fail(cs, "cublasLtMatmulAlgoGetHeuristic"); /* not cached */
  }
  /* negative answers are cached too: a fallback that does not exist is not
   * asked for again on every execute */
  return gk_gemm_cache_insert(plan->handle, &key, sizeof key, out, sizeof *out);
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
  o->ld_pad = round_up(rows_pad > 0 ? rows_pad : 1, g);
  o->cols_pad = k_is_rows ? o->cols : k_pad;
  o->batch_pad = (stride == 0 && batch > 1) ? 1 : batch;
  o->stride_pad = (stride == 0 && batch > 1) ? 0 : o->ld_pad * o->cols_pad;
  o->bytes = (size_t)o->ld_pad * (size_t)o->cols_pad * (size_t)o->batch_pad * (size_t)es;
}

/* ---- plan ----------------------------------------------------------------------- */

static void lt_destroy(gko_gemm_plan_t plan) {
  free(plan->state);
  plan->state = NULL;
}

/* Appends to plan->why. */
static void why_add(gko_gemm_plan_t plan, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static void why_add(gko_gemm_plan_t plan, const char *fmt, ...) {
  size_t used = strlen(plan->why);
  if (used + 1 >= sizeof plan->why) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(plan->why + used, sizeof plan->why - used, fmt, ap);
  va_end(ap);
}

static size_t lt_total_ws(const lt_state *st, const lt_config *cfg, uint64_t lt_ws,
                          size_t *off_b, size_t *off_ws) {
  size_t a = (cfg->padded & 1) ? round256(st->pa.bytes) : 0;
  size_t b = (cfg->padded & 2) ? round256(st->pb.bytes) : 0;
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
  st->k_pad = round_up(p->k, st->g);
  /* A_l is stored ml x k (op N) or k x ml (op T); B_l k x nl (N) or nl x k */
  lt_operand_init(&st->pa, p->opa_l, p->ml, p->k, st->k_pad, p->lda_l, p->stride_a_l, p->batch,
                  st->g, st->esab);
  lt_operand_init(&st->pb, !p->opb_l, p->nl, p->k, st->k_pad, p->ldb_l, p->stride_b_l,
                  p->batch, st->g, st->esab);
  if ((cs = lt_layout(&st->la, st->ab, ar, ac, p->lda_l, p->batch, p->stride_a_l)) ||
      (cs = lt_layout(&st->lb, st->ab, br, bc, p->ldb_l, p->batch, p->stride_b_l)) ||
      (cs = lt_layout(&st->lc, st->cd, p->ml, p->nl, p->ldc, p->batch, p->stride_c)) ||
      (cs = lt_layout(&st->ld, st->cd, p->ml, p->nl, p->ldd, p->batch, p->stride_d))) {
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
  const int a_bad = k_odd || p->lda_l % st->g != 0 || align_a < 16;
  const int b_bad = k_odd || p->ldb_l % st->g != 0 || align_b < 16;
  const int fix_mask = k_odd ? 3 : (a_bad ? 1 : 0) | (b_bad ? 2 : 0);
  int pad_mask = 0;
  char pad_why[320] = "", reason[160] = "";
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
    double copy = 0, saved = 0;
    if (fix_mask & 1)
      copy += (double)st->pa.bytes + (double)ar * (double)ac * st->esab * st->pa.batch_pad;
    if (fix_mask & 2)
      copy += (double)st->pb.bytes + (double)br * (double)bc * st->esab * st->pb.batch_pad;
    int ncopies = (fix_mask & 1) + ((fix_mask >> 1) & 1);
    int pays = lt_pad_pays(p, copy, ncopies, &saved);
    snprintf(pad_why, sizeof pad_why,
             "%s; padding rule: saves ~%.3g MB of copy time, costs %.3g MB copied + %d x "
             "%.3g MB fixed -> %s",
             reason, saved / 1e6, copy / 1e6, ncopies, kPadFixedBytes / 1e6,
             pays ? "pad" : "no padding");
    if (pays) pad_mask = fix_mask;
  } else if (p->pad == GKO_GEMM_PAD_NEVER && fix_mask) {
    snprintf(pad_why, sizeof pad_why, "%s; GKO_GEMM_PAD_NEVER", reason);
  }
  size_t pad_bytes = 0;
  if (pad_mask & 1) pad_bytes += round256(st->pa.bytes);
  if (pad_mask & 2) pad_bytes += round256(st->pb.bytes);
  if (pad_mask && p->max_workspace >= 0 && (int64_t)(pad_bytes + 255) > p->max_workspace) {
    why_add(plan, "(padding skipped: %zu bytes of copies exceed GKO_GEMM_ATTR_MAX_WORKSPACE) ",
            pad_bytes);
    pad_mask = 0;
  }

  /* ---- candidates, in order of preference -------------------------------------- */
  lt_config cand[4];
  int ncand = 0;
  const int c_is_d = p->ldc == p->ldd && p->stride_c == p->stride_d;
  for (int pass = 0; pass < 2; pass++) {
    int mask = pass == 0 ? pad_mask : (pad_mask ? 0 : fix_mask);
    if (pass == 1) {
      /* the other choice, when allowed: unpadded after padded unless ALWAYS;
       * padded after unpadded unless NEVER or nothing to fix */
      if (pad_mask && p->pad == GKO_GEMM_PAD_ALWAYS) break;
      if (!pad_mask && (p->pad == GKO_GEMM_PAD_NEVER || mask == 0)) break;
    }
    size_t pb = 0;
    if (mask & 1) pb += round256(st->pa.bytes);
    if (mask & 2) pb += round256(st->pb.bytes);
    int64_t budget = st->lt_default_budget;
    if (p->max_workspace >= 0) {
      int64_t left = p->max_workspace - (int64_t)pb - 255;
      if (left < 0) {
        if (mask) continue;
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
      c->align_a = (mask & 1) ? lt_batched_align(256, st->esab, st->pa.stride_pad, st->pa.batch_pad) : align_a;
      c->align_b = (mask & 2) ? lt_batched_align(256, st->esab, st->pb.stride_pad, st->pb.batch_pad) : align_b;
      c->align_c = c_is_d ? align_d : align_c;
      c->align_d = align_d;
      c->align_bias = (c->epilogue & LT_EP_BIAS_BIT) ? bias_align : 0;
      c->max_ws = (uint64_t)budget;
    }
  }
  /* layouts of the padded operands (used by candidates with padding) */
  if ((cs = lt_layout(&st->la_pad, st->ab, p->opa_l ? st->k_pad : p->ml,
                      p->opa_l ? p->ml : st->k_pad, st->pa.ld_pad, p->batch,
                      st->pa.stride_pad)) ||
      (cs = lt_layout(&st->lb_pad, st->ab, p->opb_l ? p->nl : st->k_pad,
                      p->opb_l ? st->k_pad : p->nl, st->pb.ld_pad, p->batch,
                      st->pb.stride_pad))) {
    s = lt_fail(cs, "cublasLtMatrixLayoutInit");
    goto fail;
  }
  /* a padded A_l with an unpadded k is only used when k is aligned: then
   * k_pad == k and the padded layouts hold the same k as the others */

  int chosen = -1;
  char tried[256] = "";
  for (int i = 0; i < ncand; i++) {
    lt_value v;
    if ((s = lt_query(plan, &cand[i], &v))) goto fail;
    if (v.found) {
      chosen = i;
      st->cfg = cand[i];
      st->val = v;
      break;
    }
    size_t u = strlen(tried);
    snprintf(tried + u, sizeof tried - u, "%s[%s%s, epilogue %s, align A/B/C/D %d/%d/%d/%d]",
             u ? ", " : "", cand[i].padded ? "padded " : "",
             cand[i].padded == 3 ? "A+B" : cand[i].padded == 1 ? an : cand[i].padded == 2 ? bn : "unpadded",
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
  plan->ws_bytes = lt_total_ws(st, &st->cfg, st->val.ws, &st->off_b, &st->off_ws);

  /* ---- why ------------------------------------------------------------------- */
  {
    int32_t id = -1;
    uint32_t tile = 0, stages = 0, splitk = 0, swz = 0;
    size_t w;
    cublasLtMatmulAlgoConfigGetAttribute(&st->val.algo, CUBLASLT_ALGO_CONFIG_ID, &id, sizeof id, &w);
    cublasLtMatmulAlgoConfigGetAttribute(&st->val.algo, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile,
                                         sizeof tile, &w);
    cublasLtMatmulAlgoConfigGetAttribute(&st->val.algo, CUBLASLT_ALGO_CONFIG_STAGES_ID, &stages,
                                         sizeof stages, &w);
    cublasLtMatmulAlgoConfigGetAttribute(&st->val.algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &splitk,
                                         sizeof splitk, &w);
    cublasLtMatmulAlgoConfigGetAttribute(&st->val.algo, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, &swz,
                                         sizeof swz, &w);
    const char *tn = gk_gemm_tile_name((int)tile);
    char tbuf[24];
    if (!tn) {
      snprintf(tbuf, sizeof tbuf, "#%u", tile);
      tn = tbuf;
    }
    why_add(plan, "algo %d tile %s stages-id %u splitK %u swizzle %u (heuristic #1 of %d"
            "%s); compute %s; ",
            (int)id, tn, stages, splitk, swz, st->val.count, chosen ? ", after fallbacks" : "",
            st->compute == CUBLAS_COMPUTE_32F_FAST_TF32 ? "TF32 (f32 accumulate)"
            : st->compute == CUBLAS_COMPUTE_16F         ? "f16 accumulate"
                                                        : "f32 accumulate");
    if (p->swap) why_add(plan, "row-major as D^T = op(B)^T op(A)^T; ");
    if (p->epilogue)
      why_add(plan, "epilogue: cuBLASLt %s%s%s%s%s; ", lt_epilogue_name(st->cfg.epilogue),
              (post_bias || post_act) ? ", then gko's pass " : "",
              post_bias ? "bias" : "", post_bias && post_act ? "+" : "",
              post_act ? gk_act_name(post_act) : "");
    if (st->cfg.padded) {
      const char *who = st->cfg.padded == 3 ? "A and B" : st->cfg.padded == 1 ? an : bn;
      why_add(plan, "%s copied to padded operands (k = %lld, lds %lld/%lld): %s; ", who,
              (long long)(st->cfg.padded == 3 ? st->k_pad : p->k), (long long)st->pa.ld_pad,
              (long long)st->pb.ld_pad, pad_why);
    } else if (pad_why[0]) {
      why_add(plan, "not padded: %s; ", pad_why);
    }
    if (chosen) why_add(plan, "no algorithm for: %s; ", tried);
    why_add(plan, "workspace %zu bytes (cuBLASLt %llu of budget %llu)", plan->ws_bytes,
            (unsigned long long)st->val.ws, (unsigned long long)st->cfg.max_ws);
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
  lt_value val = st->val;
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
  if (cfg.padded & 1) {
    s = gk_gemm_pad_launch(st->esab, st->pa.rows, st->pa.cols, st->pa.batch_pad, x->a_l,
                           st->pa.ld, st->pa.stride, base, st->pa.ld_pad, st->pa.cols_pad,
                           st->pa.stride_pad, x->stream);
    if (s) return s;
    a_l = base;
  }
  if (cfg.padded & 2) {
    s = gk_gemm_pad_launch(st->esab, st->pb.rows, st->pb.cols, st->pb.batch_pad, x->b_l,
                           st->pb.ld, st->pb.stride, base + st->off_b, st->pb.ld_pad,
                           st->pb.cols_pad, st->pb.stride_pad, x->stream);
    if (s) return s;
    b_l = base + st->off_b;
  }
  void *lt_ws = NULL;
  size_t lt_ws_bytes = 0;
  if (base && avail > st->off_ws) {
    lt_ws = base + st->off_ws;
    lt_ws_bytes = avail - st->off_ws;
  }

  cublasLtMatmulDescOpaque_t od;
  cublasStatus_t cs = lt_desc(&od, st, p, cfg.epilogue, x->bias);
  if (cs) return lt_fail(cs, "cublasLtMatmulDescInit/SetAttribute");
  const cublasLtMatrixLayoutOpaque_t *la, *lb, *lc;
  lt_key key;
  lt_pick(st, p, &cfg, &la, &lb, &lc, &key);
  uint16_t ah = 0, bh = 0;
  const void *alpha = &x->alpha, *beta = &x->beta;
  if (st->scale == CUDA_R_16F) {
    ah = lt_float_to_half(x->alpha);
    bh = lt_float_to_half(x->beta);
    alpha = &ah;
    beta = &bh;
  }
  cs = cublasLtMatmul((cublasLtHandle_t)gk_gemm_lt_handle(h), &od, alpha, a_l,
                      (cublasLtMatrixLayout_t)la, b_l, (cublasLtMatrixLayout_t)lb, beta, cptr,
                      (cublasLtMatrixLayout_t)lc, x->d, (cublasLtMatrixLayout_t)&st->ld,
                      &val.algo, lt_ws, lt_ws_bytes, (cudaStream_t)x->stream);
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
                                                  lt_plan, lt_execute, lt_destroy};
