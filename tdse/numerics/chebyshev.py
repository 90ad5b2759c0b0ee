"""exp(-i tau G) X by a Chebyshev expansion, applying G only as an operator (matrix-free).

For Hermitian G with spectrum in [lo, hi] (rigorous bounds, :mod:`tdse.hamiltonian`),
c = (lo + hi)/2, r = (hi - lo)/2, R = tau r and G' = (G - c)/r (spectrum in [-1, 1]):

    exp(-i tau G) = e^(-i tau c) sum_k eps_k (-i)^k J_k(R) T_k(G'),   eps_0 = 1, eps_k = 2,

(Tal-Ezer & Kosloff, J. Chem. Phys. 81, 3967 (1984)), the T_k(G') X from the recurrence
T_(k+1) = 2 G' T_k - T_(k-1): one application of G per term.  Since ||T_k(G')||_2 <= 1,
the truncation after K terms errs by at most 2 sum_(k>K) |J_k(R)| in the 2-norm; the
tail is bounded with Kapteyn's inequality (DLMF 10.14.5),

    |J_k(R)| <= z^k exp(k sqrt(1 - z^2)) / (1 + sqrt(1 - z^2))^k,   z = R/k <= 1,

summed term by term (each term is a rigorous bound; they fall faster than geometrically
once k > R).  :func:`terms` returns the smallest K whose bound meets the tolerance; the
work is about R + O(log(1/tol)) applications of G, each O(N) for a banded G, O(N log N)
for the DVR (FFT), per column.  Written once against the array module (NumPy or CuPy).
"""
from __future__ import annotations

import math

import numpy as np

__all__ = ["tail_bound", "terms", "terms_near", "TermCounts", "term_counts", "bessel_j", "coefficients",
           "expm_apply"]

MAX_TERMS = 100_000


def _kapteyn(k: int, R: float) -> float:
    """Kapteyn's bound on |J_k(R)| for k >= R > 0 (DLMF 10.14.5), in logs."""
    z = R / k
    s = math.sqrt(max(0.0, 1.0 - z * z))
    log = k * (math.log(z) + s - math.log1p(s))
    return math.exp(log) if log > -745 else 0.0


def tail_bound(R: float, K: int) -> float:
    """A rigorous upper bound on 2 sum_(k>K) |J_k(R)| for K >= R (inf for K < R).

    Kapteyn's bound (DLMF 10.14.5) term by term for k = K+1..k*, then the rest by
    |J_k(R)| <= (R/2)^k / k! (DLMF 10.14.4), whose sum from k*+1 on is at most its first
    term / (1 - q), q = R / (2 (k* + 2)) < 1/2; k* is where that rest is below 1e-3 of
    the sum so far."""
    if R == 0.0:
        return 0.0
    if K < R:
        return math.inf
    total, k = 0.0, K
    half = math.log(R / 2.0)
    while True:
        k += 1
        total += _kapteyn(k, R)
        q = R / (2.0 * (k + 2))
        if q < 0.5:
            log_first = (k + 1) * half - math.lgamma(k + 2)
            rest = (0.0 if log_first <= -745 else math.inf if log_first >= 700
                    else math.exp(log_first) / (1.0 - q))
            if rest <= 1e-3 * total or rest < 1e-300:
                return 2.0 * (total + rest)
        if k > K + MAX_TERMS:
            return math.inf


class OutOfReach(ValueError):
    """R needs more than :data:`MAX_TERMS` terms, or is not finite (``R`` the argument)."""

    def __init__(self, R, message):
        super().__init__(message)
        self.R = R

    def __reduce__(self):            # (pickled by its arguments, as ConfigError)
        return type(self), (self.R, str(self))


