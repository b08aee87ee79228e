/* gemm_plan.c -- GEMM plans: the dispatcher over the table of backends
 * (gemm_registry.c), AUTO's order, the autotuner, and the plan's queries.
 *
 * gko_gemm_plan_create resolves the descriptor (gemm_desc.c), then asks the
 * backends in order (AUTO: gk_gemm_auto_order; else the one forced) to plan
 * the problem; with GKO_GEMM_ATTR_AUTOTUNE their candidate configurations
 * are timed instead.  Problems without a product need no backend's choice:
 * the dispatcher's own plan stands in, and execute (gemm_execute.c) runs
 * gko's epilogue pass or nothing. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "gemm.h"

/* Checks that hold for every backend and need the handle's device. */
static gko_status_t gk_gemm_check_compute(gko_handle_t h, const gk_gemm_problem *p) {
  if (p->compute == GKO_GEMM_COMPUTE_TF32 && h->cc < 80)
    return gk_fail(GKO_STATUS_NOT_SUPPORTED,
                   "GKO_GEMM_COMPUTE_TF32 needs sm_80 or newer; this GPU is sm_%d", h->cc);
  if (p->compute == GKO_GEMM_COMPUTE_F16_ACCUMULATE &&
      (p->ab_dtype != GKO_DTYPE_F16 || p->cd_dtype != GKO_DTYPE_F16))
    return gk_fail(GKO_STATUS_NOT_SUPPORTED,
                   "GKO_GEMM_COMPUTE_F16_ACCUMULATE is available for f16 inputs with f16 "
                   "C/D only (AB_DTYPE = %d, CD_DTYPE = %d)",
                   p->ab_dtype, p->cd_dtype);
  if (gk_is_fp8(p->cd_dtype) && p->k == 0 && p->m > 0 && p->n > 0 && p->batch > 0)
    return gk_fail(GKO_STATUS_NOT_SUPPORTED,
                   "k = 0 with an 8-bit D (%s): D would be quantize(scale_d * act(bias)), which "
                   "gko's epilogue pass cannot write",
                   gk_dtype_name(p->cd_dtype));
  return GKO_STATUS_SUCCESS;
}

/* ---- AUTO's order ------------------------------------------------------------ */

/* The rows that support p, in the table's order, except that a row whose
 * auto_first rule holds for p goes ahead of the others; a backend that
 * answers NOT_SUPPORTED passes to the next.  GKO_GEMM_ATTR_INVARIANT plans
 * keep the table's order: the first row's invariant algorithm first. */
int gk_gemm_auto_order(gko_handle_t h, const gk_gemm_problem *p,
                       const gk_gemm_backend **list, int *nfirst) {
  const int rules = p->invariant <= 0;
  const gk_gemm_backend *rest[GK_GEMM_MAX_BACKENDS];
  int n = 0, nrest = 0;
  for (int i = 0; i < gk_gemm_nbackends; i++) {
    const gk_gemm_backend *be = gk_gemm_backends[i];
    if (be->supports && !be->supports(h, p, NULL, 0)) continue;
    if (rules && be->auto_first && be->auto_first(h, p))
      list[n++] = be;
    else
      rest[nrest++] = be;
  }
  *nfirst = n;
  for (int i = 0; i < nrest; i++) list[n++] = rest[i];
  return n;
}

static const char *gk_epilogue_name(int e) {
  static const char *const n[8] = {"NONE",     "BIAS",          "RELU",      "BIAS_RELU",
                                   "GELU_ERF", "BIAS_GELU_ERF", "GELU_TANH", "BIAS_GELU_TANH"};
  return e >= 0 && e < 8 ? n[e] : "?";
}

