/* bench_gemm.c -- gko-bench's GEMM module.
 *
 *   gko-bench gemm --m M --n N --k K [--dtype f16|bf16|f32|tf32]
 *       [--out f32] [--epilogue none|bias|relu|bias-relu|gelu|bias-gelu|
 *        gelu-tanh|bias-gelu-tanh] [--transa] [--transb] [--batch B]
 *       [--pad auto|never|always] [--fusion auto|required|never]
 *       [--backend auto|cublaslt|wmma|sm90] [--autotune] [--rotate] [--static] [--interleave]
 *   gko-bench gemm --suite all|shapes|k1027|ffn1|square|decode|autotune|sm90|decode-sweep
 *                              |decode-sweep-xb
 *
 * Each case: a plan, then
 *   device_us   back-to-back executes between two events (median);
 *   graph_us    the same calls captured in a CUDA graph and replayed (median;
 *               what the Python comparison reports for torch too);
 *   latency_us  one execute + stream sync on the host clock (median);
 *   host_us     host time per execute: the wall time of the back-to-back
 *               enqueues divided by their number (target: <= 5 us);
 * the TFLOP/s (from graph_us) and its fraction of the measured matrix rate
 * (an 8192^3 bf16 GEMM through gko, measured once per run), the bytes of A,
 * B and D moved once over graph_us and their fraction of 4.2 TB/s (the
 * decode memory floor), the roofline of the shape (AI: FLOPs per byte
 * of A, B and D; bound: mma or mem, whichever ceiling is lower at that AI;
 * of_roof: the attained fraction of it), vs_ref where the suite times the
 * same GEMM on cuBLASLt first (its graph_us / this row's), and the max
 * error relative to max|ref| over sampled rows against a float64 host
 * reference.  The table shows device_us, latency_us, TFLOP/s, of_roof,
 * vs_ref and max_err; --verbose adds graph_us, host_us, GB/s, AI, bound and
 * the plan's description under each row; --json has them all.  Inputs are a
 * 1 Mi-element random block repeated (the reference reads the same block).  --rotate
 * (on in the decode suite) cycles each call through copies of B totalling
 * at least 256 MB, so the weights come from HBM and not from the 50 MB L2.
 * --static promises A and B static (GKO_GEMM_ATTR_STATIC_OPERANDS): the
 * decode kernel's calls then overlap each other's start and end, and
 * device_us and graph_us are the time per call of such a chain.
 * --interleave runs a 4096-element f16 GELU (gko_gelu_forward, an ordinary
 * kernel) before each call, as between a model's GEMMs: the times then
 * include it, and no call follows another GEMM directly.
 * A plan the backend cannot make is reported as "not supported" (a failure
 * only when the case expects it to work). */
#include "bench.h"

enum { kBlk = kBenchBlk, kMaxRot = 64 };
static const double kHbmBytesPerUs = 4.2e6; /* 4.2 TB/s: the decode memory floor */

typedef struct {
  gko_gemm_plan_t plan;
  void *a, *b, *d, *bias, *ws;
  void *c;      /* residual (beta = 1), or NULL */
  size_t ws_bytes;
  void *brot[kMaxRot]; /* copies of B (--rotate); brot[0] == b */
  int nrot, cur;
  gko_handle_t h;
  void *gx; /* --interleave: a GELU on these 4096 f16 elements before each call */
} gemm_ctx;

static void run_gemm(void *p, cudaStream_t s) {
  gemm_ctx *c = p;
  const void *b = c->b;
  if (c->nrot > 1) {
    b = c->brot[c->cur];
    c->cur = (c->cur + 1) % c->nrot;
  }
  if (c->gx) GK(gko_gelu_forward(c->h, GKO_GELU_ERF, GKO_DTYPE_F16, 4096, c->gx, c->gx, s));
  GK(gko_gemm_execute(c->plan, 1.0f, c->a, b, c->c ? 1.0f : 0.0f, c->c, c->d, c->bias, c->ws,
                      c->ws_bytes, s));
}

static const char *const *const kEpNames = bench_epilogue_names;
static const char *const kBackendNames[4] = {"auto", "cublaslt", "wmma", "sm90"};
static const char *const kPadNames[3] = {"auto", "never", "always"};

typedef struct {
  int64_t m, n, k, batch;
  gko_dtype_t ab, cd;
  int tf32, epilogue, ta, tb, pad, fusion, backend, autotune, rotate, static_ops;
  int residual;     /* beta = 1 with a C of its own (a residual added before the activation) */
  int ref_rows;     /* rows checked against the reference (0: all when m <= 16, else 16 or 4) */
  int interleave;   /* a 4096-element GELU before each call (a kernel between GEMMs) */
  const char *name; /* shape label */
} gemm_case;

typedef struct {
  int ok;   /* the plan was made */
  int bad;  /* error above tolerance */
  double dev, graph, lat, host, err, tflops, gbs, bytes;
  char backend[48];
  char why[2048];
} gemm_result;

static double g_peak_tflops = 0; /* measured matrix rate, TFLOP/s */

static gemm_case mk(const char *name, int64_t m, int64_t n, int64_t k, gko_dtype_t dt, int tf32) {
  gemm_case g;
  memset(&g, 0, sizeof g);
  g.m = m;
  g.n = n;
  g.k = k;
  g.batch = 1;
  g.ab = g.cd = dt;
  g.tf32 = tf32;
  g.name = name;
  return g;
}

