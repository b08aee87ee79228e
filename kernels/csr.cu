/* csr.cu -- CSR validation and row-length statistics on the GPU, built on
 * CUB (DeviceReduce::TransformReduce, DeviceRadixSort).
 *
 * Validation, in stream order, one synchronization at the end (two when a
 * row is unsorted):
 *   1. row_ptr: TransformReduce over i in [0, m] of a key row*4 + check
 *      (min = the first defect, by row, then by check) -- one read of
 *      row_ptr;
 *   2. row-start marks: a byte per entry, 1 where a non-empty row begins
 *      (skipped on device when step 1 found a defect, so a broken row_ptr
 *      never indexes out of bounds);
 *   3. col_ind: TransformReduce over the entries of {first out-of-range
 *      position, (unsorted | adjacent-duplicate) bits} -- one read of
 *      col_ind (plus the previous entry, cached);
 *   4. a one-thread kernel turns the results into the verdict (the row of
 *      a bad column by binary search in row_ptr) and it is copied back;
 *   5. only when a row is unsorted: radix-sort the packed keys
 *      (row << 32 | column) of all entries and look for equal neighbours
 *      (duplicates).  A global DeviceRadixSort of 64-bit keys rather than a
 *      segmented sort: CUB's segmented sorts spill registers on some of our
 *      architectures under ptxas -warn-spills, and one global sort is also
 *      faster than a block per row for many short rows.
 * Only the CUB instantiations these need are compiled: TransformReduce for
 * the two index types, one 64-bit radix sort. */
#include <cuda_runtime.h>

#include <cub/device/device_reduce.cuh>
#include <cub/device/device_radix_sort.cuh>
#include <thrust/iterator/counting_iterator.h>

#include "sparse.h"
#include "common.cuh"

namespace {

constexpr int64_t kNone = INT64_MAX;
constexpr unsigned kUnsorted = 1u, kAdjacentDup = 2u;

/* ---- step 1: row_ptr ---------------------------------------------------- */

template <typename I>
struct RowPtrKey {
  const I *rp;
  int64_t m, nnz;
  /* Branch-light on purpose: the obvious if/else chain makes CUB's reduce
   * kernel spill registers on sm_90. */
  __device__ int64_t operator()(int64_t i) const {
    const int64_t lo = i < m ? (int64_t)rp[i] : nnz;
    const int64_t hi = rp[i < m ? i + 1 : m];
    int64_t key = kNone;
    if (i == m) key = hi != nnz ? (m - 1) * 4 + GKO_CSR_ROW_PTR_END : kNone;
    else if (hi < lo) key = i * 4 + GKO_CSR_ROW_PTR_DECREASING;
    if (i == 0 && rp[0] != 0) key = GKO_CSR_ROW_PTR_START; /* row 0 */
    return key;
  }
};

struct MinOp {
  __device__ int64_t operator()(int64_t a, int64_t b) const { return a < b ? a : b; }
};

/* ---- step 2: row-start marks ------------------------------------------- */

template <typename I>
__global__ void mark_row_starts(const I *rp, int64_t m, const int64_t *rp_key,
                                unsigned char *mark) {
  if (*rp_key != kNone) return; /* row_ptr is broken: its values are not positions */
  for (int64_t r = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; r < m;
       r += (int64_t)gridDim.x * blockDim.x) {
    const int64_t a = rp[r];
    if (a < (int64_t)rp[r + 1]) mark[a] = 1;
  }
}

/* ---- step 3: columns ----------------------------------------------------- */

struct ColInfo {
  int64_t bad; /* first position whose column is out of range */
  unsigned flags;
};

template <typename I>
struct ColCheck {
  const I *ci;
  const unsigned char *mark;
  int64_t k;
  __device__ ColInfo operator()(int64_t p) const {
    const int64_t c = ci[p];
    ColInfo r{(c < 0 || c >= k) ? p : kNone, 0u};
    if (p > 0 && !mark[p]) {
      const int64_t prev = ci[p - 1];
      r.flags = c < prev ? kUnsorted : c == prev ? kAdjacentDup : 0u;
    }
    return r;
  }
};

struct ColOp {
  __device__ ColInfo operator()(const ColInfo &a, const ColInfo &b) const {
    return ColInfo{a.bad < b.bad ? a.bad : b.bad, a.flags | b.flags};
  }
};

/* ---- step 4: the verdict ------------------------------------------------- */

template <typename I>
__global__ void finish(const I *rp, const I *ci, int64_t m, int64_t nnz,
                       const int64_t *rp_key, const ColInfo *cols,
                       int64_t *v /* gk_csr_verdict */) {
  const int64_t key = *rp_key;
  int64_t check = GKO_CSR_VALID, row = -1, a = 0, b = 0, sorted = -1, dup = -1;
  if (key != kNone) {
    check = key & 3;
    row = key >> 2;
    if (check == GKO_CSR_ROW_PTR_START) {
      a = rp[0];
    } else if (check == GKO_CSR_ROW_PTR_DECREASING) {
      a = rp[row];
      b = rp[row + 1];
    } else {
      a = rp[m];
    }
  } else {
    const ColInfo c = nnz > 0 ? *cols : ColInfo{kNone, 0u};
    sorted = (c.flags & kUnsorted) ? 0 : 1;
    dup = (c.flags & kUnsorted) ? -2 /* needs the sort */ : (c.flags & kAdjacentDup) ? 1 : 0;
    if (c.bad != kNone) {
      /* the row holding position c.bad: the last r with rp[r] <= c.bad */
      int64_t lo = 0, hi = m - 1;
      while (lo < hi) {
        const int64_t mid = lo + (hi - lo + 1) / 2;
        if ((int64_t)rp[mid] <= c.bad) lo = mid;
        else hi = mid - 1;
      }
      check = GKO_CSR_COLUMN_RANGE;
      row = lo;
      a = c.bad;
      b = ci[c.bad];
    }
  }
  v[0] = check;
  v[1] = row;
  v[2] = a;
  v[3] = b;
  v[4] = sorted;
  v[5] = dup;
}

/* ---- step 5: duplicates in unsorted rows ---------------------------------- */

/* keys[p] = row << 32 | (uint32)column, a warp per row. */
template <typename I>
__global__ void pack_keys(const I *rp, const I *ci, int64_t m, unsigned long long *keys) {
  const int lane = threadIdx.x & 31;
  const int64_t warps = ((int64_t)gridDim.x * blockDim.x) >> 5;
  for (int64_t r = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) >> 5; r < m; r += warps) {
    const int64_t e = rp[r + 1];
    for (int64_t p = (int64_t)rp[r] + lane; p < e; p += 32)
      keys[p] = (unsigned long long)r << 32 | (unsigned)(long long)ci[p];
  }
}

