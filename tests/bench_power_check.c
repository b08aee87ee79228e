/* bench_power_check.c -- host-only check of gko-bench's --power sampler
 * (bench/bench_common.c) against tests/fake_nvml.c; no GPU, no driver.
 * Driven by tests/bench_power_check.sh, which builds it and the fake NVML and
 * checks the messages and the JSON; see that script for how to run it.
 *
 *   bench_power_check open-only      bench_power_open must fail (the script
 *                                    checks the one-line message)
 *   bench_power_check init           bench_power_init (CUDA without a driver)
 *   bench_power_check sample JSON    the sampler, the averages, the columns,
 *                                    report() and its JSON (written to JSON)
 *   bench_power_check noclock        a query NVML does not support
 *
 * Exit status 0 when every check passed. */
#include <dlfcn.h>
#include <time.h>

#include "../bench/bench.h"

static int g_fail = 0;
#define CHECK(cond, ...)                                          \
  do {                                                            \
    if (!(cond)) {                                                \
      g_fail++;                                                   \
      fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                               \
      fputc('\n', stderr);                                        \
    }                                                             \
  } while (0)

static const char kBus[] = "0000:41:00.0"; /* what cudaDeviceGetPCIBusId prints */

static void sleep_ms(double ms) {
  struct timespec t = {(time_t)(ms / 1000), (long)(((long long)(ms * 1e6)) % 1000000000LL)};
  nanosleep(&t, NULL);
}

static double mono_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec * 1e-6;
}

typedef void (*stats_fn)(long *, double *, long *, double *, long *, unsigned long long *);
static stats_fn g_stats;
static void (*g_reset)(void);

static void bind_fake(void) {
  void *h = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (!h) {
    fprintf(stderr, "FAIL: the fake NVML is not loaded: %s\n", dlerror());
    exit(1);
  }
  void *a = dlsym(h, "fake_nvml_stats"), *b = dlsym(h, "fake_nvml_reset");
  if (!a || !b) {
    fprintf(stderr, "FAIL: libnvidia-ml.so.1 is not tests/fake_nvml.c\n");
    exit(1);
  }
  memcpy(&g_stats, &a, sizeof a);
  memcpy(&g_reset, &b, sizeof b);
}

