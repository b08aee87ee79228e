/* conv_execute.c -- Conv2d execute: the pointer, workspace and overlap
 * checks, then the implicit GEMM (src/conv_implicit.c), or per chunk the
 * transposes and im2col (kernels/im2col.cu) and the GEMM calls the plan
 * prepared, with the residual z as the GEMMs' C. */
#include <stdint.h>
#include <stdio.h>

#include "conv.h"
#include "gemm.h"
#include "../kernels/im2col.h"

static gko_status_t gk_conv_check_ptr(const void *ptr, const char *name, int64_t align,
                                      const char *why) {
  if (!ptr) return gk_fail(GKO_STATUS_INVALID_VALUE, "%s is NULL (%s)", name, why);
  if ((uintptr_t)ptr % (uint64_t)align != 0)
    return gk_fail(GKO_STATUS_INVALID_VALUE,
                   "%s = %p is not aligned to %lld bytes (the element size and the plan's "
                   "GKO_CONV_ATTR_ALIGNMENT promise; lower the promise for such pointers)",
                   name, ptr, (long long)align);
  return GKO_STATUS_SUCCESS;
}

/* One im2col pass over cnt images from xc (x_read: x holds elements) into
 * col; NHWC takes the widest vectors that C, C/groups and xc allow. */
static gko_status_t gk_conv_im2col(const struct gko_conv_plan_s *plan, int64_t cnt,
                                   const char *xc, int x_read, char *col, void *stream) {
  const gk_conv_problem *p = &plan->p;
  gk_im2col_args ia = {
      .layout = plan->c.lay, .es = (int)p->es,
      .images = cnt, .c = p->c, .h = p->h, .w = p->w,
      .groups = p->groups, .cg = p->cg, .r = p->r, .s = p->s,
      .oh = p->oh, .ow = p->ow, .stride_h = p->sh, .stride_w = p->sw,
      .pad_h = p->ph, .pad_w = p->pw, .dil_h = p->dh, .dil_w = p->dw,
      .l = plan->l, .kp = plan->kp, .ohw_ld = plan->ohw_ld,
      .x = xc, .col = col, .stream = stream,
  };
  if (plan->c.lay == GKO_CONV_LAYOUT_NHWC) {
    int vb = 16, idx = 3;
    while (vb > p->es && ((p->c * p->es) % vb != 0 || (p->cg * p->es) % vb != 0 ||
                          (x_read && (uintptr_t)xc % (uintptr_t)vb != 0))) {
      vb /= 2;
      idx--;
    }
    ia.vec_bytes = vb;
    ia.block = plan->block_nhwc[idx];
  } else {
    ia.vec_bytes = 16;
    ia.block = plan->block_nchw;
  }
  return gk_im2col_launch(&ia);
}

/* Execute's checks: the pointers against the alignment promise, the
 * workspace, the overlaps, then the handle's device and the pointers'. */
static gko_status_t gk_conv_check_execute(const struct gko_conv_plan_s *plan, const void *x,
                                          const void *w, const void *bias, const void *z,
                                          const void *y, const void *workspace,
                                          size_t workspace_bytes, void *stream) {
  const gk_conv_problem *p = &plan->p;
  const int64_t es = p->es, ohw = p->oh * p->ow, hw = p->h * p->w;
  const int64_t align = p->alignment > es ? p->alignment : es;
  const int need_bias = p->epilogue & 1;
  const size_t xb = (size_t)(p->n * p->c * hw * es), yb = (size_t)(p->n * p->k * ohw * es);
  const size_t wb = (size_t)(p->k * p->cg * p->r * p->s * es);
  const size_t bb = need_bias ? (size_t)(p->k * es) : 0;
  gko_status_t s;
  if ((s = gk_conv_check_ptr(y, "y", align, "y is always written")) ||
      (s = gk_conv_check_ptr(w, "w", align, "the filters are always read")) ||
      (xb > 0 && (s = gk_conv_check_ptr(x, "x", align, "N x C x H x W > 0"))) ||
      (need_bias && (s = gk_conv_check_ptr(bias, "bias", align, "the epilogue has a bias"))) ||
      (z && (s = gk_conv_check_ptr(z, "z", align, "beta != 0"))))
    return s;
  if ((s = gk_check_workspace(workspace, workspace_bytes, plan->ws_bytes,
                              "gko_conv_workspace_size")))
    return s;
  if (xb > 0 && gk_overlap(y, yb, x, xb))
    return gk_fail(GKO_STATUS_INVALID_VALUE, "y overlaps x (in-place convolution is not allowed)");
  if (gk_overlap(y, yb, w, wb)) return gk_fail(GKO_STATUS_INVALID_VALUE, "y overlaps w");
  if (need_bias && gk_overlap(y, yb, bias, bb))
    return gk_fail(GKO_STATUS_INVALID_VALUE, "y overlaps bias");
  if (z && gk_partial_overlap(y, yb, z, yb))
    return gk_fail(GKO_STATUS_INVALID_VALUE,
                   "z overlaps y without being y itself (z may be y, for a residual added in "
                   "place, or overlap nothing)");
  /* the workspace's first ws_bytes are written (column matrix, transposes,
   * the GEMM's own, each within them): they must not hold y or an input;
   * bytes past them may be anything (a larger arena) */
  if (gk_overlap(y, yb, workspace, plan->ws_bytes))
    return gk_fail(GKO_STATUS_INVALID_VALUE, "y overlaps the workspace");
  if (plan->ws_bytes > 0) {
    if (xb > 0 && gk_overlap(workspace, plan->ws_bytes, x, xb))
      return gk_fail(GKO_STATUS_INVALID_VALUE, "the workspace overlaps x");
    if (gk_overlap(workspace, plan->ws_bytes, w, wb))
      return gk_fail(GKO_STATUS_INVALID_VALUE, "the workspace overlaps w");
    if (need_bias && gk_overlap(workspace, plan->ws_bytes, bias, bb))
      return gk_fail(GKO_STATUS_INVALID_VALUE, "the workspace overlaps bias");
    if (z && gk_overlap(workspace, plan->ws_bytes, z, yb))
      return gk_fail(GKO_STATUS_INVALID_VALUE, "the workspace overlaps z");
  }
  const void *ptrs[6] = {y, w, xb > 0 ? x : NULL, need_bias ? bias : NULL,
                         workspace_bytes ? workspace : NULL, z};
  const char *names[6] = {"y", "w", "x", "bias", "workspace", "z"};
  return gk_check_call(plan->handle, stream, 6, ptrs, names);
}

