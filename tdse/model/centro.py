"""Products with a centrosymmetric matrix (T = J T J, J the reversal) at half the flops: the
DVR's kinetic energy on a block of states (:func:`tdse.model.hamiltonian.kinetic_halves`:
Cantoni & Butler, Linear Algebra Appl. 13, 275 (1976))."""
from __future__ import annotations

import numpy as np

__all__ = ["centro_halves", "centro_fold", "centro_unfold", "centro_matmul"]


def centro_halves(T):
    """(P, Q) of :func:`kinetic_halves` for a centrosymmetric (T = J T J) N x N matrix T."""
    n = T.shape[0]
    m, odd = n // 2, n % 2
    A, M = T[:m, :m], T[:m, n - m:][:, ::-1]
    P = np.empty((m + odd, m + odd))
    P[:m, :m] = 0.5 * (A + M)
    if odd:
        P[:m, m], P[m, :m], P[m, m] = T[:m, m], T[m, :m], T[m, m]
    return P, np.ascontiguousarray(0.5 * (A - M))


def centro_fold(X, xp=np):
    """F X = [X1 + J X2; x_m; X1 - J X2] of an N x ... block (m = N // 2 rows X1 on top, J X2
    the bottom m reversed, x_m the middle row when N is odd): the basis where a
    centrosymmetric T is block diagonal (:func:`kinetic_halves`).  A new array of X's dtype."""
    n = X.shape[0]
    m, h = n // 2, n - n // 2
    F = xp.empty(X.shape, dtype=X.dtype)
    bottom = X[n - m:][::-1]
    xp.add(X[:m], bottom, out=F[:m])
    if h > m:
        F[m] = X[m]
    xp.subtract(X[:m], bottom, out=F[h:])
    return F


def centro_unfold(S, D, scale=1.0, xp=np):
    """The block X with X1 = scale (S1 + D), J X2 = scale (S1 - D) and the middle row S's
    last (S: the top h = N - N // 2 rows of a folded block, S1 its first m = N // 2; D: the
    bottom m): scale = 1/2 inverts :func:`centro_fold`; with scale 1 the halves' products
    (P S, Q D) unfold to T X (:func:`centro_matmul`)."""
    m, h = D.shape[0], S.shape[0]
    X = xp.empty((m + h,) + S.shape[1:], dtype=S.dtype)
    bottom = X[h:][::-1]
    xp.add(S[:m], D, out=X[:m])
    xp.subtract(S[:m], D, out=bottom)
    if scale != 1.0:
        X[:m] *= scale
        bottom *= scale
    if h > m:
        X[m] = S[m]
    return X


def centro_matmul(P, Q, X, xp=np, alpha=1.0):
    """alpha T X for a real N x M block X, with (P, Q) = :func:`kinetic_halves` of T: two
    products of (N/2)^2 M in place of one of N^2 M, a fold and an unfold
    (:func:`centro_fold`, :func:`centro_unfold`)."""
    h = X.shape[0] - X.shape[0] // 2
    F = centro_fold(X, xp)
    return centro_unfold(_product(P, F[:h], alpha, xp), _product(Q, F[h:], alpha, xp), 1.0, xp)


def _product(A, B, alpha, xp):
    """alpha A B; on the CPU one BLAS dgemm that takes alpha (C-ordered operands as their
    Fortran-ordered transposes: (A B)^T = B^T A^T, no copies)."""
    if xp is np and A.size and B.size and A.dtype == B.dtype == np.float64:
        from scipy.linalg.blas import dgemm
        return dgemm(alpha, B.T, A.T).T
    out = A @ B
    if alpha != 1.0:
        out *= alpha
    return out
