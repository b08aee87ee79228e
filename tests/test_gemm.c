/* test_gemm.c -- GEMM: descriptor and argument checks (host-only, run
 * everywhere) and the GPU suite against a float64 host reference.
 *
 * Error measure: relative Frobenius error ||D - R||_F / ||R||_F over the
 * checked elements, R computed in double from the same (rounded) inputs.
 * Tolerances (t_tol), with u the unit roundoff of D's type (2^-24 f32,
 * 2^-11 f16, 2^-8 bf16):
 *   base                      4 u           (D rounded once, or twice when an
 *                                            epilogue pass runs after the GEMM)
 *   f32 accumulation          + 16 * 2^-24 * sqrt(k)   (f32 and f16/bf16 inputs)
 *   TF32                      + 2^-9        (inputs rounded to 10-bit mantissas;
 *                                            the norm of R counts the products
 *                                            as for f16 accumulation below)
 *   f16 accumulation          + 2^-11 * (2 sqrt(k) + 2), and each element
 *                             also adds alpha^2 * sum_p (a_p b_p)^2 to the
 *                             norm of R (the error follows the products'
 *                             size, not that of a cancelled sum)
 *   cuBLASLt's fused GELU-tanh + 2^-10 (f32 D) / 2^-8 (16-bit D)
 * Where the terms summed before the activation (alpha * A B, beta * C, the
 * bias) cancel, the norm of R also counts what cancelled (their squared
 * sizes minus the sum's), times the activation's slope: D is rounded
 * relative to the terms, not to their sum.
 * The norm of R is taken at least sqrt(count) times the smallest normal of
 * D's type, so outputs that are subnormal or flush to zero in D's type (the
 * far negative GELU tail in f16) do not read as large relative errors.
 * Every output buffer is poisoned first (0xFF bytes: NaN in every dtype);
 * every byte of D outside the logical matrix (ld padding, gaps between
 * batches, the guard zone) must still hold its initial value; NaN where the
 * reference is finite counts as a failure.  Inputs are fresh random numbers
 * (seed printed; GKO_TEST_SEED replays); A/B/C padding holds NaN.
 *
 * The GPU tests defined with GEMM_TEST run once per row of the backend
 * table GEMM_BACKENDS: suite "gemm" with BACKEND = AUTO (cuBLASLt) and
 * suite "gemm_wmma" with BACKEND = WMMA forced (gko's kernel; f32 inputs,
 * and bf16 before sm_80, must answer NOT_SUPPORTED there).  "gemm_wmma" also
 * has the skinny (m <= 16) and split-K determinism tests. */
#include <float.h>
#include <pthread.h>

#include "common.h"

/* ---- one test case ------------------------------------------------------------------ */

typedef struct {
  gko_dtype_t ab, cd;
  int64_t m, n, k, batch;
  int ta, tb, layout;
  int64_t lda, ldb, ldc, ldd;        /* -1: default (tight) */
  int64_t sa, sb, sc, sd, sbias;     /* -1: default */
  int epilogue, compute, fusion, pad;
  int64_t alignment;                 /* 0: default promise */
  float alpha, beta;
  int c_null;                        /* pass C = NULL (beta == 0) */
  int c_nan;                         /* C full of NaN/Inf (beta == 0) */
  int ab_nan;                        /* A and B full of NaN (alpha == 0 or k == 0) */
  int in_place;                      /* C == D */
  int off_a, off_b, off_c, off_d, off_bias; /* element offsets */
  int oneshot;                       /* gko_gemm instead of a plan */
  int sample_rows;                   /* > 0: check that many random rows */
  int exact;                         /* expect bit-exact results (set by the test) */
  int backend;                       /* gko_gemm_backend_t */
  int autotune;
  int64_t max_workspace;             /* 0: default (-1, none) */
  int static_ops;                    /* GKO_GEMM_ATTR_STATIC_OPERANDS */
} gcase;

/* ---- the backends the GPU tests run over ---------------------------------------- */

/* One row per backend: X(suite, backend, name, f32_inputs, bf16_cc, erf_required)
 *   suite         the Criterion suite its tests report in
 *   backend       what GKO_GEMM_ATTR_BACKEND asks for ("gemm" runs AUTO, the
 *                 dispatcher, which takes cuBLASLt first)
 *   name          the word its NOT_SUPPORTED details name it by
 *   f32_inputs    it takes f32 A and B (else: NOT_SUPPORTED, checked)
 *   bf16_cc       bf16 A and B need this compute capability (else:
 *                 NOT_SUPPORTED, checked); 0: any
 *   erf_required  the dtype sweep also plans GELU-erf with FUSION_REQUIRED
 *                 (cuBLASLt cannot fuse it; AUTO's hand-over to WMMA has its
 *                 own test, auto_takes_wmma_where_cublaslt_cannot)
 *   declines      its documented limits on shapes, layouts and alignment
 *                 (a gdeclines), or NULL
 * GEMM_TEST(name, ...) below defines one body and one test per row; a new
 * backend is one new row. */
#define GEMM_BACKENDS(X, ...)                                                    \
  X(gemm, GKO_GEMM_BACKEND_AUTO, "cuBLASLt", 1, 0, 0, NULL, __VA_ARGS__)           \
  X(gemm_wmma, GKO_GEMM_BACKEND_WMMA, "WMMA", 0, 80, 1, NULL, __VA_ARGS__)         \
  X(gemm_sm90, GKO_GEMM_BACKEND_SM90, "SM90", 0, 90, 1, sm90_declines, __VA_ARGS__)

/* The resolved layout of a case: leading dimensions and batch strides. */
typedef struct {
  int64_t lda, ldb, ldc, ldd, sa, sb, sc, sd, sbias;
} glayout;

/* A backend's documented limits beyond the input types, or NULL for none:
 * 0 where the case must run, 1 where the plan must be NOT_SUPPORTED, 2
 * where execute must be INVALID_VALUE with D untouched. */
typedef int (*gdeclines)(const gcase *c, const glayout *l);
static int sm90_declines(const gcase *c, const glayout *l);

typedef struct {
  int backend;
  const char *name;
  int f32_inputs, bf16_cc, erf_required;
  gdeclines declines;
} gbackend;

#define GEMM_BACKEND_ROW(suite, be, name, f32, bf16cc, erf, dec, ...) \
  {be, name, f32, bf16cc, erf, dec},
static const gbackend kBackends[] = {GEMM_BACKENDS(GEMM_BACKEND_ROW, none)};
enum { kNBackends = sizeof kBackends / sizeof kBackends[0] };

/* The backend every GPU case of this process uses (Criterion runs each test
 * in its own process): the row of the test's suite. */
static int g_backend = GKO_GEMM_BACKEND_AUTO;

/* GEMM_TEST(name, test options) { body }: the body runs once per row of
 * GEMM_BACKENDS, as test `name` of that row's suite, with g_backend set. */
#define GEMM_TEST_ROW(suite, be, bname, f32, bf16cc, erf, dec, name, ...) \
  Test(suite, name, ##__VA_ARGS__) {                                \
    g_backend = be;                                                 \
    body_##name();                                                  \
  }
#define GEMM_TEST(name, ...)                           \
  static void body_##name(void);                       \
  GEMM_BACKENDS(GEMM_TEST_ROW, name, ##__VA_ARGS__)    \
  static void body_##name(void)

static gcase gc_default(gko_dtype_t ab, gko_dtype_t cd, int64_t m, int64_t n, int64_t k) {
  gcase c;
  memset(&c, 0, sizeof c);
  c.ab = ab;
  c.cd = cd;
  c.m = m;
  c.n = n;
  c.k = k;
  c.batch = 1;
  c.lda = c.ldb = c.ldc = c.ldd = -1;
  c.sa = c.sb = c.sc = c.sd = c.sbias = -1;
  c.alpha = 1.0f;
  c.beta = 0.0f;
  c.backend = g_backend;
  return c;
}

/* The DECODE kernel runs here: sm_80+ with room for its shared memory
 * (a 96 KiB ring and an 8.5 KiB reduction buffer per block: not on sm_86 /
 * sm_89, whose blocks get 99 KiB; their plans keep the SKINNY kernel). */
static int decode_fits(void) {
  int optin = 0;
  if (t_cc() < 80 || cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0))
    return 0;
  return optin >= 98304 + 8704;
}

/* The row of GEMM_BACKENDS for `backend`; NULL for one that has none
 * (CUBLASLT, which some single tests force). */
static const gbackend *backend_row(int backend) {
  for (int i = 0; i < kNBackends; i++)
    if (kBackends[i].backend == backend) return &kBackends[i];
  return NULL;
}

/* The backend's documented NOT_SUPPORTED input types */
static int backend_unsupported(int backend, gko_dtype_t ab) {
  const gbackend *r = backend_row(backend);
  return r && ((ab == GKO_DTYPE_F32 && !r->f32_inputs) ||
               (ab == GKO_DTYPE_BF16 && r->bf16_cc && t_cc() < r->bf16_cc));
}

/* GKO_GEMM_BACKEND_SM90's limits (gko.h): compute capability 9.0, the
 * default compute mode, an ALIGNMENT promise of 16 bytes or more, and for
 * every stored matrix (C included) a leading dimension, batch stride (not
 * 0) and contiguous extent in multiples of 16 bytes; at execute, 16-byte
 * aligned pointers for what the kernel reads and writes. */
static int sm90_declines(const gcase *c, const glayout *l) {
  if (!t_sm90_built() || t_cc() != 90 || c->compute != GKO_GEMM_COMPUTE_DEFAULT) return 1;
  if (c->alignment && c->alignment < 16) return 1;
  const int64_t esab = (int64_t)gko_dtype_size(c->ab), escd = (int64_t)gko_dtype_size(c->cd);
  const int row = c->layout == GKO_LAYOUT_ROW_MAJOR;
  const int has_bias = c->epilogue & 1;
  if (c->batch > 1 && (l->sa == 0 || l->sb == 0 || l->sc == 0 || l->sd == 0)) return 1;
  const int empty = c->m == 0 || c->n == 0 || c->batch == 0 || c->k == 0;
  if (empty) return 0; /* no product: no kernel to set up */
  const struct {
    int64_t rows, cols, ld, stride, es;
  } mat[4] = {{c->ta ? c->k : c->m, c->ta ? c->m : c->k, l->lda, l->sa, esab},
              {c->tb ? c->n : c->k, c->tb ? c->k : c->n, l->ldb, l->sb, esab},
              {c->m, c->n, l->ldc, l->sc, escd},
              {c->m, c->n, l->ldd, l->sd, escd}};
  for (int i = 0; i < 4; i++) {
    const int64_t contig = row ? mat[i].cols : mat[i].rows;
    if ((contig * mat[i].es) % 16 || (mat[i].ld * mat[i].es) % 16) return 1;
    if (c->batch > 1 && (mat[i].stride * mat[i].es) % 16) return 1;
  }
  /* the fused bias is read with 16-byte loads per batch */
  const int fused_bias = has_bias && row && c->fusion != GKO_GEMM_FUSION_NEVER;
  if (fused_bias && c->batch > 1 && (l->sbias * escd) % 16) return 1;
  if (has_bias && !row && c->fusion == GKO_GEMM_FUSION_REQUIRED) return 1;
  if (c->alpha == 0.0f) return 0;
  const int reads_c = c->beta != 0.0f && !c->c_null;
  if ((c->off_a * esab) % 16 || (c->off_b * esab) % 16 || (c->off_d * escd) % 16 ||
      (reads_c && !c->in_place && (c->off_c * escd) % 16))
    return 2;
  /* a misaligned fused bias runs in gko's pass, unless fusion is required */
  if (fused_bias && (c->off_bias * escd) % 16 && c->fusion == GKO_GEMM_FUSION_REQUIRED)
    return 2;
  return 0;
}

/* The row's verdict on c (0: must run; see gdeclines). */
static int case_declines(const gcase *c, const glayout *l) {
  const gbackend *r = backend_row(c->backend);
  return r && r->declines ? r->declines(c, l) : 0;
}

/* case_declines for a row-major op(A) op(B) with tight leading dimensions,
 * one batch, pointers `off` elements past 256-byte-aligned bases. */
static int plain_declines(gko_dtype_t ab, gko_dtype_t cd, int64_t m, int64_t n, int64_t k,
                          int ta, int tb, int ep, int off) {
  gcase c = gc_default(ab, cd, m, n, k);
  c.ta = ta;
  c.tb = tb;
  c.epilogue = ep;
  c.off_a = c.off_b = off;
  const glayout l = {ta ? m : k, tb ? k : n, n, n, 0, 0, 0, 0, 0};
  return case_declines(&c, &l);
}

static double t_tol(const gcase *c) {
  double tol = 4 * t_unit(c->cd);
  double sk = sqrt((double)(c->k > 0 ? c->k : 1));
  if (c->compute == GKO_GEMM_COMPUTE_TF32) tol += ldexp(1, -9);
  else if (c->compute == GKO_GEMM_COMPUTE_F16_ACCUMULATE) tol += ldexp(1, -11) * (2 * sk + 2);
  else tol += 16 * ldexp(1, -24) * sk;
  /* cuBLASLt's fused GELU-tanh: its epilogue is less accurate than gko's
   * pass, most with a 16-bit D (H200, 2026-11-30: 0.32 % on a 2 x 1 f16 D,
   * f16 m=2 n=1 k=8 bias + GELU-tanh FUSION_REQUIRED, GKO_TEST_SEED
   * 17481122664175871539), where few outputs do not average it out */
  if ((c->epilogue >> 1) == 3 && c->fusion != GKO_GEMM_FUSION_NEVER)
    tol += c->cd == GKO_DTYPE_F32 ? ldexp(1, -10) : ldexp(1, -8);
  return tol;
}

static int64_t idx(int layout, int64_t i, int64_t j, int64_t ld) {
  return layout == GKO_LAYOUT_ROW_MAJOR ? i * ld + j : i + j * ld;
}

/* Extent in elements of batches of a stored r x c matrix. */
static int64_t extent(int layout, int64_t r, int64_t c, int64_t ld, int64_t batch,
                      int64_t stride) {
  if (r == 0 || c == 0 || batch == 0) return 0;
  int64_t foot = layout == GKO_LAYOUT_ROW_MAJOR ? (r - 1) * ld + c : (c - 1) * ld + r;
  return (batch - 1) * stride + foot;
}

/* Per-thread reusable device workspace. */
typedef struct {
  void *ws;
  size_t bytes;
} wsbuf;

static void *ws_get(wsbuf *w, size_t bytes) {
  if (bytes <= w->bytes) return w->ws;
  if (w->ws) cudaFree(w->ws);
  w->ws = t_dalloc(bytes);
  w->bytes = bytes;
  return w->ws;
}

static void ws_free(wsbuf *w) {
  if (w->ws) cudaFree(w->ws);
  w->ws = NULL;
  w->bytes = 0;
}

static gko_gemm_desc_t make_desc(const gcase *c) {
  gko_gemm_desc_t d = NULL;
  T_OK(gko_gemm_desc_create(&d, c->ab, c->cd, c->m, c->n, c->k));
  const struct {
    gko_gemm_attr_t a;
    int64_t v;
  } s[] = {{GKO_GEMM_ATTR_TRANSA, c->ta},     {GKO_GEMM_ATTR_TRANSB, c->tb},
           {GKO_GEMM_ATTR_LAYOUT, c->layout}, {GKO_GEMM_ATTR_LDA, c->lda},
           {GKO_GEMM_ATTR_LDB, c->ldb},       {GKO_GEMM_ATTR_LDC, c->ldc},
           {GKO_GEMM_ATTR_LDD, c->ldd},       {GKO_GEMM_ATTR_BATCH_COUNT, c->batch},
           {GKO_GEMM_ATTR_STRIDE_A, c->sa},   {GKO_GEMM_ATTR_STRIDE_B, c->sb},
           {GKO_GEMM_ATTR_STRIDE_C, c->sc},   {GKO_GEMM_ATTR_STRIDE_D, c->sd},
           {GKO_GEMM_ATTR_STRIDE_BIAS, c->sbias}, {GKO_GEMM_ATTR_EPILOGUE, c->epilogue},
           {GKO_GEMM_ATTR_COMPUTE, c->compute}, {GKO_GEMM_ATTR_FUSION, c->fusion},
           {GKO_GEMM_ATTR_PAD, c->pad}};
  for (size_t i = 0; i < sizeof s / sizeof s[0]; i++) T_OK(gko_gemm_desc_set(d, s[i].a, s[i].v));
  if (c->alignment) T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_ALIGNMENT, c->alignment));
  T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_BACKEND, c->backend));
  T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_AUTOTUNE, c->autotune));
  if (c->max_workspace) T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_MAX_WORKSPACE, c->max_workspace));
  if (c->static_ops) T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_STATIC_OPERANDS, c->static_ops));
  return d;
}

/* Makes c's plan, copies its description to why (n bytes) and, when be is
 * not NULL, its backend to *be, and destroys it. */
static void plan_why(gko_handle_t h, const gcase *c, char *why, size_t n,
                     gko_gemm_backend_t *be) {
  gko_gemm_desc_t d = make_desc(c);
  gko_gemm_plan_t p;
  T_OK(gko_gemm_plan_create(h, d, &p));
  if (be) T_OK(gko_gemm_plan_backend(p, be));
  T_OK(gko_gemm_plan_describe(p, why, n, NULL));
  gko_gemm_plan_destroy(p);
  gko_gemm_desc_destroy(d);
}

static int64_t dget(gko_gemm_desc_t d, gko_gemm_attr_t a) {
  int64_t v = -7;
  T_OK(gko_gemm_desc_get(d, a, &v));
  return v;
}

typedef struct {
  double rel_err, tol;
  int64_t nan_bad, touched, inexact;
  unsigned char *d_out; /* device D buffer copied back (caller frees) */
  size_t d_bytes;
} gresult;

static const char *describe_case(const gcase *c, char *buf, size_t n) {
  snprintf(buf, n,
           "%s/%s m=%lld n=%lld k=%lld batch=%lld t=%d%d %s ld=%lld/%lld/%lld/%lld "
           "strides=%lld/%lld/%lld/%lld/%lld ep=%d compute=%d fusion=%d pad=%d align=%lld "
           "alpha=%g beta=%g cnull=%d cnan=%d inplace=%d off=%d/%d/%d/%d/%d oneshot=%d "
           "backend=%d tune=%d",
           t_dtype_name(c->ab), t_dtype_name(c->cd), (long long)c->m, (long long)c->n, (long long)c->k,
           (long long)c->batch, c->ta, c->tb, c->layout ? "col" : "row", (long long)c->lda,
           (long long)c->ldb, (long long)c->ldc, (long long)c->ldd, (long long)c->sa,
           (long long)c->sb, (long long)c->sc, (long long)c->sd, (long long)c->sbias,
           c->epilogue, c->compute, c->fusion, c->pad, (long long)c->alignment, c->alpha,
           c->beta, c->c_null, c->c_nan, c->in_place, c->off_a, c->off_b, c->off_c, c->off_d,
           c->off_bias, c->oneshot, c->backend, c->autotune);
  return buf;
}

/* Runs one case on `stream` and checks it.  Returns the number of problems
 * (also reported through cr_expect). */
