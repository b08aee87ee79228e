/* minilm.c -- see minilm.h. */
#include "minilm.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "half.h"
#include "model_util.h"
#include "safetensors.h"

/* ---- parameters -------------------------------------------------------------- */

static char *read_text(const char *path, char *err, size_t n) {
  FILE *f = fopen(path, "rb");
  if (!f) return mu_fail(err, n, "cannot open %s", path), NULL;
  char *buf = NULL;
  long len = -1;
  if (fseek(f, 0, SEEK_END) == 0 && (len = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
      (buf = malloc((size_t)len + 1)) && fread(buf, 1, (size_t)len, f) == (size_t)len)
    buf[len] = 0;
  else {
    free(buf), buf = NULL;
    mu_fail(err, n, "cannot read %s", path);
  }
  fclose(f);
  return buf;
}

static int json_int(const cJSON *o, const char *key, int lo, int hi, int *out, char *err,
                    size_t n) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  if (!cJSON_IsNumber(v) || !(v->valuedouble >= lo && v->valuedouble <= hi) ||
      v->valuedouble != (double)(int)v->valuedouble)
    return mu_fail(err, n, "config.json: \"%s\" is missing or not an integer in [%d, %d]", key, lo,
                   hi);
  *out = v->valueint;
  return 0;
}

static int load_config(mlm_config *c, const char *dir, char *err, size_t n) {
  char path[4096];
  snprintf(path, sizeof path, "%s/config.json", dir);
  char *text = read_text(path, err, n);
  if (!text) return -1;
  cJSON *o = cJSON_Parse(text);
  free(text);
  if (!o) return mu_fail(err, n, "%s is not valid JSON", path);
  int rc = json_int(o, "num_hidden_layers", 1, MLM_MAX_LAYERS, &c->layers, err, n) ||
                   json_int(o, "hidden_size", 1, 1 << 16, &c->hidden, err, n) ||
                   json_int(o, "num_attention_heads", 1, 1 << 10, &c->heads, err, n) ||
                   json_int(o, "intermediate_size", 1, 1 << 18, &c->ffn, err, n) ||
                   json_int(o, "vocab_size", 1, 1 << 24, &c->vocab, err, n) ||
                   json_int(o, "max_position_embeddings", 1, 1 << 16, &c->max_pos, err, n) ||
                   json_int(o, "type_vocab_size", 1, 1 << 10, &c->type_vocab, err, n)
               ? -1
               : 0;
  const cJSON *eps = cJSON_GetObjectItemCaseSensitive(o, "layer_norm_eps");
  const cJSON *act = cJSON_GetObjectItemCaseSensitive(o, "hidden_act");
  const cJSON *pe = cJSON_GetObjectItemCaseSensitive(o, "position_embedding_type");
  if (!rc && (!cJSON_IsNumber(eps) || !(eps->valuedouble >= 0)))
    rc = mu_fail(err, n, "config.json: \"layer_norm_eps\" is missing or negative");
  if (!rc && (!cJSON_IsString(act) || strcmp(act->valuestring, "gelu")))
    rc = mu_fail(err, n, "config.json: hidden_act must be \"gelu\" (erf-GELU)");
  if (!rc && pe && (!cJSON_IsString(pe) || strcmp(pe->valuestring, "absolute")))
    rc = mu_fail(err, n, "config.json: only absolute position embeddings are supported");
  if (!rc && !(eps->valuedouble <= 1.0))
    rc = mu_fail(err, n, "config.json: \"layer_norm_eps\" above 1");
  if (!rc && c->hidden % c->heads)
    rc = mu_fail(err, n, "config.json: hidden_size %d is not a multiple of %d heads", c->hidden,
                 c->heads);
  if (!rc) c->ln_eps = (float)eps->valuedouble;
  cJSON_Delete(o);
  c->max_seq = c->max_pos;
  snprintf(path, sizeof path, "%s/sentence_bert_config.json", dir);
  FILE *f = rc ? NULL : fopen(path, "rb");
  if (f) { /* sentence-transformers' truncation length */
    fclose(f);
    if (!(text = read_text(path, err, n))) return -1;
    o = cJSON_Parse(text);
    free(text);
    if (!o) return mu_fail(err, n, "%s is not valid JSON", path);
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(o, "max_seq_length");
    if (m) rc = json_int(o, "max_seq_length", 2, c->max_pos, &c->max_seq, err, n);
    cJSON_Delete(o);
  }
  return rc;
}

