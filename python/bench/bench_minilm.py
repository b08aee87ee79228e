"""MiniLM-L6 sentence embeddings: gko (ctypes) next to PyTorch in one process,
on the same weights and the same token ids -- the Python companion of
examples/minilm.c.

    GKO_LIBRARY=lib/libgko.so python3 python/bench/bench_minilm.py \
        --model build/models/all-MiniLM-L6-v2 [--shapes 1x32,32x128,256x128]
        [--dtype f16|bf16] [--repeat R] [--no-compile] [--json FILE]

torch: transformers' BertModel from the model directory, in --dtype on CUDA,
SDPA attention, eval mode, under torch.inference_mode(); the embedding is
sentence-transformers' mean pooling over the attention mask, then
F.normalize.  Modes: eager; eager + CUDA graph (one forward captured after
warm-up, replayed); torch.compile (default mode, dynamo reset per shape);
compile + CUDA graph.
gko: the same encoder composed of gko calls on the model's tensors
(gko.encoder.embedding x2 and layer_norm with the residual, then per layer one
QKV GEMM plan with the bias, gko.encoder.attention on column slices of it,
the output projection with the residual as beta * C, layer_norm, FFN1 with
the bias + erf-GELU epilogue, FFN2 with the residual, layer_norm; then
mean_pool with normalisation), every buffer allocated before one CUDA graph
captures the whole forward; the graph is replayed.

Input: random token ids in [1000, vocab) for B sentences of S tokens (every
token kept), seeded.  Timing: device time per batch from CUDA events around
10 back-to-back replays or calls, median of --repeat; sentences/s = B / time.
Check: cosine similarity of gko's embeddings with torch eager's (same dtype)
and with a float32 torch reference; the minimum over the batch is printed.

Exit status: 0 done, 1 gko's embeddings disagree (cosine with the float32
reference below 0.999), 2 cannot run (no torch/transformers, no CUDA device,
libgko not loadable, no model directory), with a message saying why.
"""
import argparse
import json
import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", ".."))
CALLS = 10


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default=os.path.join(REPO, "build", "models", "all-MiniLM-L6-v2"))
    ap.add_argument("--shapes", default="1x32,32x128,256x128",
                    help="batch x tokens, comma-separated")
    ap.add_argument("--dtype", default="f16", choices=["f16", "bf16"])
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-compile", action="store_true")
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    a.shapes = [tuple(int(v) for v in s.split("x")) for s in a.shapes.split(",")]
    return a


def cannot_run(why):
    print("bench_minilm: cannot run: %s" % why)
    return 2


