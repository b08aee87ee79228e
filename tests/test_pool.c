/* test_pool.c -- 2-D pooling forward: descriptor, output shape (torch's
 * formula, floor and ceil mode) and argument checks on the host, and the
 * GPU suite against a float64 reference.
 *
 * Error measure: max pooling must return exactly the reference's element
 * (a rounded input: no arithmetic), NaN where a NaN is in the window;
 * average pooling within 2 u relative per element (u the dtype's unit
 * roundoff: the f32 sum of at most a few thousand inputs, then one
 * rounding) of the float64 mean of the same rounded inputs.  Outputs are
 * poisoned (NaN bits) first and followed by a guard zone that must not
 * change. */
#include "common.h"

typedef struct {
  gko_pool_mode_t mode;
  gko_dtype_t dt;
  int layout;
  int64_t n, c, h, w, r, s, sh, sw, ph, pw, dh, dw;
  int ceil_mode, off, nans;
} pcase;

static pcase pc_make(gko_pool_mode_t mode, gko_dtype_t dt, int layout, int64_t n, int64_t c,
                     int64_t h, int64_t w, int64_t r, int64_t s, int64_t stride, int64_t pad) {
  pcase p;
  memset(&p, 0, sizeof p);
  p.mode = mode;
  p.dt = dt;
  p.layout = layout;
  p.n = n;
  p.c = c;
  p.h = h;
  p.w = w;
  p.r = r;
  p.s = s;
  p.sh = p.sw = stride;
  p.ph = p.pw = pad;
  p.dh = p.dw = 1;
  return p;
}

static const char *pdescribe(const pcase *p, char *buf, size_t n) {
  snprintf(buf, n,
           "mode %d %s %s N=%lld C=%lld H=%lld W=%lld R=%lld S=%lld stride=%lld/%lld "
           "pad=%lld/%lld dil=%lld/%lld ceil=%d off=%d nans=%d seed=%s",
           (int)p->mode, t_dtype_name(p->dt), p->layout ? "NHWC" : "NCHW", (long long)p->n,
           (long long)p->c, (long long)p->h, (long long)p->w, (long long)p->r, (long long)p->s,
           (long long)p->sh, (long long)p->sw, (long long)p->ph, (long long)p->pw,
           (long long)p->dh, (long long)p->dw, p->ceil_mode, p->off, p->nans,
           getenv("GKO_TEST_SEED") ? getenv("GKO_TEST_SEED") : "(random)");
  return buf;
}

static gko_pool_desc_t pmake_desc(const pcase *p) {
  gko_pool_desc_t d = NULL;
  T_OK(gko_pool_desc_create(&d, p->mode, p->dt, p->layout, p->n, p->c, p->h, p->w, p->r, p->s));
  T_OK(gko_pool_desc_set(d, GKO_POOL_ATTR_STRIDE_H, p->sh));
  T_OK(gko_pool_desc_set(d, GKO_POOL_ATTR_STRIDE_W, p->sw));
  T_OK(gko_pool_desc_set(d, GKO_POOL_ATTR_PAD_H, p->ph));
  T_OK(gko_pool_desc_set(d, GKO_POOL_ATTR_PAD_W, p->pw));
  T_OK(gko_pool_desc_set(d, GKO_POOL_ATTR_DILATION_H, p->dh));
  T_OK(gko_pool_desc_set(d, GKO_POOL_ATTR_DILATION_W, p->dw));
  T_OK(gko_pool_desc_set(d, GKO_POOL_ATTR_CEIL_MODE, p->ceil_mode));
  return d;
}

/* torch's pooling_output_shape (div_rtn: floor division), restated; torch
 * refuses an output below 1 */
static int64_t ref_out(int64_t in, int64_t k, int64_t st, int64_t pad, int64_t dil, int ceil) {
  const int64_t num = in + 2 * pad - dil * (k - 1) - 1 + (ceil ? st - 1 : 0);
  int64_t q = num / st;
  if (num % st != 0 && num < 0) q--;
  int64_t o = q + 1;
  if (ceil && (o - 1) * st >= in + pad) o--;
  return o;
}

