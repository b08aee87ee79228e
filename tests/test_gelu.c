/* test_gelu.c -- GELU forward/backward on the GPU against a float64 host
 * reference.  Tolerances (stated once, used everywhere):
 *   forward f32:       8 ulp of the exact value (|ref| >= FLT_MIN); below
 *                      FLT_MIN an absolute FLT_MIN (subnormals may flush);
 *   forward f16/bf16:  1 ulp of the exactly rounded value (bf16 below
 *                      FLT_MIN: absolute FLT_MIN);
 *   backward:          the same ulp bound plus a relative error of the
 *                      derivative's terms (8 f32-epsilon for f32, 1e-4 for
 *                      f16/bf16) times |dy| * (|term1| + |term2|), because
 *                      gelu' has a zero near x = -0.75 where the two terms
 *                      cancel;
 *   the far tail:      where Phi or the sigmoid is subnormal in f32, an
 *                      absolute FLT_MIN times what multiplies it (see
 *                      fwd_extra / grad_extra).
 * Every output buffer is poisoned (NaN) before the call, inputs are fresh
 * random numbers (seed printed; GKO_TEST_SEED replays). */
#include <float.h>

#include "common.h"

/* ---- reference ------------------------------------------------------------ */

static const double kA = 1.5957691216057308; /* 2*sqrt(2/pi) */
static const double kB = 1.5957691216057308 * 0.044715;

/* value and the two terms of the derivative (for the error bound) */
static void ref_gelu(int approx, double x, double *y, double *g, double *g_terms) {
  if (isnan(x)) {
    *y = *g = x;
    *g_terms = 0;
    return;
  }
  if (approx == GKO_GELU_ERF) {
    double cdf = 0.5 * erfc(-x / sqrt(2.0));
    double pdf = exp(-0.5 * x * x) / sqrt(2.0 * M_PI);
    *y = isinf(x) ? (x > 0 ? x : -0.0) : x * cdf;
    double t2 = isinf(x) ? 0.0 : x * pdf;
    *g = cdf + t2;
    *g_terms = fabs(cdf) + fabs(t2);
  } else {
    double xc = fabs(x) > 1e4 ? copysign(1e4, x) : x;
    double u2 = xc * (kA + kB * xc * xc);
    double q = exp(-fabs(u2));
    double s = u2 >= 0 ? 1.0 / (1.0 + q) : q / (1.0 + q);
    double sd = q / ((1.0 + q) * (1.0 + q));
    *y = isinf(x) ? (x > 0 ? x : -0.0) : x * s;
    double t2 = xc * sd * (kA + 3.0 * kB * xc * xc);
    *g = s + t2;
    *g_terms = fabs(s) + fabs(t2);
  }
}

/* ---- inputs ------------------------------------------------------------------ */

/* A mixture that covers the interesting ranges: the bulk, the negative tail,
 * large magnitudes. */
static double draw(gko_dtype_t dt) {
  double lim = dt == GKO_DTYPE_F16 ? 60000.0 : 1e30;
  uint64_t k = t_next() % 10;
  double v;
  if (k < 4) v = 3.0 * t_normal();
  else if (k < 7) v = t_uniform(-14.0, 14.0);
  else if (k < 9) v = t_uniform(-9.0, 0.0);
  else v = (t_next() & 1 ? -1 : 1) * exp(t_uniform(log(1e-20), log(lim)));
  return v;
}

/* Is `got` within tolerance of the exact value `ref` for dtype dt?  extra is
 * an additional absolute allowance (backward's cancellation term). */
static int within(gko_dtype_t dt, double got, double ref, double extra) {
  if (isnan(ref)) return isnan(got);
  if (isnan(got)) return 0;
  if (got == ref) return 1;
  double err = fabs(got - ref);
  if (err <= extra) return 1;
  if (dt != GKO_DTYPE_F16 && fabs(ref) < FLT_MIN && err <= FLT_MIN) return 1;
  if (dt == GKO_DTYPE_F32) return t_ulp32((float)got, (float)ref) <= 8;
  /* 16-bit formats: compare with the exactly rounded reference, inf included
   * (inf is one ulp above the largest finite value) */
  uint16_t rb = dt == GKO_DTYPE_F16 ? t_double_to_f16(ref) : t_double_to_bf16(ref);
  uint16_t gb = dt == GKO_DTYPE_F16 ? t_double_to_f16(got) : t_double_to_bf16(got);
  if ((rb & 0x7fff) == 0 && (gb & 0x7fff) == 0) return 1; /* +-0 */
  return t_ulp16(gb, rb) <= 1;
}

