"""GPU tests of the cupy executor against cupy.matmul (marker ``gpu`` / ``multi_gpu(n)``).

Run on the device machines: ``python -m pytest -m "gpu or multi_gpu" tests/test_gpu.py``.
Tolerances as in test_engine.py, relative to max|ref| (cuBLAS blocking differs per tile).
"""
import json
import os

import numpy as np
import pytest

import mgemm

cp = pytest.importorskip("cupy")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

from tdse.model.initial import initial_state as initial_of  # noqa: E402

TOL = {np.float32: 1e-4, np.complex64: 1e-4, np.float64: 1e-12, np.complex128: 1e-12}
SHAPES = [(1, 1, 1), (100, 37, 250), (513, 300, 257), (1024, 1024, 1024)]
# 2 and 4 GPUs, each skipped where there are fewer
NGPU = [pytest.param(2, marks=pytest.mark.multi_gpu(2)),
        pytest.param(4, marks=pytest.mark.multi_gpu(4))]


def rand(dev, shape, dtype, seed):
    with cp.cuda.Device(dev):
        r = cp.random.default_rng(seed)
        x = r.standard_normal(shape)
        if np.issubdtype(dtype, np.complexfloating):
            x = x + 1j * r.standard_normal(shape)
        return x.astype(dtype)


def check(ngpu, placement, dtype, shape, tile, beta, complex_method="native", seed=0, shares=None):
    """mgemm.gemm vs cupy.matmul.  3m (Gauss) gets 4x the native tolerance: its error is
    relative to (|Re A| + |Im A|)(|Re B| + |Im B|) (see test_engine.py)."""
    m, k, n = shape
    devs = list(range(ngpu))
    a_dev, b_dev, c_dev = (0, 0, 0) if placement == "one" else (0, 1 % ngpu, 2 % ngpu)
    A = rand(a_dev, (m, k), dtype, seed)
    B = rand(b_dev, (k, n), dtype, seed + 1)
    C = rand(c_dev, (m, n), dtype, seed + 2)
    alpha = 0.7 - 0.2j if np.issubdtype(dtype, np.complexfloating) else 0.7
    with cp.cuda.Device(0):
        ref = alpha * cp.matmul(cp.asarray(A), cp.asarray(B)) + beta * cp.asarray(C)
    out = mgemm.gemm(A, B, C, alpha, beta, devices=devs, tile=tile,
                     complex_method=complex_method, shares=shares)
    assert out is C and out.device.id == c_dev
    with cp.cuda.Device(0):
        err = float(cp.abs(cp.asarray(out) - ref).max() / (cp.abs(ref).max() + 1))
    assert err <= (4 if complex_method == "3m" else 1) * TOL[dtype] * max(k, 1) ** 0.5, err
    if complex_method == "3m":
        assert mgemm.executors.get("cupy").last_schedule.method == "3m"


@pytest.fixture
def chebyshev_carrier(monkeypatch):
    """The CPU's e carried as a GPU's is, by the Chebyshev midpoint step (the host's split
    step, tdse.numerics.carrier, states the error within a factor 2 of it: tests/test_carrier.py):
    for the tests that hold a GPU's carried e or stated error to the CPU's at 1e-6."""
    import tdse.numerics.adaptive as ad
    monkeypatch.setattr(ad, "carrier", lambda st, xp=np: st)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128])
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("beta", [0.0, 1.5])
def test_one_gpu(dtype, shape, beta):
    check(1, "one", dtype, shape, None, beta)
    check(1, "one", dtype, shape, 128, beta)


@pytest.mark.multi_gpu(2)
@pytest.mark.parametrize("placement", ["one", "three"])
@pytest.mark.parametrize("dtype", [np.float64, np.complex128, np.float32])
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("beta", [0.0, 1.5])
def test_two_gpus(placement, dtype, shape, beta):
    check(2, placement, dtype, shape, 128, beta)


@pytest.mark.multi_gpu(4)
@pytest.mark.parametrize("placement", ["one", "three"])
@pytest.mark.parametrize("dtype", [np.float64, np.complex128, np.complex64])
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("beta", [0.0, 1.5])
@pytest.mark.parametrize("tile", [64, 256])
def test_four_gpus(placement, dtype, shape, beta, tile):
    check(4, placement, dtype, shape, tile, beta)


@pytest.mark.multi_gpu(2)
@pytest.mark.parametrize("complex_method", ["4m", "3m"])
def test_complex_methods_multi(complex_method):
    check(2, "three", np.complex128, (300, 200, 400), 64, 0.5, complex_method)


# ---- 3m fused into the band schedule (split / three real GEMMs / combine per tile)
@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("beta", [0.0, 1.5 - 0.5j])
def test_3m_one_gpu(dtype, shape, beta):
    check(1, "one", dtype, shape, None, beta, "3m")
    check(1, "one", dtype, shape, 128, beta, "3m")


@pytest.mark.parametrize("ngpu", NGPU)
@pytest.mark.parametrize("placement", ["one", "three"])
@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("beta", [0.0, 1.5 - 0.5j])
@pytest.mark.parametrize("tile", [64, 256])
def test_3m_multi_gpu(ngpu, placement, dtype, shape, beta, tile):
    check(ngpu, placement, dtype, shape, tile, beta, "3m")


@pytest.mark.parametrize("ngpu", NGPU)
@pytest.mark.parametrize("placement", ["one", "three"])
@pytest.mark.parametrize("method,dtype", [("native", np.complex128), ("native", np.float32),
                                          ("3m", np.complex128), ("3m", np.complex64)])
@pytest.mark.parametrize("shape", SHAPES[1:])
@pytest.mark.parametrize("beta", [0.0, 1.5])
def test_unequal_shares(ngpu, placement, method, dtype, shape, beta):
    """Rows per GPU from ``shares`` (bands of unequal height; mgemm.balance)."""
    shares = [0.7, 1.3, 1.0, 0.9][:ngpu]
    check(ngpu, placement, dtype, shape, 64, beta, method, shares=shares)
    s = mgemm.executors.get("cupy").last_schedule
    rows = s.rows_per_worker()
    assert sum(rows) == shape[0] and len(set(rows)) > 1


@pytest.mark.gpu
@pytest.mark.parametrize("ngpu", [pytest.param(1)] + NGPU)
@pytest.mark.parametrize("batch", [True, False])
def test_3m_batched_planes(ngpu, batch):
    """A tile's three real GEMMs as one strided-batched call (the default) or three."""
    ex = mgemm.executors.get("cupy")
    ex.batch_planes = batch
    try:
        check(ngpu, "three", np.complex128, (1024, 640, 1000), 128, 0.5 + 0.5j, "3m", seed=3)
        counts = [op.batch for op in ex.last_schedule.ops if op.kind == "gemm"]
        assert sum(counts) == 3 * 8 * 8 and (3 in counts) == batch
    finally:
        ex.batch_planes = True


@pytest.mark.multi_gpu(2)
def test_balance_from_a_gpu_trace():
    """A traced call gives rows per GPU that sum to M and run correctly."""
    from mgemm.balance import shares_from_trace
    A = rand(0, (2048, 512), np.complex128, 9)
    B = rand(1, (512, 1024), np.complex128, 10)
    mgemm.gemm(A, B, devices=[0, 1], tile=256, complex_method="3m", trace=True)
    sh = shares_from_trace(mgemm.last_trace(), mgemm.executors.get("cupy").last_schedule)
    assert sum(sh) == pytest.approx(2048) and min(sh) > 0
    out = mgemm.gemm(A, B, devices=[0, 1], tile=256, complex_method="3m", shares=sh)
    with cp.cuda.Device(0):
        ref = cp.matmul(A, cp.asarray(B))
        err = float(cp.abs(cp.asarray(out) - ref).max() / cp.abs(ref).max())
    assert err < 4e-12


@pytest.mark.multi_gpu(2)
def test_3m_trace_has_split_and_combine():
    A = rand(0, (512, 256), np.complex128, 7)
    B = rand(1, (256, 384), np.complex128, 8)
    mgemm.gemm(A, B, devices=[0, 1], tile=128, complex_method="3m", trace=True)
    kinds = {r["kind"] for r in mgemm.last_trace()}
    assert {"split", "gemm", "combine", "copy"} <= kinds


@pytest.mark.gpu
def test_trace_and_expm_on_gpu():
    import scipy.linalg
    rng = np.random.default_rng(3)
    H = rng.standard_normal((200, 200))
    H = (H + H.T) / 2
    A = -0.01j * H
    with cp.cuda.Device(0):
        U = mgemm.expm(cp.asarray(A))
        assert float(np.abs(U.get() - scipy.linalg.expm(A)).max()) < 1e-12
        X = cp.asarray(rng.standard_normal((256, 256)))
    mgemm.gemm(X, X, devices=[0], tile=64, trace=True)
    tr = mgemm.last_trace()
    assert tr and all(r["end_ms"] >= r["start_ms"] for r in tr)


# ---- the matrix exponent on 1, 2, 4 GPUs (column-band layout) and the TDSE on GPUs
def _hermitian_case(n, dtype, norm1=20.0, seed=5):
    from mgemm.tools.bench_expm import h2plus_matrix
    H, dt = h2plus_matrix(n, norm1)
    lam, V = np.linalg.eigh(H)
    ref = (V * np.exp(-1j * dt * lam)) @ V.T
    return (-1j * dt * H).astype(dtype), ref


@pytest.mark.gpu
@pytest.mark.parametrize("ngpu", [1, 2, 4])
@pytest.mark.parametrize("method", ["auto", "taylor"])
@pytest.mark.parametrize("dtype", [np.complex128, np.complex64])
@pytest.mark.parametrize("split", [None, False])
def test_expm_multi_gpu_vs_eigendecomposition(ngpu, method, dtype, split):
    if ngpu > cp.cuda.runtime.getDeviceCount():
        pytest.skip(f"needs {ngpu} GPUs")
    n = 1536
    # taylor needs theta small for its fixed degree: a smaller step for that method
    A, ref = _hermitian_case(n, dtype, norm1=20.0 if method == "auto" else 0.5)
    with cp.cuda.Device(0):
        U = mgemm.expm(cp.asarray(A), method=method, terms=20, devices=list(range(ngpu)),
                       split=split)
        assert U.device.id == 0 and U.dtype == dtype
        U = U.get()
    err = np.linalg.norm(U - ref) / np.linalg.norm(ref)
    unit = np.linalg.norm(U.conj().T @ U - np.eye(n)) / np.sqrt(n)
    tol = 1e-12 if dtype == np.complex128 else 2e-5  # complex64: u = 6e-8 x ~20 products x sqrt(N)
    assert err < tol and unit < tol, (err, unit)


@pytest.mark.gpu
def test_bench_expm_plans_largest_n_runs_and_beyond_it_expm_refuses_before_work():
    """`mgemm bench-expm --plan`'s model against mgemm.expm itself on one GPU under a CuPy
    pool limit of 2 GiB beyond what the process holds: at the planned largest N (with the
    plan's leanest fallback) the family's exponent runs within the limit and is accurate;
    4 % beyond it expm refuses before any work (ExpmMemoryError)."""
    from mgemm.expm import ExpmMemoryError, usable
    from mgemm.tools.bench_expm import plan_rows
    pool = cp.get_default_memory_pool()
    pool.free_all_blocks()
    limit = 2 * 2 ** 30
    row = plan_rows([], [1], ["auto"], usable(limit))[0]
    n_ok, n_no = row["largest_n_leanest"], int(row["largest_n_leanest"] * 1.04)
    assert 2000 < n_ok < 8000, row
    try:
        pool.set_limit(size=pool.used_bytes() + limit)
        from mgemm.tools.bench_expm import h2plus_matrix
        for n, fits in ((n_ok, True), (n_no, False)):
            if fits:
                A, ref = _hermitian_case(n, np.complex128)
            else:
                H, dt = h2plus_matrix(n)
                A = -1j * dt * H
            with cp.cuda.Device(0):
                dA = cp.asarray(A)
                del A
                if fits:
                    U = mgemm.expm(dA)
                    v = np.random.default_rng(1).standard_normal(n)
                    err = float(np.abs((U @ cp.asarray(v)).get() - ref @ v).max())
                    assert err < 1e-9, err
                    del U
                else:
                    with pytest.raises(ExpmMemoryError, match="the largest N"):
                        mgemm.expm(dA)
                del dA
            pool.free_all_blocks()
    finally:
        pool.set_limit(size=0)
        pool.free_all_blocks()


@pytest.mark.multi_gpu(2)
def test_tdse_gpu_paths_agree_with_cpu(tmp_path):
    import h5py
    from tdse import config as cfgmod
    from tdse.run.driver import run
    text = open(__import__("os").path.join(__import__("os").path.dirname(__file__), "..",
                                           "inputs", "tiny.toml")).read()
    # the same method on every backend (auto may choose differently per machine)
    cfg = cfgmod.loads(text.replace('method = "auto"', 'method = "dense"'))
    assert cfg.propagator.method == "dense"
    paths = {}
    for label, kw in (("cpu", dict(backend="numpy")), ("gpu1", dict(backend="cupy", devices=[0])),
                      ("gpu2", dict(backend="cupy", devices=[0, 1]))):
        paths[label] = run(cfg, tmp_path / label, **kw).path
    with h5py.File(paths["cpu"]) as f:
        ref = f["snapshots/psi"][...]
    for label in ("gpu1", "gpu2"):
        with h5py.File(paths[label]) as f:
            assert np.abs(f["snapshots/psi"][...] - ref).max() < 1e-12, label


@pytest.mark.multi_gpu(2)
def test_operator_mode_and_floquet_on_gpus(tmp_path):
    import h5py
    from tdse import config as cfgmod
    from tdse.studies.floquet import analyse
    from tdse.run.driver import run
    import os
    text = open(os.path.join(os.path.dirname(__file__), "..", "inputs", "tiny.toml")).read()
    text = text.replace("[time]", "[propagator]\nmethod = \"auto\"\ntolerance = 1e-14\noperator = true\n\n[time]", 1) \
        if "[propagator]" not in text else text.replace("[propagator]", "[propagator]\noperator = true", 1)
    cfg = cfgmod.loads(text.replace('method = "auto"', 'method = "dense"'))  # one method everywhere
    assert cfg.propagator.method == "dense" and cfg.propagator.operator
    P = {}
    for label, kw in (("cpu", dict(backend="numpy")), ("gpu2", dict(backend="cupy", devices=[0, 1]))):
        with h5py.File(run(cfg, tmp_path / label, **kw).path) as f:
            P[label] = f["operator/P"][...]
    assert np.abs(P["gpu2"] - P["cpu"]).max() < 1e-12
    a = analyse(cfg, steps=100, count=3, backend="numpy")
    b = analyse(cfg, steps=100, count=3, backend="cupy", devices=[0, 1])
    assert np.allclose([s["phase"] for s in a["states"]], [s["phase"] for s in b["states"]], atol=1e-10)


@pytest.mark.gpu
@pytest.mark.parametrize("stencil", [3, "dvr"])
@pytest.mark.parametrize("mode", ["psi", "U"])
def test_chebyshev_on_gpu_equals_cpu(stencil, mode):
    """The matrix-free Chebyshev exponential on CuPy (cupyx sparse for the stencil, cuFFT
    for the DVR), cfm4 steps, psi and the whole U(t): the CPU's result to 1e-12."""
    from tdse.numerics.stepper import Stepper as Propagator
    from tdse.studies.validate import make_config
    cfg = make_config(n=96, dx=0.2, a=0.5, Z=2.0, amp=0.3, dt=0.02, steps=10, method="chebyshev",
                      tol=1e-14, scheme="cfm4", stencil=stencil)
    rng = np.random.default_rng(3)
    X = rng.standard_normal(96) + 1j * rng.standard_normal(96) if mode == "psi" else np.eye(96, dtype=complex)
    cpu, gpu = Propagator(cfg), Propagator(cfg, xp=cp)
    a, b = X.copy(), cp.asarray(X)
    step = "step" if mode == "psi" else "step_operator"
    for j in range(10):
        a, b = getattr(cpu, step)(a, j), getattr(gpu, step)(b, j)
    assert np.abs(b.get() - a).max() < 1e-12 * np.abs(a).max()


@pytest.mark.multi_gpu(2)
@pytest.mark.parametrize("stencil", [3, "dvr"])
def test_cfm4_dense_exponent_on_gpu_bands_equals_cpu(stencil):
    """cfm4's two exponentials per step through mgemm.expm in column bands on 2 GPUs (and on
    one) against the CPU, for psi and U(t)."""
    from tdse.numerics.precheck import precheck
    from tdse.numerics.stepper import Stepper as Propagator
    from tdse.run.backend import Backend
    from tdse.studies.validate import make_config
    cfg = make_config(n=128, dx=0.1, dt=0.005, steps=8, method="auto", tol=1e-13, scheme="cfm4",
                      stencil=stencil)
    pc = precheck(cfg, check_resolution=False)
    rng = np.random.default_rng(4)
    psi0 = rng.standard_normal(128) + 1j * rng.standard_normal(128)
    cpu = Propagator(cfg, pc.plan)
    a, Ua = psi0.copy(), np.eye(128, dtype=complex)
    for j in range(8):
        a, Ua = cpu.step(a, j), cpu.step_operator(Ua, j)
    for devs in ([0], [0, 1]):
        with cp.cuda.Device(0):
            gpu = Propagator(cfg, pc.plan, cp, Backend("cupy", cp, tuple(devs)).gemm_opts)
            b, Ub = cp.asarray(psi0), cp.eye(128, dtype=complex)
            for j in range(8):
                b, Ub = gpu.step(b, j), gpu.step_operator(Ub, j)
            Ub = Ub.to_array(0) if hasattr(Ub, "to_array") else Ub
            assert np.abs(cp.asnumpy(b) - a).max() < 1e-12 * np.abs(a).max(), devs
            assert np.abs(cp.asnumpy(Ub) - Ua).max() < 1e-12, devs


@pytest.mark.multi_gpu(2)
@pytest.mark.parametrize("method", ["auto", "chebyshev"])
def test_field_and_absorber_on_gpus_equal_cpu(method):
    """A laser pulse and the absorbing boundary on CuPy (dense exponent: the general
    complex path in column bands on 2 GPUs; Chebyshev: the masked Hermitian part)."""
    from tdse.config import parse
    from tdse.run.driver import run
    d = {"name": "atomgpu", "grid": {"x_min": -40.0, "x_max": 40.0, "dx": 0.25, "stencil": "dvr"},
         "potential": {"a": 2.0, "centres": [{"x0": 0.0, "Z": 1.0}]},
         "field": {"E0": 0.05, "omega": 0.3, "duration": 10.0},
         "absorber": {"width": 15.0},
         "time": {"dt": 0.05, "t_end": 2.0},
         "propagator": {"method": method, "tolerance": 1e-13, "error_window": 0.0}}
    cfg = parse(d)
    cpu = run(cfg, None, backend="numpy").data
    for devs in ([0], [0, 1]):
        gpu = run(cfg, None, backend="cupy", devices=devs).data
        assert np.abs(gpu["snapshots/psi"] - cpu["snapshots/psi"]).max() < 1e-11, devs
        assert np.abs(gpu["observables/yield"] - cpu["observables/yield"]).max() < 1e-12, devs


