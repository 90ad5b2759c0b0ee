"""#56: where an adaptive run's steps could go -- the adaptive laser run (the time-error
suite's drive, seed 56, dt = 1; DRAWN drives drawn before it: 0 as `--kinds` with none, 4
as the suite with its four rows) at TOL on the CPU, each dt's predicted one-step local error
L_j(n) at h = dt/n for n = 1..128 recorded at its start (the controller's own leading terms,
EstimatingStepper._sizes); then, for a sum of local errors E, the fewest steps of (a) one n
for every dt, (b) the controller's rule (the smallest n with L_j(n) <= kappa h: error per
unit step), (c) the optimum (min sum n_j with sum n_j L_j(n_j) <= E: equal error per step).

    PYTHONPATH=. python benchmarks/archive/adapt_allocation.py TOL DRAWN
"""
import sys, json, numpy as np, tdse
from benchmarks import drives
from tdse.config import with_values
from tdse.numerics import adaptive as ad
from mgemm.arrays import to_host
rec = []
orig = ad.EstimatingStepper._choose
def wrapped(self, psi, j):
    dt = self.config.time.dt; n0 = self.n
    parts = self.local.parts(psi, j * dt, dt / n0)
    G = to_host(self._gram(self.e, parts))
    e_norm, size = self._sizes(G, [o for o, _ in parts])
    rec.append([size(n0 / n) for n in range(1, 129)])
    return orig(self, psi, j)
ad.EstimatingStepper._choose = wrapped
rng = np.random.default_rng(56)
for kind in ("abrupt", "ramped", "laser", "fast")[:int(sys.argv[2])]:
    drives.make(kind, rng)
base = with_values(drives.make("laser", rng), [("time.dt", 1.0), ("output.every", 5)])
cfg = with_values(base, [("time.tolerance", float(sys.argv[1]))])
r = tdse.simulate(cfg, backend="numpy", progress=False)
print("steps", r.time_error["steps_taken"], "dts", len(rec)); print("C_j (n=1) by dt:", " ".join(f"{v:.1e}" for v in np.array(rec)[:, 0]))
L = np.array(rec)          # L[j, n-1]: one step's local error norm at h = dt/n
ns = np.arange(1, 129)
per_dt = L * ns            # the dt's error in n steps
# local order from n = 8 -> 16
print("order p+1 (median over dts, n 8->16):", np.median(np.log(L[:, 7] / L[:, 15]) / np.log(2)))
def total(nsel): return sum(per_dt[j, n - 1] for j, n in enumerate(nsel))
E = None
def epus(kappa):   # smallest n with L(n) <= kappa / n (error per unit step; dt = 1)
    return [next((n for n in ns if L[j, n - 1] <= kappa / n), 128) for j in range(len(L))]
def opt(lam):      # n minimizing n + lam * n L(n)
    return [int(ns[np.argmin(ns + lam * per_dt[j])]) for j in range(len(L))]
def fixed(n): return [n] * len(L)
rows = []
for target in np.geomspace(1e-8, 1e-5, 4):
    def match(fun, lo, hi, inc):
        # bisection in log space of the knob so that total <= target with fewest steps
        best = None
        for k in np.geomspace(lo, hi, 400):
            sel = fun(k)
            if total(sel) <= target and (best is None or sum(sel) < sum(best)):
                best = sel
        return best
    f = next(fixed(n) for n in ns if total(fixed(n)) <= target) if total(fixed(128)) <= target else None
    e = match(epus, 1e-12, 1e-2, None)
    o = match(opt, 1e2, 1e14, None)
    if f and e and o:
        rows.append((target, sum(f), sum(e), sum(o)))
        print(f"sum of local errors {target:.1e}: fixed {sum(f)} steps, error-per-unit-step {sum(e)} ({sum(e)/sum(f):.2f}), optimal {sum(o)} ({sum(o)/sum(f):.2f})")
