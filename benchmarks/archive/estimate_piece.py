"""#56 probe: atom_hhg (1000 steps) and the laser drive on one GPU, time_error none vs estimate,
the estimate's pieces of 8 .. 64 steps (best of 3 walls of tdse.simulate, warm); its first
calls also tried e on a stream of its own (removed).  python benchmarks/archive/estimate_piece.py"""
import sys, time
import numpy as np
import tdse
import tdse.numerics.adaptive as ad
from benchmarks import drives

def wall(cfg, reps=3):
    tdse.simulate(cfg, backend="cupy")
    best = 1e9
    for _ in range(reps):
        t = time.perf_counter(); tdse.simulate(cfg, backend="cupy"); best = min(best, time.perf_counter() - t)
    return best

cases = {"atom_hhg": tdse.load_config("inputs/atom_hhg.toml"), "laser": drives.make("laser", np.random.default_rng(56))}
cases["atom_hhg"] = cases["atom_hhg"].with_value("time.t_end", 1000 * cases["atom_hhg"].time.dt)
print("| input | variant | seconds | x none |")
for name, cfg in cases.items():
    none = wall(cfg.with_value("propagator.time_error", "none"))
    print(f"| {name} | none | {none:.3f} | 1.00 |", flush=True)
    est = cfg.with_value("propagator.time_error", "estimate")
    for piece in (8, 16, 32, 64):
        ad.PIECE_STEPS = piece
        w = wall(est)
        print(f"| {name} | piece {piece} | {w:.3f} | {w / none:.2f} |", flush=True)
    ad.PIECE_STEPS = 64