/* y = act(alpha * conv(x, w) + bias + beta * z): both entry points. */
static gko_status_t gk_conv_run(gko_conv_plan_t plan, float alpha, const void *x, const void *w,
                                const void *bias, float beta, const void *z, void *y,
                                void *workspace, size_t workspace_bytes, void *stream) {
  gk_clear_error();
  gko_status_t s = gk_live_check(plan, GK_LIVE_CONV_PLAN, "plan");
  if (!s) s = gk_live_plan_handle(plan->handle, plan->handle_serial);
  if (s) return s;
  const gk_conv_problem *p = &plan->p;
  if (plan->c.path == GKO_CONV_PATH_NONE) return GKO_STATUS_SUCCESS;
  if (beta == 0.0f) z = NULL; /* never read */
  else if (!z)
    return gk_fail(GKO_STATUS_INVALID_VALUE, "z is NULL but beta = %g is not 0", (double)beta);
  s = gk_conv_check_execute(plan, x, w, bias, z, y, workspace, workspace_bytes, stream);
  if (s) return s;
  const int64_t es = p->es, G = p->groups, ohw = p->oh * p->ow, hw = p->h * p->w;
  const size_t xb = (size_t)(p->n * p->c * hw * es); /* 0: x is not read */
  if (!(p->epilogue & 1)) bias = NULL; /* the epilogue has no bias */
  if (plan->c.path == GKO_CONV_PATH_IMPLICIT) {
    if ((s = gk_conv_execute_implicit(plan, alpha, x, w, bias, beta, z, y, workspace, stream))) return s;
    gk_clear_error();
    return GKO_STATUS_SUCCESS;
  }

  /* IM2COL workspace: [padded filter][column matrix][GEMM] from a base
   * aligned to 256 (ws_bytes counts the 255 bytes of slack; the GEMM's part
   * starts 256-aligned, so its own slack is not used).  DIRECT: the whole
   * workspace is the GEMM's, passed as it came: the GEMM's size counts its
   * own slack for aligning it, which aligning it here first would eat. */
  char *base = NULL;
  size_t avail = 0;
  if (plan->c.path == GKO_CONV_PATH_IM2COL && workspace && workspace_bytes > 0) {
    uintptr_t u = ((uintptr_t)workspace + 255) & ~(uintptr_t)255;
    size_t skip = (size_t)(u - (uintptr_t)workspace);
    if (skip < workspace_bytes) { /* always: workspace_bytes >= ws_bytes > 255 */
      base = (char *)u;
      avail = workspace_bytes - skip;
    }
  }
  char *gws = NULL;
  size_t gws_bytes = 0;
  if (plan->c.path == GKO_CONV_PATH_IM2COL) {
    if (avail > plan->off_gemm) {
      gws = base + plan->off_gemm;
      gws_bytes = avail - plan->off_gemm;
    }
  } else if (workspace && workspace_bytes > 0) {
    gws = workspace;
    gws_bytes = workspace_bytes;
  }
  const int lay = plan->c.lay;
  const char *wsrc = w;
  if (plan->c.wpad) {
    /* through NHWC: KCRS -> KRSC; else the rows as they are (one tap of
     * L channels), both zero-padded to kp */
    const int64_t cg = plan->c.via_nhwc ? p->cg : plan->l;
    const int64_t rs = plan->c.via_nhwc ? p->r * p->s : 1;
    if ((s = gk_conv_filter_krsc_launch((int)es, p->k, cg, rs, plan->kp, w, base, stream)))
      return s;
    wsrc = base;
  }
  const int64_t k = plan->c.path == GKO_CONV_PATH_DIRECT ? p->cg : plan->kp;
  char what[96];
  for (int64_t ci = 0; ci < plan->c.nchunks; ci++) {
    const int64_t n0 = ci * plan->c.chunk;
    const int64_t cnt = ci + 1 < plan->c.nchunks ? plan->c.chunk : plan->c.last;
    gko_gemm_plan_t gp = cnt == plan->c.chunk || !plan->gemm[1] ? plan->gemm[0] : plan->gemm[1];
    const char *xc = (const char *)x + (xb > 0 ? n0 * p->c * hw * es : 0);
    char *yc = (char *)y + n0 * p->k * ohw * es;
    const char *zc = z ? (const char *)z + n0 * p->k * ohw * es : NULL;
    const char *a = xc; /* the GEMM's A: col, or x itself */
    int64_t a_grp, a_img;
    if (plan->c.via_nhwc) { /* x_n [C][H*W] -> [H*W][C] in the workspace */
      if (hw > 0 && (s = gk_transpose_batched_launch((int)es, p->c, hw, cnt, xc,
                                                     base + plan->off_xt, stream)))
        return s;
      xc = base + plan->off_xt;
    }
    if (plan->c.path == GKO_CONV_PATH_IM2COL) {
      if ((s = gk_conv_im2col(plan, cnt, xc, xb > 0, base + plan->off_col, stream)))
        return s;
      a = base + plan->off_col;
      a_grp = lay == GKO_CONV_LAYOUT_NHWC ? cnt * ohw * plan->kp : plan->kp * plan->ohw_ld;
      a_img = G * plan->kp * plan->ohw_ld;
    } else {
      a_grp = p->layout == GKO_CONV_LAYOUT_NHWC ? p->cg : p->cg * hw;
      a_img = p->c * hw;
    }
    const int64_t w_grp = p->kg * k; /* elements between the groups' filters */
    /* via_nhwc: the GEMM writes D [cnt*OH*OW][K] into the workspace, with
     * z_n [K][OH*OW] transposed there first as its C (in place) */
    char *yd = plan->c.via_nhwc ? base + plan->off_d : yc;
    if (plan->c.via_nhwc && zc) {
      if ((s = gk_transpose_batched_launch((int)es, p->k, ohw, cnt, zc, yd, stream))) return s;
      zc = yd;
    }
    if (lay == GKO_CONV_LAYOUT_NCHW && plan->c.by_group) {
      for (int64_t i = 0; i < cnt; i++) {
        s = gk_gemm_execute(gp, alpha, a + i * a_img * es, wsrc, beta,
                             zc ? zc + i * p->k * ohw * es : NULL, yc + i * p->k * ohw * es,
                             bias, gws, gws_bytes, stream);
        if (s) {
          snprintf(what, sizeof what, "(image %lld)", (long long)(n0 + i));
          return gk_conv_gemm_fail(s, what);
        }
      }
    } else {
      for (int64_t g = 0; g < G; g++) {
        const int64_t d_off = lay == GKO_CONV_LAYOUT_NHWC ? g * p->kg : g * p->kg * ohw;
        s = gk_gemm_execute(gp, alpha, a + g * a_grp * es, wsrc + g * w_grp * es, beta,
                             zc ? zc + d_off * es : NULL, yd + d_off * es,
                             bias ? (const char *)bias + g * p->kg * es : NULL, gws, gws_bytes,
                             stream);
        if (s) {
          snprintf(what, sizeof what, "(chunk %lld, group %lld)", (long long)ci, (long long)g);
          return gk_conv_gemm_fail(s, what);
        }
      }
    }
    /* D_n [OH*OW][K] -> y_n [K][OH*OW] */
    if (plan->c.via_nhwc && (s = gk_transpose_batched_launch((int)es, ohw, p->k, cnt, yd, yc,
                                                           stream)))
      return s;
  }
  gk_clear_error();
  return GKO_STATUS_SUCCESS;
}

GKO_API gko_status_t gko_conv_execute(gko_conv_plan_t plan, const void *x, const void *w,
                                      const void *bias, void *y, void *workspace,
                                      size_t workspace_bytes, gko_stream_t stream) {
  return gk_conv_run(plan, 1.0f, x, w, bias, 0.0f, NULL, y, workspace, workspace_bytes, stream);
}

GKO_API gko_status_t gko_conv_execute_residual(gko_conv_plan_t plan, float alpha, const void *x,
                                               const void *w, const void *bias, float beta,
                                               const void *z, void *y, void *workspace,
                                               size_t workspace_bytes, gko_stream_t stream) {
  return gk_conv_run(plan, alpha, x, w, bias, beta, z, y, workspace, workspace_bytes, stream);
}
