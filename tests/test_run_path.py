"""The run path (#22): the prepared plan, exponentials by name, the one evolve loop from save
point to save point with its sinks (and per-step observers), psi as an N x B block."""
from __future__ import annotations

import dataclasses
import os

import numpy as np
import pytest
import scipy.sparse.linalg

import tdse
from tdse import config as cfgmod
from tdse.model import hamiltonian
from tdse.numerics import exponentials
from tdse.studies.validate import make_config


def _plan(method, stencil=3, n=64, steps=20, dt=0.005, **kw):
    cfg = make_config(n=n, stencil=stencil, dt=dt, steps=steps, method=method, tol=1e-13,
                      scheme="cfm4", **kw)
    return tdse.prepare(cfg, backend="numpy", check_resolution=False)


def test_registry_holds_every_config_method():
    names = set(cfgmod.METHODS)
    assert set(exponentials.METHODS) | {exponentials.AUTO} == names
    for name, cls in exponentials.METHODS.items():
        assert cls.name == name and exponentials.get(name) is cls
    assert exponentials.get("auto") is exponentials.Dense  # until resolved
    assert {c.name for c in exponentials.candidates()} == {"dense", "chebyshev"}
    with pytest.raises(ValueError, match="method must be one of"):
        exponentials.get("krylov")


def test_plan_is_frozen_and_resolves_auto():
    plan = _plan("auto")
    assert not exponentials.is_auto(plan.config.propagator.method)
    assert plan.method_choice["chosen"] == plan.config.propagator.method
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.config = None
    assert plan.states.shape == (4, 64) and plan.psi0.shape == (64,)
    assert plan.backend.name == "numpy" and plan.backend.threads >= 1


def test_prepare_times_its_phases_into_the_plan_and_the_file(tmp_path):
    """prepare() times each phase of the set-up (#23: the precheck and auto's calibration
    are the run-overhead suite's own rows): RunPlan.prepare_seconds holds them, each >= 0,
    the precheck 0 where one was given (none made); the
    run file's prepare_seconds attribute is the same as JSON."""
    import json

    import h5py
    from tdse.run.driver import run
    keys = {"memory_check", "eigenstates_h0", "precheck", "backend", "calibration"}
    auto = _plan("auto")
    assert set(auto.prepare_seconds) == keys and min(auto.prepare_seconds.values()) >= 0
    fixed = _plan("chebyshev")
    assert auto.prepare_seconds["calibration"] > 0 and auto.prepare_seconds["precheck"] > 0
    again = tdse.prepare(fixed.config, backend="numpy", check_resolution=False, pc=fixed.precheck)
    assert again.prepare_seconds["precheck"] == 0.0
    path = run(auto, str(tmp_path)).path
    with h5py.File(path, "r") as f:
        assert json.loads(f.attrs["prepare_seconds"]) == pytest.approx(auto.prepare_seconds)


def test_the_run_file_places_its_phases_on_a_timeline(tmp_path):
    """The run file's ``timeline`` (#23: where a CLI run's wall goes beyond its loop):
    epoch seconds of run() entered, prepare's start and end, the loop's clock started and
    its end, the close -- in that order when run() prepares (a plan prepared before: its
    prepare first), within the call's own wall-clock window; the loop's marks bracket the
    file's loop clock (wall_seconds)."""
    import json
    import time

    import h5py
    from tdse.run.driver import run
    plan = _plan("chebyshev", steps=30)
    for given in (plan.config, plan):
        a = time.time()
        path = run(given, str(tmp_path), force=True).path
        b = time.time()
        with h5py.File(path, "r") as f:
            tl = json.loads(f.attrs["timeline"])
            loop_clock = float(f.attrs["wall_seconds"])
        assert set(tl) == {"run", "prepare", "loop", "loop_end", "close"}
        p0, p1 = tl["prepare"]
        marks = [tl["run"], p0, p1] if given is plan.config else [p0, p1, tl["run"]]
        marks += [tl["loop"], tl["loop_end"], tl["close"]]
        assert marks == sorted(marks)
        assert (a <= marks[0] if given is plan.config else p1 <= a) and marks[-1] <= b
        assert tl["loop_end"] - tl["loop"] <= loop_clock <= tl["close"] - tl["loop"] + 1e-3


@pytest.mark.parametrize("method,stencil", [("dense", 3), ("chebyshev", 3), ("chebyshev", "dvr"),
                                            ("dense", "dvr"), ("taylor", 5)])
def test_a_block_of_states_is_the_same_loop(method, stencil, rng):
    """psi as N x B: every column equals its own run (the batch is an axis, not a loop)."""
    plan = _plan(method, stencil, dt=0.002)
    B = 3
    X = rng.standard_normal((64, B)) + 1j * rng.standard_normal((64, B))
    X[:, 0] = plan.psi0
    block = tdse.evolve(plan, X).psi
    for b in range(B):
        one = tdse.evolve(plan, X[:, b].copy()).psi
        assert np.abs(block[:, b] - one).max() <= 1e-13 * np.abs(one).max()


def test_observers_see_every_step_in_order():
    plan = _plan("chebyshev", steps=7)
    seen = []

    class Spy(tdse.Observer):
        def begin(self, state):
            seen.append(("begin", state.step))

        def before(self, j, state):
            seen.append(("before", j, state.step))

        def after(self, state):
            seen.append(("after", state.step, round(state.t / plan.config.time.dt)))

        def end(self, state):
            seen.append(("end", state.step))
    final = tdse.evolve(plan, plan.psi0, [Spy()], start=2, stop=5)
    assert final.step == 5
    assert seen == [("begin", 2), ("before", 2, 2), ("after", 3, 3), ("before", 3, 3),
                    ("after", 4, 4), ("before", 4, 4), ("after", 5, 5), ("end", 5)]


def test_sinks_get_the_state_at_their_save_points_and_the_loop_only_steps_between():
    """A Sink is handed the state at the steps it names (``every``, and the last; or its own
    next_point), in sink order at a shared point; between points the loop calls nothing but
    the stepper, and the result is the bare loop's bit for bit."""
    plan = _plan("chebyshev", steps=10)
    stepper, seen = plan.stepper(), []
    step = stepper.propagator.step      # what takes the steps (tdse.numerics.propagators)
    calls = []

    def counted(psi, j):
        calls.append(j)
        return step(psi, j)
    stepper.propagator.step = counted

    class Every(tdse.Sink):
        def __init__(self, name, every):
            self.name, self.every = name, every

        def save(self, state):
            seen.append((self.name, state.step, round(state.t / plan.config.time.dt)))

    class At(tdse.Sink):
        def next_point(self, step, stop):
            return next((s for s in (2, 7) if step < s <= stop), None)

        def save(self, state):
            seen.append(("at", state.step))
            assert np.array_equal(state.psi, tdse.evolve(plan, plan.psi0, stop=state.step).psi)

    final = tdse.evolve(plan, plan.psi0, [Every("four", 4), At(), Every("three", 3)], stepper=stepper)
    assert seen == [("at", 2), ("three", 3, 3), ("four", 4, 4), ("three", 6, 6), ("at", 7),
                    ("four", 8, 8), ("three", 9, 9), ("four", 10, 10), ("three", 10, 10)]
    assert calls == list(range(10))
    assert np.array_equal(final.psi, tdse.evolve(plan, plan.psi0).psi)


def test_a_sink_that_wants_no_point_sees_begin_and_end_only():
    plan = _plan("chebyshev", steps=5)
    seen = []

    class Ends(tdse.Sink):
        def next_point(self, step, stop):
            return None

        def begin(self, state):
            seen.append(("begin", state.step))

        def save(self, state):
            seen.append(("save", state.step))

        def end(self, state):
            seen.append(("end", state.step))

    assert tdse.evolve(plan, plan.psi0, [Ends()]).step == 5
    assert seen == [("begin", 0), ("end", 5)]


