/* test_conv_kernels.c -- every configuration of the SM90 implicit-GEMM
 * convolution kernels (kernels/conv_sm90.h), each forced, against a float64
 * direct convolution.  The public suite (test_conv.c) reaches only the
 * configuration the plan's rule picks for each shape; this one runs each
 * kernel on shapes no rule would give it.  Linked against libgko.a to reach
 * the hidden kernel interface.
 *
 * y = act(alpha * conv(x, w) + bias + beta * z), NHWC / KRSC / NHWK, f16 and
 * bf16.  Error: relative Frobenius error over the checked outputs against
 * the reference from the same rounded inputs, tolerance 4 u + 16 * 2^-24 *
 * sqrt(C R S) (test_conv.c's).  y is poisoned (NaN bytes) with a guard zone
 * behind it: every output must be written and no guard byte touched.  Large
 * cases check every output for NaN and a random sample of pixels (all
 * channels) against the reference.
 *
 * Also the space-to-depth copies that feed the stem's rewrite
 * (kernels/space_to_depth.h), bit for bit against the host's. */
#include "common.h"

#include "../kernels/conv_sm90.h"
#include "../kernels/gemm_sm90.h"
#include "../kernels/space_to_depth.h"

typedef struct {
  int n, h, w, c, k, r, s;
  int ph, pw, ph_end, pw_end, sh, sw, dh, dw;
  int act;   /* 0 none, 1 ReLU, 2 GELU-erf, 3 GELU-tanh */
  int bias;  /* add bias[k] */
  int res;   /* 0: no z; 1: z its own tensor; 2: z is y (read before written) */
  float alpha, beta;
} kcase;

static const char *const kCfgName[GK_CONV_SM90_NCONFIGS] = {
    "64x128", "64x64", "pp128x64", "pp128x128", "pp128x128c12"};

static int out_extent(int in, int pad, int pad_end, int dil, int r, int stride) {
  return (in + pad + pad_end - dil * (r - 1) - 1) / stride + 1;
}

/* Runs case kc on configuration cfg in dtype dt; returns 0 where the kernel
 * does not serve it (setup's NOT_SUPPORTED), 1 after checking. */
