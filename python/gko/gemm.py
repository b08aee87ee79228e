"""GEMM through gko (ctypes): D = epilogue(alpha * op(A) @ op(B) + beta * C).

    import gko, gko.gemm
    h = gko.Handle()
    y = gko.gemm.gemm(h, a, b)                           # a @ b, row-major torch tensors
    y = gko.gemm.linear(h, x, w, bias, activation="gelu_tanh")   # F.linear + GELU
    p = gko.gemm.Plan(h, "f16", "f16", m, n, k, transb=True, epilogue="bias_gelu_erf")
    p.execute(x, w, out, bias=b)                         # planned: only enqueues

Tensors are row-major (the last dimension contiguous); 3-D tensors are
strided batches (a batch stride of 0 -- torch's expand -- broadcasts A, B or
C).  Work goes to the tensor's current torch stream unless ``stream=`` says
otherwise.  ``gemm``/``linear`` keep their plans in a small cache keyed by
everything the plan depends on (shapes, leading dimensions, strides, dtypes,
flags and the pointers' alignment), and a workspace per (device, stream)
grown on demand; a Plan you hold allocates its workspace once (per stream).
"""
from __future__ import annotations

import ctypes
import enum
from typing import Any, Optional, Union

from . import (Array, Dtype, Handle, ScaleMode, StreamLike, _Owned, _Plan, _check, _declare,
               _fast_call, _handle_t, _is_torch, _status_t, _stream_of, _stream_t,
               _torch_raw_stream, _workspace_arg, _workspace_for, as_device_array)

__all__ = ["Op", "Layout", "Epilogue", "Backend", "Compute", "Fusion", "Pad", "Static", "Attr",
           "Desc", "Plan", "gemm", "linear", "scaled_mm"]


class Op(enum.IntEnum):
    N = 0
    T = 1


class Layout(enum.IntEnum):
    ROW_MAJOR = 0
    COL_MAJOR = 1


class Epilogue(enum.IntEnum):
    NONE = 0
    BIAS = 1
    RELU = 2
    BIAS_RELU = 3
    GELU_ERF = 4
    BIAS_GELU_ERF = 5
    GELU_TANH = 6
    BIAS_GELU_TANH = 7


class Backend(enum.IntEnum):
    AUTO = 0
    CUBLASLT = 1
    WMMA = 2
    SM90 = 3


class Compute(enum.IntEnum):
    DEFAULT = 0
    TF32 = 1
    F16_ACCUMULATE = 2
    FP8_FAST_ACCUMULATE = 3


class Fusion(enum.IntEnum):
    AUTO = 0
    REQUIRED = 1
    NEVER = 2


class Pad(enum.IntEnum):
    AUTO = 0
    NEVER = 1
    ALWAYS = 2


class Static(enum.IntFlag):
    NONE = 0
    A = 1
    B = 2
    AB = 3


class Attr(enum.IntEnum):
    AB_DTYPE = 0
    CD_DTYPE = 1
    M = 2
    N = 3
    K = 4
    TRANSA = 5
    TRANSB = 6
    LAYOUT = 7
    LDA = 8
    LDB = 9
    LDC = 10
    LDD = 11
    BATCH_COUNT = 12
    STRIDE_A = 13
    STRIDE_B = 14
    STRIDE_C = 15
    STRIDE_D = 16
    STRIDE_BIAS = 17
    EPILOGUE = 18
    COMPUTE = 19
    BACKEND = 20
    ALIGNMENT = 21
    FUSION = 22
    PAD = 23
    MAX_WORKSPACE = 24
    AUTOTUNE = 25
    INVARIANT = 26
    STATIC_OPERANDS = 27
    B_DTYPE = 28
    SCALE_A_MODE = 29
    SCALE_B_MODE = 30


# a dtype: a Dtype, its name ("f16", "bfloat16", ...) or a torch.dtype
DtypeLike = Any
# an enum value: the member, its int, or its name (case-insensitive)
AttrLike = Union[Attr, int, str]
EpilogueLike = Union[Epilogue, int, str]
ComputeLike = Union[Compute, int, str]

