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

Two structural facts are used (both exact algebra, documented in docs/MODULES.md):

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
from functools import lru_cache

import numpy as np

from .arrays import get_xp, unit_roundoff
from .formulas import FORMULAS, powers, ps
from .gemm import gemm
from .plan import ExpmPlan, plan_expm

__all__ = ["expm", "expm_plan_for", "evaluate", "ExpmMemoryError", "memory_bytes",
           "peak_matrices", "fitting_plan", "leaner_plans", "largest_fitting_n",
           "input_bytes", "input_and_exponent_bytes"]


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
    """A^H = -A to rounding: max|A + A^H| <= 64 u max|A|; False for a banded A (the check
    needs a transpose across the devices: pass ``unitary`` instead)."""
    if _banded(A):
        return False
    if not A.size:
        return True
    scale = float(xp.abs(A).max())
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
    gpu = xp is not np
    if banded:
        layout = A.layout
    elif layout is None:
        layout = default_layout(gpu, devices)
    if not (isinstance(layout, Layout) or layout in ("bands", "gemm")):
        raise ValueError(f"layout must be 'bands', 'gemm' or a Layout, got layout={layout!r}")
    bands = layout != "gemm"
    home = None if banded or not gpu else A.device
    if bands:
        band_devices = _band_devices(layout, devices, home)
        if gpu and not isinstance(band_devices, (list, tuple)):
            raise ValueError(f"devices must list GPU ids for a CuPy A, got devices={devices!r}")
    output = ("banded" if banded else "array") if output is None else output
    if output not in ("array", "banded") or (output == "banded" and not bands):
        raise ValueError(f"output must be 'array' (or 'banded' with layout='bands'), got output={output!r}")
    if plan is None:
        plan, M = expm_plan_for(A, method=method, tolerance=tolerance, terms=terms,
                                shift=shift, unitary=unitary, split=split)
    else:  # a caller's fixed plan: no O(N^2) detection, only the shift
        M = _shifted(xp, A, shift)
    dtype, n = A.dtype, A.shape[0]
    if gpu:     # the fastest plan that fits each device's free memory, or refuse
        devs = list(band_devices) if bands else [home.id]
        g = len(devs)
        # the input counted as if still to come: conservative by one input band when
        # A - mu I (or A's bands) already exist
        plan = fitting_plan(plan, n, dtype, g, usable(min(free_bytes(xp, d) for d in devs)))
    if plan.path == "split":
        M = M.imag if banded else xp.ascontiguousarray(M.imag)
    if banded:
        del A  # the caller may pass a temporary: its bands are freed before the work
    if bands:
        lay = layout if isinstance(layout, Layout) else Layout(n, band_devices, gpu=gpu)
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


def default_layout(gpu: bool, devices) -> str:
    """:func:`expm`'s layout when none is given: ``"bands"`` (every matrix in column
    bands, :mod:`mgemm.dist`) when A is on a GPU and ``devices`` lists several GPUs,
    else ``"gemm"`` (whole matrices, each product one :func:`mgemm.gemm` call)."""
    return "bands" if gpu and isinstance(devices, (list, tuple)) and len(devices) > 1 else "gemm"


def _band_devices(layout, devices, home):
    """Where the band layout of :func:`expm` lives: a given :class:`~mgemm.dist.Layout`'s
    devices; else ``devices`` (GPU ids, or an int: that many virtual host devices); else
    A's own GPU ``home``, or one host device."""
    from .dist import Layout
    if isinstance(layout, Layout):
        return layout.devices
    if devices is not None:
        return devices
    return [home.id] if home is not None else 1


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


def evaluate(xp, mm, M, plan):
    """exp of ``M`` by ``plan`` with the products ``mm(X, Y, C=None, alpha=1.0, beta=0.0)``
    (alpha X Y + beta C) and ``xp``'s element-wise operations: for a caller that brings
    its own products (tdse's CUDA-graph step calls cuBLAS directly under stream capture).
    ``M`` is A - mu I, or the real B of A - mu I = iB for ``plan.path == 'split'``; no
    shift factor e^mu, no memory check."""
    return _evaluate(xp, mm, M, plan)


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


# ---------------------------------------------------------------- memory (#23 item 5)
class ExpmMemoryError(MemoryError):
    """exp(A) with every plan that meets the tolerance needs more device memory than is
    free: raised before any allocation, naming what it needs and the largest N that fits."""


class _Meter:
    """Live bytes of a dry run, and what a caching pool holds for them (CuPy's: a freed
    block is kept and reused for a request of its size or smaller, split; blocks of
    separate allocations are never merged), each at its peak."""

    def __init__(self):
        self.live = self.peak = 0
        self.free = []            # sizes of the pool's cached free blocks
        self.pool = 0

    def add(self, b):
        self.live += b
        self.peak = max(self.peak, self.live)
        fits = [f for f in self.free if f >= b]
        if fits:
            f = min(fits)
            self.free.remove(f)
            if f > b:
                self.free.append(f - b)
        else:
            self.pool += b

    def sub(self, b):
        self.live -= b
        self.free.append(b)


