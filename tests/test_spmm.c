/* test_spmm.c -- C = alpha * A * B + beta * C against a float64 host
 * reference.
 *
 * Tolerance, per element (stated once, used everywhere): with S the sum of
 * |alpha * a_ij * b_jk| over the row's entries plus |beta * c_ik| and len
 * the row's entry count,
 *   |got - ref| <= 2 u |ref| + 2 (len + 2) 2^-24 S + tiny,
 * u the unit roundoff of the output (2^-24 f32, 2^-11 f16, 2^-8 bf16): the
 * f32 accumulation error of the sum and one rounding of C.  The relative
 * Frobenius error is also reported.  Inputs are exact in their dtype (the
 * reference uses the rounded values); every C buffer starts poisoned (NaN
 * bytes, 0xFF) or random, every padding byte (ldc > n) is NaN and must
 * survive; seeds are fresh per run (GKO_TEST_SEED replays). */
#include <float.h>

#include "common.h"
#include "spmm.h" /* the SpMM plan model (host-only tests below) */
#include "../util/mtx.h"

/* ---- host matrices (t_hcsr, common.h: values rounded to the dtype in use) ---- */

/* Random CSR: row lengths around `len` (a share `empty` of rows empty),
 * optionally one row holding `long_share` of all entries; columns random,
 * unsorted when asked, with planted duplicates when asked. */
typedef struct {
  int64_t m, k;
  int len;
  double empty, long_share;
  int unsorted, dups;
} gen_opts;

static t_hcsr gen(const gen_opts *o, gko_dtype_t dt) {
  t_hcsr a = {o->m, o->k, 0, calloc((size_t)o->m + 1, 8), NULL, NULL};
  for (int64_t r = 0; r < o->m; r++) {
    int64_t l = t_uniform(0, 1) < o->empty ? 0 : 1 + (int64_t)(t_next() % (uint64_t)(2 * o->len));
    a.rp[r + 1] = a.rp[r] + l;
  }
  int64_t long_row = -1, extra = 0;
  if (o->long_share > 0 && o->m > 1) {
    long_row = (int64_t)(t_next() % (uint64_t)o->m);
    extra = (int64_t)(o->long_share / (1 - o->long_share) * (double)a.rp[o->m]);
    for (int64_t r = long_row + 1; r <= o->m; r++) a.rp[r] += extra;
  }
  a.nnz = a.rp[o->m];
  a.ci = malloc((size_t)a.nnz * 8 + 8);
  a.v = malloc((size_t)a.nnz * 8 + 8);
  for (int64_t r = 0; r < o->m; r++) {
    const int64_t s = a.rp[r], e = a.rp[r + 1];
    for (int64_t p = s; p < e; p++) {
      if (o->dups && p > s && t_next() % 8 == 0)
        a.ci[p] = a.ci[s + (int64_t)(t_next() % (uint64_t)(p - s))];
      else
        a.ci[p] = (int64_t)(t_next() % (uint64_t)o->k);
      double x = t_uniform(-1, 1);
      if (fabs(x) < 1e-3) x = 0.5;
      a.v[p] = t_round(dt, x);
    }
    if (!o->unsorted) { /* insertion sort: rows are short, the long one is tested unsorted */
      for (int64_t p = s + 1; p < e; p++)
        for (int64_t q = p; q > s && a.ci[q - 1] > a.ci[q]; q--) {
          int64_t c = a.ci[q];
          a.ci[q] = a.ci[q - 1];
          a.ci[q - 1] = c;
          double v = a.v[q];
          a.v[q] = a.v[q - 1];
          a.v[q - 1] = v;
        }
    }
  }
  return a;
}

static t_hcsr from_mtx(const char *name, gko_dtype_t dt) {
  char path[1024], err[512];
  cr_assert_eq(mtx_find(name, path, sizeof path), 0, "%s not found (set GKO_DATA_DIR)", name);
  mtx_csr m;
  cr_assert_eq(mtx_read(path, MTX_SUM_DUPLICATES, &m, err, sizeof err), 0, "%s", err);
  t_hcsr a = {m.m, m.k, m.nnz, m.row_ptr, m.col_ind, m.values};
  for (int64_t p = 0; p < a.nnz; p++) a.v[p] = t_round(dt, a.v[p] * t_uniform(0.5, 1.5));
  return a;
}

/* ---- device matrices ------------------------------------------------------------ */

/* Exact-size device arrays (none for an empty one), values in dt. */
static t_dcsr upload(const t_hcsr *a, gko_index_t it, gko_dtype_t dt) {
  t_dcsr d = {NULL, NULL, NULL, NULL};
  const size_t is = it == GKO_INDEX_INT64 ? 8 : 4, es = gko_dtype_size(dt);
  if (a->m) d.rp = t_dalloc((size_t)(a->m + 1) * is);
  if (a->nnz) {
    d.ci = t_dalloc((size_t)a->nnz * is);
    d.va = t_dalloc((size_t)a->nnz * es);
  }
  void *hr = t_index_array(it, a->rp, a->m + 1, a->m + 1),
       *hc = t_index_array(it, a->ci, a->nnz, a->nnz), *hv = malloc((size_t)a->nnz * es + 8);
  for (int64_t i = 0; i < a->nnz; i++) t_hv_set(dt, hv, i, a->v[i]);
  if (a->m) t_h2d(d.rp, hr, (size_t)(a->m + 1) * is);
  if (a->nnz) {
    t_h2d(d.ci, hc, (size_t)a->nnz * is);
    t_h2d(d.va, hv, (size_t)a->nnz * es);
  }
  free(hr);
  free(hc);
  free(hv);
  T_OK(gko_csr_create(&d.csr, a->m, a->k, a->nnz, d.rp, d.ci, d.va, it, dt));
  return d;
}

/* ---- one checked product ------------------------------------------------------------ */

typedef struct {
  gko_dtype_t dt;
  gko_index_t it;
  gko_layout_t layout;
  int64_t n, ldb, ldc; /* ld 0: tight */
  float alpha, beta;
  gko_spmm_kernel_t kernel;
  int b_off, c_off; /* element offsets of B and C in their allocations */
  int graph;        /* run through a captured CUDA graph */
} scase;

static const char *kernel_name(gko_spmm_kernel_t k) {
  static const char *n[] = {"AUTO", "ROW_SPLIT", "MERGE", "SCALE", "NONE"};
  return (int)k >= 0 && (int)k < 5 ? n[k] : "?";
}

/* element (i, j) of a rows x cols matrix with leading dimension ld */
static int64_t at(gko_layout_t L, int64_t i, int64_t j, int64_t ld) {
  return L == GKO_LAYOUT_ROW_MAJOR ? i * ld + j : i + j * ld;
}

static int64_t extent(gko_layout_t L, int64_t rows, int64_t cols, int64_t ld) {
  if (rows == 0 || cols == 0) return 0;
  return L == GKO_LAYOUT_ROW_MAJOR ? (rows - 1) * ld + cols : (cols - 1) * ld + rows;
}

static int is_inside(gko_layout_t L, int64_t idx, int64_t rows, int64_t cols, int64_t ld) {
  const int64_t outer = idx / ld, inner = idx % ld;
  return L == GKO_LAYOUT_ROW_MAJOR ? outer < rows && inner < cols : outer < cols && inner < rows;
}

typedef struct {
  int64_t bad;
  double frob;
  gko_spmm_kernel_t kernel;
  void *out; /* C as computed (host bytes of the whole allocation), if kept */
  size_t out_bytes;
} result;