_c = ctypes
_desc_t = _c.c_void_p
_plan_t = _c.c_void_p

_declare({
    "gko_gemm_desc_create": (_status_t, [_c.POINTER(_desc_t), _c.c_int, _c.c_int, _c.c_int64,
                                         _c.c_int64, _c.c_int64]),
    "gko_gemm_desc_destroy": (_status_t, [_desc_t]),
    "gko_gemm_desc_set": (_status_t, [_desc_t, _c.c_int, _c.c_int64]),
    "gko_gemm_desc_get": (_status_t, [_desc_t, _c.c_int, _c.POINTER(_c.c_int64)]),
    "gko_gemm_plan_create": (_status_t, [_handle_t, _desc_t, _c.POINTER(_plan_t)]),
    "gko_gemm_plan_destroy": (_status_t, [_plan_t]),
    "gko_gemm_workspace_size": (_status_t, [_plan_t, _c.POINTER(_c.c_size_t)]),
    "gko_gemm_plan_backend": (_status_t, [_plan_t, _c.POINTER(_c.c_int)]),
    "gko_gemm_plan_describe": (_status_t, [_plan_t, _c.c_char_p, _c.c_size_t,
                                           _c.POINTER(_c.c_size_t)]),
    "gko_gemm_execute": (_status_t, [_plan_t, _c.c_float, _c.c_void_p, _c.c_void_p, _c.c_float,
                                     _c.c_void_p, _c.c_void_p, _c.c_void_p, _c.c_void_p,
                                     _c.c_size_t, _stream_t]),
    "gko_gemm_execute_scaled": (_status_t, [_plan_t, _c.c_float, _c.c_void_p, _c.c_void_p,
                                            _c.c_void_p, _c.c_void_p, _c.c_float, _c.c_void_p,
                                            _c.c_void_p, _c.c_void_p, _c.c_void_p, _c.c_void_p,
                                            _c.c_void_p, _c.c_size_t, _stream_t]),
    "gko_gemm": (_status_t, [_handle_t, _c.c_int, _c.c_int, _c.c_int64, _c.c_int64, _c.c_int64,
                             _c.c_float, _c.c_int, _c.c_void_p, _c.c_int64, _c.c_void_p,
                             _c.c_int64, _c.c_float, _c.c_int, _c.c_void_p, _c.c_int64,
                             _c.c_void_p, _c.c_int64, _c.c_int, _c.c_void_p, _stream_t]),
})


def _lib():
    from . import library
    return library()


_DTYPES = {"f32": Dtype.F32, "float32": Dtype.F32, "f16": Dtype.F16, "float16": Dtype.F16,
           "bf16": Dtype.BF16, "bfloat16": Dtype.BF16, "f8e4m3": Dtype.F8E4M3,
           "float8_e4m3fn": Dtype.F8E4M3, "f8e5m2": Dtype.F8E5M2, "float8_e5m2": Dtype.F8E5M2}


def _dtype(d):
    if isinstance(d, str):
        d = d.replace("torch.", "")
        if d not in _DTYPES:
            raise ValueError("unknown dtype %r" % d)
        return _DTYPES[d]
    if hasattr(d, "is_floating_point"):  # a torch.dtype
        return _dtype(str(d))
    return Dtype(d)


def _enum(cls, v):
    if isinstance(v, str):
        return cls[v.upper()]
    return cls(v)


