/* gemm_execute.c -- executing a GEMM plan: the pointer and workspace
 * checks (the device checks memoized per plan), the cases without a
 * product (k == 0 or alpha == 0: one epilogue pass over D), the hand-off to
 * the plan's backend, which only enqueues; and the one-shot gko_gemm
 * (plan, workspace, execute, free). */
#include <stdint.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "gemm.h"
#include "../kernels/gemm_epilogue.h"

static gko_status_t gk_check_ptr(const void *ptr, const char *name, size_t es, int needed,
                                 const char *why) {
  if (!needed) return GKO_STATUS_SUCCESS;
  if (!ptr) return gk_fail(GKO_STATUS_INVALID_VALUE, "%s is NULL (%s)", name, why);
  return gk_check_elem_align(ptr, name, es);
}

/* The memo: the last pointer set (and stream) whose checks passed.  A
 * try-lock guards it; a thread that finds it taken just runs the checks.
 * The same pointers again skip cudaPointerGetAttributes and the stream
 * queries (each a driver call); the current device is always checked. */
static int gk_memo_lock(gko_gemm_plan_t plan) {
  return __atomic_exchange_n(&plan->memo_lock, 1, __ATOMIC_ACQUIRE) == 0;
}
static void gk_memo_unlock(gko_gemm_plan_t plan) {
  __atomic_store_n(&plan->memo_lock, 0, __ATOMIC_RELEASE);
}

static gko_status_t gk_gemm_check_pointers(gko_gemm_plan_t plan, void *stream,
                                           const void *const *ptrs, const char *const *names) {
  int hit = 0;
  if (gk_memo_lock(plan)) {
    hit = plan->memo_valid && plan->memo_stream == stream &&
          memcmp(plan->memo_ptr, ptrs, sizeof plan->memo_ptr) == 0;
    gk_memo_unlock(plan);
  }
  if (hit) {
    int cur = -1;
    cudaError_t e = cudaGetDevice(&cur);
    if (e != cudaSuccess) return gk_cuda_fail(e, "cudaGetDevice");
    if (cur == plan->handle->device) return GKO_STATUS_SUCCESS;
    /* another device is current: the full check says why */
  }
  int unchecked = 0;
  gko_status_t s = gk_check_call_ex(plan->handle, stream, 10, ptrs, names, &unchecked);
  if (s == GKO_STATUS_SUCCESS && !unchecked && gk_memo_lock(plan)) {
    memcpy(plan->memo_ptr, ptrs, sizeof plan->memo_ptr);
    plan->memo_stream = stream;
    plan->memo_valid = 1;
    gk_memo_unlock(plan);
  }
  return s;
}

