"""H = -1/2 d^2/dx^2 + V(x, t) on the uniform grid (atomic units).

Kinetic energy T, by ``grid.stencil``:
  3     (the source's) (-psi_{j-1} + 2 psi_j - psi_{j+1}) / (2 dx^2), error O(dx^2);
  5     (psi_{j-2} - 16 psi_{j-1} + 30 psi_j - 16 psi_{j+1} + psi_{j+2}) / (24 dx^2), O(dx^4);
  "dvr" the Colbert-Miller sinc-DVR (J. Chem. Phys. 96, 1982 (1992), eq. (A7)):
        T_ij = (-1)^(i-j) / (2 dx^2) * (pi^2/3 if i = j else 2/(i-j)^2), dense, with an
        error that falls exponentially in dx for smooth wavefunctions.
psi = 0 outside the box (Dirichlet) for the stencils; the DVR's grid is the box's points.

Spectral bounds (rigorous): each T is a finite section of an infinite Hermitian Toeplitz
matrix whose symbol f(k) = (1 - cos k)/dx^2 (3-point), (30 - 32 cos k + 2 cos 2k)/(24 dx^2)
(5-point), k^2/(2 dx^2) (dvr), |k| <= pi, lies in [0, T_max] with T_max = 2/dx^2, 8/(3 dx^2),
pi^2/(2 dx^2); the eigenvalues of every finite section lie in the symbol's range
(Grenander & Szego).  With Weyl's inequality, the spectrum of s T + diag(v) lies in
[min v, s T_max + max v].  This is the thesis' Delta r - Delta t relation made exact:
||H|| grows like 1/dx^2.

The velocity gauge (:mod:`tdse.model.field`) adds A(t) p, p = -i D with D the grid's own
first derivative (:mod:`tdse.model.momentum`): Hermitian, |p| <= P_max, so with Weyl
s T + a p + diag(v) has its spectrum in [min v - |a| P_max, s T_max + max v + |a| P_max].

A Magnus generator is s T [+ a p] + diag(v) with v = sum_j w_j V(x, t_j) (:mod:`tdse.schemes`):
:func:`generator_dense` builds it, :func:`apply` applies it without forming it (banded
for the stencils; for the DVR by FFT, embedding the Toeplitz T in a circulant of size 2N).
"""
from __future__ import annotations

import math

import numpy as np

from ..backends.cupy import stencil
from .absorber import absorber_profile
from .centro import centro_fold, centro_halves, centro_matmul, centro_unfold  # noqa: F401  (re-exported)
from .momentum import (BlockMomentum, momentum_bands, momentum_column, momentum_column_for,
                       momentum_max, momentum_offsum)
from .grid import points
from .ffts import padded_kinetic
from .potential import total


def kinetic_bands(stencil, dx: float) -> tuple[float, ...]:
    """(diagonal, first off-diagonal, second off-diagonal) of a finite-difference T."""
    h2 = dx * dx
    if stencil == 3:
        return (1.0 / h2, -0.5 / h2, 0.0)
    if stencil == 5:
        return (30.0 / 24.0 / h2, -16.0 / 24.0 / h2, 1.0 / 24.0 / h2)
    raise ValueError(f"kinetic_bands needs stencil 3 or 5, got stencil={stencil!r}")


def kinetic_max(stencil, dx: float) -> float:
    """T_max, the top of the kinetic symbol's range [0, T_max] (module docstring)."""
    h2 = dx * dx
    if stencil == 3:
        return 2.0 / h2
    if stencil == 5:
        return 8.0 / 3.0 / h2
    if stencil == "dvr":
        return math.pi ** 2 / 2.0 / h2
    raise ValueError(f"stencil must be 3, 5 or 'dvr', got stencil={stencil!r}")


def order(stencil):
    """Convergence order in dx of the kinetic operator (None: exponential, the DVR)."""
    return {3: 2, 5: 4}.get(stencil)


def kinetic_diagonal(stencil, dx: float) -> float:
    """T_jj (the same on every row)."""
    return math.pi ** 2 / 6.0 / (dx * dx) if stencil == "dvr" else kinetic_bands(stencil, dx)[0]


