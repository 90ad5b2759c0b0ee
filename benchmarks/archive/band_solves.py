"""#54/#59: the 5-point tracker's banded solves (tdse.model.states._banded_solves) -- the k
systems as one block-diagonal dgbsv call (the code before 2026-12-01: its band made again
whenever k changed, or kept) against a dgbsv call a system in one cached band array (the
code since); then whole 5-point windows (Tracker.window, N = 8192, populations every 50
steps of h2plus_moving_large) with each, alternating in one process; one BLAS thread as
the workers have.  Prints ms and whether the bits agree.  With "dvr": the DVR tracker's
Davidson calls instead (their Olsen corrections' solves, two right-hand sides a system),
16 consecutive steps of h2plus_moving's molecule at N = 1024 and 2048.

    OMP_NUM_THREADS=1 python benchmarks/archive/band_solves.py [ROUNDS] [dvr]
"""
import sys, time, tomllib
import numpy as np
from scipy.linalg import lapack
from tdse.config import parse
from tdse.model import states
from tdse.model.tracker import Tracker

NEW = states._banded_solves
_kept = {}


def band_block(d1, d2, k, n):
    """The block-diagonal band of k systems (the code before)."""
    j = np.arange(k * n) % n
    ab = np.zeros((7, k * n), order="F")
    ab[2, 2:] = np.where(j[2:] >= 2, d2, 0.0)
    ab[3, 1:] = np.where(j[1:] >= 1, d1, 0.0)
    ab[5, :-1] = np.where(j[:-1] <= n - 2, d1, 0.0)
    ab[6, :-2] = np.where(j[:-2] <= n - 3, d2, 0.0)
    return ab


def old(D, d1, d2, X, keep_all=False):
    k, n = D.shape
    if not d2:
        return NEW(D, d1, d2, X)
    key = (k, n, d1, d2)
    if key not in _kept:
        if not keep_all:
            _kept.clear()                # (one band a thread, made again when k changed)
        _kept[key] = band_block(d1, d2, k, n)
    ab = _kept[key].copy(order="F")
    ab[4] = D.ravel()
    r = X.shape[2] if X.ndim == 3 else None
    rhs = X.T.reshape(-1) if r is None else np.asfortranarray(X.transpose(1, 0, 2).reshape(k * n, r))
    *_, y, info = lapack.dgbsv(2, 2, ab, rhs, overwrite_ab=1, overwrite_b=1)
    if info:
        return None
    return y.reshape(k, n).T if r is None else y.reshape(k, n, r).transpose(1, 0, 2)


rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3


def alternate(cfg, first, calls, count):
    """The tracker of ``cfg`` with the code before and now, alternating ``rounds`` times:
    ``first(tracker)`` untimed, then ``calls(tracker)`` (a list of (E, phi)) timed; (the
    seconds a call of each, best of the rounds, and whether the two gave the same bits)."""
    res, bits = {}, {}
    for _ in range(rounds):
        for name, f in (("before", old), ("now", NEW)):
            states._banded_solves = f
            _kept.clear()
            tr = Tracker(cfg, 4)
            with states.eigen_threads():
                first(tr)
                t = time.perf_counter()
                out = calls(tr)
                res.setdefault(name, []).append((time.perf_counter() - t) / count)
            bits[name] = b"".join(np.ascontiguousarray(p).tobytes() for _, p in out)
    states._banded_solves = NEW
    return min(res["before"]), min(res["now"]), bits["before"] == bits["now"]


if sys.argv[2:] == ["dvr"]:
    import dataclasses
    base = __import__("tdse.config", fromlist=["load"]).load("inputs/h2plus_moving.toml")
    w = base.grid.x_max - base.grid.x_min
    print(f"# DVR Davidson calls, 16 steps after one at t = 0, best of {rounds} rounds, ms a call")
    for n in (1024, 2048):
        cfg = dataclasses.replace(base, grid=dataclasses.replace(base.grid, dx=w / n, stencil="dvr"))
        cfg = cfg.with_value("output.populations_every", 1)
        before, now, same = alternate(cfg, lambda tr: tr(0.0),
                                      lambda tr: [tr(k * cfg.time.dt) for k in range(1, 17)], 16)
        print(f"N = {n}: before {1e3 * before:.2f} ms, now {1e3 * now:.2f} ms, same bits {same}")
    sys.exit()
rng = np.random.default_rng()
n, k, dx = 8192, 60, 0.0125
d1, d2 = -4 / 3 / dx ** 2 / 2, 1 / 24 / dx ** 2
D = rng.standard_normal((k, n)) * 10 + 2 * abs(d1)
X = rng.standard_normal((n, k))
cases = {"one call, band made again": lambda: (_kept.clear(), old(D, d1, d2, X))[1],
         "one call, band kept": lambda: old(D, d1, d2, X, keep_all=True),
         "a call a system (now)": lambda: NEW(D, d1, d2, X)}
ref = cases["a call a system (now)"]()
print(f"# N = {n}, {k} systems, best of 7, {rounds} rounds")
for name, f in cases.items():
    same = np.array_equal(f(), ref)
    best = []
    for _ in range(rounds):
        ts = []
        for _ in range(7):
            t = time.perf_counter(); f(); ts.append(time.perf_counter() - t)
        best.append(min(ts))
    print(f"{name:28s} {1e3 * min(best):7.2f} ms  same bits {same}")

d = tomllib.load(open("inputs/h2plus_moving_large.toml", "rb"))
d["grid"]["stencil"] = 5
d["propagator"]["method"] = "chebyshev"
d["time"]["t_end"] = 300.0
d["output"]["populations_every"] = 50
cfg = parse(d)
C = states.WARM_ANCHOR_CALLS
print(f"# 5-point windows of {C} calls, N = {cfg.grid.n}, populations every 50 steps")
before, now, same = alternate(cfg, lambda tr: tr.window(0),
                              lambda tr: [pair for a in range(1, 7) for pair in tr.window(a)], 6)
for name, s in (("before", before), ("now", now)):
    print(f"{name:7s} a window {1e3 * s:6.1f} ms, a call {1e3 * s / C:.2f} ms")
print("same bits", same)
