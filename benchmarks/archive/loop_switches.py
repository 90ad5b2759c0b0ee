"""#54: what the look-ahead's worker does to the loop's thread on the host: the loop thread's
CPU time (time.thread_time), its voluntary and involuntary context switches
(getrusage(RUSAGE_THREAD)) and its wall, with H(t)'s populations every P steps by the
look-ahead as shipped ("every"), with run.eigen_workers = "off" ("own": the loop computes
them), and at the run's ends only ("ends"); alternating, in-process runs.

    python benchmarks/archive/loop_switches.py BACKEND INPUT N STENCIL STEPS P REPEAT
"""
import dataclasses, os, resource, sys, tempfile, time
import numpy as np
sys.path.insert(0, os.getcwd())
from tdse import config as cfgmod
from tdse.run import driver

backend, path, N, st, S, P, R = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], int(sys.argv[5]), int(sys.argv[6]), int(sys.argv[7])
base = cfgmod.load(path)
w = base.grid.x_max - base.grid.x_min
cfg = dataclasses.replace(base, grid=dataclasses.replace(base.grid, dx=w / N, stencil=int(st) if st in "35" else st))
cfg = (cfg.with_value("propagator.method", "chebyshev").with_value("propagator.time_error", "none")
       .with_value("time.t_end", S * cfg.time.dt))
cases = {"ends": cfg.with_value("output.populations_every", S),
         "every": cfg.with_value("output.populations_every", P).with_value("run.eigen_workers", "on"),
         "own": cfg.with_value("output.populations_every", P).with_value("run.eigen_workers", "off")}
shipped = driver.evolve
seen = {}


def timed(*a, **k):
    r0, c0, w0 = resource.getrusage(resource.RUSAGE_THREAD), time.thread_time(), time.perf_counter()
    try:
        return shipped(*a, **k)
    finally:
        r1 = resource.getrusage(resource.RUSAGE_THREAD)
        seen.update(wall=time.perf_counter() - w0, cpu=time.thread_time() - c0,
                    vol=r1.ru_nvcsw - r0.ru_nvcsw, invol=r1.ru_nivcsw - r0.ru_nivcsw)


driver.evolve = timed
driver.run(cfg.with_value("time.t_end", 200 * cfg.time.dt), tempfile.mkdtemp(), backend=backend,
           force=True, allow_inaccurate=True)                        # warm
res = {k: [] for k in cases}
for _ in range(R):
    for k, c in cases.items():
        driver.run(c, tempfile.mkdtemp(), backend=backend, force=True, allow_inaccurate=True)
        res[k].append(dict(seen))
print(f"{backend} {os.path.basename(path)} N = {N}, {st}, {S} steps, populations every {P}; medians of {R}")
for k, rows in res.items():
    m = {q: float(np.median([r[q] for r in rows])) for q in ("wall", "cpu", "vol", "invol")}
    print(f"{k:6s} wall {m['wall']:.3f} s, the loop thread's CPU {m['cpu']:.3f} s, off CPU {m['wall'] - m['cpu']:.3f} s, "
          f"switches voluntary {m['vol']:.0f} involuntary {m['invol']:.0f} "
          f"(walls {' '.join('%.3f' % r['wall'] for r in rows)})")
