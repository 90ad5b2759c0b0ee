"""#59 item 5 probe (2 CPUs): the DVR's lowest pairs at N = 256 / 512 (h2plus_moving's molecule) by a
sub-grid start and a Davidson basis grown with block-Jacobi corrections (the sub-grid by its
eigenvectors, the rest by a Cholesky factor of its block) against the dense
solver (states.dense_lowest): seconds, iterations, residuals, eigenvalue and population errors."""
import time, numpy as np, scipy.linalg as sl, dataclasses
from threadpoolctl import threadpool_limits
threadpool_limits(1)
from tdse import config as cfgmod
from tdse.model import states
from tdse.model.potential import soft_core
from tdse.model.grid import points
from tdse.model.hamiltonian import kinetic_dense

def bj_pairs(T, v, m, K, lo, hi, tol, Ho_fac=None, maxit=10, log=None):
    N = T.shape[0]
    s = slice(lo, hi)
    o = np.r_[0:lo, hi:N]
    Hs = T[s, s].copy(); Hs[np.diag_indices_from(Hs)] += v[s]
    Es, Us = sl.eigh(Hs, driver="evd", check_finite=False)
    X = np.zeros((N, m)); X[s] = Us[:, :m]
    if Ho_fac is None:
        Ho = T[np.ix_(o, o)].copy(); Ho[np.diag_indices_from(Ho)] += v[o] - Es[0]
        Ho_fac = sl.cho_factor(Ho, lower=True, check_finite=False)
    Q = X
    HQ = T @ Q + v[:, None] * Q
    for it in range(maxit):
        G = Q.T @ HQ
        th, U = np.linalg.eigh(0.5 * (G + G.T))
        U = U[:, :m]; th = th[:m]
        X = Q @ U; HX = HQ @ U
        R = HX - X * th
        res = np.sqrt((R * R).sum(0))
        if log is not None: log.append(res[:K].max())
        if (res[:K] <= tol).all():
            return th[:K], X[:, :K], it, Ho_fac
        # block-Jacobi correction: sub-block by its eigendecomposition (the column's own
        # eigencomponent left out), outside by the Cholesky factor
        Rs = Us.T @ R[s]                     # (ns x m)
        den = Es[:, None] - th[None, :]
        den[np.abs(den) < 1e-8] = np.inf
        W = np.zeros_like(R)
        W[s] = Us @ (Rs / den)
        W[o] = sl.cho_solve(Ho_fac, R[o], check_finite=False)
        W -= Q @ (Q.T @ W); W -= Q @ (Q.T @ W)
        Wq, _ = np.linalg.qr(W)
        Q = np.concatenate([Q, Wq], axis=1)
        HQ = np.concatenate([HQ, T @ Wq + v[:, None] * Wq], axis=1)
    raise RuntimeError(f"not converged {log}")

base = cfgmod.load('inputs/h2plus_moving.toml')
for n in (256, 512):
    w = base.grid.x_max - base.grid.x_min
    cfg = dataclasses.replace(base, grid=dataclasses.replace(base.grid, dx=w/n, stencil='dvr'))
    g = cfg.grid
    T = np.ascontiguousarray(kinetic_dense(g))
    x = points(g)
    rng = np.random.default_rng(5)
    ts = np.sort(rng.uniform(0, 10, 6))
    for t in ts:
        v = states.finite(cfg, soft_core(cfg.potential, x, t), t)
        reps=20
        t0 = time.perf_counter()
        for _ in range(reps): E, U = states.dense_lowest(g, v, 4)
        td = (time.perf_counter() - t0)/reps
        tol = states.residual_bound(g, v)
        for margin in (2.0, 3.0):
            lo, hi = states._sub_range(g, v, margin)
            log=[]
            th, X, it, f = bj_pairs(T, v, 6, 4, lo, hi, tol, log=log)
            t0 = time.perf_counter()
            for _ in range(reps): th, X, it, f = bj_pairs(T, v, 6, 4, lo, hi, tol)
            tb = (time.perf_counter() - t0)/reps
            # populations of a random psi
            psi = rng.standard_normal(n) + 1j*rng.standard_normal(n); psi /= np.linalg.norm(psi)
            psi = psi + 5*U[:,0]; psi/=np.linalg.norm(psi)
            p_ref = np.abs(U.T @ psi)**2; p = np.abs(X.T @ psi)**2
            # pair 0,1 near-degenerate: compare also summed
            print(f"N {n} t {t:.2f} margin {margin} pts {hi-lo} dense {td*1e3:.2f} ms  bj {tb*1e3:.2f} ms it {it}  dE {np.abs(th-E).max():.1e} dpop {np.abs(p-p_ref).max():.1e} res {['%.0e'%r for r in log]}")