static int run_case(gko_dtype_t dt, int cfg, const kcase *kc, uint64_t seed) {
  const int oh = out_extent(kc->h, kc->ph, kc->ph_end, kc->dh, kc->r, kc->sh);
  const int ow = out_extent(kc->w, kc->pw, kc->pw_end, kc->dw, kc->s, kc->sw);
  int dev = 0, sms = 0;
  T_CUDA(cudaGetDevice(&dev));
  T_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  gk_conv_sm90_problem p = {
      .dtype = dt, .act = kc->act, .n = kc->n, .h = kc->h, .w = kc->w, .c = kc->c,
      .k = kc->k, .r = kc->r, .s = kc->s, .oh = oh, .ow = ow,
      .pad_h = kc->ph, .pad_w = kc->pw, .pad_h_end = kc->ph_end, .pad_w_end = kc->pw_end,
      .stride_h = kc->sh, .stride_w = kc->sw, .dil_h = kc->dh, .dil_w = kc->dw,
      .device = dev, .sm_count = sms};
  char what[256];
  snprintf(what, sizeof what,
           "%s %s N=%d H=%d W=%d C=%d K=%d R=%d S=%d pad=%d,%d/%d,%d stride=%d/%d dil=%d/%d "
           "act=%d bias=%d res=%d alpha=%g beta=%g seed=%llu",
           t_dtype_name(dt), kCfgName[cfg], kc->n, kc->h, kc->w, kc->c, kc->k, kc->r, kc->s,
           kc->ph, kc->ph_end, kc->pw, kc->pw_end, kc->sh, kc->sw, kc->dh, kc->dw, kc->act,
           kc->bias, kc->res, (double)kc->alpha, (double)kc->beta, (unsigned long long)seed);
  gko_status_t st = gk_conv_sm90_setup(&p, cfg);
  if (st == GKO_STATUS_NOT_SUPPORTED) return 0;
  cr_assert_eq(st, GKO_STATUS_SUCCESS, "setup: %s: %s [%s]", gko_status_name(st),
               gko_last_error_detail(), what);

  const int64_t nx = (int64_t)kc->n * kc->h * kc->w * kc->c;
  const int64_t nw = (int64_t)kc->k * kc->r * kc->s * kc->c;
  const int64_t npix = (int64_t)kc->n * oh * ow, ny = npix * kc->k;
  const size_t es = 2, guard = 256;
  void *hx = malloc(nx * es), *hw = malloc(nw * es), *hb = malloc(kc->k * es);
  void *hz = malloc(ny * es), *hy = malloc(ny * es + guard);
  cr_assert(hx && hw && hb && hz && hy);
  for (int64_t i = 0; i < nx; i++) t_hv_set(dt, hx, i, t_uniform(-1, 1));
  for (int64_t i = 0; i < nw; i++) t_hv_set(dt, hw, i, t_uniform(-1, 1));
  for (int64_t i = 0; i < kc->k; i++) t_hv_set(dt, hb, i, t_uniform(-1, 1));
  for (int64_t i = 0; i < ny; i++) t_hv_set(dt, hz, i, t_uniform(-1, 1));

  void *dx = t_dalloc(nx * es), *dw = t_dalloc(nw * es), *db = t_dalloc(kc->k * es);
  void *dy = t_dalloc(ny * es + guard), *dz = kc->res == 1 ? t_dalloc(ny * es) : NULL;
  t_h2d(dx, hx, nx * es);
  t_h2d(dw, hw, nw * es);
  t_h2d(db, hb, kc->k * es);
  if (kc->res == 2) { /* z is y: y holds z's values, its guard the poison */
    t_memset(dy, T_POISON_BYTE, ny * es + guard);
    t_h2d(dy, hz, ny * es);
    dz = dy;
  } else {
    t_memset(dy, T_POISON_BYTE, ny * es + guard);
    if (dz) t_h2d(dz, hz, ny * es);
  }
  cudaStream_t stream;
  T_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  st = gk_conv_sm90_launch(&p, cfg, kc->alpha, kc->beta, dx, dw, kc->res ? dz : NULL, dy,
                           kc->bias ? db : NULL, stream);
  cr_assert_eq(st, GKO_STATUS_SUCCESS, "launch: %s: %s [%s]", gko_status_name(st),
               gko_last_error_detail(), what);
  T_CUDA(cudaStreamSynchronize(stream));
  T_CUDA(cudaStreamDestroy(stream));
  t_d2h(hy, dy, ny * es + guard);

  const int64_t nan_at = t_first_nan(dt, hy, (size_t)ny);
  cr_assert_eq(nan_at, -1, "output %lld not written (NaN) [%s]", (long long)nan_at, what);
  for (size_t i = 0; i < guard; i++)
    cr_assert_eq(((unsigned char *)hy)[ny * es + i], T_POISON_BYTE,
                 "guard byte %zu after y was written [%s]", i, what);

  /* the reference at every pixel, or at 2048 random ones */
  const int64_t sample = npix <= 4096 ? npix : 2048;
  double num = 0, den = 0;
  for (int64_t t = 0; t < sample; t++) {
    const int64_t pix = sample == npix ? t : (int64_t)(t_next() % (uint64_t)npix);
    const int n = (int)(pix / ((int64_t)oh * ow)), y = (int)(pix / ow % oh), x = (int)(pix % ow);
    for (int k = 0; k < kc->k; k++) {
      double acc = 0;
      for (int r = 0; r < kc->r; r++) {
        const int iy = y * kc->sh - kc->ph + r * kc->dh;
        if (iy < 0 || iy >= kc->h) continue;
        for (int s = 0; s < kc->s; s++) {
          const int ix = x * kc->sw - kc->pw + s * kc->dw;
          if (ix < 0 || ix >= kc->w) continue;
          const int64_t xo = (((int64_t)n * kc->h + iy) * kc->w + ix) * kc->c;
          const int64_t wo = (((int64_t)k * kc->r + r) * kc->s + s) * kc->c;
          for (int c = 0; c < kc->c; c++)
            acc += t_hv_get(dt, hx, xo + c) * t_hv_get(dt, hw, wo + c);
        }
      }
      const int64_t yo = pix * kc->k + k;
      double v = kc->alpha * acc + (kc->bias ? t_hv_get(dt, hb, k) : 0.0) +
                 (kc->res ? kc->beta * t_hv_get(dt, hz, yo) : 0.0);
      v = t_ref_act(kc->act, v);
      const double d = t_hv_get(dt, hy, yo) - v;
      num += d * d;
      den += v * v;
    }
  }
  const double err = sqrt(num / (den > 0 ? den : 1));
  const double tol = 4 * t_unit(dt) + 16 * ldexp(1, -24) * sqrt((double)kc->c * kc->r * kc->s);
  cr_expect(err <= tol, "relative error %.3g > %.3g [%s]", err, tol, what);

  cudaFree(dx), cudaFree(dw), cudaFree(db), cudaFree(dy);
  if (kc->res == 1) cudaFree(dz);
  free(hx), free(hw), free(hb), free(hz), free(hy);
  return 1;
}