static int run_case(gko_handle_t h, const gcase *c, cudaStream_t stream, wsbuf *w) {
  char cbuf[600];
  gko_gemm_desc_t desc = make_desc(c);
  const int64_t lda = dget(desc, GKO_GEMM_ATTR_LDA), ldb = dget(desc, GKO_GEMM_ATTR_LDB),
                ldc = dget(desc, GKO_GEMM_ATTR_LDC), ldd = dget(desc, GKO_GEMM_ATTR_LDD);
  const int64_t sa = dget(desc, GKO_GEMM_ATTR_STRIDE_A), sb = dget(desc, GKO_GEMM_ATTR_STRIDE_B),
                sc = dget(desc, GKO_GEMM_ATTR_STRIDE_C), sd = dget(desc, GKO_GEMM_ATTR_STRIDE_D),
                sbias = dget(desc, GKO_GEMM_ATTR_STRIDE_BIAS);
  const int64_t m = c->m, n = c->n, k = c->k, bt = c->batch;
  const int L = c->layout;
  const size_t esab = gko_dtype_size(c->ab), escd = gko_dtype_size(c->cd);
  const int64_t ar = c->ta ? k : m, ac = c->ta ? m : k, br = c->tb ? n : k, bc = c->tb ? k : n;
  const int64_t ea = extent(L, ar, ac, lda, bt, sa), eb = extent(L, br, bc, ldb, bt, sb);
  const int64_t ec = extent(L, m, n, ldc, bt, sc), ed = extent(L, m, n, ldd, bt, sd);
  const int64_t ebias = (c->epilogue & 1) && bt > 0 ? (bt - 1) * sbias + n : 0;
  const int guard = 64; /* elements after each array */
  gko_gemm_plan_t plan = NULL;
  const glayout lay = {lda, ldb, ldc, ldd, sa, sb, sc, sd, sbias};
  const int declined = c->oneshot ? 0 : case_declines(c, &lay);
  if (!c->oneshot) {
    gko_status_t ps = gko_gemm_plan_create(h, desc, &plan);
    char pdetail[512]; /* before any other call clears it */
    snprintf(pdetail, sizeof pdetail, "%s", gko_last_error_detail());
    if (backend_unsupported(c->backend, c->ab) || declined == 1) {
      const char *bname = backend_row(c->backend)->name;
      cr_expect_eq(ps, GKO_STATUS_NOT_SUPPORTED, "%s must be NOT_SUPPORTED here [%s]", bname,
                   describe_case(c, cbuf, sizeof cbuf));
      cr_expect(ps != GKO_STATUS_NOT_SUPPORTED || strstr(pdetail, bname), "%s [%s]", pdetail,
                describe_case(c, cbuf, sizeof cbuf));
      if (ps == GKO_STATUS_SUCCESS) gko_gemm_plan_destroy(plan);
      gko_gemm_desc_destroy(desc);
      return ps != GKO_STATUS_NOT_SUPPORTED;
    }
    if (ps == GKO_STATUS_NOT_SUPPORTED && c->fusion == GKO_GEMM_FUSION_REQUIRED) {
      /* documented: cuBLASLt has no fused kernel for this combination */
      cr_log_info("FUSION_REQUIRED not supported: %s [%s]", gko_last_error_detail(),
                  describe_case(c, cbuf, sizeof cbuf));
      gko_gemm_desc_destroy(desc);
      return 0;
    }
    cr_assert_eq(ps, GKO_STATUS_SUCCESS, "plan: %s: %s [%s]", gko_status_name(ps),
                 gko_last_error_detail(), describe_case(c, cbuf, sizeof cbuf));
    if (c->backend != GKO_GEMM_BACKEND_AUTO) {
      gko_gemm_backend_t be = GKO_GEMM_BACKEND_AUTO;
      T_OK(gko_gemm_plan_backend(plan, &be));
      cr_expect_eq((int)be, c->backend, "plan backend %d [%s]", (int)be,
                   describe_case(c, cbuf, sizeof cbuf));
    }
  }

  /* host arrays: NaN everywhere (padding), then the logical elements */
  size_t ba = (size_t)(ea + c->off_a + guard) * esab, bb = (size_t)(eb + c->off_b + guard) * esab;
  size_t bcb = (size_t)(ec + c->off_c + guard) * escd, bdb = (size_t)(ed + c->off_d + guard) * escd;
  size_t bbias = (size_t)(ebias + c->off_bias + guard) * escd;
  unsigned char *ha = malloc(ba), *hb = malloc(bb), *hc = malloc(bcb), *hd0 = malloc(bdb),
                *hbias = malloc(bbias), *hd = malloc(bdb);
  cr_assert(ha && hb && hc && hd0 && hbias && hd);
  memset(ha, 0xFF, ba);
  memset(hb, 0xFF, bb);
  memset(hc, 0xFF, bcb);
  memset(hd0, T_POISON_BYTE, bdb);
  memset(hbias, 0xFF, bbias);
  void *pa = ha + c->off_a * esab, *pb = hb + c->off_b * esab, *pc = hc + c->off_c * escd;
  void *pbias = hbias + c->off_bias * escd;
  const int64_t bt_a = sa == 0 ? 1 : bt, bt_b = sb == 0 ? 1 : bt, bt_c = sc == 0 ? 1 : bt;
  for (int64_t b = 0; b < bt_a; b++)
    for (int64_t i = 0; i < ar; i++)
      for (int64_t j = 0; j < ac; j++)
        t_hv_set(c->ab, pa, b * sa + idx(L, i, j, lda), c->ab_nan ? NAN : t_uniform(-2, 2));
  for (int64_t b = 0; b < bt_b; b++)
    for (int64_t i = 0; i < br; i++)
      for (int64_t j = 0; j < bc; j++)
        t_hv_set(c->ab, pb, b * sb + idx(L, i, j, ldb), c->ab_nan ? NAN : t_uniform(-2, 2));
  for (int64_t b = 0; b < bt_c; b++)
    for (int64_t i = 0; i < m; i++)
      for (int64_t j = 0; j < n; j++) {
        double v = t_uniform(-2, 2);
        if (c->c_nan) v = ((i + j) % 3 == 0) ? INFINITY : ((i + j) % 3 == 1 ? -INFINITY : NAN);
        t_hv_set(c->cd, pc, b * sc + idx(L, i, j, ldc), v);
      }
  for (int64_t b = 0; b < bt; b++)
    for (int64_t j = 0; j < n && (c->epilogue & 1); j++)
      t_hv_set(c->cd, pbias, b * sbias + j, t_uniform(-1, 1));
  /* in place: D starts as C (same layout), padding poisoned */
  if (c->in_place) {
    for (int64_t b = 0; b < bt; b++)
      for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
          int64_t e = b * sd + idx(L, i, j, ldd);
          memcpy(hd0 + (c->off_d + e) * escd, (unsigned char *)pc + (b * sc + idx(L, i, j, ldc)) * escd, escd);
        }
  }

  /* device copies: cudaMalloc bases are 256-byte aligned, offsets applied */
  unsigned char *da = t_dalloc(ba), *db = t_dalloc(bb), *dc = t_dalloc(bcb), *dd = t_dalloc(bdb),
                *dbias = t_dalloc(bbias);
  t_h2d(da, ha, ba);
  t_h2d(db, hb, bb);
  t_h2d(dc, hc, bcb);
  t_h2d(dd, hd0, bdb);
  t_h2d(dbias, hbias, bbias);
  const void *A = da + c->off_a * esab, *B = db + c->off_b * esab;
  const void *C = c->c_null ? NULL : (c->in_place ? (void *)(dd + c->off_d * escd) : (void *)(dc + c->off_c * escd));
  void *D = dd + c->off_d * escd;
  const void *BIAS = (c->epilogue & 1) ? dbias + c->off_bias * escd : NULL;

  gko_status_t s;
  unsigned char *mask = NULL; /* D's logical elements */
  int bad = 0;
  if (c->oneshot) {
    s = gko_gemm(h, c->ta, c->tb, m, n, k, c->alpha, c->ab, A, c->lda, B, c->ldb, c->beta, c->cd,
                 C, c->ldc, D, c->ldd, c->epilogue, BIAS, stream);
  } else {
    size_t need = 0;
    T_OK(gko_gemm_workspace_size(plan, &need));
    void *ws = need ? ws_get(w, need) : NULL;
    s = gko_gemm_execute(plan, c->alpha, A, B, c->beta, C, D, BIAS, ws, need, stream);
    gko_gemm_plan_destroy(plan);
  }
  if (declined == 2) {
    /* documented: a pointer the backend cannot take, refused before anything runs */
    cr_expect_eq(s, GKO_STATUS_INVALID_VALUE, "execute must be INVALID_VALUE: %s [%s]",
                 gko_status_name(s), describe_case(c, cbuf, sizeof cbuf));
    T_CUDA(cudaStreamSynchronize(stream));
    t_d2h(hd, dd, bdb);
    const int same = memcmp(hd, hd0, bdb) == 0;
    cr_expect(same, "D changed by a refused execute [%s]", describe_case(c, cbuf, sizeof cbuf));
    bad = (s != GKO_STATUS_INVALID_VALUE) + !same;
    goto done;
  }
  cr_assert_eq(s, GKO_STATUS_SUCCESS, "execute: %s: %s [%s]", gko_status_name(s),
               gko_last_error_detail(), describe_case(c, cbuf, sizeof cbuf));
  T_CUDA(cudaStreamSynchronize(stream));
  t_d2h(hd, dd, bdb);
  const unsigned char *pd = hd + c->off_d * escd;

  /* which D elements are logical */
  mask = calloc((size_t)ed + 1, 1);
  for (int64_t b = 0; b < bt; b++)
    for (int64_t i = 0; i < m; i++)
      for (int64_t j = 0; j < n; j++) mask[b * sd + idx(L, i, j, ldd)] = 1;
  int64_t touched = 0;
  for (size_t byte = 0; byte < bdb; byte++) {
    int64_t e = (int64_t)(byte / escd) - c->off_d;
    int logical = byte >= c->off_d * escd && e < ed && mask[e];
    if (!logical && hd[byte] != hd0[byte]) touched++;
  }

  /* compare with the reference */
  double err2 = 0, ref2 = 0;
  int64_t nan_bad = 0, inexact = 0;
  /* With f16 accumulation the error follows the size of the products, not
   * of their (possibly cancelled) sum: there each element also counts
   * alpha^2 * sum_p (a_p b_p)^2 -- the typical size of a random dot product
   * -- in the norm.  Without it, a 2 x 1 D whose sum cancelled to ~0.1 gave
   * 18 % relative error (H200, 2026-11-30, f16 m=2 n=1 k=129 ReLU,
   * GKO_TEST_SEED 15486353863483932708); a host model of f16 accumulation
   * failed 0.6 % of such cases before and none after, and still catches a
   * dropped product in most of them. */
  /* TF32 rounds the inputs to 10-bit mantissas, so its error too follows
   * the products' size: a 3 x 3 f32 D (k = 9, ReLU, TF32) whose sums
   * cancelled failed at 0.43 % against 0.20 % (H200, 2026-11-30, under
   * initcheck, GKO_TEST_SEED 14578848579175309761); a host model of TF32
   * rounding failed 1.8 % of such small cases with the plain norm and none
   * with the products counted. */
  const int prod_norm =
      c->compute == GKO_GEMM_COMPUTE_F16_ACCUMULATE || c->compute == GKO_GEMM_COMPUTE_TF32;
  const int act = c->epilogue >> 1;
  const int64_t nrows = c->sample_rows > 0 && c->sample_rows < m ? c->sample_rows : m;
  for (int64_t b = 0; b < bt; b++)
    for (int64_t ri = 0; ri < nrows; ri++) {
      int64_t i = nrows == m ? ri : (int64_t)(t_next() % (uint64_t)m);
      for (int64_t j = 0; j < n; j++) {
        double sum = 0, sq = 0;
        if (c->alpha != 0.0f && k > 0)
          for (int64_t p = 0; p < k; p++) {
            double av = t_hv_get(c->ab, pa, b * sa + (c->ta ? idx(L, p, i, lda) : idx(L, i, p, lda)));
            double bv = t_hv_get(c->ab, pb, b * sb + (c->tb ? idx(L, j, p, ldb) : idx(L, p, j, ldb)));
            sum += av * bv;
            sq += av * bv * av * bv;
          }
        double x = (double)c->alpha * sum;
        if (c->alpha == 0.0f || k == 0) x = 0;
        /* terms2: the squared sizes of the terms summed into x */
        double terms2 = x * x;
        if (c->beta != 0.0f) {
          const double y = (double)c->beta * t_hv_get(c->cd, pc, b * sc + idx(L, i, j, ldc));
          x += y;
          terms2 += y * y;
        }
        if (c->epilogue & 1) {
          const double y = t_hv_get(c->cd, pbias, b * sbias + j);
          x += y;
          terms2 += y * y;
        }
        double r = t_ref_act(act, x);
        double got = t_hv_get(c->cd, pd, b * sd + idx(L, i, j, ldd));
        if (isnan(got) && !isnan(r)) {
          if (nan_bad++ < 3)
            cr_log_error("NaN at b=%lld i=%lld j=%lld (ref %g) [%s]", (long long)b, (long long)i,
                         (long long)j, r, describe_case(c, cbuf, sizeof cbuf));
          continue;
        }
        if (c->exact) {
          double want = t_round(c->cd, r);
          if (!(got == want) && !(isnan(got) && isnan(want)) && inexact++ < 3)
            cr_log_error("inexact at b=%lld i=%lld j=%lld: got %.9g want %.9g [%s]",
                         (long long)b, (long long)i, (long long)j, got, want,
                         describe_case(c, cbuf, sizeof cbuf));
        }
        if (!isfinite(r)) continue;
        err2 += (got - r) * (got - r);
        ref2 += r * r;
        if (prod_norm && isfinite(sq)) ref2 += (double)c->alpha * c->alpha * sq;
        /* GELU after D was rounded (gko's pass: FUSION_NEVER, or what
         * cuBLASLt cannot fuse) sees the pre-activation x with its rounding
         * error, which the activation scales by x * gelu'(x) -- large
         * against gelu(x) in the negative tail: the norm counts that size.
         * Without it a 1 x 2 D in that tail failed at 0.31 % (H200,
         * 2026-11-30, f16 k=9 BIAS_GELU_TANH FUSION_NEVER, GKO_TEST_SEED
         * 11831435770313624582). */
        double slope = 1.0;
        if (act >= 2 && isfinite(x)) {
          const double hh = 1e-6 * fmax(1.0, fabs(x));
          slope = (t_ref_act(act, x + hh) - t_ref_act(act, x - hh)) / (2 * hh);
          ref2 += (x * slope) * (x * slope);
        }
        /* The pre-activation x is rounded relative to the terms summed
         * into it (alpha * A B, beta * C, the bias: in f32, in D's type,
         * again in gko's pass), not to x where they cancel; the activation
         * scales that by its slope.  The norm counts what cancelled
         * (terms2 - x^2 when positive).  Without it a 1 x 1 f32 D whose
         * product and bias cancelled failed at 1.85e-5 against 3.93e-6
         * (H200, 2026-11-30, f32 k=15 BIAS_GELU_ERF FUSION_NEVER,
         * GKO_TEST_SEED 4862426341651669373). */
        if (isfinite(terms2) && terms2 > x * x) ref2 += (terms2 - x * x) * slope * slope;
      }
    }
  /* outputs below D's smallest normal (f16: 2^-14; the GELU tails) lose
   * relative precision to subnormal rounding or flush to zero: each checked
   * element contributes that much to the norm the error is measured by */
  const double tiny = c->cd == GKO_DTYPE_F16 ? ldexp(1, -14) : (double)FLT_MIN;
  ref2 += (double)bt * (double)nrows * (double)n * tiny * tiny;
  double rel = ref2 > 0 ? sqrt(err2 / ref2) : sqrt(err2);
  double tol = t_tol(c);
  cr_expect(rel <= tol, "relative error %.3g > %.3g [%s]", rel, tol,
            describe_case(c, cbuf, sizeof cbuf));
  cr_expect_eq(nan_bad, 0, "%lld NaN outputs [%s]", (long long)nan_bad,
               describe_case(c, cbuf, sizeof cbuf));
  cr_expect_eq(touched, 0, "%lld bytes outside D's logical elements changed [%s]",
               (long long)touched, describe_case(c, cbuf, sizeof cbuf));
  cr_expect_eq(inexact, 0, "%lld inexact results [%s]", (long long)inexact,
               describe_case(c, cbuf, sizeof cbuf));
  bad = !(rel <= tol) + (nan_bad > 0) + (touched > 0) + (inexact > 0);
done:
  free(mask);
  free(ha);
  free(hb);
  free(hc);
  free(hd0);
  free(hd);
  free(hbias);
  cudaFree(da);
  cudaFree(db);
  cudaFree(dc);
  cudaFree(dd);
  cudaFree(dbias);
  gko_gemm_desc_destroy(desc);
  return bad;
}

/* A GPU test that checks cases with run_case: its seed (printed with a
 * failure), a handle, a reusable workspace and the count of failed cases. */
typedef struct {
  uint64_t seed;
  gko_handle_t h;
  wsbuf w;
  int bad;
} gsweep;

/* Skips without a GPU; seeds the random numbers, creates the handle. */
static gsweep sweep_begin(void) {
  gsweep sw = {0};
  sw.h = t_gpu_setup(&sw.seed);
  return sw;
}

/* Runs and checks one case on the default stream; with most > 0 the test
 * stops once more than `most` cases have failed. */
static void sweep_case(gsweep *sw, const gcase *c, int most) {
  sw->bad += run_case(sw->h, c, NULL, &sw->w);
  if (most > 0)
    cr_assert(sw->bad <= most, "seed %llu: too many failures", (unsigned long long)sw->seed);
}

/* No case may have failed; frees the workspace and the handle. */
static void sweep_end(gsweep *sw) {
  cr_expect_eq(sw->bad, 0, "seed %llu", (unsigned long long)sw->seed);
  ws_free(&sw->w);
  gko_destroy(sw->h);
}

static const int64_t kSizes[] = {1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 33, 63, 65, 127, 129};
enum { kNSizes = sizeof kSizes / sizeof kSizes[0] };

static const struct {
  gko_dtype_t ab, cd;
} kTypes[] = {{GKO_DTYPE_F32, GKO_DTYPE_F32},
              {GKO_DTYPE_F16, GKO_DTYPE_F16},
              {GKO_DTYPE_F16, GKO_DTYPE_F32},
              {GKO_DTYPE_BF16, GKO_DTYPE_BF16},
              {GKO_DTYPE_BF16, GKO_DTYPE_F32}};
enum { kNTypes = sizeof kTypes / sizeof kTypes[0] };

static int64_t pick_size(void) { return kSizes[t_next() % kNSizes]; }

/* ============================== host-only ===================================== */

