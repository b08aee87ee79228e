/* test_host.c -- what must hold on every machine, GPU or not: statuses and
 * strings, versions, bad arguments rejected before any CUDA work, handle
 * creation reporting the machine honestly, diagnostics. */
#include <malloc.h>
#include <pthread.h>

#include "common.h"

static const gko_status_t kAll[] = {
    GKO_STATUS_SUCCESS,          GKO_STATUS_INVALID_VALUE,
    GKO_STATUS_NOT_SUPPORTED,    GKO_STATUS_NO_DEVICE,
    GKO_STATUS_DRIVER_TOO_OLD,   GKO_STATUS_NO_KERNEL_IMAGE,
    GKO_STATUS_ALLOC_FAILED,     GKO_STATUS_INSUFFICIENT_WORKSPACE,
    GKO_STATUS_CUDA_ERROR,       GKO_STATUS_EXECUTION_FAILED,
    GKO_STATUS_INTERNAL,         GKO_STATUS_DEVICE_MISMATCH};

Test(status, values_are_the_documented_ones) {
  cr_expect_eq(GKO_STATUS_SUCCESS, 0);
  cr_expect_eq(GKO_STATUS_INVALID_VALUE, 1);
  cr_expect_eq(GKO_STATUS_NOT_SUPPORTED, 2);
  cr_expect_eq(GKO_STATUS_NO_DEVICE, 3);
  cr_expect_eq(GKO_STATUS_DRIVER_TOO_OLD, 4);
  cr_expect_eq(GKO_STATUS_NO_KERNEL_IMAGE, 5);
  cr_expect_eq(GKO_STATUS_ALLOC_FAILED, 6);
  cr_expect_eq(GKO_STATUS_INSUFFICIENT_WORKSPACE, 7);
  cr_expect_eq(GKO_STATUS_CUDA_ERROR, 8);
  cr_expect_eq(GKO_STATUS_EXECUTION_FAILED, 9);
  cr_expect_eq(GKO_STATUS_INTERNAL, 10);
  cr_expect_eq(GKO_STATUS_DEVICE_MISMATCH, 11);
  cr_expect_eq(sizeof(gko_status_t), sizeof(int));
  cr_expect_eq(sizeof(gko_dtype_t), sizeof(int));
}

Test(status, names_and_strings_never_null_and_distinct) {
  size_t n = sizeof kAll / sizeof kAll[0];
  for (size_t i = 0; i < n; i++) {
    const char *name = gko_status_name(kAll[i]);
    const char *str = gko_status_string(kAll[i]);
    cr_assert_not_null(name);
    cr_assert_not_null(str);
    cr_expect(strncmp(name, "GKO_STATUS_", 11) == 0, "%s", name);
    cr_expect(strcmp(name, "GKO_STATUS_UNKNOWN") != 0);
    cr_expect(strlen(str) > 5);
    for (size_t j = 0; j < i; j++) {
      cr_expect_str_neq(name, gko_status_name(kAll[j]));
      cr_expect_str_neq(str, gko_status_string(kAll[j]));
    }
  }
  cr_expect_str_eq(gko_status_name((gko_status_t)12345), "GKO_STATUS_UNKNOWN");
  cr_expect_str_eq(gko_status_name((gko_status_t)-1), "GKO_STATUS_UNKNOWN");
  cr_assert_not_null(gko_status_string((gko_status_t)12345));
  cr_expect_str_eq(gko_status_name(GKO_STATUS_INVALID_VALUE), "GKO_STATUS_INVALID_VALUE");
}

Test(version, runtime_matches_header) {
  cr_expect_eq(gko_version_number(), (unsigned)GKO_VERSION_NUMBER);
  char want[32];
  snprintf(want, sizeof want, "%d.%d.%d", GKO_VERSION_MAJOR, GKO_VERSION_MINOR,
           GKO_VERSION_PATCH);
  cr_expect_str_eq(gko_version_string(), want);
  cr_expect_eq(GKO_VERSION_NUMBER,
               GKO_VERSION_MAJOR * 10000 + GKO_VERSION_MINOR * 100 + GKO_VERSION_PATCH);
}

Test(dtype, sizes) {
  cr_expect_eq(gko_dtype_size(GKO_DTYPE_F32), 4);
  cr_expect_eq(gko_dtype_size(GKO_DTYPE_F16), 2);
  cr_expect_eq(gko_dtype_size(GKO_DTYPE_BF16), 2);
  cr_expect_eq(gko_dtype_size(GKO_DTYPE_F8E4M3), 1);
  cr_expect_eq(gko_dtype_size(GKO_DTYPE_F8E5M2), 1);
  cr_expect_eq(gko_dtype_size((gko_dtype_t)5), 0);
  cr_expect_eq(gko_dtype_size((gko_dtype_t)-1), 0);
}

