"""gko's operators as PyTorch custom operators (torch.library), for eager code,
torch.compile (no graph breaks: each op has a fake implementation) and CUDA
graphs (the ops only enqueue work on torch's current stream).

    import gko.torch as gt
    y = gt.linear(x, w, b, activation="gelu")       # act(x @ w.T + b)
    y = gt.gelu(x, approximate="tanh")
    y = gt.conv2d(x, w, b, stride=2, padding=3, activation="relu")
    y = gt.spmm(a_csr, b)                             # torch.sparse_csr @ dense
    layer = gt.Linear(768, 3072, activation="gelu")   # an nn.Linear (same state_dict)
    layer = gt.Linear.from_torch(nn_linear, activation="gelu")
    conv = gt.Conv2d.from_torch(nn_conv, activation="relu")

The operators are torch.ops.gko.linear, .gelu, .conv2d and .spmm (CUDA
tensors).  In eager code that records no gradient (and with no
torch.compile, dispatch or torch-function mode around), the functions call
the operators' CUDA implementation directly instead of through torch's
custom-op dispatch, which would cost tens of µs per call; the result is the
same.  linear and conv2d then remember the checked call, so the next one
with the same shapes, strides, dtypes, devices, pointer alignment and
options skips the checks and the plan lookup.  Plans are made on the first
call of a shape and cached with one gko handle per device; a plan evicted
from a full cache is kept (retired), not closed, since a captured CUDA graph
or another thread may still use it.  clear_cache() closes them all (and
forgets the remembered calls): a captured CUDA graph must not outlive the
plans it used, so clear the cache only when no graph that ran these ops is
replayed again and no other thread is inside a gko.torch call.  The
workspace is one buffer per (device, stream) (sizes rounded up to powers of
two), never freed while a graph may use it.  A call inside a CUDA graph
capture whose stream has none big enough gets one of its own (from the
graph's memory pool when torch captures), kept alive, like the replaced
ones, until clear_cache(): the graph's replays write it.

Gradients: linear, gelu and conv2d have backward formulas in torch's own
operators (activation gradients from the saved output, or from the
pre-activation recomputed); spmm has none.

Importing gko does not import torch; this module does.
"""
import os
import threading
from typing import Any, List, Optional, Sequence, Tuple, Union

import torch

from . import Dtype, Handle, _check, library
from . import conv as _gconv
from . import gemm as _ggemm
from . import sparse as _gsparse
from .conv import PairLike

if not hasattr(torch.library, "custom_op"):
    raise ImportError("gko.torch needs torch >= 2.4 (torch.library.custom_op); this is torch %s"
                      % torch.__version__)

__all__ = ["linear", "gelu", "conv2d", "spmm", "Linear", "Conv2d", "GELU", "clear_cache"]

Tensor = torch.Tensor

# ---------------------------------------------------------------------------
# handles, plans, workspaces
# ---------------------------------------------------------------------------

_HANDLES = {}       # device index -> Handle (its plans live in it)
_WS = {}            # (device, stream) -> the largest workspace so far
_WS_RETIRED = []    # replaced workspaces: a captured graph may still use them
_WS_LOCK = threading.Lock()  # making handles and workspaces
_PLANS_MAX = 1024   # plans per handle and kind (Handle._cached_plan retires the oldest)

_raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)
if _raw_stream is None:
    def _raw_stream(index):
        return torch.cuda.current_stream(index).cuda_stream

# The eager fast path.  Where the custom operator would only hand its
# tensors to the CUDA implementation -- plain CUDA tensors, no gradient to
# record, nothing tracing or intercepting the call -- linear, gelu, conv2d
# and spmm call that implementation themselves and skip torch's custom-op
# dispatch, which costs tens of µs of host time per call (docs/
# performance.md).  torch.compile, torch.export, torch.jit.trace, autograd,
# functorch transforms, FakeTensor and dispatch modes see the operator.
# GKO_TORCH_DIRECT=0 turns the fast path off.
_is_compiling = getattr(getattr(torch, "compiler", None), "is_compiling", None)
_function_mode = getattr(torch._C, "_is_torch_function_mode_enabled", None)
_dispatch_modes = getattr(torch._C, "_len_torch_dispatch_stack", None)
_functorch_wrapped = getattr(getattr(torch._C, "_functorch", None),
                             "is_functorch_wrapped_tensor", None)
_jit_tracing = getattr(torch._C, "_get_tracing_state", None)
_DIRECT = (os.environ.get("GKO_TORCH_DIRECT", "1") != "0" and
           None not in (_is_compiling, _function_mode, _dispatch_modes, _functorch_wrapped,
                        _jit_tracing))