def kinetic_offsum(stencil, dx: float) -> float:
    """A bound on sum over i != j of |T_ij| in any column (1-norm radius): 2|d1| + 2|d2| for
    the stencils, pi^2/(3 dx^2) for the DVR (2 sum_k 1/k^2)."""
    if stencil == "dvr":
        return math.pi ** 2 / 3.0 / (dx * dx)
    d0, d1, d2 = kinetic_bands(stencil, dx)
    return 2 * abs(d1) + 2 * abs(d2)


def momentum_dense(grid, xp=np):
    """p = -i D as a dense N x N complex matrix on the device of ``xp`` (cached)."""
    def make():
        # (SciPy not at this module's import: a run's look-ahead workers start before the
        # solvers are imported, tdse.run.eigenpairs.look_ahead)
        import scipy.linalg
        c = momentum_column(grid)
        return xp.asarray(scipy.linalg.toeplitz(c, c.conj()))
    return _cached(("P", grid.n, grid.dx, grid.stencil, _device_key(xp)), make)


def onenorm_bounds(stencil, dx, vmin, vmax, scale=1.0, a=0.0, n=0):
    """(c, r): ||scale T + a p + diag(v) - c I||_1 <= r for vmin <= v <= vmax (Gershgorin
    by columns, centred on the diagonal's range; p's diagonal is 0), for the non-Hermitian
    (absorber) path; ``n`` the grid's points (the DVR's p)."""
    c = scale * kinetic_diagonal(stencil, dx) + 0.5 * (vmin + vmax)
    m = abs(a) * momentum_offsum(stencil, dx, n) if a else 0.0
    return c, scale * kinetic_offsum(stencil, dx) + 0.5 * (vmax - vmin) + m


def spectrum_bounds(stencil, dx, vmin, vmax, scale=1.0, a=0.0):
    """[lo, hi] containing the spectrum of scale*T + a p + diag(v) for vmin <= v <= vmax
    (rigorous: the Toeplitz symbols' ranges and Weyl's inequality, module docstring)."""
    m = abs(a) * momentum_max(stencil, dx) if a else 0.0
    return float(vmin - m), float(scale * kinetic_max(stencil, dx) + vmax + m)


def dvr_column(n: int, dx: float) -> np.ndarray:
    """First column of the sinc-DVR kinetic matrix (Colbert & Miller 1992, eq. (A7))."""
    k = np.arange(n, dtype=np.float64)
    c = np.empty(n)
    c[0] = math.pi ** 2 / 3.0
    c[1:] = 2.0 / k[1:] ** 2
    c[1::2] *= -1.0
    return c / (2.0 * dx * dx)


_CACHE: dict = {}


def _cached(key, make):
    if key not in _CACHE:
        if len(_CACHE) > 16:
            _CACHE.clear()
        _CACHE[key] = make()
    return _CACHE[key]


def _device_key(xp):
    if xp is np:
        return "host"
    return f"{xp.__name__}:{xp.cuda.Device().id}"


def kinetic_dense(grid, xp=np, dtype=np.float64):
    """The N x N kinetic matrix on the device of ``xp`` (cached per grid and device)."""
    n, dx, st = grid.n, grid.dx, grid.stencil

    def make():
        if st == "dvr":
            import scipy.linalg
            T = scipy.linalg.toeplitz(dvr_column(n, dx))
        else:
            d0, d1, d2 = kinetic_bands(st, dx)
            T = np.diag(np.full(n, d0)) + np.diag(np.full(n - 1, d1), 1) + np.diag(np.full(n - 1, d1), -1)
            if d2:
                T += np.diag(np.full(n - 2, d2), 2) + np.diag(np.full(n - 2, d2), -2)
        return xp.asarray(T)
    T = _cached(("T", n, dx, st, _device_key(xp)), make)
    return T.astype(dtype, copy=False) if T.dtype != np.dtype(dtype) else T


