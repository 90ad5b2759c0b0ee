"""The carrier's split steps (:class:`tdse.numerics.carrier.SplitCarrier`) for a piece of a
run's steps in one cooperative kernel: e carried over S steps, each

    e <- D_s Q (ph Q (D_s e)) + L_s,

Q the orthonormal sine transform (DST-I, symmetric, its own inverse) as a dense N x N matrix,
ph = exp(-i h tau) the kinetic phases, D_s step s's halves (potential and absorber) and L_s
its local error; e after step s also into row tap[s] of ``taps`` where ntap > 0 and tap[s]
>= 0 (a run's snapshots within the piece).  A warp a row of each product (Q's row through
the read-only cache, the vector staged in shared memory: the chain kernel's row product,
:data:`tdse.backends.cupy.chain.CHAIN`), a grid barrier after each: two a step, where the
Chebyshev carrier's step was a graph launch of ~10 terms, a barrier each."""
from __future__ import annotations

from .chain import CHAIN

_SYNC = CHAIN[CHAIN.index("__device__ __forceinline__ void tdse_grid_sync"):
              CHAIN.index("/* term kk's x")]
_DOT = CHAIN[CHAIN.index("/* a warp's share of row . x"):CHAIN.index("/* lane 0's update")]

SPLIT = r"""
#include <cupy/complex.cuh>
""" + _SYNC + _DOT + r"""
/* y (n): D_0 e on entry; then per step s: z = ph Q y; e = D_s Q z + L_s; y = D_(s+1) e */
__device__ __forceinline__ void tdse_split_stage(double2* xs, const complex<double>* v, int n) {
    __syncthreads();
    for (int j = threadIdx.x; j < n; j += blockDim.x)
        xs[j] = __ldcg(reinterpret_cast<const double2*>(v) + j);
    __syncthreads();
}

extern "C" __global__ void tdse_split_steps(const double* Q, const complex<double>* ph,
        const complex<double>* D, const complex<double>* L, complex<double>* e,
        complex<double>* y, complex<double>* z, int S, int n, unsigned int* bar,
        int ntap, const int* tap, complex<double>* taps) {
    extern __shared__ double2 xs[];
    const int lane = threadIdx.x & 31;
    const int nw = gridDim.x * (blockDim.x >> 5);
    const int w0 = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        y[i] = D[i] * e[i];
    for (int s = 0; s < S; ++s) {
        tdse_grid_sync(bar);
        tdse_split_stage(xs, y, n);
        for (int row = w0; row < n; row += nw) {
            double re, im;
            tdse_row_dot(Q + (size_t)row * n, xs, n, lane, re, im);
            tdse_warp_sum(re, im);
            if (lane == 0) z[row] = ph[row] * complex<double>(re, im);
        }
        tdse_grid_sync(bar);
        tdse_split_stage(xs, z, n);
        const complex<double>* d = D + (size_t)s * n;
        for (int row = w0; row < n; row += nw) {
            double re, im;
            tdse_row_dot(Q + (size_t)row * n, xs, n, lane, re, im);
            tdse_warp_sum(re, im);
            if (lane == 0) {
                complex<double> v = d[row] * complex<double>(re, im) + L[(size_t)s * n + row];
                e[row] = v;
                if (ntap > 0 && tap[s] >= 0) taps[(size_t)tap[s] * n + row] = v;
                if (s + 1 < S) y[row] = d[n + row] * v;
            }
        }
    }
}
"""

#: rows (warps) a 256-thread block of :data:`SPLIT`
SPLIT_WARPS = 8

_KERNELS = {}


def split_kernel(cp):
    """:data:`SPLIT`, compiled once a process, launched cooperatively (its grid is at most a
    block an SM: every block resident, as its grid barriers need)."""
    if not _KERNELS:
        _KERNELS["split"] = cp.RawKernel(SPLIT, "tdse_split_steps", enable_cooperative_groups=True)
    return _KERNELS["split"]
