"""The parts of a graph DVR FFT term on one GPU (graphs._FFTKinetic), each captured
alone R times in a CUDA graph and timed by events: the FFT passes and products (one cuFFT
call of 2N, or the four-step FFT's passes: TDSE_DVR_FOUR_STEP), the recurrence's pass, and
the whole term.

    PYTHONPATH=. python -m benchmarks.archive.fft_parts [N]
"""
import sys

import numpy as np


def main():
    import cupy as cp

    from tdse import load_config
    from tdse.numerics import graphs as G
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 8192
    cfg = load_config("inputs/h2plus_moving_large.toml").with_value("grid.stencil", "dvr")
    cfg = cfg.with_value("grid.dx", (cfg.grid.x_max - cfg.grid.x_min) / n)
    fk = G._FFTKinetic(cp, cfg.grid, 1)
    rng = np.random.default_rng(1)
    bufs = [fk.buffer() for _ in range(4)]
    for b in bufs:
        b[...] = cp.asarray(rng.standard_normal((n, 1)) + 1j * rng.standard_normal((n, 1)))
    full = fk._full[bufs[0].data.ptr]
    F, cufft = fk.F, fk.cufft
    k = G._kernels(cp)
    P = cp.asarray(rng.standard_normal(8))
    A = cp.asarray(rng.standard_normal(8) + 0j)
    d = cp.asarray(rng.standard_normal((n, 1)))
    Y = cp.zeros((n, 1), dtype=np.complex128)
    if fk.four_step:
        F2 = fk.F2
        parts = {
            f"columns FFT {fk.shape}": lambda: fk.cols.fft(full, F2, cufft.CUFFT_FORWARD),
            "twiddles": lambda: cp.multiply(F2, fk.tw, out=F2),
            "rows FFT": lambda: fk.rows.fft(F2, F2, cufft.CUFFT_FORWARD),
            "T X (7 nodes)": lambda: fk(bufs[1]),
        }
    else:
        parts = {
            "fft forward (2N)": lambda: fk.plan.fft(full, F, cufft.CUFFT_FORWARD),
            "F *= lam": lambda: cp.multiply(F, fk.lam, out=F),
            "fft inverse in place": lambda: fk.plan.fft(F, F, cufft.CUFFT_INVERSE),
        }
    parts.update({
        "recur pass (N)": lambda: k["recur"](F[:n], d, bufs[1], bufs[2], P, 1, A, 2, bufs[3], Y),
        "whole term": lambda: k["recur"](fk(bufs[1]), d, bufs[1], bufs[2], P, 1, A, 2, bufs[3], Y),
    })
    R = 200
    print(f"N = {n} (FFT of {2 * n}, four-step {fk.four_step}), {cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}")
    for name, f in parts.items():
        f()
        g = G._capture(cp, lambda: [f() for _ in range(R)])
        s = cp.cuda.Stream(non_blocking=True)
        e0, e1 = cp.cuda.Event(), cp.cuda.Event()
        with s:
            g.launch()
            e0.record()
            for _ in range(5):
                g.launch()
            e1.record()
        e1.synchronize()
        us = cp.cuda.get_elapsed_time(e0, e1) * 1e3 / (5 * R)
        print(f"{name:24s} {us:8.2f} us")


if __name__ == "__main__":
    main()
