/* bench_model.c -- gko-bench's model module: whole networks through gko.
 *
 *   gko-bench [--power] [--verbose] model resnet18 [--batch 1,32,128,256]
 *       [--dtype f16|bf16|f32] [--layout nhwc|nchw] [--power]
 *   gko-bench [--verbose] model minilm [--shapes 1x32,32x128,256x128] ...
 *       (bench_minilm.c)
 *
 * ResNet-18 (util/resnet18.h: torchvision's network, BatchNorm folded,
 * deterministic random weights) at each batch size:
 *   - "eager": rn18_net_forward enqueued back to back between two events
 *     (device time per batch; the host's 23 calls overlap the GPU's work),
 *     and one forward + stream sync on the host clock (latency);
 *   - "graph": the forward pass captured into one CUDA graph (k forwards per
 *     graph, k chosen for >= 25 ms per replay so NVML's power readings cover
 *     it), replays between events, median; latency: one replay of a
 *     one-forward graph + sync.
 * img/s = batch / device time; of_roof = the network's floor / device time,
 * the floor being the sum over layers of max(FLOPs / the measured matrix
 * rate of the dtype (an 8192^3 GEMM through gko, graph replay), bytes /
 * the measured copy bandwidth), with bytes the fewest each layer must move
 * (its input, weights, output and residual once).  max_err: image 0's
 * logits against the float64 host reference (relative 2-norm; the
 * tolerance is rn18_tolerance; -1 in the JSON when a logit is not finite).  With --power: board watts, SM clock, memory
 * in use (NVML, whole GPU) and joules per image during the graph replays.
 * With --verbose: the per-layer breakdown (each layer alone, graph replay
 * of 20 calls), its share of the sum, TFLOP/s and fraction of its floor. */
#include "bench.h"

#include "../util/half.h"
#include "../util/resnet18.h"

static double g_peak[3]; /* measured matrix rate per dtype, TFLOP/s */

typedef struct {
  gko_gemm_plan_t plan;
  void *a, *b, *d, *ws;
  size_t ws_bytes;
} peak_ctx;

static void run_peak(void *p, cudaStream_t s) {
  peak_ctx *c = p;
  GK(gko_gemm_execute(c->plan, 1.0f, c->a, c->b, 0.0f, NULL, c->d, NULL, c->ws, c->ws_bytes, s));
}

static double matrix_rate(gko_handle_t h, cudaStream_t s, gko_dtype_t dt) {
  if (g_peak[dt] > 0) return g_peak[dt];
  const int64_t n = 8192;
  const size_t es = gko_dtype_size(dt), bytes = (size_t)(n * n) * es;
  peak_ctx c = {0};
  gko_gemm_desc_t d;
  GK(gko_gemm_desc_create(&d, dt, dt, n, n, n));
  GK(gko_gemm_plan_create(h, d, &c.plan));
  GK(gko_gemm_desc_destroy(d));
  GK(gko_gemm_workspace_size(c.plan, &c.ws_bytes));
  CK(cudaMalloc(&c.a, bytes));
  CK(cudaMalloc(&c.b, bytes));
  CK(cudaMalloc(&c.d, bytes));
  CK(cudaMemset(c.a, 0, bytes));
  CK(cudaMemset(c.b, 0, bytes));
  if (c.ws_bytes) CK(cudaMalloc(&c.ws, c.ws_bytes));
  const int power = g_power;
  g_power = 0; /* not a region of the table */
  const double us = time_graph(run_peak, &c, s, 3);
  g_power = power;
  g_peak[dt] = 2.0 * n * n * n / (us * 1e6);
  printf("# matrix-rate ceiling (8192^3 %s through gko, graph replay): %.0f TFLOP/s\n", bench_dtype_name(dt),
         g_peak[dt]);
  cudaFree(c.a), cudaFree(c.b), cudaFree(c.d), cudaFree(c.ws);
  gko_gemm_plan_destroy(c.plan);
  return g_peak[dt];
}

typedef struct {
  rn18_net *net;
  int layer; /* -1: the whole forward pass */
} net_ctx;

