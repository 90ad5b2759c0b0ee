"""#56 probe: a full cProfile of a warm GPU run with time_error none and with estimate (the
time-error suite's drives, seed 56; walls of 5 beside it).  argv: KIND [KIND ...]"""
import cProfile, pstats, sys, time, io
import numpy as np
sys.path.insert(0, ".")
import tdse
from benchmarks import drives
from tdse.config import with_value
rng = np.random.default_rng(56)
cfgs = {k: drives.make(k, rng) for k in drives.KINDS}
for k in sys.argv[1:]:
    c = cfgs[k]
    for te in ("none", "estimate"):
        cc = with_value(c, "propagator.time_error", te)
        for _ in range(3):
            tdse.simulate(cc, backend="cupy", progress=False)
        secs = []
        for _ in range(5):
            t0 = time.perf_counter(); tdse.simulate(cc, backend="cupy", progress=False); secs.append(time.perf_counter() - t0)
        pr = cProfile.Profile(); pr.enable(); tdse.simulate(cc, backend="cupy", progress=False); pr.disable()
        s = io.StringIO(); st = pstats.Stats(pr, stream=s)
        st.sort_stats("tottime").print_stats(25); st.sort_stats("cumulative").print_stats(60)
        print(f"==== {k} {te}: walls {[round(x*1e3,1) for x in secs]} ms, median {np.median(secs)*1e3:.1f}")
        print(s.getvalue())
