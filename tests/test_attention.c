/* test_attention.c -- gko_attention on the GPU against a float64 host
 * reference: O = softmax(scale * Q K^T over keys j < min(seq_k,
 * lengths[b])) V, in double, from the very (dtype-rounded) inputs the GPU
 * reads.  Inputs are fresh random numbers (seed printed; GKO_TEST_SEED
 * replays), every output buffer is poisoned (NaN) first, and bytes of o
 * outside its heads * head_dim columns must stay poison.
 *
 * Tolerance of an element of O_bh, relative to vmax = max |V_bh| over the
 * batch's keys (every output is a convex combination of those rows):
 *   base  f32: 1e-5 (f32 exponentials, sums and products over at most 512
 *         keys: an error of a few 2^-24 per term, far below);
 *         16-bit on the CUDA-core kernel: 2u (u = 2^-11 f16, 2^-8 bf16,
 *         the unit roundoff): the f32 result rounded once to dtype;
 *         16-bit on tensor cores: 4u: P is rounded to dtype before P V
 *         (each weight off by <= u relatively, so O by <= u vmax), the
 *         result is rounded once more (<= u vmax), doubled for the f32
 *         accumulation and the exponentials (ex2.approx, about 2^-22);
 *   plus  2 * es, es the error bound of an f32 score: |scale| sum_e
 *         |q_e k_e| (head_dim + 2) 2^-24 (two for inputs whose products
 *         and sums are exact, the integer data): a score off by es moves
 *         each softmax weight by a factor e^(+-es), so O by <= 2 es vmax.
 * A batch without keys must give exact zeros; a NaN reference must come
 * back NaN. */
#include "common.h"

/* ---- cases ------------------------------------------------------------------ */

typedef struct {
  gko_dtype_t dt;
  int64_t B, H, Sq, Sk, D;
  int fused;     /* q, k, v: column slices of one [B * S][3 H D] matrix (Sq == Sk) */
  int ld_extra;  /* separate q, k, v: ld = H D + ld_extra (the gap holds NaN) */
  int ldo_extra; /* ldo = H D + ldo_extra (the gap must stay poison) */
  int len_mode;  /* 0: lengths NULL; 1: varied (random, 0, > seq_k, negative) */
  int qoff;      /* q starts qoff elements into its buffer (misaligned) */
  int ints;      /* integer data in [-10, 10] (exact products), else uniform [-1, 1] */
  double scale;  /* 0: 1 / sqrt(D) */
  int nan_key;   /* a NaN in a key row of the last batch, and in a padded key of batch 0 */
} acase;

static void describe(const acase *c, char *buf, size_t n) {
  snprintf(buf, n,
           "%s B=%lld H=%lld Sq=%lld Sk=%lld D=%lld fused=%d ld+%d ldo+%d len=%d qoff=%d ints=%d "
           "scale=%g nan=%d",
           t_dtype_name(c->dt), (long long)c->B, (long long)c->H, (long long)c->Sq,
           (long long)c->Sk, (long long)c->D, c->fused, c->ld_extra, c->ldo_extra, c->len_mode,
           c->qoff, c->ints, c->scale, c->nan_key);
}

/* The lengths of len_mode 1: random in [1, Sk], 0, Sk + 3, -2, repeating. */
static int32_t draw_length(int64_t b, int64_t Sk) {
  switch (b % 4) {
    case 0:
      return (int32_t)(1 + t_next() % (uint64_t)(Sk > 0 ? Sk : 1));
    case 1:
      return 0;
    case 2:
      return (int32_t)(Sk + 3);
    default:
      return -2;
  }
}

static int64_t key_count(const int32_t *len, int64_t b, int64_t Sk) {
  if (!len) return Sk;
  int64_t l = len[b];
  return l < 0 ? 0 : l > Sk ? Sk : l;
}

/* Whether gko takes the tensor-core kernel (the header's rule). */
static int tensor_path(gko_dtype_t dt, int64_t D, const void *const *p, const int64_t *ld) {
  if (dt == GKO_DTYPE_F32 || D % 8 != 0 || D > 128 || t_cc() < 80) return 0;
  for (int i = 0; i < 4; i++)
    if ((uintptr_t)p[i] % 16 != 0 || (ld[i] * 2) % 16 != 0) return 0;
  return 1;
}

static double draw(const acase *c) {
  return c->ints ? (double)((int64_t)(t_next() % 21) - 10) : t_uniform(-1, 1);
}

