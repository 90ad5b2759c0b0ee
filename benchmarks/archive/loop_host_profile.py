"""#54: where a GPU run's host spends its loop -- cProfile of in-process runs (the main
thread; no error bar, plots off) at N, stencil, S steps, with the populations in H(t)'s
states at the ends ("ends") and every P steps by the look-ahead ("every"); each run once
unprofiled (warm), then once profiled.  Prints the loop's wall a step (the file's
wall_seconds), the bare loop's (benchmarks.suites._bare_steps), and the main thread's
functions by own time.
Usage: python loop_host_profile.py INPUT N STENCIL STEPS P"""
import cProfile, dataclasses, io, os, pstats, sys, tempfile
sys.path.insert(0, os.getcwd())
import h5py
import tdse
from benchmarks.suites import _bare_steps
from tdse import config as cfgmod
from tdse.run.driver import run
from tdse.run.runfile import readable_attrs

path, N, st, S, P = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
base = cfgmod.load(path)
w = base.grid.x_max - base.grid.x_min
cfg = dataclasses.replace(base, grid=dataclasses.replace(base.grid, dx=w / N, stencil=int(st) if st in "35" else st))
cfg = (cfg.with_value("propagator.method", "chebyshev").with_value("propagator.time_error", "none")
       .with_value("time.t_end", S * cfg.time.dt))
CASES = {"ends": cfg.with_value("output.populations_every", S),
         "every": cfg.with_value("output.populations_every", P)}
PLAN = tdse.prepare(CASES["ends"], backend="cupy", check_resolution=False)
bare = min(_bare_steps(PLAN, S)[0] for _ in range(3))
print(f"bare {bare * 1e6:.2f} us a step")


def go(name):
    r = run(CASES[name], tempfile.mkdtemp(), backend="cupy", force=True, allow_inaccurate=True)
    with h5py.File(r.path) as f:
        return float(readable_attrs(f)["wall_seconds"]) / S


for name in CASES:
    go(name)
    pr = cProfile.Profile()
    pr.enable()
    w = go(name)
    pr.disable()
    s = io.StringIO()
    pstats.Stats(pr, stream=s).sort_stats("tottime").print_stats(35)
    print(f"== {name}: loop {w * 1e6:.2f} us a step profiled (x{w / bare:.2f} the bare)")
    print(s.getvalue()[:9000])
    s = io.StringIO()
    pstats.Stats(pr, stream=s).sort_stats("cumulative").print_stats("tdse/(run|numerics)|mgemm/arrays", 40)
    print(s.getvalue()[:7000])
