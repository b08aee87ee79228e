/* fuzz_api.c -- libFuzzer target that drives gko's public entry points with
 * arbitrary arguments: sizes (including negative, zero, huge and
 * overflowing), unknown enumerator values, NULL / misaligned / host pointers,
 * undersized string buffers.  Every call must return a documented status
 * (0..11), leave a non-empty detail when it fails, and never crash, hang,
 * touch memory out of bounds (AddressSanitizer) or hit undefined behaviour
 * (UBSan).  Handles are NULL or real (created at start-up when a GPU is
 * present); pointers are NULL, host buffers, or misaligned host pointers --
 * never invented addresses, which no C library can detect.
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
  if ((int)s < 0 || (int)s > 11) abort(); /* undocumented status */
  if (gko_status_string(s) == NULL || gko_status_name(s) == NULL) abort();
  if (s != GKO_STATUS_SUCCESS && gko_last_error_detail()[0] == '\0') abort(); /* no reason */
}

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
  for (int step = 0; step < 16 && rd.n; step++) {
    switch (u8(r) % 14) {
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
        if (!plan) check(gko_gemm_plan_create(handle(r), desc, &plan));
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
      default:
        (void)gko_status_name((gko_status_t)i64(r));
        (void)gko_status_string((gko_status_t)i64(r));
        (void)gko_dtype_size((gko_dtype_t)i64(r));
        (void)gko_version_string();
        break;
    }
  }
  if (plan) check(gko_gemm_plan_destroy(plan));
  if (desc) check(gko_gemm_desc_destroy(desc));
  return 0;
}
