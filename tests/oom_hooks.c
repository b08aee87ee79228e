/* oom_hooks.c -- the hooks gko's renamed calls reach in tests/test_oom.c's
 * instrumented archive (tests/oom_archive.sh, tests/oom_hooks.syms).  Each
 * hook counts the call in its class, fails it when armed (what the real
 * function returns when it runs out: NULL, ENOMEM, cudaErrorMemoryAllocation,
 * CUBLAS_STATUS_ALLOC_FAILED; outputs untouched), else calls the real
 * function and records what it made in a table of live entries.  Frees of
 * pointers the table does not hold are passed on unrecorded. */
#include "oom_hooks.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cublasLt.h>
#include <cuda_runtime_api.h>

/* the hooked functions that can fail, with their class */
#define OOM_FUNCS(X)                           \
  X(malloc, OOM_HOST)                          \
  X(calloc, OOM_HOST)                          \
  X(realloc, OOM_HOST)                         \
  X(reallocarray, OOM_HOST)                    \
  X(strdup, OOM_HOST)                          \
  X(strndup, OOM_HOST)                         \
  X(posix_memalign, OOM_HOST)                  \
  X(aligned_alloc, OOM_HOST)                   \
  X(cudaMalloc, OOM_DEVICE)                    \
  X(cudaMallocAsync, OOM_DEVICE)               \
  X(cudaMallocHost, OOM_DEVICE)                \
  X(cudaHostAlloc, OOM_DEVICE)                 \
  X(cudaMallocManaged, OOM_DEVICE)             \
  X(cudaStreamCreate, OOM_DEVICE)              \
  X(cudaStreamCreateWithFlags, OOM_DEVICE)     \
  X(cudaStreamCreateWithPriority, OOM_DEVICE)  \
  X(cudaEventCreate, OOM_DEVICE)               \
  X(cudaEventCreateWithFlags, OOM_DEVICE)      \
  X(cudaGraphInstantiate, OOM_DEVICE)          \
  X(cudaGraphInstantiateWithFlags, OOM_DEVICE) \
  X(cublasLtCreate, OOM_DEVICE)                \
  X(cublasLtMatmulDescCreate, OOM_DEVICE)      \
  X(cublasLtMatrixLayoutCreate, OOM_DEVICE)    \
  X(cublasLtMatmulPreferenceCreate, OOM_DEVICE)

#define OOM_ENUM(name, cls) F_##name,
enum { OOM_FUNCS(OOM_ENUM) F_COUNT };
#define OOM_NAME(name, cls) #name,
static const char *const kName[F_COUNT] = {OOM_FUNCS(OOM_NAME)};
#define OOM_CLASS(name, cls) cls,
static const int kClass[F_COUNT] = {OOM_FUNCS(OOM_CLASS)};

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static long g_arm[OOM_CLASSES];
static int g_persist[OOM_CLASSES];
static long g_calls[OOM_CLASSES], g_fn_calls[F_COUNT], g_fired, g_serial;
static const char *g_first = "";

/* live entries: unordered, removed by moving the last one into the hole */
typedef struct {
  const void *p;
  size_t bytes;
  long serial;
  int fn;
} oom_entry;
enum { OOM_TABLE = 1 << 15 };
static oom_entry g_live[OOM_TABLE];
static long g_nlive, g_dropped;

void oom_arm(int cls, long n, int persistent) {
  pthread_mutex_lock(&g_mu);
  for (int c = 0; c < OOM_CLASSES; c++) g_arm[c] = 0, g_persist[c] = 0, g_calls[c] = 0;
  for (int f = 0; f < F_COUNT; f++) g_fn_calls[f] = 0;
  if (cls >= 0 && cls < OOM_CLASSES) g_arm[cls] = n, g_persist[cls] = persistent;
  g_fired = 0;
  g_first = "";
  pthread_mutex_unlock(&g_mu);
}

void oom_disarm(void) {
  pthread_mutex_lock(&g_mu);
  for (int c = 0; c < OOM_CLASSES; c++) g_arm[c] = 0;
  pthread_mutex_unlock(&g_mu);
}

long oom_calls(int cls) {
  pthread_mutex_lock(&g_mu);
  const long n = cls >= 0 && cls < OOM_CLASSES ? g_calls[cls] : 0;
  pthread_mutex_unlock(&g_mu);
  return n;
}

