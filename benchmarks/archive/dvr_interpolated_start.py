"""#59 item 5: the DVR tracker's Davidson (N = 1024, h2plus_moving's molecule, populations
every step) started from its anchor's block, as the tracker does, against a start
interpolated between the anchor and the next anchor (the latter's block rotated onto the
former's: orthogonal Procrustes) -- each call still a function of t alone; ms a call (the
anchors' own solves cached) and iterations a call over 96 calls.

    PYTHONPATH=. OMP_NUM_THREADS=1 python benchmarks/archive/dvr_interpolated_start.py [N]
"""
import dataclasses, time, warnings, sys
import numpy as np
warnings.simplefilter("ignore")
from tdse import config as cfgmod
from tdse.model import states
from tdse.model.tracker import Tracker
from tdse.model.potential import soft_core
from tdse.model.grid import points
N = int(sys.argv[1]) if len(sys.argv) > 1 else 1024
base = cfgmod.load("inputs/h2plus_moving.toml")
w = base.grid.x_max - base.grid.x_min
cfg = dataclasses.replace(base, grid=dataclasses.replace(base.grid, dx=w / N, stencil="dvr"))
cfg = cfg.with_value("time.t_end", 4000 * cfg.time.dt).with_value("output.populations_every", 1)
tr = Tracker(cfg, cfg.output.populations)
g, pot = cfg.grid, cfg.potential
x = points(g)
dt = cfg.time.dt
span = tr.anchor_calls * dt
print("K", tr.K, "block", tr.block, "span", span)
def solve(t, X):
    v = soft_core(pot, x, t)
    E, V, its, res = states.davidson(g, v, X, tr.K, tr.residual_bound(v), 30)
    return E, V, its
anchors = {}
def anchor(a):
    if a not in anchors:
        v = soft_core(pot, x, a)
        E, V, its = solve(a, states.fd_start(g, v, tr.block))
        anchors[a] = V
    return anchors[a]
def aligned(A, B):
    # B's columns rotated onto A's (orthogonal Procrustes: the polar factor of B^T A)
    U, _, Wt = np.linalg.svd(B.T @ A)
    return B @ (U @ Wt)
for mode in ("anchor", "interp"):
    its_all, t0 = [], time.perf_counter()
    for s in range(16, 16 + 96):
        t = s * dt
        a = np.floor(t / span + 1e-9) * span
        A = anchor(a)
        if mode == "anchor":
            X = A
        else:
            B = aligned(A, anchor(a + span))
            f = (t - a) / span
            X = (1 - f) * A + f * B
        E, V, its = solve(t, X)
        its_all.append(its)
    print(mode, f"{(time.perf_counter() - t0) / 96 * 1e3:.2f} ms a call (anchors cached), iterations {np.mean(its_all):.2f}")
