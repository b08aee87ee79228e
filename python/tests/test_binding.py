"""Binding tests: host-only parts run everywhere; GPU parts need torch with
CUDA and skip otherwise."""
import os
import re
import sys
import unittest

# GKO_TEST_INSTALLED=1: test the gko that is installed (pip install), not
# the package next to these tests
if not os.environ.get("GKO_TEST_INSTALLED"):
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import gko  # noqa: E402
import gko.fp8  # noqa: E402
import gko.conv  # noqa: E402
import gko.gemm  # noqa: E402
import gko.sparse  # noqa: E402

HEADER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "include", "gko.h")


def _header_enum(prefix):
    """NAME -> value for every '#define'-free enumerator with the prefix."""
    with open(HEADER) as f:
        text = f.read()
    return {m.group(1): int(m.group(2))
            for m in re.finditer(r"\b%s([A-Z0-9_]+)\s*=\s*(-?\d+)" % prefix, text)}


def _torch_cuda():
    try:
        import torch
    except ImportError:
        return None
    return torch if torch.cuda.is_available() else None


def _torch():
    try:
        import torch
    except ImportError:
        return None
    return torch


class _Cai:
    """A device array by its interface alone (never dereferenced); strides in
    elements (None: dense)."""

    def __init__(self, shape, typestr="<f2", strides=None, ptr=1 << 20):
        size = 4 if typestr == "<f4" else 2
        self.__cuda_array_interface__ = {
            "shape": shape, "typestr": typestr, "data": (ptr, False), "version": 3,
            "strides": None if strides is None else tuple(s * size for s in strides)}


def _stand_in_gemm_plan(calls, m, n, k, **attrs):
    """A gko.gemm.Plan for an f16 Desc(m, n, k, **attrs) (host only) whose C
    call appends its arguments to calls and succeeds; no workspace."""
    desc = gko.gemm.Desc("f16", "f16", m, n, k, **attrs)
    geometry = {a: desc.get(a) for a in gko.gemm._GEOMETRY}
    desc.close()
    plan = gko.gemm.Plan.__new__(gko.gemm.Plan)
    plan._p = None
    plan._bind(geometry, execute=lambda *args: calls.append(args) or 0)
    plan._need = 0
    return plan


def _meta(a, b, d, c, bias):
    """The metadata tuple Plan.execute compares with the last passed call's."""
    m = lambda t: (t.shape, t.stride(), t.dtype, t.get_device())  # noqa: E731
    return m(a) + m(b) + m(d) + (None if c is None else m(c), None if bias is None else m(bias))


