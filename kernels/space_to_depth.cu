/* space_to_depth.cu -- see space_to_depth.h.
 *
 * x2 is written in tiles of one output row (n, i) x up to 128 output columns:
 * a block first copies the tile's input -- stride_h rows of x, each a
 * contiguous run from the tile's first input column -- to shared memory with
 * coalesced loads, then writes the tile's columns x c2 channels (contiguous
 * in x2) as 16-byte groups gathered from shared memory.  A tile whose input
 * would not fit 48 KB even one column wide falls back to s2d_x, one thread
 * per 16-byte group gathering straight from x.  The filter's copy is small
 * (K x R2 x C2 elements): one per thread. */
#include <atomic>

#include "common.cuh"
#include "im2col.cuh"
#include "space_to_depth.h"

namespace {

/* divisions by run-time constants (im2col.h's gk_fastdiv: numerators below
 * 2^31, which gk_s2d_launch checks) */
struct s2d_divs {
  gk_fastdiv groups, w2, h2, c, sc;
};

/* A group's 8 channels ch = (dy * s + t) * c + ci are consecutive: one
 * division finds the first one's (dy, t, ci), and the others step from it
 * (for a fixed dy, the s * c channels are x's row from column
 * stride_w * j - pad_w on, contiguous in NHWC). */
__global__ void s2d_x(gk_s2d_args a, s2d_divs d, uint32_t total, const uint16_t *__restrict__ x,
                      uint4 *__restrict__ x2) {
  const uint32_t real = (uint32_t)(a.stride_h * a.s * a.c);
  for (uint32_t g = blockIdx.x * blockDim.x + threadIdx.x; g < total; g += gridDim.x * blockDim.x) {
    const auto [pix, cg] = gk::divmod(d.groups, d.groups.d, g);
    const auto [q, j] = gk::divmod(d.w2, d.w2.d, pix);
    const auto [n, i] = gk::divmod(d.h2, d.h2.d, q);
    const uint32_t ch0 = cg * 8;
    const auto [dy, rem] = gk::divmod(d.sc, d.sc.d, ch0);
    auto [t, ci] = gk::divmod(d.c, d.c.d, rem);
    int64_t ih = a.stride_h * i + dy - a.pad_h;
    const int64_t iw0 = a.stride_w * j - a.pad_w;
    uint16_t v[8];
#pragma unroll
    for (int e = 0; e < 8; e++) {
      const int64_t iw = iw0 + t;
      v[e] = ch0 + e < real && ih >= 0 && ih < a.h && iw >= 0 && iw < a.w
                 ? x[((n * a.h + ih) * a.w + iw) * a.c + ci]
                 : (uint16_t)0;
      if (++ci == d.c.d) { /* the next tap; past the last one, the next row block */
        ci = 0;
        if (++t == (uint32_t)a.s) t = 0, ih++;
      }
    }
    x2[g] = make_uint4(v[0] | (uint32_t)v[1] << 16, v[2] | (uint32_t)v[3] << 16,
                       v[4] | (uint32_t)v[5] << 16, v[6] | (uint32_t)v[7] << 16);
  }
}

/* The tiled copy: a block (256 threads: a tile holds a few hundred 16-byte
 * groups) per tile of jt output columns.  seg[stride_h][len] holds the
 * tile's input, len = (stride_w (jt - 1) + s) c elements of each of the
 * stride_h rows, zero outside x. */
__global__ void s2d_x_tiled(gk_s2d_args a, int jt, int tiles_per_row, gk_fastdiv groups,
                            gk_fastdiv sc, int64_t tiles, const uint16_t *__restrict__ x,
                            uint4 *__restrict__ x2) {
  extern __shared__ uint16_t seg[];
  const int len = ((int)a.stride_w * (jt - 1) + (int)a.s) * (int)a.c;
  const int real = (int)(a.stride_h * a.s * a.c), row_len = (int)(a.w * a.c);
  for (int64_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    const int64_t row = tile / tiles_per_row; /* n * h2 + i */
    const int j0 = (int)(tile - row * tiles_per_row) * jt;
    const int jn = min(jt, (int)a.w2 - j0);
    const int64_t n = row / a.h2, i = row - n * a.h2;
    /* the input run starts at element (stride_w j0 - pad_w) c of each row */
    const int64_t e0 = (a.stride_w * j0 - a.pad_w) * a.c;
    __syncthreads(); /* the previous tile's reads of seg are done */
    for (int dy = 0; dy < (int)a.stride_h; dy++) {
      const int64_t ih = a.stride_h * i + dy - a.pad_h;
      const bool in_rows = ih >= 0 && ih < a.h;
      const uint16_t *xr = x + (n * a.h + (in_rows ? ih : 0)) * row_len;
      for (int r = threadIdx.x; r < len; r += blockDim.x) {
        const int64_t e = e0 + r;
        seg[dy * len + r] = in_rows && e >= 0 && e < row_len ? xr[e] : (uint16_t)0;
      }
    }
    __syncthreads();
    uint4 *out = x2 + (row * a.w2 + j0) * groups.d;
    const uint32_t count = (uint32_t)jn * groups.d;
    for (uint32_t g = threadIdx.x; g < count; g += blockDim.x) {
      const auto [jj, cg] = gk::divmod(groups, groups.d, g);
      const int ch0 = (int)cg * 8;
      auto [dy, rem] = gk::divmod(sc, sc.d, (uint32_t)ch0);
      /* channel (dy, rem) of column jj is seg[dy][stride_w jj c + rem] */
      int idx = (int)dy * len + (int)(a.stride_w * jj * a.c) + (int)rem;
      uint16_t v[8];
#pragma unroll
      for (int k = 0; k < 8; k++) {
        v[k] = ch0 + k < real ? seg[idx] : (uint16_t)0;
        idx++;
        if (++rem == sc.d) rem = 0, idx += len - (int)sc.d; /* the next row of the block */
      }
      out[g] = make_uint4(v[0] | (uint32_t)v[1] << 16, v[2] | (uint32_t)v[3] << 16,
                          v[4] | (uint32_t)v[5] << 16, v[6] | (uint32_t)v[7] << 16);
    }
  }
}

__global__ void s2d_w(gk_s2d_args a, int64_t k, const uint16_t *__restrict__ w,
                      uint16_t *__restrict__ w2) {
  const int64_t total = k * a.r2 * a.c2, real = a.stride_h * a.s * a.c;
  for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < total;
       e += (int64_t)gridDim.x * blockDim.x) {
    const int64_t ch = e % a.c2, ra = e / a.c2 % a.r2, kk = e / (a.c2 * a.r2);
    uint16_t v = 0;
    if (ch < real) {
      const int64_t blk = ch / a.c, ci = ch % a.c, rr = a.stride_h * ra + blk / a.s, t = blk % a.s;
      if (rr < a.r) v = w[((kk * a.r + rr) * a.s + t) * a.c + ci];
    }
    w2[e] = v;
  }
}

