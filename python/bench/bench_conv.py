"""Conv2d: gko (ctypes, planned execute) next to PyTorch in the same process,
on the same inputs, over ResNet-18's convolution layers:
  - torch F.conv2d with torch.backends.cudnn.benchmark = True (cuDNN picks
    its fastest algorithm; TF32 off for f32, as gko's f32 default);
  - PyTorch's own im2col lowering: F.unfold + matmul (+ view to NCHW);
  - gko's GEMM lowering (GKO_CONV_ALGO_GEMM: im2col + GEMM) next to the
    plan AUTO chooses (implicit GEMM on sm_90 where it applies), and for
    the basic block's second convolution (3x3, stride 1, C == K) the fused
    residual + ReLU (gko_conv_execute_residual, z = the block's input)
    against the same plan without it (res_x = fused / plain time).

Device time: CUDA-graph replay (harness.device_time), median per call.
Latency: one call until done, median.  Ratios are torch time / gko time
(above 1: gko is faster).  flops = 2 N K OH OW C R S; bytes = the column
matrix written + read by gko (0 on the direct 1x1 path) + x + w + y.
max_err: max |y - cuDNN's y| / max |cuDNN's y|.  gemm_us, x: gko's GEMM lowering and
its time / gko's; res_us, res_x: the fused residual and fused / plain (nan off the
basic block's shape).

    PYTHONPATH=python python3 python/bench/bench_conv.py [--quick] [--batches 1,32,128]
        [--kinds f16-nhwc,f16-nchw,f32-nchw] [--json FILE] [--verbose] [--lean]
"""
import argparse
import json
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import gko  # noqa: E402
import gko.conv as gc  # noqa: E402
from harness import copy_bandwidth, device_time, latency  # noqa: E402

# name, C, K, H=W, R=S, stride, pad
LAYERS = [("conv1", 3, 64, 224, 7, 2, 3), ("l1_3x3", 64, 64, 56, 3, 1, 1),
          ("l2_3x3s2", 64, 128, 56, 3, 2, 1), ("l2_3x3", 128, 128, 28, 3, 1, 1),
          ("l2_ds1x1", 64, 128, 56, 1, 2, 0), ("l3_3x3", 256, 256, 14, 3, 1, 1),
          ("l4_3x3", 512, 512, 7, 3, 1, 1)]

