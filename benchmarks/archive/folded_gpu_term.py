"""#59 item 1: one Chebyshev term of a scan's block at N = 500 (atom_hhg's DVR) on a GPU, by
device time: each part captured REPS times in a CUDA graph and replayed (no host launch
cost; timed from Python, a 500 x 500 product of a few us reads as the ~25 us of its host
call).  The unfolded term: the DGEMM of T on the block as N x 2B reals and the recurrence's
pass ("recur"); the folded term (tdse.numerics.graphs.FOLD_HALVES): the two centrosymmetric
halves by one strided-batched DGEMM and the pair pass ("recur_pair").

    PYTHONPATH=. python3 benchmarks/archive/folded_gpu_term.py 16 100 500 1000 2000
"""
import sys

import numpy as np
import cupy as cp

from tdse import config as cfgmod
from tdse.backends.cupy.blas import dgemm_halves_into, dgemm_into
from tdse.backends.cupy.chain import graph_kernels
from tdse.model.hamiltonian import kinetic_dense, kinetic_halves
from tdse.model import potential
from tdse.numerics import graphs

REPS, LAUNCHES = 50, 20


def device_us(f):
    f()
    cp.cuda.Device().synchronize()
    gr = graphs.capture(cp, lambda: [f() for _ in range(REPS)])
    st = cp.cuda.get_current_stream()
    gr.launch(st)
    st.synchronize()
    s, e = cp.cuda.Event(), cp.cuda.Event()
    s.record(st)
    for _ in range(LAUNCHES):
        gr.launch(st)
    e.record(st)
    e.synchronize()
    return cp.cuda.get_elapsed_time(s, e) / (REPS * LAUNCHES) * 1e3


def main(widths):
    cfg = cfgmod.load("inputs/atom_hhg.toml")
    g = cfg.grid
    n, m = g.n, g.n // 2
    k = graph_kernels(cp, potential.of(cfg.potential).device, graphs.CHAIN_REG)
    T = cp.ascontiguousarray(kinetic_dense(g, cp))
    K2 = cp.ascontiguousarray(2.0 * cp.stack(kinetic_halves(g, cp)))
    rng = np.random.default_rng(7)
    P = cp.asarray(np.array([0.8, 0.8, 0.8]))
    A = cp.asarray(rng.standard_normal(8) + 1j * rng.standard_normal(8))
    rows = []
    for B in widths:
        blk = lambda: cp.asarray(rng.standard_normal((n, B)) + 1j * rng.standard_normal((n, B)))  # noqa: E731
        X, Pm, Y, Z, G = blk(), blk(), blk(), blk(), blk()
        d = cp.asarray(rng.uniform(-1, 0.5, (n, B)))
        # the folded term equals the unfolded one (both then unfolded) to rounding
        F = cp.empty_like(X)
        k["fold"](X, n, B, F, size=m * B)
        Fp = cp.empty_like(X)
        k["fold"](Pm, n, B, Fp, size=m * B)
        dgemm_into(cp, T, X, G)
        Zu, Yu = cp.empty_like(X), Y.copy()
        k["recur"](G, d, X, Pm, P, 0, A, 1, Zu, Yu)
        dgemm_halves_into(cp, K2, F, G)
        Zf, Yf = cp.empty_like(X), cp.zeros_like(X)
        k["recur_pair"](G, d, F, Fp, P, 0, A, 1, n, B, Zf, Yf, size=m * B)
        back = cp.empty_like(X)
        ones = cp.asarray(np.array([1.0 + 0j]))
        k["final_unfold"](Zf, ones, 0, n, B, back, size=m * B)
        err = float(cp.abs(back - Zu).max() / cp.abs(Zu).max())
        t_gemm = device_us(lambda: dgemm_into(cp, T, X, G))
        t_rec = device_us(lambda: k["recur"](G, d, X, Pm, P, 0, A, 1, Z, Y))
        t_half = device_us(lambda: dgemm_halves_into(cp, K2, F, G))
        t_pair = device_us(lambda: k["recur_pair"](G, d, F, Fp, P, 0, A, 1, n, B, Z, Y, size=m * B))
        t_fold = device_us(lambda: k["fold"](X, n, B, F, size=m * B))
        flops = 2.0 * n * n * 2 * B
        rows.append((B, t_gemm, flops / t_gemm / 1e6, t_rec, t_gemm + t_rec, t_half, flops / 2 / t_half / 1e6,
                     t_pair, t_half + t_pair, t_fold, err))
    print(f"atom_hhg N = {n}; us of device time a call ({REPS} calls a graph, {LAUNCHES} launches), "
          f"{cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}")
    print(f"{'B':>5} {'DGEMM':>7} {'TF/s':>6} {'recur':>7} {'term':>7} {'halves':>7} {'TF/s':>6} "
          f"{'pair':>7} {'folded':>7} {'fold':>6} {'rel diff':>9}")
    for r in rows:
        print(f"{r[0]:5d} " + " ".join(f"{v:7.1f}" if j != 9 else f"{v:9.1e}" for j, v in enumerate(r[1:])))


if __name__ == "__main__":
    main([int(b) for b in sys.argv[1:]] or [16, 100, 500, 1000, 2000])
