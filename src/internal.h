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

/* Appends printf-style text to the NUL-terminated string in buf[cap]
 * (truncating; nothing when it is full).  The plans' "why" accounts. */
void gk_strappendf(char *buf, size_t cap, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

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
  int decode;        /* SKINNY: the DECODE kernel is usable (sm_80+, X
                        k-contiguous, W k- or row-contiguous); execute takes
                        it when W and X are 16-byte vectorizable, else the
                        SKINNY configuration */
  int dsplits;       /* DECODE: k splits */
  int drows;         /* DECODE: W's rows per tile: 16, or 64 (x B only) */
  int dkw;           /* DECODE: warps per tile (1, 2, 4 or 8) */
  int dper;          /* DECODE: tiles per block (dper * dkw <= 8) */
  int dvar;          /* DECODE: kernel variant (0: min(m, n) <= 8; 1: > 8, one block
                        per SM; 2: > 8 capped at 128 registers, two per SM) */
  int64_t dkchunk;   /* DECODE: k per split, a multiple of 128 */
  int dblocks_per_sm;
  int dpdl_ok;       /* DECODE: the kernel that runs was compiled for sm_90+
                        (its griddepcontrol instructions are there) */
  int dpdl;          /* DECODE: launched with programmatic stream
                        serialization (dpdl_ok, W promised static) */
} gk_wmma_config;
/* SKINNY: 1 when n is the small dimension (W = op(A), X = op(B)^T in the lt
 * view), 0 when m is (W = op(B)^T, X = op(A)). */
static inline int gk_wmma_small_n(const gk_wmma_problem *p) {
  return p->n <= 16 && (p->m > 16 || p->m >= p->n);
}
/* Nonzero when a SKINNY problem's layout suits the DECODE kernel: k
 * contiguous in X, k or the rows contiguous in W, leading dimensions and
 * batch strides multiples of 8 elements.  No CUDA call. */
int gk_wmma_decode_layout_ok(const gk_wmma_problem *p);
/* Nonzero when a SKINNY problem's W (the operand with more rows) has k
 * contiguous (x W^T); zero when its rows are (x B). */
int gk_wmma_w_k_contiguous(const gk_wmma_problem *p);
/* SKINNY plans: fills cfg->decode, dsplits, drows, dkw, dper, dkchunk, dblocks_per_sm
 * for a device of `sms` SMs (decode = 0 where the DECODE kernel does not
 * apply or does not fit).  Sets the kernel's dynamic shared-memory limit.
 * CUDA_ERROR (detail set) when a CUDA call fails. */
gko_status_t gk_wmma_decode_config(const gk_wmma_problem *p, gk_wmma_config *cfg, int cc,
                                   int sms);
/* SKINNY: blocks per SM of the kernel cfg selects (bnw, stages, cp.async or
 * not), from the occupancy API; 0 on error (detail set). */
int gk_wmma_skinny_occupancy(const gk_wmma_problem *p, const gk_wmma_config *cfg);
/* Plan time (host): sets the kernels' dynamic shared-memory limits for the
 * current device and fills cfg->async_ok and cfg->blocks_per_sm (cfg->kind,
 * bnw, bk set by the caller).  NOT_SUPPORTED when the device cannot run
 * the kernel (bf16 before sm_80), NO_KERNEL_IMAGE / CUDA_ERROR. */
gko_status_t gk_wmma_setup(const gk_wmma_problem *p, gk_wmma_config *cfg, int cc);
/* Bytes of f32 partial sums a SKINNY configuration needs (0 if splits == 1;
 * the larger of the SKINNY and DECODE splittings). */
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
/* GKO_STATUS_NOT_SUPPORTED (detail: `what` waits for the GPU and cannot run
 * during capture) when stream is being captured, else SUCCESS; the query
 * itself runs in relaxed capture mode, so it never breaks the capture. */
gko_status_t gk_refuse_capture(void *stream, const char *what);
/* [p, p + pb) and [q, q + qb) share a byte (NULL or empty ranges never do). */
int gk_overlap(const void *p, size_t pb, const void *q, size_t qb);
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

