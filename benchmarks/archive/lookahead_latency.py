"""#59 item 5 / #54: the eigenpairs look-ahead on a 2-core box -- what a moving-centre run
with populations in H(t)'s eigenstates every P steps costs, computing the pairs in the
loop (``run.eigen_workers = "off"``) and in a worker process ("on"), against the same run
with the populations at its ends only.  h2plus_moving at N points per stencil, auto's
method, no time error, observables every step, S steps, `tdse.simulate` (prepare
included), each case twice, the best kept.  Besides the walls: the loop's steps alone
(``advance``, ms a step, the median of its 1000-step blocks), the loop's wait for the
pairs (``eigenpairs_wait_seconds``), and a call's pairs on one core (the tracker alone,
calls 0 .. min(S, 400) P steps, ``call (ms)`` in the "off" row).

    python benchmarks/archive/lookahead_latency.py S N[,N...] STENCIL[,STENCIL...] [P [T,...]]

T: values of ``tdse.run.eigenpairs.TASK_STEPS`` for the "on" case, a row each (1: a task a
window, as before 2026-11-29; default the module's).
"""
import dataclasses
import os
import sys
import time
import warnings

import numpy as np

import tdse
from tdse import config as cfgmod
from tdse.model import tracker
from tdse.run import eigenpairs, loop

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

if __name__ == "__main__":
    warnings.simplefilter("ignore")
    S, ns, sts = int(sys.argv[1]), [int(v) for v in sys.argv[2].split(",")], sys.argv[3].split(",")
    P = int(sys.argv[4]) if len(sys.argv) > 4 else 1
    task_steps = [int(v) for v in sys.argv[5].split(",")] if len(sys.argv) > 5 else [eigenpairs.TASK_STEPS]
    base = cfgmod.load(os.path.join(ROOT, "inputs", "h2plus_moving.toml"))
    w = base.grid.x_max - base.grid.x_min
    blocks = []
    inner = loop.advance

    def timed(stepper, X, j0, j1, *a, **k):
        t0 = time.perf_counter()
        out = inner(stepper, X, j0, j1, *a, **k)
        blocks[j0 // 1000] += time.perf_counter() - t0
        return out
    loop.advance = timed
    print(f"# python benchmarks/archive/lookahead_latency.py {' '.join(sys.argv[1:])} "
          f"({time.strftime('%Y-%m-%dT%H:%M', time.gmtime())}, {os.cpu_count()} CPUs)")
    print("| N | stencil | case | wall (s) | x ends only | step (ms) | wait (s) | call (ms) |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for n in ns:
        for st in sts:
            st = int(st) if st in ("3", "5") else st
            cfg = dataclasses.replace(base, grid=dataclasses.replace(base.grid, dx=w / n, stencil=st))
            cfg = (cfg.with_value("propagator.method", "auto").with_value("propagator.time_error", "none")
                   .with_value("time.t_end", S * cfg.time.dt).with_value("output.observables_every", 1))
            cases = {"ends only": (cfg.with_value("output.populations_every", S), None)}
            every = cfg.with_value("output.populations_every", P)
            cases["off"] = (every.with_value("run.eigen_workers", "off"), None)
            for ts in task_steps:
                cases[f"on, TASK_STEPS {ts}"] = (every.with_value("run.eigen_workers", "on"), ts)
            tr = tracker.Tracker(every, every.output.populations)
            t0 = time.perf_counter()
            for s in range(0, min(S, 400) * P, P):
                tr(s * cfg.time.dt)
            call = (time.perf_counter() - t0) / min(S, 400) * 1e3
            best = {}
            for _ in range(2):
                for name, (c, ts) in cases.items():
                    eigenpairs.TASK_STEPS = ts or eigenpairs.TASK_STEPS
                    blocks[:] = [0.0] * (S // 1000 + 1)
                    t0 = time.perf_counter()
                    r = tdse.simulate(c, backend="numpy")
                    wall = time.perf_counter() - t0
                    if wall < best.get(name, (1e9,))[0]:
                        step = float(np.median(blocks[:max(1, S // 1000)])) / min(S, 1000) * 1e3
                        best[name] = (wall, step, r.attrs.get("eigenpairs_wait_seconds", 0.0))
            for name, (wall, step, wait) in best.items():
                print(f"| {n} | {st} | {name} | {wall:.2f} | {wall / best['ends only'][0]:.2f} | "
                      f"{step:.3f} | {wait:.2f} | {f'{call:.3f}' if name == 'off' else ''} |", flush=True)
