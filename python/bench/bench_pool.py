"""2-D pooling: gko (ctypes) next to torch in the same process, on ResNet-18's
two pools (the stem's 3x3 stride-2 max pool and the global average pool
before the classifier) and a large average pool; device time by CUDA-graph
replay (median per call); bytes = x read once + y written, as a fraction
of the device-to-device copy measured in this run.  x = torch / gko.

    PYTHONPATH=python python3 python/bench/bench_pool.py [--batches 32,128] [--json FILE]
"""
import argparse
import json
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import gko  # noqa: E402
import gko.pool as gp  # noqa: E402
from harness import copy_bandwidth, device_time  # noqa: E402

# name, C, H=W, kernel, stride, pad, mode
CASES = [("stem_max3x3s2", 64, 112, 3, 2, 1, "max"),
         ("global_avg7x7", 512, 7, 7, 1, 0, "avg"),
         ("avg2x2s2", 256, 56, 2, 2, 0, "avg")]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batches", default="32,128")
    ap.add_argument("--json")
    args = ap.parse_args()
    torch.manual_seed(0)
    h = gko.Handle()
    bw = copy_bandwidth()
    print("# %s, %s; copy %.0f GB/s" % (torch.cuda.get_device_name(),
                                         gko.diagnostics(0).splitlines()[0], bw))
    print("%-14s %4s %-5s %-9s %8s %8s %6s %7s %7s %9s" % (
        "case", "N", "lay", "dtype", "gko_us", "torch_us", "x", "gko%cp", "tch%cp", "max_err"))
    rows = []
    for n in [int(b) for b in args.batches.split(",")]:
        for name, c, hw, k, st, pad, mode in CASES:
            for layout in ("nhwc", "nchw"):
                for dt in (torch.float16, torch.bfloat16, torch.float32):
                    fmt = torch.channels_last if layout == "nhwc" else torch.contiguous_format
                    x = torch.randn(n, c, hw, hw, device="cuda").to(dt).contiguous(
                        memory_format=fmt)
                    if mode == "max":
                        g_fn = lambda: gp.max_pool2d(h, x, k, st, pad)  # noqa: E731
                        t_fn = lambda: F.max_pool2d(x, k, st, pad)  # noqa: E731
                    elif k == hw:
                        g_fn = lambda: gp.adaptive_avg_pool2d_1(h, x)  # noqa: E731
                        t_fn = lambda: F.adaptive_avg_pool2d(x, 1)  # noqa: E731
                    else:
                        g_fn = lambda: gp.avg_pool2d(h, x, k, st, pad)  # noqa: E731
                        t_fn = lambda: F.avg_pool2d(x, k, st, pad)  # noqa: E731
                    y, ref = g_fn(), t_fn()
                    err = ((y.float() - ref.float()).abs().max() /
                           ref.float().abs().max().clamp_min(1e-30)).item()
                    g_dev, t_dev = device_time(g_fn), device_time(t_fn)
                    moved = (x.numel() + y.numel()) * x.element_size()
                    r = dict(case=name, n=n, layout=layout, dtype=str(dt).replace("torch.", ""),
                             gko_us=g_dev, torch_us=t_dev, ratio=t_dev / g_dev,
                             gko_frac_copy=moved / (g_dev * 1e3) / bw,
                             torch_frac_copy=moved / (t_dev * 1e3) / bw, max_rel_err=err,
                             copy_gbs=bw)
                    rows.append(r)
                    print("%-14s %4d %-5s %-9s %8.1f %8.1f %6.2f %6.0f%% %6.0f%% %9.1e" % (
                        name, n, layout, r["dtype"], g_dev, t_dev, r["ratio"],
                        100 * r["gko_frac_copy"], 100 * r["torch_frac_copy"], err))
                    sys.stdout.flush()
                    del x, y, ref
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
