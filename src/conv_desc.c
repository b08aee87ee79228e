/* conv_desc.c -- the Conv2d descriptor: its attributes and their rules,
 * and the resolution into a checked problem (output shape, int64
 * overflow of every size and byte count). */
#include <stdint.h>
#include <stdlib.h>

#include "conv.h"

#define GK_NONNEG(a) {#a, 0, INT64_MAX, 0, "is negative", 0}
#define GK_POSITIVE(a) {#a, 1, INT64_MAX, 0, "must be at least 1", 1}
#define GK_DEFAULTED(a) {#a, -1, INT64_MAX, 0, "is below -1 (-1 selects the default)", -1}

/* Each attribute's valid values and default, in gko_conv_attr_t order. */
static const gk_rule kRule[GK_CONV_NATTR] = {
    [GKO_CONV_ATTR_DTYPE] = {"GKO_CONV_ATTR_DTYPE", GKO_DTYPE_F32, GKO_DTYPE_BF16, 0,
                             "is not a gko_dtype_t", 0, 1},
    [GKO_CONV_ATTR_LAYOUT] = {"GKO_CONV_ATTR_LAYOUT", GKO_CONV_LAYOUT_NCHW,
                              GKO_CONV_LAYOUT_NHWC, 0,
                              "is not GKO_CONV_LAYOUT_NCHW (0) or GKO_CONV_LAYOUT_NHWC (1)", 0},
    [GKO_CONV_ATTR_N] = GK_NONNEG(GKO_CONV_ATTR_N),
    [GKO_CONV_ATTR_C] = GK_POSITIVE(GKO_CONV_ATTR_C),
    [GKO_CONV_ATTR_H] = GK_NONNEG(GKO_CONV_ATTR_H),
    [GKO_CONV_ATTR_W] = GK_NONNEG(GKO_CONV_ATTR_W),
    [GKO_CONV_ATTR_K] = GK_POSITIVE(GKO_CONV_ATTR_K),
    [GKO_CONV_ATTR_R] = GK_POSITIVE(GKO_CONV_ATTR_R),
    [GKO_CONV_ATTR_S] = GK_POSITIVE(GKO_CONV_ATTR_S),
    [GKO_CONV_ATTR_STRIDE_H] = GK_POSITIVE(GKO_CONV_ATTR_STRIDE_H),
    [GKO_CONV_ATTR_STRIDE_W] = GK_POSITIVE(GKO_CONV_ATTR_STRIDE_W),
    [GKO_CONV_ATTR_PAD_H] = GK_NONNEG(GKO_CONV_ATTR_PAD_H),
    [GKO_CONV_ATTR_PAD_W] = GK_NONNEG(GKO_CONV_ATTR_PAD_W),
    [GKO_CONV_ATTR_DILATION_H] = GK_POSITIVE(GKO_CONV_ATTR_DILATION_H),
    [GKO_CONV_ATTR_DILATION_W] = GK_POSITIVE(GKO_CONV_ATTR_DILATION_W),
    [GKO_CONV_ATTR_GROUPS] = GK_POSITIVE(GKO_CONV_ATTR_GROUPS),
    [GKO_CONV_ATTR_EPILOGUE] = {"GKO_CONV_ATTR_EPILOGUE", GKO_EPILOGUE_NONE,
                                GKO_EPILOGUE_BIAS_GELU_TANH, 0, "is not a gko_epilogue_t", 0},
    [GKO_CONV_ATTR_COMPUTE] = {"GKO_CONV_ATTR_COMPUTE", GKO_GEMM_COMPUTE_DEFAULT,
                               GKO_GEMM_COMPUTE_F16_ACCUMULATE, 0, "is not a gko_gemm_compute_t",
                               0},
    [GKO_CONV_ATTR_MAX_WORKSPACE] = GK_DEFAULTED(GKO_CONV_ATTR_MAX_WORKSPACE),
    [GKO_CONV_ATTR_MAX_CHUNK] = GK_NONNEG(GKO_CONV_ATTR_MAX_CHUNK),
    [GKO_CONV_ATTR_ALIGNMENT] = {"GKO_CONV_ATTR_ALIGNMENT", 1, 256, 1,
                                 "is not a power of two between 1 and 256 (bytes)", 16},
    [GKO_CONV_ATTR_PAD_H_END] = GK_DEFAULTED(GKO_CONV_ATTR_PAD_H_END),
    [GKO_CONV_ATTR_PAD_W_END] = GK_DEFAULTED(GKO_CONV_ATTR_PAD_W_END),
    [GKO_CONV_ATTR_ALGO] = {"GKO_CONV_ATTR_ALGO", GKO_CONV_ALGO_AUTO, GKO_CONV_ALGO_IMPLICIT, 0,
                            "is not a gko_conv_algo_t", GKO_CONV_ALGO_AUTO},
};

#undef GK_NONNEG
#undef GK_POSITIVE
#undef GK_DEFAULTED

