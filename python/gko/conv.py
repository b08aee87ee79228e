"""Conv2d forward through gko (ctypes): y = act(alpha conv(x, w) + bias + beta z), by
implicit GEMM on sm_90 or im2col + GEMM.

    import gko, gko.conv
    h = gko.Handle()
    y = gko.conv.conv2d(h, x, w, bias, stride=2, padding=3, activation="relu")
    p = gko.conv.Plan(h, "f16", "nhwc", n, c, hh, ww, k, r, s, stride=(2, 2),
                      padding=(3, 3), epilogue="bias_relu")
    p.execute(x, w, y, bias=b)                     # planned: only enqueues
    p.execute(x, w, y, bias=b, z=shortcut)         # + residual before the activation

Tensors follow torch's conventions: x [N, C, H, W], weight [K, C/groups, R, S],
y [N, K, OH, OW].  Memory layout NCHW is torch's default (contiguous) format;
NHWC is torch's channels_last (then the weight must be channels_last too,
i.e. KRSC in memory).  conv2d picks the layout from x's memory format and
keeps plans in a small cache keyed by everything a plan depends on (shapes,
stride, padding, dilation, groups, dtype, layout, epilogue and the pointers'
alignment), with a workspace per (device, stream) grown on demand.
"""
from __future__ import annotations

import ctypes
import enum
from typing import Any, Optional, Sequence, Tuple, Union

from . import (Array, Handle, StreamLike, _Owned, _Plan, _check, _declare, _fast_call,
               _handle_t, _is_torch, _status_t, _stream_of, _stream_t, _torch_raw_stream,
               _workspace_arg, _workspace_for, as_device_array)
from .gemm import Compute, ComputeLike, DtypeLike, Epilogue, _align, _dtype, _enum

# an enum value: the member, its int, or its name (case-insensitive)
AttrLike = Union["Attr", int, str]
LayoutLike = Union["Layout", int, str]
# a size per spatial dimension: an int (both) or a (height, width) pair
PairLike = Union[int, Sequence[int]]

__all__ = ["Layout", "Attr", "Algo", "Info", "Path", "Plan", "conv2d", "output_shape"]


class Layout(enum.IntEnum):
    NCHW = 0
    NHWC = 1


class Attr(enum.IntEnum):
    DTYPE = 0
    LAYOUT = 1
    N = 2
    C = 3
    H = 4
    W = 5
    K = 6
    R = 7
    S = 8
    STRIDE_H = 9
    STRIDE_W = 10
    PAD_H = 11
    PAD_W = 12
    DILATION_H = 13
    DILATION_W = 14
    GROUPS = 15
    EPILOGUE = 16
    COMPUTE = 17
    MAX_WORKSPACE = 18
    MAX_CHUNK = 19
    ALIGNMENT = 20
    PAD_H_END = 21
    PAD_W_END = 22
    ALGO = 23


class Algo(enum.IntEnum):
    AUTO = 0
    GEMM = 1
    IMPLICIT = 2


class Info(enum.IntEnum):
    OH = 0
    OW = 1
    PATH = 2
    CHUNK = 3
    CHUNKS = 4
    COL_BYTES = 5
    WORKSPACE = 6
    WORKSPACE_FULL = 7
    WORKSPACE_MIN = 8
    GEMM_CALLS = 9


class Path(enum.IntEnum):
    NONE = 0
    IM2COL = 1
    DIRECT = 2
    IMPLICIT = 3


_c = ctypes
_desc_t = _c.c_void_p
_plan_t = _c.c_void_p
_i64 = _c.c_int64

