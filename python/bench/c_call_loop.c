/* The C side of bench_call_overhead.py, run inside the Python process (so
 * with the same cuBLASLt and CUDA runtime loaded as the Python calls): a
 * planned gko_gemm_execute called from C.  The functions come as addresses
 * (gko_gemm_execute from the library the binding loaded, the runtime's
 * cudaStreamSynchronize), so this links nothing.  Built by the bench with cc. */
#include <stddef.h>
#include <time.h>

typedef int (*gemm_execute_fn)(void *plan, float alpha, const void *a, const void *b, float beta,
                               const void *c, void *d, const void *bias, void *workspace,
                               size_t workspace_bytes, void *stream);
typedef int (*sync_fn)(void *stream);

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e6 + (double)t.tv_nsec * 1e-3;
}

/* reps samples of one call + stream sync (µs each) into out, and of the
 * call alone (its return, before the sync) into submit; before each call
 * the host waits gap_us after the previous sync (untimed: the GPU idles as
 * long as between a slower caller's calls).  The first nonzero status, or
 * 0. */
int c_latency(void *fn, void *sync, void *plan, const void *a, const void *b, void *d, void *ws,
              size_t nws, void *stream, int reps, double *out, double *submit, double gap_us) {
  gemm_execute_fn f = (gemm_execute_fn)fn;
  sync_fn s = (sync_fn)sync;
  for (int i = 0; i < 10; i++) f(plan, 1.0f, a, b, 0.0f, NULL, d, NULL, ws, nws, stream);
  s(stream);
  double done = now_us();
  for (int i = 0; i < reps; i++) {
    while (now_us() - done < gap_us) {
    }
    double t0 = now_us();
    int st = f(plan, 1.0f, a, b, 0.0f, NULL, d, NULL, ws, nws, stream);
    submit[i] = now_us() - t0;
    s(stream);
    done = now_us();
    out[i] = done - t0;
    if (st) return st;
  }
  return 0;
}

/* host time per call (µs) of `calls` back-to-back calls, for each of reps
 * such loops (a stream sync between them) in out[0..reps) */
int c_host(void *fn, void *sync, void *plan, const void *a, const void *b, void *d, void *ws,
           size_t nws, void *stream, int calls, int reps, double *out) {
  gemm_execute_fn f = (gemm_execute_fn)fn;
  sync_fn s = (sync_fn)sync;
  for (int r = 0; r < reps; r++) {
    double t0 = now_us();
    for (int i = 0; i < calls; i++) {
      int st = f(plan, 1.0f, a, b, 0.0f, NULL, d, NULL, ws, nws, stream);
      if (st) return st;
    }
    out[r] = (now_us() - t0) / calls;
    s(stream);
  }
  return 0;
}