static void run_net(void *p, cudaStream_t s) {
  net_ctx *c = p;
  char err[512];
  const int rc = c->layer < 0 ? rn18_net_forward(c->net, s, err, sizeof err)
                              : rn18_net_run_layer(c->net, c->layer, s, err, sizeof err);
  if (rc) {
    fprintf(stderr, "gko-bench model: %s\n", err);
    exit(1);
  }
}

static double floor_us(const rn18_layer *l, double peak) {
  const double mma = l->flops / (peak * 1e6), mem = l->bytes / (g_copy_gbs * 1e3);
  return mma > mem ? mma : mem;
}

static const char kLegend[] =
    "ResNet-18 (torchvision's network, BatchNorm folded, random weights), 224x224 images\n"
    "eager: the 23 calls of a forward pass back to back; graph: the pass as one CUDA graph, replayed\n"
    "img/s: batch / device time; of_roof: sum over layers of max(FLOPs / matrix rate, bytes / copy\n"
    "  bandwidth) / device time; max_err: image 0's logits vs the float64 host reference (rel. 2-norm)";

/* the reference once per parameter set and dtype: image 0 of the input */
static int check(rn18_net *net, const rn18_params *p, const float *x0, gko_dtype_t dt, double *err_out) {
  static double ref[RN18_CLASSES];
  static int have = -1;
  if (have != (int)dt) {
    fprintf(stderr, "\r  model: float64 host reference of one image ...      ");
    rn18_reference(p, x0, ref);
    have = (int)dt;
  }
  float y[RN18_CLASSES];
  CK(cudaMemcpy(y, rn18_net_logits(net), sizeof y, cudaMemcpyDeviceToHost));
  double num = 0, den = 0;
  for (int j = 0; j < RN18_CLASSES; j++) num += (y[j] - ref[j]) * (y[j] - ref[j]), den += ref[j] * ref[j];
  *err_out = isfinite(num) ? sqrt(num / den) : INFINITY;
  return !(*err_out <= rn18_tolerance(dt));
}

