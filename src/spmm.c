/* spmm.c -- SpMM plans: argument checks, the row-length statistics, the
 * kernel choice and launch shape, the merge-path partition, and execute
 * (checks + one launcher call).  Kernels in kernels/spmm.cu. */
#include <math.h>
#include <stdlib.h>

#include <cuda_runtime_api.h>

#include "spmm.h"

/* MERGE: aim at this many warps of work per SM, with at least kMinPerUnit
 * path items (row ends + entries) per warp.  A warp walks its unit's rows
 * one after the other, so on small graphs the kernel time is the chain of
 * the longest unit, not bandwidth: short units buy more warps and shorter
 * chains for a larger workspace (docs/spmm.md, MERGE). */
static const int64_t kUnitsPerSm = 64;
static const int64_t kMinPerUnit = 8;

struct gko_spmm_plan_s {
  gko_handle_t handle;
  unsigned long handle_serial;
  int device;           /* the handle's (destroy reads no handle) */
  struct gko_csr_s a;
  int64_t n, ldb, ldc;
  int layout;
  int kernel;           /* gko_spmm_kernel_t chosen */
  int forced;           /* ... by the caller (not AUTO) */
  int has_vec;          /* the 16-byte path is possible (leading dimensions) */
  gk_spmm_shape shape[2]; /* [0] scalar path, [1] vector path */
  int64_t sbr, sbc, scr, scc;
  /* statistics */
  int64_t max_len, empty_rows;
  double mean, cv;
  /* MERGE and ROW_SPLIT's long rows */
  int64_t units, per_unit, nruns, npad;
  int64_t long_len, nseg; /* ROW_SPLIT */
  int seg_first;           /* ROW_SPLIT: segment blocks before the row blocks */
  int64_t *dev;         /* MERGE: part[2 * (units + 1)] then runs[3 * nruns];
                         * ROW_SPLIT: seg[2 * nseg] then runs[3 * nruns] */
  size_t ws_bytes;
  char why[640];
};

static int64_t ceil_div(int64_t a, int64_t b) { return gk_ceil_div64(a, b); }

static gko_status_t gk_spmm_size_grid(struct gko_spmm_plan_s *p, gk_spmm_shape *s) {
  int block = 0, grid = 0;
  gko_status_t st = gk_spmm_occupancy(p->kernel, p->a.value_type,
                                      p->a.index_type == GKO_INDEX_INT64, s->vec, s->nv,
                                      &block, &grid);
  if (st) return st;
  s->block = block;
  int64_t warps;
  if (p->kernel == GKO_SPMM_KERNEL_SCALE) {
    s->grid = ceil_div(p->a.m * p->n, block);
    if (s->grid > (int64_t)grid * 8) s->grid = (int64_t)grid * 8; /* grid-stride */
    if (s->grid < 1) s->grid = 1;
    return GKO_STATUS_SUCCESS;
  }
  const int64_t seg_warps = ceil_div(p->nseg, (int64_t)1 << s->lg_r);
  if (p->kernel == GKO_SPMM_KERNEL_MERGE) {
    warps = p->units;
  } else {
    warps = ceil_div(p->a.m, (int64_t)1 << s->lg_r);
  }
  /* small problems: smaller blocks (whole warps), so that every SM gets some */
  s->block = gk_spmm_fit_block(block, warps + seg_warps, p->handle->sm_count);
  const int64_t wpb = s->block / 32;
  /* ROW_SPLIT strides beyond 2^30 blocks of rows (and of segments) */
  const int64_t cap = (int64_t)1 << 30;
  s->grid = ceil_div(warps, wpb);
  if (s->grid > cap) s->grid = cap;
  if (p->kernel == GKO_SPMM_KERNEL_ROW_SPLIT && !p->seg_first) {
    /* persistent: no more row blocks than fit on the GPU at once (the
     * occupancy API's grid, in blocks of this size), each group striding
     * over rows -- no partial last wave, and the kernel's cross-row
     * prefetch has a next row to fetch.  Not for large skewed matrices
     * (seg_first): there the rows, handed out statically, and segment
     * blocks queued behind resident row blocks made a tail (docs/spmm.md,
     * design 4) */
    const int64_t resident = (int64_t)grid * (block / s->block);
    if (resident >= 1 && s->grid > resident) s->grid = resident;
  }
  if (s->grid < 1) s->grid = 1;
  s->row_blocks = s->grid;
  if (p->kernel == GKO_SPMM_KERNEL_ROW_SPLIT && seg_warps > 0) {
    int64_t sb = ceil_div(seg_warps, wpb);
    if (sb > cap) sb = cap;
    s->grid += sb;
  }
  return GKO_STATUS_SUCCESS;
}

