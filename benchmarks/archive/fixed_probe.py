"""#56: the estimate's cost on one GPU split into a per-run part and a per-step part: laser and
atom_hhg at S and 4S steps, time_error none / estimate (min of 3, the loop's seconds and the
whole simulate wall), then a cProfile of one estimate run (host time by function)."""
import cProfile, pstats, sys, time, io
import numpy as np
import tdse
from benchmarks import drives
backend = sys.argv[1] if len(sys.argv) > 1 else "cupy"
rng = np.random.default_rng(56)
cases = {k: drives.make(k, rng) for k in ("abrupt", "ramped", "laser", "fast")}
a = tdse.load_config("inputs/atom_hhg.toml")
cases["atom_hhg"] = a.with_value("time.t_end", 1000 * a.time.dt).with_value("output.every", 50)
print("| drive | N | steps | none loop | est loop | none wall | est wall | ratio loop | ratio wall |")
print("|---|---|---|---|---|---|---|---|---|")
for name in ("laser", "atom_hhg", "fast"):
    cfg = cases[name]
    for mult in (1, 4):
        c0 = cfg.with_value("time.t_end", mult * cfg.time.t_end) if mult > 1 else cfg
        best = {}
        for rep in range(3):
            for te in ("none", "estimate"):
                c = c0.with_value("propagator.time_error", te)
                t = time.perf_counter()
                r = tdse.simulate(c, backend=backend)
                w = time.perf_counter() - t
                b = best.setdefault(te, [1e9, 1e9])
                b[0], b[1] = min(b[0], r.seconds), min(b[1], w)
        n, e = best["none"], best["estimate"]
        print(f"| {name} | {cfg.grid.n} | {c0.time.steps} | {n[0]*1e3:.1f} | {e[0]*1e3:.1f} | {n[1]*1e3:.1f} | {e[1]*1e3:.1f} | {e[0]/n[0]:.2f} | {e[1]/n[1]:.2f} |", flush=True)
for name in ("laser",):
    c = cases[name].with_value("propagator.time_error", "estimate")
    tdse.simulate(c, backend=backend)
    pr = cProfile.Profile(); pr.enable(); tdse.simulate(c, backend=backend); pr.disable()
    s = io.StringIO(); pstats.Stats(pr, stream=s).sort_stats("tottime").print_stats(30); print(s.getvalue()[:6000])