static const char *dt_name(const gemm_case *g) {
  return g->tf32 ? "tf32" : bench_dtype_name(g->ab);
}

static void shape_name(const gemm_case *g, char *buf, size_t n) {
  int w = snprintf(buf, n, "%s%s%lldx%lldx%lld", g->name ? g->name : "", g->name ? " " : "",
                   (long long)g->m, (long long)g->n, (long long)g->k);
  if (g->batch > 1 && w > 0 && (size_t)w < n)
    snprintf(buf + w, n - (size_t)w, " b%lld", (long long)g->batch);
}

/* The roofline of the shape: arithmetic intensity (FLOPs per byte of A, B
 * and D moved once), which ceiling bounds it (the matrix rate, or the
 * memory floor at 4.2 TB/s: "mma" above the ridge point peak / bandwidth,
 * "mem" below), and the attained fraction of that ceiling. */
typedef struct {
  double ai, roof_tflops, of_roof;
  const char *bound;
} roofline;

static roofline roof_of(const gemm_result *r) {
  roofline f = {0, 0, 0, "-"};
  if (r->gbs <= 0 || g_peak_tflops <= 0) return f;
  f.ai = 1e3 * r->tflops / r->gbs; /* (TFLOP/s) / (GB/s) = 1e3 FLOP/byte */
  const double mem_tflops = f.ai * kHbmBytesPerUs * 1e-6; /* FLOP/byte x TB/s */
  f.bound = mem_tflops < g_peak_tflops ? "mem" : "mma";
  f.roof_tflops = mem_tflops < g_peak_tflops ? mem_tflops : g_peak_tflops;
  f.of_roof = r->tflops / f.roof_tflops;
  return f;
}

/* vs_ref: the reference's graph time / this row's (0: none) */
static double vs_ref_of(const gemm_result *r, const gemm_result *ref) {
  return ref && ref->ok && r->ok && r->graph > 0 ? ref->graph / r->graph : 0;
}

static void json_row(const gemm_case *g, const gemm_result *r, const gemm_result *ref) {
  if (!g_json) return;
  char shape[80];
  shape_name(g, shape, sizeof shape);
  const roofline rf = roof_of(r);
  bench_json_begin();
  fprintf(g_json,
          "\"op\": \"gemm\", \"shape\": \"%s\", \"dtype\": \"%s\", \"form\": \"%s\", "
          "\"m\": %lld, \"n\": %lld, \"k\": %lld, \"batch\": %lld, \"transb\": %d, "
          "\"requested_backend\": \"%s\", \"pad\": \"%s\", \"autotune\": %d, \"static\": %d, "
          "\"ok\": %d, "
          "\"device_us\": %.3f, \"graph_us\": %.3f, \"latency_us\": %.3f, \"host_us\": %.3f, "
          "\"tflops\": %.2f, \"peak_tflops\": %.1f, \"gbs\": %.1f, \"of_hbm\": %.4f, "
          "\"intensity_flop_per_byte\": %.2f, \"bound\": \"%s\", \"of_roofline\": %.4f, "
          "\"max_rel_err\": %.3g, \"backend\": \"%s\"",
          shape, dt_name(g), kEpNames[g->epilogue], (long long)g->m,
          (long long)g->n, (long long)g->k, (long long)g->batch, g->tb,
          kBackendNames[g->backend], kPadNames[g->pad], g->autotune, g->static_ops, r->ok,
          r->dev, r->graph, r->lat, r->host, r->tflops, g_peak_tflops, r->gbs,
          r->gbs / (kHbmBytesPerUs * 1e-3),
          rf.ai, rf.bound, rf.of_roof, r->err, r->backend);
  const double vs = vs_ref_of(r, ref);
  if (vs > 0) fprintf(g_json, ", \"vs_ref\": %.4f", vs);
  bench_json_str(r->ok ? "plan" : "error", r->why);
  fputs("}", g_json);
}

/* What was asked for beyond the defaults (the JSON's requested_backend, pad,
 * autotune and static), as one string: "wmma/pad-never/tune/static/gelu". */
static void request_name(const gemm_case *g, char *buf, size_t n) {
  snprintf(buf, n, "%s%s%s%s%s%s", kBackendNames[g->backend], g->pad ? "/pad-" : "",
           g->pad ? kPadNames[g->pad] : "", g->autotune ? "/tune" : "",
           g->static_ops ? "/static" : "", g->interleave ? "/gelu" : "");
}

/* The table's shape (the JSON's, + transposes not in the name, + the
 * epilogue) and backend (what ran: +pad padded operands, +epi gko's epilogue
 * pass, +splitK; then what was asked beyond AUTO's defaults). */
