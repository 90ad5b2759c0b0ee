"""Whether `method = "auto"`'s calibration (tdse.numerics.cost.calibrate: mgemm.expm, a
ZGEMM, Chebyshev terms on the GPU) leaves the process's bare GPU loop slower afterwards
(run-overhead's bare loop: 141 us a step after an auto plan's `prepare`, 127 us with an
explicit Chebyshev plan, the same graph of 74 nodes and 36 terms: bare_drift_*.txt).  An
explicit Chebyshev plan's bare loop, then calibrate() once, then the loop again, then each
part of it alone; the other threads' frames sampled during each loop.

    CALIB_PART=all|expm|zgemm|chebyshev|dgemm|dgemm+reset|mgemm.gemm|stream-dgemm|dgemm*K|expm-gemm-layout \
    python -m benchmarks.archive.calib_side INPUT N STENCIL STEPS

Found (one H100, calib_side_h100x1_20261126T1655_3point.txt and ..._1725_3point.txt): only
mgemm.expm itself (the split path, Paterson-Stockmeyer, 14 products) leaves the step slower;
one product through mgemm.gemm, DGEMMs (one, 20 or 200, on the legacy or a non-blocking
stream), a ZGEMM and the Chebyshev terms do not.
"""
import collections
import os
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.dirname(os.path.dirname(HERE))]

import lead_depth  # noqa: E402
from lead_depth import queued  # noqa: E402
from run_profile import case_config  # noqa: E402


def sampled(f):
    """f() with the other threads' innermost frames sampled every 2 ms: (f's value, counts)."""
    seen, stop = collections.Counter(), threading.Event()
    me = threading.get_ident()

    def sample():
        while not stop.wait(0.002):
            for tid, fr in sys._current_frames().items():
                if tid not in (me, threading.get_ident()):
                    seen[f"{fr.f_code.co_filename.split('/')[-1]}:{fr.f_code.co_name}"] += 1
    t = threading.Thread(target=sample, daemon=True)
    t.start()
    out = f()
    stop.set()
    t.join()
    return out, seen.most_common(4)


