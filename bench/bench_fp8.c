/* bench_fp8.c -- gko-bench's FP8 module.
 *
 *   gko-bench fp8 [--m M --n N --k K] [--fast] [--autotune] [--out bf16|f16|f32|e4m3]
 *   gko-bench fp8 --decode [--m M --n N --k K] [--x bf16|f16] [--static]   (m 1 by default)
 *   gko-bench fp8 --suite        (the default suite: GEMM shapes, decode, quantize)
 *
 * GEMM: D = A B^T (row-major, B stored n x k: both operands k-contiguous, as
 * cuBLASLt's FP8 kernels need), e4m3 x e4m3 with per-tensor factors, D bf16
 * by default; timed by CUDA-graph replay next to the bf16 GEMM of the same
 * shape through gko (cuBLASLt), whose time over FP8's is vs_ref.  max_err:
 * the largest |D - ref| over 16 sampled rows relative to max |ref|, ref in
 * float64 from the FP8 values themselves (no quantization error in it).
 * Quantize / dequantize: 2^28 elements, GB/s = bytes read + written, of_roof
 * of the measured copy bandwidth; max_err 0 means every sampled byte is the
 * exactly rounded one. */
#include "bench.h"

/* ---- FP8 on the host -------------------------------------------------------- */

/* The value of an FP8 byte (fmt 0: E4M3, 1: E5M2), exact. */
static double fp8_value(int fmt, unsigned v) {
  const int eb = fmt ? 5 : 4, mb = fmt ? 2 : 3, bias = fmt ? 15 : 7;
  const int s = v >> 7, e = (v >> mb) & ((1 << eb) - 1), m = v & ((1 << mb) - 1);
  double r;
  if (fmt && e == 31)
    r = m ? NAN : INFINITY;
  else if (!fmt && e == 15 && m == 7)
    r = NAN;
  else if (e == 0)
    r = ldexp((double)m, 1 - bias - mb);
  else
    r = ldexp((double)((1 << mb) | m), e - bias - mb);
  return s ? -r : r;
}

/* Random E4M3 bytes with |value| in [1/16, 2]: products and sums that stay
 * far from the format's limits. */
static void fill_e4m3(unsigned char *blk, size_t n) {
  unsigned char codes[256];
  int nc = 0;
  for (unsigned v = 0; v < 256; v++) {
    const double x = fabs(fp8_value(0, v));
    if (x >= 1.0 / 16 && x <= 2) codes[nc++] = (unsigned char)v;
  }
  for (size_t i = 0; i < n; i++) blk[i] = codes[(int)bench_uniform(0, nc) % nc];
}

/* ---- GEMM -------------------------------------------------------------------------- */

typedef struct {
  gko_gemm_plan_t plan;
  const void *a, *b;
  void *d, *ws;
  size_t ws_bytes;
  const float *sa, *sb;
} fp8_gemm_ctx;

static void run_fp8_gemm(void *p, cudaStream_t s) {
  fp8_gemm_ctx *c = p;
  GK(gko_gemm_execute_scaled(c->plan, 1.0f, c->a, c->sa, c->b, c->sb, 0.0f, NULL, c->d, NULL, NULL,
                             NULL, c->ws, c->ws_bytes, s));
}

static gko_gemm_plan_t plan_tn(gko_handle_t h, gko_dtype_t ab, gko_dtype_t cd, int64_t m, int64_t n,
                               int64_t k, int fast) {
  gko_gemm_desc_t d;
  gko_gemm_plan_t p;
  GK(gko_gemm_desc_create(&d, ab, cd, m, n, k));
  GK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_TRANSB, GKO_OP_T));
  if (fast & 1)
    GK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_COMPUTE, GKO_GEMM_COMPUTE_FP8_FAST_ACCUMULATE));
  if (fast & 2) GK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_AUTOTUNE, 1));
  GK(gko_gemm_plan_create(h, d, &p));
  GK(gko_gemm_desc_destroy(d));
  return p;
}

