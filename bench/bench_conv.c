/* bench_conv.c -- gko-bench's Conv2d module.
 *
 *   gko-bench conv --n N --c C --h H --w W --k K --r R --s S [--stride S]
 *       [--pad P] [--dilation D] [--groups G] [--layout nhwc|nchw]
 *       [--dtype f16|bf16|f32|tf32] [--epilogue none|bias|bias-relu|...]
 *       [--max-chunk M] [--max-workspace BYTES] [--algo auto|gemm|implicit]
 *   (height and width share stride, pad and dilation here; the library
 *   takes them per axis)
 *
 * Each case: a plan (its description under the row with --verbose),
 * then device time (back-to-back executes between two events, median) and
 * call latency (one execute + stream sync, median), TFLOP/s (2 N K OH OW
 * C/G R S), and the layer's own floor:
 *   floor = (column-matrix bytes written + read + x bytes + y bytes) / copy
 *           bandwidth  +  the GEMM's device time at gko's own GEMM rate,
 * where the GEMM time is measured by running the very GEMMs the plan runs
 * (same shapes, layouts and epilogue, through the public GEMM API, on a
 * scratch column matrix) -- for groups == 1; with groups it is not
 * measured.  The im2col share is (conv time - GEMM time) / conv time: the
 * im2col kernel (plus the filter copy) by difference, since gko-bench links
 * only the public ABI.  An implicit GEMM (im2col fused into the GEMM's
 * loads) would save about that share, less its own extra load cost.
 * Correctness: 64 sampled outputs against a float64 direct convolution of
 * the same inputs (a 1 Mi-element random block repeated), max error
 * relative to max |ref|. */
#include "bench.h"

enum { kBlk = kBenchBlk };

typedef struct {
  const char *name; /* layer label, or NULL */
  gko_dtype_t dt;
  int tf32, layout, epilogue;
  int64_t n, c, h, w, k, r, s, stride, pad, dil, groups, max_chunk, max_ws;
  int64_t algo; /* gko_conv_algo_t */
} conv_case;

typedef struct {
  gko_conv_plan_t plan;
  const void *x, *w, *bias;
  void *y, *ws;
  size_t ws_bytes;
} conv_ctx;

static void run_conv(void *p, cudaStream_t s) {
  conv_ctx *c = p;
  GK(gko_conv_execute(c->plan, c->x, c->w, c->bias, c->y, c->ws, c->ws_bytes, s));
}

typedef struct {
  gko_gemm_plan_t plan;
  const void *a, *b, *bias;
  void *d, *ws;
  size_t ws_bytes;
  int calls;
} gemm_ctx;

static void run_gemm(void *p, cudaStream_t s) {
  gemm_ctx *g = p;
  for (int i = 0; i < g->calls; i++)
    GK(gko_gemm_execute(g->plan, 1.0f, g->a, g->b, 0.0f, NULL, g->d, g->bias, g->ws, g->ws_bytes,
                        s));
}

/* The table: TFLOP/s from dev_us; of_roof = the layer's floor / dev_us; no
 * reference in this program (python/bench/bench_conv.py runs cuDNN). */
static void conv_table(void) {
  bench_table("conv", 41, 19, "TFLOP/s", "its floor", 0,
              "conv: TFLOP/s = 2 N K OH OW C/G R S / dev_us; of_roof = the layer's floor / dev_us, "
              "floor = im2col bytes at the copy\n"
              "conv:   bandwidth + the same GEMMs alone (groups == 1); --verbose: col_MB, gemm_us, "
              "im2col share, plan");
}

/* The GEMM a plan runs per chunk (groups == 1), mirroring src/conv.c's
 * lowering; returns 0 when it cannot be rebuilt here (groups > 1). */
