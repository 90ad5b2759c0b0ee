"""The 1D + 1D model's operator with Psi's columns (its R points) split over several GPUs,
for the Chebyshev series (:func:`tdse.numerics.chebyshev.expm_apply`'s ``scaled``
protocol: ``into``, ``back``, ``recur``, ``axpy``).

Psi is N_x x N_R; GPU g holds the columns J_g.  A term 2 G' Y = alpha (s (T_x Y + Y T_R)
+ (s V + e kappa x - shift) o Y) on GPU g is

* T_x Y_g: one real GEMM (T_x on Re and Im at once), local: T_x is on every GPU;
* (Y T_R)_g = sum_h Y_h T_R[J_h, J_g]: its own block's GEMM first, then each peer's block
  as it arrives -- each GPU sends its new block to the others on a copy stream as soon as
  the term's update made it, so the copies run under the next term's two local GEMMs;
* the diagonal, the recurrence and the sum's update in one element-wise pass.

Everything is asynchronous on one compute and one copy stream a GPU, ordered by events; the
series' caller sees one ``into`` (the full Psi split from the first GPU) and one ``back``
(gathered there) a factor.  The same GPU may be listed twice (a test of the split on one
GPU).
"""
from __future__ import annotations

import numpy as np

from .stencil import axpy_kernel

_KERNELS = {}

#: 2 G' X (a series' first product): g = ks g + (vs v + ke kx - c) x
APPLY = "g = g * ks + x * (vs * v + ke * kx - c)"
#: one term: nxt = 2 G' cur - prev into prev's buffer, and Y += a nxt
RECUR = "T n = g * ks + cur * (vs * v + ke * kx - c) - p; p = n; y += a * n;"


def _kernel(cp, name):
    if name not in _KERNELS:
        diag = "float64 v, float64 kx, float64 ks, float64 vs, float64 ke, float64 c"
        _KERNELS[name] = {
            "apply": lambda: cp.ElementwiseKernel(f"T x, {diag}", "T g", APPLY, "tdse_columns_apply"),
            "recur": lambda: cp.ElementwiseKernel(f"T g, T cur, {diag}, T a", "T p, T y", RECUR,
                                                  "tdse_columns_recur"),
            "scale": lambda: cp.ElementwiseKernel("T a", "T y", "y *= a", "tdse_columns_scale"),
        }[name]()
    return _KERNELS[name]


def bounds(n: int, parts: int):
    """The column ranges [(lo, hi)] of ``parts`` near-equal blocks of ``n`` columns."""
    edges = np.linspace(0, n, parts + 1).round().astype(int)
    return [(int(a), int(b)) for a, b in zip(edges[:-1], edges[1:])]


