"""#54: what the look-ahead's worker costs a command-line run on this CPU, apart from the
pairs it computes: `tdse run` walls (new processes, alternating, ROUNDS rounds) of
h2plus_moving's molecule at N = 256 (STENCIL-point, Chebyshev, no time error, observables
every step, 8000 steps) with populations at the ends only (no worker: "auto"), at the ends
with run.eigen_workers = "on" (the worker started, idle but for two calls, ended), and
every 10 steps with it on.

    python benchmarks/archive/worker_presence.py STENCIL ROUNDS
"""
import dataclasses
import os
import subprocess
import sys
import tempfile
import time

from tdse import config as cfgmod

base = cfgmod.load(os.path.join(os.path.dirname(__file__), "..", "..", "inputs", "h2plus_moving.toml"))
w = base.grid.x_max - base.grid.x_min
S, st, rounds = 8000, int(sys.argv[1]), int(sys.argv[2])
cfg = dataclasses.replace(base, grid=dataclasses.replace(base.grid, dx=w / 256, stencil=st))
cfg = (cfg.with_value("propagator.method", "chebyshev").with_value("propagator.time_error", "none")
       .with_value("time.t_end", S * cfg.time.dt).with_value("output.observables_every", 1))
cases = {"ends": cfg.with_value("output.populations_every", S),
         "ends, worker on": cfg.with_value("output.populations_every", S).with_value("run.eigen_workers", "on"),
         "every 10, worker on": cfg.with_value("output.populations_every", 10).with_value("run.eigen_workers", "on")}
d, res = tempfile.mkdtemp(), {}
for _ in range(rounds):
    for name, c in cases.items():
        p = os.path.join(d, "in.toml")
        with open(p, "w") as f:
            f.write(cfgmod.to_toml(c))
        t = time.perf_counter()
        subprocess.run([sys.executable, "-m", "tdse", "run", p, "--out", d, "--backend", "numpy", "-q",
                        "--no-plots", "--force", "--yes", "--allow-inaccurate"], check=True, capture_output=True)
        res.setdefault(name, []).append(time.perf_counter() - t)
print(f"# {S} steps, {st}-point, N = 256, {rounds} rounds alternating: CLI wall s")
for k, v in res.items():
    print(f"{k:22s} median {sorted(v)[len(v) // 2]:.3f}  runs {' '.join(f'{x:.3f}' for x in v)}")
