/* resnet18.c -- see resnet18.h. */
#include "resnet18.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "half.h"
#include "model_util.h"

#define BN_EPS 1e-5 /* torch.nn.BatchNorm2d's default */

/* name, its BatchNorm, C, K, R, stride, padding, input height */
static const struct {
  const char *name, *bn;
  int c, k, r, stride, pad, h;
} kConvs[RN18_CONVS] = {
    {"conv1", "bn1", 3, 64, 7, 2, 3, 224},
    {"layer1.0.conv1", "layer1.0.bn1", 64, 64, 3, 1, 1, 56},
    {"layer1.0.conv2", "layer1.0.bn2", 64, 64, 3, 1, 1, 56},
    {"layer1.1.conv1", "layer1.1.bn1", 64, 64, 3, 1, 1, 56},
    {"layer1.1.conv2", "layer1.1.bn2", 64, 64, 3, 1, 1, 56},
    {"layer2.0.conv1", "layer2.0.bn1", 64, 128, 3, 2, 1, 56},
    {"layer2.0.conv2", "layer2.0.bn2", 128, 128, 3, 1, 1, 28},
    {"layer2.0.downsample.0", "layer2.0.downsample.1", 64, 128, 1, 2, 0, 56},
    {"layer2.1.conv1", "layer2.1.bn1", 128, 128, 3, 1, 1, 28},
    {"layer2.1.conv2", "layer2.1.bn2", 128, 128, 3, 1, 1, 28},
    {"layer3.0.conv1", "layer3.0.bn1", 128, 256, 3, 2, 1, 28},
    {"layer3.0.conv2", "layer3.0.bn2", 256, 256, 3, 1, 1, 14},
    {"layer3.0.downsample.0", "layer3.0.downsample.1", 128, 256, 1, 2, 0, 28},
    {"layer3.1.conv1", "layer3.1.bn1", 256, 256, 3, 1, 1, 14},
    {"layer3.1.conv2", "layer3.1.bn2", 256, 256, 3, 1, 1, 14},
    {"layer4.0.conv1", "layer4.0.bn1", 256, 512, 3, 2, 1, 14},
    {"layer4.0.conv2", "layer4.0.bn2", 512, 512, 3, 1, 1, 7},
    {"layer4.0.downsample.0", "layer4.0.downsample.1", 256, 512, 1, 2, 0, 14},
    {"layer4.1.conv1", "layer4.1.bn1", 512, 512, 3, 1, 1, 7},
    {"layer4.1.conv2", "layer4.1.bn2", 512, 512, 3, 1, 1, 7},
};

static int out_size(int h, int r, int stride, int pad) { return (h + 2 * pad - r) / stride + 1; }
static size_t filter_elems(const rn18_conv *cv) { return (size_t)cv->k * cv->r * cv->r * cv->c; }

void rn18_params_init(rn18_params *p) {
  memset(p, 0, sizeof *p);
  for (int i = 0; i < RN18_CONVS; i++) {
    rn18_conv *cv = &p->conv[i];
    cv->name = kConvs[i].name, cv->bn = kConvs[i].bn;
    cv->c = kConvs[i].c, cv->k = kConvs[i].k, cv->r = kConvs[i].r;
    cv->stride = kConvs[i].stride, cv->pad = kConvs[i].pad, cv->h = kConvs[i].h;
  }
}

static int alloc_params(rn18_params *p) {
  for (int i = 0; i < RN18_CONVS; i++) {
    p->conv[i].w = malloc(filter_elems(&p->conv[i]) * sizeof(float));
    p->conv[i].b = malloc((size_t)p->conv[i].k * sizeof(float));
    if (!p->conv[i].w || !p->conv[i].b) return -1;
  }
  p->fc_w = malloc((size_t)RN18_CLASSES * RN18_FEATURES * sizeof(float));
  p->fc_b = malloc(RN18_CLASSES * sizeof(float));
  return p->fc_w && p->fc_b ? 0 : -1;
}