/* Runs one product on host matrix A and checks every byte of C. */
static result run_case(gko_handle_t h, const t_hcsr *A, const scase *c, int keep_out) {
  result res = {0, 0.0, GKO_SPMM_KERNEL_AUTO, NULL, 0};
  const gko_dtype_t dt = c->dt;
  const size_t es = gko_dtype_size(dt);
  const gko_layout_t L = c->layout;
  const int64_t m = A->m, k = A->k, n = c->n;
  const int row = L == GKO_LAYOUT_ROW_MAJOR;
  int64_t ldb = c->ldb ? c->ldb : (row ? n : k), ldc = c->ldc ? c->ldc : (row ? n : m);
  if (ldb < 1) ldb = 1;
  if (ldc < 1) ldc = 1;
  const int64_t be = extent(L, k, n, ldb), ce = extent(L, m, n, ldc);
  /* host B: random inside, NaN padding */
  void *hb = malloc((size_t)(be + c->b_off) * es + 16), *hc = malloc((size_t)(ce + c->c_off) * es + 16);
  memset(hb, T_POISON_BYTE, (size_t)(be + c->b_off) * es + 16);
  memset(hc, T_POISON_BYTE, (size_t)(ce + c->c_off) * es + 16);
  double *bref = malloc(sizeof(double) * (size_t)(k * n + 1));
  double *cref = malloc(sizeof(double) * (size_t)(m * n + 1));
  for (int64_t i = 0; i < k; i++)
    for (int64_t j = 0; j < n; j++) {
      double x = t_round(dt, t_uniform(-2, 2));
      bref[i * n + j] = x;
      t_hv_set(dt, hb, c->b_off + at(L, i, j, ldb), x);
    }
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) {
      double x = t_round(dt, t_uniform(-2, 2));
      cref[i * n + j] = c->beta != 0.0f ? x : NAN;
      if (c->beta != 0.0f) t_hv_set(dt, hc, c->c_off + at(L, i, j, ldc), x);
    }
  const size_t bbytes = (size_t)(be + c->b_off) * es, cbytes = (size_t)(ce + c->c_off) * es;
  /* exact-size allocations: a read past the matrix is a sanitizer error */
  char *db = bbytes ? t_dalloc(bbytes) : NULL, *dc = cbytes ? t_dalloc(cbytes) : NULL;
  if (bbytes) t_h2d(db, hb, bbytes);
  if (cbytes) t_h2d(dc, hc, cbytes);
  t_dcsr d = upload(A, c->it, dt);
  gko_spmm_plan_t plan = NULL;
  T_OK(gko_spmm_plan_create(h, d.csr, n, L, ldb, ldc, c->kernel, &plan, NULL));
  T_OK(gko_spmm_plan_kernel(plan, &res.kernel));
  size_t ws = 0;
  T_OK(gko_spmm_workspace_size(plan, &ws));
  char *dws = ws ? t_dalloc(ws + 8) : NULL;
  void *B = db ? db + c->b_off * es : NULL, *C = dc ? dc + c->c_off * es : NULL;
  if (!c->graph) {
    T_OK(gko_spmm_execute(plan, c->alpha, B, c->beta, C, dws ? dws + 8 : NULL, ws, NULL));
    T_CUDA(cudaDeviceSynchronize());
  } else {
    cudaStream_t s;
    cudaGraph_t g;
    cudaGraphExec_t ge;
    T_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    T_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    gko_status_t st = gko_spmm_execute(plan, c->alpha, B, c->beta, C, dws ? dws + 8 : NULL, ws, s);
    T_CUDA(cudaStreamEndCapture(s, &g));
    cr_assert_eq(st, GKO_STATUS_SUCCESS, "captured execute: %s", gko_last_error_detail());
    T_CUDA(cudaGraphInstantiate(&ge, g, 0));
    T_CUDA(cudaGraphLaunch(ge, s));
    T_CUDA(cudaStreamSynchronize(s));
    cudaGraphExecDestroy(ge);
    cudaGraphDestroy(g);
    cudaStreamDestroy(s);
  }
  void *out = malloc(cbytes + 16);
  if (cbytes) t_d2h(out, dc, cbytes);
  /* reference and check */
  const double u = t_unit(dt);
  const double tiny = dt == GKO_DTYPE_F16 ? ldexp(1, -24) : 1e-37;
  double num = 0, den = 0;
  double *acc = malloc(sizeof(double) * (size_t)(n + 1)), *mag = malloc(sizeof(double) * (size_t)(n + 1));
  for (int64_t i = 0; i < m; i++) {
    for (int64_t j = 0; j < n; j++) acc[j] = mag[j] = 0;
    const int64_t len = A->rp[i + 1] - A->rp[i];
    for (int64_t p = A->rp[i]; p < A->rp[i + 1]; p++)
      for (int64_t j = 0; j < n; j++) {
        const double t = A->v[p] * bref[A->ci[p] * n + j];
        acc[j] += t;
        mag[j] += fabs(t);
      }
    for (int64_t j = 0; j < n; j++) {
      double ref = c->alpha * acc[j], s = fabs(c->alpha) * mag[j];
      if (c->beta != 0.0f) {
        ref += c->beta * cref[i * n + j];
        s += fabs(c->beta * cref[i * n + j]);
      }
      const double got = t_hv_get(dt, out, c->c_off + at(L, i, j, ldc));
      const double err = fabs(got - ref);
      num += err * err;
      den += ref * ref;
      const double bound = 2 * u * fabs(ref) + 2.0 * (double)(len + 2) * ldexp(1, -24) * s + tiny;
      if (!(err <= bound)) {
        if (res.bad++ < 5)
          cr_log_error("%s %s %s n=%lld alpha=%g beta=%g ldb=%lld ldc=%lld: C[%lld][%lld] = "
                       "%.9g, want %.9g (bound %.3g, row length %lld)",
                       kernel_name(res.kernel), t_dtype_name(dt), c->it ? "int64" : "int32",
                       (long long)n, c->alpha, c->beta, (long long)ldb, (long long)ldc,
                       (long long)i, (long long)j, got, ref, bound, (long long)len);
      }
    }
  }
  res.frob = den > 0 ? sqrt(num / den) : sqrt(num);
  /* every byte outside the matrix untouched */
  const unsigned char *ob = out, *ib = hc;
  int64_t pad_bad = 0;
  for (size_t b = 0; b < cbytes; b++) {
    const int64_t idx = (int64_t)(b / es) - c->c_off;
    if (idx >= 0 && is_inside(L, idx, m, n, ldc)) continue;
    if (ob[b] != ib[b]) pad_bad++;
  }
  if (pad_bad) cr_log_error("%lld bytes outside the matrix were written", (long long)pad_bad);
  res.bad += pad_bad;
  if (keep_out) {
    res.out = out;
    res.out_bytes = cbytes;
  } else {
    free(out);
  }
  free(acc);
  free(mag);
  free(hb);
  free(hc);
  free(bref);
  free(cref);
  gko_spmm_plan_destroy(plan);
  t_dcsr_free(&d);
  cudaFree(db);
  cudaFree(dc);
  if (dws) cudaFree(dws);
  return res;
}

static const gko_dtype_t kDt[3] = {GKO_DTYPE_F32, GKO_DTYPE_F16, GKO_DTYPE_BF16};
static const gko_index_t kIdx[2] = {GKO_INDEX_INT32, GKO_INDEX_INT64};
static const gko_spmm_kernel_t kForced[2] = {GKO_SPMM_KERNEL_ROW_SPLIT, GKO_SPMM_KERNEL_MERGE};

#define EXPECT_OK(res, seed, fmt, ...)                                                 \
  cr_expect_eq((res).bad, 0, "seed %llu: %lld bad elements: " fmt,                     \
               (unsigned long long)(seed), (long long)(res).bad, __VA_ARGS__)

/* ---- host-only argument checks ---------------------------------------------------- */

