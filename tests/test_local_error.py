"""The local error estimate (tdse.numerics.local_error) and the run's error from it
(time_error = "estimate", #56): the leading term against the Magnus expansion's and against
measured local errors (a step against 64 steps of dt/64), and the stated global error
against the distance to an independent run at dt/8 (Chebyshev at 1e-14) on four inputs made
here from random parameters -- an abrupt drive, a smoothly ramped one, a laser pulse with an
absorber, fast-moving centres."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import tdse
from tdse.config import parse, with_value
from tdse.numerics import schemes
from tdse.numerics.local_error import ABSORBER, LocalError, estimator_terms, leading_term
from tdse.run.loop import advance
from tdse.run.timeerror import phase_blind_distance


def test_midpoint_leading_term_is_the_magnus_expansions():
    """Exponential midpoint: L = h^3 (-a_2/24 + [a_0, a_1]/12) (Blanes et al., Phys. Rep.
    470, 151 (2009): Omega = h A + h^3 A''/24 - h^3 [A, A']/12 about the midpoint, the
    midpoint rule keeping h A; expanded about the start the leading term is the same)."""
    C = leading_term("midpoint")
    assert set(C) == {3}
    got = C[3]
    want = {(2,): -1 / 24, (0, 1): 1 / 12, (1, 0): -1 / 12}
    assert set(got) == set(want)
    for w, c in want.items():
        assert got[w] == pytest.approx(c, rel=1e-12)


def test_cfm4_is_fourth_order_and_a_wrong_table_is_caught():
    C = leading_term("cfm4")
    assert set(C) == {5} and len(C[5]) == 15
    # every coefficient a multiple of 1/8640 (the rationals of the 2-node Gauss scheme)
    assert all(abs(c * 8640 - round(c * 8640)) < 1e-8 for c in C[5].values())
    sc = schemes.get("cfm4")
    bad = dataclasses.replace(sc, factors=((sc.factors[0][0] + 1e-3, sc.factors[0][1]), sc.factors[1]))
    with pytest.raises(ValueError, match="not of order 4"):
        leading_term(bad)


def test_absorber_terms():
    """Masks (Strang) give an h^3 term with b for both schemes; inside the generator
    (dense) the scheme's order holds with b as part of a_0."""
    for name in ("midpoint", "cfm4"):
        masks = leading_term(name, "masks")
        assert min(masks) == 3 and all(ABSORBER in w for w in masks[3]) == (name == "cfm4")
        gen = leading_term(name, "generator")
        assert set(gen) == {schemes.get(name).order + 1}
    T = estimator_terms("cfm4", "masks")
    assert set(T) == {3, 5} and not any(ABSORBER in w for w in T[5])


def _config(kind, rng, scheme="cfm4", method="chebyshev", dt=None):
    """An input the estimate was not tuned on: random parameters of each kind of drive."""
    u = rng.uniform
    if kind == "abrupt":          # centres set moving at t = 0 (no ramp), out of phase
        grid = {"x_min": -8.0, "x_max": 8.0, "dx": 0.2, "stencil": 5}
        f = u(1.5, 3.5)
        pot = {"a": u(0.4, 1.0), "centres": [
            {"x0": -u(0.8, 1.4), "Z": u(1.0, 2.0), "amplitude": u(0.2, 0.5), "frequency": f},
            {"x0": u(0.8, 1.4), "Z": u(1.0, 2.0), "amplitude": u(0.2, 0.5), "frequency": f,
             "phase": u(0.5, 2.0)}]}
        extra, time = {}, {"dt": dt or 0.02, "t_end": 3.0}
    elif kind == "ramped":
        grid = {"x_min": -8.0, "x_max": 8.0, "dx": 0.1, "stencil": "dvr"}
        f, r = u(3.0, 5.0), u(1.0, 2.0)
        pot = {"a": u(0.2, 0.5), "centres": [
            {"x0": -1.0, "Z": u(3.0, 6.0), "amplitude": u(0.2, 0.4), "frequency": f, "ramp": r},
            {"x0": 1.0, "Z": u(3.0, 6.0), "amplitude": u(0.2, 0.4), "frequency": f, "ramp": r}]}
        extra, time = {}, {"dt": dt or 0.02, "t_end": 4.0}
    elif kind == "laser":         # a pulse that ionises into an absorber
        grid = {"x_min": -40.0, "x_max": 40.0, "dx": 0.25, "stencil": "dvr"}
        pot = {"a": u(1.2, 2.0), "centres": [{"x0": 0.0, "Z": 1.0}]}
        extra = {"field": {"E0": u(0.06, 0.1), "omega": u(0.2, 0.4), "duration": 40.0,
                           "envelope": "sin2"}, "absorber": {"width": 10.0}}
        time = {"dt": dt or 0.1, "t_end": 40.0}
    else:                          # fast: centres at several times the electron's frequency
        grid = {"x_min": -9.0, "x_max": 9.0, "dx": 0.15, "stencil": 3}
        f = u(7.0, 11.0)
        pot = {"a": 0.5, "centres": [
            {"x0": -1.0, "Z": 2.0, "amplitude": u(0.4, 0.7), "frequency": f},
            {"x0": 1.0, "Z": 2.0, "amplitude": u(0.4, 0.7), "frequency": f}]}
        extra, time = {}, {"dt": dt or 0.01, "t_end": 2.0}
    d = {"name": kind, "grid": grid, "potential": pot, "initial": {"state": 0}, "time": time,
         "propagator": {"method": method, "tolerance": 1e-13, "scheme": scheme},
         "output": {"every": 10, "populations": 3}}
    d.update(extra)
    return parse(d)


@pytest.mark.parametrize("kind, scheme, method", [
    ("abrupt", "cfm4", "chebyshev"), ("abrupt", "midpoint", "chebyshev"),
    ("laser", "cfm4", "chebyshev"),
    pytest.param("laser", "midpoint", "dense", marks=pytest.mark.slow)])   # 17 s: dense N = 320
def test_local_estimate_is_asymptotically_correct(kind, scheme, method):
    """est / true near 1 (its error is O(dt) relative): within 25 % at 2 dt and 10 % at dt.  The laser's state is taken mid-pulse with electrons
    in the absorber (masks for Chebyshev, -i W in the generator for dense)."""
    rng = np.random.default_rng()
    c0 = _config(kind, rng, scheme, method)
    t_at = 20.0 if kind == "laser" else 0.5
    ratios = []
    for dt in (c0.time.dt * 2, c0.time.dt):
        c = with_value(c0, "time.dt", dt)
        plan = tdse.prepare(c, backend="numpy")
        st = plan.stepper()
        j = int(round(t_at / dt))
        psi = advance(st, plan.psi0.astype(complex), 0, j)
        one = st.step(psi, j)
        ref = advance(plan.stepper(with_value(c, "time.dt", dt / 64)), psi, 64 * j, 64 * j + 64)
        true = np.linalg.norm(one - ref) * np.sqrt(c.grid.dx)
        est = LocalError(c).norm(psi, j * dt, dt)
        ratios.append(est / true)
    assert abs(ratios[0] - 1) < 0.25 and abs(ratios[1] - 1) < 0.1, ratios


def _reference(config):
    """psi(t_end) at dt/8, Chebyshev at 1e-14: an independent run."""
    ref = with_value(with_value(with_value(config, "time.dt", config.time.dt / 8),
                                "propagator.method", "chebyshev"), "propagator.tolerance", 1e-14)
    ref = dataclasses.replace(ref, propagator=dataclasses.replace(ref.propagator, time_error="none"))
    plan = tdse.prepare(ref, backend="numpy")
    return plan, advance(plan.stepper(), plan.psi0.astype(complex), 0, ref.time.steps)


@pytest.mark.parametrize("kind", ["abrupt", "ramped", "laser", "fast"])
@pytest.mark.parametrize("scheme", ["cfm4", "midpoint"])
def test_stated_error_bounds_the_true_one(kind, scheme):
    """#56 'done when' 1: the stated error at t_end within 1-10x of the true one (it is
    2x the carried error, measured 1.0-1.5x the true one on hand-made versions of these);
    the populations' stated error at or above their true error."""
    rng = np.random.default_rng()
    c = _config(kind, rng, scheme)
    c = dataclasses.replace(c, propagator=dataclasses.replace(c.propagator, time_error="estimate"))
    res = tdse.simulate(c, backend="numpy")
    te = res.time_error
    assert te["kind"] == "estimate" and te["t_compared"] == pytest.approx(c.time.t_end)
    plan, ref = _reference(c)
    psi = res.psi[-1]
    true = phase_blind_distance(psi, ref, c.grid.dx)
    ratio = te["error_at_t_end"] / true
    assert 1.0 <= ratio <= 10.0, (kind, scheme, te["error_at_t_end"], true)
    phi = plan.states[:c.output.populations]
    P = np.abs(phi @ psi * c.grid.dx) ** 2
    Pref = np.abs(phi @ ref * c.grid.dx) ** 2
    assert te["population_error_at_t_end"] >= np.abs(P - Pref).max()


def test_estimate_is_stored_per_snapshot_and_resumes(tmp_path, interrupt_after):
    """Rows per snapshot; a run interrupted and resumed from its file holds the same bits in
    every time-error row as the run straight through (the carried error is kept in /resume)."""
    from tdse.run.driver import run
    from tdse.run.interrupts import Interrupted
    from tdse.run.snapshots import read, resume_state
    rng = np.random.default_rng()
    c = _config("abrupt", rng)
    c = dataclasses.replace(c, propagator=dataclasses.replace(c.propagator, time_error="estimate"))
    ref = read(run(c, tmp_path / "ref", backend="numpy").path)
    te = ref["snapshots/time_error"]
    assert te.shape == ref["snapshots/t"].shape and te[0] == 0 and np.all(te[1:] > 0)
    assert np.all(np.isfinite(ref["snapshots/time_error_populations"]))
    armed = interrupt_after(4, "SIGTERM")
    with pytest.raises(Interrupted):
        run(c, tmp_path / "cut", backend="numpy")
    armed.disarm()
    part = str(tmp_path / "cut" / f"{c.name}.h5.part")
    st = resume_state(part)
    assert st["error_vector"] is not None and 0 < st["step"] < c.time.steps
    got = read(run(c, None, backend="numpy", resume=(st, part)).path)
    for k in ("snapshots/time_error", "snapshots/time_error_populations", "snapshots/psi"):
        assert np.array_equal(got[k], ref[k]), k


def test_bad_time_error_kind_is_one_line():
    from tdse.errors import ConfigError
    rng = np.random.default_rng(1)
    c = _config("abrupt", rng)
    with pytest.raises(ConfigError, match="propagator.time_error"):
        with_value(c, "propagator.time_error", "guess")
