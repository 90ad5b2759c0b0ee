"""A CUDA graph captured from a body of launches, and the device copies around a graph's
buffers (:mod:`tdse.numerics.graphs`, re-exported there).  CuPy is the ``cp`` a caller
passes; ``copy_in`` takes NumPy too."""
from __future__ import annotations

import contextlib

import numpy as np

__all__ = ["capture", "copy_in", "copy_out"]


def capture(cp, body, pool=None):
    """A CUDA graph of ``body()`` captured on a new stream with cuBLAS on it; with ``pool`` (kept
    for the graph's life) ``body`` runs once eagerly first: the captured allocations reuse its
    blocks.  Ordered by events, not synchronisations (the device idle for a capture's host time:
    the laser's run 0.075-0.080 -> 0.069 s on one H200, ``laser_cost_ab_h200x1_20261130T1531.txt``)."""
    from cupy_backends.cuda.libs import cublas
    main = cp.cuda.get_current_stream()
    s = cp.cuda.Stream(non_blocking=True)
    s.wait_event(main.record())
    h = cp.cuda.device.get_cublas_handle()
    alloc = cp.cuda.using_allocator(pool.malloc) if pool is not None else contextlib.nullcontext()
    try:
        with alloc, s:
            cublas.setStream(h, s.ptr)
            if pool is not None:
                body()      # (its blocks' reuse by the graph's launches: after it, main's wait)
            s.begin_capture()
            try:
                body()
            finally:
                graph = s.end_capture()
    finally:
        cublas.setStream(h, main.ptr)
    main.wait_event(s.record())
    return graph


def copy_in(cp, dst, src):
    """dst := src where they live, ``cp`` their array module (a vector may fill an N x 1
    buffer): on a GPU one memcpy queued on the stream where both are C-contiguous of one
    dtype and size (no kernel)."""
    if cp is not np and src.flags.c_contiguous and src.dtype == dst.dtype \
            and src.size == dst.size and dst.flags.c_contiguous:
        dst.data.copy_from_device_async(src.data, src.nbytes)
    else:
        cp.copyto(dst, src.reshape(dst.shape))


def copy_out(cp, src, shape=None):
    """A new array holding ``src`` (one memcpy), of ``shape`` (default src's), that the
    caller keeps past the next step."""
    out = cp.ndarray(src.shape if shape is None else shape, dtype=src.dtype)
    out.data.copy_from_device_async(src.data, out.nbytes)
    return out
