"""#27: the dense exponent's step on one GPU as one graph (graphs.DenseGraphStep) against
the step launched from Python (mgemm.expm, U @ psi): ms a step and the final psi's
difference; python benchmarks/archive/dense_probe.py [input] [steps]"""
import sys
import time

import cupy as cp
import numpy as np

import tdse

name = sys.argv[1] if len(sys.argv) > 1 else "inputs/h2plus_moving.toml"
steps = int(sys.argv[2]) if len(sys.argv) > 2 else 200
cfg = tdse.load_config(name).with_value("propagator.time_error", "none").with_value("propagator.method", "dense")
plan = tdse.prepare(cfg, backend="cupy", check_resolution=False)
print(f"{name}: N = {cfg.grid.n}, plan {plan.exponent_plan if hasattr(plan, 'exponent_plan') else ''}")
out = {}
for dg in (True, False):
    st = plan.stepper()
    if not dg:
        from tdse.numerics.propagators import Launched
        st.propagator = Launched(st)
    s = tdse.evolve(plan, cp.asarray(plan.psi0), stop=3, stepper=st)
    cp.cuda.Device().synchronize()
    t0 = time.perf_counter()
    s = tdse.evolve(plan, s.psi, start=3, stop=3 + steps, stepper=st)
    cp.cuda.Device().synchronize()
    sec = (time.perf_counter() - t0) / steps
    out[dg] = cp.asnumpy(s.psi)
    print(f"dense graphs {dg} ({bool(getattr(st.propagator, 'graph', False))}): {1e3 * sec:.3f} ms a step", flush=True)
print("max diff / max", np.abs(out[True] - out[False]).max() / np.abs(out[False]).max())
