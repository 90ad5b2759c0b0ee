"""#59 item 5 (tried, not adopted): the DVR's lowest pairs at N = 256 / 512 by Davidson from an anchor 1-31 steps back, its corrections by the anchor's full spectral decomposition with the block's own directions left out (the JD correction, Sleijpen & van der Vorst 1996, with (H_a - theta)^-1 in place of (H - theta)^-1), against the dense subset solver.  python benchmarks/archive/dvr_small_pairs.py 256,512"""
import dataclasses, sys, time
import numpy as np, scipy.linalg as sl
from threadpoolctl import threadpool_limits
from tdse import config as cfgmod
from tdse.model import states
from tdse.model.grid import points
from tdse.model.potential import soft_core
from tdse.model.hamiltonian import generator_dense
base = cfgmod.load("inputs/h2plus_moving.toml")
w = base.grid.x_max - base.grid.x_min
K = 4
def lu_solver(H, shifts, kind):
    n = len(H)
    if kind == "lu":
        f = [sl.lu_factor(H - s * np.eye(n), check_finite=False) for s in shifts]
        solve = lambda j, B: sl.lu_solve(f[j], B, check_finite=False)
    else:
        lam, Q = sl.eigh(H, driver="evd")
        def solve(j, B):
            return Q @ ((Q.T @ B) / (lam - shifts[j])[:, None])
    if kind == "eig":
        def correct(R, X, theta, active=None):
            cols = list(range(len(theta)) if active is None else active)
            C = Q.T @ R[:, cols]
            D = lam[:, None] - np.asarray(theta)[cols][None, :]
            D[:len(theta)] = np.inf
            return Q @ (C / D)
        return correct
    def correct(R, X, theta, active=None):
        cols = list(range(len(theta)) if active is None else active)
        out = np.empty((n, len(cols)))
        for j, i in enumerate(cols):
            Y = solve(min(i, len(shifts) - 1), np.stack([R[:, i], X[:, i]], axis=1))
            e = (X[:, i] @ Y[:, 0]) / (X[:, i] @ Y[:, 1])
            out[:, j] = Y[:, 0] - e * Y[:, 1]
        return out
    return correct
with threadpool_limits(1, "blas"):
  for n in [int(a) for a in sys.argv[1].split(",")]:
    cfg = dataclasses.replace(base, grid=dataclasses.replace(base.grid, dx=w / n, stencil="dvr"))
    g = cfg.grid; dt = cfg.time.dt
    for kind in ("eig",):
     for span in (16, 32):
        ta = 0.37
        va = soft_core(cfg.potential, points(g), ta)
        t0 = time.perf_counter()
        Ha = generator_dense(cfg, 1.0, va)
        Ea, Xa = sl.eigh(Ha, subset_by_index=(0, K + 1), driver="evx")
        corr = lu_solver(Ha, Ea * (1 + 1e-9) + 1e-9, kind)
        tanchor = time.perf_counter() - t0
        orig = states._banded_shift_solver
        states._banded_shift_solver = lambda grid, v: corr
        its = []
        t0 = time.perf_counter()
        for k in range(1, span):
            t = ta + k * dt
            v = soft_core(cfg.potential, points(g), t)
            E, V, it, res = states.davidson(g, v, Xa, K, states.residual_bound(g, v))
            its.append(it)
        tc = (time.perf_counter() - t0) / (span - 1)
        states._banded_shift_solver = orig
        Ed, Vd = sl.eigh(generator_dense(cfg, 1.0, v), subset_by_index=(0, K - 1), driver="evx")
        ov = np.abs(np.abs(np.sum(Vd * V[:, :K], axis=0)) - 1).max()
        print(f"N={n} {kind} span={span}: anchor {1e3*tanchor:.2f} ms, call {1e3*tc:.2f} ms, its {np.mean(its):.2f} (max {max(its)}), last dE {np.abs(E[:K]-Ed).max():.1e} 1-|ov| {ov:.1e}")
