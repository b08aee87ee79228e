/* row_io.cuh -- what the row-wise kernels (norm.cu, softmax.cu) share: a
 * thread's slice of one row, loaded to and stored from f32 registers, and
 * sums and maxima over the threads of a row.
 *
 * A row is read by TPR threads (one warp, or a whole block).  Chunk c of
 * thread t covers the VE elements from (c * TPR + t) * VE: VE = the
 * elements in 16 bytes when every pointer and leading dimension allows
 * 16-byte vectors, else 1 (scalar, still coalesced).  A chunk that runs
 * past the row's end is done element by element. */
#ifndef GK_ROW_IO_CUH
#define GK_ROW_IO_CUH

#include <cuda_runtime.h>
#include <stdint.h>

#include "convert.cuh"

namespace gk {
namespace rowio {

/* The threads of a block that the launch uses, and warps per block. */
constexpr int kWarpBlock = 128;  /* the warp-per-row kernels: 4 rows per block */
constexpr int kStreamBlock = 512; /* the rows too long for registers */

/* VE elements of row at [base, base + VE) into f (0 past cols). */
template <typename T, int VE>
__device__ __forceinline__ void load(const T *row, int64_t base, int64_t cols, float *f) {
  if constexpr (VE > 1) {
    if (base + VE <= cols) {
      elem<T>::unpack(*reinterpret_cast<const uint4 *>(row + base), f);
      return;
    }
  }
#pragma unroll
  for (int k = 0; k < VE; k++) f[k] = base + k < cols ? elem<T>::to_f(row[base + k]) : 0.0f;
}

/* VE f32 values of a float row (the softmax mask) at [base, base + VE). */
template <int VE>
__device__ __forceinline__ void load_f32(const float *row, int64_t base, int64_t cols, float *f) {
  if constexpr (VE > 1) {
    if (base + VE <= cols) {
#pragma unroll
      for (int q = 0; q < VE / 4; q++) {
        const float4 v = *reinterpret_cast<const float4 *>(row + base + 4 * q);
        f[4 * q] = v.x;
        f[4 * q + 1] = v.y;
        f[4 * q + 2] = v.z;
        f[4 * q + 3] = v.w;
      }
      return;
    }
  }
#pragma unroll
  for (int k = 0; k < VE; k++) f[k] = base + k < cols ? row[base + k] : 0.0f;
}

/* f rounded to T into row at [base, base + VE), nothing past cols. */
template <typename T, int VE>
__device__ __forceinline__ void store(T *row, int64_t base, int64_t cols, const float *f) {
  if constexpr (VE > 1) {
    if (base + VE <= cols) {
      *reinterpret_cast<uint4 *>(row + base) = elem<T>::pack(f);
      return;
    }
  }
#pragma unroll
  for (int k = 0; k < VE; k++)
    if (base + k < cols) row[base + k] = elem<T>::from_f(f[k]);
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

/* The sum (MAX: the maximum) of v over the TPR threads of a row, in every
 * one of them.  TPR > 32: the whole block is the row, and red holds
 * TPR / 32 floats of shared memory; every thread of the block calls it.
 * The order of the additions is fixed (deterministic). */
template <int TPR, bool MAX>
__device__ __forceinline__ float row_reduce(float v, float *red) {
  v = MAX ? warp_max(v) : warp_sum(v);
  if constexpr (TPR > 32) {
    const int warp = threadIdx.x >> 5;
    __syncthreads(); /* red's previous use is over */
    if ((threadIdx.x & 31) == 0) red[warp] = v;
    __syncthreads();
    v = red[0];
#pragma unroll
    for (int w = 1; w < TPR / 32; w++) v = MAX ? fmaxf(v, red[w]) : v + red[w];
  }
  return v;
}

/* The block size for a kernel of TPR threads per row. */
template <int TPR>
constexpr int block_of() {
  return TPR < kWarpBlock ? kWarpBlock : TPR;
}

/* Host: a matrix at p (NULL: absent) with leading dimension ld of es-byte
 * elements allows 16-byte vectors (every row start 16-byte aligned). */
inline bool vec_ok(const void *p, int64_t ld, int64_t es) {
  return !p || ((uintptr_t)p % 16 == 0 && (ld * es) % 16 == 0);
}

}  // namespace rowio
}  // namespace gk

#endif /* GK_ROW_IO_CUH */
