/* test_stress.c -- reliability under load: what a long-running, multi-threaded
 * server that embeds gko relies on.  Each Test proves one property and fails
 * when it breaks:
 *
 *   stress        16 threads (GKO_STRESS_THREADS), each on its own stream
 *                 with its own outputs and workspaces, run 1000 iterations
 *                 (GKO_STRESS_ITERS) of every operator -- GELU f16 forward,
 *                 GEMM through a plan, SpMM through a plan, conv through a
 *                 plan -- and every output of every iteration must be bitwise
 *                 equal to the same call run serially in one thread first.
 *                 Two variants: one handle per thread (created in the
 *                 thread), and one handle shared by all threads (plans
 *                 shared by all threads as well as created per thread from
 *                 the shared handle, as gko.h allows: "A handle may be used
 *                 from several threads at once provided every concurrent
 *                 call has its own workspace"; "A plan may be executed from
 *                 several threads at once, each with its own workspace").
 *   stress_graph  every capture-safe call (GELU forward and backward, GEMM
 *                 execute, the one-shot gko_gemm, SpMM execute, conv
 *                 execute, GEMM and conv plan creation) captured with
 *                 cudaStreamCaptureModeGlobal, instantiated, replayed 100
 *                 times (GKO_GRAPH_REPLAYS), each replay bitwise equal to
 *                 the eager result; the calls documented as not capturable
 *                 (gko_csr_validate, gko_spmm_plan_create) return
 *                 GKO_STATUS_NOT_SUPPORTED and leave the capture valid.
 *   stress_leaks  10 000 (GKO_LEAK_CYCLES) create / plan / execute / destroy
 *                 cycles of every object keep neither device memory
 *                 (cudaMemGetInfo) nor host memory (mallinfo2).
 *   stress_faults a sticky CUDA error (an out-of-bounds write by a kernel of
 *                 this test, in a forked child) makes every gko operator
 *                 return GKO_STATUS_EXECUTION_FAILED with a detail that says
 *                 "sticky" and names the CUDA error, and nothing hangs.
 *   stress_multi_gpu  handles on devices 0 and 1 used concurrently by one
 *                 thread per device (GEMM + GELU, checked against float64);
 *                 a device-0 handle with a device-1 stream, pointer or
 *                 current device returns GKO_STATUS_DEVICE_MISMATCH with the
 *                 devices named, and writes nothing.
 *
 * Without a GPU every test here reports SKIPPED.  The CUDA helpers (a kernel
 * that faults on purpose, a device-side byte comparison) are in
 * tests/fault_kernel.cu, linked by the Makefile's rule for this suite; they
 * are declared weak so that the suite also links without them (then the
 * fault test skips and the stress test compares every iteration on the
 * host).  Seeds are printed; GKO_TEST_SEED replays. */
#include <errno.h>
#include <limits.h>
#include <malloc.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"

/* ---- CUDA helpers from tests/fault_kernel.cu (weak: may be absent) -------- */

int gkt_oob_write(void *base, long long offset, cudaStream_t stream) __attribute__((weak));
int gkt_count_diff(const void *got, const void *want, size_t bytes, unsigned long long iter,
                   unsigned long long *counters, cudaStream_t stream) __attribute__((weak));

/* ---- small helpers -------------------------------------------------------------------- */

/* An integer from the environment, `def` when unset or not a number,
 * clamped to [lo, hi]. */
static long env_long(const char *name, long def, long lo, long hi) {
  const char *s = getenv(name);
  if (!s || !*s) return def;
  char *end = NULL;
  errno = 0;
  long v = strtol(s, &end, 0);
  if (errno || !end || *end) return def;
  return v < lo ? lo : v > hi ? hi : v;
}