/* The 8-bit factors' own rules (before any device check); sc never NULL. */
static gko_status_t gk_check_scales(const gk_gemm_problem *p, const gk_gemm_scales *sc,
                                    float alpha, float beta) {
  const int fp8 = gk_is_fp8(p->ab_dtype), fp8d = gk_is_fp8(p->cd_dtype);
  const int empty = p->m == 0 || p->n == 0 || p->batch == 0;
  if (fp8d && beta != 0.0f)
    return gk_fail(GKO_STATUS_INVALID_VALUE,
                   "beta = %g with an 8-bit D (%s): C is not supported there (beta must be 0)",
                   (double)beta, gk_dtype_name(p->cd_dtype));
  if (fp8d && alpha == 0.0f && p->k > 0 && !empty)
    return gk_fail(GKO_STATUS_INVALID_VALUE,
                   "alpha = 0 with an 8-bit D (%s): D would be quantize(scale_d * act(bias)), "
                   "which gko's epilogue pass cannot write",
                   gk_dtype_name(p->cd_dtype));
  static const char *const nm[4] = {"scale_a", "scale_b", "scale_d", "amax_d"};
  const void *ptr[4] = {sc->a, sc->b, sc->d, sc->amax_d};
  const int w8 = gk_gemm_w8(p);
  if (w8 && (sc->a || sc->d || sc->amax_d))
    return gk_fail(GKO_STATUS_INVALID_VALUE,
                   "%s = %p on a weight-only FP8 plan (%s A, %s B): only scale_b applies "
                   "(scale_a, scale_d and amax_d must be NULL)",
                   sc->a ? "scale_a" : sc->d ? "scale_d" : "amax_d",
                   sc->a ? (const void *)sc->a : sc->d ? (const void *)sc->d
                                                       : (const void *)sc->amax_d,
                   gk_dtype_name(p->ab_dtype), gk_dtype_name(p->b_dtype));
  for (int i = 0; i < 4; i++) {
    if (ptr[i] && !fp8 && !w8)
      return gk_fail(GKO_STATUS_INVALID_VALUE,
                     "%s = %p on a plan without 8-bit inputs (AB_DTYPE = %s): every factor "
                     "must be NULL",
                     nm[i], ptr[i], gk_dtype_name(p->ab_dtype));
    /* cuBLASLt refuses factors that are not 16-byte aligned (H200, cuBLASLt
     * 13.0: CUBLAS_STATUS_NOT_SUPPORTED at the call); gko's weight-only
     * kernel reads them as floats */
    if ((uintptr_t)ptr[i] % (w8 ? sizeof(float) : 16))
      return gk_fail(GKO_STATUS_INVALID_VALUE,
                     w8 ? "%s = %p is not aligned to a float"
                        : "%s = %p is not 16-byte aligned (cuBLASLt's 8-bit kernels need it)",
                     nm[i], ptr[i]);
  }
  const int product = p->k > 0 && alpha != 0.0f && !empty; /* A, B and their factors read */
  if (product && p->scale_a_mode == GKO_SCALE_ROWWISE && !sc->a)
    return gk_fail(GKO_STATUS_INVALID_VALUE,
                   "scale_a is NULL but GKO_GEMM_ATTR_SCALE_A_MODE = GKO_SCALE_ROWWISE (m = %lld "
                   "factors needed)",
                   (long long)p->m);
  if (product && p->scale_b_mode == GKO_SCALE_ROWWISE && !sc->b)
    return gk_fail(GKO_STATUS_INVALID_VALUE,
                   "scale_b is NULL but GKO_GEMM_ATTR_SCALE_B_MODE = GKO_SCALE_ROWWISE (n = %lld "
                   "factors needed)",
                   (long long)p->n);
  if (sc->d && !fp8d)
    return gk_fail(GKO_STATUS_INVALID_VALUE,
                   "scale_d = %p but D is %s: scale_d quantizes an 8-bit D only", (void *)sc->d,
                   gk_dtype_name(p->cd_dtype));
  if (sc->amax_d && !fp8d)
    return gk_fail(GKO_STATUS_INVALID_VALUE,
                   "amax_d with a %s D: cuBLASLt computes amax only where it quantizes (an "
                   "8-bit D)",
                   gk_dtype_name(p->cd_dtype));
  if (sc->amax_d && p->k > 0 && alpha == 0.0f && !empty)
    return gk_fail(GKO_STATUS_INVALID_VALUE,
                   "amax_d with alpha = 0: gko's epilogue pass, which then writes D, does not "
                   "compute amax");
  if (sc->amax_d && p->k == 0 && !empty)
    return gk_fail(GKO_STATUS_INVALID_VALUE,
                   "amax_d with k = 0: gko's epilogue pass, which then writes D, does not "
                   "compute amax");
  return GKO_STATUS_SUCCESS;
}

gko_status_t gk_gemm_execute(gko_gemm_plan_t plan, float alpha, const void *a, const void *b,
                             float beta, const void *c, void *d, const void *bias, void *ws,
                             size_t ws_bytes, gko_stream_t stream) {
  return gk_gemm_execute_scaled(plan, alpha, a, b, beta, c, d, bias, NULL, ws, ws_bytes,
                                stream);
}