/* ROW_SPLIT: rows longer than this many entries are cut into segments,
 * so that no group's chain of dependent loads is much longer than the
 * average group's share of the entries (nnz over the groups resident on
 * the GPU, about 32 warps per SM) -- never shorter than kSegMin, and never
 * longer than kSegMax.  When that share is above kSegMax (large matrices:
 * nnz > 32 x SMs x kSegMax, 1.08 M on an H200) the segment blocks go
 * first and the grid is not persistent (docs/spmm.md, design 5). */
static const int64_t kSegMin = 64;
static const int64_t kSegMax = 256;
static const int64_t kSegWarpsPerSm = 32;

/* ROW_SPLIT's long-row segments: row_ptr copied to the host (plan time,
 * only when the longest row exceeds long_len), the table built there
 * (gk_spmm_segments) and uploaded to plan-owned device memory. */
static gko_status_t gk_spmm_plan_segments(struct gko_spmm_plan_s *p, void *stream) {
  const int idx64 = p->a.index_type == GKO_INDEX_INT64;
  const size_t isz = gk_csr_isize(&p->a);
  const size_t rp_bytes = isz * (size_t)(p->a.m + 1);
  void *hrp = malloc(rp_bytes);
  if (!hrp) return gk_fail(GKO_STATUS_ALLOC_FAILED, "host allocation of row_ptr's copy failed");
  cudaError_t e = cudaMemcpyAsync(hrp, p->a.row_ptr, rp_bytes, cudaMemcpyDeviceToHost,
                                  (cudaStream_t)stream);
  if (e == cudaSuccess) e = cudaStreamSynchronize((cudaStream_t)stream);
  if (e != cudaSuccess) {
    free(hrp);
    return gk_cuda_fail(e, "reading row_ptr (SpMM long-row segments)");
  }
  int64_t nruns = 0;
  const int64_t nseg =
      gk_spmm_segments(hrp, idx64, p->a.m, p->a.nnz, p->long_len, NULL, NULL, &nruns);
  if (nseg < 0) {
    free(hrp);
    return gk_fail(GKO_STATUS_INVALID_VALUE,
                   "row_ptr is malformed (a row reaches outside [0, nnz]): check it with "
                   "gko_csr_validate");
  }
  if (nseg == 0) {
    free(hrp);
    p->long_len = 0;
    return GKO_STATUS_SUCCESS;
  }
  const size_t tbytes = sizeof(int64_t) * (size_t)(2 * nseg + 3 * nruns);
  int64_t *tab = malloc(tbytes);
  if (!tab) {
    free(hrp);
    return gk_fail(GKO_STATUS_ALLOC_FAILED, "host allocation of the segment table failed");
  }
  gk_spmm_segments(hrp, idx64, p->a.m, p->a.nnz, p->long_len, tab, tab + 2 * nseg, &nruns);
  free(hrp);
  int64_t *dev = NULL;
  e = cudaMalloc((void **)&dev, tbytes);
  if (e == cudaSuccess) {
    e = cudaMemcpyAsync(dev, tab, tbytes, cudaMemcpyHostToDevice, (cudaStream_t)stream);
    if (e == cudaSuccess) e = cudaStreamSynchronize((cudaStream_t)stream);
    if (e != cudaSuccess) cudaFree(dev);
  }
  free(tab);
  if (e != cudaSuccess) return gk_cuda_fail(e, "uploading the SpMM segment table");
  p->dev = dev;
  p->nseg = nseg;
  p->nruns = nruns;
  p->npad = ceil_div(p->n, 8) * 8;
  p->ws_bytes = sizeof(float) * (size_t)nseg * (size_t)p->npad + 255;
  return GKO_STATUS_SUCCESS;
}