/* ---- host-only ---------------------------------------------------------------- */

Test(pool_args, enum_values_are_the_documented_ones) {
  cr_expect_eq(GKO_POOL_MAX, 0);
  cr_expect_eq(GKO_POOL_AVG, 1);
  cr_expect_eq(GKO_POOL_AVG_EXCLUDE_PAD, 2);
  cr_expect_eq(GKO_POOL_ATTR_MODE, 0);
  cr_expect_eq(GKO_POOL_ATTR_S, 8);
  cr_expect_eq(GKO_POOL_ATTR_CEIL_MODE, 15);
  cr_expect_eq(sizeof(gko_pool_mode_t), sizeof(int));
  cr_expect_eq(sizeof(gko_pool_attr_t), sizeof(int));
}

Test(pool_args, descriptor_rejects_bad_values_and_keeps_state) {
  gko_pool_desc_t keep = (gko_pool_desc_t)(uintptr_t)0x77, d = keep;
  T_FAILS(GKO_STATUS_INVALID_VALUE,
          gko_pool_desc_create(NULL, GKO_POOL_MAX, GKO_DTYPE_F16, 0, 1, 1, 1, 1, 1, 1));
  T_FAILS(GKO_STATUS_INVALID_VALUE,
          gko_pool_desc_create(&d, (gko_pool_mode_t)3, GKO_DTYPE_F16, 0, 1, 1, 1, 1, 1, 1));
  cr_expect(strstr(gko_last_error_detail(), "MODE") != NULL, "%s", gko_last_error_detail());
  T_FAILS(GKO_STATUS_INVALID_VALUE,
          gko_pool_desc_create(&d, GKO_POOL_MAX, (gko_dtype_t)5, 0, 1, 1, 1, 1, 1, 1));
  T_FAILS(GKO_STATUS_NOT_SUPPORTED,
          gko_pool_desc_create(&d, GKO_POOL_MAX, GKO_DTYPE_F8E4M3, 0, 1, 1, 1, 1, 1, 1));
  T_FAILS(GKO_STATUS_INVALID_VALUE,
          gko_pool_desc_create(&d, GKO_POOL_MAX, GKO_DTYPE_F16, 2, 1, 1, 1, 1, 1, 1));
  T_FAILS(GKO_STATUS_INVALID_VALUE,
          gko_pool_desc_create(&d, GKO_POOL_MAX, GKO_DTYPE_F16, 0, -1, 1, 1, 1, 1, 1));
  T_FAILS(GKO_STATUS_INVALID_VALUE,
          gko_pool_desc_create(&d, GKO_POOL_MAX, GKO_DTYPE_F16, 0, 1, 0, 1, 1, 1, 1));
  T_FAILS(GKO_STATUS_INVALID_VALUE,
          gko_pool_desc_create(&d, GKO_POOL_MAX, GKO_DTYPE_F16, 0, 1, 1, 0, 1, 1, 1));
  T_FAILS(GKO_STATUS_INVALID_VALUE,
          gko_pool_desc_create(&d, GKO_POOL_MAX, GKO_DTYPE_F16, 0, 1, 1, 1, 1, 0, 1));
  cr_expect_eq(d, keep, "desc written on failure");
  T_OK(gko_pool_desc_create(&d, GKO_POOL_AVG, GKO_DTYPE_BF16, 1, 0, 3, 5, 5, 2, 2));
  int64_t v = -7;
  const struct {
    gko_pool_attr_t a;
    int64_t want;
  } def[] = {{GKO_POOL_ATTR_MODE, 1},     {GKO_POOL_ATTR_DTYPE, 2},     {GKO_POOL_ATTR_LAYOUT, 1},
             {GKO_POOL_ATTR_N, 0},        {GKO_POOL_ATTR_C, 3},         {GKO_POOL_ATTR_R, 2},
             {GKO_POOL_ATTR_STRIDE_H, 1}, {GKO_POOL_ATTR_PAD_W, 0},     {GKO_POOL_ATTR_DILATION_H, 1},
             {GKO_POOL_ATTR_CEIL_MODE, 0}};
  for (size_t i = 0; i < sizeof def / sizeof def[0]; i++) {
    T_OK(gko_pool_desc_get(d, def[i].a, &v));
    cr_expect_eq(v, def[i].want, "attr %d: %lld", (int)def[i].a, (long long)v);
  }
  const struct {
    gko_pool_attr_t a;
    int64_t bad;
  } bad[] = {{GKO_POOL_ATTR_STRIDE_H, 0}, {GKO_POOL_ATTR_PAD_W, -1}, {GKO_POOL_ATTR_DILATION_W, 0},
             {GKO_POOL_ATTR_CEIL_MODE, 2}, {GKO_POOL_ATTR_MODE, -1}, {(gko_pool_attr_t)16, 1},
             {(gko_pool_attr_t)-1, 1}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    int64_t before = 0, after = 0;
    const int known = (int)bad[i].a >= 0 && (int)bad[i].a < 16;
    if (known) T_OK(gko_pool_desc_get(d, bad[i].a, &before));
    T_FAILS(GKO_STATUS_INVALID_VALUE, gko_pool_desc_set(d, bad[i].a, bad[i].bad));
    if (known) {
      T_OK(gko_pool_desc_get(d, bad[i].a, &after));
      cr_expect_eq(before, after);
    }
  }
  v = -7;
  T_FAILS(GKO_STATUS_INVALID_VALUE, gko_pool_desc_get(d, (gko_pool_attr_t)99, &v));
  cr_expect_eq(v, -7);
  T_FAILS(GKO_STATUS_INVALID_VALUE, gko_pool_desc_get(d, GKO_POOL_ATTR_N, NULL));
  T_FAILS(GKO_STATUS_INVALID_VALUE, gko_pool_desc_set(NULL, GKO_POOL_ATTR_N, 1));
  gko_pool_desc_destroy(d);
  T_OK(gko_pool_desc_destroy(NULL));
}

