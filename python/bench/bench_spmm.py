"""CSR SpMM: gko (ctypes) vs torch's CSR @ dense (cuSPARSE), same process,
same inputs.  C[m, n] = A[m, k] @ B[k, n], B and C row-major.

    PYTHONPATH=python python3 python/bench/bench_spmm.py [--dtype f32|f16|bf16]
        [--n 32,128] [--matrix data/cora.mtx ...] [--rmat 18 --degree 16]
        [--uniform 262144 --degree 16] [--json FILE]

Without --matrix/--rmat/--uniform: the six real matrices in data/ at n = 32
and 128 and R-MAT 2^18 (degree 16) at n = 128.

Device time (*_us) is CUDA-graph replay (harness.device_time).  If torch's
sparse matmul refuses to be captured, its device time comes from
back-to-back launches between events instead (harness.stream_time) and the
row is marked "ev".  Latency (*_lat) is one call until done.  Ratios are
torch / gko (> 1: gko faster); compare device time with device time and
latency with latency.  GFLOP/s = 2 nnz n / device time; the floor is the
CSR arrays + B + C once at the copy bandwidth measured in this run.
"""
import argparse
import json
import os
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
import gko  # noqa: E402
import gko.sparse as gsp  # noqa: E402
from harness import copy_bandwidth, device_time, latency, stream_time  # noqa: E402

DATA = os.environ.get("GKO_DATA_DIR", os.path.join(HERE, "..", "..", "data"))
REAL = ["cora.mtx", "pubmed.mtx", "p2p-Gnutella31.mtx", "ca-CondMat.mtx", "bcsstk13.mtx",
        "n1024-l1.mtx"]
DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}


def read_mtx(path):
    """(m, k, rows, cols, vals) of a coordinate Matrix Market file (pattern /
    real / integer; symmetric files mirrored; duplicates summed later)."""
    with open(path) as f:
        header = f.readline().lower().split()
        if len(header) < 5 or header[2] != "coordinate":
            raise ValueError("%s: only coordinate Matrix Market files" % path)
        pattern, sym = header[3] == "pattern", header[4]
        line = f.readline()
        while line.startswith("%") or not line.strip():
            line = f.readline()
        m, k, _ = (int(x) for x in line.split())
        data = np.loadtxt(f, comments="%", ndmin=2)
    r = data[:, 0].astype(np.int64) - 1
    c = data[:, 1].astype(np.int64) - 1
    v = np.ones(len(r)) if pattern else data[:, 2].astype(np.float64)
    if sym in ("symmetric", "skew-symmetric"):
        off = r != c
        sign = -1.0 if sym == "skew-symmetric" else 1.0
        r, c, v = (np.concatenate([r, c[off]]), np.concatenate([c, r[off]]),
                   np.concatenate([v, sign * v[off]]))
    return m, k, r, c, v


def to_csr(m, k, r, c, v):
    """Row-sorted, duplicate-free CSR on the host (duplicates summed)."""
    key = r * k + c
    order = np.argsort(key, kind="stable")
    key, v = key[order], v[order]
    uniq, start = np.unique(key, return_index=True)
    vals = np.add.reduceat(v, start) if len(v) else v
    rows, cols = uniq // k, uniq % k
    crow = np.zeros(m + 1, dtype=np.int64)
    np.add.at(crow, rows + 1, 1)
    return np.cumsum(crow), cols, vals


def rmat(scale, degree, seed=1):
    """R-MAT (a = 0.57, b = c = 0.19), 2^scale vertices, degree * 2^scale edges
    before duplicates are merged; deterministic."""
    rng = np.random.default_rng(seed + 1000 * scale + degree)
    n = 1 << scale
    e = n * degree
    r = np.zeros(e, dtype=np.int64)
    c = np.zeros(e, dtype=np.int64)
    for _ in range(scale):
        u = rng.random(e)
        down = u >= 0.76
        right = ((u >= 0.57) & (u < 0.76)) | (u >= 0.95)
        r = (r << 1) | down
        c = (c << 1) | right
    return n, n, r, c, np.ones(e)


def uniform(rows, degree, seed=2):
    rng = np.random.default_rng(seed + rows + degree)
    r = np.repeat(np.arange(rows, dtype=np.int64), degree)
    c = rng.integers(0, rows, size=rows * degree, dtype=np.int64)
    return rows, rows, r, c, np.ones(rows * degree)


def cases(args):
    out = []
    if args.matrix or args.rmat or args.uniform:
        for p in args.matrix or []:
            out.append((os.path.basename(p).replace(".mtx", ""), lambda p=p: read_mtx(p),
                        args.n or [128]))
        if args.rmat:
            out.append(("rmat-s%d-d%d" % (args.rmat, args.degree),
                        lambda: rmat(args.rmat, args.degree), args.n or [128]))
        if args.uniform:
            out.append(("uniform-%d-d%d" % (args.uniform, args.degree),
                        lambda: uniform(args.uniform, args.degree), args.n or [128]))
        return out
    for f in REAL:
        out.append((f.replace(".mtx", ""), lambda f=f: read_mtx(os.path.join(DATA, f)),
                    args.n or [32, 128]))
    out.append(("rmat-s18-d16", lambda: rmat(18, 16), args.n or [128]))
    return out