/* ---- CSR and SpMM (src/csr.c, src/spmm.c, kernels/csr.cu, kernels/spmm.cu) */

struct gko_csr_s {
  int64_t m, k, nnz;
  const void *row_ptr, *col_ind, *values;
  int index_type; /* gko_index_t */
  int value_type; /* gko_dtype_t */
};

/* Bytes of the index and value types of a valid descriptor. */
static inline size_t gk_csr_isize(const struct gko_csr_s *a) {
  return a->index_type == GKO_INDEX_INT64 ? 8 : 4;
}

/* What kernels/csr.cu's validation found: check is a gko_csr_check_t; row
 * the offending row (-1 if valid); a, b the values the message quotes
 * (START: a = row_ptr[0]; DECREASING: a = row_ptr[row], b = row_ptr[row+1];
 * END: a = row_ptr[m]; COLUMN_RANGE: a = the position, b = the column);
 * sorted and duplicates 1, 0 or -1 (unknown). */
typedef struct gk_csr_verdict {
  int64_t check, row, a, b, sorted, duplicates;
} gk_csr_verdict;

/* Workspace gk_csr_validate_run needs (no alignment slack: the caller adds
 * 255 bytes and aligns).  CUDA_ERROR if a CUB size query fails. */
gko_status_t gk_csr_validate_bytes(const struct gko_csr_s *a, size_t *bytes);
/* Runs the validation on stream (256-byte-aligned ws of at least
 * gk_csr_validate_bytes) and waits for it; fills *out.  m > 0. */
gko_status_t gk_csr_validate_run(const struct gko_csr_s *a, void *ws,
                                 size_t ws_bytes, gk_csr_verdict *out,
                                 void *stream);

/* Row-length statistics over rows [0, m) (CUB TransformReduce), for plans:
 * allocates temporary device memory, runs on stream, waits.  m > 0. */
typedef struct gk_row_stats {
  int64_t max_len, empty_rows;
  double sum_sq; /* sum of squared row lengths */
} gk_row_stats;
gko_status_t gk_csr_row_stats(const struct gko_csr_s *a, gk_row_stats *out,
                              void *stream);

/* Launch shape of one SpMM kernel path (kernels/spmm.cu).  Within a warp:
 * 2^lg_r row groups of 2^(lg_gc + lg_gk) lanes; in a group 2^lg_gc lanes
 * across n (each nv vectors of 16 bytes when vec, else nv elements, per
 * column tile) and 2^lg_gk lanes across the row's entries.  MERGE uses
 * lg_r = 0 and lg_gc + lg_gk = 5. */
typedef struct gk_spmm_shape {
  int vec, nv;
  int lg_gc, lg_gk, lg_r;
  int64_t ntiles;
  int block;    /* threads per block (occupancy API) */
  int64_t grid; /* blocks */
  int64_t row_blocks; /* ROW_SPLIT: row_blocks blocks take rows (the
                       * first ones; the last ones when the plan puts
                       * segments first), the rest long-row segments */
} gk_spmm_shape;

/* One SpMM launch: everything already checked. */
typedef struct gk_spmm_args {
  int kernel; /* GKO_SPMM_KERNEL_ROW_SPLIT, _MERGE or _SCALE */
  int dtype, idx64;
  int64_t m, n, nnz;
  const void *row_ptr, *col_ind, *values;
  const void *B;
  void *C;
  int64_t sbr, sbc, scr, scc; /* element strides: B(i,j) = B[i*sbr + j*sbc] */
  float alpha, beta;
  gk_spmm_shape shape;
  /* MERGE: (row, entry) coordinates of the units' starts, units + 1 pairs;
   * split rows as (row, first unit, completing unit) triples; partial rows
   * in the workspace, 2 per unit, npad floats each. */
  const int64_t *part;
  int64_t units;
  const int64_t *runs;
  int64_t nruns;
  float *partials;
  int64_t npad;
  /* ROW_SPLIT: rows longer than long_len (0: none) run as nseg segments
   * (entry ranges, seg[2 * nseg]) in the blocks other than the row_blocks
   * row blocks (0: all blocks are row blocks) -- after them, or before
   * them when seg_first -- their sums in partial slots (npad floats each)
   * added per row by a second kernel from runs (row, first segment,
   * segments; nruns of them) */
  int64_t long_len, row_blocks, nseg;
  const int64_t *seg;
  int seg_first;
  void *stream;
} gk_spmm_args;

