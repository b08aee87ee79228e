/* bench_common.c -- timing, ceilings, the table and its summary, the JSON
 * rows, conversions, the host references' pieces, and the --power sampler
 * (NVML, loaded at run time).  Calls no gko function (tests/bench_power_check
 * links it without the library). */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <time.h>

#include "bench.h"

int g_repeat = 20;
int g_verbose = 0;
double g_copy_gbs = 0;
double g_last_host_us = 0;
FILE *g_json = NULL;

double bench_now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec * 1e-3;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

double bench_median(double *v, int n) {
  qsort(v, n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

void time_case(run_fn fn, void *ctx, cudaStream_t s, double *dev_us, double *lat_us) {
  time_case_host(fn, ctx, s, dev_us, lat_us, NULL);
}

void time_case_host(run_fn fn, void *ctx, cudaStream_t s, double *dev_us, double *lat_us,
                    double *host_us) {
  for (int i = 0; i < 3; i++) fn(ctx, s);
  CK(cudaStreamSynchronize(s));
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  CK(cudaEventRecord(a, s));
  fn(ctx, s);
  CK(cudaEventRecord(b, s));
  CK(cudaEventSynchronize(b));
  float one_ms = 0;
  CK(cudaEventElapsedTime(&one_ms, a, b));
  int k = (int)(2000.0 / (one_ms * 1000.0 + 1.0)) + 1; /* ~2 ms per repetition */
  if (k > 200) k = 200;
  double *d = malloc(sizeof(double) * g_repeat), *l = malloc(sizeof(double) * g_repeat),
         *hu = malloc(sizeof(double) * g_repeat);
  if (g_power) bench_power_begin();
  for (int r = 0; r < g_repeat; r++) {
    CK(cudaEventRecord(a, s));
    /* host time per enqueue: the k calls are issued back to back while the
     * GPU works through the queue, so this is the host cost of one call
     * (argument checks, plan lookups, launches), not the GPU's */
    double h0 = bench_now_us();
    for (int i = 0; i < k; i++) fn(ctx, s);
    hu[r] = (bench_now_us() - h0) / k;
    CK(cudaEventRecord(b, s));
    CK(cudaEventSynchronize(b));
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, a, b));
    d[r] = ms * 1000.0 / k;
  }
  if (g_power) bench_power_end(bench_median(d, g_repeat), "back-to-back calls");
  for (int r = 0; r < g_repeat; r++) {
    double t0 = bench_now_us();
    fn(ctx, s);
    CK(cudaStreamSynchronize(s));
    l[r] = bench_now_us() - t0;
  }
  *dev_us = bench_median(d, g_repeat);
  *lat_us = bench_median(l, g_repeat);
  g_last_host_us = bench_median(hu, g_repeat);
  if (host_us) *host_us = g_last_host_us;
  free(d);
  free(l);
  free(hu);
  cudaEventDestroy(a);
  cudaEventDestroy(b);
}

double time_graph(run_fn fn, void *ctx, cudaStream_t s, int calls) {
  for (int i = 0; i < 2; i++) fn(ctx, s);
  CK(cudaStreamSynchronize(s));
  cudaGraph_t g;
  cudaGraphExec_t ge;
  CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  for (int i = 0; i < calls; i++) fn(ctx, s);
  CK(cudaStreamEndCapture(s, &g));
  CK(cudaGraphInstantiate(&ge, g, 0));
  CK(cudaGraphLaunch(ge, s));
  CK(cudaStreamSynchronize(s));
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  double *d = malloc(sizeof(double) * g_repeat);
  if (g_power) bench_power_begin();
  for (int r = 0; r < g_repeat; r++) {
    CK(cudaEventRecord(a, s));
    CK(cudaGraphLaunch(ge, s));
    CK(cudaEventRecord(b, s));
    CK(cudaEventSynchronize(b));
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, a, b));
    d[r] = ms * 1000.0 / calls;
  }
  double med = bench_median(d, g_repeat);
  if (g_power) bench_power_end(med, "graph replay");
  free(d);
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  cudaGraphExecDestroy(ge);
  cudaGraphDestroy(g);
  return med;
}

typedef struct {
  void *dst, *src;
  size_t bytes;
} copy_ctx;

