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
    GKO_STATUS_INTERNAL,         GKO_STATUS_DEVICE_MISMATCH,
    GKO_STATUS_INVALID_HANDLE};

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
  cr_expect_eq(GKO_STATUS_INVALID_HANDLE, 12);
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
 * object of another kind), is INVALID_HANDLE with a reason and frees
 * nothing: never a double free (under ASan in CI).  Handles and plans need a
 * GPU to exist; their double destroys are checked with one. */
Test(misuse, destroy_twice_or_foreign_is_a_status) {
  static int64_t fake[64];
  gko_gemm_desc_t g;
  T_OK(gko_gemm_desc_create(&g, GKO_DTYPE_F16, GKO_DTYPE_F16, 4, 4, 4));
  T_OK(gko_gemm_desc_destroy(g));
  T_FAILS(GKO_STATUS_INVALID_HANDLE, gko_gemm_desc_destroy(g));
  cr_expect(strstr(gko_last_error_detail(), "not a live gko_gemm_desc_t") != NULL, "%s",
            gko_last_error_detail());
  gko_conv_desc_t c;
  T_OK(gko_conv_desc_create(&c, GKO_DTYPE_F16, GKO_CONV_LAYOUT_NHWC, 1, 8, 4, 4, 8, 3, 3));
  T_FAILS(GKO_STATUS_INVALID_HANDLE, gko_pool_desc_destroy((gko_pool_desc_t)c)); /* another kind */
  cr_expect(strstr(gko_last_error_detail(), "is a gko_conv_desc_t, not a gko_pool_desc_t") != NULL,
            "%s", gko_last_error_detail());
  T_OK(gko_conv_desc_destroy(c));
  T_FAILS(GKO_STATUS_INVALID_HANDLE, gko_conv_desc_destroy(c));
  gko_pool_desc_t pd;
  T_OK(gko_pool_desc_create(&pd, GKO_POOL_MAX, GKO_DTYPE_F16, GKO_CONV_LAYOUT_NHWC, 1, 8, 4, 4, 2, 2));
  T_OK(gko_pool_desc_destroy(pd));
  T_FAILS(GKO_STATUS_INVALID_HANDLE, gko_pool_desc_destroy(pd));
  /* never made by gko */
  T_FAILS(GKO_STATUS_INVALID_HANDLE, gko_destroy((gko_handle_t)fake));
  T_FAILS(GKO_STATUS_INVALID_HANDLE, gko_gemm_plan_destroy((gko_gemm_plan_t)fake));
  T_FAILS(GKO_STATUS_INVALID_HANDLE, gko_conv_plan_destroy((gko_conv_plan_t)fake));
  T_FAILS(GKO_STATUS_INVALID_HANDLE, gko_spmm_plan_destroy((gko_spmm_plan_t)fake));
  T_FAILS(GKO_STATUS_INVALID_HANDLE, gko_csr_destroy((gko_csr_t)fake));
  T_FAILS(GKO_STATUS_INVALID_HANDLE, gko_conv_desc_destroy((gko_conv_desc_t)fake));
  cr_expect(strstr(gko_last_error_detail(), "nothing was freed") != NULL, "%s",
            gko_last_error_detail());
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
    T_FAILS(GKO_STATUS_INVALID_HANDLE, gko_gemm_plan_destroy(p));
    T_OK(gko_destroy(h));
    T_FAILS(GKO_STATUS_INVALID_HANDLE, gko_destroy(h));
    cr_expect(strstr(gko_last_error_detail(), "handle") != NULL, "%s", gko_last_error_detail());
  }
}

/* The call fails with INVALID_HANDLE, its detail names `arg`, and `sentinel`
 * (every output of the call) still holds its poison. */