class GkoEncoder:
    """The encoder as gko calls on preallocated torch buffers (capturable)."""

    def __init__(self, gko, h, model, batch, seq, dtype):
        import torch
        import gko.encoder  # noqa: F401
        import gko.gemm  # noqa: F401
        self.gko, self.h, self.B, self.S = gko, h, batch, seq
        cfg = model.config
        self.heads, hd, ff = cfg.num_attention_heads, cfg.hidden_size, cfg.intermediate_size
        self.eps = cfg.layer_norm_eps
        dev = torch.device("cuda")
        emb = model.embeddings
        self.word = emb.word_embeddings.weight.detach()
        self.pos_type = (emb.position_embeddings.weight.float() +
                         emb.token_type_embeddings.weight[0].float()).to(dtype).contiguous()
        self.ln0 = (emb.LayerNorm.weight.detach(), emb.LayerNorm.bias.detach())
        self.layers = []
        for lay in model.encoder.layer:
            at = lay.attention
            wqkv = torch.cat([at.self.query.weight, at.self.key.weight, at.self.value.weight])
            bqkv = torch.cat([at.self.query.bias, at.self.key.bias, at.self.value.bias])
            self.layers.append(dict(
                wqkv=wqkv.detach().contiguous(), bqkv=bqkv.detach().contiguous(),
                wo=at.output.dense.weight.detach(), bo=at.output.dense.bias.detach(),
                ln1=(at.output.LayerNorm.weight.detach(), at.output.LayerNorm.bias.detach()),
                w1=lay.intermediate.dense.weight.detach(), b1=lay.intermediate.dense.bias.detach(),
                w2=lay.output.dense.weight.detach(), b2=lay.output.dense.bias.detach(),
                ln2=(lay.output.LayerNorm.weight.detach(), lay.output.LayerNorm.bias.detach())))
        t = batch * seq
        G = gko.gemm
        mk = lambda n, k, epi: G.Plan(h, dtype, dtype, t, n, k, transb=True, epilogue=epi,  # noqa
                                      static_operands="b")
        self.p_qkv, self.p_out = mk(3 * hd, hd, "bias"), mk(hd, hd, "bias")
        self.p_ffn1, self.p_ffn2 = mk(ff, hd, "bias_gelu_erf"), mk(hd, ff, "bias")
        need = max(p.workspace_size for p in (self.p_qkv, self.p_out, self.p_ffn1, self.p_ffn2))
        self.ws = torch.empty(max(need, 1), dtype=torch.uint8, device=dev)
        e = lambda *s: torch.empty(s, dtype=dtype, device=dev)  # noqa: E731
        self.wbuf, self.tbuf, self.x = e(t, hd), e(t, hd), e(t, hd)
        self.qkv, self.ctx, self.hbuf = e(t, 3 * hd), e(t, hd), e(t, ff)
        self.out = e(batch, hd)
        self.ids = torch.zeros(t, dtype=torch.int32, device=dev)
        self.pos = torch.arange(seq, dtype=torch.int32, device=dev).repeat(batch)
        self.lens = torch.full((batch,), seq, dtype=torch.int32, device=dev)

    def set_input(self, ids, lens):
        self.ids.copy_(ids.reshape(-1))
        self.lens.copy_(lens)

    def forward(self):
        enc, h, B, S = self.gko.encoder, self.h, self.B, self.S
        hd = self.x.shape[1]
        ws = self.ws
        enc.embedding(h, self.ids, self.word, out=self.wbuf)
        enc.embedding(h, self.pos, self.pos_type, out=self.tbuf)
        enc.layer_norm(h, self.wbuf, *self.ln0, eps=self.eps, residual=self.tbuf, out=self.x)
        q3 = self.qkv.view(B, S, 3 * hd)
        for L in self.layers:
            self.p_qkv.execute(self.x, L["wqkv"], self.qkv, bias=L["bqkv"], workspace=ws)
            enc.attention(h, q3[:, :, :hd], q3[:, :, hd:2 * hd], q3[:, :, 2 * hd:], self.heads,
                          lengths=self.lens, out=self.ctx.view(B, S, hd))
            self.p_out.execute(self.ctx, L["wo"], self.tbuf, c=self.x, bias=L["bo"], beta=1.0,
                               workspace=ws)
            enc.layer_norm(h, self.tbuf, *L["ln1"], eps=self.eps, out=self.x)
            self.p_ffn1.execute(self.x, L["w1"], self.hbuf, bias=L["b1"], workspace=ws)
            self.p_ffn2.execute(self.hbuf, L["w2"], self.tbuf, c=self.x, bias=L["b2"], beta=1.0,
                                workspace=ws)
            enc.layer_norm(h, self.tbuf, *L["ln2"], eps=self.eps, out=self.x)
        enc.mean_pool(h, self.x.view(B, S, hd), lengths=self.lens, normalize=True, out=self.out)
        return self.out


def torch_embed(model, ids, mask):
    import torch.nn.functional as F
    out = model(input_ids=ids, attention_mask=mask).last_hidden_state
    m = mask.unsqueeze(-1).to(out.dtype)
    e = (out * m).sum(1) / m.sum(1).clamp_min(1e-9)
    return F.normalize(e, p=2, dim=1)


