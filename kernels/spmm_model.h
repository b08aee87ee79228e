/* spmm_model.h -- the SpMM plan model: pure functions shared by
 * src/spmm.c, kernels/spmm.cu and the host-only tests (tests/test_spmm.c,
 * suite spmm_model), so that the index arithmetic the GPU runs is the
 * arithmetic the tests check. */
#ifndef GK_KERNELS_SPMM_MODEL_H
#define GK_KERNELS_SPMM_MODEL_H

#include <stdint.h>

#include "sparse.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__CUDACC__)
#define GK_HD __host__ __device__
#else
#define GK_HD
#endif

static inline GK_HD int64_t gk_ceil_div64(int64_t a, int64_t b) { return (a + b - 1) / b; }

static inline int gk_ceil_log2(int64_t v) {
  int l = 0;
  while (((int64_t)1 << l) < v) l++;
  return l;
}

static inline int gk_floor_log2(double v) {
  int l = 0;
  while (v >= 2.0) {
    v /= 2.0;
    l++;
  }
  return l;
}

/* Lane mapping of one SpMM path (vw elements per vector: 16 / element size
 * on the vector path, 1 on the scalar path).  From 16 vectors of n on, each
 * lane owns two vectors (GE-SpMM's coarse-grained warp merging); lanes
 * across n up to 32, then column tiles.  Entry parts: about one load batch
 * (8 / nv entries) of the mean row each; the remaining lanes take more rows
 * (ROW_SPLIT) or more entry parts (MERGE, one row at a time per warp).
 * Invariants (checked by the spmm_model tests): lg_gc + lg_gk + lg_r == 5;
 * MERGE has lg_r == 0; the tiles cover n exactly:
 * (ntiles - 1) * span < n <= ntiles * span, span = 2^lg_gc * nv * vw. */
static inline void gk_spmm_shape_for(int kernel, int64_t n, int vw, double mean,
                                     gk_spmm_shape *s) {
  const int64_t nvec = gk_ceil_div64(n, vw);
  s->vec = vw > 1;
  if (kernel != GKO_SPMM_KERNEL_MERGE) {
    /* ROW_SPLIT: one vector per lane, a group per row as wide as the
     * vectors of n (at most the warp; column tiles beyond) */
    s->nv = 1;
    s->lg_gk = 0;
    s->lg_gc = gk_ceil_log2(nvec < 32 ? nvec : 32);
    s->ntiles = gk_ceil_div64(nvec, (int64_t)1 << s->lg_gc);
    s->lg_r = 5 - s->lg_gc;
    (void)mean;
    return;
  }
  if (nvec > 64) {
    s->lg_gc = 5;
    s->nv = 2;
    s->ntiles = gk_ceil_div64(nvec, 64);
    s->lg_gk = 0;
  } else {
    s->nv = nvec >= 16 ? 2 : 1;
    s->lg_gc = gk_ceil_log2(gk_ceil_div64(nvec, s->nv));
    s->ntiles = 1;
    const int spare = 5 - s->lg_gc;
    int gk = gk_floor_log2(mean * s->nv / 8.0);
    if (gk > spare || kernel == GKO_SPMM_KERNEL_MERGE) gk = spare;
    s->lg_gk = gk;
  }
  s->lg_r = kernel == GKO_SPMM_KERNEL_MERGE ? 0 : 5 - s->lg_gc - s->lg_gk;
}

/* Threads per block for a kernel whose warps are its work items, from the
 * occupancy API's block size (a multiple of 32 up to 1024): as large as
 * that, but halved (in whole warps) while the grid would give fewer than
 * two blocks per SM.  Always a multiple of 32, at least 32: every kernel
 * of spmm.cu derives its warp index from the global thread index and
 * shuffles with a full mask, so a partial warp would both alias another
 * warp's work and shuffle with lanes that do not exist (blocks of 80 and
 * 56 threads gave duplicated rows, illegal addresses and hangs). */
static inline int gk_spmm_fit_block(int occ_block, int64_t warps, int64_t sms) {
  int wpb = occ_block / 32;
  if (wpb < 1) wpb = 1;
  if (sms < 1) sms = 1;
  while (wpb > 2 && gk_ceil_div64(warps, wpb) < 2 * sms) wpb = (wpb + 1) / 2;
  return wpb * 32;
}

/* First column of vector q of column part cp in column tile `tile`: the gc
 * column parts' vector q are contiguous in memory. */
static inline GK_HD int64_t gk_spmm_lane_col(int64_t tile, int q, int gc, int cp, int nv,
                                             int vw) {
  return (tile * (int64_t)gc * nv + (int64_t)q * gc + cp) * vw;
}

/* ROW_SPLIT's block roles: of the grid's blocks, row_blocks take rows
 * (the first ones; the last ones when seg_first) and the others take
 * long-row segments.  Returns block b's index among the row blocks (>= 0)
 * or, for a segment block, -1 - its index among the segment blocks. */
static inline GK_HD int64_t gk_spmm_block_role(int64_t b, int64_t grid, int64_t row_blocks,
                                               int seg_first) {
  if (seg_first) return b >= grid - row_blocks ? b - (grid - row_blocks) : -1 - b;
  return b < row_blocks ? b : -1 - (b - row_blocks);
}

/* ROW_SPLIT's long rows: every row longer than long_len is cut into
 * ceil(len / long_len) segments of near-equal length (multiples of 4
 * entries but the last).  Fills seg[2 * s] = (first entry, end) and
 * runs[3 * r] = (row, first segment, segments) when the arrays are not
 * NULL; returns the number of segments (*nruns the number of long rows).
 * rp: the host copy of row_ptr (idx64 as its type); long_len a multiple
 * of 4 (then no segment is longer than long_len).  Returns -1 when a long
 * row's range is not inside [0, nnz] (a malformed row_ptr). */
