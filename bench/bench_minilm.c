/* bench_minilm.c -- gko-bench's sentence-encoder model: all-MiniLM-L6-v2
 * (util/minilm.h) through gko, on the real weights.
 *
 *   gko-bench [--verbose] model minilm [--shapes 1x32,32x128,256x128]
 *       [--dtype f16|bf16|f32] [--model DIR]
 *
 * DIR: --model, else $GKO_MINILM_DIR, else build/models/all-MiniLM-L6-v2
 * (`make model-minilm`); without it the module says so and measures nothing.
 * Each shape B x S is B sentences of S tokens (random ids, every token kept):
 *   - "eager": the 46 calls of a forward pass back to back between events
 *     (device time), one forward + sync on the host clock (latency);
 *   - "graph": the pass as one CUDA graph, replayed; latency: one replay of a
 *     one-pass graph + sync on the host clock.
 * sentences/s = B / device time; of_roof: the encoder's floor (sum over calls
 * of max(FLOPs / the measured matrix rate, bytes / the measured copy
 * bandwidth)) / device time.  max_err: 1 - the lowest cosine similarity
 * between the graph's embeddings and the eager pass's (they must agree; the
 * check against sentence-transformers is examples/minilm --check).
 * --verbose: each call alone (graph of 20), summed by part (GEMMs, attention,
 * layer norms, the rest) against each part's floor. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bench.h"

#include "../util/minilm.h"

typedef struct {
  mlm_net *net;
  int call; /* -1: the whole pass */
} enc_ctx;

static void run_enc(void *p, cudaStream_t s) {
  enc_ctx *c = p;
  char err[512];
  const int rc = c->call < 0 ? mlm_net_forward(c->net, s, err, sizeof err)
                             : mlm_net_run_call(c->net, c->call, s, err, sizeof err);
  if (rc) {
    fprintf(stderr, "gko-bench model minilm: %s\n", err);
    exit(1);
  }
}

static double call_floor(const mlm_call *c, double peak) {
  const double mma = c->flops / (peak * 1e6), mem = c->bytes / (g_copy_gbs * 1e3);
  return mma > mem ? mma : mem;
}

static const char kLegend[] =
    "all-MiniLM-L6-v2 (6 layers, hidden 384, 12 heads), B sentences x S tokens, random ids\n"
    "eager: the 46 calls of a pass back to back; graph: the pass as one CUDA graph, replayed\n"
    "sent/s: B / device time; of_roof: sum over calls of max(FLOPs / matrix rate, bytes / copy\n"
    "  bandwidth) / device time; max_err: 1 - min cosine(graph embeddings, eager embeddings)";

static double min_cosine(const float *a, const float *b, int rows, int cols) {
  double worst = 1;
  for (int i = 0; i < rows; i++) {
    double ab = 0, aa = 0, bb = 0;
    for (int j = 0; j < cols; j++) {
      const double x = a[(size_t)i * cols + j], y = b[(size_t)i * cols + j];
      ab += x * y, aa += x * x, bb += y * y;
    }
    const double c = aa > 0 && bb > 0 ? ab / sqrt(aa * bb) : 0;
    if (!(c >= worst)) worst = c;
  }
  return worst;
}

