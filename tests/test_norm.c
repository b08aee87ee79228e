/* test_norm.c -- the encoder's row-wise operators (gko_layernorm,
 * gko_softmax, gko_embedding, gko_mean_pool) on the GPU against float64
 * host references, and their argument checks on any machine.
 *
 * Tolerance (close_to): |got - ref| <= 2 ulp of the output dtype at ref +
 * 1e-5 times the row's scale, where the scale is what the f32 arithmetic's
 * rounding is relative to:
 *   layernorm: max_j (|h_j| + |mean|) * rstd * |gamma_j| + |beta_j|;
 *   softmax:   the row's largest output;
 *   mean pool: max_j of sum_s |x[s][j]| / L (divided by the norm, plus 1,
 *              when normalised).
 * s (layernorm's x + r) and embedding rows are compared bit for bit.
 * Every output buffer is poisoned (all bytes 0xFF: NaN in every dtype)
 * before the call, and the bytes of each output buffer outside its
 * matrix (the leading-dimension padding, a guard region after it, the
 * offset before it) must still hold the poison afterwards.  Inputs are
 * fresh random numbers (seed printed; GKO_TEST_SEED replays). */
#include <float.h>

#include "common.h"

static const gko_dtype_t kDt[3] = {GKO_DTYPE_F32, GKO_DTYPE_F16, GKO_DTYPE_BF16};
static const int64_t kCols[] = {1, 2, 3, 7, 31, 32, 33, 383, 384, 1023, 1024, 1025, 4097, 65539};
enum { kNCols = sizeof kCols / sizeof kCols[0], kGuard = 24 };

/* ---- tolerance ------------------------------------------------------------------ */

/* One unit in the last place of dtype dt at v (subnormal spacing below). */
static double ulp_of(gko_dtype_t dt, double v) {
  const int mant = dt == GKO_DTYPE_F32 ? 23 : dt == GKO_DTYPE_F16 ? 10 : 7;
  const int emin = dt == GKO_DTYPE_F16 ? -14 : -126;
  int e = emin;
  if (v != 0) {
    frexp(fabs(v), &e);
    e -= 1;
    if (e < emin) e = emin;
  }
  return ldexp(1.0, e - mant);
}

static int close_to(gko_dtype_t dt, double got, double ref, double scale) {
  if (isnan(ref)) return isnan(got);
  if (isnan(got) || isinf(got) || isinf(ref)) return got == ref;
  return fabs(got - ref) <= 2 * ulp_of(dt, ref) + 1e-5 * scale;
}

/* ---- matrices on the device with a host image ------------------------------------ */

/* rows x cols elements of es bytes, leading dimension ld, starting `off`
 * elements into a device buffer that ends kGuard elements after the
 * matrix; the host image starts as all poison. */
typedef struct {
  size_t es;
  int64_t off, rows, cols, ld, n;
  unsigned char *img;
  void *d;
} tmat;

static void tm_make(tmat *m, size_t es, int64_t off, int64_t rows, int64_t cols, int64_t ld) {
  m->es = es;
  m->off = off;
  m->rows = rows;
  m->cols = cols;
  m->ld = ld;
  m->n = off + (rows > 0 ? (rows - 1) * ld + cols : 0) + kGuard;
  m->img = malloc((size_t)m->n * es);
  cr_assert(m->img);
  memset(m->img, T_POISON_BYTE, (size_t)m->n * es);
  m->d = t_dalloc((size_t)m->n * es);
}

static void tm_free(tmat *m) {
  if (m->img) {
    free(m->img);
    cudaFree(m->d);
  }
  memset(m, 0, sizeof *m);
}

static int64_t tm_at(const tmat *m, int64_t i, int64_t j) { return m->off + i * m->ld + j; }
static void *tm_ptr(const tmat *m) { return m->img ? (char *)m->d + m->off * m->es : NULL; }
static void tm_up(const tmat *m) { t_h2d(m->d, m->img, (size_t)m->n * m->es); }
static void tm_down(tmat *m) {
  T_CUDA(cudaDeviceSynchronize());
  t_d2h(m->img, m->d, (size_t)m->n * m->es);
}
static double tm_get(const tmat *m, gko_dtype_t dt, int64_t i, int64_t j) {
  return t_hv_get(dt, m->img, tm_at(m, i, j));
}
static void tm_set(tmat *m, gko_dtype_t dt, int64_t i, int64_t j, double v) {
  t_hv_set(dt, m->img, tm_at(m, i, j), v);
}

/* Bytes outside the matrix's elements that no longer hold the poison. */
static int64_t tm_outside_written(const tmat *m) {
  int64_t bad = 0;
  for (int64_t e = 0; e < m->n; e++) {
    const int64_t q = e - m->off;
    if (q >= 0 && q / m->ld < m->rows && q % m->ld < m->cols) continue;
    for (size_t b = 0; b < m->es; b++) bad += m->img[(size_t)e * m->es + b] != T_POISON_BYTE;
  }
  return bad;
}

/* 0: ld = cols; 1: cols rounded up to 8 (16-byte rows in every dtype); 2: cols + 3. */
static int64_t ld_for(int mode, int64_t cols) {
  return mode == 0 ? cols : mode == 1 ? (cols + 7) / 8 * 8 : cols + 3;
}

/* ==== layer normalisation ========================================================= */

typedef struct {
  int64_t rows, cols;
  int ldmode, off; /* ld_for's mode; elements every pointer is moved by */
  int res, sout, gam, bet;
  int y_is, s_is; /* 0: its own buffer; 1: x's; 2: r's (in place) */
  double mu;      /* row means drawn in +-mu times the row's spread */
  int special;    /* NaN, +Inf, -Inf in some rows */
} ln_case;

