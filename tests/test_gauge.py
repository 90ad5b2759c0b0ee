"""The velocity gauge (``field.gauge = "velocity"``, #55 item 2) and A(t) fields: the vector
potential against quadrature, the grid's momentum operator against dense matrices and its
order in dx, a velocity-gauge run against an ODE solver on H_V(t) built here, and gauge
invariance (|psi|^2, yields, the dipole acceleration, populations after the pulse) against
the length gauge."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.integrate
import scipy.linalg

import tdse
from tdse.config import ConfigError, loads, to_toml, with_values
from tdse.inputs import Field
from tdse.model import hamiltonian as H
from tdse.model.field import field_value, vector_potential

ATOM = """
name = "gauge"
[grid]
x_min = -40.0
x_max = 40.0
dx = 0.2
stencil = "dvr"
[potential]
a = 2.0
[[potential.centres]]
x0 = 0.0
Z = 1.0
[field]
E0 = 0.06
omega = 0.25
duration = 50.26548245743669
[absorber]
width = 15.0
[initial]
state = 0
[time]
dt = 0.05
t_end = 60.0
[propagator]
scheme = "cfm4"
method = "chebyshev"
tolerance = 1e-12
time_error = "none"
[output]
every = 600
"""


def _no_absorber():
    return loads(ATOM.replace("[absorber]\nwidth = 15.0\n", ""))


def _field(env, rng):
    kw = {"gaussian": {"fwhm": rng.uniform(20, 40)}, "trapezoid": {"ramp": rng.uniform(10, 30)}}
    return Field(rng.uniform(0.01, 0.1), rng.uniform(0.05, 0.3), rng.uniform(80, 160),
                 rng.uniform(0, 6), env, **kw.get(env, {}))


@pytest.mark.filterwarnings("ignore::scipy.integrate.IntegrationWarning")
@pytest.mark.parametrize("env", ["sin2", "gaussian", "trapezoid"])
def test_vector_potential_is_minus_the_integral_of_the_field(env):
    rng = np.random.default_rng()
    f = _field(env, rng)
    ts = np.concatenate([[0.0], rng.uniform(0, f.duration, 5), [f.duration, f.duration + 7]])
    kinks = [f.ramp, f.duration - f.ramp] if env == "trapezoid" else []
    want = [-scipy.integrate.quad(lambda s: field_value(f, s), 0, min(t, f.duration), limit=500,
                                  epsabs=1e-14, epsrel=1e-13,
                                  points=[k for k in kinks if k < min(t, f.duration)] or None)[0]
            for t in ts]
    np.testing.assert_allclose(vector_potential(f, ts), want, rtol=0, atol=1e-12)
    assert vector_potential(f, -3.0) == 0.0


def test_an_a_field_has_e_minus_its_derivative():
    """[field] kind = "expression" with A: E = -dA/dt (the tree's derivative), A(0) = 0."""
    rng = np.random.default_rng()
    w, F = rng.uniform(0.1, 0.3), rng.uniform(0.01, 0.1)
    text = f"""name = "a"\n[grid]\nx_min = -10.0\nx_max = 10.0\ndx = 0.5\n[potential]\na = 2.0
[[potential.centres]]\nx0 = 0.0\nZ = 1.0\n[field]\nkind = "expression"\ngauge = "velocity"
A = "F / w * sin(pi * t / T)**2 * cos(w * t) + 0.3"\nduration = 40.0
parameters = {{F = {F}, w = {w}, T = 40.0}}\n[time]\ndt = 0.1\nt_end = 1.0\n"""
    cfg = loads(text)
    f = cfg.field
    t = np.linspace(1.0, 39.0, 7)
    h = 1e-4
    dA = (vector_potential(f, t + h) - vector_potential(f, t - h)) / (2 * h)
    np.testing.assert_allclose(field_value(f, t), -dA, rtol=0, atol=1e-8)
    assert vector_potential(f, 0.0) == 0.0
    A = F / w * np.sin(np.pi * t / 40) ** 2 * np.cos(w * t)
    np.testing.assert_allclose(vector_potential(f, t), A, rtol=0, atol=1e-14)
    assert loads(to_toml(cfg)) == cfg             # the effective input keeps gauge and A


@pytest.mark.parametrize("stencil", [3, 5, "dvr"])
def test_the_momentum_operator_against_dense_matrices_and_its_bounds(stencil):
    rng = np.random.default_rng()
    cfg = with_values(_no_absorber(), [("grid.stencil", stencil), ("grid.x_min", -6.0), ("grid.x_max", 6.0)])
    n, dx = cfg.grid.n, cfg.grid.dx
    v, a, s = rng.uniform(-2, 1, n), rng.uniform(-2, 2), rng.uniform(0.3, 1.5)
    G = H.generator_dense(cfg, s, v, a=a)
    assert np.abs(G - G.conj().T).max() == 0.0
    # p = -i D: the stencil's derivative written out here
    D = np.zeros((n, n))
    if stencil == "dvr":
        i, j = np.indices((n, n))
        D[i != j] = ((-1.0) ** (i - j))[i != j] / ((i - j)[i != j] * dx)
    else:
        c = {3: [0.5], 5: [8 / 12, -1 / 12]}[stencil]
        for k, ck in enumerate(c, 1):
            D += ck / dx * (np.eye(n, k=k) - np.eye(n, k=-k))
    np.testing.assert_allclose(G - H.generator_dense(cfg, s, v), -1j * a * D, rtol=0, atol=1e-12 / dx)
    X = rng.standard_normal((n, 3)) + 1j * rng.standard_normal((n, 3))
    op = H.Operator(cfg, s, v, np, 1.0, 0.0, a)
    np.testing.assert_allclose(op(X[:, 0]), G @ X[:, 0], rtol=0, atol=1e-11)
    np.testing.assert_allclose(op(X), G @ X, rtol=0, atol=1e-11)
    np.testing.assert_allclose(H.generator_columns(cfg, s, v, 5, 17, np, a), G[:, 5:17], atol=0)
    ev = np.linalg.eigvalsh(G)
    lo, hi = H.spectrum_bounds(stencil, dx, v.min(), v.max(), s, a)
    assert lo <= ev.min() and ev.max() <= hi
    c, r = H.onenorm_bounds(stencil, dx, v.min(), v.max(), s, a, n)
    assert np.abs(G - c * np.eye(n)).sum(axis=0).max() <= r * (1 + 1e-12)


@pytest.mark.parametrize("stencil, order", [(3, 2), (5, 4), ("dvr", None)])
def test_the_momentum_operator_converges_at_the_stencils_order(stencil, order):
    rng = np.random.default_rng()
    k0, w = rng.uniform(0.3, 1.2), rng.uniform(1.5, 2.5)
    errs = []
    for dx in (0.2, 0.1):
        cfg = with_values(loads(ATOM), [("grid.stencil", stencil), ("grid.dx", dx)])
        x = cfg.grid.x_min + dx * np.arange(cfg.grid.n)
        f = np.exp(-(x / w) ** 2 + 1j * k0 * x)
        pf = -1j * (-2 * x / w ** 2 + 1j * k0) * f
        errs.append(np.abs(H.momentum_dense(cfg.grid) @ f - pf).max())
    if order is None:
        assert max(errs) < 1e-10, errs
    else:
        assert 0.8 * 2 ** order < errs[0] / errs[1] < 1.2 * 2 ** order, errs


def _velocity_reference(cfg):
    """psi(t_end) of i psi' = H_V(t) psi, H_V = T + A(t) p + A(t)^2/2 + V with T, p and V
    written here (3-point), by scipy's DOP853 at rtol 1e-12."""
    g, n, dx = cfg.grid, cfg.grid.n, cfg.grid.dx
    x = g.x_min + dx * np.arange(n)
    T = (np.diag(np.full(n, 1.0)) - 0.5 * np.eye(n, k=1) - 0.5 * np.eye(n, k=-1)) / dx ** 2
    P = -1j * (np.eye(n, k=1) - np.eye(n, k=-1)) / (2 * dx)
    V = -1.0 / np.sqrt(x ** 2 + cfg.potential.a)
    E, phi = np.linalg.eigh(T + np.diag(V))
    psi0 = phi[:, 0] / np.sqrt(dx) * np.sign(phi[np.argmax(np.abs(phi[:, 0])), 0]) + 0j

    def rhs(t, y):
        A = vector_potential(cfg.field, t)
        return -1j * ((T + A * P) @ y + (V + 0.5 * A * A) * y)
    sol = scipy.integrate.solve_ivp(rhs, (0.0, cfg.time.t_end), psi0, method="DOP853",
                                    rtol=1e-12, atol=1e-13)
    return sol.y[:, -1]


@pytest.mark.parametrize("method", ["chebyshev", "dense"])
def test_a_velocity_gauge_run_against_an_ode_solver(method):
    """Random pulse parameters; the run's psi(t_end) within 1e-7 of the ODE's (cfm4 at dt =
    0.02: its own error ~1e-9 here), up to the global phase of the ground state's sign."""
    rng = np.random.default_rng()
    cfg = with_values(_no_absorber(), [
        ("grid.stencil", 3), ("grid.x_min", -12.0), ("grid.x_max", 12.0), ("grid.dx", 0.25),
        ("field.gauge", "velocity"), ("field.E0", rng.uniform(0.05, 0.2)),
        ("field.omega", rng.uniform(0.3, 0.8)), ("field.duration", 8.0), ("time.t_end", 8.0),
        ("time.dt", 0.02), ("propagator.method", method)])
    res = tdse.simulate(cfg, backend="numpy")
    ref = _velocity_reference(cfg)
    psi = res.psi[-1]
    phase = np.vdot(ref, psi) / abs(np.vdot(ref, psi))
    err = np.linalg.norm(psi - phase * ref) * np.sqrt(cfg.grid.dx)
    assert err < 1e-7 and abs(abs(phase) - 1) < 1e-12
    # and the field mattered: |psi| moved
    assert np.linalg.norm(np.abs(psi) - np.abs(res.psi[0])) * np.sqrt(cfg.grid.dx) > 1e-3


def _both(cfg):
    return [tdse.simulate(with_values(cfg, [("field.gauge", g)]), backend="numpy")
            for g in ("length", "velocity")]


@pytest.mark.slow
def test_gauges_agree_on_the_dvr():
    """What does not depend on the gauge -- |psi|^2, the yield, the dipole acceleration, the
    kinetic momentum, and (A(t_end) = 0: a whole number of cycles) the populations -- agrees
    to 1e-8 (measured 1e-11 on this grid)."""
    rng = np.random.default_rng()
    cfg = with_values(loads(ATOM), [("field.E0", rng.uniform(0.04, 0.08))])
    L, V = _both(cfg)
    oL, oV = L.observables, V.observables
    assert np.abs(np.abs(L.psi[-1]) ** 2 - np.abs(V.psi[-1]) ** 2).max() < 1e-8
    for k in ("yield", "acceleration", "x_mean", "p_mean", "norm"):
        assert np.abs(oL[k] - oV[k]).max() < 1e-8, k
    assert np.abs(oL["populations_h0"][-1] - oV["populations_h0"][-1]).max() < 1e-8
    assert oL["yield"][-1] > 1e-6            # electrons reached the absorber
    # <H> during the pulse, from the other gauge's run: <(p + A)^2/2 + V>_v = <p^2/2 + V>_l
    # = <H_l> - E <x>_l (both divided by the norm) -- the velocity gauge's A p + A^2/2 terms
    # checked against the length gauge's numbers, not against their own formula
    want = oL["energy"] - oL["field"] * oL["x_mean"]
    assert np.abs(oV["energy"] - want).max() < 1e-8 * max(1.0, np.abs(want).max())
    # <H> differs during the pulse (a gauge-dependent number) and agrees once A = 0 again
    assert abs(oL["energy"][-1] - oV["energy"][-1]) < 1e-8


@pytest.mark.slow
def test_gauges_approach_each_other_at_the_stencils_order():
    """3-point: the gauges' yields and final |psi|^2 differ by the discretisation's error,
    O(dx^2): a quarter (0.15-0.35) at dx/2."""
    cfg = with_values(loads(ATOM), [("grid.stencil", 3), ("field.E0", 0.06)])
    d = []
    for dx in (0.2, 0.1):
        L, V = _both(with_values(cfg, [("grid.dx", dx)]))
        d.append(np.abs(L.observables["acceleration"] - V.observables["acceleration"]).max())
    assert 0.15 < d[1] / d[0] < 0.35, d


def test_the_local_estimate_in_the_velocity_gauge():
    """time_error = "estimate": the letters gain d^k A/dt^k p; est / true within 10 % at a
    small dt (as tests/test_local_error.py for the length gauge)."""
    from tdse.numerics.local_error import LocalError
    from tdse.run.loop import advance
    cfg = with_values(_no_absorber(), [("field.gauge", "velocity"), ("grid.stencil", 5),
                                       ("grid.x_min", -20.0), ("grid.x_max", 20.0),
                                       ("field.E0", 0.1), ("propagator.tolerance", 1e-14)])
    ratios = []
    for dt in (0.1, 0.05):
        c = with_values(cfg, [("time.dt", dt)])
        plan = tdse.prepare(c, backend="numpy")
        st = plan.stepper()
        j = int(round(20.0 / dt))
        psi = advance(st, plan.psi0.astype(complex), 0, j)
        one = st.step(psi, j)
        ref = advance(plan.stepper(with_values(c, [("time.dt", dt / 32)])), psi, 32 * j, 32 * j + 32)
        true = np.linalg.norm(one - ref) * np.sqrt(c.grid.dx)
        ratios.append(LocalError(c).norm(psi, j * dt, dt) / true)
    assert abs(ratios[1] - 1) < 0.1 and abs(ratios[0] - 1) < 0.25, ratios


def test_velocity_gauge_refusals():
    cfg = loads(ATOM)
    with pytest.raises(ConfigError, match=r"field.gauge = 'transverse'"):
        with_values(cfg, [("field.gauge", "transverse")])
    both = ATOM.replace("E0 = 0.06\nomega = 0.25\n", 'kind = "expression"\nE = "t"\nA = "t"\n')
    with pytest.raises(ConfigError, match=r"give exactly one of field.E and field.A"):
        loads(both)
    for key, bad in (("output.tsurff_k_max", 0.0), ("output.tsurff_momenta", 2),
                     ("output.tsurff_radius", -1.0)):
        with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
            with_values(cfg, [(key, bad)])
    with pytest.raises(ConfigError, match=r"field.A = .*is for kind"):
        loads(ATOM.replace("E0 = 0.06", "E0 = 0.06\nA = \"t\""))


@pytest.mark.parametrize("stencil", [3, pytest.param("dvr", marks=pytest.mark.slow)])
def test_a_velocity_gauge_scan_equals_its_members_runs(stencil):
    """The batch path (BatchStepper's a_k p per member, BlockMeasure's <H>, acceleration and
    kinetic momentum) against each member's own serial run: every observable to 1e-10."""
    rng = np.random.default_rng()
    base = with_values(loads(ATOM), [("field.gauge", "velocity"), ("grid.stencil", stencil),
                                     ("time.t_end", 20.0), ("output.every", 100)])
    E0s = sorted(rng.uniform(0.02, 0.1, 2))
    sc = tdse.scan(base, {"field.E0": E0s}, backend="numpy")
    for i, e in enumerate(E0s):
        o = tdse.simulate(with_values(base, [("field.E0", e)]), backend="numpy").observables
        for k in ("norm", "energy", "x_mean", "p_mean", "acceleration", "yield", "populations_h0"):
            assert np.abs(np.asarray(sc[k])[i] - np.asarray(o[k])).max() < 1e-10, (k, e)


def test_a_bad_gauge_from_the_command_line_is_one_line(tmp_path):
    """`tdse run INPUT --set field.gauge=...`: exit 2 and one line naming the key and value."""
    from click.testing import CliRunner

    from tdse.ui.cli import main
    path = tmp_path / "atom.toml"
    path.write_text(ATOM)
    out = CliRunner().invoke(main, ["run", str(path), "--out", str(tmp_path / "o"),
                                    "--set", "field.gauge=coulomb", "--no-plots"])
    assert out.exit_code == 2, out.output
    lines = [ln for ln in out.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and "field.gauge = 'coulomb'" in lines[0], out.output
