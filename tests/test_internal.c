/* test_internal.c -- the environment classification behind gko_create and
 * gko_diagnostics, driven with simulated inputs (old drivers, missing
 * drivers, GPUs the fatbin has no code for).  Linked against libgko.a to
 * reach the hidden functions. */
#include <pthread.h>

#include "common.h"
#include "core.h"
#include "diag.h"

static gko_status_t classify(int drv, int rt, int err, int count, int cc, char *buf) {
  return gk_classify_environment(drv, rt, err, count, cc, buf, 512);
}

/* classify(drv, rt, err, count, cc) answers `want`, with a message that
 * holds each of the words (a NULL-terminated list). */
static void expect_verdict(int drv, int rt, int err, int count, int cc, gko_status_t want,
                           const char *const *words) {
  char buf[512];
  cr_expect_eq(classify(drv, rt, err, count, cc, buf), want, "%s", buf);
  for (; *words; words++) cr_expect(strstr(buf, *words) != NULL, "'%s' missing: %s", *words, buf);
}
#define EXPECT_VERDICT(drv, rt, err, count, cc, want, ...) \
  expect_verdict(drv, rt, err, count, cc, want, (const char *const[]){__VA_ARGS__, NULL})

Test(environment, no_driver) {
  /* and names the minimum driver */
  EXPECT_VERDICT(0, 13000, 0, 0, 0, GKO_STATUS_NO_DEVICE, "no NVIDIA driver", "580.65.06");
}

Test(environment, driver_too_old_for_the_runtime) {
  /* what cudart reports when the driver is older than its major version */
  EXPECT_VERDICT(12040, 13000, cudaErrorInsufficientDriver, 0, 0, GKO_STATUS_DRIVER_TOO_OLD,
                 "supports CUDA 12.4", "runtime 13.0", "580.65.06");
  EXPECT_VERDICT(11080, 12060, cudaErrorInsufficientDriver, 0, 0, GKO_STATUS_DRIVER_TOO_OLD,
                 "525.60.13");
  /* minor-version compatibility: a 13.0 driver runs a 13.2 runtime's SASS */
  char buf[512];
  const int *sass;
  gk_compiled_sass(&sass);
  cr_expect_eq(classify(13000, 13020, 0, 1, sass[0], buf), GKO_STATUS_SUCCESS, "%s", buf);
}

Test(environment, no_device) {
  EXPECT_VERDICT(13000, 13000, cudaErrorNoDevice, 0, 0, GKO_STATUS_NO_DEVICE, "sees no GPU");
  char buf[512];
  cr_expect_eq(classify(13000, 13000, 0, 0, 0, buf), GKO_STATUS_NO_DEVICE);
  cr_expect_eq(classify(13000, 13000, cudaErrorInitializationError, 0, 0, buf),
               GKO_STATUS_CUDA_ERROR);
}

Test(environment, arch_without_code) {
  /* an architecture below every compiled one has neither SASS nor PTX */
  EXPECT_VERDICT(13000, 13000, 0, 1, 60, GKO_STATUS_NO_KERNEL_IMAGE, "sm_60", "GKO_ARCHS=60");
}

Test(environment, newer_gpu_runs_ptx_and_needs_a_new_enough_driver) {
  EXPECT_VERDICT(13000, 13000, 0, 1, 120, GKO_STATUS_SUCCESS, "JIT");
  EXPECT_VERDICT(13000, 13020, 0, 1, 120, GKO_STATUS_DRIVER_TOO_OLD, "PTX");
}

Test(environment, code_path_rules) {
  const int list[] = {75, 80, 86, 89, 90};
  cr_expect_eq(gk_code_path_for(80, list, 5, 90), GKO_CODE_PATH_SASS);
  cr_expect_eq(gk_code_path_for(87, list, 5, 90), GKO_CODE_PATH_SASS); /* runs sm_86 */
  cr_expect_eq(gk_code_path_for(90, list, 5, 90), GKO_CODE_PATH_SASS);
  cr_expect_eq(gk_code_path_for(100, list, 5, 90), GKO_CODE_PATH_PTX_JIT);
  cr_expect_eq(gk_code_path_for(70, list, 5, 90), GKO_CODE_PATH_NONE);
  const int only90[] = {90};
  cr_expect_eq(gk_code_path_for(80, only90, 1, 90), GKO_CODE_PATH_NONE);
  cr_expect_eq(gk_code_path_for(89, only90, 1, 0), GKO_CODE_PATH_NONE);
}

