/* attention.cu -- fused scaled dot-product attention (gko_attention).
 *
 * Both kernels stream the keys of one (batch, head) in tiles and keep, per
 * query row, a running maximum m and sum l of the exponentials in f32
 * (online softmax, Milakov & Gimelshein 2018; FlashAttention-2, Dao 2023):
 * a new tile with row maximum m' rescales the sum and the output
 * accumulator by 2^(m - max(m, m')).  Scores are multiplied by
 * scale * log2(e) first, so 2^x gives the exponentials and a negative
 * scale still finds the true maximum.  The key loop stops at the batch's
 * key count min(seq_k, lengths[b]); keys past it are never loaded (the
 * loads zero-fill), so neither padding costs time nor does garbage (NaN)
 * in padded rows reach the result.
 *
 * Tensor-core kernel (f16/bf16, head_dim % 8 == 0, <= 128, sm_80+): one
 * block of 4 warps per 64 query rows of one (batch, head), each warp 16
 * rows with its Q fragment in registers.  K and V tiles of BN keys go
 * through a two-stage cp.async ring in shared memory (rows padded by 16
 * bytes, so ldmatrix and the cp.async stores are free of bank conflicts).
 * S = Q K^T and O += P V are mma.sync m16n8k16 with f32 accumulators; P is
 * rounded to the dtype for the second product (ldmatrix.trans gives V's
 * fragments).  head_dim is padded up to the instantiated 32, 64 or 128
 * (zero-filled loads; k steps and output tiles past head_dim are skipped).
 *
 * CUDA-core kernel (every other case, and below sm_80): one block of 4
 * warps per 16 query rows, 4 rows per warp (8 and 2 above head_dim 128);
 * 32-key tiles of K, then of V, staged as f32 in shared memory; lane j
 * scores key j of the tile, then each lane accumulates its columns of O
 * (templated on how many, so no lane runs empty column iterations).  All
 * products in f32.
 *
 * Work items (query block, head, batch) run over a grid-stride loop in
 * gridDim.x, so batch * heads has no grid limit.  Each output element is
 * computed by one thread in a fixed order: results are deterministic. */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#include <type_traits>

#include "attention.h"
#include "common.cuh"
#include "convert.cuh"
#include "mma.cuh"

