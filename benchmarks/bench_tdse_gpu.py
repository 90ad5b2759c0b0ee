"""Step time of the TDSE propagator on 1, 2, 4 GPUs for inputs/h2plus_moving_large.toml.

One step = build H(t) on GPU 0, U = exp(-i H dt) (mgemm.expm, column bands over the
GPUs when G > 1), psi <- U psi.  Median over ``--steps`` timed steps after 2 warm-up
steps (each step ends with a synchronisation, as U psi is summed on GPU 0).

    python benchmarks/bench_tdse_gpu.py --gpus 1 2 4 --steps 5 [--out DIR]
"""
import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from common import save  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--input", default="inputs/h2plus_moving_large.toml")
    ap.add_argument("--gpus", type=int, nargs="+", default=[1, 2, 4])
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    import cupy as cp
    from tdse import config as cfgmod
    from tdse.propagate import Propagator, precheck, step_gemm_opts
    cfg = cfgmod.load(a.input)
    pc = precheck(cfg)
    rows = []
    for g in a.gpus:
        opts = step_gemm_opts("cupy", list(range(g)))
        with cp.cuda.Device(0):
            prop = Propagator(cfg, pc.plan, cp, opts)
            rng = np.random.default_rng(0)
            psi = cp.asarray(rng.standard_normal(cfg.grid.n) + 1j * rng.standard_normal(cfg.grid.n))
            ts = []
            for j in range(2 + a.steps):
                t0 = time.perf_counter()
                psi = prop.step(psi, j)
                for d in range(g):
                    cp.cuda.Device(d).synchronize()
                ts.append(time.perf_counter() - t0)
        rows.append({"input": a.input, "n": cfg.grid.n, "gpus": g, "plan": pc.plan.as_dict(),
                     "step_seconds": float(np.median(ts[2:])), "all_step_seconds": ts})
        print(f"N={cfg.grid.n} G={g}: {rows[-1]['step_seconds']:.3f} s/step "
              f"({pc.plan.products} real GEMMs, {pc.plan.squarings} squarings)", flush=True)
        cp.get_default_memory_pool().free_all_blocks()
    base = rows[0]["step_seconds"]
    for r in rows:
        r["speedup_vs_first"] = base / r["step_seconds"]
    print("saved", save("tdse_gpu", {"rows": rows}, a.out))


if __name__ == "__main__":
    main()
