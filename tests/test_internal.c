/* test_internal.c -- the environment classification behind gko_create and
 * gko_diagnostics, driven with simulated inputs (old drivers, missing
 * drivers, GPUs the fatbin has no code for).  Linked against libgko.a to
 * reach the hidden functions. */
#include "common.h"
#include "internal.h"

static gko_status_t classify(int drv, int rt, int err, int count, int cc, char *buf) {
  return gk_classify_environment(drv, rt, err, count, cc, buf, 512);
}

Test(environment, no_driver) {
  char buf[512];
  cr_expect_eq(classify(0, 13000, 0, 0, 0, buf), GKO_STATUS_NO_DEVICE);
  cr_expect(strstr(buf, "no NVIDIA driver") != NULL, "%s", buf);
  cr_expect(strstr(buf, "580.65.06") != NULL, "names the minimum driver: %s", buf);
}

Test(environment, driver_too_old_for_the_runtime) {
  char buf[512];
  /* what cudart reports when the driver is older than its major version */
  cr_expect_eq(classify(12040, 13000, cudaErrorInsufficientDriver, 0, 0, buf),
               GKO_STATUS_DRIVER_TOO_OLD);
  cr_expect(strstr(buf, "supports CUDA 12.4") != NULL, "%s", buf);
  cr_expect(strstr(buf, "runtime 13.0") != NULL, "%s", buf);
  cr_expect(strstr(buf, "580.65.06") != NULL, "%s", buf);
  cr_expect_eq(classify(11080, 12060, cudaErrorInsufficientDriver, 0, 0, buf),
               GKO_STATUS_DRIVER_TOO_OLD);
  cr_expect(strstr(buf, "525.60.13") != NULL, "%s", buf);
  /* minor-version compatibility: a 13.0 driver runs a 13.2 runtime's SASS */
  const int *sass;
  gk_compiled_sass(&sass);
  cr_expect_eq(classify(13000, 13020, 0, 1, sass[0], buf), GKO_STATUS_SUCCESS, "%s", buf);
}

Test(environment, no_device) {
  char buf[512];
  cr_expect_eq(classify(13000, 13000, cudaErrorNoDevice, 0, 0, buf), GKO_STATUS_NO_DEVICE);
  cr_expect(strstr(buf, "sees no GPU") != NULL, "%s", buf);
  cr_expect_eq(classify(13000, 13000, 0, 0, 0, buf), GKO_STATUS_NO_DEVICE);
  cr_expect_eq(classify(13000, 13000, cudaErrorInitializationError, 0, 0, buf),
               GKO_STATUS_CUDA_ERROR);
}

Test(environment, arch_without_code) {
  char buf[512];
  /* an architecture below every compiled one has neither SASS nor PTX */
  cr_expect_eq(classify(13000, 13000, 0, 1, 60, buf), GKO_STATUS_NO_KERNEL_IMAGE);
  cr_expect(strstr(buf, "sm_60") != NULL, "%s", buf);
  cr_expect(strstr(buf, "GKO_ARCHS=60") != NULL, "%s", buf);
}

Test(environment, newer_gpu_runs_ptx_and_needs_a_new_enough_driver) {
  char buf[512];
  cr_expect_eq(classify(13000, 13000, 0, 1, 120, buf), GKO_STATUS_SUCCESS, "%s", buf);
  cr_expect(strstr(buf, "JIT") != NULL, "%s", buf);
  cr_expect_eq(classify(13000, 13020, 0, 1, 120, buf), GKO_STATUS_DRIVER_TOO_OLD, "%s", buf);
  cr_expect(strstr(buf, "PTX") != NULL, "%s", buf);
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
  cr_expect(!gk_partial_overlap(a, 16, a, 16));
  cr_expect(!gk_partial_overlap(a, 16, a + 16, 16));
  cr_expect(gk_partial_overlap(a, 16, a + 15, 16));
  cr_expect(gk_partial_overlap(a + 4, 16, a, 16));
}