/* Merge-path partition on the device, split rows found on the host. */
static gko_status_t gk_spmm_plan_merge(struct gko_spmm_plan_s *p, int sm_count, void *stream) {
  const int64_t items = p->a.m + p->a.nnz;
  int64_t target = (int64_t)sm_count * kUnitsPerSm;
  if (target < 1) target = 1;
  int64_t per = ceil_div(items, target);
  if (per < kMinPerUnit) per = kMinPerUnit;
  p->per_unit = per;
  p->units = ceil_div(items, per);
  const int64_t U = p->units;
  size_t part_bytes = sizeof(int64_t) * 2 * (size_t)(U + 1);
  int64_t *d = NULL, *h = NULL, *hrp = NULL, *runs = NULL;
  cudaError_t e = cudaMalloc((void **)&d, part_bytes + sizeof(int64_t) * (size_t)(U + 1));
  if (e != cudaSuccess) return gk_cuda_fail(e, "cudaMalloc (merge partition)");
  gko_status_t s = gk_spmm_partition(&p->a, U, per, d, d + 2 * (U + 1), stream);
  h = malloc(part_bytes);
  hrp = malloc(sizeof(int64_t) * (size_t)(U + 1));
  runs = malloc(sizeof(int64_t) * 3 * (size_t)U + 1);
  if (!s && (!h || !hrp || !runs))
    s = gk_fail(GKO_STATUS_ALLOC_FAILED, "host allocation of the merge partition failed");
  if (!s) {
    e = cudaMemcpyAsync(h, d, part_bytes, cudaMemcpyDeviceToHost, (cudaStream_t)stream);
    if (e == cudaSuccess)
      e = cudaMemcpyAsync(hrp, d + 2 * (U + 1), sizeof(int64_t) * (size_t)(U + 1),
                          cudaMemcpyDeviceToHost, (cudaStream_t)stream);
    if (e == cudaSuccess) e = cudaStreamSynchronize((cudaStream_t)stream);
    if (e != cudaSuccess) s = gk_cuda_fail(e, "reading the merge partition");
  }
  int64_t nruns = 0;
  if (!s) {
    /* Unit u: rows [i_u, i_{u+1}) completed, entries [j_u, j_{u+1}).  A
     * split row runs from the unit that first leaves its tail to the unit
     * that leaves its head (gk_merge_row: the same test as merge_kernel). */
    nruns = gk_spmm_split_rows(h, hrp, U, p->a.m, runs);
    if (nruns < 0)
      s = gk_fail(GKO_STATUS_INVALID_VALUE,
                  "row_ptr is malformed (its merge-path partition is inconsistent): check it "
                  "with gko_csr_validate");
  }
  if (!s) {
    /* the device copy: partition, then the runs */
    int64_t *dev = NULL;
    e = cudaMalloc((void **)&dev, part_bytes + sizeof(int64_t) * 3 * (size_t)(nruns + 1));
    if (e == cudaSuccess) {
      /* stream-ordered and waited for: a pageable cudaMemcpy may return
       * before its DMA lands, unordered with the caller's streams */
      e = cudaMemcpyAsync(dev, h, part_bytes, cudaMemcpyHostToDevice, (cudaStream_t)stream);
      if (e == cudaSuccess && nruns > 0)
        e = cudaMemcpyAsync(dev + 2 * (U + 1), runs, sizeof(int64_t) * 3 * (size_t)nruns,
                            cudaMemcpyHostToDevice, (cudaStream_t)stream);
      if (e == cudaSuccess) e = cudaStreamSynchronize((cudaStream_t)stream);
      if (e != cudaSuccess) cudaFree(dev);
    }
    if (e != cudaSuccess) s = gk_cuda_fail(e, "uploading the merge partition");
    else p->dev = dev;
  }
  cudaFree(d);
  free(h);
  free(hrp);
  free(runs);
  if (s) return s;
  p->nruns = nruns;
  p->npad = ceil_div(p->n, 8) * 8;
  p->ws_bytes = sizeof(float) * 2 * (size_t)U * (size_t)p->npad + 255;
  return GKO_STATUS_SUCCESS;
}

static const char *const kKernelNames[] = {"AUTO", "ROW_SPLIT", "MERGE", "SCALE", "NONE"};

/* The plan's description: the kernel, its launch shape, MERGE's units or
 * ROW_SPLIT's segments, the row statistics and who chose the kernel. */
