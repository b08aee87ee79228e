/* im2col.cu -- the column matrices of Conv2d's im2col + GEMM lowering
 * (Chellapilla, Puri, Simard, 2006), for NCHW and NHWC, the zero-padded
 * filter copy (reordered KCRS -> KRSC for NCHW through NHWC), and the
 * batched transpose of NCHW through NHWC.
 *
 * Memory-bound copies: every element of the column matrix is written once
 * (padding taps as zeros), and the input is read R*S/stride^2 times, mostly
 * from L2.  Both kernels walk the column matrix linearly -- a block owns a
 * tile of consecutive rows and its threads stride over the tile's elements
 * -- so every store is part of a contiguous, coalesced stream:
 *
 *   NHWC  col [G][M = images*OH*OW][kp]: a row is one output pixel, its
 *         columns (r, s, c) are runs of Cg channels, contiguous in x.  Loads
 *         and stores move `vec_bytes` at once (16 when C and C/groups are
 *         multiples of 8 f16 / 4 f32 and x is 16-byte aligned); when only
 *         one element fits, im2col_nhwc_gather assembles 16-byte stores
 *         from scalar loads.
 *   NCHW  col [images][G][kp][ohw_ld]: a row is one (channel, tap), its
 *         columns the output pixels; for stride 1 neighbouring columns read
 *         neighbouring input elements.  Scalar loads, 16-byte stores (ohw_ld
 *         is a multiple of 16 bytes; the columns past OH*OW are zeros).
 *
 * Index math: each tile's rows are decomposed once into shared memory
 * (image offset, first input row and column) with int64 offsets; the
 * per-element decompositions (row within the tile, tap, channel, pixel) use
 * 32-bit division by run-time constants (gk_fastdiv: multiply-high and
 * shift), valid because the plan keeps those quantities below 2^31 (it caps
 * the chunk).  Offsets into x and col are int64 throughout: column matrices
 * above 2^31 elements are normal at large batch. */
#include <cuda_runtime.h>
#include <stdint.h>

#include <initializer_list>

#include "im2col.h"
#include "common.cuh"
#include "im2col.cuh"

