"""GELU forward at 2^28 elements: gko (ctypes) vs torch.nn.functional.gelu,
same process, same inputs; bytes read + written over device time, as a
fraction of the device-to-device copy measured in this run.

    PYTHONPATH=python python3 python/bench/bench_gelu.py [--n N] [--json FILE]
"""
import argparse
import json
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import gko  # noqa: E402
from harness import copy_bandwidth, device_time, latency, stream_time  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1 << 28)
    ap.add_argument("--json")
    args = ap.parse_args()
    torch.manual_seed(0)
    h = gko.Handle()
    copy = copy_bandwidth()
    print("# %s, %s" % (torch.cuda.get_device_name(), gko.diagnostics(0).splitlines()[0]))
    print("# device-to-device copy: %.0f GB/s (read + write)" % copy)
    print("# *_us: device time by CUDA-graph replay; *_ev: back-to-back launches between "
          "events; *_lat: one call until done")
    print("%-8s %-5s %8s %8s %8s %7s %8s %8s %8s %7s %9s %9s %8s" % (
        "dtype", "form", "gko_us", "gko_ev", "gko_lat", "gko%cp", "torch_us", "torch_ev",
        "tch_lat", "tch%cp", "dev_ratio", "lat_ratio", "max_err"))
    rows = []
    for dt in (torch.float32, torch.float16, torch.bfloat16):
        x = (torch.randn(args.n, device="cuda") * 3).to(dt)
        y = torch.empty_like(x)
        # an untimed pass first: fresh 2^28-element buffers measured slower
        # on their first timed use (2026-11-29, H200)
        device_time(lambda: gko.gelu(h, x, out=y), calls=5, reps=3)
        device_time(lambda: F.gelu(x), calls=5, reps=3)
        for approx in ("none", "tanh"):
            moved = 2 * x.numel() * x.element_size()
            g_dev = device_time(lambda: gko.gelu(h, x, out=y, approximate=approx))
            t_dev = device_time(lambda: F.gelu(x, approximate=approx))
            g_ev = stream_time(lambda: gko.gelu(h, x, out=y, approximate=approx))
            t_ev = stream_time(lambda: F.gelu(x, approximate=approx))
            g_lat = latency(lambda: gko.gelu(h, x, out=y, approximate=approx))
            t_lat = latency(lambda: F.gelu(x, approximate=approx))
            gko.gelu(h, x, out=y, approximate=approx)
            sl = slice(0, 1 << 22)
            ref = F.gelu(x[sl].double(), approximate=approx)
            err = ((y[sl].double() - ref).abs().max() / ref.abs().max()).item()
            r = dict(dtype=str(dt).replace("torch.", ""), form="erf" if approx == "none" else "tanh",
                     n=args.n, gko_us=g_dev, torch_us=t_dev, gko_events_us=g_ev, torch_events_us=t_ev, gko_latency_us=g_lat,
                     torch_latency_us=t_lat, gko_gbs=moved / (g_dev * 1e3),
                     torch_gbs=moved / (t_dev * 1e3), copy_gbs=copy, max_rel_err=err)
            rows.append(r)
            print("%-8s %-5s %8.1f %8.1f %8.1f %6.1f%% %8.1f %8.1f %8.1f %6.1f%% %8.2fx %8.2fx "
                  "%8.1e" % (r["dtype"], r["form"], g_dev, g_ev, g_lat, 100 * r["gko_gbs"] / copy,
                             t_dev, t_ev, t_lat, 100 * r["torch_gbs"] / copy, t_dev / g_dev,
                             t_lat / g_lat, err))
        del x, y
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
