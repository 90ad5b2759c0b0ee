"""#54: the look-ahead's tracker (tdse.model.tracker.Tracker) along the CPU run-overhead
row's input: its calls at every populations step of a run, timed in one process, and how
many members of its windows it had to solve from scratch (``restarts``: the warm
subspace iteration from the window's anchor refused, tdse.model.states.warm_banded_many),
for windows of 16 (as shipped), 8, 4 and 2 calls, and for 16 with a refused member tried
again from the previous member's pairs before the solver from scratch ("chain").
Usage: python tracker_restarts.py N EVERY STEPS [INPUT (inputs/h2plus_moving_large.toml)]"""
import dataclasses
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.getcwd())
from tdse.config import load_config  # noqa: E402
from tdse.model import states, tracker as trk  # noqa: E402


def chained(many, scratch, counts):
    """states.warm_banded_many with a refused member tried again from the previous member's
    pairs (the anchor's for the first), and solved from scratch (``scratch(v)``, the
    Tracker's own) where that is refused too -- so that the next member starts from exact
    pairs; ``counts`` [retries, restarts]."""
    def wrapped(grid, V, E, X, bounds, *args, **kw):
        out, prev = many(grid, V, E, X, bounds, *args, **kw), (E, X)
        for i, got in enumerate(out):
            if got is None:
                counts[0] += 1
                got = many(grid, V[i][None], *prev, [bounds[i]])[0]     # (warm_banded)
                if got is None:
                    counts[1] += 1
                    got = scratch(V[i])
                out[i] = got
            prev = got
        return out
    return wrapped


N, every, steps = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
cfg = load_config(sys.argv[4] if len(sys.argv) > 4 else "inputs/h2plus_moving_large.toml")
w = cfg.grid.x_max - cfg.grid.x_min
for st in (3, 5):
    g = dataclasses.replace(cfg.grid, dx=w / N, stencil=st)
    c = dataclasses.replace(cfg, grid=g).with_value("output.populations_every", every)
    c = c.with_value("time.t_end", steps * c.time.dt)
    for label, ac in (("16", 16), ("8", 8), ("4", 4), ("2", 2), ("16 chain", 16)):
        tr, counts, many = trk.Tracker(c, 4, anchor_calls=ac), [0, 0], states.warm_banded_many
        if "chain" in label:
            states.warm_banded_many = chained(many, lambda v: tr._scratch(0.0, v), counts)
        try:
            t0 = time.perf_counter()
            n = len([tr(s * c.time.dt) for s in range(0, steps + 1, every)])
            T = time.perf_counter() - t0
        finally:
            states.warm_banded_many = many
        print(f"N = {N} {st}-point, populations every {every}, windows of {label:8s} calls: "
              f"{n} calls {T:.3f} s, {T / n * 1e6:.0f} us a call; restarts {tr.restarts + counts[1]}, "
              f"retries {counts[0]}", flush=True)
