/* gemm_wmma_tiled.cu -- the TILED kernel of gko's GEMM, wmma_tiled (f16 or
 * bf16; each operand plain or transposed; register prefetch or cp.async:
 * 16 instantiations), in the column-major "lt view" of kernels/gemm_wmma.h:
 *
 *   D (m x n) = act(alpha * op(A) op(B) + beta * C + bias)
 *
 * 128 x 128 block tiles, k in steps of 32, 8 warps of 64 x 32 (4 x 2 WMMA
 * 16x16x16 fragments each, or 4 x 4 mma.sync m16n8k16 tiles).  Operand
 * tiles are staged in shared memory in the layout they have in global
 * memory (the contiguous dimension stays contiguous, so 16-byte loads fill
 * it), rows padded by 8 elements (16 bytes) so that the 8 rows a fragment
 * load touches fall in different banks.  The fragment layout follows
 * (row_major or col_major per operand and transpose: the OPA/OPB template
 * parameters).
 *   ASYNC (sm_80+, A and B 16-byte vectorizable): a 4-stage cp.async
 *     pipeline; edges by cp.async's zero-fill (src-size < 16); each copy's
 *     source set once per block tile; fragments read by ldmatrix (.trans
 *     where the operand's layout needs it) into mma.sync m16n8k16.
 *   otherwise: WMMA; 2 stages with register prefetch -- the next tile's
 *     global loads are issued before the current tile's MMAs and stored to
 *     shared memory after them; 16-byte loads where the vector is whole and
 *     aligned, predicated scalar loads elsewhere (any m, n, k, ld,
 *     alignment).
 * Epilogue in the kernel: each warp stages one column of its fragments
 * (64 x 16 f32) in shared memory, then every lane handles 8 consecutive
 * rows of one column (D is column-major: rows are contiguous), applies
 * alpha, beta * C (C never read when beta == 0), the bias, ReLU / GELU
 * (gelu.cuh, as gko_gelu_forward), converts to D's type and stores --
 * 16-byte vectors when D (and C) allow, scalars otherwise.
 *
 * bf16 and cp.async need sm_80: those instantiations are empty (trap) when
 * compiled for sm_75, and the plan never selects them there.  Indices are
 * int64 where they address memory; the grid is clamped and the kernel
 * loops (grid-stride over tiles, blockIdx.y over batches). */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <mma.h>
#include <stdint.h>

#include <type_traits>

#include "gemm_wmma.cuh"

using namespace nvcuda;

