"""mgemm.expm against SciPy and an eigendecomposition (independent references).

Tolerances: complex128 / float64 results of the default (unit-roundoff) plan are held to
1e-12 relative (a few hundred u: rounding of ~10-20 products of norm <= e^2, see
mgemm.plan._MAX_SCALED_NORM); complex64 to 1e-4 (float32 u = 6e-8 times the same factor).
"""
import numpy as np
import pytest
import scipy.linalg

import mgemm
from mgemm.dist import _gemm_local

TOL = {np.complex128: 1e-12, np.float64: 1e-12, np.complex64: 1e-4, np.float32: 1e-4}


def rel(a, b):
    return np.linalg.norm(a - b) / np.linalg.norm(b)


def herm(rng, n):
    X = rng.standard_normal((n, n)) + 1j * rng.standard_normal((n, n))
    return (X + X.conj().T) / 2


@pytest.mark.parametrize("n", [1, 2, 7, 33, 100])
@pytest.mark.parametrize("scale", [1e-3, 0.5, 4.0, 30.0])
@pytest.mark.parametrize("kind", ["complex", "real", "imaginary", "skew_hermitian"])
def test_auto_matches_scipy(rng, n, scale, kind):
    if kind == "complex":
        A = rng.standard_normal((n, n)) + 1j * rng.standard_normal((n, n))
    elif kind == "real":
        A = rng.standard_normal((n, n))
    elif kind == "imaginary":
        A = 1j * rng.standard_normal((n, n))
    else:
        A = -1j * herm(rng, n).real  # -i * real symmetric
        A = A if n > 1 else 1j * np.ones((1, 1))
    A = A * scale / max(np.abs(A).sum(axis=0).max(), 1e-300)
    U = mgemm.expm(A)
    ref = scipy.linalg.expm(A)
    assert rel(U, ref) <= TOL[A.dtype.type] * max(1.0, np.linalg.cond(ref) ** 0.5)


@pytest.mark.parametrize("dtype", [np.complex128, np.complex64])
@pytest.mark.parametrize("method", ["auto", "taylor"])
@pytest.mark.parametrize("split", [True, False])
def test_unitary_against_eigendecomposition(rng, dtype, method, split):
    n = 64
    H = herm(rng, n).real
    dt = 0.3 / np.abs(H).sum(axis=0).max()
    A = (-1j * dt * H).astype(dtype)
    w, V = np.linalg.eigh(H)
    ref = (V * np.exp(-1j * dt * w)) @ V.T
    U, plan = mgemm.expm(A, method=method, split=split, return_plan=True)
    assert plan.path == ("split" if split else "complex")
    tol = TOL[dtype] if method == "auto" else plan.truncation_bound + 20 * n * np.finfo(dtype).eps
    assert rel(U, ref) <= tol
    eye = np.eye(n)
    assert np.abs(U.conj().T @ U - eye).max() <= 50 * n * np.finfo(dtype).eps


def test_taylor_error_follows_its_bound(rng):
    # truncation dominates for large theta: measured error sits below, and near, R_K(theta)
    # a 1D Laplacian with a random diagonal: ||H||_2 is close to ||H||_1, so the 1-norm
    # bound is nearly attained
    n = 40
    H = 2 * np.eye(n) - np.eye(n, k=1) - np.eye(n, k=-1) + np.diag(0.1 * rng.random(n))
    for theta in (0.5, 1.0, 2.0):
        A = -1j * theta * H / np.abs(H).sum(axis=0).max()
        U, plan = mgemm.expm(A, method="taylor", terms=8, return_plan=True)
        err = np.linalg.norm(U - scipy.linalg.expm(A), 2)
        assert err <= plan.truncation_bound
        assert err >= 1e-2 * plan.truncation_bound  # the bound is not vacuous


def test_shift_is_exact(rng):
    n = 30
    H = herm(rng, n).real + 50 * np.eye(n)
    A = -0.01j * H
    mu = -0.01j * 50
    U1, p1 = mgemm.expm(A, return_plan=True)
    U2, p2 = mgemm.expm(A, shift=mu, return_plan=True)
    assert p2.theta < p1.theta
    ref = scipy.linalg.expm(A)
    assert rel(U1, ref) < 1e-12 and rel(U2, ref) < 1e-12


