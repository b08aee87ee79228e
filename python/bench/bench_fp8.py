"""FP8: gko (ctypes) next to torch in the same process.  GEMM: gko.gemm.scaled_mm
against torch._scaled_mm (both cuBLASLt FP8 kernels; same inputs, per-tensor
and row-wise factors, bf16 out) and against torch's bf16 matmul of the same
values; quantize with amax (gko.fp8.quantize: one kernel) against torch's
(x * s).clamp(-448, 448).to(float8_e4m3fn) plus x.abs().amax().  Device time
by CUDA-graph replay, median per call; x = torch / gko.

    PYTHONPATH=python python3 python/bench/bench_fp8.py [--json FILE]
"""
import argparse
import json
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import gko  # noqa: E402
import gko.fp8  # noqa: E402
import gko.gemm  # noqa: E402
from harness import copy_bandwidth, device_time  # noqa: E402

SHAPES = [("square8192", 8192, 8192, 8192), ("square4096", 4096, 4096, 4096),
          ("qkv", 4096, 2304, 768), ("proj", 4096, 768, 768), ("ffn1", 4096, 3072, 768),
          ("ffn2", 4096, 768, 3072)]


def gemm_rows(h, rows):
    print("%-11s %-7s %9s %9s %6s %9s %6s %9s" % ("shape", "scales", "gko_us", "torch_us",
                                                 "x", "bf16_us", "vs16", "rel_err"))
    for name, m, n, k in SHAPES:
        a = (torch.randn(m, k, device="cuda") * 2).to(torch.float8_e4m3fn)
        w = (torch.randn(n, k, device="cuda") * 2).to(torch.float8_e4m3fn)
        a16, w16 = a.to(torch.bfloat16), w.to(torch.bfloat16)
        for mode in ("tensor", "rowwise"):
            if mode == "tensor":
                sa = torch.tensor([0.5], device="cuda")
                sb = torch.tensor([0.25], device="cuda")
            else:
                sa = torch.rand(m, 1, device="cuda") + 0.5
                sb = torch.rand(1, n, device="cuda") + 0.5
            g_fn = lambda: gko.gemm.scaled_mm(h, a, w.t(), sa, sb,  # noqa: E731
                                              out_dtype=torch.bfloat16)
            t_fn = lambda: torch._scaled_mm(a, w.t(), scale_a=sa, scale_b=sb,  # noqa: E731
                                            out_dtype=torch.bfloat16)
            got, ref = g_fn(), t_fn()
            err = ((got.float() - ref.float()).norm() / ref.float().norm()).item()
            tg, tt = device_time(g_fn), device_time(t_fn)
            t16 = device_time(lambda: a16 @ w16.t()) if mode == "tensor" else float("nan")
            print("%-11s %-7s %9.1f %9.1f %5.2fx %9.1f %5.2fx %9.2e" % (
                name, mode, tg, tt, tt / tg, t16, t16 / tg, err))
            rows.append(dict(op="gemm_fp8", shape=name, m=m, n=n, k=k, scales=mode, gko_us=tg,
                             torch_us=tt, bf16_us=t16, rel_err_vs_torch=err))


def quantize_rows(h, rows, bw):
    print("%-9s %-6s %9s %9s %6s %7s %7s" % ("op", "dtype", "gko_us", "torch_us", "x",
                                             "gko%cp", "tch%cp"))
    n = 1 << 28
    for dt in (torch.float32, torch.bfloat16):
        x = (torch.randn(n, device="cuda") * 3).to(dt)
        s = torch.tensor([100.0], device="cuda")
        amax = torch.empty(1, device="cuda")
        q = torch.empty(n, dtype=torch.float8_e4m3fn, device="cuda")
        g_fn = lambda: gko.fp8.quantize(h, x, torch.float8_e4m3fn, scale=s,  # noqa: E731
                                        amax=amax, out=q)

        def t_fn():
            return (x * s).clamp(-448, 448).to(torch.float8_e4m3fn), x.abs().amax()
        g_fn()
        ref, ref_amax = t_fn()
        same = torch.equal(q.view(torch.uint8), ref.view(torch.uint8))
        same = same and amax.item() == ref_amax.float().item()
        tg, tt = device_time(g_fn), device_time(t_fn)
        byts = n * (x.element_size() + 1)
        print("%-9s %-6s %9.1f %9.1f %5.2fx %6.1f%% %6.1f%%%s" % (
            "quantize", str(dt)[6:], tg, tt, tt / tg, 100 * byts / tg / 1e3 / bw,
            100 * byts / tt / 1e3 / bw, "" if same else "  (results differ)"))
        rows.append(dict(op="quantize_amax", dtype=str(dt), n=n, gko_us=tg, torch_us=tt,
                         same_bytes_and_amax=same))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json")
    args = ap.parse_args()
    torch.manual_seed(0)
    h = gko.Handle()
    bw = copy_bandwidth()
    print("# %s, %s; copy %.0f GB/s" % (torch.cuda.get_device_name(),
                                         gko.diagnostics(0).splitlines()[0], bw))
    rows = []
    gemm_rows(h, rows)
    quantize_rows(h, rows, bw)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
