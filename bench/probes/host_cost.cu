// host_cost.cu -- standalone: host time per call of gko's executes and of
// the CUDA calls under them (not part of the library; docs/performance.md,
// "Host cost per call").
//
//   make probes        (links lib/libgko.so; GKO_ARCHS=90 for sm_90 only)
//   build/bin/probes/host_cost
//
// "back to back": 50 calls between two synchronizations, host clock, per
// call (few enough that the launch queue never fills, so the figure is the
// host's cost, not the device's); "+ cudaStreamSynchronize": each call
// waited for, i.e. host cost + device time + completion.  Median of 21.
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <algorithm>
#include <vector>
#include "gko.h"
struct Big { void *p[8]; long long q[16]; float f[4]; int i[4]; };  // ~224 bytes
__global__ void k_small(int *x) { if (x && threadIdx.x == 1000) *x = 1; }
__global__ void k_big(Big b) { if (b.i[0] == 12345 && threadIdx.x == 1000) *(int *)b.p[0] = 1; }
static double now() { timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1e6 + t.tv_nsec / 1e3; }
#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { printf("%s: %s\n", #x, cudaGetErrorString(e_)); exit(1); } } while (0)
template <class F> static void per_call(const char *name, F f, cudaStream_t s, int sync_each) {
  std::vector<double> v;
  for (int r = 0; r < 21; r++) {
    const int n = 50;
    if (!sync_each) CK(cudaStreamSynchronize(s));
    double t0 = now();
    for (int i = 0; i < n; i++) { f(); if (sync_each) CK(cudaStreamSynchronize(s)); }
    v.push_back((now() - t0) / n);
    CK(cudaStreamSynchronize(s));
  }
  std::sort(v.begin(), v.end());
  printf("%-58s %8.2f us per call (median of 21)\n", name, v[10]);
}
int main() {
  cudaStream_t s; CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  int *d; CK(cudaMalloc(&d, 1 << 20));
  Big b; memset(&b, 0, sizeof b); b.p[0] = d;
  printf("Big params: %zu bytes\n", sizeof(Big));
  per_call("launch empty kernel (8-byte params), back to back", [&] { k_small<<<1, 32, 0, s>>>(d); }, s, 0);
  per_call("launch empty kernel (Big params), back to back", [&] { k_big<<<1, 32, 0, s>>>(b); }, s, 0);
  per_call("launch empty kernel 132x256 (Big params), back to back", [&] { k_big<<<132, 256, 0, s>>>(b); }, s, 0);
  per_call("cudaMemsetAsync 4 bytes, back to back", [&] { cudaMemsetAsync(d, 0, 4, s); }, s, 0);
  per_call("launch empty kernel + cudaStreamSynchronize", [&] { k_small<<<1, 32, 0, s>>>(d); }, s, 1);
  per_call("cudaMemsetAsync 4 bytes + cudaStreamSynchronize", [&] { cudaMemsetAsync(d, 0, 4, s); }, s, 1);
  per_call("cudaGetDevice", [&] { int x; cudaGetDevice(&x); }, s, 0);
  per_call("cudaStreamIsCapturing", [&] { cudaStreamCaptureStatus c; cudaStreamIsCapturing(s, &c); }, s, 0);
  per_call("cudaStreamGetDevice", [&] { int x; cudaStreamGetDevice(s, &x); }, s, 0);
  per_call("cudaThreadExchangeStreamCaptureMode x2", [&] { cudaStreamCaptureMode m = cudaStreamCaptureModeRelaxed; cudaThreadExchangeStreamCaptureMode(&m); cudaThreadExchangeStreamCaptureMode(&m); }, s, 0);
  per_call("cudaPointerGetAttributes (device memory)", [&] { cudaPointerAttributes a; cudaPointerGetAttributes(&a, d); }, s, 0);
  // gko SpMM: 1024 x 1024, 32 per row, n = 64 f32 (n1024-l1's shape)
  const int m = 1024, per = 32, n = 64; const long long nnz = (long long)m * per;
  std::vector<int> rp(m + 1), ci(nnz); std::vector<float> va(nnz, 0.5f);
  for (int r = 0; r <= m; r++) rp[r] = r * per;
  for (long long i = 0; i < nnz; i++) ci[i] = (int)((i * 2654435761u) % m);
  int *drp, *dci; float *dva, *dB, *dC;
  CK(cudaMalloc(&drp, sizeof(int) * (m + 1))); CK(cudaMalloc(&dci, sizeof(int) * nnz)); CK(cudaMalloc(&dva, sizeof(float) * nnz));
  CK(cudaMalloc(&dB, sizeof(float) * m * n)); CK(cudaMalloc(&dC, sizeof(float) * m * n));
  CK(cudaMemcpy(drp, rp.data(), sizeof(int) * (m + 1), cudaMemcpyHostToDevice));
  CK(cudaMemcpy(dci, ci.data(), sizeof(int) * nnz, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(dva, va.data(), sizeof(float) * nnz, cudaMemcpyHostToDevice));
  CK(cudaMemset(dB, 0x3c, sizeof(float) * m * n)); /* not zeros */
  gko_handle_t h; if (gko_create(&h)) { printf("gko_create failed\n"); return 1; }
  gko_csr_t csr; gko_csr_create(&csr, m, m, nnz, drp, dci, dva, GKO_INDEX_INT32, GKO_DTYPE_F32);
  gko_spmm_plan_t p; if (gko_spmm_plan_create(h, csr, n, GKO_LAYOUT_ROW_MAJOR, n, n, GKO_SPMM_KERNEL_AUTO, &p, s)) { printf("plan: %s\n", gko_last_error_detail()); return 1; }
  if (gko_spmm_execute(p, 1.0f, dB, 0.0f, dC, NULL, 0, s)) { printf("spmm: %s\n", gko_last_error_detail()); return 1; }
  per_call("gko_spmm_execute 1024x1024 (32/row) n=64 f32, back to back", [&] { gko_spmm_execute(p, 1.0f, dB, 0.0f, dC, NULL, 0, s); }, s, 0);
  per_call("gko_spmm_execute ... + cudaStreamSynchronize", [&] { gko_spmm_execute(p, 1.0f, dB, 0.0f, dC, NULL, 0, s); }, s, 1);
  if (gko_gelu_forward(h, GKO_GELU_ERF, GKO_DTYPE_F32, 1024, dB, dC, s)) { printf("gelu: %s\n", gko_last_error_detail()); return 1; }
  per_call("gko_gelu_forward f32 n=1024, back to back", [&] { gko_gelu_forward(h, GKO_GELU_ERF, GKO_DTYPE_F32, 1024, dB, dC, s); }, s, 0);
  // gko GEMM decode 1 x 4096 x 4096 f16, x W^T (W stored [n, k]), AUTO (cuBLASLt) and WMMA;
  // fixed pointers (the plan's memo hits) and two rotating W copies (it misses)
  void *x, *w[2], *y, *ws; size_t wsb = 0;
  CK(cudaMalloc(&x, 2 * 4096)); CK(cudaMalloc(&y, 2 * 4096));
  for (int i = 0; i < 2; i++) { CK(cudaMalloc(&w[i], 2ull * 4096 * 4096)); CK(cudaMemset(w[i], 0x3c, 2ull * 4096 * 4096)); }
  CK(cudaMemset(x, 0x3c, 2 * 4096));
  for (int be = 0; be < 2; be++) {
    gko_gemm_desc_t dsc;
    if (gko_gemm_desc_create(&dsc, GKO_DTYPE_F16, GKO_DTYPE_F16, 1, 4096, 4096) ||
        gko_gemm_desc_set(dsc, GKO_GEMM_ATTR_TRANSB, GKO_OP_T) ||
        (be && gko_gemm_desc_set(dsc, GKO_GEMM_ATTR_BACKEND, GKO_GEMM_BACKEND_WMMA))) { printf("gemm desc: %s\n", gko_last_error_detail()); return 1; }
    gko_gemm_plan_t gp; if (gko_gemm_plan_create(h, dsc, &gp)) { printf("gemm plan: %s\n", gko_last_error_detail()); return 1; }
    char why[512]; gko_gemm_plan_describe(gp, why, sizeof why, NULL); printf("# plan: %.200s\n", why);
    gko_gemm_workspace_size(gp, &wsb); ws = NULL; if (wsb) CK(cudaMalloc(&ws, wsb));
    if (gko_gemm_execute(gp, 1.0f, x, w[0], 0.0f, NULL, y, NULL, ws, wsb, s)) { printf("gemm: %s\n", gko_last_error_detail()); return 1; }
    int it = 0;
    char nm[128];
    snprintf(nm, sizeof nm, "gko_gemm_execute 1x4096x4096 f16 %s, fixed W", be ? "WMMA" : "AUTO");
    per_call(nm, [&] { gko_gemm_execute(gp, 1.0f, x, w[0], 0.0f, NULL, y, NULL, ws, wsb, s); }, s, 0);
    snprintf(nm, sizeof nm, "gko_gemm_execute 1x4096x4096 f16 %s, 2 W rotating", be ? "WMMA" : "AUTO");
    per_call(nm, [&] { gko_gemm_execute(gp, 1.0f, x, w[it++ & 1], 0.0f, NULL, y, NULL, ws, wsb, s); }, s, 0);
    snprintf(nm, sizeof nm, "gko_gemm_execute ... %s fixed W + cudaStreamSynchronize", be ? "WMMA" : "AUTO");
    per_call(nm, [&] { gko_gemm_execute(gp, 1.0f, x, w[0], 0.0f, NULL, y, NULL, ws, wsb, s); }, s, 1);
    if (ws) cudaFree(ws);
    gko_gemm_plan_destroy(gp); gko_gemm_desc_destroy(dsc);
  }
  gko_spmm_plan_destroy(p); gko_csr_destroy(csr); gko_destroy(h);
  return 0;
}