Test(spmm_args, plan_create_rejects_with_a_reason) {
  int32_t rp[3] = {0, 1, 2}, ci[2] = {0, 1};
  float v[2] = {1, 2};
  gko_csr_t a = NULL;
  T_OK(gko_csr_create(&a, 2, 3, 2, rp, ci, v, GKO_INDEX_INT32, GKO_DTYPE_F32));
  gko_handle_t fake = (gko_handle_t)(uintptr_t)0x10;
  gko_spmm_plan_t p = (gko_spmm_plan_t)(uintptr_t)0x99;
  const gko_spmm_plan_t keep = p;
  const gko_spmm_kernel_t A = GKO_SPMM_KERNEL_AUTO;
#define BAD(call, word)                                                          \
  do {                                                                           \
    T_FAILS(GKO_STATUS_INVALID_VALUE, call);                                     \
    cr_expect(strstr(gko_last_error_detail(), word) != NULL, "%s: '%s'", #call, \
              gko_last_error_detail());                                          \
    cr_expect_eq(p, keep, "%s wrote *plan", #call);                              \
  } while (0)
  BAD(gko_spmm_plan_create(NULL, a, 4, GKO_LAYOUT_ROW_MAJOR, 4, 4, A, &p, NULL), "handle");
  BAD(gko_spmm_plan_create(fake, NULL, 4, GKO_LAYOUT_ROW_MAJOR, 4, 4, A, &p, NULL), "csr");
  BAD(gko_spmm_plan_create(fake, a, 4, GKO_LAYOUT_ROW_MAJOR, 4, 4, A, NULL, NULL), "plan");
  BAD(gko_spmm_plan_create(fake, a, -1, GKO_LAYOUT_ROW_MAJOR, 4, 4, A, &p, NULL), "n =");
  BAD(gko_spmm_plan_create(fake, a, 4, (gko_layout_t)2, 4, 4, A, &p, NULL), "layout");
  BAD(gko_spmm_plan_create(fake, a, 4, GKO_LAYOUT_ROW_MAJOR, 4, 4, (gko_spmm_kernel_t)3, &p,
                           NULL),
      "kernel");
  BAD(gko_spmm_plan_create(fake, a, 4, GKO_LAYOUT_ROW_MAJOR, 4, 4, (gko_spmm_kernel_t)-1, &p,
                           NULL),
      "kernel");
  BAD(gko_spmm_plan_create(fake, a, 4, GKO_LAYOUT_ROW_MAJOR, 3, 4, A, &p, NULL), "ldb");
  BAD(gko_spmm_plan_create(fake, a, 4, GKO_LAYOUT_ROW_MAJOR, 4, 3, A, &p, NULL), "ldc");
  BAD(gko_spmm_plan_create(fake, a, 0, GKO_LAYOUT_ROW_MAJOR, 0, 1, A, &p, NULL), "ldb");
  BAD(gko_spmm_plan_create(fake, a, 4, GKO_LAYOUT_COL_MAJOR, 2, 2, A, &p, NULL), "ldb");
  BAD(gko_spmm_plan_create(fake, a, 4, GKO_LAYOUT_COL_MAJOR, 3, 1, A, &p, NULL), "ldc");
  BAD(gko_spmm_plan_create(fake, a, INT64_MAX / 2, GKO_LAYOUT_ROW_MAJOR, INT64_MAX / 2,
                           INT64_MAX / 2, A, &p, NULL),
      "overflow");
#undef BAD
  gko_csr_destroy(a);
}

Test(spmm_args, plan_queries_and_execute_reject_null) {
  size_t bytes = 7;
  gko_spmm_kernel_t k = (gko_spmm_kernel_t)7;
  char buf[8] = "xxxxxxx";
  float c[4] = {1, 2, 3, 4};
  T_FAILS(GKO_STATUS_INVALID_VALUE, gko_spmm_workspace_size(NULL, &bytes));
  T_FAILS(GKO_STATUS_INVALID_VALUE, gko_spmm_plan_kernel(NULL, &k));
  T_FAILS(GKO_STATUS_INVALID_VALUE, gko_spmm_plan_describe(NULL, buf, sizeof buf, &bytes));
  T_FAILS(GKO_STATUS_INVALID_VALUE, gko_spmm_execute(NULL, 1.0f, c, 0.0f, c, NULL, 0, NULL));
  cr_expect(strstr(gko_last_error_detail(), "plan") != NULL);
  cr_expect_eq(bytes, 7);
  cr_expect_eq(k, (gko_spmm_kernel_t)7);
  cr_expect_str_eq(buf, "xxxxxxx");
  for (int i = 0; i < 4; i++) cr_expect_eq(c[i], (float)(i + 1));
  T_OK(gko_spmm_plan_destroy(NULL));
}

/* ---- host-only: the plan model the kernels rely on ------------------------------------
 * These run everywhere (no GPU): they check, with the very functions
 * src/spmm.c and kernels/spmm.cu use (kernels/spmm_model.h), the index arithmetic
 * that the first H200 run found wrong -- launch blocks of whole warps, lane
 * maps that write every element of C once, and a merge-path partition
 * whose partial sums are all written before the fix-up reads them. */

/* Block sizes the occupancy API can return (multiples of 32 up to 256 here,
 * 1024 in general), shrunk for small grids: always whole warps. */
Test(spmm_model, launch_blocks_are_whole_warps) {
  const int64_t warps[] = {0, 1, 2, 3, 5, 9, 31, 33, 103, 257, 263, 264, 265, 513, 1000,
                           9859, 100000, (int64_t)1 << 40};
  const int64_t sms[] = {0, 1, 2, 16, 132};
  for (int occ = 32; occ <= 1024; occ += 32)
    for (size_t w = 0; w < sizeof warps / sizeof warps[0]; w++)
      for (size_t i = 0; i < sizeof sms / sizeof sms[0]; i++) {
        const int b = gk_spmm_fit_block(occ, warps[w], sms[i]);
        cr_assert(b >= 32 && b <= occ && b % 32 == 0,
                  "occupancy block %d, %lld warps, %lld SMs: block %d", occ, (long long)warps[w],
                  (long long)sms[i], b);
        const int64_t s = sms[i] < 1 ? 1 : sms[i];
        if (gk_ceil_div64(warps[w], occ / 32) >= 2 * s)
          cr_assert_eq(b, occ, "a large grid keeps the occupancy block");
      }
  /* what the first H200 run got (160 -> 80, 224 -> 56 threads) */
  cr_expect_eq(gk_spmm_fit_block(160, 513, 132) % 32, 0);
  cr_expect_eq(gk_spmm_fit_block(224, 9, 132) % 32, 0);
}

/* Every shape: lanes add up to a warp, the tiles cover n exactly, the
 * entry-part shuffle sources stay inside the group. */
Test(spmm_model, shapes_fill_the_warp_and_cover_n) {
  const double means[] = {0.0, 0.3, 1.0, 4.5, 8.0, 15.9, 16.0, 33.0, 1000.0, 1e7};
  const int vws[] = {1, 4, 8};
  for (int kk = 0; kk < 2; kk++)
    for (int v = 0; v < 3; v++)
      for (int64_t n = 1; n <= 2100; n += n < 300 ? 1 : 37)
        for (size_t mi = 0; mi < sizeof means / sizeof means[0]; mi++) {
          const int kern = kk ? GKO_SPMM_KERNEL_MERGE : GKO_SPMM_KERNEL_ROW_SPLIT;
          gk_spmm_shape s;
          memset(&s, 0, sizeof s);
          gk_spmm_shape_for(kern, n, vws[v], means[mi], &s);
          cr_assert(s.lg_gc >= 0 && s.lg_gk >= 0 && s.lg_r >= 0 &&
                        s.lg_gc + s.lg_gk + s.lg_r == 5,
                    "n %lld vw %d mean %g: 2^%d x 2^%d x 2^%d lanes", (long long)n, vws[v],
                    means[mi], s.lg_gc, s.lg_gk, s.lg_r);
          if (kk) cr_assert_eq(s.lg_r, 0);
          /* rowsplit_kernel splits a warp's lanes as lane >> lg_gc (row
           * group) and lane & (gc - 1) (column part): no entry parts */
          if (!kk) cr_assert_eq(s.lg_gk, 0, "n %lld vw %d: ROW_SPLIT with 2^%d entry parts",
                                (long long)n, vws[v], s.lg_gk);
          cr_assert(s.nv == 1 || s.nv == 2);
          cr_assert_eq(s.vec, vws[v] > 1);
          const int64_t span = ((int64_t)1 << s.lg_gc) * s.nv * vws[v];
          cr_assert(s.ntiles >= 1 && (s.ntiles - 1) * span < n && n <= s.ntiles * span,
                    "n %lld vw %d: %lld tiles of %lld", (long long)n, vws[v],
                    (long long)s.ntiles, (long long)span);
          /* accumulate(): a chunk holds per_chunk = 2^lg_gc entries per part;
           * iteration t < per_chunk of part kp reads lane (t << lg_gk) + kp */
          const int G = 1 << (s.lg_gc + s.lg_gk);
          const int per_chunk = G >> s.lg_gk;
          cr_assert(((per_chunk - 1) << s.lg_gk) + (1 << s.lg_gk) - 1 < G);
        }
}

/* ROW_SPLIT's long-row segments: each long row covered exactly once, in
 * order, by segments no longer than long_len (multiples of 4 but the
 * last), the runs naming them; short rows untouched. */
Test(spmm_model, segments_cover_long_rows_in_order) {
  t_seed();
  for (int rep = 0; rep < 200; rep++) {
    const int64_t m = 1 + (int64_t)(t_next() % 300);
    const int64_t L = 4 * (1 + (int64_t)(t_next() % 25)); /* multiples of 4, as planned */
    int64_t *rp = calloc((size_t)m + 1, sizeof *rp);
    int32_t *rp32 = calloc((size_t)m + 1, sizeof *rp32);
    for (int64_t r = 0; r < m; r++) {
      const uint64_t kind = t_next() % 10;
      const int64_t len = kind == 0 ? (int64_t)(t_next() % 5000) : (int64_t)(t_next() % (L + 2));
      rp[r + 1] = rp[r] + len;
      rp32[r + 1] = (int32_t)rp[r + 1];
    }
    int64_t nr = 0, nr32 = 0;
    const int64_t ns = gk_spmm_segments(rp, 1, m, rp[m], L, NULL, NULL, &nr);
    cr_assert_eq(gk_spmm_segments(rp32, 0, m, rp[m], L, NULL, NULL, &nr32), ns);
    cr_assert_eq(nr32, nr);
    int64_t *seg = malloc(sizeof(int64_t) * (size_t)(2 * ns + 1));
    int64_t *runs = malloc(sizeof(int64_t) * (size_t)(3 * nr + 1));
    int64_t nr2 = 0;
    cr_assert_eq(gk_spmm_segments(rp, 1, m, rp[m], L, seg, runs, &nr2), ns);
    cr_assert_eq(nr2, nr);
    int64_t ri = 0, next_seg = 0;
    for (int64_t r = 0; r < m; r++) {
      const int64_t len = rp[r + 1] - rp[r];
      if (len <= L) continue;
      cr_assert(ri < nr, "rep %d: row %lld (len %lld > %lld) has no run", rep, (long long)r,
                (long long)len, (long long)L);
      cr_assert_eq(runs[3 * ri], r);
      cr_assert_eq(runs[3 * ri + 1], next_seg);
      const int64_t cnt = runs[3 * ri + 2];
      int64_t at = rp[r];
      for (int64_t x = 0; x < cnt; x++) {
        const int64_t a = seg[2 * (next_seg + x)], e = seg[2 * (next_seg + x) + 1];
        cr_assert_eq(a, at, "rep %d row %lld segment %lld starts at %lld, want %lld", rep,
                     (long long)r, (long long)x, (long long)a, (long long)at);
        cr_assert(e > a && e - a <= L, "segment length %lld, long_len %lld", (long long)(e - a),
                  (long long)L);
        if (x + 1 < cnt) cr_assert_eq((e - a) % 4, 0);
        at = e;
      }
      cr_assert_eq(at, rp[r + 1], "row %lld not covered", (long long)r);
      next_seg += cnt;
      ri++;
    }
    cr_assert_eq(ri, nr);
    cr_assert_eq(next_seg, ns);
    /* a long row reaching past nnz (a malformed row_ptr) is refused */
    if (nr > 0) {
      const int64_t r0 = runs[0]; /* the first long row ends past this nnz */
      int64_t bad_nr = 7;
      cr_assert_eq(gk_spmm_segments(rp, 1, m, rp[r0 + 1] - 1, L, NULL, NULL, &bad_nr), -1);
      cr_assert_eq(bad_nr, 0);
    }
    free(rp), free(rp32), free(seg), free(runs);
  }
}

/* ROW_SPLIT's lane map, thread by thread as the GPU runs it (block from
 * gk_spmm_fit_block, warp = global thread / 32, lane = threadIdx % 32):
 * every element of C written exactly once, by the group of its row, and
 * nothing past n.  With the old block halving (160 -> 80) this fails. */
/* ROW_SPLIT's block roles (gk_spmm_block_role, as rowsplit_kernel calls
 * it) with the kernel's strides: every row and every long-row segment is
 * taken by exactly one group, segments first or last, with and without
 * segment blocks. */
Test(spmm_model, rowsplit_blocks_take_every_row_and_segment_once) {
  const int64_t ms[] = {1, 5, 77, 1000};
  const int64_t nsegs[] = {0, 1, 7, 300};
  const int wpbs[] = {1, 2, 8};
  const int lgrs[] = {0, 2, 5};
  for (size_t mi = 0; mi < 4; mi++)
    for (size_t si = 0; si < 4; si++)
      for (int wi = 0; wi < 3; wi++)
        for (int ri = 0; ri < 3; ri++)
          for (int persist = 0; persist < 2; persist++)
            for (int first = 0; first < 2; first++) {
              const int64_t m = ms[mi], nseg = nsegs[si];
              const int wpb = wpbs[wi], R = 1 << lgrs[ri];
              int64_t row_blocks = gk_ceil_div64(gk_ceil_div64(m, R), wpb);
              if (persist && row_blocks > 3) row_blocks = 3; /* fewer blocks than rows */
              const int64_t seg_blocks = gk_ceil_div64(gk_ceil_div64(nseg, R), wpb);
              const int64_t grid = row_blocks + seg_blocks;
              unsigned char *rows = calloc((size_t)m, 1), *segs = calloc((size_t)nseg + 1, 1);
              int64_t odd = 0;
              for (int64_t b = 0; b < grid; b++) {
                const int64_t role = gk_spmm_block_role(b, grid, row_blocks, first);
                if (role >= row_blocks || -1 - role >= seg_blocks) odd++;
                for (int wib = 0; wib < wpb; wib++)
                  for (int g = 0; g < R; g++) {
                    if (role >= 0) {
                      const int64_t warp = role * wpb + wib, nwarps = row_blocks * wpb;
                      for (int64_t r = warp * R + g; r < m; r += nwarps * R) rows[r]++;
                    } else {
                      const int64_t warp = (-1 - role) * wpb + wib;
                      const int64_t nwarps = (grid - row_blocks) * wpb;
                      for (int64_t s = warp * R + g; s - g < nseg; s += nwarps * R)
                        if (s < nseg) segs[s]++;
                    }
                  }
              }
              int64_t bad = odd;
              for (int64_t i = 0; i < m; i++) bad += rows[i] != 1;
              for (int64_t i = 0; i < nseg; i++) bad += segs[i] != 1;
              free(rows);
              free(segs);
              cr_assert_eq(bad, 0, "m %lld nseg %lld wpb %d R %d persist %d first %d: %lld rows, "
                           "segments or roles wrong", (long long)m, (long long)nseg, wpb, R,
                           persist, first, (long long)bad);
            }
}

Test(spmm_model, rowsplit_lane_map_writes_each_element_once) {
  const int64_t ns[] = {1, 2, 3, 4, 5, 8, 13, 14, 31, 32, 33, 64, 100, 127, 128, 129, 255, 256,
                        257, 300, 520};
  const int vws[] = {1, 4, 8};
  const int occs[] = {32, 96, 160, 224, 256};
  const double means[] = {1.0, 4.5, 40.0};
  const int64_t m = 77;
  for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++)
    for (int v = 0; v < 3; v++)
      for (size_t oi = 0; oi < sizeof occs / sizeof occs[0]; oi++)
        for (size_t mi = 0; mi < 3; mi++) {
          const int64_t n = ns[ni];
          gk_spmm_shape s;
          gk_spmm_shape_for(GKO_SPMM_KERNEL_ROW_SPLIT, n, vws[v], means[mi], &s);
          const int R = 1 << s.lg_r, lg_g = s.lg_gc + s.lg_gk, gc = 1 << s.lg_gc;
          const int64_t warps = gk_ceil_div64(m, R);
          const int block = gk_spmm_fit_block(occs[oi], warps, 132);
          const int64_t grid = gk_ceil_div64(warps, block / 32);
          unsigned char *hits = calloc((size_t)(m * n), 1);
          int64_t outside = 0;
          const int64_t nwarps = grid * block / 32;
          for (int64_t bx = 0; bx < grid; bx++)
            for (int tx = 0; tx < block; tx++) {
              const int lane = tx & 31;
              const int64_t warp = (bx * block + tx) >> 5;
              const int g = lane >> lg_g, gl = lane & ((1 << lg_g) - 1);
              const int cp = gl & (gc - 1), kp = gl >> s.lg_gc;
              for (int64_t r0 = warp * R; r0 < m; r0 += nwarps * R) {
                const int64_t r = r0 + g;
                if (r >= m || kp != 0) continue;
                for (int64_t t = 0; t < s.ntiles; t++)
                  for (int q = 0; q < s.nv; q++) {
                    const int64_t c0 = gk_spmm_lane_col(t, q, gc, cp, s.nv, vws[v]);
                    for (int e = 0; e < vws[v]; e++) {
                      if (c0 + e >= n) break; /* cnt */
                      if (c0 + e < 0) outside++;
                      else hits[r * n + c0 + e]++;
                    }
                  }
              }
            }
          int64_t bad = outside;
          for (int64_t i = 0; i < m * n; i++) bad += hits[i] != 1;
          free(hits);
          cr_assert_eq(bad, 0, "n %lld vw %d occupancy block %d (block %d) mean %g: %lld elements "
                       "not written exactly once", (long long)n, vws[v], occs[oi], block,
                       means[mi], (long long)bad);
        }
}