static int bench_resnet18(gko_handle_t h, cudaStream_t s, const int *batches, int nb, gko_dtype_t dt,
                          gko_conv_layout_t layout) {
  const double peak = matrix_rate(h, s, dt);
  rn18_params p;
  if (rn18_params_random(&p, 0x5EED18ull)) {
    fprintf(stderr, "gko-bench model: out of host memory\n");
    return 1;
  }
  rn18_params_round(&p, dt);
  const char *lay = layout == GKO_CONV_LAYOUT_NHWC ? "nhwc" : "nchw";
  bench_table("model", 18, 12, "img/s", "the network's floor", g_power, kLegend);
  int fails = 0, maxb = 0;
  for (int i = 0; i < nb; i++) maxb = batches[i] > maxb ? batches[i] : maxb;
  const size_t img = (size_t)3 * RN18_IMAGE * RN18_IMAGE;
  float *x = malloc((size_t)maxb * img * sizeof *x);
  uint64_t seed = 0x2E5E7181ull;
  for (size_t i = 0; i < (size_t)maxb * img; i++) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    const float v = (float)((double)(seed >> 11) * 0x1.0p-53 * 4 - 2);
    x[i] = dt == GKO_DTYPE_F16 ? half_to_float(float_to_half(v))
           : dt == GKO_DTYPE_BF16 ? bf16_to_float(float_to_bf16(v)) : v;
  }
  for (int bi = 0; bi < nb; bi++) {
    const int batch = batches[bi];
    fprintf(stderr, "\r  model resnet18 batch %d %s %s: planning ...      ", batch, bench_dtype_name(dt), lay);
    rn18_net *net;
    char err[512];
    if (rn18_net_create(h, &p, dt, layout, batch, &net, err, sizeof err)) {
      fprintf(stderr, "\ngko-bench model: resnet18 batch %d: %s\n", batch, err);
      fails++;
      continue;
    }
    if (rn18_net_set_input(net, x, err, sizeof err)) {
      fprintf(stderr, "\ngko-bench model: resnet18 batch %d: %s\n", batch, err);
      rn18_net_destroy(net);
      fails++;
      continue;
    }
    net_ctx c = {net, -1};
    double floor_sum = 0;
    for (int l = 0; l < rn18_net_layers(net); l++) floor_sum += floor_us(rn18_net_layer(net, l), peak);
    char shape[48], detail[256];
    snprintf(shape, sizeof shape, "batch %d %s", batch, lay);
    /* eager */
    fprintf(stderr, "\r  model resnet18 batch %d %s %s: timing ...        ", batch, bench_dtype_name(dt), lay);
    const int power = g_power;
    double dev, lat;
    g_power = 0;
    time_case(run_net, &c, s, &dev, &lat);
    g_power = power;
    double err_rel;
    const int bad = check(net, &p, x, dt, &err_rel);
    fails += bad;
    const double host = g_last_host_us;
    snprintf(detail, sizeof detail, "host %.1f us per forward (23 calls); check %s", host, bad ? "FAILED" : "passed");
    bench_row_t row = {"resnet18", shape, bench_dtype_name(dt), "gko eager", dev, lat, batch / (dev * 1e-6),
                       floor_sum / dev, -1, NULL, err_rel, 0, 0, detail, NULL};
    bench_row(&row);
    /* graph */
    const int k = (int)(25000.0 / dev) + 1;
    const double gdev = time_graph(run_net, &c, s, k < 1000 ? k : 1000);
    const double glat = graph_latency(run_net, &c, s);
    const double watts = g_power && g_last_power.power_n ? g_last_power.watts : 0;
    if (watts > 0)
      snprintf(detail, sizeof detail, "%.0f W, %.2f mJ per image; the network holds %.0f MiB (workspace %.0f MiB)",
               watts, watts * gdev * 1e-3 / batch, rn18_net_device_bytes(net) / 1048576.0,
               rn18_net_workspace_bytes(net) / 1048576.0);
    else
      snprintf(detail, sizeof detail, "the network holds %.0f MiB of device memory (workspace %.0f MiB)",
               rn18_net_device_bytes(net) / 1048576.0, rn18_net_workspace_bytes(net) / 1048576.0);
    bench_row_t grow = {"resnet18", shape, bench_dtype_name(dt), "gko graph", gdev, glat, batch / (gdev * 1e-6),
                        floor_sum / gdev, -1, NULL, err_rel, 0, 0, detail, NULL};
    bench_row(&grow);
    if (g_json) {
      bench_json_begin();
      fprintf(g_json,
              "\"op\": \"resnet18\", \"batch\": %d, \"dtype\": \"%s\", \"layout\": \"%s\", "
              "\"eager_us\": %.3f, \"eager_latency_us\": %.3f, \"host_us\": %.3f, \"graph_us\": %.3f, "
              "\"graph_latency_us\": %.3f, \"images_per_s\": %.1f, \"floor_us\": %.3f, \"max_rel_err\": %.3g, "
              "\"device_bytes\": %zu, \"watts\": %.1f",
              batch, bench_dtype_name(dt), lay, dev, lat, host, gdev, glat, batch / (gdev * 1e-6), floor_sum,
              isfinite(err_rel) ? err_rel : -1.0, rn18_net_device_bytes(net), watts);
      bench_power_json(g_json, gdev);
      fputs("}", g_json);
    }
    g_last_power.fresh = 0;
    if (g_verbose) { /* the per-layer breakdown */
      printf("    %-26s %-8s %9s %6s %8s %7s %8s\n", "layer", "path", "dev_us", "share", "TFLOP/s", "of_roof",
             "floor_us");
      double *t = malloc(sizeof(double) * (size_t)rn18_net_layers(net)), sum = 0;
      g_power = 0;
      for (int l = 0; l < rn18_net_layers(net); l++) {
        net_ctx lc = {net, l};
        t[l] = time_graph(run_net, &lc, s, 20);
        sum += t[l];
      }
      g_power = power;
      static const char *const kPath[] = {"none", "im2col", "direct", "implicit"};
      for (int l = 0; l < rn18_net_layers(net); l++) {
        const rn18_layer *ly = rn18_net_layer(net, l);
        const double f = floor_us(ly, peak);
        printf("    %-26s %-8s %9.1f %5.1f%% %8.1f %6.1f%% %8.1f\n", ly->name,
               ly->path >= 0 && ly->path <= 3 ? kPath[ly->path] : "-", t[l], 100 * t[l] / sum,
               ly->flops / (t[l] * 1e6), 100 * f / t[l], f);
      }
      printf("    %-26s %-8s %9.1f (the graph of the whole pass: %.1f)\n", "sum of layers alone", "", sum, gdev);
      fflush(stdout);
      free(t);
    }
    rn18_net_destroy(net);
  }
  fprintf(stderr, "\r%60s\r", "");
  free(x);
  rn18_params_free(&p);
  return fails;
}

