"""#54 item 2: the lowest pairs of the 3-point H(t) by SciPy's dstebz + dstein
(tdse.model.lapack.lowest_pairs, eigh_tridiagonal's "stebz" driver) against SciPy's
dstemr wrapper, and against dstemr through ctypes where the tree before 2026-11-30 has it
(ROOT_BEFORE: its path, optional), on h2plus_moving's and h2plus_moving_large's molecules
at N points, t = 0.37, the best of 5; the residuals max |H z - E z|.

    python benchmarks/archive/tridiagonal_pairs.py [ROOT_BEFORE]
"""
import dataclasses, importlib.util, os, sys, time
import numpy as np, scipy.linalg as sl
from tdse import config as cfgmod
from tdse.model import states
from tdse.model.potential import soft_core
from tdse.model.grid import points

before = None
if len(sys.argv) > 1:
    spec = importlib.util.spec_from_file_location("lapack_before", os.path.join(sys.argv[1], "tdse/model/lapack.py"))
    before = importlib.util.module_from_spec(spec); spec.loader.exec_module(before)


def best(f, r=5):
    b = 1e9
    for _ in range(r):
        t = time.perf_counter(); out = f(); b = min(b, time.perf_counter() - t)
    return b, out


print(f"# python benchmarks/archive/tridiagonal_pairs.py {' '.join(sys.argv[1:])} "
      f"({time.strftime('%Y-%m-%dT%H:%M', time.gmtime())}, {os.cpu_count()} CPUs)")
print("| molecule | N | m | stebz+stein ms | ctypes dstemr ms | SciPy dstemr ms | residual stebz / dstemr |")
print("| --- | --- | --- | --- | --- | --- | --- |")
for name in ("h2plus_moving", "h2plus_moving_large"):
    cfg = cfgmod.load(os.path.join("inputs", name + ".toml"))
    w = cfg.grid.x_max - cfg.grid.x_min
    for n in (256, 1024, 2048, 8192):
        g = dataclasses.replace(cfg.grid, dx=w / n, stencil=3)
        d, e = states._tridiagonal_bands(g, soft_core(cfg.potential, points(g), 0.37))
        for m in (4, 6):
            t1, (E1, X1) = best(lambda: states.lowest_pairs(d, e, m))
            t2, (E2, X2) = best(lambda: before.stemr(d, e, m)) if before else (np.nan, (E1, X1))
            t3, _ = best(lambda: sl.eigh_tridiagonal(d, e, select="i", select_range=(0, m - 1),
                                                     lapack_driver="stemr"), 2)

            def res(E, X):
                HX = d[:, None] * X
                HX[:-1] += e[:, None] * X[1:]
                HX[1:] += e[:, None] * X[:-1]
                return np.abs(HX - X * E).max()
            print(f"| {name} | {n} | {m} | {t1*1e3:.2f} | {t2*1e3:.2f} | {t3*1e3:.2f} | "
                  f"{res(E1, X1):.1e} / {res(E2, X2):.1e} |", flush=True)