def test_a_failing_sink_lets_every_sink_see_the_failure_at_the_last_state():
    plan = _plan("chebyshev", steps=8)
    failed = []

    class Boom(tdse.Sink):
        every = 3

        def save(self, state):
            if state.step == 6:
                raise RuntimeError("boom")

    class Watch(tdse.Sink):
        every = 2

        def fail(self, state, error):
            failed.append((state.step, str(error)))

    with pytest.raises(RuntimeError, match="boom"):
        tdse.evolve(plan, plan.psi0, [Watch(), Boom()])
    assert failed == [(6, "boom")]


def test_a_signal_in_the_loop_is_not_raised_again_by_a_sinks_fail():
    """A SIGINT noted and raised in the loop (tdse.run.interrupts: its note pending until
    acted on) reaches every sink's fail once: a fail that passes a check_pending -- the
    look-ahead's spawn of a task for the pairs of the rows the observables' fail flushes --
    does not raise it again and cut the sinks after it (the interrupts sink, which closes
    the file and names it: a SIGINT in `tdse run`'s loop had said "nothing was written"
    beside a .part file)."""
    from tdse.run import interrupts
    plan = _plan("chebyshev", steps=8)
    failed = []

    class Signal(tdse.Sink):
        every = 3

        def save(self, state):
            if state.step == 6:
                interrupts._PENDING.append("SIGINT")      # as interrupts._on_signal does
                raise KeyboardInterrupt

    class Flushes(tdse.Sink):
        def fail(self, state, error):
            interrupts.check_pending()
            failed.append(("flushes", state.step))

    class Last(tdse.Sink):
        def fail(self, state, error):
            failed.append(("last", state.step, type(error).__name__))

    with pytest.raises(KeyboardInterrupt):
        tdse.evolve(plan, plan.psi0, [Signal(), Flushes(), Last()])
    assert failed == [("flushes", 6), ("last", 6, "KeyboardInterrupt")]
    assert not interrupts._PENDING


class _FakeCuda:
    """A stand-in for cupy.cuda's driver and runtime calls context_switch makes: records
    them; ``fail`` names a call that raises."""

    def __init__(self, fail=None):
        import types
        self.calls, self.fail, self.current = [], fail, "primary"
        me = self

        def call(name, ret=None):
            def f(*a):
                me.calls.append((name, a))
                if name == me.fail:
                    raise RuntimeError(f"{name} failed")
                if name == "ctxCreate":
                    me.current = f"ctx{a[0]}"
                if name == "ctxSetCurrent":
                    me.current = a[0]
                return me.current if name in ("ctxGetCurrent", "ctxCreate") else ret
            return f
        drv = types.SimpleNamespace(**{n: call(n) for n in
                                       ("ctxGetCurrent", "ctxCreate", "ctxSetCurrent", "ctxDestroy")})
        rt = types.SimpleNamespace(malloc=call("malloc", 1234), **{n: call(n) for n in
                                   ("memset", "deviceSynchronize", "free")})
        dev = types.SimpleNamespace(id=0)
        self.cuda = types.SimpleNamespace(driver=drv, runtime=rt, Device=lambda: dev)

    def names(self):
        return [n for n, _ in self.calls]


def test_graph_steps_hand_the_planners_refused_steps_to_the_launched_path():
    """propagators.graph_steps (how a run's and a batch's advance use a GPU graph): the
    graph takes the steps it can from j0 (GraphStep.advance: psi kept in its buffer), a step
    it leaves (the planner's r = 0) goes to the launched path, the graph goes on after it;
    its exponentials and terms counted once each into the stepper's counters.  A stand-in
    graph (no GPU): a step adds j + 1 to X, its refused steps 17 and 18 add 1000 (j + 1)."""
    from tdse.numerics.propagators import graph_steps, tap

    class Graph:
        exponentials = cheb_terms = 0

        def advance(self, X, j0, j1, taps=None):
            j = j0
            while j < j1 and j not in (17, 18):
                X, j = X + (j + 1), j + 1
                self.exponentials += 2
                self.cheb_terms += 20
                if taps:
                    tap(taps, j, X)
            return X, j

    class Counts:
        exponentials = cheb_terms = 0
    launched = []

    def by_launch(X, j):
        launched.append(j)
        return X + 1000 * (j + 1)
    g, c = Graph(), Counts()
    X = graph_steps(g, c, 0.0, 5, 40, by_launch)
    assert launched == [17, 18]
    assert X == sum(j + 1 for j in range(5, 40)) + 999 * (18 + 19)
    assert (c.exponentials, c.cheb_terms) == (2 * 33, 20 * 33) == (g.exponentials, g.cheb_terms)
    assert graph_steps(g, c, 7.0, 40, 40, by_launch) == 7.0      # no step: X itself
    # taps: X after each named step copied out, by the graph's steps and the launched ones
    taps = {k: [np.full(1, -1.0)] for k in (6, 17, 18, 19, 20, 40)}
    launched.clear()
    Y = graph_steps(g, c, np.zeros(1), 5, 40, by_launch, taps)
    want = {k: sum(j + 1 for j in range(5, k)) + 999 * sum(j + 1 for j in (17, 18) if j < k)
            for k in taps}
    assert {k: float(v[0][0]) for k, v in taps.items()} == want and Y[0] == want[40]


@pytest.mark.parametrize("fail", [None, "ctxCreate", "memset"])
def test_context_switch_restores_the_context_and_frees_what_it_made(fail):
    """mgemm.arrays.context_switch (on a stand-in CUDA): a second context on the device, a
    memset there, then this thread's context current again and the second destroyed, its
    memory freed -- also when the memset fails; when the context cannot be made nothing
    else is called.  True only when the memset ran."""
    from mgemm.arrays import context_switch
    cp = _FakeCuda(fail)
    ok = context_switch(cp, 3)
    names = cp.names()
    assert ok == (fail is None)
    assert cp.current == "primary"
    if fail == "ctxCreate":
        assert names == ["ctxGetCurrent", "ctxCreate"]
        return
    assert ("ctxCreate", (3,)) in cp.calls and names[-2:] == ["ctxSetCurrent", "ctxDestroy"]
    assert cp.calls[-1] == ("ctxDestroy", ("ctx3",)) and "free" in names
    assert names.index("malloc") < names.index("memset") < names.index("free") < names.index("ctxSetCurrent")


def test_a_long_gpu_loop_starts_with_a_context_switch_on_each_gpu(monkeypatch):
    """evolve's _settle: a loop of SETTLE_MIN_STEPS or more on a CuPy backend calls
    context_switch once on each GPU of the run where this process ran work on a second
    stream since (mgemm.arrays.mark_side_work, which mgemm's band engine calls; the real
    switch clears the mark); a GPU without it, a shorter loop, a NumPy run and
    run.context_switch = false call none."""
    import types
    import mgemm.arrays
    from tdse.options import RunOptions
    from tdse.run import loop
    done = []

    def switch(cp, d):
        done.append(d)
        mgemm.arrays._SIDE_WORK.discard(d)
        return True
    monkeypatch.setattr(mgemm.arrays, "context_switch", switch)
    monkeypatch.setattr(mgemm.arrays, "_SIDE_WORK", set())
    cuda = _FakeCuda()
    on = types.SimpleNamespace(run=RunOptions())
    gpu = types.SimpleNamespace(backend=types.SimpleNamespace(name="cupy", devices=(0, 2, 3), xp=cuda),
                                config=on)
    cpu = types.SimpleNamespace(backend=types.SimpleNamespace(name="numpy", devices=None, xp=np),
                                config=on)
    assert loop._settle(gpu, loop.SETTLE_MIN_STEPS) >= 0.0
    assert done == []                       # no work on a second stream: nothing to undo
    mgemm.arrays.mark_side_work(0)
    mgemm.arrays.mark_side_work(2)
    assert loop._settle(gpu, loop.SETTLE_MIN_STEPS) >= 0.0
    assert done == [0, 2]
    assert loop._settle(gpu, loop.SETTLE_MIN_STEPS) >= 0.0
    assert done == [0, 2]                   # switched: the marks are gone
    done.clear()
    mgemm.arrays.mark_side_work(0)
    assert loop._settle(gpu, loop.SETTLE_MIN_STEPS - 1) == 0.0
    assert loop._settle(cpu, 10 ** 6) == 0.0
    gpu.config = types.SimpleNamespace(run=RunOptions(context_switch=False))
    assert loop._settle(gpu, 10 ** 6) == 0.0
    assert done == []
    # evolve itself asks for it with its own number of steps (a CPU plan: no call), adds
    # its seconds to the stepper's (the run file's context_switch_seconds), and not with
    # settle=False (a caller that made it before its clock)
    seen = []
    monkeypatch.setattr(loop, "_settle", lambda plan, steps: seen.append(steps) or 0.25)
    plan = _plan("chebyshev", steps=4)
    st = plan.stepper()
    assert st.context_switch_seconds == 0.0
    tdse.evolve(plan, plan.psi0, start=1, stepper=st)
    tdse.evolve(plan, plan.psi0, start=2, stepper=st)
    assert seen == [plan.steps - 1, plan.steps - 2]
    assert st.context_switch_seconds == 0.5
    tdse.evolve(plan, plan.psi0, stepper=st, settle=False)
    assert seen == [plan.steps - 1, plan.steps - 2] and st.context_switch_seconds == 0.5


