"""The grid sums of a block's observables on a GPU, generated from the definitions: the
potential's ``device`` definition (V and dV/dx at each point, in the host's order of
operations, :func:`.potential.molecule_vg`) and the observables' sums (``tdse.model.observables.SUMS``:
each the sum over the grid of a point quantity, an :class:`tdse.expression.Expr` in the
names of :data:`POINT`).  One kernel a block of members; the partial sums of each block of
threads are summed by one reduction after (deterministic: no atomics)."""
from __future__ import annotations

from .codegen import c_source
from .potential import molecule_vg

#: the point quantities a sum may read, and their C: |psi_i|^2, 1 in the absorbing layers
#: (else 0), x_i, dV/dx(x_i), Re psi_i* (H psi)_i, Re and Im psi0_i* psi_i, k_i and |F_k|^2
#: (F = FFT psi), 1 within 10 points of a wall (else 0)
POINT = {"w": "w", "layer": "layer", "x": "xi", "g": "g", "h": "h", "c0_re": "c0_re",
         "c0_im": "c0_im", "k": "k[i]", "f2": "f2", "edge": "edge"}

SOURCE = r"""#include <cupy/complex.cuh>
// the NS sums of one grid point i of member b (BlockMeasure.raw's "sums"); point i of
// member b at i * S[0] + b * S[1] in X, KX and F (N x nb, or the rows of nb x N), at
// i * S[2] + b * S[3] in psi0 and i * S[4] + b * S[5] in layers (S[3], S[5] 0: one column)
__device__ __forceinline__ void tdse_point(
        double* s, int i, int b, const complex<double>* X, const complex<double>* KX,
        const complex<double>* psi0, const complex<double>* F, const double* k,
        const double* x, const bool* layers, const double* P, const double* Q,
        int n, int nb, int nc, int field, const long long* S) {
    int q = 4 + b * (1 + nc);
    double E = field ? P[q] : 0.0;
    long long at = i * S[0] + b * S[1];
    complex<double> z = X[at];
    double w = z.real() * z.real() + z.imag() * z.imag();
    double xi = x[i];
    double v = 0.0, g = 0.0;
    if (field) g += E;
    MOLECULE
    if (field) v += E * xi;
    complex<double> hz = KX[at] + v * z;
    complex<double> c0 = conj(psi0[i * S[2] + b * S[3]]) * z;
    complex<double> f = F[at];
    double h = (conj(z) * hz).real();
    double c0_re = c0.real(), c0_im = c0.imag();
    double f2 = f.real() * f.real() + f.imag() * f.imag();
    double layer = layers[i * S[4] + b * S[5]] ? 1.0 : 0.0;
    double edge = (i < 10 || i >= n - 10) ? 1.0 : 0.0;
SUMS}

// many members: 32 members a block, 8 threads along the grid each; the grid split over
// gridDim.y blocks, each block's partial sums to part[(j * gridDim.y + blockIdx.y) * nb + b],
// summed over them by one reduction after (deterministic: no atomics)
extern "C" __global__ void tdse_block_measure(
        const complex<double>* X, const complex<double>* KX, const complex<double>* psi0,
        const complex<double>* F, const double* k, const double* x, const bool* layers,
        const double* P, const double* Q, int n, int nb, int nc, int field, double* part,
        long long s0, long long s1, long long s2, long long s3, long long s4, long long s5) {
    const long long S[6] = {s0, s1, s2, s3, s4, s5};
    __shared__ double sh[NS][8][33];
    int tx = threadIdx.x, ty = threadIdx.y, g = blockIdx.y, G = gridDim.y;
    int b = blockIdx.x * 32 + tx;
    double s[NS] = {0.0};
    if (b < nb) {
        for (int i = g * 8 + ty; i < n; i += 8 * G)
            tdse_point(s, i, b, X, KX, psi0, F, k, x, layers, P, Q, n, nb, nc, field, S);
    }
    for (int j = 0; j < NS; ++j) sh[j][ty][tx] = s[j];
    __syncthreads();
    if (ty == 0 && b < nb) {
        for (int j = 0; j < NS; ++j) {
            double t = 0.0;
            for (int y = 0; y < 8; ++y) t += sh[j][y][tx];
            part[(j * G + g) * nb + b] = t;
        }
    }
}

// few members (a single run): the grid split over gridDim.x blocks of 256 threads, member
// blockIdx.y; each block's partial sums to part[(j * gridDim.x + block) * nb + b], summed
// over the blocks by one reduction after (deterministic: no atomics)
extern "C" __global__ void tdse_block_measure_split(
        const complex<double>* X, const complex<double>* KX, const complex<double>* psi0,
        const complex<double>* F, const double* k, const double* x, const bool* layers,
        const double* P, const double* Q, int n, int nb, int nc, int field, double* part,
        long long s0, long long s1, long long s2, long long s3, long long s4, long long s5) {
    const long long S[6] = {s0, s1, s2, s3, s4, s5};
    __shared__ double sh[NS][256];
    int t = threadIdx.x, g = blockIdx.x, G = gridDim.x, b = blockIdx.y;
    double s[NS] = {0.0};
    for (int i = g * 256 + t; i < n; i += G * 256)
        tdse_point(s, i, b, X, KX, psi0, F, k, x, layers, P, Q, n, nb, nc, field, S);
    for (int j = 0; j < NS; ++j) sh[j][t] = s[j];
    __syncthreads();
    for (int h = 128; h > 0; h >>= 1) {
        if (t < h)
            for (int j = 0; j < NS; ++j) sh[j][t] += sh[j][t + h];
        __syncthreads();
    }
    if (t == 0)
        for (int j = 0; j < NS; ++j) part[(j * G + g) * nb + b] = sh[j][0];
}
"""