static int64_t run_ln(gko_handle_t h, gko_dtype_t dt, ln_case c, uint64_t seed) {
  const size_t es = gko_dtype_size(dt);
  const int64_t R = c.rows, C = c.cols, ld = ld_for(c.ldmode, C);
  tmat X, Rm, Y, S, G, B;
  memset(&Rm, 0, sizeof Rm);
  memset(&Y, 0, sizeof Y);
  memset(&S, 0, sizeof S);
  memset(&G, 0, sizeof G);
  memset(&B, 0, sizeof B);
  tm_make(&X, es, c.off, R, C, ld);
  if (c.res) tm_make(&Rm, es, c.off, R, C, ld);
  if (c.y_is == 0) tm_make(&Y, es, c.off, R, C, ld);
  if (c.sout && c.s_is == 0) tm_make(&S, es, c.off, R, C, ld);
  if (c.gam) tm_make(&G, es, c.off, 1, C, C);
  if (c.bet) tm_make(&B, es, c.off, 1, C, C);
  double *xv = malloc((size_t)(R * C) * 8), *rv = calloc((size_t)(R * C), 8);
  double *gv = malloc((size_t)C * 8), *bv = malloc((size_t)C * 8);
  cr_assert(xv && rv && gv && bv);
  for (int64_t i = 0; i < R; i++) {
    const double sigma = exp(t_uniform(log(0.05), log(20.0)));
    const double mu = c.mu * sigma * t_uniform(-1, 1);
    for (int64_t j = 0; j < C; j++) {
      tm_set(&X, dt, i, j, mu + sigma * t_normal());
      xv[i * C + j] = tm_get(&X, dt, i, j);
      if (c.res) {
        tm_set(&Rm, dt, i, j, 0.5 * sigma * t_normal());
        rv[i * C + j] = tm_get(&Rm, dt, i, j);
      }
    }
    if (c.special && i % 4 != 0) {
      const int64_t j = (int64_t)(t_next() % (uint64_t)C);
      const double v = i % 4 == 1 ? NAN : i % 4 == 2 ? INFINITY : -INFINITY;
      tm_set(&X, dt, i, j, v);
      xv[i * C + j] = v;
    }
  }
  for (int64_t j = 0; j < C; j++) {
    if (c.gam) tm_set(&G, dt, 0, j, 1.0 + 0.5 * t_normal());
    if (c.bet) tm_set(&B, dt, 0, j, 0.5 * t_normal());
    gv[j] = c.gam ? tm_get(&G, dt, 0, j) : 1.0;
    bv[j] = c.bet ? tm_get(&B, dt, 0, j) : 0.0;
  }
  tm_up(&X);
  if (c.res) tm_up(&Rm);
  if (c.y_is == 0) tm_up(&Y);
  if (S.img) tm_up(&S);
  if (c.gam) tm_up(&G);
  if (c.bet) tm_up(&B);
  const float eps = (t_next() & 1) ? 1e-5f : 1e-12f;
  void *xp = tm_ptr(&X), *rp = tm_ptr(&Rm);
  void *yp = c.y_is == 0 ? tm_ptr(&Y) : c.y_is == 1 ? xp : rp;
  void *sp = !c.sout ? NULL : c.s_is == 0 ? tm_ptr(&S) : c.s_is == 1 ? xp : rp;
  T_OK(gko_layernorm(h, dt, R, C, xp, ld, rp, ld, tm_ptr(&G), tm_ptr(&B), eps, yp, ld, sp, ld,
                     NULL));
  tmat *ym = c.y_is == 0 ? &Y : c.y_is == 1 ? &X : &Rm;
  tmat *sm = !c.sout ? NULL : c.s_is == 0 ? &S : c.s_is == 1 ? &X : &Rm;
  tm_down(ym);
  if (sm) tm_down(sm);
  int64_t bad = 0;
  for (int64_t i = 0; i < R; i++) {
    const double *x = xv + i * C, *r = rv + i * C;
    double mean = 0, var = 0;
    for (int64_t j = 0; j < C; j++) mean += x[j] + r[j];
    mean /= (double)C;
    for (int64_t j = 0; j < C; j++) {
      const double d = x[j] + r[j] - mean;
      var += d * d;
    }
    var /= (double)C;
    const double rstd = 1.0 / sqrt(var + (double)eps);
    double scale = 0;
    for (int64_t j = 0; j < C; j++) {
      scale = fmax(scale, (fabs(x[j] + r[j]) + fabs(mean)) * rstd * fabs(gv[j]) + fabs(bv[j]));
    }
    for (int64_t j = 0; j < C; j++) {
      const double hj = x[j] + r[j];
      const double want = (hj - mean) * rstd * gv[j] + bv[j];
      const double got = tm_get(ym, dt, i, j);
      if (!close_to(dt, got, want, isnan(scale) ? 0 : scale) && bad++ < 5)
        cr_log_error("seed %llu layernorm %s rows %lld cols %lld ld %lld off %d res %d s %d "
                     "gamma %d beta %d y_is %d s_is %d: y[%lld][%lld] = %.9g, want %.9g "
                     "(scale %.3g)",
                     (unsigned long long)seed, t_dtype_name(dt), (long long)R, (long long)C,
                     (long long)ld, c.off, c.res, c.sout, c.gam, c.bet, c.y_is, c.s_is,
                     (long long)i, (long long)j, got, want, scale);
      if (sm) {
        /* h is formed in f32, then rounded to dtype */
        const double sw = t_round(dt, (double)(float)hj), sg = tm_get(sm, dt, i, j);
        const int ok = isnan(sw) ? isnan(sg) : sg == sw;
        if (!ok && bad++ < 5)
          cr_log_error("seed %llu layernorm %s cols %lld: s[%lld][%lld] = %.9g, want %.9g",
                       (unsigned long long)seed, t_dtype_name(dt), (long long)C, (long long)i,
                       (long long)j, sg, sw);
      }
    }
  }
  const int64_t outside = tm_outside_written(ym) + (sm ? tm_outside_written(sm) : 0);
  if (outside)
    cr_log_error("seed %llu layernorm %s cols %lld: %lld bytes written outside y / s",
                 (unsigned long long)seed, t_dtype_name(dt), (long long)C, (long long)outside);
  bad += outside;
  tm_free(&X);
  tm_free(&Rm);
  tm_free(&Y);
  tm_free(&S);
  tm_free(&G);
  tm_free(&B);
  free(xv);
  free(rv);
  free(gv);
  free(bv);
  return bad;
}

/* The variants each row length runs through: the vector and scalar paths,
 * ld > cols, unaligned starts, with and without r, s, gamma, beta, and the
 * four in-place forms. */
static const ln_case kLnForms[] = {
    /* rows, cols, ldmode, off, res, sout, gam, bet, y_is, s_is, mu, special */
    {0, 0, 1, 0, 1, 1, 1, 1, 0, 0, 3.0, 0},
    {0, 0, 2, 1, 0, 0, 0, 1, 0, 0, 3.0, 0},
    {0, 0, 1, 0, 1, 1, 1, 0, 1, 2, 3.0, 0},
    {0, 0, 2, 1, 1, 1, 0, 0, 2, 1, 3.0, 0},
    {0, 0, 0, 0, 0, 1, 1, 1, 1, 0, 3.0, 0},
};
enum { kNLnForms = sizeof kLnForms / sizeof kLnForms[0] };

Test(layernorm, every_length_dtype_and_form, .timeout = 600) {
  uint64_t seed;
  gko_handle_t h = t_gpu_setup(&seed);
  for (int d = 0; d < 3; d++)
    for (int l = 0; l < kNCols; l++)
      for (int f = 0; f < kNLnForms; f++) {
        ln_case c = kLnForms[f];
        c.cols = kCols[l];
        const int64_t rows_small[3] = {1, 7, 133}, rows_big[3] = {1, 3, 5};
        c.rows = (c.cols > 4096 ? rows_big : rows_small)[(f + l) % 3];
        const int64_t bad = run_ln(h, kDt[d], c, seed);
        cr_expect_eq(bad, 0, "seed %llu: %lld mismatches (%s cols %lld form %d)",
                     (unsigned long long)seed, (long long)bad, t_dtype_name(kDt[d]),
                     (long long)c.cols, f);
      }
  gko_destroy(h);
}

/* More rows than a grid's y dimension holds, and the encoder's shapes. */
Test(layernorm, many_rows_and_encoder_shapes, .timeout = 300) {
  uint64_t seed;
  gko_handle_t h = t_gpu_setup(&seed);
  const struct {
    gko_dtype_t dt;
    int64_t rows, cols;
    int form;
  } k[] = {{GKO_DTYPE_F16, 70001, 3, 0},   {GKO_DTYPE_F32, 70001, 32, 1},
           {GKO_DTYPE_BF16, 4096, 384, 0}, {GKO_DTYPE_F16, 2048, 768, 2},
           {GKO_DTYPE_F32, 1024, 1024, 3}, {GKO_DTYPE_BF16, 512, 3072, 4}};
  for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
    ln_case c = kLnForms[k[i].form];
    c.rows = k[i].rows;
    c.cols = k[i].cols;
    cr_expect_eq(run_ln(h, k[i].dt, c, seed), 0, "seed %llu: %s %lld x %lld",
                 (unsigned long long)seed, t_dtype_name(k[i].dt), (long long)c.rows,
                 (long long)c.cols);
  }
  gko_destroy(h);
}

/* Rows whose mean is 100 times their spread: E[h^2] - mean^2 in f32 would
 * lose the variance; the two passes keep it. */
Test(layernorm, large_mean_small_spread) {
  uint64_t seed;
  gko_handle_t h = t_gpu_setup(&seed);
  for (int l = 0; l < kNCols; l++) {
    ln_case c = kLnForms[l % 2];
    c.cols = kCols[l];
    c.rows = c.cols > 4096 ? 3 : 16;
    c.mu = 100.0;
    cr_expect_eq(run_ln(h, GKO_DTYPE_F32, c, seed), 0, "seed %llu: cols %lld",
                 (unsigned long long)seed, (long long)c.cols);
  }
  gko_destroy(h);
}

/* A row holding NaN or +-Inf gives NaN in y; the other rows are unaffected. */
Test(layernorm, nan_and_inf_rows) {
  uint64_t seed;
  gko_handle_t h = t_gpu_setup(&seed);
  const int64_t cols[] = {1, 33, 1024, 1025, 65539};
  for (int d = 0; d < 3; d++)
    for (size_t l = 0; l < sizeof cols / sizeof cols[0]; l++) {
      ln_case c = kLnForms[(d + l) % kNLnForms];
      c.cols = cols[l];
      c.rows = 8;
      c.special = 1;
      cr_expect_eq(run_ln(h, kDt[d], c, seed), 0, "seed %llu: %s cols %lld",
                   (unsigned long long)seed, t_dtype_name(kDt[d]), (long long)c.cols);
    }
  gko_destroy(h);
}

/* ==== softmax ================================================================== */

typedef struct {
  int64_t rows, cols;
  int ldmode, off;
  int mask, lens; /* a random mask / random lengths */
  int64_t group;
  int inplace;
  float scale;
  int special; /* 1: NaN, +Inf, -Inf inputs in some rows */
  int coarse;  /* x = k / 64, |k| <= 256 (exact in every dtype: ties stay ties at any scale) */
} sm_case;

