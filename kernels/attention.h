/* attention.h -- the interface of kernels/attention.cu: fused scaled
 * dot-product attention over BSHD tensors (gko_attention). */
#ifndef GK_KERNELS_ATTENTION_H
#define GK_KERNELS_ATTENTION_H

#include <stdint.h>

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One validated problem, in gko_attention's terms (elements, not bytes);
 * batch, heads, seq_q >= 1, seq_k >= 0, 1 <= head_dim <= 256. */
typedef struct gk_attn_args {
  const void *q, *k, *v;
  void *o;
  const int32_t *lengths; /* NULL: seq_k keys for every batch */
  int64_t batch, heads, seq_q, seq_k, head_dim;
  int64_t ldq, ldk, ldv, ldo;
  float scale;
  int dtype; /* gko_dtype_t: F32, F16 or BF16 */
} gk_attn_args;

/* Enqueues the attention kernel on stream.  tensor != 0: the mma.sync
 * kernel (the caller has checked sm_80+, a 16-bit dtype, head_dim % 8 == 0
 * and <= 128, and 16-byte aligned pointers and rows); else the CUDA-core
 * kernel.  Returns success or CUDA_ERROR (detail set). */
gko_status_t gk_attention_launch(const gk_attn_args *a, int tensor, void *stream);

#ifdef __cplusplus
}
#endif

#endif /* GK_KERNELS_ATTENTION_H */
