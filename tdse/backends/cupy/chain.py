"""The one-member kernels of the CUDA-graph step (``tdse.numerics.graphs``): a Chebyshev
term by a fused GEMV with the DVR's dense T, a whole exponential as one cooperative kernel
(the row's potential generated from the potential's definition, :func:`.potential.device_v`)
or, on a stencil, as one kernel of overlapping tiles,
the recurrence's element-wise updates, and the dense exponent's two kernels."""
from __future__ import annotations

from .potential import device_v, potential_kernels
from .stencil import band_kernel, dband_kernel

#: one Chebyshev term for one member (B = 1) with the DVR's dense T in one kernel: a warp
#: per row computes (T x)_i (T from L2, shuffled sums), then the row's recurrence update --
#: first term: cur = (k g + d x) / 2, acc = a_0 x + a_1 cur; later: z = k g + d x - p,
#: acc += a_k z (the operations of the "first" / "recur" kernels)
GEMV_TERM = r"""
#include <cupy/complex.cuh>
extern "C" __global__ void tdse_gemv_term(const double* T, const complex<double>* x,
        const double* d, const complex<double>* p, const double* P, int ik,
        const complex<double>* A, int ia, complex<double>* z, complex<double>* acc, int n,
        int first) {
    int row = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    int lane = threadIdx.x & 31;
    if (row >= n) return;
    const double* t = T + (size_t)row * n;
    double re = 0.0, im = 0.0;
    for (int j = lane; j < n; j += 32) {
        double w = t[j];
        complex<double> v = x[j];
        re += w * v.real();
        im += w * v.imag();
    }
    for (int off = 16; off > 0; off >>= 1) {
        re += __shfl_down_sync(0xffffffff, re, off);
        im += __shfl_down_sync(0xffffffff, im, off);
    }
    if (lane == 0) {
        complex<double> g(re, im);
        complex<double> xi = x[row];
        double k = P[ik];
        if (first) {
            complex<double> cur = (g * k + xi * d[row]) * 0.5;
            z[row] = cur;
            complex<double> y = A[ia] * xi;
            y += A[ia + 1] * cur;
            acc[row] = y;
        } else {
            complex<double> zz = g * k + xi * d[row] - p[row];
            z[row] = zz;
            acc[row] += A[ia] * zz;
        }
    }
}
"""

#: a whole exponential of one member with the DVR's dense T in one cooperative kernel
#: (#27): the row's potential (:func:`.potential.device_v`), the absorber mask, every Chebyshev term (the
#: operations of :data:`GEMV_TERM`, a warp per row, x staged in shared memory) and the
#: phase, with a grid-wide barrier between terms instead of a kernel boundary.  The input X
#: and the output must be different buffers; W0..W2 rotate as in GraphStep._body.
#: a graph step's row from its segment (:meth:`tdse.numerics.graphs.GraphStep.advance`: the
#: steps between two save points uploaded at once, [counter, stride, two tap slots a step,
#: the rows]): one block copies row ``counter`` into the step's fixed row, sets the step's
#: tap slots and counts the step (a step is then one graph launch, no upload of its own; a
#: graph replayed past its segment, as a benchmark does, reads the segment's last place);
#: and the tap: the step's result copied into row ``slot[t]`` of block t, where >= 0, and
#: (``y`` not null) into the buffer the next step reads -- a step whose result lands in the
#: other buffer had a memcpy node and then the tap's (one node less a step)
ROWS = r"""
extern "C" __global__ void tdse_row_fetch(double* seg, double* row, int* slot, int steps) {
    __shared__ int c;
    if (threadIdx.x == 0) c = min((int)seg[0], steps - 1);   /* (a graph replayed past its
                                                              segment: its last row again) */
    __syncthreads();
    int s = (int)seg[1];
    const double* src = seg + 2 + 2 * steps + (long long)c * s;
    for (int i = threadIdx.x; i < s; i += blockDim.x) row[i] = src[i];
    __syncthreads();
    if (threadIdx.x == 0) {
        slot[0] = (int)seg[2 + 2 * c]; slot[1] = (int)seg[3 + 2 * c]; seg[0] = c + 1;
    }
}
extern "C" __global__ void tdse_row_tap(const double2* x, double2* y, double2* to0,
                                        double2* to1, const int* slot, long long n) {
    long long k0 = slot[0], k1 = slot[1];
    if (k0 < 0 && k1 < 0 && !y) return;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) {
        double2 v = x[i];
        if (y) y[i] = v;
        if (k0 >= 0) to0[k0 * n + i] = v;
        if (k1 >= 0) to1[k1 * n + i] = v;
    }
}
"""

