/* gemm_wmma.cu -- gko's own Tensor-Core GEMM (nvcuda::wmma, f16/bf16 inputs,
 * f32 accumulation, fused epilogue), in the column-major "lt view" of
 * kernels/gemm_wmma.h:
 *
 *   D (m x n) = act(alpha * op(A) op(B) + beta * C + bias)
 *
 * Two kernels, one file (llm.c style: the simple structure first).
 *
 * 1. TILED: 128 x 128 block tiles, k in steps of 32, 8 warps of 64 x 32
 *    (4 x 2 WMMA 16x16x16 fragments each, or 4 x 4 mma.sync m16n8k16
 *    tiles).  Operand tiles are staged in shared memory in the layout they
 *    have in global memory (the contiguous dimension stays contiguous, so
 *    16-byte loads fill it), rows padded by 8 elements (16 bytes) so that
 *    the 8 rows a fragment load touches fall in different banks.  The
 *    fragment layout follows (row_major or col_major per operand and
 *    transpose: the OPA/OPB template parameters).
 *      ASYNC (sm_80+, A and B 16-byte vectorizable): a 4-stage cp.async
 *        pipeline; edges by cp.async's zero-fill (src-size < 16); each
 *        copy's source set once per block tile; fragments read by
 *        ldmatrix (.trans where the operand's layout needs it) into
 *        mma.sync m16n8k16.
 *      otherwise: WMMA; 2 stages with register prefetch -- the next tile's global
 *        loads are issued before the current tile's MMAs and stored to
 *        shared memory after them; 16-byte loads where the vector is whole
 *        and aligned, predicated scalar loads elsewhere (any m, n, k, ld,
 *        alignment).
 *    Epilogue in the kernel: each warp stages one column of its fragments
 *    (64 x 16 f32) in shared memory, then every lane handles 8 consecutive
 *    rows of one column (D is column-major: rows are contiguous), applies
 *    alpha, beta * C (C never read when beta == 0), the bias, ReLU / GELU
 *    (gelu.cuh, as gko_gelu_forward), converts to D's type and stores --
 *    16-byte vectors when D (and C) allow, scalars otherwise.
 *
 * 2. SKINNY: min(m, n) <= 16 (decode, one token or a few).  The big
 *    operand W (nb x k: the weights) is streamed once; the small one X
 *    (ns <= 16 rows) is staged per k tile next to it (its missing rows are
 *    zeros).  Y = W X^T as WMMA 16x16x16 with W as matrix_a and X^T as
 *    matrix_b.  A block owns bnw rows of W (16, 32 or 64) and a k range;
 *    its 8 warps split the fragments' rows and the k steps, and sum their
 *    accumulators in shared memory in a fixed order.  splits == 1: the
 *    epilogue runs in the kernel.  splits > 1: each block writes f32
 *    partial sums to the workspace and skinny_reduce sums the splits in
 *    split order and applies the epilogue -- no atomics, so results are
 *    bitwise identical from run to run.  Stages: 4 with cp.async (W and X
 *    16-byte vectorizable), else 2 with register prefetch.
 *
 * bf16 WMMA and cp.async need sm_80: those instantiations are empty (trap)
 * when compiled for sm_75, and the plan never selects them there.
 * Indices are int64 where they address memory; grids are clamped and the
 * kernels loop (grid-stride over tiles, blockIdx.y over batches). */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <mma.h>
#include <stdint.h>

#include <type_traits>

#include "gemm_wmma.h"
#include "common.cuh"
#include "gelu.cuh"

using namespace nvcuda;

namespace {

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
constexpr bool kSm80 = false;
#else
constexpr bool kSm80 = true;
#endif

/* the instantiation has code on this architecture */
template <typename T, bool ASYNC>
struct enabled {
  static constexpr bool value = kSm80 || (!ASYNC && std::is_same<T, __half>::value);
};

constexpr int kThreads = 256; /* both kernels: 8 warps */
constexpr int kPad = 8;       /* elements of padding per shared-memory row */

/* ---- TILED geometry ---- */
/* Tiled kernel's block tile: WM x (8 / WM) warps, each 64 rows x 16 FJ
 * columns of D (4 x FJ accumulator fragments); BK-wide k tiles, S stages. */
template <int WM, int FJ, int BK_, int S_>
struct TiledCfg {
  static constexpr int BM = 64 * WM, BN = 16 * FJ * (8 / WM), BK = BK_, S = S_;
};
/* Register prefetch (sm_70/75) and cp.async (sm_80+) take the same tile.
 * Measured against it on the H200 (docs/performance.md, "The tiled WMMA
 * kernel: copy arithmetic out of the main loop"): 128 x 256 and
 * 256 x 128 tiles (64 x 64 per warp, one block per SM) were 1.3x slower
 * at 4096^3; BK = 64 with 3 stages was 2-6 % faster at 4096^3 and 8192^3
 * but 3 % slower at BERT FFN1, and needs 110 KB per block, over sm_86/89's
 * 99 KB. */
using SyncCfg = TiledCfg<2, 2, 32, 2>;
using AsyncCfg = TiledCfg<2, 2, 32, 4>;
template <bool ASYNC>
using CfgOf = typename std::conditional<ASYNC, AsyncCfg, SyncCfg>::type;
constexpr int kScratchLd = 64 + 4; /* epilogue staging: 64 rows, f32 */

/* ---- SKINNY geometry: bk = kSkinnyTile / bnw, so a W tile is 8 KB; the
 * cp.async pipeline is 4..8 stages deep (chosen per plan), else 2 ---- */
constexpr int kSkinnyTile = 4096;
constexpr int kSkinnyMinStages = 4, kSkinnyMaxStages = 8, kSkinnySyncStages = 2;

/* ---- cp.async (sm_80+) ------------------------------------------------------ */

/* L2LINE: with the hint to fetch the whole 128-byte L2 line around gmem
 * (PTX ISA, cp.async's .L2::128B prefetch size) */
template <bool L2LINE = false>
__device__ __forceinline__ void cp_async16(void *smem, const void *gmem, int src_bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const unsigned s = (unsigned)__cvta_generic_to_shared(smem);
  if constexpr (L2LINE)
    asm volatile("cp.async.cg.shared.global.L2::128B [%0], [%1], 16, %2;\n" ::"r"(s), "l"(gmem),
                 "r"(src_bytes));
  else
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(gmem),
                 "r"(src_bytes));
#endif
}
__device__ __forceinline__ void cp_async_commit() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;\n" ::);
#endif
}
template <int N>
__device__ __forceinline__ void cp_async_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
#endif
}
/* the same for a run-time count (the instruction takes an immediate);
 * unreferenced where the cp.async kernels compile to a trap (sm_75) */
[[maybe_unused]] __device__ __forceinline__ void cp_async_wait_dyn(int n) {
  switch (n) {
    case 0: cp_async_wait<0>(); break;
    case 1: cp_async_wait<1>(); break;
    case 2: cp_async_wait<2>(); break;
    case 3: cp_async_wait<3>(); break;
    case 4: cp_async_wait<4>(); break;
    case 5: cp_async_wait<5>(); break;
    default: cp_async_wait<6>(); break;
  }
}

/* ---- plain loads ------------------------------------------------------------- */

/* 8 consecutive 16-bit elements at p (p[0..valid) exist, the rest read as
 * 0); vec: p is 16-byte aligned. */
__device__ __forceinline__ uint4 load8(const uint16_t *p, int valid, bool vec) {
  if (valid >= 8 && vec) return __ldg(reinterpret_cast<const uint4 *>(p));
  uint32_t w[4];
#pragma unroll
  for (int j = 0; j < 4; j++) {
    const uint32_t lo = 2 * j < valid ? __ldg(p + 2 * j) : 0u;
    const uint32_t hi = 2 * j + 1 < valid ? __ldg(p + 2 * j + 1) : 0u;
    w[j] = lo | (hi << 16);
  }
  return make_uint4(w[0], w[1], w[2], w[3]);
}

/* The same with elements `stride` apart (stride 1: load8). */
__device__ __forceinline__ uint4 load8s(const uint16_t *p, int64_t stride, int valid, bool vec) {
  if (stride == 1) return load8(p, valid, vec);
  uint32_t w[4];
#pragma unroll
  for (int j = 0; j < 4; j++) {
    const uint32_t lo = 2 * j < valid ? __ldg(p + (2 * j) * stride) : 0u;
    const uint32_t hi = 2 * j + 1 < valid ? __ldg(p + (2 * j + 1) * stride) : 0u;
    w[j] = lo | (hi << 16);
  }
  return make_uint4(w[0], w[1], w[2], w[3]);
}

__device__ __forceinline__ int clamp8(int64_t v) { return v <= 0 ? 0 : v >= 8 ? 8 : (int)v; }

/* ---- mma.sync and ldmatrix (sm_80+) -------------------------------------------- */

/* D += A B, m16n8k16 (PTX ISA, mma.sync), f32 accumulate: lane (g = lane / 4,
 * t = lane % 4) holds a0..a3 = A(g, 2t..), A(g + 8, 2t..), A(g, 2t + 8..),
 * A(g + 8, 2t + 8..), b0, b1 = B(2t.., g), B(2t + 8.., g) and d = D(g, 2t),
 * D(g, 2t + 1), D(g + 8, 2t), D(g + 8, 2t + 1). */
template <typename T>
__device__ __forceinline__ void mma16816(float (&d)[4], uint32_t a0, uint32_t a1, uint32_t a2,
                                         uint32_t a3, uint32_t b0, uint32_t b1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  if constexpr (std::is_same<T, __half>::value)
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  else
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
#endif
}

/* ldmatrix.x4.trans (sm_75+; PTX ISA "ldmatrix"): four 8 x 8 matrices of
 * 16-bit elements, lanes 8 i .. 8 i + 7 giving the shared addresses of
 * matrix i's 16-byte rows; lane (g, t) receives of matrix i the elements
 * (row 2t, column g) and (row 2t + 1, column g) -- the transposed
 * matrix's A-fragment pair. */
[[maybe_unused]] __device__ __forceinline__ void ldsm_x4_trans(unsigned addr, uint32_t &r0,
                                                               uint32_t &r1, uint32_t &r2,
                                                               uint32_t &r3) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
               : "r"(addr));
#endif
}

/* ldmatrix.x4 (sm_75+; PTX ISA "ldmatrix"): the same, not transposed:
 * lane (g, t) receives of matrix i the elements (row g, columns 2t and
 * 2t + 1). */
[[maybe_unused]] __device__ __forceinline__ void ldsm_x4(unsigned addr, uint32_t &r0, uint32_t &r1,
                                                         uint32_t &r2, uint32_t &r3) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
               : "r"(addr));
