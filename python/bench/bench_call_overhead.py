"""Call overhead of a planned GEMM: gko's C call, gko's Python call, torch's call.

For bench_gemm's shapes (BERT QKV 4096x2304x768, FFN1 4096x3072x768,
odd1000) and a tiny 64x64x64 where the overhead is everything, f16, a @ b
row-major (what bench_gemm times against torch.matmul):

  dev_us     device time per call, CUDA-graph replay (harness.device_time)
  lat_us     one call + a sync of its stream on the host clock, median of
             --reps (what gko-bench's latency_us is in C), taken --rounds
             times in turn with the other latencies (median of the medians).
             Python's calls are timed with two syncs: torch's
             Stream.synchronize (py_lat, what a torch user calls) and the
             runtime's cudaStreamSynchronize through ctypes (py_raw: the sync
             the C loop makes directly; the extra cost of calling it from
             Python is still charged to Python)
  over_us    lat_us - dev_us: what the host adds to one call
  host_us    host time per call of back-to-back enqueues (the loop's wall time
             over its calls while the GPU works; gko-bench's host_us)
  *_sub      within a latency, the time to the call's return (the host's
             submit; the rest is the sync's wait), C in this process and
             Python with the raw sync
  Cin_gap    C's latency in this process with --c-gap µs (default 3) of
             idle host time before each call, untimed: whether the GPU's
             idling between calls (longer between Python's) changes it
  py - C     gko's Python latency with the raw sync - the C latency (target:
             <= 5 us), C being the same call made from C in the same process
             (c_call_loop.c, built with cc at run time: the same cuBLASLt
             and CUDA runtime loaded as the Python call, which torch's
             process chooses); gko-bench's figures (its own process, the
             system's libraries) are printed next to it

gko Python is Plan.execute(a, b, y) on torch's current stream (and, in
--json, with stream= an int).  torch is torch.matmul(a, b) (and, in --json,
with out=).  The C figures come from gko-bench (`gko-bench --json F gemm
--m M --n N --k K --dtype f16`, one subprocess per shape, run before the
Python timings), or from --c-json FILE (a gko-bench --json output holding
those rows).  --stream side (the default) runs the Python calls on a
non-blocking side stream, as gko-bench does; default: torch's default stream;
both: each.

    PYTHONPATH=python python3 python/bench/bench_call_overhead.py [--c-bench PATH |
        --c-json FILE | --no-c] [--stream side|default|both] [--torch-ops] [--json FILE]
        [--markdown]

--host-mock needs no GPU (torch on the CPU is enough): the host cost of
Plan.execute's fast path with the C function replaced by a no-op foreign
function of the same signature (libc's abs through ctypes, with
gko_gemm_execute's argtypes, called with a NULL plan: it returns 0), on CPU
tensors whose metadata is primed as a passed check would leave it; next to
it the ctypes call alone and the checked path (non-torch arrays, every
check on every call).  1e5 calls per figure, the best of 5 repetitions.

    PYTHONPATH=python python3 python/bench/bench_call_overhead.py --host-mock [--json FILE]
"""
import argparse
import ctypes
import importlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, HERE)

SHAPES = [("bert_qkv", 4096, 2304, 768), ("bert_ffn1", 4096, 3072, 768),
          ("odd1000", 1000, 1000, 1000), ("tiny64", 64, 64, 64)]


# ---------------------------------------------------------------------------
# host-only: the Python share with a no-op C function
# ---------------------------------------------------------------------------

def _noop_execute():
    """libc's abs with gko_gemm_execute's prototype: a real foreign call
    (argument conversion, GIL release) that returns 0 for a NULL plan."""
    import gko
    V, F = ctypes.c_void_p, ctypes.c_float
    fn = ctypes.CDLL(None).abs
    fn.restype = gko._status_t
    fn.argtypes = [V, F, V, V, F, V, V, V, V, ctypes.c_size_t, gko._stream_t]
    return fn


def _mock_plan(m, n, k, fn, **attrs):
    """A gko.gemm.Plan whose operands are those of Desc(f16, m, n, k,
    **attrs) (a host-only object) and whose C call is fn; no GPU needed."""
    import gko.gemm as gg
    desc = gg.Desc("f16", "f16", m, n, k, **attrs)
    geometry = {a: desc.get(a) for a in gg._GEOMETRY}
    desc.close()
    p = gg.Plan.__new__(gg.Plan)
    p._p = None  # NULL: the stand-in returns 0, and close() has nothing to free
    p._bind(geometry, execute=fn)
    p._need = 0  # no workspace
    return p


