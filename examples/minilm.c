/* minilm.c -- sentence embeddings with all-MiniLM-L6-v2 end to end through gko:
 * BERT's WordPiece tokenizer (util/bert_tokenizer.h), the encoder as gko
 * calls (util/minilm.h: every call planned once, the forward pass captured
 * into one CUDA graph and replayed), mean pooling and L2 normalisation.
 *
 *   build/bin/minilm [--model DIR] [--dtype f32|f16|bf16] [--batch N]
 *                    [--sentences FILE | TEXT...] [--out FILE] [--ids FILE]
 *                    [--check REF] [--bench] [--verbose]
 *
 * DIR (default $GKO_MINILM_DIR, else build/models/all-MiniLM-L6-v2, which
 * `make model-minilm` fills) holds config.json, vocab.txt and
 * model.safetensors.  The sentences (one per line of FILE, or the
 * arguments) are tokenized ([CLS] ... [SEP], at most max_seq_length tokens of
 * sentence_bert_config.json: 256), embedded in batches of N (default 32) padded to the
 * longest sentence, and printed (the first values of each) or written to
 * --out, one line per sentence.  --ids writes the token ids likewise.
 * --check REF compares every embedding with a reference file of the same
 * format (data/minilm/embeddings_f64.txt) by cosine similarity: at least
 * 0.99999 in f32, 0.9995 in f16, 0.995 in bf16.  It prints the sentences/s
 * of the whole run (host clock).  --bench replays the graph of
 * one full batch and prints sentences/s; --verbose adds the time of each call
 * alone and of each part (GEMMs, attention, layer norms, the rest).
 * Exit status: 0 PASS, 1 FAIL, 2 cannot run (no usable GPU, no model). */
#include <cuda_runtime_api.h>
#include <gko.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "../util/bert_tokenizer.h"
#include "../util/minilm.h"
#include "example.h"

typedef struct {
  char **text;
  int count, cap;
} lines;

static void push(lines *l, const char *s, size_t len) {
  if (l->count == l->cap) {
    l->cap = l->cap ? 2 * l->cap : 64;
    l->text = realloc(l->text, (size_t)l->cap * sizeof *l->text);
    if (!l->text) printf("FAIL: out of host memory\n"), exit(1);
  }
  char *t = xmalloc(len + 1);
  memcpy(t, s, len);
  l->text[l->count++] = t;
}

/* every line of path (without its newline; a last line without one counts) */
static void read_lines(const char *path, lines *l) {
  FILE *f = fopen(path, "rb");
  if (!f) printf("FAIL: cannot open %s\n", path), exit(1);
  char *buf = NULL;
  size_t cap = 0, len = 0;
  int c;
  while ((c = fgetc(f)) != EOF) {
    if (len + 1 >= cap) {
      cap = cap ? 2 * cap : 256;
      buf = realloc(buf, cap);
      if (!buf) printf("FAIL: out of host memory\n"), exit(1);
    }
    if (c == '\n') {
      push(l, buf, len);
      len = 0;
    } else buf[len++] = (char)c;
  }
  if (len) push(l, buf, len);
  free(buf);
  fclose(f);
}

static float *read_matrix(const char *path, int rows, int cols) {
  FILE *f = fopen(path, "r");
  if (!f) printf("FAIL: cannot open %s\n", path), exit(1);
  float *m = xmalloc((size_t)rows * cols * sizeof *m);
  for (size_t i = 0; i < (size_t)rows * cols; i++)
    if (fscanf(f, "%f", &m[i]) != 1)
      printf("FAIL: %s holds fewer than %d x %d values\n", path, rows, cols), exit(1);
  fclose(f);
  return m;
}

static double cosine(const float *a, const float *b, int n) {
  double ab = 0, aa = 0, bb = 0;
  for (int i = 0; i < n; i++) ab += (double)a[i] * b[i], aa += (double)a[i] * a[i], bb += (double)b[i] * b[i];
  return aa > 0 && bb > 0 ? ab / sqrt(aa * bb) : (aa == bb ? 1.0 : 0.0);
}

