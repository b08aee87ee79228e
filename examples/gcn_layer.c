/* gcn_layer.c -- one graph-convolution layer (Kipf & Welling, "Semi-Supervised
 * Classification with Graph Convolutional Networks", ICLR 2017) on real
 * citation graphs, checked against a float64 computation on the host:
 *
 *     H' = GELU(Â · H · W + b),   Â = D^-1/2 (A + I) D^-1/2,   D = rowsum(A + I)
 *
 * H is m x 64 random f32 features, W 64 x 32, b 32 values.  Â is built on
 * the host from the Matrix Market file (the values as mtx.h reads them: 1.0
 * for pattern files, symmetric files mirrored, duplicates summed; a self-loop
 * of weight 1 added to every row) and handed to gko as a CSR f32 / int32
 * matrix.  On the GPU:
 *
 *     Y  = Â · H                      gko_spmm_execute (alpha 1, beta 0), m x 64
 *     H' = GELU_erf(Y · W + b)        gko_gemm with GKO_EPILOGUE_BIAS_GELU_ERF
 *
 * (Â·H)·W equals Â·(H·W); this order lets the bias and the GELU ride on the
 * GEMM's epilogue, which is where the API offers bias + activation (neither
 * SpMM nor gko_gelu_forward adds a bias).
 *
 *   build/bin/gcn_layer [graph.mtx ...]   (default: data/cora.mtx data/pubmed.mtx)
 *
 * Exit status: 0 PASS, 1 FAIL, 2 no usable GPU (the library says why). */
#include <cuda_runtime_api.h>
#include <gko.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "example.h"

#include "../util/mtx.h"

enum { F_IN = 64, F_OUT = 32 };

/* f32 arithmetic everywhere (GKO_GEMM_COMPUTE_DEFAULT: no TF32), unit
 * roundoff u = 2^-24 = 6e-8.  Each output sums k = 64 GEMM products of
 * SpMM results that each sum up to L = (longest row of A + I) products
 * (169 for cora, 172 for pubmed), then GELU (8 ulp).  The worst-case bound of
 * a length-L sum is about L*u times the sum of |terms|, here
 * (64 + 172) * 6e-8 = 1.4e-5 of sum(|terms|); the rounding errors have
 * random signs, so the Frobenius error grows like sqrt(L)*u, a few 1e-7.
 * 1e-5 leaves an order of magnitude above that and is far below what a real
 * mistake gives (a missing self-loop, bias or normalisation: 1e-2 .. 1; even
 * the tanh GELU in place of erf, at most 4.7e-4 apart, gives about 2e-4). */
#define TOL 1e-5

/* ---- Â = D^-1/2 (A + I) D^-1/2 on the host --------------------------------- */

typedef struct {
  int64_t m, nnz, longest;
  int32_t *row_ptr, *col_ind; /* what gko gets */
  float *val32;
  double *val; /* the exact normalised values, for the reference */
} norm_adj;

