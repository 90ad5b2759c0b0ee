"""GPU tests of the cupy executor against cupy.matmul (marker ``gpu`` / ``multi_gpu(n)``).

Run on the device machines: ``python -m pytest -m "gpu or multi_gpu" tests/test_gpu.py``.
Tolerances as in test_engine.py, relative to max|ref| (cuBLAS blocking differs per tile).
"""
import numpy as np
import pytest

import mgemm

cp = pytest.importorskip("cupy")

TOL = {np.float32: 1e-4, np.complex64: 1e-4, np.float64: 1e-12, np.complex128: 1e-12}
SHAPES = [(1, 1, 1), (100, 37, 250), (513, 300, 257), (1024, 1024, 1024)]


def rand(dev, shape, dtype, seed):
    with cp.cuda.Device(dev):
        r = cp.random.default_rng(seed)
        x = r.standard_normal(shape)
        if np.issubdtype(dtype, np.complexfloating):
            x = x + 1j * r.standard_normal(shape)
        return x.astype(dtype)


def check(ngpu, placement, dtype, shape, tile, beta, complex_method="native", seed=0):
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
                     complex_method=complex_method)
    assert out is C and out.device.id == c_dev
    with cp.cuda.Device(0):
        err = float(cp.abs(cp.asarray(out) - ref).max() / (cp.abs(ref).max() + 1))
    assert err <= TOL[dtype] * max(k, 1) ** 0.5, err


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
