/* test_csr.c -- the CSR descriptor (host checks, every machine) and
 * gko_csr_validate on the GPU: each kind of malformed matrix reported with
 * the right check and row, the sorted / duplicate flags, workspace
 * handling, the real matrices in data/, refusal under graph capture. */
#include "common.h"
#include "../util/mtx.h"

/* ---- host-side matrices (t_hcsr, common.h: structure only, no values) ---- */

/* Random valid CSR: about len entries per row, some empty rows, columns
 * sorted and distinct within each row. */
static t_hcsr random_csr(int64_t m, int64_t k, int len) {
  t_hcsr a = {m, k, 0, calloc((size_t)m + 1, 8), NULL, NULL};
  for (int64_t r = 0; r < m; r++) {
    int64_t l = t_next() % 8 == 0 ? 0 : (int64_t)(t_next() % (uint64_t)(2 * len + 1));
    if (l > k) l = k;
    a.rp[r + 1] = a.rp[r] + l;
  }
  a.nnz = a.rp[m];
  a.ci = malloc((size_t)a.nnz * 8 + 8);
  for (int64_t r = 0; r < m; r++) {
    int64_t l = a.rp[r + 1] - a.rp[r];
    /* l distinct sorted columns: walk with random gaps */
    int64_t c = 0;
    for (int64_t t = 0; t < l; t++) {
      int64_t room = k - c - (l - t);
      int64_t gap = room > 0 ? (int64_t)(t_next() % (uint64_t)(room / (l - t) + 1)) : 0;
      c += gap;
      a.ci[a.rp[r] + t] = c++;
    }
  }
  return a;
}

/* Uploads with index type it (values: f32 ones; validation never reads
 * them).  nnz_desc: the nnz the descriptor claims (normally a->nnz). */
static t_dcsr upload(const t_hcsr *a, gko_index_t it, int64_t nnz_desc) {
  t_dcsr d = {NULL, NULL, NULL, NULL};
  size_t is = it == GKO_INDEX_INT64 ? 8 : 4;
  int64_t cap = a->nnz > nnz_desc ? a->nnz : nnz_desc;
  d.rp = t_dalloc((size_t)(a->m + 1) * is);
  d.ci = t_dalloc((size_t)cap * is + 8);
  d.va = t_dalloc((size_t)cap * 4 + 8);
  void *hr = t_index_array(it, a->rp, a->m + 1, a->m + 1),
       *hc = t_index_array(it, a->ci, a->nnz, cap);
  t_h2d(d.rp, hr, (size_t)(a->m + 1) * is);
  if (cap) t_h2d(d.ci, hc, (size_t)cap * is);
  free(hr);
  free(hc);
  T_OK(gko_csr_create(&d.csr, a->m, a->k, nnz_desc, d.rp, d.ci, d.va, it, GKO_DTYPE_F32));
  return d;
}

typedef struct {
  gko_status_t status;
  gko_csr_check_t check;
  int64_t row;
  int sorted, dups;
  char detail[512];
} verdict;

static verdict run_validate(gko_handle_t h, gko_csr_t csr) {
  verdict v = {GKO_STATUS_SUCCESS, GKO_CSR_VALID, -7, -7, -7, ""};
  size_t ws = 0;
  T_OK(gko_csr_validate_workspace_size(h, csr, &ws));
  void *w = ws ? t_dalloc(ws) : NULL;
  v.status = gko_csr_validate(h, csr, w, ws, &v.check, &v.row, &v.sorted, &v.dups, NULL);
  snprintf(v.detail, sizeof v.detail, "%s", gko_last_error_detail());
  if (w) cudaFree(w);
  return v;
}

static const gko_index_t kIdx[2] = {GKO_INDEX_INT32, GKO_INDEX_INT64};

/* ---- host-only: the descriptor -------------------------------------------------- */

