/* test_oom.c -- allocation-failure sweeps, as SQLite tests its malloc
 * failures: the N-th host allocation gko makes fails (or, separately, the
 * N-th device resource it creates: device memory, a stream, an event, the
 * cuBLASLt handle), for N = 1, 2, ... until a whole scenario runs without
 * reaching N.  For every N:
 *   - each call returns what it returns without injection, or, when the
 *     injected failure happened inside it and its documentation lists
 *     GKO_STATUS_ALLOC_FAILED, that status (with a detail message);
 *   - a create that failed left its output untouched, and succeeds when
 *     called again (nothing transient is remembered);
 *   - nothing gko allocated is live after everything is destroyed (the
 *     hooks' table; LeakSanitizer too in the ASan build), and the scenario
 *     then runs cleanly.
 * The host sweep runs everywhere (each N in a forked child, so that every
 * run starts from a cold library); the GPU sweeps run in one process on a
 * handle made before them, which must still compute a GEMM correctly after.
 * Linked with tests/oom_hooks.c and the archive tests/oom_archive.sh makes. */
#include <signal.h>
#include <stdarg.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"
#include "oom_hooks.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
#define OOM_LSAN 1
#else
#define OOM_LSAN 0
#endif

/* ---- checking one scenario run ------------------------------------------------ */

typedef struct {
  int errors;
  char first[1536]; /* the first error */
  char last[1536]; /* the latest */
  long f0; /* oom_fired() before the call being checked */
  int no_retry; /* CREATE does not call a failed create again */
  long alloc_failed, recovered;
  FILE *log; /* every error, as it happens (NULL: none) */
} oom_ctx;

static void ctx_error(oom_ctx *c, int line, const char *fmt, ...) {
  char msg[1200];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  snprintf(c->last, sizeof c->last, "line %d: %s", line, msg);
  if (!c->errors++)
    snprintf(c->first, sizeof c->first, "line %d: %s (first injected failure: %s)", line, msg,
             oom_first_failure());
  if (c->log && c->errors <= 5) fprintf(c->log, "  test_oom.c:%d: %s\n", line, msg);
}

#define CHECK(c, cond, ...)                             \
  do {                                                  \
    if (!(cond)) ctx_error((c), __LINE__, __VA_ARGS__); \
  } while (0)

/* may_alloc: the function's documentation lists GKO_STATUS_ALLOC_FAILED */
static gko_status_t step_(oom_ctx *c, const char *what, int line, int may_alloc, gko_status_t want,
                          gko_status_t got) {
  const int fired = oom_fired() > c->f0;
  const char *detail = gko_last_error_detail();
  if (got == want) {
    if (fired) c->recovered++;
  } else if (fired && may_alloc && got == GKO_STATUS_ALLOC_FAILED) {
    c->alloc_failed++;
  } else {
    ctx_error(c, line, "%s -> %s, want %s%s: %s", what, gko_status_name(got), gko_status_name(want),
              !fired      ? ""
              : may_alloc ? " or ALLOC_FAILED (an injected failure in it)"
                          : " (an injected failure in it; ALLOC_FAILED is not "
                            "among its documented statuses)",
              detail);
    return got;
  }
  if (got != GKO_STATUS_SUCCESS && !detail[0])
    ctx_error(c, line, "%s -> %s with an empty detail", what, gko_status_name(got));
  if (got == GKO_STATUS_SUCCESS && detail[0])
    ctx_error(c, line, "%s succeeded with a detail: %s", what, detail);
  return got;
}

