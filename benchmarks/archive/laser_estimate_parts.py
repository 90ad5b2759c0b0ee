"""#56: where the laser drive's error bar goes on the host (the time-error suite's cost row:
benchmarks/drives.py "laser", seed 56's draw -- the DVR, N = 320, cfm4 by Chebyshev with
the absorber's masks, 500 steps, a snapshot every 10).  The run without and with the
estimate alternating in one process (medians of R), and within the runs with it the
estimate's parts by their own clocks: a piece's local errors (LocalError.block: the DVR's
kinetic products by FFT -- timed apart -- and the rest of the Horner plan), the carrier
(e carried over the piece, EstimatingStepper._carried), and what is left of the extra wall
(the snapshots' stated errors, psi's rows kept, the loop's own slowdown beside them).
Usage: PYTHONPATH=. python benchmarks/archive/laser_estimate_parts.py [R]"""
import collections
import dataclasses
import sys
import time

import numpy as np

import tdse
from benchmarks import drives
from tdse.model import ffts
from tdse.model import hamiltonian
from tdse.numerics import adaptive, local_error

rng = np.random.default_rng(56)
for k in ("abrupt", "ramped"):
    drives.make(k, rng)
cfg = drives.make("laser", rng)
R = int(sys.argv[1]) if len(sys.argv) > 1 else 15
clock, calls, on = collections.Counter(), collections.Counter(), [False]


def timed(owner, name, label):
    f = getattr(owner, name)

    def g(*a, **k):
        t0 = time.perf_counter()
        try:
            return f(*a, **k)
        finally:
            if on[0]:
                clock[label] += time.perf_counter() - t0
                calls[label] += 1
    setattr(owner, name, g)


timed(local_error.LocalError, "block", "block")
timed(adaptive.EstimatingStepper, "_carried", "carrier")
# the block's kinetic products (a run's steps as columns: 2-d; the steps' own are vectors)
padded = ffts.padded_kinetic


def products(X, lam, n, xp=np):
    if X.ndim == 1 or not on[0]:
        return padded(X, lam, n, xp)
    t0 = time.perf_counter()
    try:
        return padded(X, lam, n, xp)
    finally:
        clock["block products"] += time.perf_counter() - t0
        calls["block products"] += 1


hamiltonian.padded_kinetic = products


def kind(te):
    return dataclasses.replace(cfg, propagator=dataclasses.replace(cfg.propagator, time_error=te))


for te in ("none", "estimate"):
    tdse.simulate(kind(te))
walls, own = {"none": [], "estimate": []}, []
for _ in range(R):
    for te in walls:
        on[0] = te == "estimate"
        r = tdse.simulate(kind(te))
        walls[te].append(r.seconds)
        if on[0]:
            own.append(r.time_error["estimate_seconds"])
on[0] = False
med = {k: float(np.median(v)) for k, v in walls.items()}
extra = med["estimate"] - med["none"]
print(f"laser draw: N = {cfg.grid.n}, {cfg.time.steps} steps, {R} runs each, alternating")
print(f"without the estimate: median {med['none']:.3f} s (min {min(walls['none']):.3f}); with it: median "
      f"{med['estimate']:.3f} s (min {min(walls['estimate']):.3f}); x{med['estimate'] / med['none']:.3f}, "
      f"extra {extra * 1e3:.1f} ms a run")
print(f"the estimate's own clock: median {np.median(own) * 1e3:.1f} ms a run")
for k in ("block", "block products", "carrier"):
    print(f"  {k:15s} {clock[k] / R * 1e3:6.1f} ms a run ({calls[k] / R:.0f} calls)")
rest = extra - (clock["block"] + clock["carrier"]) / R
print(f"  block less its products {(clock['block'] - clock['block products']) / R * 1e3:6.1f} ms a run")
print(f"  the extra wall less block and carrier {rest * 1e3:6.1f} ms a run")
