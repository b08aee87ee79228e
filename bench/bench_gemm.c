/* bench_gemm.c -- gko-bench's GEMM module.
 *
 *   gko-bench gemm --m M --n N --k K [--dtype f16|bf16|f32|tf32]
 *       [--out f32] [--epilogue none|bias|relu|bias-relu|gelu|bias-gelu|
 *        gelu-tanh|bias-gelu-tanh] [--transa] [--transb] [--batch B]
 *       [--pad auto|never|always] [--fusion auto|required|never]
 *
 * Each case: a plan, then device time (back-to-back executes between two
 * events, median) and call latency (one execute + stream sync, median), the
 * TFLOP/s and its fraction of the measured matrix rate (an 8192^3 bf16 GEMM
 * through gko, measured once per run), and the max error relative to max|ref|
 * over sampled rows against a float64 host reference.  Inputs are a 1 Mi-
 * element random block repeated (the reference reads the same block). */
#include "bench.h"

typedef struct {
  gko_gemm_plan_t plan;
  void *a, *b, *d, *bias, *ws;
  size_t ws_bytes;
} gemm_ctx;

static void run_gemm(void *p, cudaStream_t s) {
  gemm_ctx *c = p;
  GK(gko_gemm_execute(c->plan, 1.0f, c->a, c->b, 0.0f, NULL, c->d, c->bias, c->ws, c->ws_bytes,
                      s));
}

static const char *const kEpNames[8] = {"none", "bias", "relu", "bias-relu",
                                        "gelu", "bias-gelu", "gelu-tanh", "bias-gelu-tanh"};

typedef struct {
  int64_t m, n, k, batch;
  gko_dtype_t ab, cd;
  int tf32, epilogue, ta, tb, pad, fusion;
  const char *name; /* shape label */
} gemm_case;

static double g_peak_tflops = 0; /* measured matrix rate, TFLOP/s */

enum { kBlk = 1 << 20 };

static double ref_act(int act, double x) {
  if (act == 1) return x > 0 ? x : 0;
  if (act == 2) return x * 0.5 * erfc(-x / sqrt(2.0));
  if (act == 3) {
    const double a = 1.5957691216057308, b = a * 0.044715;
    double u2 = x * (a + b * x * x), q = exp(-fabs(u2));
    return x * (u2 >= 0 ? 1.0 / (1.0 + q) : q / (1.0 + q));
  }
  return x;
}

/* Fills a device array of n elements with the host block repeated. */
static void fill_repeat(void *dst, const void *blk, size_t n, size_t es) {
  for (size_t off = 0; off < n; off += kBlk) {
    size_t m = n - off < kBlk ? n - off : kBlk;
    CK(cudaMemcpy((char *)dst + off * es, blk, m * es, cudaMemcpyHostToDevice));
  }
}

static void report_flops(const gemm_case *g, double dev, double lat, double err,
                         const char *backend) {
  static int header = 0;
  if (!header) {
    printf("%-6s %-24s %-5s %-15s %10s %10s %8s %7s %9s  %s\n", "op", "shape", "dtype",
           "epilogue", "device_us", "latency_us", "TFLOP/s", "of_peak", "max_err", "backend");
    header = 1;
  }
  double flops = 2.0 * (double)g->m * (double)g->n * (double)g->k * (double)g->batch;
  double tf = flops / (dev * 1e6);
  char shape[64];
  int w = snprintf(shape, sizeof shape, "%s%s%lldx%lldx%lld", g->name ? g->name : "",
                   g->name ? " " : "", (long long)g->m, (long long)g->n, (long long)g->k);
  if (g->batch > 1 && w > 0 && (size_t)w < sizeof shape)
    snprintf(shape + w, sizeof shape - (size_t)w, " b%lld", (long long)g->batch);
  const char *dt = g->tf32 ? "tf32" : bench_dtype_name(g->ab);
  printf("%-6s %-24s %-5s %-15s %10.1f %10.1f %8.1f %6.1f%% %9.2g  %s\n", "gemm", shape, dt,
         kEpNames[g->epilogue], dev, lat, tf, g_peak_tflops > 0 ? 100.0 * tf / g_peak_tflops : 0.0,
         err, backend);
  fflush(stdout);
  if (g_json) {
    long pos = ftell(g_json);
    fprintf(g_json,
            "%s\n  {\"op\": \"gemm\", \"shape\": \"%s\", \"dtype\": \"%s\", \"form\": \"%s\", "
            "\"m\": %lld, \"n\": %lld, \"k\": %lld, \"batch\": %lld, \"device_us\": %.3f, "
            "\"latency_us\": %.3f, \"tflops\": %.2f, \"peak_tflops\": %.1f, "
            "\"max_rel_err\": %.3g, \"backend\": \"%s\"}",
            pos > 1 ? "," : "", shape, dt, kEpNames[g->epilogue], (long long)g->m,
            (long long)g->n, (long long)g->k, (long long)g->batch, dev, lat, tf, g_peak_tflops,
            err, backend);
  }
}

