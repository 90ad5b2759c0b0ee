"""How a run's steps are taken, registered by (method, backend): ``PROPAGATORS[("chebyshev",
"cupy")]`` (SciPy's ``solve_ivp`` driver apart from its ``OdeSolver`` classes; QuTiP's
integrators by name).  The method (:mod:`tdse.numerics.exponentials`) says what one
exponential exp(-i dt G_k) is; the propagator says how a step of them runs on the backend
(the array module's name, ``"numpy"`` or ``"cupy"``).  :func:`make` is the one place the
path is chosen, once per stepper, never per step; a (method, backend) with no entry is
:class:`Launched`.

* :class:`Launched` -- every method on the CPU, and the GPU's fallback: each factor F_k of
  the step (:meth:`tdse.numerics.stepper.Stepper.factors`) applied in turn, each of its
  kernels launched from Python.
* :class:`ChebyshevGraphs` -- ``("chebyshev", "cupy")``: a step of psi (a vector) is one
  CUDA graph launch (:class:`tdse.numerics.graphs.GraphStep`, either gauge); an N x B
  block or U(t), a host-only potential (the graphs' kernels have V from formulas), the
  velocity gauge with the DVR beyond its GEMM's N, or ``run.graphs = false``: launched.
* :class:`DenseGraphs` -- ``("dense" | "taylor", "cupy")``: a step of psi by the dense
  exponent on one GPU as one graph (:class:`tdse.numerics.dense_graph.DenseGraphStep`)
  where that path allows (:func:`tdse.numerics.dense_graph.dense_available`), else launched.

Every stepper (:class:`Steps`: a single run's, a scan's block, the nuclei's, the estimating
one) advances with :meth:`Steps.advance` from save point to save point
(:func:`tdse.run.loop.evolve`): nothing but the steps between.
"""
from __future__ import annotations

from mgemm.arrays import get_xp

from .graphs import copy_in

__all__ = ["Steps", "tap", "each_step", "Launched", "ChebyshevGraphs", "DenseGraphs", "PROPAGATORS", "register", "make",
           "FORMULA_DEVICE_BOUNDS_MIN_N"]

#: from this N a formula's GPU graph step takes its spectral bounds on the device
#: (`python -m benchmarks formula`, H200): h2plus_moving_large (N = 8192, 3-point) as a
#: formula x1.31 the soft-core step with the host's bounds, x1.01 with the device's;
#: h2plus_moving (N = 256, DVR) x0.96 host, x1.42 device (benchmarks/results/
#: formula_h200x1_20261128T095909.json, _095911, _100100, _100103; the threshold between
#: the two measured sizes is a choice)
FORMULA_DEVICE_BOUNDS_MIN_N = 2048


class Steps:
    """Anything with ``step(X, j)`` (and ``step_operator(U, j)``): :meth:`advance` steps it
    from save point to save point."""

    def step(self, X, j: int):
        raise NotImplementedError

    def step_operator(self, U, j: int):
        raise NotImplementedError

    def advance(self, X, j0: int, j1: int, into=None, operator: bool = False, taps=None):
        """``X`` (psi, an N x B block, or with ``operator`` U(t)) stepped from step ``j0`` to
        ``j1``: nothing but the steps (on a GPU one graph launch each).  ``into``: an array
        of X's shape and backend that receives the result (returned), e.g. a row of a
        block kept where psi lives; None: the last step's own array.  ``taps``: {step k:
        [arrays]} -- X after step k (j0 < k <= j1) copied into each, where X lives and on
        its stream (:func:`tap`; a sink's rows filled without a save point, X only)."""
        if operator:
            for j in range(j0, j1):
                X = self.step_operator(X, j)
        else:
            X = self.steps(X, j0, j1, taps)
        if into is None:
            return X
        into[...] = X
        return into

    def steps(self, X, j0: int, j1: int, taps=None):
        """``X`` stepped from ``j0`` to ``j1``: a loop of :meth:`step` (a propagator on a GPU
        keeps X in its graphs' buffer between steps: :func:`graph_steps`), each of ``taps``'
        steps copied out (:meth:`advance`)."""
        return each_step(self.step, X, j0, j1, taps)


def each_step(step, X, j0: int, j1: int, taps=None):
    """``X`` stepped from ``j0`` to ``j1`` by ``step(X, j)`` a step at a time, ``taps``' steps
    given X after each (:func:`tap`)."""
    for j in range(j0, j1):
        X = step(X, j)
        if taps:
            tap(taps, j + 1, X)
    return X


def tap(taps, k, X):
    """X (the state after step ``k``) copied into each array of ``taps.get(k)``
    (:func:`tdse.numerics.graphs.copy_in`: on a GPU one memcpy queued on the current
    stream, no wait); a callable there is called with X itself, where it lives, before the
    next step (it may queue work on X's stream, or add to X in place: the estimating
    stepper's local errors, :meth:`tdse.numerics.adaptive.EstimatingStepper.steps`)."""
    rows = taps.get(k)
    if rows:
        xp = get_xp(X)
        for row in rows:
            if callable(row):
                row(X)
            else:
                copy_in(xp, row, X)


