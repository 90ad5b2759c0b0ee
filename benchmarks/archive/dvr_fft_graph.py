"""The DVR beyond DVR_GEMM_MAX_N on one GPU: the bare step by graphs (two cuFFT nodes a
term, graphs._FFTKinetic) against the launched path (BlockOperator's FFT from Python), in
one process, alternated; and psi after the same steps both ways.

    PYTHONPATH=. python -m benchmarks.archive.dvr_fft_graph [N] [steps]
"""
import sys
import time

import numpy as np


def main():
    import cupy as cp

    import tdse
    from benchmarks.suites import _bare_steps
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 8192
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
    from benchmarks.archive.run_profile import case_config
    cfg = case_config("inputs/h2plus_moving_large.toml", n, "dvr", 500, 0)   # the input's 500 steps
    plan = tdse.prepare(cfg, backend="cupy", check_resolution=False)
    print(f"N = {cfg.grid.n}, dt = {cfg.time.dt}, {cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}")
    rows = {True: [], False: []}
    for rep in range(3):
        for graphs in (True, False):
            k = steps if graphs else max(50, steps // 10)
            sec, st, nodes, _ = _bare_steps(plan, k, graphs=graphs)
            g = getattr(st.propagator, "graph", None)
            rows[graphs].append(sec)
            print(f"rep {rep} graphs={graphs}: {k} steps, {1e3 * sec:.3f} ms a step, "
                  f"terms/step {st.cheb_terms / (k + 2):.1f}, nodes {nodes}, "
                  f"fft {getattr(g, 'fft', None) is not None if g else None}", flush=True)
    # the same 100 steps both ways
    psi = {}
    for graphs in (True, False):
        st = plan.stepper()
        st.graphs = graphs
        t0 = time.perf_counter()
        psi[graphs] = cp.asnumpy(tdse.evolve(plan, cp.asarray(plan.psi0), stop=100, stepper=st).psi)
        print(f"100 steps graphs={graphs}: {time.perf_counter() - t0:.2f} s")
    d = np.abs(psi[True] - psi[False]).max() / np.abs(psi[False]).max()
    g, l = np.median(rows[True]), np.median(rows[False])
    print(f"SUMMARY N={cfg.grid.n} graph {1e3 * g:.3f} ms  launched {1e3 * l:.3f} ms  "
          f"speed-up {l / g:.1f}x  |psi_graph - psi_launched| / max = {d:.2e}")


if __name__ == "__main__":
    main()
