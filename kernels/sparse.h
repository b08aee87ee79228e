/* sparse.h -- the interface of the sparse kernels (kernels/csr.cu,
 * kernels/spmm.cu): the CSR descriptor, validation, row statistics and one
 * SpMM launch. */
#ifndef GK_KERNELS_SPARSE_H
#define GK_KERNELS_SPARSE_H

#include <stddef.h>
#include <stdint.h>

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

struct gko_csr_s {
  int64_t m, k, nnz;
  const void *row_ptr, *col_ind, *values;
  int index_type; /* gko_index_t */
  int value_type; /* gko_dtype_t */
};

/* Bytes of the index and value types of a valid descriptor. */
static inline size_t gk_csr_isize(const struct gko_csr_s *a) {
  return a->index_type == GKO_INDEX_INT64 ? 8 : 4;
}

/* What kernels/csr.cu's validation found: check is a gko_csr_check_t; row
 * the offending row (-1 if valid); a, b the values the message quotes
 * (START: a = row_ptr[0]; DECREASING: a = row_ptr[row], b = row_ptr[row+1];
 * END: a = row_ptr[m]; COLUMN_RANGE: a = the position, b = the column);
 * sorted and duplicates 1, 0 or -1 (unknown). */
typedef struct gk_csr_verdict {
  int64_t check, row, a, b, sorted, duplicates;
} gk_csr_verdict;

/* Workspace gk_csr_validate_run needs (no alignment slack: the caller adds
 * 255 bytes and aligns).  CUDA_ERROR if a CUB size query fails. */
gko_status_t gk_csr_validate_bytes(const struct gko_csr_s *a, size_t *bytes);
/* Runs the validation on stream (256-byte-aligned ws of at least
 * gk_csr_validate_bytes) and waits for it; fills *out.  m > 0. */
gko_status_t gk_csr_validate_run(const struct gko_csr_s *a, void *ws,
                                 size_t ws_bytes, gk_csr_verdict *out,
                                 void *stream);

/* Row-length statistics over rows [0, m) (CUB TransformReduce), for plans:
 * allocates temporary device memory, runs on stream, waits.  m > 0. */
typedef struct gk_row_stats {
  int64_t max_len, empty_rows;
  double sum_sq; /* sum of squared row lengths */
} gk_row_stats;
gko_status_t gk_csr_row_stats(const struct gko_csr_s *a, gk_row_stats *out,
                              void *stream);

/* Launch shape of one SpMM kernel path (kernels/spmm.cu).  Within a warp:
 * 2^lg_r row groups of 2^(lg_gc + lg_gk) lanes; in a group 2^lg_gc lanes
 * across n (each nv vectors of 16 bytes when vec, else nv elements, per
 * column tile) and 2^lg_gk lanes across the row's entries.  MERGE uses
 * lg_r = 0 and lg_gc + lg_gk = 5. */
typedef struct gk_spmm_shape {
  int vec, nv;
  int lg_gc, lg_gk, lg_r;
  int64_t ntiles;
  int block;    /* threads per block (occupancy API) */
  int64_t grid; /* blocks */
  int64_t row_blocks; /* ROW_SPLIT: row_blocks blocks take rows (the
                       * first ones; the last ones when the plan puts
                       * segments first), the rest long-row segments */
} gk_spmm_shape;

/* One SpMM launch: everything already checked. */
typedef struct gk_spmm_args {
  int kernel; /* GKO_SPMM_KERNEL_ROW_SPLIT, _MERGE or _SCALE */
  int dtype, idx64;
  int64_t m, n, nnz;
  const void *row_ptr, *col_ind, *values;
  const void *B;
  void *C;
  int64_t sbr, sbc, scr, scc; /* element strides: B(i,j) = B[i*sbr + j*sbc] */
  float alpha, beta;
  gk_spmm_shape shape;
  /* MERGE: (row, entry) coordinates of the units' starts, units + 1 pairs;
   * split rows as (row, first unit, completing unit) triples; partial rows
   * in the workspace, 2 per unit, npad floats each. */
  const int64_t *part;
  int64_t units;
  const int64_t *runs;
  int64_t nruns;
  float *partials;
  int64_t npad;
  /* ROW_SPLIT: rows longer than long_len (0: none) run as nseg segments
   * (entry ranges, seg[2 * nseg]) in the blocks other than the row_blocks
   * row blocks (0: all blocks are row blocks) -- after them, or before
   * them when seg_first -- their sums in partial slots (npad floats each)
   * added per row by a second kernel from runs (row, first segment,
   * segments; nruns of them) */
  int64_t long_len, row_blocks, nseg;
  const int64_t *seg;
  int seg_first;
  void *stream;
} gk_spmm_args;

/* Threads per block and blocks per device that
 * cudaOccupancyMaxPotentialBlockSize gives the kernel selected by (kernel,
 * dtype, idx64, vec, nv) -- fix-up and scale kernels by kernel alone --
 * cached per device (thread-safe). */
gko_status_t gk_spmm_occupancy(int kernel, int dtype, int idx64, int vec,
                               int nv, int *block, int *grid);
/* Enqueues the SpMM (and, for MERGE, the fix-up kernel). */
gko_status_t gk_spmm_launch(const gk_spmm_args *a);
/* MERGE plan step: the merge-path coordinates (row, entry) where units
 * 0..units start, unit u at path item u * per_unit of the m + nnz row ends
 * and entries (the last, u = units, is (m, nnz)), into part[2 * (units +
 * 1)], and row_ptr at each start row into rp_at[units + 1] (device
 * arrays), on stream (asynchronous). */
gko_status_t gk_spmm_partition(const struct gko_csr_s *a, int64_t units,
                               int64_t per_unit, int64_t *part, int64_t *rp_at,
                               void *stream);

#ifdef __cplusplus
}
#endif

#endif /* GK_KERNELS_SPARSE_H */