/* Threads per block and blocks per device that
 * cudaOccupancyMaxPotentialBlockSize gives the kernel selected by (kernel,
 * dtype, idx64, vec, nv) -- fix-up and scale kernels by kernel alone --
 * cached per device (thread-safe). */
gko_status_t gk_spmm_occupancy(int kernel, int dtype, int idx64, int vec,
                               int nv, int *block, int *grid);
/* Enqueues the SpMM (and, for MERGE, the fix-up kernel). */
gko_status_t gk_spmm_launch(const gk_spmm_args *a);
/* MERGE plan step: the merge-path coordinates (row, entry) where units
 * 0..units start, unit u at path item u * per_unit of the m + nnz row ends
 * and entries (the last, u = units, is (m, nnz)), into part[2 * (units +
 * 1)], and row_ptr at each start row into rp_at[units + 1] (device
 * arrays), on stream (asynchronous). */
gko_status_t gk_spmm_partition(const struct gko_csr_s *a, int64_t units,
                               int64_t per_unit, int64_t *part, int64_t *rp_at,
                               void *stream);

/* ---- SpMM plan model: pure functions shared by src/spmm.c, kernels/spmm.cu
 * and the host-only tests (tests/test_spmm.c, suite spmm_model), so that
 * the index arithmetic the GPU runs is the arithmetic the tests check. */

#if defined(__CUDACC__)
#define GK_HD __host__ __device__
#else
#define GK_HD
#endif

static inline GK_HD int64_t gk_ceil_div64(int64_t a, int64_t b) { return (a + b - 1) / b; }

static inline int gk_ceil_log2(int64_t v) {
  int l = 0;
  while (((int64_t)1 << l) < v) l++;
  return l;
}

static inline int gk_floor_log2(double v) {
  int l = 0;
  while (v >= 2.0) {
    v /= 2.0;
    l++;
  }
  return l;
}

/* Lane mapping of one SpMM path (vw elements per vector: 16 / element size
 * on the vector path, 1 on the scalar path).  From 16 vectors of n on, each
 * lane owns two vectors (GE-SpMM's coarse-grained warp merging); lanes
 * across n up to 32, then column tiles.  Entry parts: about one load batch
 * (8 / nv entries) of the mean row each; the remaining lanes take more rows
 * (ROW_SPLIT) or more entry parts (MERGE, one row at a time per warp).
 * Invariants (checked by the spmm_model tests): lg_gc + lg_gk + lg_r == 5;
 * MERGE has lg_r == 0; the tiles cover n exactly:
 * (ntiles - 1) * span < n <= ntiles * span, span = 2^lg_gc * nv * vw. */
static inline void gk_spmm_shape_for(int kernel, int64_t n, int vw, double mean,
                                     gk_spmm_shape *s) {
  const int64_t nvec = gk_ceil_div64(n, vw);
  s->vec = vw > 1;
  if (kernel != GKO_SPMM_KERNEL_MERGE) {
    /* ROW_SPLIT: one vector per lane, a group per row as wide as the
     * vectors of n (at most the warp; column tiles beyond) */
    s->nv = 1;
    s->lg_gk = 0;
    s->lg_gc = gk_ceil_log2(nvec < 32 ? nvec : 32);
    s->ntiles = gk_ceil_div64(nvec, (int64_t)1 << s->lg_gc);
    s->lg_r = 5 - s->lg_gc;
    (void)mean;
    return;
  }
  if (nvec > 64) {
    s->lg_gc = 5;
    s->nv = 2;
    s->ntiles = gk_ceil_div64(nvec, 64);
    s->lg_gk = 0;
  } else {
    s->nv = nvec >= 16 ? 2 : 1;
    s->lg_gc = gk_ceil_log2(gk_ceil_div64(nvec, s->nv));
    s->ntiles = 1;
    const int spare = 5 - s->lg_gc;
    int gk = gk_floor_log2(mean * s->nv / 8.0);
    if (gk > spare || kernel == GKO_SPMM_KERNEL_MERGE) gk = spare;
    s->lg_gk = gk;
  }
  s->lg_r = kernel == GKO_SPMM_KERNEL_MERGE ? 0 : 5 - s->lg_gc - s->lg_gk;
}

