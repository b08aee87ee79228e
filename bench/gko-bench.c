/* gko-bench -- times gko's operators on the GPU and reports them against the
 * machine's own ceilings, measured in the same run.
 *
 *   gko-bench                       the default suite
 *   gko-bench --info                diagnostics + measured copy bandwidth
 *   gko-bench gelu [--n N] [--dtype f32|f16|bf16] [--approx erf|tanh] [--backward]
 *   gko-bench model resnet18 [--batch 1,32,128,256] [--dtype ...] [--layout ...]
 *   gko-bench model minilm [--shapes 1x32,32x128,256x128] [--dtype ...] [--model DIR]
 *   common flags (before the subcommand): --repeat R, --json FILE, --power, --verbose
 *
 * The table: one line per case (op, shape, dtype, backend, device and
 * latency µs, rate, fraction of the row's ceiling, ratio to the reference,
 * max error), a summary of the headline ratios at the end; --verbose adds
 * each row's details and plan description on indented lines; --json FILE
 * writes every field of every row, plan descriptions included.
 *
 * Device time: back-to-back calls between two CUDA events, median over R
 * repetitions, after warm-up.  Call latency: one call plus stream
 * synchronisation on the host clock, median over R.  --power samples NVML
 * (loaded at run time) while each device-time loop runs and adds average
 * power, SM clock, memory in use and energy per call.  Exit status: 0 success,
 * 1 a check failed or a call returned an error, 2 no usable GPU (the
 * library's diagnostic is printed). */
#include "bench.h"

extern FILE *g_json;

typedef struct {
  const char *name;
  int (*cmd)(gko_handle_t, cudaStream_t, int, char **);
  int (*suite)(gko_handle_t, cudaStream_t);
  int power_lines; /* times two regions per row: --power prints a "# power" line
                      after each timed region, not power columns in the row */
} module;

static const module kModules[] = {
    {"gelu", bench_gelu_cmd, bench_gelu_suite, 0},
    {"gemm", bench_gemm_cmd, bench_gemm_suite, 1},
    {"conv", bench_conv_cmd, bench_conv_suite, 1},
    {"spmm", bench_spmm_cmd, bench_spmm_suite, 0},
    {"model", bench_model_cmd, bench_model_suite, 0},
    {"fp8", bench_fp8_cmd, bench_fp8_suite, 0},
};
enum { kNumModules = sizeof kModules / sizeof kModules[0] };

static void usage(void) {
  fprintf(stderr,
          "usage: gko-bench [--info] [--repeat R] [--json FILE] [--suite a,b] [--power] "
          "[--verbose] [SUBCOMMAND [FLAGS]]\n"
          "  (no subcommand: the default suite of every module, or of those --suite names)\n"
          "  --json FILE: every field of every row (plan descriptions included) as a JSON array\n"
          "  --verbose: each row's details (host time, graph time, ...) and plan description\n"
          "    on indented lines under it\n"
          "  --power: sample NVML (libnvidia-ml.so.1) every ~5 ms during each timed loop; adds\n"
          "    power_W, sm_MHz, mem_MiB and J/call (power x device time per call) to the rows\n"
          "    (gemm and conv: a '# power' line per timed region) and to --json\n"
          "  gelu [--n N] [--dtype f32|f16|bf16] [--approx erf|tanh] [--backward]\n"
          "  conv --n N --c C --h H --w W --k K --r R --s S [--stride S] [--pad P] [--dilation D] "
          "[--groups G] [--layout nhwc|nchw] [--dtype f16|bf16|f32|tf32] [--epilogue E] "
          "[--max-chunk M] [--max-workspace BYTES]\n"
          "  spmm --matrix FILE | --rmat SCALE --degree D | --uniform ROWS --degree D [--n N] "
          "[--dtype f32|f16|bf16] [--kernel auto|row-split|merge] [--index int32|int64] "
          "[--no-cusparse]\n"
          "  spmm --suite full\n"
          "  gemm --m M --n N --k K [--dtype f16|bf16|f32|tf32] [--out f32] [--epilogue "
          "none|bias|relu|bias-relu|gelu|bias-gelu|gelu-tanh|bias-gelu-tanh] [--transa] "
          "[--transb] [--batch B] [--pad auto|never|always] [--fusion auto|required|never] "
          "[--backend auto|cublaslt|wmma|sm90] [--autotune] [--rotate] [--static] [--interleave]\n"
          "  model resnet18 [--batch 1,32,128,256] [--dtype f16|bf16|f32] [--layout nhwc|nchw] "
          "[--power]\n"
          "  model minilm [--shapes 1x32,32x128,256x128] [--dtype f16|bf16|f32] [--model DIR]\n"
          "  fp8 [--m M --n N --k K] [--fast] [--out bf16|f16|f32|e4m3]   (e4m3 GEMM vs bf16)\n"
          "  fp8 --decode [--m M --n N --k K] [--x bf16|f16] [--static]   (FP8 weights)\n"
          "  fp8 --suite   (GEMM shapes, decode, quantize and dequantize of 2^28 elements)\n"
          "  gemm --suite all|shapes|k1027|ffn1|square|decode|autotune|sm90|decode-sweep\n"
          "                |decode-sweep-xb\n");
}

