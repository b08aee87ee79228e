/* quantize.c -- argument checks and dispatch of gko_quantize and
 * gko_dequantize (kernels/quantize.cu). */
#include <stdint.h>

#include <cuda_runtime_api.h>

#include "core.h"
#include "../kernels/quantize.h"

static const gk_rule kMode = {"mode", GKO_SCALE_TENSOR, GKO_SCALE_ROWWISE, 0,
                              "is not GKO_SCALE_TENSOR (0) or GKO_SCALE_ROWWISE (1)", 0, 0};

/* The checks both directions share, in the header's order; *n receives
 * rows * cols.  wide: the 16/32-bit side's dtype, narrow: the 8-bit side's. */
static gko_status_t gk_q_check(gko_handle_t h, int dir, int x_dtype, const void *x, int y_dtype,
                               const void *y, int64_t rows, int64_t cols, int mode,
                               const float *scale, const float *amax, int64_t *n) {
  const char *fn = dir ? "gko_dequantize" : "gko_quantize";
  if (!h) return gk_fail(GKO_STATUS_INVALID_VALUE, "handle is NULL");
  gko_status_t s;
  if ((s = gk_rule_check(&kMode, mode))) return s;
  const size_t xs = gko_dtype_size((gko_dtype_t)x_dtype), ys = gko_dtype_size((gko_dtype_t)y_dtype);
  if (xs == 0)
    return gk_fail(GKO_STATUS_INVALID_VALUE, "x_dtype = %d is not a gko_dtype_t", x_dtype);
  if (ys == 0)
    return gk_fail(GKO_STATUS_INVALID_VALUE, "y_dtype = %d is not a gko_dtype_t", y_dtype);
  const int wide = dir ? y_dtype : x_dtype, narrow = dir ? x_dtype : y_dtype;
  if (gk_is_fp8(wide) || !gk_is_fp8(narrow))
    return gk_fail(GKO_STATUS_NOT_SUPPORTED, "%s converts %s, but x_dtype = %s and y_dtype = %s",
                   fn,
                   dir ? "an 8-bit x (F8E4M3, F8E5M2) to y in F32, F16 or BF16"
                       : "x in F32, F16 or BF16 to an 8-bit y (F8E4M3, F8E5M2)",
                   gk_dtype_name(x_dtype), gk_dtype_name(y_dtype));
  if (rows < 0 || cols < 0)
    return gk_fail(GKO_STATUS_INVALID_VALUE, "rows = %lld, cols = %lld: sizes are >= 0",
                   (long long)rows, (long long)cols);
  if (cols > 0 && rows > INT64_MAX / cols / (int64_t)(xs > ys ? xs : ys))
    return gk_fail(GKO_STATUS_INVALID_VALUE,
                   "rows = %lld x cols = %lld elements overflow a byte count", (long long)rows,
                   (long long)cols);
  *n = rows * cols;
  if ((s = gk_check_elem_align(scale, "scale", sizeof(float))) ||
      (s = gk_check_elem_align(amax, "amax", sizeof(float))))
    return s;
  const size_t sbytes = (mode == GKO_SCALE_ROWWISE ? (size_t)rows : 1) * sizeof(float);
  if (amax && scale && gk_overlap(amax, sizeof(float), scale, sbytes))
    return gk_fail(GKO_STATUS_INVALID_VALUE, "amax overlaps scale (amax is zeroed first)");
  if (*n == 0) return GKO_STATUS_SUCCESS;
  if (mode == GKO_SCALE_ROWWISE && !scale)
    return gk_fail(GKO_STATUS_INVALID_VALUE,
                   "scale is NULL but mode = GKO_SCALE_ROWWISE needs rows = %lld factors",
                   (long long)rows);
  if (!x) return gk_fail(GKO_STATUS_INVALID_VALUE, "x is NULL");
  if (!y) return gk_fail(GKO_STATUS_INVALID_VALUE, "y is NULL");
  if ((s = gk_check_elem_align(x, "x", xs)) || (s = gk_check_elem_align(y, "y", ys))) return s;
  const size_t xb = (size_t)*n * xs, yb = (size_t)*n * ys;
  if (gk_overlap(x, xb, y, yb))
    return gk_fail(GKO_STATUS_INVALID_VALUE, "x and y overlap (no in-place conversion)");
  if (gk_overlap(amax, sizeof(float), x, xb) || gk_overlap(amax, sizeof(float), y, yb))
    return gk_fail(GKO_STATUS_INVALID_VALUE, "amax overlaps x or y");
  if (scale && (gk_overlap(scale, sbytes, y, yb) || gk_overlap(scale, sbytes, x, xb)))
    return gk_fail(GKO_STATUS_INVALID_VALUE, "scale overlaps x or y");
  return GKO_STATUS_SUCCESS;
}

