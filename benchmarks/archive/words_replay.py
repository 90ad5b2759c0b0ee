"""The local error estimate's one kernel (tdse/backends/cupy/words.py) timed alone: its
captured graph replayed between CUDA events for one input's vector on one GPU (#56: the
estimate's device time against the step's).  Prints a line.

    python benchmarks/archive/words_replay.py INPUT
"""
import sys

import cupy as cp
import numpy as np

import tdse
from tdse.numerics.local_error import LocalError

if __name__ == "__main__":
    cfg = tdse.load_config(sys.argv[1])
    le = LocalError(cfg, cp)
    n, dt = cfg.grid.n, cfg.time.dt
    u = cp.asarray(np.random.default_rng(1).standard_normal(n) + 0j)
    le.vector(u, 3 * dt, dt, 3)
    g = le._graphs[(n,)]
    g["graph"].launch()
    e0, e1 = cp.cuda.Event(), cp.cuda.Event()
    e0.record()
    for _ in range(300):
        g["graph"].launch()
    e1.record()
    e1.synchronize()
    w = g["words"]
    print(f"{sys.argv[1]}: N = {n}, {w['M']} suffixes, {le.products()} products, staged up to "
          f"{w['stage']} vectors: {cp.cuda.get_elapsed_time(e0, e1) * 1e3 / 300:.1f} us a replay")