static double elapsed_us(cudaEvent_t a, cudaEvent_t b, int reps) {
  float ms = 0;
  CUDA(cudaEventElapsedTime(&ms, a, b));
  return 1000.0 * ms / reps;
}

/* the graph of one forward pass, replayed: microseconds per batch (median of 15 x 10) */
static double time_graph(mlm_net *net, cudaStream_t s) {
  char err[512];
  cudaGraph_t g;
  cudaGraphExec_t ge;
  CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  if (mlm_net_forward(net, s, err, sizeof err)) {
    cudaStreamEndCapture(s, &g);
    printf("FAIL: %s\n", err), exit(1);
  }
  CUDA(cudaStreamEndCapture(s, &g));
  CUDA(cudaGraphInstantiate(&ge, g, 0));
  cudaEvent_t a, b;
  CUDA(cudaEventCreate(&a));
  CUDA(cudaEventCreate(&b));
  for (int i = 0; i < 5; i++) CUDA(cudaGraphLaunch(ge, s));
  double t[15];
  for (int r = 0; r < 15; r++) {
    CUDA(cudaEventRecord(a, s));
    for (int i = 0; i < 10; i++) CUDA(cudaGraphLaunch(ge, s));
    CUDA(cudaEventRecord(b, s));
    CUDA(cudaEventSynchronize(b));
    t[r] = elapsed_us(a, b, 10);
  }
  for (int i = 1; i < 15; i++)
    for (int j = i; j > 0 && t[j] < t[j - 1]; j--) {
      const double v = t[j];
      t[j] = t[j - 1], t[j - 1] = v;
    }
  CUDA(cudaGraphExecDestroy(ge));
  CUDA(cudaGraphDestroy(g));
  CUDA(cudaEventDestroy(a));
  CUDA(cudaEventDestroy(b));
  return t[7];
}

/* each call alone, back to back (20 times): the per-part breakdown (gko-bench
 * model minilm --verbose sets each against its floor) */
static void breakdown(mlm_net *net, cudaStream_t s) {
  static const char *const kind[4] = {"GEMMs", "attention", "layer norms", "the rest"};
  double us[4] = {0}, total = 0;
  char err[512];
  cudaEvent_t a, b;
  CUDA(cudaEventCreate(&a));
  CUDA(cudaEventCreate(&b));
  for (int i = 0; i < mlm_net_calls(net); i++) {
    const mlm_call *c = mlm_net_call(net, i);
    for (int r = 0; r < 23; r++) {
      if (r == 3) CUDA(cudaEventRecord(a, s));
      if (mlm_net_run_call(net, i, s, err, sizeof err)) printf("FAIL: %s\n", err), exit(1);
    }
    CUDA(cudaEventRecord(b, s));
    CUDA(cudaEventSynchronize(b));
    const double t = elapsed_us(a, b, 20);
    us[c->kind] += t, total += t;
    printf("  %-34s %8.1f us\n", c->name, t);
  }
  for (int k = 0; k < 4; k++)
    printf("  %-12s %8.1f us (%4.1f%%)\n", kind[k], us[k], total > 0 ? 100 * us[k] / total : 0.0);
  CUDA(cudaEventDestroy(a));
  CUDA(cudaEventDestroy(b));
}

