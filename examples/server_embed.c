/* server_embed.c -- gko embedded in an inference-server-shaped program: a
 * queue of mixed requests served by worker threads, each with its own CUDA
 * stream and workspace, sharing one handle and the plans made at start-up.
 *
 * What gko.h promises and this program relies on:
 *   - gko_create: "A handle may be used from several threads at once
 *     provided every concurrent call has its own workspace."  So one handle
 *     for the process, and one workspace per worker.
 *   - gko_gemm_execute / gko_spmm_execute: "A plan may be executed from
 *     several threads at once, each with its own workspace."  So each plan
 *     is made once (planning is the slow, host-side part) and shared.
 *   - gko_last_error_detail() is per thread: a worker reads its own failure.
 *   - On a failed check nothing is enqueued and the outputs are untouched.
 *
 * Requests (all f32):
 *   gelu  y = GELU_erf(x) on a vector of 1 .. 131072 elements (any length);
 *   gemm  Y[64 x 128] = GELU_erf(X[64 x 256] . W + b), W and b shared weights
 *         (an embedding projection), through one shared GEMM plan;
 *   spmm  C[2708 x 16] = A . B with A the cora citation graph (CSR), through
 *         one shared SpMM plan (a neighbourhood aggregation).
 * Each result is checked on the worker against a float64 host reference.  A
 * few requests are bad on purpose (a NULL pointer, a negative length, a
 * misaligned output, a short workspace, an output overlapping the input)
 * and must come back with the status gko.h documents for them, their
 * output untouched, while every other request succeeds.
 *
 *   build/bin/server_embed [workers (8)] [requests (256)]
 *
 * Exit status: 0 PASS, 1 FAIL, 2 no usable GPU (the library says why). */
#include <cuda_runtime_api.h>
#include <gko.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "example.h"

#include "../util/mtx.h"

enum { GEMM_M = 64, GEMM_K = 256, GEMM_N = 128, SPMM_N = 16, GELU_MAX = 131072 };
enum { QUEUE_CAP = 32, MAX_WORKERS = 64 };

/* Tolerances.  gelu: gko.h promises f32 GELU within 8 ulp of the exact
 * function, at most 8 * 2^-23 = 9.5e-7 relative, on inputs in [-6, 6) (far
 * from the tail where only an absolute bound holds); checked per element at
 * 2e-6.  gemm and spmm: f32 products and sums (no TF32), sums of 256 GEMM
 * terms or up to 169 graph neighbours: expected relative Frobenius error a
 * few 1e-7 (random-sign rounding, sqrt(L) * 2^-24), worst case L * 2^-24 <=
 * 1.5e-5 of sum(|terms|); checked at 1e-5 (the GELU epilogue adds 8 ulp). */
#define TOL_GELU 2e-6
#define TOL_DENSE 1e-5

/* ---- requests ---------------------------------------------------------------- */

typedef enum { REQ_GELU = 0, REQ_GEMM = 1, REQ_SPMM = 2 } req_type;
static const char *const kTypeName[] = {"gelu", "gemm", "spmm"};

typedef enum {
  BAD_NONE = 0,
  BAD_NULL_INPUT,     /* gelu with x == NULL                 -> INVALID_VALUE */
  BAD_NEGATIVE_LEN,   /* gelu with n < 0 ("wrong size")       -> INVALID_VALUE */
  BAD_MISALIGNED_OUT, /* gemm with d one byte off its element -> INVALID_VALUE */
  BAD_SHORT_WS,       /* gemm with a workspace one byte short -> INSUFFICIENT_WORKSPACE
                       * (or, for a plan that needs none, NULL with bytes > 0 ->
                       * INVALID_VALUE) */
  BAD_OVERLAP         /* spmm with C == B                     -> INVALID_VALUE */
} bad_kind;
static const char *const kBadName[] = {"", "NULL input", "negative length",
                                       "output misaligned by 1 byte", "workspace too small",
                                       "output overlapping the input"};

