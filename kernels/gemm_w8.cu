/* gemm_w8.cu -- weight-only FP8 GEMM for decode (kernels/gemm_w8.h): few
 * rows of f16/bf16 activations X against FP8 weights W, the weights
 * streamed once from HBM and widened to X's type in registers, products
 * on mma.sync m16n8k16 with f32 accumulation.
 *
 * The fragment map is that of the DECODE kernel (gemm_wmma_decode.cu): a
 * dot product does not care in which order k is summed, so each lane's k
 * slots are consecutive in memory.  Here a warp step covers 64 k: lane
 * (g = lane / 4, t = lane % 4) loads 16 FP8 bytes of W's rows g and g + 8
 * at k + 16 t (one 16-byte load each) and the same 16 elements of X's row
 * g (and g + 8 when ns > 8); MMA s in 0..3 takes elements 4s, 4s + 1 as
 * its slots {2t, 2t + 1} and 4s + 2, 4s + 3 as {2t + 8, 2t + 9}, in W (the
 * A operand, 16 rows) and X^T (the B operand, 8 columns) alike.
 * A block is 8 warps: per tiles of 16 rows of W, kw warps per tile each
 * taking a contiguous k range (kw * per == 8), summed in warp order in shared
 * memory; k split across blocks only when the tiles alone leave SMs idle
 * (f32 partials in the workspace, summed in split order by w8_sum: the
 * result does not depend on timing).
 * With programmatic stream serialization (W promised static) the first W
 * loads are issued before the kernel ahead has finished; X, the factors,
 * C and every write wait for it (griddepcontrol.wait).
 * On sm_90, for ns <= 4, the bulk-copy kernel below (w8_decode_bulk: one
 * warp copying, eight computing) takes the place of these where the
 * vectors and k allow. */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <type_traits>

#include "common.cuh"
#include "gemm_w8.h"
#include "gemm_wmma.cuh"

