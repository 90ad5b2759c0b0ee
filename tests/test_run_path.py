"""The run path (#22): the prepared plan, exponentials by name, the one evolve loop with
observers, psi as an N x B block."""
from __future__ import annotations

import dataclasses

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


def test_a_new_method_needs_no_loop(monkeypatch):
    """Register a method (SciPy's expm_multiply of the dense generator) and step with it:
    the loop, the stepper and the plan are untouched; it agrees with the dense exponent."""
    class Reference(exponentials.Exponential):
        name = "scipy_reference"
        matrix_free = True
        matrices = (1, 3)

        def factor(self, scale, v):
            G = hamiltonian.generator_dense(self.config, scale, v)
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
    a, b = tdse.evolve(dense, dense.psi0).psi, tdse.evolve(ref, ref.psi0).psi
    assert np.abs(a - b).max() < 1e-10


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
@pytest.mark.parametrize("name,key,values", [
    ("atom_hhg.toml", "field.E0", [0.02, 0.05, 0.08]),          # field, absorber
    ("h2plus_moving.toml", "potential.centres.amplitude", [0.1, 0.4]),   # moving centres
])
def test_graph_planner_equals_the_per_step_scalars(name, key, values, grouped, inputs_dir,
                                                   monkeypatch):
    """The host side of the CUDA-graph step (tdse.numerics.graphs.Planner: CHUNK steps of
    bounds, term counts, coefficients, phases and potential parameters at once, vectorised)
    against what BatchStepper.step / expm_apply compute one step at a time, and the single
    run's bounds against Stepper.generators + the method's bounds: exactly equal.
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
    configs = [cfg.with_value(key, v) for v in values]
    st = BatchStepper(configs, np)
    planner = graphs.Planner(st)
    dt, j0 = cfg.time.dt, 37
    _, patterns, P, A, sizes = planner.chunk(j0)
    for i in range(graphs.CHUNK):
        times = st.scheme.times((j0 + i) * dt, dt)
        heads, coefs, pattern = [], [], []
        for s, row in planner.rows:
            lo, hi = hamiltonian.spectrum_bounds(cfg.grid.stencil, cfg.grid.dx,
                                                 *st.potential.bounds(times, row), s)
            c, r = 0.5 * (lo + hi), 0.5 * (hi - lo)
            K = chebyshev.terms(dt * r, st.tol)
            pattern.append(K)
            heads.append(st.potential.header(row, 2.0 / r, c, s))
            coefs.append(np.concatenate([chebyshev.coefficients(dt * r, K), [np.exp(-1j * dt * c)]]))
        assert patterns[i] == tuple(pattern)
        assert np.array_equal(P[i], np.concatenate(heads + [st.potential.blocks(times)]))
        assert np.array_equal(A[i, :sizes[i]], np.concatenate(coefs))
    one = Stepper(configs[0], None, np)
    for start in (j0, j0 + 29):      # two windows (a row left unwritten holds other values)
        js = np.arange(start, start + 23)
        times = (js * dt)[:, None] + np.asarray(one.scheme.nodes)[None, :] * dt
        ref = [[one.method.bounds(s, v) for s, v in one.generators(j)] for j in js]
        assert np.array_equal(one._bounds_many(js, times), np.array(ref))


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