static void run_copy(void *p, cudaStream_t s) {
  copy_ctx *c = p;
  CK(cudaMemcpyAsync(c->dst, c->src, c->bytes, cudaMemcpyDeviceToDevice, s));
}

double measure_copy(cudaStream_t s) {
  copy_ctx c = {NULL, NULL, (size_t)1 << 30};
  CK(cudaMalloc(&c.src, c.bytes));
  CK(cudaMalloc(&c.dst, c.bytes));
  CK(cudaMemset(c.src, 1, c.bytes));
  double dev, lat;
  time_case(run_copy, &c, s, &dev, &lat);
  g_last_power.fresh = 0; /* not a table row: no row shows this region's power */
  cudaFree(c.src);
  cudaFree(c.dst);
  return 2.0 * (double)c.bytes / (dev * 1e3); /* GB/s, read + write */
}

typedef struct {
  void *p;
} floor_ctx;

static void run_floor(void *ctx, cudaStream_t s) {
  CK(cudaMemsetAsync(((floor_ctx *)ctx)->p, 0, 4, s));
}

void measure_launch_floor(cudaStream_t s, double *dev_us, double *lat_us) {
  floor_ctx c = {NULL};
  CK(cudaMalloc(&c.p, 4));
  time_case(run_floor, &c, s, dev_us, lat_us);
  g_last_power.fresh = 0;
  cudaFree(c.p);
}

/* ---- the table ------------------------------------------------------------------- */

/* The table being printed: set by bench_table(); report() without one (as
 * tests/bench_power_check.c calls it) prints with these defaults. */
typedef struct {
  const char *module, *rate, *roof;
  int shape_w, backend_w, power, header_done, any;
} table_t;
static table_t tab = {NULL, "GB/s", NULL, 22, 8, -1, 0, 0};

static void print_header(void) {
  printf("%-8s %-*s %-5s %-*s %8s %8s %7s %7s %6s %7s%s\n", "op", tab.shape_w, "shape", "dtype",
         tab.backend_w, "backend", "dev_us", "lat_us", tab.rate, "of_roof", "vs_ref", "max_err",
         tab.power ? bench_power_head() : "");
  tab.header_done = 1;
}

void bench_table(const char *module, int shape_w, int backend_w, const char *rate,
                 const char *roof, int power, const char *legend) {
  if (tab.any) printf("\n"); /* a blank line between two modules' tables */
  tab = (table_t){module, rate, roof, shape_w, backend_w, power, 0, 1};
  for (const char *l = legend; l && *l;) {
    const size_t n = strcspn(l, "\n");
    printf("# %.*s\n", (int)n, l);
    l += n + (l[n] == '\n');
  }
  print_header();
  fflush(stdout);
}

/* a number, or "-" where it does not apply */
static const char *num(char *buf, size_t n, const char *fmt, double v, int have) {
  if (have) snprintf(buf, n, fmt, v);
  else snprintf(buf, n, "-");
  return buf;
}

void bench_row(const bench_row_t *r) {
  if (tab.power < 0) tab.power = g_power; /* no table started: report()'s rows */
  if (!tab.header_done) print_header();
  const int run = !r->not_run;
  char dev[24], lat[24], rate[24], roof[24], ref[24], err[24];
  printf("%-8s %-*s %-5s %-*s %8s %8s %7s %7s %6s %7s%s\n", r->op, tab.shape_w, r->shape,
         r->dtype, tab.backend_w, r->backend, num(dev, sizeof dev, "%.1f", r->dev_us, run && r->dev_us >= 0),
         num(lat, sizeof lat, "%.1f", r->lat_us, run && r->lat_us >= 0),
         num(rate, sizeof rate, strcmp(tab.rate, "GB/s") ? "%.1f" : "%.0f", r->rate,
             run && r->rate > 0),
         num(roof, sizeof roof, "%.1f%%", 100.0 * r->of_roof, run && r->of_roof >= 0),
         num(ref, sizeof ref, "%.2fx", r->vs_ref, run && r->vs_ref > 0),
         num(err, sizeof err, "%.1e", r->max_err, run && !(r->max_err < 0)),
         tab.power ? bench_power_cols(r->dev_us) : "");
  if (g_verbose && r->detail && r->detail[0]) printf("    %s\n", r->detail);
  if (g_verbose && r->plan && r->plan[0]) printf("    plan: %s\n", r->plan);
  fflush(stdout);
  if (!run || r->reference) return;
  char label[160];
  snprintf(label, sizeof label, "%s %s %s", r->shape, r->dtype, r->backend);
  const char *module = tab.module ? tab.module : r->op;
  char group[96];
  if (r->vs_ref > 0 && r->ref) {
    snprintf(group, sizeof group, "%s vs %s", module, r->ref);
    bench_stat(group, 0, r->vs_ref, label);
  }
  if (r->of_roof >= 0 && tab.roof) {
    snprintf(group, sizeof group, "%s of_roof (of %s)", module, tab.roof);
    bench_stat(group, 1, r->of_roof, label);
  }
}

