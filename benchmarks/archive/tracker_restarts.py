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


def window_chain(self, a):
    """Tracker.window with a refused member tried from the previous member's pairs."""
    if self._window is not None and self._window[0] == a:
        return self._window[1]
    c = self.config
    g, every, calls = c.grid, c.output.populations_interval, self.anchor_calls
    steps = [s for s in range(a * calls * every, (a + 1) * calls * every, every)
             if s <= c.time.steps] or [a * calls * every]
    V = self._potentials([s * c.time.dt for s in steps])
    m = min(self.K, g.n)
    anchor = self._scratch(steps[0] * c.time.dt, V[0])
    got = [anchor] + states.warm_banded_many(
        g, V[1:], *anchor, [states.residual_bound(g, v, self.tol) for v in V[1:]])
    for j, pair in enumerate(got):
        if pair is None:
            self.retries += 1
            got[j] = states.warm_banded(g, V[j], *got[j - 1], states.residual_bound(g, V[j], self.tol))
            if got[j] is None:
                self.restarts += 1
                got[j] = self._scratch(steps[j] * c.time.dt, V[j])
    phi = states.signed(np.concatenate([X.T for _, X in got]) / np.sqrt(g.dx)).reshape(len(got), m, g.n)
    self._window = (a, [(E, p) for (E, _), p in zip(got, phi)], anchor)
    return self._window[1]


N, every, steps = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
cfg = load_config(sys.argv[4] if len(sys.argv) > 4 else "inputs/h2plus_moving_large.toml")
w = cfg.grid.x_max - cfg.grid.x_min
for st in (3, 5):
    g = dataclasses.replace(cfg.grid, dx=w / N, stencil=st)
    c = dataclasses.replace(cfg, grid=g).with_value("output.populations_every", every)
    c = c.with_value("time.t_end", steps * c.time.dt)
    for label, ac in (("16", 16), ("8", 8), ("4", 4), ("2", 2), ("16 chain", 16)):
        tr = trk.Tracker(c, 4, anchor_calls=ac)
        tr.retries = 0
        if "chain" in label:
            tr.window = window_chain.__get__(tr)
        t0 = time.perf_counter()
        n = len([tr(s * c.time.dt) for s in range(0, steps + 1, every)])
        T = time.perf_counter() - t0
        print(f"N = {N} {st}-point, populations every {every}, windows of {label:8s} calls: "
              f"{n} calls {T:.3f} s, {T / n * 1e6:.0f} us a call; restarts {tr.restarts}, "
              f"retries {tr.retries}", flush=True)
