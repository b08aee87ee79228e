/* csr.c -- the CSR descriptor and its GPU validation (gko_csr_*).  The GPU
 * passes live in kernels/csr.cu; this file checks arguments, sizes and
 * aligns the workspace, and turns the verdict into a status and a
 * sentence. */
#include <stdint.h>
#include <stdlib.h>

#include <cuda_runtime_api.h>

#include "spmm.h"

static gko_status_t gk_csr_check_ptr(const void *p, const char *name, size_t esize,
                                     int64_t count) {
  if (count == 0) return GKO_STATUS_SUCCESS; /* never read: NULL is fine */
  if (!p)
    return gk_fail(GKO_STATUS_INVALID_VALUE, "%s is NULL but holds %lld elements", name,
                   (long long)count);
  return gk_check_elem_align(p, name, esize);
}

static const gk_rule kIndexType = {"index_type", GKO_INDEX_INT32, GKO_INDEX_INT64, 0,
                                   "is not GKO_INDEX_INT32 (0) or GKO_INDEX_INT64 (1)", 0, 0};

GKO_API gko_status_t gko_csr_create(gko_csr_t *csr, int64_t m, int64_t k, int64_t nnz,
                                    const void *row_ptr, const void *col_ind,
                                    const void *values, gko_index_t index_type,
                                    gko_dtype_t value_type) {
  gk_clear_error();
  if (!csr) return gk_fail(GKO_STATUS_INVALID_VALUE, "csr is NULL");
  if (m < 0) return gk_fail(GKO_STATUS_INVALID_VALUE, "m = %lld is negative", (long long)m);
  if (k < 0) return gk_fail(GKO_STATUS_INVALID_VALUE, "k = %lld is negative", (long long)k);
  if (nnz < 0)
    return gk_fail(GKO_STATUS_INVALID_VALUE, "nnz = %lld is negative", (long long)nnz);
  gko_status_t s;
  size_t es;
  if ((s = gk_rule_check(&kIndexType, (int)index_type)) ||
      (s = gk_check_dtype((int)value_type, "value_type", &es)))
    return s;
  if (nnz > 0 && (m == 0 || k == 0))
    return gk_fail(GKO_STATUS_INVALID_VALUE,
                   "nnz = %lld but the matrix is %lld x %lld: no entry can be valid",
                   (long long)nnz, (long long)m, (long long)k);
  if (index_type == GKO_INDEX_INT32 && nnz > INT32_MAX)
    return gk_fail(GKO_STATUS_INVALID_VALUE,
                   "nnz = %lld does not fit GKO_INDEX_INT32 row pointers (at most "
                   "2147483647): use GKO_INDEX_INT64",
                   (long long)nnz);
  const size_t is = index_type == GKO_INDEX_INT64 ? 8 : 4;
  if ((uint64_t)m + 1 > (uint64_t)INT64_MAX / is || (uint64_t)nnz > (uint64_t)INT64_MAX / 8)
    return gk_fail(GKO_STATUS_INVALID_VALUE, "m = %lld or nnz = %lld overflow a byte count",
                   (long long)m, (long long)nnz);
  if ((s = gk_csr_check_ptr(row_ptr, "row_ptr", is, m == 0 ? 0 : m + 1))) return s;
  if ((s = gk_csr_check_ptr(col_ind, "col_ind", is, nnz))) return s;
  if ((s = gk_csr_check_ptr(values, "values", es, nnz))) return s;
  struct gko_csr_s *a = calloc(1, sizeof *a);
  if (!a) return gk_fail(GKO_STATUS_ALLOC_FAILED, "host allocation of the CSR descriptor failed");
  a->m = m;
  a->k = k;
  a->nnz = nnz;
  a->row_ptr = m ? row_ptr : NULL;
  a->col_ind = nnz ? col_ind : NULL;
  a->values = nnz ? values : NULL;
  a->index_type = (int)index_type;
  a->value_type = (int)value_type;
  if ((s = gk_live_add(a, GK_LIVE_CSR))) {
    free(a);
    return s;
  }
  *csr = a;
  return GKO_STATUS_SUCCESS;
}

GKO_API gko_status_t gko_csr_destroy(gko_csr_t csr) {
  return gk_live_destroy(csr, GK_LIVE_CSR, "csr", free);
}