namespace {

constexpr int kMaxBlock = 256;
constexpr int kMaxRows = 64; /* rows per tile (shared-memory tables) */
constexpr int kUnroll = 4;   /* NHWC items per thread per step */
constexpr int64_t kFilterRowSmem = 48 * 1024; /* filter rows staged in shared memory */

struct NhwcParams {
  int64_t rows;                 /* M = images * OH * OW */
  int64_t h, w, cv;             /* input height, width, channels in vectors */
  int64_t img;                  /* one image of x, in vectors */
  int64_t stride_h, stride_w, pad_h, pad_w, dil_h, dil_w;
  int64_t groups, group_col;    /* G, vectors of col per group (rows * kpv) */
  uint32_t cgv, lv, kpv, s;     /* Cg, L, kp in vectors; filter width */
  uint32_t ohw, ow, rpb;        /* rows per tile */
  uint32_t kpo;                 /* im2col_nhwc_gather: 16-byte vectors per row */
  gk_fastdiv d_kpv, d_cgv, d_s, d_ohw, d_ow, d_kpo;
};

/* The walk both NHWC kernels share: group g and tiles of rows (grid-
 * stride), each tile's rows decomposed once into shared memory (image
 * offset in x's units at group g's first channel, first input row and
 * column), then body(g, m0, nrows) writes the tile. */
template <typename Body>
__device__ __forceinline__ void nhwc_tiles(const NhwcParams &p, int64_t *s_x, int64_t *s_ih,
                                           int64_t *s_iw, Body body) {
  const int64_t tiles = (p.rows + p.rpb - 1) / p.rpb;
  for (int64_t g = blockIdx.y; g < p.groups; g += gridDim.y) {
    for (int64_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
      const int64_t m0 = tile * p.rpb;
      const int64_t left = p.rows - m0;
      const uint32_t nrows = left < (int64_t)p.rpb ? (uint32_t)left : p.rpb;
      __syncthreads(); /* the previous tile's readers are done */
      for (uint32_t i = threadIdx.x; i < nrows; i += blockDim.x) {
        const uint32_t m = (uint32_t)(m0 + i); /* rows < 2^31 */
        const auto [n, pix] = gk::divmod(p.d_ohw, p.ohw, m);
        const auto [oh, ow] = gk::divmod(p.d_ow, p.ow, pix);
        s_x[i] = (int64_t)n * p.img + g * p.cgv;
        s_ih[i] = (int64_t)oh * p.stride_h - p.pad_h;
        s_iw[i] = (int64_t)ow * p.stride_w - p.pad_w;
      }
      __syncthreads();
      body(g, m0, nrows);
    }
  }
}

template <int B>
__global__ void __launch_bounds__(kMaxBlock)
    im2col_nhwc(const void *__restrict__ xp, void *__restrict__ colp, NhwcParams p) {
  typedef typename gk::raw<B>::t V;
  const V *__restrict__ x = static_cast<const V *>(xp);
  V *__restrict__ col = static_cast<V *>(colp);
  __shared__ int64_t s_x[kMaxRows], s_ih[kMaxRows], s_iw[kMaxRows];
  nhwc_tiles(p, s_x, s_ih, s_iw, [&](int64_t g, int64_t m0, uint32_t nrows) {
    V *__restrict__ out = col + g * p.group_col + m0 * p.kpv;
    const uint32_t items = nrows * p.kpv; /* < 64 * 2^25 */
    const uint32_t bd = blockDim.x;
    /* kUnroll items per thread per step: their loads are independent and
     * issued back to back, so each thread keeps kUnroll reads in flight
     * (one at a time fell well short of the copy bandwidth; measured:
     * docs/conv.md) */
    for (uint32_t base = threadIdx.x; base < items; base += kUnroll * bd) {
      V v[kUnroll];
#pragma unroll
      for (int u = 0; u < kUnroll; u++) {
        const uint32_t it = base + u * bd;
        v[u] = V();
        if (it < items) {
          const auto [lr, q] = gk::divmod(p.d_kpv, p.kpv, it);
          if (q < p.lv) {
            const auto [rs, cv] = gk::divmod(p.d_cgv, p.cgv, q);
            const auto [r, s] = gk::divmod(p.d_s, p.s, rs);
            const int64_t ih = s_ih[lr] + (int64_t)r * p.dil_h;
            const int64_t iw = s_iw[lr] + (int64_t)s * p.dil_w;
            if (ih >= 0 && ih < p.h && iw >= 0 && iw < p.w)
              v[u] = x[s_x[lr] + (ih * p.w + iw) * p.cv + cv];
          }
        }
      }
#pragma unroll
      for (int u = 0; u < kUnroll; u++) {
        const uint32_t it = base + u * bd;
        if (it < items) out[it] = v[u];
      }
    }
  });
}

/* NHWC when a channel run allows no access wider than one element (C or
 * C/groups odd for f16, e.g. an RGB stem: C = 3): each thread assembles one
 * 16-byte vector of a column-matrix row from 16 / ES scalar loads -- all
 * issued before the store -- and stores it whole, walking (r, s, c) by
 * increments from one division.  im2col_nhwc<2> stored 2 bytes at a time
 * and took most of ResNet-18's stem layer (measured: docs/performance.md).
 * Units of p
 * are elements here (cv = C, cgv = Cg, lv = L, kpv = kp); kp is a multiple
 * of 16 bytes, so the rows are whole vectors. */
template <int ES>
__global__ void __launch_bounds__(kMaxBlock)
    im2col_nhwc_gather(const void *__restrict__ xp, void *__restrict__ colp, NhwcParams p) {
  typedef typename gk::raw<ES>::t T;
  constexpr int VE = 16 / ES;
  const T *__restrict__ x = static_cast<const T *>(xp);
  uint4 *__restrict__ col = static_cast<uint4 *>(colp);
  __shared__ int64_t s_x[kMaxRows], s_ih[kMaxRows], s_iw[kMaxRows];
  nhwc_tiles(p, s_x, s_ih, s_iw, [&](int64_t g, int64_t m0, uint32_t nrows) {
    uint4 *__restrict__ out = col + (g * p.group_col + m0 * p.kpv) / VE;
    const uint32_t items = nrows * p.kpo; /* < 64 * 2^25 */
    for (uint32_t it = threadIdx.x; it < items; it += blockDim.x) {
      const auto [lr, jv] = gk::divmod(p.d_kpo, p.kpo, it);
      const uint32_t j0 = jv * VE;
      auto [rs, c] = gk::divmod(p.d_cgv, p.cgv, j0);
      auto [r, s] = gk::divmod(p.d_s, p.s, rs);
      const int64_t xo = s_x[lr], ih0 = s_ih[lr], iw0 = s_iw[lr];
      union {
        T e[VE];
        uint4 v;
      } u;
#pragma unroll
      for (int e = 0; e < VE; e++) {
        T v = T(0);
        if (j0 + e < p.lv) {
          const int64_t ih = ih0 + (int64_t)r * p.dil_h, iw = iw0 + (int64_t)s * p.dil_w;
          if (ih >= 0 && ih < p.h && iw >= 0 && iw < p.w) v = x[xo + (ih * p.w + iw) * p.cv + c];
        }
        u.e[e] = v;
        if (++c == p.cgv) { /* next tap: (r, s) in row-major order */
          c = 0;
          if (++s == p.s) {
            s = 0;
            r++;
          }
        }
      }
      out[it] = u.v;
    }
  });
}

struct NchwParams {
  int64_t rows;                 /* images * G * kp */
  int64_t h, w, hw, c, cg;
  int64_t stride_h, stride_w, pad_h, pad_w, dil_h, dil_w;
  uint32_t gkp, kp, l, rs, s;   /* G*kp, kp, L = Cg*R*S, R*S, S */
  uint32_t ohw, ow, ohwv, rpb;  /* OH*OW, OW, vectors per row, rows per tile */
  gk_fastdiv d_gkp, d_kp, d_rs, d_s, d_ohwv, d_ow;
};

template <int ES>
__global__ void __launch_bounds__(kMaxBlock)
    im2col_nchw(const void *__restrict__ xp, void *__restrict__ colp, NchwParams p) {
  typedef typename gk::raw<ES>::t T;
  constexpr int VE = 16 / ES;
  const T *__restrict__ x = static_cast<const T *>(xp);
  uint4 *__restrict__ col = static_cast<uint4 *>(colp);
  __shared__ int64_t s_x[kMaxRows], s_dh[kMaxRows], s_dw[kMaxRows];
  const int64_t tiles = (p.rows + p.rpb - 1) / p.rpb;
  for (int64_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    const int64_t row0 = tile * p.rpb;
    const int64_t left = p.rows - row0;
    const uint32_t nrows = left < (int64_t)p.rpb ? (uint32_t)left : p.rpb;
    __syncthreads();
    for (uint32_t i = threadIdx.x; i < nrows; i += blockDim.x) {
      const uint32_t row = (uint32_t)(row0 + i); /* rows < 2^31 */
      const auto [img, rem] = gk::divmod(p.d_gkp, p.gkp, row);
      const auto [g, j] = gk::divmod(p.d_kp, p.kp, rem);
      if (j < p.l) {
        const auto [cl, rs] = gk::divmod(p.d_rs, p.rs, j);
        const auto [r, s] = gk::divmod(p.d_s, p.s, rs);
        s_x[i] = ((int64_t)img * p.c + (int64_t)g * p.cg + cl) * p.hw;
        s_dh[i] = (int64_t)r * p.dil_h - p.pad_h;
        s_dw[i] = (int64_t)s * p.dil_w - p.pad_w;
      } else {
        s_x[i] = -1; /* k padding: a zero row */
        s_dh[i] = 0;
        s_dw[i] = 0;
      }
    }
    __syncthreads();
    uint4 *__restrict__ out = col + row0 * p.ohwv;
    const uint32_t items = nrows * p.ohwv;
    for (uint32_t it = threadIdx.x; it < items; it += blockDim.x) {
      const auto [lr, pv] = gk::divmod(p.d_ohwv, p.ohwv, it);
      const int64_t xo = s_x[lr];
      union {
        T e[VE];
        uint4 v;
      } u;
      u.v = make_uint4(0, 0, 0, 0);
      if (xo >= 0) {
        const int64_t dh = s_dh[lr], dw = s_dw[lr];
        const uint32_t p0 = pv * VE;
#pragma unroll
        for (int k = 0; k < VE; k++) {
          const uint32_t pix = p0 + k;
          if (pix < p.ohw) {
            const auto [oh, ow] = gk::divmod(p.d_ow, p.ow, pix);
            const int64_t ih = (int64_t)oh * p.stride_h + dh;
            const int64_t iw = (int64_t)ow * p.stride_w + dw;
            if (ih >= 0 && ih < p.h && iw >= 0 && iw < p.w) u.e[k] = x[xo + ih * p.w + iw];
          }
        }
      }
      out[it] = u.v;
    }
  }
}

/* dst [k][kp] = the KCRS filter src [k][cg][rs] reordered to KRSC
 * (column t * cg + c from tap t of channel c), columns [cg * rs, kp) zero;
 * with rs = 1 and cg = L, the rows copied as they are and zero-padded.
 * Rows along grid y, columns along x; the column split uses 32-bit
 * division by a run-time constant (kp < 2^25). */
template <typename T>
__global__ void filter_krsc(const void *srcp, void *dstp, int64_t k, uint32_t rs, uint32_t kp,
                            uint32_t l, gk_fastdiv d_cg) {
  const T *__restrict__ src = static_cast<const T *>(srcp);
  T *__restrict__ dst = static_cast<T *>(dstp);
  for (int64_t kk = blockIdx.y; kk < k; kk += gridDim.y)
    for (uint32_t j = blockIdx.x * blockDim.x + threadIdx.x; j < kp; j += gridDim.x * blockDim.x) {
      T v = T(0);
      if (j < l) {
        const auto [t, c] = gk::divmod(d_cg, d_cg.d, j);
        v = src[(kk * d_cg.d + c) * rs + t];
      }
      dst[kk * kp + j] = v;
    }
}

/* The same reorder for rows that fit in shared memory (the usual case:
 * 4608 elements for a 512-channel 3x3 filter): a block stages one filter
 * row with coalesced loads, 16 bytes at a time where the row allows, all
 * of a thread's loads issued before any is used; then writes the reordered
 * row 16 bytes at a time (kp is a multiple of 16 bytes).  filter_krsc's
 * direct gather reads each row rs times with a stride of rs elements
 * between neighbouring threads, far below the copy bandwidth (measured:
 * docs/conv.md). */
template <typename T>
__global__ void __launch_bounds__(kMaxBlock)
    filter_krsc_rows(const void *srcp, void *dstp, int64_t k, uint32_t rs, uint32_t kp,
                     uint32_t l, gk_fastdiv d_cg) {
  constexpr int VE = 16 / sizeof(T);
  constexpr int U = 4; /* loads in flight per thread */
  const T *__restrict__ src = static_cast<const T *>(srcp);
  uint4 *__restrict__ dst = static_cast<uint4 *>(dstp);
  extern __shared__ uint4 smem_row[];
  T *row = reinterpret_cast<T *>(smem_row);
  const uint32_t bd = blockDim.x, kpv = kp / VE;
  const bool vec = l % VE == 0 && (uintptr_t)src % 16 == 0;
  for (int64_t kk = blockIdx.x; kk < k; kk += gridDim.x) {
    __syncthreads(); /* the previous row's readers are done */
    if (vec) {
      const uint4 *__restrict__ s4 = reinterpret_cast<const uint4 *>(src + kk * l);
      const uint32_t nv = l / VE;
      for (uint32_t base = threadIdx.x; base < nv; base += U * bd) {
        uint4 v[U];
#pragma unroll
        for (int u = 0; u < U; u++)
          if (base + u * bd < nv) v[u] = s4[base + u * bd];
#pragma unroll
        for (int u = 0; u < U; u++)
          if (base + u * bd < nv) smem_row[base + u * bd] = v[u];
      }
    } else {
      for (uint32_t base = threadIdx.x; base < l; base += U * bd) {
        T v[U];
#pragma unroll
        for (int u = 0; u < U; u++)
          if (base + u * bd < l) v[u] = src[kk * l + base + u * bd];
#pragma unroll
        for (int u = 0; u < U; u++)
          if (base + u * bd < l) row[base + u * bd] = v[u];
      }
    }
    __syncthreads();
    for (uint32_t jv = threadIdx.x; jv < kpv; jv += bd) {
      union {
        T e[VE];
        uint4 q;
      } o;
#pragma unroll
      for (int e = 0; e < VE; e++) {
        const uint32_t j = jv * VE + e;
        T v = T(0);
        if (j < l) {
          const auto [t, c] = gk::divmod(d_cg, d_cg.d, j);
          v = row[c * rs + t];
        }
        o.e[e] = v;
      }
      dst[kk * kpv + jv] = o.q;
    }
  }
}

/* dst [batch][cols][rows] = src [batch][rows][cols]: a 2-D transpose per
 * image through 32 x 32 tiles in shared memory (the padding column keeps
 * the column reads free of bank conflicts), so that both the loads and the
 * stores run along contiguous memory.  (64 x 64 tiles of single
 * elements, 16 per thread, were slower when measured for commit 5578de8;
 * transpose_pairs below moves pairs instead, where the shapes allow.) */
constexpr int kTile = 32, kTileRows = 8;
template <typename T>
__global__ void __launch_bounds__(kTile *kTileRows)
    transpose_batched(const void *srcp, void *dstp, int64_t rows, int64_t cols, int64_t batch) {
  const T *__restrict__ src = static_cast<const T *>(srcp);
  T *__restrict__ dst = static_cast<T *>(dstp);
  __shared__ T tile[kTile][kTile + 1];
  const int64_t tr = (rows + kTile - 1) / kTile, tc = (cols + kTile - 1) / kTile;
  for (int64_t b = blockIdx.z; b < batch; b += gridDim.z)
    for (int64_t ty = blockIdx.y; ty < tr; ty += gridDim.y)
      for (int64_t tx = blockIdx.x; tx < tc; tx += gridDim.x) {
        const T *__restrict__ s = src + b * rows * cols;
        T *__restrict__ d = dst + b * rows * cols;
        const int64_t r0 = ty * kTile, c0 = tx * kTile;
        __syncthreads(); /* the previous tile's readers are done */
        for (int i = threadIdx.y; i < kTile; i += kTileRows) {
          const int64_t r = r0 + i, c = c0 + threadIdx.x;
          if (r < rows && c < cols) tile[i][threadIdx.x] = s[r * cols + c];
        }
        __syncthreads();
        for (int i = threadIdx.y; i < kTile; i += kTileRows) {
          const int64_t c = c0 + i, r = r0 + threadIdx.x;
          if (c < cols && r < rows) d[c * rows + r] = tile[threadIdx.x][i];
        }
      }
}

/* The same transpose when rows and cols are even and both pointers are
 * aligned to two elements: 64 x 64 tiles, each thread moving element pairs
 * (P = two T) -- a warp loads and stores 64 elements (128 bytes for f16)
 * per row instead of 32, and a thread keeps 8 independent loads in
 * flight; the scalar kernel above reached only a fraction of the copy
 * bandwidth on f16 activations (measured: docs/conv.md).  The tile's rows
 * are 65 elements, so for f16 the column reads of the store phase (rows
 * 2i and 2i+1 of one column) fall in distinct banks; 4-byte elements
 * conflict two ways. */
constexpr int kPTile = 64;
template <typename T, typename P>
__global__ void __launch_bounds__(kTile *kTileRows)
    transpose_pairs(const void *srcp, void *dstp, int64_t rows, int64_t cols, int64_t batch) {
  const P *__restrict__ src = static_cast<const P *>(srcp);
  P *__restrict__ dst = static_cast<P *>(dstp);
  __shared__ T tile[kPTile][kPTile + 1];
  const int64_t tr = (rows + kPTile - 1) / kPTile, tc = (cols + kPTile - 1) / kPTile;
  const int64_t cols2 = cols / 2, rows2 = rows / 2; /* pairs per row, each side */
  const int tx = threadIdx.x, ty = threadIdx.y;
  for (int64_t b = blockIdx.z; b < batch; b += gridDim.z)
    for (int64_t by = blockIdx.y; by < tr; by += gridDim.y)
      for (int64_t bx = blockIdx.x; bx < tc; bx += gridDim.x) {
        const P *__restrict__ s = src + b * rows * cols2;
        P *__restrict__ d = dst + b * cols * rows2;
        const int64_t r0 = by * kPTile, c0 = bx * kPTile;
        const bool cin = c0 + 2 * tx < cols; /* cols even: the pair is whole */
        P v[kPTile / kTileRows];
        __syncthreads(); /* the previous tile's readers are done */
#pragma unroll
        for (int i = 0; i < kPTile / kTileRows; i++) {
          const int64_t r = r0 + ty + i * kTileRows;
          if (r < rows && cin) v[i] = s[r * cols2 + c0 / 2 + tx];
        }
#pragma unroll
        for (int i = 0; i < kPTile / kTileRows; i++) {
          const int row = ty + i * kTileRows;
          if (r0 + row < rows && cin) {
            const T *e = reinterpret_cast<const T *>(&v[i]);
            tile[row][2 * tx] = e[0];
            tile[row][2 * tx + 1] = e[1];
          }
        }
        __syncthreads();
        const bool rin = r0 + 2 * tx < rows;
#pragma unroll
        for (int i = 0; i < kPTile / kTileRows; i++) {
          const int col = ty + i * kTileRows;
          const int64_t c = c0 + col;
          if (c < cols && rin) {
            P o;
            T *e = reinterpret_cast<T *>(&o);
            e[0] = tile[2 * tx][col];
            e[1] = tile[2 * tx + 1][col];
            d[c * rows2 + r0 / 2 + tx] = o;
          }
        }
      }
}

const void *nhwc_kernel(int vec_bytes, int es) {
  if (vec_bytes <= es) /* one element per access: gather into 16-byte stores */
    return es == 2 ? (const void *)im2col_nhwc_gather<2> : (const void *)im2col_nhwc_gather<4>;
  switch (vec_bytes) {
    case 4: return (const void *)im2col_nhwc<4>;
    case 8: return (const void *)im2col_nhwc<8>;
    case 16: return (const void *)im2col_nhwc<16>;
  }
  return nullptr;
}

const void *nchw_kernel(int es) {
  return es == 2 ? (const void *)im2col_nchw<2> : (const void *)im2col_nchw<4>;
}

/* What both layouts' parameters hold: the input's height and width, the
 * window's strides, padding and dilation, the filter's width, the output's
 * width and pixels per image. */
template <typename P>
void set_window(P &p, const gk_im2col_args *a) {
  p.h = a->h;
  p.w = a->w;
  p.stride_h = a->stride_h;
  p.stride_w = a->stride_w;
  p.pad_h = a->pad_h;
  p.pad_w = a->pad_w;
  p.dil_h = a->dil_h;
  p.dil_w = a->dil_w;
  p.s = (uint32_t)a->s;
  p.ow = (uint32_t)a->ow;
  p.ohw = (uint32_t)(a->oh * a->ow);
}

/* gk_fastdiv_init of each (divider, divisor) pair. */
struct DivInit {
  gk_fastdiv *f;
  uint32_t d;
};
void init_divs(std::initializer_list<DivInit> divs) {
  for (const DivInit &v : divs) gk_fastdiv_init(v.f, v.d);
}

/* Rows per tile: about `widths` block-widths of items per tile, at most
 * kMaxRows. */
uint32_t rows_per_tile(int block, int64_t per_row, int widths) {
  int64_t r = (widths * (int64_t)block + per_row - 1) / per_row;
  if (r < 1) r = 1;
  if (r > kMaxRows) r = kMaxRows;
  return (uint32_t)r;
}

} // namespace

