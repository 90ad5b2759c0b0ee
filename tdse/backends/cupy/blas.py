"""cuBLAS DGEMMs called through ctypes from the libcublas CuPy has loaded: CuPy's own
wrappers refuse to run under a stream capture, these are captured into a graph
(:mod:`tdse.numerics.graphs`).  Row-major operands as column-major transposes: (M X)^T =
X^T M^T, no copies."""
from __future__ import annotations

import ctypes

import numpy as np

__all__ = ["dgemm_fn", "dgemm_into", "dgemm_halves_into"]

_FN: dict = {}
_ONE, _ZERO = np.array(1.0), np.array(0.0)


def _cublas(cp, name, argtypes):
    """``name`` from the libcublas CuPy has loaded (found in /proc/self/maps)."""
    if name not in _FN:
        cp.cuda.device.get_cublas_handle()          # loads libcublas
        with open("/proc/self/maps") as f:
            paths = sorted({ln.split()[-1] for ln in f
                            if "libcublas.so" in ln and "libcublasLt" not in ln})
        if not paths:
            raise OSError("libcublas is not loaded")
        fn = getattr(ctypes.CDLL(paths[0]), name)
        fn.argtypes, fn.restype = argtypes, ctypes.c_int
        _FN[name] = fn
    return _FN[name]


_p, _i, _l = ctypes.c_void_p, ctypes.c_int, ctypes.c_longlong


def dgemm_fn(cp):
    """cublasDgemm_v2."""
    return _cublas(cp, "cublasDgemm_v2", [_p, _i, _i, _i, _i, _i, _p, _p, _i, _p, _i, _p, _p, _i])


def _check(err, name):
    if err:
        raise RuntimeError(f"{name} failed with status {err}")


def dgemm_into(cp, M, X, out):
    """out = M X, M real N x N, X a C-contiguous complex N (x B) as N x 2B reals: one DGEMM."""
    n, cols = M.shape[0], 2 * (X.size // M.shape[0])
    _check(dgemm_fn(cp)(cp.cuda.device.get_cublas_handle(), 0, 0, cols, n, n, _ONE.ctypes.data,
                        X.data.ptr, cols, M.data.ptr, n, _ZERO.ctypes.data, out.data.ptr, cols),
           "cublasDgemm")


def dgemm_halves_into(cp, K, X, out):
    """out[h] = K[h] X[h] for the two halves h of a folded block (:func:`tdse.model.centro.
    centro_fold`): K (2, m, m) real, X and out C-contiguous complex 2m x B (each half m x 2B
    reals): one strided-batched DGEMM, half the flops of the unfolded block's product.  On one
    H200 at N = 500, B = 1000 (a scan's batch): 14.3 us against the full DGEMM's 23.0
    (``benchmarks/archive/folded_gpu_term.py``, ``folded_gpu_term_h200x1_20261203T1455.txt``)."""
    m = K.shape[1]
    cols = 2 * (X.size // (2 * m))
    fn = _cublas(cp, "cublasDgemmStridedBatched",
                 [_p, _i, _i, _i, _i, _i, _p, _p, _i, _l, _p, _i, _l, _p, _p, _i, _l, _i])
    _check(fn(cp.cuda.device.get_cublas_handle(), 0, 0, cols, m, m, _ONE.ctypes.data,
              X.data.ptr, cols, m * cols, K.data.ptr, m, m * m, _ZERO.ctypes.data,
              out.data.ptr, cols, m * cols, 2), "cublasDgemmStridedBatched")