Test(handle, create_null_and_destroy_null) {
  T_FAILS(GKO_STATUS_INVALID_VALUE, gko_create(NULL));
  cr_expect(strstr(gko_last_error_detail(), "handle") != NULL);
  T_OK(gko_destroy(NULL));
  cr_expect_str_eq(gko_last_error_detail(), "", "a successful call resets the detail");
  int dev = 7;
  T_FAILS(GKO_STATUS_INVALID_VALUE, gko_handle_device(NULL, &dev));
  cr_expect_eq(dev, 7);
}

/* Destroying an object twice, or destroying what gko did not make (or an
 * object of another kind), is INVALID_VALUE with a reason and frees nothing:
 * never a double free (under ASan in CI).  Handles and plans need a GPU to
 * exist; their never-made and double destroys are checked with one. */
Test(misuse, destroy_twice_or_foreign_is_a_status) {
  static int64_t fake[64];
  gko_gemm_desc_t g;
  T_OK(gko_gemm_desc_create(&g, GKO_DTYPE_F16, GKO_DTYPE_F16, 4, 4, 4));
  T_OK(gko_gemm_desc_destroy(g));
  T_FAILS(GKO_STATUS_INVALID_VALUE, gko_gemm_desc_destroy(g));
  cr_expect(strstr(gko_last_error_detail(), "not a live object") != NULL, "%s", gko_last_error_detail());
  gko_conv_desc_t c;
  T_OK(gko_conv_desc_create(&c, GKO_DTYPE_F16, GKO_CONV_LAYOUT_NHWC, 1, 8, 4, 4, 8, 3, 3));
  T_FAILS(GKO_STATUS_INVALID_VALUE, gko_pool_desc_destroy((gko_pool_desc_t)c)); /* another kind */
  T_OK(gko_conv_desc_destroy(c));
  T_FAILS(GKO_STATUS_INVALID_VALUE, gko_conv_desc_destroy(c));
  gko_pool_desc_t pd;
  T_OK(gko_pool_desc_create(&pd, GKO_POOL_MAX, GKO_DTYPE_F16, GKO_CONV_LAYOUT_NHWC, 1, 8, 4, 4, 2, 2));
  T_OK(gko_pool_desc_destroy(pd));
  T_FAILS(GKO_STATUS_INVALID_VALUE, gko_pool_desc_destroy(pd));
  /* never made by gko */
  T_FAILS(GKO_STATUS_INVALID_VALUE, gko_destroy((gko_handle_t)fake));
  T_FAILS(GKO_STATUS_INVALID_VALUE, gko_gemm_plan_destroy((gko_gemm_plan_t)fake));
  T_FAILS(GKO_STATUS_INVALID_VALUE, gko_conv_plan_destroy((gko_conv_plan_t)fake));
  T_FAILS(GKO_STATUS_INVALID_VALUE, gko_spmm_plan_destroy((gko_spmm_plan_t)fake));
  T_FAILS(GKO_STATUS_INVALID_VALUE, gko_csr_destroy((gko_csr_t)fake));
  T_FAILS(GKO_STATUS_INVALID_VALUE, gko_conv_desc_destroy((gko_conv_desc_t)fake));
  for (size_t i = 0; i < sizeof fake / sizeof fake[0]; i++) cr_assert_eq(fake[i], 0, "a refused destroy wrote");
  /* NULL stays a no-op */
  T_OK(gko_gemm_plan_destroy(NULL));
  T_OK(gko_csr_destroy(NULL));
  if (t_gpu_count() > 0) {
    gko_handle_t h;
    T_OK(gko_create(&h));
    gko_gemm_desc_t d;
    gko_gemm_plan_t p;
    T_OK(gko_gemm_desc_create(&d, GKO_DTYPE_F16, GKO_DTYPE_F16, 64, 64, 64));
    T_OK(gko_gemm_plan_create(h, d, &p));
    T_OK(gko_gemm_desc_destroy(d));
    T_OK(gko_gemm_plan_destroy(p));
    T_FAILS(GKO_STATUS_INVALID_VALUE, gko_gemm_plan_destroy(p));
    T_OK(gko_destroy(h));
    T_FAILS(GKO_STATUS_INVALID_VALUE, gko_destroy(h));
    cr_expect(strstr(gko_last_error_detail(), "handle") != NULL, "%s", gko_last_error_detail());
  }
}

