"""A single run's stepping on a GPU, graphs on and off (device probe): the bare step loop
of an input (no observers) and tdse.simulate (observables every step as the input says),
seconds; python benchmarks/archive/single_run.py [input] [t_end]"""
import os
import sys
import time

import cupy as cp

import tdse

name = sys.argv[1] if len(sys.argv) > 1 else "inputs/atom_hhg.toml"
cfg = tdse.load_config(name).with_value("propagator.time_error", "none")
if len(sys.argv) > 2:
    cfg = cfg.with_value("time.t_end", float(sys.argv[2]))
plan = tdse.prepare(cfg, backend="cupy", check_resolution=False)
print(f"{name}: N = {cfg.grid.n}, {cfg.time.steps} steps, method {plan.config.propagator.method}")
for graphs in ("1", "0"):
    os.environ["TDSE_CUDA_GRAPHS"] = graphs
    os.environ["TDSE_BLOCK_OBSERVABLES"] = graphs
    st = plan.stepper()
    tdse.evolve(plan, cp.asarray(plan.psi0), stop=5, stepper=st)      # warm up, capture
    cp.cuda.Device().synchronize()
    t0 = time.perf_counter()
    tdse.evolve(plan, cp.asarray(plan.psi0), stepper=st)
    cp.cuda.Device().synchronize()
    bare = time.perf_counter() - t0
    t0 = time.perf_counter()
    tdse.simulate(cfg, backend="cupy")
    full = time.perf_counter() - t0
    print(f"graphs/device observables {graphs}: bare stepping {bare:.2f} s "
          f"({1e3 * bare / cfg.time.steps:.3f} ms a step), simulate {full:.2f} s", flush=True)
    g = getattr(st.propagator, "graph", None)
    if g:       # the device time of a step: one captured graph replayed back to back
        graph = next(iter(g.graphs.values()))
        cp.cuda.Device().synchronize()
        t0 = time.perf_counter()
        for _ in range(1000):
            graph.launch()
        cp.cuda.Device().synchronize()
        print(f"  one step's graph replayed: {(time.perf_counter() - t0):.3f} ms of device time a step "
              f"({g.nodes_per_step} kernel nodes)", flush=True)
