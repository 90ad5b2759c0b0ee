"""The ``cupy`` executor: the band schedule on real GPUs (streams, events, peer copies, cuBLAS).

* one non-blocking stream per (device, schedule stream): ``compute``, ``copy_in``,
  ``copy_out``, ``reduce<w>``; one CUDA event per op, recorded after it; an op waits
  (``cudaStreamWaitEvent``) only on dependencies issued to other streams -- the CPU just
  issues commands, in the schedule's order, and never waits in between;
* band copies are single ``cudaMemcpy2DAsync`` calls (peer-to-peer through UVA; peer
  access is enabled first: on H200 NVLink 391 GB/s with it, 38 GB/s without), issued by
  default on a stream of the sending GPU (``copy_side``);
* tiles are cuBLAS {S,D,C,Z}GEMM calls with explicit leading dimensions, writing straight
  into the C band buffer (row-major C = A B is column-major C^T = B^T A^T);
* 3m (``method="3m"``): ``split`` and ``combine`` ops are elementwise kernels; the three
  real GEMMs of a tile read planes of the real band stacks through leading dimensions
  (a ``batch=3`` op: one strided-batched cuBLAS call, the planes' spacing its strides);
* the call synchronises the devices it uses on entry and exit, so buffers can be reused.

Importing this module needs CuPy; :mod:`mgemm.executors` skips it otherwise.
"""
from __future__ import annotations

import numpy as np
import cupy

try:
    from cupy_backends.cuda.libs import cublas
except ImportError:  # older layouts
    from cupy.cuda import cublas  # type: ignore

from ..arrays import mark_side_work
from .registry import register
from .common import ScheduleExecutor, resolve_alpha, resolve_beta, resolve_tile, roles

_MEMCPY_DEFAULT = 4
_GEMM = {np.dtype(np.float32): "sgemm", np.dtype(np.float64): "dgemm",
         np.dtype(np.complex64): "cgemm", np.dtype(np.complex128): "zgemm"}

_axpby = cupy.ElementwiseKernel("T x, T beta", "T y", "y = beta * y + x", "mgemm_axpby")
# 3m: a complex band -> its real planes Re, Im, Re + Im
_split = cupy.ElementwiseKernel("Z z", "R re, R im, R s",
                                "re = z.real(); im = z.imag(); s = re + im;", "mgemm_split3m")
# 3m: C = alpha (T1 - T2 + i (T3 - T1 - T2)) + beta C  (C not read when beta = 0)
combine3m = cupy.ElementwiseKernel(
    "R t1, R t2, R t3, Z alpha, Z beta", "Z y",
    "Z v = alpha * Z(t1 - t2, t3 - t1 - t2); y = (beta == Z(0)) ? v : v + beta * y;",
    "mgemm_combine3m")


class GpuMemoryError(MemoryError):
    pass


_peer_done = set()


def enable_peer_access(devices):
    """Enable peer access between every pair that supports it (once per pair)."""
    rt = cupy.cuda.runtime
    for i in devices:
        for j in devices:
            if i == j or (i, j) in _peer_done:
                continue
            if rt.deviceCanAccessPeer(i, j):
                with cupy.cuda.Device(i):
                    try:
                        rt.deviceEnablePeerAccess(j)
                    except cupy.cuda.runtime.CUDARuntimeError as e:
                        if "AlreadyEnabled" not in str(e) and "704" not in str(e):
                            raise
            _peer_done.add((i, j))


_NAMES = {}


def gpu_name(dev):
    """The model name of GPU ``dev`` (cached), e.g. "NVIDIA H200"."""
    if dev not in _NAMES:
        _NAMES[dev] = cupy.cuda.runtime.getDeviceProperties(dev)["name"].decode()
    return _NAMES[dev]


def _ptr(arr, r0, c0):
    return arr.data.ptr + (r0 * arr.shape[1] + c0) * arr.itemsize


