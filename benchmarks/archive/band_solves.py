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
if sys.argv[2:] == ["dvr"]:
    import dataclasses
    base = __import__("tdse.config", fromlist=["load"]).load("inputs/h2plus_moving.toml")
    w = base.grid.x_max - base.grid.x_min
    print(f"# DVR Davidson calls, 16 steps after one at t = 0, best of {rounds} rounds, ms a call")
    for n in (1024, 2048):
        cfg = dataclasses.replace(base, grid=dataclasses.replace(base.grid, dx=w / n, stencil="dvr"))
        cfg = cfg.with_value("output.populations_every", 1)
        res, bits = {}, {}
        for _ in range(rounds):
            for name, f in (("before", old), ("now", NEW)):
                states._banded_solves = f
                _kept.clear()
                tr = Tracker(cfg, 4)
                with states.eigen_threads():
                    tr(0.0)
                    t = time.perf_counter()
                    out = [tr(k * cfg.time.dt) for k in range(1, 17)]
                    res.setdefault(name, []).append((time.perf_counter() - t) / 16)
                bits[name] = b"".join(np.ascontiguousarray(p).tobytes() for _, p in out)
        states._banded_solves = NEW
        print(f"N = {n}: before {1e3 * min(res['before']):.2f} ms, now {1e3 * min(res['now']):.2f} ms,"
              f" same bits {bits['before'] == bits['now']}")
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
print(f"# 5-point windows of {states.WARM_ANCHOR_CALLS} calls, N = {cfg.grid.n}, populations every 50 steps")
got = {}
for r in range(rounds):
    for name, f in (("before", old), ("now", NEW)):
        states._banded_solves = f
        _kept.clear()
        tr = Tracker(cfg, 4)
        with states.eigen_threads():
            tr.window(0)
            t = time.perf_counter()
            w = [tr.window(a) for a in range(1, 7)]
            s = (time.perf_counter() - t) / 6
        got.setdefault(name, []).append(s)
        bits = b"".join(np.ascontiguousarray(p).tobytes() for win in w for _, p in win)
        got.setdefault(name + "_bits", bits)
states._banded_solves = NEW
for name in ("before", "now"):
    print(f"{name:7s} a window {1e3 * min(got[name]):6.1f} ms (rounds {', '.join(f'{1e3 * v:.1f}' for v in got[name])}),"
          f" a call {1e3 * min(got[name]) / states.WARM_ANCHOR_CALLS:.2f} ms")
print("same bits", got["before_bits"] == got["now_bits"])
