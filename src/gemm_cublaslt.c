/* gemm_cublaslt.c -- the cuBLASLt backend of gko's GEMM: its plan.
 *
 * cuBLASLt (NVIDIA's cublasLtMatmul) is column-major.  gemm_desc.c has
 * already turned the problem into its "lt view": a row-major D = op(A) op(B)
 * is the column-major D^T = op(B)^T op(A)^T, i.e. the same memory with the
 * operands swapped (never CUBLASLT_ORDER_ROW, which the bias epilogue
 * rejects).
 *
 * Plan time (host only), each step deciding into an lt_choice: types and
 * compute type; which part of the epilogue cuBLASLt fuses and which part
 * gko's elementwise pass applies afterwards; whether to copy A and/or B
 * into aligned, zero-padded operands first (the padding rule,
 * lt_pad_pays); the configurations to ask cuBLASLt's heuristic about
 * (gemm_cublaslt_query.c), in order of preference; the first one it has an
 * algorithm for.  Zero results make the plan try the next configuration
 * (unfused, padded or not) and end in NOT_SUPPORTED with the list of what
 * was tried.  lt_describe then gives the plan's account of the choice.
 * Execute: gemm_cublaslt_exec.c. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cublasLt.h>

#include "gemm_cublaslt.h"

static const uint64_t kMiB = 1024 * 1024;
/* fixed cost of one padding copy (launch + tail), expressed in bytes of
 * copy traffic (measured: docs/gemm.md, "Padding") */
static const double kPadFixedBytes = 8.0 * 1024 * 1024;

/* What lt_plan decides, step by step, and what lt_describe needs for its
 * account of it. */
typedef struct lt_choice {
  /* the epilogue: what cuBLASLt fuses when it can, what gko's pass does */
  int has_bias, act;
  int32_t bias_align; /* promised, per batch */
  int32_t fused_ep;   /* cublasLtEpilogue_t */
  int post_bias, post_act;
  /* padding */
  int32_t align_a, align_b, align_c, align_d; /* promised, per batch */
  int k_odd;      /* k is not a multiple of 16 bytes */
  int ld_mask;    /* operands whose leading dimension or base (with batch stride) is off */
  int fix_kpad;   /* the copies that fix the shape with k rounded up, */
  int fix_keep;   /* with k kept (LT_KEEP_K), */
  int fix_mask;   /* and the preferred of the two */
  int pad_mask;   /* the padding chosen */
  double copy, saved; /* the padding rule: bytes copied, copy time saved (in bytes) */
  int ncopies, pays;
  /* the configurations asked about, in order, and the one chosen */
  lt_config cand[6];
  int ncand, chosen;
  int skipped;          /* the chosen padding's copies exceed MAX_WORKSPACE */
  size_t skipped_bytes; /* those copies */
  /* the algorithm's configuration */
  int32_t algo_id;
  uint32_t tile, stages, splitk, swizzle;
} lt_choice;

/* ---- helpers ------------------------------------------------------------------ */

static cudaDataType_t lt_type(int dtype) {
  switch (dtype) {
    case GKO_DTYPE_F32: return CUDA_R_32F;
    case GKO_DTYPE_F16: return CUDA_R_16F;
    case GKO_DTYPE_F8E4M3: return CUDA_R_8F_E4M3;
    case GKO_DTYPE_F8E5M2: return CUDA_R_8F_E5M2;
  }
  return CUDA_R_16BF;
}

static const struct {
  int32_t ep;
  const char *name;
} kLtEpilogueNames[] = {
    {CUBLASLT_EPILOGUE_DEFAULT, "none"},   {CUBLASLT_EPILOGUE_RELU, "RELU"},
    {CUBLASLT_EPILOGUE_BIAS, "BIAS"},      {CUBLASLT_EPILOGUE_RELU_BIAS, "RELU_BIAS"},
    {CUBLASLT_EPILOGUE_GELU, "GELU(tanh)"}, {CUBLASLT_EPILOGUE_GELU_BIAS, "GELU_BIAS(tanh)"}};

static const char *lt_epilogue_name(int ep) {
  for (size_t i = 0; i < sizeof kLtEpilogueNames / sizeof kLtEpilogueNames[0]; i++)
    if (kLtEpilogueNames[i].ep == ep) return kLtEpilogueNames[i].name;
  return "?";
}

static const char *lt_act_name(int act) {
  static const char *const n[4] = {"none", "ReLU", "GELU-erf", "GELU-tanh"};
  return act >= 0 && act < 4 ? n[act] : "?";
}

/* cuBLASLt's epilogue for bias yes/no and activation 0 none, 1 ReLU, 3
 * GELU-tanh (GELU-erf is never fused here). */
static int32_t lt_epilogue(int bias, int act) {
  if (act == 1) return bias ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_RELU;
  if (act == 3) return bias ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_GELU;
  return bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
}

/* ---- the padding rule ------------------------------------------------------------ */