/* Host CSR structures for the merge-path model: lengths by a small
 * generator (empty rows, one long row, leading/trailing empties). */
static int64_t *model_rowptr(int64_t m, int kind, int64_t *nnz) {
  int64_t *rp = calloc((size_t)m + 1, sizeof *rp);
  const int64_t big = (int64_t)(t_next() % 500);
  for (int64_t r = 0; r < m; r++) {
    int64_t l;
    switch (kind) {
    case 0: l = (int64_t)(t_next() % 9); break;                        /* short, some empty */
    case 1: l = r == m / 3 ? 300 + big : (int64_t)(t_next() % 3); break; /* one long row */
    case 2: l = r == m - 1 ? 1 : 0; break;                             /* all empty but last */
    case 3: l = (r < 5 || r >= m - 5) ? 0 : 1 + (int64_t)(t_next() % 40); break;
    default: l = t_next() % 4 == 0 ? (int64_t)(t_next() % 200) : 0; break; /* skewed */
    }
    rp[r + 1] = rp[r] + l;
  }
  *nnz = rp[m];
  return rp;
}

/* MERGE, unit by unit as merge_kernel walks it, then fixup_kernel: each
 * entry summed exactly once, each row finished exactly once (directly or by
 * one fix-up), every partial slot the fix-up reads written by that row's
 * units and by nobody else, and every slot inside the workspace. */