class HostOnly(unittest.TestCase):
    def test_version_matches_header(self):
        with open(HEADER) as f:
            text = f.read()
        parts = [int(re.search(r"#define GKO_VERSION_%s (\d+)" % k, text).group(1))
                 for k in ("MAJOR", "MINOR", "PATCH")]
        self.assertEqual(gko.version(), "%d.%d.%d" % tuple(parts))
        self.assertEqual(gko.version_number(), parts[0] * 10000 + parts[1] * 100 + parts[2])
        self.assertEqual(parts[0], gko.MAJOR)
        self.assertEqual(gko.__version__, "%d.%d.%d" % tuple(parts))
        pyproject = os.path.join(os.path.dirname(HEADER), "..", "python", "pyproject.toml")
        if os.path.exists(pyproject):  # a source tree (not an installed package)
            with open(pyproject) as f:
                self.assertIn('version = "%s"' % gko.__version__, f.read())

    def test_enums_match_header(self):
        for enum_cls, prefix in ((gko.Status, "GKO_STATUS_"), (gko.Dtype, "GKO_DTYPE_"),
                                 (gko.GeluApprox, "GKO_GELU_"), (gko.Query, "GKO_QUERY_"),
                                 (gko.CodePath, "GKO_CODE_PATH_"),
                                 (gko.gemm.Attr, "GKO_GEMM_ATTR_"),
                                 (gko.gemm.Static, "GKO_GEMM_STATIC_"),
                                 (gko.gemm.Pad, "GKO_GEMM_PAD_"), (gko.ScaleMode, "GKO_SCALE_")):
            want = _header_enum(prefix)
            got = {name: int(m) for name, m in enum_cls.__members__.items()}
            self.assertEqual(got, want, enum_cls.__name__)

    def test_status_names(self):
        for s in gko.Status:
            self.assertEqual(gko.status_name(s), "GKO_STATUS_" + s.name)

    def test_every_prototype_exists(self):
        lib = gko.library()
        for name in gko._PROTOTYPES:
            self.assertTrue(hasattr(lib, name), name)

    def test_diagnostics(self):
        text = gko.diagnostics()
        self.assertIn("gko " + gko.version(), text)
        self.assertIn("CUDA runtime", text)
        self.assertIn("sm_", text)

    def test_query(self):
        self.assertGreaterEqual(gko.query(gko.Query.RUNTIME_VERSION), 12000)
        with self.assertRaises(gko.GkoError) as cm:
            gko.query(99)
        self.assertEqual(cm.exception.status, gko.Status.INVALID_VALUE)
        self.assertIn("query", cm.exception.detail)

    def test_handle_without_gpu_raises_clearly(self):
        if gko.query(gko.Query.DEVICE_COUNT) > 0:
            self.skipTest("a GPU is present")
        with self.assertRaises(gko.GkoError) as cm:
            gko.Handle()
        self.assertIn(cm.exception.status, (gko.Status.NO_DEVICE, gko.Status.DRIVER_TOO_OLD))
        self.assertIn("GKO_STATUS_", str(cm.exception))
        self.assertTrue(len(cm.exception.detail) > 20)

    def test_plan_cache_lives_with_the_handle(self):
        # The cache logic alone, on a Handle whose C side is stubbed: plans
        # are cached per key, the oldest retired (not closed: a captured
        # graph or another thread may still use it) past the limit, all
        # closed before gko_destroy, and a closed handle refuses to hand one
        # out.
        events = []

        class FakePlan:
            def __init__(self, name):
                self.name = name

            def close(self):
                events.append("close " + self.name)

        class FakeLib:
            def gko_destroy(self, h):
                events.append("destroy")

        h = gko.Handle.__new__(gko.Handle)
        h._h = object()
        h._plans = {}
        made = []

        def make(name):
            def f():
                made.append(name)
                return FakePlan(name)
            return f

        p1 = h._cached_plan(("k", 1), make("a"), 2)
        self.assertIs(h._cached_plan(("k", 1), make("x"), 2), p1)
        h._cached_plan(("k", 2), make("b"), 2)
        h._cached_plan(("k", 3), make("c"), 2)  # evicts the oldest, "a"
        self.assertEqual(made, ["a", "b", "c"])
        self.assertEqual(events, [])  # retired, still open
        self.assertNotIn(("k", 1), h._plans)
        real = gko.library
        gko.library = lambda: FakeLib()
        try:
            h.close()
        finally:
            gko.library = real
        self.assertEqual(sorted(events[:3]), ["close a", "close b", "close c"])
        self.assertEqual(events[3:], ["destroy"])
        with self.assertRaisesRegex(ValueError, "closed"):
            h._cached_plan(("k", 2), make("d"), 2)
        self.assertEqual(made, ["a", "b", "c"])

    def test_owned_resources_are_released_once(self):
        # what every plan, descriptor, CSR and the handle inherit
        released = []

        class Res(gko._Owned):
            _ATTR = "_r"

            def __init__(self):
                self._r = object()
                self._ws = "cached"

            def _release(self, ptr):
                released.append(ptr)

            def _forget(self):
                self._ws = None

        with Res() as r:
            ptr = r._r
        self.assertEqual(released, [ptr])
        self.assertIsNone(r._r)
        self.assertIsNone(r._ws)
        r.close()
        del r
        self.assertEqual(released, [ptr])

    def test_conv_operands_checked_against_the_plan(self):
        import gko.conv as C

        class Arr:  # a device array by its interface alone (never dereferenced)
            def __init__(self, shape, typestr="<f2", strides=None):
                self.__cuda_array_interface__ = {"shape": shape, "typestr": typestr,
                                                 "data": (1 << 20, False), "strides": strides,
                                                 "version": 3}

        f16, nhwc, nchw = gko.Dtype.F16, C.Layout.NHWC, C.Layout.NCHW
        C._check_operand("x", Arr((2, 5, 6, 3)), (2, 3, 5, 6), nhwc, f16)  # dense [N, H, W, C]
        C._check_operand("x", Arr((2, 3, 5, 6)), (2, 3, 5, 6), nchw, f16)
        with self.assertRaisesRegex(ValueError, r"x has shape \[2, 3, 5, 6\]; the plan takes"):
            C._check_operand("x", Arr((2, 3, 5, 6)), (2, 3, 5, 6), nhwc, f16)  # NCHW data
        with self.assertRaisesRegex(ValueError, "x is F32, the plan's dtype is F16"):
            C._check_operand("x", Arr((2, 5, 6, 3), "<f4"), (2, 3, 5, 6), nhwc, f16)
        with self.assertRaisesRegex(ValueError, "not dense"):
            C._check_operand("y", Arr((2, 3, 5, 6), strides=(360, 120, 24, 4)), (2, 3, 5, 6),
                             nchw, f16)
        with self.assertRaisesRegex(ValueError, "has shape"):
            C._check_operand("y", Arr((2, 3, 5, 7)), (2, 3, 5, 6), nchw, f16)
        C._check_vector("bias", Arr((4,)), 4, f16)
        with self.assertRaisesRegex(ValueError, "bias must be 4 dense F16 elements"):
            C._check_vector("bias", Arr((5,)), 4, f16)

    def test_host_array_rejected(self):
        with self.assertRaises(TypeError):
            gko.as_device_array([1.0, 2.0])

    def test_gemm_operands_checked_against_the_plan(self):
        # Plan.execute's checks, on a plan whose operands come from a host-only
        # descriptor and whose C call is a recording stand-in
        calls = []
        plan = _stand_in_gemm_plan(calls, 64, 32, 16, transb=True, epilogue="bias")
        x, w, y = _Cai((64, 16), ptr=1 << 20), _Cai((32, 16), ptr=2 << 20), _Cai((64, 32), ptr=3 << 20)
        bias = _Cai((32,), ptr=4 << 20)
        self.assertIs(plan.execute(x, w, y, bias=bias, stream=5), y)
        self.assertEqual(calls, [(None, 1.0, 1 << 20, 2 << 20, 0.0, None, 3 << 20, 4 << 20, None,
                                  0, 5)])
        self.assertIsNone(plan._seen)  # not torch: no fast path
        with self.assertRaisesRegex(ValueError, r"a has shape \[16, 64\] and strides \[64, 1\]; "
                                    r"the plan takes a 64 x 16 row-major matrix"):
            plan.execute(_Cai((16, 64)), w, y, bias=bias)
        with self.assertRaisesRegex(ValueError, "transa/transb"):
            plan.execute(x, _Cai((16, 32)), y, bias=bias)
        with self.assertRaisesRegex(ValueError, "d is F32, the plan's dtype for it is F16"):
            plan.execute(x, w, _Cai((64, 32), "<f4"), bias=bias)
        with self.assertRaisesRegex(ValueError, "bias has shape"):
            plan.execute(x, w, y, bias=_Cai((33,)))
        with self.assertRaisesRegex(ValueError, "c has shape"):
            plan.execute(x, w, y, c=_Cai((64, 33)), bias=bias, beta=1.0)
        with self.assertRaises(TypeError):
            plan.execute([1.0], w, y)
        plan.execute(None, None, y, bias=bias, alpha=0.0)  # not read: may be NULL
        self.assertEqual(calls[-1][2:4], (None, None))
        del calls[-1]
        # row stride 40 (a column slice of a wider matrix) when the plan says ld 32
        with self.assertRaisesRegex(ValueError, "leading dimension 32"):
            plan.execute(x, w, _Cai((64, 32), strides=(40, 1)), bias=bias)
        self.assertEqual(len(calls), 1)
        ld = _stand_in_gemm_plan(calls, 64, 32, 16, ldd=40)
        ld.execute(_Cai((64, 16)), _Cai((16, 32)), _Cai((64, 32), strides=(40, 1)))
        ld.execute(_Cai((64, 16)), _Cai((16, 32)), _Cai((1, 64, 32), strides=(2560, 40, 1)))
        # batches: A broadcast (stride 0) as 2-D or as an expanded 3-D view
        bt = _stand_in_gemm_plan(calls, 8, 4, 2, batch_count=3, stride_a=0)
        for a in (_Cai((8, 2)), _Cai((3, 8, 2), strides=(0, 2, 1)), _Cai((1, 8, 2))):
            bt.execute(a, _Cai((3, 2, 4)), _Cai((3, 8, 4)))
        with self.assertRaisesRegex(ValueError, "3 of them 32 elements apart"):
            bt.execute(_Cai((8, 2)), _Cai((3, 2, 4)), _Cai((8, 4)))
        self.assertEqual(len(calls), 6)

    def test_gemm_operands_by_span(self):
        # dense buffers that cover what the plan reads/writes are accepted,
        # as the raw pointers of the C API (and the old binding) took them
        calls = []
        bt = _stand_in_gemm_plan(calls, 8, 4, 2, batch_count=3)  # strides 16, 8, 32
        a3, b3, d3 = _Cai((3, 8, 2)), _Cai((3, 2, 4)), _Cai((3, 8, 4))
        bt.execute(a3, b3, d3)
        bt.execute(_Cai((24, 2)), _Cai((6, 4)), _Cai((24, 4)))  # stacked 2-D
        bt.execute(_Cai((48,)), _Cai((24,)), _Cai((96,)))  # flat 1-D
        bt.execute(_Cai((48,)), _Cai((24,)), _Cai((200,)))  # more than it writes
        self.assertEqual(len(calls), 4)
        with self.assertRaisesRegex(ValueError, r"d has shape \[95\]: 95 elements, fewer than "
                                    r"the 96 the plan addresses"):
            bt.execute(a3, b3, _Cai((95,)))
        with self.assertRaisesRegex(ValueError, r"a has shape \[23, 2\]: 46 elements"):
            bt.execute(_Cai((23, 2)), b3, d3)
        one = _stand_in_gemm_plan(calls, 64, 32, 16)
        x, w = _Cai((64, 16)), _Cai((16, 32))
        one.execute(_Cai((1024,)), _Cai((512,)), _Cai((2048,)))  # flat
        one.execute(x, w, _Cai((80, 32)))  # more rows than the plan writes
        with self.assertRaisesRegex(ValueError, "b has shape"):
            one.execute(x, _Cai((511,)), _Cai((64, 32)))
        # rows padded to ld: a dense [rows, ld] buffer for a plan with ldd = ld
        pad = _stand_in_gemm_plan(calls, 64, 32, 16, ldd=40, ldc=40)
        pad.execute(x, w, _Cai((64, 40)))
        pad.execute(x, w, _Cai((64, 40)), c=_Cai((64, 40)), beta=1.0)
        pad.execute(x, w, _Cai((2552,)))  # 63 * 40 + 32
        with self.assertRaisesRegex(ValueError, "fewer than the 2552"):
            pad.execute(x, w, _Cai((2551,)))
        with self.assertRaisesRegex(ValueError, "fewer than the 2552"):
            pad.execute(x, w, _Cai((63, 40)))
        # but a dense buffer of other rows, or a strided view that is not the
        # plan's, stays refused with what the plan takes
        with self.assertRaisesRegex(ValueError, "leading dimension 40"):
            pad.execute(x, w, _Cai((64, 32)))
        with self.assertRaisesRegex(ValueError, "leading dimension 40"):
            pad.execute(x, w, _Cai((64, 32), strides=(48, 1)))
        self.assertEqual(len(calls), 9)
        self.assertEqual(calls[-1][6], 1 << 20)

    def test_plan_workspace_race(self):
        # two threads making the first call on one plan at once: one
        # workspace is made (under the plan's lock), and the pointer every
        # call gets belongs to the tensor the plan keeps
        import threading
        import time
        import types
        made = []

        class FakeTensor:
            def __init__(self, n):
                self.n, self.ptr = n, (len(made) + 1) << 20
                made.append(self)

            def data_ptr(self):
                return self.ptr

            def numel(self):
                return self.n

        def empty(n, dtype=None, device=None):
            time.sleep(0.05)  # as torch.empty, lets the other thread run
            return FakeTensor(n)

        fake = types.ModuleType("torch")
        fake.empty, fake.uint8 = empty, "uint8"

        class Plan(gko._Plan):
            asked = 0

            @property
            def workspace_size(self):
                Plan.asked += 1
                time.sleep(0.05)  # the C call releases the GIL
                return 4096

        like = types.SimpleNamespace(device="cuda:0")
        real = sys.modules.get("torch")
        sys.modules["torch"] = fake
        try:
            plan = Plan()
            got = []
            start = threading.Barrier(2)

            def first_call():
                start.wait()
                got.append(plan._workspace(like, 7))

            ts = [threading.Thread(target=first_call) for _ in range(2)]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
            self.assertEqual(len(made), 1)
            self.assertEqual(Plan.asked, 1)
            kept = plan._ws[0]
            self.assertIs(kept, made[0])
            self.assertEqual(got, [(kept.ptr, 4096)] * 2)
            self.assertEqual(plan._wsp, (7, kept.ptr, 4096))
            self.assertEqual(plan._workspace(like, 7), (kept.ptr, 4096))
            # another stream: a workspace of its own, kept with the plan
            other = plan._workspace(like, 9)
            self.assertEqual(len(made), 2)
            self.assertEqual(other, (made[1].ptr, 4096))
            self.assertIs(plan._ws_streams[9][0], made[1])
            self.assertEqual(plan._workspace(like, 9), other)
            self.assertIs(plan._ws[0], kept)  # never replaced
            self.assertEqual(len(made), 2)
            # the fast path follows the stream looked up last: no lock on its next calls
            self.assertEqual(plan._wsp, (9, made[1].ptr, 4096))
            self.assertEqual(plan._workspace(like, 7), (kept.ptr, 4096))
            self.assertEqual(plan._wsp, (7, kept.ptr, 4096))
            self.assertEqual(len(made), 2)
        finally:
            if real is None:
                del sys.modules["torch"]
            else:
                sys.modules["torch"] = real

    def test_gemm_workspace_argument(self):
        calls = []
        plan = _stand_in_gemm_plan(calls, 8, 8, 8)
        a = _Cai((8, 8))
        plan.execute(a, a, a, workspace=_Cai((100,), "<f4", ptr=1 << 30))
        self.assertEqual(calls[-1][8:10], (1 << 30, 400))  # bytes, not elements
        ws = _Cai((300,), "|u1", ptr=1 << 31)  # any dtype: CuPy's uint8 buffers
        plan.execute(a, a, a, workspace=ws)
        self.assertEqual(calls[-1][8:10], (1 << 31, 300))
        n = len(calls)
        with self.assertRaisesRegex(ValueError, "contiguous"):
            plan.execute(a, a, a, workspace=_Cai((100,), "<f4", strides=(2,)))
        self.assertEqual(len(calls), n)

    def test_fastcall_matches_ctypes(self):
        # the optional C helper (python/gko/_fastcall.c): where make built it
        # it must load, and each of its calls must reach the library as the
        # ctypes call does (here with a NULL plan: the same status and detail)
        here = os.path.join(os.path.dirname(gko.__file__), "_fastcall.abi3.so")
        if sys.version_info < (3, 10) or not os.path.exists(here):
            self.skipTest("no gko/_fastcall.abi3.so for this Python (make builds it)")
        if os.environ.get("GKO_FASTCALL") == "0":
            self.assertEqual(gko._fast_call("gemm_execute", gko.gemm._lib().gko_gemm_execute),
                             (None, None))
            self.skipTest("GKO_FASTCALL=0")
        from gko import _fastcall
        lib = gko.library()
        cases = {
            "gemm_execute": (lib.gko_gemm_execute,
                             (None, 1.0, None, None, 0.0, None, None, None, None, 0, None)),
            "conv_execute": (lib.gko_conv_execute, (None, None, None, None, None, None, 0, None)),
            "conv_execute_residual": (lib.gko_conv_execute_residual,
                                      (None, 1.0, None, None, None, 1.0, None, None, None, 0,
                                       None)),
            "spmm_execute": (lib.gko_spmm_execute, (None, 1.0, None, 0.0, None, None, 0, None)),
        }
        for name, (fn, args) in cases.items():
            f, addr = gko._fast_call(name, fn)
            self.assertIs(f, getattr(_fastcall, name))
            want = fn(*args)
            want_detail = lib.gko_last_error_detail()
            self.assertEqual(want, gko.Status.INVALID_VALUE, name)
            self.assertEqual(f(addr, *args), want, name)
            self.assertEqual(lib.gko_last_error_detail(), want_detail, name)
            with self.assertRaisesRegex(TypeError, "takes %d arguments" % (len(args) + 1)):
                f(addr, *args[:-1])
            with self.assertRaisesRegex(TypeError, "must be an address"):
                f(addr, 1.5, *args[1:])  # a float where an address goes
        gemm = cases["gemm_execute"][1]
        f, addr = gko._fast_call("gemm_execute", lib.gko_gemm_execute)
        with self.assertRaises(TypeError):
            f(addr, None, "1", *gemm[2:])  # alpha must be a number
        with self.assertRaises(OverflowError):
            f(addr, *gemm[:9], -1, None)  # workspace_bytes is a size
        with self.assertRaisesRegex(ValueError, "NULL"):
            f(None, *gemm)  # no function: refused, not called
        # a plan binds it (a stand-in C function does not)
        self.assertIsNotNone(_stand_in_gemm_plan([], 8, 8, 8)._fn)
        self.assertIsNone(_stand_in_gemm_plan([], 8, 8, 8)._fast)

    @unittest.skipIf(_torch() is None, "needs torch (the CPU build is enough)")
    def test_gemm_fast_path_compares_metadata(self):
        # CPU tensors never pass the checks (not CUDA); primed as a passed check
        # leaves a plan, the fast path must call C with the tensors' pointers
        # and fall back to the checked path on any difference
        torch = _torch()
        calls = []
        plan = _stand_in_gemm_plan(calls, 16, 8, 4, epilogue="bias")
        a, b, d = torch.empty(16, 4).half(), torch.empty(4, 8).half(), torch.empty(16, 8).half()
        bias = torch.empty(8).half()
        plan._seen = _meta(a, b, d, None, bias)
        plan._rs = lambda index: 1000 + index
        self.assertIs(plan.execute(a, b, d, bias=bias), d)
        self.assertEqual(calls, [(None, 1.0, a.data_ptr(), b.data_ptr(), 0.0, None, d.data_ptr(),
                                  bias.data_ptr(), None, 0, 999)])
        plan.execute(a, b, d, bias=bias, stream=7, alpha=2)
        self.assertEqual(calls[-1][1], 2.0)
        self.assertEqual(calls[-1][-1], 7)
        for args in ((a.t().contiguous().t(), b, d), (a, b, d.float()), (a, b, d[:, :4])):
            with self.assertRaises((TypeError, ValueError)):  # checked: CPU tensors are refused
                plan.execute(*args, bias=bias)
        with self.assertRaises(TypeError):
            plan.execute(a, b, d)  # no bias: another metadata tuple
        self.assertEqual(len(calls), 2)


