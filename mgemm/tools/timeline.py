"""Timeline picture of a traced gemm: one lane per (device, stream), like a profiler view."""
from __future__ import annotations


def plot_timeline(trace, path, title=""):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    lanes = sorted({(r["dev"], r["stream"]) for r in trace})
    colours = {"gemm": "tab:blue", "copy": "tab:orange", "axpby": "tab:green",
               "split": "tab:purple", "combine": "tab:red"}
    fig, ax = plt.subplots(figsize=(12, 0.45 * len(lanes) + 1.5))
    for y, lane in enumerate(lanes):
        bars = [(r["start_ms"], r["end_ms"] - r["start_ms"], r["kind"]) for r in trace
                if (r["dev"], r["stream"]) == lane]
        for kind in colours:
            xs = [(s, w) for s, w, k in bars if k == kind]
            if xs:
                ax.broken_barh(xs, (y - 0.4, 0.8), color=colours[kind], label=kind)
    ax.set_yticks(range(len(lanes)), [f"GPU {d} {s}" for d, s in lanes])
    ax.set_xlabel("time (ms)")
    h, lab = ax.get_legend_handles_labels()
    uniq = dict(zip(lab, h))
    ax.legend(uniq.values(), uniq.keys(), loc="upper right")
    ax.set_title(title)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return path
