/* rows.cu -- row gathers (gko_embedding) and masked mean pooling over a
 * sequence (gko_mean_pool).
 *
 * Embedding is a copy: one thread per 16-byte vector of an output row
 * (or per element where the pointers or leading dimensions do not allow
 * vectors), the bits moved unchanged; a row whose index is out of range is
 * filled with NaN and its table row is never read.
 *
 * Mean pooling: a block of 8 warps takes one sequence and a range of
 * columns; a warp's lanes cover 32 vectors of columns and the 8 warps
 * split the sequence's rows, their partial sums combined through shared
 * memory in a fixed order (deterministic).  Without normalisation the
 * columns are split over several blocks so that a small batch still
 * fills the GPU; with it one block takes a whole sequence (the norm needs
 * every column) and keeps the f32 means in shared memory until the norm is
 * known, or, beyond kPoolKeep columns, sums the rows a second time. */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "common.cuh"
#include "convert.cuh"
#include "row_io.cuh"
#include "rows.h"

namespace {

using gk::elem;

/* ---- embedding -------------------------------------------------------------- */

constexpr int kEmbBlock = 256;

struct EmbArgs {
  const void *table, *ids;
  void *y;
  int64_t num_rows, dim, ldt, ldy, n;
};

/* E: the element's bits (uint32_t or uint16_t); I: the index type; VE:
 * elements a thread moves (16 / sizeof(E), or 1). */
template <typename E, typename I, int VE>
__global__ void __launch_bounds__(kEmbBlock) emb_kernel(EmbArgs a, E nan_bits) {
  const int64_t chunks = (a.dim + VE - 1) / VE;
  const int64_t total = a.n * chunks;
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t idx = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; idx < total;
       idx += stride) {
    const int64_t i = idx / chunks, base = (idx - i * chunks) * VE;
    const int64_t id = (int64_t)static_cast<const I *>(a.ids)[i];
    const bool ok = id >= 0 && id < a.num_rows;
    E *yr = static_cast<E *>(a.y) + i * a.ldy;
    const E *tr = static_cast<const E *>(a.table) + (ok ? id : 0) * a.ldt;
    if constexpr (VE > 1) {
      if (base + VE <= a.dim) {
        uint4 v;
        if (ok) {
          v = __ldg(reinterpret_cast<const uint4 *>(tr + base));
        } else {
          const unsigned w = sizeof(E) == 4 ? (unsigned)nan_bits
                                            : (unsigned)nan_bits | ((unsigned)nan_bits << 16);
          v = make_uint4(w, w, w, w);
        }
        *reinterpret_cast<uint4 *>(yr + base) = v;
        continue;
      }
    }
#pragma unroll
    for (int k = 0; k < VE; k++)
      if (base + k < a.dim) yr[base + k] = ok ? tr[base + k] : nan_bits;
  }
}

template <typename E, typename I>
cudaError_t emb_go(const EmbArgs &a, bool vec, E nan_bits, cudaStream_t st) {
  constexpr int kVe = 16 / (int)sizeof(E);
  const int64_t per = vec ? kVe : 1;
  const int64_t threads = a.n * ((a.dim + per - 1) / per);
  const dim3 grid((unsigned)gk::grid_x((threads + kEmbBlock - 1) / kEmbBlock));
  return vec ? gk::launch(emb_kernel<E, I, kVe>, grid, dim3(kEmbBlock), st, a, nan_bits)
             : gk::launch(emb_kernel<E, I, 1>, grid, dim3(kEmbBlock), st, a, nan_bits);
}

template <typename E>
cudaError_t emb_index(const EmbArgs &a, bool index64, bool vec, E nan_bits, cudaStream_t st) {
  return index64 ? emb_go<E, int64_t>(a, vec, nan_bits, st)
                 : emb_go<E, int32_t>(a, vec, nan_bits, st);
}

/* ---- mean pooling ----------------------------------------------------------- */

