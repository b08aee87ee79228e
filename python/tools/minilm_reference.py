#!/usr/bin/env python3
"""Reference data of the MiniLM example (all-MiniLM-L6-v2 sentence embeddings).

Writes, for the sentences of data/minilm/sentences.txt (one per line, UTF-8):
  token_ids.txt       the ids of Hugging Face's `tokenizers` (tokenizer.json,
                      truncation to max_seq_length = 256, no padding), as
                      sentence-transformers feeds them to the model: one line
                      per sentence, space-separated;
  embeddings_f64.txt  the sentence embeddings of a float64 numpy BertModel
                      (embeddings -> LayerNorm -> 6 encoder layers), mean
                      pooling over the tokens, L2 normalization: one line per
                      sentence, 384 values (%.9e).
With --fp16-weights every weight is rounded to float16 first and the
embeddings go to embeddings_f64_fp16w.txt (the reference of a model run on
fp16 weights).  --export-fp16 DIR writes a copy of the model directory with
every floating-point tensor stored as float16 (45 MB instead of 91 MB; the
integer tensor embeddings.position_ids stays int64) and exits.

Needs numpy, safetensors and tokenizers (pip install numpy safetensors
tokenizers); no torch.  Fetch the model with `make model-minilm`.

  python3 python/tools/minilm_reference.py [--weights build/models/all-MiniLM-L6-v2]
      [--sentences data/minilm/sentences.txt] [--out data/minilm] [--fp16-weights]
  python3 python/tools/minilm_reference.py --export-fp16 build/models/all-MiniLM-L6-v2-f16
"""
import argparse
import json
import math
import os
import shutil
import sys

import numpy as np

try:
    from safetensors.numpy import load_file, save_file
    from tokenizers import Tokenizer
except ImportError as e:
    sys.exit("minilm_reference.py needs numpy, safetensors and tokenizers (%s): "
             "python3 -m pip install numpy safetensors tokenizers" % e)

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))


def read_lines(path):
    """The lines of a '\\n'-separated UTF-8 file (invalid bytes become U+FFFD).
    Not str.splitlines, which also splits at \\x0b, \\x1c, U+2028, ..."""
    with open(path, "rb") as f:
        data = f.read()
    if data.endswith(b"\n"):
        data = data[:-1]
    return [b.decode("utf-8", "replace") for b in data.split(b"\n")] if data else []


def load_tokenizer(model_dir, max_len):
    tok = Tokenizer.from_file(os.path.join(model_dir, "tokenizer.json"))
    tok.no_padding()  # tokenizer.json pads to 128; sentence-transformers pads per batch
    tok.enable_truncation(max_len)
    return tok


def tokenize(tok, sentences):
    ids = [tok.encode(s).ids for s in sentences]
    # sentence-transformers strips each text first; that never changes the ids
    stripped = [tok.encode(s.strip()).ids for s in sentences]
    assert ids == stripped, "str.strip() changed the ids of a sentence"
    return ids