def kinetic_halves(grid, xp=np):
    """(P, Q): the symmetric Toeplitz T (N = 2m + o, o = N mod 2) reduced to two blocks of
    about half its size, so that T X costs half the flops of one N x N product.

    T = J T J with J the reversal (every symmetric Toeplitz matrix is centrosymmetric), and
    such a matrix is orthogonally similar to a block diagonal of two half-size blocks
    (Cantoni & Butler, Linear Algebra Appl. 13, 275 (1976)).  Written without the
    orthogonal factors: with A = T[:m, :m], M = T[:m, N-m:] J, b = T[:m, m] and t0 = T[m, m]
    (the middle row and column, when o = 1), S = X1 + J X2 and D = X1 - J X2 of the top and
    bottom m rows of X,

        P [S; x_m] = [(Y1 + J Y2) / 2; y_m],   P = [[(A + M)/2, b], [b^T, t0]],
        Q D = (Y1 - J Y2) / 2,                 Q = (A - M)/2,

    for Y = T X (:func:`centro_matmul`).  Cached per grid and device."""
    return _cached(("halves", grid.n, grid.dx, grid.stencil, _device_key(xp)),
                   lambda: tuple(xp.asarray(h) for h in centro_halves(np.asarray(kinetic_dense(grid)))))


def dvr_symbol(n, dx, xp):
    """Eigenvalues of the circulant (size 2N) that embeds the DVR's Toeplitz T."""
    def make():
        c = dvr_column(n, dx)
        circ = np.concatenate([c, [0.0], c[:0:-1]])
        return xp.asarray(np.fft.fft(circ).real)
    return _cached(("sym", n, dx, _device_key(xp)), make)


def dvr_momentum_symbol(n, dx, xp):
    """Eigenvalues of the Hermitian circulant (size 2N) that embeds the DVR's p (real)."""
    def make():
        c = momentum_column_for("dvr", n, dx)
        circ = np.concatenate([c, [0.0], c[:0:-1].conj()])
        return xp.asarray(np.fft.fft(circ).real)
    return _cached(("psym", n, dx, _device_key(xp)), make)


def generator_dense(config, scale, v, xp=np, dtype=np.float64, a=0.0):
    """scale * (T - i W) + a p + diag(v) as a dense matrix on the device of ``xp`` (complex
    when the config has an absorber W or ``a`` is not 0: the velocity gauge)."""
    if config.absorber is not None or a:
        dtype = np.complex128
    G = kinetic_dense(config.grid, xp, dtype) * scale
    if a:
        G += a * momentum_dense(config.grid, xp)
    i = xp.arange(config.grid.n)
    G[i, i] += _diagonal(config, scale, v, 0, config.grid.n, xp)
    return G


def _diagonal(config, scale, v, c0, c1, xp):
    """Entries c0..c1-1 of the generator's diagonal beyond scale*T: v [- i scale W]."""
    d = xp.asarray(v)[c0:c1]
    if config.absorber is not None:
        d = d - 1j * scale * xp.asarray(absorber_profile(config)[c0:c1])
    return d


def toeplitz_column(grid) -> np.ndarray:
    """First column of the (symmetric Toeplitz) kinetic matrix T for any stencil."""
    if grid.stencil == "dvr":
        return dvr_column(grid.n, grid.dx)
    c = np.zeros(grid.n)
    bands = kinetic_bands(grid.stencil, grid.dx)
    c[:min(3, grid.n)] = bands[:min(3, grid.n)]
    return c


def generator_columns(config, scale, v, c0, c1, xp=np, a=0.0):
    """Columns c0..c1-1 of :func:`generator_dense` (N x (c1 - c0)), built on the current
    device from T's Toeplitz column and the diagonal alone: a GPU builds its band of
    the generator without the matrix ever existing whole (:meth:`mgemm.dist.Layout.from_columns`)."""
    n = config.grid.n
    col = _cached(("col", n, config.grid.dx, config.grid.stencil, _device_key(xp)),
                  lambda: xp.asarray(toeplitz_column(config.grid)))
    rows = xp.arange(n)[:, None]
    cols = xp.arange(c0, c1)[None, :]
    band = col[xp.abs(rows - cols)] * scale
    if config.absorber is not None or a:
        band = band.astype(np.complex128)
    if a:                       # p_rc = c_(r-c) below the diagonal, conj(c_(c-r)) above
        pc = xp.asarray(momentum_column(config.grid))
        d = rows - cols
        band += a * xp.where(d >= 0, pc[xp.abs(d)], pc[xp.abs(d)].conj())
    band[xp.arange(c0, c1), xp.arange(c1 - c0)] += _diagonal(config, scale, v, c0, c1, xp)
    return band


