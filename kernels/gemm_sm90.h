/* gemm_sm90.h -- the interface of gko's Hopper GEMM (kernels/gemm_sm90*.cu):
 * CUTLASS's sm90 collectives (TMA loads, wgmma, warp-specialized persistent
 * kernels) with gko's epilogue fused, in the lt view of the resolved
 * problem:
 *   D (m x n, column-major) = act(alpha * op(A) op(B) + beta * C + bias[i])
 * A stored m x k (opa 0) or k x m (opa 1) column-major, B k x n (opb 0) or
 * n x k (opb 1); batch b at base + b * stride; bias indexed by D's row.
 * Compiled for sm_90a only; on a build without it (GKO_ARCHS without 90,
 * or an nvcc without sm_90a) gk_sm90_built() is 0 and nothing runs. */
#ifndef GK_KERNELS_GEMM_SM90_H
#define GK_KERNELS_GEMM_SM90_H

#include <stddef.h>
#include <stdint.h>

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The kernel configurations (tile M x N x K, cluster, schedule):
 *   COOP_256   128 x 256 x 64, cluster 2 x 1, cooperative (two consumer
 *              warp groups share each tile): large problems;
 *   PINGPONG   128 x 128 x 64, cluster 1 x 2, ping-pong (the two consumer
 *              warp groups alternate tiles, one's epilogue overlapping the
 *              other's main loop): mid-size problems, short k;
 *   COOP_192   128 x 192 x 64, cluster 2 x 1, cooperative: where 256-wide
 *              tiles leave SMs idle (768 output features: 96 tiles for 132
 *              SMs), f16/bf16 D only;
 * (docs/gemm.md has the configurations that were measured and dropped). */
enum { GK_SM90_COOP_256 = 0, GK_SM90_PINGPONG = 1, GK_SM90_COOP_192 = 2, GK_SM90_NCONFIGS = 3 };

typedef struct gk_sm90_problem {
  int ab_dtype, cd_dtype; /* gko_dtype_t: F16 or BF16; cd ab or F32 */
  int opa, opb, act;      /* act: 0 none, 1 ReLU, 2 GELU-erf, 3 GELU-tanh */
  int64_t m, n, k, batch;
  int64_t lda, ldb, ldc, ldd, stride_a, stride_b, stride_c, stride_d, stride_bias;
  int device, sm_count;   /* the persistent scheduler's grid */
} gk_sm90_problem;

/* One kernel (type pair x layout x configuration): plan-time setup and
 * launch, as gk_sm90_setup and gk_sm90_launch (which dispatch to it). */
typedef struct gk_sm90_entry {
  gko_status_t (*setup)(const gk_sm90_problem *p, size_t *ws_bytes);
  gko_status_t (*launch)(const gk_sm90_problem *p, float alpha, float beta, const void *a,
                         const void *b, const void *c, void *d, const void *bias, void *ws,
                         void *stream);
} gk_sm90_entry;
/* The tables of the instantiation files, [configuration][opa * 2 + opb]
 * (an entry of NULLs: not built). */
extern const gk_sm90_entry gk_sm90_f16_f16[GK_SM90_NCONFIGS][4];
extern const gk_sm90_entry gk_sm90_f16_f32[GK_SM90_NCONFIGS][4];
extern const gk_sm90_entry gk_sm90_bf16_bf16[GK_SM90_NCONFIGS][4];
extern const gk_sm90_entry gk_sm90_bf16_f32[GK_SM90_NCONFIGS][4];
/* kernels/gemm_sm90_f16.cu: CUTLASS's version, "major.minor.patch". */
extern const char gk_sm90_cutlass[];

/* Nonzero when this build has the kernels (sm_90a code). */
int gk_sm90_built(void);
/* The CUTLASS version the kernels were built with ("4.2.0"), "" if none. */
const char *gk_sm90_cutlass_version(void);
/* Plan time: whether configuration cfg can run p (CUTLASS's
 * can_implement: TMA's 16-byte rule for leading dimensions, strides and
 * the contiguous extents), the workspace it needs (bytes), and the
 * kernel's shared-memory limit set for the current device.  NOT_SUPPORTED
 * with the reason in the detail, CUDA_ERROR. */
gko_status_t gk_sm90_setup(const gk_sm90_problem *p, int cfg, size_t *ws_bytes);
/* Enqueues the GEMM (cfg set up for p before).  c NULL: beta ignored and C
 * not read; bias NULL: none.  a, b, c, d 16-byte aligned; ws at least the
 * setup's bytes, 16-byte aligned. */
gko_status_t gk_sm90_launch(const gk_sm90_problem *p, int cfg, float alpha, float beta,
                            const void *a, const void *b, const void *c, void *d,
                            const void *bias, void *ws, void *stream);

#ifdef __cplusplus
}
#endif

#endif /* GK_KERNELS_GEMM_SM90_H */