/* One backend's plan for p (variant 0: its own choice). */
static gko_status_t gk_plan_one(gko_handle_t h, const gk_gemm_problem *p,
                                const gk_gemm_backend *be, int variant, gko_gemm_plan_t *out) {
  struct gko_gemm_plan_s *plan = calloc(1, sizeof *plan);
  if (!plan) return gk_fail(GKO_STATUS_ALLOC_FAILED, "host allocation of the plan failed");
  char why[512];
  if (be->supports && !be->supports(h, p, why, sizeof why)) {
    free(plan);
    return gk_fail(GKO_STATUS_NOT_SUPPORTED, "%s", why);
  }
  plan->handle = h;
  plan->handle_serial = h->serial;
  plan->p = *p;
  plan->variant = variant;
  gko_status_t s = be->plan(plan);
  if (s != GKO_STATUS_SUCCESS) {
    free(plan); /* a failing backend frees its own state */
    return s;
  }
  plan->backend = be;
  *out = plan;
  return GKO_STATUS_SUCCESS;
}

/* The plan of a problem without a product (m, n, batch or k 0): nothing
 * to choose; execute writes nothing or runs gko's epilogue pass.  It
 * carries the name of `be`. */
static gko_status_t gk_plan_empty(gko_handle_t h, const gk_gemm_problem *p,
                                  const gk_gemm_backend *be, gko_gemm_plan_t *out) {
  struct gko_gemm_plan_s *plan = calloc(1, sizeof *plan);
  if (!plan) return gk_fail(GKO_STATUS_ALLOC_FAILED, "host allocation of the plan failed");
  plan->handle = h;
  plan->handle_serial = h->serial;
  plan->p = *p;
  plan->backend = be;
  if (p->m == 0 || p->n == 0 || p->batch == 0)
    GK_WHY(plan, "empty D (m = %lld, n = %lld, batch = %lld): execute writes nothing",
           (long long)p->m, (long long)p->n, (long long)p->batch);
  else
    GK_WHY(plan, "k = 0: no product; D = %s(beta * C) by gko's epilogue pass",
           gk_epilogue_name(p->epilogue));
  *out = plan;
  return GKO_STATUS_SUCCESS;
}

/* ---- autotune ------------------------------------------------------------------ */

/* Cache entry of a tuned problem: the problem (every attribute, resolved)
 * is the key; the winner and the account of the timing are the value. */
typedef struct {
  int32_t tag;
  gk_gemm_problem p;
} gk_tune_key;
typedef struct {
  int32_t backend, variant;
  char summary[640];
} gk_tune_value;

enum { GK_TUNE_MAX = 48 };

typedef struct {
  const gk_gemm_backend *be;
  int variant;
  gko_gemm_plan_t plan;
  double us;
} gk_tune_cand;

/* Median of `reps` timings of `calls` back-to-back executes (us per call). */
static gko_status_t gk_time_plan(gko_gemm_plan_t plan, const void *a, const void *b, void *d,
                                 const void *bias, const gk_gemm_scales *sc, void *ws,
                                 size_t ws_bytes, cudaStream_t st, cudaEvent_t e0,
                                 cudaEvent_t e1, double *us) {
  gko_status_t s;
  for (int i = 0; i < 2; i++)
    if ((s = gk_gemm_execute_scaled(plan, 1.0f, a, b, 0.0f, NULL, d, bias, sc, ws, ws_bytes, st)))
      return s;
  cudaError_t e = cudaEventRecord(e0, st);
  if (e == cudaSuccess && (s = gk_gemm_execute_scaled(plan, 1.0f, a, b, 0.0f, NULL, d, bias,
                                                      sc, ws, ws_bytes, st)))
    return s;
  if (e == cudaSuccess) e = cudaEventRecord(e1, st);
  if (e == cudaSuccess) e = cudaEventSynchronize(e1);
  float ms = 0;
  if (e == cudaSuccess) e = cudaEventElapsedTime(&ms, e0, e1);
  if (e != cudaSuccess) return gk_cuda_fail(e, "autotune timing");
  int calls = (int)(300.0 / (ms * 1000.0 + 1.0)) + 1; /* ~0.3 ms per repetition */
  if (calls > 100) calls = 100;
  double t[5];
  for (int r = 0; r < 5; r++) {
    e = cudaEventRecord(e0, st);
    for (int i = 0; e == cudaSuccess && i < calls; i++)
      if ((s = gk_gemm_execute_scaled(plan, 1.0f, a, b, 0.0f, NULL, d, bias, sc, ws, ws_bytes, st)))
        return s;
    if (e == cudaSuccess) e = cudaEventRecord(e1, st);
    if (e == cudaSuccess) e = cudaEventSynchronize(e1);
    if (e == cudaSuccess) e = cudaEventElapsedTime(&ms, e0, e1);
    if (e != cudaSuccess) return gk_cuda_fail(e, "autotune timing");
    t[r] = ms * 1000.0 / calls;
  }
  for (int i = 1; i < 5; i++) /* insertion sort, then the median */
    for (int j = i; j > 0 && t[j] < t[j - 1]; j--) {
      double x = t[j];
      t[j] = t[j - 1];
      t[j - 1] = x;
    }
  *us = t[2];
  return GKO_STATUS_SUCCESS;
}


