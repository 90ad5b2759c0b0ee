"""#56: the four drives' runs without and with their error bar (time_error "none" /
"estimate", drawn as the time-error suite draws them: rng(56), abrupt, ramped, laser, fast)
in one tree (its root the first argument), alternating ROUNDS times after a warm-up pair:
the medians and their ratio per drive.

    python benchmarks/archive/estimate_cost_ab.py TREE [BACKEND] [ROUNDS]
"""
import os
import sys
import warnings
sys.path.insert(0, sys.argv[1])
import numpy as np  # noqa: E402
import tdse  # noqa: E402
from benchmarks import drives  # noqa: E402
assert os.path.dirname(os.path.dirname(os.path.abspath(tdse.__file__))) == os.path.abspath(sys.argv[1])
warnings.simplefilter("ignore")
backend = sys.argv[2] if len(sys.argv) > 2 else "numpy"
rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 7
rng = np.random.default_rng(56)
out = []
for kind in drives.KINDS:
    cfg = drives.make(kind, rng)
    secs = {"none": [], "estimate": []}
    for k in range(rounds + 1):
        for te in secs:
            s = tdse.simulate(cfg.with_value("propagator.time_error", te), backend=backend).seconds
            if k:
                secs[te].append(s)
    med = {k: float(np.median(v)) for k, v in secs.items()}
    out.append(f"{kind} {med['none'] * 1e3:.1f}/{med['estimate'] * 1e3:.1f} ms x{med['estimate'] / med['none']:.3f}")
print(sys.argv[1], "; ".join(out), flush=True)