constexpr int kPoolBlock = 256;
constexpr int kPoolWarps = kPoolBlock / 32;
constexpr int kPoolKeep = 4096; /* columns whose means stay in shared memory (normalize) */

struct PoolArgs {
  const void *x;
  const int32_t *lengths;
  void *y;
  int64_t batch, seq, dim, ldx, ldy;
};

/* The means of the columns of vectors [u, u + 32) (below u_end) of one
 * sequence xb of L rows: each is handed to out(col, mean) by one thread.
 * Every thread of the block calls it. */
template <typename T, int VE, typename Out>
__device__ __forceinline__ void chunk_means(const PoolArgs &a, const T *xb, int64_t L,
                                            int64_t u, int64_t u_end,
                                            float (*part)[32 * VE], Out out) {
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  float acc[VE];
#pragma unroll
  for (int k = 0; k < VE; k++) acc[k] = 0.0f;
  if (u + lane < u_end) {
    const int64_t base = (u + lane) * VE;
#pragma unroll 4
    for (int64_t s = warp; s < L; s += kPoolWarps) {
      float f[VE];
      gk::rowio::load<T, VE>(xb + s * a.ldx, base, a.dim, f);
#pragma unroll
      for (int k = 0; k < VE; k++) acc[k] += f[k];
    }
  }
#pragma unroll
  for (int k = 0; k < VE; k++) part[warp][lane * VE + k] = acc[k];
  __syncthreads();
  const int64_t col_end = u_end * VE < a.dim ? u_end * VE : a.dim;
  for (int c = threadIdx.x; c < 32 * VE; c += kPoolBlock) {
    const int64_t col = u * VE + c;
    if (col < col_end) {
      float sum = part[0][c];
#pragma unroll
      for (int w = 1; w < kPoolWarps; w++) sum += part[w][c];
      out(col, L > 0 ? sum / (float)L : 0.0f);
    }
  }
  __syncthreads();
}

template <typename T, int VE, bool NORM>
__global__ void __launch_bounds__(kPoolBlock)
    pool_kernel(PoolArgs a, int64_t col_blocks, int64_t units_per_block) {
  __shared__ float part[kPoolWarps][32 * VE];
  __shared__ float keep[NORM ? kPoolKeep : 1];
  __shared__ float red[kPoolWarps];
  const int64_t units = (a.dim + VE - 1) / VE;
  for (int64_t blk = blockIdx.x; blk < a.batch * col_blocks; blk += gridDim.x) {
    const int64_t b = blk / col_blocks, cb = blk - b * col_blocks;
    int64_t L = a.lengths ? (int64_t)a.lengths[b] : a.seq;
    L = L < 0 ? 0 : L > a.seq ? a.seq : L;
    const int64_t u0 = cb * units_per_block;
    const int64_t u1 = u0 + units_per_block < units ? u0 + units_per_block : units;
    const T *xb = static_cast<const T *>(a.x) + b * a.seq * a.ldx;
    T *yb = static_cast<T *>(a.y) + b * a.ldy;
    if constexpr (!NORM) {
      for (int64_t u = u0; u < u1; u += 32)
        chunk_means<T, VE>(a, xb, L, u, u1, part,
                           [&](int64_t col, float m) { yb[col] = elem<T>::from_f(m); });
    } else {
      const bool kept = a.dim <= kPoolKeep;
      float sq = 0.0f;
      for (int64_t u = u0; u < u1; u += 32)
        chunk_means<T, VE>(a, xb, L, u, u1, part, [&](int64_t col, float m) {
          sq += m * m;
          if (kept) keep[col] = m;
        });
      const float norm = sqrtf(gk::rowio::row_reduce<kPoolBlock, false>(sq, red));
      const float denom = fmaxf(norm, 1e-12f);
      if (kept) {
        for (int64_t col = threadIdx.x; col < a.dim; col += kPoolBlock)
          yb[col] = elem<T>::from_f(keep[col] / denom);
        __syncthreads(); /* keep is rewritten by the next sequence */
      } else {
        for (int64_t u = u0; u < u1; u += 32)
          chunk_means<T, VE>(a, xb, L, u, u1, part, [&](int64_t col, float m) {
            yb[col] = elem<T>::from_f(m / denom);
          });
      }
    }
  }
}

