"""Transformer-encoder operators through gko (ctypes), on torch CUDA tensors:
layer normalisation (with a residual added first), masked softmax, fused
attention, row gather (embedding) and masked mean pooling.

    import gko, gko.encoder as enc
    h = gko.Handle()
    x = enc.layer_norm(h, t, weight, bias, eps=1e-12)                 # LN(t)
    x = enc.layer_norm(h, t, weight, bias, residual=x)                # LN(t + x)
    o = enc.attention(h, q, k, v, heads=12, lengths=lens)             # [B, S, H*D]
    e = enc.mean_pool(h, x.view(B, S, -1), lengths=lens, normalize=True)

Matrices are row-major with unit stride in the last dimension; a row stride
(a column slice of a wider matrix, e.g. q, k, v of one fused QKV projection)
is passed to gko as the leading dimension.  Every function runs on the
tensors' current stream (or `stream=`) and is safe to capture into a CUDA
graph; outputs are allocated when `out` is None.
"""
from __future__ import annotations

import ctypes
import math
from typing import Any, Optional

from . import Handle, StreamLike, _check, _declare, _handle_t, _status_t, _stream_of, _stream_t
from .gemm import _dtype

__all__ = ["layer_norm", "softmax", "attention", "embedding", "mean_pool"]

_c = ctypes
_i64 = _c.c_int64
_p = _c.c_void_p

_declare({
    "gko_layernorm": (_status_t, [_handle_t, _c.c_int, _i64, _i64, _p, _i64, _p, _i64, _p, _p,
                                  _c.c_float, _p, _i64, _p, _i64, _stream_t]),
    "gko_softmax": (_status_t, [_handle_t, _c.c_int, _i64, _i64, _c.c_float, _p, _i64, _p, _i64,
                                _p, _i64, _p, _i64, _stream_t]),
    "gko_attention": (_status_t, [_handle_t, _c.c_int, _i64, _i64, _i64, _i64, _i64, _c.c_float,
                                  _p, _i64, _p, _i64, _p, _i64, _p, _p, _i64, _stream_t]),
    "gko_embedding": (_status_t, [_handle_t, _c.c_int, _i64, _i64, _p, _i64, _c.c_int, _p, _i64,
                                  _p, _i64, _stream_t]),
    "gko_mean_pool": (_status_t, [_handle_t, _c.c_int, _i64, _i64, _i64, _p, _i64, _p, _c.c_int,
                                  _p, _i64, _stream_t]),
})


def _lib():
    from . import library
    return library()


def _ptr(t):
    return t.data_ptr() if t is not None and t.numel() else None


def _rows(t, what):
    """(rows, cols, ld) of a tensor seen as a row-major matrix over its last
    dimension: unit stride there, and the leading dimensions folding into one
    row stride ld >= cols (no expanded, overlapping or unfolded rows)."""
    if t.dim() < 1:
        raise ValueError("%s must have at least one dimension" % what)
    cols = t.shape[-1]
    if cols > 1 and t.stride(-1) != 1:
        raise ValueError("%s must have unit stride in its last dimension" % what)
    rows = t.numel() // cols if cols else 0
    lead = [d for d in range(t.dim() - 1) if t.shape[d] > 1]
    if not lead:
        return rows, cols, cols
    ld = expect = t.stride(lead[-1])
    for d in reversed(lead):
        if t.stride(d) != expect:
            raise ValueError("%s: its rows must be evenly spaced (stride %s for shape %s)"
                             % (what, tuple(t.stride()), tuple(t.shape)))
        expect *= t.shape[d]
    if ld < cols:
        raise ValueError("%s: rows %d elements apart overlap (%d columns; expanded or unfolded "
                         "tensors are not matrices)" % (what, ld, cols))
    return rows, cols, ld


def _check_like(t, ref, what, shape=None):
    if t.dtype != ref.dtype or t.device != ref.device:
        raise ValueError("%s must be %s on %s (is %s on %s)"
                         % (what, ref.dtype, ref.device, t.dtype, t.device))
    if shape is not None and tuple(t.shape) != tuple(shape):
        raise ValueError("%s must have shape %s (has %s)" % (what, tuple(shape), tuple(t.shape)))


