"""Column-band layout for the multi-GPU matrix exponent (placement (iii) of the band
algorithm: operands split in bands across the devices and kept there).

An N x N matrix X lives as G column bands X_d = X[:, c_d:c_(d+1)], band d on device d.
A product Y = L X needs on device d all of L against X_d.  Two ways (``left``):

* ``"stream"`` (the default): Y_d = sum_h L_h X_d[c_h:c_(h+1), :], one GEMM per band of
  L; device d starts with its own band and pulls the others from their devices, peer to
  peer, into two staging buffers on a copy stream while the previous piece's GEMM runs --
  the band algorithm's double buffering (Choi, Nikolskiy & Stegailov 2020, Alg. 1-2) with
  the left operand's bands as the travelling panels.  No device ever holds L whole: the
  memory per device is the bands plus 2 staging bands, which is what lets N grow with G.
* ``"replica"``: the left operand is gathered whole on every device first (cached on the
  matrix, so A and the PS power X^q are gathered once), then Y_d = L X_d.  So:

* a product moves nothing when its left operand is already replicated (A itself, the
  Paterson-Stockmeyer power X^q: each is gathered once and cached);
* otherwise the left operand is all-gathered first: every device receives the G - 1
  other bands, (G-1)/G N^2 elements per device, peer to peer (one 2-D copy per band);
  in the exponent that is only the squarings (two real gathers per squaring on the
  split path, one complex gather on the complex path);
* sums, scalings and the identity are local per band;
* the result is gathered once onto one device at the end (:meth:`BandedMatrix.to_array`),
  or used in place (:meth:`BandedMatrix.matvec`: U psi as per-device partial sums).

Works on the CPU with ``devices`` an int (virtual devices holding NumPy bands: the
logic is tested in CI) and on GPUs with a list of CuPy device ids; :class:`Layout` is
the array-module namespace (``eye``, ``zeros_like``) that :mod:`mgemm.expm` is written
against, so the exponent's algorithm is the same code on one device and on G.
"""
from __future__ import annotations

import numbers

import numpy as np

from .arrays import cupy_or_none, mark_side_work


