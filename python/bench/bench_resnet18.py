"""ResNet-18 inference: gko (ctypes) next to PyTorch in one process, on the
same weights and the same input -- the Python companion of
`gko-bench model resnet18`.

    GKO_LIBRARY=lib/libgko.so python3 python/bench/bench_resnet18.py --batch 32,128
        [--dtype f16|bf16] [--repeat R] [--seed S] [--no-compile] [--json FILE]

The model is examples/python/export_resnet18.py's make_model(seed):
torchvision's resnet18 with seeded random weights and non-trivial BatchNorm
statistics (eval mode).  The input is torch.randn from a generator seeded
seed + 1, rounded to --dtype.

torch (all channels_last, model.to(dtype).cuda(), cudnn.benchmark = True,
under torch.inference_mode()):
  eager          model(x)
  eager+graph    one forward captured into a torch.cuda.CUDAGraph after
                 warm-up on a side stream, replayed
  compile        torch.compile(model), default mode (dynamo is reset per
                 batch, so each batch size gets its own static compilation)
  compile+graph  the compiled module's forward captured likewise, replayed
gko (one CUDA graph of the whole forward, replayed):
  every BatchNorm folded into the convolution before it on the host in
  float64 (w' = w g / sqrt(var + eps), b' = beta - mean g / sqrt(var + eps)),
  then rounded to --dtype; filters KRSC, activations NHWC (channels_last);
  one gko.conv.Plan per convolution (stem and each block's first conv
  BIAS_RELU; downsample BIAS; each block's second conv BIAS_RELU with the
  shortcut as the residual z, beta = 1), the 3x3/2 max pool and the global
  average pool through gko.pool, the classifier through a gko.gemm.Plan
  (x @ W.T + b); one workspace for every plan, every buffer allocated before
  the capture, so the forward allocates nothing.

Timing: device time per batch from CUDA events around back-to-back calls or
graph replays (harness.stream_time: warm-up, then --repeat repetitions of 10
calls, median); images/s = batch / seconds per batch.  gko/compile and
gko/compile+graph are gko's images/s over torch's (above 1: gko is faster).

Correctness, once per batch: a float64 reference (the float32 model in
float64 on CUDA, NCHW, on the input as both sides saw it, i.e. rounded to
--dtype); gko_err and torch_err are max |logits - ref| / max |ref| of gko's
graph replay and of torch eager in --dtype; top1(gko) counts the images whose
top-1 class equals the reference's.  A top-1 disagreement is a real error
(exit status 1) when the reference's top-2 margin for that image exceeds 10x
the max |logit error| of torch eager in the same dtype (a flip that rounding
at that precision cannot explain), or when gko's logits are not finite.

Exit status: 0 done, 1 a real error (above), 2 cannot run (no torch or
torchvision, no CUDA device, libgko not loadable), with a message saying why.
"""
import argparse
import copy
import json
import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", ".."))

CALLS = 10          # back-to-back calls (or replays) between the two events
ERR_MARGIN = 10.0   # top-2 margin / torch's max |error| above which a flip is real


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--batch", default="1,32,128,256", help="comma-separated batch sizes")
    ap.add_argument("--dtype", choices=("f16", "bf16"), default="f16")
    ap.add_argument("--repeat", type=int, default=15,
                    help="timed repetitions, median taken (harness.stream_time's reps)")
    ap.add_argument("--seed", type=int, default=0, help="weights' seed; the input's is seed + 1")
    ap.add_argument("--no-compile", action="store_true", help="skip the torch.compile modes")
    ap.add_argument("--json", help="write the rows to FILE as JSON")
    args = ap.parse_args()
    try:
        args.batches = [int(b) for b in args.batch.split(",") if b.strip()]
    except ValueError:
        ap.error("--batch takes comma-separated integers, not %r" % args.batch)
    if not args.batches or min(args.batches) < 1:
        ap.error("--batch needs batch sizes of at least 1")
    if args.repeat < 1:
        ap.error("--repeat must be at least 1")
    return args


def cannot_run(why):
    print("bench_resnet18: cannot run: %s" % why)
    return 2


# ---------------------------------------------------------------------------
# gko's ResNet-18
# ---------------------------------------------------------------------------

def fold_bn(conv, bn, dtype):
    """(w' KRSC, b') of conv followed by bn (eval), folded in float64 on the
    host, rounded to dtype, on CUDA."""
    import torch

    w = conv.weight.detach().double().cpu()
    scale = bn.weight.detach().double().cpu() / torch.sqrt(
        bn.running_var.detach().double().cpu() + bn.eps)
    b = bn.bias.detach().double().cpu() - bn.running_mean.detach().double().cpu() * scale
    if conv.bias is not None:
        b = b + conv.bias.detach().double().cpu() * scale
    w = w * scale.view(-1, 1, 1, 1)
    w = w.to(dtype).permute(0, 2, 3, 1).contiguous()      # [K, R, S, C]
    return w.cuda(), b.to(dtype).cuda()