static void gk_spmm_explain(struct gko_spmm_plan_s *p) {
  GK_WHY(p, "%s", kKernelNames[p->kernel]);
  if (p->kernel == GKO_SPMM_KERNEL_NONE) {
    GK_WHY(p, ": m = %lld, n = %lld: nothing to compute", (long long)p->a.m, (long long)p->n);
    return;
  }
  if (p->kernel == GKO_SPMM_KERNEL_SCALE) {
    GK_WHY(p, ": nnz = 0: C = beta * C (%d threads x %lld blocks)", p->shape[0].block,
           (long long)p->shape[0].grid);
    return;
  }
  const gk_spmm_shape *s = &p->shape[p->has_vec ? 1 : 0];
  GK_WHY(p, ": %d lanes x %d %s across n (%lld tile%s), %d lanes across entries, %d row%s "
         "per warp, %d threads x %lld blocks",
         1 << s->lg_gc, s->nv, s->vec ? "16-byte vectors" : "elements", (long long)s->ntiles,
         s->ntiles == 1 ? "" : "s", 1 << s->lg_gk,
         p->kernel == GKO_SPMM_KERNEL_MERGE ? 1 : 1 << s->lg_r,
         p->kernel == GKO_SPMM_KERNEL_MERGE || s->lg_r == 0 ? "" : "s", s->block,
         (long long)s->grid);
  if (p->has_vec) GK_WHY(p, " (scalar path when B or C is not 16-byte aligned)");
  if (p->kernel == GKO_SPMM_KERNEL_MERGE)
    GK_WHY(p, "; %lld warps of %lld row ends + entries, %lld rows split between warps",
           (long long)p->units, (long long)p->per_unit, (long long)p->nruns);
  if (p->kernel == GKO_SPMM_KERNEL_ROW_SPLIT && p->nseg > 0)
    GK_WHY(p, "; %lld rows longer than %lld entries cut into %lld segments (%lld blocks%s), "
           "summed in order by a second kernel", (long long)p->nruns, (long long)p->long_len,
           (long long)p->nseg, (long long)(s->grid - s->row_blocks),
           p->seg_first ? ", started before the rows; grid not persistent" : "");
  GK_WHY(p, "; rows: m %lld, nnz %lld, mean %.2f, max %lld, cv %.2f, empty %lld",
         (long long)p->a.m, (long long)p->a.nnz, p->mean, (long long)p->max_len, p->cv,
         (long long)p->empty_rows);
  if (p->forced)
    GK_WHY(p, "; forced by the caller");
  else
    GK_WHY(p, "; AUTO: ROW_SPLIT (long rows in segments)");
}

/* Extent in elements of a rows x cols matrix with leading dimension ld. */
static int gk_extent(int layout, int64_t rows, int64_t cols, int64_t ld, size_t es,
                     size_t *bytes) {
  if (rows == 0 || cols == 0) {
    *bytes = 0;
    return 1;
  }
  const int64_t outer = layout == GKO_LAYOUT_ROW_MAJOR ? rows : cols;
  const int64_t inner = layout == GKO_LAYOUT_ROW_MAJOR ? cols : rows;
  if (inner > INT64_MAX / 8 || outer - 1 > (INT64_MAX / 8 - inner) / ld) return 0;
  const int64_t elems = (outer - 1) * ld + inner;
  if ((uint64_t)elems > (uint64_t)INT64_MAX / es) return 0;
  *bytes = (size_t)elems * es;
  return 1;
}


static const gk_rule kLayout = {
    "layout", GKO_LAYOUT_ROW_MAJOR, GKO_LAYOUT_COL_MAJOR, 0,
    "is not GKO_LAYOUT_ROW_MAJOR (0) or GKO_LAYOUT_COL_MAJOR (1)", 0, 0};
static const gk_rule kKernel = {
    "kernel", GKO_SPMM_KERNEL_AUTO, GKO_SPMM_KERNEL_MERGE, 0,
    "is not GKO_SPMM_KERNEL_AUTO (0), _ROW_SPLIT (1) or _MERGE (2)", 0, 0};

/* Frees a plan and its device tables (on the handle's device). */
static void gk_spmm_plan_free(struct gko_spmm_plan_s *p) {
  if (!p) return;
  if (p->dev) {
    int cur = -1;
    int switched = cudaGetDevice(&cur) == cudaSuccess && cur != p->device &&
                   cudaSetDevice(p->device) == cudaSuccess;
    cudaFree(p->dev);
    if (switched) cudaSetDevice(cur);
  }
  free(p);
}

/* nnz > 0: the row statistics, the kernel (AUTO: ROW_SPLIT), its launch
 * shapes, and MERGE's partition or ROW_SPLIT's long-row segments.  vw:
 * elements per 16-byte vector. */