namespace {

constexpr float kLog2e = 1.4426950408889634f;
constexpr int kThreads = 128; /* both kernels: 4 warps */

/* 2^x by the special-function unit (PTX ex2.approx.ftz: relative error
 * about 2^-22; 2^-inf = 0, NaN stays NaN; subnormal results flush to 0). */
__device__ __forceinline__ float fast_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

struct Params {
  const void *q, *k, *v;
  void *o;
  const int32_t *lengths;
  int64_t heads, seq_q, seq_k, ldq, ldk, ldv, ldo;
  int64_t qblocks, items; /* query blocks per (batch, head); items = their total */
  int hd;
  float c; /* scale * log2(e) */
};

/* The keys batch b attends to: min(seq_k, max(lengths[b], 0)). */
__device__ __forceinline__ int64_t key_end(const Params &P, int64_t b) {
  int64_t n = P.seq_k;
  if (P.lengths) {
    const int64_t l = __ldg(P.lengths + b);
    n = l < 0 ? 0 : (l < n ? l : n);
  }
  return n;
}

/* The offset of element (b, s, h, 0) of a BSHD tensor. */
__device__ __forceinline__ int64_t row_off(int64_t b, int64_t seq, int64_t s, int64_t ld,
                                           int64_t hoff) {
  return (b * seq + s) * ld + hoff;
}

/* ---- tensor-core kernel --------------------------------------------------- */

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
constexpr bool kSm80 = false;
#else
constexpr bool kSm80 = true;
#endif

template <int D>
struct TcCfg {
  static constexpr int BM = 64;                /* query rows per block, 16 per warp */
  static constexpr int BN = D <= 64 ? 64 : 32; /* keys per tile: 2 x 2 tiles in 48 KB */
  static constexpr int LD = D + 8;             /* shared row: 16 bytes of padding */
  static constexpr int CPR = D / 8;            /* 16-byte chunks per row */
};
/* two stages of a K and a V tile fit the 48 KB of static shared memory */
template <int D>
constexpr bool tc_fits() {
  return 2 * 2 * TcCfg<D>::BN * TcCfg<D>::LD * 2 <= 48 * 1024 && TcCfg<D>::CPR * 8 == D &&
         TcCfg<D>::BM == 64;
}
static_assert(tc_fits<32>() && tc_fits<64>() && tc_fits<128>(), "attention tiles exceed 48 KB");

/* Two floats rounded to a packed pair of T (the lower half holds a). */
template <typename T>
__device__ __forceinline__ uint32_t pack2(float a, float b) {
  uint32_t r;
  if constexpr (std::is_same<T, __half>::value) {
    const __half2 h = __floats2half2_rn(a, b);
    r = *reinterpret_cast<const uint32_t *>(&h);
  } else {
    const __nv_bfloat162 h = __floats2bfloat162_rn(a, b);
    r = *reinterpret_cast<const uint32_t *>(&h);
  }
  return r;
}

template <typename T, int D>
__global__ void __launch_bounds__(kThreads) attn_tc(Params P) {
  if constexpr (kSm80) {
    using C = TcCfg<D>;
    constexpr int BM = C::BM, BN = C::BN, LD = C::LD, CPR = C::CPR;
    __shared__ __align__(16) uint16_t ks[2][BN * LD];
    __shared__ __align__(16) uint16_t vs[2][BN * LD];
    const uint16_t *Q = static_cast<const uint16_t *>(P.q);
    const uint16_t *K = static_cast<const uint16_t *>(P.k);
    const uint16_t *V = static_cast<const uint16_t *>(P.v);
    uint16_t *O = static_cast<uint16_t *>(P.o);
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;
    const int hd = P.hd, hd16 = (hd + 15) & ~15;
    const unsigned ks0 = (unsigned)__cvta_generic_to_shared(&ks[0][0]);
    const unsigned vs0 = (unsigned)__cvta_generic_to_shared(&vs[0][0]);
    constexpr unsigned kStage = BN * LD * 2; /* bytes */
    /* ldmatrix lane offsets (elements): K tiles give B of S = Q K^T, V
     * tiles (transposed) B of O = P V; matrix lane / 8 of each x4 */
    const int k_lane = ((lane >> 4) * 8 + (lane & 7)) * LD + ((lane >> 3) & 1) * 8;
    const int v_lane = (((lane >> 3) & 1) * 8 + (lane & 7)) * LD + (lane >> 4) * 8;
    constexpr int kRowStep = kThreads / CPR; /* tile rows one pass of the block loads */
    const int c_row = tid / CPR, c_col = (tid % CPR) * 8;

    for (int64_t w = blockIdx.x; w < P.items; w += gridDim.x) {
      const int64_t qb = w % P.qblocks, bh = w / P.qblocks;
      const int64_t h = bh % P.heads, b = bh / P.heads;
      const int64_t kend = key_end(P, b), hoff = h * hd;
      const int64_t r0 = qb * BM + warp * 16; /* this warp's first row */
      const bool active = r0 < P.seq_q;

      float o[D / 8][4];
#pragma unroll
      for (int i = 0; i < D / 8; i++) o[i][0] = o[i][1] = o[i][2] = o[i][3] = 0.0f;
      float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};

      if (kend > 0) {
        /* Q fragment: qf[kk] = A(g, 2t), A(g + 8, 2t), A(g, 2t + 8), A(g + 8, 2t + 8)
         * of k step kk (mma.cuh) */
        uint32_t qf[D / 16][4];
        {
          const int64_t row = r0 + g;
          const uint16_t *qp = Q + row_off(b, P.seq_q, row, P.ldq, hoff) + 2 * t;
          const bool ok0 = row < P.seq_q, ok1 = row + 8 < P.seq_q;
#pragma unroll
          for (int kk = 0; kk < D / 16; kk++)
#pragma unroll
            for (int i = 0; i < 4; i++) {
              const int col = kk * 16 + 2 * t + (i >> 1) * 8;
              const bool ok = (i & 1 ? ok1 : ok0) && col < hd;
              qf[kk][i] = ok ? __ldg(reinterpret_cast<const uint32_t *>(qp + (i & 1) * 8 * P.ldq +
                                                                        kk * 16 + (i >> 1) * 8))
                             : 0u;
            }
        }

        /* K and V tile `blk` into stage st: rows past kend and columns past
         * head_dim (within the used 16-column steps) zero-filled.  Thread
         * tid moves chunk column tid % CPR of rows tid / CPR + i * kRowStep. */
        const uint16_t *kt = K + row_off(b, P.seq_k, c_row, P.ldk, hoff) + c_col;
        const uint16_t *vt = V + row_off(b, P.seq_k, c_row, P.ldv, hoff) + c_col;
        const bool col_ok = c_col < hd, col_used = c_col < hd16;
        auto load_tile = [&](int64_t blk, int st) {
          const int64_t j0 = blk * BN;
          if (!col_used) return;
#pragma unroll
          for (int i = 0; i < BN / kRowStep; i++) {
            const int64_t j = j0 + c_row + i * kRowStep;
            const bool ok = col_ok && j < kend;
            const uint16_t *kp = ok ? kt + (j - c_row) * P.ldk : K;
            const uint16_t *vp = ok ? vt + (j - c_row) * P.ldv : V;
            const int so = st * BN * LD + (c_row + i * kRowStep) * LD + c_col;
            gk::cp_async16(&ks[0][0] + so, kp, ok ? 16 : 0);
            gk::cp_async16(&vs[0][0] + so, vp, ok ? 16 : 0);
          }
        };

        const int64_t nblk = (kend + BN - 1) / BN;
        load_tile(0, 0);
        gk::cp_async_commit();
        for (int64_t i = 0; i < nblk; i++) {
          if (i + 1 < nblk) load_tile(i + 1, (int)((i + 1) & 1));
          gk::cp_async_commit();
          gk::cp_async_wait<1>();
          __syncthreads();
          if (active) {
            const int st = (int)(i & 1);
            const int64_t j0 = i * BN;
            const unsigned kb = ks0 + st * kStage + k_lane * 2;
            const unsigned vb = vs0 + st * kStage + v_lane * 2;
            /* S = Q K^T: s[n] holds S(g, 8n + 2t..), S(g + 8, 8n + 2t..) */
            float s[BN / 8][4];
#pragma unroll
            for (int n = 0; n < BN / 8; n++) s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.0f;
#pragma unroll
            for (int kk = 0; kk < D / 16; kk++) {
              if (kk * 16 >= hd) break;
#pragma unroll
              for (int np = 0; np < BN / 16; np++) {
                uint32_t b0, b1, b2, b3;
                gk::ldsm_x4(kb + (np * 16 * LD + kk * 16) * 2, b0, b1, b2, b3);
                gk::mma16816<T>(s[2 * np], qf[kk][0], qf[kk][1], qf[kk][2], qf[kk][3], b0, b1);
                gk::mma16816<T>(s[2 * np + 1], qf[kk][0], qf[kk][1], qf[kk][2], qf[kk][3], b2, b3);
              }
            }
            /* scale into the log2 domain, mask keys >= kend, row maxima */
            const bool tail = j0 + BN > kend;
            float mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
            for (int n = 0; n < BN / 8; n++)
#pragma unroll
              for (int e = 0; e < 4; e++) {
                float x = s[n][e] * P.c;
                if (tail && j0 + n * 8 + 2 * t + (e & 1) >= kend) x = -INFINITY;
                s[n][e] = x;
                mx[e >> 1] = fmaxf(mx[e >> 1], x);
              }
            float alpha[2], muse[2];
#pragma unroll
            for (int r = 0; r < 2; r++) {
              mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
              mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
              const float mn = fmaxf(m[r], mx[r]);
              muse[r] = mn == -INFINITY ? 0.0f : mn; /* no -inf - -inf */
              alpha[r] = fast_exp2(m[r] - muse[r]);
              m[r] = mn;
              l[r] *= alpha[r];
            }
#pragma unroll
            for (int n = 0; n < BN / 8; n++)
#pragma unroll
              for (int e = 0; e < 4; e++) {
                const float p = fast_exp2(s[n][e] - muse[e >> 1]);
                s[n][e] = p;
                l[e >> 1] += p;
              }
#pragma unroll
            for (int d = 0; d < D / 8; d++) {
              o[d][0] *= alpha[0];
              o[d][1] *= alpha[0];
              o[d][2] *= alpha[1];
              o[d][3] *= alpha[1];
            }
            /* O += P V: the accumulators of S n-tiles 2kk, 2kk + 1 are the
             * A fragment of k step kk */
#pragma unroll
            for (int kk = 0; kk < BN / 16; kk++) {
              const uint32_t a0 = pack2<T>(s[2 * kk][0], s[2 * kk][1]);
              const uint32_t a1 = pack2<T>(s[2 * kk][2], s[2 * kk][3]);
              const uint32_t a2 = pack2<T>(s[2 * kk + 1][0], s[2 * kk + 1][1]);
              const uint32_t a3 = pack2<T>(s[2 * kk + 1][2], s[2 * kk + 1][3]);
#pragma unroll
              for (int dp = 0; dp < D / 16; dp++) {
                if (dp * 16 >= hd) break;
                uint32_t b0, b1, b2, b3;
                gk::ldsm_x4_trans(vb + (kk * 16 * LD + dp * 16) * 2, b0, b1, b2, b3);
                gk::mma16816<T>(o[2 * dp], a0, a1, a2, a3, b0, b1);
                gk::mma16816<T>(o[2 * dp + 1], a0, a1, a2, a3, b2, b3);
              }
            }
          }
          __syncthreads(); /* the next tile's loads overwrite this stage */
        }
      }

      if (active) {
        float inv[2];
#pragma unroll
        for (int r = 0; r < 2; r++) {
          l[r] += __shfl_xor_sync(0xffffffffu, l[r], 1);
          l[r] += __shfl_xor_sync(0xffffffffu, l[r], 2);
          inv[r] = l[r] == 0.0f ? 0.0f : 1.0f / l[r]; /* no key: zeros */
        }
#pragma unroll
        for (int d = 0; d < D / 8; d++) {
          const int col = d * 8 + 2 * t;
          if (col >= hd) continue;
#pragma unroll
          for (int r = 0; r < 2; r++) {
            const int64_t row = r0 + g + r * 8;
            if (row < P.seq_q)
              *reinterpret_cast<uint32_t *>(O + row_off(b, P.seq_q, row, P.ldo, hoff) + col) =
                  pack2<T>(o[d][2 * r] * inv[r], o[d][2 * r + 1] * inv[r]);
          }
        }
      }
    }
  }
}

