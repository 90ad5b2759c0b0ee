"""#59 item 5: the DVR's pairs with populations every step in the look-ahead's worker
("on") against in the loop ("off") on this CPU: h2plus_moving's molecule at N points
(method chebyshev, no time error, observables every step, S steps), `tdse.simulate` with
populations_every = S (at the ends only: "without") and every step, two rounds, the best
kept.  Prints a line per N: the seconds and the ratios off / on against without.

    python benchmarks/archive/dvr_every_step.py S N[,N...]
"""
import dataclasses
import os
import sys
import time
import warnings

import tdse
from tdse import config as cfgmod

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

if __name__ == "__main__":
    warnings.simplefilter("ignore")
    S, ns = int(sys.argv[1]), [int(v) for v in sys.argv[2].split(",")]
    base = cfgmod.load(os.path.join(ROOT, "inputs", "h2plus_moving.toml"))
    w = base.grid.x_max - base.grid.x_min
    for n in ns:
        cfg = dataclasses.replace(base, grid=dataclasses.replace(base.grid, dx=w / n, stencil="dvr"))
        cfg = (cfg.with_value("propagator.method", "chebyshev").with_value("propagator.time_error", "none")
               .with_value("time.t_end", S * cfg.time.dt).with_value("output.observables_every", 1))
        best = {}
        for _ in range(2):
            for key, pe, ew in (("without", S, "off"), ("off", 1, "off"), ("on", 1, "on")):
                c = cfg.with_value("output.populations_every", pe).with_value("run.eigen_workers", ew)
                t = time.perf_counter()
                tdse.simulate(c, backend="numpy")
                best[key] = min(best.get(key, 1e9), time.perf_counter() - t)
        print(n, {k: round(v, 2) for k, v in best.items()}, "ratios off/on",
              round(best["off"] / best["without"], 2), round(best["on"] / best["without"], 2), flush=True)
