/* gelu.cuh -- GELU and its derivative as device functions, shared by the
 * elementwise kernels (gelu.cu) and GEMM epilogues.
 *
 * Two precisions:
 *   *_acc   for f32 storage: a few ulp (a degree-11 erfc fit with a split
 *           exponent, expf, Newton-refined reciprocals, the tanh argument in
 *           double so that the negative tail keeps its accuracy);
 *   *_fast  for f16/bf16 storage: ~2e-5 relative, which is far below half an
 *           ulp of either format, using MUFU ex2/rcp.
 *
 * Cancellation-free forms:
 *   erf:  Phi(x) = 0.5*erfc(|x|/sqrt2) for x < 0, 1 - 0.5*erfc(|x|/sqrt2)
 *         otherwise -- the small side is never computed as 1 - something.
 *   tanh: (1 + tanh(u))/2 = sigmoid(2u) = 1/(1+q) or q/(1+q) with
 *         q = exp(-|2u|) <= 1, so no exp overflows and 1 + tanh never cancels.
 * |x| is clamped to 1e4 before any power of x (1e4^3 = 1e12, no overflow; the
 * result already saturates there), with NaN passed through.
 *
 * The fast erfc: erfc(z) = t*exp(-z^2 + P(t)), t = 1/(1 + z/2), after
 * Numerical Recipes' erfcc (Press et al., 2nd ed., sec. 6.2), with our own
 * degree-6 minimax refit of P (max relative error 2.1e-5 on [0, inf)), its
 * coefficients folded into base 2 and the factor 1/2:
 *   0.5*erfc(|x|/sqrt2) = t * exp2(-(|x|*K2)^2 + Q(t)), t = 1/(1 + |x|*K1).
 */
#ifndef GK_GELU_CUH
#define GK_GELU_CUH

#include <cuda_runtime.h>
#include <float.h>

namespace gk {

constexpr float kLog2e = 1.4426950408889634f;
constexpr float kInvSqrt2Pi = 0.3989422804014327f;
/* tanh form: 2u = x * (kA + kB * x^2) */
constexpr double kA = 1.5957691216057308;           /* 2*sqrt(2/pi) */
constexpr double kB = 1.5957691216057308 * 0.044715;
constexpr float kClamp = 1.0e4f;

/* MUFU.EX2 / MUFU.RCP without the subnormal fix-ups (results below 2^-126
 * flush to zero: this only touches bf16 outputs under FLT_MIN). */
__device__ __forceinline__ float ex2_approx(float v) {
  float r;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(v));
  return r;
}

/* MUFU.EX2 keeping subnormal results (two extra multiplies): the backward
 * pass multiplies exp(-|2u|) by up to ~250 in the tail, which would turn a
 * flushed subnormal into a visibly wrong normal result. */
__device__ __forceinline__ float ex2_approx_sub(float v) {
  float r;
  asm("ex2.approx.f32 %0, %1;" : "=f"(r) : "f"(v));
  return r;
}

__device__ __forceinline__ float rcp_approx(float v) {
  float r;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(v));
  return r;
}

/* c0 t^n + c1 t^(n-1) + ... + cn by Horner's scheme: q = c0, then
 * q = fmaf(q, t, ci) for each following ci. */
__device__ __forceinline__ float horner(float, float c) { return c; }
template <typename... C>
__device__ __forceinline__ float horner(float t, float c0, float c1, C... c) {
  return horner(t, fmaf(c0, t, c1), c...);
}

/* |x| clamped to kClamp keeping the sign; NaN stays NaN. */
__device__ __forceinline__ float clamp_x(float x) {
  return fabsf(x) > kClamp ? copysignf(kClamp, x) : x;
}

/* 0.5*erfc(|x|/sqrt2), relative error ~2e-5; 0 for |x| = inf, NaN for NaN. */
__device__ __forceinline__ float half_erfc_fast(float x) {
  const float a = fabsf(x);
  const float t = rcp_approx(fmaf(a, 0.35355339059327373f, 1.0f));
  const float q = horner(t, 1.2147768786874008e-01f, -9.2423257981945529e-02f,
                         -4.4487607409201727e-01f, 2.9069473249516938e-01f,
                         5.0568503070814180e-01f, 1.4452490483624630e+00f,
                         -2.8257776163813548e+00f);
  const float w = a * 0.8493218002880191f;
  return t * ex2_approx(fmaf(-w, w, q));
}

/* 0.5*erfc(|x|/sqrt2) to a few ulp for f32: the same form with a degree-11
 * refit (max relative error 9e-9), t refined by one Newton step, and the
 * exponent split so that no rounding error scales with x^2:
 *   exp(-x^2/2 + P) = exp(-h/2) * exp(P - l/2), x^2 = h + l exactly (FMA).
 * The argument is clamped (NaN kept), so t and the exponent stay finite. */
__device__ __forceinline__ float half_erfc_acc(float x) {
  const float a = fabsf(clamp_x(x));
  const float d = fmaf(a, 0.35355339059327373f, 1.0f);
  float t = rcp_approx(d);
  t = fmaf(t, fmaf(-d, t, 1.0f), t);
  const float q = horner(t, -1.7316917007e-01f, 9.5945130470e-01f, -2.1260744972e+00f,
                         2.2874820895e+00f, -1.1275115576e+00f, 2.7970261614e-01f,
                         -2.1302965132e-01f, -7.9579170270e-02f, 8.3268376028e-02f,
                         3.7497034930e-01f, 1.0000014343e+00f, -1.9586593132e+00f);
  const float h = a * a;
  const float l = fmaf(a, a, -h);
  return t * expf(-0.5f * h) * __expf(fmaf(-0.5f, l, q));
}