@pytest.mark.multi_gpu(2)
def test_expm_trace_records_gemms_and_gathers_per_gpu():
    from mgemm.dist import trace_rows
    rng = np.random.default_rng(8)
    H = rng.standard_normal((256, 256))
    H = (H + H.T) / 40
    with cp.cuda.Device(0):
        A = cp.asarray(-1j * H)
        ev = []
        U = mgemm.expm(A, devices=[0, 1], trace=ev)
        ref = mgemm.expm(A)
    for d in (0, 1):
        cp.cuda.Device(d).synchronize()
    rows = trace_rows(ev, cp)
    assert {r["dev"] for r in rows} == {0, 1}
    assert {r["kind"] for r in rows} == {"gemm", "copy"}
    assert all(r["end_ms"] >= r["start_ms"] >= 0 for r in rows)
    assert float(cp.abs(U - ref).max()) < 1e-13


@pytest.mark.multi_gpu(2)
def test_chebyshev_block_over_two_gpus_equals_cpu():
    from tdse.numerics.stepper import Stepper as Propagator
    from tdse.run.backend import Backend
    from tdse.studies.validate import make_config
    cfg = make_config(n=96, dx=0.2, a=0.5, Z=2.0, amp=0.3, dt=0.02, steps=5, method="chebyshev",
                      tol=1e-14, scheme="cfm4", stencil="dvr")
    cpu = Propagator(cfg)
    a = np.eye(96, dtype=complex)
    with cp.cuda.Device(0):
        gpu = Propagator(cfg, xp=cp, gemm_opts=Backend("cupy", cp, (0, 1)).gemm_opts)
        b = cp.eye(96, dtype=complex)
        for j in range(5):
            a, b = cpu.step_operator(a, j), gpu.step_operator(b, j)
        assert np.abs(b.to_array(0).get() - a).max() < 1e-12


@pytest.mark.gpu
@pytest.mark.parametrize("ngpu", [1, 2, 4])
@pytest.mark.parametrize("dtype", [np.float64, np.complex128, np.float32])
def test_streamed_left_operand_products_equal_matmul(ngpu, dtype):
    """Layout.mm with the left operand streamed band by band (staging buffers reused across
    calls, temporaries freed between them) against cupy.matmul, and against the replica
    path; a chain of 6 products catches a buffer reused before its GEMM finished."""
    if ngpu > cp.cuda.runtime.getDeviceCount():
        pytest.skip(f"needs {ngpu} GPUs")
    from mgemm.dist import Layout
    n = 1001  # unequal bands
    devs = list(range(ngpu))
    rng = np.random.default_rng(ngpu)
    L = rng.standard_normal((n, n)) / np.sqrt(n)
    R = rng.standard_normal((n, n))
    C = rng.standard_normal((n, n))
    if np.issubdtype(dtype, np.complexfloating):
        L, R = L + 1j * rng.standard_normal((n, n)) / np.sqrt(n), R - 0.5j * C
    L, R, C = (x.astype(dtype) for x in (L, R, C))
    tol = TOL[dtype] * n ** 0.5
    for left in ("stream", "replica"):
        lay = Layout(n, devs, left=left)
        Lb, Rb, Cb = lay.scatter(cp.asarray(L)), lay.scatter(cp.asarray(R)), lay.scatter(cp.asarray(C))
        Y = lay.mm(Lb, Rb, Cb, alpha=0.5, beta=-2.0)
        ref = 0.5 * (L.astype(np.complex128) @ R) - 2.0 * C
        got = Y.to_array(0).get()
        assert np.abs(got - ref).max() <= tol * np.abs(ref).max(), left
        X, Xr = Rb, R.astype(np.complex128)
        for _ in range(6):
            X = lay.mm(Lb if left == "replica" else Lb.copy(), X)
            Xr = L @ Xr
        got = X.to_array(0).get()
        assert np.abs(got - Xr).max() <= 6 * tol * np.abs(Xr).max(), left
        if left == "stream":
            assert lay.gathers == 2  # only the two to_array calls


@pytest.mark.gpu
@pytest.mark.parametrize("ngpu", [1, 2, 4])
def test_banded_input_exponent_on_gpus_vs_eigendecomposition(ngpu):
    """A = -i dt H of a tridiagonal H built band by band on the GPUs (never whole), exp(A)
    returned in bands, against V e^(-i dt lambda) V^T from numpy's eigh."""
    if ngpu > cp.cuda.runtime.getDeviceCount():
        pytest.skip(f"needs {ngpu} GPUs")
    from mgemm.dist import Layout
    n, dt = 1200, 0.04
    rng = np.random.default_rng(11)
    d, off = rng.uniform(-30, 0, n) + 1 / dt, -0.5 / dt * np.ones(n - 1)
    H = np.diag(d) + np.diag(off, 1) + np.diag(off, -1)
    lam, V = np.linalg.eigh(H)
    ref = (V * np.exp(-1j * dt * lam)) @ V.T

    def make(c0, c1):
        band = cp.zeros((n, c1 - c0), dtype=cp.complex128)
        j = cp.arange(c0, c1)
        band[j, j - c0] = cp.asarray(d[c0:c1])
        lo, hi = max(c0, 1), min(c1, n - 1)
        band[cp.arange(lo, c1) - 1, cp.arange(lo, c1) - c0] = cp.asarray(off[lo - 1:c1 - 1])
        band[cp.arange(c0, hi) + 1, cp.arange(c0, hi) - c0] = cp.asarray(off[c0:hi])
        return -1j * dt * band

    lay = Layout(n, list(range(ngpu)))
    A = lay.from_columns(make)
    assert [b.device.id for b in A.bands] == list(range(ngpu))
    c = 0.5 * (d.min() - 2 / dt * 0.5 + d.max() + 2 / dt * 0.5)
    U, plan = mgemm.expm(A, shift=-1j * dt * c, unitary=True, return_plan=True)
    assert plan.path == "split" and hasattr(U, "bands") and lay.gathers == 0
    got = U.to_array(0).get()
    assert np.abs(got - ref).max() < 1e-12 * n ** 0.5, np.abs(got - ref).max()


@pytest.mark.multi_gpu(2)
@pytest.mark.parametrize("devices", [[0], [0, 1]])
def test_auto_method_on_gpus_times_kernels_and_agrees(tmp_path, devices):
    """method = "auto" on 1 and 2 GPUs: the cost model's kernels are timed on the GPU
    (finite, positive), the run records its choice, and psi equals the CPU's dense run to
    a few tolerances (both methods meet the per-exponential tolerance)."""
    import json
    import os
    from tdse import config as cfgmod
    from tdse.numerics import cost
    from tdse.numerics.precheck import precheck
    from tdse.run.driver import run
    from tdse.run.snapshots import read
    text = open(os.path.join(os.path.dirname(__file__), "..", "inputs", "h2plus_moving.toml")).read()
    text = text.replace('method = "dense"', 'method = "auto"').replace("t_end = 10.0", "t_end = 0.2")
    text = text.replace("error_window = 1.0", "error_window = 0.0").replace("tolerance = 1e-12", "tolerance = 1e-13")
    c = cfgmod.loads(text)
    with cp.cuda.Device(0):
        t = cost.calibrate(c, precheck(c, check_resolution=False), cp, len(devices), operator=True)
    for v in (t.expm, t.zgemm, t.matvec, t.term_vector, t.term_block):
        assert 0 < v < 10
    res = run(c, tmp_path / "gpu", backend="cupy", devices=devices)
    d = read(res.path)
    choice = json.loads(d["attrs"]["method_choice"])
    assert choice["gpus"] == len(devices) and d["attrs"]["method"] == choice["chosen"]
    dense = cfgmod.loads(text.replace('method = "auto"', 'method = "dense"'))
    ref = read(run(dense, tmp_path / "cpu", backend="numpy").path)
    assert np.abs(d["snapshots/psi"][-1] - ref["snapshots/psi"][-1]).max() < 40 * 1e-13 * c.time.steps


@pytest.mark.multi_gpu(2)
def test_floquet_scan_on_gpus_equals_cpu():
    import os
    from tdse import config as cfgmod
    from tdse.studies.floquet import scan
    text = open(os.path.join(os.path.dirname(__file__), "..", "inputs", "tiny.toml")).read()
    c = cfgmod.loads(text)
    kw = dict(period=0.9, steps=90, count=2)
    a = scan(c, "potential.a", [0.4, 0.8], backend="numpy", **kw)
    b = scan(c, "potential.a", [0.4, 0.8], backend="cupy", devices=[0, 1], **kw)
    for p, q in zip(a["points"], b["points"]):
        for s, t in zip(p["states"], q["states"]):
            assert abs(s["quasi_energy"] - t["quasi_energy"]) < 1e-9 and abs(s["overlap"] - t["overlap"]) < 1e-9


@pytest.mark.gpu
@pytest.mark.parametrize("method,stencil", [("dense", 3), ("chebyshev", "dvr"), ("dense", "dvr")])
def test_evolve_block_on_gpu_equals_cpu(method, stencil):
    """The one evolve loop with psi as an N x B block on a GPU (tdse.prepare with backend
    cupy) against the same plan on the CPU (#22)."""
    import tdse
    from tdse.studies.validate import make_config
    cfg = make_config(n=128, dx=0.1, dt=0.005, steps=10, method=method, tol=1e-13,
                      scheme="cfm4", stencil=stencil)
    rng = np.random.default_rng(5)
    X = rng.standard_normal((128, 3)) + 1j * rng.standard_normal((128, 3))
    cpu = tdse.prepare(cfg, backend="numpy", check_resolution=False)
    gpu = tdse.prepare(cfg, backend="cupy", devices=[0], check_resolution=False)
    a = tdse.evolve(cpu, X).psi
    b = tdse.evolve(gpu, cp.asarray(X)).psi
    assert np.abs(cp.asnumpy(b) - a).max() < 1e-12 * np.abs(a).max()


@pytest.mark.multi_gpu(2)
@pytest.mark.parametrize("method", ["dense", "chebyshev"])
def test_evolve_operator_on_two_gpus_equals_cpu(method):
    """U(t) and psi from one evolve loop on 2 GPUs (column bands) against the CPU (#22)."""
    import tdse
    from tdse.studies.validate import make_config
    cfg = make_config(n=128, dx=0.1, dt=0.005, steps=6, method=method, tol=1e-13,
                      scheme="cfm4", stencil="dvr")
    cpu = tdse.prepare(cfg, backend="numpy", check_resolution=False)
    gpu = tdse.prepare(cfg, backend="cupy", devices=[0, 1], check_resolution=False)
    a = tdse.evolve(cpu, cpu.psi0, U0=np.eye(128, dtype=complex))
    with cp.cuda.Device(0):
        b = tdse.evolve(gpu, cp.asarray(gpu.psi0), U0=cp.eye(128, dtype=complex))
        U = b.U.to_array(0) if hasattr(b.U, "to_array") else b.U
        assert np.abs(cp.asnumpy(b.psi) - a.psi).max() < 1e-12
        assert np.abs(cp.asnumpy(U) - a.U).max() < 1e-12


@pytest.mark.gpu
def test_scan_on_gpu_equals_cpu():
    """A batched scan on CuPy (block Chebyshev, the DVR's kinetic GEMMs, observables on the
    device) against the same scan on NumPy (#26)."""
    import tdse
    from tdse.studies.scan import scan
    import os
    text = open(os.path.join(ROOT, "inputs", "atom_hhg.toml")).read()
    cfg = tdse.config.loads(text).with_value("time.t_end", 20.0).with_value(
        "propagator.time_error", "none")
    sets = {"field.E0": [0.02, 0.05, 0.08]}
    a, b = scan(cfg, sets, backend="numpy"), scan(cfg, sets, backend="cupy")
    for k in ("norm", "energy", "acceleration", "populations_h0", "yield_flux", "autocorrelation"):
        assert np.abs(a[k] - b[k]).max() <= 1e-10 * max(1.0, np.abs(a[k]).max()), k


@pytest.mark.gpu
def test_backend_auto_on_a_gpu_machine():
    """backend auto with a GPU: both backends timed on the run's own step for a small DVR
    grid (where the CPU may win) and the faster one taken; the choice is in the file."""
    import tdse
    from tdse.studies.validate import make_config
    cfg = make_config(n=128, dx=0.2, stencil="dvr", dt=0.01, steps=20, method="chebyshev", tol=1e-12,
                      scheme="cfm4")
    plan = tdse.prepare(cfg, backend="auto", check_resolution=False)
    sec = plan.backend_choice["seconds_per_step"]
    assert set(sec) == {"cupy", "numpy"} and all(v > 0 for v in sec.values())
    assert plan.backend.name == min(sec, key=sec.get)
    res = tdse.simulate(cfg, backend="auto")
    assert "backend_choice" in res.attrs


def _batch_case(name, t_end, sets):
    import os
    import tdse
    cfg = tdse.load_config(os.path.join(ROOT, "inputs", name)).with_value(
        "propagator.time_error", "none").with_value("time.t_end", t_end)
    key, values = sets
    return [cfg.with_value(key, v) for v in values]


def _graph_and_launched(configs, X0, steps=30, j0=0):
    """``steps`` steps (from step ``j0``) of the block X0 by a BatchStepper of ``configs``
    with its graphs and launched from Python: [(final X on the host, Chebyshev terms, the
    graph step or False)] in that order."""
    from tdse.numerics.stepper import BatchStepper
    runs = []
    for graphs in (True, False):
        st = BatchStepper(configs, cp)
        st.graphs = graphs
        X = cp.asarray(X0)
        for j in range(j0, j0 + steps):
            X = st.step(X, j)
        runs.append((cp.asnumpy(X), st.cheb_terms, st._graph))
    return runs


@pytest.mark.gpu
@pytest.mark.parametrize("name,stencil,scheme,sets", [
    ("atom_hhg.toml", "dvr", "cfm4", ("field.E0", [0.02, 0.05, 0.08])),       # field, absorber masks
    ("h2plus_moving.toml", 3, "cfm4", ("potential.centres.amplitude", [0.1, 0.3])),  # moving centres
    ("h2plus_moving.toml", 5, "midpoint", ("potential.a", [0.8, 1.2])),
    ("h2plus_moving.toml", "dvr", "cfm4", ("potential.a", [1.0])),            # one member
    ("h2plus_moving.toml", "dvr", "midpoint", ("potential.a", [0.8, 1.2])),   # folded, no masks
    # the velocity gauge (#55): a_b p and A^2/2 per member, each kinetic product's D X
    ("velocity", "dvr", "cfm4", ("field.E0", [0.02, 0.05, 0.08])),
    ("velocity", 3, "cfm4", ("field.E0", [0.05, 0.08])),
    ("velocity", 5, "midpoint", ("field.E0", [0.06])),
    ("velocity", "dvr", "midpoint", ("field.E0", [0.07])),                    # one member
])
def test_graph_step_equals_the_launched_step(name, stencil, scheme, sets, monkeypatch):
    """A batched step replayed from a CUDA graph (tdse.numerics.graphs) against the same
    steps launched kernel by kernel from Python (#26, #27): every member's psi to 1e-13
    after 30 steps (the same operations in the same order: only FMA contraction may differ),
    the same Chebyshev work counted, and more than one graph when the term counts change.
    "velocity": atom_hhg in the velocity gauge, 30 steps from t = 40 (A far from 0)."""
    from tdse.model.grid import points
    from tdse.model import states
    from tdse.numerics import graph_fft
    # a DVR block's T by the dense GEMM (block_by_fft times both: at N = 256 and B = 2 near
    # their crossover it had picked the FFT in one GPU suite of three -- no folded basis then)
    monkeypatch.setattr(graph_fft, "BLOCK_FFT", False)
    gauge = name == "velocity"
    name = "atom_hhg.toml" if gauge else name
    configs = [c.with_value("grid.stencil", stencil).with_value("propagator.scheme", scheme)
               for c in _batch_case(name, 3.0 if not gauge else 60.0, sets)]
    if gauge:
        configs = [c.with_value("field.gauge", "velocity") for c in configs]
    x = points(configs[0].grid)
    X0 = np.stack([initial_of(c, x, states.eigenstates(c, 0.0, 1)[1]) for c in configs], 1)
    rng = np.random.default_rng(7)      # a generic block, not only eigenstates
    X0 = X0 + 0.01 * (rng.standard_normal(X0.shape) + 1j * rng.standard_normal(X0.shape))
    (a, terms_a, g), (b, terms_b, _) = _graph_and_launched(configs, X0, j0=400 if gauge else 0)
    assert g, "the graph path was not taken"
    assert g.velocity == gauge
    # a block's DVR series in the folded basis (graphs.FOLD_HALVES), the launched one not
    assert (g.K2 is not None) == (stencil == "dvr" and len(configs) > 1 and not gauge)
    assert terms_a == terms_b
    assert np.abs(a - b).max() <= 1e-13 * np.abs(b).max()


@pytest.mark.gpu
def test_graph_dvr_block_folded_or_not_equals_the_launched_step(monkeypatch):
    """atom_hhg's block (masks, field) by the graphs with the series in the folded basis
    (graphs.FOLD_HALVES) and without it: both equal the launched step to 1e-13 after 30
    steps, so the one not taken at odd N stays checked."""
    from tdse.model.grid import points
    from tdse.model import states
    from tdse.numerics import graphs as G
    configs = _batch_case("atom_hhg.toml", 3.0, ("field.E0", [0.03, 0.06]))
    x = points(configs[0].grid)
    X0 = np.stack([initial_of(c, x, states.eigenstates(c, 0.0, 1)[1]) for c in configs], 1)
    rng = np.random.default_rng(11)
    X0 = X0 + 0.01 * (rng.standard_normal(X0.shape) + 1j * rng.standard_normal(X0.shape))
    got = {}
    for fold in (True, False):
        monkeypatch.setattr(G, "FOLD_HALVES", fold)
        (a, _, g), (b, _, _) = _graph_and_launched(configs, X0)
        assert (g.K2 is not None) == fold
        assert np.abs(a - b).max() <= 1e-13 * np.abs(b).max()
        got[fold] = a
    assert np.abs(got[True] - got[False]).max() > 0      # (two arithmetics, not one path twice)