/* y over row z (scale * x + mask) and its kept prefix lim, in float64. */
static void ref_softmax(const double *z, int64_t C, int64_t lim, double *out) {
  double m = -INFINITY;
  int nan_row = 0;
  for (int64_t j = 0; j < lim; j++) {
    if (z[j] == -INFINITY) continue;
    if (isnan(z[j]) || z[j] == INFINITY) nan_row = 1;
    else if (z[j] > m) m = z[j];
  }
  for (int64_t j = 0; j < C; j++) out[j] = nan_row ? NAN : 0.0;
  if (nan_row || m == -INFINITY) return;
  double sum = 0;
  for (int64_t j = 0; j < lim; j++)
    if (z[j] != -INFINITY) sum += exp(z[j] - m);
  for (int64_t j = 0; j < lim; j++) out[j] = z[j] == -INFINITY ? 0.0 : exp(z[j] - m) / sum;
}

static int64_t run_sm(gko_handle_t h, gko_dtype_t dt, sm_case c, uint64_t seed) {
  const size_t es = gko_dtype_size(dt);
  const int64_t R = c.rows, C = c.cols, ld = ld_for(c.ldmode, C);
  const int64_t group = (c.mask || c.lens) ? c.group : 0;
  const int64_t ng = group ? (R - 1) / group + 1 : 0;
  tmat X, Y, M;
  memset(&Y, 0, sizeof Y);
  memset(&M, 0, sizeof M);
  tm_make(&X, es, c.off, R, C, ld);
  if (!c.inplace) tm_make(&Y, es, c.off, R, C, ld);
  const int64_t ldm = c.ldmode == 1 ? (C + 7) / 8 * 8 : C + (c.ldmode == 2 ? 5 : 0);
  if (c.mask) tm_make(&M, 4, c.off, ng, C, ldm);
  int32_t *len = NULL, *lend = NULL;
  double *xv = malloc((size_t)(R * C) * 8), *mv = calloc((size_t)(ng ? ng : 1) * C, 8);
  double *z = malloc((size_t)C * 8), *want = malloc((size_t)C * 8);
  cr_assert(xv && mv && z && want);
  for (int64_t i = 0; i < R; i++)
    for (int64_t j = 0; j < C; j++) {
      double v = c.coarse ? (double)((int64_t)(t_next() % 513) - 256) / 64 : t_uniform(-4, 4);
      if (c.special && i % 4 != 0 && t_next() % 16 == 0)
        v = i % 4 == 1 ? NAN : i % 4 == 2 ? INFINITY : -INFINITY;
      tm_set(&X, dt, i, j, v);
      xv[i * C + j] = tm_get(&X, dt, i, j);
    }
  for (int64_t g = 0; g < ng && c.mask; g++)
    for (int64_t j = 0; j < C; j++) {
      const uint64_t k = t_next() % 8;
      double v = k < 5 ? 0.0 : k < 6 ? -INFINITY : t_uniform(-5, 5);
      if (g % 5 == 3) v = -INFINITY; /* a fully masked group */
      tm_set(&M, GKO_DTYPE_F32, g, j, v);
      mv[g * C + j] = tm_get(&M, GKO_DTYPE_F32, g, j);
    }
  if (c.lens) {
    len = malloc((size_t)ng * 4);
    for (int64_t g = 0; g < ng; g++) {
      const uint64_t k = t_next() % 6;
      len[g] = k == 0 ? -3 : k == 1 ? 0 : k == 2 ? (int32_t)C : k == 3 ? (int32_t)C + 4
                                                                        : (int32_t)(1 + t_next() % (uint64_t)C);
    }
    lend = t_dalloc((size_t)ng * 4);
    t_h2d(lend, len, (size_t)ng * 4);
  }
  tm_up(&X);
  if (!c.inplace) tm_up(&Y);
  if (c.mask) tm_up(&M);
  void *xp = tm_ptr(&X), *yp = c.inplace ? xp : tm_ptr(&Y);
  T_OK(gko_softmax(h, dt, R, C, c.scale, xp, ld, (const float *)tm_ptr(&M), ldm, lend, group, yp,
                   ld, NULL));
  tmat *ym = c.inplace ? &X : &Y;
  tm_down(ym);
  int64_t bad = 0;
  for (int64_t i = 0; i < R; i++) {
    const int64_t g = group ? i / group : 0;
    int64_t lim = c.lens ? len[g] : C;
    lim = lim < 0 ? 0 : lim > C ? C : lim;
    for (int64_t j = 0; j < C; j++)
      z[j] = (double)c.scale * xv[i * C + j] + (c.mask ? mv[g * C + j] : 0.0);
    ref_softmax(z, C, lim, want);
    double scale = 0;
    for (int64_t j = 0; j < C; j++)
      if (!isnan(want[j])) scale = fmax(scale, want[j]);
    for (int64_t j = 0; j < C; j++) {
      const double got = tm_get(ym, dt, i, j);
      if (!close_to(dt, got, want[j], scale) && bad++ < 5)
        cr_log_error("seed %llu softmax %s rows %lld cols %lld ld %lld off %d mask %d lens %d "
                     "group %lld inplace %d scale %g: y[%lld][%lld] = %.9g, want %.9g "
                     "(length %lld)",
                     (unsigned long long)seed, t_dtype_name(dt), (long long)R, (long long)C,
                     (long long)ld, c.off, c.mask, c.lens, (long long)group, c.inplace,
                     (double)c.scale, (long long)i, (long long)j, got, want[j], (long long)lim);
    }
  }
  const int64_t outside = tm_outside_written(ym);
  if (outside)
    cr_log_error("seed %llu softmax %s cols %lld: %lld bytes written outside y",
                 (unsigned long long)seed, t_dtype_name(dt), (long long)C, (long long)outside);
  bad += outside;
  tm_free(&X);
  tm_free(&Y);
  tm_free(&M);
  free(len);
  if (lend) cudaFree(lend);
  free(xv);
  free(mv);
  free(z);
  free(want);
  return bad;
}

static const sm_case kSmForms[] = {
    /* rows, cols, ldmode, off, mask, lens, group, inplace, scale, special, coarse */
    {0, 0, 1, 0, 0, 0, 0, 0, 0.125f, 0, 0},
    {0, 0, 2, 1, 1, 0, 3, 0, 1.0f, 0, 0},
    {0, 0, 1, 0, 0, 1, 2, 1, 0.5f, 0, 0},
    {0, 0, 2, 1, 1, 1, 1, 0, 2.0f, 0, 0},
    {0, 0, 1, 0, 1, 1, 4, 1, 0.3f, 0, 0},
};
enum { kNSmForms = sizeof kSmForms / sizeof kSmForms[0] };

Test(softmax, every_length_dtype_and_form, .timeout = 600) {
  uint64_t seed;
  gko_handle_t h = t_gpu_setup(&seed);
  for (int d = 0; d < 3; d++)
    for (int l = 0; l < kNCols; l++)
      for (int f = 0; f < kNSmForms; f++) {
        sm_case c = kSmForms[f];
        c.cols = kCols[l];
        const int64_t rows_small[3] = {1, 7, 133}, rows_big[3] = {1, 3, 11};
        c.rows = (c.cols > 4096 ? rows_big : rows_small)[(f + l) % 3];
        const int64_t bad = run_sm(h, kDt[d], c, seed);
        cr_expect_eq(bad, 0, "seed %llu: %lld mismatches (%s cols %lld form %d)",
                     (unsigned long long)seed, (long long)bad, t_dtype_name(kDt[d]),
                     (long long)c.cols, f);
      }
  gko_destroy(h);
}

/* Attention-score shapes: more than 65535 rows, a mask and lengths per
 * batch mapped onto heads x queries. */
Test(softmax, many_rows_and_attention_shapes, .timeout = 300) {
  uint64_t seed;
  gko_handle_t h = t_gpu_setup(&seed);
  const struct {
    gko_dtype_t dt;
    int64_t rows, cols, group;
    int form;
  } k[] = {{GKO_DTYPE_F16, 70003, 33, 1000, 3},  {GKO_DTYPE_F32, 12 * 128 * 2, 128, 12 * 128, 1},
           {GKO_DTYPE_BF16, 8 * 64, 512, 64, 2}, {GKO_DTYPE_F16, 4 * 256, 256, 256, 4},
           {GKO_DTYPE_F32, 100003, 32, 7, 0}};
  for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
    sm_case c = kSmForms[k[i].form];
    c.rows = k[i].rows;
    c.cols = k[i].cols;
    c.group = k[i].group;
    cr_expect_eq(run_sm(h, k[i].dt, c, seed), 0, "seed %llu: %s %lld x %lld",
                 (unsigned long long)seed, t_dtype_name(k[i].dt), (long long)c.rows,
                 (long long)c.cols);
  }
  gko_destroy(h);
}