template <typename T, int VE>
cudaError_t pool_go(const PoolArgs &a, bool normalize, int sm_count, cudaStream_t st) {
  const int64_t units = (a.dim + VE - 1) / VE;
  const int64_t chunks = (units + 31) / 32;
  int64_t col_blocks = 1;
  if (!normalize) {
    /* about two blocks per SM in all, in whole chunks of 32 vectors */
    const int64_t want = (2 * (int64_t)(sm_count > 0 ? sm_count : 1) + a.batch - 1) / a.batch;
    col_blocks = want < chunks ? want : chunks;
    if (col_blocks < 1) col_blocks = 1;
  }
  const int64_t units_per_block = (chunks + col_blocks - 1) / col_blocks * 32;
  col_blocks = (units + units_per_block - 1) / units_per_block;
  const dim3 grid((unsigned)gk::grid_x(a.batch * col_blocks));
  return normalize ? gk::launch(pool_kernel<T, VE, true>, grid, dim3(kPoolBlock), st, a,
                                col_blocks, units_per_block)
                   : gk::launch(pool_kernel<T, VE, false>, grid, dim3(kPoolBlock), st, a,
                                col_blocks, units_per_block);
}

template <typename T>
cudaError_t pool_vec(const PoolArgs &a, bool vec, bool normalize, int sm, cudaStream_t st) {
  return vec ? pool_go<T, elem<T>::kVec>(a, normalize, sm, st)
             : pool_go<T, 1>(a, normalize, sm, st);
}

}  // namespace

extern "C" gko_status_t gk_embedding_launch(int dtype, int64_t num_rows, int64_t dim,
                                            const void *table, int64_t ldt, int index64,
                                            const void *ids, int64_t n, void *y, int64_t ldy,
                                            void *stream) {
  const EmbArgs a = {table, ids, y, num_rows, dim, ldt, ldy, n};
  const int64_t es = dtype == GKO_DTYPE_F32 ? 4 : 2;
  const bool vec = gk::rowio::vec_ok(table, ldt, es) && gk::rowio::vec_ok(y, ldy, es);
  const cudaStream_t st = (cudaStream_t)stream;
  cudaError_t e;
  if (dtype == GKO_DTYPE_F32)
    e = emb_index<uint32_t>(a, index64 != 0, vec, 0x7fc00000u, st);
  else
    e = emb_index<uint16_t>(a, index64 != 0, vec,
                            (uint16_t)(dtype == GKO_DTYPE_F16 ? 0x7e00 : 0x7fc0), st);
  if (e != cudaSuccess) return gk_cuda_fail(e, "embedding kernel launch");
  return GKO_STATUS_SUCCESS;
}

extern "C" gko_status_t gk_mean_pool_launch(int dtype, int64_t batch, int64_t seq, int64_t dim,
                                            const void *x, int64_t ldx,
                                            const int32_t *lengths, int normalize, void *y,
                                            int64_t ldy, int sm_count, void *stream) {
  const PoolArgs a = {x, lengths, y, batch, seq, dim, ldx, ldy};
  const int64_t es = dtype == GKO_DTYPE_F32 ? 4 : 2;
  const bool vec = gk::rowio::vec_ok(x, ldx, es);
  const bool norm = normalize != 0;
  const cudaStream_t st = (cudaStream_t)stream;
  cudaError_t e;
  if (dtype == GKO_DTYPE_F32) e = pool_vec<float>(a, vec, norm, sm_count, st);
  else if (dtype == GKO_DTYPE_F16) e = pool_vec<__half>(a, vec, norm, sm_count, st);
  else e = pool_vec<__nv_bfloat16>(a, vec, norm, sm_count, st);
  if (e != cudaSuccess) return gk_cuda_fail(e, "mean pool kernel launch");
  return GKO_STATUS_SUCCESS;
}
