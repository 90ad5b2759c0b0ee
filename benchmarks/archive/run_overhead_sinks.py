"""#54: which sink costs the GPU 3-point run's loop its excess over the bare step -- CLI runs of
one plan (h2plus_moving_large at N = 8192, 150000 steps) with one output cadence changed at a time
(the loop clock: the file's wall_seconds).  Usage: python benchmarks/archive/run_overhead_sinks.py STEPS BACKEND"""
import dataclasses, json, os, sys, tempfile, time
import numpy as np
sys.path.insert(0, ".")
import h5py
import tdse
from tdse import config as cfgmod
from benchmarks import suites
S = int(sys.argv[1]) if len(sys.argv) > 1 else 150000
backend = sys.argv[2] if len(sys.argv) > 2 else "cupy"
base = cfgmod.load("inputs/h2plus_moving_large.toml")
width = base.grid.x_max - base.grid.x_min
cfg = dataclasses.replace(base, grid=dataclasses.replace(base.grid, dx=width / 8192, stencil=3))
cfg = cfg.with_value("propagator.method", "auto").with_value("propagator.time_error", "none") \
    .with_value("time.t_end", S * cfg.time.dt).with_value("output.populations_every", 50)
open(os.environ.get("OUT", "/tmp") + "/ovh.toml", "w").write(cfgmod.to_toml(cfg))
plan = tdse.prepare(cfg, backend=backend, check_resolution=False)
bare = [suites._bare_steps(plan, S - 2)[0] for _ in range(2)]
print(f"bare step {np.median(bare)*1e6:.2f} us", flush=True)
variants = {"as_benchmarked": cfg,
            "no_snapshots": cfg.with_value("output.every", S),
            "obs_every_50": cfg.with_value("output.observables_every", 50),
            "obs_every_50_no_snap": cfg.with_value("output.observables_every", 50).with_value("output.every", S),
            "no_populations": cfg.with_value("output.populations_every", S - S % 1),
            "bare_ish": cfg.with_value("output.populations_every", S).with_value("output.observables_every", S).with_value("output.every", S)}
out = {}
with tempfile.TemporaryDirectory() as d:
    for rep in range(int(os.environ.get('REPS', 2))):
        for name, c in variants.items():
            try:
                c.validate() if hasattr(c, "validate") else None
            except Exception as e:
                print(name, e); continue
            p = os.path.join(d, "in.toml")
            open(p, "w").write(cfgmod.to_toml(c))
            f = os.path.join(d, f"{c.name}.h5")
            if os.path.exists(f):
                os.remove(f)
            try:
                wall, attrs, ph = suites._timed_run(["run", p, "--out", d, "--backend", backend, "--quiet",
                                                      "--no-plots", "--force", "--yes", "--allow-inaccurate"], f)
            except Exception as e:
                print(name, "failed", str(e)[-300:]); continue
            loop = float(attrs["wall_seconds"])
            out.setdefault(name, []).append({"wall": wall, "loop": loop, "phases": ph,
                                             "wait": float(attrs.get("eigenpairs_wait_seconds", 0))})
            print(f"{name:24s} wall {wall:6.2f} loop {loop:6.3f} loop/bare {loop/(S*np.median(bare)):.3f} "
                  f"pairs wait {float(attrs.get('eigenpairs_wait_seconds', 0)):.3f}", flush=True)
print(json.dumps({"bare": bare, "out": out}, indent=1), file=open(os.environ.get("OUT", "/tmp") + "/ovh_probe.json", "w"))