Test(errors, cuda_errors_map_to_clear_statuses) {
  cr_expect_eq(gk_cuda_fail(cudaErrorMemoryAllocation, "x"), GKO_STATUS_ALLOC_FAILED);
  cr_expect_eq(gk_cuda_fail(cudaErrorIllegalAddress, "x"), GKO_STATUS_EXECUTION_FAILED);
  cr_expect(strstr(gko_last_error_detail(), "sticky") != NULL);
  cr_expect_eq(gk_cuda_fail(cudaErrorLaunchFailure, "x"), GKO_STATUS_EXECUTION_FAILED);
  cr_expect_eq(gk_cuda_fail(cudaErrorNoKernelImageForDevice, "launch"),
               GKO_STATUS_NO_KERNEL_IMAGE);
  cr_expect_eq(gk_cuda_fail(cudaErrorInsufficientDriver, "x"), GKO_STATUS_DRIVER_TOO_OLD);
  cr_expect_eq(gk_cuda_fail(cudaErrorUnsupportedPtxVersion, "x"), GKO_STATUS_DRIVER_TOO_OLD);
  cr_expect_eq(gk_cuda_fail(cudaErrorInvalidValue, "cudaFoo"), GKO_STATUS_CUDA_ERROR);
  cr_expect(strstr(gko_last_error_detail(), "cudaFoo") != NULL);
}

Test(errors, overlap_rule) {
  char a[64] = {0};
  /* any shared byte */
  cr_expect(gk_overlap(a, 16, a, 16));
  cr_expect(gk_overlap(a, 16, a + 15, 16));
  cr_expect(gk_overlap(a + 15, 16, a, 16));
  cr_expect(gk_overlap(a, 64, a + 8, 1));
  cr_expect(!gk_overlap(a, 16, a + 16, 16));
  cr_expect(!gk_overlap(a + 16, 16, a, 16));
  cr_expect(!gk_overlap(a, 0, a, 16));
  cr_expect(!gk_overlap(NULL, 16, a, 16));
  /* overlapping without being the same start */
  cr_expect(!gk_partial_overlap(a, 16, a, 16));
  cr_expect(!gk_partial_overlap(a, 16, a + 16, 16));
  cr_expect(gk_partial_overlap(a, 16, a + 15, 16));
  cr_expect(gk_partial_overlap(a + 4, 16, a, 16));
}

/* ---- the driver-too-old and no-kernel-image messages, from forced inputs ----
 * gk_classify_environment takes the versions, the device count and the
 * compute capability as inputs (what gko_create and gko_diagnostics pass
 * from the real machine); the architecture decision is gk_code_path_for
 * over the compiled list, which these tests read with gk_compiled_sass /
 * gk_compiled_ptx so that they hold for any GKO_ARCHS. */

static int has(const char *buf, const char *fmt, int v) {
  char want[64];
  snprintf(want, sizeof want, fmt, v);
  return strstr(buf, want) != NULL;
}

/* compute capabilities of every NVIDIA architecture, old and new */
static const int kCCs[] = {30, 35, 37, 50, 52, 53, 60, 61, 62, 70, 72, 75, 80,
                           86, 87, 88, 89, 90, 100, 101, 103, 110, 120, 121};