Test(pool_args, output_shape_is_torchs) {
  /* every (in, k, stride, pad, dil, ceil) in a small range that torch accepts */
  int checked = 0;
  for (int64_t in = 1; in <= 12; in++)
    for (int64_t k = 1; k <= 5; k++)
      for (int64_t st = 1; st <= 4; st++)
        for (int64_t dil = 1; dil <= 2; dil++)
          for (int64_t pad = 0; pad <= k / 2 + 1; pad++)
            for (int ceil = 0; ceil <= 1; ceil++) {
              /* torch's pool2d_shape_check and pooling_output_shape */
              const int torch_ok = pad <= k / 2 && pad <= (dil * (k - 1) + 1) / 2 &&
                                   ref_out(in, k, st, pad, dil, ceil) >= 1;
              pcase p = pc_make(GKO_POOL_MAX, GKO_DTYPE_F32, 0, 1, 1, in, 3, k, 1, st, 0);
              p.sw = 1;
              p.ph = pad;
              p.dh = dil;
              p.ceil_mode = ceil;
              gko_pool_desc_t d = pmake_desc(&p);
              int64_t oh = -1, ow = -1;
              if (!torch_ok) {
                T_FAILS(GKO_STATUS_INVALID_VALUE, gko_pool_output_shape(d, &oh, &ow));
                gko_pool_desc_destroy(d);
                continue;
              }
              T_OK(gko_pool_output_shape(d, &oh, &ow));
              cr_expect_eq(oh, ref_out(in, k, st, pad, dil, ceil),
                           "in %lld k %lld stride %lld pad %lld dil %lld ceil %d: %lld",
                           (long long)in, (long long)k, (long long)st, (long long)pad,
                           (long long)dil, ceil, (long long)oh);
              cr_expect_eq(ow, 3);
              gko_pool_desc_destroy(d);
              checked++;
            }
  cr_expect(checked > 500);
}

