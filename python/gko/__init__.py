"""ctypes binding for libgko (pure Python, no build step).

The library is found through, in order: the environment variable
GKO_LIBRARY (a full path), the build tree this package sits in
(../../lib/libgko.so.<MAJOR>), a library bundled into the package
(gko/libgko.so.<MAJOR>, in the wheel ``make wheel`` builds), an installed
prefix (pkg-config's libdir of gko), then the system loader
(libgko.so.<MAJOR>).

Device arrays are accepted from any object that exposes
``__cuda_array_interface__`` (CuPy, Numba, PyTorch f32/f16) or DLPack
(``__dlpack__``; PyTorch bf16, JAX, ...).  Work is enqueued on the caller's
current stream of the array's framework (torch.cuda.current_stream(),
cupy.cuda.get_current_stream()) unless ``stream=`` gives one (an int handle
or an object with ``.cuda_stream`` / ``.ptr``).

Every failing call raises GkoError carrying the status name and the
library's detail message.  The package is typed (PEP 561, py.typed).
"""
from __future__ import annotations

import ctypes
import enum
import os
import sys
import threading
from typing import Any, Dict, Optional, Sequence, Tuple, Union

# what the functions take: a status / enum value, an array (torch tensor,
# CuPy array, anything with __cuda_array_interface__ or __dlpack__, or a
# DeviceArray), a stream (an int handle or an object with .cuda_stream /
# .ptr / .handle; None: the array's framework's current stream)
StatusLike = Union["Status", int]
Array = Any
StreamLike = Any

__all__ = [
    "GkoError", "Status", "Dtype", "ScaleMode", "GeluApprox", "Query", "CodePath", "Handle",
    "library", "version", "version_number", "diagnostics", "query", "gelu",
    "gelu_backward", "MAJOR",
]

MAJOR = 0  # the ABI major version this binding speaks
__version__ = "0.1.0"  # gko.h's version (python/pyproject.toml has it too; the tests compare)


class Status(enum.IntEnum):
    SUCCESS = 0
    INVALID_VALUE = 1
    NOT_SUPPORTED = 2
    NO_DEVICE = 3
    DRIVER_TOO_OLD = 4
    NO_KERNEL_IMAGE = 5
    ALLOC_FAILED = 6
    INSUFFICIENT_WORKSPACE = 7
    CUDA_ERROR = 8
    EXECUTION_FAILED = 9
    INTERNAL = 10
    DEVICE_MISMATCH = 11
    INVALID_HANDLE = 12


class Dtype(enum.IntEnum):
    F32 = 0
    F16 = 1
    BF16 = 2
    F8E4M3 = 3
    F8E5M2 = 4


class ScaleMode(enum.IntEnum):
    TENSOR = 0
    ROWWISE = 1


class GeluApprox(enum.IntEnum):
    ERF = 0
    TANH = 1


class Query(enum.IntEnum):
    DEVICE_COUNT = 0
    DRIVER_VERSION = 1
    RUNTIME_VERSION = 2
    CUBLASLT_VERSION = 3
    CUBLASLT_BUILD_VERSION = 4
    COMPUTE_CAPABILITY = 5
    CODE_PATH = 6
    SM_COUNT = 7
    PTX_ARCH = 8


class CodePath(enum.IntEnum):
    NONE = 0
    SASS = 1
    PTX_JIT = 2


class GkoError(RuntimeError):
    """A gko call failed.  .status is a Status, .detail the library's reason."""

    status: Union["Status", int]
    detail: str

    def __init__(self, status: StatusLike, detail: str, call: str = "") -> None:
        try:
            self.status = Status(status)
            name = "GKO_STATUS_" + self.status.name
        except ValueError:
            self.status = status
            name = "GKO_STATUS_UNKNOWN(%d)" % status
        self.detail = detail
        super().__init__("%s%s: %s" % (call + " -> " if call else "", name, detail))


# ---------------------------------------------------------------------------
# loading
# ---------------------------------------------------------------------------