Test(gemm_args, enum_values_are_the_documented_ones) {
  cr_expect_eq(GKO_OP_N, 0);
  cr_expect_eq(GKO_OP_T, 1);
  cr_expect_eq(GKO_LAYOUT_ROW_MAJOR, 0);
  cr_expect_eq(GKO_LAYOUT_COL_MAJOR, 1);
  cr_expect_eq(GKO_EPILOGUE_BIAS_GELU_TANH, 7);
  cr_expect_eq(GKO_EPILOGUE_GELU_ERF, 4);
  cr_expect_eq(GKO_GEMM_BACKEND_WMMA, 2);
  cr_expect_eq(GKO_GEMM_COMPUTE_F16_ACCUMULATE, 2);
  cr_expect_eq(GKO_GEMM_ATTR_MAX_WORKSPACE, 24);
  cr_expect_eq(GKO_GEMM_ATTR_AUTOTUNE, 25);
  cr_expect_eq(GKO_GEMM_ATTR_INVARIANT, 26);
  cr_expect_eq(GKO_GEMM_ATTR_STATIC_OPERANDS, 27);
  cr_expect_eq(GKO_GEMM_STATIC_NONE, 0);
  cr_expect_eq(GKO_GEMM_STATIC_A, 1);
  cr_expect_eq(GKO_GEMM_STATIC_B, 2);
  cr_expect_eq(GKO_GEMM_STATIC_AB, 3);
  cr_expect_eq(sizeof(gko_gemm_attr_t), sizeof(int));
  cr_expect_eq(sizeof(gko_epilogue_t), sizeof(int));
}

Test(gemm_args, descriptor_defaults_and_round_trip) {
  gko_gemm_desc_t d = NULL;
  T_OK(gko_gemm_desc_create(&d, GKO_DTYPE_F16, GKO_DTYPE_F32, 5, 7, 3));
  /* row-major, no transposes: A 5x3 (lda 3), B 3x7 (ldb 7), C/D 5x7 (ld 7) */
  cr_expect_eq(dget(d, GKO_GEMM_ATTR_LDA), 3);
  cr_expect_eq(dget(d, GKO_GEMM_ATTR_LDB), 7);
  cr_expect_eq(dget(d, GKO_GEMM_ATTR_LDC), 7);
  cr_expect_eq(dget(d, GKO_GEMM_ATTR_LDD), 7);
  cr_expect_eq(dget(d, GKO_GEMM_ATTR_STRIDE_A), 15);
  cr_expect_eq(dget(d, GKO_GEMM_ATTR_STRIDE_D), 35);
  cr_expect_eq(dget(d, GKO_GEMM_ATTR_STRIDE_BIAS), 0);
  cr_expect_eq(dget(d, GKO_GEMM_ATTR_BATCH_COUNT), 1);
  cr_expect_eq(dget(d, GKO_GEMM_ATTR_ALIGNMENT), 16);
  cr_expect_eq(dget(d, GKO_GEMM_ATTR_MAX_WORKSPACE), -1);
  cr_expect_eq(dget(d, GKO_GEMM_ATTR_STATIC_OPERANDS), GKO_GEMM_STATIC_NONE);
  T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_STATIC_OPERANDS, GKO_GEMM_STATIC_B));
  cr_expect_eq(dget(d, GKO_GEMM_ATTR_STATIC_OPERANDS), GKO_GEMM_STATIC_B);
  cr_expect_eq(dget(d, GKO_GEMM_ATTR_AB_DTYPE), GKO_DTYPE_F16);
  cr_expect_eq(dget(d, GKO_GEMM_ATTR_CD_DTYPE), GKO_DTYPE_F32);
  /* transposes and layout move the tight defaults */
  T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_TRANSA, GKO_OP_T));
  cr_expect_eq(dget(d, GKO_GEMM_ATTR_LDA), 5); /* A stored 3x5 */
  T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_LAYOUT, GKO_LAYOUT_COL_MAJOR));
  cr_expect_eq(dget(d, GKO_GEMM_ATTR_LDA), 3); /* column length of 3x5 */
  cr_expect_eq(dget(d, GKO_GEMM_ATTR_LDD), 5);
  cr_expect_eq(dget(d, GKO_GEMM_ATTR_STRIDE_D), 35);
  T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_LDD, 9));
  cr_expect_eq(dget(d, GKO_GEMM_ATTR_LDD), 9);
  cr_expect_eq(dget(d, GKO_GEMM_ATTR_STRIDE_D), 63);
  T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_LDD, -1));
  cr_expect_eq(dget(d, GKO_GEMM_ATTR_LDD), 5);
  T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_STRIDE_A, 0));
  cr_expect_eq(dget(d, GKO_GEMM_ATTR_STRIDE_A), 0, "0 is broadcast, not default");
  /* zero sizes give ld 1 */
  T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_K, 0));
  cr_expect_eq(dget(d, GKO_GEMM_ATTR_LDB), 1);
  T_OK(gko_gemm_desc_destroy(d));
  T_OK(gko_gemm_desc_destroy(NULL));
}

Test(gemm_args, descriptor_rejects_bad_values_unchanged) {
  gko_gemm_desc_t d = (gko_gemm_desc_t)(uintptr_t)0x1234;
  T_FAILS(GKO_STATUS_INVALID_VALUE, gko_gemm_desc_create(NULL, GKO_DTYPE_F16, GKO_DTYPE_F16, 1, 1, 1));
  T_FAILS(GKO_STATUS_INVALID_VALUE, gko_gemm_desc_create(&d, (gko_dtype_t)9, GKO_DTYPE_F16, 1, 1, 1));
  cr_expect(strstr(gko_last_error_detail(), "ab_dtype") != NULL);
  T_FAILS(GKO_STATUS_INVALID_VALUE, gko_gemm_desc_create(&d, GKO_DTYPE_F32, GKO_DTYPE_F16, 1, 1, 1));
  cr_expect(strstr(gko_last_error_detail(), "cd_dtype") != NULL);
  T_FAILS(GKO_STATUS_INVALID_VALUE, gko_gemm_desc_create(&d, GKO_DTYPE_F16, GKO_DTYPE_BF16, 1, 1, 1));
  T_FAILS(GKO_STATUS_INVALID_VALUE, gko_gemm_desc_create(&d, GKO_DTYPE_F16, GKO_DTYPE_F16, -1, 1, 1));
  T_FAILS(GKO_STATUS_INVALID_VALUE, gko_gemm_desc_create(&d, GKO_DTYPE_F16, GKO_DTYPE_F16, 1, -1, 1));
  T_FAILS(GKO_STATUS_INVALID_VALUE, gko_gemm_desc_create(&d, GKO_DTYPE_F16, GKO_DTYPE_F16, 1, 1, -5));
  cr_expect_eq(d, (gko_gemm_desc_t)(uintptr_t)0x1234, "desc written on failure");
  T_OK(gko_gemm_desc_create(&d, GKO_DTYPE_F16, GKO_DTYPE_F16, 4, 4, 4));
  const struct {
    gko_gemm_attr_t a;
    int64_t v;
    const char *word;
  } bad[] = {{(gko_gemm_attr_t)31, 0, "attr"},
             {GKO_GEMM_ATTR_B_DTYPE, -2, "B_DTYPE"},
             {GKO_GEMM_ATTR_B_DTYPE, 5, "B_DTYPE"},
             {GKO_GEMM_ATTR_SCALE_A_MODE, 2, "SCALE_A_MODE"},
             {GKO_GEMM_ATTR_SCALE_B_MODE, -1, "SCALE_B_MODE"},
             {GKO_GEMM_ATTR_INVARIANT, -1, "INVARIANT"},
             {GKO_GEMM_ATTR_STATIC_OPERANDS, 4, "STATIC_OPERANDS"},
             {GKO_GEMM_ATTR_STATIC_OPERANDS, -1, "STATIC_OPERANDS"},
             {GKO_GEMM_ATTR_AUTOTUNE, 2, "AUTOTUNE"},
             {GKO_GEMM_ATTR_AUTOTUNE, -1, "AUTOTUNE"},
             {(gko_gemm_attr_t)-1, 0, "attr"},
             {GKO_GEMM_ATTR_TRANSA, 2, "TRANSA"},
             {GKO_GEMM_ATTR_TRANSB, -1, "TRANSB"},
             {GKO_GEMM_ATTR_LAYOUT, 2, "LAYOUT"},
             {GKO_GEMM_ATTR_LDA, 0, "LDA"},
             {GKO_GEMM_ATTR_LDD, -2, "LDD"},
             {GKO_GEMM_ATTR_M, -1, "ATTR_M"},
             {GKO_GEMM_ATTR_BATCH_COUNT, -1, "BATCH"},
             {GKO_GEMM_ATTR_BATCH_COUNT, (int64_t)1 << 31, "BATCH"},
             {GKO_GEMM_ATTR_STRIDE_C, -2, "STRIDE_C"},
             {GKO_GEMM_ATTR_EPILOGUE, 8, "EPILOGUE"},
             {GKO_GEMM_ATTR_COMPUTE, 4, "COMPUTE"},
             {GKO_GEMM_ATTR_BACKEND, 4, "BACKEND"},
             {GKO_GEMM_ATTR_ALIGNMENT, 12, "ALIGNMENT"},
             {GKO_GEMM_ATTR_ALIGNMENT, 512, "ALIGNMENT"},
             {GKO_GEMM_ATTR_ALIGNMENT, 0, "ALIGNMENT"},
             {GKO_GEMM_ATTR_FUSION, 3, "FUSION"},
             {GKO_GEMM_ATTR_PAD, -1, "PAD"},
             {GKO_GEMM_ATTR_MAX_WORKSPACE, -2, "MAX_WORKSPACE"},
             {GKO_GEMM_ATTR_AB_DTYPE, 7, "AB_DTYPE"}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    int64_t before = 0;
    int known = (int)bad[i].a >= 0 && (int)bad[i].a < 31;
    if (known) before = dget(d, bad[i].a);
    T_FAILS(GKO_STATUS_INVALID_VALUE, gko_gemm_desc_set(d, bad[i].a, bad[i].v));
    cr_expect(strstr(gko_last_error_detail(), bad[i].word) != NULL, "detail '%s' lacks '%s'",
              gko_last_error_detail(), bad[i].word);
    if (known) cr_expect_eq(dget(d, bad[i].a), before, "attribute %d changed", (int)bad[i].a);
  }
  int64_t v = 99;
  T_FAILS(GKO_STATUS_INVALID_VALUE, gko_gemm_desc_get(d, (gko_gemm_attr_t)31, &v));
  cr_expect_eq(v, 99);
  T_FAILS(GKO_STATUS_INVALID_VALUE, gko_gemm_desc_get(d, GKO_GEMM_ATTR_M, NULL));
  T_FAILS(GKO_STATUS_INVALID_VALUE, gko_gemm_desc_get(NULL, GKO_GEMM_ATTR_M, &v));
  T_FAILS(GKO_STATUS_INVALID_VALUE, gko_gemm_desc_set(NULL, GKO_GEMM_ATTR_M, 1));
  gko_gemm_desc_destroy(d);
}

/* plan_create checks the descriptor before it touches the handle, so these
 * hold without a GPU (the fake handle is never dereferenced). */
Test(gemm_args, plan_rejects_inconsistent_descriptors) {
  gko_handle_t fake = (gko_handle_t)(uintptr_t)0x10;
  gko_gemm_plan_t plan = (gko_gemm_plan_t)(uintptr_t)0x99;
  gko_gemm_desc_t d = NULL;
  T_OK(gko_gemm_desc_create(&d, GKO_DTYPE_F16, GKO_DTYPE_F16, 64, 32, 16));
  T_FAILS(GKO_STATUS_INVALID_VALUE, gko_gemm_plan_create(NULL, d, &plan));
  cr_expect(strstr(gko_last_error_detail(), "handle") != NULL);
  T_FAILS(GKO_STATUS_INVALID_VALUE, gko_gemm_plan_create(fake, NULL, &plan));
  T_FAILS(GKO_STATUS_INVALID_VALUE, gko_gemm_plan_create(fake, d, NULL));
  /* lda smaller than a row of A (row-major 64 x 16) */
  T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_LDA, 15));
  T_FAILS(GKO_STATUS_INVALID_VALUE, gko_gemm_plan_create(fake, d, &plan));
  cr_expect(strstr(gko_last_error_detail(), "LDA") != NULL, "%s", gko_last_error_detail());
  T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_LDA, -1));
  /* transposed A is 16 x 64: lda 16 too small now */
  T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_TRANSA, GKO_OP_T));
  T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_LDA, 16));
  T_FAILS(GKO_STATUS_INVALID_VALUE, gko_gemm_plan_create(fake, d, &plan));
  T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_LDA, -1));
  T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_LDD, 31));
  T_FAILS(GKO_STATUS_INVALID_VALUE, gko_gemm_plan_create(fake, d, &plan));
  cr_expect(strstr(gko_last_error_detail(), "LDD") != NULL);
  T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_LDD, -1));
  /* column-major: ldc below m */
  T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_LAYOUT, GKO_LAYOUT_COL_MAJOR));
  T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_LDC, 63));
  T_FAILS(GKO_STATUS_INVALID_VALUE, gko_gemm_plan_create(fake, d, &plan));
  cr_expect(strstr(gko_last_error_detail(), "LDC") != NULL);
  T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_LDC, -1));
  T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_LAYOUT, GKO_LAYOUT_ROW_MAJOR));
  /* D's batches overlap */
  T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_BATCH_COUNT, 3));
  T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_STRIDE_D, 0));
  T_FAILS(GKO_STATUS_INVALID_VALUE, gko_gemm_plan_create(fake, d, &plan));
  cr_expect(strstr(gko_last_error_detail(), "STRIDE_D") != NULL);
  T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_STRIDE_D, 64 * 32 - 1));
  T_FAILS(GKO_STATUS_INVALID_VALUE, gko_gemm_plan_create(fake, d, &plan));
  T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_STRIDE_D, -1));
  T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_BATCH_COUNT, 1));
  /* m * k overflows the byte count */
  T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_M, (int64_t)1 << 40));
  T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_K, (int64_t)1 << 40));
  T_FAILS(GKO_STATUS_INVALID_VALUE, gko_gemm_plan_create(fake, d, &plan));
  cr_expect(strstr(gko_last_error_detail(), "int64") != NULL, "%s", gko_last_error_detail());
  T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_M, 64));
  T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_K, 16));
  /* batches overflow */
  T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_BATCH_COUNT, INT32_MAX));
  T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_STRIDE_B, INT64_MAX / 4));
  T_FAILS(GKO_STATUS_INVALID_VALUE, gko_gemm_plan_create(fake, d, &plan));
  gko_gemm_desc_destroy(d);
  /* TF32 applies to f32 inputs only */
  T_OK(gko_gemm_desc_create(&d, GKO_DTYPE_BF16, GKO_DTYPE_F32, 8, 8, 8));
  T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_COMPUTE, GKO_GEMM_COMPUTE_TF32));
  T_FAILS(GKO_STATUS_INVALID_VALUE, gko_gemm_plan_create(fake, d, &plan));
  cr_expect(strstr(gko_last_error_detail(), "TF32") != NULL);
  /* cd_dtype f16 with bf16 inputs (set after create) */
  T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_COMPUTE, GKO_GEMM_COMPUTE_DEFAULT));
  T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_CD_DTYPE, GKO_DTYPE_F16));
  T_FAILS(GKO_STATUS_INVALID_VALUE, gko_gemm_plan_create(fake, d, &plan));
  cr_expect(strstr(gko_last_error_detail(), "CD_DTYPE") != NULL);
  gko_gemm_desc_destroy(d);
  /* INVARIANT: D's lines must be lines of the operand that holds them, and
   * no autotuning (the reference problem grows them) */
  T_OK(gko_gemm_desc_create(&d, GKO_DTYPE_F16, GKO_DTYPE_F16, 64, 32, 16));
  T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_INVARIANT, 4096));
  cr_expect_eq(dget(d, GKO_GEMM_ATTR_INVARIANT), 4096);
  T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_TRANSA, GKO_OP_T));
  T_FAILS(GKO_STATUS_INVALID_VALUE, gko_gemm_plan_create(fake, d, &plan));
  cr_expect(strstr(gko_last_error_detail(), "INVARIANT") != NULL &&
                strstr(gko_last_error_detail(), "TRANSA") != NULL,
            "%s", gko_last_error_detail());
  T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_TRANSA, GKO_OP_N));
  T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_LAYOUT, GKO_LAYOUT_COL_MAJOR));
  T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_TRANSB, GKO_OP_T));
  T_FAILS(GKO_STATUS_INVALID_VALUE, gko_gemm_plan_create(fake, d, &plan));
  cr_expect(strstr(gko_last_error_detail(), "TRANSB") != NULL, "%s", gko_last_error_detail());
  T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_TRANSB, GKO_OP_N));
  T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_AUTOTUNE, 1));
  T_FAILS(GKO_STATUS_INVALID_VALUE, gko_gemm_plan_create(fake, d, &plan));
  cr_expect(strstr(gko_last_error_detail(), "AUTOTUNE") != NULL, "%s", gko_last_error_detail());
  gko_gemm_desc_destroy(d);
  cr_expect_eq(plan, (gko_gemm_plan_t)(uintptr_t)0x99, "plan written on failure");
}

Test(gemm_args, plan_queries_and_execute_reject_null) {
  size_t bytes = 5;
  gko_gemm_backend_t be = (gko_gemm_backend_t)9;
  T_FAILS(GKO_STATUS_INVALID_VALUE, gko_gemm_workspace_size(NULL, &bytes));
  T_FAILS(GKO_STATUS_INVALID_VALUE, gko_gemm_plan_backend(NULL, &be));
  T_FAILS(GKO_STATUS_INVALID_VALUE, gko_gemm_plan_describe(NULL, NULL, 0, NULL));
  cr_expect_eq(bytes, 5);
  cr_expect_eq(be, 9);
  float x[4] = {1, 2, 3, 4};
  T_FAILS(GKO_STATUS_INVALID_VALUE,
          gko_gemm_execute(NULL, 1.0f, x, x, 0.0f, NULL, x, NULL, NULL, 0, NULL));
  cr_expect(strstr(gko_last_error_detail(), "plan") != NULL);
  T_OK(gko_gemm_plan_destroy(NULL));
  /* one-shot: NULL handle, bad enums and sizes before any GPU work */
  T_FAILS(GKO_STATUS_INVALID_VALUE,
          gko_gemm(NULL, GKO_OP_N, GKO_OP_N, 2, 2, 1, 1.0f, GKO_DTYPE_F32, x, -1, x, -1, 0.0f,
                   GKO_DTYPE_F32, NULL, -1, x, -1, GKO_EPILOGUE_NONE, NULL, NULL));
  gko_handle_t fake = (gko_handle_t)(uintptr_t)0x10;
  T_FAILS(GKO_STATUS_INVALID_VALUE,
          gko_gemm(fake, (gko_op_t)2, GKO_OP_N, 2, 2, 1, 1.0f, GKO_DTYPE_F32, x, -1, x, -1, 0.0f,
                   GKO_DTYPE_F32, NULL, -1, x, -1, GKO_EPILOGUE_NONE, NULL, NULL));
  T_FAILS(GKO_STATUS_INVALID_VALUE,
          gko_gemm(fake, GKO_OP_N, GKO_OP_N, -2, 2, 1, 1.0f, GKO_DTYPE_F32, x, -1, x, -1, 0.0f,
                   GKO_DTYPE_F32, NULL, -1, x, -1, GKO_EPILOGUE_NONE, NULL, NULL));
  T_FAILS(GKO_STATUS_INVALID_VALUE,
          gko_gemm(fake, GKO_OP_N, GKO_OP_N, 2, 2, 2, 1.0f, GKO_DTYPE_F32, x, 1, x, -1, 0.0f,
                   GKO_DTYPE_F32, NULL, -1, x, -1, GKO_EPILOGUE_NONE, NULL, NULL));
  cr_expect(strstr(gko_last_error_detail(), "LDA") != NULL, "%s", gko_last_error_detail());
  T_FAILS(GKO_STATUS_INVALID_VALUE,
          gko_gemm(fake, GKO_OP_N, GKO_OP_N, 2, 2, 1, 1.0f, (gko_dtype_t)5, x, -1, x, -1, 0.0f,
                   GKO_DTYPE_F32, NULL, -1, x, -1, GKO_EPILOGUE_NONE, NULL, NULL));
  T_FAILS(GKO_STATUS_INVALID_VALUE,
          gko_gemm(fake, GKO_OP_N, GKO_OP_N, 2, 2, 1, 1.0f, GKO_DTYPE_F32, x, -1, x, -1, 0.0f,
                   GKO_DTYPE_F32, NULL, -1, x, -1, (gko_epilogue_t)9, NULL, NULL));
  for (int i = 0; i < 4; i++) cr_expect_eq(x[i], (float)(i + 1), "buffer modified");
}

