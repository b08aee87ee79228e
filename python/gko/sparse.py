"""CSR sparse x dense through gko (ctypes): C = alpha * A @ B + beta * C.

    import gko, gko.sparse
    h = gko.Handle()
    A = gko.sparse.CSR.from_torch(a)            # a torch.sparse_csr_tensor on the GPU
    A = gko.sparse.CSR(crow, col, values, (m, k))  # or the three device arrays
    A.validate(h)                               # raises GkoError naming the bad row
    p = gko.sparse.Plan(h, A, n=128)            # looks at the rows on the GPU, picks a kernel
    p.execute(B, C, alpha=1.0, beta=0.0)        # only enqueues (CUDA-graph safe)
    C = gko.sparse.spmm(h, A, B)                # one call; plans cached per (A, n, ld, kernel)

A, B and C share one dtype (f32, f16 or bf16); row_ptr and col_ind one index
type (int32 or int64).  B [k, n] and C [m, n] are row-major with any row
stride (column-major through Plan(layout="col")).  A CSR object keeps its
arrays alive; plans depend on row_ptr's contents, so build a new CSR (and
plans) when the structure changes -- values may change freely.
Work goes to the tensor's current torch stream unless ``stream=`` says
otherwise.
"""
from __future__ import annotations

import ctypes
import enum
from typing import Any, Dict, Optional, Sequence, Union

from . import (Array, Handle, StreamLike, _Owned, _Plan, _check, _declare, _fast_call,
               _handle_t, _is_torch, _status_t, _stream_of, _stream_t, _torch_raw_stream,
               _workspace_arg, as_device_array)

# an enum value: the member, its int, or its name (case-insensitive, "-" for "_")
KernelLike = Union["Kernel", int, str]

__all__ = ["Index", "CsrCheck", "Layout", "Kernel", "CSR", "Plan", "spmm"]


class Index(enum.IntEnum):
    INT32 = 0
    INT64 = 1


class CsrCheck(enum.IntEnum):
    VALID = 0
    ROW_PTR_START = 1
    ROW_PTR_DECREASING = 2
    ROW_PTR_END = 3
    COLUMN_RANGE = 4


class Layout(enum.IntEnum):
    ROW_MAJOR = 0
    COL_MAJOR = 1


class Kernel(enum.IntEnum):
    AUTO = 0
    ROW_SPLIT = 1
    MERGE = 2
    SCALE = 3
    NONE = 4


_c = ctypes
_csr_t = _c.c_void_p
_plan_t = _c.c_void_p

_declare({
    "gko_csr_create": (_status_t, [_c.POINTER(_csr_t), _c.c_int64, _c.c_int64, _c.c_int64,
                                   _c.c_void_p, _c.c_void_p, _c.c_void_p, _c.c_int, _c.c_int]),
    "gko_csr_destroy": (_status_t, [_csr_t]),
    "gko_csr_validate_workspace_size": (_status_t, [_handle_t, _csr_t,
                                                    _c.POINTER(_c.c_size_t)]),
    "gko_csr_validate": (_status_t, [_handle_t, _csr_t, _c.c_void_p, _c.c_size_t,
                                     _c.POINTER(_c.c_int), _c.POINTER(_c.c_int64),
                                     _c.POINTER(_c.c_int), _c.POINTER(_c.c_int), _stream_t]),
    "gko_spmm_plan_create": (_status_t, [_handle_t, _csr_t, _c.c_int64, _c.c_int, _c.c_int64,
                                         _c.c_int64, _c.c_int, _c.POINTER(_plan_t), _stream_t]),
    "gko_spmm_plan_destroy": (_status_t, [_plan_t]),
    "gko_spmm_workspace_size": (_status_t, [_plan_t, _c.POINTER(_c.c_size_t)]),
    "gko_spmm_plan_kernel": (_status_t, [_plan_t, _c.POINTER(_c.c_int)]),
    "gko_spmm_plan_describe": (_status_t, [_plan_t, _c.c_char_p, _c.c_size_t,
                                           _c.POINTER(_c.c_size_t)]),
    "gko_spmm_execute": (_status_t, [_plan_t, _c.c_float, _c.c_void_p, _c.c_float, _c.c_void_p,
                                     _c.c_void_p, _c.c_size_t, _stream_t]),
})


def _lib():
    from . import library
    return library()


def _enum(cls, v):
    if isinstance(v, str):
        return cls[v.upper().replace("-", "_")]
    return cls(v)


def _index_of(obj):
    """Index type of an index array (torch int32/int64, or a numpy-like typestr)."""
    name = str(getattr(obj, "dtype", ""))
    if name.endswith("int32"):
        return Index.INT32
    if name.endswith("int64"):
        return Index.INT64
    cai = getattr(obj, "__cuda_array_interface__", None)
    if cai is not None and cai.get("typestr") in ("<i4", "<i8"):
        return Index.INT32 if cai["typestr"] == "<i4" else Index.INT64
    raise TypeError("index arrays must be int32 or int64 device arrays, not %s" % name)