def _per_call_us(fn, n, reps=5):
    best = None
    for _ in range(reps):
        t0 = time.perf_counter_ns()
        for _ in range(n):
            fn()
        t = (time.perf_counter_ns() - t0) / n / 1e3
        best = t if best is None or t < best else best
    return best


class _CaiArray:
    """A device array by its interface alone (never dereferenced)."""

    def __init__(self, shape, ptr):
        self.__cuda_array_interface__ = {"shape": shape, "typestr": "<f2", "data": (ptr, False),
                                         "strides": None, "version": 3}


def host_mock(n_calls=100000):
    import torch
    fn = _noop_execute()
    m = n = k = 64
    p = _mock_plan(m, n, k, fn)
    pb = _mock_plan(m, n, k, fn, epilogue="bias")
    a, b, y = (torch.empty(64, 64, dtype=torch.float16) for _ in range(3))
    bias = torch.empty(64, dtype=torch.float16)

    def meta(*ts):  # what execute() compares with, as a passed check leaves it
        out = []
        for t in ts[:3]:
            out += [t.shape, t.stride(), t.dtype, t.get_device()]
        for t in ts[3:]:
            out.append(None if t is None else (t.shape, t.stride(), t.dtype, t.get_device()))
        return tuple(out)

    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    p._seen, p._rs = meta(a, b, y, None, None), (lambda i: 0)
    pb._seen, pb._rs = meta(a, b, y, y, bias), (lambda i: 0)
    calls = []

    def check_fast():  # the stand-in must be reached with the tensors' pointers
        rec = _mock_plan(m, n, k, lambda *args: calls.append(args) or 0)
        rec._seen, rec._rs = p._seen, (lambda i: 7)
        rec.execute(a, b, y)
        want = (None, 1.0, a.data_ptr(), b.data_ptr(), 0.0, None, y.data_ptr(), None, None, 0, 7)
        if calls != [want]:
            raise SystemExit("host mock: the fast path did not make the expected call: %r" % calls)
    check_fast()
    pa, pbp, pd = a.data_ptr(), b.data_ptr(), y.data_ptr()
    cai = [_CaiArray((64, 64), 1 << 20), _CaiArray((64, 64), 1 << 21), _CaiArray((64, 64), 1 << 22)]
    rows = [
        ("ctypes call alone (11 arguments)",
         lambda: fn(None, 1.0, pa, pbp, 0.0, None, pd, None, None, 0, 0)),
        ("execute(a, b, y) -- stream: torch's current (stand-in)", lambda: p.execute(a, b, y)),
        ("execute(a, b, y, stream=0)", lambda: p.execute(a, b, y, stream=0)),
        ("execute(a, b, y, c=y, bias=bias, beta=1.0) (epilogue bias)",
         lambda: pb.execute(a, b, y, c=y, bias=bias, beta=1.0)),
        ("checked path: CUDA-array-interface operands (every check)",
         lambda: p.execute(cai[0], cai[1], cai[2], stream=0)),
    ]
    try:
        from gko import _fastcall
    except ImportError:
        _fastcall = None
    if _fastcall is not None:  # the same stand-in through gko._fastcall instead of ctypes
        fc, addr = _fastcall.gemm_execute, ctypes.cast(fn, ctypes.c_void_p).value
        pf = _mock_plan(m, n, k, fn)
        pf._seen, pf._rs, pf._fast, pf._addr = p._seen, p._rs, fc, addr
        rows += [("gko._fastcall call alone (12 arguments)",
                  lambda: fc(addr, None, 1.0, pa, pbp, 0.0, None, pd, None, None, 0, 0)),
                 ("execute(a, b, y) through gko._fastcall", lambda: pf.execute(a, b, y))]
    print("# host cost per call (us), %d calls, best of 5; C function: a no-op of the same "
          "signature; torch %s, Python %s" % (n_calls, torch.__version__,
                                               sys.version.split()[0]))
    out = []
    for name, f in rows:
        us = _per_call_us(f, n_calls)
        out.append(dict(case=name, us_per_call=us))
        print("%-62s %7.2f" % (name, us))
    if raw is None:
        print("# torch has no _cuda_getCurrentRawStream: the stream query falls back to "
              "torch.cuda.current_stream(i).cuda_stream (microseconds)")
    else:
        print("# on a GPU the stream query is torch._C._cuda_getCurrentRawStream (not timed "
              "here: it needs a device)")
    return out


