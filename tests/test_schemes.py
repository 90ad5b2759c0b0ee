"""Time schemes (midpoint, cfm4), the Chebyshev exponential, the sinc-DVR, the smooth
drive, and the error estimate made during a run -- each against an independent reference
(SciPy's expm, an eigendecomposition, Bessel functions, the exact -1/2 of the a = 2
soft-core atom, a run at a much smaller dt)."""
from __future__ import annotations

import dataclasses
import math
import os
from pathlib import Path

import numpy as np
import pytest
import scipy.linalg
import scipy.special

from tdse.numerics import chebyshev, schemes
from tdse.model import hamiltonian
from tdse.model import states as model_states
from tdse import config as cfgmod
from tdse.model.grid import points
from tdse.model.potential import centre_positions, envelope, soft_core
from tdse.numerics.precheck import precheck
from tdse.numerics.stepper import Stepper as Propagator
from tdse.model.initial import initial_state
from tdse.run.timeerror import phase_blind_distance
from tdse.run.driver import run
from tdse.run.snapshots import read
from tdse.studies.validate import check_dvr, check_order, check_propagation, make_config


# ------------------------------------------------------------------ schemes
def test_cfm4_coefficients_are_blanes_moan():
    s = schemes.get("cfm4")
    r3 = math.sqrt(3)
    assert s.nodes == pytest.approx((0.5 - r3 / 6, 0.5 + r3 / 6))
    (w1, w2), (w3, w4) = s.factors
    assert (w3, w4) == pytest.approx((0.25 - r3 / 6, 0.25 + r3 / 6))  # acts second
    assert (w1, w2) == (w4, w3)  # the first factor has the weights swapped
    assert s.scales() == pytest.approx((0.5, 0.5)) and s.order == 4
    with pytest.raises(ValueError, match="scheme"):
        schemes.get("rk4")


@pytest.mark.parametrize("scheme", ["midpoint", "cfm4"])
@pytest.mark.parametrize("method", ["auto", "chebyshev"])
def test_static_step_is_the_exact_exponential(scheme, method):
    """A time-independent H: every scheme is exp(-i H dt) exactly (eigendecomposition)."""
    cfg = make_config(n=64, dx=0.2, a=0.5, Z=2.0, amp=0.0, dt=0.05, steps=4, method=method,
                      tol=1e-14, scheme=scheme, stencil="dvr")
    prop = Propagator(cfg, precheck(cfg, check_resolution=False).plan)
    w, V = np.linalg.eigh(hamiltonian.dense(cfg, 0.0))
    ref = (V * np.exp(-1j * 0.05 * w)) @ V.T
    assert np.abs(prop.operator(0) - ref).max() < 1e-12


def test_every_scheme_method_and_stencil_matches_scipy_per_factor():
    for c in check_propagation(steps=30):
        assert c["passed"], c


def test_observed_orders_are_2_and_4():
    for c in check_order():
        assert c["passed"], c
        assert c["errors"][0] > c["errors"][1] > c["errors"][2] > 1e-12  # above the floor


def test_cfm4_beats_midpoint_at_ten_times_the_step():
    """The audit's claim: cfm4 at dt is more accurate than midpoint at dt/10 (N = 64)."""
    from tdse.studies.validate import observed_order
    e_mid, _ = observed_order("midpoint", dts=(0.005,), ref_div=16)
    e_cf, _ = observed_order("cfm4", dts=(0.05,), ref_div=160)
    assert e_cf[0] < e_mid[0]