@pytest.mark.gpu
@pytest.mark.parametrize("name,scheme,dt,n", [
    ("h2plus_moving.toml", "midpoint", 5e-4, 4200),   # moving centres, one exponential a step
    ("atom_hhg.toml", "cfm4", 0.1, 4200),             # field, absorber masks, two exponentials
    ("h2plus_moving.toml", "cfm4", 0.02, 700),        # FFT_MIN_N lowered: the launched GEMM
])
@pytest.mark.parametrize("four", ["1", "0"])
def test_graph_dvr_by_fft_beyond_the_gemm_equals_the_launched_step(name, scheme, dt, n, four,
                                                                     monkeypatch):
    """The DVR beyond DVR_GEMM_MAX_N (and at N = 700 with graph_fft.FFT_MIN_N lowered), one
    member: the graph's kinetic product by cuFFT nodes on padded buffers
    (graph_fft.FFTKinetic; the four-step FFT of 84 x 100, or one cuFFT call of 8400 with
    graph_fft.FOUR_STEP off) against the launched path (BlockOperator._kinetic: its FFT, its
    GEMM at N = 700) over 30 steps: psi to 1e-12 of its scale (the same products,
    the normalisation 1/2N and the scale k applied in another order: a few ulps a term over
    some 30 x 60-200 terms), the same Chebyshev work, the FFT path taken (no dense T)."""
    from tdse.model import hamiltonian, states
    from tdse.model.grid import points
    from tdse.numerics import graph_fft as F
    cfg = _batch_case(name, 3.0, ("propagator.scheme", [scheme]))[0].with_value(
        "grid.stencil", "dvr").with_value("time.dt", dt)
    cfg = cfg.with_value("grid.dx", (cfg.grid.x_max - cfg.grid.x_min) / n)
    assert (cfg.grid.n > hamiltonian.DVR_GEMM_MAX_N) == (n > 1000)
    monkeypatch.setattr(F, "FOUR_STEP", four == "1")
    monkeypatch.setattr(F, "FFT_MIN_N", 700)
    x = points(cfg.grid)
    rng = np.random.default_rng(n)
    X0 = initial_of(cfg, x, states.eigenstates(cfg, 0.0, 1)[1])[:, None]
    X0 = X0 + 0.01 * (rng.standard_normal(X0.shape) + 1j * rng.standard_normal(X0.shape))
    (a, terms_a, g), (b, terms_b, _) = _graph_and_launched([cfg], X0)
    assert g and g.fft is not None and g.T is None, "the graph's FFT path was not taken"
    assert g.fft.four_step == (four == "1")
    assert terms_a == terms_b and terms_a > 30 * 20
    assert np.abs(a - b).max() <= 1e-12 * np.abs(b).max()


@pytest.mark.gpu
@pytest.mark.parametrize("name,scheme,n,reg", [
    ("atom_hhg.toml", "cfm4", None, "1"),          # field, absorber masks; T's rows in registers
    ("atom_hhg.toml", "cfm4", None, "0"),          # the same, T read from L2 every term
    ("h2plus_moving.toml", "cfm4", 700, "1"),      # moving centres, no field
    ("h2plus_moving.toml", "midpoint", 1500, "1"),  # one exponential; N > 1024: T from L2
])
def test_one_kernel_exponential_equals_a_kernel_a_term(name, scheme, n, reg, monkeypatch):
    """#27: a whole exponential of one DVR member as one cooperative kernel (graphs._CHAIN,
    a grid barrier between Chebyshev terms) against the graph of a kernel a term it replaces:
    the same operations in the same order, so psi after 40 steps agrees to 1e-15 of its
    scale (FMA contraction is the only freedom), with the same Chebyshev work counted."""
    from tdse.model.grid import points
    from tdse.model import states
    from tdse.numerics.stepper import BatchStepper
    cfg = _batch_case(name, 3.0, ("grid.stencil", ["dvr"]))[0].with_value("propagator.scheme", scheme)
    if n:
        cfg = cfg.with_value("grid.dx", (cfg.grid.x_max - cfg.grid.x_min) / n)
    x = points(cfg.grid)
    rng = np.random.default_rng(5)
    X0 = initial_of(cfg, x, states.eigenstates(cfg, 0.0, 1)[1])[:, None]
    X0 = X0 + 0.01 * (rng.standard_normal(X0.shape) + 1j * rng.standard_normal(X0.shape))
    from tdse.numerics import graphs as G
    monkeypatch.setattr(G, "CHAIN_REG_ROWS", reg == "1")
    runs = {}
    for chain in ("1", "0"):
        monkeypatch.setattr(G, "CHEB_CHAIN", chain == "1")
        st = BatchStepper([cfg], cp)
        X = cp.asarray(X0)
        for j in range(40):
            X = st.step(X, j)
        runs[chain] = (cp.asnumpy(X), st.cheb_terms, st._graph)
    (a, ka, g), (b, kb, g0) = runs["1"], runs["0"]
    assert g.chain and not g0.chain
    assert g.chain_kernel == ("tdse_cheb_chain_reg" if reg == "1" and cfg.grid.n <= 1024 else "tdse_cheb_chain")
    assert ka == kb
    assert np.abs(a - b).max() <= 1e-15 * np.abs(b).max()


@pytest.mark.gpu
def test_one_kernel_exponential_by_a_plain_launch_equals_the_cooperative_one():
    """The fallback of graphs._CHAIN where a CUDA cannot capture a cooperative launch: the
    same kernel launched plainly (its grid at most one block an SM, so every block is
    resident) gives psi bit for bit equal to the cooperative launch, over 30 steps."""
    from tdse.model.grid import points
    from tdse.model import states
    from tdse.numerics.stepper import BatchStepper
    cfg = _batch_case("atom_hhg.toml", 3.0, ("grid.stencil", ["dvr"]))[0]
    x = points(cfg.grid)
    X0 = initial_of(cfg, x, states.eigenstates(cfg, 0.0, 1)[1])[:, None]
    out = {}
    for coop in (True, False):
        st = BatchStepper([cfg], cp)
        X = st.step(cp.asarray(X0), 0)
        g = st._graph
        assert g.chain
        if not coop:
            g.coop = False
            g.graphs.clear()             # captured again with the plain launch
        for j in range(1, 30):
            X = st.step(X, j)
        assert g.coop == coop
        out[coop] = cp.asnumpy(X)
    assert np.array_equal(out[True], out[False])


@pytest.mark.gpu
@pytest.mark.parametrize("name,stencil,scheme,n,tiling", [
    ("atom_hhg.toml", 3, "cfm4", None, "all"),            # field, absorber masks
    ("h2plus_moving.toml", 5, "midpoint", None, "all"),   # moving centres, 2 halo rows a term
    ("h2plus_moving_large.toml", 3, "midpoint", 8192, "all"),   # #59 item 3's case
    ("h2plus_moving_large.toml", 5, "cfm4", 16384, "all"),
    ("h2plus_moving.toml", 3, "cfm4", 777, "none"),       # a halo beyond TILE_SMEM: by terms
    ("atom_hhg.toml", 5, "cfm4", None, "mixed"),          # a step's exponentials both ways
    ("velocity", 3, "cfm4", None, "all"),                 # the velocity gauge's D x, A^2/2
    ("velocity", 5, "midpoint", None, "all"),
    ("velocity", 3, "cfm4", None, "mixed"),
])
def test_stencil_exponential_as_one_tiled_kernel_equals_the_other_paths(name, stencil, scheme, n,
                                                                        tiling, monkeypatch):
    """#59 item 3: one member's exponential on the 3-/5-point stencil as one kernel of
    overlapping tiles (chain.tdse_cheb_tile: no grid barrier, a halo of 1 or 2 rows a term)
    against the graph of two kernels a term (graphs.CHEB_TILE off) and the steps launched
    from Python, over 30 steps from a generic psi (a Gaussian plus noise): psi to 1e-13
    of its scale (the same operations in the same order; FMA contraction is the only
    freedom), the same Chebyshev work, a node an exponential where it is tiled."""
    from tdse.model.grid import points
    from tdse.numerics import graphs as G
    from tdse.numerics.stepper import BatchStepper
    gauge = name == "velocity"
    cfg = _batch_case("atom_hhg.toml" if gauge else name, 60.0 if gauge else 3.0,
                      ("grid.stencil", [stencil]))[0]
    cfg = cfg.with_value("propagator.scheme", scheme).with_value("propagator.method", "chebyshev")
    if gauge:
        cfg = cfg.with_value("field.gauge", "velocity")
    if n:
        cfg = cfg.with_value("grid.dx", (cfg.grid.x_max - cfg.grid.x_min) / n)
    if tiling == "none":                 # (32 terms: 23 fit in 3000 bytes at 32 rows a tile)
        monkeypatch.setattr(G, "TILE_SMEM", 3000)
    if tiling == "mixed":                # every other exponential tiled (the buffers' hand-over)
        calls = iter(range(10 ** 6))
        real = G.GraphStep._tiled
        monkeypatch.setattr(G.GraphStep, "_tiled", lambda self, K: real(self, K) and next(calls) % 2 == 0)
    x = points(cfg.grid)
    rng = np.random.default_rng(cfg.grid.n)
    X0 = (np.exp(-0.5 * x * x) + 0.01 * (rng.standard_normal(x.size) + 1j * rng.standard_normal(x.size)))[:, None]
    j0 = 400 if gauge else 0
    runs = {}
    for key in ("tile", "terms", "launched"):
        monkeypatch.setattr(G, "CHEB_TILE", key == "tile")
        st = BatchStepper([cfg], cp)
        st.graphs = key != "launched"
        X = cp.asarray(X0)
        for j in range(j0, j0 + 30):
            X = st.step(X, j)
        runs[key] = (cp.asnumpy(X), st.cheb_terms, st._graph)
    (a, ka, g), (b, kb, g0), (c, kc, _) = runs["tile"], runs["terms"], runs["launched"]
    assert g.tile and g0.tile is None and g.velocity == gauge
    assert ka == kb == kc
    if tiling != "mixed":
        tiled = [g._tiled(K) for p, _ in g.graphs for K in p]
        assert all(tiled) if tiling == "all" else not any(tiled)
        assert g.nodes_per_step in {g._nodes(p) for p, _ in g.graphs}
        assert (g.nodes_per_step == len(g.rows) + 1) == (tiling == "all")     # (+ the row's fetch)
    scale = np.abs(c).max()
    assert np.abs(a - c).max() <= 1e-13 * scale
    assert np.abs(a - b).max() <= 1e-13 * scale


@pytest.mark.gpu
@pytest.mark.parametrize("name,stencil,t_end", [
    ("h2plus_moving.toml", "dvr", 0.4),       # moving centres, the main job's numerics
    ("h2plus_moving.toml", 3, 0.4),
    ("atom_hhg.toml", "dvr", 6.0),            # a field (the absorber removed: Hermitian)
])
def test_dense_graph_step_equals_the_launched_dense_step(name, stencil, t_end):
    """#27 item 1, the dense exponent's small-N path: a step of psi as one CUDA graph
    (dense_graph.DenseGraphStep: B built in a kernel, mgemm.expm.evaluate's polynomial with cuBLAS
    called under capture, e^mu U psi in a kernel) against the step launched from Python
    (mgemm.expm, then U @ psi): final psi to 1e-12 of its scale, the same exponentials
    counted.  Only the order of the phase and of U psi's sums differ."""
    import dataclasses
    import tdse
    cfg = _batch_case(name, t_end, ("propagator.method", ["dense"]))[0].with_value("grid.stencil", stencil)
    cfg = dataclasses.replace(cfg, absorber=None)
    # one GPU: the graph path is the single-GPU small-N path (on several, bands)
    plan = tdse.prepare(cfg, backend="cupy", devices=[0], check_resolution=False)
    finals, counts = {}, {}
    from tdse.numerics import propagators
    for dense_graphs in (True, False):
        st = plan.stepper()
        assert isinstance(st.propagator, propagators.DenseGraphs)
        if not dense_graphs:
            st.propagator = propagators.Launched(st)
        finals[dense_graphs] = cp.asnumpy(tdse.evolve(plan, cp.asarray(plan.psi0), stepper=st).psi)
        counts[dense_graphs] = st.exponentials
        assert bool(getattr(st.propagator, "graph", False)) == dense_graphs
    assert counts[True] == counts[False] > 0
    assert np.abs(finals[True] - finals[False]).max() <= 1e-12 * np.abs(finals[False]).max()


@pytest.mark.gpu
@pytest.mark.parametrize("name,sets,t", [
    ("atom_hhg.toml", ("field.E0", [0.02, 0.05, 0.08]), 123.4),      # field and absorbing layers
    ("h2plus_moving.toml", ("potential.centres.amplitude", [0.1, 0.3]), 0.77),   # moving centres
    ("h2plus_moving.toml", ("potential.a", [0.7]), 1.3),
    # members with their own molecules: their own H(0) states (BlockMeasure's einsum, not
    # one shared GEMM), and centres whose motion ramps up (a GPU mutation run's survivors)
    ("h2plus_moving.toml", ("potential.a", [0.5, 0.7, 0.9]), 1.3),
    ("h2plus_moving.toml", ("potential.centres.ramp", [0.5, 2.0]), 0.4),
    # more members than SPLIT_MAX_MEMBERS: the 32-members-a-block kernel; 33: its second
    # block holds one member (a grid of (B + 31) // 33 blocks would drop it)
    ("atom_hhg.toml", ("field.E0", list(np.linspace(0.02, 0.08, 40))), 123.4),
    ("atom_hhg.toml", ("field.E0", list(np.linspace(0.02, 0.08, 33))), 123.4),
])
def test_device_observables_equal_the_host_definitions(name, sets, t):
    """BlockMeasure's one-kernel sums on the GPU (V and dV/dx evaluated in the kernel; the
    grid split over blocks up to SPLIT_MAX_MEMBERS members, 32 members a block beyond)
    against the same block measured with NumPy (#23 item 2) and each member's row by the
    single-state definitions (:class:`Measure`), for a random block: every observable to
    1e-12 of its scale."""
    from tdse.model.grid import points
    from tdse.model import states
    from tdse.model.observables import BlockMeasure
    from test_observables import measure_rows
    configs = _batch_case(name, 3.0, sets)
    x = points(configs[0].grid)
    rng = np.random.default_rng(11)
    phi = np.stack([states.eigenstates(c, 0.0, 4)[1] for c in configs])
    X0 = phi[:, 0].T.astype(complex)
    X = X0 + 0.3 * (rng.standard_normal(X0.shape) + 1j * rng.standard_normal(X0.shape))
    dev = BlockMeasure(configs, x, phi, X0, cp)
    host = BlockMeasure(configs, x, phi, X0, np)
    a = dev(t, cp.asarray(X))                                   # raw sums, finished on the host
    b = measure_rows(configs, x, phi, X0, t, X)
    d = {k: cp.asnumpy(v) for k, v in dev(t, cp.asarray(X), host=False).items()}
    c = host(t, X)
    assert set(a) == set(d) == set(c) == set(BlockMeasure.NAMES)
    for k in b:
        scale = max(1.0, np.abs(c[k]).max())
        for other in (a, b, d):
            assert np.abs(np.asarray(other[k]) - c[k]).max() <= 1e-12 * scale, k
    # a scan's light row (BlockMeasure.raw's skip): NaN where skipped, the rest as the full row's
    from tdse.model.observables import COSTLY
    r = dev.raw(t, cp.asarray(X), skip=tuple(COSTLY))
    e = dev.finish([t], {k: cp.asnumpy(cp.stack([v])) for k, v in r.items() if k != "t"})
    skipped = {n for names in COSTLY.values() for n in names}
    for k in e:
        if k in skipped:
            assert np.all(np.isnan(e[k])), k
        else:
            assert np.array_equal(np.asarray(e[k])[0], np.asarray(a[k])), k


@pytest.mark.gpu
@pytest.mark.parametrize("name,stencil,n", [
    ("atom_hhg.toml", 3, None),            # a field and absorbing layers
    ("h2plus_moving.toml", 5, None),       # moving centres
    ("h2plus_moving.toml", 3, 6000),       # a grid split over blocks (ROWS_POINTS), with a rest
    ("h2plus_moving.toml", "dvr", None),   # (a dense T: made N x B first, as before)
])
def test_a_block_of_rows_measured_as_it_lies_equals_the_block_made_n_by_b(name, stencil, n):
    """A single run's time block on the GPU (one configuration, B states at their own times,
    psi(0) and the layers one column each): BlockMeasure.raw of the transpose of its rows
    (each state contiguous: T X, the FFT and the sums along the rows, no copies) against
    the same block made N x B and against NumPy: every observable to 1e-12 of its scale."""
    from tdse.model.grid import points
    from tdse.model import states
    from tdse.model.observables import BlockMeasure
    cfg = _batch_case(name, 3.0, ("grid.stencil", [stencil]))[0]
    if n:
        cfg = cfg.with_value("grid.dx", (cfg.grid.x_max - cfg.grid.x_min) / n)
    B = 40
    x = points(cfg.grid)
    rng = np.random.default_rng(59)
    phi = states.eigenstates(cfg, 0.0, 4)[1][None]
    psi0 = phi[0, 0][:, None].astype(complex)
    rows = psi0.T + 0.3 * (rng.standard_normal((B, x.size)) + 1j * rng.standard_normal((B, x.size)))
    times = list(np.sort(rng.uniform(0.0, 3.0, B)))
    dev = BlockMeasure([cfg] * B, x, phi, psi0, cp)
    host = BlockMeasure([cfg] * B, x, phi, psi0, np)
    R = cp.asarray(rows)
    assert dev.psi0.shape == (x.size, 1)
    got, made = (dev.raw(None, Y, times=times) for Y in (R.T, cp.ascontiguousarray(R.T)))
    ref = host.raw(None, rows.T, times=times)
    for k in ("sums", "amps"):                 # (9 or K, B): each sum to its own scale
        want = np.asarray(ref[k])
        scale = np.maximum(1.0, np.abs(want).max(axis=1, keepdims=True))
        for other in (got, made):
            assert np.all(np.abs(cp.asnumpy(other[k]) - want) <= 1e-12 * scale), k
        if stencil == "dvr":
            assert np.array_equal(cp.asnumpy(got[k]), cp.asnumpy(made[k])), k


