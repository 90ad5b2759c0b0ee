"""The named potentials of tdse/potentials/ (one file each, issue #54): every kind's formula
parses with its parameters; the Poschl-Teller well's bound states against their analytic
energies; the keys refused or written back as every other input's."""
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
    assert "poschl_teller" in KINDS
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
    with pytest.raises(ConfigError, match=r"potential\.a.*not read by kind = \"poschl_teller\""):
        tdse_config.loads(INPUT.format(lo=-8.0, hi=8.0, dx=0.1, kind="poschl_teller", parameters="{}")
                          .replace("[time]", "a = 1.0\n[time]"))
    with pytest.raises(ConfigError, match=r"potential\.kind.*\"poschl_teller\""):
        _config("poschl_teler", {})
    moved = tdse_config.with_value(cfg, "potential.parameters.alpha", 0.5)
    assert dict(moved.potential.parameters)["alpha"] == 0.5
    assert key_unit("potential.parameters.alpha") == "1/bohr"
    assert key_unit("potential.parameters.x0") == "bohr"