/* Threads per block for a kernel whose warps are its work items, from the
 * occupancy API's block size (a multiple of 32 up to 1024): as large as
 * that, but halved (in whole warps) while the grid would give fewer than
 * two blocks per SM.  Always a multiple of 32, at least 32: every kernel
 * of spmm.cu derives its warp index from the global thread index and
 * shuffles with a full mask, so a partial warp would both alias another
 * warp's work and shuffle with lanes that do not exist (the first H200 run
 * had blocks of 80 and 56 threads: duplicated rows, illegal addresses,
 * hangs). */
static inline int gk_spmm_fit_block(int occ_block, int64_t warps, int64_t sms) {
  int wpb = occ_block / 32;
  if (wpb < 1) wpb = 1;
  if (sms < 1) sms = 1;
  while (wpb > 2 && gk_ceil_div64(warps, wpb) < 2 * sms) wpb = (wpb + 1) / 2;
  return wpb * 32;
}

/* First column of vector q of column part cp in column tile `tile`: the gc
 * column parts' vector q are contiguous in memory. */
static inline GK_HD int64_t gk_spmm_lane_col(int64_t tile, int q, int gc, int cp, int nv,
                                             int vw) {
  return (tile * (int64_t)gc * nv + (int64_t)q * gc + cp) * vw;
}

/* ROW_SPLIT's block roles: of the grid's blocks, row_blocks take rows
 * (the first ones; the last ones when seg_first) and the others take
 * long-row segments.  Returns block b's index among the row blocks (>= 0)
 * or, for a segment block, -1 - its index among the segment blocks. */
static inline GK_HD int64_t gk_spmm_block_role(int64_t b, int64_t grid, int64_t row_blocks,
                                               int seg_first) {
  if (seg_first) return b >= grid - row_blocks ? b - (grid - row_blocks) : -1 - b;
  return b < row_blocks ? b : -1 - (b - row_blocks);
}

/* ROW_SPLIT's long rows: every row longer than long_len is cut into
 * ceil(len / long_len) segments of near-equal length (multiples of 4
 * entries but the last).  Fills seg[2 * s] = (first entry, end) and
 * runs[3 * r] = (row, first segment, segments) when the arrays are not
 * NULL; returns the number of segments (*nruns the number of long rows).
 * rp: the host copy of row_ptr (idx64 as its type); long_len a multiple
 * of 4 (then no segment is longer than long_len).  Returns -1 when a long
 * row's range is not inside [0, nnz] (a malformed row_ptr). */
static inline int64_t gk_spmm_segments(const void *rp, int idx64, int64_t m, int64_t nnz,
                                       int64_t long_len, int64_t *seg, int64_t *runs,
                                       int64_t *nruns);

/* row_ptr[i] of either index type. */
static inline GK_HD int64_t gk_rp_at(const void *rp, int idx64, int64_t i) {
  return idx64 ? (int64_t)((const int64_t *)rp)[i] : (int64_t)((const int32_t *)rp)[i];
}