class Desc(_Owned):
    """A gko_gemm_desc_t: set() / get() attributes by Attr (or name)."""

    def __init__(self, ab_dtype: DtypeLike, cd_dtype: DtypeLike, m: int, n: int, k: int,
                 **attrs: Any) -> None:
        d = _desc_t()
        _check(_lib().gko_gemm_desc_create(_c.byref(d), _dtype(ab_dtype), _dtype(cd_dtype),
                                           int(m), int(n), int(k)), "gko_gemm_desc_create")
        self._d = d
        for name, v in attrs.items():
            self.set(name, v)

    def set(self, attr: AttrLike, value: Any) -> "Desc":
        """Sets one attribute (value: an int, or the attribute's enum member or
        name); returns self."""
        a = _enum(Attr, attr)
        if a in (Attr.AB_DTYPE, Attr.CD_DTYPE) or (a == Attr.B_DTYPE and value != -1):
            value = _dtype(value)
        elif a in (Attr.SCALE_A_MODE, Attr.SCALE_B_MODE):
            value = _enum(ScaleMode, value)
        elif a == Attr.EPILOGUE:
            value = _enum(Epilogue, value)
        elif a == Attr.COMPUTE:
            value = _enum(Compute, value)
        elif a == Attr.BACKEND:
            value = _enum(Backend, value)
        elif a == Attr.FUSION:
            value = _enum(Fusion, value)
        elif a == Attr.PAD:
            value = _enum(Pad, value)
        elif a == Attr.STATIC_OPERANDS:
            value = _enum(Static, value)
        elif a == Attr.LAYOUT:
            value = _enum(Layout, value)
        elif a == Attr.AUTOTUNE:
            value = 1 if value else 0
        elif a in (Attr.TRANSA, Attr.TRANSB):
            value = Op.T if value in (True, "T", "t", Op.T) else Op.N
        _check(_lib().gko_gemm_desc_set(self._d, int(a), int(value)), "gko_gemm_desc_set")
        return self

    def get(self, attr: AttrLike) -> int:
        """One attribute's value (as resolved by the library)."""
        v = _c.c_int64(0)
        _check(_lib().gko_gemm_desc_get(self._d, int(_enum(Attr, attr)), _c.byref(v)),
               "gko_gemm_desc_get")
        return v.value

    _ATTR = "_d"

    def _release(self, ptr):
        _lib().gko_gemm_desc_destroy(ptr)


class _Operand:
    """What a plan reads or writes through one pointer: a stored rows x cols
    matrix (leading dimension ld, `batch` matrices `bstride` elements apart)
    of one dtype.  forms: the (size, stride) pairs, outer to inner and size-1
    dimensions left out, of the arrays that address exactly those elements;
    span: the elements from the first addressed to the last."""

    __slots__ = ("name", "dtype", "rows", "cols", "ld", "batch", "bstride", "layout", "forms",
                 "span")

    def __init__(self, name, dtype, rows, cols, ld, batch, bstride, layout):
        self.name, self.dtype = name, Dtype(dtype)
        self.rows, self.cols, self.ld = rows, cols, ld
        self.batch, self.bstride, self.layout = batch, bstride, layout
        if layout == Layout.ROW_MAJOR:
            mats = [((rows, ld), (cols, 1))]
        else:  # torch's column-major view [rows, cols], or the stored [cols, rows]
            mats = [((rows, 1), (cols, ld)), ((cols, ld), (rows, 1))]
        forms = []
        for m in mats:
            forms.append(_sig(((batch, bstride),) + m))
            if batch > 1 and bstride == 0:  # one matrix broadcast to every batch
                forms.append(_sig(m))
        self.forms = forms
        # elements from the first addressed to the last (gk_gemm_spans)
        inner, outer = (cols, rows) if layout == Layout.ROW_MAJOR else (rows, cols)
        self.span = 0 if rows * cols * batch == 0 else \
            (batch - 1) * bstride + (outer - 1) * ld + inner

    @property
    def empty(self):
        return self.rows * self.cols * self.batch == 0

    def describe(self):
        lay = "row-major" if self.layout == Layout.ROW_MAJOR else "column-major"
        what = "a %d x %d %s matrix with leading dimension %d" % (self.rows, self.cols, lay,
                                                                   self.ld)
        if self.batch > 1:
            what += ", %d of them %d elements apart" % (self.batch, self.bstride)
            shape, strides = [self.batch], [self.bstride]
        else:
            shape, strides = [], []
        shape += [self.rows, self.cols]
        strides += [self.ld, 1] if self.layout == Layout.ROW_MAJOR else [1, self.ld]
        return "%s (torch: shape %s, strides %s)" % (what, shape, strides)


