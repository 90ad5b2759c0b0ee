# (run per tree by a loop like: for tree in pre prev new; do (cd $tree && PYTHONPATH=. python graph_step_ab.py 256 1000); done)
"""Bare graph steps of the small-n suite's cases (atom_hhg at N, chebyshev), one process a tree:
python benchmarks/archive/graph_step_ab.py N [N ...]  -> one line per N: us a step (best of 3 loops of 2000 steps)."""
import dataclasses, os, sys, time
import cupy as cp
import tdse
from tdse import config as cfgmod
base = cfgmod.load("inputs/atom_hhg.toml")
base = dataclasses.replace(base, absorber=None)
width = base.grid.x_max - base.grid.x_min
for n in map(int, sys.argv[1:]):
    cfg = dataclasses.replace(base, grid=dataclasses.replace(base.grid, dx=width / n))
    cfg = cfg.with_value("propagator.method", "chebyshev").with_value("propagator.time_error", "none")
    steps = 2000
    cfg = cfg.with_value("time.t_end", (steps + 2) * cfg.time.dt)
    plan = tdse.prepare(cfg, backend="cupy", devices=[0], check_resolution=False)
    best = []
    for rep in range(3):
        st = plan.stepper()
        s = tdse.evolve(plan, cp.asarray(plan.psi0), stop=2, stepper=st)
        cp.cuda.Device().synchronize()
        t0 = time.perf_counter()
        s = tdse.evolve(plan, s.psi, start=2, stop=2 + steps, stepper=st, settle=False)
        cp.cuda.Device().synchronize()
        best.append((time.perf_counter() - t0) / steps * 1e6)
    print(f"N={cfg.grid.n} us/step " + " ".join(f"{b:.1f}" for b in best), flush=True)
