"""#54: where a run's main process spends CPU, thread by thread, with H(t)'s populations every
P steps (the look-ahead's results arriving) against at its ends only.  In-process runs of
h2plus_moving_large's molecule at N points (3-point, Chebyshev, no error bar), the run's loop
from its file (wall_seconds); each thread's CPU from /proc/self/task/<tid>/schedstat (ns),
named from threading.enumerate() (the executor's management thread unpickles the workers'
results while the loop's thread launches steps: both want the GIL).
Usage: python thread_cpu.py BACKEND N STEPS EVERY REPEAT [CASE ...]; a CASE is "every"
(populations every EVERY steps), "workers2" (the same with the look-ahead's processes at most
2: tdse.run.eigenpairs.GPU_WORKERS / WORKERS), or "ends" (at the run's ends only);
default "every ends"."""
import dataclasses, os, sys, tempfile, threading, time
import numpy as np
sys.path.insert(0, os.getcwd())
from tdse import config as cfgmod
from tdse.run.driver import run
from tdse.run.runfile import readable_attrs
import h5py

backend, N, S, P, R = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
base = cfgmod.load("inputs/h2plus_moving_large.toml")
w = base.grid.x_max - base.grid.x_min
cfg = dataclasses.replace(base, grid=dataclasses.replace(base.grid, dx=w / N, stencil=3))
cfg = (cfg.with_value("propagator.method", "chebyshev").with_value("propagator.time_error", "none")
       .with_value("propagator.scheme", "midpoint").with_value("time.t_end", S * cfg.time.dt))


def cpu():
    out = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            out[int(tid)] = int(open(f"/proc/self/task/{tid}/schedstat").read().split()[0]) * 1e-9
        except OSError:
            pass
    return out


def names():
    return {t.native_id: t.name for t in threading.enumerate()}


def one(c):
    d = tempfile.mkdtemp()
    a = cpu()
    seen = {}
    stop = threading.Event()

    def watch():          # the names of threads that come and go during the run
        while not stop.is_set():
            seen.update(names()); time.sleep(0.05)
    th = threading.Thread(target=watch, name="probe-watch", daemon=True); th.start()
    t0 = time.perf_counter()
    r = run(c, d, backend=backend, force=True, allow_inaccurate=True)
    wall = time.perf_counter() - t0
    stop.set(); th.join()
    b = cpu()
    seen.update(names())
    with h5py.File(r.path) as f:
        at = readable_attrs(f)
    per = {}
    for tid, v in b.items():
        nm = seen.get(tid, f"tid{tid}")
        if nm == "probe-watch":
            continue
        nm = "loop (main)" if nm == "MainThread" else nm.split(" ")[0] if nm.startswith("Thread") else nm
        per[nm] = per.get(nm, 0.0) + v - a.get(tid, 0.0)
    return float(at["wall_seconds"]), wall, per, float(at.get("eigenpairs_wait_seconds", 0.0))


from tdse.run import eigenpairs

every, ends = cfg.with_value("output.populations_every", P), cfg.with_value("output.populations_every", S)
CASES = {"every": every, "workers2": every, "ends": ends}
cases = sys.argv[6:] or ["every", "ends"]
one(cfg.with_value("time.t_end", 200 * cfg.time.dt))          # warm: imports, graphs, workers
res = {k: [] for k in cases}
for _ in range(R):
    for k in cases:
        most = (eigenpairs.GPU_WORKERS, eigenpairs.WORKERS)
        if k == "workers2":
            eigenpairs.GPU_WORKERS = eigenpairs.WORKERS = 2
        try:
            res[k].append(one(CASES[k]))
        finally:
            eigenpairs.GPU_WORKERS, eigenpairs.WORKERS = most
print(f"{backend} N = {N}, {S} steps, 3-point Chebyshev midpoint; medians of {R}")
for k, rows in res.items():
    loop = np.median([r[0] for r in rows]); wall = np.median([r[1] for r in rows])
    keys = sorted({n for r in rows for n in r[2]})
    cpu_s = {n: np.median([r[2].get(n, 0.0) for r in rows]) for n in keys}
    print(f"{k}: loop {loop:.3f} s ({loop / S * 1e6:.2f} us/step), run {wall:.3f} s, wait {np.median([r[3] for r in rows]):.3f} s")
    for n, v in sorted(cpu_s.items(), key=lambda kv: -kv[1]):
        if v > 0.002:
            print(f"    {n:40s} {v:.3f} s CPU")
