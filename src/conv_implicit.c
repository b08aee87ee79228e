/* conv_implicit.c -- the implicit-GEMM path of Conv2d (GKO_CONV_PATH_
 * IMPLICIT): whether it applies to a problem (and why not), the kernel
 * configuration, and its execute.  The kernels are kernels/conv_sm90*.cu
 * (CUTLASS's sm90 fprop collective with gko's epilogue); alpha == 0 runs
 * gko's epilogue pass alone, as the GEMM does. */
#include <limits.h>
#include <stdio.h>

#include "conv.h"
#include "../kernels/conv_sm90.h"
#include "../kernels/gemm_epilogue.h"
#include "../kernels/gemm_sm90.h"

/* 1 when the implicit GEMM can run p on h's GPU; else 0 with the reason in
 * why (the rules of gko_conv_algo_t in gko.h). */
int gk_conv_implicit_applies(gko_handle_t h, const gk_conv_problem *p, char *why, size_t cap) {
  const char *no = NULL;
  char buf[200];
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
  } else if (p->c % 8 != 0 || p->k % 8 != 0) {
    snprintf(buf, sizeof buf, "TMA needs C and K in multiples of 16 bytes (8 elements); C = %lld, "
             "K = %lld", (long long)p->c, (long long)p->k);
    no = buf;
  } else if (p->h < 1 || p->w < 1)
    no = "an empty input (H or W 0) runs on the GEMM lowering";
  else if (p->sh > 8 || p->sw > 8)
    no = "TMA's im2col mode takes strides up to 8";
  else if (p->ph > 128 || p->pw > 128 || p->ph_end > 128 || p->pw_end > 128 ||
           p->dh * (p->r - 1) >= 255 ||
           p->dw * (p->s - 1) >= 255 || p->ph_end - p->dh * (p->r - 1) < -128 ||
           p->ph_end - p->dh * (p->r - 1) > 127 || p->pw_end - p->dw * (p->s - 1) < -128 ||
           p->pw_end - p->dw * (p->s - 1) > 127)
    no = "TMA's im2col box is out of range (per axis: padding at most 128 on either side, "
         "dil * (R - 1) below 255, pad_end - dil * (R - 1) from -128 to 127)";
  else if (p->k > 65535 * 64)
    no = "K above 65535 x 64: the kernel's grid has one row of CTAs per 64 or 128 channels "
         "(at most 65535)";
  else if (p->n > INT_MAX || p->h > INT_MAX || p->w > INT_MAX || p->c > INT_MAX ||
           p->k > INT_MAX || p->n * p->oh * p->ow > INT_MAX)
    no = "N*OH*OW and every extent must be below 2^31";
  if (no && why) snprintf(why, cap, "%s", no);
  return no == NULL;
}

/* The tile configuration (conv_sm90.h), measured on the H200 over
 * ResNet-18's layers at N = 32 and 128 (docs/conv.md, "Implicit GEMM"):
 * K <= 64 takes 64x64 (an N tile of 128 would be half padding); K <= 128
 * takes 64x128, two CTAs per SM; wider layers 128x128, unless that makes
 * fewer tiles than half the SMs (ResNet's 7x7 layers at small N), where
 * 64x128's twice as many tiles win. */
static int gk_conv_implicit_config(gko_handle_t h, const gk_conv_problem *p) {
  const int64_t m = p->n * p->oh * p->ow;
  const int64_t tiles = (m + 127) / 128 * ((p->k + 127) / 128);
  if (p->k <= 64) return GK_CONV_SM90_64x64;
  if (p->k <= 128 || 2 * tiles < h->sm_count) return GK_CONV_SM90_64x128;
  return GK_CONV_SM90_128x128;
}

/* Plan time: the kernel's problem, its configuration and its setup. */
gko_status_t gk_conv_plan_implicit(gko_conv_plan_t cp) {
  const gk_conv_problem *p = &cp->p;
  gk_conv_sm90_problem *ip = &cp->ip;
  *ip = (gk_conv_sm90_problem){
      .dtype = p->dtype, .act = p->epilogue >> 1,
      .n = (int)p->n, .h = (int)p->h, .w = (int)p->w, .c = (int)p->c, .k = (int)p->k,
      .r = (int)p->r, .s = (int)p->s, .oh = (int)p->oh, .ow = (int)p->ow,
      .pad_h = (int)p->ph, .pad_w = (int)p->pw,
      .pad_h_end = (int)p->ph_end, .pad_w_end = (int)p->pw_end,
      .stride_h = (int)p->sh, .stride_w = (int)p->sw, .dil_h = (int)p->dh, .dil_w = (int)p->dw,
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
  cp->ws_bytes = cp->ws_full = cp->ws_min = 0;
  return GKO_STATUS_SUCCESS;
}

void gk_conv_explain_implicit(gko_conv_plan_t cp) {
  static const int kTileM[GK_CONV_SM90_NCONFIGS] = {128, 64, 64};
  static const int kTileN[GK_CONV_SM90_NCONFIGS] = {128, 128, 64};
  static const char *const kWhy[GK_CONV_SM90_NCONFIGS] = {
      "K > 128 with at least half the SMs' worth of tiles",
      "K <= 128, or too few 128 x 128 tiles to fill half the SMs; two CTAs per SM",
      "K <= 64: an N tile of 128 would be half padding; two CTAs per SM"};
  const gk_conv_problem *p = &cp->p;
  const int tm = kTileM[cp->icfg], tn = kTileN[cp->icfg];
  const int64_t m = p->n * p->oh * p->ow;
  GK_WHY(cp,
         "implicit GEMM on SM90 (CUTLASS %s fprop collective: x gathered by TMA's im2col mode, "
         "no column matrix; wgmma, f32 accumulate): M = N*OH*OW = %lld pixels, N = K = %lld "
         "channels, K = R*S*C = %lld; tile %d x %d x 64 (%s), %lld x %lld tiles on %d SMs; "
         "epilogue act(alpha * conv + bias + beta * z) on the accumulators; no workspace",
         gk_sm90_cutlass_version(), (long long)m, (long long)p->k,
         (long long)(p->r * p->s * p->c), tm, tn, kWhy[cp->icfg], (long long)((m + tm - 1) / tm),
         (long long)((p->k + tn - 1) / tn), cp->handle->sm_count);
}

gko_status_t gk_conv_execute_implicit(const struct gko_conv_plan_s *plan, float alpha,
                                      const void *x, const void *w, const void *bias,
                                      float beta, const void *z, void *y, void *stream) {
  const gk_conv_problem *p = &plan->p;
  if (alpha == 0.0f) /* y = act(bias + beta * z), x and w unread */
    return gk_gemm_epilogue_launch(p->dtype, p->epilogue >> 1, p->k, p->n * p->oh * p->ow, 1, y,
                                   p->k, 0, z, p->k, 0, z ? beta : 0.0f, bias, 0, 1, stream);
  return gk_conv_sm90_launch(&plan->ip, plan->icfg, alpha, beta, x, w, z, y, bias, stream);
}
