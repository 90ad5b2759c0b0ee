"""#54 item 2: runs one after another in one process (a notebook's, a script's), each
with its own look-ahead for H(t)'s populations: the wall of each ``tdse.simulate`` and its
loop's seconds, for INPUT with method auto, no time error, STEPS steps, populations every
EVERY, the look-ahead's workers on (MODE: run.eigen_workers, default "on"; "auto" as a
user's run decides them).  The first run starts the workers' fork server (or spawns them); a
later run's workers start from it.

    python benchmarks/archive/second_run.py INPUT STEPS EVERY [BACKEND [RUNS [MODE]]]
"""
import sys
import tempfile
import time
import warnings

import tdse

path, steps, every = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
backend = sys.argv[4] if len(sys.argv) > 4 else "numpy"
runs = int(sys.argv[5]) if len(sys.argv) > 5 else 4
mode = sys.argv[6] if len(sys.argv) > 6 else "on"
warnings.simplefilter("ignore")
cfg = (tdse.load_config(path).with_value("propagator.method", "auto")
       .with_value("propagator.time_error", "none").with_value("run.eigen_workers", mode))
cfg = cfg.with_value("time.t_end", steps * cfg.time.dt).with_value("output.populations_every", every)
for r in range(runs):
    t0 = time.perf_counter()
    res = tdse.simulate(cfg, backend=backend, out=tempfile.mkdtemp(), force=True)
    wall = time.perf_counter() - t0
    a = res.attrs if hasattr(res, "attrs") else {}
    print(f"run {r}: wall {wall:.3f} s, loop {res.seconds:.3f} s, pairs' wait "
          f"{float(a.get('eigenpairs_wait_seconds', float('nan'))):.3f} s", flush=True)