def fold_model(model, dtype):
    """Every conv + BN pair of a torchvision ResNet-18, folded: a dict of
    name -> (conv module, w', b'), and the classifier's (W, b) in dtype."""
    convs = {"conv1": (model.conv1,) + fold_bn(model.conv1, model.bn1, dtype)}
    for lname in ("layer1", "layer2", "layer3", "layer4"):
        for i, blk in enumerate(getattr(model, lname)):
            p = "%s.%d" % (lname, i)
            convs[p + ".conv1"] = (blk.conv1,) + fold_bn(blk.conv1, blk.bn1, dtype)
            convs[p + ".conv2"] = (blk.conv2,) + fold_bn(blk.conv2, blk.bn2, dtype)
            if blk.downsample is not None:
                ds_conv, ds_bn = blk.downsample[0], blk.downsample[1]
                convs[p + ".downsample"] = (ds_conv,) + fold_bn(ds_conv, ds_bn, dtype)
    fc = (model.fc.weight.detach().to(dtype).contiguous().cuda(),
          model.fc.bias.detach().to(dtype).contiguous().cuda())
    return convs, fc


class GkoResNet18:
    """ResNet-18's forward for one batch size through gko: plans, buffers
    and one workspace made here; forward() only enqueues (nothing is
    allocated, nothing waits), so it can be captured into a CUDA graph.
    Write the input into .x (channels_last [N, 3, 224, 224]); the logits
    land in .logits [N, 1000]."""

    def __init__(self, handle, model, folded, n, dtype):
        import torch
        import gko.conv as gc
        import gko.gemm as gg
        import gko.pool as gp

        self._gc = gc
        self.h, self.n, self.dtype = handle, n, dtype
        self.plans = []
        self.steps = []           # callables taking the workspace, in forward order
        convs, (fc_w, fc_b) = folded
        self._act = lambda c, hh, ww: torch.empty(  # noqa: E731
            (n, c, hh, ww), dtype=dtype, device="cuda", memory_format=torch.channels_last)

        self.x = self._act(3, 224, 224)
        cur = self._conv(convs["conv1"], self.x, "bias_relu")
        # max pool 3x3, stride 2, padding 1 (floor mode): torch's output size
        c, hh, ww = cur.shape[1:]
        pooled = self._act(c, (hh + 2 - 3) // 2 + 1, (ww + 2 - 3) // 2 + 1)
        stem = cur
        self.steps.append(lambda ws: gp.max_pool2d(handle, stem, 3, 2, 1, out=pooled))
        cur = pooled
        for lname in ("layer1", "layer2", "layer3", "layer4"):
            for i, _ in enumerate(getattr(model, lname)):
                p = "%s.%d" % (lname, i)
                inp = cur
                t = self._conv(convs[p + ".conv1"], inp, "bias_relu")
                short = inp
                if p + ".downsample" in convs:
                    short = self._conv(convs[p + ".downsample"], inp, "bias")
                cur = self._conv(convs[p + ".conv2"], t, "bias_relu", z=short)
        # global average pool: [N, 512, 7, 7] -> [N, 512, 1, 1] (channels_last
        # and contiguous alike), read by the GEMM as [N, 512]
        c = cur.shape[1]
        gap = self._act(c, 1, 1)
        feat = gap.view(n, c)     # a view (never a copy): the GEMM reads gap's memory
        last = cur
        self.steps.append(lambda ws: gp.adaptive_avg_pool2d_1(handle, last, out=gap))
        k_out = fc_w.shape[0]
        self.logits = torch.empty((n, k_out), dtype=dtype, device="cuda")
        fc = gg.Plan(handle, dtype, dtype, n, k_out, c, transb=True, epilogue="bias")
        self.plans.append(fc)
        logits = self.logits
        self.steps.append(lambda ws: fc.execute(feat, fc_w, logits, bias=fc_b, workspace=ws))
        self._keep = (convs, fc_w, fc_b, gap, feat)
        need = max(p.workspace_size for p in self.plans)
        # never empty: a non-NULL pointer of enough bytes for every plan
        self.workspace = torch.empty(max(need, 256), dtype=torch.uint8, device="cuda")
        self.workspace_bytes = need

    def _conv(self, entry, x, epilogue, z=None):
        """Adds one convolution step on x (+ residual z); returns its output."""
        conv, w, b = entry
        if conv.groups != 1 or tuple(conv.dilation) != (1, 1):
            raise ValueError("ResNet-18's convolutions have one group and no dilation")
        n, c, hh, ww = x.shape
        k = conv.out_channels
        r, s = conv.kernel_size
        plan = self._gc.Plan(self.h, self.dtype, "nhwc", n, c, hh, ww, k, r, s,
                             stride=tuple(conv.stride), padding=tuple(conv.padding),
                             epilogue=epilogue)
        self.plans.append(plan)
        _, _, oh, ow = plan.shape
        y = self._act(k, oh, ow)
        if z is None:
            self.steps.append(lambda ws: plan.execute(x, w, y, bias=b, workspace=ws))
        else:
            self.steps.append(lambda ws: plan.execute(x, w, y, bias=b, z=z, beta=1.0,
                                                      workspace=ws))
        return y

    def forward(self):
        ws = self.workspace
        for step in self.steps:
            step(ws)
        return self.logits

    def paths(self):
        """How many convolutions run on each gko path (IMPLICIT, IM2COL, ...)."""
        out = {}
        for p in self.plans:
            if isinstance(p, self._gc.Plan):
                out[p.path.name] = out.get(p.path.name, 0) + 1
        return out

    def close(self):
        for p in self.plans:
            p.close()
        self.plans = []
        self.steps = []


# ---------------------------------------------------------------------------
# timing
# ---------------------------------------------------------------------------

def images_per_s(stream_time, fn, n, reps):
    us = stream_time(fn, calls=CALLS, reps=reps)
    return n / (us * 1e-6)


def rel_err(y, ref):
    return ((y.double() - ref).abs().max() / ref.abs().max().clamp_min(1e-300)).item()


def ratio(a, b):
    return a / b if b and not math.isnan(b) and not math.isnan(a) else float("nan")


# ---------------------------------------------------------------------------

def main():
    args = parse_args()
    try:
        import torch
        import torchvision
    except ImportError as e:
        return cannot_run("%s (pip install torch torchvision)" % e)
    if not torch.cuda.is_available():
        return cannot_run("torch sees no CUDA device (torch %s, built for CUDA %s)"
                          % (torch.__version__, torch.version.cuda))
    sys.path.insert(0, os.path.join(HERE, ".."))                      # python/: gko
    sys.path.insert(0, HERE)                                          # harness
    sys.path.insert(0, os.path.join(REPO, "examples", "python"))      # make_model
    try:
        import gko
        import gko.conv  # noqa: F401
        import gko.gemm  # noqa: F401
        import gko.pool  # noqa: F401
    except ImportError as e:
        return cannot_run("the gko binding: %s" % e)
    try:
        # open until the process ends: plans hold the handle
        h = gko.Handle()
    except gko.GkoError as e:         # no driver, no device, old driver, no kernel image
        return cannot_run(str(e))
    except (OSError, ImportError) as e:  # libgko.so.0 not found, or another ABI major
        return cannot_run("cannot load libgko (run make, or set GKO_LIBRARY): %s" % e)
    from harness import capture, stream_time
    from export_resnet18 import make_model

    dt = {"f16": torch.float16, "bf16": torch.bfloat16}[args.dtype]
    if dt == torch.bfloat16 and not torch.cuda.is_bf16_supported():
        return cannot_run("this GPU has no bf16")
    torch.backends.cudnn.benchmark = True

    print("# torch %s (CUDA %s, cuDNN %s), torchvision %s; %s; %s"
          % (torch.__version__, torch.version.cuda, torch.backends.cudnn.version(),
             torchvision.__version__, torch.cuda.get_device_name(),
             gko.diagnostics(0).splitlines()[0]))
    print("# ResNet-18 (make_model(seed=%d)), %s, channels_last; images/s from device time "
          "(events around %d back-to-back calls or replays, median of %d)"
          % (args.seed, args.dtype, CALLS, args.repeat))
    print("# err: max |logits - float64 ref| / max |ref|; top1(gko): images whose top-1 "
          "matches the reference")

    base = make_model(args.seed)                                   # float32, CPU
    ref_model = copy.deepcopy(base).double().cuda().eval()
    model = copy.deepcopy(base).to(dt).cuda().to(memory_format=torch.channels_last).eval()
    with torch.inference_mode():
        folded = fold_model(base, dt)

    hdr = ("%5s %9s %12s %9s %14s %11s %12s %18s %9s %9s %10s"
           % ("batch", "eager", "eager+graph", "compile", "compile+graph", "gko(graph)",
              "gko/compile", "gko/compile+graph", "gko_err", "torch_err", "top1(gko)"))
    rows, real_errors, notes = [], [], []
    nan = float("nan")
    print(hdr)
    sys.stdout.flush()
    for n in args.batches:
        torch.cuda.empty_cache()
        with torch.inference_mode():
            gen = torch.Generator().manual_seed(args.seed + 1)
            x32 = torch.randn((n, 3, 224, 224), generator=gen, dtype=torch.float32)
            x = x32.to(dt).cuda().contiguous(memory_format=torch.channels_last)
            ref = ref_model(x.double().contiguous())                  # NCHW, float64
            torch.cuda.synchronize()

            # torch eager, and eager + CUDA graph
            y_eager = model(x)
            torch_err = rel_err(y_eager, ref)
            torch_abs = (y_eager.double() - ref).abs().max().item()
            eager = images_per_s(stream_time, lambda: model(x), n, args.repeat)
            g, _ = capture(lambda: model(x))
            eager_graph = images_per_s(stream_time, g.replay, n, args.repeat)
            del g

            # torch.compile, and compile + CUDA graph
            comp = comp_graph = nan
            if not args.no_compile:
                torch._dynamo.reset()
                cmodel = torch.compile(model)
                cmodel(x)                                         # compiles
                torch.cuda.synchronize()
                comp = images_per_s(stream_time, lambda: cmodel(x), n, args.repeat)
                try:
                    g, _ = capture(lambda: cmodel(x))
                    comp_graph = images_per_s(stream_time, g.replay, n, args.repeat)
                    del g
                except RuntimeError as e:
                    notes.append("batch %d: compile+graph capture failed: %s"
                                 % (n, str(e).splitlines()[0] if str(e) else type(e).__name__))
                del cmodel

            # gko: plans and buffers, one direct forward, then the graph
            net = GkoResNet18(h, base, folded, n, dt)
            net.x.copy_(x)
            direct = net.forward().clone()
            g, out = capture(net.forward)
            g.replay()
            torch.cuda.synchronize()
            y_gko = out.clone()
            if not torch.equal(direct, y_gko):
                notes.append("batch %d: gko's graph replay differs from its direct forward "
                             "(max |diff| %.3g)"
                             % (n, (direct.double() - y_gko.double()).abs().max().item()))
            gko_ips = images_per_s(stream_time, g.replay, n, args.repeat)
            paths, ws_bytes = net.paths(), net.workspace_bytes
            del g, out
            net.close()
            del net

            gko_err = rel_err(y_gko, ref)
            finite = bool(torch.isfinite(y_gko).all())
            r_top1 = ref.argmax(dim=1)
            g_top1 = y_gko.double().argmax(dim=1)
            top2 = ref.topk(2, dim=1).values
            margin = top2[:, 0] - top2[:, 1]
            agree = int((g_top1 == r_top1).sum().item())
            flips = (g_top1 != r_top1) & (margin > ERR_MARGIN * torch_abs)
            bad = [int(i) for i in flips.nonzero().flatten().tolist()]
            if not finite:
                real_errors.append("batch %d: gko's logits are not all finite" % n)
            for i in bad:
                real_errors.append(
                    "batch %d, image %d: gko's top-1 is %d, the reference's %d with a top-2 "
                    "margin of %.3g (> %g x torch's max |error| %.3g)"
                    % (n, i, int(g_top1[i]), int(r_top1[i]), margin[i].item(), ERR_MARGIN,
                       torch_abs))
            del ref, y_eager, x, x32

        row = dict(batch=n, dtype=args.dtype, eager=eager, eager_graph=eager_graph,
                   compile=comp, compile_graph=comp_graph, gko_graph=gko_ips,
                   gko_over_compile=ratio(gko_ips, comp),
                   gko_over_compile_graph=ratio(gko_ips, comp_graph), gko_err=gko_err,
                   torch_err=torch_err, torch_max_abs_err=torch_abs, top1_agree=agree,
                   real_errors=len(bad) + (0 if finite else 1), gko_conv_paths=paths,
                   gko_workspace_bytes=ws_bytes)
        rows.append(row)

        def num(v, fmt):
            return ("%" + fmt) % v if not math.isnan(v) else "-"
        print("%5d %9s %12s %9s %14s %11s %12s %18s %9.1e %9.1e %10s" % (
            n, num(eager, ".0f"), num(eager_graph, ".0f"), num(comp, ".0f"),
            num(comp_graph, ".0f"), num(gko_ips, ".0f"), num(row["gko_over_compile"], ".2f"),
            num(row["gko_over_compile_graph"], ".2f"), gko_err, torch_err,
            "%d/%d" % (agree, n)))
        sys.stdout.flush()

    first = rows[0] if rows else {}
    if first:
        print("# gko convolutions by path: %s; workspace %.1f MB at batch %d"
              % (", ".join("%s %d" % kv for kv in sorted(first["gko_conv_paths"].items())),
                 first["gko_workspace_bytes"] / 1e6, first["batch"]))
    for line in notes:
        print("# note: %s" % line)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    if real_errors:
        for line in real_errors:
            print("ERROR: %s" % line)
        print("FAIL: gko's top-1 disagrees with the float64 reference where rounding cannot "
              "explain it")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
