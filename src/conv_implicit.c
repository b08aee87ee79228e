/* conv_implicit.c -- the implicit-GEMM path of Conv2d (GKO_CONV_PATH_
 * IMPLICIT): whether it applies to a problem (and why not), the kernel
 * configuration, and its execute.  The kernels are kernels/conv_sm90*.cu
 * (CUTLASS's sm90 fprop collective with gko's epilogue); alpha == 0 runs
 * gko's epilogue pass alone, as the GEMM does. */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>

#include "conv.h"
#include "../kernels/conv_sm90.h"
#include "../kernels/gemm_epilogue.h"
#include "../kernels/gemm_sm90.h"
#include "../kernels/space_to_depth.h"

/* The space-to-depth rewrite for C not a multiple of 8 (the 3-channel stem):
 * blocks of sh rows and the S columns of a filter row become channels,
 *   X2[n][i][j][(dy * S + t) * C + c] = x[n][sh*i + dy - ph][sw*j + t - pw][c]
 * (zero outside x, and in the channels from sh*S*C up to C2 = sh*S*C
 * rounded up to 8), the filter w2[k][a][0][(dy * S + t) * C + c] =
 * w[k][sh*a + dy][t][c] (zero past R), and the convolution a stride-1,
 * unpadded R2 x 1 one, R2 = ceil(R / sh), over X2's H2 = OH + R2 - 1 rows
 * and W2 = OW columns: the same sums, term for term, plus zeros.  The
 * kernel steps through the reduction 64 channels of one tap at a time, so
 * the rewrite costs R2 * (C2 rounded up to 64) products per output where
 * im2col's GEMM has C*R*S rounded up to 8: it needs dilation 1 and is taken
 * when that is at most twice; the copies go to the workspace.  Where
 * stride_h does not divide R, the last tap's zero weights meet rows of x
 * that lie just past the output's window: a finite x gives the same sums,
 * but an Inf or NaN there also reaches that output (0 * Inf; gko.h). */
static int gk_conv_fold(const gk_conv_problem *p, gk_conv_problem *q, char *why, size_t cap) {
  *q = *p;
  if (p->c % 8 == 0) return 1;
  if (p->sh > 8 || p->sw > 8 || p->c >= (1 << 24) || p->r >= (1 << 16) || p->s >= (1 << 16)) {
    snprintf(why, cap, "TMA needs C in multiples of 16 bytes (8 elements), C = %lld, and the "
             "space-to-depth rewrite that pads it takes strides up to 8, C below 2^24 and "
             "filters below 2^16 taps a side", (long long)p->c);
    return 0;
  }
  if (p->dh != 1 || p->dw != 1) {
    snprintf(why, cap, "TMA needs C in multiples of 16 bytes (8 elements), C = %lld, and the "
             "space-to-depth rewrite that pads it needs dilation 1", (long long)p->c);
    return 0;
  }
  const int64_t c2 = (p->sh * p->s * p->c + 7) / 8 * 8, r2 = (p->r + p->sh - 1) / p->sh;
  const int64_t steps = r2 * ((c2 + 63) / 64 * 64), l = (p->c * p->r * p->s + 7) / 8 * 8;
  if (steps > 2 * l) {
    snprintf(why, cap, "TMA needs C in multiples of 16 bytes (8 elements), C = %lld, and the "
             "space-to-depth rewrite that pads it would run %lld products per output (%lld "
             "taps of %lld channels in steps of 64), more than twice im2col's %lld",
             (long long)p->c, (long long)steps, (long long)r2, (long long)c2, (long long)l);
    return 0;
  }
  q->c = c2, q->r = r2, q->s = 1;
  q->h = p->oh + r2 - 1, q->w = p->ow;
  q->sh = q->sw = 1, q->ph = q->pw = q->ph_end = q->pw_end = 0;
  return 1;
}

/* The workspace of the rewrite: [X2][w2 from a 256-byte boundary] from a
 * 256-aligned base. */
static int64_t gk_conv_fold_ws(int64_t xb, int64_t wb) {
  return xb ? 255 + (xb + 255) / 256 * 256 + wb : 0;
}

