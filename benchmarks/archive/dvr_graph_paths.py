"""One DVR member's graph step on one GPU by the dense T (a GEMV kernel a term, or the
one-kernel exponential up to N = 3072) against by FFT (graphs._FFTKinetic, the four-step
FFT), per N <= DVR_GEMM_MAX_N (beyond it always FFT): where graphs.FFT_MIN_N should sit.  h2plus_moving_large with dx = 102.4 / N
(dt = 0.002: the term count grows like 1/dx^2), method chebyshev.

    PYTHONPATH=. python -m benchmarks.archive.dvr_graph_paths N [N ...]
"""
import sys

import numpy as np


def main():
    import cupy as cp

    import tdse
    from benchmarks.suites import _bare_steps
    from tdse.numerics import graphs
    from benchmarks.archive.run_profile import case_config
    print(cp.cuda.runtime.getDeviceProperties(0)["name"].decode())
    print(f"{'N':>6} {'terms':>6} {'dense ms':>9} {'fft ms':>8} {'dense/fft':>9} {'|dpsi|':>9}")
    keep = graphs.FFT_MIN_N
    for n in [int(a) for a in sys.argv[1:]] or [1024, 2048, 3072, 4096]:
        cfg = case_config("inputs/h2plus_moving_large.toml", n, "dvr", 500, 0)   # the input's 500 steps
        plan = tdse.prepare(cfg, backend="cupy", check_resolution=False)
        sec, psi = {}, {}
        for fft in (False, True, False, True):
            graphs.FFT_MIN_N = n if fft else 10 ** 9
            steps = 2000
            s, st, _, p = _bare_steps(plan, steps)
            assert (st.propagator.graph.fft is not None) == fft
            sec.setdefault(fft, []).append(s)
            psi[fft] = cp.asnumpy(p)
            terms = st.cheb_terms / (steps + 2)
        graphs.FFT_MIN_N = keep
        d, f = np.median(sec[False]), np.median(sec[True])
        err = np.abs(psi[True] - psi[False]).max() / np.abs(psi[False]).max()
        print(f"{n:6d} {terms:6.1f} {1e3 * d:9.3f} {1e3 * f:8.3f} {d / f:9.2f} {err:9.1e}", flush=True)


if __name__ == "__main__":
    main()
