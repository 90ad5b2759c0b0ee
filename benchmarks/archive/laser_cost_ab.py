"""#56: the laser drive's run without and with its error bar (time_error "none" /
"estimate", the time-error suite's cost row: rng(56) after abrupt and ramped) in one tree
(its root the first argument), alternating ROUNDS times after a warm-up pair: the medians
and their ratio.

    python benchmarks/archive/laser_cost_ab.py TREE [ROUNDS]
"""
import os
import sys
sys.path.insert(0, sys.argv[1])
import numpy as np  # noqa: E402
import tdse  # noqa: E402
from benchmarks import drives  # noqa: E402
assert os.path.dirname(os.path.dirname(os.path.abspath(tdse.__file__))) == os.path.abspath(sys.argv[1])
rng = np.random.default_rng(56)
drives.make("abrupt", rng)
drives.make("ramped", rng)
laser = drives.make("laser", rng)
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 7
secs = {"none": [], "estimate": []}
for k in range(rounds + 1):
    for te in secs:
        s = tdse.simulate(laser.with_value("propagator.time_error", te), backend="cupy").seconds
        if k:
            secs[te].append(s)
med = {k: float(np.median(v)) for k, v in secs.items()}
print(sys.argv[1], f"none {med['none']:.4f} s, estimate {med['estimate']:.4f} s: "
      f"x{med['estimate'] / med['none']:.3f};", {k: [round(x, 4) for x in v] for k, v in secs.items()},
      flush=True)