Test(pool_args, output_shape_rejects_and_leaves_outputs) {
  int64_t oh = -5, ow = -5;
  /* padding above half the window */
  pcase p = pc_make(GKO_POOL_MAX, GKO_DTYPE_F16, 0, 1, 1, 8, 8, 3, 3, 1, 2);
  gko_pool_desc_t d = pmake_desc(&p);
  T_FAILS(GKO_STATUS_INVALID_VALUE, gko_pool_output_shape(d, &oh, &ow));
  cr_expect(strstr(gko_last_error_detail(), "half the window") != NULL, "%s",
            gko_last_error_detail());
  gko_pool_desc_destroy(d);
  /* dilation with average pooling */
  p = pc_make(GKO_POOL_AVG, GKO_DTYPE_F16, 0, 1, 1, 8, 8, 3, 3, 1, 1);
  p.dw = 2;
  d = pmake_desc(&p);
  T_FAILS(GKO_STATUS_INVALID_VALUE, gko_pool_output_shape(d, &oh, &ow));
  cr_expect(strstr(gko_last_error_detail(), "dilation") != NULL);
  gko_pool_desc_destroy(d);
  /* window larger than the padded input */
  p = pc_make(GKO_POOL_MAX, GKO_DTYPE_F16, 0, 1, 1, 2, 8, 5, 3, 1, 1);
  d = pmake_desc(&p);
  T_FAILS(GKO_STATUS_INVALID_VALUE, gko_pool_output_shape(d, &oh, &ow));
  gko_pool_desc_destroy(d);
  /* absurd sizes */
  p = pc_make(GKO_POOL_MAX, GKO_DTYPE_F16, 0, INT64_MAX / 4, 1 << 20, 1 << 20, 8, 1, 1, 1, 0);
  d = pmake_desc(&p);
  T_FAILS(GKO_STATUS_INVALID_VALUE, gko_pool_output_shape(d, &oh, &ow));
  T_FAILS(GKO_STATUS_INVALID_VALUE, gko_pool_output_shape(d, NULL, &ow));
  T_FAILS(GKO_STATUS_INVALID_VALUE, gko_pool_output_shape(d, &oh, NULL));
  T_FAILS(GKO_STATUS_INVALID_VALUE, gko_pool_output_shape(NULL, &oh, &ow));
  gko_pool_desc_destroy(d);
  cr_expect(oh == -5 && ow == -5, "outputs written on failure");
}

/* ---- GPU ------------------------------------------------------------------------- */

enum { kGuard = 256 };

static int64_t pxi(const pcase *p, int64_t n, int64_t c, int64_t y, int64_t x) {
  return p->layout == GKO_CONV_LAYOUT_NCHW ? ((n * p->c + c) * p->h + y) * p->w + x
                                           : ((n * p->h + y) * p->w + x) * p->c + c;
}

