"""#54 / #58: whether a row's amplitudes in H(t)'s states, phi (K x N) @ psi, get the same
bits whatever the run of rows they are computed in (tdse.run.rows._BlockRows._amplitudes:
one product a run of rows with the same states; a flush or a block's end decides the
runs).  For each column of a 64-row block: the distinct bit patterns of its product over
every run (start i0, length r) that holds it, and which run lengths give each.  On the
CPU (NumPy: BLAS, and the einsum rows.py uses) or a GPU (CuPy: cuBLAS).
Usage: python amplitudes_bits.py numpy|cupy [K N ...]"""
import sys

import numpy as np

xp = np if sys.argv[1] == "numpy" else __import__("cupy")
sizes = [int(a) for a in sys.argv[2:]] or [4, 500, 4, 8192]
rng = np.random.default_rng(3)
M = 64
for K, N in zip(sizes[::2], sizes[1::2]):
    for real in (True, False):
        phi = rng.standard_normal((K, N))
        phi = xp.asarray(phi if real and xp is np else phi.astype(np.complex128))
        B = xp.asarray(rng.standard_normal((M, N)) + 1j * rng.standard_normal((M, N)))
        ways = {"matmul": lambda P, X: P @ X.T}
        if xp is np:
            ways["einsum"] = lambda P, X: np.einsum("kn,rn->kr", P, X)
        for name, f in ways.items():
            cols = {}
            for i0 in range(M):
                for r in range(1, M - i0 + 1):
                    got = f(phi, B[i0:i0 + r])
                    got = got.get() if xp is not np else got
                    for c in range(r):
                        cols.setdefault(i0 + c, {}).setdefault(got[:, c].tobytes(), set()).add(r)
            many = {j: v for j, v in cols.items() if len(v) > 1}
            lens = sorted({tuple(sorted(rs))[:3] + (max(rs),) for v in many.values() for rs in v.values()})
            print(f"{sys.argv[1]} K={K} N={N} phi {'real' if real and xp is np else 'complex'} {name}: "
                  f"{len(many)} of {M} columns with more than one bit pattern; run lengths "
                  f"(first three, largest) of each pattern: {lens[:6]}")