def dense(config, t, xp=np, dtype=np.float64, x=None):
    """Dense H(t) = T + V(x, t) [+ x E(t)] [- i W] (N x N), built on the device of ``xp``."""
    x = points(config.grid, xp) if x is None else x
    return generator_dense(config, 1.0, total(config.potential, x, t, xp), xp, dtype)


def apply(config, psi, v, xp=None, scale=1.0):
    """(scale T + diag(v)) psi without forming the matrix (:class:`Operator`); ``psi`` a
    vector or an N x k block (columns).  Stencils: O(N) per column; DVR: O(N log N) by FFT."""
    if xp is None:
        from mgemm.arrays import get_xp
        xp = get_xp(psi)
    return Operator(config, scale, v, xp)(psi)


_STENCIL_PATTERN = {}      # (N, 5-point): the CSR indices, indptr, row and offset of each entry


def stencil_matrix(grid, main, factor, xp=np, momentum=0.0):
    """The sparse (CSR, complex) matrix of a finite-difference stencil: diagonal ``main``
    (N values), off-diagonals ``factor`` x the stencil's bands [+ ``momentum`` x p's];
    scipy.sparse, or cupyx.scipy.sparse on a GPU."""
    import scipy.sparse
    _, d1, d2 = (factor * c for c in kinetic_bands(grid.stencil, grid.dx))
    p1, p2 = (momentum * c for c in momentum_bands(grid.stencil, grid.dx))
    n = grid.n
    key = (n, bool(d2))
    if key not in _STENCIL_PATTERN:    # the CSR pattern once (scipy.sparse.diags: 0.1 ms a call)
        diags, offs = [np.ones(n), np.ones(n - 1), np.ones(n - 1)], [0, 1, -1]
        if d2:
            diags += [np.ones(n - 2), np.ones(n - 2)]
            offs += [2, -2]
        p = scipy.sparse.diags(diags, offs, format="csr")
        rows = np.repeat(np.arange(n), np.diff(p.indptr))
        _STENCIL_PATTERN[key] = (p.indices, p.indptr, rows, p.indices - rows)
    indices, indptr, rows, off = _STENCIL_PATTERN[key]
    # the same entries as diags([main, d1, d1, d2, d2], [0, 1, -1, 2, -2]) in CSR order
    data = np.where(off == 0, np.asarray(main)[rows],
                    np.where(np.abs(off) == 1, d1, d2)).astype(np.complex128)
    if momentum:                          # p_(j, j+-1) = -+i c1, p_(j, j+-2) = -+i c2
        data += np.where(off == 0, 0.0, -1j * np.sign(off) * np.where(np.abs(off) == 1, p1, p2))
    m = scipy.sparse.csr_matrix((data, indices, indptr), shape=(n, n), copy=False)
    if xp is not np:
        import cupyx.scipy.sparse
        m = cupyx.scipy.sparse.csr_matrix(m)
    return m