namespace {

/* 8 consecutive elements of a column of D at offset off (and of C at coff):
 * v[] holds the accumulators; nvalid rows exist; the bias is bias[brow + j]
 * (brow >= 0) or bcol (brow < 0); vec_c / vec_d: 16-byte vector access
 * allowed for a whole group (offsets multiples of 8). */
__device__ __forceinline__ void store_col8(const Epi &e, int64_t off, int64_t coff, float *v,
                                           int64_t brow, float bcol, int nvalid, bool vec_c,
                                           bool vec_d) {
  float cv[8];
#pragma unroll
  for (int j = 0; j < 8; j++) cv[j] = 0.0f;
  if (e.c) {
    if (nvalid == 8 && vec_c) {
      if (e.cd == GKO_DTYPE_F32) {
        const float4 *p = reinterpret_cast<const float4 *>(static_cast<const float *>(e.c) + coff);
        const float4 x0 = p[0], x1 = p[1];
        cv[0] = x0.x, cv[1] = x0.y, cv[2] = x0.z, cv[3] = x0.w;
        cv[4] = x1.x, cv[5] = x1.y, cv[6] = x1.z, cv[7] = x1.w;
      } else {
        const uint4 x = *reinterpret_cast<const uint4 *>(static_cast<const uint16_t *>(e.c) + coff);
        const uint32_t w[4] = {x.x, x.y, x.z, x.w};
#pragma unroll
        for (int j = 0; j < 4; j++) {
          const uint16_t lo = (uint16_t)(w[j] & 0xffff), hi = (uint16_t)(w[j] >> 16);
          if (e.cd == GKO_DTYPE_F16) {
            cv[2 * j] = __half2float(__ushort_as_half(lo));
            cv[2 * j + 1] = __half2float(__ushort_as_half(hi));
          } else {
            cv[2 * j] = __bfloat162float(__ushort_as_bfloat16(lo));
            cv[2 * j + 1] = __bfloat162float(__ushort_as_bfloat16(hi));
          }
        }
      }
    } else {
#pragma unroll
      for (int j = 0; j < 8; j++)
        if (j < nvalid) cv[j] = ld_cd(e.c, coff + j, e.cd);
    }
  }
#pragma unroll
  for (int j = 0; j < 8; j++) {
    const float bv = brow >= 0 ? (j < nvalid ? ld_cd(e.bias, brow + j, e.cd) : 0.0f) : bcol;
    v[j] = finish(v[j], cv[j], bv, e);
  }
  if (nvalid == 8 && vec_d) {
    if (e.cd == GKO_DTYPE_F32) {
      float4 *p = reinterpret_cast<float4 *>(static_cast<float *>(e.d) + off);
      p[0] = make_float4(v[0], v[1], v[2], v[3]);
      p[1] = make_float4(v[4], v[5], v[6], v[7]);
    } else {
      uint32_t w[4];
#pragma unroll
      for (int j = 0; j < 4; j++) {
        uint16_t lo, hi;
        if (e.cd == GKO_DTYPE_F16) {
          lo = __half_as_ushort(__float2half_rn(v[2 * j]));
          hi = __half_as_ushort(__float2half_rn(v[2 * j + 1]));
        } else {
          lo = __bfloat16_as_ushort(__float2bfloat16_rn(v[2 * j]));
          hi = __bfloat16_as_ushort(__float2bfloat16_rn(v[2 * j + 1]));
        }
        w[j] = (uint32_t)lo | ((uint32_t)hi << 16);
      }
      *reinterpret_cast<uint4 *>(static_cast<uint16_t *>(e.d) + off) =
          make_uint4(w[0], w[1], w[2], w[3]);
    }
  } else {
#pragma unroll
    for (int j = 0; j < 8; j++)
      if (j < nvalid) st_cd(e.d, off + j, v[j], e.cd);
  }
}

/* Shared-memory tile of one operand: LINES lines of CONT contiguous
 * elements (+ kPad). */
template <int LINES, int CONT>
struct Tile {
  static constexpr int kLd = CONT + kPad;
  static constexpr int kElems = LINES * kLd;
  static constexpr int kVpl = CONT / 8;                 /* vectors per line */
  static constexpr int kNv = LINES * kVpl / kThreads;   /* vectors per thread */
  static_assert(LINES * kVpl % kThreads == 0, "tile / threads");

