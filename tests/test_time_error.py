"""The time error a run states bounds its true error (#24 item 1): on a shipped input, on a
ramped drive (ramp = 5 a.u.) and on a laser pulse, the stated error at t_end (the companion
at dt/2 over the whole run) is between 1x and 10x the distance to an independent run at
dt/4 (exponentials at 1e-14; docs/time_error/check_time_error.py, which also records the
full-length runs of every shipped input in docs/time_error/)."""
from __future__ import annotations

import dataclasses
import os
import sys
import tempfile

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "docs", "time_error"))
import check_time_error  # noqa: E402


#: a laser pulse the estimate was not designed on, small enough for CI (the recorded
#: check has a larger one with absorbers: docs/time_error/)
PULSE = """
name = "pulse_ci"
[grid]
x_min = -30.0
x_max = 30.0
dx = 0.4
stencil = "dvr"
[potential]
a = 2.0
[[potential.centres]]
x0 = 0.0
Z = 1.0
[field]
E0 = 0.06
omega = 0.25
duration = 30.0
envelope = "gaussian"
fwhm = 10.0
[time]
dt = 0.1
t_end = 30.0
[propagator]
scheme = "cfm4"
method = "chebyshev"
tolerance = 1e-12
[output]
every = 10
"""


@pytest.mark.slow
# the horizons shortened for CI's time (#58 item 8), stated/true the same: h2plus_moving_ramped
# 1.996 at t = 1 against 1.998 at 2 (4.4 s against 14 s), thesis_fig6_ramp5 1.600 at 0.6 and 1.2
@pytest.mark.parametrize("case, t_end", [("h2plus_moving_ramped", 1.0), ("thesis_fig6_ramp5", 0.6),
                                         ("pulse_ci", 30.0)])
def test_stated_time_error_bounds_the_true_one(case, t_end, monkeypatch):
    monkeypatch.setitem(check_time_error.CASES, "pulse_ci", (PULSE, []))
    monkeypatch.setitem(check_time_error.QUICK, case, t_end)
    r = check_time_error.check(case, quick=True)
    assert r["true"] <= r["stated"] <= 10 * r["true"], r
    assert r["companion_fraction"] > 0


def test_companion_estimate_is_stored_per_snapshot():
    import tdse
    cfg = tdse.load_config(os.path.join(os.path.dirname(HERE), "inputs", "tiny.toml"))
    cfg = cfg.with_value("propagator.method", "dense").with_value("propagator.time_error", "companion")
    res = tdse.simulate(cfg, backend="numpy")
    d = res.arrays()
    te, tp = d["snapshots/time_error"], d["snapshots/time_error_populations"]
    assert te.shape == d["snapshots/t"].shape and np.all(np.isfinite(te)) and te[0] == 0
    assert res.time_error["error_at_t_end"] == te[-1] and res.time_error["kind"] == "companion"
    assert np.all(tp <= 2 * te + 1e-15)   # |dP| <= 2 ||d psi||, both with the same safety
    assert res.time_error["companion_dt"] == cfg.time.dt / 2


def test_window_and_none_are_still_available():
    import tdse
    cfg = tdse.load_config(os.path.join(os.path.dirname(HERE), "inputs", "tiny.toml"))
    cfg = cfg.with_value("propagator.method", "dense")
    w = tdse.simulate(cfg.with_value("propagator.time_error", "window"), backend="numpy")
    assert "error_at_window" in w.time_error and np.all(np.isnan(w.arrays()["snapshots/time_error"]))
    # #58 item 7: no number past the window (its linear extrapolation was 8x under on a
    # ramped drive), and the file says the window covers nothing later
    assert not any(k.startswith("error_at_t_end") for k in w.time_error), w.time_error
    assert "says nothing about later times" in w.time_error["meaning"]
    n = tdse.simulate(cfg.with_value("propagator.time_error", "none"), backend="numpy")
    assert n.time_error is None
    with pytest.raises(tdse.config.ConfigError, match="error_window"):
        cfg.with_value("propagator.error_window", 0.1)       # only with time_error = "window"


def test_the_stated_population_error_bounds_the_true_one():
    """#58 7b: the companion's stated error of the populations (and of psi) at t_end lies
    between 1x and 10x the true error -- the distance to an independent run at dt/8 (the
    dense exponent: exact to rounding) -- so a population error stated as 0 (or as psi's)
    fails here, not only in the slow cases.  tiny.toml: stated 1.29e-11 against a true
    9.0e-12 in the populations, 4.0e-11 against 2.1e-11 in psi."""
    import tdse
    cfg = tdse.load_config(os.path.join(os.path.dirname(HERE), "inputs", "tiny.toml"))
    cfg = cfg.with_value("propagator.method", "dense").with_value("propagator.time_error", "companion")
    d = tdse.simulate(cfg, backend="numpy").arrays()
    fine = cfg.with_value("time.dt", cfg.time.dt / 8).with_value("propagator.time_error", "none").with_value(
        "output.every", 8 * cfg.output.every).with_value("output.observables_every", 8 * cfg.output.observables_every)
    ref = tdse.simulate(fine, backend="numpy").arrays()
    assert np.allclose(ref["observables/t"], d["observables/t"], rtol=0, atol=1e-12)
    for k in ("observables/populations_h0", "observables/populations_ht"):
        true = np.abs(d[k][-1] - ref[k][-1]).max()
        stated = d["snapshots/time_error_populations"][-1]
        assert true <= stated <= 10 * true, (k, true, stated)
    a, b = d["snapshots/psi"][-1], ref["snapshots/psi"][-1]
    z = np.vdot(b, a)
    true = np.linalg.norm(a - z / abs(z) * b) * np.sqrt(cfg.grid.dx)
    assert true <= d["snapshots/time_error"][-1] <= 10 * true