# A direct call whose checks passed leaves its plan and foreign call under the
# call's signature (shapes, strides, dtypes, devices, pointer alignment,
# options); a later call of the same signature skips the checks and the plan
# lookup: one dict lookup, the output's allocation and the foreign call.
_functorch_active = getattr(torch._C, "_are_functorch_transforms_active", None)
_cuda_device = getattr(torch._C, "_cuda_getDevice", None)
_AGAIN = _DIRECT and None not in (_functorch_active, _cuda_device)


_PLAIN = (Tensor, torch.nn.Parameter)  # Parameter turns __torch_function__ off: a Tensor


def _direct(*ts: Optional[Tensor]) -> bool:
    """Whether a call on tensors ts (None: absent) may bypass the operator:
    dense CUDA tensors of the Tensor class itself (or nn.Parameter, so that
    modules' weights qualify), none of them needing a gradient recorded or
    a negation resolved (a neg view's memory holds -t), no compile,
    torch.jit trace, torch-function or dispatch mode active."""
    if not _DIRECT or _watched():
        return False
    grad = torch.is_grad_enabled()
    for t in ts:
        if t is not None and (type(t) not in _PLAIN or not t.is_cuda or
                              t.layout is not torch.strided or (grad and t.requires_grad) or
                              t.is_neg() or _functorch_wrapped(t)):
            return False
    return True


def _watched() -> bool:
    """Whether something traces or intercepts calls: torch.compile, a
    torch.jit trace, a torch-function or dispatch mode."""
    return (_is_compiling() or _function_mode() or _dispatch_modes() or
            _jit_tracing() is not None)


class _Call:
    """What a checked direct call leaves for the next call of its signature:
    the plan (kept alive), its foreign call, the output's shape and memory
    format, the pointers' alignment mask, and the workspace last used, as
    (raw stream, pointer, bytes, tensor)."""
    __slots__ = ("dev", "y", "mask", "plan", "fast", "addr", "p", "need", "ws")

    def __init__(self, y, fmt, align, plan):
        self.dev, self.mask, self.plan = y.get_device(), align - 1, plan
        self.y = (tuple(y.shape), y.dtype, y.device, fmt)
        self.fast, self.addr, self.p = plan._fast, plan._addr, plan._p.value
        self.need = plan._need if plan._need is not None else plan.workspace_size
        self.ws = None

    def workspace(self, st):
        """(st, pointer, bytes, tensor) of the workspace for stream st, or
        None where (device, st) has none big enough yet (the checked path
        makes it)."""
        ws = self.ws
        if ws is not None and ws[0] == st:
            return ws
        if self.need == 0:
            ws = (st, None, 0, None)
        else:
            t = _WS.get((self.dev, st))
            if t is None or t.numel() < self.need:
                return None
            ws = (st, t.data_ptr(), t.numel(), t)
        self.ws = ws
        return ws


_CALLS = {}  # call signature -> _Call; cleared by clear_cache()


def _call_key(x, weight, bias, options):
    """(a call's signature, x's, weight's and bias's pointers).  The
    signature holds what the checks and the plan depend on: shapes,
    strides, dtypes, devices, the pointers' common alignment (up to 256
    bytes) and the options as given (the operator's name first)."""
    px, pw = x.data_ptr(), weight.data_ptr()
    if bias is None:
        pb, bkey, a = None, None, (px | pw) & 255
    else:
        pb = bias.data_ptr()
        bkey = (bias.shape, bias.stride(), bias.dtype, bias.get_device(), bias.is_cuda)
        a = (px | pw | pb) & 255
    return ((x.shape, x.stride(), x.dtype, x.get_device(), x.is_cuda,
             weight.shape, weight.stride(), weight.dtype, weight.get_device(), weight.is_cuda,
             bkey, a & -a if a else 256, options), px, pw, pb)


def _plain_option(v):
    """Whether v compares by value and cannot change: None, str, int, or a
    tuple of ints (not a subclass, list or tensor)."""
    t = type(v)
    return (v is None or t is str or t is int or
            (t is tuple and all(type(e) is int for e in v)))


def _remember(x, weight, bias, options, y, fmt, align, h, plan):
    """After a checked direct call that used x, weight and bias as they are
    and wrote a new y (memory format fmt) with handle h's plan for pointers
    aligned to align bytes: the next call of its signature skips the
    checks.  Not where an option could compare equal to another value
    (subclasses, mutable objects), nor where clear_cache() ran meanwhile;
    a signature already remembered keeps its call."""
    if not all(_plain_option(v) for v in options):
        return
    key = _call_key(x, weight, bias, options)[0]
    with _WS_LOCK:
        if key in _CALLS or _HANDLES.get(y.get_device()) is not h or plan._p is None:
            return
        if len(_CALLS) >= _PLANS_MAX:
            _CALLS.pop(next(iter(_CALLS)))
        _CALLS[key] = _Call(y, fmt, align, plan)