static int normalise(const mtx_csr *a, norm_adj *g, char *err, size_t errlen) {
  if (a->m != a->k) {
    snprintf(err, errlen, "the matrix is %lld x %lld, a graph's adjacency must be square",
             (long long)a->m, (long long)a->k);
    return 1;
  }
  const int64_t m = a->m, cap = a->nnz + m;
  if (cap > INT32_MAX) {
    snprintf(err, errlen, "nnz(A + I) = %lld does not fit int32 indices", (long long)cap);
    return 1;
  }
  g->m = m;
  g->row_ptr = xmalloc(sizeof(int32_t) * (size_t)(m + 1));
  g->col_ind = xmalloc(sizeof(int32_t) * (size_t)cap);
  g->val = xmalloc(sizeof(double) * (size_t)cap);
  g->val32 = xmalloc(sizeof(float) * (size_t)cap);
  double *dinv = xmalloc(sizeof(double) * (size_t)m);
  int64_t w = 0;
  g->longest = 0;
  for (int64_t i = 0; i < m; i++) { /* columns are sorted: merge the self-loop in */
    g->row_ptr[i] = (int32_t)w;
    int diag = 0;
    for (int64_t t = a->row_ptr[i]; t < a->row_ptr[i + 1]; t++) {
      const int64_t j = a->col_ind[t];
      double v = a->values[t];
      if (!diag && j >= i) {
        diag = 1;
        if (j == i) {
          v += 1.0; /* the graph already has this self-loop: A + I adds 1 */
        } else {
          g->col_ind[w] = (int32_t)i;
          g->val[w++] = 1.0;
        }
      }
      g->col_ind[w] = (int32_t)j;
      g->val[w++] = v;
    }
    if (!diag) {
      g->col_ind[w] = (int32_t)i;
      g->val[w++] = 1.0;
    }
    double deg = 0;
    for (int64_t t = g->row_ptr[i]; t < w; t++) deg += g->val[t];
    /* a row whose weights sum to <= 0 (only possible with signed weights)
     * gets 0, as PyTorch Geometric does with its infinite 1/sqrt(0) */
    dinv[i] = deg > 0 ? 1.0 / sqrt(deg) : 0.0;
    if (w - g->row_ptr[i] > g->longest) g->longest = w - g->row_ptr[i];
  }
  g->row_ptr[m] = (int32_t)w;
  g->nnz = w;
  for (int64_t i = 0; i < m; i++)
    for (int64_t t = g->row_ptr[i]; t < g->row_ptr[i + 1]; t++) {
      g->val[t] *= dinv[i] * dinv[g->col_ind[t]];
      g->val32[t] = (float)g->val[t];
    }
  free(dinv);
  return 0;
}

static void norm_adj_free(norm_adj *g) {
  free(g->row_ptr);
  free(g->col_ind);
  free(g->val);
  free(g->val32);
  memset(g, 0, sizeof *g);
}

static const char *kernel_name(gko_spmm_kernel_t k) {
  switch (k) {
    case GKO_SPMM_KERNEL_ROW_SPLIT: return "ROW_SPLIT";
    case GKO_SPMM_KERNEL_MERGE: return "MERGE";
    case GKO_SPMM_KERNEL_SCALE: return "SCALE";
    case GKO_SPMM_KERNEL_NONE: return "NONE";
    default: return "AUTO";
  }
}