def test_the_largest_stated_error_is_reported_where_it_is():
    """#58 7b: the run's summary (result, file, printed line) names the largest stated error
    at the snapshot that holds it -- on tiny.toml the first comparison (t = 0.1), not t_end --
    and the populations' largest as the largest of their column."""
    import tdse
    from tdse.run import timeerror
    cfg = tdse.load_config(os.path.join(os.path.dirname(HERE), "inputs", "tiny.toml"))
    r = tdse.simulate(cfg.with_value("propagator.method", "dense"), backend="numpy")
    d, e = r.arrays(), r.time_error
    te, tp, t = d["snapshots/time_error"], d["snapshots/time_error_populations"], d["snapshots/t"]
    i = int(np.argmax(te))
    assert 0 < i < len(t) - 1                      # the largest is not the last: a real check
    assert e["max_error"] == te[i] and e["t_max_error"] == t[i]
    assert e["error_at_t_end"] == te[-1] and e["t_compared"] == t[-1] and e["comparisons"] == len(t)
    assert e["max_population_error"] == tp.max() and e["population_error_at_t_end"] == tp[-1]
    line = timeerror.describe(e)
    assert f"largest {te[i]:.2g} at t = {t[i]:.4g}" in line and f"{te[-1]:.2g} at t = {t[-1]:.4g}" in line


@pytest.mark.parametrize("duration, t_end, window, start", [
    (30.0, 30.0, 2.1, 140),     # the pulse's peak at step 150: 21 steps from 150 - 10
    (10.0, 30.0, 2.1, 40),      # a pulse shorter than the run: its peak at step 50
    (30.0, 30.0, 40.0, 0),      # a window longer than the run: from the start
    (None, 30.0, 2.1, 0),       # no field: from the start, where an abrupt drive kicks
    (1.5, 1.5, 1.5, 0)])        # W = the run's 15 steps, the peak rounded past W // 2: still 0
def test_the_window_sits_on_the_pulses_peak(duration, t_end, window, start):
    """#58 7b: window_start by hand -- the window's W steps centred on the peak, duration/2
    (or t_end/2 if sooner), W // 2 before it, within the run."""
    import tdse
    from tdse.run.timeerror import window_start
    cfg = tdse.config.loads(PULSE.replace("t_end = 30.0", f"t_end = {t_end}").replace(
        "duration = 30.0", f"duration = {duration or 30.0}"))
    cfg = cfg.with_value("propagator.time_error", "window").with_value("propagator.error_window", min(window, t_end))
    if duration is None:
        cfg = dataclasses.replace(cfg, potential=dataclasses.replace(cfg.potential, field=None))
    assert window_start(cfg) == start


def test_the_window_estimate_is_step_doubling_over_its_window():
    """#58 7b: time_error = "window" compares psi_dt at the window's end with psi taken from
    the window's start over twice as many steps at dt/2 (computed here apart, through the
    loop with a plan at dt/2), their phase-blind distance x 2^p / (2^p - 1), at the steps
    and times window_start gives; the file holds the result and the printed line says the
    window covers nothing later."""
    import tdse
    from tdse.run.timeerror import describe, phase_blind_distance, window_start
    cfg = tdse.config.loads(PULSE).with_value("propagator.time_error", "window").with_value(
        "propagator.error_window", 2.1).with_value("output.every", 10)
    res = tdse.simulate(cfg, backend="numpy")
    e, dt, s = res.time_error, cfg.time.dt, window_start(cfg)
    assert (e["window_steps"], e["order"], e["dt"]) == (21, 4, dt) and s == 140
    assert e["t_window_start"] == pytest.approx(s * dt) and e["t_window"] == pytest.approx((s + 21) * dt)
    plain = tdse.config.loads(PULSE).with_value("propagator.time_error", "none").with_value("output.every", 10)
    at = tdse.prepare(plain, backend="numpy")
    psi_s = tdse.evolve(at, at.psi0, stop=s).psi
    psi_dt = tdse.evolve(at, psi_s, start=s, stop=s + 21).psi
    half = tdse.prepare(plain.with_value("time.dt", dt / 2), backend="numpy")
    psi_half = tdse.evolve(half, psi_s, start=2 * s, stop=2 * (s + 21)).psi
    d = phase_blind_distance(psi_dt, psi_half, cfg.grid.dx)
    assert d > 1e-12 and e["psi_diff_dt_vs_half"] == pytest.approx(d, rel=1e-6)
    assert e["error_at_window"] == pytest.approx(d * 16 / 15, rel=1e-6)
    assert e["psi_l2_diff_with_phase"] >= e["psi_diff_dt_vs_half"]
    assert "t = 14..16.1 (21 steps)" in describe(e) and "nothing about later times" in describe(e)


