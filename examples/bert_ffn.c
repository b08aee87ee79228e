/* bert_ffn.c -- the feed-forward block of BERT-base in f16, two gko GEMM
 * plans with fused epilogues, checked against float64 on sampled rows:
 *
 *     H = GELU_erf(X · W1^T + b1)      GKO_EPILOGUE_BIAS_GELU_ERF
 *     Y = H · W2^T + b2                GKO_EPILOGUE_BIAS
 *
 * X is 4096 tokens x 768 (hidden), W1 3072 x 768 and W2 768 x 3072 stored as
 * torch's nn.Linear holds them ([out_features][in_features], hence op(B) =
 * B^T), b1 3072 and b2 768 values; every tensor is f16 (IEEE binary16), the
 * products accumulate in f32.  The host converts with its own float <-> half
 * routines (round to nearest even).
 *
 *   build/bin/bert_ffn
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

enum { TOKENS = 4096, HIDDEN = 768, INTER = 3072, SAMPLES = 16 };

/* Tolerances (relative Frobenius error over the sampled rows).  The inputs
 * are f16 numbers and the reference uses exactly those numbers, so input
 * rounding is no error here; what remains is
 *   - f32 accumulation of 768 or 3072 products: ~1e-6, negligible;
 *   - H rounded to f16: at most 2^-11 = 4.9e-4 relative per element, about
 *     2e-4 RMS (0.42 * 2^-11 for round-to-nearest over a binade).  With the
 *     default fusion cuBLASLt fuses the bias and gko's pass applies the erf
 *     GELU, so H may be rounded twice (z, then GELU(z)), plus GELU's own 1
 *     ulp: about 3e-4 RMS expected;
 *   - Y: the intermediate's errors enter through a sum over 3072 terms whose
 *     weights have random signs, so they stay at the same relative RMS, plus
 *     Y's own f16 rounding: about 4e-4 RMS expected.
 * H is checked at 1e-3 and Y at 2e-3: 3-5x above the expected error, and
 * far below what a real mistake gives (a missing bias, a wrong transpose or
 * a wrong row: errors of order 1e-1 .. 1).  The tanh GELU in place of erf
 * (at most 4.7e-4 apart, at x = -2.7) would not be caught at this size. */
#define TOL_H 1e-3
#define TOL_Y 2e-3

/* the random inputs' seed (uniform() in example.h) */
static uint64_t g_rng = 0xBE27FF17ull;

static const char *backend_name(gko_gemm_backend_t b) {
  return b == GKO_GEMM_BACKEND_WMMA ? "WMMA" : b == GKO_GEMM_BACKEND_CUBLASLT ? "cuBLASLt" : "?";
}

/* A row-major f16 GEMM plan D[m x n] = epi(A[m x k] · B^T), B stored n x k. */
static gko_gemm_plan_t linear_plan(gko_handle_t h, int64_t m, int64_t n, int64_t k,
                                   gko_epilogue_t epi) {
  gko_gemm_desc_t d;
  gko_gemm_plan_t p;
  GKO(gko_gemm_desc_create(&d, GKO_DTYPE_F16, GKO_DTYPE_F16, m, n, k));
  GKO(gko_gemm_desc_set(d, GKO_GEMM_ATTR_TRANSB, GKO_OP_T));
  GKO(gko_gemm_desc_set(d, GKO_GEMM_ATTR_EPILOGUE, epi));
  GKO(gko_gemm_plan_create(h, d, &p));
  GKO(gko_gemm_desc_destroy(d));
  return p;
}

static void describe(const char *name, gko_gemm_plan_t p) {
  gko_gemm_backend_t be;
  size_t need = 0, ws = 0;
  GKO(gko_gemm_plan_backend(p, &be));
  GKO(gko_gemm_workspace_size(p, &ws));
  GKO(gko_gemm_plan_describe(p, NULL, 0, &need));
  char *text = xmalloc(need);
  GKO(gko_gemm_plan_describe(p, text, need, NULL));
  printf("  %s: backend %s, workspace %zu bytes\n    %s\n", name, backend_name(be), ws, text);
  free(text);
}

