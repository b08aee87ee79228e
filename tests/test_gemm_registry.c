/* test_gemm_registry.c -- the table of GEMM backends (src/gemm_registry.c),
 * row by row: every row complete, its id unique and a public
 * gko_gemm_backend_t, every public backend in the table, AUTO's order a
 * permutation of the rows that support the problem, the BACKEND attribute
 * accepting exactly AUTO and the rows; and cuBLASLt's tile names against
 * cublasLt.h.  Host only, no CUDA call: linked against libgko.a to reach
 * the hidden table. */
#include <cublasLt.h>

#include "common.h"
#include "gemm.h"

Test(gemm_registry, every_row_is_complete_and_its_own) {
  cr_assert(gk_gemm_nbackends >= 1 && gk_gemm_nbackends <= GK_GEMM_MAX_BACKENDS,
            "%d rows", gk_gemm_nbackends);
  for (int i = 0; i < gk_gemm_nbackends; i++) {
    const gk_gemm_backend *be = gk_gemm_backends[i];
    cr_assert(be != NULL, "row %d", i);
    cr_expect(be->name && be->name[0], "row %d has no name", i);
    cr_expect(be->tag && be->tag[0], "row %d (%s) has no tag", i, be->name);
    cr_expect(be->plan && be->execute && be->destroy, "row %d (%s) lacks plan/execute/destroy",
              i, be->name);
    cr_expect(be->max_variant >= 0, "row %d (%s)", i, be->name);
    cr_expect(be->id != GKO_GEMM_BACKEND_AUTO, "row %d (%s) claims AUTO", i, be->name);
    cr_expect(!be->auto_first_why || be->auto_first, "row %d (%s): a why without a rule", i,
              be->name);
    cr_expect_eq(gk_gemm_backend_of(be->id), be, "row %d (%s): its id finds another row", i,
                 be->name);
    for (int j = 0; j < i; j++) {
      cr_expect_neq(gk_gemm_backends[j]->id, be->id, "rows %d and %d share an id", j, i);
      cr_expect_str_neq(gk_gemm_backends[j]->name, be->name, "rows %d and %d", j, i);
      cr_expect_str_neq(gk_gemm_backends[j]->tag, be->tag, "rows %d and %d", j, i);
    }
  }
}

Test(gemm_registry, every_public_backend_has_its_row) {
  /* every gko_gemm_backend_t enumerator but AUTO */
  const gko_gemm_backend_t pub[] = {GKO_GEMM_BACKEND_CUBLASLT, GKO_GEMM_BACKEND_WMMA,
                                    GKO_GEMM_BACKEND_SM90};
  const int npub = (int)(sizeof pub / sizeof pub[0]);
  cr_expect_eq(gk_gemm_nbackends, npub, "%d rows for %d public backends", gk_gemm_nbackends,
               npub);
  for (int i = 0; i < npub; i++) {
    const gk_gemm_backend *be = gk_gemm_backend_of(pub[i]);
    cr_assert(be != NULL, "backend %d has no row", (int)pub[i]);
    cr_expect_eq(be->id, (int)pub[i]);
  }
  cr_expect_null(gk_gemm_backend_of(GKO_GEMM_BACKEND_AUTO));
}

Test(gemm_registry, the_backend_attribute_takes_auto_and_the_rows) {
  gko_gemm_desc_t d;
  T_OK(gko_gemm_desc_create(&d, GKO_DTYPE_F16, GKO_DTYPE_F16, 8, 8, 8));
  int64_t top = 0;
  for (int i = 0; i < gk_gemm_nbackends; i++)
    if (gk_gemm_backends[i]->id > top) top = gk_gemm_backends[i]->id;
  for (int64_t v = -2; v <= top + 2; v++) {
    const int valid = v == GKO_GEMM_BACKEND_AUTO || gk_gemm_backend_of(v) != NULL;
    gko_status_t s = gko_gemm_desc_set(d, GKO_GEMM_ATTR_BACKEND, v);
    cr_expect_eq(s, valid ? GKO_STATUS_SUCCESS : GKO_STATUS_INVALID_VALUE, "BACKEND = %lld: %s",
                 (long long)v, gko_last_error_detail());
  }
  gko_gemm_desc_destroy(d);
}