/* Far in the negative tail Phi(x) or sigmoid(2u) drop below FLT_MIN (x <
 * about -13 for erf, -10 for tanh) and are subnormal in f32: they are
 * accurate to about FLT_MIN absolute, not relatively.  So the result may be
 * off by that times what multiplies it (|x| forward; |dy| (1 + |x|)
 * backward). */
static double fwd_extra(double x) { return (1.0 + fabs(x)) * FLT_MIN; }

static double grad_extra(gko_dtype_t dt, double x, double dy, double terms) {
  double rel = dt == GKO_DTYPE_F32 ? 8.0 * FLT_EPSILON : 1e-4;
  return rel * fabs(dy) * terms + 2.0 * fabs(dy) * (1.0 + fabs(x)) * FLT_MIN;
}

/* Runs one forward (dir 0) or backward (dir 1) call on host arrays and checks
 * every element; returns the number of mismatches (first few printed).
 * offsets are in elements, applied to the device pointers. */
static int64_t run_check(gko_handle_t h, int dir, int approx, gko_dtype_t dt, int64_t n,
                         const void *xh, const void *dyh, int xoff, int yoff, int dyoff,
                         int inplace) {
  size_t es = gko_dtype_size(dt);
  size_t bytes = (size_t)n * es;
  char *xd = t_dalloc(bytes + 16 * es);
  char *yd = inplace ? xd : t_dalloc(bytes + 16 * es);
  char *dyd = dir ? t_dalloc(bytes + 16 * es) : NULL;
  t_memset(yd, T_POISON_BYTE, bytes + 16 * es);
  t_h2d(xd + xoff * es, xh, bytes);
  if (dir) t_h2d(dyd + dyoff * es, dyh, bytes);
  char *xp = xd + xoff * es, *yp = inplace ? xp : yd + yoff * es;
  gko_status_t s = dir ? gko_gelu_backward(h, approx, dt, n, dyd + dyoff * es, xp, yp, NULL)
                       : gko_gelu_forward(h, approx, dt, n, xp, yp, NULL);
  cr_assert_eq(s, GKO_STATUS_SUCCESS, "%s", gko_last_error_detail());
  T_CUDA(cudaDeviceSynchronize());
  void *out = malloc(bytes + 16 * es);
  t_d2h(out, inplace ? xd : yd, bytes + 16 * es);
  int64_t bad = 0;
  const char *o = (const char *)out + (inplace ? xoff : yoff) * es;
  for (int64_t i = 0; i < n; i++) {
    double x = t_hv_get(dt, xh, i), y, g, terms;
    ref_gelu(approx, x, &y, &g, &terms);
    double got = t_hv_get(dt, o, i);
    double dy = dir ? t_hv_get(dt, dyh, i) : 0;
    double ref = dir ? dy * g : y;
    if (dir && (isinf(dy) || isnan(dy))) ref = dy * g;
    int ok = within(dt, got, ref, dir ? grad_extra(dt, x, dy, terms) : fwd_extra(x));
    if (!ok && bad++ < 5)
      cr_log_error("%s %s %s n=%lld i=%lld x=%.9g%s%.9g: got %.9g want %.9g",
                   dir ? "backward" : "forward", approx ? "tanh" : "erf", t_dtype_name(dt),
                   (long long)n, (long long)i, x, dir ? " dy=" : "", dy, got, ref);
  }
  /* bytes outside [yoff, yoff+n) untouched (still poison) */
  if (!inplace) {
    const unsigned char *ob = out;
    for (size_t b = 0; b < (size_t)yoff * es; b++)
      if (ob[b] != T_POISON_BYTE) bad++;
    for (size_t b = (size_t)(yoff + n) * es; b < bytes + 16 * es; b++)
      if (ob[b] != T_POISON_BYTE) bad++;
  }
  free(out);
  cudaFree(xd);
  if (!inplace) cudaFree(yd);
  if (dyd) cudaFree(dyd);
  return bad;
}

static void *random_array(gko_dtype_t dt, int64_t n) {
  void *a = malloc((size_t)n * gko_dtype_size(dt) + 1);
  for (int64_t i = 0; i < n; i++) t_hv_set(dt, a, i, draw(dt));
  return a;
}

