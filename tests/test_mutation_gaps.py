"""Tests written for the survivors of a mutation run (benchmarks/results/mutation_*.json):
each checks a value against its definition where the suite had only checked it in passing."""
import math
import os
from pathlib import Path

import numpy as np
import pytest

import tdse
from tdse.model.absorber import absorber_profile
from tdse.model.field import field_value, pulse
from tdse.numerics import chebyshev


@pytest.mark.parametrize("envelope,extra", [("sin2", {}), ("gaussian", {"fwhm": 30.0}),
                                            ("trapezoid", {"ramp": 25.0})])
def test_pulse_equals_its_formula_everywhere(envelope, extra):
    """E(t) = E0 f(t) sin(omega t + phase) on [0, d] (both ends included), 0 outside, for each
    envelope written out here independently, with a phase that makes E(0) and E(d) non-zero."""
    E0, w, ph, d = 0.05, 0.057, 0.7, 200.0
    fwhm, ramp = extra.get("fwhm", 1.0), extra.get("ramp", 1.0)
    t = np.concatenate([[-1e-9, 0.0, d, d + 1e-9], np.linspace(-20, d + 20, 501)])
    if envelope == "sin2":
        f = np.sin(math.pi * t / d) ** 2
    elif envelope == "gaussian":
        f = np.exp(-4 * math.log(2) * (t - d / 2) ** 2 / fwhm ** 2)
    else:
        f = np.clip(np.minimum(t, d - t) / ramp, 0.0, 1.0)
    ref = np.where((t >= 0) & (t <= d), E0 * f * np.sin(w * t + ph), 0.0)
    got = pulse(E0, w, ph, d, fwhm, ramp, envelope, t)
    assert np.allclose(got, ref, rtol=1e-14, atol=1e-17)
    if envelope == "gaussian":            # the ends are inside the pulse
        assert got[1] != 0.0 and got[2] != 0.0 and got[0] == 0.0 and got[3] == 0.0


def test_field_value_types(inputs_dir):
    """A float for a scalar time, an array of that shape for an array, zeros without a field."""
    cfg = tdse.load_config(os.path.join(inputs_dir, "atom_hhg.toml"))
    f = cfg.potential.field
    assert isinstance(field_value(f, 100.0), float)
    t = np.linspace(0, 400, 7)
    assert field_value(f, t).shape == (7,)
    assert field_value(None, 3.0) == 0.0 and isinstance(field_value(None, 3.0), float)
    z = field_value(None, t)
    assert isinstance(z, np.ndarray) and z.shape == (7,) and not z.any()


def test_absorber_profile_values(inputs_dir):
    """W = strength (depth / width)^power in the layers, exactly 0 inside; on a given x as on
    the grid; zeros without an absorber."""
    cfg = tdse.load_config(os.path.join(inputs_dir, "atom_hhg.toml"))
    a, g = cfg.absorber, cfg.grid
    x = np.linspace(g.x_min, g.x_max - g.dx, 1001)
    left, right = g.x_min + a.width, g.x_max - g.dx - a.width
    depth = np.where(x < left, left - x, np.where(x > right, x - right, 0.0))
    assert np.allclose(absorber_profile(cfg, x), a.strength * (depth / a.width) ** a.power, rtol=1e-14)
    assert (absorber_profile(cfg, x)[(x > left) & (x < right)] == 0).all()
    none = cfg.with_value("propagator.time_error", "none")
    import dataclasses
    none = dataclasses.replace(none, absorber=None)
    w = absorber_profile(none, x)
    assert isinstance(w, np.ndarray) and w.shape == x.shape and not w.any()


def test_expm_apply_of_a_multiple_of_the_identity_and_its_terms():
    """G = c I (lo = hi): exp(-i tau c) X with no terms; otherwise the number of terms is
    terms(tau (hi - lo) / 2) and R = tau (hi - lo) / 2 (a wider interval would cost more)."""
    rng = np.random.default_rng(2)
    X = rng.standard_normal((6, 2)) + 1j * rng.standard_normal((6, 2))
    Y, info = chebyshev.expm_apply(lambda Z: 1.7 * Z, X, 0.3, 1.7, 1.7, 1e-12)   # xp from X
    assert np.allclose(Y, X * np.exp(-1j * 0.3 * 1.7), rtol=1e-15)
    assert info == {"terms": 0, "R": 0.0}
    A = rng.standard_normal((6, 6))
    A = A + A.T
    lam = np.linalg.eigvalsh(A)
    lo, hi = lam[0] - 0.1, lam[-1] + 0.1
    Y, info = chebyshev.expm_apply(lambda Z: A @ Z, X, 0.4, lo, hi, 1e-12, np)
    assert info["R"] == pytest.approx(0.4 * (hi - lo) / 2, rel=1e-15)
    assert info["terms"] == chebyshev.terms(0.4 * (hi - lo) / 2, 1e-12)
    assert set(info) == {"terms", "R"}
    assert chebyshev.tail_bound(info["R"], info["terms"]) <= 1e-12      # the terms suffice
    with pytest.raises(ValueError):
        chebyshev.expm_apply(lambda Z: Z, X, 0.3, 2.0, 1.0, 1e-12, np)


def test_coefficients_length():
    for R, K in ((0.5, 3), (7.0, 20)):
        assert len(chebyshev.coefficients(R, K)) == K + 1


def test_axpy_on_every_layout():
    """The Chebyshev sum's y += a x on the CPU: BLAS zaxpy for contiguous complex128 blocks,
    NumPy for the rest (strided views, other dtypes) -- every case equal to y + a x and y
    updated in place."""
    f = chebyshev._axpy(np)
    rng = np.random.default_rng(9)
    a = 0.3 - 1.2j
    base = rng.standard_normal((8, 6)) + 1j * rng.standard_normal((8, 6))
    for xs, ys in [(np.s_[:, :], np.s_[:, :]), (np.s_[:, ::2], np.s_[:, :3]), (np.s_[:, :3], np.s_[:, ::2])]:
        x = base.copy()[xs]
        yfull = (rng.standard_normal((8, 6)) + 1j * rng.standard_normal((8, 6)))
        y = yfull[ys]
        ref = y + a * x
        f(a, x, y)
        assert np.allclose(yfull[ys], ref, rtol=1e-15)
    y64 = (rng.standard_normal(5) + 1j * rng.standard_normal(5)).astype(np.complex64)
    x64 = y64[::-1].copy()
    ref = y64 + np.complex64(a) * x64
    f(a, x64, y64)
    assert np.allclose(y64, ref, rtol=1e-6)
    # mixed precisions, both contiguous: y updated in place whichever is the wider (zaxpy
    # on a complex64 y would write into a converted copy and leave y as it was)
    for xd, yd in ((np.complex128, np.complex64), (np.complex64, np.complex128)):
        x = (rng.standard_normal(7) + 1j * rng.standard_normal(7)).astype(xd)
        y = (rng.standard_normal(7) + 1j * rng.standard_normal(7)).astype(yd)
        ref = y + a * x
        f(a, x, y)
        assert y.dtype == yd and np.allclose(y, ref, rtol=1e-6), (xd, yd)


def test_chebyshev_terms_refusals_by_message():
    """terms() refuses a negative or non-finite R by name, and a tolerance no K meets (here
    a negative one) with the most terms it tries; a large R (60000) is counted without
    reaching that cap (the cap is MAX_TERMS beyond R, not MAX_TERMS)."""
    for R in (-0.5, math.inf, math.nan):
        with pytest.raises(ValueError, match="R must be finite and >= 0, got R="):
            chebyshev.terms(R, 1e-12)
        with pytest.raises(ValueError, match="R must be finite and >= 0, got R="):
            chebyshev.terms_near(R, 1e-12, 5)          # the same refusal, whatever the guess
    with pytest.raises(ValueError, match=r"R = 5 needs more than 100000 Chebyshev terms"):
        chebyshev.terms(5.0, -1.0)
    K = chebyshev.terms(60000.0, 1e-12)
    assert 60000 < K < 61000 and chebyshev.tail_bound(60000.0, K) <= 1e-12 < chebyshev.tail_bound(60000.0, K - 1)


# ---------------------------------------------------------------- spectra (2026-11-24 survivors)
def _direct(t, a, w, sign):
    """sum_j a_j w_j e^(sign i omega t_j) dt on the omega grid of an m-point DFT, by the
    sum itself (an independent reference for numpy's FFT conventions)."""
    m, dt = len(t), t[1] - t[0]
    om = 2 * np.pi * np.fft.fftfreq(m, d=dt)
    return om, np.array([np.sum(a * w * np.exp(sign * 1j * o * t)) * dt for o in om])