void rn18_params_free(rn18_params *p) {
  for (int i = 0; i < RN18_CONVS; i++) free(p->conv[i].w), free(p->conv[i].b);
  free(p->fc_w), free(p->fc_b);
  rn18_params_init(p);
}

/* w (KRSC) scaled per output channel and b set from the BatchNorm's terms */
static void fold(rn18_conv *cv, const float *gamma, const float *beta, const float *mean,
                 const float *var) {
  const size_t per_k = (size_t)cv->r * cv->r * cv->c;
  for (int k = 0; k < cv->k; k++) {
    const double scale = gamma[k] / sqrt((double)var[k] + BN_EPS);
    for (size_t j = 0; j < per_k; j++) cv->w[k * per_k + j] = (float)(cv->w[k * per_k + j] * scale);
    cv->b[k] = (float)(beta[k] - mean[k] * scale);
  }
}

/* splitmix64 (Steele, Lea, Flood, OOPSLA 2014) and Box-Muller */
static double next_uniform(uint64_t *s, double lo, double hi) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return lo + (hi - lo) * ((double)(z >> 11) * 0x1.0p-53);
}
static double next_normal(uint64_t *s) {
  const double u = next_uniform(s, 0x1.0p-53, 1.0), v = next_uniform(s, 0, 1);
  return sqrt(-2 * log(u)) * cos(6.283185307179586 * v);
}

int rn18_params_random(rn18_params *p, uint64_t seed) {
  rn18_params_init(p);
  if (alloc_params(p)) {
    rn18_params_free(p);
    return -1;
  }
  uint64_t s = seed;
  float bn[4][512];
  for (int i = 0; i < RN18_CONVS; i++) {
    rn18_conv *cv = &p->conv[i];
    const double std = sqrt(2.0 / ((double)cv->k * cv->r * cv->r)); /* Kaiming, fan-out */
    for (size_t j = 0; j < filter_elems(cv); j++) cv->w[j] = (float)(std * next_normal(&s));
    for (int k = 0; k < cv->k; k++) {
      bn[0][k] = (float)next_uniform(&s, 0.5, 1.5);
      bn[1][k] = (float)next_uniform(&s, -0.2, 0.2);
      bn[2][k] = (float)next_uniform(&s, -0.2, 0.2);
      bn[3][k] = (float)next_uniform(&s, 0.5, 2.0);
    }
    fold(cv, bn[0], bn[1], bn[2], bn[3]);
  }
  const double a = 1 / sqrt((double)RN18_FEATURES);
  for (size_t j = 0; j < (size_t)RN18_CLASSES * RN18_FEATURES; j++) p->fc_w[j] = (float)next_uniform(&s, -a, a);
  for (int j = 0; j < RN18_CLASSES; j++) p->fc_b[j] = (float)next_uniform(&s, -a, a);
  return 0;
}

