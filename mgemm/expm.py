"""Matrix exponent exp(A) from GEMMs only (plus additions), written once for NumPy/CuPy.

Every product goes through :func:`mgemm.gemm`, so the same code runs on the CPU, the
emulated devices or several GPUs (the multi-GPU engine accelerates it unchanged).

Methods (the choice of degree and squarings is :func:`mgemm.plan.plan_expm`):

* ``taylor`` -- the thesis' algorithm (summary eqs. 2-3): exp A ~ sum_{k<=K} a_k with
  a_0 = I, a_k = (1/k) A a_(k-1), each term one ``gemm(alpha=1/k, beta=0)``; no scaling.
* ``auto`` -- scaling and squaring, exp A = (p(A/2^s))^(2^s), p the truncated Taylor
  polynomial T_m by Paterson-Stockmeyer or (complex path) one of the Bader-Blanes-Casas /
  Sastre formulas of :mod:`mgemm.formulas`; scheme, degree and squarings are the fewest
  products that meet ``tolerance`` for the bound theta = ||A - mu I||_1.

Two structural facts are used (both exact algebra, documented in ARCHITECTURE.md):

* ``shift`` mu: exp(A) = e^mu exp(A - mu I).  For A = -i dt H the TDSE passes the centre
  of H's Gershgorin interval, halving theta (the thesis uses no shift).
* the *split* path: when A = iB with B real (every TDSE generator, as the potential is
  real) each Taylor term is purely real or purely imaginary, so all products are real
  GEMMs on B -- a quarter of the flops of complex ones.  ``taylor`` then runs the same
  recurrence r_k = (1/k) B r_(k-1) with real GEMMs; ``auto`` evaluates cos B and sin B
  by Paterson-Stockmeyer in C = B^2 and squares with (c + is)^2 = (c+s)(c-s) + 2i cs
  (c, s commute), two real GEMMs a squaring.
"""
from __future__ import annotations

import math

import numpy as np

from .arrays import get_xp, unit_roundoff
from .formulas import FORMULAS, powers, ps
from .gemm import gemm
from .plan import ExpmPlan, plan_expm

__all__ = ["expm", "expm_plan_for"]


def _banded(A) -> bool:
    return hasattr(A, "bands")


def _onenorm(xp, M) -> float:
    """||M||_1 (the largest column sum: per band, then the largest band, for a banded M)."""
    if _banded(M):
        return max(_onenorm(M.layout.xp, b) for b in M.bands)
    return float(xp.abs(M).sum(axis=0).max()) if M.size else 0.0


def _is_split(xp, A) -> bool:
    if _banded(A):
        return all(_is_split(A.layout.xp, b) for b in A.bands)
    return bool(xp.iscomplexobj(A)) and not bool(xp.any(A.real))


def _is_skew_hermitian(xp, A, u) -> bool:
    """A^H = -A to rounding; False for a banded A (the check needs a transpose across the
    devices: pass ``unitary`` instead)."""
    if _banded(A):
        return False
    scale = float(xp.abs(A).max()) if A.size else 0.0
    return float(xp.abs(A + A.conj().T).max()) <= 64 * u * max(scale, 1e-300)


def _shifted(xp, A, shift):
    """A - shift*I (a copy; per band for a banded A), or A itself when there is no shift."""
    if not shift:
        return A
    if _banded(A):
        return A.map_columns(lambda b, c0, c1, bxp: _shifted_piece(bxp, b, c0, c1, shift))
    return _shifted_piece(xp, A, 0, A.shape[1], shift)


def _shifted_piece(xp, b, c0, c1, shift):
    """Columns c0..c1-1 of A - shift*I from those of A (a copy)."""
    M = b.copy()
    M[xp.arange(c0, c1), xp.arange(c1 - c0)] -= shift
    return M


def expm_plan_for(A, *, method="auto", tolerance=None, terms=10, shift=None,
                  unitary=None, split=None) -> tuple[ExpmPlan, object]:
    """Plan for exp(A); returns ``(plan, shifted)`` where shifted = A - mu I (a copy
    when mu != 0).  ``split``/``unitary`` None: detected from A (O(N^2) checks; a banded A
    is never taken as unitary unless told)."""
    xp = A.layout.xp if _banded(A) else get_xp(A)
    u = unit_roundoff(A.dtype)
    tolerance = u if tolerance is None else float(tolerance)
    M = _shifted(xp, A, shift)
    if split is None:
        split = _is_split(xp, M)
    if unitary is None:
        unitary = _is_skew_hermitian(xp, M, u)
    theta = _onenorm(xp, M.imag if split else M)
    return plan_expm(theta, method=method, tolerance=tolerance, terms=terms, split=split,
                     unitary=unitary, unit_roundoff=u), M


