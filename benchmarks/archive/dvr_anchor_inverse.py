"""#59 item 5, tried and not adopted -- DVR N=256: eigenpairs of H(t) = T + diag(v(t)) every step by Davidson with the anchor's
exact inverse (Q0 (L0 - s)^-1 Q0^T) as preconditioner; iterations needed vs steps from anchor."""
import numpy as np, time, scipy.linalg
import tdse
from tdse.model import states
from tdse.model.potential import soft_core
from tdse.model.hamiltonian import dvr_symbol
cfg = tdse.load_config("inputs/h2plus_moving.toml")
g = cfg.grid; n = g.n; dt = cfg.time.dt; K = 4
x = np.arange(n) * g.dx + g.x_min
# dense T of the DVR
from tdse.model.states import dense_lowest
T = None
def Hmat(t):
    v = soft_core(cfg.potential, x, t)
    global T
    if T is None:
        H0 = states._real_operator(g, v, np)(np.eye(n))
        T = H0 - np.diag(v)
    return T + np.diag(v), v
def davidson_pre(H, X, Q0, L0, tol=1e-11, maxit=10):
    V = np.linalg.qr(X)[0]
    for it in range(maxit):
        HV = H @ V
        th, S = np.linalg.eigh(V.T @ HV)
        th, S = th[:K], S[:, :K]
        Y = V @ S; R = HV @ S - Y * th
        res = np.linalg.norm(R, axis=0)
        if DEBUG: print(it, res, th)
        if res.max() < tol: return th, Y, it
        # preconditioner: (H0 - th_k)^-1 via the anchor's full decomposition
        D = (L0[:, None] - th[None, :])
        C = (Q0.T @ R) / D
        Cy = (Q0.T @ Y) / D
        eps = (np.sum((Q0.T @ Y) * C, axis=0)) / np.sum((Q0.T @ Y) * Cy, axis=0)
        Wn = Q0 @ (C - Cy * eps)      # Olsen: M^-1 r - eps M^-1 y
        Wn -= V @ (V.T @ Wn); Wn -= V @ (V.T @ Wn)
        Wn = np.linalg.qr(Wn)[0]
        V = np.concatenate([Y, Wn], axis=1)
    return th, Y, maxit
DEBUG = True   # the first call's residuals and Ritz values per iteration
H0, v0 = Hmat(0.3)
L0, Q0 = np.linalg.eigh(H0)
X = Q0[:, :K].copy()
its = []
t0 = time.perf_counter()
for j in range(1, 201):
    H, v = Hmat(0.3 + j * dt)
    th, X, it = davidson_pre(H, X, Q0, L0)
    its.append(it)
    DEBUG = False
el = time.perf_counter() - t0
E, P = scipy.linalg.eigh(H, subset_by_index=(0, K - 1))
print("iters (first 10, then every 20th):", its[:10], its[19::20])
print("time per call us", el / 200 * 1e6, "E err", np.abs(th - E).max(), "vec", np.abs(np.abs((P.T @ X).diagonal()) - 1).max())
t0 = time.perf_counter()
for j in range(50): scipy.linalg.eigh(H, subset_by_index=(0, K - 1))
print("dense subset eigh us", (time.perf_counter() - t0) / 50 * 1e6)