@pytest.mark.parametrize("complex_method", ["native", "4m", "3m"])
def test_complex_methods_agree(rng, complex_method):
    A = (rng.standard_normal((20, 20)) + 1j * rng.standard_normal((20, 20))) * 0.2
    U = mgemm.expm(A, complex_method=complex_method)
    assert rel(U, scipy.linalg.expm(A)) < 1e-12


def test_fixed_plan_reused(rng):
    H = herm(rng, 16).real
    A = -0.05j * H
    _, plan = mgemm.expm(A, return_plan=True)
    U = mgemm.expm(A, plan=plan)
    assert rel(U, scipy.linalg.expm(A)) < 1e-12


@pytest.mark.parametrize("bad,exc", [
    (np.ones((3, 4)), ValueError), (np.ones(3), ValueError),
    (np.ones((3, 3), dtype=int), TypeError),
])
def test_bad_input(bad, exc):
    with pytest.raises(exc):
        mgemm.expm(bad)


def test_bad_input_messages_name_the_value():
    with pytest.raises(ValueError, match=r"square matrix, but has shape A.shape=\(3, 4\)"):
        mgemm.expm(np.ones((3, 4)))
    with pytest.raises(ValueError, match=r"square matrix, but has shape A.shape=\(3,\)"):
        mgemm.expm(np.ones(3))
    with pytest.raises(TypeError, match=r"float or complex, but has A.dtype=int64"):
        mgemm.expm(np.ones((3, 3), dtype=np.int64))


def test_defaults_and_given_flags_reach_the_plan(rng):
    """``terms`` defaults to 10 for taylor; a given ``unitary`` is used, not detected."""
    S = rng.standard_normal((12, 12))
    A = -0.01j * (S + S.T)          # skew-Hermitian: detected as unitary when not told
    assert mgemm.expm(A, method="taylor", return_plan=True)[1].degree == 10
    assert mgemm.expm(A, return_plan=True)[1].unitary
    U, plan = mgemm.expm(A, unitary=False, return_plan=True)
    assert not plan.unitary and rel(U, scipy.linalg.expm(A)) < 1e-12


def test_default_layout_is_bands_only_for_several_gpus():
    from mgemm.expm import default_layout
    assert default_layout(True, [0, 1]) == "bands"
    assert default_layout(True, (0, 1, 2)) == "bands"
    assert default_layout(True, [3]) == "gemm"
    assert default_layout(True, None) == "gemm"
    assert default_layout(True, 2) == "gemm"          # an int: virtual devices of gemm
    assert default_layout(False, [0, 1]) == "gemm"    # host arrays
    assert default_layout(False, None) == "gemm"


@pytest.mark.parametrize("devices,bands", [(None, 1), (2, 2), (3, 3), ([5, 7], 2)])
def test_band_layout_has_the_devices_asked_for(rng, devices, bands):
    """layout='bands' on the host: ``devices`` virtual devices (an int, or one per listed
    id), one when not given; the result equal to SciPy's either way."""
    n = 23
    A = 0.2 * (rng.standard_normal((n, n)) + 1j * rng.standard_normal((n, n)))
    kw = {} if devices is None else {"devices": devices}
    U = mgemm.expm(A, layout="bands", output="banded", **kw)
    assert len(U.bands) == bands and len(U.layout.devices) == bands and not U.layout.gpu
    assert rel(U.to_array(), scipy.linalg.expm(A)) < 1e-12


@pytest.mark.parametrize("banded_input", [False, True])
def test_a_given_layout_is_the_one_used(rng, banded_input):
    """expm(A, layout=L) works in L itself (its left-operand mode: 'replica' gathers,
    counted on L), not in a new layout of the same devices."""
    from mgemm.dist import Layout
    n = 30
    S = rng.standard_normal((n, n))
    A = -2j * (S + S.T) / np.abs(S + S.T).sum(axis=0).max()
    lay = Layout(n, 3, left="replica")
    if banded_input:
        U = mgemm.expm(lay.scatter(A), output="array")
    else:
        U = mgemm.expm(A, layout=lay)
    assert lay.gathers > 0
    assert rel(U, scipy.linalg.expm(A)) < 1e-12


