"""The one evolve loop: every kind of run steps here, from save point to save point (QuTiP's
``Solver.run`` over ``integrator.run(tlist)``, dynamiqs' ``lax.scan`` saving at ``tsave``,
SciPy's ``solve_ivp`` driver apart from its solvers).

:func:`evolve` steps psi (a vector, or an N x B block of B states: a batch is an axis, not
a loop) and, when given, the propagator U(t).  What a run keeps -- its observables, its
snapshots, the time-error estimate, the progress bar -- is a :class:`Sink`: each says at
which steps it wants the state (:meth:`Sink.next_point`), and between two such save
points the loop only steps (:func:`advance`: on a GPU one graph launch a step, nothing
else).  A :class:`Observer` is a sink that wants every step (``before`` and ``after`` each
one): it is there for users who ask for a per-step hook, and takes the run off that fast
path.  Interrupts and checkpoints are the driver's (:mod:`tdse.run.driver`): the loop
holds no file.
"""
from __future__ import annotations

import contextlib
import gc
import threading
import time
from dataclasses import dataclass

from .interrupts import acknowledge, check_pending

__all__ = ["State", "Sink", "Observer", "evolve", "advance"]


@dataclass
class State:
    """Where the run is: after ``step`` steps (t = step dt), psi(t) and U(t) (or None) on
    the run's device; ``resumed``: the run continues an earlier one from this step."""
    step: int
    t: float
    psi: object
    U: object = None
    resumed: bool = False