/* One operand in device layout on the host (doubles, already rounded to
 * dtype) and its device copy. */
typedef struct {
  int64_t rows, ld, off; /* element (r, col) at off + r * ld + col */
  size_t elems;          /* the buffer's elements */
  double *h;
  void *d;
} operand;

static void operand_make(operand *x, int64_t rows, int64_t ld, int64_t off) {
  x->rows = rows;
  x->ld = ld;
  x->off = off;
  x->elems = (size_t)(off + rows * ld + 8);
  x->h = malloc(x->elems * sizeof(double));
  cr_assert(x->h);
  for (size_t i = 0; i < x->elems; i++) x->h[i] = NAN; /* gaps: NaN */
}

static void operand_upload(gko_dtype_t dt, operand *x) {
  const size_t es = gko_dtype_size(dt);
  void *buf = malloc(x->elems * es);
  cr_assert(buf);
  for (size_t i = 0; i < x->elems; i++) t_hv_set(dt, buf, (int64_t)i, x->h[i]);
  x->d = t_dalloc(x->elems * es);
  t_h2d(x->d, buf, x->elems * es);
  free(buf);
}

/* Runs one case, checks every element and the untouched bytes of o;
 * returns the number of failures (first few logged). */
static int64_t run_case(gko_handle_t h, const acase *c, uint64_t seed) {
  char desc[400];
  describe(c, desc, sizeof desc);
  const gko_dtype_t dt = c->dt;
  const size_t es = gko_dtype_size(dt);
  const int64_t B = c->B, H = c->H, Sq = c->Sq, Sk = c->Sk, D = c->D, HD = H * D;
  const double scale = c->scale != 0 ? c->scale : 1.0 / sqrt((double)D);
  operand qkv = {0}, q = {0}, k = {0}, v = {0};
  int64_t qo, ko, vo, ldq, ldk, ldv; /* element offsets of q, k, v in their operands */
  operand *qb, *kb, *vb;
  if (c->fused) {
    cr_assert_eq(Sq, Sk);
    operand_make(&qkv, B * Sq, 3 * HD, c->qoff);
    qb = kb = vb = &qkv;
    qo = c->qoff, ko = c->qoff + HD, vo = c->qoff + 2 * HD;
    ldq = ldk = ldv = 3 * HD;
  } else {
    operand_make(&q, B * Sq, HD + c->ld_extra, c->qoff);
    operand_make(&k, B * Sk, HD + c->ld_extra, 0);
    operand_make(&v, B * Sk, HD + c->ld_extra, 0);
    qb = &q, kb = &k, vb = &v;
    qo = c->qoff, ko = vo = 0;
    ldq = ldk = ldv = HD + c->ld_extra;
  }
  for (int64_t r = 0; r < B * Sq; r++)
    for (int64_t j = 0; j < HD; j++) qb->h[qo + r * ldq + j] = t_round(dt, draw(c));
  for (int64_t r = 0; r < B * Sk; r++)
    for (int64_t j = 0; j < HD; j++) {
      kb->h[ko + r * ldk + j] = t_round(dt, draw(c));
      vb->h[vo + r * ldv + j] = t_round(dt, draw(c));
    }
  int32_t *len = NULL;
  if (c->len_mode) {
    len = malloc((size_t)B * sizeof *len);
    for (int64_t b = 0; b < B; b++) len[b] = draw_length(b, Sk);
  }
  /* padded keys (j >= length) hold NaN: they must not reach the result */
  for (int64_t b = 0; b < B; b++)
    for (int64_t j = key_count(len, b, Sk); j < Sk; j++)
      for (int64_t e = 0; e < HD; e++) {
        kb->h[ko + (b * Sk + j) * ldk + e] = NAN;
        vb->h[vo + (b * Sk + j) * ldv + e] = NAN;
      }
  int64_t nan_batch = -1;
  if (c->nan_key) {
    /* key 1 of the last batch: every head's first element */
    nan_batch = B - 1;
    cr_assert(key_count(len, nan_batch, Sk) > 1);
    for (int64_t hh = 0; hh < H; hh++) kb->h[ko + (nan_batch * Sk + 1) * ldk + hh * D] = NAN;
  }
  if (c->fused) {
    operand_upload(dt, &qkv);
  } else {
    operand_upload(dt, &q);
    operand_upload(dt, &k);
    operand_upload(dt, &v);
  }
  const int64_t ldo = HD + c->ldo_extra;
  const size_t obytes = (size_t)(B * Sq * ldo + 8) * es;
  unsigned char *od = t_dalloc(obytes);
  t_memset(od, T_POISON_BYTE, obytes);
  int32_t *lend = NULL;
  if (len) {
    lend = t_dalloc((size_t)B * sizeof *len);
    t_h2d(lend, len, (size_t)B * sizeof *len);
  }
  const char *qd = (const char *)qb->d + qo * es, *kd = (const char *)kb->d + ko * es,
             *vd = (const char *)vb->d + vo * es;
  const void *ptrs[4] = {qd, kd, vd, od};
  const int64_t lds[4] = {ldq, ldk, ldv, ldo};
  const int tc = tensor_path(dt, D, ptrs, lds);
  T_OK(gko_attention(h, dt, B, H, Sq, Sk, D, (float)scale, qd, ldq, kd, ldk, vd, ldv, lend, od, ldo,
                     NULL));
  T_CUDA(cudaDeviceSynchronize());
  unsigned char *out = malloc(obytes);
  cr_assert(out);
  t_d2h(out, od, obytes);

  const double u = t_unit(dt);
  const double base = dt == GKO_DTYPE_F32 ? 1e-5 : (tc ? 4 : 2) * u;
  const double es_mult = (c->ints ? 2.0 : (double)(D + 2)) * ldexp(1, -24);
  double *w = malloc((size_t)(Sk > 0 ? Sk : 1) * sizeof *w);
  double *ref = malloc((size_t)D * sizeof *ref);
  int64_t bad = 0;
  for (int64_t b = 0; b < B; b++)
    for (int64_t hh = 0; hh < H; hh++) {
      const int64_t n = key_count(len, b, Sk);
      double vmax = 0;
      for (int64_t j = 0; j < n; j++)
        for (int64_t e = 0; e < D; e++)
          vmax = fmax(vmax, fabs(vb->h[vo + (b * Sk + j) * ldv + hh * D + e]));
      for (int64_t i = 0; i < Sq; i++) {
        const double *qr = qb->h + qo + (b * Sq + i) * ldq + hh * D;
        double mx = -INFINITY, errs = 0, sum = 0;
        for (int64_t j = 0; j < n; j++) {
          const double *kr = kb->h + ko + (b * Sk + j) * ldk + hh * D;
          double s = 0, sa = 0;
          for (int64_t e = 0; e < D; e++) {
            s += qr[e] * kr[e];
            sa += fabs(qr[e] * kr[e]);
          }
          w[j] = scale * s;
          mx = fmax(mx, w[j]);
          errs = fmax(errs, fabs(scale) * sa * es_mult);
        }
        for (int64_t j = 0; j < n; j++) sum += (w[j] = exp(w[j] - mx));
        for (int64_t e = 0; e < D; e++) {
          double acc = 0;
          for (int64_t j = 0; j < n; j++) acc += w[j] * vb->h[vo + (b * Sk + j) * ldv + hh * D + e];
          ref[e] = n ? acc / sum : 0.0;
        }
        const double tol = vmax * (base + 2 * errs);
        for (int64_t e = 0; e < D; e++) {
          const double got = t_hv_get(dt, out, (b * Sq + i) * ldo + hh * D + e);
          int ok;
          if (isnan(ref[e]))
            ok = isnan(got);
          else if (n == 0)
            ok = got == 0.0;
          else
            ok = fabs(got - ref[e]) <= tol;
          if (!ok && bad++ < 5)
            cr_log_error(
                "seed %llu [%s] %s: b %lld h %lld row %lld col %lld (keys %lld): got %.9g "
                "want %.9g (tol %.3g)",
                (unsigned long long)seed, desc, tc ? "tensor" : "cuda-core", (long long)b,
                (long long)hh, (long long)i, (long long)e, (long long)n, got, ref[e], tol);
        }
      }
    }
  /* the gap columns of o and the bytes past its last row: still poison */
  for (int64_t r = 0; r < B * Sq; r++)
    for (size_t x = (size_t)(r * ldo + HD) * es; x < (size_t)(r + 1) * ldo * es; x++)
      if (out[x] != T_POISON_BYTE && bad++ < 5)
        cr_log_error("seed %llu [%s]: gap byte %zu of o written", (unsigned long long)seed, desc,
                     x);
  for (size_t x = (size_t)(B * Sq * ldo) * es; x < obytes; x++)
    if (out[x] != T_POISON_BYTE && bad++ < 5)
      cr_log_error("seed %llu [%s]: byte %zu past o written", (unsigned long long)seed, desc, x);
  if (bad)
    cr_log_error("seed %llu [%s]: %lld failures", (unsigned long long)seed, desc, (long long)bad);
  free(w);
  free(ref);
  free(out);
  free(len);
  cudaFree(od);
  if (lend) cudaFree(lend);
  operand *ops[4] = {&qkv, &q, &k, &v};
  for (int i = 0; i < 4; i++) {
    free(ops[i]->h);
    if (ops[i]->d) cudaFree(ops[i]->d);
  }
  return bad;
}