def test_gemm_options_reach_every_product(rng, monkeypatch):
    """The default layout on the host is 'gemm' even with a devices list, and every
    product gets the caller's gemm options (``devices``, ``tile``)."""
    import sys
    mexpm = sys.modules["mgemm.expm"]     # (mgemm.expm the name is the function)
    calls = []

    def recorder(X, Y, C=None, alpha=1.0, beta=0.0, **kw):
        calls.append(kw)
        return _gemm_local(np, X, Y, C, alpha, beta)

    monkeypatch.setattr(mexpm, "gemm", recorder)
    n = 20
    A = 0.5 * (rng.standard_normal((n, n)) + 1j * rng.standard_normal((n, n)))
    U, plan = mgemm.expm(A, devices=[0, 1], tile=8, return_plan=True)
    assert rel(U, scipy.linalg.expm(A)) < 1e-12
    assert len(calls) == plan.products > 0
    assert all(kw == {"devices": [0, 1], "tile": 8} for kw in calls)


def test_plan_for_reads_theta_dtype_and_terms_from_a(rng):
    """theta is the 1-norm (largest column sum, not row sum) of A - mu I, of B = Im A on the
    split path; the tolerance is the unit roundoff of A's own dtype; ``terms`` (default 10)
    is the Taylor degree; an empty A has theta 0."""
    from mgemm.arrays import unit_roundoff
    A = np.zeros((6, 6), dtype=complex)
    A[:, 2] = 0.3 + 0.4j                   # one heavy column: 1-norm 3, inf-norm 0.5
    A[0, 0] = 0.1j
    plan, M = mgemm.expm_plan_for(A)
    assert plan.path == "complex" and plan.theta == pytest.approx(6 * 0.5)
    assert plan.tolerance == unit_roundoff(np.complex128)
    S = rng.standard_normal((6, 6))
    plan = mgemm.expm_plan_for(1j * S)[0]
    assert plan.path == "split" and plan.theta == pytest.approx(np.abs(S).sum(axis=0).max())
    plan = mgemm.expm_plan_for((0.01j * S).astype(np.complex64))[0]
    assert plan.tolerance == unit_roundoff(np.complex64) == 2.0 ** -24
    assert mgemm.expm_plan_for(0.01 * A, method="taylor")[0].degree == 10
    assert mgemm.expm_plan_for(0.01 * A, method="taylor", terms=18)[0].degree == 18
    plan = mgemm.expm_plan_for(np.zeros((0, 0), dtype=complex))[0]
    assert plan.theta == 0.0
    for dtype in (np.complex128, np.float64):   # as scipy.linalg.expm: an empty result
        U = mgemm.expm(np.zeros((0, 0), dtype=dtype))
        assert U.shape == (0, 0) and U.dtype == dtype


@pytest.mark.parametrize("scale", [1e-3, 1.0, 1e4])
def test_skew_hermitian_detection_is_64_unit_roundoffs_of_max_abs(rng, scale):
    """unitary is detected when max|A + A^H| <= 64 u max|A| (rounding of a skew-Hermitian
    A built in floating point), at any scale; a zero matrix is skew-Hermitian; a banded A
    is never taken as unitary unless told."""
    from mgemm.dist import Layout
    from mgemm.expm import _is_skew_hermitian
    u = 2.0 ** -53
    n = 5
    X = rng.standard_normal((n, n)) + 1j * rng.standard_normal((n, n))
    K = (X - X.conj().T) / 2
    K *= 0.5 / np.abs(K).max()
    K[0, 1], K[1, 0] = 1.0, -1.0          # max|K| = 1 exactly, K exactly skew-Hermitian
    K = scale * K
    assert np.abs(K + K.conj().T).max() == 0.0

    def off_by(r):                        # max|A + A^H| = r u max|A| (a real diagonal r/2 ...)
        A = K.copy()
        A[1, 1] += r / 2 * u * scale
        return A

    assert _is_skew_hermitian(np, off_by(63.5), u)
    assert not _is_skew_hermitian(np, off_by(64.5), u)
    if scale == 1.0:                      # the bound itself (exact in binary): still unitary
        assert np.abs(off_by(64)).max() == 1.0
        assert np.abs(off_by(64) + off_by(64).conj().T).max() == 64 * u
        assert _is_skew_hermitian(np, off_by(64), u)
    assert not _is_skew_hermitian(np, off_by(1e6), u)
    assert _is_skew_hermitian(np, np.zeros((3, 3), dtype=complex), u)
    assert _is_skew_hermitian(np, np.zeros((0, 0), dtype=complex), u)
    assert mgemm.expm_plan_for(off_by(63.5))[0].unitary
    assert not mgemm.expm_plan_for(off_by(64.5))[0].unitary
    Kb = Layout(n, 2).scatter(K)
    assert not _is_skew_hermitian(np, Kb, u)
    assert not mgemm.expm_plan_for(Kb)[0].unitary


