"""LAPACK routines the eigenpairs call directly (ctypes through SciPy's ``cython_lapack``
table, no GIL held while they run, workspaces made once per thread): dstemr for a
tridiagonal matrix's lowest pairs, dgtsv for many shifted tridiagonal solves in one call,
and a Sturm count by dstebz.  Where ctypes cannot reach a routine, SciPy's wrapper of the
same routine."""
from __future__ import annotations

import threading

import numpy as np
import scipy.linalg

__all__ = ["stemr", "stemr_function", "shifted_solves", "count_below"]

_STEMR = []
_GTSV = []


def _lapack_capsule(name, ints, argtypes):
    """LAPACK routine ``name`` as a ctypes function (SciPy's LAPACK, ``cython_lapack``'s
    table): SciPy's wrapper of dstemr, the same bits, took 5x / 14x the time at N = 2048 /
    8192 (``benchmarks/results/stemr_vs_scipy_cpu2_20261128T1116.txt``).  ``ints``: the
    ``int *`` count of its LP64 signature, checked.  None where ctypes cannot reach it."""
    try:
        import ctypes

        import scipy.linalg.cython_lapack as cl
        cap = cl.__pyx_capi__[name]
        get_name, get_ptr = ctypes.pythonapi.PyCapsule_GetName, ctypes.pythonapi.PyCapsule_GetPointer
        get_name.restype, get_name.argtypes = ctypes.c_char_p, [ctypes.py_object]
        get_ptr.restype, get_ptr.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
        sig = get_name(cap)
        if sig and sig.count(b"int *") == ints and b"long" not in sig:
            return ctypes.CFUNCTYPE(None, *argtypes)(get_ptr(cap, sig))
    except Exception:  # noqa: BLE001 -- any failure: SciPy's wrapper instead
        pass
    return None


def stemr_function():
    """LAPACK's dstemr as a ctypes function (:func:`_lapack_capsule`), or None."""
    if not _STEMR:
        import ctypes
        ip, dp, cp = ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_double), ctypes.c_char_p
        # jobz range n d e vl vu il iu m w z ldz nzc isuppz tryrac work lwork iwork liwork info
        _STEMR.append(_lapack_capsule("dstemr", 12, (cp, cp, ip, dp, dp, dp, dp, ip, ip, ip, dp,
                                                     dp, ip, ip, ip, ip, dp, ip, ip, ip, ip)))
    return _STEMR[0]


def _gtsv_function():
    """LAPACK's dgtsv (a tridiagonal solve, partial pivoting) as a ctypes function
    (:func:`_lapack_capsule`), or None."""
    if not _GTSV:
        import ctypes
        ip, dp = ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_double)
        # n nrhs dl d du b ldb info
        _GTSV.append(_lapack_capsule("dgtsv", 4, (ip, ip, dp, dp, dp, dp, ip, ip)))
    return _GTSV[0]


_WORKSPACES = threading.local()


class _StemrWorkspace:
    """dstemr's arrays for one (N, m) and the ctypes arguments pointing at them, made once
    per thread (the eigenpairs' thread and the loop's each have theirs): a call then costs a
    few microseconds of Python besides LAPACK's own time -- the Python a thread beside the
    loop runs while it holds the GIL."""

    def __init__(self, n, m):
        import ctypes
        c, ref = ctypes.c_int, ctypes.byref
        self.d, self.e, self.w = np.empty(n), np.empty(n), np.empty(n)
        self.z = np.empty((m, n))                          # Fortran-ordered N x m
        lwork, liwork = 18 * n, 10 * n
        isuppz = np.empty(2 * m, dtype=np.intc)
        work, iwork = np.empty(lwork), np.empty(liwork, dtype=np.intc)
        self._keep = (isuppz, work, iwork)
        self.M, self.info, self.tryrac = c(0), c(0), c(1)
        self._ints = [c(n), c(1), c(m), c(n), c(m), self.tryrac, c(lwork), c(liwork)]
        self._dbls = [ctypes.c_double(0.0), ctypes.c_double(0.0)]
        dp = lambda a: a.ctypes.data_as(ctypes.POINTER(ctypes.c_double))   # noqa: E731
        ip = lambda a: a.ctypes.data_as(ctypes.POINTER(ctypes.c_int))      # noqa: E731
        N, il, iu, ldz, nzc, tryrac, lw, liw = (ref(i) for i in self._ints)
        vl, vu = (ref(x) for x in self._dbls)
        # jobz range n d e vl vu il iu m w z ldz nzc isuppz tryrac work lwork iwork liwork info
        self.args = (b"V", b"I", N, dp(self.d), dp(self.e), vl, vu, il, iu, ref(self.M),
                     dp(self.w), dp(self.z), ldz, nzc, ip(isuppz), tryrac, dp(work), lw,
                     ip(iwork), liw, ref(self.info))


def _stemr_workspace(n, m):
    """This thread's :class:`_StemrWorkspace` for (n, m) (the last two sizes kept)."""
    cache = getattr(_WORKSPACES, "cache", None)
    if cache is None:
        cache = _WORKSPACES.cache = {}
    ws = cache.get((n, m))
    if ws is None:
        if len(cache) >= 2:
            cache.clear()
        ws = cache[(n, m)] = _StemrWorkspace(n, m)
    ws.tryrac.value = 1                    # dstemr may have cleared it
    return ws


