/* pool.c -- 2-D pooling forward: the descriptor and its rules, the output
 * shape (torch's, floor or ceil mode), the checks, and the launch of
 * kernels/pool.cu.  No plan: the checks are host arithmetic, cheap enough
 * for every call. */
#include <stdint.h>
#include <stdlib.h>

#include "core.h"
#include "../kernels/pool.h"

enum { GK_POOL_NATTR = 16 };

struct gko_pool_desc_s {
  int64_t v[GK_POOL_NATTR];
};

#define GK_POSITIVE(a) {#a, 1, INT64_MAX, 0, "must be at least 1", 1}
#define GK_NONNEG(a) {#a, 0, INT64_MAX, 0, "is negative", 0}

/* Each attribute's valid values and default, in gko_pool_attr_t order. */
static const gk_rule kRule[GK_POOL_NATTR] = {
    [GKO_POOL_ATTR_MODE] = {"GKO_POOL_ATTR_MODE", GKO_POOL_MAX, GKO_POOL_AVG_EXCLUDE_PAD, 0,
                            "is not a gko_pool_mode_t", 0},
    [GKO_POOL_ATTR_DTYPE] = {"GKO_POOL_ATTR_DTYPE", GKO_DTYPE_F32, GKO_DTYPE_BF16, 0,
                             "is not a gko_dtype_t", 0, 1},
    [GKO_POOL_ATTR_LAYOUT] = {"GKO_POOL_ATTR_LAYOUT", GKO_CONV_LAYOUT_NCHW,
                              GKO_CONV_LAYOUT_NHWC, 0,
                              "is not GKO_CONV_LAYOUT_NCHW (0) or GKO_CONV_LAYOUT_NHWC (1)", 0},
    [GKO_POOL_ATTR_N] = GK_NONNEG(GKO_POOL_ATTR_N),
    [GKO_POOL_ATTR_C] = GK_POSITIVE(GKO_POOL_ATTR_C),
    [GKO_POOL_ATTR_H] = GK_POSITIVE(GKO_POOL_ATTR_H),
    [GKO_POOL_ATTR_W] = GK_POSITIVE(GKO_POOL_ATTR_W),
    [GKO_POOL_ATTR_R] = GK_POSITIVE(GKO_POOL_ATTR_R),
    [GKO_POOL_ATTR_S] = GK_POSITIVE(GKO_POOL_ATTR_S),
    [GKO_POOL_ATTR_STRIDE_H] = GK_POSITIVE(GKO_POOL_ATTR_STRIDE_H),
    [GKO_POOL_ATTR_STRIDE_W] = GK_POSITIVE(GKO_POOL_ATTR_STRIDE_W),
    [GKO_POOL_ATTR_PAD_H] = GK_NONNEG(GKO_POOL_ATTR_PAD_H),
    [GKO_POOL_ATTR_PAD_W] = GK_NONNEG(GKO_POOL_ATTR_PAD_W),
    [GKO_POOL_ATTR_DILATION_H] = GK_POSITIVE(GKO_POOL_ATTR_DILATION_H),
    [GKO_POOL_ATTR_DILATION_W] = GK_POSITIVE(GKO_POOL_ATTR_DILATION_W),
    [GKO_POOL_ATTR_CEIL_MODE] = {"GKO_POOL_ATTR_CEIL_MODE", 0, 1, 0, "is not 0 or 1", 0},
};

#undef GK_POSITIVE
#undef GK_NONNEG

static const char kAttrType[] = "gko_pool_attr_t";

GKO_API gko_status_t gko_pool_desc_create(gko_pool_desc_t *desc, gko_pool_mode_t mode,
                                          gko_dtype_t dtype, gko_conv_layout_t layout,
                                          int64_t n, int64_t c, int64_t h, int64_t w,
                                          int64_t r, int64_t s) {
  gk_clear_error();
  if (!desc) return gk_fail(GKO_STATUS_INVALID_VALUE, "desc is NULL");
  /* the arguments are attributes GKO_POOL_ATTR_MODE (0) to _S (8), in order */
  const int64_t given[] = {mode, dtype, layout, n, c, h, w, r, s};
  _Static_assert(GKO_POOL_ATTR_MODE == 0 && GKO_POOL_ATTR_S == 8,
                 "gko_pool_desc_create's arguments in attribute order");
  _Static_assert(sizeof(struct gko_pool_desc_s) == GK_POOL_NATTR * sizeof(int64_t),
                 "the descriptor is its attribute values");
  int64_t *v = NULL;
  gko_status_t st = gk_attr_new(&v, kRule, GK_POOL_NATTR, kAttrType, given,
                                (int)(sizeof given / sizeof given[0]));
  if (!st && (st = gk_live_add(v, GK_LIVE_POOL_DESC))) free(v);
  if (!st) *desc = (struct gko_pool_desc_s *)v;
  return st;
}

