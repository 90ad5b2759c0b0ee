"""#56: the time-error suite's four drives (seed 56 draws) on one GPU: each run's loop with
time_error "none" and "estimate" alternating (medians of 7 after 2 warm-ups), then a
cProfile of the estimate run and of the none run of KINDS given (the functions whose
cumulative time differs most between them).

    PYTHONPATH=. python benchmarks/archive/estimate_small_gpu.py [KIND ...]
"""
import cProfile, dataclasses, pstats, sys
import numpy as np
import tdse
from benchmarks import drives

rng = np.random.default_rng(56)
cfgs = {k: drives.make(k, rng) for k in drives.KINDS}


def te(c, k):
    return dataclasses.replace(c, propagator=dataclasses.replace(c.propagator, time_error=k))


for kind, c in cfgs.items():
    s = {"none": [], "estimate": []}
    for i in range(9):
        for k in s:
            r = tdse.simulate(te(c, k), backend="cupy", progress=False)
            if i >= 2:
                s[k].append(r.seconds)
    m = {k: float(np.median(v)) for k, v in s.items()}
    print(kind, c.grid.n, c.grid.stencil, c.time.steps, {k: round(v * 1e3, 2) for k, v in m.items()}, "ms",
          f"x{m['estimate'] / m['none']:.3f}", flush=True)


def profile(c):
    pr = cProfile.Profile()
    pr.enable()
    for _ in range(5):
        tdse.simulate(c, backend="cupy", progress=False)
    pr.disable()
    return {f"{k[0].split('/')[-1]}:{k[1]}({k[2]})": v[3] / 5 for k, v in pstats.Stats(pr).stats.items()}


for kind in sys.argv[1:]:
    a, b = profile(te(cfgs[kind], "estimate")), profile(te(cfgs[kind], "none"))
    diff = sorted(((a.get(f, 0) - b.get(f, 0), f) for f in set(a) | set(b)), reverse=True)
    print(f"## {kind}: cumulative ms a run, estimate minus none (top 40)")
    for d, f in diff[:40]:
        print(f"  {d * 1e3:8.3f}  est {a.get(f, 0) * 1e3:8.3f}  none {b.get(f, 0) * 1e3:8.3f}  {f}")