@pytest.mark.gpu
@pytest.mark.parametrize("name,stencil,t_end", [
    ("atom_hhg.toml", "dvr", 20.0),          # field, absorber masks; the DVR by GEMM vs FFT
    ("h2plus_moving.toml", 3, 1.0),          # moving centres: H(t) eigenpairs each observation
    ("h2plus_moving.toml", "dvr", 1.0),
    ("velocity", "dvr", 20.0),               # the velocity gauge (#55): its own bounds
    ("velocity", 5, 20.0),
])
def test_single_run_graph_steps_and_device_observables(name, stencil, t_end, monkeypatch):
    """A single run on one GPU (#27 item 1, #23 item 2): its steps replayed from a CUDA graph
    against the steps launched from Python (final psi to 1e-10: the graph applies the DVR's T
    by GEMM, the launched path by FFT), and its observables kept on the device and copied at
    the snapshots against the host definitions (tdse.model.observables.Measure) in the same
    run, every dataset to 1e-10 of its scale; the NumPy run agrees as well."""
    import tdse
    gauge = name == "velocity"
    cfg = _batch_case("atom_hhg.toml" if gauge else name, t_end,
                      ("propagator.method", ["chebyshev"]))[0].with_value("grid.stencil", stencil)
    if gauge:
        cfg = cfg.with_value("field.gauge", "velocity")
    plan = tdse.prepare(cfg, backend="cupy", check_resolution=False)
    finals = {}
    from tdse.numerics import propagators
    for graphs in (True, False):
        st = plan.stepper()
        assert isinstance(st.propagator, propagators.ChebyshevGraphs)
        if not graphs:
            st.propagator = propagators.Launched(st)
        finals[graphs] = cp.asnumpy(tdse.evolve(plan, cp.asarray(plan.psi0), stepper=st).psi)
        if graphs:
            assert st.propagator.graph, "the graph path was not taken"
            terms = st.cheb_terms
        else:
            assert st.cheb_terms == terms
    assert np.abs(finals[True] - finals[False]).max() <= 1e-10 * np.abs(finals[False]).max()
    dev = tdse.simulate(cfg, backend="cupy")
    from tdse.run import rows
    monkeypatch.setattr(rows, "BLOCK_OBSERVABLES", False)
    host = tdse.simulate(cfg, backend="cupy", options={"graphs": False})
    cpu = tdse.simulate(cfg, backend="numpy")
    assert set(dev.observables) == set(host.observables)
    for k, ref in host.observables.items():
        scale = max(1.0, np.abs(ref).max())     # yield = 1 - norm: its error is relative to 1
        assert np.abs(np.asarray(dev.observables[k]) - ref).max() <= 1e-10 * scale, k
        assert np.abs(np.asarray(cpu.observables[k]) - ref).max() <= 1e-10 * scale, k


@pytest.mark.gpu
@pytest.mark.parametrize("name,stencil,t_end,every", [
    ("h2plus_moving.toml", 3, 2.0, 7),       # the tiled one-kernel step; populations every 7
    ("h2plus_moving.toml", "dvr", 2.0, 5),   # the DVR's chain kernel
    ("atom_hhg.toml", "dvr", 20.0, None),    # a static molecule: every row H(0)'s populations
])
def test_rows_filled_by_the_graph_steps_equal_a_save_point_a_row(name, stencil, t_end, every,
                                                                  monkeypatch):
    """A GPU run's rows tapped by the graph step (psi's buffer copied into the block's slot
    after the step: tdse.numerics.graphs.GraphStep.advance) equal those of a save point a
    row (psi copied out and into the slot), bit for bit: the same steps, the same block
    measure."""
    import tdse
    from tdse.run import rows
    cfg = _batch_case(name, t_end, ("propagator.method", ["chebyshev"]))[0].with_value(
        "grid.stencil", stencil).with_value("output.every", 10)
    if every:
        cfg = cfg.with_value("output.populations_every", every)
    monkeypatch.setattr(rows, "TIME_BLOCK_GPU", 64)        # several blocks
    tapped = tdse.simulate(cfg, backend="cupy")
    monkeypatch.setattr(rows, "TAP_ROWS", False)
    each = tdse.simulate(cfg, backend="cupy")
    for k, ref in each.observables.items():
        got, ref = np.asarray(tapped.observables[k]), np.asarray(ref)
        assert np.array_equal(got, ref, equal_nan=got.dtype.kind == "f"), k
    assert len(ref) == cfg.time.steps + 1


@pytest.mark.gpu
@pytest.mark.parametrize("stencil,scheme", [(3, "cfm4"), (3, "midpoint"), ("dvr", "cfm4")])
def test_graph_taps_and_segments_equal_a_step_at_a_time(stencil, scheme):
    """GraphStep.advance over segments (the steps' rows uploaded at once, fetched by each
    step's graph; one advance crossing two chunks, one starting mid-chunk) with taps into
    two blocks' rows (the graph's tap kernel -- on the 3-point stencil the last tiled
    exponential's, its result in either buffer: cfm4's two exponentials, midpoint's one --,
    both at one step too) and into a third block's row and a lone array (a memcpy after
    the launch), against one advance a step with the states copied out: the same bits."""
    import tdse
    from tdse.numerics.graph_plan import CHUNK
    cfg = _batch_case("h2plus_moving.toml", 2.0, ("propagator.method", ["chebyshev"]))[0].with_value(
        "grid.stencil", stencil).with_value("propagator.scheme", scheme)
    plan = tdse.prepare(cfg, backend="cupy", check_resolution=False)
    n = cfg.grid.n
    psi0 = cp.asarray(plan.psi0)
    want = {3: "block0", 7: "two", 50: "block1", CHUNK + 9: "lone", CHUNK + 10: "block2"}
    ref, st = {}, plan.stepper()
    X = psi0
    for j in range(0, CHUNK + 20):
        X = st.advance(X, j, j + 1)
        if j + 1 in want:
            ref[j + 1] = cp.asnumpy(X)
    final_ref = cp.asnumpy(X)
    st = plan.stepper()
    block, lone = cp.zeros((4, n), dtype=cp.complex128), cp.zeros(n, dtype=cp.complex128)
    other, third = cp.zeros((3, n), dtype=cp.complex128), cp.zeros((2, n), dtype=cp.complex128)
    taps = {3: [block[0]], 7: [other[1], third[1], other[0]], 50: [block[1], other[2]],
            CHUNK + 9: [lone], CHUNK + 10: [block[2]]}
    X = st.advance(psi0, 0, 2)
    X = st.advance(X, 2, CHUNK + 20, taps=taps)          # from mid-chunk, across a chunk
    g = st.propagator.graph
    assert g and len(g.tap_to) == 2 and g.tap_to[0] is block and g.tap_to[1] is other
    assert max(k for _, k in g.graphs) > 1           # runs of steps launched as one graph
    assert g.tapped == (stencil == 3)                # the rows written by tdse_cheb_tile
    assert g.nodes_per_step == g._exp_nodes(next(iter(g.graphs))[0]) + 1 + (stencil != 3)
    got = {3: block[0], 7: other[1], 50: block[1], CHUNK + 9: lone, CHUNK + 10: block[2]}
    for k in want:
        assert np.array_equal(cp.asnumpy(got[k]), ref[k]), k
    for a, k in ((third[1], 7), (other[0], 7), (other[2], 50)):  # (third: a memcpy; other[0]:
        assert np.array_equal(cp.asnumpy(a), ref[k]), k           #  its block's slot taken)
    assert np.array_equal(cp.asnumpy(X), final_ref)
    assert not cp.asnumpy(block[3]).any() and not cp.asnumpy(third[0]).any()   # untouched


@pytest.mark.gpu
@pytest.mark.parametrize("stencil", [3, "dvr"])
def test_runs_of_steps_in_one_graph_give_the_bits_of_a_graph_a_step(monkeypatch, stencil):
    """GraphStep.advance launches a run of steps of one pattern as graphs of 2^k steps
    (graphs.MULTI_STEPS): a moving-centre run of several chunks, its rows tapped, gives psi
    and every observable bit for bit as with one graph a step (MULTI_STEPS = 1)."""
    import tdse
    from tdse.numerics import graphs as G
    cfg = _batch_case("h2plus_moving.toml", 3 * G.CHUNK * 0.02 + 0.1,
                      ("propagator.method", ["chebyshev"]))[0].with_value("grid.stencil", stencil)
    out = {}
    for most in (1, G.MULTI_STEPS):
        monkeypatch.setattr(G, "MULTI_STEPS", most)
        res = tdse.simulate(cfg, backend="cupy")
        out[most] = (res.psi, res.observables)
    (a, oa), (b, ob) = out[1], out[G.MULTI_STEPS]
    assert np.array_equal(np.asarray(a), np.asarray(b))
    for k in oa:
        assert np.array_equal(np.asarray(oa[k]), np.asarray(ob[k]), equal_nan=True), k


@pytest.mark.gpu
def test_graph_steps_planned_ahead_in_a_thread_are_the_same_bit_for_bit(monkeypatch):
    """GraphStep._plan: the next chunk's scalars planned in a thread while this chunk steps
    give the run planned chunk by chunk in the loop, bit for bit, over several chunks (and
    the planning thread was used)."""
    import tdse
    from tdse.numerics import graph_plan, graphs as G
    cfg = _batch_case("h2plus_moving.toml", 3 * G.CHUNK * 0.02 + 0.1,
                      ("propagator.method", ["chebyshev"]))[0]
    plan = tdse.prepare(cfg, backend="cupy", check_resolution=False)
    finals, submitted = {}, []
    pool = graph_plan.planning_thread()
    real = pool.submit
    monkeypatch.setattr(pool, "submit", lambda *a: submitted.append(graph_plan.plan_ahead()) or real(*a))
    for ahead in (True, False):
        monkeypatch.setattr(graph_plan, "PLAN_AHEAD", ahead)
        st = plan.stepper()
        finals[ahead] = cp.asnumpy(tdse.evolve(plan, cp.asarray(plan.psi0), stepper=st).psi)
        assert st.propagator.graph, "the graph path was not taken"
    assert np.array_equal(finals[True], finals[False])
    assert submitted.count(True) >= 3 and False not in submitted


@pytest.mark.gpu
@pytest.mark.parametrize("K,n", [(4, 500), (4, 8192), (3, 37)])
def test_the_amplitudes_kernel_is_the_product_with_the_same_bits_in_every_run(K, n):
    """tdse.backends.cupy.measure.amplitudes: phi @ X.T against NumPy's product (to 1e-13
    of sum |phi_i| |x_i|, rounding over n terms), and each row's bits the same whatever the
    run of rows it is computed in (alone, 2, 63 or 64 rows, at any place) -- cuBLAS's
    product gives a row alone, a run of 2-63 and one of 64 other bits (the rows' blocks:
    tdse.run.rows._BlockRows._amplitudes)."""
    from tdse.backends.cupy.measure import amplitudes
    rng = np.random.default_rng(n)
    phi = rng.standard_normal((K, n)) + 1j * rng.standard_normal((K, n))
    B = rng.standard_normal((64, n)) + 1j * rng.standard_normal((64, n))
    P, X = cp.asarray(phi), cp.asarray(B)
    whole = amplitudes(cp, P, X).get()
    ref = phi @ B.T
    scale = np.abs(phi) @ np.abs(B).T
    assert np.all(np.abs(whole - ref) <= 1e-13 * scale)
    for i0, r in ((0, 1), (5, 1), (63, 1), (0, 2), (7, 2), (1, 63), (0, 63), (30, 17)):
        assert np.array_equal(amplitudes(cp, P, X[i0:i0 + r]).get(), whole[:, i0:i0 + r]), (i0, r)
    assert amplitudes(cp, P, X[:0]).shape == (K, 0)


@pytest.mark.gpu
def test_device_rows_with_populations_every_equal_the_cpu_run():
    """output.populations_every = 5 on the device rows (#23 item 3): the rows between carry
    NaN in H(t)'s populations, <n> and E_n(t) exactly where the CPU run does, and every value
    equals the CPU run's to 1e-10 of its scale."""
    import tdse
    cfg = _batch_case("h2plus_moving.toml", 0.46, ("propagator.method", ["chebyshev"]))[0]
    cfg = cfg.with_value("output.populations_every", 5)
    dev = tdse.simulate(cfg, backend="cupy").observables
    cpu = tdse.simulate(cfg, backend="numpy").observables
    assert np.isnan(np.asarray(cpu["n_mean"])).any()
    for k, ref in cpu.items():
        ref, got = np.asarray(ref), np.asarray(dev[k])
        gap = np.isnan(ref) if ref.dtype.kind == "f" else np.zeros(ref.shape, bool)
        assert (np.isnan(got) == gap).all() if ref.dtype.kind == "f" else True, k
        scale = max(1.0, np.nanmax(np.abs(ref)))
        assert np.nanmax(np.abs(got - ref)) <= 1e-10 * scale, k


@pytest.mark.gpu
@pytest.mark.parametrize("stencil, n", [(5, None), ("dvr", None), ("dvr", 768)])
def test_iterative_eigenpairs_on_the_gpu(stencil, n):
    """tracker.Tracker with CuPy (the Davidson iteration's products, QR and Rayleigh-Ritz on
    the device, the banded corrections on the host) against the dense host solver along a
    moving-centre run: populations of a random psi to 1e-10 (#23 item 1); the DVR at
    N = 768 starts each call from a sub-grid's dense pairs (states.sub_start, #59 item 5)."""
    from tdse.model import states, tracker
    cfg = _batch_case("h2plus_moving.toml", 1.0, ("grid.stencil", [stencil]))[0]
    if n is not None:
        cfg = cfg.with_value("grid.dx", (cfg.grid.x_max - cfg.grid.x_min) / n)
        assert cfg.grid.n == n >= states.SUB_MIN_N
    n, dx = cfg.grid.n, cfg.grid.dx
    rng = np.random.default_rng(4)
    psi = rng.standard_normal(n) + 1j * rng.standard_normal(n)
    psi /= np.sqrt(np.sum(np.abs(psi) ** 2) * dx)
    tr = tracker.Tracker(cfg, 4, xp=cp, direct_max=0)
    for j in range(8):
        E, phi = tr(0.05 * j)
        Ed, phid = states.eigenstates(cfg, 0.05 * j, 4)
        assert np.abs(np.abs(phi @ psi * dx) ** 2 - np.abs(phid @ psi * dx) ** 2).max() < 1e-10
        assert np.abs(E - Ed).max() < 1e-9
    assert tr.sub_calls == (tr.calls if n >= states.SUB_MIN_N and stencil == "dvr" else 0)


@pytest.mark.gpu
def test_converge_study_on_the_gpu_equals_the_cpu(inputs_dir):
    """`tdse converge --backend cupy` (#23 item 4): each run of the study stepped on the
    GPU samples the CPU run's populations, <n>, <H>, yield, acceleration and final psi to
    1e-10, and the study states the same error for the input (to 1e-3 of itself: the
    errors are differences of those samples, >= 1e-7 here) and the same recommendation."""
    from tdse import config as cfgmod
    from tdse.studies.converge import observe, study
    cfg = cfgmod.load(os.path.join(inputs_dir, "h2plus_moving.toml")).with_value(
        "time.t_end", 0.4)
    times = [0.1, 0.2, 0.4]
    a, b = observe(cfg, times, 4, backend="numpy"), observe(cfg, times, 4, backend="cupy")
    assert (a["backend"], b["backend"]) == ("numpy", "cupy")     # stepped where asked
    for k in ("P_h0", "P_ht", "n_mean", "energy", "yield", "acceleration", "psi"):
        x, y = np.asarray(a[k]), np.asarray(b[k])
        assert x.shape == y.shape and np.abs(x - y).max() <= 1e-10 * max(1.0, np.abs(x).max()), k
    cpu = study(cfg, levels=2, samples=4, box=1.5, backend="numpy")
    gpu = study(cfg, levels=2, samples=4, box=1.5, backend="cupy")
    assert gpu["backend"] == "cupy"
    ea = cpu["input_numerics"]["estimated_error"]
    eb = gpu["input_numerics"]["estimated_error"]
    assert ea > 1e-7 and abs(ea - eb) <= 1e-3 * ea
    assert cpu["recommendation"]["found"] == gpu["recommendation"]["found"]