namespace {

constexpr int kW8Step = 64;  /* k per warp step */
constexpr int kW8Unroll = 4; /* steps whose W loads are in flight at once */
constexpr int kW8Warps = kThreads / 32;

struct W8Params {
  const uint8_t *w;
  const uint16_t *x;
  const void *c;
  void *d;
  const void *bias;
  const float *scale;
  float *partials; /* splits > 1: [batch][splits][ns][nb] */
  int64_t nb, ns, k, batch;
  int64_t swj, sxi, sdj, sdi, scj, sci;
  int64_t bw, bx, bc, bd, bbias;
  int64_t tiles, kchunk;
  int splits, kw, per;
  float alpha, beta;
  int act, cd, has_bias, bias_on_j, scale_per_j;
  int vec_w, vec_x;
  int64_t stage_bytes; /* w8_decode_bulk: bytes of one ring stage */
};

/* 16 consecutive bytes of W at p, p[0..valid) existing (the rest read as
 * 0); vec: p is 16-byte aligned.  Streamed past L1 (read once). */
__device__ __forceinline__ uint4 load16b(const uint8_t *p, int valid, bool vec) {
  if (valid >= 16 && vec)
    return __ldcs(reinterpret_cast<const uint4 *>(p));
  uint32_t w[4] = {0u, 0u, 0u, 0u};
#pragma unroll
  for (int i = 0; i < 16; i++)
    if (i < valid)
      w[i / 4] |= (uint32_t)__ldg(p + i) << (8 * (i % 4));
  return make_uint4(w[0], w[1], w[2], w[3]);
}

/* Two FP8 values (the low byte first) as a pair of T, exactly (every E4M3
 * and E5M2 value, NaN and E5M2's infinities included, is an f16 and a bf16
 * value). */
template <typename T, int F8> __device__ __forceinline__ uint32_t widen2(uint32_t two) {
  const __half2_raw h =
      __nv_cvt_fp8x2_to_halfraw2((__nv_fp8x2_storage_t)two, F8 ? __NV_E5M2 : __NV_E4M3);
  const uint32_t u = (uint32_t)h.x | ((uint32_t)h.y << 16);
  if constexpr (std::is_same<T, __half>::value) {
    return u;
  } else {
    __half2 hh;
    memcpy(&hh, &u, 4);
    const float2 f = __half22float2(hh);
    const __nv_bfloat162 b = __floats2bfloat162_rn(f.x, f.y);
    uint32_t r;
    memcpy(&r, &b, 4);
    return r;
  }
}

/* 16 FP8 bytes as 8 pairs of T: out[q] holds elements 2q, 2q + 1. */
template <typename T, int F8>
__device__ __forceinline__ void widen16(const uint4 &v, uint32_t (&out)[8]) {
  const uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (int q = 0; q < 4; q++) {
    out[2 * q] = widen2<T, F8>(w[q] & 0xffffu);
    out[2 * q + 1] = widen2<T, F8>(w[q] >> 16);
  }
}

/* Output (j, i) of batch bt from its sum s: the weights' factor, alpha,
 * beta * C, bias and the activation. */
__device__ __forceinline__ void w8_out(const W8Params &P, int64_t bt, int64_t i, int64_t j,
                                       float s) {
  const int cdb = P.cd == GKO_DTYPE_F32 ? 4 : 2;
  const float f = P.scale ? __ldg(P.scale + (P.scale_per_j ? j : 0)) : 1.0f;
  const char *c = P.c ? static_cast<const char *>(P.c) + bt * P.bc * cdb : nullptr;
  char *d = static_cast<char *>(P.d) + bt * P.bd * cdb;
  const Epi e{c, d, nullptr, P.alpha, c ? P.beta : 0.0f, P.act, P.cd};
  const float cv = c ? ld_cd(c, j * P.scj + i * P.sci, P.cd) : 0.0f;
  float bv = 0.0f;
  if (P.has_bias)
    bv = ld_cd(static_cast<const char *>(P.bias) + bt * P.bbias * cdb, P.bias_on_j ? j : i, P.cd);
  st_cd(d, j * P.sdj + i * P.sdi, finish(s * f, cv, bv, e), P.cd);
}

/* A unit's tile geometry for one lane: the unit (group grp of per tiles,
 * k split sp), the warp's tile rows and k range, and which of W's rows g,
 * g + 8 and X's rows g, g + 8 exist. */
struct W8Unit {
  int64_t grp, j0, k0, k1, first, n; /* the warp's k range [first, k1) in n steps */
  int sp;
  bool va, vb, xa, xb;
};
template <bool TWO>
__device__ __forceinline__ W8Unit w8_unit(const W8Params &P, int64_t u, int wt, int wk, int g) {
  W8Unit U;
  U.grp = u / P.splits;
  U.sp = (int)(u - U.grp * P.splits);
  U.j0 = (U.grp * P.per + wt) * 16;
  U.k0 = U.sp * P.kchunk;
  const int64_t end = U.k0 + P.kchunk < P.k ? U.k0 + P.kchunk : P.k;
  const bool busy = wt < P.per && U.j0 < P.nb;
  /* the kw warps of a tile split the unit's k into contiguous ranges of
   * whole steps, so that each warp reads its rows front to back */
  const int64_t steps = (end - U.k0 + kW8Step - 1) / kW8Step;
  const int64_t per_warp = (steps + P.kw - 1) / P.kw;
  U.first = U.k0 + (int64_t)wk * per_warp * kW8Step;
  U.k1 = U.first + per_warp * kW8Step < end ? U.first + per_warp * kW8Step : end;
  U.n = busy && U.first < U.k1 ? (U.k1 - U.first + kW8Step - 1) / kW8Step : 0;
  U.va = busy && U.j0 + g < P.nb;
  U.vb = busy && U.j0 + g + 8 < P.nb;
  U.xa = g < P.ns;
  U.xb = TWO && g + 8 < P.ns;
  return U;
}

/* The lane's first W bytes (rows g, g + 8 of the tile) and X elements
 * (rows g, g + 8) at k + 16 t; rows that do not exist read row 0. */
__device__ __forceinline__ void w8_lane_ptrs(const W8Params &P, const W8Unit &U, const uint8_t *W,
                                             const uint16_t *X, int g, int t, const uint8_t *&wa,
                                             const uint8_t *&wb, const uint16_t *&pa,
                                             const uint16_t *&pb) {
  wa = W + (U.va ? U.j0 + g : 0) * P.swj + 16 * t;
  wb = W + (U.vb ? U.j0 + g + 8 : 0) * P.swj + 16 * t;
  pa = X + (U.xa ? g : 0) * P.sxi + 16 * t;
  pb = X + (U.xb ? g + 8 : 0) * P.sxi + 16 * t;
}

/* Elements of this lane's 16 at kk (from k + 16 t) that lie below k1. */
__device__ __forceinline__ int w8_valid(int64_t k1, int64_t kk, int t) {
  const int64_t left = k1 - kk - 16 * t;
  return left <= 0 ? 0 : left >= 16 ? 16 : (int)left;
}

/* One 64-wide k step: W's rows g (ra) and g + 8 (rb) widened, times X's
 * rows g (x0, x1: elements 0-7, 8-15) and, with TWO, g + 8 (y0, y1). */
template <typename T, int F8, bool TWO>
__device__ __forceinline__ void w8_mma(float (&acc0)[4], float (&acc1)[4], const uint4 &ra,
                                       const uint4 &rb, const uint4 &x0, const uint4 &x1,
                                       const uint4 &y0, const uint4 &y1) {
  uint32_t ca[8], cb[8];
  widen16<T, F8>(ra, ca);
  widen16<T, F8>(rb, cb);
  const uint32_t xw[8] = {x0.x, x0.y, x0.z, x0.w, x1.x, x1.y, x1.z, x1.w};
  const uint32_t yw[8] = {y0.x, y0.y, y0.z, y0.w, y1.x, y1.y, y1.z, y1.w};
#pragma unroll
  for (int q = 0; q < 4; q++) {
    mma16816<T>(acc0, ca[2 * q], cb[2 * q], ca[2 * q + 1], cb[2 * q + 1], xw[2 * q], xw[2 * q + 1]);
    if (TWO)
      mma16816<T>(acc1, ca[2 * q], cb[2 * q], ca[2 * q + 1], cb[2 * q + 1], yw[2 * q],
                  yw[2 * q + 1]);
  }
}

/* The end of a unit: each warp's accumulators (row r of W, column c of
 * X^T) into red[warp][c][r], the kw warps of a tile summed in warp order,
 * then the f32 partials (splits > 1) or the epilogue.  Between two
 * __syncthreads. */
template <bool TWO>
__device__ __forceinline__ void w8_store(const W8Params &P, float (*red)[16][17], const W8Unit &U,
                                         int64_t bt, int warp, int g, int t, const float (&acc0)[4],
                                         const float (&acc1)[4]) {
  red[warp][2 * t][g] = acc0[0];
  red[warp][2 * t + 1][g] = acc0[1];
  red[warp][2 * t][g + 8] = acc0[2];
  red[warp][2 * t + 1][g + 8] = acc0[3];
  if (TWO) {
    red[warp][8 + 2 * t][g] = acc1[0];
    red[warp][9 + 2 * t][g] = acc1[1];
    red[warp][8 + 2 * t][g + 8] = acc1[2];
    red[warp][9 + 2 * t][g + 8] = acc1[3];
  }
  __syncthreads();
  const int kw = P.kw;
  for (int idx = threadIdx.x; idx < P.per * 16 * (int)P.ns; idx += kThreads) {
    const int jl = idx % 16, rest = idx / 16;
    const int i = rest % (int)P.ns, tt = rest / (int)P.ns;
    const int64_t j = (U.grp * P.per + tt) * 16 + jl;
    if (j >= P.nb)
      continue;
    float s = 0.0f;
    for (int w = tt * kw; w < tt * kw + kw; w++)
      s += red[w][i][jl];
    if (P.splits > 1)
      P.partials[((bt * P.splits + U.sp) * P.ns + i) * P.nb + j] = s;
    else
      w8_out(P, bt, i, j, s);
  }
  __syncthreads();
}

/* Any alignment: W and X loaded into registers, kW8Unroll steps of W in
 * flight per warp. */
template <typename T, int F8, bool TWO>
__global__ void __launch_bounds__(kThreads) w8_decode(const W8Params P) {
  __shared__ float red[kW8Warps][16][17];
  gk::pdl_launch_dependents();
  bool waited = false;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const int wt = warp / P.kw, wk = warp % P.kw;
  const int64_t units = (P.tiles + P.per - 1) / P.per * P.splits;
  const int64_t step = kW8Step;
  const uint4 zero = make_uint4(0u, 0u, 0u, 0u);
  for (int64_t bt = blockIdx.y; bt < P.batch; bt += gridDim.y) {
    const uint8_t *W = P.w + bt * P.bw;
    const uint16_t *X = P.x + bt * P.bx;
    for (int64_t u = blockIdx.x; u < units; u += gridDim.x) {
      const W8Unit U = w8_unit<TWO>(P, u, wt, wk, g);
      const uint8_t *wa, *wb;
      const uint16_t *pa, *pb;
      w8_lane_ptrs(P, U, W, X, g, t, wa, wb, pa, pb);
      float acc0[4] = {0.0f, 0.0f, 0.0f, 0.0f}, acc1[4] = {0.0f, 0.0f, 0.0f, 0.0f};
      for (int64_t i = 0; i < U.n; i += kW8Unroll) {
        uint4 ra[kW8Unroll], rb[kW8Unroll];
#pragma unroll
        for (int s = 0; s < kW8Unroll; s++) {
          const int64_t kk = U.first + (i + s) * step;
          const int valid = w8_valid(U.k1, kk, t);
          ra[s] = U.va && valid ? load16b(wa + kk, valid, P.vec_w) : zero;
          rb[s] = U.vb && valid ? load16b(wb + kk, valid, P.vec_w) : zero;
        }
        if (!waited) {
          gk::pdl_wait();
          waited = true;
        }
        uint4 x0[kW8Unroll], x1[kW8Unroll], y0[kW8Unroll], y1[kW8Unroll];
#pragma unroll
        for (int s = 0; s < kW8Unroll; s++) {
          const int64_t kk = U.first + (i + s) * step;
          const int valid = w8_valid(U.k1, kk, t);
          x0[s] = U.xa ? load8(pa + kk, clamp8(valid), P.vec_x) : zero;
          x1[s] = U.xa ? load8(pa + kk + 8, clamp8(valid - 8), P.vec_x) : zero;
          y0[s] = U.xb ? load8(pb + kk, clamp8(valid), P.vec_x) : zero;
          y1[s] = U.xb ? load8(pb + kk + 8, clamp8(valid - 8), P.vec_x) : zero;
        }
#pragma unroll
        for (int s = 0; s < kW8Unroll; s++)
          if (i + s < U.n) /* warp-uniform */
            w8_mma<T, F8, TWO>(acc0, acc1, ra[s], rb[s], x0[s], x1[s], y0[s], y1[s]);
      }
      if (!waited) { /* no W read: still wait before any write */
        gk::pdl_wait();
        waited = true;
      }
      w8_store<TWO>(P, red, U, bt, warp, g, t, acc0, acc1);
    }
  }
}

/* The cp.async ring (W and X 16-byte aligned in every line and batch):
 * per warp W8Ring<TWO>::kStages slots, each lane's pieces of one step in each
 * (W rows g, g + 8; X row g's two halves; with TWO X row g + 8's), so
 * that a lane reads back only what it copied itself.  Rows past nb or ns
 * and the k tail are zero-filled by the copies; W bypasses L1 (read once),
 * X goes through it (every tile reads it).  Groups: the first
 * stages' W, then (after griddepcontrol.wait) their X as one group, then
 * one group per step. */
template <bool TWO> struct W8Ring {
  static constexpr int kPieces = TWO ? 6 : 4, kStages = TWO ? 4 : 6;
  static constexpr size_t kBytes = (size_t)kW8Warps * kStages * kPieces * 32 * 16;
};

template <typename T, int F8, bool TWO>
__global__ void __launch_bounds__(kThreads) w8_decode_async(const W8Params P) {
  constexpr int S = W8Ring<TWO>::kStages, NP = W8Ring<TWO>::kPieces;
  __shared__ float red[kW8Warps][16][17];
  extern __shared__ __align__(16) unsigned char w8_raw[];
  gk::pdl_launch_dependents();
  bool waited = false;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const int wt = warp / P.kw, wk = warp % P.kw;
  const int64_t units = (P.tiles + P.per - 1) / P.per * P.splits;
  const int64_t step = kW8Step;
  uint4 *ring = reinterpret_cast<uint4 *>(w8_raw) + (size_t)warp * S * NP * 32 + lane;
  for (int64_t bt = blockIdx.y; bt < P.batch; bt += gridDim.y) {
    const uint8_t *W = P.w + bt * P.bw;
    const uint16_t *X = P.x + bt * P.bx;
    for (int64_t u = blockIdx.x; u < units; u += gridDim.x) {
      const W8Unit U = w8_unit<TWO>(P, u, wt, wk, g);
      const uint8_t *wa, *wb;
      const uint16_t *pa, *pb;
      w8_lane_ptrs(P, U, W, X, g, t, wa, wb, pa, pb);
      /* step i's pieces into slot i % S (src size 0: zeros) */
      auto issue_w = [&](int64_t i) {
        uint4 *slot = ring + (i % S) * NP * 32;
        const int64_t kk = U.first + i * step;
        const int valid = w8_valid(U.k1, kk, t);
        gk::cp_async16(slot, U.va && valid ? wa + kk : P.w, U.va ? valid : 0);
        gk::cp_async16(slot + 32, U.vb && valid ? wb + kk : P.w, U.vb ? valid : 0);
      };
      auto issue_x = [&](int64_t i) {
        uint4 *slot = ring + (i % S) * NP * 32;
        const int64_t kk = U.first + i * step;
        const int valid = w8_valid(U.k1, kk, t), lo = 2 * clamp8(valid), hi = 2 * clamp8(valid - 8);
        gk::cp_async16_l1(slot + 64, U.xa && valid ? pa + kk : P.x, U.xa ? lo : 0);
        gk::cp_async16_l1(slot + 96, U.xa && hi ? pa + kk + 8 : P.x, U.xa ? hi : 0);
        if (TWO) {
          gk::cp_async16_l1(slot + 128, U.xb && valid ? pb + kk : P.x, U.xb ? lo : 0);
          gk::cp_async16_l1(slot + 160, U.xb && hi ? pb + kk + 8 : P.x, U.xb ? hi : 0);
        }
      };
#pragma unroll
      for (int i = 0; i < S - 1; i++) {
        if (i < U.n)
          issue_w(i);
        gk::cp_async_commit();
      }
      if (!waited) { /* X, C, the factors and every write come after this */
        gk::pdl_wait();
        waited = true;
      }
#pragma unroll
      for (int i = 0; i < S - 1; i++)
        if (i < U.n)
          issue_x(i);
      gk::cp_async_commit();
      float acc0[4] = {0.0f, 0.0f, 0.0f, 0.0f}, acc1[4] = {0.0f, 0.0f, 0.0f, 0.0f};
      const uint4 zero = make_uint4(0u, 0u, 0u, 0u);
      for (int64_t i = 0; i < U.n; i++) {
        /* step i complete: the groups after it are the i (< S - 1) or
         * S - 2 steps issued since */
        gk::cp_async_wait_dyn(i < S - 2 ? (int)i : S - 2);
        const uint4 *slot = ring + (i % S) * NP * 32;
        const uint4 ra = slot[0], rb = slot[32], x0 = slot[64], x1 = slot[96];
        const uint4 y0 = TWO ? slot[128] : zero, y1 = TWO ? slot[160] : zero;
        if (i + S - 1 < U.n) { /* into the slot read at step i - 1 */
          issue_w(i + S - 1);
          issue_x(i + S - 1);
        }
        gk::cp_async_commit();
        w8_mma<T, F8, TWO>(acc0, acc1, ra, rb, x0, x1, y0, y1);
      }
      gk::cp_async_wait<0>();
      w8_store<TWO>(P, red, U, bt, warp, g, t, acc0, acc1);
    }
  }
}

/* The bulk-copy kernel (sm_90; ns <= 4, W and X 16-byte aligned in every
 * row and batch, k >= kBulkK and a multiple of 16).  One warp of each
 * block only issues copies: per ring stage, kBulkK of k of one 16-row tile
 * -- its 16 rows of W and the ns rows of X, one cp.async.bulk each -- into
 * shared memory, completing on the stage's full barrier.  The
 * kBulkConsumers other warps each load their share of the stage's 64-wide
 * steps into registers (the fragment map above, from shared memory),
 * release the stage on its empty barrier and then widen and multiply.  The
 * copy engine keeps kBulkStages stages of every block in flight at no
 * register or issue cost to those warps.  Tiles are taken in turn by the
 * resident blocks; each tile's partial sums are added in warp order, so
 * the result does not depend on timing.  Row pitches in shared memory put
 * the 8 lanes of each quarter-warp on distinct banks. */
constexpr int kBulkK = 2048;
constexpr int kBulkStages = 2;
constexpr int kBulkConsumers = 8;
constexpr int kBulkThreads = 32 * (kBulkConsumers + 1);
constexpr int kBulkWPitch = kBulkK + 64;
constexpr int kBulkXPitch = 2 * kBulkK + 16;

size_t w8_bulk_stage_bytes(int64_t ns) {
  return ((size_t)16 * kBulkWPitch + (size_t)ns * kBulkXPitch + 127) / 128 * 128;
}

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
/* named barrier 1: the computing warps only */
__device__ __forceinline__ void bar_consumers() {
  asm volatile("bar.sync 1, %0;\n" ::"n"(32 * kBulkConsumers) : "memory");
}
#endif

template <typename T, int F8>
__global__ void __launch_bounds__(kBulkThreads) w8_decode_bulk(const W8Params P) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  constexpr int S = kBulkStages;
  __shared__ float red[kBulkConsumers][8][17];
  __shared__ __align__(8) uint64_t full[S], empty[S];
  extern __shared__ __align__(16) unsigned char w8_raw[];
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int64_t chunks = (P.k + kBulkK - 1) / kBulkK;
  const int64_t units = P.tiles * P.batch;
  const unsigned ring = (unsigned)__cvta_generic_to_shared(w8_raw);
  const unsigned fb = (unsigned)__cvta_generic_to_shared(full);
  const unsigned eb = (unsigned)__cvta_generic_to_shared(empty);
  if (threadIdx.x == 0) {
#pragma unroll
    for (int s = 0; s < S; s++) {
      gk::mbar_init(fb + 8 * s, 1);
      gk::mbar_init(eb + 8 * s, 32 * kBulkConsumers);
    }
    gk::mbar_init_fence();
  }
  __syncthreads();
  gk::pdl_launch_dependents();
  if (warp == kBulkConsumers) {
    /* the copies: stage r of this block is chunk r % chunks of its
     * (r / chunks)-th unit */
    const int64_t mine = (units - blockIdx.x + gridDim.x - 1) / gridDim.x;
    const int64_t total = mine * chunks;
    const int ns = (int)P.ns;
    struct G {
      const uint8_t *w;
      const uint16_t *x;
      unsigned dst, bar, len;
      int rows;
    };
    auto geom = [&](int64_t r) {
      G q;
      const int64_t u = blockIdx.x + (r / chunks) * gridDim.x, c = r % chunks;
      const int64_t bt = u / P.tiles, j0 = (u - bt * P.tiles) * 16, k0 = c * kBulkK;
      q.len = (unsigned)(P.k - k0 < kBulkK ? P.k - k0 : kBulkK);
      q.rows = (int)(P.nb - j0 < 16 ? P.nb - j0 : 16);
      q.w = P.w + bt * P.bw + j0 * P.swj + k0;
      q.x = P.x + bt * P.bx + k0;
      q.dst = ring + (unsigned)((r % S) * P.stage_bytes);
      q.bar = fb + 8 * (unsigned)(r % S);
      return q;
    };
    /* the stage's barrier expects W's and X's bytes; X follows in issue_x */
    auto issue_w = [&](int64_t r) {
      const G q = geom(r);
      if (lane == 0)
        gk::mbar_arrive_tx(q.bar, q.len * (unsigned)q.rows + 2 * q.len * (unsigned)ns);
      __syncwarp();
      if (lane < q.rows)
        gk::bulk_g2s(q.dst + lane * kBulkWPitch, q.w + lane * P.swj, q.len, q.bar);
    };
    auto issue_x = [&](int64_t r) {
      const G q = geom(r);
      if (lane < ns)
        gk::bulk_g2s(q.dst + 16 * kBulkWPitch + lane * kBulkXPitch, q.x + lane * P.sxi, 2 * q.len,
                     q.bar);
    };
    const int64_t first = total < S ? total : S;
    for (int64_t r = 0; r < first; r++)
      issue_w(r);
    gk::pdl_wait(); /* X is written by the kernel ahead */
    for (int64_t r = 0; r < first; r++)
      issue_x(r);
    for (int64_t r = S; r < total; r++) {
      gk::mbar_wait(eb + 8 * (unsigned)(r % S), (unsigned)((r / S - 1) & 1));
      gk::fence_proxy_async(); /* the slot's shared-memory reads before the copies into it */
      issue_w(r);
      issue_x(r);
    }
    return;
  }
  const int g = lane >> 2, t = lane & 3;
  const uint4 zero = make_uint4(0u, 0u, 0u, 0u);
  constexpr int kSteps = kBulkK / kW8Step / kBulkConsumers; /* per warp and stage */
  int64_t r = 0;
  bool waited = false;
  for (int64_t u = blockIdx.x; u < units; u += gridDim.x) {
    const int64_t bt = u / P.tiles, j0 = (u - bt * P.tiles) * 16;
    const bool va = j0 + g < P.nb, vb = j0 + g + 8 < P.nb, xa = g < P.ns;
    float acc0[4] = {0.0f, 0.0f, 0.0f, 0.0f}, acc1[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (int64_t c = 0; c < chunks; c++, r++) {
      const unsigned slot = (unsigned)(r % S);
      gk::mbar_wait(fb + 8 * slot, (unsigned)((r / S) & 1));
      const int64_t len = P.k - c * kBulkK < kBulkK ? P.k - c * kBulkK : kBulkK;
      const unsigned char *st = w8_raw + slot * P.stage_bytes;
      const unsigned char *xs = st + 16 * kBulkWPitch;
      /* this warp's steps into registers, the stage released, then the math */
      uint4 ra[kSteps], rb[kSteps], x0[kSteps], x1[kSteps];
#pragma unroll
      for (int s = 0; s < kSteps; s++) {
        const int off = (warp * kSteps + s) * kW8Step + 16 * t;
        const bool in = off < len; /* all 16 or none: len is a multiple of 16 */
        const uint4 *xp = reinterpret_cast<const uint4 *>(xs + g * kBulkXPitch + 2 * off);
        ra[s] = va && in ? *reinterpret_cast<const uint4 *>(st + g * kBulkWPitch + off) : zero;
        rb[s] =
            vb && in ? *reinterpret_cast<const uint4 *>(st + (g + 8) * kBulkWPitch + off) : zero;
        x0[s] = xa && in ? xp[0] : zero;
        x1[s] = xa && in ? xp[1] : zero;
      }
      gk::mbar_arrive(eb + 8 * slot);
#pragma unroll
      for (int s = 0; s < kSteps; s++) {
        uint32_t ca[8], cb[8];
        widen16<T, F8>(ra[s], ca);
        widen16<T, F8>(rb[s], cb);
        const uint32_t xw[8] = {x0[s].x, x0[s].y, x0[s].z, x0[s].w,
                                x1[s].x, x1[s].y, x1[s].z, x1[s].w};
        /* two accumulators: half the chain of dependent MMAs */
#pragma unroll
        for (int q = 0; q < 4; q++)
          mma16816<T>(q & 1 ? acc1 : acc0, ca[2 * q], cb[2 * q], ca[2 * q + 1], cb[2 * q + 1],
                      xw[2 * q], xw[2 * q + 1]);
      }
    }
    red[warp][2 * t][g] = acc0[0] + acc1[0];
    red[warp][2 * t + 1][g] = acc0[1] + acc1[1];
    red[warp][2 * t][g + 8] = acc0[2] + acc1[2];
    red[warp][2 * t + 1][g + 8] = acc0[3] + acc1[3];
    bar_consumers();
    if (!waited) { /* C, the factors and D come after the kernel ahead */
      gk::pdl_wait();
      waited = true;
    }
    for (int idx = threadIdx.x; idx < 16 * (int)P.ns; idx += 32 * kBulkConsumers) {
      const int jl = idx % 16, i = idx / 16;
      const int64_t j = j0 + jl;
      if (j >= P.nb)
        continue;
      float sum = 0.0f;
#pragma unroll
      for (int w = 0; w < kBulkConsumers; w++)
        sum += red[w][i][jl];
      w8_out(P, bt, i, j, sum);
    }
    bar_consumers();
  }
#else
  __trap(); /* never chosen below sm_90 (gk_w8_config_for) */
#endif
}

/* splits > 1: each output's partials summed in split order, then w8_out. */
__global__ void __launch_bounds__(kThreads) w8_sum(const W8Params P) {
  const int64_t total = P.batch * P.ns * P.nb;
  for (int64_t idx = (int64_t)blockIdx.x * kThreads + threadIdx.x; idx < total;
       idx += (int64_t)gridDim.x * kThreads) {
    const int64_t j = idx % P.nb, rest = idx / P.nb;
    const int64_t i = rest % P.ns, bt = rest / P.ns;
    float s = 0.0f;
    for (int sp = 0; sp < P.splits; sp++)
      s += P.partials[((bt * P.splits + sp) * P.ns + i) * P.nb + j];
    w8_out(P, bt, i, j, s);
  }
}

typedef void (*w8_fn)(const W8Params);

w8_fn w8_kernel(const gk_w8_problem *p, bool async) {
  const bool bf = p->x_dtype == GKO_DTYPE_BF16, e5 = p->w_dtype == GKO_DTYPE_F8E5M2;
  const bool two = p->ns > 8;
  static const w8_fn fns[2][2][2][2] = {
      {{{w8_decode<__half, 0, false>, w8_decode<__half, 0, true>},
        {w8_decode<__half, 1, false>, w8_decode<__half, 1, true>}},
       {{w8_decode<__nv_bfloat16, 0, false>, w8_decode<__nv_bfloat16, 0, true>},
        {w8_decode<__nv_bfloat16, 1, false>, w8_decode<__nv_bfloat16, 1, true>}}},
      {{{w8_decode_async<__half, 0, false>, w8_decode_async<__half, 0, true>},
        {w8_decode_async<__half, 1, false>, w8_decode_async<__half, 1, true>}},
       {{w8_decode_async<__nv_bfloat16, 0, false>, w8_decode_async<__nv_bfloat16, 0, true>},
        {w8_decode_async<__nv_bfloat16, 1, false>, w8_decode_async<__nv_bfloat16, 1, true>}}}};
  return fns[async][bf][e5][two];
}

w8_fn w8_bulk_kernel(const gk_w8_problem *p) {
  const bool bf = p->x_dtype == GKO_DTYPE_BF16, e5 = p->w_dtype == GKO_DTYPE_F8E5M2;
  static const w8_fn fns[2][2] = {
      {w8_decode_bulk<__half, 0>, w8_decode_bulk<__half, 1>},
      {w8_decode_bulk<__nv_bfloat16, 0>, w8_decode_bulk<__nv_bfloat16, 1>}};
  return fns[bf][e5];
}

size_t w8_ring_bytes(const gk_w8_problem *p) {
  return p->ns > 8 ? W8Ring<true>::kBytes : W8Ring<false>::kBytes;
}

/* 16-byte vectors along k in every line and batch, from the base on */
bool vec_ok(const void *base, int64_t ld_bytes, int64_t lines, int64_t batch_bytes, int64_t batch) {
  return (uintptr_t)base % 16 == 0 && (lines <= 1 || ld_bytes % 16 == 0) &&
         (batch <= 1 || batch_bytes % 16 == 0);
}

} // namespace

