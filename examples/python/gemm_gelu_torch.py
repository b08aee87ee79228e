"""A Linear layer with bias and erf-GELU through gko's ctypes binding, on torch
tensors, checked against float64 and compared with torch's own
F.gelu(F.linear(x, w, b)) in the same precision.

    PYTHONPATH=python python3 examples/python/gemm_gelu_torch.py

gko.gemm.linear(h, x, w, b, activation="gelu") is one GEMM with the epilogue
GKO_EPILOGUE_BIAS_GELU_ERF (x @ w.T + b, then x * Phi(x)), enqueued on torch's
current stream.  Exit status: 0 PASS, 1 FAIL, 2 torch, CUDA or a usable GPU
missing (with a message saying which)."""
import os
import sys

try:
    import torch
    import torch.nn.functional as F
except ImportError:
    print("gemm_gelu_torch: cannot run: PyTorch is not installed (pip install torch)")
    sys.exit(2)
if not torch.cuda.is_available():
    print("gemm_gelu_torch: cannot run: torch sees no CUDA device (torch %s, built for CUDA %s)"
          % (torch.__version__, torch.version.cuda))
    sys.exit(2)

try:
    import gko
except ImportError:  # not on PYTHONPATH: use the binding of this source tree
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                    "python"))
    import gko
import gko.gemm

# Tolerances: relative Frobenius error against float64 from the same (rounded)
# inputs.  Products accumulate in f32 (768 terms: ~1e-6), so what remains is
# the rounding of the output to its dtype: with the default fusion cuBLASLt
# fuses the bias and gko's pass applies the erf GELU, i.e. two roundings of
# at most 2^-p relative each (p = 24 f32, 11 f16, 8 bf16), about 0.4 * 2^-p
# RMS each.  Expected: f32 ~1e-7, f16 ~3e-4, bf16 ~2.5e-3; the bounds sit
# 4-10x above.  torch's own error (one rounding in F.linear, one in F.gelu)
# is printed beside gko's for comparison.
TOL = {torch.float32: 1e-5, torch.float16: 2e-3, torch.bfloat16: 1.5e-2}

BATCH, SEQ, IN, OUT = 8, 128, 768, 3072     # BERT-base's first FFN layer


def rel_err(t, ref):
    """Relative Frobenius error of t against the float64 reference."""
    return ((t.double() - ref).norm() / ref.norm()).item()


def main():
    try:
        # kept open until the process ends: gko.gemm.linear caches its plans,
        # and a handle must outlive its plans
        h = gko.Handle()
    except gko.GkoError as e:           # no driver, no device, old driver, no kernel
        print("gemm_gelu_torch: cannot run: %s" % e)
        return 2
    except OSError as e:                # libgko.so.0 not built or not found
        print("FAIL: cannot load libgko (run make, or set GKO_LIBRARY): %s" % e)
        return 1
    dev = torch.device("cuda", torch.cuda.current_device())
    print("gemm_gelu_torch: gko %s, torch %s, %s" % (gko.version(), torch.__version__,
                                                      torch.cuda.get_device_name(dev)))
    g = torch.Generator(device=dev).manual_seed(1234)   # fixed seed, fresh values
    fails = 0
    for dtype in (torch.float32, torch.float16, torch.bfloat16):
        if dtype == torch.bfloat16 and not torch.cuda.is_bf16_supported():
            print("  bfloat16 skipped: no bf16 on this GPU")
            continue
        x = torch.empty(BATCH, SEQ, IN, device=dev).uniform_(-1, 1, generator=g).to(dtype)
        w = (torch.empty(OUT, IN, device=dev).uniform_(-1, 1, generator=g)
             * (2.0 / IN ** 0.5)).to(dtype)
        b = (torch.empty(OUT, device=dev).uniform_(-0.5, 0.5, generator=g)).to(dtype)

        name = str(dtype).replace("torch.", "")
        try:
            y = gko.gemm.linear(h, x, w, b, activation="gelu")     # [BATCH, SEQ, OUT]
        except gko.GkoError as e:       # status name and the library's reason
            print("  %-8s gko.gemm.linear failed: %s" % (name, e))
            fails += 1
            continue
        y_torch = F.gelu(F.linear(x, w, b))
        ref = F.gelu(F.linear(x.double(), w.double(), b.double()))
        torch.cuda.synchronize()
        err, err_torch = rel_err(y, ref), rel_err(y_torch, ref)
        max_err = (y.double() - ref).abs().max().item()
        ok = (y.shape == ref.shape and bool(torch.isfinite(y).all())
              and err <= TOL[dtype])
        fails += not ok
        print("  %-8s y = gelu(x @ w.T + b) %s: gko relative error %.2e (max |error| %.2e), "
              "torch %.2e, tolerance %.0e -> %s"
              % (name, list(y.shape), err, max_err, err_torch,
                 TOL[dtype], "ok" if ok else "WRONG"))
    if fails:
        print("FAIL: %d dtype(s) failed or outside the tolerance" % fails)
        return 1
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
