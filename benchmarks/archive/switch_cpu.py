"""#54: the interpreter's switch interval (0.5 / 5 / 50 ms) under a 2-CPU run's loop with the look-ahead's worker (populations every 10), beside the loop with them at the ends; h2plus_moving_large at N = 256, 3-point, 8000 steps, in-process runs alternating, 5 rounds, medians of the last 4."""
import dataclasses, os, sys, tempfile, time
sys.path.insert(0, os.getcwd())
import h5py, numpy as np
from tdse import config as cfgmod
from tdse.run.driver import run
from tdse.run.runfile import readable_attrs
base = cfgmod.load("inputs/h2plus_moving_large.toml")
w = base.grid.x_max - base.grid.x_min
S = 8000
cfg = dataclasses.replace(base, grid=dataclasses.replace(base.grid, dx=w / 256, stencil=3))
cfg = (cfg.with_value("propagator.method", "chebyshev").with_value("propagator.time_error", "none")
       .with_value("time.t_end", S * cfg.time.dt))
on = cfg.with_value("output.populations_every", 10).with_value("run.eigen_workers", "on")
ends = cfg.with_value("output.populations_every", S)
cases = [("ends 5ms", ends, 0.005), ("on 0.5ms", on, 0.0005), ("on 5ms", on, 0.005), ("on 50ms", on, 0.05)]
out = {k: [] for k, _, _ in cases}
for r in range(5):
    for k, c, sw in cases:
        sys.setswitchinterval(sw)
        res = run(c, tempfile.mkdtemp(), backend="numpy", force=True, allow_inaccurate=True)
        with h5py.File(res.path) as f:
            out[k].append(float(readable_attrs(f)["wall_seconds"]))
sys.setswitchinterval(0.005)
for k, v in out.items():
    print(f"{k:10s} loop median {np.median(v[1:]):.3f} s ({' '.join(f'{x:.2f}' for x in v)})")
