"""GEMM: gko (ctypes, planned execute) next to PyTorch in the same process, on
the same inputs.  torch.matmul for the plain shapes; for BERT's FFN1 linear
layer F.linear, F.linear with bias, torch._addmm_activation (cuBLASLt's
bias+GELU-tanh epilogue) and F.gelu(F.linear(...)) (erf, eager).

Decode shapes: m = 1 or 16 rows against 4096 x 4096 and
11008 x 4096 weights, in both layouts (W [n, k] through F.linear, B [k, n]
through torch.matmul), gko with the cuBLASLt and the WMMA backend forced,
the weights rotated over copies totalling >= 256 MB so that they come from
HBM (the H200's L2 holds 60 MiB); % floor = (bytes of x, W and y once /
4.2 TB/s) / device time.

Device time: CUDA-graph replay (harness.device_time), median per call.
Latency: one call until done, median.  ratio = torch time / gko time (above 1:
gko is faster).  max_err: max |D - ref| / max |ref| on sampled rows against a
float64 reference.

    PYTHONPATH=python python3 python/bench/bench_gemm.py [--quick] [--decode-only] [--json FILE]

--epilogue-sweep (alone): the data behind AUTO's choice for fused GELU
epilogues.  FFN1-like linear layers y = act(x W^T + bias), x [m, h],
W [4h, h], h in 384/768/1024/1280/2048 (MiniLM, BERT-base, BERT-large,
GPT-2 large, 2048-wide models), m in 512/2048/4096/8192 tokens, and 4096^3,
8192^3; f16 and bf16: device time of the plain cuBLASLt GEMM, and of
cuBLASLt (plus gko's GELU-erf pass) and the SM90 backend forced for
bias+GELU-erf (also without the bias, and with B [k, n] instead of W [n, k])
and bias+GELU-tanh; sm/lt < 1 is where SM90 is faster.  The last column
names the backend AUTO's plan takes for each of the four.

    PYTHONPATH=python python3 python/bench/bench_gemm.py --epilogue-sweep [--json FILE]

--linear-sweep (alone): the same shapes without GELU: the plain GEMM (x W^T
and B [k, n]), bias, bias + ReLU and bias + residual (beta = 1, C its own
tensor), each with cuBLASLt and SM90 forced; sm/lt < 1 is where SM90 is
faster; the last column names the backend AUTO's plan takes for each.

    PYTHONPATH=python python3 python/bench/bench_gemm.py --linear-sweep [--json FILE]
"""
import math
import argparse
import json
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import gko  # noqa: E402
import gko.gemm as gg  # noqa: E402
from harness import device_time, latency  # noqa: E402

SHAPES = [("bert_qkv", 4096, 2304, 768), ("bert_proj", 4096, 768, 768),
          ("bert_ffn1", 4096, 3072, 768), ("bert_ffn2", 4096, 768, 3072),
          ("square4k", 4096, 4096, 4096), ("square8k", 8192, 8192, 8192),
          ("k1027", 4096, 4096, 1027), ("odd1000", 1000, 1000, 1000)]

DT = {"f16": torch.float16, "bf16": torch.bfloat16, "tf32": torch.float32}
DT_NAME = {torch.float16: "f16", torch.bfloat16: "bf16"}


def max_err(y, ref_fn, m, rows=16):
    idx = torch.linspace(0, m - 1, rows, device=y.device).long()
    ref = ref_fn(idx)
    got = y[idx].double()
    return ((got - ref).abs().max() / ref.abs().max().clamp_min(1e-30)).item()


def row(rows, name, dtype, flops, g_dev, t_dev, g_lat, t_lat, err, backend, extra=""):
    r = dict(name=name, dtype=dtype, gko_us=g_dev, torch_us=t_dev, gko_latency_us=g_lat,
             torch_latency_us=t_lat, dev_ratio=t_dev / g_dev, lat_ratio=t_lat / g_lat,
             gko_tflops=flops / (g_dev * 1e6), torch_tflops=flops / (t_dev * 1e6),
             max_rel_err=err, backend=backend)
    rows.append(r)
    print("%-26s %-5s %9.1f %9.1f %6.2fx %9.1f %9.1f %6.2fx %7.0f %7.0f %8.1e  %s%s" % (
        name, dtype, g_dev, t_dev, r["dev_ratio"], g_lat, t_lat, r["lat_ratio"],
        r["gko_tflops"], r["torch_tflops"], err, backend, extra))
    sys.stdout.flush()
    return r


