"""#59 item 5: what a DVR eigenpair call at N = 256 costs by the dense solvers on one BLAS
thread (the 4 lowest pairs of T + V, a soft-core well): SciPy's eigh subset by evx / evr,
all pairs by evd, NumPy's eigh, and LAPACK's tridiagonalisation (dsytrd) with bisection
(stebz, no back-transform) -- the floor of any dense tracker; ms a call, 50 calls each.

    PYTHONPATH=. python benchmarks/archive/dvr_dense_solvers.py [N]
"""
import sys
import time

import numpy as np
import scipy.linalg
import threadpoolctl
from scipy.linalg import lapack, toeplitz

from tdse.model.hamiltonian import dvr_column

n = int(sys.argv[1]) if len(sys.argv) > 1 else 256
x = np.linspace(-25.0, 25.0, n)
H = toeplitz(dvr_column(n, x[1] - x[0])) + np.diag(-1.0 / np.sqrt(x ** 2 + 0.5))


def tri():
    _, d, e, _, _ = lapack.dsytrd(H, lower=1)
    return scipy.linalg.eigh_tridiagonal(d, e, select="i", select_range=(0, 3), lapack_driver="stebz")


cases = [("evx subset", lambda: scipy.linalg.eigh(H, subset_by_index=(0, 3), driver="evx", check_finite=False)),
         ("evr subset", lambda: scipy.linalg.eigh(H, subset_by_index=(0, 3), driver="evr", check_finite=False)),
         ("evd all", lambda: scipy.linalg.eigh(H, driver="evd", check_finite=False)),
         ("numpy eigh all", lambda: np.linalg.eigh(H)),
         ("dsytrd + stebz (no vectors' back-transform)", tri)]
with threadpoolctl.threadpool_limits(1):
    for name, f in cases:
        f()
        t = time.perf_counter()
        for _ in range(50):
            f()
        print(f"N = {n} {name}: {(time.perf_counter() - t) / 50 * 1e3:.2f} ms")