/* ---- the summary ----------------------------------------------------------------- */

enum { kMaxStats = 32 };
static struct {
  char group[96], min_at[160];
  int percent, n;
  double logsum, min, max;
} g_stats[kMaxStats];
static int g_nstats = 0;

void bench_stat(const char *group, int percent, double v, const char *label) {
  if (!(v > 0)) return;
  int i = 0;
  while (i < g_nstats && strcmp(g_stats[i].group, group)) i++;
  if (i == g_nstats) {
    if (g_nstats == kMaxStats) return;
    memset(&g_stats[i], 0, sizeof g_stats[i]);
    snprintf(g_stats[i].group, sizeof g_stats[i].group, "%s", group);
    g_stats[i].percent = percent;
    g_nstats++;
  }
  if (g_stats[i].n == 0 || v < g_stats[i].min) {
    g_stats[i].min = v;
    snprintf(g_stats[i].min_at, sizeof g_stats[i].min_at, "%s", label);
  }
  if (g_stats[i].n == 0 || v > g_stats[i].max) g_stats[i].max = v;
  g_stats[i].logsum += log(v);
  g_stats[i].n++;
}

static const char *stat_value(char *buf, size_t n, int percent, double v) {
  snprintf(buf, n, percent ? "%.1f%%" : "%.2fx", percent ? 100.0 * v : v);
  return buf;
}

void bench_summary(void) {
  int any = 0;
  for (int i = 0; i < g_nstats; i++) any |= g_stats[i].n > 1;
  if (!any) return; /* one row: nothing to sum up */
  printf("\n# summary (vs_ref, of_roof: higher is better): geometric mean, minimum and maximum "
         "of each group of rows\n");
  for (int i = 0; i < g_nstats; i++) {
    if (g_stats[i].n < 2) continue;
    char gm[24], mn[24], mx[24];
    const int p = g_stats[i].percent;
    printf("#   %s, %d row%s: geomean %s, min %s, max %s\n#     lowest: %s\n", g_stats[i].group,
           g_stats[i].n, g_stats[i].n == 1 ? "" : "s", stat_value(gm, sizeof gm, p, exp(g_stats[i].logsum / g_stats[i].n)),
           stat_value(mn, sizeof mn, p, g_stats[i].min), stat_value(mx, sizeof mx, p, g_stats[i].max),
           g_stats[i].min_at);
  }
  fflush(stdout);
}

/* ---- JSON rows ------------------------------------------------------------------- */

void bench_json_begin(void) {
  long pos = ftell(g_json);
  fprintf(g_json, "%s\n  {", pos > 1 ? "," : "");
}

void bench_json_str(const char *key, const char *value) {
  fprintf(g_json, ", \"%s\": \"", key);
  for (const unsigned char *c = (const unsigned char *)value; *c; c++) {
    if (*c == '"' || *c == '\\') fprintf(g_json, "\\%c", *c);
    else if (*c == '\n') fputs("\\n", g_json);
    else if (*c == '\t') fputs("\\t", g_json);
    else if (*c < 0x20) fprintf(g_json, "\\u%04x", *c);
    else fputc(*c, g_json);
  }
  fputc('"', g_json);
}

void report(const char *op, const char *shape, const char *dtype, const char *form,
            double dev, double lat, double bytes, double max_err) {
  report_ex(op, shape, dtype, form, dev, lat, bytes, max_err, NULL);
}