Test(spmm_model, merge_partition_partials_and_fixups_agree) {
  t_seed();
  const int64_t ms[] = {1, 2, 3, 7, 40, 333, 2000};
  const int64_t pers[] = {1, 2, 3, 5, 8, 32, 97, 1000};
  for (size_t mi = 0; mi < sizeof ms / sizeof ms[0]; mi++)
    for (int kind = 0; kind < 5; kind++)
      for (size_t pi = 0; pi < sizeof pers / sizeof pers[0]; pi++)
        for (int idx64 = 0; idx64 < 2; idx64++) {
          const int64_t m = ms[mi], per = pers[pi];
          int64_t nnz = 0;
          int64_t *rp = model_rowptr(m, kind, &nnz);
          if (nnz == 0) { /* the plan uses SCALE then */
            free(rp);
            continue;
          }
          int32_t *rp32 = malloc(sizeof(int32_t) * (size_t)(m + 1));
          for (int64_t i = 0; i <= m; i++) rp32[i] = (int32_t)rp[i];
          const void *rpv = idx64 ? (const void *)rp : (const void *)rp32;
          const int64_t items = m + nnz, U = gk_ceil_div64(items, per);
          int64_t *part = malloc(sizeof(int64_t) * 2 * (size_t)(U + 1));
          int64_t *rp_at = malloc(sizeof(int64_t) * (size_t)(U + 1));
          int64_t *runs = malloc(sizeof(int64_t) * 3 * (size_t)U + 8);
          for (int64_t u = 0; u <= U; u++) { /* partition_kernel */
            int64_t d = u * per;
            if (d > items || u == U) d = items;
            const int64_t i = gk_merge_search(rpv, idx64, m, nnz, d);
            part[2 * u] = i;
            part[2 * u + 1] = d - i;
            rp_at[u] = rp[i];
            cr_assert(i >= 0 && i <= m && rp[i] <= d - i && (i == m || d - i <= rp[i + 1]),
                      "m %lld per %lld unit %lld: start (%lld, %lld) off the path", (long long)m,
                      (long long)per, (long long)u, (long long)i, (long long)(d - i));
          }
          cr_assert(part[0] == 0 && part[1] == 0 && part[2 * U] == m && part[2 * U + 1] == nnz);
          const int64_t nruns = gk_spmm_split_rows(part, rp_at, U, m, runs);
          cr_assert(nruns >= 0 && nruns <= U, "m %lld kind %d per %lld: nruns %lld", (long long)m,
                    kind, (long long)per, (long long)nruns);
          /* merge_kernel: who writes what */
          int64_t *covered = calloc((size_t)m, sizeof(int64_t)); /* entries summed per row */
          int *direct = calloc((size_t)m, sizeof(int));
          int64_t *slot_row = malloc(sizeof(int64_t) * 2 * (size_t)U);
          int64_t *next_entry = malloc(sizeof(int64_t) * (size_t)m); /* contiguity */
          for (int64_t r = 0; r < m; r++) next_entry[r] = rp[r];
          for (int64_t i = 0; i < 2 * U; i++) slot_row[i] = -1;
          int64_t bad = 0;
          for (int64_t u = 0; u < U; u++) {
            const int64_t i0 = part[2 * u], j0 = part[2 * u + 1], i1 = part[2 * u + 2],
                          j1 = part[2 * u + 3];
            const int64_t rlast = i1 < m ? i1 : i1 - 1;
            for (int64_t r = i0; r <= rlast; r++) {
              int64_t a, b;
              const int k = gk_merge_row(r, rp[r], rp[r + 1], j0, i1, j1, &a, &b);
              if (k == GK_MERGE_SKIP) break;
              if (a < rp[r] || b > rp[r + 1] || a > b || a != next_entry[r]) bad++;
              next_entry[r] = b;
              covered[r] += b - a;
              if (k == GK_MERGE_DIRECT) {
                direct[r]++;
              } else {
                const int64_t slot = 2 * u + (k == GK_MERGE_TAIL ? 1 : 0);
                if (slot_row[slot] != -1) bad++; /* two rows in one slot */
                slot_row[slot] = r;
              }
            }
          }
          /* fixup_kernel */
          int *fixed = calloc((size_t)m, sizeof(int));
          for (int64_t i = 0; i < nruns; i++) {
            const int64_t row = runs[3 * i], u0 = runs[3 * i + 1], u1 = runs[3 * i + 2];
            if (row < 0 || row >= m || u0 < 0 || u1 <= u0 || u1 >= U) {
              bad++;
              continue;
            }
            fixed[row]++;
            for (int64_t u = u0; u < u1; u++) bad += slot_row[2 * u + 1] != row;
            bad += slot_row[2 * u1] != row;
          }
          for (int64_t r = 0; r < m; r++) {
            bad += covered[r] != rp[r + 1] - rp[r];
            bad += direct[r] + fixed[r] != 1;
          }
          cr_assert_eq(bad, 0, "m %lld kind %d per %lld idx64 %d: %lld inconsistencies",
                       (long long)m, kind, (long long)per, idx64, (long long)bad);
          free(fixed);
          free(covered);
          free(direct);
          free(slot_row);
          free(next_entry);
          free(part);
          free(rp_at);
          free(runs);
          free(rp32);
          free(rp);
        }
}

/* A malformed row_ptr (decreasing) makes an inconsistent partition, which
 * the plan refuses instead of launching fix-ups for rows nobody began. */
Test(spmm_model, inconsistent_partitions_are_refused) {
  int64_t runs[9];
  /* units 0 and 1 leave tails of row 1; nobody completes it */
  const int64_t part1[] = {0, 0, 1, 1, 1, 2}, rp_at1[] = {0, 0, 0};
  cr_expect_eq(gk_spmm_split_rows(part1, rp_at1, 2, 2, runs), -1);
  /* unit 2 completes row 1, which nobody began (row_ptr[1] = 1 but unit 1
   * ends at entry 2 in row 1) */
  const int64_t part2[] = {0, 0, 0, 2, 1, 2, 2, 3}, rp_at2[] = {0, 0, 1, 3};
  cr_expect_eq(gk_spmm_split_rows(part2, rp_at2, 3, 2, runs), -1);
  /* and a consistent one: row 0 = 3 entries split over units 0 and 1 */
  const int64_t part3[] = {0, 0, 0, 2, 1, 3, 2, 3}, rp_at3[] = {0, 0, 3, 3};
  cr_expect_eq(gk_spmm_split_rows(part3, rp_at3, 3, 2, runs), 1);
  cr_expect(runs[0] == 0 && runs[1] == 0 && runs[2] == 1);
}

/* ---- GPU: correctness ---------------------------------------------------------------- */

/* Every dtype, index type and forced kernel, n in {1, 3, 32, 33, 128, 257},
 * on a matrix with empty rows, one row holding 30 % of the entries,
 * unsorted columns and duplicates. */
