"""The gauge figure (docs/gauge/README.md): `python docs/gauge/make.py [RESULT.json]`.  From a
`python -m benchmarks gauge` result (default: the newest in benchmarks/results), the errors
of the yield, the populations after the pulse and the dipole acceleration against dx, each
stencil in the length and the velocity gauge, against the DVR reference; atomic units.
Writes gauge_convergence.png beside this file."""
from __future__ import annotations

import glob
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def main(path=None):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    path = path or sorted(glob.glob(os.path.join(ROOT, "benchmarks", "results", "gauge_*.json")))[-1]
    d = json.load(open(path))
    rows, ref = d["rows"], d["reference"]
    what = (("yield_error", "yield"), ("population_error", "populations after the pulse (max)"),
            ("acceleration_error", "dipole acceleration (max, of its peak)"))
    fig, axes = plt.subplots(1, 3, figsize=(13, 4.2))
    for ax, (key, title) in zip(axes, what):
        for st, colour in ((3, "C0"), (5, "C1")):
            for gauge, style in (("length", "-o"), ("velocity", "--s")):
                r = sorted((x for x in rows if x["stencil"] == st and x["gauge"] == gauge), key=lambda x: x["dx"])
                ax.loglog([x["dx"] for x in r], [max(x[key], 1e-16) for x in r], style, color=colour,
                          lw=1.2, ms=4, label=f"{st}-point, {gauge} gauge")
        dx = np.array([0.05, 0.4])
        ax.loglog(dx, 2e-2 * (dx / 0.4) ** 2, ":", color="0.6", lw=0.8, label="slope 2")
        ax.loglog(dx, 2e-4 * (dx / 0.4) ** 4, "-.", color="0.6", lw=0.8, label="slope 4")
        ax.set_xticks([0.05, 0.1, 0.2, 0.4])
        ax.set_xticklabels(["0.05", "0.1", "0.2", "0.4"])
        ax.minorticks_off()
        ax.set_xlabel("dx (bohr)")
        ax.set_ylabel("error against the DVR reference")
        ax.set_title(title, fontsize=10)
        ax.grid(True, which="both", lw=0.3, alpha=0.5)
    axes[0].legend(fontsize=7, loc="lower right")
    fig.suptitle(f"an atom in a 2-cycle 800 nm pulse, 1e14 W/cm^2: both gauges against the DVR at dx = "
                 f"{ref['dx']} (its gauges {ref['gauges_apart']['yield']:.0e} apart in the yield); "
                 f"{os.path.basename(path)}", fontsize=9)
    fig.tight_layout()
    out = os.path.join(HERE, "gauge_convergence.png")
    fig.savefig(out, dpi=110)
    print(f"wrote {out}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else None)
