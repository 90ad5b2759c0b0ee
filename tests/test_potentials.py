"""The named potentials of tdse/potentials/ (one file each, issue #54): every kind's formula
parses with its parameters; the Poschl-Teller well's and the harmonic oscillator's bound
states against their analytic energies; a driven harmonic oscillator's <x>(t) against the
classical driven oscillator (Ehrenfest's theorem is exact for a linear force), solved by
SciPy; the keys refused or written back as every other input's."""
from __future__ import annotations

import numpy as np
import pytest

import tdse
from tdse import config as tdse_config
from tdse.errors import ConfigError
from tdse.expression import parse
from tdse.keys import input_reference, key_unit, to_toml
from tdse.potentials import KINDS

INPUT = """
name = "named"
[grid]
x_min = {lo}
x_max = {hi}
dx = {dx}
stencil = "dvr"
[potential]
kind = "{kind}"
parameters = {parameters}
[time]
dt = 0.05
t_end = 0.1
[output]
populations = 6
"""


def _config(kind, parameters, lo=-40.0, hi=40.0, dx=0.1, extra=""):
    body = "{" + ", ".join(f"{k} = {v!r}" for k, v in parameters.items()) + "}"
    return tdse_config.loads(INPUT.format(lo=lo, hi=hi, dx=dx, kind=kind, parameters=body) + extra)


def test_every_kind_is_a_formula_of_its_parameters():
    """Each module's formula parses with x, t and exactly its parameters, and every kind
    is documented in docs/INPUT.md's table and the registry of the model."""
    from tdse.model.potential import POTENTIALS
    assert {"poschl_teller", "harmonic"} <= set(KINDS)
    for kind in KINDS.values():
        names = tuple(q.name for q in kind.parameters)
        assert len(set(names)) == len(names)
        assert parse(kind.formula, ("x", "t") + names, kind.name).names() <= {"x", "t", *names}
        assert f"`{kind.name}`" in input_reference()
        assert kind.name in POTENTIALS


def test_poschl_teller_bound_states_are_analytic():
    """E_n = -alpha^2 (lam - n)^2 / 2 for n < lam (Landau & Lifshitz section 23), at fresh
    random lam, alpha, x0: the DVR is spectrally accurate, so 1e-8 (the weakest state kept
    decays within 1/(alpha (lam - n)) <= 6 bohr of a 70-bohr box)."""
    rng = np.random.default_rng()
    lam = rng.uniform(1.3, 3.6)
    alpha = rng.uniform(0.6, 1.1)
    x0 = rng.uniform(-3, 3)
    n = np.arange(int(np.floor(lam)) + 1)
    n = n[lam - n >= 0.3]
    plan = tdse.prepare(_config("poschl_teller", {"lam": lam, "alpha": alpha, "x0": x0}), backend="numpy")
    exact = -alpha ** 2 * (lam - n) ** 2 / 2
    np.testing.assert_allclose(np.asarray(plan.energies)[: len(n)], exact, rtol=0, atol=1e-8)
    assert plan.energies[len(n)] > exact[-1]          # no bound state missing or spurious


def test_harmonic_levels_are_analytic():
    """E_n = omega (n + 1/2) at a fresh random omega, the lowest six, to 1e-9."""
    omega = np.random.default_rng().uniform(0.6, 2.0)
    plan = tdse.prepare(_config("harmonic", {"omega": omega}, lo=-16.0, hi=16.0), backend="numpy")
    np.testing.assert_allclose(np.asarray(plan.energies)[:6], omega * (np.arange(6) + 0.5),
                               rtol=0, atol=1e-9)


def test_driven_harmonic_oscillator_follows_the_classical_one():
    """Under E(t) = E0 sin^2(pi t / T) sin(w t), <x>(t) of the quantum oscillator obeys
    x'' = -omega^2 x - E(t) exactly (linear force), which SciPy's solve_ivp integrates to
    1e-12; cfm4 at dt = 0.02 and the DVR agree to 1e-6 of the 0.1-bohr response (the 4th
    order time error ~ (omega dt)^4 per unit time is ~1e-8 here)."""
    from scipy.integrate import solve_ivp
    rng = np.random.default_rng()
    omega, x0 = rng.uniform(0.8, 1.2), rng.uniform(-1, 1)
    E0, w, T = 0.05, rng.uniform(0.4, 0.6), 12.0
    field = f"\n[field]\nE0 = {E0!r}\nomega = {w!r}\nduration = {T!r}\n"
    cfg = _config("harmonic", {"omega": omega, "x0": x0}, lo=-16.0, hi=16.0, dx=0.2, extra=field)
    import dataclasses
    cfg = dataclasses.replace(cfg, time=dataclasses.replace(cfg.time, t_end=T, dt=0.02),
                              propagator=dataclasses.replace(cfg.propagator, scheme="cfm4"))
    obs = tdse.simulate(cfg, backend="numpy").observables

    def rhs(t, y):
        E = E0 * np.sin(np.pi * t / T) ** 2 * np.sin(w * t)
        return [y[1], -omega ** 2 * (y[0] - x0) - E]

    ref = solve_ivp(rhs, (0, T), [x0, 0.0], t_eval=obs["t"], rtol=1e-12, atol=1e-14, method="DOP853")
    response = np.max(np.abs(ref.y[0] - x0))
    assert response > 0.02
    np.testing.assert_allclose(obs["x_mean"], ref.y[0], rtol=0, atol=1e-6 * max(1.0, response / 0.1))


def test_keys_are_checked_and_written_back():
    """A parameter a kind does not have, a bad value, a soft-core key: one line naming the
    key; defaults filled; the effective input reads back equal; a scan key's unit."""
    cfg = _config("poschl_teller", {"lam": 2.0})
    assert dict(cfg.potential.parameters) == {"lam": 2.0, "alpha": 1.0, "x0": 0.0}
    assert tdse_config.loads(to_toml(cfg)) == cfg
    with pytest.raises(ConfigError, match=r"potential\.parameters\.Z.*allowed: lam, alpha, x0"):
        _config("poschl_teller", {"Z": 1.0})
    with pytest.raises(ConfigError, match=r"potential\.parameters\.alpha.*> 0"):
        _config("poschl_teller", {"alpha": -1.0})
    with pytest.raises(ConfigError, match=r"potential\.a.*not read by kind = \"harmonic\""):
        tdse_config.loads(INPUT.format(lo=-8.0, hi=8.0, dx=0.1, kind="harmonic", parameters="{}")
                          .replace("[time]", "a = 1.0\n[time]"))
    with pytest.raises(ConfigError, match=r"potential\.kind.*\"poschl_teller\""):
        _config("poschl_teler", {})
    moved = tdse_config.with_value(cfg, "potential.parameters.alpha", 0.5)
    assert dict(moved.potential.parameters)["alpha"] == 0.5
    assert key_unit("potential.parameters.alpha") == "1/bohr"
    assert key_unit("potential.parameters.x0") == "bohr"
