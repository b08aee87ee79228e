"""Timing helpers shared by the Python comparisons (gko through ctypes next to
PyTorch, one process, same inputs).

device_time(fn): the GPU's own cost per call -- `calls` calls captured into one
CUDA graph, replayed `reps` times between CUDA events after warm-up; median.
stream_time(fn): the same from back-to-back launches between two events.
latency(fn): one call from the host until its work is done (includes each
library's host-side dispatch); median.
Never compare one with the other."""
import statistics
import time

import torch


def capture(fn, calls=1, warmup=3):
    """(graph, output of the last call): `calls` calls of fn captured into
    one CUDA graph after warm-up on a side stream (the output tensor belongs
    to the graph and is rewritten by each replay)."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(warmup):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    out = None
    with torch.cuda.graph(g):
        for _ in range(calls):
            out = fn()
    torch.cuda.synchronize()
    return g, out


def device_time(fn, calls=20, reps=15, warmup=3):
    g, _ = capture(fn, calls, warmup)
    g.replay()
    torch.cuda.synchronize()
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(reps):
        a.record()
        g.replay()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) * 1000.0 / calls)
    del g
    return statistics.median(times)


def stream_time(fn, calls=10, reps=15, warmup=3):
    """Device time without a graph: `calls` back-to-back launches on the
    current stream between two events; median per call.  For ops whose host
    dispatch is shorter than their kernels this equals the graph figure."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(reps):
        a.record()
        for _ in range(calls):
            fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) * 1000.0 / calls)
    return statistics.median(times)


def latency(fn, reps=30, warmup=3):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) * 1e6)
    return statistics.median(times)


def copy_bandwidth(nbytes=1 << 30, reps=15):
    """Device-to-device copy (cudaMemcpyAsync through Tensor.copy_), bytes read
    + written per second (GB/s).  Timed with events, not a graph: in a graph
    the copy becomes a memcpy node that may run on a copy engine, slower."""
    src = torch.empty(nbytes // 4, dtype=torch.float32, device="cuda").fill_(1)
    dst = torch.empty_like(src)
    for _ in range(3):
        dst.copy_(src)
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(reps):
        a.record()
        for _ in range(5):
            dst.copy_(src)
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) * 1000.0 / 5)
    return 2 * nbytes / (statistics.median(times) * 1e3)