/* The tensor `name` (with or without the "bert." prefix) of exactly the
 * given shape, as floats into out (which holds rows * cols). */
static int fetch(const st_file *f, const char *name, int64_t rows, int64_t cols, float *out,
                 char *err, size_t n) {
  char alt[256];
  const st_tensor *t = st_find(f, name);
  if (!t) {
    snprintf(alt, sizeof alt, "bert.%s", name);
    t = st_find(f, alt);
  }
  if (!t) return mu_fail(err, n, "model.safetensors has no tensor \"%s\"", name);
  const int ok = cols ? t->ndim == 2 && t->shape[0] == rows && t->shape[1] == cols
                      : t->ndim == 1 && t->shape[0] == rows;
  if (!ok) return mu_fail(err, n, "tensor \"%s\": unexpected shape", name);
  if (st_to_float(t, out))
    return mu_fail(err, n, "tensor \"%s\": %s is not a float type", name, st_dtype_name(t->dtype));
  return 0;
}

static float *falloc(size_t count) { return malloc((count ? count : 1) * sizeof(float)); }

int mlm_params_load(mlm_params *p, const char *dir, char *err, size_t n) {
  memset(p, 0, sizeof *p);
  mlm_config *c = &p->cfg;
  if (load_config(c, dir, err, n)) return -1;
  char path[4096];
  snprintf(path, sizeof path, "%s/model.safetensors", dir);
  st_file f;
  char why[256];
  if (st_open(path, &f, why, sizeof why)) return mu_fail(err, n, "%s: %s", path, why);
  const int64_t hd = c->hidden, ff = c->ffn;
  int rc = 0;
  float *type = falloc((size_t)c->type_vocab * hd);
  p->word = falloc((size_t)c->vocab * hd), p->pos_type = falloc((size_t)c->max_pos * hd);
  p->ln_g = falloc(hd), p->ln_b = falloc(hd);
  if (!type || !p->word || !p->pos_type || !p->ln_g || !p->ln_b)
    rc = mu_fail(err, n, "out of host memory");
  if (!rc)
    rc = fetch(&f, "embeddings.word_embeddings.weight", c->vocab, hd, p->word, err, n) ||
         fetch(&f, "embeddings.position_embeddings.weight", c->max_pos, hd, p->pos_type, err, n) ||
         fetch(&f, "embeddings.token_type_embeddings.weight", c->type_vocab, hd, type, err, n) ||
         fetch(&f, "embeddings.LayerNorm.weight", hd, 0, p->ln_g, err, n) ||
         fetch(&f, "embeddings.LayerNorm.bias", hd, 0, p->ln_b, err, n);
  /* every token has token type 0 (single sentences) */
  for (int64_t i = 0; !rc && i < c->max_pos * hd; i++) p->pos_type[i] += type[i % hd];
  for (int l = 0; !rc && l < c->layers; l++) {
    mlm_layer *y = &p->layer[l];
    y->wqkv = falloc((size_t)3 * hd * hd), y->bqkv = falloc((size_t)3 * hd);
    y->wo = falloc((size_t)hd * hd), y->bo = falloc(hd);
    y->ln1_g = falloc(hd), y->ln1_b = falloc(hd), y->ln2_g = falloc(hd), y->ln2_b = falloc(hd);
    y->w1 = falloc((size_t)ff * hd), y->b1 = falloc(ff);
    y->w2 = falloc((size_t)hd * ff), y->b2 = falloc(hd);
    if (!y->wqkv || !y->bqkv || !y->wo || !y->bo || !y->ln1_g || !y->ln1_b || !y->ln2_g ||
        !y->ln2_b || !y->w1 || !y->b1 || !y->w2 || !y->b2) {
      rc = mu_fail(err, n, "out of host memory");
      break;
    }
    char nm[128];
    static const char *const qkv[3] = {"query", "key", "value"};
    for (int j = 0; j < 3 && !rc; j++) {
      snprintf(nm, sizeof nm, "encoder.layer.%d.attention.self.%s.weight", l, qkv[j]);
      rc = fetch(&f, nm, hd, hd, y->wqkv + (size_t)j * hd * hd, err, n);
      snprintf(nm, sizeof nm, "encoder.layer.%d.attention.self.%s.bias", l, qkv[j]);
      if (!rc) rc = fetch(&f, nm, hd, 0, y->bqkv + (size_t)j * hd, err, n);
    }
    const struct {
      const char *suffix;
      int64_t rows, cols;
      float *out;
    } t[] = {{"attention.output.dense.weight", hd, hd, y->wo},
             {"attention.output.dense.bias", hd, 0, y->bo},
             {"attention.output.LayerNorm.weight", hd, 0, y->ln1_g},
             {"attention.output.LayerNorm.bias", hd, 0, y->ln1_b},
             {"intermediate.dense.weight", ff, hd, y->w1},
             {"intermediate.dense.bias", ff, 0, y->b1},
             {"output.dense.weight", hd, ff, y->w2},
             {"output.dense.bias", hd, 0, y->b2},
             {"output.LayerNorm.weight", hd, 0, y->ln2_g},
             {"output.LayerNorm.bias", hd, 0, y->ln2_b}};
    for (size_t j = 0; j < sizeof t / sizeof t[0] && !rc; j++) {
      snprintf(nm, sizeof nm, "encoder.layer.%d.%s", l, t[j].suffix);
      rc = fetch(&f, nm, t[j].rows, t[j].cols, t[j].out, err, n);
    }
  }
  free(type);
  st_close(&f);
  if (rc) mlm_params_free(p);
  return rc ? -1 : 0;
}

