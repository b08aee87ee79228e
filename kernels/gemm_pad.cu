/* gemm_pad.cu -- copies an operand of a GEMM into an aligned, zero-padded
 * block of the workspace, so that cuBLASLt sees k and leading dimensions
 * that are multiples of 16 bytes and 256-byte aligned pointers (the shapes
 * its fast kernels need; see docs/gemm.md for when this pays).
 *
 * Column-major view: the source has `rows` x `cols` elements per batch with
 * leading dimension ld_src (any value, any element-aligned pointer); the
 * destination ld_dst x cols_dst, every element outside the source written
 * as zero (the zeros in k contribute nothing to the product; the ones past
 * `rows` keep the block fully initialised).  Memory-bound.  One warp per
 * segment of 32 x V elements of a destination column (V = 16 bytes / element
 * size): it reads the source segment with V coalesced scalar loads (32
 * consecutive elements each -- any source alignment), stages it in shared
 * memory, and writes it as one 16-byte vector per lane (ld_dst is a
 * multiple of 16 bytes, dst 16-byte aligned).  Indices are int64. */
#include <cuda_runtime.h>
#include <stdint.h>

#include "gemm_pad.h"
#include "common.cuh"

namespace {

constexpr int kBlock = 256;

template <typename T>
__global__ void __launch_bounds__(kBlock)
    pad_kernel(const T *__restrict__ src, int64_t rows, int64_t cols, int64_t ld_src,
               int64_t stride_src, T *__restrict__ dst, int64_t ld_dst, int64_t cols_dst,
               int64_t stride_dst, int64_t lines) {
  constexpr int V = 16 / sizeof(T);
  constexpr int SEG = 32 * V; /* elements per warp segment */
  __shared__ __align__(16) T stage[kBlock / 32][SEG];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int64_t segs_per_line = (ld_dst + SEG - 1) / SEG;
  const int64_t total = lines * segs_per_line;
  T *buf = stage[warp];
  for (int64_t seg = (int64_t)blockIdx.x * (kBlock / 32) + warp; seg < total;
       seg += (int64_t)gridDim.x * (kBlock / 32)) {
    const int64_t line = seg / segs_per_line, r0 = (seg - line * segs_per_line) * SEG;
    const int64_t b = line / cols_dst, c = line - b * cols_dst;
    const T *s = src + b * stride_src + c * ld_src;
    T *d = dst + b * stride_dst + c * ld_dst;
    const int64_t valid = c < cols ? rows : 0; /* source elements in this column */
#pragma unroll
    for (int j = 0; j < V; j++) {
      const int64_t r = r0 + j * 32 + lane;
      buf[j * 32 + lane] = r < valid ? __ldg(s + r) : T(0);
    }
    __syncwarp();
    if (r0 + lane * V < ld_dst)
      *reinterpret_cast<uint4 *>(d + r0 + lane * V) = *reinterpret_cast<const uint4 *>(buf + lane * V);
    __syncwarp();
  }
}

} // namespace

extern "C" gko_status_t gk_gemm_pad_launch(int esize, int64_t rows, int64_t cols, int64_t batch,
                                           const void *src, int64_t ld_src, int64_t stride_src,
                                           void *dst, int64_t ld_dst, int64_t cols_dst,
                                           int64_t stride_dst, void *stream) {
  const int64_t seg = 32 * (16 / esize);
  const int64_t lines = cols_dst * batch;
  const int64_t segs = lines * ((ld_dst + seg - 1) / seg);
  const int64_t grid = gk::grid_x((segs + kBlock / 32 - 1) / (kBlock / 32));
  void *args[] = {(void *)&src, (void *)&rows,    (void *)&cols,       (void *)&ld_src,
                  (void *)&stride_src, (void *)&dst, (void *)&ld_dst, (void *)&cols_dst,
                  (void *)&stride_dst, (void *)&lines};
  const void *fn = esize == 2 ? (const void *)pad_kernel<uint16_t>
                              : (const void *)pad_kernel<uint32_t>;
  cudaError_t e = cudaLaunchKernel(fn, dim3((unsigned)grid), dim3(kBlock), args, 0,
                                   (cudaStream_t)stream);
  if (e != cudaSuccess) return gk_cuda_fail(e, "GEMM padding kernel launch");
  return GKO_STATUS_SUCCESS;
}