def test_complex_assembles_in_the_inputs_precision(rng):
    from mgemm.expm import _complex
    for real, cplx in ((np.float32, np.complex64), (np.float64, np.complex128)):
        c = rng.standard_normal((4, 3)).astype(real)
        s = rng.standard_normal((4, 3)).astype(real)
        z = _complex(c, s)
        assert z.dtype == cplx and np.array_equal(z, c + 1j * s.astype(cplx))


@pytest.mark.parametrize("split", [False, True])
@pytest.mark.parametrize("K", [1, 3, 6])
def test_taylor_is_the_truncated_series_by_value(rng, split, K):
    """method='taylor', terms=K: exactly sum_(k<=K) A^k / k! (no squaring at this norm),
    against the partial sum written out: one term more or less differs by ~0.4^K/K!."""
    S = rng.standard_normal((9, 9))
    S = 0.4 * (S + S.T) / np.abs(S + S.T).sum(axis=0).max()
    A = 1j * S if split else S + 0.3j * S.T
    U, plan = mgemm.expm(A, method="taylor", terms=K, return_plan=True)
    assert plan.path == ("split" if split else "complex") and plan.squarings == 0
    ref, term = np.eye(9, dtype=complex), np.eye(9, dtype=complex)
    for k in range(1, K + 1):
        term = term @ A / k
        ref += term
    assert np.abs(U - ref).max() < 1e-15


def test_evaluate_is_the_plans_polynomial_and_squarings(rng):
    """mgemm.expm.evaluate (the entry for callers with their own products): exp(A) for a
    complex A, cos B + i sin B for a real B, no shift, against SciPy."""
    from mgemm.expm import evaluate
    calls = []

    def mm(X, Y, C=None, alpha=1.0, beta=0.0):
        calls.append(1)
        return _gemm_local(np, X, Y, C, alpha, beta)

    S = rng.standard_normal((11, 11))
    A = 2.0 * (S + 0.5j * S.T) / np.abs(S).sum(axis=0).max()
    plan = mgemm.expm_plan_for(A, split=False)[0]
    assert rel(evaluate(np, mm, A, plan), scipy.linalg.expm(A)) < 1e-13
    assert len(calls) == plan.products
    B = 3.0 * (S + S.T) / np.abs(S + S.T).sum(axis=0).max()
    plan = mgemm.expm_plan_for(1j * B)[0]
    assert plan.path == "split" and plan.squarings >= 1
    assert rel(evaluate(np, mm, B, plan), scipy.linalg.expm(1j * B)) < 1e-13


def test_split_series_of_degree_zero_and_one(rng):
    """cos B and sin B truncated at total degree m <= 1: (I, 0) and (I, B)."""
    from mgemm.expm import _ps_split
    B = rng.standard_normal((4, 4))
    for m, sin_ref in ((0, np.zeros((4, 4))), (1, B)):
        c, s = _ps_split(np, lambda X, Y, **k: X @ Y, B, m, 1)
        assert np.array_equal(c, np.eye(4)) and np.array_equal(s, sin_ref)


def test_usable_keeps_the_reserve():
    from mgemm.expm import RESERVE_BYTES, RESERVE_FRACTION, usable
    assert usable(0) == 0 and usable(RESERVE_BYTES) == 0
    free = 40 * 2 ** 30
    assert usable(free) == int(free * (1 - RESERVE_FRACTION)) - RESERVE_BYTES


