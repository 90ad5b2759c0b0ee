"""States of the molecule: the lowest eigenpairs of the molecular H(t) and psi(0)
(atomic units; psi normalised as sum |psi|^2 dx = 1)."""
from __future__ import annotations

import math
import threading

import numpy as np
import scipy.linalg

from ..errors import ConfigError
from ..options import DVR_DENSE_MAX, EIGEN_BLAS_THREADS, blas_limit  # (there, not here: read before the solvers load)
from .grid import points
from .hamiltonian import kinetic_bands
from .lapack import count_below, lowest_pairs, shifted_solves
from .potential import soft_core

__all__ = ["DTYPE", "eigenstates", "davidson", "residual_bound", "lowest_pairs", "count_below"]

#: the dtype of psi and of every propagator (complex128)
DTYPE = np.complex128


def eigenstates(config, t, count, dense=False):
    """Lowest ``count`` eigenpairs of the molecular H(t) = T + V_softcore(x, t): the centres
    where they are at t, without the field and the absorber (the states populations refer to).

    Returns (E, phi) with phi of shape (count, N), real, normalised so that
    sum |phi|^2 dx = 1, sign fixed so the first sizeable component is positive.
    3-point: LAPACK's tridiagonal solver for the selected eigenpairs (bisection and inverse
    iteration, scipy.linalg.eigh_tridiagonal select='i': O(N K), no N x N matrix);
    5-point: the selected eigenvalues by LAPACK's banded solver without vectors
    (scipy.linalg.eig_banded, eigvals_only: no N x N transformation), the vectors by inverse
    iteration with the banded LU (scipy.linalg.solve_banded) and one Rayleigh-Ritz step on
    them (orthonormal also within a (near-)degenerate pair): 14 ms at N = 2048 where the
    banded solver with vectors takes 1.1 s; DVR: the dense symmetric solver for a subset
    (scipy.linalg.eigh, subset_by_index) up to N = :data:`DVR_DENSE_MAX` (or with
    ``dense``), beyond it :func:`davidson` from the 3-point pairs (the dense solver where it
    does not converge, with a warning).
    """
    g = config.grid
    v = finite(config, soft_core(config.potential, points(g), t), t)
    count = min(count, g.n)
    if g.stencil == "dvr" and (dense or g.n <= DVR_DENSE_MAX or count + 2 > g.n // 4):
        E, vecs = dense_lowest(g, v, count)
    elif g.stencil == 3:
        E, vecs = tridiagonal(g, v, count)
    elif g.stencil == "dvr":
        try:
            E, vecs, _, _ = davidson(g, v, fd_start(g, v, count + 2), count)
            E, vecs = E[:count], vecs[:, :count]
        except NotConverged as e:
            import warnings
            warnings.warn(f"the DVR's eigenpairs at t = {t:.4g}: the iterative solver {e}; "
                          f"the dense solver is used", RuntimeWarning, stacklevel=2)
            return eigenstates(config, t, count, dense=True)
    else:
        E, vecs = pentadiagonal(g, v, count)
    return as_states(g, E, vecs)


def dense_lowest(grid, v, count, rows=None):
    """(E, unit columns N x count): the ``count`` lowest pairs of the dense real H = T +
    diag(v), made in place in Fortran order from T's cached matrix (no generator, no copy
    into Fortran order); ``rows`` (a slice): of H restricted to those grid points (``v``
    theirs), as :func:`sub_start` takes it.  A few pairs by LAPACK's dsyevx (tridiagonal
    reduction, bisection, inverse iteration) called as ``scipy.linalg.eigh(H, driver="evx", subset_by_index=...)``
    calls it -- the same arguments and workspace (queried once an N), so the same bits:
    h2plus_moving's molecule on one core, 1.34 / 6.70 ms a call against 1.79 / 8.88 at N =
    256 / 512 (``dense_lowest_cpu2_20261130T1945.txt``); more than N / 4 by divide and
    conquer (scipy's eigh, driver "evd": all 2000 pairs of a 2000-point DVR 1.2 s on 2
    cores where evx took 10.5 s)."""
    from scipy.linalg import lapack

    from .hamiltonian import kinetic_dense
    T = kinetic_dense(grid)
    if rows is not None:
        T = T[rows, rows]
    n = T.shape[0]
    H = T.T.copy(order="F")                        # (T symmetric: its transpose is T)
    H.ravel(order="K")[::n + 1] += np.asarray(v, dtype=np.float64)
    if count > n // 4:
        E, vecs = scipy.linalg.eigh(H, driver="evd", check_finite=False, overwrite_a=True)
        return E[:count], vecs[:, :count]
    if n not in _LWORK:
        lwork, info = lapack.dsyevx_lwork(n, lower=1)       # (the query eigh makes)
        _LWORK[n] = int(lwork)
    E, vecs, m, _, info = lapack.dsyevx(H, compute_v=1, range="I", il=1, iu=count, lower=1,
                                        overwrite_a=1, lwork=_LWORK[n])
    if info:
        raise np.linalg.LinAlgError(f"LAPACK dsyevx failed (info {info})")
    return E[:m], vecs[:, :m]


_LWORK: dict = {}


def finite(config, V, times):
    """``V`` (the molecule's on the grid: N, or len(times) x N) as it is, or ConfigError (one
    line) at the first of ``times`` where it is not finite -- a formula singular at an instant,
    1/(t - t0), had been a LAPACK error's traceback in H(t)'s eigenpairs (the precheck's bounds
    take the steps' generator times, not the observations')."""
    ok = np.atleast_1d((np.abs(V) < 0.5 / np.finfo(np.float64).eps).all(axis=-1))   # (NaN: not)
    if not ok.all():            # (|V| past 1/u: no eigensolver's arithmetic holds, Z = 1e300 too)
        t, p = float(np.atleast_1d(times)[np.flatnonzero(~ok)[0]]), config.potential
        raise ConfigError("potential", p.V or p.kind, f"V(x, t) is not finite (or past 1/u = 4.5e15 Ha) on "
                          f"the grid at t = {t:.6g} (H(t)'s eigenstates there): lower the potential's values")
    return V


def as_states(grid, E, vecs):
    """(E, phi): a solver's unit columns ``vecs`` (N x count) as :func:`eigenstates` gives
    them, rows normalised as sum |phi|^2 dx = 1 and signed (:func:`signed`)."""
    return E, signed(vecs.T / np.sqrt(grid.dx))


def signed(phi):
    """phi (count x N) with each row's sign fixed: the first sizeable component positive
    (all rows at once: the first index above 1e-3 of the row's largest magnitude)."""
    phi = np.array(phi)
    a = np.abs(phi)
    big = np.argmax(a > 1e-3 * a.max(axis=1, keepdims=True), axis=1)
    flip = phi[np.arange(len(phi)), big] < 0
    phi[flip] = -phi[flip]
    return np.ascontiguousarray(phi)


def pentadiagonal(g, v, count):
    """(E, vectors N x count) of the 5-point H = T + diag(v): eigenvalues by bisection on
    LAPACK's band reduction (no vectors), each vector by three steps of inverse iteration
    from a fixed random start (one banded LU a vector, the same numbers as three
    solve_banded calls: N = 256, 733-749 -> 542 us a call, benchmarks/results/
    host_costs_cpu2_20261126T0210.txt), then a Rayleigh-Ritz step on the block."""
    d0, d1, d2 = kinetic_bands(g.stencil, g.dx)
    n = g.n
    band = np.zeros((3, n))
    band[0] = d0 + v
    band[1, :-1] = d1
    band[2, :-2] = d2
    E = scipy.linalg.eig_banded(band, lower=True, select="i", select_range=(0, count - 1),
                                eigvals_only=True, check_finite=False)
    from scipy.linalg import lapack
    rng = np.random.default_rng(0)
    W = np.empty((n, count))
    for k, lam in enumerate(E):                # one LU, its three solves (what solve_banded,
        # dgbsv, did three times); just below lambda: never exactly singular
        lu, piv, info = _band5_lu(d1, d2, (d0 + v) - (lam - 1e-13 * max(1.0, abs(lam))))
        if info > 0:
            raise np.linalg.LinAlgError(f"singular band matrix at the shift {lam!r}")
        y = rng.standard_normal(n)
        for _ in range(3):
            y, _ = lapack.dgbtrs(lu, 2, 2, y, piv)
            y /= np.linalg.norm(y)
        W[:, k] = y

    h = _real_operator(g, v, np)               # the 5-point H on a block
    Q, _ = np.linalg.qr(W)
    theta, U = np.linalg.eigh(Q.T @ h(Q))
    return E, Q @ U


#: the iterative eigenpairs' residual bound ||H phi - E phi|| (hartree, phi of unit 2-norm),
#: or 20 u ||H|| where rounding allows no less (||H|| <= T_max + max|V|): an eigenvector then
#: errs by about this / the gap to the other states (a population by twice that)
RESIDUAL_TOL = 1e-11


class NotConverged(RuntimeError):
    """The iterative eigensolver did not reach its residual bound in its iterations."""


def residual_bound(grid, v, tol=RESIDUAL_TOL):
    """The residual the iterative solver must reach at H = T + diag(v): ``tol``, or
    20 u ||H|| where rounding allows no less."""
    from .hamiltonian import kinetic_max
    hnorm = kinetic_max(grid.stencil, grid.dx) + float(np.abs(v).max())
    return max(tol, 20 * np.finfo(np.float64).eps * hnorm)


def _real_operator(grid, v, xp):
    """X -> (T + diag(v)) X for a real block X (N x m): the stencil's bands as shifted
    slices -- also for a stack of potentials v (B x N) and blocks X (B x N x m) --, the DVR
    through the circulant embedding by real FFTs (the symbol is even)."""
    from .hamiltonian import dvr_symbol, kinetic_bands
    if grid.stencil != "dvr":                          # the bands by shifted slices
        d0, d1, d2 = kinetic_bands(grid.stencil, grid.dx)
        main = xp.asarray(d0 + np.asarray(v, dtype=np.float64))[..., None]

        def band(X):
            out = main * X
            out[..., 1:, :] += d1 * X[..., :-1, :]
            out[..., :-1, :] += d1 * X[..., 1:, :]
            if d2:
                out[..., 2:, :] += d2 * X[..., :-2, :]
                out[..., :-2, :] += d2 * X[..., 2:, :]
            return out
        return band
    n = grid.n
    lam = dvr_symbol(n, grid.dx, xp)[:n + 1, None]
    d = xp.asarray(v)[:, None]
    fft = xp.fft
    if xp is np:                # along contiguous rows, one thread: 1.6x faster at N = 8192;
        import scipy.fft as fft  # scipy.fft's 10-25 % faster than numpy.fft's, the same bits
                                 # (benchmarks/results/host_small_costs_cpu2_20261203T0823.txt)

    def h(X):
        K = fft.irfft(lam.T * fft.rfft(xp.ascontiguousarray(X.T), n=2 * n, axis=1), n=2 * n, axis=1)
        return K[:, :n].T + d * X
    return h


def _band5(d1, d2, diag):
    """LAPACK's general band layout (dgbtrf / dgbsv, kl = ku = 2: 2 rows of fill above) of
    the symmetric pentadiagonal matrix with diagonal ``diag`` and off-diagonals d1, d2."""
    size = len(diag)
    ab = np.zeros((7, size), order="F")
    ab[2, 2:] = d2                                 # A[i-2, i]
    ab[3, 1:] = d1                                 # A[i-1, i]
    ab[4] = diag
    ab[5, :-1] = d1                                # A[i+1, i]
    ab[6, :-2] = d2                                # A[i+2, i]
    return ab


def _band5_lu(d1, d2, diag):
    """LAPACK's banded LU (dgbtrf, kl = ku = 2) of the symmetric pentadiagonal matrix with
    diagonal ``diag`` and off-diagonals d1, d2: (lu, piv, info)."""
    from scipy.linalg import lapack
    return lapack.dgbtrf(_band5(d1, d2, diag), 2, 2, overwrite_ab=1)


def _banded_shift_solver(grid, v):
    """(R, X, theta) -> the Olsen correction (Olsen, Jorgensen & Simons, Chem. Phys. Lett.
    169, 463 (1990), eq. 9) of each column with M = H_5 - theta_i, the 5-point
    finite-difference H at the same dx as the preconditioner: t_i = M^-1 r_i - e_i M^-1 x_i,
    e_i = (x_i' M^-1 r_i) / (x_i' M^-1 x_i), so that t_i is orthogonal to x_i in the
    M-metric (the Jacobi-Davidson correction with the exact inverse replaced by M's).  For
    the 5-point H itself M is exact and the iteration is Rayleigh-quotient iteration on the
    block (cubic); for the sinc-DVR the 5-point H differs only at high wave numbers, where
    the DVR states have no weight, and a few iterations reach the residual bound.  A banded
    LU (LAPACK, O(N)) per column on the host, the columns' in one call."""
    from .hamiltonian import kinetic_bands
    d0, d1, d2 = kinetic_bands(5, grid.dx)
    main = d0 + np.asarray(v, dtype=np.float64)

    def correct(R, X, theta, active=None):
        """The corrections of the columns ``active`` (all by default), N x len(active): every
        column's two solves (M^-1 r, M^-1 x) by a LAPACK call a column on its shifted matrix
        (:func:`_banded_solves`, two right-hand sides a system; a band made, factored and
        solved a column from Python had been 44 % of a DVR call at N = 1024 on 2 CPUs,
        ``dvr_corrections_cpu2_20261130T1751.txt``)."""
        cols = list(range(len(theta)) if active is None else active)
        Rc, Xc = np.asarray(R)[:, cols], np.asarray(X)[:, cols]
        th = np.asarray(theta, dtype=np.float64)[cols]
        rhs = np.stack([Rc, Xc], axis=2)
        Y = _banded_solves(main[None, :] - th[:, None], d1, d2, rhs)
        if Y is None:                      # exactly singular: the shifts moved off it
            Y = _banded_solves(main[None, :] - (th * (1 - 1e-14) - 1e-14)[:, None], d1, d2, rhs)
        Mr, Mx = Y[:, :, 0], Y[:, :, 1]
        e = np.einsum("nk,nk->k", Xc, Mr) / np.einsum("nk,nk->k", Xc, Mx)
        return Mr - Mx * e[None, :]
    return correct


def davidson(grid, v, X, count, tol=None, maxiter=30, xp=np):
    """The lowest eigenpairs of H = T + diag(v) (3-, 5-point or sinc-DVR T, atomic units)
    by a block Davidson iteration (Davidson, J. Comput. Phys. 17, 87 (1975)) from the
    columns of ``X`` (N x m, m >= count, e.g. the block at the call's anchor time or the
    finite-difference pairs): Rayleigh-Ritz on span[X, T, P] -- T the Olsen corrections of
    the residuals (:func:`_banded_shift_solver`), P the last change of X (as in LOBPCG,
    Knyazev, SIAM J. Sci. Comput. 23, 517 (2001)) -- in an orthonormal basis
    (:func:`_orthonormal_to`: projections and SVQB, directions already in the space
    dropped), the m lowest Ritz pairs kept; for the 5-point H, whose correction is exact
    (Rayleigh-quotient iteration), only the wanted columns not yet converged are corrected
    (N = 8192, 4 of 6 columns, consecutive observations 0.1 apart: 16.5-18.2 ms a call
    against 20.7-21.6, 2.90 iterations against 2.81, host_costs_cpu2_20261126T0210.txt; for
    the DVR the others' corrections are needed: without them it took several times the
    iterations).  H is applied on ``xp``'s device (the
    stencil's bands by shifted slices, O(N) a column; the DVR by real FFTs, O(N log N)); the
    corrections on the host, O(N) a column.

    Converged when each of the ``count`` lowest residuals ||H x - theta x|| (x of unit
    2-norm) is within ``tol`` (default :func:`residual_bound`), checked on a fresh product
    H X.  Returns (theta, X, iterations, residuals); raises :class:`NotConverged`.
    (Near-)degenerate pairs are resolved as a pair: any rotation within it is a valid
    answer, the pair's summed population is the number to read."""
    from mgemm.arrays import to_host
    h = _real_operator(grid, v, xp)
    correct = _banded_shift_solver(grid, v)
    tol = residual_bound(grid, v) if tol is None else tol
    m = X.shape[1]
    X = xp.linalg.qr(xp.asarray(X, dtype=np.float64))[0]
    HX, P = h(X), None
    for it in range(maxiter + 1):
        G = X.T @ HX
        theta, U = xp.linalg.eigh(0.5 * (G + G.T))
        X, HX = X @ U, HX @ U
        R = HX - X * theta[None, :]
        res = xp.sqrt((R * R).sum(axis=0))
        if bool((res[:count] <= tol).all()):
            HX = h(X)                                    # the claim on a fresh product
            R = HX - X * theta[None, :]
            res = xp.sqrt((R * R).sum(axis=0))
            if bool((res[:count] <= tol).all()):
                return theta, X, it, res[:count]
        if it == maxiter:
            break
        active = None                   # every column's correction (the DVR's block needs them)
        if grid.stencil == 5:           # M = H exactly: each wanted column converges alone
            r = to_host(res)
            active = [i for i in range(count) if r[i] > tol] or None
        W = xp.asarray(correct(to_host(R), to_host(X), to_host(theta), active))
        S = W if P is None else xp.concatenate([W, P], axis=1)
        S = _orthonormal_to(X, S, xp)
        Q = xp.concatenate([X, S], axis=1)
        HQ = xp.concatenate([HX, h(S)], axis=1)          # H X carried over: H on S only
        G = Q.T @ HQ
        _, U = xp.linalg.eigh(0.5 * (G + G.T))
        U = U[:, :m]
        Xn = Q @ U
        P, X, HX = Xn - X @ (X.T @ Xn), Xn, HQ @ U
    raise NotConverged(f"residual {float(res[:count].max()):.2g} above {tol:.2g} after {maxiter} iterations")


def _orthonormal_to(X, S, xp):
    """An orthonormal basis of the part of span(S) outside span(X) (X orthonormal): S
    projected off X twice, then SVQB twice (Stathopoulos & Wu, SIAM J. Sci. Comput. 23,
    2165 (2002)): the Gram matrix's eigenvectors, directions below 1e-10 of the largest
    dropped -- what a converged column's correction (nearly inside span X) leaves.  GEMMs
    and an eigh of the small Gram, where Householder QR of the tall block took 10x longer."""
    for _ in range(2):
        S = S - X @ (X.T @ S)
    for _ in range(2):
        nrm = xp.sqrt((S * S).sum(axis=0))
        S = S / xp.maximum(nrm, 1e-300)[None, :]
        lam, U = xp.linalg.eigh(S.T @ S)
        keep = lam > 1e-10 * lam[-1]
        S = (S @ U[:, keep]) / xp.sqrt(lam[keep])[None, :]
        S = S - X @ (X.T @ S)
    return S


def tridiagonal(grid, v, m):
    """(E, vectors N x m): the m lowest pairs of the 3-point H = T + diag(v) at grid's dx
    (bisection and inverse iteration for the selected pairs, O(N m): :func:`lowest_pairs`):
    the 3-point stencil's eigenpairs, and the start of the DVR's
    and 5-point's iteration."""
    return lowest_pairs(*_tridiagonal_bands(grid, v), m)


def _tridiagonal_bands(grid, v):
    """(d, e): the diagonal and off-diagonal of the 3-point H = T + diag(v) at grid's dx."""
    from .hamiltonian import kinetic_bands
    d0, d1, _ = kinetic_bands(3, grid.dx)
    return d0 + np.asarray(v, dtype=np.float64), np.full(grid.n - 1, d1)



#: the finite-difference tracker's warm calls (:func:`warm_banded_many`): inverse iterations at most
#: before the call falls back to :func:`lowest_pairs` (measured along h2plus_moving's run, calls
#: 0.1-0.2 a.u. apart: 2 at N = 256 and 8192)
WARM_MAXITER = 4

#: the 3- and 5-point tracker's window (:meth:`Tracker.window`): the populations times of this
#: many populations intervals, solved together -- the first, the anchor, from scratch
#: (:meth:`Tracker._scratch`), the others from its pairs (:func:`warm_banded_many`): so a
#: call's pairs depend on t alone -- not on which calls came before -- and a resumed run,
#: the eigenpairs thread, the workers and the loop compute the same bits.  3-point, N = 256,
#: calls 0.2 a.u. apart on 2 CPUs: 8 / 16 / 32 / 64 calls a window, 123 / 99 / 90 / 89 us a
#: call (dstemr alone: 310 us; ``window_pairs_cpu2_20261126T1009.txt``); 16 keeps a
#: window's far members at 2-3 iterations and its first call's wait short
WARM_ANCHOR_CALLS = 16

#: the 3- and 5-point tracker solves every call from scratch below this N, by windows from
#: it.  A window's member costs a share of ~15 NumPy calls on the stacked members and of
#: their LAPACK solves: h2plus_moving's molecule, 800 calls 0.2 a.u. apart on 2 CPUs, a call
#: 3-point 106 / 636 us against dstemr's 310 / 3118 at N = 256 / 2048, 5-point 196 / 998
#: against 614 / 6129 (``benchmarks/archive/window_pairs.py``,
#: ``window_pairs_cpu2_20261126T1009.txt``); before the windows, the 3-point warm solver a
#: call at a time (~40 NumPy calls each) had lost to dstemr at N = 256 and won from ~1024
#: (N = 8192 on one H100's host: 4.5-5.6 ms a call against dstemr's 22 ms;
#: ``benchmarks/results/warm_pairs_*_20261126T06*``)
WARM_MIN_N = 0


#: this thread's 5-point band storage for :func:`_banded_solves` (made once per grid)
_BAND5 = threading.local()


def _banded_solves(D, d1, d2, X):
    """D[j]'s banded system (diagonal D[j]; off-diagonals d1 and, for the 5-point stencil,
    d2, shared) solved for X[:, j], each column j (D: k x N, X: N x k; or N x k x r, r
    right-hand sides a system, pentadiagonal only): tridiagonal by
    :func:`~tdse.model.lapack.shifted_solves` (the k systems one block-diagonal call);
    pentadiagonal by LAPACK's dgbsv (banded LU with partial pivoting), a call a system in
    one band array of this thread's, refilled from the bands' pattern (7 x N, in cache)
    each time; None where a matrix is singular to working precision.

    A call a system, not the k systems as one block-diagonal band matrix: dgbsv's LU takes
    a block's columns with the same operations either way (its pivot search stays within a
    block, the entries between blocks zero) -- the same bits (``benchmarks/archive/band_solves.py``
    compares them) -- but the k N-column band (27 MB for a 5-point window's 60 systems at N =
    8192) had been made again whenever k changed (a window's anchor has 4 systems, its
    members up to 60: 13 of a 37 ms call), and streamed through memory where one system's
    band (0.46 MB) stays in cache: one core, N = 8192, 60 systems, 36.8 ms (made again) /
    23.8 (kept) against 22.7 ms a call a system
    (``benchmarks/results/band_solves_cpu2_20261201T0236.txt``; a 5-point window of 16 calls
    60 -> 49 ms; the DVR's Davidson calls, whose corrections solve here, 4.76 / 6.97 ->
    4.76 / 6.82 ms at N = 1024 / 2048, ``band_solves_dvr_cpu2_20261201T0301.txt``)."""
    k, n = D.shape
    if not d2:
        return shifted_solves(D, np.full(n - 1, d1), X)
    from scipy.linalg import lapack
    key = (n, d1, d2)
    band = getattr(_BAND5, "band5", None)
    if band is None or band[0] != key:           # the pattern and the work array, once a thread
        pattern = _band5(d1, d2, np.zeros(n))
        band = _BAND5.band5 = (key, pattern, np.empty_like(pattern, order="F"))
    _, pattern, ab = band
    r = X.shape[2] if X.ndim == 3 else None
    # (the result laid out as the one call's had been, N fastest, then k, then r: a caller's
    # sums over it -- einsum's -- go in the same order, the same bits)
    Y = np.empty((1 if r is None else r, k, n))
    for j in range(k):
        ab[...] = pattern                        # (dgbsv overwrites it with its LU)
        ab[4] = D[j]
        rhs = np.array(X[:, j], order="F")
        *_, y, info = lapack.dgbsv(2, 2, ab, rhs, overwrite_ab=1, overwrite_b=1)
        if info:
            return None
        Y[:, j] = y.T if r is not None else y
    return Y[0].T if r is None else Y.transpose(2, 1, 0)


def warm_banded(grid, v, E, X, bound, maxiter=WARM_MAXITER):
    """The lowest K eigenpairs of the finite-difference H = T + diag(v) on ``grid`` (3- or
    5-point) from those of a nearby H (energies ``E``, unit columns ``X``, N x K):
    :func:`warm_banded_many` of the one potential -- (theta, vectors N x K), or None where
    they cannot be vouched for."""
    return warm_banded_many(grid, np.asarray(v, dtype=np.float64)[None], E, X, [bound], maxiter)[0]


def warm_banded_many(grid, V, E, X, bounds, maxiter=WARM_MAXITER):
    """The lowest K eigenpairs of the finite-difference H_b = T + diag(V[b]) on ``grid``
    (3-point: symmetric tridiagonal, :func:`_tridiagonal_bands`; 5-point: pentadiagonal)
    for each row of ``V`` (B x N: the potentials of B times of a run), all from the pairs of
    one nearby H (their anchor's along a run, :class:`Tracker`: energies ``E``, unit columns
    ``X``, N x K): a list of B (theta, vectors N x K), None for a member that cannot be
    vouched for (then the solver from scratch).

    Subspace inverse iteration, each column with its own shift (at first E_k, then the
    Ritz values), one banded solve a column (O(N)), an orthonormal basis of the iterates
    (QR) and a Rayleigh-Ritz step on it, until every residual ||H_b phi - theta phi|| is
    within ``bounds[b]`` (Parlett, *The Symmetric Eigenvalue Problem*, ch. 4 and 11: a
    shifted inverse iteration converges at the ratio of the shift's distances to the wanted
    and the nearest other eigenvalue; Rayleigh-Ritz separates a (near-)degenerate pair once
    the pair's subspace has converged).  A member is accepted only where a Sturm count
    (:func:`count_below`) of the 3-point H at the same dx and potential finds exactly K
    eigenvalues at or below its largest Ritz value plus its residual and a rounding margin:
    the K pairs are then the lowest -- each Ritz value lies within its residual of an
    eigenvalue and orthonormal Ritz vectors with small residuals approximate distinct ones,
    so H_b has at least K eigenvalues there, and at most as many as the 3-point H: the
    5-point T less the 3-point T is (1/(24 dx^2)) (D2^2 + e_1 e_1' + e_N e_N'), D2 the
    second-difference matrix, positive semidefinite, so each eigenvalue of the 5-point H
    lies at or above the 3-point H's of the same index (Weyl's monotonicity; Horn &
    Johnson, *Matrix Analysis*, cor. 4.3.12).  The B members are one array each step -- the
    B K solves by :func:`_banded_solves` (3-point: one block-diagonal LAPACK call), the QR, the
    products and the Rayleigh-Ritz eigenproblems stacked -- so a member costs a share of
    ~15 NumPy calls where it took ~40 of its own; a converged member leaves the stack (its
    pairs depend on its own iterations alone).  2 iterations along h2plus_moving's run at N
    = 256 and 8192 (calls 0.1-0.2 a.u. apart), against bisection's ~50 Sturm sweeps a value
    in :func:`lowest_pairs`."""
    V = np.atleast_2d(np.asarray(V, dtype=np.float64))
    B, n = V.shape
    K = X.shape[1]
    out = [None] * B
    if B == 0 or K == 0 or n < 2 * K + 2:
        return out
    from .hamiltonian import kinetic_bands
    d0, d1, d2 = kinetic_bands(grid.stencil, grid.dx)
    D = d0 + V                                        # the members' diagonals, B x N
    bounds = np.broadcast_to(np.asarray(bounds, dtype=np.float64), (B,))
    hnorm = np.abs(D).max(axis=1) + 2.0 * (abs(d1) + abs(d2))
    act = np.arange(B)                                # members still iterating
    sig = np.tile(np.asarray(E, dtype=np.float64), (B, 1))       # B x K shifts
    Xs = np.broadcast_to(X, (B, n, K))
    for _ in range(maxiter):
        Da = D[act]
        Y = _banded_solves((Da[:, None, :] - sig[:, :, None]).reshape(-1, n), d1, d2,
                           Xs.transpose(1, 0, 2).reshape(n, -1))
        if Y is None:                                 # a singular shift: these go from scratch
            return out
        Q = np.linalg.qr(Y.reshape(n, len(act), K).transpose(1, 0, 2))[0]
        HQ = _real_operator(grid, V[act], np)(Q)     # H Q by the bands' shifted slices
        theta, W = np.linalg.eigh(np.matmul(Q.transpose(0, 2, 1), HQ))
        Xn = np.matmul(Q, W)
        R = np.matmul(HQ, W)
        R -= Xn * theta[:, None, :]
        # each column's ||r||: the diagonal of R'R (a sum down the middle axis is 5x slower)
        res = np.sqrt(np.diagonal(np.matmul(R.transpose(0, 2, 1), R), axis1=1, axis2=2).max(axis=1))
        ok = np.isfinite(res)                         # a member gone non-finite: from scratch
        done = ok & (res <= bounds[act])
        for i in np.flatnonzero(done):
            b = act[i]
            margin = max(float(res[i]), 1e3 * np.finfo(np.float64).eps * float(hnorm[b]))
            if count_below(*_tridiagonal_bands(grid, V[b]), theta[i, -1] + margin) == K:
                out[b] = (theta[i], Xn[i])
        keep = ok & ~done
        act, sig, Xs = act[keep], theta[keep], Xn[keep]
        if not act.size:
            break
    return out


#: the DVR's pairs along a run (:class:`tdse.model.tracker.Tracker`) by Davidson from the
#: dense pairs of the sub-grid around the wells (:func:`sub_start`) from this N, where that
#: sub-grid has at most SUB_MAX_POINTS points (its dense solve then a few ms on one core) and
#: at most 3/4 of the grid; SUB_MARGINS: the margins (bohr) beside the wells tried at t = 0.
#: h2plus_moving's molecule, 4 populations, calls 0.02 a.u. apart, alternating in one process
#: on 2 CPUs (``benchmarks/archive/dvr_sub_start.py``, ``dvr_sub_start_cpu2_20261203T1550.txt``):
#: N = 512 / 768 / 1024 a call 6.1 / 4.9 / 8.0 ms against 13.9 (the dense solver) / 14.2 / 12.5
#: (Davidson from the anchor's block), 2.2 / 0 / 0 iterations, populations and energies to
#: 7e-12 of the dense solver's; at N = 384 x1.12 (5 iterations): not there
SUB_MIN_N, SUB_MAX_POINTS, SUB_MARGINS = 512, 448, (3.0, 6.0)


def _sub_range(grid, v, margin):
    """(lo, hi): the points where v lies in the lower half of its range up to its median
    (the wells), widened by ``margin`` bohr each side."""
    v = np.asarray(v, dtype=np.float64)
    low = v.min()
    deep = np.flatnonzero(v <= low + 0.5 * (np.median(v) - low))
    k = int(math.ceil(margin / grid.dx))
    return max(0, int(deep[0]) - k), min(grid.n, int(deep[-1]) + k + 1)


def sub_start(grid, v, m, margin):
    """N x m unit columns: the m lowest pairs of H = T + diag(v) restricted to the sub-grid
    :func:`_sub_range` (a dense solve, LAPACK's dsyevx), zero outside it -- a start for
    :func:`davidson` where the states decay within ``margin`` of the wells.  The sinc-DVR's
    T reaches past the sub-grid with an alternating 1/d^2 tail, so the start's residual is
    what that tail leaves of the states' unresolved part (h2plus_moving's molecule at t = 0.6:
    ~1e-9 at N = 512, rounding at 768) and Davidson takes it from there."""
    lo, hi = _sub_range(grid, v, margin)
    _, U = dense_lowest(grid, np.asarray(v, dtype=np.float64)[lo:hi], m, slice(lo, hi))
    X = np.zeros((grid.n, m))
    X[lo:hi] = U
    return X


def sub_margin(grid, v, m):
    """The first of :data:`SUB_MARGINS` whose sub-grid (:func:`sub_start`, at most
    SUB_MAX_POINTS points and 3/4 of the grid) holds the m lowest states -- each start
    column's ends below 1e-8 of its largest -- at the potential ``v``, or None (the DVR below
    SUB_MIN_N, or states too wide for a small sub-grid)."""
    if grid.stencil != "dvr" or grid.n < SUB_MIN_N:
        return None
    for margin in SUB_MARGINS:
        lo, hi = _sub_range(grid, v, margin)
        if hi - lo > min(SUB_MAX_POINTS, 3 * grid.n // 4):
            return None
        U = sub_start(grid, v, m, margin)[lo:hi]
        if np.all(np.maximum(np.abs(U[0]), np.abs(U[-1])) <= 1e-8 * np.abs(U).max(axis=0)):
            return margin
    return None


def fd_start(grid, v, m):
    """m lowest 3-point vectors at the same dx, N x m of unit columns (:func:`tridiagonal`)."""
    return tridiagonal(grid, v, m)[1]


def eigen_threads():
    """A context holding the host's BLAS to :data:`EIGEN_BLAS_THREADS` (the process's one
    threadpoolctl controller, :func:`tdse.options.blas_limit`)."""
    return blas_limit(EIGEN_BLAS_THREADS, "blas")
