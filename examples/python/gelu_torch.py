"""gko's GELU on torch tensors through the ctypes binding, checked against
torch in float64.

    PYTHONPATH=python python3 examples/python/gelu_torch.py

Exit status: 0 PASS, 1 FAIL, 2 torch or a usable GPU missing (with a message
saying which)."""
import os
import sys

try:
    import torch
except ImportError:
    print("gelu_torch: cannot run: PyTorch is not installed (pip install torch)")
    sys.exit(2)
if not torch.cuda.is_available():
    print("gelu_torch: cannot run: torch sees no CUDA device")
    sys.exit(2)
try:
    import gko
except ImportError:  # not on PYTHONPATH: use the binding of this source tree
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                    "python"))
    import gko

with gko.Handle() as h:
    x = torch.randn(1 << 20, device="cuda", dtype=torch.float16)
    y = gko.gelu(h, x)                         # erf form, on torch's current stream
    ref = torch.nn.functional.gelu(x.double())
    err = ((y.double() - ref).norm() / ref.norm()).item()
    ok = err < 1e-3
    print("gelu f16: relative error %.2e -> %s" % (err, "PASS" if ok else "FAIL"))
    sys.exit(0 if ok else 1)