/* A call that must return `want` whatever fails inside it. */
#define CALL(c, want, call) ((c)->f0 = oom_fired(), step_((c), #call, __LINE__, 0, (want), (call)))
/* A call documented to return GKO_STATUS_ALLOC_FAILED. */
#define CALL_A(c, want, call) \
  ((c)->f0 = oom_fired(), step_((c), #call, __LINE__, 1, (want), (call)))

/* What a create's output holds before the call: still there after a failure. */
#define CANARY ((void *)(uintptr_t)0x00dead00beef0010ull)

/* 1 when a create is done (success, or the status wanted); 0: call it again */
static int created_(oom_ctx *c, const char *what, int line, gko_status_t s, const void *out,
                    int attempt) {
  if (s == GKO_STATUS_SUCCESS) {
    if (out == CANARY || out == NULL) ctx_error(c, line, "%s succeeded but set no object", what);
    return 1;
  }
  if (out != CANARY) ctx_error(c, line, "%s failed but wrote its output (%p)", what, out);
  return s != GKO_STATUS_ALLOC_FAILED || c->no_retry || attempt > 0;
}

/* out = a new object from `call` (documented to return ALLOC_FAILED), or
 * NULL when it failed; a failed create is called once more. */
#define CREATE(c, want, out, call)                                                           \
  do {                                                                                       \
    for (int t_try_ = 0; t_try_ < 2; t_try_++) {                                             \
      (out) = CANARY;                                                                        \
      const gko_status_t t_s_ = CALL_A((c), (want), (call));                                 \
      const int t_done_ = created_((c), #call, __LINE__, t_s_, (const void *)(out), t_try_); \
      if (t_s_ != GKO_STATUS_SUCCESS) (out) = NULL;                                          \
      if (t_done_) break;                                                                    \
    }                                                                                        \
  } while (0)

/* ---- the host-only scenario ------------------------------------------------------ */

/* Objects of each kind alive at once: 4 x 12 = 48 > 32, so gko's table of
 * live objects (64 slots, at most half full) grows while they are made. */
enum { NOBJ = 12 };

static const int32_t kRowPtr[5] = {0, 1, 2, 2, 3}, kColInd[3] = {0, 2, 1};
static const float kValues[3] = {1.0f, 2.0f, 3.0f};

/* Everything a machine without a GPU can call.  device_calls: also the
 * calls that ask the driver (gko_create, gko_query, gko_diagnostics): only
 * without a GPU, where they are cheap and must answer NO_DEVICE. */
static void host_scenario(oom_ctx *c, int device_calls) {
  for (int s = -1; s <= 13; s++)
    CHECK(c, gko_status_name((gko_status_t)s) && gko_status_string((gko_status_t)s),
          "status %d: a NULL string", s);
  CHECK(c, gko_version_string() && gko_version_number() == (unsigned)GKO_VERSION_NUMBER, "version");
  CHECK(c, gko_dtype_size(GKO_DTYPE_BF16) == 2, "gko_dtype_size");

  gko_gemm_desc_t g[NOBJ];
  gko_conv_desc_t cv[NOBJ];
  gko_pool_desc_t pl[NOBJ];
  gko_csr_t a[NOBJ];
  for (int i = 0; i < NOBJ; i++) {
    CREATE(c, GKO_STATUS_SUCCESS, g[i],
           gko_gemm_desc_create(&g[i], GKO_DTYPE_F16, GKO_DTYPE_F32, 16 + i, 8, 24));
    CREATE(c, GKO_STATUS_SUCCESS, cv[i],
           gko_conv_desc_create(&cv[i], GKO_DTYPE_F16, GKO_CONV_LAYOUT_NHWC, 2, 8, 9 + i, 9, 16, 3,
                                3));
    CREATE(c, GKO_STATUS_SUCCESS, pl[i],
           gko_pool_desc_create(&pl[i], GKO_POOL_MAX, GKO_DTYPE_F32, GKO_CONV_LAYOUT_NCHW, 1, 3,
                                8 + i, 8, 2, 2));
    CREATE(
        c, GKO_STATUS_SUCCESS, a[i],
        gko_csr_create(&a[i], 4, 3, 3, kRowPtr, kColInd, kValues, GKO_INDEX_INT32, GKO_DTYPE_F32));
  }
  for (int i = 0; i < NOBJ; i++) {
    int64_t v = -7, oh = -7, ow = -7;
    if (g[i]) {
      CALL(c, GKO_STATUS_SUCCESS, gko_gemm_desc_set(g[i], GKO_GEMM_ATTR_LDA, 40));
      CALL(c, GKO_STATUS_SUCCESS,
           gko_gemm_desc_set(g[i], GKO_GEMM_ATTR_EPILOGUE, GKO_EPILOGUE_BIAS_GELU_ERF));
      CALL(c, GKO_STATUS_SUCCESS, gko_gemm_desc_get(g[i], GKO_GEMM_ATTR_LDA, &v));
      CHECK(c, v == 40, "gemm LDA reads %lld", (long long)v);
      CALL(c, GKO_STATUS_SUCCESS, gko_gemm_desc_get(g[i], GKO_GEMM_ATTR_M, &v));
      CHECK(c, v == 16 + i, "gemm M reads %lld", (long long)v);
      CALL(c, GKO_STATUS_INVALID_VALUE, gko_gemm_desc_set(g[i], GKO_GEMM_ATTR_ALIGNMENT, 3));
      /* a call that needs a handle, without one: refused before anything */
      gko_gemm_plan_t p = CANARY;
      CALL(c, GKO_STATUS_INVALID_VALUE, gko_gemm_plan_create(NULL, g[i], &p));
      CHECK(c, p == CANARY, "gko_gemm_plan_create(NULL handle) wrote *plan");
    }
    if (cv[i]) {
      CALL(c, GKO_STATUS_SUCCESS, gko_conv_desc_set(cv[i], GKO_CONV_ATTR_PAD_H, 1));
      CALL(c, GKO_STATUS_SUCCESS, gko_conv_desc_set(cv[i], GKO_CONV_ATTR_STRIDE_W, 2));
      CALL(c, GKO_STATUS_SUCCESS, gko_conv_desc_get(cv[i], GKO_CONV_ATTR_PAD_H_END, &v));
      CHECK(c, v == 1, "conv PAD_H_END reads %lld", (long long)v);
      CALL(c, GKO_STATUS_SUCCESS, gko_conv_output_shape(cv[i], &oh, &ow));
      CHECK(c, oh == 9 + i && ow == 4, "conv output %lld x %lld", (long long)oh, (long long)ow);
    }
    if (pl[i]) {
      CALL(c, GKO_STATUS_SUCCESS, gko_pool_desc_set(pl[i], GKO_POOL_ATTR_STRIDE_H, 2));
      CALL(c, GKO_STATUS_SUCCESS, gko_pool_desc_get(pl[i], GKO_POOL_ATTR_STRIDE_H, &v));
      CHECK(c, v == 2, "pool STRIDE_H reads %lld", (long long)v);
      CALL(c, GKO_STATUS_SUCCESS, gko_pool_output_shape(pl[i], &oh, &ow));
      CHECK(c, oh == (8 + i - 2) / 2 + 1 && ow == 7, "pool output %lld x %lld", (long long)oh,
            (long long)ow);
    }
  }
  /* bad arguments are still answered as such */
  CALL(c, GKO_STATUS_INVALID_VALUE,
       gko_gemm_desc_create(NULL, GKO_DTYPE_F16, GKO_DTYPE_F16, 1, 1, 1));
  gko_gemm_desc_t bad = CANARY;
  CALL(c, GKO_STATUS_INVALID_VALUE,
       gko_gemm_desc_create(&bad, GKO_DTYPE_F16, GKO_DTYPE_F16, -1, 1, 1));
  CHECK(c, bad == CANARY, "a refused gko_gemm_desc_create wrote *desc");

  if (device_calls) {
    gko_handle_t h;
    CREATE(c, GKO_STATUS_NO_DEVICE, h, gko_create(&h));
    int64_t v = -7;
    CALL(c, GKO_STATUS_SUCCESS, gko_query(GKO_QUERY_DEVICE_COUNT, 0, &v));
    CHECK(c, v == 0, "GKO_QUERY_DEVICE_COUNT %lld without a GPU", (long long)v);
    CALL(c, GKO_STATUS_SUCCESS, gko_query(GKO_QUERY_RUNTIME_VERSION, 0, &v));
    v = -7;
    CALL(c, GKO_STATUS_NO_DEVICE, gko_query(GKO_QUERY_SM_COUNT, 0, &v));
    CHECK(c, v == -7, "a failed gko_query wrote *value");
    char buf[8192];
    size_t need = 0;
    CALL(c, GKO_STATUS_SUCCESS, gko_diagnostics(-1, buf, sizeof buf, &need));
    CHECK(c, need > 1 && strlen(buf) + 1 == (need < sizeof buf ? need : sizeof buf),
          "gko_diagnostics: %zu bytes needed, %zu written", need, strlen(buf));
    CALL(c, GKO_STATUS_SUCCESS, gko_diagnostics(0, buf, 16, NULL));
    CALL(c, GKO_STATUS_SUCCESS, gko_destroy(NULL));
  }

  /* destroyed in another order than made (the live table's deletions) */
  for (int i = NOBJ - 1; i >= 0; i--) {
    CALL(c, GKO_STATUS_SUCCESS, gko_csr_destroy(a[i]));
    CALL(c, GKO_STATUS_SUCCESS, gko_gemm_desc_destroy(g[i]));
  }
  for (int i = 0; i < NOBJ; i++) {
    CALL(c, GKO_STATUS_SUCCESS, gko_pool_desc_destroy(pl[i]));
    CALL(c, GKO_STATUS_SUCCESS, gko_conv_desc_destroy(cv[i]));
  }
}

/* ---- the host sweep: one forked child per N --------------------------------------- */

typedef struct {
  long calls, fired, live_after, live_clean, alloc_failed, recovered;
  int errors, leaks;
  char first_failure[40];
  char msg[1536];
} child_result;

/* The child: the scenario with the n-th host allocation failing (n = 0:
 * none; persistent: also every later one), everything destroyed, the live
 * count; then once more without injection.  ref: the reference child's
 * counts (NULL for the reference itself), for the listing of leaks. */
static void child_run(int fd, long n, int persistent, int device_calls, const child_result *ref) {
  alarm(60); /* a hang (a lock kept on a failure path) ends as SIGALRM */
  child_result r;
  memset(&r, 0, sizeof r);
  oom_ctx c = {0};
  c.log = stderr;
  oom_arm(OOM_HOST, n, persistent);
  host_scenario(&c, device_calls);
  r.calls = oom_calls(OOM_HOST);
  r.fired = oom_fired();
  snprintf(r.first_failure, sizeof r.first_failure, "%s", oom_first_failure());
  oom_disarm();
  r.live_after = oom_live(OOM_HOST);
  if (ref && r.live_after > ref->live_after) {
    fprintf(stderr, "  N = %ld: %ld host blocks live after the run, %ld without injection:\n", n,
            r.live_after, ref->live_after);
    oom_dump_live(stderr, OOM_HOST, 0);
  }
  oom_ctx c2 = {0};
  c2.log = stderr;
  host_scenario(&c2, device_calls);
  r.live_clean = oom_live(OOM_HOST);
  if (ref && r.live_clean != ref->live_clean) {
    fprintf(stderr, "  N = %ld: %ld host blocks live after the clean rerun, want %ld:\n", n,
            r.live_clean, ref->live_clean);
    oom_dump_live(stderr, OOM_HOST, 0);
  }
#if OOM_LSAN
  /* LeakSanitizer warns, per child, that the parent's other threads (gone
   * after fork) were not suspended: its report without those lines */
  fflush(stderr);
  FILE *tmp = tmpfile();
  const int saved = tmp ? dup(2) : -1;
  if (saved >= 0) dup2(fileno(tmp), 2);
  r.leaks = __lsan_do_recoverable_leak_check();
  if (saved >= 0) {
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    rewind(tmp);
    char line[1024];
    while (fgets(line, sizeof line, tmp))
      if (!strstr(line, "was not suspended")) fputs(line, stderr);
  }
  if (tmp) fclose(tmp);
#endif
  r.errors = c.errors + c2.errors;
  r.alloc_failed = c.alloc_failed;
  r.recovered = c.recovered;
  if (c.errors || !c2.errors)
    snprintf(r.msg, sizeof r.msg, "%s", c.first);
  else
    snprintf(r.msg, sizeof r.msg, "the clean rerun: %.1500s", c2.first);
  ssize_t w = write(fd, &r, sizeof r);
  _exit(w == (ssize_t)sizeof r ? 0 : 3);
}

/* Runs child_run in a child; 0 when it reported, else a line in r->msg. */
static int run_child(long n, int persistent, int device_calls, const child_result *ref,
                     child_result *r) {
  memset(r, 0, sizeof *r);
  int fds[2];
  if (pipe(fds) != 0) return snprintf(r->msg, sizeof r->msg, "pipe failed"), -1;
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid < 0) return snprintf(r->msg, sizeof r->msg, "fork failed"), -1;
  if (pid == 0) {
    close(fds[0]);
    child_run(fds[1], n, persistent, device_calls, ref);
  }
  close(fds[1]);
  size_t got = 0;
  while (got < sizeof *r) {
    ssize_t k = read(fds[0], (char *)r + got, sizeof *r - got);
    if (k <= 0) break;
    got += (size_t)k;
  }
  close(fds[0]);
  int st = 0;
  waitpid(pid, &st, 0);
  if (got == sizeof *r && WIFEXITED(st) && WEXITSTATUS(st) == 0) return 0;
  if (WIFSIGNALED(st))
    snprintf(r->msg, sizeof r->msg, "the child died of signal %d (%s)", WTERMSIG(st),
             WTERMSIG(st) == SIGALRM ? "hung" : strsignal(WTERMSIG(st)));
  else
    snprintf(r->msg, sizeof r->msg, "the child exited with status %d", WEXITSTATUS(st));
  return -1;
}

/* Whether a CUDA device is present, asked in a child so that this process
 * never initialises CUDA (the sweep's children are forked from it). */
static int gpu_present_in_child(void) {
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid == 0) _exit(t_gpu_count() > 0 ? 1 : 0);
  int st = 0;
  if (pid < 0 || waitpid(pid, &st, 0) < 0) return 1; /* unknown: leave the driver alone */
  return !WIFEXITED(st) || WEXITSTATUS(st) != 0;
}

/* The sweep of one mode; returns the number of failure points, and adds
 * those that found a defect to *bad. */
static long host_sweep(int persistent, int device_calls, const child_result *ref, long *bad) {
  long n = 1;
  for (;; n++) {
    child_result r;
    const int rc = run_child(n, persistent, device_calls, ref, &r);
    cr_assert_eq(rc, 0, "host sweep%s, N = %ld: %s", persistent ? " (from N on)" : "", n, r.msg);
    if (!r.fired) break;
    *bad +=
        r.errors || r.live_after > ref->live_after || r.live_clean != ref->live_clean || r.leaks;
    cr_expect_eq(r.errors, 0, "host sweep%s, N = %ld (%s failed): %d error(s); %s",
                 persistent ? " (from N on)" : "", n, r.first_failure, r.errors, r.msg);
    cr_expect(r.live_after <= ref->live_after,
              "host sweep%s, N = %ld (%s failed): %ld host blocks of gko's live after "
              "everything was destroyed, %ld without injection (listed above)",
              persistent ? " (from N on)" : "", n, r.first_failure, r.live_after, ref->live_after);
    cr_expect_eq(r.live_clean, ref->live_clean,
                 "host sweep%s, N = %ld (%s failed): %ld host blocks live after the clean "
                 "rerun, %ld in the reference",
                 persistent ? " (from N on)" : "", n, r.first_failure, r.live_clean,
                 ref->live_clean);
    cr_expect_eq(r.leaks, 0, "host sweep, N = %ld: LeakSanitizer found leaks (above)", n);
    cr_assert(n < 100000, "the host sweep does not end");
  }
  return n - 1;
}

Test(oom, host_sweep, .timeout = 600) {
  if (getenv("GKO_SANITIZER_RUNNING"))
    cr_skip_test("host code only: nothing for compute-sanitizer (runs in the plain suite run)");
  const int device_calls = !gpu_present_in_child();
  child_result ref;
  cr_assert_eq(run_child(0, 0, device_calls, NULL, &ref), 0, "reference run: %s", ref.msg);
  cr_assert_eq(ref.errors, 0, "the scenario fails without injection: %s", ref.msg);
  cr_assert_eq(ref.fired, 0);
  cr_assert_gt(ref.calls, 0, "no host allocation reached the hooks: is the archive instrumented?");
  cr_expect_eq(ref.live_clean, ref.live_after,
               "live host blocks grow from one clean run to the next: %ld, then %ld",
               ref.live_after, ref.live_clean);
  cr_expect_eq(ref.leaks, 0, "LeakSanitizer found leaks in the clean run (above)");
  long bad = 0;
  const long k = host_sweep(0, device_calls, &ref, &bad);
  const long kp = host_sweep(1, device_calls, &ref, &bad);
  cr_expect_eq(k, ref.calls,
               "the sweep ended after %ld failure points, the scenario makes %ld "
               "host allocations",
               k, ref.calls);
  printf(
      "oom host sweep: %ld failure points (%ld host allocations per run%s), %ld from-N-on "
      "runs, %s\n",
      k, ref.calls, device_calls ? ", gko_create/query/diagnostics without a GPU included" : "", kp,
      bad ? "SOME FAILED (above)" : "all clean");
}

/* ---- the GPU scenario -------------------------------------------------------------- */

enum { BUF_BYTES = 4 << 20, WS_BYTES = 64 << 20, NREF = 48 };

typedef struct {
  gko_handle_t h0; /* made before the sweeps; must keep working */
  cudaStream_t st;
  int cc, sm90;
  void *in[3], *out[2], *bias, *ws, *ids, *lens;
  /* the CSR matrix: m x k, a long first row and an unsorted one */
  void *rp, *ci, *va;
  int64_t m, k, nnz;
  /* plan accounts of the warm-up run, compared with the final run's */
  char ref[NREF][2048];
  int nref, recording, comparing;
  int warmup, off[40]; /* parts the warm-up turned off (PART) */
} gpu_env;

typedef struct {
  const char *name;
  gko_dtype_t ab, cd;
  int b_dtype; /* -1: ab */
  int64_t m, n, k;
  gko_op_t transb;
  gko_gemm_backend_t backend;
  gko_epilogue_t epilogue;
  int autotune, invariant, pad, misalign;
  int need; /* 0 any GPU, 80 sm_80+, 89 FP8 (sm_89+), 90 the SM90 kernels */
} gemm_case;

static const gemm_case kGemm[] = {
    {"AUTO f16", GKO_DTYPE_F16, GKO_DTYPE_F16, -1, 96, 80, 72, GKO_OP_N, GKO_GEMM_BACKEND_AUTO,
     GKO_EPILOGUE_NONE, 0, 0, 0, 0, 0},
    {"cuBLASLt bf16 bias+GELU-erf", GKO_DTYPE_BF16, GKO_DTYPE_F32, -1, 64, 48, 40, GKO_OP_T,
     GKO_GEMM_BACKEND_CUBLASLT, GKO_EPILOGUE_BIAS_GELU_ERF, 0, 0, 0, 0, 80},
    {"WMMA f16 decode", GKO_DTYPE_F16, GKO_DTYPE_F16, -1, 4, 256, 512, GKO_OP_T,
     GKO_GEMM_BACKEND_WMMA, GKO_EPILOGUE_NONE, 0, 0, 0, 0, 0},
    {"WMMA bf16 bias+ReLU", GKO_DTYPE_BF16, GKO_DTYPE_BF16, -1, 64, 64, 64, GKO_OP_N,
     GKO_GEMM_BACKEND_WMMA, GKO_EPILOGUE_BIAS_RELU, 0, 0, 0, 0, 80},
    {"SM90 f16 bias+GELU-tanh", GKO_DTYPE_F16, GKO_DTYPE_F16, -1, 128, 128, 64, GKO_OP_N,
     GKO_GEMM_BACKEND_SM90, GKO_EPILOGUE_BIAS_GELU_TANH, 0, 0, 0, 0, 90},
    {"AUTO f16 autotuned", GKO_DTYPE_F16, GKO_DTYPE_F16, -1, 64, 64, 64, GKO_OP_N,
     GKO_GEMM_BACKEND_AUTO, GKO_EPILOGUE_BIAS, 1, 0, 0, 0, 0},
    {"AUTO f16 invariant", GKO_DTYPE_F16, GKO_DTYPE_F16, -1, 64, 32, 48, GKO_OP_N,
     GKO_GEMM_BACKEND_AUTO, GKO_EPILOGUE_NONE, 0, 64, 0, 0, 0},
    {"cuBLASLt f32 padded", GKO_DTYPE_F32, GKO_DTYPE_F32, -1, 33, 17, 19, GKO_OP_N,
     GKO_GEMM_BACKEND_CUBLASLT, GKO_EPILOGUE_NONE, 0, 0, GKO_GEMM_PAD_ALWAYS, 0, 0},
    {"FP8 e4m3 x e5m2", GKO_DTYPE_F8E4M3, GKO_DTYPE_BF16, GKO_DTYPE_F8E5M2, 32, 32, 64, GKO_OP_T,
     GKO_GEMM_BACKEND_AUTO, GKO_EPILOGUE_NONE, 0, 0, 0, 0, 89},
    {"cuBLASLt f16, A less aligned than promised", GKO_DTYPE_F16, GKO_DTYPE_F16, -1, 64, 64, 64,
     GKO_OP_N, GKO_GEMM_BACKEND_CUBLASLT, GKO_EPILOGUE_NONE, 0, 0, 0, 1, 0},
};
enum { NGEMM = sizeof kGemm / sizeof kGemm[0] };

static int case_runs(const gpu_env *g, int need) {
  if (need == 90) return g->cc == 90 && g->sm90;
  return g->cc >= need;
}

/* The warm-up run records each plan's account; the final run compares. */
static void account(oom_ctx *c, gpu_env *g, int *slot, const char *text, int line) {
  const int i = (*slot)++;
  if (i >= NREF) return;
  if (g->recording) {
    snprintf(g->ref[i], sizeof g->ref[i], "%s", text);
    g->nref = i + 1;
  } else if (g->comparing && strcmp(g->ref[i], text) != 0) {
    ctx_error(c, line, "plan %d changed after the sweeps:\n    was: %s\n    now: %s", i, g->ref[i],
              text);
  }
}

static void gemm_one(oom_ctx *c, gpu_env *g, gko_handle_t h, const gemm_case *t, int *slot) {
  gko_gemm_desc_t d;
  CREATE(c, GKO_STATUS_SUCCESS, d, gko_gemm_desc_create(&d, t->ab, t->cd, t->m, t->n, t->k));
  if (!d) return;
  CALL(c, GKO_STATUS_SUCCESS, gko_gemm_desc_set(d, GKO_GEMM_ATTR_TRANSB, t->transb));
  CALL(c, GKO_STATUS_SUCCESS, gko_gemm_desc_set(d, GKO_GEMM_ATTR_BACKEND, t->backend));
  CALL(c, GKO_STATUS_SUCCESS, gko_gemm_desc_set(d, GKO_GEMM_ATTR_EPILOGUE, t->epilogue));
  if (t->b_dtype >= 0)
    CALL(c, GKO_STATUS_SUCCESS, gko_gemm_desc_set(d, GKO_GEMM_ATTR_B_DTYPE, t->b_dtype));
  if (t->autotune) CALL(c, GKO_STATUS_SUCCESS, gko_gemm_desc_set(d, GKO_GEMM_ATTR_AUTOTUNE, 1));
  if (t->invariant)
    CALL(c, GKO_STATUS_SUCCESS, gko_gemm_desc_set(d, GKO_GEMM_ATTR_INVARIANT, t->invariant));
  if (t->pad) CALL(c, GKO_STATUS_SUCCESS, gko_gemm_desc_set(d, GKO_GEMM_ATTR_PAD, t->pad));
  gko_gemm_plan_t p;
  CREATE(c, GKO_STATUS_SUCCESS, p, gko_gemm_plan_create(h, d, &p));
  CALL(c, GKO_STATUS_SUCCESS, gko_gemm_desc_destroy(d));
  if (!p) return;
  size_t ws = 0, need = 0;
  gko_gemm_backend_t be = GKO_GEMM_BACKEND_AUTO;
  char text[2048];
  CALL(c, GKO_STATUS_SUCCESS, gko_gemm_workspace_size(p, &ws));
  CALL(c, GKO_STATUS_SUCCESS, gko_gemm_plan_backend(p, &be));
  CHECK(c, t->backend == GKO_GEMM_BACKEND_AUTO || be == t->backend, "%s: backend %d", t->name,
        (int)be);
  CALL(c, GKO_STATUS_SUCCESS, gko_gemm_plan_describe(p, text, sizeof text, &need));
  if (t->autotune) /* timed afresh on each run's handle: noise may pick another winner */
    snprintf(text, sizeof text, "%s: autotuned", t->name);
  account(c, g, slot, text, __LINE__);
  CHECK(c, ws <= WS_BYTES, "%s: workspace %zu bytes", t->name, ws);
  const char *a = (const char *)g->in[0] + (t->misalign ? 2 : 0);
  const void *bias = (t->epilogue & 1) ? g->bias : NULL;
  if (ws <= WS_BYTES)
    CALL(c, GKO_STATUS_SUCCESS,
         gko_gemm_execute(p, 1.0f, a, g->in[1], 0.0f, NULL, g->out[0], bias, g->ws, ws, g->st));
  CALL(c, GKO_STATUS_SUCCESS, gko_gemm_plan_destroy(p));
}

/* 1 when the n x m device bytes at d all hold the poison */
static int still_poisoned(gpu_env *g, const void *d, size_t bytes) {
  unsigned char *h = malloc(bytes);
  cr_assert(h);
  T_CUDA(cudaStreamSynchronize(g->st));
  T_CUDA(cudaMemcpy(h, d, bytes, cudaMemcpyDeviceToHost));
  size_t i = 0;
  while (i < bytes && h[i] == T_POISON_BYTE) i++;
  free(h);
  return i == bytes;
}

static void gemm_oneshot(oom_ctx *c, gpu_env *g, gko_handle_t h) {
  const size_t dbytes = 64 * 64 * 2;
  T_CUDA(cudaMemsetAsync(g->out[1], T_POISON_BYTE, dbytes, g->st));
  gko_status_t s = CALL_A(c, GKO_STATUS_SUCCESS,
                          gko_gemm(h, GKO_OP_N, GKO_OP_N, 64, 64, 64, 1.0f, GKO_DTYPE_F16, g->in[0],
                                   -1, g->in[1], -1, 0.5f, GKO_DTYPE_F16, g->in[2], -1, g->out[1],
                                   -1, GKO_EPILOGUE_BIAS_GELU_ERF, g->bias, g->st));
  if (s != GKO_STATUS_SUCCESS)
    CHECK(c, still_poisoned(g, g->out[1], dbytes), "a failed gko_gemm wrote D");
}

typedef struct {
  const char *name;
  gko_conv_layout_t layout;
  gko_dtype_t dtype;
  int64_t n, ch, hw, k, r, pad, groups, max_chunk;
  gko_conv_algo_t algo;
  gko_epilogue_t epilogue;
  int residual, need;
} conv_case;

static const conv_case kConv[] = {
    {"conv NHWC f16 im2col bias+ReLU", GKO_CONV_LAYOUT_NHWC, GKO_DTYPE_F16, 2, 16, 8, 16, 3, 1, 1,
     0, GKO_CONV_ALGO_GEMM, GKO_EPILOGUE_BIAS_RELU, 0, 0},
    {"conv NCHW f16 through NHWC, residual", GKO_CONV_LAYOUT_NCHW, GKO_DTYPE_F16, 2, 16, 8, 16, 3,
     1, 1, 0, GKO_CONV_ALGO_GEMM, GKO_EPILOGUE_BIAS, 1, 0},
    {"conv NCHW f16 groups 2, chunks of 1", GKO_CONV_LAYOUT_NCHW, GKO_DTYPE_F16, 3, 16, 7, 16, 3, 1,
     2, 1, GKO_CONV_ALGO_GEMM, GKO_EPILOGUE_NONE, 0, 0},
    {"conv NCHW f32 1x1 direct", GKO_CONV_LAYOUT_NCHW, GKO_DTYPE_F32, 2, 8, 6, 8, 1, 0, 1, 0,
     GKO_CONV_ALGO_AUTO, GKO_EPILOGUE_NONE, 0, 0},
    {"conv NHWC f16 implicit GEMM, residual", GKO_CONV_LAYOUT_NHWC, GKO_DTYPE_F16, 2, 16, 8, 16, 3,
     1, 1, 0, GKO_CONV_ALGO_IMPLICIT, GKO_EPILOGUE_BIAS_RELU, 1, 90},
    {"conv NHWC bf16 7x7/2 stem, implicit (space-to-depth)", GKO_CONV_LAYOUT_NHWC, GKO_DTYPE_BF16,
     2, 3, 16, 16, 7, 3, 1, 0, GKO_CONV_ALGO_IMPLICIT, GKO_EPILOGUE_NONE, 0, 90},
};
enum { NCONV = sizeof kConv / sizeof kConv[0] };

static void conv_one(oom_ctx *c, gpu_env *g, gko_handle_t h, const conv_case *t, int *slot) {
  gko_conv_desc_t d;
  CREATE(
      c, GKO_STATUS_SUCCESS, d,
      gko_conv_desc_create(&d, t->dtype, t->layout, t->n, t->ch, t->hw, t->hw, t->k, t->r, t->r));
  if (!d) return;
  CALL(c, GKO_STATUS_SUCCESS, gko_conv_desc_set(d, GKO_CONV_ATTR_PAD_H, t->pad));
  CALL(c, GKO_STATUS_SUCCESS, gko_conv_desc_set(d, GKO_CONV_ATTR_PAD_W, t->pad));
  CALL(c, GKO_STATUS_SUCCESS, gko_conv_desc_set(d, GKO_CONV_ATTR_GROUPS, t->groups));
  CALL(c, GKO_STATUS_SUCCESS, gko_conv_desc_set(d, GKO_CONV_ATTR_ALGO, t->algo));
  CALL(c, GKO_STATUS_SUCCESS, gko_conv_desc_set(d, GKO_CONV_ATTR_EPILOGUE, t->epilogue));
  if (t->max_chunk)
    CALL(c, GKO_STATUS_SUCCESS, gko_conv_desc_set(d, GKO_CONV_ATTR_MAX_CHUNK, t->max_chunk));
  if (t->r == 7) { /* ResNet's stem: implicit GEMM by the space-to-depth rewrite */
    CALL(c, GKO_STATUS_SUCCESS, gko_conv_desc_set(d, GKO_CONV_ATTR_STRIDE_H, 2));
    CALL(c, GKO_STATUS_SUCCESS, gko_conv_desc_set(d, GKO_CONV_ATTR_STRIDE_W, 2));
  }
  gko_conv_plan_t p;
  CREATE(c, GKO_STATUS_SUCCESS, p, gko_conv_plan_create(h, d, &p));
  CALL(c, GKO_STATUS_SUCCESS, gko_conv_desc_destroy(d));
  if (!p) return;
  size_t ws = 0;
  int64_t path = -1;
  char text[2048];
  CALL(c, GKO_STATUS_SUCCESS, gko_conv_workspace_size(p, &ws));
  CALL(c, GKO_STATUS_SUCCESS, gko_conv_plan_get(p, GKO_CONV_INFO_PATH, &path));
  CHECK(c, t->algo != GKO_CONV_ALGO_IMPLICIT || path == GKO_CONV_PATH_IMPLICIT, "%s: path %lld",
        t->name, (long long)path);
  CALL(c, GKO_STATUS_SUCCESS, gko_conv_plan_describe(p, text, sizeof text, NULL));
  account(c, g, slot, text, __LINE__);
  CHECK(c, ws <= WS_BYTES, "%s: workspace %zu bytes", t->name, ws);
  const void *bias = (t->epilogue & 1) ? g->bias : NULL;
  if (ws <= WS_BYTES) {
    if (t->residual)
      CALL(c, GKO_STATUS_SUCCESS,
           gko_conv_execute_residual(p, 1.0f, g->in[0], g->in[1], bias, 1.0f, g->in[2], g->out[0],
                                     g->ws, ws, g->st));
    else
      CALL(c, GKO_STATUS_SUCCESS,
           gko_conv_execute(p, g->in[0], g->in[1], bias, g->out[0], g->ws, ws, g->st));
  }
  CALL(c, GKO_STATUS_SUCCESS, gko_conv_plan_destroy(p));
}

static void sparse_part(oom_ctx *c, gpu_env *g, gko_handle_t h, int *slot) {
  gko_csr_t a;
  CREATE(
      c, GKO_STATUS_SUCCESS, a,
      gko_csr_create(&a, g->m, g->k, g->nnz, g->rp, g->ci, g->va, GKO_INDEX_INT32, GKO_DTYPE_F32));
  if (!a) return;
  size_t vws = 0;
  CALL(c, GKO_STATUS_SUCCESS, gko_csr_validate_workspace_size(h, a, &vws));
  /* NULL workspace: the call allocates its own (cudaMalloc) */
  for (int t = 0; t < 2; t++) {
    gko_csr_check_t chk = (gko_csr_check_t)77;
    int64_t row = 77;
    int sorted = 77, dups = 77;
    gko_status_t s = CALL_A(c, GKO_STATUS_SUCCESS,
                            gko_csr_validate(h, a, NULL, 0, &chk, &row, &sorted, &dups, g->st));
    if (s == GKO_STATUS_SUCCESS) {
      CHECK(c, chk == GKO_CSR_VALID && row == -1 && sorted == 0 && dups == 0,
            "gko_csr_validate: check %d row %lld sorted %d duplicates %d", (int)chk, (long long)row,
            sorted, dups);
      break;
    }
    CHECK(c, chk == 77 && row == 77 && sorted == 77 && dups == 77,
          "a failed gko_csr_validate wrote its outputs");
  }
  const gko_spmm_kernel_t kinds[3] = {GKO_SPMM_KERNEL_ROW_SPLIT, GKO_SPMM_KERNEL_MERGE,
                                      GKO_SPMM_KERNEL_AUTO};
  const int64_t n = 16;
  for (int i = 0; i < 3; i++) {
    gko_spmm_plan_t p;
    CREATE(c, GKO_STATUS_SUCCESS, p,
           gko_spmm_plan_create(h, a, n, GKO_LAYOUT_ROW_MAJOR, n, n, kinds[i], &p, g->st));
    if (!p) continue;
    size_t ws = 0;
    gko_spmm_kernel_t kind = GKO_SPMM_KERNEL_AUTO;
    char text[2048];
    CALL(c, GKO_STATUS_SUCCESS, gko_spmm_workspace_size(p, &ws));
    CALL(c, GKO_STATUS_SUCCESS, gko_spmm_plan_kernel(p, &kind));
    CHECK(c, kinds[i] == GKO_SPMM_KERNEL_AUTO || kind == kinds[i], "SpMM kernel %d", (int)kind);
    CALL(c, GKO_STATUS_SUCCESS, gko_spmm_plan_describe(p, text, sizeof text, NULL));
    account(c, g, slot, text, __LINE__);
    CHECK(c, ws <= WS_BYTES, "SpMM workspace %zu bytes", ws);
    if (ws <= WS_BYTES)
      CALL(c, GKO_STATUS_SUCCESS,
           gko_spmm_execute(p, 1.0f, g->in[0], 0.5f, g->out[0], g->ws, ws, g->st));
    CALL(c, GKO_STATUS_SUCCESS, gko_spmm_plan_destroy(p));
  }
  CALL(c, GKO_STATUS_SUCCESS, gko_csr_destroy(a));
}

static void pool_part(oom_ctx *c, gpu_env *g, gko_handle_t h) {
  gko_pool_desc_t d;
  CREATE(c, GKO_STATUS_SUCCESS, d,
         gko_pool_desc_create(&d, GKO_POOL_MAX, GKO_DTYPE_F16, GKO_CONV_LAYOUT_NCHW, 2, 4, 8, 8, 2,
                              2));
  if (d) {
    CALL(c, GKO_STATUS_SUCCESS, gko_pool_desc_set(d, GKO_POOL_ATTR_STRIDE_H, 2));
    CALL(c, GKO_STATUS_SUCCESS, gko_pool_desc_set(d, GKO_POOL_ATTR_STRIDE_W, 2));
    CALL(c, GKO_STATUS_SUCCESS, gko_pool_forward(h, d, g->in[0], g->out[0], g->st));
    CALL(c, GKO_STATUS_SUCCESS, gko_pool_desc_destroy(d));
  }
  /* global average pooling: the dedicated reduction */
  CREATE(c, GKO_STATUS_SUCCESS, d,
         gko_pool_desc_create(&d, GKO_POOL_AVG, GKO_DTYPE_BF16, GKO_CONV_LAYOUT_NHWC, 2, 64, 7, 7,
                              7, 7));
  if (d) {
    CALL(c, GKO_STATUS_SUCCESS, gko_pool_forward(h, d, g->in[0], g->out[0], g->st));
    CALL(c, GKO_STATUS_SUCCESS, gko_pool_desc_destroy(d));
  }
}

/* The operators without plans: each a kernel or a few, no allocation. */
static void ops_part(oom_ctx *c, gpu_env *g, gko_handle_t h) {
  const gko_dtype_t dt = GKO_DTYPE_F16;
  CALL(c, GKO_STATUS_SUCCESS,
       gko_gelu_forward(h, GKO_GELU_ERF, dt, 1001, g->in[0], g->out[0], g->st));
  CALL(c, GKO_STATUS_SUCCESS,
       gko_gelu_backward(h, GKO_GELU_TANH, dt, 1001, g->in[1], g->in[0], g->out[0], g->st));
  CALL(c, GKO_STATUS_SUCCESS,
       gko_layernorm(h, dt, 8, 64, g->in[0], 64, g->in[1], 64, g->in[2], NULL, 1e-5f, g->out[0], 64,
                     g->out[1], 64, g->st));
  CALL(c, GKO_STATUS_SUCCESS,
       gko_softmax(h, dt, 8, 64, 0.125f, g->in[0], 64, NULL, 0, (const int32_t *)g->lens, 4,
                   g->out[0], 64, g->st));
  CALL(c, GKO_STATUS_SUCCESS,
       gko_attention(h, dt, 2, 2, 16, 16, 32, 0.17677669f, g->in[0], 64, g->in[1], 64, g->in[2], 64,
                     (const int32_t *)g->lens, g->out[0], 64, g->st));
  CALL(
      c, GKO_STATUS_SUCCESS,
      gko_embedding(h, dt, 16, 32, g->in[0], 32, GKO_INDEX_INT32, g->ids, 8, g->out[0], 32, g->st));
  CALL(c, GKO_STATUS_SUCCESS,
       gko_mean_pool(h, dt, 2, 4, 32, g->in[0], 32, (const int32_t *)g->lens, 1, g->out[0], 32,
                     g->st));
  if (g->cc >= 89) {
    CALL(c, GKO_STATUS_SUCCESS,
         gko_quantize(h, dt, g->in[0], GKO_DTYPE_F8E4M3, g->out[0], 8, 64, GKO_SCALE_TENSOR, NULL,
                      (float *)g->out[1], g->st));
    CALL(c, GKO_STATUS_SUCCESS,
         gko_dequantize(h, GKO_DTYPE_F8E5M2, g->in[0], dt, g->out[0], 8, 64, GKO_SCALE_TENSOR, NULL,
                        g->st));
  }
}

/* Part k of the scenario, unless the warm-up turned it off: there a part
 * with an error (a case this GPU or build refuses, say) is reported and
 * left out, so that the sweeps still cover the rest; a kernel fault ends
 * the test, naming the part. */
#define PART(c, g, k, name, stmt)                                           \
  do {                                                                      \
    if (!(g)->off[k]) {                                                     \
      const int t_e0_ = (c)->errors;                                        \
      stmt;                                                                 \
      if ((g)->warmup) {                                                    \
        const cudaError_t t_ce_ = cudaStreamSynchronize((g)->st);           \
        cr_assert_eq(t_ce_, cudaSuccess, "GPU scenario, %s: %s", (name),    \
                     cudaGetErrorString(t_ce_));                            \
        if ((c)->errors > t_e0_) {                                          \
          (g)->off[k] = 1;                                                  \
          cr_expect_fail(                                                   \
              "GPU scenario, %s, fails without injection (left out of the " \
              "sweeps): %s",                                                \
              (name), (c)->last);                                           \
        }                                                                   \
      }                                                                     \
    }                                                                       \
  } while (0)

/* One run of everything.  Plans go to a handle made here (cold caches:
 * heuristic queries, autotuning) and some to g->h0 (warm caches). */
static void gpu_scenario(oom_ctx *c, gpu_env *g) {
  int slot = 0;
  gko_handle_t h;
  CREATE(c, GKO_STATUS_SUCCESS, h, gko_create(&h));
  if (h) {
    int dev = -1;
    CALL(c, GKO_STATUS_SUCCESS, gko_handle_device(h, &dev));
    for (int i = 0; i < NGEMM; i++)
      if (case_runs(g, kGemm[i].need))
        PART(c, g, i, kGemm[i].name, gemm_one(c, g, h, &kGemm[i], &slot));
    PART(c, g, NGEMM, "gko_gemm", gemm_oneshot(c, g, h));
    for (int i = 0; i < NCONV; i++)
      if (case_runs(g, kConv[i].need))
        PART(c, g, NGEMM + 1 + i, kConv[i].name, conv_one(c, g, h, &kConv[i], &slot));
  }
  const int k = NGEMM + 1 + NCONV;
  PART(c, g, k, "h0: AUTO f16", gemm_one(c, g, g->h0, &kGemm[0], &slot));
  PART(c, g, k + 1, "h0: misaligned A", gemm_one(c, g, g->h0, &kGemm[NGEMM - 1], &slot));
  PART(c, g, k + 2, "h0: gko_gemm", gemm_oneshot(c, g, g->h0));
  PART(c, g, k + 3, "h0: CSR and SpMM", sparse_part(c, g, g->h0, &slot));
  PART(c, g, k + 4, "h0: pooling", pool_part(c, g, g->h0));
  PART(c, g, k + 5, "the operators without plans", ops_part(c, g, h ? h : g->h0));
  cudaError_t e = cudaStreamSynchronize(g->st);
  CHECK(c, e == cudaSuccess, "the stream: %s", cudaGetErrorString(e));
  CALL(c, GKO_STATUS_SUCCESS, gko_destroy(h));
}

static void fill_f16(void *d, size_t count) {
  uint16_t *h = malloc(count * 2);
  cr_assert(h);
  for (size_t i = 0; i < count; i++) h[i] = t_double_to_f16(t_uniform(-1.0, 1.0));
  t_h2d(d, h, count * 2);
  free(h);
}

static void gpu_env_init(gpu_env *g) {
  memset(g, 0, sizeof *g);
  t_seed();
  g->cc = t_cc();
  g->sm90 = t_sm90_built();
  T_CUDA(cudaStreamCreateWithFlags(&g->st, cudaStreamNonBlocking));
  for (int i = 0; i < 3; i++) g->in[i] = t_dalloc(BUF_BYTES), fill_f16(g->in[i], BUF_BYTES / 2);
  for (int i = 0; i < 2; i++) g->out[i] = t_dalloc(BUF_BYTES);
  g->bias = t_dalloc(4096);
  fill_f16(g->bias, 2048);
  g->ws = t_dalloc(WS_BYTES);
  int32_t ids[8] = {0, 3, 15, 7, 7, 1, 2, 9}, lens[4] = {64, 33, 1, 0};
  g->ids = t_dalloc(sizeof ids);
  t_h2d(g->ids, ids, sizeof ids);
  g->lens = t_dalloc(sizeof lens);
  t_h2d(g->lens, lens, sizeof lens);
  /* CSR: row 0 has 400 entries (longer than ROW_SPLIT's segments), row 1
   * is unsorted, the others 0..7 entries */
  g->m = 64, g->k = 512;
  int32_t rp[65], ci[1024];
  float va[1024];
  int64_t nnz = 0;
  rp[0] = 0;
  for (int r = 0; r < 64; r++) {
    const int len = r == 0 ? 400 : r == 1 ? 5 : r % 8;
    for (int j = 0; j < len; j++) {
      ci[nnz] = r == 0 ? j : r == 1 ? 100 - 7 * j : j * 60 + r;
      va[nnz] = (float)t_uniform(-1.0, 1.0);
      nnz++;
    }
    rp[r + 1] = (int32_t)nnz;
  }
  g->nnz = nnz;
  g->rp = t_dalloc(sizeof rp);
  t_h2d(g->rp, rp, sizeof rp);
  g->ci = t_dalloc((size_t)nnz * 4);
  t_h2d(g->ci, ci, (size_t)nnz * 4);
  g->va = t_dalloc((size_t)nnz * 4);
  t_h2d(g->va, va, (size_t)nnz * 4);
}

static void gpu_env_free(gpu_env *g) {
  void *all[] = {g->in[0], g->in[1], g->in[2], g->out[0], g->out[1], g->bias,
                 g->ws,    g->ids,   g->lens,  g->rp,     g->ci,     g->va};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) cudaFree(all[i]);
  cudaStreamDestroy(g->st);
}

