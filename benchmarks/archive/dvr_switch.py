"""#59 item 5 probe: the DVR tracker's call at every step, dense (direct_max = N) against
Davidson from the anchors (direct_max = 0), h2plus_moving's molecule, 2 cores: ms a call over 199 calls one step apart (the first apart).
python benchmarks/archive/dvr_switch.py 128,256,384,512"""
import dataclasses, sys, time
import numpy as np
import tdse
from tdse import config as cfgmod
from tdse.model.tracker import Tracker
base = cfgmod.load("inputs/h2plus_moving.toml")
w = base.grid.x_max - base.grid.x_min
K = base.output.populations
print("| N | dense ms a call | Davidson ms a call | its a call |")
for n in [int(v) for v in sys.argv[1].split(",")]:
    cfg = dataclasses.replace(base, grid=dataclasses.replace(base.grid, dx=w / n, stencil="dvr"))
    cfg = cfg.with_value("output.populations_every", 1)
    out = {}
    for name, dm in (("dense", 10**9), ("dav", 0)):
        tr = Tracker(cfg, K, direct_max=dm)
        times = np.arange(200) * cfg.time.dt
        tr(times[0])
        t0 = time.perf_counter()
        for t in times[1:]:
            tr(t)
        out[name] = (time.perf_counter() - t0) / (len(times) - 1) * 1e3
        out[name + "_its"] = tr.iterations / max(tr.calls, 1)
    print(f"| {n} | {out['dense']:.2f} | {out['dav']:.2f} | {out['dav_its']:.1f} |", flush=True)