/* Runs one case and checks it; returns the number of problems. */
static int prun(gko_handle_t h, const pcase *p, cudaStream_t st) {
  char cbuf[400];
  pdescribe(p, cbuf, sizeof cbuf);
  gko_pool_desc_t d = pmake_desc(p);
  int64_t oh = -1, ow = -1;
  T_OK(gko_pool_output_shape(d, &oh, &ow));
  const size_t es = gko_dtype_size(p->dt);
  const int64_t nx = p->n * p->c * p->h * p->w, ny = p->n * p->c * oh * ow;
  const size_t bx = (size_t)(nx + p->off) * es + kGuard, by = (size_t)(ny + p->off) * es + kGuard;
  unsigned char *hx = malloc(bx), *hy = malloc(by), *hy0 = malloc(by);
  cr_assert(hx && hy && hy0);
  memset(hx, 0, bx);
  /* poison: NaN bits, or with NaN inputs a finite pattern (0x7B bytes), so
   * that an unwritten NaN window shows */
  memset(hy0, p->nans ? 0x7B : T_POISON_BYTE, by);
  void *px = hx + p->off * es;
  for (int64_t i = 0; i < nx; i++)
    t_hv_set(p->dt, px, i, p->nans && i % 37 == 5 ? NAN : t_uniform(-4, 4));
  unsigned char *dx = t_dalloc(bx), *dy = t_dalloc(by);
  t_h2d(dx, hx, bx);
  t_h2d(dy, hy0, by);
  gko_status_t s = gko_pool_forward(h, d, nx ? dx + p->off * es : NULL,
                                    ny ? dy + p->off * es : NULL, st);
  cr_assert_eq(s, GKO_STATUS_SUCCESS, "%s: %s [%s]", gko_status_name(s), gko_last_error_detail(),
               cbuf);
  T_CUDA(cudaStreamSynchronize(st));
  t_d2h(hy, dy, by);
  const unsigned char *py = hy + p->off * es;
  int bad = 0;
  int64_t touched = 0;
  for (size_t i = 0; i < by; i++)
    if ((i < p->off * es || i >= (p->off + ny) * es) && hy[i] != hy0[i]) touched++;
  cr_expect_eq(touched, 0, "%lld bytes outside y changed [%s]", (long long)touched, cbuf);
  bad += touched > 0;
  const double tol = 2 * t_unit(p->dt);
  int64_t wrong = 0;
  for (int64_t n = 0; n < p->n; n++)
    for (int64_t c = 0; c < p->c; c++)
      for (int64_t y = 0; y < oh; y++)
        for (int64_t x = 0; x < ow; x++) {
          const int64_t h0 = y * p->sh - p->ph, w0 = x * p->sw - p->pw;
          double acc = p->mode == GKO_POOL_MAX ? -INFINITY : 0, mag = 0;
          int nan = 0;
          int64_t inside = 0;
          for (int64_t r = 0; r < p->r; r++)
            for (int64_t q = 0; q < p->s; q++) {
              const int64_t ih = h0 + r * p->dh, iw = w0 + q * p->dw;
              if (ih < 0 || ih >= p->h || iw < 0 || iw >= p->w) continue;
              const double v = t_hv_get(p->dt, px, pxi(p, n, c, ih, iw));
              inside++;
              if (isnan(v)) nan = 1;
              if (p->mode == GKO_POOL_MAX) acc = v > acc ? v : acc;
              else acc += v;
              mag += fabs(v);
            }
          double div = 1;
          if (p->mode == GKO_POOL_AVG) {
            const int64_t h1 = h0 + p->r < p->h + p->ph ? h0 + p->r : p->h + p->ph;
            const int64_t w1 = w0 + p->s < p->w + p->pw ? w0 + p->s : p->w + p->pw;
            div = (double)((h1 - h0) * (w1 - w0));
          } else if (p->mode == GKO_POOL_AVG_EXCLUDE_PAD) {
            div = (double)inside;
          }
          acc /= div;
          /* the f32 sum's error bound (inside - 1) u32 sum |x|, then one rounding */
          const double tol_abs = (double)inside * ldexp(1, -24) * mag / div;
          const int64_t yi = p->layout == GKO_CONV_LAYOUT_NCHW
                                 ? ((n * p->c + c) * oh + y) * ow + x
                                 : ((n * oh + y) * ow + x) * p->c + c;
          const double got = t_hv_get(p->dt, py, yi);
          int ok;
          if (nan) ok = isnan(got);
          else if (p->mode == GKO_POOL_MAX) ok = got == acc;
          else ok = fabs(got - acc) <= tol * fabs(acc) + tol_abs;
          if (!ok && wrong++ < 3)
            cr_log_error("n %lld c %lld oh %lld ow %lld: got %.9g, want %.9g%s [%s]",
                         (long long)n, (long long)c, (long long)y, (long long)x, got, acc,
                         nan ? " (NaN)" : "", cbuf);
        }
  cr_expect_eq(wrong, 0, "%lld wrong outputs [%s]", (long long)wrong, cbuf);
  bad += wrong > 0;
  gko_pool_desc_destroy(d);
  free(hx);
  free(hy);
  free(hy0);
  cudaFree(dx);
  cudaFree(dy);
  return bad;
}

