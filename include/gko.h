/*
 * gko.h -- the public C ABI of gko, a small library of CUDA operators.
 *
 * Pure C99; includes only <stddef.h> and <stdint.h>; usable from C++ and from
 * Python's ctypes.  Every function returns gko_status_t (0 is success), never
 * aborts, exits or prints, and leaves its outputs untouched when it fails.
 *
 * Conventions used throughout this header
 *   - Sizes, dimensions, leading dimensions and strides are int64_t and count
 *     ELEMENTS; buffer capacities are size_t and count BYTES.
 *   - Every call that does GPU work takes the stream as its last argument
 *     (NULL is the legacy default stream).  Such calls are asynchronous with
 *     respect to the host unless their documentation says otherwise.
 *   - Each function's documentation ends with the same three lines:
 *       Storage:  whether it allocates (host or device memory).
 *       Async:    whether it returns before the GPU work is done.
 *       Capture:  whether it may be called while the stream is being captured
 *                 into a CUDA graph.
 *   - A handle is bound to the device that is current when it is created; a
 *     call made while another device is current, or with a stream or a device
 *     pointer of another device, returns GKO_STATUS_DEVICE_MISMATCH.  One
 *     exception: a stream that is being captured is not asked for its device
 *     (the query is skipped during capture): a capturing stream of another
 *     device is reported by CUDA (at the launch or when the graph runs), not
 *     as GKO_STATUS_DEVICE_MISMATCH.
 *   - Pointers the GPU reads or writes are checked at the call: device memory
 *     (of the handle's device), managed memory and mapped pinned host memory
 *     pass; pageable host memory passes only where the device can access it
 *     (cudaDevAttrPageableMemoryAccess), else GKO_STATUS_INVALID_VALUE.
 *     While the stream is being captured, an address the driver reports as
 *     unregistered is accepted unchecked: memory the graph itself allocates
 *     (cudaMallocAsync on the capturing stream, a graph memory node) is not
 *     mapped until the graph runs and cannot be told from host memory.
 *   - When a call fails, gko_last_error_detail() returns a sentence (for the
 *     calling thread) that names the offending argument and the reason.
 *   - Objects (handles, descriptors, plans, CSR matrices) are looked up in
 *     gko's table of live objects before anything is read through them: an
 *     object destroyed already, a pointer gko never returned, or an object
 *     of another kind gives GKO_STATUS_INVALID_HANDLE (the detail names the
 *     argument, its address and its type) from every function, and nothing
 *     is read, written or freed.  NULL gives GKO_STATUS_INVALID_VALUE,
 *     except in destroy functions (gko_destroy, gko_*_desc_destroy,
 *     gko_*_plan_destroy, gko_csr_destroy), where it is a no-op; a second
 *     destroy is GKO_STATUS_INVALID_HANDLE.  Descriptors, plans and CSR
 *     matrices are looked up first; a handle after the checks of the
 *     arguments that do not need it (so a bad argument is reported as
 *     such), but before the call does anything with it or returns
 *     success.  A lookup costs a few nanoseconds when the calling thread
 *     has looked the object up since the last destroy of any object, else
 *     a shared reader lock (tens of nanoseconds).  Two misuses stay
 *     undefined: destroying an object while another thread's call is
 *     still using it, and a stale pointer whose address gko has since
 *     returned again for a new object of the same kind (it then names the
 *     new object).
 *
 * ABI: while GKO_VERSION_MAJOR is 0 the ABI may change between minor versions;
 * every change is listed in CHANGELOG.md.  Enumerations only grow, have
 * explicit values and are int-sized.  Handles are opaque.
 */
#ifndef GKO_H
#define GKO_H

#include <stddef.h>
#include <stdint.h>

/* ------------------------------------------------------------------------ */
/* Export macro                                                              */
/* ------------------------------------------------------------------------ */
#ifndef GKO_API
#if defined(_WIN32)
#define GKO_API
#elif defined(__GNUC__) && (__GNUC__ >= 4)
#define GKO_API __attribute__((visibility("default")))
#else
#define GKO_API
#endif
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------ */
/* Versions                                                                  */
/* ------------------------------------------------------------------------ */
#define GKO_VERSION_MAJOR 0
#define GKO_VERSION_MINOR 1
#define GKO_VERSION_PATCH 0
/* MAJOR*10000 + MINOR*100 + PATCH, e.g. 100 for 0.1.0. */
#define GKO_VERSION_NUMBER \
  (GKO_VERSION_MAJOR * 10000 + GKO_VERSION_MINOR * 100 + GKO_VERSION_PATCH)

/* The version of the library actually loaded (compare with
 * GKO_VERSION_NUMBER to detect a header/library mismatch).
 * Storage: none.  Async: no.  Capture: yes. */
GKO_API unsigned gko_version_number(void);
/* "MAJOR.MINOR.PATCH", static storage, never NULL.
 * Storage: none.  Async: no.  Capture: yes. */
GKO_API const char *gko_version_string(void);

/* ------------------------------------------------------------------------ */
/* Status codes                                                              */
/* ------------------------------------------------------------------------ */
typedef enum gko_status_e {
  GKO_STATUS_SUCCESS = 0,
  /* An argument is out of its documented range (the detail says which). */
  GKO_STATUS_INVALID_VALUE = 1,
  /* A valid request this build, backend or GPU cannot serve. */
  GKO_STATUS_NOT_SUPPORTED = 2,
  /* No NVIDIA driver was found, or it reports no CUDA device. */
  GKO_STATUS_NO_DEVICE = 3,
  /* The installed driver is older than the CUDA runtime gko was built with
   * (see gko_diagnostics for both versions). */
  GKO_STATUS_DRIVER_TOO_OLD = 4,
  /* The library holds neither machine code (SASS) nor PTX this GPU can run. */
  GKO_STATUS_NO_KERNEL_IMAGE = 5,
  /* A host or device allocation failed. */
  GKO_STATUS_ALLOC_FAILED = 6,
  /* The workspace passed is smaller than the plan's *_workspace_size(). */
  GKO_STATUS_INSUFFICIENT_WORKSPACE = 7,
  /* A CUDA runtime or library call failed (the detail names it). */
  GKO_STATUS_CUDA_ERROR = 8,
  /* The CUDA context is in a sticky error state (a kernel faulted, possibly
   * not gko's); the process must re-create its context. */
  GKO_STATUS_EXECUTION_FAILED = 9,
  /* A bug in gko: please report the detail message. */
  GKO_STATUS_INTERNAL = 10,
  /* The handle's device is not the current device, or a stream or pointer
   * belongs to another device. */
  GKO_STATUS_DEVICE_MISMATCH = 11,
  /* An object argument (handle, descriptor, plan, CSR matrix) is not a live
   * object of its kind: destroyed already, never returned by gko, or of
   * another kind.  Nothing was read through it. */
  GKO_STATUS_INVALID_HANDLE = 12
} gko_status_t;

/* Short constant name of a status ("GKO_STATUS_INVALID_VALUE"); an unknown
 * value gives "GKO_STATUS_UNKNOWN".  Never NULL, static storage.
 * Storage: none.  Async: no.  Capture: yes. */
GKO_API const char *gko_status_name(gko_status_t status);
/* One-sentence description of a status.  Never NULL, static storage.
 * Storage: none.  Async: no.  Capture: yes. */
GKO_API const char *gko_status_string(gko_status_t status);
/* Detail of the most recent failed gko call on the calling thread: which
 * argument or CUDA call failed and why.  "" when the most recent call
 * succeeded (every call that returns gko_status_t resets it).
 * Thread-local storage, valid until the thread's next gko call; never NULL.
 * Storage: none.  Async: no.  Capture: yes. */
GKO_API const char *gko_last_error_detail(void);

/* ------------------------------------------------------------------------ */
/* Basic types                                                               */
/* ------------------------------------------------------------------------ */
/* Element types of tensors.  f16 is IEEE binary16, bf16 is bfloat16.
 * F8E4M3 and F8E5M2 are the OCP 8-bit floating-point formats (OCP 8-bit
 * Floating Point Specification, 2023): E4M3 has 4 exponent and 3 mantissa
 * bits, a largest finite value of 448, NaN (S.1111.111) and no infinities;
 * E5M2 has 5 and 2, a largest finite value of 57344, IEEE infinities and
 * NaNs.  The 8-bit types are storage for GEMM (gko_gemm_desc_create) and
 * for gko_quantize / gko_dequantize; every other operator answers
 * GKO_STATUS_NOT_SUPPORTED for them. */
typedef enum gko_dtype_e {
  GKO_DTYPE_F32 = 0,
  GKO_DTYPE_F16 = 1,
  GKO_DTYPE_BF16 = 2,
  GKO_DTYPE_F8E4M3 = 3,
  GKO_DTYPE_F8E5M2 = 4
} gko_dtype_t;

/* Size in bytes of one element of dtype, or 0 for an unknown dtype.
 * Storage: none.  Async: no.  Capture: yes. */
GKO_API size_t gko_dtype_size(gko_dtype_t dtype);

/* How the f32 factors of 8-bit data are laid out (gko_quantize,
 * gko_dequantize, gko_gemm_execute_scaled). */
typedef enum gko_scale_mode_e {
  /* one factor for the whole tensor */
  GKO_SCALE_TENSOR = 0,
  /* one factor per row: gko_quantize/_dequantize, rows values; GEMM (as
   * torch._scaled_mm's row-wise scaling, cuBLASLt's outer-vector mode):
   * scale_a has m values, one per row of op(A), scale_b n values, one per
   * column of op(B) (per output channel of x * W^T) */
  GKO_SCALE_ROWWISE = 1
} gko_scale_mode_t;

/* The same type as cudaStream_t and CUstream: pass your streams as they are.
 * NULL is the legacy default stream. */
typedef struct CUstream_st *gko_stream_t;

/* Opaque library handle. */
typedef struct gko_handle_s *gko_handle_t;

/* ------------------------------------------------------------------------ */
/* Handle                                                                    */
/* ------------------------------------------------------------------------ */
/* Creates a handle bound to the current CUDA device (cudaGetDevice).
 * Checks, in this order, and returns:
 *   GKO_STATUS_INVALID_VALUE    handle is NULL;
 *   GKO_STATUS_NO_DEVICE        no driver, or no CUDA device;
 *   GKO_STATUS_DRIVER_TOO_OLD   the driver cannot run gko's CUDA runtime;
 *   GKO_STATUS_NO_KERNEL_IMAGE  no SASS or PTX in the library for this GPU;
 *   GKO_STATUS_ALLOC_FAILED     host allocation failed;
 *   GKO_STATUS_CUDA_ERROR       another CUDA failure (the detail names it).
 * On failure *handle is left unchanged.  A handle may be used from several
 * threads at once provided every concurrent call has its own workspace.
 * Storage: allocates host memory (freed by gko_destroy); creates the CUDA
 *          primary context of the device if it does not exist yet, and the
 *          first handle of a device creates the cuBLASLt handle that all
 *          gko handles of that device share for the life of the process.
 * Async: no.  Capture: no (may initialise the device). */
GKO_API gko_status_t gko_create(gko_handle_t *handle);
/* Destroys a handle; NULL is a no-op (returns success); a handle destroyed
 * already is GKO_STATUS_INVALID_HANDLE (nothing freed).  The caller must
 * make sure no work enqueued through the handle's plans is still needed;
 * the plans stay valid to query and destroy, not to execute.
 * Storage: frees what gko_create and the handle's caches allocated.
 * Async: no.  Capture: no. */
GKO_API gko_status_t gko_destroy(gko_handle_t handle);
/* The CUDA device ordinal the handle is bound to.
 * Returns GKO_STATUS_INVALID_VALUE if either argument is NULL.
 * Storage: none.  Async: no.  Capture: yes. */
GKO_API gko_status_t gko_handle_device(gko_handle_t handle, int *device);

/* ------------------------------------------------------------------------ */
/* Diagnostics: the driver / runtime / architecture picture in one call      */
/* ------------------------------------------------------------------------ */
/* How this GPU runs gko's kernels. */
typedef enum gko_code_path_e {
  GKO_CODE_PATH_NONE = 0,     /* no compatible code: NO_KERNEL_IMAGE */
  GKO_CODE_PATH_SASS = 1,     /* native machine code for this architecture */
  GKO_CODE_PATH_PTX_JIT = 2   /* PTX compiled by the driver at load time */
} gko_code_path_t;

typedef enum gko_query_e {
  /* Number of CUDA devices (0 with no driver or no device). */
  GKO_QUERY_DEVICE_COUNT = 0,
  /* CUDA version the driver supports, 1000*major + 10*minor (13000 for
   * 13.0); 0 when no driver is installed.  Device-independent. */
  GKO_QUERY_DRIVER_VERSION = 1,
  /* CUDA runtime gko was built with and links statically, same encoding. */
  GKO_QUERY_RUNTIME_VERSION = 2,
  /* cuBLASLt version loaded at run time (cublasLtGetVersion, e.g. 130100). */
  GKO_QUERY_CUBLASLT_VERSION = 3,
  /* cuBLASLt version gko was compiled against, same encoding. */
  GKO_QUERY_CUBLASLT_BUILD_VERSION = 4,
  /* Compute capability of `device`, 10*major + minor (90 for sm_90). */
  GKO_QUERY_COMPUTE_CAPABILITY = 5,
  /* gko_code_path_t for `device`. */
  GKO_QUERY_CODE_PATH = 6,
  /* Streaming multiprocessors of `device`. */
  GKO_QUERY_SM_COUNT = 7,
  /* Highest PTX architecture in the library (90 for compute_90). */
  GKO_QUERY_PTX_ARCH = 8
} gko_query_t;

/* One number about the library, the driver or device `device` (ignored by
 * device-independent queries).  Works without a GPU: with no driver, DEVICE_
 * COUNT and DRIVER_VERSION give 0 and device queries return the status
 * gko_create would return.
 * Returns GKO_STATUS_INVALID_VALUE for a NULL value, an unknown query or a
 * device ordinal out of range.  *value is untouched on failure.
 * Storage: none.  Async: no.  Capture: no. */
GKO_API gko_status_t gko_query(gko_query_t what, int device, int64_t *value);