extern "C" void gk_fastdiv_init(gk_fastdiv *f, uint32_t d) {
  uint32_t shift = 0;
  while (shift < 32 && ((uint64_t)1 << shift) < d) shift++;
  const uint64_t one = 1;
  const uint64_t magic = ((one << 32) * ((one << shift) - d)) / d + 1;
  f->d = d;
  f->mul = (uint32_t)magic; /* fits: d < 2^31 */
  f->shift = shift;
}

extern "C" gko_status_t gk_im2col_occupancy(int layout, int es, int vec_bytes, int *block) {
  const void *fn = layout == GKO_CONV_LAYOUT_NHWC ? nhwc_kernel(vec_bytes, es) : nchw_kernel(es);
  if (!fn) return gk_fail(GKO_STATUS_INTERNAL, "im2col: no kernel for %d-byte vectors", vec_bytes);
  int grid = 0, b = 0;
  /* a host query: relaxed mode keeps a capture in progress (plans may be
   * created while another thread captures) valid */
  enum cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  cudaThreadExchangeStreamCaptureMode(&mode);
  cudaError_t e = cudaOccupancyMaxPotentialBlockSize(&grid, &b, fn, 0, kMaxBlock);
  cudaThreadExchangeStreamCaptureMode(&mode);
  if (e != cudaSuccess) return gk_cuda_fail(e, "cudaOccupancyMaxPotentialBlockSize (im2col)");
  *block = b > 0 ? b : kMaxBlock;
  return GKO_STATUS_SUCCESS;
}