Test(spmm, random_every_dtype_index_kernel_and_width) {
  uint64_t seed;
  gko_handle_t h = t_gpu_setup(&seed);
  const int64_t ns[] = {1, 3, 32, 33, 128, 257};
  for (int d = 0; d < 3; d++) {
    gen_opts o = {700, 450, 6, 0.1, 0.3, 1, 1};
    t_hcsr A = gen(&o, kDt[d]);
    for (int ix = 0; ix < 2; ix++)
      for (int kk = 0; kk < 2; kk++)
        for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++) {
          scase c = {kDt[d], kIdx[ix], GKO_LAYOUT_ROW_MAJOR, ns[ni], 0, 0, 1.0f, 0.0f,
                     kForced[kk], 0, 0, 0};
          result r = run_case(h, &A, &c, 0);
          cr_expect_eq(r.kernel, kForced[kk]);
          EXPECT_OK(r, seed, "%s %s %s n=%lld (frob %.3g)", t_dtype_name(kDt[d]),
                    ix ? "int64" : "int32", kernel_name(kForced[kk]), (long long)ns[ni], r.frob);
        }
    t_hcsr_free(&A);
  }
  gko_destroy(h);
}

Test(spmm, alpha_beta_combinations_and_nan_poison) {
  uint64_t seed;
  gko_handle_t h = t_gpu_setup(&seed);
  const float ab[][2] = {{1, 0}, {-0.5f, 0}, {2, 1}, {1, -3}, {0.25f, 0.5f}, {0, 2}};
  gen_opts o = {513, 300, 9, 0.2, 0.1, 1, 1};
  for (int d = 0; d < 3; d++) {
    t_hcsr A = gen(&o, kDt[d]);
    for (int kk = 0; kk < 2; kk++)
      for (size_t i = 0; i < sizeof ab / sizeof ab[0]; i++)
        for (int64_t n = 31; n <= 64; n += 33) {
          scase c = {kDt[d], GKO_INDEX_INT32, GKO_LAYOUT_ROW_MAJOR, n, 0, 0, ab[i][0], ab[i][1],
                     kForced[kk], 0, 0, 0};
          result r = run_case(h, &A, &c, 0);
          EXPECT_OK(r, seed, "%s %s alpha %g beta %g n %lld", t_dtype_name(kDt[d]),
                    kernel_name(kForced[kk]), ab[i][0], ab[i][1], (long long)n);
        }
    t_hcsr_free(&A);
  }
  gko_destroy(h);
}

/* ldb, ldc > n with NaN padding (never read, never written); leading
 * dimensions that do and do not allow 16-byte vectors. */
Test(spmm, padded_leading_dimensions) {
  uint64_t seed;
  gko_handle_t h = t_gpu_setup(&seed);
  gen_opts o = {300, 200, 7, 0.1, 0.2, 1, 0};
  const int64_t lds[][3] = {{32, 40, 48}, {33, 40, 35}, {128, 136, 129}, {20, 21, 24}, {8, 16, 8}};
  for (int d = 0; d < 3; d++) {
    t_hcsr A = gen(&o, kDt[d]);
    for (int kk = 0; kk < 2; kk++)
      for (size_t i = 0; i < sizeof lds / sizeof lds[0]; i++)
        for (int b = 0; b < 2; b++) {
          scase c = {kDt[d], GKO_INDEX_INT64, GKO_LAYOUT_ROW_MAJOR, lds[i][0], lds[i][1],
                     lds[i][2], 1.5f, b ? 0.75f : 0.0f, kForced[kk], 0, 0, 0};
          result r = run_case(h, &A, &c, 0);
          EXPECT_OK(r, seed, "%s %s n %lld ldb %lld ldc %lld beta %g", t_dtype_name(kDt[d]),
                    kernel_name(kForced[kk]), (long long)lds[i][0], (long long)lds[i][1],
                    (long long)lds[i][2], c.beta);
        }
    t_hcsr_free(&A);
  }
  gko_destroy(h);
}

Test(spmm, column_major) {
  uint64_t seed;
  gko_handle_t h = t_gpu_setup(&seed);
  gen_opts o = {257, 190, 5, 0.1, 0.25, 1, 1};
  for (int d = 0; d < 3; d++) {
    t_hcsr A = gen(&o, kDt[d]);
    for (int kk = 0; kk < 2; kk++)
      for (int64_t n = 1; n <= 40; n += 13) {
        scase c = {kDt[d], GKO_INDEX_INT32, GKO_LAYOUT_COL_MAJOR, n, 200, 260, 1.0f, 0.5f,
                   kForced[kk], 0, 0, 0};
        result r = run_case(h, &A, &c, 0);
        EXPECT_OK(r, seed, "%s %s col-major n %lld", t_dtype_name(kDt[d]),
                  kernel_name(kForced[kk]), (long long)n);
      }
    t_hcsr_free(&A);
  }
  gko_destroy(h);
}

/* B and C one element off 16-byte alignment: the scalar path, same
 * answer. */
Test(spmm, unaligned_pointers) {
  uint64_t seed;
  gko_handle_t h = t_gpu_setup(&seed);
  gen_opts o = {400, 333, 8, 0.05, 0.1, 0, 0};
  for (int d = 0; d < 3; d++) {
    t_hcsr A = gen(&o, kDt[d]);
    for (int kk = 0; kk < 2; kk++)
      for (int off = 0; off < 4; off++) {
        scase c = {kDt[d], GKO_INDEX_INT32, GKO_LAYOUT_ROW_MAJOR, 64, 0, 0, 1.0f, 0.0f,
                   kForced[kk], off & 1, off >> 1, 0};
        result r = run_case(h, &A, &c, 0);
        EXPECT_OK(r, seed, "%s %s b_off %d c_off %d", t_dtype_name(kDt[d]),
                  kernel_name(kForced[kk]), off & 1, off >> 1);
      }
    t_hcsr_free(&A);
  }
  gko_destroy(h);
}

/* Skewed and degenerate structures: one row holding most entries, all rows
 * empty but one, leading/trailing empty rows, a single row, k = 1. */
Test(spmm, skewed_and_degenerate_structures) {
  uint64_t seed;
  gko_handle_t h = t_gpu_setup(&seed);
  const gen_opts opts[] = {
      {3000, 1000, 3, 0.3, 0.6, 1, 1}, /* one row of ~60 % */
      {2000, 500, 1, 0.999, 0.0, 1, 0}, /* nearly all rows empty */
      {1, 5000, 2000, 0.0, 0.0, 1, 1},  /* a single long row */
      {600, 1, 3, 0.2, 0.0, 1, 1},      /* k = 1: every entry a duplicate */
      {64, 64, 40, 0.5, 0.0, 0, 0},
  };
  for (size_t i = 0; i < sizeof opts / sizeof opts[0]; i++) {
    t_hcsr A = gen(&opts[i], GKO_DTYPE_F32);
    for (int kk = 0; kk < 3; kk++)
      for (int64_t n = 1; n <= 129; n += 64) {
        const gko_spmm_kernel_t kern = kk == 2 ? GKO_SPMM_KERNEL_AUTO : kForced[kk];
        scase c = {GKO_DTYPE_F32, GKO_INDEX_INT32, GKO_LAYOUT_ROW_MAJOR, n, 0, 0, 1.0f, -1.0f,
                   kern, 0, 0, 0};
        result r = run_case(h, &A, &c, 0);
        EXPECT_OK(r, seed, "structure %zu %s n %lld", i, kernel_name(r.kernel), (long long)n);
      }
    t_hcsr_free(&A);
  }
  gko_destroy(h);
}

Test(spmm, real_matrices) {
  uint64_t seed;
  gko_handle_t h = t_gpu_setup(&seed);
  const char *files[] = {"cora.mtx", "pubmed.mtx", "p2p-Gnutella31.mtx", "ca-CondMat.mtx",
                         "bcsstk13.mtx", "n1024-l1.mtx"};
  for (size_t f = 0; f < 6; f++)
    for (int d = 0; d < 3; d += 2) {
      t_hcsr A = from_mtx(files[f], kDt[d]);
      for (int kk = 0; kk < 3; kk++)
        for (int64_t n = 32; n <= 128; n += 96) {
          const gko_spmm_kernel_t kern = kk == 2 ? GKO_SPMM_KERNEL_AUTO : kForced[kk];
          scase c = {kDt[d], d ? GKO_INDEX_INT64 : GKO_INDEX_INT32, GKO_LAYOUT_ROW_MAJOR, n,
                     0, 0, 1.0f, 0.0f, kern, 0, 0, 0};
          result r = run_case(h, &A, &c, 0);
          EXPECT_OK(r, seed, "%s %s %s n %lld (frob %.3g)", files[f], t_dtype_name(kDt[d]),
                    kernel_name(r.kernel), (long long)n, r.frob);
        }
      t_hcsr_free(&A);
    }
  gko_destroy(h);
}