typedef struct {
  uint64_t seed;
  gko_handle_t h;
  cudaStream_t st;
  int bad;
} psweep;

static psweep psweep_begin(void) {
  psweep sw = {0};
  sw.h = t_gpu_setup(&sw.seed);
  T_CUDA(cudaStreamCreateWithFlags(&sw.st, cudaStreamNonBlocking));
  return sw;
}

static void psweep_end(psweep *sw) {
  cr_expect_eq(sw->bad, 0, "%d problems (seed %llu)", sw->bad, (unsigned long long)sw->seed);
  cudaStreamDestroy(sw->st);
  gko_destroy(sw->h);
}

static const gko_dtype_t kDts[3] = {GKO_DTYPE_F32, GKO_DTYPE_F16, GKO_DTYPE_BF16};

Test(pool, grid_of_modes_shapes_layouts_dtypes, .timeout = 600) {
  psweep sw = psweep_begin();
  for (int m = 0; m < 3; m++)
    for (int L = 0; L < 2; L++)
      for (int d = 0; d < 3; d++) {
        const gko_pool_mode_t mode = (gko_pool_mode_t)m;
        pcase p;
        /* ResNet's stem pool: 3x3 stride 2 pad 1, C = 64 (16-byte vectors) */
        p = pc_make(mode, kDts[d], L, 2, 64, 15, 14, 3, 3, 2, 1);
        sw.bad += prun(sw.h, &p, sw.st);
        /* odd C (scalar NHWC), H != W, R != S, asymmetric stride and pad */
        p = pc_make(mode, kDts[d], L, 3, 5, 9, 7, 3, 2, 2, 1);
        p.sw = 1;
        p.pw = 0;
        sw.bad += prun(sw.h, &p, sw.st);
        /* ceil mode: the last window partly past the input */
        p = pc_make(mode, kDts[d], L, 2, 16, 8, 10, 3, 3, 2, 1);
        p.ceil_mode = 1;
        sw.bad += prun(sw.h, &p, sw.st);
        p = pc_make(mode, kDts[d], L, 1, 8, 7, 7, 2, 2, 2, 0);
        p.ceil_mode = 1;
        sw.bad += prun(sw.h, &p, sw.st);
        /* stride larger than the window, 1x1 window */
        p = pc_make(mode, kDts[d], L, 2, 8, 11, 13, 2, 2, 3, 1);
        sw.bad += prun(sw.h, &p, sw.st);
        p = pc_make(mode, kDts[d], L, 2, 3, 5, 4, 1, 1, 1, 0);
        sw.bad += prun(sw.h, &p, sw.st);
        /* global pooling (adaptive_avg_pool2d(1) for AVG): the plane kernel
         * in NCHW, planes of 49 and of 1000 elements */
        p = pc_make(mode, kDts[d], L, 3, 24, 7, 7, 7, 7, 1, 0);
        sw.bad += prun(sw.h, &p, sw.st);
        p = pc_make(mode, kDts[d], L, 2, 5, 25, 40, 25, 40, 1, 0);
        sw.bad += prun(sw.h, &p, sw.st);
        /* NHWC: several groups of 32 channel vectors, the last one partial */
        p = pc_make(mode, kDts[d], L, 2, 320, 3, 4, 3, 4, 1, 0);
        sw.bad += prun(sw.h, &p, sw.st);
        /* ceil mode with a window larger than the input (torch gives 1 x 1) */
        p = pc_make(mode, kDts[d], L, 2, 8, 3, 3, 4, 4, 2, 0);
        p.ceil_mode = 1;
        sw.bad += prun(sw.h, &p, sw.st);
        /* an element offset: pointers off 16-byte alignment (scalar path) */
        p = pc_make(mode, kDts[d], L, 2, 16, 9, 9, 3, 3, 2, 1);
        p.off = 1;
        sw.bad += prun(sw.h, &p, sw.st);
        if (mode == GKO_POOL_MAX) { /* dilation */
          p = pc_make(mode, kDts[d], L, 2, 8, 12, 11, 3, 2, 1, 1);
          p.dh = 2;
          p.dw = 3;
          sw.bad += prun(sw.h, &p, sw.st);
          /* a dilated window with every tap in the padding: -inf */
          p = pc_make(mode, kDts[d], L, 1, 8, 2, 5, 2, 1, 1, 0);
          p.ph = 1;
          p.dh = 3;
          sw.bad += prun(sw.h, &p, sw.st);
        }
      }
  psweep_end(&sw);
}

