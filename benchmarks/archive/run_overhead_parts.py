"""#54 on 2 CPU cores: the run-overhead CPU row (h2plus_moving, N = 256, 5-point, populations every 10, a snapshot every 5 steps, observables every step; 4000 steps here) against itself with each part made rare in turn -- snapshots every 50, observables every 10, populations every 1000 -- and the bare step loop, three rounds alternating, in one process (tdse.run.driver.run, no progress bar)."""
import dataclasses, time, tempfile, sys
import numpy as np, tdse
from tdse import config as cfgmod
from tdse.run.driver import run
from tdse.run.loop import advance
base = cfgmod.load("inputs/h2plus_moving.toml")
w = base.grid.x_max - base.grid.x_min
cfg = dataclasses.replace(base, grid=dataclasses.replace(base.grid, dx=w / 256, stencil=5))
cfg = cfg.with_value("propagator.method", "auto").with_value("propagator.time_error", "none").with_value("time.t_end", 4000 * cfg.time.dt).with_value("output.populations_every", 10)
variants = {"as row": cfg, "snap/50": cfg.with_value("output.every", 50),
            "obs/10": cfg.with_value("output.observables_every", 10),
            "pops/1000": cfg.with_value("output.populations_every", 1000)}
d = tempfile.mkdtemp()
plan = tdse.prepare(cfg, backend="numpy", check_resolution=False, threads=1)
def bare():
    st = plan.stepper(); psi = np.asarray(plan.psi0, dtype=complex)
    t = time.perf_counter(); advance(st, psi, 0, cfg.time.steps); return time.perf_counter() - t
res = {k: [] for k in variants}; res["bare"] = []
for rep in range(3):
    res["bare"].append(bare())
    for k, c in variants.items():
        r = run(c, d, backend="numpy", progress=False, force=True, threads=1) if False else run(c, d, backend="numpy", progress=False, force=True)
        res[k].append(r.seconds)
b = np.median(res["bare"])
for k, v in res.items():
    print(f"{k:10s} {np.median(v):.3f} s  x{np.median(v)/b:.3f}  {[round(x,3) for x in v]}")
