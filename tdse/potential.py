"""Soft-core Coulomb potential of the thesis summary, eqs. (10)-(11), atomic units.

    V(x, t) = - sum_c Z_c / sqrt((x - X_c(t))^2 + a),
    X_c(t)  = x0_c + amplitude_c * sin(frequency_c * t + phase_c).

Note that ``a`` enters as written in the source, sqrt(r^2 + a): most papers write
sqrt(r^2 + a^2), so their ``a`` is the square root of ours.  The source's moving case
displaces both centres by the same alpha sin(beta t) (eq. 11); per-centre amplitudes and
phases also allow, e.g., a symmetric stretch.
"""
from __future__ import annotations

import numpy as np


def centre_positions(potential, t):
    """X_c(t) for every centre, shape (n_centres,) (or (n_centres, len(t)))."""
    t = np.asarray(t, dtype=np.float64)
    return np.array([c.x0 + c.amplitude * np.sin(c.frequency * t + c.phase)
                     for c in potential.centres])


def soft_core(potential, x, t, xp=np):
    """V(x, t), eq. (11) summed over centres; ``x`` may be a CuPy array."""
    v = xp.zeros_like(x)
    for c, X in zip(potential.centres, centre_positions(potential, t)):
        v -= c.Z / xp.sqrt((x - float(X)) ** 2 + potential.a)
    return v


def bounds_over(potential, x, times, chunk=256):
    """(min, max) of V over the grid and all given times (vectorised in chunks)."""
    lo, hi = np.inf, -np.inf
    times = np.atleast_1d(np.asarray(times, dtype=np.float64))
    for i in range(0, times.size, chunk):
        ts = times[i:i + chunk]
        v = np.zeros((ts.size, x.size))
        for c in potential.centres:
            X = c.x0 + c.amplitude * np.sin(c.frequency * ts + c.phase)
            v -= c.Z / np.sqrt((x[None, :] - X[:, None]) ** 2 + potential.a)
        lo, hi = min(lo, float(v.min())), max(hi, float(v.max()))
    return lo, hi