_declare({
    "gko_conv_desc_create": (_status_t, [_c.POINTER(_desc_t), _c.c_int, _c.c_int, _i64, _i64,
                                         _i64, _i64, _i64, _i64, _i64]),
    "gko_conv_desc_destroy": (_status_t, [_desc_t]),
    "gko_conv_desc_set": (_status_t, [_desc_t, _c.c_int, _i64]),
    "gko_conv_desc_get": (_status_t, [_desc_t, _c.c_int, _c.POINTER(_i64)]),
    "gko_conv_output_shape": (_status_t, [_desc_t, _c.POINTER(_i64), _c.POINTER(_i64)]),
    "gko_conv_plan_create": (_status_t, [_handle_t, _desc_t, _c.POINTER(_plan_t)]),
    "gko_conv_plan_destroy": (_status_t, [_plan_t]),
    "gko_conv_workspace_size": (_status_t, [_plan_t, _c.POINTER(_c.c_size_t)]),
    "gko_conv_plan_get": (_status_t, [_plan_t, _c.c_int, _c.POINTER(_i64)]),
    "gko_conv_plan_describe": (_status_t, [_plan_t, _c.c_char_p, _c.c_size_t,
                                           _c.POINTER(_c.c_size_t)]),
    "gko_conv_execute": (_status_t, [_plan_t, _c.c_void_p, _c.c_void_p, _c.c_void_p,
                                     _c.c_void_p, _c.c_void_p, _c.c_size_t, _stream_t]),
    "gko_conv_execute_residual": (_status_t, [_plan_t, _c.c_float, _c.c_void_p, _c.c_void_p,
                                              _c.c_void_p, _c.c_float, _c.c_void_p, _c.c_void_p,
                                              _c.c_void_p, _c.c_size_t, _stream_t]),
})


def _lib():
    from . import library
    return library()


def _pair(v, name):
    if isinstance(v, (tuple, list)):
        if len(v) != 2:
            raise ValueError("%s must be an int or a pair, not %r" % (name, v))
        return int(v[0]), int(v[1])
    return int(v), int(v)


def _layout(v):
    if isinstance(v, str):
        return Layout[v.upper()]
    return Layout(v)


class Desc(_Owned):
    """A gko_conv_desc_t.  Keyword attributes by Attr name (stride_h=2,
    groups=4, epilogue="bias_relu", max_workspace=..., ...)."""

    def __init__(self, dtype: DtypeLike, layout: LayoutLike, n: int, c: int, h: int, w: int,
                 k: int, r: int, s: int, **attrs: Any) -> None:
        d = _desc_t()
        _check(_lib().gko_conv_desc_create(_c.byref(d), _dtype(dtype), _layout(layout), int(n),
                                           int(c), int(h), int(w), int(k), int(r), int(s)),
               "gko_conv_desc_create")
        self._d = d
        for name, v in attrs.items():
            self.set(name, v)

    def set(self, attr: AttrLike, value: Any) -> "Desc":
        """Sets one attribute (value: an int, or the attribute's enum member or
        name); returns self."""
        a = _enum(Attr, attr)
        if a == Attr.DTYPE:
            value = _dtype(value)
        elif a == Attr.LAYOUT:
            value = _layout(value)
        elif a == Attr.EPILOGUE:
            value = _enum(Epilogue, value)
        elif a == Attr.COMPUTE:
            value = _enum(Compute, value)
        elif a == Attr.ALGO:
            value = _enum(Algo, value)
        _check(_lib().gko_conv_desc_set(self._d, int(a), int(value)), "gko_conv_desc_set")
        return self

    def get(self, attr: AttrLike) -> int:
        """One attribute's value (as resolved by the library)."""
        v = _i64(0)
        _check(_lib().gko_conv_desc_get(self._d, int(_enum(Attr, attr)), _c.byref(v)),
               "gko_conv_desc_get")
        return v.value

    def output_shape(self) -> Tuple[int, int]:
        """(OH, OW) of the described convolution."""
        oh, ow = _i64(0), _i64(0)
        _check(_lib().gko_conv_output_shape(self._d, _c.byref(oh), _c.byref(ow)),
               "gko_conv_output_shape")
        return oh.value, ow.value

    _ATTR = "_d"

    def _release(self, ptr):
        _lib().gko_conv_desc_destroy(ptr)


def _attrs(stride=1, padding=0, dilation=1, **attrs):
    sh, sw = _pair(stride, "stride")
    ph, pw = _pair(padding, "padding")
    dh, dw = _pair(dilation, "dilation")
    out = dict(stride_h=sh, stride_w=sw, pad_h=ph, pad_w=pw, dilation_h=dh, dilation_w=dw)
    out.update(attrs)
    return out


def output_shape(n: int, c: int, h: int, w: int, k: int, r: int, s: int, stride: PairLike = 1,
                 padding: PairLike = 0, dilation: PairLike = 1, **attrs: Any) -> Tuple[int, int]:
    """(OH, OW) as the library computes them (host only)."""
    d = Desc("f32", "nchw", n, c, h, w, k, r, s, **_attrs(stride, padding, dilation, **attrs))
    try:
        return d.output_shape()
    finally:
        d.close()