static const char kAttrType[] = "gko_conv_attr_t";

GKO_API gko_status_t gko_conv_desc_create(gko_conv_desc_t *desc, gko_dtype_t dtype,
                                          gko_conv_layout_t layout, int64_t n, int64_t c,
                                          int64_t h, int64_t w, int64_t k, int64_t r,
                                          int64_t s) {
  gk_clear_error();
  if (!desc) return gk_fail(GKO_STATUS_INVALID_VALUE, "desc is NULL");
  /* the arguments are attributes GKO_CONV_ATTR_DTYPE (0) to _S (8), in order */
  const int64_t given[] = {dtype, layout, n, c, h, w, k, r, s};
  _Static_assert(GKO_CONV_ATTR_DTYPE == 0 && GKO_CONV_ATTR_LAYOUT == 1 && GKO_CONV_ATTR_N == 2 &&
                     GKO_CONV_ATTR_C == 3 && GKO_CONV_ATTR_H == 4 && GKO_CONV_ATTR_W == 5 &&
                     GKO_CONV_ATTR_K == 6 && GKO_CONV_ATTR_R == 7 && GKO_CONV_ATTR_S == 8,
                 "gko_conv_desc_create's arguments in attribute order");
  _Static_assert(sizeof(struct gko_conv_desc_s) == GK_CONV_NATTR * sizeof(int64_t),
                 "the descriptor is its attribute values");
  int64_t *v = NULL;
  gko_status_t st = gk_attr_new(&v, kRule, GK_CONV_NATTR, kAttrType, given,
                                (int)(sizeof given / sizeof given[0]));
  if (!st && (st = gk_live_add(v, GK_LIVE_CONV_DESC))) free(v);
  if (!st) *desc = (struct gko_conv_desc_s *)v;
  return st;
}

GKO_API gko_status_t gko_conv_desc_destroy(gko_conv_desc_t desc) {
  return gk_live_destroy(desc, GK_LIVE_CONV_DESC, "desc", free);
}

GKO_API gko_status_t gko_conv_desc_set(gko_conv_desc_t desc, gko_conv_attr_t attr,
                                       int64_t value) {
  gk_clear_error();
  gko_status_t s = gk_live_check(desc, GK_LIVE_CONV_DESC, "desc");
  if (s) return s;
  return gk_attr_store(desc->v, kRule, GK_CONV_NATTR, kAttrType, (int)attr, value);
}

/* PAD_H_END and PAD_W_END of -1 are PAD_H and PAD_W. */
static int64_t gk_conv_resolved(const int64_t *v, int attr) {
  if (attr == GKO_CONV_ATTR_PAD_H_END && v[attr] == -1) return v[GKO_CONV_ATTR_PAD_H];
  if (attr == GKO_CONV_ATTR_PAD_W_END && v[attr] == -1) return v[GKO_CONV_ATTR_PAD_W];
  return v[attr];
}

GKO_API gko_status_t gko_conv_desc_get(gko_conv_desc_t desc, gko_conv_attr_t attr,
                                       int64_t *value) {
  gko_status_t s = gk_getter(desc, GK_LIVE_CONV_DESC, "desc", value, "value");
  if (!s) s = gk_attr_in_range((int)attr, GK_CONV_NATTR, kAttrType);
  if (!s) *value = gk_conv_resolved(desc->v, (int)attr);
  return s;
}

/* ---- resolution: shapes and overflow ------------------------------------------- */

/* One axis: the output size, or a failure naming the axis. */
static gko_status_t gk_conv_axis(const char *axis, int64_t n, int64_t in, int64_t pad,
                                 int64_t pad_end, int64_t dil, int64_t f, int64_t stride,
                                 int64_t *out) {
  int64_t padded, eff;
  if (__builtin_add_overflow(in, pad, &padded) || __builtin_add_overflow(padded, pad_end, &padded))
    return gk_fail(GKO_STATUS_INVALID_VALUE,
                   "the padded input %s (%lld + %lld + %lld) overflows int64", axis,
                   (long long)in, (long long)pad, (long long)pad_end);
  if (gk_mul(dil, f - 1, &eff) || __builtin_add_overflow(eff, 1, &eff))
    return gk_fail(GKO_STATUS_INVALID_VALUE,
                   "the dilated filter %s (dilation %lld x (%lld - 1) + 1) overflows int64", axis,
                   (long long)dil, (long long)f);
  if (padded < eff) {
    if (n > 0)
      return gk_fail(GKO_STATUS_INVALID_VALUE,
                     "padded input smaller than the dilated filter: %s %lld + padding %lld + "
                     "%lld = %lld < dilation %lld x (filter %lld - 1) + 1 = %lld",
                     axis, (long long)in, (long long)pad, (long long)pad_end, (long long)padded,
                     (long long)dil, (long long)f, (long long)eff);
    *out = 0;
    return GKO_STATUS_SUCCESS;
  }
  *out = (padded - eff) / stride + 1;
  return GKO_STATUS_SUCCESS;
}

