"""The laser field (atomic units),

    E(t) = E0 f(t) sin(omega t + phase) for 0 <= t <= duration, 0 otherwise,

envelopes f: "sin2" sin^2(pi t / duration); "gaussian" exp(-4 ln 2 (t - duration/2)^2 /
fwhm^2); "trapezoid" linear ramps of length ``ramp`` at both ends (``[field]`` keys,
docs/INPUT.md).  ``[field] kind = "expression"``: E(t) a formula instead (whitelisted,
:mod:`tdse.expression`), in the same window 0 <= t <= duration, or A(t) a formula and
E = -dA/dt (differentiated as a tree).

The gauge (``field.gauge``).  Length: V gains + x E(t).  Velocity: H = (p + A(t))^2 / 2 + V
= T + A(t) p + A(t)^2 / 2 + V with p = -i d/dx and the vector potential

    A(t) = -int_0^t E(t') dt'   (A(0) = 0; constant after the pulse),

the two related by psi_velocity = exp(-i A(t) x) psi_length (a review: Bandrauk,
Fillion-Gourdeau & Lorin, "Atoms and molecules in intense laser fields: gauge invariance of
theory and models", J. Phys. B (2013)): |psi|^2, <x>, the dipole acceleration and, once
A = 0, every population agree.  :func:`vector_potential` integrates E by composite
Gauss-Legendre (16 nodes a panel, panels a quarter period or less: exact to rounding for
these smooth pulses; a test checks it against scipy.integrate.quad).
"""
from __future__ import annotations

import functools

import numpy as np

from ..expression import evaluate, parse

__all__ = ["field_value", "dipole_field", "pulse", "formula_of", "vector_potential",
           "velocity_gauge"]


def velocity_gauge(field) -> bool:
    """Whether the run couples the field by A(t) p (``field.gauge = "velocity"``)."""
    return field is not None and field.gauge == "velocity"


def formula_of(field):
    """(E's formula, parameters) of an expression field ([field] kind = "expression"; E =
    -dA/dt when A is given), or (None, None)."""
    if field.A:
        return _minus_derivative(field.A, field.parameters), dict(field.parameters)
    if not field.E:
        return None, None
    return _parsed(field.E, field.parameters), dict(field.parameters)


@functools.lru_cache(maxsize=64)
def _parsed(text, parameters, key="field.E"):
    return parse(text, ("t",) + tuple(k for k, _ in parameters), key)


@functools.lru_cache(maxsize=64)
def _minus_derivative(text, parameters):
    from ..expression import Expr, derivative
    return Expr("neg", (derivative(_parsed(text, parameters, "field.A"), "t"),))


#: the 16-point Gauss-Legendre rule on [-1, 1] of :func:`vector_potential`'s panels
GAUSS_X, GAUSS_W = np.polynomial.legendre.leggauss(16)


def vector_formula(field):
    """The parsed A(t) of an expression field given by ``field.A``, or None."""
    return _parsed(field.A, field.parameters, "field.A") if field.A else None


def panel_edges(duration, omegas, corners=()):
    """:func:`vector_potential`'s panels over [0, duration]: at most a quarter of the
    shortest period (1/256 of the pulse without a carrier), the ``corners`` (a trapezoid's
    kinks, members' ends) on edges."""
    om = np.asarray(omegas, dtype=np.float64)
    om = om[om > 0]
    d = float(duration)
    width = min(d / 256 if not om.size else 0.25 * 2 * np.pi / float(om.max()), d)
    c = np.asarray(corners, dtype=np.float64)
    return np.unique(np.concatenate([np.linspace(0.0, d, int(np.ceil(d / width)) + 1), [0.0, d],
                                     c[(c >= 0) & (c <= d)]]))


def gauss(E, a, b):
    """int_a^b E by 16-point Gauss-Legendre, for arrays a, b of one shape S: ``E(nodes)``
    with nodes (16,) + S returns (16,) + S [+ trailing axes, e.g. members]."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    h = b - a
    nodes = a + 0.5 * h * (GAUSS_X.reshape((16,) + (1,) * a.ndim) + 1.0)
    out = np.tensordot(GAUSS_W, E(nodes), axes=(0, 0))
    return 0.5 * h.reshape(h.shape + (1,) * (out.ndim - h.ndim)) * out


def panel_table(E, edges):
    """A = -int_0 E at the ``edges`` (:func:`panel_edges`), (P + 1,) + E's trailing axes."""
    pieces = gauss(E, edges[:-1], edges[1:])
    return -np.concatenate([np.zeros_like(pieces[:1]), np.cumsum(pieces, axis=0)])


def panel_value(E, edges, cum, t):
    """A(t) from :func:`panel_table`'s ``cum``: the last whole panel's value minus the part
    panel's integral, t clipped to the edges; with one column of ``cum`` a member (B,),
    member b at t[b]."""
    tc = np.clip(t, 0.0, edges[-1])
    i = np.clip(np.searchsorted(edges, tc, side="right") - 1, 0, edges.size - 2)
    base = cum[i] if cum.ndim == 1 else np.take_along_axis(cum, i.reshape(1, -1), 0)[0]
    return base - gauss(E, edges[i], tc)


@functools.lru_cache(maxsize=64)
def _panels(field):
    """(edges, A at the edges) of :func:`vector_potential` for one field."""
    corners = [field.ramp, field.duration - field.ramp] if field.envelope == "trapezoid" else []
    edges = panel_edges(field.duration, [field.omega], corners)
    return edges, panel_table(lambda n: field_value(field, n), edges)


def vector_potential(field, t):
    """A(t) = -int_0^t E (module docstring; a formula's A(t) - A(0) when ``field.A`` is
    given), constant outside [0, duration]; a float for a scalar t, else an array."""
    t = np.asarray(t, dtype=np.float64)
    if field is None:
        return np.zeros_like(t) if t.ndim else 0.0
    tc = np.clip(t, 0.0, field.duration)
    if field.A:
        f, env = _parsed(field.A, field.parameters, "field.A"), dict(field.parameters)
        out = evaluate(f, {**env, "t": tc}) - float(np.asarray(evaluate(f, {**env, "t": np.float64(0.0)})))
    else:
        edges, cum = _panels(field)
        out = panel_value(lambda n: field_value(field, n), edges, cum, tc)
    out = np.asarray(out, dtype=np.float64) + 0.0 * tc
    return float(out) if out.ndim == 0 else out


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


def dipole_field(field, t):
    """The E(t) of V's x E(t) term: :func:`field_value` in the length gauge, 0 in the
    velocity gauge (where the field enters H as A(t) p instead)."""
    if velocity_gauge(field):
        t = np.asarray(t, dtype=np.float64)
        return np.zeros_like(t) if t.ndim else 0.0
    return field_value(field, t)