struct EqualNeighbour {
  const unsigned long long *keys;
  __device__ unsigned operator()(int64_t p) const { return keys[p + 1] == keys[p] ? 1u : 0u; }
};

struct OrOp {
  __device__ unsigned operator()(unsigned a, unsigned b) const { return a | b; }
};

/* ---- row statistics --------------------------------------------------------- */

struct RowStat {
  int64_t max_len, empty;
  double sum_sq;
};

template <typename I>
struct RowLen {
  const I *rp;
  __device__ RowStat operator()(int64_t i) const {
    const int64_t len = (int64_t)rp[i + 1] - (int64_t)rp[i];
    return RowStat{len, len == 0 ? 1 : 0, (double)len * (double)len};
  }
};

struct RowStatOp {
  __device__ RowStat operator()(const RowStat &a, const RowStat &b) const {
    return RowStat{a.max_len > b.max_len ? a.max_len : b.max_len, a.empty + b.empty,
                   a.sum_sq + b.sum_sq};
  }
};

/* ---- plumbing ------------------------------------------------------------ */

using Count = thrust::counting_iterator<int64_t>;

int grid_for(int64_t items, int block) {
  int64_t g = (items + block - 1) / block;
  if (g > 4096) g = 4096; /* grid-stride beyond */
  return g < 1 ? 1 : (int)g;
}

size_t align256(size_t b) { return (b + 255) & ~(size_t)255; }

/* Workspace layout (offsets from a 256-byte-aligned base). */
struct Layout {
  size_t res;       /* 256 bytes: rp_key @0, ColInfo @16, verdict @64, dup ColInfo @128 */
  size_t mark;      /* nnz bytes */
  size_t keys_in;   /* nnz packed keys (when the sort is possible) */
  size_t keys_out;  /* nnz packed keys, sorted */
  size_t temp;      /* CUB */
  size_t temp_bytes;
  size_t total;
  bool can_sort;
  int end_bit;
};