extern "C" gko_status_t gk_im2col_launch(const gk_im2col_args *a) {
  const int block = a->block > 0 ? a->block : kMaxBlock;
  cudaError_t e;
  if (a->layout == GKO_CONV_LAYOUT_NHWC) {
    const int vb = a->vec_bytes, ve = vb / a->es;
    NhwcParams p;
    set_window(p, a);
    p.rows = a->images * a->oh * a->ow;
    p.cv = a->c / ve;
    p.img = a->h * a->w * p.cv;
    p.groups = a->groups;
    p.cgv = (uint32_t)(a->cg / ve);
    p.lv = (uint32_t)(a->l / ve);
    p.kpv = (uint32_t)(a->kp / ve);
    p.group_col = p.rows * (int64_t)p.kpv;
    const bool gather = vb <= a->es; /* as nhwc_kernel */
    p.kpo = (uint32_t)(a->kp * a->es / 16);
    p.rpb = rows_per_tile(block, gather ? p.kpo : p.kpv, 2 * kUnroll);
    init_divs({{&p.d_kpv, p.kpv}, {&p.d_kpo, p.kpo}, {&p.d_cgv, p.cgv}, {&p.d_s, p.s},
               {&p.d_ohw, p.ohw}, {&p.d_ow, p.ow}});
    const int64_t gx = gk::grid_x((p.rows + p.rpb - 1) / p.rpb), gy = gk::grid_y(a->groups);
    void *args[] = {(void *)&a->x, (void *)&a->col, (void *)&p};
    e = cudaLaunchKernel(nhwc_kernel(vb, a->es), dim3((unsigned)gx, (unsigned)gy), dim3(block),
                         args, 0, (cudaStream_t)a->stream);
  } else {
    const int ve = 16 / a->es;
    NchwParams p;
    set_window(p, a);
    p.rows = a->images * a->groups * a->kp;
    p.hw = a->h * a->w;
    p.c = a->c;
    p.cg = a->cg;
    p.gkp = (uint32_t)(a->groups * a->kp);
    p.kp = (uint32_t)a->kp;
    p.l = (uint32_t)a->l;
    p.rs = (uint32_t)(a->r * a->s);
    p.ohwv = (uint32_t)(a->ohw_ld / ve);
    p.rpb = rows_per_tile(block, p.ohwv, 2);
    init_divs({{&p.d_gkp, p.gkp}, {&p.d_kp, p.kp}, {&p.d_rs, p.rs}, {&p.d_s, p.s},
               {&p.d_ohwv, p.ohwv}, {&p.d_ow, p.ow}});
    const int64_t gx = gk::grid_x((p.rows + p.rpb - 1) / p.rpb);
    void *args[] = {(void *)&a->x, (void *)&a->col, (void *)&p};
    e = cudaLaunchKernel(nchw_kernel(a->es), dim3((unsigned)gx), dim3(block), args, 0,
                         (cudaStream_t)a->stream);
  }
  if (e != cudaSuccess) return gk_cuda_fail(e, "im2col kernel launch");
  return GKO_STATUS_SUCCESS;
}

