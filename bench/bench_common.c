/* bench_common.c -- timing, ceilings, report table, conversions. */
#include <time.h>

#include "bench.h"

int g_repeat = 20;
double g_copy_gbs = 0;
double g_last_host_us = 0;
FILE *g_json = NULL;
static int g_json_first = 1;

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec * 1e-3;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n) {
  qsort(v, n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

void time_case(run_fn fn, void *ctx, cudaStream_t s, double *dev_us, double *lat_us) {
  time_case_host(fn, ctx, s, dev_us, lat_us, NULL);
}

void time_case_host(run_fn fn, void *ctx, cudaStream_t s, double *dev_us, double *lat_us,
                    double *host_us) {
  for (int i = 0; i < 3; i++) fn(ctx, s);
  CK(cudaStreamSynchronize(s));
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  CK(cudaEventRecord(a, s));
  fn(ctx, s);
  CK(cudaEventRecord(b, s));
  CK(cudaEventSynchronize(b));
  float one_ms = 0;
  CK(cudaEventElapsedTime(&one_ms, a, b));
  int k = (int)(2000.0 / (one_ms * 1000.0 + 1.0)) + 1; /* ~2 ms per repetition */
  if (k > 200) k = 200;
  double *d = malloc(sizeof(double) * g_repeat), *l = malloc(sizeof(double) * g_repeat),
         *hu = malloc(sizeof(double) * g_repeat);
  for (int r = 0; r < g_repeat; r++) {
    CK(cudaEventRecord(a, s));
    /* host time per enqueue: the k calls are issued back to back while the
     * GPU works through the queue, so this is the host cost of one call
     * (argument checks, plan lookups, launches), not the GPU's */
    double h0 = now_us();
    for (int i = 0; i < k; i++) fn(ctx, s);
    hu[r] = (now_us() - h0) / k;
    CK(cudaEventRecord(b, s));
    CK(cudaEventSynchronize(b));
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, a, b));
    d[r] = ms * 1000.0 / k;
  }
  for (int r = 0; r < g_repeat; r++) {
    double t0 = now_us();
    fn(ctx, s);
    CK(cudaStreamSynchronize(s));
    l[r] = now_us() - t0;
  }
  *dev_us = median(d, g_repeat);
  *lat_us = median(l, g_repeat);
  g_last_host_us = median(hu, g_repeat);
  if (host_us) *host_us = g_last_host_us;
  free(d);
  free(l);
  free(hu);
  cudaEventDestroy(a);
  cudaEventDestroy(b);
}

double time_graph(run_fn fn, void *ctx, cudaStream_t s, int calls) {
  for (int i = 0; i < 2; i++) fn(ctx, s);
  CK(cudaStreamSynchronize(s));
  cudaGraph_t g;
  cudaGraphExec_t ge;
  CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  for (int i = 0; i < calls; i++) fn(ctx, s);
  CK(cudaStreamEndCapture(s, &g));
  CK(cudaGraphInstantiate(&ge, g, 0));
  CK(cudaGraphLaunch(ge, s));
  CK(cudaStreamSynchronize(s));
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  double *d = malloc(sizeof(double) * g_repeat);
  for (int r = 0; r < g_repeat; r++) {
    CK(cudaEventRecord(a, s));
    CK(cudaGraphLaunch(ge, s));
    CK(cudaEventRecord(b, s));
    CK(cudaEventSynchronize(b));
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, a, b));
    d[r] = ms * 1000.0 / calls;
  }
  double med = median(d, g_repeat);
  free(d);
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  cudaGraphExecDestroy(ge);
  cudaGraphDestroy(g);
  return med;
}

typedef struct {
  void *dst, *src;
  size_t bytes;
} copy_ctx;

static void run_copy(void *p, cudaStream_t s) {
  copy_ctx *c = p;
  CK(cudaMemcpyAsync(c->dst, c->src, c->bytes, cudaMemcpyDeviceToDevice, s));
}

double measure_copy(cudaStream_t s) {
  copy_ctx c = {NULL, NULL, (size_t)1 << 30};
  CK(cudaMalloc(&c.src, c.bytes));
  CK(cudaMalloc(&c.dst, c.bytes));
  CK(cudaMemset(c.src, 1, c.bytes));
  double dev, lat;
  time_case(run_copy, &c, s, &dev, &lat);
  cudaFree(c.src);
  cudaFree(c.dst);
  return 2.0 * (double)c.bytes / (dev * 1e3); /* GB/s, read + write */
}

