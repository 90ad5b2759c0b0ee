"""#54: a run's loop against its bare step in one process, with the sinks' cadences changed
one at a time: the snapshots (output.every) and H(t)'s populations (output.populations_every)
at the input's, or only at the run's end -- which sink's work keeps the loop over the bare
step.  ``tdse.simulate`` (a file written), its ``evolve`` timed; the bare loop of the same
plan before and after each round; ROUNDS rounds alternating, after a warm-up run.

    python benchmarks/archive/loop_cadence.py INPUT STEPS EVERY POP_EVERY [BACKEND [ROUNDS]]
"""
import sys
import tempfile
import time
import warnings

import numpy as np

import tdse
import tdse.run.driver as driver

path, steps, every, pop = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
backend = sys.argv[5] if len(sys.argv) > 5 else "cupy"
rounds = int(sys.argv[6]) if len(sys.argv) > 6 else 3
cli = sys.argv[7:8] == ["cli"]
warnings.simplefilter("ignore")
base = tdse.load_config(path)
cfg = (base.with_value("propagator.method", "auto").with_value("propagator.time_error", "none")
       .with_value("time.t_end", steps * base.time.dt))
real, walls = driver.evolve, []


def timed(*a, **k):
    t0 = time.perf_counter()
    try:
        return real(*a, **k)
    finally:
        walls.append(time.perf_counter() - t0)


driver.evolve = timed
plan = tdse.prepare(cfg.with_value("output.every", every), backend=backend, check_resolution=False)
xp = plan.backend.xp


def sync():
    if xp is not np:
        xp.cuda.Device().synchronize()


def bare():
    from tdse.run.loop import _settle
    st = plan.stepper()
    with plan.backend.limit():
        s = tdse.evolve(plan, plan.psi0, stop=2, stepper=st)
        _settle(plan, steps)
        sync()
        t0 = time.perf_counter()
        tdse.evolve(plan, s.psi, start=2, stop=steps, stepper=st, settle=False)
        sync()
    return (time.perf_counter() - t0) / (steps - 2)


cases = {"input": (every, pop), "no_snapshots": (steps, pop), "no_populations": (every, steps),
         "neither": (steps, steps)}


def run(ev, pe):
    c = cfg.with_value("output.every", ev).with_value("output.populations_every", pe)
    d = tempfile.mkdtemp()
    if not cli:
        tdse.simulate(c, backend=backend, out=d, force=True)
        return walls[-1] / steps
    import os
    import subprocess

    import h5py

    from tdse import config as cfgmod
    with open(os.path.join(d, "in.toml"), "w") as f:
        f.write(cfgmod.to_toml(c))
    subprocess.run([sys.executable, "-m", "tdse", "run", os.path.join(d, "in.toml"), "--out", d,
                    "--backend", backend, "--quiet", "--no-plots", "--force", "--yes",
                    "--allow-inaccurate"], check=True, capture_output=True)
    with h5py.File(os.path.join(d, f"{c.name}.h5"), "r") as f:
        return float(f.attrs["wall_seconds"]) / steps


run(every, pop)
got = {k: [] for k in cases}
bares = []
for r in range(rounds):
    bares.append(bare())
    for k, (ev, pe) in cases.items():
        got[k].append(run(ev, pe))
    bares.append(bare())
b = float(np.median(bares))
print(f"# {path}: {steps} steps, every {every}, populations every {pop}, {backend}"
      f"{' (tdse run processes, their loop clocks)' if cli else ''}; "
      f"bare {b * 1e6:.1f} us a step ({', '.join(f'{v * 1e6:.1f}' for v in bares)})")
for k, v in got.items():
    print(f"{k:15s} evolve {np.median(v) * 1e6:6.1f} us a step  x{np.median(v) / b:.3f}  "
          f"({', '.join(f'{x / b:.3f}' for x in v)})")
