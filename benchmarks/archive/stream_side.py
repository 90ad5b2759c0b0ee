"""What undoes the slower GPU step after DGEMMs on a non-blocking stream (calib_side.py's
``expm:streams1``: 14 DGEMMs with a max-abs each on one non-blocking stream leave a 3-point
graph step of N = 8192 at 143 against 129.6 us on an H100, on the legacy stream; the same
on the legacy stream does not).  One process: an explicit Chebyshev plan's stepper (made
first), its device step by events (lead_depth.timeline) on the legacy stream and on a
non-blocking stream, before and after the DGEMMs, after the DGEMMs' stream is destroyed,
after 20 s, and after a burst of DGEMMs on the legacy stream.

    PYTHONPATH=. python -m benchmarks.archive.stream_side [INPUT N STENCIL]
"""
import gc
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.dirname(os.path.dirname(HERE))]

import lead_depth  # noqa: E402
from run_profile import case_config  # noqa: E402

if __name__ == "__main__":
    import cupy as cp
    import numpy as np
    import tdse
    args = sys.argv[1:4] or ["inputs/h2plus_moving_large.toml", "8192", "3"]
    cfg = case_config(*args, 3010, 0, "chebyshev")
    plan = tdse.prepare(cfg, backend="cupy", check_resolution=False)
    stp = plan.stepper()
    rng = np.random.default_rng(1)
    M0 = cp.asarray(rng.standard_normal((2048, 2048)) * 0.01)

    def step_us(stream=None):
        psi = cp.asarray(plan.psi0)
        ctx = stream if stream is not None else cp.cuda.Stream.null
        with ctx:
            for j in range(4):
                psi = stp.step(psi, j)
            ctx.synchronize()
            _, dev, _ = lead_depth.timeline(stp, psi, 4, 3000)
        return float(np.median(np.diff(dev))) * 1e6

    own = cp.cuda.Stream(non_blocking=True)

    def show(label):
        print(f"  {label:44s} legacy {step_us():6.1f} us   non-blocking {step_us(own):6.1f} us", flush=True)

    def dgemms(stream, k=14):
        M = M0.copy()
        with stream:
            for _ in range(k):
                M = M @ M
                M /= cp.abs(M).max()
        stream.synchronize()

    print(f"# {args}, {cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}, "
          f"CUDA_DEVICE_MAX_CONNECTIONS={os.environ.get('CUDA_DEVICE_MAX_CONNECTIONS')}, "
          f"mode {os.environ.get('SIDE_MODE', 'all')}")
    if os.environ.get("SIDE_MODE") == "tiny":       # the least use of a second stream
        print(f"  legacy only                                  {step_us():6.1f} us")
        t = cp.cuda.Stream(non_blocking=True)
        with t:
            cp.ones(1) + 1
        t.synchronize()
        del t
        gc.collect()
        print(f"  after one tiny kernel on a stream, destroyed {step_us():6.1f} us")
        t = cp.cuda.Stream(non_blocking=True)
        with t:
            cp.ones(1) + 1
        t.synchronize()
        print(f"  after one tiny kernel on a kept stream       {step_us():6.1f} us")
        print(f"  the graph on that stream                     {step_us(t):6.1f} us")
        print(f"  legacy after                                 {step_us():6.1f} us")
        sys.exit(0)
    if os.environ.get("SIDE_MODE") == "parts":      # which part of a step slows
        step_us()
        gs = stp.propagator.graph
        graph = next(iter(gs.graphs.values()))
        src = cp.asarray(plan.psi0).astype(complex)
        dst = cp.empty_like(src)
        import cupyx
        host = cupyx.empty_pinned(600)
        host[:] = 1.0
        devrow = cp.empty(600)

        def per(f, R=2000):
            a, b = cp.cuda.Event(), cp.cuda.Event()
            f()
            a.record()
            for _ in range(R):
                f()
            b.record()
            b.synchronize()
            return cp.cuda.get_elapsed_time(a, b) * 1e3 / R
        parts = {
            "graph launch alone": lambda: graph.launch(),
            "D2D memcpy 128 KB": lambda: dst.data.copy_from_device_async(src.data, src.nbytes),
            "H2D memcpy 4.8 KB pinned": lambda: devrow.data.copy_from_host_async(host.ctypes.data, host.nbytes),
            "copy kernel 128 KB (cp.copyto)": lambda: cp.copyto(dst, src),
            "whole step (timeline)": None,
        }
        for when in ("fast", "slow"):
            if when == "slow":
                dgemms(cp.cuda.Stream(non_blocking=True))
            for k, f in parts.items():
                us = step_us() if f is None else per(f)
                print(f"  {when:5s} {k:32s} {us:7.2f} us", flush=True)
        sys.exit(0)
    if os.environ.get("SIDE_MODE") == "trigger":    # what enters the slow mode, what leaves it
        import subprocess
        print(f"  fast?                                        {step_us():6.1f} us")
        M = M0.copy()
        cp.cuda.Device().synchronize()
        s1 = cp.cuda.Stream(non_blocking=True)
        with s1:
            for _ in range(14):
                M = M @ M
        s1.synchronize()
        print(f"  14 DGEMMs on another stream, legacy idle      {step_us():6.1f} us")
        x = cp.ones(1 << 22)
        y = x * 2                                   # legacy busy (~20 us) ...
        with s1:
            cp.ones(1) + 1                          # ... while a tiny kernel on s1
        cp.cuda.Device().synchronize()
        print(f"  a tiny kernel beside legacy work             {step_us():6.1f} us")
        for _ in range(20):
            y = x * 2
            with s1:
                z = x + 1
        cp.cuda.Device().synchronize()
        print(f"  20 x overlapping kernels on two streams       {step_us():6.1f} us")
        r = subprocess.run([sys.executable, "-c", "import cupy; print(float(cupy.ones(8).sum()))"],
                           capture_output=True, text=True)
        print(f"  after another process used the GPU ({r.stdout.strip()})  {step_us():6.1f} us")
        print(f"  cupy.cuda.driver: {[n for n in dir(cp.cuda.driver) if 'tx' in n]}")
        sys.exit(0)
    if os.environ.get("SIDE_MODE") == "ctx":        # a second context of this process
        drv, rt = cp.cuda.driver, cp.cuda.runtime
        print(f"  fast?                                        {step_us():6.1f} us")
        dgemms(cp.cuda.Stream(non_blocking=True))
        print(f"  after 14 DGEMMs on another stream            {step_us():6.1f} us")
        for what in ("memset", "memset again"):
            t0 = time.perf_counter()
            primary = drv.ctxGetCurrent()
            ctx = drv.ctxCreate(0)       # device 0
            try:
                p = rt.malloc(1 << 20)
                rt.memset(p, 1, 1 << 20)
                rt.deviceSynchronize()
                rt.free(p)
            finally:
                drv.ctxSetCurrent(primary)
                drv.ctxDestroy(ctx)
            dt = time.perf_counter() - t0
            print(f"  after a {what} in a second context ({dt * 1e3:.0f} ms) {step_us():6.1f} us")
            dgemms(cp.cuda.Stream(non_blocking=True))
            print(f"  after 14 DGEMMs on another stream            {step_us():6.1f} us")
        sys.exit(0)
    if os.environ.get("SIDE_MODE") == "own":        # the graph only ever on its own stream
        print(f"  own stream first                             {step_us(own):6.1f} us")
        print(f"  own stream again                             {step_us(own):6.1f} us")
        dgemms(cp.cuda.Stream(non_blocking=True))
        print(f"  own stream after DGEMMs on another           {step_us(own):6.1f} us")
        print(f"  legacy                                       {step_us():6.1f} us")
        sys.exit(0)
    show("before")
    dgemms(cp.cuda.Stream.null)
    show("after 14 DGEMMs on the legacy stream")
    s = cp.cuda.Stream(non_blocking=True)
    dgemms(s)
    show("after 14 DGEMMs on a non-blocking stream")
    del s
    gc.collect()
    show("after that stream destroyed")
    time.sleep(20)
    show("after 20 s")
    dgemms(cp.cuda.Stream.null, 50)
    show("after 50 DGEMMs on the legacy stream")
    s2 = cp.cuda.Stream(non_blocking=True)
    with s2:
        (M0 @ M0).sum()
    s2.synchronize()
    show("after 1 DGEMM + sum on another non-blocking")
    x = cp.ones(1 << 20)
    with cp.cuda.Stream(non_blocking=True) as s3:
        for _ in range(14):
            cp.abs(x).max()
    s3.synchronize()
    show("after 14 max-abs alone on a non-blocking")