void mlm_params_free(mlm_params *p) {
  free(p->word), free(p->pos_type), free(p->ln_g), free(p->ln_b);
  for (int l = 0; l < MLM_MAX_LAYERS; l++) {
    mlm_layer *y = &p->layer[l];
    free(y->wqkv), free(y->bqkv), free(y->wo), free(y->bo), free(y->ln1_g), free(y->ln1_b);
    free(y->w1), free(y->b1), free(y->w2), free(y->b2), free(y->ln2_g), free(y->ln2_b);
  }
  memset(p, 0, sizeof *p);
}

/* ---- the network on the GPU ---------------------------------------------------- */

enum { G_QKV, G_OUT, G_FFN1, G_FFN2, G_COUNT }; /* the four GEMM shapes */
enum { K_GEMM, K_ATTN, K_LN, K_OTHER };
/* per-layer device parameters, in the net's dtype */
enum {
  P_WQKV,
  P_BQKV,
  P_WO,
  P_BO,
  P_LN1G,
  P_LN1B,
  P_W1,
  P_B1,
  P_W2,
  P_B2,
  P_LN2G,
  P_LN2B,
  P_COUNT
};
/* activations: x (the residual stream), t (pre-LN sums), qkv, ctx, h (FFN) */
enum { B_X, B_T, B_QKV, B_CTX, B_H, B_WORD, B_OUT, B_COUNT };

enum {
  OP_EMBED,
  OP_POSADD,
  OP_LN0,
  OP_QKV,
  OP_ATTN,
  OP_OUT,
  OP_LN1,
  OP_FFN1,
  OP_FFN2,
  OP_LN2,
  OP_POOL
};

typedef struct {
  int op, layer;
} mlm_op;

struct mlm_net {
  gko_handle_t h;
  gko_dtype_t dtype;
  mlm_config cfg;
  int batch, seq;
  gko_gemm_plan_t gemm[G_COUNT];
  void *word, *pos_type, *ln_g, *ln_b;
  void *par[MLM_MAX_LAYERS][P_COUNT];
  void *buf[B_COUNT];
  int32_t *ids, *pos, *len; /* device: batch * seq, batch * seq, batch */
  int32_t *staging; /* pinned host copy of the three */
  void *ws;
  size_t ws_bytes, device_bytes;
  mlm_op op[4 + 7 * MLM_MAX_LAYERS];
  mlm_call call[4 + 7 * MLM_MAX_LAYERS];
  int ops;
};