int rn18_params_load(rn18_params *p, rn18_fetch_fn fetch, void *ctx, char *err, size_t n) {
  rn18_params_init(p);
  float *oihw = malloc((size_t)512 * 512 * 9 * sizeof(float));
  float *bn = malloc(4 * 512 * sizeof(float));
  int rc = !oihw || !bn || alloc_params(p) ? mu_fail(err, n, "out of host memory") : 0;
  char name[96];
  static const char *const kBn[4] = {"weight", "bias", "running_mean", "running_var"};
  for (int i = 0; i < RN18_CONVS && !rc; i++) {
    rn18_conv *cv = &p->conv[i];
    const int64_t shape[4] = {cv->k, cv->c, cv->r, cv->r};
    snprintf(name, sizeof name, "%s.weight", cv->name);
    rc = fetch(ctx, name, 4, shape, oihw, err, n);
    /* OIHW (torch) -> KRSC */
    const int c = cv->c, rr = cv->r * cv->r;
    for (int k = 0; k < cv->k && !rc; k++)
      for (int ci = 0; ci < c; ci++)
        for (int t = 0; t < rr; t++) cv->w[((size_t)k * rr + t) * c + ci] = oihw[((size_t)k * c + ci) * rr + t];
    for (int j = 0; j < 4 && !rc; j++) {
      const int64_t len = cv->k;
      snprintf(name, sizeof name, "%s.%s", cv->bn, kBn[j]);
      rc = fetch(ctx, name, 1, &len, bn + 512 * j, err, n);
    }
    for (int k = 0; k < cv->k && !rc; k++)
      if (!(bn[3 * 512 + k] >= 0)) rc = mu_fail(err, n, "%s.running_var[%d] is %g", cv->bn, k, bn[3 * 512 + k]);
    if (!rc) fold(cv, bn, bn + 512, bn + 1024, bn + 1536);
  }
  const int64_t fcw[2] = {RN18_CLASSES, RN18_FEATURES}, fcb = RN18_CLASSES;
  if (!rc) rc = fetch(ctx, "fc.weight", 2, fcw, p->fc_w, err, n);
  if (!rc) rc = fetch(ctx, "fc.bias", 1, &fcb, p->fc_b, err, n);
  free(oihw), free(bn);
  if (rc) rn18_params_free(p);
  return rc;
}

static float round_to(gko_dtype_t dt, float v) {
  if (dt == GKO_DTYPE_F16) return half_to_float(float_to_half(v));
  if (dt == GKO_DTYPE_BF16) return bf16_to_float(float_to_bf16(v));
  return v;
}
static void round_all(gko_dtype_t dt, float *a, size_t len) {
  for (size_t i = 0; i < len; i++) a[i] = round_to(dt, a[i]);
}

void rn18_params_round(rn18_params *p, gko_dtype_t dt) {
  for (int i = 0; i < RN18_CONVS; i++) {
    round_all(dt, p->conv[i].w, filter_elems(&p->conv[i]));
    round_all(dt, p->conv[i].b, (size_t)p->conv[i].k);
  }
  /* the classifier's weight has the network's dtype; its bias is f32 (the
   * GEMM's C/D type) */
  round_all(dt, p->fc_w, (size_t)RN18_CLASSES * RN18_FEATURES);
}

/* ---- the float64 reference (one image, HWC) -------------------------------- */

/* y = [relu](conv(x) + b [+ z]), x h x h x c, y oh x oh x k */
static double *ref_conv(const rn18_conv *cv, const double *x, const double *z, int relu) {
  const int h = cv->h, c = cv->c, k = cv->k, r = cv->r, oh = out_size(h, r, cv->stride, cv->pad);
  double *y = malloc((size_t)oh * oh * k * sizeof *y), *w = malloc(filter_elems(cv) * sizeof *w);
  if (!y || !w) {
    fprintf(stderr, "resnet18 reference: out of host memory\n");
    exit(1);
  }
  for (size_t j = 0; j < filter_elems(cv); j++) w[j] = cv->w[j];
  for (int oy = 0; oy < oh; oy++)
    for (int ox = 0; ox < oh; ox++) {
      double *out = y + ((size_t)oy * oh + ox) * k;
      for (int kk = 0; kk < k; kk++) out[kk] = cv->b[kk] + (z ? z[((size_t)oy * oh + ox) * k + kk] : 0);
      for (int ry = 0; ry < r; ry++)
        for (int rx = 0; rx < r; rx++) {
          const int iy = oy * cv->stride - cv->pad + ry, ix = ox * cv->stride - cv->pad + rx;
          if (iy < 0 || iy >= h || ix < 0 || ix >= h) continue;
          const double *px = x + ((size_t)iy * h + ix) * c;
          for (int kk = 0; kk < k; kk++) {
            const double *wk = w + (((size_t)kk * r + ry) * r + rx) * c;
            double acc = 0;
            for (int ci = 0; ci < c; ci++) acc += wk[ci] * px[ci];
            out[kk] += acc;
          }
        }
      if (relu)
        for (int kk = 0; kk < k; kk++) out[kk] = out[kk] > 0 ? out[kk] : 0;
    }
  free(w);
  return y;
}

