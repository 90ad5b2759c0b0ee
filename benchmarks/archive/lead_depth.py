"""How far the host can run ahead of the GPU in a bare graph-step loop (#23 item 3): the
step rows' ring lets it run graphs.RUN_AHEAD_SECONDS of the device's time ahead, but
CUDA's own launch queue may hold fewer steps.  Steps a bare loop (no observers, GC off)
and stamps the host's clock after each step call and a CUDA event after each step; the
host's lead over the device at step i is the steps queued but not run when the host
returned from step i.  Prints the lead's median and maximum, and which stream calls a
step makes.

    python benchmarks/archive/lead_depth.py INPUT N STENCIL STEPS
"""
import gc
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.dirname(os.path.dirname(HERE))]

from run_profile import case  # noqa: E402


def timeline(stp, psi, j0, S):
    """S steps of stepper ``stp`` from ``psi`` at step j0, no synchronisation: (host clock
    after each step call, the device's end of each step (CUDA events), both from one zero;
    the last psi).  The steps queued ahead when the host returned from step i: (i + 1) -
    searchsorted(dev, host)[i]."""
    import cupy as cp
    start = cp.cuda.Event()
    start.record()
    t0 = time.perf_counter()
    host, ev = np.empty(S), []
    for j in range(j0, j0 + S):
        psi = stp.step(psi, j)
        e = cp.cuda.Event()
        e.record()
        ev.append(e)
        host[j - j0] = time.perf_counter() - t0
    ev[-1].synchronize()
    dev = np.array([cp.cuda.get_elapsed_time(start, e) for e in ev]) * 1e-3
    return host, dev, psi


def queued(host, dev):
    """Steps queued ahead of the device when the host returned from each step."""
    return np.arange(1, host.size + 1) - np.searchsorted(dev, host)


if __name__ == "__main__":
    import cupy as cp
    from tdse.numerics import graphs
    inp, n, st, steps = sys.argv[1:5]
    S = int(steps)
    cfg, plan = case(inp, n, st, S + 10, 0, "cupy")
    stp = plan.stepper()
    psi = cp.asarray(plan.psi0)
    for j in range(4):
        psi = stp.step(psi, j)
    cp.cuda.Device().synchronize()
    for lead_s in (graphs.RUN_AHEAD_SECONDS, 1.0):
        stp.propagator.graph.up.lead_seconds = lead_s
        gc.disable()
        host, dev, psi = timeline(stp, psi, 4, S)
        gc.enable()
        lead = queued(host, dev)
        print(f"# {inp}, N = {n}, {st}-point, {S} steps, lead_seconds {lead_s}: wall {max(host[-1], dev[-1]):.3f} s, "
              f"device {dev[-1]:.3f} s ({np.median(np.diff(dev)) * 1e6:.1f} us a step); host call median "
              f"{np.median(np.diff(host)) * 1e6:.1f} us; the ring's lead now {stp.propagator.graph.up.lead} steps")
        print(f"  the host's own call (the first 80 steps, before the queue fills): median "
              f"{np.median(np.diff(host[:80])) * 1e6:.1f} us")
        print(f"  steps queued ahead when the host returned: median {np.median(lead[S // 4:]):.0f}, "
              f"max {lead.max()}, at 1/4, 1/2, 3/4: {lead[S // 4]}, {lead[S // 2]}, {lead[3 * S // 4]}")
