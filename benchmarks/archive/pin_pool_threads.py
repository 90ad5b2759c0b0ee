"""#54: a 2-CPU run's loop with the look-ahead's worker, the loop's thread on CPU 0 and every other thread of the process (the pool's) and the worker processes on CPU 1 (pinned at the look-ahead's first fills), against unpinned and the populations at the ends; h2plus_moving_large N = 256, 8000 steps, every 10; 6 rounds alternating, medians of the last 5.  Usage: python pin_pool_threads.py STENCIL"""
import dataclasses, os, sys, tempfile, threading, time
sys.path.insert(0, os.getcwd())
import h5py, numpy as np
from tdse import config as cfgmod
from tdse.run import eigenpairs
from tdse.run.driver import run
from tdse.run.runfile import readable_attrs
base = cfgmod.load("inputs/h2plus_moving_large.toml")
w = base.grid.x_max - base.grid.x_min
S = 8000
st = int(sys.argv[1]) if len(sys.argv) > 1 else 3
cfg = dataclasses.replace(base, grid=dataclasses.replace(base.grid, dx=w / 256, stencil=st))
cfg = (cfg.with_value("propagator.method", "chebyshev").with_value("propagator.time_error", "none")
       .with_value("time.t_end", S * cfg.time.dt))
on = cfg.with_value("output.populations_every", 10).with_value("run.eigen_workers", "on")
ends = cfg.with_value("output.populations_every", S)
shipped = eigenpairs.Lookahead._fill
PIN = [False]
pinned = set()
def fill(self, step, early=False):
    shipped(self, step, early)
    if PIN[0] and self.pool is not None:
        main = threading.main_thread().native_id
        for t in threading.enumerate():
            if t.native_id != main and t.native_id not in pinned:
                try:
                    os.sched_setaffinity(t.native_id, {1}); pinned.add(t.native_id)
                except OSError:
                    pass
        for p in (getattr(self.pool.pool, "_processes", None) or {}).values():
            if p.pid not in pinned:
                try:
                    os.sched_setaffinity(p.pid, {1}); pinned.add(p.pid)
                except OSError:
                    pass
eigenpairs.Lookahead._fill = fill
cases = [("ends", ends, False), ("every", on, False), ("every pinned", on, True)]
out = {k: [] for k, _, _ in cases}
for r in range(6):
    for k, c, pin in cases:
        PIN[0] = pin
        pinned.clear()
        os.sched_setaffinity(0, {0} if pin else {0, 1})
        res = run(c, tempfile.mkdtemp(), backend="numpy", force=True, allow_inaccurate=True)
        os.sched_setaffinity(0, {0, 1})
        with h5py.File(res.path) as f:
            out[k].append(float(readable_attrs(f)["wall_seconds"]))
for k, v in out.items():
    print(f"{k:13s} loop median {np.median(v[1:]):.3f} s ({' '.join(f'{x:.2f}' for x in v)})")