void rn18_reference(const rn18_params *p, const float *x, double logits[RN18_CLASSES]) {
  const int hw = RN18_IMAGE * RN18_IMAGE;
  double *img = malloc((size_t)hw * 3 * sizeof *img);
  if (!img) exit(1);
  for (int c = 0; c < 3; c++)
    for (int i = 0; i < hw; i++) img[(size_t)i * 3 + c] = x[(size_t)c * hw + i];
  double *stem = ref_conv(&p->conv[0], img, NULL, 1); /* 112 x 112 x 64 */
  free(img);
  /* max pooling 3x3, stride 2, padding 1: 112 -> 56 */
  double *cur = malloc((size_t)56 * 56 * 64 * sizeof *cur);
  if (!cur) exit(1);
  for (int oy = 0; oy < 56; oy++)
    for (int ox = 0; ox < 56; ox++)
      for (int c = 0; c < 64; c++) {
        double m = -INFINITY;
        for (int ry = 0; ry < 3; ry++)
          for (int rx = 0; rx < 3; rx++) {
            const int iy = 2 * oy - 1 + ry, ix = 2 * ox - 1 + rx;
            if (iy >= 0 && iy < 112 && ix >= 0 && ix < 112) {
              const double v = stem[((size_t)iy * 112 + ix) * 64 + c];
              m = v > m ? v : m;
            }
          }
        cur[((size_t)oy * 56 + ox) * 64 + c] = m;
      }
  free(stem);
  for (int i = 1; i < RN18_CONVS;) {
    const int ds = i + 2 < RN18_CONVS && p->conv[i + 2].r == 1;
    double *t = ref_conv(&p->conv[i], cur, NULL, 1);
    double *sc = ds ? ref_conv(&p->conv[i + 2], cur, NULL, 0) : cur;
    double *y = ref_conv(&p->conv[i + 1], t, sc, 1);
    free(t);
    if (ds) free(sc);
    free(cur);
    cur = y;
    i += ds ? 3 : 2;
  }
  double f[RN18_FEATURES];
  for (int c = 0; c < RN18_FEATURES; c++) {
    double s = 0;
    for (int j = 0; j < 49; j++) s += cur[(size_t)j * RN18_FEATURES + c];
    f[c] = s / 49;
  }
  free(cur);
  for (int j = 0; j < RN18_CLASSES; j++) {
    double s = p->fc_b[j];
    for (int c = 0; c < RN18_FEATURES; c++) s += (double)p->fc_w[(size_t)j * RN18_FEATURES + c] * f[c];
    logits[j] = s;
  }
}

/* The reference keeps every activation in float64; the GPU rounds each
 * layer's output to the dtype (relative RMS error u / sqrt(3) for unit
 * roundoff u: f16 2.8e-4, bf16 2.3e-3), and against torch's logits from
 * unrounded weights also the folded weights (the same size again).  Through
 * 20 convolutions and 8 residual additions these independent errors add in
 * quadrature and reach the logits about unchanged in relative size (each
 * convolution is a well-conditioned sum of 27..4608 random-sign products),
 * so the expected error is about sqrt(20..40) times the per-layer one: f16
 * 1.5e-3, bf16 1.2e-2; f32 (f32 products and sums of at most 4608 terms)
 * about 1e-6.  The limits are 5-7x those and far below what a real mistake
 * gives (a wrong padding, fold or layout: 0.1 to 1). */
double rn18_tolerance(gko_dtype_t dt) {
  return dt == GKO_DTYPE_F16 ? 1e-2 : dt == GKO_DTYPE_BF16 ? 6e-2 : 1e-4;
}

/* ---- the network on the GPU ------------------------------------------------ */

enum { OP_CONV, OP_MAXPOOL, OP_AVGPOOL, OP_FC };
/* activation buffers: the input, the stem's output, three for the stages
 * (the block's input / output, its first convolution's output, the
 * downsampled shortcut), the pooled features, the logits */
