"""gko.torch (custom operators, drop-in modules) against torch's own modules,
under torch.compile and in a CUDA graph.  Needs torch with a CUDA device and
skips otherwise; gko itself imports without torch."""
import copy
import os
import sys
import unittest

# GKO_TEST_INSTALLED=1: test the gko that is installed (pip install), not
# the package next to these tests
if not os.environ.get("GKO_TEST_INSTALLED"):
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import gko  # noqa: E402


def _torch_cuda():
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available() or not hasattr(torch.library, "custom_op"):
        return None
    return torch


def _rel(got, ref):
    """max |got - ref| / max |ref| in float64."""
    return ((got.double() - ref.double()).abs().max() / ref.double().abs().max()).item()


TOL = {"float32": 1e-5, "float16": 3e-3, "bfloat16": 2e-2}


def _torch_ops_host():
    """torch >= 2.4, with or without CUDA (fake tensors need no device)."""
    try:
        import torch
    except ImportError:
        return None
    return torch if hasattr(torch.library, "custom_op") else None


@unittest.skipIf(_torch_ops_host() is None, "needs torch >= 2.4 (the CPU build is enough)")
class FakeImpls(unittest.TestCase):
    """The fake implementations (what torch.compile traces with): shapes,
    dtypes and memory formats of the results, on fake CUDA tensors."""

    def test_shapes_and_formats(self):
        import torch
        import gko.torch as gt
        from torch._subclasses.fake_tensor import FakeTensorMode
        cl = torch.channels_last
        with FakeTensorMode():
            x = torch.empty(3, 5, 16, device="cuda", dtype=torch.float16)
            w = torch.empty(24, 16, device="cuda", dtype=torch.float16)
            y = gt.linear(x, w, torch.empty(24, device="cuda", dtype=torch.float16), "gelu")
            self.assertEqual((tuple(y.shape), y.dtype), ((3, 5, 24), torch.float16))
            self.assertTrue(y.is_contiguous())
            c = torch.empty(2, 4, 9, 7, device="cuda").to(memory_format=cl)
            o = gt.conv2d(c, torch.empty(6, 2, 3, 3, device="cuda"), None, 2, 1, 1, 2)
            self.assertEqual(tuple(o.shape), (2, 6, 5, 4))
            self.assertTrue(o.is_contiguous(memory_format=cl))
            o = gt.conv2d(c.contiguous(), torch.empty(6, 4, 3, 3, device="cuda"), padding=(0, 2),
                          dilation=2)
            self.assertEqual(tuple(o.shape), (2, 6, 5, 7))
            self.assertTrue(o.is_contiguous())
            self.assertTrue(gt.gelu(c).is_contiguous(memory_format=cl))
            self.assertTrue(gt.gelu(c[:, :, :, 1:]).is_contiguous())
            crow = torch.empty(8, device="cuda", dtype=torch.int64)
            col = torch.empty(20, device="cuda", dtype=torch.int64)
            vals = torch.empty(20, device="cuda")
            s = gt.spmm((crow, col, vals, (7, 5)), torch.empty(5, 3, device="cuda"))
            self.assertEqual(tuple(s.shape), (7, 3))

    def test_workspaces_rounded_and_call_local_in_capture(self):
        # gko.torch's per-(device, stream) workspace with torch.empty and the
        # capture query stubbed (no GPU): sizes round up to powers of two, a
        # smaller one is retired (kept); inside a capture an existing one is
        # used, else one for that call alone, kept alive but not shared
        import types
        import torch
        import gko.torch as gt
        capturing = [False]
        made = []

        def empty(n, dtype=None, device=None):
            t = torch.empty(n, dtype=dtype)
            made.append(n)
            return t

        fake = types.SimpleNamespace(
            empty=empty, uint8=torch.uint8, device=lambda *a: "cuda",
            cuda=types.SimpleNamespace(is_current_stream_capturing=lambda: capturing[0]))
        plan = types.SimpleNamespace(_need=None, workspace_size=1000)
        real = gt.torch
        gt.torch = fake
        ws, retired = dict(gt._WS), list(gt._WS_RETIRED)
        try:
            gt._WS.clear()
            w1 = gt._workspace(0, 123, plan)
            self.assertEqual(made, [1024])
            plan._need = 1024
            self.assertIs(gt._workspace(0, 123, plan), w1)
            plan._need = 1500
            w2 = gt._workspace(0, 123, plan)
            self.assertEqual(made, [1024, 2048])
            self.assertIs(gt._WS_RETIRED[-1], w1)
            plan._need = 1
            self.assertIs(gt._workspace(0, 123, plan), w2)
            capturing[0] = True
            self.assertIs(gt._workspace(0, 123, plan), w2)  # exists: fine in a capture
            w3 = gt._workspace(0, 456, plan)  # none on this stream: a call-local one
            self.assertEqual(made, [1024, 2048, 1])
            plan._need = 4096
            w4 = gt._workspace(0, 123, plan)  # too small: a call-local one, exact size
            self.assertEqual(made, [1024, 2048, 1, 4096])
            self.assertFalse(any(t is w3 or t is w4 for t in gt._WS.values()))  # not shared
            self.assertIs(gt._WS_RETIRED[-2], w3)  # but kept alive for the graph's replays
            self.assertIs(gt._WS_RETIRED[-1], w4)
            self.assertIs(gt._WS[(0, 123)], w2)
            plan._need = 0
            self.assertIsNone(gt._workspace(0, 456, plan))
        finally:
            gt.torch = real
            gt._WS.clear()
            gt._WS.update(ws)
            gt._WS_RETIRED[:] = retired

    def test_arguments_checked(self):
        import gko.torch as gt
        with self.assertRaisesRegex(ValueError, "activation"):
            gt.Linear(4, 4, activation="tanh")
        with self.assertRaisesRegex(ValueError, "backend"):
            gt.Linear(4, 4, backend="cudnn")
        with self.assertRaisesRegex(ValueError, "padding"):
            gt.Conv2d(3, 4, 3, padding="same")


