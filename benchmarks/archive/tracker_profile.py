"""#59 item 5: a cProfile of the populations tracker alone (h2plus_moving's molecule at N points, stencil, populations every E steps; 800 calls, the second 400 profiled, one BLAS thread).  python benchmarks/archive/tracker_profile.py N STENCIL E"""
import dataclasses, sys, time, cProfile, pstats
from tdse import config as cfgmod
from tdse.model.tracker import Tracker
from threadpoolctl import threadpool_limits
base = cfgmod.load("inputs/h2plus_moving.toml")
w = base.grid.x_max - base.grid.x_min
n, st, every = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
cfg = dataclasses.replace(base, grid=dataclasses.replace(base.grid, dx=w / n, stencil=st))
cfg = cfg.with_value("output.populations_every", every).with_value("time.t_end", 8000 * base.time.dt)
dt = cfg.time.dt
ts = [k * every * dt for k in range(1, 8000 // every + 1)]
with threadpool_limits(1, "blas"):
    tr = Tracker(cfg, 4)
    t0 = time.perf_counter()
    for t in ts[:400]: tr(t)
    print(f"N={n} st={st} every={every}: {1e3*(time.perf_counter()-t0)/400:.3f} ms/call, restarts {tr.restarts}")
    pr = cProfile.Profile(); pr.enable()
    for t in ts[400:]: tr(t)
    pr.disable()
    pstats.Stats(pr).sort_stats("tottime").print_stats(14)