/* Without a GPU: the no-device status with a sentence that says why, the
 * handle pointer untouched, and no memory kept.  With one: a handle. */
Test(handle, create_reports_the_machine) {
  gko_handle_t h = (gko_handle_t)(uintptr_t)0x1234;
  if (t_gpu_count() == 0) {
    struct mallinfo2 before = mallinfo2();
    for (int i = 0; i < 1000; i++) {
      gko_status_t s = gko_create(&h);
      cr_assert(s == GKO_STATUS_NO_DEVICE || s == GKO_STATUS_DRIVER_TOO_OLD,
                "got %s", gko_status_name(s));
    }
    struct mallinfo2 after = mallinfo2();
    cr_expect_eq(h, (gko_handle_t)(uintptr_t)0x1234, "handle written on failure");
    cr_expect(strlen(gko_last_error_detail()) > 20, "detail: '%s'", gko_last_error_detail());
    cr_expect_eq(after.uordblks, before.uordblks, "failed creates kept %zu bytes",
                 after.uordblks - before.uordblks);
  } else {
    T_OK(gko_create(&h));
    int dev = -1, cur = -2;
    T_OK(gko_handle_device(h, &dev));
    cudaGetDevice(&cur);
    cr_expect_eq(dev, cur);
    T_OK(gko_destroy(h));
    /* create/destroy cycles keep no host memory */
    for (int i = 0; i < 10; i++) {
      T_OK(gko_create(&h));
      T_OK(gko_destroy(h));
    }
    struct mallinfo2 before = mallinfo2();
    for (int i = 0; i < 1000; i++) {
      T_OK(gko_create(&h));
      T_OK(gko_destroy(h));
    }
    struct mallinfo2 after = mallinfo2();
    cr_expect_eq(after.uordblks, before.uordblks, "create/destroy kept %zu bytes",
                 after.uordblks - before.uordblks);
  }
}

/* Argument checks come before any CUDA call, so they hold on any machine.
 * A non-NULL fake handle is never dereferenced by these paths. */
Test(gelu_args, rejected_with_a_reason) {
  float buf[4] = {1, 2, 3, 4};
  T_FAILS(GKO_STATUS_INVALID_VALUE,
          gko_gelu_forward(NULL, GKO_GELU_ERF, GKO_DTYPE_F32, 4, buf, buf, NULL));
  cr_expect(strstr(gko_last_error_detail(), "handle") != NULL);
  gko_handle_t fake = (gko_handle_t)(uintptr_t)0x10;
  T_FAILS(GKO_STATUS_INVALID_VALUE,
          gko_gelu_forward(fake, (gko_gelu_approx_t)2, GKO_DTYPE_F32, 4, buf, buf, NULL));
  cr_expect(strstr(gko_last_error_detail(), "approx") != NULL);
  T_FAILS(GKO_STATUS_INVALID_VALUE,
          gko_gelu_forward(fake, (gko_gelu_approx_t)-1, GKO_DTYPE_F32, 4, buf, buf, NULL));
  T_FAILS(GKO_STATUS_INVALID_VALUE,
          gko_gelu_forward(fake, GKO_GELU_ERF, (gko_dtype_t)9, 4, buf, buf, NULL));
  cr_expect(strstr(gko_last_error_detail(), "dtype") != NULL);
  T_FAILS(GKO_STATUS_INVALID_VALUE,
          gko_gelu_forward(fake, GKO_GELU_ERF, GKO_DTYPE_F32, -1, buf, buf, NULL));
  cr_expect(strstr(gko_last_error_detail(), "n =") != NULL);
  T_FAILS(GKO_STATUS_INVALID_VALUE,
          gko_gelu_backward(fake, GKO_GELU_TANH, GKO_DTYPE_F16, INT64_MAX, buf, buf, buf,
                            NULL));
  T_FAILS(GKO_STATUS_INVALID_VALUE,
          gko_gelu_backward(NULL, GKO_GELU_TANH, GKO_DTYPE_F16, 4, buf, buf, buf, NULL));
  for (int i = 0; i < 4; i++) cr_expect_eq(buf[i], (float)(i + 1), "buffer modified");
  /* n = 0 is a no-op with valid enums, even with NULL arrays */
  T_OK(gko_gelu_forward(fake, GKO_GELU_ERF, GKO_DTYPE_F32, 0, NULL, NULL, NULL));
}

