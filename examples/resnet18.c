/* resnet18.c -- ResNet-18 inference end to end through gko (util/resnet18.h:
 * BatchNorm folded into the convolutions at load time, every layer planned
 * once, the forward pass captured into one CUDA graph and replayed), checked
 * against an independent result:
 *
 *   build/bin/resnet18 [--batch N] [--dtype f16|bf16|f32] [--layout nhwc|nchw]
 *       deterministic random weights and images; the logits of the first and
 *       the last image against the float64 host reference (rn18_reference)
 *       computed with the same rounded weights and images;
 *   build/bin/resnet18 --weights W.safetensors --input X.safetensors
 *                      --expect Y.safetensors [--dtype ...] [--layout ...]
 *       torchvision's state_dict (examples/python/export_resnet18.py writes
 *       the three files: the weights, "input" [N][3][224][224] f32 NCHW and
 *       torch's "logits" [N][1000], computed in float64, stored as f32); every image's logits against
 *       torch's: top-1 identical and the relative error within tolerance.
 *
 * Then it replays the graph and prints the time per batch (CUDA events).
 * Exit status: 0 PASS, 1 FAIL, 2 no usable GPU (the library says why). */
#include <cuda_runtime_api.h>
#include <gko.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../util/resnet18.h"
#include "../util/safetensors.h"
#include "example.h"

/* the tolerance (rn18_tolerance, derived in util/resnet18.c) applies to both
 * checks: the weights torch used are the unrounded ones, which adds about
 * as much error as the rounding of the activations */
static uint64_t g_rng = 0x2E5E7181ull; /* the random images' seed */

/* rn18_fetch_fn over a safetensors file */
static int st_fetch(void *ctx, const char *name, int ndim, const int64_t *shape, float *out, char *err,
                    size_t n) {
  const st_tensor *t = st_find(ctx, name);
  if (!t) {
    snprintf(err, n, "the weights have no tensor \"%s\"", name);
    return -1;
  }
  int same = t->ndim == ndim;
  for (int i = 0; i < ndim && same; i++) same = t->shape[i] == shape[i];
  if (!same) {
    snprintf(err, n, "tensor \"%s\" has %d dimensions [%lld, ...], expected %d [%lld, ...]", name,
             t->ndim, t->ndim ? (long long)t->shape[0] : 0LL, ndim, (long long)shape[0]);
    return -1;
  }
  if (st_to_float(t, out)) {
    snprintf(err, n, "tensor \"%s\" is %s, not a floating-point type", name, st_dtype_name(t->dtype));
    return -1;
  }
  return 0;
}

static void load_or_die(const char *path, st_file *f) {
  char err[512];
  if (st_open(path, f, err, sizeof err)) {
    printf("FAIL: %s\n", err);
    exit(1);
  }
}

/* the tensor `name` of shape [*, dims...] as floats; *lead gets its first dimension */
static float *tensor_or_die(const st_file *f, const char *file, const char *name, int ndim,
                            const int64_t *tail, int64_t *lead) {
  const st_tensor *t = st_find(f, name);
  int ok = t && t->ndim == ndim && t->shape[0] >= 1;
  for (int i = 1; ok && i < ndim; i++) ok = t->shape[i] == tail[i - 1];
  if (!ok) {
    printf("FAIL: %s: no tensor \"%s\" of shape [N, %lld, ...] (N >= 1)\n", file, name, (long long)tail[0]);
    exit(1);
  }
  float *v = xmalloc((size_t)t->numel * sizeof *v);
  if (st_to_float(t, v)) {
    printf("FAIL: %s: \"%s\" is %s, not a floating-point type\n", file, name, st_dtype_name(t->dtype));
    exit(1);
  }
  *lead = t->shape[0];
  return v;
}

static int argmax(const float *v, int n) {
  int b = 0;
  for (int i = 1; i < n; i++)
    if (v[i] > v[b]) b = i;
  return b;
}

/* relative 2-norm error of one image's logits; *top1 set when argmax agrees,
 * *margin: the reference's gap between its two largest logits, relative to
 * its 2-norm */
static double compare(const float *y, const float *ref, int *top1, double *margin) {
  double num = 0, den = 0;
  for (int j = 0; j < RN18_CLASSES; j++) {
    num += ((double)y[j] - ref[j]) * ((double)y[j] - ref[j]);
    den += (double)ref[j] * ref[j];
  }
  const int best = argmax(ref, RN18_CLASSES);
  double second = -INFINITY;
  for (int j = 0; j < RN18_CLASSES; j++)
    if (j != best && ref[j] > second) second = ref[j];
  *top1 = argmax(y, RN18_CLASSES) == best;
  *margin = (ref[best] - second) / sqrt(den);
  return sqrt(num / den);
}

