"""Public GEMM: C = alpha*A@B + beta*C (convert, then check, then dispatch; STYLE.md item 4).

Complex products can be done three ways (``complex_method``):

* ``"native"`` -- one complex GEMM (cuBLAS ZGEMM/CGEMM, or NumPy);
* ``"4m"`` -- the thesis' split into four real GEMMs (summary eq. 4):
  Re C = alpha(ReA ReB - ImA ImB) + beta Re C, Im C = alpha(ReA ImB + ImA ReB) + beta Im C;
* ``"3m"`` -- Gauss' trick, three real GEMMs: T1 = ReA ReB, T2 = ImA ImB,
  T3 = (ReA + ImA)(ReB + ImB); Re P = T1 - T2, Im P = T3 - T1 - T2;
* ``"auto"`` -- 3m where it was measured faster on this GPU model for this case
  (:func:`mgemm.profile.choose_method`: a user's ``mgemm tune --save`` or the shipped
  tables), else native; native on the CPU.

The 4M split is written once here against the array module; every real product goes
through the chosen executor, so it runs on one CPU, emulated devices or several GPUs.
3M is fused into the band schedule where the executor runs schedules (``emulated``,
``cupy``: :mod:`mgemm.schedule`, ``method="3m"``): each tile's three real GEMMs and
the additions run on the worker, so the bands travel once; on ``numpy`` it is the same
split as 4M, with three products.
"""
from __future__ import annotations

import numbers

import numpy as np

from . import executors
from .arrays import get_xp, is_device_array

SUPPORTED_DTYPES = (np.float32, np.float64, np.complex64, np.complex128)
COMPLEX_METHODS = ("native", "4m", "3m", "auto")


def _check(A, B, C, complex_method):
    for name, M in (("A", A), ("B", B)):
        if getattr(M, "ndim", None) != 2:
            raise ValueError(f"`{name}` must be a 2-D matrix, but has shape {name}.shape="
                             f"{getattr(M, 'shape', None)}")
        if np.dtype(M.dtype).type not in SUPPORTED_DTYPES:
            raise TypeError(f"`{name}` must be float32/64 or complex64/128, but has "
                            f"{name}.dtype={M.dtype}")
    if A.shape[1] != B.shape[0]:
        raise ValueError(f"inner dimensions differ: A.shape={A.shape}, B.shape={B.shape}")
    if A.dtype != B.dtype:
        raise TypeError(f"A and B must have one dtype, got A.dtype={A.dtype}, B.dtype={B.dtype}")
    if C is not None:
        if C.shape != (A.shape[0], B.shape[1]):
            raise ValueError(f"`C` must have shape {(A.shape[0], B.shape[1])}, but has "
                             f"C.shape={C.shape}")
        if C.dtype != A.dtype:
            raise TypeError(f"C must have the dtype of A, got C.dtype={C.dtype}, A.dtype={A.dtype}")
    if complex_method not in COMPLEX_METHODS:
        raise ValueError(f"complex_method must be one of {COMPLEX_METHODS}, got "
                         f"complex_method={complex_method!r}")


def _default_executor(A, devices) -> str:
    if isinstance(devices, numbers.Integral) and not isinstance(devices, bool):
        return "emulated"
    return "cupy" if is_device_array(A) else "numpy"


def gemm(A, B, C=None, alpha=1.0, beta=0.0, *, devices=None, tile=None, executor=None,
         complex_method="native", placement=None, shares=None, trace=False):
    """C = alpha*A@B + beta*C.

    A, B, C: NumPy arrays, or CuPy arrays on any devices (C is then updated in place on
    its device and returned).  ``devices``: list of GPU ids for ``cupy``, or an int (the
    number of virtual devices) for ``emulated``.  ``tile``: band width N_i (int, or
    "auto"), ``placement``, ``shares`` (rows per worker, default equal): see
    :func:`mgemm.schedule.plan_gemm` and :mod:`mgemm.balance`.  ``executor``: a name
    in :data:`mgemm.executors.REGISTRY`; default ``cupy`` for device arrays, ``emulated``
    when ``devices`` is an int, else ``numpy``.  With ``trace=True`` the executor records
    timed events, available afterwards as :func:`mgemm.last_trace`.
    """
    if C is None and beta != 0:
        raise ValueError(f"beta={beta!r} needs a C to scale; pass C or beta=0")
    _check(A, B, C, complex_method)
    ex = executors.get(executor or _default_executor(A, devices))
    if complex_method == "auto":  # 3m only where measured faster on this GPU model
        chooser = getattr(ex, "choose_method", None)
        complex_method = ("native" if chooser is None or not np.iscomplexobj(A) else
                          chooser(A, B, C, devices if isinstance(devices, (list, tuple)) else None,
                                  placement))
    opts = dict(devices=devices, tile=tile, placement=placement, trace=trace)
    if shares is not None:
        opts["shares"] = shares
    if np.iscomplexobj(A) and complex_method == "3m" and getattr(ex, "fused_3m", False):
        return ex.gemm(A, B, C, alpha, beta, method="3m", **opts)
    if np.iscomplexobj(A) and complex_method != "native":
        return _split_complex(ex, A, B, C, alpha, beta, complex_method, opts)
    return ex.gemm(A, B, C, alpha, beta, **opts)


def _split_complex(ex, A, B, C, alpha, beta, method, opts):
    """4M / 3M complex product from real GEMMs (thesis summary eq. 4; Gauss)."""
    xp = get_xp(A)
    Ar, Ai = xp.ascontiguousarray(A.real), xp.ascontiguousarray(A.imag)
    Br, Bi = xp.ascontiguousarray(B.real), xp.ascontiguousarray(B.imag)
    g = lambda X, Y, Z=None, a=1.0, b=0.0: ex.gemm(X, Y, Z, a, b, **opts)  # noqa: E731
    if method == "4m":
        Pr = g(Ar, Br)
        g(Ai, Bi, Pr, -1.0, 1.0)
        Pi = g(Ar, Bi)
        g(Ai, Br, Pi, 1.0, 1.0)
    else:  # 3m
        T1 = g(Ar, Br)
        T2 = g(Ai, Bi)
        Ar += Ai  # reuse the temporary copies: (ReA + ImA), (ReB + ImB)
        Br += Bi
        Pi = g(Ar, Br)
        Pi -= T1
        Pi -= T2
        T1 -= T2
        Pr = T1
    P = (Pr + 1j * Pi).astype(A.dtype, copy=False)
    if alpha != 1:
        P *= alpha
    if C is None:
        return P
    if beta == 0:
        C[...] = P
    else:
        C *= beta
        C += P
    return C
