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