/* gko_create alone, from this process's cold start: N = 1.. in class cls
 * until no failure is reached.  The process-wide parts (gko's table of live
 * objects, the device's cuBLASLt handle) are made here the first time, so
 * their failures are swept too.  Returns the handle; *points the count. */
static gko_handle_t cold_create_sweep(int cls, long *points) {
  for (long n = 1; n < 1000; n++) {
    const long host0 = oom_live(OOM_HOST), dev0 = oom_live(OOM_DEVICE);
    oom_ctx c = {0};
    c.no_retry = 1;
    c.log = stderr;
    gko_handle_t h;
    oom_arm(cls, n, 0);
    CREATE(&c, GKO_STATUS_SUCCESS, h, gko_create(&h));
    const long fired = oom_fired();
    oom_disarm();
    cr_assert_eq(c.errors, 0, "gko_create, N = %ld: %s", n, c.first);
    if (!fired) {
      *points = n - 1;
      cr_assert(h);
      return h;
    }
    cr_assert_eq(oom_live(OOM_HOST), host0, "gko_create, N = %ld (%s failed) leaks host memory", n,
                 oom_first_failure());
    /* the device's cuBLASLt handle stays once made (for the process) */
    const long dev = oom_live(OOM_DEVICE);
    cr_assert(dev == dev0 || (dev == dev0 + 1 && cls == OOM_HOST),
              "gko_create, N = %ld (%s failed): %ld device objects live, %ld before", n,
              oom_first_failure(), dev, dev0);
  }
  cr_assert_fail("the gko_create sweep does not end");
  return NULL;
}