def test_the_loop_keeps_the_heap_it_found_out_of_the_collector(monkeypatch):
    """evolve freezes the objects alive at its start (gc.freeze: a full collection then
    skips them) for as long as any loop runs -- a nested one, one in another thread, one
    that fails -- and unfreezes them when the last ends; with the collector off it freezes
    nothing.  Cyclic garbage made during the loop is still collected."""
    import gc
    import threading
    plan = _plan("chebyshev", steps=4)
    seen = []

    class Spy(tdse.Observer):
        def __init__(self, inner=False, boom=False):
            self.inner, self.boom = inner, boom

        def after(self, state):
            seen.append(gc.get_freeze_count())
            if self.inner and state.step == 1:
                tdse.evolve(plan, plan.psi0, [Spy()], stop=2)     # nested: the freeze stays
                seen.append(gc.get_freeze_count())
            if self.boom:
                raise RuntimeError("boom")
    assert gc.get_freeze_count() == 0
    tdse.evolve(plan, plan.psi0, [Spy(inner=True)])
    assert min(seen) > 1000 and gc.get_freeze_count() == 0
    with pytest.raises(RuntimeError, match="boom"):
        tdse.evolve(plan, plan.psi0, [Spy(boom=True)])
    assert gc.get_freeze_count() == 0
    # two threads: the second's loop ends last; the heap stays frozen until then
    go, held = threading.Event(), threading.Event()

    class Hold(tdse.Observer):
        def after(self, state):
            if state.step == 1:
                held.set()
                go.wait(10)
    t = threading.Thread(target=tdse.evolve, args=(plan, plan.psi0, [Hold()]))
    t.start()
    held.wait(10)
    seen.clear()
    tdse.evolve(plan, plan.psi0, [Spy()])
    assert gc.get_freeze_count() > 1000          # the other thread's loop still runs
    go.set()
    t.join()
    assert gc.get_freeze_count() == 0

    class Cycle:
        pass
    collected = []

    class MakeGarbage(tdse.Observer):
        def after(self, state):
            a = Cycle()
            a.self = a
            import weakref
            collected.append(weakref.ref(a))
            if state.step == 3:
                gc.collect()
    tdse.evolve(plan, plan.psi0, [MakeGarbage()])
    assert collected[0]() is None                   # made in the loop: collected in it
    gc.disable()
    try:
        seen.clear()
        tdse.evolve(plan, plan.psi0, [Spy()])
        assert seen == [0] * 4
    finally:
        gc.enable()


def test_a_new_method_needs_no_loop(monkeypatch):
    """Register a method (SciPy's expm_multiply of the dense generator) and step with it:
    the loop, the stepper and the plan are untouched; it agrees with the dense exponent."""
    class Reference(exponentials.Exponential):
        name = "scipy_reference"
        matrix_free = True
        matrices = (1, 3)

        def factor(self, scale, v, a=0.0):        # a: the velocity gauge's A (0 here)
            G = hamiltonian.generator_dense(self.config, scale, v, a=a)
            dt = self.config.time.dt

            class F:
                def apply(self, X):
                    return scipy.sparse.linalg.expm_multiply(-1j * dt * G, X)
            return F()
    monkeypatch.setitem(exponentials.METHODS, Reference.name, Reference)
    dense = _plan("dense")
    cfg = dataclasses.replace(dense.config, propagator=dataclasses.replace(
        dense.config.propagator, method=Reference.name))
    ref = tdse.prepare(cfg, backend="numpy", check_resolution=False)
    from tdse.numerics.propagators import Launched
    assert type(ref.stepper().propagator) is Launched     # no propagator to register either
    a, b = tdse.evolve(dense, dense.psi0).psi, tdse.evolve(ref, ref.psi0).psi
    assert np.abs(a - b).max() < 1e-10


def test_propagators_registered_by_method_and_backend(rng):
    """#54 item 1: PROPAGATORS[(method, backend)] names how each method steps on each backend
    (the launched factors on NumPy; CUDA graphs on CuPy), make() takes the stepper's pair;
    advance(X, j0, j1, into=...) equals the steps taken one by one, for psi, an N x B block
    and U(t), and writes into the given array."""
    from tdse.numerics import propagators as P
    for name in exponentials.METHODS:
        assert P.PROPAGATORS[(name, "numpy")] is P.Launched
    assert P.PROPAGATORS[("chebyshev", "cupy")] is P.ChebyshevGraphs
    assert P.PROPAGATORS[("dense", "cupy")] is P.PROPAGATORS[("taylor", "cupy")] is P.DenseGraphs
    for method in ("dense", "chebyshev"):
        plan = _plan(method, steps=6)
        st = plan.stepper()
        assert type(st.propagator) is P.Launched and st.propagator.stepper is st
        n = plan.config.grid.n
        for X in (plan.psi0, rng.standard_normal((n, 3)) + 1j * rng.standard_normal((n, 3))):
            ref = X
            for j in range(1, 5):
                ref = st.step(ref, j)
            assert np.array_equal(st.advance(X, 1, 5), ref)
            into = np.full_like(X, np.nan)
            assert st.advance(X, 1, 5, into=into) is into and np.array_equal(into, ref)
            assert np.array_equal(tdse.evolve(plan, X, start=1, stop=5, stepper=st).psi, ref)
        U = np.eye(n, dtype=complex)
        ref = st.step_operator(st.step_operator(U, 0), 1)
        assert np.array_equal(st.advance(U, 0, 2, operator=True), ref)
        assert np.abs(ref @ plan.psi0 - st.advance(plan.psi0, 0, 2)).max() < 1e-12


def test_operator_and_psi_together_match(rng):
    """U(t) stepped beside psi: U(t) psi(0) = psi(t)."""
    plan = _plan("dense", steps=10)
    final = tdse.evolve(plan, plan.psi0, U0=np.eye(64, dtype=complex))
    assert np.abs(final.U @ plan.psi0 - final.psi).max() < 1e-12


