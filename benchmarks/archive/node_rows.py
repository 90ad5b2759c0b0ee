"""NodeCounter rows a call (#54): the writer's node counts of a block of smooth packets a row at a time against node_counts on chunks of 4-64 rows, ms a block, at N = 8192 (230 rows), 256 (64), 2048 (128); this CPU, one process.

    python benchmarks/archive/node_rows.py
"""
import numpy as np, time
from tdse.model import observables as O
def old_count(psi, eps):
    kr = O._kept_real(psi, eps)
    if kr is None: return 0
    r = kr[1][kr[0]]
    return int(np.count_nonzero(r[:-1] * r[1:] < 0))
rng = np.random.default_rng(1)
for n, R in ((8192, 230), (256, 64), (2048, 128)):
    x = np.linspace(-40, 40, n)
    # a smooth packet with a few nodes, like a snapshot
    P = np.exp(-x**2/50)[None] * np.exp(1j*(rng.uniform(0.5,3,(R,1))*x[None])) + 1e-3*rng.standard_normal((R,n))
    def tm(f, rep=5):
        f(); t0=time.perf_counter()
        for _ in range(rep): f()
        return (time.perf_counter()-t0)/rep*1e3
    out = [f"N={n} R={R}: rows {tm(lambda: [old_count(p,1e-2) for p in P]):.2f} ms"]
    for ch in (4, 8, 16, 32, 64):
        out.append(f"chunk {ch}: {tm(lambda: [O.node_counts(x, P[i:i+ch], 1e-2) for i in range(0, R, ch)]):.2f}")
    print(", ".join(out))