gko_status_t gk_conv_resolve(const int64_t *v, gk_conv_problem *p) {
#define GK_V(attr) v[GKO_CONV_ATTR_##attr]
  *p = (gk_conv_problem){
      .dtype = (int)GK_V(DTYPE), .layout = (int)GK_V(LAYOUT),
      .epilogue = (int)GK_V(EPILOGUE), .compute = (int)GK_V(COMPUTE), .algo = (int)GK_V(ALGO),
      .es = (int64_t)gko_dtype_size((gko_dtype_t)GK_V(DTYPE)),
      .n = GK_V(N), .c = GK_V(C), .h = GK_V(H), .w = GK_V(W),
      .k = GK_V(K), .r = GK_V(R), .s = GK_V(S),
      .sh = GK_V(STRIDE_H), .sw = GK_V(STRIDE_W),
      .ph = GK_V(PAD_H), .pw = GK_V(PAD_W),
      .ph_end = gk_conv_resolved(v, GKO_CONV_ATTR_PAD_H_END),
      .pw_end = gk_conv_resolved(v, GKO_CONV_ATTR_PAD_W_END),
      .dh = GK_V(DILATION_H), .dw = GK_V(DILATION_W), .groups = GK_V(GROUPS),
      .max_ws = GK_V(MAX_WORKSPACE), .max_chunk = GK_V(MAX_CHUNK),
      .alignment = GK_V(ALIGNMENT),
  };
#undef GK_V
  if (p->c % p->groups != 0)
    return gk_fail(GKO_STATUS_INVALID_VALUE,
                   "GKO_CONV_ATTR_C = %lld is not a multiple of GKO_CONV_ATTR_GROUPS = %lld",
                   (long long)p->c, (long long)p->groups);
  if (p->k % p->groups != 0)
    return gk_fail(GKO_STATUS_INVALID_VALUE,
                   "GKO_CONV_ATTR_K = %lld is not a multiple of GKO_CONV_ATTR_GROUPS = %lld",
                   (long long)p->k, (long long)p->groups);
  p->cg = p->c / p->groups;
  p->kg = p->k / p->groups;
  if (p->compute == GKO_GEMM_COMPUTE_TF32 && p->dtype != GKO_DTYPE_F32)
    return gk_fail(GKO_STATUS_INVALID_VALUE,
                   "GKO_CONV_ATTR_COMPUTE = TF32 applies to f32 inputs only (DTYPE = %d)",
                   p->dtype);
  gko_status_t s;
  if ((s = gk_conv_axis("height", p->n, p->h, p->ph, p->ph_end, p->dh, p->r, p->sh, &p->oh)) ||
      (s = gk_conv_axis("width", p->n, p->w, p->pw, p->pw_end, p->dw, p->s, p->sw, &p->ow)))
    return s;
  int64_t e, t;
  /* with N = 0 one image's sizes still have to be countable: the plan
   * works with OH*OW and C*H*W whatever N */
  const int64_t n1 = p->n > 0 ? p->n : 1;
  if (gk_mul4(n1, p->c, p->h, p->w, &e) || gk_mul(e, p->es, &t))
    return gk_fail(GKO_STATUS_INVALID_VALUE,
                   "x (N %lld x C %lld x H %lld x W %lld) has more bytes than int64 can count",
                   (long long)p->n, (long long)p->c, (long long)p->h, (long long)p->w);
  if (gk_mul4(p->k, p->cg, p->r, p->s, &e) || gk_mul(e, p->es, &t))
    return gk_fail(GKO_STATUS_INVALID_VALUE,
                   "w (K %lld x C/groups %lld x R %lld x S %lld) has more bytes than int64 can "
                   "count",
                   (long long)p->k, (long long)p->cg, (long long)p->r, (long long)p->s);
  if (gk_mul4(n1, p->k, p->oh, p->ow, &e) || gk_mul(e, p->es, &t))
    return gk_fail(GKO_STATUS_INVALID_VALUE,
                   "y (N %lld x K %lld x OH %lld x OW %lld) has more bytes than int64 can "
                   "count (absurd padding or stride?)",
                   (long long)p->n, (long long)p->k, (long long)p->oh, (long long)p->ow);
  return GKO_STATUS_SUCCESS;
}

GKO_API gko_status_t gko_conv_output_shape(gko_conv_desc_t desc, int64_t *oh, int64_t *ow) {
  gko_status_t s = gk_getter(desc, GK_LIVE_CONV_DESC, "desc", oh, "oh");
  if (s) return s;
  if (!ow) return gk_fail(GKO_STATUS_INVALID_VALUE, "ow is NULL");
  gk_conv_problem p;
  if ((s = gk_conv_resolve(desc->v, &p))) return s;
  *oh = p.oh;
  *ow = p.ow;
  return GKO_STATUS_SUCCESS;
}
