"""The velocity gauge's momentum p = -i D on each grid (atomic units), D the grid's own first
derivative (:mod:`tdse.model.hamiltonian`'s docstring; :mod:`tdse.model.field` for the gauge):

    3-point  D psi_j = (psi_{j+1} - psi_{j-1}) / (2 dx)                              O(dx^2)
    5-point  D psi_j = (-psi_{j+2} + 8 psi_{j+1} - 8 psi_{j-1} + psi_{j-2}) / (12 dx)  O(dx^4)
    DVR      D_ij = (-1)^(i-j) / ((i - j) dx), i != j; 0 on the diagonal (the sinc basis'
             derivative at the points: Colbert & Miller, J. Chem. Phys. 96, 1982 (1992))

D is real and antisymmetric, so p is Hermitian and Toeplitz, with the symbols sin(k)/dx,
(8 sin k - sin 2k)/(6 dx) and k/dx (|k| <= pi): |p| <= P_max = 1/dx, 1.3722/dx, pi/dx."""
from __future__ import annotations

import math

import numpy as np

__all__ = ["momentum_bands", "momentum_max", "momentum_column", "momentum_column_for",
           "momentum_offsum", "BlockMomentum"]


def momentum_bands(stencil, dx: float) -> tuple[float, float]:
    """(c1, c2): the stencil's first derivative D psi_j = c1 (psi_{j+1} - psi_{j-1}) + c2
    (psi_{j+2} - psi_{j-2}) (module docstring)."""
    if stencil == 3:
        return (0.5 / dx, 0.0)
    if stencil == 5:
        return (8.0 / 12.0 / dx, -1.0 / 12.0 / dx)
    raise ValueError(f"momentum_bands needs stencil 3 or 5, got stencil={stencil!r}")


#: max over k of (8 sin k - sin 2k) / 6 = sin k (8 - 2 cos k) / 6 at cos k = 1 - sqrt(6)/2
#: (the 5-point p's symbol; its derivative 8 cos k - 2 cos 2k vanishes there)
_C5 = 1.0 - math.sqrt(6.0) / 2.0
_P5 = math.sqrt(1.0 - _C5 * _C5) * (8.0 - 2.0 * _C5) / 6.0


def momentum_max(stencil, dx: float) -> float:
    """P_max: |p| <= P_max, the largest |symbol| of p = -i D (module docstring)."""
    return {3: 1.0, 5: _P5, "dvr": math.pi}[stencil] / dx


def momentum_column(grid) -> np.ndarray:
    """First column of the Hermitian Toeplitz p = -i D (its first row the conjugate)."""
    return momentum_column_for(grid.stencil, grid.n, grid.dx)


def momentum_column_for(stencil, n, dx):
    """:func:`momentum_column` of a grid of ``n`` points ``dx`` apart."""
    c = np.zeros(n, dtype=np.complex128)
    if stencil == "dvr":
        k = np.arange(1, n)
        c[1:] = -1j * np.where(k % 2, -1.0, 1.0) / (k * dx)
    else:
        c1, c2 = momentum_bands(stencil, dx)
        c[1:3] = (1j * c1, 1j * c2)[:min(2, n - 1)]
    return c


def momentum_offsum(stencil, dx: float, n: int) -> float:
    """A bound on any column's sum of |p_ij| (1-norm): 2|c1| + 2|c2|, the DVR's 2 sum_k 1/(k dx)."""
    if stencil == "dvr":
        return 2.0 * float(np.sum(1.0 / np.arange(1, max(n, 2)))) / dx
    c1, c2 = momentum_bands(stencil, dx)
    return 2 * abs(c1) + 2 * abs(c2)


#: the DVR's p on a block by a real GEMM (D = i p real, on the block's N x 2B reals) up to
#: this N, by FFT beyond (as the kinetic energy's DVR_GEMM_MAX_N)
GEMM_MAX_N = 4096


class BlockMomentum:
    """X -> p X for a vector or an N x B block on the device of ``xp``: the stencils by a
    sparse product (scipy.sparse / cupyx), the DVR by one real GEMM with D = i p (N <=
    GEMM_MAX_N) or by the circulant embedding's FFT -- the velocity gauge's A p in a batch's
    Chebyshev terms (:class:`tdse.model.hamiltonian.BlockOperator`) and in <H> of a block of
    states (:class:`tdse.model.observables.BlockMeasure`)."""

    def __init__(self, grid, xp=np):
        import scipy.linalg
        self.xp, self.n = xp, grid.n
        self.mat = self.D = self.lam = None
        c = momentum_column(grid)
        if grid.stencil != "dvr":
            import scipy.sparse
            c1, c2 = momentum_bands(grid.stencil, grid.dx)
            m = scipy.sparse.diags([-1j * c1, 1j * c1, -1j * c2, 1j * c2], [1, -1, 2, -2],
                                   shape=(self.n, self.n), format="csr", dtype=np.complex128)
            if xp is not np:
                import cupyx.scipy.sparse
                m = cupyx.scipy.sparse.csr_matrix(m)
            self.mat = m
        elif self.n <= GEMM_MAX_N:
            self.D = xp.asarray(np.ascontiguousarray((1j * scipy.linalg.toeplitz(c, c.conj())).real))
        else:
            circ = np.concatenate([c, [0.0], c[:0:-1].conj()])
            self.lam = xp.asarray(np.fft.fft(circ).real)

    def __call__(self, X):
        xp, n = self.xp, self.n
        if self.mat is not None:
            return self.mat @ X
        if self.D is not None:                    # p X = -i D X, D real: on re and im alike
            Xc = xp.ascontiguousarray(X, dtype=np.complex128)
            DX = (self.D @ Xc.view(np.float64).reshape(n, -1)).view(np.complex128).reshape(X.shape)
            return -1j * DX
        pad = xp.zeros((2 * n,) + X.shape[1:], dtype=np.complex128)
        pad[:n] = X
        lam = self.lam if X.ndim == 1 else self.lam[:, None]
        return xp.fft.ifft(lam * xp.fft.fft(pad, axis=0), axis=0)[:n]