/* NaN and +Inf among the kept columns give a NaN row, -Inf removes its
 * column, and beyond a row's length nothing is looked at. */
Test(softmax, nan_inf_and_masked_rows) {
  uint64_t seed;
  gko_handle_t h = t_gpu_setup(&seed);
  const int64_t cols[] = {1, 7, 32, 383, 1025, 4097, 65539};
  for (int d = 0; d < 3; d++)
    for (size_t l = 0; l < sizeof cols / sizeof cols[0]; l++)
      for (int f = 0; f < kNSmForms; f++) {
        sm_case c = kSmForms[f];
        c.cols = cols[l];
        c.rows = c.cols > 4096 ? 8 : 41;
        c.special = 1;
        cr_expect_eq(run_sm(h, kDt[d], c, seed), 0, "seed %llu: %s cols %lld form %d",
                     (unsigned long long)seed, t_dtype_name(kDt[d]), (long long)c.cols, f);
      }
  gko_destroy(h);
}

/* Scores of 1e30 (scale) and the documented fully-masked and NaN rows,
 * value by value. */
Test(softmax, huge_scores_and_documented_rows) {
  uint64_t seed;
  gko_handle_t h = t_gpu_setup(&seed);
  for (int d = 0; d < 3; d++)
    for (int l = 0; l < kNCols; l++) {
      sm_case c = kSmForms[l % kNSmForms];
      c.cols = kCols[l];
      c.rows = c.cols > 4096 ? 3 : 9;
      c.scale = 1e30f;
      c.mask = 0; /* an additive mask is below the rounding of such scores */
      c.coarse = 1;
      cr_expect_eq(run_sm(h, kDt[d], c, seed), 0, "seed %llu: %s cols %lld",
                   (unsigned long long)seed, t_dtype_name(kDt[d]), (long long)c.cols);
    }
  /* 4 rows of 5: lengths 0; an all -Inf mask row; a NaN; huge finite */
  const float x[20] = {1, 2, 3, 4, 5,  1, 2, 3, 4, 5,  1, NAN, 3, 4, 5,  3e38f, -3e38f, 0, 1, 3e38f};
  const float mask[10] = {0, 0, 0, 0, 0, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY};
  const int32_t lens[4] = {0, 5, 5, 5};
  float *xd = t_dalloc(sizeof x), *md = t_dalloc(sizeof mask), *yd = t_dalloc(sizeof x), y[20];
  int32_t *ld = t_dalloc(sizeof lens);
  t_h2d(xd, x, sizeof x);
  t_h2d(md, mask, sizeof mask);
  t_h2d(ld, lens, sizeof lens);
  /* row 1 meets mask row 1 (all -Inf) with group 1 only for rows 0-1: use
   * the lengths alone, then the mask on rows 0-1 */
  T_OK(gko_softmax(h, GKO_DTYPE_F32, 4, 5, 1.0f, xd, 5, NULL, 0, ld, 1, yd, 5, NULL));
  t_d2h(y, yd, sizeof y);
  for (int j = 0; j < 5; j++) cr_expect(y[j] == 0.0f, "length 0: y[%d] = %g", j, y[j]);
  for (int j = 0; j < 5; j++) cr_expect(isnan(y[10 + j]), "NaN row: y[%d] = %g", j, y[10 + j]);
  cr_expect(fabsf(y[15] - 0.5f) < 1e-6f && fabsf(y[19] - 0.5f) < 1e-6f && y[16] == 0.0f &&
                y[17] == 0.0f && y[18] == 0.0f,
            "huge finite scores: %g %g %g %g %g", y[15], y[16], y[17], y[18], y[19]);
  T_OK(gko_softmax(h, GKO_DTYPE_F32, 2, 5, 1.0f, xd, 5, md, 5, NULL, 1, yd, 5, NULL));
  t_d2h(y, yd, sizeof y);
  for (int j = 0; j < 5; j++) cr_expect(y[5 + j] == 0.0f, "all -Inf mask: y[%d] = %g", j, y[5 + j]);
  cudaFree(xd);
  cudaFree(md);
  cudaFree(yd);
  cudaFree(ld);
  gko_destroy(h);
}

/* ==== embedding ================================================================ */

static int64_t run_emb(gko_handle_t h, gko_dtype_t dt, gko_index_t it, int64_t num_rows,
                       int64_t dim, int64_t n, int ldmode, int off, uint64_t seed) {
  const size_t es = gko_dtype_size(dt);
  const int64_t ldt = ld_for(ldmode, dim), ldy = ld_for((ldmode + off) % 3, dim);
  tmat T, Y;
  tm_make(&T, es, off, num_rows, dim, ldt);
  tm_make(&Y, es, off, n, dim, ldy);
  for (int64_t i = 0; i < num_rows; i++)
    for (int64_t j = 0; j < dim; j++) tm_set(&T, dt, i, j, t_normal());
  int64_t *idx = malloc((size_t)(n ? n : 1) * 8);
  const int64_t wild[6] = {-1, num_rows, num_rows + 7,
                           it == GKO_INDEX_INT64 ? -(1ll << 40) : INT32_MIN,
                           it == GKO_INDEX_INT64 ? (1ll << 40) : INT32_MAX,
                           it == GKO_INDEX_INT64 ? INT64_MIN : -2};
  for (int64_t i = 0; i < n; i++)
    idx[i] = num_rows == 0 || t_next() % 8 == 0 ? wild[t_next() % 6]
                                                : (int64_t)(t_next() % (uint64_t)num_rows);
  void *ih = t_index_array(it, idx, n, n);
  const size_t is = it == GKO_INDEX_INT64 ? 8 : 4;
  void *id = t_dalloc((size_t)n * is + 8);
  t_h2d((char *)id + (off ? is : 0), ih, (size_t)n * is);
  tm_up(&T);
  tm_up(&Y);
  T_OK(gko_embedding(h, dt, num_rows, dim, tm_ptr(&T), ldt, it, (char *)id + (off ? is : 0), n,
                     tm_ptr(&Y), ldy, NULL));
  tm_down(&Y);
  int64_t bad = 0;
  for (int64_t i = 0; i < n; i++) {
    const int ok = idx[i] >= 0 && idx[i] < num_rows;
    for (int64_t j = 0; j < dim; j++) {
      const unsigned char *g = Y.img + (size_t)tm_at(&Y, i, j) * es;
      const int good = ok ? memcmp(g, T.img + (size_t)tm_at(&T, idx[i], j) * es, es) == 0
                          : isnan(tm_get(&Y, dt, i, j)) && memcmp(g, "\xff\xff\xff\xff", es) != 0;
      if (!good && bad++ < 5)
        cr_log_error("seed %llu embedding %s %s rows %lld dim %lld n %lld ldt %lld ldy %lld "
                     "off %d: y[%lld][%lld] = %g (index %lld)",
                     (unsigned long long)seed, t_dtype_name(dt),
                     it == GKO_INDEX_INT64 ? "int64" : "int32", (long long)num_rows,
                     (long long)dim, (long long)n, (long long)ldt, (long long)ldy, off,
                     (long long)i, (long long)j, tm_get(&Y, dt, i, j), (long long)idx[i]);
    }
  }
  bad += tm_outside_written(&Y);
  tm_free(&T);
  tm_free(&Y);
  free(idx);
  free(ih);
  cudaFree(id);
  return bad;
}

Test(embedding, gathers_with_out_of_range_rows, .timeout = 300) {
  uint64_t seed;
  gko_handle_t h = t_gpu_setup(&seed);
  const int64_t dims[] = {1, 3, 8, 31, 384, 1025};
  const int64_t ns[] = {1, 7, 1000};
  for (int d = 0; d < 3; d++)
    for (int it = 0; it < 2; it++)
      for (size_t k = 0; k < sizeof dims / sizeof dims[0]; k++)
        for (size_t q = 0; q < sizeof ns / sizeof ns[0]; q++)
          for (int mode = 0; mode < 3; mode++) {
            const int off = (int)((k + q + (size_t)mode) % 2);
            cr_expect_eq(run_emb(h, kDt[d], (gko_index_t)it, 97, dims[k], ns[q], mode, off, seed),
                         0, "seed %llu: %s %s dim %lld n %lld mode %d off %d",
                         (unsigned long long)seed, t_dtype_name(kDt[d]), it ? "int64" : "int32",
                         (long long)dims[k], (long long)ns[q], mode, off);
          }
  /* many tokens of a BERT-sized table; a table with no rows (every index
   * out of range) */
  cr_expect_eq(run_emb(h, GKO_DTYPE_F16, GKO_INDEX_INT32, 30522, 384, 70001, 1, 0, seed), 0);
  cr_expect_eq(run_emb(h, GKO_DTYPE_F32, GKO_INDEX_INT64, 0, 5, 9, 2, 1, seed), 0);
  gko_destroy(h);
}

