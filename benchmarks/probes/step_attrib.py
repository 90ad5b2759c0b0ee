"""Where a GPU run's steps lose time to its observers, step by step (#23 item 3): one
`run()` in process, each observer's after() and the stepper's step timed on the host at
every step, and a CUDA event recorded after each step's work is queued, so that the
device's own time between steps shows where it idled.  Run twice (the first warms);
the second's arrays go to OUT (npz) and a summary is printed: per part the host seconds,
the steps where the host stalled (> 1 ms between step ends) and what it did there, and
the device's time between steps (median, and the sum above 1.5 x the median: its idle).

    python benchmarks/probes/step_attrib.py INPUT N STENCIL STEPS POP_EVERY OUT
"""
import collections
import os
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.dirname(os.path.dirname(HERE))]

from run_profile import case  # noqa: E402

from tdse.numerics import stepper as stmod  # noqa: E402
from tdse.run import interrupts, observers  # noqa: E402
from tdse.run.driver import run  # noqa: E402

T = collections.defaultdict(list)       # part -> [(step, seconds)]
EVENTS = []


def timed(cls, name, part):
    f = getattr(cls, name)

    def g(self, state, *a):
        t = time.perf_counter()
        out = f(self, state, *a)
        T[part].append((state.step, time.perf_counter() - t))
        return out
    setattr(cls, name, g)


_step = stmod.Stepper.step


def step(self, psi, j):
    import cupy as cp
    t = time.perf_counter()
    out = _step(self, psi, j)
    e = cp.cuda.Event()
    e.record()
    EVENTS.append(e)
    T["step"].append((j + 1, time.perf_counter() - t))
    return out


if __name__ == "__main__":
    os.environ.setdefault("TDSE_EIGENPAIRS_AHEAD", "1")
    inp, n, st, steps, pe, out = sys.argv[1:7]
    cfg, plan = case(inp, n, st, steps, pe, "cupy")
    timed(observers.Observables, "after", "observables")
    timed(observers.Snapshots, "after", "snapshots")
    timed(observers.Progress, "after", "progress")
    timed(interrupts.Interrupts, "after", "interrupts")
    stmod.Stepper.step = step
    d = tempfile.mkdtemp()
    for rep in range(2):
        T.clear()
        EVENTS.clear()
        t0 = time.perf_counter()
        run(plan, d, force=True)
        wall = time.perf_counter() - t0
    import cupy as cp
    EVENTS[-1].synchronize()
    gpu = np.array([cp.cuda.get_elapsed_time(EVENTS[i - 1], EVENTS[i]) for i in range(1, len(EVENTS))]) * 1e-3
    arrays = {k: np.array(v) for k, v in T.items()}
    np.savez(out, gpu=gpu, **arrays)
    S = int(steps)
    host = np.zeros(S + 1)
    for k, v in arrays.items():
        np.add.at(host, v[:, 0].astype(int), v[:, 1])
    print(f"# {inp}, N = {n}, {st}-point, {S} steps, populations every {pe}: run() {wall:.3f} s")
    print("  host seconds: " + "  ".join(f"{k} {v[:, 1].sum():.3f}" for k, v in arrays.items()))
    stall = np.flatnonzero(host > 1e-3)
    print(f"  steps whose host work > 1 ms: {stall.size}, {host[stall].sum():.3f} s; there: " +
          "  ".join(f"{k} {v[np.isin(v[:, 0], stall), 1].sum():.3f}" for k, v in arrays.items()))
    for m in (25, 50, 64):
        c = collections.Counter(stall % m).most_common(3)
        print(f"    mod {m}: {c}")
    med = np.median(gpu)
    idle = gpu[gpu > 1.5 * med]
    print(f"  device between steps: median {med * 1e6:.1f} us, total {gpu.sum():.3f} s; above 1.5 x "
          f"median: {idle.size} steps, {idle.sum():.3f} s ({(idle - med).sum():.3f} s beyond the median)")
    big = np.flatnonzero(gpu > 1.5 * med) + 2
    for m in (25, 50, 64):
        print(f"    mod {m}: {collections.Counter(big % m).most_common(3)}")
