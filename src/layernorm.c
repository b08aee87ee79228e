/* layernorm.c -- argument checks and dispatch of gko_layernorm
 * (kernels/norm.cu). */
#include <math.h>
#include <stdint.h>

#include "core.h"
#include "rows.h"
#include "../kernels/norm.h"

GKO_API gko_status_t gko_layernorm(gko_handle_t handle, gko_dtype_t dtype, int64_t rows,
                                   int64_t cols, const void *x, int64_t ldx, const void *r,
                                   int64_t ldr, const void *gamma, const void *beta, float eps,
                                   void *y, int64_t ldy, void *s, int64_t lds,
                                   gko_stream_t stream) {
  gk_clear_error();
  if (!handle) return gk_fail(GKO_STATUS_INVALID_VALUE, "handle is NULL");
  gko_status_t st;
  size_t es;
  if ((st = gk_check_dtype((int)dtype, "dtype", &es))) return st;
  if (rows < 0) return gk_fail(GKO_STATUS_INVALID_VALUE, "rows = %lld is negative", (long long)rows);
  if (cols < 1)
    return gk_fail(GKO_STATUS_INVALID_VALUE, "cols = %lld: a row needs cols >= 1 elements",
                   (long long)cols);
  /* rows == 0: nothing is read or written, NULL pointers allowed */
  const int live = rows > 0;
  if (live && (st = gk_ptr_check(x, "x", es))) return st;
  if ((st = gk_ld_check(rows, cols, ldx, "ldx", "cols", es))) return st;
  if (live && (st = gk_check_elem_align(r, "r", es))) return st;
  if (r && (st = gk_ld_check(rows, cols, ldr, "ldr", "cols", es))) return st;
  if (live && ((st = gk_check_elem_align(gamma, "gamma", es)) ||
               (st = gk_check_elem_align(beta, "beta", es))))
    return st;
  if (!isfinite(eps) || eps < 0.0f)
    return gk_fail(GKO_STATUS_INVALID_VALUE, "eps = %g is not finite and >= 0", (double)eps);
  if (live && (st = gk_ptr_check(y, "y", es))) return st;
  if ((st = gk_ld_check(rows, cols, ldy, "ldy", "cols", es))) return st;
  if (live && (st = gk_check_elem_align(s, "s", es))) return st;
  if (s && (st = gk_ld_check(rows, cols, lds, "lds", "cols", es))) return st;
  if (!live) return gk_live_check(handle, GK_LIVE_HANDLE, "handle");

  /* y and s may each be x or r exactly; nothing else may share memory with
   * an output (the inputs may overlap one another: they are only read) */
  const gk_mat xm = gk_mat_of(x, rows, cols, ldx, es), rm = gk_mat_of(r, rows, cols, ldr, es);
  const gk_mat ym = gk_mat_of(y, rows, cols, ldy, es), sm = gk_mat_of(s, rows, cols, lds, es);
  const gk_mat gm = gk_mat_of(gamma, 1, cols, cols, es), bm = gk_mat_of(beta, 1, cols, cols, es);
  if ((st = gk_mat_alias_check(ym, "y", xm, "x", 1, "ldy", "ldx")) ||
      (st = gk_mat_alias_check(ym, "y", rm, "r", 1, "ldy", "ldr")) ||
      (st = gk_mat_alias_check(ym, "y", gm, "gamma", 0, NULL, NULL)) ||
      (st = gk_mat_alias_check(ym, "y", bm, "beta", 0, NULL, NULL)) ||
      (st = gk_mat_alias_check(sm, "s", xm, "x", 1, "lds", "ldx")) ||
      (st = gk_mat_alias_check(sm, "s", rm, "r", 1, "lds", "ldr")) ||
      (st = gk_mat_alias_check(sm, "s", gm, "gamma", 0, NULL, NULL)) ||
      (st = gk_mat_alias_check(sm, "s", bm, "beta", 0, NULL, NULL)) ||
      (st = gk_mat_alias_check(ym, "y", sm, "s", 0, NULL, NULL)))
    return st;
  const void *ptrs[6] = {x, r, gamma, beta, y, s};
  const char *names[6] = {"x", "r", "gamma", "beta", "y", "s"};
  if ((st = gk_check_call(handle, stream, 6, ptrs, names))) return st;
  return gk_layernorm_launch((int)dtype, rows, cols, x, ldx, r, ldr, gamma, beta, eps, y, ldy,
                             s, lds, stream);
}
