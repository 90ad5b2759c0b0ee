"""Can a block Chebyshev term be captured in a CUDA graph with CuPy (device probe)?
Times, for N = 500 and B members: one term as today (cupy.matmul + ElementwiseKernel,
launched from Python), the same launched from Python with a raw cuBLAS call, and K terms
replayed from one captured graph; checks the graph's result against the eager one.
python benchmarks/archive/graph_probe.py [B] [K]"""
import sys
import time

import numpy as np
import cupy as cp
from cupy_backends.cuda.libs import cublas

B = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
K = int(sys.argv[2]) if len(sys.argv) > 2 else 11
N = 500
rng = np.random.default_rng(1)
A = rng.standard_normal((N, N))
T = cp.asarray(A + A.T)
X0 = cp.asarray(rng.standard_normal((N, B)) + 1j * rng.standard_normal((N, B)))
d = cp.asarray(rng.standard_normal((N, B)))
coef = cp.asarray(rng.standard_normal(K + 1) + 1j * rng.standard_normal(K + 1)) * 0.1
rec = cp.ElementwiseKernel("T g, float64 d, T x, T p, float64 k, raw T a, int32 ik", "T z, T acc",
                           "z = g * k + x * d - p; acc += a[ik] * z", "probe_recur")
kin = cp.empty((N, B), dtype=complex)
bufs = [cp.empty((N, B), dtype=complex) for _ in range(3)]
Y = cp.empty((N, B), dtype=complex)


def _libcublas():
    import ctypes
    cp.cuda.device.get_cublas_handle()
    with open("/proc/self/maps") as f:
        paths = sorted({ln.split()[-1] for ln in f if "libcublas.so" in ln and "Lt" not in ln})
    lib = ctypes.CDLL(paths[0])
    fn = lib.cublasDgemm_v2
    fn.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                   ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p,
                   ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int]
    print("cuBLAS from", paths[0])
    return fn


_DGEMM = _libcublas()
_ONE, _ZERO = np.array(1.0), np.array(0.0)


def dgemm(out, Xc):
    """out (N x B complex, as N x 2B reals) = T @ Xc, cuBLAS column-major: out^T = Xc^T T."""
    h = cp.cuda.device.get_cublas_handle()
    st = _DGEMM(h, 0, 0, 2 * B, N, N, _ONE.ctypes.data, Xc.data.ptr, 2 * B, T.data.ptr, N,
                _ZERO.ctypes.data, out.data.ptr, 2 * B)
    assert st == 0, st


def bind():
    h = cp.cuda.device.get_cublas_handle()
    cublas.setStream(h, cp.cuda.get_current_stream().ptr)


def series(raw):
    prev, cur, nxt = bufs
    prev[...] = X0
    cur[...] = X0 * 0.3
    Y[...] = X0
    for k in range(2, K + 1):
        if raw:
            dgemm(kin, cur)
            g = kin
        else:
            g = (T @ cur.view(np.float64).reshape(N, -1)).view(complex).reshape(N, B)
        rec(g, d, cur, prev, 0.01, coef, k, nxt, Y)
        prev, cur, nxt = cur, nxt, prev
    return Y


def timed(label, f, n=50):
    f()
    cp.cuda.Device().synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        f()
    host = time.perf_counter() - t0
    cp.cuda.Device().synchronize()
    wall = time.perf_counter() - t0
    print(f"{label:34s} {1e6 * wall / n / (K - 1):8.1f} us a term (host {1e6 * host / n / (K - 1):.1f})",
          flush=True)


ref = series(False).copy()
timed("eager, cupy.matmul", lambda: series(False))
bind()
r2 = series(True).copy()
print("raw dgemm vs matmul max diff", float(abs(r2 - ref).max()))
bind()
timed("eager, raw dgemm", lambda: series(True))
s = cp.cuda.Stream(non_blocking=True)
with s:
    bind()
    series(True)
    s.synchronize()
    s.begin_capture()
    series(True)
    g = s.end_capture()
    g.launch(s)
    s.synchronize()
print("graph vs eager max diff", float(abs(Y - ref).max()))
with s:
    timed("graph replay", lambda: g.launch(s))
try:
    s2 = cp.cuda.Stream(non_blocking=True)
    with s2:
        s2.begin_capture()
        series(False)
        g2 = s2.end_capture()
        g2.launch(s2)
        s2.synchronize()
    print("matmul under capture: ok, diff", float(abs(Y - ref).max()))
except Exception as e:  # noqa: BLE001
    print("matmul under capture failed:", type(e).__name__, str(e)[:200])