static const gko_dtype_t kDtypes[3] = {GKO_DTYPE_F32, GKO_DTYPE_F16, GKO_DTYPE_BF16};

Test(gelu, random_lengths_all_dtypes_both_forms_both_directions) {
  uint64_t seed;
  gko_handle_t h = t_gpu_setup(&seed);
  const int64_t lens[] = {1, 2, 7, 8, 9, 31, 33, 1000, 65537, (1 << 20) + 3};
  for (int d = 0; d < 3; d++)
    for (int approx = 0; approx < 2; approx++)
      for (int dir = 0; dir < 2; dir++)
        for (size_t l = 0; l < sizeof lens / sizeof lens[0]; l++) {
          void *x = random_array(kDtypes[d], lens[l]);
          void *dy = random_array(kDtypes[d], lens[l]);
          int64_t bad = run_check(h, dir, approx, kDtypes[d], lens[l], x, dy, 0, 0, 0, 0);
          cr_expect_eq(bad, 0, "seed %llu: %lld mismatches (%s %s dir %d n %lld)",
                       (unsigned long long)seed, (long long)bad, t_dtype_name(kDtypes[d]),
                       approx ? "tanh" : "erf", dir, (long long)lens[l]);
          free(x);
          free(dy);
        }
  gko_destroy(h);
}

/* Every 16-bit pattern (NaN, Inf, subnormals, the whole tail) through both
 * forms and both directions. */
Test(gelu, exhaustive_f16_bf16) {
  uint64_t seed;
  gko_handle_t h = t_gpu_setup(&seed);
  const int64_t n = 65536;
  uint16_t *x = malloc(n * 2), *dy = malloc(n * 2);
  for (int d = 1; d < 3; d++) {
    for (int64_t i = 0; i < n; i++) {
      x[i] = (uint16_t)i;
      t_hv_set(kDtypes[d], dy, i, t_uniform(-4, 4));
    }
    for (int approx = 0; approx < 2; approx++)
      for (int dir = 0; dir < 2; dir++) {
        int64_t bad = run_check(h, dir, approx, kDtypes[d], n, x, dy, 0, 0, 0, 0);
        cr_expect_eq(bad, 0, "seed %llu: %s %s dir %d: %lld mismatches",
                     (unsigned long long)seed, t_dtype_name(kDtypes[d]), approx ? "tanh" : "erf",
                     dir, (long long)bad);
      }
  }
  free(x);
  free(dy);
  gko_destroy(h);
}

Test(gelu, special_values_f32) {
  T_REQUIRE_GPU();
  gko_handle_t h = t_handle();
  const float v[] = {NAN, -NAN, INFINITY, -INFINITY, 0.0f, -0.0f, FLT_MAX, -FLT_MAX,
                     1e-40f, -1e-40f, FLT_MIN, -FLT_MIN, 1e20f, -1e20f, 3e12f, -3e12f,
                     1e4f, -1e4f, 10.0f, -10.0f, -5.0f, -6.0f, -7.0f, -8.0f, -9.0f,
                     -11.0f, -12.0f, -13.0f, -0.75f, -0.7518f, 0.5f, 1.0f, 2.0f, 5.0f};
  int64_t n = sizeof v / sizeof v[0];
  float dy[sizeof v / sizeof v[0]];
  for (int64_t i = 0; i < n; i++) dy[i] = 1.0f + (float)i / 8;
  for (int approx = 0; approx < 2; approx++)
    for (int dir = 0; dir < 2; dir++)
      cr_expect_eq(run_check(h, dir, approx, GKO_DTYPE_F32, n, v, dy, 0, 0, 0, 0), 0,
                   "approx %d dir %d", approx, dir);
  /* The documented specials, bit for bit. */
  float *d = t_dalloc(4 * 4), out[4];
  const float s[4] = {NAN, INFINITY, -INFINITY, 0.0f};
  for (int approx = 0; approx < 2; approx++) {
    t_h2d(d, s, sizeof s);
    T_OK(gko_gelu_forward(h, approx, GKO_DTYPE_F32, 4, d, d, NULL));
    t_d2h(out, d, sizeof out);
    cr_expect(isnan(out[0]));
    cr_expect(isinf(out[1]) && out[1] > 0);
    cr_expect(out[2] == 0.0f && signbit(out[2]), "gelu(-inf) = %g", out[2]);
    cr_expect(out[3] == 0.0f);
  }
  cudaFree(d);
  gko_destroy(h);
}