/* Times every candidate (backend, variant) on scratch buffers of the
 * problem's shape and keeps the fastest.  Synchronizes; allocates. */
static gko_status_t gk_gemm_autotune(gko_handle_t h, const gk_gemm_problem *p,
                                     const gk_gemm_backend *const *list, int nb,
                                     gko_gemm_plan_t *out) {
  gk_tune_key key;
  memset(&key, 0, sizeof key);
  key.tag = 0x54554e45; /* "TUNE" */
  key.p = *p;
  gk_tune_value val;
  gko_status_t s;
  if (gk_gemm_cache_lookup(h->gemm, &key, sizeof key, &val, sizeof val)) {
    const gk_gemm_backend *be = gk_gemm_backend_of(val.backend);
    if (be && gk_plan_one(h, p, be, val.variant, out) == GKO_STATUS_SUCCESS) {
      GK_WHY(*out, "; autotune (cached in the handle): %s", val.summary);
      return GKO_STATUS_SUCCESS;
    }
    gk_clear_error();
  }
  /* the candidates */
  gk_tune_cand cand[GK_TUNE_MAX];
  int nc = 0;
  size_t ws_max = 0;
  for (int i = 0; i < nb; i++) {
    for (int v = 0; v <= list[i]->max_variant && nc < GK_TUNE_MAX; v++) {
      gko_gemm_plan_t pl = NULL; /* v = 0: the backend's own choice */
      s = gk_plan_one(h, p, list[i], v, &pl);
      if (s == GKO_STATUS_NOT_SUPPORTED) continue;
      if (s) goto fail;
      /* the same configuration twice (e.g. a padding fallback that lands
       * on the unpadded algorithm) is timed once */
      int dup = 0;
      for (int j = 0; j < nc && !dup; j++)
        dup = cand[j].be == list[i] && strcmp(cand[j].plan->why, pl->why) == 0;
      if (dup) {
        gk_gemm_plan_free(pl);
        continue;
      }
      cand[nc].be = list[i];
      cand[nc].variant = v;
      cand[nc].plan = pl;
      cand[nc].us = -1;
      if (pl->ws_bytes > ws_max) ws_max = pl->ws_bytes;
      nc++;
    }
  }
  gk_clear_error();
  if (nc == 0) {
    /* nothing to time: the ordinary choice says why */
    s = GKO_STATUS_NOT_SUPPORTED;
    for (int i = 0; i < nb && s == GKO_STATUS_NOT_SUPPORTED; i++)
      s = gk_plan_one(h, p, list[i], 0, out);
    return s;
  }
  {
    int64_t ea, eb, ed;
    gk_gemm_spans(p, &ea, &eb, &ed);
    const size_t esa = gko_dtype_size(p->ab_dtype), esb = gko_dtype_size(p->b_dtype);
    const size_t escd = gko_dtype_size(p->cd_dtype);
    const size_t na = (size_t)ea * esa, nbb = (size_t)eb * esb, nd = (size_t)ed * escd;
    const size_t nbias = ((size_t)p->n + (size_t)(p->batch - 1) * (size_t)p->stride_bias) *
                         gko_dtype_size(gk_gemm_bias_dtype(p));
    void *da = NULL, *db = NULL, *dd = NULL, *dbias = NULL, *dws = NULL, *dsc = NULL;
    /* row-wise 8-bit factors: one scratch vector (max(m, n) values) for both */
    const int rowwise =
        p->scale_a_mode == GKO_SCALE_ROWWISE || p->scale_b_mode == GKO_SCALE_ROWWISE;
    const size_t nsc = rowwise ? (size_t)(p->m > p->n ? p->m : p->n) * sizeof(float) : 0;
    cudaStream_t st = NULL;
    cudaEvent_t e0 = NULL, e1 = NULL;
    /* The timing runs on a private non-blocking stream with its own
     * buffers; relaxed capture mode for this thread meanwhile, so that a
     * capture in progress on another stream (global mode) is not
     * invalidated by the allocations. */
    enum cudaStreamCaptureMode cmode = cudaStreamCaptureModeRelaxed;
    cudaThreadExchangeStreamCaptureMode(&cmode);
    cudaError_t e = cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking);
    if (e == cudaSuccess) e = cudaMalloc(&da, na);
    if (e == cudaSuccess) e = cudaMalloc(&db, nbb);
    if (e == cudaSuccess) e = cudaMalloc(&dd, nd);
    if (e == cudaSuccess && (p->epilogue & 1)) e = cudaMalloc(&dbias, nbias + 16);
    if (e == cudaSuccess && ws_max) e = cudaMalloc(&dws, ws_max);
    if (e == cudaSuccess && nsc) e = cudaMalloc(&dsc, nsc);
    if (e == cudaSuccess && nsc) e = cudaMemsetAsync(dsc, 0x3c, nsc, st); /* about 0.011 */
    /* small finite values: 0x3c3c.. is about 1.06 in f16, 0.011 in bf16/f32 */
    if (e == cudaSuccess) e = cudaMemsetAsync(da, 0x3c, na, st);
    if (e == cudaSuccess) e = cudaMemsetAsync(db, 0x3c, nbb, st);
    if (e == cudaSuccess && dbias) e = cudaMemsetAsync(dbias, 0x3c, nbias + 16, st);
    if (e == cudaSuccess) e = cudaEventCreate(&e0);
    if (e == cudaSuccess) e = cudaEventCreate(&e1);
    s = e == cudaSuccess ? GKO_STATUS_SUCCESS
                         : gk_cuda_fail(e, "autotune: scratch buffers (cudaMalloc)");
    /* a weight-only FP8 plan (16-bit A) takes no scale_a */
    const gk_gemm_scales sc = {gk_is_fp8(p->ab_dtype) ? (const float *)dsc : NULL,
                               (const float *)dsc, NULL, NULL};
    for (int i = 0; i < nc && s == GKO_STATUS_SUCCESS; i++)
      s = gk_time_plan(cand[i].plan, da, db, dd, dbias, &sc, dws, ws_max, st, e0, e1,
                       &cand[i].us);
    if (st) cudaStreamSynchronize(st);
    if (e0) cudaEventDestroy(e0);
    if (e1) cudaEventDestroy(e1);
    if (st) cudaStreamDestroy(st);
    cudaFree(da);
    cudaFree(db);
    cudaFree(dd);
    cudaFree(dbias);
    cudaFree(dws);
    cudaFree(dsc);
    cudaThreadExchangeStreamCaptureMode(&cmode);
    if (s) goto fail;
  }
  int best = 0;
  for (int i = 1; i < nc; i++)
    if (cand[i].us < cand[best].us) best = i;
  /* the account: every candidate and its time, the default marked */
  memset(&val, 0, sizeof val);
  val.backend = cand[best].be->id;
  val.variant = cand[best].variant;
  gk_strappendf(val.summary, sizeof val.summary, "%d candidates timed (us per call):", nc);
  for (int i = 0; i < nc; i++)
    gk_strappendf(val.summary, sizeof val.summary, " %s#%d %.1f%s", cand[i].be->tag,
                  cand[i].variant, cand[i].us, i == best ? "*" : "");
  gk_strappendf(val.summary, sizeof val.summary, " -> %s#%d", cand[best].be->name,
                cand[best].variant);
  gk_gemm_cache_insert(h->gemm, &key, sizeof key, &val, sizeof val);
  for (int i = 0; i < nc; i++)
    if (i != best) gk_gemm_plan_free(cand[i].plan);
  *out = cand[best].plan;
  GK_WHY(*out, "; autotune: %s", val.summary);
  return GKO_STATUS_SUCCESS;