long oom_fired(void) {
  pthread_mutex_lock(&g_mu);
  const long n = g_fired;
  pthread_mutex_unlock(&g_mu);
  return n;
}

const char *oom_first_failure(void) { return g_first; }

long oom_serial(void) {
  pthread_mutex_lock(&g_mu);
  const long n = g_serial;
  pthread_mutex_unlock(&g_mu);
  return n;
}

void oom_call_summary(int cls, char *buf, size_t bytes) {
  size_t at = 0;
  if (bytes) buf[0] = '\0';
  pthread_mutex_lock(&g_mu);
  for (int f = 0; f < F_COUNT; f++) {
    if (kClass[f] != cls || !g_fn_calls[f] || at >= bytes) continue;
    int w = snprintf(buf + at, bytes - at, "%s%s %ld", at ? ", " : "", kName[f], g_fn_calls[f]);
    if (w > 0) at += (size_t)w;
  }
  pthread_mutex_unlock(&g_mu);
}

long oom_live(int cls) {
  long n = 0;
  pthread_mutex_lock(&g_mu);
  for (long i = 0; i < g_nlive; i++) n += kClass[g_live[i].fn] == cls;
  if (g_dropped) n += 1000000; /* the table overflowed: no count is trustworthy */
  pthread_mutex_unlock(&g_mu);
  return n;
}

void oom_dump_live(FILE *f, int cls, long after) {
  pthread_mutex_lock(&g_mu);
  long shown = 0, more = 0;
  for (long i = 0; i < g_nlive; i++) {
    if (kClass[g_live[i].fn] != cls || g_live[i].serial <= after) continue;
    if (shown++ < 20)
      fprintf(f, "    %p: %zu bytes from %s (call #%ld)\n", g_live[i].p, g_live[i].bytes,
              kName[g_live[i].fn], g_live[i].serial);
    else
      more++;
  }
  if (more) fprintf(f, "    ... and %ld more\n", more);
  if (g_dropped) fprintf(f, "    (%ld entries not recorded: table full)\n", g_dropped);
  pthread_mutex_unlock(&g_mu);
}

/* Counts a call of fn; nonzero when it is to fail.  *serial gets its number. */
static int oom_point(int fn, long *serial) {
  const int cls = kClass[fn];
  pthread_mutex_lock(&g_mu);
  *serial = ++g_serial;
  const long k = ++g_calls[cls];
  g_fn_calls[fn]++;
  const int fail = g_arm[cls] > 0 && (k == g_arm[cls] || (g_persist[cls] && k > g_arm[cls]));
  if (fail && !g_fired++) g_first = kName[fn];
  pthread_mutex_unlock(&g_mu);
  return fail;
}

static void oom_add(const void *p, size_t bytes, int fn, long serial) {
  if (!p) return;
  pthread_mutex_lock(&g_mu);
  if (g_nlive < OOM_TABLE)
    g_live[g_nlive++] = (oom_entry){p, bytes, serial, fn};
  else
    g_dropped++;
  pthread_mutex_unlock(&g_mu);
}

/* Removes the entry of address p, when the table holds it. */
static void oom_del(uintptr_t p) {
  if (!p) return;
  pthread_mutex_lock(&g_mu);
  for (long i = g_nlive - 1; i >= 0; i--)
    if ((uintptr_t)g_live[i].p == p) {
      g_live[i] = g_live[--g_nlive];
      break;
    }
  pthread_mutex_unlock(&g_mu);
}

/* ---- host memory ---------------------------------------------------------------- */

void *gk_hook_malloc(size_t n) {
  long id;
  if (oom_point(F_malloc, &id)) return NULL;
  void *p = malloc(n);
  oom_add(p, n, F_malloc, id);
  return p;
}

void *gk_hook_calloc(size_t k, size_t n) {
  long id;
  if (oom_point(F_calloc, &id)) return NULL;
  void *p = calloc(k, n);
  oom_add(p, k * n, F_calloc, id);
  return p;
}

/* Removes p's entry into *e; 0 when the table does not hold p. */
static int oom_take(const void *p, oom_entry *e) {
  int found = 0;
  pthread_mutex_lock(&g_mu);
  for (long i = g_nlive - 1; p && i >= 0 && !found; i--)
    if (g_live[i].p == p) {
      *e = g_live[i];
      g_live[i] = g_live[--g_nlive];
      found = 1;
    }
  pthread_mutex_unlock(&g_mu);
  return found;
}

