"""Where a batched scan's step goes on a GPU (device probe, not a benchmark suite): the
stepper alone, the observables alone, the potentials, for B members of atom_hhg; prints
milliseconds per step.  python benchmarks/archive/scan_profile.py [B] [steps]"""
import sys
import time

import numpy as np

import cupy as cp

import tdse
from tdse.model.grid import points
from tdse.model.observables import BlockMeasure
from tdse.model import states
from tdse.numerics.stepper import BatchStepper

B = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
steps = int(sys.argv[2]) if len(sys.argv) > 2 else 100
cfg = tdse.load_config("inputs/atom_hhg.toml").with_value("propagator.time_error", "none")
cfgs = [cfg.with_value("field.E0", e) for e in np.linspace(0.02, 0.08, B)]
x = points(cfg.grid)
_, phi = states.eigenstates(cfg, 0.0, 4)
X0 = np.repeat(phi[0][:, None].astype(complex), B, axis=1)
st = BatchStepper(cfgs, cp)
m = BlockMeasure(cfgs, x, np.repeat(phi[None], B, axis=0), X0, cp)
X = cp.asarray(X0)


def timed(label, f, n):
    f(0)
    cp.cuda.Device().synchronize()
    t0 = time.perf_counter()
    for j in range(n):
        f(j)
    cp.cuda.Device().synchronize()
    print(f"{label:28s} {1e3 * (time.perf_counter() - t0) / n:8.3f} ms per step", flush=True)


state = {"X": X}
timed("step (2 exponentials)", lambda j: state.update(X=st.step(state["X"], j)), steps)
timed("observables (host=False)", lambda j: m(j * 0.1, state["X"], host=False), steps)
timed("potential total x2", lambda j: (st.potential.total(j * 0.1), st.potential.total(j * 0.1 + 0.05)), steps)
print("terms per step", st.cheb_terms / st.exponentials * 2)
from tdse.model.hamiltonian import BlockOperator
op = BlockOperator(cfg.grid, 0.5, st.potential.total(0.0), cp, 0.01, 0.0)
timed("one block operator", lambda j: op(state["X"]), steps)
T = cp.asarray(np.random.rand(cfg.grid.n, cfg.grid.n))
R = cp.asarray(np.random.rand(cfg.grid.n, 2 * B))
timed("one DGEMM N x N x 2B", lambda j: T @ R, steps)