/* One layer on one graph; returns 0 when the result is within TOL. */
static int run_graph(gko_handle_t h, cudaStream_t stream, const char *path) {
  mtx_csr a;
  char err[512];
  if (mtx_read(path, MTX_SUM_DUPLICATES, &a, err, sizeof err)) {
    printf("%s\n", err);
    return 1;
  }
  norm_adj g;
  memset(&g, 0, sizeof g);
  if (normalise(&a, &g, err, sizeof err)) {
    printf("%s: %s\n", path, err);
    mtx_free(&a);
    return 1;
  }
  const int64_t m = g.m;
  printf("%s: A %lld x %lld, %lld entries%s -> A^ = norm(A + I) with %lld entries, "
         "longest row %lld\n",
         path, (long long)a.m, (long long)a.k, (long long)a.nnz,
         a.symmetric ? " (symmetric, mirrored)" : "", (long long)g.nnz, (long long)g.longest);
  mtx_free(&a);

  /* fresh random inputs from a fixed seed: H in [-1, 1), W and b scaled so
   * that the pre-activations are O(1) */
  uint64_t seed = 0x6C6179657231ull ^ (uint64_t)m;
  float *H = xmalloc(sizeof(float) * (size_t)(m * F_IN));
  float W[F_IN * F_OUT], b[F_OUT];
  for (int64_t i = 0; i < m * F_IN; i++) H[i] = (float)uniform(&seed, -1, 1);
  for (int i = 0; i < F_IN * F_OUT; i++) W[i] = (float)uniform(&seed, -0.25, 0.25);
  for (int i = 0; i < F_OUT; i++) b[i] = (float)uniform(&seed, -0.5, 0.5);

  int32_t *d_rp, *d_ci;
  float *d_val, *d_H, *d_W, *d_b, *d_Y, *d_out;
  CUDA(cudaMalloc((void **)&d_rp, sizeof(int32_t) * (size_t)(m + 1)));
  CUDA(cudaMalloc((void **)&d_ci, sizeof(int32_t) * (size_t)g.nnz));
  CUDA(cudaMalloc((void **)&d_val, sizeof(float) * (size_t)g.nnz));
  CUDA(cudaMalloc((void **)&d_H, sizeof(float) * (size_t)(m * F_IN)));
  CUDA(cudaMalloc((void **)&d_W, sizeof W));
  CUDA(cudaMalloc((void **)&d_b, sizeof b));
  CUDA(cudaMalloc((void **)&d_Y, sizeof(float) * (size_t)(m * F_IN)));
  CUDA(cudaMalloc((void **)&d_out, sizeof(float) * (size_t)(m * F_OUT)));
  /* every copy on our stream: a non-blocking stream does not wait for the
   * legacy default stream that plain cudaMemcpy uses */
  CUDA(cudaMemcpyAsync(d_rp, g.row_ptr, sizeof(int32_t) * (size_t)(m + 1),
                       cudaMemcpyHostToDevice, stream));
  CUDA(cudaMemcpyAsync(d_ci, g.col_ind, sizeof(int32_t) * (size_t)g.nnz, cudaMemcpyHostToDevice,
                       stream));
  CUDA(cudaMemcpyAsync(d_val, g.val32, sizeof(float) * (size_t)g.nnz, cudaMemcpyHostToDevice,
                       stream));
  CUDA(cudaMemcpyAsync(d_H, H, sizeof(float) * (size_t)(m * F_IN), cudaMemcpyHostToDevice,
                       stream));
  CUDA(cudaMemcpyAsync(d_W, W, sizeof W, cudaMemcpyHostToDevice, stream));
  CUDA(cudaMemcpyAsync(d_b, b, sizeof b, cudaMemcpyHostToDevice, stream));
  /* poison the outputs (0xFF.. is a NaN): an element the GPU does not
   * write shows up in the check */
  CUDA(cudaMemsetAsync(d_Y, 0xFF, sizeof(float) * (size_t)(m * F_IN), stream));
  CUDA(cudaMemsetAsync(d_out, 0xFF, sizeof(float) * (size_t)(m * F_OUT), stream));

  /* Â as a gko CSR matrix; validate it once (it came from a file) */
  gko_csr_t csr;
  GKO(gko_csr_create(&csr, m, m, g.nnz, d_rp, d_ci, d_val, GKO_INDEX_INT32, GKO_DTYPE_F32));
  gko_csr_check_t check = GKO_CSR_VALID;
  int64_t bad_row = -1;
  int sorted = -1, dups = -1;
  GKO(gko_csr_validate(h, csr, NULL, 0, &check, &bad_row, &sorted, &dups, stream));

  /* Y = Â · H: plan once (looks at the row lengths), then execute */
  gko_spmm_plan_t sp;
  GKO(gko_spmm_plan_create(h, csr, F_IN, GKO_LAYOUT_ROW_MAJOR, F_IN, F_IN, GKO_SPMM_KERNEL_AUTO,
                           &sp, stream));
  gko_spmm_kernel_t kern;
  size_t ws_bytes = 0;
  void *ws = NULL;
  GKO(gko_spmm_plan_kernel(sp, &kern));
  GKO(gko_spmm_workspace_size(sp, &ws_bytes));
  if (ws_bytes) CUDA(cudaMalloc(&ws, ws_bytes));
  GKO(gko_spmm_execute(sp, 1.0f, d_H, 0.0f, d_Y, ws, ws_bytes, stream));

  /* H' = GELU_erf(Y · W + b): one row-major GEMM with the fused epilogue
   * (one-shot gko_gemm: it plans, and allocates its workspace from the
   * stream-ordered pool) */
  GKO(gko_gemm(h, GKO_OP_N, GKO_OP_N, m, F_OUT, F_IN, 1.0f, GKO_DTYPE_F32, d_Y, -1, d_W, -1,
               0.0f, GKO_DTYPE_F32, NULL, -1, d_out, -1, GKO_EPILOGUE_BIAS_GELU_ERF, d_b, stream));

  float *out = xmalloc(sizeof(float) * (size_t)(m * F_OUT));
  CUDA(cudaMemcpyAsync(out, d_out, sizeof(float) * (size_t)(m * F_OUT), cudaMemcpyDeviceToHost,
                       stream));
  CUDA(cudaStreamSynchronize(stream));

  /* float64 reference in the formula's order: HW = H·W, Z = Â·HW, GELU(Z + b) */
  double *HW = xmalloc(sizeof(double) * (size_t)(m * F_OUT));
  for (int64_t i = 0; i < m; i++)
    for (int j = 0; j < F_OUT; j++) {
      double s = 0;
      for (int t = 0; t < F_IN; t++) s += (double)H[i * F_IN + t] * (double)W[t * F_OUT + j];
      HW[i * F_OUT + j] = s;
    }
  double num = 0, den = 0, worst = 0;
  int64_t unwritten = 0;
  for (int64_t i = 0; i < m; i++) {
    double z[F_OUT] = {0};
    for (int64_t t = g.row_ptr[i]; t < g.row_ptr[i + 1]; t++)
      for (int j = 0; j < F_OUT; j++) z[j] += g.val[t] * HW[(int64_t)g.col_ind[t] * F_OUT + j];
    for (int j = 0; j < F_OUT; j++) {
      const double ref = gelu64(z[j] + b[j]), got = out[i * F_OUT + j];
      if (!isfinite(got)) unwritten++;
      num += (got - ref) * (got - ref);
      den += ref * ref;
      worst = fmax(worst, fabs(got - ref));
    }
  }
  const double rel = sqrt(num / den);
  const int ok = unwritten == 0 && rel <= TOL;
  printf("  A^ validated (%s, %s); SpMM Y = A^.H [%lld x %d]: kernel %s, workspace %zu bytes\n",
         sorted == 1 ? "rows sorted" : "rows unsorted",
         dups == 1 ? "duplicates" : "no duplicates", (long long)m, F_IN, kernel_name(kern),
         ws_bytes);
  printf("  H' = GELU(Y.W + b) [%lld x %d]: relative Frobenius error %.2e (tolerance %.0e), "
         "max |error| %.2e, %lld unwritten -> %s\n",
         (long long)m, F_OUT, rel, TOL, worst, (long long)unwritten, ok ? "ok" : "WRONG");

  GKO(gko_spmm_plan_destroy(sp));
  GKO(gko_csr_destroy(csr));
  CUDA(cudaFree(ws));
  CUDA(cudaFree(d_rp));
  CUDA(cudaFree(d_ci));
  CUDA(cudaFree(d_val));
  CUDA(cudaFree(d_H));
  CUDA(cudaFree(d_W));
  CUDA(cudaFree(d_b));
  CUDA(cudaFree(d_Y));
  CUDA(cudaFree(d_out));
  free(HW);
  free(out);
  free(H);
  norm_adj_free(&g);
  return ok ? 0 : 1;
}

int main(int argc, char **argv) {
  int dev = 0;
  int64_t cc = 0;
  gko_handle_t h = example_start("gcn_layer", &dev, &cc); /* exits 2 without a usable GPU */
  printf("gcn_layer: gko %s on device %d (sm_%lld)\n", gko_version_string(), dev, (long long)cc);

  cudaStream_t stream;
  CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  int fails = 0, graphs = 0;
  if (argc > 1) {
    for (int i = 1; i < argc; i++, graphs++) fails += run_graph(h, stream, argv[i]);
  } else {
    const char *names[] = {"cora.mtx", "pubmed.mtx"};
    for (int i = 0; i < 2; i++, graphs++) {
      char path[1024];
      mtx_find(names[i], path, sizeof path); /* ./data, $GKO_DATA_DIR, ... */
      fails += run_graph(h, stream, path);
    }
  }
  CUDA(cudaStreamDestroy(stream));
  GKO(gko_destroy(h));
  if (fails) {
    printf("FAIL: %d of %d graphs outside the tolerance or not readable\n", fails, graphs);
    return 1;
  }
  printf("PASS\n");
  return 0;
}