/* Writes a human-readable, multi-line report into buf: gko's version; the
 * CUDA runtime it was built with; the driver's CUDA version; cuBLASLt built
 * against and loaded; the architectures compiled into the library (SASS
 * list and PTX); whether the SM90 GEMM kernels were built, and on which
 * CUTLASS version; and for `device` (or all devices when device < 0) its name,
 * compute capability, SM count, memory, and whether it runs native SASS or
 * JIT-compiled PTX -- or, when gko cannot run, one sentence saying why and
 * what to install.  The report is always NUL-terminated when buf_bytes > 0
 * (truncated if needed); *required_bytes (may be NULL) receives the size a
 * full report needs, terminator included.  Returns GKO_STATUS_INVALID_VALUE
 * when buf is NULL with buf_bytes > 0; otherwise success, also on machines
 * without a GPU (the report says so).
 * Storage: none.  Async: no.  Capture: no. */
GKO_API gko_status_t gko_diagnostics(int device, char *buf, size_t buf_bytes,
                                     size_t *required_bytes);

/* ------------------------------------------------------------------------ */
/* GELU                                                                      */
/* ------------------------------------------------------------------------ */
/* Which GELU (Hendrycks & Gimpel, "Gaussian Error Linear Units", 2016):
 *   ERF:  gelu(x) = x * Phi(x) = x/2 * erfc(-x/sqrt(2)), Phi the standard
 *         normal CDF (PyTorch's approximate='none');
 *   TANH: gelu(x) = x/2 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3)))
 *         (PyTorch's approximate='tanh'). */
typedef enum gko_gelu_approx_e {
  GKO_GELU_ERF = 0,
  GKO_GELU_TANH = 1
} gko_gelu_approx_t;

/* y[i] = gelu(x[i]) for i in [0, n).
 * x, y: device (or device-accessible) arrays of n elements of dtype, each
 * aligned to its element size; any further alignment is fine (16-byte
 * vectors in the body, scalar head and tail).  y == x (in place) is allowed;
 * any other overlap is GKO_STATUS_INVALID_VALUE.  n may be 0 (nothing is
 * read or written; NULL pointers allowed then).
 * Arithmetic in f32 for every dtype.  Accuracy: f32 within 8 ulp of the
 * exact function; f16/bf16 within 1 ulp of the exactly rounded result.  In
 * the far negative tail, where Phi(x) (erf, x < about -13) or the sigmoid
 * (tanh, x < about -10) is below FLT_MIN, the error is instead at most
 * (1 + |x|) * FLT_MIN absolute (bf16 results there may flush to zero).
 * Specials: NaN -> NaN, +Inf -> +Inf, -Inf -> -0; the negative tail keeps its
 * relative accuracy (no 1 + erf or 1 + tanh cancellation), large |x| never
 * overflows an intermediate.
 * Returns GKO_STATUS_INVALID_VALUE (NULL handle or pointer, n < 0, unknown
 * dtype or approx, misaligned or partially overlapping pointers, host
 * memory the GPU cannot access), GKO_STATUS_NOT_SUPPORTED (an FP8 dtype),
 * GKO_STATUS_DEVICE_MISMATCH,
 * GKO_STATUS_CUDA_ERROR (the launch failed) or GKO_STATUS_EXECUTION_FAILED
 * (the context already holds a sticky error).
 * Storage: none.  Async: yes.  Capture: yes. */
GKO_API gko_status_t gko_gelu_forward(gko_handle_t handle,
                                      gko_gelu_approx_t approx,
                                      gko_dtype_t dtype, int64_t n,
                                      const void *x, void *y,
                                      gko_stream_t stream);

/* dx[i] = dy[i] * gelu'(x[i]) for i in [0, n) (the backward pass).
 * gelu' is the analytic derivative of the chosen form:
 *   ERF:  Phi(x) + x * phi(x), phi the standard normal density;
 *   TANH: s + x * s * (1 - s) * 2*sqrt(2/pi)*(1 + 3*0.044715 x^2), with
 *         s = sigmoid(2u) = (1 + tanh(u)) / 2.
 * dx may equal dy or x (in place); other overlaps are invalid.  Alignment,
 * dtypes, n and statuses as for gko_gelu_forward.  Accuracy: as forward,
 * plus 8 f32 epsilons (f32) or 1e-4 (f16/bf16) of |dy| times the sum of the
 * two terms' magnitudes -- gelu' has a zero near x = -0.75 where the terms
 * cancel, so no relative bound holds there.
 * Storage: none.  Async: yes.  Capture: yes. */
GKO_API gko_status_t gko_gelu_backward(gko_handle_t handle,
                                       gko_gelu_approx_t approx,
                                       gko_dtype_t dtype, int64_t n,
                                       const void *dy, const void *x,
                                       void *dx, gko_stream_t stream);

/* ------------------------------------------------------------------------ */
/* GEMM: D = epilogue(alpha * op(A) * op(B) + beta * C)                       */
/* ------------------------------------------------------------------------ */
/* Shapes (per batch): op(A) is m x k, op(B) is k x n, C and D are m x n.
 * op(X) = X (GKO_OP_N) or X^T (GKO_OP_T), so A is stored m x k (N) or k x m
 * (T), B k x n (N) or n x k (T).  Layout: ROW_MAJOR (the default; what C,
 * numpy and torch hold) stores element (i, j) of a stored r x c matrix at
 * [i * ld + j], ld >= c; COL_MAJOR (BLAS) at [i + j * ld], ld >= r.  One
 * layout covers A, B, C and D.
 * Types: A and B share ab_dtype (F32, F16 or BF16); C, D and the bias share
 * cd_dtype, which is ab_dtype or F32.  Products accumulate in f32 (see
 * gko_gemm_compute_t for the opt-in TF32 and f16-accumulate modes).
 * FP8 (cuBLASLt only, compute capability 8.9 and newer): A and B in
 * F8E4M3 or F8E5M2 (GKO_GEMM_ATTR_B_DTYPE gives B its own 8-bit type; not
 * both E5M2), f32 accumulation, dequantization factors per tensor or per
 * row/column (gko_gemm_execute_scaled), and D in F32, F16, BF16 or an FP8
 * type quantized with its own factor; "FP8 GEMM" below lists the rules.
 * Weight-only FP8 (gko's kernel, sm_80 and newer): an F16 or BF16 A of at
 * most 16 rows (decode) against an F8E4M3 or F8E5M2 B (GKO_GEMM_ATTR_
 * B_DTYPE), dequantized by scale_b in the kernel; "Weight-only FP8" at
 * gko_gemm_execute_scaled.
 * Algorithms: cuBLASLt (NVIDIA, cublasLtMatmul with its heuristic) or gko's
 * own WMMA Tensor-Core kernel (f16/bf16 inputs; a split-K variant for
 * min(m, n) <= 16); the elementwise epilogue passes and the padding copies
 * are gko's own kernels; GELU as in gko_gelu_forward.  docs/gemm.md
 * explains the dispatch rules. */

typedef enum gko_op_e {
  GKO_OP_N = 0, /* op(X) = X */
  GKO_OP_T = 1  /* op(X) = X^T */
} gko_op_t;

typedef enum gko_layout_e {
  GKO_LAYOUT_ROW_MAJOR = 0, /* element (i, j) at [i * ld + j] (default) */
  GKO_LAYOUT_COL_MAJOR = 1  /* element (i, j) at [i + j * ld] */
} gko_layout_t;

/* What happens to X = alpha * op(A) * op(B) + beta * C before it is stored
 * in D.  bias is a vector of n elements of cd_dtype added to every row:
 * X[i][j] += bias[j] (the linear layer's bias), then the activation:
 *   RELU:       max(x, 0);
 *   GELU_ERF:   x * Phi(x), as gko_gelu_forward with GKO_GELU_ERF;
 *   GELU_TANH:  the tanh approximation (GKO_GELU_TANH).  When fused into
 *               cuBLASLt (GKO_GEMM_FUSION_AUTO, the default) the values come
 *               from cuBLASLt's own GELU epilogue (what torch's
 *               _addmm_activation uses), whose negative tail loses relative
 *               accuracy and flushes to zero early (small absolute error;
 *               docs/gemm.md has the measured figures);
 *               GKO_GEMM_FUSION_NEVER uses gko's accurate GELU pass.
 * Values: bit 0 = bias, bits 1-2 = activation. */
typedef enum gko_epilogue_e {
  GKO_EPILOGUE_NONE = 0,
  GKO_EPILOGUE_BIAS = 1,
  GKO_EPILOGUE_RELU = 2,
  GKO_EPILOGUE_BIAS_RELU = 3,
  GKO_EPILOGUE_GELU_ERF = 4,
  GKO_EPILOGUE_BIAS_GELU_ERF = 5,
  GKO_EPILOGUE_GELU_TANH = 6,
  GKO_EPILOGUE_BIAS_GELU_TANH = 7
} gko_epilogue_t;

/* Which implementation runs the product. */
typedef enum gko_gemm_backend_e {
  /* the plan chooses: cuBLASLt, and WMMA where cuBLASLt has no algorithm,
   * or first where gko's decode kernel was measured faster (on sm_90+: the
   * weights promised static by GKO_GEMM_ATTR_STATIC_OPERANDS, min(m, n) <=
   * 8, 4096 <= weight rows <= k, k contiguous in both operands); SM90 first
   * for an FFN up-projection where it was measured faster (16-bit D of the
   * inputs' type, one batch, W of at least 4k rows, m n >= 2^23; GELU-erf
   * fused with x W^T and 768 <= k <= 1280; no activation or ReLU with
   * 384 <= k <= 1280 and at least 8192 tokens, or k <= 768 and
   * m n >= 3 * 2^22, x W^T, or B [k, n] for the plain GEMM up to
   * k = 1024); docs/gemm.md lists the rules.  With GKO_GEMM_ATTR_AUTOTUNE
   * the fastest, timed */
  GKO_GEMM_BACKEND_AUTO = 0,
  /* cuBLASLt Tensor-Core (or SIMT) kernels; m, n, k and INVARIANT's R at
   * most 2^30 (NOT_SUPPORTED above: cuBLASLt's heuristic faulted on such
   * shapes) */
  GKO_GEMM_BACKEND_CUBLASLT = 1,
  /* gko's own WMMA Tensor-Core kernel: f16 or bf16 inputs (bf16 on sm_80
   * and newer), f32 accumulation (also under F16_ACCUMULATE), any shape,
   * leading dimension and alignment, every epilogue fused (GELU-erf
   * included; GELU as gko_gelu_forward), strided batches; m or n <= 16 runs
   * a split-K kernel whose results are identical from run to run; and
   * weight-only FP8 (an 8-bit B with a 16-bit A: "Weight-only FP8" at
   * gko_gemm_execute_scaled).  f32 and 8-bit A: NOT_SUPPORTED.
   * GKO_GEMM_ATTR_PAD does not apply. */
  GKO_GEMM_BACKEND_WMMA = 2,
  /* gko's Hopper kernels on CUTLASS's sm90 collectives (TMA loads, wgmma,
   * warp-specialized persistent kernels; the CUTLASS version is in
   * gko_diagnostics): compute capability 9.0 only (sm_90a code), f16 or
   * bf16 inputs, f32 accumulation (COMPUTE_DEFAULT), every transpose pair,
   * strided batches (no batch stride 0), every epilogue fused with gko's
   * GELU math (a column-major D's bias runs in gko's pass); C as a residual
   * before the activation.  TMA needs 16-byte-aligned pointers, leading
   * dimensions and batch strides, and rows of contiguous data a multiple of
   * 16 bytes long: otherwise (or with ALIGNMENT < 16) NOT_SUPPORTED.  An
   * A, B, C or D pointer less aligned at execute: INVALID_VALUE before
   * anything runs (AUTO plans that chose this backend -- by its rules,
   * under AUTOTUNE, or where cuBLASLt and WMMA declined -- run
   * cuBLASLt's plan of the same problem instead, WMMA's where cuBLASLt has
   * none); a bias less aligned runs in gko's pass (FUSION_REQUIRED:
   * INVALID_VALUE).
   * GKO_GEMM_ATTR_PAD does not apply.  FP8 inputs and builds without it
   * (GKO_ARCHS without 90): NOT_SUPPORTED. */
  GKO_GEMM_BACKEND_SM90 = 3
} gko_gemm_backend_t;

/* Arithmetic of the product. */
typedef enum gko_gemm_compute_e {
  /* f32 accumulation; f32 inputs multiplied in full f32 (no TF32). */
  GKO_GEMM_COMPUTE_DEFAULT = 0,
  /* f32 inputs rounded to TF32 (10-bit mantissa) for Tensor Cores, f32
   * accumulation.  f32 inputs only (else INVALID_VALUE); sm_80 and newer
   * (else NOT_SUPPORTED).  Relative error about 1e-3. */
  GKO_GEMM_COMPUTE_TF32 = 1,
  /* f16 accumulation (cuBLAS's CUBLAS_COMPUTE_16F), faster on some GPUs,
   * relative error about 5e-4 * sqrt(k).  Only for ab_dtype = cd_dtype = F16
   * (else NOT_SUPPORTED). */
  GKO_GEMM_COMPUTE_F16_ACCUMULATE = 2,
  /* FP8 inputs only (else INVALID_VALUE): cuBLASLt's fast accumulation
   * (CUBLASLT_MATMUL_DESC_FAST_ACCUM, torch._scaled_mm's use_fast_accum):
   * the Tensor Cores' partial sums are not periodically added into full f32
   * accumulators, which is faster and loses accuracy as k grows (the
   * Hopper FP8 accumulator keeps about 14 mantissa bits: DeepSeek-V3
   * technical report, 2024, section 3.3.2). */
  GKO_GEMM_COMPUTE_FP8_FAST_ACCUMULATE = 3
} gko_gemm_compute_t;

/* Whether the epilogue is fused into the GEMM kernel. */
typedef enum gko_gemm_fusion_e {
  /* Fuse what cuBLASLt can fuse (bias, ReLU, GELU-tanh), run the rest as one
   * extra elementwise pass of gko's over D.  The bias is fused only when it
   * is 16-byte aligned (checked at execute) and the layout is row-major. */
  GKO_GEMM_FUSION_AUTO = 0,
  /* Fuse everything or fail: plan_create returns NOT_SUPPORTED when the
   * epilogue cannot be fused (GELU-erf, a column-major bias, an alignment
   * promise below 16 with a bias), execute returns INVALID_VALUE when the
   * bias pointer is not 16-byte aligned. */
  GKO_GEMM_FUSION_REQUIRED = 1,
  /* Never fuse: the GEMM stores alpha*AB + beta*C, then one gko pass applies
   * bias and activation (each element rounded to cd_dtype twice). */
  GKO_GEMM_FUSION_NEVER = 2
} gko_gemm_fusion_t;

/* Copying A and/or B into aligned, zero-padded operands (in the workspace)
 * before a cuBLASLt product, for shapes cuBLASLt runs slowly: k or a leading
 * dimension of A or B not a multiple of 16 bytes, or A/B pointers (or batch
 * strides) not 16-byte aligned. */
