/* bench_gelu.c -- gko-bench's GELU module. */
#include "bench.h"

/* The table: GB/s = bytes read + written / dev_us, of_roof = of the copy
 * bandwidth; no reference in this program (python/bench/bench_gelu.py runs
 * PyTorch next to it). */
static void gelu_table(void) {
  bench_table("gelu", 18, 7, "GB/s", "the copy bandwidth", 1,
              "gelu: GB/s = bytes read + written / dev_us; of_roof = GB/s / the measured copy "
              "bandwidth");
}

typedef struct {
  gko_handle_t h;
  int approx, backward;
  gko_dtype_t dt;
  int64_t n;
  void *x, *dy, *y;
} gelu_ctx;

static void run_gelu(void *p, cudaStream_t s) {
  gelu_ctx *c = p;
  if (c->backward)
    GK(gko_gelu_backward(c->h, c->approx, c->dt, c->n, c->dy, c->x, c->y, s));
  else
    GK(gko_gelu_forward(c->h, c->approx, c->dt, c->n, c->x, c->y, s));
}

static double ref_gelu(int approx, int backward, double x, double dy) {
  if (approx == GKO_GELU_ERF) {
    double cdf = 0.5 * erfc(-x / sqrt(2.0));
    return backward ? dy * (cdf + x * exp(-0.5 * x * x) / sqrt(2.0 * M_PI)) : x * cdf;
  }
  const double a = 1.5957691216057308, b = a * 0.044715;
  double u2 = x * (a + b * x * x), q = exp(-fabs(u2));
  double s = u2 >= 0 ? 1.0 / (1.0 + q) : q / (1.0 + q);
  return backward ? dy * (s + x * q / ((1 + q) * (1 + q)) * (a + 3 * b * x * x)) : x * s;
}

/* Runs and checks one case: random inputs in [-8, 8] (a 1M-element random
 * block repeated), max error over that block relative to max |ref|. */
static int bench_one(gko_handle_t h, cudaStream_t s, gko_dtype_t dt, int approx, int backward,
                     int64_t n) {
  size_t es = gko_dtype_size(dt), bytes = (size_t)n * es;
  gelu_ctx c = {h, approx, backward, dt, n, NULL, NULL, NULL};
  CK(cudaMalloc(&c.x, bytes));
  CK(cudaMalloc(&c.y, bytes));
  if (backward) CK(cudaMalloc(&c.dy, bytes));
  size_t blk = (size_t)1 << 20;
  if (blk > (size_t)n) blk = (size_t)n;
  void *hx = malloc(blk * es), *hdy = malloc(blk * es), *hy = malloc(blk * es);
  for (size_t i = 0; i < blk; i++) {
    bench_from_float(dt, hx, i, (float)bench_uniform(-8, 8));
    bench_from_float(dt, hdy, i, (float)bench_uniform(-2, 2));
  }
  for (size_t off = 0; off < (size_t)n; off += blk) {
    size_t m = (size_t)n - off < blk ? (size_t)n - off : blk;
    CK(cudaMemcpy((char *)c.x + off * es, hx, m * es, cudaMemcpyHostToDevice));
    if (backward) CK(cudaMemcpy((char *)c.dy + off * es, hdy, m * es, cudaMemcpyHostToDevice));
  }
  CK(cudaMemset(c.y, 0xff, bytes));
  double dev, lat;
  time_case(run_gelu, &c, s, &dev, &lat);
  CK(cudaMemcpy(hy, c.y, blk * es, cudaMemcpyDeviceToHost));
  double max_err = 0, max_ref = 0;
  for (size_t i = 0; i < blk; i++) {
    double r = ref_gelu(approx, backward, bench_to_float(dt, hx, i), bench_to_float(dt, hdy, i));
    double e = fabs(bench_to_float(dt, hy, i) - r);
    if (!(e <= max_err)) max_err = e; /* NaN propagates */
    if (fabs(r) > max_ref) max_ref = fabs(r);
  }
  double rel = max_err / max_ref;
  char shape[32], tshape[48], detail[64];
  snprintf(shape, sizeof shape, "n=%lld", (long long)n);
  snprintf(tshape, sizeof tshape, "%s %s", shape, approx ? "tanh" : "erf");
  snprintf(detail, sizeof detail, "host_us %.2f", g_last_host_us);
  const report_extra x = {NULL, tshape, "gko", 0, NULL, 0, detail, NULL};
  report_ex(backward ? "gelu_bwd" : "gelu", shape, bench_dtype_name(dt), approx ? "tanh" : "erf",
            dev, lat, (double)bytes * (backward ? 3 : 2), rel, &x);
  double tol = dt == GKO_DTYPE_F32 ? 1e-6 : dt == GKO_DTYPE_F16 ? 1e-3 : 8e-3;
  cudaFree(c.x);
  cudaFree(c.y);
  if (c.dy) cudaFree(c.dy);
  free(hx);
  free(hdy);
  free(hy);
  if (!(rel <= tol)) {
    fprintf(stderr, "gko-bench: gelu %s %s error %.3g above tolerance %.3g\n",
            bench_dtype_name(dt), approx ? "tanh" : "erf", rel, tol);
    return 1;
  }
  return 0;
}

int bench_gelu_cmd(gko_handle_t h, cudaStream_t s, int argc, char **argv) {
  int64_t n = (int64_t)1 << 28;
  int approx = -1, backward = 0;
  gko_dtype_t dt = GKO_DTYPE_F16;
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : "";
    if (!strcmp(a, "--n")) n = strtoll(argv[++i], NULL, 0);
    else if (!strcmp(a, "--dtype") && bench_parse_dtype(v, &dt)) i++;
    else if (!strcmp(a, "--approx")) approx = !strcmp(argv[++i], "tanh");
    else if (!strcmp(a, "--backward")) backward = 1;
    else {
      fprintf(stderr, "gko-bench gelu: unknown flag %s\n", a);
      return 1;
    }
  }
  int fails = 0;
  gelu_table();
  for (int a = 0; a < 2; a++)
    if (approx < 0 || a == approx) fails += bench_one(h, s, dt, a, backward, n);
  return fails;
}

int bench_gelu_suite(gko_handle_t h, cudaStream_t s) {
  const gko_dtype_t dts[3] = {GKO_DTYPE_F32, GKO_DTYPE_F16, GKO_DTYPE_BF16};
  int fails = 0;
  gelu_table();
  for (int d = 0; d < 3; d++)
    for (int a = 0; a < 2; a++) {
      fprintf(stderr, "\r  gelu %s %s            ", bench_dtype_name(dts[d]), a ? "tanh" : "erf");
      fails += bench_one(h, s, dts[d], a, 0, (int64_t)1 << 28);
    }
  for (int d = 0; d < 3; d++) {
    fprintf(stderr, "\r  gelu backward %s        ", bench_dtype_name(dts[d]));
    fails += bench_one(h, s, dts[d], 0, 1, (int64_t)1 << 28);
  }
  fprintf(stderr, "\r%40s\r", "");
  return fails;
}
