"""Exports a torchvision ResNet-18 with deterministic random weights, an input
batch and torch's logits for it, as the safetensors files that the C example
examples/resnet18.c reads.

    python3 examples/python/export_resnet18.py --out /tmp/rn18 [--batch 4] [--seed 0]
        [--dtype f32|f16]

Writes, in --out:
  resnet18.safetensors  the model's state_dict without the num_batches_tracked
                        entries, under torch's own names (conv1.weight [64, 3, 7, 7]
                        OIHW, bn1.weight / .bias / .running_mean / .running_var,
                        layer1.0.conv1.weight, ..., layer2.0.downsample.0.weight,
                        layer2.0.downsample.1.*, fc.weight [1000, 512], fc.bias),
                        in --dtype; metadata format, model and seed
  input.safetensors     "input" [N, 3, 224, 224] float32 NCHW: torch.randn from a
                        generator seeded seed + 1
  expect.safetensors    "logits" [N, 1000] float32: the model's logits computed in
                        float64 (on CUDA when available, else the CPU) from the
                        weights exactly as written (with --dtype f16: rounded to
                        f16, then widened to float64) and that input

The weights: torch.manual_seed(seed), torchvision.models.resnet18(weights=None)
(torchvision's own initialisation), then every BatchNorm made non-trivial so
that a consumer folding BN into the convolutions is tested: weight U(0.5, 1.5),
bias U(-0.2, 0.2), running_mean U(-0.2, 0.2), running_var U(0.5, 2.0), drawn
from torch's seeded generator in module order; eval mode.

The safetensors writer is this file's own (no dependency on the safetensors
package): an 8-byte little-endian header length, the JSON header (names
sorted, data contiguous in that order from offset 0, padded with spaces to a
multiple of 8 bytes), then the raw little-endian data.

make_model(seed) is also what python/bench/bench_resnet18.py builds its model
with.  torch and torchvision are imported only when needed (--help works
without them).
"""
import argparse
import json
import os
import struct
import sys

_ST_DTYPES = {"torch.float32": "F32", "torch.float16": "F16", "torch.bfloat16": "BF16",
              "torch.float64": "F64"}


def make_model(seed):
    """torchvision's ResNet-18 (no pretrained weights) from seed, with random
    BatchNorm affine parameters and running statistics; float32, CPU, eval."""
    import torch
    import torchvision

    torch.manual_seed(seed)
    model = torchvision.models.resnet18(weights=None)
    with torch.no_grad():
        for m in model.modules():          # registration order: fixed
            if isinstance(m, torch.nn.BatchNorm2d):
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.2, 0.2)
                m.running_mean.uniform_(-0.2, 0.2)
                m.running_var.uniform_(0.5, 2.0)
    return model.float().eval()


def _tensor_bytes(t):
    """The raw little-endian bytes of a tensor, row-major."""
    import torch

    t = t.detach().contiguous().cpu()
    if t.dtype == torch.bfloat16:
        t = t.view(torch.int16)             # numpy has no bfloat16
    a = t.numpy()
    if sys.byteorder != "little":
        a = a.byteswap()
    return a.tobytes()


def write_safetensors(path, tensors, metadata=None):
    """Writes {name: tensor} (F32, F16, BF16 or F64) to path in the safetensors
    format; metadata: an optional {str: str} stored as "__metadata__".
    Returns the file's size in bytes."""
    names = sorted(tensors)
    header = {}
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    blobs = []
    offset = 0
    for name in names:
        t = tensors[name]
        dt = _ST_DTYPES.get(str(t.dtype))
        if dt is None:
            raise TypeError("%s: dtype %s cannot be written (F32, F16, BF16 or F64 only)"
                            % (name, t.dtype))
        data = _tensor_bytes(t)
        if len(data) != t.numel() * t.element_size():
            raise AssertionError("%s: %d bytes for %d elements" % (name, len(data), t.numel()))
        header[name] = {"dtype": dt, "shape": [int(s) for s in t.shape],
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for data in blobs:
            f.write(data)
    return 8 + len(text) + offset


def weights_state(model, dtype):
    """The state_dict to write: no num_batches_tracked, in dtype, on the CPU."""
    return {k: v.detach().to(dtype).cpu().contiguous() for k, v in model.state_dict().items()
            if not k.endswith("num_batches_tracked")}


def reference_logits(model, weights, x):
    """Logits in float64 of model with its state replaced by weights (the
    written tensors, widened to float64), on CUDA when available."""
    import copy

    import torch

    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    m64 = copy.deepcopy(model).double()
    with torch.no_grad():
        state = m64.state_dict()           # shares storage with the parameters
        for name, t in weights.items():
            state[name].copy_(t.double())
        m64 = m64.to(dev).eval()
        return m64(x.double().to(dev)).cpu()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="directory to write the three files in")
    ap.add_argument("--batch", type=int, default=4, help="images in the input (default 4)")
    ap.add_argument("--seed", type=int, default=0, help="weights' seed; the input's is seed + 1")
    ap.add_argument("--dtype", choices=("f32", "f16"), default="f32",
                    help="dtype of the weights file (default f32)")
    args = ap.parse_args()
    if args.batch < 1:
        ap.error("--batch must be at least 1")

    try:
        import torch
        import torchvision  # noqa: F401  (make_model needs it)
    except ImportError as e:
        print("export_resnet18: cannot run: %s (pip install torch torchvision)" % e)
        return 2

    os.makedirs(args.out, exist_ok=True)
    wdtype = {"f32": torch.float32, "f16": torch.float16}[args.dtype]
    model = make_model(args.seed)
    weights = weights_state(model, wdtype)

    gen = torch.Generator().manual_seed(args.seed + 1)
    x = torch.randn((args.batch, 3, 224, 224), generator=gen, dtype=torch.float32)

    logits = reference_logits(model, weights, x)
    expect = logits.float()

    path = os.path.join(args.out, "resnet18.safetensors")
    size = write_safetensors(path, weights, {"format": "pt", "model": "torchvision resnet18",
                                             "seed": str(args.seed)})
    print("%s: %d bytes, %d tensors, %s" % (path, size, len(weights), args.dtype))

    path = os.path.join(args.out, "input.safetensors")
    size = write_safetensors(path, {"input": x})
    print("%s: %d bytes, input %s float32 NCHW (seed %d)"
          % (path, size, list(x.shape), args.seed + 1))

    path = os.path.join(args.out, "expect.safetensors")
    size = write_safetensors(path, {"logits": expect})
    top1 = logits.argmax(dim=1).tolist()
    print("%s: %d bytes, logits %s float32 (computed in float64); top-1 %s; mean |logit| %.4f"
          % (path, size, list(expect.shape), top1, logits.abs().mean().item()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
