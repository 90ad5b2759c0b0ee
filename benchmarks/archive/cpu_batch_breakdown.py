"""Where a 16-member CPU batch's time goes (#26's CPU row: the batch against 16 serial runs,
target >= 3x): the atom_hhg scan of `python -m benchmarks scan --members 16 --t-end 110.3`.

1. the batch's loop, its parts timed by wrapping them (a wrapper costs ~1 us a call);
2. one Chebyshev term (BlockOperator.recur, N = 500, 16 members) against a fused
   prototype (scratch buffers, the diagonal and -P into the old buffer, zaxpy for Y += a Z);
3. this box's DGEMM rate at the term's shapes (the sinc-DVR T's two centrosymmetric halves
   on the N x 2B real block) and at 2000^3;
4. the 16 members as two 8-member batches in two threads with one BLAS thread each.

    python benchmarks/archive/cpu_batch_breakdown.py
"""
import functools
import os
import sys
import threading
import time
import timeit

import numpy as np
from scipy.linalg.blas import dgemm, zaxpy
from threadpoolctl import threadpool_limits

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
from tdse import config as cfgmod  # noqa: E402
from tdse.model import hamiltonian as H, observables as O  # noqa: E402
from tdse.numerics import chebyshev as C, stepper as St  # noqa: E402
from tdse.studies import scan as S  # noqa: E402

INPUT = os.path.join(os.path.dirname(__file__), "..", "..", "inputs", "atom_hhg.toml")
cfg = cfgmod.load(INPUT).with_value("propagator.time_error", "none").with_value(
    "propagator.method", "chebyshev").with_value("time.t_end", 110.3)
cs = [cfg.with_value("field.E0", float(e)) for e in np.linspace(0.02, 0.08, 16)]

# 1. the loop's parts
acc, calls = {}, {}


def wrap(obj, name, label):
    f = getattr(obj, name)

    @functools.wraps(f)
    def g(*a, **k):
        t = time.perf_counter()
        try:
            return f(*a, **k)
        finally:
            acc[label] = acc.get(label, 0) + time.perf_counter() - t
            calls[label] = calls.get(label, 0) + 1
    setattr(obj, name, g)
    return f


originals = [(H.BlockOperator, "recur", wrap(H.BlockOperator, "recur", "recur (terms 2..K)")),
             (H.BlockOperator, "__call__", wrap(H.BlockOperator, "__call__", "first term")),
             (C, "expm_apply", wrap(C, "expm_apply", "expm_apply")),
             (St.BatchStepper, "generators", wrap(St.BatchStepper, "generators", "generators")),
             (St.BatchStepper, "step_eager", wrap(St.BatchStepper, "step_eager", "step_eager")),
             (O.BlockMeasure, "_host_raw", wrap(O.BlockMeasure, "_host_raw", "rows (BlockMeasure)"))]
S.run_batch(cs)
for rep in range(2):
    acc.clear()
    calls.clear()
    r = S.run_batch(cs)
    print(f"1. batch loop {r['seconds']:.3f} s ({r['exponentials']} exponentials, "
          f"{r['chebyshev_terms']} terms)")
    for k, v in sorted(acc.items(), key=lambda kv: -kv[1]):
        print(f"   {k:22s} {v:6.3f} s  {calls[k]:6d} calls  {v / calls[k] * 1e6:7.1f} us a call")
for obj, name, f in originals:
    setattr(obj, name, f)

# 2. one term
g, n, B = cfg.grid, cfg.grid.n, 16
rng = np.random.default_rng(1)
op = H.BlockOperator(g, 1.0, rng.standard_normal((n, B)), np, alpha=0.01, shift=0.3)
X = np.ascontiguousarray(rng.standard_normal((n, B)) + 1j * rng.standard_normal((n, B)))
P = np.ascontiguousarray(rng.standard_normal((n, B)) + 1j * rng.standard_normal((n, B)))
Y, a = np.zeros((n, B), complex), 0.3 + 0.1j
Ph, Qh = op.halves
k, m, M = op.k, n // 2, 2 * B
Sb, Db, tmp = np.empty((m, M)), np.empty((m, M)), np.empty((n, M))
d2 = np.repeat(op.diag, 2, axis=1)


def fused(Pbuf):
    Xr, Pr = X.view(np.float64), Pbuf.view(np.float64)
    top, bot = Xr[:m], Xr[m:][::-1]
    np.add(top, bot, out=Sb)
    np.subtract(top, bot, out=Db)
    np.multiply(d2, Xr, out=tmp)
    np.subtract(tmp, Pr, out=Pr)
    p, q = dgemm(k, Sb.T, Ph.T).T, dgemm(k, Db.T, Qh.T).T
    zt, zb = Pr[:m], Pr[m:][::-1]
    zt += p
    zt += q
    zb += p
    zb -= q
    zaxpy(Pbuf.ravel(), Y.ravel(), a=a)
    return Pbuf


ref = op(X) - P
got = fused(P.copy())
print(f"2. fused prototype vs op(X) - P: {np.abs(got - ref).max() / np.abs(ref).max():.1e}")
best = lambda f: min(timeit.repeat(f, number=2000, repeat=5)) / 2000 * 1e6  # noqa: E731
own = P.copy()
print(f"   recur {best(lambda: op.recur(X, P, Y, a)):.1f} us a term, fused prototype "
      f"{best(lambda: fused(own)):.1f} us")

# 3. DGEMM rates
for (mm, kk, nn) in [(m, m, M), (n, n, M), (2000, 2000, 2000)]:
    A, Bm = np.random.rand(mm, kk), np.random.rand(kk, nn)
    num = 10 if mm >= 2000 else 2000
    t = min(timeit.repeat(lambda: A @ Bm, number=num, repeat=3)) / num
    print(f"3. DGEMM {mm} x {kk} x {nn}: {t * 1e6:8.1f} us, {2 * mm * kk * nn / t / 1e9:5.1f} GFLOP/s")


# 4. two 8-member batches in two threads
def one():
    t = time.perf_counter()
    S.run_batch(cs)
    return time.perf_counter() - t


def two():
    t = time.perf_counter()
    with threadpool_limits(1):
        th = [threading.Thread(target=S.run_batch, args=(c,)) for c in (cs[:8], cs[8:])]
        [x.start() for x in th]
        [x.join() for x in th]
    return time.perf_counter() - t


for _ in range(2):
    print(f"4. one 16-member batch {one():.2f} s; two 8-member batches in two threads, "
          f"one BLAS thread {two():.2f} s (set-up included in both)")
