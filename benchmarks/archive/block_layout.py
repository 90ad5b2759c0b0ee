"""A single run's block of observables on the host (tdse.run.rows._BlockRows: 64 rows at
N = 256, moving centres, 3-point): BlockMeasure.raw's microseconds back to back and between
64-step slices of the run's stepper, with the run's BLAS threads (plan.backend.limit, as
inside its loop: outside it OpenBLAS's second thread waited for a busy core, ms a block).  Usage: PYTHONPATH=TREE python block_layout.py INPUT
(an input as benchmarks' run-overhead makes it; run against two trees to compare)."""
import sys
import time

import numpy as np

import tdse
from tdse import config as cfgmod
from tdse.model import observables as obs
from tdse.run.rows import _BlockRows

cfg = cfgmod.load(sys.argv[1])
plan = tdse.prepare(cfg, backend="numpy", check_resolution=False)
R = _BlockRows(plan, obs.Measure(cfg, plan.x, plan.states[:4], np.asarray(plan.psi0)))
rng = np.random.default_rng(1)
M, N = R.buf.shape
R.buf[:] = rng.standard_normal((M, N)) + 1j * rng.standard_normal((M, N))
ts = list(np.arange(M) * cfg.time.dt + 3.0)
raw = lambda: R.tblock.raw(None, R.buf.T, times=ts)        # noqa: E731
st, psi = plan.stepper(), np.asarray(plan.psi0).copy()
state, j, back, between = tdse.evolve(plan, psi, stop=2, stepper=st), 2, [], []
limit = plan.backend.limit()        # the run's BLAS threads, as inside its loop
limit.__enter__()
for _ in range(40):
    t0 = time.perf_counter()
    raw()
    back.append(time.perf_counter() - t0)
    state = tdse.evolve(plan, state.psi, start=j, stop=j + 64, stepper=st, settle=False)
    j += 64
    t0 = time.perf_counter()
    raw()
    between.append(time.perf_counter() - t0)
print(f"{tdse.__file__}: M = {M}, N = {N}: back to back {np.median(back) * 1e6:.0f} us, "
      f"after 64 steps {np.median(between) * 1e6:.0f} us (medians of 40)")
