"""Probe: where an adaptive laser run's wall goes on a GPU (cProfile of a warm run)."""
import sys, cProfile, pstats, time, io
import numpy as np
sys.path.insert(0, ".")
import tdse
from tdse.config import with_values
from benchmarks import drives
from tdse.numerics import graphs
rng = np.random.default_rng(56)
for _ in range(3):
    drives.make("abrupt", rng)   # (the suite draws the four kinds first: skip three)
base = with_values(drives.make("laser", rng), [("time.dt", 1.0), ("output.every", 5)])
backend = sys.argv[1] if len(sys.argv) > 1 else "cupy"
caps = [0, 0.0]
orig = graphs.capture
def cap(*a, **k):
    t = time.perf_counter(); g = orig(*a, **k); caps[0] += 1; caps[1] += time.perf_counter() - t; return g
graphs.capture = cap
for tol in (1e-6, 1e-8):
    cfg = with_values(base, [("time.tolerance", tol)])
    for _ in range(2):
        res = tdse.simulate(cfg, backend=backend)
    caps[:] = [0, 0.0]
    pr = cProfile.Profile(); pr.enable()
    res = tdse.simulate(cfg, backend=backend)
    pr.disable()
    print(f"tol {tol:g}: seconds {res.seconds:.3f} steps {res.time_error['steps_taken']} captures {caps[0]} {caps[1]*1e3:.1f} ms")
    s = io.StringIO(); pstats.Stats(pr, stream=s).sort_stats("cumulative").print_stats(40); print(s.getvalue()[:9000])
    s = io.StringIO(); pstats.Stats(pr, stream=s).sort_stats("tottime").print_stats(25); print(s.getvalue()[:6000])