class Sink:
    """What a run keeps, handed the state at its save points by :func:`evolve`:
    :meth:`begin` with the first state, :meth:`save` at each step :meth:`next_point` names,
    :meth:`end` when the loop has finished, :meth:`fail` when it stops on an exception (the
    last state and the exception; a sink may raise another in its place, as the interrupts
    sink turns a signal into :class:`tdse.run.interrupts.Interrupted`) -- one of the two:
    an exception in a sink's :meth:`end` fails it and the sinks after it.

    ``every``: a save point every that many steps and at the last step -- ``last``, the
    run's (None: the loop's stop); with ``every`` None only there.  Override
    :meth:`next_point` for other points."""

    every: int | None = None
    last: int | None = None

    def next_point(self, step: int, stop: int):
        """The first step after ``step`` (and at most ``stop``, the loop's last) at which this
        sink wants the state, or None for none."""
        e, end = self.every, (stop if self.last is None else self.last)
        p = end if not e else min((step // e + 1) * e, end)
        return p if step < p <= stop else None

    def tap(self, j0: int, j1: int, saved: bool):
        """Where psi goes after steps between save points, with no call back into Python:
        {step k: [arrays]} for steps j0 < k <= j1 (each filled with psi(t_k) where psi
        lives, on its stream, by :meth:`tdse.numerics.propagators.Steps.advance`), or None.
        Called before each advance from ``j0`` to ``j1``, in order; ``saved``: this sink is
        :meth:`save` d at ``j1`` after it (a step it takes there is not a tap).  (The
        observables' rows: a row every ``observables_every`` steps, a save point only
        where the host is needed.)  Rows tapped past the state a :meth:`fail` gets were not
        filled."""
        return None

    def begin(self, state: State):
        pass

    def save(self, state: State):
        pass

    def end(self, state: State):
        pass

    def fail(self, state: State, error: BaseException):
        pass


class Observer(Sink):
    """A per-step hook: :meth:`before` each step j with psi(t_j), :meth:`after` with the
    state after it (every step is then a save point: the loop calls back into Python each
    step -- ~1 us a hook, off the fast path; a :class:`Sink` with ``every`` is the way to
    look at a run every so many steps)."""

    every = 1

    def before(self, j: int, state: State):
        pass

    def after(self, state: State):
        pass

    def save(self, state: State):
        self.after(state)


_FREEZE = {"depth": 0, "frozen": False}    # evolve calls under way (in any thread); ours?
_FREEZE_LOCK = threading.Lock()


@contextlib.contextmanager
def _frozen_heap():
    """The objects alive when the loop starts kept out of the cyclic collector's passes
    (``gc.freeze``) until the last loop under way (nested, or in other threads) ends: a
    full collection during a run otherwise walks every object the imports and the set-up
    made -- 47-50 ms of the loop's thread on an H100's host, twice in 20000 steps of
    N = 8192 (``step_attrib_h100x1_20261126T1612_3point.txt``; one of 5 ms with the freeze,
    ``..._1620_3point.txt``), where the host runs ~22 ms ahead of the device at most.
    Collections still run; they look only at what the loops make.  Nothing is frozen
    where the collector is off."""
    with _FREEZE_LOCK:
        if _FREEZE["depth"] == 0 and gc.isenabled():
            gc.freeze()
            _FREEZE["frozen"] = True
        _FREEZE["depth"] += 1
    try:
        yield
    finally:
        with _FREEZE_LOCK:
            _FREEZE["depth"] -= 1
            if _FREEZE["depth"] == 0 and _FREEZE["frozen"]:
                gc.unfreeze()
                _FREEZE["frozen"] = False


#: a GPU loop of at least this many steps starts with a context switch on its GPUs
#: (:func:`_settle`)
SETTLE_MIN_STEPS = 1000


def _settle(plan, steps) -> float:
    """Before a GPU loop of SETTLE_MIN_STEPS or more: :func:`mgemm.arrays.context_switch`
    on each of the run's GPUs where this process issued work on a second stream
    (:func:`mgemm.arrays.side_work`: mgemm's band engine, e.g. ``method = "auto"``'s
    calibration where it times the dense exponent -- since 2026-11-30 only where that
    exponent's lower bound leaves it a candidate, :data:`tdse.numerics.cost.DENSE_OUT`, so
    not for a large stencil run), so that its steps are scheduled as before it: after such work a 3-point
    step at N = 8192 took 143 against 130 us on an H100 for the rest of the process
    (``stream_side_h100x1_20261126T1905.txt``).  ~0.15-0.2 s a GPU where it is made, a
    fixed cost of the loop's start (the seconds are returned: the run file keeps them as
    ``context_switch_seconds``); none where no such work was done (atom_hhg's 0.16 s of an
    H200 run, ``small_run_parts_h200x1_20261129T1429_atom_hhg.txt``).  The option
    ``run.context_switch = false`` turns it off."""
    backend = getattr(plan, "backend", None)
    if backend is None or backend.name != "cupy" or steps < SETTLE_MIN_STEPS:
        return 0.0
    if not plan.config.run.context_switch:
        return 0.0
    from mgemm.arrays import context_switch, side_work
    t0 = time.perf_counter()
    for d in backend.devices or (backend.xp.cuda.Device().id,):
        if side_work(d):
            context_switch(backend.xp, d)
    return time.perf_counter() - t0


def advance(stepper, X, j0: int, j1: int, operator: bool = False, taps=None):
    """``X`` (psi, an N x B block, or with ``operator`` U(t)) stepped from step ``j0`` to
    ``j1`` by ``stepper`` (:class:`tdse.numerics.propagators.Steps`: a single run's
    :class:`~tdse.numerics.stepper.Stepper` through its registered propagator, a batch's, the
    nuclei's): nothing but the steps -- on a GPU one graph launch each -- and the copies
    of psi that ``taps`` asks for (:meth:`Sink.tap`)."""
    return stepper.advance(X, j0, j1, operator=operator, taps=taps)


def evolve(plan, psi0, sinks=(), *, start=0, stop=None, U0=None, resumed=False,
           stepper=None, settle=True) -> State:
    """Step ``psi0`` (and ``U0``: the propagator, or None) from step ``start`` to ``stop``
    (default the plan's last step) with the plan's scheme and exponentials, handing the
    state to the ``sinks`` (:class:`Sink`, :class:`Observer`) at their save points; returns
    the final :class:`State` (psi and U on the plan's device: NumPy or CuPy arrays).
    ``psi0`` may be None (U only), and a host array on a GPU plan (it is copied there:
    ``tdse.evolve(plan, plan.psi0)`` as docs/PYTHON.md has it).  ``stepper``: one already
    built for this plan (default: a new one); ``settle``: start a GPU loop of
    :data:`SETTLE_MIN_STEPS` or more with a context switch (:func:`_settle`; its seconds
    added to ``stepper.context_switch_seconds``) -- False where the caller has made it
    already, e.g. before a clock that times the steps alone."""
    stepper = stepper or plan.stepper()
    xp = stepper.xp          # psi(0) and U(0) given on the host go where the plan steps
    psi0 = None if psi0 is None else xp.asarray(psi0)
    U0 = None if U0 is None else xp.asarray(U0)
    dt = plan.config.time.dt
    stop = plan.steps if stop is None else stop
    state = State(start, start * dt, psi0, U0, resumed)
    if settle:
        stepper.context_switch_seconds += _settle(plan, stop - start)
    backend = getattr(plan, "backend", None)
    limit = backend.limit() if backend is not None else contextlib.nullcontext()
    with limit, _frozen_heap():        # the plan's BLAS threads (prepare(threads=...))
        return _run(stepper, dt, start, stop, state, list(sinks))


def _run(stepper, dt, start, stop, state, sinks):
    hooks = [s for s in sinks if isinstance(s, Observer)]     # per-step: before each step
    tappers = [i for i, s in enumerate(sinks)          # those with a Sink.tap of their own
               if getattr(type(s), "tap", Sink.tap) is not Sink.tap]
    ended = 0           # each sink gets end or fail: a signal during the ends (a GPU's
    try:                # snapshots written at the end) fails the sinks that had not ended
        for s in sinks:
            s.begin(state)
        nexts = [s.next_point(start, stop) for s in sinks]
        j = start
        while j < stop:
            k = min((p for p in nexts if p is not None), default=stop)
            for h in hooks:
                h.before(j, state)
            taps = None if state.psi is None or not tappers else _taps(sinks, tappers, j, k, nexts)
            psi = None if state.psi is None else advance(stepper, state.psi, j, k, taps=taps)
            U = None if state.U is None else advance(stepper, state.U, j, k, operator=True)
            state = State(k, k * dt, psi, U)
            for i, s in enumerate(sinks):
                if nexts[i] == k:
                    s.save(state)
                    nexts[i] = s.next_point(k, stop)
            check_pending()        # a signal whose KeyboardInterrupt Python dropped
            j = k
        for s in sinks:
            s.end(state)
            ended += 1
    except BaseException as e:   # noqa: BLE001 -- the sinks decide; re-raised below
        if isinstance(e, KeyboardInterrupt):
            # the signal's note is this exception, acted on now: a sink's fail that passes a
            # check_pending (the look-ahead spawning a task for the pairs of the rows a fail
            # flushes) must not raise it again -- that had cut the sinks after it, and a
            # SIGINT in the loop left a .part file said to be "nothing written"
            acknowledge()
        for s in sinks[ended:]:
            s.fail(state, e)
        raise
    return state


def _taps(sinks, tappers, j, k, nexts):
    """The :meth:`Sink.tap` s of ``sinks[i]`` for i in ``tappers`` for the advance from
    ``j`` to ``k``, merged: {step: [arrays]} (a sink's own dict where it is the only one;
    no sink's lists changed), or None."""
    got = [t for t in (sinks[i].tap(j, k, nexts[i] == k) for i in tappers) if t]
    if len(got) < 2:
        return got[0] if got else None
    big = max(got, key=len)                # (copied at C speed; a step of the others' made
    out = dict(big)                        # anew, its arrays in the sinks' order)
    for step in {s for t in got if t is not big for s in t}:
        out[step] = [row for t in got for row in t.get(step, ())]
    return out