def graph_steps(graph, counts, X, j0: int, j1: int, launched, taps=None):
    """``X`` stepped from ``j0`` to ``j1`` by ``graph`` (a :class:`tdse.numerics.graphs.GraphStep`:
    psi kept in its buffer, a row upload and a graph launch a step, and ``taps``' copies
    from it), a step it leaves to the launched path by ``launched(X, j)``; the graph's
    work added to ``counts``' exponentials and cheb_terms."""
    while j0 < j1:
        e0, k0 = graph.exponentials, graph.cheb_terms
        X, j = graph.advance(X, j0, j1, taps)
        counts.exponentials += graph.exponentials - e0
        counts.cheb_terms += graph.cheb_terms - k0
        if j < j1:
            X = launched(X, j)
            j += 1
            if taps:
                tap(taps, j, X)
        j0 = j
    return X


#: (method name, backend name) -> the propagator class that steps it (:func:`make`)
PROPAGATORS: dict = {}


def register(*keys):
    """Class decorator: the class steps each (method, backend) in ``keys``."""
    def add(cls):
        for key in keys:
            PROPAGATORS[key] = cls
        return cls
    return add


class Launched(Steps):
    """Each factor F_k = exp(-i dt G_k) of a step applied in turn (psi, an N x B block, or
    U(t), on one device or in column bands over several GPUs)."""

    def __init__(self, stepper):
        self.stepper = stepper

    def step(self, X, j: int):
        for F in self.stepper.factors(j):
            X = F.apply(X)
        return X

    def step_operator(self, U, j: int):
        for F in self.stepper.factors(j):
            U = F.apply_operator(U)
        return U


register(("dense", "numpy"), ("taylor", "numpy"), ("chebyshev", "numpy"))(Launched)


def _plain(stepper) -> bool:
    """The graphs' kernels hold H with V from formulas (either gauge): not a potential
    evaluated on the host (a Python function)."""
    from ..model.potential import host_only
    return not host_only(stepper.config.potential)


@register(("chebyshev", "cupy"))
class ChebyshevGraphs(Launched):
    """A step of psi one CUDA graph launch of the block Chebyshev series (made at the first
    step from a one-member :class:`tdse.numerics.stepper.BatchStepper`; its counters added
    to the method's); anything the graphs do not take is :class:`Launched`.  ``graph``:
    the :class:`tdse.numerics.graphs.GraphStep`, False where none could be made, None
    before the first step."""

    def __init__(self, stepper):
        super().__init__(stepper)
        self.on = _plain(stepper)
        self.graph = None

    def _graph(self):
        if self.graph is None:
            from . import graphs
            st = self.stepper
            batch = st.as_batch()
            # a formula's bounds from its batch, on the device (FormulaBatch.bounds_many), from
            # FORMULA_DEVICE_BOUNDS_MIN_N: the host's pass over the whole grid (no extreme
            # points known) held the step back there
            on_device = st.config.potential.V and st.config.grid.n >= FORMULA_DEVICE_BOUNDS_MIN_N
            bounds = None if on_device else st.bounds_many
            self.graph = graphs.GraphStep(batch, bounds) if graphs.available(batch) else False
        return self.graph

    def step(self, X, j: int):
        return self.steps(X, j, j + 1)

    def steps(self, X, j0: int, j1: int, taps=None):
        if self.on and X.ndim == 1 and self._graph():   # a vector in, a vector out (no reshapes)
            return graph_steps(self.graph, self.stepper.method, X, j0, j1, super().step, taps)
        return each_step(super().step, X, j0, j1, taps)


@register(("dense", "cupy"), ("taylor", "cupy"))
class DenseGraphs(Launched):
    """A step of psi by the dense exponent as one CUDA graph (made at the first step where
    :func:`tdse.numerics.dense_graph.dense_available`); else :class:`Launched`.  ``graph``:
    the :class:`tdse.numerics.dense_graph.DenseGraphStep`, False, or None before the first
    step."""

    def __init__(self, stepper):
        super().__init__(stepper)
        self.on = _plain(stepper)
        self.graph = None

    def step(self, X, j: int):
        if self.on and X.ndim == 1:
            if self.graph is None:
                from . import dense_graph
                st = self.stepper
                self.graph = dense_graph.DenseGraphStep(st) if dense_graph.dense_available(st) else False
            if self.graph:
                return self.graph.step(X, j)
        return super().step(X, j)


def make(stepper):
    """The propagator registered for ``stepper``'s method and backend; a pair with no entry
    (a new method: :mod:`tdse.numerics.exponentials` needs only its class) is
    :class:`Launched`, its factors applied in turn."""
    key = (stepper.method.name, stepper.xp.__name__.split(".")[0])
    return PROPAGATORS.get(key, Launched)(stepper)
