/* softmax.c -- argument checks and dispatch of gko_softmax
 * (kernels/softmax.cu). */
#include <math.h>
#include <stdint.h>

#include "core.h"
#include "rows.h"
#include "../kernels/softmax.h"

GKO_API gko_status_t gko_softmax(gko_handle_t handle, gko_dtype_t dtype, int64_t rows,
                                 int64_t cols, float scale, const void *x, int64_t ldx,
                                 const float *mask, int64_t ldmask, const int32_t *lengths,
                                 int64_t group, void *y, int64_t ldy, gko_stream_t stream) {
  gk_clear_error();
  if (!handle) return gk_fail(GKO_STATUS_INVALID_VALUE, "handle is NULL");
  gko_status_t s;
  size_t es;
  if ((s = gk_check_dtype((int)dtype, "dtype", &es))) return s;
  if (rows < 0) return gk_fail(GKO_STATUS_INVALID_VALUE, "rows = %lld is negative", (long long)rows);
  if (cols < 1)
    return gk_fail(GKO_STATUS_INVALID_VALUE, "cols = %lld: a row needs cols >= 1 elements",
                   (long long)cols);
  if (!isfinite(scale))
    return gk_fail(GKO_STATUS_INVALID_VALUE, "scale = %g is not finite", (double)scale);
  /* rows == 0: nothing is read or written, NULL pointers allowed */
  const int live = rows > 0;
  if (live && (s = gk_ptr_check(x, "x", es))) return s;
  if ((s = gk_ld_check(rows, cols, ldx, "ldx", "cols", es))) return s;
  if (live && (s = gk_check_elem_align(mask, "mask", sizeof(float)))) return s;
  if (mask && ldmask < cols)
    return gk_fail(GKO_STATUS_INVALID_VALUE, "ldmask = %lld is below cols = %lld",
                   (long long)ldmask, (long long)cols);
  if (live && (s = gk_check_elem_align(lengths, "lengths", sizeof(int32_t)))) return s;
  if ((mask || lengths) && group < 1)
    return gk_fail(GKO_STATUS_INVALID_VALUE,
                   "group = %lld: rows per mask row and length must be >= 1 when %s is given",
                   (long long)group, mask ? "mask" : "lengths");
  /* the mask's rows and the lengths: one per group of rows */
  const int64_t ngroups = (mask || lengths) && rows > 0 ? (rows - 1) / group + 1 : 0;
  if (mask && (s = gk_ld_check(ngroups, cols, ldmask, "ldmask", "cols", sizeof(float)))) return s;
  if (live && (s = gk_ptr_check(y, "y", es))) return s;
  if ((s = gk_ld_check(rows, cols, ldy, "ldy", "cols", es))) return s;
  if (!live) return gk_live_check(handle, GK_LIVE_HANDLE, "handle");

  /* y may be x exactly (ldy == ldx); nothing else may share memory with y */
  const gk_mat ym = gk_mat_of(y, rows, cols, ldy, es);
  if ((s = gk_mat_alias_check(ym, "y", gk_mat_of(x, rows, cols, ldx, es), "x", 1, "ldy",
                              "ldx")) ||
      (s = gk_mat_alias_check(ym, "y", gk_mat_of(mask, ngroups, cols, ldmask, sizeof(float)),
                              "mask", 0, NULL, NULL)) ||
      (s = gk_mat_alias_check(ym, "y", gk_mat_of(lengths, 1, ngroups, ngroups, sizeof(int32_t)),
                              "lengths", 0, NULL, NULL)))
    return s;
  const void *ptrs[4] = {x, mask, lengths, y};
  const char *names[4] = {"x", "mask", "lengths", "y"};
  if ((s = gk_check_call(handle, stream, 4, ptrs, names))) return s;
  return gk_softmax_launch((int)dtype, rows, cols, scale, x, ldx, mask, ldmask, lengths,
                           (mask || lengths) ? group : 1, y, ldy, stream);
}
