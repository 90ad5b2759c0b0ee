"""Soft-core Coulomb potential of the thesis summary, eqs. (10)-(11), and a laser field in
the length gauge; atomic units.

    V(x, t) = - sum_c Z_c / sqrt((x - X_c(t))^2 + a)  [+ x E(t) with a [field]],
    E(t)    = E0 f(t) sin(omega t + phase) for 0 <= t <= duration, 0 otherwise,
    X_c(t)  = x0_c + amplitude_c * s_c(t) * sin(frequency_c * t + phase_c),
    s_c(t)  = sin^2(pi t / (2 ramp_c)) for t < ramp_c, else 1   (s = 1 when ramp_c = 0).

Note that ``a`` enters as written in the source, sqrt(r^2 + a): most papers write
sqrt(r^2 + a^2), so their ``a`` is the square root of ours.  The source's moving case
displaces both centres by the same alpha sin(beta t) (eq. 11) from t = 0 on, so at t = 0
the centres already move with velocity alpha*beta: an abrupt start, which excites the
molecule by itself (README).  ``ramp`` switches the motion on smoothly instead (the
envelope s rises from 0 with zero slope).  Per-centre amplitudes and phases also allow,
e.g., a symmetric stretch.  Envelopes f: "sin2" sin^2(pi t / duration); "gaussian"
exp(-4 ln 2 (t - duration/2)^2 / fwhm^2); "trapezoid" linear ramps of length ``ramp`` at
both ends.  :func:`soft_core` is the molecule alone, :func:`total` adds the field.
"""
from __future__ import annotations

import numpy as np

from .field import field_value


def envelope(ramp, t):
    """s(t) = sin^2(pi t / (2 ramp)) for 0 <= t < ramp, 1 afterwards (1 for ramp = 0)."""
    t = np.asarray(t, dtype=np.float64)
    if ramp <= 0:
        return np.ones_like(t)
    return np.where(t < ramp, np.sin(0.5 * np.pi * np.clip(t, 0.0, ramp) / ramp) ** 2, 1.0)


def centre_positions(potential, t):
    """X_c(t) for every centre, shape (n_centres,) (or (n_centres, len(t)))."""
    t = np.asarray(t, dtype=np.float64)
    return np.array([c.x0 + c.amplitude * envelope(c.ramp, t) * np.sin(c.frequency * t + c.phase)
                     for c in potential.centres])


def total(potential, x, t, xp=np):
    """V(x, t) including the field's x E(t) (the molecule alone: :func:`soft_core`)."""
    v = soft_core(potential, x, t, xp)
    if potential.field is not None:
        e = field_value(potential.field, t)
        if e:
            v = v + e * x
    return v


def gradient(potential, x, t):
    """dV/dx of :func:`total` (for the dipole acceleration <-dV/dx>)."""
    g = np.full_like(np.asarray(x, dtype=np.float64), field_value(potential.field, t))
    for c, X in zip(potential.centres, centre_positions(potential, t)):
        r = x - float(X)
        g += c.Z * r / (r * r + potential.a) ** 1.5
    return g


def soft_core(potential, x, t, xp=np):
    """V(x, t), eq. (11) summed over centres; ``x`` may be a CuPy array."""
    v = xp.zeros_like(x)
    for c, X in zip(potential.centres, centre_positions(potential, t)):
        v -= c.Z / xp.sqrt((x - float(X)) ** 2 + potential.a)
    return v


def bounds_over(potential, x, times, weights=(1.0,), offsets=(0.0,), chunk=256):
    """(min, max) over the grid and every given time t of sum_j w_j V(x, t + offsets_j)
    (vectorised in chunks; the field included); the default is V itself."""
    lo, hi = np.inf, -np.inf
    times = np.atleast_1d(np.asarray(times, dtype=np.float64))
    for i in range(0, times.size, chunk):
        ts = times[i:i + chunk]
        v = np.zeros((ts.size, x.size))
        for w, off in zip(weights, offsets):
            X = centre_positions(potential, ts + off)          # (centres, times)
            for c, Xc in zip(potential.centres, X):
                v -= w * c.Z / np.sqrt((x[None, :] - Xc[:, None]) ** 2 + potential.a)
            if potential.field is not None:
                v += w * field_value(potential.field, ts + off)[:, None] * x[None, :]
        lo, hi = min(lo, float(v.min())), max(hi, float(v.max()))
    return lo, hi