class _Ghost:
    """An N x N matrix in a dry run of :func:`_evaluate`: no data, its itemsize counted
    while it lives (CPython frees it when its last reference goes, as it does the array
    or band it stands for)."""
    __array_priority__ = 1000

    def __init__(self, meter, dtype, n):
        self.meter, self.dtype, self.shape, self.ndim = meter, np.dtype(dtype), (n, n), 2
        self.bands = ()                        # :func:`_complex` takes the banded branch
        meter.add(self.dtype.itemsize)

    def __del__(self):
        self.meter.sub(self.dtype.itemsize)

    def _like(self, other=0.0):
        o = other.dtype if isinstance(other, _Ghost) else other
        return _Ghost(self.meter, np.result_type(self.dtype, o), self.shape[0])

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = _like

    def __neg__(self):
        return self._like()

    def __iadd__(self, other):
        return self

    __isub__ = __imul__ = __itruediv__ = __iadd__

    def copy(self):
        return self._like()

    def astype(self, dtype, copy=True):
        return self if (np.dtype(dtype) == self.dtype and not copy) else \
            _Ghost(self.meter, dtype, self.shape[0])

    def zip_with(self, other, f):
        return _Ghost(self.meter, np.result_type(self.dtype, np.complex64), self.shape[0])


class _GhostNS:
    """The array namespace of a dry run: every matrix a :class:`_Ghost`."""

    def __init__(self, meter, n):
        self.meter, self.n = meter, n

    def eye(self, n, dtype=None):
        return _Ghost(self.meter, dtype or np.float64, n)

    def zeros_like(self, X):
        return X._like()

    def ascontiguousarray(self, X):
        return X

    def mm(self, L, R, C=None, alpha=1.0, beta=0.0):
        return _Ghost(self.meter, np.result_type(L.dtype, R.dtype), self.n)


def peak_matrices(plan: ExpmPlan, dtype, pool: bool = False) -> float:
    """Most bytes per N^2 that :func:`expm` holds at once for ``plan`` on ``dtype`` input:
    the input (A - mu I, or B = Im A on the split path), the plan's stored powers,
    accumulators and temporaries, and the result, counted by running the very evaluation
    code (:func:`_evaluate`) on ghost matrices -- so a change to a scheme changes its count.
    ``pool``: what a caching allocator (CuPy's pool, :class:`_Meter`) holds at its peak
    instead: the complex result cannot reuse two freed real blocks, so it is more.  The
    live count is an upper bound of what NumPy allocates (it may reuse a temporary in
    place, temporary elision, where CuPy does not).  E.g. 8 bytes x 12 for the split path's
    cos/sin PS of degree 21 (q = 5).  Cached per (plan, dtype): expm asks at every call."""
    return _peak(plan, np.dtype(dtype).str, bool(pool))


@lru_cache(maxsize=256)
def _peak(plan, dtype, pool):
    meter = _Meter()
    ns = _GhostNS(meter, 2)
    m_dtype = np.dtype(dtype).type(0).real.dtype if plan.path == "split" else np.dtype(dtype)
    M = _Ghost(meter, m_dtype, 2)
    U = _evaluate(ns, ns.mm, M, plan)
    del M
    U2 = U.astype(dtype, copy=False)       # expm's final cast (a copy only if dtypes differ)
    del U, U2
    return float(meter.pool if pool else meter.peak)