def _ptr(obj):
    if obj is None:
        return None
    if hasattr(obj, "data_ptr"):
        return obj.data_ptr() or None
    cai = getattr(obj, "__cuda_array_interface__", None)
    if cai is not None:
        return cai["data"][0] or None
    return as_device_array(obj).ptr or None


class CSR(_Owned):
    """A gko_csr_t over three device arrays (kept alive by this object):
    row_ptr [m + 1] and col_ind [nnz] (both int32 or both int64) and values
    [nnz] (f32, f16 or bf16)."""

    def __init__(self, row_ptr: Array, col_ind: Array, values: Array,
                 shape: Sequence[int]) -> None:
        m, k = int(shape[0]), int(shape[1])
        it = _index_of(row_ptr)
        if _index_of(col_ind) != it:
            raise TypeError("row_ptr and col_ind must have the same index type")
        va = as_device_array(values)
        nnz = va.size
        self.shape = (m, k)
        self.nnz = nnz
        self.index = it
        self.dtype = va.dtype
        self._keep = (row_ptr, col_ind, values)
        a = _csr_t()
        _check(_lib().gko_csr_create(_c.byref(a), m, k, nnz, _ptr(row_ptr), _ptr(col_ind),
                                     va.ptr if nnz else None, int(it), int(va.dtype)),
               "gko_csr_create")
        self._a = a

    @classmethod
    def from_torch(cls, t: Any) -> "CSR":
        """From a torch sparse CSR tensor (torch.sparse_csr_tensor) on the GPU."""
        import torch
        if t.layout != torch.sparse_csr:
            raise TypeError("need a torch.sparse_csr tensor, not %s" % t.layout)
        return cls(t.crow_indices().contiguous(), t.col_indices().contiguous(),
                   t.values().contiguous(), tuple(t.shape))

    @property
    def value(self) -> ctypes.c_void_p:
        """The C matrix (ValueError once closed)."""
        if self._a is None:
            raise ValueError("CSR is closed")
        return self._a

    def validate(self, handle: Handle, stream: StreamLike = None,
                 raise_on_error: bool = True) -> Dict[str, int]:
        """Checks the arrays on the GPU (waits for the answer).  Returns
        {"check": CsrCheck, "row": int, "sorted": 1/0/-1, "duplicates": 1/0/-1}.
        A malformed matrix raises GkoError (INVALID_VALUE, the detail names
        the row) unless raise_on_error=False."""
        chk, row = _c.c_int(0), _c.c_int64(-1)
        srt, dup = _c.c_int(-1), _c.c_int(-1)
        st = _stream_of(self._keep[0], stream)
        status = _lib().gko_csr_validate(handle.value, self.value, None, 0, _c.byref(chk),
                                         _c.byref(row), _c.byref(srt), _c.byref(dup), st)
        out = {"check": CsrCheck(chk.value), "row": row.value, "sorted": srt.value,
               "duplicates": dup.value}
        if status != 0 and (raise_on_error or chk.value == 0):
            _check(status, "gko_csr_validate")
        return out

    _ATTR = "_a"

    def _release(self, ptr):
        _lib().gko_csr_destroy(ptr)