@unittest.skipIf(_torch_cuda() is None, "needs torch with a CUDA device")
class WithTorch(unittest.TestCase):
    def setUp(self):
        self.torch = _torch_cuda()
        self.h = gko.Handle()

    def tearDown(self):
        self.h.close()

    def test_gelu_matches_float64(self):
        torch = self.torch
        for dt in (torch.float32, torch.float16, torch.bfloat16):
            for approx in ("none", "tanh"):
                x = (torch.randn(100003, device="cuda", dtype=torch.float64) * 4)
                xd = x.to(dt)
                y = gko.gelu(self.h, xd, approximate=approx)
                ref = torch.nn.functional.gelu(xd.double(), approximate=approx)
                err = ((y.double() - ref).norm() / ref.norm()).item()
                tol = 1e-6 if dt == torch.float32 else 5e-3
                self.assertLess(err, tol, "%s %s" % (dt, approx))

    def test_backward_and_in_place_and_stream(self):
        torch = self.torch
        x = torch.randn(4097, device="cuda")
        dy = torch.randn(4097, device="cuda")
        xr = x.double().requires_grad_()
        torch.nn.functional.gelu(xr).backward(dy.double())
        s = torch.cuda.Stream()
        with torch.cuda.stream(s):
            dx = gko.gelu_backward(self.h, dy, x)
        s.synchronize()
        self.assertLess(((dx.double() - xr.grad).norm() / xr.grad.norm()).item(), 1e-6)
        ref = torch.nn.functional.gelu(x)
        gko.gelu(self.h, x, out=x)
        torch.cuda.synchronize()
        self.assertLess(((x - ref).norm() / ref.norm()).item(), 1e-6)

    def test_errors_carry_status_and_detail(self):
        torch = self.torch
        x = torch.randn(16, device="cuda")
        y = torch.empty(16, device="cuda", dtype=torch.float16)
        with self.assertRaises(ValueError):
            gko.gelu(self.h, x, out=y)
        with self.assertRaises(TypeError):
            gko.gelu(self.h, torch.randn(4))