typedef enum gko_gemm_pad_e {
  /* Pad when the rule in docs/gemm.md predicts the copy + aligned product
   * to be faster than the unaligned product: on sm_80 and newer only the
   * operands whose leading dimension or base is misaligned are copied (k
   * unchanged), before sm_80 an odd k pads both operands' k with zeros. */
  GKO_GEMM_PAD_AUTO = 0,
  GKO_GEMM_PAD_NEVER = 1,
  /* Always copy both operands, k rounded up to 16 bytes with zeros (even
   * aligned shapes; for tests and measurements). */
  GKO_GEMM_PAD_ALWAYS = 2
} gko_gemm_pad_t;

/* Descriptor attributes (gko_gemm_desc_set / _get); all values int64_t.
 * For the LD* and STRIDE_* attributes, -1 selects the default, and _get
 * returns the value in effect (the default resolved for the current m, n,
 * k, transposes and layout). */
typedef enum gko_gemm_attr_e {
  GKO_GEMM_ATTR_AB_DTYPE = 0,    /* gko_dtype_t of A and B */
  GKO_GEMM_ATTR_CD_DTYPE = 1,    /* gko_dtype_t of C, D, bias: AB_DTYPE or F32 */
  GKO_GEMM_ATTR_M = 2,           /* rows of D, >= 0 */
  GKO_GEMM_ATTR_N = 3,           /* columns of D, >= 0 */
  GKO_GEMM_ATTR_K = 4,           /* inner dimension, >= 0 */
  GKO_GEMM_ATTR_TRANSA = 5,      /* gko_op_t, default GKO_OP_N */
  GKO_GEMM_ATTR_TRANSB = 6,      /* gko_op_t, default GKO_OP_N */
  GKO_GEMM_ATTR_LAYOUT = 7,      /* gko_layout_t, default ROW_MAJOR */
  /* Leading dimensions (elements).  Default: tight (the stored row length
   * for ROW_MAJOR, column length for COL_MAJOR, at least 1). */
  GKO_GEMM_ATTR_LDA = 8,
  GKO_GEMM_ATTR_LDB = 9,
  GKO_GEMM_ATTR_LDC = 10,
  GKO_GEMM_ATTR_LDD = 11,
  GKO_GEMM_ATTR_BATCH_COUNT = 12, /* >= 0, at most 2^31 - 1; default 1 */
  /* Elements from one batch's matrix to the next.  Default: the leading
   * dimension times the number of stored rows (row-major) or columns
   * (column-major), i.e. dense batches.  0 broadcasts one matrix to every
   * batch (A, B and C only: D's batches must not overlap). */
  GKO_GEMM_ATTR_STRIDE_A = 13,
  GKO_GEMM_ATTR_STRIDE_B = 14,
  GKO_GEMM_ATTR_STRIDE_C = 15,
  GKO_GEMM_ATTR_STRIDE_D = 16,
  GKO_GEMM_ATTR_STRIDE_BIAS = 17, /* default 0: one bias for every batch */
  GKO_GEMM_ATTR_EPILOGUE = 18,    /* gko_epilogue_t, default NONE */
  GKO_GEMM_ATTR_COMPUTE = 19,     /* gko_gemm_compute_t, default DEFAULT */
  GKO_GEMM_ATTR_BACKEND = 20,     /* gko_gemm_backend_t, default AUTO */
  /* Alignment in bytes the caller promises for the A, B, C, D and bias
   * pointers passed to execute: a power of two from 1 to 256, default 16
   * (every pointer must also be aligned to its element size).  The plan
   * chooses its algorithm for this alignment; execute checks the real
   * pointers (see gko_gemm_execute). */
  GKO_GEMM_ATTR_ALIGNMENT = 21,
  GKO_GEMM_ATTR_FUSION = 22,      /* gko_gemm_fusion_t, default AUTO */
  GKO_GEMM_ATTR_PAD = 23,         /* gko_gemm_pad_t, default AUTO */
  /* Upper bound (bytes) on the workspace the plan may ask for, -1 (the
   * default) for none.  cuBLASLt's own share is at most 32 MiB on sm_90 and
   * newer, 4 MiB before (NVIDIA's recommendation); padded copies of A and B
   * come on top when padding is chosen. */
  GKO_GEMM_ATTR_MAX_WORKSPACE = 24,
  /* 0 (default) or 1: plan_create times the candidate configurations once
   * -- cuBLASLt's heuristic results (up to 8) for each padding choice, and
   * gko's WMMA kernel configurations, as BACKEND allows -- on scratch
   * buffers of the plan's shape and keeps the fastest (like cuDNN's
   * benchmark mode).  The winner is cached in the handle per problem, so
   * later plans of the same problem do not time again.  Such a plan_create
   * allocates device memory and runs the timings on a private stream,
   * waiting for them; while another stream is being captured it switches
   * this thread to relaxed capture mode for that work, so the capture stays
   * valid (nothing of the timing is captured).  gko_gemm_plan_describe
   * lists the candidates and their times. */
  GKO_GEMM_ATTR_AUTOTUNE = 25,
  /* 0 (default), or R >= 1: results that do not depend on the batch count
   * or on the number of D's lines (its rows for ROW_MAJOR, its columns for
   * COL_MAJOR).  Two plans whose descriptors differ only in that number (M
   * for ROW_MAJOR, N for COL_MAJOR), BATCH_COUNT and the STRIDE_* values,
   * with the same R, compute every element of D from the same inputs bit
   * for bit the same way (e.g. a batch processed whole or in chunks).
   * How: the algorithm is cuBLASLt's first choice for a reference problem
   * -- the same descriptor with one batch and R lines of D, asked as if no
   * scratch were available, so that MAX_WORKSPACE does not change the
   * ranking -- among the algorithms that reduce each dot product in one
   * sequence (no split-K: CUBLASLT_REDUCTION_SCHEME_NONE) and accept the
   * real problem within MAX_WORKSPACE (cublasLtMatmulAlgoCheck; some ask
   * for a few bytes of scratch); without split-K an element's reduction
   * order depends only on the algorithm and k.  Choose R near lines x
   * batch count of the largest problem the plans serve (the algorithm is
   * picked for that size).  When cuBLASLt has no such algorithm (AUTO) or
   * BACKEND = WMMA, gko's WMMA kernel serves it in its one tiled
   * configuration without split-K (f16/bf16 inputs only; its per-element
   * order depends only on k).  No padded copies (PAD is ignored); not with AUTOTUNE (INVALID_VALUE); the operand holding D's
   * lines must not be transposed across them: ROW_MAJOR needs TRANSA = N,
   * COL_MAJOR TRANSB = N (INVALID_VALUE otherwise).  Results still depend
   * on R, the other attributes (MAX_WORKSPACE and ALIGNMENT included), the
   * GPU and the cuBLASLt version.  gko_gemm_plan_describe says "invariant". */
  GKO_GEMM_ATTR_INVARIANT = 26,
  /* A gko_gemm_static_t, default GKO_GEMM_STATIC_NONE: the operands the
   * caller promises are static -- weights written once, before, and then
   * only read.  Precisely: no kernel that can still be running when this
   * call's kernel starts writes them, i.e. not the kernel enqueued just
   * before this call on the stream, nor, when that one started early
   * itself (this attribute, or any kernel launched with CUDA's
   * programmatic stream serialization), the ones before it.  A broken
   * promise gives undefined results (stale weights may be read).
   * What it does (docs/gemm.md): on sm_90 and newer, gko's decode kernel
   * (the WMMA backend's kernel for min(m, n) <= 16 with k contiguous in
   * both operands; AUTO takes it where GKO_GEMM_BACKEND_AUTO says, else ask
   * for BACKEND = WMMA) is launched with programmatic dependent launch (CUDA Programming Guide,
   * "Programmatic Dependent Launch and Synchronization") when the operand
   * it streams (the weights, the larger one) is promised static: it may
   * start while the kernel before it finishes, loads its first weights,
   * and waits for that kernel to complete (griddepcontrol.wait) before it
   * reads the other operand, C or bias, or writes anything.  gko's decode
   * kernels let the kernel after them start early in any case
   * (griddepcontrol.launch_dependents), so a chain of such calls overlaps
   * each call's start with the previous call's end.  Everywhere else the
   * attribute changes nothing.  gko_gemm_plan_describe says
   * "programmatic dependent launch" when it applies.  Results are bitwise
   * the same with and without it. */
  GKO_GEMM_ATTR_STATIC_OPERANDS = 27,
  /* B's gko_dtype_t when it differs from A's, or -1 (the default: B has
   * AB_DTYPE, which is then A's type).  B may differ as an 8-bit type only:
   * E4M3 with an E5M2 A or E5M2 with an E4M3 A, or either with an F16 or
   * BF16 A (weight-only FP8); else plan_create INVALID_VALUE. */
  GKO_GEMM_ATTR_B_DTYPE = 28,
  /* gko_scale_mode_t of the FP8 dequantization factors scale_a and scale_b
   * of gko_gemm_execute_scaled; default GKO_SCALE_TENSOR.  ROWWISE needs
   * an 8-bit A (SCALE_A_MODE) or B (SCALE_B_MODE); else INVALID_VALUE at
   * plan_create. */
  GKO_GEMM_ATTR_SCALE_A_MODE = 29,
  GKO_GEMM_ATTR_SCALE_B_MODE = 30
} gko_gemm_attr_t;

/* GKO_GEMM_ATTR_STATIC_OPERANDS values (a bit mask). */
typedef enum gko_gemm_static_e {
  GKO_GEMM_STATIC_NONE = 0,
  GKO_GEMM_STATIC_A = 1,
  GKO_GEMM_STATIC_B = 2,
  GKO_GEMM_STATIC_AB = 3
} gko_gemm_static_t;

/* Opaque problem descriptor (host memory only; no handle, no GPU). */
typedef struct gko_gemm_desc_s *gko_gemm_desc_t;
/* Opaque plan: a descriptor checked and bound to a handle, with the backend
 * and algorithm chosen. */
typedef struct gko_gemm_plan_s *gko_gemm_plan_t;

/* Creates a descriptor for D[m x n] = op(A) op(B), every other attribute at
 * its default (row-major, no transposes, tight leading dimensions, one
 * batch, no epilogue).  cd_dtype is ab_dtype or F32; with an FP8 ab_dtype
 * it may be any dtype (see "FP8 GEMM" at gko_gemm_execute_scaled).
 * Returns GKO_STATUS_INVALID_VALUE for a NULL desc, an unknown dtype,
 * another cd_dtype, or a negative size;
 * GKO_STATUS_ALLOC_FAILED.  *desc is untouched on failure.
 * Storage: allocates host memory (gko_gemm_desc_destroy frees it).
 * Async: no.  Capture: yes. */
GKO_API gko_status_t gko_gemm_desc_create(gko_gemm_desc_t *desc,
                                          gko_dtype_t ab_dtype,
                                          gko_dtype_t cd_dtype, int64_t m,
                                          int64_t n, int64_t k);
/* Frees a descriptor; NULL is a no-op.  Plans made from it stay valid.
 * Storage: frees host memory.  Async: no.  Capture: yes. */
GKO_API gko_status_t gko_gemm_desc_destroy(gko_gemm_desc_t desc);
/* Sets one attribute.  Values are checked against the attribute's own
 * range here (GKO_STATUS_INVALID_VALUE for an unknown attribute, an unknown
 * enumerator, a negative size, an alignment that is not a power of two in
 * [1, 256]); combinations (a leading dimension smaller than its row, say)
 * are checked by gko_gemm_plan_create.  The descriptor is unchanged on
 * failure.  Storage: none.  Async: no.  Capture: yes. */
GKO_API gko_status_t gko_gemm_desc_set(gko_gemm_desc_t desc,
                                       gko_gemm_attr_t attr, int64_t value);
/* Reads one attribute (defaults resolved).  GKO_STATUS_INVALID_VALUE for a
 * NULL argument or an unknown attribute (*value untouched).
 * Storage: none.  Async: no.  Capture: yes. */
GKO_API gko_status_t gko_gemm_desc_get(gko_gemm_desc_t desc,
                                       gko_gemm_attr_t attr, int64_t *value);

/* Checks the descriptor, chooses the backend and algorithm (cuBLASLt's
 * heuristic, cached per shape, types, alignment and epilogue in the handle)
 * and the workspace size.  The descriptor may be changed or destroyed
 * afterwards; the handle must outlive the plan (executing a plan whose
 * handle was destroyed gives GKO_STATUS_INVALID_HANDLE; the plan can still
 * be destroyed).  Returns:
 *   GKO_STATUS_INVALID_VALUE   NULL argument; an inconsistent descriptor
 *       (leading dimension smaller than the stored row or column, D's
 *       batches overlapping, sizes whose byte extent overflows int64, TF32
 *       with 16-bit inputs); the detail names the attribute;
 *   GKO_STATUS_NOT_SUPPORTED   backend WMMA with f32 inputs (or bf16 before
 *       sm_80); TF32 before sm_80; F16_ACCUMULATE outside f16/f16;
 *       FUSION_REQUIRED with an epilogue that cannot be fused; no algorithm
 *       for the problem (the detail names what was tried);
 *   GKO_STATUS_DEVICE_MISMATCH the current device is not the handle's;
 *   GKO_STATUS_ALLOC_FAILED, GKO_STATUS_CUDA_ERROR, GKO_STATUS_INTERNAL.
 * Problems with m, n, k or batch count 0 are valid (execute writes only
 * what D holds).  *plan is untouched on failure.
 * Storage: allocates host memory (freed by gko_gemm_plan_destroy) and may
 *          grow the handle's algorithm cache (at most 4096 answers, then
 *          it starts over: a few MiB); with GKO_GEMM_ATTR_AUTOTUNE
 *          also temporary device memory (freed before returning).
 * Async: no (AUTOTUNE synchronizes the device).
 * Capture: yes (host work only), except with AUTOTUNE. */
GKO_API gko_status_t gko_gemm_plan_create(gko_handle_t handle,
                                          gko_gemm_desc_t desc,
                                          gko_gemm_plan_t *plan);
/* Frees a plan; NULL is a no-op.  Work already enqueued is unaffected.
 * Storage: frees host memory.  Async: no.  Capture: yes. */
GKO_API gko_status_t gko_gemm_plan_destroy(gko_gemm_plan_t plan);
/* Bytes of device workspace gko_gemm_execute needs with this plan (0 when
 * none; any element-aligned pointer works: the plan counts 255 bytes of
 * slack for aligning it).  Returns GKO_STATUS_INVALID_VALUE for NULL.
 * Storage: none.  Async: no.  Capture: yes. */