def backend_of(plan):
    # the plan's own part: an SM90 plan also describes its fallback and AUTO's rule
    full = plan.describe()
    b = full.split(":")[0]
    d = full.split("pointers less than 16-byte aligned at execute")[0]
    d = d.split("AUTO: ")[0]
    if "padded operands" in d:
        b += "+pad"
    if "gko's pass" in d:
        b += "+gko-epilogue"
    return b


DECODE = [(1, 4096, 4096), (16, 4096, 4096), (1, 11008, 4096), (16, 11008, 4096)]
HBM_BYTES_PER_US = 4.2e6  # the decode memory floor: 4.2 TB/s


def rotation(tensors):
    """A function returning the next of `tensors` on each call."""
    state = [0]

    def nxt():
        t = tensors[state[0] % len(tensors)]
        state[0] += 1
        return t
    return nxt


def decode(h, rows, verbose):
    print("# decode: device time by graph replay, weights rotated beyond L2; "
          "%%floor = memory floor / time (floor: bytes once / 4.2 TB/s)")
    print("%-28s %-5s %8s | %9s %6s %8s | %9s %6s %8s | %9s %6s %8s | %7s %7s" % (
        "case", "dtype", "floor_us", "lt_us", "%floor", "lt_lat", "wmma_us", "%floor",
        "wmma_lat", "torch_us", "%floor", "tch_lat", "t/lt", "t/wmma"))
    for dname in ("f16", "bf16"):
        dt = DT[dname]
        for wl in ("W[n,k]", "B[k,n]"):
            for m, n, k in DECODE:
                x = torch.randn(m, k, device="cuda").to(dt)
                nrot = max(2, math.ceil(256e6 / (n * k * 2)))
                if wl == "W[n,k]":
                    ws = [(torch.randn(n, k, device="cuda") / 8).to(dt) for _ in range(nrot)]
                else:
                    ws = [(torch.randn(k, n, device="cuda") / 8).to(dt) for _ in range(nrot)]
                y = torch.empty(m, n, device="cuda", dtype=dt)
                calls = max(20, nrot)
                floor_us = (m * k + n * k + m * n) * 2 / HBM_BYTES_PER_US
                res = {}
                for be in ("cublaslt", "wmma"):
                    plan = gg.Plan(h, dt, dt, m, n, k, transb=(wl == "W[n,k]"), backend=be)
                    if verbose:
                        print("# plan %s %s %dx%dx%d %s: %s" % (wl, dname, m, n, k, be,
                                                               plan.describe()))
                    nxt = rotation(ws)
                    fn = lambda: plan.execute(x, nxt(), y)  # noqa: E731
                    dev = device_time(fn, calls=calls)
                    lat = latency(fn)
                    plan.execute(x, ws[0], y)
                    w0 = ws[0].double()
                    ref = x.double() @ (w0.t() if wl == "W[n,k]" else w0)
                    err = ((y.double() - ref).abs().max() / ref.abs().max()).item()
                    res[be] = (dev, lat, err)
                    plan.close()
                nxt = rotation(ws)
                if wl == "W[n,k]":
                    t_fn = lambda: F.linear(x, nxt())  # noqa: E731
                else:
                    t_fn = lambda: torch.matmul(x, nxt())  # noqa: E731
                t_dev = device_time(t_fn, calls=calls)
                t_lat = latency(t_fn)
                name = "decode %s %dx%dx%d" % (wl, m, n, k)
                print("%-28s %-5s %8.2f | %9.2f %5.1f%% %8.1f | %9.2f %5.1f%% %8.1f | %9.2f "
                      "%5.1f%% %8.1f | %6.2fx %6.2fx  err lt %.1e wmma %.1e" % (
                          name, dname, floor_us, res["cublaslt"][0],
                          100 * floor_us / res["cublaslt"][0], res["cublaslt"][1],
                          res["wmma"][0], 100 * floor_us / res["wmma"][0], res["wmma"][1],
                          t_dev, 100 * floor_us / t_dev, t_lat, t_dev / res["cublaslt"][0],
                          t_dev / res["wmma"][0], res["cublaslt"][2], res["wmma"][2]))
                sys.stdout.flush()
                rows.append(dict(name=name, dtype=dname, floor_us=floor_us,
                                 gko_cublaslt_us=res["cublaslt"][0],
                                 gko_cublaslt_latency_us=res["cublaslt"][1],
                                 gko_wmma_us=res["wmma"][0], gko_wmma_latency_us=res["wmma"][1],
                                 torch_us=t_dev, torch_latency_us=t_lat,
                                 max_rel_err_cublaslt=res["cublaslt"][2],
                                 max_rel_err_wmma=res["wmma"][2]))
                del x, ws, y