#endif
}

/* ---- epilogue ------------------------------------------------------------------- */

struct Epi {
  const void *c;    /* NULL: beta == 0, C not read */
  void *d;
  const void *bias; /* NULL: none */
  float alpha, beta;
  int act, cd;      /* cd: gko_dtype_t of C, D, bias */
};

__device__ __forceinline__ float ld_cd(const void *p, int64_t i, int cd) {
  if (cd == GKO_DTYPE_F32) return static_cast<const float *>(p)[i];
  if (cd == GKO_DTYPE_F16) return __half2float(static_cast<const __half *>(p)[i]);
  return __bfloat162float(static_cast<const __nv_bfloat16 *>(p)[i]);
}

__device__ __forceinline__ void st_cd(void *p, int64_t i, float v, int cd) {
  if (cd == GKO_DTYPE_F32) static_cast<float *>(p)[i] = v;
  else if (cd == GKO_DTYPE_F16) static_cast<__half *>(p)[i] = __float2half_rn(v);
  else static_cast<__nv_bfloat16 *>(p)[i] = __float2bfloat16_rn(v);
}

/* The activation with gko_gelu_forward's math: the accurate form for f32
 * outputs, the fast one for f16/bf16. */
__device__ __forceinline__ float activate(float x, int act, int cd) {
  const bool acc = cd == GKO_DTYPE_F32;
  switch (act) {
    case 1: return x != x ? x : fmaxf(x, 0.0f);
    case 2: return acc ? gk::gelu_fwd<0, true>(x) : gk::gelu_fwd<0, false>(x);
    case 3: return acc ? gk::gelu_fwd<1, true>(x) : gk::gelu_fwd<1, false>(x);
  }
  return x;
}

/* act(alpha * acc + beta * c + bias) */
__device__ __forceinline__ float finish(float acc, float cv, float bv, const Epi &e) {
  return activate(fmaf(e.beta, cv, e.alpha * acc) + bv, e.act, e.cd);
}

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

/* ================================ TILED ================================ */

struct TiledParams {
  const uint16_t *a, *b;
  const void *c;
  void *d;
  const void *bias;
  int64_t m, n, k, batch;
  int64_t lda, ldb, ldc, ldd;
  int64_t sa, sb, sc, sd, sbias;
  int64_t tiles_m, tiles_n;
  float alpha, beta;
  int act, cd, bias_mode; /* bias_mode: 0 none, 1 bias[row], 2 bias[col] */
  int vec_a, vec_b, vec_c, vec_d;
};

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
   * MOVM transposes, not ldmatrix, and f16 was 3-4 % faster this way too
   * (H200, docs/performance.md).  The register-prefetch kernel (sm_70/75,
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
        load_regs(0);
        store_regs(0);
        __syncthreads();
        for (int64_t kt = 0; kt < KT; kt++) {
          if (kt + 1 < KT) load_regs(kt + 1); /* in flight during the MMAs */
          compute((int)(kt & 1));
          if (kt + 1 < KT) store_regs((int)((kt + 1) & 1));
          __syncthreads();
        }
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

/* =============================== SKINNY =============================== */

struct SkinnyParams {
  const uint16_t *w, *x; /* W(j, p) at w + j * swj + p * swp; X(i, p) at x + i * sxi + p * sxp */
  const void *c;
  void *d;               /* D(j, i) at d + j * sdj + i * sdi; C likewise */
  const void *bias;      /* bias[j] (bias_on_j) or bias[i] */
  float *partials;       /* splits > 1: [batch][splits][ns][nb] */
  int64_t nb, ns, k, batch;
  int64_t swj, swp, sxi, sxp, sdj, sdi, scj, sci;
  int64_t bw, bx, bc, bd, bbias; /* batch strides (elements) */
  int64_t tiles, kchunk;
  int splits, bnw, bk, stages;
  float alpha, beta;
  int act, cd, has_bias, bias_on_j;
  int vec_w, vec_x; /* 16-byte loads allowed along W's / X's contiguous dimension */
  int kw;           /* DECODE: warps per 16-row tile */
  int per;          /* DECODE: 16-row tiles per block (per * kw <= 8) */
};

/* SKINNY, DECODE: the epilogue of batch bt (C and D at their batch
 * offsets; beta only when C is given) and that batch's bias (NULL: none). */
__device__ __forceinline__ Epi skinny_epi(const SkinnyParams &P, int64_t bt, const char *&bias) {
  const int cdb = P.cd == GKO_DTYPE_F32 ? 4 : 2;
  bias = P.has_bias ? static_cast<const char *>(P.bias) + bt * P.bbias * cdb : nullptr;
  return Epi{P.c ? static_cast<const char *>(P.c) + bt * P.bc * cdb : nullptr,
             static_cast<char *>(P.d) + bt * P.bd * cdb, nullptr, P.alpha,
             P.c ? P.beta : 0.0f, P.act, P.cd};
}

template <int WK>
struct SkinnyLayout {
  /* W tile: WK: [bnw][bk] (k contiguous), else [bk][bnw]; X tile [16][bk] */
  __device__ __host__ static int w_ld(int bnw, int bk) { return WK ? bk + kPad : bnw + kPad; }
  __device__ __host__ static int w_elems(int bnw, int bk) {
    return WK ? bnw * (bk + kPad) : bk * (bnw + kPad);
  }
  __device__ __host__ static int x_elems(int bk) { return 16 * (bk + kPad); }
  __device__ __host__ static int stage(int bnw, int bk) { return w_elems(bnw, bk) + x_elems(bk); }
};

/* The W tile (kSkinnyTile elements) as 2 vectors per thread, the X tile
 * ([16][bk], only rows < ns) as up to 2. */
constexpr int kWv = kSkinnyTile / 8 / kThreads;

template <typename T, int WK, bool ASYNC>
__device__ __forceinline__ void skinny_body(const SkinnyParams &P) {
  using L = SkinnyLayout<WK>;
  const int S = ASYNC ? P.stages : kSkinnySyncStages;
  extern __shared__ __align__(128) unsigned char smem_raw[];
  uint16_t *sm = reinterpret_cast<uint16_t *>(smem_raw);
  const int bnw = P.bnw, bk = P.bk, nwf = bnw / 16, kg = 8 / nwf;
  const int warp = threadIdx.x >> 5, f = warp % nwf, g = warp / nwf;
  const int wld = L::w_ld(bnw, bk), xld = bk + kPad;
  const int welems = L::w_elems(bnw, bk), stage = L::stage(bnw, bk);
  /* W tile as vectors along its contiguous dimension */
  const int w_cont = WK ? bk : bnw, w_vpl = w_cont / 8;
  const int x_vpl = bk / 8, x_vectors = (int)P.ns * x_vpl;

  /* X rows ns..15 are zeros in every stage, for the whole kernel */
  for (int st = 0; st < S; st++)
    for (int i = threadIdx.x; i < (16 - (int)P.ns) * xld; i += kThreads)
      sm[st * stage + welems + P.ns * xld + i] = 0;
  __syncthreads();

  const int64_t units = P.tiles * P.splits;
  for (int64_t bt = blockIdx.y; bt < P.batch; bt += gridDim.y) {
    const uint16_t *W = P.w + bt * P.bw, *X = P.x + bt * P.bx;
    for (int64_t u = blockIdx.x; u < units; u += gridDim.x) {
      const int64_t tile = u / P.splits;
      const int sp = (int)(u - tile * P.splits);
      const int64_t j0 = tile * bnw, kb = sp * P.kchunk;
      const int64_t ke = kb + P.kchunk < P.k ? kb + P.kchunk : P.k;
      const int64_t KT = (ke - kb + bk - 1) / bk;

      wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
      wmma::fill_fragment(acc, 0.0f);

      /* vector v of the W tile at k offset k0: its global address, valid
       * elements and shared-memory offset */
      struct Vec {
        const uint16_t *src;
        int valid, off;
      };
      auto w_vec = [&](int v, int64_t k0) {
        const int line = v / w_vpl, cv = (v % w_vpl) * 8;
        const int64_t gj = WK ? j0 + line : j0 + cv, gp = WK ? k0 + cv : k0 + line;
        const bool in = WK ? gj < P.nb : gp < ke;
        Vec r;
        r.valid = in ? clamp8(WK ? ke - gp : P.nb - gj) : 0;
        r.src = r.valid > 0 ? W + gj * P.swj + gp * P.swp : W;
        r.off = line * wld + cv;
        return r;
      };
      auto x_vec = [&](int v, int64_t k0) {
        const int row = v / x_vpl, cv = (v % x_vpl) * 8;
        const int64_t gp = k0 + cv;
        Vec r;
        r.valid = clamp8(ke - gp);
        r.src = r.valid > 0 ? X + row * P.sxi + gp * P.sxp : X;
        r.off = row * xld + cv;
        return r;
      };
      auto issue_async = [&](int st, int64_t kt) {
        uint16_t *sw = sm + st * stage, *sx = sw + welems;
        const int64_t k0 = kb + kt * bk;
#pragma unroll
        for (int q = 0; q < kWv; q++) {
          const Vec r = w_vec(threadIdx.x + q * kThreads, k0);
          cp_async16(sw + r.off, r.src, r.valid * 2);
        }
        for (int v = threadIdx.x; v < x_vectors; v += kThreads) {
          const Vec r = x_vec(v, k0);
          cp_async16(sx + r.off, r.src, r.valid * 2);
        }
      };
      uint4 rw[kWv], rx[2];
      auto load_regs = [&](int64_t kt) {
        const int64_t k0 = kb + kt * bk;
#pragma unroll
        for (int q = 0; q < kWv; q++) {
          const Vec r = w_vec(threadIdx.x + q * kThreads, k0);
          rw[q] = r.valid > 0 ? load8s(r.src, WK ? P.swp : P.swj, r.valid, P.vec_w)
                              : make_uint4(0, 0, 0, 0);
        }
#pragma unroll
        for (int q = 0; q < 2; q++) {
          const int v = threadIdx.x + q * kThreads;
          rx[q] = make_uint4(0, 0, 0, 0);
          if (v < x_vectors) {
            const Vec r = x_vec(v, k0);
            if (r.valid > 0) rx[q] = load8s(r.src, P.sxp, r.valid, P.vec_x);
          }
        }
      };
      auto store_regs = [&](int st) {
        uint16_t *sw = sm + st * stage, *sx = sw + welems;
#pragma unroll
        for (int q = 0; q < kWv; q++) {
          const int v = threadIdx.x + q * kThreads;
          *reinterpret_cast<uint4 *>(sw + (v / w_vpl) * wld + (v % w_vpl) * 8) = rw[q];
        }
#pragma unroll
        for (int q = 0; q < 2; q++) {
          const int v = threadIdx.x + q * kThreads;
          if (v < x_vectors)
            *reinterpret_cast<uint4 *>(sx + (v / x_vpl) * xld + (v % x_vpl) * 8) = rx[q];
        }
      };
      auto compute = [&](int st) {
        const T *sw = reinterpret_cast<const T *>(sm + st * stage);
        const T *sx = sw + welems;
        for (int ks = g; ks < bk / 16; ks += kg) {
          using FA = typename std::conditional<WK == 1, wmma::row_major, wmma::col_major>::type;
          wmma::fragment<wmma::matrix_a, 16, 16, 16, T, FA> fa;
          wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::col_major> fb;
          const T *pa = WK ? sw + f * 16 * wld + ks * 16 : sw + ks * 16 * wld + f * 16;
          wmma::load_matrix_sync(fa, pa, wld);
          wmma::load_matrix_sync(fb, sx + ks * 16, xld);
          wmma::mma_sync(acc, fa, fb, acc);
        }
      };

      if constexpr (ASYNC) {
        for (int st = 0; st < S - 1; st++) {
          if (st < KT) issue_async(st, st);
          cp_async_commit();
        }
        int cst = 0, lst = S - 1; /* stages computed and loaded next: kt % S, (kt - 1) % S */
        for (int64_t kt = 0; kt < KT; kt++) {
          cp_async_wait_dyn(S - 2);
          __syncthreads();
          if (kt + S - 1 < KT) issue_async(lst, kt + S - 1);
          cp_async_commit();
          compute(cst);
          lst = cst;
          cst = cst + 1 == S ? 0 : cst + 1;
        }
        cp_async_wait<0>();
      } else {
        load_regs(0);
        store_regs(0);
        __syncthreads();
        for (int64_t kt = 0; kt < KT; kt++) {
          if (kt + 1 < KT) load_regs(kt + 1);
          compute((int)(kt & 1));
          if (kt + 1 < KT) store_regs((int)((kt + 1) & 1));
          __syncthreads();
        }
      }
      __syncthreads(); /* all warps done with the stages */

      /* ---- sum the k groups in a fixed order, then epilogue or partials */
      float *red = reinterpret_cast<float *>(smem_raw + (size_t)S * stage * 2);
      wmma::store_matrix_sync(red + warp * 256, acc, 16, wmma::mem_col_major);
      __syncthreads();
      const char *bias;
      const Epi e = skinny_epi(P, bt, bias);
      for (int idx = threadIdx.x; idx < bnw * P.ns; idx += kThreads) {
        const int jl = idx % bnw, i = idx / bnw, ff = jl / 16, r = jl % 16;
        const int64_t j = j0 + jl;
        if (j >= P.nb) continue;
        float s = 0.0f;
        for (int gg = 0; gg < kg; gg++) s += red[(gg * nwf + ff) * 256 + i * 16 + r];
        if (P.splits > 1) {
          P.partials[((bt * P.splits + sp) * P.ns + i) * P.nb + j] = s;
        } else {
          const float cv = e.c ? ld_cd(e.c, j * P.scj + i * P.sci, P.cd) : 0.0f;
          const float bv = bias ? ld_cd(bias, P.bias_on_j ? j : i, P.cd) : 0.0f;
          st_cd(e.d, j * P.sdj + i * P.sdi, finish(s, cv, bv, e), P.cd);
        }
      }
      __syncthreads(); /* red and the stages free for the next unit */
    }
  }
}

template <typename T, int WK, bool ASYNC>
__global__ void __launch_bounds__(kThreads, 1) wmma_skinny(SkinnyParams P) {
  if constexpr (enabled<T, ASYNC>::value) skinny_body<T, WK, ASYNC>(P);
  else __trap();
}

/* Sums the splits of every output in split order and applies the epilogue. */
__global__ void __launch_bounds__(kThreads) skinny_reduce(SkinnyParams P) {
  const int64_t per_batch = P.ns * P.nb, total = per_batch * P.batch;
  const int cdb = P.cd == GKO_DTYPE_F32 ? 4 : 2;
  for (int64_t idx = (int64_t)blockIdx.x * kThreads + threadIdx.x; idx < total;
       idx += (int64_t)gridDim.x * kThreads) {
    const int64_t bt = idx / per_batch, rem = idx - bt * per_batch;
    const int64_t i = rem / P.nb, j = rem - i * P.nb;
    const float *p = P.partials + (bt * P.splits * P.ns + i) * P.nb + j;
    float s = 0.0f;
    for (int sp = 0; sp < P.splits; sp++) s += p[(int64_t)sp * P.ns * P.nb];
    Epi e{P.c ? static_cast<const char *>(P.c) + bt * P.bc * cdb : nullptr,
          static_cast<char *>(P.d) + bt * P.bd * cdb, nullptr, P.alpha, P.c ? P.beta : 0.0f,
          P.act, P.cd};
    const float cv = e.c ? ld_cd(e.c, j * P.scj + i * P.sci, P.cd) : 0.0f;
    const float bv = P.has_bias ? ld_cd(static_cast<const char *>(P.bias) + bt * P.bbias * cdb,
                                        P.bias_on_j ? j : i, P.cd)
                                : 0.0f;
    st_cd(e.d, j * P.sdj + i * P.sdi, finish(s, cv, bv, e), P.cd);
  }
}

/* =============================== DECODE ===============================
 * The skinny case again (ns <= 16 rows of X against the nb x k weights W),
 * on sm_80+ when X has k contiguous and W either k (the nn.Linear layout,
 * y = x W^T) or its rows (KN: y = x B, B stored [k, n]; the ring then
 * holds k lines of 16 rows, read transposed by ldmatrix; decode_knw_body,
 * below, the same with 64-row tiles), with 16-byte vectors.  Each warp feeds mma.sync m16n8k16 (PTX
 * ISA, "Matrix fragments for mma.m16n8k16") with W as the A operand (16
 * rows) and X^T as B (8 columns; two MMAs when ns > 8), every operand piece
 * a 16-byte vector.  The trick that makes that possible: a dot product does
 * not care in which order k is summed, so inside every 32-wide k block the
 * fragment's k slots are mapped to memory such that each lane's slots are 8
 * consecutive elements:
 *   lane (g = lane / 4, t = lane % 4) takes W[row g][kb + 8t .. kb + 8t + 7],
 *   W[row g + 8][the same] and X[row g][the same]; mma step s in {0, 1}
 *   takes words 2s and 2s + 1 of each as its slots {2t, 2t+1} and
 *   {2t+8, 2t+9} -- the same words in A and B, so the products pair up.
 * W's pieces travel through a per-warp cp.async ring in shared memory
 * (kDecodeStages slots of one 128-wide k span x 16 rows; two spans per
 * warp in flight), copied two whole rows per instruction and read back in
 * the fragment's order after a warp barrier; X's are loaded into registers
 * (L1 / L2 hits: every tile reads X).  kw warps (1, 2, 4 or 8, chosen by
 * the plan so that all warps are resident at once) share a 16-row tile
 * and take its spans in turn (warp w: spans w, w + kw, ...); a block of
 * 8 warps holds 8 / kw tiles; the kw warps of a tile sum their
 * accumulators in shared memory in warp order.
 * splits == 1: the epilogue runs here; else f32 partials and
 * skinny_reduce, as SKINNY (deterministic either way). */
constexpr int kDecodeRows = 16, kDecodeUnroll = 4, kDecodeSpan = 32 * kDecodeUnroll;
static_assert(kDecodeUnroll == 4 && kDecodeRows == 16,
              "the ring's copy and read maps assume 16 rows x 16 pieces per span");
constexpr int kDecodeStages = 3;
constexpr size_t kDecodeSmem = (size_t)kDecodeStages * 2 * kDecodeUnroll * kThreads * 16;
constexpr int kDecodeWarps = kThreads / 32;

/* Programmatic dependent launch (sm_90+; PTX ISA "griddepcontrol"):
 * launch_dependents lets the next kernel of the stream, if it was launched
 * with programmatic stream serialization, start before this one ends; wait
 * blocks until the kernels this one depends on have completed and their
 * writes are visible (at once when it was launched the ordinary way). */
[[maybe_unused]] __device__ __forceinline__ void pdl_launch_dependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}
[[maybe_unused]] __device__ __forceinline__ void pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

