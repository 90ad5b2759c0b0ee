"""#27: atom_hhg's bare stepping on one GPU with a whole exponential one cooperative kernel
(graphs._CHAIN) against a kernel a term (TDSE_CHEB_CHAIN=0): seconds, the graph's device
time a step, and the final psi's difference; python benchmarks/archive/chain_probe.py [input]"""
import os
import sys
import time

import cupy as cp
import numpy as np

import tdse
from tdse.numerics import graphs

args = [v for v in sys.argv[1:] if not v.startswith("--")]
name = args[0] if args else "inputs/atom_hhg.toml"
cfg = tdse.load_config(name).with_value("propagator.time_error", "none")
plan = tdse.prepare(cfg, backend="cupy", check_resolution=False)
reg = os.environ.get("TDSE_CHAIN_REG", "1")
print(f"{name}: N = {cfg.grid.n}, {cfg.time.steps} steps, method {plan.config.propagator.method}, "
      f"chain warps {graphs.CHAIN_WARPS}, registers {reg}")
finals = {}
for chain in ("1", "0", "1"):
    os.environ["TDSE_CHEB_CHAIN"] = chain
    st = plan.stepper()
    tdse.evolve(plan, cp.asarray(plan.psi0), stop=5, stepper=st)      # warm up, capture
    cp.cuda.Device().synchronize()
    t0 = time.perf_counter()
    out = tdse.evolve(plan, cp.asarray(plan.psi0), stepper=st)
    cp.cuda.Device().synchronize()
    bare = time.perf_counter() - t0
    finals[chain] = cp.asnumpy(out.psi)
    g = st.propagator.graph
    graph = next(iter(g.graphs.values()))
    cp.cuda.Device().synchronize()
    t0 = time.perf_counter()
    for _ in range(1000):
        graph.launch()
    cp.cuda.Device().synchronize()
    rep = time.perf_counter() - t0
    print(f"chain {chain} (coop {getattr(g, 'coop', None)}, grid {getattr(g, 'chain_grid', None)}): "
          f"bare {bare:.3f} s ({1e3 * bare / cfg.time.steps:.4f} ms a step), replayed "
          f"{rep:.4f} ms a step, {getattr(g, 'chain_kernel', None)}, {g.nodes_per_step} nodes, {len(g.graphs)} graphs", flush=True)
ref = finals["0"]
print("max |psi_chain - psi_terms| / max|psi| =", np.abs(finals["1"] - ref).max() / np.abs(ref).max())

if "--after-jax" in sys.argv:      # the same stepping once JAX holds the GPU beside CuPy
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    import jax.numpy as jnp
    (jnp.ones((500, 500)) @ jnp.ones(500)).block_until_ready()
    os.environ["TDSE_CHEB_CHAIN"] = "1"
    for _ in range(2):
        st = plan.stepper()
        tdse.evolve(plan, cp.asarray(plan.psi0), stop=5, stepper=st)
        cp.cuda.Device().synchronize()
        t0 = time.perf_counter()
        tdse.evolve(plan, cp.asarray(plan.psi0), stepper=st)
        cp.cuda.Device().synchronize()
        print(f"after JAX: chain bare {time.perf_counter() - t0:.3f} s", flush=True)