Test(pool, nan_propagates_through_every_mode) {
  psweep sw = psweep_begin();
  for (int m = 0; m < 3; m++)
    for (int L = 0; L < 2; L++)
      for (int d = 0; d < 3; d++) {
        pcase p = pc_make((gko_pool_mode_t)m, kDts[d], L, 2, 16, 9, 8, 3, 3, 2, 1);
        p.nans = 1;
        sw.bad += prun(sw.h, &p, sw.st);
        p = pc_make((gko_pool_mode_t)m, kDts[d], L, 2, 16, 6, 6, 6, 6, 1, 0); /* global */
        p.nans = 1;
        sw.bad += prun(sw.h, &p, sw.st);
      }
  psweep_end(&sw);
}

Test(pool, large_batch_resnet_shapes, .timeout = 600) {
  psweep sw = psweep_begin();
  for (int d = 1; d < 3; d++)
    for (int L = 0; L < 2; L++) {
      pcase p = pc_make(GKO_POOL_MAX, kDts[d], L, 4, 64, 112, 112, 3, 3, 2, 1);
      sw.bad += prun(sw.h, &p, sw.st);
      p = pc_make(GKO_POOL_AVG, kDts[d], L, 16, 512, 7, 7, 7, 7, 1, 0);
      sw.bad += prun(sw.h, &p, sw.st);
    }
  psweep_end(&sw);
}

