/* gemm_pad.cu -- copies an operand of a GEMM into an aligned, zero-padded
 * block of the workspace, so that cuBLASLt sees k and leading dimensions
 * that are multiples of 16 bytes and 256-byte aligned pointers (the shapes
 * its fast kernels need; see docs/gemm.md for when this pays).
 *
 * Column-major view: the source has `rows` x `cols` elements per batch with
 * leading dimension ld_src (any value, any element-aligned pointer); the
 * destination ld_dst x cols_dst, every element outside the source written
 * as zero (the zeros in k contribute nothing to the product; the ones past
 * `rows` keep the block fully initialised).  Memory-bound: each thread
 * writes one 16-byte vector of a destination column (ld_dst is a multiple
 * of 16 bytes, dst 16-byte aligned) and reads its source elements with
 * scalar loads, which a warp coalesces into contiguous segments.  Indices
 * are int64 throughout. */
#include <cuda_runtime.h>
#include <stdint.h>

#include "../src/internal.h"

namespace {

constexpr int kBlock = 256;
constexpr int64_t kMaxGridX = 2147483647;
constexpr int64_t kMaxGridY = 65535;

template <typename T>
__global__ void pad_kernel(const T *__restrict__ src, int64_t rows, int64_t cols, int64_t ld_src,
                           int64_t stride_src, T *__restrict__ dst, int64_t ld_dst,
                           int64_t cols_dst, int64_t stride_dst, int64_t lines) {
  constexpr int V = 16 / sizeof(T);
  const int64_t chunks = ld_dst / V;
  for (int64_t line = (int64_t)blockIdx.y * blockDim.y + threadIdx.y; line < lines;
       line += (int64_t)gridDim.y * blockDim.y) {
    const int64_t b = line / cols_dst, c = line - b * cols_dst;
    const T *s = src + b * stride_src + c * ld_src;
    T *d = dst + b * stride_dst + c * ld_dst;
    const int64_t valid = c < cols ? rows : 0; /* source elements in this column */
    for (int64_t q = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; q < chunks;
         q += (int64_t)gridDim.x * blockDim.x) {
      const int64_t r0 = q * V;
      union {
        T e[V];
        uint4 v;
      } u;
#pragma unroll
      for (int j = 0; j < V; j++) u.e[j] = r0 + j < valid ? __ldg(s + r0 + j) : T(0);
      *reinterpret_cast<uint4 *>(d + r0) = u.v;
    }
  }
}

} // namespace

extern "C" gko_status_t gk_gemm_pad_launch(int esize, int64_t rows, int64_t cols, int64_t batch,
                                           const void *src, int64_t ld_src, int64_t stride_src,
                                           void *dst, int64_t ld_dst, int64_t cols_dst,
                                           int64_t stride_dst, void *stream) {
  const int V = 16 / esize;
  const int64_t chunks = ld_dst / V, lines = cols_dst * batch;
  /* threads along a column's chunks; short columns share a block */
  int bx = chunks >= kBlock ? kBlock : (int)((chunks + 31) / 32 * 32);
  if (bx < 32) bx = 32;
  const int by = kBlock / bx;
  int64_t gx = (chunks + bx - 1) / bx, gy = (lines + by - 1) / by;
  if (gx > kMaxGridX) gx = kMaxGridX;
  if (gy > kMaxGridY) gy = kMaxGridY;
  void *args[] = {(void *)&src, (void *)&rows,    (void *)&cols,       (void *)&ld_src,
                  (void *)&stride_src, (void *)&dst, (void *)&ld_dst, (void *)&cols_dst,
                  (void *)&stride_dst, (void *)&lines};
  const void *fn = esize == 2 ? (const void *)pad_kernel<uint16_t>
                              : (const void *)pad_kernel<uint32_t>;
  cudaError_t e = cudaLaunchKernel(fn, dim3((unsigned)gx, (unsigned)gy), dim3(bx, by), args, 0,
                                   (cudaStream_t)stream);
  if (e != cudaSuccess) return gk_cuda_fail(e, "GEMM padding kernel launch");
  return GKO_STATUS_SUCCESS;
}