void report_ex(const char *op, const char *shape, const char *dtype, const char *form,
               double dev, double lat, double bytes, double max_err, const report_extra *x) {
  static const report_extra none;
  if (!x) x = &none;
  const double gbs = bytes / (dev * 1e3);
  const bench_row_t row = {x->op ? x->op : op, x->shape ? x->shape : shape, dtype,
                           x->backend ? x->backend : form, dev, lat, gbs, gbs / g_copy_gbs,
                           x->vs_ref, x->ref, max_err, 0, x->reference, x->detail, x->plan};
  bench_row(&row);
  if (g_json) {
    bench_json_begin();
    fprintf(g_json,
            "\"op\": \"%s\", \"shape\": \"%s\", \"dtype\": \"%s\", \"form\": \"%s\", "
            "\"device_us\": %.3f, \"latency_us\": %.3f, \"host_us\": %.3f, \"gbs\": %.1f, "
            "\"copy_gbs\": %.1f, \"max_rel_err\": %.3g",
            op, shape, dtype, form, dev, lat, g_last_host_us, gbs, g_copy_gbs, max_err);
    bench_power_json(g_json, dev);
    if (x->vs_ref > 0) fprintf(g_json, ", \"vs_ref\": %.4f", x->vs_ref);
    if (x->plan) bench_json_str("plan", x->plan);
    fputs("}", g_json);
  }
  g_last_power.fresh = 0; /* a later row without its own timed region shows "-" */
}

/* ---- --power ---------------------------------------------------------------------- */

/* The NVML declarations gko-bench uses, written out here so that it builds
 * without nvml.h.  Values and layouts as in NVIDIA's NVML API Reference
 * Guide (docs.nvidia.com/deploy/nvml-api/): "Device Enums" (nvmlReturn_t:
 * NVML_SUCCESS = 0; nvmlClockType_t: NVML_CLOCK_GRAPHICS = 0,
 * NVML_CLOCK_SM = 1, NVML_CLOCK_MEM = 2, NVML_CLOCK_VIDEO = 3),
 * "nvmlMemory_t Struct Reference" (v1: unsigned long long total, free, used;
 * bytes), "Initialization and Cleanup" (nvmlInit_v2, nvmlShutdown), "Error
 * reporting" (nvmlErrorString) and "Device Queries"
 * (nvmlDeviceGetHandleByPciBusId_v2, nvmlDeviceGetPowerUsage in milliwatts,
 * nvmlDeviceGetClockInfo in MHz, nvmlDeviceGetMemoryInfo). */
typedef enum nvmlReturn_enum { NVML_SUCCESS = 0 } nvmlReturn_t;
typedef enum nvmlClockType_enum { NVML_CLOCK_SM = 1 } nvmlClockType_t;
typedef struct nvmlDevice_st *nvmlDevice_t;
typedef struct nvmlMemory_st {
  unsigned long long total, free, used;
} nvmlMemory_t;

static const char kNvmlLib[] = "libnvidia-ml.so.1";
enum { kPowerPeriodNs = 5000000 }; /* one sample every 5 ms */

int g_power = 0;
int g_power_lines = 0;
bench_power_t g_last_power;

static struct {
  void *lib;
  nvmlReturn_t (*init)(void);
  nvmlReturn_t (*shutdown)(void);
  const char *(*error_string)(nvmlReturn_t);
  nvmlReturn_t (*by_bus_id)(const char *, nvmlDevice_t *);
  nvmlReturn_t (*power)(nvmlDevice_t, unsigned int *);
  nvmlReturn_t (*clock)(nvmlDevice_t, nvmlClockType_t, unsigned int *);
  nvmlReturn_t (*memory)(nvmlDevice_t, nvmlMemory_t *);
  nvmlDevice_t dev;
} nv;

/* One sampler, used by one timed region at a time (gko-bench times on one
 * thread).  The counters are written by the sampler thread only and read
 * after pthread_join. */
static struct {
  pthread_t thread;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int stop, running;
  int power_n, clock_n, mem_n;
  double power_mw, clock_mhz;
  unsigned long long mem_used;
  int power_err, clock_err, mem_err; /* the first failure of each query */
} smp = {.mu = PTHREAD_MUTEX_INITIALIZER};

