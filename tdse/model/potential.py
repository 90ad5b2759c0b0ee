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

from typing import Protocol, runtime_checkable

import numpy as np

from ..expression import parse
from .extremes import hull_columns
from .field import (dipole_field, field_value, formula_of, panel_edges, panel_table, panel_value,
                    pulse, velocity_gauge)


@runtime_checkable
class Potential(Protocol):
    """What a run reads of a potential V(x, t) (atomic units; the field's x E(t) included):
    its values and gradient on the grid, at one time or many (the stepper's diagonals, the
    observables), exact bounds over the grid and a set of times (the Chebyshev expansion's
    spectral interval, the precheck), the centres' positions (the snapshots), and the
    definition the device kernels are generated from (``device``: a centre's term and force,
    or a formula and its derivative, :mod:`tdse.backends.cupy.potential`).  :class:`SoftCore` is its implementation."""

    device: tuple
    def values(self, x, t, xp=np): ...
    def gradient(self, x, t): ...
    def values_many(self, x, times, out=None): ...
    def bounds(self, x, times, weights=(1.0,), offsets=(0.0,)): ...
    def centres(self, t): ...
    def molecule(self, x, t, xp=np): ...


#: the potentials by kind (``[potential] kind``): each a :class:`Potential` made from the
#: configuration, with ``batch`` its class for B members at once; tdse.model.formula adds
#: "expression"
POTENTIALS = {}

_MADE = {}


def of(potential) -> Potential:
    """The :class:`Potential` of a :class:`tdse.config.Potential` (POTENTIALS[kind]), made
    once a configuration."""
    made = _MADE.get(id(potential))
    if made is None or made.config is not potential:
        if len(_MADE) > 256:
            _MADE.clear()
        made = _MADE[id(potential)] = POTENTIALS[potential.kind](potential)
    return made


def host_only(potential) -> bool:
    """Whether a potential has no device kernels (``device`` None: a Python function), so
    its V is evaluated on the host at every use: no GPU graphs, observables on the host."""
    return of(potential).device is None


def batch(potentials, x, xp=np):
    """V and dV/dx of B members at once (:class:`BatchPotential` or its kind's own class)."""
    return POTENTIALS[potentials[0].kind].batch(potentials, x, xp)


class SoftCore:
    """The soft-core molecule of the thesis summary, eqs. (10)-(11), with the field in the
    length gauge: :class:`Potential` for a :class:`tdse.config.Potential`.  ``term`` and
    ``force`` are one centre's formulas, V = -sum_c term + x E(t) and dV/dx = sum_c force +
    E(t), in r = x - X_c(t), the charge Z and the softening a; the GPU kernels are generated
    from them, and the host's :func:`coulomb` and :func:`coulomb_force` compute the same
    operations (``tests/test_expression.py`` compares them)."""

    term = parse("Z / sqrt(r * r + a)", ("Z", "r", "a"), "potential (soft-core term)")
    force = parse("Z * r / (r * r + a) ** 1.5", ("Z", "r", "a"), "potential (soft-core force)")
    #: what the device kernels are generated from (tdse.backends.cupy.potential)
    device = ("centres", term, force)

    def __init__(self, config):
        self.config = config

    def values(self, x, t, xp=np):
        return total(self.config, x, t, xp)

    def gradient(self, x, t):
        return gradient(self.config, x, t)

    def values_many(self, x, times, out=None):
        return total_many(self.config, x, times, out)

    def bounds(self, x, times, weights=(1.0,), offsets=(0.0,)):
        return bounds_over(self.config, x, times, [weights], offsets)[0]

    def centres(self, t):
        return centre_positions(self.config, t)

    def molecule(self, x, t, xp=np):
        return soft_core(self.config, x, t, xp)


def envelope(ramp, t):
    """s(t) = sin^2(pi t / (2 ramp)) for 0 <= t < ramp, 1 afterwards (1 for ramp = 0);
    ``ramp`` may be an array (one per centre or member), broadcast against t."""
    t = np.asarray(t, dtype=np.float64)
    ramp = np.asarray(ramp, dtype=np.float64)
    r = np.where(ramp > 0, ramp, 1.0)
    return np.where((ramp > 0) & (t < ramp), np.sin(0.5 * np.pi * np.clip(t, 0.0, r) / r) ** 2, 1.0)


