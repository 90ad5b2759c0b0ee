"""#54: the loop's wait for H(t)'s pairs with rows observables_every steps apart, a snapshot
every 25 steps or none (h2plus_moving_large's molecule, 3-point at N, S steps, populations
every 50): a block of 64 rows then spans 3200 steps and asks for its 64 pairs at once.
Usage: PYTHONPATH=. python benchmarks/archive/lookahead_foresee.py N S"""
import dataclasses, sys, time, tempfile, os
import numpy as np, h5py
import tdse
from tdse import config as cfgmod
N, S = int(sys.argv[1]), int(sys.argv[2])
base = cfgmod.load("inputs/h2plus_moving_large.toml")
width = base.grid.x_max - base.grid.x_min
cfg = dataclasses.replace(base, grid=dataclasses.replace(base.grid, dx=width / N, stencil=3))
cfg = cfg.with_value("propagator.method", "auto").with_value("propagator.time_error", "none") \
    .with_value("time.t_end", S * cfg.time.dt).with_value("output.populations_every", 50)
for name, c in [("obs1_snap25", cfg.with_value("output.every", 25)),
                ("obs50_snap25", cfg.with_value("output.observables_every", 50).with_value("output.every", 25)),
                ("obs50_nosnap", cfg.with_value("output.observables_every", 50).with_value("output.every", S)),
                ("obs1_nosnap", cfg.with_value("output.every", S))]:
    with tempfile.TemporaryDirectory() as d:
        r = tdse.simulate(c, out=d)
        f = [os.path.join(d, x) for x in os.listdir(d) if x.endswith(".h5")][0]
        a = dict(h5py.File(f).attrs)
        print(f"{name:14s} loop {r.seconds:.2f} s wait {float(a.get('eigenpairs_wait_seconds', 0)):.3f} s "
              f"pairs {float(a.get('eigenpairs_seconds', 0)):.2f} s calls {a.get('eigenpairs_calls')}", flush=True)
