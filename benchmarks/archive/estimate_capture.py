"""#56: where the local error's block-graph capture goes on a small GPU run (the laser drive
of the time-error suite, as estimate_setup.py draws it), and whether the capture's device
synchronisations can be stream events instead: "none" / "estimate" runs alternating, the
graphs.capture as it is ("sync") and with events ("events"), 5 rounds in one process; then
one estimating run with each capture's phases timed.

    python benchmarks/archive/estimate_capture.py
"""
import contextlib
import time

import numpy as np
import cupy as cp

import tdse
from benchmarks import drives
from tdse.numerics import graphs

rng = np.random.default_rng(56)
drives.make("abrupt", rng)
drives.make("ramped", rng)
laser = drives.make("laser", rng)
real = graphs.capture
phases = []


def capture_events(cp, body, pool=None, timed=False):
    """graphs.capture with stream events in place of its three synchronisations."""
    from cupy_backends.cuda.libs import cublas
    t = [time.perf_counter()]
    main = cp.cuda.get_current_stream()
    s = cp.cuda.Stream(non_blocking=True)
    s.wait_event(main.record())
    h = cp.cuda.device.get_cublas_handle()
    alloc = cp.cuda.using_allocator(pool.malloc) if pool is not None else contextlib.nullcontext()
    try:
        with alloc, s:
            cublas.setStream(h, s.ptr)
            if pool is not None:
                body()
                if timed:
                    t.append(time.perf_counter()); s.synchronize()
                t.append(time.perf_counter())
            s.begin_capture()
            try:
                body()
            finally:
                graph = s.end_capture()
            t.append(time.perf_counter())
    finally:
        cublas.setStream(h, main.ptr)
    main.wait_event(s.record())
    if timed:
        phases.append(np.diff(t) * 1e3)
    return graph


def run(te):
    r = tdse.simulate(laser.with_value("propagator.time_error", te), backend="cupy")
    return r.seconds


print("round none sync events (s)")
for k in range(5):
    a = run("none")
    graphs.capture = real
    b = run("estimate")
    graphs.capture = capture_events
    c = run("estimate")
    graphs.capture = real
    print(k, f"{a:.4f} {b:.4f} {c:.4f}", flush=True)

graphs.capture = lambda *a, **k: capture_events(*a, **k, timed=True)
for k in range(2):
    phases.clear()
    s = run("estimate")
    print(f"timed run {s:.4f} s; captures (eager launch, eager on device, capture+instantiate) ms:",
          [" ".join(f"{v:.2f}" for v in p) for p in phases], flush=True)
graphs.capture = real