/* D[T][nout] = A[T][kin] . W^T + bias (+ C) with the given epilogue */
static int plan_gemm(mlm_net *net, int g, int64_t nout, int64_t kin, gko_epilogue_t epi, char *err,
                     size_t n) {
  static const char *const names[G_COUNT] = {"qkv", "attention.output", "ffn1", "ffn2"};
  const int64_t tokens = (int64_t)net->batch * net->seq;
  gko_gemm_desc_t d;
  MU_TRY(names[g], gko_gemm_desc_create(&d, net->dtype, net->dtype, tokens, nout, kin));
  gko_status_t s = gko_gemm_desc_set(d, GKO_GEMM_ATTR_TRANSB, GKO_OP_T);
  if (s == GKO_STATUS_SUCCESS) s = gko_gemm_desc_set(d, GKO_GEMM_ATTR_EPILOGUE, epi);
  if (s == GKO_STATUS_SUCCESS)
    s = gko_gemm_desc_set(d, GKO_GEMM_ATTR_STATIC_OPERANDS, GKO_GEMM_STATIC_B);
  if (s == GKO_STATUS_SUCCESS) s = gko_gemm_plan_create(net->h, d, &net->gemm[g]);
  gko_gemm_desc_destroy(d);
  if (s != GKO_STATUS_SUCCESS) return mu_gko_fail(err, n, names[g], s);
  size_t ws = 0;
  MU_TRY(names[g], gko_gemm_workspace_size(net->gemm[g], &ws));
  if (ws > net->ws_bytes) net->ws_bytes = ws;
  return 0;
}

static void add_op(mlm_net *net, int op, int layer) {
  const mlm_config *c = &net->cfg;
  const double es = (double)gko_dtype_size(net->dtype), t = (double)net->batch * net->seq;
  const double hd = c->hidden, ff = c->ffn;
  mlm_op *o = &net->op[net->ops];
  mlm_call *k = &net->call[net->ops++];
  o->op = op, o->layer = layer;
  k->flops = 0;
  static const char *const names[] = {"embedding",
                                      "embedding+position",
                                      "embedding.LayerNorm",
                                      "qkv",
                                      "attention",
                                      "attention.output+residual",
                                      "attention.LayerNorm",
                                      "ffn1+gelu",
                                      "ffn2+residual",
                                      "output.LayerNorm",
                                      "mean_pool"};
  if (layer >= 0)
    snprintf(k->name, sizeof k->name, "%d.%s", layer, names[op]);
  else
    snprintf(k->name, sizeof k->name, "%s", names[op]);
  switch (op) {
    case OP_QKV:
    case OP_OUT:
    case OP_FFN1:
    case OP_FFN2: {
      const double nout = op == OP_QKV ? 3 * hd : op == OP_FFN1 ? ff : hd;
      const double kin = op == OP_FFN2 ? ff : hd;
      k->kind = K_GEMM;
      k->flops = 2 * t * nout * kin;
      k->bytes =
          (t * kin + nout * kin + nout + t * nout * (op == OP_OUT || op == OP_FFN2 ? 2 : 1)) * es;
      break;
    }
    case OP_ATTN: {
      const double s = net->seq;
      k->kind = K_ATTN;
      k->flops = 4 * t * s * hd;
      k->bytes = 4 * t * hd * es;
      break;
    }
    case OP_LN0:
    case OP_LN1:
    case OP_LN2:
      k->kind = K_LN;
      k->bytes = (op == OP_LN0 ? 3 : 2) * t * hd * es;
      break;
    case OP_POOL:
      k->kind = K_OTHER;
      k->bytes = (t + net->batch) * hd * es;
      break;
    default: /* the two gathers */
      k->kind = K_OTHER;
      k->bytes = 2 * t * hd * es;
  }
}

