"""A fixed step with its error estimate on a GPU as one CUDA graph launch.

:class:`tdse.numerics.adaptive.EstimatingStepper` takes, at each step j, the local error's
leading term L_j of psi_j (:class:`tdse.numerics.local_error.LocalError`: one kernel of
words on a vector), the carried error e_(j+1) = S'_j e_j + L_j (the carrier's midpoint
step S', :func:`tdse.numerics.adaptive.transport_config`) and psi_(j+1) = S_j psi_j.  Each
of the three is a graph of its own, and with each a row upload, a copy in and a copy out:
on one H200 the host's ~400 us a step for atom_hhg against ~200 us of the device's
(``small_run_parts_h200x1_20261129T1453_atom_hhg.txt``).  :class:`EstimateGraph` captures
the three as one graph -- the words on psi where the run's step reads it, the carrier's step
of e, e += L, the run's step of psi -- so that a step is the three rows' uploads and one
launch, with psi and e kept in the step graphs' buffers from save point to save point
(the same kernels on the same buffers: the same numbers as the three graphs).
"""
from __future__ import annotations

__all__ = ["EstimateGraph"]


class EstimateGraph:
    """The fused step of ``main`` and ``carrier`` (:class:`tdse.numerics.graphs.GraphStep`
    of psi and of e) with the one-kernel estimate of ``local`` (its buffers ``g``,
    :meth:`LocalError.graph_state`).  Made by :meth:`make` (None where a part is not a
    graph)."""

    def __init__(self, main, carrier, local, g, counts):
        self.main, self.carrier, self.local, self.g = main, carrier, local, g
        self.counts = counts      # the steppers' methods: their exponentials and terms
        self.cp = main.cp
        self.graphs = {}          # (patterns, buffers) -> the captured step
        L = g["words"]
        self.L = L["out"][L["R"]]     # the one kernel's sum: the step's L (dt^n applied)
        self.steps = 0            # steps taken as one launch

    @classmethod
    def make(cls, est):
        """The fused step for an :class:`~tdse.numerics.adaptive.EstimatingStepper` of fixed
        steps on a GPU, or None: both steps Chebyshev graph steps of a vector
        (:class:`tdse.numerics.propagators.ChebyshevGraphs`), the estimate of a vector one
        kernel (the length gauge, ``run.graphs``)."""
        from .propagators import ChebyshevGraphs
        parts, counts = [], []
        for st in (est.base, est._carrier(1)):
            prop = getattr(st, "propagator", None)
            if not isinstance(prop, ChebyshevGraphs) or not prop.on or not prop._graph():
                return None
            parts.append(prop.graph)
            counts.append(st.method)
        local, n = est.local, est.config.grid.n
        _, A = local.letters(0.0, est.config.time.dt)
        if not local._graphs_take(A):
            return None
        g = local.graph_state((n,))
        if g["words"] is None or g["graph"] is None:     # (made by an unfused step first)
            return None
        return cls(parts[0], parts[1], local, g, counts)

    def advance(self, psi, e, j0: int, j1: int):
        """(psi, e, j): both stepped from step ``j0`` towards ``j1``, a launch a step, while
        both steps are planned for the graphs (j: the step reached; psi and e themselves
        where none was)."""
        from .graphs import copy_in, copy_out
        main, car, local, cp = self.main, self.carrier, self.local, self.cp
        dt = local.config.time.dt
        before = [(s.exponentials, s.cheb_terms) for s in (main, car)]
        j = j0
        while j < j1 and main._ready(j) and car._ready(j):
            if j == j0:
                copy_in(cp, main.Xin, psi)
                copy_in(cp, car.Xin, e)
            pm, pc = main.stage(j), car.stage(j)
            host, _ = local.letters(j * dt, dt, j)
            local._letters_in(self.g, host, dt, j)
            bufs = (main.P.data.ptr, main.A.data.ptr, car.P.data.ptr, car.A.data.ptr,
                    self.g["D"].data.ptr)
            graph = self.graphs.get((pm, pc, bufs))
            if graph is None:
                if any(k[2] != bufs for k in self.graphs):
                    self.graphs.clear()          # a buffer moved: the graphs read the old one
                graph = self.graphs[(pm, pc, bufs)] = self._capture(pm, pc)
            graph.launch()
            j += 1
        self.steps += j - j0
        for s, c, (e0, k0) in zip((main, car), self.counts, before):
            c.exponentials += s.exponentials - e0
            c.cheb_terms += s.cheb_terms - k0
        if j == j0:
            return psi, e, j
        return copy_out(cp, main.Xin, psi.shape), copy_out(cp, car.Xin, e.shape), j

    def _capture(self, pm, pc):
        from .graphs import capture
        main, car, local, g, cp = self.main, self.carrier, self.local, self.g, self.cp
        L = self.L.reshape(car.Xin.shape)         # (the steps' buffers are N x 1)

        def body():
            local._words_body(g, src=main.Xin)    # L of psi_j, before its step
            car._body(pc)                         # S' e_j, in the carrier's Xin
            cp.add(car.Xin, L, out=car.Xin)       # + L_j
            main._body(pm)                        # psi_(j+1), in the step's Xin
        return capture(cp, body)