/* DECODE: a warp's k spans of width SPAN in [k0, k1) (warp wk of kw takes
 * spans wk, wk + kw, ...): the first one's k, the stride between them,
 * how many there are and how many are whole (a last, partial one -- k1 -
 * k0 not a multiple of SPAN -- is read directly, element-wise).  None
 * when the warp has no tile (idle). */
struct DecodeSpans {
  int64_t first, step, n, full;
};
template <int SPAN>
__device__ __forceinline__ DecodeSpans decode_spans(int64_t k0, int64_t k1, int kw, int wk,
                                                    bool busy) {
  DecodeSpans d;
  d.step = (int64_t)kw * SPAN;
  d.first = k0 + (int64_t)wk * SPAN;
  d.n = busy && d.first < k1 ? (k1 - d.first + d.step - 1) / d.step : 0;
  d.full = d.n > 0 && k1 - d.first >= SPAN ? (k1 - d.first - SPAN) / d.step + 1 : 0;
  return d;
}

/* DECODE: the ring's first kDecodeStages - 1 spans (of nf whole ones) in
 * flight, one commit group each, then -- once per kernel -- the wait for
 * the kernels ahead: after it their writes are visible to this grid (PTX
 * ISA, griddepcontrol), X's __ldg loads included (X was not read before). */
template <typename Issue>
__device__ __forceinline__ void decode_prologue(Issue &issue, int nf, bool &waited) {
#pragma unroll
  for (int i = 0; i < kDecodeStages - 1; i++) {
    if (i < nf) issue();
    cp_async_commit();
  }
  if (!waited) {
    pdl_wait();
    waited = true;
  }
}

/* DECODE: the end of a unit (group grp of P.per tiles of R rows, k split
 * sp), once every warp has put its accumulators in red[warp][i][row]: the
 * kw warps of a tile summed in warp order, then the f32 partials
 * (splits > 1) or the epilogue.  Between two __syncthreads. */