enum { B_IN, B_STEM, B_S0, B_S1, B_S2, B_FEAT, B_LOGITS, B_COUNT };

typedef struct {
  int kind, conv, in, out, z;
} rn18_op;

struct rn18_net {
  gko_handle_t h;
  gko_dtype_t dtype;
  gko_conv_layout_t layout;
  int batch;
  gko_conv_plan_t plan[RN18_CONVS];
  void *w[RN18_CONVS], *b[RN18_CONVS];
  gko_pool_desc_t maxpool, avgpool;
  gko_gemm_plan_t fc;
  void *fc_w, *fc_b;
  void *buf[B_COUNT];
  void *ws;
  size_t ws_bytes, device_bytes;
  rn18_op op[RN18_MAX_OPS];
  rn18_layer layer[RN18_MAX_OPS];
  int ops;
};

static int add_op(rn18_net *net, int kind, int conv, int in, int out, int z, const char *name) {
  rn18_op *o = &net->op[net->ops];
  rn18_layer *l = &net->layer[net->ops++];
  o->kind = kind, o->conv = conv, o->in = in, o->out = out, o->z = z;
  snprintf(l->name, sizeof l->name, "%s", name);
  l->path = -1;
  return net->ops - 1;
}

static int plan_conv(rn18_net *net, const rn18_conv *cv, int i, int relu, char *err, size_t n) {
  gko_conv_desc_t d;
  MU_TRY(cv->name, gko_conv_desc_create(&d, net->dtype, net->layout, net->batch, cv->c, cv->h, cv->h,
                                         cv->k, cv->r, cv->r));
  gko_status_t s = GKO_STATUS_SUCCESS;
  const int64_t set[][2] = {{GKO_CONV_ATTR_STRIDE_H, cv->stride}, {GKO_CONV_ATTR_STRIDE_W, cv->stride},
                            {GKO_CONV_ATTR_PAD_H, cv->pad},       {GKO_CONV_ATTR_PAD_W, cv->pad},
                            {GKO_CONV_ATTR_EPILOGUE, relu ? GKO_EPILOGUE_BIAS_RELU : GKO_EPILOGUE_BIAS}};
  for (size_t j = 0; j < sizeof set / sizeof set[0] && s == GKO_STATUS_SUCCESS; j++)
    s = gko_conv_desc_set(d, (gko_conv_attr_t)set[j][0], set[j][1]);
  if (s == GKO_STATUS_SUCCESS) s = gko_conv_plan_create(net->h, d, &net->plan[i]);
  gko_conv_desc_destroy(d);
  if (s != GKO_STATUS_SUCCESS) return mu_gko_fail(err, n, cv->name, s);
  return 0;
}

/* the layer's work and bytes, path and workspace */
static void account(rn18_net *net, int opi, const rn18_params *p) {
  const rn18_op *o = &net->op[opi];
  rn18_layer *l = &net->layer[opi];
  const double es = (double)gko_dtype_size(net->dtype), nb = net->batch;
  if (o->kind == OP_CONV) {
    const rn18_conv *cv = &p->conv[o->conv];
    const double oh = out_size(cv->h, cv->r, cv->stride, cv->pad);
    const double y = nb * oh * oh * cv->k * es;
    l->flops = 2 * nb * oh * oh * cv->k * (double)cv->c * cv->r * cv->r;
    l->bytes = nb * cv->h * cv->h * cv->c * es + (double)filter_elems(cv) * es + y * (o->z >= 0 ? 2 : 1);
    gko_conv_plan_get(net->plan[o->conv], GKO_CONV_INFO_PATH, &l->path);
    gko_conv_workspace_size(net->plan[o->conv], &l->workspace);
  } else if (o->kind == OP_MAXPOOL) {
    l->bytes = nb * 64 * (112.0 * 112 + 56 * 56) * es;
  } else if (o->kind == OP_AVGPOOL) {
    l->bytes = nb * 512 * (49.0 + 1) * es;
  } else {
    l->flops = 2 * nb * RN18_CLASSES * RN18_FEATURES;
    l->bytes = (nb + RN18_CLASSES) * RN18_FEATURES * es + nb * RN18_CLASSES * 4.0;
    gko_gemm_workspace_size(net->fc, &l->workspace);
  }
}