int bench_minilm(gko_handle_t h, cudaStream_t s, const int (*shapes)[2], int ns, gko_dtype_t dt,
                 const char *dir, double peak) {
  char path[4096], err[1024];
  struct stat sb;
  snprintf(path, sizeof path, "%s/model.safetensors", dir);
  if (stat(path, &sb)) {
    printf("# model minilm: no model at %s (make model-minilm): not measured\n", dir);
    return 0;
  }
  mlm_params p;
  if (mlm_params_load(&p, dir, err, sizeof err)) {
    fprintf(stderr, "gko-bench model minilm: %s\n", err);
    return 1;
  }
  bench_table("model", 18, 12, "sent/s", "the encoder's floor", 0, kLegend);
  int fails = 0;
  const int hd = p.cfg.hidden;
  for (int si = 0; si < ns; si++) {
    const int batch = shapes[si][0], seq = shapes[si][1];
    fprintf(stderr, "\r  model minilm %dx%d %s: planning ...      ", batch, seq, bench_dtype_name(dt));
    mlm_net *net;
    if (mlm_net_create(h, &p, dt, batch, seq, &net, err, sizeof err)) {
      fprintf(stderr, "\ngko-bench model minilm: %dx%d: %s\n", batch, seq, err);
      fails++;
      continue;
    }
    int32_t *ids = malloc((size_t)batch * seq * sizeof *ids);
    int *len = malloc((size_t)batch * sizeof *len);
    float *e0 = malloc((size_t)batch * hd * sizeof *e0), *e1 = malloc((size_t)batch * hd * sizeof *e1);
    if (!ids || !len || !e0 || !e1) {
      fprintf(stderr, "gko-bench model minilm: out of host memory\n");
      exit(1);
    }
    uint64_t r = 0x5EEDull + (uint64_t)batch * 1000 + (uint64_t)seq;
    for (int b = 0; b < batch; b++) {
      len[b] = seq;
      for (int i = 0; i < seq; i++) {
        r = r * 6364136223846793005ull + 1442695040888963407ull;
        /* [CLS] ... [SEP] around ordinary word pieces (ids from 1000 on in BERT's vocabularies) */
        const int lo = p.cfg.vocab > 2000 ? 1000 : 0;
        ids[(size_t)b * seq + i] = i == 0 && lo ? 101 : i == seq - 1 && lo ? 102
                                   : lo + (int)((r >> 33) % (uint64_t)(p.cfg.vocab - lo));
      }
    }
    enc_ctx c = {net, -1};
    if (mlm_net_set_input(net, batch, ids, len, s, err, sizeof err)) {
      fprintf(stderr, "gko-bench model minilm: %s\n", err);
      exit(1);
    }
    run_enc(&c, s);
    if (mlm_net_get_output(net, batch, e0, s, err, sizeof err)) {
      fprintf(stderr, "gko-bench model minilm: %s\n", err);
      exit(1);
    }
    double floor_sum = 0;
    for (int i = 0; i < mlm_net_calls(net); i++) floor_sum += call_floor(mlm_net_call(net, i), peak);
    char shape[48], detail[256];
    snprintf(shape, sizeof shape, "%dx%d", batch, seq);
    fprintf(stderr, "\r  model minilm %dx%d %s: timing ...        ", batch, seq, bench_dtype_name(dt));
    double dev, lat;
    time_case(run_enc, &c, s, &dev, &lat);
    snprintf(detail, sizeof detail, "host %.1f us per forward (%d calls)", g_last_host_us,
             mlm_net_calls(net));
    bench_row_t row = {"minilm", shape, bench_dtype_name(dt), "gko eager", dev, lat, batch / (dev * 1e-6),
                       floor_sum / dev, -1, NULL, -1, 0, 0, detail, NULL};
    bench_row(&row);
    const int k = (int)(25000.0 / dev) + 1;
    const double gdev = time_graph(run_enc, &c, s, k < 1000 ? k : 1000);
    const double glat = graph_latency(run_enc, &c, s);
    if (mlm_net_get_output(net, batch, e1, s, err, sizeof err)) {
      fprintf(stderr, "gko-bench model minilm: %s\n", err);
      exit(1);
    }
    const double cosv = min_cosine(e0, e1, batch, hd), merr = 1 - cosv;
    fails += !(merr <= 1e-6);
    snprintf(detail, sizeof detail, "the encoder holds %.0f MiB of device memory",
             mlm_net_device_bytes(net) / 1048576.0);
    bench_row_t grow = {"minilm", shape, bench_dtype_name(dt), "gko graph", gdev, glat, batch / (gdev * 1e-6),
                        floor_sum / gdev, -1, NULL, isnan(merr) ? merr : fmax(merr, 0), 0, 0, detail, NULL};
    bench_row(&grow);
    if (g_json) {
      bench_json_begin();
      fprintf(g_json,
              "\"op\": \"minilm\", \"batch\": %d, \"tokens\": %d, \"dtype\": \"%s\", \"eager_us\": %.3f, "
              "\"eager_latency_us\": %.3f, \"graph_us\": %.3f, \"graph_latency_us\": %.3f, \"sentences_per_s\": %.1f, "
              "\"floor_us\": %.3f, \"min_cos_graph_vs_eager\": ",
              batch, seq, bench_dtype_name(dt), dev, lat, gdev, glat, batch / (gdev * 1e-6), floor_sum);
      if (isnan(cosv)) fputs("null}", g_json);
      else fprintf(g_json, "%.9f}", cosv);
    }
    if (g_verbose) {
      static const char *const kKind[4] = {"GEMMs", "attention", "layer norms", "the rest"};
      double part[4] = {0}, pfloor[4] = {0}, sum = 0;
      printf("    %-32s %9s %6s %8s %7s %8s\n", "call", "dev_us", "share", "TFLOP/s", "of_roof", "floor_us");
      const int n = mlm_net_calls(net);
      double *t = malloc(sizeof(double) * (size_t)n);
      if (!t) {
        fprintf(stderr, "gko-bench model minilm: out of host memory\n");
        exit(1);
      }
      for (int i = 0; i < n; i++) {
        enc_ctx lc = {net, i};
        t[i] = time_graph(run_enc, &lc, s, 20);
        sum += t[i];
      }
      for (int i = 0; i < n; i++) {
        const mlm_call *cl = mlm_net_call(net, i);
        const double f = call_floor(cl, peak);
        part[cl->kind] += t[i], pfloor[cl->kind] += f;
        if (i < 10 || i >= n - 1) /* the embedding, the first layer, pooling */
          printf("    %-32s %9.1f %5.1f%% %8.1f %6.1f%% %8.1f\n", cl->name, t[i], 100 * t[i] / sum,
                 cl->flops / (t[i] * 1e6), 100 * f / t[i], f);
      }
      for (int k2 = 0; k2 < 4; k2++)
        printf("    %-32s %9.1f %5.1f%% %8s %6.1f%% %8.1f\n", kKind[k2], part[k2], 100 * part[k2] / sum, "",
               part[k2] > 0 ? 100 * pfloor[k2] / part[k2] : 0.0, pfloor[k2]);
      printf("    %-32s %9.1f (the graph of the whole pass: %.1f)\n", "sum of calls alone", sum, gdev);
      fflush(stdout);
      free(t);
    }
    free(ids), free(len), free(e0), free(e1);
    mlm_net_destroy(net);
  }
  fprintf(stderr, "\r%60s\r", "");
  mlm_params_free(&p);
  return fails;
}