def _find_library() -> str:
    """GKO_LIBRARY; the build tree this package sits in; a library bundled
    next to the package; an installed prefix (pkg-config's libdir of gko);
    else the name, for the system loader."""
    env = os.environ.get("GKO_LIBRARY")
    if env:
        return env
    name = "libgko.so.%d" % MAJOR
    here = os.path.dirname(os.path.abspath(__file__))
    for cand in (os.path.join(here, "..", "..", "lib", name), os.path.join(here, name)):
        if os.path.exists(cand):
            return os.path.normpath(cand)
    try:
        import subprocess
        libdir = subprocess.run(["pkg-config", "--variable=libdir", "gko"], capture_output=True,
                                text=True, timeout=10).stdout.strip()
        if libdir and os.path.exists(os.path.join(libdir, name)):
            return os.path.join(libdir, name)
    except (OSError, subprocess.SubprocessError):
        pass
    return name


_c = ctypes
_handle_t = _c.c_void_p
_stream_t = _c.c_void_p
_status_t = _c.c_int

# name -> (restype, argtypes): every exported function the binding uses
_PROTOTYPES = {
    "gko_version_number": (_c.c_uint, []),
    "gko_version_string": (_c.c_char_p, []),
    "gko_status_name": (_c.c_char_p, [_c.c_int]),
    "gko_status_string": (_c.c_char_p, [_c.c_int]),
    "gko_last_error_detail": (_c.c_char_p, []),
    "gko_dtype_size": (_c.c_size_t, [_c.c_int]),
    "gko_create": (_status_t, [_c.POINTER(_handle_t)]),
    "gko_destroy": (_status_t, [_handle_t]),
    "gko_handle_device": (_status_t, [_handle_t, _c.POINTER(_c.c_int)]),
    "gko_query": (_status_t, [_c.c_int, _c.c_int, _c.POINTER(_c.c_int64)]),
    "gko_diagnostics": (_status_t, [_c.c_int, _c.c_char_p, _c.c_size_t,
                                    _c.POINTER(_c.c_size_t)]),
    "gko_gelu_forward": (_status_t, [_handle_t, _c.c_int, _c.c_int, _c.c_int64,
                                     _c.c_void_p, _c.c_void_p, _stream_t]),
    "gko_gelu_backward": (_status_t, [_handle_t, _c.c_int, _c.c_int, _c.c_int64,
                                      _c.c_void_p, _c.c_void_p, _c.c_void_p,
                                      _stream_t]),
}

_lib = None


def _declare(prototypes: Dict[str, Tuple[Any, list]]) -> None:
    """Adds {name: (restype, argtypes)} for an operator module (gko.gemm,
    gko.sparse, ...).  Applied at load time, or at once if already loaded."""
    _PROTOTYPES.update(prototypes)
    if _lib is not None:
        for name, (res, args) in prototypes.items():
            if hasattr(_lib, name):
                fn = getattr(_lib, name)
                fn.restype = res
                fn.argtypes = args


def library() -> ctypes.CDLL:
    """The loaded ctypes.CDLL (loaded on first use, major version checked)."""
    global _lib
    if _lib is not None:
        return _lib
    path = _find_library()
    lib = ctypes.CDLL(path)
    for name, (res, args) in _PROTOTYPES.items():
        if not hasattr(lib, name):
            continue  # older library: calling it raises AttributeError below
        fn = getattr(lib, name)
        fn.restype = res
        fn.argtypes = args
    got = lib.gko_version_number() // 10000
    if got != MAJOR:
        raise ImportError("%s has ABI major version %d; this binding speaks %d"
                          % (path, got, MAJOR))
    _lib = lib
    return lib


def _check(status: int, call: str) -> None:
    if status != 0:
        detail = library().gko_last_error_detail().decode("utf-8", "replace")
        raise GkoError(status, detail, call)


def version() -> str:
    """The library's version string ("X.Y.Z")."""
    return library().gko_version_string().decode()


