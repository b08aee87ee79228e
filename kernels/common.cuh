/* common.cuh -- what every kernel file's host code shares: the grid-size
 * limits and their clamps, and a typed launcher.
 *
 * The kernels loop where a grid is clamped (grid-stride over blocks, or
 * over blockIdx.y / z), so a clamp never drops work. */
#ifndef GK_COMMON_CUH
#define GK_COMMON_CUH

#include <cuda_runtime.h>
#include <stdint.h>

namespace gk {

/* gridDim.x may reach 2^31 - 1 blocks, gridDim.y and gridDim.z 65535. */
constexpr int64_t kMaxGridX = 2147483647;
constexpr int64_t kMaxGridY = 65535;

/* blocks clamped to gridDim.x's (gridDim.y's or .z's) limit */
inline int64_t grid_x(int64_t blocks) { return blocks > kMaxGridX ? kMaxGridX : blocks; }
inline int64_t grid_y(int64_t blocks) { return blocks > kMaxGridY ? kMaxGridY : blocks; }

template <typename T>
struct same {
  typedef T type;
};

/* k<<<grid, block, 0, stream>>>(args...) with the error returned
 * (cudaLaunchKernel), so the caller's cudaGetLastError state is never
 * touched. */
template <typename... P>
inline cudaError_t launch(void (*k)(P...), dim3 grid, dim3 block, cudaStream_t stream,
                          typename same<P>::type... args) {
  void *argv[] = {(void *)&args..., nullptr};
  return cudaLaunchKernel((const void *)k, grid, block, argv, 0, stream);
}

/* the same with `smem` bytes of dynamic shared memory */
template <typename... P>
inline cudaError_t launch_shared(void (*k)(P...), dim3 grid, dim3 block, size_t smem,
                                 cudaStream_t stream, typename same<P>::type... args) {
  void *argv[] = {(void *)&args..., nullptr};
  return cudaLaunchKernel((const void *)k, grid, block, argv, smem, stream);
}

} // namespace gk

#endif /* GK_COMMON_CUH */