/* Runs one case; returns 1 if the error is above tolerance or a call failed. */
static int bench_one(gko_handle_t h, cudaStream_t s, const gemm_case *g, int quiet,
                     double *tflops_out) {
  const size_t esab = gko_dtype_size(g->ab), escd = gko_dtype_size(g->cd);
  const int64_t ar = g->ta ? g->k : g->m, ac = g->ta ? g->m : g->k;
  const int64_t br = g->tb ? g->n : g->k, bc = g->tb ? g->k : g->n;
  const size_t na = (size_t)(ar * ac * g->batch), nb = (size_t)(br * bc * g->batch),
               nd = (size_t)(g->m * g->n * g->batch);
  gko_gemm_desc_t desc;
  GK(gko_gemm_desc_create(&desc, g->ab, g->cd, g->m, g->n, g->k));
  GK(gko_gemm_desc_set(desc, GKO_GEMM_ATTR_TRANSA, g->ta));
  GK(gko_gemm_desc_set(desc, GKO_GEMM_ATTR_TRANSB, g->tb));
  GK(gko_gemm_desc_set(desc, GKO_GEMM_ATTR_BATCH_COUNT, g->batch));
  GK(gko_gemm_desc_set(desc, GKO_GEMM_ATTR_EPILOGUE, g->epilogue));
  GK(gko_gemm_desc_set(desc, GKO_GEMM_ATTR_PAD, g->pad));
  GK(gko_gemm_desc_set(desc, GKO_GEMM_ATTR_FUSION, g->fusion));
  if (g->tf32) GK(gko_gemm_desc_set(desc, GKO_GEMM_ATTR_COMPUTE, GKO_GEMM_COMPUTE_TF32));
  gemm_ctx c;
  memset(&c, 0, sizeof c);
  GK(gko_gemm_plan_create(h, desc, &c.plan));
  GK(gko_gemm_workspace_size(c.plan, &c.ws_bytes));
  char why[1024];
  GK(gko_gemm_plan_describe(c.plan, why, sizeof why, NULL));
  if (!quiet) printf("# plan: %s\n", why);
  char backend[64];
  size_t name_len = strcspn(why, ":");
  snprintf(backend, sizeof backend, "%.*s%s%s", (int)(name_len < 24 ? name_len : 24), why,
           strstr(why, "padded operands") ? "+pad" : "",
           strstr(why, "gko's pass") ? "+gko-epilogue" : "");
  CK(cudaMalloc(&c.a, na * esab));
  CK(cudaMalloc(&c.b, nb * esab));
  CK(cudaMalloc(&c.d, nd * escd));
  CK(cudaMalloc(&c.bias, (size_t)g->n * escd * g->batch + 16));
  if (c.ws_bytes) CK(cudaMalloc(&c.ws, c.ws_bytes));
  void *ha = malloc(kBlk * esab), *hb = malloc(kBlk * esab), *hbias = malloc(kBlk * escd);
  for (size_t i = 0; i < kBlk; i++) {
    bench_from_float(g->ab, ha, i, (float)bench_uniform(-1, 1));
    bench_from_float(g->ab, hb, i, (float)bench_uniform(-1, 1));
    bench_from_float(g->cd, hbias, i, (float)bench_uniform(-1, 1));
  }
  fill_repeat(c.a, ha, na, esab);
  fill_repeat(c.b, hb, nb, esab);
  fill_repeat(c.bias, hbias, (size_t)g->n * g->batch, escd);
  CK(cudaMemset(c.d, 0xff, nd * escd));
  double dev, lat;
  time_case(run_gemm, &c, s, &dev, &lat);

  /* reference on sampled rows of the first batch */
  const int rows = g->k * g->n > (int64_t)1 << 24 ? 4 : 16;
  void *hd = malloc((size_t)g->n * escd);
  double max_err = 0, max_ref = 0;
  const int act = g->epilogue >> 1, has_bias = g->epilogue & 1;
  for (int r = 0; r < rows; r++) {
    int64_t i = (int64_t)((double)r / rows * (double)g->m);
    CK(cudaMemcpy(hd, (char *)c.d + (size_t)i * g->n * escd, (size_t)g->n * escd,
                  cudaMemcpyDeviceToHost));
    for (int64_t j = 0; j < g->n; j++) {
      double sum = 0;
      for (int64_t p = 0; p < g->k; p++) {
        size_t ia = (size_t)(g->ta ? p * ac + i : i * ac + p);
        size_t ib = (size_t)(g->tb ? j * bc + p : p * bc + j);
        sum += (double)bench_to_float(g->ab, ha, ia % kBlk) *
               (double)bench_to_float(g->ab, hb, ib % kBlk);
      }
      if (has_bias) sum += bench_to_float(g->cd, hbias, (size_t)j % kBlk);
      double ref = ref_act(act, sum), got = bench_to_float(g->cd, hd, (size_t)j);
      double e = fabs(got - ref);
      if (!(e <= max_err)) max_err = e;
      if (fabs(ref) > max_ref) max_ref = fabs(ref);
    }
  }
  double rel = max_err / (max_ref > 0 ? max_ref : 1);
  report_flops(g, dev, lat, rel, backend);
  if (tflops_out) *tflops_out = 2.0 * g->m * g->n * (double)g->k * g->batch / (dev * 1e6);
  double tol = g->ab == GKO_DTYPE_F32 ? (g->tf32 ? 5e-3 : 1e-5) : (g->cd == GKO_DTYPE_BF16 ? 1.6e-2 : 4e-3);
  free(ha);
  free(hb);
  free(hbias);
  free(hd);
  cudaFree(c.a);
  cudaFree(c.b);
  cudaFree(c.d);
  cudaFree(c.bias);
  if (c.ws) cudaFree(c.ws);
  gko_gemm_plan_destroy(c.plan);
  gko_gemm_desc_destroy(desc);
  if (!(rel <= tol)) {
    fprintf(stderr, "gko-bench: gemm %s %lldx%lldx%lld error %.3g above tolerance %.3g\n",
            bench_dtype_name(g->ab), (long long)g->m, (long long)g->n, (long long)g->k, rel, tol);
    return 1;
  }
  return 0;
}