template <int R>
__device__ __forceinline__ void decode_store(const SkinnyParams &P, const float (*red)[16][R + 1],
                                             int64_t bt, int64_t grp, int sp) {
  const int kw = P.kw, per = P.per;
  const char *bias;
  const Epi e = skinny_epi(P, bt, bias);
  for (int idx = threadIdx.x; idx < per * R * P.ns; idx += kThreads) {
    const int jl = idx % R, rest = idx / R;
    const int i = rest % (int)P.ns, tt = rest / (int)P.ns;
    const int64_t j = (grp * per + tt) * R + jl;
    if (j >= P.nb) continue;
    float s = 0.0f;
    for (int w = tt * kw; w < tt * kw + kw; w++) s += red[w][i][jl];
    if (P.splits > 1) {
      P.partials[((bt * P.splits + sp) * P.ns + i) * P.nb + j] = s;
    } else {
      const float cv = e.c ? ld_cd(e.c, j * P.scj + i * P.sci, P.cd) : 0.0f;
      const float bv = bias ? ld_cd(bias, P.bias_on_j ? j : i, P.cd) : 0.0f;
      st_cd(e.d, j * P.sdj + i * P.sdi, finish(s, cv, bv, e), P.cd);
    }
  }
}

/* KN: W is read with its rows (j) contiguous and k strided by P.swp (x B,
 * B stored [k, n]); else k contiguous (x W^T). */
template <typename T, bool TWO, bool KN>
__device__ __forceinline__ void decode_body(const SkinnyParams &P) {
  __shared__ float red[kDecodeWarps][16][kDecodeRows + 1];
  /* The next kernel may start now: it waits for this kernel's writes
   * itself (griddepcontrol.wait), and another decode kernel finds room
   * only as this one's blocks finish (shared memory). */
  pdl_launch_dependents();
  /* Launched with programmatic stream serialization (W promised static,
   * gko.h), this kernel may run before the kernel ahead of it has
   * finished: only W is read before pdl_wait(); X, C, bias and every
   * write come after it. */
  bool waited = false;
  extern __shared__ __align__(16) unsigned char decode_raw[];
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  /* kw warps per 16-row tile (taking its k spans in turn), per <= 8 / kw
   * tiles per block; warps past per * kw idle */
  const int kw = P.kw, per = P.per, wt = warp / kw, wk = warp % kw;
  const int64_t groups = (P.tiles + per - 1) / per, units = groups * P.splits;
  const uint4 zero = make_uint4(0, 0, 0, 0);
  for (int64_t bt = blockIdx.y; bt < P.batch; bt += gridDim.y) {
    const uint16_t *W = P.w + bt * P.bw, *X = P.x + bt * P.bx;
    for (int64_t u = blockIdx.x; u < units; u += gridDim.x) {
      const int64_t grp = u / P.splits;
      const int sp = (int)(u - grp * P.splits);
      const int64_t j0 = (grp * per + wt) * kDecodeRows, k0 = sp * P.kchunk;
      const int64_t k1 = k0 + P.kchunk < P.k ? k0 + P.kchunk : P.k;
      const bool va = j0 + g < P.nb, vb = j0 + g + 8 < P.nb;
      const bool xa = g < P.ns, xb = TWO && g + 8 < P.ns;
      /* the tail's W: row j's k pieces at 8 t (KN: k strided by swp) */
      const uint16_t *wa = KN ? W + (va ? j0 + g : 0) + 8 * t * P.swp
                              : W + (va ? j0 + g : 0) * P.swj + 8 * t;
      const uint16_t *wb = KN ? W + (vb ? j0 + g + 8 : 0) + 8 * t * P.swp
                              : W + (vb ? j0 + g + 8 : 0) * P.swj + 8 * t;
      const uint16_t *pa = X + (xa ? g : 0) * P.sxi + 8 * t;
      const uint16_t *pb = X + (xb ? g + 8 : 0) * P.sxi + 8 * t;
      float acc0[4] = {0.0f, 0.0f, 0.0f, 0.0f}, acc1[4] = {0.0f, 0.0f, 0.0f, 0.0f};
      /* the warp's spans through a cp.async ring of kDecodeStages slots in
       * shared memory (16 rows x 16 pieces of 16 bytes per slot and warp),
       * kDecodeStages - 1 spans in flight.  Copied coalesced -- lane
       * (hi = lane / 16, c = lane % 16) copies piece c of rows 2i + hi,
       * i = 0..7: two whole 256-byte row pieces per instruction -- and read
       * back by the fragment's lanes after cp.async.wait_group and a warp
       * barrier.  Piece c of row r sits at position c ^ 4 (r & 1) of its
       * row, so that the 8 rows x 4 pieces one read instruction takes fall
       * on all 32 banks, four times each (no conflict).  cp.async zero-fills
       * for rows past nb.  X's pieces of a span (L1 / L2 hits) are loaded
       * into registers before waiting for W's. */
      const DecodeSpans ks = decode_spans<kDecodeSpan>(k0, k1, kw, wk, wt < per && j0 < P.nb);
      const int64_t step = ks.step, first = ks.first, nspan = ks.n, nfull = ks.full;
      /* running pointers and 32-bit counters keep the loop's registers for
       * the data (rows past nb: src-size 0, nothing is read) */
      const int nf = (int)nfull;
      const int hi = lane >> 4, c = lane & 15;
      unsigned vrows = 0; /* bit i: row j0 + 2i + hi exists */
#pragma unroll
      for (int i = 0; i < 8; i++) vrows |= (unsigned)(j0 + 2 * i + hi < P.nb) << i;
      /* KN: a slot holds the span's 128 k lines x 16 j (32 bytes each);
       * lane l copies half h = l & 1 (j0 + 8h .. + 7) of line 16 i + l / 2
       * per instruction i.  Line p's half h sits in the 128-byte group
       * p / 4 at 16-byte unit ((p & 3) << 1 | h) ^ swz, swz = bit 1 of the
       * group to unit bit 2 and bit 2 to unit bit 0: the 8 lines one
       * ldmatrix matrix takes (below) fall on 8 distinct units, and so do
       * a copy instruction's 8 lanes per group.  A warp's line is 32 of
       * a 128-byte L2 line whose rest the neighbouring tiles read soon; the
       * copies ask L2 to fetch the whole line (H200, 1 x 11008 x 4096:
       * 33.5 -> 29.7 us; 256 bytes gained less, docs/performance.md). */
      const int kh = lane & 1;
      const int kbytes = 2 * clamp8(P.nb - j0 - 8 * kh);
      const int64_t rstep = KN ? 16 * P.swp : 2 * P.swj;
      const uint16_t *ic =
          KN ? (kbytes ? W + (first + (lane >> 1)) * P.swp + j0 + 8 * kh : W)
             : (vrows & 1 ? W + (j0 + hi) * P.swj + 8 * c + first : W);
      uint4 *wring = reinterpret_cast<uint4 *>(decode_raw) + warp * (2 * kDecodeUnroll * 32);
      /* KN: instruction i fills groups 4 i .. 4 i + 3, lane l group
       * 4 i + l / 8; the unit's bit 0 flips with the group's bit 2, i.e.
       * with i (cdst for even i, cdst_odd for odd) */
      const int kunit = ((((lane >> 1) & 3) << 1) | kh) ^ (((lane >> 4) & 1) << 2);
      uint4 *cdst = KN ? wring + (lane >> 3) * 8 + kunit : wring + hi * 16 + (c ^ (hi << 2));
      uint4 *cdst_odd = wring + (lane >> 3) * 8 + (kunit ^ 1);
      int ring_in = 0;
      auto issue = [&]() {
        const int so = ring_in * (2 * kDecodeUnroll * kThreads);
        uint4 *slot = cdst + so;
        const uint16_t *src = ic;
#pragma unroll
        for (int i = 0; i < 8; i++) {
          if (KN) {
            cp_async16<true>((i & 1 ? cdst_odd + so : slot) + i * 32, kbytes ? src : W, kbytes);
          } else {
            const bool v = (vrows >> i) & 1;
            cp_async16(slot + i * 32, v ? src : W, v ? 16 : 0);
          }
          src += rstep;
        }
        ic += KN ? step * P.swp : step;
        ring_in = ring_in + 1 == kDecodeStages ? 0 : ring_in + 1;
      };
      decode_prologue(issue, nf, waited);
      /* lane (g, t) takes k piece 4 q + t of rows g and g + 8 (the same k
       * in every row: the MMA pairs W's and X's k slots by t alone), which
       * sits at position 4 (q ^ odd) + t of its row, odd = g & 1 */
      const uint16_t *xpa = pa + first, *xpb = pb + first;
      const int odd = g & 1;
      const uint4 *rse = wring + g * 16 + t + 4 * odd, *rso = wring + g * 16 + t + 4 - 4 * odd;
      /* KN: lane l gives ldmatrix the row address of matrix mt = l / 8, row
       * r = l % 8: j half h = mt & 1, k line p = 32 q + 8 (r / 2) + 2 (mt / 2)
       * + 4 m + (r & 1) for the q-th piece and MMA m -- matrix row 2t / 2t + 1
       * then holds k 8 (4 q + t) + 4 m + 0 / 1 (matrices 0, 1: the A
       * fragment's first k pair) or + 2 / 3 (matrices 2, 3), the k of X's
       * halves that lane (g, t) gives the same MMA.  Line p, half h: group
       * 8 q + 2 (r / 2) + m, unit as for the copies. */
      const int kr = lane & 7, kmt = lane >> 3;
      const int kread = 16 * (kr >> 1) +
                        (((((2 * (kmt >> 1) + (kr & 1)) & 3) << 1) | (kmt & 1)) ^
                         ((((kr >> 1) & 1) << 2) | ((kr >> 2) & 1)));
      const unsigned kaddr = (unsigned)__cvta_generic_to_shared(wring + kread);
      int ring_out = 0;
      for (int i = 0; i < nf; i++) {
        uint4 ya[kDecodeUnroll];
#pragma unroll
        for (int q = 0; q < kDecodeUnroll; q++)
          ya[q] = xa ? __ldg(reinterpret_cast<const uint4 *>(xpa + 32 * q)) : zero;
        uint4 yb[TWO ? kDecodeUnroll : 1]; /* X's rows 8..15 (ns > 8) */
#pragma unroll
        for (int q = 0; q < (TWO ? kDecodeUnroll : 0); q++)
          yb[q] = xb ? __ldg(reinterpret_cast<const uint4 *>(xpb + 32 * q)) : zero;
        cp_async_wait<kDecodeStages - 2>();
        __syncwarp(); /* every lane's pieces of this slot have landed */
        const int so = ring_out * (2 * kDecodeUnroll * kThreads);
        ring_out = ring_out + 1 == kDecodeStages ? 0 : ring_out + 1;
        uint4 ra[kDecodeUnroll], rb[kDecodeUnroll];
#pragma unroll
        for (int q = 0; q < kDecodeUnroll; q++) {
          if (KN) {
            /* (a0, a1, a2, a3) of MMA m = (ra, rb, ra, rb).(x, x, y, y) for
             * m = 0 and .(z, z, w, w) for m = 1, as below */
            const unsigned aq = kaddr + (unsigned)(so + 64 * q) * 16u;
            ldsm_x4_trans(aq, ra[q].x, rb[q].x, ra[q].y, rb[q].y);
            ldsm_x4_trans(aq + 8 * 16, ra[q].z, rb[q].z, ra[q].w, rb[q].w);
          } else {
            const uint4 *r = (q & 1 ? rso : rse) + so + 8 * (q >> 1);
            ra[q] = r[0];
            rb[q] = r[128];
          }
        }
        /* the slot refilled now was read in the previous span (by every
         * lane before the barrier above) or not yet in this unit (the
         * previous unit's reads end before its __syncthreads) */
        if (i + kDecodeStages - 1 < nf) issue();
        cp_async_commit();
#pragma unroll
        for (int q = 0; q < kDecodeUnroll; q++) {
          mma16816<T>(acc0, ra[q].x, rb[q].x, ra[q].y, rb[q].y, ya[q].x, ya[q].y);
          mma16816<T>(acc0, ra[q].z, rb[q].z, ra[q].w, rb[q].w, ya[q].z, ya[q].w);
          if (TWO) {
            const uint4 &y = yb[TWO ? q : 0];
            mma16816<T>(acc1, ra[q].x, rb[q].x, ra[q].y, rb[q].y, y.x, y.y);
            mma16816<T>(acc1, ra[q].z, rb[q].z, ra[q].w, rb[q].w, y.z, y.w);
          }
        }
        xpa += step;
        xpb += step;
      }
      if (nspan > nfull) {
        const int64_t kspan = first + nfull * step;
#pragma unroll 1
        for (int q = 0; q < kDecodeUnroll; q++) {
          const int64_t kp = kspan + 32 * q;
          const int valid = clamp8(k1 - kp - 8 * t);
          const uint4 ra = !va ? zero
                           : KN ? load8s(wa + kp * P.swp, P.swp, valid, false)
                                : load8(wa + kp, valid, true);
          const uint4 rb = !vb ? zero
                           : KN ? load8s(wb + kp * P.swp, P.swp, valid, false)
                                : load8(wb + kp, valid, true);
          const uint4 ya = xa ? load8(pa + kp, valid, true) : zero;
          mma16816<T>(acc0, ra.x, rb.x, ra.y, rb.y, ya.x, ya.y);
          mma16816<T>(acc0, ra.z, rb.z, ra.w, rb.w, ya.z, ya.w);
          if (TWO) {
            const uint4 yb = xb ? load8(pb + kp, valid, true) : zero;
            mma16816<T>(acc1, ra.x, rb.x, ra.y, rb.y, yb.x, yb.y);
            mma16816<T>(acc1, ra.z, rb.z, ra.w, rb.w, yb.z, yb.w);
          }
        }
      }
      cp_async_wait<0>();
      /* accumulator (m16n8): c0, c1 at row g, columns 2t, 2t + 1; c2, c3 at
       * row g + 8 -- rows are W's (j), columns X's (i) */
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
      decode_store<kDecodeRows>(P, red, bt, grp, sp);
      __syncthreads(); /* red free for the next unit */
    }
  }
}

