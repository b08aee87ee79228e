/* test_fp8.c -- the 8-bit floating-point types (OCP E4M3 and E5M2):
 * gko_quantize, gko_dequantize, the FP8 GEMM (gko_gemm_execute_scaled, on
 * cuBLASLt) and the other operators' refusal of the 8-bit types, against
 * float64 host references.
 *
 * The host codec (f8_decode / f8_encode) is written from the OCP 8-bit
 * Floating Point Specification (2023): E4M3 bias 7, no infinities,
 * S.1111.111 NaN, largest finite 448; E5M2 bias 15, IEEE infinities and
 * NaNs, largest finite 57344; both with subnormals.  f8_encode rounds to
 * nearest even and saturates finite values beyond the largest finite one, as
 * gko.h specifies for gko_quantize.  fp8/reference_codec_matches_the_spec
 * checks it against hand-derived bytes (kDoc) before any GPU result is
 * judged by it.
 *
 * Measures (stated once, used everywhere):
 *   quantize     bytes equal to f8_encode((float)(x * scale)) exactly; for a
 *                NaN any NaN encoding is accepted.  amax bitwise equal to
 *                max |x| (NaN if any x is NaN, +0 for an empty input).
 *   dequantize   bits equal to (float)(decode(x) * scale) rounded once to
 *                the output type (nearest even); any NaN for a NaN.
 *   GEMM         X = alpha sum_p (sa_i a_ip)(sb_j b_jp) + beta c_ij + bias_j
 *                in float64 (the FP8 products and their sum are exact in
 *                float64 for the operands drawn here: |a|, |b| <= 2).  Per
 *                element, with S = |alpha sa_i sb_j| sum_p |a_ip b_jp| and
 *                T = |alpha sa_i sb_j sum_p a_ip b_jp| + |beta c_ij| + |bias_j|,
 *                the GPU's f32 value of X may be off by
 *                  E = S (k 2^-23 + acc) + 4 * 2^-24 T
 *                (k 2^-23: f32 accumulation; 4 * 2^-24 T: the f32 scaling
 *                and epilogue additions) where acc accounts for the Tensor
 *                Cores' own partial sums, which keep about 14 bits (DeepSeek-V3
 *                technical report, 2024, 3.3.2, the source gko.h cites):
 *                  COMPUTE_DEFAULT        acc = 2^-9
 *                  FP8_FAST_ACCUMULATE    acc = 2^-9 + ceil(k / 32) 2^-17 (no
 *                                         promotion into f32 registers: the
 *                                         accumulator's truncation compounds
 *                                         over the k / 32 MMA steps)
 *                How acc was chosen: a host model of the MMA -- each step of
 *                32 products truncates every product and the running partial
 *                sum to 13 bits below the largest exponent among them (more
 *                pessimistic than the 14 bits reported), promoted into f32
 *                every 4 steps (COMPUTE_DEFAULT) or never (FAST) -- on these
 *                tests' operands (FP8 values up to 2 in magnitude, 20000 dot
 *                products per k in {16, 32, 64, 512, 4096}, both formats)
 *                gave at most 2^-10.7 S (default, k = 16, E5M2) and 2^-10.4 S
 *                (fast, k = 4096); for fast accumulation at k = 4096 it
 *                reproduces the report's "nearly 2 %" (1.5 % of
 *                sqrt(sum_p (a_p b_p)^2), a typical |X|).  So acc keeps a
 *                margin of 3x or more over a pessimistic model, and any
 *                real bug (a factor applied twice or not at all, a wrong
 *                row or column of factors, a format decoded as the other, a
 *                dropped product) exceeds it by orders of magnitude.
 *                D F32/F16/BF16:  |D - act(X)| <= E + u (|act(X)| + T + E)
 *                  (+ 2^-25 for f16 subnormals), u = 2^-24 / 2^-11 / 2^-8:
 *                  D rounded once, or twice where gko's pass adds the bias.
 *                D FP8:  decode(D) lies between f8_encode(scale_d act(X - E'))
 *                  and f8_encode(scale_d act(X + E')), E' = E + 2^-23 (|X| +
 *                  E), each end widened by 2^-23 (the f32 product with
 *                  scale_d): exact by construction (quantization is monotone),
 *                  no ulp allowance needed.
 *                amax_d:  between the largest |act(X -+ B)|, B the element's
 *                  bound above (only where every row is checked).
 *                Every byte of D beyond its extent must keep the poison.
 * Every output is poisoned first (0xFF bytes: NaN in f32, f16, bf16, E4M3
 * and E5M2; amax outputs 0x55 bytes, a finite value, so that an expected NaN
 * cannot pass unwritten).  Inputs are fresh random numbers (seed printed
 * with every failure; GKO_TEST_SEED replays). */
#include <float.h>

#include "common.h"

#define E4M3 GKO_DTYPE_F8E4M3
#define E5M2 GKO_DTYPE_F8E5M2

/* ==== the two formats on the host ========================================== */

typedef struct {
  int mbits, bias;
  double max; /* largest finite value */
  uint8_t max_code; /* its (positive) byte */
  uint8_t nan_code; /* a NaN */
  const char *name;
} f8fmt;

static const f8fmt kE4M3 = {3, 7, 448.0, 0x7e, 0x7f, "e4m3"};
static const f8fmt kE5M2 = {2, 15, 57344.0, 0x7b, 0x7e, "e5m2"};

static int is_f8(gko_dtype_t dt) { return dt == E4M3 || dt == E5M2; }
static const f8fmt *f8(gko_dtype_t dt) { return dt == E4M3 ? &kE4M3 : &kE5M2; }
static const char *dt_name(gko_dtype_t dt) { return is_f8(dt) ? f8(dt)->name : t_dtype_name(dt); }

/* The smallest subnormal: 2^-9 (E4M3), 2^-16 (E5M2). */
static double f8_min_sub(gko_dtype_t dt) { return ldexp(1.0, 1 - f8(dt)->bias - f8(dt)->mbits); }

static double f8_decode(gko_dtype_t dt, uint8_t b) {
  const f8fmt *f = f8(dt);
  const int e = (b & 0x7f) >> f->mbits, m = b & ((1 << f->mbits) - 1);
  const double s = (b & 0x80) ? -1.0 : 1.0;
  if (dt == E4M3) {
    if (e == 15 && m == 7) return NAN;
  } else if (e == 31) {
    return m ? NAN : s * INFINITY;
  }
  if (e == 0) return s * ldexp(m, 1 - f->bias - f->mbits);
  return s * ldexp((1 << f->mbits) + m, e - f->bias - f->mbits);
}

/* v rounded to nearest even into dt, finite values beyond the largest finite
 * one saturated to it, NaN to NaN, an infinity to E5M2's infinity or E4M3's
 * NaN, -0 to -0 (gko_quantize's rules). */
static uint8_t f8_encode(gko_dtype_t dt, double v) {
  const f8fmt *f = f8(dt);
  const uint8_t sign = signbit(v) ? 0x80 : 0;
  if (isnan(v)) return f->nan_code;
  if (isinf(v)) return sign | (dt == E5M2 ? 0x7c : 0x7f);
  const double a = fabs(v);
  if (a >= f->max) return sign | f->max_code;
  if (a == 0) return sign;
  int e2;
  frexp(a, &e2);
  int ex = e2 - 1; /* a = 1.m * 2^ex */
  if (ex < 1 - f->bias) ex = 1 - f->bias; /* subnormal spacing */
  const int one = 1 << f->mbits;
  int m = (int)nearbyint(ldexp(a, f->mbits - ex)); /* ties to even */
  if (m >= 2 * one) {
    m >>= 1;
    ex++;
  }
  if (m < one) return sign | (uint8_t)m; /* subnormal (or zero) */
  return sign | (uint8_t)(((ex + f->bias) << f->mbits) | (m - one));
}

/* Equal bytes, or both NaN. */
static int f8_same(gko_dtype_t dt, uint8_t got, uint8_t want) {
  if (isnan(f8_decode(dt, want))) return isnan(f8_decode(dt, got));
  return got == want;
}

/* All 256 decoded values of dt (for the GEMM reference's inner loop). */
static const double *f8_table(gko_dtype_t dt) {
  static double tab[2][256];
  static int done[2];
  const int w = dt == E5M2;
  if (!done[w]) {
    for (int b = 0; b < 256; b++) tab[w][b] = f8_decode(dt, (uint8_t)b);
    done[w] = 1;
  }
  return tab[w];
}

/* A random byte of dt that is finite with |value| <= maxabs. */
static uint8_t f8_random_finite(gko_dtype_t dt, double maxabs) {
  for (;;) {
    const uint8_t b = (uint8_t)t_next();
    const double v = f8_decode(dt, b);
    if (isfinite(v) && fabs(v) <= maxabs) return b;
  }
}

/* ==== wide types (F32, F16, BF16) by their bits =============================== */

static uint32_t fbits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}

/* The bits of v (an f32 value) rounded to nearest even into dt. */
static uint32_t wide_bits(gko_dtype_t dt, double v) {
  if (dt == GKO_DTYPE_F32) return fbits((float)v);
  return dt == GKO_DTYPE_F16 ? t_double_to_f16(v) : t_double_to_bf16(v);
}

static uint32_t wide_load(gko_dtype_t dt, const void *a, int64_t i) {
  if (dt == GKO_DTYPE_F32) return fbits(((const float *)a)[i]);
  return ((const uint16_t *)a)[i];
}

static double wide_value(gko_dtype_t dt, uint32_t bits) {
  if (dt == GKO_DTYPE_F32) {
    float f;
    memcpy(&f, &bits, 4);
    return f;
  }
  return dt == GKO_DTYPE_F16 ? t_f16_to_float((uint16_t)bits) : t_bf16_to_float((uint16_t)bits);
}

/* Equal bits, or both NaN. */
static int wide_same(gko_dtype_t dt, uint32_t got, uint32_t want) {
  if (isnan(wide_value(dt, want))) return isnan(wide_value(dt, got));
  return got == want;
}

static const gko_dtype_t kWide[3] = {GKO_DTYPE_F32, GKO_DTYPE_F16, GKO_DTYPE_BF16};
static const gko_dtype_t kF8[2] = {E4M3, E5M2};

/* Bytes of buf outside [lo, hi) that lost the poison (the first few logged). */
static int64_t poison_outside(const unsigned char *buf, size_t bytes, size_t lo, size_t hi,
                              const char *what) {
  int64_t bad = 0;
  for (size_t i = 0; i < bytes; i++)
    if ((i < lo || i >= hi) && buf[i] != T_POISON_BYTE && bad++ < 3)
      cr_log_error("%s: byte %zu outside the output was written (0x%02x)", what, i, buf[i]);
  return bad;
}

/* The call fails with `status`, a non-empty detail that contains `word`
 * ("" for any); non-fatal, so that every refusal of a list is reported. */