/* Configuration cfg over shapes chosen to miss its tiles: pixel counts
 * and channel counts that are not multiples of the tile, strides, uneven
 * padding, dilation, K below one tile, more tiles than SMs (the persistent
 * kernels take several per CTA), every epilogue, z apart from y and z = y;
 * f16 and bf16.  One test per configuration, so that each fits a
 * sanitizer job. */
static void check_configuration(int cfg) {
  uint64_t seed;
  gko_handle_t h = t_gpu_setup(&seed);
  if (!gk_sm90_built() || t_cc() != 90) {
    gko_destroy(h);
    cr_skip_test("no SM90 kernels in this build, or not a compute capability 9.0 GPU");
  }
  const kcase cases[] = {
      /* n  h   w   c    k   r  s  ph pw phe pwe sh sw dh dw act bias res alpha beta */
      {2, 9, 11, 64, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 1.0f, 0.0f},
      {3, 13, 7, 72, 136, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1.0f, 0.0f},
      {1, 17, 19, 8, 24, 5, 3, 2, 1, 0, 2, 2, 1, 1, 1, 2, 1, 1, 0.5f, 0.75f},
      {2, 15, 15, 128, 72, 3, 3, 2, 2, 1, 1, 2, 2, 2, 2, 3, 1, 2, 1.0f, 1.0f},
      {4, 14, 14, 64, 128, 1, 1, 0, 0, 0, 0, 2, 2, 1, 1, 0, 1, 1, 1.0f, -1.0f},
      {2, 7, 7, 256, 200, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, -1.5f, 0.5f},
      /* more tiles than SMs: 16 * 56 * 56 pixels, 392+ tiles of 128 */
      {16, 56, 56, 64, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1.0f, 1.0f},
      {8, 28, 28, 128, 128, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 2, 1, 0, 1.0f, 0.0f},
  };
  const gko_dtype_t dts[] = {GKO_DTYPE_F16, GKO_DTYPE_BF16};
  int ran = 0;
  for (size_t d = 0; d < 2; d++)
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
      ran += run_case(dts[d], cfg, &cases[i], seed);
  cr_expect(ran > 0, "configuration %s served no case", kCfgName[cfg]);
  gko_destroy(h);
}

Test(conv_kernels, cutlass_64x128, .timeout = 600) { check_configuration(GK_CONV_SM90_64x128); }
Test(conv_kernels, cutlass_64x64, .timeout = 600) { check_configuration(GK_CONV_SM90_64x64); }
Test(conv_kernels, pingpong_128x64, .timeout = 600) { check_configuration(GK_CONV_SM90_PP_128x64); }
Test(conv_kernels, pingpong_128x128, .timeout = 600) {
  check_configuration(GK_CONV_SM90_PP_128x128);
}
Test(conv_kernels, pingpong_128x128_cluster_1x2, .timeout = 600) {
  check_configuration(GK_CONV_SM90_PP_128x128_C12);
}

/* x2 and w2 of the space-to-depth rewrite against the host's copy, bit for
 * bit (random bit patterns, NaNs included), with x2 and w2 poisoned and a
 * guard zone behind each: ResNet's stem, a wide image (several of the copy's
 * column tiles, the last partial), stride 4, stride 1 with channel padding,
 * padding beyond the filter, extra zero channels, and an input row too wide
 * for the tiled copy's shared memory (C = 1001: the untiled kernel). */