/* ns <= 8: two blocks per SM (128 registers on sm_90).  ns > 8: X's rows
 * 8..15 are loaded with rows 0..7, before the wait, which takes 176
 * registers and so one block per SM; the plan's occupancy query sees it
 * and gives each tile fewer warps.  On the H200 that was 8-13 % faster at
 * m = 12 and 16 than two blocks per SM with rows 8..15 read inside the MMA
 * loop (docs/gemm.md).  The same ns > 8 code capped at 128 registers
 * (MINB = 2: two blocks per SM; on sm_90 ptxas spills 32 bytes, outside
 * the main loop) serves tall W, where one block per SM would leave each
 * tile a single warp (gk_wmma_decode_config). */
template <typename T, bool TWO, int MINB, bool KN = false>
__global__ void __launch_bounds__(kThreads, MINB) wmma_decode(SkinnyParams P) {
  if constexpr (kSm80) decode_body<T, TWO, KN>(P);
  else __trap();
}

/* ----------------------------- DECODE, x B -----------------------------
 * W with its rows contiguous and k strided by P.swp (y = x B, B stored
 * [k, n]; W(j, p) = B[p][j]).  The same scheme as decode_body with the
 * ring turned: a warp's tile is 64 rows (4 m16 A tiles), a span 32 k
 * lines of those 64 rows (128 bytes: one L2 line per k line), and the
 * A fragments come out of the ring through ldmatrix.x4.trans.  The
 * 16-row form (decode_body, KN) copies 32 bytes per k line, so each copy
 * instruction touches 16 L2 lines: on the H200 it took 29.6 us at
 * 1 x 11008 x 4096 against 24.0 for x W^T, whatever the tiles per block;
 * this kernel 26.3 (docs/performance.md).  It has 4x fewer tiles, though,
 * and so splits k at sizes where the 16-row form need not;
 * gk_wmma_decode_config picks one of the two.
 *   Copy: instruction i = 0..7, lane (li = lane / 8, c = lane % 8) copies
 *   the 16-byte unit c (rows j0 + 8c .. + 7) of k line p = 4 i + li; it
 *   sits at unit c ^ f(p) of the slot's 128-byte line p, f(p) = bit 0 of
 *   p, bit 3 of p to bit 1 and bit 4 to bit 2.  An instruction fills 512
 *   contiguous bytes (4 wavefronts).
 *   Read: for A tile s (rows 16 s ..) and MMA m, lane (mt = lane / 8,
 *   r = lane % 8) gives matrix mt's row r: k line
 *   p = 8 (r / 2) + 2 (mt / 2) + 4 m + (r & 1), unit 2 s + (mt & 1).
 *   Then f(p) = r, so a matrix's 8 rows fall on 8 distinct units (no bank
 *   conflict), and lane (g, t) receives rows 2t and 2t + 1 of each matrix:
 *   W's k = 8 t + 4 m + {0, 1} (matrices 0, 1: rows g and g + 8) and
 *   + {2, 3} (matrices 2, 3) -- the k slots decode_body gives the same
 *   lane, matched by X's 16-byte piece at 8 t. */
constexpr int kDecodeKnRows = 64, kDecodeKnSpan = 32;
static_assert(kDecodeWarps * kDecodeKnSpan * kDecodeKnRows * 2 * kDecodeStages == kDecodeSmem,
              "the x B ring has the same slots as decode_body's");
static_assert(sizeof(float) * kDecodeWarps * 16 * (kDecodeKnRows + 1) <= kDecodeSmem,
              "the x B sums reuse the ring");

