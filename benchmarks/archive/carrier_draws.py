"""#56, the window of tests/test_carrier.py's comparison: the stated error at t_end of a
drive (benchmarks/drives.py, seeds A..B-1) with e carried by the split step against the
Chebyshev midpoint carrier, their ratio, and where it leaves 0.6-1.8 the true error (dt/8
Chebyshev 1e-14) and the split carrier's stated / true.

    PYTHONPATH=. python benchmarks/archive/carrier_draws.py A B KIND
"""
import sys
import warnings

import numpy as np

import tdse
from benchmarks import drives
from tdse.numerics import adaptive
from tdse.run.timeerror import phase_blind_distance

warnings.simplefilter("ignore")
orig = adaptive.carrier
ratios = []
for seed in range(int(sys.argv[1]), int(sys.argv[2])):
    cfg = drives.make(sys.argv[3], np.random.default_rng(seed))
    adaptive.carrier = orig
    r1 = tdse.simulate(cfg, backend="numpy")
    split = r1.time_error["error_at_t_end"]
    adaptive.carrier = lambda st, xp=np: st         # (the Chebyshev midpoint carrier)
    cheb = tdse.simulate(cfg, backend="numpy").time_error["error_at_t_end"]
    ratio = split / cheb
    ratios.append(ratio)
    line = f"{seed} ratio {ratio:.3f} split {split:.3g} cheb {cheb:.3g}"
    if ratio < 0.6 or ratio > 1.8:
        _, ref = drives.reference(cfg, factor=8)
        true = phase_blind_distance(np.asarray(r1.psi[-1]), ref, cfg.grid.dx)
        line += f" true {true:.3g} split/true {split / true:.2f}"
    print(line, flush=True)
adaptive.carrier = orig
print("min", min(ratios), "max", max(ratios))