# ------------------------------------------------------------------ Chebyshev
def test_bessel_j_by_backward_recurrence_against_scipy_and_its_identities():
    """chebyshev.bessel_j (Miller's backward recurrence) against scipy.special.jv (AMOS, an
    independent method) at fresh random R from 1e-12 to 1000 and K from the tolerances
    1e-14 and 1e-8 (and K = R / 2, R + 1): within 4e-14 (jv's own error reached 1.8e-14 of
    mpmath's 30-digit values at R ~ 1000; bessel_j's 5e-16); the identity
    J_0^2 + 2 sum J_k^2 = 1 (DLMF 10.23.3: not the sum the recurrence is normalised by)
    over K = R + 60 terms to 4 eps sqrt(K + 1): rounding in the K recurrence steps adds up as
    a random walk (20000 draws: at most 1.6 eps sqrt(K + 1), 49 eps at R ~ 1000; a fixed 1e-14
    failed once in CI at 50 eps); an element of an array has the bits it has alone; R = 0."""
    rng = np.random.default_rng()
    for R in np.concatenate([10.0 ** rng.uniform(-12, 3, 40), [0.5, 1.0, 399.0]]):
        for K in {chebyshev.terms(R, 1e-14), chebyshev.terms(R, 1e-8), max(1, int(R / 2)), int(R) + 1}:
            J = chebyshev.bessel_j(K, R)
            assert J.shape == (K + 1,)
            assert np.abs(J - scipy.special.jv(np.arange(K + 1), R)).max() <= 4e-14
            many = chebyshev.bessel_j(np.array([K, K + 9, 3]), np.array([R, 1.3 * R, 1e-7]))
            assert many.shape == (K + 10, 3) and np.array_equal(many[:K + 1, 0], J)
        K = int(R) + 60
        J = chebyshev.bessel_j(K, R)
        assert abs(J[0] ** 2 + 2.0 * (J[1:] ** 2).sum() - 1.0) <= 4 * np.finfo(float).eps * math.sqrt(K + 1)
    assert np.array_equal(chebyshev.bessel_j(3, 0.0), [1.0, 0.0, 0.0, 0.0])
    assert np.array_equal(chebyshev.bessel_j(2, np.array([0.0, 1.0]))[:, 0], [1.0, 0.0, 0.0])


def test_chebyshev_tail_bound_is_a_bound_and_tight_enough():
    for R in (0.1, 1.0, 7.5, 60.0, 400.0):
        K = chebyshev.terms(R, 1e-12)
        k = np.arange(K + 1, K + 2000)
        true = 2 * np.abs(scipy.special.jv(k, R)).sum()
        assert true <= chebyshev.tail_bound(R, K) <= 1e-12
        assert chebyshev.tail_bound(R, K - 1) > 1e-12 or K == max(1, math.ceil(R))
        # not wasteful: within 2 % (+1) of the fewest terms whose true tail meets 1e-12
        fewest = next(m for m in range(1, K + 1)
                      if 2 * np.abs(scipy.special.jv(np.arange(m + 1, m + 2000), R)).sum() <= 1e-12)
        assert K <= 1.02 * fewest + 1


def _kapteyn_tail(R, K, n=20000):
    """2 sum_(k>K) of Kapteyn's bound on |J_k(R)| (DLMF 10.14.5, z = R/k <= 1):
    z^k exp(k sqrt(1 - z^2)) / (1 + sqrt(1 - z^2))^k, summed in logs over n terms."""
    k = np.arange(K + 1, K + n, dtype=float)
    z = R / k
    s = np.sqrt(1.0 - z * z)
    return 2.0 * np.exp(k * (np.log(z) + s - np.log1p(s))).sum()


def test_chebyshev_tail_bound_is_the_kapteyn_sum_and_above_the_true_tail():
    """tail_bound(R, K) against the whole Kapteyn sum written out here (NumPy, 20000 terms)
    and the true tail 2 sum |J_k(R)| (SciPy): never below the true tail, and within
    [0.98, 1 + 1.1e-3] of the Kapteyn sum -- above by at most the rest's 1e-3 allowance,
    below by at most 2 % where the power-series rest (DLMF 10.14.4) undercuts Kapteyn's
    (measured 0.984-1.001 over R = 1e-3..2000, K - ceil(R) = 0..300).  The two ends: R = 0
    gives 0, K < R gives inf; _kapteyn itself by value against the same formula."""
    for R in np.geomspace(1e-3, 2000.0, 23):
        for dK in (0, 1, 2, 5, 13, 40, 120, 300):
            K = max(1, math.ceil(R)) + dK
            b, ref = chebyshev.tail_bound(R, K), _kapteyn_tail(R, K)
            if ref < 1e-280:
                assert b <= 1e-270, (R, K, b)
                continue
            true = 2 * np.abs(scipy.special.jv(np.arange(K + 1, K + 3000), R)).sum()
            assert true <= b and 0.98 * ref <= b <= (1 + 1.1e-3) * ref, (R, K, b / ref)
    assert chebyshev.tail_bound(0.0, 5) == 0.0
    assert chebyshev.tail_bound(7.5, 7) == math.inf and chebyshev.tail_bound(7.0, 7) < math.inf
    for k, R in ((3, 0.5), (12, 11.9), (40, 3.0), (500, 480.0)):
        z = R / k
        s = math.sqrt(1 - z * z)
        assert chebyshev._kapteyn(k, R) == pytest.approx(z ** k * math.exp(k * s) / (1 + s) ** k, rel=1e-12)
        assert abs(scipy.special.jv(k, R)) <= chebyshev._kapteyn(k, R)
    assert chebyshev._kapteyn(2000, 1e-3) == 0.0          # below exp(-745): 0, not an underflow


