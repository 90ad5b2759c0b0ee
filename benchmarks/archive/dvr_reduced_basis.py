"""#59 item 5: could the DVR's populations states come from a reduced basis?  Each window
of W steps: the K + p lowest states of H(t) by the dense solver at ANCHORS times spread over
the window, orthonormalised into one basis; at each step between, Rayleigh-Ritz of H(t) in
that basis (a call's states depending on t alone, as the tracker's windows do).  Prints the
worst residual ||H x - theta x|| and the worst distance to the dense solver's states (to
sign) over windows spread through h2plus_moving's run.  A basis that held the states to
~1e-9 would make a call ~0.3 ms against the dense solver's 1.34 ms at N = 256.

    python benchmarks/archive/dvr_reduced_basis.py N
"""
import os, sys
import numpy as np
sys.path.insert(0, os.getcwd())
from tdse import config as cfgmod
from tdse.model import states
from tdse.model.grid import points
from tdse.model.potential import soft_core
from tdse.model.hamiltonian import kinetic_dense
cfg = cfgmod.load("inputs/h2plus_moving.toml")
N = int(sys.argv[1]) if len(sys.argv) > 1 else 256
import dataclasses
w = cfg.grid.x_max - cfg.grid.x_min
cfg = dataclasses.replace(cfg, grid=dataclasses.replace(cfg.grid, dx=w / N))
g = cfg.grid; x = points(g); T = kinetic_dense(g); K = 4
dt = cfg.time.dt
def H(t): return T + np.diag(soft_core(cfg.potential, x, t))
def dense(t, m): E, V = states.dense_lowest(g, soft_core(cfg.potential, x, t), m); return E, V
for W, p, anchors in [(16, 4, 2), (16, 4, 3), (16, 8, 3), (8, 4, 2), (16, 12, 3), (16, 4, 5)]:
    worst_res, worst_vec = 0, 0
    for t0 in np.arange(0, 9.0, 1.37):
        ta = [t0 + W * dt * k / (anchors - 1) for k in range(anchors)]
        B = np.hstack([dense(t, K + p)[1] for t in ta])
        Q, _ = np.linalg.qr(B)
        for s in range(1, W):
            t = t0 + s * dt
            Ht = H(t)
            HQ = Ht @ Q
            th, U = np.linalg.eigh(Q.T @ HQ)
            X = Q @ U[:, :K]
            R = HQ @ U[:, :K] - X * th[:K]
            res = np.linalg.norm(R, axis=0).max()
            E, V = dense(t, K)
            d = max(min(np.linalg.norm(X[:, k] - V[:, k]), np.linalg.norm(X[:, k] + V[:, k])) for k in range(K))
            worst_res, worst_vec = max(worst_res, res), max(worst_vec, d)
    print(f"N {N} W {W} p {p} anchors {anchors} basis {anchors*(K+p)}: worst residual {worst_res:.2e}, worst vector diff {worst_vec:.2e}")
