"""Whether `python -m benchmarks scan`'s CPU ratio depends on its order (its serial runs come
after the batch, whose BLAS threads may still be warm or spinning): 4 of the 16 atom_hhg
members (a quarter of the pulse) run one by one before the 16-member batch and after it,
twice, in one process; the serial runs also with `backend="auto"` (a GPU where there is one:
not the CPU baseline).

    python benchmarks/archive/scan_serial_order.py
"""
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
import tdse  # noqa: E402
from tdse import config as cfgmod  # noqa: E402
from tdse.studies.scan import run_batch  # noqa: E402

INPUT = os.path.join(os.path.dirname(__file__), "..", "..", "inputs", "atom_hhg.toml")
cfg = cfgmod.load(INPUT).with_value("propagator.time_error", "none").with_value(
    "propagator.method", "chebyshev").with_value("time.t_end", 110.3)
E0 = np.linspace(0.02, 0.08, 16)
cs = [cfg.with_value("field.E0", float(e)) for e in E0]


def serial(backend, k=4):
    out = []
    for e in E0[::16 // k]:
        t = time.perf_counter()
        r = tdse.simulate(cfg.with_value("field.E0", float(e)), backend=backend)
        out.append(round(time.perf_counter() - t, 3))
    return out, r.attrs.get("backend")


print("serial, backend auto:", serial("auto"))
print("serial, numpy, before any batch:", serial("numpy"))
for rep in range(2):
    t = time.perf_counter()
    r = run_batch(cs)
    print(f"16-member batch: {time.perf_counter() - t:.2f} s, {r.get('blas_threads')} BLAS threads")
    print("serial, numpy, after it:", serial("numpy"))