#define EXPECT_FAILS(status, word, call)                                                     \
  do {                                                                                       \
    const gko_status_t e_s_ = (call);                                                        \
    cr_expect_eq(e_s_, (status), "%s -> %s (wanted %s): %s", #call, gko_status_name(e_s_),   \
                 gko_status_name(status), gko_last_error_detail());                          \
    cr_expect(gko_last_error_detail()[0] != '\0', "%s: empty detail", #call);                \
    cr_expect(strstr(gko_last_error_detail(), (word)) != NULL, "%s: detail '%s' lacks '%s'", \
              #call, gko_last_error_detail(), (word));                                       \
  } while (0)

/* Poison of amax outputs: a finite float (0x55555555), so that a NaN the
 * call should write cannot be mistaken for an unwritten output. */
#define AMAX_POISON 0x55

/* ==== quantize / dequantize: one call and its check ============================ */

/* gko_quantize's result for one element: the f32 product, then the format. */
static uint8_t ref_quant(gko_dtype_t ydt, double x, float s) {
  double p = (double)(float)(x * (double)s);
  if (isfinite(x) && isinf(p)) p = copysign(DBL_MAX, p); /* a finite x saturates (gko.h) */
  return f8_encode(ydt, p);
}

/* gko_dequantize's: the f32 product, rounded once to ydt. */
static uint32_t ref_dequant(gko_dtype_t xdt, uint8_t b, gko_dtype_t ydt, float s) {
  return wide_bits(ydt, (double)(float)(f8_decode(xdt, b) * (double)s));
}

typedef struct {
  gko_dtype_t xdt, ydt;
  int64_t rows, cols;
  gko_scale_mode_t mode;
  const float *scale; /* host factors: 1 (TENSOR) or rows (ROWWISE); NULL: the call gets NULL */
  int xoff, yoff; /* element offsets of x and y from 256-byte-aligned bases */
  int no_amax; /* quantize: pass amax = NULL */
} qcase;

static float q_scale(const qcase *c, int64_t row) {
  if (!c->scale) return 1.0f;
  return c->mode == GKO_SCALE_ROWWISE ? c->scale[row] : c->scale[0];
}

static int64_t q_nscale(const qcase *c) { return c->mode == GKO_SCALE_ROWWISE ? c->rows : 1; }

static const char *q_describe(const qcase *c, char *buf, size_t n) {
  snprintf(buf, n, "%s -> %s %lldx%lld %s scale %s%g x+%d y+%d%s", dt_name(c->xdt), dt_name(c->ydt),
           (long long)c->rows, (long long)c->cols,
           c->mode == GKO_SCALE_ROWWISE ? "ROWWISE" : "TENSOR",
           c->scale ? (c->mode == GKO_SCALE_ROWWISE ? "row 0 " : "") : "NULL ",
           c->scale ? (double)c->scale[0] : 1.0, c->xoff, c->yoff, c->no_amax ? " no amax" : "");
  return buf;
}

/* The device side of one case: x uploaded, y poisoned, the factors. */
typedef struct {
  char *x;
  unsigned char *y;
  float *scale, *amax;
  size_t ybytes; /* y: yoff elements, the output, 64 bytes of guard */
} qdev;

static void q_alloc(qdev *d, int dir, const qcase *c, const void *xh) {
  const size_t xes = gko_dtype_size(c->xdt), yes = gko_dtype_size(c->ydt);
  const size_t n = (size_t)(c->rows * c->cols);
  memset(d, 0, sizeof *d);
  d->ybytes = (n + (size_t)c->yoff) * yes + 64;
  d->x = t_dalloc((n + (size_t)c->xoff) * xes);
  d->y = t_dalloc(d->ybytes);
  t_memset(d->y, T_POISON_BYTE, d->ybytes);
  if (n) t_h2d(d->x + (size_t)c->xoff * xes, xh, n * xes);
  if (c->scale) {
    const size_t sb = (size_t)q_nscale(c) * 4;
    d->scale = t_dalloc(sb);
    t_h2d(d->scale, c->scale, sb);
  }
  if (dir == 0 && !c->no_amax) {
    d->amax = t_dalloc(4);
    t_memset(d->amax, AMAX_POISON, 4);
  }
}

/* gko_quantize (dir 0) or gko_dequantize (dir 1) on stream st. */
static gko_status_t q_call(gko_handle_t h, int dir, const qcase *c, const qdev *d,
                           cudaStream_t st) {
  void *x = d->x + (size_t)c->xoff * gko_dtype_size(c->xdt);
  void *y = d->y + (size_t)c->yoff * gko_dtype_size(c->ydt);
  if (dir == 0)
    return gko_quantize(h, c->xdt, x, c->ydt, y, c->rows, c->cols, c->mode, d->scale, d->amax, st);
  return gko_dequantize(h, c->xdt, x, c->ydt, y, c->rows, c->cols, c->mode, d->scale, st);
}

static void q_free(qdev *d) {
  cudaFree(d->x);
  cudaFree(d->y);
  cudaFree(d->scale);
  cudaFree(d->amax);
}

/* What a call left: the whole y buffer (caller frees) and amax. */
typedef struct {
  unsigned char *y;
  size_t ybytes;
  float amax;
} qout;

static qout q_fetch(const qdev *d, cudaStream_t st) {
  qout o;
  T_CUDA(cudaStreamSynchronize(st));
  o.ybytes = d->ybytes;
  o.y = malloc(d->ybytes);
  cr_assert(o.y);
  t_d2h(o.y, d->y, d->ybytes);
  memset(&o.amax, AMAX_POISON, 4);
  if (d->amax) t_d2h(&o.amax, d->amax, 4);
  return o;
}

/* Mismatches of a quantize result against the reference (bytes, poison
 * around y, amax). */
static int64_t check_quantize(const qcase *c, const void *xh, const qout *o, uint64_t seed) {
  char buf[256];
  const int64_t n = c->rows * c->cols;
  const unsigned char *y = o->y + c->yoff;
  int64_t bad = 0;
  float amax = 0.0f;
  int any_nan = 0;
  for (int64_t i = 0; i < n; i++) {
    const double x = t_hv_get(c->xdt, xh, i);
    const float s = q_scale(c, i / c->cols);
    const uint8_t want = ref_quant(c->ydt, x, s);
    if (isnan(x))
      any_nan = 1;
    else if (fabs(x) > amax)
      amax = (float)fabs(x);
    if (!f8_same(c->ydt, y[i], want) && bad++ < 5)
      cr_log_error(
          "seed %llu [%s] element %lld (row %lld): x %.9g * %.9g: got 0x%02x (%g), "
          "want 0x%02x (%g)",
          (unsigned long long)seed, q_describe(c, buf, sizeof buf), (long long)i,
          (long long)(i / c->cols), x, (double)s, y[i], f8_decode(c->ydt, y[i]), want,
          f8_decode(c->ydt, want));
  }
  bad += poison_outside(o->y, o->ybytes, (size_t)c->yoff, (size_t)(c->yoff + n),
                        q_describe(c, buf, sizeof buf));
  if (!c->no_amax) {
    const float want = any_nan ? NAN : amax;
    const int ok = isnan(want) ? isnan(o->amax) : fbits(o->amax) == fbits(want);
    if (!ok) {
      bad++;
      cr_log_error("seed %llu [%s]: amax %.9g (0x%08x), want %.9g (0x%08x)",
                   (unsigned long long)seed, q_describe(c, buf, sizeof buf), (double)o->amax,
                   fbits(o->amax), (double)want, fbits(want));
    }
  }
  return bad;
}

/* Mismatches of a dequantize result (bits, poison around y). */
static int64_t check_dequantize(const qcase *c, const uint8_t *xh, const qout *o, uint64_t seed) {
  char buf[256];
  const int64_t n = c->rows * c->cols;
  const size_t yes = gko_dtype_size(c->ydt);
  const unsigned char *y = o->y + (size_t)c->yoff * yes;
  int64_t bad = 0;
  for (int64_t i = 0; i < n; i++) {
    const float s = q_scale(c, i / c->cols);
    const uint32_t want = ref_dequant(c->xdt, xh[i], c->ydt, s), got = wide_load(c->ydt, y, i);
    if (!wide_same(c->ydt, got, want) && bad++ < 5)
      cr_log_error(
          "seed %llu [%s] element %lld: 0x%02x (%g) * %.9g: got 0x%x (%.9g), want 0x%x "
          "(%.9g)",
          (unsigned long long)seed, q_describe(c, buf, sizeof buf), (long long)i, xh[i],
          f8_decode(c->xdt, xh[i]), (double)s, got, wide_value(c->ydt, got), want,
          wide_value(c->ydt, want));
  }
  bad += poison_outside(o->y, o->ybytes, (size_t)c->yoff * yes, (size_t)(c->yoff + n) * yes,
                        q_describe(c, buf, sizeof buf));
  return bad;
}

/* Runs one quantize (dir 0) or dequantize (dir 1) case on the default
 * stream and returns its mismatches; xh: rows * cols elements of c->xdt. */
static int64_t run_q(gko_handle_t h, int dir, const qcase *c, const void *xh, uint64_t seed) {
  char buf[256];
  qdev d;
  q_alloc(&d, dir, c, xh);
  const gko_status_t s = q_call(h, dir, c, &d, NULL);
  cr_assert_eq(s, GKO_STATUS_SUCCESS, "%s [%s]: %s", gko_status_name(s),
               q_describe(c, buf, sizeof buf), gko_last_error_detail());
  qout o = q_fetch(&d, NULL);
  const int64_t bad =
      dir == 0 ? check_quantize(c, xh, &o, seed) : check_dequantize(c, xh, &o, seed);
  free(o.y);
  q_free(&d);
  return bad;
}

/* ---- inputs ---------------------------------------------------------------- */

/* A value that, multiplied by s, lands in one of ydt's interesting places:
 * on a representable value, on the midpoint between two neighbours, anywhere
 * from below the smallest subnormal to beyond the largest finite value, far
 * beyond it (saturation), or (specials) NaN, +-Inf, +-0. */
static double q_draw(gko_dtype_t ydt, float s, int specials) {
  const f8fmt *f = f8(ydt);
  const double sg = (t_next() & 1) ? -1.0 : 1.0;
  double t;
  switch (t_next() % 10) {
    case 0:
    case 1:
    case 2:
      t = f8_decode(ydt, f8_random_finite(ydt, INFINITY));
      break;
    case 3:
    case 4: {
      const uint8_t b = (uint8_t)(t_next() % f->max_code);
      t = sg * 0.5 * (f8_decode(ydt, b) + f8_decode(ydt, (uint8_t)(b + 1)));
      break;
    }
    case 5:
    case 6:
    case 7:
      t = sg * exp(t_uniform(log(f8_min_sub(ydt) / 8), log(f->max * 4)));
      break;
    case 8:
      t = sg * exp(t_uniform(log(f->max), log(1e30)));
      break;
    default:
      if (!specials) {
        t = sg * t_uniform(0, f->max);
        break;
      }
      switch (t_next() % 5) {
        case 0:
          return NAN;
        case 1:
          return INFINITY;
        case 2:
          return -INFINITY;
        case 3:
          return 0.0;
        default:
          return -0.0;
      }
  }
  return t / s;
}

/* Host input for quantize case c (rows * cols elements of c->xdt). */
static void *q_input(const qcase *c, int specials) {
  const int64_t n = c->rows * c->cols;
  void *x = malloc((size_t)n * gko_dtype_size(c->xdt) + 4);
  cr_assert(x);
  for (int64_t i = 0; i < n; i++)
    t_hv_set(c->xdt, x, i, q_draw(c->ydt, q_scale(c, i / c->cols), specials));
  return x;
}

/* rows per-row factors from a fixed list (negative, tiny, large, inexact). */
static float *row_scales(int64_t rows) {
  static const float k[8] = {1.0f, 37.5f, 0.125f, -0.5f, 3.14159274f, 0x1p-10f, 1000.0f, 0.3f};
  float *s = malloc((size_t)rows * 4 + 4);
  cr_assert(s);
  for (int64_t r = 0; r < rows; r++) s[r] = k[t_next() % 8];
  return s;
}

/* ==== the documented values ================================================= */

/* Hand-derived bytes (OCP spec and gko.h's saturation rules). */
typedef struct {
  gko_dtype_t dt;
  float x, s;
  uint8_t code;
  int nan; /* want any NaN */
} qdoc;

static const qdoc kDoc[] = {
    {E4M3, 0.0f, 1, 0x00, 0},       {E4M3, -0.0f, 1, 0x80, 0},
    {E4M3, 1.0f, 1, 0x38, 0},       {E4M3, -2.0f, 1, 0xc0, 0},
    {E4M3, 1.0625f, 1, 0x38, 0}, /* tie 1 | 1.125: even */
    {E4M3, 1.1875f, 1, 0x3a, 0}, /* tie 1.125 | 1.25: even */
    {E4M3, 0x1p-9f, 1, 0x01, 0}, /* smallest subnormal */
    {E4M3, 0x1p-10f, 1, 0x00, 0}, /* tie 0 | 2^-9: even */
    {E4M3, -0x1p-10f, 1, 0x80, 0},  {E4M3, 0x1.8p-10f, 1, 0x01, 0}, /* 0.75 * 2^-9 */
    {E4M3, 0x1.8p-9f, 1, 0x02, 0}, /* tie 1 | 2 units */
    {E4M3, 0x1.4p-8f, 1, 0x02, 0}, /* tie 2 | 3 units */
    {E4M3, 0x1.cp-7f, 1, 0x07, 0}, /* largest subnormal */
    {E4M3, 0x1.ep-7f, 1, 0x08, 0}, /* tie largest subnormal | smallest normal */
    {E4M3, 0x1p-6f, 1, 0x08, 0}, /* smallest normal */
    {E4M3, 240.0f, 1, 0x77, 0},     {E4M3, 248.0f, 1, 0x78, 0}, /* tie across an exponent */
    {E4M3, 416.0f, 1, 0x7d, 0},     {E4M3, 432.0f, 1, 0x7e, 0},
    {E4M3, 448.0f, 1, 0x7e, 0},     {E4M3, -448.0f, 1, 0xfe, 0},
    {E4M3, 449.0f, 1, 0x7e, 0},     {E4M3, 464.0f, 1, 0x7e, 0}, /* saturation */
    {E4M3, 480.0f, 1, 0x7e, 0},     {E4M3, 1e30f, 1, 0x7e, 0},
    {E4M3, -FLT_MAX, 1, 0xfe, 0},   {E4M3, INFINITY, 1, 0, 1},
    {E4M3, -INFINITY, 1, 0, 1},     {E4M3, NAN, 1, 0, 1},
    {E4M3, 1.0f, 37.5f, 0x61, 0},   {E4M3, -1.0f, 37.5f, 0xe1, 0},
    {E4M3, 12.0f, 37.5f, 0x7e, 0}, /* 450 saturates */
    {E5M2, 0.0f, 1, 0x00, 0},       {E5M2, -0.0f, 1, 0x80, 0},
    {E5M2, 1.0f, 1, 0x3c, 0},       {E5M2, 1.125f, 1, 0x3c, 0},
    {E5M2, 1.375f, 1, 0x3e, 0},     {E5M2, 0x1p-16f, 1, 0x01, 0},
    {E5M2, 0x1p-17f, 1, 0x00, 0},   {E5M2, -0x1p-17f, 1, 0x80, 0},
    {E5M2, 0x1.8p-16f, 1, 0x02, 0}, {E5M2, 0x1.cp-15f, 1, 0x04, 0},
    {E5M2, 0x1p-14f, 1, 0x04, 0},   {E5M2, 49152.0f, 1, 0x7a, 0},
    {E5M2, 53248.0f, 1, 0x7a, 0},   {E5M2, 57344.0f, 1, 0x7b, 0},
    {E5M2, 61440.0f, 1, 0x7b, 0},   {E5M2, 65536.0f, 1, 0x7b, 0},
    {E5M2, -1e30f, 1, 0xfb, 0},     {E5M2, INFINITY, 1, 0x7c, 0},
    {E5M2, -INFINITY, 1, 0xfc, 0},  {E5M2, NAN, 1, 0, 1},
    {E5M2, 1.0f, 37.5f, 0x51, 0},   {E5M2, 12.0f, 37.5f, 0x5f, 0},
};
enum { kNDoc = sizeof kDoc / sizeof kDoc[0] };

/* Every boundary of dt as values: each finite value, each midpoint between
 * neighbours and the f32 values just beside it, the saturation threshold
 * and beyond, below the smallest subnormal, specials; both signs.  Returns
 * the count (at most 2048). */
static int64_t boundary_values(gko_dtype_t dt, double *v) {
  const f8fmt *f = f8(dt);
  int64_t n = 0;
  for (int b = 0; b <= f->max_code; b++) {
    const double lo = f8_decode(dt, (uint8_t)b);
    v[n++] = lo;
    if (b == f->max_code) break;
    const float mid = (float)(0.5 * (lo + f8_decode(dt, (uint8_t)(b + 1))));
    v[n++] = mid;
    v[n++] = nextafterf(mid, 0.0f);
    v[n++] = nextafterf(mid, INFINITY);
  }
  const float thr = (float)(f->max + 0.5 * (f->max - f8_decode(dt, (uint8_t)(f->max_code - 1))));
  const double extra[] = {nextafterf((float)f->max, INFINITY),
                          thr,
                          nextafterf(thr, 0.0f),
                          nextafterf(thr, INFINITY),
                          2 * f->max,
                          1e30,
                          FLT_MAX,
                          f8_min_sub(dt) / 4,
                          FLT_MIN,
                          0x1p-149,
                          INFINITY,
                          NAN};
  for (size_t i = 0; i < sizeof extra / sizeof extra[0]; i++) v[n++] = extra[i];
  for (int64_t i = 0; i < n; i++) v[n + i] = -v[i];
  return 2 * n;
}

/* ==== host-only ============================================================== */

Test(fp8, dtype_sizes_and_enum_values) {
  cr_expect_eq(gko_dtype_size(E4M3), 1);
  cr_expect_eq(gko_dtype_size(E5M2), 1);
  cr_expect_eq(GKO_DTYPE_F8E4M3, 3);
  cr_expect_eq(GKO_DTYPE_F8E5M2, 4);
  cr_expect_eq(gko_dtype_size((gko_dtype_t)5), 0);
  cr_expect_eq(GKO_SCALE_TENSOR, 0);
  cr_expect_eq(GKO_SCALE_ROWWISE, 1);
  cr_expect_eq(sizeof(gko_scale_mode_t), sizeof(int));
  cr_expect_eq(GKO_GEMM_ATTR_B_DTYPE, 28);
  cr_expect_eq(GKO_GEMM_ATTR_SCALE_A_MODE, 29);
  cr_expect_eq(GKO_GEMM_ATTR_SCALE_B_MODE, 30);
  cr_expect_eq(GKO_GEMM_COMPUTE_FP8_FAST_ACCUMULATE, 3);
}

/* The host codec the GPU results are judged by, against the hand-derived
 * table and the format's structure. */
Test(fp8, reference_codec_matches_the_spec) {
  for (int i = 0; i < kNDoc; i++) {
    const qdoc *q = &kDoc[i];
    const uint8_t got = ref_quant(q->dt, q->x, q->s);
    if (q->nan)
      cr_expect(isnan(f8_decode(q->dt, got)), "%s %g * %g -> 0x%02x, want NaN", dt_name(q->dt),
                (double)q->x, (double)q->s, got);
    else
      cr_expect_eq(got, q->code, "%s %g * %g -> 0x%02x, want 0x%02x", dt_name(q->dt), (double)q->x,
                   (double)q->s, got, q->code);
  }
  cr_expect_eq(f8_decode(E4M3, 0x7e), 448.0);
  cr_expect_eq(f8_decode(E4M3, 0x01), ldexp(1, -9));
  cr_expect_eq(f8_decode(E4M3, 0x08), ldexp(1, -6));
  cr_expect_eq(f8_decode(E4M3, 0x78), 256.0);
  cr_expect(f8_decode(E4M3, 0x80) == 0.0 && signbit(f8_decode(E4M3, 0x80)));
  cr_expect_eq(f8_decode(E5M2, 0x7b), 57344.0);
  cr_expect_eq(f8_decode(E5M2, 0x01), ldexp(1, -16));
  cr_expect_eq(f8_decode(E5M2, 0x04), ldexp(1, -14));
  cr_expect_eq(f8_decode(E5M2, 0x7c), INFINITY);
  cr_expect_eq(f8_decode(E5M2, 0xfc), -INFINITY);
  for (int f = 0; f < 2; f++) {
    const gko_dtype_t dt = kF8[f];
    int nans = 0, infs = 0;
    for (int b = 0; b < 256; b++) {
      const double v = f8_decode(dt, (uint8_t)b);
      nans += isnan(v) != 0;
      infs += isinf(v) != 0;
      if (isfinite(v))
        cr_expect_eq(f8_encode(dt, v), b, "%s 0x%02x = %g re-encodes as 0x%02x", dt_name(dt), b, v,
                     f8_encode(dt, v));
    }
    cr_expect_eq(nans, dt == E4M3 ? 2 : 6, "%s has %d NaN codes", dt_name(dt), nans);
    cr_expect_eq(infs, dt == E4M3 ? 0 : 2, "%s has %d infinities", dt_name(dt), infs);
    /* increasing; each midpoint goes to the even neighbour, its f32
     * neighbours to the nearer one */
    for (int b = 0; b < f8(dt)->max_code; b++) {
      const double lo = f8_decode(dt, (uint8_t)b), hi = f8_decode(dt, (uint8_t)(b + 1));
      const float mid = (float)(0.5 * (lo + hi));
      cr_expect(lo < hi, "%s 0x%02x not below its successor", dt_name(dt), b);
      cr_expect_eq(f8_encode(dt, mid), (b & 1) ? b + 1 : b, "%s tie at %g", dt_name(dt),
                   (double)mid);
      cr_expect_eq(f8_encode(dt, nextafterf(mid, 0.0f)), b);
      cr_expect_eq(f8_encode(dt, nextafterf(mid, INFINITY)), b + 1);
      cr_expect_eq(f8_encode(dt, -(double)mid), 0x80 | ((b & 1) ? b + 1 : b));
    }
  }
}

/* With a NULL handle (or otherwise on any machine) the header promises
 * INVALID_VALUE with a detail; which check fires first is not specified,
 * so only the status and a non-empty detail are asserted, plus the
 * handle's name where it is the only fault. */
Test(fp8, quantize_dequantize_reject_without_a_gpu) {
  float x[4] = {1, 2, 3, 4};
  uint8_t y[16];
  memset(y, 0xab, sizeof y);
  T_FAILS(GKO_STATUS_INVALID_VALUE,
          gko_quantize(NULL, GKO_DTYPE_F32, x, E4M3, y, 2, 2, GKO_SCALE_TENSOR, NULL, NULL, NULL));
  cr_expect(strstr(gko_last_error_detail(), "handle") != NULL, "%s", gko_last_error_detail());
  T_FAILS(GKO_STATUS_INVALID_VALUE, gko_quantize(NULL, GKO_DTYPE_F32, x, E4M3, y, 2, 2,
                                                 (gko_scale_mode_t)2, NULL, NULL, NULL));
  T_FAILS(GKO_STATUS_INVALID_VALUE, gko_quantize(NULL, GKO_DTYPE_F32, x, E5M2, y, 2, 2,
                                                 (gko_scale_mode_t)-1, NULL, NULL, NULL));
  T_FAILS(GKO_STATUS_INVALID_VALUE,
          gko_quantize(NULL, (gko_dtype_t)9, x, E4M3, y, 2, 2, GKO_SCALE_TENSOR, NULL, NULL, NULL));
  T_FAILS(GKO_STATUS_INVALID_VALUE, gko_quantize(NULL, GKO_DTYPE_F32, x, (gko_dtype_t)-1, y, 2, 2,
                                                 GKO_SCALE_TENSOR, NULL, NULL, NULL));
  T_FAILS(GKO_STATUS_INVALID_VALUE,
          gko_quantize(NULL, GKO_DTYPE_F16, x, E4M3, y, -1, 2, GKO_SCALE_TENSOR, NULL, NULL, NULL));
  T_FAILS(GKO_STATUS_INVALID_VALUE,
          gko_dequantize(NULL, E4M3, y, GKO_DTYPE_F32, x, 2, 2, GKO_SCALE_TENSOR, NULL, NULL));
  cr_expect(strstr(gko_last_error_detail(), "handle") != NULL, "%s", gko_last_error_detail());
  T_FAILS(GKO_STATUS_INVALID_VALUE,
          gko_dequantize(NULL, E5M2, y, GKO_DTYPE_BF16, x, 2, 2, (gko_scale_mode_t)7, NULL, NULL));
  T_FAILS(GKO_STATUS_INVALID_VALUE, gko_dequantize(NULL, (gko_dtype_t)11, y, GKO_DTYPE_F32, x, 2, 2,
                                                   GKO_SCALE_TENSOR, NULL, NULL));
  T_FAILS(GKO_STATUS_INVALID_VALUE,
          gko_dequantize(NULL, E4M3, y, GKO_DTYPE_F16, x, 2, -3, GKO_SCALE_TENSOR, NULL, NULL));
  for (int i = 0; i < 4; i++) cr_expect_eq(x[i], (float)(i + 1), "x modified");
  for (int i = 0; i < 16; i++) cr_expect_eq(y[i], 0xab, "y modified");
}

Test(fp8, csr_create_refuses_fp8) {
  int32_t rp[3] = {0, 1, 2}, ci[2] = {0, 1};
  uint8_t v[2] = {0x38, 0x38};
  const gko_csr_t keep = (gko_csr_t)(uintptr_t)0x1234;
  for (int f = 0; f < 2; f++) {
    gko_csr_t c = keep;
    T_FAILS(GKO_STATUS_NOT_SUPPORTED,
            gko_csr_create(&c, 2, 2, 2, rp, ci, v, GKO_INDEX_INT32, kF8[f]));
    cr_expect_eq(c, keep, "*csr written on failure");
  }
}

static int64_t dget(gko_gemm_desc_t d, gko_gemm_attr_t a) {
  int64_t v = -7;
  T_OK(gko_gemm_desc_get(d, a, &v));
  return v;
}

Test(fp8, gemm_descriptor_attributes) {
  const gko_dtype_t cds[] = {GKO_DTYPE_F32, GKO_DTYPE_F16, GKO_DTYPE_BF16, E4M3, E5M2};
  gko_gemm_desc_t d = NULL;
  for (int f = 0; f < 2; f++)
    for (size_t i = 0; i < sizeof cds / sizeof cds[0]; i++) {
      T_OK(gko_gemm_desc_create(&d, kF8[f], cds[i], 16, 16, 16));
      cr_expect_eq(dget(d, GKO_GEMM_ATTR_AB_DTYPE), kF8[f]);
      cr_expect_eq(dget(d, GKO_GEMM_ATTR_CD_DTYPE), cds[i]);
      T_OK(gko_gemm_desc_destroy(d));
    }
  /* without FP8 inputs cd_dtype stays ab_dtype or F32 */
  gko_gemm_desc_t keep = (gko_gemm_desc_t)(uintptr_t)0x1234;
  d = keep;
  T_FAILS(GKO_STATUS_INVALID_VALUE, gko_gemm_desc_create(&d, GKO_DTYPE_F16, E4M3, 16, 16, 16));
  T_FAILS(GKO_STATUS_INVALID_VALUE, gko_gemm_desc_create(&d, GKO_DTYPE_F32, E5M2, 16, 16, 16));
  cr_expect_eq(d, keep, "desc written on failure");
  T_OK(gko_gemm_desc_create(&d, E4M3, GKO_DTYPE_BF16, 64, 48, 32));
  cr_expect_eq(dget(d, GKO_GEMM_ATTR_SCALE_A_MODE), GKO_SCALE_TENSOR);
  cr_expect_eq(dget(d, GKO_GEMM_ATTR_SCALE_B_MODE), GKO_SCALE_TENSOR);
  T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_B_DTYPE, E5M2));
  cr_expect_eq(dget(d, GKO_GEMM_ATTR_B_DTYPE), E5M2);
  T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_B_DTYPE, -1));
  /* a known dtype is in range here; the pairing is plan_create's check */
  T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_B_DTYPE, GKO_DTYPE_F16));
  T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_B_DTYPE, E5M2));
  T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_SCALE_A_MODE, GKO_SCALE_ROWWISE));
  cr_expect_eq(dget(d, GKO_GEMM_ATTR_SCALE_A_MODE), GKO_SCALE_ROWWISE);
  T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_SCALE_B_MODE, GKO_SCALE_ROWWISE));
  cr_expect_eq(dget(d, GKO_GEMM_ATTR_SCALE_B_MODE), GKO_SCALE_ROWWISE);
  T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_COMPUTE, GKO_GEMM_COMPUTE_FP8_FAST_ACCUMULATE));
  cr_expect_eq(dget(d, GKO_GEMM_ATTR_COMPUTE), GKO_GEMM_COMPUTE_FP8_FAST_ACCUMULATE);
  const struct {
    gko_gemm_attr_t a;
    int64_t v;
    const char *word;
  } bad[] = {{GKO_GEMM_ATTR_B_DTYPE, 9, "B_DTYPE"},
             {GKO_GEMM_ATTR_B_DTYPE, -2, "B_DTYPE"},
             {GKO_GEMM_ATTR_SCALE_A_MODE, 2, "SCALE_A_MODE"},
             {GKO_GEMM_ATTR_SCALE_A_MODE, -1, "SCALE_A_MODE"},
             {GKO_GEMM_ATTR_SCALE_B_MODE, 2, "SCALE_B_MODE"},
             {GKO_GEMM_ATTR_COMPUTE, 4, "COMPUTE"},
             {GKO_GEMM_ATTR_AB_DTYPE, 5, "AB_DTYPE"}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    const int64_t before = dget(d, bad[i].a);
    T_FAILS(GKO_STATUS_INVALID_VALUE, gko_gemm_desc_set(d, bad[i].a, bad[i].v));
    cr_expect(strstr(gko_last_error_detail(), bad[i].word) != NULL, "detail '%s' lacks '%s'",
              gko_last_error_detail(), bad[i].word);
    cr_expect_eq(dget(d, bad[i].a), before, "attribute %d changed", (int)bad[i].a);
  }
  int64_t v = 99;
  T_FAILS(GKO_STATUS_INVALID_VALUE, gko_gemm_desc_get(d, (gko_gemm_attr_t)31, &v));
  cr_expect_eq(v, 99);
  gko_gemm_desc_destroy(d);
}

