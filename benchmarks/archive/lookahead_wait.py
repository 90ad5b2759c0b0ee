"""#54: one in-process run of h2plus_moving (3-point at N points, auto, populations every 10, the look-ahead on), its loop, the loop's wait for H(t)'s pairs and their seconds, from the file.  Run from a tree's root to compare trees.
Usage: python lookahead_wait.py N STEPS"""
import dataclasses, os, sys, tempfile, json
sys.path.insert(0, os.getcwd())
import h5py
from tdse import config as cfgmod
from tdse.run.driver import run
from tdse.run.runfile import readable_attrs
base = cfgmod.load("inputs/h2plus_moving.toml")
N=int(sys.argv[1]); w = base.grid.x_max - base.grid.x_min
cfg = dataclasses.replace(base, grid=dataclasses.replace(base.grid, dx=w / N, stencil=3))
cfg = (cfg.with_value("propagator.method", "auto").with_value("propagator.time_error", "none")
       .with_value("time.t_end", int(sys.argv[2]) * cfg.time.dt).with_value("output.populations_every", 10)
       .with_value("run.eigen_workers", "on"))
r = run(cfg, tempfile.mkdtemp(), backend="numpy", force=True, allow_inaccurate=True)
with h5py.File(r.path) as f:
    at = readable_attrs(f)
print(os.path.basename(os.getcwd()), "loop %.3f wait %.3f pairs %.3f" % (float(at["wall_seconds"]), float(at.get("eigenpairs_wait_seconds", 0)), float(at.get("eigenpairs_seconds", 0))))