static void *oom_realloc(int fn, void *p, size_t n) {
  long id;
  if (oom_point(fn, &id)) return NULL; /* p stays allocated */
  oom_entry e;
  const int had = oom_take(p, &e);
  void *q = realloc(p, n);
  if (!q && n > 0) { /* failed: p stays */
    if (had) oom_add(e.p, e.bytes, e.fn, e.serial);
    return NULL;
  }
  oom_add(q, n, fn, id);
  return q;
}

void *gk_hook_realloc(void *p, size_t n) { return oom_realloc(F_realloc, p, n); }

void *gk_hook_reallocarray(void *p, size_t k, size_t n) {
  if (n && k > SIZE_MAX / n) {
    errno = ENOMEM;
    return NULL;
  }
  return oom_realloc(F_reallocarray, p, k * n);
}

void gk_hook_free(void *p) {
  oom_del((uintptr_t)p);
  free(p);
}

char *gk_hook_strdup(const char *s) {
  long id;
  if (oom_point(F_strdup, &id)) return NULL;
  char *p = strdup(s);
  oom_add(p, p ? strlen(p) + 1 : 0, F_strdup, id);
  return p;
}

char *gk_hook_strndup(const char *s, size_t n) {
  long id;
  if (oom_point(F_strndup, &id)) return NULL;
  char *p = strndup(s, n);
  oom_add(p, p ? strlen(p) + 1 : 0, F_strndup, id);
  return p;
}

int gk_hook_posix_memalign(void **out, size_t align, size_t n) {
  long id;
  if (oom_point(F_posix_memalign, &id)) return ENOMEM;
  int e = posix_memalign(out, align, n);
  if (!e) oom_add(*out, n, F_posix_memalign, id);
  return e;
}

void *gk_hook_aligned_alloc(size_t align, size_t n) {
  long id;
  if (oom_point(F_aligned_alloc, &id)) return NULL;
  void *p = aligned_alloc(align, n);
  oom_add(p, n, F_aligned_alloc, id);
  return p;
}

/* ---- device memory and CUDA objects ---------------------------------------------- */

