"""#28: mgemm.expm's memory model (peak_matrices(pool=True), the ghost dry run with the
modelled caching pool) against CuPy's pool on one GPU, for plans of each path and kind.

For each case: free the pool, run mgemm.expm(A, plan=plan), read the pool's total bytes
(what it holds at its high-water mark: it only grows until free_all_blocks) and compare
with memory_bytes(n, plan, dtype) -- the model predicts that total.  Prints a table and
writes $OUT/expm_pool_probe.json.  Usage: python benchmarks/archive/expm_pool_probe.py
"""
import json
import os

import cupy as cp
import numpy as np

import mgemm
from mgemm.expm import memory_bytes, peak_matrices
from mgemm.plan import plan_expm

n = 2048
rng = np.random.default_rng(5)
S = rng.standard_normal((n, n))
S = (S + S.T) / np.abs(S + S.T).sum(axis=0).max()
u = {np.complex128: 2.0 ** -53, np.complex64: 2.0 ** -24}
cases = []
for dtype in (np.complex128, np.complex64):
    tol = 1e-12 if dtype == np.complex128 else 1e-6
    for theta, split, method, formulas in ((3.0, True, "auto", False), (40.0, True, "auto", False),
                                           (0.5, True, "taylor", False), (3.0, False, "auto", False),
                                           (40.0, False, "auto", False), (3.0, False, "auto", True)):
        plan = plan_expm(theta, method=method, terms=12, tolerance=tol, unit_roundoff=u[dtype],
                         split=split, unitary=True, use_formulas=formulas)
        A = (-1j * theta * S) if split else (theta * (S + 0.5j * S.T) / 1.5)
        cases.append((dtype, plan, A.astype(dtype)))
pool = cp.get_default_memory_pool()
rows = []
for dtype, plan, A in cases:
    Ag = cp.asarray(A)
    cp.cuda.Device().synchronize()
    pool.free_all_blocks()
    before = pool.total_bytes()
    U = mgemm.expm(Ag, plan=plan)
    cp.cuda.Device().synchronize()
    high = pool.total_bytes() - before   # A is held before; the split path copies Im A
    pred = memory_bytes(n, plan, dtype)
    rows.append(dict(dtype=np.dtype(dtype).name, path=plan.path, method=plan.method,
                     formula=plan.formula, degree=plan.degree, q=plan.ps_block,
                     squarings=plan.squarings, pool_measured=int(high), predicted=int(pred),
                     live_model=peak_matrices(plan, dtype) * n * n,
                     ratio=high / pred, diff_matrices=(pred - high) / (n * n * np.dtype(dtype).itemsize)))
    del U, Ag
out = os.environ.get("OUT", ".")
import datetime  # noqa: E402
json.dump(dict(kind="expm-pool", date=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
               command="python benchmarks/archive/expm_pool_probe.py", n=n,
               device=cp.cuda.runtime.getDeviceProperties(0)["name"].decode(), rows=rows),
          open(os.path.join(out, "expm_pool_probe.json"), "w"), indent=1)
print(f"{'dtype':10} {'path':7} {'method':6} {'formula':8} {'m':>3} {'q':>2} {'s':>2} {'measured':>12} {'predicted':>12} {'ratio':>6} {'pred-meas (matrices)':>8}")
for r in rows:
    print(f"{r['dtype']:10} {r['path']:7} {r['method']:6} {r['formula']:8} {r['degree']:3d} {r['q']:2d} {r['squarings']:2d} "
          f"{r['pool_measured']:12d} {r['predicted']:12d} {r['ratio']:6.3f} {r['diff_matrices']:8.3f}")