Test(environment, every_architecture_gets_the_documented_verdict) {
  const int *sass;
  const int ns = gk_compiled_sass(&sass);
  const int ptx = gk_compiled_ptx();
  cr_assert(ns >= 1 && ptx > 0);
  const int rt = 13020, older = 13000; /* same major: minor-version compatibility */
  int none = 0, jit = 0, native = 0;
  for (size_t i = 0; i < sizeof kCCs / sizeof kCCs[0]; i++) {
    const int cc = kCCs[i];
    char buf[512];
    const int path = gk_code_path_for(cc, sass, ns, ptx);
    gko_status_t s = classify(rt, rt, 0, 1, cc, buf);
    if (path == GKO_CODE_PATH_NONE) {
      none++;
      cr_expect_eq(s, GKO_STATUS_NO_KERNEL_IMAGE, "sm_%d: %s", cc, buf);
      cr_expect(has(buf, "this GPU is sm_%d", cc), "names the GPU: %s", buf);
      cr_expect(has(buf, "GKO_ARCHS=%d", cc), "says how to rebuild: %s", buf);
      cr_expect(has(buf, "compute_%d PTX", ptx), "names the PTX: %s", buf);
      for (int a = 0; a < ns; a++)
        cr_expect(has(buf, "sm_%d", sass[a]), "lists compiled sm_%d: %s", sass[a], buf);
      /* an old driver does not hide the missing image behind another verdict
       * as long as its major version matches */
      cr_expect_eq(classify(older, rt, 0, 1, cc, buf), GKO_STATUS_NO_KERNEL_IMAGE, "%s", buf);
    } else if (path == GKO_CODE_PATH_SASS) {
      native++;
      cr_expect_eq(s, GKO_STATUS_SUCCESS, "sm_%d: %s", cc, buf);
      cr_expect(strstr(buf, "native SASS") != NULL, "%s", buf);
      /* SASS runs on a driver of the same major, older minor */
      cr_expect_eq(classify(older, rt, 0, 1, cc, buf), GKO_STATUS_SUCCESS, "sm_%d: %s", cc, buf);
    } else {
      jit++;
      cr_expect(cc >= ptx, "PTX JIT below the PTX architecture: sm_%d", cc);
      cr_expect_eq(s, GKO_STATUS_SUCCESS, "sm_%d: %s", cc, buf);
      cr_expect(strstr(buf, "JIT") != NULL, "%s", buf);
      /* the driver must be at least as new as the toolkit of the PTX */
      cr_expect_eq(classify(older, rt, 0, 1, cc, buf), GKO_STATUS_DRIVER_TOO_OLD, "sm_%d: %s",
                   cc, buf);
      cr_expect(has(buf, "this GPU (sm_%d)", cc), "%s", buf);
      cr_expect(has(buf, "compute_%d PTX", ptx), "%s", buf);
      cr_expect(strstr(buf, "the driver (CUDA 13.0) is older than the PTX's toolkit (CUDA 13.2)"),
                "%s", buf);
      cr_expect(strstr(buf, "580.65.06") != NULL, "names the minimum driver: %s", buf);
      cr_expect(has(buf, "GKO_ARCHS=%d", cc), "%s", buf);
    }
  }
  cr_expect(none >= 1 && native >= 1 && jit >= 1, "verdicts: %d none, %d native, %d JIT", none,
            native, jit);
}

Test(environment, driver_older_than_the_runtime_major) {
  const struct {
    int drv, rt, err;
    const char *supports, *runtime, *min_driver, *rebuild;
  } t[] = {
      {12040, 13000, cudaErrorInsufficientDriver, "supports CUDA 12.4", "runtime 13.0",
       "580.65.06", "CUDA 12.x toolkit"},
      {11080, 12060, cudaErrorInsufficientDriver, "supports CUDA 11.8", "runtime 12.6",
       "525.60.13", "CUDA 11.x toolkit"},
      {10020, 11080, cudaErrorInsufficientDriver, "supports CUDA 10.2", "runtime 11.8",
       "450.80.02", "CUDA 10.x toolkit"},
      /* cudaGetDeviceCount succeeded, but the major version is older */
      {12090, 13010, 0, "supports CUDA 12.9", "runtime 13.1", "580.65.06", "CUDA 12.x toolkit"},
      /* a runtime newer than gko knows the minimum driver of */
      {13000, 14000, cudaErrorInsufficientDriver, "supports CUDA 13.0", "runtime 14.0",
       "the one your CUDA toolkit's release notes name", "CUDA 13.x toolkit"},
  };
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
    EXPECT_VERDICT(t[i].drv, t[i].rt, t[i].err, t[i].err ? 0 : 1, 90, GKO_STATUS_DRIVER_TOO_OLD,
                   t[i].supports, t[i].runtime, t[i].min_driver, t[i].rebuild);
}