gko_status_t gk_gemm_execute_scaled(gko_gemm_plan_t plan, float alpha, const void *a,
                                    const void *b, float beta, const void *c, void *d,
                                    const void *bias, const gk_gemm_scales *sc, void *ws,
                                    size_t ws_bytes, gko_stream_t stream) {
  if (!plan) return gk_fail(GKO_STATUS_INVALID_VALUE, "plan is NULL");
  const gk_gemm_problem *p = &plan->p;
  static const gk_gemm_scales kNone = {NULL, NULL, NULL, NULL};
  if (!sc) sc = &kNone; /* gko_gemm_execute: every factor NULL */
  gko_status_t s = gk_check_scales(p, sc, alpha, beta);
  if (s) return s;
  if (p->m == 0 || p->n == 0 || p->batch == 0) {
    if (!sc->amax_d) return GKO_STATUS_SUCCESS;
    /* nothing to compute: the maximum over no elements is 0 */
    const void *ptrs[1] = {sc->amax_d};
    const char *names[1] = {"amax_d"};
    if ((s = gk_check_call(plan->handle, stream, 1, ptrs, names))) return s;
    cudaError_t e = cudaMemsetAsync(sc->amax_d, 0, sizeof(float), (cudaStream_t)stream);
    return e == cudaSuccess ? GKO_STATUS_SUCCESS : gk_cuda_fail(e, "cudaMemsetAsync (amax_d)");
  }
  size_t esa = gko_dtype_size(p->ab_dtype), esb = gko_dtype_size(p->b_dtype);
  size_t escd = gko_dtype_size(p->cd_dtype);
  const size_t esbias = gko_dtype_size(gk_gemm_bias_dtype(p));
  const int need_ab = p->k > 0 && alpha != 0.0f;
  const int need_c = beta != 0.0f;
  const int need_bias = p->epilogue & 1;
  if ((s = gk_check_ptr(d, "d", escd, 1, "D is always written")) ||
      (s = gk_check_ptr(a, "a", esa, need_ab, "k > 0 and alpha != 0")) ||
      (s = gk_check_ptr(b, "b", esb, need_ab, "k > 0 and alpha != 0")) ||
      (s = gk_check_ptr(c, "c", escd, need_c, "beta != 0")) ||
      (s = gk_check_ptr(bias, "bias", esbias, need_bias, "the epilogue has a bias")))
    return s;
  if (need_c && c == d && (p->ldc != p->ldd || p->stride_c != p->stride_d))
    return gk_fail(GKO_STATUS_INVALID_VALUE,
                   "c == d (in place) needs equal layouts, but ldc = %lld, ldd = %lld, "
                   "stride_c = %lld, stride_d = %lld",
                   (long long)p->ldc, (long long)p->ldd, (long long)p->stride_c,
                   (long long)p->stride_d);
  if ((s = gk_check_workspace(ws, ws_bytes, plan->ws_bytes, "gko_gemm_workspace_size")))
    return s;
  /* device checks: one attribute query per distinct pointer the call
   * touches (C only when beta != 0 and C is not D), skipped altogether when
   * the plan's last successful call used the same pointers and stream */
  const void *ptrs[10] = {d,
                          need_ab ? a : NULL,
                          need_ab ? b : NULL,
                          need_c && c != d ? c : NULL,
                          need_bias ? bias : NULL,
                          ws_bytes ? ws : NULL,
                          need_ab ? sc->a : NULL,
                          need_ab ? sc->b : NULL,
                          sc->d,
                          sc->amax_d};
  const char *names[10] = {"d",         "a",       "b",       "c",       "bias",
                           "workspace", "scale_a", "scale_b", "scale_d", "amax_d"};
  for (int i = 1; i < 10; i++)
    for (int j = 0; j < i && ptrs[i]; j++)
      if (ptrs[j] == ptrs[i]) ptrs[i] = NULL; /* already checked under another name */
  if ((s = gk_gemm_check_pointers(plan, stream, ptrs, names))) return s;

  if (!need_ab) {
    /* no product: D = act(beta * C + bias), C not read when beta == 0 */
    return gk_gemm_epilogue_launch(p->cd_dtype, p->epilogue >> 1, p->ml, p->nl, p->batch, d,
                                   p->ldd, p->stride_d, need_c ? c : NULL, p->ldc,
                                   p->stride_c, beta, need_bias ? bias : NULL,
                                   p->stride_bias, p->bias_on_rows, stream);
  }
  gk_gemm_args args;
  args.alpha = alpha;
  args.beta = beta;
  args.a = a;
  args.b = b;
  args.c = need_c ? c : NULL;
  args.d = d;
  args.bias = need_bias ? bias : NULL;
  args.scale_a = sc->a;
  args.scale_b = sc->b;
  args.scale_d = sc->d;
  args.amax_d = sc->amax_d;
  args.a_l = p->swap ? b : a;
  args.b_l = p->swap ? a : b;
  args.ws = ws;
  args.ws_bytes = ws_bytes;
  args.stream = stream;
  return plan->backend->execute(plan, &args);
}

