"""#56: the adaptive laser run on a GPU, one tree (its root the first argument: '.' or a
copy of another commit's tdse/mgemm/benchmarks) in this process: the time-error suite's
laser drive (seed 56, dt = 1, output every 5) at each tolerance given, 2 warm-up runs then 5
timed (tdse.simulate, no file): min and median wall, steps, rejections, the stated error and
a value of psi (the trees' bits compared by eye).

    python benchmarks/archive/adapt_ab.py TREE [suite] TOL [TOL ...]

"suite": the laser the time-error suite's adaptive rows take when it also runs its four
drives' rows (drawn after abrupt, ramped, laser and fast), not its first draw.
"""
import sys, time
sys.path.insert(0, sys.argv[1])
import numpy as np
import tdse
from benchmarks import drives
from tdse.config import with_values
import os
assert os.path.dirname(os.path.dirname(os.path.abspath(tdse.__file__))) == os.path.abspath(sys.argv[1]), tdse.__file__
rng = np.random.default_rng(56)
tols = sys.argv[2:]
if tols[0] == "suite":
    tols = tols[1:]
    for kind in ("abrupt", "ramped", "laser", "fast"):
        drives.make(kind, rng)
base = with_values(drives.make("laser", rng), [("time.dt", 1.0), ("output.every", 5)])
for tol in map(float, tols):
    cfg = with_values(base, [("time.tolerance", tol)])
    for _ in range(2):
        r = tdse.simulate(cfg, backend="cupy", progress=False)
    ts = []
    for _ in range(5):
        t = time.perf_counter()
        r = tdse.simulate(cfg, backend="cupy", progress=False)
        ts.append(time.perf_counter() - t)
    te = r.time_error
    psi = r.psi[-1] if hasattr(r, "psi") else None
    print(sys.argv[1], f"{tol:g} wall_min {min(ts):.3f} med {float(np.median(ts)):.3f}", te["steps_taken"], te["rejected"],
          f"stated {float(te['error_at_t_end']):.6e}",
          "psi_mid", None if psi is None else complex(np.asarray(psi)[len(psi) // 2]), flush=True)
