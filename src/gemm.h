/* gemm.h -- the GEMM area (src/gemm_*.c): the resolved problem, one
 * execute call's arguments, the backend interface, the plan, and the
 * per-handle state. */
#ifndef GK_GEMM_H
#define GK_GEMM_H

#include "core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The largest m, n, k (and GKO_GEMM_ATTR_INVARIANT reference) gko hands to
 * cuBLASLt: its heuristic raised SIGFPE near 2^31 (gemm_cublaslt.c).  The
 * conv lowering keeps its GEMMs within it (conv.c). */
#define GK_LT_MAX_DIM ((int64_t)1 << 30)

/* The resolved problem: the user's view (row- or column-major) and the
 * column-major "lt view" cuBLASLt (and any backend) computes:
 *   D_l (ml x nl, ld ldd) = act(alpha * op(A_l) op(B_l) + beta * C_l + bias)
 * Row-major: D_l = D^T, ml = n, nl = m, A_l = B, B_l = A (operand swap);
 * column-major: no swap.  Strides and leading dimensions in elements. */
typedef struct gk_gemm_problem {
  int ab_dtype, cd_dtype;
  int64_t m, n, k;
  int transa, transb, layout;
  int64_t lda, ldb, ldc, ldd;                   /* defaults resolved */
  int64_t batch;
  int64_t stride_a, stride_b, stride_c, stride_d, stride_bias;
  int epilogue, compute, backend, fusion, pad;
  int autotune;                                 /* GKO_GEMM_ATTR_AUTOTUNE */
  int static_ops;                               /* GKO_GEMM_ATTR_STATIC_OPERANDS */
  int64_t invariant;                            /* GKO_GEMM_ATTR_INVARIANT: 0, or R */
  int64_t alignment;                            /* promise, bytes */
  int64_t max_workspace;                        /* -1: no bound */
  /* lt view */
  int swap;
  int64_t ml, nl;
  int opa_l, opb_l;                             /* 0 = N, 1 = T */
  int64_t lda_l, ldb_l, stride_a_l, stride_b_l;
  int bias_on_rows;                             /* bias indexed by D_l's row */
} gk_gemm_problem;

/* One execute call, pointers in the user's naming (a, b) and lt view. */
typedef struct gk_gemm_args {
  float alpha, beta;
  const void *a, *b, *c;
  void *d;
  const void *bias;
  const void *a_l, *b_l;
  void *ws;
  size_t ws_bytes;
  void *stream;
} gk_gemm_args;

enum { GK_GEMM_WHY_BYTES = 1536 };

/* A backend: cuBLASLt (src/gemm_cublaslt.c) and gko's WMMA kernel
 * (src/gemm_wmma.c).  plan() fills plan->state, plan->ws_bytes and
 * plan->why, or returns NOT_SUPPORTED (detail set) when it cannot serve the
 * problem; AUTO then tries the next backend.  plan->variant selects one of
 * the backend's candidate configurations for the autotuner (0 = the
 * backend's own choice; a variant beyond the last is NOT_SUPPORTED).
 * execute() gets arguments that are already checked (non-trivial sizes,
 * k > 0, alpha != 0, workspace big enough) and must only enqueue. */
typedef struct gk_gemm_backend {
  int id; /* gko_gemm_backend_t */
  const char *name;
  gko_status_t (*plan)(gko_gemm_plan_t plan);
  gko_status_t (*execute)(gko_gemm_plan_t plan, const gk_gemm_args *args);
  void (*destroy)(gko_gemm_plan_t plan);
  /* AUTO: nonzero where this backend is measured to beat the other on p
   * (it is then tried first; docs/gemm.md "AUTO's rules"); NULL: never */
  int (*auto_first)(gko_handle_t h, const gk_gemm_problem *p);
} gk_gemm_backend;

extern const gk_gemm_backend gk_gemm_cublaslt_backend;
extern const gk_gemm_backend gk_gemm_wmma_backend;

struct gko_gemm_plan_s {
  gko_handle_t handle;
  gk_gemm_problem p;
  const gk_gemm_backend *backend;
  void *state;                 /* the backend's */
  size_t ws_bytes;
  int variant;                 /* candidate configuration (autotune) */
  char why[GK_GEMM_WHY_BYTES];
  /* execute's memo (src/gemm.c): the last pointer set and stream whose
   * device checks passed; taken with a try-lock, never waited on */
  int memo_lock, memo_valid;
  const void *memo_ptr[6];
  void *memo_stream;
};

/* Per-handle GEMM state (src/gemm.c): algorithm cache, mutex. */
struct gk_gemm_state;
gko_status_t gk_gemm_handle_init(gko_handle_t h);
void gk_gemm_handle_fini(gko_handle_t h);
/* The process-wide cuBLASLt handle of h's device (cublasLtHandle_t). */
void *gk_gemm_lt_handle(gko_handle_t h);
/* Algorithm cache: key and value are opaque byte strings of fixed size
 * (the cuBLASLt backend's).  lookup copies the value out and returns 1 on a
 * hit; insert keeps the first value stored for a key.  Thread-safe. */
int gk_gemm_cache_lookup(gko_handle_t h, const void *key, size_t key_bytes,
                         void *value, size_t value_bytes);
gko_status_t gk_gemm_cache_insert(gko_handle_t h, const void *key,
                                  size_t key_bytes, const void *value,
                                  size_t value_bytes);
/* Readable tile name of a cuBLASLt tile id ("128x256"), src/gemm_tiles.c. */
const char *gk_gemm_tile_name(int id);

#ifdef __cplusplus
}
#endif

#endif /* GK_GEMM_H */
