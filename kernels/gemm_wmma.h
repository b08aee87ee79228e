/* gemm_wmma.h -- the interface of gko's WMMA / mma.sync GEMM kernels
 * (kernels/gemm_wmma*.cu): the problem in the lt view, the plan-time
 * configuration, setup and launch. */
#ifndef GK_KERNELS_GEMM_WMMA_H
#define GK_KERNELS_GEMM_WMMA_H

#include <stddef.h>
#include <stdint.h>

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* gko's WMMA / mma.sync Tensor-Core GEMM (f16/bf16 inputs, f32
 * accumulation, fused epilogue) in the lt view: D (m x n, column-major) =
 * act(alpha * op(A) op(B) + beta * C + bias), A stored m x k (opa 0) or
 * k x m (opa 1) column-major, B k x n (opb 0) or n x k (opb 1); batch b at
 * base + b * stride.  Two configurations:
 *   TILED   (kernels/gemm_wmma_tiled.cu) 128 x 128 x 32 block tiles, 8
 *           warps of 64 x 32, shared-memory stages (4 with cp.async on
 *           sm_80+, else 2 with register prefetch), epilogue fused in the
 *           kernel;
 *   SKINNY  min(m, n) <= 16 (decode): the big operand W streamed once, k
 *           split `splits` ways; splits > 1 writes f32 partials to the
 *           workspace and a second kernel sums them in split order
 *           (deterministic) and applies the epilogue.  Its kernels: SKINNY
 *           proper (kernels/gemm_wmma_skinny.cu, bnw rows of W per block,
 *           with the split-k sum) and, on sm_80+ where the layout allows,
 *           DECODE (kernels/gemm_wmma_decode.cu, mma.sync on 16-byte
 *           vectors).
 * Setup and launch (these functions): kernels/gemm_wmma_launch.cu. */
enum { GK_WMMA_TILED = 0, GK_WMMA_SKINNY = 1 };
typedef struct gk_wmma_problem {
  int ab_dtype, cd_dtype; /* gko_dtype_t: F16 or BF16; cd ab or F32 */
  int opa, opb, act;      /* act: 0 none, 1 ReLU, 2 GELU-erf, 3 GELU-tanh */
  int bias_on_rows;       /* bias[i] (1) or bias[j] (0) for D(i, j) */
  int has_bias;
  int64_t m, n, k, batch;
  int64_t lda, ldb, ldc, ldd, stride_a, stride_b, stride_c, stride_d, stride_bias;
} gk_wmma_problem;
typedef struct gk_wmma_config {
  int kind;          /* GK_WMMA_TILED or GK_WMMA_SKINNY */
  int async_ok;      /* cp.async kernels are usable (sm_80+, shared memory set) */
  int bnw, bk;       /* SKINNY: rows of W per block, k per stage */
  int splits;        /* SKINNY: k splits (1: epilogue in the main kernel) */
  int64_t kchunk;    /* SKINNY: k per split, a multiple of bk */
  int stages;        /* SKINNY with cp.async: pipeline depth, 4..8 (else 2) */
  int max_stages;    /* SKINNY: the deepest the shared-memory limit allows */
  int blocks_per_sm; /* occupancy of the chosen kernel (plan time) */
  int decode;        /* SKINNY: the DECODE kernel is usable (sm_80+, X
                        k-contiguous, W k- or row-contiguous); execute takes
                        it when W and X are 16-byte vectorizable, else the
                        SKINNY configuration */
  int dsplits;       /* DECODE: k splits */
  int drows;         /* DECODE: W's rows per tile: 16, or 64 (x B only) */
  int dkw;           /* DECODE: warps per tile (1, 2, 4 or 8) */
  int dper;          /* DECODE: tiles per block (dper * dkw <= 8) */
  int dvar;          /* DECODE: kernel variant (0: min(m, n) <= 8; 1: > 8, one block
                        per SM; 2: > 8 capped at 128 registers, two per SM) */
  int64_t dkchunk;   /* DECODE: k per split, a multiple of 128 */
  int dblocks_per_sm;
  int dpdl_ok;       /* DECODE: the kernel that runs was compiled for sm_90+
                        (its griddepcontrol instructions are there) */
  int dpdl;          /* DECODE: launched with programmatic stream
                        serialization (dpdl_ok, W promised static) */
} gk_wmma_config;
/* SKINNY: 1 when n is the small dimension (W = op(A), X = op(B)^T in the lt
 * view), 0 when m is (W = op(B)^T, X = op(A)). */
static inline int gk_wmma_small_n(const gk_wmma_problem *p) {
  return p->n <= 16 && (p->m > 16 || p->m >= p->n);
}
/* Nonzero when a SKINNY problem's layout suits the DECODE kernel: k
 * contiguous in X, k or the rows contiguous in W, leading dimensions and
 * batch strides multiples of 8 elements.  No CUDA call. */
int gk_wmma_decode_layout_ok(const gk_wmma_problem *p);
/* Nonzero when a SKINNY problem's W (the operand with more rows) has k
 * contiguous (x W^T); zero when its rows are (x B). */
int gk_wmma_w_k_contiguous(const gk_wmma_problem *p);
/* SKINNY plans: fills cfg->decode, dsplits, drows, dkw, dper, dkchunk, dblocks_per_sm
 * for a device of `sms` SMs (decode = 0 where the DECODE kernel does not
 * apply or does not fit).  Sets the kernel's dynamic shared-memory limit.
 * CUDA_ERROR (detail set) when a CUDA call fails. */
gko_status_t gk_wmma_decode_config(const gk_wmma_problem *p, gk_wmma_config *cfg, int cc,
                                   int sms);
/* SKINNY: blocks per SM of the kernel cfg selects (bnw, stages, cp.async or
 * not), from the occupancy API; 0 on error (detail set). */
int gk_wmma_skinny_occupancy(const gk_wmma_problem *p, const gk_wmma_config *cfg);
/* Plan time (host): sets the kernels' dynamic shared-memory limits for the
 * current device and fills cfg->async_ok and cfg->blocks_per_sm (cfg->kind,
 * bnw, bk set by the caller).  NOT_SUPPORTED when the device cannot run
 * the kernel (bf16 before sm_80), NO_KERNEL_IMAGE / CUDA_ERROR. */
gko_status_t gk_wmma_setup(const gk_wmma_problem *p, gk_wmma_config *cfg, int cc);
/* Bytes of f32 partial sums a SKINNY configuration needs (0 if splits == 1;
 * the larger of the SKINNY and DECODE splittings). */
size_t gk_wmma_partials_bytes(const gk_wmma_problem *p, const gk_wmma_config *cfg);
/* Enqueues the GEMM.  c NULL: beta ignored and C not read; bias NULL: none.
 * ws: 16-byte-aligned partials (SKINNY with splits > 1).  Chooses the
 * cp.async path when allowed and A and B are 16-byte vectorizable, and
 * vector stores where D (and C) allow. */
gko_status_t gk_wmma_launch(const gk_wmma_problem *p, const gk_wmma_config *cfg, float alpha,
                            float beta, const void *a, const void *b, const void *c, void *d,
                            const void *bias, void *ws, void *stream);

#ifdef __cplusplus
}
#endif

#endif /* GK_KERNELS_GEMM_WMMA_H */