/* Times e4m3 (and bf16 as the reference) for one shape; checks 16 rows. */
static int fp8_gemm_one(gko_handle_t h, cudaStream_t s, const char *name, int64_t m, int64_t n,
                        int64_t k, int fast, gko_dtype_t out) {
  const size_t na = (size_t)m * k, nb = (size_t)n * k, nd = (size_t)m * n;
  const size_t esd = gko_dtype_size(out);
  unsigned char *hblk = malloc(2 * (size_t)kBenchBlk);
  fill_e4m3(hblk, 2 * (size_t)kBenchBlk);
  void *a8, *b8, *d, *a16, *b16, *d16, *ws = NULL, *scales;
  CK(cudaMalloc(&a8, na));
  CK(cudaMalloc(&b8, nb));
  CK(cudaMalloc(&d, nd * esd));
  CK(cudaMalloc(&a16, na * 2));
  CK(cudaMalloc(&b16, nb * 2));
  CK(cudaMalloc(&d16, nd * 2));
  CK(cudaMalloc(&scales, 8 * sizeof(float)));
  bench_fill_repeat(a8, hblk, na, 1);
  bench_fill_repeat(b8, hblk + kBenchBlk, nb, 1); /* not a copy of A */
  /* scale_a * scale_b = 1: the bf16 GEMM sees the same values; 16 bytes apart */
  const float hs[8] = {0.5f, 0, 0, 0, 2.0f};
  CK(cudaMemcpy(scales, hs, sizeof hs, cudaMemcpyHostToDevice));
  /* the bf16 operands: the same values (exact in bf16) */
  GK(gko_dequantize(h, GKO_DTYPE_F8E4M3, a8, GKO_DTYPE_BF16, a16, 1, (int64_t)na, GKO_SCALE_TENSOR,
                    NULL, s));
  GK(gko_dequantize(h, GKO_DTYPE_F8E4M3, b8, GKO_DTYPE_BF16, b16, 1, (int64_t)nb, GKO_SCALE_TENSOR,
                    NULL, s));
  CK(cudaStreamSynchronize(s));

  fp8_gemm_ctx c = {plan_tn(h, GKO_DTYPE_F8E4M3, out, m, n, k, fast),
                    a8,
                    b8,
                    d,
                    NULL,
                    0,
                    (const float *)scales,
                    (const float *)scales + 4};
  fp8_gemm_ctx r = {
      plan_tn(h, GKO_DTYPE_BF16, GKO_DTYPE_BF16, m, n, k, fast & 2), a16, b16, d16, NULL, 0, NULL, NULL};
  size_t w1, w2;
  GK(gko_gemm_workspace_size(c.plan, &w1));
  GK(gko_gemm_workspace_size(r.plan, &w2));
  c.ws_bytes = r.ws_bytes = w1 > w2 ? w1 : w2;
  if (c.ws_bytes) CK(cudaMalloc(&ws, c.ws_bytes));
  c.ws = r.ws = ws;
  const double us8 = time_graph(run_fp8_gemm, &c, s, 20);
  const double us16 = time_graph(run_fp8_gemm, &r, s, 20);

  /* accuracy: 16 rows spread over D against float64 */
  const int rows = m < 16 ? (int)m : 16;
  unsigned char *ha = malloc((size_t)k), *hb = malloc(nb);
  void *hd = malloc((size_t)n * esd);
  CK(cudaMemcpy(hb, b8, nb, cudaMemcpyDeviceToHost));
  double tab[256], max_err = 0, max_ref = 0;
  for (unsigned v = 0; v < 256; v++) tab[v] = fp8_value(0, v);
  for (int t = 0; t < rows; t++) {
    const int64_t i = (int64_t)t * (m / rows);
    CK(cudaMemcpy(ha, (char *)a8 + i * k, (size_t)k, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(hd, (char *)d + (size_t)i * n * esd, (size_t)n * esd, cudaMemcpyDeviceToHost));
    for (int64_t j = 0; j < n; j++) {
      double acc = 0;
      const unsigned char *bj = hb + j * k;
      for (int64_t q = 0; q < k; q++) acc += tab[ha[q]] * tab[bj[q]];
      acc *= (double)hs[0] * hs[4];
      const double got = out == GKO_DTYPE_F8E4M3 ? fp8_value(0, ((unsigned char *)hd)[j])
                                                 : bench_to_float(out, hd, (size_t)j);
      const double e = fabs(got - acc);
      if (!(e <= max_err)) max_err = e;
      if (fabs(acc) > max_ref) max_ref = fabs(acc);
    }
  }
  const double rel = max_err / (max_ref > 0 ? max_ref : 1);
  char shape[64], detail[96], form[24];
  snprintf(shape, sizeof shape, "%s %lldx%lldx%lld", name, (long long)m, (long long)n,
           (long long)k);
  snprintf(form, sizeof form, "e4m3->%s%s%s",
           out == GKO_DTYPE_F8E4M3 ? "e4m3" : bench_dtype_name(out), (fast & 1) ? " fast" : "",
           (fast & 2) ? " tuned" : "");
  snprintf(detail, sizeof detail, "bf16 (cuBLASLt through gko) %.1f us = %.0f TFLOP/s", us16,
           2.0 * m * n * k / us16 / 1e6);
  const bench_row_t row = {
      "gemm_fp8", shape,      form,          "cuBLASLt", us8, -1, 2.0 * m * n * k / us8 / 1e6,
      -1,         us16 / us8, "fp8 vs bf16", rel,        0,   0,  detail,
      NULL};
  bench_row(&row);
  GK(gko_gemm_plan_destroy(c.plan));
  GK(gko_gemm_plan_destroy(r.plan));
  cudaFree(a8), cudaFree(b8), cudaFree(d), cudaFree(a16), cudaFree(b16), cudaFree(d16);
  cudaFree(scales);
  if (ws) cudaFree(ws);
  free(hblk), free(ha), free(hb), free(hd);
  /* f32 accumulation of k products of 2^-8-accurate... inputs: exact up to
   * the output rounding (bf16 2^-9 relative) and f32 sums */
  const double tol = out == GKO_DTYPE_F8E4M3 ? 0.07 : out == GKO_DTYPE_F32 ? 1e-5 : 1e-2;
  if (!(rel <= ((fast & 1) ? 5e-2 : tol))) {
    fprintf(stderr, "gko-bench: fp8 %s error %.3g above tolerance\n", shape, rel);
    return 1;
  }
  return 0;
}

/* ---- decode with FP8 weights ----------------------------------------------------- */

/* Weight-only FP8: m rows of bf16 (or f16) activations against n x k e4m3
 * weights (x W^T), next to gko's 16-bit decode of the same shape (AUTO: its
 * decode kernel or cuBLASLt), both with the weights rotated through copies
 * totalling at least 256 MB (they come from HBM), graph replay; floor =
 * the bytes of W, x and D once at 4.2 TB/s, the decode tables' ceiling. */
enum { kDecodeRot = 64 };
static const double kDecodeBytesPerUs = 4.2e6;

typedef struct {
  gko_gemm_plan_t plan;
  const void *x;
  void *w[kDecodeRot];
  int nw, i;
  void *d, *ws;
  size_t ws_bytes;
  const float *sb;
} decode_ctx;

static void run_decode(void *p, cudaStream_t s) {
  decode_ctx *c = p;
  GK(gko_gemm_execute_scaled(c->plan, 1.0f, c->x, NULL, c->w[c->i], c->sb, 0.0f, NULL, c->d, NULL,
                             NULL, NULL, c->ws, c->ws_bytes, s));
  c->i = (c->i + 1) % c->nw;
}

static gko_gemm_plan_t plan_decode(gko_handle_t h, gko_dtype_t xdt, gko_dtype_t wdt, int64_t m,
                                   int64_t n, int64_t k, int stat, char *text, size_t cap) {
  gko_gemm_desc_t d;
  gko_gemm_plan_t p;
  GK(gko_gemm_desc_create(&d, xdt, xdt, m, n, k));
  GK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_TRANSB, GKO_OP_T));
  if (wdt != xdt) GK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_B_DTYPE, wdt));
  if (stat) GK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_STATIC_OPERANDS, GKO_GEMM_STATIC_B));
  GK(gko_gemm_plan_create(h, d, &p));
  GK(gko_gemm_desc_destroy(d));
  if (text) GK(gko_gemm_plan_describe(p, text, cap, NULL));
  return p;
}

