"""#56 probe: where the estimate's time goes on one GPU (laser drive, atom_hhg 1000 steps with a snapshot every 50): run seconds, the stepping alone (base against estimating stepper, e read at each save point), then cProfile.  PYTHONPATH=. python benchmarks/archive/estimate_gpu_profile.py"""
import cProfile, pstats, time, sys
import numpy as np, cupy as cp
import tdse
from benchmarks import drives
from tdse.numerics.adaptive import EstimatingStepper
cases = {"laser": drives.make("laser", np.random.default_rng(56)), "atom_hhg": tdse.load_config("inputs/atom_hhg.toml")}
cases["atom_hhg"] = cases["atom_hhg"].with_value("time.t_end", 1000 * cases["atom_hhg"].time.dt).with_value("output.every", 50)
for name, cfg in cases.items():
    for rep in range(3):
        for te in ("none", "estimate"):
            r = tdse.simulate(cfg.with_value("propagator.time_error", te), backend="cupy")
            print(name, te, f"{r.seconds:.4f} s", flush=True)
    # stepping alone: the base stepper against the estimating one, 3 times each
    plan = tdse.prepare(cfg, backend="cupy")
    psi0 = cp.asarray(plan.psi0, dtype=complex)
    S = cfg.time.steps
    every = cfg.output.every
    for rep in range(3):
        st = plan.stepper(); cp.cuda.Device().synchronize(); t = time.perf_counter()
        X = psi0
        for j in range(0, S, every):
            X = st.advance(X, j, min(S, j + every))
        cp.cuda.Device().synchronize(); a = time.perf_counter() - t
        es = EstimatingStepper(cfg, plan.stepper, cp); cp.cuda.Device().synchronize(); t = time.perf_counter()
        X = psi0
        for j in range(0, S, every):
            X = es.advance(X, j, min(S, j + every)); es.e
        cp.cuda.Device().synchronize(); b = time.perf_counter() - t
        print(name, "stepping alone: base", f"{a:.4f}", "estimating", f"{b:.4f}", f"x{b / a:.2f}", flush=True)
    pr = cProfile.Profile(); pr.enable(); tdse.simulate(cfg.with_value("propagator.time_error", "estimate"), backend="cupy"); pr.disable()
    pstats.Stats(pr).sort_stats("tottime").print_stats(15)
    pstats.Stats(pr).sort_stats("cumtime").print_stats("tdse|mgemm", 40)