@pytest.mark.gpu
def test_expm_memory_model_and_refusal_on_the_gpu():
    """#23 item 5: the bytes mgemm.expm predicts for its plan (the ghost dry run) against
    the high-water mark of CuPy's pool in the real call (the pool modelled: never above the
    prediction by more than 1 %, conservative by at most two real matrices); with a pool limit below the need, expm refuses
    before allocating anything (used bytes unchanged), naming the largest N that fits, and
    exp(A) of that N runs under the same limit, equal to the eigendecomposition's."""
    import re
    from mgemm.expm import ExpmMemoryError, memory_bytes
    pool = cp.get_default_memory_pool()
    n = 3000
    rng = np.random.default_rng(8)
    H = rng.standard_normal((n, n))
    H = (H + H.T) / 2
    A = cp.asarray(-1j * 0.02 * H)
    plan, _ = mgemm.expm_plan_for(A, tolerance=1e-12)
    assert plan.path == "split"
    cp.cuda.Device().synchronize()
    pool.free_all_blocks()
    before = pool.total_bytes()
    U = mgemm.expm(A, plan=plan)
    cp.cuda.Device().synchronize()
    high = pool.total_bytes() - before
    predicted = memory_bytes(n, plan, A.dtype)
    assert high <= 1.01 * predicted and predicted - high <= 2 * 8 * n * n, (high, predicted)
    del U
    pool.free_all_blocks()
    used = pool.used_bytes()
    pool.set_limit(size=used + predicted // 2)      # (the usable part of it: less the reserve)
    try:
        with pytest.raises(ExpmMemoryError) as err:
            mgemm.expm(A, plan=plan)
        assert pool.used_bytes() == used                  # refused before any allocation
        msg = str(err.value)
        largest = int(re.search(r"largest N that fits \(with its input\) is (\d+)", msg).group(1))
        assert 1000 < largest < n
        Hs = H[:largest, :largest]
        U = mgemm.expm(cp.asarray(-1j * 0.02 * Hs), tolerance=1e-12)
        cp.cuda.Device().synchronize()
    finally:
        pool.set_limit(size=0)
    w, V = np.linalg.eigh(Hs)
    ref = (V * np.exp(-1j * 0.02 * w)) @ V.T
    assert np.abs(cp.asnumpy(U) - ref).max() < 1e-11


@pytest.mark.gpu
@pytest.mark.parametrize("n", [301, 5000])
def test_dvr_operator_on_gpu_equals_the_dense_matrix(n):
    """The DVR's Operator on CuPy (the circulant embedding by cupy.fft) on a vector and on a
    block: alpha (scale T + diag(v) - shift) X with the dense Toeplitz T and the NumPy
    Operator's, to 1e-12 relative; the result stays on the GPU, complex128."""
    import tdse
    from tdse.model.hamiltonian import Operator, kinetic_dense
    cfg = tdse.load_config(os.path.join(ROOT, "inputs", "tiny.toml")).with_value(
        "grid.stencil", "dvr").with_value("grid.x_max", -6.4 + 0.2 * n)
    g = cfg.grid
    assert g.n == n
    rng = np.random.default_rng(n)
    v = rng.uniform(-3, 1, n)
    scale, alpha, shift = 0.7, -0.3, 1.25
    T = kinetic_dense(g)
    for X in (rng.standard_normal(n) + 1j * rng.standard_normal(n),
              rng.standard_normal((n, 3)) + 1j * rng.standard_normal((n, 3))):
        vv = v if X.ndim == 1 else v[:, None]
        ref = alpha * (scale * (T @ X) + (vv - shift) * X)
        got = Operator(cfg, scale, v, xp=cp, alpha=alpha, shift=shift)(cp.asarray(X))
        assert isinstance(got, cp.ndarray) and got.dtype == cp.complex128 and got.shape == X.shape
        host = Operator(cfg, scale, v, alpha=alpha, shift=shift)(X)
        assert np.linalg.norm(got.get() - ref) <= 1e-12 * np.linalg.norm(ref)
        assert np.linalg.norm(got.get() - host) <= 1e-12 * np.linalg.norm(ref)


def _cfg(stencil, n, absorber=False):
    """tiny.toml (moving centres, a field) with ``stencil`` on ``n`` points; with an absorber."""
    import tdse
    cfg = tdse.load_config(os.path.join(ROOT, "inputs", "tiny.toml")).with_value(
        "grid.stencil", stencil).with_value("grid.x_max", -6.4 + 0.2 * n)
    if absorber:
        cfg = cfg.with_value("absorber.width", 2.0).with_value("absorber.strength", 0.3)
    assert cfg.grid.n == n
    return cfg


@pytest.mark.gpu
@pytest.mark.parametrize("stencil", [3, 5, "dvr"])
def test_dense_and_apply_on_the_gpu_equal_the_host(stencil):
    """The public builders on CuPy (#28: their CuPy branches were reached by no test):
    hamiltonian.dense(config, t, cupy) is the host matrix (on the GPU, the same dtype; with
    an absorber complex), and hamiltonian.apply with a CuPy psi and no ``xp`` finds the
    device itself: the host's (scale T + diag v) psi for a vector and a block, to 1e-13."""
    from tdse.model import hamiltonian
    for absorber in (False, True):
        cfg = _cfg(stencil, 151, absorber)
        H = hamiltonian.dense(cfg, 0.37, cp)
        ref = hamiltonian.dense(cfg, 0.37)
        assert isinstance(H, cp.ndarray) and H.dtype == ref.dtype and H.shape == ref.shape
        assert np.abs(H.get() - ref).max() <= 1e-13 * np.abs(ref).max()
    cfg = _cfg(stencil, 151)
    rng = np.random.default_rng(11)
    v = rng.uniform(-2, 1, 151)
    for X in (rng.standard_normal(151) + 1j * rng.standard_normal(151),
              rng.standard_normal((151, 3)) + 1j * rng.standard_normal((151, 3))):
        ref = hamiltonian.apply(cfg, X, v, np, 0.6)
        got = hamiltonian.apply(cfg, cp.asarray(X), v, scale=0.6)
        assert isinstance(got, cp.ndarray) and got.shape == X.shape
        assert np.abs(got.get() - ref).max() <= 1e-13 * np.abs(ref).max()


@pytest.mark.gpu
@pytest.mark.parametrize("stencil,n", [(3, 200), (5, 201), ("dvr", 300), ("dvr", 4099)])
def test_block_operator_on_the_gpu_equals_the_definition(stencil, n, monkeypatch):
    """BlockOperator on CuPy, each kinetic path (the band kernel built by this call: the
    kernel caches emptied first; the DVR's GEMM; the DVR's FFT beyond DVR_GEMM_MAX_N), as
    an operator and as one Chebyshev term (recur): alpha (scale T X + (V - shift) X) with
    the dense T and each column's own V, and Z - P, Y + a Z, to 1e-12 relative."""
    from tdse.model import hamiltonian
    from tdse.model.hamiltonian import BlockOperator, kinetic_dense
    from tdse.backends.cupy import stencil as kernels
    monkeypatch.setattr(kernels, "_CACHE", {})
    g = _cfg(stencil, n).grid
    assert (n > hamiltonian.DVR_GEMM_MAX_N) == (n == 4099)
    rng = np.random.default_rng(n)
    B = 3
    V = rng.uniform(-3, 1, (n, B))
    scale, alpha, shift, a = 0.7, -0.3, 1.25, 0.4 - 0.2j
    T = kinetic_dense(g)
    X, P, Y = (rng.standard_normal((n, B)) + 1j * rng.standard_normal((n, B)) for _ in range(3))
    ref = alpha * (scale * (T @ X) + (V - shift) * X)
    op = BlockOperator(g, scale, cp.asarray(V), cp, alpha, shift)
    got = op(cp.asarray(X))
    assert isinstance(got, cp.ndarray) and got.shape == X.shape
    assert np.linalg.norm(got.get() - ref) <= 1e-12 * np.linalg.norm(ref)
    Yd = cp.asarray(Y)
    z = op.recur(cp.asarray(X), cp.asarray(P), Yd, a)
    assert np.linalg.norm(z.get() - (ref - P)) <= 1e-12 * np.linalg.norm(ref)
    assert np.linalg.norm(Yd.get() - (Y + a * (ref - P))) <= 1e-12 * np.linalg.norm(ref)


@pytest.mark.gpu
def test_chebyshev_expm_apply_finds_the_gpu_itself():
    """chebyshev.expm_apply with a CuPy block and no ``xp`` (the module found from X): the
    host's exp(-i tau G) X for the same G, to 1e-12, on the GPU."""
    from tdse.numerics import chebyshev
    rng = np.random.default_rng(5)
    n = 64
    A = rng.standard_normal((n, n))
    G = (A + A.T) / 2
    w = np.linalg.eigvalsh(G)
    X = rng.standard_normal((n, 2)) + 1j * rng.standard_normal((n, 2))
    Gd = cp.asarray(G)
    got, info = chebyshev.expm_apply(lambda Y: Gd @ Y, cp.asarray(X), 0.8, w[0], w[-1], 1e-14)
    ref, _ = chebyshev.expm_apply(lambda Y: G @ Y, X, 0.8, w[0], w[-1], 1e-14)
    assert isinstance(got, cp.ndarray) and info["terms"] > 5
    assert np.abs(got.get() - ref).max() <= 1e-12 * np.abs(ref).max()


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.complex128, np.complex64])
@pytest.mark.parametrize("theta,split,method,formulas", [
    (3.0, True, "auto", False), (40.0, True, "auto", False), (0.5, True, "taylor", False),
    (3.0, False, "auto", False), (40.0, False, "auto", False), (3.0, False, "auto", True)])
def test_expm_pool_model_is_exact_on_the_gpu(dtype, theta, split, method, formulas):
    """memory_bytes (the ghost dry run with the modelled pool) against what CuPy's pool
    holds after mgemm.expm, for plans of each path and kind: never below it, and above by
    at most two matrices of A's dtype: the input the model counts though the caller already
    holds it, and a block CuPy merged from freed neighbours where the model keeps two
    (measured on one H200: 0 or 1 matrix at N = 2048, benchmarks/results/expm_pool_probe_*;
    2 for the complex64 complex path at N = 1024)."""
    from mgemm.expm import memory_bytes
    from mgemm.plan import plan_expm
    n = 1024
    u, tol = (2.0 ** -53, 1e-12) if dtype == np.complex128 else (2.0 ** -24, 1e-6)
    plan = plan_expm(theta, method=method, terms=12, tolerance=tol, unit_roundoff=u,
                     split=split, unitary=True, use_formulas=formulas)
    rng = np.random.default_rng(5)
    S = rng.standard_normal((n, n))
    S = (S + S.T) / np.abs(S + S.T).sum(axis=0).max()
    A = cp.asarray(((-1j * theta * S) if split else theta * (S + 0.5j * S.T) / 1.5).astype(dtype))
    from mgemm.tools.common import free_gpu_memory
    cp.cuda.Device().synchronize()
    free_gpu_memory(cp)       # mgemm's kept band buffers dropped, earlier tests' arrays freed
    # expm's allocations in a pool of their own, so that what earlier tests left in the
    # shared pool (free blocks in chunks still partly in use) cannot serve them: measured
    # there, an H100 (2026-11-26) held 4 matrices under the model in 6 of these cases
    pool = cp.cuda.MemoryPool()
    cp.cuda.set_allocator(pool.malloc)
    try:
        U = mgemm.expm(A, plan=plan)
        cp.cuda.Device().synchronize()
        held, ok = pool.total_bytes(), U.dtype == dtype
        del U
    finally:
        cp.cuda.set_allocator(cp.get_default_memory_pool().malloc)
    pool.free_all_blocks()
    predicted = memory_bytes(n, plan, dtype)
    assert ok and 0 <= predicted - held <= 2 * n * n * np.dtype(dtype).itemsize, (held, predicted)


@pytest.mark.gpu
def test_expm_band_layout_on_one_gpu():
    """layout='bands' on the GPU A lives on (``devices`` not given, or [its id]): the trace
    records the layout's work on that GPU, the result comes back whole on A's device and
    equals the 'gemm' layout's; one listed GPU keeps the 'gemm' layout (nothing traced);
    an int ``devices`` (virtual host devices) is refused for a CuPy A."""
    import scipy.linalg
    rng = np.random.default_rng(21)
    n = 300
    H = rng.standard_normal((n, n))
    A = -0.05j * (H + H.T) / 2
    with cp.cuda.Device(0):
        Ag = cp.asarray(A)
        U0 = mgemm.expm(Ag)
        for kw in ({}, {"devices": [0]}):
            tr = []
            U = mgemm.expm(Ag, layout="bands", trace=tr, **kw)
            assert isinstance(U, cp.ndarray) and U.device.id == 0 and U.dtype == Ag.dtype
            assert tr and all(row[0] == 0 for row in tr)
            assert float(cp.abs(U - U0).max()) < 1e-13
            Ub = mgemm.expm(Ag, layout="bands", output="banded", **kw)
            assert len(Ub.bands) == 1 and Ub.layout.gpu and Ub.layout.devices == [0]
        tr = []
        mgemm.expm(Ag, devices=[0], trace=tr)
        assert tr == []
        with pytest.raises(ValueError, match="devices must list GPU ids for a CuPy A, got devices=2"):
            mgemm.expm(Ag, layout="bands", devices=2)
    assert np.abs(U0.get() - scipy.linalg.expm(A)).max() < 1e-12


@pytest.mark.gpu
def test_banded_input_is_refused_when_it_cannot_fit():
    """A banded input (built in place on the GPU) goes through the same memory fit as an
    array: with the pool limited to three more matrices (room for the O(N^2) detection of
    theta, not for the exponent or the 256 MiB reserve), expm refuses with the bytes needed."""
    from mgemm.dist import Layout
    from mgemm.expm import ExpmMemoryError
    pool = cp.get_default_memory_pool()
    n = 2000
    rng = np.random.default_rng(4)
    S = rng.standard_normal((n, n))
    S = cp.asarray(-0.02j * (S + S.T))
    lay = Layout(n, [0])
    A = lay.from_columns(lambda c0, c1: S[:, c0:c1])
    del S
    cp.cuda.Device(0).synchronize()
    pool.free_all_blocks()
    pool.set_limit(size=pool.used_bytes() + 3 * 16 * n * n)
    try:
        with pytest.raises(ExpmMemoryError, match=r"N = 2000 needs .* GiB on each of 1 device"):
            mgemm.expm(A)
    finally:
        pool.set_limit(size=0)


@pytest.mark.gpu
def test_free_bytes_counts_the_pools_unused_blocks():
    """free_bytes: the driver's free memory plus the pool's cached blocks, capped by the
    pool's limit: 1 GiB held drops it by 1 GiB, the same GiB freed to the pool restores it."""
    from mgemm.expm import free_bytes
    pool = cp.get_default_memory_pool()
    gib, slack = 2 ** 30, 64 * 2 ** 20
    with cp.cuda.Device(0):
        pool.free_all_blocks()
        f0 = free_bytes(cp, 0)
        assert 0 < f0 < cp.cuda.runtime.memGetInfo()[1]
        x = cp.empty(gib, dtype=cp.uint8)
        assert abs((f0 - free_bytes(cp, 0)) - gib) < slack
        del x                     # back to the pool, not the driver: still free for expm
        assert pool.free_bytes() >= gib and abs(free_bytes(cp, 0) - f0) < slack
        pool.set_limit(size=pool.used_bytes() + 2 ** 28)
        try:
            assert free_bytes(cp, 0) == 2 ** 28
        finally:
            pool.set_limit(size=0)
            pool.free_all_blocks()


@pytest.mark.multi_gpu(2)
@pytest.mark.parametrize("given", ["devices", "layout"])
def test_expm_checks_every_gpus_memory(given):
    """The memory fit counts each band device's own free memory: with GPU 1's pool limited
    to 128 MiB (below the 256 MiB reserve) and GPU 0 free, expm over [0, 1] -- by
    ``devices`` or by a given Layout -- refuses before any work, not with CuPy's
    out-of-memory error mid-way (#28: a check of GPU 0 twice, or of the current device,
    passes here and then fails on GPU 1)."""
    from mgemm.dist import Layout
    from mgemm.expm import ExpmMemoryError, free_bytes
    n = 1024
    rng = np.random.default_rng(11)
    S = rng.standard_normal((n, n))
    pool = cp.get_default_memory_pool()
    with cp.cuda.Device(0):
        A = cp.asarray(-0.05j * (S + S.T))
        free0 = free_bytes(cp, 0)
    with cp.cuda.Device(1):
        pool.free_all_blocks()
        pool.set_limit(size=pool.used_bytes() + 2 ** 27)
    try:
        with cp.cuda.Device(0):
            assert free_bytes(cp, 1) == 2 ** 27 and abs(free_bytes(cp, 0) - free0) < 2 ** 26
            kw = {"devices": [0, 1]} if given == "devices" else {"layout": Layout(n, [0, 1])}
            with pytest.raises(ExpmMemoryError, match=r"N = 1024 needs .* GiB on each of 2 device"):
                mgemm.expm(A, **kw)
    finally:
        with cp.cuda.Device(1):
            pool.set_limit(size=0)


@pytest.mark.multi_gpu(2)
def test_expm_result_returns_to_the_inputs_gpu():
    """A on GPU 1, its bands on GPUs 0 and 1: the gathered result (on GPU 0) is copied back
    to GPU 1, where A lives, and equals the eigendecomposition's exponential."""
    A, ref = _hermitian_case(768, np.complex128)
    with cp.cuda.Device(1):
        Ag = cp.asarray(A)
    with cp.cuda.Device(0):
        U = mgemm.expm(Ag, devices=[0, 1])
    assert isinstance(U, cp.ndarray) and U.device.id == 1 and U.dtype == np.complex128
    with cp.cuda.Device(1):
        err = np.linalg.norm(U.get() - ref) / np.linalg.norm(ref)
    assert err < 1e-12, err


@pytest.mark.gpu
def test_deferred_snapshots_write_the_same_file(tmp_path, monkeypatch):
    """psi on a GPU: each snapshot's copy is started at its step and written once it has
    run or SNAPSHOTS_IN_FLIGHT later ones have started (#23 item 3: no wait for the device
    at a snapshot).  The file equals the one of the same run on the CPU, whose snapshots
    are written at once (every dataset to 1e-10 of its scale, the same rows and attributes
    that count them), and a run that fails mid-way still gets the last snapshot taken."""
    import tdse
    from tdse.run import sinks
    from tdse.run.driver import run
    from tdse.run.loop import Observer, evolve
    from tdse.run.memory import MemoryWriter
    from tdse.run.snapshots import read
    cfg = _batch_case("h2plus_moving.toml", 0.5, ("propagator.method", ["chebyshev"]))[0]
    files = {}
    monkeypatch.setattr(sinks, "SNAPSHOTS_IN_FLIGHT", 4)   # fewer than the run's snapshots
    for defer in (True, False):     # False: the same run on the CPU, each snapshot written at once
        res = run(cfg, str(tmp_path / str(defer)), backend="cupy" if defer else "numpy")
        files[defer] = read(res.path)
    a, b = files[True], files[False]
    assert a["attrs"]["lib_cupy"] == cp.__version__   # the GPU run's library
    # more snapshots than copies in flight: the oldest finished while the run goes on
    assert a["attrs"]["snapshots_complete"] == b["attrs"]["snapshots_complete"] > \
        sinks.SNAPSHOTS_IN_FLIGHT + 1
    assert a["attrs"]["observables_complete"] == b["attrs"]["observables_complete"]
    for k, v in b.items():
        if k == "attrs":
            continue
        v, w = np.asarray(v), np.asarray(a[k])
        assert v.shape == w.shape, k
        if v.dtype.kind in "fc":
            fin = np.abs(v[np.isfinite(v)])
            scale = max([1.0, *fin.max(keepdims=True)]) if fin.size else 1.0
            assert np.allclose(w, v, rtol=0, atol=1e-10 * scale, equal_nan=True), k
        else:
            assert (w == v).all(), k

    class Boom(Observer):
        def after(self, state):
            if state.step == 7:
                raise RuntimeError("boom")
    plan = tdse.prepare(cfg.with_value("output.every", 5), backend="cupy", check_resolution=False)
    w = MemoryWriter(config=plan.config, x=plan.x, v0=np.zeros(plan.config.grid.n),
                     energies=plan.energies, phi=plan.states, attrs={})
    snaps = sinks.Snapshots(plan, w)
    with pytest.raises(RuntimeError, match="boom"):
        evolve(plan, cp.asarray(plan.psi0), [snaps, Boom()])
    d = w.data()
    assert list(d["snapshots/step"]) == [0, 5] and snaps.last_step == 5


@pytest.mark.gpu
@pytest.mark.parametrize("stencil", [3, "dvr"])
def test_snapshots_and_rows_taken_by_the_graph_steps_write_the_same_file(stencil, tmp_path, monkeypatch):
    """A GPU run's snapshots taken by its steps into a ring (Snapshots.tap: the ring a block
    the step's graph fills, beside the observables' block; rings of 5 rows) and its rows
    with H(t)'s populations taken by the steps (their pairs asked at the block's measure,
    by the loop's tracker here), against a save point at each (flush_seconds = 0): psi and
    every int dataset the same bits,
    the observables to 1e-12 of their scale (a partial block is measured at other writes)."""
    from tdse.run import sinks
    from tdse.run.driver import run
    from tdse.run.snapshots import read
    cfg = _batch_case("h2plus_moving.toml", 1.0, ("propagator.method", ["chebyshev"]))[0]
    for k, v in (("grid.stencil", stencil), ("output.every", 5), ("output.populations_every", 10),
                 ("run.eigen_workers", "off")):
        cfg = cfg.with_value(k, v)
    monkeypatch.setattr(sinks, "SNAPSHOT_RING", 5)
    each = read(run(cfg.with_value("output.flush_seconds", 0.0), str(tmp_path / "each"), backend="cupy").path)
    saves = []
    orig = sinks.Snapshots.save
    monkeypatch.setattr(sinks.Snapshots, "save", lambda self, state: (saves.append(self.tapping), orig(self, state))[1])
    tapped = read(run(cfg.with_value("output.flush_seconds", 1e9), str(tmp_path / "tap"), backend="cupy").path)
    n = len(each["snapshots/step"])
    assert n > 10 and all(saves) and len(saves) <= 2 + (n - 2) // 5
    for k, v in each.items():
        if k == "attrs":
            continue
        v, w = np.asarray(v), np.asarray(tapped[k])
        assert v.shape == w.shape, k
        if k == "snapshots/psi" or v.dtype.kind not in "fc":
            assert np.array_equal(v, w, equal_nan=True), k
        else:
            fin = np.abs(v[np.isfinite(v)])
            scale = max([1.0, *fin.max(keepdims=True)]) if fin.size else 1.0
            assert np.allclose(w, v, rtol=0, atol=1e-12 * scale, equal_nan=True), k