fail:
  for (int i = 0; i < nc; i++) gk_gemm_plan_free(cand[i].plan);
  return s;
}

/* ---- the dispatcher ------------------------------------------------------------ */

gko_status_t gk_gemm_plan_build(gko_handle_t h, const gk_gemm_problem *p,
                                gko_gemm_plan_t *out) {
  gko_status_t s = gk_gemm_check_compute(h, p);
  if (s) return s;
  const gk_gemm_backend *forced = NULL;
  if (p->backend != GKO_GEMM_BACKEND_AUTO && !(forced = gk_gemm_backend_of(p->backend)))
    return gk_fail(GKO_STATUS_INTERNAL, "GEMM backend %d has no implementation", p->backend);
  /* a forced backend that cannot serve p's types says so, product or not */
  if (forced && forced->supports) {
    char why[512];
    if (!forced->supports(h, p, why, sizeof why))
      return gk_fail(GKO_STATUS_NOT_SUPPORTED, "%s", why);
  }
  /* no product: the dispatcher's plan, named after the forced backend (AUTO:
   * the table's first), unless that backend plans such problems itself */
  if ((p->m == 0 || p->n == 0 || p->batch == 0 || p->k == 0) && !(forced && forced->plans_empty))
    return gk_plan_empty(h, p, forced ? forced : gk_gemm_backends[0], out);
  const gk_gemm_backend *list[GK_GEMM_MAX_BACKENDS];
  int nb = 1, nfirst = 0;
  if (forced) list[0] = forced;
  else nb = gk_gemm_auto_order(h, p, list, &nfirst);
  if (nb == 0) { /* every backend declines p's types: each one's reason */
    char all[1536] = "", why[512];
    for (int i = 0; i < gk_gemm_nbackends; i++)
      if (gk_gemm_backends[i]->supports &&
          !gk_gemm_backends[i]->supports(h, p, why, sizeof why))
        gk_strappendf(all, sizeof all, "%s%s", all[0] ? "; " : "", why);
    return gk_fail(GKO_STATUS_NOT_SUPPORTED, "no backend can run this GEMM: %s", all);
  }
  if (p->autotune && p->m > 0 && p->n > 0 && p->batch > 0 && p->k > 0)
    return gk_gemm_autotune(h, p, list, nb, out);
  /* in order; when every backend declines, the detail lists each reason */
  char details[1024] = "";
  s = GKO_STATUS_NOT_SUPPORTED;
  for (int i = 0; i < nb; i++) {
    s = gk_plan_one(h, p, list[i], 0, out);
    if (s == GKO_STATUS_SUCCESS && i < nfirst && nb > 1 && list[i]->auto_first_why)
      GK_WHY(*out, "; %s", list[i]->auto_first_why);
    if (s != GKO_STATUS_NOT_SUPPORTED) return s;
    if (nb > 1)
      gk_strappendf(details, sizeof details, "%s%s: %s", details[0] ? "; " : "", list[i]->name,
                    gko_last_error_detail());
  }
  if (nb > 1) return gk_fail(GKO_STATUS_NOT_SUPPORTED, "no backend can run this GEMM: %s", details);
  return s;
}