/* Padding pays when the time the aligned product saves exceeds the copies'
 * cost.  In bytes of copy traffic (the GPU's copy bandwidth cancels out):
 *   unaligned product:  F * s / R      aligned product: F / R
 *   copies:             bytes read + written + kPadFixedBytes per copy
 * with F = 2 m n k batch, R the Tensor-Core rate in FLOP per byte of copy
 * bandwidth (the machine balance) and s the slowdown of cuBLASLt's kernels
 * for unaligned operands.  Pad iff F (s - 1) / R > copies.  R and s per
 * arithmetic (f16/bf16, TF32, full f32): measured: docs/gemm.md, "Padding"
 * (full f32 an estimate). */
static int lt_pad_pays(const gk_gemm_problem *p, double copy_bytes, int ncopies,
                       double *saved_out) {
  double R, s;
  if (p->ab_dtype != GKO_DTYPE_F32) {
    R = 150;
    s = 4.5;
  } else if (p->compute == GKO_GEMM_COMPUTE_TF32) {
    R = 75;
    s = 2.5;
  } else {
    R = 12;
    s = 1.3;
  }
  double flops = 2.0 * (double)p->m * (double)p->n * (double)p->k * (double)p->batch;
  double saved = flops * (s - 1.0) / R;
  *saved_out = saved;
  return saved > copy_bytes + ncopies * kPadFixedBytes;
}

/* Describes the padded copy of an operand stored (column-major) as
 * k x outer (k_is_rows) or outer x k: k grows to k_pad with zeros, the
 * leading dimension to a multiple of g elements (16 bytes). */
static void lt_operand_init(lt_operand *o, int k_is_rows, int64_t outer, int64_t k,
                            int64_t k_pad, int64_t ld, int64_t stride, int64_t batch, int g,
                            int es) {
  o->rows = k_is_rows ? k : outer;
  o->cols = k_is_rows ? outer : k;
  o->ld = ld;
  o->stride = stride;
  int64_t rows_pad = k_is_rows ? k_pad : o->rows;
  if (rows_pad < 1) rows_pad = 1;
  /* the operand itself fits int64 bytes (gemm_desc.c checks its extent), but
   * rounding its rows up to g may not: such an operand is never padded
   * (sizes saturate, overflow set) */
  o->overflow = rows_pad > INT64_MAX - g;
  o->ld_pad = o->overflow ? rows_pad : gk_round_up(rows_pad, g);
  o->cols_pad = k_is_rows ? o->cols : k_pad;
  o->batch_pad = (stride == 0 && batch > 1) ? 1 : batch;
  int64_t block = INT64_MAX;
  uint64_t bytes = 0;
  if (__builtin_mul_overflow(o->ld_pad, o->cols_pad, &block) ||
      __builtin_mul_overflow((uint64_t)block, (uint64_t)o->batch_pad, &bytes) ||
      __builtin_mul_overflow(bytes, (uint64_t)es, &bytes) || bytes > (uint64_t)INT64_MAX) {
    o->overflow = 1;
    block = INT64_MAX;
  }
  o->stride_pad = (stride == 0 && batch > 1) ? 0 : block;
  o->bytes = o->overflow ? SIZE_MAX : (size_t)bytes;
}

/* ---- plan ----------------------------------------------------------------------- */

static void lt_destroy(gko_gemm_plan_t plan) {
  free(plan->state);
  plan->state = NULL;
}

static size_t lt_total_ws(const lt_state *st, const lt_config *cfg, uint64_t lt_ws,
                          size_t *off_b, size_t *off_ws) {
  const int keep = (cfg->padded & LT_KEEP_K) != 0;
  size_t a = (cfg->padded & 1) ? gk_round256(keep ? st->pak.bytes : st->pa.bytes) : 0;
  size_t b = (cfg->padded & 2) ? gk_round256(keep ? st->pbk.bytes : st->pb.bytes) : 0;
  *off_b = a;
  *off_ws = a + b;
  size_t total = a + b + (size_t)lt_ws;
  return total ? total + 255 : 0; /* slack to align any base pointer to 256 */
}

/* Types, compute type, and cuBLASLt's default workspace budget. */
static void lt_types(lt_state *st, const gk_gemm_problem *p, int cc) {
  st->ab = lt_type(p->swap ? p->b_dtype : p->ab_dtype); /* A_l's */
  st->bt = lt_type(p->swap ? p->ab_dtype : p->b_dtype);
  st->cd = lt_type(p->cd_dtype);
  st->fp8 = gk_is_fp8(p->ab_dtype);
  st->fp8d = gk_is_fp8(p->cd_dtype);
  /* an 8-bit D takes a 16-bit C (never read: beta is 0) and a bf16 bias */
  st->ct = st->fp8d ? CUDA_R_16BF : st->cd;
  st->biast = lt_type(gk_gemm_bias_dtype(p));
  st->mode_a = p->swap ? p->scale_b_mode : p->scale_a_mode;
  st->mode_b = p->swap ? p->scale_a_mode : p->scale_b_mode;
  st->esab = (int)gko_dtype_size(p->ab_dtype);
  st->escd = (int)gko_dtype_size(p->cd_dtype);
  st->esbias = (int)gko_dtype_size(gk_gemm_bias_dtype(p));
  st->g = 16 / st->esab;
  st->compute = CUBLAS_COMPUTE_32F;
  st->scale = CUDA_R_32F;
  if (p->compute == GKO_GEMM_COMPUTE_TF32) st->compute = CUBLAS_COMPUTE_32F_FAST_TF32;
  if (p->compute == GKO_GEMM_COMPUTE_F16_ACCUMULATE) {
    st->compute = CUBLAS_COMPUTE_16F;
    st->scale = CUDA_R_16F;
  }
  st->lt_default_budget = (int64_t)((cc >= 90 ? 32 : 4) * kMiB);
}

