/* example.h -- what the C examples share: failing with the library's own
 * words (GKO / CUDA wrap a call; on failure they print the status, the
 * detail and a FAIL line, and exit 1), host allocation that fails loudly
 * (zeroed), IEEE binary16 conversions for the f16 examples, a seeded
 * random-number generator, the float64 GELU of the references, and the
 * start-up that exits with status 2 when there is no usable GPU. */
#ifndef GKO_EXAMPLE_H
#define GKO_EXAMPLE_H

#include <cuda_runtime_api.h>
#include <gko.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../util/half.h"

/* ---- error reporting ------------------------------------------------------ */

static inline void fail_gko(const char *call, gko_status_t s) {
  const int len = (int)strcspn(call, "(");
  printf("%.*s: %s: %s\n", len, call, gko_status_name(s), gko_last_error_detail());
  printf("FAIL: %.*s returned %s\n", len, call, gko_status_name(s));
  exit(1);
}
#define GKO(call)                                        \
  do {                                                   \
    gko_status_t gko_s_ = (call);                        \
    if (gko_s_ != GKO_STATUS_SUCCESS) fail_gko(#call, gko_s_); \
  } while (0)
#define CUDA(call)                                                            \
  do {                                                                        \
    cudaError_t cuda_e_ = (call);                                             \
    if (cuda_e_ != cudaSuccess) {                                             \
      printf("FAIL: %s: %s\n", #call, cudaGetErrorString(cuda_e_));           \
      exit(1);                                                                \
    }                                                                         \
  } while (0)

static inline void *xmalloc(size_t bytes) {
  void *p = calloc(1, bytes ? bytes : 1);
  if (!p) {
    printf("FAIL: out of host memory (%zu bytes)\n", bytes);
    exit(1);
  }
  return p;
}

/* float_to_half, half_to_float (IEEE binary16), the bf16 pair: util/half.h */

/* ---- fixed-seed random numbers (splitmix64; Steele, Lea, Flood, OOPSLA'14)
 * and the float64 erf-GELU the references use ----------------------------- */

static inline double uniform(uint64_t *state, double lo, double hi) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return lo + (hi - lo) * ((double)(z >> 11) * 0x1.0p-53);
}

/* n random halves in [-a, a) */
static inline uint16_t *random_halves(uint64_t *state, size_t n, double a) {
  uint16_t *p = xmalloc(n * sizeof *p);
  for (size_t i = 0; i < n; i++) p[i] = float_to_half((float)uniform(state, -a, a));
  return p;
}

static inline double gelu64(double x) { return 0.5 * x * erfc(-x / sqrt(2.0)); }

/* ---- start-up ----------------------------------------------------------- */

/* A handle on the current device, its ordinal and compute capability (as
 * major * 10 + minor).  Without a usable GPU (no driver or device, a driver
 * too old, no kernel for this GPU) gko_create fails and its detail says why
 * in one sentence: printed as "<name>: cannot run: ...", exit status 2. */
static inline gko_handle_t example_start(const char *name, int *device, int64_t *cc) {
  gko_handle_t h = NULL;
  const gko_status_t s = gko_create(&h);
  if (s != GKO_STATUS_SUCCESS) {
    fprintf(stderr, "%s: cannot run: %s: %s\n", name, gko_status_name(s),
            gko_last_error_detail());
    exit(2);
  }
  GKO(gko_handle_device(h, device));
  GKO(gko_query(GKO_QUERY_COMPUTE_CAPABILITY, *device, cc));
  return h;
}

#endif /* GKO_EXAMPLE_H */