/* AUTO's list for one problem on a GPU of compute capability cc: each row
 * that supports the problem exactly once, the rows its auto_first rule puts
 * ahead first, each part in the table's order.  Marks the rows listed, and
 * those put ahead. */
static void check_auto_order(int cc, const gk_gemm_problem *p, int *listed, int *ahead) {
  struct gko_handle_s h;
  memset(&h, 0, sizeof h);
  h.cc = cc;
  h.sm_count = 132;
  const gk_gemm_backend *list[GK_GEMM_MAX_BACKENDS];
  int nfirst = -1;
  const int n = gk_gemm_auto_order(&h, p, list, &nfirst);
  int nsup = 0, pos[GK_GEMM_MAX_BACKENDS];
  for (int i = 0; i < gk_gemm_nbackends; i++) {
    const gk_gemm_backend *be = gk_gemm_backends[i];
    const int sup = !be->supports || be->supports(&h, p, NULL, 0);
    nsup += sup;
    pos[i] = -1;
    for (int j = 0; j < n; j++)
      if (list[j] == be) {
        cr_expect_eq(pos[i], -1, "sm_%d: %s listed twice", cc, be->name);
        pos[i] = j;
      }
    cr_expect_eq(pos[i] >= 0, sup, "sm_%d: %s %s but %s", cc, be->name,
                 sup ? "supports the problem" : "does not support it",
                 pos[i] >= 0 ? "is listed" : "is not");
    if (pos[i] < 0) continue;
    listed[i] = 1;
    const int first = p->invariant <= 0 && be->auto_first && be->auto_first(&h, p);
    cr_expect_eq(pos[i] < nfirst, first, "sm_%d: %s at %d of %d (%d first)", cc, be->name,
                 pos[i], n, nfirst);
    ahead[i] |= first;
  }
  cr_expect_eq(n, nsup, "sm_%d: %d listed, %d support the problem", cc, n, nsup);
  cr_expect(nfirst >= 0 && nfirst <= n);
  for (int i = 0; i < gk_gemm_nbackends; i++)
    for (int j = 0; j < i; j++)
      if (pos[i] >= 0 && pos[j] >= 0 && (pos[i] < nfirst) == (pos[j] < nfirst))
        cr_expect(pos[j] < pos[i], "sm_%d: %s before %s against the table's order", cc,
                  gk_gemm_backends[i]->name, gk_gemm_backends[j]->name);
}

