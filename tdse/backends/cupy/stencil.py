"""Element-wise kernels of the block operators and the Chebyshev recurrence: the 3-/5-point
stencil product, the recurrence's fused updates, y += a x (CuPy element-wise kernels, each
compiled once a process)."""
from __future__ import annotations

_CACHE = {}


def _kernel(cp, name, *args):
    if name not in _CACHE:
        _CACHE[name] = cp.ElementwiseKernel(*args, name)
    return _CACHE[name]


#: g = T X for the 3-/5-point T (bands d0, d1, d2: kinetic_bands) of an N x nb block, an
#: element a thread (what cuSPARSE's SpMM computes, without its plan and buffer per call)
BAND_SOURCE = r"""
int row = i / nb;
T acc = T(0);
if (row >= 2) acc += d2 * X[i - 2 * nb];
if (row >= 1) acc += d1 * X[i - nb];
acc += d0 * X[i];
if (row + 1 < n) acc += d1 * X[i + nb];
if (row + 2 < n) acc += d2 * X[i + 2 * nb];
g = acc;
"""


def band_kernel(cp):
    """The stencil product :data:`BAND_SOURCE`: ``k(X, d0, d1, d2, n, nb, out)`` with X and
    out C-contiguous N x nb."""
    return _kernel(cp, "tdse_band", "raw T X, float64 d0, float64 d1, float64 d2, int32 n, int32 nb",
                   "T g", BAND_SOURCE)


#: the same product on the rows of an nb x N block (each row a state: a run's block of rows,
#: :meth:`tdse.model.observables.BlockMeasure.raw`), its terms in BAND_SOURCE's order
BAND_ROWS_SOURCE = BAND_SOURCE.replace("i / nb", "i % n").replace(" * nb", "").replace("nb]", "1]")


def band_rows_kernel(cp):
    """:data:`BAND_ROWS_SOURCE`: ``k(X, d0, d1, d2, n, out)`` with X and out C-contiguous
    nb x N."""
    return _kernel(cp, "tdse_band_rows", "raw T X, float64 d0, float64 d1, float64 d2, int32 n",
                   "T g", BAND_ROWS_SOURCE)


#: m = D X for the 3-/5-point first derivative (bands c1, c2: momentum_bands, D real and
#: antisymmetric) of an N x nb block, an element a thread: the velocity gauge's p = -i D
DBAND_SOURCE = r"""
int row = i / nb;
T acc = T(0);
if (row + 1 < n) acc += c1 * X[i + nb];
if (row >= 1) acc -= c1 * X[i - nb];
if (row + 2 < n) acc += c2 * X[i + 2 * nb];
if (row >= 2) acc -= c2 * X[i - 2 * nb];
m = acc;
"""


def dband_kernel(cp):
    """The derivative product :data:`DBAND_SOURCE`: ``k(X, c1, c2, n, nb, out)``."""
    return _kernel(cp, "tdse_dband", "raw T X, float64 c1, float64 c2, int32 n, int32 nb",
                   "T m", DBAND_SOURCE)


def fused_kernel(cp):
    """y = k g + d x (complex g, x; real d, k) in one pass."""
    return _kernel(cp, "tdse_block_diag", "T g, float64 d, T x, float64 k", "T y", "y = g * k + x * d")


def recur_kernel(cp):
    """z = k g + d x - p and acc += a z (complex g, x, p, a, acc; real d, k) in one pass."""
    return _kernel(cp, "tdse_block_recur", "T g, float64 d, T x, T p, float64 k, T a", "T z, T acc",
                   "z = g * k + x * d - p; acc += a * z")


def axpy_kernel(cp):
    """y += a x in one pass (no temporary)."""
    return _kernel(cp, "tdse_axpy", "T x, T a", "T y", "y += a * x")