static const char *nvml_error(int r) {
  const char *e = nv.error_string ? nv.error_string((nvmlReturn_t)r) : NULL;
  return e ? e : "unknown NVML error";
}

static int nvml_sym(const char *name, void *fn) {
  dlerror();
  void *p = dlsym(nv.lib, name);
  if (!p) return 0;
  memcpy(fn, &p, sizeof p); /* POSIX: a data pointer holds a function pointer */
  return 1;
}

int bench_power_open(const char *pci_bus_id) {
  nv.lib = dlopen(kNvmlLib, RTLD_NOW | RTLD_LOCAL);
  if (!nv.lib) {
    const char *e = dlerror();
    fprintf(stderr, "gko-bench: --power: NVML (%s) could not be loaded: %s; power columns omitted\n",
            kNvmlLib, e ? e : "dlopen failed");
    return 0;
  }
  static const char *const names[] = {"nvmlInit_v2",
                                      "nvmlShutdown",
                                      "nvmlErrorString",
                                      "nvmlDeviceGetHandleByPciBusId_v2",
                                      "nvmlDeviceGetPowerUsage",
                                      "nvmlDeviceGetClockInfo",
                                      "nvmlDeviceGetMemoryInfo"};
  void *const slots[] = {&nv.init,  &nv.shutdown, &nv.error_string, &nv.by_bus_id,
                         &nv.power, &nv.clock,    &nv.memory};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    if (!nvml_sym(names[i], slots[i])) {
      fprintf(stderr,
              "gko-bench: --power: NVML (%s) could not be loaded: it has no %s (too old?); "
              "power columns omitted\n",
              kNvmlLib, names[i]);
      goto unload;
    }
  }
  nvmlReturn_t r = nv.init();
  if (r != NVML_SUCCESS) {
    fprintf(stderr, "gko-bench: --power: NVML (%s) could not be initialised: nvmlInit_v2: %s; "
                    "power columns omitted\n", kNvmlLib, nvml_error(r));
    goto unload;
  }
  r = nv.by_bus_id(pci_bus_id, &nv.dev);
  if (r != NVML_SUCCESS) {
    fprintf(stderr, "gko-bench: --power: NVML has no GPU at PCI bus id %s (the CUDA device): "
                    "%s; power columns omitted\n", pci_bus_id, nvml_error(r));
    nv.shutdown();
    goto unload;
  }
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&smp.cv, &ca);
  pthread_condattr_destroy(&ca);
  g_power = 1;
  printf("# power: NVML sampled every %d ms while each case's timed loop runs (GPU at PCI %s)\n",
         kPowerPeriodNs / 1000000, pci_bus_id);
  return 1;
unload:
  dlclose(nv.lib);
  memset(&nv, 0, sizeof nv);
  return 0;
}

int bench_power_init(void) {
  int dev = 0;
  char bus[64];
  cudaError_t e = cudaGetDevice(&dev);
  if (e == cudaSuccess) e = cudaDeviceGetPCIBusId(bus, (int)sizeof bus, dev);
  if (e != cudaSuccess) {
    fprintf(stderr, "gko-bench: --power: cannot read the CUDA device's PCI bus id: %s; "
                    "power columns omitted\n", cudaGetErrorString(e));
    return 0;
  }
  return bench_power_open(bus);
}

void bench_power_close(void) {
  if (!g_power) return;
  nv.shutdown();
  dlclose(nv.lib);
  memset(&nv, 0, sizeof nv);
  pthread_cond_destroy(&smp.cv);
  g_power = 0;
}

static void sample_once(void) {
  unsigned int mw = 0, mhz = 0;
  nvmlMemory_t m;
  nvmlReturn_t r = nv.power(nv.dev, &mw);
  if (r == NVML_SUCCESS) {
    smp.power_mw += mw;
    smp.power_n++;
  } else if (!smp.power_err) {
    smp.power_err = (int)r;
  }
  r = nv.clock(nv.dev, NVML_CLOCK_SM, &mhz);
  if (r == NVML_SUCCESS) {
    smp.clock_mhz += mhz;
    smp.clock_n++;
  } else if (!smp.clock_err) {
    smp.clock_err = (int)r;
  }
  r = nv.memory(nv.dev, &m);
  if (r == NVML_SUCCESS) {
    if (m.used > smp.mem_used) smp.mem_used = m.used;
    smp.mem_n++;
  } else if (!smp.mem_err) {
    smp.mem_err = (int)r;
  }
}

