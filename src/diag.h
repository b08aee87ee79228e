/* diag.h -- library facts (src/diag.c): what gko_create would report, and
 * the compiled architecture list.  Exposed for tests that simulate old
 * drivers and missing kernels. */
#ifndef GK_DIAG_H
#define GK_DIAG_H

#include <stddef.h>

#include "gko.h"

#ifdef __cplusplus
extern "C" {
#endif

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

#endif /* GK_DIAG_H */