def bytes_per_gpu(n_x: int, n_R: int, parts: int) -> int:
    """Device bytes the operator keeps on each GPU: T_x, T_R's column slab, V's block, the
    peers' blocks and five blocks of the series (X, prev, cur, the sum, the GEMMs' sum)."""
    j = -(-n_R // parts)
    return 8 * n_x * n_x + 16 * n_R * j + 8 * n_x * j + 16 * n_x * (n_R - j) + 5 * 16 * n_x * j


class Blocks:
    """Psi's column blocks, one a GPU (``parts``), for the series' arithmetic."""

    def __init__(self, op, parts):
        self.op, self.parts = op, parts

    def __rmul__(self, a):
        out = []
        for g, p in enumerate(self.parts):
            with self.op.on(g):
                out.append(p * p.dtype.type(a))
        return Blocks(self.op, out)

    def __imul__(self, a):
        cp = self.op.cp
        for g, p in enumerate(self.parts):
            with self.op.on(g):
                _kernel(cp, "scale")(p.dtype.type(a), p)
        return self


class ColumnOperator:
    """The model's arrays on ``devices`` (Psi's columns split over them); :meth:`scaled`
    gives a factor's operator for the series.  ``Tx`` (real), ``TR`` (complex), ``V`` and
    ``kx`` (= kappa x, N_x x 1) are the model's, on the first device or the host."""

    def __init__(self, cp, devices, Tx, TR, V, kx):
        from mgemm.executors.cupy_exec import enable_peer_access
        self.cp, self.devices = cp, list(devices)
        enable_peer_access(sorted(set(self.devices)))
        self.n_x, self.n_R = V.shape
        self.cols = bounds(self.n_R, len(self.devices))
        Tx, TR, V, kx = (cp.asnumpy(a) if not isinstance(a, np.ndarray) else a for a in (Tx, TR, V, kx))
        self.streams, self.copies, self.Tx, self.TR, self.V, self.kx = [], [], [], [], [], []
        self.ready, self.consumed, self.sent, self.gemm, self.recv, self.arrived = [], [], [], [], [], []
        for g, d in enumerate(self.devices):
            lo, hi = self.cols[g]
            with cp.cuda.Device(d):
                self.streams.append(cp.cuda.Stream(non_blocking=True))
                self.copies.append(cp.cuda.Stream(non_blocking=True))
                with self.streams[g]:
                    self.Tx.append(cp.asarray(Tx))
                    self.TR.append([cp.asarray(np.ascontiguousarray(TR[a:b, lo:hi])) for a, b in self.cols])
                    self.V.append(cp.asarray(np.ascontiguousarray(V[:, lo:hi])))
                    self.kx.append(cp.asarray(kx))
                    self.gemm.append(cp.empty((self.n_x, hi - lo), np.complex128))
                    self.recv.append([None if h == g else cp.empty((self.n_x, b - a), np.complex128)
                                      for h, (a, b) in enumerate(self.cols)])
                self.ready.append(cp.cuda.Event(disable_timing=True))
                self.consumed.append(cp.cuda.Event(disable_timing=True))
                self.sent.append(cp.cuda.Event(disable_timing=True))
                #: arrived[g][h]: g's block is on h (recorded on g's copy stream, so made on g)
                self.arrived.append([cp.cuda.Event(disable_timing=True) for _ in self.devices])
            self.streams[g].synchronize()
        self._sent = None

    def on(self, g):
        """The context of GPU g's compute stream."""
        return _On(self.cp, self.devices[g], self.streams[g])

    def scaled(self, scale, e):
        """(alpha, shift) -> the factor's 2 G' for the series, G = scale (T + V) + e kappa x."""
        return lambda alpha, shift: _Factor(self, alpha * scale, alpha * e, alpha * shift)

    # -- the series' pieces
    def split(self, X):
        """Psi (N_x x N_R, on the current device and stream) as Blocks."""
        cp = self.cp
        X = cp.ascontiguousarray(X, dtype=np.complex128)
        src = [cp.ascontiguousarray(X[:, a:b]) for a, b in self.cols]
        done = cp.cuda.Event(disable_timing=True)
        done.record()
        parts = []
        for g, p in enumerate(src):
            with self.on(g):
                self.streams[g].wait_event(done)
                q = cp.empty(p.shape, np.complex128)
                q.data.copy_from_device_async(p.data, p.nbytes, self.streams[g])
                parts.append(q)
        self._keep = src                    # read by the copies until gather's wait
        return Blocks(self, parts)

    def gather(self, Y):
        """Blocks -> the full Psi on the current device, ordered after every stream's work."""
        cp = self.cp
        out = cp.empty((self.n_x, self.n_R), np.complex128)
        here = cp.cuda.get_current_stream()
        start = cp.cuda.Event(disable_timing=True)
        start.record(here)
        tmp = []
        for g, p in enumerate(Y.parts):
            q = cp.empty(p.shape, np.complex128)
            with self.on(g):
                self.streams[g].wait_event(start)
                q.data.copy_from_device_async(p.data, p.nbytes, self.streams[g])
                ev = cp.cuda.Event(disable_timing=True)
                ev.record(self.streams[g])
            here.wait_event(ev)
            tmp.append(q)
        for (a, b), q in zip(self.cols, tmp):
            out[:, a:b] = q
        self._keep, self._sent = None, None
        return out

    def send(self, Y):
        """Each GPU's block of Y to the others, on its copy stream once the block is made and
        the peer has read the last block it received."""
        for g, p in enumerate(Y.parts):
            with self.cp.cuda.Device(self.devices[g]):
                self.ready[g].record(self.streams[g])
                self.copies[g].wait_event(self.ready[g])
        for g, p in enumerate(Y.parts):
            with self.cp.cuda.Device(self.devices[g]):
                for h in range(len(self.devices)):
                    if h == g:
                        continue
                    self.copies[g].wait_event(self.consumed[h])
                    dst = self.recv[h][g]
                    dst.data.copy_from_device_async(p.data, p.nbytes, self.copies[g])
                    self.arrived[g][h].record(self.copies[g])
                self.sent[g].record(self.copies[g])
        self._sent = Y

    def products(self, Y):
        """Each GPU's T_x Y_g + (Y T_R)_g into its GEMM buffer (its own block first, then
        each peer's as it arrives): cuBLAS on the compute stream, host scalars."""
        from mgemm.executors.cupy_exec import cublas, gemm_rowmajor
        if self._sent is not Y:
            self.send(Y)
        one, zero, cone = np.array(1.0), np.array(0.0), np.array(1.0 + 0j)
        nx = self.n_x
        for g, p in enumerate(Y.parts):
            with self.on(g):
                h = self.cp.cuda.device.get_cublas_handle()
                cublas.setPointerMode(h, 0)
                out, j = self.gemm[g], p.shape[1]
                gemm_rowmajor(h, np.float64, nx, 2 * j, nx, one.ctypes.data, self.Tx[g].data.ptr, nx,
                              zero.ctypes.data, p.data.ptr, 2 * j, out.data.ptr, 2 * j)
                gemm_rowmajor(h, np.complex128, nx, j, j, cone.ctypes.data, p.data.ptr, j,
                              cone.ctypes.data, self.TR[g][g].data.ptr, j, out.data.ptr, j)
                for k in range(len(self.devices)):
                    if k != g:
                        r = self.recv[g][k]
                        self.streams[g].wait_event(self.arrived[k][g])
                        gemm_rowmajor(h, np.complex128, nx, j, r.shape[1], cone.ctypes.data, r.data.ptr,
                                      r.shape[1], cone.ctypes.data, self.TR[g][k].data.ptr, j, out.data.ptr, j)
                self.consumed[g].record(self.streams[g])


class _On:
    """``with``: GPU ``device`` current and its ``stream``."""

    def __init__(self, cp, device, stream):
        self.dev, self.stream = cp.cuda.Device(device), stream

    def __enter__(self):
        self.dev.__enter__()
        self.stream.__enter__()

    def __exit__(self, *exc):
        self.stream.__exit__(*exc)
        self.dev.__exit__(*exc)


class _Factor:
    """2 G' = ks T + (vs V + ke kappa x - c) of one factor, in the series' protocol."""

    def __init__(self, op, ks, ke, c):
        self.op, self.ks, self.ke, self.c = op, float(ks), float(ke), float(c)

    def into(self, X):
        return self.op.split(X)

    def back(self, Y):
        return self.op.gather(Y)

    def _diag(self, g):
        return self.op.V[g], self.op.kx[g], self.ks, self.ks, self.ke, self.c

    def __call__(self, X):
        op, out = self.op, []
        op.products(X)
        for g, p in enumerate(X.parts):
            with op.on(g):
                r = op.gemm[g].copy()
                _kernel(op.cp, "apply")(p, *self._diag(g), r)
                out.append(r)
        return Blocks(op, out)

    def recur(self, cur, prev, Y, a):
        op = self.op
        op.products(cur)
        for g in range(len(op.devices)):
            with op.on(g):
                op.streams[g].wait_event(op.sent[g])      # prev's buffer: its copies are done
                _kernel(op.cp, "recur")(op.gemm[g], cur.parts[g], *self._diag(g), np.complex128(a),
                                        prev.parts[g], Y.parts[g])
        op.send(prev)                       # the next term's peers' blocks, under its local GEMMs
        return prev

    def axpy(self, a, x, y):
        for g in range(len(self.op.devices)):
            with self.op.on(g):
                axpy_kernel(self.op.cp)(x.parts[g], np.complex128(a), y.parts[g])