def main():
    args = parse_args()
    try:
        import torch
        import transformers
    except ImportError as e:
        return cannot_run("%s (pip install torch transformers)" % e)
    if not torch.cuda.is_available():
        return cannot_run("torch sees no CUDA device")
    if not os.path.isfile(os.path.join(args.model, "config.json")):
        return cannot_run("no model at %s (make model-minilm)" % args.model)
    sys.path.insert(0, os.path.join(HERE, ".."))
    sys.path.insert(0, HERE)
    try:
        import gko
        h = gko.Handle()
    except Exception as e:  # noqa: BLE001 -- every reason is reported
        return cannot_run("gko: %s" % e)
    from harness import capture, stream_time

    dt = {"f16": torch.float16, "bf16": torch.bfloat16}[args.dtype]
    model = transformers.BertModel.from_pretrained(args.model, attn_implementation="sdpa",
                                                   add_pooling_layer=False)
    ref_model = model.float().cuda().eval()
    model = transformers.BertModel.from_pretrained(args.model, attn_implementation="sdpa",
                                                   add_pooling_layer=False,
                                                   torch_dtype=dt).cuda().eval()
    print("# torch %s, transformers %s; %s; %s" % (torch.__version__, transformers.__version__,
                                                    torch.cuda.get_device_name(),
                                                    gko.diagnostics(0).splitlines()[0]))
    print("# MiniLM (%s), %s; sentences/s from device time (events around %d back-to-back "
          "calls or replays, median of %d)" % (args.model, args.dtype, CALLS, args.repeat))
    hdr = ("%9s %9s %12s %9s %14s %11s %12s %18s %10s %10s"
           % ("shape", "eager", "eager+graph", "compile", "compile+graph", "gko(graph)",
              "gko/compile", "gko/compile+graph", "cos(gko)", "cos(torch)"))
    print(hdr)
    rows, bad = [], False
    nan = float("nan")
    per_s = lambda fn, b: b / (stream_time(fn, calls=CALLS, reps=args.repeat) * 1e-6)  # noqa
    for (B, S) in args.shapes:
        torch.cuda.empty_cache()
        with torch.inference_mode():
            gen = torch.Generator().manual_seed(args.seed + B * 1000 + S)
            ids = torch.randint(1000, model.config.vocab_size, (B, S), generator=gen).cuda()
            ids[:, 0], ids[:, -1] = 101, 102
            mask = torch.ones_like(ids)
            ref = torch_embed(ref_model, ids, mask).double()
            y = torch_embed(model, ids, mask)
            cos_t = torch.nn.functional.cosine_similarity(y.double(), ref).min().item()
            eager = per_s(lambda: torch_embed(model, ids, mask), B)
            g, _ = capture(lambda: torch_embed(model, ids, mask))
            eager_g = per_s(g.replay, B)
            del g
            comp = comp_g = nan
            if not args.no_compile:
                torch._dynamo.reset()
                cm = torch.compile(model)
                cf = lambda: torch_embed(cm, ids, mask)  # noqa: E731
                cf()
                comp = per_s(cf, B)
                g, _ = capture(cf)
                comp_g = per_s(g.replay, B)
                del g
            enc = GkoEncoder(gko, h, model, B, S, dt)
            enc.set_input(ids, mask.sum(1))
            g, out = capture(enc.forward)
            g.replay()
            torch.cuda.synchronize()
            cos_g = torch.nn.functional.cosine_similarity(out.double(), ref).min().item()
            gk = per_s(g.replay, B)
            del g
        best = comp_g if not math.isnan(comp_g) else eager_g
        row = dict(batch=B, tokens=S, eager=eager, eager_graph=eager_g, compile=comp,
                   compile_graph=comp_g, gko=gk, cos_gko=cos_g, cos_torch=cos_t,
                   gko_us=B / gk * 1e6)
        rows.append(row)
        bad |= not cos_g >= 0.999
        print("%9s %9.0f %12.0f %9.0f %14.0f %11.0f %12.2f %18.2f %10.6f %10.6f"
              % ("%dx%d" % (B, S), eager, eager_g, comp, comp_g, gk, gk / comp, gk / best,
                 cos_g, cos_t))
        sys.stdout.flush()
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(dtype=args.dtype, rows=rows), f, indent=1)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