class Bert:
    """BertModel in float64 (eval mode: no dropout)."""

    def __init__(self, model_dir, fp16_weights=False):
        with open(os.path.join(model_dir, "config.json")) as f:
            c = json.load(f)
        self.layers = c["num_hidden_layers"]
        self.heads = c["num_attention_heads"]
        self.hidden = c["hidden_size"]
        self.eps = c["layer_norm_eps"]
        if c.get("hidden_act") != "gelu" or c.get("position_embedding_type", "absolute") != "absolute":
            sys.exit("config.json: only hidden_act gelu and absolute positions are modelled")
        raw = load_file(os.path.join(model_dir, "model.safetensors"))

        def w(name):
            a = raw[name]
            if fp16_weights:
                a = a.astype(np.float16)
            return a.astype(np.float64)

        self.word = w("embeddings.word_embeddings.weight")
        self.pos = w("embeddings.position_embeddings.weight")
        self.type0 = w("embeddings.token_type_embeddings.weight")[0]
        self.ln0 = (w("embeddings.LayerNorm.weight"), w("embeddings.LayerNorm.bias"))
        self.L = []
        for i in range(self.layers):
            p = "encoder.layer.%d." % i
            g = lambda n: (w(p + n + ".weight"), w(p + n + ".bias"))
            self.L.append(dict(q=g("attention.self.query"), k=g("attention.self.key"),
                               v=g("attention.self.value"), o=g("attention.output.dense"),
                               ln1=g("attention.output.LayerNorm"), i=g("intermediate.dense"),
                               o2=g("output.dense"), ln2=g("output.LayerNorm")))

    def layernorm(self, x, gb):
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        return (x - mu) / np.sqrt(var + self.eps) * gb[0] + gb[1]

    @staticmethod
    def linear(x, wb):
        return x @ wb[0].T + wb[1]

    _erfc = np.vectorize(math.erfc, otypes=[np.float64])

    @classmethod
    def gelu(cls, x):
        # exact GELU, x * Phi(x), with erfc so that the negative tail keeps its digits
        return x * 0.5 * cls._erfc(-x / math.sqrt(2.0))

    def encode(self, ids, mask=None):
        """ids [B][S] -> the last hidden states [B][S][hidden]; mask [B][S]
        (1 = token, 0 = padding), None for all tokens."""
        ids = np.asarray(ids)
        B, S = ids.shape
        H, D = self.heads, self.hidden // self.heads
        x = self.layernorm(self.word[ids] + self.pos[:S] + self.type0, self.ln0)
        bias = 0.0 if mask is None else (1.0 - np.asarray(mask, np.float64))[:, None, None, :] * -1e300
        for L in self.L:
            split = lambda t: t.reshape(B, S, H, D).transpose(0, 2, 1, 3)
            q, k, v = (split(self.linear(x, L[n])) for n in "qkv")
            s = q @ k.transpose(0, 1, 3, 2) / math.sqrt(D) + bias
            s = np.exp(s - s.max(-1, keepdims=True))
            p = s / s.sum(-1, keepdims=True)
            ctx = (p @ v).transpose(0, 2, 1, 3).reshape(B, S, H * D)
            x = self.layernorm(self.linear(ctx, L["o"]) + x, L["ln1"])
            h = self.gelu(self.linear(x, L["i"]))
            x = self.layernorm(self.linear(h, L["o2"]) + x, L["ln2"])
        return x

    def embed(self, ids, mask=None):
        """Mean pooling over the mask, then L2 normalization."""
        x = self.encode(ids, mask)
        m = np.ones(x.shape[:2]) if mask is None else np.asarray(mask, np.float64)
        e = (x * m[..., None]).sum(1) / np.maximum(m.sum(1, keepdims=True), 1e-9)
        return e / np.maximum(np.linalg.norm(e, axis=1, keepdims=True), 1e-12)


def export_fp16(model_dir, out_dir):
    raw = load_file(os.path.join(model_dir, "model.safetensors"))
    out = {}
    for name, a in raw.items():
        if a.dtype.kind == "f":
            h = a.astype(np.float16)
            if not np.all(np.isfinite(h)):
                sys.exit("%s: a value overflows float16" % name)
            out[name] = h
        else:
            out[name] = a
    os.makedirs(out_dir, exist_ok=True)
    save_file(out, os.path.join(out_dir, "model.safetensors"), metadata={"format": "pt"})
    os.chmod(os.path.join(out_dir, "model.safetensors"), 0o644)
    copied = 0
    for dp, _, files in os.walk(model_dir):
        for f in files:
            if f.endswith((".json", ".txt")):
                rel = os.path.relpath(os.path.join(dp, f), model_dir)
                os.makedirs(os.path.dirname(os.path.join(out_dir, rel)) or out_dir, exist_ok=True)
                shutil.copyfile(os.path.join(dp, f), os.path.join(out_dir, rel))
                copied += 1
    size = os.path.getsize(os.path.join(out_dir, "model.safetensors"))
    print("wrote %s/model.safetensors (%d tensors, %.1f MB, float16) and %d json/txt files"
          % (out_dir, len(out), size / 1e6, copied))


# sentence-transformers' quick-start example for this model and the
# similarities its documentation prints (sbert.net, "Usage"; 4 decimals)
DOC_SENTENCES = ["The weather is lovely today.", "It's so sunny outside!", "He drove to the stadium."]
DOC_SIMILARITIES = {(0, 1): 0.6660, (0, 2): 0.1046, (1, 2): 0.1411}