static inline int64_t gk_spmm_segments(const void *rp, int idx64, int64_t m, int64_t nnz,
                                       int64_t long_len, int64_t *seg, int64_t *runs,
                                       int64_t *nruns) {
  int64_t ns = 0, nr = 0;
  for (int64_t r = 0; r < m; r++) {
    const int64_t a = gk_rp_at(rp, idx64, r), e = gk_rp_at(rp, idx64, r + 1);
    if (a > e || long_len <= 0 || e - a <= long_len) continue;
    if (a < 0 || e > nnz) {
      *nruns = 0;
      return -1;
    }
    const int64_t parts = gk_ceil_div64(e - a, long_len);
    const int64_t each = gk_ceil_div64(gk_ceil_div64(e - a, parts), 4) * 4;
    if (runs) {
      runs[3 * nr] = r;
      runs[3 * nr + 1] = ns;
    }
    int64_t cnt = 0;
    for (int64_t x = a; x < e; x += each, cnt++, ns++)
      if (seg) {
        seg[2 * ns] = x;
        seg[2 * ns + 1] = x + each < e ? x + each : e;
      }
    if (runs) runs[3 * nr + 2] = cnt;
    nr++;
  }
  *nruns = nr;
  return ns;
}

/* Merge path (Merrill & Garland, SC'16) of A = row ends row_ptr[1..m] and
 * B = entry indices 0..nnz-1: the number of rows i completed before path
 * item d, i.e. the smallest i in [max(0, d - nnz), min(d, m)] with
 * row_ptr[i + 1] > d - i - 1.  The unit starting at d starts at (row i,
 * entry d - i), and row_ptr[i] <= d - i <= row_ptr[i + 1] (valid row_ptr). */