static int ts_before(const struct timespec *a, const struct timespec *b) {
  return a->tv_sec < b->tv_sec || (a->tv_sec == b->tv_sec && a->tv_nsec < b->tv_nsec);
}

static void ts_add_period(struct timespec *t) {
  t->tv_nsec += kPowerPeriodNs;
  if (t->tv_nsec >= 1000000000L) {
    t->tv_nsec -= 1000000000L;
    t->tv_sec++;
  }
}

/* Samples at t0 + 5 ms, t0 + 10 ms, ... until told to stop; a region shorter
 * than 5 ms gets no sample.  The wait is on a condition variable (on
 * CLOCK_MONOTONIC), so stopping does not wait out the period. */
static void *sampler_main(void *arg) {
  (void)arg;
  struct timespec next, now;
  clock_gettime(CLOCK_MONOTONIC, &next);
  pthread_mutex_lock(&smp.mu);
  for (;;) {
    ts_add_period(&next);
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (ts_before(&next, &now)) { /* the last read was slow: go on from now, no burst */
      next = now;
      ts_add_period(&next);
    }
    int rc = 0;
    while (!smp.stop && rc != ETIMEDOUT) {
      rc = pthread_cond_timedwait(&smp.cv, &smp.mu, &next);
      if (rc != 0 && rc != ETIMEDOUT) smp.stop = 1; /* cannot wait: end quietly */
    }
    if (smp.stop) break;
    pthread_mutex_unlock(&smp.mu);
    sample_once();
    pthread_mutex_lock(&smp.mu);
  }
  pthread_mutex_unlock(&smp.mu);
  return NULL;
}

static double g_power_t0_us;

void bench_power_begin(void) {
  if (!g_power) return;
  smp.stop = 0;
  smp.power_n = smp.clock_n = smp.mem_n = 0;
  smp.power_mw = smp.clock_mhz = 0;
  smp.mem_used = 0;
  smp.power_err = smp.clock_err = smp.mem_err = 0;
  g_power_t0_us = bench_now_us();
  smp.running = pthread_create(&smp.thread, NULL, sampler_main, NULL) == 0;
  if (!smp.running) {
    static int warned = 0;
    if (!warned++)
      fprintf(stderr, "gko-bench: --power: cannot start the sampling thread; power shows -\n");
  }
}

static void warn_once(int *warned, int n, int err, const char *call, const char *cols) {
  if (n == 0 && err && !*warned) {
    *warned = 1;
    fprintf(stderr, "gko-bench: --power: %s: %s; %s show -\n", call, nvml_error(err), cols);
  }
}

void bench_power_end(double dev_us, const char *what) {
  if (!g_power) return;
  if (smp.running) {
    pthread_mutex_lock(&smp.mu);
    smp.stop = 1;
    pthread_cond_signal(&smp.cv);
    pthread_mutex_unlock(&smp.mu);
    pthread_join(smp.thread, NULL);
    smp.running = 0;
  }
  bench_power_t *p = &g_last_power;
  p->fresh = 1;
  p->region_ms = (bench_now_us() - g_power_t0_us) * 1e-3;
  p->power_n = smp.power_n;
  p->watts = smp.power_n ? smp.power_mw * 1e-3 / smp.power_n : 0;
  p->clock_n = smp.clock_n;
  p->sm_mhz = smp.clock_n ? smp.clock_mhz / smp.clock_n : 0;
  p->mem_n = smp.mem_n;
  p->mem_mib = smp.mem_n ? (double)smp.mem_used / (1024.0 * 1024.0) : 0;
  static int warned_power, warned_clock, warned_mem;
  warn_once(&warned_power, smp.power_n, smp.power_err, "nvmlDeviceGetPowerUsage",
            "power_W and J/call");
  warn_once(&warned_clock, smp.clock_n, smp.clock_err, "nvmlDeviceGetClockInfo(SM)", "sm_MHz");
  warn_once(&warned_mem, smp.mem_n, smp.mem_err, "nvmlDeviceGetMemoryInfo", "mem_MiB");
  if (g_power_lines) {
    printf("# power, %s (%d samples in %.0f ms):%s\n", what, p->power_n, p->region_ms,
           bench_power_cols(dev_us));
    fflush(stdout);
  }
}

