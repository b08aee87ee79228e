// gelu_variants.cu -- standalone timing of GELU kernel shapes (not part of
// the library): how the loop structure, loads in flight per thread and
// occupancy move a memory-bound elementwise kernel against the copy ceiling.
//
//   make probes        (GKO_ARCHS=90 for sm_90 only)
//   build/bin/probes/gelu_variants [log2 n]
//
// Variants (forward erf, f16 and f32, 16-byte vectors):
//   gs<U>      grid-stride loop, U vectors in flight per thread, occupancy grid
//   gs<U>lb    the same with __launch_bounds__(256, 8) (<= 32 registers)
//   once<U>    one-shot grid: every thread U vectors, no loop
//   copy<U>    the same loops with no math (the kernel-side copy ceiling)
//   memcpy     cudaMemcpyAsync device to device
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "../../kernels/gelu.cuh"

#define CK(x)                                                                   \
  do {                                                                          \
    cudaError_t e = (x);                                                        \
    if (e != cudaSuccess) {                                                     \
      printf("%s: %s\n", #x, cudaGetErrorString(e));                            \
      exit(1);                                                                  \
    }                                                                           \
  } while (0)

template <typename T>
__device__ __forceinline__ uint4 op(uint4 v, bool math) {
  if (!math) return v;
  if (sizeof(T) == 4) {
    float *f = reinterpret_cast<float *>(&v);
#pragma unroll
    for (int j = 0; j < 4; j++) f[j] = gk::gelu_erf_acc(f[j]);
    return v;
  }
  __half2 *h = reinterpret_cast<__half2 *>(&v);
#pragma unroll
  for (int j = 0; j < 4; j++) {
    float2 p = __half22float2(h[j]);
    h[j] = __floats2half2_rn(gk::gelu_erf_fast(p.x), gk::gelu_erf_fast(p.y));
  }
  return v;
}

/* the grid-stride loop of gs and gslb: U vectors in flight per thread */
template <typename T, int U, bool MATH>
__device__ __forceinline__ void gs_loop(const uint4 *x, uint4 *y, long long nvec) {
  long long stride = (long long)gridDim.x * blockDim.x;
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  for (; i + (U - 1) * stride < nvec; i += U * stride) {
    uint4 v[U];
#pragma unroll
    for (int u = 0; u < U; u++) v[u] = __ldcs(x + i + u * stride);
#pragma unroll
    for (int u = 0; u < U; u++) __stcs(y + i + u * stride, op<T>(v[u], MATH));
  }
  for (; i < nvec; i += stride) __stcs(y + i, op<T>(__ldcs(x + i), MATH));
}

template <typename T, int U, bool MATH>
__global__ void gs(const uint4 *x, uint4 *y, long long nvec) {
  gs_loop<T, U, MATH>(x, y, nvec);
}

template <typename T, int U>
__global__ void __launch_bounds__(256, 8) gslb(const uint4 *x, uint4 *y, long long nvec) {
  gs_loop<T, U, true>(x, y, nvec);
}

template <typename T, int U>
__global__ void once(const uint4 *x, uint4 *y, long long nvec) {
  long long base = (long long)blockIdx.x * blockDim.x * U + threadIdx.x;
  uint4 v[U];
#pragma unroll
  for (int u = 0; u < U; u++)
    if (base + u * blockDim.x < nvec) v[u] = x[base + u * blockDim.x];
#pragma unroll
  for (int u = 0; u < U; u++)
    if (base + u * blockDim.x < nvec) y[base + u * blockDim.x] = op<T>(v[u], true);
}

template <typename K>
float time_ms(K launch) {
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  for (int i = 0; i < 3; i++) launch();
  std::vector<float> t;
  for (int r = 0; r < 15; r++) {
    cudaEventRecord(a);
    for (int k = 0; k < 5; k++) launch();
    cudaEventRecord(b);
    cudaEventSynchronize(b);
    float ms;
    cudaEventElapsedTime(&ms, a, b);
    t.push_back(ms / 5);
  }
  std::sort(t.begin(), t.end());
  CK(cudaGetLastError());
  return t[t.size() / 2];
}

template <typename F>
void occ_launch(F kern, const uint4 *x, uint4 *y, long long nvec, const char *name,
                double bytes, double copy_gbs, int U) {
  int grid, block;
  CK(cudaOccupancyMaxPotentialBlockSize(&grid, &block, kern, 0, 0));
  long long need = (nvec / U + block - 1) / block;
  int g = (int)std::min<long long>(grid, need);
  float ms = time_ms([&] { kern<<<g, block>>>(x, y, nvec); });
  double gbs = bytes / (ms * 1e6);
  printf("  %-10s block %4d grid %6d  %8.1f us  %6.0f GB/s  %5.1f%%\n", name, block, g,
         ms * 1e3, gbs, 100 * gbs / copy_gbs);
}

template <typename T>
void run(long long n, const char *tname) {
  size_t bytes = n * sizeof(T);
  long long nvec = bytes / 16;
  uint4 *x, *y;
  CK(cudaMalloc(&x, bytes));
  CK(cudaMalloc(&y, bytes));
  CK(cudaMemset(x, 0x3c, bytes));  // 1.06 in f16, a small f32: real math, no NaN
  float mc = time_ms([&] { cudaMemcpyAsync(y, x, bytes, cudaMemcpyDeviceToDevice); });
  double copy = 2.0 * bytes / (mc * 1e6);
  printf("%s n=%lld: memcpy %.1f us = %.0f GB/s (read+write)\n", tname, n, mc * 1e3, copy);
  double moved = 2.0 * bytes;
  occ_launch(gs<T, 1, false>, x, y, nvec, "copy1", moved, copy, 1);
  occ_launch(gs<T, 4, false>, x, y, nvec, "copy4", moved, copy, 4);
  occ_launch(gs<T, 1, true>, x, y, nvec, "gs1", moved, copy, 1);
  occ_launch(gs<T, 2, true>, x, y, nvec, "gs2", moved, copy, 2);
  occ_launch(gs<T, 4, true>, x, y, nvec, "gs4", moved, copy, 4);
  occ_launch(gs<T, 8, true>, x, y, nvec, "gs8", moved, copy, 8);
  occ_launch(gslb<T, 2>, x, y, nvec, "gs2lb", moved, copy, 2);
  occ_launch(gslb<T, 4>, x, y, nvec, "gs4lb", moved, copy, 4);
  for (int U : {1, 2, 4}) {
    for (int block : {128, 256, 512}) {
      long long g = (nvec + (long long)block * U - 1) / ((long long)block * U);
      float ms;
      if (U == 1) ms = time_ms([&] { once<T, 1><<<g, block>>>(x, y, nvec); });
      else if (U == 2) ms = time_ms([&] { once<T, 2><<<g, block>>>(x, y, nvec); });
      else ms = time_ms([&] { once<T, 4><<<g, block>>>(x, y, nvec); });
      double gbs = moved / (ms * 1e6);
      printf("  once%d     block %4d grid %8lld  %8.1f us  %6.0f GB/s  %5.1f%%\n", U, block, g,
             ms * 1e3, gbs, 100 * gbs / copy);
    }
  }
  cudaFree(x);
  cudaFree(y);
}

int main(int argc, char **argv) {
  int lg = argc > 1 ? atoi(argv[1]) : 28;
  run<__half>(1ll << lg, "f16");
  run<float>(1ll << lg, "f32");
  return 0;
}