/* ---- CUDA-core kernel ------------------------------------------------------ */

constexpr int kSimtKeys = 32; /* keys per tile: one per lane */

/* NC columns of O per lane (head_dim <= 32 NC); R query rows per warp, so
 * 4 R per block (R = 2 at NC = 8 keeps the shared memory within 48 KB). */
template <int NC>
struct SimtCfg {
  static constexpr int R = NC == 8 ? 2 : 4, ROWS = 4 * R;
};

/* Dynamic shared memory: Q rows [ROWS][hd], then the K or V tile [32][hd | 1]
 * (an odd row stride: lane j reading row j hits 32 banks). */
inline size_t simt_smem(int rows, int hd) {
  return sizeof(float) * ((size_t)rows * hd + (size_t)kSimtKeys * (hd | 1));
}

template <typename T, int NC>
__global__ void __launch_bounds__(kThreads) attn_simt(Params P) {
  using E = gk::elem<T>;
  constexpr int R = SimtCfg<NC>::R, ROWS = SimtCfg<NC>::ROWS;
  extern __shared__ float smem[];
  const int hd = P.hd, kld = hd | 1;
  float *qs = smem, *kv = smem + ROWS * hd;
  const T *Q = static_cast<const T *>(P.q);
  const T *K = static_cast<const T *>(P.k);
  const T *V = static_cast<const T *>(P.v);
  T *O = static_cast<T *>(P.o);
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  constexpr int kWarps = kThreads / 32;
  const float *qw = qs + R * warp * hd; /* this warp's R rows */

  for (int64_t w = blockIdx.x; w < P.items; w += gridDim.x) {
    const int64_t qb = w % P.qblocks, bh = w / P.qblocks;
    const int64_t h = bh % P.heads, b = bh / P.heads;
    const int64_t kend = key_end(P, b), hoff = h * hd;
    const int64_t row0 = qb * ROWS;
    __syncthreads(); /* the previous item is done with qs and kv */
    for (int r = warp; r < ROWS; r += kWarps) {
      const int64_t row = row0 + r;
      const T *qp = Q + row_off(b, P.seq_q, row, P.ldq, hoff);
      for (int e = lane; e < hd; e += 32) qs[r * hd + e] = row < P.seq_q ? E::load(qp + e) : 0.0f;
    }
    float o[R][NC], m[R], l[R];
#pragma unroll
    for (int r = 0; r < R; r++) {
      m[r] = -INFINITY;
      l[r] = 0.0f;
#pragma unroll
      for (int i = 0; i < NC; i++) o[r][i] = 0.0f;
    }

    for (int64_t j0 = 0; j0 < kend; j0 += kSimtKeys) {
      const int nk = kend - j0 < kSimtKeys ? (int)(kend - j0) : kSimtKeys;
      __syncthreads(); /* the previous V tile is consumed */
      for (int r = warp; r < nk; r += kWarps) {
        const T *kp = K + row_off(b, P.seq_k, j0 + r, P.ldk, hoff);
        for (int e = lane; e < hd; e += 32) kv[r * kld + e] = E::load(kp + e);
      }
      __syncthreads();
      float p[R];
#pragma unroll
      for (int r = 0; r < R; r++) p[r] = 0.0f;
      if (lane < nk) {
        const float *kr = kv + lane * kld;
        for (int e = 0; e < hd; e++) {
          const float kx = kr[e];
#pragma unroll
          for (int r = 0; r < R; r++) p[r] = fmaf(qw[r * hd + e], kx, p[r]);
        }
      }
#pragma unroll
      for (int r = 0; r < R; r++) {
        const float x = lane < nk ? p[r] * P.c : -INFINITY;
        float mx = x;
#pragma unroll
        for (int off = 16; off > 0; off >>= 1)
          mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, off));
        const float mn = fmaxf(m[r], mx);
        const float muse = mn == -INFINITY ? 0.0f : mn;
        const float alpha = fast_exp2(m[r] - muse);
        m[r] = mn;
        p[r] = fast_exp2(x - muse);
        l[r] = l[r] * alpha + p[r];
#pragma unroll
        for (int i = 0; i < NC; i++) o[r][i] *= alpha;
      }
      __syncthreads(); /* the K tile is consumed */
      for (int r = warp; r < nk; r += kWarps) {
        const T *vp = V + row_off(b, P.seq_k, j0 + r, P.ldv, hoff);
        for (int e = lane; e < hd; e += 32) kv[r * kld + e] = E::load(vp + e);
      }
      __syncthreads();
      for (int j = 0; j < nk; j++) {
        float pj[R];
#pragma unroll
        for (int r = 0; r < R; r++) pj[r] = __shfl_sync(0xffffffffu, p[r], j);
        const float *vr = kv + j * kld;
#pragma unroll
        for (int i = 0; i < NC; i++) {
          const int e = lane + 32 * i;
          const float vx = e < hd ? vr[e] : 0.0f;
#pragma unroll
          for (int r = 0; r < R; r++) o[r][i] = fmaf(pj[r], vx, o[r][i]);
        }
      }
    }