/* ================================= GPU ========================================= */

/* Every combination of the small odd sizes, f16 in and out, no epilogue, with
 * a random beta (0 half of the time) and transposes. */
GEMM_TEST(small_sizes_every_combination_f16, .timeout = 900) {
  gsweep sw = sweep_begin();
  for (int i = 0; i < kNSizes; i++)
    for (int j = 0; j < kNSizes; j++)
      for (int l = 0; l < kNSizes; l++) {
        gcase c = gc_default(GKO_DTYPE_F16, GKO_DTYPE_F16, kSizes[i], kSizes[j], kSizes[l]);
        c.ta = (int)(t_next() & 1);
        c.tb = (int)(t_next() & 1);
        c.beta = (t_next() & 1) ? 0.0f : 0.75f;
        c.alpha = 1.25f;
        sweep_case(&sw, &c, 20);
      }
  sweep_end(&sw);
}

/* Every type combination x compute mode x epilogue x fusion policy, on
 * sampled odd sizes, transposes, beta and both layouts. */
GEMM_TEST(dtypes_computes_epilogues_fusions, .timeout = 900) {
  gsweep sw = sweep_begin();
  int cc10 = 0;
  {
    int64_t v = 0;
    T_OK(gko_query(GKO_QUERY_COMPUTE_CAPABILITY, 0, &v));
    cc10 = (int)v;
  }
  for (int t = 0; t < kNTypes; t++)
    for (int comp = 0; comp < 3; comp++) {
      if (comp == GKO_GEMM_COMPUTE_TF32 && (kTypes[t].ab != GKO_DTYPE_F32 || cc10 < 80)) continue;
      if (comp == GKO_GEMM_COMPUTE_F16_ACCUMULATE &&
          !(kTypes[t].ab == GKO_DTYPE_F16 && kTypes[t].cd == GKO_DTYPE_F16))
        continue;
      if (kTypes[t].ab == GKO_DTYPE_BF16 && cc10 < 80) continue;
      for (int ep = 0; ep < 8; ep++)
        for (int fu = 0; fu < 3; fu++) {
          /* cuBLASLt cannot fuse GELU-erf (NOT_SUPPORTED); WMMA fuses everything */
          if (fu == GKO_GEMM_FUSION_REQUIRED && (ep >> 1) == 2 &&
              !backend_row(g_backend)->erf_required)
            continue;
          for (int rep = 0; rep < 3; rep++) {
            gcase c = gc_default(kTypes[t].ab, kTypes[t].cd, pick_size(), pick_size(),
                                 pick_size());
            if (rep == 2) { /* one aligned, larger shape per combination */
              c.m = 192;
              c.n = 256;
              c.k = 128;
            }
            c.compute = comp;
            c.epilogue = ep;
            c.fusion = fu;
            c.ta = (int)(t_next() & 1);
            c.tb = (int)(t_next() & 1);
            c.layout = (fu == GKO_GEMM_FUSION_REQUIRED && (ep & 1)) ? 0 : (int)(t_next() & 1);
            c.alpha = (float)t_uniform(0.5, 1.5);
            c.beta = (t_next() & 1) ? 0.0f : (float)t_uniform(-1, 1);
            sweep_case(&sw, &c, 20);
          }
        }
    }
  sweep_end(&sw);
}

/* Transposes, layouts, padded leading dimensions (NaN in the padding), in
 * place, one-shot. */
GEMM_TEST(transposes_layouts_padded_ld_in_place_oneshot, .timeout = 600) {
  gsweep sw = sweep_begin();
  for (int ta = 0; ta < 2; ta++)
    for (int tb = 0; tb < 2; tb++)
      for (int lay = 0; lay < 2; lay++)
        for (int var = 0; var < 4; var++) {
          gcase c = gc_default(var & 1 ? GKO_DTYPE_BF16 : GKO_DTYPE_F32,
                               var & 1 ? GKO_DTYPE_BF16 : GKO_DTYPE_F32, 65, 33, 127);
          c.ta = ta;
          c.tb = tb;
          c.layout = lay;
          int64_t ar = ta ? c.k : c.m, ac = ta ? c.m : c.k, br = tb ? c.n : c.k,
                  bc = tb ? c.k : c.n;
          c.lda = (lay ? ar : ac) + 3;
          c.ldb = (lay ? br : bc) + 5;
          c.ldc = (lay ? c.m : c.n) + 7;
          c.ldd = var >= 2 ? c.ldc : (lay ? c.m : c.n) + 1;
          c.in_place = var >= 2;
          c.beta = 0.5f;
          c.epilogue = var == 3 ? GKO_EPILOGUE_BIAS_RELU : GKO_EPILOGUE_NONE;
          c.oneshot = var == 1 && lay == 0 && !c.in_place;
          sweep_case(&sw, &c, 0);
        }
  sweep_end(&sw);
}

GEMM_TEST(batched_strided_broadcast, .timeout = 600) {
  gsweep sw = sweep_begin();
  for (int var = 0; var < 12; var++) {
    gcase c = gc_default(var % 3 == 0 ? GKO_DTYPE_F16 : var % 3 == 1 ? GKO_DTYPE_BF16 : GKO_DTYPE_F32,
                         var % 2 ? GKO_DTYPE_F32 : (var % 3 == 0 ? GKO_DTYPE_F16 : var % 3 == 1 ? GKO_DTYPE_BF16 : GKO_DTYPE_F32),
                         pick_size(), pick_size(), pick_size());
    c.batch = 2 + var % 4;
    c.ta = var & 1;
    c.tb = (var >> 1) & 1;
    c.layout = (var >> 2) & 1;
    c.epilogue = (var % 4 == 3) ? GKO_EPILOGUE_BIAS_GELU_TANH : (var % 2 ? GKO_EPILOGUE_BIAS : 0);
    c.beta = var % 3 ? 0.25f : 0.0f;
    if (var % 4 == 1) c.sa = 0;      /* broadcast A */
    if (var % 4 == 2) c.sb = 0;      /* broadcast B */
    if (var % 5 == 0) c.sc = 0;      /* broadcast C */
    if (c.epilogue & 1) c.sbias = var % 2 ? c.n + 3 : 0;
    if (var % 3 == 2) { /* gaps between batches of D (poison must stay) */
      int64_t foot = c.m * c.n;
      c.sd = foot + 13;
    }
    c.pad = var >= 8 ? GKO_GEMM_PAD_ALWAYS : GKO_GEMM_PAD_AUTO;
    sweep_case(&sw, &c, 0);
  }
  sweep_end(&sw);
}

/* k = 0 and alpha = 0: D = epilogue(beta * C), exactly beta*C rounded once
 * without an epilogue; A and B are not read (NaN there, or NULL). */
GEMM_TEST(k_zero_and_alpha_zero) {
  gsweep sw = sweep_begin();
  for (int t = 0; t < kNTypes; t++)
    for (int var = 0; var < 6; var++) {
      gcase c = gc_default(kTypes[t].ab, kTypes[t].cd, 33, 17, var < 3 ? 0 : 9);
      if (var >= 3) {
        c.alpha = 0.0f;
        c.ab_nan = 1;
      }
      c.beta = var % 3 == 2 ? 0.0f : (float)t_uniform(-2, 2);
      c.epilogue = var % 3 == 1 ? GKO_EPILOGUE_BIAS_GELU_ERF : GKO_EPILOGUE_NONE;
      c.exact = c.epilogue == GKO_EPILOGUE_NONE;
      c.layout = var & 1;
      c.c_null = c.beta == 0.0f;
      sweep_case(&sw, &c, 0);
    }
  /* NULL A and B with k = 0 */
  float *d = t_dalloc(64 * 4), *cc = t_dalloc(64 * 4), hd[64], hc[64];
  for (int i = 0; i < 64; i++) hc[i] = (float)i - 20.0f;
  t_h2d(cc, hc, sizeof hc);
  T_OK(gko_gemm(sw.h, GKO_OP_N, GKO_OP_N, 8, 8, 0, 1.0f, GKO_DTYPE_F32, NULL, -1, NULL, -1, 2.0f,
                GKO_DTYPE_F32, cc, -1, d, -1, GKO_EPILOGUE_RELU, NULL, NULL));
  T_CUDA(cudaDeviceSynchronize());
  t_d2h(hd, d, sizeof hd);
  for (int i = 0; i < 64; i++) cr_expect_eq(hd[i], fmaxf(2.0f * hc[i], 0.0f), "i=%d", i);
  cudaFree(d);
  cudaFree(cc);
  sweep_end(&sw);
}

/* m = 0 or n = 0 or batch = 0: success, nothing written, NULLs allowed. */
GEMM_TEST(empty_outputs_write_nothing) {
  T_REQUIRE_GPU();
  gko_handle_t h = t_handle();
  if (plain_declines(GKO_DTYPE_F16, GKO_DTYPE_F16, 8, 8, 8, 0, 1, 0, 0) == 1) {
    gko_destroy(h); /* the backend cannot run here: its row's other tests check that */
    return;
  }
  unsigned char *d = t_dalloc(256);
  t_memset(d, T_POISON_BYTE, 256);
  const int64_t shapes[][4] = {{0, 5, 7, 1}, {5, 0, 7, 1}, {0, 0, 0, 1}, {5, 5, 5, 0}};
  for (int s = 0; s < 4; s++) {
    gko_gemm_desc_t desc;
    gko_gemm_plan_t plan;
    T_OK(gko_gemm_desc_create(&desc, GKO_DTYPE_F16, GKO_DTYPE_F16, shapes[s][0], shapes[s][1],
                              shapes[s][2]));
    T_OK(gko_gemm_desc_set(desc, GKO_GEMM_ATTR_BATCH_COUNT, shapes[s][3]));
    T_OK(gko_gemm_desc_set(desc, GKO_GEMM_ATTR_EPILOGUE, GKO_EPILOGUE_BIAS_GELU_ERF));
    T_OK(gko_gemm_desc_set(desc, GKO_GEMM_ATTR_BACKEND, g_backend));
    T_OK(gko_gemm_plan_create(h, desc, &plan));
    size_t ws = 1;
    T_OK(gko_gemm_workspace_size(plan, &ws));
    cr_expect_eq(ws, 0);
    T_OK(gko_gemm_execute(plan, 1.0f, NULL, NULL, 1.0f, NULL, NULL, NULL, NULL, 0, NULL));
    T_OK(gko_gemm_execute(plan, 1.0f, NULL, NULL, 1.0f, NULL, d, NULL, NULL, 0, NULL));
    gko_gemm_plan_destroy(plan);
    gko_gemm_desc_destroy(desc);
    if (shapes[s][3]) /* the one-shot call has one batch */
      T_OK(gko_gemm(h, GKO_OP_N, GKO_OP_T, shapes[s][0], shapes[s][1], shapes[s][2], 1.0f,
                    GKO_DTYPE_F16, NULL, -1, NULL, -1, 0.0f, GKO_DTYPE_F16, NULL, -1, NULL, -1,
                    GKO_EPILOGUE_NONE, NULL, NULL));
  }
  t_assert_poisoned(d, 256);
  cudaFree(d);
  gko_destroy(h);
}

/* beta = 0: C is never read, NaN/Inf in it (or in D beforehand) must not
 * leak; C may be NULL. */
GEMM_TEST(beta_zero_never_reads_c) {
  gsweep sw = sweep_begin();
  for (int t = 0; t < kNTypes; t++)
    for (int var = 0; var < 4; var++) {
      gcase c = gc_default(kTypes[t].ab, kTypes[t].cd, 63, 65, 31);
      c.beta = 0.0f;
      c.c_nan = 1;
      c.c_null = var == 1;
      c.in_place = var == 2; /* D itself starts full of NaN/Inf */
      c.pad = var == 3 ? GKO_GEMM_PAD_ALWAYS : GKO_GEMM_PAD_AUTO;
      c.epilogue = var == 3 ? GKO_EPILOGUE_BIAS_GELU_TANH : GKO_EPILOGUE_NONE;
      c.ldc = c.n + 2; /* C's layout differs from D's */
      if (c.in_place) c.ldc = -1;
      sweep_case(&sw, &c, 0);
    }
  sweep_end(&sw);
}

/* Pointers at every small element offset, padded leading dimensions with
 * NaN padding, plans promising 16 bytes (execute falls back) or the real
 * alignment, padding forced on, off and automatic. */
GEMM_TEST(unaligned_pointers_and_leading_dimensions, .timeout = 600) {
  gsweep sw = sweep_begin();
  for (int t = 0; t < kNTypes; t++)
    for (int var = 0; var < 12; var++) {
      gcase c = gc_default(kTypes[t].ab, kTypes[t].cd, 37 + var, 45, 29 + 2 * var);
      c.off_a = var % 8;
      c.off_b = (var * 3 + 1) % 8;
      c.off_c = (var * 5 + 2) % 8;
      c.off_d = (var * 7 + 3) % 8;
      c.off_bias = var % 2 ? 1 : 0;
      c.lda = c.k + var % 3;
      c.ldb = c.n + (var + 1) % 3;
      c.ldd = c.n + 1;
      c.ldc = c.ldd + var % 2;
      c.beta = var % 2 ? 1.0f : 0.0f;
      c.ta = var % 2 ? 0 : (int)(t_next() & 1);
      if (c.ta) c.lda = c.m + var % 3;
      c.epilogue = (var % 4 == 1) ? GKO_EPILOGUE_BIAS : (var % 4 == 3 ? GKO_EPILOGUE_BIAS_GELU_ERF : 0);
      c.pad = var % 3; /* AUTO, NEVER, ALWAYS */
      c.alignment = var >= 6 ? (int64_t)gko_dtype_size(c.ab) : 0;
      sweep_case(&sw, &c, 0);
    }
  sweep_end(&sw);
}

/* Long all-ones dot products are exact in f32 accumulation: k ones sum to
 * exactly k (representable in f16/bf16 for these k). */
GEMM_TEST(long_all_ones_dot_products_are_exact) {
  T_REQUIRE_GPU();
  gko_handle_t h = t_handle();
  const int64_t m = 48, n = 40, ks[] = {2048, 4096, 1027};
  const gko_dtype_t dts[2] = {GKO_DTYPE_F16, GKO_DTYPE_BF16};
  wsbuf w = {0};
  for (int d = 0; d < 2; d++)
    for (int kk = 0; kk < 3; kk++)
      for (int out32 = 0; out32 < 2; out32++) {
        int64_t k = ks[kk];
        gko_dtype_t cd = out32 ? GKO_DTYPE_F32 : dts[d];
        if (!out32 && dts[d] == GKO_DTYPE_BF16 && k == 1027) continue; /* 1027 not in bf16 */
        if (backend_unsupported(g_backend, dts[d])) continue;
        if (plain_declines(dts[d], cd, m, n, k, 0, 0, 0, 0)) continue; /* SM90: k = 1027 */
        uint16_t one = dts[d] == GKO_DTYPE_F16 ? 0x3c00 : 0x3f80;
        uint16_t *ha = malloc(m * k * 2), *hb = malloc(k * n * 2);
        for (int64_t i = 0; i < m * k; i++) ha[i] = one;
        for (int64_t i = 0; i < k * n; i++) hb[i] = one;
        void *da = t_dalloc(m * k * 2), *db = t_dalloc(k * n * 2), *dd = t_dalloc(m * n * 4);
        t_h2d(da, ha, m * k * 2);
        t_h2d(db, hb, k * n * 2);
        t_memset(dd, T_POISON_BYTE, m * n * 4);
        gko_gemm_desc_t desc;
        gko_gemm_plan_t plan;
        T_OK(gko_gemm_desc_create(&desc, dts[d], cd, m, n, k));
        T_OK(gko_gemm_desc_set(desc, GKO_GEMM_ATTR_BACKEND, g_backend));
        T_OK(gko_gemm_plan_create(h, desc, &plan));
        size_t need;
        T_OK(gko_gemm_workspace_size(plan, &need));
        T_OK(gko_gemm_execute(plan, 1.0f, da, db, 0.0f, NULL, dd, NULL, ws_get(&w, need + 1), need,
                              NULL));
        T_CUDA(cudaDeviceSynchronize());
        unsigned char *hd = malloc(m * n * 4);
        t_d2h(hd, dd, m * n * 4);
        for (int64_t i = 0; i < m * n; i++) {
          double got = t_hv_get(cd, hd, i);
          cr_assert_eq(got, (double)k, "%s k=%lld out %s: D[%lld] = %.9g", t_dtype_name(dts[d]),
                       (long long)k, t_dtype_name(cd), (long long)i, got);
        }
        free(hd);
        free(ha);
        free(hb);
        cudaFree(da);
        cudaFree(db);
        cudaFree(dd);
        gko_gemm_plan_destroy(plan);
        gko_gemm_desc_destroy(desc);
      }
  ws_free(&w);
  gko_destroy(h);
}

/* Shapes TMA can take (multiples of 8 elements, with odd sizes where no
 * contiguous extent depends on them): every transpose pair and layout,
 * 16-bit type pair, epilogue and fusion policy, with beta 0 over NaN/Inf
 * in C, residuals, in place, and strided batches (gaps between D's
 * batches, per-batch bias). */