def version_number() -> int:
    """The library's version as X * 10000 + Y * 100 + Z."""
    return library().gko_version_number()


def status_name(status: StatusLike) -> str:
    """The library's name of a status ("GKO_STATUS_...")."""
    return library().gko_status_name(int(status)).decode()


def query(what: Union["Query", int], device: int = 0) -> int:
    """gko_query: one value (Query) about device (or the process)."""
    v = ctypes.c_int64(0)
    _check(library().gko_query(int(what), int(device), ctypes.byref(v)), "gko_query")
    return v.value


def diagnostics(device: int = -1) -> str:
    """The library's multi-line driver/runtime/architecture report."""
    need = ctypes.c_size_t(0)
    _check(library().gko_diagnostics(device, None, 0, ctypes.byref(need)), "gko_diagnostics")
    buf = ctypes.create_string_buffer(need.value)
    _check(library().gko_diagnostics(device, buf, need.value, None), "gko_diagnostics")
    return buf.value.decode("utf-8", "replace")


class _Owned:
    """An object owning one C resource, kept in the attribute named by
    _ATTR and released by _release(ptr).  close() releases it once (later
    calls do nothing); leaving a with block and garbage collection close
    it.  _forget() drops what was kept alongside the resource."""

    _ATTR = "_p"

    def _release(self, ptr):
        raise NotImplementedError

    def _forget(self):
        pass

    def close(self) -> None:
        ptr = getattr(self, self._ATTR, None)
        if ptr is not None:
            self._release(ptr)
            setattr(self, self._ATTR, None)
            self._forget()

    def __enter__(self):
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


class _Plan(_Owned):
    """What the GEMM, SpMM and conv plans share: the workspace query, the
    description, and a workspace kept for execute calls without one.  A
    subclass names its C functions in _WORKSPACE_SIZE and _DESCRIBE.

    Threads: execute() calls without workspace= use the plan-held
    workspace, made once (under a per-plan lock) on the first such call and
    kept until close().  The C API requires each concurrently running call
    to have its own workspace; calls on one stream run in order, so calls
    on the stream of that first call share the plan-held workspace, and a
    call on another stream gets a workspace of its own (one per (plan,
    stream), kept until close()).  Calls from several threads on one stream
    are ordered by the stream, so they may share it too.  Pass workspace=
    to manage workspaces yourself (each concurrent call its own)."""

    _WORKSPACE_SIZE = _DESCRIBE = None

    @property
    def workspace_size(self) -> int:
        """The workspace bytes the plan's calls need."""
        v = ctypes.c_size_t(0)
        _check(getattr(library(), self._WORKSPACE_SIZE)(self._p, ctypes.byref(v)),
               self._WORKSPACE_SIZE)
        return v.value

    def describe(self) -> str:
        """The library's description of the plan (kernel, backend, ...)."""
        fn = getattr(library(), self._DESCRIBE)
        need = ctypes.c_size_t(0)
        _check(fn(self._p, None, 0, ctypes.byref(need)), self._DESCRIBE)
        buf = ctypes.create_string_buffer(need.value)
        _check(fn(self._p, buf, need.value, None), self._DESCRIBE)
        return buf.value.decode("utf-8", "replace")

    # execute()'s fast path (see gko.gemm.Plan.execute): the metadata of the
    # last torch operands that passed the checks, the plan-held workspace as
    # (stream, pointer, bytes) for the stream whose workspace was looked up
    # last, its size, and torch's current-stream query
    _seen = _wsp = _need = _rs = None
    # the plan-held workspace: (tensor, pointer, bytes, stream), set once
    # under the plan's lock and never replaced (the pointer's owner stays
    # alive with the plan); _ws_streams: {stream: (tensor, pointer, bytes)}
    # for calls on other streams
    _ws = _ws_streams = None

    def _workspace(self, like, stream):
        """The plan-held workspace for a call on stream, as (pointer, bytes):
        the one made on the first call (on like's device) when stream is the
        stream of that call, else one per (plan, stream).  Its size is asked
        of the library once.  Made under the plan's lock, so threads making
        their first calls at once get one workspace, whose tensor stays
        alive as long as the plan: a pointer handed out is never freed
        before close()."""
        wsp = self._wsp
        if wsp is not None and (wsp[0] == stream or not wsp[2]):
            return wsp[1], wsp[2]
        with _lock_of(self, "_ws_lock"):
            need = self._need
            if need is None:
                need = self._need = self.workspace_size
            if need == 0:
                if self._wsp is None:
                    self._wsp = (stream, None, 0)
                return None, 0
            ws = self._ws
            if ws is None:
                import torch
                t = torch.empty(need, dtype=torch.uint8, device=like.device)
                ws = self._ws = (t, t.data_ptr(), need, stream)
                self._wsp = (stream, ws[1], need)
                return ws[1], need
            if ws[3] != stream:
                per = self._ws_streams
                if per is None:
                    per = self._ws_streams = {}
                ws = per.get(stream)
                if ws is None:
                    import torch
                    t = torch.empty(need, dtype=torch.uint8, device=like.device)
                    ws = per[stream] = (t, t.data_ptr(), need)
            # the next calls on this stream take the fast path (every workspace
            # handed out stays alive with the plan)
            self._wsp = (stream, ws[1], ws[2])
            return ws[1], ws[2]

    def _forget(self):
        self._ws = self._ws_streams = None
        self._seen = self._wsp = self._need = None