def _sig(pairs):
    return tuple(p for p in pairs if p[0] != 1)


def _check_operand(op, t):
    """t's pointer after checking t against the plan's operand op: dtype, and
    (where t's strides are known) the elements it addresses.  TypeError for
    what is not a device array, ValueError saying what differs."""
    a = as_device_array(t)
    if a.dtype != op.dtype:
        raise ValueError("%s is %s, the plan's dtype for it is %s"
                         % (op.name, a.dtype.name, op.dtype.name))
    strides = a.element_strides()
    if op.empty:
        if a.size != 0:
            raise ValueError("%s has shape %s; the plan's %s is empty (%s)"
                             % (op.name, list(a.shape), op.name, op.describe()))
        return a.ptr
    if strides is None or _sig(zip(a.shape, strides)) in op.forms:
        return a.ptr
    # any dense buffer whose rows are the plan's storage rows (a flat 1-D
    # buffer, or a last dimension of ld: a stacked 2-D batch, more rows than
    # the plan touches, rows padded to ld) that covers the plan's span, as
    # the raw pointers of the C API take
    if a.contiguous and (len(a.shape) <= 1 or a.shape[-1] == op.ld):
        if a.size >= op.span:
            return a.ptr
        raise ValueError("%s has shape %s: %d elements, fewer than the %d the plan addresses "
                         "through it (%s)" % (op.name, list(a.shape), a.size, op.span,
                                              op.describe()))
    raise ValueError("%s has shape %s and strides %s; the plan takes %s%s" % (
        op.name, list(a.shape), list(strides), op.describe(),
        "; a transposed view goes through transa/transb" if op.name in ("a", "b") else ""))


class _Bias:
    """The bias a plan reads: n dense elements (per batch: `batch` vectors
    `bstride` elements apart) of one dtype."""

    __slots__ = ("dtype", "n", "batch", "bstride", "forms")

    def __init__(self, dtype, n, batch, bstride):
        self.dtype, self.n, self.batch, self.bstride = Dtype(dtype), n, batch, bstride
        forms = [_sig(((batch, bstride), (n, 1)))]
        if batch > 1 and bstride == 0:
            forms.append(_sig(((n, 1),)))
        if batch > 1 and bstride == n:
            forms.append(_sig(((batch * n, 1),)))
        self.forms = forms


def _check_bias(op, t):
    a = as_device_array(t)
    if a.dtype != op.dtype:
        raise ValueError("bias is %s, the plan's bias dtype is %s" % (a.dtype.name,
                                                                      op.dtype.name))
    strides = a.element_strides()
    if op.n * op.batch == 0 or strides is None or _sig(zip(a.shape, strides)) in op.forms:
        return a.ptr
    raise ValueError("bias has shape %s and strides %s; the plan takes %d dense elements%s"
                     % (list(a.shape), list(strides), op.n,
                        " per batch, %d batches %d apart" % (op.batch, op.bstride)
                        if op.batch > 1 else ""))