GEMM_TEST(aligned_shapes_every_layout_epilogue, .timeout = 900) {
  gsweep sw = sweep_begin();
  static const int64_t sz[] = {8, 16, 40, 64, 136, 264, 37, 129};
  static const gko_dtype_t pairs[4][2] = {{GKO_DTYPE_F16, GKO_DTYPE_F16},
                                          {GKO_DTYPE_F16, GKO_DTYPE_F32},
                                          {GKO_DTYPE_BF16, GKO_DTYPE_BF16},
                                          {GKO_DTYPE_BF16, GKO_DTYPE_F32}};
  for (int t = 0; t < 4; t++) {
    if (backend_unsupported(g_backend, pairs[t][0])) continue;
    if (pairs[t][0] == GKO_DTYPE_BF16 && t_cc() < 80) continue;
    for (int lay = 0; lay < 8; lay++)
      for (int ep = 0; ep < 8; ep++) {
        gcase c = gc_default(pairs[t][0], pairs[t][1], sz[t_next() % 8], sz[t_next() % 6],
                             sz[t_next() % 6]);
        c.ta = lay & 1;
        c.tb = (lay >> 1) & 1;
        c.layout = (lay >> 2) & 1;
        c.epilogue = ep;
        c.fusion = (int)(t_next() % 3);
        if (c.fusion == GKO_GEMM_FUSION_REQUIRED && (ep & 1) && c.layout) c.fusion = 0;
        if (c.fusion == GKO_GEMM_FUSION_REQUIRED && (ep >> 1) == 2 &&
            !backend_row(g_backend)->erf_required)
          c.fusion = 0;
        c.alpha = (float)t_uniform(0.5, 1.5);
        const int v = (int)(t_next() % 4);
        c.beta = v == 0 ? 0.0f : (float)t_uniform(-1, 1);
        c.c_nan = v == 0;
        c.in_place = v == 2;
        if (v == 1) { /* D padded: by 8 elements (TMA can) or 1 (it cannot) */
          c.ldd = (c.layout ? c.m : c.n) + ((t_next() & 1) ? 8 : 1);
          /* a misaligned bias: gko's pass (FUSION_REQUIRED refuses it, tested elsewhere) */
          c.off_bias = (ep & 1) && c.fusion != GKO_GEMM_FUSION_REQUIRED && (t_next() & 1);
        }
        if (v == 3) {
          c.batch = 3;
          c.sd = c.m * c.n + 64; /* gaps between D's batches */
          if (ep & 1) c.sbias = c.layout ? c.m + 8 : c.n + 8;
        }
        sweep_case(&sw, &c, 10);
      }
  }
  sweep_end(&sw);
}

/* GELU-erf's negative tail, x in [-9, -3], in f32 D: within 1e-3 relative
 * of float64 (the erfc form; 1 - erf would lose every digit there). */
GEMM_TEST(gelu_erf_negative_tail_f32) {
  T_REQUIRE_GPU();
  gko_handle_t h = t_handle();
  const int64_t m = 64, n = 128, k = 64;
  const gko_dtype_t ab = GKO_DTYPE_BF16;
  if (backend_unsupported(g_backend, ab) || t_cc() < 80 ||
      plain_declines(ab, GKO_DTYPE_F32, m, n, k, 0, 1, GKO_EPILOGUE_BIAS_GELU_ERF, 0)) {
    gko_destroy(h);
    return;
  }
  /* A B small (|a|, |b| <= 2^-4), the bias spans the tail */
  uint16_t *ha = malloc(m * k * 2), *hb = malloc(n * k * 2);
  float *hbias = malloc(n * 4), *hd = malloc(m * n * 4);
  for (int64_t i = 0; i < m * k; i++) t_hv_set(ab, ha, i, t_uniform(-0.0625, 0.0625));
  for (int64_t i = 0; i < n * k; i++) t_hv_set(ab, hb, i, t_uniform(-0.0625, 0.0625));
  for (int64_t j = 0; j < n; j++) hbias[j] = (float)(-9.0 + 6.0 * (double)j / (double)(n - 1));
  void *da = t_dalloc(m * k * 2), *db = t_dalloc(n * k * 2), *dbias = t_dalloc(n * 4),
       *dd = t_dalloc(m * n * 4);
  t_h2d(da, ha, m * k * 2);
  t_h2d(db, hb, n * k * 2);
  t_h2d(dbias, hbias, n * 4);
  t_memset(dd, T_POISON_BYTE, m * n * 4);
  gcase c = gc_default(ab, GKO_DTYPE_F32, m, n, k);
  c.tb = 1;
  c.epilogue = GKO_EPILOGUE_BIAS_GELU_ERF;
  gko_gemm_desc_t desc = make_desc(&c);
  gko_gemm_plan_t plan;
  T_OK(gko_gemm_plan_create(h, desc, &plan));
  size_t need = 0;
  T_OK(gko_gemm_workspace_size(plan, &need));
  void *ws = need ? t_dalloc(need) : NULL;
  t_memset(dd, T_POISON_BYTE, m * n * 4);
  T_OK(gko_gemm_execute(plan, 1.0f, da, db, 0.0f, NULL, dd, dbias, ws, need, NULL));
  T_CUDA(cudaDeviceSynchronize());
  t_d2h(hd, dd, m * n * 4);
  double worst = 0;
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) {
      double x = hbias[j];
      for (int64_t p = 0; p < k; p++) x += t_hv_get(ab, ha, i * k + p) * t_hv_get(ab, hb, j * k + p);
      const double r = 0.5 * x * erfc(-x / sqrt(2.0));
      const double got = hd[i * n + j];
      const double rel = fabs(got - r) / fabs(r);
      if (!(rel <= worst)) worst = rel;
    }
  cr_expect(worst <= 1e-3, "worst relative error %.3g in the GELU-erf tail", worst);
  gko_gemm_plan_destroy(plan);
  gko_gemm_desc_destroy(desc);
  cudaFree(ws);
  cudaFree(da);
  cudaFree(db);
  cudaFree(dbias);
  cudaFree(dd);
  free(ha);
  free(hb);
  free(hbias);
  free(hd);
  gko_destroy(h);
}

/* A few large shapes, checked on sampled rows. */
GEMM_TEST(large_shapes_sampled_rows, .timeout = 900) {
  gsweep sw = sweep_begin();
  const struct {
    int64_t m, n, k;
    gko_dtype_t ab, cd;
    int ep, tb, comp;
  } L[] = {{2048, 2048, 1027, GKO_DTYPE_F16, GKO_DTYPE_F16, 0, 0, 0},
           {1000, 1000, 1000, GKO_DTYPE_BF16, GKO_DTYPE_BF16, 0, 0, 0},
           {4096, 768, 768, GKO_DTYPE_F16, GKO_DTYPE_F16, GKO_EPILOGUE_BIAS_GELU_TANH, 1, 0},
           {4096, 3072, 768, GKO_DTYPE_BF16, GKO_DTYPE_BF16, GKO_EPILOGUE_BIAS_GELU_ERF, 1, 0},
           {4096, 768, 3072, GKO_DTYPE_BF16, GKO_DTYPE_BF16, GKO_EPILOGUE_BIAS, 1, 0},
           {1024, 1024, 1027, GKO_DTYPE_F32, GKO_DTYPE_F32, 0, 0, GKO_GEMM_COMPUTE_TF32},
           {777, 1025, 2049, GKO_DTYPE_F32, GKO_DTYPE_F32, GKO_EPILOGUE_RELU, 1, 0}};
  int64_t cc = 0;
  T_OK(gko_query(GKO_QUERY_COMPUTE_CAPABILITY, 0, &cc));
  for (size_t i = 0; i < sizeof L / sizeof L[0]; i++) {
    if ((L[i].comp == GKO_GEMM_COMPUTE_TF32 || L[i].ab == GKO_DTYPE_BF16) && cc < 80) continue;
    gcase c = gc_default(L[i].ab, L[i].cd, L[i].m, L[i].n, L[i].k);
    c.epilogue = L[i].ep;
    c.tb = L[i].tb;
    c.compute = L[i].comp;
    c.beta = i % 2 ? 0.5f : 0.0f;
    c.sample_rows = 24;
    sweep_case(&sw, &c, 0);
  }
  sweep_end(&sw);
}

/* SM90's configuration per shape (gemm_sm90.c's sm90_config, docs/gemm.md):
 * the plan's description names the tile the rule gives for this GPU's SM
 * count; each plan is then run against the reference (sampled rows). */
Test(gemm_sm90, configuration_follows_the_shape, .timeout = 600) {
  T_REQUIRE_GPU();
  if (!t_sm90_built() || t_cc() != 90) cr_skip_test("no SM90 kernels for this GPU");
  int64_t sms = 0;
  T_OK(gko_query(GKO_QUERY_SM_COUNT, 0, &sms));
  gko_handle_t h = t_handle();
  const struct {
    int64_t m, n, k;
    gko_dtype_t cd;
  } S[] = {{4096, 768, 768, GKO_DTYPE_F16},   {4096, 768, 3072, GKO_DTYPE_F16},
           {4096, 3072, 768, GKO_DTYPE_F16},  {2048, 2048, 4096, GKO_DTYPE_F16},
           {4096, 768, 768, GKO_DTYPE_F32},   {520, 200, 64, GKO_DTYPE_F16}};
  gsweep sw = sweep_begin();
  for (size_t i = 0; i < sizeof S / sizeof S[0]; i++) {
    /* x W^T row-major: the lt view is n x m */
    const int64_t ml = S[i].n, nl = S[i].m, rows = (ml + 127) / 128;
    const int64_t t256 = rows * ((nl + 255) / 256), t192 = rows * ((nl + 191) / 192);
    const char *want = S[i].cd == GKO_DTYPE_F32                 ? "128x256x64"
                       : t256 < sms                            ? (t192 <= sms ? "128x192x64"
                                                                              : "128x256x64")
                       : (S[i].k >= 2048 && t256 >= 2 * sms) ? "128x256x64"
                                                               : "128x128x64";
    gko_gemm_desc_t d;
    gko_gemm_plan_t p;
    T_OK(gko_gemm_desc_create(&d, GKO_DTYPE_F16, S[i].cd, S[i].m, S[i].n, S[i].k));
    T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_TRANSB, 1));
    T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_BACKEND, GKO_GEMM_BACKEND_SM90));
    T_OK(gko_gemm_plan_create(h, d, &p));
    char text[2048];
    T_OK(gko_gemm_plan_describe(p, text, sizeof text, NULL));
    cr_expect(strstr(text, want) != NULL, "%lld x %lld x %lld on %lld SMs: want %s: %s",
              (long long)S[i].m, (long long)S[i].n, (long long)S[i].k, (long long)sms, want,
              text);
    gko_gemm_plan_destroy(p);
    gko_gemm_desc_destroy(d);
    gcase c = gc_default(GKO_DTYPE_F16, S[i].cd, S[i].m, S[i].n, S[i].k);
    c.tb = 1;
    c.backend = GKO_GEMM_BACKEND_SM90;
    c.epilogue = i % 2 ? GKO_EPILOGUE_BIAS_GELU_ERF : GKO_EPILOGUE_BIAS;
    c.beta = i % 3 ? 0.0f : 0.5f;
    c.sample_rows = 24;
    sweep_case(&sw, &c, 0);
  }
  sweep_end(&sw);
  gko_destroy(h);
}

/* The plan says what it chose. */
Test(gemm, plan_backend_describe_workspace) {
  T_REQUIRE_GPU();
  gko_handle_t h = t_handle();
  gko_gemm_desc_t d;
  gko_gemm_plan_t p;
  T_OK(gko_gemm_desc_create(&d, GKO_DTYPE_F16, GKO_DTYPE_F16, 4096, 4096, 1027));
  T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_EPILOGUE, GKO_EPILOGUE_BIAS_GELU_ERF));
  T_OK(gko_gemm_plan_create(h, d, &p));
  gko_gemm_backend_t be = GKO_GEMM_BACKEND_AUTO;
  T_OK(gko_gemm_plan_backend(p, &be));
  cr_expect_eq(be, GKO_GEMM_BACKEND_CUBLASLT);
  size_t need = 0, need2 = 0, ws = 0;
  T_OK(gko_gemm_plan_describe(p, NULL, 0, &need));
  cr_assert(need > 20);
  char *text = malloc(need);
  T_OK(gko_gemm_plan_describe(p, text, need, &need2));
  cr_expect_eq(need, need2);
  cr_expect_eq(strlen(text) + 1, need);
  cr_log_info("plan: %s", text);
  cr_expect(strstr(text, "cuBLASLt") != NULL, "%s", text);
  cr_expect(strstr(text, "padded") != NULL, "k = 1027 pads by default: %s", text);
  cr_expect(strstr(text, "GELU-erf") != NULL, "%s", text);
  T_OK(gko_gemm_workspace_size(p, &ws));
  /* A and B copied with k rounded up to 1032 */
  cr_expect(ws >= 4096 * 1032 * 2, "workspace %zu holds the padded copies", ws);
  char small[8];
  T_OK(gko_gemm_plan_describe(p, small, sizeof small, NULL));
  cr_expect_eq(strlen(small), sizeof small - 1);
  T_FAILS(GKO_STATUS_INVALID_VALUE, gko_gemm_plan_describe(p, NULL, 4, NULL));
  free(text);
  gko_gemm_plan_destroy(p);
  /* padding off: no copies in the workspace */
  T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_PAD, GKO_GEMM_PAD_NEVER));
  T_OK(gko_gemm_plan_create(h, d, &p));
  T_OK(gko_gemm_workspace_size(p, &ws));
  cr_expect(ws <= 32 * 1024 * 1024u + 255, "no padded copies: %zu", ws);
  gko_gemm_plan_destroy(p);
  /* MAX_WORKSPACE = 0: a workspace-free plan */
  T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_PAD, GKO_GEMM_PAD_AUTO));
  T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_MAX_WORKSPACE, 0));
  T_OK(gko_gemm_plan_create(h, d, &p));
  T_OK(gko_gemm_workspace_size(p, &ws));
  cr_expect_eq(ws, 0);
  gko_gemm_plan_destroy(p);
  gko_gemm_desc_destroy(d);
  gko_destroy(h);
}

/* cuBLASLt's fused GELU-tanh against gko's pass in the negative tail: the
 * fused one is reported (cuBLASLt's tail flushes early), gko's checked. */
Test(gemm, gelu_tanh_tail_fused_vs_gko_pass) {
  T_REQUIRE_GPU();
  gko_handle_t h = t_handle();
  const int64_t m = 1024, n = 8, k = 8; /* D[i][j] = x_i exactly: A[i][0] = x_i, B row 0 ones */
  float *ha = calloc(m * k, 4), *hb = calloc(k * n, 4), *hd = malloc(m * n * 4);
  for (int64_t i = 0; i < m; i++) ha[i * k] = -12.0f + 11.0f * (float)i / (float)m; /* [-12, -1) */
  for (int64_t j = 0; j < n; j++) hb[j] = 1.0f;
  float *da = t_dalloc(m * k * 4), *db = t_dalloc(k * n * 4), *dd = t_dalloc(m * n * 4);
  t_h2d(da, ha, m * k * 4);
  t_h2d(db, hb, k * n * 4);
  for (int fu = 0; fu < 3; fu += 2) {
    gko_gemm_desc_t d;
    gko_gemm_plan_t p;
    T_OK(gko_gemm_desc_create(&d, GKO_DTYPE_F32, GKO_DTYPE_F32, m, n, k));
    T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_EPILOGUE, GKO_EPILOGUE_GELU_TANH));
    T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_FUSION, fu));
    T_OK(gko_gemm_plan_create(h, d, &p));
    size_t need;
    T_OK(gko_gemm_workspace_size(p, &need));
    void *ws = need ? t_dalloc(need) : NULL;
    T_OK(gko_gemm_execute(p, 1.0f, da, db, 0.0f, NULL, dd, NULL, ws, need, NULL));
    T_CUDA(cudaDeviceSynchronize());
    t_d2h(hd, dd, m * n * 4);
    double max_abs = 0, max_rel = 0, first_zero = -INFINITY;
    for (int64_t i = 0; i < m; i++) {
      double x = ha[i * k], r = t_ref_act(3, x), got = hd[i * n];
      double ea = fabs(got - r);
      if (ea > max_abs) max_abs = ea;
      /* relative error where the result is a normal f32 (the far tail
       * underflows: gko documents an absolute (1 + |x|) FLT_MIN there) */
      if (fabs(r) > 1e-30 && ea / fabs(r) > max_rel) max_rel = ea / fabs(r);
      if (fabs(r) <= 1e-30 && ea > (1 + fabs(x)) * FLT_MIN && fu == GKO_GEMM_FUSION_NEVER)
        max_rel = INFINITY;
      if (got == 0 && x > first_zero) first_zero = x;
    }
    cr_log_info("GELU-tanh tail (x in [-12, -1)), %s: max abs err %.3g, max rel err %.3g, "
                "largest x flushed to 0: %g",
                fu ? "gko's pass (FUSION_NEVER)" : "cuBLASLt fused", max_abs, max_rel,
                first_zero);
    if (fu == GKO_GEMM_FUSION_NEVER)
      cr_expect(max_rel < 1e-5, "gko's GELU pass keeps relative accuracy: %g", max_rel);
    else
      cr_expect(max_abs < 2e-3 * 12, "fused GELU abs error %g", max_abs);
    if (ws) cudaFree(ws);
    gko_gemm_plan_destroy(p);
    gko_gemm_desc_destroy(d);
  }
  free(ha);
  free(hb);
  free(hd);
  cudaFree(da);
  cudaFree(db);
  cudaFree(dd);
  gko_destroy(h);
}

/* ---- graph capture ------------------------------------------------------------ */