def _remembered(x, weight, bias, options):
    """(call, x's, weight's and bias's pointers, workspace, y) for a call
    whose signature a checked direct call remembered; None where this call
    must take the checked path (a new signature, a gradient to record,
    something watching, a neg view, another current device, no workspace
    yet for this stream, an output less aligned than the plan's)."""
    if (type(x) not in _PLAIN or type(weight) not in _PLAIN or
            (bias is not None and type(bias) not in _PLAIN) or _watched() or
            _functorch_active()):
        return None
    try:
        key, px, pw, pb = _call_key(x, weight, bias, options)
        c = _CALLS.get(key)
    except Exception:  # noqa: BLE001 -- no strides or storage, unhashable options: checked path
        return None
    if (c is None or _cuda_device() != c.dev or x.is_neg() or weight.is_neg() or
            (bias is not None and bias.is_neg()) or
            (torch.is_grad_enabled() and (x.requires_grad or weight.requires_grad or
                                          (bias is not None and bias.requires_grad)))):
        return None
    ws = c.workspace(_raw_stream(c.dev))
    if ws is None:
        return None
    shape, dtype, device, fmt = c.y
    y = torch.empty(shape, dtype=dtype, device=device, memory_format=fmt)
    if y.data_ptr() & c.mask:
        return None
    return c, px, pw, pb, ws, y


def _handle(dev):
    h = _HANDLES.get(dev)
    if h is None:
        with _WS_LOCK:
            h = _HANDLES.get(dev)
            if h is None:
                with torch.cuda.device(dev):
                    h = _HANDLES[dev] = Handle()
    return h


def clear_cache() -> None:
    """Closes every plan and handle gko.torch made (the next call makes new
    ones), the plans evicted from the caches included, drops its
    workspaces and forgets the remembered eager calls.

    Plans and workspaces are never closed or freed before this call (an
    evicted plan is retired, not closed), because a captured CUDA graph
    keeps using the plans and workspaces it was captured with, and another
    thread may be running a plan it has just fetched.  So call clear_cache()
    only when no captured graph that ran gko.torch ops will be replayed
    again, and while no other thread is inside a gko.torch call."""
    with _WS_LOCK:
        _CALLS.clear()
        hs = list(_HANDLES.values())
        _HANDLES.clear()
        for h in hs:
            h.close()
        _WS.clear()
        del _WS_RETIRED[:]


def _round_up(need):
    """need rounded up to a power of two: a growing shape retires few
    workspaces (each at most half the size of the next)."""
    return 1 << max(need - 1, 0).bit_length()


def _workspace(dev, stream, plan):
    """A workspace tensor of at least the plan's size for (dev, stream), or
    None when the plan needs none.  Inside a CUDA graph capture, where
    (dev, stream) has none big enough, one for this call alone, kept (the
    graph's replays write it) but not shared with later calls."""
    need = plan._need
    if need is None:
        need = plan._need = plan.workspace_size
    if need == 0:
        return None
    key = (dev, stream)
    ws = _WS.get(key)
    if ws is not None and ws.numel() >= need:
        return ws
    with _WS_LOCK:
        ws = _WS.get(key)
        if ws is not None and ws.numel() >= need:
            return ws
        if torch.cuda.is_current_stream_capturing():
            # kept: freed, torch could hand it to later work that the replays would overwrite
            own = torch.empty(need, dtype=torch.uint8, device=torch.device("cuda", dev))
            _WS_RETIRED.append(own)
            return own
        new = torch.empty(_round_up(need), dtype=torch.uint8, device=torch.device("cuda", dev))
        if ws is not None:
            _WS_RETIRED.append(ws)  # a captured graph may still use it
        _WS[key] = new
        return new


def _align(*ts):
    """The alignment (bytes, at most 256) every given tensor's pointer has."""
    a = 256
    for t in ts:
        if t is not None:
            p = t.data_ptr()
            if p:
                a = min(a, p & -p)
    return a


_ACT = {"none": 0, "relu": 1, "gelu": 2, "gelu_erf": 2, "gelu_tanh": 3}


def _act_name(activation):
    a = "none" if activation is None else str(activation)
    if a not in _ACT:
        raise ValueError("activation must be None or one of %s, not %r"
                         % (sorted(k for k in _ACT if k != "none"), activation))
    return a


