"""#59 item 1 probe: a block's DVR kinetic product on one GPU, the whole GEMM against the centrosymmetric halves (tdse.model.centro)."""
import numpy as np, cupy as cp, time
from tdse.model.hamiltonian import kinetic_dense, kinetic_halves
from tdse.model.centro import centro_matmul, centro_fold, centro_unfold
import tdse
cfg = tdse.load_config("inputs/atom_hhg.toml")
for dx, B in ((0.4, 1000), (0.4, 200), (0.1, 200)):
    g = cfg.with_value("grid.dx", dx).grid
    n = g.n
    T = cp.asarray(kinetic_dense(g, cp)); P, Q = (cp.asarray(a) for a in kinetic_halves(g))
    X = cp.random.standard_normal((n, 2 * B))
    h = n - n // 2
    F = cp.empty_like(X); S = cp.empty((h, 2*B)); D = cp.empty((n//2, 2*B))
    def full(): return T @ X
    def halves(): return centro_matmul(P, Q, X, cp)
    def gemms_only(): cp.matmul(P, X[:h], out=S); cp.matmul(Q, X[h:], out=D)
    ref = full(); assert float(cp.abs(halves() - ref).max()) < 1e-9 * float(cp.abs(ref).max())
    for name, f in (("full", full), ("halves", halves), ("gemms_only", gemms_only)):
        for _ in range(3): f()
        s, e = cp.cuda.Event(), cp.cuda.Event(); s.record()
        for _ in range(50): f()
        e.record(); e.synchronize()
        print(f"N={n} B={B} {name}: {cp.cuda.get_elapsed_time(s, e) / 50 * 1e3:.1f} us", flush=True)