GKO_API gko_status_t gko_gemm_workspace_size(gko_gemm_plan_t plan,
                                             size_t *bytes);
/* The backend the plan chose (never AUTO).  INVALID_VALUE for NULL.
 * Storage: none.  Async: no.  Capture: yes. */
GKO_API gko_status_t gko_gemm_plan_backend(gko_gemm_plan_t plan,
                                           gko_gemm_backend_t *backend);
/* A readable account of the plan: "<backend>: " then the algorithm and why,
 * e.g. "cuBLASLt: algo 23 tile 128x256 stages-id 3 splitK 1 swizzle 0
 * (heuristic #1 of 8); compute f32 accumulate; ...; epilogue: cuBLASLt
 * BIAS, then gko's pass GELU-erf; A and B copied to padded operands
 * (k = 1032, ...): k = 1027 % 8 != 0; padding rule: ... -> pad; workspace
 * ... bytes".  The text is for people, not parsers: its format may change
 * between versions.  Always NUL-terminated when bytes > 0 (truncated if
 * needed); *required (may be NULL) receives the full size with the
 * terminator.  INVALID_VALUE for a NULL plan, or buf NULL with bytes > 0.
 * Storage: none.  Async: no.  Capture: yes. */
GKO_API gko_status_t gko_gemm_plan_describe(gko_gemm_plan_t plan, char *buf,
                                            size_t bytes, size_t *required);

/* D = epilogue(alpha * op(A) * op(B) + beta * C) for every batch, on stream.
 * a, b, c, d, bias: device-accessible pointers laid out as the plan's
 * descriptor says (batch b at base + b * stride elements), each aligned to
 * its element size.  alpha and beta are host values, read at the call (a
 * captured graph keeps them).  Taking them here rather than in the plan
 * lets them change per call without re-planning (as cuBLAS does).
 *   - C may equal D (in place; then LDC == LDD and STRIDE_C == STRIDE_D are
 *     required) or overlap nothing else.  beta == 0: C is never read (may
 *     be NULL; NaN or Inf in it has no effect).
 *   - k == 0 or alpha == 0: A and B are not read (may be NULL) and D =
 *     epilogue(beta * C): exactly beta * C rounded once when there is no
 *     epilogue.
 *   - m, n or batch count 0: nothing is read or written (NULLs allowed).
 *   - bias: n elements of cd_dtype per batch (STRIDE_BIAS apart), required
 *     iff the epilogue has a bias.  Not 16-byte aligned: the bias runs in
 *     gko's pass instead of fused (FUSION_REQUIRED: INVALID_VALUE).
 *   - Alignment: when a pointer (or batch stride) is less aligned than the
 *     plan's GKO_GEMM_ATTR_ALIGNMENT promise, execute switches to a
 *     cuBLASLt algorithm for the real alignment, found on the host (the
 *     handle's cache, else one heuristic query: host work, capture-safe) and
 *     within the workspace passed; if none exists it returns
 *     GKO_STATUS_INVALID_VALUE before enqueueing anything (re-plan with the
 *     lower ALIGNMENT).  Padded plans read A and B at any alignment.
 *   - D must not overlap A, B or bias (not checked).
 * Statuses: GKO_STATUS_INVALID_VALUE (NULL plan; a NULL or misaligned
 * pointer the call needs; C == D with different layouts; a workspace NULL
 * with workspace_bytes > 0; see alignment above), GKO_STATUS_INSUFFICIENT_
 * WORKSPACE (workspace_bytes < gko_gemm_workspace_size), GKO_STATUS_DEVICE_
 * MISMATCH, GKO_STATUS_NOT_SUPPORTED (cuBLASLt rejected the call; the
 * detail names its status), GKO_STATUS_CUDA_ERROR, GKO_STATUS_EXECUTION_
 * FAILED.  Every argument and alignment check happens before anything is
 * enqueued, so on those failures D is untouched; only a CUDA launch that
 * fails after the product was enqueued can leave D partially written.
 * A plan may be executed from several threads at once, each with its own
 * workspace.
 * Storage: none (the caller's workspace).  Async: yes.
 * Capture: yes (enqueues kernels only; host-only lookups). */
GKO_API gko_status_t gko_gemm_execute(gko_gemm_plan_t plan, float alpha,
                                      const void *a, const void *b,
                                      float beta, const void *c, void *d,
                                      const void *bias, void *workspace,
                                      size_t workspace_bytes,
                                      gko_stream_t stream);

/* FP8 GEMM: gko_gemm_execute with the 8-bit data's f32 factors, all device
 * pointers read when the work runs (so they may change per call, and a
 * captured graph reads their current values at each replay):
 *   X = alpha * sum_k (scale_a[i] * A[i][k]) (scale_b[j] * B[k][j])
 *       + beta * C + bias,                       then the activation;
 *   D = X (F32/F16/BF16 D) or quantize(scale_d * X) (FP8 D).
 * scale_a, scale_b: dequantization factors, GKO_GEMM_ATTR_SCALE_A_MODE /
 * _B_MODE (both the same): TENSOR one value, ROWWISE m values (A) / n
 * values (B); NULL: 1 (TENSOR only; ROWWISE needs its vectors, so
 * gko_gemm_execute on a ROWWISE plan is INVALID_VALUE).  scale_d: FP8 D
 * only, one value, NULL: 1.  amax_d: FP8 D only, NULL, or one f32 that
 * receives the largest |X| after the activation over every element and
 * batch (before scale_d: the statistic delayed scaling records); 0 when D
 * is empty.  Each pointer device-accessible and 16-byte aligned (cuBLASLt
 * refuses less).  gko_gemm_execute on an FP8 plan is this call with four
 * NULLs; this call on a plan without FP8 inputs needs all four NULL.
 * Rules (cuBLASLt's FP8 kernels, NVIDIA cuBLAS documentation,
 * "cublasLtMatmul"): compute capability 8.9 or newer; backend AUTO or
 * CUBLASLT; COMPUTE_DEFAULT or FP8_FAST_ACCUMULATE (TF32: INVALID_VALUE);
 * both operands stored with k contiguous -- row-major TRANSA = N and
 * TRANSB = T (D = A B^T with B stored n x k: x W^T, the linear layer),
 * column-major TRANSA = T and TRANSB = N; lda, ldb, k and the batch strides
 * of A and B multiples of 16; ALIGNMENT >= 16; SCALE_A_MODE ==
 * SCALE_B_MODE.  Otherwise plan_create answers NOT_SUPPORTED naming the
 * rule (gko does not transpose or pad 8-bit operands).  D F32, F16 or
 * BF16: C and bias have cd_dtype, every epilogue as for 16-bit inputs
 * (GELU-erf, and an F32 D's bias, in gko's pass; so FUSION_REQUIRED with an
 * F32 D and a bias is NOT_SUPPORTED).  FP8 D: E4M3 (from any pair) or E5M2
 * (with an E5M2 operand), per-tensor factors only (else NOT_SUPPORTED);
 * beta must be 0 (INVALID_VALUE; C is not read, may be NULL), the bias is
 * BF16, the epilogue must fuse into cuBLASLt (NONE, RELU, GELU_TANH, with
 * or without bias; GELU-erf, FUSION_NEVER, a column-major D's bias or a
 * bias promised (ALIGNMENT, STRIDE_BIAS) below 16 bytes: NOT_SUPPORTED; a
 * bias pointer below 16 bytes at execute: INVALID_VALUE), values beyond
 * the format saturate to its largest finite value (cuBLASLt's conversion),
 * and the plan's algorithm is one that can compute amax_d.  With an FP8 D,
 * k = 0 (NOT_SUPPORTED at plan_create) and alpha = 0 (INVALID_VALUE) are
 * refused: gko's epilogue pass, which writes D without a product, does not
 * quantize; amax_d likewise needs a product.
 * Weight-only FP8 (AB_DTYPE F16 or BF16, B_DTYPE F8E4M3 or F8E5M2): D =
 * act(alpha * A (scale_b * B) + beta * C + bias) on gko's kernel (WMMA
 * backend; AUTO takes it, cuBLASLt and SM90 have none): B is widened to
 * A's type in registers (exactly: every 8-bit value is an f16 and a bf16
 * value) and multiplied on mma.sync with f32 accumulation.  Rules: sm_80
 * or newer; m <= 16 (decode: B, the weights, is streamed once); both
 * operands stored with k contiguous, as above (row-major TRANSA = N,
 * TRANSB = T); COMPUTE_DEFAULT; GKO_GEMM_ATTR_INVARIANT 0; otherwise
 * plan_create answers NOT_SUPPORTED naming the rule.  Any leading
 * dimension, k and alignment (16-byte vectors where the pointers allow).
 * cd_dtype is A's type or F32; C, bias and every epilogue as for 16-bit
 * GEMMs, fused.  scale_b: SCALE_B_MODE TENSOR one value, ROWWISE n values
 * (one per output channel); NULL: 1 (TENSOR only); 4-byte aligned.
 * scale_a, scale_d and amax_d must be NULL (INVALID_VALUE).  With
 * GKO_GEMM_ATTR_STATIC_OPERANDS promising B static, on sm_90 the kernel
 * starts loading B before the kernel ahead of it finishes (programmatic
 * dependent launch).  A split of k across blocks (when B has few rows)
 * takes workspace (gko_gemm_workspace_size) and sums in a fixed order.
 * Statuses, pointers, workspace, asynchrony, threads: as gko_gemm_execute;
 * also INVALID_VALUE for a factor pointer the rules above exclude.
 * Measured speeds and the support matrix: docs/fp8.md.
 * Storage: none.  Async: yes.  Capture: yes. */
GKO_API gko_status_t gko_gemm_execute_scaled(gko_gemm_plan_t plan, float alpha,
                                             const void *a, const float *scale_a,
                                             const void *b, const float *scale_b,
                                             float beta, const void *c, void *d,
                                             const float *scale_d, float *amax_d,
                                             const void *bias, void *workspace,
                                             size_t workspace_bytes,
                                             gko_stream_t stream);

/* One-shot row-major GEMM for simple callers: the same as a descriptor with
 * these attributes (LAYOUT ROW_MAJOR, one batch, ALIGNMENT from the actual
 * pointers) planned and executed at once.  lda, ldb, ldc, ldd: leading
 * dimensions in elements, or -1 for tight.  Plans are cheap after the
 * first call for a shape (the handle caches cuBLASLt's choice).  When the
 * plan needs workspace it is allocated stream-ordered (cudaMallocAsync /
 * cudaFreeAsync on `stream`, from the device's default memory pool); when
 * the device has no memory pools the call runs a workspace-free plan
 * instead; a pool that cannot provide the bytes gives
 * GKO_STATUS_ALLOC_FAILED (nothing enqueued).
 * Statuses and pointer rules as gko_gemm_desc_create, gko_gemm_plan_create
 * and gko_gemm_execute.
 * Storage: host memory for the plan (freed before returning); device
 *          memory from the stream-ordered pool while the work runs.
 * Async: yes.
 * Capture: yes (the allocation becomes a graph memory node). */
GKO_API gko_status_t gko_gemm(gko_handle_t handle, gko_op_t transa,
                              gko_op_t transb, int64_t m, int64_t n,
                              int64_t k, float alpha, gko_dtype_t ab_dtype,
                              const void *a, int64_t lda, const void *b,
                              int64_t ldb, float beta, gko_dtype_t cd_dtype,
                              const void *c, int64_t ldc, void *d,
                              int64_t ldd, gko_epilogue_t epilogue,
                              const void *bias, gko_stream_t stream);

/* ------------------------------------------------------------------------ */
/* FP8 quantization                                                          */
/* ------------------------------------------------------------------------ */
/* y = quantize(x * scale) for a tight row-major rows x cols tensor:
 * x_dtype F32, F16 or BF16, y_dtype F8E4M3 or F8E5M2.  The product is
 * rounded to f32, then to the 8-bit format to nearest even; the product of
 * a finite x beyond the format (even one that overflows f32) saturates to
 * its largest finite value, so a finite x never gives NaN; NaN gives NaN;
 * an infinite x (times a nonzero scale) gives E5M2's infinity of that sign,
 * and NaN in E4M3, which has no infinity (a saturated Inf would look like
 * data).  -0 stays -0.
 * mode: GKO_SCALE_TENSOR (scale: one f32 factor, NULL: 1) or ROWWISE
 * (scale: rows factors, required).  amax: NULL, or one f32 that receives
 * max |x| over the whole input (before scaling; NaN if any x is NaN) from
 * the same read of x.
 * x, y, scale, amax: device-accessible, each aligned to its element size
 * (16-byte alignment of x and y takes the vector path); x and y must not
 * overlap.  rows or cols 0: nothing is read or written (x and y may be
 * NULL), amax (if given) is set to 0.
 * Algorithm: one pass of 16-byte vectors, the amax reduced per block and
 * combined with one atomic per block; amax is first set to 0 on the stream
 * (a memset, so the call is two stream operations).
 * Returns GKO_STATUS_INVALID_VALUE (NULL handle, a NULL pointer the call
 * needs, negative sizes, rows * cols overflowing, unknown dtype or mode,
 * misaligned or overlapping pointers -- x, y, scale and amax must not
 * share a byte --, host memory the GPU cannot access),
 * GKO_STATUS_NOT_SUPPORTED (a dtype pair other than the above),
 * GKO_STATUS_DEVICE_MISMATCH, GKO_STATUS_CUDA_ERROR,
 * GKO_STATUS_EXECUTION_FAILED.  An argument failure enqueues nothing (a
 * kernel launch that fails may follow the amax memset).
 * Storage: none.  Async: yes.  Capture: yes. */
GKO_API gko_status_t gko_quantize(gko_handle_t handle, gko_dtype_t x_dtype,
                                  const void *x, gko_dtype_t y_dtype, void *y,
                                  int64_t rows, int64_t cols,
                                  gko_scale_mode_t mode, const float *scale,
                                  float *amax, gko_stream_t stream);
/* y = x * scale: x_dtype F8E4M3 or F8E5M2, y_dtype F32, F16 or BF16 (the
 * product in f32, rounded once to y_dtype; NaN and infinities carried).
 * Shapes, mode, scale, pointers and statuses as gko_quantize (no amax).
 * Storage: none.  Async: yes.  Capture: yes. */
GKO_API gko_status_t gko_dequantize(gko_handle_t handle, gko_dtype_t x_dtype,
                                    const void *x, gko_dtype_t y_dtype,
                                    void *y, int64_t rows, int64_t cols,
                                    gko_scale_mode_t mode,
                                    const float *scale, gko_stream_t stream);