int main(void) {
  int dev = 0;
  int64_t cc = 0;
  gko_handle_t h = example_start("bert_ffn", &dev, &cc); /* exits 2 without a usable GPU */
  printf("bert_ffn: gko %s on device %d (sm_%lld)\n", gko_version_string(), dev, (long long)cc);
  printf("Y = GELU_erf(X.W1^T + b1).W2^T + b2, X [%d x %d] f16, W1 [%d x %d], W2 [%d x %d]\n",
         TOKENS, HIDDEN, INTER, HIDDEN, HIDDEN, INTER);

  /* fresh random inputs from a fixed seed, scaled like a trained layer:
   * pre-activations of order 1 */
  const size_t nX = (size_t)TOKENS * HIDDEN, nW = (size_t)INTER * HIDDEN;
  const size_t nH = (size_t)TOKENS * INTER, nY = (size_t)TOKENS * HIDDEN;
  uint16_t *X = random_halves(&g_rng, nX, 1.0);
  uint16_t *W1 = random_halves(&g_rng, nW, 2.0 / sqrt((double)HIDDEN));
  uint16_t *b1 = random_halves(&g_rng, INTER, 0.5);
  uint16_t *W2 = random_halves(&g_rng, nW, 2.0 / sqrt((double)INTER));
  uint16_t *b2 = random_halves(&g_rng, HIDDEN, 0.5);

  cudaStream_t stream;
  CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  uint16_t *dX, *dW1, *db1, *dW2, *db2, *dH, *dY;
  CUDA(cudaMalloc((void **)&dX, nX * 2));
  CUDA(cudaMalloc((void **)&dW1, nW * 2));
  CUDA(cudaMalloc((void **)&db1, INTER * 2));
  CUDA(cudaMalloc((void **)&dW2, nW * 2));
  CUDA(cudaMalloc((void **)&db2, HIDDEN * 2));
  CUDA(cudaMalloc((void **)&dH, nH * 2));
  CUDA(cudaMalloc((void **)&dY, nY * 2));
  CUDA(cudaMemcpyAsync(dX, X, nX * 2, cudaMemcpyHostToDevice, stream));
  CUDA(cudaMemcpyAsync(dW1, W1, nW * 2, cudaMemcpyHostToDevice, stream));
  CUDA(cudaMemcpyAsync(db1, b1, INTER * 2, cudaMemcpyHostToDevice, stream));
  CUDA(cudaMemcpyAsync(dW2, W2, nW * 2, cudaMemcpyHostToDevice, stream));
  CUDA(cudaMemcpyAsync(db2, b2, HIDDEN * 2, cudaMemcpyHostToDevice, stream));
  /* poison the outputs (0xFFFF is an f16 NaN): unwritten elements show */
  CUDA(cudaMemsetAsync(dH, 0xFF, nH * 2, stream));
  CUDA(cudaMemsetAsync(dY, 0xFF, nY * 2, stream));

  /* two plans, made once (a server would keep them); one workspace that
   * fits both, since both run on the same stream one after the other */
  gko_gemm_plan_t p1 = linear_plan(h, TOKENS, INTER, HIDDEN, GKO_EPILOGUE_BIAS_GELU_ERF);
  gko_gemm_plan_t p2 = linear_plan(h, TOKENS, HIDDEN, INTER, GKO_EPILOGUE_BIAS);
  describe("GEMM 1 (bias + GELU-erf)", p1);
  describe("GEMM 2 (bias)", p2);
  size_t ws1 = 0, ws2 = 0;
  GKO(gko_gemm_workspace_size(p1, &ws1));
  GKO(gko_gemm_workspace_size(p2, &ws2));
  const size_t ws_bytes = ws1 > ws2 ? ws1 : ws2;
  void *ws = NULL;
  if (ws_bytes) CUDA(cudaMalloc(&ws, ws_bytes));

  GKO(gko_gemm_execute(p1, 1.0f, dX, dW1, 0.0f, NULL, dH, db1, ws, ws_bytes, stream));
  GKO(gko_gemm_execute(p2, 1.0f, dH, dW2, 0.0f, NULL, dY, db2, ws, ws_bytes, stream));

  uint16_t *H = xmalloc(nH * 2), *Y = xmalloc(nY * 2);
  CUDA(cudaMemcpyAsync(H, dH, nH * 2, cudaMemcpyDeviceToHost, stream));
  CUDA(cudaMemcpyAsync(Y, dY, nY * 2, cudaMemcpyDeviceToHost, stream));
  CUDA(cudaStreamSynchronize(stream));

  /* every element written (and finite) */
  size_t bad_h = 0, bad_y = 0;
  for (size_t i = 0; i < nH; i++) bad_h += (H[i] & 0x7c00u) == 0x7c00u;
  for (size_t i = 0; i < nY; i++) bad_y += (Y[i] & 0x7c00u) == 0x7c00u;

  /* float64 reference on sampled rows (first, last, one per stripe), from
   * the very f16 values the GPU read; the intermediate stays in float64 */
  float *w1f = xmalloc(nW * sizeof(float)), *w2f = xmalloc(nW * sizeof(float));
  for (size_t i = 0; i < nW; i++) {
    w1f[i] = half_to_float(W1[i]);
    w2f[i] = half_to_float(W2[i]);
  }
  double xr[HIDDEN], hr[INTER];
  double nh = 0, dh = 0, ny = 0, dy = 0, worst_y = 0;
  printf("  sampled rows:");
  for (int si = 0; si < SAMPLES; si++) {
    const int stripe = TOKENS / SAMPLES;
    const int row = si == 0 ? 0 : si == SAMPLES - 1 ? TOKENS - 1
                                : si * stripe + (int)uniform(&g_rng, 0, stripe);
    printf(" %d", row);
    for (int i = 0; i < HIDDEN; i++) xr[i] = half_to_float(X[(size_t)row * HIDDEN + i]);
    for (int j = 0; j < INTER; j++) {
      const float *w = w1f + (size_t)j * HIDDEN;
      double z = half_to_float(b1[j]);
      for (int i = 0; i < HIDDEN; i++) z += xr[i] * w[i];
      hr[j] = gelu64(z);
      const double got = half_to_float(H[(size_t)row * INTER + j]);
      nh += (got - hr[j]) * (got - hr[j]);
      dh += hr[j] * hr[j];
    }
    for (int c = 0; c < HIDDEN; c++) {
      const float *w = w2f + (size_t)c * INTER;
      double y = half_to_float(b2[c]);
      for (int j = 0; j < INTER; j++) y += hr[j] * w[j];
      const double got = half_to_float(Y[(size_t)row * HIDDEN + c]);
      ny += (got - y) * (got - y);
      dy += y * y;
      worst_y = fmax(worst_y, fabs(got - y));
    }
  }
  printf("\n");
  const double eh = sqrt(nh / dh), ey = sqrt(ny / dy);
  printf("  H = GELU(X.W1^T + b1) [%d x %d]: relative Frobenius error %.2e (tolerance %.0e), "
         "%zu elements unwritten or not finite\n",
         TOKENS, INTER, eh, TOL_H, bad_h);
  printf("  Y = H.W2^T + b2 [%d x %d]: relative Frobenius error %.2e (tolerance %.0e), "
         "max |error| %.2e, %zu elements unwritten or not finite\n",
         TOKENS, HIDDEN, ey, TOL_Y, worst_y, bad_y);

  GKO(gko_gemm_plan_destroy(p1));
  GKO(gko_gemm_plan_destroy(p2));
  CUDA(cudaFree(ws));
  CUDA(cudaFree(dX));
  CUDA(cudaFree(dW1));
  CUDA(cudaFree(db1));
  CUDA(cudaFree(dW2));
  CUDA(cudaFree(db2));
  CUDA(cudaFree(dH));
  CUDA(cudaFree(dY));
  CUDA(cudaStreamDestroy(stream));
  GKO(gko_destroy(h));
  free(X);
  free(W1);
  free(b1);
  free(W2);
  free(b2);
  free(H);
  free(Y);
  free(w1f);
  free(w2f);

  if (bad_h || bad_y) {
    printf("FAIL: %zu elements of H and %zu of Y unwritten or not finite\n", bad_h, bad_y);
    return 1;
  }
  if (!(eh <= TOL_H) || !(ey <= TOL_Y)) {
    printf("FAIL: relative error H %.2e (tolerance %.0e), Y %.2e (tolerance %.0e)\n", eh, TOL_H,
           ey, TOL_Y);
    return 1;
  }
  printf("PASS\n");
  return 0;
}