int main(int argc, char **argv) {
  const char *model = getenv("GKO_MINILM_DIR"), *sent_file = NULL, *out_file = NULL;
  const char *ids_file = NULL, *check_file = NULL, *dtype_name = "f16";
  int batch = 32, bench = 0, verbose = 0;
  lines in = {0};
  if (!model || !*model) model = "build/models/all-MiniLM-L6-v2";
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--model") && v) model = v, i++;
    else if (!strcmp(a, "--dtype") && v) dtype_name = v, i++;
    else if (!strcmp(a, "--batch") && v) batch = atoi(v), i++;
    else if (!strcmp(a, "--sentences") && v) sent_file = v, i++;
    else if (!strcmp(a, "--out") && v) out_file = v, i++;
    else if (!strcmp(a, "--ids") && v) ids_file = v, i++;
    else if (!strcmp(a, "--check") && v) check_file = v, i++;
    else if (!strcmp(a, "--bench")) bench = 1;
    else if (!strcmp(a, "--verbose")) verbose = bench = 1;
    else if (a[0] == '-' && a[1] == '-') {
      printf("usage: minilm [--model DIR] [--dtype f32|f16|bf16] [--batch N] [--sentences FILE |"
             " TEXT...] [--out FILE] [--ids FILE] [--check REF] [--bench] [--verbose]\n");
      return 1;
    } else push(&in, a, strlen(a));
  }
  const gko_dtype_t dtype = !strcmp(dtype_name, "f32")    ? GKO_DTYPE_F32
                            : !strcmp(dtype_name, "bf16") ? GKO_DTYPE_BF16
                                                          : GKO_DTYPE_F16;
  if (strcmp(dtype_name, "f32") && strcmp(dtype_name, "f16") && strcmp(dtype_name, "bf16"))
    printf("FAIL: --dtype %s: f32, f16 or bf16\n", dtype_name), exit(1);
  if (batch < 1) printf("FAIL: --batch %d: at least 1\n", batch), exit(1);
  char path[4096];
  struct stat sb;
  snprintf(path, sizeof path, "%s/model.safetensors", model);
  if (stat(path, &sb)) {
    fprintf(stderr, "minilm: cannot run: no model at %s (make model-minilm, or --model DIR)\n",
            model);
    return 2;
  }
  if (sent_file) read_lines(sent_file, &in);
  if (in.count == 0) push(&in, "gko runs transformer encoders.", 30);

  int device;
  int64_t cc;
  gko_handle_t h = example_start("minilm", &device, &cc);
  char err[1024];
  snprintf(path, sizeof path, "%s/vocab.txt", model);
  bert_tokenizer *tok = bert_tokenizer_load(path, err, sizeof err);
  if (!tok) printf("FAIL: %s\n", err), exit(1);
  mlm_params p;
  if (mlm_params_load(&p, model, err, sizeof err)) printf("FAIL: %s\n", err), exit(1);
  const int hd = p.cfg.hidden, maxlen = p.cfg.max_seq;

  /* tokenize everything; the net is padded to the longest sentence */
  int32_t *ids = xmalloc((size_t)in.count * maxlen * sizeof *ids);
  int *len = xmalloc((size_t)in.count * sizeof *len), seq = 1;
  for (int i = 0; i < in.count; i++) {
    if (bert_tokenize(tok, in.text[i], strlen(in.text[i]), maxlen, ids + (size_t)i * maxlen,
                      &len[i]) < 0)
      printf("FAIL: sentence %d: the tokenizer failed (out of host memory, or fewer than 2 "
             "positions)\n", i), exit(1);
    if (len[i] > seq) seq = len[i];
  }
  if (batch > in.count && !bench) batch = in.count;
  cudaStream_t s;
  CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  mlm_net *net;
  if (mlm_net_create(h, &p, dtype, batch, seq, &net, err, sizeof err)) printf("FAIL: %s\n", err), exit(1);
  mlm_params_free(&p);
  printf("minilm: %d sentences, %s, batches of %d padded to %d tokens, %.1f MB on the device\n",
         in.count, dtype_name, batch, seq, mlm_net_device_bytes(net) / 1e6);

  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  float *emb = xmalloc((size_t)in.count * hd * sizeof *emb);
  int32_t *chunk = xmalloc((size_t)batch * seq * sizeof *chunk);
  for (int b0 = 0; b0 < in.count; b0 += batch) {
    const int cnt = in.count - b0 < batch ? in.count - b0 : batch;
    for (int i = 0; i < cnt; i++)
      memcpy(chunk + (size_t)i * seq, ids + (size_t)(b0 + i) * maxlen, (size_t)len[b0 + i] * 4);
    if (mlm_net_set_input(net, cnt, chunk, len + b0, s, err, sizeof err) ||
        mlm_net_forward(net, s, err, sizeof err) ||
        mlm_net_get_output(net, cnt, emb + (size_t)b0 * hd, s, err, sizeof err))
      printf("FAIL: %s\n", err), exit(1);
  }
  clock_gettime(CLOCK_MONOTONIC, &t1);
  const double secs = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
  printf("minilm: embedded %d sentences in %.1f ms, %.0f sentences/s (host clock: uploads, eager "
         "calls and copies back included; tokenizing and planning not)\n",
         in.count, 1e3 * secs, in.count / secs);

  FILE *fo = out_file ? fopen(out_file, "w") : NULL, *fi = ids_file ? fopen(ids_file, "w") : NULL;
  if ((out_file && !fo) || (ids_file && !fi)) printf("FAIL: cannot write the output files\n"), exit(1);
  for (int i = 0; i < in.count; i++) {
    const float *e = emb + (size_t)i * hd;
    if (fo)
      for (int j = 0; j < hd; j++) fprintf(fo, "%.9e%c", e[j], j + 1 < hd ? ' ' : '\n');
    if (fi)
      for (int j = 0; j < len[i]; j++) fprintf(fi, "%d%c", (int)ids[(size_t)i * maxlen + j], j + 1 < len[i] ? ' ' : '\n');
    if (!fo && !check_file && i < 8)
      printf("  [%d] %d tokens: %+.5f %+.5f %+.5f %+.5f ... \"%.40s\"\n", i, len[i], e[0], e[1], e[2],
             e[3], in.text[i]);
  }
  if (fo) fclose(fo);
  if (fi) fclose(fi);

  int rc = 0;
  if (check_file) {
    const double need = dtype == GKO_DTYPE_F32 ? 0.99999 : dtype == GKO_DTYPE_F16 ? 0.9995 : 0.995;
    float *ref = read_matrix(check_file, in.count, hd);
    double worst = 2;
    int wi = -1;
    for (int i = 0; i < in.count; i++) {
      const double c = cosine(emb + (size_t)i * hd, ref + (size_t)i * hd, hd);
      if (!(c >= worst)) worst = c, wi = i;
    }
    rc = !(worst >= need);
    printf("%s: min cosine similarity %.8f (sentence %d) against %s, need >= %g\n",
           rc ? "FAIL" : "PASS", worst, wi, check_file, need);
    free(ref);
  }
  if (bench) {
    /* a full batch of the longest sentence's length */
    int *full = xmalloc((size_t)batch * sizeof *full);
    for (int i = 0; i < batch; i++) {
      full[i] = seq;
      for (int j = 0; j < seq; j++) chunk[(size_t)i * seq + j] = j < len[0] ? ids[j] : 1000 + j;
    }
    if (mlm_net_set_input(net, batch, chunk, full, s, err, sizeof err)) printf("FAIL: %s\n", err), exit(1);
    const double us = time_graph(net, s);
    printf("minilm: batch %d x %d tokens, %s: %.1f us per batch (graph replay), %.0f sentences/s\n",
           batch, seq, dtype_name, us, batch / (us * 1e-6));
    if (verbose) breakdown(net, s);
    free(full);
  }
  mlm_net_destroy(net);
  bert_tokenizer_free(tok);
  CUDA(cudaStreamDestroy(s));
  GKO(gko_destroy(h));
  for (int i = 0; i < in.count; i++) free(in.text[i]);
  free(in.text), free(ids), free(len), free(emb), free(chunk);
  return rc;
}