typedef struct {
  int id;
  req_type type;
  bad_kind bad;
  int64_t n; /* gelu length */
  uint64_t seed;
  gko_status_t expect; /* what gko.h documents for this request */
  /* written by the worker that served it, read after the join */
  int worker;
  gko_status_t status;
  char detail[512]; /* gko_last_error_detail(), copied: it is per thread */
  double err;
  int ok;
  char why[256];
} request;

/* A bounded multi-producer / multi-consumer queue of request pointers. */
typedef struct {
  pthread_mutex_t mu;
  pthread_cond_t not_empty, not_full;
  request *items[QUEUE_CAP];
  int head, count, closed;
} queue;

static void queue_push(queue *q, request *r) {
  pthread_mutex_lock(&q->mu);
  while (q->count == QUEUE_CAP) pthread_cond_wait(&q->not_full, &q->mu);
  q->items[(q->head + q->count) % QUEUE_CAP] = r;
  q->count++;
  pthread_cond_signal(&q->not_empty);
  pthread_mutex_unlock(&q->mu);
}

/* No more requests: workers drain the queue, then pop returns NULL. */
static void queue_close(queue *q) {
  pthread_mutex_lock(&q->mu);
  q->closed = 1;
  pthread_cond_broadcast(&q->not_empty);
  pthread_mutex_unlock(&q->mu);
}

static request *queue_pop(queue *q) {
  pthread_mutex_lock(&q->mu);
  while (q->count == 0 && !q->closed) pthread_cond_wait(&q->not_empty, &q->mu);
  request *r = NULL;
  if (q->count > 0) {
    r = q->items[q->head];
    q->head = (q->head + 1) % QUEUE_CAP;
    q->count--;
    pthread_cond_signal(&q->not_full);
  }
  pthread_mutex_unlock(&q->mu);
  return r;
}

/* ---- the server: what every worker shares (read-only after start-up) ------ */

typedef struct {
  gko_handle_t handle;
  int device;
  gko_gemm_plan_t gemm;
  size_t gemm_ws;
  gko_spmm_plan_t spmm;
  size_t spmm_ws;
  /* gemm weights: device copies for gko, host copies for the reference */
  float *d_W, *d_b, W[GEMM_K * GEMM_N], b[GEMM_N];
  /* the graph (values 1.0: A is cora's adjacency pattern) */
  int64_t m, nnz;
  int32_t *row_ptr, *col_ind, *d_row_ptr, *d_col_ind;
  float *values, *d_values;
  gko_csr_t csr;
  queue q;
} server;

/* A worker owns its stream, its workspace and its staging buffers. */
typedef struct {
  server *srv;
  int id;
  pthread_t thread;
  cudaStream_t stream;
  void *ws;
  size_t ws_bytes;
  float *d_in, *d_out; /* device buffers of the largest request */
  float *h_in, *h_out; /* pinned host staging */
  size_t cap;          /* floats in each of the four */
  int served;
} worker;

/* Records a CUDA failure in the request (the worker carries on). */
static int cuda_ok(request *r, cudaError_t e, const char *what) {
  if (e == cudaSuccess) return 1;
  if (!r->why[0]) snprintf(r->why, sizeof r->why, "%s: %s", what, cudaGetErrorString(e));
  r->ok = 0;
  return 0;
}

static int all_bytes(const void *p, size_t bytes, unsigned char v) {
  const unsigned char *c = p;
  for (size_t i = 0; i < bytes; i++)
    if (c[i] != v) return 0;
  return 1;
}

