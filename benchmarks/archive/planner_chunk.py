"""The GPU run's host planner (tdse.numerics.graphs.Planner.chunk: the scalars of 64 steps)
at N = 8192 (#23 item 3: a chunk's ~10 ms on a GPU machine's host is as long as its 64
steps on the GPU, so the loop waited for it): the exact bounds in one NumPy pass (the
former Stepper.bounds_many) against the cache-sized groups; scipy.special.jv of a chunk;
the whole chunk.  Milliseconds, medians of REPS chunks.  (The recorded H100 runs of
2026-11-26 also timed the groups and the Bessel values on 4 threads: the chunk 4.8 against
7.3 ms, but a run in process was no faster with them, so they were dropped.)

    python benchmarks/archive/planner_chunk.py INPUT N STENCIL [REPS]
"""
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.dirname(os.path.dirname(HERE))]

import scipy.special  # noqa: E402
import tdse  # noqa: E402
from run_profile import case_config  # noqa: E402
from tdse.model.hamiltonian import kinetic_max  # noqa: E402
from tdse.model.potential import total_many  # noqa: E402
from tdse.numerics import graphs  # noqa: E402
from tdse.numerics.stepper import BatchStepper  # noqa: E402


def one_pass(s, js, times):
    """The bounds as Stepper.bounds_many computed them before the groups (same values)."""
    x, g = s.x_host, s.config.grid
    S, nt = times.shape
    v = total_many(s.config.potential, x, times.ravel()).reshape(S, nt, x.size)
    out = np.empty((S, len(s.scheme.factors), 2))
    for e, (sc, row) in enumerate(zip(s.scheme.scales(), s.scheme.factors)):
        vk = sum(w * v[:, i] for i, w in enumerate(row) if w)
        out[:, e, 0], out[:, e, 1] = vk.min(axis=1), sc * kinetic_max(g.stencil, g.dx) + vk.max(axis=1)
    return out


def ms(f, reps):
    f(0)
    out = []
    for r in range(reps):
        t = time.perf_counter()
        f(r + 1)
        out.append(time.perf_counter() - t)
    return 1e3 * float(np.median(out))


if __name__ == "__main__":
    inp, n, st = sys.argv[1:4]
    reps = int(sys.argv[4]) if len(sys.argv) > 4 else 30
    cfg = case_config(inp, n, st, 40000, 50)
    plan = tdse.prepare(cfg, backend="numpy", check_resolution=False)
    s = plan.stepper()
    dt, nodes = cfg.time.dt, np.asarray(s.scheme.nodes)

    def window(r):
        js = np.arange(64 * (r + 3), 64 * (r + 4))
        return js, js[:, None] * dt + nodes[None, :] * dt
    row = {}
    row["bounds, one pass"] = ms(lambda r: one_pass(s, *window(r)), reps)
    row["bounds, groups"] = ms(lambda r: s.bounds_many(*window(r)), reps)
    whole = s._extreme_points
    s._extreme_points = lambda times: None                  # every grid point (before 2026-11-26 T16)
    row["bounds, groups, every point"] = ms(lambda r: s.bounds_many(*window(r)), reps)
    s._extreme_points = whole
    planner = graphs.Planner(BatchStepper([plan.config], np), s.bounds_many)
    row["chunk"] = ms(lambda r: planner.chunk(64 * (r + 3)), reps)
    R = np.full((64, len(s.scheme.factors)), 30.0) * (1 + 1e-3 * np.arange(64))[:, None]
    k = np.arange(60)
    row["jv of 64 x E x 60"] = ms(lambda r: scipy.special.jv(k[None, None, :], R[:, :, None]), reps)
    print(f"# {inp}, N = {n}, {st}-point, scheme {cfg.propagator.scheme}")
    print("  ".join(f"{k}: {v:.2f} ms" for k, v in row.items()))