int main(int argc, char **argv) {
  const char *weights = NULL, *input = NULL, *expect = NULL;
  int batch = 2;
  gko_dtype_t dt = GKO_DTYPE_F16;
  gko_conv_layout_t layout = GKO_CONV_LAYOUT_NHWC;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--weights") && v) weights = v, i++;
    else if (!strcmp(a, "--input") && v) input = v, i++;
    else if (!strcmp(a, "--expect") && v) expect = v, i++;
    else if (!strcmp(a, "--batch") && v) batch = atoi(v), i++;
    else if (!strcmp(a, "--dtype") && v) {
      dt = !strcmp(v, "f32") ? GKO_DTYPE_F32 : !strcmp(v, "bf16") ? GKO_DTYPE_BF16 : GKO_DTYPE_F16;
      if (strcmp(v, "f32") && strcmp(v, "bf16") && strcmp(v, "f16")) batch = -1;
      i++;
    } else if (!strcmp(a, "--layout") && v) {
      layout = !strcmp(v, "nchw") ? GKO_CONV_LAYOUT_NCHW : GKO_CONV_LAYOUT_NHWC;
      if (strcmp(v, "nchw") && strcmp(v, "nhwc")) batch = -1;
      i++;
    } else batch = -1;
  }
  if (batch < 1 || (weights || input || expect) != (weights && input && expect)) {
    fprintf(stderr,
            "usage: resnet18 [--batch N] [--dtype f16|bf16|f32] [--layout nhwc|nchw]\n"
            "       resnet18 --weights W.safetensors --input X.safetensors --expect Y.safetensors"
            " [--dtype ...] [--layout ...]\n");
    return 1;
  }
  int device;
  int64_t cc;
  gko_handle_t h = example_start("resnet18", &device, &cc);
  static const char *const kDt[] = {"f32", "f16", "bf16"};

  rn18_params p;
  float *x, *ref = NULL;
  char err[512];
  if (weights) {
    st_file wf, xf, yf;
    load_or_die(weights, &wf);
    if (rn18_params_load(&p, st_fetch, &wf, err, sizeof err)) {
      printf("FAIL: %s: %s\n", weights, err);
      return 1;
    }
    st_close(&wf);
    load_or_die(input, &xf);
    load_or_die(expect, &yf);
    int64_t nx, ny;
    const int64_t xt[3] = {3, RN18_IMAGE, RN18_IMAGE}, yt[1] = {RN18_CLASSES};
    x = tensor_or_die(&xf, input, "input", 4, xt, &nx);
    ref = tensor_or_die(&yf, expect, "logits", 2, yt, &ny);
    st_close(&xf), st_close(&yf);
    if (nx != ny || nx > 4096) {
      printf("FAIL: %lld images in %s, %lld logit rows in %s (at most 4096)\n", (long long)nx, input,
             (long long)ny, expect);
      return 1;
    }
    batch = (int)nx;
    rn18_params_round(&p, dt);
  } else {
    if (rn18_params_random(&p, 0x5EED18ull)) {
      printf("FAIL: out of host memory\n");
      return 1;
    }
    rn18_params_round(&p, dt);
    const size_t len = (size_t)batch * 3 * RN18_IMAGE * RN18_IMAGE;
    x = xmalloc(len * sizeof *x);
    for (size_t i = 0; i < len; i++) {
      const float v = (float)uniform(&g_rng, -2, 2);
      x[i] = dt == GKO_DTYPE_F16 ? half_to_float(float_to_half(v))
             : dt == GKO_DTYPE_BF16 ? bf16_to_float(float_to_bf16(v)) : v;
    }
  }
  printf("resnet18: batch %d, %s, %s, %s weights (sm_%lld)\n", batch, kDt[dt],
         layout == GKO_CONV_LAYOUT_NHWC ? "NHWC" : "NCHW", weights ? weights : "random", (long long)cc);

  rn18_net *net;
  if (rn18_net_create(h, &p, dt, layout, batch, &net, err, sizeof err) ||
      rn18_net_set_input(net, x, err, sizeof err)) {
    printf("FAIL: %s\n", err);
    return 1;
  }
  int implicit = 0;
  for (int i = 0; i < rn18_net_layers(net); i++) implicit += rn18_net_layer(net, i)->path == GKO_CONV_PATH_IMPLICIT;
  printf("  %d layers (%d convolutions on implicit GEMM), %.1f MiB of device memory (workspace %.1f MiB)\n",
         rn18_net_layers(net), implicit, rn18_net_device_bytes(net) / 1048576.0,
         rn18_net_workspace_bytes(net) / 1048576.0);

  /* the forward pass as one CUDA graph */
  cudaStream_t s;
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CUDA(cudaMemsetAsync((void *)rn18_net_logits(net), 0xff, (size_t)batch * RN18_CLASSES * sizeof(float), s));
  CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  const int frc = rn18_net_forward(net, s, err, sizeof err);
  CUDA(cudaStreamEndCapture(s, &graph));
  if (frc) {
    printf("FAIL: %s\n", err);
    return 1;
  }
  CUDA(cudaGraphInstantiate(&exec, graph, 0));
  CUDA(cudaGraphLaunch(exec, s));
  CUDA(cudaStreamSynchronize(s));
  float *y = xmalloc((size_t)batch * RN18_CLASSES * sizeof *y);
  CUDA(cudaMemcpy(y, rn18_net_logits(net), (size_t)batch * RN18_CLASSES * sizeof *y, cudaMemcpyDeviceToHost));

  const double tol = rn18_tolerance(dt);
  int fails = 0;
  if (!ref) { /* the float64 host reference on the first and last image */
    ref = xmalloc((size_t)batch * RN18_CLASSES * sizeof *ref);
    for (int b = 0; b < batch; b += batch > 1 ? batch - 1 : 1) {
      double r64[RN18_CLASSES];
      rn18_reference(&p, x + (size_t)b * 3 * RN18_IMAGE * RN18_IMAGE, r64);
      for (int j = 0; j < RN18_CLASSES; j++) ref[(size_t)b * RN18_CLASSES + j] = (float)r64[j];
    }
  }
  double worst = 0;
  int agree = 0, checked = 0;
  for (int b = 0; b < batch; b += weights || batch == 1 ? 1 : batch - 1) {
    int top1;
    double margin;
    const float *yb = y + (size_t)b * RN18_CLASSES, *rb = ref + (size_t)b * RN18_CLASSES;
    const double e = compare(yb, rb, &top1, &margin);
    worst = e > worst ? e : worst;
    agree += top1, checked++;
    int finite = 1;
    for (int j = 0; j < RN18_CLASSES; j++) finite &= isfinite(yb[j]);
    /* top-1 may differ only where the reference's two best are closer than the error allows */
    const int bad = !finite || !(e <= tol) || (!top1 && margin > 2 * tol);
    if (bad || batch <= 4)
      printf("  image %d: relative error %.2e (tolerance %.0e), top-1 %d %s (reference %d, margin %.1e)\n", b, e,
             tol, argmax(yb, RN18_CLASSES), top1 ? "agrees" : "DIFFERS", argmax(rb, RN18_CLASSES), margin);
    fails += bad;
  }
  printf("  %d image%s checked against %s: top-1 agrees on %d, worst relative error %.2e\n", checked,
         checked == 1 ? "" : "s", weights ? "torchvision's logits (float64 math)" : "the float64 host reference", agree,
         worst);

  /* graph replay time */
  cudaEvent_t e0, e1;
  CUDA(cudaEventCreate(&e0));
  CUDA(cudaEventCreate(&e1));
  for (int i = 0; i < 3; i++) CUDA(cudaGraphLaunch(exec, s));
  enum { REPS = 20 };
  CUDA(cudaEventRecord(e0, s));
  for (int i = 0; i < REPS; i++) CUDA(cudaGraphLaunch(exec, s));
  CUDA(cudaEventRecord(e1, s));
  CUDA(cudaEventSynchronize(e1));
  float ms;
  CUDA(cudaEventElapsedTime(&ms, e0, e1));
  printf("  graph replay: %.3f ms per batch, %.0f images/s (gko-bench model resnet18 measures properly)\n",
         ms / REPS, batch * REPS * 1e3 / ms);

  CUDA(cudaEventDestroy(e0));
  CUDA(cudaEventDestroy(e1));
  CUDA(cudaGraphExecDestroy(exec));
  CUDA(cudaGraphDestroy(graph));
  CUDA(cudaStreamDestroy(s));
  rn18_net_destroy(net);
  rn18_params_free(&p);
  free(x), free(ref), free(y);
  GKO(gko_destroy(h));
  printf("%s\n", fails ? "FAIL" : "PASS");
  return fails ? 1 : 0;
}
