/* fault_kernel.cu -- CUDA helpers linked only into test_stress (Makefile rule
 * build/tests/fault_kernel.o).  Test code, not part of the library:
 *
 *   gkt_oob_write   launches one thread that writes an int far past the end
 *                   of an allocation: the out-of-bounds write that puts the
 *                   context into a sticky error state (the fault-injection
 *                   test, run in a child process);
 *   gkt_count_diff  counts, on the stream, the bytes where two device buffers
 *                   differ and keeps the first iteration that differed: the
 *                   stress test's per-iteration check of every output against
 *                   the serial result without copying it back.
 *
 * test_stress.c declares both weak, so the suite still links where this
 * object is absent (tests/host_sanitize.sh builds every suite on its own);
 * the tests that need it then say so. */
#include <cuda_runtime.h>
#include <stddef.h>

__global__ void gkt_oob_write_kernel(volatile int *p, long long offset) {
  if (blockIdx.x == 0 && threadIdx.x == 0) p[offset] = 0x7f7f7f7f;
}

/* Writes base[offset] (ints) from one thread on stream; returns the launch's
 * cudaError_t (the fault itself shows at the next synchronization). */
extern "C" int gkt_oob_write(void *base, long long offset, cudaStream_t stream) {
  gkt_oob_write_kernel<<<1, 32, 0, stream>>>((volatile int *)base, offset);
  return (int)cudaGetLastError();
}

/* counters[0] += number of bytes i < n with got[i] != want[i];
 * counters[1] = min(counters[1], iter) when any byte differs. */
__global__ void gkt_count_diff_kernel(const unsigned char *got, const unsigned char *want,
                                      size_t n, unsigned long long iter,
                                      unsigned long long *counters) {
  unsigned long long bad = 0;
  const size_t stride = (size_t)gridDim.x * blockDim.x;
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
    bad += got[i] != want[i];
  for (int o = 16; o > 0; o >>= 1) bad += __shfl_down_sync(0xffffffffu, bad, o);
  if ((threadIdx.x & 31) == 0 && bad) {
    atomicAdd(&counters[0], bad);
    atomicMin(&counters[1], iter);
  }
}

extern "C" int gkt_count_diff(const void *got, const void *want, size_t bytes,
                              unsigned long long iter, unsigned long long *counters,
                              cudaStream_t stream) {
  if (bytes == 0) return 0;
  const int block = 256; /* whole warps: the reduction shuffles with a full mask */
  size_t grid = (bytes + block - 1) / block;
  if (grid > 120) grid = 120;
  gkt_count_diff_kernel<<<(unsigned)grid, block, 0, stream>>>(
      (const unsigned char *)got, (const unsigned char *)want, bytes, iter, counters);
  return (int)cudaGetLastError();
}
