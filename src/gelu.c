/* gelu.c -- argument checks and dispatch for GELU forward and backward. */
#include <stdint.h>

#include "core.h"

static gko_status_t gk_gelu_check_array(const void *p, const char *name, size_t esize) {
  if (!p) return gk_fail(GKO_STATUS_INVALID_VALUE, "%s is NULL", name);
  return gk_check_elem_align(p, name, esize);
}

static const gk_rule kApprox = {"approx", GKO_GELU_ERF, GKO_GELU_TANH, 0,
                                "is not GKO_GELU_ERF (0) or GKO_GELU_TANH (1)", 0, 0};

static gko_status_t gk_gelu(int dir, gko_handle_t h, gko_gelu_approx_t approx,
                            gko_dtype_t dtype, int64_t n, const void *dy,
                            const void *x, void *out, gko_stream_t stream) {
  const char *out_name = dir ? "dx" : "y";
  if (!h) return gk_fail(GKO_STATUS_INVALID_VALUE, "handle is NULL");
  gko_status_t s;
  size_t es;
  if ((s = gk_rule_check(&kApprox, (int)approx)) ||
      (s = gk_check_dtype((int)dtype, "dtype", &es)))
    return s;
  if (n < 0)
    return gk_fail(GKO_STATUS_INVALID_VALUE, "n = %lld is negative", (long long)n);
  if ((uint64_t)n > (uint64_t)INT64_MAX / es)
    return gk_fail(GKO_STATUS_INVALID_VALUE,
                   "n = %lld elements overflow a byte count", (long long)n);
  if (n == 0) return gk_live_check(h, GK_LIVE_HANDLE, "handle");

  size_t bytes = (size_t)n * es;
  if ((s = gk_gelu_check_array(x, "x", es))) return s;
  if (dir && (s = gk_gelu_check_array(dy, "dy", es))) return s;
  if ((s = gk_gelu_check_array(out, out_name, es))) return s;
  if (gk_partial_overlap(x, bytes, out, bytes))
    return gk_fail(GKO_STATUS_INVALID_VALUE,
                   "x and %s overlap without being the same array (only exact "
                   "in-place operation is allowed)",
                   out_name);
  if (dir && gk_partial_overlap(dy, bytes, out, bytes))
    return gk_fail(GKO_STATUS_INVALID_VALUE,
                   "dy and dx overlap without being the same array (only exact "
                   "in-place operation is allowed)");
  const void *ptrs[3] = {x, out, dir ? dy : NULL};
  const char *names[3] = {"x", out_name, "dy"};
  if ((s = gk_check_call(h, stream, 3, ptrs, names))) return s;
  return gk_gelu_launch(h->gelu_occ, dir, (int)approx, (int)dtype, n, x, dy,
                        out, stream);
}

GKO_API gko_status_t gko_gelu_forward(gko_handle_t handle, gko_gelu_approx_t approx,
                                      gko_dtype_t dtype, int64_t n, const void *x,
                                      void *y, gko_stream_t stream) {
  gk_clear_error();
  return gk_gelu(0, handle, approx, dtype, n, NULL, x, y, stream);
}

GKO_API gko_status_t gko_gelu_backward(gko_handle_t handle, gko_gelu_approx_t approx,
                                       gko_dtype_t dtype, int64_t n, const void *dy,
                                       const void *x, void *dx, gko_stream_t stream) {
  gk_clear_error();
  return gk_gelu(1, handle, approx, dtype, n, dy, x, dx, stream);
}
