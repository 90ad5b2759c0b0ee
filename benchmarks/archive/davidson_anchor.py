"""Davidson's pairs of H(t) along a run (h2plus_moving's molecule, calls one populations
interval apart) started from each call's anchor block (tracker.Tracker, since c577f0e: a call's
pairs depend on t alone) against started from the previous call's block (the code before):
iterations summed and seconds, per stencil and N (#23 item 1).

    python benchmarks/archive/davidson_anchor.py [CALLS]
"""
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.dirname(os.path.dirname(HERE))]

from tdse import config as cfgmod  # noqa: E402
from tdse.model import states, tracker  # noqa: E402
from tdse.model.grid import points  # noqa: E402
from tdse.model.potential import soft_core  # noqa: E402


def main(calls=48):
    inp = os.path.join(os.path.dirname(os.path.dirname(HERE)), "inputs", "h2plus_moving.toml")
    for st in (5, "dvr"):
        for n in (1024, 8192):
            cfg = cfgmod.load(inp).with_value("grid.stencil", st).with_value("grid.dx", 25.6 / n)
            g, x = cfg.grid, points(cfg.grid)
            ts = cfg.output.populations_interval * cfg.time.dt * np.arange(calls)
            tr = tracker.Tracker(cfg, 4)
            t0 = time.perf_counter()
            for t in ts:
                tr(t)
            anchor_s, anchor_it = time.perf_counter() - t0, tr.iterations
            its, X = 0, None
            t0 = time.perf_counter()
            with states.eigen_threads():
                for t in ts:
                    v = soft_core(cfg.potential, x, t)
                    start = X if X is not None else states.fd_start(g, v, tr.block)
                    _, X, it, _ = states.davidson(g, v, start, 4)
                    its += it
            prev_s = time.perf_counter() - t0
            print(f"{st} N = {n}: {calls} calls, from the anchors {anchor_it} iterations "
                  f"{anchor_s:.3f} s; from the previous call {its} iterations {prev_s:.3f} s", flush=True)


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:2]))
