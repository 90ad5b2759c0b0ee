"""The lowest eigenpairs of the molecular H(t) along a run, tracked from call to call
(:class:`Tracker`; atomic units): the populations' reference states of
:class:`tdse.run.rows.Observables` and the eigenpairs' look-ahead
(:mod:`tdse.run.eigenpairs`).  The solvers it calls are :mod:`tdse.model.states`'; it reads
them through that module (``states.NAME``), so a setting changed there (``WARM_MIN_N``) is
the one it uses."""
from __future__ import annotations

import math

import numpy as np

from . import states
from .grid import points
from .potential import soft_core

__all__ = ["Tracker", "windowed"]


class Tracker:
    """The lowest ``count`` eigenpairs of the molecular H(t) along a run (the populations'
    reference states, :class:`tdse.run.rows.Observables`), at O(N K) per call where the
    dense solver is O(N^3):

    * 3- and 5-point from N = ``warm_min`` (:data:`states.WARM_MIN_N`, 0: every N) by windows
      (:meth:`window`): the populations times of :data:`states.WARM_ANCHOR_CALLS` intervals solved
      together, the first from scratch (:meth:`_scratch`: 3-point :func:`states.lowest_pairs`; 5-point
      from N = 1024 the 3-point pairs refined by :func:`states.warm_banded`, else or where refused
      the banded solver up to N = ``direct_max``, Davidson from the 3-point pairs beyond),
      the others by :func:`states.warm_banded_many` (stacked inverse iteration from the first's
      pairs, O(N K) a call, each member checked by a Sturm count of the 3-point H; from
      scratch for one it does not vouch for, counted in :attr:`restarts`) -- a call's pairs
      depend on t alone, the same bits for the same host BLAS threads wherever computed
      (5-point on :data:`states.EIGEN_BLAS_THREADS`); a time off the populations interval (the
      last step, a resumed run's first) by :func:`states.warm_banded` from its window's first;
      below ``warm_min`` from scratch at every call;
    * DVR from N = :data:`states.SUB_MIN_N` where the states fit a small sub-grid around the
      wells (:func:`states.sub_margin`, decided at t = 0): :func:`states.davidson` from the
      sub-grid's dense pairs (:func:`states.sub_start`), a function of t alone; otherwise
    * DVR up to N = ``direct_max`` (:data:`states.DVR_DENSE_MAX`): :func:`states.eigenstates`;
    * DVR beyond: :func:`states.davidson` on a block of count + 2 vectors warm-started from
      the block at the call's anchor time (itself from the 3-point pairs there: a call's pairs
      depend on t alone, so a resumed run, the worker and the loop give the same bits), H
      applied on ``xp``'s device, the corrections by the banded 5-point H on the host;
      converged when every residual ||H phi - E phi|| <= :func:`states.residual_bound`.  A call that
      does not converge (said once, as a warning) uses :func:`states.eigenstates`.

    Measured (2 cores, h2plus_moving's molecule, 48 calls 0.2 a.u. apart,
    benchmarks/archive/davidson_anchor.py, davidson_anchor_cpu2_20261126T0737.txt): from the anchors 2.5-4.5 iterations a call
    (N = 8192: 5-point 0.86 s, DVR 1.39 s), from the previous call as before 2.0-4.0
    (0.55 s; 1.05 s).  (Near-)degenerate pairs -- the symmetric double well's lowest two
    states at large separation -- are determined only as a pair when their splitting is
    below about the residual bound: the pair's summed population is then the number to read
    (:attr:`clusters` lists the pairs closer than :attr:`cluster_gap` at the last call)."""

    def __init__(self, config, count, xp=np, tol=states.RESIDUAL_TOL, maxiter=30,
                 direct_max=states.DVR_DENSE_MAX,
                 warm_min=None, anchor_calls=None):
        self.config, self.xp, self.tol, self.maxiter = config, xp, tol, maxiter
        self.direct_max = direct_max
        self.warm_min = states.WARM_MIN_N if warm_min is None else warm_min
        self.anchor_calls = states.WARM_ANCHOR_CALLS if anchor_calls is None else anchor_calls
        self.K = min(count, config.grid.n)
        self.block = min(config.grid.n, self.K + 2)
        n = config.grid.n
        self.iterative = config.grid.stencil != 3 and n > max(4 * self.block, direct_max)
        self.fallbacks = 0
        self.calls = 0
        self.iterations = 0           # summed over the calls
        self.cluster_gap = 1e3 * tol
        self.clusters = []
        self.warned = False
        self.last_residual = None
        # the pairs at the last anchor time (anchor_time): (t_a, E, unit columns N x K -- for
        # Davidson its block -- and the dense solver's phi where it stood in, else None)
        self.anchor = None
        self.restarts = 0             # 3-/5-point: warm pairs not vouched for (from scratch instead)
        self._window = None           # 3-/5-point: (a, window a's (E, phi), its anchor's (E, X))
        self._single = None           # 3-/5-point: (a, window a's anchor's (E, X)) alone (_anchor)
        self.solved = 0               # the times whose pairs were computed (a window's all at once)
        self._margin = False          # DVR: the sub-grid's margin (_sub_margin), None for none
        self.sub_calls = 0            # DVR: calls by Davidson from the sub-grid's pairs

    def settings(self) -> dict:
        """The keyword arguments that make another tracker like this one."""
        return {"tol": self.tol, "maxiter": self.maxiter, "direct_max": self.direct_max,
                "warm_min": self.warm_min, "anchor_calls": self.anchor_calls}

    def residual_bound(self, v):
        """:func:`states.residual_bound` at this H with this tracker's ``tol``."""
        return states.residual_bound(self.config.grid, v, self.tol)

    def __call__(self, t, alone=False):
        self.calls += 1
        stencil = self.config.grid.stencil
        if stencil in (3, 5):
            return self._banded_call(t, alone)
        with states.eigen_threads():
            self.solved += 1
            if self._sub_margin() is not None:
                return self._sub_call(t)
            if not self.iterative:
                return states.eigenstates(self.config, t, self.K)
            return self._davidson_call(t)

    def _sub_margin(self):
        """The DVR's :func:`states.sub_margin` at t = 0 (decided once a run, by the
        configuration alone: a resumed run and the workers decide the same), or None."""
        if self._margin is False:
            g = self.config.grid
            self._margin = states.sub_margin(
                g, states.finite(self.config, soft_core(self.config.potential, points(g), 0.0), 0.0), self.block)
        return self._margin

    def _sub_call(self, t):
        """The DVR's pairs at t by :func:`states.davidson` from :func:`states.sub_start`
        (a function of t alone: no anchor)."""
        g = self.config.grid
        v = self._v = states.finite(self.config, soft_core(self.config.potential, points(g), t), t)
        E, V, dense = self._iterate(t, v, states.sub_start(g, v, self.block, self._margin))
        if dense is not None:
            self._clusters(E)
            return E[:self.K], dense[:self.K]
        self.sub_calls += 1
        return self._finish(E, V)

    def _davidson_call(self, t):
        """The Davidson-tracked pairs at t, from the block at t's anchor (:meth:`anchor_time`)."""
        g, pot = self.config.grid, self.config.potential
        v = self._v = states.finite(self.config, soft_core(pot, points(g), t), t)
        a = self.anchor_time(t)
        if self.anchor is None or self.anchor[0] != a:    # the anchor's block, from scratch
            va = v if a == t else soft_core(pot, points(g), a)
            self.anchor = (a, *self._iterate(a, va, states.fd_start(g, va, self.block)))
        if a == t:
            E, V, dense = self.anchor[1:]
        else:
            E, V, dense = self._iterate(t, v, self.anchor[2])
        if dense is not None:              # the dense solver's pairs, as it gives them
            self._clusters(E)
            return E[:self.K], dense[:self.K]
        return self._finish(E, V)

    def _iterate(self, t, v, X):
        """(E, block N x block, None) by :func:`states.davidson` from ``X`` at t (potential ``v``);
        where it does not converge (said once) the dense solver's (E, its block, its phi)."""
        g = self.config.grid
        try:
            E, V, its, res = states.davidson(g, v, X, self.K, self.residual_bound(v), self.maxiter, self.xp)
        except (states.NotConverged, np.linalg.LinAlgError):
            self.fallbacks += 1
            if not self.warned:
                import warnings
                self.warned = True
                warnings.warn(f"at t = {t:.4g} the iterative eigensolver did not reach its residual "
                              f"bound: the dense solver is used where that happens",
                              RuntimeWarning, stacklevel=2)
            E, phi = states.eigenstates(self.config, t, self.block, dense=True)
            return E, self.xp.asarray(phi.T * np.sqrt(g.dx)), phi
        self.iterations += its
        self.last_residual = float(res.max())
        return E, V, None

    def many(self, times):
        """[(E, phi), ...] at each of ``times``: what calling the tracker at each gives, bit
        for bit (3- and 5-point: from the windows of :meth:`window`, each computed once)."""
        return [self(t) for t in times]

    def _banded_call(self, t, alone=False):
        """The finite-difference pairs at t, as :func:`states.eigenstates` gives them (to the
        residual bound where warm), the same bits whichever calls came before: below N =
        ``warm_min`` from scratch (:meth:`_scratch`); else from t's window (:meth:`window`)
        where t is one of its times -- ``alone`` (:meth:`single`), unless that window is
        at hand, from the window's anchor and t's member alone --, and otherwise (the last
        step off the populations interval, a resumed run's first step) by
        :func:`states.warm_banded` from the anchor of t's window (:meth:`_anchor`)."""
        g, c = self.config.grid, self.config
        if g.n < self.warm_min:
            self.solved += 1
            with self._solving():
                got = self._scratch(t, self._potentials([t])[0])
        else:
            every, calls = c.output.populations_interval, self.anchor_calls
            h = every * c.time.dt
            q = round(t / h)                       # t's index among the populations times
            member = q >= 0 and abs(t - q * h) <= 1e-9 * h
            a = q // calls if member else math.floor(t / (h * calls) + 1e-9)
            if member and self._window is not None and self._window[0] == a:
                E, phi = self._window[1][q % calls]     # (at hand: no solve, no BLAS limit)
                self._clusters(E)
                return E, phi
            with self._solving():
                if member and not alone:
                    E, phi = self.window(a)[q % calls]
                    self._clusters(E)
                    return E, phi
                if member:                         # the step's own time, as the window's
                    t = q * every * c.time.dt
                anchor = self._anchor(a)
                if member and q % calls == 0:
                    got = anchor
                else:
                    v = self._potentials([t])[0]
                    self.solved += 1
                    got = states.warm_banded(g, v, *anchor, states.residual_bound(g, v, self.tol))
                    if got is None:
                        self.restarts += 1
                        got = self._scratch(t, v)
        self._clusters(got[0])
        return states.as_states(g, *got)

    def _solving(self):
        """The context of a finite-difference solve: the host's BLAS at
        :data:`states.EIGEN_BLAS_THREADS` for the 5-point H (its banded solves and products:
        the same bits wherever computed); none for the 3-point H, whose solvers call no BLAS
        (and whose thread must not set the process's).  Entered only where pairs are solved
        -- not for a call whose window is at hand (threadpoolctl's limit, ~50-80 us a call
        on 2 cores, was ~1 % of an N = 256 5-point run with populations every 10 steps)."""
        import contextlib
        return states.eigen_threads() if self.config.grid.stencil == 5 else contextlib.nullcontext()

    def _anchor(self, a):
        """(E, unit columns N x K) at the anchor of window ``a`` (its first time): the
        window's where it is at hand, else from scratch alone (kept for the next call)."""
        if self._window is not None and self._window[0] == a:
            return self._window[2]
        if self._single is None or self._single[0] != a:
            c = self.config
            ta = a * self.anchor_calls * c.output.populations_interval * c.time.dt
            self._single = (a, self._scratch(ta, self._potentials([ta])[0]))
            self.solved += 1
        return self._single[1]

    def _scratch(self, t, v):
        """(E, unit columns N x K) of the finite-difference H at t (potential ``v``) from
        scratch: 3-point :func:`states.lowest_pairs`; 5-point from N = 1024 the 3-point pairs refined by
        :func:`states.warm_banded` (vouched for by the 3-point Sturm count; 2 CPUs, h2plus_moving's
        molecule: 4.8 ms against Davidson's 11.8 ms at N = 2048, 19.9 against 27.8 ms at
        8192; ``benchmarks/archive/anchor_5point.py``, ``anchor_5point_cpu2_20261126T1109.txt``), else -- or where that is refused -- the banded solver
        (:func:`states.pentadiagonal`) up to N = ``direct_max``, beyond it :func:`states.davidson` from
        the 3-point pairs (the dense solver where it does not converge, said once:
        :meth:`_iterate`)."""
        g = self.config.grid
        m = min(self.K, g.n)
        if g.stencil == 3:
            return states.tridiagonal(g, v, m)
        if g.n >= 1024:
            got = states.warm_banded(g, v, *states.tridiagonal(g, v, m), states.residual_bound(g, v, self.tol))
            if got is not None:
                return got
        if not self.iterative:
            return states.pentadiagonal(g, v, m)
        from mgemm.arrays import to_host
        E, X, _ = self._iterate(t, v, states.fd_start(g, v, self.block))
        return to_host(E)[:m], to_host(X)[:, :m]

    @property
    def window_steps(self):
        """Steps a window spans (:meth:`window`: the 3- and 5-point pairs from N =
        ``warm_min``), or None where each call is solved alone."""
        c = self.config
        if not windowed(c.grid, self.warm_min):
            return None
        return self.anchor_calls * c.output.populations_interval

    def _potentials(self, times):
        """The molecular potentials at ``times`` (the field left out, as :func:`states.eigenstates`
        leaves it: the same bits as its soft_core), len(times) x N, in one array pass
        (:func:`tdse.model.potential.total_many`)."""
        import dataclasses

        from .potential import total_many
        molecule = dataclasses.replace(self.config.potential, field=None)
        times = np.asarray(times, dtype=np.float64)
        return states.finite(self.config, total_many(molecule, points(self.config.grid), times), times)

    def window(self, a):
        """The finite-difference pairs (E, phi as :func:`states.eigenstates` gives them) at the
        populations times of window ``a`` -- the steps (a C + j) I, j < C (C =
        ``anchor_calls``, I the populations interval), those within the run -- computed
        together and kept until another window is asked for: the first, the anchor, from
        scratch (:meth:`_scratch`), the others by :func:`states.warm_banded_many` from it (from
        scratch for a member it does not vouch for, counted in :attr:`restarts`).  A window
        depends on ``a`` alone, so a resumed run, the eigenpairs thread, the workers and the
        loop compute the same bits; its times are the steps' own (step x dt, as the loop's)."""
        if self._window is not None and self._window[0] == a:
            return self._window[1]
        c = self.config
        g, every, calls = c.grid, c.output.populations_interval, self.anchor_calls
        steps = [s for s in range(a * calls * every, (a + 1) * calls * every, every)
                 if s <= c.time.steps] or [a * calls * every]
        V = self._potentials([s * c.time.dt for s in steps])
        self.solved += len(steps)
        m = min(self.K, g.n)
        anchor = self._scratch(steps[0] * c.time.dt, V[0])
        got = [anchor] + states.warm_banded_many(
            g, V[1:], *anchor, [states.residual_bound(g, v, self.tol) for v in V[1:]])
        for j, pair in enumerate(got):
            if pair is None:
                self.restarts += 1
                got[j] = self._scratch(steps[j] * c.time.dt, V[j])
        # as states.eigenstates() gives them (states.as_states), the window's rows signed at once
        phi = states.signed(np.concatenate([X.T for _, X in got]) / np.sqrt(g.dx)).reshape(len(got), m, g.n)
        self._window = (a, [(E, p) for (E, _), p in zip(got, phi)], anchor)
        return self._window[1]

    def single(self, t):
        """The pairs at t as a call gives them (:meth:`__call__`, the same bits), where t is
        a populations time of a 3- or 5-point window computing only what t needs: the
        window's anchor (kept) and t's member alone (:func:`states.warm_banded`: a member's pairs
        depend on its own iterations alone) -- the loop's own calls while the workers that
        compute whole windows start (~25 ms a call against ~0.2 s a window at N = 8192,
        5-point).  Anything else: as :meth:`__call__`."""
        return self(t, alone=True)

    def anchor_time(self, t):
        """The anchor of a call at t: the latest multiple of ``anchor_calls``
        (:data:`states.WARM_ANCHOR_CALLS`) populations intervals at or before t (a time within 1e-9
        of a span's end counted as at it, so a due step's time is its own anchor despite
        rounding)."""
        c = self.config
        span = self.anchor_calls * c.output.populations_interval * c.time.dt
        return math.floor(t / span + 1e-9) * span

    def _finish(self, E, V):
        from mgemm.arrays import to_host
        E, V = to_host(E), to_host(V)
        self._clusters(E)
        return states.as_states(self.config.grid, E[:self.K], V[:, :self.K])

    def _clusters(self, E):
        E = np.asarray(E)[:self.K]
        self.clusters = [[i, i + 1] for i in range(len(E) - 1) if E[i + 1] - E[i] < self.cluster_gap]


def windowed(grid, warm_min=None) -> bool:
    """Whether a tracker on ``grid`` computes its calls by windows (:meth:`Tracker.window`:
    the 3- and 5-point pairs from N = ``warm_min``, default :data:`states.WARM_MIN_N`), not
    each call alone (the DVR's, and below ``warm_min``)."""
    return grid.stencil in (3, 5) and grid.n >= (states.WARM_MIN_N if warm_min is None else warm_min)