def _on_device(dev, fn, *args):
    """fn(*args) with dev as the current CUDA device."""
    if torch.cuda.current_device() == dev:
        return fn(*args)
    with torch.cuda.device(dev):
        return fn(*args)


def _act_backward(activation, grad, y, pre):
    """d loss / d (pre-activation) from d loss / d y; pre() recomputes the
    pre-activation (GELU needs it)."""
    if activation == "none":
        return grad
    if activation == "relu":
        return torch.ops.aten.threshold_backward(grad, y, 0)
    return torch.ops.aten.gelu_backward(grad, pre(),
                                        approximate="tanh" if activation == "gelu_tanh"
                                        else "none")


# ---------------------------------------------------------------------------
# linear: act(x @ weight.T + bias)
# ---------------------------------------------------------------------------

def _linear_again(x, weight, bias, activation, backend):
    """linear() for a call signature that a checked direct call remembered;
    None where this call must take the checked path."""
    r = _remembered(x, weight, bias, ("linear", activation, backend))
    if r is None:
        return None
    c, px, pw, pb, ws, y = r
    if c.fast is not None:
        status = c.fast(c.addr, c.p, 1.0, px, pw, 0.0, None, y.data_ptr(), pb, ws[1], ws[2],
                        ws[0])
    else:
        status = c.plan._fn(c.plan._p, 1.0, px, pw, 0.0, None, y.data_ptr(), pb, ws[1], ws[2],
                            ws[0])
    if status:
        _check(status, "gko_gemm_execute")
    return y


def _linear_cuda(x, weight, bias, activation, backend, remember=None):
    k, n = x.shape[-1], weight.shape[0]
    if weight.dim() != 2 or weight.shape[1] != k:
        raise ValueError("weight must be [out_features, %d] for x [..., %d], not %s"
                         % (k, k, list(weight.shape)))
    if weight.dtype != x.dtype or (bias is not None and bias.dtype != x.dtype):
        raise ValueError("x, weight and bias must have one dtype (got %s, %s, %s)"
                         % (x.dtype, weight.dtype, None if bias is None else bias.dtype))
    if x.dim() == 2:  # no reshape and view: a few µs of host time per call
        m = x.shape[0]
        x2 = x if x.is_contiguous() else x.contiguous()
        y = y2 = torch.empty((m, n), dtype=x.dtype, device=x.device)
    else:
        m = 1
        for d in x.shape[:-1]:
            m *= d
        x2 = x.reshape(m, k)
        if not x2.is_contiguous():
            x2 = x2.contiguous()
        y = torch.empty((*x.shape[:-1], n), dtype=x.dtype, device=x.device)
        y2 = y.view(m, n)
    w = weight if weight.is_contiguous() else weight.contiguous()
    b = bias if bias is None or bias.is_contiguous() else bias.contiguous()
    if m == 0 or n == 0:
        return y
    dev = x.get_device()
    ep = _ACT[activation] * 2 + (1 if b is not None else 0)
    al = _align(x2, w, y2, b)
    h = _handle(dev)
    key = ("torch.linear", x.dtype, m, n, k, ep, backend, al)
    plan = h._cached_plan(key, lambda: _ggemm.Plan(h, x.dtype, x.dtype, m, n, k, transb=True,
                                                   epilogue=ep, backend=backend, alignment=al),
                          _PLANS_MAX)
    st = _raw_stream(dev)
    plan.execute(x2, w, y2, bias=b, workspace=_workspace(dev, st, plan), stream=st)
    if remember is not None and x2.data_ptr() == x.data_ptr() and w is weight and b is bias:
        _remember(x, weight, bias, remember, y, torch.contiguous_format, al, h, plan)
    return y


@torch.library.custom_op("gko::linear", mutates_args=(), device_types="cuda")
def _linear_op(x: Tensor, weight: Tensor, bias: Optional[Tensor], activation: str,
               backend: str) -> Tensor:
    return _on_device(x.get_device(), _linear_cuda, x, weight, bias, activation, backend)


@_linear_op.register_fake
def _(x, weight, bias, activation, backend):
    return x.new_empty((*x.shape[:-1], weight.shape[0]))


def _linear_setup(ctx, inputs, output):
    x, weight, bias, activation, _ = inputs
    ctx.activation = activation
    ctx.has_bias = bias is not None
    ctx.save_for_backward(x, weight, bias, output)


