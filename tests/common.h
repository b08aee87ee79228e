/* common.h -- helpers shared by the Criterion suites: GPU detection and
 * skipping, fresh random numbers, f16/bf16 conversion, rounding and ulp
 * distances, poisoned device buffers, typed host arrays, the epilogues'
 * reference activation, CSR matrices on the host and the device. */
#ifndef GKO_TESTS_COMMON_H
#define GKO_TESTS_COMMON_H

#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime_api.h>

#include "gko.h"

/* ---- GPU presence: GPU tests report as skipped without one -------------- */

static inline int t_gpu_count(void) {
  int drv = 0, n = 0;
  cudaDriverGetVersion(&drv);
  if (drv == 0 || cudaGetDeviceCount(&n) != cudaSuccess) return 0;
  return n;
}

#define T_REQUIRE_GPU()                                                   \
  do {                                                                    \
    if (t_gpu_count() == 0) cr_skip_test("no CUDA device on this machine"); \
  } while (0)

#define T_CUDA(call)                                                        \
  do {                                                                      \
    cudaError_t t_e_ = (call);                                              \
    cr_assert_eq(t_e_, cudaSuccess, "%s: %s", #call, cudaGetErrorString(t_e_)); \
  } while (0)

#define T_OK(call)                                                            \
  do {                                                                        \
    gko_status_t t_s_ = (call);                                               \
    cr_assert_eq(t_s_, GKO_STATUS_SUCCESS, "%s -> %s: %s", #call,             \
                 gko_status_name(t_s_), gko_last_error_detail());             \
  } while (0)

/* The call fails with `status` and leaves a non-empty detail message. */
#define T_FAILS(status, call)                                                \
  do {                                                                       \
    gko_status_t t_s_ = (call);                                              \
    cr_assert_eq(t_s_, (status), "%s -> %s (wanted %s): %s", #call,          \
                 gko_status_name(t_s_), gko_status_name(status),             \
                 gko_last_error_detail());                                   \
    cr_assert(gko_last_error_detail()[0] != '\0', "%s: empty detail", #call); \
  } while (0)

static inline gko_handle_t t_handle(void) {
  gko_handle_t h = NULL;
  T_OK(gko_create(&h));
  return h;
}

/* ---- random numbers: a fresh seed per run, printed so a failure replays -- */

static uint64_t t_rng_state;

static inline uint64_t t_seed(void) {
  const char *s = getenv("GKO_TEST_SEED");
  uint64_t seed = s ? strtoull(s, NULL, 0)
                    : ((uint64_t)time(NULL) * 0x9E3779B97F4A7C15ull) ^ (uint64_t)clock();
  t_rng_state = seed ? seed : 1;
  return seed;
}

static inline uint64_t t_next(void) { /* splitmix64 */
  uint64_t z = (t_rng_state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

static inline double t_uniform(double lo, double hi) {
  return lo + (hi - lo) * ((double)(t_next() >> 11) * (1.0 / 9007199254740992.0));
}

static inline double t_normal(void) {
  double u1 = t_uniform(1e-300, 1.0), u2 = t_uniform(0.0, 1.0);
  return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

/* The start of a GPU test that draws random numbers: skips the test
 * without a GPU, seeds the generator (the seed goes to *seed, for the
 * failure messages) and returns a new handle. */
static inline gko_handle_t t_gpu_setup(uint64_t *seed) {
  T_REQUIRE_GPU();
  const uint64_t s = t_seed();
  if (seed) *seed = s;
  return t_handle();
}

/* The compute capability of device 0 (10 * major + minor). */
static inline int t_cc(void) {
  int64_t v = 0;
  T_OK(gko_query(GKO_QUERY_COMPUTE_CAPABILITY, 0, &v));
  return (int)v;
}

/* Whether this build holds gko's sm_90a kernels (gko_diagnostics says).
 * Called from several test threads at once: each reads the report into
 * its own buffer, and the cached answer is stored atomically. */
static inline int t_sm90_built(void) {
  static int built = -1;
  int b = __atomic_load_n(&built, __ATOMIC_ACQUIRE);
  if (b < 0) {
    enum { CAP = 1 << 16 };
    char *buf = (char *)malloc(CAP);
    if (!buf) return 0;
    b = gko_diagnostics(-1, buf, CAP, NULL) == GKO_STATUS_SUCCESS &&
        strstr(buf, "SM90 GEMM:    sm_90a kernels") != NULL;
    free(buf);
    __atomic_store_n(&built, b, __ATOMIC_RELEASE);
  }
  return b;
}

/* ---- f16 / bf16 on the host ---------------------------------------------- */

static inline float t_f16_to_float(uint16_t h) {
  uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  uint32_t bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (man << 13);
  } else if (exp == 0) {
    float f = ldexpf((float)man, -24);
    return sign ? -f : f;
  } else {
    bits = sign | ((exp + 112) << 23) | (man << 13);
  }
  float f;
  memcpy(&f, &bits, 4);
  return f;
}

/* Round a double to the nearest f16 (ties to even), directly (no double
 * rounding through float). */
static inline uint16_t t_double_to_f16(double d) {
  uint16_t sign = signbit(d) ? 0x8000 : 0;
  if (isnan(d)) return 0x7e00;
  double a = fabs(d);
  if (a >= 65520.0) return sign | 0x7c00; /* rounds to inf */
  if (a < ldexp(1.0, -25)) {               /* below half the smallest subnormal */
    if (a == ldexp(1.0, -25)) return sign; /* tie to even (0) */
    return sign;
  }
  int e;
  frexp(a, &e); /* a = m * 2^e, m in [0.5, 1) */
  int exp = e - 1;      /* a = 1.m * 2^exp */
  if (exp < -14) exp = -14; /* subnormal spacing 2^-24 */
  double q = ldexp(a, 10 - exp); /* units of the last place */
  double r = nearbyint(q);        /* current rounding mode: to nearest even */
  uint32_t m = (uint32_t)r;
  if (m >= 2048) { m >>= 1; exp++; }
  if (exp > 15) return sign | 0x7c00;
  if (m < 1024) return sign | (uint16_t)m; /* subnormal */
  return sign | (uint16_t)(((exp + 15) << 10) | (m - 1024));
}

static inline float t_bf16_to_float(uint16_t b) {
  uint32_t bits = (uint32_t)b << 16;
  float f;
  memcpy(&f, &bits, 4);
  return f;
}

static inline uint16_t t_double_to_bf16(double d) {
  if (isnan(d)) return 0x7fc0;
  uint16_t sign = signbit(d) ? 0x8000 : 0;
  double a = fabs(d);
  if (a == 0) return sign;
  if (a >= ldexp(255.0 + 0.5, 120)) return sign | 0x7f80; /* >= max + half ulp */
  int e;
  frexp(a, &e);
  int exp = e - 1;
  if (exp < -126) exp = -126;
  double q = ldexp(a, 7 - exp);
  uint32_t m = (uint32_t)nearbyint(q);
  if (m >= 256) { m >>= 1; exp++; }
  if (m < 128) return sign | (uint16_t)m;
  return sign | (uint16_t)(((exp + 127) << 7) | (m - 128));
}

static inline float t_double_to_float(double d) { return (float)d; }

/* x rounded to the nearest value of dtype dt (ties to even), as a double. */
static inline double t_round(gko_dtype_t dt, double x) {
  if (dt == GKO_DTYPE_F32) return (double)(float)x;
  if (dt == GKO_DTYPE_F16) return t_f16_to_float(t_double_to_f16(x));
  return t_bf16_to_float(t_double_to_bf16(x));
}

/* The unit roundoff of dtype d: 2^-24 f32, 2^-11 f16, 2^-8 bf16. */
static inline double t_unit(gko_dtype_t d) {
  return d == GKO_DTYPE_F32 ? ldexp(1, -24) : d == GKO_DTYPE_F16 ? ldexp(1, -11) : ldexp(1, -8);
}

/* Distance in units in the last place between two finite values of a 16-bit
 * format given as raw bits (sign-magnitude ordered). */
static inline int64_t t_ulp16(uint16_t a, uint16_t b) {
  int64_t ia = (a & 0x8000) ? -(int64_t)(a & 0x7fff) : (int64_t)a;
  int64_t ib = (b & 0x8000) ? -(int64_t)(b & 0x7fff) : (int64_t)b;
  return ia > ib ? ia - ib : ib - ia;
}

static inline int64_t t_ulp32(float a, float b) {
  int32_t ia, ib;
  memcpy(&ia, &a, 4);
  memcpy(&ib, &b, 4);
  int64_t la = ia < 0 ? -(int64_t)(ia & 0x7fffffff) : ia;
  int64_t lb = ib < 0 ? -(int64_t)(ib & 0x7fffffff) : ib;
  return la > lb ? la - lb : lb - la;
}

/* ---- device buffers ---------------------------------------------------- */

static inline void *t_dalloc(size_t bytes) {
  void *p = NULL;
  T_CUDA(cudaMalloc(&p, bytes ? bytes : 1));
  return p;
}

/* A copy from pageable memory may return before its DMA lands, and the
 * tests' non-blocking streams do not wait for the legacy stream: wait here
 * (else a kernel can run before its poisoned output or its input arrives). */
static inline void t_h2d(void *d, const void *h, size_t bytes) {
  T_CUDA(cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice));
  T_CUDA(cudaStreamSynchronize(cudaStreamLegacy));
}

/* cudaMemset of device memory is asynchronous on the legacy stream, which
 * the tests' non-blocking streams do not wait for: wait here too. */
static inline void t_memset(void *d, int value, size_t bytes) {
  T_CUDA(cudaMemset(d, value, bytes));
  T_CUDA(cudaStreamSynchronize(cudaStreamLegacy));
}

static inline void t_d2h(void *h, const void *d, size_t bytes) {
  T_CUDA(cudaMemcpy(h, d, bytes, cudaMemcpyDeviceToHost));
}

/* Poison for outputs: all bytes 0xFF is a NaN in f32, f16 and bf16, so an
 * element the kernel did not write fails any comparison with a finite
 * reference value. */
#define T_POISON_BYTE 0xFF

/* After the device's work: every one of the `bytes` bytes at device
 * address d still holds the poison (a failed or empty call wrote nothing). */
static inline void t_assert_poisoned(const void *d, size_t bytes) {
  T_CUDA(cudaDeviceSynchronize());
  unsigned char *back = malloc(bytes ? bytes : 1);
  cr_assert(back);
  t_d2h(back, d, bytes);
  for (size_t i = 0; i < bytes; i++)
    cr_assert_eq(back[i], T_POISON_BYTE, "output byte %zu was written", i);
  free(back);
}

/* ---- typed host arrays ------------------------------------------------------ */

static inline double t_hv_get(gko_dtype_t dt, const void *a, int64_t i) {
  if (dt == GKO_DTYPE_F32) return ((const float *)a)[i];
  if (dt == GKO_DTYPE_F16) return t_f16_to_float(((const uint16_t *)a)[i]);
  return t_bf16_to_float(((const uint16_t *)a)[i]);
}

/* Index of the first NaN of n elements of dt, or -1 (outputs are poisoned
 * with NaN bytes first, so a NaN is an element never written). */
static inline int64_t t_first_nan(gko_dtype_t dt, const void *h, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (isnan(t_hv_get(dt, h, (int64_t)i))) return (int64_t)i;
  return -1;
}

static inline void t_hv_set(gko_dtype_t dt, void *a, int64_t i, double v) {
  if (dt == GKO_DTYPE_F32) ((float *)a)[i] = (float)v;
  else if (dt == GKO_DTYPE_F16) ((uint16_t *)a)[i] = t_double_to_f16(v);
  else ((uint16_t *)a)[i] = t_double_to_bf16(v);
}

static inline const char *t_dtype_name(gko_dtype_t d) {
  return d == GKO_DTYPE_F32 ? "f32" : d == GKO_DTYPE_F16 ? "f16" : "bf16";
}

/* The float64 activation of the epilogues: act 1 ReLU, 2 GELU-erf, 3 GELU-tanh
 * (sigmoid form, overflow-free); Inf inputs map to their limits. */
static inline double t_ref_act(int act, double x) {
  if (isnan(x)) return x;
  switch (act) {
    case 1: return x > 0 ? x : 0.0;
    case 2: return isinf(x) ? (x > 0 ? x : 0.0) : x * 0.5 * erfc(-x / sqrt(2.0));
    case 3: {
      if (isinf(x)) return x > 0 ? x : 0.0;
      const double a = 1.5957691216057308, b = a * 0.044715;
      double xc = fabs(x) > 1e4 ? copysign(1e4, x) : x;
      double u2 = xc * (a + b * xc * xc), q = exp(-fabs(u2));
      return x * (u2 >= 0 ? 1.0 / (1.0 + q) : q / (1.0 + q));
    }
  }
  return x;
}

/* ---- CSR matrices ------------------------------------------------------------ */

/* On the host: row pointers and column indices as int64, values (already
 * rounded to the dtype in use) as double; v may be NULL (a structure only). */
typedef struct {
  int64_t m, k, nnz;
  int64_t *rp, *ci;
  double *v;
} t_hcsr;

static inline void t_hcsr_free(t_hcsr *a) {
  free(a->rp);
  free(a->ci);
  free(a->v);
}

/* On the device: the arrays and the descriptor over them. */
typedef struct {
  void *rp, *ci, *va;
  gko_csr_t csr;
} t_dcsr;

static inline void t_dcsr_free(t_dcsr *d) {
  gko_csr_destroy(d->csr);
  cudaFree(d->rp);
  cudaFree(d->ci);
  cudaFree(d->va);
}

/* A host array of `len` indices of type it (int32 or int64, 8 bytes to
 * spare): src[0..n) first, zeros after.  The caller frees it. */
static inline void *t_index_array(gko_index_t it, const int64_t *src, int64_t n, int64_t len) {
  const size_t is = it == GKO_INDEX_INT64 ? 8 : 4;
  void *a = malloc((size_t)len * is + 8);
  cr_assert(a);
  for (int64_t i = 0; i < len; i++) {
    const int64_t v = i < n ? src[i] : 0;
    if (is == 8) ((int64_t *)a)[i] = v;
    else ((int32_t *)a)[i] = (int32_t)v;
  }
  return a;
}

#endif /* GKO_TESTS_COMMON_H */
