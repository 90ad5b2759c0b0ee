"""What the 3- and 5-point H(t) pairs cost a call by windows (tracker.Tracker.window: the
populations times of WARM_ANCHOR_CALLS intervals solved together, the first from scratch,
the others by stacked inverse iteration from it) against the solver from scratch at every
call (warm_min above N: 3-point dstemr; 5-point the banded solver up to N = 512, Davidson
beyond), along h2plus_moving's molecule (4 pairs, calls 0.2 a.u. apart: populations
every 10 steps of 0.02), and how far their energies and pair sums are apart; then the
window's size at N = 256.  One process, the calls in time order, 2 repeats each.

    python benchmarks/archive/window_pairs.py [N ...]
"""
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
from tdse import config as cfgmod  # noqa: E402
from tdse.model import states, tracker  # noqa: E402

INPUT = os.path.join(os.path.dirname(__file__), "..", "..", "inputs", "h2plus_moving.toml")


def config(n, stencil=3):
    return cfgmod.load(INPUT).with_value("grid.stencil", stencil).with_value("grid.dx", 25.6 / n).with_value(
        "time.t_end", 200.0).with_value("output.populations_every", 10)


def per_call(cfg, times, **kw):
    tr = tracker.Tracker(cfg, 4, **kw)
    t0 = time.perf_counter()
    out = [tr(t) for t in times]
    return (time.perf_counter() - t0) / len(times), out, tr


def main(ns=(256, 2048)):
    print("# us a call (min of 2 repeats); window against the solver from scratch at every call")
    for stencil, n in [(s, n) for s in (3, 5) for n in ns]:
        cfg = config(n, stencil)
        times = np.arange(800 if n <= 2048 else 160) * 10 * cfg.time.dt
        w = min(per_call(cfg, times, warm_min=0)[0] for _ in range(2))
        s = min(per_call(cfg, times, warm_min=10 ** 9)[0] for _ in range(2))
        _, A, tr = per_call(cfg, times, warm_min=0)
        _, B, _ = per_call(cfg, times, warm_min=10 ** 9)
        dE = max(np.abs(a[0] - b[0]).max() for a, b in zip(A, B))
        # the pairs' projectors: the near-degenerate lowest pair as a pair, the others alone
        dP = max(max(np.abs(a[1][:2].T @ a[1][:2] - b[1][:2].T @ b[1][:2]).max(),
                     np.abs(np.abs(np.sum(a[1][2:] * b[1][2:], axis=1) * cfg.grid.dx) - 1).max())
                 for a, b in zip(A, B))
        print(f"{stencil}-point, N = {n}: {len(times)} calls, window {w * 1e6:.1f} us, scratch {s * 1e6:.1f} us "
              f"({s / w:.2f}x); restarts {tr.restarts}; energies {dE:.1e} apart, projectors {dP:.1e}",
              flush=True)
    cfg = config(256)
    times = np.arange(800) * 10 * cfg.time.dt
    for calls in (8, 16, 32, 64):
        w = [per_call(cfg, times, warm_min=0, anchor_calls=calls)[0] * 1e6 for _ in range(2)]
        print(f"3-point, N = 256, {calls} calls a window: {min(w):.1f}-{max(w):.1f} us a call", flush=True)


if __name__ == "__main__":
    main(tuple(int(a) for a in sys.argv[1:]) or (256, 2048))
