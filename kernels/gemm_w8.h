/* gemm_w8.h -- the interface of gko's weight-only FP8 GEMM for decode
 * (kernels/gemm_w8.cu): D = act(alpha * scale_w * (X W^T) + beta * C +
 * bias) with few rows of 16-bit activations X against 8-bit weights W,
 * both with k contiguous.  In the kernel's terms (the lt view's skinny
 * case of kernels/gemm_wmma.h, W the operand with more rows):
 *   W(j, p) at w + j * swj + p    j < nb, FP8 (E4M3 or E5M2)
 *   X(i, p) at x + i * sxi + p    i < ns <= 16, f16 or bf16
 *   D(j, i) at d + j * sdj + i * sdi, C likewise with scj, sci;
 *   bias[j] or bias[i] (bias_on_j); scale_w one factor, or one per j. */
#ifndef GK_KERNELS_GEMM_W8_H
#define GK_KERNELS_GEMM_W8_H

#include <stddef.h>
#include <stdint.h>

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gk_w8_problem {
  int x_dtype;  /* gko_dtype_t: F16 or BF16 (X, and the MMA's inputs) */
  int w_dtype;  /* F8E4M3 or F8E5M2 */
  int cd_dtype; /* C, D, bias: x_dtype or F32 */
  int act;      /* 0 none, 1 ReLU, 2 GELU-erf, 3 GELU-tanh */
  int has_bias, bias_on_j;
  int scale_per_j; /* scale_w holds nb factors (else one) */
  int64_t nb, ns, k, batch;
  int64_t swj, sxi, sdj, sdi, scj, sci;
  int64_t bw, bx, bc, bd, bbias; /* batch strides, elements */
} gk_w8_problem;

typedef struct gk_w8_config {
  int kw;         /* warps per 16-row tile of W, each on a contiguous k range */
  int per;        /* tiles per block of 8 warps: per * kw == 8 */
  int splits;     /* k splits across blocks (> 1: f32 partials + a sum kernel) */
  int64_t kchunk; /* k per split, a multiple of 64 */
  int async_ok;   /* the cp.async ring kernel fits (execute takes it for 16-byte vectors) */
  int blocks_per_sm;
  int pdl_ok; /* the kernel that runs has sm_90 code (griddepcontrol) */
  int pdl;    /* launch with programmatic stream serialization (W static) */
  int bulk; /* the sm_90 bulk-copy kernel (ns <= 4, k >= 2048, k % 16 == 0) where vectors allow */
  int64_t bulk_grid; /* its blocks: every tile's turn on a resident block */
} gk_w8_config;

/* Whether this device can run the kernel: sm_80+ (mma.sync with bf16);
 * 0 with the reason in why[cap] otherwise.  No CUDA call. */
int gk_w8_device_ok(int cc, char *why, size_t cap);
/* The configuration for a device of `sms` SMs: kw from k, splits so that
 * about two blocks per SM run when the tiles alone would leave SMs idle.
 * CUDA_ERROR (detail set) when the occupancy query fails. */
gko_status_t gk_w8_config_for(const gk_w8_problem *p, gk_w8_config *cfg, int cc, int sms);
/* Bytes of f32 partial sums the configuration needs (0 when splits == 1). */
size_t gk_w8_partials_bytes(const gk_w8_problem *p, const gk_w8_config *cfg);
/* Enqueues the GEMM.  scale_w NULL: 1; c NULL: C not read (beta ignored);
 * bias NULL: none; ws: 16-byte-aligned partials when splits > 1.  Any
 * alignment of w and x (16-byte vectors where they allow). */
gko_status_t gk_w8_launch(const gk_w8_problem *p, const gk_w8_config *cfg, float alpha, float beta,
                          const float *scale_w, const void *w, const void *x, const void *c,
                          void *d, const void *bias, void *ws, void *stream);

#ifdef __cplusplus
}
#endif

#endif /* GK_KERNELS_GEMM_W8_H */