template <typename I>
cudaError_t layout_for(const gko_csr_s *a, Layout *L) {
  const int64_t m = a->m, nnz = a->nnz;
  const bool wide = sizeof(I) == 8;
  /* packed keys: the row in the high 32 bits, the column in the low */
  L->can_sort = nnz > 1 && m <= ((int64_t)1 << 32) && (!wide || a->k <= ((int64_t)1 << 32));
  size_t off = 0;
  L->res = off;
  off += 256;
  L->mark = off;
  off += align256((size_t)nnz);
  L->keys_out = L->keys_in = 0;
  L->end_bit = 32;
  while (L->end_bit < 64 && ((int64_t)1 << (L->end_bit - 32)) < m) L->end_bit++;
  if (L->can_sort) {
    L->keys_in = off;
    off += align256((size_t)nnz * 8);
    L->keys_out = off;
    off += align256((size_t)nnz * 8);
  }
  /* CUB temporary storage: the largest of the passes */
  size_t t = 0, need = 0;
  cudaError_t e = cub::DeviceReduce::TransformReduce(
      nullptr, t, Count(0), (int64_t *)nullptr, m + 1, MinOp(),
      RowPtrKey<I>{(const I *)a->row_ptr, m, nnz}, kNone);
  if (e != cudaSuccess) return e;
  need = t;
  if (nnz > 0) {
    t = 0;
    e = cub::DeviceReduce::TransformReduce(nullptr, t, Count(0), (ColInfo *)nullptr, nnz,
                                           ColOp(), ColCheck<I>{nullptr, nullptr, a->k},
                                           ColInfo{kNone, 0u});
    if (e != cudaSuccess) return e;
    if (t > need) need = t;
  }
  if (L->can_sort) {
    t = 0;
    e = cub::DeviceReduce::TransformReduce(nullptr, t, Count(0), (unsigned *)nullptr, nnz - 1,
                                           OrOp(), EqualNeighbour{nullptr}, 0u);
    if (e != cudaSuccess) return e;
    if (t > need) need = t;
    t = 0;
    e = cub::DeviceRadixSort::SortKeys(nullptr, t, (const unsigned long long *)nullptr,
                                       (unsigned long long *)nullptr, nnz, 0, L->end_bit);
    if (e != cudaSuccess) return e;
    if (t > need) need = t;
  }
  L->temp = off;
  L->temp_bytes = need;
  off += align256(need);
  L->total = off;
  return cudaSuccess;
}

template <typename I>
gko_status_t validate(const gko_csr_s *a, char *ws, size_t ws_bytes, gk_csr_verdict *out,
                      cudaStream_t st) {
  Layout L;
  cudaError_t e = layout_for<I>(a, &L);
  if (e != cudaSuccess) return gk_cuda_fail(e, "CUB temporary-storage query (validation)");
  if (ws_bytes < L.total)
    return gk_fail(GKO_STATUS_INTERNAL, "validation workspace %zu < %zu", ws_bytes, L.total);
  const I *rp = (const I *)a->row_ptr, *ci = (const I *)a->col_ind;
  const int64_t m = a->m, nnz = a->nnz;
  int64_t *rp_key = (int64_t *)(ws + L.res);
  ColInfo *cols = (ColInfo *)(ws + L.res + 16);
  int64_t *verdict = (int64_t *)(ws + L.res + 64);
  unsigned *dup = (unsigned *)(ws + L.res + 128);
  unsigned char *mark = (unsigned char *)(ws + L.mark);
  void *temp = ws + L.temp;
  size_t tb = L.temp_bytes;

  e = cub::DeviceReduce::TransformReduce(temp, tb, Count(0), rp_key, m + 1, MinOp(),
                                         RowPtrKey<I>{rp, m, nnz}, kNone, st);
  if (e != cudaSuccess) return gk_cuda_fail(e, "cub::DeviceReduce::TransformReduce (row_ptr)");
  const ColInfo none{kNone, 0u};
  if (nnz > 0) {
    e = cudaMemsetAsync(mark, 0, (size_t)nnz, st);
    if (e != cudaSuccess) return gk_cuda_fail(e, "cudaMemsetAsync (row-start marks)");
    e = gk::launch(mark_row_starts<I>, grid_for(m, 256), 256, st, rp, m, (const int64_t *)rp_key,
                   mark);
    if (e != cudaSuccess) return gk_cuda_fail(e, "row-start mark kernel launch");
    tb = L.temp_bytes;
    e = cub::DeviceReduce::TransformReduce(temp, tb, Count(0), cols, nnz, ColOp(),
                                           ColCheck<I>{ci, mark, a->k}, none, st);
    if (e != cudaSuccess) return gk_cuda_fail(e, "cub::DeviceReduce::TransformReduce (col_ind)");
  }
  e = gk::launch(finish<I>, 1, 1, st, rp, ci, m, nnz, (const int64_t *)rp_key,
                 (const ColInfo *)cols, verdict);
  if (e != cudaSuccess) return gk_cuda_fail(e, "validation verdict kernel launch");
  int64_t v[6];
  e = cudaMemcpyAsync(v, verdict, sizeof v, cudaMemcpyDeviceToHost, st);
  if (e == cudaSuccess) e = cudaStreamSynchronize(st);
  if (e != cudaSuccess) return gk_cuda_fail(e, "reading the validation result");

  if (v[5] == -2) { /* some row is unsorted: duplicates need a sorted copy */
    v[5] = -1;
    if (L.can_sort) {
      unsigned long long *kin = (unsigned long long *)(ws + L.keys_in);
      unsigned long long *kout = (unsigned long long *)(ws + L.keys_out);
      e = gk::launch(pack_keys<I>, grid_for(m * 32, 256), 256, st, rp, ci, m, kin);
      if (e != cudaSuccess) return gk_cuda_fail(e, "key packing kernel launch");
      tb = L.temp_bytes;
      e = cub::DeviceRadixSort::SortKeys(temp, tb, (const unsigned long long *)kin, kout, nnz, 0,
                                         L.end_bit, st);
      if (e != cudaSuccess) return gk_cuda_fail(e, "cub::DeviceRadixSort::SortKeys");
      tb = L.temp_bytes;
      e = cub::DeviceReduce::TransformReduce(temp, tb, Count(0), dup, nnz - 1, OrOp(),
                                             EqualNeighbour{kout}, 0u, st);
      if (e != cudaSuccess)
        return gk_cuda_fail(e, "cub::DeviceReduce::TransformReduce (sorted keys)");
      unsigned d = 0;
      e = cudaMemcpyAsync(&d, dup, sizeof d, cudaMemcpyDeviceToHost, st);
      if (e == cudaSuccess) e = cudaStreamSynchronize(st);
      if (e != cudaSuccess) return gk_cuda_fail(e, "reading the duplicate check");
      v[5] = d ? 1 : 0;
    }
  }
  out->check = v[0];
  out->row = v[1];
  out->a = v[2];
  out->b = v[3];
  out->sorted = v[4];
  out->duplicates = v[5];
  return GKO_STATUS_SUCCESS;
}