GKO_API gko_status_t gko_pool_desc_destroy(gko_pool_desc_t desc) {
  return gk_live_destroy(desc, GK_LIVE_POOL_DESC, "desc", free);
}

GKO_API gko_status_t gko_pool_desc_set(gko_pool_desc_t desc, gko_pool_attr_t attr,
                                       int64_t value) {
  gk_clear_error();
  gko_status_t s = gk_live_check(desc, GK_LIVE_POOL_DESC, "desc");
  if (s) return s;
  return gk_attr_store(desc->v, kRule, GK_POOL_NATTR, kAttrType, (int)attr, value);
}

GKO_API gko_status_t gko_pool_desc_get(gko_pool_desc_t desc, gko_pool_attr_t attr,
                                       int64_t *value) {
  gko_status_t s = gk_getter(desc, GK_LIVE_POOL_DESC, "desc", value, "value");
  if (!s) s = gk_attr_in_range((int)attr, GK_POOL_NATTR, kAttrType);
  if (!s) *value = desc->v[attr];
  return s;
}

/* One axis of torch's rule (pooling_output_shape and pool2d_shape_check):
 * padding at most half the window and half the dilated window, the output
 * size floor((in + 2 pad - eff [+ stride - 1 in ceil mode]) / stride) + 1,
 * in ceil mode less one when the last window would start past in + pad;
 * an output below 1 is refused. */
static gko_status_t gk_pool_axis(const char *axis, int64_t in, int64_t f, int64_t stride,
                                 int64_t pad, int64_t dil, int ceil_mode, int64_t *out) {
  int64_t eff, padded, num;
  if (__builtin_mul_overflow(dil, f - 1, &eff) || __builtin_add_overflow(eff, 1, &eff) ||
      __builtin_mul_overflow(pad, 2, &padded) || __builtin_add_overflow(padded, in, &padded) ||
      __builtin_sub_overflow(padded, eff, &num) ||
      (ceil_mode && __builtin_add_overflow(num, stride - 1, &num)))
    return gk_fail(GKO_STATUS_INVALID_VALUE,
                   "the %s window (dilation %lld x (%lld - 1) + 1) or padded input (%lld + 2 x "
                   "%lld) overflows int64",
                   axis, (long long)dil, (long long)f, (long long)in, (long long)pad);
  if (pad > f / 2 || pad > eff / 2)
    return gk_fail(GKO_STATUS_INVALID_VALUE,
                   "%s padding %lld is more than half the window (%lld, dilated %lld), as torch "
                   "refuses",
                   axis, (long long)pad, (long long)f, (long long)eff);
  /* floor division (num may be negative: the window larger than the input) */
  int64_t o = (num >= 0 ? num / stride : -((-num + stride - 1) / stride)) + 1;
  int64_t start;
  if (ceil_mode && o > 1 &&
      (__builtin_mul_overflow(o - 1, stride, &start) || start >= in + pad))
    o--;
  if (o < 1)
    return gk_fail(GKO_STATUS_INVALID_VALUE,
                   "the %s window (%lld) is larger than the padded input (%lld)", axis,
                   (long long)eff, (long long)padded);
  *out = o;
  return GKO_STATUS_SUCCESS;
}

