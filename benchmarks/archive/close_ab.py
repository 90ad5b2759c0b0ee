"""#54: the CPU row's fixed costs beyond its loop -- `tdse run` of the run-overhead suite's
3-point N = 256 case (8000 steps, populations every 10) with the look-ahead's worker
(run.eigen_workers = auto) and without (off), alternating, each run's wall by phase.

    python benchmarks/archive/close_ab.py
"""
import os, sys, tempfile, dataclasses
sys.path.insert(0, os.getcwd())
from benchmarks.suites import _timed_run
from tdse import config as cfgmod
base = cfgmod.load("inputs/h2plus_moving.toml")
w = base.grid.x_max - base.grid.x_min
cfg = dataclasses.replace(base, grid=dataclasses.replace(base.grid, dx=w / 256, stencil=3))
cfg = cfg.with_value("time.t_end", 8000 * cfg.time.dt).with_value("output.populations_every", 10).with_value("propagator.time_error", "none").with_value("propagator.method", "chebyshev")
d = tempfile.mkdtemp()
res = {}
for k in range(3):
    for ew in ("auto", "off"):
        c = cfg.with_value("run.eigen_workers", ew)
        p = os.path.join(d, "in.toml"); open(p, "w").write(cfgmod.to_toml(c))
        out = os.path.join(d, f"{c.name}.h5")
        if os.path.exists(out): os.remove(out)
        wall, attrs, ph = _timed_run(["run", p, "--out", d, "--quiet", "--no-plots", "--force", "--yes"], out)
        res.setdefault(ew, []).append((wall, ph))
for ew, v in res.items():
    for wall, ph in v:
        print(ew, f"wall {wall:.3f}", " ".join(f"{k} {x:.3f}" for k, x in ph.items()))
