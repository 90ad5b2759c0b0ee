"""#56: stated / true error at t_end of the ramped DVR drive (benchmarks/drives.py, cfm4),
where psi nears the walls, with e carried by the split step (tdse.numerics.carrier).
Usage: python benchmarks/archive/split_carrier_ramped.py FIRST_SEED LAST_SEED"""
import sys

import numpy as np

import tdse
from benchmarks import drives
from tdse.run.timeerror import phase_blind_distance

a, b = (int(s) for s in sys.argv[1:3])
ratios = []
for seed in range(a, b + 1):
    c = drives.make("ramped", np.random.default_rng(seed))
    _, ref = drives.reference(c)
    res = tdse.simulate(c, backend="numpy")
    ratios.append(res.time_error["error_at_t_end"] / phase_blind_distance(res.psi[-1], ref, c.grid.dx))
    print(seed, f"split/true {ratios[-1]:.2f}", flush=True)
print("sorted:", " ".join(f"{r:.2f}" for r in sorted(ratios)))