def memory_bytes(n: int, plan: ExpmPlan, dtype, devices: int = 1) -> int:
    """Bytes on each device that :func:`expm` of an N x N ``dtype`` matrix needs with
    ``plan``: :func:`peak_matrices` (as CuPy's pool holds it) x N x (its widest band) over
    ``devices`` devices,
    plus, on several, the two staging buffers a streamed product pulls other bands into
    (:meth:`mgemm.dist.Layout._staging`), per dtype the products use."""
    g = max(1, int(devices))
    w = -(-n // g)
    per = peak_matrices(plan, dtype, pool=True) * n * w
    if g > 1:
        real = plan.path == "split"
        item = (np.dtype(dtype).itemsize // (2 if real and np.dtype(dtype).kind == "c" else 1))
        per += 2 * n * w * item
    return int(math.ceil(per))


def fitting_plan(plan: ExpmPlan, n: int, dtype, devices: int, free: int):
    """The fastest plan that fits ``free`` bytes per device: ``plan`` itself, else the
    same degree and squarings with fewer stored Paterson-Stockmeyer powers (more
    products, fewer live matrices; formula plans fall back to Paterson-Stockmeyer of the
    degree ``plan_expm`` picks without formulas), else raise :class:`ExpmMemoryError`
    naming the bytes the leanest plan needs and the largest N whose input and exponent
    fit in ``free``."""
    if memory_bytes(n, plan, dtype, devices) <= free:
        return plan
    cands = leaner_plans(plan, dtype)
    for c in cands:
        if memory_bytes(n, c, dtype, devices) <= free:
            return c
    lean = min([plan] + cands, key=lambda c: memory_bytes(n, c, dtype, devices))
    need = memory_bytes(n, lean, dtype, devices)
    largest = largest_fitting_n(lean, dtype, devices, free)
    raise ExpmMemoryError(
        f"mgemm.expm: N = {n} needs {need / 2**30:.2f} GiB on each of {devices} device(s) "
        f"(the leanest plan: {lean.path} path, degree {lean.degree}, {lean.ps_block} stored "
        f"powers, {lean.squarings} squarings); {free / 2**30:.2f} GiB are free; the largest "
        f"N that fits (with its input) is {largest}" + (" (none does)" if largest == 0 else ""))


def leaner_plans(plan: ExpmPlan, dtype) -> list:
    """The plans :func:`fitting_plan` falls back to, leanest last: a formula plan's
    Paterson-Stockmeyer plan of the degree ``plan_expm`` picks without formulas, then the
    same degree and squarings with fewer stored powers (more products, fewer live
    matrices)."""
    import dataclasses
    cands, base = [], plan
    if plan.formula != "ps":
        base = plan_expm(plan.theta, tolerance=plan.tolerance, split=plan.path == "split",
                         unitary=plan.unitary, unit_roundoff=unit_roundoff(dtype), use_formulas=False)
        cands.append(base)
    if base.method == "auto":
        for q in range(base.ps_block - 1, 0, -1):
            cands.append(dataclasses.replace(base, ps_block=q, products=_products(base, q)))
    return cands


def input_bytes(n: int, dtype, devices: int = 1) -> int:
    """Bytes of the caller's N x N ``dtype`` input on each device (N x its widest band)."""
    return n * -(-n // max(1, int(devices))) * np.dtype(dtype).itemsize


def input_and_exponent_bytes(n: int, plan: ExpmPlan, dtype, devices: int = 1) -> int:
    """Bytes a device needs for the caller's input (:func:`input_bytes`) and :func:`expm`'s
    work with ``plan`` (:func:`memory_bytes`)."""
    return memory_bytes(n, plan, dtype, devices) + input_bytes(n, dtype, devices)


def largest_fitting_n(plan: ExpmPlan, dtype, devices: int, free: int) -> int:
    """The largest N whose input and exponent (:func:`input_and_exponent_bytes`) fit
    ``free`` bytes on each of ``devices`` devices; 0 where none does."""
    total = lambda k: input_and_exponent_bytes(k, plan, dtype, devices)  # noqa: E731
    ref = 4096
    largest = int(math.isqrt(int(free * ref * ref / total(ref))))     # the bytes go as N^2
    while largest > 0 and total(largest) > free:     # the estimate, made exact both ways
        largest -= 1
    while total(largest + 1) <= free:
        largest += 1
    return largest


#: memory left for what the model does not count (cuBLAS workspaces, kernels' scratch,
#: small arrays): this fraction of the free bytes plus RESERVE_BYTES
RESERVE_FRACTION, RESERVE_BYTES = 0.02, 256 * 2 ** 20


def usable(free: int) -> int:
    """``free`` less the reserve (:data:`RESERVE_FRACTION`, :data:`RESERVE_BYTES`)."""
    return max(0, int(free * (1 - RESERVE_FRACTION)) - RESERVE_BYTES)


def free_bytes(cp, device) -> int:
    """Bytes an allocation on GPU ``device`` can still get: the driver's free memory plus
    what CuPy's pool holds unused, within the pool's limit if one is set."""
    with cp.cuda.Device(device):
        pool = cp.get_default_memory_pool()
        free = cp.cuda.runtime.memGetInfo()[0] + pool.free_bytes()
        limit = pool.get_limit()
        if limit:
            free = min(free, limit - pool.used_bytes())
    return int(free)


def _products(plan, q):
    """Products of ``plan``'s degree and squarings with PS block ``q``."""
    m = plan.degree
    if plan.path == "split":
        if m <= 1:                        # I + iB (or I): no product before the squarings
            return 2 * plan.squarings
        dc, ds = m // 2, (m - 1) // 2
        q = max(1, min(q, dc))
        horner = lambda d: 0 if d < q else d // q - (1 if d % q == 0 else 0)  # noqa: E731
        return 1 + (q - 1) + horner(dc) + (horner(ds) + 1 if ds >= 1 else 0) + 2 * plan.squarings
    q = max(1, min(q, m))
    return (q - 1) + m // q - (1 if m % q == 0 else 0) + plan.squarings