_LOCKS = threading.Lock()


def _lock_of(obj, name):
    """obj's lock kept in attribute name, made on first use (once, even when
    threads ask at the same time)."""
    lock = obj.__dict__.get(name)
    if lock is None:
        with _LOCKS:
            lock = obj.__dict__.get(name)
            if lock is None:
                lock = threading.Lock()
                setattr(obj, name, lock)
    return lock


_WORKSPACES = {}


def _workspace_for(t, stream, need):
    """A workspace of at least need bytes for the torch conveniences, one per
    (device, stream): calls on one stream run in order, so they can share it."""
    if need == 0:
        return None, 0
    import torch
    key = (t.device.index, stream)
    ws = _WORKSPACES.get(key)
    if ws is None or ws.numel() < need:
        ws = torch.empty(need, dtype=torch.uint8, device=t.device)
        _WORKSPACES[key] = ws
    return ws.data_ptr(), ws.numel()


def _workspace_arg(w):
    """(pointer, bytes) of a workspace given to execute(): a contiguous torch
    tensor or __cuda_array_interface__ array of any dtype, or a DLPack
    array as_device_array takes."""
    if hasattr(w, "data_ptr"):
        if not w.is_cuda:
            raise TypeError("workspace is on %s; gko needs a CUDA tensor" % w.device)
        if not w.is_contiguous():
            raise ValueError("workspace must be contiguous")
        return w.data_ptr(), w.numel() * w.element_size()
    cai = getattr(w, "__cuda_array_interface__", None)
    if cai is not None:
        n, itemsize = 1, int(cai["typestr"][2:])
        for d in cai["shape"]:
            n *= d
        if not _contiguous(cai["shape"], cai.get("strides"), itemsize):
            raise ValueError("workspace must be contiguous")
        return cai["data"][0], n * itemsize
    a = as_device_array(w)
    if not a.contiguous:
        raise ValueError("workspace must be contiguous")
    return a.ptr, a.nbytes


def _is_torch(*objs):
    """Whether every object that is not None is a torch tensor."""
    for o in objs:
        if o is not None and type(o).__module__.split(".")[0] != "torch":
            return False
    return True


