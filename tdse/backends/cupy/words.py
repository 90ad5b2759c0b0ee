"""The local error's words (:class:`tdse.numerics.local_error.LocalError`) for one member in
one cooperative kernel: each suffix of a word is a product of a letter with a shorter
suffix, made level by level (a suffix's level: the products with H it holds), a grid-wide
barrier before a level's products with H (each reads every row of a suffix of a lower
level) and none before the diagonal letters (a row's own thread wrote the row it reads);
each order's sum of words and the scaled total summed row by row as the words are made.

The letters (``D``, P x N, then the orders' scales): a_0 = -i (T + V(t)) with T the DVR's
dense matrix (a warp a row, T's row through the read-only cache: in L1 after the first
product, x staged in shared memory) or the 3-/5-point bands (a thread a row),
a_k = -i d^k V/dt^k (k >= 1), and the absorber's b = W.  The launched products of
:meth:`LocalError.parts` compute the same numbers but for the order of the sums."""
from __future__ import annotations

import numpy as np

from .chain import CHAIN

#: the grid barrier and the warp's sum of the Chebyshev chain
#: (:data:`tdse.backends.cupy.chain.CHAIN`), written once there
_SYNC = CHAIN[CHAIN.index("__device__ __forceinline__ void tdse_grid_sync"):
              CHAIN.index("/* term kk's x")]
_WARP_SUM = CHAIN[CHAIN.index("__device__ __forceinline__ void tdse_warp_sum"):
                  CHAIN.index("/* lane 0's update")]

WORDS = r"""
#include <cupy/complex.cuh>
""" + _SYNC + _WARP_SUM + r"""
/* vec: (M + 1) x n, vec[0] = u; suffix s = 1..M is letter[s] (0: H, -1: W, k: d^k V/dt^k)
   applied to vec[parent[s]], in the order of their levels (the products with H a suffix
   holds): a grid barrier where a level's first product is made (sync[s]), none between the
   products of one level (each reads a suffix of a lower level); out: (R + 1) x n, out[r] = sum_s C[r, s] vec[s] (r < R <= 4,
   summed in registers as each suffix is made), and out[R] = sum_r D[P n + r] out[r] (the
   orders' scales dt^n uploaded with the letters).  A row's owner (a warp's lane 0, or a
   thread) keeps the sums of its first TDSE_WORDS_ROWS rows as the words are made; a row
   beyond those (more rows than owners times that) is summed from vec at the end. */
#define TDSE_WORDS_ROWS 8
extern "C" __global__ void tdse_words(const double* T, double d0, double d1, double d2,
        double kt, int dense, const double* D, const double* W, const int* letter,
        const int* parent, const int* sync, int M, const double* C, int R,
        complex<double>* vec, complex<double>* out, int n, int P, unsigned int* bar, int stage) {
    extern __shared__ double2 xs[];     /* dense, stage: the product's x, a copy a block */
    const complex<double> mi(0.0, -1.0);
    int lane = threadIdx.x & 31;
    /* the rows this thread owns: a warp a row (dense: lane 0 writes), else a thread a row */
    int first = dense ? (blockIdx.x * blockDim.x + threadIdx.x) >> 5
                      : blockIdx.x * blockDim.x + threadIdx.x;
    int stride = dense ? (gridDim.x * blockDim.x) >> 5 : gridDim.x * blockDim.x;
    bool writer = !dense || lane == 0;
    complex<double> acc[TDSE_WORDS_ROWS][4];
    for (int i = 0; i < TDSE_WORDS_ROWS; ++i)
        for (int r = 0; r < 4; ++r) acc[i][r] = complex<double>(0.0, 0.0);
    for (int s = 1; s <= M; ++s) {
        int k = letter[s];
        const complex<double>* x = vec + (size_t)parent[s] * n;
        complex<double>* y = vec + (size_t)s * n;
        double c0 = C[s], c1 = R > 1 ? C[(M + 1) + s] : 0.0;
        double c2 = R > 2 ? C[2 * (M + 1) + s] : 0.0, c3 = R > 3 ? C[3 * (M + 1) + s] : 0.0;
        if (sync[s]) tdse_grid_sync(bar);     /* the first product of a level */
        if (k == 0 && dense && stage) {       /* x from L2 once a block (other blocks wrote it) */
            __syncthreads();
            for (int j = threadIdx.x; j < n; j += blockDim.x)
                xs[j] = __ldcg(reinterpret_cast<const double2*>(x) + j);
            __syncthreads();
        }
        int i = 0;
        for (int row = first; row < n; row += stride, ++i) {
            complex<double> v;
            if (k == 0) {
                double re = 0.0, im = 0.0;
                if (dense) {
                    const double* t = T + (size_t)row * n;     /* T's row: L1 after the first */
                    for (int j = lane; j < n; j += 32) {
                        double w = __ldg(t + j);
                        double2 q = stage ? xs[j] : __ldcg(reinterpret_cast<const double2*>(x) + j);
                        re += w * q.x;
                        im += w * q.y;
                    }
                    tdse_warp_sum(re, im);
                } else {
                    const double2* xv = reinterpret_cast<const double2*>(x);
                    double2 q;
                    if (row >= 2) { q = __ldcg(xv + row - 2); re += d2 * q.x; im += d2 * q.y; }
                    if (row >= 1) { q = __ldcg(xv + row - 1); re += d1 * q.x; im += d1 * q.y; }
                    q = __ldcg(xv + row); re += d0 * q.x; im += d0 * q.y;
                    if (row + 1 < n) { q = __ldcg(xv + row + 1); re += d1 * q.x; im += d1 * q.y; }
                    if (row + 2 < n) { q = __ldcg(xv + row + 2); re += d2 * q.x; im += d2 * q.y; }
                }
                if (!writer) continue;
                v = mi * (complex<double>(re * kt, im * kt) + D[row] * x[row]);
            } else {
                if (!writer) continue;
                v = k < 0 ? W[row] * x[row] : mi * (D[(size_t)k * n + row] * x[row]);
            }
            y[row] = v;
            if (i < TDSE_WORDS_ROWS) {
                acc[i][0] += c0 * v; acc[i][1] += c1 * v; acc[i][2] += c2 * v; acc[i][3] += c3 * v;
            }
        }
    }
    if (!writer) return;
    int i = 0;
    for (int row = first; row < n; row += stride, ++i) {
        complex<double> total(0.0, 0.0);
        for (int r = 0; r < R; ++r) {
            complex<double> a;
            if (i < TDSE_WORDS_ROWS) {
                a = acc[i][r];
            } else {          /* beyond the array: summed from the rows kept in vec */
                a = complex<double>(0.0, 0.0);
                for (int s = 1; s <= M; ++s) {
                    double c = C[(size_t)r * (M + 1) + s];
                    if (c != 0.0) a += c * vec[(size_t)s * n + row];
                }
            }
            out[(size_t)r * n + row] = a;
            total += D[(size_t)P * n + r] * a;
        }
        out[(size_t)R * n + row] = total;
    }
}
"""

