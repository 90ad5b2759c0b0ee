"""#27: where a single run's host time goes on a GPU (cProfile of the bare evolve loop of
atom_hhg, graphs on), and the loop's wall with and without the profiler;
python benchmarks/archive/step_host_profile.py [input]"""
import cProfile
import pstats
import sys
import time

import cupy as cp

import tdse

name = sys.argv[1] if len(sys.argv) > 1 else "inputs/atom_hhg.toml"
cfg = tdse.load_config(name).with_value("propagator.time_error", "none")
plan = tdse.prepare(cfg, backend="cupy", check_resolution=False)
st = plan.stepper()
tdse.evolve(plan, cp.asarray(plan.psi0), stepper=st)          # every graph captured
for _ in range(2):
    cp.cuda.Device().synchronize()
    t0 = time.perf_counter()
    tdse.evolve(plan, cp.asarray(plan.psi0), stepper=st)
    cp.cuda.Device().synchronize()
    print(f"bare {time.perf_counter() - t0:.3f} s", flush=True)
pr = cProfile.Profile()
pr.enable()
tdse.evolve(plan, cp.asarray(plan.psi0), stepper=st)
cp.cuda.Device().synchronize()
pr.disable()
pstats.Stats(pr).sort_stats("tottime").print_stats(22)
