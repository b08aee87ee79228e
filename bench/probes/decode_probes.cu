// decode_probes.cu -- standalone timing of what streaming decode-sized
// weights can reach on this GPU (not part of the library; docs/gemm.md,
// "Decode: the ceiling and a balanced design that lost").
//
//   make probes        (GKO_ARCHS=90 for sm_90 only)
//   build/bin/probes/decode_probes
//
// 1. Read stream: every block reads one contiguous chunk of W with 16-byte
//    loads (8 in flight per thread), for W of 4096 x 4096 and 11008 x 4096
//    f16, grids of 1, 2, 4 and 8 blocks per SM and of 128 KB blocks; each in
//    three forms:
//      plain     an ordinary launch;
//      PDL sync  programmatic dependent launch (sm_90): the kernel allows
//                the next one to start, and waits for the previous one
//                (cudaGridDependencySynchronize) before any load;
//      PDL early the same, but the loads come first and the wait only
//                before the (never taken) store: what overlapping the next
//                call's weight reads with the previous call's tail gives.
// 2. Walk order: W (nb x 4096 f16, row-major) in units of one 128-wide k
//    span of an 8-row tile, one block of 512 threads per SM owning a run of
//    whole tiles; each lane loads the 4 16-byte pieces the mma.m16n8k16
//    fragment layout gives it per unit, 4 units at a time.
//      A  each warp walks a contiguous run of its block's units;
//      B  warp w takes units w, w + 16, ... (16 warps on adjacent spans);
//      C  as A with 16-row tiles (8 pieces per lane per unit, 2 at a time).
// Every row is the median of 15 CUDA-graph replays of 20 launches; W rotates
// through a 512 MB pool, so it comes from HBM, not from the L2 (60 MiB on
// the H200).  A grid's chunks are whole multiples of 256 vectors, so the
// grid printed can be a little under the blocks-per-SM figure.
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <algorithm>
#include <vector>

