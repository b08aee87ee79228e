"""Checks examples/minilm's output against sentence-transformers, on the GPU
machine (needs torch, sentence-transformers and tokenizers):

    python3 python/tools/minilm_check.py --model DIR --sentences data/minilm/sentences.txt \
        --ids IDS.txt --emb f32=EMB_F32.txt --emb f16=EMB_F16.txt [--f64 EMB_F64.txt]

SentenceTransformer(DIR) (float32, on CUDA if available) embeds every line of
the sentence file; its tokenizer (truncation at the model's max_seq_length)
gives the reference token ids.  IDS.txt (minilm --ids) must hold exactly those
ids, one line per sentence; each EMB file (minilm --out: one line per sentence,
space-separated floats) must reach the cosine similarity the dtype requires
for every sentence: f32 >= 0.99999, f16 >= 0.9995, bf16 >= 0.995.  --f64 also
compares a float64 reference (python/tools/minilm_reference.py) with
sentence-transformers, to show the reference itself agrees.

Exit status: 0 every check passed, 1 a check failed, 2 cannot run.
"""
import argparse
import sys

THRESHOLD = {"f32": 0.99999, "f16": 0.9995, "bf16": 0.995}


def read_matrix(path):
    import numpy as np
    with open(path) as f:
        return np.array([[float(v) for v in line.split()] for line in f if line.strip()])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--sentences", required=True)
    ap.add_argument("--ids", default=None)
    ap.add_argument("--emb", action="append", default=[], help="DTYPE=FILE")
    ap.add_argument("--f64", default=None)
    a = ap.parse_args()
    try:
        import numpy as np
        import torch
        from sentence_transformers import SentenceTransformer
    except ImportError as e:
        print("minilm_check: cannot run: %s" % e)
        return 2
    with open(a.sentences, encoding="utf-8") as f:
        sentences = f.read().split("\n")
    if sentences and sentences[-1] == "":
        sentences.pop()
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    st = SentenceTransformer(a.model, device=dev).float()
    ref = st.encode(sentences, batch_size=64, convert_to_numpy=True).astype(np.float64)
    ok = True
    print("# sentence-transformers: %d sentences, max_seq_length %d, on %s"
          % (len(sentences), st.max_seq_length, dev))
    if a.ids:
        want = [st.tokenizer(s, truncation=True, max_length=st.max_seq_length)["input_ids"]
                for s in sentences]
        with open(a.ids) as f:
            got = [[int(v) for v in line.split()] for line in f.read().split("\n")[:len(want)]]
        diff = [i for i, (g, w) in enumerate(zip(got, want)) if g != w]
        if len(got) != len(want):
            diff.append(-1)
        print("token ids: %d of %d sentences identical%s"
              % (len(want) - len(diff), len(want),
                 "" if not diff else " (first difference: sentence %d)" % diff[0]))
        ok &= not diff

    def cosines(x):
        n = np.linalg.norm(x, axis=1) * np.linalg.norm(ref, axis=1)
        return (x * ref).sum(1) / np.maximum(n, 1e-300)

    for spec in a.emb:
        dt, path = spec.split("=", 1)
        x = read_matrix(path)
        if x.shape != ref.shape:
            print("%s: %s holds %s values, expected %s" % (dt, path, x.shape, ref.shape))
            ok = False
            continue
        c = cosines(x)
        need = THRESHOLD[dt]
        worst = int(np.argmin(c))
        print("%-4s min cosine %.8f (sentence %d), mean %.8f, need >= %g: %s"
              % (dt, c[worst], worst, c.mean(), need, "PASS" if c.min() >= need else "FAIL"))
        ok &= bool(c.min() >= need)
    if a.f64:
        c = cosines(read_matrix(a.f64))
        print("f64 reference vs sentence-transformers: min cosine %.9f" % c.min())
    print("minilm_check: %s" % ("PASS" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