static gko_status_t gk_spmm_choose(struct gko_spmm_plan_s *p, gko_spmm_kernel_t kernel, int vw,
                                   void *stream) {
  const int64_t m = p->a.m, n = p->n;
  gk_row_stats st;
  gko_status_t s = gk_csr_row_stats(&p->a, &st, stream);
  if (s) return s;
  p->max_len = st.max_len;
  p->empty_rows = st.empty_rows;
  const double var = st.sum_sq / (double)m - p->mean * p->mean;
  p->cv = p->mean > 0 && var > 0 ? sqrt(var) / p->mean : 0.0;
  /* ROW_SPLIT cuts long rows into segments, which bounds its tail: AUTO
   * takes it always (docs/spmm.md has the measurements) */
  p->kernel = kernel == GKO_SPMM_KERNEL_AUTO ? GKO_SPMM_KERNEL_ROW_SPLIT : (int)kernel;
  gk_spmm_shape_for(p->kernel, n, 1, p->mean, &p->shape[0]);
  if (p->has_vec) gk_spmm_shape_for(p->kernel, n, vw, p->mean, &p->shape[1]);
  if (p->kernel == GKO_SPMM_KERNEL_MERGE) s = gk_spmm_plan_merge(p, p->handle->sm_count, stream);
  if (p->kernel == GKO_SPMM_KERNEL_ROW_SPLIT) {
    int64_t L = ceil_div(p->a.nnz, (int64_t)p->handle->sm_count * kSegWarpsPerSm);
    if (L < kSegMin) L = kSegMin;
    if (L > kSegMax) {
      L = kSegMax;
      p->seg_first = 1;
    }
    p->long_len = ceil_div(L, 4) * 4;
    if (p->max_len > p->long_len) s = gk_spmm_plan_segments(p, stream);
    else p->long_len = 0;
    if (p->long_len == 0) p->seg_first = 0; /* no segments: rows only, persistent */
  }
  if (!s) s = gk_spmm_size_grid(p, &p->shape[0]);
  if (!s && p->has_vec) s = gk_spmm_size_grid(p, &p->shape[1]);
  return s;
}

GKO_API gko_status_t gko_spmm_plan_create(gko_handle_t handle, gko_csr_t csr, int64_t n,
                                          gko_layout_t layout, int64_t ldb, int64_t ldc,
                                          gko_spmm_kernel_t kernel, gko_spmm_plan_t *plan,
                                          gko_stream_t stream) {
  gko_status_t s = gk_entry_check(handle, csr, GK_LIVE_CSR, "csr", plan, "plan");
  if (s) return s;
  if (n < 0) return gk_fail(GKO_STATUS_INVALID_VALUE, "n = %lld is negative", (long long)n);
  if ((s = gk_rule_check(&kLayout, (int)layout)) || (s = gk_rule_check(&kKernel, (int)kernel)))
    return s;
  const int64_t m = csr->m, k = csr->k;
  const int row = layout == GKO_LAYOUT_ROW_MAJOR;
  const int64_t need_ldb = row ? n : k, need_ldc = row ? n : m;
  if (ldb < 1 || ldb < need_ldb)
    return gk_fail(GKO_STATUS_INVALID_VALUE, "ldb = %lld is smaller than max(1, %s = %lld)",
                   (long long)ldb, row ? "n" : "k", (long long)need_ldb);
  if (ldc < 1 || ldc < need_ldc)
    return gk_fail(GKO_STATUS_INVALID_VALUE, "ldc = %lld is smaller than max(1, %s = %lld)",
                   (long long)ldc, row ? "n" : "m", (long long)need_ldc);
  const size_t es = gko_dtype_size((gko_dtype_t)csr->value_type);
  size_t bb, cb;
  if (!gk_extent(layout, k, n, ldb, es, &bb))
    return gk_fail(GKO_STATUS_INVALID_VALUE, "B (k = %lld, n = %lld, ldb = %lld) overflows a byte "
                   "count", (long long)k, (long long)n, (long long)ldb);
  if (!gk_extent(layout, m, n, ldc, es, &cb))
    return gk_fail(GKO_STATUS_INVALID_VALUE, "C (m = %lld, n = %lld, ldc = %lld) overflows a byte "
                   "count", (long long)m, (long long)n, (long long)ldc);
  const void *ptrs[3] = {csr->row_ptr, csr->col_ind, csr->values};
  const char *names[3] = {"row_ptr", "col_ind", "values"};
  if ((s = gk_check_call(handle, stream, 3, ptrs, names))) return s;

  struct gko_spmm_plan_s *p = calloc(1, sizeof *p);
  if (!p) return gk_fail(GKO_STATUS_ALLOC_FAILED, "host allocation of the SpMM plan failed");
  p->handle = handle;
  p->handle_serial = handle->serial;
  p->device = handle->device;
  p->a = *csr;
  p->n = n;
  p->ldb = ldb;
  p->ldc = ldc;
  p->layout = layout;
  p->sbr = row ? ldb : 1;
  p->sbc = row ? 1 : ldb;
  p->scr = row ? ldc : 1;
  p->scc = row ? 1 : ldc;
  const int vw = (int)(16 / es);
  p->has_vec = row && ldb % vw == 0 && ldc % vw == 0;
  p->max_len = 0;
  p->mean = m ? (double)csr->nnz / (double)m : 0.0;

  /* documented "Capture: no" for every plan, whatever the work (the
   * statistics and segment tables synchronize) */
  s = gk_refuse_capture(stream, "gko_spmm_plan_create");
  if (s) {
    /* refused: nothing planned */
  } else if (m == 0 || n == 0) {
    p->kernel = GKO_SPMM_KERNEL_NONE;
    p->has_vec = 0;
  } else if (csr->nnz == 0) {
    p->kernel = GKO_SPMM_KERNEL_SCALE;
    p->has_vec = 0;
    p->empty_rows = m;
    s = gk_spmm_size_grid(p, &p->shape[0]);
  } else {
    s = gk_spmm_choose(p, kernel, vw, stream);
  }
  if (s) {
    gk_spmm_plan_free(p);
    return s;
  }
  p->forced = kernel != GKO_SPMM_KERNEL_AUTO && p->kernel == (int)kernel;
  gk_spmm_explain(p);
  if ((s = gk_live_add(p, GK_LIVE_SPMM_PLAN))) {
    gk_spmm_plan_free(p);
    return s;
  }
  *plan = p;
  return GKO_STATUS_SUCCESS;
}