@register("cupy")
class CupyExecutor(ScheduleExecutor):
    name = "cupy"

    #: "src" (default): a band copy runs on a per-destination stream of the *sending*
    #: GPU (push); "dst": on the receiving GPU's copy_in/copy_out stream (pull).  Same
    #: schedule and dependencies.  Measured on 4 H200, N = 32768 complex128: pull 0.38 of
    #: 4x the single-GPU rate, push 0.93-0.955 (benchmarks/README.md), although a lone
    #: pull copy runs at the full 394 GB/s (mgemm probe).
    copy_side = "src"
    #: 3m's tile on one GPU holding A, B and C (``tile="auto"``)
    single_3m_tile = 8192

    def __init__(self):
        self._streams = {}
        self._buffers = {}
        self.last_trace = None

    # ------------------------------------------------------------------ helpers
    def _stream(self, dev, name):
        key = (dev, name)
        if key not in self._streams:
            with cupy.cuda.Device(dev):
                self._streams[key] = cupy.cuda.Stream(non_blocking=True)
        mark_side_work(dev)          # (tdse's loop switches contexts before its steps)
        return self._streams[key]

    @staticmethod
    def _key(name, dev, shape, dtype):
        return (name, dev, tuple(shape), np.dtype(dtype).str)

    def _check_memory(self, sched, dtype):
        need, fixed = {}, {}
        itemsize = np.dtype(dtype).itemsize
        for (name, dev), shape in sched.buffers.items():
            if name in ("A", "B", "C") or self._key(name, dev, shape, self._dtype(sched, name, dtype)) in self._buffers:
                continue
            b = shape[0] * shape[1] * sched.itemsize(name, itemsize)
            need[dev] = need.get(dev, 0) + b
            if name in ("A3", "B3"):  # 3m's real stacks do not shrink with the tile
                fixed[dev] = fixed.get(dev, 0) + b
        for dev, b in need.items():
            with cupy.cuda.Device(dev):
                free = cupy.cuda.runtime.memGetInfo()[0] + cupy.get_default_memory_pool().free_bytes()
            if b > free:
                f = fixed.get(dev, 0)
                if f > free * 0.9:
                    raise GpuMemoryError(
                        f"mgemm: 3m needs {f / 2**30:.2f} GiB on GPU {dev} for the real copies of "
                        f"its operands (1.5x their size), only {free / 2**30:.2f} GiB free; use "
                        f"complex_method='native' or put A and B on different GPUs")
                per_t = (b - f) / sched.tile
                fit = int((free * 0.9 - f) / per_t) if per_t else 0
                raise GpuMemoryError(
                    f"mgemm: tile {sched.tile} needs {b / 2**30:.2f} GiB of buffers on GPU {dev}, "
                    f"only {free / 2**30:.2f} GiB free; a tile <= {max(fit, 0)} would fit")

    @staticmethod
    def _dtype(sched, name, dtype):
        dt = np.dtype(dtype)
        return np.empty(0, dt).real.dtype if name in sched.real_buffers else dt

    def _buffer(self, name, dev, shape, dtype):
        key = self._key(name, dev, shape, dtype)
        buf = self._buffers.get(key)
        if buf is None:
            with cupy.cuda.Device(dev):
                buf = cupy.empty(shape, dtype=dtype)
            self._buffers[key] = buf
        return buf

    def release(self):
        """Free the cached band buffers."""
        self._buffers.clear()

    def choose_method(self, A, B, C, devices, placement=None):
        """complex_method="auto": "3m" where measured faster on this GPU model for this
        case (mgemm.profile.choose_method), else "native"."""
        from ..profile import choose_method, load_profile
        devices = [A.device.id] if devices is None else list(devices)
        c_dev = C.device.id if C is not None else A.device.id
        one = A.device.id == B.device.id == c_dev
        try:
            prof = load_profile()
        except (OSError, ValueError):
            prof = None
        return choose_method(gpu_name(A.device.id), A.dtype, len(devices),
                             max(A.shape[0], B.shape[1]), "one" if one else "three", prof)

    # ------------------------------------------------------------------ main
    def gemm(self, A, B, C, alpha, beta, *, devices=None, tile=None, placement=None,
             trace=False, method="native", shares=None, **_):
        if method == "3m" and np.dtype(A.dtype).kind != "c":
            raise ValueError(f"method='3m' needs complex operands, got A.dtype={A.dtype}")
        a_dev, b_dev = A.device.id, B.device.id
        if C is not None and not C.flags.c_contiguous:
            raise ValueError("C must be C-contiguous (it is updated in place)")
        if devices is None:
            devices = [a_dev]
        if isinstance(devices, int):
            raise ValueError(f"devices for the cupy executor is a list of GPU ids, got devices={devices!r}")
        devices = [int(d) for d in devices]
        m, k = A.shape
        n = B.shape[1]
        c_dev = C.device.id if C is not None else (roles(placement, devices)[2] if placement
                                                   else a_dev)
        if C is None:
            with cupy.cuda.Device(c_dev):
                C = cupy.empty((m, n), dtype=A.dtype)
        beta_zero = beta == 0
        A = A if A.flags.c_contiguous else _contig(A)
        B = B if B.flags.c_contiguous else _contig(B)
        g = len(devices)
        if g == 1 and a_dev == b_dev == c_dev == devices[0] and tile in (None, "auto"):
            # one device holding everything: a single cuBLAS call (3m: tiles of at most
            # 8192, so its three real tile results stay small next to A, B, C)
            T = max(m, n) if method == "native" else min(max(m, n), self.single_3m_tile)
        else:
            T = resolve_tile(tile, m, n, g, A.dtype, method,
                             "one" if a_dev == b_dev == c_dev else "three", gpu_name(a_dev))
        sched = self.plan(m, k, n, workers=devices, a_dev=a_dev, b_dev=b_dev, c_dev=c_dev,
                          tile=T, beta_zero=beta_zero, method=method, shares=shares)
        involved = sorted(set(devices) | {a_dev, b_dev, c_dev})
        enable_peer_access(involved)
        # keep only the band buffers this schedule uses (a sweep over tiles would
        # otherwise pile up one set per tile shape)
        needed = {self._key(name, dev, shape, self._dtype(sched, name, A.dtype))
                  for (name, dev), shape in sched.buffers.items() if name not in ("A", "B", "C")}
        self._buffers = {k: v for k, v in self._buffers.items() if k in needed}
        self._check_memory(sched, A.dtype)
        arrays = {}
        for (name, dev), shape in sched.buffers.items():
            if name == "A":
                arrays[(name, dev)] = A
            elif name == "B":
                arrays[(name, dev)] = B
            elif name == "C":
                arrays[(name, dev)] = C
            else:
                arrays[(name, dev)] = self._buffer(name, dev, shape,
                                                   self._dtype(sched, name, A.dtype))
        for d in involved:  # the inputs may still be in flight on the users' streams
            cupy.cuda.Device(d).synchronize()
        self._issue(sched, arrays, alpha, beta, A.dtype, trace, involved)
        for d in involved:
            cupy.cuda.Device(d).synchronize()
        if trace:
            self._collect_trace()
        return C

    def _issue(self, sched, arrays, alpha, beta, dtype, trace, involved):
        dt = np.dtype(dtype)
        keep = {}  # host scalars, one per (value, dtype); they must outlive the calls

        def scalar(value, gdt):
            key = (value, gdt.str)
            if key not in keep:
                keep[key] = np.array(value, dtype=gdt)
            return keep[key]
        events = {}
        self._trace_events = [] if trace else None
        if trace:
            self._t0 = {}
            for d in involved:
                with cupy.cuda.Device(d):
                    e = cupy.cuda.Event()
                    e.record(cupy.cuda.get_current_stream())
                    self._t0[d] = e
        handles = {}
        q_of = {}
        for op in sched.ops:
            qdev, qname = op.dev, op.stream
            if op.kind == "copy" and self.copy_side == "src" and op.reads[0][0].dev != op.dev:
                qdev, qname = op.reads[0][0].dev, f"push{op.writes[0].dev}"
            q_of[op.id] = (qdev, qname)
            with cupy.cuda.Device(qdev):
                st = self._stream(qdev, qname)
                for dep in op.deps + op.after:
                    if q_of[dep] != q_of[op.id]:
                        st.wait_event(events[dep])
                if trace:
                    e0 = cupy.cuda.Event()
                    e0.record(st)
                if op.kind == "copy":
                    src = op.reads[0][0]
                    r0 = min(r.r0 for r, _ in op.reads)
                    r1 = max(r.r1 for r, _ in op.reads)
                    c0 = min(r.c0 for r, _ in op.reads)
                    c1 = max(r.c1 for r, _ in op.reads)
                    dst = op.writes[0]
                    s_arr, d_arr = arrays[(src.buf, src.dev)], arrays[(dst.buf, dst.dev)]
                    width, isz = c1 - c0, s_arr.itemsize
                    cupy.cuda.runtime.memcpy2DAsync(
                        _ptr(d_arr, dst.r0, dst.c0), d_arr.shape[1] * isz,
                        _ptr(s_arr, r0, c0), s_arr.shape[1] * isz,
                        width * isz, r1 - r0, _MEMCPY_DEFAULT, st.ptr)
                elif op.kind == "gemm":
                    (ar, _), (br, _) = op.reads[0], op.reads[1]
                    out = op.writes[0]
                    a_arr, b_arr = arrays[(ar.buf, ar.dev)], arrays[(br.buf, br.dev)]
                    c_arr = arrays[(out.buf, out.dev)]
                    h = handles.get(op.dev)
                    if h is None:
                        h = cupy.cuda.device.get_cublas_handle()
                        cublas.setPointerMode(h, 0)  # host scalars
                        handles[op.dev] = h
                    gdt = c_arr.dtype
                    a_h = scalar(resolve_alpha(op.alpha, alpha), gdt)
                    b_h = scalar(resolve_beta(op.beta, beta), gdt)
                    rows, cols = out.shape
                    # CuPy's cuBLAS wrappers bind the handle to CuPy's *current* stream
                    # on every call, so the stream must be made current (a setStream
                    # beforehand is overridden -- the GEMMs then raced the copies)
                    if op.batch == 1:
                        fn = getattr(cublas, _GEMM[gdt])
                        with st:
                            fn(h, 0, 0, cols, rows, ar.c1 - ar.c0,
                               a_h.ctypes.data, _ptr(b_arr, br.r0, br.c0), b_arr.shape[1],
                               _ptr(a_arr, ar.r0, ar.c0), a_arr.shape[1],
                               b_h.ctypes.data, _ptr(c_arr, out.r0, out.c0), c_arr.shape[1])
                    else:   # planes equally spaced in their buffers: one strided call
                        sa = _stride([_ptr(a_arr, r.r0, r.c0) for r, _ in op.reads[0::2]],
                                     a_arr.itemsize, op)
                        sb = _stride([_ptr(b_arr, r.r0, r.c0) for r, _ in op.reads[1::2]],
                                     b_arr.itemsize, op)
                        sc = _stride([_ptr(c_arr, r.r0, r.c0) for r in op.writes],
                                     c_arr.itemsize, op)
                        with st:
                            strided_gemm(h, gdt, rows, cols, ar.c1 - ar.c0, a_h.ctypes.data,
                                         _ptr(a_arr, ar.r0, ar.c0), a_arr.shape[1], sa,
                                         _ptr(b_arr, br.r0, br.c0), b_arr.shape[1], sb,
                                         b_h.ctypes.data, _ptr(c_arr, out.r0, out.c0),
                                         c_arr.shape[1], sc, op.batch)
                elif op.kind == "axpby":
                    (rr, _), (cr, _) = op.reads[0], op.reads[1]
                    r_arr, c_arr = arrays[(rr.buf, rr.dev)], arrays[(cr.buf, cr.dev)]
                    with st:
                        _axpby(r_arr[rr.r0:rr.r1, rr.c0:rr.c1], dt.type(beta),
                               c_arr[cr.r0:cr.r1, cr.c0:cr.c1])
                elif op.kind == "split":
                    (zr, _), = op.reads
                    out = op.writes[0]
                    z = arrays[(zr.buf, zr.dev)][zr.r0:zr.r1, zr.c0:zr.c1]
                    o = arrays[(out.buf, out.dev)][out.r0:out.r1, out.c0:out.c1]
                    step = (zr.c1 - zr.c0) if op.axis == 1 else (zr.r1 - zr.r0)
                    planes = [o[:, p * step:(p + 1) * step] if op.axis == 1 else
                              o[p * step:(p + 1) * step] for p in range(3)]
                    with st:
                        _split(z, *planes)
                elif op.kind == "combine":
                    ts = [arrays[(r.buf, r.dev)][r.r0:r.r1, r.c0:r.c1] for r, _ in op.reads[:3]]
                    out = op.writes[0]
                    y = arrays[(out.buf, out.dev)][out.r0:out.r1, out.c0:out.c1]
                    with st:
                        combine3m(*ts, dt.type(resolve_alpha(op.alpha, alpha)),
                                 dt.type(resolve_beta(op.beta, beta)), y)
                ev = cupy.cuda.Event(disable_timing=not trace)
                ev.record(st)
                events[op.id] = ev
                if trace:
                    self._trace_events.append((op, qdev, qname, e0, ev))
        self._keep = keep

    def _collect_trace(self):
        rows = []
        for op, qdev, qname, e0, e1 in self._trace_events:
            t0 = self._t0[qdev]
            rows.append({"dev": qdev, "stream": qname, "kind": op.kind, "label": op.label,
                         "start_ms": cupy.cuda.get_elapsed_time(t0, e0),
                         "end_ms": cupy.cuda.get_elapsed_time(t0, e1)})
        self.last_trace = rows


