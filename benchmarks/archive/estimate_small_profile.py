"""#56: where a small run's estimate goes (benchmarks/drives.py's draws, seed 56 as the
time-error suite draws them): the run's seconds without and with the estimate (alternating,
medians of 5), the estimate's own seconds (time_error["estimate_seconds"]), and the
functions whose own time (cProfile, 3 runs each) grew most from the run without it.
Usage: python benchmarks/archive/estimate_small_profile.py BACKEND KIND [KIND ...]"""
import cProfile
import dataclasses
import pstats
import sys

import numpy as np

import tdse
from benchmarks import drives

backend, kinds = sys.argv[1], sys.argv[2:]
rng = np.random.default_rng(56)
cfgs = {k: drives.make(k, rng) for k in drives.KINDS}


def kind(cfg, te):
    return dataclasses.replace(cfg, propagator=dataclasses.replace(cfg.propagator, time_error=te))


def own(cfg, te):
    pr = cProfile.Profile()
    pr.enable()
    for _ in range(3):
        tdse.simulate(kind(cfg, te), backend=backend)
    pr.disable()
    return {f"{k[0].split('/')[-1]}:{k[2]}": v[2] / 3 for k, v in pstats.Stats(pr).stats.items()}


for name in kinds:
    cfg = cfgs[name]
    tdse.simulate(kind(cfg, "none"), backend=backend)
    tdse.simulate(kind(cfg, "estimate"), backend=backend)
    none, est, own_s = [], [], []
    for _ in range(5):
        none.append(tdse.simulate(kind(cfg, "none"), backend=backend).seconds)
        r = tdse.simulate(kind(cfg, "estimate"), backend=backend)
        est.append(r.seconds)
        own_s.append(r.time_error["estimate_seconds"])
    print(f"{name} N={cfg.grid.n} steps={cfg.time.steps}: none {np.median(none) * 1e3:.1f} ms, "
          f"estimate {np.median(est) * 1e3:.1f} ms (x{np.median(est) / np.median(none):.2f}), "
          f"its own {np.median(own_s) * 1e3:.1f} ms", flush=True)
    a, b = own(cfg, "none"), own(cfg, "estimate")
    d = sorted(((b.get(k, 0) - a.get(k, 0), k) for k in set(a) | set(b)), reverse=True)
    print("  grew most (ms a run, own time):", "; ".join(f"{k} {v * 1e3:.2f}" for v, k in d[:14]))
