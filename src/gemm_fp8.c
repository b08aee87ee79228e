/* gemm_fp8.c -- the rules of cuBLASLt's 8-bit (FP8) GEMM kernels, checked
 * before its heuristic is asked, so that a refusal names the rule instead
 * of "no algorithm".  From NVIDIA's cuBLAS documentation (cublasLtMatmul,
 * FP8): compute capability 8.9 or newer; A and B both stored with k
 * contiguous ("TN" in cuBLASLt's column-major terms); leading dimensions,
 * k and batch strides of A and B multiples of 16 elements; 16-byte-aligned
 * operands; no E5M2 x E5M2 product. */
#include <stdio.h>

#include "gemm_cublaslt.h"

int gk_lt_supports(gko_handle_t h, const gk_gemm_problem *p, char *why, size_t cap) {
  if (gk_gemm_w8(p)) {
    if (why)
      snprintf(why, cap,
               "cuBLASLt has no kernel for %s A against an 8-bit B (weight-only FP8 runs on "
               "gko's kernel: GKO_GEMM_BACKEND_AUTO or WMMA)",
               gk_dtype_name(p->ab_dtype));
    return 0;
  }
  if (!gk_is_fp8(p->ab_dtype)) return 1;
  char buf[256];
  const char *no = NULL;
  if (h->cc < 89) {
    snprintf(buf, sizeof buf,
             "8-bit Tensor-Core kernels need compute capability 8.9 or newer; this GPU is "
             "sm_%d",
             h->cc);
    no = buf;
  } else if (p->ab_dtype == GKO_DTYPE_F8E5M2 && p->b_dtype == GKO_DTYPE_F8E5M2) {
    no = "E5M2 x E5M2 has no kernel (one operand must be E4M3)";
  } else if (p->compute != GKO_GEMM_COMPUTE_DEFAULT &&
             p->compute != GKO_GEMM_COMPUTE_FP8_FAST_ACCUMULATE) {
    no = "8-bit inputs accumulate in f32 (GKO_GEMM_COMPUTE_DEFAULT or FP8_FAST_ACCUMULATE)";
  } else if (!p->opa_l || p->opb_l) {
    /* lt view: A_l must be op T (stored k x ml), B_l op N (k x nl) */
    snprintf(buf, sizeof buf,
             "both operands must be stored with k contiguous: %s needs GKO_GEMM_ATTR_TRANSA = "
             "%s and TRANSB = %s (D = A B^T with B stored n x k, for row-major); this "
             "descriptor has TRANSA = %s, TRANSB = %s (gko does not transpose 8-bit operands)",
             p->swap ? "row-major" : "column-major", p->swap ? "N" : "T", p->swap ? "T" : "N",
             p->transa ? "T" : "N", p->transb ? "T" : "N");
    no = buf;
  } else if (p->k % 16 || p->lda % 16 || p->ldb % 16) {
    snprintf(buf, sizeof buf,
             "k, lda and ldb must be multiples of 16, but k = %lld, lda = %lld, ldb = %lld",
             (long long)p->k, (long long)p->lda, (long long)p->ldb);
    no = buf;
  } else if (p->batch > 1 && (p->stride_a % 16 || p->stride_b % 16)) {
    snprintf(buf, sizeof buf,
             "the batch strides of A and B must be multiples of 16, but they are %lld and %lld",
             (long long)p->stride_a, (long long)p->stride_b);
    no = buf;
  } else if (p->alignment < 16) {
    snprintf(buf, sizeof buf,
             "the operands must be 16-byte aligned, but GKO_GEMM_ATTR_ALIGNMENT promises %lld",
             (long long)p->alignment);
    no = buf;
  } else if (p->pad == GKO_GEMM_PAD_ALWAYS) {
    no = "GKO_GEMM_PAD_ALWAYS: gko does not pad 8-bit operands";
  } else if (p->scale_a_mode != p->scale_b_mode) {
    no = "GKO_GEMM_ATTR_SCALE_A_MODE and SCALE_B_MODE must be equal (row-wise factors for "
         "both operands or for neither)";
  } else if (gk_is_fp8(p->cd_dtype) && p->scale_a_mode == GKO_SCALE_ROWWISE) {
    no = "an 8-bit D takes per-tensor factors only (GKO_SCALE_TENSOR)";
  } else if (p->cd_dtype == GKO_DTYPE_F8E5M2 && p->ab_dtype == GKO_DTYPE_F8E4M3 &&
             p->b_dtype == GKO_DTYPE_F8E4M3) {
    no = "an E5M2 D needs an E5M2 operand (E4M3 x E4M3 gives F32, F16, BF16 or E4M3)";
  }
  if (no && why) snprintf(why, cap, "cuBLASLt with 8-bit inputs: %s", no);
  return no == NULL;
}