/* AUTO at the extremes of the cost model. */
Test(spmm, auto_choice_at_the_extremes) {
  gko_handle_t h = t_gpu_setup(NULL);
  gen_opts uni = {20000, 20000, 8, 0.0, 0.0, 0, 0};
  gen_opts skew = {20000, 20000, 4, 0.0, 0.8, 1, 0};
  for (int i = 0; i < 2; i++) {
    t_hcsr A = gen(i ? &skew : &uni, GKO_DTYPE_F32);
    t_dcsr d = upload(&A, GKO_INDEX_INT32, GKO_DTYPE_F32);
    gko_spmm_plan_t p = NULL;
    T_OK(gko_spmm_plan_create(h, d.csr, 64, GKO_LAYOUT_ROW_MAJOR, 64, 64, GKO_SPMM_KERNEL_AUTO,
                              &p, NULL));
    gko_spmm_kernel_t k;
    T_OK(gko_spmm_plan_kernel(p, &k));
    char why[1024];
    size_t need = 0;
    T_OK(gko_spmm_plan_describe(p, why, sizeof why, &need));
    cr_expect(need > 20 && need <= sizeof why, "describe needs %zu", need);
    cr_expect(strstr(why, kernel_name(k)) == why, "'%s'", why);
    /* ROW_SPLIT always; the skewed graph's long rows run as segments,
     * whose partial sums need workspace */
    cr_expect_eq(k, GKO_SPMM_KERNEL_ROW_SPLIT, "%s", why);
    size_t ws = 0;
    T_OK(gko_spmm_workspace_size(p, &ws));
    if (i == 0) cr_expect_eq(ws, 0, "%s", why);
    else cr_expect(ws > 0 && strstr(why, "segments") != NULL, "%s", why);
    /* describe truncates and still terminates */
    char small[8];
    T_OK(gko_spmm_plan_describe(p, small, sizeof small, NULL));
    cr_expect_eq(strlen(small), 7);
    gko_spmm_plan_destroy(p);
    t_dcsr_free(&d);
    t_hcsr_free(&A);
  }
  gko_destroy(h);
}

/* A matrix above the large-matrix threshold (nnz > 32 x SMs x 256 entries;
 * about 2.3 M here) with many rows longer than 256 entries and one holding
 * a fifth of the entries: the plan starts the segment blocks before the
 * row blocks and drops the persistent grid.  Checked against float64 in
 * each dtype, both index types, scalar and vector paths. */
Test(spmm, large_skewed_matrix_runs_segments_first) {
  uint64_t seed;
  gko_handle_t h = t_gpu_setup(&seed);
  gen_opts o = {15000, 20000, 150, 0.2, 0.2, 1, 1};
  for (int d = 0; d < 3; d++) {
    t_hcsr A = gen(&o, kDt[d]);
    const gko_index_t it = kIdx[d % 2];
    t_dcsr dm = upload(&A, it, kDt[d]);
    const int64_t n = d == 0 ? 33 : d == 1 ? 128 : 1;
    gko_spmm_plan_t p = NULL;
    T_OK(gko_spmm_plan_create(h, dm.csr, n, GKO_LAYOUT_ROW_MAJOR, n, n, GKO_SPMM_KERNEL_AUTO, &p,
                              NULL));
    char why[1024];
    T_OK(gko_spmm_plan_describe(p, why, sizeof why, NULL));
    cr_expect(strstr(why, "started before the rows") != NULL, "nnz %lld: %s", (long long)A.nnz,
              why);
    gko_spmm_plan_destroy(p);
    t_dcsr_free(&dm);
    scase c = {kDt[d], it, GKO_LAYOUT_ROW_MAJOR, n, 0, 0, 1.5f, d == 1 ? 0.0f : -0.5f,
               GKO_SPMM_KERNEL_AUTO, 0, 0, 0};
    result r = run_case(h, &A, &c, 0);
    EXPECT_OK(r, seed, "%s n %lld nnz %lld (frob %.3g)", t_dtype_name(kDt[d]), (long long)n,
              (long long)A.nnz, r.frob);
    t_hcsr_free(&A);
  }
  gko_destroy(h);
}

Test(spmm, empty_cases) {
  uint64_t seed;
  gko_handle_t h = t_gpu_setup(&seed);
  /* nnz = 0: C = beta * C (k = 0 too); B may be NULL */
  for (int d = 0; d < 3; d++)
    for (int64_t k = 0; k <= 5; k += 5) {
      int64_t rp[8] = {0};
      t_hcsr A = {7, k, 0, rp, NULL, NULL};
      for (int b = 0; b < 2; b++) {
        scase c = {kDt[d], GKO_INDEX_INT32, GKO_LAYOUT_ROW_MAJOR, 9, 0, 12, 1.0f, b ? 2.0f : 0.0f,
                   GKO_SPMM_KERNEL_AUTO, 0, 0, 0};
        result r = run_case(h, &A, &c, 0);
        cr_expect_eq(r.kernel, GKO_SPMM_KERNEL_SCALE);
        EXPECT_OK(r, seed, "nnz 0, k %lld, beta %g", (long long)k, c.beta);
      }
    }
  /* m = 0 and n = 0: nothing read or written, NULLs allowed */
  gko_csr_t a = NULL;
  gko_spmm_plan_t p = NULL;
  gko_spmm_kernel_t kern;
  T_OK(gko_csr_create(&a, 0, 4, 0, NULL, NULL, NULL, GKO_INDEX_INT64, GKO_DTYPE_F16));
  T_OK(gko_spmm_plan_create(h, a, 16, GKO_LAYOUT_ROW_MAJOR, 16, 16, GKO_SPMM_KERNEL_MERGE, &p,
                            NULL));
  T_OK(gko_spmm_plan_kernel(p, &kern));
  cr_expect_eq(kern, GKO_SPMM_KERNEL_NONE);
  T_OK(gko_spmm_execute(p, 1.0f, NULL, 0.0f, NULL, NULL, 0, NULL));
  gko_spmm_plan_destroy(p);
  gko_csr_destroy(a);
  gen_opts o = {50, 40, 3, 0.1, 0.0, 1, 1};
  t_hcsr A = gen(&o, GKO_DTYPE_F32);
  t_dcsr d = upload(&A, GKO_INDEX_INT32, GKO_DTYPE_F32);
  T_OK(gko_spmm_plan_create(h, d.csr, 0, GKO_LAYOUT_ROW_MAJOR, 1, 1, GKO_SPMM_KERNEL_AUTO, &p,
                            NULL));
  T_OK(gko_spmm_plan_kernel(p, &kern));
  cr_expect_eq(kern, GKO_SPMM_KERNEL_NONE);
  T_OK(gko_spmm_execute(p, 1.0f, NULL, 1.0f, NULL, NULL, 0, NULL));
  gko_spmm_plan_destroy(p);
  t_dcsr_free(&d);
  t_hcsr_free(&A);
  T_CUDA(cudaDeviceSynchronize());
  gko_destroy(h);
}

/* A captured graph gives the same bits as eager execution, and two eager
 * runs give the same bits (deterministic), for both kernels. */
Test(spmm, graph_capture_and_determinism) {
  uint64_t seed;
  gko_handle_t h = t_gpu_setup(&seed);
  gen_opts o = {4000, 3000, 12, 0.1, 0.3, 1, 1};
  for (int d = 0; d < 3; d += 1) {
    t_hcsr A = gen(&o, kDt[d]);
    for (int kk = 0; kk < 2; kk++) {
      /* the same seed for the inputs of all three runs */
      uint64_t s0 = t_rng_state;
      scase c = {kDt[d], GKO_INDEX_INT32, GKO_LAYOUT_ROW_MAJOR, 96, 0, 0, 1.0f, 0.5f,
                 kForced[kk], 0, 0, 0};
      result e1 = run_case(h, &A, &c, 1);
      t_rng_state = s0;
      result e2 = run_case(h, &A, &c, 1);
      t_rng_state = s0;
      c.graph = 1;
      result g = run_case(h, &A, &c, 1);
      EXPECT_OK(e1, seed, "%s %s eager", t_dtype_name(kDt[d]), kernel_name(kForced[kk]));
      EXPECT_OK(g, seed, "%s %s graph", t_dtype_name(kDt[d]), kernel_name(kForced[kk]));
      cr_expect(e1.out_bytes == g.out_bytes && memcmp(e1.out, g.out, e1.out_bytes) == 0,
                "%s %s: graph replay differs from eager", t_dtype_name(kDt[d]),
                kernel_name(kForced[kk]));
      cr_expect(memcmp(e1.out, e2.out, e1.out_bytes) == 0, "%s %s: two runs differ",
                t_dtype_name(kDt[d]), kernel_name(kForced[kk]));
      free(e1.out);
      free(e2.out);
      free(g.out);
    }
    t_hcsr_free(&A);
  }
  gko_destroy(h);
}