extern "C" gko_status_t gk_conv_filter_krsc_launch(int es, int64_t k, int64_t cg, int64_t rs,
                                                   int64_t kp, const void *src, void *dst,
                                                   void *stream) {
  /* the plan keeps kp < 2^25 (so cg, rs and cg * rs too) */
  gk_fastdiv d_cg;
  gk_fastdiv_init(&d_cg, (uint32_t)cg);
  const uint32_t rs32 = (uint32_t)rs, kp32 = (uint32_t)kp, l32 = (uint32_t)(cg * rs);
  void *args[] = {(void *)&src, (void *)&dst, (void *)&k, (void *)&rs32, (void *)&kp32,
                  (void *)&l32, (void *)&d_cg};
  cudaError_t e;
  const int64_t row_bytes = (int64_t)l32 * es;
  /* the workspace copy: 16-byte aligned, rows of kp elements, a multiple
   * of 16 bytes (both checked, not assumed) */
  if (rs > 1 && row_bytes <= kFilterRowSmem && (kp * es) % 16 == 0 && (uintptr_t)dst % 16 == 0) {
    /* one row per block at a time, no more blocks than rows */
    const int64_t gx = gk::grid_x(k);
    const void *fn = es == 2 ? (const void *)filter_krsc_rows<unsigned short>
                             : (const void *)filter_krsc_rows<unsigned int>;
    e = cudaLaunchKernel(fn, dim3((unsigned)gx), dim3(kMaxBlock), args, (size_t)row_bytes,
                         (cudaStream_t)stream);
  } else {
    /* grid-stride loops cover the rows past grid y */
    const int64_t gx = (kp + kMaxBlock - 1) / kMaxBlock, gy = gk::grid_y(k);
    const void *fn = es == 2 ? (const void *)filter_krsc<unsigned short>
                             : (const void *)filter_krsc<unsigned int>;
    e = cudaLaunchKernel(fn, dim3((unsigned)gx, (unsigned)gy), dim3(kMaxBlock), args, 0,
                         (cudaStream_t)stream);
  }
  if (e != cudaSuccess) return gk_cuda_fail(e, "conv filter reorder kernel launch");
  return GKO_STATUS_SUCCESS;
}