/* ---- erf form ---------------------------------------------------------- */

__device__ __forceinline__ float gelu_erf_fast(float x) {
  const float e = half_erfc_fast(x);
  const float phi = x < 0.0f ? e : 1.0f - e;
  return fmaxf(x, -FLT_MAX) * phi; /* -inf -> -FLT_MAX * 0 = -0 */
}

__device__ __forceinline__ float gelu_erf_acc(float x) {
  const float e = half_erfc_acc(x);
  const float phi = x < 0.0f ? e : 1.0f - e;
  return fmaxf(x, -FLT_MAX) * phi;
}

/* d/dx x*Phi(x) = Phi(x) + x*phi(x) */
__device__ __forceinline__ float dgelu_erf_fast(float x) {
  const float e = half_erfc_fast(x);
  const float cdf = x < 0.0f ? e : 1.0f - e;
  const float xc = clamp_x(x);
  const float pdf = kInvSqrt2Pi * ex2_approx_sub(-0.5f * kLog2e * xc * xc);
  return fmaf(xc, pdf, cdf);
}

__device__ __forceinline__ float dgelu_erf_acc(float x) {
  const float xc = clamp_x(x);
  const float h = xc * xc;
  const float l = fmaf(xc, xc, -h); /* x^2 = h + l exactly */
  /* exp(-(h+l)/2) = exp(-h/2) * (1 - l/2); -h/2 is exact */
  const float pdf = kInvSqrt2Pi * expf(-0.5f * h) * fmaf(-0.5f, l, 1.0f);
  const float e = half_erfc_acc(x);
  return fmaf(xc, pdf, x < 0.0f ? e : 1.0f - e);
}

/* ---- tanh form --------------------------------------------------------- */

/* sigmoid(2u) and q/(1+q)^2 = s(1-s) for the tanh form, fast.  SUB keeps
 * subnormal q (needed by the backward pass). */
template <bool SUB = false>
__device__ __forceinline__ void tanh_parts_fast(float xc, float *s, float *sd) {
  const float u2 = xc * fmaf((float)kB, xc * xc, (float)kA);
  const float arg = -fabsf(u2) * kLog2e;
  const float q = SUB ? ex2_approx_sub(arg) : ex2_approx(arg);
  const float r = rcp_approx(1.0f + q);
  *s = u2 >= 0.0f ? r : q * r;
  *sd = q * r * r;
}

/* Same, accurate: 2u in double, split into hi + lo for the exponential. */
__device__ __forceinline__ void tanh_parts_acc(float xc, float *s, float *sd) {
  const double xd = (double)xc;
  const double u2d = xd * fma(kB, xd * xd, kA);
  const float hi = (float)u2d;
  const float lo = (float)(u2d - (double)hi);
  const float a = fabsf(hi);
  const float alo = hi < 0.0f ? -lo : lo; /* |2u| = a + alo */
  const float q = expf(-a) * (1.0f - alo);
  const float den = 1.0f + q;
  float r = rcp_approx(den);
  r = fmaf(r, fmaf(-den, r, 1.0f), r); /* Newton: ~0.5 ulp */
  *s = hi >= 0.0f ? r : q * r;
  *sd = q * r * r;
}

__device__ __forceinline__ float gelu_tanh_fast(float x) {
  float s, sd;
  tanh_parts_fast(clamp_x(x), &s, &sd);
  return fmaxf(x, -FLT_MAX) * s;
}

__device__ __forceinline__ float gelu_tanh_acc(float x) {
  float s, sd;
  tanh_parts_acc(clamp_x(x), &s, &sd);
  return fmaxf(x, -FLT_MAX) * s;
}

/* d/dx x*s(2u) = s + x * s(1-s) * d(2u)/dx, d(2u)/dx = kA + 3 kB x^2 */
__device__ __forceinline__ float dgelu_tanh_fast(float x) {
  const float xc = clamp_x(x);
  float s, sd;
  tanh_parts_fast<true>(xc, &s, &sd);
  const float du = fmaf(3.0f * (float)kB, xc * xc, (float)kA);
  return fmaf(xc * sd, du, s);
}

__device__ __forceinline__ float dgelu_tanh_acc(float x) {
  const float xc = clamp_x(x);
  float s, sd;
  tanh_parts_acc(xc, &s, &sd);
  const float du = fmaf(3.0f * (float)kB, xc * xc, (float)kA);
  return fmaf(xc * sd, du, s);
}

/* Dispatch by form (0 erf, 1 tanh), direction and precision at compile time. */
template <int APPROX, bool ACC>
__device__ __forceinline__ float gelu_fwd(float x) {
  if (APPROX == 0) return ACC ? gelu_erf_acc(x) : gelu_erf_fast(x);
  return ACC ? gelu_tanh_acc(x) : gelu_tanh_fast(x);
}

template <int APPROX, bool ACC>
__device__ __forceinline__ float gelu_grad(float x) {
  if (APPROX == 0) return ACC ? dgelu_erf_acc(x) : dgelu_erf_fast(x);
  return ACC ? dgelu_tanh_acc(x) : dgelu_tanh_fast(x);
}

} // namespace gk

#endif /* GK_GELU_CUH */