/* One region of `ms`; checks the result against what the fake handed out. */
static void region(double ms, double dev_us, int expect_clock) {
  g_reset();
  bench_power_begin();
  sleep_ms(ms);
  double t0 = mono_ms();
  bench_power_end(dev_us, "check region");
  double stop_ms = mono_ms() - t0;
  long pn, cn, mn;
  double psum, csum;
  unsigned long long mmax;
  g_stats(&pn, &psum, &cn, &csum, &mn, &mmax);
  const bench_power_t *p = &g_last_power;
  CHECK(p->fresh == 1, "fresh %d", p->fresh);
  CHECK(p->power_n == pn, "sampler counted %d power reads, the fake served %ld", p->power_n, pn);
  CHECK(p->mem_n == mn, "%d vs %ld", p->mem_n, mn);
  CHECK(stop_ms < 4.0, "stopping took %.2f ms: it must not wait out the 5 ms period", stop_ms);
  /* every ~5 ms: a region of ms gets about ms/5 samples, never more than
   * ms/5 + 1, and at least a few when it is long enough (loaded CI machines
   * can be late, so the lower bound is loose) */
  CHECK(pn <= (long)(ms / 5.0) + 1, "%ld samples in %.0f ms: more than one per 5 ms", pn, ms);
  if (ms >= 50) CHECK(pn >= (long)(ms / 5.0) / 2, "%ld samples in %.0f ms: too few", pn, ms);
  if (pn) {
    CHECK(fabs(p->watts - psum * 1e-3 / pn) < 1e-9, "watts %.6f, expected %.6f", p->watts,
          psum * 1e-3 / pn);
    CHECK(p->watts >= 300.0 && p->watts <= 310.0, "watts %.3f out of the fake's range", p->watts);
    CHECK(fabs(p->mem_mib - (double)mmax / 1048576.0) < 1e-9, "mem %.3f MiB, expected %.3f",
          p->mem_mib, (double)mmax / 1048576.0);
    if (expect_clock) {
      CHECK(p->clock_n == cn, "%d vs %ld", p->clock_n, cn);
      CHECK(fabs(p->sm_mhz - csum / cn) < 1e-9, "sm %.3f, expected %.3f", p->sm_mhz, csum / cn);
    } else {
      CHECK(p->clock_n == 0, "clock_n %d with the clock unsupported", p->clock_n);
    }
    /* the columns: energy per call = average power x device time per call */
    char want[32];
    snprintf(want, sizeof want, "%.3e", p->watts * dev_us * 1e-6);
    const char *cols = bench_power_cols(dev_us);
    CHECK(strstr(cols, want) != NULL, "columns \"%s\" lack the energy %s", cols, want);
  } else {
    const char *cols = bench_power_cols(dev_us);
    CHECK(!strcmp(cols, "       -      -       -          -"), "columns \"%s\" for no sample",
          cols);
  }
  CHECK(p->region_ms >= ms * 0.9, "region %.2f ms for a %.0f ms sleep", p->region_ms, ms);
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "sample";
  if (!strcmp(mode, "open-only")) {
    int ok = bench_power_open(kBus);
    CHECK(!ok && !g_power, "bench_power_open succeeded where it must fail");
    /* without NVML everything is a no-op and prints nothing */
    bench_power_begin();
    bench_power_end(10, "x");
    CHECK(!strcmp(bench_power_head(), "") && !strcmp(bench_power_cols(10), ""),
          "columns printed without NVML");
    bench_power_close();
    return g_fail ? 1 : 0;
  }
  if (!strcmp(mode, "init")) {
    int ok = bench_power_init();
    CHECK(!ok && !g_power, "bench_power_init succeeded without a GPU");
    return g_fail ? 1 : 0;
  }
  if (!strcmp(mode, "noclock")) {
    CHECK(bench_power_open(kBus) == 1, "open failed");
    if (!g_power) return 1;
    bind_fake();
    region(40, 50, 0);
    region(40, 50, 0); /* the warning comes once, not per region */
    CHECK(strstr(bench_power_cols(50), "     -") != NULL, "sm_MHz not \"-\": %s",
          bench_power_cols(50));
    bench_power_close();
    return g_fail ? 1 : 0;
  }
  if (strcmp(mode, "sample") || argc < 3) {
    fprintf(stderr, "usage: bench_power_check open-only|init|noclock|sample JSON\n");
    return 2;
  }

  CHECK(bench_power_open(kBus) == 1, "open failed");
  if (!g_power) return 1;
  bind_fake();
  CHECK(!strcmp(bench_power_head(), " power_W sm_MHz mem_MiB     J/call"), "head \"%s\"",
        bench_power_head());

  region(60, 123.4, 1); /* ~12 samples */
  region(103, 7.5, 1);  /* ~20 */
  region(1, 5.0, 1);    /* shorter than one period: no sample, "-" */
  CHECK(g_last_power.power_n == 0, "%d samples in 1 ms", g_last_power.power_n);
  for (int i = 0; i < 300; i++) { /* many short regions: threads joined, no hang */
    bench_power_begin();
    bench_power_end(1.0, "tiny");
  }
  CHECK(g_last_power.power_n == 0, "a tiny region got %d samples", g_last_power.power_n);

  /* report(): the table row and the JSON object carry the power fields */
  g_copy_gbs = 4000;
  g_json = fopen(argv[2], "w");
  if (!g_json) {
    perror(argv[2]);
    return 1;
  }
  fputc('[', g_json);
  region(30, 250.0, 1);
  report("gelu", "n=1", "f32", "erf", 250.0, 260.0, 8e6, 1e-7);
  /* a row without its own timed region shows "-", never the last one's */
  report("stale", "n=1", "f32", "erf", 250.0, 260.0, 8e6, 1e-7);
  region(2, 40.0, 1); /* no sample: nulls */
  report("short", "n=1", "f32", "erf", 40.0, 50.0, 8e6, 1e-7);
  fputs("\n]\n", g_json);
  fclose(g_json);
  g_json = NULL;

  /* modules with their own table: one "# power" line per region */
  g_power_lines = 1;
  region(30, 99.0, 1);
  g_power_lines = 0;

  bench_power_close();
  CHECK(g_power == 0, "still on after close");
  CHECK(!strcmp(bench_power_cols(1), ""), "columns after close");
  if (!g_fail) printf("bench_power_check: sample: all checks passed\n");
  return g_fail ? 1 : 0;
}
