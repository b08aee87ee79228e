/* resnet18.h -- ResNet-18 inference through gko's public API, for the
 * example (examples/resnet18.c) and gko-bench's model module.  The network
 * is torchvision's resnet18 (K. He, X. Zhang, S. Ren, J. Sun, "Deep
 * Residual Learning for Image Recognition", CVPR 2016: a 7x7/2 stem, 3x3/2
 * max pooling, four stages of two basic blocks with 64, 128, 256, 512
 * channels, global average pooling, a 512 -> 1000 linear layer), on
 * 224 x 224 RGB images, in eval mode:
 *   - each BatchNorm is folded into its convolution at load time:
 *     w' = w * gamma / sqrt(var + eps), b' = beta - mean * gamma / sqrt(var + eps);
 *   - conv + bias + ReLU is one gko_conv plan (GKO_EPILOGUE_BIAS_RELU), the
 *     block's second convolution adds the shortcut in its epilogue
 *     (gko_conv_execute_residual, beta 1, in place on the shortcut's buffer),
 *     the downsample shortcut is a 1x1/2 convolution with its BatchNorm
 *     folded (GKO_EPILOGUE_BIAS);
 *   - max and global average pooling are gko_pool_forward, the classifier a
 *     gko_gemm plan (f32 logits).
 * Every plan is made once; a forward pass enqueues 23 calls and allocates
 * nothing, so it can be captured into one CUDA graph. */
#ifndef GKO_UTIL_RESNET18_H
#define GKO_UTIL_RESNET18_H

#include <cuda_runtime_api.h>
#include <gko.h>
#include <stddef.h>
#include <stdint.h>

enum {
  RN18_CONVS = 20,     /* stem, 16 block convolutions, 3 downsample */
  RN18_IMAGE = 224,    /* input height and width */
  RN18_FEATURES = 512, /* pooled features */
  RN18_CLASSES = 1000,
  RN18_MAX_OPS = 24    /* 20 convolutions, 2 poolings, the classifier, slack */
};

/* One convolution: torch's module name, square filter, folded weights. */
typedef struct {
  const char *name; /* e.g. "conv1", "layer1.0.conv2", "layer2.0.downsample.0" */
  const char *bn;   /* its BatchNorm: "bn1", "layer1.0.bn2", "layer2.0.downsample.1" */
  int c, k, r, stride, pad, h; /* h: input height = width */
  float *w;                    /* K x R x R x C (KRSC), folded */
  float *b;                    /* K, the folded BatchNorm's shift */
} rn18_conv;

typedef struct {
  rn18_conv conv[RN18_CONVS]; /* in the order of rn18_conv_order below */
  float *fc_w;                /* [1000][512] */
  float *fc_b;                /* [1000] */
} rn18_params;

/* The shapes and names of every layer, no weights (p's arrays NULL). */
void rn18_params_init(rn18_params *p);
/* Deterministic random parameters from seed: torchvision's initialisation
 * (Kaiming-normal filters, fan-out, for ReLU; the linear layer uniform in
 * +-1/sqrt(512)) and random BatchNorm statistics and affine terms (gamma in
 * [0.5, 1.5), beta and mean in [-0.2, 0.2), var in [0.5, 2)), folded.
 * 0, or -1 out of host memory. */
int rn18_params_random(rn18_params *p, uint64_t seed);
/* Reads torchvision's state_dict through fetch (conv weights OIHW, the
 * BatchNorms' weight / bias / running_mean / running_var, fc.weight,
 * fc.bias; eps 1e-5 as torch's BatchNorm2d) and folds the BatchNorms.
 * fetch(ctx, name, ndim, shape, out, err, n) fills out with the tensor's
 * values as floats and returns 0 when it exists with exactly that shape, else
 * -1 with a reason in err.  0, or -1 with a reason in err. */
typedef int (*rn18_fetch_fn)(void *ctx, const char *name, int ndim, const int64_t *shape,
                             float *out, char *err, size_t n);
int rn18_params_load(rn18_params *p, rn18_fetch_fn fetch, void *ctx, char *err, size_t n);
/* Rounds every weight and bias to dtype (the values the GPU will hold), so
 * that the host reference computes with the same numbers. */
void rn18_params_round(rn18_params *p, gko_dtype_t dtype);
void rn18_params_free(rn18_params *p);

/* The float64 host reference of one image: x is 3 x 224 x 224 (CHW).
 * Activations stay float64 throughout; the parameters are p's floats. */
void rn18_reference(const rn18_params *p, const float *x, double logits[RN18_CLASSES]);

/* The tolerance on the relative error ||y - ref||_2 / ||ref||_2 of one
 * image's 1000 logits, computed in dtype, against a float64 reference with
 * the same parameters (resnet18.c says how it is derived). */
double rn18_tolerance(gko_dtype_t dtype);

/* ---- on the GPU ------------------------------------------------------------ */

typedef struct rn18_net rn18_net;

typedef struct {
  char name[40];   /* "conv1", "maxpool", "layer1.0.conv2+add", "fc", ... */
  double flops;    /* multiply-adds x 2 (0 for pooling) */
  double bytes;    /* the fewest bytes the layer must move: inputs, weights, output */
  int64_t path;    /* convolutions: gko_conv_path_t; else -1 */
  size_t workspace;
} rn18_layer;

/* Plans every layer for `batch` images of dtype and layout, uploads the
 * parameters and allocates the activations and one workspace (the largest
 * any layer needs).  0, or -1 with a reason in err (the library's detail
 * for a gko failure). */
int rn18_net_create(gko_handle_t h, const rn18_params *p, gko_dtype_t dtype,
                    gko_conv_layout_t layout, int batch, rn18_net **net, char *err, size_t n);
void rn18_net_destroy(rn18_net *net);
/* The input (batch x 3 x 224 x 224 in the layout and dtype) and the logits
 * (batch x 1000, f32, row-major) on the device. */
void *rn18_net_input(rn18_net *net);
const float *rn18_net_logits(const rn18_net *net);
/* Converts batch images from CHW floats into the input buffer (synchronous). */
int rn18_net_set_input(rn18_net *net, const float *x, char *err, size_t n);
/* Enqueues the whole forward pass on s (capture-safe). */
int rn18_net_forward(rn18_net *net, cudaStream_t s, char *err, size_t n);
/* The layers, and one of them alone (for the per-layer breakdown). */
int rn18_net_layers(const rn18_net *net);
const rn18_layer *rn18_net_layer(const rn18_net *net, int i);
int rn18_net_run_layer(rn18_net *net, int i, cudaStream_t s, char *err, size_t n);
/* Device bytes the network holds: parameters, activations, workspace. */
size_t rn18_net_device_bytes(const rn18_net *net);
size_t rn18_net_workspace_bytes(const rn18_net *net);

#endif