static double seconds_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* After the sweeps: g->h0 computes D = A B (f16, 48 x 40 x 56, AUTO and
 * WMMA) within f16 accuracy of a float64 reference. */
static void h0_still_computes(gpu_env *g) {
  const int64_t m = 48, n = 40, k = 56;
  uint16_t *a = malloc(m * k * 2), *b = malloc(k * n * 2), *d = malloc(m * n * 2);
  cr_assert(a && b && d);
  for (int64_t i = 0; i < m * k; i++) a[i] = t_double_to_f16(t_uniform(-1, 1));
  for (int64_t i = 0; i < k * n; i++) b[i] = t_double_to_f16(t_uniform(-1, 1));
  t_h2d(g->in[0], a, m * k * 2);
  t_h2d(g->in[1], b, k * n * 2);
  const gko_gemm_backend_t be[2] = {GKO_GEMM_BACKEND_AUTO, GKO_GEMM_BACKEND_WMMA};
  for (int i = 0; i < 2; i++) {
    gko_gemm_desc_t desc = NULL;
    gko_gemm_plan_t p = NULL;
    size_t ws = 0;
    T_OK(gko_gemm_desc_create(&desc, GKO_DTYPE_F16, GKO_DTYPE_F16, m, n, k));
    T_OK(gko_gemm_desc_set(desc, GKO_GEMM_ATTR_BACKEND, be[i]));
    T_OK(gko_gemm_plan_create(g->h0, desc, &p));
    T_OK(gko_gemm_workspace_size(p, &ws));
    cr_assert_leq(ws, (size_t)WS_BYTES);
    T_CUDA(cudaMemsetAsync(g->out[0], T_POISON_BYTE, m * n * 2, g->st));
    T_OK(gko_gemm_execute(p, 1.0f, g->in[0], g->in[1], 0.0f, NULL, g->out[0], NULL, g->ws, ws,
                          g->st));
    T_CUDA(cudaStreamSynchronize(g->st));
    t_d2h(d, g->out[0], m * n * 2);
    double num = 0, den = 0;
    for (int64_t r = 0; r < m; r++)
      for (int64_t j = 0; j < n; j++) {
        double ref = 0;
        for (int64_t q = 0; q < k; q++)
          ref += (double)t_f16_to_float(a[r * k + q]) * t_f16_to_float(b[q * n + j]);
        const double got = t_f16_to_float(d[r * n + j]);
        cr_assert(isfinite(got), "D[%lld][%lld] not written", (long long)r, (long long)j);
        num += (got - ref) * (got - ref);
        den += ref * ref;
      }
    cr_expect_leq(sqrt(num / den), 2e-3, "backend %d after the sweeps: relative error %g",
                  (int)be[i], sqrt(num / den));
    T_OK(gko_gemm_plan_destroy(p));
    T_OK(gko_gemm_desc_destroy(desc));
  }
  free(a);
  free(b);
  free(d);
}

