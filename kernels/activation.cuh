/* activation.cuh -- the GEMM epilogues' activation (gko_epilogue_t's
 * bits 1-2) as one device function, shared by gko's WMMA and SM90 kernels:
 * ReLU keeps NaN; GELU is gko_gelu_forward's math, the accurate form for
 * f32 outputs and the fast one (far below half an ulp) for f16/bf16. */
#ifndef GK_ACTIVATION_CUH
#define GK_ACTIVATION_CUH

#include "gelu.cuh"

namespace gk {

/* act: 0 none, 1 ReLU, 2 GELU-erf, 3 GELU-tanh; acc: f32 output */
__device__ __forceinline__ float activate(float x, int act, bool acc) {
  switch (act) {
    case 1: return x != x ? x : fmaxf(x, 0.0f);
    case 2: return acc ? gelu_fwd<0, true>(x) : gelu_fwd<0, false>(x);
    case 3: return acc ? gelu_fwd<1, true>(x) : gelu_fwd<1, false>(x);
  }
  return x;
}

} // namespace gk

#endif /* GK_ACTIVATION_CUH */
