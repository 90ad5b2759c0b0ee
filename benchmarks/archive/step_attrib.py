"""Where a GPU run's steps lose time to its observers, step by step (#23 item 3): one
`run()` in process, each observer's after() and the stepper's step timed on the host at
every step, and a CUDA event recorded after each step's work is queued, so that the
device's own time between steps shows where it idled.  Run twice (the first warms);
the second's arrays go to OUT (npz) and a summary is printed: per part the host seconds,
the steps where the host stalled (> 1 ms between step ends) and what it did there, and
the device's time between steps (median, and the sum above 1.5 x the median: its idle).

    python benchmarks/archive/step_attrib.py INPUT N STENCIL STEPS POP_EVERY OUT
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
NOW = [0]                               # the step the loop is at (for the inner parts)


def timed_inner(cls, name, part):
    """Time ``cls.name`` (any signature) as ``part`` at the loop's current step: a part
    inside another (its seconds also counted in the outer part)."""
    f = getattr(cls, name)

    def g(self, *a, **k):
        t = time.perf_counter()
        out = f(self, *a, **k)
        T[part].append((NOW[0], time.perf_counter() - t))
        return out
    setattr(cls, name, g)


def timed(cls, name, part):
    f = getattr(cls, name)

    def g(self, state, *a):
        t = time.perf_counter()
        out = f(self, state, *a)
        T[part].append((state.step, time.perf_counter() - t))
        return out
    setattr(cls, name, g)


_step = stmod.Stepper.step


def step(self, psi, j, out=None):
    import cupy as cp
    t = time.perf_counter()
    out = _step(self, psi, j, out)
    e = cp.cuda.Event()
    e.record()
    EVENTS.append(e)
    T["step"].append((j + 1, time.perf_counter() - t))
    NOW[0] = j + 1
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
    from mgemm import arrays as marr
    from tdse.run import snapshots as snmod
    INNER = ("eigenpairs", "file_write", "block_measure", "snapshot_copy", "snapshot_write")
    timed_inner(observers.Observables, "eigenpairs", "eigenpairs")
    timed_inner(snmod.SnapshotWriter, "write", "file_write")
    timed_inner(observers._BlockRows, "_measure", "block_measure")
    timed_inner(marr.HostCopy, "__init__", "snapshot_copy")
    timed_inner(observers.Snapshots, "_write", "snapshot_write")
    import gc
    gc_t = {}

    def gc_cb(phase, info):     # the collector's pauses, by generation, at the loop's step
        if phase == "start":
            gc_t["t"] = time.perf_counter()
        elif "t" in gc_t:
            T[f"gc{info['generation']}"].append((NOW[0], time.perf_counter() - gc_t.pop("t")))
    gc.callbacks.append(gc_cb)
    INNER += ("gc0", "gc1", "gc2")
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
        if k not in INNER:
            np.add.at(host, v[:, 0].astype(int), v[:, 1])
    print(f"# {inp}, N = {n}, {st}-point, {S} steps, populations every {pe}: run() {wall:.3f} s")
    print("  host seconds: " + "  ".join(f"{k} {v[:, 1].sum():.3f}" for k, v in arrays.items()
                                         if k not in INNER) + f"  (all {host.sum():.3f})")
    print("  per part: calls, seconds, median / p90 / max us")
    for k, v in arrays.items():
        q = np.percentile(v[:, 1], [50, 90]) * 1e6
        print(f"    {k:15s} {len(v):6d} {v[:, 1].sum():7.3f}  {q[0]:8.1f} {q[1]:8.1f} {v[:, 1].max() * 1e6:9.1f}")
    stall = np.flatnonzero(host > 1e-3)
    print(f"  steps whose host work > 1 ms: {stall.size}, {host[stall].sum():.3f} s; there: " +
          "  ".join(f"{k} {v[np.isin(v[:, 0], stall), 1].sum():.3f}" for k, v in arrays.items()))
    gap = np.flatnonzero(np.r_[0, 0, gpu] > 1.5 * np.median(gpu))   # step index of the device's gaps
    print("  device gaps (> 1.5 x median) by what the host did in the 3 steps before: " +
          "  ".join(f"{k} {np.isin(v[:, 0], np.r_[gap - 1, gap - 2, gap - 3]).sum()}/{len(v)}"
                    for k, v in arrays.items() if k != "step"))
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