CHAIN = r"""
#include <cupy/complex.cuh>
__device__ __forceinline__ double tdse_chain_v(int i, double x, const double* P, const double* Q,
        int hdr, int base, int nt, int nc, int nb, int field) {
    double d;
%(v)s
    return d;
}

__device__ __forceinline__ void tdse_grid_sync(unsigned int* bar) {
    __syncthreads();
    if (threadIdx.x == 0) {
        volatile unsigned int* gen = bar + 1;
        unsigned int g = *gen;
        __threadfence();
        if (atomicAdd(bar, 1u) == gridDim.x - 1) {
            atomicExch(bar, 0u);
            __threadfence();
            atomicAdd(bar + 1, 1u);
        } else {
            while (*gen == g) { }
        }
        __threadfence();
    }
    __syncthreads();
}

/* term kk's x into shared memory: the masked input for the first, else the last term
   (read past L1: other blocks wrote it) */
__device__ __forceinline__ void tdse_chain_stage(double2* xs, const complex<double>* X,
        const double* m, complex<double>* const* W, int kk, int n) {
    if (kk == 1 && m) {
        for (int j = threadIdx.x; j < n; j += blockDim.x) {
            complex<double> v = X[j] * m[j];
            xs[j] = make_double2(v.real(), v.imag());
        }
    } else {
        const complex<double>* x = kk == 1 ? X : W[(kk - 2) %% 3];
        for (int j = threadIdx.x; j < n; j += blockDim.x)
            xs[j] = __ldcg(reinterpret_cast<const double2*>(x) + j);
    }
    __syncthreads();
}

/* a warp's share of row . x (x staged in shared memory), lanes strided */
__device__ __forceinline__ void tdse_row_dot(const double* r, const double2* xs, int n, int lane,
        double& re, double& im) {
    re = 0.0;
    im = 0.0;
#pragma unroll 4
    for (int j = lane; j < n; j += 32) {
        double w = r[j];
        double2 v = xs[j];
        re += w * v.x;
        im += w * v.y;
    }
}

__device__ __forceinline__ void tdse_warp_sum(double& re, double& im) {
    for (int off = 16; off > 0; off >>= 1) {
        re += __shfl_down_sync(0xffffffff, re, off);
        im += __shfl_down_sync(0xffffffff, im, off);
    }
}

/* lane 0's update of a row after term kk (the operations of the "first" / "recur"
   kernels): z_row, the running sum a, and at the last term out_row = a e^(-i tau c) [m] */
__device__ __forceinline__ void tdse_chain_update(complex<double> g, complex<double> xi,
        double dv, complex<double> p, double k, int kk, int last, int K,
        const complex<double>* A, int ia, complex<double>& a, complex<double>* z,
        const double* m, complex<double>* out, int row) {
    if (kk == 1) {
        complex<double> cur = (g * k + xi * dv) * 0.5;
        z[row] = cur;
        a = A[ia] * xi;
        a += A[ia + 1] * cur;
    } else {
        complex<double> zz = g * k + xi * dv - p;
        z[row] = zz;
        a += A[ia + kk] * zz;
    }
    if (kk == last) {
        complex<double> o = a * A[ia + K + 1];
        if (m) o = o * m[row];
        out[row] = o;
    }
}

/* Any N whose x fits in shared memory: a warp a row (rows strided over the grid), T from
   L2 every term, the row's d, previous term and sum in global memory. */
extern "C" __global__ void tdse_cheb_chain(const double* T, const complex<double>* X,
        const double* m, const double* xg, const double* P, const double* Q, int hdr, int base,
        int nt, int nc, int field, const complex<double>* A, int ia, int K,
        complex<double>* W0, complex<double>* W1, complex<double>* W2, complex<double>* acc,
        double* d, complex<double>* out, int n, unsigned int* bar, const double* D, int iv) {
    extern __shared__ double2 xs[];
    const int lane = threadIdx.x & 31;
    const int nw = gridDim.x * (blockDim.x >> 5);
    const int w0 = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    const double k = P[hdr + 2];
    complex<double>* W[3] = {W0, W1, W2};
    if (lane == 0)
        for (int row = w0; row < n; row += nw) {
            d[row] = tdse_chain_v(row, xg[row], P, Q, hdr, base, nt, nc, 1, field);
            if (D) d[row] += P[iv + 1];                 /* the velocity gauge's alpha A^2/2 */
        }
    const int last = K < 1 ? 1 : K;
    for (int kk = 1; kk <= last; ++kk) {
        if (kk > 1) tdse_grid_sync(bar);
        tdse_chain_stage(xs, X, m, W, kk, n);
        for (int row = w0; row < n; row += nw) {
            double re, im;
            tdse_row_dot(T + (size_t)row * n, xs, n, lane, re, im);
            tdse_warp_sum(re, im);
            if (D) {            /* velocity gauge: g += -i alpha a (D x) / k, D's row from L2 */
                double mre, mim;
                tdse_row_dot(D + (size_t)row * n, xs, n, lane, mre, mim);
                tdse_warp_sum(mre, mim);
                double c = P[iv] / k;
                re += c * mim;
                im -= c * mre;
            }
            if (lane == 0) {
                complex<double> p;
                if (kk == 2) {
                    p = m ? X[row] * m[row] : X[row];
                } else if (kk > 2) {
                    double2 q = __ldcg(reinterpret_cast<const double2*>(W[(kk - 3) %% 3]) + row);
                    p = complex<double>(q.x, q.y);
                }
                complex<double> a = acc[row];
                tdse_chain_update(complex<double>(re, im), complex<double>(xs[row].x, xs[row].y),
                                  d[row], p, k, kk, last, K, A, ia, a, W[(kk - 1) %% 3], m, out, row);
                acc[row] = a;
            }
        }
        __syncthreads();
    }
}

/* One exponential of one member on the 3-/5-point stencil with no grid barrier (#59 item
   3): block b owns rows [b tile, (b + 1) tile) and stages the (masked) input and the row's
   d on them and on rad K rows either side (the halo).  A term's band product reads rad rows
   either side, so term kk is computed on the staged rows less rad kk at each edge (what
   the rows beyond would need is not staged: overlapped, or "trapezoidal", tiling), and
   after K terms the owned rows are exact.  The blocks never wait for each other; a term is
   a __syncthreads apart.  A row's operations are those of BAND_SOURCE (DBAND_SOURCE for the
   velocity gauge) and of the first / recur (first_v / recur_v) and final kernels, in their
   order.  Shared memory: three terms and d on the staged rows, the running sum on the
   owned ones (tile_smem in tdse.numerics.graphs).  X and out must be different buffers.
   slot (or null): the step's tap slots (tdse_row_fetch), each output row also written into
   row slot[t] of to_t where >= 0 -- the tap of ROWS done by this kernel, no node of its own. */
extern "C" __global__ void tdse_cheb_tile(const complex<double>* X, const double* m,
        const double* xg, const double* P, const double* Q, int hdr, int base, int nt, int nc,
        int field, const complex<double>* A, int ia, int K, double d0, double d1, double d2,
        double c1, double c2, int vel, int iv, complex<double>* out, int n, int tile, int rad,
        const int* slot, complex<double>* to0, complex<double>* to1) {
    extern __shared__ double2 sh[];
    const int last = K < 1 ? 1 : K;
    const int halo = rad * last, ext = tile + 2 * halo;
    const int lo = blockIdx.x * tile - halo;          /* the global row of staged row 0 */
    double2* W[3] = {sh, sh + ext, sh + 2 * ext};
    double* d = reinterpret_cast<double*>(sh + 3 * ext);
    double2* acc = sh + 3 * ext + (ext + 1) / 2;
    const double k = P[hdr + 2];
    const complex<double> va(0.0, vel ? -P[iv] : 0.0);
    for (int j = threadIdx.x; j < ext; j += blockDim.x) {
        const int gi = lo + j;
        if (gi < 0 || gi >= n) continue;               /* beyond the grid: never read */
        complex<double> v = X[gi];
        if (m) v = v * m[gi];
        W[0][j] = make_double2(v.real(), v.imag());
        double dv = tdse_chain_v(gi, xg[gi], P, Q, hdr, base, nt, nc, 1, field);
        if (vel) dv += P[iv + 1];                      /* the velocity gauge's alpha A^2/2 */
        d[j] = dv;
    }
    __syncthreads();
#define TDSE_W(b, j) complex<double>((b)[j].x, (b)[j].y)
    for (int kk = 1; kk <= last; ++kk) {
        const double2* cur = W[(kk - 1) %% 3];
        const double2* prv = W[(kk + 1) %% 3];
        double2* nxt = W[kk %% 3];
        for (int j = rad * kk + threadIdx.x; j < ext - rad * kk; j += blockDim.x) {
            const int gi = lo + j;
            if (gi < 0 || gi >= n) continue;
            const complex<double> xv = TDSE_W(cur, j);
            complex<double> g(0.0, 0.0);
            if (rad > 1 && gi >= 2) g += d2 * TDSE_W(cur, j - 2);
            if (gi >= 1) g += d1 * TDSE_W(cur, j - 1);
            g += d0 * xv;
            if (gi + 1 < n) g += d1 * TDSE_W(cur, j + 1);
            if (rad > 1 && gi + 2 < n) g += d2 * TDSE_W(cur, j + 2);
            complex<double> z = g * k;
            if (vel) {
                complex<double> mv(0.0, 0.0);
                if (gi + 1 < n) mv += c1 * TDSE_W(cur, j + 1);
                if (gi >= 1) mv -= c1 * TDSE_W(cur, j - 1);
                if (rad > 1 && gi + 2 < n) mv += c2 * TDSE_W(cur, j + 2);
                if (rad > 1 && gi >= 2) mv -= c2 * TDSE_W(cur, j - 2);
                z = z + mv * va;
            }
            z = z + xv * d[j];
            if (kk == 1) z = z * 0.5;
            else z = z - TDSE_W(prv, j);
            nxt[j] = make_double2(z.real(), z.imag());
            const int t = j - halo;
            if (t >= 0 && t < tile) {                  /* an owned row: the running sum */
                complex<double> a;
                if (kk == 1) {
                    a = A[ia] * xv;
                    a += A[ia + 1] * z;
                } else {
                    a = TDSE_W(acc, t);
                    a += A[ia + kk] * z;
                }
                if (kk == last) {
                    complex<double> o = a * A[ia + K + 1];
                    if (m) o = o * m[gi];
                    out[gi] = o;
                    if (slot) {                /* (read here: no register held across the terms) */
                        const int k0 = slot[0], k1 = slot[1];
                        if (k0 >= 0) to0[(long long)k0 * n + gi] = o;
                        if (k1 >= 0) to1[(long long)k1 * n + gi] = o;
                    }
                } else {
                    acc[t] = make_double2(a.real(), a.imag());
                }
            }
        }
        __syncthreads();
    }
#undef TDSE_W
}

/* N <= 32 CHAIN_REG with a warp a row: T's row held in registers and the row's d, previous
   term and sum in lane 0's registers across the terms, so a term reads only x from L2
   (summation order and operations as above). */
extern "C" __global__ void tdse_cheb_chain_reg(const double* T, const complex<double>* X,
        const double* m, const double* xg, const double* P, const double* Q, int hdr, int base,
        int nt, int nc, int field, const complex<double>* A, int ia, int K,
        complex<double>* W0, complex<double>* W1, complex<double>* W2, complex<double>* acc,
        double* d, complex<double>* out, int n, unsigned int* bar, const double* D, int iv) {
    extern __shared__ double2 xs[];
    const int lane = threadIdx.x & 31;
    const int row = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    const bool own = row < n;
    const double k = P[hdr + 2];
    complex<double>* W[3] = {W0, W1, W2};
    double t[%(reg)d];
    if (own) {
        const double* tr = T + (size_t)row * n;
#pragma unroll
        for (int q = 0; q < %(reg)d; ++q) {
            int j = lane + 32 * q;
            t[q] = j < n ? tr[j] : 0.0;
        }
    }
    double dr = 0.0;
    complex<double> pr, ar;
    if (own && lane == 0) dr = tdse_chain_v(row, xg[row], P, Q, hdr, base, nt, nc, 1, field);
    const int last = K < 1 ? 1 : K;
    for (int kk = 1; kk <= last; ++kk) {
        if (kk > 1) tdse_grid_sync(bar);
        tdse_chain_stage(xs, X, m, W, kk, n);
        if (own) {
            double re = 0.0, im = 0.0;
#pragma unroll
            for (int q = 0; q < %(reg)d; ++q) {
                int j = lane + 32 * q;
                if (j < n) {
                    double2 v = xs[j];
                    re += t[q] * v.x;
                    im += t[q] * v.y;
                }
            }
            tdse_warp_sum(re, im);
            if (lane == 0) {
                complex<double> xi(xs[row].x, xs[row].y);
                tdse_chain_update(complex<double>(re, im), xi, dr, pr, k, kk, last, K, A, ia,
                                  ar, W[(kk - 1) %% 3], m, out, row);
                pr = xi;
            }
        }
    }
}
"""


