"""#56 probe: where the estimate's time goes on one GPU for the laser drive (snapshots every
10 steps) and atom_hhg (1000 steps): wall with and without, then cProfile of the estimate run.
python benchmarks/archive/estimate_host.py"""
import cProfile, pstats, time, sys
import numpy as np, cupy as cp
import tdse
from benchmarks import drives
cases = {"laser": drives.make("laser", np.random.default_rng(56)), "atom_hhg": tdse.load_config("inputs/atom_hhg.toml")}
cases["atom_hhg"] = cases["atom_hhg"].with_value("time.t_end", 1000 * cases["atom_hhg"].time.dt)
for name, cfg in cases.items():
    for te in ("none", "estimate"):
        c = cfg.with_value("propagator.time_error", te)
        tdse.simulate(c, backend="cupy")
        t = time.perf_counter(); r = tdse.simulate(c, backend="cupy"); w = time.perf_counter() - t
        print(name, te, f"{w:.3f} s", getattr(r, "timings", None) if hasattr(r, "timings") else "")
    pr = cProfile.Profile(); pr.enable(); tdse.simulate(cfg.with_value("propagator.time_error", "estimate"), backend="cupy"); pr.disable()
    pstats.Stats(pr).sort_stats("tottime").print_stats(22)
    pstats.Stats(pr).sort_stats("cumtime").print_stats(40)