Test(csr_args, create_rejects_with_a_reason) {
  float v[4] = {0};
  int32_t i32[8] = {0};
  gko_csr_t c = (gko_csr_t)(uintptr_t)0x1234;
  const gko_csr_t keep = c;
#define BAD(call, word)                                                          \
  do {                                                                           \
    T_FAILS(GKO_STATUS_INVALID_VALUE, call);                                     \
    cr_expect(strstr(gko_last_error_detail(), word) != NULL, "%s: '%s'", #call, \
              gko_last_error_detail());                                          \
    cr_expect_eq(c, keep, "%s wrote *csr", #call);                               \
  } while (0)
  BAD(gko_csr_create(NULL, 2, 2, 1, i32, i32, v, GKO_INDEX_INT32, GKO_DTYPE_F32), "csr");
  BAD(gko_csr_create(&c, -1, 2, 1, i32, i32, v, GKO_INDEX_INT32, GKO_DTYPE_F32), "m =");
  BAD(gko_csr_create(&c, 2, -1, 1, i32, i32, v, GKO_INDEX_INT32, GKO_DTYPE_F32), "k =");
  BAD(gko_csr_create(&c, 2, 2, -1, i32, i32, v, GKO_INDEX_INT32, GKO_DTYPE_F32), "nnz =");
  BAD(gko_csr_create(&c, 2, 2, 1, i32, i32, v, (gko_index_t)2, GKO_DTYPE_F32), "index_type");
  BAD(gko_csr_create(&c, 2, 2, 1, i32, i32, v, GKO_INDEX_INT32, (gko_dtype_t)7), "value_type");
  BAD(gko_csr_create(&c, 0, 2, 1, NULL, i32, v, GKO_INDEX_INT32, GKO_DTYPE_F32), "nnz");
  BAD(gko_csr_create(&c, 2, 0, 1, i32, i32, v, GKO_INDEX_INT32, GKO_DTYPE_F32), "nnz");
  BAD(gko_csr_create(&c, 2, 2, (int64_t)INT32_MAX + 1, i32, i32, v, GKO_INDEX_INT32,
                     GKO_DTYPE_F32),
      "INT32");
  BAD(gko_csr_create(&c, 2, 2, 1, NULL, i32, v, GKO_INDEX_INT32, GKO_DTYPE_F32), "row_ptr");
  BAD(gko_csr_create(&c, 2, 2, 1, i32, NULL, v, GKO_INDEX_INT32, GKO_DTYPE_F32), "col_ind");
  BAD(gko_csr_create(&c, 2, 2, 1, i32, i32, NULL, GKO_INDEX_INT32, GKO_DTYPE_F32), "values");
  BAD(gko_csr_create(&c, 2, 2, 1, (char *)i32 + 2, i32, v, GKO_INDEX_INT32, GKO_DTYPE_F32),
      "row_ptr");
  BAD(gko_csr_create(&c, 2, 2, 1, i32, (char *)i32 + 4, v, GKO_INDEX_INT64, GKO_DTYPE_F32),
      "aligned");
  BAD(gko_csr_create(&c, 2, 2, 1, i32, i32, (char *)v + 1, GKO_INDEX_INT32, GKO_DTYPE_F16),
      "values");
  BAD(gko_csr_create(&c, INT64_MAX, 2, 1, i32, i32, v, GKO_INDEX_INT64, GKO_DTYPE_F32),
      "overflow");
#undef BAD
}

Test(csr_args, create_accepts_empty_arrays_as_null) {
  gko_csr_t c = NULL;
  T_OK(gko_csr_create(&c, 0, 0, 0, NULL, NULL, NULL, GKO_INDEX_INT32, GKO_DTYPE_F32));
  cr_expect_not_null(c);
  T_OK(gko_csr_destroy(c));
  int64_t rp[4] = {0, 0, 0, 0};
  T_OK(gko_csr_create(&c, 3, 5, 0, rp, NULL, NULL, GKO_INDEX_INT64, GKO_DTYPE_BF16));
  T_OK(gko_csr_destroy(c));
  T_OK(gko_csr_create(&c, 3, 0, 0, rp, NULL, NULL, GKO_INDEX_INT64, GKO_DTYPE_F16));
  T_OK(gko_csr_destroy(c));
  T_OK(gko_csr_destroy(NULL));
  cr_expect_str_eq(gko_last_error_detail(), "");
}

Test(csr_args, validate_rejects_before_any_gpu_work) {
  int64_t rp[3] = {0, 1, 2};
  int32_t ci[2] = {0, 1};
  gko_csr_t c = NULL;
  T_OK(gko_csr_create(&c, 2, 2, 2, rp, ci, ci, GKO_INDEX_INT64, GKO_DTYPE_F32));
  gko_csr_check_t chk = (gko_csr_check_t)77;
  int64_t row = 77;
  int sorted = 77, dup = 77;
  size_t bytes = 77;
  gko_handle_t fake = (gko_handle_t)(uintptr_t)0x10;
  T_FAILS(GKO_STATUS_INVALID_VALUE,
          gko_csr_validate(NULL, c, NULL, 0, &chk, &row, &sorted, &dup, NULL));
  cr_expect(strstr(gko_last_error_detail(), "handle") != NULL);
  T_FAILS(GKO_STATUS_INVALID_VALUE,
          gko_csr_validate(fake, NULL, NULL, 0, &chk, &row, &sorted, &dup, NULL));
  cr_expect(strstr(gko_last_error_detail(), "csr") != NULL);
  T_FAILS(GKO_STATUS_INVALID_VALUE,
          gko_csr_validate(fake, c, NULL, 64, &chk, &row, &sorted, &dup, NULL));
  cr_expect(strstr(gko_last_error_detail(), "workspace") != NULL);
  T_FAILS(GKO_STATUS_INVALID_VALUE, gko_csr_validate_workspace_size(NULL, c, &bytes));
  T_FAILS(GKO_STATUS_INVALID_VALUE, gko_csr_validate_workspace_size(fake, NULL, &bytes));
  T_FAILS(GKO_STATUS_INVALID_VALUE, gko_csr_validate_workspace_size(fake, c, NULL));
  cr_expect_eq(chk, (gko_csr_check_t)77);
  cr_expect_eq(row, 77);
  cr_expect_eq(sorted, 77);
  cr_expect_eq(dup, 77);
  cr_expect_eq(bytes, 77);
  gko_csr_destroy(c);
}

/* ---- GPU: validation ------------------------------------------------------------- */

Test(csr, valid_random_matrices_both_index_types) {
  uint64_t seed;
  gko_handle_t h = t_gpu_setup(&seed);
  const int64_t ms[] = {1, 7, 1000, 40000};
  for (size_t mi = 0; mi < sizeof ms / sizeof ms[0]; mi++)
    for (int ix = 0; ix < 2; ix++) {
      t_hcsr a = random_csr(ms[mi], 300, 5);
      t_dcsr d = upload(&a, kIdx[ix], a.nnz);
      verdict v = run_validate(h, d.csr);
      cr_expect_eq(v.status, GKO_STATUS_SUCCESS, "seed %llu m %lld: %s",
                   (unsigned long long)seed, (long long)a.m, v.detail);
      cr_expect_eq(v.check, GKO_CSR_VALID);
      cr_expect_eq(v.row, -1);
      cr_expect_eq(v.sorted, 1);
      cr_expect_eq(v.dups, 0);
      t_dcsr_free(&d);
      t_hcsr_free(&a);
    }
  gko_destroy(h);
}

Test(csr, real_matrices_are_valid_sorted_without_duplicates) {
  T_REQUIRE_GPU();
  gko_handle_t h = t_handle();
  const char *files[] = {"cora.mtx", "pubmed.mtx", "p2p-Gnutella31.mtx", "ca-CondMat.mtx",
                         "bcsstk13.mtx", "n1024-l1.mtx"};
  for (size_t f = 0; f < 6; f++) {
    char path[1024], err[512];
    cr_assert_eq(mtx_find(files[f], path, sizeof path), 0,
                 "%s not found (set GKO_DATA_DIR)", files[f]);
    mtx_csr m;
    cr_assert_eq(mtx_read(path, MTX_SUM_DUPLICATES, &m, err, sizeof err), 0, "%s", err);
    t_hcsr a = {m.m, m.k, m.nnz, m.row_ptr, m.col_ind, NULL};
    for (int ix = 0; ix < 2; ix++) {
      t_dcsr d = upload(&a, kIdx[ix], a.nnz);
      verdict v = run_validate(h, d.csr);
      cr_expect_eq(v.status, GKO_STATUS_SUCCESS, "%s: %s", files[f], v.detail);
      cr_expect_eq(v.sorted, 1, "%s", files[f]);
      cr_expect_eq(v.dups, 0, "%s", files[f]);
      t_dcsr_free(&d);
    }
    mtx_free(&m);
  }
  gko_destroy(h);
}

/* Row r with at least `need` entries (and r >= min_row), or -1. */
static int64_t row_with(const t_hcsr *a, int64_t need, int64_t min_row) {
  for (int64_t r = min_row; r < a->m; r++)
    if (a->rp[r + 1] - a->rp[r] >= need) return r;
  return -1;
}

static void expect_defect(gko_handle_t h, const t_hcsr *a, gko_index_t it, int64_t nnz_desc,
                          gko_csr_check_t want, int64_t want_row, const char *what) {
  t_dcsr d = upload(a, it, nnz_desc);
  verdict v = run_validate(h, d.csr);
  cr_expect_eq(v.status, GKO_STATUS_INVALID_VALUE, "%s (%s): %s", what,
               it ? "int64" : "int32", gko_status_name(v.status));
  cr_expect_eq(v.check, want, "%s (%s): check %d, want %d: %s", what, it ? "int64" : "int32",
               (int)v.check, (int)want, v.detail);
  cr_expect_eq(v.row, want_row, "%s (%s): row %lld, want %lld: %s", what,
               it ? "int64" : "int32", (long long)v.row, (long long)want_row, v.detail);
  char rowtxt[64];
  snprintf(rowtxt, sizeof rowtxt, "row %lld", (long long)want_row);
  cr_expect(strstr(v.detail, rowtxt) != NULL, "%s: detail '%s' lacks '%s'", what, v.detail,
            rowtxt);
  if (want != GKO_CSR_COLUMN_RANGE) {
    cr_expect_eq(v.sorted, -1, "%s: sorted unknown when row_ptr is broken", what);
    cr_expect_eq(v.dups, -1, "%s: duplicates unknown when row_ptr is broken", what);
  }
  t_dcsr_free(&d);
}

Test(csr, each_defect_reports_its_check_and_first_row) {
  T_REQUIRE_GPU();
  uint64_t seed = t_seed();
  cr_log_info("seed %llu", (unsigned long long)seed);
  gko_handle_t h = t_handle();
  for (int ix = 0; ix < 2; ix++) {
    t_hcsr a = random_csr(2000, 500, 6);
    const int64_t m = a.m, nnz = a.nnz;
    /* row_ptr[0] != 0 (also makes row 0 "decreasing" if large: START wins) */
    a.rp[0] = 3;
    expect_defect(h, &a, kIdx[ix], nnz, GKO_CSR_ROW_PTR_START, 0, "row_ptr[0] = 3");
    a.rp[0] = a.rp[1] + 5;
    expect_defect(h, &a, kIdx[ix], nnz, GKO_CSR_ROW_PTR_START, 0, "row_ptr[0] > row_ptr[1]");
    a.rp[0] = 0;
    /* a decreasing step at row r (and a later one: the first is reported) */
    int64_t r = row_with(&a, 2, 700);
    cr_assert(r >= 0);
    int64_t r2 = row_with(&a, 2, r + 50);
    cr_assert(r2 >= 0);
    int64_t save = a.rp[r + 1], save2 = a.rp[r2 + 1];
    a.rp[r + 1] = a.rp[r] - 1;
    a.rp[r2 + 1] = a.rp[r2] - 2;
    expect_defect(h, &a, kIdx[ix], nnz, GKO_CSR_ROW_PTR_DECREASING, r, "decreasing step");
    a.rp[r + 1] = save;
    expect_defect(h, &a, kIdx[ix], nnz, GKO_CSR_ROW_PTR_DECREASING, r2, "later decreasing step");
    a.rp[r2 + 1] = save2;
    /* a decreasing step at the very last row */
    save = a.rp[m];
    a.rp[m] = a.rp[m - 1] - 1;
    expect_defect(h, &a, kIdx[ix], a.rp[m], GKO_CSR_ROW_PTR_DECREASING, m - 1,
                  "decreasing last row");
    a.rp[m] = save;
    /* row_ptr[m] != nnz, both ways */
    expect_defect(h, &a, kIdx[ix], nnz - 1, GKO_CSR_ROW_PTR_END, m - 1, "row_ptr[m] > nnz");
    expect_defect(h, &a, kIdx[ix], nnz + 3, GKO_CSR_ROW_PTR_END, m - 1, "row_ptr[m] < nnz");
    /* a column < 0 in row r, and one >= k in a later row */
    r = row_with(&a, 3, 900);
    r2 = row_with(&a, 1, r + 1);
    /* rows just after empty rows exercise the binary search */
    for (int64_t q = r + 1; q < m - 1; q++)
      if (a.rp[q] == a.rp[q + 1] && a.rp[q + 2] > a.rp[q + 1]) {
        r2 = q + 1;
        break;
      }
    int64_t p = a.rp[r] + 2, p2 = a.rp[r2];
    int64_t cs = a.ci[p], cs2 = a.ci[p2];
    a.ci[p2] = a.k;
    expect_defect(h, &a, kIdx[ix], nnz, GKO_CSR_COLUMN_RANGE, r2, "column == k");
    a.ci[p] = -1;
    expect_defect(h, &a, kIdx[ix], nnz, GKO_CSR_COLUMN_RANGE, r, "column < 0 before");
    a.ci[p] = cs;
    a.ci[p2] = a.k + 1000;
    expect_defect(h, &a, kIdx[ix], nnz, GKO_CSR_COLUMN_RANGE, r2, "column > k");
    a.ci[p2] = cs2;
    /* the last entry of the matrix */
    cs = a.ci[nnz - 1];
    a.ci[nnz - 1] = -5;
    int64_t last = m - 1;
    while (a.rp[last] == a.rp[last + 1]) last--;
    expect_defect(h, &a, kIdx[ix], nnz, GKO_CSR_COLUMN_RANGE, last, "last entry");
    a.ci[nnz - 1] = cs;
    /* a row_ptr defect hides column defects */
    a.ci[p] = -1;
    a.rp[m] = nnz + 1;
    expect_defect(h, &a, kIdx[ix], nnz, GKO_CSR_ROW_PTR_END, m - 1, "row_ptr before columns");
    a.rp[m] = nnz;
    a.ci[p] = cs;
    t_dcsr d = upload(&a, kIdx[ix], nnz);
    verdict v = run_validate(h, d.csr);
    cr_expect_eq(v.status, GKO_STATUS_SUCCESS, "restored matrix: %s", v.detail);
    t_dcsr_free(&d);
    t_hcsr_free(&a);
  }
  gko_destroy(h);
}

/* The column defect's verdict still carries the sorted / duplicate flags. */
Test(csr, sorted_and_duplicate_flags) {
  T_REQUIRE_GPU();
  gko_handle_t h = t_handle();
  /* rows: [0 2 5] [] [1 1 4] [7] -- sorted, an adjacent duplicate */
  int64_t rp1[5] = {0, 3, 3, 6, 7}, ci1[7] = {0, 2, 5, 1, 1, 4, 7};
  /* [3 1 3] [2 0] -- unsorted, a non-adjacent duplicate */
  int64_t rp2[3] = {0, 3, 5}, ci2[5] = {3, 1, 3, 2, 0};
  /* [3 1 2] [2 0] [5 5 6] reordered: unsorted, no duplicate; the same
   * column in different rows is not a duplicate */
  int64_t rp3[4] = {0, 3, 5, 7}, ci3[7] = {3, 1, 2, 2, 0, 5, 6};
  /* sorted, the same column in consecutive rows (row boundary) */
  int64_t rp4[4] = {0, 2, 4, 5}, ci4[5] = {1, 4, 4, 6, 6};
  /* unsorted with a column out of range: flags still reported */
  int64_t rp5[3] = {0, 3, 4}, ci5[4] = {4, 2, 9, 0};
  struct {
    int64_t m, k, nnz, *rp, *ci;
    int sorted, dups;
    gko_csr_check_t check;
  } cases[] = {
      {4, 8, 7, rp1, ci1, 1, 1, GKO_CSR_VALID},
      {2, 4, 5, rp2, ci2, 0, 1, GKO_CSR_VALID},
      {3, 8, 7, rp3, ci3, 0, 0, GKO_CSR_VALID},
      {3, 8, 5, rp4, ci4, 1, 0, GKO_CSR_VALID},
      {2, 8, 4, rp5, ci5, 0, 0, GKO_CSR_COLUMN_RANGE},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
    for (int ix = 0; ix < 2; ix++) {
      t_hcsr a = {cases[c].m, cases[c].k, cases[c].nnz, cases[c].rp, cases[c].ci, NULL};
      t_dcsr d = upload(&a, kIdx[ix], a.nnz);
      verdict v = run_validate(h, d.csr);
      cr_expect_eq(v.check, cases[c].check, "case %zu: %s", c, v.detail);
      cr_expect_eq(v.sorted, cases[c].sorted, "case %zu (%s): sorted %d", c,
                   ix ? "int64" : "int32", v.sorted);
      cr_expect_eq(v.dups, cases[c].dups, "case %zu (%s): duplicates %d", c,
                   ix ? "int64" : "int32", v.dups);
      t_dcsr_free(&d);
    }
  /* a large random matrix, rows shuffled, one duplicate planted far apart */
  uint64_t seed = t_seed();
  for (int ix = 0; ix < 2; ix++) {
    t_hcsr a = random_csr(30000, 5000, 12);
    for (int64_t r = 0; r < a.m; r++) {
      int64_t l = a.rp[r + 1] - a.rp[r];
      for (int64_t t = l - 1; t > 0; t--) {
        int64_t j = (int64_t)(t_next() % (uint64_t)(t + 1));
        int64_t x = a.ci[a.rp[r] + t];
        a.ci[a.rp[r] + t] = a.ci[a.rp[r] + j];
        a.ci[a.rp[r] + j] = x;
      }
    }
    t_dcsr d = upload(&a, kIdx[ix], a.nnz);
    verdict v = run_validate(h, d.csr);
    cr_expect_eq(v.status, GKO_STATUS_SUCCESS, "%s", v.detail);
    cr_expect_eq(v.sorted, 0, "seed %llu", (unsigned long long)seed);
    cr_expect_eq(v.dups, 0, "seed %llu", (unsigned long long)seed);
    t_dcsr_free(&d);
    int64_t r = row_with(&a, 6, 20000);
    cr_assert(r >= 0);
    a.ci[a.rp[r] + 5] = a.ci[a.rp[r]];
    d = upload(&a, kIdx[ix], a.nnz);
    v = run_validate(h, d.csr);
    cr_expect_eq(v.sorted, 0);
    cr_expect_eq(v.dups, 1, "seed %llu: planted duplicate in row %lld", (unsigned long long)seed,
                 (long long)r);
    t_dcsr_free(&d);
    t_hcsr_free(&a);
  }
  gko_destroy(h);
}

Test(csr, empty_matrices) {
  T_REQUIRE_GPU();
  gko_handle_t h = t_handle();
  gko_csr_t c = NULL;
  gko_csr_check_t chk = (gko_csr_check_t)9;
  int64_t row = 9;
  int sorted = 9, dup = 9;
  size_t ws = 1;
  T_OK(gko_csr_create(&c, 0, 5, 0, NULL, NULL, NULL, GKO_INDEX_INT32, GKO_DTYPE_F32));
  T_OK(gko_csr_validate_workspace_size(h, c, &ws));
  cr_expect_eq(ws, 0);
  T_OK(gko_csr_validate(h, c, NULL, 0, &chk, &row, &sorted, &dup, NULL));
  cr_expect_eq(chk, GKO_CSR_VALID);
  cr_expect_eq(row, -1);
  cr_expect_eq(sorted, 1);
  cr_expect_eq(dup, 0);
  gko_csr_destroy(c);
  /* nnz == 0: only row_ptr is read (all zeros, or a defect) */
  for (int ix = 0; ix < 2; ix++) {
    int64_t rp[6] = {0, 0, 0, 0, 0, 0};
    t_hcsr a = {5, 3, 0, rp, NULL, NULL};
    t_dcsr d = upload(&a, kIdx[ix], 0);
    verdict v = run_validate(h, d.csr);
    cr_expect_eq(v.status, GKO_STATUS_SUCCESS, "%s", v.detail);
    cr_expect_eq(v.sorted, 1);
    cr_expect_eq(v.dups, 0);
    t_dcsr_free(&d);
    rp[5] = 2;
    a.rp = rp;
    expect_defect(h, &a, kIdx[ix], 0, GKO_CSR_ROW_PTR_END, 4, "nnz = 0, row_ptr[m] = 2");
  }
  gko_destroy(h);
}

Test(csr, workspace_null_small_and_unaligned) {
  gko_handle_t h = t_gpu_setup(NULL);
  t_hcsr a = random_csr(5000, 800, 9);
  t_dcsr d = upload(&a, GKO_INDEX_INT32, a.nnz);
  size_t ws = 0;
  T_OK(gko_csr_validate_workspace_size(h, d.csr, &ws));
  cr_expect(ws > (size_t)a.nnz, "workspace %zu for nnz %lld", ws, (long long)a.nnz);
  gko_csr_check_t chk = (gko_csr_check_t)9;
  int64_t row = 9;
  int sorted = 9, dup = 9;
  /* NULL: the call allocates */
  T_OK(gko_csr_validate(h, d.csr, NULL, 0, &chk, &row, &sorted, &dup, NULL));
  cr_expect_eq(chk, GKO_CSR_VALID);
  /* too small: INSUFFICIENT_WORKSPACE, outputs untouched */
  char *w = t_dalloc(ws + 1);
  chk = (gko_csr_check_t)9;
  row = 9;
  sorted = dup = 9;
  T_FAILS(GKO_STATUS_INSUFFICIENT_WORKSPACE,
          gko_csr_validate(h, d.csr, w, ws - 256, &chk, &row, &sorted, &dup, NULL));
  cr_expect(chk == (gko_csr_check_t)9 && row == 9 && sorted == 9 && dup == 9);
  /* any alignment works with the reported size */
  T_OK(gko_csr_validate(h, d.csr, w + 1, ws, &chk, &row, &sorted, &dup, NULL));
  cr_expect_eq(chk, GKO_CSR_VALID);
  /* NULL outputs are fine */
  T_OK(gko_csr_validate(h, d.csr, w, ws, NULL, NULL, NULL, NULL, NULL));
  cudaFree(w);
  t_dcsr_free(&d);
  t_hcsr_free(&a);
  gko_destroy(h);
}

Test(csr, refuses_to_run_inside_graph_capture) {
  T_REQUIRE_GPU();
  gko_handle_t h = t_handle();
  int64_t rp[3] = {0, 1, 2}, ci[2] = {0, 1};
  t_hcsr a = {2, 2, 2, rp, ci, NULL};
  t_dcsr d = upload(&a, GKO_INDEX_INT64, 2);
  cudaStream_t s;
  T_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  gko_csr_check_t chk = (gko_csr_check_t)9;
  T_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  T_FAILS(GKO_STATUS_NOT_SUPPORTED,
          gko_csr_validate(h, d.csr, NULL, 0, &chk, NULL, NULL, NULL, s));
  cudaGraph_t g = NULL;
  T_CUDA(cudaStreamEndCapture(s, &g)); /* the capture survived */
  cr_expect_eq(chk, (gko_csr_check_t)9);
  cudaGraphDestroy(g);
  T_OK(gko_csr_validate(h, d.csr, NULL, 0, &chk, NULL, NULL, NULL, s));
  cr_expect_eq(chk, GKO_CSR_VALID);
  cudaStreamDestroy(s);
  t_dcsr_free(&d);
  gko_destroy(h);
}
