"""What each observer costs a CPU run, in process (#23 item 3, 2 cores at N = 256): the same
prepared plan's `evolve` with no observer, with the observables alone, the snapshots alone,
the progress bar alone, and all three (as a run chooses: TDSE_EIGENPAIRS_AHEAD=auto); then
the observables with H(t)'s populations only at the ends, and every 10 steps from the
eigenpairs thread, from a thread that hands back fixed pairs (the hand-over alone), from a
worker process, and computed in the loop; then the observables (and all three) with their
rows measured by the observables' worker process (observers._SharedRows), and the same in
the loop.  Alternated, REPEAT times; seconds of the whole loop.

    python benchmarks/archive/observer_parts.py [N] [STEPS] [REPEAT] [STENCIL]
"""
import dataclasses
import os
import sys
import time
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.dirname(os.path.dirname(HERE))]

import tdse  # noqa: E402
from run_profile import case_config, observers_of  # noqa: E402  (the probes' case)
from tdse.model import states  # noqa: E402
from tdse.run import observers as O  # noqa: E402
from tdse.run.loop import evolve  # noqa: E402
from tdse.run.snapshots import MemoryWriter  # noqa: E402


def main(n=256, steps=8000, repeat=2, stencil="3"):
    warnings.simplefilter("ignore")
    cfg = case_config(os.path.join(os.path.dirname(os.path.dirname(HERE)), "inputs",
                                   "h2plus_moving.toml"), n, stencil, steps, 10)
    plans = {10: tdse.prepare(cfg, backend="numpy", check_resolution=False),
             steps: tdse.prepare(cfg.with_value("output.populations_every", steps),
                                 backend="numpy", check_resolution=False)}

    def go(plan, which, worker=False):
        plan = dataclasses.replace(plan, observer_process=worker)
        c = plan.config
        wr = MemoryWriter(config=c, x=plan.x, v0=np.zeros(c.grid.n), energies=plan.energies,
                          phi=plan.states, attrs={})
        obs = observers_of(plan, wr, which)
        t = time.perf_counter()
        with plan.backend.limit():
            evolve(plan, plan.psi0.copy(), obs)
        return time.perf_counter() - t

    E0, phi0 = states.eigenstates(cfg, 0.0, cfg.output.populations)
    real, default_min = O._thread_pairs, O.THREAD_MIN_N

    def fixed(tracker, times, stop):
        return [(E0, phi0) for _ in times], 0.0, []

    def ahead(where, pairs=real):
        """The observables alone, the pairs every 10 steps ahead in a thread or a process
        (TDSE_EIGENPAIRS_AHEAD=1, THREAD_MIN_N moved), or in the loop (=0)."""
        os.environ["TDSE_EIGENPAIRS_AHEAD"] = "0" if where == "loop" else "1"
        O.THREAD_MIN_N = 0 if where == "thread" else 10 ** 9
        O._thread_pairs = pairs
        try:
            return go(plans[10], "O")
        finally:
            O.THREAD_MIN_N, O._thread_pairs = default_min, real
    O.worker_pools(1)[0][1].result()          # the observables' worker started
    print(f"# N = {n}, {steps} steps, {stencil}-point, h2plus_moving; seconds of evolve (one process); "
          f"the default here: the pairs {'in a thread' if n >= default_min else 'in the loop or a process'}",
          flush=True)
    for _ in range(repeat):
        os.environ["TDSE_EIGENPAIRS_AHEAD"] = "auto"
        row = {k or "none": go(plans[10], k) for k in ("", "O", "S", "P", "OSP")}
        row["O, populations at the ends"] = go(plans[steps], "O")
        row["O, pairs from a thread"] = ahead("thread")
        row["O, fixed pairs from a thread"] = ahead("thread", fixed)
        row["O, pairs from a process"] = ahead("process")
        row["O, pairs in the loop"] = ahead("loop")
        os.environ["TDSE_EIGENPAIRS_AHEAD"] = "auto"
        row["O, rows in the worker"] = go(plans[10], "O", worker=True)
        row["OSP, rows in the worker"] = go(plans[10], "OSP", worker=True)
        print("  ".join(f"{k}: {v:.3f}" for k, v in row.items()), flush=True)


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:4]), *sys.argv[4:5])