static uint64_t mix64(uint64_t z) { /* splitmix64's finalizer */
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

static void fill_dt(gko_dtype_t dt, void *h, size_t n, double lo, double hi) {
  for (size_t i = 0; i < n; i++) t_hv_set(dt, h, (int64_t)i, t_uniform(lo, hi));
}

/* A worker thread's failures (no Criterion assertion there): how many,
 * and the message of the first. */
typedef struct {
  int failed;
  char msg[1024];
} tnote;

static void tnote_fail(tnote *n, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void tnote_fail(tnote *n, const char *fmt, ...) {
  if (n->failed++) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(n->msg, sizeof n->msg, fmt, ap);
  va_end(ap);
}

/* The failure of worker a (a struct with a tnote `note`). */
#define tfail(a, ...) tnote_fail(&(a)->note, __VA_ARGS__)

/* Soft device helpers (no Criterion assertion: usable from worker threads
 * and the forked child).  Random elements of dt in [lo, hi) from the test's
 * generator (call from one thread only). */
static cudaError_t dev_rand(void **d, gko_dtype_t dt, size_t n, double lo, double hi) {
  const size_t bytes = n * gko_dtype_size(dt);
  void *h = malloc(bytes ? bytes : 1);
  if (!h) return cudaErrorMemoryAllocation;
  fill_dt(dt, h, n, lo, hi);
  cudaError_t e = cudaMalloc(d, bytes ? bytes : 1);
  if (e == cudaSuccess && bytes) e = cudaMemcpy(*d, h, bytes, cudaMemcpyHostToDevice);
  if (e == cudaSuccess) e = cudaStreamSynchronize(cudaStreamLegacy); /* as t_h2d */
  free(h);
  return e;
}

static cudaError_t dev_poisoned(void **d, size_t bytes) {
  cudaError_t e = cudaMalloc(d, bytes ? bytes : 1);
  if (e == cudaSuccess) e = cudaMemset(*d, T_POISON_BYTE, bytes ? bytes : 1);
  if (e == cudaSuccess) e = cudaStreamSynchronize(cudaStreamLegacy);
  return e;
}

static cudaError_t dev_upload(void **d, const void *h, size_t bytes) {
  cudaError_t e = cudaMalloc(d, bytes ? bytes : 1);
  if (e == cudaSuccess && bytes) e = cudaMemcpy(*d, h, bytes, cudaMemcpyHostToDevice);
  if (e == cudaSuccess) e = cudaStreamSynchronize(cudaStreamLegacy);
  return e;
}

static void *rand_dev(gko_dtype_t dt, size_t n, double lo, double hi) {
  void *d = NULL;
  T_CUDA(dev_rand(&d, dt, n, lo, hi));
  return d;
}

static void *poisoned_dev(size_t bytes) {
  void *d = NULL;
  T_CUDA(dev_poisoned(&d, bytes));
  return d;
}

/* Every byte of the device buffer still holds the poison. */
static int64_t first_unpoisoned(const void *d, size_t bytes) {
  unsigned char *h = malloc(bytes ? bytes : 1);
  cr_assert(h);
  t_d2h(h, d, bytes);
  int64_t at = -1;
  for (size_t i = 0; i < bytes && at < 0; i++)
    if (h[i] != T_POISON_BYTE) at = (int64_t)i;
  free(h);
  return at;
}

/* ---- the workload: one call of every operator ------------------------------------- */

enum { OP_GELU, OP_GEMM, OP_SPMM, OP_CONV, NOPS };
static const char *const kOpName[NOPS] = {
    "GELU-erf f16 forward (n = 65537)",
    "GEMM f16 64x96x128, beta 0.5, bias + GELU-tanh (plan)",
    "SpMM f32 CSR 2000x1500, n = 32 (plan)",
    "conv NHWC f16 2x12x13x13, 32 3x3 filters, pad 1, bias + GELU-erf (plan)"};
static const gko_dtype_t kOutDtype[NOPS] = {GKO_DTYPE_F16, GKO_DTYPE_F16, GKO_DTYPE_F32,
                                            GKO_DTYPE_F16};

#define W_GELU_N 65537 /* odd: the vector body and a scalar tail */
#define W_M 64
#define W_N 96
#define W_K 128
#define W_SP_M 2000
#define W_SP_K 1500
#define W_SP_N 32
#define W_CV_N 2
#define W_CV_C 12 /* C*R*S = 108 elements = 216 bytes: the filter copy runs */
#define W_CV_H 13
#define W_CV_W 13
#define W_CV_K 32
#define W_CV_OH 13 /* 3x3, pad 1, stride 1 */
#define W_CV_OW 13

static const size_t kOutElems[NOPS] = {W_GELU_N, W_M * W_N, W_SP_M * W_SP_N,
                                       W_CV_N * W_CV_OH * W_CV_OW * W_CV_K};
static size_t out_bytes(int op) { return kOutElems[op] * gko_dtype_size(kOutDtype[op]); }

/* Read-only data every thread shares: the CSR matrix, the conv filters. */
typedef struct {
  void *rp, *ci, *va;
  int64_t nnz;
  gko_csr_t csr;
  void *cw, *cbias;
} wshared;

/* One thread's inputs (two sets, by parity: consecutive iterations alternate
 * between them, so a call that silently did nothing leaves the other set's
 * result and is caught) and outputs. */
typedef struct {
  void *gx[2], *ga[2], *gb[2], *sb[2], *cx[2];
  void *gc, *gbias;
  void *out[NOPS];
} winputs;

typedef struct {
  gko_gemm_plan_t gemm;
  gko_spmm_plan_t spmm[2]; /* [0] ROW_SPLIT, [1] MERGE (forced) */
  gko_conv_plan_t conv;
} wplans;

#define SOFT_CUDA(call)                                                               \
  do {                                                                                \
    cudaError_t e_ = (call);                                                          \
    if (e_ != cudaSuccess) {                                                          \
      snprintf(err, errn, "%s: %s: %s", #call, cudaGetErrorName(e_), cudaGetErrorString(e_)); \
      return -1;                                                                      \
    }                                                                                 \
  } while (0)

#define SOFT_GKO(call)                                                                       \
  do {                                                                                       \
    gko_status_t s_ = (call);                                                                \
    if (s_ != GKO_STATUS_SUCCESS) {                                                          \
      snprintf(err, errn, "%s -> %s: %s", #call, gko_status_name(s_), gko_last_error_detail()); \
      return -1;                                                                             \
    }                                                                                        \
  } while (0)

/* A random CSR matrix: 4 % empty rows, the rest 1..15 entries, and four
 * rows of 300..700 entries (so that MERGE splits rows between warps);
 * columns random, unsorted, duplicates possible (summed, as documented). */
static int wshared_create(wshared *S, char *err, size_t errn) {
  memset(S, 0, sizeof *S);
  const int64_t m = W_SP_M, k = W_SP_K;
  int32_t *rp = malloc((size_t)(m + 1) * 4);
  if (!rp) return snprintf(err, errn, "malloc"), -1;
  rp[0] = 0;
  for (int64_t r = 0; r < m; r++) {
    int64_t len = t_uniform(0, 1) < 0.04 ? 0 : 1 + (int64_t)(t_next() % 15);
    if (r % 503 == 17) len = 300 + (int64_t)(t_next() % 400);
    rp[r + 1] = rp[r] + (int32_t)len;
  }
  S->nnz = rp[m];
  int32_t *ci = malloc((size_t)S->nnz * 4 + 4);
  float *va = malloc((size_t)S->nnz * 4 + 4);
  if (!ci || !va) return snprintf(err, errn, "malloc"), -1;
  for (int64_t p = 0; p < S->nnz; p++) {
    ci[p] = (int32_t)(t_next() % (uint64_t)k);
    va[p] = (float)t_uniform(-1, 1);
  }
  SOFT_CUDA(dev_upload(&S->rp, rp, (size_t)(m + 1) * 4));
  SOFT_CUDA(dev_upload(&S->ci, ci, (size_t)S->nnz * 4));
  SOFT_CUDA(dev_upload(&S->va, va, (size_t)S->nnz * 4));
  free(rp);
  free(ci);
  free(va);
  SOFT_GKO(gko_csr_create(&S->csr, m, k, S->nnz, S->rp, S->ci, S->va, GKO_INDEX_INT32,
                          GKO_DTYPE_F32));
  SOFT_CUDA(dev_rand(&S->cw, GKO_DTYPE_F16, W_CV_K * 3 * 3 * W_CV_C, -0.5, 0.5));
  SOFT_CUDA(dev_rand(&S->cbias, GKO_DTYPE_F16, W_CV_K, -1, 1));
  return 0;
}

static void wshared_free(wshared *S) {
  gko_csr_destroy(S->csr);
  cudaFree(S->rp);
  cudaFree(S->ci);
  cudaFree(S->va);
  cudaFree(S->cw);
  cudaFree(S->cbias);
  memset(S, 0, sizeof *S);
}

static int winputs_create(winputs *in, char *err, size_t errn) {
  memset(in, 0, sizeof *in);
  for (int p = 0; p < 2; p++) {
    SOFT_CUDA(dev_rand(&in->gx[p], GKO_DTYPE_F16, W_GELU_N, -4, 4));
    SOFT_CUDA(dev_rand(&in->ga[p], GKO_DTYPE_F16, W_M * W_K, -1, 1));
    SOFT_CUDA(dev_rand(&in->gb[p], GKO_DTYPE_F16, W_K * W_N, -1, 1));
    SOFT_CUDA(dev_rand(&in->sb[p], GKO_DTYPE_F32, W_SP_K * W_SP_N, -1, 1));
    SOFT_CUDA(dev_rand(&in->cx[p], GKO_DTYPE_F16, W_CV_N * W_CV_H * W_CV_W * W_CV_C, -1, 1));
  }
  SOFT_CUDA(dev_rand(&in->gc, GKO_DTYPE_F16, W_M * W_N, -1, 1));
  SOFT_CUDA(dev_rand(&in->gbias, GKO_DTYPE_F16, W_N, -1, 1));
  for (int op = 0; op < NOPS; op++) SOFT_CUDA(dev_poisoned(&in->out[op], out_bytes(op)));
  return 0;
}

static void winputs_free(winputs *in) {
  for (int p = 0; p < 2; p++) {
    cudaFree(in->gx[p]);
    cudaFree(in->ga[p]);
    cudaFree(in->gb[p]);
    cudaFree(in->sb[p]);
    cudaFree(in->cx[p]);
  }
  cudaFree(in->gc);
  cudaFree(in->gbias);
  for (int op = 0; op < NOPS; op++) cudaFree(in->out[op]);
  memset(in, 0, sizeof *in);
}

static int wplans_create(gko_handle_t h, const wshared *S, cudaStream_t st, wplans *P,
                         char *err, size_t errn) {
  memset(P, 0, sizeof *P);
  gko_gemm_desc_t gd = NULL;
  SOFT_GKO(gko_gemm_desc_create(&gd, GKO_DTYPE_F16, GKO_DTYPE_F16, W_M, W_N, W_K));
  SOFT_GKO(gko_gemm_desc_set(gd, GKO_GEMM_ATTR_EPILOGUE, GKO_EPILOGUE_BIAS_GELU_TANH));
  SOFT_GKO(gko_gemm_plan_create(h, gd, &P->gemm));
  gko_gemm_desc_destroy(gd);
  const gko_spmm_kernel_t kinds[2] = {GKO_SPMM_KERNEL_ROW_SPLIT, GKO_SPMM_KERNEL_MERGE};
  for (int i = 0; i < 2; i++) {
    SOFT_GKO(gko_spmm_plan_create(h, S->csr, W_SP_N, GKO_LAYOUT_ROW_MAJOR, W_SP_N, W_SP_N,
                                  kinds[i], &P->spmm[i], st));
    gko_spmm_kernel_t got = GKO_SPMM_KERNEL_AUTO;
    SOFT_GKO(gko_spmm_plan_kernel(P->spmm[i], &got));
    if (got != kinds[i])
      return snprintf(err, errn, "SpMM plan forced to kernel %d reports %d", (int)kinds[i],
                      (int)got), -1;
  }
  gko_conv_desc_t cd = NULL;
  SOFT_GKO(gko_conv_desc_create(&cd, GKO_DTYPE_F16, GKO_CONV_LAYOUT_NHWC, W_CV_N, W_CV_C, W_CV_H,
                                W_CV_W, W_CV_K, 3, 3));
  SOFT_GKO(gko_conv_desc_set(cd, GKO_CONV_ATTR_PAD_H, 1));
  SOFT_GKO(gko_conv_desc_set(cd, GKO_CONV_ATTR_PAD_W, 1));
  SOFT_GKO(gko_conv_desc_set(cd, GKO_CONV_ATTR_EPILOGUE, GKO_EPILOGUE_BIAS_GELU_ERF));
  SOFT_GKO(gko_conv_plan_create(h, cd, &P->conv));
  gko_conv_desc_destroy(cd);
  return 0;
}

/* The caller makes sure no work of the plans is still pending (SpMM). */
static void wplans_destroy(wplans *P) {
  gko_gemm_plan_destroy(P->gemm);
  gko_spmm_plan_destroy(P->spmm[0]);
  gko_spmm_plan_destroy(P->spmm[1]);
  gko_conv_plan_destroy(P->conv);
  memset(P, 0, sizeof *P);
}

/* Workspace bytes of each operator's plan (SpMM: the plan of `kind`). */
static int wplans_ws(const wplans *P, int kind, size_t ws[NOPS], char *err, size_t errn) {
  ws[OP_GELU] = 0;
  SOFT_GKO(gko_gemm_workspace_size(P->gemm, &ws[OP_GEMM]));
  SOFT_GKO(gko_spmm_workspace_size(P->spmm[kind], &ws[OP_SPMM]));
  SOFT_GKO(gko_conv_workspace_size(P->conv, &ws[OP_CONV]));
  return 0;
}

/* A successful call must also leave an empty detail ("every call that
 * returns gko_status_t resets it"). */
static int w_check(gko_status_t s, const char *what, char *err, size_t errn) {
  if (s != GKO_STATUS_SUCCESS) {
    snprintf(err, errn, "%s -> %s: %s", what, gko_status_name(s), gko_last_error_detail());
    return 1;
  }
  if (gko_last_error_detail()[0] != '\0') {
    snprintf(err, errn, "%s succeeded but left the detail \"%s\"", what,
             gko_last_error_detail());
    return 1;
  }
  return 0;
}

/* One iteration: every operator once, on `st`, inputs of parity `par`.
 * Returns 0, or 1 + the operator that failed (err says why). */
static int w_run(gko_handle_t h, const wplans *P, int kind, const wshared *S, const winputs *in,
                 int par, void *const out[NOPS], void *const ws[NOPS], const size_t wsb[NOPS],
                 cudaStream_t st, char *err, size_t errn) {
  if (w_check(gko_gelu_forward(h, GKO_GELU_ERF, GKO_DTYPE_F16, W_GELU_N, in->gx[par],
                               out[OP_GELU], st),
              "gko_gelu_forward", err, errn))
    return 1 + OP_GELU;
  if (w_check(gko_gemm_execute(P->gemm, 1.0f, in->ga[par], in->gb[par], 0.5f, in->gc,
                               out[OP_GEMM], in->gbias, ws[OP_GEMM], wsb[OP_GEMM], st),
              "gko_gemm_execute", err, errn))
    return 1 + OP_GEMM;
  if (w_check(gko_spmm_execute(P->spmm[kind], 1.0f, in->sb[par], 0.0f, out[OP_SPMM],
                               ws[OP_SPMM], wsb[OP_SPMM], st),
              "gko_spmm_execute", err, errn))
    return 1 + OP_SPMM;
  if (w_check(gko_conv_execute(P->conv, in->cx[par], S->cw, S->cbias, out[OP_CONV], ws[OP_CONV],
                               wsb[OP_CONV], st),
              "gko_conv_execute", err, errn))
    return 1 + OP_CONV;
  return 0;
}

/* ---- 1. concurrency: threads vs the serial result, bitwise -------------------------- */

/* What is compared:
 *   - every iteration, on the thread's stream, each of the 4 outputs against
 *     the serial result for the iteration's input parity, byte for byte, by
 *     gkt_count_diff (a device kernel: no copy, no synchronization); its
 *     counters (differing bytes, first differing iteration) are read once
 *     at the end;
 *   - every GKO_STRESS_CHECK_EVERY-th iteration (default 10, staggered per
 *     thread) and always the last, all 4 outputs copied back and memcmp'd
 *     with the serial result on the host (this also checks the device
 *     comparison; without tests/fault_kernel.o every iteration is checked
 *     this way). */
typedef struct {
  int id, shared;
  long iters, check_every;
  gko_handle_t shared_h;
  const wplans *shared_plans;
  const wshared *S;
  const winputs *in;
  const unsigned char *ref_host[2][NOPS];
  const void *ref_dev[2][NOPS];
  unsigned long long *ctr; /* device: per op {differing bytes, first iteration} */
  unsigned char *pinned;   /* host, all outputs */
  pthread_barrier_t *start;
  /* results */
  tnote note;
  long host_checks, host_bad;
  long host_first_iter;
  int host_first_op;
  size_t host_first_byte;
  unsigned long long dev_ctr[NOPS][2];
  int used_shared_plans, used_own_plans;
} sthread;

static int host_compare(sthread *a, long i, int par, cudaStream_t st) {
  size_t off = 0;
  for (int op = 0; op < NOPS; op++) {
    cudaError_t e = cudaMemcpyAsync(a->pinned + off, a->in->out[op], out_bytes(op),
                                    cudaMemcpyDeviceToHost, st);
    if (e != cudaSuccess) {
      tfail(a, "iteration %ld: cudaMemcpyAsync: %s", i, cudaGetErrorString(e));
      return -1;
    }
    off += out_bytes(op);
  }
  cudaError_t e = cudaStreamSynchronize(st);
  if (e != cudaSuccess) {
    tfail(a, "iteration %ld: cudaStreamSynchronize: %s", i, cudaGetErrorString(e));
    return -1;
  }
  a->host_checks++;
  off = 0;
  for (int op = 0; op < NOPS; op++) {
    const unsigned char *got = a->pinned + off, *want = a->ref_host[par][op];
    if (memcmp(got, want, out_bytes(op)) != 0) {
      if (a->host_bad++ == 0) {
        size_t b = 0;
        while (got[b] == want[b]) b++;
        a->host_first_iter = i;
        a->host_first_op = op;
        a->host_first_byte = b;
      }
    }
    off += out_bytes(op);
  }
  return 0;
}

static void *stress_thread(void *p) {
  sthread *a = p;
  cudaStream_t st = NULL;
  gko_handle_t h = NULL;
  wplans own;
  memset(&own, 0, sizeof own);
  void *ws[NOPS] = {NULL};
  size_t wsb[NOPS] = {0};
  const int kind = a->id % 2; /* even threads ROW_SPLIT, odd threads MERGE */
  int ready = 0, have_plans = 0;
  char err[512] = "";
  cudaError_t e = cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking);
  if (e != cudaSuccess) {
    tfail(a, "cudaStreamCreateWithFlags: %s", cudaGetErrorString(e));
  } else {
    gko_status_t s = GKO_STATUS_SUCCESS;
    if (a->shared) h = a->shared_h;
    else s = gko_create(&h);
    if (s != GKO_STATUS_SUCCESS) {
      tfail(a, "gko_create -> %s: %s", gko_status_name(s), gko_last_error_detail());
    } else if (wplans_create(h, a->S, st, &own, err, sizeof err) != 0) {
      tfail(a, "plans (created in the thread): %s", err);
    } else {
      have_plans = 1;
      size_t w1[NOPS], w2[NOPS];
      if (wplans_ws(&own, kind, w1, err, sizeof err) != 0 ||
          (a->shared && wplans_ws(a->shared_plans, kind, w2, err, sizeof err) != 0)) {
        tfail(a, "workspace sizes: %s", err);
      } else {
        ready = 1;
        for (int op = 0; op < NOPS && ready; op++) {
          wsb[op] = w1[op];
          if (a->shared && w2[op] > wsb[op]) wsb[op] = w2[op];
          if (wsb[op] && (e = cudaMalloc(&ws[op], wsb[op])) != cudaSuccess) {
            tfail(a, "cudaMalloc (workspace, %zu bytes): %s", wsb[op], cudaGetErrorString(e));
            ready = 0;
          }
        }
      }
    }
  }
  /* every thread reaches the barrier, ready or not, so that none waits forever */
  pthread_barrier_wait(a->start);
  for (long i = 0; ready && i < a->iters; i++) {
    const int par = (int)(mix64(((uint64_t)a->id << 40) ^ (uint64_t)i) & 1);
    /* shared variant: the plans shared by all threads every other pair of
     * iterations, the thread's own plans (from the shared handle) otherwise */
    const int use_shared = a->shared && ((i >> 1) & 1);
    const wplans *P = use_shared ? a->shared_plans : &own;
    if (use_shared) a->used_shared_plans = 1;
    else a->used_own_plans = 1;
    int bad = w_run(h, P, kind, a->S, a->in, par, a->in->out, ws, wsb, st, err, sizeof err);
    if (bad) {
      tfail(a, "iteration %ld, %s: %s", i, kOpName[bad - 1], err);
      break;
    }
    if (gkt_count_diff) {
      for (int op = 0; op < NOPS && !bad; op++) {
        int ce = gkt_count_diff(a->in->out[op], a->ref_dev[par][op], out_bytes(op),
                                (unsigned long long)i, a->ctr + 2 * op, st);
        if (ce != 0) {
          tfail(a, "iteration %ld: comparison kernel launch: %s", i,
                cudaGetErrorString((cudaError_t)ce));
          bad = 1;
        }
      }
      if (bad) break;
    }
    if (!gkt_count_diff || i % a->check_every == a->id % a->check_every || i == a->iters - 1)
      if (host_compare(a, i, par, st) != 0) break;
  }
  e = st ? cudaStreamSynchronize(st) : cudaSuccess;
  if (e != cudaSuccess) tfail(a, "final cudaStreamSynchronize: %s", cudaGetErrorString(e));
  if (gkt_count_diff && ready) {
    e = cudaMemcpy(a->dev_ctr, a->ctr, sizeof a->dev_ctr, cudaMemcpyDeviceToHost);
    if (e != cudaSuccess) tfail(a, "reading the counters: %s", cudaGetErrorString(e));
  }
  for (int op = 0; op < NOPS; op++) cudaFree(ws[op]);
  if (have_plans) wplans_destroy(&own);
  if (!a->shared && h) gko_destroy(h);
  if (st) cudaStreamDestroy(st);
  return NULL;
}

static void stress_body(int shared) {
  T_REQUIRE_GPU();
  const uint64_t seed = t_seed();
  const long iters = env_long("GKO_STRESS_ITERS", 1000, 1, 100000000);
  const long nth = env_long("GKO_STRESS_THREADS", 16, 1, 256);
  const long every = env_long("GKO_STRESS_CHECK_EVERY", 10, 1, 1000000);
  cr_log_info("stress (%s): %ld threads x %ld iterations, host check every %ld, device "
              "check %s, seed %llu",
              shared ? "one shared handle" : "one handle per thread", nth, iters, every,
              gkt_count_diff ? "every iteration" : "absent (fault_kernel.o not linked)",
              (unsigned long long)seed);
  char err[512] = "";
  wshared S;
  cr_assert_eq(wshared_create(&S, err, sizeof err), 0, "%s", err);
  gko_handle_t href = t_handle();
  cudaStream_t st;
  T_CUDA(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  wplans ref;
  cr_assert_eq(wplans_create(href, &S, st, &ref, err, sizeof err), 0, "%s", err);
  /* the serial reference: one thread, one stream, every thread's inputs */
  size_t rwsb[NOPS], w1[NOPS];
  cr_assert_eq(wplans_ws(&ref, 0, rwsb, err, sizeof err), 0, "%s", err);
  cr_assert_eq(wplans_ws(&ref, 1, w1, err, sizeof err), 0, "%s", err);
  if (w1[OP_SPMM] > rwsb[OP_SPMM]) rwsb[OP_SPMM] = w1[OP_SPMM];
  void *rws[NOPS], *rout[NOPS];
  for (int op = 0; op < NOPS; op++) {
    rws[op] = rwsb[op] ? t_dalloc(rwsb[op]) : NULL;
    rout[op] = t_dalloc(out_bytes(op));
  }
  winputs *in = calloc((size_t)nth, sizeof *in);
  sthread *th = calloc((size_t)nth, sizeof *th);
  pthread_t *tid = calloc((size_t)nth, sizeof *tid);
  cr_assert(in && th && tid);
  size_t all_out = 0;
  for (int op = 0; op < NOPS; op++) all_out += out_bytes(op);
  for (long t = 0; t < nth; t++) {
    cr_assert_eq(winputs_create(&in[t], err, sizeof err), 0, "%s", err);
    sthread *a = &th[t];
    a->id = (int)t;
    a->shared = shared;
    a->iters = iters;
    a->check_every = every;
    a->shared_h = href;
    a->shared_plans = &ref;
    a->S = &S;
    a->in = &in[t];
    a->host_first_iter = -1;
    for (int par = 0; par < 2; par++) {
      for (int op = 0; op < NOPS; op++)
        T_CUDA(cudaMemsetAsync(rout[op], T_POISON_BYTE, out_bytes(op), st));
      int bad = w_run(href, &ref, (int)(t % 2), &S, &in[t], par, rout, rws, rwsb, st, err,
                      sizeof err);
      cr_assert_eq(bad, 0, "serial reference, thread %ld parity %d: %s", t, par, err);
      T_CUDA(cudaStreamSynchronize(st));
      for (int op = 0; op < NOPS; op++) {
        unsigned char *hcopy = malloc(out_bytes(op));
        cr_assert(hcopy);
        t_d2h(hcopy, rout[op], out_bytes(op));
        int64_t nan_at = t_first_nan(kOutDtype[op], hcopy, kOutElems[op]);
        cr_assert_eq(nan_at, -1, "serial %s: element %lld is NaN (never written?)", kOpName[op],
                     (long long)nan_at);
        a->ref_host[par][op] = hcopy;
        void *dcopy = t_dalloc(out_bytes(op));
        T_CUDA(cudaMemcpy(dcopy, rout[op], out_bytes(op), cudaMemcpyDeviceToDevice));
        a->ref_dev[par][op] = dcopy;
      }
    }
    for (int op = 0; op < NOPS; op++)
      cr_assert(memcmp(a->ref_host[0][op], a->ref_host[1][op], out_bytes(op)) != 0,
                "%s: both input sets give the same output; the alternation would prove nothing",
                kOpName[op]);
    unsigned long long init[NOPS][2];
    for (int op = 0; op < NOPS; op++) {
      init[op][0] = 0;
      init[op][1] = ULLONG_MAX;
    }
    a->ctr = t_dalloc(sizeof init);
    t_h2d(a->ctr, init, sizeof init);
    T_CUDA(cudaMallocHost((void **)&a->pinned, all_out));
  }
  pthread_barrier_t start;
  cr_assert_eq(pthread_barrier_init(&start, NULL, (unsigned)nth), 0);
  for (long t = 0; t < nth; t++) {
    th[t].start = &start;
    cr_assert_eq(pthread_create(&tid[t], NULL, stress_thread, &th[t]), 0);
  }
  for (long t = 0; t < nth; t++) pthread_join(tid[t], NULL);
  pthread_barrier_destroy(&start);

  long checks = 0;
  for (long t = 0; t < nth; t++) {
    const sthread *a = &th[t];
    checks += a->host_checks;
    cr_expect_eq(a->note.failed, 0, "thread %ld (%s): %s [seed %llu]", t,
                 shared ? "shared handle" : "own handle", a->note.msg, (unsigned long long)seed);
    cr_expect_eq(a->host_bad, 0,
                 "thread %ld: %ld of %ld host checks differ from the serial result; first at "
                 "iteration %ld, %s, byte %zu [seed %llu]",
                 t, a->host_bad, a->host_checks, a->host_first_iter,
                 a->host_first_op >= 0 && a->host_first_op < NOPS ? kOpName[a->host_first_op] : "?",
                 a->host_first_byte, (unsigned long long)seed);
    if (gkt_count_diff)
      for (int op = 0; op < NOPS; op++)
        cr_expect_eq(a->dev_ctr[op][0], 0ull,
                     "thread %ld, %s: %llu bytes differed from the serial result over all "
                     "iterations, first at iteration %llu [seed %llu]",
                     t, kOpName[op], a->dev_ctr[op][0], a->dev_ctr[op][1],
                     (unsigned long long)seed);
    if (!a->note.failed) {
      cr_expect(a->host_checks >= 1, "thread %ld made no host check", t);
      if (shared)
        cr_expect(a->used_own_plans && (iters < 3 || a->used_shared_plans),
                  "thread %ld did not use both the shared and its own plans", t);
    }
  }
  cr_log_info("stress: %ld host checks of all outputs in total", checks);

  for (long t = 0; t < nth; t++) {
    for (int par = 0; par < 2; par++)
      for (int op = 0; op < NOPS; op++) {
        free((void *)th[t].ref_host[par][op]);
        cudaFree((void *)th[t].ref_dev[par][op]);
      }
    cudaFree(th[t].ctr);
    cudaFreeHost(th[t].pinned);
    winputs_free(&in[t]);
  }
  for (int op = 0; op < NOPS; op++) {
    cudaFree(rws[op]);
    cudaFree(rout[op]);
  }
  T_CUDA(cudaStreamSynchronize(st));
  wplans_destroy(&ref);
  wshared_free(&S);
  cudaStreamDestroy(st);
  gko_destroy(href);
  free(in);
  free(th);
  free(tid);
}

Test(stress, threads_one_handle_each, .timeout = 1200) { stress_body(0); }

Test(stress, threads_share_one_handle_and_plans, .timeout = 1200) { stress_body(1); }

/* ---- 2. CUDA graphs: capture, replay 100 times, compare with eager -------------------- */

typedef gko_status_t (*gop_fn)(void *ctx, void *out, cudaStream_t st);

typedef struct {
  const char *name;
  gop_fn fn;
  void *ctx;
  size_t bytes;      /* of the output */
  gko_dtype_t dt;    /* of the output's elements */
  const void *init;  /* device: what the output holds before every run */
} gop;

/* Eager run into one buffer; capture (global mode) into another, checking
 * the call succeeds, the capture stays active and ends, the graph is not
 * empty and nothing ran during the capture; then `replays` launches, each
 * after resetting the output to `init` (poison, or C for an accumulating
 * call), each compared with the eager result byte for byte. */
static void graph_vs_eager(const gop *op) {
  const long replays = env_long("GKO_GRAPH_REPLAYS", 100, 1, 100000);
  cudaStream_t st;
  T_CUDA(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  void *eager = t_dalloc(op->bytes), *gout = t_dalloc(op->bytes);
  unsigned char *he = malloc(op->bytes), *hg = malloc(op->bytes), *hinit = malloc(op->bytes);
  cr_assert(he && hg && hinit);
  t_d2h(hinit, op->init, op->bytes);

  T_CUDA(cudaMemcpyAsync(eager, op->init, op->bytes, cudaMemcpyDeviceToDevice, st));
  gko_status_t s = op->fn(op->ctx, eager, st);
  cr_assert_eq(s, GKO_STATUS_SUCCESS, "%s (eager): %s: %s", op->name, gko_status_name(s),
               gko_last_error_detail());
  T_CUDA(cudaStreamSynchronize(st));
  t_d2h(he, eager, op->bytes);
  const int64_t nan_at = t_first_nan(op->dt, he, op->bytes / gko_dtype_size(op->dt));
  cr_assert_eq(nan_at, -1, "%s (eager): element %lld is NaN (never written?)", op->name,
               (long long)nan_at);

  T_CUDA(cudaMemcpy(gout, op->init, op->bytes, cudaMemcpyDeviceToDevice));
  cudaGraph_t g = NULL;
  cudaGraphExec_t ge = NULL;
  T_CUDA(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
  s = op->fn(op->ctx, gout, st);
  enum cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
  cudaError_t ie = cudaStreamIsCapturing(st, &cs);
  cudaError_t ee = cudaStreamEndCapture(st, &g);
  cr_assert_eq(s, GKO_STATUS_SUCCESS, "%s under capture: %s: %s", op->name, gko_status_name(s),
               gko_last_error_detail());
  cr_assert_eq(ie, cudaSuccess, "cudaStreamIsCapturing after %s: %s", op->name,
               cudaGetErrorString(ie));
  cr_assert_eq(cs, cudaStreamCaptureStatusActive,
               "%s left the capture %s", op->name,
               cs == cudaStreamCaptureStatusInvalidated ? "invalidated" : "ended");
  cr_assert_eq(ee, cudaSuccess, "cudaStreamEndCapture after %s: %s", op->name,
               cudaGetErrorString(ee));
  size_t nodes = 0;
  T_CUDA(cudaGraphGetNodes(g, NULL, &nodes));
  cr_assert(nodes > 0, "%s: the captured graph is empty", op->name);
  T_CUDA(cudaStreamSynchronize(st));
  t_d2h(hg, gout, op->bytes);
  cr_assert_eq(memcmp(hg, hinit, op->bytes), 0, "%s: the output changed during capture",
               op->name);
  T_CUDA(cudaGraphInstantiate(&ge, g, 0));
  long bad = 0, first = -1;
  for (long r = 0; r < replays; r++) {
    T_CUDA(cudaMemcpyAsync(gout, op->init, op->bytes, cudaMemcpyDeviceToDevice, st));
    T_CUDA(cudaGraphLaunch(ge, st));
    T_CUDA(cudaStreamSynchronize(st));
    t_d2h(hg, gout, op->bytes);
    if (memcmp(hg, he, op->bytes) != 0 && bad++ == 0) first = r;
  }
  cr_expect_eq(bad, 0, "%s: %ld of %ld graph replays differ from the eager result (first: "
               "replay %ld)", op->name, bad, replays, first);
  cr_log_info("%s: %zu graph nodes, %ld replays bitwise equal to eager", op->name, nodes,
              replays - bad);
  cudaGraphExecDestroy(ge);
  cudaGraphDestroy(g);
  cudaStreamDestroy(st);
  cudaFree(eager);
  cudaFree(gout);
  free(he);
  free(hg);
  free(hinit);
}

/* GELU */
typedef struct {
  gko_handle_t h;
  int dir; /* 0 forward, 1 backward */
  gko_gelu_approx_t approx;
  gko_dtype_t dt;
  int64_t n;
  const void *x, *dy; /* x NULL: in place (x = out, whose init is the input) */
} gelu_ctx;

static gko_status_t gelu_fn(void *p, void *out, cudaStream_t st) {
  const gelu_ctx *c = p;
  const void *x = c->x ? c->x : out;
  if (c->dir == 0) return gko_gelu_forward(c->h, c->approx, c->dt, c->n, x, out, st);
  return gko_gelu_backward(c->h, c->approx, c->dt, c->n, c->dy, x, out, st);
}

Test(stress_graph, gelu_forward_and_backward) {
  gko_handle_t h = t_gpu_setup(NULL);
  const int64_t n = 100003;
  void *x16 = rand_dev(GKO_DTYPE_F16, n, -5, 5), *dy16 = rand_dev(GKO_DTYPE_F16, n, -2, 2);
  void *xb = rand_dev(GKO_DTYPE_BF16, n, -5, 5), *dyb = rand_dev(GKO_DTYPE_BF16, n, -2, 2);
  void *x32 = rand_dev(GKO_DTYPE_F32, n, -5, 5);
  void *poison = poisoned_dev(n * 4);
  gelu_ctx c1 = {h, 0, GKO_GELU_ERF, GKO_DTYPE_F16, n, x16, NULL};
  gop o1 = {"GELU-erf f16 forward", gelu_fn, &c1, n * 2, GKO_DTYPE_F16, poison};
  graph_vs_eager(&o1);
  gelu_ctx c2 = {h, 1, GKO_GELU_TANH, GKO_DTYPE_BF16, n, xb, dyb};
  gop o2 = {"GELU-tanh bf16 backward", gelu_fn, &c2, n * 2, GKO_DTYPE_BF16, poison};
  graph_vs_eager(&o2);
  gelu_ctx c3 = {h, 1, GKO_GELU_ERF, GKO_DTYPE_F16, n, x16, dy16};
  gop o3 = {"GELU-erf f16 backward", gelu_fn, &c3, n * 2, GKO_DTYPE_F16, poison};
  graph_vs_eager(&o3);
  /* in place: the output starts as x, every run restores it */
  gelu_ctx c4 = {h, 0, GKO_GELU_TANH, GKO_DTYPE_F32, n, NULL, NULL};
  gop o4 = {"GELU-tanh f32 forward in place", gelu_fn, &c4, n * 4, GKO_DTYPE_F32, x32};
  graph_vs_eager(&o4);
  cudaFree(x16);
  cudaFree(dy16);
  cudaFree(xb);
  cudaFree(dyb);
  cudaFree(x32);
  cudaFree(poison);
  gko_destroy(h);
}

/* GEMM execute */
typedef struct {
  gko_gemm_plan_t plan;
  const void *a, *b, *c, *bias;
  float alpha, beta;
  void *ws;
  size_t wsb;
} gemm_ctx;

static gko_status_t gemm_fn(void *p, void *out, cudaStream_t st) {
  const gemm_ctx *c = p;
  return gko_gemm_execute(c->plan, c->alpha, c->a, c->b, c->beta, c->c, out, c->bias, c->ws,
                          c->wsb, st);
}

/* The plan of graph case `name` was made (1), or was NOT_SUPPORTED (a
 * backend this GPU lacks: logged, the case skipped, 0); any other status
 * fails the test. */
static int graph_plan_made(const char *name, gko_status_t s) {
  if (s == GKO_STATUS_NOT_SUPPORTED) {
    cr_log_info("SKIPPED part: %s: not supported on this GPU (%s)", name, gko_last_error_detail());
    return 0;
  }
  cr_assert_eq(s, GKO_STATUS_SUCCESS, "%s: plan: %s: %s", name, gko_status_name(s),
               gko_last_error_detail());
  return 1;
}

/* Plans, fills and runs one GEMM graph case; NOT_SUPPORTED plans (a
 * backend this GPU lacks) are logged and skipped. */
static void gemm_graph_case(gko_handle_t h, const char *name, gko_dtype_t ab, gko_dtype_t cd,
                            int64_t m, int64_t n, int64_t k, gko_epilogue_t ep, int backend,
                            int pad, float beta) {
  gko_gemm_desc_t d = NULL;
  T_OK(gko_gemm_desc_create(&d, ab, cd, m, n, k));
  T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_EPILOGUE, ep));
  T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_BACKEND, backend));
  T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_PAD, pad));
  gko_gemm_plan_t plan = NULL;
  gko_status_t s = gko_gemm_plan_create(h, d, &plan);
  gko_gemm_desc_destroy(d);
  if (!graph_plan_made(name, s)) return;
  char desc[512];
  T_OK(gko_gemm_plan_describe(plan, desc, sizeof desc, NULL));
  cr_log_info("%s: %s", name, desc);
  gemm_ctx c;
  memset(&c, 0, sizeof c);
  c.plan = plan;
  c.a = rand_dev(ab, (size_t)(m * k), -1, 1);
  c.b = rand_dev(ab, (size_t)(k * n), -1, 1);
  c.c = beta != 0.0f ? rand_dev(cd, (size_t)(m * n), -1, 1) : NULL;
  c.bias = (ep & 1) ? rand_dev(cd, (size_t)n, -1, 1) : NULL;
  c.alpha = 1.0f;
  c.beta = beta;
  T_OK(gko_gemm_workspace_size(plan, &c.wsb));
  c.ws = c.wsb ? t_dalloc(c.wsb) : NULL;
  void *poison = poisoned_dev((size_t)(m * n) * gko_dtype_size(cd));
  gop o = {name, gemm_fn, &c, (size_t)(m * n) * gko_dtype_size(cd), cd, poison};
  graph_vs_eager(&o);
  gko_gemm_plan_destroy(plan);
  cudaFree((void *)c.a);
  cudaFree((void *)c.b);
  cudaFree((void *)c.c);
  cudaFree((void *)c.bias);
  cudaFree(c.ws);
  cudaFree(poison);
}