/* The epilogue: what cuBLASLt fuses, what gko's pass does afterwards;
 * NOT_SUPPORTED where FUSION_REQUIRED asks for what cuBLASLt cannot fuse. */
static gko_status_t lt_split_epilogue(const lt_state *st, const gk_gemm_problem *p,
                                      lt_choice *c) {
  c->has_bias = p->epilogue & 1;
  c->act = p->epilogue >> 1;
  /* none, ReLU, GELU-tanh (cuBLASLt's GELU is the tanh form; erf is not) */
  const int act_fusable = c->act == 0 || c->act == 1 || c->act == 3;
  c->bias_align = lt_batched_align(p->alignment > st->esbias ? p->alignment : st->esbias,
                                   st->esbias, p->stride_bias, p->batch);
  /* 8-bit inputs with an f32 D: cuBLASLt's bias would be bf16, gko's is f32 */
  const int bias_type_fusable = !(st->fp8 && p->cd_dtype == GKO_DTYPE_F32);
  const int bias_fusable =
      c->has_bias && p->bias_on_rows && c->bias_align >= 16 && bias_type_fusable;
  if (st->fp8d) { /* nothing can follow the quantization */
    const char *no = !act_fusable                         ? "GELU-erf"
                     : p->fusion == GKO_GEMM_FUSION_NEVER ? "GKO_GEMM_FUSION_NEVER"
                     : c->has_bias && !p->bias_on_rows    ? "a column-major D's bias"
                     : c->has_bias && c->bias_align < 16  ? "a bias below 16-byte alignment"
                                                          : NULL;
    if (no)
      return gk_fail(GKO_STATUS_NOT_SUPPORTED,
                     "an 8-bit D (%s) needs the whole epilogue fused into cuBLASLt, which "
                     "cannot take %s (gko's pass cannot follow the quantization)",
                     gk_dtype_name(p->cd_dtype), no);
  }
  if (p->fusion == GKO_GEMM_FUSION_REQUIRED) {
    if (!act_fusable)
      return gk_fail(GKO_STATUS_NOT_SUPPORTED,
                     "GKO_GEMM_FUSION_REQUIRED: cuBLASLt cannot fuse GELU-erf (its GELU "
                     "epilogue is the tanh form); use GKO_GEMM_FUSION_AUTO (GEMM + gko's GELU "
                     "pass) or GELU_TANH");
    if (c->has_bias && !p->bias_on_rows)
      return gk_fail(GKO_STATUS_NOT_SUPPORTED,
                     "GKO_GEMM_FUSION_REQUIRED: a column-major D adds the bias along rows of "
                     "cuBLASLt's output, which its bias epilogue cannot do; use row-major or "
                     "GKO_GEMM_FUSION_AUTO");
    if (c->has_bias && c->bias_align < 16)
      return gk_fail(GKO_STATUS_NOT_SUPPORTED,
                     "GKO_GEMM_FUSION_REQUIRED: the fused bias needs 16-byte alignment but the "
                     "plan promises %d bytes (GKO_GEMM_ATTR_ALIGNMENT, STRIDE_BIAS)",
                     (int)c->bias_align);
    if (c->has_bias && !bias_type_fusable)
      return gk_fail(GKO_STATUS_NOT_SUPPORTED,
                     "GKO_GEMM_FUSION_REQUIRED: with 8-bit inputs and an f32 D cuBLASLt's "
                     "fused bias is bf16, gko's is f32 (gko's pass adds it: FUSION_AUTO)");
  }
  if (p->fusion == GKO_GEMM_FUSION_NEVER || (c->has_bias && !bias_fusable)) {
    c->fused_ep = CUBLASLT_EPILOGUE_DEFAULT;
    c->post_bias = c->has_bias;
    c->post_act = c->act;
  } else {
    c->fused_ep = lt_epilogue(c->has_bias, act_fusable ? c->act : 0);
    c->post_bias = 0;
    c->post_act = act_fusable ? 0 : c->act;
  }
  return GKO_STATUS_SUCCESS;
}

/* The layouts of A_l, B_l (as given and padded), C and D, and the padded
 * operands' sizes. */