int main(int argc, char **argv) {
  const char *json = NULL, *only = NULL;
  int info = 0, power = 0, i = 1;
  for (; i < argc && argv[i][0] == '-'; i++) {
    if (!strcmp(argv[i], "--info")) info = 1;
    else if (!strcmp(argv[i], "--repeat") && i + 1 < argc) g_repeat = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--json") && i + 1 < argc) json = argv[++i];
    else if (!strcmp(argv[i], "--suite") && i + 1 < argc) only = argv[++i];
    else if (!strcmp(argv[i], "--power")) power = 1;
    else if (!strcmp(argv[i], "--verbose")) g_verbose = 1;
    else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
      usage();
      return 0;
    } else {
      usage();
      return 1;
    }
  }
  const module *mod = NULL;
  if (i < argc) {
    for (int m = 0; m < kNumModules; m++)
      if (!strcmp(argv[i], kModules[m].name)) mod = &kModules[m];
    if (!mod) {
      usage();
      return 1;
    }
    i++;
  }
  if (g_repeat < 3) g_repeat = 3;
  gko_handle_t h = NULL;
  if (gko_create(&h) != GKO_STATUS_SUCCESS) {
    char why[1024];
    snprintf(why, sizeof why, "%s", gko_last_error_detail());
    if (info) { /* the build's side of the report needs no GPU */
      size_t need = 0;
      gko_diagnostics(-1, NULL, 0, &need);
      char *text = malloc(need ? need : 1);
      if (text && gko_diagnostics(-1, text, need, NULL) == GKO_STATUS_SUCCESS) printf("%s", text);
      free(text);
    }
    fprintf(stderr, "gko-bench: cannot run: %s\n", why);
    return 2;
  }
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  if (power) bench_power_init(); /* on failure: one line, and the run goes on without */
  g_copy_gbs = measure_copy(s);
  if (info) {
    size_t need = 0;
    gko_diagnostics(-1, NULL, 0, &need);
    char *text = malloc(need);
    gko_diagnostics(-1, text, need, NULL);
    printf("%s", text);
    free(text);
    printf("measured device-to-device copy: %.0f GB/s (bytes read + written, 1 GiB)\n",
           g_copy_gbs);
    double fdev = 0, flat = 0;
    measure_launch_floor(s, &fdev, &flat);
    printf("launch + synchronize floor (one 4-byte cudaMemsetAsync): latency %.1f us, device "
           "%.1f us, latency - device %.1f us\n",
           flat, fdev, flat - fdev);
    bench_power_close();
    return 0;
  }
  if (json) {
    g_json = fopen(json, "w");
    if (!g_json) {
      perror(json);
      return 1;
    }
    fprintf(g_json, "[");
  }
  printf("# copy bandwidth (device-to-device, read + write): %.0f GB/s\n", g_copy_gbs);
  {
    double fdev = 0, flat = 0;
    measure_launch_floor(s, &fdev, &flat);
    printf("# launch + sync floor (one 4-byte cudaMemsetAsync): latency %.1f us, device %.1f us; "
           "%.1f us: about the least\n#   lat_us - dev_us a call has here\n",
           flat, fdev, flat - fdev);
  }
  printf("# dev_us: device time per call (back-to-back calls between events, median); lat_us: one "
         "call + stream sync, median\n"
         "# of_roof: attained / the row's ceiling (each table says which); vs_ref: the reference's "
         "time / this row's (> 1: faster)\n");
  int fails = 0;
  if (mod) {
    g_power_lines = mod->power_lines;
    fails = mod->cmd(h, s, argc - i, argv + i);
  } else {
    for (int m = 0; m < kNumModules; m++) {
      if (only && !strstr(only, kModules[m].name)) continue;
      fprintf(stderr, "[%d/%d] %s\n", m + 1, (int)kNumModules, kModules[m].name);
      g_power_lines = kModules[m].power_lines;
      fails += kModules[m].suite(h, s);
    }
  }
  bench_summary();
  if (g_json) {
    fprintf(g_json, "\n]\n");
    fclose(g_json);
  }
  bench_power_close();
  cudaStreamDestroy(s);
  gko_destroy(h);
  return fails ? 1 : 0;
}