void report(const char *op, const char *shape, const char *dtype, const char *form,
            double dev, double lat, double bytes, double max_err) {
  static int header_done = 0;
  if (!header_done) {
    printf("%-8s %-22s %-5s %-5s %10s %10s %8s %9s %8s %9s\n", "op", "shape", "dtype", "form",
           "device_us", "latency_us", "host_us", "GB/s", "of_copy", "max_err");
    header_done = 1;
  }
  double gbs = bytes / (dev * 1e3);
  printf("%-8s %-22s %-5s %-5s %10.1f %10.1f %8.2f %9.0f %7.1f%% %9.2g\n", op, shape, dtype,
         form, dev, lat, g_last_host_us, gbs, 100.0 * gbs / g_copy_gbs, max_err);
  fflush(stdout);
  if (g_json) {
    fprintf(g_json,
            "%s\n  {\"op\": \"%s\", \"shape\": \"%s\", \"dtype\": \"%s\", \"form\": \"%s\", "
            "\"device_us\": %.3f, \"latency_us\": %.3f, \"host_us\": %.3f, \"gbs\": %.1f, "
            "\"copy_gbs\": %.1f, \"max_rel_err\": %.3g}",
            g_json_first ? "" : ",", op, shape, dtype, form, dev, lat, g_last_host_us, gbs,
            g_copy_gbs, max_err);
    g_json_first = 0;
  }
}

static uint64_t g_rng = 0x243F6A8885A308D3ull;
double bench_uniform(double lo, double hi) {
  g_rng ^= g_rng << 13;
  g_rng ^= g_rng >> 7;
  g_rng ^= g_rng << 17;
  return lo + (hi - lo) * (double)(g_rng >> 11) / 9007199254740992.0;
}

const char *bench_dtype_name(gko_dtype_t d) {
  return d == GKO_DTYPE_F32 ? "f32" : d == GKO_DTYPE_F16 ? "f16" : "bf16";
}

int bench_parse_dtype(const char *s, gko_dtype_t *d) {
  if (!strcmp(s, "f32")) *d = GKO_DTYPE_F32;
  else if (!strcmp(s, "f16")) *d = GKO_DTYPE_F16;
  else if (!strcmp(s, "bf16")) *d = GKO_DTYPE_BF16;
  else return 0;
  return 1;
}

float bench_to_float(gko_dtype_t d, const void *a, size_t i) {
  if (d == GKO_DTYPE_F32) return ((const float *)a)[i];
  uint16_t b = ((const uint16_t *)a)[i];
  uint32_t bits;
  if (d == GKO_DTYPE_BF16) {
    bits = (uint32_t)b << 16;
  } else {
    uint32_t sign = (uint32_t)(b >> 15) << 31, e = (b >> 10) & 0x1f, m = b & 0x3ff;
    if (e == 0) return (sign ? -1.0f : 1.0f) * ldexpf((float)m, -24);
    bits = sign | (e == 31 ? 0x7f800000u | (m << 13) : ((e + 112) << 23) | (m << 13));
  }
  float f;
  memcpy(&f, &bits, 4);
  return f;
}

/* Round to nearest even; f16 values out of range saturate to inf, values
 * below the normal range flush to zero (benchmark inputs stay normal). */
void bench_from_float(gko_dtype_t d, void *a, size_t i, float v) {
  if (d == GKO_DTYPE_F32) {
    ((float *)a)[i] = v;
    return;
  }
  uint32_t bits;
  memcpy(&bits, &v, 4);
  if (d == GKO_DTYPE_BF16) {
    ((uint16_t *)a)[i] = (uint16_t)((bits + 0x7fff + ((bits >> 16) & 1)) >> 16);
    return;
  }
  uint32_t sign = (bits >> 16) & 0x8000;
  int e = (int)((bits >> 23) & 0xff) - 127 + 15;
  uint32_t m = bits & 0x7fffff;
  if (e <= 0) {
    ((uint16_t *)a)[i] = (uint16_t)sign;
    return;
  }
  if (e >= 31) {
    ((uint16_t *)a)[i] = (uint16_t)(sign | 0x7c00);
    return;
  }
  uint32_t h = ((uint32_t)e << 10) | (m >> 13);
  uint32_t rest = m & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (h & 1))) h++;
  ((uint16_t *)a)[i] = (uint16_t)(sign | h);
}