/* ==== mean pooling ============================================================== */

static int64_t run_pool(gko_handle_t h, gko_dtype_t dt, int64_t batch, int64_t seq, int64_t dim,
                        int ldmode, int off, int lens, int normalize, uint64_t seed) {
  const size_t es = gko_dtype_size(dt);
  const int64_t ldx = ld_for(ldmode, dim), ldy = ld_for((ldmode + 1) % 3, dim);
  tmat X, Y;
  tm_make(&X, es, off, batch * seq, dim, ldx);
  tm_make(&Y, es, off, batch, dim, ldy);
  double *xv = malloc((size_t)(batch * seq * dim + 1) * 8);
  for (int64_t i = 0; i < batch * seq; i++) {
    const double mu = t_uniform(-2, 2);
    for (int64_t j = 0; j < dim; j++) {
      /* sequence 1 is all zeros: a zero mean, normalised to zero */
      tm_set(&X, dt, i, j, i / (seq ? seq : 1) == 1 ? 0.0 : mu + t_normal());
      xv[i * dim + j] = tm_get(&X, dt, i, j);
    }
  }
  int32_t *len = NULL, *lend = NULL;
  if (lens) {
    len = malloc((size_t)batch * 4);
    for (int64_t b = 0; b < batch; b++) {
      const uint64_t k = t_next() % 6;
      len[b] = k == 0 ? -2 : k == 1 ? 0 : k == 2 ? (int32_t)seq : k == 3 ? (int32_t)seq + 3
                                                                          : (int32_t)(t_next() % (uint64_t)(seq + 1));
    }
    if (batch > 1) len[1] = (int32_t)seq; /* the zero sequence is counted */
    lend = t_dalloc((size_t)batch * 4);
    t_h2d(lend, len, (size_t)batch * 4);
  }
  tm_up(&X);
  tm_up(&Y);
  T_OK(gko_mean_pool(h, dt, batch, seq, dim, seq ? tm_ptr(&X) : NULL, ldx, lend, normalize,
                     tm_ptr(&Y), ldy, NULL));
  tm_down(&Y);
  int64_t bad = 0;
  double *m = malloc((size_t)dim * 8), *a = malloc((size_t)dim * 8);
  for (int64_t b = 0; b < batch; b++) {
    int64_t L = lens ? len[b] : seq;
    L = L < 0 ? 0 : L > seq ? seq : L;
    double amax = 0, nrm = 0;
    for (int64_t j = 0; j < dim; j++) {
      double s = 0, sa = 0;
      for (int64_t q = 0; q < L; q++) {
        s += xv[(b * seq + q) * dim + j];
        sa += fabs(xv[(b * seq + q) * dim + j]);
      }
      m[j] = L ? s / (double)L : 0.0;
      a[j] = L ? sa / (double)L : 0.0;
      amax = fmax(amax, a[j]);
      nrm += m[j] * m[j];
    }
    const double den = normalize ? fmax(sqrt(nrm), 1e-12) : 1.0;
    const double scale = normalize ? amax / den + 1.0 : amax;
    for (int64_t j = 0; j < dim; j++) {
      const double want = m[j] / den, got = tm_get(&Y, dt, b, j);
      const int ok = close_to(dt, got, want, want == 0 && L == 0 ? 0 : scale) &&
                     (want != 0 || amax != 0 || got == 0);
      if (!ok && bad++ < 5)
        cr_log_error("seed %llu mean_pool %s batch %lld seq %lld dim %lld lens %d normalize %d: "
                     "y[%lld][%lld] = %.9g, want %.9g (L %lld)",
                     (unsigned long long)seed, t_dtype_name(dt), (long long)batch, (long long)seq,
                     (long long)dim, lens, normalize, (long long)b, (long long)j, got, want,
                     (long long)L);
    }
  }
  bad += tm_outside_written(&Y);
  tm_free(&X);
  tm_free(&Y);
  free(xv);
  free(m);
  free(a);
  free(len);
  if (lend) cudaFree(lend);
  return bad;
}

Test(mean_pool, lengths_normalisation_and_shapes, .timeout = 300) {
  uint64_t seed;
  gko_handle_t h = t_gpu_setup(&seed);
  const struct {
    int64_t batch, seq, dim;
  } k[] = {{1, 256, 384}, {3, 7, 1}, {8, 1, 3},   {5, 33, 1025},
           {2, 9, 4097},  {4, 0, 17}, {1, 5, 8193}, {37, 12, 768}};
  for (int d = 0; d < 3; d++)
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++)
      for (int lens = 0; lens < 2; lens++)
        for (int nrm = 0; nrm < 2; nrm++) {
          const int mode = (int)((i + (size_t)lens) % 3), off = (int)((i + (size_t)nrm) % 2);
          cr_expect_eq(run_pool(h, kDt[d], k[i].batch, k[i].seq, k[i].dim, mode, off, lens, nrm,
                                seed),
                       0, "seed %llu: %s %lld x %lld x %lld lengths %d normalize %d",
                       (unsigned long long)seed, t_dtype_name(kDt[d]), (long long)k[i].batch,
                       (long long)k[i].seq, (long long)k[i].dim, lens, nrm);
        }
  gko_destroy(h);
}

/* ==== empty problems, bad arguments ============================================ */

static const gko_handle_t kFake = (gko_handle_t)(uintptr_t)0x10;

#define T_DETAIL_HAS(word)                                                       \
  cr_expect(strstr(gko_last_error_detail(), (word)) != NULL, "detail \"%s\" lacks \"%s\"", \
            gko_last_error_detail(), (word))

/* An empty problem validates its sizes only: NULL pointers pass and the
 * handle is never used (so a fake one works). */
/* Empty problems pass every argument check without pointers; the fake
 * handle is then refused (a no-op still needs a live handle), a real one
 * (with a GPU) succeeds. */
static void empty_problems(gko_handle_t h, gko_status_t want) {
  gko_status_t got[6] = {
      gko_layernorm(h, GKO_DTYPE_F32, 0, 8, NULL, 8, NULL, 8, NULL, NULL, 1e-5f, NULL, 8, NULL, 8,
                    NULL),
      gko_softmax(h, GKO_DTYPE_F16, 0, 8, 1.0f, NULL, 8, NULL, 0, NULL, 0, NULL, 8, NULL),
      gko_embedding(h, GKO_DTYPE_BF16, 10, 8, NULL, 8, GKO_INDEX_INT64, NULL, 0, NULL, 8, NULL),
      gko_embedding(h, GKO_DTYPE_F32, 10, 0, NULL, 0, GKO_INDEX_INT32, NULL, 5, NULL, 0, NULL),
      gko_mean_pool(h, GKO_DTYPE_F32, 0, 4, 8, NULL, 8, NULL, 1, NULL, 8, NULL),
      gko_mean_pool(h, GKO_DTYPE_F16, 3, 4, 0, NULL, 0, NULL, 0, NULL, 0, NULL)};
  for (int i = 0; i < 6; i++)
    cr_expect_eq(got[i], want, "empty problem %d: %s (wanted %s)", i, gko_status_name(got[i]),
                 gko_status_name(want));
}

Test(encoder_args, empty_problems_need_no_pointers) {
  empty_problems(kFake, GKO_STATUS_INVALID_HANDLE);
  if (t_gpu_count() > 0) {
    gko_handle_t h = t_handle();
    empty_problems(h, GKO_STATUS_SUCCESS);
    gko_destroy(h);
  }
}

/* Every check before the device's: status, a detail naming the argument,
 * and the buffers untouched.  The fake handle is never dereferenced on
 * these paths. */