Test(environment, checks_in_their_documented_order) {
  /* no driver first, whatever else */
  EXPECT_VERDICT(0, 13000, cudaErrorInsufficientDriver, 0, 60, GKO_STATUS_NO_DEVICE,
                 "no NVIDIA driver");
  char buf[512];
  /* then a driver too old, before "no device" and before the architecture */
  cr_expect_eq(classify(12000, 13000, cudaErrorInsufficientDriver, 0, 0, buf),
               GKO_STATUS_DRIVER_TOO_OLD, "%s", buf);
  cr_expect_eq(classify(12000, 13000, 0, 1, 60, buf), GKO_STATUS_DRIVER_TOO_OLD, "%s", buf);
  /* then no device, before the architecture */
  cr_expect_eq(classify(13000, 13000, 0, 0, 60, buf), GKO_STATUS_NO_DEVICE, "%s", buf);
  /* then the architecture */
  cr_expect_eq(classify(13000, 13000, 0, 1, 60, buf), GKO_STATUS_NO_KERNEL_IMAGE, "%s", buf);
}

Test(environment, message_buffer_bounds) {
  char small[16];
  memset(small, 'x', sizeof small);
  cr_expect_eq(gk_classify_environment(12040, 13000, cudaErrorInsufficientDriver, 0, 0, small,
                                       sizeof small),
               GKO_STATUS_DRIVER_TOO_OLD);
  cr_expect(memchr(small, '\0', sizeof small) != NULL, "not NUL-terminated");
  cr_expect_eq(strlen(small), sizeof small - 1, "truncated to the buffer: '%s'", small);
  cr_expect_eq(gk_classify_environment(13000, 13000, 0, 1, 60, NULL, 0),
               GKO_STATUS_NO_KERNEL_IMAGE);
  cr_expect_eq(gk_classify_environment(13000, 13000, 0, 1, 60, small, 0),
               GKO_STATUS_NO_KERNEL_IMAGE);
}

/* What test_stress's fault test expects to see from a real sticky error:
 * every error CUDA leaves sticky maps to EXECUTION_FAILED, and the detail
 * names the failed call, the CUDA error and says "sticky"; other errors
 * do not claim so. */
Test(errors, sticky_errors_are_execution_failed_with_the_cuda_name) {
  const cudaError_t sticky[] = {cudaErrorIllegalAddress,     cudaErrorLaunchFailure,
                                cudaErrorIllegalInstruction, cudaErrorMisalignedAddress,
                                cudaErrorInvalidAddressSpace, cudaErrorInvalidPc,
                                cudaErrorHardwareStackError, cudaErrorAssert,
                                cudaErrorLaunchTimeout,      cudaErrorECCUncorrectable};
  for (size_t i = 0; i < sizeof sticky / sizeof sticky[0]; i++) {
    cr_expect_eq(gk_cuda_fail(sticky[i], "SpMM kernel launch"), GKO_STATUS_EXECUTION_FAILED,
                 "%s", cudaGetErrorName(sticky[i]));
    const char *d = gko_last_error_detail();
    cr_expect(strstr(d, "SpMM kernel launch") != NULL, "names the call: %s", d);
    cr_expect(strstr(d, cudaGetErrorName(sticky[i])) != NULL, "names the error: %s", d);
    cr_expect(strstr(d, "sticky") != NULL, "says sticky: %s", d);
  }
  const cudaError_t other[] = {cudaErrorInvalidValue, cudaErrorNotReady,
                               cudaErrorStreamCaptureUnsupported, cudaErrorInvalidResourceHandle};
  for (size_t i = 0; i < sizeof other / sizeof other[0]; i++) {
    cr_expect_eq(gk_cuda_fail(other[i], "cudaFoo"), GKO_STATUS_CUDA_ERROR, "%s",
                 cudaGetErrorName(other[i]));
    cr_expect(strstr(gko_last_error_detail(), "sticky") == NULL, "%s", gko_last_error_detail());
    cr_expect(strstr(gko_last_error_detail(), cudaGetErrorName(other[i])) != NULL, "%s",
              gko_last_error_detail());
  }
  /* launch-time image problems point at gko_diagnostics */
  cr_expect_eq(gk_cuda_fail(cudaErrorNoKernelImageForDevice, "GELU kernel launch"),
               GKO_STATUS_NO_KERNEL_IMAGE);
  cr_expect(strstr(gko_last_error_detail(), "gko_diagnostics") != NULL, "%s",
            gko_last_error_detail());
  cr_expect_eq(gk_cuda_fail(cudaErrorInvalidKernelImage, "x"), GKO_STATUS_NO_KERNEL_IMAGE);
  cr_expect_eq(gk_cuda_fail(cudaErrorUnsupportedPtxVersion, "x"), GKO_STATUS_DRIVER_TOO_OLD);
  cr_expect(strstr(gko_last_error_detail(), "gko_diagnostics") != NULL, "%s",
            gko_last_error_detail());
  cr_expect(strstr(gko_status_string(GKO_STATUS_EXECUTION_FAILED), "sticky") != NULL);
  cr_expect_str_eq(gko_status_name(GKO_STATUS_EXECUTION_FAILED), "GKO_STATUS_EXECUTION_FAILED");
}

