"""#56: the host time of the parts of the time-error suite's adaptive laser run (its rows'
draw, dt = 1, output every 5) on a GPU, per run, by wrappers (perf_counter, no device sync;
a part's time includes the parts it calls): the steps (GraphStep.advance; of it the
planner's chunks made in the loop's thread, GraphStep._plan), new step sizes' steppers
and carriers, the block of local errors (LocalError.block; of it the letters,
LocalError._letters_many), the carrying (EstimatingStepper._carried; of it the potentials),
the next dt's terms (LocalError.parts) and inner products (EstimatingStepper._gram), the
choice (EstimatingStepper._choose) and the reads (adaptive.to_host).

    python benchmarks/archive/adapt_split_host.py TOL [ROUNDS]
"""
import collections
import sys
import time

import numpy as np

import tdse
from benchmarks import drives
from tdse.config import with_values
from tdse.numerics import adaptive, carrier, graphs, local_error

tol = float(sys.argv[1])
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
rng = np.random.default_rng(56)
for kind in drives.KINDS:
    drives.make(kind, rng)
cfg = with_values(drives.make("laser", rng), [("time.dt", 1.0), ("output.every", 5), ("time.tolerance", tol)])
acc, calls = collections.defaultdict(float), collections.Counter()


def timed(owner, name, label):
    real = getattr(owner, name)

    def f(*a, **k):
        t = time.perf_counter()
        try:
            return real(*a, **k)
        finally:
            acc[label] += time.perf_counter() - t
            calls[label] += 1
    setattr(owner, name, f)


timed(graphs.GraphStep, "advance", "steps")
timed(graphs.GraphStep, "_plan", "steps: plan")
timed(adaptive.EstimatingStepper, "_stepper", "stepper (new n)")
timed(adaptive.EstimatingStepper, "_carrier", "carrier (new n)")
timed(local_error.LocalError, "block", "block")
timed(local_error.LocalError, "_letters_many", "letters")
timed(adaptive.EstimatingStepper, "_carried", "carried")
timed(carrier.SplitCarrier, "_potentials", "carried: potentials")
timed(local_error.LocalError, "parts", "parts")
timed(adaptive.EstimatingStepper, "_gram", "gram")
timed(adaptive.EstimatingStepper, "_choose", "choose")
timed(adaptive, "to_host", "reads")
for k in range(rounds + 2):
    acc.clear()
    calls.clear()
    r = tdse.simulate(cfg, backend="cupy", progress=False)
    if k >= 2:
        print(f"tol {tol:g}: run {r.seconds * 1e3:.1f} ms, {r.time_error['steps_taken']} steps: " + ", ".join(
            f"{n} {v * 1e3:.1f}/{calls[n]}" for n, v in sorted(acc.items(), key=lambda kv: -kv[1])), flush=True)
