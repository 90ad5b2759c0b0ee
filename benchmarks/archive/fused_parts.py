"""The device time of a fixed step with its estimate as one graph (#56,
tdse.numerics.estimate_graph) against its parts' graphs, each replayed alone between CUDA
events, and the host loop's wall over the same steps, for one input on one GPU: whether
the estimating loop is bound by the host or by the device.  Prints a table.

    python benchmarks/archive/fused_parts.py INPUT STEPS
"""
import sys
import time

import cupy as cp
import numpy as np

import tdse
from tdse.numerics.adaptive import EstimatingStepper


def replay(g, k=300):
    g.launch()
    e0, e1 = cp.cuda.Event(), cp.cuda.Event()
    e0.record()
    for _ in range(k):
        g.launch()
    e1.record()
    e1.synchronize()
    return cp.cuda.get_elapsed_time(e0, e1) * 1e3 / k       # us


def walled(f):
    cp.cuda.Device().synchronize()
    t = time.perf_counter()
    out = f()
    cp.cuda.Device().synchronize()
    return time.perf_counter() - t, out


if __name__ == "__main__":
    inp, S = sys.argv[1], int(sys.argv[2])
    cfg = tdse.load_config(inp)
    plan = tdse.prepare(cfg, backend="cupy")
    psi0 = cp.asarray(plan.psi0, dtype=np.complex128)
    bare = plan.stepper()
    bare.advance(psi0, 0, 2)
    w_none, _ = walled(lambda: bare.advance(psi0, 2, 2 + S))
    est = EstimatingStepper(cfg, plan.stepper, cp)
    psi = est.steps(psi0, 0, 2)
    w_est, _ = walled(lambda: est.steps(psi, 2, 2 + S))
    f = est._fused
    rows = [("loop, steps alone (wall a step)", w_none / S * 1e6),
            ("loop, with the estimate (wall a step)", w_est / S * 1e6)]
    if f:
        rows += [("fused graph (device)", replay(next(iter(f.graphs.values())))),
                 ("run's step graph (device)", replay(next(iter(f.main.graphs.values())))),
                 ("carrier's step graph (device)", replay(next(iter(f.carrier.graphs.values())))),
                 ("estimate's words graph (device)", replay(f.g["graph"]))]
    print(f"# {inp}, {S} steps, one {cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}; fused: {bool(f)}")
    for name, us in rows:
        print(f"{name:40s} {us:8.1f} us")