/* The GPU sweep of class cls: cold gko_create sweep, warm-up run, then the
 * scenario for N = 1.. until no failure is reached, then a clean run that
 * must plan the same, and g->h0's GEMM checked. */
static void gpu_sweep(int cls) {
  T_REQUIRE_GPU();
  if (getenv("GKO_SANITIZER_RUNNING"))
    cr_skip_test("the sweep runs in the plain suite run (hundreds of runs of every operator)");
  const char *cname = cls == OOM_HOST ? "GPU-scenario host" : "device";
  double limit = 120;
  if (getenv("GKO_OOM_SECONDS")) limit = atof(getenv("GKO_OOM_SECONDS"));
  const double t0 = seconds_now();
  gpu_env g;
  long create_points = 0;
  gpu_env_init(&g);
  g.h0 = cold_create_sweep(cls, &create_points);

  /* warm-up: every cache that lives as long as g.h0 or the process filled */
  oom_ctx c = {0};
  c.log = stderr;
  g.warmup = 1;
  gpu_scenario(&c, &g);
  g.warmup = 0;
  const long host0 = oom_live(OOM_HOST), dev0 = oom_live(OOM_DEVICE);
  /* a second clean run (what each sweep run repeats): the same left
   * behind, the calls counted, the plans' accounts recorded */
  oom_ctx c1 = {0};
  c1.log = stderr;
  g.recording = 1;
  oom_arm(cls, 0, 0);
  const double t_clean = seconds_now();
  gpu_scenario(&c1, &g);
  const double t_one = seconds_now() - t_clean;
  g.recording = 0;
  char per_fn[512];
  oom_call_summary(cls, per_fn, sizeof per_fn);
  const long per_run = oom_calls(cls);
  cr_assert_eq(c1.errors, 0, "the second clean run: %s", c1.first);
  int off = 0;
  for (int i = 0; i < (int)(sizeof g.off / sizeof g.off[0]); i++) off += g.off[i];
  cr_assert_gt(per_run, 0, "no %s call reached the hooks", cname);
  cr_assert_eq(oom_live(OOM_HOST), host0, "live host blocks grow from one clean run to the next");
  cr_assert_eq(oom_live(OOM_DEVICE), dev0,
               "live device objects grow from one clean run to the next");
  printf("oom %s sweep: %ld failure points expected (%s), %.3f s a run\n", cname, per_run, per_fn,
         t_one);
  fflush(stdout);

  long n = 1, failed = 0, recovered = 0, bad = 0;
  const double t_sweep = seconds_now();
  for (;; n++) {
    oom_ctx r = {0};
    r.log = stderr;
    const long serial0 = oom_serial();
    oom_arm(cls, n, 0);
    gpu_scenario(&r, &g);
    const long fired = oom_fired();
    char first[64];
    snprintf(first, sizeof first, "%s", oom_first_failure());
    oom_disarm();
    if (!fired) break;
    failed += r.alloc_failed;
    recovered += r.recovered;
    const long host = oom_live(OOM_HOST), dev = oom_live(OOM_DEVICE);
    bad += r.errors || host != host0 || dev != dev0;
    cr_expect_eq(r.errors, 0, "%s sweep, N = %ld (%s failed): %d error(s); %s", cname, n, first,
                 r.errors, r.first);
    if (host != host0 || dev != dev0) {
      fprintf(stderr, "  %s sweep, N = %ld (%s failed): live after the run, made in it:\n", cname,
              n, first);
      oom_dump_live(stderr, OOM_HOST, serial0);
      oom_dump_live(stderr, OOM_DEVICE, serial0);
    }
    cr_expect_eq(host, host0,
                 "%s sweep, N = %ld (%s failed): %ld host blocks of gko's live, %ld "
                 "before (listed above)",
                 cname, n, first, host, host0);
    cr_expect_eq(dev, dev0,
                 "%s sweep, N = %ld (%s failed): %ld device objects of gko's live, "
                 "%ld before (listed above)",
                 cname, n, first, dev, dev0);
    cr_assert(n < 100000, "the sweep does not end");
    if (seconds_now() - t0 > limit) {
      cr_expect_fail(
          "%s sweep stopped after %ld of about %ld failure points: over %.0f s "
          "(GKO_OOM_SECONDS)",
          cname, n, per_run, limit);
      bad++;
      break;
    }
  }
  const double t_end = seconds_now();
  /* allocations succeed again: the same plans as before, and g.h0 computes */
  oom_ctx fin = {0};
  fin.log = stderr;
  g.comparing = 1;
  gpu_scenario(&fin, &g);
  g.comparing = 0;
  cr_expect_eq(fin.errors, 0, "the clean run after the %s sweep: %s", cname, fin.first);
  h0_still_computes(&g);
  T_OK(gko_destroy(g.h0));
  gpu_env_free(&g);
  printf(
      "oom %s sweep: %ld failure points (calls per run: %s; gko_create from cold: %ld more), "
      "%ld calls returned ALLOC_FAILED, %ld absorbed a failure; sweep %.1f s (%.3f s a run), "
      "total %.1f s; %d part(s) left out; %s\n",
      cname, n - 1, per_fn, create_points, failed, recovered, t_end - t_sweep,
      n > 1 ? (t_end - t_sweep) / (double)(n - 1) : 0.0, seconds_now() - t0, off,
      bad || off ? "SOME FAILED (above)" : "all clean");
}

Test(oom_gpu, host_allocations, .timeout = 300) { gpu_sweep(OOM_HOST); }
Test(oom_gpu, device_allocations, .timeout = 300) { gpu_sweep(OOM_DEVICE); }