/* ==== quantize and dequantize on the GPU ===================================== */

/* kDoc through gko_quantize: one row per entry (ROWWISE carries each
 * entry's factor). */
Test(fp8, quantize_documented_values) {
  uint64_t seed;
  gko_handle_t h = t_gpu_setup(&seed);
  int64_t bad = 0;
  for (int f = 0; f < 2; f++) {
    float x[kNDoc], s[kNDoc];
    int64_t n = 0;
    for (int i = 0; i < kNDoc; i++)
      if (kDoc[i].dt == kF8[f]) {
        x[n] = kDoc[i].x;
        s[n++] = kDoc[i].s;
      }
    const qcase c = {GKO_DTYPE_F32, kF8[f], n, 1, GKO_SCALE_ROWWISE, s, 0, 0, 0};
    bad += run_q(h, 0, &c, x, seed);
  }
  cr_expect_eq(bad, 0, "seed %llu: %lld mismatches", (unsigned long long)seed, (long long)bad);
  gko_destroy(h);
}

/* Every input type with both formats, empty and odd shapes, no factor
 * (NULL: 1), 37.5, per-row factors and a tiny factor without amax. */
Test(fp8, quantize_every_dtype_pair_shape_and_scale, .timeout = 600) {
  uint64_t seed;
  gko_handle_t h = t_gpu_setup(&seed);
  static const int64_t shapes[][2] = {{0, 5}, {5, 0}, {1, 1}, {7, 13}, {33, 65}, {3, 1000003}};
  const float s375 = 37.5f, tiny = 0x1p-10f;
  int64_t bad = 0;
  for (int w = 0; w < 3; w++)
    for (int f = 0; f < 2; f++)
      for (size_t sh = 0; sh < sizeof shapes / sizeof shapes[0]; sh++)
        for (int var = 0; var < 4; var++) {
          qcase c = {kWide[w], kF8[f], shapes[sh][0], shapes[sh][1], GKO_SCALE_TENSOR, NULL, 0,
                     0,        0};
          float *rs = NULL;
          if (var == 1) c.scale = &s375;
          if (var == 2) {
            c.mode = GKO_SCALE_ROWWISE;
            c.scale = rs = row_scales(c.rows);
          }
          if (var == 3) {
            c.scale = &tiny;
            c.no_amax = 1;
          }
          void *x = q_input(&c, var != 1); /* var 1 without NaN: a finite amax */
          bad += run_q(h, 0, &c, x, seed);
          free(x);
          free(rs);
        }
  cr_expect_eq(bad, 0, "seed %llu: %lld mismatches", (unsigned long long)seed, (long long)bad);
  gko_destroy(h);
}

/* Every tie, the f32 values beside it, the subnormal range and the
 * saturation threshold, from every input type; once with no factor, once
 * per row with factors that keep the products exact (x*8 * 0.125, x/-8 * -8). */
Test(fp8, quantize_ties_subnormals_and_saturation) {
  uint64_t seed;
  gko_handle_t h = t_gpu_setup(&seed);
  static double v[2048];
  int64_t bad = 0;
  const float rs[2] = {0.125f, -8.0f};
  for (int f = 0; f < 2; f++) {
    const int64_t n = boundary_values(kF8[f], v);
    for (int w = 0; w < 3; w++) {
      void *x = malloc((size_t)n * 2 * 4);
      for (int64_t i = 0; i < n; i++) t_hv_set(kWide[w], x, i, v[i]);
      const qcase c1 = {kWide[w], kF8[f], 1, n, GKO_SCALE_TENSOR, NULL, 0, 0, 0};
      bad += run_q(h, 0, &c1, x, seed);
      for (int64_t i = 0; i < n; i++) {
        t_hv_set(kWide[w], x, i, v[i] / rs[0]);
        t_hv_set(kWide[w], x, n + i, v[i] / rs[1]);
      }
      const qcase c2 = {kWide[w], kF8[f], 2, n, GKO_SCALE_ROWWISE, rs, 0, 0, 0};
      bad += run_q(h, 0, &c2, x, seed);
      free(x);
    }
  }
  cr_expect_eq(bad, 0, "seed %llu: %lld mismatches", (unsigned long long)seed, (long long)bad);
  gko_destroy(h);
}

/* x and y offset by whole elements (legal, off the 16-byte vector path):
 * the scalar head and tail and the misaligned body. */
Test(fp8, quantize_unaligned_pointers, .timeout = 600) {
  uint64_t seed;
  gko_handle_t h = t_gpu_setup(&seed);
  static const int64_t cols[] = {1, 3, 15, 16, 17, 33, 100, 4099};
  static const int xo[] = {0, 1, 2, 3, 7}, yo[] = {0, 1, 15};
  const float s375 = 37.5f;
  int64_t bad = 0;
  for (int w = 0; w < 3; w++)
    for (int f = 0; f < 2; f++) {
      for (size_t l = 0; l < sizeof cols / sizeof cols[0]; l++)
        for (size_t a = 0; a < sizeof xo / sizeof xo[0]; a++)
          for (size_t b = 0; b < sizeof yo / sizeof yo[0]; b++) {
            qcase c = {kWide[w],
                       kF8[f],
                       1 + (int64_t)((a + b) % 3),
                       cols[l],
                       GKO_SCALE_TENSOR,
                       &s375,
                       xo[a],
                       yo[b],
                       0};
            float *rs = NULL;
            if ((a + b) & 1) {
              c.mode = GKO_SCALE_ROWWISE;
              c.scale = rs = row_scales(c.rows);
            }
            void *x = q_input(&c, 1);
            bad += run_q(h, 0, &c, x, seed);
            free(x);
            free(rs);
          }
      const qcase big = {kWide[w], kF8[f], 3, 1000003, GKO_SCALE_TENSOR, &s375, 1, 1, 0};
      void *x = q_input(&big, 1);
      bad += run_q(h, 0, &big, x, seed);
      free(x);
    }
  cr_expect_eq(bad, 0, "seed %llu: %lld mismatches", (unsigned long long)seed, (long long)bad);
  gko_destroy(h);
}

/* amax over many blocks: the largest |x| at a random place (either sign),
 * before scaling (factor 37.5 or per row), NaN anywhere wins, Inf, all
 * zeros (-0 included) give +0, empty inputs give 0. */
Test(fp8, quantize_amax) {
  uint64_t seed;
  gko_handle_t h = t_gpu_setup(&seed);
  const int64_t rows = 7, cols = (1 << 17) + 3, n = rows * cols;
  const float s375 = 37.5f;
  int64_t bad = 0;
  for (int w = 0; w < 3; w++)
    for (int var = 0; var < 5; var++) {
      qcase c = {kWide[w], kF8[var & 1], rows, cols, GKO_SCALE_TENSOR, &s375, 0, 0, 0};
      float *rs = NULL;
      if (var & 2) {
        c.mode = GKO_SCALE_ROWWISE;
        c.scale = rs = row_scales(rows);
      }
      void *x = malloc((size_t)n * 4);
      for (int64_t i = 0; i < n; i++)
        t_hv_set(c.xdt, x, i, var == 4 ? ((i & 1) ? -0.0 : 0.0) : t_uniform(-3, 3));
      const int64_t at = (int64_t)(t_next() % (uint64_t)n);
      if (var < 4) t_hv_set(c.xdt, x, at, (t_next() & 1) ? -7.5 : 7.5);
      bad += run_q(h, 0, &c, x, seed);
      if (var < 4) { /* then Inf there, then a NaN elsewhere */
        t_hv_set(c.xdt, x, at, -INFINITY);
        bad += run_q(h, 0, &c, x, seed);
        t_hv_set(c.xdt, x, (at + n / 2) % n, NAN);
        bad += run_q(h, 0, &c, x, seed);
      }
      free(x);
      free(rs);
    }
  /* empty inputs: amax is set to 0 (over the poison) */
  float one = 1.0f;
  for (int r = 0; r < 2; r++) {
    const qcase c = {GKO_DTYPE_BF16, E4M3, r ? 0 : 9, r ? 9 : 0, GKO_SCALE_TENSOR, &one, 0, 0, 0};
    uint16_t dummy = 0;
    bad += run_q(h, 0, &c, &dummy, seed);
  }
  cr_expect_eq(bad, 0, "seed %llu: %lld mismatches", (unsigned long long)seed, (long long)bad);
  gko_destroy(h);
}

/* An output of more than 16 MiB (4097 x 4099 bytes) from f16, with the
 * largest |x| planted at a random element. */
Test(fp8, quantize_output_over_16MiB, .timeout = 300) {
  uint64_t seed;
  gko_handle_t h = t_gpu_setup(&seed);
  const int64_t rows = 4097, cols = 4099, n = rows * cols;
  cr_assert_gt(n, 16 << 20);
  uint16_t *x = malloc((size_t)n * 2);
  cr_assert(x);
  int64_t bad = 0;
  for (int f = 0; f < 2; f++) {
    const float s = (float)(f8(kF8[f])->max / 1024);
    qcase c = {GKO_DTYPE_F16, kF8[f], rows, cols, GKO_SCALE_TENSOR, &s, 0, 0, 0};
    float *rs = NULL;
    if (f == 0) {
      c.mode = GKO_SCALE_ROWWISE;
      c.scale = rs = row_scales(rows);
    }
    for (int64_t i = 0; i < n; i++) x[i] = t_double_to_f16(t_uniform(-1500, 1500));
    x[t_next() % (uint64_t)n] = t_double_to_f16((t_next() & 1) ? -2000.0 : 2000.0);
    bad += run_q(h, 0, &c, x, seed);
    free(rs);
  }
  free(x);
  cr_expect_eq(bad, 0, "seed %llu: %lld mismatches", (unsigned long long)seed, (long long)bad);
  gko_destroy(h);
}

/* All 256 bytes of each format to each output type, with no factor, 0.5,
 * 37.5 and per-row factors (negative, tiny, inexact, overflowing f16). */
Test(fp8, dequantize_every_byte) {
  uint64_t seed;
  gko_handle_t h = t_gpu_setup(&seed);
  static const float rs[8] = {1.0f, 37.5f, -0.25f, 0x1p-12f, 1024.0f, 3.14159274f, 0.1f, -1.0f};
  uint8_t x[8 * 256];
  for (int i = 0; i < 8 * 256; i++) x[i] = (uint8_t)i;
  const float half = 0.5f, s375 = 37.5f;
  int64_t bad = 0;
  for (int f = 0; f < 2; f++)
    for (int w = 0; w < 3; w++)
      for (int var = 0; var < 4; var++) {
        qcase c = {kF8[f], kWide[w], 8, 256, GKO_SCALE_TENSOR, NULL, 0, 0, 0};
        if (var == 1) c.scale = &half;
        if (var == 2) c.scale = &s375;
        if (var == 3) {
          c.mode = GKO_SCALE_ROWWISE;
          c.scale = rs;
        }
        bad += run_q(h, 1, &c, x, seed);
      }
  cr_expect_eq(bad, 0, "seed %llu: %lld mismatches", (unsigned long long)seed, (long long)bad);
  gko_destroy(h);
}

/* Random bytes (NaN and Inf codes included), empty and odd shapes, element
 * offsets of x and y. */
Test(fp8, dequantize_shapes_and_unaligned_pointers, .timeout = 600) {
  uint64_t seed;
  gko_handle_t h = t_gpu_setup(&seed);
  static const int64_t shapes[][2] = {{0, 7}, {7, 0}, {1, 1}, {7, 13}, {5, 4099}, {3, 1000003}};
  static const int offs[][2] = {{0, 0}, {1, 0}, {0, 1}, {1, 1}, {3, 5}};
  const float s375 = 37.5f;
  int64_t bad = 0;
  for (int f = 0; f < 2; f++)
    for (int w = 0; w < 3; w++)
      for (size_t sh = 0; sh < sizeof shapes / sizeof shapes[0]; sh++)
        for (size_t o = 0; o < sizeof offs / sizeof offs[0]; o++) {
          const int var = (int)((sh + o + (size_t)w) % 3);
          qcase c = {kF8[f],        kWide[w],         shapes[sh][0],
                     shapes[sh][1], GKO_SCALE_TENSOR, var == 1 ? &s375 : NULL,
                     offs[o][0],    offs[o][1],       0};
          float *rs = NULL;
          if (var == 2) {
            c.mode = GKO_SCALE_ROWWISE;
            c.scale = rs = row_scales(c.rows);
          }
          const int64_t n = c.rows * c.cols;
          uint8_t *x = malloc((size_t)n + 1);
          for (int64_t i = 0; i < n; i++) x[i] = (uint8_t)t_next();
          bad += run_q(h, 1, &c, x, seed);
          free(x);
          free(rs);
        }
  cr_expect_eq(bad, 0, "seed %llu: %lld mismatches", (unsigned long long)seed, (long long)bad);
  gko_destroy(h);
}

/* Every value of each format, held in each wide type: quantize gives its
 * byte back and dequantize the value, bit for bit (NaN as any NaN). */
Test(fp8, round_trip_every_value) {
  uint64_t seed;
  gko_handle_t h = t_gpu_setup(&seed);
  int64_t bad = 0;
  for (int f = 0; f < 2; f++)
    for (int w = 0; w < 3; w++) {
      const gko_dtype_t dt = kF8[f], wd = kWide[w];
      uint8_t x[256];
      for (int b = 0; b < 256; b++) x[b] = (uint8_t)b;
      float v[256]; /* room for 256 f32 */
      for (int b = 0; b < 256; b++) t_hv_set(wd, v, b, f8_decode(dt, (uint8_t)b));
      const qcase cq = {wd, dt, 1, 256, GKO_SCALE_TENSOR, NULL, 0, 0, 0};
      qdev d;
      q_alloc(&d, 0, &cq, v);
      T_OK(q_call(h, 0, &cq, &d, NULL));
      qout o = q_fetch(&d, NULL);
      bad += check_quantize(&cq, v, &o, seed);
      for (int b = 0; b < 256; b++)
        if (!f8_same(dt, o.y[b], x[b]) && bad++ < 5)
          cr_log_error("%s via %s: 0x%02x came back as 0x%02x", dt_name(dt), dt_name(wd), b,
                       o.y[b]);
      q_free(&d);
      /* and back through dequantize, from the bytes the GPU wrote */
      const qcase cd = {dt, wd, 1, 256, GKO_SCALE_TENSOR, NULL, 0, 0, 0};
      q_alloc(&d, 1, &cd, o.y);
      T_OK(q_call(h, 1, &cd, &d, NULL));
      qout back = q_fetch(&d, NULL);
      for (int b = 0; b < 256; b++)
        if (!wide_same(wd, wide_load(wd, back.y, b), wide_load(wd, v, b)) && bad++ < 5)
          cr_log_error("%s via %s: value of 0x%02x came back as 0x%x", dt_name(dt), dt_name(wd), b,
                       wide_load(wd, back.y, b));
      q_free(&d);
      free(o.y);
      free(back.y);
    }
  cr_expect_eq(bad, 0, "seed %llu: %lld mismatches", (unsigned long long)seed, (long long)bad);
  gko_destroy(h);
}

/* Bad arguments with real device pointers: status, detail, and y and amax
 * left exactly as they were. */
