"""The three small host costs this session's changes rest on (2026-12-03), measured in one go:
(1) scipy.fft against numpy.fft for the DVR's Davidson products (states._real_operator's
rfft / irfft along rows, padded to 2N): bits and microseconds; (2) one usable_cpus() (the
busy CPUs counted from /proc) in a fresh process; (3) the import time of the NumPy
submodules tdse.lazy defers, in a fresh interpreter (python -X importtime).

    PYTHONPATH=. python benchmarks/archive/host_small_costs.py
"""
import subprocess
import sys
import time

import numpy as np
import scipy.fft as sf

rng = np.random.default_rng(0)
print("# (1) rfft/irfft padded to 2N along rows, m columns: numpy.fft / scipy.fft us, max |diff|")
for n in (1000, 2048, 8192):
    for m in (5, 12):
        X, lam = rng.standard_normal((m, n)), rng.standard_normal(n + 1)
        out, t = {}, {}
        for name, f in (("numpy", np.fft), ("scipy", sf)):
            def run():
                return f.irfft(lam * f.rfft(X, n=2 * n, axis=1), n=2 * n, axis=1)
            out[name] = run()
            k, t0 = 0, time.perf_counter()
            while time.perf_counter() - t0 < 0.3:
                run()
                k += 1
            t[name] = (time.perf_counter() - t0) / k * 1e6
        print(f"N={n} m={m}: {t['numpy']:.0f} / {t['scipy']:.0f} us, diff {np.abs(out['numpy'] - out['scipy']).max():.1e}")
print("# (2) usable_cpus() in fresh processes, ms")
code = ("import time\nfrom tdse.run import backend as bk\nt = time.perf_counter(); bk.usable_cpus()\n"
        "print(round((time.perf_counter() - t) * 1e3, 1))")
print([subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.strip() for _ in range(5)])
print("# (3) cumulative import us of the deferred submodules, `import scipy.linalg` without tdse.lazy")
r = subprocess.run([sys.executable, "-X", "importtime", "-c", "import scipy.linalg"], capture_output=True, text=True)
for line in r.stderr.splitlines():
    name = line.rsplit("|", 1)[-1].strip()
    if name in ("numpy.f2py", "numpy.testing", "numpy.char", "numpy.rec", "numpy.ctypeslib", "numpy.ma"):
        print(name, line.split("|")[1].strip())
