/* gelu.c -- the smallest gko program: GELU on the GPU, checked on the host.
 *   cc gelu.c $(pkg-config --cflags --libs gko) -lcudart -lm -o gelu */
#include <cuda_runtime_api.h>
#include <gko.h>
#include <math.h>
#include <stdio.h>

int main(void) {
  enum { N = 1000 };
  float x[N], y[N], *d;
  for (int i = 0; i < N; i++) x[i] = (i - N / 2) / 50.0f;
  gko_handle_t h;
  gko_status_t s = gko_create(&h);
  if (s != GKO_STATUS_SUCCESS) { /* no GPU, old driver, wrong arch: say why */
    printf("gko: %s: %s\n", gko_status_name(s), gko_last_error_detail());
    return 2;
  }
  cudaMalloc((void **)&d, sizeof x);
  cudaMemcpy(d, x, sizeof x, cudaMemcpyHostToDevice);
  s = gko_gelu_forward(h, GKO_GELU_ERF, GKO_DTYPE_F32, N, d, d, NULL); /* in place */
  cudaMemcpy(y, d, sizeof y, cudaMemcpyDeviceToHost);
  double worst = 0;
  for (int i = 0; i < N; i++) {
    double ref = 0.5 * x[i] * erfc(-x[i] / sqrt(2.0));
    worst = fmax(worst, fabs(y[i] - ref) / fmax(fabs(ref), 1e-30));
  }
  printf("gelu: %s, max relative error %.2g -> %s\n", gko_status_name(s), worst,
         s == GKO_STATUS_SUCCESS && worst < 1e-6 ? "PASS" : "FAIL");
  cudaFree(d);
  gko_destroy(h);
  return s == GKO_STATUS_SUCCESS && worst < 1e-6 ? 0 : 1;
}
