"""Array-module helpers: one code path for NumPy and CuPy (CuPy is optional).

Every algorithm in mgemm is written once against ``xp = get_xp(x)``; nothing here
imports CuPy unless it is installed, so the CPU paths run without it.
"""
from __future__ import annotations

import numpy as np

try:  # CuPy is the optional ``gpu`` extra
    import cupy as _cupy  # type: ignore
except Exception:  # ImportError, or a CUDA library that fails to load
    _cupy = None


def cupy_or_none():
    """The cupy module, or None where it is not installed/usable."""
    return _cupy


def gpu_count() -> int:
    """Number of CUDA devices CuPy can see (0 without CuPy or GPUs)."""
    if _cupy is None:
        return 0
    try:
        return int(_cupy.cuda.runtime.getDeviceCount())
    except Exception:
        return 0


def cpu_count() -> int:
    """CPUs this process may run on (its affinity where the OS says, else the machine's)."""
    import os
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover
        return os.cpu_count() or 1


def get_xp(x):
    """The array module (numpy or cupy) that owns ``x`` (a host array at once, without
    CuPy's dispatch: part of a host tapped row's 2.05 us before 2636a51,
    benchmarks/results/host_costs_cpu2_20261130T1015.txt)."""
    if _cupy is None or isinstance(x, np.ndarray):
        return np
    return _cupy.get_array_module(x)


def is_device_array(x) -> bool:
    return _cupy is not None and isinstance(x, _cupy.ndarray)


def device_of(x):
    """CUDA device id of a CuPy array, None for host arrays."""
    return int(x.device.id) if is_device_array(x) else None


def to_host(x):
    return x.get() if is_device_array(x) else np.asarray(x)


#: the GPUs on which this process issued work on a second stream (mgemm's band engine:
#: :func:`mark_side_work`) since their last :func:`context_switch`
_SIDE_WORK = set()


def mark_side_work(device) -> None:
    """Note that this process issued work on a second stream of GPU ``device`` (what leaves
    its later small kernels scheduled slower: :func:`context_switch`)."""
    _SIDE_WORK.add(int(device))


def side_work(device) -> bool:
    """Whether :func:`mark_side_work` noted GPU ``device`` since its last switch."""
    return int(device) in _SIDE_WORK


def context_switch(cp, device) -> bool:
    """A memset in a short-lived second CUDA context on GPU ``device`` (then this thread's
    context restored): the GPU switches contexts, which leaves the process's later work
    scheduled as before its first substantial work on a second stream.  Measured on an
    H100 (CUDA 13, CuPy 14.2; ``benchmarks/archive/stream_side.py``,
    ``stream_side_h100x1_20261126T1905.txt``): after 14 DGEMMs on a non-blocking stream
    (as mgemm's band engine issues them, e.g. in ``method = "auto"``'s calibration), or a
    CUDA graph launched on a second stream, a graph of 74 small kernels (a 3-point
    Chebyshev step at N = 8192) replays in 131.7 against 118.5 us, for the process's life,
    whatever stream it runs on and with CUDA_DEVICE_MAX_CONNECTIONS=1 too; a tiny kernel
    on another stream does not do it; another process's GPU work, or this, undoes it
    (130.1 against 143.5 us a step).  The mechanism is the driver's and not documented:
    this is what was measured.  Takes 150-220 ms and a context's memory for that time;
    False where the context cannot be made (no memory: nothing is changed)."""
    drv, rt = cp.cuda.driver, cp.cuda.runtime
    try:
        current = drv.ctxGetCurrent()
        ctx = drv.ctxCreate(int(device))
    except Exception:            # CUDADriverError (out of memory...): nothing changed
        return False
    try:
        p = rt.malloc(1 << 16)
        try:
            rt.memset(p, 0, 1 << 16)
            rt.deviceSynchronize()
        finally:
            rt.free(p)
        _SIDE_WORK.discard(int(device))
        return True
    except Exception:
        return False
    finally:
        drv.ctxSetCurrent(current)
        drv.ctxDestroy(ctx)


def unit_roundoff(dtype) -> float:
    """u = eps/2 of the real type underlying ``dtype``."""
    return float(np.finfo(np.dtype(dtype)).eps) / 2.0