def test_backend_auto_takes_the_faster_timed_step(monkeypatch):
    """#27 item 2: with GPUs, backend auto times this run's own step on each backend and
    takes the faster (said in the notes, stored); the CPU is not timed when its cost model
    expects a step over CPU_TIMING_MAX_S.  (A fake GPU here: the NumPy plan relabelled; the
    real one is tests/test_gpu.py::test_backend_auto_on_a_gpu_machine.)"""
    import tdse.run.plan as plan_mod
    import tdse.run.resources as res_mod
    from tdse.run.backend import Backend
    base = _plan("dense")
    build = lambda name: dataclasses.replace(base, backend=Backend(name, np, None, 1))  # noqa: E731
    for fast in ("numpy", "cupy"):
        monkeypatch.setattr(plan_mod, "step_seconds",
                            lambda p, fast=fast, **k: 1e-3 if p.backend.name == fast else 3e-3)
        plan = plan_mod.fastest(build, base.config, base.precheck, None)
        assert plan.backend.name == fast and plan.backend_choice["chosen"] == fast
        assert plan.backend_choice["seconds_per_step"] == (
            {"cupy": 1e-3, "numpy": 3e-3} if fast == "cupy" else {"cupy": 3e-3, "numpy": 1e-3})
        assert any(n.startswith(f"backend auto -> {fast}") for n in plan.precheck.notes)
        assert "backend_choice" in plan.attrs()
    monkeypatch.setattr(res_mod, "cpu_seconds_estimate", lambda *a, **k: 1e9)
    monkeypatch.setattr(plan_mod, "step_seconds", lambda p, **k: 5.0)   # the GPU even if slow
    plan = plan_mod.fastest(build, base.config, base.precheck, None)
    assert plan.backend.name == "cupy" and plan.backend_choice["seconds_per_step"]["numpy"] is None
    assert "not timed" in plan.backend_choice["why"]


def test_backend_auto_without_a_gpu_is_numpy():
    plan = tdse.prepare(make_config(n=32, steps=2), backend="auto", check_resolution=False)
    assert plan.backend.name == "numpy" and plan.backend_choice is None


def test_step_seconds_times_the_runs_own_step():
    plan = _plan("chebyshev", steps=5)
    from tdse.run.plan import step_seconds
    assert 0 < step_seconds(plan, 2) < 5 and 0 < step_seconds(plan, 1, operator=True) < 5


@pytest.mark.parametrize("grouped", [False, True])
@pytest.mark.parametrize("name,key,values,gauge", [
    ("atom_hhg.toml", "field.E0", [0.02, 0.05, 0.08], "length"),          # field, absorber
    ("atom_hhg.toml", "field.E0", [0.02, 0.05, 0.08], "velocity"),        # A(t) p, A^2/2
    ("h2plus_moving.toml", "potential.centres.amplitude", [0.1, 0.4], "length"),   # moving centres
])
def test_graph_planner_equals_the_per_step_scalars(name, key, values, gauge, grouped, inputs_dir,
                                                   monkeypatch):
    """The host side of the CUDA-graph step (tdse.numerics.graphs.Planner: CHUNK steps of
    bounds, term counts, coefficients, phases and potential parameters at once, vectorised)
    against what BatchStepper.step / expm_apply compute one step at a time, and the single
    run's bounds against Stepper.generators + the method's bounds: exactly equal.  In the
    velocity gauge the bounds hold A^2/2 and |a| P_max, and the row ends with each
    exponential's alpha a_b and alpha q_b (a from BatchStepper.generators).
    ``grouped``: the single run's bounds in groups of a few steps (as at N = 8192), the same
    bits."""
    import os

    import tdse
    from tdse.model import hamiltonian
    from tdse.numerics import chebyshev, graphs
    from tdse.numerics import stepper
    from tdse.numerics.stepper import BatchStepper, Stepper
    if grouped:
        monkeypatch.setattr(stepper, "BOUNDS_GROUP_ELEMENTS", 3000)    # a few steps a group
    cfg = tdse.load_config(os.path.join(inputs_dir, name)).with_value(
        "propagator.time_error", "none").with_value("propagator.method", "chebyshev")
    if gauge == "velocity":
        cfg = cfg.with_value("field.gauge", gauge)
    configs = [cfg.with_value(key, v) for v in values]
    st = BatchStepper(configs, np)
    planner = graphs.Planner(st)
    dt, j0 = cfg.time.dt, 37
    _, patterns, P, A, sizes = planner.chunk(j0)
    for i in range(graphs.CHUNK):
        times = st.scheme.times((j0 + i) * dt, dt)
        heads, coefs, pattern, vel = [], [], [], []
        Av = [st.potential.vector(t) for t in times]
        for (s, _V, (vlo, vhi), a), (_, row) in zip(st.generators(j0 + i), planner.rows):
            lo, hi = hamiltonian.spectrum_bounds(cfg.grid.stencil, cfg.grid.dx, vlo, vhi, s,
                                                 0.0 if a is None else float(np.abs(a).max()))
            c, r = 0.5 * (lo + hi), 0.5 * (hi - lo)
            K = chebyshev.terms(dt * r, st.tol)
            pattern.append(K)
            heads.append(st.potential.header(row, 2.0 / r, c, s))
            coefs.append(np.concatenate([chebyshev.coefficients(dt * r, K), [np.exp(-1j * dt * c)]]))
            if a is not None:
                q = sum(w * 0.5 * v * v for w, v in zip(row, Av) if w)
                vel += [2.0 / r * a, 2.0 / r * q]
        assert patterns[i] == tuple(pattern)
        assert (len(vel) > 0) == (gauge == "velocity")
        assert np.array_equal(P[i], np.concatenate(heads + [st.potential.blocks(times)] + vel))
        assert np.array_equal(A[i, :sizes[i]], np.concatenate(coefs))
    for i0, m in ((5, 16), (100, 64), (0, 1)):      # a chunk of any length: its steps' scalars
        _, pat, P2, A2, sz = planner.chunk(j0 + i0, m)
        assert pat == patterns[i0:i0 + m] and np.array_equal(P2, P[i0:i0 + m])
        assert np.array_equal(sz, sizes[i0:i0 + m])
        assert all(np.array_equal(A2[i, :sz[i]], A[i0 + i, :sz[i]]) for i in range(m))
    one = Stepper(configs[0], None, np)
    for start in (j0, j0 + 29):      # two windows (a row left unwritten holds other values)
        js = np.arange(start, start + 23)
        times = (js * dt)[:, None] + np.asarray(one.scheme.nodes)[None, :] * dt
        ref = [[one.method.bounds(s, v, a) for s, v, a in one.generators(j)] for j in js]
        assert np.array_equal(one.bounds_many(js, times), np.array(ref))


