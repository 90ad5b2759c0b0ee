"""Where an estimating step's time goes on one GPU (#56: time_error = "estimate"): the base graph step, the whole EstimatingStepper step, the letters on the host, LocalError.parts / vector, the estimate's graph replay alone and the carrier's midpoint step, each over 1000 steps (best of 3, synchronised).  python benchmarks/archive/estimate_parts.py inputs/atom_hhg.toml (OUT: where its JSON goes)."""
import time, json, sys, os
import numpy as np, cupy as cp
import tdse
from tdse.config import load
from tdse.numerics.adaptive import EstimatingStepper
inp = sys.argv[1] if len(sys.argv) > 1 else "inputs/atom_hhg.toml"
cfg = load(inp)
plan = tdse.prepare(cfg, backend="cupy")
cfg = plan.config
print(cfg.propagator, cfg.grid.n)
K = 1000
def sync(): cp.cuda.Device().synchronize()
def timed(fn, label, reps=3):
    best = 1e9
    for _ in range(reps):
        sync(); t0 = time.perf_counter(); fn(); sync(); best = min(best, time.perf_counter() - t0)
    print(f"{label:40s} {best / K * 1e6:9.1f} us/step"); return best / K * 1e6
rows = {}
psi0 = cp.asarray(plan.psi0)
st = plan.stepper()
def base():
    x = psi0
    for j in range(K): x = st.step(x, j)
rows["base step"] = timed(base, "base step (graph)")
es = EstimatingStepper(cfg, plan.stepper, cp)
def est_all():
    es.e = None; x = psi0
    for j in range(K): x = es.step(x, j)
rows["estimating step"] = timed(est_all, "estimating step (all)")
loc = es.local; dt = cfg.time.dt
def letters():
    for j in range(K): loc.letters(j * dt, dt)
rows["letters (host)"] = timed(letters, "letters (host only)")
def parts():
    for j in range(K): loc.parts(psi0, j * dt, dt)
rows["parts (graph)"] = timed(parts, "parts (letters+graph)")
def vector():
    for j in range(K): loc.vector(psi0, j * dt, dt)
rows["vector"] = timed(vector, "vector (parts + sum)")
g = next(iter(loc._graphs.values()))
def replay():
    for j in range(K): g["graph"].launch()
rows["graph replay"] = timed(replay, "estimate graph replay only")
car = es._carrier(1)
def carry():
    e = psi0
    for j in range(K): e = car.step(e, j)
rows["carrier step"] = timed(carry, "carrier step (midpoint cheb 1e-6)")
print("carrier terms", car.cheb_terms, "base terms", st.cheb_terms)
# nodes in the estimate graph
try:
    import cupy.cuda.graph
    print("suffixes", len(loc._suffixes), "products", loc.products(), "orders", list(loc.terms))
except Exception as ex: print(ex)
json.dump(rows, open(os.path.join(os.environ.get("OUT", "."), "probe_est.json"), "w"), indent=1)