def path(x0, amplitude, frequency, phase, ramp, t):
    """X(t) = x0 + amplitude s(t) sin(frequency t + phase) (eq. 11 with the ramp); the
    parameters may be arrays, broadcast against t."""
    return x0 + amplitude * envelope(ramp, t) * np.sin(frequency * t + phase)


def centre_positions(potential, t):
    """X_c(t) for every centre, shape (n_centres,) (or (n_centres, len(t))).  One time:
    :func:`path`'s operations on scalars (the same values, bit for bit; ~2 us a centre
    where the array form took ~10: every step's potential asks for them)."""
    if potential.V:
        return of(potential).centres(t)
    if np.ndim(t) == 0:
        t = np.float64(t)
        return np.array([_path_at(c.x0, c.amplitude, c.frequency, c.phase, c.ramp, t)
                         for c in potential.centres])
    t = np.asarray(t, dtype=np.float64)
    return np.array([path(c.x0, c.amplitude, c.frequency, c.phase, c.ramp, t)
                     for c in potential.centres])


def _path_at(x0, amplitude, frequency, phase, ramp, t):
    """:func:`path` at one time ``t`` (a float64 scalar) for scalar parameters: the same
    operations in the same order (:func:`envelope`'s sin^2 rise while t < ramp, else 1)."""
    s = 1.0
    if ramp > 0 and t < ramp:
        s = np.sin(0.5 * np.pi * min(max(t, 0.0), ramp) / ramp)
        s = s * s           # as the array's ** 2 (a scalar's ** 2 is pow: 1 ulp apart)
    return x0 + amplitude * s * np.sin(frequency * t + phase)


def coulomb(Z, X, a, x, xp=np):
    """One soft-core term Z / sqrt((x - X)^2 + a) (thesis eq. 10; V is minus the sum)."""
    return Z / xp.sqrt((x - X) ** 2 + a)


def coulomb_force(Z, X, a, x):
    """d/dx of -Z / sqrt((x - X)^2 + a): Z r / (r^2 + a)^(3/2), r = x - X."""
    r = x - X
    return Z * r / (r * r + a) ** 1.5


def total(potential, x, t, xp=np, molecule=None):
    """V(x, t) including the field's x E(t) in the length gauge (the molecule alone:
    :func:`soft_core`; in the velocity gauge the field is in H's A(t) p instead); any
    kind (:func:`of`), the soft-core's operations here.  ``molecule``: :func:`soft_core`'s
    values at ``x`` kept by the caller where no centre moves (the same bits; not written to)."""
    if potential.V:
        return of(potential).values(x, t, xp)
    v = soft_core(potential, x, t, xp) if molecule is None else molecule
    if potential.field is not None:
        e = dipole_field(potential.field, t)
        if e:
            v = v + e * x
    return v


def gradient(potential, x, t):
    """dV/dx of :func:`total` (for the dipole acceleration <-dV/dx>)."""
    if potential.V:
        return of(potential).gradient(x, t)
    g = np.full_like(np.asarray(x, dtype=np.float64), field_value(potential.field, t))
    for c, X in zip(potential.centres, centre_positions(potential, t)):
        g += coulomb_force(c.Z, float(X), potential.a, x)
    return g


def soft_core(potential, x, t, xp=np):
    """V(x, t) of the molecule (no field), eq. (11) summed over centres; ``x`` may be a CuPy
    array (any kind: :meth:`Potential.molecule`)."""
    if potential.V:
        return of(potential).molecule(x, t, xp)
    v = xp.zeros_like(x)
    for c, X in zip(potential.centres, centre_positions(potential, t)):
        v -= coulomb(c.Z, float(X), potential.a, x, xp)
    return v


def total_many(potential, x, times, out=None, scratch=None):
    """V(x, t) of :func:`total` at many times at once: (len(times), N) on the host, the
    same operations element by element (the centres, then the field); ``out``: a
    (len(times), N) float64 buffer to write into, ``scratch`` another (else one made)."""
    if potential.V:
        return of(potential).values_many(x, times, out)
    times = np.atleast_1d(np.asarray(times, dtype=np.float64))
    x = np.asarray(x, dtype=np.float64)
    v = np.zeros((times.size, x.size)) if out is None else out
    if out is not None:
        v.fill(0.0)
    d = np.empty_like(v) if scratch is None else scratch
    if potential.molecule_moves:
        _molecule(potential, x, centre_positions(potential, times), v, d)
    else:           # a static molecule: its row once (the same operations: the same bits)
        v += _static_row(potential, x)
    if potential.field is not None:
        np.multiply(dipole_field(potential.field, times)[:, None], x[None, :], out=d)
        v += d
    return v