/* Bytes of X2 and w2 (0, 0 without the rewrite); 1 on overflow. */
static int gk_conv_fold_bytes(const gk_conv_problem *p, const gk_conv_problem *q, int64_t *xb,
                              int64_t *wb) {
  *xb = *wb = 0;
  if (q->c == p->c) return 0;
  return gk_mul4(q->n, q->h, q->w, q->c, xb) || gk_mul(*xb, p->es, xb) ||
         gk_mul4(q->k, q->r, q->s, q->c, wb) || gk_mul(*wb, p->es, wb) || *xb > INT64_MAX / 2;
}

/* 1 when the implicit GEMM can run p on h's GPU; else 0 with the reason in
 * why (the rules of gko_conv_algo_t in gko.h).  q (may be NULL) receives
 * the problem the kernel runs: p, or its space-to-depth rewrite. */
int gk_conv_implicit_applies(gko_handle_t h, const gk_conv_problem *p, char *why, size_t cap,
                             gk_conv_problem *kernel_problem) {
  const char *no = NULL;
  char buf[300];
  gk_conv_problem q = *p;
  int64_t xb = 0, wb = 0;
  if (!gk_sm90_built())
    no = "this build has no SM90 kernels (built without 90 in GKO_ARCHS, GKO_SM90=0, or with "
         "an nvcc that lacks sm_90a)";
  else if (h->cc != 90) {
    snprintf(buf, sizeof buf, "the kernels are sm_90a code (compute capability 9.0 only); this "
             "GPU is sm_%d", h->cc);
    no = buf;
  } else if (p->layout != GKO_CONV_LAYOUT_NHWC)
    no = "the kernels read NHWC; NCHW runs on the GEMM lowering";
  else if (p->dtype == GKO_DTYPE_F32)
    no = "the kernels take f16 or bf16, not f32";
  else if (p->groups != 1)
    no = "grouped and depthwise convolutions run on the GEMM lowering (one group only)";
  else if (p->compute != GKO_GEMM_COMPUTE_DEFAULT)
    no = "the kernels accumulate in f32 only (GKO_GEMM_COMPUTE_DEFAULT)";
  else if (p->alignment < 16) {
    snprintf(buf, sizeof buf, "TMA needs 16-byte-aligned pointers, but GKO_CONV_ATTR_ALIGNMENT "
             "promises %lld", (long long)p->alignment);
    no = buf;
  } else if (p->k % 8 != 0) {
    snprintf(buf, sizeof buf, "TMA needs K in multiples of 16 bytes (8 elements); K = %lld",
             (long long)p->k);
    no = buf;
  } else if (p->h < 1 || p->w < 1)
    no = "an empty input (H or W 0) runs on the GEMM lowering";
  else if (!gk_conv_fold(p, &q, buf, sizeof buf))
    no = buf;
  else if (gk_conv_fold_bytes(p, &q, &xb, &wb))
    no = "the space-to-depth copy of x would overflow int64 bytes";
  else if (xb > 0 && p->max_ws >= 0 && gk_conv_fold_ws(xb, wb) > p->max_ws) {
    snprintf(buf, sizeof buf, "the space-to-depth copies need %lld bytes of workspace, "
             "GKO_CONV_ATTR_MAX_WORKSPACE allows %lld", (long long)gk_conv_fold_ws(xb, wb),
             (long long)p->max_ws);
    no = buf;
  } else if (q.sh > 8 || q.sw > 8)
    no = "TMA's im2col mode takes strides up to 8";
  else if (q.ph > 128 || q.pw > 128 || q.ph_end > 128 || q.pw_end > 128 ||
           q.dh * (q.r - 1) >= 255 ||
           q.dw * (q.s - 1) >= 255 || q.ph_end - q.dh * (q.r - 1) < -128 ||
           q.ph_end - q.dh * (q.r - 1) > 127 || q.pw_end - q.dw * (q.s - 1) < -128 ||
           q.pw_end - q.dw * (q.s - 1) > 127)
    no = "TMA's im2col box is out of range (per axis: padding at most 128 on either side, "
         "dil * (R - 1) below 255, pad_end - dil * (R - 1) from -128 to 127)";
  else if (p->k > 65535 * 64)
    no = "K above 65535 x 64: the kernel's grid has one row of CTAs per 64 or 128 channels "
         "(at most 65535)";
  else if (p->n > INT_MAX || q.h > INT_MAX || q.w > INT_MAX || q.c > INT_MAX ||
           p->k > INT_MAX || p->n * p->oh * p->ow > INT_MAX || xb / (8 * p->es) >= INT_MAX)
    no = "N*OH*OW, every extent and the space-to-depth copy's 16-byte groups must be below 2^31";
  if (no && why) snprintf(why, cap, "%s", no);
  if (!no && kernel_problem) *kernel_problem = q;
  return no == NULL;
}