def sanity(sentences, emb, model, tok):
    """The documented similarities; paraphrases close, unrelated sentences apart."""
    doc = np.stack([model.embed([tok.encode(s).ids])[0] for s in DOC_SENTENCES])
    ok = True
    for (i, j), want in DOC_SIMILARITIES.items():
        got = float(doc[i] @ doc[j])
        ok &= abs(got - want) < 1e-4
        print("  documented  %.4f (sbert.net: %.4f)  %s | %s" % (got, want, DOC_SENTENCES[i],
                                                             DOC_SENTENCES[j]))
    idx = {s: i for i, s in enumerate(sentences)}

    def cos(a, b):
        return float(emb[idx[a]] @ emb[idx[b]])

    pairs = [("A man is playing a guitar.", "A person is playing a musical instrument."),
             ("The cat sits on the mat.", "A cat is resting on a rug."),
             ("How do I reset my password?", "What are the steps to change my password?"),
             ("Children are playing football in the park.", "Kids are playing soccer outside.")]
    unrelated = [("A man is playing a guitar.", "How do I reset my password?"),
                 ("The cat sits on the mat.",
                  "Quantum chromodynamics describes the strong interaction between quarks and gluons."),
                 ("Children are playing football in the park.",
                  "The stock market fell sharply after the central bank raised interest rates.")]
    for a, b in pairs:
        if a in idx and b in idx:
            c = cos(a, b)
            ok &= c > 0.6
            print("  paraphrases %.3f  %s | %s" % (c, a, b))
    for a, b in unrelated:
        if a in idx and b in idx:
            c = cos(a, b)
            ok &= c < 0.3
            print("  unrelated   %.3f  %s | %s" % (c, a, b))
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--weights", default=os.path.join(ROOT, "build/models/all-MiniLM-L6-v2"),
                    help="the model directory (config.json, model.safetensors, tokenizer.json)")
    ap.add_argument("--sentences", default=os.path.join(ROOT, "data/minilm/sentences.txt"))
    ap.add_argument("--out", default=os.path.join(ROOT, "data/minilm"))
    ap.add_argument("--max-len", type=int, default=0,
                    help="truncation length (default: max_seq_length of sentence_bert_config.json)")
    ap.add_argument("--fp16-weights", action="store_true",
                    help="round every weight to float16 first (writes embeddings_f64_fp16w.txt)")
    ap.add_argument("--export-fp16", metavar="DIR",
                    help="write a float16 copy of the model directory to DIR and exit")
    a = ap.parse_args()
    if not os.path.isfile(os.path.join(a.weights, "model.safetensors")):
        sys.exit("%s has no model.safetensors: run `make model-minilm` (or pass --weights)" % a.weights)
    if a.export_fp16:
        export_fp16(a.weights, a.export_fp16)
        return
    max_len = a.max_len
    if not max_len:
        with open(os.path.join(a.weights, "sentence_bert_config.json")) as f:
            max_len = json.load(f)["max_seq_length"]
    sentences = read_lines(a.sentences)
    tok = load_tokenizer(a.weights, max_len)
    ids = tokenize(tok, sentences)
    os.makedirs(a.out, exist_ok=True)
    if not a.fp16_weights:
        with open(os.path.join(a.out, "token_ids.txt"), "w") as f:
            for row in ids:
                f.write(" ".join(map(str, row)) + "\n")
    model = Bert(a.weights, a.fp16_weights)
    emb = np.stack([model.embed([row])[0] for row in ids])
    # the padded, masked batch gives the same embeddings as one sentence at a time
    some = [i for i in range(len(ids)) if len(ids[i]) < 64][:6]
    S = max(len(ids[i]) for i in some)
    batch = np.zeros((len(some), S), np.int64)
    mask = np.zeros((len(some), S))
    for r, i in enumerate(some):
        batch[r, :len(ids[i])] = ids[i]
        mask[r, :len(ids[i])] = 1
    dev = np.abs(model.embed(batch, mask) - emb[some]).max()
    print("padded batch of %d vs one at a time: max |difference| %.2e" % (len(some), dev))
    assert dev < 1e-12
    name = "embeddings_f64_fp16w.txt" if a.fp16_weights else "embeddings_f64.txt"
    with open(os.path.join(a.out, name), "w") as f:
        for e in emb:
            f.write(" ".join("%.9e" % v for v in e) + "\n")
    n_tok = sum(map(len, ids))
    print("%d sentences (%d tokens, longest %d) -> %s%s" %
          (len(ids), n_tok, max(map(len, ids)), "" if a.fp16_weights else "token_ids.txt, ", name))
    if not sanity(sentences, emb, model, tok):
        sys.exit("the embeddings fail the similarity checks above")


if __name__ == "__main__":
    main()
