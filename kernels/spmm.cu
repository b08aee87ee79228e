/* spmm.cu -- C = alpha * A * B + beta * C with A in CSR, B and C dense.
 *
 * ROW_SPLIT (rowsplit_kernel + segfix_kernel).  A warp holds 2^lg_r row
 * groups of Gc = 2^lg_gc lanes; lane cp of a group owns one vector of VW
 * consecutive columns (VW = 16 bytes / element size on the vector path, 1
 * on the scalar path) per column tile: columns (tile * Gc + cp) * VW ...
 * so a group reads each B row it needs as one contiguous run (GE-SpMM's
 * row-split mapping; Huang et al., SC'20).  Every lane of a group reads the
 * row's col_ind/values itself (one broadcast transaction per entry, L1
 * hits), 4 entries per step, the next step's indices loaded while this
 * step's B vectors are in flight; no shuffles, so the groups of a warp run
 * independent loops and registers stay under 64 (occupancy is what hides
 * the gather latency: the first design, with register-staged entries and
 * 80-128 registers, ran at a low achieved occupancy; measured:
 * docs/spmm.md).  Rows longer than the plan's long_len are skipped by the
 * row blocks and cut into near-equal segments that the blocks after them
 * process into f32 partial sums in the workspace; segfix_kernel then adds
 * each long row's segments in order and writes alpha * sum + beta * C once
 * (deterministic).
 *
 * MERGE uses a second lane mapping.  A warp holds one group of
 * G = 2^(lg_gc + lg_gk) = 32 lanes.  Lane gl has a column part cp = gl % Gc
 * and an entry part kp = gl / Gc:
 *   - the Gc column parts cover a tile of n: each lane owns NV vectors of VW
 *     consecutive elements, interleaved so that one vector index q of the
 *     Gc lanes is contiguous in memory: columns
 *     tile0 + (q * Gc + cp) * VW ... + VW - 1;
 *   - the Gk entry parts split the row's entries (entry t of a chunk goes
 *     to part t % Gk) and are summed by a butterfly of shuffles at the end.
 * The row's col_ind/values are staged a chunk of G entries at a time, one
 * entry per lane, coalesced, with the next chunk prefetched; the entries
 * are broadcast by shuffles.  B is read in batches of 8/NV entries x NV
 * vectors per lane before any FMA.  Accumulation in f32.
 *
 * MERGE (merge_kernel + fixup_kernel): Merrill & Garland's merge path over
 * row ends and entries, cut by the plan into units of equal length, one
 * warp per unit (G = 32, one row at a time).  A row wholly inside a unit
 * is written to C directly; a row cut by a unit boundary leaves partial
 * sums in the workspace: the unit that starts it (and every unit wholly
 * inside it) its tail slot, the unit that completes it its head slot.  The
 * fix-up kernel then sums, per split row and in unit order, the tails of
 * the units before the completing one and its head, and writes
 * alpha * sum + beta * C once: deterministic, one rounding of C.
 *
 * int64 offsets everywhere (row * ldc, column * ldb, positions). */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <mutex>

#include "sparse.h"
#include "spmm_model.h"
#include "common.cuh"
#include "convert.cuh"

