"""A run's loop against its bare steps in one process (#23 item 3): `run()` of the probes'
case (inputs/h2plus_moving.toml at N = 256, STENCIL, the method `auto`) for S and S/4 steps
and the bare loop, REPEAT times interleaved, medians: the per-step slope of the run over
the bare step.  AHEAD: TDSE_EIGENPAIRS_AHEAD (1: the worker, as `tdse run`).
python benchmarks/archive/overhead_inprocess.py STENCIL S POP_EVERY AHEAD REPEAT"""
import os
import sys
import tempfile
import time
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.dirname(os.path.dirname(HERE))]

if __name__ == "__main__":
    import tdse
    from benchmarks.suites import _bare_steps
    from run_profile import case
    from tdse.run.driver import run
    warnings.simplefilter("ignore")
    st, S, pe, ah, rep = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], int(sys.argv[5])
    os.environ["TDSE_EIGENPAIRS_AHEAD"] = ah
    d = tempfile.mkdtemp()
    inp = os.path.join(HERE, "..", "..", "inputs", "h2plus_moving.toml")
    plans = {}
    for s in (S, S // 4):
        cfg, _ = case(inp, 256, st, s, pe, "numpy")
        plans[s] = tdse.prepare(cfg.with_value("propagator.method", "auto"), backend="numpy",
                                check_resolution=False)
    run(plans[S], d, force=True)
    bare, slope = [], []
    for _ in range(rep):
        bare.append(_bare_steps(plans[S], S)[0])
        w = {}
        for s in (S, S // 4):
            t0 = time.perf_counter()
            run(plans[s], d, force=True)
            w[s] = time.perf_counter() - t0
        slope.append((w[S] - w[S // 4]) / (S - S // 4))
    b, r = np.median(bare) * 1e6, np.median(slope) * 1e6
    print(f"{st} populations every {pe}, ahead={ah}: bare {b:.0f} us, in the run {r:.0f} us a step: "
          f"{r / b:.3f}", flush=True)