def _lengths(lengths, n, device, what="lengths"):
    import torch
    if lengths is None:
        return None
    if lengths.dtype != torch.int32 or lengths.device != device or not lengths.is_contiguous():
        raise ValueError("%s must be a contiguous int32 tensor on %s" % (what, device))
    if lengths.numel() != n:
        raise ValueError("%s must hold %d values (holds %d)" % (what, n, lengths.numel()))
    return lengths


def layer_norm(handle: Handle, x: Any, weight: Any = None, bias: Any = None, eps: float = 1e-5,
               residual: Any = None, out: Any = None, sum_out: Any = None,
               stream: StreamLike = None) -> Any:
    """out = LN(x + residual) over the last dimension (torch's F.layer_norm
    with normalized_shape = x.shape[-1:]); sum_out receives x + residual.
    out may be x or residual (in place)."""
    import torch
    rows, cols, ldx = _rows(x, "x")
    ldr = 0
    if residual is not None:
        _check_like(residual, x, "residual", x.shape)
        ldr = _rows(residual, "residual")[2]
    for t, name in ((weight, "weight"), (bias, "bias")):
        if t is not None:
            _check_like(t, x, name, (cols,))
            if not t.is_contiguous():
                raise ValueError("%s must be contiguous" % name)
    if out is None:
        out = torch.empty_like(x, memory_format=torch.contiguous_format)
    _check_like(out, x, "out", x.shape)
    lds = 0
    if sum_out is not None:
        _check_like(sum_out, x, "sum_out", x.shape)
        lds = _rows(sum_out, "sum_out")[2]
    _check(_lib().gko_layernorm(handle.value, _dtype(x.dtype), rows, cols, _ptr(x), ldx,
                                _ptr(residual), ldr, _ptr(weight), _ptr(bias), float(eps),
                                _ptr(out), _rows(out, "out")[2], _ptr(sum_out), lds,
                                _stream_of(x, stream)), "gko_layernorm")
    return out


