/* gemm_cublaslt.h -- what the cuBLASLt backend's files share:
 *   gemm_cublaslt.c        the plan: types, epilogue split, padding rule,
 *                          candidate configurations, the choice, its account
 *   gemm_cublaslt_query.c  cuBLASLt's descriptors and layouts, the
 *                          heuristic query and its cache, invariant plans
 *   gemm_cublaslt_exec.c   execute
 * Never included outside them. */
#ifndef GK_GEMM_CUBLASLT_H
#define GK_GEMM_CUBLASLT_H

#include <stdint.h>

#include <cublasLt.h>

#include "gemm.h"

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
  int32_t amax;     /* 8-bit inputs: amax of D computed (a pointer is set) */
  int32_t unused0;  /* keeps max_ws 8-byte aligned without padding */
  uint64_t max_ws;  /* cuBLASLt's workspace budget */
} lt_config;

/* Cache key: every input of the heuristic. */
typedef struct lt_key {
  int32_t tag, compute, scale, ab, cd, opa, opb, epilogue;
  int32_t batch, align_a, align_b, align_c, align_d, align_bias;
  int32_t bt, ct, biast, mode_a, mode_b, fast, amax, unused0; /* 8-bit inputs */
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
  /* ab: A_l's type, bt: B_l's, ct: C's, biast: the bias's (differ from ab
   * and cd with 8-bit inputs only) */
  cudaDataType_t scale, ab, cd, bt, ct, biast;
  int fp8, fp8d;       /* 8-bit inputs; an 8-bit D */
  int mode_a, mode_b;  /* gko_scale_mode_t of A_l's and B_l's factors */
  int esab, escd, esbias;
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

/* Alignment (bytes) that every batch's pointer has, given the base
 * pointer's alignment: the batch stride can lower it. */
static inline int32_t lt_batched_align(int64_t base_align, int64_t es, int64_t stride,
                                       int64_t batch) {
  int64_t a = base_align > 256 ? 256 : base_align;
  if (batch > 1 && stride != 0) {
    int64_t s = gk_lowbit(stride * es);
    if (s < a) a = s;
  }
  return (int32_t)a;
}

/* The layouts of A_l, B_l and C a configuration uses (D's is st->ld). */
static inline void lt_layouts(const lt_state *st, const lt_config *cfg,
                              const cublasLtMatrixLayoutOpaque_t **la,
                              const cublasLtMatrixLayoutOpaque_t **lb,
                              const cublasLtMatrixLayoutOpaque_t **lc) {
  const int keep = (cfg->padded & LT_KEEP_K) != 0;
  *la = (cfg->padded & 1) ? (keep ? &st->la_padk : &st->la_pad) : &st->la;
  *lb = (cfg->padded & 2) ? (keep ? &st->lb_padk : &st->lb_pad) : &st->lb;
  *lc = cfg->c_is_d ? &st->ld : &st->lc;
}

/* ---- gemm_cublaslt_query.c ---------------------------------------------------- */

/* A failed cuBLAS call as a gko status, the detail naming `what`. */
gko_status_t gk_lt_fail(cublasStatus_t cs, const char *what);
/* A column-major layout of rows x cols, leading dimension ld, and (batch >
 * 1) strided batches. */
cublasStatus_t gk_lt_layout(cublasLtMatrixLayoutOpaque_t *l, cudaDataType_t t, int64_t rows,
                            int64_t cols, int64_t ld, int64_t batch, int64_t stride);
/* The 8-bit factors of one call in the lt view (A_l's and B_l's). */
typedef struct lt_scales {
  const void *a_l, *b_l, *d;
  void *amax;
} lt_scales;

/* The matmul descriptor of p with `epilogue` (and its bias pointer); with
 * 8-bit inputs also the factors' modes and pointers (sc; NULL: none). */
cublasStatus_t gk_lt_desc(cublasLtMatmulDescOpaque_t *od, const lt_state *st,
                          const gk_gemm_problem *p, int32_t epilogue, const void *bias,
                          const lt_scales *sc);
/* Whether cuBLASLt's 8-bit kernels can serve p on h (gemm_fp8.c); every
 * problem without 8-bit inputs: yes. */
int gk_lt_supports(gko_handle_t h, const gk_gemm_problem *p, char *why, size_t cap);
/* cuBLASLt's algorithms for a configuration, from the handle's cache or
 * one heuristic query (host only).  Success with out->found == 0 means no
 * algorithm exists; other statuses are failures of the query itself.
 * Invariant plans: the reference problem's answer, filtered for the real
 * one (rank[i]: the reference rank of the i-th kept algorithm). */
gko_status_t gk_lt_query_ranked(gko_gemm_plan_t plan, const lt_config *cfg, lt_value *out,
                                int32_t *rank);
gko_status_t gk_lt_query(gko_gemm_plan_t plan, const lt_config *cfg, lt_value *out);

/* ---- gemm_cublaslt_exec.c ----------------------------------------------------- */

gko_status_t gk_lt_execute(gko_gemm_plan_t plan, const gk_gemm_args *x);

#endif /* GK_GEMM_CUBLASLT_H */