/* The negative tail keeps relative accuracy: a 1 + erf formulation returns 0
 * or garbage here. */
Test(gelu, negative_tail_relative_accuracy) {
  T_REQUIRE_GPU();
  gko_handle_t h = t_handle();
  const int64_t n = 4096;
  float *x = malloc(n * 4), *dy = malloc(n * 4);
  for (int64_t i = 0; i < n; i++) {
    x[i] = -3.0f - 10.0f * (float)i / n; /* [-3, -13) */
    dy[i] = 1.0f;
  }
  for (int approx = 0; approx < 2; approx++)
    for (int dir = 0; dir < 2; dir++)
      cr_expect_eq(run_check(h, dir, approx, GKO_DTYPE_F32, n, x, dy, 0, 0, 0, 0), 0);
  free(x);
  free(dy);
  gko_destroy(h);
}

/* Every combination of element offsets for x, y (and dy): the vector path
 * when they agree modulo 16 bytes, the scalar path when not. */
Test(gelu, unaligned_pointers_and_short_lengths) {
  uint64_t seed;
  gko_handle_t h = t_gpu_setup(&seed);
  const int64_t lens[] = {1, 3, 8, 15, 17, 33, 100, 4099};
  for (int d = 0; d < 3; d++)
    for (size_t l = 0; l < sizeof lens / sizeof lens[0]; l++) {
      void *x = random_array(kDtypes[d], lens[l]);
      void *dy = random_array(kDtypes[d], lens[l]);
      for (int xo = 0; xo < 8; xo++)
        for (int yo = 0; yo < 8; yo += 3) {
          int dir = (xo + yo) & 1;
          int64_t bad = run_check(h, dir, (xo >> 1) & 1, kDtypes[d], lens[l], x, dy, xo, yo,
                                  (xo + 1) % 8, 0);
          cr_expect_eq(bad, 0, "seed %llu %s n=%lld xoff=%d yoff=%d",
                       (unsigned long long)seed, t_dtype_name(kDtypes[d]), (long long)lens[l], xo,
                       yo);
        }
      free(x);
      free(dy);
    }
  gko_destroy(h);
}

Test(gelu, in_place) {
  gko_handle_t h = t_gpu_setup(NULL);
  for (int d = 0; d < 3; d++)
    for (int off = 0; off < 3; off++) {
      int64_t n = 100003;
      void *x = random_array(kDtypes[d], n);
      void *dy = random_array(kDtypes[d], n);
      cr_expect_eq(run_check(h, 0, off & 1, kDtypes[d], n, x, dy, off, off, off, 1), 0);
      cr_expect_eq(run_check(h, 1, off & 1, kDtypes[d], n, x, dy, off, off, off, 1), 0);
      free(x);
      free(dy);
    }
  gko_destroy(h);
}

/* 2^28 + 3 elements from an unaligned start (the benchmark size), and
 * 2^31 + 5 (index arithmetic past int32), checked with a lookup table of the
 * reference for every f16 input. */
static void big_f16(int64_t n) {
  gko_handle_t h = t_handle();
  size_t bytes = (size_t)(n + 1) * 2;
  size_t free_b = 0, total_b = 0;
  T_CUDA(cudaMemGetInfo(&free_b, &total_b));
  if (free_b < bytes + (1ull << 28)) cr_skip_test("needs %zu bytes of device memory", bytes);
  uint16_t table[65536];
  for (int i = 0; i < 65536; i++) {
    double y, g, t;
    ref_gelu(GKO_GELU_ERF, t_f16_to_float((uint16_t)i), &y, &g, &t);
    table[i] = t_double_to_f16(y);
  }
  uint16_t *x = malloc(bytes), *out = malloc(bytes);
  cr_assert(x && out);
  uint64_t a = (t_next() | 1) & 0xffff, b = t_next() & 0xffff;
  for (int64_t i = 0; i < n + 1; i++) x[i] = (uint16_t)(a * (uint64_t)i + b);
  uint16_t *d = t_dalloc(bytes);
  t_h2d(d, x, bytes);
  T_OK(gko_gelu_forward(h, GKO_GELU_ERF, GKO_DTYPE_F16, n, d + 1, d + 1, NULL));
  T_CUDA(cudaDeviceSynchronize());
  t_d2h(out, d, bytes);
  int64_t bad = out[0] != x[0];
  for (int64_t i = 1; i < n + 1; i++) {
    uint16_t want = table[x[i]], got = out[i];
    int nan_w = (want & 0x7c00) == 0x7c00 && (want & 0x3ff);
    int nan_g = (got & 0x7c00) == 0x7c00 && (got & 0x3ff);
    if (nan_w || nan_g) {
      bad += nan_w != nan_g;
      continue;
    }
    if (((want | got) & 0x7fff) == 0) continue;
    if (t_ulp16(got, want) > 1 && bad++ < 5)
      cr_log_error("i=%lld x=%04x got %04x want %04x", (long long)i, x[i], got, want);
  }
  cr_expect_eq(bad, 0, "%lld mismatches at n = %lld", (long long)bad, (long long)n);
  cudaFree(d);
  free(x);
  free(out);
  gko_destroy(h);
}