def gemm_rowmajor(h, dtype, rows, cols, k, alpha_ptr, a, lda, beta_ptr, b, ldb, c, ldc):
    """Row-major C = alpha A B + beta C (rows x cols, inner k) in one cuBLAS ``?gemm`` on
    CuPy's current stream (column-major C^T = B^T A^T): device pointers, leading dimensions
    in elements (row strides), host scalar pointers (the handle in host pointer mode)."""
    fn = getattr(cublas, _GEMM[np.dtype(dtype)])
    fn(h, 0, 0, cols, rows, k, alpha_ptr, b, ldb, a, lda, beta_ptr, c, ldc)


def strided_gemm(h, dtype, rows, cols, k, alpha_ptr, a, lda, sa, b, ldb, sb, beta_ptr, c, ldc,
                 sc, batch):
    """Row-major C_p = alpha A_p B_p + beta C_p for p < ``batch`` in one cuBLAS
    ``?gemmStridedBatched`` call on CuPy's current stream (as column-major
    C^T = B^T A^T): device pointers, leading dimensions and element strides between the
    planes; host scalar pointers (the handle in host pointer mode)."""
    fn = getattr(cublas, _GEMM[np.dtype(dtype)] + "StridedBatched")
    fn(h, 0, 0, cols, rows, k, alpha_ptr, b, ldb, sb, a, lda, sa, beta_ptr, c, ldc, sc, batch)


def _stride(ptrs, itemsize, op):
    """The element stride between equally spaced planes (a batched GEMM's operands)."""
    d = {q - p for p, q in zip(ptrs, ptrs[1:])}
    if len(d) != 1 or next(iter(d)) % itemsize:
        raise ValueError(f"{op}: its planes are not equally spaced")
    return next(iter(d)) // itemsize


def _contig(x):
    with cupy.cuda.Device(x.device.id):
        return cupy.ascontiguousarray(x)
