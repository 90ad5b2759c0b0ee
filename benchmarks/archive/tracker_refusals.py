"""#54: why the 2-CPU run-overhead row on h2plus_moving_large cut to N = 256 (dx = 0.4)
misses where the main job's grid (h2plus_moving, N = 256, dx = 0.1) meets: the 3-point
tracker's windows (populations every 10 steps of dt = 0.002, 16 calls a window, K = 4) on
each grid -- members refused by warm_banded_many's Sturm check (then solved from scratch)
and seconds a call; on the coarse grid the refusals at more iterations and with guard
vectors (K + g columns iterated, the first K checked), and H(t)'s lowest energies at a few
members against the anchor's.  Usage: python benchmarks/archive/tracker_refusals.py"""
import time
import unittest.mock as mock

from tdse.config import load_config, with_values
from tdse.model import states as S
from tdse.model import tracker as tr

WINDOWS, EVERY = 50, 10


def config(path, dx):
    return with_values(load_config(path), [("grid.dx", dx), ("grid.stencil", 3), ("time.dt", 0.002),
                                           ("time.t_end", 16.0), ("output.populations_every", EVERY)])


def members(T, c, a):
    steps = range(a * 16 * EVERY, (a + 1) * 16 * EVERY, EVERY)
    return T._potentials([s * c.time.dt for s in steps])


for path, dx in (("inputs/h2plus_moving.toml", 0.1), ("inputs/h2plus_moving_large.toml", 0.4)):
    c = config(path, dx)
    T = tr.Tracker(c, 4)
    t0 = time.perf_counter()
    for a in range(WINDOWS):
        T.window(a)
    n = 16 * WINDOWS
    print(f"{path} dx = {dx} N = {c.grid.n}: {T.restarts} of {n - WINDOWS} members refused "
          f"({T.restarts / (n - WINDOWS):.0%}), {(time.perf_counter() - t0) / n * 1e6:.0f} us a call")
    g = c.grid
    for label, maxiter, extra in (("4 iterations", 4, 0), ("16 iterations", 16, 0),
                                  ("2 guard vectors", 4, 2), ("4 guard vectors", 4, 4)):
        refused = total = 0
        t0 = time.perf_counter()
        for a in range(WINDOWS):
            V = members(T, c, a)
            anchor = S.tridiagonal(g, V[0], 4 + extra)
            with mock.patch.object(S, "count_below", lambda *_, **__: 4 + extra):   # checked below
                got = S.warm_banded_many(g, V[1:], *anchor, [S.residual_bound(g, v, T.tol) for v in V[1:]],
                                         maxiter=maxiter)
            for v, x in zip(V[1:], got):
                total += 1
                refused += x is None or S.count_below(*S._tridiagonal_bands(g, v), x[0][3] + 1e-9) != 4
        print(f"  {label}: {refused} of {total} refused, {(time.perf_counter() - t0) / total * 1e6:.0f} us "
              "a member (scratch solves not counted)")
    V = members(T, c, 0)
    print("  E_0..3 at the anchor", S.tridiagonal(g, V[0], 4)[0].round(2),
          "| member 6", S.tridiagonal(g, V[6], 4)[0].round(2), "| member 10", S.tridiagonal(g, V[10], 4)[0].round(2))
