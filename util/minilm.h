/* minilm.h -- a BERT encoder with mean pooling (sentence-transformers'
 * all-MiniLM-L6-v2: 6 layers, hidden 384, 12 heads of 32, FFN 1536 with
 * erf-GELU, post-LN, mean pooling over the attention mask, L2
 * normalisation) through gko's public API, for examples/minilm.c and
 * gko-bench's model module.  The sizes come from the model's config.json,
 * so other post-LN BERT encoders with absolute positions load too.
 *
 * One forward pass of B sentences padded to S tokens (T = B * S rows):
 *   x = LN(word[ids] + (position + token_type[0])[pos])    gko_embedding x2,
 *                                                          gko_layernorm (r)
 *   per layer:
 *     qkv = x Wqkv^T + bqkv           one GEMM (the three projections stacked)
 *     ctx = attention(qkv)            gko_attention, key-padding lengths
 *     t   = ctx Wo^T + bo + x         GEMM, the residual as beta * C
 *     x   = LN(t)                     gko_layernorm
 *     h   = gelu(x W1^T + b1)         GEMM, bias + erf-GELU epilogue
 *     t   = h W2^T + b2 + x           GEMM, residual
 *     x   = LN(t)
 *   e = normalize(mean over each sentence's tokens of x)     gko_mean_pool
 * Every plan is made once; a pass enqueues 4 + 7 * layers calls, allocates
 * nothing and can be captured into one CUDA graph. */
#ifndef GKO_UTIL_MINILM_H
#define GKO_UTIL_MINILM_H

#include <cuda_runtime_api.h>
#include <gko.h>
#include <stddef.h>
#include <stdint.h>

enum { MLM_MAX_LAYERS = 48 };

typedef struct {
  int layers, hidden, heads, ffn, vocab, max_pos, type_vocab;
  int max_seq; /* tokens kept per sentence: sentence_bert_config.json's
                  max_seq_length when the file exists, else max_pos */
  float ln_eps;
} mlm_config;

/* One layer's parameters, torch's [out][in] weights as floats. */
typedef struct {
  float *wqkv, *bqkv; /* [3 * hidden][hidden]: query, key, value stacked */
  float *wo, *bo;     /* attention.output.dense */
  float *ln1_g, *ln1_b;
  float *w1, *b1;     /* intermediate.dense [ffn][hidden] */
  float *w2, *b2;     /* output.dense [hidden][ffn] */
  float *ln2_g, *ln2_b;
} mlm_layer;

typedef struct {
  mlm_config cfg;
  float *word;     /* [vocab][hidden] */
  float *pos_type; /* [max_pos][hidden]: position + token_type[0] */
  float *ln_g, *ln_b;
  mlm_layer layer[MLM_MAX_LAYERS];
} mlm_params;

/* Reads dir/config.json and dir/model.safetensors (f32, f16 or bf16
 * tensors, Hugging Face BertModel names with or without a "bert." prefix).
 * 0, or -1 with a reason in err. */
int mlm_params_load(mlm_params *p, const char *dir, char *err, size_t n);
void mlm_params_free(mlm_params *p);

/* ---- on the GPU ------------------------------------------------------------ */

typedef struct mlm_net mlm_net;

/* Plans every call for `batch` sentences of at most `seq` tokens in dtype,
 * uploads the parameters (rounded to dtype) and allocates the activations
 * and one workspace.  0, or -1 with a reason in err. */
int mlm_net_create(gko_handle_t h, const mlm_params *p, gko_dtype_t dtype, int batch, int seq,
                   mlm_net **net, char *err, size_t n);
void mlm_net_destroy(mlm_net *net);
int mlm_net_batch(const mlm_net *net);
int mlm_net_seq(const mlm_net *net);
/* Sets the input of the next passes: count <= batch sentences, sentence i
 * holding len[i] <= seq token ids at ids[i * seq ...] (the rest ignored);
 * sentences count .. batch-1 are empty.  Enqueued on s (the host arrays
 * are copied before it returns). */
int mlm_net_set_input(mlm_net *net, int count, const int32_t *ids, const int *len,
                      cudaStream_t s, char *err, size_t n);
/* Enqueues the whole forward pass on s (capture-safe). */
int mlm_net_forward(mlm_net *net, cudaStream_t s, char *err, size_t n);
/* The sentence embeddings: batch x hidden in dtype, row-major, on the device. */
const void *mlm_net_output(const mlm_net *net);
/* Copies count embeddings to the host as floats (synchronizes s). */
int mlm_net_get_output(mlm_net *net, int count, float *out, cudaStream_t s, char *err, size_t n);

/* The calls of one pass by kind, for the per-part breakdown: kind of call i
 * (0 GEMM, 1 attention, 2 layer norm, 3 other), its name, its floor in
 * bytes and flops, and one call alone. */
typedef struct {
  char name[40];
  int kind;
  double flops, bytes;
} mlm_call;
int mlm_net_calls(const mlm_net *net);
const mlm_call *mlm_net_call(const mlm_net *net, int i);
int mlm_net_run_call(mlm_net *net, int i, cudaStream_t s, char *err, size_t n);
size_t mlm_net_device_bytes(const mlm_net *net);

#endif
