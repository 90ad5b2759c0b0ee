"""CPU benchmark (issue: Foundation): mgemm.expm vs scipy.linalg.expm.

A = -i H dt for the moving case's 3-point H (Z = 30, a = 0.1, dx = 0.1, dt = 0.002) at
N = 256, complex128 (theta = ||A||_1 ~ 0.6).  Both are timed in this process (median of
repeats after a warm-up) and compared with an eigendecomposition reference
U = V exp(-i Lambda dt) V^T.  Usage: python benchmarks/bench_expm_cpu.py [--n 256]
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np
import scipy.linalg

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import mgemm  # noqa: E402
from common import save  # noqa: E402
from tdse import hamiltonian  # noqa: E402
from tdse.validate import make_config  # noqa: E402


def median_time(f, repeat):
    f()
    ts = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        f()
        ts.append(time.perf_counter() - t0)
    return float(np.median(ts)), float(np.std(ts))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=256)
    ap.add_argument("--repeat", type=int, default=50)
    args = ap.parse_args()
    cfg = make_config(n=args.n, dx=0.1, a=0.1, Z=30.0, dt=0.002)
    H = hamiltonian.dense(cfg, 0.0)
    A = -1j * 0.002 * H
    w, V = np.linalg.eigh(H)
    ref = (V * np.exp(-1j * 0.002 * w)) @ V.T
    rel = lambda U: float(np.linalg.norm(U - ref) / np.linalg.norm(ref))  # noqa: E731
    rows = []
    cases = [("scipy.linalg.expm", lambda: scipy.linalg.expm(A)),
             ("mgemm auto", lambda: mgemm.expm(A)),
             ("mgemm auto (complex path)", lambda: mgemm.expm(A, split=False)),
             ("mgemm taylor k=10", lambda: mgemm.expm(A, method="taylor", terms=10))]
    for name, f in cases:
        t, sd = median_time(f, args.repeat)
        rows.append({"name": name, "seconds": t, "std": sd, "rel_error": rel(f())})
    _, plan = mgemm.expm(A, return_plan=True)
    base = rows[0]
    for r in rows:
        r["speedup_vs_scipy"] = base["seconds"] / r["seconds"]
    theta = float(np.abs(A).sum(axis=0).max())
    path = save("expm_cpu", {"n": args.n, "dtype": "complex128", "theta_onenorm": theta,
                             "auto_plan": plan.as_dict(), "rows": rows,
                             "target": "mgemm auto >= 1.5x scipy at equal or better accuracy"})
    print(f"N = {args.n}, theta = {theta:.3f}; {plan.explain()}")
    print(f"{'case':28s} {'median ms':>10s} {'rel err':>10s} {'speedup':>8s}")
    for r in rows:
        print(f"{r['name']:28s} {1e3 * r['seconds']:10.3f} {r['rel_error']:10.2e} "
              f"{r['speedup_vs_scipy']:8.2f}")
    print(f"saved {path}")


if __name__ == "__main__":
    main()