def _check_operand(name, t, nchw, layout, dtype):
    """t as a DeviceArray after checking it against the plan: its dtype, and
    dense in the plan's layout with torch's [N, C, H, W] shape (channels_last
    memory for NHWC) or, for any array, a dense [N, H, W, C] (NHWC) /
    [N, C, H, W] (NCHW) shape.  ValueError saying what differs, else."""
    a = as_device_array(t)
    if a.dtype != dtype:
        raise ValueError("%s is %s, the plan's dtype is %s" % (name, a.dtype.name, dtype.name))
    n, c, h, w = nchw
    nhwc = layout == Layout.NHWC
    want = (n, h, w, c) if nhwc else (n, c, h, w)
    if type(t).__module__.split(".")[0] == "torch" and tuple(t.shape) == tuple(nchw):
        # torch's shape: its memory format decides (a dense [N, H, W, C]
        # tensor with C == H == W must come as .permute(0, 3, 1, 2))
        import torch
        fmt = torch.channels_last if nhwc else torch.contiguous_format
        if t.is_contiguous(memory_format=fmt):
            return a
        raise ValueError("%s %s is not dense in %s memory (torch: memory_format=torch.%s)" % (
            name, list(t.shape), layout.name, "channels_last" if nhwc else "contiguous_format"))
    if tuple(a.shape) == want and a.contiguous:
        return a
    raise ValueError("%s has shape %s%s; the plan takes %s in %s memory (torch's shape with "
                     "memory_format=torch.%s) or a dense %s" % (
                         name, list(a.shape), "" if a.contiguous else " (not dense)", list(nchw),
                         layout.name, "channels_last" if nhwc else "contiguous_format",
                         list(want)))


def _check_vector(name, t, n, dtype):
    a = as_device_array(t)
    if a.dtype != dtype or a.size != n or not a.contiguous:
        raise ValueError("%s must be %d dense %s elements (got %s %s)" % (
            name, n, dtype.name, a.dtype.name, list(a.shape)))
    return a


