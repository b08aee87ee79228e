"""FP8 conversion through gko (ctypes): gko_quantize and gko_dequantize.

    import gko, gko.fp8, torch
    h = gko.Handle()
    amax = torch.empty(1, device="cuda")
    q = gko.fp8.quantize(h, x, torch.float8_e4m3fn, scale=s, amax=amax)  # q = sat(x * s)
    y = gko.fp8.dequantize(h, q, torch.bfloat16, scale=1 / s)            # y = q * (1 / s)

scale: None (1), a 1-element f32 tensor, or one factor per row (rowwise=True:
x.shape[0] factors of a 2-D x); every pointer 4-byte aligned.  The rules
(saturation, NaN, infinities) are gko.h's.  FP8 GEMM: gko.gemm.gemm with
float8 tensors, or gko.gemm.scaled_mm (torch._scaled_mm's contract).
"""
from __future__ import annotations

import ctypes
from typing import Any

from . import (Handle, ScaleMode, StreamLike, _check, _declare, _handle_t, _status_t, _stream_of,
               _stream_t)
from .gemm import _TORCH_OF, DtypeLike, _dtype

__all__ = ["quantize", "dequantize"]

_c = ctypes
_declare({
    "gko_quantize": (_status_t, [_handle_t, _c.c_int, _c.c_void_p, _c.c_int, _c.c_void_p,
                                 _c.c_int64, _c.c_int64, _c.c_int, _c.c_void_p, _c.c_void_p,
                                 _stream_t]),
    "gko_dequantize": (_status_t, [_handle_t, _c.c_int, _c.c_void_p, _c.c_int, _c.c_void_p,
                                   _c.c_int64, _c.c_int64, _c.c_int, _c.c_void_p, _stream_t]),
})


def _lib():
    from . import library
    return library()


def _convert(handle, fn, x, dtype, scale, rowwise, out, stream, amax=None):
    import torch
    if not x.is_contiguous():
        raise ValueError("x must be contiguous (gko converts tight row-major tensors)")
    rows = x.shape[0] if (rowwise and x.dim() >= 1) else 1
    cols = x.numel() // rows if rows else 0
    yd = _dtype(dtype)
    if out is None:
        out = torch.empty(x.shape, dtype=getattr(torch, _TORCH_OF[yd]), device=x.device)
    elif out.shape != x.shape or not out.is_contiguous() or _dtype(out.dtype) != yd:
        raise ValueError("out must be a contiguous %s tensor of x's shape %s"
                         % (_TORCH_OF[yd], tuple(x.shape)))
    mode = ScaleMode.ROWWISE if rowwise else ScaleMode.TENSOR
    sp = None if scale is None else scale.data_ptr()
    args = [handle.value, int(_dtype(x.dtype)), x.data_ptr() or None, int(yd),
            out.data_ptr() or None, rows, cols, int(mode), sp]
    if fn == "gko_quantize":
        args.append(None if amax is None else amax.data_ptr())
    args.append(_stream_of(x, stream))
    _check(getattr(_lib(), fn)(*args), fn)
    return out


def quantize(handle: Handle, x: Any, dtype: DtypeLike, scale: Any = None, rowwise: bool = False,
             amax: Any = None, out: Any = None, stream: StreamLike = None) -> Any:
    """out = saturate(x * scale) in dtype (torch.float8_e4m3fn / float8_e5m2);
    amax (1-element f32 tensor): max |x| from the same read.  Returns out."""
    return _convert(handle, "gko_quantize", x, dtype, scale, rowwise, out, stream, amax)


def dequantize(handle: Handle, x: Any, dtype: DtypeLike, scale: Any = None,
               rowwise: bool = False, out: Any = None, stream: StreamLike = None) -> Any:
    """out = x * scale in dtype (torch.float32 / float16 / bfloat16)."""
    return _convert(handle, "gko_dequantize", x, dtype, scale, rowwise, out, stream)
