"""What H(t)'s eigenpairs cost a CPU run at small N (#23's N = 256 row: populations every
10 steps of a ~0.2 ms step leave ~30 us a step for every observer together): one
Tracker call (tracker.Tracker, 4 pairs, h2plus_moving's moving centres, calls 0.2 a.u.
apart) for each stencil, and for the 3-point matrix LAPACK's ways to the 4 lowest pairs --
dstemr (what the Tracker calls below WARM_MIN_N), dstebz alone (bisection for the
eigenvalues), dstebz + dstein (bisection, then inverse iteration for the vectors) -- at
N = 256 and 2048.

    python benchmarks/archive/eigen_small_n.py
"""
import os
import sys
import timeit

import numpy as np
from scipy.linalg import lapack

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
from tdse import config as cfgmod  # noqa: E402
from tdse.model import states, tracker  # noqa: E402
from tdse.model.grid import points  # noqa: E402
from tdse.model.potential import soft_core  # noqa: E402

INPUT = os.path.join(os.path.dirname(__file__), "..", "..", "inputs", "h2plus_moving.toml")
cfg = cfgmod.load(INPUT)
per = lambda f, k=50: min(timeit.repeat(f, number=k, repeat=5)) / k * 1e6  # noqa: E731
print(f"# N = {cfg.grid.n}: one Tracker call (4 pairs), us")
for st in (3, 5, "dvr"):
    tr = tracker.Tracker(cfg.with_value("grid.stencil", st), 4)
    tr(0.0)
    ts = iter(np.arange(1, 10 ** 6) * 0.2)
    print(f"  stencil {st}: {per(lambda: tr(next(ts)), 200):.0f}")
c3 = cfg.with_value("grid.stencil", 3)
for dx in (0.1, 0.0125):
    g = c3.with_value("grid.dx", dx).grid
    d, e = states._tridiagonal_bands(g, soft_core(c3.potential, points(g), 0.3))

    def stebz():
        return lapack.dstebz(d, e, 2, 0.0, 1.0, 1, 4, 0.0, "B")

    def stebz_stein():
        m, w, iblock, isplit, info = stebz()
        z, info = lapack.dstein(d, e, w[:m], iblock, isplit)
        return w[:m], z
    E0, V0 = states.stemr(d, e, 4)
    w, z = stebz_stein()
    print(f"# 3-point, N = {g.n}: dstemr {per(lambda: states.stemr(d, e, 4)):.0f} us, dstebz "
          f"{per(stebz):.0f} us, dstebz + dstein {per(stebz_stein):.0f} us (eigenvalues "
          f"{np.abs(w - E0).max():.1e} apart, vectors |<z, v>| - 1 {np.abs(np.abs((z * V0).sum(0)) - 1).max():.1e})")