@pytest.mark.parametrize("tau", [0.003, 0.4, 6.0])
def test_chebyshev_matches_expm_for_vectors_and_blocks(rng, tau):
    n = 50
    G = rng.standard_normal((n, n))
    G = G + G.T
    w = np.linalg.eigvalsh(G)
    X = rng.standard_normal((n, 4)) + 1j * rng.standard_normal((n, 4))
    ref = scipy.linalg.expm(-1j * tau * G) @ X
    Y, info = chebyshev.expm_apply(lambda Z: G @ Z, X, tau, w[0] - 0.3, w[-1] + 0.1, 1e-13)
    assert np.abs(Y - ref).max() < 1e-12 * np.abs(ref).max()
    y, _ = chebyshev.expm_apply(lambda Z: G @ Z, X[:, 0], tau, w[0], w[-1], 1e-13)
    assert np.abs(y - ref[:, 0]).max() < 1e-12 * np.abs(ref).max()
    with pytest.raises(ValueError, match="lo <= hi"):
        chebyshev.expm_apply(lambda Z: G @ Z, X, tau, 1.0, 0.0, 1e-13)


def test_operator_mode_with_chebyshev_equals_psi_path(rng):
    cfg = make_config(n=48, dx=0.25, a=0.5, Z=2.0, amp=0.3, dt=0.02, steps=10,
                      method="chebyshev", tol=1e-14, scheme="cfm4")
    prop = Propagator(cfg)
    psi0 = rng.standard_normal(48) + 1j * rng.standard_normal(48)
    psi, U = psi0.copy(), np.eye(48, dtype=complex)
    for j in range(10):
        psi, U = prop.step(psi, j), prop.step_operator(U, j)
    assert np.abs(U @ psi0 - psi).max() < 1e-12 * np.abs(psi).max()
    assert np.abs(U.conj().T @ U - np.eye(48)).max() < 1e-12


# ------------------------------------------------------------------ DVR and bounds
def test_dvr_soft_core_a2_gives_minus_half():
    (c,) = check_dvr()
    assert c["passed"], c


def test_dvr_converges_exponentially_where_fd_does_not():
    """Soft-core H (a = 1): the DVR at dx = 0.2 beats the 5-point stencil at dx = 0.1 by
    a factor 1e6, and each halving of dx takes its error e to below e^1.5 (faster than
    any power of dx)."""
    def E0(stencil, dx):
        cfg = make_config(n=int(round(40 / dx)), dx=dx, stencil=stencil, a=1.0, Z=1.0, amp=0.0)
        return model_states.eigenstates(cfg, 0.0, 1)[0][0]
    ref = E0("dvr", 0.1)
    e = [abs(E0("dvr", dx) - ref) for dx in (0.8, 0.4, 0.2)]
    assert e[2] < 1e-6 * abs(E0(5, 0.1) - ref)
    assert e[1] < e[0] ** 1.5 and e[2] < e[1] ** 1.5  # faster than any power of dx


@pytest.mark.parametrize("stencil", [3, 5, "dvr"])
def test_apply_matches_dense_for_vectors_and_blocks(rng, stencil):
    cfg = make_config(n=40, dx=0.2, stencil=stencil)
    v = soft_core(cfg.potential, points(cfg.grid), 0.3)
    G = hamiltonian.generator_dense(cfg, 0.5, v)
    X = rng.standard_normal((40, 3)) + 1j * rng.standard_normal((40, 3))
    scale = np.abs(G).max() * np.abs(X).max()
    assert np.abs(hamiltonian.apply(cfg, X, v, np, 0.5) - G @ X).max() < 1e-12 * scale
    assert np.abs(hamiltonian.apply(cfg, X[:, 1], v, np, 0.5) - G @ X[:, 1]).max() < 1e-12 * scale