GKO_API gko_status_t gko_spmm_plan_describe(gko_spmm_plan_t plan, char *buf, size_t bytes,
                                            size_t *required) {
  return gk_describe(plan, GK_LIVE_SPMM_PLAN, "plan", plan ? plan->why : NULL, buf, bytes, required);
}

GKO_API gko_status_t gko_spmm_workspace_size(gko_spmm_plan_t plan, size_t *bytes) {
  gko_status_t s = gk_getter(plan, GK_LIVE_SPMM_PLAN, "plan", bytes, "bytes");
  if (!s) *bytes = plan->ws_bytes;
  return s;
}

GKO_API gko_status_t gko_spmm_plan_kernel(gko_spmm_plan_t plan, gko_spmm_kernel_t *kernel) {
  gko_status_t s = gk_getter(plan, GK_LIVE_SPMM_PLAN, "plan", kernel, "kernel");
  if (!s) *kernel = (gko_spmm_kernel_t)plan->kernel;
  return s;
}

static void gk_spmm_plan_release(void *p) { gk_spmm_plan_free(p); }

GKO_API gko_status_t gko_spmm_plan_destroy(gko_spmm_plan_t plan) {
  return gk_live_destroy(plan, GK_LIVE_SPMM_PLAN, "plan", gk_spmm_plan_release);
}

/* [q, q + qb) shares a byte with row_ptr, col_ind or values of a. */
static int gk_overlaps_csr(const struct gko_csr_s *a, const void *q, size_t qb) {
  const size_t is = gk_csr_isize(a), es = gko_dtype_size((gko_dtype_t)a->value_type);
  return gk_overlap(q, qb, a->row_ptr, (size_t)(a->m + 1) * is) ||
         gk_overlap(q, qb, a->col_ind, (size_t)a->nnz * is) ||
         gk_overlap(q, qb, a->values, (size_t)a->nnz * es);
}

