"""A potential given as a formula: ``[potential] kind = "expression"`` (atomic units).

    V(x, t) = <potential.V>(x, t; parameters)  [+ x E(t) with a [field]],

the formula parsed by the whitelist of :mod:`tdse.expression` (never evaluated as code),
its parameters ``potential.parameters`` (each a scan key, ``potential.parameters.NAME``).
dV/dx (the dipole acceleration) is the formula's symbolic derivative.  The spectral bounds
need V's extremes on the grid at each time: they are V's own values there (every grid point,
as :func:`tdse.model.potential.bounds_over` takes them), so exact, not sampled.  On a GPU the
kernels are generated from the same formula and its derivative
(:mod:`tdse.backends.cupy.potential`, ``device`` below).  This file is the kind's whole
implementation: the registry entries :data:`tdse.model.potential.POTENTIALS` ["expression"]
and those of the named potentials (:mod:`tdse.potentials`: a formula and its parameters'
defaults, one file each) are set below.
"""
from __future__ import annotations

import contextlib

import numpy as np
from mgemm.arrays import to_host

from ..expression import derivative, evaluate, parse
from ..potentials import KINDS as NAMED
from .field import dipole_field, field_value
from .potential import POTENTIALS, BatchPotential


def _value(e, env, xp=np):
    """:func:`evaluate`, NaN where a part made of Python numbers alone divides by zero (1/(t -
    t0) at t0: ZeroDivisionError, where NumPy's arrays give inf): the callers' checks then say
    where V is not finite, one line (:func:`tdse.model.states.finite`)."""
    try:
        return evaluate(e, env, xp)
    except ZeroDivisionError:
        return np.nan


class Formula:
    """:class:`tdse.model.potential.Potential` for a formula V(x, t); ``config`` a
    :class:`tdse.config.Potential` of kind "expression"."""

    def __init__(self, config):
        self.config = config
        self.parameters = dict(config.parameters)
        self.V = parse(config.V, ("x", "t") + tuple(self.parameters), "potential.V")
        self.dV = derivative(self.V, "x")
        self.moving = "t" in self.V.names()
        #: what the device kernels are generated from (tdse.backends.cupy.potential)
        self.device = ("formula", self.V, self.dV, tuple(self.parameters))

    def molecule(self, x, t, xp=np):
        """V(x, t) without the field, shaped as x and t broadcast (a formula without x or t
        too)."""
        v = _value(self.V, {**self.parameters, "x": x, "t": t}, xp)
        return xp.broadcast_to(xp.asarray(v, dtype=np.float64), np.broadcast_shapes(
            np.shape(x), np.shape(t), np.shape(v))).copy()

    def values(self, x, t, xp=np):
        v = self.molecule(x, t, xp)
        e = dipole_field(self.config.field, t)
        if e:
            v = v + e * x
        return v

    def gradient(self, x, t):
        g = _value(self.dV, {**self.parameters, "x": x, "t": t})
        return np.broadcast_to(np.asarray(g, dtype=np.float64), np.shape(x)) + field_value(
            self.config.field, t)

    def molecule_many(self, x, times):
        """The molecule's V at many times, (len(times), N) on the host."""
        return self.molecule(x[None, :], times[:, None])

    def values_many(self, x, times, out=None):
        times = np.atleast_1d(np.asarray(times, dtype=np.float64))
        x = np.asarray(x, dtype=np.float64)
        v = self.molecule_many(x, times)
        if self.config.field is not None:
            v += dipole_field(self.config.field, times)[:, None] * x[None, :]
        if out is not None:
            out[...] = v
            return out
        return v

    def bounds(self, x, times, weights=(1.0,), offsets=(0.0,)):
        from .potential import bounds_over
        return bounds_over(self.config, x, times, [weights], offsets)[0]

    def centres(self, t):
        """No centres: shape (0,) (or (0, len(t)))."""
        return np.zeros((0,) + np.shape(t))