def _linear_backward(ctx, grad):
    x, weight, bias, y = ctx.saved_tensors
    g = _act_backward(ctx.activation, grad, y,
                      lambda: torch.nn.functional.linear(x, weight, bias))
    gx = gw = gb = None
    if ctx.needs_input_grad[0]:
        gx = torch.matmul(g, weight)
    g2 = g.reshape(-1, g.shape[-1])
    if ctx.needs_input_grad[1]:
        gw = torch.matmul(g2.t(), x.reshape(-1, x.shape[-1]))
    if ctx.has_bias and ctx.needs_input_grad[2]:
        gb = g2.sum(0)
    return gx, gw, gb, None, None


_linear_op.register_autograd(_linear_backward, setup_context=_linear_setup)


def linear(x: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor] = None,
           activation: Optional[str] = None, backend: str = "auto") -> torch.Tensor:
    """activation(x @ weight.T + bias) like torch.nn.functional.linear (+
    activation: None, "relu", "gelu" (erf, F.gelu's default) or
    "gelu_tanh") in one gko GEMM with a fused epilogue.  x [..., k], weight
    [n, k], bias [n], all one dtype (f32, f16, bf16) on one CUDA device.
    backend: "auto", "cublaslt", "wmma" or "sm90" (gko.gemm.Backend)."""
    if _AGAIN:
        y = _linear_again(x, weight, bias, activation, backend)
        if y is not None:
            return y
    act, be = _act_name(activation), _backend(backend)
    if _direct(x, weight, bias):
        return _on_device(x.get_device(), _linear_cuda, x, weight, bias, act, be,
                          ("linear", activation, backend) if _AGAIN else None)
    return torch.ops.gko.linear(x, weight, bias, act, be)


_BACKENDS = ("auto", "cublaslt", "wmma", "sm90")


def _backend(backend):
    b = str(backend).lower()
    if b not in _BACKENDS:
        raise ValueError("backend must be one of %s, not %r" % (_BACKENDS, backend))
    return b


class Linear(torch.nn.Linear):
    """torch.nn.Linear (same parameters and state_dict) whose forward is
    gko.torch.linear, with an optional fused activation and a GEMM backend."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True,
                 activation: Optional[str] = None, backend: str = "auto", device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__(in_features, out_features, bias=bias, device=device, dtype=dtype)
        self.activation = _act_name(activation)
        self.backend = _backend(backend)

    @classmethod
    def from_torch(cls, module: torch.nn.Linear, activation: Optional[str] = None,
                   backend: str = "auto") -> "Linear":
        """A Linear sharing module's (a torch.nn.Linear) parameters."""
        new = cls.__new__(cls)
        torch.nn.Module.__init__(new)
        new.in_features, new.out_features = module.in_features, module.out_features
        new.weight = module.weight
        new.bias = module.bias
        new.activation = _act_name(activation)
        new.backend = _backend(backend)
        return new

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """gko.torch.linear with the module's parameters, activation and backend."""
        return linear(x, self.weight, self.bias, self.activation, self.backend)

    def extra_repr(self) -> str:
        """nn.Linear's, with the activation and the backend."""
        return "%s, activation=%s, backend=%s" % (super().extra_repr(), self.activation,
                                                  self.backend)


# ---------------------------------------------------------------------------
# gelu
# ---------------------------------------------------------------------------

_GELU_DT = {torch.float32: Dtype.F32, torch.float16: Dtype.F16, torch.bfloat16: Dtype.BF16}
_APPROX = {"none": 0, "erf": 0, "tanh": 1}


def _dense_view(x):
    """(x, or a contiguous view of x's memory, format) for the layouts the
    elementwise ops keep: contiguous, channels_last (4-D); anything else is
    copied to contiguous."""
    if x.is_contiguous():
        return x, "contiguous"
    if x.dim() == 4 and x.is_contiguous(memory_format=torch.channels_last):
        return x, "channels_last"
    return x.contiguous(), "contiguous"


def _gelu_out(x, fmt):
    if fmt == "channels_last":
        return torch.empty(x.shape, dtype=x.dtype, device=x.device,
                           memory_format=torch.channels_last)
    return torch.empty(x.shape, dtype=x.dtype, device=x.device)


def _gelu_cuda(x, approximate):
    if x.dtype not in _GELU_DT:
        raise TypeError("gko.torch.gelu: unsupported dtype %s" % x.dtype)
    xd, fmt = _dense_view(x)
    y = _gelu_out(xd, fmt)
    n = xd.numel()
    if n == 0:
        return y
    dev = x.get_device()
    # one flat pass over the memory: the same elementwise map in any dense layout
    _check(library().gko_gelu_forward(_handle(dev).value, _APPROX[approximate], _GELU_DT[x.dtype],
                                      n, xd.data_ptr(), y.data_ptr(), _raw_stream(dev)),
           "gko_gelu_forward")
    return y