Test(stress_graph, gemm_execute) {
  gko_handle_t h = t_gpu_setup(NULL);
  gemm_graph_case(h, "GEMM f16 64x96x128 beta 0.5 bias+GELU-tanh (AUTO)", GKO_DTYPE_F16,
                  GKO_DTYPE_F16, W_M, W_N, W_K, GKO_EPILOGUE_BIAS_GELU_TANH,
                  GKO_GEMM_BACKEND_AUTO, GKO_GEMM_PAD_AUTO, 0.5f);
  /* padded copies + cuBLASLt + gko's GELU-erf pass: three kinds of kernels */
  gemm_graph_case(h, "GEMM bf16->f32 100x72x1027 bias+GELU-erf, PAD_ALWAYS", GKO_DTYPE_BF16,
                  GKO_DTYPE_F32, 100, 72, 1027, GKO_EPILOGUE_BIAS_GELU_ERF,
                  GKO_GEMM_BACKEND_CUBLASLT, GKO_GEMM_PAD_ALWAYS, 0.0f);
  /* gko's WMMA skinny kernel with split-K: partials in the workspace, then
   * the reduction kernel */
  gemm_graph_case(h, "GEMM f16 8x300x4096 bias+GELU-erf (WMMA skinny)", GKO_DTYPE_F16,
                  GKO_DTYPE_F16, 8, 300, 4096, GKO_EPILOGUE_BIAS_GELU_ERF,
                  GKO_GEMM_BACKEND_WMMA, GKO_GEMM_PAD_AUTO, 0.25f);
  gko_destroy(h);
}

