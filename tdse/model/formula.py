"""A potential given as a formula: ``[potential] kind = "expression"`` (atomic units).

    V(x, t) = <potential.V>(x, t; parameters)  [+ x E(t) with a [field]],

the formula parsed by the whitelist of :mod:`tdse.expression` (never evaluated as code),
its parameters ``potential.parameters`` (each a scan key, ``potential.parameters.NAME``).
dV/dx (the dipole acceleration) is the formula's symbolic derivative.  The spectral bounds
need V's extremes on the grid at each time: they are V's own values there (every grid point,
as :func:`tdse.model.potential.bounds_over` takes them), so exact, not sampled.  The GPU
kernels are generated from a centre potential's ``term`` and ``force``; a formula has none
yet, so expression potentials run on the CPU (a run on a GPU is refused before any work,
:func:`tdse.numerics.precheck`).  This file is the kind's whole implementation: the
registry entry :data:`tdse.model.potential.POTENTIALS` ["expression"] is set below.
"""
from __future__ import annotations

import numpy as np

from ..expression import derivative, evaluate, parse
from .field import field_value
from .potential import POTENTIALS, BatchPotential


class Formula:
    """:class:`tdse.model.potential.Potential` for a formula V(x, t); ``config`` a
    :class:`tdse.config.Potential` of kind "expression"."""

    term = force = None          # no centre form: no generated GPU kernel (module docstring)

    def __init__(self, config):
        self.config = config
        self.parameters = dict(config.parameters)
        self.V = parse(config.V, ("x", "t") + tuple(self.parameters), "potential.V")
        self.dV = derivative(self.V, "x")
        self.moving = "t" in self.V.names()

    def molecule(self, x, t, xp=np):
        """V(x, t) without the field, shaped as ``x`` (x and t broadcast)."""
        v = evaluate(self.V, {**self.parameters, "x": x, "t": t}, xp)
        return xp.broadcast_to(xp.asarray(v, dtype=np.float64), np.broadcast_shapes(
            np.shape(x), np.shape(v))).copy()

    def values(self, x, t, xp=np):
        v = self.molecule(x, t, xp)
        e = field_value(self.config.field, t)
        if e:
            v = v + e * x
        return v

    def gradient(self, x, t):
        g = evaluate(self.dV, {**self.parameters, "x": x, "t": t})
        return np.broadcast_to(np.asarray(g, dtype=np.float64), np.shape(x)) + field_value(
            self.config.field, t)

    def values_many(self, x, times, out=None):
        times = np.atleast_1d(np.asarray(times, dtype=np.float64))
        x = np.asarray(x, dtype=np.float64)
        v = self.molecule(x[None, :], times[:, None])
        if self.config.field is not None:
            v += field_value(self.config.field, times)[:, None] * x[None, :]
        if out is not None:
            out[...] = v
            return out
        return v

    def bounds(self, x, times, weights=(1.0,), offsets=(0.0,)):
        from .potential import bounds_over
        return bounds_over(self.config, x, times, weights, offsets)

    def centres(self, t):
        """No centres: shape (0,) (or (0, len(t)))."""
        return np.zeros((0,) + np.shape(t))


class FormulaBatch(BatchPotential):
    """B members of one formula, each with its own parameters (and field): the molecule's V
    and dV/dx as (N, B) on the host, every parameter a (1, B) row."""

    def __init__(self, potentials, x, xp=np):
        if xp is not np:
            raise ValueError("an expression potential runs on the CPU (no GPU kernel yet)")
        if len({p.V for p in potentials}) > 1:
            raise ValueError("a batch's members must share one potential.V formula")
        super().__init__(potentials, x, xp)
        self.formula = Formula(potentials[0])
        self.rows = {k: np.array([[dict(p.parameters)[k] for p in potentials]])
                     for k in self.formula.parameters}
        self.moving = self.formula.moving

    def _molecule(self, t, gradient=True):
        t = t if np.ndim(t) == 0 else np.asarray(t, dtype=np.float64)[None, :]
        env = {**self.rows, "x": self.x, "t": t}
        shape = (self.x.shape[0], self.B)
        V = np.broadcast_to(evaluate(self.formula.V, env), shape).copy()
        G = np.broadcast_to(evaluate(self.formula.dV, env), shape).copy() if gradient else None
        return V, G

    def gradient(self, t):
        return self.host_fields(t)[1]

    def bounds_many(self, times, weights):
        """(lo, hi) of sum_j w_j V(x, t_j) over the grid per step (``times`` (steps, nt)):
        the values themselves, every member and grid point."""
        times = np.asarray(times, dtype=np.float64)
        lo, hi = np.empty(len(times)), np.empty(len(times))
        for s, row in enumerate(times):
            v = sum(w * self.host_fields(float(t), gradient=False)[0]
                    for t, w in zip(row, weights) if w)
            lo[s], hi[s] = np.min(v), np.max(v)
        return lo, hi


Formula.batch = FormulaBatch
POTENTIALS["expression"] = Formula