# ---------------------------------------------------------------------------
# GPU: gko C vs gko Python vs torch
# ---------------------------------------------------------------------------

def c_rows_from_bench(path, shapes, verbose):
    rows = []
    for name, m, n, k in shapes:
        with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
            out = f.name
        cmd = [path, "--json", out, "gemm", "--m", str(m), "--n", str(n), "--k", str(k),
               "--dtype", "f16"]
        print("# C: %s" % " ".join(cmd))
        sys.stdout.flush()
        r = subprocess.run(cmd, capture_output=True, text=True)
        if verbose or r.returncode != 0:
            print(r.stdout + r.stderr)
        if r.returncode == 0:
            with open(out) as f:
                rows += json.load(f)
        os.unlink(out)
    return rows


def c_row_for(rows, m, n, k):
    for r in rows:
        if (r.get("op") == "gemm" and r.get("m") == m and r.get("n") == n and r.get("k") == k
                and r.get("dtype") == "f16" and not r.get("transb") and r.get("batch", 1) == 1
                and r.get("form", "none") == "none" and r.get("ok", 1)
                and r.get("requested_backend", "auto") == "auto" and not r.get("static")):
            return r
    return None


def lat_us(fn, sync, reps, warmup=10):
    for _ in range(warmup):
        fn()
    sync()
    t = []
    for _ in range(reps):
        t0 = time.perf_counter_ns()
        fn()
        sync()
        t.append(time.perf_counter_ns() - t0)
    return statistics.median(t) / 1e3


def lat_split_us(fn, sync, reps, warmup=10):
    """(latency, submit): lat_us's figure and the median time to fn()'s
    return within it (the host's part before the sync)"""
    for _ in range(warmup):
        fn()
    sync()
    t, sub = [], []
    for _ in range(reps):
        t0 = time.perf_counter_ns()
        fn()
        t1 = time.perf_counter_ns()
        sync()
        t.append(time.perf_counter_ns() - t0)
        sub.append(t1 - t0)
    return statistics.median(t) / 1e3, statistics.median(sub) / 1e3


def host_us(fn, sync, calls=100, reps=11):
    fn()
    sync()
    t = []
    for _ in range(reps):
        t0 = time.perf_counter_ns()
        for _ in range(calls):
            fn()
        t.append((time.perf_counter_ns() - t0) / calls)
        sync()
    return statistics.median(t) / 1e3


class InProcessC:
    """c_call_loop.c built with cc into a temporary directory and loaded here:
    the planned call made from C in this process.  None where there is no cc."""

    def __init__(self, lib_execute):
        import shutil
        cc = os.environ.get("CC", "cc")
        if shutil.which(cc) is None:
            raise OSError("no %s: no in-process C figures" % cc)
        with tempfile.TemporaryDirectory(prefix="gko-ccl-") as d:
            so = os.path.join(d, "c_call_loop.so")
            subprocess.run([cc, "-O2", "-shared", "-fPIC", os.path.join(HERE, "c_call_loop.c"),
                            "-o", so], check=True)
            self.lib = ctypes.CDLL(so)  # loaded: the file may go
        V, Z, I, D = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.POINTER(ctypes.c_double)
        self.lib.c_latency.argtypes = [V] * 7 + [Z, V, I, D, D, ctypes.c_double]
        self.lib.c_host.argtypes = [V] * 7 + [Z, V, I, I, D]
        self.fn = ctypes.cast(lib_execute, ctypes.c_void_p).value
        # the CUDA runtime this process loaded (torch's), for the stream sync
        rt = sorted({line.split()[-1] for line in open("/proc/self/maps")
                     if "libcudart.so" in line})
        if not rt:
            raise OSError("no libcudart in this process: no in-process C figures")
        self._rt_sync = ctypes.CDLL(rt[0]).cudaStreamSynchronize
        self._rt_sync.argtypes, self._rt_sync.restype = [V], I
        self.sync = ctypes.cast(self._rt_sync, ctypes.c_void_p).value
        self.runtime = rt[0]

    def raw_sync(self, stream):
        """f() -> the runtime's cudaStreamSynchronize(stream) through ctypes:
        the sync the C loop makes, at the least a Python call costs."""
        f = self._rt_sync
        return lambda: f(stream)

    def figures(self, plan, pa, pb, y, stream, reps, gap_us=0.0):
        """(latency, host time per call, submit, latency with gap_us of idle
        host time before each call) in µs of the plan's call from C with y as
        D, on stream, with the plan-held workspace of that stream; submit:
        the call's return within the latency."""
        ws, nws = plan._workspace(y, stream)
        p, pd = plan._p.value, y.data_ptr()
        out = (ctypes.c_double * max(reps, 11))()
        sub = (ctypes.c_double * reps)()
        st = self.lib.c_latency(self.fn, self.sync, p, pa, pb, pd, ws, nws, stream, reps, out,
                                sub, gap_us)
        if st:
            raise RuntimeError("gko_gemm_execute from C: status %d" % st)
        gap_lat = statistics.median(out[:reps])
        st = self.lib.c_latency(self.fn, self.sync, p, pa, pb, pd, ws, nws, stream, reps, out,
                                sub, 0.0)
        if st:
            raise RuntimeError("gko_gemm_execute from C: status %d" % st)
        lat, submit = statistics.median(out[:reps]), statistics.median(sub[:reps])
        st = self.lib.c_host(self.fn, self.sync, p, pa, pb, pd, ws, nws, stream, 100, 11, out)
        if st:
            raise RuntimeError("gko_gemm_execute from C: status %d" % st)
        return lat, statistics.median(out[:11]), submit, gap_lat