/* the one-shot call: "Capture: yes (the allocation becomes a graph memory
 * node)" */
typedef struct {
  gko_handle_t h;
  int64_t m, n, k, lda;
  const void *a, *b, *bias;
} oneshot_ctx;

static gko_status_t oneshot_fn(void *p, void *out, cudaStream_t st) {
  const oneshot_ctx *c = p;
  return gko_gemm(c->h, GKO_OP_N, GKO_OP_N, c->m, c->n, c->k, 1.0f, GKO_DTYPE_F16, c->a, c->lda,
                  c->b, -1, 0.0f, GKO_DTYPE_F16, NULL, -1, out, -1, GKO_EPILOGUE_BIAS_RELU,
                  c->bias, st);
}

Test(stress_graph, gemm_one_shot_allocates_in_the_graph) {
  gko_handle_t h = t_gpu_setup(NULL);
  /* A 2 bytes past a 256-byte boundary with an odd leading dimension: the
   * one-shot plan promises 2-byte alignment (padded copies into its
   * stream-ordered workspace where cuBLASLt wants them) */
  const int64_t m = 96, n = 80, k = 100, lda = 101;
  oneshot_ctx c = {h, m, n, k, lda, NULL, NULL, NULL};
  char *abuf = rand_dev(GKO_DTYPE_F16, (size_t)(m * lda + 1), -1, 1);
  c.a = abuf + 2;
  c.b = rand_dev(GKO_DTYPE_F16, (size_t)(k * n), -1, 1);
  c.bias = rand_dev(GKO_DTYPE_F16, (size_t)n, -1, 1);
  void *poison = poisoned_dev((size_t)(m * n) * 2);
  gop o = {"gko_gemm one-shot f16 96x80x100, A misaligned, bias+ReLU", oneshot_fn, &c,
           (size_t)(m * n) * 2, GKO_DTYPE_F16, poison};
  graph_vs_eager(&o);
  cudaFree(abuf);
  cudaFree((void *)c.b);
  cudaFree((void *)c.bias);
  cudaFree(poison);
  gko_destroy(h);
}

/* SpMM execute (C = A B + 0.5 C: the output starts as C before every run) */
typedef struct {
  gko_spmm_plan_t plan;
  const void *B;
  void *ws;
  size_t wsb;
} spmm_ctx;

static gko_status_t spmm_fn(void *p, void *out, cudaStream_t st) {
  const spmm_ctx *c = p;
  return gko_spmm_execute(c->plan, 1.0f, c->B, 0.5f, out, c->ws, c->wsb, st);
}

Test(stress_graph, spmm_execute) {
  gko_handle_t h = t_gpu_setup(NULL);
  char err[512] = "";
  wshared S;
  cr_assert_eq(wshared_create(&S, err, sizeof err), 0, "%s", err);
  gko_csr_check_t chk = GKO_CSR_VALID;
  T_OK(gko_csr_validate(h, S.csr, NULL, 0, &chk, NULL, NULL, NULL, NULL));
  void *B = rand_dev(GKO_DTYPE_F32, W_SP_K * W_SP_N, -1, 1);
  void *C0 = rand_dev(GKO_DTYPE_F32, W_SP_M * W_SP_N, -1, 1);
  const gko_spmm_kernel_t kinds[2] = {GKO_SPMM_KERNEL_ROW_SPLIT, GKO_SPMM_KERNEL_MERGE};
  const char *names[2] = {"SpMM f32 ROW_SPLIT n=32 beta 0.5", "SpMM f32 MERGE n=32 beta 0.5"};
  for (int i = 0; i < 2; i++) {
    spmm_ctx c = {NULL, B, NULL, 0};
    T_OK(gko_spmm_plan_create(h, S.csr, W_SP_N, GKO_LAYOUT_ROW_MAJOR, W_SP_N, W_SP_N, kinds[i],
                              &c.plan, NULL));
    T_OK(gko_spmm_workspace_size(c.plan, &c.wsb));
    c.ws = c.wsb ? t_dalloc(c.wsb) : NULL;
    gop o = {names[i], spmm_fn, &c, W_SP_M * W_SP_N * 4, GKO_DTYPE_F32, C0};
    graph_vs_eager(&o);
    gko_spmm_plan_destroy(c.plan);
    cudaFree(c.ws);
  }
  cudaFree(B);
  cudaFree(C0);
  wshared_free(&S);
  gko_destroy(h);
}

/* conv execute */
typedef struct {
  gko_conv_plan_t plan;
  const void *x, *w, *bias;
  void *ws;
  size_t wsb;
} conv_ctx;

static gko_status_t conv_fn(void *p, void *out, cudaStream_t st) {
  const conv_ctx *c = p;
  return gko_conv_execute(c->plan, c->x, c->w, c->bias, out, c->ws, c->wsb, st);
}

static void conv_graph_case(gko_handle_t h, const char *name, gko_dtype_t dt,
                            gko_conv_layout_t L, int64_t n, int64_t c, int64_t hh, int64_t ww,
                            int64_t k, int64_t r, int64_t s, int64_t stride, int64_t pad,
                            int64_t max_chunk, gko_epilogue_t ep) {
  gko_conv_desc_t d = NULL;
  T_OK(gko_conv_desc_create(&d, dt, L, n, c, hh, ww, k, r, s));
  T_OK(gko_conv_desc_set(d, GKO_CONV_ATTR_STRIDE_H, stride));
  T_OK(gko_conv_desc_set(d, GKO_CONV_ATTR_STRIDE_W, stride));
  T_OK(gko_conv_desc_set(d, GKO_CONV_ATTR_PAD_H, pad));
  T_OK(gko_conv_desc_set(d, GKO_CONV_ATTR_PAD_W, pad));
  T_OK(gko_conv_desc_set(d, GKO_CONV_ATTR_MAX_CHUNK, max_chunk));
  T_OK(gko_conv_desc_set(d, GKO_CONV_ATTR_EPILOGUE, ep));
  int64_t oh = 0, ow = 0;
  T_OK(gko_conv_output_shape(d, &oh, &ow));
  conv_ctx cc;
  memset(&cc, 0, sizeof cc);
  gko_status_t st = gko_conv_plan_create(h, d, &cc.plan);
  gko_conv_desc_destroy(d);
  if (!graph_plan_made(name, st)) return;
  int64_t chunks = 0, path = 0;
  T_OK(gko_conv_plan_get(cc.plan, GKO_CONV_INFO_CHUNKS, &chunks));
  T_OK(gko_conv_plan_get(cc.plan, GKO_CONV_INFO_PATH, &path));
  cr_log_info("%s: path %lld, %lld chunk(s)", name, (long long)path, (long long)chunks);
  cc.x = rand_dev(dt, (size_t)(n * c * hh * ww), -1, 1);
  cc.w = rand_dev(dt, (size_t)(k * c * r * s), -0.5, 0.5);
  cc.bias = (ep & 1) ? rand_dev(dt, (size_t)k, -1, 1) : NULL;
  T_OK(gko_conv_workspace_size(cc.plan, &cc.wsb));
  /* poisoned: written before the kernels read it, for initcheck, which does not see the TMA
   * stores of the sm_90 GEMMs that write D there (docs/reliability.md); a real read of an
   * unwritten word would still show, as poison in y against the eager run's */
  cc.ws = cc.wsb ? poisoned_dev(cc.wsb) : NULL;
  const size_t yb = (size_t)(n * k * oh * ow) * gko_dtype_size(dt);
  void *poison = poisoned_dev(yb);
  gop o = {name, conv_fn, &cc, yb, dt, poison};
  graph_vs_eager(&o);
  gko_conv_plan_destroy(cc.plan);
  cudaFree((void *)cc.x);
  cudaFree((void *)cc.w);
  cudaFree((void *)cc.bias);
  cudaFree(cc.ws);
  cudaFree(poison);
}

Test(stress_graph, conv_execute) {
  gko_handle_t h = t_gpu_setup(NULL);
  conv_graph_case(h, "conv NHWC f16 3x3 pad 1 bias+GELU-erf (im2col, filter copy)",
                  GKO_DTYPE_F16, GKO_CONV_LAYOUT_NHWC, W_CV_N, W_CV_C, W_CV_H, W_CV_W, W_CV_K, 3,
                  3, 1, 1, 0, GKO_EPILOGUE_BIAS_GELU_ERF);
  conv_graph_case(h, "conv NCHW bf16 3x3 stride 2 bias+ReLU, 3 chunks of 1 image",
                  GKO_DTYPE_BF16, GKO_CONV_LAYOUT_NCHW, 3, 8, 9, 9, 16, 3, 3, 2, 1, 1,
                  GKO_EPILOGUE_BIAS_RELU);
  conv_graph_case(h, "conv NHWC f32 1x1 bias (direct GEMM)", GKO_DTYPE_F32,
                  GKO_CONV_LAYOUT_NHWC, 2, 16, 6, 6, 8, 1, 1, 1, 0, 0, GKO_EPILOGUE_BIAS);
  gko_destroy(h);
}

/* gko_gemm_plan_create and gko_conv_plan_create say "Capture: yes (host work
 * only)": made while the stream is being captured (global mode, a GEMM
 * shape no plan of this process has seen, so cuBLASLt's heuristic runs),
 * they succeed, the capture stays active, and their executes, captured in
 * the same graph, replay bitwise equal to eager runs of the same plans. */