static int make_chunk_gemm(gko_handle_t h, const conv_case *cc, int64_t oh, int64_t ow,
                           int64_t chunk, int direct, int via, gko_gemm_plan_t *plan,
                           size_t *a_elems,
                           size_t *b_elems, size_t *d_elems, int *calls) {
  if (cc->groups != 1) return 0;
  const int64_t es = (int64_t)gko_dtype_size(cc->dt), gel = 16 / es, ohw = oh * ow;
  const int64_t l = cc->c * cc->r * cc->s;
  const int64_t kp = direct ? cc->c : (l + gel - 1) / gel * gel;
  gko_gemm_desc_t d;
  *calls = 1;
  *b_elems = (size_t)(cc->k * kp);
  /* via: an NCHW plan lowered through NHWC runs the NHWC GEMM */
  const int nhwc = cc->layout == GKO_CONV_LAYOUT_NHWC || via;
  if (nhwc) {
    GK(gko_gemm_desc_create(&d, cc->dt, cc->dt, chunk * ohw, cc->k, kp));
    GK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_TRANSB, GKO_OP_T));
    *a_elems = (size_t)(chunk * ohw * kp);
    *d_elems = (size_t)(chunk * ohw * cc->k);
  } else {
    const int64_t ld = direct ? ohw : (ohw + gel - 1) / gel * gel;
    GK(gko_gemm_desc_create(&d, cc->dt, cc->dt, ohw, cc->k, kp));
    GK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_LAYOUT, GKO_LAYOUT_COL_MAJOR));
    GK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_LDA, ld));
    GK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_LDC, ohw));
    GK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_LDD, ohw));
    if (chunk > 1) {
      GK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_BATCH_COUNT, chunk));
      GK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_STRIDE_A, kp * ld));
      GK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_STRIDE_B, 0));
      GK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_STRIDE_C, cc->k * ohw));
      GK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_STRIDE_D, cc->k * ohw));
    }
    *a_elems = (size_t)(chunk * kp * ld);
    *d_elems = (size_t)(chunk * ohw * cc->k);
  }
  GK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_EPILOGUE, cc->epilogue));
  if (cc->tf32) GK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_COMPUTE, GKO_GEMM_COMPUTE_TF32));
  /* as src/conv.c plans the im2col path's GEMMs: batch-invariant (reference:
   * the whole batch's lines of D), 64 KiB of cuBLASLt scratch
   * (GK_CONV_GEMM_SCRATCH there).  With
   * GKO_BENCH_CONV_GEMM_DEFAULT=1 the GEMM alone is a default plan instead
   * (split-K allowed, 32 MiB scratch): the difference is what invariance
   * costs. */
  const char *dflt = getenv("GKO_BENCH_CONV_GEMM_DEFAULT");
  if (!direct && !(dflt && dflt[0] == '1')) {
    GK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_INVARIANT, nhwc ? cc->n * ohw : cc->n * cc->k));
    GK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_MAX_WORKSPACE, 64 * 1024));
  }
  GK(gko_gemm_plan_create(h, d, plan));
  gko_gemm_desc_destroy(d);
  return 1;
}

