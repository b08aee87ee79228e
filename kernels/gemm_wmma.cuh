/* gemm_wmma.cuh -- what the files of gko's WMMA GEMM share
 * (gemm_wmma_tiled.cu, gemm_wmma_skinny.cu, gemm_wmma_decode.cu and the
 * host side, gemm_wmma_launch.cu): the architecture gate, the geometry of
 * each kernel family, the kernels' parameters, the 16-bit operand loads and
 * the epilogue's device functions; and the kernels as the host side takes
 * them (gk_wmma::).
 *
 * The kernels and their parameter types live in each file's unnamed
 * namespace, as they did in one file: the host side fills the same structs
 * and passes them by value through cudaLaunchKernel. */
#ifndef GK_GEMM_WMMA_CUH
#define GK_GEMM_WMMA_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>

#include <type_traits>

#include "gemm_wmma.h"
#include "activation.cuh"
#include "mma.cuh"

namespace {

using gk::cp_async16;
using gk::cp_async_commit;
using gk::cp_async_wait;
using gk::cp_async_wait_dyn;
using gk::ldsm_x4;
using gk::ldsm_x4_trans;
using gk::mma16816;
using gk::pdl_launch_dependents;
using gk::pdl_wait;

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

constexpr int kThreads = 256; /* every kernel: 8 warps */
constexpr int kPad = 8;       /* elements of padding per shared-memory row */

/* ---- TILED geometry ---- */
/* Tiled kernel's block tile: WM x (8 / WM) warps, each 64 rows x 16 FJ
 * columns of D (4 x FJ accumulator fragments); BK-wide k tiles, S stages. */
template <int WM, int FJ, int BK_, int S_>
struct TiledCfg {
  static constexpr int BM = 64 * WM, BN = 16 * FJ * (8 / WM), BK = BK_, S = S_;
};
/* Register prefetch (sm_70/75) and cp.async (sm_80+) take the same tile.
 * 128 x 256 and 256 x 128 tiles (64 x 64 per warp, one block per SM) were
 * slower; BK = 64 with 3 stages won at the largest squares but lost at
 * BERT FFN1 (measured: docs/performance.md, "The tiled WMMA kernel: copy
 * arithmetic out of the main loop"), and needs 110 KB per block, over
 * sm_86/89's 99 KB. */
using SyncCfg = TiledCfg<2, 2, 32, 2>;
using AsyncCfg = TiledCfg<2, 2, 32, 4>;
template <bool ASYNC>
using CfgOf = typename std::conditional<ASYNC, AsyncCfg, SyncCfg>::type;
constexpr int kScratchLd = 64 + 4; /* epilogue staging: 64 rows, f32 */

/* ---- SKINNY geometry: bk = kSkinnyTile / bnw, so a W tile is 8 KB; the
 * cp.async pipeline is 4..8 stages deep (chosen per plan), else 2 ---- */
constexpr int kSkinnyTile = 4096;
constexpr int kSkinnyMinStages = 4, kSkinnyMaxStages = 8, kSkinnySyncStages = 2;

/* ---- DECODE geometry: tiles of kDecodeRows rows of W, k in spans of
 * kDecodeSpan through a cp.async ring of kDecodeStages slots per warp
 * (kDecodeSmem bytes per block); the x B kernel with 64-row tiles takes
 * spans of kDecodeKnSpan (gemm_wmma_decode.cu) ---- */
constexpr int kDecodeRows = 16, kDecodeUnroll = 4, kDecodeSpan = 32 * kDecodeUnroll;
constexpr int kDecodeStages = 3;
constexpr size_t kDecodeSmem = (size_t)kDecodeStages * 2 * kDecodeUnroll * kThreads * 16;
constexpr int kDecodeWarps = kThreads / 32;
constexpr int kDecodeKnRows = 64, kDecodeKnSpan = 32;

/* ---- plain loads ---- */

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

/* ---- TILED and SKINNY without cp.async: the k loop ---- */

/* Two stages with register prefetch over KT k tiles: tile kt + 1's global
 * loads (load_regs) are issued before tile kt's MMAs (compute) and stored
 * to the other stage (store_regs) after them. */
template <typename Load, typename Store, typename Compute>
__device__ __forceinline__ void prefetch_pipeline(int64_t KT, Load &load_regs, Store &store_regs,
                                                  Compute &compute) {
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

/* ---- epilogue ---- */

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

/* The activation (activation.cuh): accurate GELU for f32 outputs. */
__device__ __forceinline__ float activate(float x, int act, int cd) {
  return gk::activate(x, act, cd == GKO_DTYPE_F32);
}

/* act(alpha * acc + beta * c + bias) */
__device__ __forceinline__ float finish(float acc, float cv, float bv, const Epi &e) {
  return activate(fmaf(e.beta, cv, e.alpha * acc) + bv, e.act, e.cd);
}

/* ---- TILED parameters ---- */

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

/* ---- SKINNY and DECODE parameters ---- */

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

/* SKINNY, DECODE: the sum s of output (j, i) of batch bt and k split sp,
 * as an f32 partial (splits > 1) or through the epilogue (e and bias from
 * skinny_epi). */
__device__ __forceinline__ void skinny_out(const SkinnyParams &P, const Epi &e, const char *bias,
                                           int64_t bt, int sp, int i, int64_t j, float s) {
  if (P.splits > 1) {
    P.partials[((bt * P.splits + sp) * P.ns + i) * P.nb + j] = s;
  } else {
    const float cv = e.c ? ld_cd(e.c, j * P.scj + i * P.sci, P.cd) : 0.0f;
    const float bv = bias ? ld_cd(bias, P.bias_on_j ? j : i, P.cd) : 0.0f;
    st_cd(e.d, j * P.sdj + i * P.sdi, finish(s, cv, bv, e), P.cd);
  }
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

} // namespace

/* The kernels, for the host side (gemm_wmma_launch.cu); dt 0 f16, 1 bf16. */
namespace gk_wmma {
/* TILED (gemm_wmma_tiled.cu): opa, opb as gk_wmma_problem; async 1 the
 * cp.async kernel.  Its dynamic shared memory does not depend on dt. */
const void *tiled_kernel(int dt, int opa, int opb, int async);
size_t tiled_smem_bytes(int opa, int opb, int async);
/* SKINNY (gemm_wmma_skinny.cu): wk 1 when W has k contiguous; and the
 * split-k sum that SKINNY and DECODE share */
const void *skinny_kernel(int dt, int wk, int async);
const void *skinny_reduce_kernel();
/* DECODE (gemm_wmma_decode.cu), variant var as gk_wmma_config.dvar: x W^T
 * (var 0..2); x B with 16-row tiles and with 64-row tiles (var 0..1) */
const void *decode_kernel(int dt, int var);
const void *decode_kn_kernel(int dt, int var);
const void *decode_knw_kernel(int dt, int var);
} // namespace gk_wmma

#endif /* GK_GEMM_WMMA_CUH */
