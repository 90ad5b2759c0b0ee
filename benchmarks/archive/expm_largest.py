"""Device probe (#23 item 5): the largest N of a dense sinc-DVR generator A = -i dt H
(dx = 0.1, dt = 0.02: the split path) that mgemm.expm fits on G GPUs, as it names it, then
exp(A) run at that N from a banded input built in place (Layout.from_columns): seconds,
the pool's high-water mark per GPU against the prediction.
python benchmarks/archive/expm_largest.py G [G ...]"""
import json
import re
import sys
import time

import cupy as cp
import numpy as np

import mgemm
from mgemm.dist import Layout
from mgemm.expm import ExpmMemoryError, fitting_plan, free_bytes, memory_bytes, usable
from tdse.model.hamiltonian import dvr_column

dx, dt = 0.1, 0.02
rows = []
for G in map(int, sys.argv[1:]):
    devs = list(range(G))
    for d in devs:
        with cp.cuda.Device(d):
            cp.get_default_memory_pool().free_all_blocks()
    free = min(free_bytes(cp, d) for d in devs)
    theta = dt * (np.pi ** 2 / (2 * dx * dx) + 2.0)    # ||dt H||_1 bound of the DVR (|V| <= 2)
    plan = mgemm.plan_expm(theta, tolerance=1e-12, split=True, unitary=True, unit_roundoff=2.0 ** -53)
    try:
        fitting_plan(plan, 10 ** 6, np.complex128, G, usable(free))
    except ExpmMemoryError as e:
        largest = int(re.search(r"is (\d+)$", str(e)).group(1))
    n = largest - largest % (2 * G)
    col = cp.asarray(dvr_column(n, dx))
    x = (np.arange(n) - n / 2) * dx
    v = -1.0 / np.sqrt(x * x + 2.0)
    lay = Layout(n, devs)

    def make(c0, c1):
        i = cp.arange(n)[:, None]
        j = cp.arange(c0, c1)[None, :]
        T = col[cp.abs(i - j)]
        T[cp.arange(c0, c1), cp.arange(c1 - c0)] += cp.asarray(v[c0:c1])
        return (-1j * dt) * T
    used0 = []
    for d in devs:
        with cp.cuda.Device(d):
            cp.cuda.Device(d).synchronize()
            used0.append(cp.get_default_memory_pool().total_bytes())
    t0 = time.perf_counter()
    U, p = mgemm.expm(lay.from_columns(make), devices=devs, tolerance=1e-12, return_plan=True,
                      output="banded")
    for d in devs:
        cp.cuda.Device(d).synchronize()
    sec = time.perf_counter() - t0
    high = []
    for d in devs:
        with cp.cuda.Device(d):
            high.append(cp.get_default_memory_pool().total_bytes())
    # unitarity of a column block as a check of the result
    b = U.bands[0]
    with cp.cuda.Device(devs[0]):
        err = float(cp.abs(b.conj().T @ b - cp.eye(b.shape[1])).max())
    row = {"gpus": G, "n": n, "largest_named": largest, "free_gib": free / 2 ** 30,
           "predicted_gib": memory_bytes(n, p, np.complex128, G) / 2 ** 30,
           "pool_high_gib": [h / 2 ** 30 for h in high], "seconds": sec,
           "products": p.products, "ps_block": p.ps_block, "degree": p.degree,
           "squarings": p.squarings, "unitarity_err_band0": err}
    print(json.dumps(row))
    rows.append(row)
    del U, b
    for d in devs:
        with cp.cuda.Device(d):
            cp.get_default_memory_pool().free_all_blocks()
print(json.dumps(rows))