@pytest.mark.parametrize("n", [8, 9, 64, 501])
@pytest.mark.parametrize("stencil", [3, 5, "dvr"])
def test_centrosymmetric_halves_equal_the_dense_kinetic_product(rng, n, stencil):
    """kinetic_halves + centro_matmul (T X by two half-size products: the CPU scan's DVR
    kinetic energy) against T @ X written out, even and odd N, a block and a strided view
    of one; the halves' sizes; any random symmetric Toeplitz matrix (N down to 1, the
    grid's smallest being 8), and one that is not centrosymmetric fails the identity (it is
    T = J T J that it uses)."""
    cfg = make_config(n=n, dx=0.3, stencil=stencil)
    T = hamiltonian.kinetic_dense(cfg.grid)
    P, Q = hamiltonian.kinetic_halves(cfg.grid)
    assert P.shape == ((n + 1) // 2,) * 2 and Q.shape == (n // 2,) * 2
    X = rng.standard_normal((n, 6))
    for block in (X, X[:, ::2], np.asfortranarray(X), X[:, 0:1]):
        for alpha in (1.0, -0.37):      # alpha T X: the scale taken by BLAS (dgemm's alpha)
            want = alpha * (T @ block)
            got = hamiltonian.centro_matmul(P, Q, block, alpha=alpha)
            assert got.shape == want.shape
            assert np.abs(got - want).max() <= 1e-14 * np.abs(T).max() * np.abs(block).sum(axis=0).max()
    X32 = X.astype(np.float32)          # the product's generic path (not dgemm): float32 kept
    for alpha in (-0.37, 2.0):
        got = hamiltonian.centro_matmul(P.astype(np.float32), Q.astype(np.float32), X32, alpha=alpha)
        assert got.dtype == np.float32
        assert np.abs(got - alpha * (T @ X)).max() <= 1e-5 * np.abs(T).max() * np.abs(X).sum(axis=0).max()
    for k in sorted({1, 2, 3, n}):      # any symmetric Toeplitz matrix is centrosymmetric
        R, Xk = scipy.linalg.toeplitz(rng.standard_normal(k)), X[:k]
        assert np.abs(hamiltonian.centro_matmul(*hamiltonian.centro_halves(R), Xk) - R @ Xk).max() \
            <= 1e-14 * np.abs(R).max() * np.abs(Xk).sum(axis=0).max()
        if k >= 2:                      # one that is not (R != J R J) fails the identity
            R[0, 1] += 1.0
            assert np.abs(hamiltonian.centro_matmul(*hamiltonian.centro_halves(R), Xk) - R @ Xk).max() > 1e-3


@pytest.mark.parametrize("n", [8, 9, 64, 501])
@pytest.mark.parametrize("cols", [1, 3])
def test_folded_block_operator_is_the_block_operator_in_the_folded_basis(rng, n, cols, monkeypatch):
    """FoldedBlockOperator (the CPU scan's sinc-DVR Chebyshev operator, T block diagonal in
    the folded basis) against alpha (s T X + (V - shift) X) written out densely, each column
    its own V, even and odd N: back(into(X)) = X; back(op(into X)); one recurrence term
    (Z = op X - P into P's buffer, Y += a Z); and a whole exponential through expm_apply
    against BlockOperator's series and scipy's expm of each member's generator."""
    cfg = make_config(n=n, dx=0.3, stencil="dvr")
    g = cfg.grid
    T = hamiltonian.kinetic_dense(g)
    V = 3.0 * rng.standard_normal((n, cols))
    X = rng.standard_normal((n, cols)) + 1j * rng.standard_normal((n, cols))
    P = rng.standard_normal((n, cols)) + 1j * rng.standard_normal((n, cols))
    alpha, s, shift, a = 0.37, 0.5, 0.9, 0.2 - 0.7j
    monkeypatch.setattr(hamiltonian, "DVR_GEMM_MIN_B", 1)     # (the GEMM from any width)
    op = hamiltonian.block_operator(g, s, V, np, alpha, shift)
    assert isinstance(op, hamiltonian.FoldedBlockOperator)
    assert np.abs(op.back(op.into(X)) - X).max() <= 1e-15 * np.abs(X).max()
    want = alpha * (s * T @ X + (V - shift) * X)
    scale = np.abs(want).max()
    assert np.abs(op.back(op(op.into(X))) - want).max() <= 1e-13 * scale
    Y0 = rng.standard_normal((n, cols)) + 1j * rng.standard_normal((n, cols))
    Yf, Pf = op.into(Y0), op.into(P)
    Z = op.recur(op.into(X), Pf, Yf, a)
    assert Z is Pf                                   # the term lands in P's buffer
    assert np.abs(op.back(Z) - (want - P)).max() <= 1e-13 * scale
    assert np.abs(op.back(Yf) - (Y0 + a * (want - P))).max() <= 1e-13 * scale
    bound = np.abs(V).max()
    lo, hi = -bound, s * hamiltonian.kinetic_max("dvr", g.dx) + bound
    got, info = chebyshev.expm_apply(None, X, 0.2, lo, hi, 1e-12, np,
                                     scaled=lambda al, sh: hamiltonian.block_operator(g, s, V, np, al, sh))
    plain, _ = chebyshev.expm_apply(None, X, 0.2, lo, hi, 1e-12, np,
                                    scaled=lambda al, sh: hamiltonian.BlockOperator(g, s, V, np, al, sh))
    exact = np.stack([scipy.linalg.expm(-0.2j * (s * T + np.diag(V[:, b]))) @ X[:, b]
                      for b in range(cols)], axis=1)
    assert info["terms"] > 5
    assert np.abs(got - plain).max() <= 1e-13 * np.abs(X).max()
    assert np.abs(got - exact).max() <= 1e-11 * np.abs(X).max()
    # where it does not apply, the factory gives BlockOperator
    assert type(hamiltonian.block_operator(make_config(n=n, dx=0.3, stencil=5).grid, s, V)) \
        is hamiltonian.BlockOperator


@pytest.mark.parametrize("stencil", [3, 5, "dvr"])
@pytest.mark.parametrize("scale", [1.0, 0.5])
def test_spectrum_bounds_contain_the_spectrum_and_are_tight(stencil, scale):
    cfg = make_config(n=200, stencil=stencil)
    v = soft_core(cfg.potential, points(cfg.grid), 0.0)
    w = np.linalg.eigvalsh(hamiltonian.generator_dense(cfg, scale, v))
    lo, hi = hamiltonian.spectrum_bounds(stencil, cfg.grid.dx, v.min(), v.max(), scale)
    assert lo <= w[0] and w[-1] <= hi
    assert (hi - lo) < 1.2 * (w[-1] - w[0])


# ------------------------------------------------------------------ the smooth drive
def test_ramp_starts_at_rest_and_joins_the_drive():
    s = lambda t: envelope(2.0, t)  # noqa: E731
    assert s(0.0) == 0.0 and s(2.0) == 1.0 and s(5.0) == 1.0 and envelope(0.0, 0.3) == 1.0
    h = 1e-6
    assert abs((s(h) - s(0.0)) / h) < 1e-5  # zero slope at t = 0
    assert abs((s(2.0) - s(2.0 - h)) / h) < 1e-5  # and where it joins s = 1
    text = Path(os.path.join(os.path.dirname(__file__), "..", "inputs", "h2plus_moving_ramped.toml")).read_text()
    cfg = cfgmod.loads(text)
    X = centre_positions(cfg.potential, np.array([0.0, 1e-6]))
    assert np.all(np.abs(X[:, 1] - X[:, 0]) / 1e-6 < 1e-4)  # the centres start at rest
    abrupt = cfgmod.loads(text.replace("ramp = 2.0", "ramp = 0.0"))
    Xa = centre_positions(abrupt.potential, np.array([0.0, 1e-6]))
    assert np.allclose((Xa[:, 1] - Xa[:, 0]) / 1e-6, 1.5, rtol=1e-4)  # alpha beta


def test_notes_name_the_abrupt_start_only_when_there_is_one(inputs_dir):
    pc = precheck(cfgmod.load(os.path.join(inputs_dir, "h2plus_moving.toml")))
    assert any("abruptly" in n and "1.5" in n for n in pc.notes)
    pc = precheck(cfgmod.load(os.path.join(inputs_dir, "h2plus_moving_ramped.toml")))
    assert not pc.notes


# ------------------------------------------------------------------ config keys
@pytest.mark.parametrize("edit, key, words", [
    (("stencil = 3", 'stencil = "dvr2"'), "grid.stencil", "dvr"),
    (("stencil = 3", "stencil = true"), "grid.stencil", "3 or 5"),
    (('method = "auto"', 'method = "lanczos"'), "propagator.method", "chebyshev"),
    (('method = "auto"', 'method = "auto"\nscheme = "rk4"'), "propagator.scheme", "cfm4"),
    (('method = "auto"', 'method = "auto"\nerror_window = 0.0013'), "propagator.error_window", "whole"),
    (('method = "auto"', 'method = "auto"\nerror_window = 5.0'), "propagator.error_window", "t_end"),
    (("every = 20", "every = 20\nobservables_every = 0"), "output.observables_every", ">= 1"),
    (("frequency = 3.0", "frequency = 3.0\nramp = -1.0"), "potential.centres[0].ramp", ">= 0"),
])
def test_new_keys_are_validated(inputs_dir, edit, key, words):
    text = Path(os.path.join(inputs_dir, "tiny.toml")).read_text()
    assert edit[0] in text
    with pytest.raises(cfgmod.ConfigError) as e:
        cfgmod.loads(text.replace(edit[0], edit[1], 1))
    assert e.value.key == key and words in str(e.value)


def test_scheme_and_window_defaults(inputs_dir):
    tiny = cfgmod.load(os.path.join(inputs_dir, "tiny.toml"))
    assert tiny.propagator.scheme == "cfm4" and tiny.propagator.time_error == "estimate"   # #56 item 3
    assert tiny.propagator.error_window == 0
    window = tiny.with_value("propagator.time_error", "window")
    assert window.propagator.error_window == 20  # 200 steps / 10
    static = cfgmod.load(os.path.join(inputs_dir, "h2plus_static.toml"))
    assert static.propagator.scheme == "midpoint" and static.propagator.error_window == 0
    assert static.propagator.time_error == "none"
    fig6 = cfgmod.load(os.path.join(inputs_dir, "thesis_fig6.toml"))
    assert (fig6.grid.stencil, fig6.grid.dx, fig6.propagator.scheme, fig6.propagator.method,
            fig6.propagator.terms, fig6.time.dt) == (3, 0.1, "midpoint", "taylor", 10, 0.002)


# ------------------------------------------------------------------ in-run error estimate
def test_time_error_estimate_tracks_the_true_error(tmp_path, inputs_dir):
    """The step-doubling estimate at the window's end against the error measured with a
    run at dt/16 (same grid): within a factor 2 either way."""
    cfg = cfgmod.load(os.path.join(inputs_dir, "tiny.toml"))
    cfg = dataclasses.replace(cfg, time=dataclasses.replace(cfg.time, dt=0.05),
                              propagator=dataclasses.replace(cfg.propagator, error_window=20,
                                                             time_error="window"))
    res = run(cfg, tmp_path, backend="numpy")
    est = res.time_error
    assert est["window_steps"] == 20 and est["order"] == 4
    ref_cfg = dataclasses.replace(cfg, time=dataclasses.replace(cfg.time, dt=0.05 / 16),
                                  propagator=dataclasses.replace(cfg.propagator, error_window=0,
                                                                 method="chebyshev", tolerance=1e-14))
    d = read(res.path)
    _, phi = model_states.eigenstates(cfg, 0.0, 1)
    psi = initial_state(ref_cfg, points(cfg.grid), phi)
    prop = Propagator(ref_cfg)
    for j in range(16 * 20):
        psi = prop.step(psi, j)
    got = d["snapshots/psi"][list(d["snapshots/step"]).index(20)]
    true = phase_blind_distance(got, psi, cfg.grid.dx)
    assert 0.5 < est["error_at_window"] / true < 2.0, (est, true)
    assert d["attrs"]["time_error"]  # stored in the file


def test_run_records_observables_every_step_and_the_numerics(tmp_path, inputs_dir):
    cfg = cfgmod.load(os.path.join(inputs_dir, "tiny.toml"))
    d = read(run(cfg, tmp_path, backend="numpy").path)
    assert d["observables/t"].size == cfg.time.steps + 1
    assert d["snapshots/t"].size == cfg.time.steps // cfg.output.every + 1
    P = d["observables/populations_ht"]
    assert np.allclose(d["observables/n_mean"], P @ np.arange(P.shape[1]))
    assert d["observables/n_mean"][0] == pytest.approx(0.0, abs=1e-12)  # the ground state
    assert np.allclose(d["observables/norm"], 1, atol=1e-12)
    a = d["attrs"]
    assert (a["scheme"], a["stencil"], a["steps"]) == ("cfm4", "3", 200)
    assert a["method"] in ("dense", "chebyshev") and a["method"] in a["method_choice"]  # auto, resolved
    assert "not the solution" in a["bounds_meaning"]


def test_n_mean_of_eigenstate_n_is_n():
    from tdse.model.observables import n_mean
    for k in range(4):
        P = np.zeros(4)
        P[k] = 1.0
        assert n_mean(P) == k


def test_resolution_warning_names_a_dx_that_passes(inputs_dir):
    pc = precheck(cfgmod.load(os.path.join(inputs_dir, "thesis_fig6.toml")))
    (w,) = [w for w in pc.warnings if "under-resolves" in w]
    assert "0.177 Ha" in w and "dx <= 0.0075" in w
    r = pc.resolution
    assert r["E0_error"] == pytest.approx(0.1765, abs=1e-3)
    # the named dx passes: the 3-point error there is within the tolerance
    fine = make_config(n=int(round(25.6 / 0.00625)), dx=0.00625, stencil=3, amp=0.0)
    coarse = make_config(n=256, dx=0.1, stencil=3, amp=0.0)
    e_fine = abs(model_states.eigenstates(fine, 0.0, 1)[0][0] - r["E0_reference"])
    assert e_fine < 1e-3 < abs(model_states.eigenstates(coarse, 0.0, 1)[0][0] - r["E0_reference"])
    assert not precheck(cfgmod.load(os.path.join(inputs_dir, "h2plus_moving.toml"))).warnings


def test_the_resolution_check_solves_on_one_blas_thread(inputs_dir, monkeypatch):
    """The precheck's resolution check (dense solves of N <= RESOLUTION_MAX_N) holds the
    host's BLAS to states.EIGEN_BLAS_THREADS: beside a busy core (a run's look-ahead
    process starting) two BLAS threads had waited on each other (167 ms for a 3-19 ms check)."""
    from threadpoolctl import threadpool_info

    import tdse.numerics.precheck as pcmod
    seen, real = [], model_states.eigenstates

    def spy(*a, **k):
        seen.append([i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"])
        return real(*a, **k)
    monkeypatch.setattr(pcmod.states, "eigenstates", spy)
    cfg = cfgmod.load(os.path.join(inputs_dir, "h2plus_moving.toml")).with_value("grid.stencil", 3)
    r = pcmod.resolution(cfg)
    assert r["E0_error"] > 0 and len(seen) == 2          # E0 and its DVR reference
    assert all(t == [model_states.EIGEN_BLAS_THREADS] * len(t) for t in seen), seen


def test_chebyshev_operator_mode_in_column_bands_equals_one_device(rng):
    """U(t) by the Chebyshev block split over 3 virtual devices (each its columns) equals
    the one-device result."""
    cfg = make_config(n=48, dx=0.25, a=0.5, Z=2.0, amp=0.3, dt=0.02, steps=6,
                      method="chebyshev", tol=1e-14, scheme="cfm4", stencil="dvr")
    one, three = Propagator(cfg), Propagator(cfg, gemm_opts={"devices": 3})
    U1, U3 = np.eye(48, dtype=complex), np.eye(48, dtype=complex)
    for j in range(6):
        U1, U3 = one.step_operator(U1, j), three.step_operator(U3, j)
    assert hasattr(U3, "bands") and len(U3.bands) == 3
    assert np.abs(U3.to_array() - U1).max() < 1e-14


def test_terms_near_equals_terms_from_any_guess():
    """chebyshev.terms_near (the graph step's warm-started K) is terms() for any guess:
    random R over the ranges runs meet and guesses far below, near and above the answer."""
    from tdse.numerics import chebyshev
    rng = np.random.default_rng(5)
    for R in np.concatenate([rng.uniform(0, 3, 40), rng.uniform(3, 300, 40), [0.0, 1.0, 2.5]]):
        for tol in (1e-6, 1e-12, 1e-14):
            K = chebyshev.terms(R, tol)
            for guess in (0, 1, K - 3, K - 1, K, K + 1, K + 5, 3 * K + 20):
                assert chebyshev.terms_near(R, tol, guess) == K, (R, tol, guess)


@pytest.mark.parametrize("stencil", [3, "dvr"])
def test_populations_every_leaves_nan_between_and_the_same_numbers_on_its_rows(stencil, inputs_dir):
    """output.populations_every = 5 (observables every step, moving centres): the rows at
    multiples of 5, step 0 and the last hold the populations in H(t)'s eigenstates (and
    <n>, E_n(t)) equal to the every-step run's: the DVR's (each call from scratch at this
    N) to 1e-12; the 3-point pairs come by windows of 16 populations intervals
    (tracker.Tracker.window), so two cadences' calls start from different anchors -- the
    same to the residual bound (test_physics): populations to 1e-10, the near-degenerate
    lowest pair's sum and the others to 1e-12, E_n(t) to 1e-9, <n> to 1e-10; the rows
    between are NaN there; every other observable is in every row and equal to the
    every-step run's."""
    from tdse.api import simulate
    cfg = cfgmod.load(os.path.join(inputs_dir, "h2plus_moving.toml")).with_value(
        "grid.stencil", stencil).with_value("time.t_end", 0.46).with_value(
        "propagator.time_error", "none")                  # 23 steps: the last is not a multiple
    every = simulate(cfg, backend="numpy").observables
    some = simulate(cfg.with_value("output.populations_every", 5), backend="numpy").observables
    step = np.asarray(some["step"])
    due = (step % 5 == 0) | (step == cfg.time.steps)
    assert step[-1] == 23 and due.sum() == 6 and not due.all()
    tol = {"populations_ht": 1e-10, "energies_ht": 1e-9, "n_mean": 1e-10} if stencil == 3 else {}
    for k in ("populations_ht", "energies_ht", "n_mean"):
        a, b = np.asarray(some[k]), np.asarray(every[k])
        assert np.isnan(a[~due]).all(), k
        assert np.abs(a[due] - b[due]).max() <= tol.get(k, 1e-12) * max(1.0, np.abs(b).max()), k
    if stencil == 3:
        a, b = np.asarray(some["populations_ht"])[due], np.asarray(every["populations_ht"])[due]
        assert np.abs(a[:, :2].sum(axis=1) - b[:, :2].sum(axis=1)).max() <= 1e-12
        assert np.abs(a[:, 2:] - b[:, 2:]).max() <= 1e-12
    for k in ("norm", "energy", "x_mean", "acceleration", "populations_h0"):
        assert np.abs(np.asarray(some[k]) - np.asarray(every[k])).max() <= 1e-12 * max(
            1.0, np.abs(np.asarray(every[k])).max()), k


def test_populations_every_must_be_a_multiple_of_observables_every(inputs_dir):
    base = cfgmod.load(os.path.join(inputs_dir, "h2plus_moving.toml"))
    c = base.with_value("output.observables_every", 2).with_value("output.populations_every", 6)
    assert c.output.populations_interval == 6
    assert cfgmod.loads(cfgmod.to_toml(c)).output.populations_every == 6   # round trip
    assert base.output.populations_interval == base.output.observables_every
    with pytest.raises(cfgmod.ConfigError, match="output.populations_every.*multiple"):
        base.with_value("output.observables_every", 2).with_value("output.populations_every", 5)


def test_the_closing_note_names_a_populations_every_that_would_do():
    """eigenpairs_note: silent under the share; above it, a cadence (a multiple of
    observables_every) at which the calls would cost about half the share of the rest."""
    from tdse.run.driver import EIGENPAIRS_SHARE, eigenpairs_note
    cfg = make_config(n=64, dx=0.2, stencil=3, amp=0.0)
    assert eigenpairs_note(cfg, 0.1, 100, 10.0, 100) == ()
    (note,) = eigenpairs_note(cfg, 9.0, 100, 10.0, 100)   # 90 ms a call, 10 ms a step besides
    every = int(note.split("populations_every = ")[1].split()[0])
    assert every == math.ceil(0.09 * 100 / (0.5 * EIGENPAIRS_SHARE * 1.0))
    cost = 0.09 * 100 / every                             # the calls at that cadence
    assert cost <= 0.5 * EIGENPAIRS_SHARE * 1.0 * (1 + 1e-12)
    c2 = cfg.with_value("output.observables_every", 4)
    (note,) = eigenpairs_note(c2, 9.0, 25, 10.0, 100)
    assert int(note.split("populations_every = ")[1].split()[0]) % 4 == 0