/* ------------------------------------------------------------------------ */
/* Sparse matrices: CSR descriptor and validation                            */
/* ------------------------------------------------------------------------ */
/* A sparse m x k matrix A in compressed sparse row (CSR) form, zero-based:
 *   row_ptr[m + 1]  row i holds the entries at positions
 *                   [row_ptr[i], row_ptr[i + 1]) of the two arrays below;
 *   col_ind[nnz]    the column of each entry, in [0, k);
 *   values[nnz]     its value.
 * row_ptr and col_ind share one index type; the values have a gko_dtype_t.
 * Columns need not be sorted within a row, and a column may repeat in a row
 * (duplicates): every operator treats a duplicate as a sum (A[i][j] is the
 * sum of all entries of row i with column j), as cuSPARSE and SciPy do. */

/* Index type of row_ptr and col_ind. */
typedef enum gko_index_e {
  GKO_INDEX_INT32 = 0, /* int32_t; nnz must be at most 2^31 - 1 */
  GKO_INDEX_INT64 = 1  /* int64_t */
} gko_index_t;

/* Opaque CSR descriptor: sizes, types and the three device pointers.  It
 * does not own, copy or read the arrays (nothing touches the GPU until a
 * call that takes a handle). */
typedef struct gko_csr_s *gko_csr_t;

/* Describes the m x k CSR matrix (row_ptr, col_ind, values); see above.
 * row_ptr, col_ind, values: device-accessible arrays of m + 1, nnz and nnz
 * elements, each aligned to its element size.  NULL is allowed where the
 * array is empty: row_ptr when m == 0, col_ind and values when nnz == 0 (a
 * non-NULL pointer is then never read either).
 * Host-side checks only: the contents are checked by gko_csr_validate.
 * Returns GKO_STATUS_INVALID_VALUE for: csr NULL; m, k or nnz negative;
 * nnz > 0 with m == 0 or k == 0 (no entry could be valid); nnz > 2^31 - 1
 * with GKO_INDEX_INT32; an unknown index type or value dtype; a NULL array
 * that is not empty; a pointer not aligned to its element size.
 * GKO_STATUS_NOT_SUPPORTED for an FP8 value dtype; GKO_STATUS_ALLOC_FAILED.
 * *csr is untouched on failure.
 * Storage: allocates host memory (freed by gko_csr_destroy).
 * Async: no.  Capture: yes (host only). */
GKO_API gko_status_t gko_csr_create(gko_csr_t *csr, int64_t m, int64_t k,
                                    int64_t nnz, const void *row_ptr,
                                    const void *col_ind, const void *values,
                                    gko_index_t index_type,
                                    gko_dtype_t value_type);
/* Frees a descriptor; NULL is a no-op.  Plans made from it stay valid (they
 * hold a copy).  Storage: frees host memory.  Async: no.  Capture: yes. */
GKO_API gko_status_t gko_csr_destroy(gko_csr_t csr);

/* What gko_csr_validate found wrong (the first defect by row; row_ptr
 * defects take precedence over column defects, whose rows are only
 * meaningful once row_ptr is sound). */
typedef enum gko_csr_check_e {
  GKO_CSR_VALID = 0,
  GKO_CSR_ROW_PTR_START = 1,      /* row_ptr[0] != 0 (row 0) */
  GKO_CSR_ROW_PTR_DECREASING = 2, /* row_ptr[row + 1] < row_ptr[row] */
  GKO_CSR_ROW_PTR_END = 3,        /* row_ptr[m] != nnz (row m - 1) */
  GKO_CSR_COLUMN_RANGE = 4        /* a column of `row` is < 0 or >= k */
} gko_csr_check_t;

/* Bytes of device workspace gko_csr_validate needs for csr: about 17 bytes
 * per entry -- a row-start mark, and the packed (row, column) keys and
 * their sorted copy that the duplicate check of unsorted rows uses -- plus
 * CUB's temporary storage.
 * Any pointer alignment works (255 bytes of slack are counted).
 * Returns GKO_STATUS_INVALID_VALUE for a NULL argument, GKO_STATUS_DEVICE_
 * MISMATCH, GKO_STATUS_CUDA_ERROR.
 * Storage: none.  Async: no.  Capture: yes (host-side size queries only). */
GKO_API gko_status_t gko_csr_validate_workspace_size(gko_handle_t handle,
                                                     gko_csr_t csr,
                                                     size_t *bytes);

/* Checks the CSR arrays on the GPU and waits for the answer:
 *   1. row_ptr[0] == 0, row_ptr non-decreasing, row_ptr[m] == nnz;
 *   2. (if 1 holds) every column in [0, k);
 *   3. (if 1 holds) whether the columns of every row are sorted ascending,
 *      and whether any row holds a column twice (duplicates; allowed, they
 *      are summed) -- found in unsorted rows by radix-sorting the packed
 *      keys (row << 32 | column) of all entries.
 * values is never read.
 * Outputs (each may be NULL when not wanted):
 *   *check       GKO_CSR_VALID or the first defect (gko_csr_check_t);
 *   *row         the offending row, -1 when valid;
 *   *sorted      1 if every row's columns are strictly or non-strictly
 *                ascending, 0 if not, -1 if unknown (row_ptr defective);
 *   *duplicates  1 if some row holds a column twice, 0 if not, -1 if unknown
 *                (row_ptr defective; or unsorted rows with m or k above
 *                2^32, whose keys do not pack into 64 bits).
 * Returns GKO_STATUS_SUCCESS for a valid matrix.  For a malformed one it
 * returns GKO_STATUS_INVALID_VALUE, writes the outputs above (the one
 * exception to "outputs untouched on failure": they are the verdict), and
 * the detail names the defect, e.g. "row_ptr[8] = 5 < row_ptr[7] = 9: row 7
 * has negative length" or "col_ind[41] = 2708 in row 6 is outside [0, k =
 * 2708)".  Initialise *check to GKO_CSR_VALID: after INVALID_VALUE it is
 * non-zero exactly when the matrix (not an argument) is at fault.
 * Other statuses (outputs untouched): GKO_STATUS_INVALID_VALUE (a NULL
 * handle or csr, workspace NULL with workspace_bytes > 0, row_ptr/col_ind
 * memory the device cannot access), GKO_STATUS_INSUFFICIENT_WORKSPACE,
 * GKO_STATUS_NOT_SUPPORTED (the stream is being captured: this call
 * synchronizes), GKO_STATUS_DEVICE_MISMATCH, GKO_STATUS_ALLOC_FAILED,
 * GKO_STATUS_CUDA_ERROR, GKO_STATUS_EXECUTION_FAILED.
 * workspace: gko_csr_validate_workspace_size bytes, or NULL with
 * workspace_bytes == 0 to let the call allocate (cudaMalloc) and free it.
 * Cost: one pass over row_ptr and two over col_ind with CUB's DeviceReduce
 * (O(m + nnz) device work, about the time of reading the arrays twice),
 * plus, only when some row is unsorted, a CUB DeviceRadixSort of the
 * packed keys; one stream synchronization (two when unsorted).  gko's
 * operators never validate by themselves: validate untrusted input once,
 * since executing on a malformed matrix may fault or read out of bounds.
 * Storage: device memory only when workspace is NULL (allocated and freed
 *          within the call).
 * Async: no (returns after the stream has finished the checks).
 * Capture: no (GKO_STATUS_NOT_SUPPORTED on a capturing stream). */
GKO_API gko_status_t gko_csr_validate(gko_handle_t handle, gko_csr_t csr,
                                      void *workspace, size_t workspace_bytes,
                                      gko_csr_check_t *check, int64_t *row,
                                      int *sorted, int *duplicates,
                                      gko_stream_t stream);

/* ------------------------------------------------------------------------ */
/* SpMM: C = alpha * A * B + beta * C, A sparse (CSR), B and C dense         */
/* ------------------------------------------------------------------------ */
/* Shapes: A is m x k (a gko_csr_t), B is k x n, C is m x n.  B and C share
 * the layout (gko_layout_t: ROW_MAJOR element (i, j) at [i * ld + j], ld >=
 * n; COL_MAJOR at [i + j * ld], ld >= rows) and A's value dtype (F32, F16 or
 * BF16).  Products and sums in f32; C is rounded once.  Duplicate columns
 * are summed; unsorted rows are fine.
 * Kernels (docs/spmm.md has the rules and measurements):
 *   ROW_SPLIT: GE-SpMM style (Huang, Wang, Feng, "GE-SpMM: General-purpose
 *     Sparse Matrix-Matrix Multiplication on GPUs for Graph Neural
 *     Networks", SC'20): a group of lanes per row, each lane one 16-byte
 *     vector of B's and C's rows (when the row-major leading dimensions
 *     and pointers allow; elements otherwise), narrow n packing several
 *     rows into a warp; the row's entries read 4 at a time, the next
 *     step's (and the next row's) indices loaded while B is in flight.
 *     Rows longer than about a resident group's share of the entries
 *     (kept within 64..256) are cut into segments summed in the workspace
 *     and added in order by a second kernel; on large matrices (nnz above
 *     32 x SMs x 256) the segments are started before the rows.  One
 *     launch without long rows, two with.
 *   MERGE: nnz-balanced -- the merge-path decomposition of Merrill and
 *     Garland ("Merge-based Parallel Sparse Matrix-Vector Multiplication",
 *     SC'16) over rows + entries, computed once in the plan: every warp
 *     gets the same number of (row ends + entries), so one row holding a
 *     large share of nnz is spread over many warps.  Rows split between
 *     warps are summed from per-warp partials (in the workspace) by a
 *     second, fix-up kernel in a fixed order: deterministic.  Two launches.
 * Both are deterministic: the same inputs and plan give the same bits. */

/* Kernel choice (requested at plan creation, reported by the plan). */
typedef enum gko_spmm_kernel_e {
  GKO_SPMM_KERNEL_AUTO = 0,      /* request: the plan chooses (see below) */
  GKO_SPMM_KERNEL_ROW_SPLIT = 1,
  GKO_SPMM_KERNEL_MERGE = 2,
  GKO_SPMM_KERNEL_SCALE = 3,     /* reported: nnz == 0, C = beta * C */
  GKO_SPMM_KERNEL_NONE = 4       /* reported: m == 0 or n == 0, no work */
} gko_spmm_kernel_t;

/* Opaque SpMM plan: the matrix (a copy of the descriptor), n, the layout
 * and leading dimensions, the chosen kernel and its launch shape, and for
 * MERGE the partition of the matrix (device memory owned by the plan). */
typedef struct gko_spmm_plan_s *gko_spmm_plan_t;

/* Plans C[m x n] = alpha * A * B[k x n] + beta * C for the matrix csr.
 * Inspects the row-length distribution on the GPU (CUB reductions over
 * row_ptr: longest row, mean, coefficient of variation, empty rows), picks
 * the kernel (AUTO: ROW_SPLIT, which measured faster than MERGE wherever
 * both were run; docs/spmm.md) and its launch shape
 * (cudaOccupancyMaxPotentialBlockSize, cached per device); for ROW_SPLIT
 * with rows longer than its segment length it copies row_ptr to the host
 * and builds the segment table; for MERGE it computes the merge-path
 * partition (one search per warp) and the list of rows split between
 * warps.  kernel: AUTO, ROW_SPLIT or MERGE forces one
 * (tests, measurements); ignored when nnz, m or n is 0 (SCALE, NONE).
 * The plan depends on row_ptr's contents: re-plan if they change.  col_ind
 * and values may change between executes (the pointers are fixed).  The
 * descriptor may be destroyed after this call; the handle must outlive the
 * plan (executing a plan whose handle was destroyed gives
 * GKO_STATUS_INVALID_HANDLE; the plan can still be destroyed).  row_ptr is
 * expected to be valid (gko_csr_validate): a malformed
 * row_ptr gives a useless plan but no fault here (MERGE refuses one whose
 * partition comes out inconsistent: INVALID_VALUE).
 * ldb, ldc: leading dimensions of B and C in elements (ROW_MAJOR: >=
 * max(1, n); COL_MAJOR: >= max(1, k) and >= max(1, m)).  COL_MAJOR runs
 * the scalar path with strided accesses (correct, not tuned).
 * Returns GKO_STATUS_INVALID_VALUE (NULL handle, csr or plan; n < 0; an
 * unknown layout or kernel; a leading dimension too small; m*ldc or k*ldb
 * elements overflowing a byte count; arrays the device cannot access),
 * GKO_STATUS_NOT_SUPPORTED (the stream is being captured: this call
 * synchronizes), GKO_STATUS_DEVICE_MISMATCH, GKO_STATUS_ALLOC_FAILED,
 * GKO_STATUS_CUDA_ERROR, GKO_STATUS_EXECUTION_FAILED.  *plan is untouched
 * on failure.
 * Storage: allocates host memory and device memory for ROW_SPLIT's
 *          segment table (16 bytes per segment plus 24 per long row; none
 *          without long rows) or MERGE's partition (16 bytes per warp of
 *          work plus 24 per split row), both freed by
 *          gko_spmm_plan_destroy; a host copy of row_ptr when it has long
 *          rows and temporary device memory for the
 *          statistics (freed before returning).
 * Async: no (waits for the statistics on stream).
 * Capture: no (GKO_STATUS_NOT_SUPPORTED on a capturing stream). */
GKO_API gko_status_t gko_spmm_plan_create(gko_handle_t handle, gko_csr_t csr,
                                          int64_t n, gko_layout_t layout,
                                          int64_t ldb, int64_t ldc,
                                          gko_spmm_kernel_t kernel,
                                          gko_spmm_plan_t *plan,
                                          gko_stream_t stream);
/* Frees a plan and its device memory; NULL is a no-op.  Work already
 * enqueued with the plan (and graphs captured from it) must have finished
 * or be discarded first.
 * Storage: frees host and device memory (cudaFree).  Async: no.
 * Capture: no. */
GKO_API gko_status_t gko_spmm_plan_destroy(gko_spmm_plan_t plan);
/* Bytes of device workspace gko_spmm_execute needs: 0 for SCALE, NONE and
 * ROW_SPLIT without long rows; for ROW_SPLIT with long rows 4 *
 * roundup(n, 8) bytes per segment (fewer than 2 * nnz / L segments, L the
 * segment length of gko_spmm_plan_describe: tens of MB on large power-law
 * graphs); for MERGE 2 * 4 * n bytes per warp of work (f32 partial rows;
 * the plan aims at about 64 warps per SM, so about 0.5 * n * SMs KiB) plus
 * 255 bytes of alignment slack (any pointer alignment works).
 * Returns GKO_STATUS_INVALID_VALUE for a NULL argument.
 * Storage: none.  Async: no.  Capture: yes. */