# ---- the column-band layout (mgemm.dist) on virtual CPU devices: same algorithm, G bands
@pytest.mark.parametrize("g", [1, 2, 3, 4])
@pytest.mark.parametrize("method", ["auto", "taylor"])
@pytest.mark.parametrize("kind", ["complex", "imaginary"])
def test_band_layout_matches_scipy(rng, g, method, kind):
    n = 37  # not a multiple of g: unequal bands
    if kind == "complex":
        A = rng.standard_normal((n, n)) + 1j * rng.standard_normal((n, n))
    else:
        S = rng.standard_normal((n, n))
        A = -1j * (S + S.T) / 2
    A *= (3.0 if method == "auto" else 0.3) / np.abs(A).sum(axis=0).max()
    U, plan = mgemm.expm(A, method=method, terms=18, devices=g, layout="bands", return_plan=True)
    assert plan.path == ("split" if kind == "imaginary" else "complex")
    assert rel(U, scipy.linalg.expm(A)) < 1e-12
    # identical algebra to the one-device path (rounding may differ only in summation order)
    assert rel(U, mgemm.expm(A, method=method, terms=18)) < 1e-13


@pytest.mark.parametrize("left", ["replica", "stream"])
def test_band_layout_gathers_only_where_needed(rng, left):
    from mgemm.dist import Layout
    n, g = 48, 3
    S = rng.standard_normal((n, n))
    A = -1j * 6.0 * (S + S.T) / np.abs(S + S.T).sum(axis=0).max()
    plan = mgemm.expm_plan_for(A)[0]
    assert plan.path == "split" and plan.squarings >= 1
    lay = Layout(n, g, left=left)
    from mgemm.expm import _evaluate
    U = _evaluate(lay, lay.mm, lay.scatter(np.ascontiguousarray(A.imag)), plan)
    if left == "replica":
        # B (for C = B^2 and again, cached, for B sin), C (for its powers), the PS power
        # C^q (Horner, shared by cos and sin): 3; then two per squaring (c+s and c)
        assert lay.gathers == 3 + 2 * plan.squarings
    else:  # every product streams its left operand's bands: nothing is ever whole
        assert lay.gathers == 0
    assert rel(U.to_array(), scipy.linalg.expm(A)) < 1e-12


def test_banded_matvec_and_output(rng):
    from mgemm.dist import Layout
    n = 30
    M = rng.standard_normal((n, n)) + 1j * rng.standard_normal((n, n))
    X = Layout(n, 4).scatter(M)
    v = rng.standard_normal(n) + 1j * rng.standard_normal(n)
    V = rng.standard_normal((n, 3))
    assert np.allclose(X.matvec(v), M @ v, rtol=1e-14, atol=1e-13)
    assert np.allclose(X.matvec(V), M @ V, rtol=1e-14, atol=1e-13)
    A = 0.1 * M
    Ub = mgemm.expm(A, devices=4, layout="bands", output="banded")
    assert rel(Ub.to_array(), scipy.linalg.expm(A)) < 1e-12
    with pytest.raises(ValueError, match="output"):
        mgemm.expm(A, output="banded")
    with pytest.raises(ValueError, match="layout"):
        mgemm.expm(A, layout="rows")


@pytest.mark.parametrize("g", [1, 3, 4])
@pytest.mark.parametrize("with_plan", [False, True])
def test_banded_input_built_in_place(rng, g, with_plan):
    """A = -i dt (H - c) of a tridiagonal H built band by band (from_columns: never whole),
    exp of it banded in and banded out, against scipy on the assembled matrix."""
    from mgemm.dist import Layout
    n, dt = 41, 0.05
    d = rng.uniform(-2, 30, n)
    off = rng.uniform(-10, -5, n - 1)
    H = np.diag(d) + np.diag(off, 1) + np.diag(off, -1)

    def make(c0, c1):  # columns c0..c1-1 of -i dt H
        band = np.zeros((n, c1 - c0), dtype=complex)
        for j in range(c0, c1):
            band[j, j - c0] = d[j]
            if j > 0:
                band[j - 1, j - c0] = off[j - 1]
            if j < n - 1:
                band[j + 1, j - c0] = off[j]
        return -1j * dt * band

    lay = Layout(n, g)
    Ab = lay.from_columns(make)
    A = -1j * dt * H
    shift = -1j * dt * 0.5 * (d.min() + d.max())
    plan = mgemm.expm_plan_for(A, shift=shift)[0] if with_plan else None
    Ub, used = mgemm.expm(Ab, shift=shift, plan=plan, return_plan=True)
    assert type(Ub).__name__ == "BandedMatrix" and used.path == "split"
    assert rel(Ub.to_array(), scipy.linalg.expm(A)) < 1e-12
    assert rel(mgemm.expm(Ab, shift=shift, output="array"), scipy.linalg.expm(A)) < 1e-12
    with pytest.raises(ValueError, match="shape"):
        lay.from_columns(lambda c0, c1: np.ones((n, c1 - c0 + 1)))


