/* bench.h -- what gko-bench's operator modules share: timing, the measured
 * ceilings, the report table and its summary, the JSON rows, random numbers,
 * dtype conversion and the host references' pieces. */
#ifndef GKO_BENCH_H
#define GKO_BENCH_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "gko.h"

#define CK(call)                                                                    \
  do {                                                                              \
    cudaError_t e_ = (call);                                                        \
    if (e_ != cudaSuccess) {                                                        \
      fprintf(stderr, "gko-bench: %s failed: %s\n", #call, cudaGetErrorString(e_));  \
      exit(1);                                                                      \
    }                                                                               \
  } while (0)

#define GK(call)                                                                    \
  do {                                                                              \
    gko_status_t s_ = (call);                                                       \
    if (s_ != GKO_STATUS_SUCCESS) {                                                 \
      fprintf(stderr, "gko-bench: %s -> %s: %s\n", #call, gko_status_name(s_),      \
              gko_last_error_detail());                                             \
      exit(1);                                                                      \
    }                                                                               \
  } while (0)

extern int g_repeat;        /* timed repetitions (--repeat) */
extern int g_verbose;       /* --verbose: plan descriptions and details under the rows */
extern double g_copy_gbs;   /* measured device-to-device copy, read + write */

typedef void (*run_fn)(void *ctx, cudaStream_t s);

/* Device time per call (µs, back-to-back launches between events, median)
 * and call latency (µs, one call + stream sync on the host clock, median).
 * Both also set g_last_host_us: host time per call (µs, wall time of the
 * back-to-back enqueues divided by their number, median), which report()
 * prints; time_case_host returns it in *host_us as well. */
void time_case(run_fn fn, void *ctx, cudaStream_t s, double *dev_us, double *lat_us);
void time_case_host(run_fn fn, void *ctx, cudaStream_t s, double *dev_us, double *lat_us,
                    double *host_us);
extern double g_last_host_us;
/* Device time per call (µs) by CUDA-graph replay: `calls` calls captured
 * into one graph, replayed g_repeat times between events, median. */
double time_graph(run_fn fn, void *ctx, cudaStream_t s, int calls);
/* Latency of a graph: one replay of a graph holding one fn call + stream
 * sync on the host clock, median of g_repeat. */
double graph_latency(run_fn fn, void *ctx, cudaStream_t s);
double measure_copy(cudaStream_t s);
/* The host clock (CLOCK_MONOTONIC, µs) and the median of n values (sorts v). */
double bench_now_us(void);
double bench_median(double *v, int n);
/* The smallest stream operation: one 4-byte cudaMemsetAsync, timed like
 * every case (device time, and latency = the call + cudaStreamSynchronize on
 * the host clock).  Its latency minus its device time is what launching and
 * waiting cost on this machine, whatever the library: the floor under every
 * row's latency_us - device_us. */
void measure_launch_floor(cudaStream_t s, double *dev_us, double *lat_us);

/* ---- the table ------------------------------------------------------------------
 * One line per case, every module the same columns:
 *   op shape dtype backend dev_us lat_us RATE of_roof vs_ref max_err [power columns]
 * RATE: the table's unit (GB/s or TFLOP/s); of_roof: attained / the row's
 * ceiling (each table's legend says which); vs_ref: the reference's time /
 * this row's (> 1: faster than the reference); "-" where a column does not
 * apply.  With --verbose a row's detail and plan description follow it on
 * indented lines.  --json gets every field (the modules write it). */

/* Starts a module's table: prints the legend lines (legend: "\n"-separated,
 * each printed after "# "; NULL: none) and the header.  shape_w, backend_w:
 * those columns' widths; rate: the rate column's header; roof: what of_roof
 * is a fraction of (for the summary); power: the rows carry the --power
 * columns (modules whose power shows in "# power" lines pass 0). */
void bench_table(const char *module, int shape_w, int backend_w, const char *rate,
                 const char *roof, int power, const char *legend);

typedef struct {
  const char *op, *shape, *dtype, *backend;
  double dev_us, lat_us; /* < 0: "-" */
  double rate;           /* in the table's unit; <= 0: "-" */
  double of_roof;        /* attained / ceiling, a fraction; < 0: "-" */
  double vs_ref;         /* the reference's time / this row's; <= 0: "-" */
  const char *ref;       /* what vs_ref compares with (the summary's group) */
  double max_err;        /* < 0: "-" */
  int not_run;           /* no measurement (e.g. a plan that cannot be made): all "-" */
  int reference;         /* the reference's own row (not gko's): left out of the summary */
  const char *detail;    /* --verbose: an indented line after the row */
  const char *plan;      /* --verbose: "plan: ..." after the row */
} bench_row_t;
/* Prints one row (the header first if no table was started) and adds it
 * to the summary. */
void bench_row(const bench_row_t *r);

/* A value for the summary, higher is better: group (e.g. "spmm vs
 * cuSPARSE"), percent: the value is a fraction printed as %, else a ratio
 * printed as x; label: the case, named where it is the lowest. */
void bench_stat(const char *group, int percent, double v, const char *label);
/* The geometric mean, minimum and maximum of every group of two or more
 * rows so far (nothing when there is none). */
void bench_summary(void);

/* JSON rows: bench_json_begin writes the separator (a comma before every row
 * but the first, whichever module wrote it) and the row's opening brace;
 * bench_json_str writes , "key": "value" with value escaped. */
void bench_json_begin(void);
void bench_json_str(const char *key, const char *value);

/* One row of the table (and of the JSON file) for the modules that time one
 * region per row: rate GB/s = bytes / dev_us, of_roof = of the copy
 * bandwidth, the host time per call (g_last_host_us) in the JSON.  bytes:
 * the fewest bytes the op must move.  With --power the row also carries the
 * power columns of the timed region measured just before it. */
extern FILE *g_json;
void report(const char *op, const char *shape, const char *dtype, const char *form,
            double dev_us, double lat_us, double bytes, double max_err);
/* report() with more: the table's op, shape and backend (NULL: op, shape,
 * form), vs_ref and its reference, the --verbose lines; plan also goes to
 * the JSON ("plan") and vs_ref > 0 too ("vs_ref"). */
typedef struct {
  const char *op, *shape, *backend;
  double vs_ref;
  const char *ref;
  int reference;
  const char *detail, *plan;
} report_extra;
void report_ex(const char *op, const char *shape, const char *dtype, const char *form,
               double dev_us, double lat_us, double bytes, double max_err,
               const report_extra *x);

/* --power: NVML (libnvidia-ml.so.1, loaded with dlopen at run time) sampled
 * every ~5 ms by a background thread while a timed region runs: the
 * back-to-back device-time loop of time_case / time_case_host and the
 * replay loop of time_graph (not the warm-up, not the latency loop).
 * Nothing is loaded or started unless bench_power_init() succeeded. */
typedef struct {
  int fresh;         /* set by each timed region, cleared by report() */
  int power_n;       /* successful power reads (0: the columns print "-") */
  double watts;      /* average board power draw over those reads */
  int clock_n;
  double sm_mhz;     /* average SM clock */
  int mem_n;
  double mem_mib;    /* device memory in use, the largest read (whole GPU) */
  double region_ms;  /* how long the sampled region ran */
} bench_power_t;
extern int g_power;              /* 1 once bench_power_init() found NVML and the GPU */
extern int g_power_lines;        /* the running module times two regions per row (gemm,
                                    conv): print a "# power" line after each timed
                                    region instead of the power columns */
extern bench_power_t g_last_power;
/* Maps the current CUDA device to its NVML device by PCI bus id.  On any
 * failure prints one line saying why, leaves g_power 0 and returns 0. */
int bench_power_init(void);
int bench_power_open(const char *pci_bus_id); /* the NVML part of bench_power_init */
void bench_power_close(void);
void bench_power_begin(void);
/* Stops the sampler; dev_us: device time per call of the region (for the
 * energy per call); what: the region, for the "# power" line. */
void bench_power_end(double dev_us, const char *what);
/* The power columns (header, values of the last region, JSON fields with a
 * leading comma); "" / nothing when --power is off. */
const char *bench_power_head(void);
const char *bench_power_cols(double dev_us);
void bench_power_json(FILE *f, double dev_us);

double bench_uniform(double lo, double hi);
/* Fills a device array of n elements (es bytes each) with a host block of
 * kBenchBlk elements repeated. */
enum { kBenchBlk = 1 << 20 };
void bench_fill_repeat(void *dst, const void *blk, size_t n, size_t es);
/* The epilogue's activation on the host (act: GKO_EPILOGUE_* >> 1: 0 none,
 * 1 relu, 2 gelu-erf, 3 gelu-tanh), float64. */
double bench_act_ref(int act, double x);
extern const char *const bench_epilogue_names[8]; /* indexed by GKO_EPILOGUE_* */
int bench_parse_epilogue(const char *s);          /* -1: unknown */
/* f32|f16|bf16 as bench_parse_dtype, and tf32 (f32 with *tf32 = 1). */
int bench_parse_dtype_tf32(const char *s, gko_dtype_t *d, int *tf32);
float bench_to_float(gko_dtype_t d, const void *a, size_t i);
void bench_from_float(gko_dtype_t d, void *a, size_t i, float v);
const char *bench_dtype_name(gko_dtype_t d);
int bench_parse_dtype(const char *s, gko_dtype_t *d);

/* Operator modules: one subcommand and one part of the default suite each.
 * argv holds the subcommand's own flags; return the number of failed
 * checks. */
int bench_gelu_cmd(gko_handle_t h, cudaStream_t s, int argc, char **argv);
int bench_gelu_suite(gko_handle_t h, cudaStream_t s);
int bench_gemm_cmd(gko_handle_t h, cudaStream_t s, int argc, char **argv);
int bench_gemm_suite(gko_handle_t h, cudaStream_t s);
int bench_conv_cmd(gko_handle_t h, cudaStream_t s, int argc, char **argv);
int bench_conv_suite(gko_handle_t h, cudaStream_t s);
int bench_spmm_cmd(gko_handle_t h, cudaStream_t s, int argc, char **argv);
int bench_spmm_suite(gko_handle_t h, cudaStream_t s);
int bench_model_cmd(gko_handle_t h, cudaStream_t s, int argc, char **argv);
int bench_model_suite(gko_handle_t h, cudaStream_t s);
int bench_fp8_cmd(gko_handle_t h, cudaStream_t s, int argc, char **argv);
int bench_fp8_suite(gko_handle_t h, cudaStream_t s);

/* bench_minilm.c: the MiniLM encoder at each shape (B sentences x S tokens)
 * from the model in dir (a line and 0 when it is absent); peak: the matrix
 * rate of dt in TFLOP/s.  Returns the number of failed checks. */
int bench_minilm(gko_handle_t h, cudaStream_t s, const int (*shapes)[2], int ns, gko_dtype_t dt,
                 const char *dir, double peak);

#endif
