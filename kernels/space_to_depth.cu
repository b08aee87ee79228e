/* space_to_depth.cu -- see space_to_depth.h.  One thread per 16-byte group
 * of 8 output channels (x2's channel count is a multiple of 8), a
 * grid-stride loop over the groups; each of the 8 elements is gathered from
 * its pixel of the block (neighbouring threads read neighbouring pixels).
 * The filter's copy is small (K x R2 x C2 elements): one per thread. */
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

/* threads per block from the occupancy API, asked once per kernel */
template <typename K>
cudaError_t block_for(K kernel, std::atomic<int> &cache, int *block) {
  int b = cache.load(std::memory_order_relaxed);
  if (b <= 0) {
    int min_grid = 0;
    const cudaError_t e = cudaOccupancyMaxPotentialBlockSize(&min_grid, &b, kernel, 0, 0);
    if (e != cudaSuccess) return e;
    cache.store(b, std::memory_order_relaxed);
  }
  *block = b;
  return cudaSuccess;
}

std::atomic<int> g_block_x{0}, g_block_w{0};

int64_t blocks_for(int64_t work, int block) { return gk::grid_x((work + block - 1) / block); }

} // namespace

extern "C" gko_status_t gk_s2d_launch(const gk_s2d_args *a, const void *x, void *x2, void *stream) {
  const int64_t total = a->n * a->h2 * a->w2 * (a->c2 / 8);
  if (total == 0) return GKO_STATUS_SUCCESS;
  if (total >= INT32_MAX || a->stride_h * a->s * a->c >= INT32_MAX)
    return gk_fail(GKO_STATUS_INTERNAL, "space-to-depth: %lld groups of 8 channels (below 2^31 expected)",
                   (long long)total);
  s2d_divs d;
  gk_fastdiv_init(&d.groups, (uint32_t)(a->c2 / 8));
  gk_fastdiv_init(&d.w2, (uint32_t)a->w2);
  gk_fastdiv_init(&d.h2, (uint32_t)a->h2);
  gk_fastdiv_init(&d.c, (uint32_t)a->c);
  gk_fastdiv_init(&d.sc, (uint32_t)(a->s * a->c));
  int block;
  cudaError_t e = block_for(s2d_x, g_block_x, &block);
  if (e == cudaSuccess)
    e = gk::launch(s2d_x, dim3((unsigned)blocks_for(total, block)), dim3(block), (cudaStream_t)stream, *a, d,
                   (uint32_t)total, (const uint16_t *)x, (uint4 *)x2);
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