class FormulaBatch(BatchPotential):
    """B members of one formula, each with its own parameters (and field): V and dV/dx as
    (N, B) on the host (every parameter a (1, B) row), or on a GPU by the kernels generated
    from :attr:`Formula.device` (the parameters in ``constants``, each step's t where the
    centres' positions go)."""

    def __init__(self, potentials, x, xp=np):
        if len({p.V for p in potentials}) > 1:
            raise ValueError("a batch's members must share one potential.V formula")
        super().__init__(potentials, x, xp)
        self.formula = Formula(potentials[0])
        self.device = self.formula.device
        self.rows = {k: np.array([[dict(p.parameters)[k] for p in potentials]])
                     for k in self.formula.parameters}
        self.moving = self.formula.moving
        self.x_host = np.asarray(x, dtype=np.float64)[:, None]

    @property
    def slots(self) -> int:
        return 1                 # t

    def own(self, times):
        E, _ = super().own(times)
        return E, np.asarray(times, dtype=np.float64)[:, None]

    def blocks_many(self, times):
        """:meth:`BatchPotential.blocks_many` with t where the centres go: (steps, nt B 2)."""
        times = np.asarray(times, dtype=np.float64)
        S, nt = times.shape
        out = np.empty((S, nt, self.B, 2))
        out[..., 0] = self.dipole(times[..., None])
        out[..., 1] = times[..., None]
        return out.reshape(S, -1)

    def constants(self):
        """The parameters' values k-major (Q[k B + b], :mod:`tdse.backends.cupy.potential`)."""
        if getattr(self, "_Q", None) is None:
            rows = [self.rows[k].ravel() for k in self.device[3]] or [np.zeros(1)]
            self._Q = self.xp.asarray(np.concatenate(rows))
        return self._Q

    def _values(self, expr, t, x):
        env = {**self.rows, "x": x, "t": t}
        return np.broadcast_to(_value(expr, env), np.broadcast_shapes(x.shape, (1, self.B)))

    def _molecule(self, t, gradient=True, order="C"):
        t = t if np.ndim(t) == 0 else np.asarray(t, dtype=np.float64)[None, :]
        V = self._values(self.formula.V, t, self.x_host).copy(order=order)
        G = self._values(self.formula.dV, t, self.x_host).copy(order=order) if gradient else None
        return V, G

    def _ranges(self, ts):
        """(min, max) of the molecule over the grid and the members at each time of ``ts``
        (steps,): every value, on the device of the batch (a GPU run's planner asks ahead
        for 64 steps at once: N x B x 64 values, ~10 ms a chunk on the host at N = 8192,
        which held the graph step back; on the GPU a few launches on a stream of its own)."""
        xp = self.xp
        if getattr(self, "_stream", None) is None:     # the rows where the grid lives, once
            self._rows_xp = {k: xp.asarray(v[..., None]) for k, v in self.rows.items()}
            self._stream = contextlib.nullcontext() if xp is np else xp.cuda.Stream(non_blocking=True)
        with self._stream:
            env = {**self._rows_xp, "x": self.x[:, :, None], "t": xp.asarray(ts)[None, None, :]}
            V = xp.broadcast_to(evaluate(self.formula.V, env, xp), (self.x.shape[0], self.B, len(ts)))
            out = to_host(xp.stack([V.min(axis=(0, 1)), V.max(axis=(0, 1))]))
        return out[0], out[1]

    def bounds_many(self, times, weights):
        """(lo, hi) containing sum_j w_j V(x, t_j) for every member and grid point, per step
        (``times`` (steps, nt)): per term, the molecule's values on the grid (every point,
        every member; once when the formula does not read t) and x E(t) between its values
        at the box's ends -- rigorous, loose by at most the field's terms."""
        times = np.asarray(times, dtype=np.float64)
        lo = hi = 0.0
        for i, w in enumerate(weights):
            if not w:
                continue
            if self.moving:
                vlo, vhi = self._ranges(times[:, i])
            else:
                if getattr(self, "_range", None) is None:
                    V = self._molecule(0.0, gradient=False)[0]
                    self._range = (float(V.min()), float(V.max()))
                vlo, vhi = self._range
            e = self.dipole(times[:, i:i + 1])                                # (steps, B)
            flo = np.minimum(e * self.ends[0], e * self.ends[1]).min(axis=1)
            fhi = np.maximum(e * self.ends[0], e * self.ends[1]).max(axis=1)
            tlo, thi = vlo + flo, vhi + fhi
            lo_b, hi_b = (w * tlo, w * thi) if w > 0 else (w * thi, w * tlo)
            lo, hi = lo + lo_b, hi + hi_b
        return lo, hi


Formula.batch = FormulaBatch
POTENTIALS["expression"] = Formula
for _name in NAMED:        # the named potentials of tdse.potentials: each a formula too
    POTENTIALS[_name] = Formula