class Plan(_Plan):
    """A gko GEMM plan.  Keyword attributes as Desc (transa=True, lda=...,
    batch_count=..., epilogue="bias_gelu_tanh", compute="tf32", ...).
    execute() only enqueues; its workspace is allocated once (torch) unless
    workspace= is given."""

    _WORKSPACE_SIZE, _DESCRIBE = "gko_gemm_workspace_size", "gko_gemm_plan_describe"

    def __init__(self, handle: Handle, ab_dtype: DtypeLike, cd_dtype: DtypeLike, m: int, n: int,
                 k: int, **attrs: Any) -> None:
        self.handle = handle
        desc = Desc(ab_dtype, cd_dtype, m, n, k, **attrs)
        try:
            geometry = {a: desc.get(a) for a in _GEOMETRY}
            p = _plan_t()
            _check(_lib().gko_gemm_plan_create(handle.value, desc._d, _c.byref(p)),
                   "gko_gemm_plan_create")
        finally:
            desc.close()
        self._p = p
        self._ws = None
        self._bind(geometry)

    def _bind(self, g, execute=None):
        """What execute() needs, computed once: the operands' expected forms
        (from the descriptor's resolved attributes g, {Attr: value}) and the
        C function (execute: a stand-in with its signature, for tests)."""
        self.m, self.n, self.k = g[Attr.M], g[Attr.N], g[Attr.K]
        ta, tb, lay = g[Attr.TRANSA], g[Attr.TRANSB], Layout(g[Attr.LAYOUT])
        batch = g[Attr.BATCH_COUNT]
        ab, cd = Dtype(g[Attr.AB_DTYPE]), Dtype(g[Attr.CD_DTYPE])
        bd = ab if g[Attr.B_DTYPE] == -1 else Dtype(g[Attr.B_DTYPE])
        m, n, k = self.m, self.n, self.k
        self.epilogue = Epilogue(g[Attr.EPILOGUE])
        self._opa = _Operand("a", ab, k if ta else m, m if ta else k, g[Attr.LDA], batch,
                             g[Attr.STRIDE_A], lay)
        self._opb = _Operand("b", bd, n if tb else k, k if tb else n, g[Attr.LDB], batch,
                             g[Attr.STRIDE_B], lay)
        self._opc = _Operand("c", cd, m, n, g[Attr.LDC], batch, g[Attr.STRIDE_C], lay)
        self._opd = _Operand("d", cd, m, n, g[Attr.LDD], batch, g[Attr.STRIDE_D], lay)
        bias_dt = Dtype.BF16 if cd in (Dtype.F8E4M3, Dtype.F8E5M2) else cd
        self._opbias = _Bias(bias_dt, n, batch, g[Attr.STRIDE_BIAS])
        self._fn = execute if execute is not None else _lib().gko_gemm_execute
        self._fast, self._addr = (None, None) if execute is not None else _fast_call(
            "gemm_execute", self._fn)
        self._seen = None

    @property
    def backend(self) -> Backend:
        """The backend the library chose for the plan."""
        v = _c.c_int(0)
        _check(_lib().gko_gemm_plan_backend(self._p, _c.byref(v)), "gko_gemm_plan_backend")
        return Backend(v.value)

    def execute(self, a: Array, b: Array, d: Array, c: Optional[Array] = None,
                bias: Optional[Array] = None, alpha: float = 1.0, beta: float = 0.0,
                workspace: Optional[Array] = None, stream: StreamLike = None) -> Array:
        """d = epilogue(alpha * op(a) op(b) + beta * c + bias).  Returns d.

        a, b, d (and c, and bias where the epilogue adds one) are checked
        against the plan: dtype, and the elements they address (TypeError
        for what is not a device array, ValueError saying what differs).  An
        operand is accepted when its shape and strides are the plan's matrix
        (or batch of them), or when it is a dense buffer -- flat 1-D, or with
        a last dimension equal to the operand's leading dimension (a stacked
        2-D batch, more rows than the plan reads or writes, rows padded to
        ld) -- that holds at least the plan's span for it:
        (batch - 1) * stride + (rows - 1) * ld + cols elements.  Torch
        tensors whose shapes, strides, dtypes and devices equal the last
        call's skip the checks: the fast path is a tuple comparison, the
        data pointers, torch's raw current stream and one ctypes call.
        Without workspace=, the plan-held workspace of the call's stream
        (see gko._Plan: one per stream, made once under a lock)."""
        try:
            meta = (a.shape, a.stride(), a.dtype, a.get_device(),
                    b.shape, b.stride(), b.dtype, b.get_device(),
                    d.shape, d.stride(), d.dtype, d.get_device(),
                    None if c is None else (c.shape, c.stride(), c.dtype, c.get_device()),
                    None if bias is None else (bias.shape, bias.stride(), bias.dtype,
                                               bias.get_device()))
        except Exception:  # noqa: BLE001 -- not a torch tensor: the checked path says what
            meta = None
        if meta is None or meta != self._seen:
            return self._execute_checked(meta, a, b, d, c, bias, alpha, beta, workspace, stream)
        if stream is None:
            st = self._rs(meta[11])
        elif stream.__class__ is int:
            st = stream
        else:
            st = _stream_of(d, stream)
        if workspace is None:
            wsp = self._wsp
            if wsp is not None and (wsp[0] == st or not wsp[2]):
                ws, nws = wsp[1], wsp[2]
            else:
                ws, nws = self._workspace(d, st)
        else:
            ws, nws = _workspace_arg(workspace)
        if self._fast is not None:
            p = self._p
            status = self._fast(self._addr, None if p is None else p.value, float(alpha),
                                a.data_ptr(), b.data_ptr(), float(beta),
                                None if c is None else c.data_ptr(),
                                d.data_ptr(), None if bias is None else bias.data_ptr(), ws, nws,
                                st)
        else:
            status = self._fn(self._p, float(alpha), a.data_ptr(), b.data_ptr(), float(beta),
                              None if c is None else c.data_ptr(), d.data_ptr(),
                              None if bias is None else bias.data_ptr(), ws, nws, st)
        if status:
            _check(status, "gko_gemm_execute")
        return d

    def _execute_checked(self, meta, a, b, d, c, bias, alpha, beta, workspace, stream):
        """execute() with every check; remembers torch operands' metadata
        (meta) for the fast path once they passed."""
        # a and b may be None where they are not read (k == 0 or alpha == 0)
        pa = None if a is None else _check_operand(self._opa, a)
        pb = None if b is None else _check_operand(self._opb, b)
        pd = _check_operand(self._opd, d)
        pc = None if c is None else _check_operand(self._opc, c)
        if bias is None:
            pbias = None
        elif self.epilogue & 1:
            pbias = _check_bias(self._opbias, bias)
        else:  # not read
            pbias = as_device_array(bias).ptr
        st = _stream_of(d, stream)
        if workspace is None:
            ws, nws = self._workspace(d, st)
        else:
            ws, nws = _workspace_arg(workspace)
        _check(self._fn(self._p, float(alpha), pa, pb, float(beta), pc, pd, pbias, ws, nws, st),
               "gko_gemm_execute")
        if meta is not None and _is_torch(a, b, d, c, bias):
            self._rs = _torch_raw_stream()
            self._seen = meta
        return d

    def _release(self, ptr):
        _lib().gko_gemm_plan_destroy(ptr)


