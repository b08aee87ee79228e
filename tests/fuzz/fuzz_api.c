/* fuzz_api.c -- libFuzzer target that drives every public entry point of
 * gko.h with arbitrary arguments: version, statuses, diagnostics, query,
 * handle create/destroy, GELU, GEMM (descriptor, plan, execute, one-shot),
 * CSR (create, validation workspace, validate), SpMM (plan, queries,
 * execute) and conv (descriptor, output shape, plan, queries, execute).
 * Arguments: sizes (including negative, zero, huge and overflowing),
 * unknown enumerator values, NULL / misaligned / host pointers, undersized
 * string buffers.  Every call must return a documented status (0..12),
 * leave a non-empty detail when it fails and an empty one when it succeeds,
 * leave its output arguments untouched when it fails (creates, getters,
 * plans), and never crash, hang, touch memory out of bounds
 * (AddressSanitizer) or hit undefined behaviour (UBSan).  Handles are NULL
 * or real (created at start-up when a GPU is present); pointers are NULL,
 * host buffers, or misaligned host pointers -- never invented addresses,
 * which no C library can detect.  Calls that would make a GPU read the host
 * buffers as matrices (SpMM planning and validation with a real handle,
 * executes with a real plan) are fuzzed only through their argument checks.
 *
 *   make fuzz && build/fuzz/fuzz_api -max_total_time=60 build/fuzz/corpus
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gko.h"

typedef struct {
  const uint8_t *p;
  size_t n;
} reader;

static uint8_t u8(reader *r) {
  if (!r->n) return 0;
  r->n--;
  return *r->p++;
}

static const int64_t kInteresting[] = {0, 1, -1, 2, 3, 7, 8, 15, 16, 17, 64, 1000, 4096,
                                       1027, INT32_MAX, (int64_t)INT32_MAX + 1, INT32_MIN,
                                       INT64_MAX, INT64_MIN, INT64_MAX / 2, (int64_t)1 << 32,
                                       (int64_t)1 << 40, -4096, 255, 256};

static int64_t i64(reader *r) {
  uint8_t k = u8(r);
  if (k < 200) return kInteresting[k % (sizeof kInteresting / sizeof kInteresting[0])];
  uint64_t v = 0;
  for (int i = 0; i < 8; i++) v = (v << 8) | u8(r);
  return (int64_t)v;
}

static float f32(reader *r) {
  static const float kVals[] = {0.0f, 1.0f, -1.0f, 0.5f, 1e30f, -1e-30f};
  uint8_t k = u8(r);
  if (k < 240) return kVals[k % 6];
  uint32_t b = 0;
  for (int i = 0; i < 4; i++) b = (b << 8) | u8(r);
  float f;
  memcpy(&f, &b, 4);
  return f; /* NaN and Inf included */
}

static _Alignas(256) unsigned char g_buf[4096];
static gko_handle_t g_handle; /* NULL without a GPU */

/* NULL, a host buffer at an arbitrary offset, or a misaligned one. */
static void *ptr(reader *r) {
  uint8_t k = u8(r);
  switch (k % 4) {
    case 0: return NULL;
    case 1: return g_buf;
    case 2: return g_buf + (u8(r) % 64);
    default: return g_buf + 1;
  }
}

static gko_handle_t handle(reader *r) { return (u8(r) & 1) ? g_handle : NULL; }

static void check(gko_status_t s) {
  if ((int)s < 0 || (int)s > GKO_STATUS_INVALID_HANDLE) abort(); /* undocumented status */
  if (gko_status_string(s) == NULL || gko_status_name(s) == NULL) abort();
  if (s != GKO_STATUS_SUCCESS && gko_last_error_detail()[0] == '\0') abort(); /* no reason */
  if (s == GKO_STATUS_SUCCESS && gko_last_error_detail()[0] != '\0') abort(); /* not reset */
}