#pragma unroll
    for (int r = 0; r < R; r++) {
      float sum = l[r];
#pragma unroll
      for (int off = 16; off > 0; off >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, off);
      const float inv = sum == 0.0f ? 0.0f : 1.0f / sum; /* no key: zeros */
      const int64_t row = row0 + R * warp + r;
      if (row >= P.seq_q) continue;
      T *op = O + row_off(b, P.seq_q, row, P.ldo, hoff);
#pragma unroll
      for (int i = 0; i < NC; i++) {
        const int e = lane + 32 * i;
        if (e < hd) op[e] = E::from_f(o[r][i] * inv);
      }
    }
  }
}

/* The CUDA-core kernel for dtype and NC = 1, 2, 4 or 8. */
template <typename T>
const void *simt_kernel_t(int nc) {
  return nc == 1   ? (const void *)attn_simt<T, 1>
         : nc == 2 ? (const void *)attn_simt<T, 2>
         : nc == 4 ? (const void *)attn_simt<T, 4>
                   : (const void *)attn_simt<T, 8>;
}

typedef void (*attn_fn)(Params);

/* The tensor-core kernel for a 16-bit dtype (0 f16, 1 bf16) and head_dim,
 * padded up to 32, 64 or 128. */
attn_fn tc_kernel(int bf16, int hd, int *dpad) {
  *dpad = hd <= 32 ? 32 : hd <= 64 ? 64 : 128;
  if (bf16)
    return *dpad == 32   ? attn_tc<__nv_bfloat16, 32>
           : *dpad == 64 ? attn_tc<__nv_bfloat16, 64>
                         : attn_tc<__nv_bfloat16, 128>;
  return *dpad == 32   ? attn_tc<__half, 32>
         : *dpad == 64 ? attn_tc<__half, 64>
                       : attn_tc<__half, 128>;
}

} // namespace