def _rel(got, ref):
    """max |got - ref| / max |ref|, in float64."""
    return ((got.double() - ref).abs().max() / ref.abs().max()).item()


@unittest.skipIf(_torch_cuda() is None, "needs torch with a CUDA device")
class PlansWithTorch(unittest.TestCase):
    """Planned executes called repeatedly (the fast path after the first,
    checked call), on streams and in a CUDA graph."""

    def setUp(self):
        self.torch = _torch_cuda()
        self.h = gko.Handle()

    def tearDown(self):
        self.h.close()

    def test_gemm_plan_execute_repeated_and_checked(self):
        torch = self.torch
        m, n, k = 96, 80, 64
        x = torch.randn(m, k, device="cuda").half()
        w = torch.randn(n, k, device="cuda").half()
        b = torch.randn(n, device="cuda").half()
        y = torch.empty(m, n, device="cuda", dtype=torch.float16)
        p = gko.gemm.Plan(self.h, "f16", "f16", m, n, k, transb=True, epilogue="bias")
        ref = x.double() @ w.double().t() + b.double()
        for i in range(3):
            y.zero_()
            self.assertIs(p.execute(x, w, y, bias=b), y)
            torch.cuda.synchronize()
            self.assertLess(_rel(y, ref), 2e-3, "call %d" % i)
            self.assertIsNotNone(p._seen)
        x2, y2 = torch.randn_like(x), torch.empty_like(y)  # same metadata, other pointers
        p.execute(x2, w, y2, bias=b)
        torch.cuda.synchronize()
        self.assertLess(_rel(y2, x2.double() @ w.double().t() + b.double()), 2e-3)
        with self.assertRaises(ValueError):
            p.execute(x[:, :32], w, y, bias=b)
        with self.assertRaises(ValueError):
            p.execute(x.float(), w, y, bias=b)
        with self.assertRaisesRegex(ValueError, "transa/transb"):
            p.execute(x, w.t().contiguous(), y, bias=b)
        with self.assertRaises(TypeError):
            p.execute(x.cpu(), w, y, bias=b)
        p.execute(x, w, y, bias=b)  # and back on the fast path
        torch.cuda.synchronize()
        self.assertLess(_rel(y, ref), 2e-3)
        p.close()
        with self.assertRaises(gko.GkoError):
            p.execute(x, w, y, bias=b)

    def test_gemm_plan_batched_broadcast(self):
        torch = self.torch
        bt, m, n, k = 3, 40, 24, 32
        a = torch.randn(m, k, device="cuda").half()
        b = torch.randn(bt, k, n, device="cuda").half()
        y = torch.empty(bt, m, n, device="cuda", dtype=torch.float16)
        p = gko.gemm.Plan(self.h, "f16", "f16", m, n, k, batch_count=bt, stride_a=0)
        ref = torch.matmul(a.double(), b.double())
        for a_in in (a, a.expand(bt, m, k), a, a.expand(bt, m, k)):
            y.zero_()
            p.execute(a_in, b, y)
            torch.cuda.synchronize()
            self.assertLess(_rel(y, ref), 2e-3)
        with self.assertRaises(ValueError):
            p.execute(a, b, y[0])
        p.close()

    def test_gemm_plan_streams_and_graph(self):
        torch = self.torch
        m = n = k = 64
        a = torch.randn(m, k, device="cuda").half()
        b = torch.randn(k, n, device="cuda").half()
        y = torch.empty(m, n, device="cuda", dtype=torch.float16)
        p = gko.gemm.Plan(self.h, "f16", "f16", m, n, k)
        dev = torch.cuda.current_device()
        raw = gko._torch_raw_stream()
        self.assertEqual(raw(dev), torch.cuda.current_stream().cuda_stream)
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            self.assertEqual(raw(dev), s.cuda_stream)
            for _ in range(3):
                p.execute(a, b, y)
        s.synchronize()
        ref = a.double() @ b.double()
        self.assertLess(_rel(y, ref), 2e-3)
        for st in (s.cuda_stream, s):
            y.zero_()
            torch.cuda.synchronize()
            p.execute(a, b, y, stream=st)
            s.synchronize()
            self.assertLess(_rel(y, ref), 2e-3)
        g = torch.cuda.CUDAGraph()
        torch.cuda.synchronize()
        with torch.cuda.graph(g):
            p.execute(a, b, y)
        for _ in range(2):
            a.copy_(torch.randn_like(a))
            y.zero_()
            g.replay()
            torch.cuda.synchronize()
            self.assertLess(_rel(y, a.double() @ b.double()), 2e-3)
        del g
        p.close()

    def test_conv_plan_execute_repeated(self):
        torch, F = self.torch, self.torch.nn.functional
        n, c, hh, ww, k, r = 2, 8, 12, 12, 16, 3
        cl = torch.channels_last
        x = torch.randn(n, c, hh, ww, device="cuda").half().to(memory_format=cl)
        w = torch.randn(k, c, r, r, device="cuda").half().to(memory_format=cl)
        b = torch.randn(k, device="cuda").half()
        p = gko.conv.Plan(self.h, "f16", "nhwc", n, c, hh, ww, k, r, r, stride=1, padding=1,
                          epilogue="bias_relu")
        y = torch.empty(p.shape, device="cuda", dtype=torch.float16, memory_format=cl)
        conv = F.conv2d(x.double(), w.double(), b.double(), padding=1)
        for _ in range(3):
            y.zero_()
            p.execute(x, w, y, bias=b)
            torch.cuda.synchronize()
            self.assertLess(_rel(y, F.relu(conv)), 5e-3)
        self.assertIsNotNone(p._seen)
        z = torch.randn_like(y)
        for _ in range(2):
            y.zero_()
            p.execute(x, w, y, bias=b, z=z)
            torch.cuda.synchronize()
            self.assertLess(_rel(y, F.relu(conv + z.double())), 5e-3)
        with self.assertRaises(ValueError):
            p.execute(x.contiguous(), w, y, bias=b)
        p.close()

    def test_spmm_plan_execute_repeated(self):
        torch = self.torch
        dense = torch.randn(50, 40, device="cuda") * (torch.rand(50, 40, device="cuda") < 0.2)
        A = gko.sparse.CSR.from_torch(dense.to_sparse_csr())
        B = torch.randn(40, 16, device="cuda")
        C = torch.empty(50, 16, device="cuda")
        p = gko.sparse.Plan(self.h, A, 16)
        ref = dense.double() @ B.double()
        for _ in range(3):
            C.zero_()
            p.execute(B, C)
            torch.cuda.synchronize()
            self.assertLess(_rel(C, ref), 1e-5)
        self.assertIsNotNone(p._seen)
        with self.assertRaises(ValueError):
            p.execute(B[:, :8], C)
        p.close()
        A.close()


