"""#54: a cProfile of a run's loop thread inside chosen parts only (the block measures and
their starts, the snapshots' writes, the steps' advance), for INPUT with method auto, no
time error, STEPS steps, populations every EVERY, through tdse.simulate, once in a new
process: which calls under those parts take the loop's host time.

    python benchmarks/archive/loop_prof.py INPUT STEPS EVERY [BACKEND [PART ...]]
    (PART: measure, start, snapshots, advance, save; default all)
"""
import cProfile
import functools
import pstats
import sys
import tempfile
import threading
import warnings

import tdse
from tdse.numerics import graphs
from tdse.run import rows, sinks

path, steps, every = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
backend = sys.argv[4] if len(sys.argv) > 4 else "cupy"
parts = set(sys.argv[5:]) or {"measure", "start", "snapshots", "advance", "save"}
warnings.simplefilter("ignore")
cfg = tdse.load_config(path)
cfg = (cfg.with_value("propagator.method", "auto").with_value("propagator.time_error", "none")
       .with_value("time.t_end", steps * cfg.time.dt).with_value("output.populations_every", every))
prof, depth, main = cProfile.Profile(), [0], threading.main_thread().ident


def wrap(owner, name):
    real = getattr(owner, name)

    @functools.wraps(real)
    def inside(*a, **k):
        if threading.get_ident() != main:
            return real(*a, **k)
        depth[0] += 1
        if depth[0] == 1:
            prof.enable()
        try:
            return real(*a, **k)
        finally:
            depth[0] -= 1
            if depth[0] == 0:
                prof.disable()
    setattr(owner, name, inside)


table = {"measure": (rows._BlockRows, "_measure"), "start": (rows._BlockRows, "start"),
         "snapshots": (sinks.Snapshots, "_finish_copied"), "advance": (graphs.GraphStep, "advance"),
         "save": (rows.Observables, "save")}
for p in parts:
    wrap(*table[p])
tdse.simulate(cfg, backend=backend, out=tempfile.mkdtemp(), force=True)
print(f"# {path}: {steps} steps, populations every {every}, {backend}; parts {sorted(parts)}")
st = pstats.Stats(prof)
st.sort_stats("tottime").print_stats(25)
st.sort_stats("cumtime").print_stats(25)
