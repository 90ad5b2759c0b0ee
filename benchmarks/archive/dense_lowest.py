"""#59 item 5: the DVR's dense solver a call, scipy.linalg.eigh(generator, driver="evx",
subset_by_index) against tdse.model.states.dense_lowest (the same LAPACK call on a
Fortran-ordered H made in place, its workspace size kept), h2plus_moving's molecule at N
points, 4 pairs, 300 calls 0.02 a.u. apart on one BLAS thread, alternating twice; the bits
compared.

    python benchmarks/archive/dense_lowest.py N[,N...]
"""
import dataclasses
import os
import sys
import time

import numpy as np
import scipy.linalg
from threadpoolctl import threadpool_limits

from tdse import config as cfgmod
from tdse.model import states
from tdse.model.grid import points
from tdse.model.hamiltonian import generator_dense
from tdse.model.potential import soft_core

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

if __name__ == "__main__":
    base = cfgmod.load(os.path.join(ROOT, "inputs", "h2plus_moving.toml"))
    w = base.grid.x_max - base.grid.x_min
    print(f"# python benchmarks/archive/dense_lowest.py {' '.join(sys.argv[1:])} "
          f"({time.strftime('%Y-%m-%dT%H:%M', time.gmtime())}, {os.cpu_count()} CPUs)")
    print("| N | eigh evx ms a call | dense_lowest ms a call | ratio | same bits |")
    print("| --- | --- | --- | --- | --- |")
    for n in [int(v) for v in sys.argv[1].split(",")]:
        cfg = dataclasses.replace(base, grid=dataclasses.replace(base.grid, dx=w / n, stencil="dvr"))
        x, g = points(cfg.grid), cfg.grid

        def old(t):
            v = soft_core(cfg.potential, x, t)
            return scipy.linalg.eigh(generator_dense(cfg, 1.0, v), driver="evx", check_finite=False,
                                     subset_by_index=(0, 3))

        def new(t):
            return states.dense_lowest(g, soft_core(cfg.potential, x, t), 4)

        best = {}
        with threadpool_limits(1):
            same = all(np.array_equal(a, b) for t in (0.1, 1.3) for a, b in zip(old(t), new(t)))
            for f in (old, new, old, new):
                t0 = time.perf_counter()
                for i in range(300):
                    f(0.1 + 0.02 * i)
                best[f] = min(best.get(f, 1e9), (time.perf_counter() - t0) / 300 * 1e3)
        print(f"| {n} | {best[old]:.2f} | {best[new]:.2f} | {best[new] / best[old]:.2f} | {same} |", flush=True)