Test(gemm_registry, auto_order_is_a_permutation_of_the_rows_that_support_the_problem) {
  const gko_dtype_t types[] = {GKO_DTYPE_F32, GKO_DTYPE_F16, GKO_DTYPE_BF16, GKO_DTYPE_F8E4M3};
  const int64_t shapes[][3] = {{64, 64, 64},    {1, 4096, 4096},  {4096, 1, 8192},
                               {8, 4096, 11008}, {4096, 3072, 768}};
  const int ccs[] = {70, 75, 80, 86, 90};
  int listed[GK_GEMM_MAX_BACKENDS] = {0}, ahead[GK_GEMM_MAX_BACKENDS] = {0};
  int ncase = 0;
  for (size_t t = 0; t < sizeof types / sizeof types[0]; t++)
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
      for (int variant = 0; variant < 8; variant++) {
        gko_gemm_desc_t d;
        T_OK(gko_gemm_desc_create(&d, types[t], types[t], shapes[s][0], shapes[s][1],
                                  shapes[s][2]));
        T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_TRANSB, variant & 1));
        T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_STATIC_OPERANDS,
                               (variant & 2) ? GKO_GEMM_STATIC_AB : GKO_GEMM_STATIC_NONE));
        T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_EPILOGUE,
                               (variant & 4) ? GKO_EPILOGUE_BIAS_GELU_ERF : GKO_EPILOGUE_NONE));
        for (int inv = 0; inv < 2; inv++) {
          T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_INVARIANT, inv ? 64 : 0));
          gk_gemm_problem p;
          if (gk_gemm_resolve(d, &p) != GKO_STATUS_SUCCESS) continue; /* INVARIANT with op T */
          for (size_t c = 0; c < sizeof ccs / sizeof ccs[0]; c++, ncase++)
            check_auto_order(ccs[c], &p, listed, ahead);
        }
        gko_gemm_desc_destroy(d);
      }
  cr_expect(ncase > 0);
  for (int i = 0; i < gk_gemm_nbackends; i++) {
    cr_expect(listed[i], "AUTO never lists %s", gk_gemm_backends[i]->name);
    cr_expect(ahead[i] || !gk_gemm_backends[i]->auto_first, "%s's auto_first never holds here",
              gk_gemm_backends[i]->name);
  }
}

/* Resolves d (and destroys it) for a device of compute capability cc:
 * `only` must accept it when word is NULL, else refuse it with a reason
 * naming word; every other backend must refuse it (`what` names the
 * inputs), cuBLASLt's reason naming lt_word when that is not NULL. */
static void expect_only_backend(gko_gemm_desc_t d, int cc, const gk_gemm_backend *only,
                                const char *word, const char *what, const char *lt_word,
                                size_t i) {
  gk_gemm_problem p;
  T_OK(gk_gemm_resolve(d, &p));
  gko_gemm_desc_destroy(d);
  struct gko_handle_s h;
  memset(&h, 0, sizeof h);
  h.cc = cc;
  char why[512] = "";
  const int ok = only->supports(&h, &p, why, sizeof why);
  if (!word) {
    cr_expect(ok, "case %zu: declined: %s", i, why);
  } else {
    cr_expect(!ok, "case %zu: accepted, expected a refusal naming '%s'", i, word);
    cr_expect(strstr(why, word) != NULL, "case %zu: '%s' does not name '%s'", i, why, word);
  }
  for (int r = 0; r < gk_gemm_nbackends; r++) {
    const gk_gemm_backend *be = gk_gemm_backends[r];
    if (be == only) continue;
    why[0] = '\0';
    cr_expect(be->supports && !be->supports(&h, &p, why, sizeof why), "%s accepts %s", be->name,
              what);
    if (lt_word && be->id == GKO_GEMM_BACKEND_CUBLASLT) /* SM90 may first name the GPU or build */
      cr_expect(strstr(why, lt_word) != NULL, "%s: '%s'", be->name, why);
  }
}

/* cuBLASLt's 8-bit rules (src/gemm_fp8.c), each broken alone on a problem
 * that meets the others, and named in the reason; WMMA and SM90 decline
 * 8-bit inputs. */