_STATIC = []   # [(potential, x, its row)]: the last few static molecules' V, the latest first


def _static_row(potential, x):
    """A static molecule's V on ``x`` (:func:`_molecule`), the same array while kept for the
    grid and its extreme columns (bounds, carrier, precheck; ``extremes.hull_columns``' key)."""
    kept = list(_STATIC)           # (replaced whole: the planner's thread asks too)
    for i, (p, xs, row) in enumerate(kept):
        if p == potential and (xs is x or (xs.shape == x.shape and np.array_equal(xs, x))):
            _STATIC[:] = [kept[i]] + kept[:i] + kept[i + 1:]
            return row
    row = np.zeros((1, x.size))
    _molecule(potential, x, centre_positions(potential, np.zeros(1)), row, np.empty_like(row))
    _STATIC[:] = [(potential, x.copy(), row := row[0])] + kept[:3]
    return row


def _molecule(potential, x, X, v, d):
    """v -= sum_c Z_c / sqrt((x - X_c)^2 + a) row by row (X: centres x times), :func:`coulomb`'s way."""
    for c, Xc in zip(potential.centres, np.reshape(X, (len(potential.centres), -1))):
        np.subtract(x[None, :], Xc[:, None], out=d)
        np.square(d, out=d)
        d += potential.a
        np.sqrt(d, out=d)
        np.divide(c.Z, d, out=d)
        v -= d


#: elements of one chunk of :func:`bounds_over` (times x grid points): a few MB, cache-sized
BOUNDS_CHUNK_ELEMENTS = 1 << 19


def extreme_columns(potential, x, times, rows):
    """Indices of the grid points ``x`` (ascending) holding the least and greatest sum_i
    w_i V(x, t_i) at every one of ``times`` (any shape), w each of ``rows``, or None (all).

    Where the potential is the built-in centres, every centre attracts (Z > 0, a > 0), there
    is no field and every weight is >= 0, each Coulomb term -Z / sqrt((x - X)^2 + a) rises
    as x moves away from its centre, so left of every centre (at every time) the sum falls
    with x and right of every centre it rises -- in floating point too: the operations (x -
    X, its square, + a, sqrt, Z / d, the sums, w * v) are each correctly rounded and so
    monotone.  Its extremes on the grid then lie at the two ends of the grid or between the
    leftmost and rightmost centre (two points of margin each side): a few hundred points of
    8192 for H2+; the min and max of the same values there, the same bits
    (``tests/test_run_path.py``).

    A static molecule in a dipole field (any Z and weights):
    the columns on or within rounding's reach of V0's hulls (``extremes.hull_columns``)."""
    if (potential.V or getattr(potential, "function", None) is not None or not potential.centres
            or not potential.a > 0):
        return None
    rows = [tuple(r) for r in rows]
    if potential.field is not None:
        if potential.molecule_moves:
            return None
        E = np.abs(dipole_field(potential.field, np.asarray(times, dtype=np.float64))).max()
        return hull_columns(_static_row(potential, x), x, float(E), rows)
    if not all(c.Z > 0 for c in potential.centres) or any(w < 0 for r in rows for w in r):
        return None
    X = centre_positions(potential, np.asarray(times, dtype=np.float64).ravel())
    lo = max(0, int(np.searchsorted(x, X.min())) - 2)
    hi = min(x.size - 1, int(np.searchsorted(x, X.max())) + 2)
    if hi - lo + 3 >= x.size:
        return None
    return np.unique(np.concatenate([[0], np.arange(lo, hi + 1), [x.size - 1]]))


