"""#56 / #59: the time-error suite's laser drive (seed 56, drawn after abrupt and ramped; DVR N = 320, 500 steps) on 2 CPUs with time_error "none" and "estimate", its host FFTs by scipy.fft (tdse.model.ffts's fallback) against SciPy's pocketfft binding in place (as shipped), alternating, medians of 7 in one process: what the faster FFTs do to the estimate's ratio.  Usage: python host_fft_estimate.py"""
import dataclasses
import os
import sys

import numpy as np

sys.path.insert(0, os.getcwd())
import tdse
from benchmarks import drives
from tdse.model import ffts
binding = ffts._pocket()
rng = np.random.default_rng(56)
for kind in ("abrupt", "ramped"):
    drives.make(kind, rng)
cfg = drives.make("laser", rng)
def kind_of(c, te): return dataclasses.replace(c, propagator=dataclasses.replace(c.propagator, time_error=te))
res = {}
for _ in range(7):
    for way, b in (("scipy.fft", None), ("in place", binding)):
        ffts._POCKET[0] = b
        for te in ("none", "estimate"):
            r = tdse.simulate(kind_of(cfg, te), backend="numpy", progress=False)
            res.setdefault((way, te), []).append(r.seconds)
m = {k: float(np.median(v)) for k, v in res.items()}
for way in ("scipy.fft", "in place"):
    print(f"laser N = {cfg.grid.n} {cfg.grid.stencil}, {cfg.time.steps} steps, FFTs by {way}: none {m[(way, 'none')]:.3f} s, estimate {m[(way, 'estimate')]:.3f} s, x{m[(way, 'estimate')] / m[(way, 'none')]:.2f}")