static int bench_one(gko_handle_t h, cudaStream_t s, const conv_case *cc) {
  const size_t es = gko_dtype_size(cc->dt);
  gko_conv_desc_t desc;
  GK(gko_conv_desc_create(&desc, cc->dt, cc->layout, cc->n, cc->c, cc->h, cc->w, cc->k, cc->r,
                          cc->s));
  const struct {
    gko_conv_attr_t a;
    int64_t v;
  } set[] = {{GKO_CONV_ATTR_STRIDE_H, cc->stride}, {GKO_CONV_ATTR_STRIDE_W, cc->stride},
             {GKO_CONV_ATTR_PAD_H, cc->pad},       {GKO_CONV_ATTR_PAD_W, cc->pad},
             {GKO_CONV_ATTR_DILATION_H, cc->dil},  {GKO_CONV_ATTR_DILATION_W, cc->dil},
             {GKO_CONV_ATTR_GROUPS, cc->groups},   {GKO_CONV_ATTR_EPILOGUE, cc->epilogue},
             {GKO_CONV_ATTR_MAX_CHUNK, cc->max_chunk},
             {GKO_CONV_ATTR_MAX_WORKSPACE, cc->max_ws}, {GKO_CONV_ATTR_ALGO, cc->algo},
             {GKO_CONV_ATTR_COMPUTE, cc->tf32 ? GKO_GEMM_COMPUTE_TF32 : GKO_GEMM_COMPUTE_DEFAULT}};
  for (size_t i = 0; i < sizeof set / sizeof set[0]; i++) GK(gko_conv_desc_set(desc, set[i].a, set[i].v));
  int64_t oh, ow;
  GK(gko_conv_output_shape(desc, &oh, &ow));
  conv_ctx c;
  memset(&c, 0, sizeof c);
  GK(gko_conv_plan_create(h, desc, &c.plan));
  GK(gko_conv_workspace_size(c.plan, &c.ws_bytes));
  int64_t path = 0, chunk = 0, chunks = 0, col = 0;
  GK(gko_conv_plan_get(c.plan, GKO_CONV_INFO_PATH, &path));
  GK(gko_conv_plan_get(c.plan, GKO_CONV_INFO_CHUNK, &chunk));
  GK(gko_conv_plan_get(c.plan, GKO_CONV_INFO_CHUNKS, &chunks));
  GK(gko_conv_plan_get(c.plan, GKO_CONV_INFO_COL_BYTES, &col));
  const int64_t cg = cc->c / cc->groups, kg = cc->k / cc->groups;
  const size_t nx = (size_t)(cc->n * cc->c * cc->h * cc->w), nw = (size_t)(cc->k * cg * cc->r * cc->s);
  const size_t ny = (size_t)(cc->n * cc->k * oh * ow);
  void *dx, *dw, *db, *dy;
  CK(cudaMalloc(&dx, nx * es + 16));
  CK(cudaMalloc(&dw, nw * es + 16));
  CK(cudaMalloc(&db, (size_t)cc->k * es + 16));
  CK(cudaMalloc(&dy, ny * es + 16));
  if (c.ws_bytes) CK(cudaMalloc(&c.ws, c.ws_bytes));
  void *hx = malloc(kBlk * es), *hw = malloc(kBlk * es), *hb = malloc(kBlk * es);
  for (size_t i = 0; i < kBlk; i++) {
    bench_from_float(cc->dt, hx, i, (float)bench_uniform(-1, 1));
    bench_from_float(cc->dt, hw, i, (float)bench_uniform(-1, 1));
    bench_from_float(cc->dt, hb, i, (float)bench_uniform(-1, 1));
  }
  bench_fill_repeat(dx, hx, nx, es);
  bench_fill_repeat(dw, hw, nw, es);
  bench_fill_repeat(db, hb, (size_t)cc->k, es);
  CK(cudaMemset(dy, 0xff, ny * es));
  c.x = dx;
  c.w = dw;
  c.bias = (cc->epilogue & 1) ? db : NULL;
  c.y = dy;
  double dev, lat;
  time_case(run_conv, &c, s, &dev, &lat);

  /* the same GEMMs alone */
  double gemm_us = -1;
  {
    gemm_ctx g;
    memset(&g, 0, sizeof g);
    size_t a_el = 0, b_el = 0, d_el = 0;
    char why[4096] = "";
    GK(gko_conv_plan_describe(c.plan, why, sizeof why, NULL));
    const int via = strstr(why, "through NHWC") != NULL;
    if (make_chunk_gemm(h, cc, oh, ow, chunk, path == GKO_CONV_PATH_DIRECT, via, &g.plan, &a_el,
                        &b_el, &d_el, &g.calls)) {
      void *ga, *gb, *gd;
      CK(cudaMalloc(&ga, a_el * es + 16));
      CK(cudaMalloc(&gb, b_el * es + 16));
      CK(cudaMalloc(&gd, d_el * es + 16));
      /* zeros: the GEMM's speed does not depend on the values */
      CK(cudaMemset(ga, 0, a_el * es));
      CK(cudaMemset(gb, 0, b_el * es));
      GK(gko_gemm_workspace_size(g.plan, &g.ws_bytes));
      if (g.ws_bytes) CK(cudaMalloc(&g.ws, g.ws_bytes));
      g.a = ga;
      g.b = gb;
      g.d = gd;
      g.bias = c.bias;
      g.calls = (int)chunks;
      double gl;
      time_case(run_gemm, &g, s, &gemm_us, &gl);
      cudaFree(ga);
      cudaFree(gb);
      cudaFree(gd);
      if (g.ws) cudaFree(g.ws);
      gko_gemm_plan_destroy(g.plan);
    }
  }

  /* sampled reference */
  void *hy = malloc(es);
  double max_err = 0, max_ref = 0;
  const int act = cc->epilogue >> 1;
  for (int t = 0; t < 64; t++) {
    const int64_t n = (int64_t)(bench_uniform(0, 1) * cc->n) % cc->n;
    const int64_t k = (int64_t)(bench_uniform(0, 1) * cc->k) % cc->k;
    const int64_t y = (int64_t)(bench_uniform(0, 1) * oh) % oh;
    const int64_t x = (int64_t)(bench_uniform(0, 1) * ow) % ow;
    const int64_t g = k / kg;
    double sum = 0;
    for (int64_t ch = 0; ch < cg; ch++)
      for (int64_t r = 0; r < cc->r; r++)
        for (int64_t q = 0; q < cc->s; q++) {
          const int64_t ih = y * cc->stride - cc->pad + r * cc->dil;
          const int64_t iw = x * cc->stride - cc->pad + q * cc->dil;
          if (ih < 0 || ih >= cc->h || iw < 0 || iw >= cc->w) continue;
          const int64_t cin = g * cg + ch;
          const int64_t xi = cc->layout == GKO_CONV_LAYOUT_NCHW
                                 ? ((n * cc->c + cin) * cc->h + ih) * cc->w + iw
                                 : ((n * cc->h + ih) * cc->w + iw) * cc->c + cin;
          const int64_t wi = cc->layout == GKO_CONV_LAYOUT_NCHW
                                 ? ((k * cg + ch) * cc->r + r) * cc->s + q
                                 : ((k * cc->r + r) * cc->s + q) * cg + ch;
          sum += (double)bench_to_float(cc->dt, hx, (size_t)xi % kBlk) *
                 (double)bench_to_float(cc->dt, hw, (size_t)wi % kBlk);
        }
    if (cc->epilogue & 1) sum += bench_to_float(cc->dt, hb, (size_t)k);
    const double ref = bench_act_ref(act, sum);
    const int64_t yi = cc->layout == GKO_CONV_LAYOUT_NCHW ? ((n * cc->k + k) * oh + y) * ow + x
                                                          : ((n * oh + y) * ow + x) * cc->k + k;
    CK(cudaMemcpy(hy, (char *)dy + yi * es, es, cudaMemcpyDeviceToHost));
    const double e = fabs(bench_to_float(cc->dt, hy, 0) - ref);
    if (!(e <= max_err)) max_err = e;
    if (fabs(ref) > max_ref) max_ref = fabs(ref);
  }
  const double rel = max_err / (max_ref > 0 ? max_ref : 1);

  /* report */
  const double flops = 2.0 * cc->n * cc->k * oh * ow * (double)cg * cc->r * cc->s;
  const double col_rw = 2.0 * (double)col * (double)chunks; /* written once, read once */
  const double io = (double)(nx + ny + nw) * es;
  const double floor_us = gemm_us >= 0 ? (col_rw + io) / (g_copy_gbs * 1e3) + gemm_us : -1;
  const double share = gemm_us >= 0 ? (dev - gemm_us) / dev : -1;
  char shape[96];
  snprintf(shape, sizeof shape, "%s%sN%lld %lld>%lld %lldx%lld %lldx%lld s%lld p%lld%s",
           cc->name ? cc->name : "", cc->name ? " " : "", (long long)cc->n, (long long)cc->c,
           (long long)cc->k, (long long)cc->h, (long long)cc->w, (long long)cc->r,
           (long long)cc->s, (long long)cc->stride, (long long)cc->pad,
           cc->groups > 1 ? " g" : "");
  if (cc->groups > 1) {
    size_t u = strlen(shape);
    snprintf(shape + u, sizeof shape - u, "%lld", (long long)cc->groups);
  }
  const char *dtn = cc->tf32 ? "tf32" : bench_dtype_name(cc->dt);
  const char *lay = cc->layout == GKO_CONV_LAYOUT_NHWC ? "nhwc" : "nchw";
  char pathd[48];
  const char *path_name = path == GKO_CONV_PATH_DIRECT     ? "direct"
                          : path == GKO_CONV_PATH_IMPLICIT ? "implicit"
                                                           : "im2col";
  snprintf(pathd, sizeof pathd, "%s chunk %lld x%lld", path_name, (long long)chunk,
           (long long)chunks);
  size_t need = 0;
  GK(gko_conv_plan_describe(c.plan, NULL, 0, &need));
  char *plan = malloc(need);
  GK(gko_conv_plan_describe(c.plan, plan, need, NULL));
  {
    char tshape[128], detail[256], gemm_s[24] = "-", share_s[24] = "-", floor_s[24] = "-";
    snprintf(tshape, sizeof tshape, "%s %s%s%s", shape, lay, cc->epilogue ? "+" : "",
             cc->epilogue ? bench_epilogue_names[cc->epilogue] : "");
    if (gemm_us >= 0) snprintf(gemm_s, sizeof gemm_s, "%.1f", gemm_us);
    if (share >= 0) snprintf(share_s, sizeof share_s, "%.0f%%", 100 * share);
    if (floor_us > 0) snprintf(floor_s, sizeof floor_s, "%.1f", floor_us);
    snprintf(detail, sizeof detail,
             "col_MB %.1f (written + read), gemm_us %s (the same GEMMs alone), im2col share %s, "
             "floor_us %s, workspace %zu B",
             col_rw / 1e6, gemm_s, share_s, floor_s, c.ws_bytes);
    const bench_row_t row = {"conv", tshape, dtn, pathd, dev, lat, flops / (dev * 1e6),
                             floor_us > 0 ? floor_us / dev : -1.0, 0, NULL, rel, 0, 0, detail,
                             plan};
    bench_row(&row);
  }
  if (g_json) {
    bench_json_begin();
    fprintf(g_json,
            "\"op\": \"conv\", \"shape\": \"%s\", \"dtype\": \"%s\", \"layout\": \"%s\", "
            "\"epilogue\": \"%s\", \"n\": %lld, \"c\": %lld, \"h\": %lld, \"w\": %lld, \"k\": %lld, "
            "\"r\": %lld, \"s\": %lld, \"stride\": %lld, \"pad\": %lld, \"dilation\": %lld, "
            "\"groups\": %lld, \"device_us\": %.3f, \"latency_us\": %.3f, \"flops\": %.0f, "
            "\"tflops\": %.2f, \"col_bytes_written\": %.0f, \"col_bytes_read\": %.0f, "
            "\"io_bytes\": %.0f, \"gemm_us\": %.3f, \"im2col_share\": %.3f, \"floor_us\": %.3f, "
            "\"copy_gbs\": %.1f, \"path\": \"%s\", \"chunk\": %lld, \"chunks\": %lld, "
            "\"workspace_bytes\": %zu, \"max_rel_err\": %.3g",
            shape, dtn, lay, bench_epilogue_names[cc->epilogue], (long long)cc->n,
            (long long)cc->c, (long long)cc->h, (long long)cc->w, (long long)cc->k,
            (long long)cc->r, (long long)cc->s, (long long)cc->stride, (long long)cc->pad,
            (long long)cc->dil, (long long)cc->groups, dev, lat, flops, flops / (dev * 1e6),
            col_rw / 2, col_rw / 2, io, gemm_us, share, floor_us, g_copy_gbs,
            path_name, (long long)chunk,
            (long long)chunks, c.ws_bytes, rel);
    bench_json_str("plan", plan);
    fputs("}", g_json);
  }
  free(plan);
  const double tol = cc->dt == GKO_DTYPE_F32 ? (cc->tf32 ? 5e-3 : 1e-5)
                     : cc->dt == GKO_DTYPE_BF16 ? 1.6e-2 : 4e-3;
  free(hx);
  free(hw);
  free(hb);
  free(hy);
  cudaFree(dx);
  cudaFree(dw);
  cudaFree(db);
  cudaFree(dy);
  if (c.ws) cudaFree(c.ws);
  gko_conv_plan_destroy(c.plan);
  gko_conv_desc_destroy(desc);
  if (!(rel <= tol)) {
    fprintf(stderr, "gko-bench: conv %s error %.3g above tolerance %.3g\n", shape, rel, tol);
    return 1;
  }
  return 0;
}