/* The body of a hook that creates *out by `call` (a cudaError_t) */
#define OOM_CUDA_CREATE(fn, out, bytes, call)                      \
  do {                                                             \
    long id_;                                                      \
    if (oom_point(F_##fn, &id_)) return cudaErrorMemoryAllocation; \
    cudaError_t e_ = (call);                                       \
    if (e_ == cudaSuccess) oom_add(*(out), (bytes), F_##fn, id_);  \
    return e_;                                                     \
  } while (0)

cudaError_t gk_hook_cudaMalloc(void **p, size_t n) {
  OOM_CUDA_CREATE(cudaMalloc, p, n, cudaMalloc(p, n));
}

cudaError_t gk_hook_cudaMallocAsync(void **p, size_t n, cudaStream_t s) {
  OOM_CUDA_CREATE(cudaMallocAsync, p, n, cudaMallocAsync(p, n, s));
}

cudaError_t gk_hook_cudaMallocHost(void **p, size_t n) {
  OOM_CUDA_CREATE(cudaMallocHost, p, n, cudaMallocHost(p, n));
}

cudaError_t gk_hook_cudaHostAlloc(void **p, size_t n, unsigned flags) {
  OOM_CUDA_CREATE(cudaHostAlloc, p, n, cudaHostAlloc(p, n, flags));
}

cudaError_t gk_hook_cudaMallocManaged(void **p, size_t n, unsigned flags) {
  OOM_CUDA_CREATE(cudaMallocManaged, p, n, cudaMallocManaged(p, n, flags));
}

cudaError_t gk_hook_cudaFree(void *p) {
  oom_del((uintptr_t)p);
  return cudaFree(p);
}

cudaError_t gk_hook_cudaFreeAsync(void *p, cudaStream_t s) {
  oom_del((uintptr_t)p);
  return cudaFreeAsync(p, s);
}

cudaError_t gk_hook_cudaFreeHost(void *p) {
  oom_del((uintptr_t)p);
  return cudaFreeHost(p);
}

cudaError_t gk_hook_cudaStreamCreate(cudaStream_t *s) {
  OOM_CUDA_CREATE(cudaStreamCreate, s, 0, cudaStreamCreate(s));
}

cudaError_t gk_hook_cudaStreamCreateWithFlags(cudaStream_t *s, unsigned flags) {
  OOM_CUDA_CREATE(cudaStreamCreateWithFlags, s, 0, cudaStreamCreateWithFlags(s, flags));
}

cudaError_t gk_hook_cudaStreamCreateWithPriority(cudaStream_t *s, unsigned flags, int prio) {
  OOM_CUDA_CREATE(cudaStreamCreateWithPriority, s, 0, cudaStreamCreateWithPriority(s, flags, prio));
}

cudaError_t gk_hook_cudaStreamDestroy(cudaStream_t s) {
  oom_del((uintptr_t)s);
  return cudaStreamDestroy(s);
}

cudaError_t gk_hook_cudaEventCreate(cudaEvent_t *e) {
  OOM_CUDA_CREATE(cudaEventCreate, e, 0, cudaEventCreate(e));
}

cudaError_t gk_hook_cudaEventCreateWithFlags(cudaEvent_t *e, unsigned flags) {
  OOM_CUDA_CREATE(cudaEventCreateWithFlags, e, 0, cudaEventCreateWithFlags(e, flags));
}

cudaError_t gk_hook_cudaEventDestroy(cudaEvent_t e) {
  oom_del((uintptr_t)e);
  return cudaEventDestroy(e);
}

cudaError_t gk_hook_cudaGraphInstantiate(cudaGraphExec_t *x, cudaGraph_t g,
                                         unsigned long long flags) {
  OOM_CUDA_CREATE(cudaGraphInstantiate, x, 0, cudaGraphInstantiate(x, g, flags));
}

cudaError_t gk_hook_cudaGraphInstantiateWithFlags(cudaGraphExec_t *x, cudaGraph_t g,
                                                  unsigned long long flags) {
  OOM_CUDA_CREATE(cudaGraphInstantiateWithFlags, x, 0, cudaGraphInstantiateWithFlags(x, g, flags));
}

cudaError_t gk_hook_cudaGraphExecDestroy(cudaGraphExec_t x) {
  oom_del((uintptr_t)x);
  return cudaGraphExecDestroy(x);
}

/* ---- cuBLASLt objects ------------------------------------------------------------ */

#define OOM_LT_CREATE(fn, out, call)                                  \
  do {                                                                \
    long id_;                                                         \
    if (oom_point(F_##fn, &id_)) return CUBLAS_STATUS_ALLOC_FAILED;   \
    cublasStatus_t s_ = (call);                                       \
    if (s_ == CUBLAS_STATUS_SUCCESS) oom_add(*(out), 0, F_##fn, id_); \
    return s_;                                                        \
  } while (0)

cublasStatus_t gk_hook_cublasLtCreate(cublasLtHandle_t *h) {
  OOM_LT_CREATE(cublasLtCreate, h, cublasLtCreate(h));
}

cublasStatus_t gk_hook_cublasLtDestroy(cublasLtHandle_t h) {
  oom_del((uintptr_t)h);
  return cublasLtDestroy(h);
}

cublasStatus_t gk_hook_cublasLtMatmulDescCreate(cublasLtMatmulDesc_t *d, cublasComputeType_t c,
                                                cudaDataType_t scale) {
  OOM_LT_CREATE(cublasLtMatmulDescCreate, d, cublasLtMatmulDescCreate(d, c, scale));
}

cublasStatus_t gk_hook_cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t d) {
  oom_del((uintptr_t)d);
  return cublasLtMatmulDescDestroy(d);
}

cublasStatus_t gk_hook_cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t *l, cudaDataType t,
                                                  uint64_t rows, uint64_t cols, int64_t ld) {
  OOM_LT_CREATE(cublasLtMatrixLayoutCreate, l, cublasLtMatrixLayoutCreate(l, t, rows, cols, ld));
}

cublasStatus_t gk_hook_cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t l) {
  oom_del((uintptr_t)l);
  return cublasLtMatrixLayoutDestroy(l);
}

cublasStatus_t gk_hook_cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t *p) {
  OOM_LT_CREATE(cublasLtMatmulPreferenceCreate, p, cublasLtMatmulPreferenceCreate(p));
}

cublasStatus_t gk_hook_cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t p) {
  oom_del((uintptr_t)p);
  return cublasLtMatmulPreferenceDestroy(p);
}