@pytest.mark.parametrize("win", ["hann", "blackman", "none"])
def test_hhg_spectrum_against_the_direct_sum(win):
    """spectra.hhg: |sum_j a_j w_j e^(-i omega t_j) dt|^2 on omega = 2 pi k / (m dt), k <= m/2
    (the time origin drops out of |.|^2), the resolution 2 pi / (m dt), the harmonic order
    omega / omega_0, and its labels; no order without a carrier."""
    from tdse.studies import spectra
    m, dt, t0 = 64, 0.37, 5.0
    t = t0 + dt * np.arange(m)
    rng = np.random.default_rng(17)
    a = np.sin(1.3 * t) + 0.3 * rng.standard_normal(m)
    res = spectra.hhg(t, a, omega0=0.65, win=win)
    om, S = _direct(t, a, spectra.window(win, m), -1)
    k = np.arange(m // 2 + 1)
    assert np.allclose(res["omega"], 2 * np.pi * k / (m * dt), rtol=1e-14)
    assert np.allclose(res["power"], np.abs(S[:m // 2 + 1]) ** 2, rtol=1e-10, atol=1e-12)
    assert res["resolution"] == pytest.approx(2 * np.pi / (m * dt), rel=1e-15)
    assert np.allclose(res["order"], np.asarray(res["omega"]) / 0.65, rtol=1e-15)
    assert res["omega0"] == 0.65 and res["kind"] == "hhg" and res["window"] == win
    assert res["units"] == "omega in E_h/hbar; power in a.u."
    assert "order" not in spectra.hhg(t, a) and "omega0" not in spectra.hhg(t, a)


def test_autocorrelation_spectrum_against_the_direct_sum():
    """spectra.autocorrelation: |sum_j C_j w_j e^(+i E t_j) dt|^2 on the sorted energies
    2 pi fftfreq(m, dt); C(t) = sum_n |c_n|^2 e^(-i E_n t) peaks at each E_n."""
    from tdse.studies import spectra
    m, dt = 200, 0.25
    t = dt * np.arange(m)
    En, wn = np.array([-1.1, -0.4, 0.7]), np.array([0.5, 0.3, 0.2])
    C = (wn[None, :] * np.exp(-1j * En[None, :] * t[:, None])).sum(axis=1)
    res = spectra.autocorrelation(t, C, win="hann")
    om, S = _direct(t, C, np.hanning(m), +1)
    order = np.argsort(om)
    assert np.allclose(res["energy"], om[order], rtol=1e-14)
    assert np.all(np.diff(res["energy"]) > 0)
    assert np.allclose(res["power"], np.abs(S[order]) ** 2, rtol=1e-10, atol=1e-12)
    assert res["resolution"] == pytest.approx(2 * np.pi / (m * dt), rel=1e-15)
    assert res["kind"] == "autocorrelation" and res["window"] == "hann"
    assert res["units"] == "energy in hartree"
    assert spectra.autocorrelation(t, C)["power"] == res["power"]        # hann by default
    p = spectra.peaks(res["energy"], res["power"], most=3)
    assert np.abs(np.sort(p) - En).max() <= res["resolution"] / 2 + 1e-12


def test_spectra_refuse_what_they_cannot_do():
    """Non-uniform or too few samples, an unknown window, an unknown kind: ValueError."""
    from tdse.studies import spectra
    t = 0.1 * np.arange(10)
    with pytest.raises(ValueError, match="uniformly"):
        spectra.hhg(t[:7], np.ones(7))
    tt = t.copy()
    tt[5] += 0.01
    with pytest.raises(ValueError, match="uniformly"):
        spectra.hhg(tt, np.ones(10))
    with pytest.raises(ValueError, match="window"):
        spectra.window("hamming", 8)
    assert np.array_equal(spectra.window("none", 4), np.ones(4))
    with pytest.raises(ValueError, match="kind"):
        spectra.from_file({"observables/t": t, "attrs": {}}, "bogus", "hann")


def test_drive_frequency_of_each_kind_of_input(inputs_dir):
    """The laser's omega (atom_hhg: 0.057); the centres' common frequency (h2plus_moving: 3);
    None for a static H and for centres moving at different frequencies."""
    import dataclasses
    from tdse import config as cfgmod
    from tdse.studies.spectra import drive_frequency
    load = lambda n: cfgmod.load(os.path.join(inputs_dir, n))  # noqa: E731
    assert drive_frequency(load("atom_hhg.toml")) == 0.057
    mov = load("h2plus_moving.toml")
    assert drive_frequency(mov) == 3.0
    assert drive_frequency(load("h2plus_static.toml")) is None
    c0, c1 = mov.potential.centres
    two = dataclasses.replace(mov, potential=dataclasses.replace(
        mov.potential, centres=(c0, dataclasses.replace(c1, frequency=2.0))))
    assert drive_frequency(two) is None


def test_spectrum_from_a_run_file_dict(inputs_dir):
    """spectra.from_file on a run's datasets: hhg's carrier from the effective input (before
    the input as written), autocorrelation with H(0)'s eigenenergies, the drive and the
    peaks, and the run's name -- each equal to the direct functions' output."""
    from tdse.studies import spectra
    src = Path(os.path.join(inputs_dir, "atom_hhg.toml")).read_text()
    m, dt = 64, 0.5
    t = dt * np.arange(m)
    rng = np.random.default_rng(3)
    acc = rng.standard_normal(m)
    C = np.exp(-1j * 0.5 * t) * 0.7 + 0.3 * np.exp(1j * 0.2 * t)
    d = {"observables/t": t, "observables/acceleration": acc, "observables/autocorrelation": C,
         "states/energies": np.array([-0.5, 0.2]),
         "attrs": {"name": "x1", "input_toml": src.replace("omega = 0.057", "omega = 0.3"),
                   "effective_toml": src}}
    h = spectra.from_file(d, "hhg", "none")
    ref = spectra.hhg(t, acc, 0.057, "none")
    assert h["omega0"] == 0.057 and h["power"] == ref["power"] and h["order"] == ref["order"]
    assert h["name"] == "x1"
    d2 = dict(d, attrs={"name": "x2", "input_toml": src})           # no effective input
    assert spectra.from_file(d2, "hhg", "hann")["omega0"] == 0.057
    a = spectra.from_file(d, "autocorrelation", "hann")
    ref = spectra.autocorrelation(t, C, "hann")
    assert a["power"] == ref["power"] and a["energy"] == ref["energy"]
    assert a["eigenenergies_h0"] == [-0.5, 0.2] and a["drive_omega"] == 0.057
    assert a["peaks"] == spectra.peaks(ref["energy"], ref["power"], most=12).tolist()
    assert a["name"] == "x1"
    static = src.split("[field]")[0] + "[absorber]" + src.split("[absorber]")[1]
    d3 = dict(d, attrs={"name": "x3", "input_toml": static})
    assert "omega0" not in spectra.from_file(d3, "hhg", "hann")
    assert spectra.from_file(d3, "autocorrelation", "hann")["drive_omega"] is None


def test_uniform_sampling_check_at_its_edges():
    """_uniform_dt (through hhg): 8 samples are enough, 7 are not; a jitter of 1e-7 of dt
    is refused (rtol 1e-9), an absolute jitter of 1e-10 at dt = 1e-3 too (atol 1e-12); one
    of 5e-10 of dt is accepted and dt is the first step exactly (the resolution says so)."""
    from tdse.studies import spectra
    msg = r"^the observables are not sampled uniformly \(or fewer than 8 samples\)$"
    assert len(spectra.hhg(0.5 * np.arange(8), np.ones(8))["omega"]) == 5
    with pytest.raises(ValueError, match=msg):
        spectra.hhg(0.5 * np.arange(7), np.ones(7))
    t = 2.0 * np.arange(16)
    t[9:] += 2.0 * 1e-7
    with pytest.raises(ValueError, match=msg):
        spectra.hhg(t, np.ones(16))
    t = 1e-3 * np.arange(16)
    t[9:] += 1e-10
    with pytest.raises(ValueError, match=msg):
        spectra.hhg(t, np.ones(16))
    t = 2.0 * np.arange(16)
    t[2:] += 2.0 * 5e-10                 # the second step 5e-10 longer, within the tolerance
    res = spectra.hhg(t, np.ones(16))
    assert res["resolution"] == 2 * math.pi / (16 * (t[1] - t[0]))


def test_peaks_plateaus_thresholds_and_the_strongest():
    """peaks: a flat top counts once, at its first point; a maximum exactly at rel x max(y)
    is not a peak (strictly above), one above is; ``most`` keeps the strongest, in x order."""
    from tdse.studies.spectra import peaks
    x = np.arange(8.0)
    assert peaks(x, [0, 1, 1, 0, 0, 0, 0, 0]).tolist() == [1.0]
    y = np.array([0, 1000.0, 0, 1.0, 0, 1.5, 0, 0])
    assert peaks(x, y).tolist() == [1.0, 5.0]                   # 1.0 = 1e-3 x 1000: out
    assert peaks(x, y, rel=1e-4).tolist() == [1.0, 3.0, 5.0]
    x = np.arange(12.0)
    y = np.array([0, 3.0, 0, 5.0, 0, 1.0, 0, 4.0, 0, 2.0, 0, 0])
    assert peaks(x, y, most=2).tolist() == [3.0, 7.0]
    assert peaks(x, y, most=5).tolist() == [1.0, 3.0, 5.0, 7.0, 9.0]
    assert peaks(x, y, most=9).tolist() == [1.0, 3.0, 5.0, 7.0, 9.0]


def test_hhg_spectrum_of_a_field_given_by_wavelength(inputs_dir):
    """#58 item 7: a run whose field was given by wavelength (its effective input holds omega
    only as a comment) gives its HHG spectrum in harmonic orders of omega = 45.5633525 /
    lambda[nm] (it exited 2 with `error: 'omega'`)."""
    from tdse.studies import spectra
    src = Path(os.path.join(inputs_dir, "atom_hhg.toml")).read_text().replace(
        "omega = 0.057", "wavelength = 800.0")
    from tdse.config import loads, to_toml
    eff = to_toml(loads(src))
    assert "wavelength = 800.0" in eff and "\nomega" not in eff
    t = 0.5 * np.arange(64)
    acc = np.random.default_rng(4).standard_normal(64)
    d = {"observables/t": t, "observables/acceleration": acc,
         "attrs": {"name": "w", "input_toml": src, "effective_toml": eff}}
    h = spectra.from_file(d, "hhg", "none")
    assert h["omega0"] == 45.5633525 / 800.0
    assert h["order"] == spectra.hhg(t, acc, 45.5633525 / 800.0, "none")["order"]


def test_spectrum_from_a_run_file_keeps_its_window_and_twelve_peaks(inputs_dir):
    """from_file passes the window on for the autocorrelation and keeps the 12 strongest
    peaks of a signal holding 14 energies."""
    from tdse.studies import spectra
    src = Path(os.path.join(inputs_dir, "atom_hhg.toml")).read_text()
    m, dt = 1024, 0.2
    t = dt * np.arange(m)
    E = np.linspace(-6.0, 6.0, 14)
    w = np.linspace(1.0, 2.3, 14)
    C = (w[None, :] * np.exp(-1j * E[None, :] * t[:, None])).sum(axis=1)
    d = {"observables/t": t, "observables/autocorrelation": C, "states/energies": np.array([0.0]),
         "attrs": {"name": "p", "input_toml": src}}
    a = spectra.from_file(d, "autocorrelation", "none")
    ref = spectra.autocorrelation(t, C, "none")
    assert a["power"] == ref["power"] and a["window"] == "none"
    allp = spectra.peaks(ref["energy"], ref["power"])
    assert len(allp) >= 14 and len(a["peaks"]) == 12
    assert a["peaks"] == spectra.peaks(ref["energy"], ref["power"], most=12).tolist()


# ---------------------------------------------------------------- potential (2026-11-24 survivors)
def _asymmetric_driven(inputs_dir):
    """atom_hhg's field with two unequal centres moving at different phases: no symmetry
    that would hide a sign."""
    import dataclasses
    from tdse import config as cfgmod
    cfg = cfgmod.load(os.path.join(inputs_dir, "h2plus_moving.toml"))
    field = cfgmod.load(os.path.join(inputs_dir, "atom_hhg.toml")).field
    c0, c1 = cfg.potential.centres
    cs = (dataclasses.replace(c0, x0=-1.3, Z=1.4, phase=0.3),
          dataclasses.replace(c1, x0=0.9, Z=0.7, amplitude=0.2, frequency=1.1))
    return dataclasses.replace(cfg.potential, centres=cs, field=field)


def test_coulomb_force_is_the_derivative_of_the_term():
    """coulomb_force(Z, X, a, x) = d/dx of -Z/sqrt((x - X)^2 + a), by central differences
    (h = 1e-5: error ~h^2 |V'''| < 1e-8), at centres off the origin."""
    from tdse.model.potential import coulomb, coulomb_force
    x = np.linspace(-4, 4, 81)
    for Z, X, a in ((1.0, 0.7, 1.0), (2.5, -1.9, 0.3)):
        h = 1e-5
        fd = (-coulomb(Z, X, a, x + h) + coulomb(Z, X, a, x - h)) / (2 * h)
        assert np.abs(coulomb_force(Z, X, a, x) - fd).max() < 1e-7 * Z / a ** 1.5


def test_total_many_and_gradient_against_total(inputs_dir):
    """total_many(times) equals total() at each time element by element, and gradient()
    equals the central difference of total() (two unequal moving centres and a field)."""
    from tdse.model.potential import gradient, total, total_many
    pot = _asymmetric_driven(inputs_dir)
    assert pot.field is not None and len(pot.centres) == 2
    x = np.linspace(-6, 6, 121)
    times = [0.0, 0.37, 1.9, 40.0, 123.4]
    many = total_many(pot, x, times)
    assert many.shape == (5, 121)
    for k, t in enumerate(times):
        assert np.abs(many[k] - total(pot, x, t)).max() < 1e-13
        h = 1e-5
        fd = (total(pot, x + h, t) - total(pot, x - h, t)) / (2 * h)
        assert np.abs(gradient(pot, x, t) - fd).max() < 1e-6
    assert np.abs(total_many(pot, x, 0.37)[0] - total(pot, x, 0.37)).max() < 1e-13


def test_total_many_of_a_static_molecule_has_the_bits_of_the_loop_over_centres(inputs_dir):
    """A static molecule's total_many (its row made once and kept, _static_row) equals the
    centres' loop at every time bit for bit, with and without a field, into ``out`` too,
    and the kept row follows a new grid and a new molecule."""
    import dataclasses

    from tdse.model import potential as potmod
    rng = np.random.default_rng(7)
    pot = _asymmetric_driven(inputs_dir)
    still = dataclasses.replace(pot, centres=tuple(dataclasses.replace(c, amplitude=0.0)
                                                   for c in pot.centres))
    assert not still.molecule_moves
    for p in (still, dataclasses.replace(still, field=None),
              dataclasses.replace(still, a=0.37, centres=still.centres[:1])):
        for x in (np.sort(rng.uniform(-8, 8, 97)), np.linspace(-6, 6, 121)):
            times = rng.uniform(0, 50, 7)
            ref = np.zeros((7, x.size))
            for c in p.centres:                 # the loop's operations, in its order
                ref -= c.Z / np.sqrt(np.square(x[None, :] - np.full((7, 1), c.x0)) + p.a)
            if p.field is not None:
                ref += potmod.dipole_field(p.field, times)[:, None] * x[None, :]
            assert np.array_equal(potmod.total_many(p, x, times), ref)
            out = np.full((7, x.size), np.nan)
            assert np.array_equal(potmod.total_many(p, x, times, out=out), ref) and np.array_equal(out, ref)


def test_batch_bounds_are_exact_where_the_terms_are_alone(inputs_dir):
    """BatchPotential.bounds_many where each term's range is known exactly: a lone soft-core
    centre on a grid point (its minimum -Z/sqrt(a) there, its supremum 0; a repulsive one
    the other way round) and a lone field term x E(t) (its extremes at the box's ends, E(t)
    from field_value): lo and hi equal those extremes, per weight sign, each weight's term
    bounded over the members and then summed; and they contain sum_j w_j V(x, t_j) on the
    grid."""
    import dataclasses
    from tdse import config as cfgmod
    from tdse.model.field import field_value
    from tdse.model.grid import points
    from tdse.model.potential import BatchPotential, total
    cfg = cfgmod.load(os.path.join(inputs_dir, "atom_hhg.toml"))
    x = points(cfg.grid)
    p0 = dataclasses.replace(cfg.potential, field=None)
    c = p0.centres[0]
    mk = lambda Z, a, x0, field=None: dataclasses.replace(  # noqa: E731
        p0, a=a, field=field, centres=(dataclasses.replace(c, Z=Z, x0=x0),))
    members = [mk(1.0, 2.0, 0.0), mk(2.5, 0.5, 0.4)]
    assert all(np.isclose(x, m.centres[0].x0).any() for m in members)    # on grid points
    bp = BatchPotential(members, x)
    lo, hi = bp.bounds_many(np.array([[0.0]]), (1.0,))
    assert lo[0] == pytest.approx(-2.5 / np.sqrt(0.5), rel=1e-15) and hi[0] == 0.0
    V = np.stack([total(m, x, 0.0) for m in members])
    assert lo[0] == pytest.approx(V.min(), rel=1e-14) and hi[0] >= V.max()
    lo, hi = bp.bounds_many(np.array([[0.0]]), (-0.5,))
    assert lo[0] == 0.0 and hi[0] == pytest.approx(0.5 * 2.5 / np.sqrt(0.5), rel=1e-15)
    rep = BatchPotential([mk(-2.0, 1.0, 0.0), mk(-0.5, 1.0, 0.0)], x)
    lo, hi = rep.bounds_many(np.array([[0.0]]), (1.0,))
    assert lo[0] == 0.0 and hi[0] == pytest.approx(2.0, rel=1e-15)
    # the field alone (Z = 0): x E(t) at the ends of the box, two times of one step
    f0 = cfg.potential.field
    fields = [f0, dataclasses.replace(f0, E0=0.02, phase=1.0)]
    lone = BatchPotential([mk(0.0, 2.0, 0.0, f) for f in fields], x)
    times, w = np.array([[123.0, 161.5], [200.0, 260.0]]), (0.6, -0.25)
    lo, hi = lone.bounds_many(times, w)
    ends = (float(x.min()), float(x.max()))
    for s in range(2):
        # each weight's term bounded over the members and the ends, then summed
        low = sum(min(wj * field_value(f, times[s, j]) * e for e in ends for f in fields)
                  for j, wj in enumerate(w))
        top = sum(max(wj * field_value(f, times[s, j]) * e for e in ends for f in fields)
                  for j, wj in enumerate(w))
        assert lo[s] == pytest.approx(low, rel=1e-13, abs=1e-15)
        assert hi[s] == pytest.approx(top, rel=1e-13, abs=1e-15)
        grid = [sum(wj * field_value(f, times[s, j]) * x for j, wj in enumerate(w)) for f in fields]
        assert lo[s] <= min(g.min() for g in grid) + 1e-15 and hi[s] >= max(g.max() for g in grid) - 1e-15
    assert lone.bounds(times[1], w) == (pytest.approx(lo[1], rel=1e-15), pytest.approx(hi[1], rel=1e-15))


def test_batch_potential_refusals_fields_and_zero_weights(inputs_dir):
    """BatchPotential: its two refusals with their messages (unequal centre counts; a field
    on some members only, or two envelope kinds); the field of every envelope kind equal
    to field_value per member (one member too), zeros of shape (B,) / (..., B) without a
    field; a zero weight skipped, not ending the sum."""
    import dataclasses
    from tdse import config as cfgmod
    from tdse.model.field import field_value
    from tdse.model.grid import points
    from tdse.model.potential import BatchPotential
    cfg = cfgmod.load(os.path.join(inputs_dir, "atom_hhg.toml"))
    x = points(cfg.grid)
    p, f = cfg.potential, cfg.potential.field
    two = dataclasses.replace(p, centres=p.centres * 2)
    with pytest.raises(ValueError, match="^a batch's members must have as many centres each$"):
        BatchPotential([p, two], x)
    msg = "^a batch's members must all have a field of one envelope kind, or none$"
    with pytest.raises(ValueError, match=msg):
        BatchPotential([p, dataclasses.replace(p, field=None)], x)
    for env in ("gaussian", "trapezoid"):
        with pytest.raises(ValueError, match=msg):
            BatchPotential([p, dataclasses.replace(p, field=dataclasses.replace(f, envelope=env))], x)
    t = np.array([[3.0], [150.0], [220.5]])
    for env, extra in (("sin2", {}), ("gaussian", {"fwhm": 90.0}), ("trapezoid", {"ramp": 60.0})):
        fs = [dataclasses.replace(f, envelope=env, **extra),
              dataclasses.replace(f, envelope=env, E0=0.03, phase=0.7, **extra)]
        bp = BatchPotential([dataclasses.replace(p, field=g) for g in fs], x)
        got = bp.field(t)
        assert got.shape == (3, 2)
        for b, g in enumerate(fs):
            assert np.abs(got[:, b] - [field_value(g, s) for s in t[:, 0]]).max() < 1e-15
        one = BatchPotential([dataclasses.replace(p, field=fs[1])], x)
        assert one.field(150.0) == pytest.approx([field_value(fs[1], 150.0)], abs=1e-15)
    none = BatchPotential([dataclasses.replace(p, field=None)] * 3, x)
    assert none.field(2.0).shape == (3,) and none.field(np.array([2.0])).shape == (3,)
    assert none.field(t).shape == (3, 3) and not none.field(t).any()
    bp = BatchPotential([p], x)
    ts = np.array([[10.0, 150.0]])
    both = bp.bounds_many(ts, (0.0, 1.0))
    only = bp.bounds_many(ts[:, 1:], (1.0,))
    assert both[0] == pytest.approx(only[0], rel=1e-15) and both[1] == pytest.approx(only[1], rel=1e-15)


def test_ramp_envelope_and_path_against_their_formulas():
    """s(t) = sin^2(pi t / (2 T_r)) for 0 <= t < T_r, 1 from T_r on, 1 for T_r = 0 (and 0 at
    t < 0 inside a ramp: the clip), per centre when T_r is an array; X(t) = x0 + alpha s(t)
    sin(beta t + phase) -- each value against math.sin of the formula."""
    from tdse.model.potential import envelope, path
    for T in (0.7, 2.0, 13.0):
        for t in (0.0, 0.1 * T, 0.5 * T, 0.93 * T, T, 1.5 * T):
            s = math.sin(math.pi * t / (2 * T)) ** 2 if t < T else 1.0
            assert float(envelope(T, t)) == pytest.approx(s, abs=1e-15)
        assert float(envelope(T, -0.3)) == 0.0
    assert float(envelope(0.0, 0.2)) == 1.0 and float(envelope(0.0, 0.0)) == 1.0
    ts = np.array([0.25, 1.0, 3.0])
    got = envelope(np.array([0.0, 2.0]), ts[:, None])                      # (3, 2)
    assert got.shape == (3, 2)
    assert np.allclose(got[:, 0], 1.0, rtol=0, atol=0)
    assert np.allclose(got[:, 1], [math.sin(math.pi * 0.25 / 4) ** 2, math.sin(math.pi / 4) ** 2, 1.0],
                       rtol=0, atol=1e-15)
    x = path(-1.0, 0.5, 3.0, 0.4, 2.0, 1.0)
    assert float(x) == pytest.approx(-1.0 + 0.5 * math.sin(math.pi / 4) ** 2 * math.sin(3.4), abs=1e-15)


# ---------------------------------------------------------------- observables.py survivors
def test_edge_norm_is_the_norm_in_ten_points_at_each_wall():
    """edge_norm: sum |psi|^2 dx over the first and the last 10 points (a random psi whose
    walls differ, so a sign, a power or a point count changes the number)."""
    from tdse.model.observables import edge_norm
    rng = np.random.default_rng(3)
    psi = rng.standard_normal(64) + 1j * rng.standard_normal(64)
    psi[:10] *= 3.0
    w = np.abs(psi) ** 2
    ref = (w[:10].sum() + w[54:].sum()) * 0.07
    assert edge_norm(psi, 0.07) == pytest.approx(ref, rel=1e-14)
    assert edge_norm(psi, 0.07, points=3) == pytest.approx((w[:3].sum() + w[61:].sum()) * 0.07,
                                                            rel=1e-14)


def test_node_positions_follow_their_definition():
    """node_positions against the definition written out here: psi rotated by the phase of
    its largest point, points at or below eps x max|psi| skipped, a node between successive
    kept points of opposite real part, by linear interpolation -- for a genuinely complex
    psi (no global phase makes it real), at the default eps and another."""
    from tdse.model.observables import node_count, node_positions

    def reference(x, psi, eps):
        j = max(range(len(psi)), key=lambda i: abs(psi[i]))
        rot = np.exp(-1j * np.angle(psi[j]))
        kept = [(x[i], (psi[i] * rot).real) for i in range(len(psi)) if abs(psi[i]) > eps * abs(psi[j])]
        out = []
        for (x0, r0), (x1, r1) in zip(kept, kept[1:]):
            if r0 * r1 < 0:
                out.append(x0 - r0 * (x1 - x0) / (r1 - r0))
        return np.array(out)
    x = np.linspace(-10, 10, 401)
    psi = np.exp(-x ** 2 / 20) * (np.cos(1.3 * x) + 0.6j * np.sin(0.7 * x + 0.4)) * np.exp(0.9j)
    for eps in (1e-2, 0.3):
        ref = reference(x, psi, eps)
        got = node_positions(x, psi, eps) if eps != 1e-2 else node_positions(x, psi)
        assert got.size == ref.size > 2 and np.allclose(got, ref, rtol=0, atol=1e-12)
        assert node_count(x, psi, eps) == ref.size
    assert node_count(x, psi, 0.3) != node_count(x, psi)      # eps is passed on
    # a point exactly at the threshold is skipped; a largest |psi| of exactly 1 is a state
    xs = np.arange(3.0)
    assert node_positions(xs, np.array([1.0, -0.01, 1.0])).size == 0
    assert node_positions(xs, np.array([1.0, -0.5, 1.0])).size == 2
    zero = node_positions(xs, np.zeros(3))
    assert zero.shape == (0,) and node_count(xs, np.zeros(3)) == 0


def test_block_measure_host_row_yield_and_layer_norm(inputs_dir):
    """BlockMeasure on the host: yield = 1 - norm and layer_norm = sum over the absorbing
    layers of |psi|^2 dx, per member (members with different absorber widths), against
    sums written here; a block of one member (a one-value scan) equals that member's row."""
    from tdse.model.grid import points
    from tdse.model.observables import BlockMeasure
    base = tdse.load_config(os.path.join(inputs_dir, "atom_hhg.toml"))
    configs = [base.with_value("absorber.width", w) for w in (10.0, 25.0)]
    x = points(base.grid)
    n, dx = len(x), base.grid.dx
    rng = np.random.default_rng(8)
    X = 0.05 * (rng.standard_normal((n, 2)) + 1j * rng.standard_normal((n, 2)))
    phi = rng.standard_normal((2, 3, n))
    r = BlockMeasure(configs, x, phi, X, np)(10.0, X)
    for b, c in enumerate(configs):
        w = np.abs(X[:, b]) ** 2
        layer = absorber_profile(c, x) > 0
        assert 0 < layer.sum() < n
        assert r["norm"][b] == pytest.approx(w.sum() * dx, rel=1e-13)
        assert r["yield"][b] == pytest.approx(1.0 - w.sum() * dx, rel=1e-13)
        assert r["layer_norm"][b] == pytest.approx(w[layer].sum() * dx, rel=1e-13)
    one = BlockMeasure(configs[:1], x, phi[:1], X[:, :1], np)(10.0, X[:, :1])   # a 1-member block
    for k, v in one.items():
        assert np.allclose(np.asarray(v)[0], np.asarray(r[k])[0], rtol=1e-13, atol=0), k


# ---------------------------------------------------------------- snapshots.py survivors
def test_storage_error_code_and_message_say_the_numbers():
    """StorageError: ENOSPC exactly when the free space is known and smaller than needed
    (EIO otherwise, also at needed == free), and the message names both sizes in KiB (or ?)."""
    import errno
    from tdse.run.snapshots import StorageError
    e = StorageError("r.h5", 3, 5 * 2 ** 20, 2 ** 20, "disk full")
    assert e.errno == errno.ENOSPC
    assert "about 5120 KiB, 1024 KiB free" in e.strerror and "holds 3 whole snapshots" in e.strerror
    assert StorageError("r.h5", 3, 2 ** 20, 2 ** 20, "x").errno == errno.EIO
    u = StorageError("r.h5", 1, 3 * 2 ** 10, None, "I/O error")
    assert u.errno == errno.EIO and "about 3 KiB, ? KiB free" in u.strerror


def test_resume_state_of_a_file_without_the_counting_attributes(tmp_path, inputs_dir):
    """resume_state reads a run file whose writer left out ``complete`` and
    ``snapshots_complete`` (an older or interrupted writer): it resumes from the rows the
    snapshot datasets hold; a file marked complete is refused."""
    import h5py
    from tdse import config as cfgmod
    from tdse.run.driver import run
    from tdse.run.snapshots import NotOurFile, resume_state
    cfg = cfgmod.load(os.path.join(inputs_dir, "tiny.toml")).with_value(
        "propagator.time_error", "none")
    path = run(cfg, str(tmp_path), backend="numpy").path
    with pytest.raises(NotOurFile, match="already complete"):
        resume_state(path)
    with h5py.File(path, "r+") as f:
        rows = f["snapshots/step"].shape[0]
        last = int(f["snapshots/step"][-1])
        del f.attrs["complete"], f.attrs["snapshots_complete"]
    s = resume_state(path)
    assert s["count"] == rows > 1 and s["step"] == last


def test_the_in_memory_writer_returns_what_the_file_reader_does(tmp_path, inputs_dir):
    """tdse.simulate without a file (MemoryWriter) against the same run written and read
    back (SnapshotWriter + read): the same datasets with the same values, the same
    attributes (the file adds ``created`` and ``storage_error``), equal where they are not timings."""
    from tdse import config as cfgmod
    from tdse.api import simulate
    from tdse.run.driver import run
    from tdse.run.snapshots import read
    cfg = cfgmod.load(os.path.join(inputs_dir, "tiny.toml")).with_value(
        "propagator.time_error", "none")
    mem = simulate(cfg, backend="numpy").arrays()
    disk = read(run(cfg, str(tmp_path), backend="numpy").path)
    assert set(mem) == set(disk)
    for k in mem:
        if k != "attrs":
            a, b = np.asarray(mem[k]), np.asarray(disk[k])
            assert a.shape == b.shape and np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"), k
    assert set(disk["attrs"]) - set(mem["attrs"]) == {"created", "storage_error"}   # (a file's own: its disk)
    assert set(mem["attrs"]) <= set(disk["attrs"])
    for k in ("format", "version", "units", "input_toml", "effective_toml", "name", "complete",
              "snapshots_complete", "observables_complete", "method", "scheme", "steps"):
        assert str(mem["attrs"][k]) == str(disk["attrs"][k]), k
    assert bool(mem["attrs"]["complete"]) and mem["attrs"]["snapshots_complete"] == len(mem["snapshots/t"]) > 1


@pytest.mark.parametrize("sets", [
    {"propagator.time_error": "none"},
    {"propagator.time_error": "companion"},                       # its psi in two resume slots
    {"propagator.time_error": "none", "propagator.operator": True, "grid.dx": 0.05,
     "time.t_end": 0.2},                                          # U(t) in two slots: N^2 each
    {"propagator.time_error": "none", "propagator.operator": True, "grid.dx": 0.05,
     "time.t_end": 0.2, "output.every": 1, "output.populations": 48},  # P: K^2 a snapshot
    {"propagator.time_error": "none", "grid.dx": 0.025, "time.t_end": 0.05},   # N = 512
    {"propagator.time_error": "none", "propagator.method": "chebyshev", "grid.dx": 0.0004,
     "time.dt": 1e-6, "time.t_end": 2e-6},          # N = 32000 (a small dt: a few Chebyshev
                                                    # terms, not 30000 -- 64 s of the suite):
])                                      # the fixed datasets (8 N bytes each) above the allowance
def test_the_output_size_estimate_bounds_the_file_it_predicts(sets, tmp_path, inputs_dir):
    """resources.output_bytes (snapshots.file_bytes: what the disk check before a run
    compares with the free space) is at least the size of the file the run writes, and not
    more than 15 % + 128 KiB above it (the metadata allowance).  It was 0.69x the file in
    operator mode at N = 256: the second resume slot of U(t) was not counted."""
    from tdse import config as cfgmod
    from tdse.run.driver import run
    from tdse.run.resources import output_bytes
    cfg = cfgmod.load(os.path.join(inputs_dir, "tiny.toml"))
    for k, v in sets.items():
        cfg = cfg.with_value(k, v)
    size = os.path.getsize(run(cfg, str(tmp_path), backend="numpy").path)
    est = output_bytes(cfg)
    assert size <= est <= 1.15 * size + 131072, (size, est)


def _tiny_file(tmp_path, inputs_dir, **sets):
    from tdse import config as cfgmod
    from tdse.run.driver import run
    cfg = cfgmod.load(os.path.join(inputs_dir, "tiny.toml")).with_value(
        "propagator.time_error", "none").with_value("output.flush_seconds", 0)
    for k, v in sets.items():
        cfg = cfg.with_value(k, v)
    return run(cfg, str(tmp_path), backend="numpy").path


def test_read_keeps_only_the_whole_rows_and_names_what_is_missing(tmp_path, inputs_dir):
    """read(): rows past ``snapshots_complete`` / ``observables_complete`` (a killed run's
    partly written last rows) are dropped, bytes attributes come back as str, and a file
    without a coordinate or a group is NotOurFile naming it."""
    import h5py
    from tdse.run.snapshots import NotOurFile, read
    path = _tiny_file(tmp_path, inputs_dir)
    whole = read(path)
    S, O = len(whole["snapshots/t"]), len(whole["observables/t"])
    with h5py.File(path, "r+") as f:
        for g, n in (("snapshots", S), ("observables", O)):
            for ds in f[g].values():
                ds.resize(n + 2, axis=0)                 # two rows the writer never finished
        f.attrs["note"] = np.bytes_(b"bytes attribute")
    d = read(path)
    assert len(d["snapshots/psi"]) == S and len(d["observables/norm"]) == O
    assert np.array_equal(d["snapshots/psi"], whole["snapshots/psi"])
    assert d["attrs"]["note"] == "bytes attribute"
    with h5py.File(path, "r+") as f:
        del f["observables"]
    with pytest.raises(NotOurFile, match=r"missing group /observables"):
        read(path)
    with h5py.File(path, "r+") as f:
        del f["x"]
    with pytest.raises(NotOurFile, match=r"missing /x"):
        read(path)


def test_resume_state_refusals_and_what_it_returns(tmp_path, inputs_dir):
    """resume_state: a file with no whole snapshot is refused (saying so); one whole
    snapshot is enough; it returns that snapshot's step and psi and the effective input."""
    import h5py
    from tdse.run.snapshots import NotOurFile, read, resume_state
    path = _tiny_file(tmp_path, inputs_dir)
    d = read(path)
    with h5py.File(path, "r+") as f:
        f.attrs["complete"] = False
        f.attrs["snapshots_complete"] = 0
    with pytest.raises(NotOurFile, match="no whole snapshot"):
        resume_state(path)
    with h5py.File(path, "r+") as f:
        f.attrs["snapshots_complete"] = 1
    s = resume_state(path)
    assert s["count"] == 1 and s["step"] == int(d["snapshots/step"][0])
    assert np.array_equal(s["psi"], d["snapshots/psi"][0])
    assert s["input_toml"] == d["attrs"]["effective_toml"] and s["U"] is None
    with h5py.File(path, "r+") as f:
        del f.attrs["effective_toml"]
    assert resume_state(path)["input_toml"] == d["attrs"]["input_toml"]


def test_a_new_file_starts_with_no_whole_rows_and_is_not_overwritten(tmp_path, inputs_dir):
    """SnapshotWriter: a new file says 0 whole snapshots and observations before its first
    row; an existing path is refused (OutputExists naming it) unless force."""
    import h5py
    from tdse import config as cfgmod
    from tdse.run.plan import prepare
    from tdse.run.snapshots import OutputExists, SnapshotWriter
    cfg = cfgmod.load(os.path.join(inputs_dir, "tiny.toml"))
    plan = prepare(cfg, backend="numpy", check_resolution=False)
    path = str(tmp_path / "r.h5")
    kw = dict(config=cfg, x=plan.x, v0=np.zeros(cfg.grid.n), energies=np.zeros(2),
              phi=np.zeros((2, cfg.grid.n)), attrs={})
    w = SnapshotWriter(path, **kw)
    w.f.flush()
    with h5py.File(path, "r") as f:
        assert f.attrs["snapshots_complete"] == 0 and f.attrs["observables_complete"] == 0
    w.close(False)
    with pytest.raises(OutputExists, match="r.h5"):
        SnapshotWriter(path, **kw)
    SnapshotWriter(path, force=True, **kw).close(False)


def test_a_full_disk_at_a_snapshot_says_the_free_space(tmp_path, inputs_dir, monkeypatch):
    """append: when the next flush needs more than the free space, StorageError carries the
    free bytes the check saw (in its message too) and the cause."""
    from tdse import config as cfgmod
    from tdse.run.driver import run
    from tdse.run.snapshots import SnapshotWriter, StorageError
    cfg = cfgmod.load(os.path.join(inputs_dir, "tiny.toml")).with_value(
        "propagator.time_error", "none").with_value("output.flush_seconds", 0)
    calls = []

    def free(self):
        calls.append(1)
        return 10 ** 12 if len(calls) < 3 else 3 * 2 ** 10      # full at the third snapshot
    monkeypatch.setattr(SnapshotWriter, "_free", free)
    with pytest.raises(StorageError) as e:
        run(cfg, str(tmp_path), backend="numpy")
    assert e.value.free == 3 * 2 ** 10 and e.value.count == 2
    assert ": no space left on the device (the next" in str(e.value) and "3 KiB free" in str(e.value)
    import h5py
    with h5py.File(e.value.path) as f:           # the file says why it stopped, and where
        assert f.attrs["storage_error"].decode() == "no space left on the device"
        assert f.attrs["snapshots_complete"] == 2 and f["snapshots/psi"].shape[0] == 2
        assert not f.attrs["complete"]


@pytest.mark.parametrize("stencil", [3, 5, "dvr"])
def test_kinetic_diagonal_offsum_and_onenorm_bounds_against_the_dense_matrix(stencil, inputs_dir):
    """hamiltonian's scalar bounds against the matrix they describe (kinetic_dense at
    N = 400): kinetic_diagonal is T_jj; kinetic_offsum bounds every column's off-diagonal
    1-norm and is reached in the middle column to 1e-2 (the DVR's infinite sum, truncated
    at N/2 on either side, falls short by ~4/N of it); onenorm_bounds' (c, r) bound
    ||s T + diag(v) - c I||_1 for a random v in [vmin, vmax], tight to 2 % (the middle
    column and the extreme v); toeplitz_column is T's first column; order is 2, 4, None."""
    from tdse import config as cfgmod
    from tdse.model import hamiltonian as h
    cfg = cfgmod.load(os.path.join(inputs_dir, "tiny.toml"))
    cfg = cfg.with_value("grid.stencil", stencil).with_value("grid.dx", (cfg.grid.x_max - cfg.grid.x_min) / 400)
    g = cfg.grid
    T = h.kinetic_dense(g)
    assert np.allclose(np.diag(T), h.kinetic_diagonal(stencil, g.dx), rtol=1e-14, atol=0)
    off = np.abs(T).sum(axis=0) - np.abs(np.diag(T))
    bound = h.kinetic_offsum(stencil, g.dx)
    assert off.max() <= bound * (1 + 1e-14)
    assert off[g.n // 2] >= bound * (1 - (1e-2 if stencil == "dvr" else 1e-14))
    assert np.array_equal(h.toeplitz_column(g), T[:, 0])
    assert h.order(stencil) == {3: 2, 5: 4, "dvr": None}[stencil]
    rng = np.random.default_rng(3)
    vmin, vmax, s = -2.0, 0.7, 0.5
    v = rng.uniform(vmin, vmax, g.n)
    v[g.n // 2], v[g.n // 2 + 1] = vmin, vmax
    c, r = h.onenorm_bounds(stencil, g.dx, vmin, vmax, scale=s)
    A = s * T + np.diag(v) - c * np.eye(g.n)
    norm1 = np.abs(A).sum(axis=0).max()
    assert norm1 <= r * (1 + 1e-14) and norm1 >= 0.98 * r


def test_generator_columns_equal_the_dense_generator_with_and_without_an_absorber(inputs_dir):
    """generator_columns (a GPU's band of the generator, built from T's Toeplitz column)
    equal generator_dense's columns exactly, with an absorber (complex: -i s W on the
    diagonal) and without, for a band in the middle and at either end."""
    from tdse import config as cfgmod
    from tdse.model import hamiltonian as h
    base = cfgmod.load(os.path.join(inputs_dir, "atom_hhg.toml"))
    rng = np.random.default_rng(8)
    for cfg in (base, base.with_value("grid.stencil", 5)):
        import dataclasses
        for c in (cfg, dataclasses.replace(cfg, absorber=None)):
            v = rng.standard_normal(c.grid.n)
            G = h.generator_dense(c, 0.5, v)
            assert G.dtype == (np.complex128 if c.absorber is not None else np.float64)
            for c0, c1 in ((0, 7), (100, 180), (c.grid.n - 5, c.grid.n)):
                band = h.generator_columns(c, 0.5, v, c0, c1)
                assert band.dtype == G.dtype and np.array_equal(band, G[:, c0:c1])


@pytest.mark.parametrize("flush_seconds, every, obs_every", [
    (0, None, None), (1e9, None, None),
    (0, 1, 5),        # a snapshot every step: the held count crosses the 64-row chunks, and
                      # most writes have no new observation row
    (0, 63, None)])   # the observation count at a write just below a chunk boundary
def test_pending_bytes_counts_the_chunks_the_next_write_starts(flush_seconds, every, obs_every,
                                                               tmp_path, inputs_dir, monkeypatch):
    """SnapshotWriter.pending_bytes (the free-space check before each write) against a
    count made from the datasets' shapes and chunks: 64 KiB of metadata, plus each chunk a
    snapshot or observation dataset starts between the last write and this one, plus the
    resume arrays the first time each slot is made; and the file grows by no more.  Each
    snapshot written at once (0) and all held to the close (1e9)."""
    import math
    from tdse.run.driver import run
    from tdse.run.snapshots import SnapshotWriter, resume_name
    from tdse import config as cfgmod
    cfg = cfgmod.load(os.path.join(inputs_dir, "tiny.toml")).with_value(
        "propagator.time_error", "companion").with_value("output.flush_seconds", flush_seconds)
    if every:
        cfg = cfg.with_value("output.every", every)
    if obs_every:
        cfg = cfg.with_value("output.observables_every", obs_every)
    orig_pb, orig_w, seen = SnapshotWriter.pending_bytes, SnapshotWriter.write, []

    def pending_bytes(self):
        need = orig_pb(self)
        ref = 65536
        done, c0, H = int(self.f.attrs["observables_complete"]), self.count, len(self._held)
        for ds, first, last in ([(ds, c0, c0 + H - 1) for ds in self.snap.values()]
                                + [(ds, done, self.obs_count - 1) for ds in self.obs.values()]):
            rows = ds.chunks[0]
            width = int(np.prod(ds.shape[1:])) * ds.dtype.itemsize
            if last >= first:       # chunks holding rows first..last not yet begun
                ref += (math.floor(last / rows) - math.floor((first - 1) / rows)) * rows * width
        # the resume arrays of the counts flushed: the last, and the one before where H is even
        for c in ([c0 + H - 1, c0 + H] if H % 2 == 0 else [c0 + H]):
            for key, arr in (self._held[c - c0 - 1][1] or {}).items():
                if resume_name(key, c) not in self.f:
                    ref += np.asarray(arr).nbytes
        seen.append([need, ref, os.path.getsize(self.path), H])
        return need

    def write(self, final=False):
        n = len(seen)
        orig_w(self, final)
        if len(seen) > n:
            seen[-1][2] = os.path.getsize(self.path) - seen[-1][2]
    monkeypatch.setattr(SnapshotWriter, "pending_bytes", pending_bytes)
    monkeypatch.setattr(SnapshotWriter, "write", write)
    run(cfg, str(tmp_path), backend="numpy")
    assert any(r > 65536 for _, r, _, _ in seen)
    assert len(seen) >= 5 if flush_seconds == 0 else (len(seen) == 2 and seen[-1][3] > 5)
    for need, ref, grew, _ in seen:
        assert need == ref and grew <= need


def test_the_raw_file_holds_whole_rows_only_and_labels_its_resume_arrays(tmp_path, inputs_dir):
    """Read with h5py alone (as xarray or another language would), a finished file's
    snapshot datasets hold exactly ``snapshots_complete`` rows and the observation datasets
    ``observables_complete`` (no capacity rows left over); the resume arrays carry their
    units: the companion's psi bohr^-1/2."""
    import h5py
    path = _tiny_file(tmp_path, inputs_dir, **{"propagator.time_error": "companion"})
    with h5py.File(path, "r") as f:
        S, O = int(f.attrs["snapshots_complete"]), int(f.attrs["observables_complete"])
        assert S > 2 and O > S
        assert all(ds.shape[0] == S for ds in f["snapshots"].values())
        assert all(ds.shape[0] == O for ds in f["observables"].values())
        names = [k for k in f["resume"]]
        assert names and all(k.startswith("companion_") for k in names)
        assert all(f["resume"][k].attrs["units"] == "bohr^-1/2" for k in names)
    op = _tiny_file(tmp_path / "op", inputs_dir, **{"propagator.operator": True, "time.t_end": 0.2})
    with h5py.File(op, "r") as f:           # U(t) for resuming: dimensionless
        names = [k for k in f["resume"]]
        assert names and all(k.startswith("U_") and f["resume"][k].attrs["units"] == "1"
                             for k in names)


@pytest.mark.parametrize("error,cause", [
    ("disk quota exceeded " + "q" * 200, "disk quota exceeded " + "q" * 140),      # cut at 160
    ("quota " + "q" * 100 + "\nsecond line", "quota " + "q" * 100),               # first line
])
def test_a_failed_flush_says_its_cause_and_the_free_space(error, cause, tmp_path, inputs_dir,
                                                         monkeypatch):
    """An I/O error at a snapshot's flush: StorageError with the error's first line (cut at
    160 characters) as the cause, the free space the check saw, and the count of whole
    snapshots before it."""
    from tdse import config as cfgmod
    from tdse.run.driver import run
    from tdse.run.snapshots import SnapshotWriter, StorageError
    cfg = cfgmod.load(os.path.join(inputs_dir, "tiny.toml")).with_value(
        "propagator.time_error", "none").with_value("output.flush_seconds", 0)
    calls, orig = [], SnapshotWriter._flush

    def flush(self):
        calls.append(1)
        if len(calls) == 3:
            raise OSError(error)
        orig(self)
    monkeypatch.setattr(SnapshotWriter, "_flush", flush)
    monkeypatch.setattr(SnapshotWriter, "_free", lambda self: 7 * 2 ** 30)
    with pytest.raises(StorageError) as e:
        run(cfg, str(tmp_path), backend="numpy")
    msg = str(e.value)
    assert e.value.free == 7 * 2 ** 30 and f"{7 * 2 ** 20} KiB free" in msg
    assert f": {cause} (the next" in msg and "second line" not in msg and e.value.count == 2


@pytest.mark.parametrize("degree", range(0, 19))
def test_ps_products_against_the_products_paterson_stockmeyer_makes(degree):
    """ps_products(m) = (products, q): evaluating a degree-m polynomial by
    mgemm.formulas.ps with that q (the powers X^2..X^q first) makes exactly that many
    products (counted by a counting mm), and no other block size makes fewer."""
    from mgemm.formulas import powers, ps
    from mgemm.plan import ps_products

    def count(q):
        n = [0]

        def mm(X, Y, C=None, alpha=1.0, beta=0.0):
            n[0] += 1
            return alpha * (X @ Y) + (beta * C if C is not None else 0.0)
        X = np.full((2, 2), 0.1)
        pows = powers(mm, np.eye(2), X, max(1, min(q, degree)))
        ps(mm, pows, [1.0] * (degree + 1))
        return n[0]
    products, q = ps_products(degree)
    assert count(q) == products
    assert products == min(count(k) for k in range(1, max(degree, 1) + 1))


@pytest.mark.parametrize("theta", [0.3, 2.5, 40.0])
@pytest.mark.parametrize("split", [False, True])
def test_formula_table_rows_and_the_plan_they_explain(theta, split):
    """formula_table: its Paterson-Stockmeyer row is plan_expm's plan without formulas;
    each formula row meets the tolerance with the fewest squarings that do (one fewer
    does not, or exceeds the scaled-norm cap) and counts its products as the formula's
    GEMMs (real ones on the split path) + 1 (complex) or 2 (split) a squaring; and the
    planner with formulas takes a plan with as few products as the cheapest row."""
    from mgemm.formulas import FORMULAS, real_gemms
    from mgemm.plan import _MAX_SCALED_NORM, _squared_bound, formula_table, plan_expm
    tol = 1e-12
    path = "split" if split else "complex"
    rows = [r for r in formula_table(theta, tolerance=tol, unitary=True) if r["path"] == path]
    assert {r["path"] for r in formula_table(theta, tolerance=tol)} == {"complex", "split"}
    ps_row = next(r for r in rows if r["scheme"] == "ps")
    p = plan_expm(theta, tolerance=tol, split=split, unitary=True, unit_roundoff=2.0 ** -53,
                  use_formulas=False)
    assert (ps_row["degree"], ps_row["squarings"], ps_row["products"]) == (p.degree, p.squarings, p.products)
    per_sq = 2 if split else 1
    for r in rows:
        if r["scheme"] == "ps":
            continue
        _, m, prods = FORMULAS[r["scheme"]]
        s = r["squarings"]
        assert r["bound"] <= tol and r["degree"] == m
        assert r["products"] == (real_gemms(r["scheme"]) if split else prods) + per_sq * s
        if s > 0 and theta / 2.0 ** (s - 1) <= _MAX_SCALED_NORM:
            assert _squared_bound(theta, m, s - 1, True, r["scheme"]) > tol
    best = plan_expm(theta, tolerance=tol, split=split, unitary=True, unit_roundoff=2.0 ** -53)
    assert best.products <= min(r["products"] for r in rows)


def test_an_expm_plan_says_its_squarings_and_whether_it_meets_its_tolerance():
    """ExpmPlan.explain names the squarings only when there are some; as_dict carries
    meets_tolerance, the same as the property."""
    from mgemm.plan import plan_expm
    small = plan_expm(0.1, tolerance=1e-12, unit_roundoff=2.0 ** -53)
    large = plan_expm(50.0, tolerance=1e-12, unit_roundoff=2.0 ** -53)
    assert small.squarings == 0 and "squarings" not in small.explain()
    assert large.squarings > 0 and f", {large.squarings} squarings" in large.explain()
    for p in (small, large, plan_expm(50.0, method="taylor", terms=4, tolerance=1e-12,
                                      unit_roundoff=2.0 ** -53)):
        d = p.as_dict()
        assert d["meets_tolerance"] is p.meets_tolerance and isinstance(d["meets_tolerance"], bool)
    assert not plan_expm(50.0, method="taylor", terms=4, tolerance=1e-12,
                         unit_roundoff=2.0 ** -53).meets_tolerance


@pytest.mark.parametrize("degree", range(0, 19))
def test_split_products_against_the_products_the_split_evaluation_makes(degree):
    """split_products(m) = (products, q): mgemm.expm's cos/sin evaluation of T_m(iB) with
    that q makes exactly that many real products (a counting mm), and no block size up to
    floor(m/2) makes fewer."""
    from mgemm.expm import _ps_split
    from mgemm.plan import split_products

    def count(q):
        n = [0]

        def mm(X, Y, C=None, alpha=1.0, beta=0.0):
            n[0] += 1
            return alpha * (X @ Y) + (beta * C if C is not None else 0.0)
        _ps_split(np, mm, np.full((2, 2), 0.1), degree, q)
        return n[0]
    products, q = split_products(degree)
    assert count(q) == products
    assert products <= min(count(k) for k in range(1, max(degree // 2, 1) + 1))


def test_squared_bound_against_its_formula():
    """plan._squared_bound(theta, m, s) against the inequality it states, written out:
    n R (max ||X||, ||Y||)^(n - 1) with n = 2^s, R the Taylor (or the formula's) remainder at
    theta / n, the growth (1 + R)^(n-1) for skew-Hermitian A and e^((n-1) theta / n)
    otherwise; 0 at theta = 0; inf exactly where the first neglected term n x^(m+1)/(m+1)!
    exceeds e^50 (the sum is then skipped)."""
    from mgemm.plan import _squared_bound, formula_remainder, taylor_remainder
    for theta, m, s in ((0.7, 6, 0), (3.0, 8, 2), (40.0, 12, 5), (5.0, 4, 3), (0.7, 8, 0),
                        (3.0, 12, 2), (40.0, 18, 6), (100.0, 20, 8)):
        n = 2.0 ** s
        x = theta / n
        for formula, R in (("ps", taylor_remainder(x, m)), ("bbc8", None), ("bbc12", None)):
            if formula != "ps":
                from mgemm.formulas import FORMULAS
                if formula not in FORMULAS:
                    continue
                R = formula_remainder(x, formula)
                m_f = FORMULAS[formula][1]
            else:
                m_f = m
            for unitary in (True, False):
                grow = (1 + R) ** (n - 1) if unitary else math.exp((n - 1) * theta / n)
                want = n * R * grow
                got = _squared_bound(theta, m_f, s, unitary, formula)
                assert got == pytest.approx(want, rel=1e-12), (theta, m, s, formula, unitary)
    assert _squared_bound(0.0, 6, 0, True) == 0.0
    # the guard: the first neglected term n x^(m+1)/(m+1)! against e^50
    m, s = 30, 0                 # x ~ 60 at the guard: the remainder's sum stays short
    lo = math.exp((49.0 + math.lgamma(m + 2)) / (m + 1))      # log term = 49: summed
    hi = math.exp((51.0 + math.lgamma(m + 2)) / (m + 1))      # log term = 51: inf
    assert math.isfinite(_squared_bound(lo, m, s, True)) and _squared_bound(hi, m, s, True) == math.inf
    at = math.exp((50.5 + math.lgamma(m + 2)) / (m + 1))      # between 50 and 51
    assert _squared_bound(at, m, s, True) == math.inf
    just = math.exp((49.9 + math.lgamma(m + 2)) / (m + 1))
    assert math.isfinite(_squared_bound(just, m, s, True))


@pytest.mark.parametrize("stencil", [3, 5, "dvr"])
def test_block_operator_with_scale_two_exactly(stencil, inputs_dir):
    """alpha * s = 2 exactly (the operator's k; 1 is the value it skips multiplying by):
    BlockOperator against the dense matrices written out, __call__ and a recurrence term."""
    from tdse import config as cfgmod
    from tdse.model import hamiltonian as h
    cfg = cfgmod.load(os.path.join(inputs_dir, "tiny.toml")).with_value("grid.stencil", stencil)
    g = cfg.grid
    rng = np.random.default_rng(21)
    V = rng.standard_normal((g.n, 4))
    X = rng.standard_normal((g.n, 4)) + 1j * rng.standard_normal((g.n, 4))
    op = h.BlockOperator(g, 0.5, V, alpha=4.0, shift=0.3)
    want = 4.0 * (0.5 * h.kinetic_dense(g) @ X + (V - 0.3) * X)
    scale = np.abs(want).max()
    assert np.abs(op(X) - want).max() <= 1e-12 * scale
    Y = np.zeros_like(X)
    assert np.abs(op.recur(X, X, Y, 1.0) - (want - X)).max() <= 1e-12 * scale


@pytest.mark.parametrize("stencil", [3, 5, "dvr"])
@pytest.mark.parametrize("path", ["gemm", "fft"])
@pytest.mark.parametrize("cols", [1, 3])
def test_block_operator_against_the_dense_generator(stencil, path, cols, inputs_dir, monkeypatch):
    """BlockOperator (a scan's Chebyshev operator: X -> alpha (s T X + (V - shift) X) with
    each column's own V) against the dense matrices written out, for its __call__ and one
    recurrence term (Z = op X - P, Y += a Z): the DVR's GEMM path and its FFT path (each
    forced) alike, the stencils' sparse product, a block and a single column, to 1e-12."""
    from tdse import config as cfgmod
    from tdse.model import hamiltonian as h
    if path == "fft" and stencil != "dvr":
        pytest.skip("the FFT path is the DVR's")
    monkeypatch.setattr(h, "DVR_GEMM_MIN_B", 10 ** 9 if path == "fft" else 1)
    cfg = cfgmod.load(os.path.join(inputs_dir, "tiny.toml")).with_value("grid.stencil", stencil)
    g = cfg.grid
    rng = np.random.default_rng(12)
    V = rng.standard_normal((g.n, cols))
    X = rng.standard_normal((g.n, cols)) + 1j * rng.standard_normal((g.n, cols))
    P = rng.standard_normal((g.n, cols)) + 1j * rng.standard_normal((g.n, cols))
    alpha, s, shift, a = 0.37, 0.5, 0.9, 0.2 - 0.7j
    op = h.BlockOperator(g, s, V, alpha=alpha, shift=shift)
    assert (op.T is None) == (path == "fft" or stencil != "dvr")
    T = h.kinetic_dense(g)
    want = alpha * (s * T @ X + (V - shift) * X)
    scale = np.abs(want).max()
    assert np.abs(op(X) - want).max() <= 1e-12 * scale
    Y0 = rng.standard_normal((g.n, cols)) + 0j
    Y = Y0.copy()
    Z = op.recur(X, P, Y, a)
    assert np.abs(Z - (want - P)).max() <= 1e-12 * scale
    assert np.abs(Y - (Y0 + a * (want - P))).max() <= 1e-12 * scale
    if cols == 1:                     # a single state as a vector: the same numbers
        v = h.BlockOperator(g, s, V[:, 0], alpha=alpha, shift=shift)(X[:, 0])
        assert np.abs(v - want[:, 0]).max() <= 1e-12 * scale
    # blocks in Fortran order and an accumulator that is a strided view (the CPU GEMM path
    # copies what is not C-contiguous, its BLAS axpy needs a contiguous Y): the same numbers
    Xf, Pf = np.asfortranarray(X), np.asfortranarray(P)
    assert np.abs(op(Xf) - want).max() <= 1e-12 * scale
    Ybig = np.zeros((g.n, 2 * cols), dtype=np.complex128)
    Yv = Ybig[:, ::2]
    Yv[...] = Y0
    Z = op.recur(Xf, Pf, Yv, a)
    assert np.abs(Z - (want - P)).max() <= 1e-12 * scale
    assert np.abs(Ybig[:, ::2] - (Y0 + a * (want - P))).max() <= 1e-12 * scale
    assert not Ybig[:, 1::2].any()
    assert np.abs(X - Xf).max() == 0 and np.abs(P - Pf).max() == 0   # inputs untouched


# ---------------------------------------------------------------- mgemm.schedule (mutation run)
def test_auto_tile_against_its_definition():
    """auto_tile: the power of two nearest (in log) floor(M / 4G) (G at least 1), within
    [256, 4096] and at least min(256, max(M, N)) -- cases on each side of each bound, and
    one where floor(M / 4) and M / 4 round to different powers (2^11.5 = 2896.3 lies
    between 2896 and 2896.5)."""
    from mgemm.schedule import auto_tile
    cases = {(32768, 32768, 4): 2048, (100000, 100, 1): 4096, (300, 300, 4): 256,
             (100, 50, 1): 100, (8192, 8192, 0): 2048, (11586, 11586, 1): 2048,
             (1, 1, 1): 1, (4, 4, 1): 4, (65536, 8, 8): 2048, (20000, 20000, 2): 2048,
             (11600, 11600, 1): 4096}     # M / 4 = 2900 rounds up, M / 5 would not
    for (m, n, g), want in cases.items():
        target = max(1, m // (4 * max(g, 1)))
        t = 2 ** round(math.log2(target)) if target > 1 else 1
        assert want == max(min(t, 4096), min(256, max(m, n))), (m, n, g)   # the table is the rule
        assert auto_tile(m, n, g) == want, (m, n, g)
        assert isinstance(auto_tile(m, n, g), int)


@pytest.mark.parametrize("method, shares", [("native", None), ("3m", None), ("native", [1, 3])])
def test_schedule_explain_says_what_it_holds(method, shares):
    """Schedule.explain by value: the product's shapes, the method (not for native), the
    tile, the band grid (A bands x ceil(N / T)), the workers and their rows when shared,
    where A, B and C live, and the count of each kind of op (counted here)."""
    import collections

    from mgemm.schedule import plan_gemm
    s = plan_gemm(40, 24, 56, workers=[0, 1], a_dev=0, b_dev=1, c_dev=1, tile=8,
                  beta_zero=False, method=method, shares=shares)
    kinds = collections.Counter(op.kind for op in s.ops)
    how = "" if method == "native" else " (3m)"
    rows = ""
    if shares:
        r = [sum(s.bands[i][1] - s.bands[i][0] for i in b) for b in s.bands_of]
        assert sum(r) == 40 and r[1] > r[0]
        rows = f" (rows per worker 0: {r[0]}, 1: {r[1]})"
    assert s.explain() == (
        f"C[40x56] = A[40x24] B[24x56]{how}: tile 8, {len(s.bands)}x7 tiles on workers [0, 1]{rows}; "
        f"A on 0, B on 1, C on 1; ops: " + ", ".join(f"{v} {k}" for k, v in sorted(kinds.items())))
    assert sum(kinds.values()) == len(s.ops) and len(kinds) >= 3
    # bytes per element: whole numbers, the real planes of a complex (3m) product half
    for name, _ in s.buffers:
        b = s.itemsize(name, 16)
        assert isinstance(b, int) and b == (8 if name in s.real_buffers else 16)


def _schedules():
    """plan_gemm's kinds of schedule: native and 3m (each plane copy mode), rows shared
    unevenly, taller A bands, beta kept (C's own bands read and received)."""
    from mgemm.schedule import plan_gemm
    kw = dict(workers=[0, 1, 2], a_dev=0, b_dev=1, c_dev=2, tile=8)
    return {"native": plan_gemm(40, 24, 56, beta_zero=True, **kw),
            "native beta": plan_gemm(40, 24, 56, beta_zero=False, **kw),
            "shares": plan_gemm(64, 16, 40, beta_zero=False, shares=[1, 2, 3], **kw),
            "row_tile": plan_gemm(48, 16, 40, beta_zero=True, row_tile=16, **kw),
            **{f"3m {pc}": plan_gemm(40, 24, 56, beta_zero=False, method="3m", plane_copies=pc, **kw)
               for pc in ("all", "first", "none")}}


def test_plan_gemm_refuses_bad_arguments_by_name():
    from mgemm.schedule import plan_gemm
    kw = dict(workers=[0, 1], a_dev=0, b_dev=0, c_dev=0, tile=4, beta_zero=True)
    for m, k, n in ((0, 4, 4), (4, 0, 4), (4, 4, 0)):
        with pytest.raises(ValueError, match=f"matrix sizes must be >= 1, got m={m}, k={k}, n={n}"):
            plan_gemm(m, k, n, **kw)
    for tile in (2.5, 0, "8"):
        with pytest.raises(ValueError, match=f"tile must be an integer >= 1, got tile={tile!r}"):
            plan_gemm(8, 8, 8, **{**kw, "tile": tile})
    for workers in ([], [0, 0]):
        with pytest.raises(ValueError, match="workers must be distinct device ids"):
            plan_gemm(8, 8, 8, **{**kw, "workers": workers})
    for bad in (0, 2.0):
        with pytest.raises(ValueError, match="row_tile must be an integer >= 1"):
            plan_gemm(8, 8, 8, row_tile=bad, **kw)
    assert plan_gemm(8, 8, 8, row_tile=1, **kw).bands == [(r, r + 1) for r in range(8)]


@pytest.mark.parametrize("name", ["native", "native beta", "shares", "row_tile", "3m all",
                                  "3m first", "3m none"])
def test_every_region_lies_in_its_buffer(name):
    """Every region an op reads or writes is a rectangle of whole numbers inside the
    buffer it names (the schedule's buffers table: A, B, C and the real stacks at their
    matrix shapes, the workers' two-slot band buffers); bufA and bufB hold two bands each
    (2 H rows of P K; 2 P K rows of T), bufC and recvC two C bands (2 H x N), bufT one tile
    per plane (H x 3 T); split ops run on the "split" stream, A's along its columns."""
    s = _schedules()[name]
    P = 3 if s.method == "3m" else 1
    H = max(r1 - r0 for r0, r1 in s.bands)
    for op in s.ops:
        for R in [r for r, _ in op.reads] + list(op.writes):
            rows, cols = s.buffers[(R.buf, R.dev)]
            for v in (R.r0, R.r1, R.c0, R.c1):
                assert isinstance(v, int), (op, R)
            assert 0 <= R.r0 < R.r1 <= rows and 0 <= R.c0 < R.c1 <= cols, (op, R)
        if op.kind == "split":
            assert op.stream == "split" and op.axis == (1 if op.reads[0][0].buf == "A" else 0)
    want = {"bufA": (2 * H, P * s.k), "bufB": (2 * P * s.k, s.tile), "bufT": (H, 3 * s.tile),
            "bufC": (2 * H, s.n)}
    for (buf, dev), shape in s.buffers.items():
        if buf.startswith("recvC"):
            assert shape == (2 * H, s.n) and dev == s.c_dev
        elif buf in want:
            assert shape == want[buf], (buf, dev)
    assert any(b.startswith("recvC") for b, _ in s.buffers) == (not s.beta_zero)


@pytest.mark.parametrize("name", ["native", "shares", "3m all"])
def test_band_buffers_alternate_their_two_slots(name):
    """Double buffering: the B bands a worker receives go to slot 0, 1, 0, 1, ... of its
    bufB (a band is copied while the GEMM reads the other), its A bands alike."""
    s = _schedules()[name]
    P = 3 if s.method == "3m" else 1
    H = max(r1 - r0 for r0, r1 in s.bands)
    for w in s.workers:
        for buf, height in (("bufB", P * s.k), ("bufA", H)):
            starts = []
            for op in s.ops:
                if op.kind == "copy" and op.writes[0].buf == buf and op.writes[0].dev == w:
                    slot = op.writes[0].r0 // height
                    if not starts or starts[-1][1] != op.label.split(" plane")[0]:
                        starts.append((slot, op.label.split(" plane")[0]))
            slots = [sl for sl, _ in starts]
            assert slots == [i % 2 for i in range(len(slots))], (w, buf, slots)


def test_3m_splits_are_paced_by_first_uses():
    """3m: B_j's split waits (``after``) for the first op reading B_(j-2)'s stack; a
    worker's split of its next A band for the first op reading its previous band's stack;
    a worker's first band and B_0, B_1 wait for nothing."""
    from mgemm.schedule import plan_gemm
    # the second: one worker, the B source itself, so its own GEMMs (no copies) are the
    # first readers of B's stack
    alone = plan_gemm(40, 24, 56, workers=[1], a_dev=0, b_dev=1, c_dev=2, tile=8,
                      beta_zero=False, method="3m")
    for s in (_schedules()["3m all"], alone):
        k = s.k

        def first_reader(buf, r0, r1):
            return min(op.id for op in s.ops for R, _ in op.reads
                       if R.buf == buf and R.r0 >= r0 and R.r1 <= r1)
        splits_b = {op.label: op for op in s.ops if op.kind == "split" and op.label.startswith("split B")}
        nb = len(splits_b)
        assert nb == math.ceil(s.n / s.tile) >= 4
        for j in range(nb):
            want = [] if j < 2 else [first_reader("B3", (j - 2) * 3 * k, (j - 1) * 3 * k)]
            assert splits_b[f"split B{j}"].after == want, j
        splits_a = {op.label: op for op in s.ops if op.kind == "split" and op.label.startswith("split A")}
        for bands in s.bands_of:
            for li, i in enumerate(bands):
                r0, r1 = s.bands[bands[li - 1]] if li else (0, 0)
                want = [first_reader("A3", r0, r1)] if li else []
                assert splits_a[f"split A{i}"].after == want, (bands, li)
    assert any(op.kind == "gemm" and op.id in [a for op2 in alone.ops if op2.kind == "split"
                                                for a in op2.after] for op in alone.ops)


def test_interleave_orders_the_issue_by_tile_or_by_band():
    """interleave="tile" issues every worker's tile j before any worker's tile j + 1;
    "band" issues a worker's whole band before the next worker's: the workers' GEMMs in
    issue order change worker at every tile, or once a band.  Both are correct schedules
    (the emulator runs either); only the order differs."""
    from mgemm.schedule import plan_gemm
    kw = dict(workers=[0, 1, 2], a_dev=0, b_dev=1, c_dev=2, tile=8, beta_zero=True)
    for mode in ("tile", "band"):
        s = plan_gemm(48, 16, 40, interleave=mode, **kw)
        devs = [op.dev for op in sorted(s.ops, key=lambda o: o.id) if op.kind == "gemm"]
        runs = [d for i, d in enumerate(devs) if i == 0 or devs[i - 1] != d]
        nb, steps = math.ceil(40 / 8), max(len(b) for b in s.bands_of)
        per_band = [w for w, b in zip(kw["workers"], s.bands_of) if b]
        assert len(s.bands_of) == 3 and steps >= 1 and nb == 5
        want = ([d for _ in range(steps) for _ in range(nb) for d in per_band] if mode == "tile"
                else [d for _ in range(steps) for d in per_band])
        assert runs == want, mode


def test_reductions_carry_the_calls_beta():
    """With beta kept, each band sent to C's device is reduced there by an 'axpby' op whose
    beta is the placeholder 'beta' (the call's value), reading the received band and C."""
    s = _schedules()["native beta"]
    red = [op for op in s.ops if op.kind == "axpby"]
    assert red and all(op.beta == "beta" and op.dev == s.c_dev for op in red)
    assert all([R.buf for R, _ in op.reads] == [f"recvC{op.stream[len('reduce'):]}", "C"] for op in red)


def test_band_rows_apportion_by_largest_remainder():
    """band_rows with shares, worked by hand: the row granule q (128 from M = 512 G on, 8
    from M = 8 G, else 1), the M // q units apportioned by largest remainder (ties to the
    lower worker), the rows the granule leaves to the worker with the most rows, each
    worker's rows cut into max(1, round(R / T)) near-equal bands, laid out round by round."""
    from mgemm.schedule import band_rows

    def rows(bands_of, band):
        return [sum(band[i][1] - band[i][0] for i in b) for b in bands_of]
    # q = 128 at M = 512 G exactly: units 8 -> 2.67 / 5.33 -> 3 / 5 (w0's larger fraction)
    bands_of, band = band_rows(1024, 256, 2, [1, 2])
    assert band == [(0, 256), (256, 640), (640, 768), (768, 1024)] and bands_of == [[0, 2], [1, 3]]
    # q = 8 at M = 8 G exactly: units 2 -> 0.67 / 1.33 -> 1 / 1
    assert rows(*band_rows(16, 8, 2, [1, 2])) == [8, 8]
    # q = 1 below: 5 / 10
    assert rows(*band_rows(15, 8, 2, [1, 2])) == [5, 10]
    # the 4 rows the granule leaves go to the largest share (the middle one), not the last
    bands_of, band = band_rows(1100, 1024, 3, [1, 5, 1])
    assert rows(bands_of, band) == [160, 788, 152]
    assert [len(b) for b in bands_of] == [1, 1, 1]          # R < T: one band each


def test_plan_gemm_ops_by_value():
    """Every op runs on a device of the product and a stream of the schedule's kinds, and
    has a label; C's own tiles read C and scale it by the call's beta only when beta is
    kept (the placeholder "beta"), else 0 and no read; 3m's first tiles are three plane
    GEMMs labelled T1-T3, and the B source's first starts only once B_1 is split."""
    from mgemm.schedule import plan_gemm
    for name, s in _schedules().items():
        devs = set(s.workers) | {s.a_dev, s.b_dev, s.c_dev}
        streams = {"compute", "copy_in", "copy_out", "split"} | {f"reduce{w}" for w in s.workers}
        for op in s.ops:
            assert op.dev in devs and op.stream in streams and op.label, (name, op)
            if op.kind in ("gemm", "combine") and op.writes[0].buf == "C":
                reads_c = [R for R, _ in op.reads if R.buf == "C"]
                if s.beta_zero:
                    assert op.beta == 0.0 and not reads_c, (name, op)
                else:
                    assert op.beta == "beta" and reads_c == [op.writes[0]], (name, op)
    for n, paced in ((16, True), (8, False)):            # B_1 exists only for n > tile
        s = plan_gemm(16, 8, n, workers=[0, 1], a_dev=0, b_dev=1, c_dev=0, tile=8,
                      beta_zero=True, method="3m")
        split_b1 = [op.id for op in s.ops if op.label == "split B1"]
        first = [op for op in s.ops if op.kind == "gemm" and op.dev == 1][:3]
        assert [op.label.split(" ")[0] for op in first] == ["T1", "T2", "T3"]
        assert [op.after for op in first] == ([split_b1, [], []] if paced else [[], [], []])


# ---------------------------------------------------------------- mgemm.expm's memory plan (mutation run)
def _expm_plans():
    """Plans of each path and kind: complex Paterson-Stockmeyer and formula, the split
    path's cos/sin PS, with and without squarings."""
    from mgemm.plan import plan_expm
    u = 2.0 ** -53
    return {"ps": plan_expm(3.0, tolerance=1e-12, unit_roundoff=u, use_formulas=False),
            "ps big": plan_expm(40.0, tolerance=1e-12, unit_roundoff=u, use_formulas=False),
            "formula": plan_expm(3.0, tolerance=1e-12, unit_roundoff=u),
            "split": plan_expm(3.0, tolerance=1e-12, unit_roundoff=u, split=True, unitary=True),
            "split big": plan_expm(40.0, tolerance=1e-12, unit_roundoff=u, split=True, unitary=True)}


def _counting_mm():
    calls = []

    def mm(X, Y, C=None, alpha=1.0, beta=0.0):
        calls.append(1)
        out = alpha * (X @ Y)
        return out + beta * C if C is not None else out
    return mm, calls


def test_products_of_each_ps_block_are_those_made():
    """_products(plan, q) -- what fitting_plan charges a leaner plan -- equals the products
    the evaluation makes with that PS block (counted), for every q from 1 to the plan's,
    on both paths (q beyond the degree clipped)."""
    import dataclasses

    from mgemm.expm import _evaluate, _products
    rng = np.random.default_rng(7)
    A = rng.standard_normal((6, 6)) * 0.3
    for name, plan in _expm_plans().items():
        if plan.formula != "ps":
            continue
        M = A if plan.path == "split" else A + 1j * A.T
        for q in range(1, plan.ps_block + 3):
            p = dataclasses.replace(plan, ps_block=q)
            mm, calls = _counting_mm()
            _evaluate(np, mm, M, p)
            assert _products(plan, q) == len(calls), (name, q)


def test_peak_matrices_against_the_memory_numpy_allocates():
    """peak_matrices (the dry run on ghost matrices) against tracemalloc's peak while
    NumPy runs the same evaluation (expm's CPU products, mgemm.gemm) on a 96 x 96 matrix,
    in bytes per N^2: equal to within 1 byte (measured: 144 / 160 / 176 / 88 / 88 bytes, the
    rest small arrays), the input counted as expm holds it; the pool's count at least the
    live one."""
    import tracemalloc

    from mgemm import gemm
    from mgemm.expm import _evaluate, peak_matrices
    n = 96
    rng = np.random.default_rng(3)
    A = rng.standard_normal((n, n)) / n
    for (name, plan), dtype in [(x, d) for x in _expm_plans().items()
                                for d in (np.complex128, np.complex64)]:
        mm = lambda X, Y, C=None, alpha=1.0, beta=0.0: gemm(X, Y, C, alpha, beta)  # noqa: E731 -- expm's on the CPU
        real = np.float64 if dtype == np.complex128 else np.float32
        M = A.astype(real) if plan.path == "split" else (A + 1j * A.T).astype(dtype)
        tracemalloc.start()
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        U = _evaluate(np, mm, M, plan).astype(dtype, copy=False)     # expm's final cast
        peak = (tracemalloc.get_traced_memory()[1] - base + M.nbytes) / (n * n)   # bytes per N^2
        tracemalloc.stop()
        assert U.dtype == dtype
        del U
        ghost = peak_matrices(plan, dtype)
        assert peak_matrices(plan, dtype, pool=True) >= ghost
        assert abs(ghost - peak) <= 1.0, (name, dtype, ghost, peak)    # 1 byte / N^2: the small arrays


def test_memory_bytes_by_hand():
    """memory_bytes = ceil(pool peak x N x ceil(N / G)) and, on G > 1 devices, two staging
    bands of N x ceil(N / G) of the products' dtype (real on the split path)."""
    from mgemm.expm import memory_bytes, peak_matrices
    for name, plan in _expm_plans().items():
        for dtype in (np.complex128, np.complex64):
            p = peak_matrices(plan, dtype, pool=True)
            item = np.dtype(dtype).itemsize // (2 if plan.path == "split" else 1)
            for n, g in ((1000, 1), (1000, 3), (1001, 4), (7, 2)):
                w = -(-n // g)
                want = p * n * w + (2 * n * w * item if g > 1 else 0)
                assert memory_bytes(n, plan, dtype, g) == math.ceil(want), (name, n, g)


def test_fitting_plan_takes_the_first_plan_that_fits_and_names_the_largest_n():
    """fitting_plan: the plan itself when it fits; else the first of the leaner candidates
    (fewer stored PS powers, each charged its own products) whose need fits, exactly at
    its need; none fitting: ExpmMemoryError naming the leanest need and the largest N whose
    exponent and input fit (that N fits, N + 1 does not)."""
    import dataclasses
    import re

    from mgemm.expm import ExpmMemoryError, _products, fitting_plan, memory_bytes
    plan = _expm_plans()["ps big"]
    n, g, dt = 4096, 2, np.complex128
    need = memory_bytes(n, plan, dt, g)
    assert fitting_plan(plan, n, dt, g, need) is plan
    leaner = [dataclasses.replace(plan, ps_block=q, products=_products(plan, q))
              for q in range(plan.ps_block - 1, 0, -1)]
    needs = [memory_bytes(n, c, dt, g) for c in leaner]
    assert needs == sorted(needs, reverse=True) and needs[-1] < need
    for c, b in zip(leaner, needs):
        got = fitting_plan(plan, n, dt, g, b)
        first = next(x for x, y in zip(leaner, needs) if y <= b)
        assert got == first and got.products == _products(plan, got.ps_block) > plan.products - 1
    free = needs[-1] - 1
    with pytest.raises(ExpmMemoryError) as e:
        fitting_plan(plan, n, dt, g, free)
    msg = str(e.value)
    assert f"N = {n} needs {needs[-1] / 2**30:.2f} GiB on each of {g} device(s)" in msg
    assert f"1 stored powers, {plan.squarings} squarings" in msg
    largest = int(re.search(r"the largest N that fits \(with its input\) is (\d+)", msg).group(1))
    total = lambda k: memory_bytes(k, leaner[-1], dt, g) + k * -(-k // g) * 16   # noqa: E731
    assert total(largest) <= free < total(largest + 1)
    # a formula plan falls back to Paterson-Stockmeyer of plan_expm's degree without formulas
    from mgemm.plan import plan_expm
    f = plan_expm(3.0, tolerance=1e-12, unit_roundoff=2.0 ** -53, unitary=True)
    assert f.formula != "ps"
    ref = plan_expm(3.0, tolerance=1e-12, unit_roundoff=2.0 ** -53, unitary=True, use_formulas=False)
    base = fitting_plan(f, n, dt, g, memory_bytes(n, ref, dt, g))
    assert base == ref


def test_the_pool_model_follows_its_rules_worked_by_hand():
    """_Meter, CuPy's caching pool as modelled: a freed block is kept; a request takes the
    smallest kept block that is large enough, split (the rest kept); otherwise the pool
    grows by the request.  A sequence worked by hand (sizes in bytes per N^2)."""
    from mgemm.expm import _Meter
    m = _Meter()
    assert (m.live, m.peak, m.pool, m.free) == (0, 0, 0, [])
    m.add(8)
    m.add(8)
    assert (m.live, m.peak, m.pool) == (16, 16, 16)
    m.sub(8)                        # kept, not returned
    assert (m.live, m.peak, m.pool, m.free) == (8, 16, 16, [8])
    m.add(16)                       # no kept block is large enough: the pool grows
    assert (m.live, m.peak, m.pool, sorted(m.free)) == (24, 24, 32, [8])
    m.sub(16)
    m.add(4)                        # the smallest that fits (8 of [8, 16]), split: 4 kept
    assert (m.live, m.pool, sorted(m.free)) == (12, 32, [4, 16])
    m.add(4)                        # the 4 left of the split
    m.add(10)                       # from the 16: 6 kept
    assert (m.live, m.peak, m.pool, sorted(m.free)) == (26, 26, 32, [6])
    m.sub(4)
    m.sub(4)
    m.add(8)                        # two freed 4s are never merged: the pool grows
    assert (m.pool, sorted(m.free)) == (40, [4, 4, 6])


def test_the_pool_holds_more_than_the_live_peak_on_the_split_path():
    """peak_matrices(pool=True) counts what the pool holds: on the split path the complex
    result (16 bytes) cannot reuse the freed real (8-byte) blocks, so it is more than the
    live peak; the request for the pool's count is honoured (not the live count)."""
    from mgemm.expm import peak_matrices
    for name, plan in _expm_plans().items():
        live = peak_matrices(plan, np.complex128)
        pool = peak_matrices(plan, np.complex128, pool=True)
        assert pool >= live
        if plan.path == "split":
            assert pool > live, name


def test_products_for_every_degree_and_block_are_those_made():
    """_products(plan, q) for every degree 1..24 and PS block 1..degree + 1, both paths,
    with and without squarings, against the products the evaluation makes (counted)."""
    import dataclasses

    from mgemm.expm import _evaluate, _products
    rng = np.random.default_rng(17)
    A = rng.standard_normal((4, 4)) * 0.1
    for path, base in (("split", _expm_plans()["split big"]), ("complex", _expm_plans()["ps big"])):
        M = A if path == "split" else A + 1j * A.T
        for m in range(1, 25):
            for s in (0, 2):
                for q in range(1, m + 2):
                    p = dataclasses.replace(base, degree=m, ps_block=q, squarings=s)
                    mm, calls = _counting_mm()
                    _evaluate(np, mm, M, p)
                    assert _products(p, q) == len(calls), (path, m, s, q)


def test_fitting_plan_falls_back_in_the_inputs_path_and_precision():
    """A formula plan (the complex path only: the split path has none) falls back to
    plan_expm's Paterson-Stockmeyer plan without formulas at the dtype's own unit
    roundoff; a Taylor plan has no leaner form: it fits or is refused."""
    import dataclasses

    from mgemm.expm import ExpmMemoryError, fitting_plan, memory_bytes
    from mgemm.plan import plan_expm
    n, g = 2048, 1
    assert plan_expm(2.5, tolerance=1e-12, unit_roundoff=2.0 ** -53, split=True).formula == "ps"
    for dt, u, tol, theta in ((np.complex128, 2.0 ** -53, 1e-12, 2.5),
                              (np.complex64, 2.0 ** -24, 1e-7, 2.5),
                              (np.complex64, 2.0 ** -24, 1e-7, 0.3)):
        f = plan_expm(theta, tolerance=tol, unit_roundoff=u, unitary=True)
        ref = plan_expm(theta, tolerance=tol, unit_roundoff=u, unitary=True, use_formulas=False)
        assert f.formula != "ps" and ref.formula == "ps" and f.path == ref.path == "complex"
        need = memory_bytes(n, ref, dt, g)
        if need >= memory_bytes(n, f, dt, g):
            continue                        # the formula plan itself is the leaner one
        assert fitting_plan(f, n, dt, g, need) == ref
    t = plan_expm(0.5, method="taylor", terms=12, tolerance=1e-6, unit_roundoff=2.0 ** -53)
    need = memory_bytes(n, t, np.complex128, g)
    assert fitting_plan(t, n, np.complex128, g, need) is t
    with pytest.raises(ExpmMemoryError, match=r"taylor|degree 12"):
        fitting_plan(t, n, np.complex128, g, need - 1)
    assert dataclasses.replace(t) == t


@pytest.mark.parametrize("g", [1, 2, 3])
def test_the_largest_n_named_is_exact_for_any_free_memory(g):
    """The largest N the refusal names: its exponent and its input (N x ceil(N / G) of the
    dtype) fit in ``free``, N + 1's do not; at exact equality it fits; 0 (said) when not
    even N = 1 does; the free GiB printed as they are."""
    import re

    from mgemm.expm import ExpmMemoryError, fitting_plan, memory_bytes
    plan = _expm_plans()["split big"]
    dt = np.complex128
    n = 5000
    lean = min([plan] + [__import__("dataclasses").replace(plan, ps_block=q)
                         for q in range(1, plan.ps_block)],
               key=lambda c: memory_bytes(n, c, dt, g))
    total = lambda k: memory_bytes(k, lean, dt, g) + k * -(-k // g) * 16   # noqa: E731

    def named(free):
        with pytest.raises(ExpmMemoryError) as e:
            fitting_plan(plan, n, dt, g, free)
        msg = str(e.value)
        assert f"{free / 2**30:.2f} GiB are free" in msg
        k = int(re.search(r"the largest N that fits \(with its input\) is (\d+)", msg).group(1))
        return k, msg

    rng = np.random.default_rng(g)
    frees = [int(x) for x in rng.integers(1, total(n) - 1, 40)] + [total(k) for k in (1, 2, 3, 77, 1234)]
    frees += [total(k) - 1 for k in (2, 3, 77, 1234)] + [3 * 2 ** 30]
    for free in frees:
        if free >= memory_bytes(n, lean, dt, g):
            continue
        k, msg = named(free)
        assert total(k) <= free < total(k + 1), (free, k)
        assert msg.endswith(f"is {k}") or k == 0
    k, msg = named(total(1) - 1)
    assert k == 0 and msg.endswith("is 0 (none does)")


@pytest.mark.parametrize("stencil", [3, 5])
def test_kinetic_max_is_the_top_of_the_stencils_symbol(stencil):
    """T_max = max over k of the stencil's symbol d0 + 2 d1 cos k + 2 d2 cos 2k (from
    kinetic_bands, not from kinetic_max's formula), reached at k = pi: the bound is exact,
    not only an upper bound (a looser one costs Chebyshev terms)."""
    from tdse.model.hamiltonian import kinetic_bands, kinetic_max
    dx = 0.37
    d0, d1, d2 = kinetic_bands(stencil, dx)
    k = np.linspace(0.0, np.pi, 100001)
    symbol = d0 + 2 * d1 * np.cos(k) + 2 * d2 * np.cos(2 * k)
    assert abs(kinetic_max(stencil, dx) - symbol.max()) <= 1e-12 * symbol.max()
    assert symbol.min() >= -1e-12 * symbol.max()


@pytest.mark.parametrize("stencil", [3, 5, "dvr"])
def test_onenorm_bounds_against_the_matrix_1_norm(stencil):
    """onenorm_bounds' (c, r) against ||s T + diag(v) - c I||_1 of the dense matrix (NumPy),
    v random in [vmin, vmax] with both ends on interior columns: never above r, and r is
    attained (3-/5-point: to rounding; the DVR's r sums its column over the infinite
    lattice, N = 301 holds 99 % of it), with and without ``scale``."""
    from tdse.model.hamiltonian import dvr_column, kinetic_bands, onenorm_bounds
    import scipy.linalg
    n, dx, vmin, vmax = 301, 0.23, -3.1, 0.7
    if stencil == "dvr":
        T = scipy.linalg.toeplitz(dvr_column(n, dx))
    else:
        d0, d1, d2 = kinetic_bands(stencil, dx)
        T = (np.diag(np.full(n, d0)) + np.diag(np.full(n - 1, d1), 1) + np.diag(np.full(n - 1, d1), -1)
             + np.diag(np.full(n - 2, d2), 2) + np.diag(np.full(n - 2, d2), -2))
    rng = np.random.default_rng(3)
    v = rng.uniform(vmin, vmax, n)
    v[n // 2], v[n // 2 + 1] = vmin, vmax
    for s, args in ((1.0, ()), (0.6, (0.6,))):
        c, r = onenorm_bounds(stencil, dx, vmin, vmax, *args)
        norm = np.abs(s * T + np.diag(v) - c * np.eye(n)).sum(axis=0).max()
        low = 0.99 if stencil == "dvr" else 1 - 1e-12
        assert low * r <= norm <= r * (1 + 1e-12), (s, norm / r)


def test_kinetic_max_of_the_dvr_and_bad_stencils():
    """The sinc-DVR's kinetic symbol k^2/2 tops at k = pi/dx; a stencil that is none of
    3, 5, 'dvr' is refused naming it."""
    from tdse.model.hamiltonian import kinetic_bands, kinetic_max
    assert kinetic_max("dvr", 0.5) == pytest.approx(0.5 * (np.pi / 0.5) ** 2, rel=1e-15)
    with pytest.raises(ValueError, match=r"stencil must be 3, 5 or 'dvr', got stencil=7"):
        kinetic_max(7, 0.1)
    with pytest.raises(ValueError, match=r"kinetic_bands needs stencil 3 or 5, got stencil='dvr'"):
        kinetic_bands("dvr", 0.1)


@pytest.mark.parametrize("split", [False, True])
@pytest.mark.parametrize("unitary", [False, True])
def test_plan_expm_is_the_cheapest_candidate_by_exhaustive_search(split, unitary):
    """plan_expm's search (pruned, with its degree extension) against every candidate
    written out: Paterson-Stockmeyer degrees 1.._MAX_DEGREE and (complex path) the
    formulas, every squaring count with theta / 2^s <= _MAX_SCALED_NORM; the plan's
    (products, bound) is the least (cost, bound) among those meeting the tolerance, its
    degree, squarings and PS block those of a candidate with that cost and bound, and below
    what any candidate reaches it takes the most accurate PS plan."""
    from mgemm import plan as pl
    U = 2.0 ** -53
    cost_fn = pl.split_products if split else pl.ps_products
    per = 2 if split else 1
    for theta in (1e-3, 0.37, 1.0, 2.0, 2.9, 4.0, 11.0, 140.0, 1e19):
        for tol in (1e-4, 1e-10, 2.0 ** -53):
            cands = []
            for s in range(pl._MAX_SQUARINGS + 1):
                if theta / 2.0 ** s > pl._MAX_SCALED_NORM:
                    continue
                for m in range(1, pl._MAX_DEGREE + 1):
                    b = pl._squared_bound(theta, m, s, unitary)
                    if b <= tol:
                        cands.append((cost_fn(m)[0] + per * s, b, m, s, cost_fn(m)[1], "ps"))
                if not split:
                    for name, (_, m, p) in pl.FORMULAS.items():
                        b = pl._squared_bound(theta, m, s, unitary, name)
                        if b <= tol:
                            cands.append((p + s, b, m, s, 0, name))
            plan = pl.plan_expm(theta, method="auto", tolerance=tol, split=split, unitary=unitary,
                                unit_roundoff=U)
            if not cands:               # beyond every candidate: the most accurate PS plan
                sf = math.ceil(math.log2(theta)) + 1
                assert (plan.degree, plan.squarings) == (pl._MAX_DEGREE, sf), (theta, tol)
                assert plan.truncation_bound == pl._squared_bound(theta, pl._MAX_DEGREE, sf, unitary)
                continue
            best = min(c[:2] for c in cands)
            assert (plan.products, plan.truncation_bound) == best, (theta, tol)
            same = [c for c in cands if c[:2] == best]
            assert any((plan.degree, plan.squarings, plan.ps_block) == c[2:5] for c in same), (theta, tol)
            assert plan.path == ("split" if split else "complex") and plan.method == "auto"
            assert plan.unitary is unitary and plan.rounding_estimate == pl._rounding_estimate(
                theta, plan.squarings, U, unitary)



def test_plan_expm_below_every_candidate_takes_the_most_accurate(monkeypatch):
    """No candidate meets the tolerance (every bound made 1 here): the plan is PS at
    _MAX_DEGREE with ceil(log2 theta) + 1 squarings (theta / 2^s < 1), its cost and bound
    those of that candidate."""
    from mgemm import plan as pl
    monkeypatch.setattr(pl, "_squared_bound",
                        lambda theta, m, s, unitary, name="ps": 1.0 + m + s + 1000 * theta + 7 * unitary)
    for split, unitary, theta in ((False, False, 3.0), (True, True, 3.0), (False, True, 0.3)):
        low = pl.plan_expm(theta, method="auto", tolerance=1e-3, split=split, unitary=unitary,
                           unit_roundoff=2.0 ** -53)
        s = max(0, math.ceil(math.log2(theta)) + 1)         # 3 for theta = 3, 0 for 0.3
        cost_fn, per = (pl.split_products, 2) if split else (pl.ps_products, 1)
        assert (low.degree, low.squarings, low.ps_block) == (pl._MAX_DEGREE, s, cost_fn(pl._MAX_DEGREE)[1])
        assert low.products == cost_fn(pl._MAX_DEGREE)[0] + per * s
        assert low.truncation_bound == 1.0 + pl._MAX_DEGREE + s + 1000 * theta + 7 * unitary
        assert low.formula == "ps"


def test_plan_expm_taylor_plan_defaults_and_refusals():
    """The thesis' Taylor plan by value (no squarings, no PS block, its own remainder and
    rounding estimate, the unitary flag kept); the defaults (method auto, unitary False);
    theta = 0 accepted, a negative or infinite theta and terms < 1 refused."""
    from mgemm import plan as pl
    U = 2.0 ** -53
    for unitary in (False, True):
        for terms in (1, 10):
            p = pl.plan_expm(0.31, method="taylor", terms=terms, tolerance=1e-10, unitary=unitary,
                             unit_roundoff=U)
            assert (p.method, p.path, p.degree, p.squarings, p.ps_block, p.products) == \
                ("taylor", "complex", terms, 0, 0, terms)
            assert p.unitary is unitary and p.truncation_bound == pl.taylor_remainder(0.31, terms)
            assert p.rounding_estimate == pl._rounding_estimate(0.31, 0, U, unitary)
    assert pl.plan_expm(0.31, method="taylor", tolerance=1e-10, unit_roundoff=U).degree == 10   # default terms
    d = pl.plan_expm(2.5, tolerance=1e-12, unit_roundoff=U)
    assert d.method == "auto" and d.unitary is False
    assert d == pl.plan_expm(2.5, method="auto", tolerance=1e-12, unitary=False, unit_roundoff=U)
    assert d.truncation_bound == pl._squared_bound(2.5, d.degree, d.squarings, False, d.formula)
    z = pl.plan_expm(0.0, tolerance=1e-12, unit_roundoff=U)
    assert z.truncation_bound <= 1e-12 and z.squarings == 0
    for bad in (-0.5, math.inf):
        with pytest.raises(ValueError, match="theta must be finite and >= 0"):
            pl.plan_expm(bad, tolerance=1e-12, unit_roundoff=U)
    with pytest.raises(ValueError, match="terms must be an integer >= 1, got terms=0"):
        pl.plan_expm(1.0, method="taylor", terms=0, tolerance=1e-12, unit_roundoff=U)


def test_taylor_remainder_against_exact_rationals():
    """R_m(theta) = sum_{k>m} theta^k / k! against the same sum in exact rationals
    (fractions, 200 terms past m: the tail beyond is below 1e-300 relative for these
    theta) and against e^theta - T_m(theta) where that difference does not cancel; 0 at
    theta = 0 and where the first term underflows; bad theta refused naming it."""
    from fractions import Fraction

    from mgemm.plan import taylor_remainder
    for theta in (1e-3, 0.25, 1.0, 3.7, 20.0):
        for m in (0, 1, 5, 12, 30):
            th = Fraction(theta)
            term, exact = Fraction(1), Fraction(0)
            for k in range(1, m + 200):
                term = term * th / k
                if k > m:
                    exact += term
            assert taylor_remainder(theta, m) == pytest.approx(float(exact), rel=1e-14), (theta, m)
    assert taylor_remainder(1.0, 0) == pytest.approx(math.e - 1.0, rel=1e-15)
    assert taylor_remainder(0.0, 3) == 0.0 and taylor_remainder(1e-200, 10) == 0.0
    for bad in (-1.0, math.inf, math.nan):
        with pytest.raises(ValueError, match="theta must be finite and >= 0"):
            taylor_remainder(bad, 3)


def test_expm_plan_explain_and_as_dict_by_value():
    """The plan's one-line explanation for the Taylor recurrence, a formula with squarings,
    the split path's PS ("real GEMMs", its block) and a formula without squarings; as_dict
    is the dataclass's fields plus meets_tolerance (max of the two estimates <= tol)."""
    from dataclasses import asdict

    from mgemm import plan as pl
    U = 2.0 ** -53

    def tail(p):
        return (f"theta={p.theta:.4g}, truncation bound {p.truncation_bound:.3g}, "
                f"rounding ~{p.rounding_estimate:.3g}, tolerance {p.tolerance:.3g}")
    t = pl.plan_expm(0.31, method="taylor", terms=10, tolerance=1e-10, unit_roundoff=U)
    assert t.explain() == "taylor: Taylor degree 10 (recurrence a_k = (1/k) A a_(k-1)); 10 GEMMs; " + tail(t)
    f = pl.plan_expm(7.5, tolerance=1e-12, unit_roundoff=U)
    assert (f.formula, f.squarings, f.degree, f.products) == ("bbc18", 3, 18, 8)
    assert f.explain() == ("auto: Taylor degree 18, 3 squarings (Bader-Blanes-Casas T_18 formula); "
                           "8 GEMMs; " + tail(f))
    s = pl.plan_expm(7.5, tolerance=1e-12, split=True, unitary=True, unit_roundoff=U)
    assert s.formula == "ps" and s.path == "split"
    assert s.explain() == (f"auto: Taylor degree {s.degree}, {s.squarings} squarings (Paterson-Stockmeyer, "
                           f"block {s.ps_block}); {s.products} real GEMMs; " + tail(s))
    q = pl.plan_expm(0.9, tolerance=1e-6, unit_roundoff=U)
    assert q.squarings == 0 and q.explain() == (
        f"auto: Taylor degree {q.degree} (Sastre-Ibanez-Defez 15+ formula); {q.products} GEMMs; " + tail(q))
    names = {"bbc8": "Bader-Blanes-Casas T_8", "bbc12": "Bader-Blanes-Casas T_12",
             "bbc18": "Bader-Blanes-Casas T_18", "sastre16": "Sastre-Ibanez-Defez 15+"}
    assert pl._FORMULA_NAMES == names
    for p in (t, f, s, q):
        d = p.as_dict()
        assert d == {**asdict(p), "meets_tolerance": max(p.truncation_bound, p.rounding_estimate) <= p.tolerance}
    assert t.as_dict()["meets_tolerance"] is True
    loose = pl.plan_expm(30.0, method="taylor", terms=3, tolerance=1e-10, unit_roundoff=U)
    assert loose.as_dict()["meets_tolerance"] is False


@pytest.mark.parametrize("unitary", [True, False])
def test_formula_table_rows_by_their_definition(unitary):
    """formula_table: on each path the PS plan without formulas, then each formula at the
    fewest squarings (theta/2^s <= 2) whose bound meets the tolerance, its products the
    formula's GEMMs (complex) or real GEMMs (split) plus one (complex) or two (split) a
    squaring; the cheapest complex row is what plan_expm chooses with formulas; the
    default is unitary."""
    from mgemm import plan as pl
    from mgemm.formulas import FORMULAS, real_gemms
    U = 2.0 ** -53
    for theta, tol in ((0.9, 1e-6), (7.5, 1e-12), (40.0, 2.0 ** -53)):
        rows = pl.formula_table(theta, tolerance=tol, unitary=unitary)
        want = []
        for path, per in (("complex", 1), ("split", 2)):
            p = pl.plan_expm(theta, tolerance=tol, split=path == "split", unitary=unitary, unit_roundoff=U,
                             use_formulas=False)
            want.append(dict(path=path, scheme="ps", degree=p.degree, squarings=p.squarings,
                             products=p.products, bound=p.truncation_bound))
            for name, (_, m, gemms) in FORMULAS.items():
                ok = [s for s in range(pl._MAX_SQUARINGS + 1)
                      if theta / 2.0 ** s <= 2.0 and pl._squared_bound(theta, m, s, unitary, name) <= tol]
                if not ok:              # none within _MAX_SQUARINGS: no row
                    continue
                s = ok[0]
                want.append(dict(path=path, scheme=name, degree=m, squarings=s,
                                 products=(real_gemms(name) if path == "split" else gemms) + per * s,
                                 bound=pl._squared_bound(theta, m, s, unitary, name)))
        assert rows == want, theta
        best = pl.plan_expm(theta, tolerance=tol, unitary=unitary, unit_roundoff=U)
        assert min(r["products"] for r in rows if r["path"] == "complex") == best.products
    assert pl.formula_table(7.5, tolerance=1e-12) == pl.formula_table(7.5, tolerance=1e-12, unitary=True)


def test_rounding_estimate_and_the_bounds_overflow_cut():
    """_rounding_estimate = u e^(min(theta/2^s, 700)) 2^s (by its formula; 2^0 = 1), and
    _squared_bound is inf where its value overflows (e^((n - 1) theta / n) near e^1000),
    finite where only large; its formula and the e^50 guard are
    test_squared_bound_against_its_formula's."""
    from mgemm import plan as pl
    for theta, s in ((0.7, 0), (3.0, 2), (40.0, 6), (100.0, 8)):
        n = 2.0 ** s
        assert pl._rounding_estimate(theta, s, 2.0 ** -53, True) == pytest.approx(
            2.0 ** -53 * math.exp(theta / n) * n, rel=1e-14)
    assert pl._rounding_estimate(1e4, 0, 1.0, False) == pytest.approx(math.exp(700.0), rel=1e-14)
    assert pl._squared_bound(1e6, 3, 0, False) == math.inf            # the first neglected term is huge
    assert math.isfinite(pl._squared_bound(50.0, 3, 0, False))        # large, not huge: summed
    assert pl._squared_bound(1e3, 40, 9, False) == math.inf           # e^(~1000 (1 - 1/512)) overflows


@pytest.mark.parametrize("case", ["ramped centres", "gaussian field", "trapezoid field"])
def test_batch_potential_own_times_against_each_members_scalar_functions(case, inputs_dir, rng):
    """BatchPotential.own / _field_at (member b at its own time t_b) against the scalar
    functions of each member's own config (potential.centre_positions, field.field_value):
    centres whose motion ramps up, a gaussian pulse's fwhm, a trapezoid's ramp -- the
    parameters a batch carries per member, each varied here; _field_at of one time is
    field(t)."""
    from tdse.model.potential import BatchPotential, centre_positions
    if case == "ramped centres":
        base = tdse.load_config(os.path.join(inputs_dir, "h2plus_moving.toml"))
        cfgs = [base.with_value("potential.centres.ramp", r) for r in (0.3, 1.0, 2.5)]
        d = 3.0
    else:
        base = tdse.load_config(os.path.join(inputs_dir, "atom_hhg.toml"))
        env, key = ("gaussian", "field.fwhm") if case == "gaussian field" else ("trapezoid", "field.ramp")
        base = base.with_value("field.envelope", env)
        cfgs = [base.with_value(key, v) for v in (40.0, 90.0, 150.0)]
        d = base.field.duration
    x = np.linspace(-5.0, 5.0, 11)
    bp = BatchPotential([c.potential for c in cfgs], x)
    times = rng.uniform(0.0, d, len(cfgs))
    E, X = bp.own(times)
    for b, (c, t) in enumerate(zip(cfgs, times)):
        assert np.allclose(X[b], centre_positions(c.potential, t), rtol=0, atol=1e-14), (case, b)
        Eb = field_value(c.potential.field, t) if c.potential.field is not None else 0.0
        assert E[b] == pytest.approx(Eb, rel=1e-13, abs=1e-16), (case, b)
    assert np.array_equal(bp._field_at(times), E)
    assert np.array_equal(bp._field_at(float(times[0])), bp.field(float(times[0])))
    assert len({tuple(np.ravel(X[b])) for b in range(len(cfgs))}) == len(cfgs) or case != "ramped centres"


@pytest.mark.parametrize("workers", [1, 3])
def test_bounds_over_with_offsets_against_the_direct_sums(inputs_dir, workers):
    """bounds_over(potential, x, times, rows, offsets) = [(min, max)] over the grid and
    the times of sum_j w_j V(x, t + offset_j) for each row w, each V(x, t) by
    potential.total, for cfm4's weights and node offsets (what the precheck asks: both rows
    in one call, V at each offset made once for them -- the same bits as a call a row), in
    chunks smaller than the times (the last one short), on one thread and on three (each
    chunk's extremes merged)."""
    from tdse.model.potential import bounds_over, total
    from tdse.numerics import schemes
    cfg = tdse.load_config(os.path.join(inputs_dir, "h2plus_moving.toml"))
    x = np.linspace(cfg.grid.x_min, cfg.grid.x_max, 64, endpoint=False)
    sch = schemes.get("cfm4")
    dt = 0.05
    ts = np.arange(0.0, 2.0, dt)
    offs = tuple(c * dt for c in sch.nodes)
    both = bounds_over(cfg.potential, x, ts, rows=sch.factors, offsets=offs, chunk=7, workers=workers)
    assert len(both) == len(sch.factors) == 2
    for row, got in zip(sch.factors, both):
        lo, hi = bounds_over(cfg.potential, x, ts, rows=[row], offsets=offs, chunk=7,
                             workers=workers)[0]
        assert got == (lo, hi)
        v = np.array([sum(w * total(cfg.potential, x, t + o) for w, o in zip(row, offs)) for t in ts])
        assert lo == pytest.approx(v.min(), rel=1e-13) and hi == pytest.approx(v.max(), rel=1e-13)
    [(lo, hi)] = bounds_over(cfg.potential, x, ts, workers=workers)
    v = np.array([total(cfg.potential, x, t) for t in ts])
    assert (lo, hi) == (pytest.approx(v.min(), rel=1e-13), pytest.approx(v.max(), rel=1e-13))


# ---------------------------------------------------------------- hamiltonian (whole run, 2026-11-25)
def test_dvr_kinetic_energy_of_moving_packets_is_the_analytic_second_derivative(inputs_dir):
    """The sinc-DVR T (Colbert & Miller 1992, eq. (A7)) on Gaussian packets with momenta
    k0 = 2 and -1.5: -psi''/2 written out, psi'' = psi ((-(x - x0)/s^2 + i k0)^2 - 1/s^2),
    to 1e-9 of its largest entry -- the dense T, Operator's circulant embedding by FFT and
    BlockOperator's GEMM and FFT paths alike, on two grids one after the other (each cached
    symbol belongs to its own grid).  The packets' spectra end far below pi/dx (their
    tails there are below 1e-12), so the DVR is exact to rounding for them.  A lost sign
    pattern (-1)^(i-j) is the similarity D T D, D = diag((-1)^i): every eigenvalue kept
    (the atom's energies pass), the packet's momentum turned by pi/dx."""
    from tdse import config as cfgmod
    from tdse.model import hamiltonian as h
    from tdse.model.grid import points
    base = cfgmod.load(os.path.join(inputs_dir, "tiny.toml")).with_value("grid.stencil", "dvr")
    for cfg in (base, base.with_value("grid.dx", 0.16)):
        g = cfg.grid
        x = points(g)
        s, x0 = 0.7, 0.3
        cols = []
        for k0 in (2.0, -1.5):
            psi = np.exp(-(x - x0) ** 2 / (2 * s * s) + 1j * k0 * x)
            cols.append((psi, -0.5 * psi * ((-(x - x0) / s ** 2 + 1j * k0) ** 2 - 1 / s ** 2)))
        X = np.stack([c[0] for c in cols], axis=1)
        want = np.stack([c[1] for c in cols], axis=1)
        tol = 1e-9 * np.abs(want).max()
        assert np.abs(h.kinetic_dense(g) @ X - want).max() <= tol
        zero = np.zeros(g.n)
        op = h.Operator(cfg, 1.0, zero)
        assert np.abs(op(X) - want).max() <= tol and np.abs(op(X[:, 0]) - want[:, 0]).max() <= tol
        assert np.abs(h.apply(cfg, X, zero) - want).max() <= tol
        old = h.DVR_GEMM_MIN_B
        try:
            h.DVR_GEMM_MIN_B = 1                          # the block's GEMM path
            block = h.BlockOperator(g, 1.0, np.zeros((g.n, 2)))
            assert block.T is not None and np.abs(block(X) - want).max() <= tol
            h.DVR_GEMM_MIN_B = 10 ** 9                    # the block's FFT path
            block = h.BlockOperator(g, 1.0, np.zeros((g.n, 2)))
            assert block.T is None and np.abs(block(X) - want).max() <= tol
        finally:
            h.DVR_GEMM_MIN_B = old


def test_generator_with_an_absorber_is_its_definition_written_out(inputs_dir):
    """generator_dense and generator_columns with an absorber against the module's
    definition, s (T - i W) + diag(v), written out from the kinetic matrix and the
    absorber's profile (:func:`tdse.model.absorber.absorber_profile`): the sign and the
    factor s of the absorbing term, which the columns-against-dense test cannot see."""
    from tdse import config as cfgmod
    from tdse.model import hamiltonian as h
    cfg = cfgmod.load(os.path.join(inputs_dir, "atom_hhg.toml"))
    assert cfg.absorber is not None
    rng = np.random.default_rng(31)
    v = rng.standard_normal(cfg.grid.n)
    W = absorber_profile(cfg)
    assert W.max() > 0.5
    for s in (1.0, 0.37):
        want = s * h.kinetic_dense(cfg.grid) - 1j * s * np.diag(W) + np.diag(v)
        G = h.generator_dense(cfg, s, v)
        assert np.abs(G - want).max() <= 1e-14 * np.abs(want).max()
        band = h.generator_columns(cfg, s, v, 40, 90)
        assert np.abs(band - want[:, 40:90]).max() <= 1e-14 * np.abs(want).max()


def test_block_measure_energy_of_eigenstates_is_their_eigenvalue(inputs_dir):
    """BlockMeasure's <H> (its kinetic part from BlockOperator's default scaling) of the
    molecular H's eigenstates, each a member of a block, equals the eigenvalues of the
    dense symmetric solver (scipy.linalg.eigh of H written out) to 1e-10, for each
    stencil; no field, so H(t) = H."""
    import dataclasses
    import scipy.linalg
    from tdse import config as cfgmod
    from tdse.model import hamiltonian as h
    from tdse.model.grid import points
    from tdse.model.observables import BlockMeasure
    from tdse.model.potential import soft_core
    for stencil in (3, 5, "dvr"):
        cfg = cfgmod.load(os.path.join(inputs_dir, "tiny.toml")).with_value("grid.stencil", stencil)
        cfg = dataclasses.replace(cfg, potential=dataclasses.replace(
            cfg.potential, centres=tuple(dataclasses.replace(c, amplitude=0.0)
                                          for c in cfg.potential.centres)))
        x = points(cfg.grid)
        H = h.kinetic_dense(cfg.grid) + np.diag(soft_core(cfg.potential, x, 0.0))
        E, vec = scipy.linalg.eigh(H)
        K = cfg.output.populations
        phi = (vec[:, :K] / np.sqrt(cfg.grid.dx)).T                 # sum |phi|^2 dx = 1
        X = np.ascontiguousarray(phi[:3].T, dtype=np.complex128)
        bm = BlockMeasure([cfg] * 3, x, np.broadcast_to(phi[None], (3, K, cfg.grid.n)), X, np)
        rows = bm(0.0, X)
        assert np.abs(np.ravel(rows["energy"]) - E[:3]).max() <= 1e-10 * np.abs(E[:3]).max()
        assert np.abs(np.ravel(rows["norm"]) - 1.0).max() <= 1e-12


@pytest.mark.parametrize("stencil", [3, 5])
def test_host_stencil_operator_equals_its_dense_definition(stencil):
    """Operator on the host for the 3-/5-point stencils (its bands: a vector -- contiguous,
    strided, real -- by BLAS zhbmv, a block by a sparse product) against
    alpha (scale T + diag(v) - shift) X with T the dense stencil matrix written out here."""
    from tdse.model import hamiltonian as h
    cfg = tdse.load_config(os.path.join(os.path.dirname(__file__), "..", "inputs",
                                        "h2plus_moving.toml")).with_value("grid.stencil", stencil)
    g, rng = cfg.grid, np.random.default_rng(31 + stencil)
    n, dx = g.n, g.dx
    c = [-2.0, 1.0] if stencil == 3 else [-5 / 2, 4 / 3, -1 / 12]
    T = -0.5 / dx ** 2 * sum(ck * (np.eye(n, k=k) + (np.eye(n, k=-k) if k else 0))
                             for k, ck in enumerate(c))
    v, scale, alpha, shift = rng.standard_normal(n), 0.7, 1.3, 0.25
    H = alpha * (scale * T + np.diag(v) - shift * np.eye(n))
    op = h.Operator(cfg, scale, v, alpha=alpha, shift=shift)
    Z = rng.standard_normal((n, 3)) + 1j * rng.standard_normal((n, 3))
    for X in (Z[:, 0].copy(), Z[:, 1], Z.real[:, 2].copy(), Z):
        ref = H @ X
        assert np.abs(op(X) - ref).max() <= 1e-13 * np.abs(ref).max(), (X.ndim, X.dtype)
    assert op(Z[:, 0].copy()).flags.writeable          # the recurrence updates it in place


def test_the_hhg_cutoff_is_the_three_step_formula(tmp_path):
    """spectra.cutoff: U_p = E0^2 / (4 omega^2), cutoff I_p + 3.17 U_p, in hartree and in
    orders of omega (atom_hhg: 0.2194 Ha, 1.1955 Ha, order 20.97); from_file adds it for a
    run with a field, I_p = -E_0; the picture marks it (a dashed line at that order)."""
    from tdse.studies import spectra
    from tdse.ui import plots, spectrum_plots
    c = spectra.cutoff(0.5, 0.0534, 0.057)
    assert c["up"] == pytest.approx(0.0534 ** 2 / (4 * 0.057 ** 2), rel=1e-15)
    assert c["cutoff_energy"] == pytest.approx(0.5 + 3.17 * c["up"], rel=1e-15)
    assert c["cutoff_order"] == pytest.approx(c["cutoff_energy"] / 0.057, rel=1e-15)
    assert round(c["cutoff_order"], 2) == 20.97
    t = 0.1 * np.arange(4096)
    res = {**spectra.hhg(t, np.sin(0.057 * 21 * t), 0.057, "hann"), **c, "name": "x"}
    figs = []
    orig = plots.plt.close
    plots.plt.close = lambda fig=None: figs.append(fig)
    try:
        spectrum_plots.plot_spectrum(res, str(tmp_path / "s.png"))
    finally:
        plots.plt.close = orig
    ax = figs[0].axes[0]
    assert any(np.allclose(ln.get_xdata(), c["cutoff_order"]) for ln in ax.get_lines()[1:])
    orig(figs[0])


def test_hull_columns_hold_the_computed_extremes_where_points_tie():
    """extremes.hull_columns against every grid point, computed as the bounds compute them
    (0 + w_0 fl(V0 + fl(E_0 x)) + w_1 fl(V0 + fl(E_1 x))): a well, a repulsive bump (an
    interior maximum: the upper hull) and a straight stretch below the well whose points
    are 1 ulp off its line at random (at E = -its slope they tie within rounding); for
    fields at that slope, near it and at random, and a row of CFM4's weights with a
    negative one, the least and greatest computed values are values at the columns, and
    beyond the stretch the columns are few.  (The reach's margin is not shown necessary
    here: at the ties the least value was also at a hull vertex.)"""
    from tdse.model import extremes
    rng = np.random.default_rng(11)
    x = np.linspace(-30.0, 30.0, 1201)
    v = -2.0 / np.sqrt(x * x + 0.5) + 0.8 * np.exp(-(x + 8.0) ** 2)
    s = slice(700, 1000)                          # x in [5, 20): below the well
    slope = 0.013
    v[s] = -4.0 + slope * x[s]
    v[s] = np.where(rng.random(300) < 0.5, np.nextafter(v[s], np.inf), np.nextafter(v[s], -np.inf))
    v = v.copy()                                  # (a fresh array: the hulls made anew)
    rows = [(0.5, 0.5), ((3 - 2 * np.sqrt(3)) / 12, (3 + 2 * np.sqrt(3)) / 12)]
    E_most = 0.1
    cols = extremes.hull_columns(v, x, E_most, rows)
    assert cols is not None and np.setdiff1d(cols, np.arange(700, 1000)).size < 20
    tried = [(-slope * (1 + k * 1e-16), -slope * (1 + (k + d) * 1e-16)) for k in range(-20, 21)
             for d in (0, 3)] + \
        [tuple(rng.uniform(-E_most, E_most, 2)) for _ in range(300)] + [(0.0, 0.0)]
    for w in rows:
        for E0, E1 in tried:
            f = 0 + w[0] * (v + E0 * x) + w[1] * (v + E1 * x)
            for i in (int(np.argmin(f)), int(np.argmax(f))):
                assert np.isin(f[i], f[cols]), (w, E0, E1, i)