static gko_status_t lt_init_layouts(lt_state *st, const gk_gemm_problem *p) {
  cublasStatus_t cs;
  const int64_t ar = p->opa_l ? p->k : p->ml, ac = p->opa_l ? p->ml : p->k;
  const int64_t br = p->opb_l ? p->nl : p->k, bc = p->opb_l ? p->k : p->nl;
  st->k_pad = gk_round_up(p->k, st->g);
  /* A_l is stored ml x k (op N) or k x ml (op T); B_l k x nl (N) or nl x k */
  lt_operand_init(&st->pa, p->opa_l, p->ml, p->k, st->k_pad, p->lda_l, p->stride_a_l, p->batch,
                  st->g, st->esab);
  lt_operand_init(&st->pb, !p->opb_l, p->nl, p->k, st->k_pad, p->ldb_l, p->stride_b_l,
                  p->batch, st->g, st->esab);
  lt_operand_init(&st->pak, p->opa_l, p->ml, p->k, p->k, p->lda_l, p->stride_a_l, p->batch,
                  st->g, st->esab);
  lt_operand_init(&st->pbk, !p->opb_l, p->nl, p->k, p->k, p->ldb_l, p->stride_b_l, p->batch,
                  st->g, st->esab);
  if ((cs = gk_lt_layout(&st->la, st->ab, ar, ac, p->lda_l, p->batch, p->stride_a_l)) ||
      (cs = gk_lt_layout(&st->lb, st->bt, br, bc, p->ldb_l, p->batch, p->stride_b_l)) ||
      (cs = gk_lt_layout(&st->lc, st->ct, p->ml, p->nl, p->ldc, p->batch, p->stride_c)) ||
      (cs = gk_lt_layout(&st->ld, st->cd, p->ml, p->nl, p->ldd, p->batch, p->stride_d)) ||
      /* the padded operands: k_pad, and k kept */
      (cs = gk_lt_layout(&st->la_pad, st->ab, p->opa_l ? st->k_pad : p->ml,
                         p->opa_l ? p->ml : st->k_pad, st->pa.ld_pad, p->batch,
                         st->pa.stride_pad)) ||
      (cs = gk_lt_layout(&st->lb_pad, st->bt, p->opb_l ? p->nl : st->k_pad,
                         p->opb_l ? st->k_pad : p->nl, st->pb.ld_pad, p->batch,
                         st->pb.stride_pad)) ||
      (cs = gk_lt_layout(&st->la_padk, st->ab, ar, ac, st->pak.ld_pad, p->batch,
                         st->pak.stride_pad)) ||
      (cs = gk_lt_layout(&st->lb_padk, st->bt, br, bc, st->pbk.ld_pad, p->batch,
                         st->pbk.stride_pad)))
    return gk_lt_fail(cs, "cublasLtMatrixLayoutInit");
  return GKO_STATUS_SUCCESS;
}

/* Padding: which operands are off, what would fix them, and whether the
 * fix pays. */
static void lt_decide_padding(const lt_state *st, const gk_gemm_problem *p, lt_choice *c) {
  const int64_t pr_a = p->alignment > st->esab ? p->alignment : st->esab;
  c->align_a = lt_batched_align(pr_a, st->esab, p->stride_a_l, p->batch);
  c->align_b = lt_batched_align(pr_a, st->esab, p->stride_b_l, p->batch);
  /* C and D: the leading dimension bounds the alignment of every column
   * after the first; cuBLASLt took the pointer's alone (a kernel with
   * 16-byte stores wrote D at ldd = n + 1, f16: misaligned address, H200,
   * 2026-12-01) */
  int64_t pr_c = p->alignment > st->escd ? p->alignment : st->escd;
  int64_t pr_d = pr_c;
  if (p->nl > 1) {
    if (gk_lowbit(p->ldc * st->escd) < pr_c) pr_c = gk_lowbit(p->ldc * st->escd);
    if (gk_lowbit(p->ldd * st->escd) < pr_d) pr_d = gk_lowbit(p->ldd * st->escd);
  }
  c->align_c = lt_batched_align(pr_c, st->escd, p->stride_c, p->batch);
  c->align_d = lt_batched_align(pr_d, st->escd, p->stride_d, p->batch);
  c->k_odd = p->k % st->g != 0;
  c->ld_mask = (p->lda_l % st->g != 0 || c->align_a < 16 ? 1 : 0) |
               (p->ldb_l % st->g != 0 || c->align_b < 16 ? 2 : 0);
  /* What fixes the shape.  k aligned: copy the misaligned operands.  k not
   * a multiple of 16 bytes: either round k up in both copies (zeros in the
   * extra k of both, so the padding adds exact zeros), or copy only the
   * misaligned operands keeping k (LT_KEEP_K): cuBLASLt's kernels need
   * 16-byte leading dimensions and bases, and on sm_80+ they take any k.
   * AUTO rounds k up: cuBLASLt's kernels for an odd k are slow even on
   * aligned copies, slower than no copy (measured: docs/gemm.md,
   * "Padding").  The k-kept form stays as the fallback. */
  const int keep_pref = 0;
  c->fix_kpad = c->k_odd ? 3 : c->ld_mask;
  c->fix_keep = c->ld_mask ? (c->ld_mask | (c->k_odd ? LT_KEEP_K : 0)) : 0;
  c->fix_mask = keep_pref ? c->fix_keep : c->fix_kpad;
  c->pad_mask = 0;
  if (p->pad == GKO_GEMM_PAD_ALWAYS) {
    c->pad_mask = 3;
  } else if (p->pad == GKO_GEMM_PAD_AUTO && c->fix_mask) {
    const int keep = (c->fix_mask & LT_KEEP_K) != 0;
    const lt_operand *oa = keep ? &st->pak : &st->pa, *ob = keep ? &st->pbk : &st->pb;
    const int64_t ar = p->opa_l ? p->k : p->ml, ac = p->opa_l ? p->ml : p->k;
    const int64_t br = p->opb_l ? p->nl : p->k, bc = p->opb_l ? p->k : p->nl;
    double copy = 0;
    if (c->fix_mask & 1)
      copy += (double)oa->bytes + (double)ar * (double)ac * st->esab * oa->batch_pad;
    if (c->fix_mask & 2)
      copy += (double)ob->bytes + (double)br * (double)bc * st->esab * ob->batch_pad;
    c->copy = copy;
    c->ncopies = (c->fix_mask & 1) + ((c->fix_mask >> 1) & 1);
    c->pays = lt_pad_pays(p, copy, c->ncopies, &c->saved);
    if (c->pays) c->pad_mask = c->fix_mask;
  }
  if (p->invariant > 0) c->pad_mask = 0; /* GKO_GEMM_ATTR_INVARIANT: one layout for every shape */
  /* gko_gemm_pad copies 16/32-bit elements; gk_lt_supports asks for aligned shapes */
  if (st->fp8) {
    c->pad_mask = c->fix_mask = c->fix_kpad = c->fix_keep = 0;
    c->k_odd = c->ld_mask = 0;
  }
}

