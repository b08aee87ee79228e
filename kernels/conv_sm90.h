/* conv_sm90.h -- the interface of gko's Hopper implicit-GEMM convolution
 * (kernels/conv_sm90*.cu): CUTLASS's sm90 forward-convolution collective
 * (the activation tile gathered by TMA's im2col mode, wgmma, one producer
 * and one consumer warp group) with gko's epilogue fused:
 *   y[n,p,q,k] = act(alpha * sum_{r,s,c} x[n, p*sh - ph + r*dh,
 *                                          q*sw - pw + s*dw, c] * w[k,r,s,c]
 *                    + bias[k] + beta * z[n,p,q,k])
 * x NHWC, w KRSC, y and z NHWK, all dense; one group.  The GEMM view:
 * M = N*OH*OW output pixels, N = K output channels, K = R*S*C.
 * Compiled for sm_90a only; without it (gk_sm90_built() == 0) nothing runs. */
#ifndef GK_KERNELS_CONV_SM90_H
#define GK_KERNELS_CONV_SM90_H

#include <stddef.h>
#include <stdint.h>

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The kernel configurations (tile pixels x channels x reduction step);
 * src/conv_implicit.c has the rule.  CUTLASS 4.2's conv kernel, one CTA
 * of a producer and a consumer warp group per tile, 4 stages, two CTAs
 * per SM (for problems of few tiles):
 *   64x128, 64x64;
 * and the same mainloop under CUTLASS's persistent ping-pong GEMM kernel
 * (kernels/conv_sm90_pingpong.cuh: one CTA per SM, a producer and two
 * consumer warp groups taking turns, each with its own tile; stages from
 * the shared memory the epilogue leaves):
 *   PP_128x64, PP_128x128, and PP_128x128_C12 in clusters of 1 x 2 CTAs
 *   (two channel tiles) sharing each pixel tile's load (TMA multicast). */
enum {
  GK_CONV_SM90_64x128 = 0,
  GK_CONV_SM90_64x64 = 1,
  GK_CONV_SM90_PP_128x64 = 2,
  GK_CONV_SM90_PP_128x128 = 3,
  GK_CONV_SM90_PP_128x128_C12 = 4,
  GK_CONV_SM90_NCONFIGS = 5
};

typedef struct gk_conv_sm90_problem {
  int dtype; /* gko_dtype_t: F16 or BF16, of x, w, bias, z and y */
  int act;   /* 0 none, 1 ReLU, 2 GELU-erf, 3 GELU-tanh */
  int n, h, w, c, k, r, s, oh, ow;
  int pad_h, pad_w, pad_h_end, pad_w_end, stride_h, stride_w, dil_h, dil_w;
  int device, sm_count; /* the persistent kernels' grid */
} gk_conv_sm90_problem;

typedef struct gk_conv_sm90_entry {
  gko_status_t (*setup)(const gk_conv_sm90_problem *p);
  gko_status_t (*launch)(const gk_conv_sm90_problem *p, float alpha, float beta, const void *x,
                         const void *w, const void *z, void *y, const void *bias, void *stream);
} gk_conv_sm90_entry;
/* The instantiation files' tables, by configuration (NULLs: not built):
 * CUTLASS's conv kernel (configurations 0-1) and the ping-pong ones (2-4). */
#define GK_CONV_SM90_NCONV GK_CONV_SM90_PP_128x64
extern const gk_conv_sm90_entry gk_conv_sm90_f16[GK_CONV_SM90_NCONV];
extern const gk_conv_sm90_entry gk_conv_sm90_bf16[GK_CONV_SM90_NCONV];
extern const gk_conv_sm90_entry gk_conv_sm90_pp_f16[GK_CONV_SM90_NCONFIGS - GK_CONV_SM90_NCONV];
extern const gk_conv_sm90_entry gk_conv_sm90_pp_bf16[GK_CONV_SM90_NCONFIGS - GK_CONV_SM90_NCONV];

/* Plan time: whether configuration cfg can run p (CUTLASS's can_implement:
 * TMA's 16-byte rule for C and K, its im2col limits on padding, filter
 * extent and corners, M below 2^31), and the kernel's shared-memory limit
 * set for the current device.  NOT_SUPPORTED with the reason in the
 * detail, CUDA_ERROR.  The kernels need no workspace. */
gko_status_t gk_conv_sm90_setup(const gk_conv_sm90_problem *p, int cfg);
/* Enqueues the convolution (cfg set up for p before).  z NULL: beta
 * ignored and z not read; bias NULL: none.  x, w, z, y and bias 16-byte
 * aligned; z may be y itself (each element is read before it is written). */
gko_status_t gk_conv_sm90_launch(const gk_conv_sm90_problem *p, int cfg, float alpha, float beta,
                                 const void *x, const void *w, const void *z, void *y,
                                 const void *bias, void *stream);

#ifdef __cplusplus
}
#endif

#endif /* GK_KERNELS_CONV_SM90_H */
