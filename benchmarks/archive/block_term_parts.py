"""#59 item 1: a scan's block Chebyshev term on one GPU by its parts (cuda events, 300
repeats): the DVR's kinetic product as the graph's one DGEMM (N x N on N x 2B reals,
graphs.dgemm_into), as the two half-size DGEMMs of the centrosymmetric fold (what the CPU's
FoldedBlockOperator takes; random P, Q of its sizes), the recurrence's pass (the graph's
``recur``), and the folded basis's pass (its diagonal coupling each row with its partner).

    python benchmarks/archive/block_term_parts.py
"""
import sys
import numpy as np, cupy as cp
sys.path.insert(0, ".")
from tdse.numerics.graphs import dgemm_into
def t(f, r=300):
    for _ in range(10): f()
    s, e = cp.cuda.Event(), cp.cuda.Event()
    s.record()
    for _ in range(r): f()
    e.record(); e.synchronize()
    return cp.cuda.get_elapsed_time(s, e) / r * 1e3
for n, B in ((500, 1000), (500, 100), (1000, 1000)):
    rng = np.random.default_rng(0)
    T = cp.asarray(rng.standard_normal((n, n)))
    X = cp.asarray(rng.standard_normal((n, B)) + 1j * rng.standard_normal((n, B)))
    kin = cp.empty_like(X)
    m, h = n // 2, n - n // 2
    P = cp.asarray(rng.standard_normal((h, h))); Q = cp.asarray(rng.standard_normal((m, m)))
    F = cp.empty_like(X); G = cp.empty_like(X)
    full = t(lambda: dgemm_into(cp, T, X, kin))
    def halves():
        dgemm_into(cp, P, F[:h], G[:h]); dgemm_into(cp, Q, F[h:], G[h:])
    half = t(halves)
    E = cp.ElementwiseKernel("T g, float64 d, T x, T p, float64 k, T a", "T z, T acc", "z = g * k + x * d - p; acc += a * z", "pr")
    d = cp.asarray(rng.standard_normal((n, B))); z = cp.empty_like(X); acc = cp.zeros_like(X); p = X.copy()
    rec = t(lambda: E(kin, d, X, p, 0.5, 1+1j, z, acc))
    Ep = cp.ElementwiseKernel("T g, float64 e, float64 o, raw T x, T p, float64 k, T a, int32 m, int32 h, int32 B", "T z, T acc",
        "int r = i / B; int q = r < m ? r + h : (r >= h ? r - h : r); z = g * k + x[i] * e + x[q * B + i % B] * o - p; acc += a * z", "prf")
    o = d.copy()
    recf = t(lambda: Ep(kin, d, o, X, p, 0.5, 1+1j, np.int32(m), np.int32(h), np.int32(B), z, acc))
    fl = 2 * n * n * 2 * B
    print(f"N={n} B={B}: full DGEMM {full:.1f} us ({fl/full/1e6:.1f} TF/s), two halves {half:.1f} us, recur {rec:.1f} us, folded recur {recf:.1f} us")