KINDS = {"f16-nhwc": (torch.float16, "nhwc"), "f16-nchw": (torch.float16, "nchw"),
         "bf16-nhwc": (torch.bfloat16, "nhwc"), "f32-nchw": (torch.float32, "nchw"),
         "f32-nhwc": (torch.float32, "nhwc")}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="N = 32, f16 NHWC only")
    ap.add_argument("--batches", default="1,32,128")
    ap.add_argument("--kinds", default="f16-nhwc,f16-nchw,f32-nchw")
    ap.add_argument("--json")
    ap.add_argument("--verbose", action="store_true", help="print each plan's description")
    ap.add_argument("--lean", action="store_true",
                    help="gko, cuDNN and the fused residual only (no unfold, lowering, latency)")
    args = ap.parse_args()
    batches = [32] if args.quick else [int(b) for b in args.batches.split(",")]
    kinds = ["f16-nhwc"] if args.quick else args.kinds.split(",")
    torch.manual_seed(0)
    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    h = gko.Handle()
    bw = copy_bandwidth()
    print("# %s, %s; copy %.0f GB/s" % (torch.cuda.get_device_name(),
                                         gko.diagnostics(0).splitlines()[0], bw))
    print("# *_us: device time by CUDA-graph replay; *_lat: one call until done; "
          "x = torch / gko")
    print("%-9s %4s %-8s %8s %8s %6s %8s %6s %8s %6s %8s %6s %8s %8s %6s %7s %7s %7s %8s  %s" % (
        "layer", "N", "kind", "gko_us", "cudnn_us", "x", "unfld_us", "x", "gemm_us", "x",
        "res_us", "res_x", "gko_lat", "cdn_lat", "x", "gkoTF/s", "cdnTF/s", "col_MB", "max_err",
        "plan"))
    rows = []
    for kind in kinds:
        dt, layout = KINDS[kind]
        fmt = torch.channels_last if layout == "nhwc" else torch.contiguous_format
        for n in batches:
            for name, c, k, hw, rs, stride, pad in LAYERS:
                x = torch.randn(n, c, hw, hw, device="cuda").to(dt).contiguous(memory_format=fmt)
                w = (torch.randn(k, c, rs, rs, device="cuda") / (c * rs * rs) ** 0.5).to(dt)
                w = w.contiguous(memory_format=fmt)
                oh = (hw + 2 * pad - rs) // stride + 1
                y = torch.empty(n, k, oh, oh, device="cuda", dtype=dt, memory_format=fmt)
                plan = gc.Plan(h, dt, layout, n, c, hw, hw, k, rs, rs, stride=stride, padding=pad)
                lowered = gc.Plan(h, dt, layout, n, c, hw, hw, k, rs, rs, stride=stride,
                                  padding=pad, algo="gemm")
                if args.verbose:
                    print("# plan %s N=%d %s: %s" % (name, n, kind, plan.describe()))
                g_fn = lambda: plan.execute(x, w, y)  # noqa: E731
                l_fn = lambda: lowered.execute(x, w, y)  # noqa: E731
                block = stride == 1 and c == k and rs == 3
                if block:  # the basic block's second conv: + shortcut, ReLU
                    b = torch.randn(k, device="cuda").to(dt)
                    rplan = gc.Plan(h, dt, layout, n, c, hw, hw, k, rs, rs, stride=stride,
                                    padding=pad, epilogue="bias_relu")
                    r_fn = lambda: rplan.execute(x, w, y, bias=b, z=x)  # noqa: E731
                    p_fn = lambda: rplan.execute(x, w, y, bias=b)  # noqa: E731
                t_fn = lambda: F.conv2d(x, w, stride=stride, padding=pad)  # noqa: E731
                w2 = w.reshape(k, -1) if layout == "nchw" else w.contiguous().reshape(k, -1)

                def u_fn():
                    cols = F.unfold(x, (rs, rs), padding=pad, stride=stride)
                    return (w2 @ cols).view(n, k, oh, oh)

                nan = float("nan")
                g_dev, t_dev = device_time(g_fn), device_time(t_fn)
                u_dev = nan if args.lean else device_time(u_fn)
                l_dev = nan if args.lean else device_time(l_fn)
                r_dev = p_dev = float("nan")
                if block:
                    r_dev, p_dev = device_time(r_fn), device_time(p_fn)
                    rplan.close()
                g_lat, t_lat = (nan, nan) if args.lean else (latency(g_fn), latency(t_fn))
                g_fn()
                ref = t_fn().float()
                err = ((y.float() - ref).abs().max() / ref.abs().max().clamp_min(1e-30)).item()
                flops = 2.0 * n * k * oh * oh * c * rs * rs
                es = x.element_size()
                col = plan.info(gc.Info.COL_BYTES) * plan.info(gc.Info.CHUNKS)
                nbytes = 2 * col + (x.numel() + w.numel() + y.numel()) * es
                r = dict(name=name, n=n, dtype=str(dt).replace("torch.", ""), layout=layout,
                         gko_us=g_dev, torch_us=t_dev, unfold_us=u_dev, gko_latency_us=g_lat,
                         torch_latency_us=t_lat, flops=flops, bytes=nbytes,
                         col_bytes_written=col, col_bytes_read=col,
                         gko_tflops=flops / (g_dev * 1e6), torch_tflops=flops / (t_dev * 1e6),
                         ratio_cudnn=t_dev / g_dev, ratio_unfold=u_dev / g_dev,
                         gemm_lowering_us=l_dev, ratio_gemm_lowering=l_dev / g_dev,
                         residual_us=r_dev, residual_plain_us=p_dev,
                         ratio_residual=r_dev / p_dev,
                         lat_ratio=t_lat / g_lat, max_rel_err=err, path=plan.path.name,
                         chunk=plan.info(gc.Info.CHUNK), chunks=plan.info(gc.Info.CHUNKS),
                         workspace_bytes=plan.workspace_size, copy_gbs=bw)
                rows.append(r)
                print("%-9s %4d %-8s %8.1f %8.1f %6.2f %8.1f %6.2f %8.1f %6.2f %8.1f %6.3f %8.1f "
                      "%8.1f %6.2f %7.1f %7.1f %7.1f %8.1e  %s x%d" % (
                          name, n, kind, g_dev, t_dev, r["ratio_cudnn"], u_dev, r["ratio_unfold"],
                          l_dev, r["ratio_gemm_lowering"], r_dev, r["ratio_residual"], g_lat,
                          t_lat, r["lat_ratio"], r["gko_tflops"], r["torch_tflops"],
                          2 * col / 1e6, err, r["path"].lower(), r["chunks"]))
                sys.stdout.flush()
                plan.close()
                lowered.close()
                del x, w, y, w2
                torch.cuda.empty_cache()
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