static void capture_vs_eager(gko_handle_t h, gko_dtype_t ab, gko_dtype_t cd, int64_t m, int64_t n,
                             int64_t k, int ep, int pad, int offset_elems, int oneshot) {
  if (backend_unsupported(g_backend, ab)) return;
  if (plain_declines(ab, cd, m, n, k, 0, 0, ep, offset_elems)) return; /* SM90's limits */
  size_t esab = gko_dtype_size(ab), escd = gko_dtype_size(cd);
  size_t ba = (m * k + 8) * esab, bb = (k * n + 8) * esab, bd = (m * n + 8) * escd;
  unsigned char *ha = malloc(ba), *hb = malloc(bb), *hbias = malloc(n * escd + 16);
  for (size_t i = 0; i < ba / esab; i++) t_hv_set(ab, ha, i, t_uniform(-1, 1));
  for (size_t i = 0; i < bb / esab; i++) t_hv_set(ab, hb, i, t_uniform(-1, 1));
  for (int64_t i = 0; i < n; i++) t_hv_set(cd, hbias, i, t_uniform(-1, 1));
  unsigned char *da = t_dalloc(ba), *db = t_dalloc(bb), *d1 = t_dalloc(bd), *d2 = t_dalloc(bd),
                *dbias = t_dalloc(n * escd + 16);
  t_h2d(da, ha, ba);
  t_h2d(db, hb, bb);
  t_h2d(dbias, hbias, n * escd);
  t_memset(d1, T_POISON_BYTE, bd);
  t_memset(d2, T_POISON_BYTE, bd);
  const void *A = da + offset_elems * esab, *B = db + offset_elems * esab;
  cudaStream_t st;
  T_CUDA(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  gko_gemm_desc_t desc;
  gko_gemm_plan_t plan;
  T_OK(gko_gemm_desc_create(&desc, ab, cd, m, n, k));
  T_OK(gko_gemm_desc_set(desc, GKO_GEMM_ATTR_EPILOGUE, ep));
  T_OK(gko_gemm_desc_set(desc, GKO_GEMM_ATTR_PAD, pad));
  T_OK(gko_gemm_desc_set(desc, GKO_GEMM_ATTR_BACKEND, g_backend));
  T_OK(gko_gemm_plan_create(h, desc, &plan));
  size_t need;
  T_OK(gko_gemm_workspace_size(plan, &need));
  void *ws = need ? t_dalloc(need) : NULL;
  if (oneshot)
    T_OK(gko_gemm(h, GKO_OP_N, GKO_OP_N, m, n, k, 1.0f, ab, A, -1, B, -1, 0.0f, cd, NULL, -1, d1,
                  -1, ep, dbias, st));
  else
    T_OK(gko_gemm_execute(plan, 1.0f, A, B, 0.0f, NULL, d1, dbias, ws, need, st));
  T_CUDA(cudaStreamSynchronize(st));
  cudaGraph_t g;
  cudaGraphExec_t ge;
  T_CUDA(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
  gko_status_t s = oneshot ? gko_gemm(h, GKO_OP_N, GKO_OP_N, m, n, k, 1.0f, ab, A, -1, B, -1, 0.0f,
                                      cd, NULL, -1, d2, -1, ep, dbias, st)
                           : gko_gemm_execute(plan, 1.0f, A, B, 0.0f, NULL, d2, dbias, ws, need, st);
  char detail[512];
  snprintf(detail, sizeof detail, "%s", gko_last_error_detail());
  cudaError_t ce = cudaStreamEndCapture(st, &g);
  cr_assert_eq(s, GKO_STATUS_SUCCESS, "under capture: %s: %s", gko_status_name(s), detail);
  cr_assert_eq(ce, cudaSuccess, "capture invalidated: %s", cudaGetErrorString(ce));
  T_CUDA(cudaGraphInstantiate(&ge, g, 0));
  for (int r = 0; r < 3; r++) T_CUDA(cudaGraphLaunch(ge, st));
  T_CUDA(cudaStreamSynchronize(st));
  unsigned char *h1 = malloc(bd), *h2 = malloc(bd);
  t_d2h(h1, d1, bd);
  t_d2h(h2, d2, bd);
  cr_expect_eq(memcmp(h1, h2, bd), 0,
               "graph replay differs from eager (%s/%s %lldx%lldx%lld ep %d pad %d off %d oneshot %d)",
               t_dtype_name(ab), t_dtype_name(cd), (long long)m, (long long)n, (long long)k, ep, pad, offset_elems,
               oneshot);
  cudaGraphExecDestroy(ge);
  cudaGraphDestroy(g);
  cudaStreamDestroy(st);
  gko_gemm_plan_destroy(plan);
  gko_gemm_desc_destroy(desc);
  free(ha);
  free(hb);
  free(hbias);
  free(h1);
  free(h2);
  if (ws) cudaFree(ws);
  cudaFree(da);
  cudaFree(db);
  cudaFree(d1);
  cudaFree(d2);
  cudaFree(dbias);
}

GEMM_TEST(graph_capture_matches_eager) {
  gko_handle_t h = t_gpu_setup(NULL);
  /* plain, fused epilogue, two-pass GELU-erf, padded copies, an execute
   * whose pointers are less aligned than the plan (host-side fallback under
   * capture), and the one-shot call (stream-ordered workspace). */
  capture_vs_eager(h, GKO_DTYPE_F16, GKO_DTYPE_F16, 512, 384, 256, GKO_EPILOGUE_NONE, 0, 0, 0);
  capture_vs_eager(h, GKO_DTYPE_BF16, GKO_DTYPE_BF16, 512, 384, 256, GKO_EPILOGUE_BIAS_GELU_TANH, 0, 0, 0);
  capture_vs_eager(h, GKO_DTYPE_F16, GKO_DTYPE_F32, 256, 128, 200, GKO_EPILOGUE_BIAS_GELU_ERF, 0, 0, 0);
  capture_vs_eager(h, GKO_DTYPE_F16, GKO_DTYPE_F16, 300, 264, 1027, GKO_EPILOGUE_BIAS, GKO_GEMM_PAD_ALWAYS, 0, 0);
  capture_vs_eager(h, GKO_DTYPE_F32, GKO_DTYPE_F32, 256, 128, 64, GKO_EPILOGUE_RELU, GKO_GEMM_PAD_NEVER, 1, 0);
  capture_vs_eager(h, GKO_DTYPE_F16, GKO_DTYPE_F16, 256, 256, 256, GKO_EPILOGUE_BIAS_RELU, 0, 0, 1);
  /* the one-shot call with misaligned operands: its padding workspace comes
   * from cudaMallocAsync inside the capture (a graph memory node, whose
   * address the driver reports as unregistered until the graph runs) */
  capture_vs_eager(h, GKO_DTYPE_F16, GKO_DTYPE_F16, 256, 200, 1027, GKO_EPILOGUE_BIAS, 0, 1, 1);
  /* decode shapes: WMMA's skinny kernel with split-K (two kernels) and
   * without, misaligned (plain loads) */
  capture_vs_eager(h, GKO_DTYPE_F16, GKO_DTYPE_F16, 4, 300, 4096, GKO_EPILOGUE_BIAS_GELU_ERF, 0, 0, 0);
  capture_vs_eager(h, GKO_DTYPE_BF16, GKO_DTYPE_F32, 1, 2112, 512, GKO_EPILOGUE_NONE, 0, 1, 0);
  gko_destroy(h);
}

/* ---- threads ------------------------------------------------------------------ */

typedef struct {
  gko_handle_t h;
  int id, bad;
  uint64_t seed;
} thread_arg;

static void *thread_main(void *p) {
  thread_arg *a = p;
  cudaStream_t st;
  cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking);
  wsbuf w = {0};
  for (int r = 0; r < 12; r++) {
    /* shapes overlap between threads: the cache is shared and contended */
    gcase c = gc_default(r % 2 ? GKO_DTYPE_F16 : GKO_DTYPE_BF16, GKO_DTYPE_F32, 64 + 16 * (r % 3),
                         96 + a->id % 2, 80 + 8 * (r % 4));
    c.epilogue = r % 8;
    c.beta = r % 2 ? 0.5f : 0.0f;
    c.off_a = (r + a->id) % 3;
    a->bad += run_case(a->h, &c, st, &w);
  }
  ws_free(&w);
  cudaStreamDestroy(st);
  return NULL;
}

GEMM_TEST(handle_shared_by_threads_with_own_workspaces, .timeout = 600) {
  uint64_t seed;
  gko_handle_t h = t_gpu_setup(&seed);
  enum { N = 6 };
  pthread_t th[N];
  thread_arg args[N];
  for (int i = 0; i < N; i++) {
    args[i].h = h;
    args[i].id = i;
    args[i].bad = 0;
    args[i].seed = seed;
    pthread_create(&th[i], NULL, thread_main, &args[i]);
  }
  int bad = 0;
  for (int i = 0; i < N; i++) {
    pthread_join(th[i], NULL);
    bad += args[i].bad;
  }
  cr_expect_eq(bad, 0, "seed %llu", (unsigned long long)seed);
  gko_destroy(h);
}

/* ---- bad arguments with real pointers: status, detail, D untouched ------------ */

Test(gemm, bad_arguments_leave_output_untouched) {
  T_REQUIRE_GPU();
  gko_handle_t h = t_handle();
  const int64_t m = 64, n = 48, k = 40;
  const size_t dbytes = m * n * 2 + 64;
  unsigned char *a = t_dalloc(m * k * 2 + 64), *b = t_dalloc(k * n * 2 + 64),
                *c = t_dalloc(dbytes), *d = t_dalloc(dbytes), *bias = t_dalloc(n * 2 + 64);
  t_memset(a, 0x3c, m * k * 2 + 64);
  t_memset(b, 0x3c, k * n * 2 + 64);
  t_memset(c, 0x3c, dbytes);
  t_memset(bias, 0x3c, n * 2 + 64);
  t_memset(d, T_POISON_BYTE, dbytes);
  gko_gemm_desc_t desc;
  gko_gemm_plan_t plan = NULL, keep = (gko_gemm_plan_t)(uintptr_t)0x77;
  T_OK(gko_gemm_desc_create(&desc, GKO_DTYPE_F16, GKO_DTYPE_F16, m, n, k));
  /* plan-time: NOT_SUPPORTED choices.  WMMA takes no f32 inputs. */
  T_OK(gko_gemm_desc_set(desc, GKO_GEMM_ATTR_BACKEND, GKO_GEMM_BACKEND_WMMA));
  T_OK(gko_gemm_desc_set(desc, GKO_GEMM_ATTR_AB_DTYPE, GKO_DTYPE_F32));
  T_OK(gko_gemm_desc_set(desc, GKO_GEMM_ATTR_CD_DTYPE, GKO_DTYPE_F32));
  plan = keep;
  T_FAILS(GKO_STATUS_NOT_SUPPORTED, gko_gemm_plan_create(h, desc, &plan));
  cr_expect(strstr(gko_last_error_detail(), "WMMA") != NULL);
  T_OK(gko_gemm_desc_set(desc, GKO_GEMM_ATTR_AB_DTYPE, GKO_DTYPE_F16));
  T_OK(gko_gemm_desc_set(desc, GKO_GEMM_ATTR_CD_DTYPE, GKO_DTYPE_F16));
  /* cuBLASLt alone cannot fuse these (AUTO would take WMMA, which can) */
  T_OK(gko_gemm_desc_set(desc, GKO_GEMM_ATTR_BACKEND, GKO_GEMM_BACKEND_CUBLASLT));
  T_OK(gko_gemm_desc_set(desc, GKO_GEMM_ATTR_EPILOGUE, GKO_EPILOGUE_BIAS_GELU_ERF));
  T_OK(gko_gemm_desc_set(desc, GKO_GEMM_ATTR_FUSION, GKO_GEMM_FUSION_REQUIRED));
  T_FAILS(GKO_STATUS_NOT_SUPPORTED, gko_gemm_plan_create(h, desc, &plan));
  cr_expect(strstr(gko_last_error_detail(), "GELU-erf") != NULL);
  T_OK(gko_gemm_desc_set(desc, GKO_GEMM_ATTR_EPILOGUE, GKO_EPILOGUE_BIAS));
  T_OK(gko_gemm_desc_set(desc, GKO_GEMM_ATTR_ALIGNMENT, 2));
  T_FAILS(GKO_STATUS_NOT_SUPPORTED, gko_gemm_plan_create(h, desc, &plan));
  T_OK(gko_gemm_desc_set(desc, GKO_GEMM_ATTR_ALIGNMENT, 16));
  T_OK(gko_gemm_desc_set(desc, GKO_GEMM_ATTR_COMPUTE, GKO_GEMM_COMPUTE_F16_ACCUMULATE));
  T_OK(gko_gemm_desc_set(desc, GKO_GEMM_ATTR_CD_DTYPE, GKO_DTYPE_F32));
  T_FAILS(GKO_STATUS_NOT_SUPPORTED, gko_gemm_plan_create(h, desc, &plan));
  T_OK(gko_gemm_desc_set(desc, GKO_GEMM_ATTR_CD_DTYPE, GKO_DTYPE_F16));
  T_OK(gko_gemm_desc_set(desc, GKO_GEMM_ATTR_COMPUTE, GKO_GEMM_COMPUTE_DEFAULT));
  cr_expect_eq(plan, keep, "plan written on failure");
  /* a valid plan with a forced fused bias */
  T_OK(gko_gemm_plan_create(h, desc, &plan));
  size_t need = 0;
  T_OK(gko_gemm_workspace_size(plan, &need));
  void *ws = t_dalloc(need + 512);
  /* misaligned bias with fusion forced */
  T_FAILS(GKO_STATUS_INVALID_VALUE,
          gko_gemm_execute(plan, 1.0f, a, b, 0.0f, NULL, d, bias + 2, ws, need, NULL));
  cr_expect(strstr(gko_last_error_detail(), "bias") != NULL);
  /* NULL pointers the call needs */
  T_FAILS(GKO_STATUS_INVALID_VALUE,
          gko_gemm_execute(plan, 1.0f, NULL, b, 0.0f, NULL, d, bias, ws, need, NULL));
  cr_expect(strstr(gko_last_error_detail(), "a is NULL") != NULL, "%s", gko_last_error_detail());
  T_FAILS(GKO_STATUS_INVALID_VALUE,
          gko_gemm_execute(plan, 1.0f, a, NULL, 0.0f, NULL, d, bias, ws, need, NULL));
  T_FAILS(GKO_STATUS_INVALID_VALUE,
          gko_gemm_execute(plan, 1.0f, a, b, 0.5f, NULL, d, bias, ws, need, NULL));
  cr_expect(strstr(gko_last_error_detail(), "beta") != NULL);
  T_FAILS(GKO_STATUS_INVALID_VALUE,
          gko_gemm_execute(plan, 1.0f, a, b, 0.0f, NULL, d, NULL, ws, need, NULL));
  T_FAILS(GKO_STATUS_INVALID_VALUE,
          gko_gemm_execute(plan, 1.0f, a, b, 0.0f, NULL, NULL, bias, ws, need, NULL));
  /* element misalignment */
  T_FAILS(GKO_STATUS_INVALID_VALUE,
          gko_gemm_execute(plan, 1.0f, a + 1, b, 0.0f, NULL, d, bias, ws, need, NULL));
  T_FAILS(GKO_STATUS_INVALID_VALUE,
          gko_gemm_execute(plan, 1.0f, a, b, 0.0f, NULL, d + 1, bias, ws, need, NULL));
  /* workspace */
  if (need > 0) {
    T_FAILS(GKO_STATUS_INSUFFICIENT_WORKSPACE,
            gko_gemm_execute(plan, 1.0f, a, b, 0.0f, NULL, d, bias, ws, need - 1, NULL));
    T_FAILS(GKO_STATUS_INSUFFICIENT_WORKSPACE,
            gko_gemm_execute(plan, 1.0f, a, b, 0.0f, NULL, d, bias, NULL, 0, NULL));
  }
  T_FAILS(GKO_STATUS_INVALID_VALUE,
          gko_gemm_execute(plan, 1.0f, a, b, 0.0f, NULL, d, bias, NULL, need + 1, NULL));
  gko_gemm_plan_destroy(plan);
  /* in place with different layouts */
  T_OK(gko_gemm_desc_set(desc, GKO_GEMM_ATTR_FUSION, GKO_GEMM_FUSION_AUTO));
  T_OK(gko_gemm_desc_set(desc, GKO_GEMM_ATTR_EPILOGUE, GKO_EPILOGUE_NONE));
  T_OK(gko_gemm_desc_set(desc, GKO_GEMM_ATTR_LDC, n + 8));
  T_OK(gko_gemm_plan_create(h, desc, &plan));
  T_OK(gko_gemm_workspace_size(plan, &need));
  cudaFree(ws);
  ws = t_dalloc(need + 512);
  T_FAILS(GKO_STATUS_INVALID_VALUE,
          gko_gemm_execute(plan, 1.0f, a, b, 1.0f, d, d, NULL, ws, need, NULL));
  cr_expect(strstr(gko_last_error_detail(), "in place") != NULL, "%s", gko_last_error_detail());
  gko_gemm_plan_destroy(plan);
  /* one-shot with too-small ld */
  T_FAILS(GKO_STATUS_INVALID_VALUE,
          gko_gemm(h, GKO_OP_N, GKO_OP_N, m, n, k, 1.0f, GKO_DTYPE_F16, a, k - 1, b, -1, 0.0f,
                   GKO_DTYPE_F16, NULL, -1, d, -1, GKO_EPILOGUE_NONE, NULL, NULL));
  /* pageable host memory the GPU cannot read */
  int pageable = 0;
  T_CUDA(cudaDeviceGetAttribute(&pageable, cudaDevAttrPageableMemoryAccess, 0));
  if (!pageable) {
    uint16_t *ha = calloc(m * k, 2);
    T_FAILS(GKO_STATUS_INVALID_VALUE,
            gko_gemm(h, GKO_OP_N, GKO_OP_N, m, n, k, 1.0f, GKO_DTYPE_F16, ha, -1, b, -1, 0.0f,
                     GKO_DTYPE_F16, NULL, -1, d, -1, GKO_EPILOGUE_NONE, NULL, NULL));
    free(ha);
  }
  t_assert_poisoned(d, dbytes);
  cudaFree(ws);
  cudaFree(a);
  cudaFree(b);
  cudaFree(c);
  cudaFree(d);
  cudaFree(bias);
  gko_gemm_desc_destroy(desc);
  gko_destroy(h);
}

/* ====================== WMMA: skinny kernel, split-K, autotune ===================== */

/* m = 1..16 rows against wide weights, both weight layouts (W [n, k] with
 * transb, B [k, n]), f16 and bf16, epilogues, beta, a column-major problem
 * (n small: the other side of the kernel's mapping), batches, a misaligned
 * activation and the split-K path (n small enough that k is split) and its
 * single-split form (MAX_WORKSPACE = 0). */
Test(gemm_wmma, skinny_m1_to_16_against_float64, .timeout = 900) {
  gsweep sw = sweep_begin();
  g_backend = GKO_GEMM_BACKEND_WMMA;
  const int cc = t_cc();
  const int64_t ns[] = {5, 64, 300, 2100}, ks[] = {7, 64, 1027, 3000};
  for (int m = 1; m <= 16; m++)
    for (int var = 0; var < 8; var++) {
      const gko_dtype_t ab = (var & 1) && cc >= 80 ? GKO_DTYPE_BF16 : GKO_DTYPE_F16;
      const gko_dtype_t cd = (var & 2) ? GKO_DTYPE_F32 : ab;
      gcase c = gc_default(ab, cd, m, ns[(m + var) % 4], ks[(m / 4 + var) % 4]);
      c.tb = (var >> 2) & 1;
      c.epilogue = (m + var) % 8;
      c.beta = var % 3 == 0 ? 0.5f : 0.0f;
      c.alpha = 1.5f;
      if (m % 5 == 0) c.layout = GKO_LAYOUT_COL_MAJOR;
      if (m % 7 == 0) c.batch = 3;
      if (m % 6 == 0) c.off_a = 1; /* X misaligned: plain loads */
      if (m % 4 == 3) c.ta = 1;
      if (var == 7) c.max_workspace = 0; /* no split-K partials */
      if (m == 16 && var == 0) { /* both small: the kernel picks the larger side */
        c.n = 12;
      }
      sweep_case(&sw, &c, 20);
    }
  sweep_end(&sw);
}

/* The decode kernel (sm_80+, x W^T with k contiguous in both operands, and
 * x B with B's rows contiguous): the plan names it; decode shapes, k with
 * a tail in the last 8 (vectors read partly past k must not be), padded
 * ld, rows not a multiple of 16, k split (few rows), batches, m = 1, 8 and 9 (one or two mma column tiles), many
 * rows (2 and 1 warps per 16-row tile; at m > 8 the variant with two blocks
 * per SM where it fits), and an ld that is not a multiple of 8 (the skinny
 * kernel then).  x B: rows not a multiple of 64 or 8, k with a tail in the
 * last 32, both tile heights. */
Test(gemm_wmma, decode_kernel_against_float64, .timeout = 600) {
  gsweep sw = sweep_begin();
  if (t_cc() < 80) cr_skip("the decode kernel needs sm_80 (this GPU: sm_%d)", t_cc());
  const int fits = decode_fits(); /* else the SKINNY kernel serves the same cases */
  g_backend = GKO_GEMM_BACKEND_WMMA;
  const struct {
    int64_t m, n, k, ld_pad, batch; /* ld_pad: lda = k + ld_pad, ldb = (kn ? n : k) + ld_pad */
    int ab, ep;
    int decode; /* the plan names the decode kernel */
    int kn;     /* x B: B stored [k, n] (W's rows contiguous), else x W^T */
  } cs[] = {{1, 4096, 4096, 0, 1, 0, 0, 1, 0},   {16, 4104, 4100, 4, 1, 1, 4, 1, 0},
            {9, 40, 8192, 0, 1, 0, 5, 1, 0},     {8, 1000, 1027, 5, 2, 1, 3, 1, 0},
            {3, 2100, 3000, 8, 1, 0, 7, 1, 0},   {16, 300, 4096 + 5, 3, 1, 1, 6, 1, 0},
            {5, 1000, 1000, 1, 1, 0, 1, 0, 0},   {1, 11008, 640, 0, 1, 0, 2, 1, 0},
            {12, 20000, 136, 8, 1, 1, 3, 1, 0},  {16, 3000, 520, 8, 4, 0, 1, 1, 0},
            /* x B */
            {1, 4096, 4096, 0, 1, 0, 0, 1, 1}, {16, 4100, 4100, 4, 1, 1, 4, 1, 1},
            {9, 40, 8192, 0, 1, 0, 5, 1, 1},   {8, 1000, 1027, 5, 2, 1, 3, 0, 1},
            {12, 20000, 136, 8, 1, 1, 3, 1, 1}, {3, 2100, 3004, 4, 3, 0, 7, 1, 1},
            {16, 40, 8192, 0, 1, 0, 1, 1, 1}};
  int narrow = 0, wide = 0;
  for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
    const gko_dtype_t ab = cs[i].ab ? GKO_DTYPE_BF16 : GKO_DTYPE_F16;
    gcase c = gc_default(ab, ab, cs[i].m, cs[i].n, cs[i].k);
    c.tb = !cs[i].kn;
    c.ldb = (cs[i].kn ? cs[i].n : cs[i].k) + cs[i].ld_pad;
    c.lda = cs[i].k + cs[i].ld_pad; /* X: k contiguous */
    c.batch = cs[i].batch;
    c.epilogue = cs[i].ep;
    c.alpha = 1.25f;
    c.beta = i % 2 ? 0.5f : 0.0f;
    c.sample_rows = 4;
    char why[2048];
    plan_why(sw.h, &c, why, sizeof why, NULL);
    cr_expect((strstr(why, "decode kernel") != NULL) == (cs[i].decode && fits), "case %zu: %s",
              i, why);
    if (cs[i].kn) {
      wide += strstr(why, "64 of its rows") != NULL;
      narrow += strstr(why, "16 of its rows") != NULL;
    }
    sweep_case(&sw, &c, 0);
  }
  /* x B has two kernels (16- and 64-row tiles), chosen by how each would
   * fill the GPU: on 100+ SMs these cases take both */
  int sms = 0;
  T_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  cr_log_info("x B decode cases: %d with 16-row tiles, %d with 64-row tiles (%d SMs)", narrow,
              wide, sms);
  if (fits && sms >= 100) cr_expect(narrow > 0 && wide > 0, "16-row %d, 64-row %d", narrow, wide);
  sweep_end(&sw);
}

