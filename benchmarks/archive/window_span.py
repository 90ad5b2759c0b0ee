"""#59 item 5: the 3- and 5-point trackers' cost a call with populations every step for
windows of 16 / 64 / 160 calls (Tracker(anchor_calls=...)): whether a window spanning more
calls (the anchor's share smaller) pays where the calls are one step apart; h2plus_moving's
molecule at N = 256 / 512 / 2048, 801 calls in the loop's order, one process.

    python benchmarks/archive/window_span.py
"""
import time, numpy as np, tdse, dataclasses
from tdse.model.tracker import Tracker
from tdse.model import states
for st in (3, 5):
    for n in (256, 512, 2048):
        base = tdse.load_config("inputs/h2plus_moving.toml").with_value("grid.stencil", st).with_value("output.populations_every", 1)
        cfg = dataclasses.replace(base, grid=dataclasses.replace(base.grid, dx=25.6/n)).with_value("time.t_end", 2000*0.02)
        times = [k*0.02 for k in range(801)]
        out = []
        for ac in (16, 64, 160):
            tr = Tracker(cfg, 4, anchor_calls=ac)
            t0 = time.perf_counter()
            for t in times: tr(t)
            w = time.perf_counter() - t0
            out.append(f"{ac}: {w/len(times)*1e6:.0f} us (restarts {tr.restarts})")
        print(f"stencil {st} N {n}, calls every step:", "; ".join(out), flush=True)
