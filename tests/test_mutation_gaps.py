"""Tests written for the survivors of a mutation run (benchmarks/results/mutation_*.json):
each checks a value against its definition where the suite had only checked it in passing."""
import math
import os

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
    assert info == {"terms": 0, "R": 0.0, "truncation_bound": 0.0}
    A = rng.standard_normal((6, 6))
    A = A + A.T
    lam = np.linalg.eigvalsh(A)
    lo, hi = lam[0] - 0.1, lam[-1] + 0.1
    Y, info = chebyshev.expm_apply(lambda Z: A @ Z, X, 0.4, lo, hi, 1e-12, np)
    assert info["R"] == pytest.approx(0.4 * (hi - lo) / 2, rel=1e-15)
    assert info["terms"] == chebyshev.terms(0.4 * (hi - lo) / 2, 1e-12)
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