static int build(mlm_net *net, const mlm_params *p, char *err, size_t n) {
  const mlm_config *c = &net->cfg;
  const int64_t hd = c->hidden, ff = c->ffn, tokens = (int64_t)net->batch * net->seq;
  const size_t es = gko_dtype_size(net->dtype);
  size_t *tot = &net->device_bytes;
  const gko_dtype_t dt = net->dtype;
  if (mu_upload(tot, &net->word, p->word, (size_t)c->vocab * hd, dt, err, n) ||
      mu_upload(tot, &net->pos_type, p->pos_type, (size_t)c->max_pos * hd, dt, err, n) ||
      mu_upload(tot, &net->ln_g, p->ln_g, hd, dt, err, n) ||
      mu_upload(tot, &net->ln_b, p->ln_b, hd, dt, err, n))
    return -1;
  for (int l = 0; l < c->layers; l++) {
    const mlm_layer *y = &p->layer[l];
    const float *src[P_COUNT] = {y->wqkv, y->bqkv, y->wo, y->bo, y->ln1_g, y->ln1_b,
                                 y->w1,   y->b1,   y->w2, y->b2, y->ln2_g, y->ln2_b};
    const size_t len[P_COUNT] = {(size_t)3 * hd * hd,
                                 (size_t)3 * hd,
                                 (size_t)hd * hd,
                                 hd,
                                 hd,
                                 hd,
                                 (size_t)ff * hd,
                                 ff,
                                 (size_t)hd * ff,
                                 hd,
                                 hd,
                                 hd};
    for (int j = 0; j < P_COUNT; j++)
      if (mu_upload(tot, &net->par[l][j], src[j], len[j], dt, err, n)) return -1;
  }
  if (plan_gemm(net, G_QKV, 3 * hd, hd, GKO_EPILOGUE_BIAS, err, n) ||
      plan_gemm(net, G_OUT, hd, hd, GKO_EPILOGUE_BIAS, err, n) ||
      plan_gemm(net, G_FFN1, ff, hd, GKO_EPILOGUE_BIAS_GELU_ERF, err, n) ||
      plan_gemm(net, G_FFN2, hd, ff, GKO_EPILOGUE_BIAS, err, n))
    return -1;
  const size_t t = (size_t)tokens;
  const size_t sizes[B_COUNT] = {t * hd * es,
                                 t * hd * es,
                                 t * 3 * hd * es,
                                 t * hd * es,
                                 t * ff * es,
                                 t * hd * es,
                                 (size_t)net->batch * hd * es};
  for (int b = 0; b < B_COUNT; b++)
    if (mu_dalloc(&net->device_bytes, &net->buf[b], sizes[b], err, n)) return -1;
  if (mu_dalloc(&net->device_bytes, (void **)&net->ids, t * 4, err, n) ||
      mu_dalloc(&net->device_bytes, (void **)&net->pos, t * 4, err, n) ||
      mu_dalloc(&net->device_bytes, (void **)&net->len, (size_t)net->batch * 4, err, n))
    return -1;
  if (net->ws_bytes && mu_dalloc(&net->device_bytes, &net->ws, net->ws_bytes, err, n)) return -1;
  const cudaError_t e = cudaMallocHost((void **)&net->staging, (2 * t + (size_t)net->batch) * 4);
  if (e != cudaSuccess) {
    net->staging = NULL;
    return mu_fail(err, n, "cudaMallocHost: %s", cudaGetErrorString(e));
  }
  add_op(net, OP_EMBED, -1);
  add_op(net, OP_POSADD, -1);
  add_op(net, OP_LN0, -1);
  for (int l = 0; l < c->layers; l++)
    for (int op = OP_QKV; op <= OP_LN2; op++) add_op(net, op, l);
  add_op(net, OP_POOL, -1);
  /* the uploads from pageable memory may still be in flight on the legacy
   * stream, which the caller's (non-blocking) stream does not wait for */
  const cudaError_t e2 = cudaDeviceSynchronize();
  return e2 == cudaSuccess ? 0
                           : mu_fail(err, n, "cudaDeviceSynchronize: %s", cudaGetErrorString(e2));
}

int mlm_net_create(gko_handle_t h, const mlm_params *p, gko_dtype_t dtype, int batch, int seq,
                   mlm_net **out, char *err, size_t n) {
  if (dtype != GKO_DTYPE_F32 && dtype != GKO_DTYPE_F16 && dtype != GKO_DTYPE_BF16)
    return mu_fail(err, n, "dtype %d: the encoder runs in F32, F16 or BF16", (int)dtype);
  if (batch < 1) return mu_fail(err, n, "batch %d: at least 1 sentence", batch);
  if (seq < 1 || seq > p->cfg.max_pos)
    return mu_fail(err, n, "seq %d: between 1 and the model's %d positions", seq, p->cfg.max_pos);
  mlm_net *net = calloc(1, sizeof *net);
  if (!net) return mu_fail(err, n, "out of host memory");
  net->h = h, net->dtype = dtype, net->cfg = p->cfg, net->batch = batch, net->seq = seq;
  if (build(net, p, err, n)) {
    mlm_net_destroy(net);
    return -1;
  }
  *out = net;
  return 0;
}