GKO_API gko_status_t gko_csr_validate_workspace_size(gko_handle_t handle, gko_csr_t csr,
                                                     size_t *bytes) {
  gko_status_t s = gk_entry_check(handle, csr, GK_LIVE_CSR, "csr", bytes, "bytes");
  if (s) return s;
  if (csr->m == 0) {
    if ((s = gk_live_check(handle, GK_LIVE_HANDLE, "handle"))) return s;
    *bytes = 0;
    return GKO_STATUS_SUCCESS;
  }
  if ((s = gk_check_call(handle, NULL, 0, NULL, NULL))) return s;
  size_t b = 0;
  if ((s = gk_csr_validate_bytes(csr, &b))) return s;
  *bytes = b + 255;
  return GKO_STATUS_SUCCESS;
}


static const char *const kCheckNames[] = {"valid", "row_ptr[0] != 0",
                                          "row_ptr decreasing", "row_ptr[m] != nnz",
                                          "column out of range"};

GKO_API gko_status_t gko_csr_validate(gko_handle_t handle, gko_csr_t csr, void *workspace,
                                      size_t workspace_bytes, gko_csr_check_t *check,
                                      int64_t *row, int *sorted, int *duplicates,
                                      gko_stream_t stream) {
  gk_clear_error();
  if (!handle) return gk_fail(GKO_STATUS_INVALID_VALUE, "handle is NULL");
  gko_status_t s = gk_live_check(csr, GK_LIVE_CSR, "csr");
  if (s) return s;
  if (!workspace && workspace_bytes > 0)
    return gk_fail(GKO_STATUS_INVALID_VALUE, "workspace is NULL but workspace_bytes = %zu",
                   workspace_bytes);
  const void *ptrs[3] = {csr->row_ptr, csr->col_ind, workspace};
  const char *names[3] = {"row_ptr", "col_ind", "workspace"};
  if ((s = gk_check_call(handle, stream, 3, ptrs, names))) return s;
  if ((s = gk_refuse_capture(stream, "gko_csr_validate"))) return s;

  gk_csr_verdict v = {GKO_CSR_VALID, -1, 0, 0, 1, 0};
  if (csr->m > 0) {
    size_t need = 0;
    if ((s = gk_csr_validate_bytes(csr, &need))) return s;
    void *own = NULL;
    char *ws = workspace;
    if (!workspace) {
      cudaError_t e = cudaMalloc(&own, need + 255);
      if (e != cudaSuccess) return gk_cuda_fail(e, "cudaMalloc (validation workspace)");
      ws = own;
      workspace_bytes = need + 255;
    }
    uintptr_t base = ((uintptr_t)ws + 255) & ~(uintptr_t)255;
    size_t slack = base - (uintptr_t)ws;
    if (workspace_bytes < slack || workspace_bytes - slack < need) {
      if (own) cudaFree(own);
      return gk_fail(GKO_STATUS_INSUFFICIENT_WORKSPACE,
                     "workspace_bytes = %zu but the validation of this matrix needs %zu "
                     "(gko_csr_validate_workspace_size)",
                     workspace_bytes, need + 255);
    }
    s = gk_csr_validate_run(csr, (void *)base, workspace_bytes - slack, &v, stream);
    if (own) cudaFree(own);
    if (s) return s;
  }
  if (check) *check = (gko_csr_check_t)v.check;
  if (row) *row = v.row;
  if (sorted) *sorted = (int)v.sorted;
  if (duplicates) *duplicates = (int)v.duplicates;
  const long long r = (long long)v.row, a = (long long)v.a, b = (long long)v.b;
  switch (v.check) {
    case GKO_CSR_VALID:
      return GKO_STATUS_SUCCESS;
    case GKO_CSR_ROW_PTR_START:
      return gk_fail(GKO_STATUS_INVALID_VALUE, "invalid CSR: row_ptr[0] = %lld, must be 0 (row 0)",
                     a);
    case GKO_CSR_ROW_PTR_DECREASING:
      return gk_fail(GKO_STATUS_INVALID_VALUE,
                     "invalid CSR: row_ptr[%lld] = %lld < row_ptr[%lld] = %lld: row %lld has "
                     "negative length",
                     r + 1, b, r, a, r);
    case GKO_CSR_ROW_PTR_END:
      return gk_fail(GKO_STATUS_INVALID_VALUE,
                     "invalid CSR: row_ptr[m = %lld] = %lld but nnz = %lld (row %lld)",
                     (long long)csr->m, a, (long long)csr->nnz, r);
    case GKO_CSR_COLUMN_RANGE:
      return gk_fail(GKO_STATUS_INVALID_VALUE,
                     "invalid CSR: col_ind[%lld] = %lld in row %lld is outside [0, k = %lld)", a,
                     b, r, (long long)csr->k);
  }
  return gk_fail(GKO_STATUS_INTERNAL, "validation returned check %lld (%s)", (long long)v.check,
                 v.check >= 0 && v.check < 5 ? kCheckNames[v.check] : "?");
}