def stemr(d, e, m):
    """(E, vectors N x m): the m lowest eigenpairs of the symmetric tridiagonal matrix with
    diagonal ``d`` and off-diagonal ``e`` by LAPACK's dstemr (MRRR: Dhillon & Parlett,
    Linear Algebra Appl. 387, 1 (2004); O(N m)), through :func:`stemr_function` (no GIL
    held while it runs) or SciPy's wrapper of the same routine -- the same numbers; where
    dstemr reports a failure, bisection and inverse iteration (``eigh_tridiagonal``'s
    default)."""
    n = np.size(d)
    fn = stemr_function()
    if fn is not None and n > 1:
        ws = _stemr_workspace(n, m)
        ws.d[:] = d                      # dstemr overwrites d and e
        ws.e[:n - 1] = e
        ws.e[n - 1] = 0.0
        fn(*ws.args)
        if ws.info.value == 0 and ws.M.value == m:
            return ws.w[:m].copy(), ws.z.T.copy()
    else:
        try:
            return scipy.linalg.eigh_tridiagonal(d, np.asarray(e, dtype=np.float64), select="i",
                                                 select_range=(0, m - 1), check_finite=False,
                                                 lapack_driver="stemr")
        except (np.linalg.LinAlgError, ValueError):
            pass
    return scipy.linalg.eigh_tridiagonal(d, np.asarray(e, dtype=np.float64), select="i",
                                         select_range=(0, m - 1), check_finite=False)


class _GtsvWorkspace:
    """dgtsv's arrays for k tridiagonal systems of order N that share one off-diagonal (k
    shifted copies of one T, or of several T's of one grid) as one block-diagonal system of
    k N (the blocks' coupling zero: k solves in one call) and the ctypes arguments pointing
    at them, made once per thread (as :class:`_StemrWorkspace`)."""

    def __init__(self, n, k):
        import ctypes
        c, ref = ctypes.c_int, ctypes.byref
        self.n, self.k = n, k
        size = n * k
        self.dl, self.d, self.du, self.b = np.empty(size - 1), np.empty(size), np.empty(size - 1), np.empty(size)
        self.e = np.zeros(size - 1)        # the blocks' off-diagonals, zero between blocks
        self.e_of = None                   # the off-diagonal they hold
        self.info = c(0)
        self._ints = [c(size), c(1), c(size)]
        dp = lambda a: a.ctypes.data_as(ctypes.POINTER(ctypes.c_double))   # noqa: E731
        N, nrhs, ldb = (ref(i) for i in self._ints)
        self.args = (N, nrhs, dp(self.dl), dp(self.d), dp(self.du), dp(self.b), ldb, ref(self.info))

    def solve(self, fn, D, e, X):
        """D[j]'s system (off-diagonal ``e``) solved for X[:, j] for every j, as the
        columns of an N x k array, or None where a matrix is singular to working precision."""
        n, k = self.n, self.k
        if self.e_of is None or not np.array_equal(self.e_of, e):    # a run's T keeps its e
            for j in range(k):
                self.e[j * n:j * n + n - 1] = e
            self.e_of = np.array(e)
        self.dl[:] = self.e                # dgtsv overwrites dl, d, du and b
        self.du[:] = self.e
        self.d.reshape(k, n)[:] = D
        self.b.reshape(k, n)[:] = X.T
        fn(*self.args)
        return None if self.info.value else self.b.reshape(k, n).T.copy()


def shifted_solves(D, e, X):
    """D[j]'s tridiagonal system (diagonal D[j], off-diagonal ``e``, shared) solved for
    X[:, j], each column j (D: k x N, X: N x k) by LAPACK's dgtsv (LU with partial
    pivoting: stable however near a shift is to an eigenvalue), the k systems as one
    block-diagonal system in one call without the GIL where :func:`_gtsv_function` is
    there; None where a matrix is singular to working precision."""
    n, k = X.shape
    fn = _gtsv_function()
    if fn is None:
        from scipy.linalg import lapack
        gtsv = lapack.get_lapack_funcs("gtsv", (D,))
        Y = np.empty((n, k))
        for j in range(k):
            *_, y, info = gtsv(e, D[j], e, X[:, j])
            if info:
                return None
            Y[:, j] = y
        return Y
    ws = getattr(_WORKSPACES, "gtsv", None)
    if ws is None or (ws.n, ws.k) != (n, k):
        ws = _WORKSPACES.gtsv = _GtsvWorkspace(n, k)
    return ws.solve(fn, D, e, X)


def count_below(d, e, value) -> int:
    """How many eigenvalues of the symmetric tridiagonal T lie at or below ``value``: a Sturm
    count (LAPACK's dstebz on (lower, value] with an absolute tolerance so large that it
    counts without bisecting, O(N)); reliable away from an eigenvalue by more than a few
    ulps of ||T||."""
    from scipy.linalg import lapack
    stebz = lapack.get_lapack_funcs("stebz", (d,))
    a = np.abs(e).max() if e.size else 0.0
    lower = float(d.min()) - 2.0 * a - 1.0              # below Gershgorin's bound
    if not value > lower:
        return 0
    m, *_ = stebz(d, e, 1, lower, value, 0, 0, 1e300, "E")
    return int(m)