template <typename I>
gko_status_t row_stats(const gko_csr_s *a, gk_row_stats *out, cudaStream_t st) {
  const RowStat init{0, 0, 0.0};
  size_t tb = 0;
  RowLen<I> f{(const I *)a->row_ptr};
  cudaError_t e = cub::DeviceReduce::TransformReduce(nullptr, tb, Count(0), (RowStat *)nullptr,
                                                     a->m, RowStatOp(), f, init, st);
  if (e != cudaSuccess) return gk_cuda_fail(e, "CUB temporary-storage query (row statistics)");
  char *buf = nullptr;
  e = cudaMalloc(&buf, 256 + tb);
  if (e != cudaSuccess) return gk_cuda_fail(e, "cudaMalloc (row statistics)");
  RowStat r{0, 0, 0.0};
  e = cub::DeviceReduce::TransformReduce(buf + 256, tb, Count(0), (RowStat *)buf, a->m,
                                         RowStatOp(), f, init, st);
  if (e == cudaSuccess) e = cudaMemcpyAsync(&r, buf, sizeof r, cudaMemcpyDeviceToHost, st);
  if (e == cudaSuccess) e = cudaStreamSynchronize(st);
  cudaFree(buf);
  if (e != cudaSuccess) return gk_cuda_fail(e, "row statistics (cub::DeviceReduce)");
  out->max_len = r.max_len;
  out->empty_rows = r.empty;
  out->sum_sq = r.sum_sq;
  return GKO_STATUS_SUCCESS;
}

} // namespace

extern "C" gko_status_t gk_csr_validate_bytes(const struct gko_csr_s *a, size_t *bytes) {
  Layout L;
  cudaError_t e = a->index_type == GKO_INDEX_INT64 ? layout_for<int64_t>(a, &L)
                                                   : layout_for<int>(a, &L);
  if (e != cudaSuccess) return gk_cuda_fail(e, "CUB temporary-storage query (validation)");
  *bytes = L.total;
  return GKO_STATUS_SUCCESS;
}

extern "C" gko_status_t gk_csr_validate_run(const struct gko_csr_s *a, void *ws,
                                            size_t ws_bytes, gk_csr_verdict *out,
                                            void *stream) {
  cudaStream_t st = (cudaStream_t)stream;
  return a->index_type == GKO_INDEX_INT64
             ? validate<int64_t>(a, (char *)ws, ws_bytes, out, st)
             : validate<int>(a, (char *)ws, ws_bytes, out, st);
}

extern "C" gko_status_t gk_csr_row_stats(const struct gko_csr_s *a, gk_row_stats *out,
                                         void *stream) {
  cudaStream_t st = (cudaStream_t)stream;
  return a->index_type == GKO_INDEX_INT64 ? row_stats<int64_t>(a, out, st)
                                          : row_stats<int>(a, out, st);
}