static acase mk(gko_dtype_t dt, int64_t B, int64_t H, int64_t Sq, int64_t Sk, int64_t D) {
  acase c = {0};
  c.dt = dt;
  c.B = B, c.H = H, c.Sq = Sq, c.Sk = Sk, c.D = D;
  return c;
}

/* Shapes: seq 1, 7, 64, 65, 128, 257, 512, seq_q != seq_k, batch 1..4,
 * heads 1..12, fused and separate operands, gaps in ld and ldo (ldo + 8
 * keeps 16-byte rows, + 3 does not), lengths NULL and varied. */
static acase shape(int i, gko_dtype_t dt, int64_t D) {
  acase c;
  switch (i) {
    case 0:
      c = mk(dt, 1, 1, 1, 1, D);
      break;
    case 1:
      c = mk(dt, 3, 12, 7, 65, D);
      c.len_mode = 1;
      break;
    case 2:
      c = mk(dt, 3, 12, 64, 64, D);
      c.fused = 1;
      break;
    case 3:
      c = mk(dt, 1, 1, 65, 128, D);
      c.ldo_extra = 8;
      c.ld_extra = 8;
      break;
    case 4:
      c = mk(dt, 1, 2, 128, 257, D);
      c.ldo_extra = 3;
      break;
    case 5:
      c = mk(dt, 3, 1, 257, 7, D);
      c.len_mode = 1;
      c.ld_extra = 16;
      break;
    case 6:
      c = mk(dt, 1, 1, 512, 512, D);
      break;
    default:
      c = mk(dt, 4, 12, 128, 128, D);
      c.fused = 1;
      c.len_mode = 1;
      c.ldo_extra = 8;
      break;
  }
  return c;
}
enum { kShapes = 8 };

