/* gemm_state.c -- the GEMM state of a handle (gemm_state.h): the device's
 * cuBLASLt handle, shared by the whole process, and the handle's algorithm
 * cache, an open-addressing hash table behind a mutex. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include "gemm_state.h"
#include "../kernels/status.h"

enum { GK_MAX_DEVICES = 256 };
/* The cache holds at most this many answers and starts over when full, so
 * a process that sees ever new shapes keeps bounded memory (a few MiB). */
enum { GK_CACHE_MAX_ENTRIES = 4096 };
static pthread_mutex_t g_lt_mu = PTHREAD_MUTEX_INITIALIZER;
static cublasLtHandle_t g_lt[GK_MAX_DEVICES];

typedef struct gk_cache_entry {
  uint64_t hash;
  unsigned char *blob; /* key then value; NULL: empty slot */
  size_t key_bytes, value_bytes;
} gk_cache_entry;

struct gk_gemm_state {
  pthread_mutex_t mu;
  cublasLtHandle_t lt;
  int pools;
  gk_cache_entry *slots;
  size_t cap, count;
};

gko_status_t gk_gemm_state_create(int device, struct gk_gemm_state **out) {
  struct gk_gemm_state *st = calloc(1, sizeof *st);
  if (!st) return gk_fail(GKO_STATUS_ALLOC_FAILED, "host allocation of the GEMM state failed");
  if (device < 0 || device >= GK_MAX_DEVICES) {
    free(st);
    return gk_fail(GKO_STATUS_NOT_SUPPORTED, "device ordinal %d is beyond gko's limit of %d",
                   device, GK_MAX_DEVICES);
  }
  /* one cuBLASLt handle per device for the whole process, created once and
   * never destroyed (destroying one synchronizes the device) */
  pthread_mutex_lock(&g_lt_mu);
  if (!g_lt[device]) {
    cublasLtHandle_t lt = NULL;
    cublasStatus_t cs = cublasLtCreate(&lt);
    if (cs != CUBLAS_STATUS_SUCCESS) {
      pthread_mutex_unlock(&g_lt_mu);
      free(st);
      return gk_fail(cs == CUBLAS_STATUS_ALLOC_FAILED ? GKO_STATUS_ALLOC_FAILED
                                                      : GKO_STATUS_CUDA_ERROR,
                     "cublasLtCreate failed: %s: %s", cublasLtGetStatusName(cs),
                     cublasLtGetStatusString(cs));
    }
    g_lt[device] = lt;
  }
  st->lt = g_lt[device];
  pthread_mutex_unlock(&g_lt_mu);
  int pools = 0;
  if (cudaDeviceGetAttribute(&pools, cudaDevAttrMemoryPoolsSupported, device) != cudaSuccess)
    pools = 0;
  st->pools = pools;
  if (pthread_mutex_init(&st->mu, NULL) != 0) {
    free(st);
    return gk_fail(GKO_STATUS_INTERNAL, "pthread_mutex_init failed");
  }
  *out = st;
  return GKO_STATUS_SUCCESS;
}

void gk_gemm_state_destroy(struct gk_gemm_state *st) {
  if (!st) return;
  for (size_t i = 0; i < st->cap; i++) free(st->slots[i].blob);
  free(st->slots);
  pthread_mutex_destroy(&st->mu);
  free(st);
}

void *gk_gemm_state_lt(const struct gk_gemm_state *st) { return st ? (void *)st->lt : NULL; }

int gk_gemm_state_pools(const struct gk_gemm_state *st) { return st ? st->pools : 0; }

static uint64_t gk_hash(const void *p, size_t n) {
  const unsigned char *b = p;
  uint64_t x = 1469598103934665603ull; /* FNV-1a */
  for (size_t i = 0; i < n; i++) x = (x ^ b[i]) * 1099511628211ull;
  return x;
}

/* Slot of key (an empty one if absent); cap is a power of two. */
static size_t gk_find_slot(gk_cache_entry *slots, size_t cap, uint64_t hash, const void *key,
                           size_t key_bytes) {
  size_t i = (size_t)hash & (cap - 1);
  while (slots[i].blob) {
    if (slots[i].hash == hash && slots[i].key_bytes == key_bytes &&
        memcmp(slots[i].blob, key, key_bytes) == 0)
      return i;
    i = (i + 1) & (cap - 1);
  }
  return i;
}

int gk_gemm_cache_lookup(struct gk_gemm_state *st, const void *key, size_t key_bytes,
                         void *value, size_t value_bytes) {
  if (!st) return 0;
  uint64_t hash = gk_hash(key, key_bytes);
  int hit = 0;
  pthread_mutex_lock(&st->mu);
  if (st->cap) {
    size_t i = gk_find_slot(st->slots, st->cap, hash, key, key_bytes);
    if (st->slots[i].blob && st->slots[i].value_bytes == value_bytes) {
      memcpy(value, st->slots[i].blob + key_bytes, value_bytes);
      hit = 1;
    }
  }
  pthread_mutex_unlock(&st->mu);
  return hit;
}

gko_status_t gk_gemm_cache_insert(struct gk_gemm_state *st, const void *key,
                                  size_t key_bytes, const void *value, size_t value_bytes) {
  if (!st) return GKO_STATUS_SUCCESS;
  uint64_t hash = gk_hash(key, key_bytes);
  unsigned char *blob = malloc(key_bytes + value_bytes);
  if (!blob) return gk_fail(GKO_STATUS_ALLOC_FAILED, "host allocation for the GEMM cache");
  memcpy(blob, key, key_bytes);
  memcpy(blob + key_bytes, value, value_bytes);
  pthread_mutex_lock(&st->mu);
  if (st->count >= GK_CACHE_MAX_ENTRIES) {
    for (size_t i = 0; i < st->cap; i++) free(st->slots[i].blob);
    memset(st->slots, 0, st->cap * sizeof *st->slots);
    st->count = 0;
  }
  if (2 * (st->count + 1) > st->cap) { /* grow: load factor <= 1/2 */
    size_t ncap = st->cap ? 2 * st->cap : 64;
    gk_cache_entry *ns = calloc(ncap, sizeof *ns);
    if (!ns) {
      pthread_mutex_unlock(&st->mu);
      free(blob);
      return gk_fail(GKO_STATUS_ALLOC_FAILED, "host allocation for the GEMM cache");
    }
    for (size_t i = 0; i < st->cap; i++)
      if (st->slots[i].blob) {
        size_t j = gk_find_slot(ns, ncap, st->slots[i].hash, st->slots[i].blob,
                                st->slots[i].key_bytes);
        ns[j] = st->slots[i];
      }
    free(st->slots);
    st->slots = ns;
    st->cap = ncap;
  }
  size_t i = gk_find_slot(st->slots, st->cap, hash, key, key_bytes);
  if (st->slots[i].blob) {
    free(blob); /* another thread stored it first: keep theirs */
  } else {
    st->slots[i].hash = hash;
    st->slots[i].blob = blob;
    st->slots[i].key_bytes = key_bytes;
    st->slots[i].value_bytes = value_bytes;
    st->count++;
  }
  pthread_mutex_unlock(&st->mu);
  return GKO_STATUS_SUCCESS;
}