/* Bad execute arguments: the documented status, a detail, and every byte
 * of C unchanged. */
Test(spmm, bad_execute_arguments_leave_c_untouched) {
  gko_handle_t h = t_gpu_setup(NULL);
  gen_opts o = {300, 300, 20, 0.0, 0.5, 0, 0};
  t_hcsr A = gen(&o, GKO_DTYPE_F32);
  t_dcsr d = upload(&A, GKO_INDEX_INT32, GKO_DTYPE_F32);
  const int64_t n = 16;
  const size_t cb = (size_t)(A.m * n) * 4, bb = (size_t)(A.k * n) * 4;
  char *B = t_dalloc(bb + 64), *C = t_dalloc(cb + 64);
  unsigned char *init = malloc(cb + 64), *back = malloc(cb + 64);
  for (size_t i = 0; i < cb + 64; i++) init[i] = (unsigned char)(t_next() & 0xff);
  t_h2d(C, init, cb + 64);
  t_memset(B, 0, bb + 64);
  gko_spmm_plan_t p = NULL;
  T_OK(gko_spmm_plan_create(h, d.csr, n, GKO_LAYOUT_ROW_MAJOR, n, n, GKO_SPMM_KERNEL_MERGE, &p,
                            NULL));
  size_t ws = 0;
  T_OK(gko_spmm_workspace_size(p, &ws));
  cr_assert(ws > 0);
  char *W = t_dalloc(ws);
  T_FAILS(GKO_STATUS_INVALID_VALUE, gko_spmm_execute(p, 1, B, 0, NULL, W, ws, NULL));
  T_FAILS(GKO_STATUS_INVALID_VALUE, gko_spmm_execute(p, 1, NULL, 0, C, W, ws, NULL));
  cr_expect(strstr(gko_last_error_detail(), "B") != NULL);
  T_FAILS(GKO_STATUS_INVALID_VALUE, gko_spmm_execute(p, 1, B, 0, C + 2, W, ws, NULL));
  cr_expect(strstr(gko_last_error_detail(), "aligned") != NULL);
  T_FAILS(GKO_STATUS_INVALID_VALUE, gko_spmm_execute(p, 1, B + 1, 0, C, W, ws, NULL));
  T_FAILS(GKO_STATUS_INVALID_VALUE, gko_spmm_execute(p, 1, C + 64, 0, C, W, ws, NULL));
  cr_expect(strstr(gko_last_error_detail(), "overlap") != NULL);
  T_FAILS(GKO_STATUS_INVALID_VALUE, gko_spmm_execute(p, 1, B, 0, d.va, W, ws, NULL));
  T_FAILS(GKO_STATUS_INVALID_VALUE, gko_spmm_execute(p, 1, B, 0, C, NULL, ws, NULL));
  cr_expect(strstr(gko_last_error_detail(), "workspace") != NULL);
  T_FAILS(GKO_STATUS_INSUFFICIENT_WORKSPACE, gko_spmm_execute(p, 1, B, 0, C, W, ws - 1, NULL));
  /* the workspace (written) over an operand: one allocation holds the
   * workspace and B, so the range reaches no other buffer; C is checked
   * first, so a workspace at C names C */
  T_FAILS(GKO_STATUS_INVALID_VALUE, gko_spmm_execute(p, 1, B, 0, C, C, ws, NULL));
  cr_expect(strstr(gko_last_error_detail(), "the workspace overlaps C") != NULL, "%s",
            gko_last_error_detail());
  cr_assert(ws > 256);
  {
    char *both = t_dalloc(ws + bb + 256);
    T_FAILS(GKO_STATUS_INVALID_VALUE, gko_spmm_execute(p, 1, both + 256, 0, C, both, ws, NULL));
    cr_expect(strstr(gko_last_error_detail(), "the workspace overlaps B") != NULL, "%s",
              gko_last_error_detail());
    cudaFree(both);
  }
  T_FAILS(GKO_STATUS_INVALID_VALUE, gko_spmm_execute(p, 1, B, 0, C, d.rp, ws, NULL));
  cr_expect(strstr(gko_last_error_detail(), "the workspace overlaps") != NULL, "%s",
            gko_last_error_detail());
  T_CUDA(cudaDeviceSynchronize());
  t_d2h(back, C, cb + 64);
  cr_expect(memcmp(init, back, cb + 64) == 0, "C was modified by a failing call");
  /* and a good call right after works */
  T_OK(gko_spmm_execute(p, 1, B, 0, C, W, ws, NULL));
  T_CUDA(cudaDeviceSynchronize());
  gko_spmm_plan_destroy(p);
  cudaFree(W);
  cudaFree(B);
  cudaFree(C);
  free(init);
  free(back);
  t_dcsr_free(&d);
  t_hcsr_free(&A);
  gko_destroy(h);
}

/* Offsets beyond 2^31 elements: C of 2^22 + 7 rows x 520 f16 (4.4 GB).
 * Checks the last rows and a sample; excluded from sanitizer runs. */
Test(spmm, huge_int64_offsets) {
  uint64_t seed;
  gko_handle_t h = t_gpu_setup(&seed);
  const int64_t m = ((int64_t)1 << 22) + 7, k = 64, n = 520;
  size_t freeb = 0, total = 0;
  T_CUDA(cudaMemGetInfo(&freeb, &total));
  if (freeb < (size_t)m * n * 2 + ((size_t)1 << 30)) cr_skip_test("needs about 6 GB of free GPU memory");
  /* two entries per row: columns r % k and (r * 7) % k, values +-1 */
  t_hcsr A = {m, k, 2 * m, malloc((size_t)(m + 1) * 8), malloc((size_t)m * 16),
              malloc((size_t)m * 16)};
  for (int64_t r = 0; r <= m; r++) A.rp[r] = 2 * r;
  for (int64_t r = 0; r < m; r++) {
    A.ci[2 * r] = r % k;
    A.ci[2 * r + 1] = (r * 7 + 3) % k;
    A.v[2 * r] = 1.0;
    A.v[2 * r + 1] = r % 2 ? -0.5 : 0.5;
  }
  uint16_t *hb = malloc((size_t)k * n * 2);
  for (int64_t i = 0; i < k * n; i++)
    hb[i] = t_double_to_f16(t_round(GKO_DTYPE_F16, t_uniform(-1, 1)));
  void *B = t_dalloc((size_t)k * n * 2), *C = t_dalloc((size_t)m * n * 2);
  t_h2d(B, hb, (size_t)k * n * 2);
  for (int idx = 0; idx < 2; idx++)
    for (int kk = 0; kk < 2; kk++) {
      t_dcsr d = upload(&A, kIdx[idx], GKO_DTYPE_F16);
      gko_spmm_plan_t p = NULL;
      T_OK(gko_spmm_plan_create(h, d.csr, n, GKO_LAYOUT_ROW_MAJOR, n, n, kForced[kk], &p, NULL));
      size_t ws = 0;
      T_OK(gko_spmm_workspace_size(p, &ws));
      void *W = ws ? t_dalloc(ws) : NULL;
      t_memset(C, 0xff, (size_t)m * n * 2);
      T_OK(gko_spmm_execute(p, 1.0f, B, 0.0f, C, W, ws, NULL));
      T_CUDA(cudaDeviceSynchronize());
      int64_t bad = 0;
      uint16_t row[520];
      for (int t = 0; t < 200; t++) {
        const int64_t r = t < 100 ? m - 1 - t : (int64_t)(t_next() % (uint64_t)m);
        t_d2h(row, (char *)C + (size_t)r * n * 2, (size_t)n * 2);
        for (int64_t j = 0; j < n; j++) {
          const double ref = A.v[2 * r] * t_f16_to_float(hb[A.ci[2 * r] * n + j]) +
                             A.v[2 * r + 1] * t_f16_to_float(hb[A.ci[2 * r + 1] * n + j]);
          const double got = t_f16_to_float(row[j]);
          if (!(fabs(got - ref) <= ldexp(1, -10) * (fabs(ref) + 1e-3)) && bad++ < 5)
            cr_log_error("row %lld col %lld: %g want %g", (long long)r, (long long)j, got, ref);
        }
      }
      cr_expect_eq(bad, 0, "seed %llu %s %s", (unsigned long long)seed,
                   idx ? "int64" : "int32", kernel_name(kForced[kk]));
      if (W) cudaFree(W);
      gko_spmm_plan_destroy(p);
      t_dcsr_free(&d);
    }
  cudaFree(B);
  cudaFree(C);
  free(hb);
  t_hcsr_free(&A);
  gko_destroy(h);
}