Test(fp8, quantize_bad_arguments_leave_outputs_untouched) {
  T_REQUIRE_GPU();
  gko_handle_t h = t_handle();
  const int64_t rows = 4, cols = 64, n = rows * cols;
  const size_t ybytes = (size_t)n * 4 + 64;
  const gko_dtype_t F32 = GKO_DTYPE_F32, F16 = GKO_DTYPE_F16;
  const gko_scale_mode_t TEN = GKO_SCALE_TENSOR, ROW = GKO_SCALE_ROWWISE;
  char *x = t_dalloc((size_t)n * 4 + 64);
  unsigned char *y = t_dalloc(ybytes);
  float *s = t_dalloc(64 * 4), *am = t_dalloc(64);
  float ones[64];
  for (int i = 0; i < 64; i++) ones[i] = 1.0f;
  t_memset(x, 0x3c, (size_t)n * 4 + 64);
  t_memset(y, T_POISON_BYTE, ybytes);
  t_h2d(s, ones, sizeof ones);
  t_memset(am, T_POISON_BYTE, 64);
  float *s_odd = (float *)((char *)s + 2), *am_odd = (float *)((char *)am + 1);
  /* quantize */
  T_FAILS(GKO_STATUS_INVALID_VALUE,
          gko_quantize(h, F32, NULL, E4M3, y, rows, cols, TEN, NULL, am, NULL));
  T_FAILS(GKO_STATUS_INVALID_VALUE,
          gko_quantize(h, F32, x, E4M3, NULL, rows, cols, TEN, NULL, am, NULL));
  T_FAILS(GKO_STATUS_INVALID_VALUE,
          gko_quantize(h, F32, x, E4M3, y, rows, cols, ROW, NULL, am, NULL));
  cr_expect(strstr(gko_last_error_detail(), "scale") != NULL, "%s", gko_last_error_detail());
  T_FAILS(GKO_STATUS_NOT_SUPPORTED,
          gko_quantize(h, E4M3, x, E5M2, y, rows, cols, TEN, NULL, am, NULL));
  T_FAILS(GKO_STATUS_NOT_SUPPORTED,
          gko_quantize(h, E5M2, x, E5M2, y, rows, cols, TEN, NULL, am, NULL));
  T_FAILS(GKO_STATUS_NOT_SUPPORTED,
          gko_quantize(h, F32, x, F16, y, rows, cols, TEN, NULL, am, NULL));
  T_FAILS(GKO_STATUS_NOT_SUPPORTED,
          gko_quantize(h, F16, x, GKO_DTYPE_BF16, y, rows, cols, TEN, NULL, am, NULL));
  T_FAILS(GKO_STATUS_INVALID_VALUE,
          gko_quantize(h, F32, x + 1, E4M3, y, rows, cols, TEN, NULL, am, NULL));
  cr_expect(strstr(gko_last_error_detail(), "x") != NULL, "%s", gko_last_error_detail());
  T_FAILS(GKO_STATUS_INVALID_VALUE,
          gko_quantize(h, F16, x + 1, E5M2, y, rows, cols, TEN, NULL, am, NULL));
  T_FAILS(GKO_STATUS_INVALID_VALUE,
          gko_quantize(h, F32, x, E4M3, y, rows, cols, TEN, s_odd, am, NULL));
  T_FAILS(GKO_STATUS_INVALID_VALUE,
          gko_quantize(h, F32, x, E4M3, y, rows, cols, ROW, s_odd, am, NULL));
  T_FAILS(GKO_STATUS_INVALID_VALUE,
          gko_quantize(h, F32, x, E4M3, y, rows, cols, TEN, s, am_odd, NULL));
  cr_expect(strstr(gko_last_error_detail(), "amax") != NULL, "%s", gko_last_error_detail());
  /* x and y overlapping (x inside the poisoned buffer), and identical */
  T_FAILS(GKO_STATUS_INVALID_VALUE,
          gko_quantize(h, F32, y, E4M3, y + 16, rows, cols, TEN, s, am, NULL));
  T_FAILS(GKO_STATUS_INVALID_VALUE,
          gko_quantize(h, F32, y + 64, E4M3, y, rows, cols, TEN, s, am, NULL));
  T_FAILS(GKO_STATUS_INVALID_VALUE, gko_quantize(h, F16, y, E4M3, y, rows, cols, TEN, s, am, NULL));
  /* sizes and enums */
  T_FAILS(GKO_STATUS_INVALID_VALUE, gko_quantize(h, F32, x, E4M3, y, -1, cols, TEN, s, am, NULL));
  T_FAILS(GKO_STATUS_INVALID_VALUE, gko_quantize(h, F32, x, E4M3, y, rows, -1, TEN, s, am, NULL));
  T_FAILS(GKO_STATUS_INVALID_VALUE,
          gko_quantize(h, F32, x, E4M3, y, INT64_MAX / 2, 3, TEN, s, am, NULL));
  T_FAILS(GKO_STATUS_INVALID_VALUE,
          gko_quantize(h, F32, x, E4M3, y, rows, cols, (gko_scale_mode_t)2, s, am, NULL));
  T_FAILS(GKO_STATUS_INVALID_VALUE,
          gko_quantize(h, (gko_dtype_t)9, x, E4M3, y, rows, cols, TEN, s, am, NULL));
  /* dequantize */
  T_FAILS(GKO_STATUS_INVALID_VALUE,
          gko_dequantize(h, E4M3, NULL, F32, y, rows, cols, TEN, s, NULL));
  T_FAILS(GKO_STATUS_INVALID_VALUE,
          gko_dequantize(h, E4M3, x, F32, NULL, rows, cols, TEN, s, NULL));
  T_FAILS(GKO_STATUS_INVALID_VALUE,
          gko_dequantize(h, E5M2, x, F16, y, rows, cols, ROW, NULL, NULL));
  cr_expect(strstr(gko_last_error_detail(), "scale") != NULL, "%s", gko_last_error_detail());
  T_FAILS(GKO_STATUS_NOT_SUPPORTED, gko_dequantize(h, F32, x, F16, y, rows, cols, TEN, s, NULL));
  T_FAILS(GKO_STATUS_NOT_SUPPORTED, gko_dequantize(h, E4M3, x, E5M2, y, rows, cols, TEN, s, NULL));
  T_FAILS(GKO_STATUS_INVALID_VALUE,
          gko_dequantize(h, E4M3, x, F32, y + 1, rows, cols, TEN, s, NULL));
  cr_expect(strstr(gko_last_error_detail(), "y") != NULL, "%s", gko_last_error_detail());
  T_FAILS(GKO_STATUS_INVALID_VALUE,
          gko_dequantize(h, E4M3, x, GKO_DTYPE_BF16, y + 1, rows, cols, TEN, s, NULL));
  T_FAILS(GKO_STATUS_INVALID_VALUE,
          gko_dequantize(h, E4M3, x, F32, y, rows, cols, TEN, s_odd, NULL));
  T_FAILS(GKO_STATUS_INVALID_VALUE,
          gko_dequantize(h, E4M3, y + 8, F32, y, rows, cols, TEN, s, NULL));
  T_FAILS(GKO_STATUS_INVALID_VALUE, gko_dequantize(h, E4M3, x, F32, y, rows, -5, TEN, s, NULL));
  T_FAILS(GKO_STATUS_INVALID_VALUE,
          gko_dequantize(h, E4M3, x, F32, y, rows, cols, (gko_scale_mode_t)3, s, NULL));
  /* pageable host memory the GPU cannot read */
  int pageable = 0;
  T_CUDA(cudaDeviceGetAttribute(&pageable, cudaDevAttrPageableMemoryAccess, 0));
  if (!pageable) {
    float *hx = calloc((size_t)n, 4);
    T_FAILS(GKO_STATUS_INVALID_VALUE,
            gko_quantize(h, F32, hx, E4M3, y, rows, cols, TEN, s, am, NULL));
    T_FAILS(GKO_STATUS_INVALID_VALUE,
            gko_dequantize(h, E4M3, x, F32, hx, rows, cols, TEN, s, NULL));
    free(hx);
  }
  t_assert_poisoned(y, ybytes);
  t_assert_poisoned(am, 64);
  cudaFree(x);
  cudaFree(y);
  cudaFree(s);
  cudaFree(am);
  gko_destroy(h);
}

/* Operators other than GEMM and (de)quantization answer NOT_SUPPORTED for
 * the 8-bit types (gko_dtype_t) and write nothing. */
Test(fp8, other_operators_refuse_fp8) {
  T_REQUIRE_GPU();
  gko_handle_t h = t_handle();
  unsigned char *x = t_dalloc(256), *dy = t_dalloc(256), *y = t_dalloc(256);
  t_memset(x, 0x38, 256);
  t_memset(dy, 0x38, 256);
  t_memset(y, T_POISON_BYTE, 256);
  for (int f = 0; f < 2; f++) {
    T_FAILS(GKO_STATUS_NOT_SUPPORTED, gko_gelu_forward(h, GKO_GELU_ERF, kF8[f], 64, x, y, NULL));
    T_FAILS(GKO_STATUS_NOT_SUPPORTED, gko_gelu_forward(h, GKO_GELU_TANH, kF8[f], 64, x, y, NULL));
    T_FAILS(GKO_STATUS_NOT_SUPPORTED,
            gko_gelu_backward(h, GKO_GELU_ERF, kF8[f], 64, dy, x, y, NULL));
  }
  t_assert_poisoned(y, 256);
  cudaFree(x);
  cudaFree(dy);
  cudaFree(y);
  gko_destroy(h);
}

/* ==== FP8 GEMM ================================================================= */

/* One FP8 GEMM problem.  Row-major: A m x k, B stored n x k (TRANSB = T),
 * D m x n; column-major: A stored k x m (TRANSA = T), B k x n (TRANSB = N),
 * D m x n column-major: in memory A and B are the same either way. */
typedef struct {
  gko_dtype_t adt, bdt, cd;
  int64_t m, n, k, batch;
  int col_major;
  gko_scale_mode_t sam, sbm;
  float sa, sb; /* TENSOR factors; ROWWISE: each row's (column's) is this times 2^u, u in [-1, 1] */
  int null_scales; /* scale_a = scale_b = NULL (TENSOR: 1) */
  int plain; /* gko_gemm_execute (four NULLs) */
  float alpha, beta;
  int epilogue, compute;
  int amax; /* pass amax_d (every row is checked) */
  double dsat; /* FP8 D: scale_d maps the largest |X| to dsat times the format's max; 0: NULL (1) */
  int64_t sample_rows; /* > 0: check only that many rows (the first, the last, random ones) */
  int autotune;        /* GKO_GEMM_ATTR_AUTOTUNE (cuBLASLt's candidates timed, factors too) */
} fcase;

static fcase fc(gko_dtype_t adt, gko_dtype_t bdt, gko_dtype_t cd, int64_t m, int64_t n, int64_t k) {
  fcase c;
  memset(&c, 0, sizeof c);
  c.adt = adt;
  c.bdt = bdt;
  c.cd = cd;
  c.m = m;
  c.n = n;
  c.k = k;
  c.batch = 1;
  c.sam = c.sbm = GKO_SCALE_TENSOR;
  c.sa = 0.5f;
  c.sb = 2.0f;
  c.alpha = 1.0f;
  c.dsat = 0.75;
  return c;
}

static const char *fc_describe(const fcase *c, char *buf, size_t n) {
  snprintf(buf, n,
           "%sx%s->%s m=%lld n=%lld k=%lld batch=%lld %s scales %s/%s %g/%g%s%s alpha=%g beta=%g "
           "ep=%d compute=%d amax=%d dsat=%g sample=%lld",
           dt_name(c->adt), dt_name(c->bdt), dt_name(c->cd), (long long)c->m, (long long)c->n,
           (long long)c->k, (long long)c->batch, c->col_major ? "col" : "row",
           c->sam ? "row" : "tensor", c->sbm ? "row" : "tensor", (double)c->sa, (double)c->sb,
           c->null_scales ? " (NULL)" : "", c->plain ? " plain execute" : "", (double)c->alpha,
           (double)c->beta, c->epilogue, c->compute, c->amax, c->dsat, (long long)c->sample_rows);
  return buf;
}

/* A row-major FP8 descriptor with TRANSB = T (the layout the rules ask for). */
static gko_gemm_desc_t fp8_desc(gko_dtype_t ab, gko_dtype_t cd, int64_t m, int64_t n, int64_t k) {
  gko_gemm_desc_t d = NULL;
  T_OK(gko_gemm_desc_create(&d, ab, cd, m, n, k));
  T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_TRANSB, GKO_OP_T));
  return d;
}

/* The state of one case: plan, host data, device buffers, the reference of
 * the checked rows. */
typedef struct {
  fcase c;
  char what[400];
  gko_gemm_plan_t plan;
  void *ws;
  size_t ws_bytes;
  gko_dtype_t bias_dt;
  int64_t nsa, nsb;
  float *sa, *sb, sd; /* host factors (sd: scale_d) */
  uint8_t *a, *b; /* host operands */
  void *ch, *biash; /* host C and bias, or NULL */
  size_t d_es, d_bytes; /* D's element size, its buffer's bytes (D and a guard) */
  void *da, *db, *dc, *dd, *dbias;
  float *dsa, *dsb, *dsd, *damax;
  int64_t nrows, *rows; /* the rows checked */
  double *x, *e, *t; /* per checked element: X before the activation, its bound, its terms */
} fgemm;

enum { kGuard = 256 };

static int64_t fg_didx(const fcase *c, int64_t i, int64_t j) {
  return c->col_major ? i + j * c->m : i * c->n + j;
}

/* The relative size of the accumulation error (see the top of the file). */
static double fg_acc_unit(const fcase *c) {
  const double u = (double)c->k * ldexp(1, -23) + ldexp(1, -9);
  if (c->compute == GKO_GEMM_COMPUTE_FP8_FAST_ACCUMULATE)
    return u + (double)((c->k + 31) / 32) * ldexp(1, -17);
  return u;
}

/* X, its bound and its terms for every checked element, from the host
 * factors as they are now. */
static void fg_reference(fgemm *g) {
  const fcase *c = &g->c;
  const int64_t m = c->m, n = c->n, k = c->k;
  const double *ta = f8_table(c->adt), *tb = f8_table(c->bdt);
  const double acc = fg_acc_unit(c);
  for (int64_t bt = 0; bt < c->batch; bt++)
    for (int64_t r = 0; r < g->nrows; r++) {
      const int64_t i = g->rows[r];
      const uint8_t *ar = g->a + (bt * m + i) * k;
      for (int64_t j = 0; j < n; j++) {
        const uint8_t *br = g->b + (bt * n + j) * k;
        double s = 0, sabs = 0;
        for (int64_t p = 0; p < k; p++) {
          const double v = ta[ar[p]] * tb[br[p]];
          s += v;
          sabs += fabs(v);
        }
        const double f = (double)c->alpha * g->sa[c->sam == GKO_SCALE_ROWWISE ? i : 0] *
                         g->sb[c->sbm == GKO_SCALE_ROWWISE ? j : 0];
        double x = f * s, t = fabs(x);
        if (c->beta != 0.0f) {
          const double y = (double)c->beta * t_hv_get(c->cd, g->ch, bt * m * n + fg_didx(c, i, j));
          x += y;
          t += fabs(y);
        }
        if (c->epilogue & 1) {
          const double y = t_hv_get(g->bias_dt, g->biash, j);
          x += y;
          t += fabs(y);
        }
        const int64_t e = (bt * g->nrows + r) * n + j;
        g->x[e] = x;
        g->t[e] = t;
        g->e[e] = fabs(f) * sabs * acc + 4 * ldexp(1, -24) * t;
      }
    }
}

static void *fg_upload(const void *h, size_t bytes) {
  void *d = t_dalloc(bytes);
  t_h2d(d, h, bytes);
  return d;
}

static float *fg_factors(int64_t count, int rowwise, float base, int unit) {
  float *s = malloc((size_t)count * 4);
  cr_assert(s);
  for (int64_t i = 0; i < count; i++)
    s[i] = unit ? 1.0f : rowwise ? (float)(base * exp2(t_uniform(-1, 1))) : base;
  return s;
}

/* Plans c (cr_assert on failure), draws its data, computes the reference,
 * uploads everything and poisons D. */
static void fg_prepare(gko_handle_t h, fgemm *g, const fcase *c) {
  memset(g, 0, sizeof *g);
  g->c = *c;
  fc_describe(c, g->what, sizeof g->what);
  const int64_t m = c->m, n = c->n, k = c->k, bt = c->batch;
  cr_assert(!c->amax || c->sample_rows == 0, "amax needs every row checked [%s]", g->what);
  cr_assert(!c->plain || (c->null_scales && c->dsat == 0 && !c->amax),
            "gko_gemm_execute passes no factors [%s]", g->what);
  gko_gemm_desc_t d = NULL;
  T_OK(gko_gemm_desc_create(&d, c->adt, c->cd, m, n, k));
  if (c->col_major) {
    T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_LAYOUT, GKO_LAYOUT_COL_MAJOR));
    T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_TRANSA, GKO_OP_T));
  } else {
    T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_TRANSB, GKO_OP_T));
  }
  if (c->bdt != c->adt) T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_B_DTYPE, c->bdt));
  T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_SCALE_A_MODE, c->sam));
  T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_SCALE_B_MODE, c->sbm));
  T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_EPILOGUE, c->epilogue));
  T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_COMPUTE, c->compute));
  T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_BATCH_COUNT, bt));
  T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_AUTOTUNE, c->autotune));
  const gko_status_t s = gko_gemm_plan_create(h, d, &g->plan);
  cr_assert_eq(s, GKO_STATUS_SUCCESS, "plan: %s: %s [%s]", gko_status_name(s),
               gko_last_error_detail(), g->what);
  gko_gemm_desc_destroy(d);
  T_OK(gko_gemm_workspace_size(g->plan, &g->ws_bytes));
  g->ws = g->ws_bytes ? t_dalloc(g->ws_bytes) : NULL;

  /* host data */
  g->bias_dt = is_f8(c->cd) ? GKO_DTYPE_BF16 : c->cd;
  g->a = malloc((size_t)(bt * m * k));
  g->b = malloc((size_t)(bt * n * k));
  cr_assert(g->a && g->b);
  for (int64_t i = 0; i < bt * m * k; i++) g->a[i] = f8_random_finite(c->adt, 2.0);
  for (int64_t i = 0; i < bt * n * k; i++) g->b[i] = f8_random_finite(c->bdt, 2.0);
  g->nsa = c->sam == GKO_SCALE_ROWWISE ? m : 1;
  g->nsb = c->sbm == GKO_SCALE_ROWWISE ? n : 1;
  g->sa = fg_factors(g->nsa, c->sam == GKO_SCALE_ROWWISE, c->sa, c->null_scales);
  g->sb = fg_factors(g->nsb, c->sbm == GKO_SCALE_ROWWISE, c->sb, c->null_scales);
  const size_t cd_es = gko_dtype_size(c->cd), bias_es = gko_dtype_size(g->bias_dt);
  if (c->beta != 0.0f) {
    g->ch = malloc((size_t)(bt * m * n) * cd_es);
    cr_assert(g->ch);
    for (int64_t i = 0; i < bt * m * n; i++) t_hv_set(c->cd, g->ch, i, t_uniform(-2, 2));
  }
  if (c->epilogue & 1) {
    g->biash = malloc((size_t)n * bias_es);
    cr_assert(g->biash);
    for (int64_t j = 0; j < n; j++) t_hv_set(g->bias_dt, g->biash, j, t_uniform(-4, 4));
  }

  /* the rows to check and their reference */
  g->nrows = c->sample_rows > 0 && c->sample_rows < m ? c->sample_rows : m;
  g->rows = malloc((size_t)g->nrows * 8 + 8);
  for (int64_t r = 0; r < g->nrows; r++)
    g->rows[r] = g->nrows == m ? r
                 : r == 0      ? 0
                 : r == 1      ? m - 1
                               : (int64_t)(t_next() % (uint64_t)m);
  const size_t ne = (size_t)(bt * g->nrows * n) + 1;
  g->x = malloc(ne * 8);
  g->e = malloc(ne * 8);
  g->t = malloc(ne * 8);
  cr_assert(g->rows && g->x && g->e && g->t);
  fg_reference(g);
  g->sd = 1.0f;
  if (is_f8(c->cd) && c->dsat > 0) {
    double mx = 0;
    for (size_t e = 0; e + 1 < ne; e++) mx = fmax(mx, fabs(t_ref_act(c->epilogue >> 1, g->x[e])));
    if (mx > 0) g->sd = (float)(c->dsat * f8(c->cd)->max / mx);
  }

  /* device */
  g->d_es = cd_es;
  g->d_bytes = (size_t)(bt * m * n) * cd_es + kGuard;
  g->da = fg_upload(g->a, (size_t)(bt * m * k));
  g->db = fg_upload(g->b, (size_t)(bt * n * k));
  if (g->ch) g->dc = fg_upload(g->ch, (size_t)(bt * m * n) * cd_es);
  if (g->biash) g->dbias = fg_upload(g->biash, (size_t)n * bias_es);
  if (!c->null_scales && !c->plain) {
    g->dsa = fg_upload(g->sa, (size_t)g->nsa * 4);
    g->dsb = fg_upload(g->sb, (size_t)g->nsb * 4);
  }
  if (is_f8(c->cd) && c->dsat > 0 && !c->plain) g->dsd = fg_upload(&g->sd, 4);
  if (c->amax) {
    g->damax = t_dalloc(4);
    t_memset(g->damax, AMAX_POISON, 4);
  }
  g->dd = t_dalloc(g->d_bytes);
  t_memset(g->dd, T_POISON_BYTE, g->d_bytes);
}