Test(gemm_registry, fp8_rules_name_the_requirement_broken) {
  const struct {
    int cc, layout, transa, transb, b_dtype;
    int64_t k, lda, batch, stride_a, alignment;
    const char *word; /* NULL: supported */
  } cases[] = {
      {90, GKO_LAYOUT_ROW_MAJOR, GKO_OP_N, GKO_OP_T, -1, 64, -1, 1, -1, 16, NULL},
      {89, GKO_LAYOUT_ROW_MAJOR, GKO_OP_N, GKO_OP_T, GKO_DTYPE_F8E5M2, 64, -1, 1, -1, 16, NULL},
      {90, GKO_LAYOUT_COL_MAJOR, GKO_OP_T, GKO_OP_N, -1, 64, -1, 1, -1, 16, NULL},
      {90, GKO_LAYOUT_ROW_MAJOR, GKO_OP_N, GKO_OP_T, -1, 64, -1, 3, 32 * 64, 16, NULL},
      {86, GKO_LAYOUT_ROW_MAJOR, GKO_OP_N, GKO_OP_T, -1, 64, -1, 1, -1, 16, "8.9"},
      {90, GKO_LAYOUT_ROW_MAJOR, GKO_OP_N, GKO_OP_N, -1, 64, -1, 1, -1, 16, "k contiguous"},
      {90, GKO_LAYOUT_ROW_MAJOR, GKO_OP_T, GKO_OP_T, -1, 64, -1, 1, -1, 16, "TRANSA = T"},
      {90, GKO_LAYOUT_COL_MAJOR, GKO_OP_N, GKO_OP_N, -1, 64, -1, 1, -1, 16, "column-major"},
      {90, GKO_LAYOUT_ROW_MAJOR, GKO_OP_N, GKO_OP_T, -1, 24, -1, 1, -1, 16, "k = 24"},
      {90, GKO_LAYOUT_ROW_MAJOR, GKO_OP_N, GKO_OP_T, -1, 64, 72, 1, -1, 16, "lda = 72"},
      {90, GKO_LAYOUT_ROW_MAJOR, GKO_OP_N, GKO_OP_T, -1, 64, -1, 3, 32 * 64 + 8, 16,
       "batch strides"},
      {90, GKO_LAYOUT_ROW_MAJOR, GKO_OP_N, GKO_OP_T, -1, 64, -1, 1, -1, 8, "ALIGNMENT"},
  };
  const gk_gemm_backend *lt = gk_gemm_backend_of(GKO_GEMM_BACKEND_CUBLASLT);
  cr_assert(lt && lt->supports);
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    gko_gemm_desc_t d;
    T_OK(gko_gemm_desc_create(&d, GKO_DTYPE_F8E4M3, GKO_DTYPE_BF16, 32, 48, cases[i].k));
    T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_LAYOUT, cases[i].layout));
    T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_TRANSA, cases[i].transa));
    T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_TRANSB, cases[i].transb));
    T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_B_DTYPE, cases[i].b_dtype));
    T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_LDA, cases[i].lda));
    T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_BATCH_COUNT, cases[i].batch));
    T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_STRIDE_A, cases[i].stride_a));
    T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_ALIGNMENT, cases[i].alignment));
    expect_only_backend(d, cases[i].cc, lt, cases[i].word, "8-bit inputs", NULL, i);
  }
  /* both E5M2 */
  gko_gemm_desc_t d;
  T_OK(gko_gemm_desc_create(&d, GKO_DTYPE_F8E5M2, GKO_DTYPE_F32, 32, 48, 64));
  T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_TRANSB, GKO_OP_T));
  gk_gemm_problem p;
  T_OK(gk_gemm_resolve(d, &p));
  gko_gemm_desc_destroy(d);
  struct gko_handle_s h;
  memset(&h, 0, sizeof h);
  h.cc = 90;
  char why[512] = "";
  cr_expect(!lt->supports(&h, &p, why, sizeof why));
  cr_expect(strstr(why, "E5M2 x E5M2") != NULL, "%s", why);
}

/* The descriptor's 8-bit rules that need no GPU: B_DTYPE pairs, row-wise
 * factors and fast accumulation only with 8-bit inputs, cd_dtype free. */