/* Whole vectors where both pointers are 16-byte aligned and a vector (4
 * or 8 elements) never straddles two rows' factors. */
static int gk_q_vec(const void *x, const void *y, int mode, int64_t cols) {
  return ((uintptr_t)x % 16 == 0) && ((uintptr_t)y % 16 == 0) &&
         (mode != GKO_SCALE_ROWWISE || cols % 8 == 0);
}

GKO_API gko_status_t gko_quantize(gko_handle_t handle, gko_dtype_t x_dtype, const void *x,
                                  gko_dtype_t y_dtype, void *y, int64_t rows, int64_t cols,
                                  gko_scale_mode_t mode, const float *scale, float *amax,
                                  gko_stream_t stream) {
  gk_clear_error();
  int64_t n = 0;
  gko_status_t s = gk_q_check(handle, 0, (int)x_dtype, x, (int)y_dtype, y, rows, cols, (int)mode,
                              scale, amax, &n);
  if (s) return s;
  if (n == 0 && !amax) return gk_live_check(handle, GK_LIVE_HANDLE, "handle");
  const void *ptrs[4] = {n ? x : NULL, n ? y : NULL, n ? scale : NULL, amax};
  const char *names[4] = {"x", "y", "scale", "amax"};
  if ((s = gk_check_call(handle, stream, 4, ptrs, names))) return s;
  if (amax) {
    cudaError_t e = cudaMemsetAsync(amax, 0, sizeof(float), (cudaStream_t)stream);
    if (e != cudaSuccess) return gk_cuda_fail(e, "cudaMemsetAsync (amax)");
  }
  if (n == 0) return GKO_STATUS_SUCCESS;
  return gk_quantize_launch((int)x_dtype, (int)y_dtype, n, cols, x, y, scale,
                            mode == GKO_SCALE_ROWWISE, amax, gk_q_vec(x, y, (int)mode, cols),
                            handle->sm_count, stream);
}

GKO_API gko_status_t gko_dequantize(gko_handle_t handle, gko_dtype_t x_dtype, const void *x,
                                    gko_dtype_t y_dtype, void *y, int64_t rows, int64_t cols,
                                    gko_scale_mode_t mode, const float *scale,
                                    gko_stream_t stream) {
  gk_clear_error();
  int64_t n = 0;
  gko_status_t s = gk_q_check(handle, 1, (int)x_dtype, x, (int)y_dtype, y, rows, cols, (int)mode,
                              scale, NULL, &n);
  if (s) return s;
  if (n == 0) return gk_live_check(handle, GK_LIVE_HANDLE, "handle");
  const void *ptrs[3] = {x, y, scale};
  const char *names[3] = {"x", "y", "scale"};
  if ((s = gk_check_call(handle, stream, 3, ptrs, names))) return s;
  return gk_dequantize_launch((int)x_dtype, (int)y_dtype, n, cols, x, y, scale,
                              mode == GKO_SCALE_ROWWISE, gk_q_vec(x, y, (int)mode, cols),
                              handle->sm_count, stream);
}