def expm(A, *, method="auto", tolerance=None, terms=10, shift=None, unitary=None,
         split=None, plan=None, return_plan=False, layout=None, output=None, trace=None,
         **gemm_opts):
    """exp(A) for a square matrix A (NumPy, CuPy or a :class:`mgemm.dist.BandedMatrix`),
    from :func:`mgemm.gemm` products.

    ``tolerance``: per-call bound on the truncation error (default: the unit roundoff
    of A's dtype).  ``terms``: K for ``taylor``.  ``shift``: a scalar mu, exp(A) =
    e^mu exp(A - mu I) (must be purely imaginary to keep the split path).
    ``plan``: an :class:`ExpmPlan` to use instead of choosing one (a fixed plan for many
    matrices with the same bound; the caller guarantees its ``theta`` bounds
    ||A - shift I||_1 and, for ``path='split'``, that A - shift I is purely imaginary).
    ``gemm_opts`` go to every gemm (``devices``, ``executor``, ``tile``, ``complex_method``...).

    ``layout``: ``"bands"`` keeps every matrix in column bands over ``devices``
    (:mod:`mgemm.dist`: products stream the left operand's bands between devices); the
    default when ``devices`` lists several GPUs and A is a CuPy array; a
    :class:`mgemm.dist.Layout` to reuse one (its staging buffers).  ``"gemm"``: each
    product is a separate :func:`mgemm.gemm` call (band engine with its transfers).
    A :class:`~mgemm.dist.BandedMatrix` A (built in place with
    :meth:`~mgemm.dist.Layout.from_columns`: never whole on one device) runs on its own
    layout; without a ``plan`` its theta and split are read from the bands (local work;
    ``unitary`` is then False unless given).  ``output``: ``"array"`` (the default for an
    array A: gathered on A's device) or ``"banded"`` (the default for a banded A: the
    :class:`~mgemm.dist.BandedMatrix` itself, no gather).  ``trace``: a list that receives
    (device, kind, start, end) CUDA events of the band layout's GEMMs and copies
    (:func:`mgemm.dist.trace_rows`).  Returns exp(A), or ``(exp(A), plan)`` with
    ``return_plan``.
    """
    from .dist import Layout
    banded = _banded(A)
    xp = A.layout.xp if banded else get_xp(A)
    if A.ndim != 2 or A.shape[0] != A.shape[1]:
        raise ValueError(f"`A` must be a square matrix, but has shape A.shape={A.shape}")
    if not np.issubdtype(A.dtype, np.inexact):
        raise TypeError(f"`A` must be float or complex, but has A.dtype={A.dtype}")
    devices = gemm_opts.get("devices")
    if banded:
        layout = A.layout
    elif layout is None:
        layout = ("bands" if xp is not np and isinstance(devices, (list, tuple))
                  and len(devices) > 1 else "gemm")
    if not (isinstance(layout, Layout) or layout in ("bands", "gemm")):
        raise ValueError(f"layout must be 'bands', 'gemm' or a Layout, got layout={layout!r}")
    bands = layout != "gemm"
    output = ("banded" if banded else "array") if output is None else output
    if output not in ("array", "banded") or (output == "banded" and not bands):
        raise ValueError(f"output must be 'array' (or 'banded' with layout='bands'), got output={output!r}")
    if plan is None:
        plan, M = expm_plan_for(A, method=method, tolerance=tolerance, terms=terms,
                                shift=shift, unitary=unitary, split=split)
    else:  # a caller's fixed plan: no O(N^2) detection, only the shift
        M = _shifted(xp, A, shift)
    if plan.path == "split":
        M = M.imag if banded else xp.ascontiguousarray(M.imag)
    dtype, n = A.dtype, A.shape[0]
    home = None if banded or xp is np else A.device
    if banded:
        del A  # the caller may pass a temporary: its bands are freed before the work
    if bands:
        lay = layout if isinstance(layout, Layout) else Layout(
            n, devices if devices is not None else 1, gpu=xp is not np)
        lay.trace = trace
        mm, ns = lay.mm, lay
        if not banded:
            M = lay.scatter(M)
    else:
        mm = lambda X, Y, C=None, alpha=1.0, beta=0.0: gemm(  # noqa: E731
            X, Y, C, alpha, beta, **gemm_opts)
        ns = xp
    U = _evaluate(ns, mm, M, plan).astype(dtype, copy=False)
    if shift:
        U *= np.exp(shift)
    if bands and output == "array":
        U = U.to_array(0)
        if home is not None and U.device.id != home.id:
            from .dist import to_device
            with home:
                U = to_device(xp, U)
                home.synchronize()
    return (U, plan) if return_plan else U