namespace {

using gk::elem;

constexpr unsigned kFull = 0xffffffffu;
constexpr int kMaxBlock = 256;
/* Register cap of the main kernels: at least 16 warps per SM, and no
 * spills (ptxas left alone spills a few variants at 64-80 registers while
 * leaving others at 120: its own occupancy heuristic). */
constexpr int kMaxRegs = 128;
constexpr int kFixBlock = 128;
/* ROW_SPLIT: entries per step of a row's loop (B vectors in flight per
 * lane); the kernel is bounded to 64 registers (4 blocks of 256 per SM):
 * it is latency-bound, and warps in flight are what hides the latency */
constexpr int kUnroll = 4;

/* Everything a kernel needs, by value (kernel parameter space). */
struct Params {
  const void *rp, *ci, *va, *B;
  void *C;
  int64_t m, n;
  int64_t sbr, sbc, scr, scc;
  float alpha, beta;
  int lg_gc, lg_gk, lg_r;
  int64_t ntiles;
  /* MERGE */
  const int64_t *part;
  int64_t units;
  float *partials;
  int64_t npad;
  const int64_t *runs;
  /* ROW_SPLIT: rows longer than long_len (0: none) are cut into nseg
   * segments (seg[2 s], seg[2 s + 1]) = entry range, processed into
   * partials slot s by the blocks other than the row_blocks row blocks:
   * after them, or before them when seg_first */
  int64_t long_len, row_blocks, nseg;
  const int64_t *seg;
  int seg_first;
};

/* p's matrices with their types: A's row_ptr, col_ind and values, B, C. */
template <typename T, typename I>
struct Operands {
  const I *rp, *ci;
  const T *va, *B;
  T *C;
};
template <typename T, typename I>
__device__ __forceinline__ Operands<T, I> operands(const Params &p) {
  return Operands<T, I>{static_cast<const I *>(p.rp), static_cast<const I *>(p.ci),
                        static_cast<const T *>(p.va), static_cast<const T *>(p.B),
                        static_cast<T *>(p.C)};
}

template <int VW>
struct Raw {
  typedef uint4 type; /* 16 bytes */
};
template <>
struct Raw<1> {
  typedef float type; /* one element, already f32 */
};

/* Per-lane columns of one tile: the first column of each vector and how
 * many of its VW elements lie inside n. */
template <int VW, int NV>
struct Cols {
  int64_t col[NV];
  int cnt[NV];
  __device__ void set(int64_t tile, int64_t n, int gc, int cp) {
#pragma unroll
    for (int q = 0; q < NV; q++) {
      col[q] = gk_spmm_lane_col(tile, q, gc, cp, NV, VW);
      const int64_t left = n - col[q];
      cnt[q] = left <= 0 ? 0 : left >= VW ? VW : (int)left;
    }
  }
};

/* One B vector (or element) at element offset off: a full 16-byte load, or
 * cnt < VW elements (zero-filled), or nothing (cnt == 0). */
template <typename T, int VW>
__device__ __forceinline__ typename Raw<VW>::type load_b(const T *B, int64_t off, int cnt) {
  if constexpr (VW == 1) {
    return cnt > 0 ? elem<T>::load(B + off) : 0.0f;
  } else {
    union {
      uint4 u;
      T t[VW];
    } r;
    r.u = make_uint4(0, 0, 0, 0);
    if (cnt == VW) {
      r.u = __ldg(reinterpret_cast<const uint4 *>(B + off));
    } else if (cnt > 0) {
#pragma unroll
      for (int e = 0; e < VW; e++)
        if (e < cnt) r.t[e] = B[off + e];
    }
    return r.u;
  }
}

template <typename T, int VW>
__device__ __forceinline__ void fma_raw(float w, const typename Raw<VW>::type &r, float *acc) {
  if constexpr (VW == 1) {
    acc[0] = fmaf(w, r, acc[0]);
  } else {
    float f[VW];
    elem<T>::unpack(r, f);
#pragma unroll
    for (int e = 0; e < VW; e++) acc[e] = fmaf(w, f[e], acc[e]);
  }
}

/* Accumulates the group's entries [a, a + len) into acc.  maxlen: the
 * largest len among the warp's groups (warp-uniform).  G = 2^lg_g lanes per
 * group, Gk = 2^lg_gk entry parts; gl the lane in the group, kp its part. */
template <typename T, typename I, int VW, int NV>
__device__ __forceinline__ void accumulate(const Params &p, const I *ci, const T *va,
                                           const T *B, int64_t a, int64_t len,
                                           int64_t maxlen, int lg_g, int lg_gk, int gl, int kp,
                                           const Cols<VW, NV> &cb, float (&acc)[NV][VW]) {
  constexpr int kBatch = 8 / NV;
  const int G = 1 << lg_g;
  const int per_chunk = G >> lg_gk;
  I c_next = 0;
  float v_next = 0.0f;
  if (gl < len) {
    c_next = ci[a + gl];
    v_next = elem<T>::to_f(va[a + gl]);
  }
  for (int64_t h = 0; h < maxlen; h += G) {
    const I c_cur = c_next;
    const float v_cur = v_next;
    if (h + G < maxlen && h + G + gl < len) { /* prefetch the next chunk */
      c_next = ci[a + h + G + gl];
      v_next = elem<T>::to_f(va[a + h + G + gl]);
    }
    const int64_t rem = maxlen - h;
    const int iters = rem >= G ? per_chunk : (int)((rem + (1 << lg_gk) - 1) >> lg_gk);
    for (int t0 = 0; t0 < iters; t0 += kBatch) {
      int64_t off[kBatch];
      float w[kBatch];
#pragma unroll
      for (int u = 0; u < kBatch; u++) {
        const int src = ((t0 + u) << lg_gk) + kp;
        const I c = __shfl_sync(kFull, c_cur, src, G);
        const float v = __shfl_sync(kFull, v_cur, src, G);
        const bool ok = t0 + u < iters && h + src < len;
        w[u] = ok ? v : 0.0f;
        off[u] = ok ? (int64_t)c * p.sbr : -1;
      }
      typename Raw<VW>::type r[kBatch][NV];
#pragma unroll
      for (int u = 0; u < kBatch; u++)
#pragma unroll
        for (int q = 0; q < NV; q++)
          r[u][q] = load_b<T, VW>(B, off[u] + cb.col[q] * p.sbc, off[u] >= 0 ? cb.cnt[q] : 0);
#pragma unroll
      for (int u = 0; u < kBatch; u++)
#pragma unroll
        for (int q = 0; q < NV; q++) fma_raw<T, VW>(w[u], r[u][q], acc[q]);
    }
  }
}

/* Sums the Gk entry parts of each group (butterfly; every lane ends with
 * the group's total for its column part). */
template <int VW, int NV>
__device__ __forceinline__ void reduce_parts(float (&acc)[NV][VW], int lg_gc, int lg_g) {
  for (int s = 1 << lg_gc; s < (1 << lg_g); s <<= 1)
#pragma unroll
    for (int q = 0; q < NV; q++)
#pragma unroll
      for (int e = 0; e < VW; e++) acc[q][e] += __shfl_xor_sync(kFull, acc[q][e], s);
}

/* *dst = v + beta * *dst, rounded once (*dst not read when beta == 0). */
template <typename T>
__device__ __forceinline__ void store_c(const Params &p, T *dst, float v) {
  if (p.beta != 0.0f) v = fmaf(p.beta, elem<T>::to_f(*dst), v);
  *dst = elem<T>::from_f(v);
}

/* The fix-up kernels' body: one block per row of runs, runs[3 b] = (row,
 * x, y); C[row, j] = alpha * sum + beta * C[row, j] for every column j,
 * sum in a fixed order: SEG (ROW_SPLIT's long rows) the partials of
 * segments x .. x + y - 1, else (MERGE) the tails of units x .. y - 1 and
 * the head of unit y. */
template <typename T, bool SEG>
__device__ __forceinline__ void fix_row(const Params &p) {
  const int64_t row = p.runs[3 * blockIdx.x];
  const int64_t x = p.runs[3 * blockIdx.x + 1], y = p.runs[3 * blockIdx.x + 2];
  T *C = static_cast<T *>(p.C);
  for (int64_t j = threadIdx.x; j < p.n; j += blockDim.x) {
    float sum = 0.0f;
    if (SEG) {
      for (int64_t s = x; s < x + y; s++) sum += p.partials[s * p.npad + j];
    } else {
      for (int64_t u = x; u < y; u++) sum += p.partials[(2 * u + 1) * p.npad + j];
      sum += p.partials[2 * y * p.npad + j];
    }
    store_c<T>(p, C + row * p.scr + j * p.scc, p.alpha * sum);
  }
}

/* C[r, cols] = alpha * acc + beta * C[r, cols] (C not read when beta == 0). */
template <typename T, int VW, int NV>
__device__ __forceinline__ void store_row(const Params &p, T *C, int64_t r,
                                          const Cols<VW, NV> &cb, const float (&acc)[NV][VW]) {
#pragma unroll
  for (int q = 0; q < NV; q++) {
    const int cnt = cb.cnt[q];
    if (cnt <= 0) continue;
    const int64_t off = r * p.scr + cb.col[q] * p.scc;
    float o[VW];
#pragma unroll
    for (int e = 0; e < VW; e++) o[e] = p.alpha * acc[q][e];
    bool done = false;
    if constexpr (VW > 1) {
      if (cnt == VW) {
        uint4 *dst = reinterpret_cast<uint4 *>(C + off);
        if (p.beta != 0.0f) {
          float c[VW];
          elem<T>::unpack(__ldcs(dst), c);
#pragma unroll
          for (int e = 0; e < VW; e++) o[e] = fmaf(p.beta, c[e], o[e]);
        }
        __stcs(dst, elem<T>::pack(o));
        done = true;
      }
    }
    if (!done) {
#pragma unroll
      for (int e = 0; e < VW; e++) {
        if (e >= cnt) break;
        store_c<T>(p, C + off + e * p.scc, o[e]);
      }
    }
  }
}

/* Partial sums of a split row into its slot (npad floats, 16-byte aligned). */
template <int VW, int NV>
__device__ __forceinline__ void store_partial(float *slot, const Cols<VW, NV> &cb,
                                              const float (&acc)[NV][VW]) {
#pragma unroll
  for (int q = 0; q < NV; q++) {
    const int cnt = cb.cnt[q];
    float *dst = slot + cb.col[q];
    if constexpr (VW >= 4) {
      if (cnt == VW) {
#pragma unroll
        for (int e = 0; e < VW; e += 4)
          *reinterpret_cast<float4 *>(dst + e) =
              make_float4(acc[q][e], acc[q][e + 1], acc[q][e + 2], acc[q][e + 3]);
        continue;
      }
    }
#pragma unroll
    for (int e = 0; e < VW; e++)
      if (e < cnt) dst[e] = acc[q][e];
  }
}

template <int VW, int NV>
__device__ __forceinline__ void zero(float (&acc)[NV][VW]) {
#pragma unroll
  for (int q = 0; q < NV; q++)
#pragma unroll
    for (int e = 0; e < VW; e++) acc[q][e] = 0.0f;
}

/* ---- ROW_SPLIT ------------------------------------------------------------ */

/* The U entries [base, base + U) of col_ind / values into c, v (those at
 * lim or past it as 0). */
template <typename T, typename I, int U>
__device__ __forceinline__ void fetch_entries(const I *ci, const T *va, int64_t base, int64_t lim,
                                              I (&c)[U], float (&v)[U]) {
#pragma unroll
  for (int u = 0; u < U; u++) {
    const bool ok = base + u < lim;
    c[u] = ok ? ci[base + u] : 0;
    v[u] = ok ? elem<T>::to_f(va[base + u]) : 0.0f;
  }
}

/* The B vectors (or elements) of the U entries j .. j + U - 1 (of the
 * row's e) whose columns are in c: column offset cb, cnt elements each. */
template <typename T, typename I, int VW, int U>
__device__ __forceinline__ void load_entries_b(const Params &p, const T *B, const I (&c)[U],
                                               int64_t j, int64_t e, int64_t cb, int cnt,
                                               typename Raw<VW>::type (&r)[U]) {
#pragma unroll
  for (int u = 0; u < U; u++)
    r[u] = load_b<T, VW>(B, (int64_t)c[u] * p.sbr + cb, j + u < e ? cnt : 0);
}

/* Entries [a, e) of one row (or segment) into acc: kUnroll entries per
 * step, their col_ind/values read by every lane of the group (one
 * broadcast transaction each, L1-cached), the next step's read while this
 * step's B vectors are in flight.  No shuffles: the groups of a warp run
 * independent loops. */
template <typename T, typename I, int VW>
__device__ __forceinline__ void lean_accumulate(const Params &p, const I *ci, const T *va,
                                                const T *B, int64_t a, int64_t e, int64_t col,
                                                int cnt, float (&acc)[VW]) {
  constexpr int U = kUnroll;
  I c[U];
  float v[U];
  fetch_entries<T, I, U>(ci, va, a, e, c, v);
  const int64_t cb = col * p.sbc;
  for (int64_t j = a; j < e; j += U) {
    typename Raw<VW>::type r[U];
    load_entries_b<T, I, VW, U>(p, B, c, j, e, cb, cnt, r);
    float w[U];
#pragma unroll
    for (int u = 0; u < U; u++) w[u] = v[u];
    fetch_entries<T, I, U>(ci, va, j + U, e, c, v);
#pragma unroll
    for (int u = 0; u < U; u++) fma_raw<T, VW>(w[u], r[u], acc);
  }
}

/* The lane's first column col and element count cnt in column tile t
 * (cnt 0: the lane has no columns there). */
template <int VW>
__device__ __forceinline__ void tile_cols(const Params &p, int64_t t, int gc, int cp,
                                          int64_t &col, int &cnt) {
  col = gk_spmm_lane_col(t, 0, gc, cp, 1, VW);
  const int64_t left = p.n - col;
  cnt = left <= 0 ? 0 : left >= VW ? VW : (int)left;
}

/* The entry range [a, e) of row r -- empty (skip) for a row longer than
 * long_len, whose segments other blocks take. */
template <typename I>
__device__ __forceinline__ void row_bounds(const Params &p, const I *rp, int64_t r, int64_t &a,
                                           int64_t &e, bool &skip) {
  a = rp[r];
  e = rp[r + 1];
  skip = p.long_len > 0 && e - a > p.long_len; /* segments */
  if (skip) e = a;
}

/* Rows: 2^lg_r row groups of 2^lg_gc lanes per warp, a lane owning one
 * 16-byte vector (or element) of C's row in a column tile, grid-stride over
 * rows in row_blocks blocks (the first ones, or the last ones when
 * seg_first), each row's column tiles in order.  Rows longer than long_len
 * are skipped there; the other blocks process their segments into the
 * workspace (segfix_kernel sums them in order).  The block scheduler
 * starts blocks roughly in index order, so seg_first starts the long chains
 * first. */
template <typename T, typename I, int VW, int NV>
__global__ void __launch_bounds__(kMaxBlock, 4) rowsplit_kernel(Params p) {
  const auto [rp, ci, va, B, C] = operands<T, I>(p);
  const int lane = threadIdx.x & 31;
  const int g = lane >> p.lg_gc;
  const int cp = lane & ((1 << p.lg_gc) - 1);
  const int gc = 1 << p.lg_gc;
  const int R = 1 << p.lg_r;
  const int wpb = blockDim.x >> 5;
  const int wib = threadIdx.x >> 5;
  const int64_t role =
      gk_spmm_block_role((int64_t)blockIdx.x, (int64_t)gridDim.x, p.row_blocks, p.seg_first);
  if (role >= 0) {
    const int64_t warp = role * wpb + wib;
    const int64_t nwarps = p.row_blocks * wpb;
    /* A group takes rows warp * R + g + k * stride and, for each row,
     * its column tiles in order: items (row, tile) run as one pipeline.
     * While an item's last B vectors are in flight, the next item's
     * first col_ind/values are loaded (its bounds read one item earlier,
     * or the same row's when only the tile changes), so an item costs its
     * steps' B round trips, not also the row_ptr and col_ind round trips
     * before them; a row's later tiles find its entries in L1. */
    constexpr int U = kUnroll;
    const int64_t stride = nwarps * R;
    /* one tile: a lane past n has nothing to do in any item */
    if (p.ntiles == 1 && gk_spmm_lane_col(0, 0, gc, cp, 1, VW) >= p.n) return;
    int64_t r = warp * R + g, t = 0;
    int64_t a = 0, e = 0;
    bool skip = true;
    if (r < p.m) row_bounds<I>(p, rp, r, a, e, skip);
    I c[U];
    float v[U];
    fetch_entries<T, I, U>(ci, va, a, e, c, v);
    while (r < p.m) {
      int64_t col;
      int cnt;
      tile_cols<VW>(p, t, gc, cp, col, cnt);
      int64_t r2 = r, t2 = t + 1, a2 = a, e2 = e;
      bool skip2 = skip;
      if (t2 == p.ntiles) { /* the next row */
        t2 = 0;
        r2 = r + stride;
        a2 = e2 = 0;
        skip2 = true;
        if (r2 < p.m) row_bounds<I>(p, rp, r2, a2, e2, skip2);
      }
      float acc[1][VW];
#pragma unroll
      for (int x = 0; x < VW; x++) acc[0][x] = 0.0f;
      const int64_t cb = col * p.sbc;
      for (int64_t j = a; j < e; j += U) {
        typename Raw<VW>::type rb[U];
        load_entries_b<T, I, VW, U>(p, B, c, j, e, cb, cnt, rb);
        float w[U];
        const bool last = j + U >= e;
        const int64_t base = last ? a2 : j + U, lim = last ? e2 : e;
#pragma unroll
        for (int u = 0; u < U; u++) w[u] = v[u];
        fetch_entries<T, I, U>(ci, va, base, lim, c, v);
#pragma unroll
        for (int u = 0; u < U; u++) fma_raw<T, VW>(w[u], rb[u], acc[0]);
      }
      if (a >= e) /* no step ran: the next item's first step now */
        fetch_entries<T, I, U>(ci, va, a2, e2, c, v);
      if (!skip) {
        Cols<VW, 1> cbs;
        cbs.col[0] = col;
        cbs.cnt[0] = cnt;
        store_row<T, VW, 1>(p, C, r, cbs, acc);
      }
      r = r2;
      t = t2;
      a = a2;
      e = e2;
      skip = skip2;
    }
    return;
  }
  const int64_t warp = (-1 - role) * wpb + wib;
  const int64_t nwarps = ((int64_t)gridDim.x - p.row_blocks) * wpb;
  for (int64_t s = warp * R + g; s - g < p.nseg; s += nwarps * R) {
    if (s >= p.nseg) continue;
    const int64_t a = p.seg[2 * s], e = p.seg[2 * s + 1];
    for (int64_t t = 0; t < p.ntiles; t++) {
      const int64_t col = gk_spmm_lane_col(t, 0, gc, cp, 1, VW);
      const int64_t left = p.n - col;
      if (left <= 0) break;
      const int cnt = left >= VW ? VW : (int)left;
      float acc[1][VW];
#pragma unroll
      for (int x = 0; x < VW; x++) acc[0][x] = 0.0f;
      lean_accumulate<T, I, VW>(p, ci, va, B, a, e, col, cnt, acc[0]);
      Cols<VW, 1> cb;
      cb.col[0] = col;
      cb.cnt[0] = cnt;
      store_partial<VW, 1>(p.partials + s * p.npad, cb, acc);
    }
  }
}

/* One block per long row: runs[3 b] = (row, first segment, segments).
 * C[row] = alpha * (sum of its segments in order) + beta * C[row]. */
template <typename T>
__global__ void __launch_bounds__(kFixBlock) segfix_kernel(Params p) {
  fix_row<T, true>(p);
}

/* ---- MERGE ------------------------------------------------------------------- */

template <typename T, typename I, int VW, int NV>
__global__ void __maxnreg__(kMaxRegs) merge_kernel(Params p) {
  const int64_t u = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) >> 5;
  if (u >= p.units) return; /* the whole warp */
  const auto [rp, ci, va, B, C] = operands<T, I>(p);
  const int lane = threadIdx.x & 31;
  const int cp = lane & ((1 << p.lg_gc) - 1);
  const int kp = lane >> p.lg_gc;
  const int64_t i0 = p.part[2 * u], j0 = p.part[2 * u + 1];
  const int64_t i1 = p.part[2 * u + 2], j1 = p.part[2 * u + 3];
  const int64_t rlast = i1 < p.m ? i1 : i1 - 1; /* row i1: the tail, if any */
  for (int64_t t = 0; t < p.ntiles; t++) {
    Cols<VW, NV> cb;
    cb.set(t, p.n, 1 << p.lg_gc, cp);
    int64_t base = i0;
    int64_t mine = rp[base + lane < p.m ? base + lane : p.m];
    for (int64_t r = i0; r <= rlast; r++) {
      if (r + 1 - base > 31) { /* next 32 row pointers */
        base = r;
        mine = rp[base + lane < p.m ? base + lane : p.m];
      }
      const int64_t s = __shfl_sync(kFull, mine, (int)(r - base));
      const int64_t e = __shfl_sync(kFull, mine, (int)(r + 1 - base));
      int64_t a, b;
      const int kind = gk_merge_row(r, s, e, j0, i1, j1, &a, &b); /* warp-uniform */
      if (kind == GK_MERGE_SKIP) break; /* row i1 without entries here: no tail */
      float acc[NV][VW];
      zero(acc);
      accumulate<T, I, VW, NV>(p, ci, va, B, a, b - a, b - a, 5, p.lg_gk, lane, kp, cb, acc);
      reduce_parts(acc, p.lg_gc, 5);
      if (kp == 0) {
        if (kind == GK_MERGE_DIRECT)
          store_row<T, VW, NV>(p, C, r, cb, acc);
        else
          store_partial(p.partials + (2 * u + (kind == GK_MERGE_TAIL ? 1 : 0)) * p.npad, cb,
                        acc);
      }
    }
  }
}

