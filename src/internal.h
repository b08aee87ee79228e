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

/* ---- device checks (src/handle.c) -------------------------------------- */

struct gko_handle_s {
  int device;
  int cc;                 /* 10*major + minor */
  int sm_count;
  int code_path;          /* gko_code_path_t */
  int pageable_access;    /* device can read pageable host memory */
  gk_occupancy gelu_occ[GK_GELU_NKERNELS];
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