/* ---- the plan's entry points ------------------------------------------------------ */

/* listed: registered as a live object (a caller's plan), or not (a plan
 * inside another of gko's objects, which only gko uses and frees) */
static gko_status_t gk_plan_create(gko_handle_t handle, gko_gemm_desc_t desc,
                                   gko_gemm_plan_t *plan, int listed) {
  gk_gemm_problem p;
  gko_status_t s;
  if ((s = gk_entry_check(handle, desc, GK_LIVE_GEMM_DESC, "desc", plan, "plan")) ||
      (s = gk_gemm_resolve(desc, &p)))
    return s;
  /* the current device must be the handle's (host queries only) */
  if ((s = gk_check_call(handle, NULL, 0, NULL, NULL))) return s;
  gko_gemm_plan_t out = NULL;
  s = gk_gemm_plan_build(handle, &p, &out);
  if (s == GKO_STATUS_SUCCESS && listed && (s = gk_live_add(out, GK_LIVE_GEMM_PLAN)))
    gk_gemm_plan_free(out);
  if (s) return s;
  /* a backend that declined before another accepted left its reason */
  gk_clear_error();
  *plan = out;
  return GKO_STATUS_SUCCESS;
}

GKO_API gko_status_t gko_gemm_plan_create(gko_handle_t handle, gko_gemm_desc_t desc,
                                          gko_gemm_plan_t *plan) {
  return gk_plan_create(handle, desc, plan, 1);
}

