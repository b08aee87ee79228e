/* gemm_wmma_decode.cu -- the DECODE kernels of gko's GEMM, the SKINNY case
 * (min(m, n) <= 16) on sm_80+ with mma.sync fed by 16-byte vectors, in the
 * lt view of kernels/gemm_wmma.h.  Two kernels:
 *   wmma_decode      16-row tiles of W: x W^T (W k-contiguous) and x B
 *                    (KN: W's rows contiguous);
 *   wmma_decode_knw  x B with 64-row tiles (128-byte k lines).
 * splits > 1: f32 partials, summed by skinny_reduce (gemm_wmma_skinny.cu).
 * Below sm_80 both are empty (trap); the plan never selects them there. */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "gemm_wmma.cuh"

namespace {

/* The skinny case again (ns <= 16 rows of X against the nb x k weights W),
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
static_assert(kDecodeUnroll == 4 && kDecodeRows == 16,
              "the ring's copy and read maps assume 16 rows x 16 pieces per span");

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
    skinny_out(P, e, bias, bt, sp, i, j, s);
  }
}

/* DECODE: one 32-wide k block of 16 rows of W: acc0 += W (ra: row g, rb:
 * row g + 8) x X's rows 0..7 (ya), and with TWO acc1 += W x X's rows 8..15
 * (yb); two m16n8k16 steps each, on words x, y and then z, w. */
template <typename T, bool TWO>
__device__ __forceinline__ void decode_mma(float (&acc0)[4], float (&acc1)[4], const uint4 &ra,
                                           const uint4 &rb, const uint4 &ya, const uint4 &yb) {
  mma16816<T>(acc0, ra.x, rb.x, ra.y, rb.y, ya.x, ya.y);
  mma16816<T>(acc0, ra.z, rb.z, ra.w, rb.w, ya.z, ya.w);
  if (TWO) {
    mma16816<T>(acc1, ra.x, rb.x, ra.y, rb.y, yb.x, yb.y);
    mma16816<T>(acc1, ra.z, rb.z, ra.w, rb.w, yb.z, yb.w);
  }
}

/* DECODE: a warp's m16n8 accumulators into its sums red (red[i][j]: X's row
 * i, W's row j): acc0's c0, c1 at row j = row, columns i = 2t, 2t + 1; c2,
 * c3 at row + 8; acc1 (TWO) the same at columns 8 + 2t, 9 + 2t. */
template <bool TWO, int RS>
__device__ __forceinline__ void decode_red(float (*red)[RS], int row, int t, const float (&acc0)[4],
                                           const float (&acc1)[4]) {
  red[2 * t][row] = acc0[0];
  red[2 * t + 1][row] = acc0[1];
  red[2 * t][row + 8] = acc0[2];
  red[2 * t + 1][row + 8] = acc0[3];
  if (TWO) {
    red[8 + 2 * t][row] = acc1[0];
    red[9 + 2 * t][row] = acc1[1];
    red[8 + 2 * t][row + 8] = acc1[2];
    red[9 + 2 * t][row + 8] = acc1[3];
  }
}

/* DECODE: unit u (group grp of per tiles of R rows, k split sp) for the
 * warp tile wt: the tile's first row j0 and the split's k range [k0, k1). */
struct DecodeUnit {
  int64_t grp;
  int sp;
  int64_t j0, k0, k1;
};
template <int R>
__device__ __forceinline__ DecodeUnit decode_unit(const SkinnyParams &P, int64_t u, int per,
                                                  int wt) {
  const int64_t grp = u / P.splits;
  const int sp = (int)(u - grp * P.splits);
  const int64_t j0 = (grp * per + wt) * R, k0 = sp * P.kchunk;
  const int64_t k1 = k0 + P.kchunk < P.k ? k0 + P.kchunk : P.k;
  return DecodeUnit{grp, sp, j0, k0, k1};
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
      const auto [grp, sp, j0, k0, k1] = decode_unit<kDecodeRows>(P, u, per, wt);
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
       * copies ask L2 to fetch the whole line (faster than without the
       * hint, and than 256 bytes; measured: docs/gemm.md). */
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
          decode_mma<T, TWO>(acc0, acc1, ra[q], rb[q], ya[q], yb[TWO ? q : 0]);
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
      decode_red<TWO>(red[warp], g, t, acc0, acc1);
      __syncthreads();
      decode_store<kDecodeRows>(P, red, bt, grp, sp);
      __syncthreads(); /* red free for the next unit */
    }
  }
}

/* ns <= 8: two blocks per SM (128 registers on sm_90).  ns > 8: X's rows
 * 8..15 are loaded with rows 0..7, before the wait, which takes 176
 * registers and so one block per SM; the plan's occupancy query sees it
 * and gives each tile fewer warps.  That was faster at m = 12 and 16 than
 * two blocks per SM with rows 8..15 read inside the MMA loop (measured:
 * docs/gemm.md).  The same ns > 8 code capped at 128 registers
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
 * instruction touches 16 L2 lines: it stayed well behind x W^T whatever
 * the tiles per block, and this kernel closes much of the gap (measured:
 * docs/gemm.md, docs/performance.md).  It has 4x fewer tiles, though,
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
      const auto [grp, sp, j0, k0, k1] = decode_unit<R>(P, u, per, wt);
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
          decode_mma<T, TWO>(acc0[s], acc1[s], ra[s], rb[s], ya, yb);
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
          decode_mma<T, TWO>(acc0[s], acc1[s], ra, rb, ya, yb);
        }
      }
      cp_async_wait<0>();
      __syncthreads(); /* every warp is done with the ring: red may use it */
      /* accumulator (m16n8) of A tile s: c0, c1 at row 16 s + g, columns
       * 2t, 2t + 1; c2, c3 at row 16 s + g + 8 */
#pragma unroll
      for (int s = 0; s < NT; s++) {
        decode_red<TWO>(red[warp], 16 * s + g, t, acc0[s], acc1[s]);
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

typedef void (*skinny_fn)(SkinnyParams);

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

} // namespace

const void *gk_wmma::decode_kernel(int dt, int var) { return (const void *)kDecode[dt][var]; }

const void *gk_wmma::decode_kn_kernel(int dt, int var) { return (const void *)kDecodeKN[dt][var]; }

const void *gk_wmma::decode_knw_kernel(int dt, int var) {
  return (const void *)kDecodeKNW[dt][var];
}