Test(gelu, huge_2pow28) {
  T_REQUIRE_GPU();
  t_seed();
  big_f16((1ll << 28) + 3);
}

Test(gelu, huge_past_int32, .timeout = 300) {
  T_REQUIRE_GPU();
  t_seed();
  big_f16((1ll << 31) + 5);
}

Test(gelu, zero_length_touches_nothing) {
  T_REQUIRE_GPU();
  gko_handle_t h = t_handle();
  T_OK(gko_gelu_forward(h, GKO_GELU_ERF, GKO_DTYPE_F32, 0, NULL, NULL, NULL));
  T_OK(gko_gelu_backward(h, GKO_GELU_TANH, GKO_DTYPE_BF16, 0, NULL, NULL, NULL, NULL));
  gko_destroy(h);
}

Test(gelu, streams_and_graph_capture) {
  gko_handle_t h = t_gpu_setup(NULL);
  const int64_t n = 1000003;
  void *x = random_array(GKO_DTYPE_F16, n);
  uint16_t *xd = t_dalloc(n * 2), *y1 = t_dalloc(n * 2), *y2 = t_dalloc(n * 2);
  t_h2d(xd, x, n * 2);
  cudaStream_t st;
  T_CUDA(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  T_OK(gko_gelu_forward(h, GKO_GELU_ERF, GKO_DTYPE_F16, n, xd, y1, st));
  T_OK(gko_gelu_forward(h, GKO_GELU_ERF, GKO_DTYPE_F16, n, xd, y1, cudaStreamPerThread));
  T_CUDA(cudaStreamSynchronize(st));
  T_CUDA(cudaStreamSynchronize(cudaStreamPerThread));
  t_memset(y2, T_POISON_BYTE, n * 2);
  cudaGraph_t g;
  cudaGraphExec_t ge;
  T_CUDA(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
  gko_status_t s = gko_gelu_forward(h, GKO_GELU_ERF, GKO_DTYPE_F16, n, xd, y2, st);
  T_CUDA(cudaStreamEndCapture(st, &g));
  cr_assert_eq(s, GKO_STATUS_SUCCESS, "under capture: %s", gko_last_error_detail());
  T_CUDA(cudaGraphInstantiate(&ge, g, 0));
  for (int r = 0; r < 3; r++) T_CUDA(cudaGraphLaunch(ge, st));
  T_CUDA(cudaStreamSynchronize(st));
  uint16_t *a = malloc(n * 2), *b = malloc(n * 2);
  t_d2h(a, y1, n * 2);
  t_d2h(b, y2, n * 2);
  cr_expect_eq(memcmp(a, b, n * 2), 0, "graph replay differs from the eager result");
  free(a);
  free(b);
  free(x);
  cudaGraphExecDestroy(ge);
  cudaGraphDestroy(g);
  cudaStreamDestroy(st);
  cudaFree(xd);
  cudaFree(y1);
  cudaFree(y2);
  gko_destroy(h);
}

/* Under capture, memory the graph itself allocates (cudaMallocAsync on the
 * capturing stream) is accepted: the driver reports such an address as
 * unregistered until the graph runs, and gko must not take it for pageable
 * host memory. */
Test(gelu, graph_allocated_buffers_under_capture) {
  gko_handle_t h = t_gpu_setup(NULL);
  const int64_t n = 100003;
  void *x = random_array(GKO_DTYPE_F16, n);
  uint16_t *xd = t_dalloc(n * 2), *y1 = t_dalloc(n * 2), *y2 = t_dalloc(n * 2);
  t_h2d(xd, x, n * 2);
  cudaStream_t st;
  T_CUDA(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  T_OK(gko_gelu_forward(h, GKO_GELU_ERF, GKO_DTYPE_F16, n, xd, y1, st));
  T_CUDA(cudaMemsetAsync(y2, T_POISON_BYTE, n * 2, st));
  T_CUDA(cudaStreamSynchronize(st));
  cudaGraph_t g;
  cudaGraphExec_t ge;
  void *tmp_in = NULL, *tmp_out = NULL;
  T_CUDA(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
  T_CUDA(cudaMallocAsync(&tmp_in, n * 2, st));
  T_CUDA(cudaMallocAsync(&tmp_out, n * 2, st));
  T_CUDA(cudaMemcpyAsync(tmp_in, xd, n * 2, cudaMemcpyDeviceToDevice, st));
  {
    enum cudaStreamCaptureMode m = cudaStreamCaptureModeRelaxed;
    cudaThreadExchangeStreamCaptureMode(&m);
    struct cudaPointerAttributes pa;
    const cudaError_t pe = cudaPointerGetAttributes(&pa, tmp_out);
    cudaThreadExchangeStreamCaptureMode(&m);
    cr_log_info("a graph-allocated address during capture: %s, memory type %d (0: unregistered)",
                cudaGetErrorString(pe), pe == cudaSuccess ? (int)pa.type : -1);
  }
  gko_status_t s = gko_gelu_forward(h, GKO_GELU_ERF, GKO_DTYPE_F16, n, tmp_in, tmp_out, st);
  char detail[512];
  snprintf(detail, sizeof detail, "%s", gko_last_error_detail());
  T_CUDA(cudaMemcpyAsync(y2, tmp_out, n * 2, cudaMemcpyDeviceToDevice, st));
  T_CUDA(cudaFreeAsync(tmp_in, st));
  T_CUDA(cudaFreeAsync(tmp_out, st));
  const cudaError_t ce = cudaStreamEndCapture(st, &g);
  cr_assert_eq(s, GKO_STATUS_SUCCESS, "graph-allocated buffers refused: %s: %s", gko_status_name(s), detail);
  cr_assert_eq(ce, cudaSuccess, "capture invalidated: %s", cudaGetErrorString(ce));
  T_CUDA(cudaGraphInstantiate(&ge, g, 0));
  for (int r = 0; r < 2; r++) T_CUDA(cudaGraphLaunch(ge, st));
  T_CUDA(cudaStreamSynchronize(st));
  uint16_t *a = malloc(n * 2), *b = malloc(n * 2);
  t_d2h(a, y1, n * 2);
  t_d2h(b, y2, n * 2);
  cr_expect_eq(memcmp(a, b, n * 2), 0, "the graph's result differs from the eager one");
  /* outside a capture, pageable host memory is still refused where the
   * device cannot access it */
  int pageable = 0;
  T_CUDA(cudaDeviceGetAttribute(&pageable, cudaDevAttrPageableMemoryAccess, 0));
  if (!pageable) {
    T_FAILS(GKO_STATUS_INVALID_VALUE, gko_gelu_forward(h, GKO_GELU_ERF, GKO_DTYPE_F16, n, xd, a, st));
    cr_expect(strstr(gko_last_error_detail(), "pageable") != NULL, "%s", gko_last_error_detail());
  }
  free(a);
  free(b);
  free(x);
  cudaGraphExecDestroy(ge);
  cudaGraphDestroy(g);
  cudaStreamDestroy(st);
  cudaFree(xd);
  cudaFree(y1);
  cudaFree(y2);
  gko_destroy(h);
}

/* Every kind of memory a kernel may legally use is accepted as input and
 * output, and gives the same result as plain device memory: cudaMalloc,
 * the default and a custom stream-ordered pool (cudaMallocAsync,
 * cudaMallocFromPoolAsync), managed memory, mapped pinned memory
 * (cudaHostAlloc) and registered host memory (cudaHostRegister, mapped);
 * pageable host memory is accepted exactly when the device can access it. */
Test(gelu, every_legal_memory_kind_is_accepted) {
  gko_handle_t h = t_gpu_setup(NULL);
  const int64_t n = 4099;
  const size_t bytes = (size_t)n * 2;
  void *x = random_array(GKO_DTYPE_F16, n);
  uint16_t *xd = t_dalloc(bytes), *ref_d = t_dalloc(bytes);
  t_h2d(xd, x, bytes);
  cudaStream_t st;
  T_CUDA(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  T_OK(gko_gelu_forward(h, GKO_GELU_ERF, GKO_DTYPE_F16, n, xd, ref_d, st));
  uint16_t *ref = malloc(bytes), *got = malloc(bytes);
  T_CUDA(cudaStreamSynchronize(st));
  t_d2h(ref, ref_d, bytes);
  int managed = 0, pageable = 0;
  T_CUDA(cudaDeviceGetAttribute(&managed, cudaDevAttrManagedMemory, 0));
  T_CUDA(cudaDeviceGetAttribute(&pageable, cudaDevAttrPageableMemoryAccess, 0));
  cudaMemPool_t pool;
  struct cudaMemPoolProps props = {0};
  props.allocType = cudaMemAllocationTypePinned;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = 0;
  T_CUDA(cudaMemPoolCreate(&pool, &props));
  enum { KINDS = 7 };
  static const char *const kName[KINDS] = {"cudaMalloc",         "cudaMallocAsync",
                                           "cudaMallocFromPoolAsync", "cudaMallocManaged",
                                           "cudaHostAlloc(mapped)", "cudaHostRegister(mapped)",
                                           "pageable host"};
  for (int kind = 0; kind < KINDS; kind++) {
    void *in = NULL, *out = NULL, *hin = NULL, *hout = NULL;
    switch (kind) {
      case 0: T_CUDA(cudaMalloc(&in, bytes)); T_CUDA(cudaMalloc(&out, bytes)); break;
      case 1: T_CUDA(cudaMallocAsync(&in, bytes, st)); T_CUDA(cudaMallocAsync(&out, bytes, st)); break;
      case 2:
        T_CUDA(cudaMallocFromPoolAsync(&in, bytes, pool, st));
        T_CUDA(cudaMallocFromPoolAsync(&out, bytes, pool, st));
        break;
      case 3:
        if (!managed) continue;
        T_CUDA(cudaMallocManaged(&in, bytes, cudaMemAttachGlobal));
        T_CUDA(cudaMallocManaged(&out, bytes, cudaMemAttachGlobal));
        break;
      case 4:
        T_CUDA(cudaHostAlloc(&hin, bytes, cudaHostAllocMapped));
        T_CUDA(cudaHostAlloc(&hout, bytes, cudaHostAllocMapped));
        T_CUDA(cudaHostGetDevicePointer(&in, hin, 0));
        T_CUDA(cudaHostGetDevicePointer(&out, hout, 0));
        break;
      case 5:
        hin = aligned_alloc(4096, 4096 * ((bytes + 4095) / 4096));
        hout = aligned_alloc(4096, 4096 * ((bytes + 4095) / 4096));
        T_CUDA(cudaHostRegister(hin, bytes, cudaHostRegisterMapped));
        T_CUDA(cudaHostRegister(hout, bytes, cudaHostRegisterMapped));
        T_CUDA(cudaHostGetDevicePointer(&in, hin, 0));
        T_CUDA(cudaHostGetDevicePointer(&out, hout, 0));
        break;
      case 6:
        in = hin = malloc(bytes);
        out = hout = malloc(bytes);
        break;
    }
    T_CUDA(cudaMemcpyAsync(in, xd, bytes, cudaMemcpyDefault, st));
    if (kind == 6) memset(out, T_POISON_BYTE, bytes);
    else T_CUDA(cudaMemsetAsync(out, T_POISON_BYTE, bytes, st));
    T_CUDA(cudaStreamSynchronize(st));
    const gko_status_t s = gko_gelu_forward(h, GKO_GELU_ERF, GKO_DTYPE_F16, n, in, out, st);
    if (kind == 6 && !pageable) {
      cr_expect_eq(s, GKO_STATUS_INVALID_VALUE, "pageable host memory on a device that cannot "
                   "access it: %s", gko_status_name(s));
      cr_expect(strstr(gko_last_error_detail(), "pageable") != NULL, "%s", gko_last_error_detail());
    } else {
      cr_expect_eq(s, GKO_STATUS_SUCCESS, "%s refused: %s: %s", kName[kind], gko_status_name(s),
                   gko_last_error_detail());
      T_CUDA(cudaStreamSynchronize(st));
      T_CUDA(cudaMemcpy(got, out, bytes, cudaMemcpyDefault));
      cr_expect_eq(memcmp(got, ref, bytes), 0, "%s: the result differs from device memory's",
                   kName[kind]);
    }
    T_CUDA(cudaStreamSynchronize(st));
    switch (kind) {
      case 1:
      case 2: cudaFreeAsync(in, st); cudaFreeAsync(out, st); T_CUDA(cudaStreamSynchronize(st)); break;
      case 4: cudaFreeHost(hin); cudaFreeHost(hout); break;
      case 5: cudaHostUnregister(hin); cudaHostUnregister(hout); free(hin); free(hout); break;
      case 6: free(hin); free(hout); break;
      default: cudaFree(in); cudaFree(out);
    }
  }
  cudaMemPoolDestroy(pool);
  free(ref);
  free(got);
  free(x);
  cudaStreamDestroy(st);
  cudaFree(xd);
  cudaFree(ref_d);
  gko_destroy(h);
}

/* Bad arguments that need real device pointers: status, detail, and the
 * output left exactly as it was. */
Test(gelu, bad_pointers_leave_output_untouched) {
  T_REQUIRE_GPU();
  gko_handle_t h = t_handle();
  const int64_t n = 1024;
  char *x = t_dalloc(n * 4 + 64), *y = t_dalloc(n * 4 + 64);
  t_memset(x, 0x3c, n * 4 + 64);
  t_memset(y, T_POISON_BYTE, n * 4 + 64);
  /* f16 pointer at an odd address */
  T_FAILS(GKO_STATUS_INVALID_VALUE,
          gko_gelu_forward(h, GKO_GELU_ERF, GKO_DTYPE_F16, n, x + 1, y, NULL));
  cr_expect(strstr(gko_last_error_detail(), "x") != NULL);
  T_FAILS(GKO_STATUS_INVALID_VALUE,
          gko_gelu_forward(h, GKO_GELU_ERF, GKO_DTYPE_F32, n, x, y + 2, NULL));
  /* partial overlap */
  T_FAILS(GKO_STATUS_INVALID_VALUE,
          gko_gelu_forward(h, GKO_GELU_ERF, GKO_DTYPE_F32, n, y, y + 4, NULL));
  T_FAILS(GKO_STATUS_INVALID_VALUE,
          gko_gelu_backward(h, GKO_GELU_ERF, GKO_DTYPE_F32, n, y + 8, x, y, NULL));
  /* pageable host memory the GPU cannot read */
  int pageable = 0;
  T_CUDA(cudaDeviceGetAttribute(&pageable, cudaDevAttrPageableMemoryAccess, 0));
  float *hx = malloc(n * 4);
  for (int64_t i = 0; i < n; i++) hx[i] = 1.0f;
  if (!pageable)
    T_FAILS(GKO_STATUS_INVALID_VALUE,
            gko_gelu_forward(h, GKO_GELU_ERF, GKO_DTYPE_F32, n, hx, y, NULL));
  t_assert_poisoned(y, n * 4 + 64);
  free(hx);
  cudaFree(x);
  cudaFree(y);
  gko_destroy(h);
}

Test(gelu, other_device_is_a_mismatch) {
  T_REQUIRE_GPU();
  if (t_gpu_count() < 2) cr_skip_test("needs two GPUs");
  T_CUDA(cudaSetDevice(0));
  gko_handle_t h = t_handle();
  float *x1;
  T_CUDA(cudaSetDevice(1));
  T_CUDA(cudaMalloc((void **)&x1, 64));
  T_FAILS(GKO_STATUS_DEVICE_MISMATCH,
          gko_gelu_forward(h, GKO_GELU_ERF, GKO_DTYPE_F32, 16, x1, x1, NULL));
  T_CUDA(cudaSetDevice(0));
  T_FAILS(GKO_STATUS_DEVICE_MISMATCH,
          gko_gelu_forward(h, GKO_GELU_ERF, GKO_DTYPE_F32, 16, x1, x1, NULL));
  cudaStream_t s1;
  float *x0 = t_dalloc(64);
  T_CUDA(cudaSetDevice(1));
  T_CUDA(cudaStreamCreate(&s1));
  T_CUDA(cudaSetDevice(0));
  T_FAILS(GKO_STATUS_DEVICE_MISMATCH,
          gko_gelu_forward(h, GKO_GELU_ERF, GKO_DTYPE_F32, 16, x0, x0, s1));
  gko_destroy(h);
}
