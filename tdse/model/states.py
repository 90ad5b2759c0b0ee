"""States of the molecule: the lowest eigenpairs of the molecular H(t) and psi(0)
(atomic units; psi normalised as sum |psi|^2 dx = 1)."""
from __future__ import annotations

import math

import numpy as np
import scipy.linalg

from .grid import points
from .hamiltonian import generator_dense, kinetic_bands
from .observables import norm
from .potential import soft_core

__all__ = ["DTYPE", "eigenstates", "initial_state"]

#: the dtype of psi and of every propagator (complex128)
DTYPE = np.complex128


def eigenstates(config, t, count):
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
    (scipy.linalg.eigh, subset_by_index).
    """
    g = config.grid
    v = soft_core(config.potential, points(g), t)
    count = min(count, g.n)
    if g.stencil == "dvr":
        E, vecs = scipy.linalg.eigh(generator_dense(config, 1.0, v), subset_by_index=(0, count - 1),
                                    driver="evx", check_finite=False)
    elif g.stencil == 3:
        d0, d1, _ = kinetic_bands(g.stencil, g.dx)
        E, vecs = scipy.linalg.eigh_tridiagonal(d0 + v, np.full(g.n - 1, d1), select="i",
                                                select_range=(0, count - 1), check_finite=False)
    else:
        E, vecs = _pentadiagonal(g, v, count)
    phi = vecs.T / np.sqrt(g.dx)
    for k in range(count):
        big = np.flatnonzero(np.abs(phi[k]) > 1e-3 * np.abs(phi[k]).max())[0]
        if phi[k, big] < 0:
            phi[k] = -phi[k]
    return E, np.ascontiguousarray(phi)


def _pentadiagonal(g, v, count):
    """(E, vectors N x count) of the 5-point H = T + diag(v): eigenvalues by bisection on
    LAPACK's band reduction (no vectors), each vector by three steps of inverse iteration
    from a fixed random start, then a Rayleigh-Ritz step on the block."""
    d0, d1, d2 = kinetic_bands(g.stencil, g.dx)
    n = g.n
    band = np.zeros((3, n))
    band[0] = d0 + v
    band[1, :-1] = d1
    band[2, :-2] = d2
    E = scipy.linalg.eig_banded(band, lower=True, select="i", select_range=(0, count - 1),
                                eigvals_only=True, check_finite=False)
    ab = np.zeros((5, n))                      # solve_banded's layout, (l, u) = (2, 2)
    ab[0, 2:], ab[1, 1:], ab[2], ab[3, :-1], ab[4, :-2] = d2, d1, d0 + v, d1, d2
    rng = np.random.default_rng(0)
    W = np.empty((n, count))
    for k, lam in enumerate(E):
        a = ab.copy()
        a[2] -= lam - 1e-13 * max(1.0, abs(lam))   # just below lambda: never exactly singular
        y = rng.standard_normal(n)
        for _ in range(3):
            y = scipy.linalg.solve_banded((2, 2), a, y, check_finite=False)
            y /= np.linalg.norm(y)
        W[:, k] = y

    def h(X):                                  # the 5-point H on a block
        out = (d0 + v)[:, None] * X
        out[1:] += d1 * X[:-1]
        out[:-1] += d1 * X[1:]
        out[2:] += d2 * X[:-2]
        out[:-2] += d2 * X[2:]
        return out
    Q, _ = np.linalg.qr(W)
    theta, U = np.linalg.eigh(Q.T @ h(Q))
    return E, Q @ U


def initial_state(config, x, phi0):
    """psi(0): an eigenstate of H(0) (index ``state``) or a normalised Gaussian packet."""
    ini = config.initial
    if ini.state == "gaussian":
        psi = np.exp(-((x - ini.x0) ** 2) / (4 * ini.sigma ** 2) + 1j * ini.k0 * x)
        return psi / math.sqrt(norm(psi, config.grid.dx))
    return phi0[ini.state].astype(DTYPE)


#: the iterative eigenpairs' residual bound ||H phi - E phi|| (hartree, phi of unit 2-norm),
#: or 20 u ||H|| where rounding allows no less (||H|| <= T_max + max|V|): an eigenvector then
#: errs by about this / the gap to the other states (a population by twice that)
RESIDUAL_TOL = 1e-11


class Tracker:
    """The lowest ``count`` eigenpairs of the molecular H(t) along a run (the populations'
    reference states, :class:`tdse.run.observers.Observables`), at O(N K) per call where the
    dense solver is O(N^3):

    * 3-point: :func:`eigenstates` (LAPACK's tridiagonal solver for the selected pairs);
    * 5-point and DVR: LOBPCG (Knyazev, SIAM J. Sci. Comput. 23, 517 (2001); SciPy's
      ``scipy.sparse.linalg.lobpcg``, CuPy's ``cupyx.scipy.sparse.linalg.lobpcg`` on a GPU)
      on a block of count + 2 vectors warm-started from the previous call's, H applied as an
      operator (the banded stencil, the DVR by FFT: :class:`tdse.model.hamiltonian.Operator`),
      preconditioned by (T_periodic + sigma)^-1 applied by FFT; converged when every
      residual ||H phi - E phi|| <= :data:`RESIDUAL_TOL`.  The first call, and any call that
      does not converge (said once, as a warning), uses the dense solver.

    (Near-)degenerate pairs -- the symmetric double well's lowest two states at large
    separation -- are determined only as a pair when their splitting is below about the
    residual bound: the pair's summed population is then the number to read
    (:attr:`clusters` lists the pairs closer than :attr:`cluster_gap` at the last call)."""

    def __init__(self, config, count, xp=np, tol=RESIDUAL_TOL, maxiter=300):
        self.config, self.xp, self.tol, self.maxiter = config, xp, tol, maxiter
        self.K = min(count, config.grid.n)
        self.block = min(config.grid.n, self.K + 2)
        self.iterative = config.grid.stencil != 3 and config.grid.n > 4 * self.block
        self.X = None                 # the previous block (N x block, unit columns)
        self.E_prev = None
        self.fallbacks = 0
        self.calls = 0
        self.cluster_gap = 1e3 * tol
        self.clusters = []
        self.warned = False

    def __call__(self, t):
        self.calls += 1
        if not self.iterative:
            return eigenstates(self.config, t, self.K)
        if self.X is None:
            return self._dense(t)
        try:
            E, V = self._lobpcg(t)
        except (np.linalg.LinAlgError, ValueError, RuntimeError):
            E = None
        if E is None:
            self.fallbacks += 1
            if not self.warned:
                import warnings
                self.warned = True
                warnings.warn(f"at t = {t:.4g} the iterative eigensolver did not reach its residual "
                              f"bound: the dense solver is used where that happens",
                              RuntimeWarning, stacklevel=2)
            return self._dense(t)
        return self._finish(E, V)

    def _dense(self, t):
        E, phi = eigenstates(self.config, t, self.block)
        self.X = self.xp.asarray(phi.T * np.sqrt(self.config.grid.dx))
        self._clusters(E)
        return E[:self.K], phi[:self.K]

    def _operator(self, t):
        from .hamiltonian import Operator
        cfg, xp = self.config, self.xp
        v = self._v = soft_core(cfg.potential, points(cfg.grid), t)
        op = Operator(cfg, 1.0, v, xp)
        n = cfg.grid.n
        k = xp.asarray(2 * np.pi * np.fft.fftfreq(n, d=cfg.grid.dx))
        sigma = max(1.0, -float(self.E_prev[0])) if self.E_prev is not None else max(1.0, -float(v.min()))
        inv = 1.0 / (0.5 * k * k + sigma)
        if xp is np:
            import scipy.sparse.linalg as sla
        else:
            import cupyx.scipy.sparse.linalg as sla

        def matmat(X):
            X = X.reshape(n, -1)
            return xp.ascontiguousarray(op(X.astype(DTYPE)).real)

        def precond(X):
            X = X.reshape(n, -1)
            return xp.ascontiguousarray(xp.fft.ifft(inv[:, None] * xp.fft.fft(X, axis=0), axis=0).real)
        A = sla.LinearOperator((n, n), matvec=matmat, matmat=matmat, dtype=np.float64)
        M = sla.LinearOperator((n, n), matvec=precond, matmat=precond, dtype=np.float64)
        return sla, A, M, matmat

    def residual_bound(self, v):
        """The residual the iterative solver must reach at this H: :data:`RESIDUAL_TOL`, or
        20 u ||H|| where rounding allows no less."""
        from .hamiltonian import kinetic_max
        g = self.config.grid
        hnorm = kinetic_max(g.stencil, g.dx) + float(np.abs(v).max())
        return max(self.tol, 20 * np.finfo(np.float64).eps * hnorm)

    def _lobpcg(self, t):
        xp = self.xp
        sla, A, M, matmat = self._operator(t)
        tol = self.residual_bound(self._v)
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            E, V = sla.lobpcg(A, self.X, M=M, tol=tol, maxiter=self.maxiter, largest=False)
        order = xp.argsort(E)
        E, V = E[order], V[:, order]
        R = matmat(V) - V * E[None, :]
        res = xp.sqrt((R * R).sum(axis=0))[:self.K]
        self.last_residual = float(res.max())
        if not bool((res <= tol).all()):
            return None, None
        self.X = V
        return E, V

    def _finish(self, E, V):
        from mgemm.arrays import to_host
        E, V = to_host(E), to_host(V)
        self._clusters(E)
        phi = V[:, :self.K].T / np.sqrt(self.config.grid.dx)
        for k in range(self.K):
            big = np.flatnonzero(np.abs(phi[k]) > 1e-3 * np.abs(phi[k]).max())[0]
            if phi[k, big] < 0:
                phi[k] = -phi[k]
        return E[:self.K], np.ascontiguousarray(phi)

    def _clusters(self, E):
        E = np.asarray(E)[:self.K]
        self.E_prev = E
        self.clusters = [[i, i + 1] for i in range(len(E) - 1) if E[i + 1] - E[i] < self.cluster_gap]
