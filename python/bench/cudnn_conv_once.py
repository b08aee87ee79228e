"""One torch F.conv2d call (cudnn.benchmark on, NHWC f16, with a bias)
between cudaProfilerStart and cudaProfilerStop, after five warm-up calls:
what ncu profiles of cuDNN next to gko's kernel (docs/conv.md).

    ncu --clock-control none --set full --profile-from-start off \\
        python3 python/bench/cudnn_conv_once.py N C H W K R STRIDE PAD
"""
import sys

import torch
import torch.nn.functional as F


def main():
    n, c, h, w, k, r, stride, pad = map(int, sys.argv[1:9])
    torch.backends.cudnn.benchmark = True
    cl = torch.channels_last
    x = torch.randn(n, c, h, w, device="cuda", dtype=torch.half).to(memory_format=cl)
    wt = torch.randn(k, c, r, r, device="cuda", dtype=torch.half).to(memory_format=cl)
    b = torch.randn(k, device="cuda", dtype=torch.half)
    for _ in range(5):
        F.conv2d(x, wt, b, stride, pad)
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStart()
    F.conv2d(x, wt, b, stride, pad)
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStop()


if __name__ == "__main__":
    main()
