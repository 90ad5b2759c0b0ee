"""How many term-count patterns (one CUDA graph captured for each: graphs.GraphStep) a
GPU run of h2plus_moving_large meets over S steps, by the graph step's own Planner run
with NumPy on the host (no GPU needed): a long run captures a graph per new pattern, the
1-step run one -- a fixed cost the run-overhead suite's 1-step run would not pay.

    python -m benchmarks.archive.graph_patterns [S] [N]
"""
import dataclasses
import sys
import time

import numpy as np


def main():
    import tdse
    from tdse import config as cfgmod
    from tdse.numerics import graphs
    from tdse.numerics.stepper import BatchStepper
    S = int(sys.argv[1]) if len(sys.argv) > 1 else 40000
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 8192
    base = cfgmod.load("inputs/h2plus_moving_large.toml")
    for st in (3, 5):
        g = dataclasses.replace(base.grid, dx=(base.grid.x_max - base.grid.x_min) / n, stencil=st)
        cfg = dataclasses.replace(base, grid=g).with_value("propagator.method", "chebyshev")
        cfg = cfg.with_value("propagator.time_error", "none").with_value("time.t_end", S * cfg.time.dt)
        plan = tdse.prepare(cfg, backend="numpy", check_resolution=False)
        planner = graphs.Planner(BatchStepper([plan.config], np), plan.stepper().bounds_many)
        first = {}
        t0 = time.perf_counter()
        for j0 in range(0, S, graphs.CHUNK):
            for i, p in enumerate(planner.chunk(j0)[1]):
                first.setdefault(p, j0 + i)
        print(f"N = {n}, {st}-point, {S} steps: {len(first)} pattern(s) of term counts, first met "
              f"at steps {sorted(first.values())[:20]}: {dict(sorted(first.items(), key=lambda kv: kv[1])[:8])} "
              f"(planned in {time.perf_counter() - t0:.1f} s)")


if __name__ == "__main__":
    main()