const char *bench_power_head(void) {
  static char buf[64];
  if (!g_power) return "";
  snprintf(buf, sizeof buf, " %7s %6s %7s %10s", "power_W", "sm_MHz", "mem_MiB", "J/call");
  return buf;
}

/* The last region's power, clock, memory and energy per call as text: the
 * table's (json 0: "-" for what was not sampled) or the JSON's (json 1:
 * null, and more digits). */
typedef struct {
  char w[24], c[24], m[24], j[32];
} power_text;

static power_text power_fields(double dev_us, int json) {
  const bench_power_t *p = &g_last_power;
  const int have = p->fresh;
  const char *none = json ? "null" : "-";
  power_text t;
  snprintf(t.w, sizeof t.w, "%s", none);
  snprintf(t.c, sizeof t.c, "%s", none);
  snprintf(t.m, sizeof t.m, "%s", none);
  snprintf(t.j, sizeof t.j, "%s", none);
  if (have && p->power_n) snprintf(t.w, sizeof t.w, json ? "%.2f" : "%.1f", p->watts);
  if (have && p->clock_n) snprintf(t.c, sizeof t.c, "%.0f", p->sm_mhz);
  if (have && p->mem_n) snprintf(t.m, sizeof t.m, "%.0f", p->mem_mib);
  if (have && p->power_n && dev_us > 0)
    snprintf(t.j, sizeof t.j, json ? "%.4g" : "%.3e", p->watts * dev_us * 1e-6);
  return t;
}

/* " %7.1f %6.0f %7.0f %10.3e", with "-" for what was not sampled */
const char *bench_power_cols(double dev_us) {
  static char buf[128];
  if (!g_power) return "";
  const power_text t = power_fields(dev_us, 0);
  snprintf(buf, sizeof buf, " %7s %6s %7s %10s", t.w, t.c, t.m, t.j);
  return buf;
}

/* JSON fields with a leading ", "; null for what was not sampled */
void bench_power_json(FILE *f, double dev_us) {
  if (!g_power) return;
  const power_text t = power_fields(dev_us, 1);
  fprintf(f,
          ", \"power_w\": %s, \"sm_mhz\": %s, \"mem_used_mib\": %s, "
          "\"energy_j_per_call\": %s, \"power_samples\": %d",
          t.w, t.c, t.m, t.j, g_last_power.fresh ? g_last_power.power_n : 0);
}

static uint64_t g_rng = 0x243F6A8885A308D3ull;
double bench_uniform(double lo, double hi) {
  g_rng ^= g_rng << 13;
  g_rng ^= g_rng >> 7;
  g_rng ^= g_rng << 17;
  return lo + (hi - lo) * (double)(g_rng >> 11) / 9007199254740992.0;
}

void bench_fill_repeat(void *dst, const void *blk, size_t n, size_t es) {
  for (size_t off = 0; off < n; off += kBenchBlk) {
    size_t m = n - off < kBenchBlk ? n - off : kBenchBlk;
    CK(cudaMemcpy((char *)dst + off * es, blk, m * es, cudaMemcpyHostToDevice));
  }
}

double bench_act_ref(int act, double x) {
  if (act == 1) return x > 0 ? x : 0;
  if (act == 2) return x * 0.5 * erfc(-x / sqrt(2.0));
  if (act == 3) {
    const double a = 1.5957691216057308, b = a * 0.044715;
    double u2 = x * (a + b * x * x), q = exp(-fabs(u2));
    return x * (u2 >= 0 ? 1.0 / (1.0 + q) : q / (1.0 + q));
  }
  return x;
}

const char *const bench_epilogue_names[8] = {"none", "bias", "relu", "bias-relu",
                                             "gelu", "bias-gelu", "gelu-tanh", "bias-gelu-tanh"};

