"""A potential given as a Python function V(x, t) (tdse.with_potential, #55 item 3): the
soft-core atom written as a function against the built-in centres, a moving H2+ written as a
function against the same molecule as a formula, its gradient, and the one-line refusals
(a wrong shape, a failing or non-finite function, scans, reading it back from TOML)."""
from __future__ import annotations

import numpy as np
import pytest

import tdse
from tdse.config import ConfigError, loads, with_values

ATOM = """
name = "callable"
[grid]
x_min = -30.0
x_max = 30.0
dx = 0.2
stencil = 3
[potential]
a = 2.0
[[potential.centres]]
x0 = 0.0
Z = 1.0
[field]
E0 = 0.05
omega = 0.3
duration = 20.0
[time]
dt = 0.05
t_end = 10.0
[propagator]
method = "chebyshev"
time_error = "none"
[output]
every = 50
"""


def test_the_soft_core_atom_as_a_function_equals_the_built_in_one():
    """The same operations as potential.coulomb: psi and every observable to 1e-13 (the
    acceleration from the central difference, h = 1e-4: to 1e-8)."""
    base = loads(ATOM)
    c = tdse.with_potential(base, lambda x, t: -1.0 / np.sqrt(x ** 2 + 2.0), name="soft_core_atom")
    assert c.potential.kind == "callable" and not c.potential.moves
    a, b = tdse.simulate(c, backend="numpy"), tdse.simulate(base, backend="numpy")
    assert np.abs(np.asarray(a.psi[-1]) - np.asarray(b.psi[-1])).max() < 1e-13
    for k in ("energy", "x_mean", "populations_h0", "norm"):
        assert np.abs(np.asarray(a.observables[k]) - np.asarray(b.observables[k])).max() < 1e-13, k
    assert np.abs(np.asarray(a.observables["acceleration"]) - np.asarray(b.observables["acceleration"])).max() < 1e-8


def test_a_moving_molecule_as_a_function_equals_it_as_a_formula():
    """Random motion R(t) = R0 + r sin(w t): the function's run against the formula's (the
    whitelist's evaluation of the same text) to 1e-10; with its gradient given, the
    acceleration to 1e-10 as well."""
    rng = np.random.default_rng()
    R0, r, w = rng.uniform(1.5, 3.0), rng.uniform(0.2, 0.6), rng.uniform(0.1, 0.5)
    text = f"-1 / sqrt((x - ({R0} + {r} * sin({w} * t)) / 2)**2 + 1) - 1 / sqrt((x + ({R0} + {r} * sin({w} * t)) / 2)**2 + 1)"
    src = ATOM.replace("a = 2.0\n[[potential.centres]]\nx0 = 0.0\nZ = 1.0\n", f'kind = "expression"\nV = "{text}"\n')
    formula = with_values(loads(src), [("time.t_end", 5.0), ("output.populations", 2)])

    def V(x, t):
        R = R0 + r * np.sin(w * t)
        return -1 / np.sqrt((x - R / 2) ** 2 + 1) - 1 / np.sqrt((x + R / 2) ** 2 + 1)

    def dV(x, t):
        R = R0 + r * np.sin(w * t)
        return sum((x - s * R / 2) / ((x - s * R / 2) ** 2 + 1) ** 1.5 for s in (1, -1))

    c = tdse.with_potential(formula, V, gradient=dV)
    assert c.potential.moves and c.time_dependent
    a, b = tdse.simulate(c, backend="numpy"), tdse.simulate(formula, backend="numpy")
    assert np.abs(np.asarray(a.psi[-1]) - np.asarray(b.psi[-1])).max() < 1e-10
    for k in ("energy", "acceleration", "populations_ht"):
        assert np.nanmax(np.abs(np.asarray(a.observables[k]) - np.asarray(b.observables[k]))) < 1e-10, k


def test_callable_refusals(tmp_path):
    base = loads(ATOM)
    with pytest.raises(ConfigError, match=r"potential = 'python:.*<lambda>': returned shape \(3,\)"):
        tdse.with_potential(base, lambda x, t: x[:3])
    with pytest.raises(ConfigError, match=r"failed on the grid: ZeroDivisionError"):
        tdse.with_potential(base, lambda x, t: 1 / 0)
    with pytest.raises(ConfigError, match="not finite"):
        tdse.with_potential(base, lambda x, t: np.log(x))
    with pytest.raises(ConfigError, match="returned complex values"):     # (its imaginary part
        tdse.with_potential(base, lambda x, t: -1.0 / np.sqrt(x ** 2 + 2.0) - 0.1j)   # had been dropped)
    c = tdse.with_potential(base, lambda x, t: -1.0 / np.sqrt(x ** 2 + 2.0))
    with pytest.raises(ConfigError, match=r"potential.kind = 'callable'"):
        tdse.scan(c, {"field.E0": [0.01, 0.02]})
    res = tdse.simulate(c, backend="numpy", out=str(tmp_path))
    from tdse.run.snapshots import read
    d = read(str(res.path))
    with pytest.raises(ConfigError, match=r"potential.kind = 'callable': is a Python function"):
        loads(d["attrs"]["effective_toml"])