DENSE = r"""
#include <cupy/complex.cuh>
/* B = Im(-i dt (s T + diag(v)) - mu I), mu = -i dt c: off the diagonal -dt (s T_ij), on it
   -dt (s T_ii + v_i) - Im mu, rounded as the launched path rounds them (no contraction). */
extern "C" __global__ void tdse_dense_b(const double* T, const double* P, int off, int n,
        double s, double dt, double* B) {
    size_t k = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= (size_t)n * n) return;
    int i = (int)(k / n), j = (int)(k % n);
    double h = __dmul_rn(T[k], s);
    if (i == j) h = __dadd_rn(h, P[off + 3 + i]);
    double b = __dmul_rn(h, -dt);
    if (i == j) b = __dsub_rn(b, P[off]);
    B[k] = b;
}

/* out = e^mu (U x): a warp a row of the complex U */
extern "C" __global__ void tdse_dense_apply(const complex<double>* U, const complex<double>* x,
        const double* P, int off, complex<double>* out, int n) {
    int row = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    int lane = threadIdx.x & 31;
    if (row >= n) return;
    const complex<double>* u = U + (size_t)row * n;
    double re = 0.0, im = 0.0;
    for (int j = lane; j < n; j += 32) {
        complex<double> a = u[j], b = x[j];
        re += a.real() * b.real() - a.imag() * b.imag();
        im += a.real() * b.imag() + a.imag() * b.real();
    }
    for (int o = 16; o > 0; o >>= 1) {
        re += __shfl_down_sync(0xffffffff, re, o);
        im += __shfl_down_sync(0xffffffff, im, o);
    }
    if (lane == 0) out[row] = complex<double>(P[off + 1], P[off + 2]) * complex<double>(re, im);
}
"""


