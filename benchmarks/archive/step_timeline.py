"""Where a run's time beyond its bare steps lands along the loop (#23 item 3): one `run()`
in process (as `tdse run`: observables every step, H(t)'s populations every POP_EVERY,
snapshots, the eigenpairs worker where it pays) against the bare loop of the same plan,
each step's end time recorded (by the progress bar's after(), which every run calls, and
by an observer in the bare loop); the seconds per step over windows of W steps, then the
fixed cost: the run's loop less the bare step times the steps.  Each run twice (the first
warms kernels, graphs and the worker's imports).

    python benchmarks/archive/step_timeline.py INPUT N STENCIL STEPS POP_EVERY BACKEND [W]

STAMPS_OUT=PREFIX saves each repeat's step end times (PREFIX_<repeat>.npz: bare and run,
their start first and their end last).
"""
import os
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.dirname(os.path.dirname(HERE))]

from run_profile import case  # noqa: E402

import tdse  # noqa: E402
from tdse.run import observers as obsmod  # noqa: E402
from tdse.run.driver import run  # noqa: E402
from tdse.run.loop import Observer  # noqa: E402

STAMPS = []
_after = obsmod.Progress.after


def _stamped(self, state):
    _after(self, state)
    STAMPS.append(time.perf_counter())


obsmod.Progress.after = _stamped


class Stamp(Observer):
    def after(self, state):
        STAMPS.append(time.perf_counter())


def sync(xp):
    if xp is not np:
        xp.cuda.Device().synchronize()


def bare(plan):
    xp = plan.backend.xp
    st = plan.stepper()
    psi = xp.asarray(plan.psi0)
    STAMPS.clear()
    with plan.backend.limit():
        sync(xp)
        t0 = time.perf_counter()
        tdse.evolve(plan, psi, [Stamp()], stepper=st)
        sync(xp)
        t1 = time.perf_counter()
    return t0, t1, list(STAMPS)


def in_run(plan, d):
    STAMPS.clear()
    t0 = time.perf_counter()
    run(plan, d, force=True)
    return t0, time.perf_counter(), list(STAMPS)


def windows(t0, stamps, w):
    s = np.array([t0] + stamps)
    edges = list(range(0, len(stamps) + 1, w))
    return [(a, (s[b] - s[a]) / (b - a) * 1e6) for a, b in zip(edges, edges[1:])]


if __name__ == "__main__":
    # a script's run is not spawn-safe by default (tdse.run.observers._spawn_safe): this
    # one is guarded, and its pairs go to the workers as the CLI's do
    os.environ.setdefault("TDSE_EIGENPAIRS_AHEAD", "1")
    inp, n, st, steps, pe, backend = sys.argv[1:7]
    w = int(sys.argv[7]) if len(sys.argv) > 7 else 500
    cfg, plan = case(inp, n, st, steps, pe, backend)
    d = tempfile.mkdtemp()
    for rep in range(2):
        b0, b1, bs = bare(plan)
        r0, r1, rs = in_run(plan, d)
        bw, rw = windows(b0, bs, w), windows(rs[0] - (bs[0] - b0), rs, w) if rs else []
        steady = np.median([u for _, u in bw[1:]]) if len(bw) > 1 else (b1 - b0) / len(bs) * 1e6
        print(f"# repeat {rep}: {cfg.time.steps} steps, N = {cfg.grid.n}, stencil {st}, populations every {pe}, {backend}")
        print(f"  bare loop {b1 - b0:.3f} s ({(b1 - b0) / len(bs) * 1e6:.1f} us a step; first step "
              f"{(bs[0] - b0) * 1e3:.1f} ms; steady {steady:.1f} us)")
        print(f"  run() {r1 - r0:.3f} s: before its first step {rs[0] - r0 - (bs[0] - b0):.3f} s (set-up "
              f"beyond a bare first step), its steps {rs[-1] - rs[0]:.3f} s, after its last "
              f"{r1 - rs[-1]:.3f} s; the steps' excess over the steady bare step "
              f"{rs[-1] - rs[0] - (len(rs) - 1) * steady * 1e-6:.3f} s")
        if os.environ.get("STAMPS_OUT"):      # every step's end time, for a closer look
            np.savez(f"{os.environ['STAMPS_OUT']}_{rep}.npz", bare=np.array([b0] + bs + [b1]),
                     run=np.array([r0] + rs + [r1]))
        print("  window start   bare us/step   run us/step")
        for (a, ub), (_, ur) in zip(bw, rw):
            print(f"  {a:12d} {ub:14.1f} {ur:13.1f}")