# the descriptor's attributes a plan's operands follow from
_GEOMETRY = (Attr.AB_DTYPE, Attr.CD_DTYPE, Attr.B_DTYPE, Attr.M, Attr.N, Attr.K, Attr.TRANSA,
             Attr.TRANSB, Attr.LAYOUT, Attr.LDA, Attr.LDB, Attr.LDC, Attr.LDD,
             Attr.BATCH_COUNT, Attr.STRIDE_A, Attr.STRIDE_B, Attr.STRIDE_C, Attr.STRIDE_D,
             Attr.STRIDE_BIAS, Attr.EPILOGUE)


# ---------------------------------------------------------------------------
# torch convenience: plans cached by everything they depend on
# ---------------------------------------------------------------------------

_PLANS_MAX = 256  # plans cached per handle (Handle._cached_plan)


def _align(*ptrs):
    a = 256
    for p in ptrs:
        if p:
            a = min(a, p & -p)
    return max(a, 1)


def _mat(t, name):
    """(rows, cols, ld, batch, batch_stride) of a row-major 2-D or 3-D tensor."""
    if t.dim() not in (2, 3):
        raise ValueError("%s must be 2-D or 3-D, not %d-D" % (name, t.dim()))
    if t.stride(-1) != 1 and t.size(-1) != 1:
        raise ValueError("%s must have a contiguous last dimension (got strides %s); "
                         "pass a transposed view through transa/transb instead"
                         % (name, tuple(t.stride())))
    rows, cols = t.size(-2), t.size(-1)
    ld = max(t.stride(-2), cols, 1) if rows > 1 else max(cols, 1)
    if t.dim() == 2:
        return rows, cols, ld, 1, 0
    return rows, cols, ld, t.size(0), t.stride(0) if t.size(0) > 1 else 0


