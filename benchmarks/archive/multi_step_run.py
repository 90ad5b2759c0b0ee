"""#54: a GPU run's loop with runs of steps launched as one graph (graphs.MULTI_STEPS = 16)
against one graph a step (MULTI_STEPS = 1), alternating in one process on one plan (the
machine's process-to-process spread, +-0.4 s a loop, kept out): INPUT with method auto,
no time error, STEPS steps, populations every EVERY, written to a file as a run is
(tdse.run.driver.run); each run's loop seconds (the file's timeline) and its loop thread's
CPU seconds (time.thread_time: the host work, waits excluded), then the bare loop's.

    python benchmarks/archive/multi_step_run.py INPUT STEPS EVERY [ROUNDS]
"""
import glob, json, sys, tempfile, time
import h5py
import numpy as np
import tdse
from tdse.numerics import graphs as G
from tdse.run.driver import run

path, steps, every = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 3
cfg = tdse.load_config(path)
cfg = (cfg.with_value("propagator.method", "auto").with_value("propagator.time_error", "none")
       .with_value("time.t_end", steps * cfg.time.dt).with_value("output.populations_every", every))
plan = tdse.prepare(cfg, backend="cupy", check_resolution=False, allow_inaccurate=True)
out = {1: [], 16: []}
d = tempfile.mkdtemp()
for r in range(rounds + 1):                  # (round 0: warm-up, not kept)
    for most in (1, 16):
        G.MULTI_STEPS = most
        c0 = time.thread_time()
        res = run(plan, d, force=True)
        cpu = time.thread_time() - c0
        with h5py.File(glob.glob(d + "/*.h5")[0]) as f:
            tl = json.loads(f.attrs["timeline"])
        if r:
            out[most].append((tl["loop_end"] - tl["loop"], cpu))
import cupy as cp
from tdse.run.loop import evolve
bare = {1: [], 16: []}
for r in range(2 * rounds):
    for most in (1, 16):
        G.MULTI_STEPS = most
        st = plan.stepper()
        s = evolve(plan, cp.asarray(plan.psi0), stop=2, stepper=st)
        cp.cuda.Device().synchronize()
        t0, c0 = time.perf_counter(), time.thread_time()
        evolve(plan, s.psi, start=2, stop=steps, stepper=st, settle=False)
        cp.cuda.Device().synchronize()
        bare[most].append((time.perf_counter() - t0, time.thread_time() - c0))
print(f"# {path}, {steps} steps, populations every {every}; us a step: loop (its thread's CPU)")
for most in (1, 16):
    runs = "  ".join(f"{a / steps * 1e6:.1f} ({c / steps * 1e6:.1f})" for a, c in out[most])
    bs = "  ".join(f"{a / steps * 1e6:.1f} ({c / steps * 1e6:.1f})" for a, c in bare[most])
    print(f"MULTI_STEPS = {most:2d}: runs {runs}; bare {bs}")