/* The configurations to ask the heuristic about, in order of preference:
 * masks: the chosen padding first, then (AUTO only) the other way to fix
 * an odd k, then unpadded / padded as the other choice.  ALWAYS has no
 * unpadded fallback, NEVER no padded one.  Each mask fused, then (unless
 * FUSION_REQUIRED) unfused.  Autotune variants v > 0 select one mask and
 * one heuristic rank (*want_rank): v = 1 + mask index * LT_MAX_RESULTS +
 * rank. */
static gko_status_t lt_candidates(gko_gemm_plan_t plan, const lt_state *st, lt_choice *c,
                                  int *want_rank) {
  const gk_gemm_problem *p = &plan->p;
  int masks[3], nmask = 0;
  masks[nmask++] = c->pad_mask;
  if (p->pad == GKO_GEMM_PAD_AUTO && p->invariant <= 0) {
    const int alt[3] = {c->k_odd ? (c->pad_mask == c->fix_keep ? c->fix_kpad : c->fix_keep) : 0,
                        c->pad_mask ? 0 : c->fix_mask, c->k_odd ? c->fix_kpad : 0};
    for (int i = 0; i < 3; i++) {
      int dup = 0;
      for (int j = 0; j < nmask; j++) dup |= masks[j] == alt[i];
      if (!dup && (alt[i] != 0 || c->pad_mask != 0) && nmask < 3) masks[nmask++] = alt[i];
    }
  }
  int want_mask = -1;
  *want_rank = 0;
  if (plan->variant > 0) {
    int mi = (plan->variant - 1) / LT_MAX_RESULTS;
    *want_rank = (plan->variant - 1) % LT_MAX_RESULTS;
    if (mi >= nmask)
      return gk_fail(GKO_STATUS_NOT_SUPPORTED, "cuBLASLt: no variant %d", plan->variant);
    want_mask = masks[mi];
  }
  c->ncand = 0;
  const int c_is_d = p->ldc == p->ldd && p->stride_c == p->stride_d && !st->fp8d;
  for (int mi = 0; mi < nmask; mi++) {
    const int mask = masks[mi];
    if (want_mask >= 0 && mask != want_mask) continue;
    const int keep = (mask & LT_KEEP_K) != 0;
    const lt_operand *oa = keep ? &st->pak : &st->pa, *ob = keep ? &st->pbk : &st->pb;
    if (((mask & 1) && oa->overflow) || ((mask & 2) && ob->overflow)) continue;
    size_t pb = 0;
    if (mask & 1) pb += gk_round256(oa->bytes);
    if (mask & 2) pb += gk_round256(ob->bytes);
    int64_t budget = st->lt_default_budget;
    if (p->max_workspace >= 0) {
      int64_t left = p->max_workspace - (int64_t)pb - 255;
      if (left < 0) {
        if (mask) {
          if (mi == 0) {
            c->skipped = 1;
            c->skipped_bytes = pb;
          }
          continue;
        }
        left = 0;
      }
      if (left < budget) budget = left;
    }
    for (int fuse = 0; fuse < 2; fuse++) {
      /* (an 8-bit D has no unfused fallback: gko's pass cannot follow it) */
      if (fuse == 1 && (c->fused_ep == CUBLASLT_EPILOGUE_DEFAULT ||
                        p->fusion == GKO_GEMM_FUSION_REQUIRED || st->fp8d))
        break;
      lt_config *cf = &c->cand[c->ncand++];
      memset(cf, 0, sizeof *cf);
      cf->padded = mask;
      cf->epilogue = fuse ? CUBLASLT_EPILOGUE_DEFAULT : c->fused_ep;
      cf->c_is_d = c_is_d;
      cf->align_a = (mask & 1) ? lt_batched_align(256, st->esab, oa->stride_pad, oa->batch_pad)
                               : c->align_a;
      cf->align_b = (mask & 2) ? lt_batched_align(256, st->esab, ob->stride_pad, ob->batch_pad)
                               : c->align_b;
      /* an 8-bit D's C is never read: A_l stands in (gemm_cublaslt_exec.c) */
      cf->align_c = st->fp8d ? 16 : c_is_d ? c->align_d : c->align_c;
      /* an 8-bit D's algorithm is chosen with amax computed, so that an
       * execute with amax_d runs the plan's own algorithm */
      cf->amax = st->fp8d;
      cf->align_d = c->align_d;
      cf->align_bias = (cf->epilogue & LT_EP_BIAS_BIT) ? c->bias_align : 0;
      cf->max_ws = (uint64_t)budget;
    }
  }
  /* (k-padded masks are 3 whenever k is odd: a k_pad layout never meets an
   * unpadded operand of the original k) */
  return GKO_STATUS_SUCCESS;
}