void mlm_net_destroy(mlm_net *net) {
  if (!net) return;
  for (int g = 0; g < G_COUNT; g++) gko_gemm_plan_destroy(net->gemm[g]);
  cudaFree(net->word), cudaFree(net->pos_type), cudaFree(net->ln_g), cudaFree(net->ln_b);
  for (int l = 0; l < MLM_MAX_LAYERS; l++)
    for (int j = 0; j < P_COUNT; j++) cudaFree(net->par[l][j]);
  for (int b = 0; b < B_COUNT; b++) cudaFree(net->buf[b]);
  cudaFree(net->ids), cudaFree(net->pos), cudaFree(net->len), cudaFree(net->ws);
  cudaFreeHost(net->staging);
  free(net);
}

int mlm_net_batch(const mlm_net *net) { return net->batch; }
int mlm_net_seq(const mlm_net *net) { return net->seq; }
const void *mlm_net_output(const mlm_net *net) { return net->buf[B_OUT]; }
int mlm_net_calls(const mlm_net *net) { return net->ops; }
const mlm_call *mlm_net_call(const mlm_net *net, int i) { return &net->call[i]; }
size_t mlm_net_device_bytes(const mlm_net *net) { return net->device_bytes; }

int mlm_net_set_input(mlm_net *net, int count, const int32_t *ids, const int *len, cudaStream_t s,
                      char *err, size_t n) {
  if (count < 0 || count > net->batch)
    return mu_fail(err, n, "%d sentences for a net of batch %d", count, net->batch);
  const size_t t = (size_t)net->batch * net->seq;
  /* the staging buffer may still feed the previous copy */
  cudaError_t e = cudaStreamSynchronize(s);
  if (e != cudaSuccess) return mu_fail(err, n, "cudaStreamSynchronize: %s", cudaGetErrorString(e));
  int32_t *hid = net->staging, *hpos = hid + t, *hlen = hpos + t;
  for (int b = 0; b < net->batch; b++) {
    const int l = b < count ? len[b] : 0;
    if (l < 0 || l > net->seq)
      return mu_fail(err, n, "sentence %d: %d tokens for a net of %d", b, l, net->seq);
    hlen[b] = l;
    for (int i = 0; i < net->seq; i++) {
      const int32_t id = i < l ? ids[(size_t)b * net->seq + i] : 0;
      if (id < 0 || id >= net->cfg.vocab)
        return mu_fail(err, n, "sentence %d, token %d: id %d outside the vocabulary", b, i,
                       (int)id);
      hid[(size_t)b * net->seq + i] = id;
      hpos[(size_t)b * net->seq + i] = i;
    }
  }
  if ((e = cudaMemcpyAsync(net->ids, hid, t * 4, cudaMemcpyHostToDevice, s)) != cudaSuccess ||
      (e = cudaMemcpyAsync(net->pos, hpos, t * 4, cudaMemcpyHostToDevice, s)) != cudaSuccess ||
      (e = cudaMemcpyAsync(net->len, hlen, (size_t)net->batch * 4, cudaMemcpyHostToDevice, s)) !=
          cudaSuccess)
    return mu_fail(err, n, "cudaMemcpyAsync: %s", cudaGetErrorString(e));
  return 0;
}