/* The plan says skinny / split-K, the workspace holds the partials, and two
 * runs (the workspace poisoned in between) are bitwise equal. */
Test(gemm_wmma, splitk_results_are_bitwise_reproducible) {
  gko_handle_t h = t_gpu_setup(NULL);
  const int64_t shapes[][3] = {{4, 300, 8192}, {1, 64, 4096}, {16, 1000, 2048}, {3, 4096, 4096}};
  for (int sh = 0; sh < 4; sh++)
    for (int tb = 0; tb < 2; tb++) {
      const int64_t m = shapes[sh][0], n = shapes[sh][1], k = shapes[sh][2];
      gko_gemm_desc_t desc;
      gko_gemm_plan_t plan;
      T_OK(gko_gemm_desc_create(&desc, GKO_DTYPE_F16, GKO_DTYPE_F16, m, n, k));
      T_OK(gko_gemm_desc_set(desc, GKO_GEMM_ATTR_TRANSB, tb));
      T_OK(gko_gemm_desc_set(desc, GKO_GEMM_ATTR_EPILOGUE, GKO_EPILOGUE_BIAS_GELU_TANH));
      T_OK(gko_gemm_desc_set(desc, GKO_GEMM_ATTR_BACKEND, GKO_GEMM_BACKEND_WMMA));
      T_OK(gko_gemm_plan_create(h, desc, &plan));
      char why[2048];
      T_OK(gko_gemm_plan_describe(plan, why, sizeof why, NULL));
      cr_log_info("plan %lldx%lldx%lld tb %d: %s", (long long)m, (long long)n, (long long)k, tb, why);
      cr_expect(strstr(why, "skinny") != NULL, "%s", why);
      size_t need = 0;
      T_OK(gko_gemm_workspace_size(plan, &need));
      if (sh == 0) cr_expect(strstr(why, "split-K") != NULL && need > 0, "%s", why);
      uint16_t *ha = malloc(m * k * 2), *hb = malloc(k * n * 2), *hbias = malloc(n * 2);
      for (int64_t i = 0; i < m * k; i++) ha[i] = t_double_to_f16(t_uniform(-1, 1));
      for (int64_t i = 0; i < k * n; i++) hb[i] = t_double_to_f16(t_uniform(-1, 1));
      for (int64_t i = 0; i < n; i++) hbias[i] = t_double_to_f16(t_uniform(-1, 1));
      void *da = t_dalloc(m * k * 2), *db = t_dalloc(k * n * 2), *dbias = t_dalloc(n * 2);
      void *d1 = t_dalloc(m * n * 2), *d2 = t_dalloc(m * n * 2), *ws = t_dalloc(need + 1);
      t_h2d(da, ha, m * k * 2);
      t_h2d(db, hb, k * n * 2);
      t_h2d(dbias, hbias, n * 2);
      t_memset(ws, 0x00, need + 1);
      T_OK(gko_gemm_execute(plan, 1.0f, da, db, 0.0f, NULL, d1, dbias, ws, need, NULL));
      t_memset(ws, T_POISON_BYTE, need + 1);
      T_OK(gko_gemm_execute(plan, 1.0f, da, db, 0.0f, NULL, d2, dbias, ws, need, NULL));
      T_CUDA(cudaDeviceSynchronize());
      uint16_t *h1 = malloc(m * n * 2), *h2 = malloc(m * n * 2);
      t_d2h(h1, d1, m * n * 2);
      t_d2h(h2, d2, m * n * 2);
      cr_expect_eq(memcmp(h1, h2, m * n * 2), 0, "two runs differ (%lldx%lldx%lld tb %d)",
                   (long long)m, (long long)n, (long long)k, tb);
      /* and they are right: one row against float64 */
      double err2 = 0, ref2 = 0;
      for (int64_t j = 0; j < n; j++) {
        double sum = t_hv_get(GKO_DTYPE_F16, hbias, j);
        for (int64_t p = 0; p < k; p++)
          sum += t_hv_get(GKO_DTYPE_F16, ha, (m - 1) * k + p) *
                 t_hv_get(GKO_DTYPE_F16, hb, tb ? j * k + p : p * n + j);
        double r = t_ref_act(3, sum), got = t_hv_get(GKO_DTYPE_F16, h1, (m - 1) * n + j);
        err2 += (got - r) * (got - r);
        ref2 += r * r;
      }
      cr_expect(sqrt(err2 / ref2) < 4 * ldexp(1, -11) + 16 * ldexp(1, -24) * sqrt((double)k),
                "relative error %g", sqrt(err2 / ref2));
      free(ha);
      free(hb);
      free(hbias);
      free(h1);
      free(h2);
      cudaFree(da);
      cudaFree(db);
      cudaFree(dbias);
      cudaFree(d1);
      cudaFree(d2);
      cudaFree(ws);
      gko_gemm_plan_destroy(plan);
      gko_gemm_desc_destroy(desc);
    }
  gko_destroy(h);
}

/* Runs the chain y[i + 1] = act(alpha y[i] W[i]^T + beta y[i] + bias)
 * (i < L; y[i] is also C when beta != 0) on st with `plan`, y[1..L]
 * poisoned first, eagerly or as a captured graph; returns y[1..L] copied to
 * the host (L m n f16 values). */
static uint16_t *run_chain(gko_gemm_plan_t plan, cudaStream_t st, int graph, int L, int64_t m,
                           int64_t n, float beta, uint16_t **y, uint16_t **w, const void *bias,
                           void *ws, size_t need) {
  const size_t yb = (size_t)(m * n) * 2;
  for (int i = 1; i <= L; i++) T_CUDA(cudaMemsetAsync(y[i], T_POISON_BYTE, yb, st));
  cudaGraph_t g = NULL;
  cudaGraphExec_t ge = NULL;
  if (graph) T_CUDA(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
  for (int i = 0; i < L; i++)
    T_OK(gko_gemm_execute(plan, 0.03f, y[i], w[i], beta, beta != 0.0f ? y[i] : NULL, y[i + 1],
                          bias, ws, need, st));
  if (graph) {
    T_CUDA(cudaStreamEndCapture(st, &g));
    T_CUDA(cudaGraphInstantiate(&ge, g, 0));
    T_CUDA(cudaGraphLaunch(ge, st));
  }
  T_CUDA(cudaStreamSynchronize(st));
  if (graph) {
    cudaGraphExecDestroy(ge);
    cudaGraphDestroy(g);
  }
  uint16_t *out = malloc(yb * L);
  for (int i = 1; i <= L; i++) t_d2h(out + (size_t)(i - 1) * m * n, y[i], yb);
  return out;
}

/* GKO_GEMM_ATTR_STATIC_OPERANDS: a chain of decode calls, each call's D the
 * next call's X (y[i + 1] = y[i] W[i]^T, nn.Linear's layout), the weights
 * promised static.  On sm_90 each call may then start before the one ahead
 * of it has finished (programmatic dependent launch); it must still read X
 * (and C) only after that call's writes, and they are poisoned (NaN)
 * before every run, so the chain must be bitwise the one run with ordinary
 * launches, eagerly and replayed from a graph, with no NaN; its first link
 * is checked against float64.  Cases: m <= 8 and m > 8 (two kernels), and
 * a split-K plan (a second kernel per call) that also reads C = X. */
Test(gemm_wmma, static_weights_chain_matches_ordinary_launches, .timeout = 600) {
  T_REQUIRE_GPU();
  uint64_t seed = t_seed();
  if (!decode_fits()) cr_skip("the decode kernel does not run on this GPU (sm_%d)", t_cc());
  gko_handle_t h = t_handle();
  int64_t sms = 0;
  T_OK(gko_query(GKO_QUERY_SM_COUNT, 0, &sms));
  enum { L = 6 };
  const int64_t nmax = 4096;
  uint16_t *w[L], *hw0 = malloc((size_t)(nmax * nmax) * 2);
  for (int i = 0; i < L; i++) {
    for (int64_t e = 0; e < nmax * nmax; e++) hw0[e] = t_double_to_f16(t_uniform(-1, 1));
    w[i] = t_dalloc((size_t)(nmax * nmax) * 2);
    t_h2d(w[i], hw0, (size_t)(nmax * nmax) * 2);
  } /* hw0 keeps W[L - 1]; W[0] is re-read below */
  t_d2h(hw0, w[0], (size_t)(nmax * nmax) * 2);
  uint16_t *hbias = malloc(nmax * 2);
  for (int64_t j = 0; j < nmax; j++) hbias[j] = t_double_to_f16(t_uniform(-0.5, 0.5));
  void *dbias = t_dalloc(nmax * 2);
  t_h2d(dbias, hbias, nmax * 2);
  cudaStream_t st;
  T_CUDA(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  const struct {
    int64_t m, n; /* k = n: y[i + 1] has y[i]'s shape (W[i] is its first n x n elements) */
    float beta;
    int splitk; /* the plan splits k on a GPU of more than 128 SMs (two blocks
                   per SM hold twice the tiles' 8 warps: 2048 rows) */
  } cs[] = {{4, 4096, 0.0f, 0}, {16, 4096, 0.0f, 0}, {4, 2048, 0.5f, 1}};
  for (size_t ci = 0; ci < sizeof cs / sizeof cs[0]; ci++) {
    const int64_t m = cs[ci].m, n = cs[ci].n, k = n;
    const float beta = cs[ci].beta;
    /* plans: ordinary; B (the weights here) promised static; only A
     * promised static, which is X: nothing changes */
    gko_gemm_plan_t plan[3];
    size_t need[3], most = 0;
    for (int sv = 0; sv < 3; sv++) {
      gko_gemm_desc_t desc;
      T_OK(gko_gemm_desc_create(&desc, GKO_DTYPE_F16, GKO_DTYPE_F16, m, n, k));
      T_OK(gko_gemm_desc_set(desc, GKO_GEMM_ATTR_TRANSB, GKO_OP_T));
      T_OK(gko_gemm_desc_set(desc, GKO_GEMM_ATTR_EPILOGUE, GKO_EPILOGUE_BIAS_GELU_TANH));
      T_OK(gko_gemm_desc_set(desc, GKO_GEMM_ATTR_BACKEND, GKO_GEMM_BACKEND_WMMA));
      const int mask[3] = {GKO_GEMM_STATIC_NONE, GKO_GEMM_STATIC_B, GKO_GEMM_STATIC_A};
      T_OK(gko_gemm_desc_set(desc, GKO_GEMM_ATTR_STATIC_OPERANDS, mask[sv]));
      T_OK(gko_gemm_plan_create(h, desc, &plan[sv]));
      gko_gemm_desc_destroy(desc);
      T_OK(gko_gemm_workspace_size(plan[sv], &need[sv]));
      if (need[sv] > most) most = need[sv];
      char why[2048];
      T_OK(gko_gemm_plan_describe(plan[sv], why, sizeof why, NULL));
      cr_expect(strstr(why, "decode kernel") != NULL, "case %zu: %s", ci, why);
      if (cs[ci].splitk && sms > 128)
        cr_expect(strstr(why, "split-K") != NULL, "case %zu: %s", ci, why);
      const int pdl = strstr(why, "programmatic dependent launch") != NULL;
      cr_expect_eq(pdl, sv == 1 && t_cc() >= 90, "case %zu static %d on sm_%d: %s", ci, mask[sv],
                   t_cc(), why);
    }
    void *ws = most ? t_dalloc(most) : NULL;
    uint16_t *y[L + 1];
    uint16_t *hy0 = malloc((size_t)(m * n) * 2);
    for (int64_t e = 0; e < m * n; e++) hy0[e] = t_double_to_f16(t_uniform(-1, 1));
    for (int i = 0; i <= L; i++) y[i] = t_dalloc((size_t)(m * n) * 2);
    t_h2d(y[0], hy0, (size_t)(m * n) * 2);
    uint16_t *ref = run_chain(plan[0], st, 0, L, m, n, beta, y, w, dbias, ws, need[0]);
    uint16_t *got[4];
    for (int r = 0; r < 3; r++) /* B static: eager twice, then a graph */
      got[r] = run_chain(plan[1], st, r == 2, L, m, n, beta, y, w, dbias, ws, need[1]);
    got[3] = run_chain(plan[2], st, 0, L, m, n, beta, y, w, dbias, ws, need[2]);
    int64_t nan = 0;
    for (int64_t e = 0; e < L * m * n; e++) nan += (ref[e] & 0x7c00) == 0x7c00 && (ref[e] & 0x3ff);
    cr_expect_eq(nan, 0, "case %zu: %lld NaN in the ordinary chain", ci, (long long)nan);
    for (int r = 0; r < 4; r++)
      cr_expect_eq(memcmp(got[r], ref, (size_t)(L * m * n) * 2), 0,
                   "case %zu: %s chain (%s) differs from ordinary launches", ci,
                   r < 3 ? "B-static" : "A-static", r == 2 ? "graph" : "eager");
    /* the first link against float64 (W[0] as n x k: its first n k elements) */
    double err2 = 0, ref2 = 0;
    for (int64_t i = 0; i < m; i++)
      for (int64_t j = 0; j < n; j++) {
        double sum = 0;
        for (int64_t p = 0; p < k; p++)
          sum += t_f16_to_float(hy0[i * k + p]) * t_f16_to_float(hw0[j * k + p]);
        const double r = t_ref_act(3, 0.03 * sum + beta * t_f16_to_float(hy0[i * n + j]) +
                                          t_f16_to_float(hbias[j]));
        const double d = t_f16_to_float(ref[i * n + j]) - r;
        err2 += d * d;
        ref2 += r * r;
      }
    cr_expect(sqrt(err2 / ref2) < 4 * ldexp(1, -11), "case %zu: relative error %g (seed %llu)", ci,
              sqrt(err2 / ref2), (unsigned long long)seed);
    for (int r = 0; r < 4; r++) free(got[r]);
    free(ref);
    free(hy0);
    for (int i = 0; i <= L; i++) cudaFree(y[i]);
    if (ws) cudaFree(ws);
    for (int sv = 0; sv < 3; sv++) gko_gemm_plan_destroy(plan[sv]);
  }
  cudaStreamDestroy(st);
  for (int i = 0; i < L; i++) cudaFree(w[i]);
  cudaFree(dbias);
  free(hw0);
  free(hbias);
  gko_destroy(h);
}

/* AUTO gives what cuBLASLt cannot fuse to WMMA: GELU-erf with
 * FUSION_REQUIRED runs fused, in one kernel, and is right. */
Test(gemm, auto_takes_wmma_where_cublaslt_cannot) {
  gsweep sw = sweep_begin();
  gcase c = gc_default(GKO_DTYPE_F16, GKO_DTYPE_F16, 200, 136, 72);
  c.epilogue = GKO_EPILOGUE_BIAS_GELU_ERF;
  c.fusion = GKO_GEMM_FUSION_REQUIRED;
  c.tb = 1;
  gko_gemm_desc_t d = make_desc(&c);
  gko_gemm_plan_t p;
  T_OK(gko_gemm_plan_create(sw.h, d, &p));
  /* cuBLASLt declined first: its reason must not outlive the success */
  cr_expect(gko_last_error_detail()[0] == '\0', "success left a detail: %s",
            gko_last_error_detail());
  gko_gemm_backend_t be = GKO_GEMM_BACKEND_AUTO;
  T_OK(gko_gemm_plan_backend(p, &be));
  cr_expect_eq(be, GKO_GEMM_BACKEND_WMMA);
  char why[2048];
  T_OK(gko_gemm_plan_describe(p, why, sizeof why, NULL));
  cr_expect(strstr(why, "fused") != NULL, "%s", why);
  gko_gemm_plan_destroy(p);
  gko_gemm_desc_destroy(d);
  sweep_case(&sw, &c, 0);
  /* f32 inputs: neither backend can, and the detail says why for both */
  c.ab = c.cd = GKO_DTYPE_F32;
  d = make_desc(&c);
  T_FAILS(GKO_STATUS_NOT_SUPPORTED, gko_gemm_plan_create(sw.h, d, &p));
  cr_expect(strstr(gko_last_error_detail(), "GELU-erf") != NULL, "%s", gko_last_error_detail());
  gko_gemm_desc_destroy(d);
  sweep_end(&sw);
}

/* AUTO's measured decode rule (docs/gemm.md): with the weights promised
 * static, min(m, n) <= 8 against W of >= 4096 rows and no more rows than k
 * (k contiguous in both operands) runs gko's decode kernel on sm_90+;
 * without the promise, with it on the other operand, or outside those
 * sizes, cuBLASLt.  Each plan is also run against the reference. */
Test(gemm, auto_takes_the_decode_kernel_for_static_weights, .timeout = 600) {
  gsweep sw = sweep_begin();
  const int cc = t_cc();
  const struct {
    int64_t m, n, k;
    int static_ops, wmma;
    int kn; /* x B (B stored [k, n]): the rule is for x W^T only */
  } cs[] = {
      /* x W^T: W is B (row-major, transb) */
      {3, 4096, 4096, GKO_GEMM_STATIC_B, 1, 0},
      {8, 4096, 4104, GKO_GEMM_STATIC_AB, 1, 0},
      {2, 4096, 11008, GKO_GEMM_STATIC_B, 1, 0},
      {3, 4096, 4096, GKO_GEMM_STATIC_A, 0, 0},
      {3, 4096, 4096, GKO_GEMM_STATIC_NONE, 0, 0},
      {9, 4096, 4096, GKO_GEMM_STATIC_B, 0, 0},
      {3, 4088, 4096, GKO_GEMM_STATIC_B, 0, 0},
      {3, 4096, 4088, GKO_GEMM_STATIC_B, 0, 0},
      {1, 8192, 4096, GKO_GEMM_STATIC_B, 0, 0},
      /* W x^T: W is A (D is 4096 x n) */
      {4096, 5, 4096, GKO_GEMM_STATIC_A, 1, 0},
      {4096, 5, 4096, GKO_GEMM_STATIC_B, 0, 0},
      {3, 4096, 4096, GKO_GEMM_STATIC_B, 0, 1},
  };
  for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
    gcase c = gc_default(GKO_DTYPE_F16, GKO_DTYPE_F16, cs[i].m, cs[i].n, cs[i].k);
    c.tb = !cs[i].kn;
    c.epilogue = GKO_EPILOGUE_BIAS;
    c.static_ops = cs[i].static_ops;
    c.sample_rows = 3;
    gko_gemm_backend_t be = GKO_GEMM_BACKEND_AUTO;
    char why[2048];
    plan_why(sw.h, &c, why, sizeof why, &be);
    const int want = cs[i].wmma && cc >= 90;
    cr_expect_eq(be, want ? GKO_GEMM_BACKEND_WMMA : GKO_GEMM_BACKEND_CUBLASLT,
                 "%lld x %lld x %lld static %d: %s", (long long)cs[i].m, (long long)cs[i].n,
                 (long long)cs[i].k, cs[i].static_ops, why);
    if (want)
      cr_expect(strstr(why, "decode kernel") && strstr(why, "AUTO: WMMA before cuBLASLt"),
                "%s", why);
    sweep_case(&sw, &c, 0);
  }
  sweep_end(&sw);
}

/* AUTO's measured SM90 rules (docs/gemm.md), on sm_90, for an FFN's
 * up-projection (W of at least 4k rows, m n >= 2^23, one batch, 16-bit D of
 * the inputs' type): GELU-erf fused with x W^T and 768 <= k <= 1280; no
 * activation or ReLU with 384 <= k <= 1280 and 8192 tokens, or k <= 768 and
 * m n >= 3 * 2^22, the plain GEMM also with B [k, n] up to k = 1024.
 * Shorter or longer k, fewer outputs, qkv's narrower W, 4096 tokens at
 * k = 1024, B [k, n] with an epilogue, GELU-tanh, f32 D, FUSION_NEVER or
 * batches stay on cuBLASLt (plus gko's pass).  Each plan is also run
 * against the reference. */
Test(gemm, auto_takes_sm90_where_measured_faster, .timeout = 600) {
  gsweep sw = sweep_begin();
  const int sm90 = t_cc() == 90 && t_sm90_built();
  const struct {
    gko_dtype_t ab, cd;
    int64_t m, n, k, batch;
    int ep, tb, fusion, want, off;
  } cs[] = {
      {GKO_DTYPE_F16, GKO_DTYPE_F16, 4096, 3072, 768, 1, GKO_EPILOGUE_BIAS_GELU_ERF, 1, 0, 1, 0},
      {GKO_DTYPE_BF16, GKO_DTYPE_BF16, 2048, 4096, 1024, 1, GKO_EPILOGUE_BIAS_GELU_ERF, 1, 0, 1, 0},
      {GKO_DTYPE_F16, GKO_DTYPE_F16, 2048, 5120, 1280, 1, GKO_EPILOGUE_GELU_ERF, 1, 0, 1, 0},
      {GKO_DTYPE_F16, GKO_DTYPE_F16, 4096, 3072, 768, 1, GKO_EPILOGUE_BIAS_GELU_ERF, 1,
       GKO_GEMM_FUSION_REQUIRED, 1, 0},
      {GKO_DTYPE_F16, GKO_DTYPE_F16, 2048, 3072, 768, 1, GKO_EPILOGUE_BIAS_GELU_ERF, 1, 0, 0, 0},
      {GKO_DTYPE_BF16, GKO_DTYPE_BF16, 4096, 2304, 768, 1, GKO_EPILOGUE_BIAS_GELU_ERF, 1, 0, 0, 0},
      {GKO_DTYPE_F16, GKO_DTYPE_F16, 8192, 1536, 384, 1, GKO_EPILOGUE_BIAS_GELU_ERF, 1, 0, 0, 0},
      {GKO_DTYPE_F16, GKO_DTYPE_F16, 2048, 8192, 2048, 1, GKO_EPILOGUE_BIAS_GELU_ERF, 1, 0, 0, 0},
      {GKO_DTYPE_BF16, GKO_DTYPE_BF16, 2048, 4096, 1024, 1, GKO_EPILOGUE_BIAS_GELU_ERF, 0, 0, 0, 0},
      {GKO_DTYPE_F16, GKO_DTYPE_F16, 4096, 3072, 768, 1, GKO_EPILOGUE_BIAS_GELU_TANH, 1, 0, 0, 0},
      {GKO_DTYPE_F16, GKO_DTYPE_F32, 4096, 3072, 768, 1, GKO_EPILOGUE_BIAS_GELU_ERF, 1, 0, 0, 0},
      {GKO_DTYPE_F16, GKO_DTYPE_F16, 4096, 3072, 768, 1, GKO_EPILOGUE_BIAS_GELU_ERF, 1,
       GKO_GEMM_FUSION_NEVER, 0, 0},
      {GKO_DTYPE_F16, GKO_DTYPE_F16, 4096, 3072, 768, 2, GKO_EPILOGUE_BIAS_GELU_ERF, 1, 0, 0, 0},
      /* no activation or ReLU */
      {GKO_DTYPE_F16, GKO_DTYPE_F16, 4096, 3072, 768, 1, GKO_EPILOGUE_NONE, 1, 0, 1, 0},
      {GKO_DTYPE_BF16, GKO_DTYPE_BF16, 8192, 4096, 1024, 1, GKO_EPILOGUE_BIAS, 1, 0, 1, 0},
      {GKO_DTYPE_F16, GKO_DTYPE_F16, 8192, 1536, 384, 1, GKO_EPILOGUE_BIAS_RELU, 1, 0, 1, 0},
      {GKO_DTYPE_BF16, GKO_DTYPE_BF16, 4096, 3072, 768, 1, GKO_EPILOGUE_NONE, 0, 0, 1, 0},
      {GKO_DTYPE_F16, GKO_DTYPE_F16, 4096, 3072, 768, 1, GKO_EPILOGUE_BIAS, 0, 0, 0, 0},
      {GKO_DTYPE_F16, GKO_DTYPE_F16, 8192, 5120, 1280, 1, GKO_EPILOGUE_NONE, 0, 0, 0, 0},
      {GKO_DTYPE_F16, GKO_DTYPE_F16, 4096, 4096, 1024, 1, GKO_EPILOGUE_BIAS, 1, 0, 0, 0},
      {GKO_DTYPE_BF16, GKO_DTYPE_BF16, 4096, 1536, 384, 1, GKO_EPILOGUE_NONE, 1, 0, 0, 0},
      {GKO_DTYPE_F16, GKO_DTYPE_F16, 4096, 2304, 768, 1, GKO_EPILOGUE_BIAS, 1, 0, 0, 0},
      {GKO_DTYPE_F16, GKO_DTYPE_F32, 4096, 3072, 768, 1, GKO_EPILOGUE_NONE, 1, 0, 0, 0},
      /* misaligned at execute: the plan's fallback runs (cuBLASLt's, or
       * WMMA's where fusion is required) */
      {GKO_DTYPE_BF16, GKO_DTYPE_BF16, 2048, 4096, 1024, 1, GKO_EPILOGUE_BIAS_GELU_ERF, 1, 0, 1, 3},
      {GKO_DTYPE_F16, GKO_DTYPE_F16, 4096, 3072, 768, 1, GKO_EPILOGUE_BIAS_GELU_ERF, 1,
       GKO_GEMM_FUSION_REQUIRED, 1, 1},
      {GKO_DTYPE_F16, GKO_DTYPE_F16, 4096, 3072, 768, 1, GKO_EPILOGUE_BIAS_RELU, 1, 0, 1, 1},
  };
  for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
    gcase c = gc_default(cs[i].ab, cs[i].cd, cs[i].m, cs[i].n, cs[i].k);
    c.tb = cs[i].tb;
    c.epilogue = cs[i].ep;
    c.batch = cs[i].batch;
    if (cs[i].fusion) c.fusion = cs[i].fusion;
    c.off_a = c.off_d = cs[i].off;
    c.sample_rows = 3;
    gko_gemm_backend_t be = GKO_GEMM_BACKEND_AUTO;
    char why[2048];
    plan_why(sw.h, &c, why, sizeof why, &be);
    const int want = cs[i].want && sm90;
    if (want) {
      cr_expect_eq(be, GKO_GEMM_BACKEND_SM90, "case %zu: %s", i, why);
      cr_expect(strstr(why, "AUTO: SM90 before cuBLASLt") &&
                    (!c.epilogue || strstr(why, "epilogue fused")),
                "case %zu: %s", i, why);
      const char *fb = c.fusion == GKO_GEMM_FUSION_REQUIRED ? "at execute: WMMA's plan"
                                                            : "at execute: cuBLASLt's plan";
      cr_expect(strstr(why, fb), "case %zu: %s", i, why);
    } else {
      cr_expect_neq(be, GKO_GEMM_BACKEND_SM90, "case %zu: %s", i, why);
      cr_expect(!strstr(why, "AUTO: SM90 before"), "case %zu: %s", i, why);
    }
    sweep_case(&sw, &c, 0);
  }
  sweep_end(&sw);
}