/* One block per split row: runs[3 * i] = (row, first unit, completing
 * unit).  C[row] = alpha * (tails of first..completing-1 + head of
 * completing) + beta * C[row], summed in unit order. */
template <typename T>
__global__ void __launch_bounds__(kFixBlock) fixup_kernel(Params p) {
  fix_row<T, false>(p);
}

/* ---- SCALE: C = beta * C (no entries) ----------------------------------------- */

template <typename T>
__global__ void __launch_bounds__(256) scale_kernel(Params p) {
  T *C = static_cast<T *>(p.C);
  const int64_t total = p.m * p.n;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total;
       i += (int64_t)gridDim.x * blockDim.x) {
    /* row-major (scc == 1): consecutive threads along a row */
    const int64_t r = p.scc == 1 ? i / p.n : i % p.m;
    const int64_t j = p.scc == 1 ? i % p.n : i / p.m;
    T *dst = C + r * p.scr + j * p.scc;
    *dst = elem<T>::from_f(p.beta == 0.0f ? 0.0f : p.beta * elem<T>::to_f(*dst));
  }
}

/* ---- partition (plan time) ----------------------------------------------------- */

/* Unit u starts at diagonal d = min(u * per, items) of the merge path of
 * A = row ends (row_ptr[1..m]) and B = entry indices 0..nnz-1: the
 * smallest x with A[x] > B[d - x - 1] (Merrill & Garland, SC'16). */