class Operator:
    """X -> alpha (scale T + a p + diag(v) - shift I) X as one fast application (``a`` the
    velocity gauge's A, p = -i D: the module docstring): for the stencils
    their bands (:meth:`_banded`: BLAS zhbmv for a host vector, else a sparse matrix, one
    pass over X); the circulant embedding by FFT for the DVR; X a vector or a block of
    columns.  The Chebyshev
    recurrence applies 2 (G - c)/r with it (:mod:`tdse.chebyshev`)."""

    def __init__(self, config, scale, v, xp=np, alpha=1.0, shift=0.0, a=0.0):
        g = config.grid
        self.xp, self.n, self.stencil = xp, g.n, g.stencil
        d = alpha * (np.asarray(v, dtype=np.float64) - shift)
        self.mat = self.bands = self._band = None
        self.momentum = alpha * a
        if g.stencil == "dvr":
            self.lam = alpha * scale * dvr_symbol(g.n, g.dx, xp)
            if a:
                self.lam = self.lam + self.momentum * dvr_momentum_symbol(g.n, g.dx, xp)
            self.diag = xp.asarray(d)
        else:               # the bands (_banded): a matrix only where a product needs one
            d0, d1, d2 = (alpha * scale * c for c in kinetic_bands(g.stencil, g.dx))
            if a:           # the upper bands of the Hermitian T + a p (p_(j,j+1) = -i c1)
                c1, c2 = momentum_bands(g.stencil, g.dx)
                d1, d2 = d1 - 1j * self.momentum * c1, d2 - 1j * self.momentum * c2
            self.bands, self.grid, self.factor = (d + d0, d1, d2), g, alpha * scale

    def _banded(self, X):
        """The 3-/5-point operator: on the host a vector by one BLAS zhbmv (its band storage
        made at the first call); a block, or any X on a GPU, by a sparse product (the
        csr_matrix, cupyx's on a GPU, made at the first call).  A csr_matrix built for every
        exponential had cost more than the few products of a vector's exponential: the
        3-point bare step at N = 256 260-264 -> 188-191 us with this and the term counts'
        intervals (benchmarks/results/host_costs_cpu2_20261126T0210.txt)."""
        main, d1, d2 = self.bands
        if X.ndim == 1 and self.xp is np:   # (f2py makes it complex and contiguous)
            if self._band is None:          # upper band storage: row k the diagonal
                from scipy.linalg.blas import zhbmv
                k = 2 if d2 else 1
                band = np.zeros((k + 1, self.n), dtype=np.complex128)
                band[k], band[k - 1, 1:] = main, d1
                if d2:
                    band[0, 2:] = d2
                self._band = (zhbmv, k, band)
            zhbmv, k, band = self._band
            return zhbmv(k, 1.0, band, X)
        if self.mat is None:
            self.mat = stencil_matrix(self.grid, main, self.factor, self.xp, self.momentum)
        return self.mat @ X

    def __call__(self, X):
        if self.bands is not None:
            return self._banded(X)
        xp, n = self.xp, self.n
        lam = self.lam if X.ndim == 1 else self.lam[:, None]
        diag = self.diag if X.ndim == 1 else self.diag[:, None]
        kin = padded_kinetic(X, lam, n, xp)
        kin += diag * X
        return kin


#: the DVR's kinetic energy is applied to a block by one GEMM up to this N (the dense T,
#: N^2 reals, cached; on the CPU its two halves, kinetic_halves), by FFT beyond; on the CPU
#: by GEMM only from DVR_GEMM_MIN_B columns and up to DVR_HOST_GEMM_MAX_N, by FFT
#: (tdse.model.ffts.padded_kinetic) else.  Measured on 2 cores, us a product, halves / FFT
#: in one thread / in two: N = 320, B = 10: 75 / 59 / 180, B = 16: 63 / 79 / 190;
#: N = 500, B = 10: 129 / 85 / 221, B = 32: 247 / 287 / 331; N = 800, B = 16: 290 / 205 /
#: 252; N = 2000, B = 10: 1524 / 387 / 473, B = 64: 6419 / 3409 / 2104
#: (benchmarks/results/dvr_block_kinetic_cpu2_20261202T1540.txt; the FFT in two threads
#: had been what the block's FFT took: 2-4x slower below ~30 columns)
DVR_GEMM_MAX_N = 4096
DVR_GEMM_MIN_B = 16
DVR_HOST_GEMM_MAX_N = 640