@pytest.mark.gpu
def test_context_switch_on_the_gpu_leaves_this_context_working():
    """mgemm.arrays.context_switch on the real driver: True, this thread's context the same
    afterwards, arrays made before still readable, new work correct, and no memory of the
    second context left (free memory back within 64 MiB).  (What it is for -- the step's
    speed after work on a second stream -- is a measurement:
    benchmarks/archive/stream_side.py.)"""
    from mgemm.arrays import context_switch
    x = cp.arange(1000, dtype=np.float64)
    before = cp.cuda.driver.ctxGetCurrent()
    cp.cuda.Device().synchronize()
    free0 = cp.cuda.runtime.memGetInfo()[0]
    assert context_switch(cp, cp.cuda.Device().id)
    assert cp.cuda.driver.ctxGetCurrent() == before
    assert float((x * 2).sum()) == 999 * 1000
    assert abs(cp.cuda.runtime.memGetInfo()[0] - free0) < 64 << 20


@pytest.mark.gpu
def test_the_band_engine_marks_its_gpu_for_the_loops_context_switch():
    """mgemm's band engine (its non-blocking streams) marks the GPU it ran on
    (mgemm.arrays.side_work: what tdse's loop switches contexts for, run/loop._settle); a
    switch clears the mark; plain CuPy work on the current stream does not set it."""
    import mgemm.arrays as arrays
    d = cp.cuda.Device().id
    arrays._SIDE_WORK.discard(d)
    A = cp.asarray(np.random.default_rng(3).standard_normal((256, 256)))
    B = A @ A
    assert not arrays.side_work(d)
    C = mgemm.gemm(A, A, devices=[d], tile=64)        # bands of 64 rows on its streams
    assert arrays.side_work(d) and float(cp.abs(C - B).max()) < 1e-10
    assert arrays.context_switch(cp, d) and not arrays.side_work(d)


@pytest.mark.gpu
def test_the_docs_prepare_and_evolve_block_runs_on_a_gpu_plan(run_python_doc, inputs_dir):
    """#58 item 0: docs/PYTHON.md's prepare/evolve block on a CuPy plan (it raised TypeError
    where evolve took plan.psi0 -- a host array -- into the graph step's device copy): the
    same numbers as the block on the CPU, to 1e-10."""
    import tdse
    from tdse import config as cfgmod
    cfg = cfgmod.load(f"{inputs_dir}/h2plus_moving.toml")
    cfg = cfg.with_value("propagator.method", "chebyshev").with_value("grid.dx", 0.2)
    cfg = cfg.with_value("time.t_end", 120 * cfg.time.dt)
    gpu = run_python_doc(2, "cupy", tdse=tdse, cfg=cfg)
    cpu = run_python_doc(2, "numpy", tdse=tdse, cfg=cfg)
    assert gpu["plan"].backend.name == "cupy"
    for name in ("final", "block", "U"):
        a, b = gpu[name], cpu[name]
        a, b = (a.psi, b.psi) if name == "final" else (a, b)
        a = cp.asnumpy(a)
        assert np.abs(a - b).max() <= 1e-10 * np.abs(b).max(), name
    assert np.allclose(gpu["sink"].norms, cpu["sink"].norms, rtol=0, atol=1e-10)
    assert len(gpu["sink"].norms) == 10


@pytest.mark.gpu
@pytest.mark.parametrize("stencil", ["3", '"dvr"'])
def test_a_formula_on_the_gpu_equals_the_built_in_molecule(tmp_path, stencil):
    """#55 item 3 on a GPU: the moving H2+ with a field written as a [potential] formula --
    its V, dV/dx, the measuring kernel and the graph step generated from the formula and
    its symbolic derivative -- against the built-in centres on the GPU and the formula on
    the CPU, every dataset to 1e-10 of its scale at a tolerance of 1e-12 a step: the paths
    bound the spectrum differently (the formula's batch per term, the centres' exactly on
    the grid), so their Chebyshev expansions differ within the tolerance (80 steps x 1e-12),
    while the arithmetic differs by rounding."""
    import h5py
    import tdse
    from tdse import config as tdse_config
    from test_formula import CENTRES, FORMULA, MOLECULE
    files = {}
    for name, pot, backend in (("formula", FORMULA, "cupy"), ("centres", CENTRES, "cupy"),
                               ("formula_cpu", FORMULA, "numpy")):
        cfg = tdse_config.loads(MOLECULE.format(name=name, stencil=stencil, potential=pot))
        cfg = cfg.with_value("propagator.tolerance", 1e-12)
        res = tdse.simulate(cfg, out=str(tmp_path), backend=backend)
        assert res.backend == backend
        files[name] = res.path
    with h5py.File(files["formula"]) as a:
        for other in ("centres", "formula_cpu"):
            with h5py.File(files[other]) as b:
                for group in ("snapshots", "observables"):
                    for k in a[group]:
                        if k in ("centres", "t", "step") or a[group][k].dtype.kind not in "fc":
                            continue
                        if k.startswith("time_error"):   # the companion's distances: rounding-level
                            continue                     # (4.6e-11 GPU, 1.1e-12 CPU: 20261128T130444)
                        x, y = a[group][k][()], b[group][k][()]
                        scale = max(1.0, np.nanmax(np.abs(y)))
                        assert np.nanmax(np.abs(x - y)) <= 1e-10 * scale, (other, k)


@pytest.mark.gpu
def test_a_formula_scan_on_the_gpu_equals_the_cpu_scan():
    """A scan over a formula's parameter on the GPU (the batch kernels generated from the
    formula, each member its own parameters from ``constants``) against the CPU scan."""
    from tdse import config as tdse_config
    from tdse.studies import scan as scan_mod
    from test_formula import FORMULA, MOLECULE
    cfg = tdse_config.loads(MOLECULE.format(name="s", stencil=3, potential=FORMULA)).with_value(
        "propagator.tolerance", 1e-12)
    sets = {"potential.parameters.Z": [1.5, 2.0, 2.5], "field.E0": [0.01, 0.03]}
    gpu = scan_mod.scan(cfg, sets, backend="cupy")
    cpu = scan_mod.scan(cfg, sets, backend="numpy")
    for k in ("norm", "energy", "acceleration", "x_mean", "populations_h0", "field"):
        ref = np.asarray(cpu[k])
        assert np.abs(np.asarray(gpu[k]) - ref).max() <= 1e-10 * max(1.0, np.abs(ref).max()), k


@pytest.mark.gpu
def test_a_named_potential_on_the_gpu_equals_the_cpu():
    """A named potential (one file of tdse/potentials/: the harmonic oscillator, driven) on
    the GPU -- a run (graph steps, device observables: x_width included) and a scan over
    its parameter -- against the CPU's, every observable to 1e-10 of its scale."""
    import dataclasses
    import tdse
    from tdse.studies import scan as scan_mod
    from test_potentials import _config
    cfg = _config("harmonic", {"omega": 0.9, "x0": 0.3}, lo=-16.0, hi=16.0, dx=0.2,
                  extra="\n[field]\nE0 = 0.05\nomega = 0.5\nduration = 6.0\n")
    cfg = dataclasses.replace(cfg, time=dataclasses.replace(cfg.time, t_end=6.0, dt=0.02),
                              propagator=dataclasses.replace(cfg.propagator, method="chebyshev",
                                                             tolerance=1e-12))
    gpu, cpu = (tdse.simulate(cfg, backend=b).observables for b in ("cupy", "numpy"))
    for k in ("norm", "energy", "x_mean", "x_width", "acceleration", "populations_h0"):
        ref = np.asarray(cpu[k])
        assert np.abs(np.asarray(gpu[k]) - ref).max() <= 1e-10 * max(1.0, np.abs(ref).max()), k
    sets = {"potential.parameters.omega": [0.8, 1.0, 1.2]}
    gpu, cpu = (scan_mod.scan(cfg, sets, backend=b) for b in ("cupy", "numpy"))
    for k in ("norm", "energy", "x_mean", "x_width", "acceleration"):
        ref = np.asarray(cpu[k])
        assert np.abs(np.asarray(gpu[k]) - ref).max() <= 1e-10 * max(1.0, np.abs(ref).max()), k


# ------------------------------------------------------------------ #56: the local error estimate
@pytest.mark.gpu
@pytest.mark.parametrize("name,stencil,scheme", [
    ("h2plus_moving.toml", 3, "cfm4"), ("h2plus_moving.toml", 5, "midpoint"),
    ("atom_hhg.toml", "dvr", "cfm4"),            # an absorber (masks) and a field
    ("atom_hhg.toml", 3, "midpoint"),
])
def test_the_local_estimate_as_a_graph_equals_the_launched_one(name, stencil, scheme):
    """LocalError.parts on a GPU by one captured graph (run.graphs, the length gauge; a
    vector's one cooperative kernel) against
    the launched products and the host's, for a vector and an N x 3 block, at a few step
    starts (the graph replayed with new letters and a new u): 1e-12 of the largest order's
    scale (an absorber's h^3 order may nearly cancel: ~1e-13 where the other is ~1e-6)."""
    import tdse
    from tdse.numerics.local_error import LocalError
    cfg = tdse.load_config(os.path.join(ROOT, "inputs", name)).with_value(
        "grid.stencil", stencil).with_value("propagator.scheme", scheme)
    rng = np.random.default_rng()
    n, dt = cfg.grid.n, cfg.time.dt
    fast, slow = LocalError(cfg, cp), LocalError(cfg.with_value("run.graphs", False), cp)
    host = LocalError(cfg, np)
    for shape in ((n,), (n, 3)):
        for t in (0.3, 0.7, 1.1):
            u = rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
            got, ref, want = (le.parts(x, t, dt) for le, x in ((fast, cp.asarray(u)),
                                                               (slow, cp.asarray(u)), (host, u)))
            assert [m for m, _ in got] == [m for m, _ in ref] == [m for m, _ in want]
            scale = max(float(np.abs(c).max()) for _, c in want)
            assert scale > 0
            for (_, a), (_, b), (_, c) in zip(got, ref, want):
                assert float(np.abs(cp.asnumpy(a) - c).max()) <= 1e-12 * scale
                assert float(np.abs(cp.asnumpy(b) - c).max()) <= 1e-12 * scale
            # the sum over the orders (a vector's: the one kernel's own, with dt^n uploaded)
            L, Lh = fast.vector(cp.asarray(u), t, dt), host.vector(u, t, dt)
            assert float(np.abs(cp.asnumpy(L) - Lh).max()) <= 1e-12 * float(np.abs(Lh).max())
    # fixed steps (``j``): the letters from their chunk, uploaded once and a row copied on
    # the device a step (LocalError._letters_in), across a chunk's end and back; keep=False
    # hands the kernel's own buffer
    C = fast.chunk_steps
    assert C > 1
    for j in (0, 1, C - 1, C, C + 1, 2):
        u = rng.standard_normal(n) + 1j * rng.standard_normal(n)
        Lh = host.vector(u, j * dt, dt, j)
        L = cp.asnumpy(fast.vector(cp.asarray(u), j * dt, dt, j, keep=False))
        assert float(np.abs(L - Lh).max()) <= 1e-12 * float(np.abs(Lh).max())
        assert fast._graphs[(n,)].get("chunk") is fast._chunk      # (the chunk's path taken)
    assert len(fast._graphs) == 2 and not slow._graphs
    # a vector's estimate is one kernel (tdse.backends.cupy.words); a block's the graph of products
    assert fast._graphs[(n,)]["words"] is not None and fast._graphs[(n, 3)]["words"] is None


@pytest.mark.usefixtures("chebyshev_carrier")
@pytest.mark.gpu
@pytest.mark.parametrize("kind", ["abrupt", "laser"])
def test_estimate_and_adaptive_steps_on_a_gpu_equal_the_cpus(kind):
    """time_error = "estimate" (fixed steps) on one GPU: the stated errors equal the CPU's to
    1e-6 relative, psi to 1e-9; time.tolerance (adaptive): within 10 % of the CPU's steps
    (a choice near its threshold may fall the other way), the stated error under the
    tolerance and psi within it of the CPU's."""
    import tdse
    from benchmarks import drives
    from tdse.config import with_values
    c = drives.make(kind, np.random.default_rng(11))
    tol = 1e-6
    adaptive = with_values(c, [("time.dt", 1.0 if kind == "laser" else 0.1),
                               ("output.every", 1), ("time.tolerance", tol)])
    for cfg in (c, adaptive):
        cpu = tdse.simulate(cfg, backend="numpy")
        gpu = tdse.simulate(cfg, backend="cupy")
        a, b = cpu.time_error, gpu.time_error
        dpsi = np.abs(np.asarray(gpu.psi[-1]) - np.asarray(cpu.psi[-1])).max()
        if cfg.time.tolerance is None:
            assert b["error_at_t_end"] == pytest.approx(a["error_at_t_end"], rel=1e-6)
            assert dpsi < 1e-9
        else:
            assert abs(b["steps_taken"] - a["steps_taken"]) <= 0.1 * a["steps_taken"]
            assert b["error_at_t_end"] <= tol and dpsi < tol


@pytest.mark.gpu
@pytest.mark.parametrize("kind", ["laser", "fast"])
def test_the_split_carriers_pieces_go_on_past_snapshots_with_the_same_bits(kind, tmp_path, monkeypatch,
                                                                            interrupt_after):
    """#56 on a GPU's split carrier: a piece of local errors spans the snapshots between its
    ends (each snapshot's e deferred until its piece is made, DeferredE): the snapshots'
    stated errors, e kept for resuming and psi equal, bit for bit, those of the run whose
    pieces end at every snapshot; a run interrupted mid-way and resumed from its file states
    the uninterrupted run's error at t_end."""
    from benchmarks import drives
    from tdse.numerics import adaptive
    from tdse.run.driver import run
    from tdse.run.interrupts import Interrupted
    from tdse.run.snapshots import read, resume_state
    c = drives.make(kind, np.random.default_rng()).with_value("propagator.time_error", "estimate")
    made = []
    orig = adaptive.EstimatingStepper._make_piece
    monkeypatch.setattr(adaptive.EstimatingStepper, "_make_piece",
                        lambda self: (made.append(self._pending[1] - self._pending[0]), orig(self))[1])
    a = read(run(c, tmp_path / "a", backend="cupy").path)
    te = json.loads(a["attrs"]["time_error"])
    assert te["carried_by"].startswith("split step")
    assert max(made) > c.output.every                  # pieces past a snapshot
    with monkeypatch.context() as m:                   # pieces ended at every snapshot
        m.setattr(adaptive.EstimatingStepper, "deferred_e", lambda self, step: None)
        made.clear()
        b = read(run(c, tmp_path / "b", backend="cupy").path)
        assert max(made) <= c.output.every
    for k in ("snapshots/time_error", "snapshots/time_error_populations", "snapshots/psi"):
        assert np.array_equal(a[k], b[k], equal_nan=True), k
    assert np.isfinite(a["snapshots/time_error"]).all() and a["snapshots/time_error"][-1] > 0
    armed = interrupt_after(3, "SIGTERM")   # (fast's 200 steps are one piece: the third
    with pytest.raises(BaseException) as ei:  # snapshot is written as the run ends)
        run(c, tmp_path / "cut", backend="cupy")
    armed.disarm()
    assert isinstance(ei.value, Interrupted), repr(ei.value)   # (not a KeyboardInterrupt)
    part = str(tmp_path / "cut" / f"{c.name}.h5.part")
    st = resume_state(part)
    assert 0 < st["step"] <= c.time.steps
    r = read(run(c, None, backend="cupy", resume=(st, part)).path)
    assert json.loads(r["attrs"]["time_error"])["error_at_t_end"] == te["error_at_t_end"]
    assert np.array_equal(r["snapshots/psi"][-1], a["snapshots/psi"][-1])


# ------------------------------------------------------------------ #55: the velocity gauge
@pytest.mark.gpu
@pytest.mark.parametrize("stencil, method", [(3, "chebyshev"), ("dvr", "chebyshev"), (5, "dense")])
def test_the_velocity_gauge_on_a_gpu_equals_the_cpu(stencil, method):
    """A velocity-gauge run on one GPU (Chebyshev: its steps CUDA graphs) equals the CPU's:
    psi to 1e-9, every observable to 1e-9 of its scale."""
    import tdse
    from tdse.config import load, with_values
    cfg = with_values(load(os.path.join(os.path.dirname(__file__), "..", "inputs", "atom_hhg.toml")),
                      [("time.t_end", 20.0), ("output.every", 50), ("grid.stencil", stencil),
                       ("propagator.method", method), ("field.gauge", "velocity")]
                      + ([("grid.x_min", -40.0), ("grid.x_max", 40.0), ("absorber.width", 15.0)]
                         if method == "dense" else []))
    gpu, cpu = tdse.simulate(cfg, backend="cupy"), tdse.simulate(cfg, backend="numpy")
    assert gpu.attrs["backend"] == "cupy"
    assert np.abs(np.asarray(gpu.psi[-1]) - np.asarray(cpu.psi[-1])).max() < 1e-9
    for k in ("norm", "energy", "x_mean", "p_mean", "acceleration"):
        a, b = np.asarray(gpu.observables[k]), np.asarray(cpu.observables[k])
        assert np.abs(a - b).max() <= 1e-9 * max(1.0, np.abs(b).max()), k


@pytest.mark.gpu
def test_a_velocity_gauge_scan_on_a_gpu_equals_the_cpus():
    import tdse
    from tdse.config import load, with_values
    cfg = with_values(load(os.path.join(os.path.dirname(__file__), "..", "inputs", "atom_hhg.toml")),
                      [("time.t_end", 20.0), ("output.every", 50), ("field.gauge", "velocity")])
    sets = {"field.E0": [0.03, 0.05, 0.08]}
    g, c = tdse.scan(cfg, sets, backend="cupy"), tdse.scan(cfg, sets, backend="numpy")
    for k in ("norm", "energy", "p_mean", "acceleration"):
        assert np.abs(np.asarray(g[k]) - np.asarray(c[k])).max() < 1e-9, k


