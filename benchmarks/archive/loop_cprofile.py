"""#54: cProfile of a 2-CPU in-process run (h2plus_moving_large at N = 256, Chebyshev, no time error, 8000 steps) with H(t)'s populations at the ends and every 10 steps (the look-ahead as auto takes it), the 14 functions of most own time each; the loop's us a step first.  Usage: python loop_cprofile.py STENCIL"""
import dataclasses, os, sys, tempfile, time, cProfile, pstats
sys.path.insert(0, os.getcwd())
import h5py
from tdse import config as cfgmod
from tdse.run.driver import run
from tdse.run.runfile import readable_attrs
base = cfgmod.load("inputs/h2plus_moving_large.toml")
w = base.grid.x_max - base.grid.x_min
S = 8000
cfg = dataclasses.replace(base, grid=dataclasses.replace(base.grid, dx=w / 256, stencil=int(sys.argv[1])))
cfg = (cfg.with_value("propagator.method", "chebyshev").with_value("propagator.time_error", "none")
       .with_value("time.t_end", S * cfg.time.dt))
cases = {"ends": cfg.with_value("output.populations_every", S), "every": cfg.with_value("output.populations_every", 10)}
for name, c in cases.items():
    run(c, tempfile.mkdtemp(), backend="numpy", force=True, allow_inaccurate=True)
    pr = cProfile.Profile()
    pr.enable()
    r = run(c, tempfile.mkdtemp(), backend="numpy", force=True, allow_inaccurate=True)
    pr.disable()
    with h5py.File(r.path) as f:
        print(name, "loop us a step", float(readable_attrs(f)["wall_seconds"]) / S * 1e6)
    pstats.Stats(pr).sort_stats("tottime").print_stats(14)
