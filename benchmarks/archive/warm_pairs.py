"""The 3-point eigenpairs of H(t) from their anchor by inverse iteration (the Tracker's
default from N = states.WARM_MIN_N, forced here at any N: since b29d2d4 by windows,
tracker.Tracker.window; the results of 2026-11-26T06 were warm_tridiagonal a call at a
time) against LAPACK's dstemr from scratch at every
call (the code before it), in whole runs of the probes' case (`tdse.run.driver.run` of one
prepared plan, the observers, the file), each where the pairs are computed: the eigenpairs
thread (TDSE_EIGENPAIRS_AHEAD=auto), the loop (0), a worker process (1, the thread refused):
the run's loop seconds, the seconds the loop waited for the pairs, and the pairs' own
seconds, alternated, REPEAT times; then one call of each alone, averaged over the run's due
times (#23 items 1 and 3).

    python benchmarks/archive/warm_pairs.py INPUT N STEPS POP_EVERY BACKEND REPEAT
"""
import os
import sys
import tempfile
import time
import warnings

import h5py
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.dirname(os.path.dirname(HERE))]

from run_profile import case_config  # noqa: E402  (the probes' case)
from tdse.model import states, tracker  # noqa: E402
from tdse.run import observers  # noqa: E402
from tdse.run.driver import run  # noqa: E402
from tdse.run.plan import prepare  # noqa: E402

WARM = tracker.Tracker._tridiagonal_call


def cold(self, t, v=None):
    """The Tracker's 3-point call before the warm solver: dstemr from scratch."""
    g = self.config.grid
    if v is None:
        v = states.soft_core(self.config.potential, states.points(g), t)
    return states.as_states(g, *states.tridiagonal(g, v, min(self.K, g.n)))


def main(inp, n, steps, pe, backend, rep):
    warnings.simplefilter("ignore")
    cfg = case_config(inp, n, "3", steps, pe)
    plan = prepare(cfg, backend=backend, check_resolution=False)
    d = tempfile.mkdtemp()
    print(f"# {os.path.basename(inp)}, 3-point, N = {n}, {steps} steps, populations every {pe}, "
          f"{backend}; seconds", flush=True)
    run(plan, d, force=True)                      # warm-up (kernels, graphs, the thread)
    threaded = observers.threaded
    variants = (("dstemr, thread", cold, "auto", True), ("warm, thread", WARM, "auto", True),
                ("warm, loop", WARM, "0", True), ("warm, process", WARM, "1", False))
    default_min = states.WARM_MIN_N
    for _ in range(int(rep)):
        for label, call, ahead, thread in variants:
            tracker.Tracker._tridiagonal_call = call
            # warm at this N whatever states.WARM_MIN_N says (the worker gets it with the
            # tracker's settings)
            states.WARM_MIN_N = 0 if call is WARM else default_min
            os.environ["TDSE_EIGENPAIRS_AHEAD"] = ahead
            observers.threaded = threaded if thread else (lambda tracker: False)
            t0 = time.perf_counter()
            res = run(plan, d, force=True)
            wall = time.perf_counter() - t0
            observers.threaded = threaded
            os.environ.pop("TDSE_EIGENPAIRS_AHEAD")
            with h5py.File(res.path) as f:
                a = f.attrs
                print(f"{label:15s} run {wall:7.3f}  loop {float(a['wall_seconds']):7.3f}  pairs "
                      f"{int(a['eigenpairs_calls'])} taking {float(a['eigenpairs_seconds']):6.3f}  "
                      f"loop waited {float(a['eigenpairs_wait_seconds']):6.3f}", flush=True)
    tracker.Tracker._tridiagonal_call = WARM
    states.WARM_MIN_N = default_min
    dt, every = cfg.time.dt, cfg.output.populations_interval
    times = [j * dt for j in range(0, cfg.time.steps + 1, every)]
    for label, call in (("dstemr", cold), ("warm", WARM)):
        tracker.Tracker._tridiagonal_call = call
        tr = tracker.Tracker(cfg, cfg.output.populations, warm_min=0)
        t0 = time.perf_counter()
        for t in times:
            tr(t)
        each = (time.perf_counter() - t0) / len(times)
        print(f"{label:15s} one call {each * 1e3:8.3f} ms (mean of {len(times)}; restarts "
              f"{tr.restarts})", flush=True)
    tracker.Tracker._tridiagonal_call = WARM
    print("# tree:", os.popen("git rev-parse --short HEAD 2>/dev/null").read().strip() or "?")


if __name__ == "__main__":
    a = sys.argv[1:7]
    main(a[0], int(a[1]), int(a[2]), int(a[3]), a[4], int(a[5]))