static int build(rn18_net *net, const rn18_params *p, char *err, size_t n) {
  const size_t es = gko_dtype_size(net->dtype), nb = (size_t)net->batch;
  /* parameters: KRSC for NHWC, KCRS for NCHW */
  float *kcrs = malloc((size_t)512 * 512 * 9 * sizeof(float));
  if (!kcrs) return mu_fail(err, n, "out of host memory");
  int rc = 0;
  for (int i = 0; i < RN18_CONVS && !rc; i++) {
    const rn18_conv *cv = &p->conv[i];
    const float *w = cv->w;
    if (net->layout == GKO_CONV_LAYOUT_NCHW) {
      const int c = cv->c, rr = cv->r * cv->r;
      for (int k = 0; k < cv->k; k++)
        for (int t = 0; t < rr; t++)
          for (int ci = 0; ci < c; ci++) kcrs[((size_t)k * c + ci) * rr + t] = cv->w[((size_t)k * rr + t) * c + ci];
      w = kcrs;
    }
    rc = mu_upload(&net->device_bytes, &net->w[i], w, filter_elems(cv), net->dtype, err, n);
    if (!rc) rc = mu_upload(&net->device_bytes, &net->b[i], cv->b, (size_t)cv->k, net->dtype, err, n);
    if (!rc) rc = plan_conv(net, cv, i, cv->r != 1, err, n);
  }
  free(kcrs);
  if (rc) return rc;
  if (mu_upload(&net->device_bytes, &net->fc_w, p->fc_w, (size_t)RN18_CLASSES * RN18_FEATURES, net->dtype, err, n) ||
      mu_upload(&net->device_bytes, &net->fc_b, p->fc_b, RN18_CLASSES, GKO_DTYPE_F32, err, n))
    return -1;

  /* pooling descriptors */
  MU_TRY("maxpool", gko_pool_desc_create(&net->maxpool, GKO_POOL_MAX, net->dtype, net->layout,
                                          net->batch, 64, 112, 112, 3, 3));
  MU_TRY("maxpool", gko_pool_desc_set(net->maxpool, GKO_POOL_ATTR_STRIDE_H, 2));
  MU_TRY("maxpool", gko_pool_desc_set(net->maxpool, GKO_POOL_ATTR_STRIDE_W, 2));
  MU_TRY("maxpool", gko_pool_desc_set(net->maxpool, GKO_POOL_ATTR_PAD_H, 1));
  MU_TRY("maxpool", gko_pool_desc_set(net->maxpool, GKO_POOL_ATTR_PAD_W, 1));
  MU_TRY("avgpool", gko_pool_desc_create(&net->avgpool, GKO_POOL_AVG, net->dtype, net->layout,
                                          net->batch, RN18_FEATURES, 7, 7, 7, 7));
  /* the classifier: logits [batch][1000] f32 = features [batch][512] . fc_w^T + fc_b */
  gko_gemm_desc_t gd;
  MU_TRY("fc", gko_gemm_desc_create(&gd, net->dtype, GKO_DTYPE_F32, net->batch, RN18_CLASSES,
                                     RN18_FEATURES));
  gko_status_t s = gko_gemm_desc_set(gd, GKO_GEMM_ATTR_TRANSB, GKO_OP_T);
  if (s == GKO_STATUS_SUCCESS) s = gko_gemm_desc_set(gd, GKO_GEMM_ATTR_EPILOGUE, GKO_EPILOGUE_BIAS);
  if (s == GKO_STATUS_SUCCESS) s = gko_gemm_plan_create(net->h, gd, &net->fc);
  gko_gemm_desc_destroy(gd);
  if (s != GKO_STATUS_SUCCESS) return mu_gko_fail(err, n, "fc", s);

  /* activations */
  const size_t stage = nb * 56 * 56 * 64 * es; /* the largest stage tensor */
  const size_t sizes[B_COUNT] = {nb * 3 * RN18_IMAGE * RN18_IMAGE * es, nb * 64 * 112 * 112 * es, stage, stage, stage,
                                 nb * RN18_FEATURES * es, nb * RN18_CLASSES * sizeof(float)};
  for (int b = 0; b < B_COUNT; b++)
    if (mu_dalloc(&net->device_bytes, &net->buf[b], sizes[b], err, n)) return -1;

  /* the forward pass */
  add_op(net, OP_CONV, 0, B_IN, B_STEM, -1, "conv1");
  add_op(net, OP_MAXPOOL, -1, B_STEM, B_S0, -1, "maxpool");
  int cur = B_S0;
  char name[40];
  for (int i = 1; i < RN18_CONVS;) {
    const int ds = i + 2 < RN18_CONVS && p->conv[i + 2].r == 1;
    int t = -1, sc = -1;
    for (int b = B_S0; b <= B_S2; b++)
      if (b != cur && t < 0) t = b;
      else if (b != cur) sc = b;
    if (ds) {
      add_op(net, OP_CONV, i + 2, cur, sc, -1, p->conv[i + 2].name);
      add_op(net, OP_CONV, i, cur, t, -1, p->conv[i].name);
      snprintf(name, sizeof name, "%s+add", p->conv[i + 1].name);
      add_op(net, OP_CONV, i + 1, t, sc, sc, name);
      cur = sc;
    } else {
      add_op(net, OP_CONV, i, cur, t, -1, p->conv[i].name);
      snprintf(name, sizeof name, "%s+add", p->conv[i + 1].name);
      add_op(net, OP_CONV, i + 1, t, cur, cur, name);
    }
    i += ds ? 3 : 2;
  }
  add_op(net, OP_AVGPOOL, -1, cur, B_FEAT, -1, "avgpool");
  add_op(net, OP_FC, -1, B_FEAT, B_LOGITS, -1, "fc");
  for (int i = 0; i < net->ops; i++) {
    account(net, i, p);
    if (net->layer[i].workspace > net->ws_bytes) net->ws_bytes = net->layer[i].workspace;
  }
  if (net->ws_bytes && mu_dalloc(&net->device_bytes, &net->ws, net->ws_bytes, err, n)) return -1;
  /* the uploads from pageable memory may still be in flight on the legacy
   * stream, which the caller's (non-blocking) stream does not wait for */
  const cudaError_t e = cudaDeviceSynchronize();
  return e == cudaSuccess ? 0 : mu_fail(err, n, "cudaDeviceSynchronize: %s", cudaGetErrorString(e));
}