@unittest.skipIf(_torch_cuda() is None or not hasattr(_torch_cuda(), "float8_e4m3fn"),
                 "needs torch with a CUDA device and float8 dtypes")
class Fp8WithTorch(unittest.TestCase):
    """gko.fp8 and FP8 GEMM against torch's own conversion and _scaled_mm."""

    def setUp(self):
        self.torch = _torch_cuda()
        self.h = gko.Handle()
        if gko.query(gko.Query.COMPUTE_CAPABILITY, 0) < 89:
            self.skipTest("FP8 GEMM needs compute capability 8.9")

    def tearDown(self):
        self.h.close()

    def test_quantize_matches_torch(self):
        torch = self.torch
        x = torch.randn(1000, 37, device="cuda") * 5
        s = torch.tensor([40.0], device="cuda")
        amax = torch.empty(1, device="cuda")
        q = gko.fp8.quantize(self.h, x, torch.float8_e4m3fn, scale=s, amax=amax)
        ref = (x * s).clamp(-448, 448).to(torch.float8_e4m3fn)
        self.assertTrue(torch.equal(q.view(torch.uint8), ref.view(torch.uint8)))
        self.assertEqual(amax.item(), x.abs().max().item())
        y = gko.fp8.dequantize(self.h, q, torch.bfloat16, scale=1 / s)
        self.assertTrue(torch.equal(y, (q.float() * (1 / s)).to(torch.bfloat16)))
        rs = torch.rand(1000, device="cuda") * 50 + 1
        qr = gko.fp8.quantize(self.h, x, torch.float8_e5m2, scale=rs, rowwise=True)
        refr = (x * rs[:, None]).clamp(-57344, 57344).to(torch.float8_e5m2)
        self.assertTrue(torch.equal(qr.view(torch.uint8), refr.view(torch.uint8)))

    def test_scaled_mm_matches_torch(self):
        torch = self.torch
        m, n, k = 128, 96, 256
        a = (torch.randn(m, k, device="cuda") * 2).to(torch.float8_e4m3fn)
        w = (torch.randn(n, k, device="cuda") * 2).to(torch.float8_e4m3fn)
        sa = torch.tensor([0.5], device="cuda")
        sb = torch.tensor([0.25], device="cuda")
        for fast in (False, True):
            got = gko.gemm.scaled_mm(self.h, a, w.t(), sa, sb, out_dtype=torch.bfloat16,
                                     use_fast_accum=fast)
            ref = torch._scaled_mm(a, w.t(), scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16,
                                   use_fast_accum=fast)
            err = ((got.float() - ref.float()).norm() / ref.float().norm()).item()
            self.assertLess(err, 1e-2, "fast=%s" % fast)
        ra = torch.rand(m, 1, device="cuda") + 0.5
        rb = torch.rand(1, n, device="cuda") + 0.5
        got = gko.gemm.scaled_mm(self.h, a, w.t(), ra, rb, out_dtype=torch.bfloat16)
        exact = (a.double() * ra.double()) @ (w.double() * rb.t().double()).t()
        err = ((got.double() - exact).norm() / exact.norm()).item()
        self.assertLess(err, 1e-2)
        amax = torch.empty(1, device="cuda")
        q = gko.gemm.scaled_mm(self.h, a, w.t(), sa, sb, out_dtype=torch.float8_e4m3fn,
                               scale_result=torch.tensor([0.5], device="cuda"), amax=amax)
        x = (a.double() * 0.5) @ (w.double() * 0.25).t()
        self.assertAlmostEqual(amax.item(), x.abs().max().item(), delta=1e-3 * x.abs().max().item())
        self.assertLess(((q.double() - x * 0.5).norm() / (x * 0.5).norm()).item(), 0.05)

    def test_weight_only_fp8_decode_matches_float64(self):
        """A 16-bit x of few rows against e4m3 weights with a factor per output
        channel (the weight-only kernel: 2304 rows of 4096 give every H200 SM
        a tile, so m <= 4 runs its bulk-copy path), bias fused; float64 of
        the same values is the reference."""
        torch = self.torch
        n, k = 2304, 4096
        w = (torch.randn(n, k, device="cuda") * 2).to(torch.float8_e4m3fn)
        sb = torch.rand(n, device="cuda") + 0.5
        wd = w.double() * sb.double()[:, None]
        for dt, unit in ((torch.bfloat16, 2.0 ** -8), (torch.float16, 2.0 ** -11)):
            bias = torch.randn(n, device="cuda").to(dt)
            for m in (1, 4, 9):
                x = torch.randn(m, k, device="cuda").to(dt)
                y = gko.gemm.gemm(self.h, x, w, transb=True, scale_b=sb, bias=bias,
                                  epilogue="bias")
                self.assertEqual((y.dtype, tuple(y.shape)), (dt, (m, n)))
                ref = x.double() @ wd.t() + bias.double()
                err = ((y.double() - ref).abs().max() / ref.abs().max()).item()
                self.assertLess(err, 2 * unit, "%s m=%d" % (dt, m))



