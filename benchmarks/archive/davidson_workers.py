"""Davidson-tracked eigenpairs of H(t) (5-point or DVR beyond N = 512) computed ahead by one
worker process or by two: since each call starts from its anchor's block (a call's pairs
depend on t alone, tracker.Tracker), two workers may share the calls, as they do the direct
solvers'.  Whole runs of the probes' case (`tdse.run.driver.run` of one prepared plan, the
observers, the file), TDSE_EIGENPAIRS_AHEAD=1, alternated, REPEAT times: the run's loop
seconds, the seconds the loop waited for the pairs, the pairs' own seconds; and whether the
two runs' H(t) populations are the same bits.

    python benchmarks/archive/davidson_workers.py INPUT N STENCIL STEPS POP_EVERY BACKEND REPEAT
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
from tdse.run import observers  # noqa: E402
from tdse.run.driver import run  # noqa: E402
from tdse.run.plan import prepare  # noqa: E402


def main(inp, n, st, steps, pe, backend, rep):
    warnings.simplefilter("ignore")
    os.environ["TDSE_EIGENPAIRS_AHEAD"] = "1"
    cfg = case_config(inp, n, st, steps, pe)
    plan = prepare(cfg, backend=backend, check_resolution=False)
    d = tempfile.mkdtemp()
    print(f"# {os.path.basename(inp)}, {st}-stencil, N = {n}, {steps} steps, populations every "
          f"{pe}, {backend}; seconds", flush=True)
    base = observers.workers_for
    observers.worker_pools(2)                     # both started before the timed runs
    run(plan, d, force=True)
    pops = {}
    for _ in range(int(rep)):
        for k in (1, 2):
            observers.workers_for = lambda tracker, k=k: k
            t0 = time.perf_counter()
            res = run(plan, d, force=True)
            wall = time.perf_counter() - t0
            observers.workers_for = base
            with h5py.File(res.path) as f:
                a = f.attrs
                pops[k] = np.asarray(f["observables/populations_ht"])
                print(f"{k} worker(s)  run {wall:7.3f}  loop {float(a['wall_seconds']):7.3f}  pairs "
                      f"{int(a['eigenpairs_calls'])} taking {float(a['eigenpairs_seconds']):6.3f}  "
                      f"loop waited {float(a['eigenpairs_wait_seconds']):6.3f}", flush=True)
        print("populations_ht the same bits:", np.array_equal(pops[1], pops[2], equal_nan=True),
              flush=True)


if __name__ == "__main__":
    a = sys.argv[1:8]
    main(a[0], int(a[1]), a[2], int(a[3]), int(a[4]), a[5], int(a[6]))