/* "[padded A+B (k kept), epilogue BIAS, align A/B/C/D 16/16/16/16], ..."
 * for cand[0..n). */
static void lt_tried(const gk_gemm_problem *p, const lt_config *cand, int n, char *tried,
                     size_t cap) {
  const char *an = p->swap ? "B" : "A", *bn = p->swap ? "A" : "B"; /* user names of A_l, B_l */
  tried[0] = '\0';
  for (int i = 0; i < n; i++) {
    const int pm = cand[i].padded & 3;
    gk_strappendf(tried, cap, "%s[%s%s%s, epilogue %s, align A/B/C/D %d/%d/%d/%d]",
                  tried[0] ? ", " : "", pm ? "padded " : "",
                  pm == 3 ? "A+B" : pm == 1 ? an : pm == 2 ? bn : "unpadded",
                  (cand[i].padded & LT_KEEP_K) ? " (k kept)" : "",
                  lt_epilogue_name(cand[i].epilogue), cand[i].align_a, cand[i].align_b,
                  cand[i].align_c, cand[i].align_d);
  }
}

/* The first configuration cuBLASLt has an algorithm for (its result
 * #want_rank); NOT_SUPPORTED with the list of what was tried when none. */
static gko_status_t lt_choose(gko_gemm_plan_t plan, lt_state *st, lt_choice *c, int want_rank) {
  const gk_gemm_problem *p = &plan->p;
  for (int i = 0; i < c->ncand; i++) {
    lt_value v;
    int32_t rank[LT_MAX_RESULTS];
    gko_status_t s = gk_lt_query_ranked(plan, &c->cand[i], &v, rank);
    if (s) return s;
    if (v.found && want_rank < v.count) {
      c->chosen = i;
      st->cfg = c->cand[i];
      st->algo = v.algo[want_rank];
      st->algo_ws = v.ws[want_rank];
      st->rank = want_rank;
      st->count = v.count;
      st->ref_rank = rank[want_rank];
      return GKO_STATUS_SUCCESS;
    }
    if (v.found && plan->variant > 0)
      return gk_fail(GKO_STATUS_NOT_SUPPORTED, "cuBLASLt: no variant %d", plan->variant);
  }
  char tried[384];
  lt_tried(p, c->cand, c->ncand, tried, sizeof tried);
  return gk_fail(GKO_STATUS_NOT_SUPPORTED,
                 "cuBLASLt has no algorithm for this GEMM (m = %lld, n = %lld, k = %lld, "
                 "batch = %lld, types %d/%d, compute %d); tried %s",
                 (long long)p->m, (long long)p->n, (long long)p->k, (long long)p->batch,
                 p->ab_dtype, p->cd_dtype, p->compute, tried);
}

/* ---- the plan's account ------------------------------------------------------------ */

/* Why the operands are (not) padded: what is off, and the rule that
 * decided. */