#: the DVR's series on a block in the folded basis (:func:`tdse.model.centro.centro_fold`, N
#: = 2m even): a thread a pair of rows r and N-1-r of member b (i = r nb + b), S = x_r + x_{N-1-r}
#: at i, D = x_r - x_{N-1-r} at i + m nb; the diagonal v acts there as [[e, o], [o, e]] with
#: e, o = (v_r +- v_{N-1-r}) / 2; the masks (N x B, each member's) before the fold and after
#: the unfold; the "first" / "recur" / "final" updates otherwise as theirs
_PAIR = ("int r = i / nb; long long j = (long long)(n - 1 - r) * nb + (i - (long long)r * nb); "
         "long long off = (long long)(n / 2) * nb; ")
_EO = "double e = (d[i] + d[j]) * 0.5, o = (d[i] - d[j]) * 0.5; T s = x[i], u = x[i + off]; "
FOLDED = {
    "fold": ("raw T X, int32 n, int32 nb", "raw T C",
             _PAIR + "T a = X[i], b = X[j]; C[i] = a + b; C[i + off] = a - b;"),
    "fold_mask": ("raw T X, raw float64 m, int32 n, int32 nb", "raw T C",
                  _PAIR + "T a = X[i] * m[i], b = X[j] * m[j]; C[i] = a + b; C[i + off] = a - b;"),
    "first_pair": ("raw T g, raw float64 d, raw T x, raw float64 P, int32 ik, raw T A, int32 ia, "
                   "int32 n, int32 nb", "raw T cur, raw T y",
                   _PAIR + _EO + "double k = P[ik]; "
                   "T cs = (g[i] * k + (s * e + u * o)) * 0.5, cu = (g[i + off] * k + (s * o + u * e)) * 0.5; "
                   "cur[i] = cs; cur[i + off] = cu; "
                   "T ys = A[ia] * s; ys += A[ia + 1] * cs; y[i] = ys; "
                   "T yu = A[ia] * u; yu += A[ia + 1] * cu; y[i + off] = yu;"),
    "recur_pair": ("raw T g, raw float64 d, raw T x, raw T p, raw float64 P, int32 ik, raw T A, "
                   "int32 ia, int32 n, int32 nb", "raw T z, raw T acc",
                   _PAIR + _EO + "double k = P[ik]; "
                   "T zs = g[i] * k + (s * e + u * o) - p[i], zu = g[i + off] * k + (s * o + u * e) - p[i + off]; "
                   "z[i] = zs; z[i + off] = zu; acc[i] += A[ia] * zs; acc[i + off] += A[ia] * zu;"),
    "final_unfold": ("raw T y, raw T A, int32 ia, int32 n, int32 nb", "raw T out",
                     _PAIR + "T s = y[i], u = y[i + off]; out[i] = ((s + u) * 0.5) * A[ia]; "
                     "out[j] = ((s - u) * 0.5) * A[ia];"),
    "final_unfold_mask": ("raw T y, raw T A, int32 ia, raw float64 m, int32 n, int32 nb", "raw T out",
                          _PAIR + "T s = y[i], u = y[i + off]; out[i] = (((s + u) * 0.5) * A[ia]) * m[i]; "
                          "out[j] = (((s - u) * 0.5) * A[ia]) * m[j];"),
}