SWEEP_H = (384, 768, 1024, 1280, 2048)
SWEEP_M = (512, 2048, 4096, 8192)
SWEEP_SQUARE = (4096, 8192)
# (key, epilogue, W's layout: True = W [n, k] (x W^T), False = B [k, n]); each
# timed with cuBLASLt (+ gko's pass) and SM90 forced, AUTO's choice recorded
SWEEP_CASES = (("erf", "bias_gelu_erf", True),
               ("erf_nobias", "gelu_erf", True),
               ("erf_kn", "bias_gelu_erf", False),
               ("tanh", "bias_gelu_tanh", True))


def sweep_operands():
    """The sweeps' problems, both dtypes: (dtype name, dtype, m, n, k, x [m, k],
    W [n, k], the same W stored [k, n], a bias [n], y [m, n])."""
    shapes = [(m, 4 * hid, hid) for hid in SWEEP_H for m in SWEEP_M]
    shapes += [(q, q, q) for q in SWEEP_SQUARE]
    for dname in ("f16", "bf16"):
        dt = DT[dname]
        for m, n, k in shapes:
            w = (torch.randn(n, k, device="cuda") / math.sqrt(k)).to(dt)
            yield (dname, dt, m, n, k, torch.randn(m, k, device="cuda").to(dt), w,
                   w.t().contiguous(), torch.randn(n, device="cuda").to(dt),
                   torch.empty(m, n, device="cuda", dtype=dt))


def time_forced(h, dt, m, n, k, wt, ep, run, t, auto, key, verbose, after_sm90=None):
    """t[key_lt], t[key_sm90]: device time of run(plan) with cuBLASLt and SM90
    forced (after_sm90(plan) then runs once on the SM90 plan); auto[key]: the
    backend AUTO's plan takes."""
    for tag, backend in (("lt", "cublaslt"), ("sm90", "sm90"), ("auto", "auto")):
        plan = gg.Plan(h, dt, dt, m, n, k, transb=wt, epilogue=ep, backend=backend)
        if verbose:
            print("# plan %s %s %dx%dx%d %s: %s" % (key, tag, m, n, k, DT_NAME[dt],
                                                    plan.describe()))
        if tag == "auto":
            auto[key] = backend_of(plan).split("+")[0]
        else:
            t["%s_%s" % (key, tag)] = device_time(lambda: run(plan))
        if tag == "sm90" and after_sm90:
            after_sm90(plan)
        plan.close()


def epilogue_sweep(h, rows, verbose):
    """sm/lt: the SM90 plan's device time over cuBLASLt's (plus gko's pass
    for GELU-erf) for bias+GELU-erf (x W^T; without the bias; with B [k, n])
    and bias+GELU-tanh; AUTO: the backend AUTO's plan takes for each."""
    print("%-18s %-5s %7s | %7s %7s %6s | %6s %6s | %7s %7s %6s | %8s  %s" % (
        "case", "dtype", "plain", "erf_lt", "erf_sm", "sm/lt", "nobias", "B[k,n]",
        "tnh_lt", "tnh_sm", "sm/lt", "sm90_err", "AUTO: erf nobias B[k,n] tanh"))
    for dname, dt, m, n, k, x, w, wkn, bias, y in sweep_operands():
        plan = gg.Plan(h, dt, dt, m, n, k, transb=True, backend="cublaslt")
        t = {"plain": device_time(lambda: plan.execute(x, w, y))}
        plan.close()
        err, auto = [None], {}

        def check(plan):
            plan.execute(x, w, y, bias=bias)
            err[0] = max_err(y, lambda i: F.gelu(x[i].double() @ w.double().t()
                                                 + bias.double()), m)

        for key, ep, wt in SWEEP_CASES:
            bb = bias if ep.startswith("bias") else None
            ww = w if wt else wkn
            time_forced(h, dt, m, n, k, wt, ep, lambda p: p.execute(x, ww, y, bias=bb), t,
                        auto, key, verbose, check if key == "erf" else None)
        r = dict(name="%dx%dx%d" % (m, n, k), dtype=dname, m=m, n=n, k=k,
                 sm90_erf_max_rel_err=err[0], auto_backend=auto)
        r.update(("%s_us" % key, v) for key, v in t.items())
        rows.append(r)
        q = lambda a: t[a + "_sm90"] / t[a + "_lt"]  # noqa: E731
        print("%-18s %-5s %7.1f | %7.1f %7.1f %5.2fx | %5.2fx %5.2fx | %7.1f %7.1f %5.2fx | "
              "%8.1e  %s" % (r["name"], dname, t["plain"], t["erf_lt"], t["erf_sm90"],
                             q("erf"), q("erf_nobias"), q("erf_kn"), t["tanh_lt"],
                             t["tanh_sm90"], q("tanh"), err[0],
                             " ".join(auto[c[0]] for c in SWEEP_CASES)))
        sys.stdout.flush()
        del x, y, w, wkn, bias