def bounds_over(potential, x, times, rows=((1.0,),), offsets=(0.0,), chunk=None, workers=None):
    """[(min, max) of each row w of ``rows``] over the grid and every time t of sum_j w_j
    V(x, t + offsets_j) (:func:`total_many` in chunks of ``chunk`` times, default
    BOUNDS_CHUNK_ELEMENTS / N, V at an offset once for all rows; the field included).
    Exact, not sampled: at every time, every grid point where an extreme can lie
    (:func:`extreme_columns`, else all; ``precheck_extremes_cpu2_20261130T1510.txt``).  On
    ``workers`` threads (default: this process's CPUs), each thread's arrays made once:
    O(steps x N) work a long run's start-up waits for (``bounds_chunk_cpu2_20261201T0130.txt``)."""
    times = np.atleast_1d(np.asarray(times, dtype=np.float64))
    x = np.asarray(x, dtype=np.float64)
    rows = [tuple(r) for r in rows]
    cols = extreme_columns(potential, x, times[:, None] + np.asarray(offsets, dtype=np.float64)[None, :], rows)
    if cols is not None:            # (only where the extremes can lie: the same min and max)
        x = x[cols]
    if chunk is None:
        chunk = max(1, BOUNDS_CHUNK_ELEMENTS // max(1, x.size))
    starts = range(0, times.size, chunk)

    def one(i, b):
        ts = times[i:i + chunk]
        v, tmp, out = b[-2, :ts.size], b[-1, :ts.size], []
        V = [total_many(potential, x, ts + off, b[k, :ts.size], tmp) for k, off in enumerate(offsets)]
        for row in rows:
            np.multiply(V[0], row[0], out=v)   # as sum(w * V_j): 0 + w_0 V_0 + w_1 V_1 ...
            for w, u in zip(row[1:], V[1:]):
                v += np.multiply(u, w, out=tmp)
            out.append((float(v.min()), float(v.max())))
        return out

    def group(g):       # every workers-th chunk from g, in one thread's arrays
        b = np.empty((len(offsets) + 2, min(chunk, times.size), x.size))
        return [one(i, b) for i in starts[g::workers]]

    if workers is None:
        from mgemm.arrays import cpu_count
        workers = cpu_count()
    workers = max(1, min(workers, len(starts)))
    if workers == 1:
        parts = group(0)            # (fresh arrays a chunk had cost page faults)
    else:
        from concurrent.futures import ThreadPoolExecutor
        with ThreadPoolExecutor(workers) as pool:
            parts = [p for ps in pool.map(group, range(workers)) for p in ps]
    return [(min(p[r][0] for p in parts), max(p[r][1] for p in parts)) for r in range(len(rows))]


class BatchPotential:
    """V(x, t) and dV/dx for B members at once, (N, B) arrays on the device of ``xp``: each
    member its own centres (as many as the first's), ``a`` and field (one envelope kind), the
    formulas of :func:`total`, :func:`gradient`, :func:`centre_positions` and
    :func:`field_value` vectorised over the members (no Python loop over members).  (The
    soft-core's batch: another kind's subclass overrides :meth:`_molecule`,
    :meth:`bounds_many` and ``moving``.)"""

    def __init__(self, potentials, x, xp=np):
        self.xp, self.B = xp, len(potentials)
        C = len(potentials[0].centres)
        if any(len(p.centres) != C for p in potentials):
            raise ValueError("a batch's members must have as many centres each")
        self.x = xp.asarray(x)[:, None]
        self.a = xp.asarray([p.a for p in potentials])[None, :]
        col = lambda f: np.array([[f(c) for c in p.centres] for p in potentials], dtype=float)  # noqa: E731
        self.x0, self.amp, self.freq = col(lambda c: c.x0), col(lambda c: c.amplitude), col(lambda c: c.frequency)
        self.phase, self.ramp, Z = col(lambda c: c.phase), col(lambda c: c.ramp), col(lambda c: c.Z)
        self.Z = [xp.asarray(Z[:, c])[None, :] for c in range(C)]
        self.Zh, self.ah = Z, np.array([p.a for p in potentials], dtype=float)   # host copies
        xh = np.asarray(x, dtype=float)
        self.ends = (float(xh.min()), float(xh.max()))
        fields = [p.field for p in potentials]
        # the velocity gauge: no x E(t) in V (the kernels get E = 0: dipole()), A(t) p in H
        self.velocity = any(velocity_gauge(f) for f in fields)
        if self.velocity and not all(velocity_gauge(f) for f in fields):
            raise ValueError("a batch's members must share one gauge")
        self.has_field = any(f is not None for f in fields)
        self._static = {}            # (V, dV/dx) of the molecule when no centre moves, per order
        self.moving = bool(self.amp.any())
        if self.has_field and (None in fields or len({f.envelope for f in fields}) > 1):
            raise ValueError("a batch's members must all have a field of one envelope kind, or none")
        if self.has_field:
            fa = lambda k: np.array([getattr(f, k) for f in fields], dtype=float)  # noqa: E731
            self.f = {k: fa(k) for k in ("E0", "omega", "phase", "duration", "fwhm", "ramp")}
            self.envelope = fields[0].envelope
            if len({(f.E, f.A) for f in fields}) > 1:
                raise ValueError("a batch's members must share one field.E (or field.A) formula")
            formula, params = formula_of(fields[0])       # an expression field: E(t)
            self._formula = (formula, params and {k: np.array([dict(f.parameters)[k] for f in fields])
                                                  for k in params})
            self._fields = fields

    @property
    def slots(self) -> int:
        """The per-time parameters of a member after E in :meth:`pack` (its centres)."""
        return len(self.Z)

    def centre_array(self, t):
        """X_c(t) of every member and centre (:func:`path`), (B, C) on the host."""
        return path(self.x0, self.amp, self.freq, self.phase, self.ramp, t)

    def _centres(self, t):
        """X_c(t) for every centre (:func:`path` over the members): C arrays (1, B); ``t``
        a time, or (B,) times: member b at t_b (:meth:`own`)."""
        X = self.centre_array(t) if np.ndim(t) == 0 else self.own(t)[1]         # (B, C)
        return [self.xp.asarray(X[:, c])[None, :] for c in range(X.shape[1])]

    def own(self, times):
        """(E (B,), X (B, C)): member b's field in V (:meth:`dipole`) and centres at its own
        time ``times[b]`` (B states of one run at B times, as one block)."""
        times = np.asarray(times, dtype=np.float64)
        X = path(self.x0, self.amp, self.freq, self.phase, self.ramp, times[:, None])
        if not self.has_field or self.velocity:
            return np.zeros(self.B), X
        f = self.f
        return pulse(f["E0"], f["omega"], f["phase"], f["duration"], f["fwhm"], f["ramp"],
                     self.envelope, times, *self._formula), X

    def field(self, t):
        """E(t) of every member, on the host (:func:`tdse.model.field.pulse`): (B,) for a
        scalar t, (..., B) for times shaped (..., 1)."""
        if not self.has_field:
            return np.zeros(np.shape(t)[:-1] + (self.B,) if np.ndim(t) else self.B)
        f = self.f
        return pulse(f["E0"], f["omega"], f["phase"], f["duration"], f["fwhm"], f["ramp"],
                     self.envelope, t, *self._formula)

    def dipole(self, t):
        """The E(t) of V's x E(t) (:meth:`field`, shaped so): 0 in the velocity gauge."""
        e = self.field(t)
        return np.zeros_like(e) if self.velocity else e

    def vector(self, t):
        """A(t) = -int_0^t E of every member (B,), all at ``t`` or member b at ``t[b]``; 0
        without a field: :func:`tdse.model.field.vector_potential`'s Gauss-Legendre panels,
        one set for all members (each member's corners on edges), vectorised over them."""
        t = np.broadcast_to(np.asarray(t, dtype=np.float64), (self.B,))
        if not self.has_field:
            return np.zeros(self.B)
        f0 = self._fields[0]
        if f0.A:                                 # A(t) - A(0) of the formula, per member
            from ..expression import evaluate
            from .field import vector_formula
            expr, params = vector_formula(f0), self._formula[1]
            tc = np.clip(t, 0.0, self.f["duration"])
            return evaluate(expr, {**params, "t": tc}) - evaluate(expr, {**params, "t": np.zeros(self.B)})
        if getattr(self, "_atable", None) is None:     # (all members at each panel node)
            f = self.f
            edges = panel_edges(f["duration"].max(), f["omega"], np.concatenate(
                [f["duration"], f["ramp"], f["duration"] - f["ramp"]]))
            self._atable = edges, panel_table(lambda n: self.field(n[..., None]), edges)
        edges, cum = self._atable
        return panel_value(self.field, edges, cum, t)    # (member b at its own nodes)

    def _field_at(self, t):
        """E of V's x E(t) for every member at ``t`` (a time, or (B,) own times)."""
        return self.dipole(t) if np.ndim(t) == 0 else self.own(t)[0]

    def pack(self, times, weights, alpha=1.0, shift=0.0, scale=0.0):
        """The host parameters of the device kernels (:mod:`tdse.backends.cupy.potential`): a header
        [alpha, shift, alpha*scale, w_1..w_nt] (:meth:`header`), then per time and member
        [E_b(t), X_bc(t)] (:meth:`blocks`)."""
        return np.concatenate([self.header(weights, alpha, shift, scale), self.blocks(times)])

    @staticmethod
    def header(weights, alpha=1.0, shift=0.0, scale=0.0):
        return np.concatenate([[alpha, shift, alpha * scale], np.asarray(weights, dtype=float)])

    def blocks(self, times):
        return self.blocks_many(np.asarray(times, dtype=np.float64)[None])[0]

    def blocks_many(self, times):
        """:meth:`blocks` for many steps at once: ``times`` (steps, nt) -> (steps, nt B (1 + C))."""
        times = np.asarray(times, dtype=np.float64)
        S, nt = times.shape
        out = np.empty((S, nt, self.B, 1 + self.slots))
        out[..., 0] = self.dipole(times[..., None])
        out[..., 1:] = path(self.x0, self.amp, self.freq, self.phase, self.ramp, times[..., None, None])
        return out.reshape(S, -1)

    def constants(self):
        """[a_b, then Z_bc row-major] on the device (what the kernels read per member)."""
        if getattr(self, "_Q", None) is None:
            self._Q = self.xp.asarray(np.concatenate([self.ah, self.Zh.ravel()]))
        return self._Q

    def _device(self, t, kind):
        """V or dV/dx at t by one kernel from uploaded parameters (CuPy)."""
        return self._rows(kind, [t], [[1.0]])[0]

    def weighted(self, times, weights):
        """[sum_i w_ki V(x, t_i) for each row w_k of ``weights``], (N, B) each: on a GPU one
        upload of the times' parameters and one kernel a row (:func:`tdse.backends.cupy.
        potential.device_v` sums over times with weights); the letters of a batch's local
        error (:class:`tdse.numerics.local_error.BatchLocalError`)."""
        if self.xp is np:
            V = [self.total(float(t)) for t in times]
            return [sum(float(w) * v for w, v in zip(row, V) if w) for row in weights]
        return self._rows("v", times, weights)

    def _rows(self, kind, times, weights):
        """The device kernel ``kind`` ("v", "dv") once per row of ``weights`` over ``times``,
        after one upload of the headers and the times' parameters: (N, B) arrays."""
        from mgemm.arrays import PinnedUpload
        from ..backends.cupy.potential import potential_kernels
        if getattr(self, "_up", None) is None:
            self._up = PinnedUpload(self.xp)
        nt, h, R = len(times), 3 + len(times), len(weights)
        P = self._up(np.concatenate([self.header(row) for row in weights] + [self.blocks(times)]))
        kernel = potential_kernels(self.xp, self.device)[kind]
        if R == 1:
            out = self.xp.empty((self.x.shape[0], self.B))
            kernel(self.x, P, self.constants(), 0, h, nt, self.slots, self.B, int(self.has_field), out)
            return [out]
        # the rows in one launch: each row's header offset broadcast over its (N, B) (a launch
        # a row had cost a batch's letters ~0.1 ms of host time a step)
        got = getattr(self, "_hdr", None)
        if got is None or got[0] != (R, h):
            got = self._hdr = ((R, h), self.xp.asarray((np.arange(R) * h).astype(np.int32)[:, None, None]))
        out = self.xp.empty((R, self.x.shape[0], self.B))
        kernel(self.x, P, self.constants(), got[1], R * h, nt, self.slots, self.B, int(self.has_field), out)
        return list(out)

    def total(self, t):
        """V at ``t`` (a time, or (B,) own times on the host path), (N, B)."""
        if self.xp is not np:
            return self._device(t, "v")
        return self.host_fields(t, gradient=False)[0]

    def _molecule(self, t, gradient=True, order="C"):
        """(-sum_c Z_c / sqrt((x - X_c)^2 + a), and its dV/dx or None) of every member,
        (N, B) on the host: one pass a centre, its square root shared; dV/dx as
        Z r / (d sqrt d), d = r^2 + a (within an ulp of :func:`coulomb_force`'s d^1.5);
        ``order`` "F": made as (B, N) rows, returned transposed (:meth:`host_fields`)."""
        o = (lambda a: a.T) if order == "F" else (lambda a: a)      # noqa: E731
        x, V, G = o(self.x), None, None
        for Z, X in zip(self.Z, self._centres(t)):
            Z, r = o(Z), x - o(X)
            d = r * r
            d += o(self.a)
            sq = np.sqrt(d)     # (below, (-Z) / sq: the bits of 0 - Z / sq, rounding being odd)
            V = np.divide(-Z, sq) if V is None else np.subtract(V, Z / sq, out=V)
            if gradient:
                d *= sq
                r *= Z
                r /= d
                G = r if G is None else np.add(G, r, out=G)
        if V is None:           # (no centre)
            V = np.zeros(np.broadcast_shapes(x.shape, o(self.a).shape))
        G = np.zeros_like(V) if gradient and G is None else G
        return o(V), (o(G) if gradient else None)

    def gradient(self, t):
        """dV/dx at ``t`` (a time, or (B,) own times on the host path), (N, B)."""
        if self.xp is not np:
            return self._device(t, "dv")
        g = self.xp.zeros((self.x.shape[0], self.B))
        if self.has_field:
            g += self.xp.asarray(self._field_at(t))[None, :]
        for Z, X in zip(self.Z, self._centres(t)):
            g += coulomb_force(Z, X, self.a, self.x)
        return g

    def host_fields(self, t, gradient=True, order="C"):
        """(V, dV/dx) at ``t`` (a time, or (B,) own times) on the host, (N, B) each (dV/dx
        None without ``gradient``): :meth:`_molecule`'s pass over the centres (when no
        centre moves, once: its copies), then the field's x E(t) and E(t) -- what a block of
        observables needs (:class:`BlockMeasure`), and :meth:`total`'s V.  ``order`` "F":
        each member's column contiguous, as a single run's block of rows has its states."""
        if self.moving:
            V, G = self._molecule(t, gradient, order)
        else:
            if order not in self._static:
                self._static[order] = self._molecule(0.0, order=order)
            V0, G0 = self._static[order]
            V, G = V0.copy(order="K"), (G0.copy(order="K") if gradient else None)
        if self.has_field:      # (member-major where "F": the arrays' own order)
            o = (lambda a: a.T) if order == "F" else (lambda a: a)      # noqa: E731
            E = o(np.asarray(self._field_at(t))[None, :])
            o(V)[...] += E * o(self.x)
            if gradient:
                o(G)[...] += E
        return V, G

    def bounds_many(self, times, weights):
        """:meth:`bounds` for many steps at once: ``times`` (steps, nt) -> (lo, hi), each
        (steps,), the same operations element by element."""
        times = np.asarray(times, dtype=np.float64)
        lo = hi = 0.0
        core = -self.Zh / np.sqrt(self.ah)[:, None]                          # (B, C)
        clo, chi = np.minimum(core, 0.0).sum(axis=1), np.maximum(core, 0.0).sum(axis=1)
        for i, w in enumerate(weights):
            if not w:
                continue
            e = self.dipole(times[:, i:i + 1])                               # (steps, B)
            vlo = clo + np.minimum(e * self.ends[0], e * self.ends[1])
            vhi = chi + np.maximum(e * self.ends[0], e * self.ends[1])
            lo_b, hi_b = (w * vlo, w * vhi) if w > 0 else (w * vhi, w * vlo)
            lo, hi = lo + lo_b.min(axis=1), hi + hi_b.max(axis=1)
        return lo, hi

    def bounds(self, times, weights):
        """(lo, hi) containing sum_j w_j V(x, t_j) for every member and grid point, from the
        parameters alone (on the host, no pass over the block): each soft-core term lies in
        [min(0, -Z/sqrt(a)), max(0, -Z/sqrt(a))] and x E(t) between its values at the box's
        ends.  Rigorous, and loose by at most the terms' values at the walls.  (One step of
        :meth:`bounds_many`.)"""
        lo, hi = self.bounds_many(np.asarray(times, dtype=np.float64)[None], weights)
        return float(np.ravel(lo)[0]), float(np.ravel(hi)[0])


SoftCore.batch = BatchPotential
BatchPotential.device = SoftCore.device
POTENTIALS["soft_core"] = SoftCore