template <typename I>
__global__ void partition_kernel(const I *rp, int64_t m, int64_t nnz, int64_t units,
                                 int64_t per, int64_t *part, int64_t *rp_at) {
  const int64_t u = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (u > units) return;
  const int64_t items = m + nnz;
  int64_t d = u * per;
  if (d > items || u == units) d = items;
  const int64_t lo = gk_merge_search(rp, sizeof(I) == 8, m, nnz, d);
  part[2 * u] = lo;
  part[2 * u + 1] = d - lo;
  rp_at[u] = rp[lo];
}

/* ---- kernel table ---------------------------------------------------------------- */

typedef void (*kernel_fn)(Params);

/* index: ((kind * 3 + dtype) * 2 + idx64) * 4 + vec * 2 + (nv - 1), kind 0
 * ROW_SPLIT, 1 MERGE; then 3 fix-up and 3 scale kernels by dtype. */
#define GK_NV(K, T, I, VW) K<T, I, VW, 1>, K<T, I, VW, 2>
#define GK_VEC(K, T, I) GK_NV(K, T, I, 1), GK_NV(K, T, I, 16 / sizeof(T))
#define GK_IDX(K, T) GK_VEC(K, T, int), GK_VEC(K, T, long long)
#define GK_KIND(K) GK_IDX(K, float), GK_IDX(K, __half), GK_IDX(K, __nv_bfloat16)

