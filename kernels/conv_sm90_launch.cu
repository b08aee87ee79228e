/* conv_sm90_launch.cu -- the host side of gko's Hopper implicit-GEMM
 * convolution: which kernel of the instantiation files' tables serves a
 * problem, and the calls into it.  Compiled without CUTLASS; GK_SM90 (the
 * Makefile's) says whether the tables were built. */
#include "conv_sm90.h"

#ifndef GK_SM90
#define GK_SM90 0
#endif

#if GK_SM90
static const gk_conv_sm90_entry *gk_conv_sm90_find(const gk_conv_sm90_problem *p, int cfg) {
  if (cfg < 0 || cfg >= GK_CONV_SM90_NCONFIGS) return NULL;
  const int f16 = p->dtype == GKO_DTYPE_F16, bf16 = p->dtype == GKO_DTYPE_BF16;
  const int pp = cfg >= GK_CONV_SM90_NCONV; /* the ping-pong kernels' table */
  const gk_conv_sm90_entry *tab = f16    ? (pp ? gk_conv_sm90_pp_f16 : gk_conv_sm90_f16)
                                  : bf16 ? (pp ? gk_conv_sm90_pp_bf16 : gk_conv_sm90_bf16)
                                         : NULL;
  if (pp) cfg -= GK_CONV_SM90_NCONV;
  return tab && tab[cfg].setup ? &tab[cfg] : NULL;
}
#endif

extern "C" gko_status_t gk_conv_sm90_setup(const gk_conv_sm90_problem *p, int cfg) {
#if GK_SM90
  const gk_conv_sm90_entry *e = gk_conv_sm90_find(p, cfg);
  if (e) return e->setup(p);
#endif
  return gk_fail(GKO_STATUS_NOT_SUPPORTED,
                 "SM90 implicit GEMM: no kernel of configuration %d for this dtype in this build",
                 cfg);
}

extern "C" gko_status_t gk_conv_sm90_launch(const gk_conv_sm90_problem *p, int cfg, float alpha,
                                            float beta, const void *x, const void *w,
                                            const void *z, void *y, const void *bias,
                                            void *stream) {
#if GK_SM90
  const gk_conv_sm90_entry *e = gk_conv_sm90_find(p, cfg);
  if (e) return e->launch(p, alpha, beta, x, w, z, y, bias, stream);
#endif
  return gk_fail(GKO_STATUS_INTERNAL,
                 "SM90 implicit GEMM: launch of configuration %d that is not built", cfg);
}
