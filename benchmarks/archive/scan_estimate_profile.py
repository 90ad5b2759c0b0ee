"""cProfile of an E0 scan of the laser drive with time_error = "estimate" (#56's scan-cost row)."""
import cProfile, pstats, sys, time
import numpy as np
sys.path.insert(0, ".")
from benchmarks import drives
from tdse.config import with_values
from tdse.studies.scan import scan
backend, B = sys.argv[1], int(sys.argv[2])
base = drives.make("laser", np.random.default_rng(56))
cfg = with_values(base, [("output.every", 10), ("propagator.time_error", "none")])
sets = {"field.E0": list(np.linspace(0.02, 0.1, B))}
for k in ("none", "estimate"):
    scan(cfg.with_value("propagator.time_error", k), sets, backend=backend)
    t0 = time.perf_counter(); r = scan(cfg.with_value("propagator.time_error", k), sets, backend=backend)
    print(k, "scan seconds", r["seconds"], "wall", time.perf_counter() - t0)
pr = cProfile.Profile(); pr.enable()
scan(cfg.with_value("propagator.time_error", "estimate"), sets, backend=backend)
pr.disable()
st = pstats.Stats(pr); st.sort_stats("tottime").print_stats(25); st.sort_stats("cumtime").print_stats(40)