static void serve(worker *w, request *r) {
  server *srv = w->srv;
  cudaStream_t st = w->stream;
  uint64_t rng = r->seed;
  r->worker = w->id;
  r->ok = 1;
  size_t in_n = 0, out_n = 0;
  switch (r->type) {
    case REQ_GELU: in_n = out_n = r->n > 0 ? (size_t)r->n : 1; break;
    case REQ_GEMM: in_n = GEMM_M * GEMM_K; out_n = GEMM_M * GEMM_N; break;
    case REQ_SPMM: in_n = (size_t)srv->m * SPMM_N; out_n = in_n; break;
  }
  /* fresh inputs for this request, then upload; poison the output (0xFF..
   * is a NaN) so that unwritten elements, or a touched output after a
   * rejected call, show */
  for (size_t i = 0; i < in_n; i++)
    w->h_in[i] = (float)uniform(&rng, r->type == REQ_GELU ? -6 : -1, r->type == REQ_GELU ? 6 : 1);
  if (!cuda_ok(r, cudaMemcpyAsync(w->d_in, w->h_in, in_n * 4, cudaMemcpyHostToDevice, st),
               "cudaMemcpyAsync") ||
      !cuda_ok(r, cudaMemsetAsync(w->d_out, 0xFF, out_n * 4, st), "cudaMemsetAsync"))
    return;

  gko_status_t s = GKO_STATUS_SUCCESS;
  switch (r->type) {
    case REQ_GELU: {
      const float *x = r->bad == BAD_NULL_INPUT ? NULL : w->d_in;
      s = gko_gelu_forward(srv->handle, GKO_GELU_ERF, GKO_DTYPE_F32, r->n, x, w->d_out, st);
      break;
    }
    case REQ_GEMM: {
      void *d = w->d_out;
      void *ws = w->ws;
      size_t ws_bytes = w->ws_bytes;
      if (r->bad == BAD_MISALIGNED_OUT) d = (char *)w->d_out + 1;
      if (r->bad == BAD_SHORT_WS) {
        if (srv->gemm_ws > 0) {
          ws_bytes = srv->gemm_ws - 1;
        } else {
          ws = NULL;
          ws_bytes = 256;
        }
      }
      s = gko_gemm_execute(srv->gemm, 1.0f, w->d_in, srv->d_W, 0.0f, NULL, d, srv->d_b, ws,
                           ws_bytes, st);
      break;
    }
    case REQ_SPMM: {
      void *c = r->bad == BAD_OVERLAP ? (void *)w->d_in : (void *)w->d_out;
      s = gko_spmm_execute(srv->spmm, 1.0f, w->d_in, 0.0f, c, w->ws, w->ws_bytes, st);
      break;
    }
  }
  r->status = s;
  if (s != GKO_STATUS_SUCCESS)
    snprintf(r->detail, sizeof r->detail, "%s", gko_last_error_detail());

  /* fetch what the request's output holds now (and, for the overlap case,
   * the input it would have overwritten) */
  if (!cuda_ok(r, cudaMemcpyAsync(w->h_out, w->d_out, out_n * 4, cudaMemcpyDeviceToHost, st),
               "cudaMemcpyAsync") ||
      (r->bad == BAD_OVERLAP &&
       !cuda_ok(r, cudaMemcpyAsync(w->h_out + out_n, w->d_in, in_n * 4, cudaMemcpyDeviceToHost,
                                   st),
                "cudaMemcpyAsync")) ||
      !cuda_ok(r, cudaStreamSynchronize(st), "cudaStreamSynchronize"))
    return;

  if (s != r->expect) {
    snprintf(r->why, sizeof r->why, "returned %s, expected %s", gko_status_name(s),
             gko_status_name(r->expect));
    r->ok = 0;
    return;
  }
  if (s != GKO_STATUS_SUCCESS) { /* rejected as documented: outputs untouched? */
    if (!all_bytes(w->h_out, out_n * 4, 0xFF)) {
      snprintf(r->why, sizeof r->why, "rejected, but the output was written");
      r->ok = 0;
    } else if (r->bad == BAD_OVERLAP && memcmp(w->h_out + out_n, w->h_in, in_n * 4) != 0) {
      snprintf(r->why, sizeof r->why, "rejected, but the input (= C) was written");
      r->ok = 0;
    }
    return;
  }

  /* succeeded: check against float64 */
  const float *x = w->h_in, *y = w->h_out;
  double num = 0, den = 0, worst = 0;
  switch (r->type) {
    case REQ_GELU:
      for (int64_t i = 0; i < r->n; i++) {
        const double ref = gelu64(x[i]);
        const double rel = fabs(y[i] - ref) / fmax(fabs(ref), 1e-30);
        if (isnan(rel) || rel > worst) worst = rel; /* a NaN (unwritten) sticks */
      }
      r->err = worst;
      if (!(worst <= TOL_GELU)) {
        snprintf(r->why, sizeof r->why, "max relative error %.2e > %.0e", worst, TOL_GELU);
        r->ok = 0;
      }
      return;
    case REQ_GEMM:
      for (int i = 0; i < GEMM_M; i++)
        for (int j = 0; j < GEMM_N; j++) {
          double z = srv->b[j];
          for (int t = 0; t < GEMM_K; t++)
            z += (double)x[i * GEMM_K + t] * (double)srv->W[t * GEMM_N + j];
          const double ref = gelu64(z), got = y[i * GEMM_N + j];
          num += (got - ref) * (got - ref);
          den += ref * ref;
        }
      break;
    case REQ_SPMM:
      for (int64_t i = 0; i < srv->m; i++)
        for (int j = 0; j < SPMM_N; j++) {
          double ref = 0;
          for (int32_t t = srv->row_ptr[i]; t < srv->row_ptr[i + 1]; t++)
            ref += (double)srv->values[t] * (double)x[(int64_t)srv->col_ind[t] * SPMM_N + j];
          const double got = y[i * SPMM_N + j];
          num += (got - ref) * (got - ref);
          den += ref * ref;
        }
      break;
  }
  r->err = sqrt(num / den);
  if (!(r->err <= TOL_DENSE)) {
    snprintf(r->why, sizeof r->why, "relative Frobenius error %.2e > %.0e", r->err, TOL_DENSE);
    r->ok = 0;
  }
}