def test_layout_refuses_an_unknown_left_mode():
    from mgemm.dist import Layout
    with pytest.raises(ValueError, match="left must be 'stream' or 'replica', got left='rows'"):
        Layout(8, 2, left="rows")


# ---------------------------------------------------------------- memory (#23 item 5)
def _one_output_mm(X, Y, C=None, alpha=1.0, beta=0.0):
    """A GEMM that allocates exactly its output (as cuBLAS into a new array does): the
    band layout's local product (imported before any measurement)."""
    return _gemm_local(np, X, Y, C, alpha, beta)


@pytest.mark.parametrize("theta", [0.5, 5.0, 50.0])
@pytest.mark.parametrize("split", [True, False])
@pytest.mark.parametrize("method,formulas", [("auto", True), ("auto", False), ("taylor", True)])
def test_peak_matrices_against_measured_allocations(theta, split, method, formulas):
    """The ghost dry run's peak (mgemm.expm.peak_matrices) against the bytes NumPy really
    allocates in the same evaluation, measured by tracemalloc (an independent count): equal
    to 0.5 % (a few small arrays beside), except where NumPy reuses a temporary in place
    (temporary elision: the Sastre formula's sums), where the ghost is at most one matrix
    above -- never below."""
    import tracemalloc
    from mgemm.expm import _evaluate, peak_matrices
    n, dtype = 200, np.complex128
    plan = mgemm.plan_expm(theta, method=method, tolerance=1e-12, split=split, unitary=True,
                           unit_roundoff=2.0 ** -53, use_formulas=formulas)
    rng = np.random.default_rng(int(theta * 10) + split)
    B = rng.standard_normal((n, n))
    B = (B + B.T) / 2 * theta / np.abs(B + B.T).sum(axis=0).max() * 2
    M = B.copy() if split else (1j * B).astype(dtype)
    tracemalloc.start()
    U = _evaluate(np, _one_output_mm, M, plan).astype(dtype, copy=False)
    del U
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    item = M.dtype.itemsize
    measured = peak / (n * n * item)                       # matrices beside the input
    ghost = peak_matrices(plan, dtype) / item - 1
    assert measured <= ghost * 1.005 + 0.01
    assert ghost - measured <= (1.01 if plan.formula != "ps" else 0.01), (ghost, measured)


def test_fitting_plan_stores_fewer_powers_then_refuses():
    """With less memory than the fastest plan needs, fitting_plan keeps its degree and
    squarings with fewer stored powers (more products, the same truncation bound; exp(A)
    equal to SciPy's to 1e-12), and with less than the leanest plan needs it refuses naming
    the bytes and the largest N that fits -- the largest N whose need is within the memory."""
    import re
    import scipy.linalg
    from mgemm.expm import ExpmMemoryError, fitting_plan, memory_bytes
    n, dtype = 120, np.complex128
    rng = np.random.default_rng(5)
    H = rng.standard_normal((n, n))
    H = (H + H.T) / 2
    A = (-1j * 0.8 * H).astype(dtype)
    fast, _ = mgemm.expm_plan_for(A, tolerance=1e-13)
    assert fast.path == "split" and fast.ps_block >= 3
    need = memory_bytes(n, fast, dtype)
    lean = fitting_plan(fast, n, dtype, 1, need - 1)
    assert lean.ps_block < fast.ps_block and lean.products > fast.products
    assert (lean.degree, lean.squarings) == (fast.degree, fast.squarings)
    assert memory_bytes(n, lean, dtype) <= need - 1
    U = mgemm.expm(A, plan=lean)
    assert np.abs(U - scipy.linalg.expm(A)).max() < 1e-12
    free = memory_bytes(n, lean, dtype) // 3
    with pytest.raises(ExpmMemoryError) as err:
        fitting_plan(fast, n, dtype, 1, free)
    msg = str(err.value)
    largest = int(re.search(r"largest N that fits \(with its input\) is (\d+)", msg).group(1))
    leanest = fitting_plan(fast, largest, dtype, 1, free - 16 * largest ** 2)
    assert memory_bytes(largest, leanest, dtype) + 16 * largest ** 2 <= free
    with pytest.raises(ExpmMemoryError):
        fitting_plan(fast, largest + 1, dtype, 1, free - 16 * (largest + 1) ** 2)