  /* g: the operand (batch applied), its element (line, c) at line * ld + c;
   * the tile starts at (line0, c0); lines_end / cont_end bound it. */
  __device__ static void async(uint16_t *s, const uint16_t *g, int64_t ld, int64_t line0,
                               int64_t c0, int64_t lines_end, int64_t cont_end) {
#pragma unroll
    for (int v = 0; v < kNv; v++) {
      const int idx = threadIdx.x + v * kThreads, line = idx / kVpl, cv = (idx % kVpl) * 8;
      const int64_t gl = line0 + line, gc = c0 + cv;
      const int valid = gl < lines_end ? clamp8(cont_end - gc) : 0;
      const uint16_t *src = valid > 0 ? g + gl * ld + gc : g;
      cp_async16(s + line * kLd + cv, src, valid * 2);
    }
  }
  /* Whole k tiles: where k runs (along the lines when KLINE, else along
   * the contiguous dimension) every vector is in range, so a thread's
   * sources move by a fixed offset per k tile.  The other dimension's bounds
   * are applied once per block tile, here: each vector's source at k tile 0
   * and its byte count (16, a partial vector at the edge, or 0; a vector
   * out of range points at line or column 0, so every source stays inside
   * the operand).  This saves the 64-bit index and bound arithmetic of
   * async() on every copy. */
  static constexpr int kLinesPerPass = kThreads / kVpl;
  static_assert(kThreads % kVpl == 0, "a thread's vectors share their column");
  struct Cursor {
    const uint16_t *p[kNv];
    int bytes[kNv];
  };
  template <bool KLINE>
  __device__ static Cursor cursor(const uint16_t *g, int64_t ld, int64_t line0, int64_t c0,
                                  int64_t lines_end, int64_t cont_end) {
    const int line = threadIdx.x / kVpl, cv = (threadIdx.x % kVpl) * 8;
    Cursor c;
#pragma unroll
    for (int v = 0; v < kNv; v++) {
      int64_t gl = line0 + line + v * kLinesPerPass, gc = c0 + cv;
      if constexpr (KLINE) {
        c.bytes[v] = 2 * clamp8(cont_end - gc);
        if (!c.bytes[v]) gc = 0;
      } else {
        c.bytes[v] = gl < lines_end ? 16 : 0;
        if (!c.bytes[v]) gl = 0;
      }
      c.p[v] = g + gl * ld + gc;
    }
    return c;
  }
  /* koff: elements from the cursor's k tile 0 to this one */
  __device__ static void async_whole(uint16_t *s, const Cursor &c, int64_t koff) {
    const int line = threadIdx.x / kVpl, cv = (threadIdx.x % kVpl) * 8;
#pragma unroll
    for (int v = 0; v < kNv; v++)
      cp_async16(s + (line + v * kLinesPerPass) * kLd + cv, c.p[v] + koff, c.bytes[v]);
  }
  __device__ static void load(uint4 (&r)[kNv], const uint16_t *g, int64_t ld, int64_t line0,
                              int64_t c0, int64_t lines_end, int64_t cont_end, bool vec) {
#pragma unroll
    for (int v = 0; v < kNv; v++) {
      const int idx = threadIdx.x + v * kThreads, line = idx / kVpl, cv = (idx % kVpl) * 8;
      const int64_t gl = line0 + line, gc = c0 + cv;
      const int valid = gl < lines_end ? clamp8(cont_end - gc) : 0;
      r[v] = valid > 0 ? load8(g + gl * ld + gc, valid, vec) : make_uint4(0, 0, 0, 0);
    }
  }
  __device__ static void store(uint16_t *s, const uint4 (&r)[kNv]) {
#pragma unroll
    for (int v = 0; v < kNv; v++) {
      const int idx = threadIdx.x + v * kThreads, line = idx / kVpl, cv = (idx % kVpl) * 8;
      *reinterpret_cast<uint4 *>(s + line * kLd + cv) = r[v];
    }
  }
};

/* OPA 0: A stored m x k column-major (m contiguous): tile [BK][BM], WMMA
 * col_major; OPA 1: stored k x m (k contiguous): tile [BM][BK], row_major.
 * OPB 0: B stored k x n (k contiguous): tile [BN][BK], col_major; OPB 1:
 * stored n x k (n contiguous): tile [BK][BN], row_major. */
template <typename C, int OPA, int OPB>
struct TiledLayout {
  using TA = typename std::conditional<OPA == 0, Tile<C::BK, C::BM>, Tile<C::BM, C::BK>>::type;
  using TB = typename std::conditional<OPB == 0, Tile<C::BN, C::BK>, Tile<C::BK, C::BN>>::type;
  using FA = typename std::conditional<OPA == 0, wmma::col_major, wmma::row_major>::type;
  using FB = typename std::conditional<OPB == 0, wmma::col_major, wmma::row_major>::type;
  static constexpr int kStage = TA::kElems + TB::kElems; /* elements per stage */
};

template <int FJ>
struct WmmaAcc {
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> f[4][FJ];
};
template <int FJ>
struct PtxAcc {
  float x[4][2 * FJ][4];
};

template <int OPA, int OPB, bool ASYNC>
constexpr size_t tiled_smem() {
  using C = CfgOf<ASYNC>;
  return (size_t)TiledLayout<C, OPA, OPB>::kStage * 2 * C::S;
}

template <typename T, int OPA, int OPB, bool ASYNC>
__device__ __forceinline__ void tiled_body(const TiledParams &P) {
  using C = CfgOf<ASYNC>;
  using L = TiledLayout<C, OPA, OPB>;
  using TA = typename L::TA;
  using TB = typename L::TB;
  constexpr int S = C::S, BM = C::BM, BN = C::BN, BK = C::BK;
  constexpr int WM = BM / 64, WN = BN / (8 / WM), FJ = WN / 16; /* warps along m; warp tile n */
  /* The cp.async kernel (sm_80+) feeds mma.sync m16n8k16 from ldmatrix
   * itself: WMMA's bf16 fragment loads compile to generic 32-bit loads and
   * MOVM transposes, not ldmatrix, and f16 was faster this way too
   * (measured: docs/performance.md).  The register-prefetch kernel (sm_70/75,
   * or operands that are not 16-byte vectorizable) stays on WMMA. */
  constexpr bool PTX = ASYNC;
  static_assert(sizeof(float) * (kThreads / 32) * 16 * kScratchLd <= tiled_smem<OPA, OPB, ASYNC>(),
                "epilogue scratch within the stages");
  extern __shared__ __align__(128) unsigned char smem_raw[];
  uint16_t *sm = reinterpret_cast<uint16_t *>(smem_raw);
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int wm = warp % WM, wn = warp / WM; /* warp tile: rows wm*64, cols wn*WN */
  const int64_t tiles = P.tiles_m * P.tiles_n;
  const int64_t KT = (P.k + BK - 1) / BK;
  Epi e{P.c, P.d, P.bias, P.alpha, P.c ? P.beta : 0.0f, P.act, P.cd};

  for (int64_t bt = blockIdx.y; bt < P.batch; bt += gridDim.y) {
    const uint16_t *A = P.a + bt * P.sa, *B = P.b + bt * P.sb;
    for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
      /* swizzle: groups of 8 tile rows walk along n together (L2 reuse) */
      const int64_t group = t / (8 * P.tiles_n), first = group * 8;
      const int64_t gsz = P.tiles_m - first < 8 ? P.tiles_m - first : 8;
      const int64_t inner = t - group * 8 * P.tiles_n;
      const int64_t tm = first + inner % gsz, tn = inner / gsz;
      const int64_t m0 = tm * BM, n0 = tn * BN;

      /* WMMA fragments, or (PTX) mma.sync m16n8k16 accumulators: x[i][jn]
       * holds rows i*16.., columns jn*8.. of the warp tile */
      typename std::conditional<PTX, PtxAcc<FJ>, WmmaAcc<FJ>>::type acc;
      if constexpr (PTX) {
#pragma unroll
        for (int i = 0; i < 4; i++)
#pragma unroll
          for (int jn = 0; jn < 2 * FJ; jn++)
#pragma unroll
            for (int r = 0; r < 4; r++) acc.x[i][jn][r] = 0.0f;
      } else {
#pragma unroll
        for (int i = 0; i < 4; i++)
#pragma unroll
          for (int j = 0; j < FJ; j++) wmma::fill_fragment(acc.f[i][j], 0.0f);
      }

      /* loads of k tile kt into stage st; OPA 0 / OPB 1 tiles take k along
       * their lines */
      typename TA::Cursor ca;
      typename TB::Cursor cb;
      if constexpr (ASYNC) {
        if (OPA == 0) ca = TA::template cursor<true>(A, P.lda, 0, m0, P.k, P.m);
        else ca = TA::template cursor<false>(A, P.lda, m0, 0, P.m, P.k);
        if (OPB == 0) cb = TB::template cursor<false>(B, P.ldb, n0, 0, P.n, P.k);
        else cb = TB::template cursor<true>(B, P.ldb, 0, n0, P.k, P.n);
      }
      auto issue_async = [&](int st, int64_t kt) {
        uint16_t *sa = sm + st * L::kStage, *sb = sa + TA::kElems;
        const int64_t k0 = kt * BK;
        if (k0 + BK <= P.k) {
          TA::async_whole(sa, ca, OPA == 0 ? k0 * P.lda : k0);
          TB::async_whole(sb, cb, OPB == 0 ? k0 : k0 * P.ldb);
          return;
        }
        if (OPA == 0) TA::async(sa, A, P.lda, k0, m0, P.k, P.m);
        else TA::async(sa, A, P.lda, m0, k0, P.m, P.k);
        if (OPB == 0) TB::async(sb, B, P.ldb, n0, k0, P.n, P.k);
        else TB::async(sb, B, P.ldb, k0, n0, P.k, P.n);
      };
      uint4 ra[TA::kNv], rb[TB::kNv];
      auto load_regs = [&](int64_t kt) {
        const int64_t k0 = kt * BK;
        if (OPA == 0) TA::load(ra, A, P.lda, k0, m0, P.k, P.m, P.vec_a);
        else TA::load(ra, A, P.lda, m0, k0, P.m, P.k, P.vec_a);
        if (OPB == 0) TB::load(rb, B, P.ldb, n0, k0, P.n, P.k, P.vec_b);
        else TB::load(rb, B, P.ldb, k0, n0, P.k, P.n, P.vec_b);
      };
      auto store_regs = [&](int st) {
        uint16_t *sa = sm + st * L::kStage;
        TA::store(sa, ra);
        TB::store(sa + TA::kElems, rb);
      };
      auto compute = [&](int st) {
        const T *sa = reinterpret_cast<const T *>(sm + st * L::kStage);
        const T *sb = sa + TA::kElems;
        if constexpr (PTX) {
          /* Lane l gives ldmatrix the row address of matrix q = l / 8,
           * row r = l % 8.  A (16 x 16 at row, k): matrices (rows +0, k +0),
           * (+8, +0), (+0, +8), (+8, +8) = a0..a3; stored [m][k] (OPA 1)
           * plainly, stored [k][m] (OPA 0) transposed.  B (k 16 x n 16 at
           * col): matrices (n +0, k +0), (n +0, k +8), (n +8, k +0),
           * (n +8, k +8) = b0, b1 of n-block 0, b0, b1 of n-block 1; stored
           * [n][k] (OPB 0) plainly, [k][n] (OPB 1) transposed. */
          const int q = lane >> 3, r = lane & 7;
          const unsigned sa_u = (unsigned)__cvta_generic_to_shared(sa);
          const unsigned sb_u = (unsigned)__cvta_generic_to_shared(sb);
#pragma unroll
          for (int ks = 0; ks < BK / 16; ks++) {
            uint32_t fb[2 * FJ][2];
#pragma unroll
            for (int j = 0; j < FJ; j++) {
              const int col = wn * WN + j * 16, k = ks * 16;
              if constexpr (OPB == 0)
                ldsm_x4(sb_u + 2 * ((col + r + (q >> 1) * 8) * TB::kLd + k + (q & 1) * 8),
                        fb[2 * j][0], fb[2 * j][1], fb[2 * j + 1][0], fb[2 * j + 1][1]);
              else
                ldsm_x4_trans(sb_u + 2 * ((k + r + (q & 1) * 8) * TB::kLd + col + (q >> 1) * 8),
                              fb[2 * j][0], fb[2 * j][1], fb[2 * j + 1][0], fb[2 * j + 1][1]);
            }
#pragma unroll
            for (int i = 0; i < 4; i++) {
              const int row = wm * 64 + i * 16, k = ks * 16;
              uint32_t fa[4];
              if constexpr (OPA == 1)
                ldsm_x4(sa_u + 2 * ((row + r + (q & 1) * 8) * TA::kLd + k + (q >> 1) * 8), fa[0],
                        fa[1], fa[2], fa[3]);
              else
                ldsm_x4_trans(sa_u + 2 * ((k + r + (q >> 1) * 8) * TA::kLd + row + (q & 1) * 8),
                              fa[0], fa[1], fa[2], fa[3]);
#pragma unroll
              for (int jn = 0; jn < 2 * FJ; jn++)
                mma16816<T>(acc.x[i][jn], fa[0], fa[1], fa[2], fa[3], fb[jn][0], fb[jn][1]);
            }
          }
        } else {
#pragma unroll
          for (int ks = 0; ks < BK / 16; ks++) {
            wmma::fragment<wmma::matrix_b, 16, 16, 16, T, typename L::FB> fb[FJ];
#pragma unroll
            for (int j = 0; j < FJ; j++) {
              const int col = wn * WN + j * 16;
              const T *p = OPB == 0 ? sb + col * TB::kLd + ks * 16 : sb + ks * 16 * TB::kLd + col;
              wmma::load_matrix_sync(fb[j], p, TB::kLd);
            }
#pragma unroll
            for (int i = 0; i < 4; i++) {
              wmma::fragment<wmma::matrix_a, 16, 16, 16, T, typename L::FA> fa;
              const int row = wm * 64 + i * 16;
              const T *p = OPA == 0 ? sa + ks * 16 * TA::kLd + row : sa + row * TA::kLd + ks * 16;
              wmma::load_matrix_sync(fa, p, TA::kLd);
#pragma unroll
              for (int j = 0; j < FJ; j++) wmma::mma_sync(acc.f[i][j], fa, fb[j], acc.f[i][j]);
            }
          }
        }
      };

      if constexpr (ASYNC) {
#pragma unroll
        for (int st = 0; st < S - 1; st++) {
          if (st < KT) issue_async(st, st);
          cp_async_commit();
        }
        for (int64_t kt = 0; kt < KT; kt++) {
          cp_async_wait<S - 2>();
          __syncthreads(); /* tile kt visible; stage (kt - 1) % S free */
          if (kt + S - 1 < KT) issue_async((int)((kt + S - 1) % S), kt + S - 1);
          cp_async_commit();
          compute((int)(kt % S));
        }
        cp_async_wait<0>();
      } else {
        prefetch_pipeline(KT, load_regs, store_regs, compute);
      }
      __syncthreads(); /* every warp is done with the stages: reuse as scratch */

      /* ---- epilogue: one column of fragments (64 x 16) at a time ---- */
      float *scr = reinterpret_cast<float *>(smem_raw) + warp * (16 * kScratchLd);
      const int rg = lane & 7, cc = lane >> 3;
      const int64_t row0 = m0 + wm * 64 + rg * 8;
      const int nvalid = clamp8(P.m - row0);
      void *D = static_cast<char *>(P.d) + bt * P.sd * (P.cd == GKO_DTYPE_F32 ? 4 : 2);
      Epi eb = e;
      eb.d = D;
      if (P.c) eb.c = static_cast<const char *>(P.c) + bt * P.sc * (P.cd == GKO_DTYPE_F32 ? 4 : 2);
      const char *bias = P.bias_mode ? static_cast<const char *>(P.bias) +
                                           bt * P.sbias * (P.cd == GKO_DTYPE_F32 ? 4 : 2)
                                     : nullptr;
      eb.bias = bias;
#pragma unroll
      for (int j = 0; j < FJ; j++) {
        if constexpr (PTX) {
          /* D(row, col) of this 64 x 16 column group at scr[col * ld + row]:
           * lane (g, t) writes rows g, g + 8 of columns 2t, 2t + 1 -- banks
           * 8t + g, all distinct */
          const int g = lane >> 2, t = lane & 3;
#pragma unroll
          for (int i = 0; i < 4; i++)
#pragma unroll
            for (int h = 0; h < 2; h++) {
              const float *x = acc.x[i][2 * j + h];
              float *o = scr + (h * 8 + 2 * t) * kScratchLd + i * 16 + g;
              o[0] = x[0], o[kScratchLd] = x[1], o[8] = x[2], o[kScratchLd + 8] = x[3];
            }
        } else {
#pragma unroll
          for (int i = 0; i < 4; i++)
            wmma::store_matrix_sync(scr + i * 16, acc.f[i][j], kScratchLd, wmma::mem_col_major);
        }
        __syncwarp();
#pragma unroll
        for (int q = 0; q < 4; q++) {
          const int c = cc + 4 * q;
          const int64_t col = n0 + wn * WN + j * 16 + c;
          if (nvalid > 0 && col < P.n) {
            float v[8];
            const float4 *s4 = reinterpret_cast<const float4 *>(scr + c * kScratchLd + rg * 8);
            const float4 x0 = s4[0], x1 = s4[1];
            v[0] = x0.x, v[1] = x0.y, v[2] = x0.z, v[3] = x0.w;
            v[4] = x1.x, v[5] = x1.y, v[6] = x1.z, v[7] = x1.w;
            const float bc = P.bias_mode == 2 ? ld_cd(bias, col, P.cd) : 0.0f;
            store_col8(eb, col * P.ldd + row0, col * P.ldc + row0, v,
                       P.bias_mode == 1 ? row0 : -1, bc, nvalid, P.vec_c, P.vec_d);
          }
        }
        __syncwarp();
      }
      __syncthreads(); /* scratch free before the next tile's loads */
    }
  }
}