static void *thread_error(void *arg) {
  (void)arg;
  gko_gelu_forward(NULL, GKO_GELU_ERF, GKO_DTYPE_F32, 4, NULL, NULL, NULL);
  return strdup(gko_last_error_detail());
}

Test(status, detail_is_thread_local) {
  T_OK(gko_destroy(NULL));
  pthread_t t;
  void *msg = NULL;
  pthread_create(&t, NULL, thread_error, NULL);
  pthread_join(t, &msg);
  cr_expect(strlen((char *)msg) > 0);
  cr_expect_str_eq(gko_last_error_detail(), "", "another thread's error leaked here");
  free(msg);
}

Test(diagnostics, report_and_truncation) {
  size_t need = 0;
  T_OK(gko_diagnostics(-1, NULL, 0, &need));
  cr_assert(need > 50);
  char *full = malloc(need);
  size_t need2 = 0;
  T_OK(gko_diagnostics(-1, full, need, &need2));
  cr_expect_eq(need2, need);
  cr_expect_eq(strlen(full) + 1, need);
  cr_expect(strstr(full, "gko ") != NULL);
  cr_expect(strstr(full, "CUDA runtime") != NULL);
  cr_expect(strstr(full, "sm_") != NULL, "compiled architectures listed: %s", full);
  cr_expect(strstr(full, "PTX") != NULL);
  cr_expect(strstr(full, "cuBLASLt") != NULL);
  if (t_gpu_count() == 0)
    cr_expect(strstr(full, "status:") != NULL && strstr(full, "devices:      0") != NULL,
              "%s", full);
  else
    cr_expect(strstr(full, "compute capability") != NULL, "%s", full);
  char small[16];
  memset(small, 'x', sizeof small);
  T_OK(gko_diagnostics(-1, small, sizeof small, NULL));
  cr_expect_eq(strlen(small), sizeof small - 1, "truncated and terminated");
  cr_expect_eq(strncmp(small, full, sizeof small - 1), 0);
  T_FAILS(GKO_STATUS_INVALID_VALUE, gko_diagnostics(0, NULL, 10, NULL));
  free(full);
}

Test(query, values_without_and_with_gpu) {
  int64_t v = -5;
  T_FAILS(GKO_STATUS_INVALID_VALUE, gko_query(GKO_QUERY_DRIVER_VERSION, 0, NULL));
  T_FAILS(GKO_STATUS_INVALID_VALUE, gko_query((gko_query_t)99, 0, &v));
  cr_expect_eq(v, -5);
  T_OK(gko_query(GKO_QUERY_RUNTIME_VERSION, 0, &v));
  cr_expect(v >= 12000, "runtime %lld", (long long)v);
  T_OK(gko_query(GKO_QUERY_CUBLASLT_VERSION, 0, &v));
  cr_expect(v >= 120000, "cuBLASLt %lld", (long long)v);
  T_OK(gko_query(GKO_QUERY_CUBLASLT_BUILD_VERSION, 0, &v));
  cr_expect(v >= 120000);
  T_OK(gko_query(GKO_QUERY_PTX_ARCH, 0, &v));
  cr_expect(v >= 70 && v <= 90, "ptx %lld", (long long)v);
  int64_t count = -1, drv = -1;
  T_OK(gko_query(GKO_QUERY_DEVICE_COUNT, 0, &count));
  T_OK(gko_query(GKO_QUERY_DRIVER_VERSION, 0, &drv));
  cr_expect_eq(count, t_gpu_count());
  if (count == 0) {
    v = -5;
    gko_status_t s = gko_query(GKO_QUERY_COMPUTE_CAPABILITY, 0, &v);
    cr_expect(s == GKO_STATUS_NO_DEVICE || s == GKO_STATUS_DRIVER_TOO_OLD, "%s",
              gko_status_name(s));
    cr_expect_eq(v, -5);
  } else {
    T_OK(gko_query(GKO_QUERY_COMPUTE_CAPABILITY, 0, &v));
    cr_expect(v >= 70);
    T_OK(gko_query(GKO_QUERY_CODE_PATH, 0, &v));
    cr_expect(v == GKO_CODE_PATH_SASS || v == GKO_CODE_PATH_PTX_JIT);
    T_OK(gko_query(GKO_QUERY_SM_COUNT, 0, &v));
    cr_expect(v > 0);
    T_FAILS(GKO_STATUS_INVALID_VALUE, gko_query(GKO_QUERY_SM_COUNT, (int)count, &v));
  }
}