def gpu(args):
    import torch
    import gko
    import gko.gemm as gg
    from harness import device_time

    c_rows, c_note = [], None
    if args.c_json:
        with open(args.c_json) as f:
            c_rows = json.load(f)
    elif not args.no_c:
        if os.path.exists(args.c_bench):
            c_rows = c_rows_from_bench(args.c_bench, SHAPES, args.verbose)
        else:
            c_note = "no %s (make bench), no --c-json: C columns empty" % args.c_bench
    torch.manual_seed(0)
    h = gko.Handle()
    try:
        inproc = InProcessC(gg._lib().gko_gemm_execute)
    except (OSError, subprocess.CalledProcessError) as e:
        inproc = None
        c_note = (c_note + "; " if c_note else "") + str(e)
    print("# %s, torch %s, %s" % (torch.cuda.get_device_name(), torch.__version__,
                                  gko.diagnostics(0).splitlines()[0]))
    print("# stream query: %s" % ("torch._C._cuda_getCurrentRawStream"
                                  if hasattr(torch._C, "_cuda_getCurrentRawStream")
                                  else "torch.cuda.current_stream().cuda_stream"))
    try:
        importlib.import_module("gko._fastcall")
        binding = "gko._fastcall"
    except ImportError:
        binding = ("ctypes: gko._fastcall is not importable (build it with make, "
                   "python/gko/_fastcall.c), so the Python rows pay ctypes' argument conversion")
    print("# binding: %s" % binding)
    if c_note:
        print("# " + c_note)
    if inproc:
        print("# Cin: the same call from C in this process (c_call_loop.c; runtime %s)"
              % inproc.runtime)
    print("# dev: CUDA-graph replay; lat: one call + stream sync (median of %d, %d rounds); "
          "py_lat/tch_lat: torch's Stream.synchronize, py_raw: cudaStreamSynchronize through "
          "ctypes; host: per call of %d back-to-back calls; py-Cin: py_raw - Cin_lat; py-C: gko "
          "Python over - gko-bench's over; sync/raw: the two syncs alone; Cin_sub/py_sub: the "
          "call's return within Cin_lat/py_raw (the rest is the wait in the sync); Cin_gap: "
          "Cin_lat with %.1f us of idle host time before each call (--c-gap)"
          % (args.reps, args.rounds, 100, args.c_gap))
    hdr = ("%-22s %-7s | %7s %7s | %7s %7s %7s %7s %7s | %7s %7s %7s | %6s %6s | %6s | %7s %7s "
           "%8s | %7s %7s %7s" % ("case", "stream", "gko_dev", "tch_dev", "Cin_lat", "C_lat",
                                  "py_lat", "py_raw", "tch_lat", "Cin_hst", "C_host", "py_host",
                                  "py-Cin", "py-C", "t/py", "sync", "raw", "err", "Cin_sub",
                                  "py_sub", "Cin_gap"))
    print(hdr)
    streams = ["side", "default"] if args.stream == "both" else [args.stream]
    rows = []
    for name, m, n, k in SHAPES:
        a = torch.randn(m, k, device="cuda").half()
        b = torch.randn(k, n, device="cuda").half()
        y = torch.empty(m, n, device="cuda", dtype=torch.float16)
        plan = gg.Plan(h, torch.float16, torch.float16, m, n, k)
        cr = c_row_for(c_rows, m, n, k)
        for which in streams:
            side = torch.cuda.Stream() if which == "side" else None
            ctx = torch.cuda.stream(side) if side is not None else torch.cuda.stream(
                torch.cuda.current_stream())
            with ctx:
                s = torch.cuda.current_stream()
                sync = s.synchronize
                sint = s.cuda_stream
                g_fn = lambda: plan.execute(a, b, y)  # noqa: E731
                gi_fn = lambda: plan.execute(a, b, y, stream=sint)  # noqa: E731
                t_fn = lambda: torch.matmul(a, b)  # noqa: E731
                to_fn = lambda: torch.matmul(a, b, out=y)  # noqa: E731
                g_fn()
                sync()
                ref = a[:64].float() @ b.float()
                err = ((y[:64].float() - ref).abs().max() / ref.abs().max()).item()
                fast = plan._seen is not None
                g_dev, t_dev = device_time(g_fn), device_time(t_fn)
                raw = inproc.raw_sync(sint) if inproc else None
                # rounds of every latency in turn: the median over rounds of
                # each round's median, so slow drift on the host hits all alike
                runs = {}
                for _ in range(args.rounds):
                    for key, f_, s_ in (("sync_only", lambda: None, sync),
                                        ("sync_raw_only", lambda: None, raw),
                                        ("g_lat", g_fn, sync), ("g_raw", g_fn, raw),
                                        ("gi_lat", gi_fn, sync), ("t_lat", t_fn, sync),
                                        ("t_raw", t_fn, raw), ("to_lat", to_fn, sync)):
                        if s_ is None:
                            continue
                        if key == "g_raw":  # with its submit, for the split against C's
                            lat, sub = lat_split_us(f_, s_, args.reps)
                            runs.setdefault("g_raw_sub", []).append(sub)
                        else:
                            lat = lat_us(f_, s_, args.reps)
                        runs.setdefault(key, []).append(lat)
                    if inproc:
                        runs.setdefault("ci", []).append(inproc.figures(
                            plan, a.data_ptr(), b.data_ptr(), y, sint, args.reps, args.c_gap))
                mid = {key: statistics.median(v) for key, v in runs.items() if key != "ci"}
                sync_only, g_lat, gi_lat = mid["sync_only"], mid["g_lat"], mid["gi_lat"]
                t_lat, to_lat = mid["t_lat"], mid["to_lat"]
                g_raw, t_raw, sync_raw = (mid.get("g_raw"), mid.get("t_raw"),
                                          mid.get("sync_raw_only"))
                g_host = host_us(g_fn, sync)
                t_host = host_us(t_fn, sync)
                ci_lat, ci_host, ci_sub = ((statistics.median(v[0] for v in runs["ci"]),
                                            statistics.median(v[1] for v in runs["ci"]),
                                            statistics.median(v[2] for v in runs["ci"]))
                                           if inproc else (None, None, None))
                g_sub = mid.get("g_raw_sub")
                ci_gap = statistics.median(v[3] for v in runs["ci"]) if inproc else None
            c_lat = cr["latency_us"] if cr else None
            c_dev = cr["graph_us"] if cr else None
            c_over = c_lat - c_dev if cr else None
            r = dict(case="%s %dx%dx%d" % (name, m, n, k), m=m, n=n, k=k, dtype="f16",
                     stream=which, fast_path=fast, gko_dev_us=g_dev, torch_dev_us=t_dev,
                     c_latency_us=c_lat, c_graph_us=c_dev, c_host_us=cr["host_us"] if cr else None,
                     c_over_us=c_over, py_latency_us=g_lat, py_latency_int_stream_us=gi_lat,
                     torch_latency_us=t_lat, torch_out_latency_us=to_lat,
                     py_over_us=g_lat - g_dev, torch_over_us=t_lat - t_dev,
                     py_host_us=g_host, torch_host_us=t_host, sync_only_us=sync_only,
                     py_minus_c_us=(g_lat - g_dev) - c_over if cr else None,
                     c_inproc_latency_us=ci_lat, c_inproc_host_us=ci_host,
                     py_minus_c_inproc_torch_sync_us=g_lat - ci_lat if ci_lat is not None
                     else None,
                     py_latency_raw_sync_us=g_raw, torch_latency_raw_sync_us=t_raw,
                     sync_raw_only_us=sync_raw,
                     py_minus_c_inproc_us=g_raw - ci_lat if ci_lat is not None else None,
                     c_inproc_submit_us=ci_sub, py_submit_us=g_sub,
                     c_gap_us=args.c_gap, c_inproc_gap_latency_us=ci_gap,
                     py_fastcall=plan._fast is not None,
                     lat_ratio=t_lat / g_lat, max_rel_err=err)
            rows.append(r)
            f = lambda v, fmt="%7.1f": (fmt % v) if v is not None else "%7s" % "-"  # noqa: E731
            print("%-22s %-7s | %7.1f %7.1f | %s %s %7.1f %s %7.1f | %s %s %7.2f | %s %s | %5.2fx | "
                  "%7.1f %s %8.1e | %s %s %s%s%s" % (
                      r["case"][:22], which, g_dev, t_dev, f(ci_lat), f(c_lat), g_lat, f(g_raw),
                      t_lat, f(ci_host, "%7.2f"), f(r["c_host_us"], "%7.2f"), g_host,
                      f(r["py_minus_c_inproc_us"], "%6.1f"), f(r["py_minus_c_us"], "%6.1f"),
                      r["lat_ratio"], sync_only, f(sync_raw), err, f(ci_sub), f(g_sub),
                      f(ci_gap),
                      "" if fast else "  (fast path NOT taken)",
                      "" if r["py_fastcall"] else "  (ctypes)"))
            sys.stdout.flush()
        plan.close()
        del a, b, y
    if args.torch_ops:
        rows += torch_ops(args)
    verdict = []
    for r in rows:
        if "py_minus_c_us" not in r:
            continue
        gap = r["py_minus_c_inproc_us"]  # against C in this process where measured
        gap = r["py_minus_c_us"] if gap is None else gap
        ok_c = gap is None or gap <= 5.0
        ok_t = r["py_latency_us"] <= r["torch_latency_us"]
        verdict.append(ok_c and ok_t)
        if not (ok_c and ok_t):
            print("# MISS %s (%s): %s%s" % (
                r["case"], r["stream"], "" if ok_c else "py - C = %.1f us > 5; " % gap,
                "" if ok_t else "gko %.1f us > torch %.1f us" % (
                    r["py_latency_us"], r["torch_latency_us"])))
    print("# %d of %d rows within 5 us of C and at or below torch's latency"
          % (sum(verdict), len(verdict)))
    if args.markdown:
        print()
        print("| case | stream | device µs (gko / torch) | C latency µs (this process / "
              "gko-bench) | Python latency µs (raw sync / torch sync) | torch latency µs "
              "(torch sync) | Python − C µs (raw sync / torch sync) | host µs per call (C here / "
              "Python) | torch / Python |")
        print("|---|---|---|---|---|---|---|---|---|")
        for r in rows:
            if "py_minus_c_us" not in r:
                continue
            g = lambda v, fmt="%.1f": (fmt % v) if v is not None else "—"  # noqa: E731
            print("| %s | %s | %.1f / %.1f | %s / %s | %s / %.1f | %.1f | %s / %s | %s / %.1f | "
                  "%.2f× |" % (r["case"], r["stream"], r["gko_dev_us"], r["torch_dev_us"],
                               g(r["c_inproc_latency_us"]), g(r["c_latency_us"]),
                               g(r["py_latency_raw_sync_us"]), r["py_latency_us"],
                               r["torch_latency_us"], g(r["py_minus_c_inproc_us"]),
                               g(r["py_minus_c_inproc_torch_sync_us"]),
                               g(r["c_inproc_host_us"]), r["py_host_us"], r["lat_ratio"]))
    return rows