class Plan(_Plan):
    """A gko conv plan: Plan(handle, dtype, layout, n, c, h, w, k, r, s,
    stride=1, padding=0, dilation=1, groups=1, epilogue="none", ...).
    stride/padding/dilation are ints or (height, width) pairs; other keyword
    attributes as Attr names.  execute() only enqueues; its workspace is
    allocated once (torch) unless workspace= is given."""

    _WORKSPACE_SIZE, _DESCRIBE = "gko_conv_workspace_size", "gko_conv_plan_describe"

    def __init__(self, handle: Handle, dtype: DtypeLike, layout: LayoutLike, n: int, c: int,
                 h: int, w: int, k: int, r: int, s: int, stride: PairLike = 1,
                 padding: PairLike = 0, dilation: PairLike = 1, **attrs: Any) -> None:
        self.handle = handle
        desc = Desc(dtype, layout, n, c, h, w, k, r, s,
                    **_attrs(stride, padding, dilation, **attrs))
        groups = desc.get(Attr.GROUPS)
        p = _plan_t()
        _check(_lib().gko_conv_plan_create(handle.value, desc._d, _c.byref(p)),
               "gko_conv_plan_create")
        desc.close()
        self._p = p
        self._ws = None
        self.layout = _layout(layout)
        self.dtype = _dtype(dtype)
        self.shape = (int(n), int(k), self.info(Info.OH), self.info(Info.OW))
        self._x = (int(n), int(c), int(h), int(w))
        self._w = (int(k), int(c) // groups, int(r), int(s))
        self._fn = _lib().gko_conv_execute  # bound once: execute() calls these
        self._fn_residual = _lib().gko_conv_execute_residual
        self._fast, self._addr = _fast_call("conv_execute", self._fn)
        self._fast_residual, self._addr_residual = _fast_call("conv_execute_residual",
                                                              self._fn_residual)

    def info(self, what: Union[Info, int, str]) -> int:
        """One value (Info) the library resolved for the plan."""
        v = _i64(0)
        _check(_lib().gko_conv_plan_get(self._p, int(_enum(Info, what)), _c.byref(v)),
               "gko_conv_plan_get")
        return v.value

    @property
    def path(self) -> Path:
        """The path (im2col, direct, implicit GEMM) the library chose."""
        return Path(self.info(Info.PATH))

    def execute(self, x: Array, w: Array, y: Array, bias: Optional[Array] = None,
                z: Optional[Array] = None, alpha: float = 1.0, beta: Optional[float] = None,
                workspace: Optional[Array] = None, stream: StreamLike = None) -> Array:
        """y = act(alpha conv(x, w) + bias + beta z); beta defaults to 1 with z, else 0;
        z may be y itself.  x, w, y and z are checked against the plan (dtype, shape and
        memory layout: ValueError); returns y.  Torch tensors whose shapes, strides,
        dtypes and devices equal the last call's skip the checks (one tuple comparison)."""
        try:
            meta = (x.shape, x.stride(), x.dtype, x.get_device(),
                    w.shape, w.stride(), w.dtype, w.get_device(),
                    y.shape, y.stride(), y.dtype, y.get_device(),
                    None if z is None else (z.shape, z.stride(), z.dtype, z.get_device()),
                    None if bias is None else (bias.shape, bias.stride(), bias.dtype,
                                               bias.get_device()))
        except Exception:  # noqa: BLE001 -- not a torch tensor: the checked path says what
            meta = None
        if meta is None or meta != self._seen:
            return self._execute_checked(meta, x, w, y, bias, z, alpha, beta, workspace, stream)
        if stream is None:
            st = self._rs(meta[11])
        elif stream.__class__ is int:
            st = stream
        else:
            st = _stream_of(y, stream)
        if workspace is None:
            wsp = self._wsp
            if wsp is not None and (wsp[0] == st or not wsp[2]):
                ws, nws = wsp[1], wsp[2]
            else:
                ws, nws = self._workspace(y, st)
        else:
            ws, nws = _workspace_arg(workspace)
        pbias = None if bias is None else bias.data_ptr()
        if beta is None:
            beta = 0.0 if z is None else 1.0
        if z is None and beta == 0.0 and alpha == 1.0:
            if self._fast is not None:
                p = self._p
                status = self._fast(self._addr, None if p is None else p.value, x.data_ptr(),
                                    w.data_ptr(), pbias, y.data_ptr(), ws, nws, st)
            else:
                status = self._fn(self._p, x.data_ptr(), w.data_ptr(), pbias, y.data_ptr(), ws,
                                  nws, st)
            if status:
                _check(status, "gko_conv_execute")
        else:
            pz = None if z is None else z.data_ptr()
            if self._fast_residual is not None:
                p = self._p
                status = self._fast_residual(self._addr_residual, None if p is None else p.value,
                                             float(alpha), x.data_ptr(), w.data_ptr(), pbias,
                                             float(beta), pz, y.data_ptr(), ws, nws, st)
            else:
                status = self._fn_residual(self._p, float(alpha), x.data_ptr(), w.data_ptr(),
                                           pbias, float(beta), pz, y.data_ptr(), ws, nws, st)
            if status:
                _check(status, "gko_conv_execute_residual")
        return y

    def _execute_checked(self, meta, x, w, y, bias, z, alpha, beta, workspace, stream):
        """execute() with every check; remembers torch operands' metadata
        (meta) for the fast path once they passed."""
        if self.shape[0] > 0:
            _check_operand("x", x, self._x, self.layout, self.dtype)
            _check_operand("w", w, self._w, self.layout, self.dtype)
            _check_operand("y", y, self.shape, self.layout, self.dtype)
            if z is not None:
                _check_operand("z", z, self.shape, self.layout, self.dtype)
            if bias is not None:
                _check_vector("bias", bias, self.shape[1], self.dtype)
        ptr = lambda t: None if t is None else as_device_array(t).ptr  # noqa: E731
        st = _stream_of(y, stream)
        if workspace is None:
            ws, nws = self._workspace(y, st)
        else:
            ws, nws = _workspace_arg(workspace)
        if beta is None:
            beta = 0.0 if z is None else 1.0
        if z is None and beta == 0.0 and alpha == 1.0:
            _check(self._fn(self._p, ptr(x), ptr(w), ptr(bias), ptr(y), ws, nws, st),
                   "gko_conv_execute")
        else:
            _check(self._fn_residual(
                self._p, float(alpha), ptr(x), ptr(w), ptr(bias), float(beta), ptr(z), ptr(y),
                ws, nws, st), "gko_conv_execute_residual")
        if meta is not None and _is_torch(x, w, y, z, bias):
            self._rs = _torch_raw_stream()
            self._seen = meta
        return y

    def _release(self, ptr):
        _lib().gko_conv_plan_destroy(ptr)


# ---------------------------------------------------------------------------
# torch convenience
# ---------------------------------------------------------------------------

_PLANS_MAX = 128  # plans cached per handle (Handle._cached_plan)
_ACT = {None: 0, "none": 0, "relu": 1, "gelu": 2, "gelu_erf": 2, "gelu_tanh": 3}


def conv2d(handle: Handle, x: Any, weight: Any, bias: Any = None, stride: PairLike = 1,
           padding: PairLike = 0, dilation: PairLike = 1, groups: int = 1,
           activation: Optional[str] = None, out: Any = None, compute: ComputeLike = "default",
           stream: StreamLike = None, **attrs: Any) -> Any:
    """Like torch.nn.functional.conv2d (+ activation: "relu", "gelu" (erf)
    or "gelu_tanh").  x [N, C, H, W] contiguous (NCHW) or channels_last
    (NHWC, then weight must be channels_last too); weight [K, C/groups, R,
    S]; bias [K].  Returns out (allocated in x's memory format when None)."""
    import torch
    if activation not in _ACT:
        raise ValueError("activation must be one of %s" % sorted(a for a in _ACT if a))
    if x.dim() != 4 or weight.dim() != 4:
        raise ValueError("x and weight must be 4-D")
    if x.is_contiguous():
        layout, fmt = Layout.NCHW, torch.contiguous_format
    elif x.is_contiguous(memory_format=torch.channels_last):
        layout, fmt = Layout.NHWC, torch.channels_last
    else:
        raise ValueError("x must be contiguous (NCHW) or channels_last (NHWC)")
    if not weight.is_contiguous(memory_format=fmt):
        raise ValueError("weight must be in x's memory format (%s)" % fmt)
    n, c, h, w = x.shape
    k, cg, r, s = weight.shape
    if cg * groups != c:
        raise ValueError("weight has %d input channels per group; x has %d channels in %d "
                         "groups" % (cg, c, groups))
    ep = Epilogue(_ACT[activation] * 2 + (1 if bias is not None else 0))
    sh, sw = _pair(stride, "stride")
    ph, pw = _pair(padding, "padding")
    dh, dw = _pair(dilation, "dilation")
    dt = _dtype(x.dtype)
    st = _stream_of(x, stream)
    oh, ow = output_shape(n, c, h, w, k, r, s, (sh, sw), (ph, pw), (dh, dw), groups=groups)
    _check_operand("weight", weight, (k, cg, r, s), layout, dt)
    if out is None:
        out = torch.empty((n, k, oh, ow), dtype=x.dtype, device=x.device, memory_format=fmt)
    else:
        _check_operand("out", out, (n, k, oh, ow), layout, dt)
    if bias is not None:
        _check_vector("bias", bias, k, dt)
    ptrs = (x.data_ptr(), weight.data_ptr(), out.data_ptr(),
            bias.data_ptr() if bias is not None else 0)
    al = max(_align(*ptrs), 1)
    key = ("conv", int(dt), int(layout), n, c, h, w, k, r, s, sh, sw, ph, pw, dh, dw, groups,
           int(ep), str(compute), al, tuple(sorted(attrs.items())))
    plan = handle._cached_plan(
        key, lambda: Plan(handle, dt, layout, n, c, h, w, k, r, s, (sh, sw), (ph, pw), (dh, dw),
                          groups=groups, epilogue=ep, compute=compute,
                          alignment=min(al, 256), **attrs), _PLANS_MAX)
    ws, nws = _workspace_for(out, st, plan.workspace_size)
    _check(_lib().gko_conv_execute(plan._p, ptrs[0], ptrs[1], ptrs[3] or None, ptrs[2], ws, nws,
                                   st), "gko_conv_execute")
    return out