Test(encoder_args, layernorm_rejected_with_a_reason) {
  static float buf[256];
  memset(buf, 0xab, sizeof buf);
  float *x = buf, *r = buf + 64, *y = buf + 128, *s = buf + 192;
  const gko_dtype_t F = GKO_DTYPE_F32;
  const gko_status_t INV = GKO_STATUS_INVALID_VALUE;
#define LN(h, dt, rows, cols, x_, ldx, r_, ldr, g, b, eps, y_, ldy, s_, lds) \
  gko_layernorm(h, dt, rows, cols, x_, ldx, r_, ldr, g, b, eps, y_, ldy, s_, lds, NULL)
  T_FAILS(INV, LN(NULL, F, 2, 8, x, 8, r, 8, NULL, NULL, 1e-5f, y, 8, s, 8));
  T_DETAIL_HAS("handle");
  T_FAILS(INV, LN(kFake, (gko_dtype_t)9, 2, 8, x, 8, r, 8, NULL, NULL, 1e-5f, y, 8, s, 8));
  T_DETAIL_HAS("dtype");
  T_FAILS(GKO_STATUS_NOT_SUPPORTED,
          LN(kFake, GKO_DTYPE_F8E4M3, 2, 8, x, 8, r, 8, NULL, NULL, 1e-5f, y, 8, s, 8));
  T_DETAIL_HAS("dtype");
  T_FAILS(GKO_STATUS_NOT_SUPPORTED,
          LN(kFake, GKO_DTYPE_F8E5M2, 2, 8, x, 8, NULL, 8, NULL, NULL, 1e-5f, y, 8, NULL, 8));
  T_FAILS(INV, LN(kFake, F, -1, 8, x, 8, r, 8, NULL, NULL, 1e-5f, y, 8, s, 8));
  T_DETAIL_HAS("rows");
  T_FAILS(INV, LN(kFake, F, 2, 0, x, 8, r, 8, NULL, NULL, 1e-5f, y, 8, s, 8));
  T_DETAIL_HAS("cols");
  T_FAILS(INV, LN(kFake, F, 0, -3, x, 8, r, 8, NULL, NULL, 1e-5f, y, 8, s, 8));
  T_DETAIL_HAS("cols");
  T_FAILS(INV, LN(kFake, F, 2, 8, NULL, 8, r, 8, NULL, NULL, 1e-5f, y, 8, s, 8));
  T_DETAIL_HAS("x");
  T_FAILS(INV, LN(kFake, F, 2, 8, (char *)x + 2, 8, r, 8, NULL, NULL, 1e-5f, y, 8, s, 8));
  T_DETAIL_HAS("x =");
  T_FAILS(INV, LN(kFake, F, 2, 8, x, 7, r, 8, NULL, NULL, 1e-5f, y, 8, s, 8));
  T_DETAIL_HAS("ldx");
  T_FAILS(INV, LN(kFake, F, 2, 8, x, 8, (char *)r + 1, 8, NULL, NULL, 1e-5f, y, 8, s, 8));
  T_DETAIL_HAS("r =");
  T_FAILS(INV, LN(kFake, F, 2, 8, x, 8, r, 4, NULL, NULL, 1e-5f, y, 8, s, 8));
  T_DETAIL_HAS("ldr");
  T_FAILS(INV, LN(kFake, F, 2, 8, x, 8, r, 8, (char *)buf + 2, NULL, 1e-5f, y, 8, s, 8));
  T_DETAIL_HAS("gamma");
  T_FAILS(INV, LN(kFake, F, 2, 8, x, 8, r, 8, NULL, (char *)buf + 2, 1e-5f, y, 8, s, 8));
  T_DETAIL_HAS("beta");
  const float bad_eps[4] = {NAN, INFINITY, -INFINITY, -1e-6f};
  for (int i = 0; i < 4; i++) {
    T_FAILS(INV, LN(kFake, F, 2, 8, x, 8, r, 8, NULL, NULL, bad_eps[i], y, 8, s, 8));
    T_DETAIL_HAS("eps");
  }
  T_FAILS(INV, LN(kFake, F, 2, 8, x, 8, r, 8, NULL, NULL, 1e-5f, NULL, 8, s, 8));
  T_DETAIL_HAS("y is NULL");
  T_FAILS(INV, LN(kFake, F, 2, 8, x, 8, r, 8, NULL, NULL, 1e-5f, y, -8, s, 8));
  T_DETAIL_HAS("ldy");
  T_FAILS(INV, LN(kFake, F, 2, 8, x, 8, r, 8, NULL, NULL, 1e-5f, y, 8, (char *)s + 2, 8));
  T_DETAIL_HAS("s =");
  T_FAILS(INV, LN(kFake, F, 2, 8, x, 8, r, 8, NULL, NULL, 1e-5f, y, 8, s, 3));
  T_DETAIL_HAS("lds");
  T_FAILS(INV, LN(kFake, F, INT64_MAX / 4, 8, x, 8, NULL, 8, NULL, NULL, 1e-5f, y, 8, NULL, 8));
  T_DETAIL_HAS("overflow");
  /* overlaps: in place needs the same pointer and ld */
  T_FAILS(INV, LN(kFake, F, 2, 8, x, 8, r, 8, NULL, NULL, 1e-5f, x, 16, NULL, 8));
  T_DETAIL_HAS("ldy");
  T_FAILS(INV, LN(kFake, F, 2, 8, x, 8, r, 8, NULL, NULL, 1e-5f, x + 1, 8, NULL, 8));
  T_DETAIL_HAS("y overlaps x");
  T_FAILS(INV, LN(kFake, F, 2, 8, x, 8, r, 8, NULL, NULL, 1e-5f, r + 4, 8, NULL, 8));
  T_DETAIL_HAS("y overlaps r");
  T_FAILS(INV, LN(kFake, F, 2, 8, x, 8, r, 8, NULL, NULL, 1e-5f, y, 8, y, 8));
  T_DETAIL_HAS("y overlaps s");
  T_FAILS(INV, LN(kFake, F, 2, 8, x, 8, r, 8, NULL, NULL, 1e-5f, x, 8, x, 8));
  T_DETAIL_HAS("y overlaps s");
  T_FAILS(INV, LN(kFake, F, 2, 8, x, 8, r, 8, NULL, NULL, 1e-5f, y, 8, x + 8, 8));
  T_DETAIL_HAS("s overlaps x");
  T_FAILS(INV, LN(kFake, F, 2, 8, x, 8, r, 8, NULL, NULL, 1e-5f, y, 8, r, 4 + 8));
  T_DETAIL_HAS("lds");
  T_FAILS(INV, LN(kFake, F, 2, 8, x, 8, r, 8, y + 12, NULL, 1e-5f, y, 8, NULL, 8));
  T_DETAIL_HAS("gamma");
  T_FAILS(INV, LN(kFake, F, 2, 8, x, 8, r, 8, NULL, s + 3, 1e-5f, y, 8, s, 8));
  T_DETAIL_HAS("beta");
#undef LN
  for (size_t i = 0; i < sizeof buf / sizeof buf[0]; i++) {
    uint32_t bits;
    memcpy(&bits, &buf[i], 4);
    cr_expect_eq(bits, 0xabababab, "buffer element %zu modified", i);
  }
}

