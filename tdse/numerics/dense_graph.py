"""The dense exponent's step of psi on one GPU as one CUDA graph (#27): the small-N path
beside the Chebyshev graphs of :mod:`tdse.numerics.graphs`, whose capture, copies and
cuBLAS DGEMM it shares."""
from __future__ import annotations

import numpy as np

from .graphs import RUN_AHEAD, capture, copy_in, copy_out, dgemm_fn

__all__ = ["DenseGraphStep", "dense_available", "DENSE_GRAPH_MAX_N"]

#: the dense exponent's small-N path on one GPU (:class:`DenseGraphStep`) up to this N
DENSE_GRAPH_MAX_N = 4096



def dense_available(stepper) -> bool:
    """Whether ``stepper`` (a single run's Stepper) steps psi by :class:`DenseGraphStep`: the
    dense exponent (or Taylor) with the split (Hermitian) plan, on one GPU, H time-dependent,
    no U(t), N <= DENSE_GRAPH_MAX_N, and the option ``run.graphs`` on."""
    m, cfg = stepper.method, stepper.config
    if (stepper.xp is np or m.matrix_free or stepper.layout is not None or stepper.static
            or not cfg.hermitian or cfg.propagator.operator or cfg.grid.n > DENSE_GRAPH_MAX_N
            or getattr(m.plan, "path", None) != "split"
            or not cfg.run.graphs):
        return False
    try:
        dgemm_fn(stepper.xp)
    except (OSError, AttributeError):
        return False
    return True


class DenseGraphStep:
    """A step of psi by the dense exponent as one CUDA graph (#27 item 1: "the dense
    exponent's small-N path the same"): per exponential, B = Im(-i dt G - mu I) built in one
    kernel from the step's v and mu, the plan's polynomial and squarings
    (:func:`mgemm.expm.evaluate`, the same code as :func:`mgemm.expm`) with cuBLAS DGEMMs
    called through ctypes, and psi <- e^mu U psi in one kernel.  The plan is fixed for the
    run (the precheck's), so one graph serves every step; what changes -- v(t) on the grid
    and mu -- is read from a device buffer filled by one pinned upload a step.  The
    temporaries of the capture come from a memory pool of its own, kept for the graph's
    life, so no later allocation can take the memory the graph writes."""

    def __init__(self, stepper):
        import cupy as cp
        from ..model import hamiltonian
        from mgemm.arrays import PinnedUpload
        from ..backends.cupy.chain import dense_kernels
        self.cp, self.st, self.k = cp, stepper, dense_kernels(cp)
        cfg = stepper.config
        self.n, self.dt = cfg.grid.n, cfg.time.dt
        self.plan = stepper.method.plan
        self.scales = list(stepper.scheme.scales())
        self.seg = 3 + self.n
        self.T = cp.ascontiguousarray(hamiltonian.kinetic_dense(cfg.grid, cp))
        self.B = cp.zeros((self.n, self.n))
        self.Xin, self.Xw = cp.zeros(self.n, np.complex128), cp.zeros(self.n, np.complex128)
        self.up = PinnedUpload(cp, ring=RUN_AHEAD)      # a dense step is long: 64 is ample
        self.row = np.zeros(len(self.scales) * self.seg)
        self.P = self.graph = self.result = None
        self.pool = cp.cuda.MemoryPool()    # the capture's temporaries, never handed out again
        self._scalars = []                  # alpha/beta of the captured products, kept alive

    def _mm(self, X, Y, C=None, alpha=1.0, beta=0.0):
        """alpha X Y + beta C (row-major: the column-major DGEMM of Y^T X^T)."""
        cp, n = self.cp, self.n
        X, Y = cp.ascontiguousarray(X), cp.ascontiguousarray(Y)
        out = cp.empty((n, n))
        if C is not None and beta != 0.0:
            cp.copyto(out, C)
        else:
            beta = 0.0
        a, b = np.array(float(alpha)), np.array(float(beta))
        self._scalars += [a, b]
        err = dgemm_fn(cp)(cp.cuda.device.get_cublas_handle(), 0, 0, n, n, n, a.ctypes.data,
                            Y.data.ptr, n, X.data.ptr, n, b.ctypes.data, out.data.ptr, n)
        if err:
            raise RuntimeError(f"cublasDgemm failed with status {err}")
        return out

    def _body(self):
        from mgemm.expm import evaluate
        n, X = self.n, self.Xin
        for e, s in enumerate(self.scales):
            off = np.int32(e * self.seg)
            self.k["tdse_dense_b"](((n * n + 255) // 256,), (256,),
                                   (self.T, self.P, off, np.int32(n), np.float64(s),
                                    np.float64(self.dt), self.B))
            U = evaluate(self.cp, self._mm, self.B, self.plan)
            out = self.Xw if X is self.Xin else self.Xin
            self.k["tdse_dense_apply"](((32 * n + 255) // 256,), (256,),
                                       (U, X, self.P, off, out, np.int32(n)))
            X = out
        self.result = X

    def _capture(self):
        keep = self.Xin.copy()
        graph = capture(self.cp, self._body, pool=self.pool)
        self.cp.copyto(self.Xin, keep)
        return graph

    def step(self, psi, j):
        st, row, seg, dt = self.st, self.row, self.seg, self.dt
        for e, (s, v, _) in enumerate(st.generators(j)):     # (a GPU run: the length gauge)
            lo, hi = st.method.bounds(s, v)
            shift = -1j * dt * 0.5 * (lo + hi)          # as Dense.factor
            ph = np.exp(shift)
            o = e * seg
            row[o], row[o + 1], row[o + 2] = shift.imag, ph.real, ph.imag
            row[o + 3:o + seg] = v
        self.up.put(row)
        if self.P is None or self.up.dev.data.ptr != self.P.data.ptr:
            self.P, self.graph = self.up.dev, None      # a new buffer: capture again
        copy_in(self.cp, self.Xin, psi.reshape(-1))
        if self.graph is None:
            self.graph = self._capture()
        self.graph.launch()
        st.method.exponentials += len(self.scales)
        return copy_out(self.cp, self.result)
