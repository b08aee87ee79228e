/* gelu.cu -- elementwise GELU forward and backward.
 *
 * Memory-bound: each element is read once (twice for backward: x and dy) and
 * written once.  The body moves 16-byte vectors (4 f32 or 8 f16/bf16) with
 * streaming cache hints, two vectors per input in flight per thread; the
 * unaligned head (before x reaches 16-byte alignment) and the tail are done
 * by scalar threads.  When the pointers disagree on their alignment modulo
 * 16 bytes a scalar kernel runs instead.  Math in f32 (gelu.cuh).
 *
 * Launch shape: one block per 2 x 256 vectors with no loop came closer to
 * cudaMemcpy's bandwidth than a persistent grid of the occupancy API's
 * "fills the GPU" size looping over the array, whatever the loads in
 * flight per thread (measured: docs/performance.md, "GELU, 2^28
 * elements"; bench/probes/gelu_variants.cu).  So the block size comes from
 * the occupancy API (limited to 256 threads, cached in the handle) and the
 * grid covers the array; the grid-stride loop remains only for arrays
 * beyond the grid-size limit. */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "gelu.h"
#include "common.cuh"
#include "convert.cuh"
#include "gelu.cuh"

namespace {

constexpr int kVecBytes = 16;
constexpr int kMaxBlock = 256;

using gk::elem;

/* One element: forward y = gelu(x); backward dx = dy * gelu'(x). */
template <typename T, int DIR, int APPROX>
__device__ __forceinline__ float apply(float x, float dy) {
  if (DIR == 0) return gk::gelu_fwd<APPROX, elem<T>::kAcc>(x);
  return dy * gk::gelu_grad<APPROX, elem<T>::kAcc>(x);
}

template <typename T, int DIR, int APPROX>
__device__ __forceinline__ void scalar_one(const T *x, const T *dy, T *out, int64_t i) {
  const float d = DIR ? elem<T>::to_f(dy[i]) : 0.0f;
  out[i] = elem<T>::from_f(apply<T, DIR, APPROX>(elem<T>::to_f(x[i]), d));
}

template <typename T, int DIR, int APPROX>
__device__ __forceinline__ uint4 vec_one(const uint4 &xv, const uint4 &dv) {
  constexpr int V = elem<T>::kVec;
  float f[V], g[V];
  elem<T>::unpack(xv, f);
  if (DIR) elem<T>::unpack(dv, g);
#pragma unroll
  for (int j = 0; j < V; j++) f[j] = apply<T, DIR, APPROX>(f[j], DIR ? g[j] : 0.0f);
  return elem<T>::pack(f);
}

/* head: scalar elements before x reaches 16-byte alignment (vector kernels). */
template <typename T, int DIR, int APPROX, bool VEC>
__global__ void gelu_kernel(const void *xp, const void *dyp, void *outp, int64_t n,
                            int head) {
  const T *x = static_cast<const T *>(xp);
  const T *dy = static_cast<const T *>(dyp);
  T *out = static_cast<T *>(outp);
  const int64_t tid = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  if (!VEC) {
    for (int64_t i = tid; i < n; i += stride) scalar_one<T, DIR, APPROX>(x, dy, out, i);
    return;
  }
  constexpr int V = elem<T>::kVec;
  const int64_t nvec = (n - head) / V;
  const int64_t tail0 = head + nvec * V;
  const int64_t nscalar = head + (n - tail0);
  if (tid < nscalar) {
    const int64_t i = tid < head ? tid : tail0 + (tid - head);
    scalar_one<T, DIR, APPROX>(x, dy, out, i);
  }
  const uint4 *xv = reinterpret_cast<const uint4 *>(x + head);
  const uint4 *dv = reinterpret_cast<const uint4 *>(dy + (DIR ? head : 0));
  uint4 *ov = reinterpret_cast<uint4 *>(out + head);
  const uint4 zero = make_uint4(0, 0, 0, 0);
  /* each thread: vectors i and i + blockDim.x of its block's 2*blockDim.x */
  const int64_t step = 2 * (int64_t)blockDim.x;
  for (int64_t i = blockIdx.x * step + threadIdx.x; i < nvec; i += gridDim.x * step) {
    const int64_t j = i + blockDim.x;
    const uint4 a0 = __ldcs(xv + i);
    const uint4 b0 = DIR ? __ldcs(dv + i) : zero;
    uint4 a1 = zero, b1 = zero;
    if (j < nvec) {
      a1 = __ldcs(xv + j);
      if (DIR) b1 = __ldcs(dv + j);
    }
    __stcs(ov + i, vec_one<T, DIR, APPROX>(a0, b0));
    if (j < nvec) __stcs(ov + j, vec_one<T, DIR, APPROX>(a1, b1));
  }
}

typedef void (*gelu_fn)(const void *, const void *, void *, int64_t, int);

#define GK_PAIR(T, DIR, APPROX) \
  gelu_kernel<T, DIR, APPROX, false>, gelu_kernel<T, DIR, APPROX, true>
#define GK_ROW(DIR, APPROX)                                   \
  GK_PAIR(float, DIR, APPROX), GK_PAIR(__half, DIR, APPROX), \
      GK_PAIR(__nv_bfloat16, DIR, APPROX)

/* Index ((dir * 2 + approx) * 3 + dtype) * 2 + vec, dtype as gko_dtype_t. */
const gelu_fn kKernels[GK_GELU_NKERNELS] = {GK_ROW(0, 0), GK_ROW(0, 1), GK_ROW(1, 0),
                                            GK_ROW(1, 1)};

int kernel_index(int dir, int approx, int dtype, int vec) {
  return ((dir * 2 + approx) * 3 + dtype) * 2 + vec;
}

} // namespace