static gko_status_t fg_execute(const fgemm *g, cudaStream_t st) {
  const fcase *c = &g->c;
  if (c->plain)
    return gko_gemm_execute(g->plan, c->alpha, g->da, g->db, c->beta, g->dc, g->dd, g->dbias, g->ws,
                            g->ws_bytes, st);
  return gko_gemm_execute_scaled(g->plan, c->alpha, g->da, g->dsa, g->db, g->dsb, c->beta, g->dc,
                                 g->dd, g->dsd, g->damax, g->dbias, g->ws, g->ws_bytes, st);
}

/* Waits for the device, copies D (and amax) back and checks them; returns
 * the number of problems. */
static int64_t fg_check(const fgemm *g, uint64_t seed) {
  const fcase *c = &g->c;
  const int64_t m = c->m, n = c->n;
  const int act = c->epilogue >> 1, fp8d = is_f8(c->cd);
  const double uo = fp8d ? 0 : t_unit(c->cd), tiny = c->cd == GKO_DTYPE_F16 ? ldexp(1, -25) : 0;
  const double u23 = ldexp(1, -23);
  T_CUDA(cudaDeviceSynchronize());
  unsigned char *hd = malloc(g->d_bytes);
  cr_assert(hd);
  t_d2h(hd, g->dd, g->d_bytes);
  float amax;
  memset(&amax, AMAX_POISON, 4);
  if (g->damax) t_d2h(&amax, g->damax, 4);
  int64_t bad = 0;
  double amax_lo = 0, amax_hi = 0, worst = 0, err2 = 0, ref2 = 0, act_lo = 0, act_hi = 0;
  for (int64_t bt = 0; bt < c->batch; bt++)
    for (int64_t r = 0; r < g->nrows; r++)
      for (int64_t j = 0; j < n; j++) {
        const int64_t i = g->rows[r], e = (bt * g->nrows + r) * n + j;
        const int64_t di = bt * m * n + fg_didx(c, i, j);
        const double x = g->x[e], eb = g->e[e];
        double got, lo, hi, b;
        if (fp8d) {
          b = eb + u23 * (fabs(x) + eb);
          /* act over [x - b, x + b]: GELU falls below x = -0.75, so the
           * ends need not be the extremes; a few interior points too */
          double vlo = INFINITY, vhi = -INFINITY;
          for (int q = 0; q <= 8; q++) {
            const double v = g->sd * t_ref_act(act, x - b + q * b / 4);
            vlo = fmin(vlo, v);
            vhi = fmax(vhi, v);
          }
          if (act == 3) { /* cuBLASLt's fused GELU-tanh: 2^-8 relative, 5e-6 absolute
                             in its negative tail (docs/gemm.md, "GELU-tanh") */
            const double w = ldexp(fmax(fabs(vlo), fabs(vhi)), -8) + 5e-6 * g->sd;
            vlo -= w;
            vhi += w;
          }
          vlo -= fabs(vlo) * u23;
          vhi += fabs(vhi) * u23;
          got = f8_decode(c->cd, hd[di]);
          lo = f8_decode(c->cd, f8_encode(c->cd, vlo));
          hi = f8_decode(c->cd, f8_encode(c->cd, vhi));
        } else {
          const double want = t_ref_act(act, x);
          b = eb + uo * (fabs(want) + g->t[e] + eb) + tiny;
          got = t_hv_get(c->cd, hd, di);
          lo = want - b;
          hi = want + b;
          if (b > 0) worst = fmax(worst, fabs(got - want) / b);
          err2 += (got - want) * (got - want);
          ref2 += want * want;
        }
        amax_lo = fmax(amax_lo, fabs(x) - b);
        amax_hi = fmax(amax_hi, fabs(x) + b);
        act_lo = fmax(act_lo, fmin(fabs(t_ref_act(act, x - b)), fabs(t_ref_act(act, x + b))));
        act_hi = fmax(act_hi, fmax(fabs(t_ref_act(act, x - b)), fabs(t_ref_act(act, x + b))));
        if (!(got >= lo && got <= hi) && bad++ < 5)
          cr_log_error(
              "seed %llu [%s] b=%lld i=%lld j=%lld: got %.9g, want in [%.9g, %.9g] (X = "
              "%.9g, scale_d %.9g)",
              (unsigned long long)seed, g->what, (long long)bt, (long long)i, (long long)j, got, lo,
              hi, x, (double)g->sd);
      }
  const size_t dlen = (size_t)(c->batch * m * n) * g->d_es;
  bad += poison_outside(hd, g->d_bytes, 0, dlen, g->what);
  /* amax_d is that of the activated values (gko.h; without an activation
   * both ranges are |X|'s) */
  if (g->damax && !(amax >= fmin(amax_lo, act_lo) && amax <= act_hi)) {
    bad++;
    cr_log_error("seed %llu [%s]: amax_d %.9g, want in [%.9g, %.9g] (|X| in [%.9g, %.9g])",
                 (unsigned long long)seed, g->what, (double)amax, act_lo, act_hi, amax_lo, amax_hi);
  }
  if (!fp8d)
    cr_log_info("[%s]: largest error %.3g of its bound; relative Frobenius error %.3g", g->what,
                worst, ref2 > 0 ? sqrt(err2 / ref2) : sqrt(err2));
  free(hd);
  return bad;
}

static void fg_free(fgemm *g) {
  gko_gemm_plan_destroy(g->plan);
  void *dev[] = {g->ws, g->da, g->db, g->dc, g->dd, g->dbias, g->dsa, g->dsb, g->dsd, g->damax};
  for (size_t i = 0; i < sizeof dev / sizeof dev[0]; i++) cudaFree(dev[i]);
  void *host[] = {g->sa, g->sb, g->a, g->b, g->ch, g->biash, g->rows, g->x, g->e, g->t};
  for (size_t i = 0; i < sizeof host / sizeof host[0]; i++) free(host[i]);
}

/* One case, prepared, executed on the default stream and checked. */
static int64_t run_fp8_gemm(gko_handle_t h, const fcase *c, uint64_t seed) {
  fgemm g;
  fg_prepare(h, &g, c);
  const gko_status_t s = fg_execute(&g, NULL);
  cr_assert_eq(s, GKO_STATUS_SUCCESS, "execute: %s: %s [%s]", gko_status_name(s),
               gko_last_error_detail(), g.what);
  const int64_t bad = fg_check(&g, seed);
  fg_free(&g);
  return bad;
}

/* The start of an FP8 GEMM test: skips without a GPU or below compute
 * capability 8.9, seeds the generator, returns a handle. */
static gko_handle_t fp8_gemm_begin(uint64_t *seed) {
  T_REQUIRE_GPU();
  const int cc = t_cc();
  if (cc < 89)
    cr_skip_test("FP8 GEMM needs compute capability 8.9 or newer; this GPU is %d.%d", cc / 10,
                 cc % 10);
  return t_gpu_setup(seed);
}

static void fp8_gemm_end(gko_handle_t h, int64_t bad, uint64_t seed) {
  cr_expect_eq(bad, 0, "seed %llu: %lld problems", (unsigned long long)seed, (long long)bad);
  gko_destroy(h);
}

/* The input pairs (both E5M2 is refused). */
static const gko_dtype_t kPairs[3][2] = {{E4M3, E4M3}, {E4M3, E5M2}, {E5M2, E4M3}};
/* The output types of each pair: E5M2 D only with an E5M2 input (cuBLASLt's
 * FP8 kernels have E5M2 D only there; gko.h). */
static int fp8_cd_ok(int pair, gko_dtype_t cd) { return cd != E5M2 || pair != 0; }
/* amax_d: an 8-bit D only (cuBLASLt computes it only where it quantizes). */
static int fp8_amax_ok(gko_dtype_t cd) { return is_f8(cd); }
static const gko_dtype_t kCds[5] = {GKO_DTYPE_F32, GKO_DTYPE_F16, GKO_DTYPE_BF16, E4M3, E5M2};
static const int64_t kShapes[][3] = {{16, 16, 16}, {64, 48, 32}, {128, 256, 512}, {77, 80, 64}};
enum { kNShapes = sizeof kShapes / sizeof kShapes[0] };

Test(fp8, gemm_tensor_scales_every_output_type, .timeout = 600) {
  uint64_t seed;
  gko_handle_t h = fp8_gemm_begin(&seed);
  int64_t bad = 0;
  int i = 0;
  for (int s = 0; s < kNShapes; s++)
    for (int d = 0; d < 5; d++)
      for (int p = 0; p < 3; p++, i++) {
        if (!fp8_cd_ok(p, kCds[d])) continue;
        fcase c =
            fc(kPairs[p][0], kPairs[p][1], kCds[d], kShapes[s][0], kShapes[s][1], kShapes[s][2]);
        c.alpha = i % 2 ? 0.75f : 1.0f;
        c.amax = fp8_amax_ok(kCds[d]);
        c.dsat = i % 3 ? 0.75 : 1.5; /* 1.5: part of D saturates */
        c.col_major = i % 5 == 4 && c.m % 16 == 0; /* column-major with m a multiple of 16 */
        bad += run_fp8_gemm(h, &c, seed);
      }
  fp8_gemm_end(h, bad, seed);
}

/* Both factors per row / column (torch._scaled_mm's row-wise scaling);
 * 16/32-bit D only (an 8-bit D takes per-tensor factors). */
Test(fp8, gemm_rowwise_scales, .timeout = 600) {
  uint64_t seed;
  gko_handle_t h = fp8_gemm_begin(&seed);
  int64_t bad = 0;
  int i = 0;
  for (int s = 1; s < kNShapes; s++)
    for (int d = 0; d < 3; d++, i++) {
      const int p = i % 3;
      fcase c =
          fc(kPairs[p][0], kPairs[p][1], kCds[d], kShapes[s][0], kShapes[s][1], kShapes[s][2]);
      c.sam = c.sbm = GKO_SCALE_ROWWISE;
      c.alpha = i % 2 ? 0.75f : 1.0f;
      c.col_major = i % 4 == 3 && c.m % 16 == 0;
      bad += run_fp8_gemm(h, &c, seed);
    }
  fp8_gemm_end(h, bad, seed);
}

/* One factor per row or column and the other per tensor, or row-wise
 * factors with an 8-bit D: NOT_SUPPORTED naming the rule (cuBLASLt has no
 * such kernels; gko.h). */
static void expect_plan(gko_handle_t h, gko_gemm_desc_t d, gko_status_t want, const char *word);
static gko_gemm_desc_t fp8_desc(gko_dtype_t ab, gko_dtype_t cd, int64_t m, int64_t n, int64_t k);
static gko_gemm_desc_t with(gko_gemm_desc_t d, gko_gemm_attr_t a, int64_t v);
Test(fp8, gemm_rowwise_mixed_or_with_fp8_d_is_refused) {
  uint64_t seed;
  gko_handle_t h = fp8_gemm_begin(&seed);
  for (int d = 0; d < 4; d++)
    for (int mode = 0; mode < 2; mode++)
      expect_plan(
          h,
          with(fp8_desc(E4M3, kCds[d], 64, 48, 32),
               mode ? GKO_GEMM_ATTR_SCALE_A_MODE : GKO_GEMM_ATTR_SCALE_B_MODE, GKO_SCALE_ROWWISE),
          GKO_STATUS_NOT_SUPPORTED, "SCALE_B_MODE must be equal");
  expect_plan(
      h,
      with(with(fp8_desc(E4M3, E4M3, 64, 48, 32), GKO_GEMM_ATTR_SCALE_A_MODE, GKO_SCALE_ROWWISE),
           GKO_GEMM_ATTR_SCALE_B_MODE, GKO_SCALE_ROWWISE),
      GKO_STATUS_NOT_SUPPORTED, "per-tensor factors only");
  expect_plan(h, fp8_desc(E4M3, E5M2, 64, 48, 32), GKO_STATUS_NOT_SUPPORTED,
              "needs an E5M2 operand");
  fp8_gemm_end(h, 0, seed);
}

/* Bias (cd_dtype; BF16 for an FP8 D), beta * C (16/32-bit D), ReLU,
 * GELU-tanh (an 8-bit D), and amax_d (an 8-bit D: after the activation). */
Test(fp8, gemm_bias_beta_relu_and_amax, .timeout = 600) {
  uint64_t seed;
  gko_handle_t h = fp8_gemm_begin(&seed);
  static const int eps[6] = {GKO_EPILOGUE_BIAS,      GKO_EPILOGUE_BIAS_RELU,
                             GKO_EPILOGUE_RELU,      GKO_EPILOGUE_NONE,
                             GKO_EPILOGUE_GELU_TANH, GKO_EPILOGUE_BIAS_GELU_TANH};
  int64_t bad = 0;
  int i = 0;
  for (int s = 1; s < kNShapes; s++)
    for (int d = 0; d < 5; d++)
      for (int ep = 0; ep < 6; ep++)
        for (int beta = 0; beta < 2; beta++, i++) {
          const int p = i % 3;
          if (!fp8_cd_ok(p, kCds[d]) || (beta && is_f8(kCds[d]))) continue;
          /* GELU-tanh: cuBLASLt's own form, checked where E4M3/E5M2 rounding
           * dominates its approximation (an 8-bit D) */
          if (ep >= 4 && !is_f8(kCds[d])) continue;
          fcase c =
              fc(kPairs[p][0], kPairs[p][1], kCds[d], kShapes[s][0], kShapes[s][1], kShapes[s][2]);
          c.epilogue = eps[ep];
          c.beta = beta ? 0.5f : 0.0f;
          c.alpha = 0.75f;
          if (i % 4 == 1 && !is_f8(kCds[d])) c.sam = c.sbm = GKO_SCALE_ROWWISE;
          c.amax = fp8_amax_ok(kCds[d]);
          bad += run_fp8_gemm(h, &c, seed);
        }
  fp8_gemm_end(h, bad, seed);
}

/* NULL factors (1), scale_d NULL (1), and gko_gemm_execute on an FP8 plan
 * (the scaled call with four NULLs). */
Test(fp8, gemm_unit_scales_and_plain_execute) {
  uint64_t seed;
  gko_handle_t h = fp8_gemm_begin(&seed);
  int64_t bad = 0;
  for (int s = 0; s < 2; s++)
    for (int d = 0; d < 4; d++)
      for (int plain = 0; plain < 2; plain++) {
        fcase c = fc(E4M3, E5M2, kCds[d], kShapes[s][0], kShapes[s][1], kShapes[s][2]);
        c.null_scales = 1;
        c.plain = plain;
        c.dsat = 0;
        c.amax = !plain && fp8_amax_ok(kCds[d]);
        c.alpha = plain ? 1.0f : 0.75f;
        bad += run_fp8_gemm(h, &c, seed);
      }
  fp8_gemm_end(h, bad, seed);
}

/* A strided batch of 3 (dense strides; one bias for every batch); amax_d
 * over every batch. */
Test(fp8, gemm_strided_batch) {
  uint64_t seed;
  gko_handle_t h = fp8_gemm_begin(&seed);
  int64_t bad = 0;
  int i = 0;
  for (int s = 0; s < 3; s++)
    for (int d = 0; d < 5; d++, i++) {
      const int p = i % 3;
      if (!fp8_cd_ok(p, kCds[d])) continue;
      fcase c =
          fc(kPairs[p][0], kPairs[p][1], kCds[d], kShapes[s][0], kShapes[s][1], kShapes[s][2]);
      c.batch = 3;
      c.epilogue = kCds[d] == GKO_DTYPE_F32 ? GKO_EPILOGUE_NONE : GKO_EPILOGUE_BIAS;
      c.beta = is_f8(kCds[d]) ? 0.0f : 0.5f;
      c.amax = fp8_amax_ok(kCds[d]);
      bad += run_fp8_gemm(h, &c, seed);
    }
  fp8_gemm_end(h, bad, seed);
}

/* m = 1000 (not a multiple of 16), n = 1008, k = 4096; rows sampled. */
Test(fp8, gemm_large_shape_sampled_rows, .timeout = 900) {
  uint64_t seed;
  gko_handle_t h = fp8_gemm_begin(&seed);
  static const gko_dtype_t cds[4] = {GKO_DTYPE_F32, GKO_DTYPE_BF16, GKO_DTYPE_F16, E4M3};
  int64_t bad = 0;
  for (int d = 0; d < 4; d++) {
    fcase c = fc(E4M3, d % 2 ? E5M2 : E4M3, cds[d], 1000, 1008, 4096);
    c.sample_rows = 40;
    c.alpha = d % 2 ? 0.75f : 1.0f;
    if (d == 2) c.sam = c.sbm = GKO_SCALE_ROWWISE;
    if (d == 1) c.epilogue = GKO_EPILOGUE_BIAS;
    bad += run_fp8_gemm(h, &c, seed);
  }
  fp8_gemm_end(h, bad, seed);
}

