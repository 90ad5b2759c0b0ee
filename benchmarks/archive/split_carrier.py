"""#56: the stated / true error at t_end of the four random drives (benchmarks/drives.py),
cfm4 and midpoint, with e carried by the split step (tdse.numerics.carrier) against the
Chebyshev midpoint step at 1e-6 it replaced on the host, and each run's wall.
Usage: python benchmarks/archive/split_carrier.py SEED [SEED ...]"""
import sys
import time

import numpy as np

import tdse
import tdse.numerics.adaptive as ad
from benchmarks import drives
from tdse.run.timeerror import phase_blind_distance

split = ad.carrier
for seed in [int(s) for s in sys.argv[1:]] or [1]:
    for kind in drives.KINDS:
        for scheme in ("cfm4", "midpoint"):
            c = drives.make(kind, np.random.default_rng(seed), scheme)
            plan, ref = drives.reference(c)
            row = [kind, scheme, seed]
            for carry in ((lambda st, xp=np: st), split):
                ad.carrier = carry
                t0 = time.perf_counter()
                res = tdse.simulate(c, backend="numpy")
                wall = time.perf_counter() - t0
                true = phase_blind_distance(res.psi[-1], ref, c.grid.dx)
                row += [f"{res.time_error['error_at_t_end'] / true:.3f}", f"{wall:.2f}s"]
            print(*row, f"true={true:.2e}", flush=True)
