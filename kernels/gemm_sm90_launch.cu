/* gemm_sm90_launch.cu -- the host side of gko's Hopper GEMM: which kernel
 * of the instantiation files' tables serves a problem, and the calls into
 * it.  Compiled without CUTLASS; GK_SM90 (the Makefile's) says whether the
 * tables were built. */
#include "gemm_sm90.h"

#ifndef GK_SM90
#define GK_SM90 0
#endif

#if GK_SM90
static const gk_sm90_entry *gk_sm90_find(const gk_sm90_problem *p, int cfg) {
  if (cfg < 0 || cfg >= GK_SM90_NCONFIGS || p->opa < 0 || p->opa > 1 || p->opb < 0 || p->opb > 1)
    return NULL;
  const int f32 = p->cd_dtype == GKO_DTYPE_F32;
  const gk_sm90_entry(*tab)[4] = NULL;
  if (p->ab_dtype == GKO_DTYPE_F16 && (f32 || p->cd_dtype == GKO_DTYPE_F16))
    tab = f32 ? gk_sm90_f16_f32 : gk_sm90_f16_f16;
  else if (p->ab_dtype == GKO_DTYPE_BF16 && (f32 || p->cd_dtype == GKO_DTYPE_BF16))
    tab = f32 ? gk_sm90_bf16_f32 : gk_sm90_bf16_bf16;
  if (!tab) return NULL;
  const gk_sm90_entry *e = &tab[cfg][p->opa * 2 + p->opb];
  return e->setup ? e : NULL;
}
#endif

extern "C" int gk_sm90_built(void) { return GK_SM90; }

extern "C" const char *gk_sm90_cutlass_version(void) {
#if GK_SM90
  return gk_sm90_cutlass;
#else
  return "";
#endif
}

extern "C" gko_status_t gk_sm90_setup(const gk_sm90_problem *p, int cfg, size_t *ws_bytes) {
#if GK_SM90
  const gk_sm90_entry *e = gk_sm90_find(p, cfg);
  if (e) return e->setup(p, ws_bytes);
#endif
  return gk_fail(GKO_STATUS_NOT_SUPPORTED, "SM90: no kernel of configuration %d for this type "
                 "pair in this build", cfg);
}

extern "C" gko_status_t gk_sm90_launch(const gk_sm90_problem *p, int cfg, float alpha,
                                       float beta, const void *a, const void *b, const void *c,
                                       void *d, const void *bias, void *ws, void *stream) {
#if GK_SM90
  const gk_sm90_entry *e = gk_sm90_find(p, cfg);
  if (e) return e->launch(p, alpha, beta, a, b, c, d, bias, ws, stream);
#endif
  return gk_fail(GKO_STATUS_INTERNAL, "SM90: launch of configuration %d that is not built", cfg);
}
