"""#54: the rows' hand-over to the writer (tdse.run.rows: Observables.flush, its blocks'
start / finish / columns, and _take a row at a time), summed over a run on the CPU: the
h2plus_moving molecule at N = 256, 3-point, STEPS steps with observables every step, a
snapshot every 25, populations every 50, the writer in its thread as on a GPU
(run.io_thread = "on"); twice, the second printed (milliseconds, calls).

    python benchmarks/archive/hand_over.py [STEPS]
"""
import dataclasses
import os
import sys
import tempfile
import time
import warnings

import tdse
from tdse.run import rows

warnings.simplefilter("ignore")
steps = int(sys.argv[1]) if len(sys.argv) > 1 else 16000
root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
base = tdse.load_config(os.path.join(root, "inputs", "h2plus_moving.toml"))
w = base.grid.x_max - base.grid.x_min
base = dataclasses.replace(base, grid=dataclasses.replace(base.grid, dx=w / 256, stencil=3))
cfg = (base.with_value("propagator.method", "auto").with_value("propagator.time_error", "none")
       .with_value("time.t_end", steps * base.time.dt).with_value("output.every", 25)
       .with_value("output.populations_every", 50).with_value("run.io_thread", "on"))
acc = {}


def wrap(owner, name):
    real = getattr(owner, name)

    def timed(*a, **k):
        t = time.perf_counter()
        try:
            return real(*a, **k)
        finally:
            r = acc.setdefault(name, [0.0, 0])
            r[0] += time.perf_counter() - t
            r[1] += 1
    setattr(owner, name, timed)


wrap(rows.Observables, "flush")
for name in ("start", "finish", "columns", "_take"):
    wrap(rows._BlockRows, name)
for _ in range(2):
    acc.clear()
    tdse.simulate(cfg, backend="numpy", out=tempfile.mkdtemp(), force=True)
print(f"{steps + 1} rows: " + ", ".join(f"{k} {v[0] * 1e3:.2f} ms / {v[1]}" for k, v in acc.items()))
