"""The laser field in the length gauge (atomic units): V gains + x E(t) with

    E(t) = E0 f(t) sin(omega t + phase) for 0 <= t <= duration, 0 otherwise,

envelopes f: "sin2" sin^2(pi t / duration); "gaussian" exp(-4 ln 2 (t - duration/2)^2 /
fwhm^2); "trapezoid" linear ramps of length ``ramp`` at both ends (``[field]`` keys,
docs/INPUT.md).  ``[field] kind = "expression"``: E(t) a formula instead (whitelisted,
:mod:`tdse.expression`), in the same window 0 <= t <= duration.
"""
from __future__ import annotations

import functools

import numpy as np

from ..expression import evaluate, parse

__all__ = ["field_value", "pulse", "formula_of"]


def formula_of(field):
    """(formula, parameters) of an expression field ([field] kind = "expression"), or
    (None, None)."""
    if not field.E:
        return None, None
    return _parsed(field.E, field.parameters), dict(field.parameters)


@functools.lru_cache(maxsize=64)
def _parsed(text, parameters):
    return parse(text, ("t",) + tuple(k for k, _ in parameters), "field.E")


def pulse(E0, omega, phase, duration, fwhm, ramp, envelope, t, formula=None, params=None):
    """E(t) = E0 f(t) sin(omega t + phase) for 0 <= t <= duration, else 0 (module docstring);
    the parameters may be arrays (one value per member of a batch), broadcast against t.
    ``envelope`` "expression": E(t) = ``formula`` (an :class:`tdse.expression.Expr` in t and
    ``params``, name -> value or array) inside the same window."""
    d = duration
    inside = (t >= 0) & (t <= d)
    if envelope == "expression":
        e = evaluate(formula, {**params, "t": t})
        return np.where(inside, e, 0.0)
    if envelope == "sin2":
        f = np.sin(np.pi * t / d) ** 2
    elif envelope == "gaussian":
        f = np.exp(-4.0 * np.log(2.0) * (t - 0.5 * d) ** 2 / fwhm ** 2)
    else:  # trapezoid
        f = np.clip(np.minimum(t, d - t) / ramp, 0.0, 1.0)
    return np.where(inside, E0 * f * np.sin(omega * t + phase), 0.0)


def field_value(field, t):
    """E(t) (a float for a scalar t, an array for an array of times); 0 without a field."""
    t = np.asarray(t, dtype=np.float64)
    if field is None:
        return np.zeros_like(t) if t.ndim else 0.0
    e = pulse(field.E0, field.omega, field.phase, field.duration, field.fwhm, field.ramp,
              field.envelope, t, *formula_of(field))
    return float(e) if e.ndim == 0 else e