Test(conv_kernels, space_to_depth_copies_bit_for_bit, .timeout = 300) {
  uint64_t seed;
  gko_handle_t h = t_gpu_setup(&seed);
  const struct {
    int64_t n, h, w, c, k, r, s, sh, sw, ph, pw, extra;
  } e[] = {
      {2, 30, 33, 3, 16, 7, 7, 2, 2, 3, 3, 0},   {1, 5, 301, 3, 8, 7, 7, 2, 2, 3, 3, 0},
      {1, 31, 35, 3, 8, 11, 11, 4, 4, 2, 2, 0},  {2, 10, 11, 9, 8, 5, 5, 1, 1, 2, 2, 0},
      {1, 9, 10, 3, 8, 7, 7, 2, 2, 8, 9, 8},     {1, 10, 10, 1001, 4, 5, 5, 5, 5, 0, 0, 0},
  };
  const size_t guard = 256;
  for (size_t i = 0; i < sizeof e / sizeof e[0]; i++) {
    const int64_t oh = (e[i].h + 2 * e[i].ph - e[i].r) / e[i].sh + 1,
                  ow = (e[i].w + 2 * e[i].pw - e[i].s) / e[i].sw + 1;
    const int64_t real = e[i].sh * e[i].s * e[i].c, r2 = (e[i].r + e[i].sh - 1) / e[i].sh;
    const gk_s2d_args a = {.n = e[i].n, .h = e[i].h, .w = e[i].w, .c = e[i].c, .r = e[i].r,
                           .s = e[i].s, .stride_h = e[i].sh, .stride_w = e[i].sw,
                           .pad_h = e[i].ph, .pad_w = e[i].pw, .h2 = oh + r2 - 1, .w2 = ow,
                           .r2 = r2, .c2 = (real + 7) / 8 * 8 + e[i].extra};
    const int64_t nx = a.n * a.h * a.w * a.c, nw = e[i].k * a.r * a.s * a.c;
    const int64_t nx2 = a.n * a.h2 * a.w2 * a.c2, nw2 = e[i].k * a.r2 * a.c2;
    uint16_t *hx = malloc(nx * 2), *hw = malloc(nw * 2);
    uint16_t *hx2 = malloc(nx2 * 2 + guard), *hw2 = malloc(nw2 * 2 + guard);
    cr_assert(hx && hw && hx2 && hw2);
    for (int64_t j = 0; j < nx; j++) hx[j] = (uint16_t)t_next();
    for (int64_t j = 0; j < nw; j++) hw[j] = (uint16_t)t_next();
    void *dx = t_dalloc(nx * 2), *dw = t_dalloc(nw * 2);
    void *dx2 = t_dalloc(nx2 * 2 + guard), *dw2 = t_dalloc(nw2 * 2 + guard);
    t_h2d(dx, hx, nx * 2);
    t_h2d(dw, hw, nw * 2);
    t_memset(dx2, T_POISON_BYTE, nx2 * 2 + guard);
    t_memset(dw2, T_POISON_BYTE, nw2 * 2 + guard);
    cr_assert_eq(gk_s2d_launch(&a, dx, dx2, NULL), GKO_STATUS_SUCCESS, "%s", gko_last_error_detail());
    cr_assert_eq(gk_s2d_filter_launch(&a, e[i].k, dw, dw2, NULL), GKO_STATUS_SUCCESS, "%s",
                 gko_last_error_detail());
    T_CUDA(cudaDeviceSynchronize());
    t_d2h(hx2, dx2, nx2 * 2 + guard);
    t_d2h(hw2, dw2, nw2 * 2 + guard);
    int64_t bad = 0, first = -1;
    for (int64_t n = 0; n < a.n; n++)
      for (int64_t y = 0; y < a.h2; y++)
        for (int64_t x = 0; x < a.w2; x++)
          for (int64_t ch = 0; ch < a.c2; ch++) {
            uint16_t want = 0;
            if (ch < real) {
              const int64_t dy = ch / (a.s * a.c), t = ch % (a.s * a.c) / a.c, ci = ch % a.c;
              const int64_t ih = a.stride_h * y + dy - a.pad_h, iw = a.stride_w * x + t - a.pad_w;
              if (ih >= 0 && ih < a.h && iw >= 0 && iw < a.w)
                want = hx[((n * a.h + ih) * a.w + iw) * a.c + ci];
            }
            const int64_t at = ((n * a.h2 + y) * a.w2 + x) * a.c2 + ch;
            if (hx2[at] != want && bad++ == 0) first = at;
          }
    cr_expect_eq(bad, 0, "case %zu: x2 has %lld wrong elements, the first at %lld", i,
                 (long long)bad, (long long)first);
    bad = 0;
    for (int64_t kk = 0; kk < e[i].k; kk++)
      for (int64_t ra = 0; ra < a.r2; ra++)
        for (int64_t ch = 0; ch < a.c2; ch++) {
          uint16_t want = 0;
          if (ch < real) {
            const int64_t blk = ch / a.c, ci = ch % a.c, rr = a.stride_h * ra + blk / a.s;
            if (rr < a.r) want = hw[((kk * a.r + rr) * a.s + blk % a.s) * a.c + ci];
          }
          bad += hw2[(kk * a.r2 + ra) * a.c2 + ch] != want;
        }
    cr_expect_eq(bad, 0, "case %zu: w2 has %lld wrong elements", i, (long long)bad);
    const unsigned char *gx = (const unsigned char *)hx2 + nx2 * 2,
                        *gw = (const unsigned char *)hw2 + nw2 * 2;
    for (size_t g = 0; g < guard; g++) {
      cr_assert_eq(gx[g], T_POISON_BYTE, "case %zu: x2's guard byte %zu written", i, g);
      cr_assert_eq(gw[g], T_POISON_BYTE, "case %zu: w2's guard byte %zu written", i, g);
    }
    cudaFree(dx), cudaFree(dw), cudaFree(dx2), cudaFree(dw2);
    free(hx), free(hw), free(hx2), free(hw2);
  }
  gko_destroy(h);
}