/* The descriptor checked into the kernels' arguments (pointers unset). */
static gko_status_t gk_pool_resolve(const int64_t *v, gk_pool_args *a) {
#define GK_V(attr) v[GKO_POOL_ATTR_##attr]
  *a = (gk_pool_args){
      .mode = (int)GK_V(MODE), .dtype = (int)GK_V(DTYPE), .layout = (int)GK_V(LAYOUT),
      .n = GK_V(N), .c = GK_V(C), .h = GK_V(H), .w = GK_V(W), .r = GK_V(R), .s = GK_V(S),
      .sh = GK_V(STRIDE_H), .sw = GK_V(STRIDE_W), .ph = GK_V(PAD_H), .pw = GK_V(PAD_W),
      .dh = GK_V(DILATION_H), .dw = GK_V(DILATION_W),
  };
  const int ceil_mode = (int)GK_V(CEIL_MODE);
#undef GK_V
  if (a->mode != GKO_POOL_MAX && (a->dh != 1 || a->dw != 1))
    return gk_fail(GKO_STATUS_INVALID_VALUE,
                   "average pooling has no dilation (DILATION_H/_W = %lld/%lld; as torch's "
                   "avg_pool2d)",
                   (long long)a->dh, (long long)a->dw);
  gko_status_t s;
  if ((s = gk_pool_axis("height", a->h, a->r, a->sh, a->ph, a->dh, ceil_mode, &a->oh)) ||
      (s = gk_pool_axis("width", a->w, a->s, a->sw, a->pw, a->dw, ceil_mode, &a->ow)))
    return s;
  const int64_t es = (int64_t)gko_dtype_size((gko_dtype_t)a->dtype), n1 = a->n > 0 ? a->n : 1;
  int64_t t;
  if (__builtin_mul_overflow(n1, a->c, &t) || __builtin_mul_overflow(t, a->h, &t) ||
      __builtin_mul_overflow(t, a->w, &t) || __builtin_mul_overflow(t, es, &t))
    return gk_fail(GKO_STATUS_INVALID_VALUE, "x (N x C x H x W) has more bytes than int64 can "
                   "count");
  /* OH <= H + 2 pad and OW likewise, both of which fit: y fits when x with
   * its padding does */
  if (__builtin_mul_overflow(n1, a->c, &t) || __builtin_mul_overflow(t, a->oh, &t) ||
      __builtin_mul_overflow(t, a->ow, &t) || __builtin_mul_overflow(t, es, &t))
    return gk_fail(GKO_STATUS_INVALID_VALUE, "y (N x C x OH x OW) has more bytes than int64 can "
                   "count");
  return GKO_STATUS_SUCCESS;
}

GKO_API gko_status_t gko_pool_output_shape(gko_pool_desc_t desc, int64_t *oh, int64_t *ow) {
  gko_status_t s = gk_getter(desc, GK_LIVE_POOL_DESC, "desc", oh, "oh");
  if (s) return s;
  if (!ow) return gk_fail(GKO_STATUS_INVALID_VALUE, "ow is NULL");
  gk_pool_args a;
  if ((s = gk_pool_resolve(desc->v, &a))) return s;
  *oh = a.oh;
  *ow = a.ow;
  return GKO_STATUS_SUCCESS;
}

GKO_API gko_status_t gko_pool_forward(gko_handle_t handle, gko_pool_desc_t desc, const void *x,
                                      void *y, gko_stream_t stream) {
  gk_clear_error();
  if (!handle) return gk_fail(GKO_STATUS_INVALID_VALUE, "handle is NULL");
  gko_status_t s = gk_live_check(desc, GK_LIVE_POOL_DESC, "desc");
  if (s) return s;
  gk_pool_args a;
  if ((s = gk_pool_resolve(desc->v, &a))) return s;
  if (a.n == 0) return gk_live_check(handle, GK_LIVE_HANDLE, "handle");
  const size_t es = gko_dtype_size((gko_dtype_t)a.dtype);
  const size_t xb = (size_t)(a.n * a.c * a.h * a.w) * es;
  const size_t yb = (size_t)(a.n * a.c * a.oh * a.ow) * es;
  if (!x) return gk_fail(GKO_STATUS_INVALID_VALUE, "x is NULL");
  if (!y) return gk_fail(GKO_STATUS_INVALID_VALUE, "y is NULL");
  if ((s = gk_check_elem_align(x, "x", es)) || (s = gk_check_elem_align(y, "y", es))) return s;
  if (gk_overlap(x, xb, y, yb))
    return gk_fail(GKO_STATUS_INVALID_VALUE, "y overlaps x (in-place pooling is not allowed)");
  const void *ptrs[2] = {x, y};
  const char *names[2] = {"x", "y"};
  if ((s = gk_check_call(handle, stream, 2, ptrs, names))) return s;
  a.x = x;
  a.y = y;
  a.stream = stream;
  if ((s = gk_pool_launch(&a))) return s;
  gk_clear_error();
  return GKO_STATUS_SUCCESS;
}