Test(pool, empty_batch_and_bad_arguments_leave_output_untouched) {
  T_REQUIRE_GPU();
  gko_handle_t h = t_handle();
  /* N = 0: nothing read or written, NULLs allowed */
  pcase p = pc_make(GKO_POOL_MAX, GKO_DTYPE_F16, 1, 0, 8, 5, 5, 3, 3, 2, 1);
  gko_pool_desc_t d = pmake_desc(&p);
  T_OK(gko_pool_forward(h, d, NULL, NULL, NULL));
  gko_pool_desc_destroy(d);
  p = pc_make(GKO_POOL_MAX, GKO_DTYPE_F16, 1, 2, 8, 6, 6, 3, 3, 2, 1);
  d = pmake_desc(&p);
  const size_t xb = 2 * 8 * 6 * 6 * 2, yb = 2 * 8 * 3 * 3 * 2;
  unsigned char *x = t_dalloc(xb), *y = t_dalloc(yb + 64);
  t_memset(y, T_POISON_BYTE, yb + 64);
  T_CUDA(cudaDeviceSynchronize());
  T_FAILS(GKO_STATUS_INVALID_VALUE, gko_pool_forward(NULL, d, x, y, NULL));
  T_FAILS(GKO_STATUS_INVALID_VALUE, gko_pool_forward(h, NULL, x, y, NULL));
  T_FAILS(GKO_STATUS_INVALID_VALUE, gko_pool_forward(h, d, NULL, y, NULL));
  cr_expect(strstr(gko_last_error_detail(), "x is NULL") != NULL);
  T_FAILS(GKO_STATUS_INVALID_VALUE, gko_pool_forward(h, d, x, NULL, NULL));
  T_FAILS(GKO_STATUS_INVALID_VALUE, gko_pool_forward(h, d, x + 1, y, NULL));
  T_FAILS(GKO_STATUS_INVALID_VALUE, gko_pool_forward(h, d, x, y + 1, NULL));
  T_FAILS(GKO_STATUS_INVALID_VALUE, gko_pool_forward(h, d, x, x + 16, NULL));
  cr_expect(strstr(gko_last_error_detail(), "overlaps") != NULL);
  /* a descriptor the shape check rejects */
  T_OK(gko_pool_desc_set(d, GKO_POOL_ATTR_PAD_H, 2));
  T_FAILS(GKO_STATUS_INVALID_VALUE, gko_pool_forward(h, d, x, y, NULL));
  T_OK(gko_pool_desc_set(d, GKO_POOL_ATTR_PAD_H, 1));
  /* pageable host memory the GPU cannot read */
  int pageable = 0;
  T_CUDA(cudaDeviceGetAttribute(&pageable, cudaDevAttrPageableMemoryAccess, 0));
  if (!pageable) {
    void *hx = aligned_alloc(256, xb + 256);
    T_FAILS(GKO_STATUS_INVALID_VALUE, gko_pool_forward(h, d, hx, y, NULL));
    free(hx);
  }
  t_assert_poisoned(y, yb + 64);
  gko_pool_desc_destroy(d);
  cudaFree(x);
  cudaFree(y);
  gko_destroy(h);
}

Test(pool, graph_capture_matches_eager) {
  T_REQUIRE_GPU();
  gko_handle_t h = t_handle();
  for (int L = 0; L < 2; L++) {
    pcase p = pc_make(GKO_POOL_MAX, GKO_DTYPE_F16, L, 4, 64, 20, 20, 3, 3, 2, 1);
    gko_pool_desc_t d = pmake_desc(&p);
    int64_t oh, ow;
    T_OK(gko_pool_output_shape(d, &oh, &ow));
    const size_t xb = 4 * 64 * 20 * 20 * 2, yb = (size_t)(4 * 64 * oh * ow * 2);
    unsigned char *hx = malloc(xb);
    for (size_t i = 0; i < xb / 2; i++) t_hv_set(GKO_DTYPE_F16, hx, (int64_t)i, t_uniform(-1, 1));
    unsigned char *x = t_dalloc(xb), *y1 = t_dalloc(yb), *y2 = t_dalloc(yb);
    t_h2d(x, hx, xb);
    cudaStream_t st;
    T_CUDA(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    T_OK(gko_pool_forward(h, d, x, y1, st));
    cudaGraph_t g;
    cudaGraphExec_t ge;
    T_CUDA(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
    gko_status_t s = gko_pool_forward(h, d, x, y2, st);
    T_CUDA(cudaStreamEndCapture(st, &g));
    T_OK(s);
    T_CUDA(cudaGraphInstantiate(&ge, g, 0));
    T_CUDA(cudaGraphLaunch(ge, st));
    T_CUDA(cudaStreamSynchronize(st));
    unsigned char *h1 = malloc(yb), *h2 = malloc(yb);
    t_d2h(h1, y1, yb);
    t_d2h(h2, y2, yb);
    cr_expect_eq(memcmp(h1, h2, yb), 0, "graph replay differs from eager");
    cudaGraphExecDestroy(ge);
    cudaGraphDestroy(g);
    cudaStreamDestroy(st);
    gko_pool_desc_destroy(d);
    free(hx);
    free(h1);
    free(h2);
    cudaFree(x);
    cudaFree(y1);
    cudaFree(y2);
  }
  gko_destroy(h);
}
