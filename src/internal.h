/*
 * internal.h -- what src/ and kernels/ share.  Never installed.
 *
 * Internal names start with gk_ (not gko_): the linker version script exports
 * gko_* only, and everything is compiled with -fvisibility=hidden.
 */
#ifndef GK_INTERNAL_H
#define GK_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <stdarg.h>

#include "gko.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- errors ------------------------------------------------------------ */

/* Resets the calling thread's detail message (start of every entry point). */
void gk_clear_error(void);
/* Sets the detail message (printf format) and returns status. */
gko_status_t gk_fail(gko_status_t status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* Maps a cudaError_t (passed as int so C++ and C agree) to a gko status and
 * sets the detail to "<what>: <cuda error name>: <cuda error string>". */
gko_status_t gk_cuda_fail(int cuda_error, const char *what);

/* ---- occupancy cache --------------------------------------------------- */

typedef struct gk_occupancy {
  int block;    /* threads per block from cudaOccupancyMaxPotentialBlockSize */
  int grid;     /* blocks that fill the GPU at that block size */
} gk_occupancy;

/* ---- GELU kernels (kernels/gelu.cu) ------------------------------------ */

/* Kernel index: ((dir * 2 + approx) * 3 + dtype) * 2 + vec. */
enum { GK_GELU_NKERNELS = 2 * 2 * 3 * 2 };

/* Fills occ[GK_GELU_NKERNELS] for the current device.  Returns success,
 * NO_KERNEL_IMAGE or CUDA_ERROR (detail set). */
gko_status_t gk_gelu_occupancy(gk_occupancy *occ);

/* Enqueues one GELU pass.  dir 0 = forward (a = x, b unused, out = y),
 * dir 1 = backward (a = x, b = dy, out = dx).  Arguments are already
 * validated; n > 0. */
gko_status_t gk_gelu_launch(const gk_occupancy *occ, int dir, int approx,
                            int dtype, int64_t n, const void *a,
                            const void *b, void *out, void *stream);

/* ---- GEMM (src/gemm*.c, kernels/gemm_*.cu) ------------------------------ */

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

/* kernels/gemm_pad.cu: copies a column-major rows x cols matrix (element
 * size esize = 2 or 4, leading dimension ld_src, batch stride stride_src,
 * 0 = the same matrix for every batch) into dst with leading dimension
 * ld_dst (a multiple of 16 bytes, >= rows) and cols_dst >= cols columns
 * per batch, stride_dst apart (a multiple of 16 bytes); every element of
 * the ld_dst x cols_dst block outside the source is written 0.  dst must be
 * 16-byte aligned.  Sizes > 0. */
gko_status_t gk_gemm_pad_launch(int esize, int64_t rows, int64_t cols,
                                int64_t batch, const void *src, int64_t ld_src,
                                int64_t stride_src, void *dst, int64_t ld_dst,
                                int64_t cols_dst, int64_t stride_dst,
                                void *stream);

/* kernels/gemm_wmma.cu: gko's WMMA Tensor-Core GEMM (f16/bf16 inputs, f32
 * accumulation, fused epilogue) in the lt view: D (m x n, column-major) =
 * act(alpha * op(A) op(B) + beta * C + bias), A stored m x k (opa 0) or
 * k x m (opa 1) column-major, B k x n (opb 0) or n x k (opb 1); batch b at
 * base + b * stride.  Two kernels:
 *   TILED   128 x 128 x 32 block tiles, 8 warps of 64 x 32, shared-memory
 *           stages (4 with cp.async on sm_80+, else 2 with register
 *           prefetch), epilogue fused in the kernel;
 *   SKINNY  min(m, n) <= 16 (decode): the big operand W streamed once,
 *           bnw rows of W per block, k split `splits` ways; splits > 1
 *           writes f32 partials to the workspace and a second kernel sums
 *           them in split order (deterministic) and applies the epilogue. */
enum { GK_WMMA_TILED = 0, GK_WMMA_SKINNY = 1 };
typedef struct gk_wmma_problem {
  int ab_dtype, cd_dtype; /* gko_dtype_t: F16 or BF16; cd ab or F32 */
  int opa, opb, act;      /* act: 0 none, 1 ReLU, 2 GELU-erf, 3 GELU-tanh */
  int bias_on_rows;       /* bias[i] (1) or bias[j] (0) for D(i, j) */
  int has_bias;
  int64_t m, n, k, batch;
  int64_t lda, ldb, ldc, ldd, stride_a, stride_b, stride_c, stride_d, stride_bias;
} gk_wmma_problem;
typedef struct gk_wmma_config {
  int kind;          /* GK_WMMA_TILED or GK_WMMA_SKINNY */
  int async_ok;      /* cp.async kernels are usable (sm_80+, shared memory set) */
  int bnw, bk;       /* SKINNY: rows of W per block, k per stage */
  int splits;        /* SKINNY: k splits (1: epilogue in the main kernel) */
  int64_t kchunk;    /* SKINNY: k per split, a multiple of bk */
  int stages;        /* SKINNY with cp.async: pipeline depth, 4..8 (else 2) */
  int max_stages;    /* SKINNY: the deepest the shared-memory limit allows */
  int blocks_per_sm; /* occupancy of the chosen kernel (plan time) */
} gk_wmma_config;
/* SKINNY: blocks per SM of the kernel cfg selects (bnw, stages, cp.async or
 * not), from the occupancy API; 0 on error (detail set). */
int gk_wmma_skinny_occupancy(const gk_wmma_problem *p, const gk_wmma_config *cfg);
/* Plan time (host): sets the kernels' dynamic shared-memory limits for the
 * current device and fills cfg->async_ok and cfg->blocks_per_sm (cfg->kind,
 * bnw, bk set by the caller).  NOT_SUPPORTED when the device cannot run
 * the kernel (bf16 before sm_80), NO_KERNEL_IMAGE / CUDA_ERROR. */
gko_status_t gk_wmma_setup(const gk_wmma_problem *p, gk_wmma_config *cfg, int cc);
/* Bytes of f32 partial sums a SKINNY configuration needs (0 if splits == 1). */
size_t gk_wmma_partials_bytes(const gk_wmma_problem *p, const gk_wmma_config *cfg);
/* Enqueues the GEMM.  c NULL: beta ignored and C not read; bias NULL: none.
 * ws: 16-byte-aligned partials (SKINNY with splits > 1).  Chooses the
 * cp.async path when allowed and A and B are 16-byte vectorizable, and
 * vector stores where D (and C) allow. */
gko_status_t gk_wmma_launch(const gk_wmma_problem *p, const gk_wmma_config *cfg, float alpha,
                            float beta, const void *a, const void *b, const void *c, void *d,
                            const void *bias, void *ws, void *stream);

/* kernels/gemm_epilogue.cu: for a column-major rows x cols matrix per batch
 * (dtype as gko_dtype_t):
 *   out[r, c] = act(scale * in[r, c] + bias[bias_on_rows ? r : c])
 * in == NULL reads nothing (0); in == out is allowed (same ld and stride);
 * bias == NULL adds nothing; act 0 none, 1 ReLU, 2 GELU-erf, 3 GELU-tanh
 * (math as gko_gelu_forward).  Sizes > 0. */
gko_status_t gk_gemm_epilogue_launch(int dtype, int act, int64_t rows,
                                     int64_t cols, int64_t batch, void *out,
                                     int64_t ld_out, int64_t stride_out,
                                     const void *in, int64_t ld_in,
                                     int64_t stride_in, float scale,
                                     const void *bias, int64_t stride_bias,
                                     int bias_on_rows, void *stream);

/* ---- device checks (src/handle.c) -------------------------------------- */

struct gko_handle_s {
  int device;
  int cc;                 /* 10*major + minor */
  int sm_count;
  int code_path;          /* gko_code_path_t */
  int pageable_access;    /* device can read pageable host memory */
  gk_occupancy gelu_occ[GK_GELU_NKERNELS];
  struct gk_gemm_state *gemm; /* src/gemm.c: cuBLASLt handle, algorithm cache */
};

/* Entry-point check before enqueueing work: the handle is non-NULL, its
 * device is current, the stream (unless NULL, legacy or per-thread, or being
 * captured) is on that device, and each non-NULL pointer in ptrs[0..nptr) is
 * accessible by that device (names[i] names it in the detail message).
 * Capture-safe. */
gko_status_t gk_check_call(gko_handle_t h, void *stream, int nptr,
                           const void *const *ptrs, const char *const *names);
/* [p, p+bytes) and [q, q+bytes2) overlap without being identical starts. */
int gk_partial_overlap(const void *p, size_t bytes, const void *q,
                       size_t bytes2);

/* ---- library facts (src/diag.c) ---------------------------------------- */

/* Classifies what gko_create would report, from the raw inputs; exposed for
 * tests that simulate old drivers and missing kernels.
 *   driver_version: cudaDriverGetVersion (0 = no driver)
 *   count_error:    cudaGetDeviceCount's error (0 = success)
 *   device_count:   number of devices when count_error == 0
 *   cc:             compute capability of the device (10*major + minor)
 * Fills buf with the sentence for the status (may be NULL). */
gko_status_t gk_classify_environment(int driver_version, int runtime_version,
                                     int count_error, int device_count,
                                     int cc, char *buf, size_t buf_bytes);
/* Code path for compute capability cc given the compiled SASS list and PTX. */
int gk_code_path_for(int cc, const int *sass, int nsass, int ptx);
/* The compiled architecture list (from the Makefile). */
int gk_compiled_sass(const int **list);
int gk_compiled_ptx(void);

#ifdef __cplusplus
}
#endif

#endif /* GK_INTERNAL_H */