static void *worker_main(void *arg) {
  worker *w = arg;
  /* the handle belongs to one device: make it current in this thread */
  const cudaError_t e = cudaSetDevice(w->srv->device);
  for (request *r; (r = queue_pop(&w->srv->q)) != NULL; w->served++) {
    if (e != cudaSuccess) {
      r->worker = w->id;
      cuda_ok(r, e, "cudaSetDevice");
      continue;
    }
    serve(w, r);
  }
  return NULL;
}

/* ---- start-up ---------------------------------------------------------------- */

static void load_graph(server *srv, cudaStream_t stream) {
  char path[1024], err[512];
  mtx_find("cora.mtx", path, sizeof path); /* ./data, $GKO_DATA_DIR, ... */
  mtx_csr a;
  if (mtx_read(path, MTX_SUM_DUPLICATES, &a, err, sizeof err)) {
    printf("FAIL: %s\n", err);
    exit(1);
  }
  srv->m = a.m;
  srv->nnz = a.nnz;
  srv->row_ptr = xmalloc(sizeof(int32_t) * (size_t)(a.m + 1));
  srv->col_ind = xmalloc(sizeof(int32_t) * (size_t)a.nnz);
  srv->values = xmalloc(sizeof(float) * (size_t)a.nnz);
  for (int64_t i = 0; i <= a.m; i++) srv->row_ptr[i] = (int32_t)a.row_ptr[i];
  for (int64_t t = 0; t < a.nnz; t++) {
    srv->col_ind[t] = (int32_t)a.col_ind[t];
    srv->values[t] = (float)a.values[t];
  }
  mtx_free(&a);
  CUDA(cudaMalloc((void **)&srv->d_row_ptr, sizeof(int32_t) * (size_t)(srv->m + 1)));
  CUDA(cudaMalloc((void **)&srv->d_col_ind, sizeof(int32_t) * (size_t)srv->nnz));
  CUDA(cudaMalloc((void **)&srv->d_values, sizeof(float) * (size_t)srv->nnz));
  CUDA(cudaMemcpyAsync(srv->d_row_ptr, srv->row_ptr, sizeof(int32_t) * (size_t)(srv->m + 1),
                       cudaMemcpyHostToDevice, stream));
  CUDA(cudaMemcpyAsync(srv->d_col_ind, srv->col_ind, sizeof(int32_t) * (size_t)srv->nnz,
                       cudaMemcpyHostToDevice, stream));
  CUDA(cudaMemcpyAsync(srv->d_values, srv->values, sizeof(float) * (size_t)srv->nnz,
                       cudaMemcpyHostToDevice, stream));
  GKO(gko_csr_create(&srv->csr, srv->m, srv->m, srv->nnz, srv->d_row_ptr, srv->d_col_ind,
                     srv->d_values, GKO_INDEX_INT32, GKO_DTYPE_F32));
  /* untrusted input: validate once, before any plan or execute uses it */
  gko_csr_check_t check = GKO_CSR_VALID;
  GKO(gko_csr_validate(srv->handle, srv->csr, NULL, 0, &check, NULL, NULL, NULL, stream));
  printf("graph %s: %lld x %lld, %lld entries\n", path, (long long)srv->m, (long long)srv->m,
         (long long)srv->nnz);
}

