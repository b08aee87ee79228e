"""Draws docs/figures/resnet18.png from the JSON bench_resnet18.py writes:
images/s per batch size for gko (one CUDA graph) and PyTorch's four modes
(eager, eager + CUDA graph, torch.compile, torch.compile + CUDA graph),
grouped bars on a log scale.

    python3 python/bench/plot_resnet18.py results.json docs/figures/resnet18.png [title]

Needs matplotlib (prints a note and exits 0 without it)."""
import json
import sys

MODES = [("eager", "torch eager"), ("eager_graph", "eager + graph"), ("compile", "torch.compile"),
         ("compile_graph", "compile + graph"), ("gko_graph", "gko (graph)")]


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        return 1
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no chart drawn")
        return 0
    rows = sorted(json.load(open(sys.argv[1])), key=lambda r: r["batch"])
    title = sys.argv[3] if len(sys.argv) > 3 else "ResNet-18 inference, f16 NHWC"
    width = 0.8 / len(MODES)
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for m, (key, name) in enumerate(MODES):
        xs = [i + (m - (len(MODES) - 1) / 2) * width for i in range(len(rows))]
        ys = [r.get(key) or 0 for r in rows]
        bars = ax.bar(xs, ys, width, label=name,
                      color="black" if key == "gko_graph" else None)
        for b, y in zip(bars, ys):
            if y > 0:
                ax.text(b.get_x() + b.get_width() / 2, y * 1.04, "%.0fk" % (y / 1e3) if y >= 1e4
                        else "%.1fk" % (y / 1e3), ha="center", va="bottom", fontsize=6, rotation=90)
    ax.set_xticks(range(len(rows)))
    ax.set_xticklabels(["batch %d" % r["batch"] for r in rows])
    ax.set_yscale("log")
    ax.set_ylabel("images / s (device time)")
    ax.set_title(title)
    ax.legend(fontsize=7, ncol=3, loc="upper left")
    ax.set_ylim(top=ax.get_ylim()[1] * 3)
    fig.tight_layout()
    fig.savefig(sys.argv[2], dpi=130)
    print("wrote", sys.argv[2])
    return 0


if __name__ == "__main__":
    sys.exit(main())