/* head_dim: 32, 64, 128 (tensor cores, 16-bit), 8 and 40 (padded to 32 and
 * 64), 1, 3, 17, 200, 256 (CUDA-core kernel) */
static const int64_t kDims[] = {32, 64, 128, 8, 40, 1, 3, 17, 200, 256};

static void shapes_for(gko_dtype_t dt) {
  uint64_t seed;
  gko_handle_t h = t_gpu_setup(&seed);
  int64_t bad = 0;
  for (size_t d = 0; d < sizeof kDims / sizeof kDims[0]; d++)
    for (int i = 0; i < kShapes; i++) {
      acase c = shape(i, dt, kDims[d]);
      /* the largest head_dims on the largest shapes: heads 2 keep the
       * host reference quick */
      if (kDims[d] >= 200 && c.H > 2) c.H = 2;
      bad += run_case(h, &c, seed) != 0;
    }
  cr_expect_eq(bad, 0, "seed %llu: %lld failing cases", (unsigned long long)seed, (long long)bad);
  gko_destroy(h);
}

Test(attention, shapes_f32, .timeout = 600) { shapes_for(GKO_DTYPE_F32); }
Test(attention, shapes_f16, .timeout = 600) { shapes_for(GKO_DTYPE_F16); }
Test(attention, shapes_bf16, .timeout = 600) { shapes_for(GKO_DTYPE_BF16); }

static const gko_dtype_t kDtypes[3] = {GKO_DTYPE_F32, GKO_DTYPE_F16, GKO_DTYPE_BF16};