/* AUTOTUNE times cuBLASLt's candidates (row-wise plans with scratch
 * factors); the winner's results within the same bounds. */
Test(fp8, gemm_autotune, .timeout = 600) {
  uint64_t seed;
  gko_handle_t h = fp8_gemm_begin(&seed);
  int64_t bad = 0;
  for (int d = 0; d < 4; d++)
    for (int row = 0; row < 2; row++) {
      if (row && is_f8(kCds[d])) continue;
      fcase c = fc(E4M3, d % 2 ? E5M2 : E4M3, kCds[d], 128, 256, 512);
      c.autotune = 1;
      if (row) c.sam = c.sbm = GKO_SCALE_ROWWISE;
      c.amax = fp8_amax_ok(kCds[d]);
      bad += run_fp8_gemm(h, &c, seed);
    }
  fp8_gemm_end(h, bad, seed);
}

/* FP8_FAST_ACCUMULATE: the same outputs within the looser bound. */
Test(fp8, gemm_fast_accumulate, .timeout = 900) {
  uint64_t seed;
  gko_handle_t h = fp8_gemm_begin(&seed);
  static const gko_dtype_t cds[3] = {GKO_DTYPE_F32, GKO_DTYPE_BF16, E4M3};
  int64_t bad = 0;
  for (int big = 0; big < 2; big++)
    for (int d = 0; d < 3; d++) {
      fcase c =
          big ? fc(E4M3, E4M3, cds[d], 1000, 1008, 4096) : fc(E5M2, E4M3, cds[d], 128, 256, 512);
      c.compute = GKO_GEMM_COMPUTE_FP8_FAST_ACCUMULATE;
      c.sample_rows = big ? 40 : 0;
      c.amax = !big && fp8_amax_ok(cds[d]);
      if (d == 1) c.sam = c.sbm = GKO_SCALE_ROWWISE;
      bad += run_fp8_gemm(h, &c, seed);
    }
  fp8_gemm_end(h, bad, seed);
}

/* plan_create answers `want` (non-fatal), with a detail containing `word`,
 * and leaves *plan alone; the descriptor is destroyed. */
static void expect_plan(gko_handle_t h, gko_gemm_desc_t d, gko_status_t want, const char *word) {
  const gko_gemm_plan_t keep = (gko_gemm_plan_t)(uintptr_t)0x99;
  gko_gemm_plan_t p = keep;
  EXPECT_FAILS(want, word, gko_gemm_plan_create(h, d, &p));
  if (p != keep) gko_gemm_plan_destroy(p);
  cr_expect_eq(p, keep, "plan written on failure");
  gko_gemm_desc_destroy(d);
}

/* A plan that must be created. */
static gko_gemm_plan_t make_plan(gko_handle_t h, gko_gemm_desc_t d, void **ws, size_t *bytes) {
  gko_gemm_plan_t p = NULL;
  T_OK(gko_gemm_plan_create(h, d, &p));
  gko_gemm_desc_destroy(d);
  T_OK(gko_gemm_workspace_size(p, bytes));
  *ws = t_dalloc(*bytes);
  return p;
}

static gko_gemm_desc_t with(gko_gemm_desc_t d, gko_gemm_attr_t a, int64_t v) {
  T_OK(gko_gemm_desc_set(d, a, v));
  return d;
}

/* On GPUs below 8.9 an FP8 plan is NOT_SUPPORTED (it runs there only). */
Test(fp8, gemm_needs_sm89) {
  T_REQUIRE_GPU();
  const int cc = t_cc();
  if (cc >= 89)
    cr_skip_test("compute capability %d.%d runs FP8 GEMM: the fp8/gemm_* tests cover it", cc / 10,
                 cc % 10);
  gko_handle_t h = t_handle();
  expect_plan(h, fp8_desc(E4M3, GKO_DTYPE_F32, 64, 48, 32), GKO_STATUS_NOT_SUPPORTED, "");
  expect_plan(h, with(fp8_desc(E4M3, GKO_DTYPE_BF16, 64, 48, 32), GKO_GEMM_ATTR_B_DTYPE, E5M2),
              GKO_STATUS_NOT_SUPPORTED, "");
  gko_destroy(h);
}

/* Plans without FP8 inputs: the scaled call needs all four pointers NULL
 * (and then equals gko_gemm_execute); the FP8-only attributes are
 * INVALID_VALUE at plan_create.  Any GPU. */
Test(fp8, gemm_scale_arguments_on_16bit_plans) {
  T_REQUIRE_GPU();
  gko_handle_t h = t_handle();
  const int64_t m = 64, n = 48, k = 32;
  const size_t dbytes = (size_t)(m * n) * 2 + 64;
  unsigned char *a = t_dalloc((size_t)(m * k) * 2), *b = t_dalloc((size_t)(k * n) * 2);
  unsigned char *d = t_dalloc(dbytes), *d2 = t_dalloc(dbytes);
  float *s = t_dalloc(64), *am = t_dalloc(64);
  t_memset(a, 0x3c, (size_t)(m * k) * 2);
  t_memset(b, 0x3c, (size_t)(k * n) * 2);
  t_memset(s, 0, 64);
  t_memset(am, T_POISON_BYTE, 64);
  t_memset(d, T_POISON_BYTE, dbytes);
  t_memset(d2, T_POISON_BYTE, dbytes);
  gko_gemm_desc_t desc = NULL;
  T_OK(gko_gemm_desc_create(&desc, GKO_DTYPE_F16, GKO_DTYPE_F16, m, n, k));
  void *ws;
  size_t need;
  gko_gemm_plan_t p = make_plan(h, desc, &ws, &need);
  EXPECT_FAILS(GKO_STATUS_INVALID_VALUE, "scale_a",
               gko_gemm_execute_scaled(p, 1.0f, a, s, b, NULL, 0.0f, NULL, d, NULL, NULL, NULL, ws,
                                       need, NULL));
  EXPECT_FAILS(GKO_STATUS_INVALID_VALUE, "scale_b",
               gko_gemm_execute_scaled(p, 1.0f, a, NULL, b, s, 0.0f, NULL, d, NULL, NULL, NULL, ws,
                                       need, NULL));
  EXPECT_FAILS(GKO_STATUS_INVALID_VALUE, "scale_d",
               gko_gemm_execute_scaled(p, 1.0f, a, NULL, b, NULL, 0.0f, NULL, d, s, NULL, NULL, ws,
                                       need, NULL));
  EXPECT_FAILS(GKO_STATUS_INVALID_VALUE, "amax",
               gko_gemm_execute_scaled(p, 1.0f, a, NULL, b, NULL, 0.0f, NULL, d, NULL, am, NULL, ws,
                                       need, NULL));
  t_assert_poisoned(d, dbytes);
  t_assert_poisoned(am, 64);
  T_OK(gko_gemm_execute_scaled(p, 1.0f, a, NULL, b, NULL, 0.0f, NULL, d, NULL, NULL, NULL, ws, need,
                               NULL));
  T_OK(gko_gemm_execute(p, 1.0f, a, b, 0.0f, NULL, d2, NULL, ws, need, NULL));
  T_CUDA(cudaDeviceSynchronize());
  unsigned char *h1 = malloc(dbytes), *h2 = malloc(dbytes);
  t_d2h(h1, d, dbytes);
  t_d2h(h2, d2, dbytes);
  cr_expect_eq(memcmp(h1, h2, dbytes), 0,
               "the scaled call with four NULLs differs from gko_gemm_execute");
  free(h1);
  free(h2);
  gko_gemm_plan_destroy(p);
  cudaFree(ws);
  /* FP8-only attributes on 16-bit inputs */
  gko_gemm_desc_t x = NULL;
  T_OK(gko_gemm_desc_create(&x, GKO_DTYPE_F16, GKO_DTYPE_F16, m, n, k));
  expect_plan(h, with(x, GKO_GEMM_ATTR_SCALE_A_MODE, GKO_SCALE_ROWWISE), GKO_STATUS_INVALID_VALUE,
              "SCALE_A_MODE");
  T_OK(gko_gemm_desc_create(&x, GKO_DTYPE_BF16, GKO_DTYPE_F32, m, n, k));
  expect_plan(h, with(x, GKO_GEMM_ATTR_SCALE_B_MODE, GKO_SCALE_ROWWISE), GKO_STATUS_INVALID_VALUE,
              "SCALE_B_MODE");
  T_OK(gko_gemm_desc_create(&x, GKO_DTYPE_F16, GKO_DTYPE_F32, m, n, k));
  expect_plan(h, with(x, GKO_GEMM_ATTR_COMPUTE, GKO_GEMM_COMPUTE_FP8_FAST_ACCUMULATE),
              GKO_STATUS_INVALID_VALUE, "COMPUTE");
  /* an 8-bit B on 16-bit A is weight-only FP8, refused for m = 64 > 16 by
   * its rule (the w8_* tests); with an f32 A the pairing itself */
  T_OK(gko_gemm_desc_create(&x, GKO_DTYPE_F16, GKO_DTYPE_F16, m, n, k));
  expect_plan(h, with(x, GKO_GEMM_ATTR_B_DTYPE, E4M3), GKO_STATUS_NOT_SUPPORTED, "m = 64");
  T_OK(gko_gemm_desc_create(&x, GKO_DTYPE_F32, GKO_DTYPE_F32, m, n, k));
  expect_plan(h, with(x, GKO_GEMM_ATTR_B_DTYPE, E4M3), GKO_STATUS_INVALID_VALUE, "B_DTYPE");
  cudaFree(a);
  cudaFree(b);
  cudaFree(d);
  cudaFree(d2);
  cudaFree(s);
  cudaFree(am);
  gko_destroy(h);
}

/* Every documented FP8 refusal: plan-time NOT_SUPPORTED / INVALID_VALUE,
 * execute-time INVALID_VALUE with D and amax_d untouched. */
Test(fp8, gemm_refusals_leave_d_untouched) {
  uint64_t seed;
  gko_handle_t h = fp8_gemm_begin(&seed);
  const int64_t m = 64, n = 48, k = 32;
  const gko_dtype_t F32 = GKO_DTYPE_F32, F16 = GKO_DTYPE_F16, BF16 = GKO_DTYPE_BF16;
  const gko_status_t NS = GKO_STATUS_NOT_SUPPORTED, IV = GKO_STATUS_INVALID_VALUE;
  /* plan time */
  expect_plan(h, with(fp8_desc(E4M3, F32, m, n, k), GKO_GEMM_ATTR_TRANSB, GKO_OP_N), NS, "TRANSB");
  expect_plan(h, with(fp8_desc(E4M3, F32, m, n, k), GKO_GEMM_ATTR_TRANSA, GKO_OP_T), NS, "");
  expect_plan(h,
              with(with(fp8_desc(E4M3, F32, m, n, k), GKO_GEMM_ATTR_LAYOUT, GKO_LAYOUT_COL_MAJOR),
                   GKO_GEMM_ATTR_TRANSB, GKO_OP_N),
              NS, "");
  expect_plan(h, fp8_desc(E4M3, F32, m, n, 24), NS, "");
  expect_plan(h, with(fp8_desc(E4M3, F16, m, n, k), GKO_GEMM_ATTR_LDA, 40), NS, "");
  expect_plan(h, with(fp8_desc(E4M3, F16, m, n, k), GKO_GEMM_ATTR_LDB, 40), NS, "");
  expect_plan(h,
              with(with(fp8_desc(E4M3, BF16, m, n, k), GKO_GEMM_ATTR_BATCH_COUNT, 2),
                   GKO_GEMM_ATTR_STRIDE_A, m * k + 8),
              NS, "");
  expect_plan(h, fp8_desc(E5M2, F32, m, n, k), NS, "");
  expect_plan(h, with(fp8_desc(E4M3, F32, m, n, k), GKO_GEMM_ATTR_BACKEND, GKO_GEMM_BACKEND_WMMA),
              NS, "");
  expect_plan(h, with(fp8_desc(E4M3, F32, m, n, k), GKO_GEMM_ATTR_BACKEND, GKO_GEMM_BACKEND_SM90),
              NS, "");
  expect_plan(
      h, with(fp8_desc(E4M3, F16, m, n, k), GKO_GEMM_ATTR_COMPUTE, GKO_GEMM_COMPUTE_F16_ACCUMULATE),
      NS, "");
  expect_plan(h, with(fp8_desc(E4M3, F32, m, n, k), GKO_GEMM_ATTR_ALIGNMENT, 8), NS, "");
  expect_plan(h, with(fp8_desc(E4M3, E4M3, m, n, k), GKO_GEMM_ATTR_EPILOGUE, GKO_EPILOGUE_GELU_ERF),
              NS, "");
  expect_plan(
      h, with(fp8_desc(E4M3, E4M3, m, n, k), GKO_GEMM_ATTR_EPILOGUE, GKO_EPILOGUE_BIAS_GELU_ERF),
      NS, "");
  expect_plan(h,
              with(with(fp8_desc(E4M3, E4M3, m, n, k), GKO_GEMM_ATTR_EPILOGUE, GKO_EPILOGUE_BIAS),
                   GKO_GEMM_ATTR_FUSION, GKO_GEMM_FUSION_NEVER),
              NS, "");
  expect_plan(h, with(fp8_desc(E4M3, F32, m, n, k), GKO_GEMM_ATTR_B_DTYPE, F16), IV, "B_DTYPE");
  expect_plan(h, with(fp8_desc(E5M2, F32, m, n, k), GKO_GEMM_ATTR_B_DTYPE, BF16), IV, "B_DTYPE");

  /* execute time: real buffers, D and amax poisoned */
  const size_t dbytes = (size_t)(m * n) * 4 + 64;
  unsigned char *a = t_dalloc((size_t)(m * k) + 64), *b = t_dalloc((size_t)(n * k) + 64);
  unsigned char *c = t_dalloc(dbytes), *d = t_dalloc(dbytes), *bias = t_dalloc((size_t)n * 4 + 64);
  float *s = t_dalloc(256 * 4), *am = t_dalloc(64);
  float ones[256];
  for (int i = 0; i < 256; i++) ones[i] = 1.0f;
  t_memset(a, 0x38, (size_t)(m * k) + 64);
  t_memset(b, 0x38, (size_t)(n * k) + 64);
  t_memset(c, 0, dbytes);
  t_memset(bias, 0, (size_t)n * 4 + 64);
  t_h2d(s, ones, sizeof ones);
  t_memset(am, T_POISON_BYTE, 64);
  t_memset(d, T_POISON_BYTE, dbytes);
  void *ws;
  size_t need;
  /* FP8 D with a BF16 bias: beta must be 0, the bias 16-byte aligned */
  gko_gemm_plan_t p =
      make_plan(h, with(fp8_desc(E4M3, E4M3, m, n, k), GKO_GEMM_ATTR_EPILOGUE, GKO_EPILOGUE_BIAS),
                &ws, &need);
  EXPECT_FAILS(
      IV, "beta",
      gko_gemm_execute_scaled(p, 1.0f, a, s, b, s, 1.0f, c, d, s, NULL, bias, ws, need, NULL));
  EXPECT_FAILS(IV, "bias",
               gko_gemm_execute_scaled(p, 1.0f, a, s, b, s, 0.0f, NULL, d, s, NULL, bias + 2, ws,
                                       need, NULL));
  EXPECT_FAILS(IV, "scale_d",
               gko_gemm_execute_scaled(p, 1.0f, a, s, b, s, 0.0f, NULL, d, (float *)((char *)s + 2),
                                       NULL, bias, ws, need, NULL));
  gko_gemm_plan_destroy(p);
  cudaFree(ws);
  /* amax_d needs an 8-bit D (cuBLASLt computes it only where it quantizes) */
  p = make_plan(h,
                with(fp8_desc(E4M3, BF16, m, n, k), GKO_GEMM_ATTR_EPILOGUE, GKO_EPILOGUE_GELU_ERF),
                &ws, &need);
  EXPECT_FAILS(
      IV, "8-bit D",
      gko_gemm_execute_scaled(p, 1.0f, a, s, b, s, 0.0f, NULL, d, NULL, am, NULL, ws, need, NULL));
  gko_gemm_plan_destroy(p);
  cudaFree(ws);
  /* an 8-bit D without a product: k = 0 at plan time, alpha = 0 at execute;
   * an empty D with amax_d: amax_d = 0, nothing else written */
  expect_plan(h, fp8_desc(E4M3, E4M3, m, n, 0), NS, "k = 0");
  p = make_plan(h, fp8_desc(E4M3, E4M3, m, n, k), &ws, &need);
  EXPECT_FAILS(IV, "alpha = 0",
               gko_gemm_execute_scaled(p, 0.0f, a, s, b, s, 0.0f, NULL, d, NULL, NULL, NULL, ws,
                                       need, NULL));
  EXPECT_FAILS(IV, "alpha = 0",
               gko_gemm_execute_scaled(p, 0.0f, a, s, b, s, 0.0f, NULL, d, NULL, am, NULL, ws,
                                       need, NULL));
  gko_gemm_plan_destroy(p);
  cudaFree(ws);
  {
    float *am0 = t_dalloc(16);
    t_memset(am0, T_POISON_BYTE, 16);
    p = make_plan(h, fp8_desc(E4M3, E4M3, 0, n, k), &ws, &need);
    T_OK(gko_gemm_execute_scaled(p, 1.0f, NULL, NULL, NULL, NULL, 0.0f, NULL, NULL, NULL, am0,
                                 NULL, ws, need, NULL));
    T_CUDA(cudaDeviceSynchronize());
    float v = -1.0f;
    t_d2h(&v, am0, 4);
    cr_expect_eq(v, 0.0f, "amax_d of an empty D: %g", (double)v);
    gko_gemm_plan_destroy(p);
    cudaFree(ws);
    cudaFree(am0);
  }
  /* FUSION_REQUIRED with an f32 D's bias: cuBLASLt's would be bf16 */
  expect_plan(h,
              with(with(fp8_desc(E4M3, F32, m, n, k), GKO_GEMM_ATTR_EPILOGUE, GKO_EPILOGUE_BIAS),
                   GKO_GEMM_ATTR_FUSION, GKO_GEMM_FUSION_REQUIRED),
              NS, "FUSION_REQUIRED");
  /* a ROWWISE plan through gko_gemm_execute (no factors): its vectors missing */
  p = make_plan(
      h,
      with(with(fp8_desc(E4M3, BF16, m, n, k), GKO_GEMM_ATTR_SCALE_A_MODE, GKO_SCALE_ROWWISE),
           GKO_GEMM_ATTR_SCALE_B_MODE, GKO_SCALE_ROWWISE),
      &ws, &need);
  EXPECT_FAILS(IV, "ROWWISE", gko_gemm_execute(p, 1.0f, a, b, 0.0f, NULL, d, NULL, ws, need, NULL));
  gko_gemm_plan_destroy(p);
  cudaFree(ws);
  /* an F32 D's bias runs in gko's pass: no amax_d; scale_d is FP8 D's only */
  p = make_plan(h, with(fp8_desc(E4M3, F32, m, n, k), GKO_GEMM_ATTR_EPILOGUE, GKO_EPILOGUE_BIAS),
                &ws, &need);
  EXPECT_FAILS(
      IV, "amax",
      gko_gemm_execute_scaled(p, 1.0f, a, s, b, s, 0.0f, NULL, d, NULL, am, bias, ws, need, NULL));
  EXPECT_FAILS(
      IV, "scale_d",
      gko_gemm_execute_scaled(p, 1.0f, a, s, b, s, 0.0f, NULL, d, s, NULL, bias, ws, need, NULL));
  gko_gemm_plan_destroy(p);
  cudaFree(ws);
  /* ROWWISE needs its vector; every factor pointer 16-byte aligned (cuBLASLt) */
  p = make_plan(
      h,
      with(with(fp8_desc(E4M3, F16, m, n, k), GKO_GEMM_ATTR_SCALE_A_MODE, GKO_SCALE_ROWWISE),
           GKO_GEMM_ATTR_SCALE_B_MODE, GKO_SCALE_ROWWISE),
      &ws, &need);
  EXPECT_FAILS(IV, "16-byte",
               gko_gemm_execute_scaled(p, 1.0f, a, s + 1, b, s, 0.0f, NULL, d, NULL, NULL, NULL, ws,
                                       need, NULL));
  EXPECT_FAILS(IV, "scale_b",
               gko_gemm_execute_scaled(p, 1.0f, a, s, b, s + 2, 0.0f, NULL, d, NULL, NULL, NULL, ws,
                                       need, NULL));
  EXPECT_FAILS(IV, "scale_a",
               gko_gemm_execute_scaled(p, 1.0f, a, NULL, b, s, 0.0f, NULL, d, NULL, NULL, NULL, ws,
                                       need, NULL));
  EXPECT_FAILS(IV, "scale_a",
               gko_gemm_execute_scaled(p, 1.0f, a, (float *)((char *)s + 2), b, s, 0.0f, NULL, d,
                                       NULL, NULL, NULL, ws, need, NULL));
  EXPECT_FAILS(IV, "scale_b",
               gko_gemm_execute_scaled(p, 1.0f, a, s, b, (float *)((char *)s + 1), 0.0f, NULL, d,
                                       NULL, NULL, NULL, ws, need, NULL));
  EXPECT_FAILS(IV, "amax",
               gko_gemm_execute_scaled(p, 1.0f, a, s, b, s, 0.0f, NULL, d, NULL,
                                       (float *)((char *)am + 2), NULL, ws, need, NULL));
  EXPECT_FAILS(IV, "",
               gko_gemm_execute_scaled(p, 1.0f, NULL, s, b, s, 0.0f, NULL, d, NULL, NULL, NULL, ws,
                                       need, NULL));
  EXPECT_FAILS(IV, "",
               gko_gemm_execute_scaled(p, 1.0f, a, s, b, s, 0.0f, NULL, NULL, NULL, NULL, NULL, ws,
                                       need, NULL));
  gko_gemm_plan_destroy(p);
  cudaFree(ws);
  t_assert_poisoned(d, dbytes);
  t_assert_poisoned(am, 64);
  cudaFree(a);
  cudaFree(b);
  cudaFree(c);
  cudaFree(d);
  cudaFree(bias);
  cudaFree(s);
  cudaFree(am);
  fp8_gemm_end(h, 0, seed);
}