@pytest.mark.gpu
def test_tsurff_and_an_expression_field_on_a_gpu_equal_the_cpu():
    """[output] tsurff_radius on a GPU run (a block of steps' flux one kernel) gives the
    CPU's P(k) to 1e-9 of its peak; the sin^2 pulse written as a formula equals the built-in
    one on the GPU (psi to 1e-12)."""
    import json

    import tdse
    from tdse.config import load, with_values
    cfg = with_values(load(os.path.join(os.path.dirname(__file__), "..", "inputs", "atom_hhg.toml")),
                      [("time.t_end", 250.0), ("output.every", 500), ("output.tsurff_radius", 30.0)])
    gpu, cpu = tdse.simulate(cfg, backend="cupy"), tdse.simulate(cfg, backend="numpy")
    rg, rc = (json.loads(r.attrs["photoelectrons_tsurff"]) if isinstance(r.attrs["photoelectrons_tsurff"], str)
              else r.attrs["photoelectrons_tsurff"] for r in (gpu, cpu))
    P, Pg = np.array(rc["P_right"]) + rc["P_left"], np.array(rg["P_right"]) + rg["P_left"]
    assert np.abs(P - Pg).max() <= 1e-9 * P.max() and P.max() > 1e-4, P.max()
    f, base = cfg.field, with_values(cfg, [("output.tsurff_radius", 0.0)])
    text = base.source.replace("[field]", "[field]\nkind = \"expression\"\nE = \"F * sin(pi * t / T)**2 "
                               f"* sin(w * t)\"\nparameters = {{F = {f.E0!r}, T = {f.duration!r}, "
                               f"w = {f.omega!r}}}")
    text = "\n".join(ln for ln in text.splitlines() if not ln.startswith(("phase =", "envelope =")))
    expr = tdse.config.loads(text)
    assert expr.field.E and expr.field.duration == f.duration
    a, b = tdse.simulate(expr, backend="cupy"), tdse.simulate(base, backend="cupy")
    assert np.abs(np.asarray(a.psi[-1]) - np.asarray(b.psi[-1])).max() < 1e-12


@pytest.mark.gpu
def test_tsurff_on_a_gpu_resumes_bit_for_bit_and_equals_the_cpu_in_both_gauges(tmp_path, interrupt_after):
    """t-SURFF's block of steps as one kernel (tdse.backends.cupy.tsurff): a GPU run
    interrupted and resumed holds the uninterrupted GPU run's P(k) bit for bit; in each gauge
    the GPU's P(k) equals the CPU's to 1e-9 of the peak (the kernel's sums run in another
    order than NumPy's einsum and cumsum)."""
    from test_photoelectrons import ATOM_TS

    from tdse import config as tdse_config
    from tdse.studies.photoelectrons import tsurff_record
    from tdse.run.driver import run
    from tdse.run.interrupts import Interrupted
    from tdse.run.snapshots import read, resume_state

    def spectrum(path):
        rec = tsurff_record(read(path)["attrs"])
        return np.array(rec["P_right"]) + rec["P_left"], rec
    E0 = np.random.default_rng().uniform(0.08, 0.12)
    for gauge in ("length", "velocity"):
        c = tdse_config.loads(ATOM_TS.format(E0=E0, gauge=gauge))
        P, rec = spectrum(run(c, tmp_path / f"g{gauge}", backend="cupy").path)
        Pc, _ = spectrum(run(c, tmp_path / f"c{gauge}", backend="numpy").path)
        assert P.max() > 1e-3 and np.abs(P - Pc).max() <= 1e-9 * Pc.max(), (gauge, np.abs(P - Pc).max())
        if gauge == "velocity":
            break
        armed = interrupt_after(2, "SIGTERM")
        with pytest.raises(Interrupted):
            run(c, tmp_path / "cut", backend="cupy")
        armed.disarm()
        part = str(tmp_path / "cut" / f"{c.name}.h5.part")
        st = resume_state(part)
        assert st["tsurff"] is not None and 0 < st["step"] < c.time.steps
        _, rec2 = spectrum(run(c, None, backend="cupy", resume=(st, part)).path)
        assert rec2["P_right"] == rec["P_right"] and rec2["P_left"] == rec["P_left"]


@pytest.mark.gpu
def test_a_callable_potential_on_a_gpu():
    """tdse.with_potential: --backend auto on a GPU machine runs it on the CPU (the file
    says numpy); --backend cupy runs it on the GPU's launched path (V uploaded each step,
    observables a row at a time on the host) and equals the CPU's run: psi to 1e-9."""
    import tdse
    from tdse.config import load, with_values
    cfg = with_values(load(os.path.join(os.path.dirname(__file__), "..", "inputs", "atom_hhg.toml")),
                      [("time.t_end", 5.0), ("output.every", 10)])
    c = tdse.with_potential(cfg, lambda x, t: -1.0 / np.sqrt(x ** 2 + 2.0 + 0.1 * np.sin(t)))
    res = tdse.simulate(c, backend="auto")
    assert res.attrs["backend"] == "numpy"
    gpu = tdse.simulate(c, backend="cupy")
    assert gpu.attrs["backend"] == "cupy"
    assert np.abs(np.asarray(gpu.psi[-1]) - np.asarray(res.psi[-1])).max() < 1e-9
    for k in ("energy", "acceleration", "norm"):
        a, b = np.asarray(gpu.observables[k]), np.asarray(res.observables[k])
        assert np.abs(a - b).max() <= 1e-9 * max(1.0, np.abs(b).max()), k


@pytest.mark.gpu
def test_tsurff_in_a_gpu_scan_equals_the_cpus():
    """t-SURFF in a scan on one GPU (each member's flux in the block kernel):
    every member's P(k) equals the CPU scan's to 1e-8 of the peak."""
    import tdse
    from tdse.config import load, with_values
    cfg = with_values(load(os.path.join(os.path.dirname(__file__), "..", "inputs", "atom_hhg.toml")),
                      [("time.t_end", 250.0), ("output.every", 500), ("output.tsurff_radius", 30.0)])
    sets = {"field.E0": [0.04, 0.06]}
    g, c = tdse.scan(cfg, sets, backend="cupy"), tdse.scan(cfg, sets, backend="numpy")
    P = np.asarray(c["tsurff_P_right"]) + np.asarray(c["tsurff_P_left"])
    Pg = np.asarray(g["tsurff_P_right"]) + np.asarray(g["tsurff_P_left"])
    assert P.max() > 1e-4 and np.abs(P - Pg).max() <= 1e-8 * P.max()


@pytest.mark.gpu
def test_the_nuclei_model_on_a_gpu_equals_the_cpu(tmp_path):
    """The 1D + 1D H2+ model (#57): twenty cfm4 steps in a field with both absorbers on the
    GPU against the CPU (psi, the absorbed norm, the observables), and `tdse run` with
    --backend cupy writes the same file as the CPU's."""
    import tdse
    from tdse.model import nuclei as nm
    from tdse.numerics.stepper import NucleiStepper
    cfg = tdse.load_config("inputs/h2plus_nuclei.toml").with_value("nuclei.state", 0).with_value(
        "time.t_end", 4.0)
    out = {}
    for name, xp in (("cpu", np), ("gpu", cp)):
        m = nm.Model(cfg, xp)
        st = NucleiStepper(m, xp)
        rng = np.random.default_rng(57)
        psi = xp.asarray(rng.standard_normal(m.shape) + 1j * rng.standard_normal(m.shape)) * 0.01
        for j in range(20):
            psi = st.step(psi, 500 + j)
        out[name] = (cp.asnumpy(psi) if xp is cp else psi, [float(a) for a in st.absorbed],
                     m.measure(psi, 100.0, st.absorbed))
    (a, la, ma), (b, lb, mb) = out["cpu"], out["gpu"]
    assert np.abs(a - b).max() < 1e-10 * np.abs(a).max()
    assert np.allclose(la, lb, rtol=1e-9, atol=1e-15)
    for k in ("norm", "energy", "R_mean", "bound", "acceleration"):
        assert abs(ma[k] - mb[k]) <= 1e-9 * max(1.0, abs(ma[k])), k
    res = tdse.simulate(cfg, backend="cupy", out=str(tmp_path))
    ref = tdse.simulate(cfg, backend="numpy")
    assert np.abs(res.psi - ref.psi).max() < 1e-9
    assert res.path.endswith("h2plus_nuclei.h5")


@pytest.mark.parametrize("devices", [pytest.param((0, 0, 0), marks=pytest.mark.gpu),
                                     pytest.param((0, 1), marks=pytest.mark.multi_gpu(2))])
def test_nuclei_columns_split_over_gpus_equal_one_gpu(devices):
    """#57 item 2: Psi's columns split over GPUs (tdse.backends.cupy.columns: T_x local, the
    T_R product from the peers' blocks as they arrive, the recurrence on each GPU) step as
    the one-GPU model does -- 20 steps mid-pulse with both absorbers, on an N_R the split
    leaves uneven; the same GPU thrice tests the streams and events on one."""
    import tdse
    from tdse.backends.cupy.columns import ColumnOperator, bounds
    from tdse.model import nuclei as nm
    from tdse.numerics.stepper import NucleiStepper
    cfg = tdse.load_config("inputs/h2plus_nuclei.toml").with_value("nuclei.dR", 30.0 / 149)
    assert cfg.nuclei.n % len(devices) and len({b - a for a, b in bounds(cfg.nuclei.n, len(devices))}) > 1
    with cp.cuda.Device(0):
        m = nm.Model(cfg, cp)
        host = nm.Model(cfg)
        op = ColumnOperator(cp, devices, host.Tx_host, host.TR_host.astype(complex), host.V_host,
                            host.kappa * host.x[:, None])
        rng = np.random.default_rng(57)
        psi0 = cp.asarray(rng.standard_normal(m.shape) + 1j * rng.standard_normal(m.shape)) * 0.01
        out = []
        for columns in (None, op):
            st = NucleiStepper(m, cp, columns=columns)
            psi = psi0.copy()
            for j in range(20):
                psi = st.step(psi, 4000 + j)
            out.append((cp.asnumpy(psi), [float(a) for a in st.absorbed], st.cheb_terms))
    (a, la, ka), (b, lb, kb) = out
    assert ka == kb > 0
    assert np.abs(a - b).max() <= 1e-12 * np.abs(a).max()
    assert np.allclose(la, lb, rtol=1e-12, atol=0) and min(la) > 0


@pytest.mark.multi_gpu(2)
def test_a_large_nuclei_run_splits_its_columns_over_two_gpus(tmp_path, monkeypatch):
    """#57 item 2 through the API: a 1024 x 512 grid on GPUs 0 and 1 (the split's threshold
    lowered to it here, to keep the test short) splits Psi's columns and gives the one-GPU
    run's file (the model's own apply there); the shipped 150 x 150 grid stays on the first
    GPU (too small to pay)."""
    import dataclasses

    import h5py

    import tdse
    from tdse.run import nuclei as rn
    base = tdse.load_config("inputs/h2plus_nuclei.toml")
    cfg = base.with_value("grid.dx", 60.0 / 1024).with_value("nuclei.dR", 30.0 / 512).with_value(
        "time.dt", 0.05).with_value("time.t_end", 1.0).with_value("output.every", 10).with_value(
        "nuclei.state", "franck_condon")
    monkeypatch.setattr(rn, "SPLIT_MIN_POINTS", 1024 * 512)
    two = rn.prepare(cfg, backend="cupy", devices=[0, 1])
    assert two.backend.devices == (0, 1) and two.columns is not None
    assert rn.prepare(base, backend="cupy", devices=[0, 1]).backend.devices == (0,)
    one = dataclasses.replace(two, backend=dataclasses.replace(two.backend, devices=(0,)), columns=None)
    a, b = rn.run(two, str(tmp_path / "two")), rn.run(one, str(tmp_path / "one"))
    assert np.abs(a.psi - b.psi).max() <= 1e-12 * np.abs(b.psi).max()
    with h5py.File(a.path) as f, h5py.File(b.path) as g:
        assert f.attrs["backend"] == "cupy, GPU(s) 0, 1" and g.attrs["backend"] == "cupy, GPU(s) 0"
        for k in ("norm", "energy", "dissociated", "absorbed_x"):
            assert np.allclose(f[f"observables/{k}"][:], g[f"observables/{k}"][:], rtol=1e-11, atol=1e-15), k


@pytest.mark.multi_gpu(2)
@pytest.mark.parametrize("feature", ["velocity", "tsurff", "expression"])
def test_strong_field_features_in_column_bands_on_two_gpus_equal_the_cpu(feature):
    """#55 on several GPUs (the dense exponent in column bands over GPUs 0 and 1): the
    velocity gauge, t-SURFF's flux and an expression potential give the CPU's run -- psi
    and the observables to 1e-10 of their scale, t-SURFF's P(k) to 1e-9 of its peak."""
    import json

    import tdse
    from tdse.config import load, loads, with_values
    cfg = with_values(load(os.path.join(os.path.dirname(__file__), "..", "inputs", "atom_hhg.toml")),
                      [("time.t_end", 10.0), ("output.every", 50), ("propagator.method", "dense"),
                       ("grid.x_min", -40.0), ("grid.x_max", 40.0)])
    if feature == "velocity":
        cfg = with_values(cfg, [("field.gauge", "velocity")])
    elif feature == "tsurff":
        cfg = with_values(cfg, [("output.tsurff_radius", 12.0), ("time.t_end", 40.0), ("field.E0", 0.1),
                                ("field.duration", 40.0)])
    else:                        # the same atom, V written as a formula
        cfg = loads('name = "atom_formula"\n[grid]\nx_min = -40.0\nx_max = 40.0\ndx = 0.4\nstencil = "dvr"\n'
                    '[potential]\nkind = "expression"\nV = "-Z / sqrt(x**2 + a)"\nparameters = {Z = 1.0, a = 2.0}\n'
                    '[field]\nE0 = 0.0534\nomega = 0.057\nduration = 440.9\nenvelope = "sin2"\n'
                    '[absorber]\nwidth = 25.0\n[time]\ndt = 0.1\nt_end = 10.0\n'
                    '[propagator]\nmethod = "dense"\n[output]\nevery = 50\n')
        assert cfg.potential.kind == "expression"
    cpu = tdse.simulate(cfg, backend="numpy")
    gpu = tdse.simulate(cfg, backend="cupy", devices=[0, 1])
    assert gpu.attrs["backend"] == "cupy" and list(gpu.attrs["devices"]) == [0, 1]
    a, b = np.asarray(cpu.psi), np.asarray(gpu.psi)
    assert np.abs(a - b).max() <= 1e-10 * np.abs(a).max()
    for k in ("norm", "energy", "acceleration"):
        x, y = np.asarray(cpu.observables[k]), np.asarray(gpu.observables[k])
        assert np.abs(x - y).max() <= 1e-10 * max(1.0, np.abs(x).max()), k
    if feature == "tsurff":
        rc, rg = (r.attrs["photoelectrons_tsurff"] for r in (cpu, gpu))
        rc, rg = (json.loads(v) if isinstance(v, str) else v for v in (rc, rg))
        P, Pg = np.array(rc["P_right"]) + rc["P_left"], np.array(rg["P_right"]) + rg["P_left"]
        assert np.abs(P - Pg).max() <= 1e-9 * P.max() and P.max() > 1e-6, P.max()


#: #58 item 0: a short case of every suite of `python -m benchmarks` that runs on a GPU (a
#: suite's GPU loop had crashed where `tdse run` did not: PinnedUpload's slot).  Several-GPU
#: suites on one GPU where they take --gpus 1; `tune` is left out (it saves tuned tiles
#: outside --out), `gpu-tests` too (it runs this file), and the CPU-only suites.
GPU_SUITES = {
    "engine": ["--n", "2048", "--gpus", "1", "--repeat", "1", "--no-xt", "--no-jax",
               "--complex-method", "native", "--placement", "three"],
    "expm": ["--n", "1024", "--gpus", "1", "--repeat", "1", "--no-baselines"],
    "tdse": ["--input", "inputs/h2plus_moving.toml", "--gpus", "1", "--steps", "2"],
    "expm-profile": ["--n", "1024", "--gpus", "1", "--repeat", "1"],
    "propagator": ["--n", "256", "--gpus", "1", "--steps", "2", "--engines", "mgemm", "chebyshev"],
    "scale": ["--cases", "2048:1", "--vectors", "2"],
    "small-n": ["--n", "256", "--steps", "20", "--no-dynamiqs"],
    "formula": ["--input", "inputs/h2plus_moving.toml", "--backend", "cupy", "--steps", "20",
                "--repeat", "1"],
    "time-error": ["--backend", "cupy", "--kinds", "abrupt", "--repeat", "1", "--no-adaptive"],
    "nuclei": ["--backend", "cupy", "--grids", "64x32", "--steps", "2", "--repeat", "1"],
    "tsurff": ["--backend", "cupy", "--steps", "50", "--repeat", "1"],
    "run-overhead": ["--backend", "cupy", "--n", "256", "--stencils", "3", "--steps", "40",
                     "--populations-every", "0", "10"],
    "start-up": ["--backend", "cupy", "--inputs", "tiny", "--repeat", "1"],
    "scan": ["--backend", "cupy", "--members", "4", "--t-end", "5"],
    "kernels-3m": ["--n", "4096", "--tiles", "1024,2048", "--n-full", "2048", "--seconds", "0.1",
                   "--rounds", "1"],
    "sweep-3m": ["--n", "2048", "--gpus", "1", "--repeat", "1"],
    "step-cost": ["--backend", "cupy", "--n", "256", "--steps", "2"],
}


@pytest.mark.gpu
@pytest.mark.parametrize("suite", sorted(GPU_SUITES))
def test_every_gpu_suite_runs_a_short_case(suite, tmp_path, monkeypatch):
    """Each GPU suite on a small case: exit 0 and a result file with rows and its command."""
    import glob
    import json
    from benchmarks.runner import main
    monkeypatch.chdir(ROOT)
    assert main([suite, *GPU_SUITES[suite], "--out", str(tmp_path)]) == 0
    (path,) = glob.glob(str(tmp_path / f"{suite}_*.json"))
    doc = json.load(open(path))
    assert doc["kind"] == suite and doc["rows"] and doc["command"].startswith(f"python -m benchmarks {suite}")