static inline int64_t gk_spmm_segments(const void *rp, int idx64, int64_t m, int64_t nnz,
                                       int64_t long_len, int64_t *seg, int64_t *runs,
                                       int64_t *nruns);

/* row_ptr[i] of either index type. */
static inline GK_HD int64_t gk_rp_at(const void *rp, int idx64, int64_t i) {
  return idx64 ? (int64_t)((const int64_t *)rp)[i] : (int64_t)((const int32_t *)rp)[i];
}

static inline int64_t gk_spmm_segments(const void *rp, int idx64, int64_t m, int64_t nnz,
                                       int64_t long_len, int64_t *seg, int64_t *runs,
                                       int64_t *nruns) {
  int64_t ns = 0, nr = 0;
  for (int64_t r = 0; r < m; r++) {
    const int64_t a = gk_rp_at(rp, idx64, r), e = gk_rp_at(rp, idx64, r + 1);
    if (a > e || long_len <= 0 || e - a <= long_len) continue;
    if (a < 0 || e > nnz) {
      *nruns = 0;
      return -1;
    }
    const int64_t parts = gk_ceil_div64(e - a, long_len);
    const int64_t each = gk_ceil_div64(gk_ceil_div64(e - a, parts), 4) * 4;
    if (runs) {
      runs[3 * nr] = r;
      runs[3 * nr + 1] = ns;
    }
    int64_t cnt = 0;
    for (int64_t x = a; x < e; x += each, cnt++, ns++)
      if (seg) {
        seg[2 * ns] = x;
        seg[2 * ns + 1] = x + each < e ? x + each : e;
      }
    if (runs) runs[3 * nr + 2] = cnt;
    nr++;
  }
  *nruns = nr;
  return ns;
}

/* Merge path (Merrill & Garland, SC'16) of A = row ends row_ptr[1..m] and
 * B = entry indices 0..nnz-1: the number of rows i completed before path
 * item d, i.e. the smallest i in [max(0, d - nnz), min(d, m)] with
 * row_ptr[i + 1] > d - i - 1.  The unit starting at d starts at (row i,
 * entry d - i), and row_ptr[i] <= d - i <= row_ptr[i + 1] (valid row_ptr). */
static inline GK_HD int64_t gk_merge_search(const void *rp, int idx64, int64_t m, int64_t nnz,
                                            int64_t d) {
  int64_t lo = d - nnz > 0 ? d - nnz : 0, hi = d < m ? d : m;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (gk_rp_at(rp, idx64, mid + 1) <= d - mid - 1) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/* What unit (i0, j0) .. (i1, j1) does with row r in [i0, i1] (r <= m - 1),
 * whose entries are [s, e): the entries [*a, *b) it sums, and where the
 * sum goes.  merge_kernel and the host's split-row list both use this. */
enum {
  GK_MERGE_SKIP = 0,   /* nothing: row i1 with no entries in this unit */
  GK_MERGE_DIRECT = 1, /* the whole row: C written directly */
  GK_MERGE_HEAD = 2,   /* completes a row begun before: head slot 2u */
  GK_MERGE_TAIL = 3    /* begins or continues row i1: tail slot 2u + 1 */
};
static inline GK_HD int gk_merge_row(int64_t r, int64_t s, int64_t e, int64_t j0, int64_t i1,
                                     int64_t j1, int64_t *a, int64_t *b) {
  const int complete = r < i1;
  *a = s > j0 ? s : j0;
  int64_t end = complete ? (e < j1 ? e : j1) : j1;
  if (end < *a) end = *a;
  *b = end;
  if (!complete) return end > *a ? GK_MERGE_TAIL : GK_MERGE_SKIP;
  return s >= j0 ? GK_MERGE_DIRECT : GK_MERGE_HEAD;
}

/* The rows split between units, from the partition part[2 * (units + 1)]
 * (row, entry) pairs and rp_at[u] = row_ptr[part[2 * u]]: a row split
 * between units is listed once as (row, first unit, completing unit) in
 * runs[3 * nruns] (room for 3 * units).  Returns nruns, or -1 when the
 * partition is inconsistent (a malformed row_ptr): a tail nobody completes,
 * a head nobody began. */
static inline int64_t gk_spmm_split_rows(const int64_t *part, const int64_t *rp_at,
                                         int64_t units, int64_t m, int64_t *runs) {
  int64_t nruns = 0;
  int open = 0;
  for (int64_t u = 0; u < units; u++) {
    const int64_t i0 = part[2 * u], j0 = part[2 * u + 1];
    const int64_t i1 = part[2 * u + 2], j1 = part[2 * u + 3];
    int64_t a, b;
    const int head = i0 < i1 && i0 < m &&
                     gk_merge_row(i0, rp_at[u], rp_at[u], j0, i1, j1, &a, &b) == GK_MERGE_HEAD;
    const int tail = i1 < m && gk_merge_row(i1, rp_at[u + 1], rp_at[u + 1], j0, i1, j1, &a,
                                            &b) == GK_MERGE_TAIL;
    if (head) {
      if (!open || runs[3 * nruns] != i0) return -1;
      runs[3 * nruns + 2] = u;
      nruns++;
      open = 0;
    }
    if (tail) {
      if (open && runs[3 * nruns] != i1) return -1; /* an unterminated row */
      if (!open) {
        runs[3 * nruns] = i1;
        runs[3 * nruns + 1] = u;
        open = 1;
      }
    }
  }
  return open ? -1 : nruns;
}

#ifdef __cplusplus
}
#endif

#endif /* GK_KERNELS_SPMM_MODEL_H */