/* One FP8 GEMM (factors, amax_d) and one quantize (factor, amax) captured
 * into a graph on a non-blocking stream and replayed twice, the factors
 * changed in device memory between the replays: the results follow the
 * new values (gko reads them when the work runs). */
Test(fp8, graph_replay_reads_the_scales_at_run_time) {
  uint64_t seed;
  gko_handle_t h = fp8_gemm_begin(&seed);
  cudaStream_t st;
  T_CUDA(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  fcase c = fc(E4M3, E5M2, E4M3, 64, 48, 32); /* an 8-bit D: amax_d */
  c.amax = 1;
  fgemm g;
  fg_prepare(h, &g, &c);
  float qs = 1.0f;
  const qcase q = {GKO_DTYPE_BF16, E4M3, 7, 1003, GKO_SCALE_TENSOR, &qs, 0, 0, 0};
  void *qx = q_input(&q, 0);
  qdev qd;
  q_alloc(&qd, 0, &q, qx);
  cudaGraph_t graph;
  cudaGraphExec_t ge;
  T_CUDA(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
  const gko_status_t s1 = fg_execute(&g, st);
  char d1[512];
  snprintf(d1, sizeof d1, "%s", gko_last_error_detail());
  const gko_status_t s2 = q_call(h, 0, &q, &qd, st);
  char d2[512];
  snprintf(d2, sizeof d2, "%s", gko_last_error_detail());
  const cudaError_t ce = cudaStreamEndCapture(st, &graph);
  cr_assert_eq(s1, GKO_STATUS_SUCCESS, "GEMM under capture: %s: %s", gko_status_name(s1), d1);
  cr_assert_eq(s2, GKO_STATUS_SUCCESS, "quantize under capture: %s: %s", gko_status_name(s2), d2);
  cr_assert_eq(ce, cudaSuccess, "capture: %s", cudaGetErrorString(ce));
  T_CUDA(cudaGraphInstantiate(&ge, graph, 0));
  int64_t bad = 0;
  for (int r = 0; r < 2; r++) {
    if (r == 1) { /* new factors, in place */
      g.sa[0] = 2.0f;
      g.sb[0] = 0.375f;
      t_h2d(g.dsa, g.sa, 4);
      t_h2d(g.dsb, g.sb, 4);
      fg_reference(&g);
      qs = 37.5f;
      t_h2d(qd.scale, &qs, 4);
    }
    t_memset(g.dd, T_POISON_BYTE, g.d_bytes);
    t_memset(g.damax, AMAX_POISON, 4);
    t_memset(qd.y, T_POISON_BYTE, qd.ybytes);
    t_memset(qd.amax, AMAX_POISON, 4);
    T_CUDA(cudaGraphLaunch(ge, st));
    T_CUDA(cudaStreamSynchronize(st));
    bad += fg_check(&g, seed);
    qout o = q_fetch(&qd, st);
    bad += check_quantize(&q, qx, &o, seed);
    free(o.y);
    cr_expect_eq(bad, 0, "replay %d", r);
  }
  cudaGraphExecDestroy(ge);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(st);
  q_free(&qd);
  free(qx);
  fg_free(&g);
  fp8_gemm_end(h, bad, seed);
}

/* ==== weight-only FP8 GEMM: 16-bit A against an 8-bit B ======================= */

/* One problem.  Row-major: A m x k (rows lda apart), B stored n x k (TRANSB
 * = T, rows ldb apart), D m x n; column-major: A stored k x m (TRANSA = T),
 * B k x n, D m x n column-major -- the same memory for A and B.
 *   X = alpha sb_j sum_p a_ip b_jp + beta c_ij + bias_j     (float64)
 * a is exact in f16/bf16 and b in FP8, so every product is exact in f32
 * and on the Tensor Cores; the bound E = S (k 2^-23 + 2^-16) + 4 2^-24 T
 * (S = |alpha sb_j| sum_p |a_ip b_jp|, T as in the FP8 GEMM above) allows
 * f32 accumulation in any order with a margin for the MMA's own partial
 * sums; D is then rounded once to its type. */
typedef struct {
  gko_dtype_t adt, bdt, cd;
  int64_t m, n, k, batch, lda, ldb; /* lda, ldb 0: k */
  int col_major, rowwise, null_scale;
  float sb, alpha, beta;
  int epilogue, static_b, autotune;
  int offset;      /* A and B moved by one element off their 16-byte alignment */
  int nan_c;       /* C holds NaN (with beta = 0 it must not be read) */
  int64_t nan_row; /* >= 0: that row of B (a column of D) holds one NaN weight */
  int shared_b;    /* GKO_GEMM_ATTR_STRIDE_B = 0: one B for every batch */
  int one_split;   /* GKO_GEMM_ATTR_MAX_WORKSPACE = 0: no split-K partials */
  int bulk;        /* on sm_90 the plan must name the bulk-copy kernel */
} wcase;

static wcase wc(gko_dtype_t adt, gko_dtype_t bdt, gko_dtype_t cd, int64_t m, int64_t n,
                int64_t k) {
  wcase c;
  memset(&c, 0, sizeof c);
  c.adt = adt, c.bdt = bdt, c.cd = cd, c.m = m, c.n = n, c.k = k, c.batch = 1;
  c.sb = 0.75f, c.alpha = 1.0f, c.nan_row = -1;
  return c;
}

typedef struct {
  wcase c;
  char what[300];
  gko_gemm_plan_t plan;
  void *ws;
  size_t ws_bytes;
  int64_t lda, ldb, nsb;
  uint16_t *a;
  uint8_t *b;
  float *sb;
  void *ch, *biash;
  unsigned char *abuf, *bbuf; /* device allocations; da, db point into them */
  void *da, *db, *dc, *dd, *dbias;
  float *dsb;
  size_t d_bytes;
  double *x, *e, *t;
} wgemm;

static int64_t wg_didx(const wcase *c, int64_t i, int64_t j) {
  return c->col_major ? i + j * c->m : i * c->n + j;
}

static void wg_reference(wgemm *g) {
  const wcase *c = &g->c;
  const double *tb = f8_table(c->bdt);
  const double acc = (double)c->k * ldexp(1, -23) + ldexp(1, -16);
  for (int64_t bt = 0; bt < c->batch; bt++)
    for (int64_t i = 0; i < c->m; i++)
      for (int64_t j = 0; j < c->n; j++) {
        const uint16_t *ar = g->a + (bt * c->m + i) * g->lda;
        const uint8_t *br = g->b + ((c->shared_b ? 0 : bt) * c->n + j) * g->ldb;
        double s = 0, sabs = 0;
        for (int64_t p = 0; p < c->k; p++) {
          const double v = t_hv_get(c->adt, ar, p) * tb[br[p]];
          s += v;
          sabs += fabs(v);
        }
        const double f = (double)c->alpha * g->sb[c->rowwise ? j : 0];
        double x = f * s, t = fabs(x);
        if (c->beta != 0.0f) {
          const double y = (double)c->beta * t_hv_get(c->cd, g->ch, bt * c->m * c->n + wg_didx(c, i, j));
          x += y;
          t += fabs(y);
        }
        if (c->epilogue & 1) {
          const double y = t_hv_get(c->cd, g->biash, j);
          x += y;
          t += fabs(y);
        }
        const int64_t e = (bt * c->m + i) * c->n + j;
        g->x[e] = x;
        g->t[e] = t;
        g->e[e] = fabs(f) * sabs * acc + 4 * ldexp(1, -24) * t;
      }
}

static gko_gemm_desc_t wg_desc(const wcase *c) {
  gko_gemm_desc_t d = NULL;
  T_OK(gko_gemm_desc_create(&d, c->adt, c->cd, c->m, c->n, c->k));
  T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_B_DTYPE, c->bdt));
  if (c->col_major) {
    T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_LAYOUT, GKO_LAYOUT_COL_MAJOR));
    T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_TRANSA, GKO_OP_T));
  } else {
    T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_TRANSB, GKO_OP_T));
  }
  if (c->lda) T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_LDA, c->lda));
  if (c->ldb) T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_LDB, c->ldb));
  T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_SCALE_B_MODE,
                         c->rowwise ? GKO_SCALE_ROWWISE : GKO_SCALE_TENSOR));
  T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_EPILOGUE, c->epilogue));
  T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_BATCH_COUNT, c->batch));
  if (c->shared_b) T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_STRIDE_B, 0));
  if (c->one_split) T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_MAX_WORKSPACE, 0));
  T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_AUTOTUNE, c->autotune));
  if (c->static_b)
    T_OK(gko_gemm_desc_set(d, GKO_GEMM_ATTR_STATIC_OPERANDS, GKO_GEMM_STATIC_B));
  return d;
}

static void wg_prepare(gko_handle_t h, wgemm *g, const wcase *c) {
  memset(g, 0, sizeof *g);
  g->c = *c;
  snprintf(g->what, sizeof g->what,
           "w8 %sx%s->%s m=%lld n=%lld k=%lld batch=%lld lda=%lld ldb=%lld %s scale %s%s "
           "sb=%g alpha=%g beta=%g ep=%d static=%d tune=%d offset=%d nan_c=%d nan_row=%lld "
           "shared_b=%d one_split=%d",
           dt_name(c->adt), dt_name(c->bdt), dt_name(c->cd), (long long)c->m, (long long)c->n,
           (long long)c->k, (long long)c->batch, (long long)c->lda, (long long)c->ldb,
           c->col_major ? "col" : "row", c->rowwise ? "per column" : "per tensor",
           c->null_scale ? " (NULL)" : "", (double)c->sb, (double)c->alpha, (double)c->beta,
           c->epilogue, c->static_b, c->autotune, c->offset, c->nan_c, (long long)c->nan_row,
           c->shared_b, c->one_split);
  const int64_t m = c->m, n = c->n, k = c->k, bt = c->batch;
  g->lda = c->lda ? c->lda : k;
  g->ldb = c->ldb ? c->ldb : k;
  gko_gemm_desc_t d = wg_desc(c);
  const gko_status_t s = gko_gemm_plan_create(h, d, &g->plan);
  cr_assert_eq(s, GKO_STATUS_SUCCESS, "plan: %s: %s [%s]", gko_status_name(s),
               gko_last_error_detail(), g->what);
  gko_gemm_desc_destroy(d);
  T_OK(gko_gemm_workspace_size(g->plan, &g->ws_bytes));
  g->ws = g->ws_bytes ? t_dalloc(g->ws_bytes) : NULL;
  if (c->bulk && t_cc() == 90 && t_sm90_built()) {
    char text[2048];
    T_OK(gko_gemm_plan_describe(g->plan, text, sizeof text, NULL));
    cr_expect(strstr(text, "cp.async.bulk") != NULL, "not the bulk-copy kernel: '%s' [%s]", text,
              g->what);
  }
  if (c->one_split) {
    char text[2048];
    T_OK(gko_gemm_plan_describe(g->plan, text, sizeof text, NULL));
    cr_expect(g->ws_bytes == 0 && strstr(text, "one split") != NULL,
              "MAX_WORKSPACE = 0: %zu bytes, '%s' [%s]", g->ws_bytes, text, g->what);
  }
  const size_t na = (size_t)(bt * m * g->lda) + 1;
  const size_t nb = (size_t)((c->shared_b ? 1 : bt) * n * g->ldb) + 1;
  g->a = calloc(na, 2);
  g->b = calloc(nb, 1);
  cr_assert(g->a && g->b);
  for (size_t i = 0; i < na; i++) t_hv_set(c->adt, g->a, (int64_t)i, t_uniform(-2, 2));
  for (size_t i = 0; i < nb; i++) g->b[i] = f8_random_finite(c->bdt, 2.0);
  if (c->nan_row >= 0 && k > 0) g->b[c->nan_row * g->ldb + k / 2] = f8(c->bdt)->nan_code;
  g->nsb = c->rowwise ? n : 1;
  g->sb = malloc((size_t)g->nsb * 4);
  cr_assert(g->sb);
  for (int64_t j = 0; j < g->nsb; j++)
    g->sb[j] = c->null_scale ? 1.0f : (float)(c->sb * exp2(c->rowwise ? t_uniform(-2, 2) : 0));
  const size_t cd_es = gko_dtype_size(c->cd), dn = (size_t)(bt * m * n);
  if (c->beta != 0.0f || c->nan_c) {
    g->ch = malloc(dn * cd_es + 1);
    cr_assert(g->ch);
    for (size_t i = 0; i < dn; i++)
      t_hv_set(c->cd, g->ch, (int64_t)i, c->nan_c ? NAN : t_uniform(-2, 2));
  }
  if (c->epilogue & 1) {
    g->biash = malloc((size_t)n * cd_es + 1);
    cr_assert(g->biash);
    for (int64_t j = 0; j < n; j++) t_hv_set(c->cd, g->biash, j, t_uniform(-4, 4));
  }
  g->x = malloc(dn * 8 + 8);
  g->e = malloc(dn * 8 + 8);
  g->t = malloc(dn * 8 + 8);
  cr_assert(g->x && g->e && g->t);
  wg_reference(g);
  /* device: A and B at an offset of one element when asked (unaligned) */
  const size_t off = c->offset ? 1 : 0;
  g->abuf = t_dalloc(na * 2 + 16);
  g->bbuf = t_dalloc(nb + 16);
  g->da = g->abuf + 2 * off;
  g->db = g->bbuf + off;
  t_h2d(g->da, g->a, na * 2);
  t_h2d(g->db, g->b, nb);
  if (g->ch) g->dc = fg_upload(g->ch, dn * cd_es);
  if (g->biash) g->dbias = fg_upload(g->biash, (size_t)n * cd_es);
  if (!c->null_scale) g->dsb = fg_upload(g->sb, (size_t)g->nsb * 4);
  g->d_bytes = dn * cd_es + kGuard;
  g->dd = t_dalloc(g->d_bytes);
  t_memset(g->dd, T_POISON_BYTE, g->d_bytes);
}

static gko_status_t wg_execute(const wgemm *g, cudaStream_t st) {
  const wcase *c = &g->c;
  return gko_gemm_execute_scaled(g->plan, c->alpha, g->da, NULL, g->db, g->dsb, c->beta, g->dc,
                                 g->dd, NULL, NULL, g->dbias, g->ws, g->ws_bytes, st);
}

static int64_t wg_check(const wgemm *g, uint64_t seed) {
  const wcase *c = &g->c;
  const int act = c->epilogue >> 1;
  const double uo = t_unit(c->cd), tiny = c->cd == GKO_DTYPE_F16 ? ldexp(1, -25) : 0;
  T_CUDA(cudaDeviceSynchronize());
  unsigned char *hd = malloc(g->d_bytes);
  cr_assert(hd);
  t_d2h(hd, g->dd, g->d_bytes);
  int64_t bad = 0;
  double worst = 0;
  for (int64_t bt = 0; bt < c->batch; bt++)
    for (int64_t i = 0; i < c->m; i++)
      for (int64_t j = 0; j < c->n; j++) {
        const int64_t e = (bt * c->m + i) * c->n + j;
        const double want = t_ref_act(act, g->x[e]);
        const double got = t_hv_get(c->cd, hd, bt * c->m * c->n + wg_didx(c, i, j));
        const double b = g->e[e] + uo * (fabs(want) + g->t[e] + g->e[e]) + tiny;
        const int ok = isnan(want) ? isnan(got) : fabs(got - want) <= b;
        if (!isnan(want) && b > 0) worst = fmax(worst, fabs(got - want) / b);
        if (!ok && bad++ < 5)
          cr_log_error("seed %llu [%s] b=%lld i=%lld j=%lld: got %.9g, want %.9g +- %.3g",
                       (unsigned long long)seed, g->what, (long long)bt, (long long)i,
                       (long long)j, got, want, b);
      }
  const size_t dlen = (size_t)(c->batch * c->m * c->n) * gko_dtype_size(c->cd);
  bad += poison_outside(hd, g->d_bytes, 0, dlen, g->what);
  cr_log_info("[%s]: largest error %.3g of its bound", g->what, worst);
  free(hd);
  return bad;
}