constexpr int kMain = 2 * 3 * 2 * 4;
constexpr int kFix0 = kMain, kScale0 = kMain + 3, kSegFix0 = kMain + 6,
              kNumKernels = kMain + 9;

/* ROW_SPLIT has one lane vector (nv = 1): both nv slots hold it */
#define GK_NV1(K, T, I, VW) K<T, I, VW, 1>, K<T, I, VW, 1>
#define GK_VEC1(K, T, I) GK_NV1(K, T, I, 1), GK_NV1(K, T, I, 16 / sizeof(T))
#define GK_IDX1(K, T) GK_VEC1(K, T, int), GK_VEC1(K, T, long long)
#define GK_KIND1(K) GK_IDX1(K, float), GK_IDX1(K, __half), GK_IDX1(K, __nv_bfloat16)

const kernel_fn kKernels[kNumKernels] = {
    GK_KIND1(rowsplit_kernel), GK_KIND(merge_kernel),
    fixup_kernel<float>,      fixup_kernel<__half>,
    fixup_kernel<__nv_bfloat16>, scale_kernel<float>,
    scale_kernel<__half>,     scale_kernel<__nv_bfloat16>,
    segfix_kernel<float>,     segfix_kernel<__half>,
    segfix_kernel<__nv_bfloat16>};