class Layout:
    """How N columns are cut into bands over ``devices`` (an int: virtual CPU devices;
    a list: CuPy GPU ids)."""

    def __init__(self, n: int, devices, gpu=None, left: str = "stream"):
        if isinstance(devices, numbers.Integral) and not isinstance(devices, bool):
            if devices < 1:
                raise ValueError(f"devices must be >= 1, got devices={devices}")
            self.gpu, self.devices = False, list(range(int(devices)))
        elif gpu is False:  # host arrays: one virtual device per listed id
            self.gpu, self.devices = False, list(range(len(list(devices))))
        else:
            self.devices = [int(d) for d in devices]
            if not self.devices or len(set(self.devices)) != len(self.devices):
                raise ValueError(f"devices must be distinct GPU ids, got devices={devices!r}")
            self.gpu = True
        g = len(self.devices)
        if n < g:
            raise ValueError(f"N={n} is smaller than the number of devices {g}")
        if left not in ("stream", "replica"):
            raise ValueError(f"left must be 'stream' or 'replica', got left={left!r}")
        self.n, self.left = n, left
        self.cuts = [round(i * n / g) for i in range(g + 1)]
        self._copy_streams, self._stage, self._stage_free, self._keep = {}, {}, {}, {}
        self.cp = cupy_or_none() if self.gpu else None
        if self.gpu:
            if self.cp is None:
                raise ValueError("GPU devices need CuPy")
            from .executors.cupy_exec import enable_peer_access
            enable_peer_access(self.devices)
        self.gathered_bytes = 0   # bytes moved between devices by gathers (for reports)
        self.gathers = 0
        self.trace = None         # a list to record (device, kind, start, end) events into

    def _mark(self, i):
        """An event on device i's current stream (tracing only), or None."""
        if self.trace is None or not self.gpu:
            return None
        with self.ctx(i):
            e = self.cp.cuda.Event()
            e.record()
        return e

    def _record(self, i, kind, e0):
        if e0 is not None:
            self.trace.append((self.devices[i], kind, e0, self._mark(i)))

    # -- device context / array module per band
    def ctx(self, i):
        if self.gpu:
            return self.cp.cuda.Device(self.devices[i])
        import contextlib
        return contextlib.nullcontext()

    @property
    def xp(self):
        return self.cp if self.gpu else np

    def cols(self, i):
        return self.cuts[i], self.cuts[i + 1]

    def from_columns(self, make):
        """A :class:`BandedMatrix` whose band i is ``make(c0, c1)`` (the N x (c1 - c0)
        columns c0..c1-1), called on device i: an input that never exists whole anywhere
        (e.g. A = -i dt H of a banded or Toeplitz H, built where its columns live)."""
        bands = []
        for i in range(len(self.devices)):
            c0, c1 = self.cols(i)
            with self.ctx(i):
                b = self.xp.ascontiguousarray(self.xp.asarray(make(c0, c1)))
            if b.shape != (self.n, c1 - c0):
                raise ValueError(f"make({c0}, {c1}) returned shape {b.shape}, "
                                 f"expected {(self.n, c1 - c0)}")
            bands.append(b)
        return BandedMatrix(self, bands)

    # -- the namespace mgemm.expm uses
    def eye(self, n, dtype=None):
        assert n == self.n
        bands = []
        for i in range(len(self.devices)):
            c0, c1 = self.cols(i)
            with self.ctx(i):
                b = self.xp.zeros((n, c1 - c0), dtype=dtype)
                b[self.xp.arange(c0, c1), self.xp.arange(c1 - c0)] = 1
            bands.append(b)
        return BandedMatrix(self, bands)

    def zeros_like(self, X):
        return X._map(lambda b: self.xp.zeros_like(b))

    def ascontiguousarray(self, X):
        return X

    def iscomplexobj(self, X):
        return bool(np.iscomplexobj(X.bands[0]))

    # -- moving data
    def scatter(self, M):
        """Bands of the full matrix M (NumPy, or CuPy on any device)."""
        self._sync_all()
        if self.gpu:
            with M.device:
                M = self.cp.ascontiguousarray(M)
        bands = []
        for i in range(len(self.devices)):
            c0, c1 = self.cols(i)
            with self.ctx(i):
                if self.gpu:
                    b = self.cp.empty((self.n, c1 - c0), dtype=M.dtype)
                    _copy2d(self.cp, b, 0, M, c0, self.n, c1 - c0)
                else:
                    b = np.ascontiguousarray(M[:, c0:c1])
            bands.append(b)
        self._sync_all()
        return BandedMatrix(self, bands)

    def _sync_all(self):
        if self.gpu:
            for d in self.devices:
                self.cp.cuda.Device(d).synchronize()

    def gather(self, X, dev_index=None):
        """Full copies of X: one per device (a list), or one on device ``dev_index``."""
        targets = range(len(self.devices)) if dev_index is None else [dev_index]
        n, g = self.n, len(self.devices)
        itemsize = X.bands[0].itemsize
        if not self.gpu:
            full = np.concatenate(X.bands, axis=1)
            out = [full if k == 0 else full.copy() for k, _ in enumerate(targets)]
        else:
            cp = self.cp
            ready = []
            for i in range(g):  # every band's producer has finished
                with self.ctx(i):
                    e = cp.cuda.Event(disable_timing=True)
                    e.record()
                    ready.append(e)
            out, done = [], []
            for t in targets:
                e0 = self._mark(t)
                with self.ctx(t):
                    st = cp.cuda.get_current_stream()
                    full = cp.empty((n, n), dtype=X.dtype)
                    for i in range(g):
                        if i != t:
                            st.wait_event(ready[i])
                        c0, c1 = self.cols(i)
                        _copy2d(cp, full, c0, X.bands[i], 0, n, c1 - c0)
                    e = cp.cuda.Event(disable_timing=True)
                    e.record()
                    done.append(e)
                self._record(t, "gather", e0)
                out.append(full)
            for i in range(g):  # a band is not overwritten before its copies finished
                with self.ctx(i):
                    st = cp.cuda.get_current_stream()
                    for e in done:
                        st.wait_event(e)
        self.gathers += 1
        self.gathered_bytes += len(list(targets)) * (g - 1) * n * (n // g) * itemsize
        return out if dev_index is None else out[0]

    # -- the product
    def mm(self, L, R, C=None, alpha=1.0, beta=0.0):
        """alpha L R + beta C with L, R (and C) banded (the left operand streamed or
        replicated, see the module docs)."""
        if self.left == "stream" and L._full is None and L.dtype == R.dtype and (
                C is None or C.dtype == R.dtype):
            return self._mm_stream(L, R, C, alpha, beta)
        return self._mm_replica(L, R, C, alpha, beta)

    def _mm_replica(self, L, R, C, alpha, beta):
        """Y_d = alpha L_full R_d + beta C_d (L gathered whole on every device)."""
        full = L.replicas()
        bands = []
        for i in range(len(self.devices)):
            e0 = self._mark(i)
            with self.ctx(i):
                bands.append(_gemm_local(self.xp, full[i], R.bands[i],
                                         None if C is None else C.bands[i], alpha, beta))
            self._record(i, "gemm", e0)
        return BandedMatrix(self, bands)


    def _mm_stream(self, L, R, C, alpha, beta):
        """Y_d = alpha sum_h L_h R_d[c_h:c_(h+1)] + beta C_d: device d's own band first,
        the other bands pulled into two staging buffers on a copy stream while the
        previous piece's GEMM runs (events order copy -> GEMM -> reuse of the buffer).
        One loop for virtual CPU devices and GPUs; only moving a band and the GEMM differ."""
        g = len(self.devices)
        ready = [self._event(i) for i in range(g)]  # every band of L, R, C has been produced
        copies, bands = [], []
        for t in range(g):
            with self.ctx(t):
                if C is not None and beta != 0:
                    Y, first_beta = C.bands[t].copy(), beta
                else:
                    Y, first_beta = None, 0.0
                for k in range(g):
                    h = (t + k) % g
                    r0, r1 = self.cols(h)
                    if h == t or not self.gpu:
                        src, slot = L.bands[h], None
                    else:
                        slot = k % 2
                        src = self._fetch(L.bands[h], t, slot, ready[h], copies, h)
                    Y = self._gemm_acc(t, src, R.bands[t][r0:r1], Y, alpha,
                                       first_beta if k == 0 else 1.0, slot)
            bands.append(Y)
        for i in range(g):  # a source band is not reused before its copies finished
            with self.ctx(i):
                for h, e in copies:
                    if h == i:
                        self.cp.cuda.get_current_stream().wait_event(e)
        self.gathered_bytes += len(copies) * self.n * (self.n // g) * R.bands[0].itemsize
        return BandedMatrix(self, bands)

    def _event(self, i):
        """An event on device i's current stream (GPU), or None."""
        if not self.gpu:
            return None
        with self.ctx(i):
            e = self.cp.cuda.Event(disable_timing=True)
            e.record()
        return e

    def _fetch(self, band, t, slot, ready, copies, h):
        """``band`` (of device h) copied into device t's staging buffer ``slot`` on t's copy
        stream, after ``ready`` and after the buffer's previous GEMM; t's compute stream
        waits for the copy.  Returns the buffer (its first band.shape[1] columns hold it)."""
        cp = self.cp
        cs, buf = self._copy_stream(t), self._staging(t, band.dtype)[slot]
        free = self._stage_free.setdefault((t, band.dtype.str), [None, None])
        cs.wait_event(ready)
        if free[slot] is not None:
            cs.wait_event(free[slot])
        c0 = None
        if self.trace is not None:
            c0 = cp.cuda.Event()
            c0.record(cs)
        with cs:
            _copy2d(cp, buf, 0, band, 0, self.n, band.shape[1])
        done = cp.cuda.Event(disable_timing=c0 is None)
        done.record(cs)
        if c0 is not None:
            self.trace.append((self.devices[t], "copy", c0, done))
        copies.append((h, done))
        cp.cuda.get_current_stream().wait_event(done)
        return buf

    def _gemm_acc(self, t, src, Rrows, Y, alpha, beta, slot):
        """beta Y + alpha src[:, :k] Rrows (k = Rrows.shape[0]); Y None means 0.  On a GPU
        one cuBLAS call into Y on the current stream (src's leading dimension is its
        width: a staging buffer may be wider than the band it holds)."""
        if not self.gpu:
            P = alpha * (src @ Rrows)
            return P if Y is None else (Y if beta == 1 else beta * Y) + P
        cp = self.cp
        from .executors.cupy_exec import cublas, gemm_rowmajor
        n, k, w = src.shape[0], Rrows.shape[0], Rrows.shape[1]
        if Y is None:
            Y = cp.empty((n, w), dtype=Rrows.dtype)  # beta = 0: not read
        h_blas = cp.cuda.device.get_cublas_handle()
        cublas.setPointerMode(h_blas, 0)  # host scalars
        e0 = self._mark(t)  # after the copy's wait: the GEMM itself
        gemm_rowmajor(h_blas, Y.dtype, n, w, k, self._scalar(alpha, Y.dtype).ctypes.data,
                      src.data.ptr, src.shape[1], self._scalar(beta, Y.dtype).ctypes.data,
                      Rrows.data.ptr, Rrows.strides[0] // Rrows.itemsize, Y.data.ptr, w)
        if slot is not None:  # the staging buffer is free again after this GEMM
            self._stage_free[(t, Y.dtype.str)][slot] = self._event(t)
        self._record(t, "gemm", e0)
        return Y

    def _copy_stream(self, t):
        if t not in self._copy_streams:
            with self.ctx(t):
                self._copy_streams[t] = self.cp.cuda.Stream(non_blocking=True)
        mark_side_work(self.devices[t])
        return self._copy_streams[t]

    def _staging(self, t, dtype):
        key = (t, np.dtype(dtype).str)
        if key not in self._stage:
            w = max(c1 - c0 for c0, c1 in zip(self.cuts, self.cuts[1:]))
            with self.ctx(t):
                self._stage[key] = [self.cp.empty((self.n, w), dtype=dtype) for _ in range(2)]
        return self._stage[key]

    def _scalar(self, value, dtype):
        """A host scalar for cuBLAS (host pointer mode), kept alive with the layout."""
        key = (complex(value), np.dtype(dtype).str)
        if key not in self._keep:
            self._keep[key] = np.array(value, dtype=dtype)
        return self._keep[key]


def _copy2d(cp, dst, dst_c0, src, src_c0, rows, width):
    """dst[:, dst_c0:dst_c0+width] = src[:, src_c0:src_c0+width] (row-major, any devices),
    one cudaMemcpy2DAsync on the current device's current stream."""
    it = dst.itemsize
    cp.cuda.runtime.memcpy2DAsync(
        dst.data.ptr + dst_c0 * it, dst.shape[1] * it, src.data.ptr + src_c0 * it,
        src.shape[1] * it, width * it, rows, 4, cp.cuda.get_current_stream().ptr)


def _gemm_local(xp, A, B, C, alpha, beta):
    P = xp.matmul(A, B)
    if alpha != 1:
        P *= alpha
    if C is not None and beta != 0:
        P += C if beta == 1 else beta * C
    return P


class BandedMatrix:
    """An N x N matrix as column bands on the layout's devices (see the module docs).
    Supports what :mod:`mgemm.expm` does with matrices: +, -, scalar *, /, +=, -=, *=,
    copy, astype, .real/.imag; products go through :meth:`Layout.mm`."""

    __array_priority__ = 100

    def __init__(self, layout: Layout, bands):
        self.layout, self.bands = layout, list(bands)
        self._full = None

    shape = property(lambda self: (self.layout.n, self.layout.n))
    dtype = property(lambda self: self.bands[0].dtype)
    ndim = 2
    size = property(lambda self: self.layout.n ** 2)

    def replicas(self):
        if self._full is None:
            self._full = self.layout.gather(self)
        return self._full

    def _map(self, f):
        out = []
        for i, b in enumerate(self.bands):
            with self.layout.ctx(i):
                out.append(f(b))
        return BandedMatrix(self.layout, out)

    def map_columns(self, f):
        """A new matrix whose band i is f(band_i, c0, c1, xp) (on device i)."""
        out = []
        for i, b in enumerate(self.bands):
            c0, c1 = self.layout.cols(i)
            with self.layout.ctx(i):
                out.append(f(b, c0, c1, self.layout.xp))
        return BandedMatrix(self.layout, out)

    def zip_with(self, other, f):
        """A new matrix whose band i is f(self band i, other band i) (on device i)."""
        return self._zip(other, f)

    def _zip(self, other, f):
        if isinstance(other, BandedMatrix):
            out = []
            for i, (a, b) in enumerate(zip(self.bands, other.bands)):
                with self.layout.ctx(i):
                    out.append(f(a, b))
            return BandedMatrix(self.layout, out)
        return self._map(lambda a: f(a, other))

    def _inplace(self, other, f):
        for i, a in enumerate(self.bands):
            with self.layout.ctx(i):
                f(a, other.bands[i] if isinstance(other, BandedMatrix) else other)
        self._full = None
        return self

    __add__ = lambda self, o: self._zip(o, lambda a, b: a + b)  # noqa: E731
    __radd__ = __add__
    __sub__ = lambda self, o: self._zip(o, lambda a, b: a - b)  # noqa: E731
    __mul__ = lambda self, o: self._zip(o, lambda a, b: a * b)  # noqa: E731
    __rmul__ = __mul__
    __truediv__ = lambda self, o: self._zip(o, lambda a, b: a / b)  # noqa: E731
    __neg__ = lambda self: self._map(lambda a: -a)  # noqa: E731

    def __iadd__(self, o):
        return self._inplace(o, lambda a, b: a.__iadd__(b))

    def __isub__(self, o):
        return self._inplace(o, lambda a, b: a.__isub__(b))

    def __imul__(self, o):
        return self._inplace(o, lambda a, b: a.__imul__(b))

    def copy(self):
        return self._map(lambda a: a.copy())

    def astype(self, dtype, copy=True):
        return self._map(lambda a: a.astype(dtype, copy=copy))

    @property
    def real(self):
        return self._map(lambda a: self.layout.xp.ascontiguousarray(a.real))

    @property
    def imag(self):
        return self._map(lambda a: self.layout.xp.ascontiguousarray(a.imag))

    def to_array(self, dev_index=0):
        """The full matrix on device ``dev_index`` of the layout (NumPy for virtual ones)."""
        full = self.layout.gather(self, dev_index)
        self.layout._sync_all()
        return full

    def matvec(self, v, dev_index=0):
        """X v (v: a vector or an N x k block, on device ``dev_index``): per-device
        partial products X_d v[c_d:c_(d+1)], summed on ``dev_index``."""
        lay = self.layout
        parts = []
        for i, b in enumerate(self.bands):
            c0, c1 = lay.cols(i)
            with lay.ctx(i):
                vi = lay.xp.asarray(v[c0:c1]) if not lay.gpu else to_device(lay.cp, v[c0:c1])
                parts.append(b @ vi)
        with lay.ctx(dev_index):
            total = parts[dev_index].copy()
            for i, p in enumerate(parts):
                if i != dev_index:  # (waits on p's device, so also on its copy of v)
                    total += p if not lay.gpu else to_device(lay.cp, p)
            if lay.gpu:
                done = lay.cp.cuda.Event(disable_timing=True)
                done.record()
        if lay.gpu:  # no host sync: a device reuses a freed partial only after the copies
            for i in range(len(lay.devices)):
                if i != dev_index:
                    with lay.ctx(i):
                        lay.cp.cuda.get_current_stream().wait_event(done)
        return total


def to_device(cp, x):
    """x (contiguous, on any device or the host) copied to the current device, ordered
    after the work of x's device (an event); before x's memory is reused, its device must
    wait for this copy (see :meth:`BandedMatrix.matvec`)."""
    dev = cp.cuda.Device().id
    if isinstance(x, cp.ndarray) and x.device.id == dev:
        return x
    out = cp.empty(x.shape, dtype=x.dtype)
    if not isinstance(x, cp.ndarray):
        out.set(np.ascontiguousarray(x))
        return out
    assert x.flags.c_contiguous
    with x.device:
        e = cp.cuda.Event(disable_timing=True)
        e.record()
    st = cp.cuda.get_current_stream()
    st.wait_event(e)
    cp.cuda.runtime.memcpyAsync(out.data.ptr, x.data.ptr, x.nbytes, 4, st.ptr)
    return out


def trace_rows(trace, cp):
    """Recorded (device, kind, start, end) events as timeline rows {dev, stream, kind,
    start_ms, end_ms}, each device's times from its first event (call after a sync)."""
    first, rows = {}, []
    for dev, kind, e0, e1 in trace:
        t0 = first.setdefault(dev, e0)
        rows.append({"dev": dev, "stream": {"gather": "gather", "copy": "copy"}.get(kind, "compute"),
                     "kind": "copy" if kind in ("gather", "copy") else kind,
                     "start_ms": cp.cuda.get_elapsed_time(t0, e0),
                     "end_ms": cp.cuda.get_elapsed_time(t0, e1)})
    return rows
