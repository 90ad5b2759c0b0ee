"""#59 item 5: the DVR tracker (Davidson, N = 1024, h2plus_moving's molecule, populations every step): ms a call over 100 calls after 20, iterations a call, then cProfile of 100 calls.

    PYTHONPATH=. python benchmarks/archive/dvr_corrections.py
"""
import dataclasses, time, cProfile, pstats, io, warnings
warnings.simplefilter("ignore")
from tdse import config as cfgmod
from tdse.model.tracker import Tracker
base = cfgmod.load("inputs/h2plus_moving.toml")
w = base.grid.x_max - base.grid.x_min
cfg = dataclasses.replace(base, grid=dataclasses.replace(base.grid, dx=w / 1024, stencil="dvr"))
cfg = cfg.with_value("time.t_end", 4000 * cfg.time.dt).with_value("output.populations_every", 1)
tr = Tracker(cfg, cfg.output.populations)
print("iterative", tr.iterative, "K", tr.K, "block", tr.block)
for s in range(20): tr(s * cfg.time.dt)
t = time.perf_counter()
for s in range(20, 120): tr(s * cfg.time.dt)
print("per call ms", (time.perf_counter() - t) / 100 * 1e3, "iterations/call", tr.iterations / tr.calls)
pr = cProfile.Profile(); pr.enable()
for s in range(120, 220): tr(s * cfg.time.dt)
pr.disable(); s = io.StringIO(); pstats.Stats(pr, stream=s).sort_stats("tottime").print_stats(14); print(s.getvalue()[:3500])