class PinnedUpload:
    """Host vectors to one device buffer through a ring of pinned host buffers: the copy is
    asynchronous (no wait for the stream to drain, as a copy from pageable memory may), and
    a slot is written again only after its last copy ran (an event per slot).  Calls on one
    stream see their own values: copy k+1 is queued after the kernels that read copy k.

    ``lead_seconds``: how far (in the device's time) the calls may run ahead of the device
    -- a call waits for the copy ``lead`` calls back, ``lead`` re-estimated every
    :attr:`ADAPT` calls from the device's own time between two copies' events, between
    ``min_lead`` and ``ring - ADAPT`` calls.  A loop that uploads once a step so keeps a
    lead of about that many seconds over the device whatever a step costs, where a fixed
    ring of R slots is R steps (64 steps of 0.13 ms are 8 ms: less than a file write's
    burst on the host).  Without it, the lead is the ring."""

    RING = 4
    ADAPT = 64

    def __init__(self, cp, ring=None, lead_seconds=None, min_lead=None):
        self.cp, self.size, self.slot = cp, 0, 0
        self.ring = ring or self.RING
        self.host, self.events, self.recorded, self.dev = [], [], [], None
        self._dtype, self._last = None, 0
        self.lead_seconds = lead_seconds
        if lead_seconds is not None and self.ring <= self.ADAPT:
            raise ValueError(f"a ring of {self.ring} slots cannot adapt its lead (more than {self.ADAPT})")
        self.min_lead = min(self.ring - self.ADAPT, min_lead or self.ADAPT)
        self.lead = self.min_lead if lead_seconds is not None else self.ring
        self.count = 0                   # calls since the ring was made
        self.step_seconds = None         # the device's seconds between two calls (last estimate)

    def __call__(self, values):
        """``values`` on the device: a view of the first ``values.size`` of :attr:`dev`."""
        self.put(values)
        return self.dev[:self._last]

    def put(self, values):
        """``values`` copied into the start of :attr:`dev` (queued on the current stream),
        without making a view of it (a CuPy slice costs ~5 us of host time).  ``values``
        may be a list of arrays of one dtype: uploaded as one, each copied once into the
        pinned buffer (no stacked copy on the host first)."""
        import cupyx
        cp = self.cp
        parts = values if isinstance(values, (list, tuple)) else None
        if parts is None:
            values = np.ascontiguousarray(values)
        dtype = values.dtype if parts is None else np.result_type(*parts)
        size = values.size if parts is None else sum(int(np.size(a)) for a in parts)
        if size > self.size or dtype != self._dtype:
            cp.cuda.get_current_stream().synchronize()     # no copy in flight reads the old ring
            self._remake(max(size, 2 * self.size), dtype)
        k = self.slot
        rt = cp.cuda.runtime
        if self.lead_seconds is None:
            if self.recorded[k]:
                rt.eventSynchronize(self.events[k].ptr)
        else:
            self._wait_lead(rt)
        if self.host[k] is None:
            # the slots from k on pinned as one buffer, as many as come before k (1, 1, 2,
            # 4, 8, ... slots: a ring used whole pins log2(ring) + 1 buffers, not one a
            # slot -- an adaptive GPU run makes a ring for each step count it takes: the
            # laser's at 1e-8 pinned 169 buffers, 23 ms of its 0.45 s on one H200,
            # adapt_prof_h200x1_20261202T0511.txt; one used in part pins at most twice the
            # slots it uses)
            m = min(self.ring - k, max(1, k))
            block = cupyx.empty_pinned(m * self.size, dtype=self._dtype)
            for i in range(m):
                self.host[k + i] = block[i * self.size:(i + 1) * self.size]
        if parts is None:
            self.host[k][:size] = values
        else:
            at = 0
            for a in parts:
                n = int(np.size(a))
                self.host[k][at:at + n].reshape(np.shape(a))[...] = a
                at += n
        nbytes = size * self._dtype.itemsize
        stream = cp.cuda.get_current_stream().ptr
        # the copy and the slot's event by the runtime's calls; with no view made, a call
        # took 11 us of an H100 host's time against 15-16 us (a run uploads once a step;
        # benchmarks/results/host_calls_gpu_h100x1_20261126T1353.txt)
        rt.memcpyAsync(self.dev.data.ptr, self.host[k].ctypes.data, nbytes,
                       rt.memcpyHostToDevice, stream)
        rt.eventRecord(self.events[k].ptr, stream)   # one event a slot, recorded again each use
        self.recorded[k] = True
        self.slot = (k + 1) % self.ring
        self._last = size
        self.count += 1

    def reserve(self, size, dtype):
        """The ring made now for uploads of up to ``size`` values of ``dtype``, each slot's
        pinned buffer with it: before a loop, where a ring that grows at a call waits for
        the stream to drain and pins its new buffers in the loop (an H200 host: ~4 ms a
        2.6 MB buffer, a GPU run's H(t) states; ``device_timeline_h200x1_20261202T0959.txt``)."""
        if self.count:
            raise RuntimeError("reserve before the first upload")
        self._remake(int(size), np.dtype(dtype))
        import cupyx
        self.host = [cupyx.empty_pinned(self.size, dtype=self._dtype) for _ in range(self.ring)]

    def _remake(self, size, dtype):
        """A ring of ``size`` values of ``dtype``, nothing in flight on the old one."""
        cp = self.cp
        self.size, self._dtype = size, dtype
        # (each slot's pinned buffer made at its first use: a ring of 64 made at once
        # took ~0.3 ms a buffer, and an adaptive run makes a ring for each step size it
        # takes -- 281 buffers, 0.08 s of the laser's 0.6 s at 1e-8 on one H200)
        self.host = [None] * self.ring
        self.events = [cp.cuda.Event() for _ in range(self.ring)]
        self.recorded = [False] * self.ring
        self.dev = cp.empty(self.size, dtype=dtype)
        # calls counted from the remake, from slot 0: _wait_lead finds call c's event in
        # slot c % ring (a remake that kept the old slot read unrecorded events' times:
        # cudaErrorInvalidResourceHandle, #58 item 0)
        self.count, self.slot = 0, 0

    def _wait_lead(self, rt):
        """Wait for the copy :attr:`lead` calls back (it and every one before it have run:
        this slot's last copy, ``ring`` calls back, among them); every ADAPT calls, the
        lead from the device's seconds between that copy and the one ADAPT calls before it
        (both done; neither slot written since, as lead + ADAPT <= ring)."""
        back = self.count - self.lead
        if back < 0:
            return
        rt.eventSynchronize(self.events[back % self.ring].ptr)
        if back >= self.ADAPT and back % self.ADAPT == 0:
            ms = rt.eventElapsedTime(self.events[(back - self.ADAPT) % self.ring].ptr,
                                     self.events[back % self.ring].ptr)
            self.step_seconds = max(ms * 1e-3 / self.ADAPT, 1e-7)
            self.lead = int(min(self.ring - self.ADAPT,
                                max(self.min_lead, self.lead_seconds / self.step_seconds)))


class HostCopy:
    """Arrays copied to the host without waiting for the device: each device array goes to
    pinned host memory by an asynchronous copy queued on the current stream, and
    :meth:`result` waits for an event recorded after the copies -- not for the work queued
    after them (a ``.get()`` waits for the whole stream).  Host arrays pass through."""

    def __init__(self, arrays: dict):
        self.host, self._sources, self.event = {}, [], None
        for name, a in arrays.items():
            if not is_device_array(a):
                self.host[name] = np.asarray(a)
                continue
            import cupy as cp
            import cupyx
            a = cp.ascontiguousarray(a)
            h = cupyx.empty_pinned(a.shape, dtype=a.dtype)
            if a.nbytes:
                a.data.copy_to_host_async(h.ctypes.data, a.nbytes)
            self.host[name] = h
            self._sources.append(a)          # alive until the copy has run
        if self._sources:
            import cupy as cp
            self.event = cp.cuda.Event()
            self.event.record()

    def done(self) -> bool:
        """Whether the copies have run (no wait)."""
        return self.event is None or self.event.done

    def result(self) -> dict:
        """The host arrays (waits for the copies only)."""
        if self.event is not None:
            self.event.synchronize()
            self._sources = []
        return self.host

