"""Schedule variants of the band engine at one N, in one process (suite ``sweep-3m``).

Each variant sets the cupy executor's knobs (plane_copies, row_tile) and mgemm.gemm's
tile / complex_method / shares, then: a warm-up, the median of ``--repeat`` timed calls,
one traced call whose compute lanes give each GPU's first start and last end (ms), and the
error of the first 256 rows against cupy.matmul.  ``balance``: rows per GPU from two
traced calls first (mgemm.balance).  The native variants give the same-run reference for
3m's ratio.

    python -m benchmarks sweep-3m --n 32768 --gpus 4 --placement three
"""
from __future__ import annotations

import sys

import numpy as np

VARIANTS = [  # (label, method, tile, plane_copies, row_tile, balance, batch_planes)
    ("native", "native", 1024, "first", None, False, True),
    ("native t2048", "native", 2048, "all", None, False, True),
    ("3m none", "3m", 2048, "none", None, False, True),
    ("3m first", "3m", 2048, "first", None, False, True),
    ("3m all", "3m", 2048, "all", None, False, True),
    ("3m all single", "3m", 2048, "all", None, False, False),
    ("3m t4096 first", "3m", 4096, "first", None, False, True),
    ("3m t4096 all", "3m", 4096, "all", None, False, True),
    ("3m t4096 all single", "3m", 4096, "all", None, False, False),
    ("3m t4096 none", "3m", 4096, "none", None, False, True),
    ("3m t4096 rows8192", "3m", 4096, "all", 8192, False, True),
    ("3m rows4096 first", "3m", 2048, "first", 4096, False, True),
    ("3m first balanced", "3m", 2048, "first", None, True, True),
    ("3m t4096 balanced", "3m", 4096, "all", None, True, True),
    ("native balanced", "native", 1024, "first", None, True, True),
]


def run(a):
    """Every variant (or ``a.only``); returns (rows, {})."""
    import cupy as cp

    from mgemm import executors
    from mgemm.balance import lanes
    from mgemm.gemm import gemm
    from mgemm.tools.calibrate import calibrate, traced
    from mgemm.tools.common import flops, rand_matrix, time_call

    n, g = a.n, a.gpus
    devs = list(range(g))
    a_dev, b_dev, c_dev = (0, 0, 0) if a.placement == "one" else (0, 1 % g, 2 % g)
    if a.roles:
        a_dev, b_dev, c_dev = (int(x) for x in a.roles.split(","))
    dtype = np.dtype(np.complex128)
    A = rand_matrix(cp, a_dev, n, dtype, 1)
    B = rand_matrix(cp, b_dev, n, dtype, 2)
    with cp.cuda.Device(c_dev):
        C = cp.empty((n, n), dtype)
    sample = slice(0, 256)
    with cp.cuda.Device(0):
        ref = cp.matmul(cp.asarray(A[sample]), cp.asarray(B))
    ex = executors.get("cupy")
    only = None if a.only is None else set(a.only.split(","))
    rows = []
    for label, cm, tile, pc, rt, bal, batch in VARIANTS:
        if only and label not in only:
            continue
        ex.plane_copies, ex.row_tile, ex.batch_planes = pc, rt, batch
        shares = (calibrate(lambda sh: traced(A, B, C, devs, tile, cm, sh))
                  if bal else None)
        t = time_call(cp, lambda: gemm(A, B, C, 1.0, 0.0, devices=devs, tile=tile,
                                       complex_method=cm, shares=shares),
                  a.repeat, sorted(set(devs) | {a_dev, b_dev, c_dev}))
        trace, sched = traced(A, B, C, devs, tile, cm, shares)
        ln = lanes(trace, devs)
        with cp.cuda.Device(0):
            err = float(cp.abs(cp.asarray(C[sample]) - ref).max() / cp.abs(ref).max())
        rate = flops(n, dtype) / t / 1e12
        row = dict(n=n, gpus=g, placement=a.placement, roles=[a_dev, b_dev, c_dev], variant=label, complex_method=cm,
                   tile=tile, plane_copies=pc, row_tile=rt, balanced=bal,
                   batch_planes=ex.batch_planes,
                   rows_per_gpu=sched.rows_per_worker(),
                   seconds=t, tflops=rate, rel_error=err,
                   lane_start_ms=[round(ln[d][0], 2) for d in devs],
                   lane_end_ms=[round(ln[d][1], 2) for d in devs],
                   lane_busy_ms=[round(ln[d][2], 2) for d in devs])
        rows.append(row)
        print(f"{label:20s} {rate:7.2f} TFLOP/s  err {err:.1e}  rows {row['rows_per_gpu']}  "
              f"start {row['lane_start_ms']}  end {row['lane_end_ms']}", file=sys.stderr, flush=True)
    ex.plane_copies, ex.row_tile, ex.batch_planes = "all", None, True
    return rows, {}