def softmax(handle: Handle, x: Any, scale: float = 1.0, mask: Any = None, lengths: Any = None,
            group: int = 1, out: Any = None, stream: StreamLike = None) -> Any:
    """out = softmax(scale * x + mask) over the last dimension, columns j >=
    lengths[i // group] removed; mask (float32, [ceil(rows / group), cols]) is
    added to every row of its group.  A fully masked row gives zeros."""
    import torch
    rows, cols, ldx = _rows(x, "x")
    groups = -(-rows // group) if group > 0 else 0
    ldm = 0
    if mask is not None:
        if mask.dtype != torch.float32 or mask.device != x.device:
            raise ValueError("mask must be float32 on %s" % x.device)
        mr, mc, ldm = _rows(mask, "mask")
        if mc != cols or mr != groups:
            raise ValueError("mask must be [%d, %d] (one row per group of %d rows)"
                             % (groups, cols, group))
    lengths = _lengths(lengths, groups, x.device)
    if out is None:
        out = torch.empty_like(x, memory_format=torch.contiguous_format)
    _check_like(out, x, "out", x.shape)
    _check(_lib().gko_softmax(handle.value, _dtype(x.dtype), rows, cols, float(scale), _ptr(x),
                              ldx, _ptr(mask), ldm, _ptr(lengths), int(group), _ptr(out),
                              _rows(out, "out")[2], _stream_of(x, stream)), "gko_softmax")
    return out


def _bshd(t, what, heads):
    """batch, seq, heads * head_dim and the row stride of a [B, S, H*D] view."""
    if t.dim() != 3:
        raise ValueError("%s must be [batch, seq, heads * head_dim]" % what)
    b, s, hd = t.shape
    if hd % heads:
        raise ValueError("%s: last dimension %d is not a multiple of %d heads" % (what, hd, heads))
    return b, s, hd, _rows(t, what)[2]


def attention(handle: Handle, q: Any, k: Any, v: Any, heads: int, lengths: Any = None,
              scale: Optional[float] = None, out: Any = None, stream: StreamLike = None) -> Any:
    """Fused scaled dot-product attention of an encoder: q [B, Sq, H*D], k and
    v [B, Sk, H*D] (views of one QKV projection are fine), lengths (int32
    [B]) the number of keys each sequence keeps.  Returns out [B, Sq, H*D]
    (torch's F.scaled_dot_product_attention on the heads, key-padding mask)."""
    import torch
    b, sq, hd, ldq = _bshd(q, "q", heads)
    bk, sk, hdk, ldk = _bshd(k, "k", heads)
    bv, sv, hdv, ldv = _bshd(v, "v", heads)
    if (bk, hdk) != (b, hd) or (bv, sv, hdv) != (b, sk, hd):
        raise ValueError("q %s, k %s, v %s do not match" % (tuple(q.shape), tuple(k.shape),
                                                            tuple(v.shape)))
    _check_like(k, q, "k")
    _check_like(v, q, "v")
    d = hd // heads
    if scale is None:
        scale = 1.0 / math.sqrt(d)
    lengths = _lengths(lengths, b, q.device)
    if out is None:
        out = torch.empty((b, sq, hd), dtype=q.dtype, device=q.device)
    _check_like(out, q, "out", (b, sq, hd))
    _check(_lib().gko_attention(handle.value, _dtype(q.dtype), b, heads, sq, sk, d, float(scale),
                                _ptr(q), ldq, _ptr(k), ldk, _ptr(v), ldv, _ptr(lengths),
                                _ptr(out), _rows(out, "out")[2], _stream_of(q, stream)),
           "gko_attention")
    return out


def embedding(handle: Handle, ids: Any, table: Any, out: Any = None,
              stream: StreamLike = None) -> Any:
    """out[i] = table[ids[i]] (torch's F.embedding) for int32 or int64 ids of
    any shape; an index outside the table gives a row of NaN."""
    import torch
    if table.dim() != 2:
        raise ValueError("table must be 2-D")
    rows, dim, ldt = _rows(table, "table")
    if ids.dtype not in (torch.int32, torch.int64) or ids.device != table.device:
        raise ValueError("ids must be int32 or int64 on %s" % table.device)
    if not ids.is_contiguous():
        raise ValueError("ids must be contiguous")
    shape = tuple(ids.shape) + (dim,)
    if out is None:
        out = torch.empty(shape, dtype=table.dtype, device=table.device)
    _check_like(out, table, "out", shape)
    index = 0 if ids.dtype == torch.int32 else 1
    _check(_lib().gko_embedding(handle.value, _dtype(table.dtype), rows, dim, _ptr(table), ldt,
                                index, _ptr(ids), ids.numel(), _ptr(out),
                                _rows(out, "out")[2] if out.dim() > 1 else dim,
                                _stream_of(table, stream)), "gko_embedding")
    return out


def mean_pool(handle: Handle, x: Any, lengths: Any = None, normalize: bool = False,
              out: Any = None, stream: StreamLike = None) -> Any:
    """out[b] = the mean of x[b, :lengths[b]] (x [B, S, D]), L2-normalised when
    normalize (sentence-transformers' mean pooling + Normalize)."""
    import torch
    if x.dim() != 3:
        raise ValueError("x must be [batch, seq, dim]")
    b, s, d = x.shape
    ldx = _rows(x, "x")[2]
    lengths = _lengths(lengths, b, x.device)
    if out is None:
        out = torch.empty((b, d), dtype=x.dtype, device=x.device)
    _check_like(out, x, "out", (b, d))
    _check(_lib().gko_mean_pool(handle.value, _dtype(x.dtype), b, s, d, _ptr(x), ldx,
                                _ptr(lengths), int(bool(normalize)), _ptr(out),
                                _rows(out, "out")[2], _stream_of(x, stream)), "gko_mean_pool")
    return out
