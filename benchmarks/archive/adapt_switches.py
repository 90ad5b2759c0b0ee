"""#56: the time-error suite's adaptive laser (its rows' draw, dt = 1, output every 5) on a
GPU under switches, alternating in one process, ROUNDS rounds: adaptive.PIPELINE (dts
queued ahead) on / off, graph_plan.PLAN_AHEAD (the planner's thread) on / off, and the
interpreter's switch interval 5 ms / 0.1 ms: per switch set, the median evolve seconds
(tdse.simulate's .seconds) of 5 runs at each tolerance.

    python benchmarks/archive/adapt_switches.py [ROUNDS]     (at 765d59c: adaptive.PIPELINE is gone after it)
"""
import sys

import numpy as np

import tdse
from benchmarks import drives
from tdse.config import with_values
from tdse.numerics import adaptive, graph_plan

rng = np.random.default_rng(56)
for kind in drives.KINDS:
    drives.make(kind, rng)
base = with_values(drives.make("laser", rng), [("time.dt", 1.0), ("output.every", 5)])
rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 2
sets = [(p, a, s) for p in (False, None) for a in (True, False) for s in (5e-3, 1e-4)]
got = {}
for tol in (1e-6, 1e-8):
    cfg = with_values(base, [("time.tolerance", tol)])
    for _ in range(2):
        tdse.simulate(cfg, backend="cupy", progress=False)
    for r in range(rounds):
        for p, a, s in sets:
            adaptive.PIPELINE, graph_plan.PLAN_AHEAD = p, a
            sys.setswitchinterval(s)
            ts = [tdse.simulate(cfg, backend="cupy", progress=False).seconds for _ in range(5)]
            got.setdefault((tol, p, a, s), []).append(float(np.median(ts)))
for k, v in got.items():
    print(f"tol {k[0]:g} pipeline {k[1]!s:5} plan_ahead {k[2]!s:5} switch {k[3]:g}: " +
          " ".join(f"{x * 1e3:.0f}" for x in v) + " ms")