static inline GK_HD int64_t gk_merge_search(const void *rp, int idx64, int64_t m, int64_t nnz,
                                            int64_t d) {
  int64_t lo = d - nnz > 0 ? d - nnz : 0, hi = d < m ? d : m;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (gk_rp_at(rp, idx64, mid + 1) <= d - mid - 1) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/* What unit (i0, j0) .. (i1, j1) does with row r in [i0, i1] (r <= m - 1),
 * whose entries are [s, e): the entries [*a, *b) it sums, and where the
 * sum goes.  merge_kernel and the host's split-row list both use this. */
enum {
  GK_MERGE_SKIP = 0,   /* nothing: row i1 with no entries in this unit */
  GK_MERGE_DIRECT = 1, /* the whole row: C written directly */
  GK_MERGE_HEAD = 2,   /* completes a row begun before: head slot 2u */
  GK_MERGE_TAIL = 3    /* begins or continues row i1: tail slot 2u + 1 */
};
static inline GK_HD int gk_merge_row(int64_t r, int64_t s, int64_t e, int64_t j0, int64_t i1,
                                     int64_t j1, int64_t *a, int64_t *b) {
  const int complete = r < i1;
  *a = s > j0 ? s : j0;
  int64_t end = complete ? (e < j1 ? e : j1) : j1;
  if (end < *a) end = *a;
  *b = end;
  if (!complete) return end > *a ? GK_MERGE_TAIL : GK_MERGE_SKIP;
  return s >= j0 ? GK_MERGE_DIRECT : GK_MERGE_HEAD;
}

/* The rows split between units, from the partition part[2 * (units + 1)]
 * (row, entry) pairs and rp_at[u] = row_ptr[part[2 * u]]: a row split
 * between units is listed once as (row, first unit, completing unit) in
 * runs[3 * nruns] (room for 3 * units).  Returns nruns, or -1 when the
 * partition is inconsistent (a malformed row_ptr): a tail nobody completes,
 * a head nobody began. */
static inline int64_t gk_spmm_split_rows(const int64_t *part, const int64_t *rp_at,
                                         int64_t units, int64_t m, int64_t *runs) {
  int64_t nruns = 0;
  int open = 0;
  for (int64_t u = 0; u < units; u++) {
    const int64_t i0 = part[2 * u], j0 = part[2 * u + 1];
    const int64_t i1 = part[2 * u + 2], j1 = part[2 * u + 3];
    int64_t a, b;
    const int head = i0 < i1 && i0 < m &&
                     gk_merge_row(i0, rp_at[u], rp_at[u], j0, i1, j1, &a, &b) == GK_MERGE_HEAD;
    const int tail = i1 < m && gk_merge_row(i1, rp_at[u + 1], rp_at[u + 1], j0, i1, j1, &a,
                                            &b) == GK_MERGE_TAIL;
    if (head) {
      if (!open || runs[3 * nruns] != i0) return -1;
      runs[3 * nruns + 2] = u;
      nruns++;
      open = 0;
    }
    if (tail) {
      if (open && runs[3 * nruns] != i1) return -1; /* an unterminated row */
      if (!open) {
        runs[3 * nruns] = i1;
        runs[3 * nruns + 1] = u;
        open = 1;
      }
    }
  }
  return open ? -1 : nruns;
}

/* ---- Conv2d (src/conv.c, kernels/im2col.cu) ----------------------------- */

/* Division by a run-time constant d in [1, 2^31) of numerators n < 2^31
 * with one multiply-high and a shift (Granlund & Montgomery, 1994; the form
 * PyTorch's IntDivider uses): q = (umulhi(n, mul) + n) >> shift. */
typedef struct gk_fastdiv {
  uint32_t d, mul, shift;
} gk_fastdiv;
void gk_fastdiv_init(gk_fastdiv *f, uint32_t d);

/* One im2col pass over `images` images (x points at the first).  Element
 * counts; the plan guarantees kp < 2^25 and that images * G * kp (NCHW
 * rows) and images * oh * ow (NHWC rows) stay below 2^31, so per-row and
 * per-block decompositions fit 32 bits (all offsets are int64).
 *   NCHW: col [images][G][kp][ohw_ld], row (g, j) with j < L = Cg*R*S read
 *         from channel g*Cg + j/(R*S), filter tap (j%(R*S))/S, j%S; rows j in
 *         [L, kp) and columns in [oh*ow, ohw_ld) are zeros;
 *   NHWC: col [G][images*oh*ow][kp], column j < L = R*S*Cg read from tap
 *         (j/Cg)/S, (j/Cg)%S, channel g*Cg + j%Cg; columns in [L, kp) zero.
 * col is 256-byte aligned, kp and ohw_ld multiples of 16 bytes.
 * vec_bytes: NHWC load/store width (2, 4, 8 or 16; chosen by the caller so
 * that C, Cg and x's alignment allow it); NCHW always stores 16 bytes. */
typedef struct gk_im2col_args {
  int layout, es, vec_bytes;
  int64_t images, c, h, w, groups, cg, r, s;
  int64_t oh, ow, stride_h, stride_w, pad_h, pad_w, dil_h, dil_w;
  int64_t l, kp, ohw_ld;
  int block; /* threads per block (occupancy API, from the plan) */
  const void *x;
  void *col;
  void *stream;
} gk_im2col_args;

/* Threads per block cudaOccupancyMaxPotentialBlockSize gives the im2col
 * kernel of (layout, es, vec_bytes).  Host query; success or CUDA_ERROR /
 * NO_KERNEL_IMAGE (detail set). */
gko_status_t gk_im2col_occupancy(int layout, int es, int vec_bytes, int *block);
gko_status_t gk_im2col_launch(const gk_im2col_args *a);
/* dst [k][kp] = the KCRS filter src [k][cg][rs] as KRSC (column t*cg + c
 * from tap t of channel c), columns [cg*rs, kp) zero; es 2 or 4; kp < 2^25.
 * rs = 1, cg = L: a plain zero-padded copy of [k][L] rows. */
gko_status_t gk_conv_filter_krsc_launch(int es, int64_t k, int64_t cg, int64_t rs, int64_t kp,
                                        const void *src, void *dst, void *stream);
/* dst [batch][cols][rows] = src [batch][rows][cols] (elements of es = 2 or
 * 4 bytes, raw bits); nothing when a size is 0. */
gko_status_t gk_transpose_batched_launch(int es, int64_t rows, int64_t cols, int64_t batch,
                                         const void *src, void *dst, void *stream);

#ifdef __cplusplus
}
#endif

#endif /* GK_INTERNAL_H */