int main(int argc, char **argv) {
  const int nworkers = argc > 1 ? atoi(argv[1]) : 8;
  const int nreq = argc > 2 ? atoi(argv[2]) : 256;
  if (nworkers < 1 || nworkers > MAX_WORKERS || nreq < 1) {
    fprintf(stderr, "usage: server_embed [workers 1..%d (8)] [requests >= 1 (256)]\n",
            MAX_WORKERS);
    return 1;
  }

  static server srv; /* large (host copies of the weights): not on the stack */
  int64_t cc = 0;
  srv.handle = example_start("server_embed", &srv.device, &cc); /* exits 2 without a GPU */
  printf("server_embed: gko %s on device %d (sm_%lld), %d workers, %d requests\n",
         gko_version_string(), srv.device, (long long)cc, nworkers, nreq);
  cudaStream_t setup;
  CUDA(cudaStreamCreateWithFlags(&setup, cudaStreamNonBlocking));

  /* shared state, made once: the graph and its SpMM plan, the weights and
   * the GEMM plan */
  load_graph(&srv, setup);
  GKO(gko_spmm_plan_create(srv.handle, srv.csr, SPMM_N, GKO_LAYOUT_ROW_MAJOR, SPMM_N, SPMM_N,
                           GKO_SPMM_KERNEL_AUTO, &srv.spmm, setup));
  GKO(gko_spmm_workspace_size(srv.spmm, &srv.spmm_ws));
  uint64_t rng = 0x5E7BE7ull;
  for (int i = 0; i < GEMM_K * GEMM_N; i++) srv.W[i] = (float)uniform(&rng, -0.1, 0.1);
  for (int i = 0; i < GEMM_N; i++) srv.b[i] = (float)uniform(&rng, -0.5, 0.5);
  CUDA(cudaMalloc((void **)&srv.d_W, sizeof srv.W));
  CUDA(cudaMalloc((void **)&srv.d_b, sizeof srv.b));
  CUDA(cudaMemcpyAsync(srv.d_W, srv.W, sizeof srv.W, cudaMemcpyHostToDevice, setup));
  CUDA(cudaMemcpyAsync(srv.d_b, srv.b, sizeof srv.b, cudaMemcpyHostToDevice, setup));
  gko_gemm_desc_t desc;
  GKO(gko_gemm_desc_create(&desc, GKO_DTYPE_F32, GKO_DTYPE_F32, GEMM_M, GEMM_N, GEMM_K));
  GKO(gko_gemm_desc_set(desc, GKO_GEMM_ATTR_EPILOGUE, GKO_EPILOGUE_BIAS_GELU_ERF));
  GKO(gko_gemm_plan_create(srv.handle, desc, &srv.gemm));
  GKO(gko_gemm_desc_destroy(desc));
  GKO(gko_gemm_workspace_size(srv.gemm, &srv.gemm_ws));
  CUDA(cudaStreamSynchronize(setup)); /* weights and graph in place before any worker */
  printf("shared plans: GEMM [%d x %d] = GELU(X[%d x %d] . W + b), workspace %zu bytes; "
         "SpMM [%lld x %d], workspace %zu bytes\n",
         GEMM_M, GEMM_N, GEMM_M, GEMM_K, srv.gemm_ws, (long long)srv.m, SPMM_N, srv.spmm_ws);

  /* the requests: a fixed-seed mix, and five bad ones at fixed places */
  request *reqs = xmalloc(sizeof(request) * (size_t)nreq);
  const struct {
    int at;
    req_type type;
    bad_kind bad;
  } bad[] = {{7, REQ_GELU, BAD_NULL_INPUT},
             {50, REQ_GELU, BAD_NEGATIVE_LEN},
             {101, REQ_GEMM, BAD_MISALIGNED_OUT},
             {152, REQ_GEMM, BAD_SHORT_WS},
             {203, REQ_SPMM, BAD_OVERLAP}};
  for (int i = 0; i < nreq; i++) {
    request *r = &reqs[i];
    r->id = i;
    r->type = (req_type)(int)uniform(&rng, 0, 3);
    r->n = 1 + (int64_t)uniform(&rng, 0, GELU_MAX);
    r->seed = 0xC0FFEEull * (uint64_t)(i + 1);
    r->expect = GKO_STATUS_SUCCESS;
    r->worker = -1;
    for (size_t j = 0; j < sizeof bad / sizeof bad[0]; j++)
      if (bad[j].at == i % 256) {
        r->type = bad[j].type;
        r->bad = bad[j].bad;
      }
    if (r->bad == BAD_NEGATIVE_LEN) r->n = -5;
    if (r->bad != BAD_NONE) r->expect = GKO_STATUS_INVALID_VALUE;
    if (r->bad == BAD_SHORT_WS && srv.gemm_ws > 0) r->expect = GKO_STATUS_INSUFFICIENT_WORKSPACE;
  }

  /* the workers: own stream, own workspace (fits both plans: requests of
   * either kind run on it one after the other), own buffers */
  worker *workers = xmalloc(sizeof(worker) * (size_t)nworkers);
  size_t cap = GELU_MAX;
  if ((size_t)srv.m * SPMM_N > cap) cap = (size_t)srv.m * SPMM_N;
  if ((size_t)GEMM_M * GEMM_K > cap) cap = (size_t)GEMM_M * GEMM_K;
  for (int i = 0; i < nworkers; i++) {
    worker *w = &workers[i];
    w->srv = &srv;
    w->id = i;
    w->cap = cap;
    w->ws_bytes = srv.gemm_ws > srv.spmm_ws ? srv.gemm_ws : srv.spmm_ws;
    CUDA(cudaStreamCreateWithFlags(&w->stream, cudaStreamNonBlocking));
    if (w->ws_bytes) CUDA(cudaMalloc(&w->ws, w->ws_bytes));
    CUDA(cudaMalloc((void **)&w->d_in, cap * 4));
    CUDA(cudaMalloc((void **)&w->d_out, cap * 4));
    CUDA(cudaMallocHost((void **)&w->h_in, cap * 4));
    CUDA(cudaMallocHost((void **)&w->h_out, 2 * cap * 4)); /* output + input echo */
  }
  pthread_mutex_init(&srv.q.mu, NULL);
  pthread_cond_init(&srv.q.not_empty, NULL);
  pthread_cond_init(&srv.q.not_full, NULL);
  int started = 0;
  for (; started < nworkers; started++)
    if (pthread_create(&workers[started].thread, NULL, worker_main, &workers[started]) != 0) {
      printf("pthread_create failed after %d workers: serving with those\n", started);
      break;
    }
  if (started == 0) {
    printf("FAIL: no worker thread could be started\n");
    return 1;
  }

  /* the front end: enqueue every request, then close the queue */
  for (int i = 0; i < nreq; i++) queue_push(&srv.q, &reqs[i]);
  queue_close(&srv.q);

  /* shutdown: join, then destroy in reverse order of creation */
  for (int i = 0; i < started; i++) pthread_join(workers[i].thread, NULL);
  for (int i = 0; i < nworkers; i++) {
    worker *w = &workers[i];
    CUDA(cudaStreamDestroy(w->stream));
    CUDA(cudaFree(w->ws));
    CUDA(cudaFree(w->d_in));
    CUDA(cudaFree(w->d_out));
    CUDA(cudaFreeHost(w->h_in));
    CUDA(cudaFreeHost(w->h_out));
  }
  pthread_cond_destroy(&srv.q.not_full);
  pthread_cond_destroy(&srv.q.not_empty);
  pthread_mutex_destroy(&srv.q.mu);
  GKO(gko_gemm_plan_destroy(srv.gemm));
  GKO(gko_spmm_plan_destroy(srv.spmm));
  GKO(gko_csr_destroy(srv.csr));
  CUDA(cudaFree(srv.d_W));
  CUDA(cudaFree(srv.d_b));
  CUDA(cudaFree(srv.d_row_ptr));
  CUDA(cudaFree(srv.d_col_ind));
  CUDA(cudaFree(srv.d_values));
  CUDA(cudaStreamDestroy(setup));
  GKO(gko_destroy(srv.handle));

  /* the report: every bad request, every unexpected outcome, then counts */
  int good[3] = {0, 0, 0}, bad_ok = 0, bad_total = 0, unexpected = 0;
  double worst[3] = {0, 0, 0};
  for (int i = 0; i < nreq; i++) {
    const request *r = &reqs[i];
    if (r->bad) {
      bad_total++;
      bad_ok += r->ok;
      printf("request %3d (%s, %s) on worker %d: %s%s%s -> %s\n", r->id, kTypeName[r->type],
             kBadName[r->bad], r->worker, gko_status_name(r->status),
             r->detail[0] ? ": " : "", r->detail,
             r->ok ? "as documented, output untouched" : r->why);
    } else if (r->ok) {
      good[r->type]++;
      if (r->err > worst[r->type]) worst[r->type] = r->err;
    }
    if (!r->ok) {
      unexpected++;
      if (!r->bad)
        printf("request %3d (%s) on worker %d: %s%s%s: %s\n", r->id, kTypeName[r->type],
               r->worker, gko_status_name(r->status), r->detail[0] ? ": " : "", r->detail,
               r->why);
    }
  }
  printf("served %d requests on %d workers (per worker:", nreq, started);
  for (int i = 0; i < nworkers; i++) printf(" %d", workers[i].served);
  printf(")\n  verified: gelu %d (max relative error %.1e), gemm %d (relative Frobenius "
         "%.1e), spmm %d (%.1e)\n  bad requests rejected as documented: %d of %d; "
         "unexpected outcomes: %d\n",
         good[0], worst[0], good[1], worst[1], good[2], worst[2], bad_ok, bad_total,
         unexpected);
  free(workers);
  free(reqs);
  free(srv.row_ptr);
  free(srv.col_ind);
  free(srv.values);
  if (unexpected) {
    printf("FAIL: %d of %d requests did not come back as expected\n", unexpected, nreq);
    return 1;
  }
  printf("PASS\n");
  return 0;
}