def _plan_for(handle, key, make):
    return handle._cached_plan(("gemm",) + key, make, _PLANS_MAX)




_TORCH_OF = {Dtype.F32: "float32", Dtype.F16: "float16", Dtype.BF16: "bfloat16",
             Dtype.F8E4M3: "float8_e4m3fn", Dtype.F8E5M2: "float8_e5m2"}


def _scale_mode(s, count, name):
    """TENSOR for a one-element factor (or None), ROWWISE for `count`."""
    if s is None or s.numel() == 1:
        return ScaleMode.TENSOR
    if s.numel() == count:
        return ScaleMode.ROWWISE
    raise ValueError("%s has %d elements: 1 (per tensor) or %d (row-wise) expected"
                     % (name, s.numel(), count))


def gemm(handle: Handle, a: Any, b: Any, out: Any = None, c: Any = None, bias: Any = None,
         alpha: float = 1.0, beta: float = 0.0, transa: bool = False, transb: bool = False,
         epilogue: EpilogueLike = "none", compute: ComputeLike = "default",
         out_dtype: DtypeLike = None, stream: StreamLike = None, scale_a: Any = None,
         scale_b: Any = None, scale_d: Any = None, amax_d: Any = None, **attrs: Any) -> Any:
    """out = epilogue(alpha * op(a) @ op(b) + beta * c + bias) for torch tensors
    (row-major, 2-D or batched 3-D).  op(a) = a.T when transa (a stored k x m).
    bias: n elements.  Returns out (allocated when None, dtype out_dtype or
    a's).  FP8 (torch.float8_e4m3fn / float8_e5m2 a and b): scale_a, scale_b
    (f32 tensors of 1 element, or m and n for row-wise), scale_d and amax_d
    (an FP8 out) as gko_gemm_execute_scaled; each 16-byte aligned."""
    import torch
    ar, ac, lda, ba, sa = _mat(a, "a")
    br, bc, ldb, bb, sb = _mat(b, "b")
    m, k = (ac, ar) if transa else (ar, ac)
    k2, n = (bc, br) if transb else (br, bc)
    if k != k2:
        raise ValueError("inner dimensions differ: op(a) is %dx%d, op(b) is %dx%d" % (m, k, k2, n))
    batch = max(ba, bb, c.size(0) if c is not None and c.dim() == 3 else 1)
    if ba not in (1, batch) or bb not in (1, batch):
        raise ValueError("batch sizes differ: %d and %d" % (ba, bb))
    if ba == 1 and batch > 1:
        sa = 0
    if bb == 1 and batch > 1:
        sb = 0
    cd = _dtype(out_dtype) if out_dtype is not None else _dtype(a.dtype)
    bdt = _dtype(b.dtype)
    if bdt != _dtype(a.dtype):
        attrs["b_dtype"] = bdt
    if scale_a is not None or scale_b is not None:
        attrs["scale_a_mode"] = _scale_mode(scale_a, m, "scale_a")
        attrs["scale_b_mode"] = _scale_mode(scale_b, n, "scale_b")
    if out is None:
        tdt = getattr(torch, _TORCH_OF[cd])
        shape = (batch, m, n) if (a.dim() == 3 or b.dim() == 3) else (m, n)
        out = torch.empty(shape, dtype=tdt, device=a.device)
    _, _, ldd, bd, sd = _mat(out, "out")
    ldc, sc = ldd, sd
    if c is not None:
        _, _, ldc, bcn, sc = _mat(c, "c")
        if bcn == 1 and batch > 1:
            sc = 0
    ep = _enum(Epilogue, epilogue)
    st = _stream_of(a, stream)
    ptrs = (a.data_ptr(), b.data_ptr(), out.data_ptr(),
            c.data_ptr() if c is not None else 0, bias.data_ptr() if bias is not None else 0)
    key = (int(_dtype(a.dtype)), int(cd), m, n, k, bool(transa), bool(transb), lda, ldb, ldc, ldd,
           batch, sa, sb, sc, sd, int(ep), str(compute), _align(*ptrs),
           tuple(sorted((n_, int(v)) if isinstance(v, enum.Enum) else (n_, v)
                        for n_, v in attrs.items())))

    def make():
        kw = dict(transa=transa, transb=transb, lda=lda, ldb=ldb, ldc=ldc, ldd=ldd,
                  batch_count=batch, epilogue=ep, compute=compute, alignment=_align(*ptrs))
        if batch > 1:
            kw.update(stride_a=sa, stride_b=sb, stride_c=sc, stride_d=sd)
        kw.update(attrs)
        return Plan(handle, _dtype(a.dtype), cd, m, n, k, **kw)

    plan = _plan_for(handle, key, make)
    ws, nws = _workspace_for(out, st, plan.workspace_size)
    factors = (scale_a, scale_b, scale_d, amax_d)
    if any(f is not None for f in factors):
        fa, fb, fd, fm = (None if f is None else f.data_ptr() for f in factors)
        _check(_lib().gko_gemm_execute_scaled(plan._p, float(alpha), ptrs[0], fa, ptrs[1], fb,
                                              float(beta), ptrs[3] or None, ptrs[2], fd, fm,
                                              ptrs[4] or None, ws, nws, st),
               "gko_gemm_execute_scaled")
        return out
    _check(_lib().gko_gemm_execute(plan._p, float(alpha), ptrs[0], ptrs[1], float(beta),
                                   ptrs[3] or None, ptrs[2], ptrs[4] or None, ws, nws, st),
           "gko_gemm_execute")
    return out