# (key, epilogue, W's layout as in SWEEP_CASES, residual)
LINEAR_CASES = (("plain", "none", True, False), ("plain_kn", "none", False, False),
                ("bias", "bias", True, False), ("relu", "bias_relu", True, False),
                ("res", "bias", True, True))


def linear_sweep(h, rows, verbose):
    """sm/lt: the SM90 plan's device time over cuBLASLt's for the epilogues
    cuBLASLt fuses itself (and the plain GEMM in both layouts)."""
    keys = [c[0] for c in LINEAR_CASES]
    print("%-18s %-5s %7s %7s | %s | AUTO: %s" % (
        "case", "dtype", "lt_us", "sm_us", " ".join("%8s" % k for k in keys), " ".join(keys)))
    for dname, dt, m, n, k, x, w, wkn, bias, y in sweep_operands():
        c = torch.randn(m, n, device="cuda").to(dt)
        t, auto = {}, {}
        for key, ep, wt, res in LINEAR_CASES:
            bb = bias if ep != "none" else None
            ww = w if wt else wkn
            cc, beta = (c, 1.0) if res else (None, 0.0)
            time_forced(h, dt, m, n, k, wt, ep,
                        lambda p: p.execute(x, ww, y, c=cc, bias=bb, beta=beta), t, auto, key,
                        verbose)
        r = dict(name="%dx%dx%d" % (m, n, k), dtype=dname, m=m, n=n, k=k, auto_backend=auto)
        r.update(("%s_us" % key, v) for key, v in t.items())
        rows.append(r)
        print("%-18s %-5s %7.1f %7.1f | %s | %s" % (
            r["name"], dname, t["plain_lt"], t["plain_sm90"],
            " ".join("%7.2fx" % (t[q + "_sm90"] / t[q + "_lt"]) for q in keys),
            " ".join(auto[q] for q in keys)))
        sys.stdout.flush()
        del x, y, w, wkn, bias, c


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="skip 8192^3")
    ap.add_argument("--decode-only", action="store_true", help="only the decode shapes")
    ap.add_argument("--json")
    ap.add_argument("--verbose", action="store_true", help="print each plan's description")
    ap.add_argument("--epilogue-sweep", action="store_true",
                    help="only the fused-GELU sweep behind AUTO's epilogue rule")
    ap.add_argument("--linear-sweep", action="store_true",
                    help="only the plain / bias / ReLU / residual sweep, SM90 against cuBLASLt")
    args = ap.parse_args()
    torch.manual_seed(0)
    h = gko.Handle()
    print("# %s, %s" % (torch.cuda.get_device_name(), gko.diagnostics(0).splitlines()[0]))
    print("# *_us: device time by CUDA-graph replay; *_lat: one call until done; "
          "ratio = torch / gko")
    rows = []
    if args.epilogue_sweep or args.linear_sweep:
        (epilogue_sweep if args.epilogue_sweep else linear_sweep)(h, rows, args.verbose)
        if args.json:
            with open(args.json, "w") as f:
                json.dump(rows, f, indent=1)
        return
    print("%-26s %-5s %9s %9s %7s %9s %9s %7s %7s %7s %8s  %s" % (
        "case", "dtype", "gko_us", "torch_us", "ratio", "gko_lat", "tch_lat", "ratio",
        "gkoTF/s", "tchTF/s", "max_err", "backend"))
    decode(h, rows, args.verbose)
    if args.decode_only:
        if args.json:
            with open(args.json, "w") as f:
                json.dump(rows, f, indent=1)
        return
    for dname, dt in DT.items():
        tf32 = dname == "tf32"
        torch.backends.cuda.matmul.allow_tf32 = tf32
        for name, m, n, k in SHAPES:
            if name == "square8k" and (tf32 or args.quick):
                continue
            a = torch.randn(m, k, device="cuda").to(dt)
            b = torch.randn(k, n, device="cuda").to(dt)
            y = torch.empty(m, n, device="cuda", dtype=dt)
            plan = gg.Plan(h, dt, dt, m, n, k, compute="tf32" if tf32 else "default")
            if args.verbose:
                print("# plan %s %s: %s" % (name, dname, plan.describe()))
            g_fn = lambda: plan.execute(a, b, y)  # noqa: E731
            t_fn = lambda: torch.matmul(a, b)  # noqa: E731
            g_dev, t_dev = device_time(g_fn), device_time(t_fn)
            g_lat, t_lat = latency(g_fn), latency(t_fn)
            g_fn()
            err = max_err(y, lambda i: a[i].double() @ b.double(), m)
            row(rows, "gemm %s %dx%dx%d" % (name, m, n, k), dname, 2.0 * m * n * k, g_dev,
                t_dev, g_lat, t_lat, err, backend_of(plan))
            plan.close()
            del a, b, y
        torch.backends.cuda.matmul.allow_tf32 = False

    # the linear layer at BERT FFN1: x [4096, 768] @ W^T, W [3072, 768]
    m, n, k = 4096, 3072, 768
    for dname in ("f16", "bf16"):
        dt = DT[dname]
        x = torch.randn(m, k, device="cuda").to(dt)
        w = (torch.randn(n, k, device="cuda") / 8).to(dt)
        bias = torch.randn(n, device="cuda").to(dt)
        y = torch.empty(m, n, device="cuda", dtype=dt)
        flops = 2.0 * m * n * k
        base = None

        def ref(i, act=None, with_bias=True):
            z = x[i].double() @ w.double().t()
            if with_bias:
                z = z + bias.double()
            if act == "tanh":
                return F.gelu(z, approximate="tanh")
            if act == "erf":
                return F.gelu(z)
            return z

        cases = [
            ("linear ffn1 x@W^T", "none", None, lambda: F.linear(x, w),
             lambda i: ref(i, None, False)),
            ("linear ffn1 +bias", "bias", bias, lambda: F.linear(x, w, bias), lambda i: ref(i)),
            ("linear ffn1 +bias+gelu_tanh", "bias_gelu_tanh", bias,
             lambda: torch._addmm_activation(bias, x, w.t(), use_gelu=True),
             lambda i: ref(i, "tanh")),
            ("linear ffn1 +bias+gelu_erf", "bias_gelu_erf", bias,
             lambda: F.gelu(F.linear(x, w, bias)), lambda i: ref(i, "erf")),
        ]
        cases.append(("linear ffn1 +bias+gelu_erf WMMA", "bias_gelu_erf", bias,
                      lambda: F.gelu(F.linear(x, w, bias)), lambda i: ref(i, "erf")))
        for name, ep, bb, t_fn, ref_fn in cases:
            plan = gg.Plan(h, dt, dt, m, n, k, transb=True, epilogue=ep,
                           backend="wmma" if name.endswith("WMMA") else "auto")
            if args.verbose:
                print("# plan %s %s: %s" % (name, dname, plan.describe()))
            g_fn = lambda: plan.execute(x, w, y, bias=bb)  # noqa: E731
            g_dev, t_dev = device_time(g_fn), device_time(t_fn)
            g_lat, t_lat = latency(g_fn), latency(t_fn)
            g_fn()
            err = max_err(y, ref_fn, m)
            extra = ""
            if base is None:
                base = (g_dev, t_dev)
            else:
                extra = "  (gko %.2fx its plain GEMM; torch %.2fx its)" % (g_dev / base[0],
                                                                           t_dev / base[1])
            row(rows, name, dname, flops, g_dev, t_dev, g_lat, t_lat, err, backend_of(plan),
                extra)
            plan.close()
        del x, w, bias, y
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