#define CK(x)                                                                             \
  do {                                                                                    \
    cudaError_t e_ = (x);                                                                 \
    if (e_ != cudaSuccess) {                                                              \
      printf("%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));           \
      exit(1);                                                                            \
    }                                                                                     \
  } while (0)

/* MODE 0: plain; 1: PDL, wait before the loads; 2: PDL, loads before the wait */
template <int MODE>
__global__ void __launch_bounds__(256) stream_read(const uint4 *__restrict__ w, long long nvec,
                                                   long long per_block, unsigned *out) {
#if __CUDA_ARCH__ >= 900
  if (MODE) cudaTriggerProgrammaticLaunchCompletion();
  if (MODE == 1) cudaGridDependencySynchronize();
#endif
  const long long b0 = (long long)blockIdx.x * per_block;
  const long long b1 = b0 + per_block < nvec ? b0 + per_block : nvec;
  unsigned acc = 0;
  long long i = b0 + threadIdx.x;
  for (; i + 7 * 256 < b1; i += 8 * 256) {
    uint4 v[8];
#pragma unroll
    for (int u = 0; u < 8; u++) v[u] = __ldcs(w + i + u * 256);
#pragma unroll
    for (int u = 0; u < 8; u++) acc ^= v[u].x + v[u].y * 3 + v[u].z * 5 + v[u].w * 7;
  }
  for (; i < b1; i += 256) {
    const uint4 v = w[i];
    acc ^= v.x + v.y + v.z + v.w;
  }
#if __CUDA_ARCH__ >= 900
  if (MODE == 2) cudaGridDependencySynchronize();
#endif
  if (acc == 0x12345678u) out[blockIdx.x] = acc; /* keeps the loads */
}

/* PAT 0: A, 1: B, 2: C (see the top) */
template <int PAT>
__global__ void __launch_bounds__(512, 1) walk(const uint16_t *__restrict__ W, long long tiles,
                                               int k, unsigned *out) {
  constexpr int NI = PAT == 2 ? 2 : 4, PIECES = PAT == 2 ? 8 : 4;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const int rows = PAT == 2 ? 16 : 8;
  const long long G = gridDim.x, v0 = tiles * blockIdx.x / G, v1 = tiles * (blockIdx.x + 1) / G;
  const long long nsp = k / 128, U = (v1 - v0) * nsp;
  long long u = PAT == 1 ? warp : U * warp / 16, uend = PAT == 1 ? U : U * (warp + 1) / 16;
  const long long step = PAT == 1 ? 16 : 1;
  unsigned acc = 0;
  for (; u < uend; u += NI * step) {
    uint4 v[NI][PIECES];
#pragma unroll
    for (int i = 0; i < NI; i++) {
      const long long uu = u + i * step;
      if (uu < uend) {
        const long long tile = v0 + uu / nsp, sp = uu % nsp;
        const uint16_t *p = W + (tile * rows + g) * (long long)k + sp * 128 + 8 * t;
#pragma unroll
        for (int q = 0; q < 4; q++) {
          v[i][q] = __ldcs(reinterpret_cast<const uint4 *>(p + 32 * q));
          if (PAT == 2)
            v[i][PIECES - 4 + q] = __ldcs(reinterpret_cast<const uint4 *>(p + 8ll * k + 32 * q));
        }
      } else {
#pragma unroll
        for (int q = 0; q < PIECES; q++) v[i][q] = make_uint4(0, 0, 0, 0);
      }
    }
#pragma unroll
    for (int i = 0; i < NI; i++)
#pragma unroll
      for (int q = 0; q < PIECES; q++)
        acc ^= v[i][q].x + 3 * v[i][q].y + 5 * v[i][q].z + 7 * v[i][q].w;
  }
  if (acc == 0x12345678u) out[blockIdx.x] = acc;
}

static float median(std::vector<float> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

/* per-launch µs of a graph of 20 launches made by launch(c), c = 0..19 */
template <class F>
static float graph_us(cudaStream_t s, cudaEvent_t e0, cudaEvent_t e1, F launch) {
  cudaGraph_t gr;
  cudaGraphExec_t ge;
  CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  for (int c = 0; c < 20; c++) launch(c);
  CK(cudaStreamEndCapture(s, &gr));
  CK(cudaGraphInstantiate(&ge, gr, 0));
  for (int r = 0; r < 3; r++) CK(cudaGraphLaunch(ge, s));
  std::vector<float> v;
  for (int r = 0; r < 15; r++) {
    float ms;
    CK(cudaEventRecord(e0, s));
    CK(cudaGraphLaunch(ge, s));
    CK(cudaEventRecord(e1, s));
    CK(cudaEventSynchronize(e1));
    CK(cudaEventElapsedTime(&ms, e0, e1));
    v.push_back(ms * 1e3f / 20);
  }
  CK(cudaGraphExecDestroy(ge));
  CK(cudaGraphDestroy(gr));
  return median(v);
}

int main() {
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  const size_t pool = 512ull << 20;
  char *p;
  CK(cudaMalloc(&p, 2 * pool));
  CK(cudaMemset(p, 0x5a, 2 * pool));
  unsigned *out;
  CK(cudaMalloc(&out, 1 << 20));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  {
    std::vector<float> v;
    for (int r = 0; r < 7; r++) {
      float ms;
      CK(cudaEventRecord(e0, s));
      CK(cudaMemcpyAsync(p + pool, p, pool, cudaMemcpyDeviceToDevice, s));
      CK(cudaEventRecord(e1, s));
      CK(cudaEventSynchronize(e1));
      CK(cudaEventElapsedTime(&ms, e0, e1));
      v.push_back(ms);
    }
    printf("copy 512 MB: %.1f GB/s (bytes read + written)\n",
           2.0 * pool / (median(v) * 1e-3) / 1e9);
  }
  const long long rows[3] = {4096, 11008, 14336};
  const int k = 4096;
  const char *modes[3] = {"plain", "PDL sync", "PDL early"};
  for (int ri = 0; ri < 2; ri++) {
    const size_t N = (size_t)rows[ri] * k * 2;
    const long long nvec = N / 16;
    const int rot = (int)(pool / N);
    const int per_sm[5] = {1, 2, 4, 8, 0};
    for (int mode = 0; mode < 3; mode++)
      for (int bi = 0; bi < 5; bi++) {
        long long grid = per_sm[bi] ? (long long)sms * per_sm[bi] : (nvec + 8191) / 8192;
        long long per = (nvec + grid - 1) / grid;
        per = (per + 255) / 256 * 256;
        grid = (nvec + per - 1) / per;
        const float us = graph_us(s, e0, e1, [&](int c) {
          const uint4 *w = reinterpret_cast<const uint4 *>(p + (size_t)(c % rot) * N);
          cudaLaunchConfig_t cfg = {};
          cudaLaunchAttribute at[1];
          at[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
          at[0].val.programmaticStreamSerializationAllowed = 1;
          cfg.gridDim = dim3((unsigned)grid);
          cfg.blockDim = dim3(256);
          cfg.stream = s;
          cfg.attrs = at;
          cfg.numAttrs = mode ? 1 : 0;
          if (mode == 0) CK(cudaLaunchKernelEx(&cfg, stream_read<0>, w, nvec, per, out));
          if (mode == 1) CK(cudaLaunchKernelEx(&cfg, stream_read<1>, w, nvec, per, out));
          if (mode == 2) CK(cudaLaunchKernelEx(&cfg, stream_read<2>, w, nvec, per, out));
        });
        char gname[32];
        if (per_sm[bi]) snprintf(gname, sizeof gname, "%d per SM", per_sm[bi]);
        else snprintf(gname, sizeof gname, "128 KB blocks");
        printf("read %5lld x %d f16  %-9s  grid %6lld (%-13s)  %7.2f us  %6.1f GB/s\n", rows[ri], k,
               modes[mode], grid, gname, us, N / (us * 1e-6) / 1e9);
      }
  }
  for (int ri = 0; ri < 3; ri++) {
    const size_t N = (size_t)rows[ri] * k * 2;
    const int rot = (int)(pool / N);
    for (int pat = 0; pat < 3; pat++) {
      const long long tiles = rows[ri] / (pat == 2 ? 16 : 8);
      const float us = graph_us(s, e0, e1, [&](int c) {
        const uint16_t *w = reinterpret_cast<const uint16_t *>(p + (size_t)(c % rot) * N);
        if (pat == 0) walk<0><<<sms, 512, 0, s>>>(w, tiles, k, out);
        if (pat == 1) walk<1><<<sms, 512, 0, s>>>(w, tiles, k, out);
        if (pat == 2) walk<2><<<sms, 512, 0, s>>>(w, tiles, k, out);
        CK(cudaGetLastError());
      });
      printf("walk %c  %5lld x %d f16  %7.2f us  %6.1f GB/s\n", "ABC"[pat], rows[ri], k, us,
             N / (us * 1e-6) / 1e9);
    }
  }
  CK(cudaGetLastError());
  return 0;
}