extern "C" gko_status_t gk_attention_launch(const gk_attn_args *a, int tensor, void *stream) {
  Params P;
  P.q = a->q;
  P.k = a->k;
  P.v = a->v;
  P.o = a->o;
  P.lengths = a->lengths;
  P.heads = a->heads;
  P.seq_q = a->seq_q;
  P.seq_k = a->seq_k;
  P.ldq = a->ldq;
  P.ldk = a->ldk;
  P.ldv = a->ldv;
  P.ldo = a->ldo;
  P.hd = (int)a->head_dim;
  P.c = a->scale * kLog2e;
  const int nc = P.hd <= 32 ? 1 : P.hd <= 64 ? 2 : P.hd <= 128 ? 4 : 8;
  const int rows = tensor ? TcCfg<32>::BM : nc == 8 ? SimtCfg<8>::ROWS : SimtCfg<4>::ROWS;
  P.qblocks = (a->seq_q + rows - 1) / rows;
  P.items = P.qblocks * a->heads * a->batch;
  const dim3 grid((unsigned)gk::grid_x(P.items)), block(kThreads);
  cudaError_t e;
  if (tensor) {
    int dpad;
    const attn_fn fn = tc_kernel(a->dtype == GKO_DTYPE_BF16, P.hd, &dpad);
    e = gk::launch(fn, grid, block, (cudaStream_t)stream, P);
  } else {
    const void *fn = a->dtype == GKO_DTYPE_F32   ? simt_kernel_t<float>(nc)
                     : a->dtype == GKO_DTYPE_F16 ? simt_kernel_t<__half>(nc)
                                                 : simt_kernel_t<__nv_bfloat16>(nc);
    void *argv[] = {(void *)&P};
    e = cudaLaunchKernel(fn, grid, block, argv, simt_smem(rows, P.hd), (cudaStream_t)stream);
  }
  if (e != cudaSuccess)
    return gk_cuda_fail(e, tensor ? "attention kernel launch (tensor cores)"
                                  : "attention kernel launch (CUDA cores)");
  return GKO_STATUS_SUCCESS;
}
