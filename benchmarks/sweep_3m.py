"""Schedule variants of the band engine at one N, in one process (device script).

Each variant sets the cupy executor's knobs (plane_copies, row_tile) and mgemm.gemm's
tile / complex_method / shares, then: a warm-up, the median of ``--repeat`` timed calls,
one traced call whose compute lanes give each GPU's first start and last end (ms), and the
error of the first 256 rows against cupy.matmul.  ``balance``: rows per GPU from two
traced calls first (mgemm.balance).  The native variants give the same-run reference for
3m's ratio.  Output: a JSON file like ``mgemm bench``'s (machine, date, command, rows).

    python benchmarks/sweep_3m.py --n 32768 --gpus 4 --placement three --out FILE.json
"""
from __future__ import annotations

import argparse
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

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


def main():
    import datetime as dt

    import cupy as cp

    import mgemm
    from mgemm.balance import calibrate, lanes
    from mgemm.bench import _flops, _rand, _time, _traced

    from common import machine
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=32768)
    ap.add_argument("--gpus", type=int, default=4)
    ap.add_argument("--placement", default="three", choices=["one", "three"])
    ap.add_argument("--roles", default=None,
                    help="a,b,c: the GPUs holding A, B, C (instead of the placement's)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--only", default=None, help="comma-separated variant labels")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    n, g = a.n, a.gpus
    devs = list(range(g))
    a_dev, b_dev, c_dev = (0, 0, 0) if a.placement == "one" else (0, 1 % g, 2 % g)
    if a.roles:
        a_dev, b_dev, c_dev = (int(x) for x in a.roles.split(","))
    dtype = np.dtype(np.complex128)
    A = _rand(cp, a_dev, n, dtype, 1)
    B = _rand(cp, b_dev, n, dtype, 2)
    with cp.cuda.Device(c_dev):
        C = cp.empty((n, n), dtype)
    sample = slice(0, 256)
    with cp.cuda.Device(0):
        ref = cp.matmul(cp.asarray(A[sample]), cp.asarray(B))
    ex = mgemm.executors.get("cupy")
    only = None if a.only is None else set(a.only.split(","))
    rows = []
    doc = {"kind": "gemm-sweep", "command": " ".join(["python3"] + sys.argv), "machine": machine()}
    for label, cm, tile, pc, rt, bal, batch in VARIANTS:
        if only and label not in only:
            continue
        ex.plane_copies, ex.row_tile, ex.batch_planes = pc, rt, batch
        shares = (calibrate(lambda sh: _traced(mgemm, A, B, C, devs, tile, cm, sh))
                  if bal else None)
        t = _time(cp, lambda: mgemm.gemm(A, B, C, 1.0, 0.0, devices=devs, tile=tile,
                                         complex_method=cm, shares=shares),
                  a.repeat, sorted(set(devs) | {a_dev, b_dev, c_dev}))
        trace, sched = _traced(mgemm, A, B, C, devs, tile, cm, shares)
        ln = lanes(trace, devs)
        with cp.cuda.Device(0):
            err = float(cp.abs(cp.asarray(C[sample]) - ref).max() / cp.abs(ref).max())
        rate = _flops(n, dtype) / t / 1e12
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
              f"start {row['lane_start_ms']}  end {row['lane_end_ms']}", flush=True)
        doc["date"] = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
        doc["rows"] = rows
        with open(a.out, "w") as f:
            json.dump(doc, f, indent=1)
    ex.plane_copies, ex.row_tile, ex.batch_planes = "all", None, True
    nat = {}   # the best native rate per placement (any tile)
    for r in rows:
        if r["complex_method"] == "native":
            nat[r["placement"]] = max(nat.get(r["placement"], 0.0), r["tflops"])
    print(f"{'variant':20s} {'TFLOP/s':>8s} {'vs best native':>9s}")
    for r in rows:
        print(f"{r['variant']:20s} {r['tflops']:8.2f} "
              f"{r['tflops'] / nat[r['placement']] if r['placement'] in nat else float('nan'):9.3f}")


if __name__ == "__main__":
    main()