int kernel_index(int kernel, int dtype, int idx64, int vec, int nv) {
  if (kernel == GKO_SPMM_KERNEL_SCALE) return kScale0 + dtype;
  if (kernel < 0) return kFix0 + dtype; /* -1: fix-up */
  const int kind = kernel == GKO_SPMM_KERNEL_MERGE ? 1 : 0;
  return ((kind * 3 + dtype) * 2 + idx64) * 4 + vec * 2 + (nv - 1);
}

/* Occupancy cache: per device ordinal (below kMaxDevices) and kernel. */
constexpr int kMaxDevices = 64;
struct OccEntry {
  int block, grid;
};
std::mutex g_occ_mu;
OccEntry g_occ[kMaxDevices][kNumKernels];

} // namespace

extern "C" gko_status_t gk_spmm_occupancy(int kernel, int dtype, int idx64, int vec, int nv,
                                          int *block, int *grid) {
  const int k = kernel_index(kernel, dtype, idx64, vec, nv);
  int dev = 0;
  cudaError_t e = cudaGetDevice(&dev);
  if (e != cudaSuccess) return gk_cuda_fail(e, "cudaGetDevice");
  const bool cache = dev >= 0 && dev < kMaxDevices;
  if (cache) {
    std::lock_guard<std::mutex> lock(g_occ_mu);
    if (g_occ[dev][k].block > 0) {
      *block = g_occ[dev][k].block;
      *grid = g_occ[dev][k].grid;
      return GKO_STATUS_SUCCESS;
    }
  }
  const int limit = k >= kSegFix0 ? kFixBlock : k >= kScale0 ? 256 : k >= kFix0 ? kFixBlock
                                                                                : kMaxBlock;
  int b = 0, g = 0;
  e = cudaOccupancyMaxPotentialBlockSize(&g, &b, kKernels[k], 0, limit);
  if (e != cudaSuccess) return gk_cuda_fail(e, "cudaOccupancyMaxPotentialBlockSize (SpMM)");
  if (cache) {
    std::lock_guard<std::mutex> lock(g_occ_mu);
    g_occ[dev][k].block = b;
    g_occ[dev][k].grid = g;
  }
  *block = b;
  *grid = g;
  return GKO_STATUS_SUCCESS;
}

