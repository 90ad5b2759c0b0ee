"""What each observer of a run adds to its steps, in process (#23 item 3): the evolve loop
bare, then with each observer alone, then with all (as `tdse run` has them), the device
drained at the end; median of 3.
python benchmarks/archive/observer_cost.py INPUT N STENCIL STEPS POP_EVERY BACKEND"""
import os
import sys
import tempfile
import time
import warnings

import numpy as np

from run_profile import case      # the probes' case (this folder is on sys.path)

from tdse.model.potential import total
from tdse.run.loop import evolve
from tdse.run.observers import Observables, Progress, Snapshots
from tdse.run.snapshots import SnapshotWriter

warnings.simplefilter("ignore")
backend = sys.argv[6]
cfg, plan = case(*sys.argv[1:7])
xp = plan.backend.xp
K = cfg.output.populations
d = tempfile.mkdtemp()


def sync():
    if xp is not np:
        xp.cuda.Device().synchronize()


def once(make):
    wr = SnapshotWriter(os.path.join(d, "f.h5"), config=cfg, x=plan.x,
                        v0=total(cfg.potential, plan.x, 0.0), energies=plan.energies[:K],
                        phi=plan.states[:K], attrs={}, force=True)
    obs = make(wr)
    st_ = plan.stepper()
    psi = xp.asarray(plan.psi0)
    sync()
    t0 = time.perf_counter()
    evolve(plan, psi, obs, stepper=st_)
    sync()
    dt = time.perf_counter() - t0
    wr.close(True)
    return dt


cases = {"bare": lambda w: [],
         "progress": lambda w: [Progress(cfg.time.steps, disable=True)],
         "snapshots": lambda w: [Snapshots(plan, w)],
         "observables": lambda w: [Observables(plan, w)],
         "all": lambda w: [Observables(plan, w), Snapshots(plan, w), Progress(cfg.time.steps, disable=True)]}
once(cases["all"])          # warm
res = {k: float(np.median([once(f) for _ in range(3)])) for k, f in cases.items()}
b = res["bare"]
if os.environ.get("PROFILE"):         # where the observables' time goes (host side)
    import cProfile
    import pstats
    cProfile.run("once(cases['observables'])", "/tmp/obs.prof")
    pstats.Stats("/tmp/obs.prof").sort_stats("tottime").print_stats(25)
print(f"{cfg.grid.n} {cfg.grid.stencil} pops {cfg.output.populations_interval} {backend}: " +
      " ".join(f"{k} {v:.3f}s ({v / b:.2f})" for k, v in res.items()))
