"""A potential given as a Python function V(x, t) (atomic units: V in hartree, x in bohr, t in
hbar/E_h), from the Python API only (:func:`tdse.with_potential`; ``kind = "callable"``):

    V(x, t) = function(x, t)  [+ x E(t) with a [field] in the length gauge],

``function`` called with the grid (an array) and a time (a float), returning an array of the
grid's shape (or a number).  dV/dx (the dipole acceleration) is ``gradient(x, t)`` when given,
else the central difference (V(x + h) - V(x - h)) / 2h with h = 1e-4 bohr (its error h^2
V'''/6: ~1e-9 for the soft-core).  The spectral bounds are V's own values on the grid at every
time (exact, as for a formula).  Evaluated on the host each time it is needed: one run at a
time (a scan rebuilds its members from TOML, where a function cannot go), on the CPU by
default; with ``--backend cupy`` V is uploaded each step and the launched path steps (a GPU's
graphs and observable kernels are generated from formulas: ``kind = "expression"`` has them).  A run file records
the function's name only: ``tdse resume`` of it is refused in one line.  This file is the
kind's whole implementation (:data:`tdse.model.potential.POTENTIALS` ["callable"] below).
"""
from __future__ import annotations

import numpy as np

from ..errors import ConfigError
from .field import field_value
from .formula import Formula
from .potential import POTENTIALS, BatchPotential

#: the central difference's step (bohr) when no gradient is given
H = 1e-4

#: why a batch refuses a callable potential
HOST_ONLY = ("is a Python function: it runs one run at a time, its V evaluated on the host "
             "(write it as a formula, kind = \"expression\", for scans and GPU kernels)")


class Callable(Formula):
    """:class:`tdse.model.potential.Potential` for a Python function V(x, t); ``config`` a
    :class:`tdse.config.Potential` of kind "callable" (``function``, ``gradient`` in
    ``parameters`` as ("gradient", fn) when given).  The field's terms, the bounds and the
    (absent) centres are :class:`~tdse.model.formula.Formula`'s: only the molecule differs."""

    device = None               # no kernel: the host evaluates it

    def __init__(self, config):
        self.config, self.fn = config, config.function
        self.grad = dict(config.parameters).get("gradient")
        self.moving = config.moves

    def _call(self, f, x, t):
        xh = np.asarray(x.get() if hasattr(x, "get") else x, dtype=np.float64)
        v = np.asarray(f(xh, float(t)))
        if np.iscomplexobj(v):      # (cast to float it had dropped its imaginary part, a warning)
            raise ConfigError("potential", self.config.V, "returned complex values: V(x, t) must be real "
                              "(an absorbing boundary is the [absorber] section)")
        v = v.astype(np.float64, copy=False)
        if v.shape not in ((), xh.shape):
            raise ConfigError("potential", self.config.V, f"returned shape {v.shape} for x of shape "
                              f"{xh.shape}: V(x, t) must return an array like x (or a number)")
        return np.broadcast_to(v, xh.shape).copy()

    def molecule(self, x, t, xp=np):
        return xp.asarray(self._call(self.fn, x, t))

    def molecule_many(self, x, times):
        return np.stack([self._call(self.fn, x, t) for t in times]) if times.size else np.zeros((0, x.size))

    def gradient(self, x, t):
        x = np.asarray(x, dtype=np.float64)
        g = (self._call(self.grad, x, t) if self.grad is not None else
             (self._call(self.fn, x + H, t) - self._call(self.fn, x - H, t)) / (2 * H))
        return g + field_value(self.config.field, t)


class CallableBatch(BatchPotential):
    """B copies of one run's callable potential, each at its own time (a single run's block
    of observable rows, :class:`tdse.model.observables.BlockMeasure`) on the host; members
    with other configurations (a scan) and GPUs are refused in one line (:data:`HOST_ONLY`)."""

    def __init__(self, potentials, x, xp=np):
        if xp is not np or any(p != potentials[0] for p in potentials):
            raise ConfigError("potential", potentials[0].V, HOST_ONLY)
        super().__init__(potentials, x, xp)
        self.potential = Callable(potentials[0])
        self.moving = True            # (each column at its own time: _molecule every call)
        self.x_host = np.asarray(x, dtype=np.float64)

    def _molecule(self, t, gradient=True, order="C"):
        ts = np.broadcast_to(np.asarray(t, dtype=np.float64), (self.B,))
        p, x = self.potential, self.x_host
        cols = (lambda v: np.stack(v).T) if order == "F" else (lambda v: np.stack(v, axis=1))  # noqa: E731
        V = cols([p._call(p.fn, x, tb) for tb in ts])
        G = None
        if gradient:      # (the molecule's alone: host_fields adds the field's E)
            G = cols([p.gradient(x, tb) - field_value(p.config.field, tb) for tb in ts])
        return V, G

    def bounds_many(self, times, weights):
        times = np.asarray(times, dtype=np.float64)
        p, x = self.potential, self.x_host
        lo = hi = 0.0
        for i, w in enumerate(weights):
            if not w:
                continue
            v = np.stack([p._call(p.fn, x, t) for t in times[:, i]])          # (steps, N)
            e = self.dipole(times[:, i:i + 1])                               # (steps, B)
            vlo = v.min(axis=1)[:, None] + np.minimum(e * self.ends[0], e * self.ends[1])
            vhi = v.max(axis=1)[:, None] + np.maximum(e * self.ends[0], e * self.ends[1])
            lo_b, hi_b = (w * vlo, w * vhi) if w > 0 else (w * vhi, w * vlo)
            lo, hi = lo + lo_b.min(axis=1), hi + hi_b.max(axis=1)
        return lo, hi


Callable.batch = CallableBatch
POTENTIALS["callable"] = Callable


def with_potential(config, function, *, gradient=None, time_dependent=None, name=None):
    """``config`` (a :class:`tdse.config.Config`) with its molecule replaced by the Python
    function ``function(x, t)`` (module docstring); its field, grid and the rest kept.
    ``gradient(x, t)``: dV/dx (default: a central difference); ``time_dependent``: whether
    V changes with t (default: V compared at t = 0, 0.37 and 1.91 on the grid).  A function
    that fails or returns the wrong shape is refused in one line naming it."""
    import dataclasses

    from ..config import with_source, to_toml
    from .grid import points
    name = name or getattr(function, "__qualname__", None) or repr(function)
    if not callable(function) or (gradient is not None and not callable(gradient)):
        raise ConfigError("potential", name, "must be a callable V(x, t) (and gradient, if given)")
    pot = dataclasses.replace(config.potential, a=0.0, centres=(), kind="callable",
                              V=f"python:{name}", parameters=(("gradient", gradient),) if gradient else (),
                              function=function, moves=True)
    x = points(config.grid)
    try:
        c = Callable(pot)
        samples = [c.molecule(x, t) for t in (0.0, 0.37, 1.91)]
        if gradient is not None:
            c.gradient(x, 0.0)
    except ConfigError:
        raise
    except Exception as e:  # noqa: BLE001 -- the user's function: its error in one line
        raise ConfigError("potential", name, f"failed on the grid: {type(e).__name__}: {e}") from None
    if not all(np.all(np.isfinite(v)) for v in samples):
        raise ConfigError("potential", name, "returned a value that is not finite on the grid")
    moves = time_dependent if time_dependent is not None else \
        not all(np.array_equal(samples[0], v) for v in samples[1:])
    cfg = dataclasses.replace(config, potential=dataclasses.replace(pot, moves=bool(moves)))
    return with_source(cfg, to_toml(cfg))