GKO_API gko_status_t gko_spmm_workspace_size(gko_spmm_plan_t plan,
                                             size_t *bytes);
/* The kernel the plan runs (never AUTO).  INVALID_VALUE for NULL.
 * Storage: none.  Async: no.  Capture: yes. */
GKO_API gko_status_t gko_spmm_plan_kernel(gko_spmm_plan_t plan,
                                          gko_spmm_kernel_t *kernel);
/* A readable account of the plan: the kernel, its launch shape and why,
 * with the row statistics, in the form "ROW_SPLIT: 32 lanes x 1 16-byte vectors
 * across n (1 tile), 1 lanes across entries, 1 row per warp, T threads x
 * B blocks (scalar path when B or C is not 16-byte aligned); R rows longer
 * than L entries cut into S segments (SB blocks[, started before the rows;
 * grid not persistent]), summed in order by a second kernel; rows: m, nnz, mean, max, cv, empty; AUTO: ROW_SPLIT (long
 * rows in segments)" with the numbers filled in.
 * Always NUL-terminated when bytes > 0 (truncated if needed); *required
 * (may be NULL) receives the full size with the terminator.
 * INVALID_VALUE for a NULL plan, or buf NULL with bytes > 0.
 * Storage: none.  Async: no.  Capture: yes. */
GKO_API gko_status_t gko_spmm_plan_describe(gko_spmm_plan_t plan, char *buf,
                                            size_t bytes, size_t *required);

/* C = alpha * A * B + beta * C on stream, with the plan's matrix, n, layout
 * and leading dimensions.  B (k x n) and C (m x n): device-accessible,
 * aligned to the element size; 16-byte vectors are used when the pointers
 * are 16-byte aligned and the plan's leading dimensions allow (else scalar
 * accesses, same results).  alpha and beta are host values read at the
 * call (a captured graph keeps them).
 *   - beta == 0: C is only written (NaN or Inf in it has no effect).
 *   - nnz == 0 (or k == 0): B is not read (may be NULL), C = beta * C.
 *   - m == 0 or n == 0: nothing is read or written (NULLs allowed).
 *   - Elements of C outside the m x n matrix (padding up to ldc) are never
 *     read or written.  alpha == 0 is not special-cased (NaN in B
 *     propagates).
 *   - C must not overlap B or the CSR arrays, and the first
 *     gko_spmm_workspace_size bytes of the workspace (written) must not
 *     overlap B, C or the CSR arrays (INVALID_VALUE).
 * Statuses: GKO_STATUS_INVALID_VALUE (NULL plan; a NULL or misaligned B or
 * C the call needs; overlap; workspace NULL while the plan needs some),
 * GKO_STATUS_INSUFFICIENT_WORKSPACE, GKO_STATUS_DEVICE_MISMATCH (wrong
 * current device, stream or pointer device), GKO_STATUS_CUDA_ERROR (a
 * launch failed), GKO_STATUS_EXECUTION_FAILED (sticky context error),
 * GKO_STATUS_INTERNAL (the plan's launch shape broke the kernels' warp
 * invariants: a gko bug, refused before launching).  On failure nothing
 * was enqueued and C is untouched.
 * The matrix must be valid (gko_csr_validate); else the result is
 * undefined and the kernels may read out of bounds.  A plan may be
 * executed from several threads at once, each with its own workspace.
 * Storage: none (the caller's workspace).  Async: yes.
 * Capture: yes (enqueues one or two kernels, nothing else). */
GKO_API gko_status_t gko_spmm_execute(gko_spmm_plan_t plan, float alpha,
                                      const void *B, float beta, void *C,
                                      void *workspace, size_t workspace_bytes,
                                      gko_stream_t stream);

/* ------------------------------------------------------------------------ */
/* Conv2d forward: y = act(conv(x, w) + bias), by im2col + GEMM              */
/* ------------------------------------------------------------------------ */
/* Shapes, in the field's terms (cuDNN's documentation names the layouts):
 *   x  N x C x H x W input, w  K x C/groups x R x S filters, bias K values,
 *   y  N x K x OH x OW output, with per axis (shown for the height)
 *     OH = (H + pad_h + pad_h_end - dil_h * (R - 1) - 1) / stride_h + 1.
 * y[n, k, oh, ow] = act(bias[k] + sum over c, r, s of
 *     w[k, c, r, s] * x[n, g * C/groups + c, oh * stride_h - pad_h + r * dil_h,
 *                                            ow * stride_w - pad_w + s * dil_w])
 * with g = k / (K/groups) the group of output channel k, c in [0, C/groups),
 * and x read as 0 outside [0, H) x [0, W) (zero padding).  This is
 * cross-correlation, as cuDNN's CUDNN_CROSS_CORRELATION and torch's conv2d
 * compute it.  Depthwise convolution is groups == C.
 * Layouts (GKO_CONV_ATTR_LAYOUT), all dense (no strides):
 *   NCHW: x [N][C][H][W], w KCRS [K][C/groups][R][S], y [N][K][OH][OW];
 *   NHWC: x [N][H][W][C], w KRSC [K][R][S][C/groups], y [N][OH][OW][K]
 *         (torch's channels_last memory format).
 * Types: x, w, bias and y share one dtype (F32, F16 or BF16); products
 * accumulate in f32 (TF32 opt-in for f32, as gko_gemm_compute_t).
 * Algorithm: im2col (K. Chellapilla, S. Puri, P. Simard, "High Performance
 * Convolutional Neural Networks for Document Processing", 2006) into the
 * caller's workspace, then gko's GEMM plans (so cuBLASLt's kernels, fused
 * epilogues and gko's epilogue pass, as gko_gemm_execute):
 *   NCHW: per image col [C*R*S][OH*OW], y_n [K][OH*OW] = w [K][C*R*S] . col
 *         (a strided batched GEMM over the images of a chunk);
 *   NHWC: col [N*OH*OW][R*S*C], y [N*OH*OW][K] = col . w^T (the GEMM writes
 *         NHWC directly);
 *   NCHW through NHWC, when one group, N > 1, C >= 8 and (16-bit types
 *         with R*S >= 2 * stride_h * stride_w, or f32 with R*S >= 4 *
 *         stride_h * stride_w and OH*OW >= 2048): x is
 *         transposed to NHWC per chunk and the filter to KRSC in the
 *         workspace, the NHWC lowering runs with D in the workspace, and D
 *         is transposed into y: one GEMM over the chunk's N*OH*OW pixels
 *         instead of one per image (docs/conv.md has the measurements).
 * Groups are one GEMM per group (NHWC) or per group or image, whichever is
 * fewer (NCHW).  A 1x1 filter with stride 1 and no padding skips im2col: x
 * is the GEMM's operand itself (NHWC: one GEMM with no copy).  When the
 * workspace cannot hold the whole batch's column matrix, the batch runs in
 * chunks of images (GKO_CONV_ATTR_MAX_WORKSPACE); the output is bit for bit
 * the same whatever the chunk (the im2col path's GEMMs are planned with
 * GKO_GEMM_ATTR_INVARIANT: one cuBLASLt algorithm without split-K for every
 * chunk size).  docs/conv.md has the lowering, the workspace policy and the
 * measurements. */

/* Memory layout of x, w and y (see above). */
typedef enum gko_conv_layout_e {
  GKO_CONV_LAYOUT_NCHW = 0, /* x NCHW, w KCRS, y NKHW (the default) */
  GKO_CONV_LAYOUT_NHWC = 1  /* x NHWC, w KRSC, y NHWK (channels_last) */
} gko_conv_layout_t;

/* Descriptor attributes (gko_conv_desc_set / _get); all values int64_t. */
typedef enum gko_conv_attr_e {
  GKO_CONV_ATTR_DTYPE = 0,      /* gko_dtype_t of x, w, bias and y */
  GKO_CONV_ATTR_LAYOUT = 1,     /* gko_conv_layout_t */
  GKO_CONV_ATTR_N = 2,          /* images, >= 0 */
  GKO_CONV_ATTR_C = 3,          /* input channels, >= 1 */
  GKO_CONV_ATTR_H = 4,          /* input height, >= 0 */
  GKO_CONV_ATTR_W = 5,          /* input width, >= 0 */
  GKO_CONV_ATTR_K = 6,          /* output channels (filters), >= 1 */
  GKO_CONV_ATTR_R = 7,          /* filter height, >= 1 */
  GKO_CONV_ATTR_S = 8,          /* filter width, >= 1 */
  GKO_CONV_ATTR_STRIDE_H = 9,   /* >= 1, default 1 */
  GKO_CONV_ATTR_STRIDE_W = 10,  /* >= 1, default 1 */
  /* Zero padding before the first row / column, >= 0, default 0. */
  GKO_CONV_ATTR_PAD_H = 11,
  GKO_CONV_ATTR_PAD_W = 12,
  GKO_CONV_ATTR_DILATION_H = 13, /* >= 1, default 1 */
  GKO_CONV_ATTR_DILATION_W = 14, /* >= 1, default 1 */
  /* >= 1, default 1; C and K must be multiples (checked by the plan). */
  GKO_CONV_ATTR_GROUPS = 15,
  /* gko_epilogue_t, default NONE: bias[k] is added to output channel k, then
   * the activation (ReLU, GELU-erf, GELU-tanh) as in gko_epilogue_t. */
  GKO_CONV_ATTR_EPILOGUE = 16,
  /* gko_gemm_compute_t, default DEFAULT (TF32 is an opt-in for f32). */
  GKO_CONV_ATTR_COMPUTE = 17,
  /* Upper bound (bytes) on gko_conv_workspace_size, -1 (the default) for
   * none: then the whole batch's column matrix is built at once.  A smaller
   * bound makes the plan process the batch in chunks of as many images as
   * fit; below what one image needs (GKO_CONV_INFO_WORKSPACE_MIN: its
   * column matrix and the fixed parts) gko_conv_plan_create returns
   * GKO_STATUS_INSUFFICIENT_WORKSPACE. */
  GKO_CONV_ATTR_MAX_WORKSPACE = 18,
  /* Upper bound on the images per im2col pass, >= 0; 0 (the default) for
   * none.  For measurements (e.g. a column matrix that fits in L2) and
   * tests; the workspace bound applies as well. */
  GKO_CONV_ATTR_MAX_CHUNK = 19,
  /* Alignment in bytes of x, w, bias and y that the caller promises: a
   * power of two from 1 to 256, default 16.  execute rejects pointers less
   * aligned than the promise (or than their element size). */
  GKO_CONV_ATTR_ALIGNMENT = 20,
  /* Zero padding after the last row / column, >= -1; -1 (the default):
   * the same as PAD_H / PAD_W (symmetric padding, as torch's conv2d). */
  GKO_CONV_ATTR_PAD_H_END = 21,
  GKO_CONV_ATTR_PAD_W_END = 22,
  /* gko_conv_algo_t, default AUTO: which lowering the plan may choose. */
  GKO_CONV_ATTR_ALGO = 23
} gko_conv_attr_t;

/* The lowerings a plan may choose (GKO_CONV_ATTR_ALGO).
 *   AUTO      implicit GEMM where it applies (below), else the GEMM
 *             lowering; 1x1 filters with stride 1 and no padding stay on
 *             DIRECT (x is the GEMM's operand as it is).
 *   GEMM      the GEMM lowering only: DIRECT or IM2COL as described above.
 *   IMPLICIT  implicit GEMM, or GKO_STATUS_NOT_SUPPORTED from
 *             gko_conv_plan_create with the reason.
 * Implicit GEMM (GKO_CONV_PATH_IMPLICIT) is gko's sm_90a kernel on
 * CUTLASS's sm90 forward-convolution collective: the tile of x that a
 * GEMM step needs is gathered by TMA's im2col mode straight from x (no
 * column matrix), the filter tile by an ordinary TMA load, the product by
 * wgmma, and the epilogue (bias, residual, activation) runs on the
 * accumulators.  It applies to: a build with the SM90 kernels on a GPU of
 * compute capability 9.0; NHWC; F16 or BF16; one group; COMPUTE DEFAULT;
 * ALIGNMENT >= 16; K a multiple of 8 (16 bytes) and C too, or else (an RGB
 * stem's C = 3) the space-to-depth rewrite: x is copied into the workspace
 * with blocks of stride_h rows x the filter's S columns as channels,
 * [N][OH + R2 - 1][OW][C2] with C2 = stride_h * S * C rounded up to 8
 * (zeros in the padding and the extra channels), R2 = ceil(R / stride_h),
 * the filter as [K][R2][1][C2], and a stride-1 unpadded R2 x 1 convolution
 * runs on the copies (the same sums plus zero terms: where stride_h does
 * not divide R, the last tap's zero weights meet up to stride_h - 1 rows of
 * x past the output's window, so an Inf or NaN there makes that output NaN
 * too; finite inputs are unaffected); it needs dilation 1 and strides at
 * most 8, and is taken when R2 * (C2 rounded up to 64, the kernel's
 * reduction step) is at most twice C * R * S rounded up to 8 and
 * MAX_WORKSPACE allows the copies (docs/conv.md); H, W >= 1; per axis
 * stride at most 8, padding at most 128 on either side, dil * (R - 1)
 * below 255 and pad_end - dil * (R - 1) from -128 to 127 (TMA's im2col
 * limits; CUTLASS accepts end padding to 256, but 256 with a dilated
 * extent of 200 left output rows unwritten on the H200; the rewrite's
 * convolution has no padding, so these padding limits do not apply to it);
 * K at most 65535 x 64; N*OH*OW and every extent below 2^31.  With N = 0
 * every ALGO plans PATH_NONE. */
typedef enum gko_conv_algo_e {
  GKO_CONV_ALGO_AUTO = 0,
  GKO_CONV_ALGO_GEMM = 1,
  GKO_CONV_ALGO_IMPLICIT = 2
} gko_conv_algo_t;

