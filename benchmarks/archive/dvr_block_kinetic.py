"""#56/#59: the sinc-DVR's kinetic energy on an N x B complex block on the host, as the two
half-size GEMMs (tdse.model.centro, BlockOperator's path) against the padded FFT
(tdse.model.ffts.padded_kinetic's transforms) in one thread and in all the cores' threads;
microseconds a product, best of 5 x 200 calls, fresh random blocks.
Usage: python benchmarks/archive/dvr_block_kinetic.py"""
import os
import timeit

import numpy as np

from tdse.model import ffts
from tdse.model.centro import centro_matmul
from tdse.model.hamiltonian import dvr_symbol, kinetic_halves
from tdse.config import parse

rng = np.random.default_rng()
threads = os.cpu_count() or 1
print(f"# {threads} cores; us a product: gemm (halves) | fft 1 thread | fft {threads} threads")
for n in (160, 320, 500, 640, 800, 1000, 2000):
    grid = parse({"name": "probe", "grid": {"x_min": -n * 0.05, "x_max": n * 0.05, "dx": 0.1,
                                            "stencil": "dvr"},
                  "potential": {"a": 1.0, "centres": [{"x0": 0.0, "Z": 1.0}]}, "time": {"dt": 0.1, "t_end": 1.0}}).grid
    n = grid.n
    P, Q = kinetic_halves(grid)
    lam = dvr_symbol(n, grid.dx, np)[:, None]
    c2c = ffts._pocket()
    row = []
    for B in (1, 2, 4, 8, 10, 16, 32, 64):
        X = rng.standard_normal((n, B)) + 1j * rng.standard_normal((n, B))

        def fft(t):
            pad = np.zeros((2 * n, B), dtype=np.complex128)
            pad[:n] = X
            c2c(pad, (0,), True, 0, pad, t)
            pad *= lam
            c2c(pad, (0,), False, 2, pad, t)
            return pad[:n]
        us = [min(timeit.repeat(f, number=200, repeat=5)) / 200 * 1e6 for f in
              (lambda: centro_matmul(P, Q, X.view(np.float64)), lambda: fft(1), lambda: fft(threads))]
        row.append(f"B={B}: {us[0]:.0f} | {us[1]:.0f} | {us[2]:.0f}")
    print(f"N={n}:", "; ".join(row), flush=True)