@pytest.mark.parametrize("kind", ["companion", "estimate"])
def test_each_estimates_summary_holds_what_the_run_did(kind):
    """#58 7b: the stored summary of each whole-run estimate against the run's own numbers:
    scheme, order and dt; the companion's dt/2 and method; the estimate's steps (fixed: the
    run's), no rejection, its transport's tolerance; the populations' bound at t_end as
    max_n (2 sqrt(P_n) E + E^2) from the file's populations and E; each estimate's cost as a
    fraction of the stepping; the file's attribute equal to the result."""
    import json

    import h5py

    import tdse
    from tdse.run.timeerror import SAFETY
    cfg = tdse.config.loads(PULSE).with_value("propagator.time_error", kind)
    with tempfile.TemporaryDirectory() as out:
        res = tdse.simulate(cfg, backend="numpy", out=out)
        with h5py.File(res.path) as f:
            stored = json.loads(f.attrs["time_error"])
            E = f["snapshots/time_error"][-1]
            P = f["observables/populations_h0"][-1]
    e = res.time_error
    assert stored == json.loads(json.dumps(e))
    assert (e["kind"], e["scheme"], e["order"], e["dt"], e["safety"], e["t_end"]) == (
        kind, "cfm4", 4, cfg.time.dt, SAFETY, cfg.time.t_end)
    assert e["error_at_t_end"] == E and e["comparisons"] == cfg.time.steps // cfg.output.every + 1
    if kind == "companion":
        assert e["companion_dt"] == cfg.time.dt / 2 and e["companion_method"] == cfg.propagator.method
        assert 0 < e["companion_seconds"] and 0 < e["companion_fraction"] < 50
    else:
        assert e["steps_taken"] == cfg.time.steps and e["rejected"] == 0 and e["tolerance"] is None
        assert e["carried_by"].startswith("split step") and e["products_per_step"] > 0   # (the host's)
        assert e["population_bound_at_t_end"] == pytest.approx(float((2 * np.sqrt(P) * E + E * E).max()), rel=1e-6)
        assert 0 < e["estimate_seconds"] and 0 < e["estimate_fraction"] < 50


def test_the_phase_blind_distance_is_the_smallest_over_global_phases():
    """#58 7b: phase_blind_distance(a, b) = min over alpha of ||a - e^(i alpha) b|| (weight
    dx), against a brute-force minimum over 20000 phases on fresh random states (an overlap
    of modulus below 1, at a random phase), and sqrt(||a||^2 + ||b||^2) for orthogonal (disjoint)
    states, where every phase gives the same distance."""
    from tdse.run.timeerror import phase_blind_distance
    rng = np.random.default_rng()
    dx = rng.uniform(0.05, 0.5)
    a = rng.standard_normal(64) + 1j * rng.standard_normal(64)
    b = (0.3 * a + rng.standard_normal(64)) * np.exp(1j * rng.uniform(0, 2 * np.pi))
    a, b = a / np.linalg.norm(a) * 0.9, b / np.linalg.norm(b) * 0.8   # |<b, a>| < 1
    assert 0 < abs(np.vdot(b, a)) < 1
    alphas = np.linspace(0, 2 * np.pi, 20001)
    brute = np.sqrt((np.abs(a[None, :] - np.exp(1j * alphas)[:, None] * b[None, :]) ** 2).sum(axis=1) * dx).min()
    assert phase_blind_distance(a, b, dx) == pytest.approx(brute, rel=1e-6)
    a[32:], c = 0, np.where(np.arange(64) >= 32, b, 0)                # disjoint: <c, a> = 0 exactly
    assert np.vdot(c, a) == 0
    want = np.sqrt((np.vdot(a, a).real + np.vdot(c, c).real) * dx)
    assert phase_blind_distance(a, c, dx) == pytest.approx(want, rel=1e-12)


def test_a_summary_without_comparisons_states_nothing():
    """#58 7b: an estimate with no comparison (a run stopped before its first snapshot) has
    NaN errors and no times, not zeros."""
    import math

    from tdse.run.timeerror import _summary
    s = _summary([])
    assert s["comparisons"] == 0
    for k in ("error_at_t_end", "t_compared", "max_error", "t_max_error", "population_error_at_t_end",
              "max_population_error"):
        assert math.isnan(s[k]), k
    s = _summary([(0.0, 0.0, 0.0), (1.0, 3e-9, 1e-10), (2.0, 2e-9, 4e-10)])
    assert (s["max_error"], s["t_max_error"], s["max_population_error"]) == (3e-9, 1.0, 4e-10)
    assert (s["error_at_t_end"], s["t_compared"], s["population_error_at_t_end"]) == (2e-9, 2.0, 4e-10)
