"""#56 probe: the estimating steps' parts on one GPU, each synchronised, best of 3 (us a step):
the run's steps alone, the estimating steps, the block estimate alone, the carrier alone
(with its adds), in advances of 100 steps.  python benchmarks/archive/estimate_split.py"""
import time, sys
import numpy as np, cupy as cp
import tdse
import tdse.numerics.adaptive as ad
from benchmarks import drives
K, SAVE = 1000, 100
def sync(): cp.cuda.Device().synchronize()
def best(fn, reps=3):
    fn(); b = 1e9
    for _ in range(reps):
        sync(); t = time.perf_counter(); fn(); sync(); b = min(b, time.perf_counter() - t)
    return b / K * 1e6
cases = {"atom_hhg": tdse.load_config("inputs/atom_hhg.toml"), "laser": drives.make("laser", np.random.default_rng(56))}
print("| input | save every | base | estimating | block alone | carrier alone | carrier without adds | host of estimating |")
for name, cfg in cases.items():
    cfg = cfg.with_value("time.t_end", K * cfg.time.dt).with_value("propagator.time_error", "estimate")
    plan = tdse.prepare(cfg, backend="cupy")
    psi0 = cp.asarray(plan.psi0, dtype=complex)
    for save in (SAVE, 10):
        st = plan.stepper()
        def base():
            x = psi0
            for j in range(0, K, save): x = st.advance(x, j, j + save)
        es = ad.EstimatingStepper(cfg, plan.stepper, cp)
        def est():
            es.e = None; x = psi0
            for j in range(0, K, save): x = es.advance(x, j, j + save)
        host = []
        def est_host():
            es.e = None; x = psi0; t = time.perf_counter()
            for j in range(0, K, save): x = es.advance(x, j, j + save)
            host.append(time.perf_counter() - t)
        dt = cfg.time.dt
        S = min(save, ad.PIECE_STEPS)
        U = cp.asarray(np.tile(plan.psi0, (S, 1)).astype(complex))
        def block():
            for j in range(0, K, S): es.local.block(U, j, dt)
        L = cp.asarray(np.tile(plan.psi0, (S, 1)).astype(complex)) * 1e-9
        car = es._carrier(1)
        def carry():
            e = cp.zeros_like(psi0)
            for j in range(0, K, S):
                e = car.advance(e, j, j + S, taps={k + 1: [lambda Y, r=L[k - j]: Y.__iadd__(r)] for k in range(j, j + S)})
        def carry_bare():
            e = cp.zeros_like(psi0)
            for j in range(0, K, S):
                e = car.advance(e, j, j + S)
        b, e_, bl, c, cb = best(base), best(est), best(block), best(carry), best(carry_bare)
        sync(); est_host(); sync()
        print(f"| {name} | {save} | {b:.1f} | {e_:.1f} | {bl:.1f} | {c:.1f} | {cb:.1f} | {host[-1] / K * 1e6:.1f} |", flush=True)
