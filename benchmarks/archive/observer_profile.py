"""cProfile of the observers' host time in one in-process `run()` (#23 item 3): the
functions of tdse.run.observers, tdse.run.snapshots and tdse.model.observables (and what
they call) by their own time, after a warm run (:func:`run_profile.profiled`).  H(t)'s
pairs in the loop (TDSE_EIGENPAIRS_AHEAD=0: the probe is a script); populations every
POP_EVERY steps.
python benchmarks/archive/observer_profile.py INPUT N STENCIL STEPS POP_EVERY BACKEND"""
import sys
import warnings

from run_profile import case, profiled      # the probes' case (this folder is on sys.path)

warnings.simplefilter("ignore")
cfg, plan = case(*sys.argv[1:7])
st, wall = profiled(plan)
print(f"{cfg.grid.n} {cfg.grid.stencil} {sys.argv[6]}: run() {wall:.3f} s under the profiler, "
      f"{cfg.time.steps} steps")
st.sort_stats("cumulative").print_stats(r"observers|snapshots|observables|loop", 25)
st.sort_stats("tottime").print_stats(20)