/* Two blocks per SM (128 registers) for the cp.async kernel on sm_90, where
 * it compiles without spills; one elsewhere (sm_80/86/89 spill at 128). */
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
constexpr int kTiledAsyncMinBlocks = 2;
#else
constexpr int kTiledAsyncMinBlocks = 1;
#endif

template <typename T, int OPA, int OPB, bool ASYNC>
__global__ void __launch_bounds__(kThreads, ASYNC ? kTiledAsyncMinBlocks : 1)
    wmma_tiled(TiledParams P) {
  if constexpr (enabled<T, ASYNC>::value) tiled_body<T, OPA, OPB, ASYNC>(P);
  else __trap();
}

/* ---- the kernel table (gk_wmma::tiled_kernel) ---- */

typedef void (*tiled_fn)(TiledParams);

/* [dtype f16/bf16][opa][opb][async] */
#define GK_TILED_OPS(T, A)                                                                 \
  {{wmma_tiled<T, A, 0, false>, wmma_tiled<T, A, 0, true>},                                \
   {wmma_tiled<T, A, 1, false>, wmma_tiled<T, A, 1, true>}}
const tiled_fn kTiled[2][2][2][2] = {{GK_TILED_OPS(__half, 0), GK_TILED_OPS(__half, 1)},
                                     {GK_TILED_OPS(__nv_bfloat16, 0),
                                      GK_TILED_OPS(__nv_bfloat16, 1)}};
const size_t kTiledSmem[2][2][2] = {
    {{tiled_smem<0, 0, false>(), tiled_smem<0, 0, true>()},
     {tiled_smem<0, 1, false>(), tiled_smem<0, 1, true>()}},
    {{tiled_smem<1, 0, false>(), tiled_smem<1, 0, true>()},
     {tiled_smem<1, 1, false>(), tiled_smem<1, 1, true>()}}};

} // namespace

const void *gk_wmma::tiled_kernel(int dt, int opa, int opb, int async) {
  return (const void *)kTiled[dt][opa][opb][async];
}

size_t gk_wmma::tiled_smem_bytes(int opa, int opb, int async) {
  return kTiledSmem[opa][opb][async];
}