def torch_ops(args):
    """gko.torch.linear (eager: the direct call, after the first call of a
    signature the remembered one), its checked direct call (argument
    checks, plan lookup, Plan.execute: every call's path before calls were
    remembered) and torch.ops.gko.linear (through torch.library's dispatch)
    next to F.linear on x [m, k] and W [n, k]."""
    import torch
    import torch.nn.functional as F
    import gko.torch as gt
    from harness import device_time
    print("# gko.torch.linear (eager: its remembered direct call), its checked direct call "
          "(chk) and torch.ops.gko.linear (the custom op's dispatch) vs F.linear, "
          "x [m, k] @ W[n, k]^T, f16, current stream; *_ovr: latency - device time")
    print("%-22s | %7s %7s | %7s %7s %7s %7s | %7s %7s %7s %7s | %6s %6s" % (
        "case", "gko_dev", "tch_dev", "gko_lat", "chk_lat", "op_lat", "tch_lat", "gko_ovr",
        "chk_ovr", "op_ovr", "tch_ovr", "t/gko", "t/op"))
    out = []
    for name, m, n, k in SHAPES:
        x = torch.randn(m, k, device="cuda").half()
        w = (torch.randn(n, k, device="cuda") / 8).half()
        sync = torch.cuda.current_stream().synchronize
        g_fn = lambda: gt.linear(x, w)  # noqa: E731
        c_fn = lambda: gt._linear_cuda(x, w, None, "none", "auto")  # noqa: E731
        o_fn = lambda: torch.ops.gko.linear(x, w, None, "none", "auto")  # noqa: E731
        t_fn = lambda: F.linear(x, w)  # noqa: E731
        g_dev, t_dev = device_time(g_fn), device_time(t_fn)
        g_lat, c_lat = lat_us(g_fn, sync, args.reps), lat_us(c_fn, sync, args.reps)
        o_lat, t_lat = lat_us(o_fn, sync, args.reps), lat_us(t_fn, sync, args.reps)
        r = dict(case="torch.linear %s %dx%dx%d" % (name, m, n, k), m=m, n=n, k=k,
                 gko_dev_us=g_dev, torch_dev_us=t_dev, direct_latency_us=g_lat,
                 checked_latency_us=c_lat, op_latency_us=o_lat, torch_latency_us=t_lat,
                 direct_over_us=g_lat - g_dev, checked_over_us=c_lat - g_dev,
                 op_over_us=o_lat - g_dev, torch_over_us=t_lat - t_dev)
        out.append(r)
        print("%-22s | %7.1f %7.1f | %7.1f %7.1f %7.1f %7.1f | %7.1f %7.1f %7.1f %7.1f | "
              "%5.2fx %5.2fx" % (
                  r["case"][:22], g_dev, t_dev, g_lat, c_lat, o_lat, t_lat, r["direct_over_us"],
                  r["checked_over_us"], r["op_over_us"], r["torch_over_us"], t_lat / g_lat,
                  t_lat / o_lat))
        sys.stdout.flush()
        del x, w
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--host-mock", action="store_true",
                    help="host cost of the fast path with a no-op C function (no GPU needed)")
    ap.add_argument("--c-bench", default=os.path.join(HERE, "..", "..", "build", "bin",
                                                      "gko-bench"),
                    help="gko-bench to run for the C figures (default: build/bin/gko-bench)")
    ap.add_argument("--c-json", help="a gko-bench --json output with the C rows (no subprocess)")
    ap.add_argument("--no-c", action="store_true", help="no C figures")
    ap.add_argument("--stream", choices=("side", "default", "both"), default="side")
    ap.add_argument("--reps", type=int, default=200, help="latency samples per figure")
    ap.add_argument("--rounds", type=int, default=3,
                    help="latency figures taken in turn this many times (median of medians)")
    ap.add_argument("--c-gap", type=float, default=3.0,
                    help="idle host time (µs) before each call of the Cin_gap figure: C's "
                    "latency when the GPU idles between calls as long as between Python's")
    ap.add_argument("--torch-ops", action="store_true",
                    help="also gko.torch.linear (direct and through the custom operator) "
                    "vs F.linear")
    ap.add_argument("--json")
    ap.add_argument("--markdown", action="store_true", help="a table for docs/performance.md")
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args()
    if args.host_mock:
        out = dict(host_mock=host_mock())
    else:
        out = dict(rows=gpu(args))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
