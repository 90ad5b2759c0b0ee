"""#59 (small sizes at the hardware's limit): the sinc-DVR's H applied to a vector on the host,
its FFTs by scipy.fft (as before tdse.model.ffts) against SciPy's pocketfft binding called
in place (tdse.model.ffts.padded_kinetic, as shipped), in one process, alternating; min of
5 repeats of 3000 calls each; and one Chebyshev exponential (the run's tolerance) of the
laser drive's H at N = 320 both ways.  Usage: python host_fft.py"""
import dataclasses
import os
import sys
import timeit

import numpy as np
import scipy.fft

sys.path.insert(0, os.getcwd())
from tdse.config import load_config  # noqa: E402
from tdse.model import hamiltonian as H, ffts  # noqa: E402


def scipy_route(X, lam, n, xp=np):
    pad = np.zeros((2 * n,) + X.shape[1:], dtype=np.complex128)
    pad[:n] = X
    return scipy.fft.ifft(lam * scipy.fft.fft(pad, axis=0, workers=-1), axis=0, workers=-1)[:n]


shipped = ffts.padded_kinetic
cfg = load_config("inputs/h2plus_moving.toml")
print("binding vouched for:", ffts._pocket() is not None)
for N in (256, 320, 512, 1024, 2048):
    g = dataclasses.replace(cfg.grid, dx=(cfg.grid.x_max - cfg.grid.x_min) / N)
    c = dataclasses.replace(cfg, grid=g)
    rng = np.random.default_rng(N)
    op = H.Operator(c, 1.0, rng.standard_normal(N), np, 0.7, 0.1)
    X = rng.standard_normal(N) + 1j * rng.standard_normal(N)
    t = {}
    for _ in range(2):
        for name, f in (("scipy.fft", scipy_route), ("in place", shipped)):
            H.padded_kinetic = f
            t.setdefault(name, []).append(min(timeit.repeat(lambda: op(X), number=3000, repeat=5)) / 3000)
    H.padded_kinetic = scipy_route
    a = op(X)
    H.padded_kinetic = shipped
    b = op(X)
    print(f"N = {N}: H X {min(t['scipy.fft']) * 1e6:.1f} us by scipy.fft, {min(t['in place']) * 1e6:.1f} us "
          f"in place (x{min(t['in place']) / min(t['scipy.fft']):.2f}); the same bits: {np.array_equal(a, b)}")

# a whole run: the time-error suite's laser drive (seed 56, drawn after its four drives; DVR
# N = 320, Chebyshev, the estimate on), at its adaptive 1e-6 tolerance and at the fixed dt the
# suite's 12-01 row found as accurate (940 steps), each way alternating, medians of 3
import time  # noqa: E402

import tdse  # noqa: E402
from benchmarks import drives  # noqa: E402
from tdse.config import with_values  # noqa: E402
rng = np.random.default_rng(56)
for kind in ("abrupt", "ramped", "laser", "fast"):
    drives.make(kind, rng)
base = with_values(drives.make("laser", rng), [("time.dt", 1.0), ("output.every", 5)])
cases = {"adaptive 1e-6": with_values(base, [("time.tolerance", 1e-6)]),
         "fixed 940 steps": with_values(base, [("time.dt", base.time.t_end / 940), ("output.every", 94)])}
for label, cfg in cases.items():
    walls = {}
    for _ in range(4):
        for name, f in (("scipy.fft", scipy_route), ("in place", shipped)):
            H.padded_kinetic = f
            t0 = time.perf_counter()
            r = tdse.simulate(cfg, backend="numpy", progress=False)
            walls.setdefault(name, []).append(time.perf_counter() - t0)
    m = {k: float(np.median(v[1:])) for k, v in walls.items()}
    print(f"{label} (N = {cfg.grid.n}, {cfg.grid.stencil}): {m['scipy.fft']:.3f} s by scipy.fft, "
          f"{m['in place']:.3f} s in place (x{m['in place'] / m['scipy.fft']:.2f}; each: "
          f"{[round(x, 3) for x in walls['scipy.fft'][1:]]} / {[round(x, 3) for x in walls['in place'][1:]]})")
H.padded_kinetic = shipped