extern "C" int gk_w8_device_ok(int cc, char *why, size_t cap) {
  if (cc >= 80)
    return 1;
  if (why)
    snprintf(why, cap,
             "weight-only FP8 runs on mma.sync with bf16 and f16 inputs: sm_80 or newer; this "
             "GPU is sm_%d",
             cc);
  return 0;
}

extern "C" gko_status_t gk_w8_config_for(const gk_w8_problem *p, gk_w8_config *cfg, int cc,
                                         int sms) {
  memset(cfg, 0, sizeof *cfg);
  const w8_fn fn = w8_kernel(p, false), fa_fn = w8_kernel(p, true);
  cudaFuncAttributes fa;
  cudaError_t e = cudaFuncGetAttributes(&fa, (const void *)fn);
  if (e != cudaSuccess)
    return gk_cuda_fail(e, "cudaFuncGetAttributes (weight-only FP8 kernel)");
  int occ = 0, occ_async = 0, dev = 0, optin = 0;
  e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, (const void *)fn, kThreads, 0);
  if (e != cudaSuccess)
    return gk_cuda_fail(e, "cudaOccupancyMaxActiveBlocksPerMultiprocessor (weight-only FP8)");
  if (occ == 0)
    return gk_fail(GKO_STATUS_NOT_SUPPORTED, "weight-only FP8: the kernel does not fit this GPU");
  /* the cp.async ring kernel where the device's shared memory holds its ring */
  const size_t ring = w8_ring_bytes(p);
  if ((e = cudaGetDevice(&dev)) != cudaSuccess ||
      (e = cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev)) !=
          cudaSuccess)
    return gk_cuda_fail(e, "cudaDeviceGetAttribute (shared memory per block)");
  if (ring + sizeof(float) * kW8Warps * 16 * 17 <= (size_t)optin) {
    e = cudaFuncSetAttribute((const void *)fa_fn, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             (int)ring);
    if (e != cudaSuccess)
      return gk_cuda_fail(e, "cudaFuncSetAttribute (weight-only FP8 ring)");
    e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ_async, (const void *)fa_fn, kThreads,
                                                      ring);
    if (e != cudaSuccess)
      return gk_cuda_fail(e, "cudaOccupancyMaxActiveBlocksPerMultiprocessor (weight-only FP8)");
  }
  cfg->async_ok = occ_async > 0;
  cfg->blocks_per_sm = cfg->async_ok ? occ_async : occ;
  /* griddepcontrol is in the sm_90 code only */
  cfg->pdl_ok = cc >= 90 && fa.ptxVersion >= 90;
  /* warps per tile: as many as k has steps for (at most 8), but fewer --
   * more tiles per block -- where the blocks would not all be resident at
   * once (one wave: every warp streams its share start to end) */
  const int64_t steps = (p->k + kW8Step - 1) / kW8Step;
  const int64_t slots = (int64_t)cfg->blocks_per_sm * sms;
  const int64_t rows16 = (p->nb + 15) / 16 * p->batch;
  cfg->kw = steps >= 16 ? 8 : steps >= 8 ? 4 : steps >= 4 ? 2 : 1;
  while (cfg->kw > 1 && (rows16 + kW8Warps / cfg->kw - 1) / (kW8Warps / cfg->kw) > slots)
    cfg->kw /= 2;
  cfg->per = kW8Warps / cfg->kw;
  const int64_t tiles = (p->nb + 15) / 16;
  /* the bulk-copy kernel (sm_90, as measured) where every SM has a tile of
   * 16 rows and every stage its full width of k */
  if (cc == 90 && cfg->pdl_ok && p->ns <= 4 && p->k >= kBulkK && p->k % 16 == 0 &&
      tiles * p->batch >= sms) {
    const w8_fn bulk_fn = w8_bulk_kernel(p);
    /* the function's limit is set for its largest ring (ns = 4), so that
     * plans of every ns can share it */
    const size_t bytes = (size_t)kBulkStages * w8_bulk_stage_bytes(p->ns);
    const size_t most = (size_t)kBulkStages * w8_bulk_stage_bytes(4);
    cudaFuncAttributes ba;
    int occ_bulk = 0;
    e = cudaFuncGetAttributes(&ba, (const void *)bulk_fn);
    if (e != cudaSuccess)
      return gk_cuda_fail(e, "cudaFuncGetAttributes (weight-only FP8 bulk kernel)");
    if (most + ba.sharedSizeBytes <= (size_t)optin) {
      e = cudaFuncSetAttribute((const void *)bulk_fn, cudaFuncAttributeMaxDynamicSharedMemorySize,
                               (int)most);
      if (e != cudaSuccess)
        return gk_cuda_fail(e, "cudaFuncSetAttribute (weight-only FP8 bulk ring)");
      e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ_bulk, (const void *)bulk_fn,
                                                        kBulkThreads, bytes);
      if (e != cudaSuccess)
        return gk_cuda_fail(e, "cudaOccupancyMaxActiveBlocksPerMultiprocessor (weight-only FP8)");
    }
    if (occ_bulk > 0) {
      const int64_t units = tiles * p->batch, slots_b = (int64_t)occ_bulk * sms;
      cfg->bulk = 1;
      cfg->bulk_grid = units < slots_b ? units : slots_b;
    }
  }
  /* split k only when the tiles leave SMs idle: about two blocks per SM,
   * each split at least one unrolled step per warp */
  const int64_t blocks = (tiles + cfg->per - 1) / cfg->per * p->batch;
  int64_t splits = 1;
  if (blocks < sms && !cfg->bulk) {
    const int64_t most = p->k / ((int64_t)cfg->kw * kW8Step * kW8Unroll);
    splits = (2 * (int64_t)sms + blocks - 1) / blocks;
    if (splits > most)
      splits = most;
    if (splits > 64)
      splits = 64;
    if (splits < 1)
      splits = 1;
  }
  int64_t chunk = (p->k + splits - 1) / splits;
  chunk = (chunk + kW8Step - 1) / kW8Step * kW8Step;
  if (chunk < kW8Step)
    chunk = kW8Step;
  cfg->kchunk = chunk;
  cfg->splits = (int)((p->k + chunk - 1) / chunk);
  if (cfg->splits < 1)
    cfg->splits = 1;
  return GKO_STATUS_SUCCESS;
}