template <typename T, bool TWO>
__device__ __forceinline__ void decode_knw_body(const SkinnyParams &P) {
  constexpr int R = kDecodeKnRows, SPAN = kDecodeKnSpan, NT = R / 16; /* A tiles per warp */
  pdl_launch_dependents(); /* as decode_body */
  bool waited = false;
  extern __shared__ __align__(16) unsigned char decode_raw[];
  /* the warps' sums, in the ring once it is drained */
  float(*red)[16][R + 1] = reinterpret_cast<float(*)[16][R + 1]>(decode_raw);
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const int kw = P.kw, per = P.per, wt = warp / kw, wk = warp % kw;
  const int64_t groups = (P.tiles + per - 1) / per, units = groups * P.splits;
  const uint4 zero = make_uint4(0, 0, 0, 0);
  /* the warp's slot in stage 0: 32 lines x 8 units */
  uint4 *wring = reinterpret_cast<uint4 *>(decode_raw) + warp * (SPAN * 8);
  constexpr int kStage = kDecodeWarps * SPAN * 8; /* uint4 per stage */
  /* copy: lane (li, c); destination of instruction i: line 4 i + li, unit
   * c ^ (li & 1) ^ 2 (i / 2) */
  const int li = lane >> 3, c = lane & 7;
  /* read: lane (mt, r) */
  const int mt = lane >> 3, r = lane & 7;
  const int rline = 8 * (r >> 1) + 2 * (mt >> 1) + (r & 1);
  const unsigned rbase = (unsigned)__cvta_generic_to_shared(wring + rline * 8);
  for (int64_t bt = blockIdx.y; bt < P.batch; bt += gridDim.y) {
    const uint16_t *W = P.w + bt * P.bw, *X = P.x + bt * P.bx;
    for (int64_t u = blockIdx.x; u < units; u += gridDim.x) {
      const int64_t grp = u / P.splits;
      const int sp = (int)(u - grp * P.splits);
      const int64_t j0 = (grp * per + wt) * R, k0 = sp * P.kchunk;
      const int64_t k1 = k0 + P.kchunk < P.k ? k0 + P.kchunk : P.k;
      const bool xa = g < P.ns, xb = TWO && g + 8 < P.ns;
      const uint16_t *pa = X + (xa ? g : 0) * P.sxi + 8 * t;
      const uint16_t *pb = X + (xb ? g + 8 : 0) * P.sxi + 8 * t;
      float acc0[NT][4], acc1[NT][4];
#pragma unroll
      for (int s = 0; s < NT; s++)
#pragma unroll
        for (int v = 0; v < 4; v++) acc0[s][v] = acc1[s][v] = 0.0f;
      const DecodeSpans ks = decode_spans<SPAN>(k0, k1, kw, wk, wt < per && j0 < P.nb);
      const int64_t step = ks.step, first = ks.first, nspan = ks.n, nfull = ks.full;
      const int nf = (int)nfull;
      /* rows past nb: src-size 0 (zero-filled, nothing read) */
      const int cbytes = 2 * clamp8(P.nb - j0 - 8 * c);
      const int64_t rstep = 4 * P.swp;
      const uint16_t *ic = cbytes ? W + (first + li) * P.swp + j0 + 8 * c : W;
      const int cx = c ^ (li & 1);
      int ring_in = 0;
      auto issue = [&]() {
        uint4 *slot = wring + ring_in * kStage + li * 8;
        const uint16_t *src = ic;
#pragma unroll
        for (int i = 0; i < 8; i++) {
          cp_async16(slot + 32 * i + (cx ^ (2 * (i >> 1))), cbytes ? src : W, cbytes);
          src += rstep;
        }
        ic += step * P.swp;
        ring_in = ring_in + 1 == kDecodeStages ? 0 : ring_in + 1;
      };
      decode_prologue(issue, nf, waited);
      const uint16_t *xpa = pa + first, *xpb = pb + first;
      int ring_out = 0;
      for (int i = 0; i < nf; i++) {
        const uint4 ya = xa ? __ldg(reinterpret_cast<const uint4 *>(xpa)) : zero;
        const uint4 yb = xb ? __ldg(reinterpret_cast<const uint4 *>(xpb)) : zero;
        cp_async_wait<kDecodeStages - 2>();
        __syncwarp(); /* every lane's units of this slot have landed */
        const unsigned so = rbase + (unsigned)(ring_out * kStage) * 16u;
        ring_out = ring_out + 1 == kDecodeStages ? 0 : ring_out + 1;
        /* A tile s, MMA m: (a0, a1, a2, a3) = (ra, rb, ra, rb).(x, x, y, y)
         * for m = 0 and .(z, z, w, w) for m = 1 */
        uint4 ra[NT], rb[NT];
#pragma unroll
        for (int s = 0; s < NT; s++) {
          const unsigned a = so + (unsigned)((2 * s + (mt & 1)) ^ r) * 16u;
          ldsm_x4_trans(a, ra[s].x, rb[s].x, ra[s].y, rb[s].y);
          ldsm_x4_trans(a + 4 * 8 * 16, ra[s].z, rb[s].z, ra[s].w, rb[s].w);
        }
        /* the slot refilled now was read in the previous span (by every
         * lane before the barrier above) or not yet in this unit */
        if (i + kDecodeStages - 1 < nf) issue();
        cp_async_commit();
#pragma unroll
        for (int s = 0; s < NT; s++) {
          mma16816<T>(acc0[s], ra[s].x, rb[s].x, ra[s].y, rb[s].y, ya.x, ya.y);
          mma16816<T>(acc0[s], ra[s].z, rb[s].z, ra[s].w, rb[s].w, ya.z, ya.w);
          if (TWO) {
            mma16816<T>(acc1[s], ra[s].x, rb[s].x, ra[s].y, rb[s].y, yb.x, yb.y);
            mma16816<T>(acc1[s], ra[s].z, rb[s].z, ra[s].w, rb[s].w, yb.z, yb.w);
          }
        }
        xpa += step;
        xpb += step;
      }
      if (nspan > nfull) {
        /* a last, partial span (k1 - k0 not a multiple of 32): W's 8 k of
         * rows g and g + 8 of each A tile, element-wise */
        const int64_t kp = first + nfull * step + 8 * t;
        const int valid = clamp8(k1 - kp);
        const uint4 ya = xa ? load8(pa + kp - 8 * t, valid, true) : zero;
        const uint4 yb = xb ? load8(pb + kp - 8 * t, valid, true) : zero;
#pragma unroll
        for (int s = 0; s < NT; s++) {
          const int64_t ja = j0 + 16 * s + g, jb = ja + 8;
          const uint4 ra = ja < P.nb ? load8s(W + kp * P.swp + ja, P.swp, valid, false) : zero;
          const uint4 rb = jb < P.nb ? load8s(W + kp * P.swp + jb, P.swp, valid, false) : zero;
          mma16816<T>(acc0[s], ra.x, rb.x, ra.y, rb.y, ya.x, ya.y);
          mma16816<T>(acc0[s], ra.z, rb.z, ra.w, rb.w, ya.z, ya.w);
          if (TWO) {
            mma16816<T>(acc1[s], ra.x, rb.x, ra.y, rb.y, yb.x, yb.y);
            mma16816<T>(acc1[s], ra.z, rb.z, ra.w, rb.w, yb.z, yb.w);
          }
        }
      }
      cp_async_wait<0>();
      __syncthreads(); /* every warp is done with the ring: red may use it */
      /* accumulator (m16n8) of A tile s: c0, c1 at row 16 s + g, columns
       * 2t, 2t + 1; c2, c3 at row 16 s + g + 8 */
#pragma unroll
      for (int s = 0; s < NT; s++) {
        red[warp][2 * t][16 * s + g] = acc0[s][0];
        red[warp][2 * t + 1][16 * s + g] = acc0[s][1];
        red[warp][2 * t][16 * s + g + 8] = acc0[s][2];
        red[warp][2 * t + 1][16 * s + g + 8] = acc0[s][3];
        if (TWO) {
          red[warp][8 + 2 * t][16 * s + g] = acc1[s][0];
          red[warp][9 + 2 * t][16 * s + g] = acc1[s][1];
          red[warp][8 + 2 * t][16 * s + g + 8] = acc1[s][2];
          red[warp][9 + 2 * t][16 * s + g + 8] = acc1[s][3];
        }
      }
      __syncthreads();
      decode_store<R>(P, red, bt, grp, sp);
      __syncthreads(); /* the ring free for the next unit */
    }
  }
}

/* ns <= 8: two blocks per SM; ns > 8: one (as wmma_decode) */
template <typename T, bool TWO, int MINB>
__global__ void __launch_bounds__(kThreads, MINB) wmma_decode_knw(SkinnyParams P) {
  if constexpr (kSm80) decode_knw_body<T, TWO>(P);
  else __trap();
}

/* =============================== host side =============================== */

typedef void (*tiled_fn)(TiledParams);
typedef void (*skinny_fn)(SkinnyParams);

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

/* [dtype][wk][async] */
const skinny_fn kSkinny[2][2][2] = {
    {{wmma_skinny<__half, 0, false>, wmma_skinny<__half, 0, true>},
     {wmma_skinny<__half, 1, false>, wmma_skinny<__half, 1, true>}},
    {{wmma_skinny<__nv_bfloat16, 0, false>, wmma_skinny<__nv_bfloat16, 0, true>},
     {wmma_skinny<__nv_bfloat16, 1, false>, wmma_skinny<__nv_bfloat16, 1, true>}}};

/* [dtype][variant: 0 ns <= 8; 1 ns > 8, one block per SM; 2 ns > 8, two] */
const skinny_fn kDecode[2][3] = {
    {wmma_decode<__half, false, 2>, wmma_decode<__half, true, 1>, wmma_decode<__half, true, 2>},
    {wmma_decode<__nv_bfloat16, false, 2>, wmma_decode<__nv_bfloat16, true, 1>,
     wmma_decode<__nv_bfloat16, true, 2>}};
/* W read with its rows contiguous, k strided (x B), 16-row tiles: [dtype][ns > 8] */
const skinny_fn kDecodeKN[2][2] = {
    {wmma_decode<__half, false, 2, true>, wmma_decode<__half, true, 1, true>},
    {wmma_decode<__nv_bfloat16, false, 2, true>, wmma_decode<__nv_bfloat16, true, 1, true>}};
/* x B, 64-row tiles: [dtype][ns > 8] */
const skinny_fn kDecodeKNW[2][2] = {
    {wmma_decode_knw<__half, false, 2>, wmma_decode_knw<__half, true, 1>},
    {wmma_decode_knw<__nv_bfloat16, false, 2>, wmma_decode_knw<__nv_bfloat16, true, 1>}};

size_t skinny_smem(int wk, int bnw, int stages) {
  const int bk = kSkinnyTile / bnw;
  const int stage = wk ? SkinnyLayout<1>::stage(bnw, bk) : SkinnyLayout<0>::stage(bnw, bk);
  return (size_t)stages * stage * 2 + 8 * 256 * 4; /* stages + the k-group sums */
}

/* The skinny mapping of a lt-view problem: W the big operand, X the small. */
struct SkinnyMap {
  int small_n; /* 1: n <= 16 (X = op(B)), 0: m <= 16 (X = op(A)^T) */
  int wk;      /* W's k is contiguous */
  int64_t nb, ns, swj, swp, sxi, sxp, sdj, sdi, scj, sci, bw, bx;
  int bias_on_j;
};

SkinnyMap skinny_map(const gk_wmma_problem *p) {
  SkinnyMap s;
  s.small_n = gk_wmma_small_n(p);
  if (s.small_n) { /* W = op(A) (m x k), X = op(B)^T (n x k), D(j = row, i = col) */
    s.nb = p->m;
    s.ns = p->n;
    s.swj = p->opa ? p->lda : 1;
    s.swp = p->opa ? 1 : p->lda;
    s.sxi = p->opb ? 1 : p->ldb;
    s.sxp = p->opb ? p->ldb : 1;
    s.sdj = 1, s.sdi = p->ldd;
    s.scj = 1, s.sci = p->ldc;
    s.bw = p->stride_a, s.bx = p->stride_b;
    s.bias_on_j = p->bias_on_rows;
  } else { /* W = op(B)^T (n x k), X = op(A) (m x k), D(j = col, i = row) */
    s.nb = p->n;
    s.ns = p->m;
    s.swj = p->opb ? 1 : p->ldb;
    s.swp = p->opb ? p->ldb : 1;
    s.sxi = p->opa ? p->lda : 1;
    s.sxp = p->opa ? 1 : p->lda;
    s.sdj = p->ldd, s.sdi = 1;
    s.scj = p->ldc, s.sci = 1;
    s.bw = p->stride_b, s.bx = p->stride_a;
    s.bias_on_j = !p->bias_on_rows;
  }
  s.wk = s.swp == 1;
  return s;
}

bool aligned16(const void *p) { return ((uintptr_t)p & 15) == 0; }
/* a 16-bit operand whose vectors along the contiguous dimension are
 * 16-byte aligned in every line and batch */
bool vec16(const void *p, int64_t ld, int64_t stride, int64_t batch) {
  return aligned16(p) && ld % 8 == 0 && (batch <= 1 || stride % 8 == 0);
}
bool vec_cd(const void *p, int cd, int64_t ld, int64_t stride, int64_t batch) {
  const int64_t g = cd == GKO_DTYPE_F32 ? 4 : 8;
  return p && aligned16(p) && ld % g == 0 && (batch <= 1 || stride % g == 0);
}

gko_status_t set_smem(const void *fn, size_t bytes, const char *what) {
  cudaError_t e = cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       (int)bytes);
  if (e != cudaSuccess) return gk_cuda_fail(e, what);
  return GKO_STATUS_SUCCESS;
}

/* A DECODE kernel's attributes and resident blocks per SM with its ring
 * (*occ = 0 when the ring and the reduction buffer exceed the block limit
 * optin: checked before any attribute is set, so that a CUDA call that
 * fails is a real error). */
gko_status_t decode_fit(const void *fn, int optin, cudaFuncAttributes *fa, int *occ) {
  *occ = 0;
  cudaError_t e = cudaFuncGetAttributes(fa, fn);
  if (e != cudaSuccess) return gk_cuda_fail(e, "WMMA decode kernel: cudaFuncGetAttributes");
  if (fa->sharedSizeBytes + kDecodeSmem > (size_t)optin) return GKO_STATUS_SUCCESS;
  gko_status_t st = set_smem(fn, kDecodeSmem, "WMMA decode kernel: cudaFuncSetAttribute");
  if (st) return st;
  e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(occ, fn, kThreads, kDecodeSmem);
  if (e != cudaSuccess)
    return gk_cuda_fail(e, "cudaOccupancyMaxActiveBlocksPerMultiprocessor (WMMA decode kernel)");
  return GKO_STATUS_SUCCESS;
}