GKO_API gko_status_t gko_spmm_execute(gko_spmm_plan_t plan, float alpha, const void *B,
                                      float beta, void *C, void *workspace,
                                      size_t workspace_bytes, gko_stream_t stream) {
  gk_clear_error();
  gko_status_t s = gk_live_check(plan, GK_LIVE_SPMM_PLAN, "plan");
  if (!s) s = gk_live_plan_handle(plan->handle, plan->handle_serial);
  if (s) return s;
  const struct gko_spmm_plan_s *p = plan;
  if (p->kernel == GKO_SPMM_KERNEL_NONE) return GKO_STATUS_SUCCESS;
  const size_t es = gko_dtype_size((gko_dtype_t)p->a.value_type);
  const int reads_b = p->kernel != GKO_SPMM_KERNEL_SCALE;
  if (!C) return gk_fail(GKO_STATUS_INVALID_VALUE, "C is NULL");
  if ((s = gk_check_elem_align(C, "C", es))) return s;
  if (reads_b && !B) return gk_fail(GKO_STATUS_INVALID_VALUE, "B is NULL");
  if (reads_b && (s = gk_check_elem_align(B, "B", es))) return s;
  size_t bb = 0, cb = 0;
  gk_extent(p->layout, p->a.k, p->n, p->ldb, es, &bb);
  gk_extent(p->layout, p->a.m, p->n, p->ldc, es, &cb);
  if (reads_b && gk_overlap(C, cb, B, bb))
    return gk_fail(GKO_STATUS_INVALID_VALUE, "C overlaps B (SpMM cannot run in place)");
  if (gk_overlaps_csr(&p->a, C, cb))
    return gk_fail(GKO_STATUS_INVALID_VALUE, "C overlaps the CSR arrays of A");
  float *partials = NULL;
  if (p->ws_bytes > 0) {
    if (!workspace)
      return gk_fail(GKO_STATUS_INVALID_VALUE,
                     "workspace is NULL but the plan needs %zu bytes (gko_spmm_workspace_size)",
                     p->ws_bytes);
    if (workspace_bytes < p->ws_bytes)
      return gk_fail(GKO_STATUS_INSUFFICIENT_WORKSPACE,
                     "workspace_bytes = %zu but the plan needs %zu (gko_spmm_workspace_size)",
                     workspace_bytes, p->ws_bytes);
    /* the partial sums are written in its first ws_bytes: not over an
     * operand (bytes past them may be anything: a larger arena) */
    if (gk_overlap(workspace, p->ws_bytes, C, cb))
      return gk_fail(GKO_STATUS_INVALID_VALUE, "the workspace overlaps C");
    if (reads_b && gk_overlap(workspace, p->ws_bytes, B, bb))
      return gk_fail(GKO_STATUS_INVALID_VALUE, "the workspace overlaps B");
    if (gk_overlaps_csr(&p->a, workspace, p->ws_bytes))
      return gk_fail(GKO_STATUS_INVALID_VALUE, "the workspace overlaps the CSR arrays of A");
    partials = (float *)(((uintptr_t)workspace + 255) & ~(uintptr_t)255);
  }
  const void *ptrs[3] = {reads_b ? B : NULL, C, p->ws_bytes ? workspace : NULL};
  const char *names[3] = {"B", "C", "workspace"};
  s = gk_check_call(p->handle, stream, 3, ptrs, names);
  if (s) return s;

  const int vec = p->has_vec && (uintptr_t)C % 16 == 0 && (!reads_b || (uintptr_t)B % 16 == 0);
  gk_spmm_args a = {
      .kernel = p->kernel,
      .dtype = p->a.value_type, .idx64 = p->a.index_type == GKO_INDEX_INT64,
      .m = p->a.m, .n = p->n, .nnz = p->a.nnz,
      .row_ptr = p->a.row_ptr, .col_ind = p->a.col_ind, .values = p->a.values,
      .B = B, .C = C,
      .sbr = p->sbr, .sbc = p->sbc, .scr = p->scr, .scc = p->scc,
      .alpha = alpha, .beta = beta,
      .shape = p->shape[vec ? 1 : 0],
      .stream = stream,
  };
  if (p->kernel == GKO_SPMM_KERNEL_MERGE) {
    a.part = p->dev;
    a.units = p->units;
    a.runs = p->dev + 2 * (p->units + 1);
    a.nruns = p->nruns;
    a.partials = partials;
    a.npad = p->npad;
  }
  a.row_blocks = a.shape.row_blocks;
  if (p->kernel == GKO_SPMM_KERNEL_ROW_SPLIT && p->nseg > 0) {
    a.long_len = p->long_len;
    a.nseg = p->nseg;
    a.seg = p->dev;
    a.seg_first = p->seg_first;
    a.runs = p->dev + 2 * p->nseg;
    a.nruns = p->nruns;
    a.partials = partials;
    a.npad = p->npad;
  }
  return gk_spmm_launch(&a);
}
