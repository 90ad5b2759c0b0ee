"""One time step of the chosen scheme (:mod:`tdse.numerics.schemes`), each exponential by
the chosen method (:mod:`tdse.numerics.exponentials`), for psi, an N x B block of states,
or the whole propagator U(t); written once for NumPy/CuPy.

A step psi(t_j) -> psi(t_j + dt) is F_K ... F_1 psi with F_k = exp(-i dt G_k),
G_k = s_k T + diag(v_k) (:meth:`Stepper.generators`).  A time-independent H's factors
are made once.  On several GPUs (``gemm_opts["devices"]``) the dense factors and U(t)
live in column bands (:class:`mgemm.dist.Layout`); a Chebyshev U(t) is propagated band
by band where each band lives, with no communication.
"""
from __future__ import annotations

import numpy as np

from ..config import Config
from ..model.field import dipole_field, vector_potential, velocity_gauge
from ..model.grid import points
from ..model.potential import soft_core, total
from ..model.states import DTYPE
from . import exponentials, propagators, schemes

__all__ = ["Stepper"]

#: grid values of one group of steps of :meth:`Stepper.bounds_many` (steps x times x N;
#: 512 KB, in a core's cache, where one pass over a chunk of 64 steps at N = 8192 streams
#: 4 MB a NumPy operation: 2.1-2.6 against 4.1-5.5 ms on 2 cores; on an H100's host the
#: planner's chunk 4.5-5 against 7-9 ms, benchmarks/archive/planner_chunk.py)
BOUNDS_GROUP_ELEMENTS = 1 << 16

#: steps whose generators :meth:`Stepper.generators` makes at once where V is a moving
#: soft-core molecule's and the field's x E(t) (at most this many, within
#: GENERATOR_CHUNK_ELEMENTS grid values): one step at a time they took 87 us at N = 256
#: (cfm4, h2plus_moving), most of it NumPy's cost a call -- the same operations, the same bits
GENERATOR_CHUNK_STEPS = 64
GENERATOR_CHUNK_ELEMENTS = 1 << 20


def _layout(config, method, xp, gemm_opts):
    """The column-band layout over several devices, or None on one."""
    devs = gemm_opts.get("devices")
    many = (isinstance(devs, (list, tuple)) and len(devs) > 1) or \
        (isinstance(devs, int) and not isinstance(devs, bool) and devs > 1)
    if many and (method.matrix_free or gemm_opts.get("layout") == "bands"):
        from mgemm.dist import Layout
        return Layout(config.grid.n, devs, gpu=xp is not np)
    return None