def terms(R: float, tol: float) -> int:
    """The smallest K >= ceil(R) with tail_bound(R, K) <= tol (K >= 1): doubling the step
    until the bound passes, then bisection (the bound falls monotonically in K);
    :class:`OutOfReach` beyond :data:`MAX_TERMS` terms."""
    if not (R >= 0 and math.isfinite(R)):
        message = f"R must be finite and >= 0, got R={R!r}"
        raise OutOfReach(R, message) if R >= 0 else ValueError(message)
    lo = max(1, math.ceil(R))
    if tail_bound(R, lo) <= tol:
        return lo
    step = 1
    hi = lo + step
    while tail_bound(R, hi) > tol:
        lo, step = hi, 2 * step
        hi = lo + step
        if hi > MAX_TERMS + R:
            raise OutOfReach(R, f"R = {R:.4g} needs more than {MAX_TERMS} Chebyshev terms")
    while hi - lo > 1:  # tail_bound(lo) > tol >= tail_bound(hi)
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if tail_bound(R, mid) <= tol else (mid, hi)
    return hi


def terms_near(R: float, tol: float, guess: int) -> int:
    """:func:`terms` (the same K: the bound falls monotonically in K), searched from
    ``guess`` (e.g. the previous step's K): two bound evaluations when it is right."""
    lo = max(1, math.ceil(R)) if R >= 0 and math.isfinite(R) else None
    if lo is None or guess < lo:
        return terms(R, tol)
    K = guess
    if tail_bound(R, K) > tol:
        for _ in range(8):
            K += 1
            if tail_bound(R, K) <= tol:
                return K
        return terms(R, tol)
    while K > lo and tail_bound(R, K - 1) <= tol:
        K -= 1
    return K


class TermCounts:
    """:func:`terms` (R, tol) for many R, each term count's R-interval found once and looked
    up after: tail_bound(R, K) rises with R, so terms(R) = K on an interval (a, b] whose ends
    a bisection finds; an R within a 1e-9 relative margin of an end, or in no interval yet,
    goes to :func:`terms_near` (from ``guess``: that exponential's last K).  The same K as
    :func:`terms` (tests/test_run_path.py), where a run's every exponential searched it anew
    (~9 bound evaluations an exponential, 15 % of a 3-point step at N = 256 under cProfile)."""
    MAX_INTERVALS = 64
    MARGIN = 1e-9           # relative: an R this near an interval's end is searched

    def __init__(self, tol):
        self.tol = tol
        self.intervals = {}     # K -> (a, b): terms(R) = K for a < R <= b

    def known(self, R):
        """The term counts of an array of R from the intervals found so far (0 where none
        holds it, or within the margin of an end)."""
        R = np.asarray(R, dtype=float)
        K = np.zeros(R.shape, dtype=int)
        for k, (a, b) in self.intervals.items():
            K[(a * (1 + self.MARGIN) < R) & (R < b * (1 - self.MARGIN))] = k
        return K

    def __call__(self, R, guess=0) -> int:
        for K, (a, b) in self.intervals.items():
            if a * (1 + self.MARGIN) < R < b * (1 - self.MARGIN):
                return K
        K = terms_near(R, self.tol, guess)
        if len(self.intervals) < self.MAX_INTERVALS:   # a new dict: another thread may be
            self.intervals = {**self.intervals, K: (self._edge(K - 1), self._edge(K))}
        return K                                       # iterating the old one

    def _edge(self, k):
        """sup{R : tail_bound(R, k) <= tol} (bisection; the bound is inf for R > k)."""
        if k < 1:
            return 0.0
        lo, hi = 0.0, float(k)
        for _ in range(60):
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if tail_bound(mid, k) <= self.tol else (lo, mid)
        return lo


_COUNTS = {}    # tol -> TermCounts: expm_apply's, shared by a process's runs


def term_counts(tol) -> TermCounts:
    """The process's :class:`TermCounts` for ``tol``."""
    if tol not in _COUNTS:
        _COUNTS[tol] = TermCounts(tol)
    return _COUNTS[tol]