/* threads per block from the occupancy API (at most `limit`; 0: no limit),
 * asked once per kernel */
template <typename K>
cudaError_t block_for(K kernel, std::atomic<int> &cache, int *block, int limit = 0) {
  int b = cache.load(std::memory_order_relaxed);
  if (b <= 0) {
    int min_grid = 0;
    const cudaError_t e = cudaOccupancyMaxPotentialBlockSize(&min_grid, &b, kernel, 0, limit);
    if (e != cudaSuccess) return e;
    cache.store(b, std::memory_order_relaxed);
  }
  *block = b;
  return cudaSuccess;
}

std::atomic<int> g_block_x{0}, g_block_w{0};

int64_t blocks_for(int64_t work, int block) { return gk::grid_x((work + block - 1) / block); }


/* The widest tile (at most 128 columns, halving) whose input fits 48 KB of
 * shared memory; 0 where even one column's does not (or a row of x has 2^31
 * elements). */
int tile_columns(const gk_s2d_args *a) {
  if (a->w * a->c >= INT32_MAX) return 0;
  for (int64_t jt = a->w2 < 128 ? a->w2 : 128; jt >= 1; jt /= 2)
    if (a->stride_h * (a->stride_w * (jt - 1) + a->s) * a->c * 2 <= 48 * 1024) return (int)jt;
  return 0;
}

std::atomic<int> g_block_t{0};

} // namespace

extern "C" gko_status_t gk_s2d_launch(const gk_s2d_args *a, const void *x, void *x2, void *stream) {
  const int64_t total = a->n * a->h2 * a->w2 * (a->c2 / 8);
  if (total == 0) return GKO_STATUS_SUCCESS;
  if (total >= INT32_MAX || a->stride_h * a->s * a->c >= INT32_MAX)
    return gk_fail(GKO_STATUS_INTERNAL, "space-to-depth: %lld groups of 8 channels (below 2^31 expected)",
                   (long long)total);
  gk_fastdiv groups, sc;
  gk_fastdiv_init(&groups, (uint32_t)(a->c2 / 8));
  gk_fastdiv_init(&sc, (uint32_t)(a->s * a->c));
  int block;
  cudaError_t e;
  if (const int jt = tile_columns(a)) {
    const int64_t per_row = (a->w2 + jt - 1) / jt, tiles = a->n * a->h2 * per_row;
    const size_t smem = (size_t)(a->stride_h * (a->stride_w * (jt - 1) + a->s) * a->c) * 2;
    e = block_for(s2d_x_tiled, g_block_t, &block, 256);
    if (e == cudaSuccess)
      e = gk::launch_shared(s2d_x_tiled, dim3((unsigned)gk::grid_x(tiles)), dim3(block), smem,
                            (cudaStream_t)stream, *a, jt, (int)per_row, groups, sc, tiles,
                            (const uint16_t *)x, (uint4 *)x2);
  } else {
    s2d_divs d;
    d.groups = groups, d.sc = sc;
    gk_fastdiv_init(&d.w2, (uint32_t)a->w2);
    gk_fastdiv_init(&d.h2, (uint32_t)a->h2);
    gk_fastdiv_init(&d.c, (uint32_t)a->c);
    e = block_for(s2d_x, g_block_x, &block);
    if (e == cudaSuccess)
      e = gk::launch(s2d_x, dim3((unsigned)blocks_for(total, block)), dim3(block),
                     (cudaStream_t)stream, *a, d, (uint32_t)total, (const uint16_t *)x, (uint4 *)x2);
  }
  return e == cudaSuccess ? GKO_STATUS_SUCCESS : gk_cuda_fail(e, "space-to-depth kernel launch");
}

extern "C" gko_status_t gk_s2d_filter_launch(const gk_s2d_args *a, int64_t k, const void *w,
                                             void *w2, void *stream) {
  const int64_t total = k * a->r2 * a->c2;
  if (total == 0) return GKO_STATUS_SUCCESS;
  int block;
  cudaError_t e = block_for(s2d_w, g_block_w, &block);
  if (e == cudaSuccess)
    e = gk::launch(s2d_w, dim3((unsigned)blocks_for(total, block)), dim3(block), (cudaStream_t)stream, *a, k,
                   (const uint16_t *)w, (uint16_t *)w2);
  return e == cudaSuccess ? GKO_STATUS_SUCCESS : gk_cuda_fail(e, "space-to-depth filter kernel launch");
}