static const char *minilm_dir(void) {
  const char *d = getenv("GKO_MINILM_DIR");
  return d && *d ? d : "build/models/all-MiniLM-L6-v2";
}

static int minilm_cmd(gko_handle_t h, cudaStream_t s, int argc, char **argv) {
  int shapes[16][2] = {{1, 32}, {32, 128}, {256, 128}}, ns = 3;
  gko_dtype_t dt = GKO_DTYPE_F16;
  const char *dir = minilm_dir();
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : "";
    if (!strcmp(a, "--shapes") && *v) {
      ns = 0;
      for (const char *q = v; *q && ns < 16;) {
        char *e;
        const long b = strtol(q, &e, 10), t = *e == 'x' ? strtol(e + 1, &e, 10) : 0;
        if (b < 1 || b > 4096 || t < 1 || t > 512 || (*e && *e != ',')) {
          fprintf(stderr, "gko-bench model minilm: --shapes takes BxS pairs (B 1..4096, S 1..512) "
                          "separated by commas: %s\n", v);
          return 1;
        }
        shapes[ns][0] = (int)b, shapes[ns][1] = (int)t, ns++;
        q = e + (*e == ',');
      }
      i++;
    } else if (!strcmp(a, "--dtype") && bench_parse_dtype(v, &dt)) {
      i++;
    } else if (!strcmp(a, "--model") && *v) {
      dir = v, i++;
    } else {
      fprintf(stderr, "gko-bench model minilm: unknown flag or value: %s %s\n", a, v);
      return 1;
    }
  }
  return bench_minilm(h, s, (const int(*)[2])shapes, ns, dt, dir, matrix_rate(h, s, dt));
}

int bench_model_cmd(gko_handle_t h, cudaStream_t s, int argc, char **argv) {
  if (argc >= 1 && !strcmp(argv[0], "minilm")) return minilm_cmd(h, s, argc, argv);
  if (argc < 1 || strcmp(argv[0], "resnet18")) {
    fprintf(stderr, "gko-bench model: the models are: resnet18, minilm\n");
    return 1;
  }
  int batches[16] = {1, 32, 128, 256}, nb = 4;
  gko_dtype_t dt = GKO_DTYPE_F16;
  gko_conv_layout_t layout = GKO_CONV_LAYOUT_NHWC;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : "";
    if (!strcmp(a, "--batch") && *v) {
      nb = 0;
      for (const char *q = v; *q && nb < 16;) {
        const long b = strtol(q, (char **)&q, 10);
        if (b < 1 || b > 4096 || (*q && *q != ',')) {
          fprintf(stderr, "gko-bench model: --batch takes sizes 1..4096 separated by commas: %s\n", v);
          return 1;
        }
        batches[nb++] = (int)b;
        q += *q == ',';
      }
      i++;
    } else if (!strcmp(a, "--dtype") && bench_parse_dtype(v, &dt)) {
      i++;
    } else if (!strcmp(a, "--layout") && (!strcmp(v, "nhwc") || !strcmp(v, "nchw"))) {
      layout = !strcmp(v, "nhwc") ? GKO_CONV_LAYOUT_NHWC : GKO_CONV_LAYOUT_NCHW;
      i++;
    } else if (!strcmp(a, "--power")) {
      if (!g_power) bench_power_init();
    } else {
      fprintf(stderr, "gko-bench model: unknown flag or value: %s %s\n", a, v);
      return 1;
    }
  }
  return bench_resnet18(h, s, batches, nb, dt, layout);
}

int bench_model_suite(gko_handle_t h, cudaStream_t s) {
  const int batches[2] = {32, 128};
  const int shapes[2][2] = {{32, 128}, {256, 128}};
  int fails = bench_resnet18(h, s, batches, 2, GKO_DTYPE_F16, GKO_CONV_LAYOUT_NHWC);
  return fails + bench_minilm(h, s, shapes, 2, GKO_DTYPE_F16, minilm_dir(),
                              matrix_rate(h, s, GKO_DTYPE_F16));
}