def scaled_mm(handle: Handle, a: Any, b: Any, scale_a: Any, scale_b: Any, bias: Any = None,
              out_dtype: Any = None, scale_result: Any = None, use_fast_accum: bool = False,
              amax: Any = None, out: Any = None, stream: StreamLike = None) -> Any:
    """torch._scaled_mm's contract through gko: a [m, k] row-major FP8, b
    [k, n] column-major FP8 (b = w.t() of a contiguous [n, k] w), scale_a /
    scale_b f32 with 1 element or m x 1 / 1 x n (row-wise), out_dtype the
    result's torch dtype (default a's), scale_result the FP8 result's
    factor, amax the FP8 result's amax (a 1-element f32 tensor)."""
    if b.dim() != 2 or b.stride(0) != 1:
        raise ValueError("b must be a column-major [k, n] view (w.t() of a contiguous w)")
    return gemm(handle, a, b.t(), out=out, bias=bias, transb=True,
                epilogue="bias" if bias is not None else "none",
                compute="fp8_fast_accumulate" if use_fast_accum else "default",
                out_dtype=out_dtype if out_dtype is not None else a.dtype, stream=stream,
                scale_a=scale_a.reshape(-1), scale_b=scale_b.reshape(-1),
                scale_d=scale_result, amax_d=amax)


_ACT = {None: 0, "none": 0, "relu": 1, "gelu": 2, "gelu_erf": 2, "gelu_tanh": 3}


def linear(handle: Handle, x: Any, weight: Any, bias: Any = None,
           activation: Optional[str] = None, out: Any = None, stream: StreamLike = None,
           **attrs: Any) -> Any:
    """activation(x @ weight.T + bias), like torch's F.linear (+ activation:
    "relu", "gelu" (erf, F.gelu's default) or "gelu_tanh").  x: [..., k],
    weight: [n, k], bias: [n]."""
    if activation not in _ACT:
        raise ValueError("activation must be one of %s" % sorted(k for k in _ACT if k))
    lead = x.shape[:-1]
    x2 = x.reshape(-1, x.shape[-1])
    ep = Epilogue(_ACT[activation] * 2 + (1 if bias is not None else 0))
    y = gemm(handle, x2, weight, out=None if out is None else out.reshape(-1, weight.shape[0]),
             bias=bias, transb=True, epilogue=ep, stream=stream, **attrs)
    return y.reshape(*lead, weight.shape[0]) if out is None else out