/* DECODE: warps per tile, tiles per block and k splits for `tiles` tiles
 * on `sms` SMs holding `occ` blocks each. */
struct DecodeShape {
  int kw, per;
  int64_t splits;
};
DecodeShape decode_shape(int64_t tiles, int occ, int sms, int64_t k) {
  /* Warps per tile (kw, taking its k spans in turn): the most, up
   * to 8, with which all the tiles' warps are resident at once (one wave:
   * every warp streams the same amount at the same rate, no tail); when
   * even 8 warps per tile fill at most half the GPU's warp slots, k is
   * split across blocks too: as many splits as still fit one wave (each
   * at least 8 spans long).  Rounding the split count up instead left a
   * second, partial wave: 384 blocks for 264 places at 1 x 2048, 1.5x
   * the time of cuBLASLt. */
  const int64_t slots = (int64_t)occ * sms * kDecodeWarps;
  int kw = kDecodeWarps;
  while (kw > 1 && tiles * kw > slots) kw /= 2;
  int64_t splits = 1;
  if (kw == kDecodeWarps && 2 * tiles * kDecodeWarps <= slots) {
    splits = slots / (tiles * kDecodeWarps);
    const int64_t most = k / (kDecodeWarps * kDecodeSpan);
    if (splits > most) splits = most;
    if (splits > 64) splits = 64;
    if (splits < 1) splits = 1;
  }
  /* Tiles per block: 8 / kw, unless that leaves SMs without a block
   * (16 x 11008 at ns > 8: 688 tiles, kw = 1, one block per SM: 86 blocks
   * of 8 tiles on 132 SMs); then the fewest per block that still fit one
   * wave (6: 115 blocks), the block's other warps idle. */
  int per = kDecodeWarps / kw;
  if (splits == 1) {
    const int64_t room = (int64_t)occ * sms;
    if ((tiles + per - 1) / per < room) {
      const int64_t even = (tiles + room - 1) / room;
      if (even < per) per = (int)even;
    }
  }
  return DecodeShape{kw, per, splits};
}

} // namespace

extern "C" gko_status_t gk_wmma_setup(const gk_wmma_problem *p, gk_wmma_config *cfg, int cc) {
  if (p->ab_dtype != GKO_DTYPE_F16 && p->ab_dtype != GKO_DTYPE_BF16)
    return gk_fail(GKO_STATUS_NOT_SUPPORTED, "WMMA: f16 or bf16 inputs only");
  if (p->ab_dtype == GKO_DTYPE_BF16 && cc < 80)
    return gk_fail(GKO_STATUS_NOT_SUPPORTED,
                   "WMMA: bf16 Tensor-Core instructions need sm_80 or newer; this GPU is sm_%d",
                   cc);
  int dev = 0, optin = 0;
  cudaError_t e = cudaGetDevice(&dev);
  if (e == cudaSuccess)
    e = cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev);
  if (e != cudaSuccess) return gk_cuda_fail(e, "cudaDeviceGetAttribute");
  const int dt = p->ab_dtype == GKO_DTYPE_BF16;
  const void *fn_sync, *fn_async;
  size_t smem_sync, smem_async;
  if (cfg->kind == GK_WMMA_TILED) {
    fn_sync = (const void *)kTiled[dt][p->opa][p->opb][0];
    fn_async = (const void *)kTiled[dt][p->opa][p->opb][1];
    smem_sync = kTiledSmem[p->opa][p->opb][0];
    smem_async = kTiledSmem[p->opa][p->opb][1];
  } else {
    const SkinnyMap s = skinny_map(p);
    fn_sync = (const void *)kSkinny[dt][s.wk][0];
    fn_async = (const void *)kSkinny[dt][s.wk][1];
    smem_sync = skinny_smem(s.wk, cfg->bnw, kSkinnySyncStages);
    /* every bnw of the autotuner may use the same kernel: the largest */
    size_t mx_sync = 0, mx_async = 0, min_async = 0;
    for (int b = 16; b <= 64; b *= 2) {
      const size_t sy = skinny_smem(s.wk, b, kSkinnySyncStages);
      const size_t lo = skinny_smem(s.wk, b, kSkinnyMinStages);
      const size_t hi = skinny_smem(s.wk, b, kSkinnyMaxStages);
      if (sy > mx_sync) mx_sync = sy;
      if (lo > min_async) min_async = lo;
      if (hi > mx_async) mx_async = hi;
    }
    if ((int)mx_sync > optin)
      return gk_fail(GKO_STATUS_NOT_SUPPORTED,
                     "WMMA: the skinny kernel needs %zu bytes of shared memory per block, this "
                     "GPU allows %d",
                     mx_sync, optin);
    gko_status_t st = set_smem(fn_sync, mx_sync, "WMMA skinny kernel: cudaFuncSetAttribute");
    if (st) return st;
    /* cp.async: usable when the shallowest pipeline fits for every bnw; the
     * plan picks the depth (<= max_stages) from the occupancy it gives */
    if (mx_async > (size_t)optin) mx_async = (size_t)optin;
    cfg->async_ok = cc >= 80 && min_async <= (size_t)optin;
    if (cfg->async_ok &&
        (st = set_smem(fn_async, mx_async, "WMMA skinny kernel: cudaFuncSetAttribute")))
      return st;
    cfg->max_stages = kSkinnyMinStages;
    for (int S = kSkinnyMaxStages; S > kSkinnyMinStages; S--) {
      int fits = 1;
      for (int b = 16; b <= 64; b *= 2) fits &= skinny_smem(s.wk, b, S) <= mx_async;
      if (fits) {
        cfg->max_stages = S;
        break;
      }
    }
    cfg->stages = cfg->async_ok ? kSkinnyMinStages : kSkinnySyncStages;
    const int occ = gk_wmma_skinny_occupancy(p, cfg);
    if (occ < 0) return GKO_STATUS_CUDA_ERROR; /* detail set */
    if (occ == 0)
      return gk_fail(GKO_STATUS_NOT_SUPPORTED, "WMMA: the skinny kernel does not fit on this GPU");
    cfg->blocks_per_sm = occ;
    return GKO_STATUS_SUCCESS;
  }
  if ((int)smem_sync > optin)
    return gk_fail(GKO_STATUS_NOT_SUPPORTED,
                   "WMMA: the kernel needs %zu bytes of shared memory per block, this GPU "
                   "allows %d",
                   smem_sync, optin);
  gko_status_t st = GKO_STATUS_SUCCESS;
  if (cfg->kind == GK_WMMA_TILED) st = set_smem(fn_sync, smem_sync, "WMMA kernel: cudaFuncSetAttribute");
  if (st) return st;
  cfg->async_ok = cc >= 80 && (int)smem_async <= optin;
  if (cfg->async_ok && cfg->kind == GK_WMMA_TILED &&
      (st = set_smem(fn_async, smem_async, "WMMA kernel: cudaFuncSetAttribute")))
    return st;
  int blocks = 0;
  e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, cfg->async_ok ? fn_async : fn_sync,
                                                    kThreads,
                                                    cfg->async_ok ? smem_async : smem_sync);
  if (e != cudaSuccess) return gk_cuda_fail(e, "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
  cfg->blocks_per_sm = blocks;
  if (blocks == 0)
    return gk_fail(GKO_STATUS_NOT_SUPPORTED, "WMMA: the kernel does not fit on this GPU");
  return GKO_STATUS_SUCCESS;
}

extern "C" int gk_wmma_skinny_occupancy(const gk_wmma_problem *p, const gk_wmma_config *cfg) {
  const SkinnyMap s = skinny_map(p);
  const int dt = p->ab_dtype == GKO_DTYPE_BF16, async = cfg->async_ok;
  const size_t smem = skinny_smem(s.wk, cfg->bnw, async ? cfg->stages : kSkinnySyncStages);
  int blocks = 0;
  cudaError_t e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(
      &blocks, (const void *)kSkinny[dt][s.wk][async], kThreads, smem);
  if (e != cudaSuccess) {
    gk_cuda_fail(e, "cudaOccupancyMaxActiveBlocksPerMultiprocessor (WMMA skinny kernel)");
    return -1;
  }
  return blocks;
}

extern "C" size_t gk_wmma_partials_bytes(const gk_wmma_problem *p, const gk_wmma_config *cfg) {
  if (cfg->kind != GK_WMMA_SKINNY) return 0;
  int splits = cfg->splits;
  if (cfg->decode && cfg->dsplits > splits) splits = cfg->dsplits;
  if (splits <= 1) return 0;
  const SkinnyMap s = skinny_map(p);
  return (size_t)p->batch * (size_t)splits * (size_t)s.ns * (size_t)s.nb * sizeof(float);
}

extern "C" int gk_wmma_w_k_contiguous(const gk_wmma_problem *p) { return skinny_map(p).wk; }

extern "C" int gk_wmma_decode_layout_ok(const gk_wmma_problem *p) {
  const SkinnyMap s = skinny_map(p);
  /* k contiguous in X; in W either k (x W^T) or the rows (x B); 16-byte
   * vectors along each one's contiguous dimension in every line and batch
   * (the pointers are checked at execute) */
  if (s.sxp != 1 || (!s.wk && s.swj != 1)) return 0;
  const int64_t wld = s.wk ? s.swj : s.swp;
  return !(wld % 8 || (s.ns > 1 && s.sxi % 8) || (p->batch > 1 && (s.bw % 8 || s.bx % 8)));
}