def measure_source(device, sums) -> str:
    """The CUDA module of the two measuring kernels (``tdse_block_measure``: 32 members a
    block of threads; ``tdse_block_measure_split``: the grid over blocks, a member per
    column of blocks) for the potential's ``device`` definition and the ``sums`` (Exprs)."""
    lines = "".join(f"    s[{j}] += {c_source(e, POINT)};\n" for j, e in enumerate(sums))
    # the sums first: the molecule's C (a formula's parameter names) is not scanned again
    return (f"#define NS {len(sums)}\n" + SOURCE.replace("SUMS", lines)
            .replace("MOLECULE", molecule_vg(device, "xi")))


_MODULES = {}


def measure_kernels(cp, device, sums):
    """(tdse_block_measure, tdse_block_measure_split) of :func:`measure_source`, compiled
    once a definition."""
    key = (str(device), tuple(str(e) for e in sums))
    if key not in _MODULES:
        mod = cp.RawModule(code=measure_source(device, sums))
        _MODULES[key] = (mod.get_function("tdse_block_measure"),
                         mod.get_function("tdse_block_measure_split"))
    return _MODULES[key]


#: <phi_k|psi_c> for K states and R rows: a block of 256 threads an output, each thread a
#: strided share of the grid, then a fixed tree over the block -- every output's sums in
#: one order whatever R and its row's place (cuBLAS gave a row alone, a run of 2-63 and
#: one of 64 rows other bits at N = 8192: benchmarks/archive/amplitudes_bits.py)
AMPLITUDES = r"""#include <cupy/complex.cuh>
extern "C" __global__ void tdse_amplitudes(const complex<double>* phi, const complex<double>* X,
                                           int n, int r, complex<double>* out) {
    __shared__ complex<double> sh[256];
    int t = threadIdx.x, k = blockIdx.x / r, c = blockIdx.x % r;
    const complex<double>* p = phi + (long long)k * n;
    const complex<double>* x = X + (long long)c * n;
    complex<double> s = 0.0;
    for (int i = t; i < n; i += 256) s += p[i] * x[i];
    sh[t] = s;
    __syncthreads();
    for (int h = 128; h > 0; h >>= 1) {
        if (t < h) sh[t] += sh[t + h];
        __syncthreads();
    }
    if (t == 0) out[blockIdx.x] = sh[0];
}
"""


def amplitudes(cp, phi, X):
    """phi @ X.T (K x R) for K states ``phi`` (K x N) and R rows ``X`` (R x N, C-contiguous,
    complex128) on a GPU, each output's bits independent of R and of its row's place
    (:data:`AMPLITUDES`)."""
    if "amplitudes" not in _MODULES:
        _MODULES["amplitudes"] = cp.RawModule(code=AMPLITUDES).get_function("tdse_amplitudes")
    phi = cp.ascontiguousarray(phi, dtype=cp.complex128)
    X = cp.ascontiguousarray(X, dtype=cp.complex128)
    K, n = phi.shape
    R = X.shape[0]
    out = cp.empty((K, R), dtype=cp.complex128)
    if K and R:
        _MODULES["amplitudes"]((K * R,), (256,), (phi, X, cp.int32(n), cp.int32(R), out))
    return out