int bench_conv_cmd(gko_handle_t h, cudaStream_t s, int argc, char **argv) {
  conv_case cc = {NULL, GKO_DTYPE_F16, 0, GKO_CONV_LAYOUT_NHWC, 0,
                  32, 64, 56, 56, 64, 3, 3, 1, 1, 1, 1, 0, -1, GKO_CONV_ALGO_AUTO};
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : "";
    const struct {
      const char *flag;
      int64_t *v;
    } nums[] = {{"--n", &cc.n},           {"--c", &cc.c},
                {"--h", &cc.h},           {"--w", &cc.w},
                {"--k", &cc.k},           {"--r", &cc.r},
                {"--s", &cc.s},           {"--stride", &cc.stride},
                {"--pad", &cc.pad},       {"--dilation", &cc.dil},
                {"--groups", &cc.groups}, {"--max-chunk", &cc.max_chunk},
                {"--max-workspace", &cc.max_ws}};
    int64_t *num = NULL;
    for (size_t f = 0; f < sizeof nums / sizeof nums[0]; f++)
      if (!strcmp(a, nums[f].flag)) num = nums[f].v;
    if (num && i + 1 < argc) {
      *num = strtoll(argv[++i], NULL, 0);
    } else if (!strcmp(a, "--layout") && (!strcmp(v, "nhwc") || !strcmp(v, "nchw"))) {
      cc.layout = !strcmp(v, "nhwc") ? GKO_CONV_LAYOUT_NHWC : GKO_CONV_LAYOUT_NCHW;
      i++;
    } else if (!strcmp(a, "--dtype") && bench_parse_dtype_tf32(v, &cc.dt, &cc.tf32)) {
      i++;
    } else if (!strcmp(a, "--algo") &&
               (!strcmp(v, "auto") || !strcmp(v, "gemm") || !strcmp(v, "implicit"))) {
      cc.algo = !strcmp(v, "auto") ? GKO_CONV_ALGO_AUTO
                : !strcmp(v, "gemm") ? GKO_CONV_ALGO_GEMM
                                     : GKO_CONV_ALGO_IMPLICIT;
      i++;
    } else if (!strcmp(a, "--epilogue") && bench_parse_epilogue(v) >= 0) {
      cc.epilogue = bench_parse_epilogue(v);
      i++;
    } else {
      fprintf(stderr, "gko-bench conv: unknown flag or value: %s %s\n", a, v);
      return 1;
    }
  }
  conv_table();
  return bench_one(h, s, &cc);
}