/* The tile configuration (conv_sm90.h), measured on the H100 over
 * ResNet-18's layers at N = 1, 32 and 128 (docs/conv.md, "Implicit GEMM"):
 * the persistent ping-pong kernel where its tiles fill at least half the
 * SMs: 128 x 64 for K <= 64 (an N tile of 128 would be half padding),
 * 128 x 128 for K <= 128, and for wider layers 128 x 128 in 1 x 2
 * clusters (the two channel tiles share each pixel tile's load); for
 * smaller problems CUTLASS's conv kernel, two CTAs per SM, with 64 x 128
 * tiles where those fill half the SMs, else 64 x 64 (every layer at
 * N = 1). */
static int gk_conv_implicit_config(gko_handle_t h, const gk_conv_problem *p) {
  const int64_t m = p->n * p->oh * p->ow, half = (h->sm_count + 1) / 2;
  const int64_t tn = p->k <= 64 ? 64 : 128; /* the ping-pong tile's channels */
  if ((m + 127) / 128 * ((p->k + tn - 1) / tn) >= half)
    return p->k <= 64    ? GK_CONV_SM90_PP_128x64
           : p->k <= 128 ? GK_CONV_SM90_PP_128x128
                         : GK_CONV_SM90_PP_128x128_C12;
  if (p->k > 64 && (m + 63) / 64 * ((p->k + 127) / 128) >= half) return GK_CONV_SM90_64x128;
  return GK_CONV_SM90_64x64;
}

/* Plan time: the kernel's problem, its configuration and its setup. */
gko_status_t gk_conv_plan_implicit(gko_conv_plan_t cp) {
  gk_conv_problem q;
  if (!gk_conv_implicit_applies(cp->handle, &cp->p, NULL, 0, &q))
    return gk_fail(GKO_STATUS_INTERNAL, "implicit GEMM planned where it does not apply");
  const gk_conv_problem *p = &q;
  gk_conv_sm90_problem *ip = &cp->ip;
  *ip = (gk_conv_sm90_problem){
      .dtype = p->dtype, .act = p->epilogue >> 1,
      .n = (int)p->n, .h = (int)p->h, .w = (int)p->w, .c = (int)p->c, .k = (int)p->k,
      .r = (int)p->r, .s = (int)p->s, .oh = (int)p->oh, .ow = (int)p->ow,
      .pad_h = (int)p->ph, .pad_w = (int)p->pw,
      .pad_h_end = (int)p->ph_end, .pad_w_end = (int)p->pw_end,
      .stride_h = (int)p->sh, .stride_w = (int)p->sw, .dil_h = (int)p->dh, .dil_w = (int)p->dw,
      .device = cp->handle->device, .sm_count = cp->handle->sm_count,
  };
  cp->icfg = gk_conv_implicit_config(cp->handle, p);
  gko_status_t s = gk_conv_sm90_setup(ip, cp->icfg);
  if (s) return s;
  cp->c.path = GKO_CONV_PATH_IMPLICIT;
  cp->c.lay = GKO_CONV_LAYOUT_NHWC;
  cp->c.chunk = cp->c.last = p->n;
  cp->c.nchunks = 1;
  cp->c.chunk_bound = GK_CONV_CHUNK_BATCH;
  cp->c.gemm_calls = 1;
  int64_t xb, wb;
  gk_conv_fold_bytes(&cp->p, &q, &xb, &wb);
  cp->fold = xb > 0;
  cp->fold_x_bytes = (size_t)xb;
  cp->ws_bytes = cp->ws_full = cp->ws_min = (size_t)gk_conv_fold_ws(xb, wb);
  return GKO_STATUS_SUCCESS;
}