/* Sentinel values for output arguments that a failing call must not touch. */
#define SENTINEL_PTR(type) ((type)(uintptr_t)0x5e5e5e5e)
static const int64_t kSentinel = -0x5e5e5e5e5e5eLL;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  if (gko_create(&g_handle) != GKO_STATUS_SUCCESS) g_handle = NULL;
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  reader rd = {data, size}, *r = &rd;
  gko_gemm_desc_t desc = NULL;
  gko_gemm_plan_t plan = NULL;
  gko_csr_t csr = NULL;
  gko_spmm_plan_t splan = NULL;
  gko_conv_desc_t cdesc = NULL;
  gko_conv_plan_t cplan = NULL;
  for (int step = 0; step < 16 && rd.n; step++) {
    switch (u8(r) % 31) {
      case 0: {
        char *b = (char *)g_buf;
        size_t cap = (size_t)(u8(r)) * 8, need = 0;
        check(gko_diagnostics((int)i64(r), u8(r) & 1 ? b : NULL, u8(r) & 1 ? cap : 0,
                              u8(r) & 1 ? &need : NULL));
        break;
      }
      case 1: {
        int64_t v;
        check(gko_query((gko_query_t)i64(r), (int)i64(r), u8(r) & 1 ? &v : NULL));
        break;
      }
      case 2: {
        int dev;
        check(gko_handle_device(handle(r), u8(r) & 1 ? &dev : NULL));
        break;
      }
      case 3: {
        /* with a real handle the host buffer may be device-accessible
         * (pageable memory access): keep n within it */
        gko_handle_t h = handle(r);
        int64_t n = i64(r);
        if (h && n > 0) n %= 256;
        check(gko_gelu_forward(h, (gko_gelu_approx_t)i64(r), (gko_dtype_t)i64(r), n, ptr(r),
                               ptr(r), NULL));
        break;
      }
      case 4: {
        gko_handle_t h = handle(r);
        int64_t n = i64(r);
        if (h && n > 0) n %= 256;
        check(gko_gelu_backward(h, (gko_gelu_approx_t)i64(r), (gko_dtype_t)i64(r), n, ptr(r),
                                ptr(r), ptr(r), NULL));
        break;
      }
      case 5:
        if (!desc)
          check(gko_gemm_desc_create(u8(r) & 1 ? &desc : NULL, (gko_dtype_t)i64(r),
                                     (gko_dtype_t)i64(r), i64(r), i64(r), i64(r)));
        break;
      case 6:
        check(gko_gemm_desc_set(desc, (gko_gemm_attr_t)i64(r), i64(r)));
        break;
      case 7: {
        int64_t v;
        check(gko_gemm_desc_get(desc, (gko_gemm_attr_t)i64(r), u8(r) & 1 ? &v : NULL));
        break;
      }
      case 8:
        if (!plan) {
          gko_handle_t h = handle(r);
          /* with a real handle AUTOTUNE runs the GEMM to time it: only on
           * small problems (a fuzzed 4096 x 4096 x 2^31 would run for
           * minutes, which is what it was asked to do) */
          int64_t tune = 0, d[4] = {0, 0, 0, 0};
          const gko_gemm_attr_t dims[4] = {GKO_GEMM_ATTR_M, GKO_GEMM_ATTR_N, GKO_GEMM_ATTR_K,
                                           GKO_GEMM_ATTR_BATCH_COUNT};
          if (h && desc && gko_gemm_desc_get(desc, GKO_GEMM_ATTR_AUTOTUNE, &tune) == 0 && tune) {
            int big = 0;
            for (int i = 0; i < 4; i++)
              big |= gko_gemm_desc_get(desc, dims[i], &d[i]) != 0 || d[i] > (i < 3 ? 4096 : 16);
            if (big) break;
          }
          check(gko_gemm_plan_create(h, desc, &plan));
        }
        break;
      case 9: {
        size_t ws;
        gko_gemm_backend_t be;
        check(gko_gemm_workspace_size(plan, u8(r) & 1 ? &ws : NULL));
        check(gko_gemm_plan_backend(plan, u8(r) & 1 ? &be : NULL));
        break;
      }
      case 10: {
        size_t need;
        check(gko_gemm_plan_describe(plan, u8(r) & 1 ? (char *)g_buf : NULL,
                                     (size_t)u8(r), u8(r) & 1 ? &need : NULL));
        break;
      }
      case 11:
        /* with a real plan only host pointers would reach the kernels, so
         * execute is fuzzed through its argument checks with no plan or no
         * GPU handle */
        if (!plan || !g_handle)
          check(gko_gemm_execute(plan, f32(r), ptr(r), ptr(r), f32(r), ptr(r), ptr(r), ptr(r),
                                 ptr(r), (size_t)i64(r), NULL));
        break;
      case 12:
        if (!g_handle)
          check(gko_gemm(handle(r), (gko_op_t)i64(r), (gko_op_t)i64(r), i64(r), i64(r), i64(r),
                         f32(r), (gko_dtype_t)i64(r), ptr(r), i64(r), ptr(r), i64(r), f32(r),
                         (gko_dtype_t)i64(r), ptr(r), i64(r), ptr(r), i64(r),
                         (gko_epilogue_t)i64(r), ptr(r), NULL));
        break;
      /* ---- handle ---- */
      case 13: {
        gko_handle_t h = SENTINEL_PTR(gko_handle_t);
        gko_status_t s = gko_create(u8(r) & 1 ? &h : NULL);
        check(s);
        if (s == GKO_STATUS_SUCCESS) check(gko_destroy(h));
        else if (h != SENTINEL_PTR(gko_handle_t)) abort(); /* written on failure */
        check(gko_destroy(NULL));
        break;
      }
      /* ---- CSR ---- */
      case 14:
        if (!csr) {
          gko_csr_t c = SENTINEL_PTR(gko_csr_t);
          gko_status_t s = gko_csr_create(u8(r) & 1 ? &c : NULL, i64(r), i64(r), i64(r), ptr(r),
                                          ptr(r), ptr(r), (gko_index_t)i64(r),
                                          (gko_dtype_t)i64(r));
          check(s);
          if (s == GKO_STATUS_SUCCESS) csr = c;
          else if (c != SENTINEL_PTR(gko_csr_t)) abort();
        }
        break;
      case 15: {
        /* host-side size queries only, also with a real handle */
        size_t bytes = (size_t)kSentinel;
        gko_status_t s = gko_csr_validate_workspace_size(handle(r), u8(r) & 1 ? csr : NULL,
                                                         u8(r) & 1 ? &bytes : NULL);
        check(s);
        if (s != GKO_STATUS_SUCCESS && bytes != (size_t)kSentinel) abort();
        break;
      }
      case 16: {
        /* a real handle would run the checks on the GPU over host memory */
        gko_handle_t h = handle(r);
        if (h) break;
        gko_csr_check_t chk = (gko_csr_check_t)77;
        int64_t row = kSentinel;
        int sorted = 77, dups = 77;
        gko_status_t s = gko_csr_validate(h, u8(r) & 1 ? csr : NULL, ptr(r), (size_t)i64(r),
                                          u8(r) & 1 ? &chk : NULL, u8(r) & 1 ? &row : NULL,
                                          u8(r) & 1 ? &sorted : NULL, u8(r) & 1 ? &dups : NULL,
                                          NULL);
        check(s);
        /* argument failures leave the verdict untouched */
        if (chk != (gko_csr_check_t)77 || row != kSentinel || sorted != 77 || dups != 77)
          abort();
        break;
      }
      case 17:
        check(gko_csr_destroy(csr));
        csr = NULL; /* plans made from it stay valid (they hold a copy) */
        break;
      /* ---- SpMM ---- */
      case 18: {
        gko_handle_t h = handle(r);
        if (h || splan) break; /* planning reads row_ptr on the GPU */
        gko_spmm_plan_t p = SENTINEL_PTR(gko_spmm_plan_t);
        gko_status_t s = gko_spmm_plan_create(h, u8(r) & 1 ? csr : NULL, i64(r),
                                              (gko_layout_t)i64(r), i64(r), i64(r),
                                              (gko_spmm_kernel_t)i64(r), u8(r) & 1 ? &p : NULL,
                                              NULL);
        check(s);
        if (s == GKO_STATUS_SUCCESS) splan = p;
        else if (p != SENTINEL_PTR(gko_spmm_plan_t)) abort();
        break;
      }
      case 19: {
        size_t ws = (size_t)kSentinel, need = 0;
        gko_spmm_kernel_t k = (gko_spmm_kernel_t)77;
        gko_status_t s = gko_spmm_workspace_size(splan, u8(r) & 1 ? &ws : NULL);
        check(s);
        if (s != GKO_STATUS_SUCCESS && ws != (size_t)kSentinel) abort();
        s = gko_spmm_plan_kernel(splan, u8(r) & 1 ? &k : NULL);
        check(s);
        if (s != GKO_STATUS_SUCCESS && k != (gko_spmm_kernel_t)77) abort();
        check(gko_spmm_plan_describe(splan, u8(r) & 1 ? (char *)g_buf : NULL, (size_t)u8(r),
                                     u8(r) & 1 ? &need : NULL));
        break;
      }
      case 20:
        if (!splan || !g_handle)
          check(gko_spmm_execute(splan, f32(r), ptr(r), f32(r), ptr(r), ptr(r), (size_t)i64(r),
                                 NULL));
        break;
      case 21:
        check(gko_spmm_plan_destroy(splan));
        splan = NULL;
        break;
      /* ---- conv ---- */
      case 22:
        if (!cdesc) {
          gko_conv_desc_t d = SENTINEL_PTR(gko_conv_desc_t);
          gko_status_t s = gko_conv_desc_create(u8(r) & 1 ? &d : NULL, (gko_dtype_t)i64(r),
                                                (gko_conv_layout_t)i64(r), i64(r), i64(r),
                                                i64(r), i64(r), i64(r), i64(r), i64(r));
          check(s);
          if (s == GKO_STATUS_SUCCESS) cdesc = d;
          else if (d != SENTINEL_PTR(gko_conv_desc_t)) abort();
        }
        break;
      case 23:
        check(gko_conv_desc_set(cdesc, (gko_conv_attr_t)i64(r), i64(r)));
        break;
      case 24: {
        int64_t v = kSentinel;
        gko_status_t s = gko_conv_desc_get(cdesc, (gko_conv_attr_t)i64(r), u8(r) & 1 ? &v : NULL);
        check(s);
        if (s != GKO_STATUS_SUCCESS && v != kSentinel) abort();
        break;
      }
      case 25: {
        int64_t oh = kSentinel, ow = kSentinel;
        gko_status_t s = gko_conv_output_shape(cdesc, u8(r) & 1 ? &oh : NULL,
                                               u8(r) & 1 ? &ow : NULL);
        check(s);
        if (s != GKO_STATUS_SUCCESS && (oh != kSentinel || ow != kSentinel)) abort();
        if (s == GKO_STATUS_SUCCESS && (oh < 0 || ow < 0)) abort();
        break;
      }
      case 26:
        if (!cplan) {
          /* host work and GEMM planning only: safe with a real handle */
          gko_conv_plan_t p = SENTINEL_PTR(gko_conv_plan_t);
          gko_status_t s = gko_conv_plan_create(handle(r), cdesc, u8(r) & 1 ? &p : NULL);
          check(s);
          if (s == GKO_STATUS_SUCCESS) cplan = p;
          else if (p != SENTINEL_PTR(gko_conv_plan_t)) abort();
        }
        break;
      case 27: {
        size_t ws = (size_t)kSentinel, need = 0;
        int64_t v = kSentinel;
        gko_status_t s = gko_conv_workspace_size(cplan, u8(r) & 1 ? &ws : NULL);
        check(s);
        if (s != GKO_STATUS_SUCCESS && ws != (size_t)kSentinel) abort();
        s = gko_conv_plan_get(cplan, (gko_conv_info_t)i64(r), u8(r) & 1 ? &v : NULL);
        check(s);
        if (s != GKO_STATUS_SUCCESS && v != kSentinel) abort();
        check(gko_conv_plan_describe(cplan, u8(r) & 1 ? (char *)g_buf : NULL, (size_t)u8(r),
                                     u8(r) & 1 ? &need : NULL));
        break;
      }
      case 28:
        /* with a real plan only host pointers would reach the kernels */
        if (!cplan || !g_handle)
          check(gko_conv_execute(cplan, ptr(r), ptr(r), ptr(r), ptr(r), ptr(r), (size_t)i64(r),
                                 NULL));
        break;
      case 29:
        /* descriptors may go before their plans */
        if (u8(r) & 1) {
          check(gko_conv_desc_destroy(cdesc));
          cdesc = NULL;
        } else {
          check(gko_conv_plan_destroy(cplan));
          cplan = NULL;
        }
        break;
      default:
        (void)gko_status_name((gko_status_t)i64(r));
        (void)gko_status_string((gko_status_t)i64(r));
        (void)gko_dtype_size((gko_dtype_t)i64(r));
        (void)gko_version_string();
        if (gko_version_number() != GKO_VERSION_NUMBER) abort();
        break;
    }
  }
  if (plan) check(gko_gemm_plan_destroy(plan));
  if (desc) check(gko_gemm_desc_destroy(desc));
  if (splan) check(gko_spmm_plan_destroy(splan));
  if (csr) check(gko_csr_destroy(csr));
  if (cplan) check(gko_conv_plan_destroy(cplan));
  if (cdesc) check(gko_conv_desc_destroy(cdesc));
  return 0;
}