class Plan(_Plan):
    """A gko SpMM plan for C[m, n] = alpha * A @ B[k, n] + beta * C.
    ldb/ldc default to tight (n for row-major).  kernel: "auto", "row_split"
    or "merge".  Creating it runs CUB reductions over row_ptr and waits.
    execute() only enqueues; the workspace (MERGE, or ROW_SPLIT with long
    rows cut into segments) is allocated once with
    torch unless workspace= is given."""

    _WORKSPACE_SIZE, _DESCRIBE = "gko_spmm_workspace_size", "gko_spmm_plan_describe"

    def __init__(self, handle: Handle, csr: CSR, n: int,
                 layout: Union[Layout, int, str] = "row_major", ldb: Optional[int] = None,
                 ldc: Optional[int] = None, kernel: KernelLike = "auto",
                 stream: StreamLike = None) -> None:
        lay = Layout.COL_MAJOR if layout in ("col", "col_major", Layout.COL_MAJOR) \
            else Layout.ROW_MAJOR
        m, k = csr.shape
        if ldb is None:
            ldb = max(n if lay == Layout.ROW_MAJOR else k, 1)
        if ldc is None:
            ldc = max(n if lay == Layout.ROW_MAJOR else m, 1)
        self.handle, self.csr = handle, csr
        self.n, self.layout, self.ldb, self.ldc = int(n), lay, int(ldb), int(ldc)
        p = _plan_t()
        _check(_lib().gko_spmm_plan_create(handle.value, csr.value, self.n, int(lay), self.ldb,
                                           self.ldc, int(_enum(Kernel, kernel)), _c.byref(p),
                                           _stream_of(csr._keep[0], stream)),
               "gko_spmm_plan_create")
        self._p = p
        self._ws = None
        self._fn = _lib().gko_spmm_execute  # bound once: execute() calls it
        self._fast, self._addr = _fast_call("spmm_execute", self._fn)

    @property
    def kernel(self) -> Kernel:
        """The kernel the library chose for the plan."""
        v = _c.c_int(0)
        _check(_lib().gko_spmm_plan_kernel(self._p, _c.byref(v)), "gko_spmm_plan_kernel")
        return Kernel(v.value)

    def _check_dense(self, t, rows, name, ld):
        """The pointer of a dense operand, after checking dtype, shape and
        strides (torch tensors) against the plan."""
        da = as_device_array(t)
        if da.dtype != self.csr.dtype:
            raise ValueError("%s is %s but A's values are %s" % (name, da.dtype.name,
                                                                  self.csr.dtype.name))
        if hasattr(t, "stride") and t.dim() == 2:
            if tuple(t.shape) != (rows, self.n):
                raise ValueError("%s has shape %s, the plan expects %s"
                                 % (name, tuple(t.shape), (rows, self.n)))
            s0, s1 = t.stride()
            if self.layout == Layout.ROW_MAJOR:
                ok = (s1 == 1 or self.n <= 1) and (s0 == ld or rows <= 1)
            else:
                ok = (s0 == 1 or rows <= 1) and (s1 == ld or self.n <= 1)
            if not ok:
                raise ValueError("%s has strides %s; the plan was made for %s with leading "
                                 "dimension %d" % (name, (s0, s1), self.layout.name, ld))
        return da.ptr

    def execute(self, B: Optional[Array], C: Array, alpha: float = 1.0, beta: float = 0.0,
                workspace: Optional[Array] = None, stream: StreamLike = None) -> Array:
        """C = alpha * A @ B + beta * C.  Returns C.  Torch tensors whose shapes,
        strides, dtypes and devices equal the last call's skip the checks."""
        try:
            meta = (None if B is None else (B.shape, B.stride(), B.dtype, B.get_device()),
                    C.shape, C.stride(), C.dtype, C.get_device())
        except Exception:  # noqa: BLE001 -- not a torch tensor: the checked path says what
            meta = None
        if meta is None or meta != self._seen:
            return self._execute_checked(meta, B, C, alpha, beta, workspace, stream)
        if stream is None:
            st = self._rs(meta[4])
        elif stream.__class__ is int:
            st = stream
        else:
            st = _stream_of(C, stream)
        if workspace is None:
            wsp = self._wsp
            if wsp is not None and (wsp[0] == st or not wsp[2]):
                ws, nws = wsp[1], wsp[2]
            else:
                ws, nws = self._workspace(C, st)
        else:
            ws, nws = _workspace_arg(workspace)
        pb = None if B is None else B.data_ptr()
        if self._fast is not None:
            p = self._p
            status = self._fast(self._addr, None if p is None else p.value, float(alpha), pb,
                                float(beta), C.data_ptr(), ws, nws, st)
        else:
            status = self._fn(self._p, float(alpha), pb, float(beta), C.data_ptr(), ws, nws, st)
        if status:
            _check(status, "gko_spmm_execute")
        return C

    def _execute_checked(self, meta, B, C, alpha, beta, workspace, stream):
        m, k = self.csr.shape
        pb = self._check_dense(B, k, "B", self.ldb) if B is not None else None
        pc = self._check_dense(C, m, "C", self.ldc)
        st = _stream_of(C, stream)
        if workspace is None:
            ws, nws = self._workspace(C, st)
        else:
            ws, nws = _workspace_arg(workspace)
        _check(self._fn(self._p, float(alpha), pb, float(beta), pc, ws, nws, st),
               "gko_spmm_execute")
        if meta is not None and _is_torch(B, C):
            self._rs = _torch_raw_stream()
            self._seen = meta
        return C

    def _release(self, ptr):
        _lib().gko_spmm_plan_destroy(ptr)


_PLANS_MAX = 64  # plans cached per handle (Handle._cached_plan)


def spmm(handle: Handle, A: CSR, B: Any, out: Any = None, alpha: float = 1.0, beta: float = 0.0,
         kernel: KernelLike = "auto", stream: StreamLike = None) -> Any:
    """out = alpha * A @ B + beta * out for a CSR A and a row-major 2-D torch
    tensor B; out is allocated (zeros are not needed: beta=0 never reads it)
    when not given.  Plans are cached per (handle, A, n, ldb, ldc, kernel):
    the first call for a shape pays the plan (GPU statistics, a sync)."""
    import torch
    if out is None:
        out = torch.empty((A.shape[0], B.shape[1]), dtype=B.dtype, device=B.device)
        if beta != 0.0:
            raise ValueError("beta != 0 needs out=")
    n = B.shape[1]
    ldb = max(B.stride(0), n, 1) if B.shape[0] > 1 else max(n, 1)
    ldc = max(out.stride(0), n, 1) if out.shape[0] > 1 else max(n, 1)
    key = ("spmm", id(A), n, ldb, ldc, str(kernel))
    make = lambda: Plan(handle, A, n, ldb=ldb, ldc=ldc, kernel=kernel, stream=stream)  # noqa: E731
    p = handle._cached_plan(key, make, _PLANS_MAX)
    if p.csr is not A:  # another matrix now has the id of a collected one
        handle._drop_plan(key)
        p = handle._cached_plan(key, make, _PLANS_MAX)
    return p.execute(B, out, alpha=alpha, beta=beta, stream=stream)

