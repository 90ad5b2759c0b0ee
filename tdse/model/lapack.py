"""The LAPACK routines the eigenpairs call, through SciPy's wrappers: the lowest pairs of a
symmetric tridiagonal matrix (dstebz + dstein), many shifted tridiagonal solves in one
dgtsv call, and a Sturm count by dstebz.

Measured on 2 cores (``benchmarks/results/tridiagonal_pairs_cpu2_20261130T0717.txt``,
h2plus_moving's two molecules, the 3-point H, the 4 lowest pairs): bisection and inverse
iteration took 10.4-10.8 / 2.7-2.9 / 1.4-1.5 / 0.41-0.42 ms at N = 8192 / 2048 / 1024 /
256, against 17.4-22.7 / 3.3-4.9 / 1.4-1.8 / 0.26-0.35 ms for LAPACK's MRRR solver dstemr
called through ctypes (which this module held until 2026-11-30; SciPy's own dstemr wrapper
took up to 60x that), with residuals as small (1e-14 to 8e-11, ||H|| ~ 10^4-10^5); dgtsv
on the stacked systems through SciPy gave the ctypes call's bits in the same time.  SciPy's
dstebz and dstein hold the GIL (a Python thread beside them at N = 8192 kept 0.44 of its
pace; beside dgtsv 0.99): the look-ahead computes the pairs in processes
(:mod:`tdse.run.eigenpairs`)."""
from __future__ import annotations

import numpy as np
import scipy.linalg
from scipy.linalg import lapack

__all__ = ["lowest_pairs", "shifted_solves", "count_below"]


#: lowest_pairs asks for more pairs than this of MRRR (dstemr), fewer of bisection and
#: inverse iteration (dstebz + dstein), whose clusters' reorthogonalization grows as the
#: square of a cluster's size: one CPU, soft-core H at N = 256 / 1024 / 3200, m = 128
#: 10.4 / 36.7 / 161 ms against 14.4 / 62.2 / 191, all pairs 17 / 220 / 2124 ms against
#: 29 / 475 / 52491; at m = 64 about even, at 16 dstebz's 2.0 / 6.9 / 20.7 ms against
#: 2.0 / 9.7 / 151 (``tridiagonal_drivers_cpu2_20261202T1250.txt``)
STEBZ_MAX_PAIRS = 64


def lowest_pairs(d, e, m):
    """(E, vectors N x m): the m lowest eigenpairs of the symmetric tridiagonal matrix with
    diagonal ``d`` and off-diagonal ``e``: up to :data:`STEBZ_MAX_PAIRS` by bisection for the
    eigenvalues (LAPACK's dstebz, O(N) a Sturm sweep) and inverse iteration for the vectors,
    reorthogonalized within clusters (dstein; Wilkinson, *The Algebraic Eigenvalue
    Problem*, ch. 5; Parlett, *The Symmetric Eigenvalue Problem*, ch. 4) -- O(N m) against
    the O(N^2) of computing all eigenvalues first --, more by the multiple relatively robust
    representations (dstemr; Dhillon & Parlett, Linear Algebra Appl. 387 (2004) 1: O(N m)
    without reorthogonalization), ``scipy.linalg.eigh_tridiagonal``'s two drivers."""
    d = np.asarray(d, dtype=np.float64)
    if d.size == 1:
        return d.copy(), np.ones((1, 1))
    return scipy.linalg.eigh_tridiagonal(d, np.asarray(e, dtype=np.float64), select="i",
                                         select_range=(0, m - 1), check_finite=False,
                                         lapack_driver="stebz" if m <= STEBZ_MAX_PAIRS else "stemr")


def shifted_solves(D, e, X):
    """D[j]'s tridiagonal system (diagonal D[j], off-diagonal ``e``, shared) solved for
    X[:, j], each column j (D: k x N, X: N x k) by LAPACK's dgtsv (LU with partial
    pivoting: stable however near a shift is to an eigenvalue), the k systems as one
    block-diagonal system of k N (the blocks' coupling zero) in one call; None where a
    matrix is singular to working precision."""
    n, k = X.shape
    off = np.tile(np.append(np.asarray(e, dtype=np.float64), 0.0), k)[:-1]   # 0 between blocks
    d = np.array(D, dtype=np.float64, order="C").ravel()       # (copies: dgtsv overwrites
    b = np.array(X.T, dtype=np.float64, order="C").ravel()     # its arguments)
    *_, y, info = lapack.dgtsv(off, d, off.copy(), b, overwrite_dl=1, overwrite_d=1,
                               overwrite_du=1, overwrite_b=1)
    return None if info else y.reshape(k, n).T.copy()


def count_below(d, e, value) -> int:
    """How many eigenvalues of the symmetric tridiagonal T lie at or below ``value``: a Sturm
    count (LAPACK's dstebz on (lower, value] with an absolute tolerance so large that it
    counts without bisecting, O(N)); reliable away from an eigenvalue by more than a few
    ulps of ||T||."""
    stebz = lapack.get_lapack_funcs("stebz", (d,))
    a = np.abs(e).max() if e.size else 0.0
    lower = float(d.min()) - 2.0 * a - 1.0              # below Gershgorin's bound
    if not value > lower:
        return 0
    m, *_ = stebz(d, e, 1, lower, value, 0, 0, 1e300, "E")
    return int(m)
