"""CI time and window spectra: scipy.linalg.eigh_tridiagonal's dstemr against dstebz + dstein for the m lowest pairs of the 3-point soft-core H (box 800 bohr, N = 256 / 1024 / 3200), one CPU, ms a call (tdse.model.lapack.STEBZ_MAX_PAIRS).  Usage: OPENBLAS_NUM_THREADS=1 python tridiagonal_drivers.py"""
import time, numpy as np, scipy.linalg as sl
for n in (256, 1024, 3200):
    dx = 800 / n
    x = (np.arange(n) - n/2) * dx
    d = 1/dx**2 - 1/np.sqrt(x**2 + 2); e = np.full(n-1, -0.5/dx**2)
    for m in sorted({16, 64, 128, 256, n // 8, n // 4, n}):
        if m > n: continue
        r = {}
        for drv in ("stemr", "stebz"):
            t0 = time.perf_counter()
            sl.eigh_tridiagonal(d, e, select="i", select_range=(0, m-1), lapack_driver=drv, check_finite=False)
            r[drv] = time.perf_counter() - t0
        print(f"N {n} m {m}: stemr {r['stemr']*1e3:.1f} ms, stebz {r['stebz']*1e3:.1f} ms")
