"""#56: where the adaptive laser run's time goes on a GPU (cProfile of the third run)."""
import cProfile, pstats, sys, time
import numpy as np
import tdse
from benchmarks import drives
from tdse.config import with_values
base = with_values(drives.make("laser", np.random.default_rng(56)), [("time.dt", 1.0), ("output.every", 5)])
tol = float(sys.argv[1])
cfg = with_values(base, [("time.tolerance", tol)])
for _ in range(2):
    r = tdse.simulate(cfg, backend="cupy", progress=False)
ts = []
for _ in range(3):
    t = time.perf_counter(); r = tdse.simulate(cfg, backend="cupy", progress=False); ts.append(time.perf_counter() - t)
print("wall", ts, "seconds", r.seconds, r.time_error["steps_taken"], r.time_error["rejected"], "estimate_seconds", r.time_error["estimate_seconds"])
pr = cProfile.Profile(); pr.enable(); r = tdse.simulate(cfg, backend="cupy", progress=False); pr.disable()
s = pstats.Stats(pr); s.sort_stats("tottime").print_stats(30); s.sort_stats("cumtime").print_stats(45)
