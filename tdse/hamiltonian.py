"""H = -1/2 d^2/dx^2 + V(x, t) by finite differences on the uniform grid (atomic units).

Stencils for -1/2 psi'':
  3-point (the source's): (-psi_{j-1} + 2 psi_j - psi_{j+1}) / (2 dx^2), error O(dx^2);
  5-point: (psi_{j-2} - 16 psi_{j-1} + 30 psi_j - 16 psi_{j+1} + psi_{j+2}) / (24 dx^2), O(dx^4).
H is real symmetric and banded; psi = 0 outside the box (Dirichlet).
"""
from __future__ import annotations

import numpy as np
import scipy.linalg

from .grid import points
from .potential import soft_core


def kinetic_bands(stencil: int, dx: float) -> tuple[float, ...]:
    """(diagonal, first off-diagonal, second off-diagonal) of the kinetic matrix."""
    h2 = dx * dx
    if stencil == 3:
        return (1.0 / h2, -0.5 / h2, 0.0)
    if stencil == 5:
        return (30.0 / 24.0 / h2, -16.0 / 24.0 / h2, 1.0 / 24.0 / h2)
    raise ValueError(f"stencil must be 3 or 5, got stencil={stencil!r}")


def spectrum_bounds(stencil, dx, vmin, vmax):
    """Gershgorin interval [lo, hi] containing the spectrum of H for vmin <= V <= vmax.

    Each row: centre d0 + V_j, radius 2|d1| + 2|d2|; so ||H|| ~ 2/dx^2 + max|V| for the
    3-point stencil and 8/(3 dx^2) + max|V| for the 5-point one.
    """
    d0, d1, d2 = kinetic_bands(stencil, dx)
    r = 2 * abs(d1) + 2 * abs(d2)
    return d0 + vmin - r, d0 + vmax + r


def dense(config, t, xp=np, dtype=np.float64, x=None):
    """Dense H(t) (N x N), built on the device of ``xp``."""
    g = config.grid
    x = points(g, xp) if x is None else x
    d0, d1, d2 = kinetic_bands(g.stencil, g.dx)
    n = g.n
    H = xp.zeros((n, n), dtype=dtype)
    i = xp.arange(n)
    H[i, i] = d0 + soft_core(config.potential, x, t, xp)
    H[i[:-1], i[:-1] + 1] = d1
    H[i[:-1] + 1, i[:-1]] = d1
    if d2:
        H[i[:-2], i[:-2] + 2] = d2
        H[i[:-2] + 2, i[:-2]] = d2
    return H


def apply(config, psi, v, xp=np):
    """H psi for the banded H with potential values ``v`` (O(N))."""
    d0, d1, d2 = kinetic_bands(config.grid.stencil, config.grid.dx)
    out = (d0 + v) * psi
    out[1:] += d1 * psi[:-1]
    out[:-1] += d1 * psi[1:]
    if d2:
        out[2:] += d2 * psi[:-2]
        out[:-2] += d2 * psi[2:]
    return out


def eigenstates(config, t, count):
    """Lowest ``count`` eigenpairs of H(t) by a banded symmetric eigensolver.

    Returns (E, phi) with phi of shape (count, N), real, normalised so that
    sum |phi|^2 dx = 1, sign fixed so the first sizeable component is positive.
    No dense eigh: LAPACK's banded solver (scipy.linalg.eig_banded, select='i').
    """
    g = config.grid
    d0, d1, d2 = kinetic_bands(g.stencil, g.dx)
    v = soft_core(config.potential, points(g), t)
    bw = 2 if d2 else 1
    band = np.zeros((bw + 1, g.n))
    band[0] = d0 + v
    band[1, :-1] = d1
    if d2:
        band[2, :-2] = d2
    count = min(count, g.n)
    E, vecs = scipy.linalg.eig_banded(band, lower=True, select="i",
                                      select_range=(0, count - 1), check_finite=False)
    phi = vecs.T / np.sqrt(g.dx)
    for k in range(count):
        big = np.flatnonzero(np.abs(phi[k]) > 1e-3 * np.abs(phi[k]).max())[0]
        if phi[k, big] < 0:
            phi[k] = -phi[k]
    return E, phi