extern "C" size_t gk_w8_partials_bytes(const gk_w8_problem *p, const gk_w8_config *cfg) {
  if (cfg->splits <= 1)
    return 0;
  return (size_t)p->batch * (size_t)cfg->splits * (size_t)p->ns * (size_t)p->nb * sizeof(float);
}

extern "C" gko_status_t gk_w8_launch(const gk_w8_problem *p, const gk_w8_config *cfg, float alpha,
                                     float beta, const float *scale_w, const void *w, const void *x,
                                     const void *c, void *d, const void *bias, void *ws,
                                     void *stream) {
  W8Params P;
  memset(&P, 0, sizeof P);
  P.w = static_cast<const uint8_t *>(w);
  P.x = static_cast<const uint16_t *>(x);
  P.c = c;
  P.d = d;
  P.bias = bias;
  P.scale = scale_w;
  P.partials = static_cast<float *>(ws);
  P.nb = p->nb, P.ns = p->ns, P.k = p->k, P.batch = p->batch;
  P.swj = p->swj, P.sxi = p->sxi, P.sdj = p->sdj, P.sdi = p->sdi, P.scj = p->scj, P.sci = p->sci;
  P.bw = p->bw, P.bx = p->bx, P.bc = p->bc, P.bd = p->bd, P.bbias = p->bbias;
  P.tiles = (p->nb + 15) / 16;
  P.kchunk = cfg->kchunk;
  P.splits = cfg->splits;
  P.kw = cfg->kw;
  P.per = cfg->per;
  P.alpha = alpha;
  P.beta = beta;
  P.act = p->act;
  P.cd = p->cd_dtype;
  P.has_bias = bias != nullptr;
  P.bias_on_j = p->bias_on_j;
  P.scale_per_j = p->scale_per_j;
  P.vec_w = vec_ok(w, p->swj, p->nb, p->bw, p->batch);
  P.vec_x = vec_ok(x, 2 * p->sxi, p->ns, 2 * p->bx, p->batch);
  cudaLaunchConfig_t lc = {};
  cudaLaunchAttribute at[1] = {};
  const int64_t units = (P.tiles + P.per - 1) / P.per * P.splits;
  lc.gridDim = dim3((unsigned)gk::grid_x(units), (unsigned)gk::grid_y(p->batch));
  lc.blockDim = dim3(kThreads);
  lc.stream = (cudaStream_t)stream;
  if (cfg->pdl) { /* W promised static (GKO_GEMM_ATTR_STATIC_OPERANDS) */
    at[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    at[0].val.programmaticStreamSerializationAllowed = 1;
    lc.attrs = at;
    lc.numAttrs = 1;
  }
  void *args[] = {&P};
  if (cfg->bulk && P.vec_w && P.vec_x) {
    P.stage_bytes = (int64_t)w8_bulk_stage_bytes(p->ns);
    lc.gridDim = dim3((unsigned)cfg->bulk_grid);
    lc.blockDim = dim3(kBulkThreads);
    lc.dynamicSmemBytes = (size_t)kBulkStages * (size_t)P.stage_bytes;
    const cudaError_t le = cudaLaunchKernelExC(&lc, (const void *)w8_bulk_kernel(p), args);
    return le == cudaSuccess ? GKO_STATUS_SUCCESS
                             : gk_cuda_fail(le, "weight-only FP8 kernel launch");
  }
  const bool async = cfg->async_ok && P.vec_w && P.vec_x;
  lc.dynamicSmemBytes = async ? w8_ring_bytes(p) : 0;
  cudaError_t e = cudaLaunchKernelExC(&lc, (const void *)w8_kernel(p, async), args);
  if (e != cudaSuccess)
    return gk_cuda_fail(e, "weight-only FP8 kernel launch");
  if (P.splits > 1) {
    const int64_t total = p->batch * p->ns * p->nb;
    const int64_t grid = gk::grid_x((total + kThreads - 1) / kThreads);
    e = cudaLaunchKernel((const void *)w8_sum, dim3((unsigned)grid), dim3(kThreads), args, 0,
                         (cudaStream_t)stream);
    if (e != cudaSuccess)
      return gk_cuda_fail(e, "weight-only FP8 split-K sum launch");
  }
  return GKO_STATUS_SUCCESS;
}