Test(stress_graph, plans_created_during_capture) {
  gko_handle_t h = t_gpu_setup(NULL);
  const int64_t m = 72, n = 40, k = 56;
  const int64_t cn = 1, cc = 8, ch = 7, cw = 7, ck = 8; /* NHWC f16 3x3 pad 1 */
  void *a = rand_dev(GKO_DTYPE_F16, m * k, -1, 1), *b = rand_dev(GKO_DTYPE_F16, k * n, -1, 1);
  void *bias = rand_dev(GKO_DTYPE_F16, n, -1, 1);
  void *x = rand_dev(GKO_DTYPE_F16, cn * cc * ch * cw, -1, 1);
  void *w = rand_dev(GKO_DTYPE_F16, ck * cc * 9, -0.5, 0.5);
  const size_t db = m * n * 2, yb = cn * ck * ch * cw * 2, wsb = (size_t)64 << 20;
  void *d = poisoned_dev(db), *y = poisoned_dev(yb), *ws = t_dalloc(wsb);
  void *ws2 = t_dalloc(wsb);
  cudaStream_t st;
  T_CUDA(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  gko_gemm_desc_t gd = NULL;
  gko_gemm_plan_t gp = NULL;
  gko_conv_desc_t cd = NULL;
  gko_conv_plan_t cp = NULL;
  cudaGraph_t g = NULL;
  T_CUDA(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
  gko_status_t s1 = gko_gemm_desc_create(&gd, GKO_DTYPE_F16, GKO_DTYPE_F16, m, n, k);
  if (!s1) s1 = gko_gemm_desc_set(gd, GKO_GEMM_ATTR_EPILOGUE, GKO_EPILOGUE_BIAS_RELU);
  if (!s1) s1 = gko_gemm_plan_create(h, gd, &gp);
  char d1[512];
  snprintf(d1, sizeof d1, "%s", gko_last_error_detail());
  gko_status_t s2 = gko_conv_desc_create(&cd, GKO_DTYPE_F16, GKO_CONV_LAYOUT_NHWC, cn, cc, ch, cw,
                                         ck, 3, 3);
  if (!s2) s2 = gko_conv_desc_set(cd, GKO_CONV_ATTR_PAD_H, 1);
  if (!s2) s2 = gko_conv_desc_set(cd, GKO_CONV_ATTR_PAD_W, 1);
  if (!s2) s2 = gko_conv_plan_create(h, cd, &cp);
  char d2[512];
  snprintf(d2, sizeof d2, "%s", gko_last_error_detail());
  enum cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
  cudaError_t ie = cudaStreamIsCapturing(st, &cs);
  size_t gneed = 0, cneed = 0;
  gko_status_t s3 = GKO_STATUS_INTERNAL, s4 = GKO_STATUS_INTERNAL;
  if (!s1 && !s2 && cs == cudaStreamCaptureStatusActive) {
    gko_gemm_workspace_size(gp, &gneed);
    gko_conv_workspace_size(cp, &cneed);
    if (gneed <= wsb && cneed <= wsb) {
      s3 = gko_gemm_execute(gp, 1.0f, a, b, 0.0f, NULL, d, bias, ws, wsb, st);
      s4 = gko_conv_execute(cp, x, w, NULL, y, ws2, wsb, st);
    }
  }
  cudaError_t ee = cudaStreamEndCapture(st, &g);
  cr_assert_eq(s1, GKO_STATUS_SUCCESS, "GEMM plan during capture: %s: %s", gko_status_name(s1), d1);
  cr_assert_eq(s2, GKO_STATUS_SUCCESS, "conv plan during capture: %s: %s", gko_status_name(s2), d2);
  cr_assert_eq(ie, cudaSuccess, "cudaStreamIsCapturing: %s", cudaGetErrorString(ie));
  cr_assert_eq(cs, cudaStreamCaptureStatusActive, "creating the plans %s the capture",
               cs == cudaStreamCaptureStatusInvalidated ? "invalidated" : "ended");
  cr_assert(gneed <= wsb && cneed <= wsb, "workspaces %zu / %zu exceed the %zu bytes allocated",
            gneed, cneed, wsb);
  cr_assert_eq(s3, GKO_STATUS_SUCCESS, "GEMM execute under capture: %s",
               gko_status_name(s3));
  cr_assert_eq(s4, GKO_STATUS_SUCCESS, "conv execute under capture: %s",
               gko_status_name(s4));
  cr_assert_eq(ee, cudaSuccess, "cudaStreamEndCapture: %s", cudaGetErrorString(ee));
  T_CUDA(cudaStreamSynchronize(st));
  cr_assert_eq(first_unpoisoned(d, db), -1, "D written during capture");
  cr_assert_eq(first_unpoisoned(y, yb), -1, "y written during capture");
  /* eager runs of the same plans */
  void *de = poisoned_dev(db), *ye = poisoned_dev(yb);
  T_OK(gko_gemm_execute(gp, 1.0f, a, b, 0.0f, NULL, de, bias, ws, wsb, st));
  T_OK(gko_conv_execute(cp, x, w, NULL, ye, ws2, wsb, st));
  T_CUDA(cudaStreamSynchronize(st));
  unsigned char *hde = malloc(db), *hye = malloc(yb), *hd = malloc(db), *hy = malloc(yb);
  cr_assert(hde && hye && hd && hy);
  t_d2h(hde, de, db);
  t_d2h(hye, ye, yb);
  cr_assert_eq(t_first_nan(GKO_DTYPE_F16, hde, db / 2), -1, "GEMM output not fully written");
  cr_assert_eq(t_first_nan(GKO_DTYPE_F16, hye, yb / 2), -1, "conv output not fully written");
  cudaGraphExec_t ge = NULL;
  T_CUDA(cudaGraphInstantiate(&ge, g, 0));
  const long replays = env_long("GKO_GRAPH_REPLAYS", 100, 1, 100000);
  long bad = 0;
  for (long r = 0; r < replays; r++) {
    T_CUDA(cudaMemsetAsync(d, T_POISON_BYTE, db, st));
    T_CUDA(cudaMemsetAsync(y, T_POISON_BYTE, yb, st));
    T_CUDA(cudaGraphLaunch(ge, st));
    T_CUDA(cudaStreamSynchronize(st));
    t_d2h(hd, d, db);
    t_d2h(hy, y, yb);
    bad += memcmp(hd, hde, db) != 0 || memcmp(hy, hye, yb) != 0;
  }
  cr_expect_eq(bad, 0, "%ld of %ld replays differ from the eager results", bad, replays);
  cudaGraphExecDestroy(ge);
  cudaGraphDestroy(g);
  gko_gemm_plan_destroy(gp);
  gko_gemm_desc_destroy(gd);
  gko_conv_plan_destroy(cp);
  gko_conv_desc_destroy(cd);
  free(hde);
  free(hye);
  free(hd);
  free(hy);
  void *bufs[] = {a, b, bias, x, w, d, y, ws, ws2, de, ye};
  for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) cudaFree(bufs[i]);
  cudaStreamDestroy(st);
  gko_destroy(h);
}

/* gko_csr_validate and gko_spmm_plan_create synchronize, and say "Capture:
 * no (GKO_STATUS_NOT_SUPPORTED on a capturing stream)": inside a global-mode
 * capture they return that status with a detail, leave their outputs
 * untouched, enqueue nothing, and the capture stays active: it ends, and
 * the graph (two GELU calls around them) replays correctly. */
Test(stress_graph, non_capturable_calls_refuse_and_keep_the_capture) {
  gko_handle_t h = t_gpu_setup(NULL);
  char err[512] = "";
  wshared S;
  cr_assert_eq(wshared_create(&S, err, sizeof err), 0, "%s", err);
  size_t vws_bytes = 0;
  T_OK(gko_csr_validate_workspace_size(h, S.csr, &vws_bytes));
  void *vws = t_dalloc(vws_bytes);
  const int64_t n = 4099;
  void *x = rand_dev(GKO_DTYPE_F16, n, -4, 4);
  void *ye = poisoned_dev(n * 2), *ya = poisoned_dev(n * 2), *yb = poisoned_dev(n * 2);
  cudaStream_t st;
  T_CUDA(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  T_OK(gko_gelu_forward(h, GKO_GELU_ERF, GKO_DTYPE_F16, n, x, ye, st));
  T_CUDA(cudaStreamSynchronize(st));

  cudaGraph_t g = NULL;
  T_CUDA(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
  gko_status_t s0 = gko_gelu_forward(h, GKO_GELU_ERF, GKO_DTYPE_F16, n, x, ya, st);
  gko_csr_check_t chk = (gko_csr_check_t)9;
  int64_t row = -7;
  int sorted = -5, dups = -5;
  struct {
    const char *what;
    gko_status_t s;
    char detail[512];
  } r[4];
  r[0].what = "gko_csr_validate (own workspace)";
  r[0].s = gko_csr_validate(h, S.csr, NULL, 0, &chk, &row, &sorted, &dups, st);
  snprintf(r[0].detail, sizeof r[0].detail, "%s", gko_last_error_detail());
  r[1].what = "gko_csr_validate (caller's workspace)";
  r[1].s = gko_csr_validate(h, S.csr, vws, vws_bytes, &chk, &row, &sorted, &dups, st);
  snprintf(r[1].detail, sizeof r[1].detail, "%s", gko_last_error_detail());
  gko_spmm_plan_t const keep = (gko_spmm_plan_t)(uintptr_t)0x5a5a;
  gko_spmm_plan_t p1 = keep, p2 = keep;
  r[2].what = "gko_spmm_plan_create (AUTO)";
  r[2].s = gko_spmm_plan_create(h, S.csr, W_SP_N, GKO_LAYOUT_ROW_MAJOR, W_SP_N, W_SP_N,
                                GKO_SPMM_KERNEL_AUTO, &p1, st);
  snprintf(r[2].detail, sizeof r[2].detail, "%s", gko_last_error_detail());
  r[3].what = "gko_spmm_plan_create (MERGE)";
  r[3].s = gko_spmm_plan_create(h, S.csr, W_SP_N, GKO_LAYOUT_ROW_MAJOR, W_SP_N, W_SP_N,
                                GKO_SPMM_KERNEL_MERGE, &p2, st);
  snprintf(r[3].detail, sizeof r[3].detail, "%s", gko_last_error_detail());
  enum cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
  cudaError_t ie = cudaStreamIsCapturing(st, &cs);
  gko_status_t s5 = gko_gelu_forward(h, GKO_GELU_ERF, GKO_DTYPE_F16, n, x, yb, st);
  cudaError_t ee = cudaStreamEndCapture(st, &g);

  cr_assert_eq(s0, GKO_STATUS_SUCCESS, "GELU before the refusals: %s", gko_status_name(s0));
  for (int i = 0; i < 4; i++) {
    cr_expect_eq(r[i].s, GKO_STATUS_NOT_SUPPORTED, "%s on a capturing stream -> %s (wanted "
                 "GKO_STATUS_NOT_SUPPORTED): %s", r[i].what, gko_status_name(r[i].s),
                 r[i].detail);
    cr_expect(strstr(r[i].detail, "captur") != NULL, "%s: the detail does not mention the "
              "capture: \"%s\"", r[i].what, r[i].detail);
  }
  cr_expect(chk == (gko_csr_check_t)9 && row == -7 && sorted == -5 && dups == -5,
            "gko_csr_validate wrote its outputs while refusing (check %d, row %lld)", (int)chk,
            (long long)row);
  cr_expect(p1 == keep && p2 == keep, "gko_spmm_plan_create wrote *plan while refusing");
  cr_assert_eq(ie, cudaSuccess, "cudaStreamIsCapturing: %s", cudaGetErrorString(ie));
  cr_assert_eq(cs, cudaStreamCaptureStatusActive, "the refused calls %s the capture",
               cs == cudaStreamCaptureStatusInvalidated ? "invalidated" : "ended");
  cr_assert_eq(s5, GKO_STATUS_SUCCESS, "GELU after the refusals: %s", gko_status_name(s5));
  cr_assert_eq(ee, cudaSuccess, "cudaStreamEndCapture: %s", cudaGetErrorString(ee));
  size_t nodes = 0;
  T_CUDA(cudaGraphGetNodes(g, NULL, &nodes));
  cr_expect_eq(nodes, 2u, "the graph holds %zu nodes, wanted the 2 GELU kernels (the refused "
               "calls must enqueue nothing)", nodes);
  cudaGraphExec_t ge = NULL;
  T_CUDA(cudaGraphInstantiate(&ge, g, 0));
  T_CUDA(cudaGraphLaunch(ge, st));
  T_CUDA(cudaStreamSynchronize(st));
  unsigned char *he = malloc(n * 2), *ha = malloc(n * 2), *hb = malloc(n * 2);
  cr_assert(he && ha && hb);
  t_d2h(he, ye, n * 2);
  t_d2h(ha, ya, n * 2);
  t_d2h(hb, yb, n * 2);
  cr_expect_eq(memcmp(ha, he, n * 2), 0, "first captured GELU differs from eager");
  cr_expect_eq(memcmp(hb, he, n * 2), 0, "second captured GELU differs from eager");
  /* after the capture the same calls work */
  T_OK(gko_csr_validate(h, S.csr, NULL, 0, &chk, &row, &sorted, &dups, st));
  cr_expect_eq(chk, GKO_CSR_VALID);
  gko_spmm_plan_t p3 = NULL;
  T_OK(gko_spmm_plan_create(h, S.csr, W_SP_N, GKO_LAYOUT_ROW_MAJOR, W_SP_N, W_SP_N,
                            GKO_SPMM_KERNEL_AUTO, &p3, st));
  gko_spmm_plan_destroy(p3);
  free(he);
  free(ha);
  free(hb);
  cudaGraphExecDestroy(ge);
  cudaGraphDestroy(g);
  cudaStreamDestroy(st);
  cudaFree(vws);
  cudaFree(x);
  cudaFree(ye);
  cudaFree(ya);
  cudaFree(yb);
  wshared_free(&S);
  gko_destroy(h);
}

/* ---- 3. leaks: create / plan / execute / destroy cycles ---------------------------------- */

typedef struct {
  const wshared *S;
  const winputs *in;
  void *ws[NOPS]; /* large enough for any plan of the cycle */
  size_t wsb[NOPS];
  void *d_oneshot;
} leak_ctx;

#define LK(call)                                                                            \
  do {                                                                                      \
    gko_status_t s_ = (call);                                                               \
    cr_assert_eq(s_, GKO_STATUS_SUCCESS, "cycle %ld: %s -> %s: %s", cyc, #call,             \
                 gko_status_name(s_), gko_last_error_detail());                             \
  } while (0)

/* One cycle: every object gko has, created, used and destroyed, including
 * the calls that allocate device memory themselves (the one-shot GEMM's
 * stream-ordered workspace, gko_csr_validate without a workspace, the SpMM
 * plans' row statistics and MERGE partition). */
static void leak_cycle(const leak_ctx *L, cudaStream_t st, long cyc) {
  const wshared *S = L->S;
  const winputs *in = L->in;
  gko_handle_t h = NULL;
  LK(gko_create(&h));
  LK(gko_gelu_forward(h, GKO_GELU_ERF, GKO_DTYPE_F16, W_GELU_N, in->gx[0], in->out[OP_GELU], st));
  /* GEMM: descriptor, plan, execute */
  gko_gemm_desc_t gd = NULL;
  gko_gemm_plan_t gp = NULL;
  size_t need = 0;
  LK(gko_gemm_desc_create(&gd, GKO_DTYPE_F16, GKO_DTYPE_F16, W_M, W_N, W_K));
  LK(gko_gemm_desc_set(gd, GKO_GEMM_ATTR_EPILOGUE, GKO_EPILOGUE_BIAS_GELU_TANH));
  LK(gko_gemm_plan_create(h, gd, &gp));
  LK(gko_gemm_workspace_size(gp, &need));
  cr_assert(need <= L->wsb[OP_GEMM], "cycle %ld: GEMM workspace grew to %zu", cyc, need);
  LK(gko_gemm_execute(gp, 1.0f, in->ga[0], in->gb[0], 0.5f, in->gc, in->out[OP_GEMM], in->gbias,
                      L->ws[OP_GEMM], L->wsb[OP_GEMM], st));
  /* the one-shot GEMM (allocates its workspace stream-ordered), A at an
   * odd element offset so that its plan wants padded copies */
  LK(gko_gemm(h, GKO_OP_N, GKO_OP_N, W_M, W_N, W_K - 1, 1.0f, GKO_DTYPE_F16,
              (const char *)in->ga[1] + 2, W_K, in->gb[1], W_N, 0.0f, GKO_DTYPE_F16, NULL, -1,
              L->d_oneshot, -1, GKO_EPILOGUE_BIAS_GELU_ERF, in->gbias, st));
  /* CSR: descriptor, validation with the call's own workspace */
  gko_csr_t csr = NULL;
  gko_csr_check_t chk = (gko_csr_check_t)9;
  LK(gko_csr_create(&csr, W_SP_M, W_SP_K, S->nnz, S->rp, S->ci, S->va, GKO_INDEX_INT32,
                    GKO_DTYPE_F32));
  LK(gko_csr_validate(h, csr, NULL, 0, &chk, NULL, NULL, NULL, st));
  /* SpMM: both kernels (MERGE owns device memory) */
  gko_spmm_plan_t sp[2] = {NULL, NULL};
  const gko_spmm_kernel_t kinds[2] = {GKO_SPMM_KERNEL_ROW_SPLIT, GKO_SPMM_KERNEL_MERGE};
  for (int i = 0; i < 2; i++) {
    LK(gko_spmm_plan_create(h, csr, W_SP_N, GKO_LAYOUT_ROW_MAJOR, W_SP_N, W_SP_N, kinds[i],
                            &sp[i], st));
    LK(gko_spmm_workspace_size(sp[i], &need));
    cr_assert(need <= L->wsb[OP_SPMM], "cycle %ld: SpMM workspace grew to %zu", cyc, need);
    LK(gko_spmm_execute(sp[i], 1.0f, in->sb[0], 0.0f, in->out[OP_SPMM], L->ws[OP_SPMM],
                        L->wsb[OP_SPMM], st));
  }
  LK(gko_csr_destroy(csr)); /* plans keep their copy */
  /* conv: descriptor, plan, execute */
  gko_conv_desc_t cd = NULL;
  gko_conv_plan_t cp = NULL;
  LK(gko_conv_desc_create(&cd, GKO_DTYPE_F16, GKO_CONV_LAYOUT_NHWC, W_CV_N, W_CV_C, W_CV_H,
                          W_CV_W, W_CV_K, 3, 3));
  LK(gko_conv_desc_set(cd, GKO_CONV_ATTR_PAD_H, 1));
  LK(gko_conv_desc_set(cd, GKO_CONV_ATTR_PAD_W, 1));
  LK(gko_conv_desc_set(cd, GKO_CONV_ATTR_EPILOGUE, GKO_EPILOGUE_BIAS_GELU_ERF));
  LK(gko_conv_plan_create(h, cd, &cp));
  LK(gko_conv_desc_destroy(cd));
  LK(gko_conv_workspace_size(cp, &need));
  cr_assert(need <= L->wsb[OP_CONV], "cycle %ld: conv workspace grew to %zu", cyc, need);
  LK(gko_conv_execute(cp, in->cx[0], S->cw, S->cbias, in->out[OP_CONV], L->ws[OP_CONV],
                      L->wsb[OP_CONV], st));
  /* the SpMM plans' work must be done before they are destroyed */
  cudaError_t e = cudaStreamSynchronize(st);
  cr_assert_eq(e, cudaSuccess, "cycle %ld: %s", cyc, cudaGetErrorString(e));
  LK(gko_spmm_plan_destroy(sp[0]));
  LK(gko_spmm_plan_destroy(sp[1]));
  LK(gko_conv_plan_destroy(cp));
  LK(gko_gemm_plan_destroy(gp));
  LK(gko_gemm_desc_destroy(gd));
  LK(gko_destroy(h));
}

static size_t device_free_bytes(void) {
  T_CUDA(cudaDeviceSynchronize());
  cudaMemPool_t pool;
  if (cudaDeviceGetDefaultMemPool(&pool, 0) == cudaSuccess) T_CUDA(cudaMemPoolTrimTo(pool, 0));
  size_t fr = 0, total = 0;
  T_CUDA(cudaMemGetInfo(&fr, &total));
  return fr;
}

/* Slack: cudaMemGetInfo counts physical memory in 2 MiB pages, and the
 * driver's sub-allocator of small cudaMalloc blocks may keep a partly used
 * page after the frees; the default memory pool is trimmed before each
 * reading.  16 MiB is a few pages of that -- far below what a leak of any
 * per-cycle allocation adds over 10 000 cycles (the smallest gko makes per
 * cycle, the validation workspace, is logged; 10 000 of it is hundreds of
 * MiB).  Host: cuBLASLt, the driver and glibc's arenas may keep a little;
 * 4 MiB is far below 10 000 leaked handles or plans (a GEMM plan alone is
 * over 1.5 KiB). */
#define LEAK_DEVICE_SLACK ((size_t)16 << 20)
#define LEAK_HOST_SLACK ((size_t)4 << 20)

Test(stress_leaks, create_plan_execute_destroy_cycles, .timeout = 1800) {
  T_REQUIRE_GPU();
  const uint64_t seed = t_seed();
  const long cycles = env_long("GKO_LEAK_CYCLES", 10000, 1, 100000000);
  char err[512] = "";
  wshared S;
  cr_assert_eq(wshared_create(&S, err, sizeof err), 0, "%s", err);
  winputs in;
  cr_assert_eq(winputs_create(&in, err, sizeof err), 0, "%s", err);
  leak_ctx L;
  memset(&L, 0, sizeof L);
  L.S = &S;
  L.in = &in;
  L.d_oneshot = t_dalloc(W_M * W_N * 2);
  cudaStream_t st;
  T_CUDA(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  /* workspaces: twice the sizes a plan of the cycle asks for */
  {
    gko_handle_t h = t_handle();
    wplans P;
    cr_assert_eq(wplans_create(h, &S, st, &P, err, sizeof err), 0, "%s", err);
    size_t w0[NOPS], w1[NOPS];
    cr_assert_eq(wplans_ws(&P, 0, w0, err, sizeof err), 0, "%s", err);
    cr_assert_eq(wplans_ws(&P, 1, w1, err, sizeof err), 0, "%s", err);
    for (int op = 0; op < NOPS; op++) {
      L.wsb[op] = 2 * (w0[op] > w1[op] ? w0[op] : w1[op]);
      L.ws[op] = L.wsb[op] ? t_dalloc(L.wsb[op]) : NULL;
    }
    wplans_destroy(&P);
    gko_destroy(h);
  }
  size_t vws = 0;
  {
    gko_handle_t h = t_handle();
    T_OK(gko_csr_validate_workspace_size(h, S.csr, &vws));
    gko_destroy(h);
  }
  /* warm-up: lazy module loading, cuBLASLt's first heuristic, pools */
  for (long c = 0; c < 20; c++) leak_cycle(&L, st, -1 - c);
  const size_t dev0 = device_free_bytes();
  const struct mallinfo2 host0 = mallinfo2();
  for (long c = 0; c < cycles; c++) leak_cycle(&L, st, c);
  const size_t dev1 = device_free_bytes();
  const struct mallinfo2 host1 = mallinfo2();
  const long long dev_kept = (long long)dev0 - (long long)dev1;
  const long long host_kept = (long long)host1.uordblks - (long long)host0.uordblks;
  cr_log_info("leaks: %ld cycles; device free %zu -> %zu (kept %lld bytes, slack %zu); host "
              "in use %zu -> %zu (kept %lld bytes, slack %zu); validation workspace %zu bytes "
              "per cycle; seed %llu",
              cycles, dev0, dev1, dev_kept, LEAK_DEVICE_SLACK, host0.uordblks, host1.uordblks,
              host_kept, LEAK_HOST_SLACK, vws, (unsigned long long)seed);
  if ((double)cycles * (double)vws <= (double)LEAK_DEVICE_SLACK)
    cr_log_info("NOTE: only %ld cycles: a leak of the %zu-byte validation workspace per "
                "cycle would stay within the %zu-byte slack (use the default 10000 to detect "
                "it)",
                cycles, vws, LEAK_DEVICE_SLACK);
  /* cudaMemGetInfo counts every process on the GPU: with others running
   * (tests/gpu_check.sh runs several sanitizer jobs at once and says so
   * with GKO_GPU_SHARED=1) the device figure is only logged.  Notes are
   * logged as info: Criterion exits 1 after any warning, even when every
   * test passed. */
  const char *shared = getenv("GKO_GPU_SHARED");
  if (shared && atoi(shared) > 0)
    cr_log_info("NOTE: GKO_GPU_SHARED: other processes use the GPU, the device-memory figure "
                "above is not checked");
  else
    cr_expect(dev_kept <= (long long)LEAK_DEVICE_SLACK,
              "device memory kept: %lld bytes after %ld cycles (%.1f per cycle), slack %zu",
              dev_kept, cycles, (double)dev_kept / (double)cycles, LEAK_DEVICE_SLACK);
  cr_expect(host_kept <= (long long)LEAK_HOST_SLACK,
            "host memory kept: %lld bytes after %ld cycles (%.1f per cycle), slack %zu",
            host_kept, cycles, (double)host_kept / (double)cycles, LEAK_HOST_SLACK);
  for (int op = 0; op < NOPS; op++) cudaFree(L.ws[op]);
  cudaFree(L.d_oneshot);
  cudaStreamDestroy(st);
  winputs_free(&in);
  wshared_free(&S);
}

/* ---- 4. faults: a sticky error surfaces as EXECUTION_FAILED, nothing hangs ----------- */

/* Runs in a forked child (the fault poisons the child's CUDA context, not
 * the test's; CUDA is never initialised in the parent before the fork).
 * Writes lines to fd: "@ call" before each call (the last one names a hang),
 * "! ..." for each failed expectation, "  ..." for information.  Exit
 * status: 0 all expectations held, 1 some did not, 2 setup failed, 3 the
 * planted fault did not fault, 77 no GPU. */
static int fault_child(int fd) {
  if (t_gpu_count() == 0) return 77;
  t_seed();
  char err[512] = "";
  const size_t errn = sizeof err;
#define CHILD_SETUP(ok, ...)        \
  do {                              \
    if (!(ok)) {                    \
      dprintf(fd, "! setup: ");     \
      dprintf(fd, __VA_ARGS__);     \
      dprintf(fd, "\n");            \
      return 2;                     \
    }                               \
  } while (0)
  gko_handle_t h = NULL;
  gko_status_t s = gko_create(&h);
  CHILD_SETUP(s == GKO_STATUS_SUCCESS, "gko_create: %s", gko_last_error_detail());
  cudaStream_t st = NULL;
  cudaError_t e = cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking);
  CHILD_SETUP(e == cudaSuccess, "cudaStreamCreateWithFlags: %s", cudaGetErrorString(e));
  wshared S;
  winputs in;
  wplans P;
  CHILD_SETUP(wshared_create(&S, err, errn) == 0, "%s", err);
  CHILD_SETUP(winputs_create(&in, err, errn) == 0, "%s", err);
  CHILD_SETUP(wplans_create(h, &S, st, &P, err, errn) == 0, "%s", err);
  size_t w0[NOPS], w1[NOPS];
  CHILD_SETUP(wplans_ws(&P, 0, w0, err, errn) == 0 && wplans_ws(&P, 1, w1, err, errn) == 0,
              "%s", err);
  void *ws[2][NOPS] = {{NULL}};
  for (int op = 0; op < NOPS; op++) {
    if (w0[op]) CHILD_SETUP(cudaMalloc(&ws[0][op], w0[op]) == cudaSuccess, "cudaMalloc");
    if (w1[op]) CHILD_SETUP(cudaMalloc(&ws[1][op], w1[op]) == cudaSuccess, "cudaMalloc");
  }
  void *d2 = NULL, *victim = NULL;
  CHILD_SETUP(cudaMalloc(&d2, W_M * W_N * 2) == cudaSuccess, "cudaMalloc");
  CHILD_SETUP(cudaMalloc(&victim, 256) == cudaSuccess, "cudaMalloc");
  /* everything once, successfully: kernels loaded, the GEMM plan's pointer
   * memo primed (so the first GEMM call below takes its fast path) */
  for (int kind = 0; kind < 2; kind++)
    CHILD_SETUP(w_run(h, &P, kind, &S, &in, 0, in.out, ws[kind], kind ? w1 : w0, st, err,
                      errn) == 0,
                "warm-up: %s", err);
  gko_csr_check_t chk = GKO_CSR_VALID;
  s = gko_csr_validate(h, S.csr, NULL, 0, &chk, NULL, NULL, NULL, st);
  CHILD_SETUP(s == GKO_STATUS_SUCCESS, "warm-up validate: %s", gko_last_error_detail());
  e = cudaStreamSynchronize(st);
  CHILD_SETUP(e == cudaSuccess, "warm-up: %s", cudaGetErrorString(e));

  /* the fault: an int written 1 TiB past the end of a 256-byte allocation */
  dprintf(fd, "@ gkt_oob_write + cudaStreamSynchronize\n");
  int le = gkt_oob_write(victim, 1ll << 38, st);
  CHILD_SETUP(le == 0, "the faulting kernel did not launch: %s",
              cudaGetErrorString((cudaError_t)le));
  e = cudaStreamSynchronize(st);
  if (e == cudaSuccess) {
    dprintf(fd, "! the planted out-of-bounds write did not fault (nothing to test)\n");
    return 3;
  }
  const char *ename = cudaGetErrorName(e);
  dprintf(fd, "  fault: cudaStreamSynchronize -> %s (%s)\n", ename, cudaGetErrorString(e));
  int bad = 0;
#define EXPECT_EF(call)                                                                        \
  do {                                                                                         \
    dprintf(fd, "@ %s\n", #call);                                                              \
    gko_status_t s_ = (call);                                                                  \
    const char *d_ = gko_last_error_detail();                                                  \
    if (s_ != GKO_STATUS_EXECUTION_FAILED) {                                                   \
      dprintf(fd, "! %s -> %s (wanted GKO_STATUS_EXECUTION_FAILED): \"%s\"\n", #call,          \
              gko_status_name(s_), d_);                                                        \
      bad++;                                                                                   \
    } else if (!strstr(d_, "sticky") || !strstr(d_, ename)) {                                 \
      dprintf(fd, "! %s: the detail does not say \"sticky\" and \"%s\": \"%s\"\n", #call,      \
              ename, d_);                                                                      \
      bad++;                                                                                   \
    } else {                                                                                   \
      dprintf(fd, "  %s -> EXECUTION_FAILED: %s\n", #call, d_);                                \
    }                                                                                          \
  } while (0)
  EXPECT_EF(gko_gelu_forward(h, GKO_GELU_ERF, GKO_DTYPE_F16, W_GELU_N, in.gx[0], in.out[OP_GELU],
                             st));
  EXPECT_EF(gko_gelu_forward(h, GKO_GELU_TANH, GKO_DTYPE_F16, W_GELU_N, in.gx[1],
                             in.out[OP_GELU], NULL));
  EXPECT_EF(gko_gelu_backward(h, GKO_GELU_ERF, GKO_DTYPE_F16, W_GELU_N, in.gx[1], in.gx[0],
                              in.out[OP_GELU], st));
  /* the same pointers and stream as the last warm-up GEMM (kind 1): the
   * plan's memo skips the pointer checks, so cuBLASLt's launch (or gko's
   * epilogue pass) is what meets the error */
  EXPECT_EF(gko_gemm_execute(P.gemm, 1.0f, in.ga[0], in.gb[0], 0.5f, in.gc, in.out[OP_GEMM],
                             in.gbias, ws[1][OP_GEMM], w1[OP_GEMM], st));
  EXPECT_EF(gko_gemm_execute(P.gemm, 1.0f, in.ga[1], in.gb[1], 0.0f, NULL, d2, in.gbias,
                             ws[0][OP_GEMM], w0[OP_GEMM], st));
  EXPECT_EF(gko_gemm(h, GKO_OP_N, GKO_OP_N, W_M, W_N, W_K, 1.0f, GKO_DTYPE_F16, in.ga[0], -1,
                     in.gb[0], -1, 0.0f, GKO_DTYPE_F16, NULL, -1, d2, -1, GKO_EPILOGUE_NONE,
                     NULL, st));
  EXPECT_EF(gko_spmm_execute(P.spmm[0], 1.0f, in.sb[0], 0.0f, in.out[OP_SPMM], ws[0][OP_SPMM],
                             w0[OP_SPMM], st));
  EXPECT_EF(gko_spmm_execute(P.spmm[1], 1.0f, in.sb[0], 0.0f, in.out[OP_SPMM], ws[1][OP_SPMM],
                             w1[OP_SPMM], st));
  EXPECT_EF(gko_conv_execute(P.conv, in.cx[0], S.cw, S.cbias, in.out[OP_CONV], ws[0][OP_CONV],
                             w0[OP_CONV], st));
  gko_spmm_plan_t np = NULL;
  EXPECT_EF(gko_spmm_plan_create(h, S.csr, W_SP_N, GKO_LAYOUT_ROW_MAJOR, W_SP_N, W_SP_N,
                                 GKO_SPMM_KERNEL_AUTO, &np, st));
  EXPECT_EF(gko_csr_validate(h, S.csr, NULL, 0, &chk, NULL, NULL, NULL, st));
  /* not documented for this state: only that it answers (no hang) */
  dprintf(fd, "@ gko_create after the fault\n");
  gko_handle_t h2 = NULL;
  s = gko_create(&h2);
  dprintf(fd, "  gko_create after the fault -> %s%s%s\n", gko_status_name(s),
          s ? ": " : "", s ? gko_last_error_detail() : "");
  dprintf(fd, "@ exit\n");
  return bad ? 1 : 0;
#undef EXPECT_EF
#undef CHILD_SETUP
}

static int under_compute_sanitizer(void) {
  const char *inj = getenv("CUDA_INJECTION64_PATH");
  return (inj && strstr(inj, "sanitizer")) || env_long("GKO_SANITIZER_RUNNING", 0, 0, 1);
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

Test(stress_faults, sticky_error_surfaces_as_execution_failed, .timeout = 900) {
  /* no CUDA call in this process before the fork */
  if (!gkt_oob_write)
    cr_skip_test("tests/fault_kernel.o is not linked into this binary (build it with the "
                 "Makefile's rule for build/tests/test_stress)");
  if (under_compute_sanitizer())
    cr_skip_test("under compute-sanitizer the planted out-of-bounds write would be reported "
                 "as an error: run this test without the tool");
  const long limit = env_long("GKO_FAULT_TIMEOUT", 300, 5, 3600);
  int fds[2];
  cr_assert_eq(pipe(fds), 0, "pipe: %s", strerror(errno));
  fflush(NULL);
  pid_t pid = fork();
  cr_assert(pid >= 0, "fork: %s", strerror(errno));
  if (pid == 0) {
    close(fds[0]);
    int rc = fault_child(fds[1]);
    _exit(rc); /* no atexit handlers: Criterion's belong to the parent */
  }
  close(fds[1]);
  static char out[32768];
  size_t used = 0;
  const double deadline = now_s() + (double)limit;
  int timed_out = 0, status = 0, reaped = 0;
  for (;;) {
    const double left = deadline - now_s();
    if (left <= 0) {
      timed_out = 1;
      break;
    }
    struct pollfd pf = {fds[0], POLLIN, 0};
    int pr = poll(&pf, 1, (int)(left * 1000) + 1);
    if (pr < 0 && errno == EINTR) continue;
    if (pr <= 0) continue;
    char buf[4096];
    ssize_t got = read(fds[0], buf, sizeof buf);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break; /* EOF: the child exited (or closed the pipe) */
    if (used + (size_t)got >= sizeof out) used = 0; /* keep the tail */
    memcpy(out + used, buf, (size_t)got);
    used += (size_t)got;
  }
  out[used] = '\0';
  while (!timed_out && !reaped) {
    pid_t w = waitpid(pid, &status, WNOHANG);
    if (w == pid) reaped = 1;
    else if (w < 0 && errno != EINTR) break;
    else if (now_s() > deadline) timed_out = 1;
    else {
      struct timespec ts = {0, 10 * 1000 * 1000};
      nanosleep(&ts, NULL);
    }
  }
  close(fds[0]);
  if (timed_out) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    const char *last = out;
    for (const char *q = out; (q = strstr(q, "@ ")) != NULL; q += 2) last = q;
    cr_assert_fail("the child did not finish within %ld s after the fault (a hang?); the call "
                   "running last: %.200s\nfull output:\n%s",
                   limit, last, out);
  }
  cr_assert(reaped, "waitpid: %s", strerror(errno));
  cr_assert(!WIFSIGNALED(status), "the child was killed by signal %d (%s)\n%s",
            WTERMSIG(status), strsignal(WTERMSIG(status)), out);
  const int rc = WEXITSTATUS(status);
  if (rc == 77) cr_skip_test("no CUDA device on this machine");
  cr_log_info("fault child output:\n%s", out);
  cr_assert_eq(rc, 0, "fault child exit status %d (%s):\n%s", rc,
               rc == 1   ? "some call did not report the sticky error as documented"
               : rc == 2 ? "setup failed"
               : rc == 3 ? "the planted fault did not fault"
                         : "?",
               out);
}

/* ---- 5. two GPUs --------------------------------------------------------------------- */

#define MG_M 256
#define MG_N 192
#define MG_K 320
#define MG_GELU_N 262149

typedef struct {
  int dev;
  long iters;
  const uint16_t *ha, *hb, *hbias, *hx; /* host inputs (f16) */
  uint16_t *hd, *hy;                    /* host results */
  int handle_dev;
  unsigned long long repeat_bytes[2]; /* bytes differing from the first iteration */
  long host_repeat_bad;
  tnote note;
} mgpu_t;

#define MG_CUDA(call)                                                               \
  do {                                                                              \
    cudaError_t e_ = (call);                                                        \
    if (e_ != cudaSuccess) {                                                        \
      tfail(a, "device %d: %s: %s", a->dev, #call, cudaGetErrorString(e_));        \
      goto done;                                                                    \
    }                                                                               \
  } while (0)
#define MG_GKO(call)                                                                \
  do {                                                                              \
    gko_status_t s_ = (call);                                                       \
    if (s_ != GKO_STATUS_SUCCESS) {                                                 \
      tfail(a, "device %d: %s -> %s: %s", a->dev, #call, gko_status_name(s_),       \
            gko_last_error_detail());                                               \
      goto done;                                                                    \
    }                                                                               \
  } while (0)

static void *mgpu_thread(void *p) {
  mgpu_t *a = p;
  gko_handle_t h = NULL;
  gko_gemm_desc_t gd = NULL;
  gko_gemm_plan_t gp = NULL;
  cudaStream_t st = NULL;
  void *da = NULL, *db = NULL, *dbias = NULL, *dd = NULL, *dx = NULL, *dy = NULL, *ws = NULL;
  void *d_first = NULL, *y_first = NULL;
  unsigned long long *ctr = NULL;
  uint16_t *hd2 = NULL, *hy2 = NULL;
  size_t wsb = 0;
  const size_t ab = MG_M * MG_K * 2, bb = MG_K * MG_N * 2, dbytes = MG_M * MG_N * 2,
               xb = MG_GELU_N * 2;
  MG_CUDA(cudaSetDevice(a->dev));
  MG_GKO(gko_create(&h));
  MG_GKO(gko_handle_device(h, &a->handle_dev));
  MG_CUDA(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  MG_CUDA(dev_upload(&da, a->ha, ab));
  MG_CUDA(dev_upload(&db, a->hb, bb));
  MG_CUDA(dev_upload(&dbias, a->hbias, MG_N * 2));
  MG_CUDA(dev_upload(&dx, a->hx, xb));
  MG_CUDA(dev_poisoned(&dd, dbytes));
  MG_CUDA(dev_poisoned(&dy, xb));
  MG_CUDA(dev_poisoned(&d_first, dbytes));
  MG_CUDA(dev_poisoned(&y_first, xb));
  MG_CUDA(cudaMalloc((void **)&ctr, 4 * sizeof *ctr));
  MG_CUDA(cudaMemset(ctr, 0, 4 * sizeof *ctr));
  MG_GKO(gko_gemm_desc_create(&gd, GKO_DTYPE_F16, GKO_DTYPE_F16, MG_M, MG_N, MG_K));
  MG_GKO(gko_gemm_desc_set(gd, GKO_GEMM_ATTR_EPILOGUE, GKO_EPILOGUE_BIAS_GELU_TANH));
  MG_GKO(gko_gemm_plan_create(h, gd, &gp));
  MG_GKO(gko_gemm_workspace_size(gp, &wsb));
  if (wsb) MG_CUDA(cudaMalloc(&ws, wsb));
  hd2 = malloc(dbytes);
  hy2 = malloc(xb);
  if (!hd2 || !hy2) {
    tfail(a, "malloc");
    goto done;
  }
  for (long i = 0; i < a->iters; i++) {
    MG_GKO(gko_gemm_execute(gp, 1.0f, da, db, 0.0f, NULL, dd, dbias, ws, wsb, st));
    MG_GKO(gko_gelu_forward(h, GKO_GELU_ERF, GKO_DTYPE_F16, MG_GELU_N, dx, dy, st));
    if (i == 0) {
      MG_CUDA(cudaMemcpyAsync(d_first, dd, dbytes, cudaMemcpyDeviceToDevice, st));
      MG_CUDA(cudaMemcpyAsync(y_first, dy, xb, cudaMemcpyDeviceToDevice, st));
    } else if (gkt_count_diff) {
      int e1 = gkt_count_diff(dd, d_first, dbytes, (unsigned long long)i, ctr, st);
      int e2 = gkt_count_diff(dy, y_first, xb, (unsigned long long)i, ctr + 2, st);
      if (e1 || e2) {
        tfail(a, "device %d: comparison kernel launch failed", a->dev);
        goto done;
      }
    } else if (i % 16 == 0) {
      MG_CUDA(cudaMemcpyAsync(hd2, dd, dbytes, cudaMemcpyDeviceToHost, st));
      MG_CUDA(cudaMemcpyAsync(hy2, dy, xb, cudaMemcpyDeviceToHost, st));
      MG_CUDA(cudaStreamSynchronize(st));
      if (i > 0 && (memcmp(hd2, a->hd, dbytes) || memcmp(hy2, a->hy, xb))) a->host_repeat_bad++;
    }
    if (i == 0 && !gkt_count_diff) {
      MG_CUDA(cudaMemcpyAsync(a->hd, dd, dbytes, cudaMemcpyDeviceToHost, st));
      MG_CUDA(cudaMemcpyAsync(a->hy, dy, xb, cudaMemcpyDeviceToHost, st));
      MG_CUDA(cudaStreamSynchronize(st));
    }
  }
  MG_CUDA(cudaStreamSynchronize(st));
  MG_CUDA(cudaMemcpy(a->hd, dd, dbytes, cudaMemcpyDeviceToHost));
  MG_CUDA(cudaMemcpy(a->hy, dy, xb, cudaMemcpyDeviceToHost));
  {
    unsigned long long c[4];
    MG_CUDA(cudaMemcpy(c, ctr, sizeof c, cudaMemcpyDeviceToHost));
    a->repeat_bytes[0] = c[0];
    a->repeat_bytes[1] = c[2];
  }
done:
  if (st) cudaStreamSynchronize(st);
  gko_gemm_plan_destroy(gp);
  gko_gemm_desc_destroy(gd);
  void *bufs[] = {da, db, dbias, dd, dx, dy, ws, d_first, y_first, ctr};
  for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) cudaFree(bufs[i]);
  if (st) cudaStreamDestroy(st);
  gko_destroy(h);
  free(hd2);
  free(hy2);
  return NULL;
}

/* float64 checks of one device's results: GEMM by the relative Frobenius
 * error (tolerance as test_gemm's t_tol for f16 output, f32 accumulation
 * and cuBLASLt's fused GELU-tanh), GELU within 1 ulp of the exactly rounded
 * value (gko.h's f16 accuracy). */
static void mgpu_verify(const mgpu_t *a) {
  double err2 = 0, ref2 = 0;
  int64_t nan_bad = 0;
  const double c0 = 1.5957691216057308, c1 = c0 * 0.044715;
  for (int64_t i = 0; i < MG_M; i++)
    for (int64_t j = 0; j < MG_N; j++) {
      double x = t_f16_to_float(a->hbias[j]);
      for (int64_t p = 0; p < MG_K; p++)
        x += (double)t_f16_to_float(a->ha[i * MG_K + p]) * t_f16_to_float(a->hb[p * MG_N + j]);
      const double u2 = x * (c0 + c1 * x * x), q = exp(-fabs(u2));
      const double r = x * (u2 >= 0 ? 1.0 / (1.0 + q) : q / (1.0 + q));
      const double got = t_f16_to_float(a->hd[i * MG_N + j]);
      if (isnan(got)) {
        nan_bad++;
        continue;
      }
      err2 += (got - r) * (got - r);
      ref2 += r * r;
    }
  const double rel = sqrt(err2 / (ref2 > 0 ? ref2 : 1));
  const double tol = 4 * ldexp(1, -11) + 16 * ldexp(1, -24) * sqrt((double)MG_K) + ldexp(1, -10);
  cr_expect_eq(nan_bad, 0, "device %d: %lld GEMM outputs are NaN", a->dev, (long long)nan_bad);
  cr_expect(rel <= tol, "device %d: GEMM relative error %.3g > %.3g", a->dev, rel, tol);
  int64_t gelu_bad = 0, worst_i = -1, worst = 0;
  for (int64_t i = 0; i < MG_GELU_N; i++) {
    const double x = t_f16_to_float(a->hx[i]);
    const uint16_t want = t_double_to_f16(x * 0.5 * erfc(-x / sqrt(2.0)));
    const int64_t d = t_ulp16(a->hy[i], want);
    if (d > 1) {
      gelu_bad++;
      if (d > worst) {
        worst = d;
        worst_i = i;
      }
    }
  }
  cr_expect_eq(gelu_bad, 0, "device %d: %lld GELU outputs beyond 1 ulp (worst %lld ulp at %lld)",
               a->dev, (long long)gelu_bad, (long long)worst, (long long)worst_i);
}

/* Expects DEVICE_MISMATCH with a detail that names both devices. */
#define T_MISMATCH(call)                                                                     \
  do {                                                                                       \
    gko_status_t s_ = (call);                                                                \
    const char *d_ = gko_last_error_detail();                                                \
    cr_expect_eq(s_, GKO_STATUS_DEVICE_MISMATCH,                                             \
                 "%s -> %s (wanted GKO_STATUS_DEVICE_MISMATCH): \"%s\"", #call,              \
                 gko_status_name(s_), d_);                                                   \
    cr_expect(strstr(d_, "device 1") && strstr(d_, "device 0"),                              \
              "%s: the detail should name device 0 and device 1: \"%s\"", #call, d_);        \
  } while (0)

Test(stress_multi_gpu, two_devices_concurrently_and_cross_device_calls_refused,
     .timeout = 900) {
  T_REQUIRE_GPU();
  const int ndev = t_gpu_count();
  if (ndev < 2)
    cr_skip_test("needs at least 2 CUDA devices; this machine has %d (set CUDA_VISIBLE_DEVICES "
                 "to expose two)", ndev);
  const uint64_t seed = t_seed();
  const long iters = env_long("GKO_STRESS_ITERS", 1000, 1, 100000000);
  cr_log_info("two GPUs: %ld iterations per device, seed %llu", iters, (unsigned long long)seed);
  /* 1. one thread per device, concurrently, each with its own handle and data */
  mgpu_t m[2];
  memset(m, 0, sizeof m);
  pthread_t tid[2];
  for (int d = 0; d < 2; d++) {
    mgpu_t *a = &m[d];
    a->dev = d;
    a->iters = iters;
    uint16_t *ha = malloc(MG_M * MG_K * 2), *hb = malloc(MG_K * MG_N * 2),
             *hbias = malloc(MG_N * 2), *hx = malloc(MG_GELU_N * 2);
    a->hd = malloc(MG_M * MG_N * 2);
    a->hy = malloc(MG_GELU_N * 2);
    cr_assert(ha && hb && hbias && hx && a->hd && a->hy);
    fill_dt(GKO_DTYPE_F16, ha, MG_M * MG_K, -1, 1);
    fill_dt(GKO_DTYPE_F16, hb, MG_K * MG_N, -1, 1);
    fill_dt(GKO_DTYPE_F16, hbias, MG_N, -1, 1);
    fill_dt(GKO_DTYPE_F16, hx, MG_GELU_N, -6, 6);
    a->ha = ha;
    a->hb = hb;
    a->hbias = hbias;
    a->hx = hx;
    a->handle_dev = -1;
  }
  for (int d = 0; d < 2; d++) cr_assert_eq(pthread_create(&tid[d], NULL, mgpu_thread, &m[d]), 0);
  for (int d = 0; d < 2; d++) pthread_join(tid[d], NULL);
  for (int d = 0; d < 2; d++) {
    mgpu_t *a = &m[d];
    cr_expect_eq(a->note.failed, 0, "%s [seed %llu]", a->note.msg, (unsigned long long)seed);
    if (a->note.failed) continue;
    cr_expect_eq(a->handle_dev, d, "gko_handle_device of the device-%d handle says %d", d,
                 a->handle_dev);
    cr_expect(a->repeat_bytes[0] == 0 && a->repeat_bytes[1] == 0 && a->host_repeat_bad == 0,
              "device %d: repeated iterations differ from the first (GEMM %llu bytes, GELU "
              "%llu bytes, host checks %ld)",
              d, a->repeat_bytes[0], a->repeat_bytes[1], a->host_repeat_bad);
    mgpu_verify(a);
  }
  for (int d = 0; d < 2; d++) {
    free((void *)m[d].ha);
    free((void *)m[d].hb);
    free((void *)m[d].hbias);
    free((void *)m[d].hx);
    free(m[d].hd);
    free(m[d].hy);
  }

  /* 2. a device-0 handle with device 1's stream, pointers or current device */
  char err[512] = "";
  T_CUDA(cudaSetDevice(1));
  cudaStream_t s1;
  T_CUDA(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  const int64_t n = W_GELU_N;
  void *x1 = rand_dev(GKO_DTYPE_F16, n, -2, 2);
  void *out1[NOPS];
  for (int op = 0; op < NOPS; op++) out1[op] = poisoned_dev(out_bytes(op));
  T_CUDA(cudaSetDevice(0));
  gko_handle_t h0 = t_handle();
  cudaStream_t s0;
  T_CUDA(cudaStreamCreateWithFlags(&s0, cudaStreamNonBlocking));
  wshared S;
  winputs in;
  wplans P;
  cr_assert_eq(wshared_create(&S, err, sizeof err), 0, "%s", err);
  cr_assert_eq(winputs_create(&in, err, sizeof err), 0, "%s", err);
  cr_assert_eq(wplans_create(h0, &S, s0, &P, err, sizeof err), 0, "%s", err);
  size_t wsb[NOPS];
  cr_assert_eq(wplans_ws(&P, 0, wsb, err, sizeof err), 0, "%s", err);
  void *ws[NOPS];
  for (int op = 0; op < NOPS; op++) ws[op] = wsb[op] ? t_dalloc(wsb[op]) : NULL;
  /* a successful GEMM first: the plan's memo holds these pointers */
  void *dok = t_dalloc(out_bytes(OP_GEMM));
  T_OK(gko_gemm_execute(P.gemm, 1.0f, in.ga[0], in.gb[0], 0.5f, in.gc, dok, in.gbias,
                        ws[OP_GEMM], wsb[OP_GEMM], s0));
  T_CUDA(cudaStreamSynchronize(s0));
  /* current device 0, device-1 stream */
  T_MISMATCH(gko_gelu_forward(h0, GKO_GELU_ERF, GKO_DTYPE_F16, n, in.gx[0], in.out[OP_GELU], s1));
  T_MISMATCH(gko_gemm_execute(P.gemm, 1.0f, in.ga[0], in.gb[0], 0.5f, in.gc, in.out[OP_GEMM],
                              in.gbias, ws[OP_GEMM], wsb[OP_GEMM], s1));
  T_MISMATCH(gko_spmm_execute(P.spmm[0], 1.0f, in.sb[0], 0.0f, in.out[OP_SPMM], ws[OP_SPMM],
                              wsb[OP_SPMM], s1));
  T_MISMATCH(gko_conv_execute(P.conv, in.cx[0], S.cw, S.cbias, in.out[OP_CONV], ws[OP_CONV],
                              wsb[OP_CONV], s1));
  /* current device 0, device-1 pointers (input or output) */
  T_MISMATCH(gko_gelu_forward(h0, GKO_GELU_ERF, GKO_DTYPE_F16, n, x1, in.out[OP_GELU], s0));
  T_MISMATCH(gko_gelu_forward(h0, GKO_GELU_ERF, GKO_DTYPE_F16, n, in.gx[0], out1[OP_GELU], s0));
  T_MISMATCH(gko_gemm_execute(P.gemm, 1.0f, in.ga[0], in.gb[0], 0.5f, in.gc, out1[OP_GEMM],
                              in.gbias, ws[OP_GEMM], wsb[OP_GEMM], s0));
  T_MISMATCH(gko_spmm_execute(P.spmm[0], 1.0f, in.sb[0], 0.0f, out1[OP_SPMM], ws[OP_SPMM],
                              wsb[OP_SPMM], s0));
  T_MISMATCH(gko_conv_execute(P.conv, in.cx[0], S.cw, S.cbias, out1[OP_CONV], ws[OP_CONV],
                              wsb[OP_CONV], s0));
  T_MISMATCH(gko_gemm(h0, GKO_OP_N, GKO_OP_N, W_M, W_N, W_K, 1.0f, GKO_DTYPE_F16, in.ga[0], -1,
                      in.gb[0], -1, 0.0f, GKO_DTYPE_F16, NULL, -1, out1[OP_GEMM], -1,
                      GKO_EPILOGUE_NONE, NULL, s0));
  /* current device 1, everything else of device 0 (the GEMM call repeats
   * the memo's pointers and stream: the fast path must still see it) */
  T_CUDA(cudaSetDevice(1));
  T_MISMATCH(gko_gelu_forward(h0, GKO_GELU_ERF, GKO_DTYPE_F16, n, in.gx[0], in.out[OP_GELU], s0));
  T_MISMATCH(gko_gemm_execute(P.gemm, 1.0f, in.ga[0], in.gb[0], 0.5f, in.gc, dok, in.gbias,
                              ws[OP_GEMM], wsb[OP_GEMM], s0));
  T_MISMATCH(gko_spmm_execute(P.spmm[0], 1.0f, in.sb[0], 0.0f, in.out[OP_SPMM], ws[OP_SPMM],
                              wsb[OP_SPMM], s0));
  T_MISMATCH(gko_conv_execute(P.conv, in.cx[0], S.cw, S.cbias, in.out[OP_CONV], ws[OP_CONV],
                              wsb[OP_CONV], s0));
  gko_gemm_desc_t gd = NULL;
  T_OK(gko_gemm_desc_create(&gd, GKO_DTYPE_F16, GKO_DTYPE_F16, W_M, W_N, W_K));
  gko_gemm_plan_t const gkeep = (gko_gemm_plan_t)(uintptr_t)0x77;
  gko_gemm_plan_t gp = gkeep;
  T_MISMATCH(gko_gemm_plan_create(h0, gd, &gp));
  cr_expect_eq(gp, gkeep, "gko_gemm_plan_create wrote *plan on failure");
  gko_gemm_desc_destroy(gd);
  gko_spmm_plan_t const skeep = (gko_spmm_plan_t)(uintptr_t)0x77;
  gko_spmm_plan_t sp = skeep;
  T_MISMATCH(gko_spmm_plan_create(h0, S.csr, W_SP_N, GKO_LAYOUT_ROW_MAJOR, W_SP_N, W_SP_N,
                                  GKO_SPMM_KERNEL_AUTO, &sp, s0));
  cr_expect_eq(sp, skeep, "gko_spmm_plan_create wrote *plan on failure");
  gko_csr_check_t chk = (gko_csr_check_t)9;
  T_MISMATCH(gko_csr_validate(h0, S.csr, NULL, 0, &chk, NULL, NULL, NULL, s0));
  cr_expect_eq(chk, (gko_csr_check_t)9, "gko_csr_validate wrote its verdict on failure");
  /* nothing was written anywhere */
  T_CUDA(cudaDeviceSynchronize());
  for (int op = 0; op < NOPS; op++) {
    const int64_t at1 = first_unpoisoned(out1[op], out_bytes(op));
    cr_expect_eq(at1, -1, "device-1 output of %s: byte %lld was written", kOpName[op],
                 (long long)at1);
  }
  T_CUDA(cudaSetDevice(0));
  T_CUDA(cudaDeviceSynchronize());
  for (int op = 0; op < NOPS; op++) {
    const int64_t at0 = first_unpoisoned(in.out[op], out_bytes(op));
    cr_expect_eq(at0, -1, "device-0 output of %s: byte %lld was written", kOpName[op],
                 (long long)at0);
  }
  for (int op = 0; op < NOPS; op++) cudaFree(ws[op]);
  cudaFree(dok);
  wplans_destroy(&P);
  winputs_free(&in);
  wshared_free(&S);
  cudaStreamDestroy(s0);
  gko_destroy(h0);
  T_CUDA(cudaSetDevice(1));
  for (int op = 0; op < NOPS; op++) cudaFree(out1[op]);
  cudaFree(x1);
  cudaStreamDestroy(s1);
  T_CUDA(cudaSetDevice(0));
}

/* An AUTOTUNE plan (which allocates scratch buffers and times candidates)
 * created while another stream is being captured in global mode: the plan
 * succeeds and the capture stays valid (and empty: nothing of the timing is
 * captured). */
Test(stress_graph, autotune_plan_during_capture_keeps_the_capture) {
  T_REQUIRE_GPU();
  gko_handle_t h = t_handle();
  cudaStream_t st;
  T_CUDA(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  gko_gemm_desc_t d = NULL;
  gko_gemm_plan_t p = NULL;
  T_OK(gko_gemm_desc_create(&d, GKO_DTYPE_F16, GKO_DTYPE_F16, 96, 80, 72));
  T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_AUTOTUNE, 1));
  T_CUDA(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
  gko_status_t s = gko_gemm_plan_create(h, d, &p);
  char det[512];
  snprintf(det, sizeof det, "%s", gko_last_error_detail());
  enum cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
  cudaError_t ie = cudaStreamIsCapturing(st, &cs);
  cudaGraph_t g = NULL;
  cudaError_t ee = cudaStreamEndCapture(st, &g);
  cr_expect_eq(s, GKO_STATUS_SUCCESS, "plan_create during capture: %s: %s", gko_status_name(s),
               det);
  cr_expect(ie == cudaSuccess && cs == cudaStreamCaptureStatusActive,
            "the capture did not survive: %s, status %d", cudaGetErrorString(ie), (int)cs);
  cr_expect_eq(ee, cudaSuccess, "cudaStreamEndCapture: %s", cudaGetErrorString(ee));
  size_t nodes = 1;
  if (g) {
    T_CUDA(cudaGraphGetNodes(g, NULL, &nodes));
    cr_expect_eq(nodes, 0, "the timing leaked %zu nodes into the capture", nodes);
    cudaGraphDestroy(g);
  }
  if (p) {
    char why[2048];
    T_OK(gko_gemm_plan_describe(p, why, sizeof why, NULL));
    cr_expect(strstr(why, "autotune") != NULL, "%s", why);
    gko_gemm_plan_destroy(p);
  }
  gko_gemm_desc_destroy(d);
  cudaStreamDestroy(st);
  gko_destroy(h);
}
