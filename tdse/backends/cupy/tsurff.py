"""t-SURFF's block of steps on a GPU in one kernel (:class:`tdse.run.tsurff.TSurff`, Tao &
Scrinzi, New J. Phys. 14, 013021 (2012), eqs. (9)-(11) in 1D; the formulas and their host
form in :mod:`tdse.run.tsurff`): a thread per momentum k and member b walks the block's S
steps in order -- psi at the 5 points around each surface read from that step's own array
(its device address), psi' by the 5-point difference, the Volkov phase Phi_k by the
trapezoid rule, the integrand of each surface and its trapezoid sum -- the operations of
``TSurff._flush``'s array form, one launch instead of some forty."""
from __future__ import annotations

SOURCE = r"""
#include <cupy/complex.cuh>
extern "C" __global__ void tdse_tsurff_block(const unsigned long long* ptrs, const long long* rows,
        const double* A, const double* h, int S, int K, int nb, const double* k,
        const double* xs, const double* st, int velocity, double norm, double* phase,
        complex<double>* sum, complex<double>* f0) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;            /* k-major, member fastest */
    if (idx >= K * nb) return;
    int b = idx % nb;
    double kv = k[idx / nb];
    double ph0 = phase[idx], c = 0.0, ph = ph0;
    complex<double> f[2] = {f0[idx], f0[K * nb + idx]};
    complex<double> acc[2] = {complex<double>(0.0, 0.0), complex<double>(0.0, 0.0)};
    const complex<double> sign[2] = {complex<double>(0.0, -0.5), complex<double>(0.0, 0.5)};
    for (int s = 0; s < S; ++s) {
        const complex<double>* psi = reinterpret_cast<const complex<double>*>(ptrs[s]);
        double a0 = A[s * nb + b], a1 = A[(s + 1) * nb + b], hs = h[s];
        double u0 = kv + a0, u1 = kv + a1;
        c += 0.25 * hs * (u0 * u0 + u1 * u1);                   /* Phi: the trapezoid rule */
        ph = ph0 + c;
        double wave = velocity ? kv : kv + a1;                  /* chi's wavenumber */
        double flux = kv + (velocity ? 2.0 : 1.0) * a1;
        for (int i = 0; i < 2; ++i) {                           /* +R, then -R */
            complex<double> d(0.0, 0.0);
            for (int p = 0; p < 5; ++p) d += psi[rows[5 * i + p] * nb + b] * st[p];
            complex<double> mid = psi[rows[5 * i + 2] * nb + b];
            double sn, cs;
            sincos(ph - wave * xs[i], &sn, &cs);
            complex<double> chi(cs * norm, sn * norm);
            complex<double> g = sign[i] * chi * (d + complex<double>(0.0, flux) * mid);
            acc[i] += 0.5 * hs * (f[i] + g);
            f[i] = g;
        }
    }
    phase[idx] = ph;
    sum[idx] += acc[0];
    sum[K * nb + idx] += acc[1];
    f0[idx] = f[0];
    f0[K * nb + idx] = f[1];
}
"""

_KERNEL = {}


def tsurff_block(cp, ptrs, rows, A, h, k, xs, stencil, velocity, phase, sums, f0):
    """Adds a block's S steps to t-SURFF's sums in place: ``ptrs`` (S,) uint64 addresses of
    the steps' psi (N x nb C-contiguous, or vectors), ``rows`` (10,) int64 the points
    around +R then -R, ``A`` (S + 1, nb) from the last step before the block, ``h`` (S,)
    the steps, ``k`` (K,), ``xs`` (2,) the surfaces, ``stencil`` (5,) the derivative's
    weights; ``phase`` (K, nb), ``sums`` and ``f0`` (2, K, nb: the last integrand) are
    carried on."""
    import math

    import numpy as np
    if not _KERNEL:
        _KERNEL["k"] = cp.RawKernel(SOURCE, "tdse_tsurff_block")
    K, nb = phase.shape
    threads = 128
    _KERNEL["k"]((-(-K * nb // threads),), (threads,),
                 (ptrs, rows, A, h, np.int32(ptrs.size), np.int32(K), np.int32(nb), k, xs, stencil,
                  np.int32(bool(velocity)), np.float64(1.0 / math.sqrt(2 * math.pi)), phase, sums, f0))