int bench_parse_epilogue(const char *s) {
  for (int i = 0; i < 8; i++)
    if (!strcmp(s, bench_epilogue_names[i])) return i;
  return -1;
}

const char *bench_dtype_name(gko_dtype_t d) {
  return d == GKO_DTYPE_F32 ? "f32" : d == GKO_DTYPE_F16 ? "f16" : "bf16";
}

int bench_parse_dtype(const char *s, gko_dtype_t *d) {
  if (!strcmp(s, "f32")) *d = GKO_DTYPE_F32;
  else if (!strcmp(s, "f16")) *d = GKO_DTYPE_F16;
  else if (!strcmp(s, "bf16")) *d = GKO_DTYPE_BF16;
  else return 0;
  return 1;
}

int bench_parse_dtype_tf32(const char *s, gko_dtype_t *d, int *tf32) {
  if (!strcmp(s, "tf32")) {
    *d = GKO_DTYPE_F32;
    *tf32 = 1;
    return 1;
  }
  return bench_parse_dtype(s, d);
}

float bench_to_float(gko_dtype_t d, const void *a, size_t i) {
  if (d == GKO_DTYPE_F32) return ((const float *)a)[i];
  uint16_t b = ((const uint16_t *)a)[i];
  uint32_t bits;
  if (d == GKO_DTYPE_BF16) {
    bits = (uint32_t)b << 16;
  } else {
    uint32_t sign = (uint32_t)(b >> 15) << 31, e = (b >> 10) & 0x1f, m = b & 0x3ff;
    if (e == 0) return (sign ? -1.0f : 1.0f) * ldexpf((float)m, -24);
    bits = sign | (e == 31 ? 0x7f800000u | (m << 13) : ((e + 112) << 23) | (m << 13));
  }
  float f;
  memcpy(&f, &bits, 4);
  return f;
}

/* Round to nearest even; f16 values out of range saturate to inf, values
 * below the normal range flush to zero (benchmark inputs stay normal). */
void bench_from_float(gko_dtype_t d, void *a, size_t i, float v) {
  if (d == GKO_DTYPE_F32) {
    ((float *)a)[i] = v;
    return;
  }
  uint32_t bits;
  memcpy(&bits, &v, 4);
  if (d == GKO_DTYPE_BF16) {
    ((uint16_t *)a)[i] = (uint16_t)((bits + 0x7fff + ((bits >> 16) & 1)) >> 16);
    return;
  }
  uint32_t sign = (bits >> 16) & 0x8000;
  int e = (int)((bits >> 23) & 0xff) - 127 + 15;
  uint32_t m = bits & 0x7fffff;
  if (e <= 0) {
    ((uint16_t *)a)[i] = (uint16_t)sign;
    return;
  }
  if (e >= 31) {
    ((uint16_t *)a)[i] = (uint16_t)(sign | 0x7c00);
    return;
  }
  uint32_t h = ((uint32_t)e << 10) | (m >> 13);
  uint32_t rest = m & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (h & 1))) h++;
  ((uint16_t *)a)[i] = (uint16_t)(sign | h);
}

/* one replay of a graph of one fn call + sync, host clock, median of g_repeat */
double graph_latency(run_fn fn, void *ctx, cudaStream_t s) {
  cudaGraph_t g;
  cudaGraphExec_t ge;
  CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  fn(ctx, s);
  CK(cudaStreamEndCapture(s, &g));
  CK(cudaGraphInstantiate(&ge, g, 0));
  double *l = malloc(sizeof(double) * g_repeat);
  if (!l) {
    fprintf(stderr, "gko-bench: out of host memory\n");
    exit(1);
  }
  for (int i = 0; i < 3; i++) CK(cudaGraphLaunch(ge, s));
  CK(cudaStreamSynchronize(s));
  for (int r = 0; r < g_repeat; r++) {
    const double t0 = bench_now_us();
    CK(cudaGraphLaunch(ge, s));
    CK(cudaStreamSynchronize(s));
    l[r] = bench_now_us() - t0;
  }
  const double med = bench_median(l, g_repeat);
  free(l);
  cudaGraphExecDestroy(ge);
  cudaGraphDestroy(g);
  return med;
}