extern "C" gko_status_t gk_transpose_batched_launch(int es, int64_t rows, int64_t cols,
                                                    int64_t batch, const void *src, void *dst,
                                                    void *stream) {
  if (rows <= 0 || cols <= 0 || batch <= 0) return GKO_STATUS_SUCCESS;
  void *args[] = {(void *)&src, (void *)&dst, (void *)&rows, (void *)&cols, (void *)&batch};
  const uintptr_t pair = 2 * (uintptr_t)es;
  const bool pairs = rows % 2 == 0 && cols % 2 == 0 && (uintptr_t)src % pair == 0 &&
                     (uintptr_t)dst % pair == 0;
  const int tile = pairs ? kPTile : kTile;
  const int64_t gx = gk::grid_x((cols + tile - 1) / tile);
  const int64_t gy = gk::grid_y((rows + tile - 1) / tile), gz = gk::grid_y(batch);
  const void *fn;
  if (pairs)
    fn = es == 2 ? (const void *)transpose_pairs<unsigned short, unsigned int>
                 : (const void *)transpose_pairs<unsigned int, uint2>;
  else
    fn = es == 2 ? (const void *)transpose_batched<unsigned short>
                 : (const void *)transpose_batched<unsigned int>;
  cudaError_t e = cudaLaunchKernel(fn, dim3((unsigned)gx, (unsigned)gy, (unsigned)gz),
                                   dim3(kTile, kTileRows), args, 0, (cudaStream_t)stream);
  if (e != cudaSuccess) return gk_cuda_fail(e, "conv transpose kernel launch");
  return GKO_STATUS_SUCCESS;
}
