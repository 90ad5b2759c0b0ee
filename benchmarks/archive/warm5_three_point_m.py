"""#59 item 5: the 5-point tracker's warm windows (h2plus_moving at N = 256, populations
every step, 4 states, windows of 16 calls) by subspace inverse iteration with the exact
shifted pentadiagonal solves (states.warm_banded_many: LAPACK dgbsv, ~45 % of a window)
against a Davidson iteration whose Olsen correction uses the 3-point H - theta (LAPACK
dgtsv, 2.6x cheaper a solve) as its preconditioner: time a window, iterations, the residual
over its bound by iteration.

    python benchmarks/archive/warm5_three_point_m.py
"""
import time, numpy as np, tdse
from scipy.linalg import lapack
from tdse.model import states
from tdse.model.tracker import Tracker
from tdse.model.hamiltonian import kinetic_bands
from tdse.model.lapack import shifted_solves, count_below

cfg = tdse.load_config("inputs/h2plus_moving.toml").with_value("grid.stencil", 5).with_value("output.populations_every", 1)
tr = Tracker(cfg, 4)
g = cfg.grid
n = g.n
d0, d1, d2 = kinetic_bands(5, g.dx)
t0_, t1_, _ = kinetic_bands(3, g.dx)

def H5(V, X):       # V: B x N, X: B x N x m
    out = (d0 + V)[..., None] * X
    out[:, 1:] += d1 * X[:, :-1]; out[:, :-1] += d1 * X[:, 1:]
    out[:, 2:] += d2 * X[:, :-2]; out[:, :-2] += d2 * X[:, 2:]
    return out

def dav3(V, E, X, bounds, maxiter=6):
    B = V.shape[0]; K = X.shape[1]
    Xs = np.broadcast_to(X, (B, n, K)).copy()
    out = [None] * B
    act = np.arange(B)
    iters = 0
    # first Rayleigh-Ritz in span(X)
    HX = H5(V, Xs)
    th, W = np.linalg.eigh(np.matmul(Xs.transpose(0, 2, 1), HX))
    Xs = np.matmul(Xs, W); HX = np.matmul(HX, W)
    for it in range(maxiter):
        iters += 1
        R = HX - Xs * th[:, None, :]
        res = np.sqrt((R * R).sum(axis=1).max(axis=1)); HIST.setdefault(it, []).append(float(np.median(res / bounds[act])))
        done = res <= bounds[act]
        for i in np.flatnonzero(done):
            b = act[i]
            margin = max(float(res[i]), 1e3 * np.finfo(float).eps * (abs(d0 + V[i]).max() + 2 * (abs(d1) + abs(d2))))
            if count_below(*states._tridiagonal_bands(g, V[i]), th[i, -1] + margin) == K:
                out[b] = (th[i], Xs[i])
        keep = ~done
        if not keep.any():
            break
        act, V, Xs, HX, th, R = act[keep], V[keep], Xs[keep], HX[keep], th[keep], R[keep]
        Bn = len(act)
        # Olsen correction with M = H3 - theta (tridiagonal, stacked): t = M^-1 r - e M^-1 x
        D = ((t0_ + V)[:, None, :] - th[:, :, None]).reshape(-1, n)        # (Bn K) x N
        rhs = np.concatenate([R.transpose(1, 0, 2).reshape(n, -1), Xs.transpose(1, 0, 2).reshape(n, -1)], axis=1)
        D2 = np.concatenate([D, D])
        Y = shifted_solves(D2, np.full(n - 1, t1_), rhs)
        if Y is None:
            return out, iters
        MR = Y[:, :Bn * K].reshape(n, Bn, K).transpose(1, 0, 2)
        MX = Y[:, Bn * K:].reshape(n, Bn, K).transpose(1, 0, 2)
        e = (Xs * MR).sum(axis=1) / (Xs * MX).sum(axis=1)
        T = MR - MX * e[:, None, :]
        Q = np.linalg.qr(np.concatenate([Xs, T], axis=2))[0]
        HQ = H5(V, Q)
        th2, W = np.linalg.eigh(np.matmul(Q.transpose(0, 2, 1), HQ))
        th, W = th2[:, :K], W[:, :, :K]
        Xs = np.matmul(Q, W); HX = np.matmul(HQ, W)
    return out, iters

HIST = {}
dt = cfg.time.dt
tot_cur = tot_new = 0.0; worst = 0.0; nw = 0; its = []
for a in range(1, 40):
    steps = list(range(a * 16, (a + 1) * 16))
    V = tr._potentials([s * dt for s in steps])
    anchor = tr._scratch(steps[0] * dt, V[0])
    bounds = np.array([states.residual_bound(g, v, tr.tol) for v in V[1:]])
    t = time.perf_counter(); cur = states.warm_banded_many(g, V[1:], *anchor, bounds); tot_cur += time.perf_counter() - t
    t = time.perf_counter(); new, it = dav3(V[1:].copy(), anchor[0], anchor[1], bounds); tot_new += time.perf_counter() - t
    its.append(it)
    for c, nn in zip(cur, new):
        if c is None or nn is None:
            print("None member", a, c is None, nn is None); continue
        Ec, Xc = c; En, Xn = nn
        # compare subspace-invariant: |<x_c, x_n>| per state
        ov = np.abs((Xc * Xn).sum(axis=0))
        worst = max(worst, float(np.abs(Ec - En).max()), float((1 - ov).max()))
    nw += 1
print(f"windows {nw}: warm_banded_many {tot_cur/nw*1e3:.2f} ms a window, Davidson with the 3-point M {tot_new/nw*1e3:.2f} ms; iterations {min(its)}-{max(its)}; worst |dE| or 1-|overlap| {worst:.2e}")
print("median residual / bound by iteration:", {k: round(float(np.median(v)), 2) for k, v in HIST.items()})
