// conv_configs.cu -- standalone: device time of every SM90 implicit-GEMM
// configuration (kernels/conv_sm90.h), each forced, on ResNet-18's layers;
// the data behind src/conv_implicit.c's rule (docs/conv.md, "Implicit GEMM
// on sm_90").  Links libgko.a for the hidden kernel interface.
//
//   make probes        (GKO_ARCHS=90)
//   build/bin/probes/conv_configs [--dtype f16|bf16] [--batches 32,128]
//       [--layer NAME] [--config NAME] [--profile]
//
// f16 (or bf16) NHWC, bias + ReLU; "res" adds z (beta = 1), the basic
// block's second convolution.  Device time: a CUDA graph of 20 launches
// replayed, median of 9 replays, per launch, µs; random inputs.  --layer
// and --config keep one of each; --profile times nothing and makes, per
// layer and configuration, three plain launches and then three with z, each
// synchronized (for ncu: launches 3 and 6 are the warm plain and res ones).
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <algorithm>
#include <vector>
#include "gko.h"
#include "../../kernels/conv_sm90.h"

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { printf("%s: %s\n", #x, cudaGetErrorString(e_)); exit(1); } } while (0)

struct layer { const char *name; int c, k, h, w, r, s, stride, pad; };
static const layer kLayers[] = {
    /* the stem after the space-to-depth rewrite (docs/conv.md): 4 x 1 over
     * [N][115][112][48] */
    {"stem_s2d", 48, 64, 115, 112, 4, 1, 1, 0},
    {"l1_3x3", 64, 64, 56, 56, 3, 3, 1, 1},   {"l2_3x3s2", 64, 128, 56, 56, 3, 3, 2, 1},
    {"l2_3x3", 128, 128, 28, 28, 3, 3, 1, 1}, {"l2_ds1x1", 64, 128, 56, 56, 1, 1, 2, 0},
    {"l3_3x3", 256, 256, 14, 14, 3, 3, 1, 1}, {"l4_3x3", 512, 512, 7, 7, 3, 3, 1, 1},
};
static const char *const kCfg[GK_CONV_SM90_NCONFIGS] = {"64x128", "64x64", "pp128x64",
                                                        "pp128x128", "pp128x128c12"};

__global__ void fill(unsigned short *p, size_t n, unsigned seed) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    unsigned v = (unsigned)(i * 2654435761u) ^ seed;
    v ^= v >> 13; v *= 0x5bd1e995u; v ^= v >> 15;
    p[i] = 0x3000 | (v & 0x8000) | (v & 0x3ff);  // |x| in [0.125, 0.25): finite in f16 and bf16
  }
}

static float time_graph(cudaStream_t s, void (*enqueue)(void *), void *arg) {
  const int per = 20;
  cudaGraph_t g;
  cudaGraphExec_t ge;
  for (int i = 0; i < 3; i++) enqueue(arg);
  CK(cudaStreamSynchronize(s));
  CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  for (int i = 0; i < per; i++) enqueue(arg);
  CK(cudaStreamEndCapture(s, &g));
  CK(cudaGraphInstantiate(&ge, g, 0));
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  std::vector<float> t;
  CK(cudaGraphLaunch(ge, s));
  for (int r = 0; r < 9; r++) {
    CK(cudaEventRecord(a, s));
    CK(cudaGraphLaunch(ge, s));
    CK(cudaEventRecord(b, s));
    CK(cudaEventSynchronize(b));
    float ms;
    CK(cudaEventElapsedTime(&ms, a, b));
    t.push_back(ms * 1000.0f / per);
  }
  std::sort(t.begin(), t.end());
  cudaGraphExecDestroy(ge);
  cudaGraphDestroy(g);
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return t[t.size() / 2];
}

struct run {
  gk_conv_sm90_problem p;
  int cfg;
  const void *x, *w, *bias, *z;
  void *y;
  cudaStream_t s;
};
static void enqueue(void *arg) {
  run *r = (run *)arg;
  gko_status_t st = gk_conv_sm90_launch(&r->p, r->cfg, 1.0f, 1.0f, r->x, r->w, r->z, r->y,
                                        r->bias, r->s);
  if (st) { printf("launch: %s\n", gko_last_error_detail()); exit(1); }
}