extern "C" gko_status_t gk_spmm_launch(const gk_spmm_args *a) {
  Params p;
  p.rp = a->row_ptr;
  p.ci = a->col_ind;
  p.va = a->values;
  p.B = a->B;
  p.C = a->C;
  p.m = a->m;
  p.n = a->n;
  p.sbr = a->sbr;
  p.sbc = a->sbc;
  p.scr = a->scr;
  p.scc = a->scc;
  p.alpha = a->alpha;
  p.beta = a->beta;
  p.lg_gc = a->shape.lg_gc;
  p.lg_gk = a->shape.lg_gk;
  p.lg_r = a->shape.lg_r;
  p.ntiles = a->shape.ntiles;
  p.part = a->part;
  p.units = a->units;
  p.partials = a->partials;
  p.npad = a->npad;
  p.runs = a->runs;
  p.long_len = a->long_len;
  p.nseg = a->nseg;
  p.seg = a->seg;
  p.seg_first = a->seg_first;
  p.row_blocks = a->row_blocks > 0 ? a->row_blocks : a->shape.grid;
  cudaStream_t st = (cudaStream_t)a->stream;
  /* The kernels' warp arithmetic: whole warps, lg_gc + lg_gk + lg_r = 5
   * (MERGE: one row group per warp).  A plan that breaks it is a bug in
   * src/spmm.c; refuse rather than launch partial warps. */
  if (a->kernel != GKO_SPMM_KERNEL_SCALE) {
    const gk_spmm_shape &sh = a->shape;
    const bool ok = sh.block >= 32 && sh.block <= kMaxBlock && sh.block % 32 == 0 &&
                    sh.grid >= 1 && sh.grid <= gk::kMaxGridX && sh.lg_gc >= 0 &&
                    sh.lg_gk >= 0 && sh.lg_r >= 0 && sh.lg_gc + sh.lg_gk + sh.lg_r == 5 &&
                    sh.ntiles >= 1 &&
                    (sh.nv == 1 || sh.nv == 2) &&
                    (a->kernel != GKO_SPMM_KERNEL_MERGE || sh.lg_r == 0);
    if (!ok)
      return gk_fail(GKO_STATUS_INTERNAL,
                     "SpMM launch shape is inconsistent (block %d, grid %lld, lanes 2^%d x "
                     "2^%d x 2^%d, nv %d, %lld tiles): a bug in gko",
                     sh.block, (long long)sh.grid, sh.lg_gc, sh.lg_gk, sh.lg_r, sh.nv,
                     (long long)sh.ntiles);
  }
  const int k = kernel_index(a->kernel, a->dtype, a->idx64, a->shape.vec, a->shape.nv);
  cudaError_t e = gk::launch(kKernels[k], dim3((unsigned)a->shape.grid),
                             dim3((unsigned)a->shape.block), st, p);
  if (e != cudaSuccess) return gk_cuda_fail(e, "SpMM kernel launch");
  if (a->kernel == GKO_SPMM_KERNEL_ROW_SPLIT && a->nruns > 0) {
    /* long rows: their segments' sums (nruns < 2^31: plan-time tables) */
    Params q = p;
    q.runs = a->runs;
    e = gk::launch(kKernels[kSegFix0 + a->dtype], dim3((unsigned)a->nruns), dim3(kFixBlock),
                   st, q);
    if (e != cudaSuccess) return gk_cuda_fail(e, "SpMM segment sum kernel launch");
  }
  if (a->kernel == GKO_SPMM_KERNEL_MERGE && a->nruns > 0) {
    int64_t left = a->nruns;
    /* grids are limited to 2^31 - 1 blocks in x: launch in slices */
    for (int64_t first = 0; left > 0; first += gk::kMaxGridX) {
      const int64_t cnt = gk::grid_x(left);
      Params q = p;
      q.runs = a->runs + 3 * first;
      e = gk::launch(kKernels[kFix0 + a->dtype], dim3((unsigned)cnt), dim3(kFixBlock), st, q);
      if (e != cudaSuccess) return gk_cuda_fail(e, "SpMM fix-up kernel launch");
      left -= cnt;
    }
  }
  return GKO_STATUS_SUCCESS;
}

extern "C" gko_status_t gk_spmm_partition(const struct gko_csr_s *a, int64_t units,
                                          int64_t per_unit, int64_t *part, int64_t *rp_at,
                                          void *stream) {
  const int block = 256;
  const int64_t blocks = (units + 1 + block - 1) / block;
  cudaError_t e;
  if (a->index_type == GKO_INDEX_INT64)
    e = gk::launch(partition_kernel<long long>, dim3((unsigned)blocks), dim3(block),
                   (cudaStream_t)stream, (const long long *)a->row_ptr, a->m, a->nnz, units,
                   per_unit, part, rp_at);
  else
    e = gk::launch(partition_kernel<int>, dim3((unsigned)blocks), dim3(block),
                   (cudaStream_t)stream, (const int *)a->row_ptr, a->m, a->nnz, units, per_unit,
                   part, rp_at);
  if (e != cudaSuccess) return gk_cuda_fail(e, "SpMM partition kernel launch");
  return GKO_STATUS_SUCCESS;
}