def bessel_j(K, R) -> np.ndarray:
    """J_0(R) .. J_K(R) for R >= 0: (K + 1,) for a float R; for an array R (K an int or an
    array of R's shape) (max K + 1, *R.shape), each element's J_k(R) for k <= its K.

    Miller's backward recurrence J_(m-1) = (2m / R) J_m - J_(m+1) (DLMF 10.6.1) from
    J_(M+1) = 0, J_M = 1e-300 at an even M = max(K, ceil R) + 31 + floor(3 sqrt(ceil R))
    (rounded up to even: past the turning point k = R, where J_k(R) falls the faster the
    further k is beyond R + O(R^(1/3))), normalised by J_0 + 2 sum_k J_2k = 1 (DLMF
    10.12.4); rescaled by 1e-250 where a value passes 1e250 (tiny R only).  Each element
    goes through the same operations whether alone or in an array (the same bits; an
    element's M is its own).  Against mpmath's J_k at 30 digits, for R from 1e-12 to 1000
    and K up to what any tolerance needs: within 5e-16, where scipy.special.jv (AMOS) was
    within 2e-14; ~10x faster than jv for a GPU run's 64 steps at once (the graph
    planner's), about as fast for one R (tests/test_schemes.py)."""
    if np.ndim(R) == 0:
        R, K = float(R), int(K)
        if R == 0.0:
            return np.array([1.0] + [0.0] * K)
        n = math.ceil(R)
        M = top = 2 * ((max(K, n) + 31 + int(3.0 * math.sqrt(n))) // 2)
        low, rows, zero = R, K + 1, None
    else:
        R = np.asarray(R, dtype=np.float64)
        K = np.broadcast_to(np.asarray(K), R.shape)
        zero = R == 0.0
        R = np.where(zero, 1.0, R)
        n = np.ceil(R).astype(np.int64)
        M = 2 * ((np.maximum(K, n) + 31 + (3.0 * np.sqrt(n)).astype(np.int64)) // 2)
        top, low, rows = int(M.max()), float(R.min()), int(K.max()) + 1
    rescale = top * math.log10(2.0 * top / low + 1.0) > 550      # |J_(m-1)| <= (2m/R + 1) max
    b1 = b0 = s = 0.0 * R
    out = [None] * rows
    starts = {M} if zero is None else set(M.ravel().tolist())   # the m where an element starts
    for m in range(top, 0, -1):
        if m in starts:
            b0 = 1e-300 if zero is None else np.where(M == m, 1e-300, b0)
        b1, b0 = b0, (2.0 * m / R) * b0 - b1
        if m - 1 < rows:
            out[m - 1] = b0
        if m % 2 == 1 and m > 1:
            s = s + b0
        if rescale:
            big = abs(b0) > 1e250
            if np.any(big):
                f = 1e-250 if zero is None else np.where(big, 1e-250, 1.0)
                b0, b1, s = b0 * f, b1 * f, s * f
                out[m - 1:] = [None if v is None else v * f for v in out[m - 1:]]
    norm = b0 + 2.0 * s
    out = np.array(out) / norm
    if zero is not None and zero.any():
        out[:, zero] = 0.0
        out[0, zero] = 1.0
    return out


def coefficients(R, K) -> np.ndarray:
    """eps_k (-i)^k J_k(R), k = 0..K (complex; J_k by :func:`bessel_j`): (K + 1,) for a float
    R; for an array R (K an int or an array of R's shape) (*R.shape, max K + 1), each
    element's row valid up to its own K -- element by element the same operations, the same
    bits (a run's chunk of steps at once: the GPU's planner, the CPU's moving molecule)."""
    J = bessel_j(K, R)
    a = np.moveaxis(J, 0, -1) * (-1j) ** np.arange(J.shape[0])
    a[..., 1:] *= 2.0
    return a




def _axpy(xp):
    """y += a x in place (BLAS zaxpy on the CPU, an elementwise kernel on CuPy)."""
    if xp is np:
        try:
            from scipy.linalg.blas import zaxpy

            def f(a, x, y):
                if x.flags.c_contiguous and y.flags.c_contiguous and y.dtype == np.complex128 \
                        and x.dtype == np.complex128:
                    zaxpy(x.ravel(), y.ravel(), a=a)
                else:
                    y += a * x
            return f
        except ImportError:  # pragma: no cover
            pass
    else:  # one fused elementwise kernel (no temporary), built once per process
        from ..backends.cupy.stencil import axpy_kernel
        kernel = axpy_kernel(xp)

        def f(a, x, y):
            kernel(x, y.dtype.type(a), y)
        return f

    def g(a, x, y):
        y += a * x
    return g


def expm_apply(apply, X, tau, lo, hi, tol, xp=None, scaled=None, coef=None):
    """exp(-i tau G) X with ``apply(Y) = G Y`` and spec(G) in [lo, hi].

    ``scaled(alpha, shift)``, optional: returns a callable Y -> alpha (G - shift) Y in one
    application (faster than ``apply`` plus the recurrence's own scaling); if it also has
    ``recur(cur, prev, Y, a)`` (returning nxt = op(cur) - prev after adding a nxt to Y),
    each term's update is that one call (one fused pass on a GPU); if it has ``into(X)`` and
    ``back(Y)`` (an invertible change of basis, :class:`tdse.model.hamiltonian.FoldedBlockOperator`),
    the series runs in that basis (its calls take and give blocks there; ``recur`` may
    overwrite ``prev``, which the series owns; ``axpy(a, x, y)``, y += a x there, if it has
    one: :class:`tdse.backends.cupy.columns.ColumnOperator`'s blocks over GPUs) between one
    ``into`` and one ``back``.  ``coef``: the coefficients :func:`coefficients` gives for
    this R and its term count, where made already (a chunk of steps' at once:
    :meth:`tdse.numerics.exponentials.Chebyshev.coefficients_many`).  Returns (result,
    info) with info = {"terms", "R"} (the truncation's bound, where wanted:
    :func:`tail_bound` (R, terms) -- ~5 us a call; once an exponential it was ~2 % of a
    CPU step at N = 256).  ``X`` a vector or a block of columns (NumPy or CuPy); G must be
    Hermitian (the expansion's error bound needs a real spectrum)."""
    if xp is None:
        from mgemm.arrays import get_xp
        xp = get_xp(X)
    if not hi >= lo:
        raise ValueError(f"spectral bounds must satisfy lo <= hi, got lo={lo!r}, hi={hi!r}")
    c, r = 0.5 * (lo + hi), 0.5 * (hi - lo)
    R = tau * r
    X = X.astype(np.complex128, copy=False)
    if r == 0.0:  # G = c I
        return X * complex(np.exp(-1j * tau * c)), {"terms": 0, "R": 0.0}
    if coef is None:
        K = term_counts(tol)(R)
        a = coefficients(R, K)
    else:
        K, a = len(coef) - 1, coef
    basis = None
    if scaled is not None:
        two_gp = scaled(2.0 / r, c)          # Y -> 2 G' Y, G' = (G - c)/r
        if hasattr(two_gp, "into"):          # the series in the operator's own basis
            basis, X = two_gp, two_gp.into(X)
    else:
        def two_gp(Y):
            out = apply(Y)
            out -= c * Y
            out *= 2.0 / r
            return out
    axpy = getattr(two_gp, "axpy", None) or _axpy(xp)     # the operator's own (its basis)
    prev = X
    cur = two_gp(X)
    cur *= 0.5                                # G' X
    Y = complex(a[0]) * X
    axpy(complex(a[1]), cur, Y)
    fused = getattr(two_gp, "recur", None)   # an operator that fuses the term's update
    for k in range(2, K + 1):
        if fused is not None:                 # nxt = 2 G' cur - prev and Y += a_k nxt at once
            nxt = fused(cur, prev, Y, complex(a[k]))
        else:
            nxt = two_gp(cur)
            nxt -= prev
            axpy(complex(a[k]), nxt, Y)
        prev, cur = cur, nxt
    if basis is not None:
        Y = basis.back(Y)
    Y *= complex(np.exp(-1j * tau * c))
    return Y, {"terms": K, "R": R}
