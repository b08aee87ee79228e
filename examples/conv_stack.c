/* conv_stack.c -- the two convolutions of a ResNet-18 basic block (He et al.,
 * "Deep Residual Learning for Image Recognition", 2016; conv2_x stage) in
 * NHWC f16 through gko's Conv2d plans, checked against a direct float64
 * convolution on sampled output positions:
 *
 *     y1 = ReLU(conv3x3(x,  w1) + b1)      GKO_EPILOGUE_BIAS_RELU
 *     y  = ReLU(conv3x3(y1, w2) + b2)      GKO_EPILOGUE_BIAS_RELU
 *
 * batch 2, 64 channels in and out, 56 x 56, stride 1, zero padding 1; x
 * [N][H][W][C] (torch's channels_last), filters [K][R][S][C] (KRSC), biases
 * of 64.  Both convolutions have the same shape, so one plan serves both
 * (filters and biases are execute arguments).  The block's identity
 * shortcut (y = ReLU(conv(y1) + b2 + x)) is left out: gko_conv has no
 * residual input.
 *
 *   build/bin/conv_stack
 *
 * Exit status: 0 PASS, 1 FAIL, 2 no usable GPU (the library says why). */
#include <cuda_runtime_api.h>
#include <gko.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "example.h"

enum { N = 2, C = 64, H = 56, W = 56, K = 64, R = 3, S = 3, PAD = 1, SAMPLES = 64 };

/* Tolerances (relative Frobenius error over all 64 channels of the sampled
 * positions).  x, the filters and the biases are f16 numbers and the
 * reference uses exactly those, so what remains is
 *   - f32 accumulation of R*S*C = 576 products: ~1e-6, negligible;
 *   - y1 rounded to f16 once (cuBLASLt fuses bias + ReLU) or twice (gko's
 *     epilogue pass): at most 2^-11 = 4.9e-4 relative per element, about
 *     2e-4 .. 3e-4 RMS;
 *   - y: the errors of y1 enter through 576-term sums with random-sign
 *     weights (same relative RMS), plus y's own rounding: about 4e-4 RMS.
 * y1 is checked at 1e-3 and y (against a reference whose y1 is kept in
 * float64) at 2e-3: 3-5x above the expected error, and far below what a real
 * mistake gives (a wrong padding, filter layout or bias: 1e-2 .. 1). */
#define TOL_Y1 1e-3
#define TOL_Y 2e-3

/* the random inputs' seed (uniform() in example.h) */
static uint64_t g_rng = 0xC0117ACCull;

/* ---- direct float64 convolution (NHWC, KRSC, stride 1, zero padding) ------ */

/* out[k] = ReLU(b[k] + sum_{r,s,c} w[k][r][s][c] * in(n, oh - PAD + r, ow - PAD + s, c)) for
 * all K channels of output position (n, oh, ow); in() reads a double image
 * through `at`, which returns NULL outside the image (the zero padding). */
typedef const double *(*pixel_fn)(void *ctx, int n, int ih, int iw);

static void conv_at(pixel_fn at, void *ctx, const double *w, const double *b, int n, int oh,
                    int ow, double out[K]) {
  for (int k = 0; k < K; k++) out[k] = b[k];
  for (int r = 0; r < R; r++)
    for (int s = 0; s < S; s++) {
      const double *px = at(ctx, n, oh - PAD + r, ow - PAD + s);
      if (!px) continue;
      for (int k = 0; k < K; k++) {
        const double *wk = w + ((size_t)(k * R + r) * S + s) * C;
        double acc = 0;
        for (int c = 0; c < C; c++) acc += wk[c] * px[c];
        out[k] += acc;
      }
    }
  for (int k = 0; k < K; k++) out[k] = out[k] > 0 ? out[k] : 0;
}

/* the input image x, as doubles */
typedef struct {
  const double *x;
} image_ctx;
static const double *image_at(void *ctx, int n, int ih, int iw) {
  if (ih < 0 || ih >= H || iw < 0 || iw >= W) return NULL;
  return ((image_ctx *)ctx)->x + (((size_t)n * H + ih) * W + iw) * C;
}

/* y1 in float64, computed from x on demand (conv2 of a position needs the 3x3
 * neighbourhood of y1 around it) */
typedef struct {
  image_ctx img;
  const double *w1, *b1;
  double buf[R * S][K];
  int slot;
} y1_ctx;
static const double *y1_at(void *ctx, int n, int ih, int iw) {
  y1_ctx *c = ctx;
  if (ih < 0 || ih >= H || iw < 0 || iw >= W) return NULL;
  double *out = c->buf[c->slot++ % (R * S)];
  conv_at(image_at, &c->img, c->w1, c->b1, n, ih, iw, out);
  return out;
}