int mlm_net_run_call(mlm_net *net, int i, cudaStream_t s, char *err, size_t n) {
  const mlm_op *o = &net->op[i];
  const mlm_config *c = &net->cfg;
  const int64_t hd = c->hidden, tokens = (int64_t)net->batch * net->seq;
  const gko_stream_t st = (gko_stream_t)s;
  void *const *b = net->buf;
  void *const *w = o->layer >= 0 ? net->par[o->layer] : NULL;
  const float eps = c->ln_eps;
  const char *nm = net->call[i].name;
  switch (o->op) {
    case OP_EMBED:
      MU_TRY(nm, gko_embedding(net->h, net->dtype, c->vocab, hd, net->word, hd, GKO_INDEX_INT32,
                               net->ids, tokens, b[B_WORD], hd, st));
      break;
    case OP_POSADD:
      MU_TRY(nm, gko_embedding(net->h, net->dtype, c->max_pos, hd, net->pos_type, hd,
                               GKO_INDEX_INT32, net->pos, tokens, b[B_T], hd, st));
      break;
    case OP_LN0:
      MU_TRY(nm, gko_layernorm(net->h, net->dtype, tokens, hd, b[B_WORD], hd, b[B_T], hd, net->ln_g,
                               net->ln_b, eps, b[B_X], hd, NULL, 0, st));
      break;
    case OP_QKV:
      MU_TRY(nm, gko_gemm_execute(net->gemm[G_QKV], 1.0f, b[B_X], w[P_WQKV], 0.0f, NULL, b[B_QKV],
                                  w[P_BQKV], net->ws, net->ws_bytes, st));
      break;
    case OP_ATTN: {
      const size_t es = gko_dtype_size(net->dtype);
      const char *qkv = b[B_QKV];
      MU_TRY(nm, gko_attention(net->h, net->dtype, net->batch, c->heads, net->seq, net->seq,
                               hd / c->heads, 1.0f / sqrtf((float)(hd / c->heads)), qkv, 3 * hd,
                               qkv + hd * es, 3 * hd, qkv + 2 * hd * es, 3 * hd, net->len, b[B_CTX],
                               hd, st));
      break;
    }
    case OP_OUT:
      MU_TRY(nm, gko_gemm_execute(net->gemm[G_OUT], 1.0f, b[B_CTX], w[P_WO], 1.0f, b[B_X], b[B_T],
                                  w[P_BO], net->ws, net->ws_bytes, st));
      break;
    case OP_LN1:
    case OP_LN2: {
      const int g = o->op == OP_LN1 ? P_LN1G : P_LN2G;
      MU_TRY(nm, gko_layernorm(net->h, net->dtype, tokens, hd, b[B_T], hd, NULL, 0, w[g], w[g + 1],
                               eps, b[B_X], hd, NULL, 0, st));
      break;
    }
    case OP_FFN1:
      MU_TRY(nm, gko_gemm_execute(net->gemm[G_FFN1], 1.0f, b[B_X], w[P_W1], 0.0f, NULL, b[B_H],
                                  w[P_B1], net->ws, net->ws_bytes, st));
      break;
    case OP_FFN2:
      MU_TRY(nm, gko_gemm_execute(net->gemm[G_FFN2], 1.0f, b[B_H], w[P_W2], 1.0f, b[B_X], b[B_T],
                                  w[P_B2], net->ws, net->ws_bytes, st));
      break;
    default:
      MU_TRY(nm, gko_mean_pool(net->h, net->dtype, net->batch, net->seq, hd, b[B_X], hd, net->len,
                               1, b[B_OUT], hd, st));
  }
  return 0;
}

int mlm_net_forward(mlm_net *net, cudaStream_t s, char *err, size_t n) {
  for (int i = 0; i < net->ops; i++)
    if (mlm_net_run_call(net, i, s, err, n)) return -1;
  return 0;
}

int mlm_net_get_output(mlm_net *net, int count, float *out, cudaStream_t s, char *err, size_t n) {
  if (count < 0 || count > net->batch)
    return mu_fail(err, n, "%d embeddings of a net of batch %d", count, net->batch);
  const size_t hd = (size_t)net->cfg.hidden, es = gko_dtype_size(net->dtype),
               len = (size_t)count * hd;
  unsigned char *h = malloc(len * es + 1);
  if (!h) return mu_fail(err, n, "out of host memory");
  cudaError_t e = cudaMemcpyAsync(h, net->buf[B_OUT], len * es, cudaMemcpyDeviceToHost, s);
  if (e == cudaSuccess) e = cudaStreamSynchronize(s);
  if (e != cudaSuccess) {
    free(h);
    return mu_fail(err, n, "copying the embeddings: %s", cudaGetErrorString(e));
  }
  for (size_t i = 0; i < len; i++) {
    uint16_t v;
    if (net->dtype == GKO_DTYPE_F32)
      memcpy(&out[i], h + 4 * i, 4);
    else {
      memcpy(&v, h + 2 * i, 2);
      out[i] = net->dtype == GKO_DTYPE_F16 ? half_to_float(v) : bf16_to_float(v);
    }
  }
  free(h);
  return 0;
}
