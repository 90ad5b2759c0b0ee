"""#54: a CLI run's blocks of observables timed inside it (timers around
BlockMeasure._host_raw, BatchPotential.host_fields and numpy.fft.fft; one `tdse run` in
this process), for the look-ahead's workers on and off: per block, the median and the
total.  Usage: PYTHONPATH=. python measure_in_run.py INPUT.toml (its [run] table as
given; make the inputs as benchmarks' run-overhead does)."""
import sys
import time

import numpy as np

import tdse.model.observables as o
import tdse.model.potential as p

T = {}


def wrap(owner, name):
    f = getattr(owner, name)

    def timed(*a, **k):
        t0 = time.perf_counter()
        try:
            return f(*a, **k)
        finally:
            T.setdefault(name, []).append(time.perf_counter() - t0)
    setattr(owner, name, timed)


wrap(o.BlockMeasure, "_host_raw")
wrap(p.BatchPotential, "host_fields")
wrap(np.fft, "fft")
from tdse.ui.cli import main  # noqa: E402

sys.argv = ["tdse", "run", sys.argv[1], "--out", "/tmp/tdse-measure-in-run", "--backend", "numpy",
            "--quiet", "--no-plots", "--force", "--yes", "--allow-inaccurate"]
try:
    main()
except SystemExit:
    pass
for k, v in T.items():
    print(f"{k}: {len(v)} calls, total {sum(v) * 1e3:.1f} ms, median {np.median(v) * 1e6:.0f} us")
