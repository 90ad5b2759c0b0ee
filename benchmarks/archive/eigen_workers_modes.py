"""#54: a 2-CPU run's loop (the file's wall_seconds) with H(t)'s populations at the ends, every 10 steps by the look-ahead's worker ("on"), by the loop's own tracker ("off") and as auto decides; h2plus_moving_large at N = 256, 3- and 5-point, 8000 steps, Chebyshev, no time error; 5 rounds alternating in one process, medians of the last 4."""
import dataclasses, os, sys, tempfile, time
sys.path.insert(0, os.getcwd())
import h5py, numpy as np
from tdse import config as cfgmod
from tdse.run.driver import run
from tdse.run.runfile import readable_attrs
base = cfgmod.load("inputs/h2plus_moving_large.toml")
w = base.grid.x_max - base.grid.x_min
S = 8000
for st in (3, 5):
    cfg = dataclasses.replace(base, grid=dataclasses.replace(base.grid, dx=w / 256, stencil=st))
    cfg = (cfg.with_value("propagator.method", "chebyshev").with_value("propagator.time_error", "none")
           .with_value("time.t_end", S * cfg.time.dt))
    cases = {"ends": cfg.with_value("output.populations_every", S),
             "on": cfg.with_value("output.populations_every", 10).with_value("run.eigen_workers", "on"),
             "off": cfg.with_value("output.populations_every", 10).with_value("run.eigen_workers", "off"),
             "auto": cfg.with_value("output.populations_every", 10)}
    out = {k: [] for k in cases}
    for r in range(5):
        for k, c in cases.items():
            res = run(c, tempfile.mkdtemp(), backend="numpy", force=True, allow_inaccurate=True)
            with h5py.File(res.path) as f:
                out[k].append(float(readable_attrs(f)["wall_seconds"]))
    print(st, "  ".join(f"{k} {np.median(v[1:]):.3f} s ({' '.join(f'{x:.2f}' for x in v)})" for k, v in out.items()))