extern "C" gko_status_t gk_wmma_decode_config(const gk_wmma_problem *p, gk_wmma_config *cfg,
                                              int cc, int sms) {
  cfg->decode = 0;
  cfg->dpdl_ok = 0;
  cfg->dsplits = 1;
  cfg->drows = kDecodeRows;
  cfg->dkchunk = p->k;
  if (cfg->kind != GK_WMMA_SKINNY || cc < 80 || p->k <= 0 || !gk_wmma_decode_layout_ok(p))
    return GKO_STATUS_SUCCESS;
  const SkinnyMap s = skinny_map(p);
  const int dt = p->ab_dtype == GKO_DTYPE_BF16;
  int var = s.ns > 8;
  const void *fn = s.wk ? (const void *)kDecode[dt][var] : (const void *)kDecodeKN[dt][var];
  /* the ring and the reduction buffer must fit a block's shared memory
   * (not on sm_86 / sm_89, 99 KB: the SKINNY configuration stays) */
  int dev = 0, optin = 0, occ = 0;
  cudaFuncAttributes fa;
  cudaError_t e = cudaGetDevice(&dev);
  if (e == cudaSuccess)
    e = cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev);
  if (e != cudaSuccess) return gk_cuda_fail(e, "WMMA decode kernel: device attributes");
  gko_status_t st = decode_fit(fn, optin, &fa, &occ);
  if (st) return st;
  if (occ <= 0) return GKO_STATUS_SUCCESS; /* does not fit: SKINNY stays */
  if (sms < 1) sms = 1;
  int rows = kDecodeRows;
  int64_t tiles = (s.nb + rows - 1) / rows * p->batch;
  /* ns > 8 with more than half as many tiles as warp slots (each tile
   * would get one warp): the variant with two blocks per SM, if it has
   * them.  H200, graph us, one block -> two: 16 x 11008 34.0 -> 29.6,
   * 16 x 14336 39.0 -> 36.7; at 4096 rows and below two blocks were slower
   * (16 x 4096 14.0 -> 15.7, 16 x 2048 9.2 -> 12.6), and 8192 rows even
   * (23.6 -> 23.7), so they keep one (docs/performance.md). */
  if (s.wk && var == 1 && 2 * tiles > (int64_t)occ * sms * kDecodeWarps) {
    const void *fn2 = (const void *)kDecode[dt][2];
    cudaFuncAttributes fa2;
    int occ2 = 0;
    if ((st = decode_fit(fn2, optin, &fa2, &occ2))) return st;
    if (occ2 > occ) {
      var = 2;
      fn = fn2;
      fa = fa2;
      occ = occ2;
    }
  }
  DecodeShape ds = decode_shape(tiles, occ, sms, p->k);
  /* x B: the kernel with 64-row tiles (128-byte k lines) where it needs no
   * k split, or where both need one and ns <= 8; else 16-row tiles.  H200,
   * graph us, 16 -> 64 rows: m <= 8 at 11008 and 14336 rows 1.10-1.18x
   * faster (1 x 11008 29.6 -> 26.3), at 1024 and 2048 rows 1.02-1.14x
   * (both split k), m = 16 at 8192 rows 1.11x; slower where only the
   * 64-row tiles would split k (1 x 4096 13.8 -> 14.5, 16 x 2048 10.5 ->
   * 12.0) and at 16 x 1024 (9.5 -> 10.1).  At m <= 8 and 8192 rows (64-row
   * tiles: 2 splits) they were 1.00-1.06x faster from plain launches but
   * 0.93-0.96x with W static, so the 16-row tiles stay (docs/performance.md). */
  if (!s.wk) {
    const void *fnw = (const void *)kDecodeKNW[dt][var];
    cudaFuncAttributes faw;
    int occw = 0;
    if ((st = decode_fit(fnw, optin, &faw, &occw))) return st;
    if (occw > 0) {
      const int64_t tw = (s.nb + kDecodeKnRows - 1) / kDecodeKnRows * p->batch;
      const DecodeShape dw = decode_shape(tw, occw, sms, p->k);
      if (dw.splits == 1 || (s.ns <= 8 && ds.splits > 1)) {
        rows = kDecodeKnRows;
        tiles = tw;
        ds = dw;
        fa = faw;
        occ = occw;
      }
    }
  }
  int64_t chunk = (p->k + ds.splits - 1) / ds.splits;
  chunk = (chunk + kDecodeSpan - 1) / kDecodeSpan * kDecodeSpan;
  cfg->decode = 1;
  /* griddepcontrol exists in the sm_90+ code only: a build without it
   * (GKO_ARCHS below 90, the PTX compiled for this GPU at load time) must
   * not be launched with programmatic stream serialization */
  cfg->dpdl_ok = cc >= 90 && fa.ptxVersion >= 90;
  cfg->dvar = var;
  cfg->drows = rows;
  cfg->dkw = ds.kw;
  cfg->dper = ds.per;
  cfg->dkchunk = chunk;
  cfg->dsplits = (int)((p->k + chunk - 1) / chunk);
  cfg->dblocks_per_sm = occ;
  return GKO_STATUS_SUCCESS;
}

extern "C" gko_status_t gk_wmma_launch(const gk_wmma_problem *p, const gk_wmma_config *cfg,
                                       float alpha, float beta, const void *a, const void *b,
                                       const void *c, void *d, const void *bias, void *ws,
                                       void *stream) {
  const int dt = p->ab_dtype == GKO_DTYPE_BF16;
  const int64_t gy = gk::grid_y(p->batch);
  cudaError_t e;
  if (cfg->kind == GK_WMMA_TILED) {
    TiledParams P;
    P.a = static_cast<const uint16_t *>(a);
    P.b = static_cast<const uint16_t *>(b);
    P.c = c;
    P.d = d;
    P.bias = bias;
    P.m = p->m, P.n = p->n, P.k = p->k, P.batch = p->batch;
    P.lda = p->lda, P.ldb = p->ldb, P.ldc = p->ldc, P.ldd = p->ldd;
    P.sa = p->stride_a, P.sb = p->stride_b, P.sc = p->stride_c, P.sd = p->stride_d;
    P.sbias = p->stride_bias;
    P.vec_a = vec16(a, p->lda, p->stride_a, p->batch);
    P.vec_b = vec16(b, p->ldb, p->stride_b, p->batch);
    const int async = cfg->async_ok && P.vec_a && P.vec_b;
    const int bm = async ? AsyncCfg::BM : SyncCfg::BM, bn = async ? AsyncCfg::BN : SyncCfg::BN;
    P.tiles_m = (p->m + bm - 1) / bm;
    P.tiles_n = (p->n + bn - 1) / bn;
    P.alpha = alpha;
    P.beta = beta;
    P.act = p->act;
    P.cd = p->cd_dtype;
    P.bias_mode = bias ? (p->bias_on_rows ? 1 : 2) : 0;
    P.vec_c = vec_cd(c, p->cd_dtype, p->ldc, p->stride_c, p->batch);
    P.vec_d = vec_cd(d, p->cd_dtype, p->ldd, p->stride_d, p->batch);
    const int64_t gx = gk::grid_x(P.tiles_m * P.tiles_n);
    void *args[] = {&P};
    e = cudaLaunchKernel((const void *)kTiled[dt][p->opa][p->opb][async],
                         dim3((unsigned)gx, (unsigned)gy), dim3(kThreads), args,
                         kTiledSmem[p->opa][p->opb][async], (cudaStream_t)stream);
    if (e != cudaSuccess) return gk_cuda_fail(e, "WMMA GEMM kernel launch");
    return GKO_STATUS_SUCCESS;
  }
  const SkinnyMap s = skinny_map(p);
  SkinnyParams P;
  P.w = static_cast<const uint16_t *>(s.small_n ? a : b);
  P.x = static_cast<const uint16_t *>(s.small_n ? b : a);
  P.c = c;
  P.d = d;
  P.bias = bias;
  P.partials = static_cast<float *>(ws);
  P.nb = s.nb, P.ns = s.ns, P.k = p->k, P.batch = p->batch;
  P.swj = s.swj, P.swp = s.swp, P.sxi = s.sxi, P.sxp = s.sxp;
  P.sdj = s.sdj, P.sdi = s.sdi, P.scj = s.scj, P.sci = s.sci;
  P.bw = s.bw, P.bx = s.bx, P.bc = p->stride_c, P.bd = p->stride_d, P.bbias = p->stride_bias;
  P.bnw = cfg->bnw;
  P.bk = kSkinnyTile / cfg->bnw;
  P.stages = kSkinnySyncStages;
  P.tiles = (s.nb + P.bnw - 1) / P.bnw;
  P.splits = cfg->splits;
  P.kchunk = cfg->kchunk;
  P.alpha = alpha;
  P.beta = beta;
  P.act = p->act;
  P.cd = p->cd_dtype;
  P.has_bias = bias != nullptr;
  P.bias_on_j = s.bias_on_j;
  /* cp.async: W vectorizable along its contiguous dimension, X along k */
  const void *w = P.w, *x = P.x;
  const bool w_vec = vec16(w, s.wk ? s.swj : s.swp, s.bw, p->batch);
  const bool x_vec = s.sxp == 1 && vec16(x, s.ns > 1 ? s.sxi : 8, s.bx, p->batch);
  const int async = cfg->async_ok && w_vec && x_vec;
  if (async) P.stages = cfg->stages;
  P.vec_w = w_vec;
  P.vec_x = x_vec;
  void *args[] = {&P};
  if (cfg->decode && w_vec && x_vec) {
    P.tiles = (s.nb + cfg->drows - 1) / cfg->drows;
    P.splits = cfg->dsplits;
    P.kchunk = cfg->dkchunk;
    P.kw = cfg->dkw;
    P.per = cfg->dper;
    const int64_t gx = gk::grid_x((P.tiles + P.per - 1) / P.per * P.splits);
    cudaLaunchConfig_t lc = {};
    cudaLaunchAttribute at[1] = {};
    lc.gridDim = dim3((unsigned)gx, (unsigned)gy);
    lc.blockDim = dim3(kThreads);
    lc.dynamicSmemBytes = kDecodeSmem;
    lc.stream = (cudaStream_t)stream;
    if (cfg->dpdl) { /* W promised static (GKO_GEMM_ATTR_STATIC_OPERANDS) */
      at[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
      at[0].val.programmaticStreamSerializationAllowed = 1;
      lc.attrs = at;
      lc.numAttrs = 1;
    }
    e = cudaLaunchKernelExC(
        &lc,
        s.wk ? (const void *)kDecode[dt][cfg->dvar]
        : cfg->drows == kDecodeKnRows ? (const void *)kDecodeKNW[dt][cfg->dvar]
                                      : (const void *)kDecodeKN[dt][cfg->dvar],
        args);
    if (e != cudaSuccess) return gk_cuda_fail(e, "WMMA decode kernel launch");
  } else {
    const int64_t gx = gk::grid_x(P.tiles * P.splits);
    e = cudaLaunchKernel((const void *)kSkinny[dt][s.wk][async], dim3((unsigned)gx, (unsigned)gy),
                         dim3(kThreads), args, skinny_smem(s.wk, P.bnw, P.stages),
                         (cudaStream_t)stream);
    if (e != cudaSuccess) return gk_cuda_fail(e, "WMMA skinny kernel launch");
  }
  if (P.splits > 1) {
    const int64_t total = s.ns * s.nb * p->batch;
    const int64_t grid = gk::grid_x((total + kThreads - 1) / kThreads);
    e = cudaLaunchKernel((const void *)skinny_reduce, dim3((unsigned)grid), dim3(kThreads), args,
                         0, (cudaStream_t)stream);
    if (e != cudaSuccess) return gk_cuda_fail(e, "WMMA split-K reduction kernel launch");
  }
  return GKO_STATUS_SUCCESS;
}
