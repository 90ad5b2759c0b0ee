"""Observables of a snapshot (atomic units; psi normalised as sum |psi|^2 dx = 1)."""
from __future__ import annotations

import numpy as np

from .hamiltonian import apply


def norm(psi, dx):
    return float(np.sum(np.abs(psi) ** 2) * dx)


def energy(config, psi, v):
    """<psi|H|psi> / <psi|psi> for the banded H with potential values v."""
    hpsi = apply(config, psi, v)
    return float(np.real(np.vdot(psi, hpsi)) / np.real(np.vdot(psi, psi)))


def populations(phi, psi, dx):
    """|<phi_n|psi>|^2 for each row phi_n of phi (real eigenvectors)."""
    return np.abs(phi @ psi * dx) ** 2


def node_positions(x, psi, eps=1e-2):
    """Zeros of psi, after removing the global phase.

    psi is rotated so it is real where |psi| is largest; the sign changes of its real part
    are counted over the points with |psi| > eps * max|psi| (consecutive kept points), and
    each is placed by linear interpolation.  The n-th eigenstate of a 1D H has n nodes.
    """
    psi = np.asarray(psi)
    a = np.abs(psi)
    j = int(np.argmax(a))
    if a[j] == 0:
        return np.empty(0)
    r = (psi * np.exp(-1j * np.angle(psi[j]))).real
    keep = a > eps * a[j]
    xr, rr = np.asarray(x)[keep], r[keep]
    i = np.flatnonzero(rr[:-1] * rr[1:] < 0)
    return xr[i] - rr[i] * (xr[i + 1] - xr[i]) / (rr[i + 1] - rr[i])


def node_count(x, psi, eps=1e-2):
    return int(node_positions(x, psi, eps).size)
