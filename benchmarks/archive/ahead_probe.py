"""H(t)'s eigenpairs ahead in a worker process or in the loop (#23 item 3): one `tdse.run`
in process for each mode (TDSE_EIGENPAIRS_AHEAD = 1 / 0), with the loop's time, the
eigenpairs' seconds and the loop's wait for them, and the calls the worker answered; then a
cProfile of the run with the worker (its main thread: what the loop spends besides them).
python benchmarks/archive/ahead_probe.py INPUT N STENCIL STEPS POP_EVERY BACKEND [WORKERS]
(WORKERS: observers.AHEAD_WORKERS, the most workers a stateless solver's calls get)"""
import cProfile
import os
import pstats
import sys
import tempfile
import time

import h5py

from run_profile import case      # the probes' case (this folder is on sys.path)

from tdse.run import observers
from tdse.run.driver import run


def once(plan, d, mode):
    os.environ["TDSE_EIGENPAIRS_AHEAD"] = mode
    seen = {}
    call = observers._Ahead.__call__

    def counted(self, step, t):
        out = call(self, step, t)
        seen["worker"] = self.from_worker
        return out
    observers._Ahead.__call__ = counted
    t0 = time.perf_counter()
    r = run(plan, d, force=True)
    wall = time.perf_counter() - t0
    observers._Ahead.__call__ = call
    with h5py.File(r.path) as f:
        a = dict(f.attrs)
    return (f"ahead={mode}: wall {wall:.3f} loop {a['wall_seconds']:.3f} eigenpairs "
            f"{a['eigenpairs_seconds']:.3f} s, waited {a['eigenpairs_wait_seconds']:.3f} s, "
            f"{a['eigenpairs_calls']} calls, {seen.get('worker', 0)} by the worker")


if __name__ == "__main__":
    if len(sys.argv) > 7:
        observers.AHEAD_WORKERS = int(sys.argv[7])
    cfg, plan = case(*sys.argv[1:7])
    d = tempfile.mkdtemp()
    run(plan, d, force=True)                       # warm
    lines = [once(plan, d, m) for m in ("1", "0", "1", "0")]
    os.environ["TDSE_EIGENPAIRS_AHEAD"] = "1"
    cProfile.run("run(plan, d, force=True)", "/tmp/ahead.prof")
    pstats.Stats("/tmp/ahead.prof").sort_stats("tottime").print_stats(20)
    print(f"{cfg.grid.n} {cfg.grid.stencil} {cfg.time.steps} steps, populations every "
          f"{cfg.output.populations_interval}, {sys.argv[6]}, at most {observers.AHEAD_WORKERS} workers:")
    print("\n".join(lines))