if __name__ == "__main__":
    import cupy as cp
    import numpy as np
    import mgemm
    import tdse
    from benchmarks.suites import _bare_steps
    from tdse.numerics import cost
    inp, n, st, steps = sys.argv[1:5]
    S = int(steps)
    cfg = case_config(inp, n, st, S + 4, 0, "chebyshev")
    plan = tdse.prepare(cfg, backend="cupy", check_resolution=False)

    def timeline(S=3000, stp=None):
        """(the host's own call before CUDA's queue fills, the device's step, the steps
        queued ahead at the end): lead_depth.py's measure of a new stepper of the plan (or
        of ``stp``, one made before)."""
        stp = plan.stepper() if stp is None else stp
        psi = cp.asarray(plan.psi0)
        for j in range(4):
            psi = stp.step(psi, j)
        cp.cuda.Device().synchronize()
        host, dev, _ = lead_depth.timeline(stp, psi, 4, S)
        return (np.median(np.diff(host[:80])) * 1e6, np.median(np.diff(dev)) * 1e6,
                int(np.median(queued(host, dev)[S // 2:])))

    def loop(label):
        h, d, q = timeline()
        print(f"    timeline: host's own call {h:.1f} us, device step {d:.1f} us, queued {q}")
        s, seen = sampled(lambda: _bare_steps(plan, S)[0])
        print(f"  {label:34s} {s * 1e6:7.1f} us a step; stream {cp.cuda.get_current_stream().ptr}; "
              f"threads {[t.name for t in threading.enumerate()]}; others' frames {seen}")
    print(f"# {inp}, N = {n}, {st}-point, {S} steps a loop")
    loop("explicit chebyshev plan")
    loop("again")
    kept = plan.stepper()                   # made before: its buffers placed before the part
    print(f"    kept stepper before: device step {timeline(stp=kept)[1]:.1f} us")
    part = os.environ.get("CALIB_PART", "all")
    t = time.perf_counter()
    rng = np.random.default_rng(1)
    if part == "all":
        cost.calibrate(cfg.with_value("propagator.method", "auto"), plan.precheck, cp)
    elif part == "expm":
        A = cp.asarray(1j * rng.standard_normal((2048, 2048)) * 0.01)
        mgemm.expm(A, plan=plan.precheck.plan)
    elif part == "zgemm":
        Z = cp.asarray(rng.standard_normal((2048, 2048)) + 1j)
        Z @ Z
        Z @ Z[:, 0].copy()
    elif part in ("dgemm", "dgemm+reset"):
        D = cp.asarray(rng.standard_normal((2048, 2048)))
        D @ D
        cp.cuda.Device().synchronize()
        if part == "dgemm+reset":        # a kernel that prefers the most L1 (carveout 0)
            k = cp.RawKernel(r'''extern "C" __global__ void tdse_l1(double* x) { x[threadIdx.x] += 1.0; }''',
                             "tdse_l1")
            k.preferred_shared_memory_carveout = 0
            y = cp.zeros(256)
            sms = cp.cuda.Device().attributes["MultiProcessorCount"]
            for _ in range(4):
                k((sms * 4,), (256,), (y,))
    elif part == "mgemm.gemm":             # one real product through the band engine
        D = cp.asarray(rng.standard_normal((2048, 2048)))
        mgemm.gemm(D, D)
    elif part.startswith("dgemm*"):       # a burst of real products, as expm's
        D = cp.asarray(rng.standard_normal((2048, 2048)))
        for _ in range(int(part[6:])):
            D = D @ D
            D /= cp.abs(D).max()
    elif part == "expm-gemm-layout":       # expm through the gemm layout, its plan printed
        A = cp.asarray(1j * rng.standard_normal((2048, 2048)) * 0.01)
        U, used = mgemm.expm(A, plan=plan.precheck.plan, return_plan=True)
        print(f"  (expm's plan: {used})")
    elif part.startswith("expm:"):         # a piece of mgemm.expm alone (its own order)
        import importlib
        E = importlib.import_module("mgemm.expm")
        A = cp.asarray(1j * rng.standard_normal((2048, 2048)) * 0.01)
        pl = plan.precheck.plan
        piece = part[5:]
        if piece == "plan_for":
            print(f"  ({E.expm_plan_for(A)[0]})")
        elif piece == "fitting":
            E.fitting_plan(pl, 2048, A.dtype, 1, E.usable(E.free_bytes(cp, 0)))
        elif piece in ("evaluate-cupy", "evaluate-mgemm"):
            M = cp.ascontiguousarray(A.imag)
            if piece == "evaluate-cupy":
                def mm(X, Y, C=None, alpha=1.0, beta=0.0):
                    out = alpha * (X @ Y)
                    return out if C is None else out + beta * C
            else:
                def mm(X, Y, C=None, alpha=1.0, beta=0.0):
                    return mgemm.gemm(X, Y, C, alpha, beta)
            E._evaluate(cp, mm, M, pl)
        elif piece in ("gemm14", "gemm14-onetile"):
            M = cp.ascontiguousarray(A.imag)
            for _ in range(14):
                M = mgemm.gemm(M, M, tile=2048 if piece.endswith("onetile") else None)
                M /= cp.abs(M).max()
        elif piece.startswith("streams"):     # streams4 / streams1: DGEMMs round-robin
            k = int(piece[7:])
            M = cp.ascontiguousarray(A.imag)
            sts = [cp.cuda.Stream(non_blocking=True) for _ in range(k)]
            ev = None
            for i in range(14):
                s_ = sts[i % k]
                if ev is not None:
                    s_.wait_event(ev)
                with s_:
                    M = M @ M
                    M /= cp.abs(M).max()
                ev = cp.cuda.Event()
                ev.record(s_)
            for s_ in sts:
                s_.synchronize()
    elif part == "stream-dgemm":           # a cuBLAS DGEMM on a non-blocking stream
        D = cp.asarray(rng.standard_normal((2048, 2048)))
        st = cp.cuda.Stream(non_blocking=True)
        with st:
            D @ D
        st.synchronize()
    elif part == "chebyshev":
        from tdse.numerics import chebyshev
        from tdse.model import hamiltonian
        from tdse.numerics.stepper import Stepper
        prop = Stepper(cfg, None, cp)
        s0, v, _ = prop.generators(0)[0]
        lo, hi = prop.bounds(s0, v)
        X = cp.asarray(rng.standard_normal(cfg.grid.n) + 1j)
        chebyshev.expm_apply(None, X, cfg.time.dt, lo, hi, 1e-12, cp,
                             scaled=lambda alpha, shift: hamiltonian.Operator(cfg, s0, v, cp, alpha, shift))
    cp.cuda.Device().synchronize()
    print(f"  ({part} of calibrate: {time.perf_counter() - t:.2f} s)")
    print(f"    kept stepper after: device step {timeline(stp=kept)[1]:.1f} us")
    loop("after calibrate()")
    loop("again")
    if os.environ.get("CALIB_FREE") == "1":      # the pool's cached blocks given back
        import gc
        gc.collect()
        cp.get_default_memory_pool().free_all_blocks()
        loop("after free_all_blocks()")
    print(f"    kept stepper at the end: device step {timeline(stp=kept)[1]:.1f} us")
