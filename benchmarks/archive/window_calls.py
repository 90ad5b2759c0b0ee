"""#59 item 5: the 3- and 5-point trackers' windows (Tracker.window: the anchor from scratch,
the other members by states.warm_banded_many) a call, by window size (anchor_calls 8 ..
128), with populations every step and every 10 steps of h2plus_moving at N points (4000
steps), the best of 3; restarts counted.  Then one window size under cProfile (3-point, 64).

    PYTHONPATH=. python benchmarks/archive/window_calls.py N
"""
import dataclasses, time, warnings, sys
import numpy as np
warnings.simplefilter("ignore")
from tdse import config as cfgmod
from tdse.model.tracker import Tracker
base = cfgmod.load("inputs/h2plus_moving.toml")
w = base.grid.x_max - base.grid.x_min
n = int(sys.argv[1])
for st in (3, 5):
    for every in (1, 10):
        row = []
        for calls in (8, 16, 32, 64, 128):
            cfg = dataclasses.replace(base, grid=dataclasses.replace(base.grid, dx=w / n, stencil=st))
            cfg = cfg.with_value("time.t_end", 4000 * cfg.time.dt).with_value("output.populations_every", every)
            best = 1e9
            for rep in range(3):
                tr = Tracker(cfg, cfg.output.populations, anchor_calls=calls)
                nw = (cfg.time.steps // every) // calls
                t = time.perf_counter()
                for a in range(nw):
                    tr.window(a)
                best = min(best, (time.perf_counter() - t) / (nw * calls) * 1e6)
            row.append(f"{calls}:{best:.0f}us(r{tr.restarts})")
        print(f"N={n} stencil {st} every {every}:", " ".join(row), flush=True)
import cProfile, io, pstats  # noqa: E401,E402
cfg = dataclasses.replace(base, grid=dataclasses.replace(base.grid, dx=w / n, stencil=3))
cfg = cfg.with_value("time.t_end", 4000 * cfg.time.dt).with_value("output.populations_every", 1)
tr = Tracker(cfg, cfg.output.populations, anchor_calls=64)
pr = cProfile.Profile()
pr.enable()
for a in range(60):
    tr.window(a)
pr.disable()
s = io.StringIO()
pstats.Stats(pr, stream=s).sort_stats("tottime").print_stats(10)
print("\n".join(line for line in s.getvalue().splitlines() if line.strip()))
