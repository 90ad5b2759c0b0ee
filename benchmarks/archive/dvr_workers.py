"""#59 item 5: H(t)'s pairs of a DVR grid with populations every step (one call a task in
the look-ahead) in worker processes against in the loop, on this CPU: h2plus_moving's
molecule and the time-error suite's ramped drive at N points, S steps, `tdse.simulate`
with run.eigen_workers "on" / "off" alternating (ROUNDS each, medians of the loop's
seconds), and auto's choice; the pairs' wait and seconds as the run states them.

    python benchmarks/archive/dvr_workers.py S N[,N...] [ROUNDS]
"""
import dataclasses
import os
import sys
import time
import warnings

import numpy as np

import tdse
from benchmarks import drives
from tdse import config as cfgmod
from tdse.run.eigenpairs import lookahead_wanted, seconds_guess

warnings.simplefilter("ignore")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
S, ns = int(sys.argv[1]), [int(v) for v in sys.argv[2].split(",")]
rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 3
base = cfgmod.load(os.path.join(ROOT, "inputs", "h2plus_moving.toml"))
w = base.grid.x_max - base.grid.x_min
rng = np.random.default_rng(56)
drives.make("abrupt", rng)
ramped = drives.make("ramped", rng)
print(f"# python benchmarks/archive/dvr_workers.py {' '.join(sys.argv[1:])} "
      f"({time.strftime('%Y-%m-%dT%H:%M', time.gmtime())}, {os.cpu_count()} CPUs)")
print("| input | N | steps | guess s | auto | on: loop s | wait s | off: loop s | pairs s |")
print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
cases = [("ramped", ramped.with_value("time.t_end", S * ramped.time.dt))]
for n in ns:
    c = dataclasses.replace(base, grid=dataclasses.replace(base.grid, dx=w / n, stencil="dvr"))
    cases.append((f"h2plus_moving N={n}", c.with_value("time.t_end", S * c.time.dt)))
for name, cfg in cases:
    cfg = (cfg.with_value("propagator.method", "chebyshev").with_value("propagator.time_error", "none")
           .with_value("output.populations_every", 1))
    got = {"on": [], "off": []}
    for k in range(rounds + 1):
        for mode in got:
            r = tdse.simulate(cfg.with_value("run.eigen_workers", mode), backend="numpy")
            if k:
                got[mode].append((r.seconds, r.attrs["eigenpairs_wait_seconds"], r.attrs["eigenpairs_seconds"]))
    med = {m: np.median(np.array(v), axis=0) for m, v in got.items()}
    plan_backend = tdse.prepare(cfg, backend="numpy", check_resolution=False).backend
    print(f"| {name} | {cfg.grid.n} | {cfg.time.steps} | {seconds_guess(cfg):.2f} | "
          f"{'on' if lookahead_wanted(cfg, plan_backend) else 'off'} | {med['on'][0]:.3f} | "
          f"{med['on'][1]:.3f} | {med['off'][0]:.3f} | {med['off'][2]:.3f} |", flush=True)