@pytest.mark.parametrize("a,b", [(0, 64), (5, 30), (63, 64)])
def test_a_segment_holds_each_steps_row_where_the_fetch_finds_it(a, b, inputs_dir):
    """tdse.numerics.graph_plan.segment (the rows of steps a .. b - 1 of a planned chunk,
    uploaded at once for the GPU graphs): tdse_row_fetch's reading of it, in NumPy (row c
    at 2 + 2 CHUNK + c * stride, its two slots at 2 + 2c, 3 + 2c), gives each step the row
    a step's own upload had -- its parameters, then from the even offset its coefficients
    -- and its tap slots."""
    import os

    import tdse
    from tdse.numerics import graph_plan
    from tdse.numerics.stepper import BatchStepper
    cfg = tdse.load_config(os.path.join(inputs_dir, "h2plus_moving.toml")).with_value(
        "propagator.time_error", "none").with_value("propagator.method", "chebyshev")
    st = BatchStepper([cfg], np)
    _, patterns, P, A, sizes = graph_plan.Planner(st).chunk(11)
    nP = P.shape[1]
    n_p = nP + nP % 2
    slots = np.random.default_rng(a).integers(-1, 9, (b - a, 2)).astype(float)
    out = np.full(2 + 2 * graph_plan.CHUNK + graph_plan.CHUNK * (n_p + 2 * A.shape[1] + 7), np.nan)
    seg = graph_plan.segment(out, P[a:b], A[a:b], n_p, slots)
    assert seg[0] == 0 and np.isnan(out[seg.size:]).all()
    from tdse.backends.cupy.chain import ROWS      # (the kernels are written for two slots)
    assert graph_plan.TAPS == 2 and "seg + 2 + 2 * steps" in ROWS and "slot[1] = (int)seg[3 + 2 * c]" in ROWS
    stride = int(seg[1])
    for c in range(b - a):               # the fetch of the segment's c-th step
        row = seg[2 + 2 * graph_plan.CHUNK + c * stride:][:stride]
        i = a + c
        assert np.array_equal(row[:nP], P[i])
        assert seg[2 + 2 * c] == slots[c, 0] and seg[3 + 2 * c] == slots[c, 1]
        assert np.array_equal(row[n_p:n_p + 2 * sizes[i]].view(np.complex128), A[i, :sizes[i]])


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_bounds_at_the_extreme_points_equal_the_whole_grid(seed, inputs_dir, monkeypatch):
    """Stepper.bounds_many where V's extremes are looked for only at the grid's ends and
    between the outermost centres (_extreme_points) against every grid point (the points
    forced to all): the same bits, for random moving centres (two or three, some crossing
    each other, one near or past a wall), at random times; the fast path taken where it
    holds (attractive centres, no field, weights >= 0; a static molecule in a field, any Z
    and weights: V0's convex hulls) and not otherwise (moving centres in a field, a
    repulsive centre, CFM4's negative weight), where the bounds are equal as well."""
    import dataclasses
    import os

    import tdse
    from tdse.config import Centre, Field
    from tdse.numerics import stepper
    from tdse.numerics.stepper import Stepper
    rng = np.random.default_rng(seed)
    base = tdse.load_config(os.path.join(inputs_dir, "h2plus_moving.toml")).with_value(
        "propagator.time_error", "none").with_value("propagator.method", "chebyshev")
    g = base.grid
    width = g.x_max - g.x_min
    wall = g.x_max - rng.uniform(0.0, 0.3) if seed != 2 else g.x_max + 0.5   # a centre past it
    centres = tuple(Centre(x0=float(x0), Z=float(rng.uniform(0.5, 3.0)),
                           amplitude=float(rng.uniform(0.2, 2.0)), frequency=float(rng.uniform(0.5, 40.0)),
                           phase=float(rng.uniform(0, 6.3)))
                    for x0 in [rng.uniform(-3, 0), rng.uniform(0, 3), wall][:2 + (seed > 0)])
    attractive = dataclasses.replace(base.potential, centres=centres, a=float(rng.uniform(0.05, 2.0)))
    repulsive = dataclasses.replace(attractive, centres=centres[:1] + (
        dataclasses.replace(centres[1], Z=-0.7),) + centres[2:])
    field = dataclasses.replace(attractive, field=Field(E0=0.05, omega=0.057, duration=100.0))
    # a static molecule in a field (one centre repulsive where seed 1): V0's convex hulls
    static = dataclasses.replace(field, field=Field(E0=float(rng.uniform(0.001, 0.5)), omega=0.057,
                                                   duration=100.0), centres=tuple(
        dataclasses.replace(c, amplitude=0.0, Z=-c.Z if seed == 1 and i == 1 else c.Z)
        for i, c in enumerate(centres)))
    whole = lambda self, times: None  # noqa: E731 -- every grid point
    for pot, scheme, fast in [(attractive, "midpoint", True), (attractive, "cfm4", False),
                              (repulsive, "midpoint", False), (field, "midpoint", False),
                              (static, "midpoint", True), (static, "cfm4", True)]:
        cfg = dataclasses.replace(base, potential=pot).with_value("propagator.scheme", scheme)
        one = Stepper(cfg, None, np)
        dt = cfg.time.dt
        js = np.sort(rng.integers(0, cfg.time.steps, 40))
        times = (js * dt)[:, None] + np.asarray(one.scheme.nodes)[None, :] * dt
        for k in (1, 40):                          # a step's points; 40 steps' (their union)
            cols = one._extreme_points(times[:k])
            assert (cols is not None) == fast, (scheme, pot)
            if fast:
                assert cols.size < (g.n // 4 if seed == 0 else g.n // 2 if pot is static else g.n) \
                    and cols[0] == 0 and cols[-1] == g.n - 1
        got = one.bounds_many(js, times)
        with monkeypatch.context() as m:
            m.setattr(Stepper, "_extreme_points", whole)
            ref = one.bounds_many(js, times)
            m.setattr(stepper, "BOUNDS_GROUP_ELEMENTS", 1 << 30)
            assert np.array_equal(one.bounds_many(js, times), ref)
        assert np.array_equal(got, ref), (scheme, np.abs(got - ref).max())
        # the precheck's range over every step (bounds_over: the scheme's weights and
        # nodes' offsets) where the extremes can lie, against every grid point
        from tdse.model import potential as potmod
        x, ts = one.x_host, np.arange(cfg.time.steps) * dt
        offs = tuple(c * dt for c in one.scheme.nodes)
        for row in one.scheme.factors:
            fast_row = potmod.extreme_columns(pot, x, ts[:, None] + np.asarray(offs)[None, :], [row])
            assert (fast_row is not None) == (fast or (scheme == "cfm4" and min(row) >= 0
                                                       and pot is attractive)), (scheme, row)
            if pot is static:     # the hulls' columns with the reach of rounding: not V0's extremes alone
                assert fast_row.size > 2
            got = potmod.bounds_over(pot, x, ts, rows=[row], offsets=offs)[0]
            with monkeypatch.context() as m:
                m.setattr(potmod, "extreme_columns", lambda *a: None)
                ref = potmod.bounds_over(pot, x, ts, rows=[row], offsets=offs)[0]
            assert got == ref, (scheme, row, got, ref)
    assert width > 0


@pytest.mark.parametrize("ahead", ["1", "0"])
def test_graph_chunks_planned_ahead_in_order_and_taken_over(ahead, monkeypatch):
    # (graph_plan.PLAN_AHEAD: the branch forced here, off the fast path's default)
    """GraphStep._plan (no GPU needed: a stand-in planner): each chunk asked for is the
    planner's chunk at that step -- the steps asked for rounded up to a power of two from
    PLAN_FIRST, twice the last chunk's where it goes on from it, CHUNK at most; with
    PLAN_AHEAD, once a chunk goes on from the last, the next are under way in the planning
    thread (one while they grow, PLAN_DEPTH at CHUNK) and taken over when asked for (each
    planned once, in step order, by one thread at a time); a step out of order cancels
    those not begun, waits for one under way, and plans its own; with 0 nothing is planned
    ahead."""
    import collections
    import threading
    import time

    from tdse.numerics import graph_plan, graphs as G
    calls, busy = [], []

    class Planner:
        def chunk(self, j, m):
            busy.append(j)
            assert len(busy) == 1, "two threads in the planner at once"
            time.sleep(0.002)
            calls.append((j, m, threading.current_thread() is threading.main_thread()))
            busy.pop()
            return None if j >= 10000 else (j, "scalars of", j, m)   # r = 0 there: no graph step

    monkeypatch.setattr(graph_plan, "PLAN_AHEAD", ahead == "1")
    g = object.__new__(G.GraphStep)
    g.planner, g._ahead, g._end, g._size = Planner(), collections.deque(), None, 0
    C, F = G.CHUNK, G.PLAN_FIRST
    for j in (0, C, 2 * C, 3 * C, 4 * C):
        assert g._plan(j, C - 3) == (j, "scalars of", j, C)
        want = [(j + C * (i + 1), C) for i in range(G.PLAN_DEPTH)] if ahead == "1" and j else []
        assert [(a, m) for a, m, _ in g._ahead] == want         # (none ahead of the first)
    assert g._plan(1000, 3) == (1000, "scalars of", 1000, F)     # out of order: the steps asked
    assert g._plan(1000 + F, 5) == (1000 + F, "scalars of", 1000 + F, 2 * F)   # goes on: twice
    if ahead == "1":
        assert [(a, m) for a, m, _ in g._ahead] == [(1000 + 3 * F, 4 * F)]    # one while growing
    assert g._plan(1000 + 3 * F, 7) == (1000 + 3 * F, "scalars of", 1000 + 3 * F, 4 * F)
    for _, _, f in list(g._ahead):
        f.result()
    if ahead == "1":              # a chunk planned ahead that is None: taken as it is
        assert [(a, m) for a, m, _ in g._ahead] == [(1000 + 7 * F, 8 * F)]
        g._ahead.clear()
        g._ahead.append((10000, C, graph_plan.planning_thread().submit(g.planner.chunk, 10000, C)))
        g._ahead.append((10000 + C, C, graph_plan.planning_thread().submit(g.planner.chunk, 10000 + C, C)))
        assert g._plan(10000, C) is None
        for _, _, f in list(g._ahead):
            f.result()
        assert [j for j, _, _ in calls].count(10000) == 1
        calls[:] = [c for c in calls if c[0] < 10000]
    steps = [j for j, _, _ in calls]
    if ahead == "1":       # (those planned ahead of 4C: as many as had begun before 1000 was asked)
        i = steps.index(1000)
        assert steps[:i] == list(range(0, C * i, C)) and 5 <= i <= 5 + G.PLAN_DEPTH
        assert [(j, m) for j, m, _ in calls[i:]] == [(1000, F), (1000 + F, 2 * F), (1000 + 3 * F, 4 * F),
                                                     (1000 + 7 * F, 8 * F)]
        assert [j for j, _, main in calls if main] == [0, C, 1000, 1000 + F]
    else:
        assert [(j, m) for j, m, _ in calls] == [(0, C), (C, C), (2 * C, C), (3 * C, C), (4 * C, C),
                                                 (1000, F), (1000 + F, 2 * F), (1000 + 3 * F, 4 * F)]
        assert all(m for _, _, m in calls) and not g._ahead


def test_graph_planner_term_counts_equal_terms(inputs_dir):
    """The planner's cached R-intervals of each term count give chebyshev.terms exactly, for
    random R over the ranges runs meet (the intervals' ends come from a bisection)."""
    import os
    import tdse
    from tdse.numerics import chebyshev, graphs
    from tdse.numerics.stepper import BatchStepper
    cfg = tdse.load_config(os.path.join(inputs_dir, "atom_hhg.toml"))
    planner = graphs.Planner(BatchStepper([cfg], np))
    rng = np.random.default_rng(8)
    for R in np.concatenate([rng.uniform(0, 60, 2000), rng.uniform(0.9, 1.1, 200) * 7.3]):
        assert planner._terms(R, 0) == chebyshev.terms(R, planner.st.tol), R
    assert len(planner._counts.intervals) > 5
    counts = chebyshev.TermCounts(1e-12)        # expm_apply's, at another tolerance
    for R in np.concatenate([rng.uniform(0, 60, 2000), rng.uniform(0.9, 1.1, 200) * 7.3]):
        assert counts(R) == chebyshev.terms(R, 1e-12), R
    for k, (a, b) in counts.intervals.items():  # each interval's ends exactly where K changes
        assert chebyshev.terms(a * (1 + 1e-8), 1e-12) == k == chebyshev.terms(b * (1 - 1e-8), 1e-12)
    R = rng.uniform(0, 60, (50, 3))             # the vectorised lookup (the planner's chunks)
    known = counts.known(R)
    assert (known > 0).mean() > 0.5            # (at most MAX_INTERVALS intervals are kept)
    assert all(k == chebyshev.terms(r, 1e-12) for k, r in zip(known.ravel(), R.ravel()) if k)
    many = planner._terms_many(R)
    assert all(k == chebyshev.terms(r, planner.st.tol) for k, r in zip(many.ravel(), R.ravel()))


def test_term_counts_new_interval_leaves_an_iteration_alone():
    """A lookup that finds a new interval (another thread's, in a process sharing
    expm_apply's TermCounts) does not change the dict an ongoing lookup iterates: its
    interval goes into a new dict."""
    from tdse.numerics import chebyshev
    counts = chebyshev.TermCounts(1e-12)
    for R in (3.0, 9.0, 20.0):
        counts(R)
    walk = iter(counts.intervals.items())           # a lookup in the middle of its loop
    next(walk)
    assert counts(55.0) == chebyshev.terms(55.0, 1e-12)   # a new interval meanwhile
    assert len(list(walk)) == 2 and len(counts.intervals) == 4


def test_pinned_upload_keeps_a_lead_of_seconds_and_never_reuses_a_busy_slot(monkeypatch):
    """mgemm.arrays.PinnedUpload with lead_seconds, on a stand-in CUDA (no GPU needed): each
    call waits for the copy `lead` calls back; every ADAPT calls the lead becomes
    lead_seconds / the device's seconds a call (from two events' elapsed time), clamped to
    [min_lead, ring - ADAPT]; a slot is written only after its previous copy is known done;
    the values reach the device buffer."""
    import sys
    import types

    from mgemm.arrays import PinnedUpload
    recorded, waited, tau = {}, [], [1e-4]     # event ptr -> the call it marks; device s a call
    calls = [0]

    class Event:
        n = 0

        def __init__(self):
            Event.n += 1
            self.ptr = Event.n

    def record(ptr, stream):
        recorded[ptr] = (calls[0], tau[0])

    def elapsed(p0, p1):
        (c0, _), (c1, t1) = recorded[p0], recorded[p1]
        return (c1 - c0) * t1 * 1e3

    dev = {}
    rt = types.SimpleNamespace(eventSynchronize=lambda p: waited.append((calls[0], recorded[p][0])),
                               eventElapsedTime=elapsed, eventRecord=record, memcpyHostToDevice=1,
                               memcpyAsync=lambda d, h, nb, kind, s: dev.__setitem__("last", h))
    stream = types.SimpleNamespace(ptr=0, synchronize=lambda: None)
    cp = types.SimpleNamespace(cuda=types.SimpleNamespace(Event=Event, runtime=rt,
                                                          get_current_stream=lambda: stream),
                               empty=lambda n, dtype: types.SimpleNamespace(
                                   data=types.SimpleNamespace(ptr=0)))
    monkeypatch.setitem(sys.modules, "cupyx", types.SimpleNamespace(empty_pinned=lambda n, dtype: np.zeros(n, dtype)))
    ring = 600
    up = PinnedUpload(cp, ring=ring, lead_seconds=0.02, min_lead=40)
    assert up.lead == 40
    leads = []
    for c in range(3000):
        if c == 1500:
            tau[0] = 4e-6               # the device's call got cheaper: the lead grows to its cap
        calls[0] = c
        v = np.full(5, float(c))
        up.put(v)
        assert np.array_equal(up.host[c % ring][:5], v)
        leads.append(up.lead)
    # by each call, the copies up to `lead` calls back were waited for (so its slot's last
    # use, `ring` calls back, ran), and none closer than min_lead
    got, known = dict(waited), -1
    for c in range(3000):
        known = max(known, got.get(c, -1))
        assert known >= c - leads[c - 1 if c else 0] and known >= c - ring, c
        assert c not in got or got[c] <= c - 40
    assert len(got) > 2500
    assert leads[1000] == 200                       # 0.02 s / 1e-4 s
    assert leads[-1] == ring - PinnedUpload.ADAPT   # 0.02 / 4e-6 = 5000: capped
    assert up.step_seconds == pytest.approx(4e-6)
    with pytest.raises(ValueError, match="cannot adapt"):
        PinnedUpload(cp, ring=64, lead_seconds=0.1)
    _pinned_upload_regrown(cp, recorded)
    _pinned_upload_of_parts(cp, dev)
    _pinned_upload_reserved(cp, monkeypatch)


def test_pinned_upload_pins_its_slots_in_doubling_buffers(monkeypatch):
    """PinnedUpload's slots pinned at first use in buffers of 1, 1, 2, 4, 8 slots (a ring of
    16 used whole: 5 buffers, not 16), each slot its own part of one: the values of every
    call land in its slot and the copy reads that slot's address; a ring used in part
    (3 calls) pins 3 slots' worth in 3 buffers at most; a regrown ring starts again."""
    import sys
    import types

    from mgemm.arrays import PinnedUpload
    pinned, copied = [], []

    class Event:
        ptr = 1

    rt = types.SimpleNamespace(eventSynchronize=lambda p: None, eventRecord=lambda p, s: None,
                               memcpyHostToDevice=1,
                               memcpyAsync=lambda d, h, nb, kind, s: copied.append((h, nb)))
    stream = types.SimpleNamespace(ptr=0, synchronize=lambda: None)
    cp = types.SimpleNamespace(cuda=types.SimpleNamespace(Event=Event, runtime=rt,
                                                          get_current_stream=lambda: stream),
                               empty=lambda n, dtype: types.SimpleNamespace(data=types.SimpleNamespace(ptr=0)))
    monkeypatch.setitem(sys.modules, "cupyx", types.SimpleNamespace(
        empty_pinned=lambda n, dtype: pinned.append(n) or np.zeros(n, dtype)))
    rng = np.random.default_rng()
    up = PinnedUpload(cp, ring=16)
    for c in range(40):
        v = rng.standard_normal(6)
        up.put(v)
        k = c % 16
        assert np.array_equal(up.host[k][:6], v) and copied[-1] == (up.host[k].ctypes.data, 48)
    assert pinned == [6 * m for m in (1, 1, 2, 4, 8)]
    addresses = {h.ctypes.data for h in up.host}
    assert len(addresses) == 16 and all(h.size == 6 for h in up.host)
    pinned.clear()
    part = PinnedUpload(cp, ring=64)
    for c in range(3):
        part.put(rng.standard_normal(5))
    assert pinned == [5, 5, 10]
    part.put(rng.standard_normal(11))                  # regrown (to 11), from slot 0
    assert pinned[3:] == [11] and part.slot == 1


def _pinned_upload_reserved(cp, monkeypatch):
    """PinnedUpload.reserve (a GPU run's ring of H(t) states, made before its loop:
    rows._BlockRows): every slot's pinned buffer made at once; uploads up to that size then
    neither wait for the stream nor pin a buffer, and land as before; a larger one regrows
    the ring (a wait, fresh buffers); a reserve after an upload is refused."""
    import sys
    from mgemm.arrays import PinnedUpload
    pinned, waits = [], []
    made = sys.modules["cupyx"].empty_pinned
    monkeypatch.setattr(sys.modules["cupyx"], "empty_pinned",
                        lambda n, dtype: pinned.append(n) or made(n, dtype))
    stream = cp.cuda.get_current_stream()
    monkeypatch.setattr(stream, "synchronize", lambda: waits.append(1))
    up = PinnedUpload(cp, ring=4)
    up.reserve(40, np.float64)
    assert pinned == [40] * 4 and not waits
    rng = np.random.default_rng(5)
    for c in range(9):
        v = rng.standard_normal(8 + 4 * (c % 4))        # sizes 8 .. 20, all within 40
        up.put(v)
        assert np.array_equal(up.host[c % 4][:v.size], v) and up._last == v.size
    assert pinned == [40] * 4 and not waits and up.count == 9
    up.put(np.ones(41))                                 # beyond it: regrown as before
    assert waits == [1] and up.size == 80 and pinned[4:] == [80]
    with pytest.raises(RuntimeError, match="before the first upload"):
        up.reserve(100, np.float64)


def _pinned_upload_of_parts(cp, dev):
    """PinnedUpload.put of a list of arrays (a block's H(t) states: rows._BlockRows.resolve)
    uploads their concatenation as one copy of its bytes, each part copied once into the
    pinned buffer, the buffer grown for them; and a plain array after it as before."""
    from mgemm.arrays import PinnedUpload
    rng = np.random.default_rng(3)
    up, nbytes = PinnedUpload(cp, ring=4), []
    rt = cp.cuda.runtime
    copy = rt.memcpyAsync
    rt.memcpyAsync = lambda d, h, nb, kind, s: (nbytes.append(nb), copy(d, h, nb, kind, s))
    try:
        up.put(np.ones(3))
        parts = [rng.standard_normal((2, 5)), rng.standard_normal((2, 5)), rng.standard_normal(4)]
        up.put(parts)
        assert np.array_equal(up.host[0][:24], np.concatenate([p.ravel() for p in parts]))  # (regrown)
        assert up.size >= 24 and up._last == 24 and nbytes[-1] == 24 * 8
        up.put(np.arange(7.0))
        assert np.array_equal(up.host[1][:7], np.arange(7.0)) and nbytes[-1] == 56
    finally:
        rt.memcpyAsync = copy


def _pinned_upload_regrown(cp, recorded):
    """#58 item 0: a ring remade for larger values mid-stream (here at call 777, slot 177 of
    600) starts again at slot 0 -- its lead's clock reads the events of calls counted from
    the remake; left at slot 177 it asked the elapsed time of a slot not yet recorded
    (KeyError here; cudaErrorInvalidResourceHandle on the GPU: run-overhead's bare loop)."""
    from mgemm.arrays import PinnedUpload
    up = PinnedUpload(cp, ring=600, lead_seconds=0.02, min_lead=40)
    for c in range(2000):
        v = np.full(5 if c < 777 else 11, float(c))
        up.put(v)
        first = 0 if c < 777 else 777
        assert np.array_equal(up.host[(c - first) % 600][:v.size], v), c
    assert up.step_seconds is not None and up.count == 2000 - 777


@pytest.mark.parametrize("n", [4200, 8192, 11, 1009])
def test_four_step_tables_give_the_dvr_kinetic_product(n):
    """graph_fft.four_step_tables (the GPU's four-step FFT of the DVR's circulant product, run
    here with NumPy's FFTs down the columns and along the rows as the cuFFT plans do):
    the first N rows of the result equal T x with the dense sinc-DVR T, to 1e-14 of
    max|symbol| |x|_2 (the FFTs' rounding, ~eps log2(2N) of it; 3.5e-17 measured, a
    twiddle of the wrong sign 1e-2), for 2N = 8400 (84 x 100), 16384 (128 x 128), 22
    (2 x 11) and 2018 (2 x 1009: a prime, where the GPU takes one FFT of 2N instead)."""
    from tdse.model.hamiltonian import kinetic_dense
    from tdse.numerics import graph_fft
    g = make_config(stencil="dvr", n=n).grid
    n1, n2, tw, lam = graph_fft.four_step_tables(g.n, g.dx)
    assert n1 * n2 == 2 * g.n and n1 <= n2 and tw.shape == lam.shape == (n1, n2)
    rng = np.random.default_rng(n)
    x = rng.standard_normal(g.n) + 1j * rng.standard_normal(g.n)
    a = np.concatenate([x, np.zeros(g.n)]).reshape(n1, n2)
    F = np.fft.fft(a, axis=0) * tw
    F = np.fft.fft(F, axis=1) * lam
    F = np.fft.ifft(F, axis=1) * n2 * tw.conj()
    got = (np.fft.ifft(F, axis=0) * n1).ravel()[:g.n]
    T = kinetic_dense(g)
    ref = T @ x
    bound = np.abs(lam).max() * 2 * g.n * np.linalg.norm(x)       # lam is the symbol / 2N
    assert np.abs(got - ref).max() <= 1e-14 * bound
    assert (n1 >= graph_fft.FOUR_STEP_MIN) == (n in (4200, 8192))
    assert np.allclose(np.abs(tw), 1.0, rtol=0, atol=1e-15)


def test_evolve_holds_the_plans_blas_threads():
    """#58 item 3: ``tdse.prepare(cfg, threads=1)`` then ``tdse.evolve``: BLAS held to the
    plan's one thread during the loop (it took every core: 6-9x slower than simulate on a
    shared box), and given back after it."""
    from threadpoolctl import threadpool_info
    blas = lambda: [p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"]  # noqa: E731
    if not blas():
        pytest.skip("no BLAS library seen by threadpoolctl")
    cfg = make_config(n=64, stencil=3, dt=0.005, steps=4, method="dense", scheme="cfm4")
    plan = tdse.prepare(cfg, backend="numpy", threads=1, check_resolution=False)
    seen = []

    class Threads(tdse.Observer):
        def after(self, state):
            seen.append(blas())
    outside = blas()
    tdse.evolve(plan, plan.psi0, [Threads()])
    assert seen and all(t == [1] * len(t) for t in seen), seen
    assert blas() == outside


def _docs_config(inputs_dir, steps=120):
    cfg = cfgmod.load(f"{inputs_dir}/h2plus_moving.toml")
    cfg = cfg.with_value("propagator.method", "chebyshev").with_value("grid.dx", 0.2)
    return cfg.with_value("time.t_end", steps * cfg.time.dt)


def test_the_docs_prepare_and_evolve_block_runs(run_python_doc, inputs_dir):
    """docs/PYTHON.md's prepare/evolve block, as written (backend numpy, threads=1): psi at
    t_end of unit norm, the block's columns each equal to its own evolve, U(t) psi0 = psi(t),
    the observer's norms over its 100 steps (the GPU test runs the same block on CuPy)."""
    import tdse
    cfg = _docs_config(inputs_dir)
    ns = run_python_doc(2, "numpy", tdse=tdse, cfg=cfg)
    plan, final, block, U = ns["plan"], ns["final"], ns["block"], ns["U"]
    dx = cfg.grid.dx
    assert final.step == cfg.time.steps and abs(np.sum(abs(final.psi) ** 2) * dx - 1) < 1e-9
    np.testing.assert_allclose(block[:, 0], final.psi, rtol=0, atol=1e-12)
    np.testing.assert_allclose(U @ plan.psi0, final.psi, rtol=0, atol=1e-10)
    assert len(ns["sink"].norms) == 10 and np.allclose(ns["sink"].norms, 1.0, atol=1e-9)


@pytest.mark.parametrize("name, values", [
    ("h2plus_moving.toml", {"grid.stencil": 5}),                            # moving centres
    ("h2plus_moving.toml", {"field": dict(E0=0.05, omega=0.3, duration=6.0, envelope="sin2")}),  # both
    ("h2plus_moving_ramped.toml", {"propagator.scheme": "midpoint"}),
])
def test_a_chunk_of_generators_equals_them_made_a_step_at_a_time(name, values, inputs_dir, monkeypatch):
    """Stepper.generators from a chunk of steps made at once (_chunk_generators: the
    molecule's V by total_many, the field's e(t) x added where e(t) != 0, each v_k summed
    from the times' V) equals the per-time definition written out here (total at each of
    the scheme's times, v_k = sum_i w_ki V(t_i), as Python's sum adds) bit for bit, for
    steps in and out of order, across chunk boundaries, with chunks of 7 steps and of the
    default size, a field that is 0 at t = 0 included."""
    from tdse.model.potential import total
    from tdse.numerics import stepper as stepmod
    from tdse.run.plan import prepare
    cfg = cfgmod.load(os.path.join(inputs_dir, name))
    cfg = cfg.with_value("propagator.method", "chebyshev").with_value("propagator.time_error", "none")
    assert cfg.potential.molecule_moves
    for k, v in values.items():
        if k == "field":
            from tdse.config import Field
            cfg = dataclasses.replace(cfg, potential=dataclasses.replace(cfg.potential, field=Field(**v)))
        else:
            cfg = cfg.with_value(k, v)
    st0 = prepare(cfg, backend="numpy").stepper()
    assert not st0.static
    pot, x, dt = cfg.potential, st0.x_host, cfg.time.dt
    for chunk in (7, stepmod.GENERATOR_CHUNK_STEPS):
        monkeypatch.setattr(stepmod, "GENERATOR_CHUNK_STEPS", chunk)
        st = prepare(cfg, backend="numpy").stepper()
        for j in [0, 1, 6, 7, 8, 130, 64, 63, 3, 200, 199, 65, cfg.time.steps - 1]:
            V = [total(pot, x, tj) for tj in st.scheme.times(j * dt, dt)]
            want = [(s, sum(w * v for w, v in zip(row, V) if w), sum(w * 0.0 for w in row if w))
                    for s, row in zip(st.scheme.scales(), st.scheme.factors)]
            got = st.generators(j)
            assert len(got) == len(want), j
            for (s1, v1, a1), (s2, v2, a2) in zip(got, want):
                assert s1 == s2 and a1 == a2 and np.array_equal(v1, v2), (name, chunk, j)
        for j in (0.5, 7.25, 3.0):       # U(t) at any t / dt: the per-time path (3.0: a whole step)
            V = [total(pot, x, tj) for tj in st.scheme.times(j * dt, dt)]
            want = [sum(w * v for w, v in zip(row, V) if w) for row in st.scheme.factors]
            assert all(np.array_equal(v1, v2) for (_, v1, _), v2 in zip(st.generators(j), want)), j


@pytest.mark.parametrize("stencil, scheme", [(5, "cfm4"), ("dvr", "midpoint")])
def test_a_chunks_chebyshev_coefficients_give_the_steps_bit_for_bit(stencil, scheme, inputs_dir, monkeypatch):
    """Chebyshev.coefficients_many (a moving molecule's factors' coefficients for a chunk
    of steps, one bessel_j call) equals chebyshev.coefficients(R, terms(R)) of each factor
    made alone, bit for bit; psi stepped 70 steps (across a chunk's end, from a start
    inside a chunk) with them equals psi stepped with the coefficients made a factor at a
    time (coefficients_many absent), bit for bit."""
    from tdse.model import hamiltonian as ham
    from tdse.numerics import chebyshev
    from tdse.run.plan import prepare
    cfg = cfgmod.load(os.path.join(inputs_dir, "h2plus_moving.toml"))
    cfg = (cfg.with_value("grid.stencil", stencil).with_value("propagator.scheme", scheme)
           .with_value("propagator.method", "chebyshev").with_value("propagator.time_error", "none"))
    plan = prepare(cfg, backend="numpy")
    st = plan.stepper()
    st.factors(10)                                  # (the chunk's coefficients made at the ask)
    j0, _, vs, _, coefs = st._chunk
    g, dt, tol = cfg.grid, cfg.time.dt, cfg.propagator.tolerance
    for s, V, cf in zip(st.scheme.scales(), vs, coefs):
        for i in (0, 9, len(V) - 1):
            lo, hi = ham.spectrum_bounds(g.stencil, g.dx, float(V[i].min()), float(V[i].max()), s)
            R = dt * 0.5 * (hi - lo)
            want = chebyshev.coefficients(R, chebyshev.term_counts(tol)(R))
            assert cf[i].dtype == want.dtype and np.array_equal(cf[i], want), (j0 + i, s)
    psi0 = np.asarray(plan.psi0, dtype=np.complex128)
    runs = []
    for chunked in (True, False):
        if not chunked:
            monkeypatch.setattr(exponentials.Chebyshev, "coefficients_many", None)
        st = plan.stepper()
        psi = psi0
        for j in range(40, 110):
            psi = st.step(psi, j)
        runs.append(psi)
    assert np.array_equal(runs[0], runs[1])


@pytest.mark.parametrize("stencil,n,B,velocity,by_fft,want", [
    ("dvr", 256, 4, False, False, True),     # a DVR block by GEMM in the length gauge
    ("dvr", 255, 4, False, False, False),    # N odd: no halves
    ("dvr", 256, 1, False, False, False),    # one member: the one-member kernels
    ("dvr", 256, 4, True, False, False),     # the velocity gauge
    ("dvr", 256, 4, False, True, False),     # T by FFT
    (3, 256, 4, False, False, False),        # a stencil
])
def test_a_block_steps_folded_only_where_every_condition_holds(stencil, n, B, velocity, by_fft,
                                                               want, monkeypatch):
    """graphs.folded, the one statement of when a GPU block step runs the DVR series in the
    folded basis (GraphStep and the scan suite's operator floor read it): each condition
    alone turns it off (T's path forced by graph_fft.BLOCK_FFT: no device needed)."""
    from tdse.inputs import Grid
    from tdse.numerics import graph_fft, graphs
    monkeypatch.setattr(graph_fft, "BLOCK_FFT", by_fft)
    grid = Grid(x_min=-12.8, x_max=-12.8 + 0.1 * n, dx=0.1, stencil=stencil)
    assert grid.n == n
    assert graphs.folded(None, grid, B, velocity) is want
    monkeypatch.setattr(graphs, "FOLD_HALVES", False)
    assert graphs.folded(None, grid, B, velocity) is False