int rn18_net_create(gko_handle_t h, const rn18_params *p, gko_dtype_t dtype, gko_conv_layout_t layout,
                    int batch, rn18_net **out, char *err, size_t n) {
  if (batch < 1) return mu_fail(err, n, "batch %d: at least 1 image", batch);
  rn18_net *net = calloc(1, sizeof *net);
  if (!net) return mu_fail(err, n, "out of host memory");
  net->h = h, net->dtype = dtype, net->layout = layout, net->batch = batch;
  if (build(net, p, err, n)) {
    rn18_net_destroy(net);
    return -1;
  }
  *out = net;
  return 0;
}

void rn18_net_destroy(rn18_net *net) {
  if (!net) return;
  for (int i = 0; i < RN18_CONVS; i++) {
    gko_conv_plan_destroy(net->plan[i]);
    cudaFree(net->w[i]), cudaFree(net->b[i]);
  }
  gko_pool_desc_destroy(net->maxpool), gko_pool_desc_destroy(net->avgpool);
  gko_gemm_plan_destroy(net->fc);
  cudaFree(net->fc_w), cudaFree(net->fc_b), cudaFree(net->ws);
  for (int b = 0; b < B_COUNT; b++) cudaFree(net->buf[b]);
  free(net);
}

void *rn18_net_input(rn18_net *net) { return net->buf[B_IN]; }
const float *rn18_net_logits(const rn18_net *net) { return net->buf[B_LOGITS]; }
int rn18_net_layers(const rn18_net *net) { return net->ops; }
const rn18_layer *rn18_net_layer(const rn18_net *net, int i) { return &net->layer[i]; }
size_t rn18_net_device_bytes(const rn18_net *net) { return net->device_bytes; }
size_t rn18_net_workspace_bytes(const rn18_net *net) { return net->ws_bytes; }

