"""2-D pooling forward through gko (ctypes): max, average (padding counted or
not) and global average pooling, NCHW (contiguous) or NHWC (channels_last).

    import gko, gko.pool
    h = gko.Handle()
    y = gko.pool.max_pool2d(h, x, 3, stride=2, padding=1)      # ResNet's stem pool
    g = gko.pool.adaptive_avg_pool2d_1(h, x)                   # [N, C, 1, 1]

Arguments follow torch.nn.functional's (kernel_size, stride=kernel_size by
default, padding, dilation (max only), ceil_mode, count_include_pad).
"""
from __future__ import annotations

import ctypes
import enum
from typing import Any, Optional, Union

from . import Handle, StreamLike, _check, _declare, _handle_t, _status_t, _stream_of, _stream_t
from .conv import Layout, PairLike, _pair
from .gemm import _dtype

__all__ = ["Mode", "Attr", "pool2d", "max_pool2d", "avg_pool2d", "adaptive_avg_pool2d_1"]


class Mode(enum.IntEnum):
    MAX = 0
    AVG = 1
    AVG_EXCLUDE_PAD = 2


class Attr(enum.IntEnum):
    MODE = 0
    DTYPE = 1
    LAYOUT = 2
    N = 3
    C = 4
    H = 5
    W = 6
    R = 7
    S = 8
    STRIDE_H = 9
    STRIDE_W = 10
    PAD_H = 11
    PAD_W = 12
    DILATION_H = 13
    DILATION_W = 14
    CEIL_MODE = 15


_c = ctypes
_desc_t = _c.c_void_p
_i64 = _c.c_int64

_declare({
    "gko_pool_desc_create": (_status_t, [_c.POINTER(_desc_t), _c.c_int, _c.c_int, _c.c_int,
                                         _i64, _i64, _i64, _i64, _i64, _i64]),
    "gko_pool_desc_destroy": (_status_t, [_desc_t]),
    "gko_pool_desc_set": (_status_t, [_desc_t, _c.c_int, _i64]),
    "gko_pool_output_shape": (_status_t, [_desc_t, _c.POINTER(_i64), _c.POINTER(_i64)]),
    "gko_pool_forward": (_status_t, [_handle_t, _desc_t, _c.c_void_p, _c.c_void_p, _stream_t]),
})


def _lib():
    from . import library
    return library()


def pool2d(handle: Handle, x: Any, mode: Union[Mode, int], kernel_size: PairLike,
           stride: Optional[PairLike] = None, padding: PairLike = 0, dilation: PairLike = 1,
           ceil_mode: bool = False, out: Any = None, stream: StreamLike = None) -> Any:
    """y = pool(x) for a torch tensor x [N, C, H, W], contiguous (NCHW) or
    channels_last (NHWC); out (allocated in x's memory format when None)."""
    import torch
    if x.dim() != 4:
        raise ValueError("x must be 4-D")
    if x.is_contiguous():
        layout, fmt = Layout.NCHW, torch.contiguous_format
    elif x.is_contiguous(memory_format=torch.channels_last):
        layout, fmt = Layout.NHWC, torch.channels_last
    else:
        raise ValueError("x must be contiguous (NCHW) or channels_last (NHWC)")
    r, s = _pair(kernel_size, "kernel_size")
    sh, sw = _pair(stride if stride is not None else (r, s), "stride")
    ph, pw = _pair(padding, "padding")
    dh, dw = _pair(dilation, "dilation")
    n, c, h, w = x.shape
    d = _desc_t()
    lib = _lib()
    _check(lib.gko_pool_desc_create(_c.byref(d), int(Mode(mode)), _dtype(x.dtype), int(layout),
                                    n, c, h, w, r, s), "gko_pool_desc_create")
    try:
        for a, v in ((Attr.STRIDE_H, sh), (Attr.STRIDE_W, sw), (Attr.PAD_H, ph),
                     (Attr.PAD_W, pw), (Attr.DILATION_H, dh), (Attr.DILATION_W, dw),
                     (Attr.CEIL_MODE, int(bool(ceil_mode)))):
            _check(lib.gko_pool_desc_set(d, int(a), int(v)), "gko_pool_desc_set")
        oh, ow = _i64(0), _i64(0)
        _check(lib.gko_pool_output_shape(d, _c.byref(oh), _c.byref(ow)), "gko_pool_output_shape")
        shape = (n, c, oh.value, ow.value)
        if out is None:
            out = torch.empty(shape, dtype=x.dtype, device=x.device, memory_format=fmt)
        elif (tuple(out.shape) != shape or out.dtype != x.dtype or out.device != x.device or
              not out.is_contiguous(memory_format=fmt)):
            raise ValueError("out must be a %s tensor of shape %s on %s in x's memory format (%s)"
                             % (x.dtype, shape, x.device, fmt))
        _check(lib.gko_pool_forward(handle.value, d, x.data_ptr() if x.numel() else None,
                                    out.data_ptr() if out.numel() else None,
                                    _stream_of(x, stream)), "gko_pool_forward")
    finally:
        lib.gko_pool_desc_destroy(d)
    return out


def max_pool2d(handle: Handle, x: Any, kernel_size: PairLike, stride: Optional[PairLike] = None,
               padding: PairLike = 0, dilation: PairLike = 1, ceil_mode: bool = False,
               out: Any = None, stream: StreamLike = None) -> Any:
    """torch's F.max_pool2d (stride defaults to kernel_size): pool2d with Mode.MAX."""
    return pool2d(handle, x, Mode.MAX, kernel_size, stride, padding, dilation, ceil_mode, out,
                  stream)


def avg_pool2d(handle: Handle, x: Any, kernel_size: PairLike, stride: Optional[PairLike] = None,
               padding: PairLike = 0, ceil_mode: bool = False, count_include_pad: bool = True,
               out: Any = None, stream: StreamLike = None) -> Any:
    """torch's F.avg_pool2d (stride defaults to kernel_size; no divisor_override)."""
    mode = Mode.AVG if count_include_pad else Mode.AVG_EXCLUDE_PAD
    return pool2d(handle, x, mode, kernel_size, stride, padding, 1, ceil_mode, out, stream)


def adaptive_avg_pool2d_1(handle: Handle, x: Any, out: Any = None,
                          stream: StreamLike = None) -> Any:
    """torch's adaptive_avg_pool2d(x, 1): the mean of each H x W plane."""
    return pool2d(handle, x, Mode.AVG, (x.shape[2], x.shape[3]), 1, 0, 1, False, out, stream)
