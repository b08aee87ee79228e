"""gko's GELU on torch tensors through the ctypes binding, checked against
torch in float64.   PYTHONPATH=python python3 examples/python/gelu_torch.py"""
import torch
import gko

with gko.Handle() as h:
    x = torch.randn(1 << 20, device="cuda", dtype=torch.float16)
    y = gko.gelu(h, x)                         # erf form, on torch's current stream
    ref = torch.nn.functional.gelu(x.double())
    err = ((y.double() - ref).norm() / ref.norm()).item()
    print("gelu f16: relative error %.2e -> %s" % (err, "PASS" if err < 1e-3 else "FAIL"))