/* Allocates copies of one weight block set until they total 256 MB. */
static int decode_weights(decode_ctx *c, size_t bytes, const void *first) {
  c->nw = (int)((256u << 20) / bytes + 1);
  if (c->nw > kDecodeRot) c->nw = kDecodeRot;
  if (c->nw < 1) c->nw = 1;
  for (int r = 0; r < c->nw; r++) {
    CK(cudaMalloc(&c->w[r], bytes));
    CK(cudaMemcpy(c->w[r], first, bytes, cudaMemcpyDeviceToDevice));
  }
  return c->nw;
}

static int fp8_decode_one(gko_handle_t h, cudaStream_t s, int64_t m, int64_t n, int64_t k,
                          gko_dtype_t xdt, int stat) {
  const size_t nw = (size_t)n * k, nx = (size_t)m * k, nd = (size_t)m * n;
  unsigned char *hblk = malloc(2 * (size_t)kBenchBlk);
  fill_e4m3(hblk, 2 * (size_t)kBenchBlk);
  void *w8, *w16, *x8, *x, *d, *d16, *sc, *ws = NULL;
  CK(cudaMalloc(&w8, nw));
  CK(cudaMalloc(&w16, nw * 2));
  CK(cudaMalloc(&x8, nx));
  CK(cudaMalloc(&x, nx * 2));
  CK(cudaMalloc(&d, nd * 2));
  CK(cudaMalloc(&d16, nd * 2));
  CK(cudaMalloc(&sc, 16));
  bench_fill_repeat(w8, hblk, nw, 1);
  bench_fill_repeat(x8, hblk + kBenchBlk, nx, 1);
  const float one = 1.0f;
  CK(cudaMemcpy(sc, &one, 4, cudaMemcpyHostToDevice));
  /* the 16-bit weights and the activations: the same values, exact */
  GK(gko_dequantize(h, GKO_DTYPE_F8E4M3, w8, xdt, w16, 1, (int64_t)nw, GKO_SCALE_TENSOR, NULL, s));
  GK(gko_dequantize(h, GKO_DTYPE_F8E4M3, x8, xdt, x, 1, (int64_t)nx, GKO_SCALE_TENSOR, NULL, s));
  CK(cudaStreamSynchronize(s));
  char text8[1024], text16[1024];
  decode_ctx c = {0}, r = {0};
  c.plan = plan_decode(h, xdt, GKO_DTYPE_F8E4M3, m, n, k, stat, text8, sizeof text8);
  r.plan = plan_decode(h, xdt, xdt, m, n, k, stat, text16, sizeof text16);
  c.x = r.x = x;
  c.d = d;
  r.d = d16;
  c.sb = (const float *)sc;
  size_t w1, w2;
  GK(gko_gemm_workspace_size(c.plan, &w1));
  GK(gko_gemm_workspace_size(r.plan, &w2));
  c.ws_bytes = r.ws_bytes = w1 > w2 ? w1 : w2;
  if (c.ws_bytes) CK(cudaMalloc(&ws, c.ws_bytes));
  c.ws = r.ws = ws;
  decode_weights(&c, nw, w8);
  decode_weights(&r, nw * 2, w16);
  const double us8 = time_graph(run_decode, &c, s, c.nw);
  const double us16 = time_graph(run_decode, &r, s, r.nw);
  /* accuracy: D of the last call against float64 of the same values */
  c.i = 0;
  run_decode(&c, s);
  CK(cudaStreamSynchronize(s));
  unsigned char *hw = malloc(nw), *hx8 = malloc(nx);
  void *hd = malloc(nd * 2);
  CK(cudaMemcpy(hw, w8, nw, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(hx8, x8, nx, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(hd, d, nd * 2, cudaMemcpyDeviceToHost));
  double tab[256], max_err = 0, max_ref = 0;
  for (unsigned v = 0; v < 256; v++) tab[v] = fp8_value(0, v);
  /* rows 0, m - 1 and two between */
  const int64_t rows[4] = {0, m / 3, 2 * m / 3, m - 1};
  for (int t = 0; t < 4; t++) {
    const int64_t i = rows[t];
    if (t > 0 && i == rows[t - 1]) continue;
    for (int64_t j = 0; j < n; j++) {
      double acc = 0;
      for (int64_t q = 0; q < k; q++) acc += tab[hx8[i * k + q]] * tab[hw[j * k + q]];
      const double e = fabs(bench_to_float(xdt, hd, (size_t)(i * n + j)) - acc);
      if (!(e <= max_err)) max_err = e;
      if (fabs(acc) > max_ref) max_ref = fabs(acc);
    }
  }
  const double rel = max_err / (max_ref > 0 ? max_ref : 1);
  const double floor_us = (double)(nw + 2 * nx + 2 * nd) / kDecodeBytesPerUs;
  char shape[64], form[32], detail[200];
  snprintf(shape, sizeof shape, "decode %lldx%lldx%lld", (long long)m, (long long)n,
           (long long)k);
  snprintf(form, sizeof form, "%s x e4m3%s", bench_dtype_name(xdt), stat ? " static" : "");
  snprintf(detail, sizeof detail,
           "floor %.2f us; %s decode (gko AUTO, %s) %.2f us = %.0f %% of its floor",
           floor_us, bench_dtype_name(xdt), strncmp(text16, "WMMA", 4) ? "cuBLASLt" : "WMMA",
           us16, 100.0 * (double)(2 * nw + 2 * nx + 2 * nd) / kDecodeBytesPerUs / us16);
  const bench_row_t row = {"decode_w8", shape, form, "gko", us8, -1,
                           (double)(nw + 2 * nx + 2 * nd) / us8 / 1e3, floor_us / us8,
                           us16 / us8, "fp8 weights vs 16-bit", rel, 0, 0, detail, text8};
  bench_row(&row);
  GK(gko_gemm_plan_destroy(c.plan));
  GK(gko_gemm_plan_destroy(r.plan));
  for (int q = 0; q < c.nw; q++) cudaFree(c.w[q]);
  for (int q = 0; q < r.nw; q++) cudaFree(r.w[q]);
  cudaFree(w8), cudaFree(w16), cudaFree(x8), cudaFree(x), cudaFree(d), cudaFree(d16);
  cudaFree(sc);
  if (ws) cudaFree(ws);
  free(hblk), free(hw), free(hx8), free(hd);
  /* exact products, f32 sums, one rounding to the 16-bit output */
  if (!(rel <= 1e-2)) {
    fprintf(stderr, "gko-bench: fp8 %s error %.3g above tolerance\n", shape, rel);
    return 1;
  }
  return 0;
}

static void fp8_decode_table(void) {
  bench_table("fp8", 34, 8, "GB/s", "the decode floor", 0,
              "decode_w8: m x n x k, x W^T with e4m3 weights (weight-only FP8), weights rotated "
              "beyond L2, CUDA-graph replay; of_roof = floor (bytes at 4.2 TB/s) / time; "
              "vs_ref = gko's 16-bit decode of the same shape (same run) / this row's");
}

/* ---- quantize / dequantize --------------------------------------------------------- */

typedef struct {
  gko_handle_t h;
  int dir; /* 0 quantize (with amax), 1 dequantize */
  gko_dtype_t wide;
  int64_t n;
  void *x, *y;
  float *scale, *amax;
} q_ctx;

static void run_q(void *p, cudaStream_t s) {
  q_ctx *c = p;
  if (c->dir)
    GK(gko_dequantize(c->h, GKO_DTYPE_F8E4M3, c->y, c->wide, c->x, 1, c->n, GKO_SCALE_TENSOR,
                      c->scale, s));
  else
    GK(gko_quantize(c->h, c->wide, c->x, GKO_DTYPE_F8E4M3, c->y, 1, c->n, GKO_SCALE_TENSOR,
                    c->scale, c->amax, s));
}

static int q_one(gko_handle_t h, cudaStream_t s, int dir, gko_dtype_t wide, int64_t n) {
  const size_t es = gko_dtype_size(wide);
  q_ctx c = {h, dir, wide, n, NULL, NULL, NULL, NULL};
  CK(cudaMalloc(&c.x, (size_t)n * es));
  CK(cudaMalloc(&c.y, (size_t)n));
  CK(cudaMalloc((void **)&c.scale, 8 * sizeof(float)));
  c.amax = c.scale + 4;
  void *hblk = malloc(kBenchBlk * es);
  for (size_t i = 0; i < kBenchBlk; i++)
    bench_from_float(wide, hblk, i, (float)bench_uniform(-3, 3));
  bench_fill_repeat(c.x, hblk, (size_t)n, es);
  const float sc = 100.0f; /* 3 * 100 = 300 < 448 */
  CK(cudaMemcpy(c.scale, &sc, sizeof sc, cudaMemcpyHostToDevice));
  if (dir) { /* dequantize what quantize made */
    c.dir = 0;
    run_q(&c, s);
    c.dir = 1;
  }
  double dev, lat;
  time_case(run_q, &c, s, &dev, &lat);
  /* check the first block: bytes against the host's nearest-even rounding */
  const size_t chk = (size_t)n < (size_t)kBenchBlk ? (size_t)n : (size_t)kBenchBlk;
  unsigned char *hy = malloc(chk);
  void *hx = malloc(chk * es);
  CK(cudaMemcpy(hy, c.y, chk, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(hx, c.x, chk * es, cudaMemcpyDeviceToHost));
  double max_err = 0;
  for (size_t i = 0; i < chk; i++) {
    const double q = fp8_value(0, hy[i]);
    const double want = dir ? q * sc : (double)((float)bench_to_float(wide, hblk, i) * sc);
    const double got = dir ? bench_to_float(wide, hx, i) : q;
    /* quantize: within half a step of the product (E4M3: 2^-4 relative,
     * 2^-10 absolute below 2^-6); dequantize: the output's rounding */
    const double e = fabs(got - want) / (fabs(want) > 0x1p-6 ? fabs(want) : 0x1p-6);
    if (!(e <= max_err)) max_err = e;
  }
  char shape[32], detail[64];
  snprintf(shape, sizeof shape, "n=%lld", (long long)n);
  snprintf(detail, sizeof detail, "host_us %.2f%s", g_last_host_us, dir ? "" : ", amax");
  const report_extra x = {dir ? "dequantize" : "quantize", shape, "gko", 0, NULL, 0, detail, NULL};
  report_ex(dir ? "dequantize" : "quantize", shape, bench_dtype_name(wide), "e4m3", dev, lat,
            (double)n * (es + 1), max_err, &x);
  cudaFree(c.x), cudaFree(c.y), cudaFree(c.scale);
  free(hblk), free(hy), free(hx);
  const double tol = dir ? (wide == GKO_DTYPE_F32 ? 1e-6 : 8e-3) : 0.0625;
  if (!(max_err <= tol)) {
    fprintf(stderr, "gko-bench: %s %s error %.3g above %.3g\n", dir ? "dequantize" : "quantize",
            bench_dtype_name(wide), max_err, tol);
    return 1;
  }
  return 0;
}

/* ---- the module ------------------------------------------------------------------ */

/* FP8 Tensor Cores: compute capability 8.9 and newer (else says so, 0). */
static int fp8_gpu(gko_handle_t h) {
  int dev = 0;
  int64_t cc = 0;
  GK(gko_handle_device(h, &dev));
  GK(gko_query(GKO_QUERY_COMPUTE_CAPABILITY, dev, &cc));
  if (cc >= 89) return 1;
  printf("# fp8: skipped: FP8 GEMM needs compute capability 8.9 or newer (this GPU: %lld)\n",
         (long long)cc);
  return 0;
}

/* weight-only FP8: mma.sync with bf16, compute capability 8.0 and newer */
static int fp8_decode_gpu(gko_handle_t h) {
  int dev = 0;
  int64_t cc = 0;
  GK(gko_handle_device(h, &dev));
  GK(gko_query(GKO_QUERY_COMPUTE_CAPABILITY, dev, &cc));
  if (cc >= 80) return 1;
  printf("# fp8 decode: skipped: weight-only FP8 needs compute capability 8.0 or newer (this "
         "GPU: %lld)\n",
         (long long)cc);
  return 0;
}

static void fp8_gemm_table(void) {
  bench_table("fp8", 34, 8, "TFLOP/s", "-", 0,
              "fp8: e4m3 GEMM D = A B^T (B stored n x k), per-tensor factors, CUDA-graph "
              "replay; vs_ref = the bf16 GEMM's time (same run) / this row's; max_err over 16 "
              "rows vs float64 of the FP8 values, relative to max |ref|");
}

int bench_fp8_cmd(gko_handle_t h, cudaStream_t s, int argc, char **argv) {
  int64_t m = 4096, n = 4096, k = 4096;
  int fast = 0, decode = 0, stat = 0, m_given = 0;
  gko_dtype_t out = GKO_DTYPE_BF16, xdt = GKO_DTYPE_BF16;
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : "";
    if (!strcmp(a, "--suite"))
      return bench_fp8_suite(h, s);
    else if (!strcmp(a, "--m") && i + 1 < argc)
      m = strtoll(argv[++i], NULL, 0), m_given = 1;
    else if (!strcmp(a, "--n") && i + 1 < argc)
      n = strtoll(argv[++i], NULL, 0);
    else if (!strcmp(a, "--k") && i + 1 < argc)
      k = strtoll(argv[++i], NULL, 0);
    else if (!strcmp(a, "--fast"))
      fast |= 1;
    else if (!strcmp(a, "--autotune"))
      fast |= 2;
    else if (!strcmp(a, "--decode"))
      decode = 1;
    else if (!strcmp(a, "--static"))
      stat = 1;
    else if (!strcmp(a, "--x") && bench_parse_dtype(v, &xdt))
      i++;
    else if (!strcmp(a, "--out") && !strcmp(v, "e4m3"))
      out = GKO_DTYPE_F8E4M3, i++;
    else if (!strcmp(a, "--out") && bench_parse_dtype(v, &out))
      i++;
    else {
      fprintf(stderr, "gko-bench fp8: unknown flag %s\n", a);
      return 1;
    }
  }
  if (decode) {
    if (!m_given)
      m = 1;
    if (!fp8_decode_gpu(h)) return 0;
    fp8_decode_table();
    return fp8_decode_one(h, s, m, n, k, xdt, stat);
  }
  if (!fp8_gpu(h)) return 0;
  fp8_gemm_table();
  return fp8_gemm_one(h, s, "gemm", m, n, k, fast, out);
}

/* The suite's decode rows: the shapes, plain and static, both x types. */
static int fp8_decode_rows(gko_handle_t h, cudaStream_t s) {
  int fails = 0;
  fp8_decode_table();
  static const int64_t kDecode[][3] = {{1, 4096, 4096}, {1, 11008, 4096}, {16, 4096, 4096},
                                       {16, 11008, 4096}};
  for (size_t i = 0; i < sizeof kDecode / sizeof kDecode[0]; i++)
    for (int stat = 0; stat < 2; stat++)
      for (int x = 0; x < 2; x++) {
        fprintf(stderr, "\r  fp8 decode %lldx%lld%s      ", (long long)kDecode[i][0],
                (long long)kDecode[i][1], stat ? " static" : "");
        fails += fp8_decode_one(h, s, kDecode[i][0], kDecode[i][1], kDecode[i][2],
                                x ? GKO_DTYPE_F16 : GKO_DTYPE_BF16, stat);
      }
  return fails;
}

int bench_fp8_suite(gko_handle_t h, cudaStream_t s) {
  static const struct {
    const char *name;
    int64_t m, n, k;
  } kShapes[] = {{"square", 8192, 8192, 8192}, {"square", 4096, 4096, 4096},
                 {"qkv", 4096, 2304, 768},     {"proj", 4096, 768, 768},
                 {"ffn1", 4096, 3072, 768},    {"ffn2", 4096, 768, 3072}};
  int fails = 0;
  if (!fp8_gpu(h)) /* below 8.9: weight-only FP8 still runs (sm_80+) */
    return fp8_decode_gpu(h) ? fp8_decode_rows(h, s) : 0;
  fp8_gemm_table();
  for (size_t i = 0; i < sizeof kShapes / sizeof kShapes[0]; i++)
    for (int fast = 0; fast < 2; fast++) {
      fprintf(stderr, "\r  fp8 gemm %s %s      ", kShapes[i].name, fast ? "fast" : "");
      fails += fp8_gemm_one(h, s, kShapes[i].name, kShapes[i].m, kShapes[i].n, kShapes[i].k, fast,
                            GKO_DTYPE_BF16);
    }
  fails += fp8_gemm_one(h, s, "ffn1", 4096, 3072, 768, 0, GKO_DTYPE_F8E4M3);
  /* autotuned (both the FP8 and the bf16 plan): cuBLASLt's candidates timed */
  for (int fast = 2; fast < 4; fast++) {
    fails += fp8_gemm_one(h, s, "square", 8192, 8192, 8192, fast, GKO_DTYPE_BF16);
    fails += fp8_gemm_one(h, s, "ffn1", 4096, 3072, 768, fast, GKO_DTYPE_BF16);
  }
  fails += fp8_decode_rows(h, s);
  bench_table("fp8", 18, 7, "GB/s", "the copy bandwidth", 1,
              "quantize (with amax) / dequantize: GB/s = bytes read + written / dev_us; "
              "of_roof = of the measured copy bandwidth");
  const gko_dtype_t wide[3] = {GKO_DTYPE_F32, GKO_DTYPE_F16, GKO_DTYPE_BF16};
  for (int d = 0; d < 3; d++)
    for (int dir = 0; dir < 2; dir++) {
      fprintf(stderr, "\r  fp8 %s %s           ", dir ? "dequantize" : "quantize",
              bench_dtype_name(wide[d]));
      fails += q_one(h, s, dir, wide[d], (int64_t)1 << 28);
    }
  fprintf(stderr, "\r%40s\r", "");
  return fails;
}