_KERNELS = {}


def graph_kernels(cp, device, reg) -> dict:
    """The graph step's kernels for a potential's ``device`` definition; ``reg``: T's row
    in registers up to 32 ``reg`` columns (tdse_cheb_chain_reg)."""
    key = (str(device), reg)
    if key in _KERNELS:
        return _KERNELS[key]
    E = cp.ElementwiseKernel
    k = {
        "diag": potential_kernels(cp, device)["v"],
        "band": band_kernel(cp),
        "mask": E("T x, float64 m", "T y", "y = x * m", "tdse_graph_mask"),
        "first": E("T g, float64 d, T x, raw float64 P, int32 ik, raw T A, int32 ia",
                   "T cur, T y", "cur = (g * P[ik] + x * d) * 0.5; y = A[ia] * x; y += A[ia + 1] * cur",
                   "tdse_graph_first"),
        "recur": E("T g, float64 d, T x, T p, raw float64 P, int32 ik, raw T A, int32 ia",
                   "T z, T acc", "z = g * P[ik] + x * d - p; acc += A[ia] * z", "tdse_graph_recur"),
        "final": E("T y, raw T A, int32 ia", "T out", "out = y * A[ia]", "tdse_graph_final"),
        # the velocity gauge (member b = i % nb): d += alpha q_b (the A^2/2 of V), and the
        # terms' alpha a_b p x = -i alpha a_b (D x) added to the first / recur updates
        "dband": dband_kernel(cp),
        "vdiag": E("raw float64 P, int32 iq, int32 nb", "float64 d", "d += P[iq + i % nb]",
                   "tdse_graph_vdiag"),
        "first_v": E("T g, T m, float64 d, T x, raw float64 P, int32 ik, raw T A, int32 ia, "
                     "int32 iv, int32 nb", "T cur, T y",
                     "cur = (g * P[ik] + m * T(0, -P[iv + i % nb]) + x * d) * 0.5; "
                     "y = A[ia] * x; y += A[ia + 1] * cur", "tdse_graph_first_v"),
        "recur_v": E("T g, T m, float64 d, T x, T p, raw float64 P, int32 ik, raw T A, int32 ia, "
                     "int32 iv, int32 nb", "T z, T acc",
                     "z = g * P[ik] + m * T(0, -P[iv + i % nb]) + x * d - p; acc += A[ia] * z",
                     "tdse_graph_recur_v"),
        "gemv_term": cp.RawKernel(GEMV_TERM, "tdse_gemv_term"),
        "row_fetch": cp.RawKernel(ROWS, "tdse_row_fetch"),
        "row_tap": cp.RawKernel(ROWS, "tdse_row_tap"),
    }
    src = CHAIN % {"v": device_v(device), "reg": reg}
    for name in ("tdse_cheb_chain", "tdse_cheb_chain_reg"):
        for coop in (True, False):
            k[name, coop] = cp.RawKernel(src, name, enable_cooperative_groups=coop)
    k["tdse_cheb_tile"] = cp.RawKernel(src, "tdse_cheb_tile")
    k["final_mask"] = E("T y, raw T A, int32 ia, float64 m", "T out",
                        "out = y * A[ia]; out = out * m", "tdse_graph_final_mask")
    k.update({name: E(*FOLDED[name], f"tdse_graph_{name}") for name in FOLDED})
    _KERNELS[key] = k
    return k


_DENSE_KERNELS = {}


def dense_kernels(cp) -> dict:
    """:data:`DENSE`'s two kernels, compiled once."""
    if not _DENSE_KERNELS:
        _DENSE_KERNELS.update({k: cp.RawKernel(DENSE, k) for k in ("tdse_dense_b", "tdse_dense_apply")})
    return _DENSE_KERNELS