/* The matrix-rate ceiling: an 8192^3 bf16 GEMM through gko, once per run. */
static void measure_peak(gko_handle_t h, cudaStream_t s) {
  if (g_peak_tflops > 0) return;
  gemm_case g = {8192, 8192, 8192, 1, GKO_DTYPE_BF16, GKO_DTYPE_BF16, 0, 0, 0, 0, 0, 0,
                 "ceiling"};
  double tf = 0;
  bench_one(h, s, &g, 1, &tf);
  g_peak_tflops = tf;
  printf("# matrix-rate ceiling (8192^3 bf16 through gko): %.0f TFLOP/s\n", g_peak_tflops);
}

static int parse_ep(const char *s) {
  for (int i = 0; i < 8; i++)
    if (!strcmp(s, kEpNames[i])) return i;
  return -1;
}

int bench_gemm_cmd(gko_handle_t h, cudaStream_t s, int argc, char **argv) {
  gemm_case g = {4096, 4096, 4096, 1, GKO_DTYPE_F16, GKO_DTYPE_F16, 0, 0, 0, 0, 0, 0, NULL};
  int out32 = 0;
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : "";
    if (!strcmp(a, "--m")) g.m = strtoll(argv[++i], NULL, 0);
    else if (!strcmp(a, "--n")) g.n = strtoll(argv[++i], NULL, 0);
    else if (!strcmp(a, "--k")) g.k = strtoll(argv[++i], NULL, 0);
    else if (!strcmp(a, "--batch")) g.batch = strtoll(argv[++i], NULL, 0);
    else if (!strcmp(a, "--transa")) g.ta = 1;
    else if (!strcmp(a, "--transb")) g.tb = 1;
    else if (!strcmp(a, "--out") && !strcmp(v, "f32")) {
      out32 = 1;
      i++;
    } else if (!strcmp(a, "--dtype") && !strcmp(v, "tf32")) {
      g.ab = GKO_DTYPE_F32;
      g.tf32 = 1;
      i++;
    } else if (!strcmp(a, "--dtype") && bench_parse_dtype(v, &g.ab)) {
      i++;
    } else if (!strcmp(a, "--epilogue") && parse_ep(v) >= 0) {
      g.epilogue = parse_ep(v);
      i++;
    } else if (!strcmp(a, "--pad") && (!strcmp(v, "auto") || !strcmp(v, "never") || !strcmp(v, "always"))) {
      g.pad = !strcmp(v, "auto") ? GKO_GEMM_PAD_AUTO : !strcmp(v, "never") ? GKO_GEMM_PAD_NEVER : GKO_GEMM_PAD_ALWAYS;
      i++;
    } else if (!strcmp(a, "--fusion") && (!strcmp(v, "auto") || !strcmp(v, "required") || !strcmp(v, "never"))) {
      g.fusion = !strcmp(v, "auto") ? GKO_GEMM_FUSION_AUTO : !strcmp(v, "required") ? GKO_GEMM_FUSION_REQUIRED : GKO_GEMM_FUSION_NEVER;
      i++;
    } else {
      fprintf(stderr, "gko-bench gemm: unknown flag or value: %s %s\n", a, v);
      return 1;
    }
  }
  g.cd = out32 ? GKO_DTYPE_F32 : g.ab;
  measure_peak(h, s);
  return bench_one(h, s, &g, 0, NULL);
}

