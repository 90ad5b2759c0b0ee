"""#56: the host split carrier's kinetic factor (tdse.numerics.carrier) as one dense N x N
product against the sine FFTs, a step each at N = 64 ... 768 (best of 5 x 200, fresh random
e and D, the same e to the digits printed), then tiny's `tdse run` in fresh processes
(alternating, 5 each, after one each; bytecode kept as the start-up suite keeps it,
benchmarks.suites._cli_env) with carrier.DENSE_MAX_N as shipped and 0 (the FFTs): the wall,
the printed estimate fraction, whether scipy.fft was imported.  Usage: python carrier_dense.py"""
import re
import subprocess
import sys
import time

import numpy as np

from benchmarks.suites import _cli_env
from tdse.model import ffts
from tdse.numerics import carrier
from tdse.numerics.carrier import sine_box, sine_symbol


class _Grid:
    dx, stencil = 0.2, 3


rng = np.random.default_rng()
print("# a step's kinetic factor on the host (us, best of 5 x 200)")
for n in (64, 128, 192, 256, 320, 512, 768):
    m = sine_box(n)
    lo = (m - n) // 2
    g = _Grid()
    tau, h = sine_symbol(g, m), 0.005
    p = np.exp(-1j * h * tau)
    ext = np.concatenate([[1.0], p, [1.0], p[::-1]])
    X = rng.standard_normal(n) + 1j * rng.standard_normal(n)
    d = np.exp(-1j * h * rng.standard_normal(n))

    def by_fft(X):
        y = np.zeros(2 * m + 2, complex)
        np.multiply(X, d, out=y[1 + lo:1 + lo + n])
        np.negative(y[m:0:-1], out=y[m + 2:])
        y = ffts.fft_axis0(y, True)
        y *= ext
        y = ffts.fft_axis0(y, False)
        Y = y[1 + lo:1 + lo + n]
        Y *= d
        return Y
    k = np.arange(1, m + 1)
    Q = np.sqrt(2.0 / (m + 1)) * np.sin(np.pi * np.outer(k[lo:lo + n], k) / (m + 1))
    K = (Q * p) @ Q.T

    def dense(X):
        Y = K @ (X * d)
        Y *= d
        return Y
    a, b = by_fft(X.copy()), dense(X)
    ts = {}
    for name, f in (("fft", by_fft), ("dense", dense)):
        best = 1e9
        for _ in range(5):
            t = time.perf_counter()
            for _ in range(200):
                f(X)
            best = min(best, (time.perf_counter() - t) / 200)
        ts[name] = best * 1e6
    print(f"N = {n} (box {m}): FFTs {ts['fft']:.1f} us, dense {ts['dense']:.1f} us, "
          f"max |difference| / max |e| {np.abs(a - b).max() / np.abs(a).max():.1e}")

RUN = ("import sys; import tdse.numerics.carrier as c; c.DENSE_MAX_N = {0}; "
       "from tdse.ui.command import main\n"
       "sys.argv = ['tdse', 'run', 'inputs/tiny.toml', '--out', '/tmp/carrier_dense', '--force']\n"
       "try:\n    main()\n"
       "finally:\n    print('scipy.fft imported:', 'scipy.fft' in sys.modules)")
print(f"# tiny's `tdse run` in fresh processes, DENSE_MAX_N = {carrier.DENSE_MAX_N} (shipped) / 0 (FFTs), alternating")
rows = {carrier.DENSE_MAX_N: [], 0: []}
env = _cli_env()
for i in range(6):
    for lim in rows:
        t = time.perf_counter()
        out = subprocess.run([sys.executable, "-c", RUN.format(lim)], stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True, env=env).stdout
        wall = time.perf_counter() - t
        frac = re.search(r"which cost \+(\d+) %", out).group(1)
        if i:
            rows[lim].append((wall, int(frac), "scipy.fft imported: True" in out))
for lim, r in rows.items():
    print(f"DENSE_MAX_N = {lim}: wall median {np.median([w for w, _, _ in r]):.2f} s "
          f"({', '.join(f'{w:.2f}' for w, _, _ in r)}), printed estimate +{np.median([f for _, f, _ in r]):.0f} % "
          f"({', '.join(str(f) for _, f, _ in r)}), scipy.fft imported: {sorted({i for _, _, i in r})}")