/* ResNet-18's convolution layers (C -> K, H = W, R = S, stride, pad). */
static const struct {
  const char *name;
  int64_t c, k, hw, rs, stride, pad;
} kResNet18[] = {{"conv1", 3, 64, 224, 7, 2, 3},       {"l1_3x3", 64, 64, 56, 3, 1, 1},
                 {"l2_3x3s2", 64, 128, 56, 3, 2, 1},   {"l2_3x3", 128, 128, 28, 3, 1, 1},
                 {"l2_ds1x1", 64, 128, 56, 1, 2, 0},   {"l3_3x3", 256, 256, 14, 3, 1, 1},
                 {"l4_3x3", 512, 512, 7, 3, 1, 1}};

int bench_conv_suite(gko_handle_t h, cudaStream_t s) {
  const struct {
    gko_dtype_t dt;
    int layout;
  } kinds[] = {{GKO_DTYPE_F16, GKO_CONV_LAYOUT_NHWC},
               {GKO_DTYPE_F16, GKO_CONV_LAYOUT_NCHW},
               {GKO_DTYPE_F32, GKO_CONV_LAYOUT_NCHW}};
  const int64_t batches[3] = {32, 1, 128};
  int fails = 0;
  conv_table();
  for (int b = 0; b < 3; b++)
    for (int t = 0; t < 3; t++)
      for (size_t i = 0; i < sizeof kResNet18 / sizeof kResNet18[0]; i++) {
        fprintf(stderr, "\r  conv N=%lld %s %s %s          ", (long long)batches[b],
                bench_dtype_name(kinds[t].dt), kinds[t].layout ? "nhwc" : "nchw",
                kResNet18[i].name);
        conv_case cc = {kResNet18[i].name, kinds[t].dt, 0, kinds[t].layout, 0,
                        batches[b], kResNet18[i].c, kResNet18[i].hw, kResNet18[i].hw,
                        kResNet18[i].k, kResNet18[i].rs, kResNet18[i].rs,
                        kResNet18[i].stride, kResNet18[i].pad, 1, 1, 0, -1,
                        GKO_CONV_ALGO_AUTO};
        fails += bench_one(h, s, &cc);
      }
  fprintf(stderr, "\r%50s\r", "");
  return fails;
}
