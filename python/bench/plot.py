"""Draws the comparison JSON files written by python/bench/bench_*.py:

  bars.png      device time ratio PyTorch / gko per case (log scale; > 1
                means gko is faster), one bar per case, grouped by file;
  roofline.png  achieved FLOP/s against arithmetic intensity for the cases
                that carry flops and bytes, under the copy-bandwidth and
                matrix-rate ceilings recorded in the files (790 TFLOP/s,
                the H200's measured bf16 rate, marked "assumed" when the
                files carry none); PyTorch's points use torch_bytes, or
                gko's bytes less its column matrix.

    python3 python/bench/plot.py OUTDIR results1.json [results2.json ...]

Rows need gko_us and torch_us; a label is made from name/op/shape/dtype/form.
Rows may carry flops, bytes, copy_gbs and matrix_tflops.  Needs matplotlib
(prints a note and exits 0 without it)."""
import json
import math
import os
import sys


def label(r):
    parts = [str(r[k]) for k in ("name", "op", "matrix", "shape", "dtype", "form", "n")
             if k in r and r[k] not in (None, "")]
    return " ".join(parts)[:48]


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        return 1
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("plot.py: matplotlib is not installed; no figures drawn")
        return 0
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    groups = []
    for path in sys.argv[2:]:
        with open(path) as f:
            rows = [r for r in json.load(f) if r.get("gko_us") and r.get("torch_us")]
        groups.append((os.path.basename(path).replace(".json", ""), rows))
    labels, ratios, colors = [], [], []
    palette = ["#3b75af", "#e1812c", "#3a923a", "#c03d3e", "#9372b2"]
    for gi, (_, rows) in enumerate(groups):
        for r in rows:
            labels.append(label(r))
            ratios.append(r["torch_us"] / r["gko_us"])
            colors.append(palette[gi % len(palette)])
    if labels:
        fig, ax = plt.subplots(figsize=(max(8, 0.28 * len(labels)), 5))
        ax.bar(range(len(labels)), ratios, color=colors)
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.set_yscale("log")
        ax.set_ylabel("PyTorch device time / gko device time")
        ax.set_xticks(range(len(labels)))
        ax.set_xticklabels(labels, rotation=75, ha="right", fontsize=7)
        ax.set_title("gko vs PyTorch, device time (CUDA-graph replay); > 1: gko faster")
        handles = [plt.Rectangle((0, 0), 1, 1, color=palette[i % len(palette)])
                   for i in range(len(groups))]
        ax.legend(handles, [g[0] for g in groups], fontsize=8)
        fig.tight_layout()
        fig.savefig(os.path.join(out, "bars.png"), dpi=110)
        plt.close(fig)
    pts = [(r, g) for g, rows in groups for r in rows if r.get("flops") and r.get("bytes")]
    if pts:
        fig, ax = plt.subplots(figsize=(7, 5))
        bw = max(r.get("copy_gbs", 0) for r, _ in pts) or 4000.0
        peak = max(r.get("matrix_tflops", 0) for r, _ in pts)
        peak_note = ""
        if not peak:  # H200 8192^3 bf16, 769-798 TFLOP/s (the device notes)
            peak, peak_note = 790.0, " (assumed)"

        xs = [10 ** (i / 10.0) for i in range(-10, 41)]
        ax.plot(xs, [min(peak, bw * x / 1e3) for x in xs], color="black", linewidth=1)
        for r, g in pts:
            ai = r["flops"] / r["bytes"]
            ax.scatter(ai, r["flops"] / (r["gko_us"] * 1e6), color="#3b75af", s=14)
            # PyTorch at its own least traffic: cuDNN does not write gko's
            # column matrix, so its bytes leave those out
            tb = r.get("torch_bytes") or (
                r["bytes"] - r.get("col_bytes_written", 0) - r.get("col_bytes_read", 0))
            ax.scatter(r["flops"] / max(tb, 1), r["flops"] / (r["torch_us"] * 1e6),
                       color="#e1812c", s=14, marker="x")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("arithmetic intensity (FLOP / byte)")
        ax.set_ylabel("TFLOP/s")
        ax.set_title("roofline: %.0f GB/s copy, %.0f TFLOP/s matrix%s" % (bw, peak, peak_note))
        ax.legend(["ceiling", "gko", "PyTorch"], fontsize=8)
        fig.tight_layout()
        fig.savefig(os.path.join(out, "roofline.png"), dpi=110)
        plt.close(fig)
    print("plot.py: wrote %s" % ", ".join(
        f for f in ("bars.png", "roofline.png") if os.path.exists(os.path.join(out, f))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