@torch.library.custom_op("gko::gelu", mutates_args=(), device_types="cuda")
def _gelu_op(x: Tensor, approximate: str) -> Tensor:
    return _on_device(x.get_device(), _gelu_cuda, x, approximate)


@_gelu_op.register_fake
def _(x, approximate):
    if x.is_contiguous():
        return _gelu_out(x, "contiguous")
    if x.dim() == 4 and x.is_contiguous(memory_format=torch.channels_last):
        return _gelu_out(x, "channels_last")
    return _gelu_out(x, "contiguous")


def _gelu_setup(ctx, inputs, output):
    x, approximate = inputs
    ctx.approximate = "tanh" if approximate == "tanh" else "none"
    ctx.save_for_backward(x)


def _gelu_backward(ctx, grad):
    (x,) = ctx.saved_tensors
    return torch.ops.aten.gelu_backward(grad, x, approximate=ctx.approximate), None


_gelu_op.register_autograd(_gelu_backward, setup_context=_gelu_setup)


def gelu(x: torch.Tensor, approximate: str = "none") -> torch.Tensor:
    """torch.nn.functional.gelu through gko (f32, f16, bf16; approximate
    "none" (erf) or "tanh").  The result keeps a contiguous or channels_last
    x's memory format; other strides give a contiguous result."""
    if approximate not in _APPROX:
        raise ValueError("approximate must be 'none' or 'tanh', not %r" % (approximate,))
    approximate = "none" if approximate == "erf" else approximate
    if _direct(x):
        return _on_device(x.get_device(), _gelu_cuda, x, approximate)
    return torch.ops.gko.gelu(x, approximate)


class GELU(torch.nn.Module):
    """torch.nn.GELU through gko."""

    def __init__(self, approximate: str = "none") -> None:
        super().__init__()
        self.approximate = approximate

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """gko.torch.gelu with the module's approximation."""
        return gelu(x, self.approximate)

    def extra_repr(self) -> str:
        """The approximation, as nn.GELU shows it."""
        return "approximate=%r" % self.approximate


# ---------------------------------------------------------------------------
# conv2d
# ---------------------------------------------------------------------------

def _conv_shape(x, weight, stride, padding, dilation):
    n, _, h, w = x.shape
    k, _, r, s = weight.shape
    oh = (h + 2 * padding[0] - dilation[0] * (r - 1) - 1) // stride[0] + 1
    ow = (w + 2 * padding[1] - dilation[1] * (s - 1) - 1) // stride[1] + 1
    return n, k, oh, ow


def _conv_format(x):
    """The memory format conv2d computes in (and returns): x's when it is
    contiguous (NCHW) or channels_last (NHWC), else contiguous (x copied)."""
    if x.is_contiguous():
        return torch.contiguous_format
    if x.is_contiguous(memory_format=torch.channels_last):
        return torch.channels_last
    return torch.contiguous_format


def _conv_again(x, weight, bias, options):
    """conv2d() for a call signature that a checked direct call remembered;
    None where this call must take the checked path."""
    r = _remembered(x, weight, bias, options)
    if r is None:
        return None
    c, px, pw, pb, ws, y = r
    if c.fast is not None:
        status = c.fast(c.addr, c.p, px, pw, pb, y.data_ptr(), ws[1], ws[2], ws[0])
    else:
        status = c.plan._fn(c.plan._p, px, pw, pb, y.data_ptr(), ws[1], ws[2], ws[0])
    if status:
        _check(status, "gko_conv_execute")
    return y


def _conv_cuda(x, weight, bias, stride, padding, dilation, groups, activation, remember=None):
    if x.dim() != 4 or weight.dim() != 4:
        raise ValueError("x and weight must be 4-D")
    fmt = _conv_format(x)
    nhwc = fmt == torch.channels_last
    xc = x.contiguous(memory_format=fmt)
    wc = weight.contiguous(memory_format=fmt)
    b = bias if bias is None or bias.is_contiguous() else bias.contiguous()
    n, c, hh, ww = xc.shape
    k, cg, r, s = wc.shape
    if cg * groups != c:
        raise ValueError("weight has %d input channels per group; x has %d channels in %d "
                         "groups" % (cg, c, groups))
    shape = _conv_shape(xc, wc, stride, padding, dilation)
    y = torch.empty(shape, dtype=x.dtype, device=x.device, memory_format=fmt)
    dev = x.get_device()
    ep = _ACT[activation] * 2 + (1 if b is not None else 0)
    al = _align(xc, wc, y, b)
    h = _handle(dev)
    st_, pd, dl = tuple(stride), tuple(padding), tuple(dilation)
    key = ("torch.conv2d", x.dtype, nhwc, n, c, hh, ww, k, r, s, st_, pd, dl, groups, ep, al)
    plan = h._cached_plan(
        key, lambda: _gconv.Plan(h, x.dtype, "nhwc" if nhwc else "nchw", n, c, hh, ww, k, r, s,
                                 st_, pd, dl, groups=groups, epilogue=ep, alignment=al),
        _PLANS_MAX)
    st = _raw_stream(dev)
    plan.execute(xc, wc, y, bias=b, workspace=_workspace(dev, st, plan), stream=st)
    if remember is not None and xc is x and wc is weight and b is bias:
        _remember(x, weight, bias, remember, y, fmt, al, h, plan)
    return y