_KERNELS = {}


def words_kernel(cp, cooperative=True):
    """:data:`WORDS`, compiled once a process (a cooperative launch, or a plain one where
    this CUDA cannot capture that: its grid is at most a block an SM)."""
    if cooperative not in _KERNELS:
        _KERNELS[cooperative] = cp.RawKernel(WORDS, "tdse_words", enable_cooperative_groups=cooperative)
    return _KERNELS[cooperative]


def buffers(cp, suffixes, terms, block, n, W) -> dict:
    """The kernel's buffers for one estimate: the ``suffixes``' letters and parents, each
    order's coefficients (``terms``: {order: {word: c}}) by suffix, where the words are made;
    ``block`` the H's kinetic part (a :class:`~tdse.model.hamiltonian.BlockOperator`: the
    stencils' bands, or the DVR's dense T), ``W`` the absorber (or None)."""
    # level by level (the products with H a suffix holds), shorter first within one: a
    # suffix after its parent, a barrier only where a level's first product is made
    order = sorted(suffixes, key=lambda s: (s.count(0), len(s)))
    index = {(): 0}
    for i, s in enumerate(order, 1):
        index[s] = i
    M = len(order)
    letter, parent, sync = (np.zeros(M + 1, np.int32) for _ in range(3))
    level = 0
    for s, i in index.items():
        if s:
            letter[i], parent[i] = s[0], index[s[1:]]
            if s[0] == 0 and s.count(0) > level:
                sync[i], level = 1, s.count(0)
    C = np.zeros((len(terms), M + 1))
    for r, Cn in enumerate(terms.values()):
        for w, c in Cn.items():
            C[r, index[w]] += c
    dense = block.bands is None
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    rows = 8 if dense else 256                                  # rows a 256-thread block
    d = block.bands if not dense else (0.0, 0.0, 0.0)
    return {"letter": cp.asarray(letter), "parent": cp.asarray(parent),
            "sync": cp.asarray(sync), "M": M,
            "C": cp.asarray(C), "R": len(terms), "dense": dense,
            "T": block.T if dense else cp.zeros(1), "k": float(block.k),
            "d": tuple(float(v) for v in d), "grid": (min(-(-n // rows), sms),),
            "vec": cp.zeros((M + 1, n), np.complex128),
            "out": cp.zeros((len(terms) + 1, n), np.complex128),
            "W": W if W is not None else cp.zeros(n), "bar": cp.zeros(2, np.uint32),
            "coop": True, "stage": dense and 16 * n <= 48 * 1024}


def launch(cp, w, D, n, P):
    """The kernel on the buffers ``w`` (:func:`buffers`; u already in its words' first row),
    the letters ``D`` (P x N, then the orders' scales)."""
    d0, d1, d2 = w["d"]
    words_kernel(cp, w["coop"])(
        w["grid"], (256,),
        (w["T"], np.float64(d0), np.float64(d1), np.float64(d2), np.float64(w["k"]),
         np.int32(w["dense"]), D, w["W"], w["letter"], w["parent"], w["sync"], np.int32(w["M"]),
         w["C"], np.int32(w["R"]), w["vec"], w["out"], np.int32(n), np.int32(P), w["bar"],
         np.int32(w["stage"])), shared_mem=16 * n if w["stage"] else 0)