class Stepper(propagators.Steps):
    """Steps psi(t_j) -> psi(t_j + dt) (and U(t_j) -> U(t_j + dt)) for ``config``.

    ``plan``: the :class:`mgemm.plan.ExpmPlan` of the dense methods (from
    :func:`tdse.numerics.precheck.precheck`; unused by ``chebyshev``)."""

    def __init__(self, config: Config, plan=None, xp=np, gemm_opts=None):
        cls = exponentials.get(config.propagator.method)
        if not cls.matrix_free and plan is None:
            raise ValueError(f"method {cls.name!r} needs an ExpmPlan (tdse.numerics.precheck)")
        self.config, self.xp = config, xp
        self.scheme = schemes.get(config.propagator.scheme)
        self.x_host = points(config.grid)
        gemm_opts = dict(gemm_opts or {})
        self.layout = _layout(config, cls, xp, gemm_opts)
        self.method = cls(config, plan, xp, gemm_opts, self.layout)
        self.static = not config.time_dependent
        self._factors = None          # the factors of a time-independent H
        self._molecule = None         # the molecule's V where no centre moves (generators)
        self._chunk = None            # a moving molecule's chunk of steps (_chunk_generators)
        # how its steps run on this backend: the registry's one choice (on a GPU a step of
        # psi one CUDA graph launch where the method allows)
        self.propagator = propagators.make(self)
        self.context_switch_seconds = 0.0   # the loops' starts on a GPU (tdse.run.loop._settle)

    @property
    def exponentials(self) -> int:
        """Exponentials evaluated so far."""
        return self.method.exponentials

    @property
    def cheb_terms(self) -> int:
        """Chebyshev terms applied so far (a work counter)."""
        return self.method.cheb_terms

    def generators(self, j: int):
        """[(s_k, v_k, a_k)] of step j: G_k = s_k T + a_k p + diag(v_k), in the order they
        act; a_k = sum_i w_ki A(t_i) in the velocity gauge (v_k then has the A^2/2 of each
        H(t_i)), else 0."""
        dt = self.config.time.dt
        pot = self.config.potential
        if pot.molecule_moves and not (self.static or pot.V or velocity_gauge(pot.field)) \
                and j == int(j):        # (a whole step: U(t) may be asked for at any t / dt)
            return self._chunk_generators(int(j))
        t = 0.0 if self.static else j * dt
        times = self.scheme.times(t, dt)
        if self._molecule is None and not (pot.V or pot.molecule_moves):
            self._molecule = soft_core(pot, self.x_host, 0.0)     # (the same bits every step)
        V = [total(pot, self.x_host, tj, molecule=self._molecule) for tj in times]
        A = [0.0] * len(times)
        if velocity_gauge(pot.field):              # (one call for the step's times)
            A = [float(a) for a in vector_potential(pot.field, np.asarray(times, dtype=np.float64))]
            V = [v + 0.5 * a * a for v, a in zip(V, A)]
        return [(s, sum(w * v for w, v in zip(row, V) if w), sum(w * a for w, a in zip(row, A) if w))
                for s, row in zip(self.scheme.scales(), self.scheme.factors)]

    def _chunk_generators(self, j):
        """:meth:`generators` of step j for a moving soft-core molecule in the length gauge,
        from its chunk of steps (:data:`GENERATOR_CHUNK_STEPS`, aligned to multiples of it: a
        step's values do not depend on where a run starts) made at once: the molecule's V at
        every time by :func:`total_many`, the field's e(t) x added where e(t) is not 0 (e a
        time at a time, as :func:`total`), each v_k summed from the times' V as ``sum`` does
        it -- element by element the same operations, the same bits.  (A static molecule's
        V is kept whole already; a chunk for it took atom_hhg's generators 35 -> 63 us a
        step, measured once while CI loaded this box: not taken.)"""
        c = self._chunk
        if c is None or not c[0] <= j < c[1]:
            import dataclasses

            from ..model.potential import total_many
            pot, x, dt = self.config.potential, self.x_host, self.config.time.dt
            n, nt = x.size, len(self.scheme.nodes)
            S = max(1, min(GENERATOR_CHUNK_STEPS, GENERATOR_CHUNK_ELEMENTS // (nt * n)))
            j0 = j // S * S
            times = [self.scheme.times(k * dt, dt) for k in range(j0, j0 + S)]
            flat = np.array([tk for ts in times for tk in ts], dtype=np.float64)
            V = total_many(dataclasses.replace(pot, field=None), x, flat).reshape(S, nt, n)
            if pot.field is not None:
                for i, ts in enumerate(times):
                    for k, tk in enumerate(ts):
                        e = dipole_field(pot.field, tk)
                        if e:
                            V[i, k] = V[i, k] + e * x
            vs = []
            for row in self.scheme.factors:
                v = 0
                for k, w in enumerate(row):
                    if w:
                        v = v + w * V[:, k]
                vs.append(v)
            # [j0, j1, v_k's, a_k's, the method's coefficients of each (when first asked)]
            c = self._chunk = [j0, j0 + S, vs, [sum(w * 0.0 for w in row if w) for row in self.scheme.factors],
                               None]
        i = j - c[0]
        return [(s, v[i], a) for s, v, a in zip(self.scheme.scales(), c[2], c[3])]

    def _chunk_coefficients(self, j):
        """The expansion's coefficients of step j's factors, made for its whole chunk at
        its first ask (the method's ``coefficients_many``, from :meth:`_chunk_generators`'
        v_k), or None: a method without them, j not a whole step of the chunk held."""
        c, many = self._chunk, getattr(self.method, "coefficients_many", None)
        if many is None or c is None or j != int(j) or not c[0] <= j < c[1]:
            return None
        if c[4] is None:
            c[4] = [many(s, v) for s, v in zip(self.scheme.scales(), c[2])]
        return [cf[int(j) - c[0]] for cf in c[4]]

    def bounds(self, scale, v, a=0.0):
        return self.method.bounds(scale, v, a)

    def factors(self, j: int):
        """The factors [F_1, F_2, ...] of step j (made once when H is static)."""
        if self._factors is not None:
            return self._factors
        gens = self.generators(j)
        if self.static and len(gens) > 1 and all(
                s == gens[0][0] and np.array_equal(v, gens[0][1]) for s, v, _ in gens):
            fs = [self.method.factor(*gens[0])] * len(gens)  # cfm4, static H: one factor twice
        else:
            coefs = self._chunk_coefficients(j)
            fs = [self.method.factor(s, v, a) for s, v, a in gens] if coefs is None else \
                [self.method.factor(s, v, a, coef=cf) for (s, v, a), cf in zip(gens, coefs)]
        if self.static:
            self._factors = fs
        return fs

    def as_batch(self):
        """This run as a one-member :class:`BatchStepper` (the block the CUDA graphs step)."""
        return BatchStepper([self.config], self.xp)

    def step(self, psi, j: int):
        """psi(t_j + dt) for psi a vector or an N x B block of states (a new array), by the
        run's propagator (:mod:`tdse.numerics.propagators`)."""
        return self.propagator.step(psi, j)

    def advance(self, X, j0: int, j1: int, into=None, operator: bool = False, taps=None):
        """X stepped from step j0 to j1 by the propagator (:meth:`tdse.numerics.propagators.Steps.advance`)."""
        return self.propagator.advance(X, j0, j1, into, operator, taps)

    def bounds_many(self, js, times):
        """(steps, E, 2): each exponential's spectral bounds at the steps js (times (steps, nt)),
        as :meth:`generators` and the method's ``bounds`` give them one step at a time: V
        exactly on the grid at every time (:func:`tdse.model.potential.total_many`), in
        groups of steps that stay in cache (:data:`BOUNDS_GROUP_ELEMENTS`), and only at the
        grid points where its extremes can lie (:meth:`_extreme_points`; all of them where
        that cannot be said): a GPU run's planner computes this for every chunk of 64 steps,
        at N = 8192 ~5-7 ms on an H100's host over the whole grid, the chunk 7-9 ms -- as
        long as its 64 steps on the GPU, so the loop waited for it (a bare step 150-235 us,
        150-155 after the groups).  The same operations element by element, the same bits."""
        from ..model.hamiltonian import kinetic_max
        from ..model.momentum import momentum_max
        from ..model.potential import total_many
        x, g = self.x_host, self.config.grid
        S, nt = times.shape
        rows = list(zip(self.scheme.scales(), self.scheme.factors))
        tmax = kinetic_max(g.stencil, g.dx)
        out = np.empty((S, len(rows), 2))
        cols = self._extreme_points(times)
        if cols is not None:
            x = x[cols]
        field = self.config.potential.field
        A = vector_potential(field, times) if velocity_gauge(field) else None     # (S, nt)
        group = max(1, BOUNDS_GROUP_ELEMENTS // (nt * x.size))
        for a in range(0, S, group):
            b = min(S, a + group)
            v = total_many(self.config.potential, x, times[a:b].ravel()).reshape(b - a, nt, x.size)
            if A is not None:                     # V + A^2/2 at each time (generators)
                v = v + (0.5 * A[a:b] * A[a:b])[:, :, None]
            for e, (s, row) in enumerate(rows):
                vk = sum(w * v[:, i] for i, w in enumerate(row) if w)
                lo, hi = vk.min(axis=1), s * tmax + vk.max(axis=1)
                if A is not None:                 # |a_k| P_max (the method's bounds)
                    m = np.abs(sum(w * A[a:b, i] for i, w in enumerate(row) if w)) * momentum_max(g.stencil, g.dx)
                    lo, hi = lo - m, hi + m
                out[a:b, e, 0], out[a:b, e, 1] = lo, hi
        return out

    def _extreme_points(self, times):
        """Indices of the grid points that hold the least and the greatest value of each
        exponential's sum_i w_i V(x, t_i) at every one of ``times``, or None (all points):
        :func:`tdse.model.potential.extreme_columns` over every exponential's weights."""
        from ..model.potential import extreme_columns
        return extreme_columns(self.config.potential, self.x_host, times,
                               [tuple(row) for row in self.scheme.factors])

    def step_operator(self, Ut, j: int):
        """U(t_j + dt) = F_K ... F_1 U(t_j) (column bands on several GPUs)."""
        return self.propagator.step_operator(Ut, j)

    def operator(self, j: int):
        """The one-step propagator of step j as a dense matrix on the device."""
        U = self.step_operator(self.xp.eye(self.config.grid.n, dtype=DTYPE), j)
        return U.to_array(0) if hasattr(U, "to_array") else U


class BatchStepper(propagators.Steps):
    """Steps B runs at once: psi as an N x B block whose columns are members with their own
    potentials (field, centres, absorber: :func:`tdse.config.with_value` of one base config)
    but one grid, stencil, scheme and dt.  Every exponential is a block Chebyshev series
    (:mod:`tdse.numerics.chebyshev`) whose spectral bounds hold for every member (the union
    of theirs); each term is one kinetic product for the whole block
    (:class:`tdse.model.hamiltonian.BlockOperator`) plus each member's diagonal; with
    absorbers the members' own masks exp(-dt s W / 2) on both sides (as
    ``method = "chebyshev"`` does for one run)."""

    def __init__(self, configs, xp=np):
        from ..model.absorber import absorber_profile
        base = configs[0]
        self.configs, self.config, self.xp = list(configs), base, xp
        self.scheme = schemes.get(base.propagator.scheme)
        self.x_host = points(base.grid)
        self.static = not any(c.time_dependent for c in configs)
        self.tol = min(c.propagator.tolerance for c in configs)
        W = np.stack([absorber_profile(c, self.x_host) for c in configs], axis=1)
        self.W = W if W.any() else None
        from ..model.potential import batch
        self.potential = batch([c.potential for c in configs], self.x_host, xp)
        self.exponentials, self.cheb_terms = 0, 0
        self.context_switch_seconds = 0.0   # the loops' starts on a GPU (tdse.run.loop._settle)
        self._masks = {}
        self._graph = None            # a GraphStep on a GPU (made at the first step)
        self.graphs = xp is not np    # False: launch every kernel from Python

    def generators(self, j: int):
        """[(s_k, V_k, (lo_k, hi_k), a_k)] of step j: V_k (N x B, on the device) each
        member's sum_i w_ki V(x, t_i), and bounds holding for every member's V_k, from the
        parameters on the host (:meth:`tdse.model.potential.BatchPotential.bounds`: no
        device sync); a_k (B,) the velocity gauge's sum_i w_ki A(t_i) per member (V_k then
        with its A^2/2), else None."""
        dt = self.config.time.dt
        t = 0.0 if self.static else j * dt
        times = self.scheme.times(t, dt)
        pot = self.potential
        Vs = [pot.total(tj) for tj in times]
        gens = [(s, sum(w * v for w, v in zip(row, Vs) if w), pot.bounds(times, row), None)
                for s, row in zip(self.scheme.scales(), self.scheme.factors)]
        if not pot.velocity:
            return gens
        A = [pot.vector(tj) for tj in times]
        out = []
        for (s, V, (lo, hi), _), row in zip(gens, self.scheme.factors):
            q = sum(w * 0.5 * a * a for w, a in zip(row, A) if w)         # (B,)
            out.append((s, V + self.xp.asarray(q)[None, :], (lo + float(q.min()), hi + float(q.max())),
                        sum(w * a for w, a in zip(row, A) if w)))
        return out

    def _mask(self, scale):
        if self.W is None:
            return None
        if scale not in self._masks:
            self._masks[scale] = self.xp.asarray(np.exp(-0.5 * self.config.time.dt * scale * self.W))
        return self._masks[scale]

    def step(self, X, j: int):
        """X (N x B) one step on: on a GPU one CUDA graph launch (:mod:`tdse.numerics.graphs`,
        the same numbers), otherwise the block Chebyshev series launched from Python."""
        return self.steps(X, j, j + 1)

    def steps(self, X, j0: int, j1: int, taps=None):
        """X from step j0 to j1 (on a GPU kept in the graphs' buffer between steps), each of
        ``taps``' steps copied out (:meth:`tdse.numerics.propagators.Steps.advance`)."""
        if self.graphs:
            from . import graphs
            if self._graph is None:
                self._graph = graphs.GraphStep(self) if graphs.available(self) else False
            if self._graph:
                return propagators.graph_steps(self._graph, self, X, j0, j1, self.step_eager, taps)
        return propagators.each_step(self.step_eager, X, j0, j1, taps)

    def step_eager(self, X, j: int):
        from ..model import hamiltonian
        from . import chebyshev
        g, dt = self.config.grid, self.config.time.dt
        for s, V, (vmin, vmax), a in self.generators(j):
            lo, hi = hamiltonian.spectrum_bounds(g.stencil, g.dx, vmin, vmax, s,
                                                 0.0 if a is None else float(np.abs(a).max()))
            mask = self._mask(s)
            if mask is not None:
                X = X * mask
            X, info = chebyshev.expm_apply(
                None, X, dt, lo, hi, self.tol, self.xp,
                scaled=lambda alpha, shift: hamiltonian.block_operator(g, s, V, self.xp, alpha, shift, a))
            if mask is not None:
                X *= mask
            self.cheb_terms += info["terms"]
            self.exponentials += 1
        return X


class NucleiStepper(propagators.Steps):
    """Steps Psi (N_x x N_R) of the 1D + 1D model (:class:`tdse.model.nuclei.Model`) by the
    config's scheme: each factor exp(-i dt G_k), G_k = s_k (T + V) + e_k kappa x with
    e_k = sum_j w_kj E(t_j) (:mod:`tdse.numerics.schemes`), by the Chebyshev series
    (:func:`tdse.numerics.chebyshev.expm_apply`, the model's rigorous bounds); an absorber
    as the masks exp(-dt s_k W / 2) on both sides, as the 1D Chebyshev method has it.  The
    norm each mask takes is added to ``absorbed`` (x's share, R's share; on the device).
    ``fields``: a scan's members' fields (Psi then B x N_x x N_R, one series a factor over
    the union of their intervals; ``absorbed`` then one value a member).  ``columns``: a
    :class:`tdse.backends.cupy.columns.ColumnOperator` -- each series then runs with Psi's
    columns split over its GPUs (the masks and the observables on the first)."""

    def __init__(self, model, xp=np, fields=None, columns=None):
        from . import chebyshev
        cfg = model.config
        self.model, self.xp, self.config, self.fields = model, xp, cfg, fields
        self.columns = columns
        self.scheme = schemes.get(cfg.propagator.scheme)
        self.expm = chebyshev.expm_apply
        self.masks = {}
        shape = () if fields is None else (len(fields),)
        self.absorbed = [xp.zeros(shape), xp.zeros(shape)]
        self.cheb_terms, self.exponentials, self.context_switch_seconds = 0, 0, 0.0

    def field_at(self, t):
        """E(t): a float, or one a member (an array)."""
        if self.fields is None:
            return self.model.field(t)
        return np.array([float(dipole_field(f, t)) for f in self.fields])

    def generators(self, j: int):
        """[(s_k, e_k)] of step j (e_k an array of the members' with ``fields``)."""
        dt = self.config.time.dt
        E = [self.field_at(t) for t in self.scheme.times(j * dt, dt)]
        return [(s, sum(w * e for w, e in zip(row, E))) for s, row in zip(self.scheme.scales(), self.scheme.factors)]

    def _mask(self, Y, s):
        W = self.model.W
        if W is None:
            return Y
        if s not in self.masks:            # the mask, and the norm it takes a point, by absorber
            M = self.xp.exp(-0.5 * self.config.time.dt * s * W)
            lost = (1.0 - M * M) * self.model.dA
            self.masks[s] = (M, lost * self.model.x_share, lost * (1.0 - self.model.x_share))
        M, lost_x, lost_R = self.masks[s]
        rho = Y.real ** 2 + Y.imag ** 2
        self.absorbed[0] += (rho * lost_x).sum(axis=(-2, -1))
        self.absorbed[1] += (rho * lost_R).sum(axis=(-2, -1))
        return Y * M

    def step(self, Y, j: int):
        m, dt, tol = self.model, self.config.time.dt, self.config.propagator.tolerance
        for s, e in self.generators(j):
            Y = self._mask(Y, s)
            lo, hi = m.bounds(s, e)
            scaled = None if self.columns is None else self.columns.scaled(s, e)
            Y, info = self.expm(lambda Z, s=s, e=e: m.apply(Z, s, e), Y, dt, lo, hi, tol, xp=self.xp,
                                scaled=scaled)
            Y = self._mask(Y, s)
            self.cheb_terms += info["terms"]
            self.exponentials += 1
        return Y
