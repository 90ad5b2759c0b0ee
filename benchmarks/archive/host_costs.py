"""Host costs of one tree's code, printed on one line, for before/after comparisons run in
alternation on one machine (2026-11-26: this tree against 3dc27df's):

  bare 3/5/dvr   the bare step of h2plus_moving at N = 256 (Chebyshev, us; median of 3 x 2000)
  penta          states.pentadiagonal at N = 256, the 4 lowest 5-point pairs (us a call)
  davidson 5/dvr tracker.Tracker at N = 8192 (h2plus_moving_large's box), 20 calls 0.1 apart
                 after 2 (ms a call, iterations a call)
  members        tdse.studies.scan.members of 4000 atom_hhg E0 values (s)

python benchmarks/archive/host_costs.py TREE      (run it for each tree, alternated)
"""
import os
import sys
import time
import timeit
import warnings

import numpy as np

TREE = os.path.abspath(sys.argv[1])
sys.path[:0] = [TREE, os.path.join(TREE, "benchmarks", "probes")]
warnings.simplefilter("ignore")

from benchmarks.suites import _bare_steps  # noqa: E402
from run_profile import case  # noqa: E402
from tdse import config as cm  # noqa: E402
from tdse.model import states, tracker  # noqa: E402
from tdse.model.grid import points  # noqa: E402
from tdse.model.potential import soft_core  # noqa: E402
from tdse.studies import scan  # noqa: E402

INPUTS = os.path.join(TREE, "inputs")
out = []
for st in ("3", "5", "dvr"):
    cfg, plan = case(os.path.join(INPUTS, "h2plus_moving.toml"), 256, st, 4000, 10, "numpy")
    _bare_steps(plan, 200)
    out.append(f"bare {st} {np.median([_bare_steps(plan, 2000)[0] for _ in range(3)]) * 1e6:.0f}")
cfg = cm.load(os.path.join(INPUTS, "h2plus_moving.toml")).with_value("grid.stencil", 5)
v = soft_core(cfg.potential, points(cfg.grid), 0.3)
out.append(f"penta {timeit.timeit(lambda: states.pentadiagonal(cfg.grid, v, 4), number=200) / 200 * 1e6:.0f}")
for st in (5, "dvr"):
    big = cm.load(os.path.join(INPUTS, "h2plus_moving_large.toml")).with_value("grid.stencil", st)
    tr = tracker.Tracker(big, big.output.populations)
    tr(0.0), tr(0.1)
    t0 = time.perf_counter()
    for i in range(2, 22):
        tr(0.1 * i)
    out.append(f"davidson {st} {(time.perf_counter() - t0) / 20 * 1e3:.1f} ms "
               f"{tr.iterations / (tr.calls - 1):.2f} its")
hhg = cm.load(os.path.join(INPUTS, "atom_hhg.toml"))
t0 = time.perf_counter()
scan.members(hhg, {"field.E0": list(np.linspace(0.02, 0.08, 4000))})
out.append(f"members {time.perf_counter() - t0:.2f} s")
print(os.path.basename(TREE.rstrip("/")) or TREE, " | ".join(out), flush=True)