static void table_names(const gemm_case *g, const gemm_result *r, char *shape, size_t ns,
                        char *backend, size_t nb) {
  char base[80];
  shape_name(g, base, sizeof base);
  const int tb_named = g->name && (strstr(g->name, "W^T") || !strncmp(g->name, "linear", 6));
  snprintf(shape, ns, "%s%s%s%s%s%s", base, g->ta ? " A^T" : "", g->tb && !tb_named ? " B^T" : "",
           g->epilogue ? "+" : "", g->epilogue ? kEpNames[g->epilogue] : "",
           g->residual ? "+res" : "");
  if (!r->ok) {
    snprintf(backend, nb, "not supported");
    return;
  }
  const char *epi = strstr(r->backend, "+gko-epilogue");
  int w = epi ? snprintf(backend, nb, "%.*s+epi%s", (int)(epi - r->backend), r->backend,
                         epi + strlen("+gko-epilogue"))
              : snprintf(backend, nb, "%s", r->backend);
  if (w > 0 && (size_t)w < nb)
    snprintf(backend + w, nb - (size_t)w, "%s%s%s%s%s", g->pad ? " pad-" : "",
             g->pad ? kPadNames[g->pad] : "", g->autotune ? " tune" : "",
             g->static_ops ? " static" : "", g->interleave ? " +gelu" : "");
}

static void gemm_table(void) {
  bench_table("gemm", 40, 25, "TFLOP/s", "the roofline", 0,
              "gemm: TFLOP/s, of_roof and vs_ref from CUDA-graph replay (graph_us in --json); "
              "of_roof: attained / the roofline ceiling\n"
              "gemm:   at the shape's AI (FLOPs per byte of A, B and D once): the measured matrix "
              "rate, or 4.2 TB/s below the ridge\n"
              "gemm: vs_ref: the same GEMM on cuBLASLt / this row; backend: +pad padded, +epi "
              "gko's epilogue pass, then what was asked");
}

/* ref: the row this one is compared with (cuBLASLt on the same GEMM), or NULL */
static void print_row(const gemm_case *g, const gemm_result *r, const gemm_result *ref) {
  char shape[128], backend[96], req[40], detail[256];
  table_names(g, r, shape, sizeof shape, backend, sizeof backend);
  request_name(g, req, sizeof req);
  const roofline rf = roof_of(r);
  snprintf(detail, sizeof detail,
           "graph_us %.1f, host_us %.2f, %.0f GB/s (%.1f%% of %.1f TB/s), AI %.1f, bound %s, "
           "of_peak %.1f%%, request %s",
           r->graph, r->host, r->gbs, 100.0 * r->gbs / (kHbmBytesPerUs * 1e-3),
           kHbmBytesPerUs * 1e-6, rf.ai, rf.bound,
           g_peak_tflops > 0 ? 100.0 * r->tflops / g_peak_tflops : 0.0, req);
  const bench_row_t row = {"gemm", shape, dt_name(g), backend, r->dev, r->lat, r->tflops,
                           r->ok && g_peak_tflops > 0 && r->gbs > 0 ? rf.of_roof : -1.0,
                           vs_ref_of(r, ref), "cuBLASLt (graph time)", r->err, !r->ok, 0,
                           r->ok ? detail : NULL, r->ok ? r->why : NULL};
  if (!r->ok)
    fprintf(stderr, "gko-bench: gemm %s %s (%s): not supported: %s\n", shape, dt_name(g), req,
            r->why);
  bench_row(&row);
  json_row(g, r, ref);
}

/* Runs one case into *r; returns 1 if a call failed or the error is above
 * tolerance (a plan that cannot be made sets r->ok = 0 and returns 0). */