def torch_device_time(fn):
    """Graph replay when torch's sparse matmul can be captured, else events."""
    try:
        return device_time(fn), "graph"
    except Exception:  # capture refused (cuSPARSE buffer allocation, sync, ...)
        torch.cuda.synchronize()
        return stream_time(fn), "ev"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dtype", default="f32", choices=sorted(DTYPES))
    ap.add_argument("--n", type=lambda s: [int(x) for x in s.split(",")])
    ap.add_argument("--matrix", action="append")
    ap.add_argument("--rmat", type=int)
    ap.add_argument("--uniform", type=int)
    ap.add_argument("--degree", type=int, default=16)
    ap.add_argument("--kernel", default="auto", choices=["auto", "row_split", "merge"])
    ap.add_argument("--json")
    args = ap.parse_args()
    dt = DTYPES[args.dtype]
    torch.manual_seed(0)
    h = gko.Handle()
    copy = copy_bandwidth()
    print("# %s, %s" % (torch.cuda.get_device_name(), gko.diagnostics(0).splitlines()[0]))
    print("# device-to-device copy: %.0f GB/s (read + write)" % copy)
    print("# *_us: device time (graph replay; 'ev': events, torch could not be captured); "
          "*_lat: one call until done; ratios torch/gko")
    hdr = ("%-22s %5s %5s %8s %8s %8s %8s %3s %7s %7s %8s %7s %-9s %8s"
           % ("matrix", "n", "dtype", "gko_us", "gko_lat", "tch_us", "tch_lat", "how",
              "dev_x", "lat_x", "GFLOP/s", "floor%", "kernel", "max_err"))
    print(hdr)
    rows = []
    for name, load, ns in cases(args):
        m, k, r, c, v = load()
        crow, cols, vals = to_csr(m, k, r, c, v)
        rng = np.random.default_rng(7)
        vals = vals * rng.uniform(0.5, 1.5, size=len(vals))
        # scaled to max |value| = 1, as gko-bench does: bcsstk13's entries
        # (up to ~3e8) overflow f16 and would make every error NaN
        vmax = np.abs(vals).max() if len(vals) else 0.0
        if vmax > 0:
            vals = vals / vmax
        crow_d = torch.from_numpy(crow.astype(np.int32)).cuda()
        col_d = torch.from_numpy(cols.astype(np.int32)).cuda()
        val_d = torch.from_numpy(vals).to(device="cuda", dtype=dt)
        A_t = torch.sparse_csr_tensor(crow_d, col_d, val_d, size=(m, k))
        A64 = torch.sparse_csr_tensor(crow_d.long(), col_d.long(), val_d.double(), size=(m, k))
        A_g = gsp.CSR(crow_d, col_d, val_d, (m, k))
        nnz = len(vals)
        for n in ns:
            B = (torch.rand(k, n, device="cuda") * 2 - 1).to(dt)
            C = torch.empty(m, n, device="cuda", dtype=dt)
            plan = gsp.Plan(h, A_g, n, kernel=args.kernel)
            plan.execute(B, C)  # allocates the workspace (if any) outside timing
            g_dev = device_time(lambda: plan.execute(B, C))
            g_lat = latency(lambda: plan.execute(B, C))
            t_dev, how = torch_device_time(lambda: A_t @ B)
            t_lat = latency(lambda: A_t @ B)
            plan.execute(B, C)
            ref = (A64 @ B.double())
            err = ((C.double() - ref).abs().max() / ref.abs().max().clamp_min(1e-30)).item()
            es = torch.finfo(dt).bits // 8
            floor_bytes = (m + 1) * 4 + nnz * (4 + es) + (k * n + m * n) * es
            floor_us = floor_bytes / (copy * 1e3)
            row = dict(matrix=name, n=n, dtype=args.dtype, m=m, k=k, nnz=nnz, gko_us=g_dev,
                       gko_latency_us=g_lat, torch_us=t_dev, torch_timing=how,
                       torch_latency_us=t_lat, device_ratio=t_dev / g_dev,
                       latency_ratio=t_lat / g_lat, gflops=2.0 * nnz * n / (g_dev * 1e3),
                       floor_us=floor_us, kernel=plan.kernel.name, max_rel_err=err,
                       plan=plan.describe(), copy_gbs=copy)
            rows.append(row)
            print("%-22s %5d %5s %8.1f %8.1f %8.1f %8.1f %3s %6.2fx %6.2fx %8.0f %6.0f%% %-9s %8.1e"
                  % (name, n, args.dtype, g_dev, g_lat, t_dev, t_lat, how[:3],
                     t_dev / g_dev, t_lat / g_lat, row["gflops"], 100 * floor_us / g_dev,
                     plan.kernel.name, err), flush=True)
            plan.close()
            del B, C, ref
        A_g.close()
        del A_t, A64, crow_d, col_d, val_d
        torch.cuda.empty_cache()
    ratios = [r["device_ratio"] for r in rows]
    if ratios:
        gm = float(np.exp(np.mean(np.log(ratios))))
        print("# device-time speedup over torch/cuSPARSE: geometric mean %.2fx, min %.2fx (%s)"
              % (gm, min(ratios), rows[int(np.argmin(ratios))]["matrix"]))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