/* What gko_conv_plan_get reports. */
typedef enum gko_conv_info_e {
  GKO_CONV_INFO_OH = 0,              /* output height */
  GKO_CONV_INFO_OW = 1,              /* output width */
  /* gko_conv_path_t the plan runs */
  GKO_CONV_INFO_PATH = 2,
  /* images per im2col pass (the chunk), and how many passes execute runs
   * (N when there is no im2col, and 1 pass) */
  GKO_CONV_INFO_CHUNK = 3,
  GKO_CONV_INFO_CHUNKS = 4,
  /* bytes of the column matrix one pass writes (then the GEMM reads), 0
   * without im2col */
  GKO_CONV_INFO_COL_BYTES = 5,
  /* gko_conv_workspace_size of this plan */
  GKO_CONV_INFO_WORKSPACE = 6,
  /* a MAX_WORKSPACE at least this large runs the whole batch in one pass */
  GKO_CONV_INFO_WORKSPACE_FULL = 7,
  /* the smallest MAX_WORKSPACE a plan accepts: one image's column matrix,
   * the filter copy, alignment slack, the GEMMs' scratch (a fixed 64 KiB
   * on PATH_IM2COL, whatever the bound) and, for NCHW through NHWC, one
   * image of x and of y transposed */
  GKO_CONV_INFO_WORKSPACE_MIN = 8,
  /* GEMM executions per execute call (chunks x groups or images) */
  GKO_CONV_INFO_GEMM_CALLS = 9
} gko_conv_info_t;

/* How a plan computes the convolution. */
typedef enum gko_conv_path_e {
  GKO_CONV_PATH_NONE = 0,   /* empty output (N == 0): execute does nothing */
  GKO_CONV_PATH_IM2COL = 1, /* im2col into the workspace, then GEMM */
  GKO_CONV_PATH_DIRECT = 2, /* 1x1, stride 1, no padding: GEMM on x itself */
  GKO_CONV_PATH_IMPLICIT = 3 /* implicit GEMM (GKO_CONV_ALGO_IMPLICIT) */
} gko_conv_path_t;

/* Opaque problem descriptor (host memory only; no handle, no GPU). */
typedef struct gko_conv_desc_s *gko_conv_desc_t;
/* Opaque plan: the descriptor checked and bound to a handle, the lowering
 * chosen, its GEMM plans (one for a full chunk, one for the last, partial
 * chunk) and launch shapes. */
typedef struct gko_conv_plan_s *gko_conv_plan_t;

/* Creates a descriptor with every other attribute at its default (stride
 * 1, no padding, dilation 1, one group, no epilogue, no workspace bound).
 * Returns GKO_STATUS_INVALID_VALUE for a NULL desc, an unknown dtype or
 * layout, or a size out of its range (see gko_conv_attr_t);
 * GKO_STATUS_NOT_SUPPORTED for an FP8 dtype (also from gko_conv_desc_set);
 * GKO_STATUS_ALLOC_FAILED.  *desc is untouched on failure.
 * Storage: allocates host memory (gko_conv_desc_destroy frees it).
 * Async: no.  Capture: yes. */
GKO_API gko_status_t gko_conv_desc_create(gko_conv_desc_t *desc, gko_dtype_t dtype,
                                          gko_conv_layout_t layout, int64_t n, int64_t c,
                                          int64_t h, int64_t w, int64_t k, int64_t r,
                                          int64_t s);
/* Frees a descriptor; NULL is a no-op.  Plans made from it stay valid.
 * Storage: frees host memory.  Async: no.  Capture: yes. */
GKO_API gko_status_t gko_conv_desc_destroy(gko_conv_desc_t desc);
/* Sets one attribute, checked against its own range (GKO_STATUS_INVALID_
 * VALUE for an unknown attribute or enumerator, a value out of range); the
 * combinations are checked by gko_conv_output_shape and the plan.  The
 * descriptor is unchanged on failure.
 * Storage: none.  Async: no.  Capture: yes. */
GKO_API gko_status_t gko_conv_desc_set(gko_conv_desc_t desc, gko_conv_attr_t attr,
                                       int64_t value);
/* Reads one attribute (PAD_*_END resolved: -1 reads as the start padding).
 * GKO_STATUS_INVALID_VALUE for a NULL argument or an unknown attribute
 * (*value untouched).  Storage: none.  Async: no.  Capture: yes. */
GKO_API gko_status_t gko_conv_desc_get(gko_conv_desc_t desc, gko_conv_attr_t attr,
                                       int64_t *value);
/* The output height and width (OH, OW above) after the host-side checks
 * gko_conv_plan_create makes.  Returns GKO_STATUS_INVALID_VALUE when:
 * desc, oh or ow is NULL; C or K is not a multiple of groups; TF32 is asked
 * for 16-bit inputs; N > 0 and the padded input is smaller than the dilated
 * filter on an axis (H + pad_h + pad_h_end < dil_h * (R - 1) + 1: "padded
 * input smaller than the dilated filter"); a padded size, dilated filter
 * extent, output size or the byte size of x, w or y (of one image when
 * N == 0) overflows int64 (absurd padding or dilation).  With N == 0 a
 * too-small input gives OH or OW 0.
 * *oh and *ow are untouched on failure.
 * Storage: none.  Async: no.  Capture: yes. */
GKO_API gko_status_t gko_conv_output_shape(gko_conv_desc_t desc, int64_t *oh, int64_t *ow);

/* Checks the descriptor (as gko_conv_output_shape), chooses the lowering
 * (GKO_CONV_PATH_*), the chunk (images per im2col pass: the whole batch,
 * or as many as GKO_CONV_ATTR_MAX_WORKSPACE and MAX_CHUNK allow), creates
 * the GEMM plans (gko_gemm_plan_create: cuBLASLt's heuristic) and sizes
 * the workspace.  The column matrix holds k = C/groups * R * S rounded up to
 * 16 bytes per row (then the filter is copied, zero-padded, into the
 * workspace so that cuBLASLt sees aligned operands), and NCHW rows of OH*OW
 * rounded up to 16 bytes.  The descriptor may be changed or destroyed
 * afterwards; the handle must outlive the plan (executing a plan whose
 * handle was destroyed gives GKO_STATUS_INVALID_HANDLE; the plan can still
 * be destroyed).  Returns:
 *   GKO_STATUS_INVALID_VALUE   NULL argument; a descriptor gko_conv_output_
 *       shape rejects (the detail names the attribute);
 *   GKO_STATUS_INSUFFICIENT_WORKSPACE  MAX_WORKSPACE is below the minimum
 *       (the detail gives GKO_CONV_INFO_WORKSPACE_MIN);
 *   GKO_STATUS_NOT_SUPPORTED   a GEMM the plan needs is not supported (the
 *       detail starts with "conv GEMM plan" and quotes the GEMM's reason);
 *       a column-matrix row of 2^25 or more elements (C/groups * R * S);
 *       OH * OW above 2^30 (NHWC, NCHW through NHWC) or 2^31 (NCHW); a
 *       workspace (filter copy, one image's share) above 2^63 bytes;
 *   GKO_STATUS_DEVICE_MISMATCH, GKO_STATUS_ALLOC_FAILED,
 *   GKO_STATUS_CUDA_ERROR, GKO_STATUS_INTERNAL.
 * *plan is untouched on failure.
 * Storage: allocates host memory (freed by gko_conv_plan_destroy) and may
 *          grow the handle's GEMM algorithm cache.
 * Async: no.  Capture: yes (host work only). */
GKO_API gko_status_t gko_conv_plan_create(gko_handle_t handle, gko_conv_desc_t desc,
                                          gko_conv_plan_t *plan);
/* Frees a plan and its GEMM plans; NULL is a no-op.  Work already enqueued
 * is unaffected.  Storage: frees host memory.  Async: no.  Capture: yes. */
GKO_API gko_status_t gko_conv_plan_destroy(gko_conv_plan_t plan);
/* Bytes of device workspace gko_conv_execute needs with this plan: the
 * filter copy (when k is not a multiple of 16 bytes, or reordered for NCHW
 * through NHWC), one chunk's column matrix (and, through NHWC, its x and y
 * transposed), the GEMMs' cuBLASLt scratch (on PATH_IM2COL a fixed
 * 64 KiB + 256 bytes, used or not, so that the chunk cannot change the
 * GEMM's algorithm) and 255 bytes of slack (any pointer alignment works).
 * 0 for PATH_NONE; for PATH_DIRECT only the GEMM's (slack included); for
 * PATH_IMPLICIT 0, or with the space-to-depth rewrite its copies of x and
 * the filter and 255 bytes of slack.
 * GKO_STATUS_INVALID_VALUE for a NULL argument.
 * Storage: none.  Async: no.  Capture: yes. */
GKO_API gko_status_t gko_conv_workspace_size(gko_conv_plan_t plan, size_t *bytes);
/* One number about the plan (gko_conv_info_t).  GKO_STATUS_INVALID_VALUE
 * for a NULL argument or an unknown query (*value untouched).
 * Storage: none.  Async: no.  Capture: yes. */
GKO_API gko_status_t gko_conv_plan_get(gko_conv_plan_t plan, gko_conv_info_t what,
                                       int64_t *value);
/* A readable account of the plan: the path, the column matrix and chunk,
 * the GEMM shape and how many GEMM calls, the workspace (chosen, full,
 * minimum) and the description of the full chunk's GEMM plan.  Always
 * NUL-terminated when bytes > 0 (truncated if needed); *required (may be
 * NULL) receives the full size with the terminator.  INVALID_VALUE for a
 * NULL plan, or buf NULL with bytes > 0.
 * Storage: none.  Async: no.  Capture: yes. */
GKO_API gko_status_t gko_conv_plan_describe(gko_conv_plan_t plan, char *buf, size_t bytes,
                                            size_t *required);

/* y = act(conv(x, w) + bias) on stream, with the plan's shapes and layout.
 * x (N*C*H*W elements), w (K*C/groups*R*S), bias (K, only when the
 * epilogue has one; else ignored) and y (N*K*OH*OW): device-accessible,
 * dense in the plan's layout, each aligned to the plan's ALIGNMENT promise
 * and its element size.  y is only written (its old contents never matter)
 * and must not overlap x, w or bias; the first gko_conv_workspace_size
 * bytes of the workspace (written) must not overlap y, x, w or bias.
 *   - N == 0: nothing is read or written (NULLs allowed).
 *   - H == 0 or W == 0 (with enough padding): x is never read (may be
 *     NULL); y = act(bias), as the padding is all zeros.
 *   - Chunked plans (GKO_CONV_INFO_CHUNKS > 1) run im2col + GEMM per chunk
 *     in the stream's order: the result equals the unchunked one as far as
 *     cuBLASLt computes the same GEMM tile in the same order for both GEMM
 *     shapes (docs/conv.md).
 * workspace: gko_conv_workspace_size bytes (any alignment), or NULL with
 * workspace_bytes == 0 when the plan needs none.
 * Statuses: GKO_STATUS_INVALID_VALUE (NULL plan; a NULL or misaligned
 * pointer the call needs; y overlapping an input or the workspace; the
 * workspace overlapping an input; a workspace NULL with workspace_bytes >
 * 0), GKO_STATUS_INSUFFICIENT_WORKSPACE, GKO_STATUS_DEVICE_MISMATCH,
 * GKO_STATUS_NOT_SUPPORTED (cuBLASLt rejected a GEMM; the detail starts with
 * "conv GEMM"), GKO_STATUS_CUDA_ERROR, GKO_STATUS_EXECUTION_FAILED.  On
 * failure of the checks nothing was enqueued and y is untouched; a launch
 * failing after earlier ones were enqueued (a CUDA error) can leave y
 * partly written.
 * A plan may be executed from several threads at once, each with its own
 * workspace.
 * Storage: none (the caller's workspace).  Async: yes.
 * Capture: yes (enqueues kernels only: the filter copy, im2col and the
 * GEMMs, per chunk, and the transposes of NCHW through NHWC; implicit
 * GEMM's kernel, after its space-to-depth copies where it has them). */
GKO_API gko_status_t gko_conv_execute(gko_conv_plan_t plan, const void *x, const void *w,
                                      const void *bias, void *y, void *workspace,
                                      size_t workspace_bytes, gko_stream_t stream);

/* y = act(alpha * conv(x, w) + bias + beta * z) on stream: gko_conv_execute
 * with the convolution scaled and a residual added before the activation,
 * as cuDNN's cudnnConvolutionBiasActivationForward (its alpha1 and alpha2)
 * and the ResNet basic block's shortcut (z the block's input, beta 1,
 * epilogue BIAS_RELU).  gko_conv_execute is this call with alpha 1, beta 0.
 * z: y's shape and layout (N*K*OH*OW elements), the plan's dtype and
 * alignment, device-accessible.  beta == 0: z is never read (may be NULL;
 * NaN or Inf in it has no effect).  z may be y itself (the residual added
 * in place: each element of z is read before the same element of y is
 * written); any other overlap of z with y, or with the workspace's first
 * gko_conv_workspace_size bytes, is INVALID_VALUE.  alpha and beta are host
 * values read at the call (a captured graph keeps them); alpha == 0 gives
 * y = act(bias + beta * z) whatever x and w hold (NaN or Inf in them has
 * no effect; the pointers are still checked).
 * Implicit GEMM adds z in its epilogue; the GEMM lowering passes z as the
 * GEMMs' C (fused where the GEMM fuses its epilogue; NCHW through NHWC
 * first transposes z into the workspace).
 * Statuses, workspace and the other arguments: as gko_conv_execute; also
 * INVALID_VALUE for z NULL with beta != 0, z misaligned or overlapping as
 * above.
 * Storage: none.  Async: yes.  Capture: yes (as gko_conv_execute). */
GKO_API gko_status_t gko_conv_execute_residual(gko_conv_plan_t plan, float alpha, const void *x,
                                               const void *w, const void *bias, float beta,
                                               const void *z, void *y, void *workspace,
                                               size_t workspace_bytes, gko_stream_t stream);

/* ------------------------------------------------------------------------ */
/* Pool2d forward: max and average pooling                                   */
/* ------------------------------------------------------------------------ */
/* x N x C x H x W, y N x C x OH x OW in one of gko_conv_layout_t's layouts
 * (NCHW or NHWC, dense), one dtype (F32, F16 or BF16), math in f32.  Per
 * axis (shown for the height), with window R, stride, padding and dilation:
 *   OH = floor((H + 2 pad_h - dil_h (R - 1) - 1) / stride_h) + 1, or with
 *   CEIL_MODE the ceiling, less one when the last window would start past
 *   H + pad_h (so every window starts inside the input or its left
 *   padding), as torch's max_pool2d / avg_pool2d compute it; OH < 1 is
 *   refused.  In ceil mode a window may reach past the padded input.
 * y[n, c, oh, ow] over the window rows ih = oh stride_h - pad_h + r dil_h
 * (r in [0, R)) and columns likewise:
 *   MAX                 the largest element inside the input (padding never
 *                       wins); NaN if any of them is NaN (as torch); -inf
 *                       for a dilated window whose taps all fall in the
 *                       padding (as torch).
 *   AVG                 the sum of the elements inside the input divided by
 *                       the window's size clipped to the padded input
 *                       (torch's count_include_pad=True, cuDNN's
 *                       CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING).
 *   AVG_EXCLUDE_PAD     divided by the number of elements inside the input
 *                       (count_include_pad=False, cuDNN's ..._EXCLUDE_PADDING).
 * Average pooling has no dilation (as torch's avg_pool2d).  Global average
 * pooling (torch's adaptive_avg_pool2d(x, 1)) is AVG with R = H, S = W: a
 * dedicated reduction runs it.
 * Algorithm: one pass, each output computed by one thread from the window
 * (NHWC: 16-byte vectors of channels when C and the pointers allow); a
 * whole-plane window by one warp per plane (NCHW) or a block per image and
 * 32 channel vectors (NHWC); no workspace (docs/pool.md). */