/* The table of live objects (src/live.c): many objects added and removed
 * in a scrambled order stay findable (growth, probe chains across deletions
 * and the wrap-around), a kind must match, and nothing is found twice. */
Test(live, add_remove_many) {
  enum { N = 5000 };
  static char objs[N][16]; /* distinct addresses 16 bytes apart: clustered hashes */
  for (int i = 0; i < N; i++) cr_assert_eq(gk_live_add(objs[i], 1 + i % 3), GKO_STATUS_SUCCESS);
  cr_expect_eq(gk_live_remove(objs[7], 1 + (7 + 1) % 3), 0, "a kind that differs must not match");
  for (int r = 0; r < 2; r++)
    for (int i = r; i < N; i += 2) { /* evens, then odds, walking the table while it shrinks */
      const int j = (i * 7919) % N; /* a permutation of 0..N-1 (7919 is prime, N = 5000) */
      cr_assert_eq(gk_live_remove(objs[j], 1 + j % 3), 1, "object %d lost", j);
      cr_assert_eq(gk_live_remove(objs[j], 1 + j % 3), 0, "object %d removed twice", j);
    }
  for (int i = 0; i < N; i++) cr_expect_eq(gk_live_remove(objs[i], 1 + i % 3), 0);
  /* and the table is usable again */
  cr_assert_eq(gk_live_add(objs[3], 2), GKO_STATUS_SUCCESS);
  cr_expect_eq(gk_live_remove(objs[3], 2), 1);
}

/* gk_live_check's per-thread memo of recent answers never outlives a
 * removal: checked (memoized), removed, checked again -- refused; the same
 * address registered again as another kind is that kind only; and a
 * removal on another thread is seen by this thread's next check. */
static char g_obj[16];
static void *remove_obj(void *arg) {
  (void)arg;
  return (void *)(intptr_t)gk_live_remove(g_obj, 2);
}

Test(live, check_memo_follows_removals) {
  static char a[16];
  cr_assert_eq(gk_live_add(a, 1), GKO_STATUS_SUCCESS);
  for (int i = 0; i < 3; i++) cr_expect_eq(gk_live_check(a, 1, "a"), GKO_STATUS_SUCCESS);
  cr_expect_eq(gk_live_check(a, 2, "a"), GKO_STATUS_INVALID_HANDLE, "another kind passed");
  cr_assert_eq(gk_live_remove(a, 1), 1);
  cr_expect_eq(gk_live_check(a, 1, "a"), GKO_STATUS_INVALID_HANDLE, "a removed object passed");
  cr_assert_eq(gk_live_add(a, 3), GKO_STATUS_SUCCESS); /* the address reused, another kind */
  cr_expect_eq(gk_live_check(a, 1, "a"), GKO_STATUS_INVALID_HANDLE);
  cr_expect_eq(gk_live_check(a, 3, "a"), GKO_STATUS_SUCCESS);
  cr_assert_eq(gk_live_remove(a, 3), 1);
  cr_expect_eq(gk_live_check(NULL, 1, "a"), GKO_STATUS_INVALID_VALUE);
  cr_assert_eq(gk_live_add(g_obj, 2), GKO_STATUS_SUCCESS);
  cr_expect_eq(gk_live_check(g_obj, 2, "g_obj"), GKO_STATUS_SUCCESS);
  pthread_t t;
  void *removed = NULL;
  cr_assert_eq(pthread_create(&t, NULL, remove_obj, NULL), 0);
  pthread_join(t, &removed);
  cr_assert_eq((intptr_t)removed, 1);
  cr_expect_eq(gk_live_check(g_obj, 2, "g_obj"), GKO_STATUS_INVALID_HANDLE,
               "another thread's removal was not seen");
}