#define T_DEAD(arg, call)                                                                   \
  do {                                                                                      \
    T_FAILS(GKO_STATUS_INVALID_HANDLE, call);                                               \
    cr_expect(strstr(gko_last_error_detail(), arg) != NULL, "%s: detail '%s' names no %s", \
              #call, gko_last_error_detail(), arg);                                         \
  } while (0)

/* Every entry point that takes an object, given one gko never made (a
 * zeroed block, so a missing check reads zeros rather than crashing) or one
 * destroyed already: INVALID_HANDLE, outputs untouched, the block unread
 * and unwritten.  Runs without a GPU: the check comes before any other. */
Test(misuse, every_entry_point_refuses_a_dead_object) {
  static int64_t fake[512];
  gko_handle_t fh = (gko_handle_t)fake;
  gko_gemm_desc_t gd = NULL, gdead = NULL;
  gko_conv_desc_t cd = NULL, cdead = NULL;
  gko_pool_desc_t pd = NULL, pdead = NULL;
  gko_csr_t csr = NULL, csrdead = NULL;
  static const int32_t row_ptr[3] = {0, 1, 2}, col_ind[2] = {0, 1};
  static const float vals[2] = {1, 2};
  T_OK(gko_gemm_desc_create(&gd, GKO_DTYPE_F16, GKO_DTYPE_F16, 8, 8, 8));
  T_OK(gko_gemm_desc_create(&gdead, GKO_DTYPE_F16, GKO_DTYPE_F16, 8, 8, 8));
  T_OK(gko_gemm_desc_destroy(gdead));
  T_OK(gko_conv_desc_create(&cd, GKO_DTYPE_F16, GKO_CONV_LAYOUT_NHWC, 1, 8, 4, 4, 8, 3, 3));
  T_OK(gko_conv_desc_create(&cdead, GKO_DTYPE_F16, GKO_CONV_LAYOUT_NHWC, 1, 8, 4, 4, 8, 3, 3));
  T_OK(gko_conv_desc_destroy(cdead));
  T_OK(gko_pool_desc_create(&pd, GKO_POOL_MAX, GKO_DTYPE_F16, GKO_CONV_LAYOUT_NHWC, 1, 8, 4, 4, 2, 2));
  T_OK(gko_pool_desc_create(&pdead, GKO_POOL_MAX, GKO_DTYPE_F16, GKO_CONV_LAYOUT_NHWC, 1, 8, 4, 4, 2, 2));
  T_OK(gko_pool_desc_destroy(pdead));
  T_OK(gko_csr_create(&csr, 2, 2, 2, row_ptr, col_ind, vals, GKO_INDEX_INT32, GKO_DTYPE_F32));
  T_OK(gko_csr_create(&csrdead, 2, 2, 2, row_ptr, col_ind, vals, GKO_INDEX_INT32, GKO_DTYPE_F32));
  T_OK(gko_csr_destroy(csrdead));

  int dev = -7;
  int64_t v = -7, oh = -7, ow = -7;
  size_t bytes = 77, req = 77;
  char buf[32] = "untouched";
  gko_gemm_backend_t be = (gko_gemm_backend_t)77;
  gko_spmm_kernel_t sk = (gko_spmm_kernel_t)77;
  gko_gemm_plan_t gp = (gko_gemm_plan_t)(uintptr_t)0x77;
  gko_conv_plan_t cp = (gko_conv_plan_t)(uintptr_t)0x77;
  gko_spmm_plan_t sp = (gko_spmm_plan_t)(uintptr_t)0x77;
  gko_csr_check_t chk = (gko_csr_check_t)77;
  int64_t row = -7;
  int sorted = -7, dups = -7;
  /* the operators' device pointers: never reached (gko checks the handle first) */
  void *x = fake + 256, *y = fake + 320;

  /* handles */
  T_DEAD("handle", gko_handle_device(fh, &dev));
  T_DEAD("handle", gko_gelu_forward(fh, GKO_GELU_ERF, GKO_DTYPE_F16, 0, x, y, NULL));
  T_DEAD("handle", gko_gelu_forward(fh, GKO_GELU_ERF, GKO_DTYPE_F16, 16, x, y, NULL));
  T_DEAD("handle", gko_gelu_backward(fh, GKO_GELU_TANH, GKO_DTYPE_F16, 16, x, x, y, NULL));
  T_DEAD("handle", gko_gemm_plan_create(fh, gd, &gp));
  T_DEAD("handle", gko_gemm(fh, GKO_OP_N, GKO_OP_N, 8, 8, 8, 1.0f, GKO_DTYPE_F16, x, 8, x, 8, 0.0f,
                            GKO_DTYPE_F16, NULL, 8, y, 8, GKO_EPILOGUE_NONE, NULL, NULL));
  T_DEAD("handle", gko_quantize(fh, GKO_DTYPE_F32, x, GKO_DTYPE_F8E4M3, y, 4, 4, GKO_SCALE_TENSOR,
                                NULL, NULL, NULL));
  T_DEAD("handle", gko_dequantize(fh, GKO_DTYPE_F8E4M3, x, GKO_DTYPE_F32, y, 4, 4,
                                  GKO_SCALE_TENSOR, NULL, NULL));
  T_DEAD("handle", gko_csr_validate_workspace_size(fh, csr, &bytes));
  T_DEAD("handle", gko_csr_validate(fh, csr, NULL, 0, &chk, &row, &sorted, &dups, NULL));
  T_DEAD("handle", gko_spmm_plan_create(fh, csr, 4, GKO_LAYOUT_ROW_MAJOR, 4, 4,
                                        GKO_SPMM_KERNEL_AUTO, &sp, NULL));
  T_DEAD("handle", gko_conv_plan_create(fh, cd, &cp));
  T_DEAD("handle", gko_pool_forward(fh, pd, x, y, NULL));
  T_DEAD("handle", gko_layernorm(fh, GKO_DTYPE_F16, 2, 8, x, 8, NULL, 0, NULL, NULL, 1e-5f, y, 8,
                                 NULL, 0, NULL));
  T_DEAD("handle", gko_softmax(fh, GKO_DTYPE_F16, 2, 8, 1.0f, x, 8, NULL, 0, NULL, 1, y, 8, NULL));
  T_DEAD("handle", gko_attention(fh, GKO_DTYPE_F16, 1, 1, 4, 4, 8, 1.0f, x, 8, x, 8, x, 8, NULL, y,
                                 8, NULL));
  T_DEAD("handle", gko_embedding(fh, GKO_DTYPE_F16, 4, 8, x, 8, GKO_INDEX_INT32, x, 2, y, 8, NULL));
  T_DEAD("handle", gko_mean_pool(fh, GKO_DTYPE_F16, 1, 4, 8, x, 8, NULL, 0, y, 8, NULL));
  T_DEAD("handle", gko_destroy(fh));

  /* descriptors and CSR matrices, never made and destroyed */
  const gko_gemm_desc_t gds[2] = {(gko_gemm_desc_t)fake, gdead};
  const gko_conv_desc_t cds[2] = {(gko_conv_desc_t)fake, cdead};
  const gko_pool_desc_t pds[2] = {(gko_pool_desc_t)fake, pdead};
  const gko_csr_t csrs[2] = {(gko_csr_t)fake, csrdead};
  for (int i = 0; i < 2; i++) {
    T_DEAD("desc", gko_gemm_desc_set(gds[i], GKO_GEMM_ATTR_TRANSA, GKO_OP_T));
    T_DEAD("desc", gko_gemm_desc_get(gds[i], GKO_GEMM_ATTR_TRANSA, &v));
    T_DEAD("desc", gko_gemm_desc_destroy(gds[i]));
    T_DEAD("desc", gko_conv_desc_set(cds[i], GKO_CONV_ATTR_PAD_H, 1));
    T_DEAD("desc", gko_conv_desc_get(cds[i], GKO_CONV_ATTR_PAD_H, &v));
    T_DEAD("desc", gko_conv_output_shape(cds[i], &oh, &ow));
    T_DEAD("desc", gko_conv_desc_destroy(cds[i]));
    T_DEAD("desc", gko_pool_desc_set(pds[i], GKO_POOL_ATTR_MODE, GKO_POOL_AVG));
    T_DEAD("desc", gko_pool_desc_get(pds[i], GKO_POOL_ATTR_MODE, &v));
    T_DEAD("desc", gko_pool_output_shape(pds[i], &oh, &ow));
    T_DEAD("desc", gko_pool_desc_destroy(pds[i]));
    T_DEAD("csr", gko_csr_destroy(csrs[i]));
  }
  /* another kind of live object where a descriptor belongs */
  T_DEAD("gko_conv_desc_t", gko_gemm_desc_get((gko_gemm_desc_t)cd, GKO_GEMM_ATTR_TRANSA, &v));
  T_DEAD("gko_gemm_desc_t", gko_pool_output_shape((gko_pool_desc_t)gd, &oh, &ow));

  /* plans: none can exist without a GPU, so these are never made */
  gko_gemm_plan_t fgp = (gko_gemm_plan_t)fake;
  gko_conv_plan_t fcp = (gko_conv_plan_t)fake;
  gko_spmm_plan_t fsp = (gko_spmm_plan_t)fake;
  T_DEAD("plan", gko_gemm_workspace_size(fgp, &bytes));
  T_DEAD("plan", gko_gemm_plan_backend(fgp, &be));
  T_DEAD("plan", gko_gemm_plan_describe(fgp, buf, sizeof buf, &req));
  T_DEAD("plan", gko_gemm_execute(fgp, 1.0f, x, x, 0.0f, NULL, y, NULL, NULL, 0, NULL));
  T_DEAD("plan", gko_gemm_execute_scaled(fgp, 1.0f, x, NULL, x, NULL, 0.0f, NULL, y, NULL, NULL,
                                         NULL, NULL, 0, NULL));
  T_DEAD("plan", gko_gemm_plan_destroy(fgp));
  T_DEAD("plan", gko_conv_workspace_size(fcp, &bytes));
  T_DEAD("plan", gko_conv_plan_get(fcp, GKO_CONV_INFO_OH, &v));
  T_DEAD("plan", gko_conv_plan_describe(fcp, buf, sizeof buf, &req));
  T_DEAD("plan", gko_conv_execute(fcp, x, x, NULL, y, NULL, 0, NULL));
  T_DEAD("plan", gko_conv_execute_residual(fcp, 1.0f, x, x, NULL, 1.0f, y, y, NULL, 0, NULL));
  T_DEAD("plan", gko_conv_plan_destroy(fcp));
  T_DEAD("plan", gko_spmm_workspace_size(fsp, &bytes));
  T_DEAD("plan", gko_spmm_plan_kernel(fsp, &sk));
  T_DEAD("plan", gko_spmm_plan_describe(fsp, buf, sizeof buf, &req));
  T_DEAD("plan", gko_spmm_execute(fsp, 1.0f, x, 0.0f, y, NULL, 0, NULL));
  T_DEAD("plan", gko_spmm_plan_destroy(fsp));

  /* nothing was written, nothing read through the fake object changed it */
  for (size_t i = 0; i < sizeof fake / sizeof fake[0]; i++) cr_assert_eq(fake[i], 0, "fake[%zu] written", i);
  cr_expect(dev == -7 && v == -7 && oh == -7 && ow == -7 && bytes == 77 && req == 77 &&
            strcmp(buf, "untouched") == 0 && be == (gko_gemm_backend_t)77 &&
            sk == (gko_spmm_kernel_t)77 && chk == (gko_csr_check_t)77 && row == -7 &&
            sorted == -7 && dups == -7, "an output was written by a refused call");
  cr_expect(gp == (gko_gemm_plan_t)(uintptr_t)0x77 && cp == (gko_conv_plan_t)(uintptr_t)0x77 &&
            sp == (gko_spmm_plan_t)(uintptr_t)0x77, "a refused plan_create wrote *plan");
  /* the live ones still work */
  T_OK(gko_gemm_desc_get(gd, GKO_GEMM_ATTR_TRANSA, &v));
  T_OK(gko_gemm_desc_destroy(gd));
  T_OK(gko_conv_desc_destroy(cd));
  T_OK(gko_pool_desc_destroy(pd));
  T_OK(gko_csr_destroy(csr));
}

/* With a GPU: real handles and plans used after their destroy, and a plan
 * whose handle was destroyed first -- INVALID_HANDLE, no read of freed
 * memory (memcheck and ASan see none), and the plan can still be destroyed. */
Test(misuse, destroyed_handles_and_plans_are_refused) {
  T_REQUIRE_GPU();
  gko_handle_t h, h2;
  T_OK(gko_create(&h));
  T_OK(gko_create(&h2));
  void *x, *y;
  T_CUDA(cudaMalloc(&x, 1 << 16));
  T_CUDA(cudaMalloc(&y, 1 << 16));
  T_CUDA(cudaMemset(x, 0, 1 << 16));
  gko_gemm_desc_t gd;
  T_OK(gko_gemm_desc_create(&gd, GKO_DTYPE_F16, GKO_DTYPE_F16, 16, 16, 16));
  gko_gemm_plan_t gp, gp2;
  T_OK(gko_gemm_plan_create(h, gd, &gp));
  T_OK(gko_gemm_plan_create(h2, gd, &gp2));
  gko_conv_desc_t cd;
  T_OK(gko_conv_desc_create(&cd, GKO_DTYPE_F16, GKO_CONV_LAYOUT_NHWC, 1, 8, 4, 4, 8, 3, 3));
  T_OK(gko_conv_desc_set(cd, GKO_CONV_ATTR_PAD_H, 1));
  T_OK(gko_conv_desc_set(cd, GKO_CONV_ATTR_PAD_W, 1));
  gko_conv_plan_t cp;
  T_OK(gko_conv_plan_create(h2, cd, &cp));
  static const int32_t row_ptr[3] = {0, 1, 2}, col_ind[2] = {0, 1};
  static const float vals[2] = {1, 2};
  int32_t *drp, *dci;
  float *dv;
  T_CUDA(cudaMalloc((void **)&drp, sizeof row_ptr));
  T_CUDA(cudaMalloc((void **)&dci, sizeof col_ind));
  T_CUDA(cudaMalloc((void **)&dv, sizeof vals));
  T_CUDA(cudaMemcpy(drp, row_ptr, sizeof row_ptr, cudaMemcpyHostToDevice));
  T_CUDA(cudaMemcpy(dci, col_ind, sizeof col_ind, cudaMemcpyHostToDevice));
  T_CUDA(cudaMemcpy(dv, vals, sizeof vals, cudaMemcpyHostToDevice));
  gko_csr_t csr;
  T_OK(gko_csr_create(&csr, 2, 2, 2, drp, dci, dv, GKO_INDEX_INT32, GKO_DTYPE_F32));
  gko_spmm_plan_t sp;
  T_OK(gko_spmm_plan_create(h2, csr, 4, GKO_LAYOUT_ROW_MAJOR, 4, 4, GKO_SPMM_KERNEL_AUTO, &sp, NULL));
  size_t wsb = 0;
  T_OK(gko_gemm_workspace_size(gp, &wsb));
  void *ws = NULL;
  if (wsb) T_CUDA(cudaMalloc(&ws, wsb));
  T_OK(gko_gemm_execute(gp, 1.0f, x, x, 0.0f, NULL, y, NULL, ws, wsb, NULL));

  /* a plan used after its destroy */
  T_OK(gko_gemm_plan_destroy(gp));
  size_t bytes = 77;
  T_DEAD("plan", gko_gemm_execute(gp, 1.0f, x, x, 0.0f, NULL, y, NULL, NULL, 0, NULL));
  T_DEAD("plan", gko_gemm_workspace_size(gp, &bytes));
  cr_expect_eq(bytes, 77);
  /* a handle used after its destroy */
  T_OK(gko_destroy(h));
  int dev = -7;
  T_DEAD("handle", gko_handle_device(h, &dev));
  cr_expect_eq(dev, -7);
  T_DEAD("handle", gko_gelu_forward(h, GKO_GELU_ERF, GKO_DTYPE_F16, 64, x, y, NULL));
  gko_gemm_plan_t np = NULL;
  T_DEAD("handle", gko_gemm_plan_create(h, gd, &np));
  cr_expect_null(np);
  /* plans whose handle was destroyed: executes refused, destroys work --
   * also when a new handle took the old one's address (likely: same size) */
  T_OK(gko_destroy(h2));
  gko_handle_t h3;
  T_OK(gko_create(&h3));
  cr_log_info("a new handle %s the destroyed one's address", h3 == h2 ? "reused" : "did not reuse");
  T_DEAD("the plan's handle", gko_gemm_execute(gp2, 1.0f, x, x, 0.0f, NULL, y, NULL, NULL, 0, NULL));
  T_DEAD("the plan's handle", gko_conv_execute(cp, x, x, NULL, y, NULL, 0, NULL));
  T_DEAD("the plan's handle", gko_spmm_execute(sp, 1.0f, x, 0.0f, y, NULL, 0, NULL));
  T_OK(gko_conv_workspace_size(cp, &bytes)); /* the plan's own data needs no handle */
  T_OK(gko_gemm_plan_destroy(gp2));
  T_OK(gko_conv_plan_destroy(cp));
  T_OK(gko_spmm_plan_destroy(sp));
  T_DEAD("plan", gko_spmm_plan_destroy(sp));
  /* a conv plan's inner GEMM plans are not the caller's objects: a stale
   * GEMM plan pointer (its block likely reused by them) stays refused */
  gko_gemm_plan_t gone;
  T_OK(gko_gemm_plan_create(h3, gd, &gone));
  T_OK(gko_gemm_plan_destroy(gone));
  T_OK(gko_conv_desc_set(cd, GKO_CONV_ATTR_ALGO, GKO_CONV_ALGO_GEMM)); /* im2col + GEMM plans */
  T_OK(gko_conv_plan_create(h3, cd, &cp));
  T_DEAD("plan", gko_gemm_plan_destroy(gone));
  size_t cwb = 0;
  T_OK(gko_conv_workspace_size(cp, &cwb));
  void *cws = NULL;
  if (cwb) T_CUDA(cudaMalloc(&cws, cwb));
  T_OK(gko_conv_execute(cp, x, x, NULL, y, cws, cwb, NULL));
  T_CUDA(cudaDeviceSynchronize());
  cudaFree(cws);
  T_OK(gko_conv_plan_destroy(cp));
  T_OK(gko_destroy(h3));
  T_OK(gko_gemm_desc_destroy(gd));
  T_OK(gko_conv_desc_destroy(cd));
  T_OK(gko_csr_destroy(csr));
  T_CUDA(cudaDeviceSynchronize());
  cudaFree(x);
  cudaFree(y);
  cudaFree(drp);
  cudaFree(dci);
  cudaFree(dv);
  cudaFree(ws);
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
 * A non-NULL fake handle is never dereferenced by these paths: the
 * arguments are checked before the handle is looked up. */
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
  /* n = 0 is a no-op with valid enums, even with NULL arrays -- but the
   * handle must be live: a fake one is refused before the no-op succeeds */
  T_FAILS(GKO_STATUS_INVALID_HANDLE, gko_gelu_forward(fake, GKO_GELU_ERF, GKO_DTYPE_F32, 0, NULL, NULL, NULL));
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