# ---- #59 item 4: `mgemm bench-expm --plan`, the sizes that fit a GPU count and its memory
@pytest.mark.parametrize("method", ["auto", "taylor"])
def test_the_benchmark_familys_plan_is_the_one_expm_detects(method):
    """bench-expm --plan plans without forming A: its plan (||A||_1 = 20, split, unitary)
    equals what expm_plan_for detects from the family's A itself at two sizes."""
    from mgemm.expm import expm_plan_for
    from mgemm.tools.bench_expm import family_plan, h2plus_matrix
    for n in (200, 333):
        H, dt = h2plus_matrix(n)
        got, _ = expm_plan_for(-1j * dt * H, method=method)
        want = family_plan(method)
        assert (got.path, got.unitary, got.degree, got.squarings, got.ps_block, got.products) == \
            (want.path, want.unitary, want.degree, want.squarings, want.ps_block, want.products)


def test_the_plan_rows_state_the_largest_n_exactly_and_agree_with_expms_own_choice():
    """plan_rows: the largest N's input and exponent fit the memory and N + 1's do not
    (with the plan and with its leanest fallback); per N, "fits" is where expm's own
    fallback (fitting_plan, given the memory left once the input exists) finds a plan, and
    the bytes stated are that plan's; more GPUs fit more."""
    from mgemm.expm import fitting_plan, input_and_exponent_bytes, leaner_plans
    from mgemm.plan import ExpmPlan
    from mgemm.tools.bench_expm import family_plan, plan_rows
    rng = np.random.default_rng()
    free = int(rng.uniform(20, 140) * 2 ** 30)
    sizes = [8192, 30000, 49152, 65536]
    rows = plan_rows(sizes, [1, 2, 4], ["auto"], free)
    plan = family_plan("auto")
    lean = leaner_plans(plan, np.complex128)[-1]
    c = np.complex128
    for r in rows:
        g = r["gpus"]
        for p, key in ((plan, "largest_n"), (lean, "largest_n_leanest")):
            n = r[key]
            assert input_and_exponent_bytes(n, p, c, g) <= free < input_and_exponent_bytes(n + 1, p, c, g)
        for n in sizes:
            s = r["sizes"][str(n)]
            assert s["fits"] == (n <= r["largest_n_leanest"])
            if s["fits"]:
                inp = n * -(-n // g) * 16                  # the input band, complex128
                run = fitting_plan(plan, n, c, g, free - inp)
                assert isinstance(run, ExpmPlan) and run.ps_block == s["stored_powers_run"]
                assert s["bytes_per_gpu_run"] == input_and_exponent_bytes(n, run, c, g) <= free
    by_g = {r["gpus"]: r["largest_n"] for r in rows}
    assert by_g[1] < by_g[2] < by_g[4]


def test_bench_expm_plan_from_the_command_line(tmp_path):
    """`mgemm bench-expm --plan --memory GIB` needs no GPU: a table and a JSON file of
    kind expm-plan; --memory without --plan, and --plan without --memory and without a GPU,
    give one line and exit 2."""
    import json

    from click.testing import CliRunner

    from mgemm.arrays import gpu_count
    from mgemm.cli import main
    out = tmp_path / "p.json"
    r = CliRunner().invoke(main, ["bench-expm", "--plan", "--memory", "79", "--n", "49152",
                                  "--gpus", "4", "--json-out", str(out)])
    assert r.exit_code == 0, r.output
    assert "largest N" in r.output and "49152" in r.output
    doc = json.loads(out.read_text())
    assert doc["kind"] == "expm-plan" and doc["rows"][0]["gpus"] == 4
    r = CliRunner().invoke(main, ["bench-expm", "--memory", "79"])
    assert r.exit_code == 2 and "--memory goes with --plan" in r.output
    if not gpu_count():
        r = CliRunner().invoke(main, ["bench-expm", "--plan"])
        assert r.exit_code == 2 and "--memory" in r.output and "Traceback" not in r.output
    r = CliRunner().invoke(main, ["bench-expm", "--plan", "--memory", "0"])
    assert r.exit_code == 2 and "0" in r.output