def _evaluate(xp, mm, M, plan):
    """The plan's polynomial and squarings (``M``: A - mu I, or B for the split path),
    written once against ``xp`` (numpy, cupy or a :class:`mgemm.dist.Layout`)."""
    if plan.path == "split":
        B = M
        if plan.method == "taylor":
            c, s = _taylor_split(xp, mm, B, plan.degree)
        else:
            c, s = _ps_split(xp, mm, B / 2.0 ** plan.squarings, plan.degree, plan.ps_block)
            for _ in range(plan.squarings):
                c, s = mm(c + s, c - s), mm(c, s, alpha=2.0)
        return _complex(c, s)
    if plan.method == "taylor":
        return _taylor(xp, mm, M, plan.degree)
    X = M / 2.0 ** plan.squarings
    if plan.formula != "ps":  # Bader-Blanes-Casas / Sastre (mgemm.formulas)
        U = FORMULAS[plan.formula][0](xp, mm, X)
    else:
        pows = powers(mm, _eye_like(xp, X), X, max(1, min(plan.ps_block, plan.degree)))
        U = ps(mm, pows, _taylor_coeffs(plan.degree))
    for _ in range(plan.squarings):
        U = mm(U, U)
    return U


def _complex(c, s):
    """c + i s written into one complex array (per band for a banded matrix): no complex
    temporary i s next to c, s and the result."""
    if hasattr(c, "bands"):
        return c.zip_with(s, _complex)
    xp = get_xp(c)
    out = xp.empty(c.shape, dtype=np.result_type(c.dtype, np.complex64))
    out.real[...] = c
    out.imag[...] = s
    return out


def _eye_like(xp, M):
    return xp.eye(M.shape[0], dtype=M.dtype)


def _taylor_coeffs(m):
    return [1.0 / math.factorial(k) for k in range(m + 1)]


def _taylor(xp, mm, A, K):
    """Thesis eqs. (2)-(3): sum of a_k, a_k = (1/k) A a_(k-1) as gemm(alpha=1/k, beta=0)."""
    term = _eye_like(xp, A)
    U = term.copy()
    for k in range(1, K + 1):
        term = mm(A, term, alpha=1.0 / k)
        U += term
    return U


def _taylor_split(xp, mm, B, K):
    """Eqs. (2)-(3) for A = iB: a_k = i^k r_k with real r_k = (1/k) B r_(k-1)."""
    r = _eye_like(xp, B)
    c, s = r.copy(), xp.zeros_like(B)
    for k in range(1, K + 1):
        r = mm(B, r, alpha=1.0 / k)
        sign = 1.0 if k % 4 in (0, 1) else -1.0
        (s if k % 2 else c).__iadd__(sign * r)
    return c, s


def _ps_split(xp, mm, B, m, q):
    """cos B and sin B truncated at total degree m in B, by PS in C = B^2 with shared
    powers C^2..C^q (:func:`mgemm.plan.split_products` counts the products)."""
    eye = _eye_like(xp, B)
    if m <= 1:
        return eye, (B.copy() if m == 1 else xp.zeros_like(B))
    dc, ds = m // 2, (m - 1) // 2
    cos_c = [(-1) ** j / math.factorial(2 * j) for j in range(dc + 1)]
    sin_c = [(-1) ** j / math.factorial(2 * j + 1) for j in range(ds + 1)]
    pows = powers(mm, eye, mm(B, B), max(1, min(q, dc)))
    cosB = ps(mm, pows, cos_c)
    sinB = mm(B, ps(mm, pows, sin_c)) if ds >= 1 else B.copy()
    return cosB, sinB
