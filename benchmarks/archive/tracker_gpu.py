"""Device probe (#23 item 1): the Davidson tracker with CuPy and NumPy on this machine,
per stencil: iterations, fallbacks, ms a call, the first call's residual history.
python benchmarks/archive/tracker_gpu.py"""
import time
import traceback

import numpy as np

from tdse import config as cfgmod
from tdse.model import states, tracker

try:
    import cupy as cp
except ImportError:
    cp = None
for name, n in (("h2plus_moving.toml", None), ("h2plus_moving_large.toml", None)):
    for st in (5, "dvr"):
        c = cfgmod.load(f"inputs/{name}").with_value("grid.stencil", st)
        for xp in (np, cp):
            if xp is None:
                continue
            g = c.grid
            from tdse.model.grid import points
            from tdse.model.potential import soft_core
            v = soft_core(c.potential, points(g), 0.0)
            try:
                E, X, its, res = states.davidson(g, v, states.fd_start(g, v, 6), 4, xp=xp)
                print(name, st, xp.__name__, "cold its", its, "res", float(res.max()))
            except Exception as e:  # noqa: BLE001
                print(name, st, xp.__name__, "cold FAILED", repr(e)[:300])
                traceback.print_exc(limit=3)
            tr = tracker.Tracker(c, 4, xp=xp, direct_max=0)
            tr(0.0)
            t0 = time.perf_counter()
            for j in range(1, 21):
                tr(c.time.dt * j)
            print(f"{name} {st} {xp.__name__}: {(time.perf_counter() - t0) / 20 * 1e3:.1f} ms/call, "
                  f"its {tr.iterations}, fallbacks {tr.fallbacks}")
