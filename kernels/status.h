/*
 * status.h -- how the kernels' host code reports failure: the calling
 * thread's detail message (src/status.c implements these).  Internal names
 * start with gk_; nothing here is exported.
 */
#ifndef GK_KERNELS_STATUS_H
#define GK_KERNELS_STATUS_H

#include "gko.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Sets the detail message (printf format) and returns status. */
gko_status_t gk_fail(gko_status_t status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* Maps a cudaError_t (passed as int so C++ and C agree) to a gko status and
 * sets the detail to "<what>: <cuda error name>: <cuda error string>". */
gko_status_t gk_cuda_fail(int cuda_error, const char *what);

#ifdef __cplusplus
}
#endif

#endif /* GK_KERNELS_STATUS_H */
