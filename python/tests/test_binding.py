"""Binding tests: host-only parts run everywhere; GPU parts need torch with
CUDA and skip otherwise."""
import os
import re
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import gko  # noqa: E402
import gko.fp8  # noqa: E402
import gko.gemm  # noqa: E402

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
        # are cached per key, the oldest closed past the limit, all closed
        # before gko_destroy, and a closed handle refuses to hand one out.
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
        self.assertEqual(events, ["close a"])
        real = gko.library
        gko.library = lambda: FakeLib()
        try:
            h.close()
        finally:
            gko.library = real
        self.assertEqual(events, ["close a", "close b", "close c", "destroy"])
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