class BlockOperator:
    """X -> alpha (scale T X + (V - shift) * X) for an N x B block X whose columns have
    their own potentials V (N x B): the kinetic part is one sparse product (stencils; on a
    GPU one band kernel, :func:`tdse.backends.cupy.stencil.band_kernel`) or one real GEMM on the block viewed as
    N x 2B reals (the DVR, N <= DVR_GEMM_MAX_N: T is real,
    so it acts on the real and imaginary parts alike; by FFT beyond) for the whole block,
    the diagonal elementwise (one fused kernel on a GPU); on the CPU the DVR's GEMM is two
    half-size products (:func:`kinetic_halves`).  What a batch of runs that share
    grid, stencil and time step applies in each Chebyshev term
    (:class:`tdse.numerics.stepper.BatchStepper`).  ``by_fft``: the DVR's kinetic energy by
    FFT at any width (a column's bits then those of the column alone, where a GEMM's move
    with the width: :attr:`tdse.numerics.local_error.LocalError.columns_apart`)."""

    def __init__(self, grid, scale, V, xp=np, alpha=1.0, shift=0.0, a=None, by_fft=False):
        self.xp, self.n = xp, grid.n
        self.diag = alpha * (xp.asarray(V, dtype=np.float64) - shift)
        self.k = alpha * scale
        # the velocity gauge: + a_b p on member b's column (:class:`BlockMomentum`), or None
        self.mom = None if a is None or not np.any(a) else \
            (BlockMomentum(grid, xp), xp.asarray(alpha * np.asarray(a, dtype=np.float64)))
        self.T = self.mat = self.bands = self._diag2 = None
        self.halves = None
        if not by_fft and _dvr_gemm(grid, self.diag, xp):
            self.T = kinetic_dense(grid, xp)
            if xp is np:                 # half the flops (kinetic_halves; not on a GPU yet)
                self.halves = kinetic_halves(grid)
        elif grid.stencil == "dvr":
            self.lam = self.k * dvr_symbol(grid.n, grid.dx, xp)[:, None]
        elif xp is not np:               # the stencil by one kernel (stencil.band_kernel)
            self.bands = kinetic_bands(grid.stencil, grid.dx)
        else:
            self.mat = stencil_matrix(grid, np.full(grid.n, kinetic_bands(grid.stencil, grid.dx)[0]),
                                      1.0, xp)

    def _kinetic(self, X):
        xp = self.xp
        if self.mat is not None:
            return self.mat @ X, self.k
        if self.bands is not None:
            Xc = xp.ascontiguousarray(X)
            out = xp.empty_like(Xc)
            d0, d1, d2 = self.bands
            stencil.band_kernel(xp)(Xc, d0, d1, d2, self.n, Xc.size // self.n, out)
            return out, self.k
        if self.T is not None:
            Xc = xp.ascontiguousarray(X)
            real = Xc.view(np.float64).reshape(self.n, -1)          # N x 2B: re, im interleaved
            if self.halves is None:
                return (self.T @ real).view(np.complex128).reshape(X.shape), self.k
            TX = centro_matmul(*self.halves, real, xp, alpha=self.k)        # k folded in
            return TX.view(np.complex128).reshape(X.shape), 1.0
        lam = self.lam if X.ndim == 2 else self.lam[:, 0]      # a block, or one vector
        return padded_kinetic(X, lam, self.n, xp), 1.0

    def __call__(self, X):
        kin, k = self._kinetic(X)
        if self.xp is not np:
            out = stencil.fused_kernel(self.xp)(kin, self.diag, X, k)
        else:
            out = self._add_diagonal(kin, k, X)
        if self.mom is not None:
            out += self._momentum(X)
        return out

    def _momentum(self, X):
        pm, a = self.mom
        return pm(X) * (a if X.ndim == 2 else a[0])

    def _add_diagonal(self, kin, k, X):
        """kin <- k kin + diag X on the host; a C-ordered block as reals (the real diagonal
        repeated for re and im: no complex temporary)."""
        if k != 1.0:
            kin *= k
        if X.ndim == 2 and self.diag.shape == X.shape and X.flags.c_contiguous \
                and kin.flags.c_contiguous and X.dtype == kin.dtype == np.complex128:
            if self._diag2 is None:       # the diagonal for re and im, made at first use
                self._diag2 = np.repeat(self.diag, 2, axis=1)
            real = kin.view(np.float64)
            real += self._diag2 * X.view(np.float64)
        else:
            kin += self.diag * X
        return kin

    def recur(self, X, P, Y, a):
        """One Chebyshev term: Z = (this operator) X - P, and Y += a Z (in place); on a GPU
        one pass after the kinetic product."""
        kin, k = self._kinetic(X)
        if self.xp is not np:
            if self.mom is not None:          # (k = alpha scale > 0: a Magnus weight's)
                kin = kin + self._momentum(X) / k
            z = self.xp.empty_like(kin)
            stencil.recur_kernel(self.xp)(kin, self.diag, X, P, k, a, z, Y)
            return z
        kin = self._add_diagonal(kin, k, X)
        if self.mom is not None:
            kin += self._momentum(X)
        kin -= P
        Y += a * kin
        return kin


class FoldedBlockOperator:
    """:class:`BlockOperator` for the sinc-DVR on the CPU, in the basis where the
    centrosymmetric T is block diagonal (:func:`kinetic_halves`), so that a Chebyshev series
    (:func:`tdse.numerics.chebyshev.expm_apply`) runs there from one change of basis to the
    next and no term folds or unfolds its block.  With m = N // 2, h = N - m and J the
    reversal, the fold of an N x B block X is F X = [X1 + J X2; x_m; X1 - J X2] (the middle
    row when N is odd) -- F F^T = diag(2 I_m, 1, 2 I_m): invertible, its inverse :meth:`back`.
    In that basis (Cantoni & Butler, Linear Algebra Appl. 13, 275 (1976), as in
    :func:`kinetic_halves`)

        F T F^-1 = diag(P', 2 Q),  P' = P with its first m rows doubled,
        F diag(v) F^-1 = [[e, o], [o, e]] on (S, D), v_m on the middle row,

    with e = (v1 + J v2)/2, o = (v1 - J v2)/2 of the top and bottom halves of each member's
    diagonal v.  A term (:meth:`recur`) is the two half-size GEMMs with -P taken into the
    GEMM (beta = -1, P's buffer overwritten: the series owns it), three element-wise
    products with the diagonals, and one zaxpy: 125 against 140 us a term for 16 members at
    N = 500 (BlockOperator folds and unfolds in every term), the 16-member atom_hhg batch
    3.99 against 4.15 s on 2 CPU cores (``benchmarks/archive/folded_term.py``,
    ``benchmarks/results/folded_term_cpu2_20261126T0758.txt``).  Same operator: the series'
    result agrees with :class:`BlockOperator`'s to rounding (tests)."""

    def __init__(self, grid, scale, V, alpha=1.0, shift=0.0):
        n = self.n = grid.n
        m = self.m = n // 2
        h = self.h = n - m
        d = alpha * (np.asarray(V, dtype=np.float64) - shift)
        if d.ndim == 1:
            d = d[:, None]
        self._k = alpha * scale
        self._KsT, self._KdT = folded_kinetic(grid)
        v1, w2 = d[:m], d[n - m:][::-1]
        B2 = 2 * d.shape[1]                      # each member's re and im columns
        self._E = np.empty((n, B2))
        self._E[:m] = np.repeat(0.5 * (v1 + w2), 2, axis=1)
        self._E[h:] = self._E[:m]
        if h > m:
            self._E[m] = np.repeat(d[m], 2)
        self._O = np.repeat(0.5 * (v1 - w2), 2, axis=1)
        self._tmp = np.empty((n, B2))

    def into(self, X):
        """F X (:func:`centro_fold`): a new C-ordered complex block in the folded basis."""
        return centro_fold(np.asarray(X, dtype=np.complex128))

    def back(self, F):
        """F^-1 of a folded block (:func:`centro_unfold` with scale 1/2)."""
        return centro_unfold(F[:self.h], F[self.h:], 0.5)

    def _diagonal(self, C, Z):
        """Z += the diagonal's action on C (both folded, as N x 2B reals)."""
        m, h, tmp = self.m, self.h, self._tmp
        np.multiply(self._E, C, out=tmp)
        Z += tmp
        np.multiply(self._O, C[h:], out=tmp[:m])
        Z[:m] += tmp[:m]
        np.multiply(self._O, C[:m], out=tmp[:m])
        Z[h:] += tmp[:m]

    def _kinetic(self, C, Z, beta):
        """Z = K C + beta Z by the two half-size GEMMs, into Z's buffer (as N x 2B reals)."""
        from scipy.linalg.blas import dgemm
        h = self.h
        for rows, KT in ((slice(0, h), self._KsT), (slice(h, None), self._KdT)):
            c = Z[rows].T
            z = dgemm(self._k, C[rows].T, KT, beta=beta, c=c, overwrite_c=1)
            if z is not c:                 # the wrapper worked on a copy: put it in place
                Z[rows] = z.T

    def _reals(self, X):
        X = np.ascontiguousarray(X, dtype=np.complex128)
        return X, X.view(np.float64).reshape(self.n, -1)

    def __call__(self, C):
        """The operator on a folded block (a new folded block)."""
        C, Cr = self._reals(C)
        Z = np.empty_like(C)
        Zr = Z.view(np.float64).reshape(self.n, -1)
        self._kinetic(Cr, Zr, 0.0)
        self._diagonal(Cr, Zr)
        return Z

    def recur(self, C, P, Y, a):
        """One Chebyshev term on folded blocks: Z = (this operator) C - P, Y += a Z; Z is
        P's buffer (P is overwritten: the series never reads it again)."""
        from scipy.linalg.blas import zaxpy
        C, Cr = self._reals(C)
        if not (P.flags.c_contiguous and P.dtype == np.complex128):
            P = np.ascontiguousarray(P, dtype=np.complex128)
        Pr = P.view(np.float64).reshape(self.n, -1)
        self._kinetic(Cr, Pr, -1.0)
        self._diagonal(Cr, Pr)
        if Y.flags.c_contiguous and Y.dtype == np.complex128:
            zaxpy(P.ravel(), Y.ravel(), a=a)
        else:
            Y += a * P
        return P


def folded_kinetic(grid):
    """(P'^T, (2 Q)^T) of :class:`FoldedBlockOperator` in Fortran order (what its GEMMs take:
    (K C)^T = C^T K^T for C-ordered blocks), cached per grid."""
    def make():
        P, Q = kinetic_halves(grid)
        Ks = P.copy()
        Ks[:grid.n // 2] *= 2.0
        return np.asfortranarray(Ks.T), np.asfortranarray(2.0 * Q.T)
    return _cached(("folded", grid.n, grid.dx, grid.stencil), make)


def _dvr_gemm(grid, V, xp):
    """Whether a block's sinc-DVR kinetic product is a GEMM (N <= DVR_GEMM_MAX_N; on the CPU
    from DVR_GEMM_MIN_B columns of V and up to DVR_HOST_GEMM_MAX_N), not an FFT; False for
    the stencils."""
    cols = V.shape[1] if V.ndim == 2 else 1
    return grid.stencil == "dvr" and grid.n <= DVR_GEMM_MAX_N and (
        xp is not np or (cols >= DVR_GEMM_MIN_B and grid.n <= DVR_HOST_GEMM_MAX_N))


def block_operator(grid, scale, V, xp=np, alpha=1.0, shift=0.0, a=None):
    """The Chebyshev operator of a batch's exponential: :class:`FoldedBlockOperator` where
    :class:`BlockOperator` would take the DVR's two half-size GEMMs (the CPU; not with the
    velocity gauge's ``a``), otherwise :class:`BlockOperator`."""
    V = xp.asarray(V)
    if xp is np and _dvr_gemm(grid, V, xp) and a is None:
        return FoldedBlockOperator(grid, scale, V, alpha, shift)
    return BlockOperator(grid, scale, V, xp, alpha, shift, a)
