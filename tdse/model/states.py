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
    5-point: LAPACK's banded solver (scipy.linalg.eig_banded, select='i'); DVR: the dense
    symmetric solver for a subset (scipy.linalg.eigh, subset_by_index).
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
        d0, d1, d2 = kinetic_bands(g.stencil, g.dx)
        band = np.zeros((3, g.n))
        band[0] = d0 + v
        band[1, :-1] = d1
        band[2, :-2] = d2
        E, vecs = scipy.linalg.eig_banded(band, lower=True, select="i",
                                          select_range=(0, count - 1), check_finite=False)
    phi = vecs.T / np.sqrt(g.dx)
    for k in range(count):
        big = np.flatnonzero(np.abs(phi[k]) > 1e-3 * np.abs(phi[k]).max())[0]
        if phi[k, big] < 0:
            phi[k] = -phi[k]
    return E, np.ascontiguousarray(phi)


def initial_state(config, x, phi0):
    """psi(0): an eigenstate of H(0) (index ``state``) or a normalised Gaussian packet."""
    ini = config.initial
    if ini.state == "gaussian":
        psi = np.exp(-((x - ini.x0) ** 2) / (4 * ini.sigma ** 2) + 1j * ini.k0 * x)
        return psi / math.sqrt(norm(psi, config.grid.dx))
    return phi0[ini.state].astype(DTYPE)
