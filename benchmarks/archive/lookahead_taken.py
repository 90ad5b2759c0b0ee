"""#54: where a CPU run's H(t) pairs came from with the look-ahead on (run.eigen_workers =
"on"): each call of the run's Lookahead counted as taken from a worker's task or computed
by the loop, and why (the workers not yet started, no task holding it, its task still under
way); two in-process runs in a row.

    python benchmarks/archive/lookahead_taken.py STENCIL POPULATIONS_EVERY
"""
import dataclasses, os, sys, tempfile, time, collections, warnings
sys.path.insert(0, os.getcwd())
from tdse import config as cfgmod
from tdse.run import driver, eigenpairs
base = cfgmod.load("inputs/h2plus_moving_large.toml")
w = base.grid.x_max - base.grid.x_min
cfg = dataclasses.replace(base, grid=dataclasses.replace(base.grid, dx=w / 256, stencil=int(sys.argv[1]) if sys.argv[1] in "35" else sys.argv[1]))
cfg = (cfg.with_value("propagator.method", "chebyshev").with_value("propagator.time_error", "none")
       .with_value("time.t_end", 8000 * cfg.time.dt))
c = cfg.with_value("output.populations_every", int(sys.argv[2])).with_value("run.eigen_workers", "on")
stats = collections.Counter()
take = eigenpairs.Lookahead._take
def counted(self, step, t):
    out = take(self, step, t)
    stats["taken" if out is not None else "loop"] += 1
    if out is None:
        ready = self.ready.done() if self.ready is not None else None
        first = next(iter(self.tasks.items()), None)
        stats[f"ready={ready} tasks={len(self.tasks)} broken={self.broken} first_done={first[1][0].done() if first else None} in_first={first is not None and step in first[1][1]}"] += 1
    return out
eigenpairs.Lookahead._take = counted
with warnings.catch_warnings(record=True) as said:
    warnings.simplefilter("always")
    for _ in range(2):
        stats.clear()
        t = time.perf_counter()
        driver.run(c, tempfile.mkdtemp(), backend="numpy", force=True, allow_inaccurate=True)
        print(f"{time.perf_counter() - t:.2f} s", dict(stats))
print([str(w.message)[:200] for w in said][:5])