/* q one element past a 16-byte boundary: the CUDA-core kernel, still right. */
Test(attention, misaligned_q_falls_back) {
  uint64_t seed;
  gko_handle_t h = t_gpu_setup(&seed);
  for (int d = 0; d < 3; d++) {
    acase c = mk(kDtypes[d], 2, 12, 65, 64, 64);
    c.qoff = 1;
    cr_expect_eq(run_case(h, &c, seed), 0);
    c.fused = 1; /* q, k and v all misaligned */
    c.Sk = c.Sq;
    cr_expect_eq(run_case(h, &c, seed), 0);
  }
  gko_destroy(h);
}

/* Scores in the tens of thousands (scale 10, integers up to 10): the
 * running maximum keeps every exponential finite. */
Test(attention, large_scores_do_not_overflow) {
  uint64_t seed;
  gko_handle_t h = t_gpu_setup(&seed);
  for (int d = 0; d < 3; d++)
    for (int D = 32; D <= 64; D *= 2) {
      acase c = mk(kDtypes[d], 2, 3, 70, 130, D);
      c.ints = 1;
      c.scale = 10;
      cr_expect_eq(run_case(h, &c, seed), 0);
      c.scale = -10; /* the maximum of the scaled scores, not of Q K^T */
      cr_expect_eq(run_case(h, &c, seed), 0);
    }
  gko_destroy(h);
}

/* A NaN in a key row makes every row of that batch NaN (each query's score
 * against it is NaN, as the math gives); a NaN in a padded key does not. */
Test(attention, nan_key_row) {
  uint64_t seed;
  gko_handle_t h = t_gpu_setup(&seed);
  for (int d = 0; d < 3; d++)
    for (int D = 17; D <= 64; D += 47) {
      acase c = mk(kDtypes[d], 3, 2, 9, 70, D);
      c.len_mode = 1; /* batch 2 has 73 keys (all 70); batch 0's tail and batch 1 are NaN */
      c.nan_key = 1;
      cr_expect_eq(run_case(h, &c, seed), 0);
    }
  gko_destroy(h);
}

/* batch * heads above the 65535 limit of gridDim.y / z. */
Test(attention, many_batches_and_heads) {
  uint64_t seed;
  gko_handle_t h = t_gpu_setup(&seed);
  for (int d = 0; d < 3; d++) {
    acase c = mk(kDtypes[d], 5500, 12, 2, 3, 8);
    cr_expect_eq(run_case(h, &c, seed), 0);
  }
  gko_destroy(h);
}

/* ---- empty problems ------------------------------------------------------------- */

Test(attention, empty_problems) {
  T_REQUIRE_GPU();
  gko_handle_t h = t_handle();
  const gko_dtype_t F16 = GKO_DTYPE_F16;
  T_OK(gko_attention(h, F16, 0, 12, 128, 128, 64, 0.125f, NULL, 768, NULL, 768, NULL, 768, NULL,
                     NULL, 768, NULL));
  T_OK(gko_attention(h, F16, 2, 0, 128, 128, 64, 0.125f, NULL, 0, NULL, 0, NULL, 0, NULL, NULL, 0,
                     NULL));
  T_OK(gko_attention(h, F16, 2, 12, 0, 128, 64, 0.125f, NULL, 768, NULL, 768, NULL, 768, NULL, NULL,
                     768, NULL));
  /* no keys: zero rows, k and v never read (NULL allowed) */
  for (int d = 0; d < 3; d++) {
    const size_t es = gko_dtype_size(kDtypes[d]);
    const int64_t B = 2, H = 3, S = 5, D = 16;
    void *q = t_dalloc(B * S * H * D * es), *o = t_dalloc(B * S * H * D * es);
    t_memset(q, 0x3c, B * S * H * D * es);
    t_memset(o, T_POISON_BYTE, B * S * H * D * es);
    T_OK(gko_attention(h, kDtypes[d], B, H, S, 0, D, 0.25f, q, H * D, NULL, H * D, NULL, H * D,
                       NULL, o, H * D, NULL));
    T_CUDA(cudaDeviceSynchronize());
    unsigned char *back = malloc(B * S * H * D * es);
    t_d2h(back, o, B * S * H * D * es);
    for (size_t i = 0; i < B * S * H * D * es; i++) cr_expect_eq(back[i], 0, "byte %zu", i);
    free(back);
    cudaFree(q);
    cudaFree(o);
  }
  gko_destroy(h);
}

/* ---- bad arguments --------------------------------------------------------------- */

