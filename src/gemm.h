/* gemm.h -- the GEMM area: the resolved problem, one execute call's
 * arguments, the backend interface and the table of backends, the plan,
 * and what the area's files call across each other:
 *
 *   gemm_desc.c       the descriptor, attribute checks, shape resolution
 *   gemm_plan.c       plans and their queries, AUTO's order, autotune, the
 *                     dispatcher over the table
 *   gemm_execute.c    execute (pointer checks and their memo), gko_gemm
 *   gemm_registry.c   the table of backends
 *   gemm_state.c      the per-handle state (gemm_state.h)
 *   gemm_cublaslt*.c  the cuBLASLt backend; gemm_wmma.c gko's WMMA kernel
 *   gemm_w8.c         weight-only FP8 (16-bit A, 8-bit B) in the WMMA backend
 *   gemm_tiles.c      cuBLASLt's tile names */
#ifndef GK_GEMM_H
#define GK_GEMM_H

#include <stdint.h>

#include "core.h"
#include "gemm_state.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The largest m, n, k (and GKO_GEMM_ATTR_INVARIANT reference) gko hands to
 * cuBLASLt: its heuristic raised SIGFPE near 2^31 (gemm_cublaslt.c).  The
 * conv lowering keeps its GEMMs within it (conv_plan.c). */
#define GK_LT_MAX_DIM ((int64_t)1 << 30)

/* The resolved problem: the user's view (row- or column-major) and the
 * column-major "lt view" cuBLASLt (and any backend) computes:
 *   D_l (ml x nl, ld ldd) = act(alpha * op(A_l) op(B_l) + beta * C_l + bias)
 * Row-major: D_l = D^T, ml = n, nl = m, A_l = B, B_l = A (operand swap);
 * column-major: no swap.  Strides and leading dimensions in elements. */
typedef struct gk_gemm_problem {
  int ab_dtype, cd_dtype;
  int b_dtype;                                  /* B's: ab_dtype, or another 8-bit type */
  int scale_a_mode, scale_b_mode;               /* gko_scale_mode_t (8-bit inputs) */
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
  const float *scale_a, *scale_b, *scale_d; /* 8-bit inputs (NULL: 1) */
  float *amax_d;                            /* NULL: not computed */
  const void *a_l, *b_l;
  void *ws;
  size_t ws_bytes;
  void *stream;
} gk_gemm_args;

enum { GK_GEMM_WHY_BYTES = 1536 };

/* A backend: one row of the table gk_gemm_backends (gemm_registry.c).
 * plan() fills plan->state, plan->ws_bytes and plan->why, or returns
 * NOT_SUPPORTED (detail set) when it cannot serve the problem; AUTO then
 * tries the next backend.  plan->variant selects one of the backend's
 * candidate configurations for the autotuner (0 = the backend's own
 * choice; a variant beyond the last is NOT_SUPPORTED).  execute() gets
 * arguments that are already checked (non-trivial sizes, k > 0,
 * alpha != 0, workspace big enough) and must only enqueue. */
typedef struct gk_gemm_backend {
  int id;           /* its gko_gemm_backend_t */
  const char *name; /* "cuBLASLt": the plan description's prefix, AUTO's reasons */
  const char *tag;  /* "lt": autotune's account of the candidates */
  int max_variant;  /* autotune plans variants 0..max_variant */
  /* nonzero: plan() serves problems without a product (m, n, batch or k
   * 0) itself; else the dispatcher's no-product plan stands in */
  int plans_empty;
  /* Whether the backend can serve p's types on h's GPU: nonzero if so, else
   * 0 with the reason in why[cap] (why may be NULL).  The one place this is
   * decided: AUTO leaves the backend out, a plan for it is NOT_SUPPORTED
   * with the reason.  NULL: every problem. */
  int (*supports)(gko_handle_t h, const gk_gemm_problem *p, char *why, size_t cap);
  /* AUTO: nonzero where this backend is measured to beat the rows before it
   * on p (it is then tried first; docs/gemm.md "AUTO's rules"); called only
   * where supports() accepts p; NULL: never.  auto_first_why is appended
   * to the plan's account when that rule put it first. */
  int (*auto_first)(gko_handle_t h, const gk_gemm_problem *p);
  const char *auto_first_why;
  gko_status_t (*plan)(gko_gemm_plan_t plan);
  gko_status_t (*execute)(gko_gemm_plan_t plan, const gk_gemm_args *args);
  void (*destroy)(gko_gemm_plan_t plan);
} gk_gemm_backend;

/* The table of backends (gemm_registry.c), in AUTO's order. */
enum { GK_GEMM_MAX_BACKENDS = 8 };
extern const gk_gemm_backend *const gk_gemm_backends[];
extern const int gk_gemm_nbackends;
/* The row whose id is `id`; NULL when none is. */
const gk_gemm_backend *gk_gemm_backend_of(int64_t id);

