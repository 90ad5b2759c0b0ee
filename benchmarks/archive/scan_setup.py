"""#59 item 1: where a GPU scan's wall goes outside its batch's loop (atom_hhg, B members,
STEPS steps, one batch, in process, the second scan of the process): the scan's phases
(members, batch set-up, loop, collection, placing) and a cProfile of the whole scan, its
functions by cumulative time.  Usage: PYTHONPATH=. python scan_setup.py B STEPS"""
import cProfile
import pstats
import sys
import time

import numpy as np

import tdse
from tdse.config import with_values

B, steps = int(sys.argv[1]), int(sys.argv[2])
cfg = tdse.load_config("inputs/atom_hhg.toml").with_value("propagator.time_error", "none")
cfg = with_values(cfg, [("time.t_end", steps * cfg.time.dt)])
sets = {"field.E0": list(np.linspace(0.03, 0.09, B))}
tdse.scan(cfg, sets, backend="cupy", batch=B)
P = cProfile.Profile()
t = time.perf_counter()
P.enable()
r = tdse.scan(cfg, sets, backend="cupy", batch=B)
P.disable()
wall = time.perf_counter() - t
print(f"B = {B}, {steps} steps: wall {wall:.3f} s, scan seconds {r['seconds']:.3f}, loop {r['batch_seconds'][0]:.3f}")
print("phases:", {k: (np.round(v, 3).tolist() if isinstance(v, (list, np.ndarray)) else round(float(v), 3))
                  for k, v in r["phases"].items()})
pstats.Stats(P).sort_stats("cumulative").print_stats(45)
