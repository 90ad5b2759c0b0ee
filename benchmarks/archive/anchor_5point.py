"""A 5-point window's anchor from scratch (tracker.Tracker._scratch, #23 item 1): the 3-point
pairs (dstemr) refined by states.warm_banded, against the solver it replaced from N = 1024
-- Davidson from the 3-point pairs (Tracker._iterate) -- and, below, the banded solver; 5
times of h2plus_moving's molecule 0.2 a.u. apart, ms a call, and whether every refined set
was vouched for (the 3-point Sturm count), with its energies' distance from the other's.

    python benchmarks/archive/anchor_5point.py [N ...]
"""
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
from tdse import config as cfgmod  # noqa: E402
from tdse.model import states, tracker  # noqa: E402

INPUT = os.path.join(os.path.dirname(__file__), "..", "..", "inputs", "h2plus_moving.toml")


def main(ns=(256, 2048, 8192)):
    for n in ns:
        cfg = cfgmod.load(INPUT).with_value("grid.stencil", 5).with_value("grid.dx", 25.6 / n)
        g = cfg.grid
        tr = tracker.Tracker(cfg, 4)
        ts = [0.2 * j for j in range(1, 6)]
        V = tr._potentials(ts)
        t0 = time.perf_counter()
        if tr.iterative:
            old = [tr._iterate(t, v, states.fd_start(g, v, tr.block))[:2] for t, v in zip(ts, V)]
        else:
            old = [states.pentadiagonal(g, v, 4) for v in V]
        t1 = time.perf_counter()
        new = [states.warm_banded(g, v, *states.tridiagonal(g, v, 4), states.residual_bound(g, v))
               for v in V]
        t2 = time.perf_counter()
        ok = all(x is not None for x in new)
        dE = max(np.abs(a[0][:4] - b[0]).max() for a, b in zip(old, new)) if ok else float("nan")
        print(f"N = {n}: {'Davidson' if tr.iterative else 'banded solver'} {1e3 * (t1 - t0) / 5:.2f} ms, "
              f"from the 3-point pairs {1e3 * (t2 - t1) / 5:.2f} ms; all vouched for: {ok}; "
              f"energies {dE:.1e} apart", flush=True)


if __name__ == "__main__":
    main(tuple(int(a) for a in sys.argv[1:]) or (256, 2048, 8192))