static void lt_pad_account(const gk_gemm_problem *p, const lt_state *st, const lt_choice *c,
                           char *pad_why, size_t cap) {
  const char *an = p->swap ? "B" : "A", *bn = p->swap ? "A" : "B"; /* user names of A_l, B_l */
  const char *lda_name = p->swap ? "ldb" : "lda", *ldb_name = p->swap ? "lda" : "ldb";
  char reason[160] = "";
  if (c->k_odd) gk_strappendf(reason, sizeof reason, "k = %lld %% %d != 0", (long long)p->k, st->g);
  if (p->lda_l % st->g)
    gk_strappendf(reason, sizeof reason, "%s%s = %lld %% %d != 0", reason[0] ? ", " : "",
                  lda_name, (long long)p->lda_l, st->g);
  if (p->ldb_l % st->g)
    gk_strappendf(reason, sizeof reason, "%s%s = %lld %% %d != 0", reason[0] ? ", " : "",
                  ldb_name, (long long)p->ldb_l, st->g);
  if (c->align_a < 16)
    gk_strappendf(reason, sizeof reason, "%s%s %d-byte aligned", reason[0] ? ", " : "", an,
                  (int)c->align_a);
  if (c->align_b < 16)
    gk_strappendf(reason, sizeof reason, "%s%s %d-byte aligned", reason[0] ? ", " : "", bn,
                  (int)c->align_b);
  pad_why[0] = '\0';
  if (p->pad == GKO_GEMM_PAD_ALWAYS) {
    snprintf(pad_why, cap, "GKO_GEMM_PAD_ALWAYS%s%s", reason[0] ? "; " : "", reason);
  } else if (p->pad == GKO_GEMM_PAD_AUTO && c->fix_mask) {
    const int keep = (c->fix_mask & LT_KEEP_K) != 0;
    snprintf(pad_why, cap,
             "%s; padding rule: saves ~%.3g MB of copy time, costs %.3g MB copied + %d x "
             "%.3g MB fixed -> %s%s",
             reason, c->saved / 1e6, c->copy / 1e6, c->ncopies, kPadFixedBytes / 1e6,
             c->pays ? "pad" : "no padding",
             c->pays && keep ? " (only the misaligned operand, k kept)" : "");
  } else if (p->pad == GKO_GEMM_PAD_AUTO && c->k_odd) {
    snprintf(pad_why, cap, "%s; leading dimensions and bases aligned: k kept", reason);
  } else if (p->pad == GKO_GEMM_PAD_NEVER && (c->k_odd || c->ld_mask)) {
    snprintf(pad_why, cap, "%s; GKO_GEMM_PAD_NEVER", reason);
  }
  if (p->invariant > 0)
    snprintf(pad_why, cap, "%s%sGKO_GEMM_ATTR_INVARIANT: no padded copies", reason,
             reason[0] ? "; " : "");
}

/* The plan's account of c into plan->why. */
static void lt_describe(gko_gemm_plan_t plan, const lt_state *st, const lt_choice *c) {
  const gk_gemm_problem *p = &plan->p;
  const char *an = p->swap ? "B" : "A", *bn = p->swap ? "A" : "B"; /* user names of A_l, B_l */
  if (c->skipped)
    GK_WHY(plan, "(padding skipped: %zu bytes of copies exceed GKO_GEMM_ATTR_MAX_WORKSPACE) ",
           c->skipped_bytes);
  char pad_why[384];
  lt_pad_account(p, st, c, pad_why, sizeof pad_why);
  const char *tn = gk_gemm_tile_name((int)c->tile);
  char tbuf[24];
  if (!tn) {
    snprintf(tbuf, sizeof tbuf, "#%u", c->tile);
    tn = tbuf;
  }
  GK_WHY(plan, "algo %d tile %s stages-id %u splitK %u swizzle %u (heuristic #%d of %d%s); "
         "compute %s; ",
         (int)c->algo_id, tn, c->stages, c->splitk, c->swizzle, st->rank + 1, st->count,
         c->chosen ? ", after fallbacks" : "",
         st->compute == CUBLAS_COMPUTE_32F_FAST_TF32 ? "TF32 (f32 accumulate)"
         : st->compute == CUBLAS_COMPUTE_16F         ? "f16 accumulate"
                                                     : "f32 accumulate");
  if (p->swap) GK_WHY(plan, "row-major as D^T = op(B)^T op(A)^T; ");
  if (p->invariant > 0)
    GK_WHY(plan, "invariant: the algorithm of a reference problem with %lld %s and one "
           "batch, no split-K (its choice #%d; accepted for this shape); ",
           (long long)p->invariant, p->swap ? "rows" : "columns", (int)st->ref_rank + 1);
  if (p->epilogue)
    GK_WHY(plan, "epilogue: cuBLASLt %s%s%s%s%s; ", lt_epilogue_name(st->cfg.epilogue),
           (st->post_bias || st->post_act) ? ", then gko's pass " : "",
           st->post_bias ? "bias" : "", st->post_bias && st->post_act ? "+" : "",
           st->post_act ? lt_act_name(st->post_act) : "");
  if (st->cfg.padded & 3) {
    const int pm = st->cfg.padded & 3, keep = (st->cfg.padded & LT_KEEP_K) != 0;
    const char *who = pm == 3 ? "A and B" : pm == 1 ? an : bn;
    const lt_operand *oa = keep ? &st->pak : &st->pa, *ob = keep ? &st->pbk : &st->pb;
    GK_WHY(plan, "%s copied to padded operands (k = %lld%s, lds %lld/%lld): %s; ", who,
           (long long)(keep ? p->k : st->k_pad), keep && c->k_odd ? " kept" : "",
           (long long)((pm & 1) ? oa->ld_pad : p->lda_l),
           (long long)((pm & 2) ? ob->ld_pad : p->ldb_l), pad_why);
  } else if (pad_why[0]) {
    GK_WHY(plan, "not padded: %s; ", pad_why);
  }
  if (c->chosen) {
    char tried[384];
    lt_tried(p, c->cand, c->chosen, tried, sizeof tried);
    GK_WHY(plan, "no algorithm for: %s; ", tried);
  }
  GK_WHY(plan, "workspace %zu bytes (cuBLASLt %llu of budget %llu)", plan->ws_bytes,
         (unsigned long long)st->algo_ws, (unsigned long long)st->cfg.max_ws);
}