GKO_API gko_status_t gko_gemm_execute(gko_gemm_plan_t plan, float alpha, const void *a,
                                      const void *b, float beta, const void *c, void *d,
                                      const void *bias, void *workspace,
                                      size_t workspace_bytes, gko_stream_t stream) {
  gk_clear_error();
  gko_status_t s = gk_live_check(plan, GK_LIVE_GEMM_PLAN, "plan");
  if (!s) s = gk_live_plan_handle(plan->handle, plan->handle_serial);
  if (s) return s;
  return gk_gemm_execute(plan, alpha, a, b, beta, c, d, bias, workspace, workspace_bytes,
                         stream);
}

GKO_API gko_status_t gko_gemm_execute_scaled(gko_gemm_plan_t plan, float alpha, const void *a,
                                             const float *scale_a, const void *b,
                                             const float *scale_b, float beta, const void *c,
                                             void *d, const float *scale_d, float *amax_d,
                                             const void *bias, void *workspace,
                                             size_t workspace_bytes, gko_stream_t stream) {
  gk_clear_error();
  gko_status_t s = gk_live_check(plan, GK_LIVE_GEMM_PLAN, "plan");
  if (!s) s = gk_live_plan_handle(plan->handle, plan->handle_serial);
  if (s) return s;
  const gk_gemm_scales sc = {scale_a, scale_b, scale_d, amax_d};
  return gk_gemm_execute_scaled(plan, alpha, a, b, beta, c, d, bias, &sc, workspace,
                                workspace_bytes, stream);
}

/* ---- one-shot ---------------------------------------------------------------------- */

GKO_API gko_status_t gko_gemm(gko_handle_t handle, gko_op_t transa, gko_op_t transb,
                              int64_t m, int64_t n, int64_t k, float alpha,
                              gko_dtype_t ab_dtype, const void *a, int64_t lda,
                              const void *b, int64_t ldb, float beta, gko_dtype_t cd_dtype,
                              const void *c, int64_t ldc, void *d, int64_t ldd,
                              gko_epilogue_t epilogue, const void *bias,
                              gko_stream_t stream) {
  gk_clear_error();
  if (!handle) return gk_fail(GKO_STATUS_INVALID_VALUE, "handle is NULL");
  /* promise exactly what the pointers give (no fallback needed at execute) */
  int64_t al = 256;
  const int need_ab = k > 0 && alpha != 0.0f;
  const void *ps[5] = {need_ab ? a : NULL, need_ab ? b : NULL, beta != 0.0f ? c : NULL, d,
                       (epilogue & 1) ? bias : NULL};
  for (int i = 0; i < 5; i++)
    if (ps[i] && gk_gemm_ptr_align(ps[i]) < al) al = gk_gemm_ptr_align(ps[i]);
  gk_gemm_problem p;
  gko_status_t s = gk_gemm_resolve_args(ab_dtype, cd_dtype, transa, transb, m, n, k, lda, ldb,
                                        ldc, ldd, epilogue, al, &p);
  if (s) return s;
  /* device and stream first: the workspace is allocated on that stream */
  if ((s = gk_check_call(handle, stream, 0, NULL, NULL))) return s;
  /* host work (planning may query cuBLASLt) must not invalidate a capture in
   * progress: relaxed mode for this thread while it runs */
  enum cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  cudaThreadExchangeStreamCaptureMode(&mode);
  gko_gemm_plan_t plan = NULL;
  if (!gk_gemm_state_pools(handle->gemm)) p.max_workspace = 0; /* no stream-ordered allocator */
  s = gk_gemm_plan_build(handle, &p, &plan);
  cudaThreadExchangeStreamCaptureMode(&mode);
  if (s) return s;
  gk_clear_error(); /* a backend that declined before another accepted left its reason */
  void *ws = NULL;
  size_t ws_bytes = plan->ws_bytes;
  if (ws_bytes > 0 && m > 0 && n > 0) {
    cudaError_t e = cudaMallocAsync(&ws, ws_bytes, (cudaStream_t)stream);
    if (e != cudaSuccess) {
      gk_gemm_plan_free(plan);
      return gk_cuda_fail(e, "cudaMallocAsync (gko_gemm's workspace)");
    }
  } else {
    ws_bytes = 0;
  }
  s = gk_gemm_execute(plan, alpha, a, b, beta, c, d, bias, ws, ws_bytes, stream);
  /* stream-ordered: freed after the GEMM that uses it (also when execute
   * failed, in which case nothing used it) */
  if (ws) cudaFreeAsync(ws, (cudaStream_t)stream);
  gk_gemm_plan_free(plan);
  return s;
}
