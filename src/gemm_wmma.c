/* gemm_wmma.c -- the slot for gko's own WMMA Tensor-Core GEMM backend.
 *
 * GEMM part 2 (issue 4) replaces this stub: plan() chooses a tile
 * configuration for the problem (any shape, alignment, sm_70+, fused
 * GELU-erf, split-K for decode shapes) and fills plan->state, ws_bytes and
 * why; execute() enqueues the kernel from kernels/gemm_wmma.cu; destroy()
 * frees the state.  gemm.c's gk_gemm_auto_order() then decides when AUTO
 * prefers it.  Until then a forced WMMA backend is NOT_SUPPORTED. */
#include "internal.h"

static gko_status_t wmma_plan(gko_gemm_plan_t plan) {
  (void)plan;
  return gk_fail(GKO_STATUS_NOT_SUPPORTED,
                 "GKO_GEMM_BACKEND_WMMA (gko's own Tensor-Core kernel) is not available in "
                 "this version of gko; use GKO_GEMM_BACKEND_AUTO or GKO_GEMM_BACKEND_CUBLASLT");
}

static gko_status_t wmma_execute(gko_gemm_plan_t plan, const gk_gemm_args *args) {
  (void)plan;
  (void)args;
  return gk_fail(GKO_STATUS_INTERNAL, "WMMA execute called without a WMMA plan");
}

const gk_gemm_backend gk_gemm_wmma_backend = {GKO_GEMM_BACKEND_WMMA, "WMMA", wmma_plan,
                                              wmma_execute, NULL};