struct gko_gemm_plan_s {
  gko_handle_t handle;
  unsigned long handle_serial; /* handle->serial when planned */
  gk_gemm_problem p;
  const gk_gemm_backend *backend;
  void *state;                 /* the backend's */
  size_t ws_bytes;
  int variant;                 /* candidate configuration (autotune) */
  char why[GK_GEMM_WHY_BYTES];
  /* execute's memo (src/gemm_execute.c): the last pointer set and stream
   * whose device checks passed; taken with a try-lock, never waited on */
  int memo_lock, memo_valid;
  const void *memo_ptr[10];
  void *memo_stream;
};

/* ---- across the area's files ---------------------------------------------- */

/* gemm_desc.c: the descriptor's problem, defaults filled in and every
 * combination checked that does not need the GPU. */
gko_status_t gk_gemm_resolve(gko_gemm_desc_t desc, gk_gemm_problem *p);
/* gemm_desc.c: the problem of gko_gemm's arguments (a descriptor with
 * these attributes and ALIGNMENT = alignment), resolved. */
gko_status_t gk_gemm_resolve_args(gko_dtype_t ab_dtype, gko_dtype_t cd_dtype, gko_op_t transa,
                                  gko_op_t transb, int64_t m, int64_t n, int64_t k,
                                  int64_t lda, int64_t ldb, int64_t ldc, int64_t ldd,
                                  gko_epilogue_t epilogue, int64_t alignment,
                                  gk_gemm_problem *p);
/* gemm_desc.c: elements spanned by A, B and D of p (each at least 1). */
void gk_gemm_spans(const gk_gemm_problem *p, int64_t *a, int64_t *b, int64_t *d);

/* gemm_plan.c: AUTO's list of backends for p, in the order they are tried
 * (at most gk_gemm_nbackends); *nfirst: how many lead the list by their
 * auto_first rule.  No CUDA call. */
int gk_gemm_auto_order(gko_handle_t h, const gk_gemm_problem *p,
                       const gk_gemm_backend **list, int *nfirst);
/* gemm_plan.c: the plan of a resolved problem on h's device. */
gko_status_t gk_gemm_plan_build(gko_handle_t h, const gk_gemm_problem *p,
                                gko_gemm_plan_t *out);
void gk_gemm_plan_free(gko_gemm_plan_t plan);
/* gko_gemm_plan_create for a plan inside another object (conv): not a live
 * object of the caller's, so only gk_gemm_execute and gk_gemm_plan_free
 * take it. */
gko_status_t gk_gemm_plan_create_inner(gko_handle_t handle, gko_gemm_desc_t desc,
                                       gko_gemm_plan_t *plan);
/* "<backend name>: <why>" (gko_gemm_plan_describe's text) into buf[bytes]. */
void gk_gemm_plan_text(gko_gemm_plan_t plan, char *buf, size_t bytes);

/* gemm_execute.c: gko_gemm_execute without clearing the detail. */
gko_status_t gk_gemm_execute(gko_gemm_plan_t plan, float alpha, const void *a, const void *b,
                             float beta, const void *c, void *d, const void *bias, void *ws,
                             size_t ws_bytes, gko_stream_t stream);

/* The 8-bit factors of one call (gko_gemm_execute_scaled). */
typedef struct gk_gemm_scales {
  const float *a, *b, *d;
  float *amax_d;
} gk_gemm_scales;

/* gemm_execute.c: gk_gemm_execute with the 8-bit factors (sc may be NULL). */
gko_status_t gk_gemm_execute_scaled(gko_gemm_plan_t plan, float alpha, const void *a,
                                    const void *b, float beta, const void *c, void *d,
                                    const void *bias, const gk_gemm_scales *sc, void *ws,
                                    size_t ws_bytes, gko_stream_t stream);

/* Weight-only FP8: 16-bit A (the activations) against an 8-bit B (the
 * weights), served by gko's own kernel (gemm_w8.c). */
static inline int gk_gemm_w8(const gk_gemm_problem *p) {
  return !gk_is_fp8(p->ab_dtype) && gk_is_fp8(p->b_dtype);
}

/* gemm_w8.c: the weight-only FP8 plans inside the WMMA backend: whether
 * its rules hold for p (else 0 and why), the plan, the call. */
int gk_w8_supports(gko_handle_t h, const gk_gemm_problem *p, char *why, size_t cap);
gko_status_t gk_w8_plan(gko_gemm_plan_t plan);
gko_status_t gk_w8_execute(gko_gemm_plan_t plan, const gk_gemm_args *args);

/* The bias's dtype: cd_dtype, or BF16 for an 8-bit D (cuBLASLt's rule). */
static inline int gk_gemm_bias_dtype(const gk_gemm_problem *p) {
  return gk_is_fp8(p->cd_dtype) ? GKO_DTYPE_BF16 : p->cd_dtype;
}

/* gemm_tiles.c: readable name of a cuBLASLt tile id ("128x256"); NULL for
 * an id it does not know. */
const char *gk_gemm_tile_name(int id);

/* The alignment (bytes, at most 256) a pointer's value has; NULL: 256. */
static inline int64_t gk_gemm_ptr_align(const void *p) {
  uintptr_t v = (uintptr_t)p;
  uintptr_t low = v & (~v + 1);
  return (!v || low >= 256) ? 256 : (int64_t)low;
}

#ifdef __cplusplus
}
#endif

#endif /* GK_GEMM_H */