@torch.library.custom_op("gko::conv2d", mutates_args=(), device_types="cuda")
def _conv2d_op(x: Tensor, weight: Tensor, bias: Optional[Tensor], stride: List[int],
               padding: List[int], dilation: List[int], groups: int,
               activation: str) -> Tensor:
    return _on_device(x.get_device(), _conv_cuda, x, weight, bias, stride, padding, dilation,
                      groups, activation)


@_conv2d_op.register_fake
def _(x, weight, bias, stride, padding, dilation, groups, activation):
    shape = _conv_shape(x, weight, stride, padding, dilation)
    return torch.empty(shape, dtype=x.dtype, device=x.device, memory_format=_conv_format(x))


def _conv_setup(ctx, inputs, output):
    x, weight, bias, stride, padding, dilation, groups, activation = inputs
    ctx.conf = (list(stride), list(padding), list(dilation), groups)
    ctx.activation = activation
    ctx.has_bias = bias is not None
    ctx.save_for_backward(x, weight, bias, output)


def _conv_backward(ctx, grad):
    x, weight, bias, y = ctx.saved_tensors
    stride, padding, dilation, groups = ctx.conf
    g = _act_backward(ctx.activation, grad, y, lambda: torch.nn.functional.conv2d(
        x, weight, bias, stride, padding, dilation, groups))
    need = ctx.needs_input_grad
    gx, gw, gb = torch.ops.aten.convolution_backward(
        g, x, weight, [weight.shape[0]] if ctx.has_bias else None, stride, padding, dilation,
        False, [0, 0], groups, [need[0], need[1], ctx.has_bias and need[2]])
    return gx, gw, gb if ctx.has_bias else None, None, None, None, None, None


_conv2d_op.register_autograd(_conv_backward, setup_context=_conv_setup)


def _pair(v, name):
    if isinstance(v, (tuple, list)):
        if len(v) != 2:
            raise ValueError("%s must be an int or a pair, not %r" % (name, v))
        return [int(v[0]), int(v[1])]
    return [int(v), int(v)]


def conv2d(x: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor] = None,
           stride: PairLike = 1, padding: PairLike = 0, dilation: PairLike = 1, groups: int = 1,
           activation: Optional[str] = None) -> torch.Tensor:
    """torch.nn.functional.conv2d (+ activation: None, "relu", "gelu",
    "gelu_tanh") through gko, for x [N, C, H, W] and weight [K, C/groups, R,
    S] of one dtype; padding numbers (not "same"/"valid").  Computed (and
    returned) in x's memory format when that is contiguous or channels_last;
    the weight is brought to the same format."""
    if _AGAIN:
        options = ("conv2d", stride, padding, dilation, groups, activation)
        y = _conv_again(x, weight, bias, options)
        if y is not None:
            return y
    if isinstance(padding, str):
        raise ValueError("gko.torch.conv2d takes padding as numbers, not %r" % padding)
    args = (x, weight, bias, _pair(stride, "stride"), _pair(padding, "padding"),
            _pair(dilation, "dilation"), int(groups), _act_name(activation))
    if _direct(x, weight, bias):
        return _on_device(x.get_device(), _conv_cuda, *args, options if _AGAIN else None)
    return torch.ops.gko.conv2d(*args)


