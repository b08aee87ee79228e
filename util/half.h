/* half.h -- IEEE binary16 and bfloat16 conversions on the host, round to
 * nearest even (NaN stays a quiet NaN, Inf stays Inf, overflow rounds to
 * Inf), for the examples and the model code in util/. */
#ifndef GKO_UTIL_HALF_H
#define GKO_UTIL_HALF_H

#include <math.h>
#include <stdint.h>
#include <string.h>

static inline uint16_t float_to_half(float f) {
  uint32_t x;
  memcpy(&x, &f, sizeof x);
  const uint32_t sign = (x >> 16) & 0x8000u, ax = x & 0x7fffffffu;
  if (ax >= 0x7f800000u) /* Inf stays Inf, NaN stays a (quiet) NaN */
    return (uint16_t)(sign | 0x7c00u | (ax > 0x7f800000u ? 0x0200u | ((ax >> 13) & 0x3ffu) : 0u));
  if (ax >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* >= 65520 rounds to Inf */
  if (ax < 0x38800000u) {                                    /* below 2^-14: subnormal */
    if (ax <= 0x33000000u) return (uint16_t)sign;            /* <= 2^-25 rounds to 0 */
    const uint32_t shift = 126u - (ax >> 23), mant = (ax & 0x7fffffu) | 0x800000u;
    const uint32_t rem = mant & ((1u << shift) - 1u), halfway = 1u << (shift - 1u);
    uint32_t q = mant >> shift;
    if (rem > halfway || (rem == halfway && (q & 1u))) q++;
    return (uint16_t)(sign | q);
  }
  const uint32_t r = ax - 0x38000000u; /* exponent rebiased from 127 to 15 */
  const uint32_t rem = r & 0x1fffu;
  uint32_t q = r >> 13;
  if (rem > 0x1000u || (rem == 0x1000u && (q & 1u))) q++; /* a carry bumps the exponent */
  return (uint16_t)(sign | q);
}

static inline float half_to_float(uint16_t h) {
  const uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 0) { /* zero or subnormal: m * 2^-24, exact in f32 */
    const float v = ldexpf((float)m, -24);
    return sign ? -v : v;
  }
  const uint32_t x = sign | (e == 31 ? 0x7f800000u | (m << 13) : ((e + 112u) << 23) | (m << 13));
  float f;
  memcpy(&f, &x, sizeof f);
  return f;
}

static inline uint16_t float_to_bf16(float f) {
  uint32_t x;
  memcpy(&x, &f, sizeof x);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u); /* quiet NaN */
  x += 0x7fffu + ((x >> 16) & 1u); /* to nearest even; a carry bumps the exponent (to Inf) */
  return (uint16_t)(x >> 16);
}

static inline float bf16_to_float(uint16_t b) {
  const uint32_t x = (uint32_t)b << 16;
  float f;
  memcpy(&f, &x, sizeof f);
  return f;
}

#endif
