"""#59 item 5: a stacked block Davidson for the DVR tracker's windows (all members from the window's anchor, the 5-point H as the Olsen preconditioner, the members' products stacked) against the tracker's call now: ms a call, iterations, refusals, the projector's largest difference from the dense solver.  Tried on 2026-11-30, not adopted.

    PYTHONPATH=. python benchmarks/archive/dvr_stacked_davidson.py N CALLS EXTRA
"""
import dataclasses, time, warnings, sys
import numpy as np, scipy.linalg
warnings.simplefilter("ignore")
from tdse import config as cfgmod
from tdse.model import states
from tdse.model.states import _banded_solves, count_below, _tridiagonal_bands
from tdse.model.tracker import Tracker
from tdse.model.hamiltonian import kinetic_dense, kinetic_bands
import threadpoolctl

def warm_dvr_many(grid, V, E, X, bounds, maxiter, count):
    B, n = V.shape
    K = X.shape[1]
    out = [None] * B
    T = kinetic_dense(grid)
    d0, d1, d2 = kinetic_bands(5, grid.dx)
    bounds = np.broadcast_to(np.asarray(bounds, dtype=np.float64), (B,))
    hnorm = np.abs(V).max(axis=1) + float(np.abs(T).sum(axis=0).max())
    def h(Q, Vs):
        return np.matmul(T, Q) + Vs[:, :, None] * Q
    act = np.arange(B)
    Xs = np.broadcast_to(np.asarray(X, dtype=np.float64), (B, n, K))
    HX, P = h(Xs, V), None
    its = np.zeros(B, int)
    for it in range(maxiter + 1):
        G = np.matmul(Xs.transpose(0, 2, 1), HX)
        theta, U = np.linalg.eigh(0.5 * (G + G.transpose(0, 2, 1)))
        Xs, HX = np.matmul(Xs, U), np.matmul(HX, U)
        R = HX - Xs * theta[:, None, :]
        res = np.sqrt(np.einsum("bnk,bnk->bk", R, R)[:, :count].max(axis=1))
        ok = np.isfinite(res)
        done = ok & (res <= bounds[act])
        if done.any():
            ii = np.flatnonzero(done)
            F = h(Xs[ii], V[act[ii]]) - Xs[ii] * theta[ii, None, :]
            fres = np.sqrt(np.einsum("bnk,bnk->bk", F, F)[:, :count].max(axis=1))
            for i, r in zip(ii, fres):
                b = act[i]
                if not r <= bounds[b]:
                    done[i] = False
                    continue
                its[b] = it
                margin = max(float(r), 1e3 * np.finfo(np.float64).eps * float(hnorm[b]))
                if count_below(*_tridiagonal_bands(grid, V[b]), theta[i, count - 1] + margin) == count:
                    out[b] = (theta[i, :count], Xs[i][:, :count])
        keep = ok & ~done
        act, theta, Xs, HX, R = act[keep], theta[keep], Xs[keep], HX[keep], R[keep]
        P = None if P is None else P[keep]
        if not act.size or it == maxiter:
            break
        b = len(act)
        D = np.broadcast_to((d0 + V[act])[:, None, None, :] - theta[:, None, :, None], (b, 2, K, n))
        Y = _banded_solves(np.ascontiguousarray(D).reshape(-1, n), d1, d2,
                           np.ascontiguousarray(np.stack([R, Xs], axis=1).transpose(2, 0, 1, 3)).reshape(n, -1))
        Y = Y.reshape(n, b, 2, K).transpose(1, 2, 0, 3)
        Mr, Mx = Y[:, 0], Y[:, 1]
        e = np.einsum("bnk,bnk->bk", Xs, Mr) / np.einsum("bnk,bnk->bk", Xs, Mx)
        S = [Xs, Mr - Mx * e[:, None, :]] + ([] if P is None else [P])
        Q = np.linalg.qr(np.concatenate(S, axis=2))[0]
        HQ = h(Q, V[act])
        G = np.matmul(Q.transpose(0, 2, 1), HQ)
        _, U = np.linalg.eigh(0.5 * (G + G.transpose(0, 2, 1)))
        Xn = np.matmul(Q, U[:, :, :K])
        P = Xn - np.matmul(Xs, np.matmul(Xs.transpose(0, 2, 1), Xn))
        Xs, HX = Xn, np.matmul(HQ, U[:, :, :K])
    return out, its

base = cfgmod.load("inputs/h2plus_moving.toml")
w = base.grid.x_max - base.grid.x_min
n, calls, extra = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
cfg = dataclasses.replace(base, grid=dataclasses.replace(base.grid, dx=w / n, stencil="dvr"))
cfg = cfg.with_value("time.t_end", 4000 * cfg.time.dt).with_value("output.populations_every", 1)
tr = Tracker(cfg, cfg.output.populations); g = cfg.grid; K = tr.K
T = kinetic_dense(g)
with threadpoolctl.threadpool_limits(1):
    tot, cnt, none, worst, allits = 0.0, 0, 0, 0.0, []
    for a in range(4):
        steps = [a * calls + i for i in range(calls)]
        V = tr._potentials([s * cfg.time.dt for s in steps])
        t0 = time.perf_counter()
        E0, X0 = scipy.linalg.eigh(T + np.diag(V[0]), subset_by_index=(0, K - 1 + extra), driver="evx")
        got, its = warm_dvr_many(g, V[1:], E0, X0, [states.residual_bound(g, v, tr.tol) for v in V[1:]], 20, K)
        tot += time.perf_counter() - t0; cnt += calls; allits += list(its)
        for v, p in zip(V[1:], got):
            if p is None:
                none += 1; continue
            E, Xd = scipy.linalg.eigh(T + np.diag(v), subset_by_index=(0, K - 1), driver="evx")
            worst = max(worst, np.abs(p[1] @ p[1].T - Xd @ Xd.T).max())
    # the tracker's call now (Davidson from the anchor, or dense)
    t0 = time.perf_counter()
    for s in range(64):
        tr(s * cfg.time.dt)
    now = (time.perf_counter() - t0) / 64
print(f"N={n} calls={calls} extra={extra}: stacked {tot / cnt * 1e3:.2f} ms a call (iterations {np.mean(allits):.1f}, max {max(allits)}), refused {none}, worst projector diff {worst:.1e}; the tracker now {now * 1e3:.2f} ms a call")