extern "C" gko_status_t gk_gelu_occupancy(gk_occupancy *occ) {
  for (int k = 0; k < GK_GELU_NKERNELS; k++) {
    int grid = 0, block = 0;
    cudaError_t e = cudaOccupancyMaxPotentialBlockSize(&grid, &block, kKernels[k], 0,
                                                       kMaxBlock);
    if (e != cudaSuccess) return gk_cuda_fail(e, "cudaOccupancyMaxPotentialBlockSize (GELU)");
    occ[k].block = block;
    occ[k].grid = grid;
  }
  return GKO_STATUS_SUCCESS;
}

extern "C" gko_status_t gk_gelu_launch(const gk_occupancy *occ, int dir, int approx,
                                       int dtype, int64_t n, const void *a, const void *b,
                                       void *out, void *stream) {
  const int esize = dtype == GKO_DTYPE_F32 ? 4 : 2;
  const int per_vec = kVecBytes / esize;
  const uintptr_t ax = (uintptr_t)a % kVecBytes;
  bool vec = ((uintptr_t)out % kVecBytes == ax) && (!dir || (uintptr_t)b % kVecBytes == ax);
  int head = 0;
  if (vec) {
    head = (int)(((kVecBytes - ax) % kVecBytes) / esize);
    if (head > n) head = (int)n;
  }
  const int k = kernel_index(dir, approx, dtype, vec ? 1 : 0);
  const int block = occ[k].block;
  /* threads: one per two vectors (vector kernel), one per element (scalar);
   * at least 2*per_vec threads for the scalar head and tail */
  int64_t items = vec ? ((n - head) / per_vec + 1) / 2 : n;
  if (vec && items < (int64_t)per_vec * 2) items = per_vec * 2;
  int64_t blocks = gk::grid_x((items + block - 1) / block);
  if (blocks < 1) blocks = 1;
  void *args[] = {(void *)&a, (void *)&b, (void *)&out, (void *)&n, (void *)&head};
  cudaError_t e = cudaLaunchKernel((const void *)kKernels[k], dim3((unsigned)blocks),
                                   dim3((unsigned)block), args, 0, (cudaStream_t)stream);
  if (e != cudaSuccess) return gk_cuda_fail(e, "GELU kernel launch");
  return GKO_STATUS_SUCCESS;
}