int rn18_net_set_input(rn18_net *net, const float *x, char *err, size_t n) {
  const size_t hw = (size_t)RN18_IMAGE * RN18_IMAGE, img = 3 * hw, len = (size_t)net->batch * img;
  const size_t es = gko_dtype_size(net->dtype);
  float *t = malloc(len * sizeof *t);
  unsigned char *h = malloc(len * es);
  int rc = 0;
  if (!t || !h) rc = mu_fail(err, n, "out of host memory");
  for (size_t b = 0; b < (size_t)net->batch && !rc; b++)
    for (size_t c = 0; c < 3; c++)
      for (size_t i = 0; i < hw; i++)
        t[net->layout == GKO_CONV_LAYOUT_NHWC ? b * img + i * 3 + c : b * img + c * hw + i] = x[b * img + c * hw + i];
  for (size_t i = 0; i < len && !rc; i++) {
    if (net->dtype == GKO_DTYPE_F32) memcpy(h + 4 * i, &t[i], 4);
    else {
      const uint16_t v = net->dtype == GKO_DTYPE_F16 ? float_to_half(t[i]) : float_to_bf16(t[i]);
      memcpy(h + 2 * i, &v, 2);
    }
  }
  if (!rc) {
    cudaError_t e = cudaMemcpy(net->buf[B_IN], h, len * es, cudaMemcpyHostToDevice);
    if (e != cudaSuccess) rc = mu_fail(err, n, "cudaMemcpy: %s", cudaGetErrorString(e));
    else if ((e = cudaDeviceSynchronize()) != cudaSuccess) /* as in build() */
      rc = mu_fail(err, n, "cudaDeviceSynchronize: %s", cudaGetErrorString(e));
  }
  free(t), free(h);
  return rc;
}

int rn18_net_run_layer(rn18_net *net, int i, cudaStream_t s, char *err, size_t n) {
  const rn18_op *o = &net->op[i];
  void *const *b = net->buf;
  switch (o->kind) {
    case OP_CONV:
      MU_TRY(net->layer[i].name,
              gko_conv_execute_residual(net->plan[o->conv], 1.0f, b[o->in], net->w[o->conv], net->b[o->conv],
                                        o->z >= 0 ? 1.0f : 0.0f, o->z >= 0 ? b[o->z] : NULL, b[o->out],
                                        net->ws, net->ws_bytes, (gko_stream_t)s));
      break;
    case OP_MAXPOOL:
    case OP_AVGPOOL:
      MU_TRY(net->layer[i].name, gko_pool_forward(net->h, o->kind == OP_MAXPOOL ? net->maxpool : net->avgpool,
                                                   b[o->in], b[o->out], (gko_stream_t)s));
      break;
    default:
      MU_TRY("fc", gko_gemm_execute(net->fc, 1.0f, b[o->in], net->fc_w, 0.0f, NULL, b[o->out], net->fc_b,
                                     net->ws, net->ws_bytes, (gko_stream_t)s));
  }
  return 0;
}

int rn18_net_forward(rn18_net *net, cudaStream_t s, char *err, size_t n) {
  for (int i = 0; i < net->ops; i++)
    if (rn18_net_run_layer(net, i, s, err, n)) return -1;
  return 0;
}