void gk_conv_explain_implicit(gko_conv_plan_t cp) {
  static const int kTileM[GK_CONV_SM90_NCONFIGS] = {64, 64, 128, 128, 128};
  static const int kTileN[GK_CONV_SM90_NCONFIGS] = {128, 64, 64, 128, 128};
  static const char *const kWhy[GK_CONV_SM90_NCONFIGS] = {
      "CUTLASS's conv kernel, two CTAs per SM: too few 128-pixel tiles to fill half the SMs",
      "CUTLASS's conv kernel, two CTAs per SM: too few 128-pixel or 64 x 128 tiles to fill "
      "half the SMs",
      "persistent ping-pong kernel; K <= 64: an N tile of 128 would be half padding",
      "persistent ping-pong kernel",
      "persistent ping-pong kernel in 1 x 2 clusters: the two channel tiles' CTAs share each "
      "pixel tile's load (TMA multicast)"};
  const gk_conv_problem *p = &cp->p;
  const gk_conv_sm90_problem *ip = &cp->ip;
  const int tm = kTileM[cp->icfg], tn = kTileN[cp->icfg];
  if (cp->fold)
    GK_WHY(cp,
           "space-to-depth (C = %lld is not a multiple of 8): x copied to [N][%d][%d][%d] "
           "(blocks of %lld rows x the filter's %lld columns of C channels, zero-padded) and "
           "the filter to [K][%d][1][%d] in the workspace (%zu bytes), then a %d x 1 stride-1 "
           "convolution; ",
           (long long)p->c, ip->h, ip->w, ip->c, (long long)p->sh, (long long)p->s, ip->r, ip->c,
           cp->ws_bytes, ip->r);
  const int64_t m = p->n * p->oh * p->ow;
  GK_WHY(cp,
         "implicit GEMM on SM90 (CUTLASS %s fprop collective: x gathered by TMA's im2col mode, "
         "no column matrix; wgmma, f32 accumulate): M = N*OH*OW = %lld pixels, N = K = %lld "
         "channels, K = R*S*C = %lld; tile %d x %d x 64 (%s), %lld x %lld tiles on %d SMs; "
         "epilogue act(alpha * conv + bias + beta * z) on the accumulators",
         gk_sm90_cutlass_version(), (long long)m, (long long)p->k,
         (long long)ip->r * ip->s * ip->c, tm, tn, kWhy[cp->icfg], (long long)((m + tm - 1) / tm),
         (long long)((p->k + tn - 1) / tn), cp->handle->sm_count);
}

gko_status_t gk_conv_execute_implicit(const struct gko_conv_plan_s *plan, float alpha,
                                      const void *x, const void *w, const void *bias,
                                      float beta, const void *z, void *y, void *workspace,
                                      void *stream) {
  const gk_conv_problem *p = &plan->p;
  if (alpha == 0.0f) /* y = act(bias + beta * z), x and w unread */
    return gk_gemm_epilogue_launch(p->dtype, p->epilogue >> 1, p->k, p->n * p->oh * p->ow, 1, y,
                                   p->k, 0, z, p->k, 0, z ? beta : 0.0f, bias, 0, 1, stream);
  if (plan->fold) {
    const gk_conv_sm90_problem *ip = &plan->ip;
    char *x2 = (char *)(((uintptr_t)workspace + 255) & ~(uintptr_t)255);
    char *w2 = x2 + (plan->fold_x_bytes + 255) / 256 * 256;
    const gk_s2d_args a = {.n = p->n, .h = p->h, .w = p->w, .c = p->c, .r = p->r, .s = p->s,
                           .stride_h = p->sh, .stride_w = p->sw, .pad_h = p->ph, .pad_w = p->pw,
                           .h2 = ip->h, .w2 = ip->w, .r2 = ip->r, .c2 = ip->c};
    gko_status_t s = gk_s2d_launch(&a, x, x2, stream);
    if (!s) s = gk_s2d_filter_launch(&a, p->k, w, w2, stream);
    if (s) return s;
    x = x2, w = w2;
  }
  return gk_conv_sm90_launch(&plan->ip, plan->icfg, alpha, beta, x, w, z, y, bias, stream);
}