/* The call fails with `status`, a detail naming `word`. */
#define EXPECT_FAILS(status, word, call)                                                     \
  do {                                                                                       \
    const gko_status_t e_s_ = (call);                                                        \
    cr_expect_eq(e_s_, (status), "%s -> %s (wanted %s): %s", #call, gko_status_name(e_s_),   \
                 gko_status_name(status), gko_last_error_detail());                          \
    cr_expect(strstr(gko_last_error_detail(), (word)) != NULL, "%s: detail '%s' lacks '%s'", \
              #call, gko_last_error_detail(), (word));                                       \
  } while (0)

Test(attention, rejects_a_null_handle_without_a_gpu) {
  static uint16_t buf[4 * 64];
  EXPECT_FAILS(GKO_STATUS_INVALID_VALUE, "handle",
               gko_attention(NULL, GKO_DTYPE_F16, 1, 1, 2, 2, 8, 0.5f, buf, 8, buf + 16, 8,
                             buf + 32, 8, NULL, buf + 64, 8, NULL));
  EXPECT_FAILS(GKO_STATUS_INVALID_VALUE, "handle",
               gko_attention(NULL, GKO_DTYPE_F32, 0, 1, 2, 2, 8, 0.5f, NULL, 8, NULL, 8, NULL, 8,
                             NULL, NULL, 8, NULL));
}

Test(attention, bad_arguments_leave_o_untouched) {
  T_REQUIRE_GPU();
  gko_handle_t h = t_handle();
  const gko_dtype_t F16 = GKO_DTYPE_F16, F32 = GKO_DTYPE_F32;
  const int64_t B = 2, H = 2, S = 16, D = 32, HD = H * D;
  const size_t bytes = (size_t)(B * S * HD) * 4;
  char *q = t_dalloc(bytes), *k = t_dalloc(bytes), *v = t_dalloc(bytes);
  char *o = t_dalloc(bytes + 64);
  int32_t *len = t_dalloc(64);
  t_memset(q, 0x3c, bytes);
  t_memset(k, 0x3c, bytes);
  t_memset(v, 0x3c, bytes);
  t_memset(len, 0, 64);
  t_memset(o, T_POISON_BYTE, bytes + 64);
  const float sc = 0.125f;
#define CALL(dt, b, hh, sq, sk, d, scale, qp, ldq, kp, ldk, vp, ldv, lp, op, ldo) \
  gko_attention(h, dt, b, hh, sq, sk, d, scale, qp, ldq, kp, ldk, vp, ldv, lp, op, ldo, NULL)
  const gko_status_t INV = GKO_STATUS_INVALID_VALUE, NS = GKO_STATUS_NOT_SUPPORTED;
  EXPECT_FAILS(INV, "q", CALL(F16, B, H, S, S, D, sc, NULL, HD, k, HD, v, HD, NULL, o, HD));
  EXPECT_FAILS(INV, "k", CALL(F16, B, H, S, S, D, sc, q, HD, NULL, HD, v, HD, NULL, o, HD));
  EXPECT_FAILS(INV, "v", CALL(F16, B, H, S, S, D, sc, q, HD, k, HD, NULL, HD, NULL, o, HD));
  EXPECT_FAILS(INV, "o", CALL(F16, B, H, S, S, D, sc, q, HD, k, HD, v, HD, NULL, NULL, HD));
  EXPECT_FAILS(INV, "batch", CALL(F16, -1, H, S, S, D, sc, q, HD, k, HD, v, HD, NULL, o, HD));
  EXPECT_FAILS(INV, "heads", CALL(F16, B, -1, S, S, D, sc, q, HD, k, HD, v, HD, NULL, o, HD));
  EXPECT_FAILS(INV, "seq_q", CALL(F16, B, H, -1, S, D, sc, q, HD, k, HD, v, HD, NULL, o, HD));
  EXPECT_FAILS(INV, "seq_k", CALL(F16, B, H, S, -1, D, sc, q, HD, k, HD, v, HD, NULL, o, HD));
  EXPECT_FAILS(INV, "head_dim", CALL(F16, B, H, S, S, 0, sc, q, HD, k, HD, v, HD, NULL, o, HD));
  EXPECT_FAILS(INV, "head_dim", CALL(F16, B, H, S, S, -3, sc, q, HD, k, HD, v, HD, NULL, o, HD));
  EXPECT_FAILS(NS, "head_dim",
               CALL(F16, B, 1, S, S, 257, sc, q, 257, k, 257, v, 257, NULL, o, 257));
  EXPECT_FAILS(INV, "ldq", CALL(F16, B, H, S, S, D, sc, q, HD - 1, k, HD, v, HD, NULL, o, HD));
  EXPECT_FAILS(INV, "ldk", CALL(F16, B, H, S, S, D, sc, q, HD, k, HD - 1, v, HD, NULL, o, HD));
  EXPECT_FAILS(INV, "ldv", CALL(F16, B, H, S, S, D, sc, q, HD, k, HD, v, -1, NULL, o, HD));
  EXPECT_FAILS(INV, "ldo", CALL(F16, B, H, S, S, D, sc, q, HD, k, HD, v, HD, NULL, o, 1));
  EXPECT_FAILS(INV, "scale", CALL(F16, B, H, S, S, D, NAN, q, HD, k, HD, v, HD, NULL, o, HD));
  EXPECT_FAILS(INV, "scale", CALL(F16, B, H, S, S, D, INFINITY, q, HD, k, HD, v, HD, NULL, o, HD));
  EXPECT_FAILS(NS, "dtype",
               CALL(GKO_DTYPE_F8E4M3, B, H, S, S, D, sc, q, HD, k, HD, v, HD, NULL, o, HD));
  EXPECT_FAILS(NS, "dtype",
               CALL(GKO_DTYPE_F8E5M2, B, H, S, S, D, sc, q, HD, k, HD, v, HD, NULL, o, HD));
  EXPECT_FAILS(INV, "dtype",
               CALL((gko_dtype_t)9, B, H, S, S, D, sc, q, HD, k, HD, v, HD, NULL, o, HD));
  EXPECT_FAILS(INV, "q", CALL(F32, B, H, S, S, D, sc, q + 2, HD, k, HD, v, HD, NULL, o, HD));
  EXPECT_FAILS(INV, "o", CALL(F16, B, H, S, S, D, sc, q, HD, k, HD, v, HD, NULL, o + 1, HD));
  EXPECT_FAILS(
      INV, "lengths",
      CALL(F16, B, H, S, S, D, sc, q, HD, k, HD, v, HD, (int32_t *)((char *)len + 2), o, HD));
  /* o overlapping q, k or v (here o's own buffer as the input) */
  EXPECT_FAILS(INV, "overlaps q",
               CALL(F16, B, H, S, S, D, sc, o + 64, HD, k, HD, v, HD, NULL, o, HD));
  EXPECT_FAILS(INV, "overlaps q", CALL(F16, B, H, S, S, D, sc, o, HD, k, HD, v, HD, NULL, o, HD));
  EXPECT_FAILS(INV, "overlaps k",
               CALL(F16, B, H, S, S, D, sc, q, HD, o + 2, HD, v, HD, NULL, o, HD));
  EXPECT_FAILS(INV, "overlaps v", CALL(F16, B, H, S, S, D, sc, q, HD, k, HD, o, HD, NULL, o, HD));
  EXPECT_FAILS(INV, "overlaps lengths",
               CALL(F16, B, H, S, S, D, sc, q, HD, k, HD, v, HD, (int32_t *)(o + 128), o, HD));
#undef CALL
  t_assert_poisoned(o, bytes + 64);
  cudaFree(q);
  cudaFree(k);
  cudaFree(v);
  cudaFree(o);
  cudaFree(len);
  gko_destroy(h);
}

/* ---- graph capture and determinism ------------------------------------------------------ */

typedef struct {
  gko_dtype_t dt;
  int64_t B, H, S, D;
  void *qkv, *o;
  int32_t *len;
  size_t obytes;
} fixture;

/* A MiniLM-like problem on one fused QKV buffer with key-padding lengths. */
static fixture fixture_make(gko_dtype_t dt, int64_t B, int64_t H, int64_t S, int64_t D) {
  fixture f = {dt, B, H, S, D, NULL, NULL, NULL, 0};
  const size_t es = gko_dtype_size(dt), n = (size_t)(B * S * 3 * H * D);
  void *hbuf = malloc(n * es);
  for (size_t i = 0; i < n; i++) t_hv_set(dt, hbuf, (int64_t)i, t_uniform(-2, 2));
  f.qkv = t_dalloc(n * es);
  t_h2d(f.qkv, hbuf, n * es);
  free(hbuf);
  int32_t *len = malloc((size_t)B * sizeof *len);
  for (int64_t b = 0; b < B; b++) len[b] = (int32_t)(1 + t_next() % (uint64_t)S);
  f.len = t_dalloc((size_t)B * sizeof *len);
  t_h2d(f.len, len, (size_t)B * sizeof *len);
  free(len);
  f.obytes = (size_t)(B * S * H * D) * es;
  f.o = t_dalloc(f.obytes);
  return f;
}

static gko_status_t fixture_run(gko_handle_t h, const fixture *f, void *o, cudaStream_t st) {
  const size_t es = gko_dtype_size(f->dt);
  const int64_t HD = f->H * f->D;
  const char *base = f->qkv;
  return gko_attention(h, f->dt, f->B, f->H, f->S, f->S, f->D, 1.0f / sqrtf((float)f->D), base,
                       3 * HD, base + HD * es, 3 * HD, base + 2 * HD * es, 3 * HD, f->len, o, HD,
                       st);
}

static void fixture_free(fixture *f) {
  cudaFree(f->qkv);
  cudaFree(f->o);
  cudaFree(f->len);
}

Test(attention, graph_replay_matches_eager) {
  T_REQUIRE_GPU();
  t_seed();
  gko_handle_t h = t_handle();
  const int64_t dims[3] = {32, 64, 24};
  for (int d = 0; d < 3; d++)
    for (int di = 0; di < 3; di++) {
      fixture f = fixture_make(kDtypes[d], 3, 12, 100, dims[di]);
      void *o2 = t_dalloc(f.obytes);
      t_memset(f.o, T_POISON_BYTE, f.obytes);
      t_memset(o2, T_POISON_BYTE, f.obytes);
      cudaStream_t st;
      T_CUDA(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
      T_OK(fixture_run(h, &f, f.o, st));
      T_CUDA(cudaStreamSynchronize(st));
      cudaGraph_t g;
      cudaGraphExec_t ge;
      T_CUDA(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
      const gko_status_t s = fixture_run(h, &f, o2, st);
      char detail[512];
      snprintf(detail, sizeof detail, "%s", gko_last_error_detail());
      const cudaError_t ce = cudaStreamEndCapture(st, &g);
      cr_assert_eq(s, GKO_STATUS_SUCCESS, "under capture: %s: %s", gko_status_name(s), detail);
      cr_assert_eq(ce, cudaSuccess, "capture invalidated: %s", cudaGetErrorString(ce));
      T_CUDA(cudaGraphInstantiate(&ge, g, 0));
      for (int r = 0; r < 2; r++) T_CUDA(cudaGraphLaunch(ge, st));
      T_CUDA(cudaStreamSynchronize(st));
      unsigned char *h1 = malloc(f.obytes), *h2 = malloc(f.obytes);
      t_d2h(h1, f.o, f.obytes);
      t_d2h(h2, o2, f.obytes);
      cr_expect_eq(memcmp(h1, h2, f.obytes), 0, "%s D=%lld: graph replay differs from eager",
                   t_dtype_name(kDtypes[d]), (long long)dims[di]);
      free(h1);
      free(h2);
      cudaGraphExecDestroy(ge);
      cudaGraphDestroy(g);
      cudaStreamDestroy(st);
      cudaFree(o2);
      fixture_free(&f);
    }
  gko_destroy(h);
}

Test(attention, deterministic) {
  T_REQUIRE_GPU();
  t_seed();
  gko_handle_t h = t_handle();
  const int64_t dims[3] = {64, 128, 40};
  for (int d = 0; d < 3; d++)
    for (int di = 0; di < 3; di++) {
      fixture f = fixture_make(kDtypes[d], 4, 12, 300, dims[di]);
      void *o2 = t_dalloc(f.obytes);
      T_OK(fixture_run(h, &f, f.o, NULL));
      T_OK(fixture_run(h, &f, o2, NULL));
      T_CUDA(cudaDeviceSynchronize());
      unsigned char *h1 = malloc(f.obytes), *h2 = malloc(f.obytes);
      t_d2h(h1, f.o, f.obytes);
      t_d2h(h2, o2, f.obytes);
      cr_expect_eq(memcmp(h1, h2, f.obytes), 0, "%s D=%lld: two runs differ",
                   t_dtype_name(kDtypes[d]), (long long)dims[di]);
      free(h1);
      free(h2);
      cudaFree(o2);
      fixture_free(&f);
    }
  gko_destroy(h);
}