class Handle(_Owned):
    """A gko handle bound to the current CUDA device.  Use as a context
    manager or call close()."""

    _ATTR = "_h"

    def __init__(self) -> None:
        h = _handle_t()
        _check(library().gko_create(ctypes.byref(h)), "gko_create")
        self._h = h
        self._plans = {}
        self._retired = []  # plans out of the cache, kept until close()
        self._lock = threading.Lock()

    def _cached_plan(self, key, make, limit):
        """The plan cached under key for this handle, made by make() on the
        first call.  Past limit entries the oldest leaves the cache but is
        not closed: a CUDA graph captured with it, or another thread that
        has just fetched it, may still use it.  It is kept (retired) until
        the handle closes.  The cache lives with the handle: close() closes
        its plans (cached and retired) before the handle, as the C API
        requires, and a closed handle raises.  Thread-safe (one lock per
        handle; a plan is made under it)."""
        self.value  # raises on a closed handle
        p = self._plans.get(key)
        if p is not None:
            return p
        with _lock_of(self, "_lock"):
            self.value
            p = self._plans.get(key)
            if p is None:
                p = make()
                if len(self._plans) >= limit:
                    self._retire(self._plans.pop(next(iter(self._plans))))
                self._plans[key] = p
            return p

    def _retire(self, p):
        retired = self.__dict__.get("_retired")
        if retired is None:
            retired = self._retired = []
        retired.append(p)

    def _drop_plan(self, key):
        """Takes key's plan out of the cache (kept until the handle closes,
        like an evicted one)."""
        with _lock_of(self, "_lock"):
            p = self._plans.pop(key, None)
            if p is not None:
                self._retire(p)

    @property
    def value(self) -> ctypes.c_void_p:
        """The C handle (ValueError once closed)."""
        if self._h is None:
            raise ValueError("handle is closed")
        return self._h

    @property
    def device(self) -> int:
        """The CUDA device the handle is bound to."""
        d = ctypes.c_int(-1)
        _check(library().gko_handle_device(self.value, ctypes.byref(d)), "gko_handle_device")
        return d.value

    def _release(self, h):
        with _lock_of(self, "_lock"):
            plans, self._plans = getattr(self, "_plans", {}), {}
            retired, self._retired = self.__dict__.get("_retired") or [], []
        for p in list(plans.values()) + retired:  # plans first: they hold the handle
            try:
                p.close()
            except Exception:
                pass
        library().gko_destroy(h)


# ---------------------------------------------------------------------------
# device arrays
# ---------------------------------------------------------------------------

class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class _DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", ctypes.c_void_p),
                ("deleter", ctypes.c_void_p)]


_TYPESTR = {"<f4": Dtype.F32, "<f2": Dtype.F16, "|V2": None}
_ITEMSIZE = {Dtype.F32: 4, Dtype.F16: 2, Dtype.BF16: 2, Dtype.F8E4M3: 1, Dtype.F8E5M2: 1}
_DL_FLOAT, _DL_BFLOAT = 2, 4


class DeviceArray:
    """What gko needs of an array: pointer, element count, dtype, device."""

    def __init__(self, ptr: int, shape: Sequence[int], dtype: Union[Dtype, int],
                 device: Optional[int] = None, contiguous: bool = True, owner: Any = None,
                 strides: Optional[Sequence[int]] = None) -> None:
        self.ptr = ptr
        self.shape = tuple(shape)
        self.dtype = Dtype(dtype)
        self.device = device
        self.contiguous = contiguous
        self.owner = owner
        # in elements; None: unknown (dense row-major when contiguous)
        self.strides = None if strides is None else tuple(strides)

    @property
    def size(self) -> int:
        """The element count."""
        n = 1
        for s in self.shape:
            n *= s
        return n

    @property
    def nbytes(self) -> int:
        """The size in bytes."""
        return self.size * _ITEMSIZE[self.dtype]

    def element_strides(self) -> Optional[Tuple[int, ...]]:
        """The strides in elements: the known ones, the dense row-major ones
        of a contiguous array, else None."""
        if self.strides is not None:
            return self.strides
        if not self.contiguous:
            return None
        out, step = [], 1
        for dim in reversed(self.shape):
            out.append(step)
            step *= max(dim, 1)
        return tuple(reversed(out))