int main(int argc, char **argv) {
  int dtype = GKO_DTYPE_F16, profile = 0;
  const char *only_layer = nullptr, *only_cfg = nullptr;
  std::vector<int> batches = {32, 128};
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--dtype") && i + 1 < argc) dtype = !strcmp(argv[++i], "bf16") ? GKO_DTYPE_BF16 : GKO_DTYPE_F16;
    else if (!strcmp(argv[i], "--layer") && i + 1 < argc) only_layer = argv[++i];
    else if (!strcmp(argv[i], "--config") && i + 1 < argc) only_cfg = argv[++i];
    else if (!strcmp(argv[i], "--profile")) profile = 1;
    else if (!strcmp(argv[i], "--batches") && i + 1 < argc) {
      batches.clear();
      for (char *t = strtok(argv[++i], ","); t; t = strtok(NULL, ",")) batches.push_back(atoi(t));
    }
  }
  gko_handle_t h;
  if (gko_create(&h)) { printf("gko_create: %s\n", gko_last_error_detail()); return 2; }
  int dev = 0, sms = 0;
  CK(cudaGetDevice(&dev));
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  printf("%-9s %4s %-4s", "layer", "N", "");
  for (int c = 0; c < GK_CONV_SM90_NCONFIGS; c++) printf(" %10s", kCfg[c]);
  printf("   (µs per launch, %s, bias + ReLU)\n", dtype == GKO_DTYPE_F16 ? "f16" : "bf16");
  for (int n : batches)
    for (const layer &L : kLayers) {
      if (only_layer && strcmp(only_layer, L.name)) continue;
      const int oh = (L.h + 2 * L.pad - L.r) / L.stride + 1,
                ow = (L.w + 2 * L.pad - L.s) / L.stride + 1;
      gk_conv_sm90_problem p = {dtype, 1, n, L.h, L.w, L.c, L.k, L.r, L.s, oh, ow,
                                L.pad, L.pad, L.pad, L.pad, L.stride, L.stride, 1, 1, dev, sms};
      const size_t nx = (size_t)n * L.h * L.w * L.c, nw = (size_t)L.k * L.r * L.s * L.c,
                   ny = (size_t)n * oh * ow * L.k;
      unsigned short *x, *w, *b, *y, *z;
      CK(cudaMalloc(&x, nx * 2));
      CK(cudaMalloc(&w, nw * 2));
      CK(cudaMalloc(&b, L.k * 2));
      CK(cudaMalloc(&y, ny * 2));
      CK(cudaMalloc(&z, ny * 2));
      fill<<<1024, 256>>>(x, nx, 1);
      fill<<<1024, 256>>>(w, nw, 2);
      fill<<<1024, 256>>>(b, L.k, 3);
      fill<<<1024, 256>>>(z, ny, 4);
      CK(cudaDeviceSynchronize());
      for (int res = 0; res < 2; res++) {
        printf("%-9s %4d %-4s", L.name, n, res ? "res" : "");
        for (int c = 0; c < GK_CONV_SM90_NCONFIGS; c++) {
          if (only_cfg && strcmp(only_cfg, kCfg[c])) continue;
          if (gk_conv_sm90_setup(&p, c)) { printf(" %10s", "-"); continue; }
          run r = {p, c, x, w, b, res ? z : nullptr, y, s};
          if (profile) {
            for (int i = 0; i < 3; i++) {
              enqueue(&r);
              CK(cudaStreamSynchronize(s));
            }
            printf(" %10s", kCfg[c]);
          } else {
            printf(" %10.1f", time_graph(s, enqueue, &r));
          }
        }
        printf("\n");
        fflush(stdout);
      }
      cudaFree(x), cudaFree(w), cudaFree(b), cudaFree(y), cudaFree(z);
    }
  gko_destroy(h);
  return 0;
}