Test(gemm_registry, fp8_descriptor_rules) {
  gko_gemm_desc_t d;
  gk_gemm_problem p;
  T_OK(gko_gemm_desc_create(&d, GKO_DTYPE_F8E4M3, GKO_DTYPE_F8E5M2, 16, 16, 16));
  T_OK(gk_gemm_resolve(d, &p));
  cr_expect_eq(p.b_dtype, GKO_DTYPE_F8E4M3);
  T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_B_DTYPE, GKO_DTYPE_F8E5M2));
  T_OK(gk_gemm_resolve(d, &p));
  cr_expect_eq(p.b_dtype, GKO_DTYPE_F8E5M2);
  T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_B_DTYPE, GKO_DTYPE_F16));
  T_FAILS(GKO_STATUS_INVALID_VALUE, gk_gemm_resolve(d, &p));
  cr_expect(strstr(gko_last_error_detail(), "B_DTYPE") != NULL, "%s", gko_last_error_detail());
  gko_gemm_desc_destroy(d);
  T_OK(gko_gemm_desc_create(&d, GKO_DTYPE_F16, GKO_DTYPE_F16, 16, 16, 16));
  T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_SCALE_A_MODE, GKO_SCALE_ROWWISE));
  T_FAILS(GKO_STATUS_INVALID_VALUE, gk_gemm_resolve(d, &p));
  cr_expect(strstr(gko_last_error_detail(), "SCALE_A_MODE") != NULL, "%s", gko_last_error_detail());
  T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_SCALE_A_MODE, GKO_SCALE_TENSOR));
  T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_COMPUTE, GKO_GEMM_COMPUTE_FP8_FAST_ACCUMULATE));
  T_FAILS(GKO_STATUS_INVALID_VALUE, gk_gemm_resolve(d, &p));
  T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_COMPUTE, GKO_GEMM_COMPUTE_DEFAULT));
  /* a 16-bit A with an 8-bit B: weight-only FP8, whose factors are B's */
  T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_B_DTYPE, GKO_DTYPE_F8E4M3));
  T_OK(gk_gemm_resolve(d, &p));
  cr_expect(gk_gemm_w8(&p));
  T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_SCALE_B_MODE, GKO_SCALE_ROWWISE));
  T_OK(gk_gemm_resolve(d, &p));
  T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_SCALE_A_MODE, GKO_SCALE_ROWWISE));
  T_FAILS(GKO_STATUS_INVALID_VALUE, gk_gemm_resolve(d, &p));
  cr_expect(strstr(gko_last_error_detail(), "SCALE_A_MODE") != NULL, "%s", gko_last_error_detail());
  T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_SCALE_A_MODE, GKO_SCALE_TENSOR));
  T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_COMPUTE, GKO_GEMM_COMPUTE_FP8_FAST_ACCUMULATE));
  T_FAILS(GKO_STATUS_INVALID_VALUE, gk_gemm_resolve(d, &p));
  gko_gemm_desc_destroy(d);
  /* an f32 A takes no 8-bit B */
  T_OK(gko_gemm_desc_create(&d, GKO_DTYPE_F32, GKO_DTYPE_F32, 16, 16, 16));
  T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_B_DTYPE, GKO_DTYPE_F8E4M3));
  T_FAILS(GKO_STATUS_INVALID_VALUE, gk_gemm_resolve(d, &p));
  cr_expect(strstr(gko_last_error_detail(), "B_DTYPE") != NULL, "%s", gko_last_error_detail());
  gko_gemm_desc_destroy(d);
  T_FAILS(GKO_STATUS_INVALID_VALUE,
          gko_gemm_desc_create(&d, GKO_DTYPE_F16, GKO_DTYPE_F8E4M3, 16, 16, 16));
}

/* Weight-only FP8 (a 16-bit A, an 8-bit B): WMMA serves it where its rules
 * hold, and names the rule broken otherwise; cuBLASLt and SM90 decline it. */