static int bench_one(gko_handle_t h, cudaStream_t s, const gemm_case *g, gemm_result *r) {
  memset(r, 0, sizeof *r);
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
  GK(gko_gemm_desc_set(desc, GKO_GEMM_ATTR_BACKEND, g->backend));
  GK(gko_gemm_desc_set(desc, GKO_GEMM_ATTR_AUTOTUNE, g->autotune));
  GK(gko_gemm_desc_set(desc, GKO_GEMM_ATTR_STATIC_OPERANDS, g->static_ops));
  if (g->tf32) GK(gko_gemm_desc_set(desc, GKO_GEMM_ATTR_COMPUTE, GKO_GEMM_COMPUTE_TF32));
  gemm_ctx c;
  memset(&c, 0, sizeof c);
  gko_status_t ps = gko_gemm_plan_create(h, desc, &c.plan);
  gko_gemm_desc_destroy(desc);
  if (ps != GKO_STATUS_SUCCESS) {
    snprintf(r->why, sizeof r->why, "%s: %s", gko_status_name(ps), gko_last_error_detail());
    return 0;
  }
  r->ok = 1;
  GK(gko_gemm_workspace_size(c.plan, &c.ws_bytes));
  GK(gko_gemm_plan_describe(c.plan, r->why, sizeof r->why, NULL));
  size_t name_len = strcspn(r->why, ":");
  snprintf(r->backend, sizeof r->backend, "%.*s%s%s%s", (int)(name_len < 16 ? name_len : 16),
           r->why, strstr(r->why, "padded operands") ? "+pad" : "",
           strstr(r->why, "gko's pass") ? "+gko-epilogue" : "",
           strstr(r->why, "split-K") ? "+splitK" : "");
  c.h = h;
  if (g->interleave) {
    CK(cudaMalloc(&c.gx, 4096 * 2));
    CK(cudaMemset(c.gx, 0, 4096 * 2));
  }
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
  bench_fill_repeat(c.a, ha, na, esab);
  bench_fill_repeat(c.b, hb, nb, esab);
  bench_fill_repeat(c.bias, hbias, (size_t)g->n * g->batch, escd);
  if (g->residual) { /* C[e] = the bias block's value e (mod its length) */
    CK(cudaMalloc(&c.c, nd * escd));
    bench_fill_repeat(c.c, hbias, nd, escd);
  }
  c.brot[0] = c.b;
  c.nrot = 1;
  if (g->rotate) {
    const double want = 256e6, one = (double)nb * (double)esab;
    int nr = (int)(want / one) + 1;
    if (nr > kMaxRot) nr = kMaxRot;
    for (int i = 1; i < nr; i++) {
      CK(cudaMalloc(&c.brot[i], nb * esab));
      CK(cudaMemcpy(c.brot[i], c.b, nb * esab, cudaMemcpyDeviceToDevice));
    }
    c.nrot = nr;
  }
  CK(cudaMemset(c.d, 0xff, nd * escd));
  time_case_host(run_gemm, &c, s, &r->dev, &r->lat, &r->host);
  r->graph = time_graph(run_gemm, &c, s, c.nrot > 20 ? c.nrot : 20);

  /* reference on sampled rows of the first batch */
  int rows = g->m <= 16 ? (int)g->m : (g->k * g->n > (int64_t)1 << 24 ? 4 : 16);
  if (g->ref_rows > 0 && g->ref_rows < rows) rows = g->ref_rows;
  void *hd = malloc((size_t)g->n * escd);
  double max_err = 0, max_ref = 0;
  const int act = g->epilogue >> 1, has_bias = g->epilogue & 1;
  for (int rr = 0; rr < rows; rr++) {
    int64_t i = rows == g->m ? rr : (int64_t)((double)rr / rows * (double)g->m);
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
      if (g->residual) sum += bench_to_float(g->cd, hbias, (size_t)(i * g->n + j) % kBlk);
      double ref = bench_act_ref(act, sum), got = bench_to_float(g->cd, hd, (size_t)j);
      double e = fabs(got - ref);
      if (!(e <= max_err)) max_err = e;
      if (fabs(ref) > max_ref) max_ref = fabs(ref);
    }
  }
  r->err = max_err / (max_ref > 0 ? max_ref : 1);
  const double flops = 2.0 * (double)g->m * (double)g->n * (double)g->k * (double)g->batch;
  r->bytes = (double)(na + nb) * (double)esab + (double)nd * (double)escd;
  r->tflops = flops / (r->graph * 1e6);
  r->gbs = r->bytes / (r->graph * 1e3);
  double tol = g->ab == GKO_DTYPE_F32 ? (g->tf32 ? 5e-3 : 1e-5) : (g->cd == GKO_DTYPE_BF16 ? 1.6e-2 : 4e-3);
  free(ha);
  free(hb);
  free(hbias);
  free(hd);
  cudaFree(c.a);
  for (int i = 1; i < c.nrot; i++) cudaFree(c.brot[i]);
  cudaFree(c.b);
  cudaFree(c.d);
  cudaFree(c.bias);
  if (c.c) cudaFree(c.c);
  if (c.gx) cudaFree(c.gx);
  if (c.ws) cudaFree(c.ws);
  gko_gemm_plan_destroy(c.plan);
  if (!(r->err <= tol)) {
    r->bad = 1;
    fprintf(stderr, "gko-bench: gemm %s %lldx%lldx%lld (%s) error %.3g above tolerance %.3g\n",
            dt_name(g), (long long)g->m, (long long)g->n, (long long)g->k,
            kBackendNames[g->backend], r->err, tol);
    return 1;
  }
  return 0;
}

/* Runs and prints one case; `must` makes an unsupported plan a failure;
 * ref: the row it is compared with (vs_ref), or NULL. */
static int run_row(gko_handle_t h, cudaStream_t s, const gemm_case *g, int must,
                   const gemm_result *ref, gemm_result *out) {
  gemm_result r;
  int bad = bench_one(h, s, g, &r);
  print_row(g, &r, ref);
  if (out) *out = r;
  return bad + (must && !r.ok);
}

/* The matrix-rate ceiling: an 8192^3 bf16 GEMM through gko, once per run. */
static void measure_peak(gko_handle_t h, cudaStream_t s) {
  if (g_peak_tflops > 0) return;
  gemm_case g = mk("ceiling", 8192, 8192, 8192, GKO_DTYPE_BF16, 0);
  gemm_result r;
  bench_one(h, s, &g, &r);
  g_peak_tflops = r.tflops;
  printf("# matrix-rate ceiling (8192^3 bf16 through gko, graph replay): %.0f TFLOP/s\n",
         g_peak_tflops);
}

static int parse_of(const char *s, const char *const *names, int n) {
  for (int i = 0; i < n; i++)
    if (!strcmp(s, names[i])) return i;
  return -1;
}

/* ---- suites ---------------------------------------------------------------------- */

/* linear_ffn1: a row's graph time over the plain GEMM's under the row with
 * --verbose; in the summary, for the fused epilogues, the plain GEMM's time
 * over theirs (what the epilogue costs, as a speed ratio). */
static void epilogue_cost(const gemm_case *g, const gemm_result *r, double base) {
  if (g_verbose) printf("#   %.2fx the plain cuBLASLt GEMM\n", r->graph / base);
  if (g->epilogue == GKO_EPILOGUE_NONE || !(base > 0)) return;
  char shape[128], backend[96], label[240];
  table_names(g, r, shape, sizeof shape, backend, sizeof backend);
  snprintf(label, sizeof label, "%s %s %s", shape, dt_name(g), backend);
  bench_stat("gemm fused epilogue vs the plain GEMM (graph time)", 0, base / r->graph, label);
}

