"""#54 / #59 item 5: H(t)'s 3-/5-point pairs of a window (16 populations times) as the tracker computes them (Tracker.window: every member from the anchor, stacked; from scratch where not vouched for) against a chain (each member by states.warm_banded from the one before, from scratch where refused) and against each from scratch; h2plus_moving_large's molecule, one BLAS thread, ms a call.  Usage: python window_chain.py N EVERY STENCIL [WINDOWS]"""
import dataclasses, sys, time
sys.path.insert(0, ".")
import numpy as np
from threadpoolctl import threadpool_limits
threadpool_limits(1)
from tdse import config as cfgmod
from tdse.model.tracker import Tracker
from tdse.model import states
N = int(sys.argv[1]); every = int(sys.argv[2]); st = int(sys.argv[3]) if len(sys.argv) > 3 else 3
base = cfgmod.load("inputs/h2plus_moving_large.toml")
w = base.grid.x_max - base.grid.x_min
cfg = dataclasses.replace(base, grid=dataclasses.replace(base.grid, dx=w / N, stencil=st))
cfg = cfg.with_value("time.t_end", 160000 * cfg.time.dt).with_value("output.populations_every", every)
tr = Tracker(cfg, 4)
g = cfg.grid
W = min(160000 // (16 * every), int(sys.argv[4]) if len(sys.argv) > 4 else 10**9)
# shipped: whole windows
t0 = time.perf_counter(); n = 0
for a in range(W):
    n += len(tr.window(a))
ship = (time.perf_counter() - t0) / n * 1e3
# chain within each window
t0 = time.perf_counter(); n = 0; fails = 0; maxdiff = 0.0
for a in range(W):
    steps = [s for s in range(a * 16 * every, (a + 1) * 16 * every, every)]
    V = tr._potentials([s * cfg.time.dt for s in steps])
    prev = tr._scratch(steps[0] * cfg.time.dt, V[0]); n += 1
    for j in range(1, len(steps)):
        q = states.warm_banded(g, V[j], *prev, states.residual_bound(g, V[j], tr.tol))
        if q is None:
            fails += 1
            q = tr._scratch(steps[j] * cfg.time.dt, V[j])
        prev = q; n += 1
chain = (time.perf_counter() - t0) / n * 1e3
# scratch alone
t0 = time.perf_counter(); m = 0
for a in range(W):
    for s in range(a * 16 * every, (a + 1) * 16 * every, every * 4):
        tr._scratch(s * cfg.time.dt, tr._potentials([s * cfg.time.dt])[0]); m += 1
scratch = (time.perf_counter() - t0) / m * 1e3
print(f"N {N} stencil {st} every {every}: ms a call -- windows as shipped {ship:.3f}, chained {chain:.3f} ({fails / n:.1%} from scratch), scratch {scratch:.3f}")
