/* model_util.c -- see model_util.h. */
#include "model_util.h"

#include <cuda_runtime_api.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "half.h"

int mu_fail(char *err, size_t n, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, n, fmt, ap);
  va_end(ap);
  return -1;
}

int mu_gko_fail(char *err, size_t n, const char *what, gko_status_t s) {
  return mu_fail(err, n, "%s: %s: %s", what, gko_status_name(s), gko_last_error_detail());
}

int mu_dalloc(size_t *total, void **p, size_t bytes, char *err, size_t n) {
  const cudaError_t e = cudaMalloc(p, bytes ? bytes : 1);
  if (e != cudaSuccess) {
    *p = NULL;
    return mu_fail(err, n, "cudaMalloc(%zu bytes): %s", bytes, cudaGetErrorString(e));
  }
  *total += bytes;
  return 0;
}

int mu_upload(size_t *total, void **dst, const float *src, size_t len, gko_dtype_t dt, char *err,
              size_t n) {
  if (dt != GKO_DTYPE_F32 && dt != GKO_DTYPE_F16 && dt != GKO_DTYPE_BF16)
    return mu_fail(err, n, "dtype %d: parameters are uploaded as F32, F16 or BF16", (int)dt);
  const size_t es = gko_dtype_size(dt);
  unsigned char *h = malloc(len * es + 1);
  if (!h) return mu_fail(err, n, "out of host memory");
  for (size_t i = 0; i < len; i++) {
    if (dt == GKO_DTYPE_F32)
      memcpy(h + 4 * i, &src[i], 4);
    else {
      const uint16_t v = dt == GKO_DTYPE_F16 ? float_to_half(src[i]) : float_to_bf16(src[i]);
      memcpy(h + 2 * i, &v, 2);
    }
  }
  int rc = mu_dalloc(total, dst, len * es, err, n);
  const cudaError_t e = rc ? cudaSuccess : cudaMemcpy(*dst, h, len * es, cudaMemcpyHostToDevice);
  free(h);
  if (e != cudaSuccess) rc = mu_fail(err, n, "cudaMemcpy: %s", cudaGetErrorString(e));
  return rc;
}