static const struct {
  gko_dtype_t dt;
  int tf32;
} kTypes[] = {{GKO_DTYPE_F16, 0}, {GKO_DTYPE_BF16, 0}, {GKO_DTYPE_F32, 1}};

/* The BERT-base and square shapes through AUTO. */
static int suite_shapes(gko_handle_t h, cudaStream_t s) {
  const struct {
    const char *name;
    int64_t m, n, k;
    int big;
  } shapes[] = {{"bert_qkv", 4096, 2304, 768, 0}, {"bert_proj", 4096, 768, 768, 0},
                {"bert_ffn1", 4096, 3072, 768, 0}, {"bert_ffn2", 4096, 768, 3072, 0},
                {"square4k", 4096, 4096, 4096, 0}, {"square8k", 8192, 8192, 8192, 1},
                {"k1027", 4096, 4096, 1027, 0},    {"odd1000", 1000, 1000, 1000, 0}};
  int fails = 0;
  printf("# shapes (AUTO)\n");
  for (int t = 0; t < 3; t++)
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
      if (shapes[i].big && kTypes[t].tf32) continue; /* 8192^3 for f16/bf16 only */
      fprintf(stderr, "\r  gemm %s %s          ", kTypes[t].tf32 ? "tf32" : bench_dtype_name(kTypes[t].dt),
              shapes[i].name);
      gemm_case g = mk(shapes[i].name, shapes[i].m, shapes[i].n, shapes[i].k, kTypes[t].dt,
                       kTypes[t].tf32);
      fails += run_row(h, s, &g, 1, NULL, NULL);
    }
  return fails;
}

/* 4096 x 4096 x 1027: padding never / always (both copies, k rounded up) /
 * auto (sm_80+: only the operand with the odd leading dimension, k kept). */
static int suite_k1027(gko_handle_t h, cudaStream_t s) {
  int fails = 0;
  printf("# k1027: padding variants (auto: misaligned operand only, k kept, on sm_80+;\n"
         "#   always: A and B with k rounded up; never: cuBLASLt on the odd shape)\n");
  for (int t = 0; t < 3; t++)
    for (int pad = 0; pad < 3; pad++) {
      gemm_case g = mk("k1027", 4096, 4096, 1027, kTypes[t].dt, kTypes[t].tf32);
      g.pad = pad;
      fails += run_row(h, s, &g, 1, NULL, NULL);
    }
  return fails;
}

/* The linear layer x W^T (+ bias, + GELU) at BERT FFN1, as F.linear holds
 * it: AUTO, then WMMA forced for the fused GELU-erf (target: <= 1.25x the
 * plain cuBLAS GEMM, and faster than the two-pass path). */
static int suite_ffn1(gko_handle_t h, cudaStream_t s) {
  const int eps[4] = {GKO_EPILOGUE_NONE, GKO_EPILOGUE_BIAS, GKO_EPILOGUE_BIAS_GELU_TANH,
                      GKO_EPILOGUE_BIAS_GELU_ERF};
  int fails = 0;
  printf("# linear_ffn1 4096x3072x768 (x W^T): AUTO per epilogue, then WMMA forced "
         "(vs_ref: against AUTO's row where that ran cuBLASLt)\n");
  for (int t = 0; t < 2; t++) {
    double base = 0;
    gemm_result autos[4];
    for (int e = 0; e < 4; e++) {
      gemm_case g = mk("linear_ffn1", 4096, 3072, 768, kTypes[t].dt, 0);
      g.epilogue = eps[e];
      g.tb = 1;
      fails += run_row(h, s, &g, 1, NULL, &autos[e]);
      if (e == 0) base = autos[e].graph;
      else if (autos[e].ok) epilogue_cost(&g, &autos[e], base);
    }
    const int weps[2] = {GKO_EPILOGUE_NONE, GKO_EPILOGUE_BIAS_GELU_ERF};
    for (int e = 0; e < 2; e++) {
      gemm_case g = mk("linear_ffn1", 4096, 3072, 768, kTypes[t].dt, 0);
      g.epilogue = weps[e];
      g.tb = 1;
      g.backend = GKO_GEMM_BACKEND_WMMA;
      const gemm_result *a = &autos[e ? 3 : 0];
      gemm_result r;
      fails += run_row(h, s, &g, 1, !strncmp(a->backend, "cuBLASLt", 8) ? a : NULL, &r);
      if (r.ok && base > 0) epilogue_cost(&g, &r, base);
    }
  }
  return fails;
}

/* The SM90 backend (CUTLASS sm90 kernels) against cuBLASLt, both forced,
 * x W^T as F.linear holds it: BERT-base at 4096 tokens, 4096^3 and
 * 8192^3, plain; then FFN1's fused epilogues against the plain cuBLASLt
 * GEMM (targets: plain >= 0.95x cuBLASLt; bias + GELU <= 1.08x the plain
 * GEMM's time); then SM90 autotuned (--verbose lists its configurations'
 * times). */
