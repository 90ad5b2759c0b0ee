"""The host-side measurements behind #23's and #26's notes of 2026-11-26 (2-core box), in
one run: (1) the 3-point eigenpairs at N = 256, K = 4 by states.stemr (dstemr through ctypes)
against eigh_tridiagonal's default bisection, and stemr in two threads against one after the
other (does it hold the GIL?); (2) potential.bounds_over at N = 8192 over 10^4 steps on 1 and
2 workers against the former one-expression-per-chunk form; (3) a bare 3-point evolve at
N = 256 alone and beside a helper thread kept busy with stemr, with large NumPy passes, or
sleeping; (4) #26's batch term at N = 500, B = 16 (atom_hhg's DVR): the recurrence step, its
kinetic product, the two half GEMMs, the FFT alternative.

    python benchmarks/archive/host_1126.py
"""
import os
import sys
import threading
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path[:0] = [HERE, ROOT]

from run_profile import case_config, per_call  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

import tdse  # noqa: E402
from tdse import config as cfgmod  # noqa: E402
from tdse.model import hamiltonian as H  # noqa: E402
from tdse.model import potential as pot  # noqa: E402
from tdse.model import states  # noqa: E402
from tdse.numerics import precheck as P  # noqa: E402
from tdse.run.loop import evolve  # noqa: E402


def main():
    import scipy.linalg as sl
    rng = np.random.default_rng(0)
    # (1) the eigenpairs
    n = 256
    d, e = 3.0 * rng.standard_normal(n) + 5.0, -0.5 - np.abs(rng.standard_normal(n - 1))
    a = per_call(lambda: states.stemr(d, e, 4), 500)
    b = per_call(lambda: sl.eigh_tridiagonal(d, e, select="i", select_range=(0, 3), check_finite=False), 500)
    print(f"(1) N = 256, 4 pairs: states.stemr {a * 1e6:.0f} us, eigh_tridiagonal (bisection) {b * 1e6:.0f} us")

    def work():
        for _ in range(1000):
            states.stemr(d, e, 4)
    t = time.perf_counter(); work(); work(); serial = time.perf_counter() - t       # noqa: E702
    th = [threading.Thread(target=work) for _ in range(2)]
    t = time.perf_counter(); [x.start() for x in th]; [x.join() for x in th]; two = time.perf_counter() - t  # noqa: E702
    print(f"    2 x 1000 calls one after the other {serial:.3f} s, in two threads {two:.3f} s")
    # (2) the precheck's bounds
    c = cfgmod.load(os.path.join(ROOT, "inputs", "h2plus_moving_large.toml")).with_value("time.t_end", 10000 * 0.002)
    x, ts = P.points(c.grid), P.step_times(c)

    def old_form():
        lo, hi = np.inf, -np.inf
        for i in range(0, ts.size, 256):
            v = 1.0 * pot.total_many(c.potential, x, ts[i:i + 256] + 0.001)
            lo, hi = min(lo, float(v.min())), max(hi, float(v.max()))
        return lo, hi
    row = {"one expression a chunk, 256 times": per_call(old_form, 2)}
    for w in (1, 2):
        row[f"in place, {w} worker(s)"] = per_call(lambda: pot.bounds_over(c.potential, x, ts, offsets=(0.001,), workers=w), 2)
    print("(2) bounds over 10^4 steps at N = 8192: " + ", ".join(f"{k} {v:.3f} s" for k, v in row.items()))
    # (3) a helper thread beside the loop
    cfg = case_config(os.path.join(ROOT, "inputs", "h2plus_moving.toml"), 256, "3", 8000, 0)
    plan = tdse.prepare(cfg, backend="numpy", check_resolution=False)

    def bare():
        t = time.perf_counter()
        with plan.backend.limit():
            evolve(plan, plan.psi0.copy(), [])
        return time.perf_counter() - t

    def helper(stop, mode):
        while not stop.is_set():
            if mode == "stemr":
                for _ in range(10):
                    states.stemr(d, e, 4)
            elif mode == "numpy":
                np.sqrt(rng.random(200000))
            else:
                time.sleep(0.002)
    for _ in range(2):
        row = {"alone": bare()}
        for mode in ("stemr", "numpy", "sleep"):
            stop = threading.Event()
            t = threading.Thread(target=helper, args=(stop, mode))
            t.start()
            row[f"beside a thread: {mode}"] = bare()
            stop.set()
            t.join()
        print("(3) bare evolve, N = 256, 8000 steps: " + ", ".join(f"{k} {v:.3f} s" for k, v in row.items()))
    # (4) #26's batch term
    g = cfgmod.load(os.path.join(ROOT, "inputs", "atom_hhg.toml")).grid
    B = 16
    op = H.BlockOperator(g, 0.5, rng.standard_normal((g.n, B)), np, alpha=0.3, shift=0.1)
    X = rng.standard_normal((g.n, B)) + 1j * rng.standard_normal((g.n, B))
    Pm, Y = rng.standard_normal((g.n, B)) + 1j * rng.standard_normal((g.n, B)), np.zeros((g.n, B), complex)
    real = X.view(np.float64).reshape(g.n, -1)
    m = g.n // 2
    lam = rng.standard_normal((2 * g.n, 1))
    pad = np.zeros((2 * g.n, B), complex)

    def fft():
        import scipy.fft
        pad[:g.n] = X
        return scipy.fft.ifft(lam * scipy.fft.fft(pad, axis=0, workers=1), axis=0, workers=1)[:g.n]
    with threadpool_limits(2):
        for _ in range(2):
            row = {"term (recur)": per_call(lambda: op.recur(X, Pm, Y, 0.1), 3000),
                   "its kinetic product": per_call(lambda: op._kinetic(X), 3000),
                   "the two half GEMMs": per_call(lambda: (op.halves[0] @ real[:m], op.halves[1] @ real[:m]), 3000),
                   "T X by FFT": per_call(fft, 3000)}
            print(f"(4) N = {g.n}, B = 16: " + ", ".join(f"{k} {v * 1e6:.0f} us" for k, v in row.items()))


if __name__ == "__main__":
    main()
