"""#54 item 2 asks to drop the ctypes LAPACK where SciPy serves: tdse.model.states.stemr
(ctypes dstemr, workspaces kept) against scipy.linalg.eigh_tridiagonal(lapack_driver="stemr")
for the m = 4 lowest pairs of a 3-point H, N = 256, 2048, 8192: the same bits, the time."""
import datetime, platform, timeit
import numpy as np, scipy, scipy.linalg
from tdse.model import states
rng = np.random.default_rng(1)
print(f"# {datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds')} {platform.node()} "
      f"2 cores; scipy {scipy.__version__}; python benchmarks/archive/stemr_vs_scipy.py")
print("| N | m | same eigenvalues (bits) | max |vector| difference | ctypes dstemr us | scipy stemr us | scipy / ctypes |")
print("| --- | --- | --- | --- | --- | --- | --- |")
for n in (256, 2048, 8192):
    d = rng.uniform(-2, 2, n) + 2 / 0.01
    e = np.full(n - 1, -1 / (2 * 0.01))
    f = lambda: scipy.linalg.eigh_tridiagonal(d, e, select="i", select_range=(0, 3), check_finite=False,
                                              lapack_driver="stemr")
    a, b = states.stemr(d, e, 4), f()
    t1 = min(timeit.repeat(lambda: states.stemr(d, e, 4), number=10, repeat=3)) / 10
    t2 = min(timeit.repeat(f, number=3, repeat=3)) / 3
    print(f"| {n} | 4 | {np.array_equal(a[0], b[0])} | {np.abs(np.abs(a[1]) - np.abs(b[1])).max():.1e} | "
          f"{t1 * 1e6:.0f} | {t2 * 1e6:.0f} | {t2 / t1:.1f} |")