@unittest.skipIf(_torch_cuda() is None, "needs torch >= 2.4 with a CUDA device")
class TorchOps(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        import torch
        import gko.torch as gt
        cls.torch, cls.F, cls.gt = torch, torch.nn.functional, gt
        cls._tf32 = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
        torch.backends.cuda.matmul.allow_tf32 = False  # float32 references in float32
        torch.backends.cudnn.allow_tf32 = False
        torch.manual_seed(0)

    @classmethod
    def tearDownClass(cls):
        cls.torch.backends.cuda.matmul.allow_tf32, cls.torch.backends.cudnn.allow_tf32 = cls._tf32
        cls.gt.clear_cache()

    def _act(self, name):
        F = self.F
        return {None: lambda z: z, "relu": F.relu, "gelu": F.gelu,
                "gelu_tanh": lambda z: F.gelu(z, approximate="tanh")}[name]

    def test_linear_matches_nn_linear(self):
        torch, gt = self.torch, self.gt
        for dt in (torch.float32, torch.float16, torch.bfloat16):
            for act in (None, "relu", "gelu", "gelu_tanh"):
                for bias in (True, False):
                    lin = torch.nn.Linear(192, 96, bias=bias, device="cuda", dtype=dt)
                    g = gt.Linear.from_torch(lin, activation=act)
                    ref_mod = copy.deepcopy(lin).double()
                    for shape in ((3, 40, 192), (1, 192), (77, 192)):
                        x = torch.randn(*shape, device="cuda", dtype=dt)
                        with torch.no_grad():
                            y = g(x)
                            ref = self._act(act)(ref_mod(x.double()))
                        torch.cuda.synchronize()
                        what = "%s %s bias=%s %s" % (dt, act, bias, shape)
                        self.assertEqual(y.shape, ref.shape, what)
                        self.assertEqual(y.dtype, dt, what)
                        self.assertLess(_rel(y, ref), TOL[str(dt).split(".")[1]], what)

    def test_linear_backends(self):
        torch, gt = self.torch, self.gt
        x = torch.randn(64, 256, device="cuda", dtype=torch.float16)
        w = torch.randn(128, 256, device="cuda", dtype=torch.float16) / 16
        b = torch.randn(128, device="cuda", dtype=torch.float16)
        ref = self.F.gelu(self.F.linear(x.double(), w.double(), b.double()))
        ran = []
        for be in ("auto", "cublaslt", "wmma", "sm90"):
            try:
                y = gt.linear(x, w, b, activation="gelu", backend=be)
            except gko.GkoError as e:
                if e.status == gko.Status.NOT_SUPPORTED:
                    continue
                raise
            torch.cuda.synchronize()
            self.assertLess(_rel(y, ref), 3e-3, be)
            ran.append(be)
        self.assertIn("auto", ran)
        self.assertIn("cublaslt", ran)

    def test_linear_gradients(self):
        torch, gt = self.torch, self.gt
        for act in (None, "relu", "gelu", "gelu_tanh"):
            lin = torch.nn.Linear(64, 48, device="cuda")
            g = gt.Linear.from_torch(lin, activation=act)
            x = torch.randn(5, 7, 64, device="cuda", requires_grad=True)
            y, ref = g(x), self._act(act)(lin(x))
            gy = torch.randn_like(ref)
            got = torch.autograd.grad(y, (x, lin.weight, lin.bias), gy)
            want = torch.autograd.grad(ref, (x, lin.weight, lin.bias), gy)
            for name, a, b in zip(("x", "weight", "bias"), got, want):
                self.assertLess(_rel(a, b), 1e-4, "%s d%s" % (act, name))

    def test_gelu_matches_f_gelu(self):
        torch, gt, F = self.torch, self.gt, self.F
        for dt in (torch.float32, torch.float16, torch.bfloat16):
            base = torch.randn(2, 6, 5, 7, device="cuda", dtype=dt) * 3
            for x in (base, base.to(memory_format=torch.channels_last), base[:, :, 1:4],
                      base.transpose(1, 3)):
                for ap in ("none", "tanh"):
                    y = gt.gelu(x, ap)
                    torch.cuda.synchronize()
                    what = "%s %s %s" % (dt, ap, tuple(x.stride()))
                    self.assertLess(_rel(y, F.gelu(x.double(), approximate=ap)),
                                    TOL[str(dt).split(".")[1]], what)
                    if x.is_contiguous(memory_format=torch.channels_last) and \
                            not x.is_contiguous():
                        self.assertTrue(y.is_contiguous(memory_format=torch.channels_last))
        x = torch.randn(1000, device="cuda", requires_grad=True)
        g, = torch.autograd.grad(gt.GELU("tanh")(x).sum(), x)
        r, = torch.autograd.grad(F.gelu(x, approximate="tanh").sum(), x)
        self.assertLess(_rel(g, r), 1e-6)

    def test_conv2d_matches_nn_conv2d(self):
        torch, gt = self.torch, self.gt
        cases = [dict(stride=1, padding=1, groups=1), dict(stride=2, padding=3, groups=1),
                 dict(stride=1, padding=0, groups=2)]
        for dt in (torch.float32, torch.float16):
            for fmt in (torch.contiguous_format, torch.channels_last):
                for kw in cases:
                    for act in (None, "relu"):
                        conv = torch.nn.Conv2d(8, 16, 3, bias=True, device="cuda", dtype=dt, **kw)
                        conv = conv.to(memory_format=fmt)
                        g = gt.Conv2d.from_torch(conv, activation=act)
                        ref_mod = copy.deepcopy(conv).double().to(
                            memory_format=torch.contiguous_format)
                        x = torch.randn(2, 8, 13, 11, device="cuda", dtype=dt)
                        x = x.to(memory_format=fmt)
                        with torch.no_grad():
                            y = g(x)
                            ref = self._act(act)(ref_mod(x.double().contiguous()))
                        torch.cuda.synchronize()
                        what = "%s %s %s %s" % (dt, fmt, kw, act)
                        self.assertEqual(y.shape, ref.shape, what)
                        self.assertTrue(y.is_contiguous(memory_format=fmt), what)
                        self.assertLess(_rel(y, ref), 5e-3 if dt == torch.float16 else 1e-4,
                                        what)

    def test_conv2d_gradients(self):
        torch, gt = self.torch, self.gt
        conv = torch.nn.Conv2d(4, 6, 3, stride=2, padding=1, device="cuda")
        g = gt.Conv2d.from_torch(conv, activation="relu")
        x = torch.randn(2, 4, 9, 9, device="cuda", requires_grad=True)
        y, ref = g(x), self.F.relu(conv(x))
        gy = torch.randn_like(ref)
        got = torch.autograd.grad(y, (x, conv.weight, conv.bias), gy)
        want = torch.autograd.grad(ref, (x, conv.weight, conv.bias), gy)
        for a, b in zip(got, want):
            self.assertLess(_rel(a, b), 1e-4)

    def test_spmm_matches_torch_sparse(self):
        torch, gt = self.torch, self.gt
        for dt in (torch.float32, torch.float16):
            dense = torch.randn(300, 200, device="cuda") * (torch.rand(300, 200, device="cuda")
                                                            < 0.05)
            dense = dense.to(dt)
            a = dense.to_sparse_csr()
            b = torch.randn(200, 64, device="cuda", dtype=dt)
            ref = torch.sparse.mm(a.float(), b.float()) if dt == torch.float32 else None
            exact = dense.double() @ b.double()
            for _ in range(2):
                y = gt.spmm(a, b)
                torch.cuda.synchronize()
                self.assertLess(_rel(y, exact), 1e-5 if dt == torch.float32 else 3e-3)
            if ref is not None:
                self.assertLess(_rel(y, ref), 1e-5)
            a32 = (a.crow_indices().int(), a.col_indices().int(), a.values(), tuple(a.shape))
            y = gt.spmm(a32, b.t().contiguous().t())  # a column-major b: copied
            torch.cuda.synchronize()
            self.assertLess(_rel(y, exact), 1e-5 if dt == torch.float32 else 3e-3)

    def test_eager_calls_skip_the_dispatch_only_where_nothing_watches(self):
        torch, gt = self.torch, self.gt
        from torch.utils._python_dispatch import TorchDispatchMode
        x = torch.randn(8, 32, device="cuda", dtype=torch.float16)
        w = torch.randn(16, 32, device="cuda", dtype=torch.float16)
        b = torch.randn(16, device="cuda", dtype=torch.float16)
        on = gt._DIRECT  # False under GKO_TORCH_DIRECT=0
        self.assertEqual(gt._direct(x, w, b), on)
        self.assertEqual(gt._direct(x, w, None), on)
        wg = w.clone().requires_grad_()
        self.assertFalse(gt._direct(x, wg, b))  # autograd must record the operator
        with torch.no_grad():
            self.assertEqual(gt._direct(x, wg, b), on)
        # a module's weights (nn.Parameter): direct where no gradient is recorded
        wp = torch.nn.Parameter(w.clone())
        self.assertFalse(gt._direct(x, wp, b))
        with torch.no_grad():
            self.assertEqual(gt._direct(x, wp, b), on)
            self.assertTrue(torch.equal(gt.linear(x, wp, b), gt.linear(x, w, b)))
        self.assertFalse(gt._direct(x.cpu(), w, b))
        self.assertFalse(gt._direct(x, w.to_sparse(), b))
        # the same plan through either way: the same bits
        for act in ("none", "gelu"):
            direct = gt.linear(x, w, b, act)
            op = torch.ops.gko.linear(x, w, b, act, "auto")
            torch.cuda.synchronize()
            self.assertTrue(torch.equal(direct, op), act)

        class Seen(TorchDispatchMode):
            def __init__(self):
                super().__init__()
                self.ops = []

            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                self.ops.append(str(func))
                return func(*args, **(kwargs or {}))

        # a dispatch mode sees gko's operators, as without the fast path
        xc = torch.randn(2, 8, 9, 9, device="cuda", dtype=torch.float16)
        gt.linear(x, w, b, "relu")  # remembered: the mode must still see the operator
        with Seen() as mode:
            self.assertFalse(gt._direct(x))
            gt.linear(x, w, b, "relu")
            gt.gelu(x)
            gt.conv2d(xc, torch.randn(4, 8, 3, 3, device="cuda", dtype=torch.float16))
        for op in ("gko.linear.default", "gko.gelu.default", "gko.conv2d.default"):
            self.assertIn(op, mode.ops)
        # a torch.jit trace records the operator (this signature's call remembered or not)
        gt.linear(x, w, b)
        traced = torch.jit.trace(lambda a: gt.linear(a, w, b), (x,))
        self.assertIn("gko::linear", str(traced.graph))
        self.assertTrue(torch.equal(traced(x), gt.linear(x, w, b)))
        # and autograd records the operator: gradients flow
        y = gt.linear(x, wg, b)
        self.assertIsNotNone(y.grad_fn)
        y.float().sum().backward()
        self.assertLess(_rel(wg.grad, torch.ones(8, 16, device="cuda").t().mm(x.float())), 1e-3)

    def test_repeated_eager_calls_skip_the_checks_only_for_a_seen_signature(self):
        torch, gt, F = self.torch, self.gt, self.F
        if not gt._AGAIN:
            self.skipTest("the eager fast path is off (GKO_TORCH_DIRECT=0)")
        from unittest import mock
        f16 = dict(device="cuda", dtype=torch.float16)
        real, checked = gt._linear_cuda, []

        def counted(*args):
            checked.append(1)
            return real(*args)

        w = torch.randn(48, 40, **f16) / 8
        b = torch.randn(48, **f16)

        def run(x, w, b, act="gelu", want_checked=0, what=""):  # want_checked None: either
            before = len(checked)
            # poison: the output's block is likely the one this NaN tensor leaves
            torch.full((*x.shape[:-1], w.shape[0]), float("nan"), **f16)
            y = gt.linear(x, w, b, activation=act)
            ref = F.linear(x.double(), w.double(), None if b is None else b.double())
            ref = {"gelu": F.gelu, "relu": F.relu}[act](ref)
            torch.cuda.synchronize()
            self.assertEqual(y.shape, ref.shape, what)
            self.assertLess(_rel(y, ref), TOL["float16"], what)
            if want_checked is not None:
                self.assertEqual(len(checked) - before, want_checked, what)
            return y

        gt.clear_cache()
        with mock.patch.object(gt, "_linear_cuda", counted):
            run(torch.randn(33, 40, **f16), w, b, want_checked=1, what="first call")
            for i in range(3):  # new data, the same signature: no checks
                run(torch.randn(33, 40, **f16), w, b, what="again %d" % i)
            run(torch.randn(33, 40, **f16), w.clone(), b.clone(), what="other weights")
            run(torch.randn(33, 40, **f16), w, b, act="relu", want_checked=1, what="relu")
            run(torch.randn(33, 40, **f16), w, None, want_checked=1, what="no bias")
            run(torch.randn(33, 40, **f16), w, None, what="no bias again")
            run(torch.randn(34, 40, **f16), w, b, want_checked=1, what="other m")
            x3 = torch.randn(3, 11, 40, **f16)
            run(x3, w, b, want_checked=1, what="3-D")
            run(torch.randn(3, 11, 40, **f16), w, b, what="3-D again")
            odd = torch.randn(33 * 40 + 1, **f16)[1:].view(33, 40)  # 2-byte aligned
            run(odd, w, b, want_checked=1, what="misaligned")
            run(torch.randn(33 * 40 + 1, **f16)[1:].view(33, 40), w, b, what="misaligned again")
            xt = torch.randn(40, 33, **f16).t()  # copied each call: never remembered
            run(xt, w, b, want_checked=1, what="transposed x")
            run(xt, w, b, want_checked=1, what="transposed x again")
            wt = torch.randn(40, 48, **f16).t() / 8
            run(torch.randn(33, 40, **f16), wt, b, want_checked=1, what="transposed w")
            # a gradient to record: the operator, never the remembered call
            wg = w.clone().requires_grad_()
            y = run(torch.randn(33, 40, **f16), wg, b, want_checked=1, what="grad")
            self.assertIsNotNone(y.grad_fn)
            with torch.no_grad():
                y = run(torch.randn(33, 40, **f16), wg, b, what="grad, no_grad")
            self.assertIsNone(y.grad_fn)
            # another stream: its own workspace (made by a checked call where the plan needs one)
            s = torch.cuda.Stream()
            with torch.cuda.stream(s):
                run(torch.randn(33, 40, **f16), w, b, want_checked=None, what="side stream")
                run(torch.randn(33, 40, **f16), w, b, what="side stream again")
            # a neg view's memory holds -x: the operator resolves it, never the remembered call
            xn = torch.randn(33, 40, **f16)
            y = gt.linear(torch._neg_view(xn), w, b, activation="gelu")
            ref = F.gelu(F.linear(-xn.double(), w.double(), b.double()))
            self.assertLess(_rel(y, ref), TOL["float16"], "neg view")
            # options that could compare equal to others are not remembered
            n_calls = len(gt._CALLS)
            gt.linear(torch.randn(33, 40, **f16), w, b, activation="gelu", backend="AUTO")
            self.assertEqual(len(gt._CALLS), n_calls + 1, "a new backend string")
            st = torch.tensor(2)
            wc = torch.randn(16, 40, 3, 3, **f16)
            gt.conv2d(torch.randn(1, 40, 9, 9, **f16), wc, stride=(2, 2))
            self.assertEqual(len(gt._CALLS), n_calls + 2, "a tuple stride")
            gt.conv2d(torch.randn(1, 40, 9, 9, **f16), wc, stride=st)
            self.assertEqual(len(gt._CALLS), n_calls + 2, "a tensor stride")
            torch.cuda.synchronize()
            # CPU tensors never reach the remembered call (a dispatch mode: the test above)
            with self.assertRaises(Exception):
                gt.linear(torch.randn(33, 40, dtype=torch.float16), w.cpu(), b.cpu(), "gelu")
            gt.clear_cache()
            self.assertEqual(len(gt._CALLS), 0)
            run(torch.randn(33, 40, **f16), w, b, want_checked=1, what="after clear_cache")

        real_conv, convs = gt._conv_cuda, []

        def counted_conv(*args):
            convs.append(1)
            return real_conv(*args)

        bc = torch.randn(16, **f16)
        with mock.patch.object(gt, "_conv_cuda", counted_conv):
            for fmt in (torch.contiguous_format, torch.channels_last):
                wc = (torch.randn(16, 8, 3, 3, **f16) / 8).to(memory_format=fmt)
                for i, stride in enumerate((2, 2, 2, (2, 1), [2, 2])):
                    x = torch.randn(2, 8, 9, 9, **f16).to(memory_format=fmt)
                    before = len(convs)
                    y = gt.conv2d(x, wc, bc, stride=stride, padding=1, activation="relu")
                    ref = F.relu(F.conv2d(x.double(), wc.double(), bc.double(), stride=stride,
                                          padding=1))
                    torch.cuda.synchronize()
                    what = "conv %s call %d stride %s" % (fmt, i, stride)
                    self.assertEqual(y.shape, ref.shape, what)
                    self.assertTrue(y.is_contiguous(memory_format=fmt), what)
                    self.assertLess(_rel(y, ref), TOL["float16"], what)
                    # checked: the first call, a new stride, and always for a list (unhashable)
                    self.assertEqual(len(convs) - before, 0 if i in (1, 2) else 1, what)

    def test_opcheck(self):
        torch = self.torch
        ops = torch.ops.gko
        x = torch.randn(6, 32, device="cuda", dtype=torch.float16)
        w = torch.randn(16, 32, device="cuda", dtype=torch.float16)
        b = torch.randn(16, device="cuda", dtype=torch.float16)
        torch.library.opcheck(ops.linear.default, (x, w, b, "gelu", "auto"))
        torch.library.opcheck(ops.linear.default, (x.float().requires_grad_(), w.float(), None,
                                                   "relu", "auto"))
        torch.library.opcheck(ops.gelu.default, (x, "tanh"))
        xc = torch.randn(2, 8, 9, 9, device="cuda").to(memory_format=torch.channels_last)
        torch.library.opcheck(ops.conv2d.default, (xc, torch.randn(4, 8, 3, 3, device="cuda"),
                                                   None, [1, 1], [1, 1], [1, 1], 1, "relu"))
        a = (torch.randn(20, 10, device="cuda") * (torch.rand(20, 10, device="cuda") < 0.3))
        a = a.to_sparse_csr()
        # plain copies: views of a sparse tensor cannot be fakified
        torch.library.opcheck(ops.spmm.default, (a.crow_indices().clone(), a.col_indices().clone(),
                                                 a.values().clone(), 20, 10,
                                                 torch.randn(10, 8, device="cuda")))

    def _small_model(self):
        torch, gt = self.torch, self.gt

        class Small(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.conv = gt.Conv2d(3, 16, 3, padding=1, activation="relu")
                self.fc1 = gt.Linear(16 * 8 * 8, 64, activation="gelu")
                self.fc2 = gt.Linear(64, 10)

            def forward(self, x):
                h = gt.gelu(self.conv(x), "tanh")
                return self.fc2(self.fc1(h.flatten(1)))

        return Small().cuda().half().eval()

    def test_compile_without_graph_breaks(self):
        torch = self.torch
        m = self._small_model()
        x = torch.randn(4, 3, 8, 8, device="cuda", dtype=torch.float16)
        with torch.no_grad():
            eager = m(x)
            torch._dynamo.reset()
            ex = torch._dynamo.explain(m)(x)
            self.assertEqual(ex.graph_break_count, 0, str(ex.break_reasons))
            self.assertEqual(ex.graph_count, 1)
            torch._dynamo.reset()
            compiled = torch.compile(m, fullgraph=True)
            got = compiled(x)
            torch.cuda.synchronize()
            self.assertLess(_rel(got, eager), 1e-3)
            x2 = torch.randn(4, 3, 8, 8, device="cuda", dtype=torch.float16)
            self.assertLess(_rel(compiled(x2), m(x2)), 1e-3)
        torch._dynamo.reset()

    def test_cuda_graph_capture(self):
        torch, gt = self.torch, self.gt
        m = self._small_model()
        x = torch.randn(4, 3, 8, 8, device="cuda", dtype=torch.float16)
        with torch.no_grad():
            # warm up on the stream the capture runs on: gko.torch's
            # workspaces are per (device, stream) and never made in a capture
            s = torch.cuda.Stream()
            s.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(s):  # plans and workspaces made before capture
                for _ in range(3):
                    m(x)
            torch.cuda.current_stream().wait_stream(s)
            torch.cuda.synchronize()
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g, stream=s):
                out = m(x)
            for _ in range(2):
                x.copy_(torch.randn_like(x))
                g.replay()
                torch.cuda.synchronize()
                self.assertLess(_rel(out, m(x)), 1e-3)
            y = torch.randn(33, 64, device="cuda", dtype=torch.float16)
            lin = m.fc2
            with torch.cuda.stream(s):
                gt.gelu(lin(y))
            torch.cuda.current_stream().wait_stream(s)
            torch.cuda.synchronize()
            g2 = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g2, stream=s):
                o2 = gt.gelu(lin(y))
            y.copy_(torch.randn_like(y))
            g2.replay()
            torch.cuda.synchronize()
            self.assertLess(_rel(o2, self.F.gelu(lin(y).float())), 3e-3)
        del g, g2


if __name__ == "__main__":
    unittest.main()