int bench_gemm_suite(gko_handle_t h, cudaStream_t s) {
  measure_peak(h, s);
  const struct {
    const char *name;
    int64_t m, n, k;
    int big;
  } shapes[] = {{"bert_qkv", 4096, 2304, 768, 0}, {"bert_proj", 4096, 768, 768, 0},
                {"bert_ffn1", 4096, 3072, 768, 0}, {"bert_ffn2", 4096, 768, 3072, 0},
                {"square4k", 4096, 4096, 4096, 0}, {"square8k", 8192, 8192, 8192, 1},
                {"k1027", 4096, 4096, 1027, 0},    {"odd1000", 1000, 1000, 1000, 0}};
  const struct {
    gko_dtype_t dt;
    int tf32;
  } types[] = {{GKO_DTYPE_F16, 0}, {GKO_DTYPE_BF16, 0}, {GKO_DTYPE_F32, 1}};
  int fails = 0;
  for (int t = 0; t < 3; t++)
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
      if (shapes[i].big && types[t].tf32) continue; /* 8192^3 for f16/bf16 only */
      fprintf(stderr, "\r  gemm %s %s          ", types[t].tf32 ? "tf32" : bench_dtype_name(types[t].dt),
              shapes[i].name);
      gemm_case g = {shapes[i].m, shapes[i].n, shapes[i].k, 1, types[t].dt, types[t].dt,
                     types[t].tf32, 0, 0, 0, 0, 0, shapes[i].name};
      fails += bench_one(h, s, &g, 1, NULL);
    }
  /* the linear layer x W^T (+ bias, + GELU) at BERT FFN1, as F.linear holds it */
  const int eps[4] = {GKO_EPILOGUE_NONE, GKO_EPILOGUE_BIAS, GKO_EPILOGUE_BIAS_GELU_TANH,
                      GKO_EPILOGUE_BIAS_GELU_ERF};
  for (int t = 0; t < 2; t++)
    for (int e = 0; e < 4; e++) {
      gemm_case g = {4096, 3072, 768, 1, types[t].dt, types[t].dt, 0, eps[e], 0, 1, 0, 0,
                     "linear_ffn1"};
      fails += bench_one(h, s, &g, 1, NULL);
    }
  fprintf(stderr, "\r%40s\r", "");
  return fails;
}