static int suite_sm90(gko_handle_t h, cudaStream_t s) {
  const struct {
    const char *name;
    int64_t m, n, k;
  } shapes[] = {{"bert_qkv", 4096, 2304, 768}, {"bert_proj", 4096, 768, 768},
                {"bert_ffn1", 4096, 3072, 768}, {"bert_ffn2", 4096, 768, 3072},
                {"square4k", 4096, 4096, 4096}, {"square8k", 8192, 8192, 8192}};
  const int eps[4] = {GKO_EPILOGUE_BIAS, GKO_EPILOGUE_BIAS_RELU, GKO_EPILOGUE_BIAS_GELU_TANH,
                      GKO_EPILOGUE_BIAS_GELU_ERF};
  int fails = 0;
  printf("# sm90: SM90 forced vs cuBLASLt forced, x W^T (vs_ref: cuBLASLt's graph time / "
         "SM90's)\n");
  for (int t = 0; t < 2; t++)
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
      gemm_case g = mk(shapes[i].name, shapes[i].m, shapes[i].n, shapes[i].k, kTypes[t].dt, 0);
      g.tb = 1;
      gemm_result rl, rs;
      g.backend = GKO_GEMM_BACKEND_CUBLASLT;
      fails += run_row(h, s, &g, 1, NULL, &rl);
      g.backend = GKO_GEMM_BACKEND_SM90;
      fails += run_row(h, s, &g, 1, &rl, &rs);
      g.autotune = 1;
      fails += run_row(h, s, &g, 1, &rl, NULL);
      g.autotune = 0;
      if (strcmp(shapes[i].name, "bert_ffn1")) {
        /* bias + GELU-erf: SM90 fused against AUTO (cuBLASLt + gko's pass) */
        g.epilogue = GKO_EPILOGUE_BIAS_GELU_ERF;
        fails += run_row(h, s, &g, 1, &rl, NULL);
        g.backend = GKO_GEMM_BACKEND_AUTO;
        fails += run_row(h, s, &g, 1, &rl, NULL);
        continue;
      }
      /* FFN1's epilogues: vs_ref against the plain cuBLASLt GEMM */
      for (int e = 0; e < 4; e++) {
        gemm_result r;
        g.epilogue = eps[e];
        g.backend = GKO_GEMM_BACKEND_SM90;
        fails += run_row(h, s, &g, 1, &rl, &r);
        if (r.ok) epilogue_cost(&g, &r, rl.graph);
        g.backend = GKO_GEMM_BACKEND_AUTO;
        fails += run_row(h, s, &g, 1, &rl, &r);
      }
      /* a residual (beta = 1, C its own buffer), plain and under GELU-erf */
      g.residual = 1;
      for (int e = 0; e < 2; e++) {
        gemm_result r;
        g.epilogue = e ? GKO_EPILOGUE_BIAS_GELU_ERF : GKO_EPILOGUE_BIAS;
        g.backend = GKO_GEMM_BACKEND_SM90;
        fails += run_row(h, s, &g, 1, &rl, &r);
        g.backend = GKO_GEMM_BACKEND_AUTO;
        fails += run_row(h, s, &g, 1, &rl, &r);
      }
      g.residual = 0;
      g.epilogue = GKO_EPILOGUE_BIAS_GELU_ERF;
      g.backend = GKO_GEMM_BACKEND_SM90;
      g.autotune = 1;
      fails += run_row(h, s, &g, 1, &rl, NULL);
      g.autotune = 0;
    }
  return fails;
}

/* 4096^3 with the WMMA backend forced against cuBLASLt (target: >= 35 %). */
static int suite_square(gko_handle_t h, cudaStream_t s) {
  int fails = 0;
  printf("# square4k: WMMA forced vs cuBLASLt\n");
  for (int t = 0; t < 2; t++) {
    gemm_result rl, rw;
    gemm_case g = mk("square4k", 4096, 4096, 4096, kTypes[t].dt, 0);
    g.backend = GKO_GEMM_BACKEND_CUBLASLT;
    fails += run_row(h, s, &g, 1, NULL, &rl);
    g.backend = GKO_GEMM_BACKEND_WMMA;
    fails += run_row(h, s, &g, 1, &rl, &rw);
    if (g_verbose && rl.ok && rw.ok)
      printf("#   WMMA %.0f TFLOP/s = %.1f %% of cuBLASLt's %.0f\n", rw.tflops,
             100.0 * rw.tflops / rl.tflops, rl.tflops);
    /* the transposed-weight form (x W^T) and an odd shape the kernel's
     * predicated edges handle */
    g.tb = 1;
    fails += run_row(h, s, &g, 1, NULL, NULL);
    gemm_case o = mk("odd1000", 1000, 1000, 1000, kTypes[t].dt, 0);
    o.backend = GKO_GEMM_BACKEND_WMMA;
    fails += run_row(h, s, &o, 1, NULL, NULL);
    o.backend = GKO_GEMM_BACKEND_CUBLASLT;
    fails += run_row(h, s, &o, 1, NULL, NULL);
  }
  return fails;
}

/* Decode shapes: m <= 16 rows against n x k weights, both weight
 * layouts (W [n, k] as nn.Linear holds it: transb; B [k, n]), cuBLASLt and
 * WMMA side by side (WMMA also autotuned, and with the weights promised
 * static: a chain of calls that overlap), weights rotated beyond L2.  Target: >= 93 % of the
 * memory floor (bytes of A, B and D once / 4.2 TB/s) in graph time. */