/* ---- plan ------------------------------------------------------------------------ */

/* Every step of the plan, into st and c; the caller frees st on failure. */
static gko_status_t lt_decide(gko_gemm_plan_t plan, lt_state *st, lt_choice *c) {
  const gk_gemm_problem *p = &plan->p;
  gko_status_t s;
  int want_rank;
  lt_types(st, p, plan->handle->cc);
  if ((s = lt_split_epilogue(st, p, c)) || (s = lt_init_layouts(st, p))) return s;
  lt_decide_padding(st, p, c);
  if ((s = lt_candidates(plan, st, c, &want_rank)) || (s = lt_choose(plan, st, c, want_rank)))
    return s;
  /* the unfused fallback: gko's pass does the whole epilogue */
  if (st->cfg.epilogue == CUBLASLT_EPILOGUE_DEFAULT && c->fused_ep != CUBLASLT_EPILOGUE_DEFAULT) {
    c->post_bias = c->has_bias;
    c->post_act = c->act;
  }
  st->post_bias = c->post_bias;
  st->post_act = c->post_act;
  if (st->fp8d && (st->post_bias || st->post_act))
    return gk_fail(GKO_STATUS_INTERNAL, "cuBLASLt plan of an 8-bit D with gko's pass after it");
  plan->ws_bytes = lt_total_ws(st, &st->cfg, st->algo_ws, &st->off_b, &st->off_ws);
  /* the descriptor of this configuration, reused by execute when it needs
   * no bias pointer */
  cublasStatus_t cs = gk_lt_desc(&st->od, st, p, st->cfg.epilogue, NULL, NULL);
  if (cs) return gk_lt_fail(cs, "cublasLtMatmulDescInit/SetAttribute");
  /* the algorithm's configuration, for the account */
  size_t w;
  c->algo_id = -1;
  cublasLtMatmulAlgoConfigGetAttribute(&st->algo, CUBLASLT_ALGO_CONFIG_ID, &c->algo_id,
                                       sizeof c->algo_id, &w);
  cublasLtMatmulAlgoConfigGetAttribute(&st->algo, CUBLASLT_ALGO_CONFIG_TILE_ID, &c->tile,
                                       sizeof c->tile, &w);
  cublasLtMatmulAlgoConfigGetAttribute(&st->algo, CUBLASLT_ALGO_CONFIG_STAGES_ID, &c->stages,
                                       sizeof c->stages, &w);
  cublasLtMatmulAlgoConfigGetAttribute(&st->algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &c->splitk,
                                       sizeof c->splitk, &w);
  cublasLtMatmulAlgoConfigGetAttribute(&st->algo, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING,
                                       &c->swizzle, sizeof c->swizzle, &w);
  return GKO_STATUS_SUCCESS;
}

static gko_status_t lt_plan(gko_gemm_plan_t plan) {
  const gk_gemm_problem *p = &plan->p;
  if (!gk_gemm_state_lt(plan->handle->gemm))
    return gk_fail(GKO_STATUS_INTERNAL, "the handle has no cuBLASLt handle");
  /* cuBLASLt's heuristic is not safe near 2^31 in a dimension (a fuzzed
   * GEMM raised SIGFPE inside it: docs/reliability.md).  Such shapes are
   * left to the next backend. */
  if (p->ml > GK_LT_MAX_DIM || p->nl > GK_LT_MAX_DIM || p->k > GK_LT_MAX_DIM ||
      p->invariant > GK_LT_MAX_DIM)
    return gk_fail(GKO_STATUS_NOT_SUPPORTED,
                   "cuBLASLt: m = %lld, n = %lld, k = %lld (or the invariant reference %lld) "
                   "exceeds 2^30, beyond what gko hands to cuBLASLt's heuristic",
                   (long long)p->m, (long long)p->n, (long long)p->k, (long long)p->invariant);
  lt_state *st = calloc(1, sizeof *st);
  if (!st) return gk_fail(GKO_STATUS_ALLOC_FAILED, "host allocation of the cuBLASLt plan failed");
  plan->state = st;
  lt_choice c;
  memset(&c, 0, sizeof c);
  gko_status_t s = lt_decide(plan, st, &c);
  if (s) {
    free(st);
    plan->state = NULL;
    return s;
  }
  lt_describe(plan, st, &c);
  return GKO_STATUS_SUCCESS;
}

const gk_gemm_backend gk_gemm_cublaslt_backend = {
    .id = GKO_GEMM_BACKEND_CUBLASLT,
    .name = "cuBLASLt",
    .tag = "lt",
    .max_variant = 3 * LT_MAX_RESULTS, /* 1 + mask index * LT_MAX_RESULTS + rank */
    .plans_empty = 0,
    /* every type (8-bit ones under their rules); shapes beyond GK_LT_MAX_DIM
     * are declined by the plan */
    .supports = gk_lt_supports,
    .auto_first = NULL,
    .auto_first_why = NULL,
    .plan = lt_plan,
    .execute = gk_lt_execute,
    .destroy = lt_destroy,
};