Test(gemm_registry, w8_rules_name_the_requirement_broken) {
  const struct {
    int cc, layout, transa, transb, invariant, compute;
    int64_t m;
    const char *word; /* NULL: supported */
  } cases[] = {
      {90, GKO_LAYOUT_ROW_MAJOR, GKO_OP_N, GKO_OP_T, 0, 0, 1, NULL},
      {80, GKO_LAYOUT_ROW_MAJOR, GKO_OP_N, GKO_OP_T, 0, 0, 16, NULL},
      {90, GKO_LAYOUT_COL_MAJOR, GKO_OP_T, GKO_OP_N, 0, 0, 7, NULL},
      {75, GKO_LAYOUT_ROW_MAJOR, GKO_OP_N, GKO_OP_T, 0, 0, 1, "sm_80"},
      {90, GKO_LAYOUT_ROW_MAJOR, GKO_OP_N, GKO_OP_T, 0, 0, 17, "m = 17"},
      {90, GKO_LAYOUT_ROW_MAJOR, GKO_OP_N, GKO_OP_N, 0, 0, 1, "k contiguous"},
      {90, GKO_LAYOUT_ROW_MAJOR, GKO_OP_T, GKO_OP_T, 0, 0, 1, "TRANSA = N"},
      {90, GKO_LAYOUT_COL_MAJOR, GKO_OP_N, GKO_OP_N, 0, 0, 1, "column-major"},
      {90, GKO_LAYOUT_ROW_MAJOR, GKO_OP_N, GKO_OP_T, 64, 0, 1, "INVARIANT"},
      {90, GKO_LAYOUT_ROW_MAJOR, GKO_OP_N, GKO_OP_T, 0, GKO_GEMM_COMPUTE_F16_ACCUMULATE, 1,
       "f32"},
  };
  const gk_gemm_backend *wm = gk_gemm_backend_of(GKO_GEMM_BACKEND_WMMA);
  cr_assert(wm && wm->supports);
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    for (int a = 0; a < 2; a++)
      for (int b = 0; b < 2; b++) {
        gko_gemm_desc_t d;
        const gko_dtype_t adt = a ? GKO_DTYPE_BF16 : GKO_DTYPE_F16;
        T_OK(gko_gemm_desc_create(&d, adt, adt, cases[i].m, 4096, 256));
        T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_B_DTYPE,
                               b ? GKO_DTYPE_F8E5M2 : GKO_DTYPE_F8E4M3));
        T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_LAYOUT, cases[i].layout));
        T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_TRANSA, cases[i].transa));
        T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_TRANSB, cases[i].transb));
        T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_INVARIANT, cases[i].invariant));
        if (cases[i].compute) T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_COMPUTE, cases[i].compute));
        expect_only_backend(d, cases[i].cc, wm, cases[i].word, "weight-only FP8",
                            "weight-only FP8", i);
      }
}

/* The names of tile ids taken from cublasLt.h: each end of each run of
 * gemm_tiles.c's rule, and its ends. */
#define TILE(r, c) {CUBLASLT_MATMUL_TILE_##r##x##c, #r "x" #c}

Test(gemm_tiles, names_follow_cublasLt_h) {
  const struct {
    int id;
    const char *name;
  } tiles[] = {TILE(8, 8),    TILE(256, 32),  TILE(8, 128),    TILE(8, 768),   TILE(24, 768),
               TILE(32, 192), TILE(384, 128), TILE(768, 64),   TILE(64, 16),   TILE(64, 760),
               TILE(128, 8),  TILE(256, 256), TILE(768, 80),   TILE(256, 512), TILE(512, 1024)};
  for (size_t i = 0; i < sizeof tiles / sizeof tiles[0]; i++) {
    const char *n = gk_gemm_tile_name(tiles[i].id);
    cr_expect(n && strcmp(n, tiles[i].name) == 0, "tile %d: %s, cublasLt.h: %s", tiles[i].id,
              n ? n : "(none)", tiles[i].name);
  }
  cr_expect_str_eq(gk_gemm_tile_name(CUBLASLT_MATMUL_TILE_END - 1), "512x1024");
  cr_expect_null(gk_gemm_tile_name(CUBLASLT_MATMUL_TILE_UNDEFINED));
  cr_expect_null(gk_gemm_tile_name(CUBLASLT_MATMUL_TILE_END));
}
