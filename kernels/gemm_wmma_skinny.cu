/* gemm_wmma_skinny.cu -- two kernels of gko's GEMM, in the lt view of
 * kernels/gemm_wmma.h: wmma_skinny, the SKINNY kernel (f16 or bf16; W with
 * k or its rows contiguous; register prefetch or cp.async: 8
 * instantiations), and skinny_reduce, the split-k sum that SKINNY and
 * DECODE (gemm_wmma_decode.cu) share.
 *
 * SKINNY: min(m, n) <= 16 (decode, one token or a few).  The big operand W
 * (nb x k: the weights) is streamed once; the small one X (ns <= 16 rows)
 * is staged per k tile next to it (its missing rows are zeros).  Y = W X^T
 * as WMMA 16x16x16 with W as matrix_a and X^T as matrix_b.  A block owns
 * bnw rows of W (16, 32 or 64) and a k range; its 8 warps split the
 * fragments' rows and the k steps, and sum their accumulators in shared
 * memory in a fixed order.  splits == 1: the epilogue runs in the kernel.
 * splits > 1: each block writes f32 partial sums to the workspace and
 * skinny_reduce sums the splits in split order and applies the epilogue --
 * no atomics, so results are bitwise identical from run to run.  Stages:
 * 4..8 with cp.async (W and X 16-byte vectorizable; the plan picks the
 * depth), else 2 with register prefetch.
 *
 * bf16 and cp.async need sm_80: those instantiations are empty (trap) when
 * compiled for sm_75, and the plan never selects them there.  Indices are
 * int64 where they address memory; grids are clamped and the kernels loop
 * (grid-stride over tiles or outputs, blockIdx.y over batches). */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <mma.h>
#include <stdint.h>

#include <type_traits>

#include "gemm_wmma.cuh"

using namespace nvcuda;

namespace {

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
        prefetch_pipeline(KT, load_regs, store_regs, compute);
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
        skinny_out(P, e, bias, bt, sp, i, j, s);
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

/* ---- the kernel table (gk_wmma::skinny_kernel) ---- */

typedef void (*skinny_fn)(SkinnyParams);

/* [dtype][wk][async] */
const skinny_fn kSkinny[2][2][2] = {
    {{wmma_skinny<__half, 0, false>, wmma_skinny<__half, 0, true>},
     {wmma_skinny<__half, 1, false>, wmma_skinny<__half, 1, true>}},
    {{wmma_skinny<__nv_bfloat16, 0, false>, wmma_skinny<__nv_bfloat16, 0, true>},
     {wmma_skinny<__nv_bfloat16, 1, false>, wmma_skinny<__nv_bfloat16, 1, true>}}};

} // namespace

const void *gk_wmma::skinny_kernel(int dt, int wk, int async) {
  return (const void *)kSkinny[dt][wk][async];
}

const void *gk_wmma::skinny_reduce_kernel() { return (const void *)skinny_reduce; }