int main(void) {
  int dev = 0;
  int64_t cc = 0;
  gko_handle_t h = example_start("conv_stack", &dev, &cc); /* exits 2 without a usable GPU */
  printf("conv_stack: gko %s on device %d (sm_%lld)\n", gko_version_string(), dev,
         (long long)cc);

  /* one descriptor and plan for both 3x3 convolutions */
  gko_conv_desc_t desc;
  gko_conv_plan_t plan;
  GKO(gko_conv_desc_create(&desc, GKO_DTYPE_F16, GKO_CONV_LAYOUT_NHWC, N, C, H, W, K, R, S));
  GKO(gko_conv_desc_set(desc, GKO_CONV_ATTR_PAD_H, PAD));
  GKO(gko_conv_desc_set(desc, GKO_CONV_ATTR_PAD_W, PAD));
  GKO(gko_conv_desc_set(desc, GKO_CONV_ATTR_EPILOGUE, GKO_EPILOGUE_BIAS_RELU));
  int64_t oh = 0, ow = 0;
  GKO(gko_conv_output_shape(desc, &oh, &ow));
  if (oh != H || ow != W) {
    printf("FAIL: output %lld x %lld, expected %d x %d for a 3x3 'same' convolution\n",
           (long long)oh, (long long)ow, H, W);
    return 1;
  }
  GKO(gko_conv_plan_create(h, desc, &plan));
  GKO(gko_conv_desc_destroy(desc));
  size_t ws_bytes = 0, need = 0;
  GKO(gko_conv_workspace_size(plan, &ws_bytes));
  GKO(gko_conv_plan_describe(plan, NULL, 0, &need));
  char *text = xmalloc(need);
  GKO(gko_conv_plan_describe(plan, text, need, NULL));
  printf("y = ReLU(conv3x3(ReLU(conv3x3(x) + b1)) + b2): x [%d][%d][%d][%d] NHWC f16, "
         "filters [%d][%d][%d][%d] KRSC, stride 1, padding %d\n  plan: %s\n",
         N, H, W, C, K, R, S, C, PAD, text);
  free(text);

  /* fresh random inputs from a fixed seed; filters scaled so that the
   * pre-activations are of order 1 */
  const size_t nx = (size_t)N * H * W * C, nw = (size_t)K * R * S * C, ny = (size_t)N * H * W * K;
  uint16_t *x = random_halves(&g_rng, nx, 1.0);
  uint16_t *w1 = random_halves(&g_rng, nw, 3.0 / sqrt((double)(R * S * C)));
  uint16_t *b1 = random_halves(&g_rng, K, 0.5);
  uint16_t *w2 = random_halves(&g_rng, nw, 3.0 / sqrt((double)(R * S * C)));
  uint16_t *b2 = random_halves(&g_rng, K, 0.5);

  cudaStream_t stream;
  CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  uint16_t *dx, *dw1, *db1, *dw2, *db2, *dy1, *dy;
  void *ws = NULL;
  CUDA(cudaMalloc((void **)&dx, nx * 2));
  CUDA(cudaMalloc((void **)&dw1, nw * 2));
  CUDA(cudaMalloc((void **)&db1, K * 2));
  CUDA(cudaMalloc((void **)&dw2, nw * 2));
  CUDA(cudaMalloc((void **)&db2, K * 2));
  CUDA(cudaMalloc((void **)&dy1, ny * 2));
  CUDA(cudaMalloc((void **)&dy, ny * 2));
  if (ws_bytes) CUDA(cudaMalloc(&ws, ws_bytes));
  CUDA(cudaMemcpyAsync(dx, x, nx * 2, cudaMemcpyHostToDevice, stream));
  CUDA(cudaMemcpyAsync(dw1, w1, nw * 2, cudaMemcpyHostToDevice, stream));
  CUDA(cudaMemcpyAsync(db1, b1, K * 2, cudaMemcpyHostToDevice, stream));
  CUDA(cudaMemcpyAsync(dw2, w2, nw * 2, cudaMemcpyHostToDevice, stream));
  CUDA(cudaMemcpyAsync(db2, b2, K * 2, cudaMemcpyHostToDevice, stream));
  /* poison the outputs (0xFFFF is an f16 NaN): unwritten elements show */
  CUDA(cudaMemsetAsync(dy1, 0xFF, ny * 2, stream));
  CUDA(cudaMemsetAsync(dy, 0xFF, ny * 2, stream));

  /* the block: two executes of the same plan, one workspace, one stream */
  GKO(gko_conv_execute(plan, dx, dw1, db1, dy1, ws, ws_bytes, stream));
  GKO(gko_conv_execute(plan, dy1, dw2, db2, dy, ws, ws_bytes, stream));

  uint16_t *y1 = xmalloc(ny * 2), *y = xmalloc(ny * 2);
  CUDA(cudaMemcpyAsync(y1, dy1, ny * 2, cudaMemcpyDeviceToHost, stream));
  CUDA(cudaMemcpyAsync(y, dy, ny * 2, cudaMemcpyDeviceToHost, stream));
  CUDA(cudaStreamSynchronize(stream));

  /* every element written, finite and >= 0 (ReLU) */
  size_t bad1 = 0, bad2 = 0;
  for (size_t i = 0; i < ny; i++) {
    bad1 += (y1[i] & 0x7c00u) == 0x7c00u || (y1[i] & 0x8000u && y1[i] != 0x8000u);
    bad2 += (y[i] & 0x7c00u) == 0x7c00u || (y[i] & 0x8000u && y[i] != 0x8000u);
  }

  /* float64 reference at SAMPLES positions (the four corners of each image
   * first, where the padding matters, then random ones), all K channels */
  double *xd = xmalloc(nx * sizeof(double)), *w1d = xmalloc(nw * sizeof(double));
  double *w2d = xmalloc(nw * sizeof(double)), b1d[K], b2d[K];
  for (size_t i = 0; i < nx; i++) xd[i] = half_to_float(x[i]);
  for (size_t i = 0; i < nw; i++) {
    w1d[i] = half_to_float(w1[i]);
    w2d[i] = half_to_float(w2[i]);
  }
  for (int k = 0; k < K; k++) {
    b1d[k] = half_to_float(b1[k]);
    b2d[k] = half_to_float(b2[k]);
  }
  image_ctx img = {xd};
  y1_ctx y1c;
  y1c.img = img;
  y1c.w1 = w1d;
  y1c.b1 = b1d;
  y1c.slot = 0;
  double n1 = 0, d1 = 0, n2 = 0, d2 = 0, worst = 0;
  for (int i = 0; i < SAMPLES; i++) {
    const int corner = i / 4 < N ? i : -1;
    const int n = corner >= 0 ? corner / 4 : (int)uniform(&g_rng, 0, N);
    const int ph = corner >= 0 ? (corner & 1 ? H - 1 : 0) : (int)uniform(&g_rng, 0, H);
    const int pw = corner >= 0 ? (corner & 2 ? W - 1 : 0) : (int)uniform(&g_rng, 0, W);
    double r1[K], r2[K];
    conv_at(image_at, &img, w1d, b1d, n, ph, pw, r1);
    conv_at(y1_at, &y1c, w2d, b2d, n, ph, pw, r2);
    const size_t at = (((size_t)n * H + ph) * W + pw) * K;
    for (int k = 0; k < K; k++) {
      const double g1 = half_to_float(y1[at + k]), g2 = half_to_float(y[at + k]);
      n1 += (g1 - r1[k]) * (g1 - r1[k]);
      d1 += r1[k] * r1[k];
      n2 += (g2 - r2[k]) * (g2 - r2[k]);
      d2 += r2[k] * r2[k];
      worst = fmax(worst, fabs(g2 - r2[k]));
    }
  }
  const double e1 = sqrt(n1 / d1), e2 = sqrt(n2 / d2);
  printf("  y1 at %d positions x %d channels: relative Frobenius error %.2e (tolerance %.0e); "
         "%zu of %zu elements unwritten, negative or not finite\n",
         SAMPLES, K, e1, TOL_Y1, bad1, ny);
  printf("  y  at %d positions x %d channels: relative Frobenius error %.2e (tolerance %.0e), "
         "max |error| %.2e; %zu of %zu elements unwritten, negative or not finite\n",
         SAMPLES, K, e2, TOL_Y, worst, bad2, ny);

  GKO(gko_conv_plan_destroy(plan));
  CUDA(cudaFree(ws));
  CUDA(cudaFree(dx));
  CUDA(cudaFree(dw1));
  CUDA(cudaFree(db1));
  CUDA(cudaFree(dw2));
  CUDA(cudaFree(db2));
  CUDA(cudaFree(dy1));
  CUDA(cudaFree(dy));
  CUDA(cudaStreamDestroy(stream));
  GKO(gko_destroy(h));
  free(x);
  free(w1);
  free(b1);
  free(w2);
  free(b2);
  free(y1);
  free(y);
  free(xd);
  free(w1d);
  free(w2d);

  if (bad1 || bad2) {
    printf("FAIL: %zu elements of y1 and %zu of y unwritten, negative or not finite\n", bad1,
           bad2);
    return 1;
  }
  if (!(e1 <= TOL_Y1) || !(e2 <= TOL_Y)) {
    printf("FAIL: relative error y1 %.2e (tolerance %.0e), y %.2e (tolerance %.0e)\n", e1,
           TOL_Y1, e2, TOL_Y);
    return 1;
  }
  printf("PASS\n");
  return 0;
}