def _contiguous(shape, strides, itemsize):
    if strides is None:
        return True
    expect = itemsize
    for dim, st in zip(reversed(shape), reversed(strides)):
        if dim != 1 and st != expect:
            return False
        expect *= dim
    return True


def _from_dlpack(obj):
    pycapsule_get = ctypes.pythonapi.PyCapsule_GetPointer
    pycapsule_get.restype = ctypes.c_void_p
    pycapsule_get.argtypes = [ctypes.py_object, ctypes.c_char_p]
    cap = obj.__dlpack__()
    ptr = pycapsule_get(cap, b"dltensor")
    mt = _DLManagedTensor.from_address(ptr)
    t = mt.dl_tensor
    shape = [t.shape[i] for i in range(t.ndim)]
    code, bits = t.dtype.code, t.dtype.bits
    if code == _DL_FLOAT and bits == 32:
        dt = Dtype.F32
    elif code == _DL_FLOAT and bits == 16:
        dt = Dtype.F16
    elif code == _DL_BFLOAT and bits == 16:
        dt = Dtype.BF16
    else:
        raise TypeError("unsupported DLPack dtype code %d bits %d" % (code, bits))
    strides = elems = None
    if t.strides:
        elems = [t.strides[i] for i in range(t.ndim)]
        strides = [e * bits // 8 for e in elems]
    # keep the capsule alive with the array: the producer's memory is owned
    # by `obj`, which the caller holds for the duration of the call
    return DeviceArray(t.data + t.byte_offset, shape, dt, t.device.device_id,
                       _contiguous(shape, strides, bits // 8), owner=(obj, cap), strides=elems)


def as_device_array(obj: Array) -> DeviceArray:
    """Wraps a torch tensor, CuPy array or any CUDA array-interface / DLPack
    object.  Raises TypeError for host arrays and unsupported dtypes."""
    if isinstance(obj, DeviceArray):
        return obj
    mod = type(obj).__module__.split(".")[0]
    if mod == "torch":
        if not obj.is_cuda:
            raise TypeError("torch tensor is on %s; gko needs a CUDA tensor" % obj.device)
        name = str(obj.dtype)
        dt = {"torch.float32": Dtype.F32, "torch.float16": Dtype.F16,
              "torch.bfloat16": Dtype.BF16, "torch.float8_e4m3fn": Dtype.F8E4M3,
              "torch.float8_e5m2": Dtype.F8E5M2}.get(name)
        if dt is None:
            raise TypeError("unsupported torch dtype %s" % name)
        return DeviceArray(obj.data_ptr(), tuple(obj.shape), dt, obj.device.index,
                           obj.is_contiguous(), owner=obj, strides=obj.stride())
    cai = getattr(obj, "__cuda_array_interface__", None)
    if cai is not None and cai.get("typestr") in ("<f4", "<f2"):
        shape = cai["shape"]
        itemsize = 4 if cai["typestr"] == "<f4" else 2
        st = cai.get("strides")
        return DeviceArray(cai["data"][0], shape, _TYPESTR[cai["typestr"]], None,
                           _contiguous(shape, st, itemsize), owner=obj,
                           strides=None if st is None else [x // itemsize for x in st])
    if hasattr(obj, "__dlpack__"):
        return _from_dlpack(obj)
    raise TypeError("%s is not a device array (no __cuda_array_interface__ or __dlpack__)"
                    % type(obj).__name__)


def _fast_call(name: str, fn: Any) -> Tuple[Any, Optional[int]]:
    """(f, address) for an execute's foreign call without ctypes: the
    function name of gko._fastcall (the optional C helper, see _fastcall.c)
    and fn's address, or (None, None) where the helper is not built, on
    Python < 3.10 (its stable ABI is 3.10's), or with GKO_FASTCALL=0; the
    caller then calls fn.  The caller passes alpha and beta as floats."""
    if os.environ.get("GKO_FASTCALL", "1") == "0" or sys.version_info < (3, 10):
        return None, None
    try:
        from . import _fastcall
    except ImportError:
        return None, None
    return getattr(_fastcall, name), _c.cast(fn, _c.c_void_p).value


_RAW_STREAM = None


def _torch_raw_stream():
    """f(device_index) -> torch's current CUDA stream on that device as an
    int: torch._C._cuda_getCurrentRawStream (what torch.compile's generated
    code calls, a fraction of a microsecond) where torch has it, else
    torch.cuda.current_stream(i).cuda_stream (microseconds: it builds a
    Stream object)."""
    global _RAW_STREAM
    if _RAW_STREAM is None:
        import torch
        f = getattr(torch._C, "_cuda_getCurrentRawStream", None)
        if f is None:
            def f(index):
                return torch.cuda.current_stream(index).cuda_stream
        _RAW_STREAM = f
    return _RAW_STREAM


def _stream_of(obj, stream):
    """The CUDA stream to use: explicit, or the framework's current one."""
    if stream is not None:
        if stream.__class__ is int:
            return stream
        for attr in ("cuda_stream", "ptr", "handle"):
            if hasattr(stream, attr):
                return int(getattr(stream, attr))
        return int(stream)
    mod = type(obj).__module__.split(".")[0]
    if mod == "torch":
        index = obj.get_device()
        if index >= 0:
            return _torch_raw_stream()(index)
        import torch
        return torch.cuda.current_stream(obj.device).cuda_stream
    if mod == "cupy":
        import cupy
        return cupy.cuda.get_current_stream().ptr
    return 0


def _empty_like(obj):
    mod = type(obj).__module__.split(".")[0]
    if mod == "torch":
        import torch
        return torch.empty_like(obj)
    if mod == "cupy":
        import cupy
        return cupy.empty_like(obj)
    raise TypeError("pass out= for arrays of type %s" % type(obj).__name__)


def _approx(approximate):
    if approximate in ("none", "erf", GeluApprox.ERF):
        return GeluApprox.ERF
    if approximate in ("tanh", GeluApprox.TANH):
        return GeluApprox.TANH
    raise ValueError("approximate must be 'none' (erf) or 'tanh', not %r" % (approximate,))


def _same(a, b, what):
    if a.dtype != b.dtype or a.size != b.size:
        raise ValueError("%s: dtype/size mismatch (%s[%d] vs %s[%d])"
                         % (what, a.dtype.name, a.size, b.dtype.name, b.size))
    if not (a.contiguous and b.contiguous):
        raise ValueError("%s: arrays must be contiguous" % what)


def gelu(handle: Handle, x: Array, out: Optional[Array] = None,
         approximate: Union[str, GeluApprox] = "none", stream: StreamLike = None) -> Array:
    """out = GELU(x) elementwise (erf form by default, like torch's F.gelu).
    out may be x (in place).  Returns out."""
    if out is None:
        out = _empty_like(x)
    xa, oa = as_device_array(x), as_device_array(out)
    _same(xa, oa, "gelu")
    _check(library().gko_gelu_forward(handle.value, _approx(approximate), xa.dtype, xa.size,
                                      xa.ptr, oa.ptr, _stream_of(x, stream)),
           "gko_gelu_forward")
    return out


def gelu_backward(handle: Handle, dy: Array, x: Array, out: Optional[Array] = None,
                  approximate: Union[str, GeluApprox] = "none",
                  stream: StreamLike = None) -> Array:
    """out = dy * GELU'(x).  Returns out."""
    if out is None:
        out = _empty_like(x)
    da, xa, oa = as_device_array(dy), as_device_array(x), as_device_array(out)
    _same(xa, oa, "gelu_backward")
    _same(da, xa, "gelu_backward")
    _check(library().gko_gelu_backward(handle.value, _approx(approximate), xa.dtype, xa.size,
                                       da.ptr, xa.ptr, oa.ptr, _stream_of(x, stream)),
           "gko_gelu_backward")
    return out
