"""Photoelectron spectra by the window operator (tdse/studies/photoelectrons.py, #55 item 1b):
a free Gaussian packet's energy distribution against its exact momentum distribution mapped
to energy and seen through the same window (analytic), the split into left and right, the
continuum's population, and `tdse spectrum --kind photoelectron` end to end."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from tdse import config as tdse_config
from tdse.model.grid import points
from tdse.model.initial import initial_state
from tdse.studies.photoelectrons import tsurff_record, window_spectrum
from tdse.ui.cli import main

FREE = """
name = "free"
[grid]
x_min = -200.0
x_max = 200.0
dx = 0.2
stencil = "dvr"
[potential]
kind = "expression"
V = "0 * x"
[initial]
state = "gaussian"
x0 = 40.0
sigma = {sigma}
k0 = {k0}
[time]
dt = 0.1
t_end = 1.0
"""


@pytest.mark.parametrize("sigma, k0, gamma", [(2.0, 1.5, 0.05), (3.0, 0.8, 0.02)])
def test_a_free_packet_has_its_exact_energy_distribution(sigma, k0, gamma):
    """|phi(k)|^2 = sqrt(2 sigma^2 / pi) e^(-2 sigma^2 (k - k0)^2) (|psi|^2 of width sigma),
    dP/dE = sum over k = +-sqrt(2E) of |phi(k)|^2 / |k|, convolved with the window
    gamma^4 / ((E' - E)^4 + gamma^4) / (pi gamma / sqrt 2): the DVR's free states are exact
    to the grid's k_max, and the box's continuum is discrete, levels k pi / L apart in k
    (0.012 and 0.006 Ha at the peaks): each window of width gamma is a sum over gamma / dE ~
    3-4 levels, so the two agree to 1e-4 of the peak (measured 2e-7 and 4e-5); the packet at
    x0 = 40 lies right of 0 and of the smooth step's width: "right" is all of it."""
    cfg = tdse_config.loads(FREE.format(sigma=sigma, k0=k0))
    psi = initial_state(cfg, points(cfg.grid), None)
    E = np.linspace(0.1, 3.0, 150)      # (near E = 0 a few box levels sample the 1/sqrt(E) density)
    s = window_spectrum(cfg, psi, 0.0, E, gamma)
    Ef = np.linspace(1e-7, 8.0, 100001)   # (400001 points: the same to 1.5e-9 of the peak, 8x the time)
    k = np.sqrt(2 * Ef)
    phik2 = lambda q: math.sqrt(2 * sigma ** 2 / math.pi) * np.exp(-2 * sigma ** 2 * (q - k0) ** 2)  # noqa: E731
    dens = (phik2(k) + phik2(-k)) / k
    area = math.pi * gamma / math.sqrt(2)
    want = np.array([np.trapezoid(dens * gamma ** 4 / ((Ef - e) ** 4 + gamma ** 4), Ef) / area for e in E])
    assert np.abs(s["all"] - want).max() < 1e-4 * want.max()
    assert np.abs(s["right"] - s["all"]).max() < 1e-6 * want.max()
    assert s["left"].max() < 1e-6 * want.max()
    assert s["continuum"] == pytest.approx(1.0, abs=1e-12) and s["bound"] == pytest.approx(0.0, abs=1e-12)


def test_the_command_writes_the_spectrum_and_refuses_to_overwrite(tmp_path):
    """A short pulse on soft-core hydrogen (as a formula), then `tdse spectrum --kind
    photoelectron`: JSON (hartree and eV, the ATI comb, the U_p edges) and PNG; again without
    --force: one line, exit 2; a gamma <= 0: exit 2."""
    import json
    text = FREE.format(sigma=2.0, k0=0.0).replace('V = "0 * x"', 'V = "-1 / sqrt(x**2 + 2)"') \
        .replace('[initial]\nstate = "gaussian"\nx0 = 40.0\nsigma = 2.0\nk0 = 0.0\n', "") \
        .replace("x_min = -200.0", "x_min = -60.0").replace("x_max = 200.0", "x_max = 60.0") \
        .replace("t_end = 1.0", "t_end = 40.0") + "[field]\nE0 = 0.1\nomega = 0.3\ncycles = 1.5\n"
    path = tmp_path / "pulse.toml"
    path.write_text(text)
    r = CliRunner().invoke(main, ["run", str(path), "--out", str(tmp_path), "-q", "--no-plots"])
    assert r.exit_code == 0, r.output
    h5 = str(tmp_path / "free.h5")
    r = CliRunner().invoke(main, ["spectrum", h5, "--kind", "photoelectron"])
    assert r.exit_code == 0, r.output
    doc = json.loads(Path(tmp_path / "free_spectrum_photoelectron.json").read_text())
    E, dens = np.array(doc["energy"]), np.array(doc["all"])
    assert np.allclose(doc["energy_ev"], E * 27.211386245988)
    assert doc["ip"] == pytest.approx(0.5, abs=1e-6) and doc["up"] == pytest.approx(0.01 / (4 * 0.09))
    # the density's integral up to the shown e_max is most of the continuum's population
    # (the windows of the levels near 0 reach below E = 0; some levels lie above e_max)
    assert 0 < doc["continuum"] < 1 and 0.8 * doc["continuum"] < np.trapezoid(dens, E) <= doc["continuum"]
    assert all(a > 0 for a in doc["ati"]) and (tmp_path / "free_spectrum_photoelectron.png").exists()
    r = CliRunner().invoke(main, ["spectrum", h5, "--kind", "photoelectron"])
    assert r.exit_code == 2 and "exists" in r.output
    r = CliRunner().invoke(main, ["spectrum", h5, "--kind", "photoelectron", "--gamma", "0", "--force"])
    assert r.exit_code == 2


@pytest.mark.slow
def test_above_threshold_ionisation_by_two_methods():
    """ATI (Agostini et al., PRL 42, 1127 (1979)): soft-core hydrogen (I_p = 1/2 exactly) in a
    flat-top pulse of omega = 0.2 (12 cycles, 2-cycle ramps), then 200 a.u. free: the peaks of
    the window operator's log dP/dE (gamma = omega / 8) lie omega apart, to 3 % (placed
    between grid points by a parabola); and t-SURFF (through x = +-60 during the run, an
    independent method) seen through the same window has the same peaks (to gamma / 4) and
    the same spectrum: its integral over 0.15-1.1 Ha to 5 %, every point to 10 % of the
    peak (measured 1.2 % and 3.5 %: the slowest electrons have not all passed R, the fastest
    near the walls).  Positions against the comb n omega - I_p - U_p are not checked (at
    800 nm they sit ~0.004 Ha below it, not examined).  dt = 0.1 (cfm4, omega dt = 0.02):
    every number above the same to 1e-5 as at dt = 0.05, in 14 s against 21.5 s."""
    import tdse
    from scipy.signal import find_peaks
    from tdse.studies.photoelectrons import TSurff
    cfg = tdse_config.loads(FREE.format(sigma=1.0, k0=0.0).replace('V = "0 * x"', 'V = "-1 / sqrt(x**2 + 2)"')
                            .replace('[initial]\nstate = "gaussian"\nx0 = 40.0\nsigma = 1.0\nk0 = 0.0\n', "")
                            .replace("x_min = -200.0", "x_min = -400.0").replace("x_max = 200.0", "x_max = 400.0")
                            .replace("dx = 0.2", "dx = 0.25").replace('stencil = "dvr"', "stencil = 3")
                            .replace("t_end = 1.0", "t_end = 577.0")
                            + '[field]\nE0 = 0.05\nomega = 0.2\ncycles = 12\nenvelope = "trapezoid"\nramp = 62.83\n'
                            + '[propagator]\nmethod = "chebyshev"\n')
    plan = tdse.prepare(cfg, backend="numpy")
    ts = TSurff(cfg, 60.0, k_max=2.0, count=401)
    final = tdse.evolve(plan, plan.psi0, [ts])
    gamma = 0.2 / 8
    E = np.arange(0.0, 1.2, gamma / 4)
    s = window_spectrum(cfg, np.asarray(final.psi), final.t, E, gamma)

    def peaks(y):
        y = np.log(y)
        i, _ = find_peaks(y, prominence=0.5)
        return E[i] + gamma / 4 * 0.5 * (y[i - 1] - y[i + 1]) / (y[i - 1] - 2 * y[i] + y[i + 1])

    at = peaks(s["all"])
    assert len(at) >= 3 and s["continuum"] > 0.005
    assert np.abs(np.diff(at) - 0.2).max() < 0.03 * 0.2, at
    sp = ts.spectrum()
    Ef = np.linspace(1e-4, 2.0, 20001)
    dens = (np.interp(Ef, sp["energy_right"], sp["dPdE_right"])
            + np.interp(Ef, sp["energy_left"][::-1], sp["dPdE_left"][::-1]))
    area = math.pi * gamma / math.sqrt(2)
    seen = np.array([np.trapezoid(dens * gamma ** 4 / ((Ef - e) ** 4 + gamma ** 4), Ef) / area for e in E])
    assert len(peaks(seen)) == len(at) and np.abs(peaks(seen) - at).max() < gamma / 4
    m = (E > 0.15) & (E < 1.1)
    assert np.trapezoid(seen[m], E[m]) == pytest.approx(np.trapezoid(s["all"][m], E[m]), rel=0.05)
    assert np.abs(seen[m] - s["all"][m]).max() < 0.1 * s["all"][m].max()


def test_tsurff_gives_a_free_packet_its_exact_momentum_distribution():
    """t-SURFF (tdse.studies.photoelectrons.TSurff) on a free Gaussian packet (k0 = 1.5,
    sigma = 2) crossing x = +20: |b(k)|^2 equals sqrt(2 sigma^2 / pi) e^(-2 sigma^2 (k -
    k0)^2) over 0.8 < k < 2.2 to 2e-3 of the peak (the time integral by the trapezoid rule
    at dt = 0.05: the integrand turns by k^2 dt / 2 <= 0.12 rad a step; the 5-point psi'
    at k dx <= 0.44), none through x = -20; a radius beyond the absorber is refused."""
    import tdse
    from tdse.config import ConfigError
    from tdse.studies.photoelectrons import TSurff
    cfg = tdse_config.loads(FREE.format(sigma=2.0, k0=1.5).replace("x0 = 40.0", "x0 = 0.0")
                            .replace("x_min = -200.0", "x_min = -100.0").replace("x_max = 200.0", "x_max = 100.0")
                            .replace("dt = 0.1", "dt = 0.05").replace("t_end = 1.0", "t_end = 45.0")
                            + '[propagator]\nmethod = "chebyshev"\ntolerance = 1e-12\n')
    plan = tdse.prepare(cfg, backend="numpy")
    ts = TSurff(cfg, 20.0, k_max=3.0, count=301)
    tdse.evolve(plan, plan.psi0, [ts])
    sp = ts.spectrum()
    k = sp["k"]
    exact = math.sqrt(2 * 2.0 ** 2 / math.pi) * np.exp(-2 * 2.0 ** 2 * (k - 1.5) ** 2)
    m = (k > 0.8) & (k < 2.2)
    assert np.abs(sp["P_right"][m] - exact[m]).max() < 2e-3 * exact.max()
    assert sp["P_left"].max() < 1e-8
    with pytest.raises(ConfigError):
        TSurff(cfg, 99.9)
    with pytest.raises(ValueError, match="from t = 0"):        # a resumed run's flux is unknown
        tdse.evolve(plan, plan.psi0, [TSurff(cfg, 20.0)], start=10)


# ------------------------------------------------------------------ t-SURFF as an input key
ATOM_TS = """
name = "ts_atom"
[grid]
x_min = -80.0
x_max = 80.0
dx = 0.25
stencil = 3
[potential]
a = 2.0
[[potential.centres]]
x0 = 0.0
Z = 1.0
[field]
E0 = {E0}
omega = 0.3
cycles = 4
gauge = "{gauge}"
[absorber]
width = 20.0
[initial]
state = 0
[time]
dt = 0.05
t_end = 100.0
[propagator]
method = "chebyshev"
time_error = "none"
[output]
every = 400
tsurff_radius = 40.0
tsurff_momenta = 201
"""


@pytest.mark.slow
def test_tsurff_from_the_input_resumes_bit_for_bit_and_is_gauge_invariant(tmp_path, interrupt_after):
    """``[output] tsurff_radius``: the run records P(k) through +-R in its file; a run
    interrupted and resumed holds the same bits; the velocity gauge's P(k) (its own Volkov
    waves and flux) equals the length gauge's within 2 % of the peak (measured 0.7-0.8 %:
    the 3-point stencil's O(dx^2) gauge difference; the length gauge's Volkov waves used on
    the velocity run were 8 % off); `tdse spectrum --method tsurff` reads it."""
    import json

    from tdse.run.driver import run
    from tdse.run.interrupts import Interrupted
    from tdse.run.snapshots import read, resume_state
    rng = np.random.default_rng()
    E0 = rng.uniform(0.08, 0.12)
    c = tdse_config.loads(ATOM_TS.format(E0=E0, gauge="length"))
    ref = read(run(c, tmp_path / "ref", backend="numpy").path)
    rec = tsurff_record(ref["attrs"])
    armed = interrupt_after(2, "SIGTERM")
    with pytest.raises(Interrupted):
        run(c, tmp_path / "cut", backend="numpy")
    armed.disarm()
    part = str(tmp_path / "cut" / f"{c.name}.h5.part")
    st = resume_state(part)
    assert st["tsurff"] is not None and 0 < st["step"] < c.time.steps
    got = read(run(c, None, backend="numpy", resume=(st, part)).path)
    rec2 = tsurff_record(got["attrs"])
    assert rec2["P_right"] == rec["P_right"] and rec2["P_left"] == rec["P_left"]
    vel = tdse_config.loads(ATOM_TS.format(E0=E0, gauge="velocity"))
    rv = run(vel, tmp_path / "vel", backend="numpy")
    v = tsurff_record(read(rv.path)["attrs"])
    P, Pv = np.array(rec["P_right"]) + rec["P_left"], np.array(v["P_right"]) + v["P_left"]
    assert v["gauge"] == "velocity" and P.max() > 1e-3, P.max()
    assert np.abs(P - Pv).max() < 0.02 * P.max(), np.abs(P - Pv).max() / P.max()
    out = CliRunner().invoke(main, ["spectrum", str(rv.path), "--kind", "photoelectron",
                                    "--method", "tsurff"])
    assert out.exit_code == 0, out.output
    doc = json.loads(Path(str(rv.path)[:-3] + "_spectrum_photoelectron_tsurff.json").read_text())
    assert doc["method"] == "tsurff" and doc["gauge"] == "velocity"
    # a file without t-SURFF: one line, exit 2
    bare = run(tdse_config.with_values(c, [("output.tsurff_radius", 0.0)]), tmp_path / "bare",
               backend="numpy")
    out = CliRunner().invoke(main, ["spectrum", str(bare.path), "--kind", "photoelectron",
                                    "--method", "tsurff"])
    assert out.exit_code == 2 and "tsurff_radius" in out.output


def test_a_tsurff_radius_past_the_absorber_is_one_line():
    with pytest.raises(tdse_config.ConfigError, match=r"output.tsurff_radius = 70.0: must lie inside"):
        tdse_config.loads(ATOM_TS.format(E0=0.05, gauge="length").replace("tsurff_radius = 40.0",
                                                                         "tsurff_radius = 70.0"))


@pytest.mark.slow
def test_tsurff_in_a_scan_equals_each_members_run(tmp_path):
    """``[output] tsurff_radius`` in a scan: one observer of the N x B block, each member's
    own A(t); every member's P(k) equals its serial run's to 1e-7 of the peak (measured
    3e-9..7e-9: the block's and the vector's psi differ at rounding, and t-SURFF reads psi at
    two points), and the scan file holds them over the scan's keys and k."""
    import tdse
    from tdse.run.scanfile import read
    rng = np.random.default_rng()
    base = tdse_config.loads(ATOM_TS.format(E0=0.1, gauge="length"))
    E0s = sorted(rng.uniform(0.08, 0.12, 2))
    sc = tdse.scan(base, {"field.E0": E0s}, backend="numpy")
    for i, e in enumerate(E0s):
        r = tdse.simulate(tdse_config.with_values(base, [("field.E0", e)]), backend="numpy")
        rec = tsurff_record(r.attrs)
        for side in ("right", "left"):
            P, Ps = np.array(rec[f"P_{side}"]), np.asarray(sc[f"tsurff_P_{side}"])[i]
            assert np.abs(P - Ps).max() < 1e-7 * max(np.max(rec["P_right"]), np.max(rec["P_left"])), (side, e)
    from tdse.run.scanfile import write
    f = read(write(str(tmp_path / "ts_scan.h5"), sc))
    assert f["tsurff_P_right"].shape == (2, 201) and f["tsurff_k"].shape == (201,)
    np.testing.assert_array_equal(f["tsurff_P_left"], np.asarray(sc["tsurff_P_left"]))
