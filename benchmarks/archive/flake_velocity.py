"""Probe (benchmarks/archive): LocalError.block in the velocity gauge on a GPU against the CPU's, relative, 30 seeded laser draws (the tolerance of test_local_errors_of_a_block_of_steps_on_a_gpu).  PYTHONPATH=. python benchmarks/archive/flake_velocity.py"""
import numpy as np, cupy as cp
from benchmarks import drives
from tdse.numerics.local_error import LocalError
worst = []
for seed in range(30):
    rng = np.random.default_rng(seed)
    cfg = drives.make("laser", rng).with_value("field.gauge", "velocity")
    dt, n, j0, S = cfg.time.dt, cfg.grid.n, int(rng.integers(1, 50)), 9
    U = rng.normal(size=(S, n)) + 1j * rng.normal(size=(S, n))
    got = cp.asnumpy(LocalError(cfg, cp).block(cp.asarray(U), j0, dt))
    want = LocalError(cfg, np).block(U, j0, dt)
    r = max(np.linalg.norm(got[k] - want[k]) / np.linalg.norm(want[k]) for k in range(S))
    worst.append(r)
print("laser-velocity GPU block vs CPU block, relative, 30 draws: max %.2e median %.2e, over 1e-12: %d" % (max(worst), np.median(worst), sum(w > 1e-12 for w in worst)))