static int suite_decode(gko_handle_t h, cudaStream_t s) {
  const int64_t shapes[4][3] = {{1, 4096, 4096}, {16, 4096, 4096}, {1, 11008, 4096},
                                {16, 11008, 4096}};
  int fails = 0;
  printf("# decode: m x n x k, weights rotated beyond L2; of_roof = the memory floor (bytes at "
         "4.2 TB/s) / graph time\n");
  typedef struct {
    char line[400];
  } summary;
  summary sum[2 * 2 * 4];
  int ns = 0;
  for (int t = 0; t < 2; t++)
    for (int tb = 1; tb >= 0; tb--)
      for (int i = 0; i < 4; i++) {
        /* cuBLASLt, WMMA (the plan's own choice), WMMA autotuned (its
         * bnw x splits variants timed: shows whether the rule picks well),
         * WMMA with the weights promised static */
        gemm_result r[4];
        for (int be = 0; be < 4; be++) {
          gemm_case g = mk(tb ? "decode x.W^T" : "decode x.B", shapes[i][0], shapes[i][1],
                           shapes[i][2], kTypes[t].dt, 0);
          g.tb = tb;
          g.rotate = 1;
          g.backend = be ? GKO_GEMM_BACKEND_WMMA : GKO_GEMM_BACKEND_CUBLASLT;
          g.autotune = be == 2;
          g.static_ops = be == 3 ? GKO_GEMM_STATIC_AB : GKO_GEMM_STATIC_NONE;
          fails += run_row(h, s, &g, 1, be ? &r[0] : NULL, &r[be]);
        }
        double floor_us = r[0].bytes / kHbmBytesPerUs;
        snprintf(sum[ns++].line, sizeof sum[0].line,
                 "%-5s %-6s %2lldx%5lldx%4lld  floor %6.2f us | cuBLASLt %7.2f us %5.1f%% "
                 "lat %6.1f host %5.2f | WMMA %7.2f us %5.1f%% lat %6.1f host %5.2f | %5.2fx "
                 "| WMMA tuned %7.2f us %5.1f%% | WMMA static %7.2f us %5.1f%%",
                 bench_dtype_name(kTypes[t].dt), tb ? "W[n,k]" : "B[k,n]",
                 (long long)shapes[i][0], (long long)shapes[i][1], (long long)shapes[i][2],
                 floor_us, r[0].graph, r[0].ok ? 100.0 * floor_us / r[0].graph : 0.0, r[0].lat,
                 r[0].host, r[1].ok ? r[1].graph : 0.0,
                 r[1].ok ? 100.0 * floor_us / r[1].graph : 0.0, r[1].lat, r[1].host,
                 r[1].ok ? r[0].graph / r[1].graph : 0.0, r[2].ok ? r[2].graph : 0.0,
                 r[2].ok ? 100.0 * floor_us / r[2].graph : 0.0, r[3].ok ? r[3].graph : 0.0,
                 r[3].ok ? 100.0 * floor_us / r[3].graph : 0.0);
      }
  if (g_verbose) {
    printf("# decode summary (graph time; %% = memory floor / time; ratio = cuBLASLt / WMMA)\n");
    for (int i = 0; i < ns; i++) printf("#   %s\n", sum[i].line);
  }
  return fails;
}

/* The decode-shape sweep behind AUTO's backend rule (docs/gemm.md): x W^T
 * f16, k = 4096, m = 1..16 against 1024..14336 weight rows, cuBLASLt and
 * WMMA (plain, and with W promised static), weights rotated beyond L2.
 * Two reference rows per case (the tests check every row); not part of
 * "all". */
/* decode-sweep: x W^T (W [n, k], the nn.Linear layout); decode-sweep-xb:
 * x B (B [k, n]) */
static int suite_decode_sweep(gko_handle_t h, cudaStream_t s, int tb) {
  const int64_t ms[5] = {1, 2, 4, 8, 16}, ns[6] = {1024, 2048, 4096, 8192, 11008, 14336};
  const char *form = tb ? "x.W^T" : "x.B";
  int fails = 0;
  printf("# decode sweep: m x n x 4096 f16 %s, weights rotated beyond L2\n", form);
  char sum[5 * 6][200];
  int nsum = 0;
  for (int i = 0; i < 5; i++)
    for (int j = 0; j < 6; j++) {
      gemm_result r[3];
      for (int be = 0; be < 3; be++) {
        gemm_case g = mk(tb ? "decode x.W^T" : "decode x.B", ms[i], ns[j], 4096, GKO_DTYPE_F16, 0);
        g.tb = tb;
        g.rotate = 1;
        g.ref_rows = 2;
        g.backend = be ? GKO_GEMM_BACKEND_WMMA : GKO_GEMM_BACKEND_CUBLASLT;
        g.static_ops = be == 2 ? GKO_GEMM_STATIC_AB : GKO_GEMM_STATIC_NONE;
        fails += run_row(h, s, &g, 1, be ? &r[0] : NULL, &r[be]);
      }
      const double floor_us = r[0].bytes / kHbmBytesPerUs;
      snprintf(sum[nsum++], sizeof sum[0],
               "%2lldx%5lld floor %6.2f | cuBLASLt %6.2f | WMMA %6.2f | %5.2fx | static %6.2f "
               "%5.2fx",
               (long long)ms[i], (long long)ns[j], floor_us, r[0].graph,
               r[1].ok ? r[1].graph : 0.0, r[1].ok ? r[0].graph / r[1].graph : 0.0,
               r[2].ok ? r[2].graph : 0.0, r[2].ok ? r[0].graph / r[2].graph : 0.0);
    }
  printf("# decode sweep summary, %s (graph us; ratio = cuBLASLt / WMMA)\n", form);
  for (int i = 0; i < nsum; i++) printf("#   %s\n", sum[i]);
  return fails;
}