Test(encoder_args, softmax_rejected_with_a_reason) {
  static float buf[256];
  static int32_t lens[8];
  memset(buf, 0xab, sizeof buf);
  memset(lens, 0xab, sizeof lens);
  float *x = buf, *m = buf + 64, *y = buf + 128;
  const gko_dtype_t F = GKO_DTYPE_F32;
  const gko_status_t INV = GKO_STATUS_INVALID_VALUE;
#define SM(h, dt, rows, cols, sc, x_, ldx, m_, ldm, l_, g, y_, ldy) \
  gko_softmax(h, dt, rows, cols, sc, x_, ldx, m_, ldm, l_, g, y_, ldy, NULL)
  T_FAILS(INV, SM(NULL, F, 2, 8, 1.0f, x, 8, m, 8, lens, 1, y, 8));
  T_DETAIL_HAS("handle");
  T_FAILS(INV, SM(kFake, (gko_dtype_t)-1, 2, 8, 1.0f, x, 8, m, 8, lens, 1, y, 8));
  T_DETAIL_HAS("dtype");
  T_FAILS(GKO_STATUS_NOT_SUPPORTED,
          SM(kFake, GKO_DTYPE_F8E4M3, 2, 8, 1.0f, x, 8, NULL, 0, NULL, 0, y, 8));
  T_DETAIL_HAS("dtype");
  T_FAILS(INV, SM(kFake, F, -5, 8, 1.0f, x, 8, m, 8, lens, 1, y, 8));
  T_DETAIL_HAS("rows");
  T_FAILS(INV, SM(kFake, F, 2, 0, 1.0f, x, 8, m, 8, lens, 1, y, 8));
  T_DETAIL_HAS("cols");
  const float bad_scale[3] = {NAN, INFINITY, -INFINITY};
  for (int i = 0; i < 3; i++) {
    T_FAILS(INV, SM(kFake, F, 2, 8, bad_scale[i], x, 8, m, 8, lens, 1, y, 8));
    T_DETAIL_HAS("scale");
  }
  T_FAILS(INV, SM(kFake, F, 2, 8, 1.0f, NULL, 8, m, 8, lens, 1, y, 8));
  T_DETAIL_HAS("x is NULL");
  T_FAILS(INV, SM(kFake, GKO_DTYPE_F16, 2, 8, 1.0f, (char *)x + 1, 8, m, 8, lens, 1, y, 8));
  T_DETAIL_HAS("x =");
  T_FAILS(INV, SM(kFake, F, 2, 8, 1.0f, x, 2, m, 8, lens, 1, y, 8));
  T_DETAIL_HAS("ldx");
  T_FAILS(INV, SM(kFake, F, 2, 8, 1.0f, x, 8, (float *)((char *)m + 2), 8, lens, 1, y, 8));
  T_DETAIL_HAS("mask");
  T_FAILS(INV, SM(kFake, F, 2, 8, 1.0f, x, 8, m, 7, lens, 1, y, 8));
  T_DETAIL_HAS("ldmask");
  T_FAILS(INV, SM(kFake, F, 2, 8, 1.0f, x, 8, m, 8, (int32_t *)((char *)lens + 2), 1, y, 8));
  T_DETAIL_HAS("lengths");
  T_FAILS(INV, SM(kFake, F, 2, 8, 1.0f, x, 8, m, 8, NULL, 0, y, 8));
  T_DETAIL_HAS("group");
  T_FAILS(INV, SM(kFake, F, 2, 8, 1.0f, x, 8, NULL, 8, lens, -1, y, 8));
  T_DETAIL_HAS("group");
  T_FAILS(INV, SM(kFake, F, 2, 8, 1.0f, x, 8, m, 8, lens, 1, NULL, 8));
  T_DETAIL_HAS("y is NULL");
  T_FAILS(INV, SM(kFake, F, 2, 8, 1.0f, x, 8, m, 8, lens, 1, y, 1));
  T_DETAIL_HAS("ldy");
  T_FAILS(INV, SM(kFake, F, 2, 8, 1.0f, x, 8, m, 8, lens, 1, x, 12));
  T_DETAIL_HAS("ldy");
  T_FAILS(INV, SM(kFake, F, 2, 8, 1.0f, x, 8, m, 8, lens, 1, x + 3, 8));
  T_DETAIL_HAS("y overlaps x");
  T_FAILS(INV, SM(kFake, F, 3, 8, 1.0f, x, 8, m, 8, lens, 2, m + 8, 8));
  T_DETAIL_HAS("y overlaps mask");
  T_FAILS(INV, SM(kFake, F, 2, 8, 1.0f, x, 8, NULL, 0, (int32_t *)y + 1, 1, y, 8));
  T_DETAIL_HAS("lengths");
#undef SM
  for (size_t i = 0; i < sizeof buf / sizeof buf[0]; i++) {
    uint32_t bits;
    memcpy(&bits, &buf[i], 4);
    cr_expect_eq(bits, 0xabababab, "buffer element %zu modified", i);
  }
  for (int i = 0; i < 8; i++) cr_expect_eq((uint32_t)lens[i], 0xababababu, "lengths modified");
}

Test(encoder_args, embedding_and_mean_pool_rejected_with_a_reason) {
  static float buf[256];
  static int64_t ids[8];
  memset(buf, 0xab, sizeof buf);
  memset(ids, 0xab, sizeof ids);
  float *t = buf, *y = buf + 128;
  const gko_dtype_t F = GKO_DTYPE_F32;
  const gko_status_t INV = GKO_STATUS_INVALID_VALUE;
  const gko_index_t I64 = GKO_INDEX_INT64;
#define EM(h, dt, nr, dim, t_, ldt, it, ids_, n, y_, ldy) \
  gko_embedding(h, dt, nr, dim, t_, ldt, it, ids_, n, y_, ldy, NULL)
  T_FAILS(INV, EM(NULL, F, 4, 8, t, 8, I64, ids, 4, y, 8));
  T_DETAIL_HAS("handle");
  T_FAILS(INV, EM(kFake, (gko_dtype_t)7, 4, 8, t, 8, I64, ids, 4, y, 8));
  T_DETAIL_HAS("dtype");
  T_FAILS(GKO_STATUS_NOT_SUPPORTED, EM(kFake, GKO_DTYPE_F8E5M2, 4, 8, t, 8, I64, ids, 4, y, 8));
  T_FAILS(INV, EM(kFake, F, -1, 8, t, 8, I64, ids, 4, y, 8));
  T_DETAIL_HAS("num_rows");
  T_FAILS(INV, EM(kFake, F, 4, -8, t, 8, I64, ids, 4, y, 8));
  T_DETAIL_HAS("dim");
  T_FAILS(INV, EM(kFake, F, 4, 8, NULL, 8, I64, ids, 4, y, 8));
  T_DETAIL_HAS("table");
  T_FAILS(INV, EM(kFake, GKO_DTYPE_F16, 4, 8, (char *)t + 1, 8, I64, ids, 4, y, 8));
  T_DETAIL_HAS("table");
  T_FAILS(INV, EM(kFake, F, 4, 8, t, 6, I64, ids, 4, y, 8));
  T_DETAIL_HAS("ldt");
  T_FAILS(INV, EM(kFake, F, 4, 8, t, 8, (gko_index_t)2, ids, 4, y, 8));
  T_DETAIL_HAS("index_type");
  T_FAILS(INV, EM(kFake, F, 4, 8, t, 8, I64, NULL, 4, y, 8));
  T_DETAIL_HAS("ids");
  T_FAILS(INV, EM(kFake, F, 4, 8, t, 8, I64, (char *)ids + 4, 4, y, 8));
  T_DETAIL_HAS("ids");
  T_FAILS(INV, EM(kFake, F, 4, 8, t, 8, I64, ids, -2, y, 8));
  T_DETAIL_HAS("n =");
  T_FAILS(INV, EM(kFake, F, 4, 8, t, 8, I64, ids, 4, NULL, 8));
  T_DETAIL_HAS("y is NULL");
  T_FAILS(INV, EM(kFake, F, 4, 8, t, 8, I64, ids, 4, y, 7));
  T_DETAIL_HAS("ldy");
  T_FAILS(INV, EM(kFake, F, 4, 8, t, 8, I64, ids, 4, t + 24, 8));
  T_DETAIL_HAS("y overlaps table");
  T_FAILS(INV, EM(kFake, F, 4, 8, t, 8, GKO_INDEX_INT32, y + 2, 4, y, 8));
  T_DETAIL_HAS("y overlaps ids");
#undef EM
#define MP(h, dt, b, seq, dim, x_, ldx, l_, nrm, y_, ldy) \
  gko_mean_pool(h, dt, b, seq, dim, x_, ldx, l_, nrm, y_, ldy, NULL)
  float *x = buf;
  int32_t *lens = (int32_t *)ids;
  T_FAILS(INV, MP(NULL, F, 2, 4, 8, x, 8, lens, 1, y, 8));
  T_DETAIL_HAS("handle");
  T_FAILS(GKO_STATUS_NOT_SUPPORTED, MP(kFake, GKO_DTYPE_F8E4M3, 2, 4, 8, x, 8, lens, 1, y, 8));
  T_DETAIL_HAS("dtype");
  T_FAILS(INV, MP(kFake, F, -2, 4, 8, x, 8, lens, 1, y, 8));
  T_DETAIL_HAS("batch");
  T_FAILS(INV, MP(kFake, F, 2, -4, 8, x, 8, lens, 1, y, 8));
  T_DETAIL_HAS("seq");
  T_FAILS(INV, MP(kFake, F, 2, 4, -8, x, 8, lens, 1, y, 8));
  T_DETAIL_HAS("dim");
  T_FAILS(INV, MP(kFake, F, INT64_MAX / 2, 4, 8, x, 8, lens, 1, y, 8));
  T_DETAIL_HAS("overflow");
  T_FAILS(INV, MP(kFake, F, 2, 4, 8, NULL, 8, lens, 1, y, 8));
  T_DETAIL_HAS("x is NULL");
  T_FAILS(INV, MP(kFake, F, 2, 4, 8, x, 5, lens, 1, y, 8));
  T_DETAIL_HAS("ldx");
  T_FAILS(INV, MP(kFake, F, 2, 4, 8, x, 8, (int32_t *)((char *)lens + 1), 1, y, 8));
  T_DETAIL_HAS("lengths");
  T_FAILS(INV, MP(kFake, F, 2, 4, 8, x, 8, lens, 1, NULL, 8));
  T_DETAIL_HAS("y is NULL");
  T_FAILS(INV, MP(kFake, F, 2, 4, 8, x, 8, lens, 1, y, 0));
  T_DETAIL_HAS("ldy");
  T_FAILS(INV, MP(kFake, F, 2, 4, 8, x, 8, lens, 1, x + 60, 8));
  T_DETAIL_HAS("y overlaps x");
  T_FAILS(INV, MP(kFake, F, 2, 4, 8, x, 8, (int32_t *)(y + 9), 1, y, 8));
  T_DETAIL_HAS("y overlaps lengths");
#undef MP
  for (size_t i = 0; i < sizeof buf / sizeof buf[0]; i++) {
    uint32_t bits;
    memcpy(&bits, &buf[i], 4);
    cr_expect_eq(bits, 0xabababab, "buffer element %zu modified", i);
  }
  for (int i = 0; i < 8; i++) cr_expect_eq((uint64_t)ids[i], 0xababababababababull);
}