@pytest.mark.gpu
def test_a_scans_block_kinetic_by_fft_equals_the_gemm(monkeypatch):
    """#59 item 1: a DVR scan's block (B members) with T X by two strided cuFFT transforms
    a term (graph_fft.FFTKinetic, B > 1) against the dense T's GEMM: the observables of
    every member to 1e-10 of their scale (the two round differently); the timed choice
    (BLOCK_FFT None) picks one and keeps it for that (N, B)."""
    import tdse
    from tdse.config import load, with_values
    from tdse.numerics import graph_fft
    cfg = with_values(load(os.path.join(ROOT, "inputs", "atom_hhg.toml")),
                      [("time.t_end", 20.0), ("output.every", 50), ("propagator.time_error", "none")])
    sets = {"field.E0": [0.03, 0.05, 0.07, 0.09, 0.11]}
    made, init = [], graph_fft.FFTKinetic.__init__
    monkeypatch.setattr(graph_fft.FFTKinetic, "__init__",
                        lambda self, cp_, grid, B: (made.append(B), init(self, cp_, grid, B))[1])
    res = {}
    for mode in (False, True):
        monkeypatch.setattr(graph_fft, "BLOCK_FFT", mode)
        res[mode] = tdse.scan(cfg, sets, backend="cupy")
    assert made == [5]
    for k in ("norm", "acceleration", "x_mean"):
        a, b = np.asarray(res[False][k]), np.asarray(res[True][k])
        assert np.abs(a - b).max() <= 1e-10 * max(1.0, np.abs(a).max()), k
    monkeypatch.setattr(graph_fft, "BLOCK_FFT", None)
    monkeypatch.setattr(graph_fft, "_BLOCK_CHOICES", {})
    first = graph_fft.block_by_fft(cp, cfg.grid, 5)
    assert first in (True, False) and list(graph_fft._BLOCK_CHOICES.values()) == [first]


@pytest.mark.usefixtures("chebyshev_carrier")
@pytest.mark.gpu
@pytest.mark.parametrize("gauge", ["length", "velocity"])
@pytest.mark.parametrize("tolerance", [None, 1e-6])
def test_a_scans_time_errors_on_a_gpu_equal_the_cpus(gauge, tolerance):
    """#56 item 4 on a GPU: a scan with time_error = "estimate" (the block's estimate on the
    device, BatchPotential's letters by its kernel, BlockOperator's products) states each
    member's time error as the CPU's scan does (1e-6 relative, or 1e-5 of the member's
    largest: the carrier's 1e-6 is relative to e's largest), and with time.tolerance takes
    the same shared steps."""
    import tdse
    from tdse.config import load, with_values
    cfg = with_values(load(os.path.join(ROOT, "inputs", "atom_hhg.toml")),
                      [("time.t_end", 40.0), ("field.duration", 40.0), ("time.dt", 0.2),
                       ("output.every", 20), ("output.observables_every", 5),
                       ("field.gauge", gauge), ("propagator.time_error", "estimate")]
                      + ([("time.tolerance", tolerance)] if tolerance else []))
    sets = {"field.E0": [0.03, 0.06, 0.09]}
    g, c = tdse.scan(cfg, sets, backend="cupy"), tdse.scan(cfg, sets, backend="numpy")
    assert g["batch_steps_taken"] == c["batch_steps_taken"]
    assert c["time_error"][:, -1].min() > 0
    for ge, ce in zip(np.asarray(g["time_error"]), c["time_error"]):
        np.testing.assert_allclose(ge, ce, rtol=1e-6, atol=1e-5 * ce.max())
    np.testing.assert_allclose(np.asarray(g["norm"]), c["norm"], rtol=0, atol=1e-9)


@pytest.mark.gpu
def test_the_gpu_showcase_input_is_unchanged_on_a_gpu():
    """tests/test_reference.py's check of h2plus_moving_large (N = 1024 in its short box,
    the dense exponent: 26.5 s of one CPU core, so checked here rather than in CI): the GPU
    run's datasets and numerics equal the reference made on the CPU before the run-path
    refactor, to the case's tolerance (3.1e-7: H(0)'s near-degenerate pair)."""
    from test_reference import check_case
    check_case("h2plus_moving_large", "cupy")


@pytest.mark.gpu
def test_a_batch_potentials_weighted_rows_in_one_launch_equal_the_hosts():
    """BatchPotential.weighted on a GPU (every row of weights in one launch, a row's header
    broadcast) against the host's sum of V at each time, for moving centres with a field and
    random weights; one row (the R = 1 launch) likewise: 1e-12 of V's scale."""
    import dataclasses

    from tdse import config as cfgmod
    from tdse.model.grid import points
    from tdse.model.potential import BatchPotential
    rng = np.random.default_rng()
    cfg = cfgmod.load(os.path.join(ROOT, "inputs", "h2plus_moving.toml"))
    atom = cfgmod.load(os.path.join(ROOT, "inputs", "atom_hhg.toml"))
    x = points(cfg.grid)
    p0 = dataclasses.replace(cfg.potential, field=atom.potential.field)
    members = [dataclasses.replace(p0, a=float(rng.uniform(0.5, 2.0)),
                                   field=dataclasses.replace(p0.field, E0=float(rng.uniform(0.01, 0.1))))
               for _ in range(5)]
    host, dev = BatchPotential(members, x), BatchPotential(members, x, xp=cp)
    times = rng.uniform(0.0, 50.0, 5)
    scale = max(float(np.abs(v).max()) for v in host.weighted(times, np.eye(5)))
    for weights in (rng.standard_normal((5, 5)), rng.standard_normal((1, 5)), rng.standard_normal((3, 5))):
        want = host.weighted(times, weights)
        got = dev.weighted(times, weights)
        assert len(got) == len(want)
        for g, w, row in zip(got, want, weights):
            assert g.shape == w.shape
            assert float(np.abs(cp.asnumpy(g) - w).max()) <= 1e-12 * scale * np.abs(row).sum()


@pytest.mark.usefixtures("chebyshev_carrier")
@pytest.mark.gpu
@pytest.mark.parametrize("kind", ["laser", "fast"])
def test_estimating_steps_over_a_range_on_a_gpu_equal_a_step_at_a_time(kind):
    """EstimatingStepper.steps on a GPU (psi by the graph steps over a piece, each psi(t_j)
    tapped into a block, the piece's local errors made as one block, e by the carrier's
    graphs on a stream of its own with each L added in place after its step) against a step
    at a time (a piece of one: the one-kernel estimate): psi bit for bit, e within 1e-6 of
    its size + 1e-15 (the CPU's test says why), a row of psi tapped as the run's sinks tap
    it; and against the CPU to 1e-9."""
    import tdse
    import tdse.numerics.adaptive as ad
    from benchmarks import drives
    cfg = drives.make(kind, np.random.default_rng())
    plan = tdse.prepare(cfg, backend="cupy")
    psi0 = cp.asarray(plan.psi0, dtype=complex)
    one, many = (ad.EstimatingStepper(cfg, plan.stepper, cp) for _ in range(2))
    X = psi0
    for j in range(150):
        X = one.step(X, j)
    row = cp.zeros_like(psi0)
    Y = many.advance(psi0, 0, 100, taps={70: [row]})
    Y = many.advance(Y, 100, 150)
    assert bool(cp.array_equal(X, Y))
    assert float(cp.linalg.norm(one.e - many.e)) <= 1e-6 * float(cp.linalg.norm(one.e)) + 1e-15
    st, Z = plan.stepper(), psi0
    for j in range(70):
        Z = st.step(Z, j)
    assert bool(cp.array_equal(row, Z))
    host = tdse.prepare(cfg, backend="numpy")
    cpu = ad.EstimatingStepper(cfg, host.stepper, np)
    W = cpu.advance(np.asarray(host.psi0, dtype=complex), 0, 150)
    assert float(np.abs(cp.asnumpy(Y) - W).max()) < 1e-9
    assert float(np.abs(cp.asnumpy(many.e) - cpu.e).max()) <= 1e-6 * float(np.abs(cpu.e).max())


@pytest.mark.gpu
@pytest.mark.parametrize("kind, gauge", [("laser", "length"), ("laser", "velocity"), ("fast", "length")])
def test_local_errors_of_a_block_of_steps_on_a_gpu(kind, gauge):
    """LocalError.block on a GPU (the letters in one pinned upload, the block's products by
    cuBLAS or the band kernel) against the CPU's block and against the GPU's one-step
    estimate (the one-kernel WORDS in the length gauge): 1e-12 of the estimate's size."""
    from benchmarks import drives
    from tdse.numerics.local_error import LocalError
    rng = np.random.default_rng()
    cfg = drives.make(kind, rng)
    if gauge == "velocity":
        cfg = cfg.with_value("field.gauge", "velocity")
    dt, n, j0, S = cfg.time.dt, cfg.grid.n, int(rng.integers(1, 50)), 9
    U = rng.normal(size=(S, n)) + 1j * rng.normal(size=(S, n))
    dev = LocalError(cfg, cp)
    got = cp.asnumpy(dev.block(cp.asarray(U), j0, dt))
    got2 = cp.asnumpy(dev.block(cp.asarray(U[::-1].copy()), j0, dt))    # (the upload's ring reused)
    want = LocalError(cfg, np).block(U, j0, dt)
    # the velocity gauge's products (p by FFT) round otherwise on the two devices: 30 draws
    # 4.3e-13 median, 1.02e-12 the largest (flake_velocity_h200x1_20261130T0116.txt)
    tol = 5e-12 if gauge == "velocity" else 1e-12
    for k in range(S):
        one = cp.asnumpy(LocalError(cfg, cp).vector(cp.asarray(U[k]), (j0 + k) * dt, dt, j0 + k))
        scale = np.linalg.norm(want[k])
        assert np.linalg.norm(got[k] - want[k]) <= tol * scale, k
        assert np.linalg.norm(one - want[k]) <= tol * scale, k
    assert np.linalg.norm(got2[::-1] - LocalError(cfg, np).block(U[::-1].copy(), j0, dt)[::-1]) \
        <= tol * np.linalg.norm(want)


@pytest.mark.usefixtures("chebyshev_carrier")
@pytest.mark.gpu
def test_adaptive_steps_on_a_gpu_by_blocks_equal_a_step_at_a_time_and_the_cpu():
    """Adaptive steps (time.tolerance) on a GPU: a dt's n steps with their local errors as
    one block (EstimatingStepper._interval_block: the block's graph) against a step at a time
    (_interval_steps: the one-kernel estimate): psi bit for bit, e within 1e-6 of its size +
    1e-15; and a whole adaptive run against the CPU's: each stated error within the
    tolerance; the same steps taken (psi to 1e-9, the stated error to 1e-6 of itself), or,
    where an estimate at a step choice's threshold rounded the other way, steps within 5 %
    and psi within twice the tolerance."""
    import tdse
    import tdse.numerics.adaptive as ad
    from benchmarks import drives
    from tdse.config import with_values
    rng = np.random.default_rng()
    cfg = with_values(drives.make("laser", rng), [("time.dt", 1.0), ("time.tolerance", 1e-6)])
    plan = tdse.prepare(cfg, backend="cupy")
    a, b = (ad.EstimatingStepper(cfg, plan.stepper, cp, control=True) for _ in range(2))
    psi = cp.asarray(plan.psi0, dtype=complex)
    for st in (a, b):
        st.tau = 1.0
    for j, n in ((0, 3), (7, 8), (20, 5)):
        e0 = cp.asarray(1e-9 * (rng.standard_normal(psi.size) + 1j * rng.standard_normal(psi.size)))
        p1, e1, ok1 = a._interval_block(psi, e0, j, n)
        p2, e2, ok2 = b._interval_steps(psi, e0, j, n)
        assert ok1 and ok2 and bool(cp.array_equal(p1, p2))
        assert float(cp.linalg.norm(e1 - e2)) <= 1e-6 * float(cp.linalg.norm(e2)) + 1e-15
        psi = p1
    gpu, cpu = tdse.simulate(cfg, backend="cupy"), tdse.simulate(cfg, backend="numpy")
    diff = float(np.abs(np.asarray(gpu.psi[-1]) - np.asarray(cpu.psi[-1])).max())
    for res in (gpu, cpu):
        assert res.time_error["error_at_t_end"] <= 1e-6
    if gpu.time_error["steps_taken"] == cpu.time_error["steps_taken"]:   # (the usual case)
        assert diff < 1e-9
        assert gpu.time_error["error_at_t_end"] == pytest.approx(cpu.time_error["error_at_t_end"], rel=1e-6)
    else:       # an estimate at a step choice's threshold rounded the other way: both within it
        assert abs(gpu.time_error["steps_taken"] - cpu.time_error["steps_taken"]) <= 0.05 * cpu.time_error["steps_taken"]
        assert diff < 2e-6


@pytest.mark.gpu
@pytest.mark.parametrize("kind", ["fast", "abrupt", "laser"])
def test_the_split_carrier_on_a_gpu_carries_e_as_the_cpus(kind):
    """SplitCarrier.carry on a GPU (a piece's split steps in one kernel, Q the DST-I's
    matrix; 3-point, 5-point, the DVR with an absorber) equals the CPU's split steps (FFTs
    of the odd extension) with the local errors added after each step, to 1e-12 of e,
    from random e and local errors over a random piece."""
    import tdse
    from benchmarks import drives
    from tdse.numerics import adaptive as ad
    from tdse.numerics.carrier import SplitCarrier, carrier
    rng = np.random.default_rng()
    cfg = drives.make(kind, rng)
    tc = ad.transport_config(cfg)
    dev = carrier(tdse.prepare(tc, backend="cupy").stepper(), cp)
    host = carrier(tdse.prepare(tc, backend="numpy").stepper(), np)
    assert isinstance(dev, SplitCarrier) and dev.one_launch and not host.one_launch
    n, S, k0 = cfg.grid.n, int(rng.integers(5, 40)), int(rng.integers(0, 60))
    e = rng.normal(size=n) + 1j * rng.normal(size=n)
    Ls = 0.1 * (rng.normal(size=(S, n)) + 1j * rng.normal(size=(S, n)))
    got = cp.asnumpy(dev.carry(cp.asarray(e), k0, cp.asarray(Ls)))
    want = host.advance(e, k0, k0 + S, taps={k0 + i + 1: [lambda Y, L=Ls[i]: ad._add_to(L, Y)]
                                              for i in range(S)})
    assert np.linalg.norm(got - want) <= 1e-12 * np.linalg.norm(want)


@pytest.mark.gpu
@pytest.mark.parametrize("kind", ["fast", "laser"])
def test_the_split_carriers_taps_are_e_at_their_steps_from_one_launch(kind):
    """SplitCarrier.carry with taps at random steps of a piece (a run's snapshots): one
    kernel launch, e at each tapped step written into a row of its own -- bit for bit the
    e of a carry over the piece up to that step alone --, the piece's e bit for bit the
    carry's without taps; the taps' arrays unchanged by a later carry."""
    import tdse
    from benchmarks import drives
    from tdse.numerics import adaptive as ad
    from tdse.numerics.carrier import carrier
    rng = np.random.default_rng()
    cfg = drives.make(kind, rng)
    dev = carrier(tdse.prepare(ad.transport_config(cfg), backend="cupy").stepper(), cp)
    n, S, k0 = cfg.grid.n, int(rng.integers(20, 120)), int(rng.integers(0, 60))
    e = cp.asarray(rng.normal(size=n) + 1j * rng.normal(size=n))
    Ls = cp.asarray(0.1 * (rng.normal(size=(S, n)) + 1j * rng.normal(size=(S, n))))
    marks = sorted({int(k) for k in rng.integers(1, S + 1, size=5)} | {S})
    from tdse.backends.cupy import split
    kernel, launches, seen = split.split_kernel(cp), [], {}
    split._KERNELS["split"] = lambda *a, **k: (launches.append(1), kernel(*a, **k))[1]
    try:
        got = dev.carry(e, k0, Ls, taps={k0 + k: [lambda E, k=k: seen.setdefault(k, E)] for k in marks})
    finally:
        split._KERNELS["split"] = kernel
    assert sorted(seen) == marks and len(launches) == 1
    whole = dev.carry(e, k0, Ls)
    assert bool(cp.array_equal(got, whole))
    kept = {k: v.copy() for k, v in seen.items()}
    for k in marks:
        assert bool(cp.array_equal(seen[k], dev.carry(e, k0, Ls[:k]))), k
    dev.carry(whole, k0 + S, Ls)
    for k in marks:
        assert bool(cp.array_equal(seen[k], kept[k])), k


@pytest.mark.gpu
def test_a_short_runs_estimate_block_launched_eagerly_equals_its_graphs(monkeypatch):
    """LocalError.block on a GPU for a run of at most EAGER_PIECES pieces launches its
    products without capturing a graph (_eager), one of more pieces captures it: the same
    bits for the laser drive's random states; no graph captured for the short run."""
    import tdse.numerics.local_error as le
    from benchmarks import drives
    rng = np.random.default_rng()
    cfg = drives.make("laser", rng)
    n, dt = cfg.grid.n, cfg.time.dt
    got = {}
    for eager in (True, False):
        monkeypatch.setattr(le, "EAGER_PIECES", 10 ** 6 if eager else 0)
        local = le.LocalError(cfg, cp)
        assert local._eager() == eager
        S = local.chunk_steps
        U = cp.asarray(np.random.default_rng(7).standard_normal((S, n)) + 0j)
        got[eager] = [local.block(U, k * S, dt) for k in range(3)]
        assert all((g["graph"] is None) == eager for g in local._graphs.values())
    for a, b in zip(got[True], got[False]):
        assert bool(cp.array_equal(a, b))


_SPIN = r'''
extern "C" __global__ void spin(double* x, long long cycles) {
    long long t0 = clock64();
    while (clock64() - t0 < cycles) { }
    x[threadIdx.x] = 2.0 * threadIdx.x + 1.0;
}
'''


@pytest.mark.gpu
@pytest.mark.parametrize("pooled", [False, True])
def test_capture_orders_by_events_not_a_synchronisation(pooled):
    """graphs.capture returns while the current stream's earlier work still runs (no device
    synchronisation: the steps queued ahead go on while the host captures), and its graph,
    launched after, reads what that work wrote -- with a pool, after the eager run whose
    blocks the graph reuses.  The old capture synchronised the device first (fails the
    first assertion)."""
    from tdse.numerics.graphs import capture
    rng = np.random.default_rng()
    scale = float(rng.uniform(0.5, 2.0))
    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        x = cp.zeros(64)
        out = cp.zeros(64)
        spin = cp.RawKernel(_SPIN, "spin")

        def body():
            if pooled:                   # a temporary, from the pool
                out[...] = x * scale + 1.0
            else:                        # no allocation under capture
                cp.multiply(x, scale, out=out)
                cp.add(out, 1.0, out=out)

        # every kernel loaded and cuBLAS's handle made (cublasCreate waits for the device)
        # before the timed launch: a capture once, untimed
        spin((1,), (1,), (x, np.int64(0)))
        body()
        capture(cp, body, pool=cp.cuda.MemoryPool() if pooled else None)
        stream.synchronize()
        x.fill(0.0)
        rate = cp.cuda.Device().attributes["ClockRate"] * 1e3        # cycles a second
        spin((1,), (64,), (x, np.int64(int(1.0 * rate))))            # ~1 s on the device
        graph = capture(cp, body, pool=cp.cuda.MemoryPool() if pooled else None)
        busy = not stream.done
        out.fill(-1.0)
        graph.launch()
        got = out.get()
    assert busy, "capture waited for the stream's earlier work"
    expect = (2.0 * np.arange(64) + 1.0) * scale + 1.0
    np.testing.assert_allclose(got, expect, rtol=1e-15)     # (a fused multiply-add: an ulp)
