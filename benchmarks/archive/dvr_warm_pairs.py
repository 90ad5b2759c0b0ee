"""#59 item 5: can the DVR's lowest pairs of H(t) be tracked warm at small N (where the
dense solver is used, N <= states.DVR_DENSE_MAX) for less than a step?  h2plus_moving's
molecule (4 pairs, a block of 6), anchors at t = 1.0, calls 1..16 steps (dt = 0.02) after:

 1. states.davidson from the anchor's block with its 5-point preconditioner (what the
    Tracker does beyond DVR_DENSE_MAX) against the dense solver (states.eigenstates);
 2. the same with the DVR's own kinetic band of half-width b as the preconditioner;
 3. the anchor's full eigenbasis as an exact-at-the-anchor preconditioner (Olsen
    corrections, Rayleigh-Ritz on [X, T]): the residual per iteration.

    python benchmarks/archive/dvr_warm_pairs.py
"""
import dataclasses, time
import numpy as np, scipy.linalg as sl
from scipy.linalg import lapack
from threadpoolctl import threadpool_limits
from tdse import config as cfgmod
from tdse.model import states
from tdse.model.grid import points
from tdse.model.hamiltonian import dvr_column, generator_dense
from tdse.model.potential import soft_core


def band_solver(b):
    """states._banded_shift_solver's interface with the DVR's kinetic band (half-width b)."""
    def make(grid, v):
        n = grid.n
        c = dvr_column(n, grid.dx)[:b + 1]
        ab = np.zeros((3 * b + 1, n), order="F")
        for k in range(-b, b + 1):
            ab[2 * b - k, max(k, 0):n + min(k, 0)] = c[abs(k)]
        main = np.asarray(v, dtype=np.float64)

        def correct(R, X, theta, active=None):
            cols = range(len(theta)) if active is None else active
            T = np.empty((n, len(cols)), order="F")
            for j, i in enumerate(cols):
                a = ab.copy(order="F")
                a[2 * b] += main - theta[i]
                lu, piv, _ = lapack.dgbtrf(a, b, b)
                y, _ = lapack.dgbtrs(lu, b, b, np.asfortranarray(np.stack([R[:, i], X[:, i]], 1)), piv)
                T[:, j] = y[:, 0] - (X[:, i] @ y[:, 0]) / (X[:, i] @ y[:, 1]) * y[:, 1]
            return T
        return correct
    return make


base = cfgmod.load("inputs/h2plus_moving.toml")
w = base.grid.x_max - base.grid.x_min
orig = states._banded_shift_solver
print(f"# python benchmarks/archive/dvr_warm_pairs.py ({time.strftime('%Y-%m-%dT%H:%M', time.gmtime())}, one BLAS thread)")
with threadpool_limits(1):
    for n in (256, 512):
        g = dataclasses.replace(base.grid, dx=w / n, stencil="dvr")
        cfg = dataclasses.replace(base, grid=g)
        x, dt, ta = points(g), cfg.time.dt, 1.0
        t0 = time.perf_counter()
        for off in (1, 4, 8, 16):
            states.eigenstates(cfg, ta + off * dt, 4)
        dense = (time.perf_counter() - t0) / 4
        Xa = states.eigenstates(cfg, ta, 6, dense=True)[1].T * np.sqrt(g.dx)
        for b in (None, 4, 8, 16):
            states._banded_shift_solver = orig if b is None else band_solver(b)
            its, tt = [], 0.0
            for off in (1, 4, 8, 16):
                v = soft_core(cfg.potential, x, ta + off * dt)
                t0 = time.perf_counter()
                try:
                    its.append(states.davidson(g, v, Xa, 4)[2])
                except states.NotConverged:
                    its.append("no")
                tt += time.perf_counter() - t0
            print(f"N = {n}: Davidson from the anchor, {'5-point' if b is None else f'DVR band {b}'} "
                  f"preconditioner: iterations {its} at 1/4/8/16 steps, {tt / 4 * 1e3:.1f} ms a call "
                  f"(the dense solver {dense * 1e3:.1f} ms)", flush=True)
        states._banded_shift_solver = orig
    g = base.grid                                       # N = 256: the anchor's eigenbasis
    x = points(g)
    Lam, Q = sl.eigh(generator_dense(base, 1.0, soft_core(base.potential, x, 1.0)))
    print(f"N = {g.n}: the anchor's lowest energies {np.round(Lam[:6], 5)} (a pair {Lam[1] - Lam[0]:.1e} apart)")
    for off in (1, 4, 16):
        H = generator_dense(base, 1.0, soft_core(base.potential, x, 1.0 + off * base.time.dt))
        X, hist = Q[:, :6].copy(), []
        for it in range(6):
            th, U = np.linalg.eigh(X.T @ H @ X)
            X = X @ U
            R = H @ X - X * th
            hist.append(np.linalg.norm(R, axis=0)[:4].max())
            QR_, QX = Q.T @ R, Q.T @ X
            T = []
            for i in range(6):
                dd = 1.0 / (Lam - th[i])
                y0, y1 = dd * QR_[:, i], dd * QX[:, i]
                T.append(Q @ (y0 - (QX[:, i] @ y0) / (QX[:, i] @ y1) * y1))
            Z = np.linalg.qr(np.column_stack([X, *T]))[0]
            X = Z @ np.linalg.eigh(Z.T @ H @ Z)[1][:, :6]
        print(f"N = {g.n}, {off} steps from the anchor, its eigenbasis as the preconditioner: "
              f"the largest residual by iteration {' '.join(f'{r:.1e}' for r in hist)}", flush=True)
