"""#56 probe (benchmarks/archive): what the estimate's cost on one GPU is made of.  Per drive: the run without the
estimate, with it, and with one of its parts replaced by nothing (timing only, results
wrong): no local errors (block), no carrying of e, no per-step add of L; and with
snapshots 5x rarer (longer pieces).  Min of 3 of the loop's seconds (r.seconds)."""
import sys, time
import numpy as np
import tdse
from benchmarks import drives
from tdse.numerics import adaptive, local_error
backend = sys.argv[1] if len(sys.argv) > 1 else "cupy"     # PYTHONPATH=. python benchmarks/archive/est_attrib.py [cupy|numpy]
rng = np.random.default_rng(56)
cases = {k: drives.make(k, rng) for k in ("abrupt", "ramped", "laser", "fast")}
a = tdse.load_config("inputs/atom_hhg.toml")
cases["atom_hhg"] = a.with_value("time.t_end", 1000 * a.time.dt).with_value("output.every", 50)
orig_block, orig_carried, orig_add = local_error.LocalError.block, adaptive.EstimatingStepper._carried, adaptive._add_to
def no_block(self, U, j0, dt):
    return self.xp.zeros_like(U)
def no_carry(self, n, e, k0, Ls):
    return e
def no_add(L, Y):
    pass
variants = {"none": {}, "estimate": {}, "no_block": {"block": no_block}, "no_carry": {"carry": no_carry},
            "no_add": {"add": no_add}, "every_x5": {}}
print(f"| drive | N | steps | every | " + " | ".join(variants) + " |")
print("|" + "---|" * (4 + len(variants)))
for name, cfg in cases.items():
    best = {}
    for rep in range(3):
        for v, patch in variants.items():
            local_error.LocalError.block = patch.get("block", orig_block)
            adaptive.EstimatingStepper._carried = patch.get("carry", orig_carried)
            adaptive._add_to = patch.get("add", orig_add)
            c = cfg.with_value("propagator.time_error", "none" if v == "none" else "estimate")
            if v == "every_x5":
                c = c.with_value("output.every", 5 * cfg.output.every)
            r = tdse.simulate(c, backend=backend)
            best[v] = min(best.get(v, 1e9), r.seconds)
    local_error.LocalError.block, adaptive.EstimatingStepper._carried, adaptive._add_to = orig_block, orig_carried, orig_add
    b = best["none"]
    print(f"| {name} | {cfg.grid.n} | {cfg.time.steps} | {cfg.output.every} | " +
          " | ".join(f"{best[v]*1e3:.1f} ms (x{best[v]/b:.2f})" for v in variants) + " |", flush=True)