@unittest.skipIf(_torch_cuda() is None, "needs torch with a CUDA device")
class EncoderWithTorch(unittest.TestCase):
    """gko.encoder against torch's own operators, in float64 where it matters."""

    def setUp(self):
        import gko.encoder
        self.torch, self.enc = _torch_cuda(), gko.encoder
        self.h = gko.Handle()

    def tearDown(self):
        self.h.close()

    def test_layer_norm_with_residual(self):
        torch, F = self.torch, self.torch.nn.functional
        for dt in (torch.float32, torch.float16, torch.bfloat16):
            x = torch.randn(1000, 384, device="cuda").to(dt)
            r = torch.randn(1000, 384, device="cuda").to(dt)
            g, b = torch.randn(384, device="cuda").to(dt), torch.randn(384, device="cuda").to(dt)
            s = torch.empty_like(x)
            y = self.enc.layer_norm(self.h, x, g, b, eps=1e-12, residual=r, sum_out=s)
            h = x.double() + r.double()
            ref = F.layer_norm(h, (384,), g.double(), b.double(), 1e-12)
            # two half-ulps of the output dtype (relative), plus f32 arithmetic
            rel = {torch.float32: 2.0 ** -22, torch.float16: 2.0 ** -10,
                   torch.bfloat16: 2.0 ** -7}[dt]
            bound = rel * ref.abs() + 1e-5
            self.assertTrue(((y.double() - ref).abs() <= bound).all().item(), str(dt))
            self.assertTrue(torch.equal(s, h.to(dt)), str(dt))

    def test_softmax_lengths_and_mask(self):
        torch = self.torch
        x = torch.randn(2 * 3 * 5, 7, device="cuda")
        lengths = torch.tensor([4, 0], dtype=torch.int32, device="cuda")
        mask = torch.zeros(2, 7, device="cuda")
        mask[0, 1] = float("-inf")
        y = self.enc.softmax(self.h, x, scale=0.5, mask=mask, lengths=lengths, group=15)
        z = 0.5 * x.double().view(2, 15, 7) + mask.double().view(2, 1, 7)
        z[:, :, 4:] = float("-inf")
        ref = torch.softmax(z, -1).nan_to_num(0.0).view(30, 7)
        ref[15:] = 0
        self.assertLess((y.double() - ref).abs().max().item(), 1e-6)

    def test_attention_matches_sdpa_on_qkv_slices(self):
        torch, F = self.torch, self.torch.nn.functional
        B, S, H, D = 3, 77, 12, 32
        qkv = torch.randn(B * S, 3 * H * D, device="cuda").half()
        q3 = qkv.view(B, S, 3 * H * D)
        q, k, v = q3[:, :, :H * D], q3[:, :, H * D:2 * H * D], q3[:, :, 2 * H * D:]
        lens = torch.tensor([77, 40, 1], dtype=torch.int32, device="cuda")
        o = self.enc.attention(self.h, q, k, v, H, lengths=lens)
        heads = lambda t: t.double().reshape(B, S, H, D).transpose(1, 2)  # noqa: E731
        keep = torch.arange(S, device="cuda")[None, :] < lens[:, None]
        ref = F.scaled_dot_product_attention(heads(q), heads(k), heads(v),
                                             attn_mask=keep[:, None, None, :])
        ref = ref.transpose(1, 2).reshape(B, S, H * D)
        self.assertLess((o.double() - ref).abs().max().item(), 1e-2)

    def test_embedding_and_mean_pool(self):
        torch, F = self.torch, self.torch.nn.functional
        table = torch.randn(50, 16, device="cuda").half()
        ids = torch.tensor([[3, 49, 0], [7, 50, -1]], device="cuda")
        y = self.enc.embedding(self.h, ids, table)
        self.assertTrue(torch.equal(y[0], table[ids[0]]))
        self.assertTrue(torch.equal(y[1, 0], table[7]))
        self.assertTrue(torch.isnan(y[1, 1:]).all().item())
        x = torch.randn(4, 9, 16, device="cuda")
        lens = torch.tensor([9, 3, 0, 1], dtype=torch.int32, device="cuda")
        e = self.enc.mean_pool(self.h, x, lengths=lens, normalize=True)
        m = torch.stack([x[i, :max(int(n), 1)].double().mean(0) * (1 if n else 0)
                         for i, n in enumerate(lens.tolist())])
        ref = F.normalize(m, dim=1, eps=1e-12)
        self.assertLess((e.double() - ref).abs().max().item(), 1e-6)
        with self.assertRaises(ValueError):
            self.enc.mean_pool(self.h, x, lengths=lens.long())

    def test_matrix_views_are_checked(self):
        torch = self.torch
        row = torch.randn(384, device="cuda")
        m = torch.randn(8, 384, device="cuda")
        for bad in (row.expand(32, 384), row.unfold(0, 8, 4), m[:, 0]):
            with self.assertRaises(ValueError):
                self.enc.layer_norm(self.h, bad)
        with self.assertRaises(ValueError):
            self.enc.layer_norm(self.h, m, out=row.expand(8, 384))
        wide = torch.randn(8, 3 * 384, device="cuda")
        y = self.enc.layer_norm(self.h, wide[:, 384:768])      # a column slice: ld 1152
        ref = torch.nn.functional.layer_norm(wide[:, 384:768], (384,))
        self.assertLess((y - ref).abs().max().item(), 1e-5)


if __name__ == "__main__":
    unittest.main()
