"""#56: the host time of each estimate-only part of the time-error suite's laser run
(its cost row's draw) on a GPU, per run (wrappers around each: perf_counter, no device
sync): the block's local errors (LocalError.block; of it the letters, LocalError._rows,
and the graph's capture), the carrying (EstimatingStepper._carried; of it the carrier's
potentials), the snapshots' deferred e read (DeferredE.result), and the run's wall without
and with the estimate (alternating, after warm-up pairs).

    python benchmarks/archive/estimate_split_host.py [ROUNDS]
"""
import collections
import sys
import time

import numpy as np

import tdse
from benchmarks import drives
from tdse.numerics import adaptive, carrier, local_error

rng = np.random.default_rng(56)
drives.make("abrupt", rng)
drives.make("ramped", rng)
laser = drives.make("laser", rng)
rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
acc = collections.defaultdict(float)
calls = collections.Counter()


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


timed(local_error.LocalError, "block", "block")
timed(local_error.LocalError, "_rows", "block: letters")
timed(local_error.LocalError, "_capture", "block: capture")
timed(adaptive.EstimatingStepper, "_carried", "carried")
timed(carrier.SplitCarrier, "_potentials", "carried: potentials")
timed(adaptive.DeferredE, "result", "deferred e read")
timed(adaptive.EstimatingStepper, "deferred_e", "deferred e made")
walls = {"none": [], "estimate": []}
for k in range(rounds + 2):
    for te in walls:
        acc.clear()
        calls.clear()
        r = tdse.simulate(laser.with_value("propagator.time_error", te), backend="cupy", progress=False)
        if k >= 2:
            walls[te].append(r.seconds)
            if te == "estimate":
                print(f"run {r.seconds * 1e3:.1f} ms: " + ", ".join(
                    f"{n} {v * 1e3:.2f} ms/{calls[n]}" for n, v in sorted(acc.items())), flush=True)
print({k: f"{np.median(v) * 1e3:.1f} ms" for k, v in walls.items()},
      f"x{np.median(walls['estimate']) / np.median(walls['none']):.3f}")