/* Interleaved column slices of one matrix (the same ld) do not overlap and
 * are accepted; the check is exact for a shared pitch. */
Test(encoder_args, interleaved_slices_are_not_an_overlap) {
  T_REQUIRE_GPU();
  gko_handle_t h = t_handle();
  const int64_t rows = 5, cols = 8, ld = 16;
  float *buf = t_dalloc(rows * ld * 4);
  t_memset(buf, 0, rows * ld * 4);
  /* x in columns 0-7, y in columns 8-15 */
  T_OK(gko_layernorm(h, GKO_DTYPE_F32, rows, cols, buf, ld, NULL, 0, NULL, NULL, 1e-5f, buf + 8,
                     ld, NULL, 0, NULL));
  T_OK(gko_softmax(h, GKO_DTYPE_F32, rows, cols, 1.0f, buf + 8, ld, NULL, 0, NULL, 0, buf, ld,
                   NULL));
  /* shifted by one element, the slices share memory */
  T_FAILS(GKO_STATUS_INVALID_VALUE,
          gko_softmax(h, GKO_DTYPE_F32, rows, cols, 1.0f, buf + 1, ld, NULL, 0, NULL, 0, buf + 8,
                      ld, NULL));
  T_CUDA(cudaDeviceSynchronize());
  cudaFree(buf);
  gko_destroy(h);
}

/* Device-side refusals: pageable host memory, and a zero-size call on a
 * real handle; the output stays poisoned. */
Test(encoder_args, device_checks_leave_outputs_untouched) {
  T_REQUIRE_GPU();
  gko_handle_t h = t_handle();
  const int64_t rows = 4, cols = 64;
  const size_t bytes = rows * cols * 4;
  float *x = t_dalloc(bytes), *y = t_dalloc(bytes + 64);
  int32_t *ids = t_dalloc(rows * 4);
  t_memset(x, 0x3c, bytes);
  t_memset(ids, 0, rows * 4);
  t_memset(y, T_POISON_BYTE, bytes + 64);
  T_OK(gko_layernorm(h, GKO_DTYPE_F32, 0, cols, NULL, cols, NULL, 0, NULL, NULL, 1e-5f, NULL,
                     cols, NULL, 0, NULL));
  T_OK(gko_mean_pool(h, GKO_DTYPE_F32, 0, 3, cols, NULL, cols, NULL, 1, NULL, cols, NULL));
  T_FAILS(GKO_STATUS_NOT_SUPPORTED,
          gko_softmax(h, GKO_DTYPE_F8E4M3, rows, cols, 1.0f, x, cols, NULL, 0, NULL, 0, y, cols,
                      NULL));
  int pageable = 0;
  T_CUDA(cudaDeviceGetAttribute(&pageable, cudaDevAttrPageableMemoryAccess, 0));
  if (!pageable) {
    float *hx = calloc(rows * cols, 4);
    int32_t *hl = calloc(rows, 4);
    T_FAILS(GKO_STATUS_INVALID_VALUE,
            gko_layernorm(h, GKO_DTYPE_F32, rows, cols, hx, cols, NULL, 0, NULL, NULL, 1e-5f, y,
                          cols, NULL, 0, NULL));
    T_DETAIL_HAS("x");
    T_FAILS(GKO_STATUS_INVALID_VALUE,
            gko_softmax(h, GKO_DTYPE_F32, rows, cols, 1.0f, x, cols, NULL, 0, hl, 1, y, cols,
                        NULL));
    T_DETAIL_HAS("lengths");
    T_FAILS(GKO_STATUS_INVALID_VALUE, gko_embedding(h, GKO_DTYPE_F32, rows, cols, x, cols,
                                                    GKO_INDEX_INT32, hl, rows, y, cols, NULL));
    T_DETAIL_HAS("ids");
    T_FAILS(GKO_STATUS_INVALID_VALUE,
            gko_mean_pool(h, GKO_DTYPE_F32, 1, rows, cols, hx, cols, NULL, 0, y, cols, NULL));
    T_DETAIL_HAS("x");
    free(hx);
    free(hl);
  }
  t_assert_poisoned(y, bytes + 64);
  cudaFree(x);
  cudaFree(y);
  cudaFree(ids);
  gko_destroy(h);
}

/* ==== graph capture ============================================================= */

/* One call of each captured into a CUDA graph and replayed gives the eager
 * results bit for bit. */
Test(encoder_graph, capture_and_replay_match_eager) {
  gko_handle_t h = t_gpu_setup(NULL);
  const int64_t rows = 300, cols = 384, n = rows * cols;
  const gko_dtype_t dt = GKO_DTYPE_F16;
  uint16_t *hx = malloc((n + 1) * 2);
  int32_t hid[64], hl[4] = {70, 0, 75, 1000};
  for (int64_t i = 0; i < n + 1; i++) hx[i] = t_double_to_f16(t_normal());
  for (int i = 0; i < 64; i++) hid[i] = (int32_t)(t_next() % (uint64_t)rows);
  hid[5] = -1;
  uint16_t *x = t_dalloc(n * 2), *r = t_dalloc(n * 2);
  void *ids = t_dalloc(sizeof hid);
  int32_t *lens = t_dalloc(sizeof hl);
  uint16_t *out[2][5];
  t_h2d(x, hx, n * 2);
  t_h2d(r, hx + 1, n * 2);
  t_h2d(ids, hid, sizeof hid);
  t_h2d(lens, hl, sizeof hl);
  for (int k = 0; k < 2; k++)
    for (int o = 0; o < 5; o++) {
      out[k][o] = t_dalloc(n * 2);
      t_memset(out[k][o], T_POISON_BYTE, n * 2);
    }
  cudaStream_t st;
  T_CUDA(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  cudaGraph_t g = NULL;
  cudaGraphExec_t ge = NULL;
  for (int k = 0; k < 2; k++) {
    if (k == 1) T_CUDA(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
    gko_status_t s[4];
    s[0] = gko_layernorm(h, dt, rows, cols, x, cols, r, cols, NULL, NULL, 1e-5f, out[k][0], cols,
                         out[k][1], cols, st);
    s[1] = gko_softmax(h, dt, rows, cols, 0.125f, x, cols, NULL, 0, lens, 75, out[k][2], cols, st);
    s[2] = gko_embedding(h, dt, rows, cols, x, cols, GKO_INDEX_INT32, ids, 64, out[k][3], cols,
                         st);
    s[3] = gko_mean_pool(h, dt, 4, 75, cols, x, cols, lens, 1, out[k][4], cols, st);
    if (k == 1) T_CUDA(cudaStreamEndCapture(st, &g));
    for (int i = 0; i < 4; i++)
      cr_assert_eq(s[i], GKO_STATUS_SUCCESS, "call %d (%s): %s", i, k ? "captured" : "eager",
                   gko_last_error_detail());
  }
  T_CUDA(cudaGraphInstantiate(&ge, g, 0));
  for (int rep = 0; rep < 2; rep++) T_CUDA(cudaGraphLaunch(ge, st));
  T_CUDA(cudaStreamSynchronize(st));
  uint16_t *a = malloc(n * 2), *b = malloc(n * 2);
  for (int o = 0; o < 5; o++) {
    t_d2h(a, out[0][o], n * 2);
    t_d2h(b, out[1][o], n * 2);
    cr_expect_eq(memcmp(a, b, n * 2), 0, "output %d: the graph's replay differs from eager", o);
  }
  free(a);
  free(b);
  free(hx);
  cudaGraphExecDestroy(ge);
  cudaGraphDestroy(g);
  cudaStreamDestroy(st);
  for (int k = 0; k < 2; k++)
    for (int o = 0; o < 5; o++) cudaFree(out[k][o]);
  cudaFree(x);
  cudaFree(r);
  cudaFree(ids);
  cudaFree(lens);
  gko_destroy(h);
}
