"""#56: how much of the estimate's cost on a small GPU run is set-up made once a run (the
local error's graph capture, the split carrier's first piece: its Q matrix, kernels,
buffers) against its per-piece work: the time-error suite's laser drive (drives.make,
rng(56) after the abrupt and ramped draws, as the suite draws it) and atom_hhg (1000 steps),
"none" / "estimate" alternating, 3 each in one process; each estimating run's capture,
first and later pieces timed (wrapped, the device synchronized after each).

    python benchmarks/archive/estimate_setup.py
"""
import time
from collections import defaultdict

import numpy as np
import cupy as cp

import tdse
from benchmarks import drives
from tdse.numerics import adaptive, local_error

rng = np.random.default_rng(56)
drives.make("abrupt", rng)
drives.make("ramped", rng)
cases = {"laser": drives.make("laser", rng), "atom_hhg": tdse.load_config("inputs/atom_hhg.toml")}
cases["atom_hhg"] = cases["atom_hhg"].with_value("time.t_end", 1000 * cases["atom_hhg"].time.dt).with_value("output.every", 50)
spent = defaultdict(list)


def timed(cls, name, label):
    real = getattr(cls, name)

    def wrap(self, *a, **k):
        cp.cuda.Device().synchronize()
        t0 = time.perf_counter()
        out = real(self, *a, **k)
        cp.cuda.Device().synchronize()
        spent[label].append(time.perf_counter() - t0)
        return out
    setattr(cls, name, wrap)
    return real


for name, cfg in cases.items():
    for rep in range(3):
        for te in ("none", "estimate"):
            r = tdse.simulate(cfg.with_value("propagator.time_error", te), backend="cupy")
            print(name, te, f"{r.seconds:.4f} s", flush=True)
    reals = [timed(local_error.LocalError, "_capture", "capture"),
             timed(adaptive.EstimatingStepper, "_make_piece", "piece")]
    for rep in range(2):
        spent.clear()
        r = tdse.simulate(cfg.with_value("propagator.time_error", "estimate"), backend="cupy")
        p = spent["piece"]
        print(name, f"estimate (timed parts) {r.seconds:.4f} s: captures {len(spent['capture'])} "
              f"{sum(spent['capture']) * 1e3:.1f} ms; pieces {len(p)}: first {p[0] * 1e3:.1f} ms, "
              f"the rest {sum(p[1:]) * 1e3:.1f} ms ({', '.join(f'{v * 1e3:.1f}' for v in p[1:6])} ...)", flush=True)
    local_error.LocalError._capture, adaptive.EstimatingStepper._make_piece = reals