/* AUTOTUNE on a few cases: the plan's description lists what was timed. */
static int suite_autotune(gko_handle_t h, cudaStream_t s) {
  int fails = 0;
  printf("# autotune (plan times the candidates once)\n");
  gemm_case cases[4];
  cases[0] = mk("k1027", 4096, 4096, 1027, GKO_DTYPE_F32, 1);
  cases[1] = mk("linear_ffn1", 4096, 3072, 768, GKO_DTYPE_F16, 0);
  cases[1].tb = 1;
  cases[1].epilogue = GKO_EPILOGUE_BIAS_GELU_TANH;
  cases[2] = mk("linear_ffn1", 4096, 3072, 768, GKO_DTYPE_F16, 0);
  cases[2].tb = 1;
  cases[2].epilogue = GKO_EPILOGUE_BIAS_GELU_ERF;
  cases[3] = mk("decode x.W^T", 1, 4096, 4096, GKO_DTYPE_F16, 0);
  cases[3].tb = 1;
  cases[3].rotate = 1;
  for (int i = 0; i < 4; i++) {
    cases[i].autotune = 1;
    fails += run_row(h, s, &cases[i], 1, NULL, NULL);
  }
  return fails;
}

static int run_suite(gko_handle_t h, cudaStream_t s, const char *which) {
  const int all = !strcmp(which, "all");
  int fails = 0, any = 0;
  gemm_table();
  measure_peak(h, s);
  if (all || !strcmp(which, "shapes")) fails += suite_shapes(h, s), any = 1;
  if (all || !strcmp(which, "k1027")) fails += suite_k1027(h, s), any = 1;
  if (all || !strcmp(which, "ffn1")) fails += suite_ffn1(h, s), any = 1;
  if (all || !strcmp(which, "square")) fails += suite_square(h, s), any = 1;
  if (!strcmp(which, "sm90")) fails += suite_sm90(h, s), any = 1;
  if (all || !strcmp(which, "decode")) fails += suite_decode(h, s), any = 1;
  if (all || !strcmp(which, "autotune")) fails += suite_autotune(h, s), any = 1;
  if (!strcmp(which, "decode-sweep")) fails += suite_decode_sweep(h, s, 1), any = 1;
  if (!strcmp(which, "decode-sweep-xb")) fails += suite_decode_sweep(h, s, 0), any = 1;
  fprintf(stderr, "\r%40s\r", "");
  if (!any) {
    fprintf(stderr, "gko-bench gemm: unknown suite %s\n", which);
    return 1;
  }
  return fails;
}

int bench_gemm_cmd(gko_handle_t h, cudaStream_t s, int argc, char **argv) {
  gemm_case g = mk(NULL, 4096, 4096, 4096, GKO_DTYPE_F16, 0);
  int out32 = 0;
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : "";
    if (!strcmp(a, "--suite") && i + 1 < argc) return run_suite(h, s, argv[i + 1]);
    else if (!strcmp(a, "--m") && i + 1 < argc) g.m = strtoll(argv[++i], NULL, 0);
    else if (!strcmp(a, "--n") && i + 1 < argc) g.n = strtoll(argv[++i], NULL, 0);
    else if (!strcmp(a, "--k") && i + 1 < argc) g.k = strtoll(argv[++i], NULL, 0);
    else if (!strcmp(a, "--batch") && i + 1 < argc) g.batch = strtoll(argv[++i], NULL, 0);
    else if (!strcmp(a, "--transa")) g.ta = 1;
    else if (!strcmp(a, "--transb")) g.tb = 1;
    else if (!strcmp(a, "--autotune")) g.autotune = 1;
    else if (!strcmp(a, "--rotate")) g.rotate = 1;
    else if (!strcmp(a, "--static")) g.static_ops = GKO_GEMM_STATIC_AB;
    else if (!strcmp(a, "--interleave")) g.interleave = 1;
    else if (!strcmp(a, "--out") && !strcmp(v, "f32")) {
      out32 = 1;
      i++;
    } else if (!strcmp(a, "--dtype") && bench_parse_dtype_tf32(v, &g.ab, &g.tf32)) {
      i++;
    } else if (!strcmp(a, "--epilogue") && bench_parse_epilogue(v) >= 0) {
      g.epilogue = bench_parse_epilogue(v);
      i++;
    } else if (!strcmp(a, "--pad") && parse_of(v, kPadNames, 3) >= 0) {
      g.pad = parse_of(v, kPadNames, 3);
      i++;
    } else if (!strcmp(a, "--backend") && parse_of(v, kBackendNames, 4) >= 0) {
      g.backend = parse_of(v, kBackendNames, 4);
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
  gemm_table();
  measure_peak(h, s);
  return run_row(h, s, &g, 1, NULL, NULL);
}

int bench_gemm_suite(gko_handle_t h, cudaStream_t s) { return run_suite(h, s, "all"); }