static void wg_free(wgemm *g) {
  gko_gemm_plan_destroy(g->plan);
  void *dev[] = {g->ws, g->abuf, g->bbuf, g->dc, g->dd, g->dbias, g->dsb};
  for (size_t i = 0; i < sizeof dev / sizeof dev[0]; i++) cudaFree(dev[i]);
  void *host[] = {g->a, g->b, g->sb, g->ch, g->biash, g->x, g->e, g->t};
  for (size_t i = 0; i < sizeof host / sizeof host[0]; i++) free(host[i]);
}

static int64_t run_w8(gko_handle_t h, const wcase *c, uint64_t seed) {
  wgemm g;
  wg_prepare(h, &g, c);
  const gko_status_t s = wg_execute(&g, NULL);
  cr_assert_eq(s, GKO_STATUS_SUCCESS, "execute: %s: %s [%s]", gko_status_name(s),
               gko_last_error_detail(), g.what);
  const int64_t bad = wg_check(&g, seed);
  wg_free(&g);
  return bad;
}

/* Skips without a GPU or below sm_80 (mma.sync with bf16). */
static gko_handle_t w8_begin(uint64_t *seed) {
  T_REQUIRE_GPU();
  const int cc = t_cc();
  if (cc < 80)
    cr_skip_test("weight-only FP8 needs sm_80 or newer; this GPU is %d.%d", cc / 10, cc % 10);
  return t_gpu_setup(seed);
}

static const gko_dtype_t kW16[2] = {GKO_DTYPE_F16, GKO_DTYPE_BF16};

/* Both activation types and weight formats, D in the activation type and
 * f32, both layouts; shapes with a k tail, odd row counts, m > 8 (two MMA
 * columns), k < 64 (one warp per tile) and few weight rows against a long k
 * (split-K); the epilogues, per-tensor and per-column factors, alpha, beta. */
Test(fp8, w8_types_layouts_shapes_and_epilogues, .timeout = 600) {
  uint64_t seed;
  gko_handle_t h = w8_begin(&seed);
  static const int64_t shapes[][3] = {{1, 4096, 256}, {16, 80, 4096}, {7, 333, 1000},
                                      {9, 48, 24},    {16, 17, 64},   {3, 1, 77},
                                      {2, 1500, 1000}, {4, 1100, 77}};
  int64_t bad = 0;
  int idx = 0;
  for (int a = 0; a < 2; a++)
    for (int b = 0; b < 2; b++)
      for (int o = 0; o < 2; o++)
        for (int col = 0; col < 2; col++)
          for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++, idx++) {
            wcase c = wc(kW16[a], kF8[b], o ? GKO_DTYPE_F32 : kW16[a], shapes[s][0],
                         shapes[s][1], shapes[s][2]);
            c.col_major = col;
            c.rowwise = idx % 3 == 1;
            c.epilogue = idx % 8;
            c.alpha = idx % 5 == 2 ? 0.5f : 1.0f;
            c.beta = idx % 4 == 3 ? 0.75f : 0.0f;
            bad += run_w8(h, &c, seed);
          }
  fp8_gemm_end(h, bad, seed);
}

/* Padded leading dimensions, pointers off their 16-byte alignment, strided
 * batches, B promised static (programmatic dependent launch), no factor
 * (NULL: 1), beta = 0 with a NaN-filled C, the autotuner, k = 0, an empty
 * D, and a NaN weight (its column of D is NaN, every other finite). */
Test(fp8, w8_strides_alignment_batches_and_special_values, .timeout = 600) {
  uint64_t seed;
  gko_handle_t h = w8_begin(&seed);
  int64_t bad = 0;
  for (int a = 0; a < 2; a++)
    for (int b = 0; b < 2; b++) {
      wcase c = wc(kW16[a], kF8[b], kW16[a], 5, 200, 300);
      c.lda = 301, c.ldb = 333;
      bad += run_w8(h, &c, seed);
      c = wc(kW16[a], kF8[b], GKO_DTYPE_F32, 16, 130, 512);
      c.offset = 1, c.epilogue = GKO_EPILOGUE_BIAS_GELU_ERF;
      bad += run_w8(h, &c, seed);
      c = wc(kW16[a], kF8[b], kW16[a], 4, 96, 640);
      c.batch = 3, c.rowwise = 1, c.beta = 1.0f;
      bad += run_w8(h, &c, seed);
      c = wc(kW16[a], kF8[b], kW16[a], 1, 4096, 4096);
      c.static_b = 1, c.epilogue = GKO_EPILOGUE_BIAS;
      bad += run_w8(h, &c, seed);
      c = wc(kW16[a], kF8[b], kW16[a], 2, 64, 128);
      c.null_scale = 1, c.nan_c = 1;
      bad += run_w8(h, &c, seed);
      c = wc(kW16[a], kF8[b], kW16[a], 8, 256, 2048);
      c.autotune = 1, c.rowwise = 1;
      bad += run_w8(h, &c, seed);
      c = wc(kW16[a], kF8[b], kW16[a], 3, 40, 0);
      c.beta = 0.5f, c.epilogue = GKO_EPILOGUE_BIAS_RELU;
      bad += run_w8(h, &c, seed);
      c = wc(kW16[a], kF8[b], kW16[a], 0, 40, 64);
      bad += run_w8(h, &c, seed);
      c = wc(kW16[a], kF8[b], kW16[a], 6, 50, 200);
      c.nan_row = 17;
      bad += run_w8(h, &c, seed);
      /* 16-byte-aligned rows with a k tail (the cp.async ring's partial
       * copies): k = 1000 and 1003 with leading dimensions of 1008, 1024 */
      c = wc(kW16[a], kF8[b], kW16[a], 5, 200, 1000);
      c.lda = c.ldb = 1008, c.epilogue = GKO_EPILOGUE_BIAS;
      bad += run_w8(h, &c, seed);
      c = wc(kW16[a], kF8[b], GKO_DTYPE_F32, 12, 96, 1003);
      c.lda = c.ldb = 1024, c.rowwise = 1;
      bad += run_w8(h, &c, seed);
      /* split k with batches, one B for every batch, and the split refused
       * by MAX_WORKSPACE = 0 */
      c = wc(kW16[a], kF8[b], kW16[a], 2, 48, 4096);
      c.batch = 3, c.shared_b = 1, c.beta = 0.5f;
      bad += run_w8(h, &c, seed);
      c.one_split = 1;
      bad += run_w8(h, &c, seed);
      /* unaligned, padded, batched, NaN weight, per column, wide W */
      c = wc(kW16[a], kF8[b], GKO_DTYPE_F32, 3, 700, 333);
      c.offset = 1, c.lda = 345, c.ldb = 350, c.batch = 2, c.rowwise = 1, c.nan_row = 601;
      c.beta = 0.5f, c.epilogue = GKO_EPILOGUE_BIAS_GELU_TANH;
      bad += run_w8(h, &c, seed);
    }
  fp8_gemm_end(h, bad, seed);
}

/* The sm_90 bulk-copy kernel (m <= 4, k >= 2048 and a multiple of 16, a
 * 16-row tile of B for every SM): a last stage of 16 k, weight rows that end
 * inside a tile, m = 1 to 4, padded rows, batches with per-column factors and
 * one B for all, the epilogues, a NaN weight, B static; blocks that take
 * several tiles in turn (the ring wrapping across tiles and batches); and
 * pointers or a leading dimension off their alignment, which the same plan
 * runs on the other kernels. */
Test(fp8, w8_bulk_copy_kernel, .timeout = 600) {
  uint64_t seed;
  gko_handle_t h = w8_begin(&seed);
  int64_t bad = 0;
  int idx = 0;
  for (int a = 0; a < 2; a++)
    for (int b = 0; b < 2; b++, idx++) {
      wcase c = wc(kW16[a], kF8[b], kW16[a], 1, 2200, 2064);
      c.bulk = 1, c.epilogue = GKO_EPILOGUE_BIAS, c.col_major = idx % 2;
      bad += run_w8(h, &c, seed);
      c = wc(kW16[a], kF8[b], GKO_DTYPE_F32, 4, 2113, 4112);
      c.bulk = 1, c.rowwise = 1, c.beta = 0.5f, c.nan_row = 2112;
      bad += run_w8(h, &c, seed);
      c = wc(kW16[a], kF8[b], kW16[a], 3, 4096, 4112);
      c.bulk = 1, c.lda = 4128, c.ldb = 4160, c.epilogue = GKO_EPILOGUE_BIAS_GELU_ERF;
      bad += run_w8(h, &c, seed);
      c = wc(kW16[a], kF8[b], kW16[a], 3, 100, 2048);
      c.bulk = 1, c.batch = 24, c.rowwise = 1, c.beta = 1.0f, c.shared_b = idx % 2;
      c.epilogue = GKO_EPILOGUE_RELU;
      bad += run_w8(h, &c, seed);
      c = wc(kW16[a], kF8[b], kW16[a], 2, 2500, 2048);
      c.bulk = 1, c.static_b = 1, c.alpha = 0.5f, c.epilogue = GKO_EPILOGUE_GELU_TANH;
      bad += run_w8(h, &c, seed);
      /* several tiles per block: 1000 tiles of two stages, 563 of one, 448
       * across 64 batches */
      c = wc(kW16[a], kF8[b], kW16[a], 1, 16000, 4096);
      c.bulk = 1, c.epilogue = GKO_EPILOGUE_BIAS_RELU;
      bad += run_w8(h, &c, seed);
      c = wc(kW16[a], kF8[b], GKO_DTYPE_F32, 4, 9000, 2048);
      c.bulk = 1, c.rowwise = 1;
      bad += run_w8(h, &c, seed);
      c = wc(kW16[a], kF8[b], kW16[a], 2, 100, 2064);
      c.bulk = 1, c.batch = 64, c.shared_b = idx % 2, c.beta = 0.5f;
      bad += run_w8(h, &c, seed);
      /* off alignment at execute: a base pointer, then A's leading dimension */
      c = wc(kW16[a], kF8[b], kW16[a], 1, 2200, 2064);
      c.offset = 1;
      bad += run_w8(h, &c, seed);
      c = wc(kW16[a], kF8[b], kW16[a], 2, 2200, 2064);
      c.lda = 2068;
      bad += run_w8(h, &c, seed);
    }
  fp8_gemm_end(h, bad, seed);
}

/* Every refusal names its rule and leaves the plan pointer or D untouched. */
Test(fp8, w8_refusals_leave_outputs_untouched) {
  uint64_t seed;
  gko_handle_t h = w8_begin(&seed);
  wcase base = wc(GKO_DTYPE_F16, E4M3, GKO_DTYPE_F16, 4, 64, 128);
  wcase c = base;
  c.m = 17;
  expect_plan(h, wg_desc(&c), GKO_STATUS_NOT_SUPPORTED, "m = 17");
  expect_plan(h, with(wg_desc(&base), GKO_GEMM_ATTR_TRANSB, GKO_OP_N), GKO_STATUS_NOT_SUPPORTED,
              "k contiguous");
  expect_plan(h, with(wg_desc(&base), GKO_GEMM_ATTR_BACKEND, GKO_GEMM_BACKEND_CUBLASLT),
              GKO_STATUS_NOT_SUPPORTED, "cuBLASLt has no kernel");
  expect_plan(h, with(wg_desc(&base), GKO_GEMM_ATTR_BACKEND, GKO_GEMM_BACKEND_SM90),
              GKO_STATUS_NOT_SUPPORTED, "GKO_GEMM_BACKEND_SM90:");
  expect_plan(h, with(wg_desc(&base), GKO_GEMM_ATTR_COMPUTE, GKO_GEMM_COMPUTE_F16_ACCUMULATE),
              GKO_STATUS_NOT_SUPPORTED, "accumulates in f32");
  c = base;
  c.rowwise = 1;
  wgemm g;
  wg_prepare(h, &g, &c);
  float *one = t_dalloc(64);
  const float *sb = g.dsb;
  EXPECT_FAILS(GKO_STATUS_INVALID_VALUE, "scale_a",
               gko_gemm_execute_scaled(g.plan, 1.0f, g.da, one, g.db, sb, 0.0f, NULL, g.dd, NULL,
                                       NULL, NULL, g.ws, g.ws_bytes, NULL));
  EXPECT_FAILS(GKO_STATUS_INVALID_VALUE, "scale_d",
               gko_gemm_execute_scaled(g.plan, 1.0f, g.da, NULL, g.db, sb, 0.0f, NULL, g.dd, one,
                                       NULL, NULL, g.ws, g.ws_bytes, NULL));
  EXPECT_FAILS(GKO_STATUS_INVALID_VALUE, "amax_d",
               gko_gemm_execute_scaled(g.plan, 1.0f, g.da, NULL, g.db, sb, 0.0f, NULL, g.dd, NULL,
                                       one, NULL, g.ws, g.ws_bytes, NULL));
  EXPECT_FAILS(GKO_STATUS_INVALID_VALUE, "scale_b is NULL",
               gko_gemm_execute_scaled(g.plan, 1.0f, g.da, NULL, g.db, NULL, 0.0f, NULL, g.dd,
                                       NULL, NULL, NULL, g.ws, g.ws_bytes, NULL));
  EXPECT_FAILS(GKO_STATUS_INVALID_VALUE, "aligned",
               gko_gemm_execute_scaled(g.plan, 1.0f, g.da, NULL, g.db,
                                       (const float *)((const char *)sb + 1), 0.0f, NULL, g.dd,
                                       NULL, NULL, NULL, g.ws, g.ws_bytes, NULL));
  t_assert_poisoned(g.dd, g.d_bytes);
  cudaFree(one);
  wg_free(&g);
  fp8_gemm_end(h, 0, seed);
}

/* A weight-only GEMM captured into a graph and replayed twice, scale_b
 * changed in device memory between the replays: the result follows. */
Test(fp8, w8_graph_replay_reads_scale_b_at_run_time) {
  uint64_t seed;
  gko_handle_t h = w8_begin(&seed);
  cudaStream_t st;
  T_CUDA(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  wcase c = wc(GKO_DTYPE_BF16, E4M3, GKO_DTYPE_BF16, 2, 48, 4096); /* split k */
  wgemm g;
  wg_prepare(h, &g, &c);
  cudaGraph_t graph;
  cudaGraphExec_t ge;
  T_CUDA(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
  const gko_status_t s = wg_execute(&g, st);
  char detail[512];
  snprintf(detail, sizeof detail, "%s", gko_last_error_detail());
  const cudaError_t ce = cudaStreamEndCapture(st, &graph);
  cr_assert_eq(s, GKO_STATUS_SUCCESS, "under capture: %s: %s", gko_status_name(s), detail);
  cr_assert_eq(ce, cudaSuccess, "capture: %s", cudaGetErrorString(ce));
  T_CUDA(cudaGraphInstantiate(&ge, graph, 0));
  int64_t bad = 0;
  for (int r = 0; r < 2; r++) {
    if (r == 1) {
      g.sb[0] = -3.0f;
      t_h2d(g.dsb, g.sb, 4);
      wg_reference(&g);
    }
    t_memset(g.dd, T_POISON_BYTE, g.d_bytes);
    T_CUDA(cudaGraphLaunch(ge, st));
    T_CUDA(cudaStreamSynchronize(st));
    bad += wg_check(&g, seed);
  }
  cudaGraphExecDestroy(ge);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(st);
  wg_free(&g);
  fp8_gemm_end(h, bad, seed);
}

/* B promised static: the kernel starts before the one ahead of it ends, so
 * it must not read X before that one is done.  Two calls on one stream,
 * the first's D (poisoned before) the second's A: the second's result is
 * checked against float64 of the first's as the device holds it. */
Test(fp8, w8_static_chain_reads_a_after_the_kernel_ahead) {
  uint64_t seed;
  gko_handle_t h = w8_begin(&seed);
  cudaStream_t st;
  T_CUDA(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  for (int a = 0; a < 2; a++) {
    wcase c = wc(kW16[a], E4M3, kW16[a], 3, 4096, 4096); /* n == k: D feeds A */
    c.static_b = 1, c.null_scale = 1, c.bulk = 1;
    wgemm g;
    wg_prepare(h, &g, &c);
    const size_t dbytes = (size_t)(c.m * c.n) * 2;
    void *d2 = t_dalloc(dbytes);
    t_memset(d2, T_POISON_BYTE, dbytes);
    for (int r = 0; r < 3; r++) { /* a few times: the race, if any, shows */
      t_memset(g.dd, T_POISON_BYTE, g.d_bytes);
      T_OK(wg_execute(&g, st));
      T_OK(gko_gemm_execute_scaled(g.plan, 1.0f, g.dd, NULL, g.db, NULL, 0.0f, NULL, d2, NULL,
                                   NULL, NULL, g.ws, g.ws_bytes, st));
      T_CUDA(cudaStreamSynchronize(st));
    }
    int64_t bad = wg_check(&g, seed);
    /* the second call's reference: A = the first call's D as stored */
    uint16_t *d1 = malloc(dbytes), *h2 = malloc(dbytes);
    cr_assert(d1 && h2);
    t_d2h(d1, g.dd, dbytes);
    t_d2h(h2, d2, dbytes);
    memcpy(g.a, d1, dbytes);
    wg_reference(&g);
    const double *tb = f8_table(c.bdt);
    for (int64_t i = 0; i < c.m; i++)
      for (int64_t j = 0; j < c.n; j++) {
        const double want = g.x[i * c.n + j];
        const double got = t_hv_get(c.cd, h2, i * c.n + j);
        double sabs = 0;
        for (int64_t p = 0; p < c.k; p++)
          sabs += fabs(t_hv_get(c.adt, d1, i * c.k + p) * tb[g.b[j * c.k + p]]);
        const double b = sabs * ((double)c.k * ldexp(1, -23) + ldexp(1, -16)) +
                         t_unit(c.cd) * (fabs(want) + sabs);
        if (!(fabs(got - want) <= b) && bad++ < 5)
          cr_log_error("seed %llu [%s] second call i=%lld j=%lld: got %.9g, want %.9g +- %.3g",
                       (unsigned long long)seed, g.what, (long long)i, (long long)j, got, want,
                       b);
      }
    cr_expect_eq(bad, 0, "seed %llu: %lld problems [%s]", (unsigned long long)seed,
                 (long long)bad, g.what);
    free(d1);
    free(h2);
    cudaFree(d2);
    wg_free(&g);
  }
  cudaStreamDestroy(st);
  fp8_gemm_end(h, 0, seed);
}
