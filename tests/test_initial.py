"""[initial] (tdse/model/initial.py, #55 item 4): a superposition of H(0)'s eigenstates and
psi from a run file's snapshot, against independent values -- the two-state beat of <x>(t)
at E1 - E0 (analytic for a static H), a static run continued from its own snapshot -- and
bad values as one line."""
from __future__ import annotations

import os

import numpy as np
import pytest

import tdse
from tdse import config as tdse_config
from tdse.errors import ConfigError

STATIC = """
name = "{name}"
[grid]
x_min = -15.0
x_max = 15.0
dx = 0.1
stencil = "dvr"
[potential]
a = 1.0
[[potential.centres]]
x0 = 0.0
Z = 1.0
[initial]
{initial}
[time]
dt = 0.05
t_end = {t_end}
[propagator]
tolerance = 1e-12
[output]
every = 10
populations = 3
"""


def test_a_two_state_superposition_beats_at_the_level_spacing():
    """psi(0) = (phi0 + 0.5 e^(0.3 i) phi1)/norm under a static H: P_0 = 0.8, P_1 = 0.2 for
    all t, and <x>(t) = 2 Re(c0* c1 e^(-i (E1 - E0) t)) <0|x|1> exactly (the two-state
    solution, with <0|x|0> and <1|x|1> of the grid's eigenstates), to 1e-9."""
    cfg = tdse_config.loads(STATIC.format(name="sup", t_end=4.0, initial='state = "superposition"\n'
                                          'amplitudes = [1.0, 0.5]\nphases = [0.0, 0.3]'))
    res = tdse.simulate(cfg, backend="numpy")
    obs = res.observables
    P = obs["populations_h0"]
    assert np.allclose(P[:, 0], 0.8, atol=1e-10) and np.allclose(P[:, 1], 0.2, atol=1e-10)
    E, phi, x, dx = res.energies, res.states, res.x, cfg.grid.dx
    c0, c1 = 1 / np.sqrt(1.25), 0.5 * np.exp(0.3j) / np.sqrt(1.25)
    xm = phi[:2] @ (x[:, None] * phi[:2].T) * dx          # <m|x|n> (the grid is not symmetric)
    want = (2 * np.real(np.conj(c0) * c1 * np.exp(-1j * (E[1] - E[0]) * obs["t"])) * xm[0, 1]
            + abs(c0) ** 2 * xm[0, 0] + abs(c1) ** 2 * xm[1, 1])
    assert np.abs(obs["x_mean"] - want).max() < 1e-9
    assert np.ptp(obs["x_mean"]) > 0.1                       # it does beat


def test_a_run_starts_from_a_snapshot_of_another(tmp_path):
    """A static run to t = 1 continued by a second run from its last snapshot over 1 more
    equals the run to t = 2 (the same exponential a step: to rounding); a middle snapshot
    by its index; psi taken as stored."""
    full = tdse.simulate(tdse_config.loads(STATIC.format(name="full", t_end=2.0, initial="state = 1")),
                         backend="numpy")
    first = tdse.simulate(tdse_config.loads(STATIC.format(name="first", t_end=1.0, initial="state = 1")),
                          backend="numpy", out=str(tmp_path))
    path = os.path.relpath(first.path)
    second = tdse.simulate(tdse_config.loads(STATIC.format(
        name="second", t_end=1.0, initial=f'state = "file:{path}"')), backend="numpy")
    assert np.abs(second.psi[-1] - full.psi[-1]).max() < 1e-12
    mid = tdse_config.loads(STATIC.format(name="mid", t_end=0.5, initial=f'state = "file:{path}"\nsnapshot = 1'))
    from tdse.model.grid import points
    from tdse.model.initial import initial_state
    np.testing.assert_array_equal(initial_state(mid, points(mid.grid), None), first.psi[1])


@pytest.mark.parametrize("initial, key, words", [
    ('state = "superposition"', "initial.amplitudes", "non-zero"),
    ('state = "superposition"\namplitudes = [0.0, 0.0]', "initial.amplitudes", "non-zero"),
    ('state = "superposition"\namplitudes = [1.0, "a"]', "initial.amplitudes[1]", "number"),
    ('state = "superposition"\namplitudes = [1.0, 1.0]\nphases = [0.1]', "initial.phases", "2..2"),
    ('state = 0\namplitudes = [1.0]', "initial.amplitudes", "superposition"),
    ('state = "file:nowhere.h5"', "initial.state", "names no file"),
    ('state = "excited"', "initial.state", "must be"),
    ('state = "gaussian"\nsnapshot = 2', "initial.snapshot", "file"),
])
def test_bad_initial_values_are_one_line(initial, key, words):
    with pytest.raises(ConfigError) as e:
        tdse_config.loads(STATIC.format(name="bad", t_end=1.0, initial=initial))
    assert e.value.key == key and words in str(e.value) and "\n" not in str(e.value)


def test_a_file_of_another_grid_or_snapshot_is_refused(tmp_path):
    first = tdse.simulate(tdse_config.loads(STATIC.format(name="g", t_end=0.5, initial="state = 0")),
                          backend="numpy", out=str(tmp_path))
    other = STATIC.replace("dx = 0.1", "dx = 0.2").format(name="o", t_end=0.5,
                                                          initial=f'state = "file:{first.path}"')
    with pytest.raises(ConfigError) as e:
        tdse.simulate(tdse_config.loads(other), backend="numpy")
    assert e.value.key == "initial.state" and "not this run's" in str(e.value)
    far = STATIC.format(name="f", t_end=0.5, initial=f'state = "file:{first.path}"\nsnapshot = 7')
    with pytest.raises(ConfigError) as e:
        tdse.simulate(tdse_config.loads(far), backend="numpy")
    assert e.value.key == "initial.snapshot" and "holds 2 snapshots" in str(e.value)