typedef enum gko_pool_mode_e {
  GKO_POOL_MAX = 0,
  GKO_POOL_AVG = 1,
  GKO_POOL_AVG_EXCLUDE_PAD = 2
} gko_pool_mode_t;

/* Descriptor attributes (gko_pool_desc_set / _get); all values int64_t. */
typedef enum gko_pool_attr_e {
  GKO_POOL_ATTR_MODE = 0,   /* gko_pool_mode_t */
  GKO_POOL_ATTR_DTYPE = 1,  /* gko_dtype_t of x and y */
  GKO_POOL_ATTR_LAYOUT = 2, /* gko_conv_layout_t */
  GKO_POOL_ATTR_N = 3,      /* images, >= 0 */
  GKO_POOL_ATTR_C = 4,      /* channels, >= 1 */
  GKO_POOL_ATTR_H = 5,      /* input height, >= 1 */
  GKO_POOL_ATTR_W = 6,      /* input width, >= 1 */
  GKO_POOL_ATTR_R = 7,      /* window height, >= 1 */
  GKO_POOL_ATTR_S = 8,      /* window width, >= 1 */
  GKO_POOL_ATTR_STRIDE_H = 9, /* >= 1, default 1 */
  GKO_POOL_ATTR_STRIDE_W = 10,
  /* zero padding on both sides, >= 0, default 0; at most half the window
   * (R / 2) and half the dilated window ((dil (R - 1) + 1) / 2), as torch
   * requires (checked by gko_pool_output_shape) */
  GKO_POOL_ATTR_PAD_H = 11,
  GKO_POOL_ATTR_PAD_W = 12,
  GKO_POOL_ATTR_DILATION_H = 13, /* >= 1, default 1; MAX only */
  GKO_POOL_ATTR_DILATION_W = 14,
  GKO_POOL_ATTR_CEIL_MODE = 15   /* 0 (default) or 1 */
} gko_pool_attr_t;

/* Opaque problem descriptor (host memory only). */
typedef struct gko_pool_desc_s *gko_pool_desc_t;

/* Creates a descriptor (stride 1, no padding, dilation 1, floor mode).
 * INVALID_VALUE for a NULL desc or a value out of its range (the detail
 * names the attribute); NOT_SUPPORTED for an FP8 dtype (also from
 * gko_pool_desc_set); ALLOC_FAILED.  *desc untouched on failure.
 * Storage: allocates host memory (gko_pool_desc_destroy frees it).
 * Async: no.  Capture: yes. */
GKO_API gko_status_t gko_pool_desc_create(gko_pool_desc_t *desc, gko_pool_mode_t mode,
                                          gko_dtype_t dtype, gko_conv_layout_t layout,
                                          int64_t n, int64_t c, int64_t h, int64_t w,
                                          int64_t r, int64_t s);
/* Frees a descriptor; NULL is a no-op.  Async: no.  Capture: yes. */
GKO_API gko_status_t gko_pool_desc_destroy(gko_pool_desc_t desc);
/* Sets one attribute, checked against its own range (INVALID_VALUE, the
 * descriptor unchanged on failure).  Async: no.  Capture: yes. */
GKO_API gko_status_t gko_pool_desc_set(gko_pool_desc_t desc, gko_pool_attr_t attr,
                                       int64_t value);
/* Reads one attribute (INVALID_VALUE for NULL or an unknown attribute,
 * *value untouched).  Async: no.  Capture: yes. */
GKO_API gko_status_t gko_pool_desc_get(gko_pool_desc_t desc, gko_pool_attr_t attr,
                                       int64_t *value);
/* OH and OW (above) after every host-side check gko_pool_forward makes:
 * INVALID_VALUE for a NULL argument, padding above half the window or the
 * dilated window, dilation with average pooling, an output size below 1
 * (a window larger than the padded input), or a size whose byte count
 * overflows int64.  *oh, *ow untouched
 * on failure.  Storage: none.  Async: no.  Capture: yes. */
GKO_API gko_status_t gko_pool_output_shape(gko_pool_desc_t desc, int64_t *oh, int64_t *ow);
/* y = pool(x) on stream, with the descriptor's shapes (read at the call;
 * the descriptor may change afterwards).  x (N*C*H*W elements) and y
 * (N*C*OH*OW) device-accessible, aligned to their element size, y not
 * overlapping x; y is only written.  N == 0: nothing is read or written
 * (NULLs allowed).  Statuses: INVALID_VALUE (NULL handle, desc or pointer;
 * a descriptor gko_pool_output_shape rejects; misaligned or overlapping
 * pointers), DEVICE_MISMATCH, CUDA_ERROR, EXECUTION_FAILED; on a failed
 * check nothing is enqueued and y is untouched.  Thread-safe with
 * distinct descriptors (or one no thread changes).
 * Storage: none.  Async: yes.  Capture: yes (one kernel). */
GKO_API gko_status_t gko_pool_forward(gko_handle_t handle, gko_pool_desc_t desc, const void *x,
                                      void *y, gko_stream_t stream);

/* ------------------------------------------------------------------------ */
/* Encoder operators: layer normalisation, softmax, attention, gathers        */
/* ------------------------------------------------------------------------ */
/* Matrices here are row-major: element (i, j) of a rows x cols matrix is at
 * [i * ld + j], ld >= cols (ld counts elements).  Storage is dtype (F32, F16
 * or BF16; an 8-bit dtype is NOT_SUPPORTED); arithmetic is f32 for every
 * dtype.  Every pointer is device-accessible, aligned to its element size
 * (wider alignment of pointers and leading dimensions lets the kernels use
 * 16-byte vectors; it is never required).  On a failed check nothing is
 * enqueued and the outputs are untouched; the statuses are INVALID_VALUE
 * (NULL handle or pointer, a negative size, an ld below its row length, an
 * unknown dtype, misaligned or overlapping pointers the function does not
 * allow, host memory the GPU cannot access), NOT_SUPPORTED (an 8-bit dtype,
 * or a limit stated below), DEVICE_MISMATCH, CUDA_ERROR (the launch failed)
 * and EXECUTION_FAILED (the context holds a sticky error).  A problem with
 * no element (rows == 0, n == 0, batch == 0) reads and writes nothing and
 * allows NULL pointers.  None allocates or synchronizes: each is one or a
 * few kernels on stream, capture-safe. */

/* Layer normalisation over the last dimension (Ba, Kiros & Hinton, "Layer
 * Normalization", 2016), with an optional residual added first, as the
 * post-LN Transformer block computes LN(x + r):
 *   h[i][j] = x[i][j] + r[i][j]                (r == NULL: h = x)
 *   y[i][j] = (h[i][j] - mean_i) / sqrt(var_i + eps) * gamma[j] + beta[j]
 * with mean_i and the biased variance var_i (divided by cols, as torch's
 * layer_norm) of row i of h, computed in f32 (two passes over the row, no
 * E[h^2] - mean^2 cancellation).  h is formed in f32; when s != NULL it is
 * also written out, rounded to dtype, into s (the residual stream of a
 * pre-LN block).  gamma, beta: cols elements of dtype, or NULL for 1 and 0.
 * eps: finite and >= 0, else INVALID_VALUE.  rows >= 0; cols >= 1.
 * In place: y may be x or r, and s may be x or r (the same pointer with the
 * same ld); y and s must not overlap each other or another input; the
 * inputs may overlap one another.  A row holding NaN or Inf gives NaN in y
 * (as torch).
 * Storage: none.  Async: yes.  Capture: yes (one kernel). */
GKO_API gko_status_t gko_layernorm(gko_handle_t handle, gko_dtype_t dtype, int64_t rows,
                                   int64_t cols, const void *x, int64_t ldx, const void *r,
                                   int64_t ldr, const void *gamma, const void *beta, float eps,
                                   void *y, int64_t ldy, void *s, int64_t lds,
                                   gko_stream_t stream);

/* Softmax over the last dimension, scaled and masked, as attention uses it:
 *   z[i][j] = scale * x[i][j] + mask[i / group][j]      (mask == NULL: + 0)
 *   y[i][j] = exp(z[i][j] - max_i) / sum_j' exp(z[i][j'] - max_i)
 * over the row's kept columns: j < lengths[i / group] (lengths == NULL:
 * every column; an entry below 0 counts as 0, above cols as cols) whose z
 * is not -Inf.  Columns not kept get 0.  A row with no kept column (a
 * fully masked row) gives zeros, not NaN; a row whose kept z holds NaN or
 * +Inf gives NaN (as torch).  max_i is subtracted first, so large scores
 * never overflow.
 * mask: f32 additive mask (0 keeps, -Inf removes), of rows / group rounded
 * up rows with leading dimension ldmask >= cols; lengths: int32 key-padding
 * lengths, one per group of rows.  group >= 1 whenever mask or lengths is
 * given: for attention scores of B x H x Sq rows, group = H * Sq maps a
 * [B, Sk] mask or B lengths onto every head and query.
 * scale: finite, else INVALID_VALUE.  rows >= 0; cols >= 1.
 * In place: y may be x (with ldy == ldx); y must not overlap mask or
 * lengths otherwise (the inputs may overlap one another).
 * Storage: none.  Async: yes.  Capture: yes (one kernel). */
GKO_API gko_status_t gko_softmax(gko_handle_t handle, gko_dtype_t dtype, int64_t rows,
                                 int64_t cols, float scale, const void *x, int64_t ldx,
                                 const float *mask, int64_t ldmask, const int32_t *lengths,
                                 int64_t group, void *y, int64_t ldy, gko_stream_t stream);

/* Scaled dot-product attention of an encoder (Vaswani et al., "Attention Is
 * All You Need", 2017), fused in the manner of FlashAttention (Dao et al.,
 * 2022): the seq_q x seq_k score matrix is never written to memory; each
 * block of queries keeps a running maximum and sum (online softmax, f32)
 * while it streams the keys and values.  For every batch b and head h:
 *   O_bh = softmax(scale * Q_bh * K_bh^T, keys j >= lengths[b] removed) V_bh
 * Layout ("BSHD", what one projection GEMM of x gives): element e of head h
 * of token s of batch b is at
 *   q[(b * seq_q + s) * ldq + h * head_dim + e]   (ldq >= heads * head_dim)
 * and likewise k and v with seq_k, ldk, ldv, and o with seq_q, ldo: q, k, v
 * may be column slices of one fused QKV matrix (ld = 3 * heads * head_dim).
 * lengths: int32 key-padding lengths, batch entries (NULL: seq_k each; below
 * 0 counts as 0, above seq_k as seq_k); a batch with no key gives zero rows
 * of o.  Removed keys are never read: their rows of k and v may hold
 * anything, NaN included.  scale: finite (usually 1 / sqrt(head_dim)), else INVALID_VALUE.
 * Sizes: batch, heads, seq_q, seq_k >= 0; 1 <= head_dim <= 256 (larger is
 * NOT_SUPPORTED).  o must not overlap q, k or v.
 * Algorithm: f16 and bf16 with head_dim a multiple of 8 up to 128 and
 * 16-byte aligned rows (pointers, and ld times the element size) run on
 * tensor cores on sm_80 and newer (mma.sync, f32 accumulation, P rounded to
 * dtype before the P * V product as FlashAttention does); every other case
 * runs a CUDA-core kernel with f32 products.  Results are deterministic.
 * Storage: none.  Async: yes.  Capture: yes (one kernel). */
GKO_API gko_status_t gko_attention(gko_handle_t handle, gko_dtype_t dtype, int64_t batch,
                                   int64_t heads, int64_t seq_q, int64_t seq_k,
                                   int64_t head_dim, float scale, const void *q, int64_t ldq,
                                   const void *k, int64_t ldk, const void *v, int64_t ldv,
                                   const int32_t *lengths, void *o, int64_t ldo,
                                   gko_stream_t stream);

/* Row gather (torch's F.embedding): y[i][:] = table[ids[i]][:] for i in
 * [0, n), dim elements per row.  table: num_rows x dim with leading
 * dimension ldt >= dim; ids: n indices of index_type (int32 or int64); y:
 * n x dim with ldy >= dim, not overlapping table or ids.  An index outside
 * [0, num_rows) cannot be checked without a synchronization: its row of y
 * is filled with NaN (and nothing outside y is read or written).
 * Storage: none.  Async: yes.  Capture: yes (one kernel). */
GKO_API gko_status_t gko_embedding(gko_handle_t handle, gko_dtype_t dtype, int64_t num_rows,
                                   int64_t dim, const void *table, int64_t ldt,
                                   gko_index_t index_type, const void *ids, int64_t n, void *y,
                                   int64_t ldy, gko_stream_t stream);

/* Masked mean pooling over a sequence (sentence-transformers' "mean"
 * pooling), optionally L2-normalised:
 *   m[b][:] = (1 / L_b) * sum_{s < L_b} x[b * seq + s][:]
 *   y[b][:] = normalize ? m[b][:] / max(||m[b]||_2, 1e-12) : m[b][:]
 * (torch's F.normalize eps) for b in [0, batch), with L_b = lengths[b]
 * (NULL: seq; clamped to [0, seq]); a sequence with L_b = 0 gives a zero
 * row.  x: batch * seq rows of dim elements, leading dimension ldx >= dim;
 * y: batch rows, ldy >= dim, not overlapping x.  Sums in f32.
 * Storage: none.  Async: yes.  Capture: yes (one kernel). */
GKO_API gko_status_t gko_mean_pool(gko_handle_t handle, gko_dtype_t dtype, int64_t batch,
                                   int64_t seq, int64_t dim, const void *x, int64_t ldx,
                                   const int32_t *lengths, int normalize, void *y, int64_t ldy,
                                   gko_stream_t stream);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* GKO_H */