gko_status_t gk_gemm_plan_create_inner(gko_handle_t handle, gko_gemm_desc_t desc,
                                       gko_gemm_plan_t *plan) {
  return gk_plan_create(handle, desc, plan, 0);
}

void gk_gemm_plan_text(gko_gemm_plan_t plan, char *buf, size_t bytes) {
  snprintf(buf, bytes, "%s: %s", plan->backend->name, plan->why);
}

void gk_gemm_plan_free(gko_gemm_plan_t plan) {
  if (!plan) return;
  if (plan->backend && plan->backend->destroy) plan->backend->destroy(plan);
  free(plan);
}

static void gk_gemm_plan_release(void *p) { gk_gemm_plan_free(p); }

GKO_API gko_status_t gko_gemm_plan_destroy(gko_gemm_plan_t plan) {
  return gk_live_destroy(plan, GK_LIVE_GEMM_PLAN, "plan", gk_gemm_plan_release);
}

GKO_API gko_status_t gko_gemm_workspace_size(gko_gemm_plan_t plan, size_t *bytes) {
  gko_status_t s = gk_getter(plan, GK_LIVE_GEMM_PLAN, "plan", bytes, "bytes");
  if (s) return s;
  *bytes = plan->ws_bytes;
  return GKO_STATUS_SUCCESS;
}

GKO_API gko_status_t gko_gemm_plan_backend(gko_gemm_plan_t plan, gko_gemm_backend_t *backend) {
  gko_status_t s = gk_getter(plan, GK_LIVE_GEMM_PLAN, "plan", backend, "backend");
  if (s) return s;
  *backend = (gko_gemm_backend_t)plan->backend->id;
  return GKO_STATUS_SUCCESS;
}

/* "<backend name>: <why>" */
GKO_API gko_status_t gko_gemm_plan_describe(gko_gemm_plan_t plan, char *buf, size_t bytes,
                                            size_t *required) {
  gk_clear_error();
  gko_status_t s = gk_live_check(plan, GK_LIVE_GEMM_PLAN, "plan");
  if (s) return s;
  char text[GK_GEMM_WHY_BYTES + 64];
  gk_gemm_plan_text(plan, text, sizeof text);
  return gk_text_out(text, buf, bytes, required);
}