class Conv2d(torch.nn.Conv2d):
    """torch.nn.Conv2d (same parameters and state_dict; padding_mode "zeros",
    numeric padding) whose forward is gko.torch.conv2d, with an optional
    fused activation."""

    def __init__(self, in_channels: int, out_channels: int,
                 kernel_size: Union[int, Tuple[int, int]], stride: Union[int, Tuple[int, int]] = 1,
                 padding: Union[int, Tuple[int, int]] = 0,
                 dilation: Union[int, Tuple[int, int]] = 1, groups: int = 1, bias: bool = True,
                 activation: Optional[str] = None, device: Any = None,
                 dtype: Any = None) -> None:
        if isinstance(padding, str):
            raise ValueError("gko.torch.Conv2d takes padding as numbers, not %r" % padding)
        super().__init__(in_channels, out_channels, kernel_size, stride=stride, padding=padding,
                         dilation=dilation, groups=groups, bias=bias, device=device, dtype=dtype)
        self.activation = _act_name(activation)

    @classmethod
    def from_torch(cls, module: torch.nn.Conv2d, activation: Optional[str] = None) -> "Conv2d":
        """A Conv2d sharing module's (a torch.nn.Conv2d) parameters."""
        if module.padding_mode != "zeros" or isinstance(module.padding, str):
            raise ValueError("gko.torch.Conv2d: padding_mode 'zeros' with numeric padding only")
        new = cls.__new__(cls)
        torch.nn.Module.__init__(new)
        for a in ("in_channels", "out_channels", "kernel_size", "stride", "padding", "dilation",
                  "transposed", "output_padding", "groups", "padding_mode",
                  "_reversed_padding_repeated_twice"):
            setattr(new, a, getattr(module, a))
        new.weight = module.weight
        new.bias = module.bias
        new.activation = _act_name(activation)
        return new

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """gko.torch.conv2d with the module's parameters, geometry and activation."""
        return conv2d(x, self.weight, self.bias, self.stride, self.padding, self.dilation,
                      self.groups, self.activation)

    def extra_repr(self) -> str:
        """nn.Conv2d's, with the activation."""
        return "%s, activation=%s" % (super().extra_repr(), self.activation)


# ---------------------------------------------------------------------------
# spmm: CSR @ dense
# ---------------------------------------------------------------------------

_SPMM_MAX = 64


def _spmm_cuda(crow, col, values, m, k, b):
    if b.dim() != 2 or b.shape[0] != k:
        raise ValueError("b must be [%d, n], not %s" % (k, list(b.shape)))
    bc = b if b.is_contiguous() else b.contiguous()
    n = bc.shape[1]
    out = torch.empty((m, n), dtype=b.dtype, device=b.device)
    dev = b.get_device()
    h = _handle(dev)
    # a plan depends on row_ptr's contents: keyed by the index arrays (the
    # cached CSR keeps them alive, so their addresses stay theirs) and their
    # versions (bumped by in-place writes); values may change freely
    key = ("torch.spmm", crow.data_ptr(), crow._version, col.data_ptr(), col._version,
           values.data_ptr(), values.dtype, crow.dtype, m, k, n)

    def make():
        csr = _gsparse.CSR(crow, col, values, (m, k))
        return _gsparse.Plan(h, csr, n, ldb=max(n, 1), ldc=max(n, 1))
    plan = h._cached_plan(key, make, _SPMM_MAX)
    st = _raw_stream(dev)
    plan.execute(bc, out, workspace=_workspace(dev, st, plan), stream=st)
    return out


@torch.library.custom_op("gko::spmm", mutates_args=(), device_types="cuda")
def _spmm_op(crow: Tensor, col: Tensor, values: Tensor, m: int, k: int, b: Tensor) -> Tensor:
    return _on_device(b.get_device(), _spmm_cuda, crow, col, values, m, k, b)


@_spmm_op.register_fake
def _(crow, col, values, m, k, b):
    return b.new_empty((m, b.shape[1]))


def spmm(a: Union[torch.Tensor, Tuple[torch.Tensor, torch.Tensor, torch.Tensor, Sequence[int]]],
         b: torch.Tensor) -> torch.Tensor:
    """a @ b for a sparse CSR matrix a -- a torch.sparse_csr tensor, or a
    tuple (crow_indices, col_indices, values, (m, k)) -- and a dense 2-D b;
    values and b of one dtype (f32, f16, bf16), int32 or int64 indices.
    The first call for a matrix makes its plan (a look at its rows on the
    GPU, which waits for it); later calls only enqueue."""
    if isinstance(a, torch.Tensor):
        if a.layout != torch.sparse_csr:
            raise TypeError("a must be a torch.sparse_csr tensor or (crow, col, values, shape), "
                            "not a %s tensor" % a.layout)
        crow, col, values, shape = a.crow_indices(), a.col_indices(), a.values(), a.shape
    else:
        crow, col, values, shape = a
    args = (crow, col, values, int(shape[0]), int(shape[1]), b)
    if _direct(crow, col, values, b):
        return _on_device(b.get_device(), _spmm_cuda, *args)
    return torch.ops.gko.spmm(*args)
