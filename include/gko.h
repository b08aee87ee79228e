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
 *     pointer of another device, returns GKO_STATUS_DEVICE_MISMATCH.
 *   - When a call fails, gko_last_error_detail() returns a sentence (for the
 *     calling thread) that names the offending argument and the reason.
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
  GKO_STATUS_DEVICE_MISMATCH = 11
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
/* Element types of tensors.  f16 is IEEE binary16, bf16 is bfloat16. */
typedef enum gko_dtype_e {
  GKO_DTYPE_F32 = 0,
  GKO_DTYPE_F16 = 1,
  GKO_DTYPE_BF16 = 2
} gko_dtype_t;

/* Size in bytes of one element of dtype, or 0 for an unknown dtype.
 * Storage: none.  Async: no.  Capture: yes. */
GKO_API size_t gko_dtype_size(gko_dtype_t dtype);

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
 *          primary context of the device if it does not exist yet.
 * Async: no.  Capture: no (may initialise the device). */
GKO_API gko_status_t gko_create(gko_handle_t *handle);
/* Destroys a handle; NULL is a no-op (returns success).  The caller must make
 * sure no work enqueued through the handle's plans is still needed.
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
 * list and PTX); and for `device` (or all devices when device < 0) its name,
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
 * memory the GPU cannot access), GKO_STATUS_DEVICE_MISMATCH,
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

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* GKO_H */
