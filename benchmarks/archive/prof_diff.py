"""#56: where a GPU run's host time goes with the estimate against without it (cProfile of
the third run of each in one process; functions by tottime, the difference estimate - none),
laser and atom_hhg (1000 steps, a snapshot every 50)."""
import cProfile, pstats, sys, time
import numpy as np
import tdse
from benchmarks import drives
rng = np.random.default_rng(56)
cases = {k: drives.make(k, rng) for k in ("abrupt", "ramped", "laser", "fast")}
a = tdse.load_config("inputs/atom_hhg.toml")
cases["atom_hhg"] = a.with_value("time.t_end", 1000 * a.time.dt).with_value("output.every", 50)
for name in ("laser", "atom_hhg"):
    tt, loops = {}, {}
    for te in ("none", "estimate"):
        c = cases[name].with_value("propagator.time_error", te)
        for _ in range(2):
            tdse.simulate(c, backend="cupy")
        pr = cProfile.Profile(); pr.enable(); r = tdse.simulate(c, backend="cupy"); pr.disable()
        st = pstats.Stats(pr).stats
        tt[te] = {f"{k[0].split('/')[-1]}:{k[1]}({k[2]})": (v[1], v[2], v[3]) for k, v in st.items()}
        loops[te] = (r.seconds, sum(v[2] for v in st.values()))
        best = min(tdse.simulate(c, backend="cupy").seconds for _ in range(3))
        loops[te] += (best,)
    print(f"## {name}: loop (profiled) none {loops['none'][0]*1e3:.1f} ms, estimate {loops['estimate'][0]*1e3:.1f} ms; "
          f"host total none {loops['none'][1]*1e3:.1f}, estimate {loops['estimate'][1]*1e3:.1f} ms; "
          f"unprofiled best of 3: none {loops['none'][2]*1e3:.1f}, estimate {loops['estimate'][2]*1e3:.1f} ms")
    keys = set(tt["none"]) | set(tt["estimate"])
    diff = sorted(((tt["estimate"].get(k, (0, 0, 0))[1] - tt["none"].get(k, (0, 0, 0))[1], k) for k in keys), reverse=True)
    print("   tottime diff (ms), calls none -> estimate, function")
    for d, k in diff[:28]:
        print(f"   {d*1e3:7.2f}  {tt['none'].get(k, (0,))[0]:6d} -> {tt['estimate'].get(k, (0,))[0]:6d}  {k}")
