"""#26: what a 16-member CPU batch of atom_hhg (N = 500, sinc-DVR) spends on its kinetic
energy against its serial runs.  Times, in one process on this machine, the kinetic product
of one Chebyshev term: the serial run's FFT of one column (the circulant embedding,
Operator) and the block's products for B = 1..64 members, with 1 and 2 BLAS threads: the
full real GEMM (T times the N x 2B real view), the two half-size products of the
centrosymmetric split (hamiltonian.kinetic_halves, what BlockOperator uses on the CPU) and
the FFT; then the whole term (product and recurrence update) as BlockOperator runs it, with
the halves and with the full GEMM in their place.  Also the full GEMM's GFLOP/s (2 N^2 2B).

python benchmarks/archive/cpu_block_kinetic.py  (on a quiet box; writes its JSON to
benchmarks/results)."""
import json
import os
import platform
import sys
import time

import numpy as np
from threadpoolctl import threadpool_limits

sys.path[:0] = [os.path.dirname(os.path.abspath(__file__)),
                os.path.join(os.path.dirname(__file__), "..", "..")]
from tdse import config as cfgmod  # noqa: E402
from run_profile import per_call  # noqa: E402  (the probes' timer)
from tdse.model import hamiltonian as h  # noqa: E402


def main():
    root = os.path.join(os.path.dirname(__file__), "..", "..")
    cfg = cfgmod.load(os.path.join(root, "inputs", "atom_hhg.toml"))
    g, n = cfg.grid, cfg.grid.n
    rng = np.random.default_rng(5)
    rows = []
    one = h.Operator(cfg, 1.0, rng.standard_normal(n))
    x1 = rng.standard_normal(n) + 1j * rng.standard_normal(n)
    serial = per_call(lambda: one(x1))
    for B in (1, 4, 8, 16, 32, 64):
        V = rng.standard_normal((n, B))
        X = rng.standard_normal((n, B)) + 1j * rng.standard_normal((n, B))
        P, Y = X * 0.5, X.copy()
        old = h.DVR_GEMM_MIN_B
        gemm = h.BlockOperator(g, 1.0, V)
        full = h.BlockOperator(g, 1.0, V)
        full.halves = None                      # the same operator with the full GEMM
        h.DVR_GEMM_MIN_B = 10 ** 9
        fft = h.BlockOperator(g, 1.0, V)
        h.DVR_GEMM_MIN_B = old
        T = h.kinetic_dense(g)
        Xr = X.view(np.float64).reshape(n, -1)
        for threads in (1, 2):
            with threadpool_limits(threads):
                tfull = per_call(lambda: T @ Xr)
                tg = per_call(lambda: gemm._kinetic(X))
                tf = per_call(lambda: fft._kinetic(X))
                term = per_call(lambda: gemm.recur(X, P, Y, 0.1 + 0.2j))
                term_full = per_call(lambda: full.recur(X, P, Y, 0.1 + 0.2j))
            rows.append({"members": B, "blas_threads": threads, "full_gemm_ms": tfull * 1e3,
                         "full_gemm_gflops": 2 * n * n * 2 * B / tfull / 1e9,
                         "halves_ms": tg * 1e3, "fft_ms": tf * 1e3,
                         "term_ms": term * 1e3, "term_ms_per_member": term * 1e3 / B,
                         "term_full_gemm_ms": term_full * 1e3})
    out = {"kind": "block-kinetic", "probe": "cpu_block_kinetic", "n": n,
           "date": time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime()),
           "machine": {"host": platform.node(), "cpus": os.cpu_count(),
                       "numpy": np.__version__},
           "command": "python benchmarks/archive/cpu_block_kinetic.py",
           "serial_operator_ms_per_call": serial * 1e3, "rows": rows}
    path = os.path.join(root, "benchmarks", "results",
                        "cpu_block_kinetic_cpu%d_%s.json" % (os.cpu_count(), time.strftime("%Y%m%dT%H%M%S", time.gmtime())))
    with open(path, "w") as f:
        json.dump(out, f, indent=1)
    print("saved", path)
    print(f"serial run: one column's Operator call {serial * 1e3:.3f} ms")
    print("members threads | full GEMM ms (GFLOP/s) | halves ms | block FFT ms | whole term ms (per member) | with the full GEMM")
    for r in rows:
        print(f"{r['members']:7d} {r['blas_threads']:7d} | {r['full_gemm_ms']:.3f} ({r['full_gemm_gflops']:.0f}) | "
              f"{r['halves_ms']:.3f} | {r['fft_ms']:.3f} | {r['term_ms']:.3f} ({r['term_ms_per_member']:.4f}) | "
              f"{r['term_full_gemm_ms']:.3f}")


if __name__ == "__main__":
    main()