/* AUTOTUNE: the plan times its candidates, says so, is right, and a second
 * plan of the same problem takes the handle's cached answer. */
Test(gemm, autotune_times_candidates_and_caches_the_winner, .timeout = 600) {
  gsweep sw = sweep_begin();
  const int cc = t_cc();
  const struct {
    gko_dtype_t ab;
    int64_t m, n, k;
    int backend, ep, tb;
  } cases[] = {{GKO_DTYPE_F16, 256, 320, 1027, GKO_GEMM_BACKEND_AUTO, GKO_EPILOGUE_BIAS_GELU_ERF, 1},
               {GKO_DTYPE_F16, 2, 1024, 2048, GKO_GEMM_BACKEND_WMMA, GKO_EPILOGUE_BIAS, 1},
               {GKO_DTYPE_BF16, 3, 512, 512, GKO_GEMM_BACKEND_AUTO, GKO_EPILOGUE_NONE, 0},
               {GKO_DTYPE_F32, 64, 96, 80, GKO_GEMM_BACKEND_CUBLASLT, GKO_EPILOGUE_RELU, 0}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    if (cases[i].ab == GKO_DTYPE_BF16 && cc < 80) continue;
    gcase c = gc_default(cases[i].ab, cases[i].ab, cases[i].m, cases[i].n, cases[i].k);
    c.backend = cases[i].backend;
    c.epilogue = cases[i].ep;
    c.tb = cases[i].tb;
    c.autotune = 1;
    for (int rep = 0; rep < 2; rep++) {
      gko_gemm_desc_t d = make_desc(&c);
      gko_gemm_plan_t p;
      T_OK(gko_gemm_plan_create(sw.h, d, &p));
      char why[2048];
      T_OK(gko_gemm_plan_describe(p, why, sizeof why, NULL));
      cr_log_info("autotune %zu rep %d: %s", i, rep, why);
      cr_expect(strstr(why, "autotune") != NULL && strstr(why, "candidates timed") != NULL,
                "%s", why);
      if (rep == 1) cr_expect(strstr(why, "cached") != NULL, "%s", why);
      gko_gemm_plan_destroy(p);
      gko_gemm_desc_destroy(d);
    }
    sweep_case(&sw, &c, 0);
  }
  sweep_end(&sw);
}

/* GKO_GEMM_ATTR_INVARIANT: D computed whole (m lines) and in two pieces
 * (7 lines, where WMMA would otherwise take its skinny split-K kernel, and
 * the rest) with plans of the same reference R must agree bit for bit --
 * under AUTO (cuBLASLt, or WMMA where cuBLASLt has no algorithm) and with
 * WMMA forced.  Row-major f16, D = A[m x k] B[k x n] + bias, ReLU. */
/* Whole (m rows) against two pieces (7 rows, then the rest) of one
 * GKO_GEMM_ATTR_INVARIANT = R plan family, bit for bit; 64 sampled rows
 * also against a float64 reference.  k = 152, n = 64, B transposed, 64 KiB
 * of scratch: ResNet-18's stem as conv's NHWC lowering plans it (m =
 * 401 408 at N = 32, where every algorithm cuBLASLt's heuristic ranks asks
 * for 4 bytes of scratch on the H200: with none, AUTO fell back to WMMA;
 * on sm_90 the plan must now be cuBLASLt's). */
static void invariant_pieces(int backend, int64_t m, int epilogue) {
  T_REQUIRE_GPU();
  gko_handle_t h = t_handle();
  const int64_t n = 64, k = 152, R = m, cut = 7;
  uint16_t *ha = malloc(sizeof(uint16_t) * m * k), *hb = malloc(sizeof(uint16_t) * k * n);
  uint16_t *hbias = malloc(sizeof(uint16_t) * n);
  cr_assert(ha && hb && hbias);
  for (int64_t i = 0; i < m * k; i++) ha[i] = t_double_to_f16(t_uniform(-1, 1));
  for (int64_t i = 0; i < k * n; i++) hb[i] = t_double_to_f16(t_uniform(-1, 1));
  for (int64_t i = 0; i < n; i++) hbias[i] = t_double_to_f16(t_uniform(-1, 1));
  void *da = t_dalloc(2 * m * k), *db = t_dalloc(2 * k * n), *dbias = t_dalloc(2 * n);
  void *d1 = t_dalloc(2 * m * n), *d2 = t_dalloc(2 * m * n);
  t_h2d(da, ha, 2 * m * k);
  t_h2d(db, hb, 2 * k * n);
  t_h2d(dbias, hbias, 2 * n);
  t_memset(d1, T_POISON_BYTE, 2 * m * n);
  t_memset(d2, T_POISON_BYTE, 2 * m * n);
  const int64_t rows[3][2] = {{0, m}, {0, cut}, {cut, m}};
  for (int piece = 0; piece < 3; piece++) {
    const int64_t r0 = rows[piece][0], mm = rows[piece][1] - r0;
    gko_gemm_desc_t d;
    gko_gemm_plan_t plan;
    T_OK(gko_gemm_desc_create(&d, GKO_DTYPE_F16, GKO_DTYPE_F16, mm, n, k));
    T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_INVARIANT, R));
    T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_TRANSB, GKO_OP_T)); /* conv's W [K][kp] */
    T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_BACKEND, backend));
    T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_EPILOGUE, epilogue));
    T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_MAX_WORKSPACE, 65536)); /* conv's */
    T_OK(gko_gemm_plan_create(h, d, &plan));
    char why[1024];
    T_OK(gko_gemm_plan_describe(plan, why, sizeof why, NULL));
    cr_expect(strstr(why, "invariant") != NULL, "%s", why);
    if (backend == GKO_GEMM_BACKEND_AUTO && m > 100000 && t_cc() == 90)
      cr_expect(strncmp(why, "cuBLASLt", 8) == 0, "the stem's GEMM on sm_90: %s", why);
    if (piece < 2) cr_log_info("m = %lld: %s", (long long)mm, why);
    /* no split-K partials, but some of cuBLASLt's algorithms without
     * split-K still ask for a few bytes (4 for m = 401 408 on the H200) */
    size_t ws = 0;
    T_OK(gko_gemm_workspace_size(plan, &ws));
    cr_expect(ws < 65536, "invariant plan asks for %zu bytes of workspace", ws);
    void *wsp = ws ? t_dalloc(ws) : NULL;
    void *out = piece == 0 ? d1 : (char *)d2 + 2 * r0 * n;
    T_OK(gko_gemm_execute(plan, 1.0f, (const char *)da + 2 * r0 * k, db, 0.0f, NULL, out,
                          epilogue ? dbias : NULL, wsp, ws, NULL));
    T_CUDA(cudaDeviceSynchronize());
    if (wsp) cudaFree(wsp);
    gko_gemm_plan_destroy(plan);
    gko_gemm_desc_destroy(d);
  }
  T_CUDA(cudaDeviceSynchronize());
  uint16_t *o1 = malloc(2 * m * n), *o2 = malloc(2 * m * n);
  cr_assert(o1 && o2);
  t_d2h(o1, d1, 2 * m * n);
  t_d2h(o2, d2, 2 * m * n);
  int64_t diff = 0, nan = 0;
  for (int64_t i = 0; i < m * n; i++) {
    diff += o1[i] != o2[i];
    nan += (o1[i] & 0x7c00) == 0x7c00;
  }
  cr_expect_eq(diff, 0, "%lld of %lld elements differ between whole and pieces", (long long)diff,
               (long long)(m * n));
  cr_expect_eq(nan, 0, "%lld elements not written", (long long)nan);
  /* row-major D = A . B^T (B stored n x k), then bias and ReLU */
  double err2 = 0, ref2 = 0;
  for (int t = 0; t < 64; t++) {
    const int64_t i = t == 0 ? 0 : t == 1 ? m - 1 : (int64_t)(t_uniform(0, 1) * (double)m) % m;
    for (int64_t j = 0; j < n; j++) {
      double acc = 0;
      for (int64_t q = 0; q < k; q++)
        acc += (double)t_f16_to_float(ha[i * k + q]) * t_f16_to_float(hb[j * k + q]);
      if (epilogue) {
        acc += t_f16_to_float(hbias[j]);
        if (acc < 0) acc = 0;
      }
      const double got = t_f16_to_float(o1[i * n + j]);
      err2 += (got - acc) * (got - acc);
      ref2 += acc * acc;
    }
  }
  const double rel = sqrt(err2 / ref2), tol = 4 * ldexp(1, -11) + 16 * ldexp(1, -24) * sqrt(k);
  cr_expect(rel <= tol, "sampled rows: relative error %.3g > %.3g", rel, tol);
  free(ha), free(hb), free(hbias), free(o1), free(o2);
  cudaFree(da), cudaFree(db), cudaFree(dbias), cudaFree(d1), cudaFree(d2);
  gko_destroy(h);
}
Test(gemm, invariant_whole_and_pieces_bitwise) {
  invariant_pieces(GKO_GEMM_BACKEND_AUTO, 1000, GKO_EPILOGUE_BIAS_RELU);
  invariant_pieces(GKO_GEMM_BACKEND_AUTO, 401408, GKO_EPILOGUE_NONE);
}
Test(gemm_wmma, invariant_whole_and_pieces_bitwise) {
  invariant_pieces(GKO_GEMM_BACKEND_WMMA, 1000, GKO_EPILOGUE_BIAS_RELU);
}
