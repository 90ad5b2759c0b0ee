"""#54: what H(t)'s populations cost a run's loop apart from computing their pairs.  Three
cases alternating in one process, each an in-process run (no error bar, plots off): the
populations at the run's ends only ("ends"), every P steps by the run's look-ahead as
shipped ("every"), and every P steps with their pairs computed before the run and looked
up by step ("given": the run's Lookahead answers from a table, no worker processes, no
hand-over of results -- what the loop's own populations work costs: the rows' uploads,
the amplitudes' products, their finish).  With CASES (after METHOD, comma-separated) also
"pipe" (every P, the results' pipe enlarged to 4 MB, F_SETPIPE_SZ: fewer reads of a
task's result, each a hand-over of the GIL between the pool's thread and the loop's) and
"swN" (every P with sys.setswitchinterval(N ms)), "null" (every P, the pairs from the
table, the look-ahead's tasks submitted as shipped but each returning at once: the pool's
hand-overs without the workers' work or results), "taskK" (every P as shipped with
eigenpairs.TASK_STEPS = K: fewer, larger tasks), "loadK" (at the ends only, beside K
processes computing the same tracker's windows without pause, BLAS on one thread: the
look-ahead's load on the host without its results), "small" (every P by the look-ahead
as shipped, but its workers return the energies alone -- the loop's pairs from the table:
the pool's work without the results' bytes), "file" (every P, the workers write a task's
states to a file under /dev/shm and return its name; the pool's thread reads it into the
pairs when the task is done, by one np.fromfile, which leaves the GIL during its read).  Prints each case's loop (the file's
wall_seconds) in us a step, medians of REPEAT.
With KEEP=1 in the environment this process's glibc malloc is set as a look-ahead worker's
(tdse.run.ahead_child.keep_memory: no fresh mapping a large array, freed memory kept).
Usage: python pairs_free.py BACKEND INPUT N STENCIL STEPS P REPEAT [METHOD (chebyshev)] [CASES]"""
import fcntl
import dataclasses, os, sys, tempfile, time
import numpy as np
sys.path.insert(0, os.getcwd())
import h5py
from tdse import config as cfgmod
from tdse.model.tracker import Tracker
from tdse.run import eigenpairs
from tdse.run.driver import run
from tdse.run.runfile import readable_attrs

backend, path, N, st, S, P, R = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], int(sys.argv[5]), int(sys.argv[6]), int(sys.argv[7])
base = cfgmod.load(path)
w = base.grid.x_max - base.grid.x_min
cfg = dataclasses.replace(base, grid=dataclasses.replace(base.grid, dx=w / N, stencil=int(st) if st in "35" else st))
method = sys.argv[8] if len(sys.argv) > 8 else "chebyshev"
cfg = (cfg.with_value("propagator.method", method).with_value("propagator.time_error", "none")
       .with_value("time.t_end", S * cfg.time.dt))
every, ends = cfg.with_value("output.populations_every", P).with_value("run.eigen_workers", os.environ.get("WORKERS", "auto")), cfg.with_value("output.populations_every", S)
given = every.with_value("run.eigen_workers", "off")
if os.environ.get("KEEP") == "1":
    from tdse.run.ahead_child import keep_memory
    print("keep_memory:", keep_memory())
TABLE = {}
t0 = time.perf_counter()
tr = Tracker(every, every.output.populations)
for s in sorted(set(range(0, S + 1, P)) | {S}):
    TABLE[s] = tr(s * cfg.time.dt)
print(f"{len(TABLE)} pairs computed before the runs in {time.perf_counter() - t0:.1f} s")
shipped = eigenpairs.Lookahead.__call__


SMALL = """from tdse.run import eigenpairs


def pairs(run, begin, times, into=None):
    out, seconds, said = eigenpairs._pairs(run, begin, times)
    return [(E, None) for E, _ in out], seconds, said


def null(run, begin, times, into=None):
    return [(None, None) for _ in times], 0.0, []


def pairs_file(run, begin, times, into=None):
    import os, uuid
    import numpy as np
    out, seconds, said = eigenpairs._pairs(run, begin, times)
    phi = np.stack([p for _, p in out])
    path = os.path.join(os.environ["PAIRS_DIR"], uuid.uuid4().hex)
    phi.tofile(path)
    return [[E, None] for E, _ in out] + [(path, phi.shape)], seconds, said
"""
os.environ["PAIRS_DIR"] = tempfile.mkdtemp(dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
import atexit, shutil
atexit.register(shutil.rmtree, os.environ["PAIRS_DIR"], True)   # (its empty folder had been left in /dev/shm)
FALLBACK = [0]


def load(f):
    try:
        pairs = f.result()[0]
    except BaseException:
        return
    if pairs and isinstance(pairs[-1], tuple):
        path, shape = pairs.pop()
        phi = np.fromfile(path).reshape(shape)
        os.remove(path)
        for i, p in enumerate(pairs):
            p[1] = phi[i]


submitted = eigenpairs.Workers.submit


def submit_file(self, fn, *args):
    f = submitted(self, fn, *args)
    f.add_done_callback(load)
    return f


def lookup_file(self, step, t):
    out = shipped(self, step, t)
    if out[1] is None:
        FALLBACK[0] += 1
        while out[1] is None:
            time.sleep(1e-5)
    return out
_dir = tempfile.mkdtemp()
with open(os.path.join(_dir, "pairs_free_small.py"), "w") as f:
    f.write(SMALL)
os.environ["PYTHONPATH"] = _dir + os.pathsep + os.environ.get("PYTHONPATH", "")
sys.path.insert(0, _dir)
import pairs_free_small
shipped_pairs = eigenpairs._pairs


def lookup_after(self, step, t):
    shipped(self, step, t)
    return TABLE[step]


def lookup(self, step, t):
    self.calls += 1
    return TABLE[step]


opened = eigenpairs.Workers.__init__
PIPE = []


def wider(self, *a, **k):
    opened(self, *a, **k)
    fd = self.pool._result_queue._reader.fileno()
    for size in (4 << 20, 1 << 20):
        try:
            PIPE.append(fcntl.fcntl(fd, 1031, size))       # F_SETPIPE_SZ
            break
        except OSError:
            continue


SPIN = """import dataclasses, os, sys
sys.path.insert(0, os.getcwd())
from threadpoolctl import threadpool_limits
threadpool_limits(1)
from tdse import config as cfgmod
from tdse.model.tracker import Tracker
path, N, st, P, S, seed = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
base = cfgmod.load(path)
w = base.grid.x_max - base.grid.x_min
cfg = dataclasses.replace(base, grid=dataclasses.replace(base.grid, dx=w / N, stencil=int(st) if st in "35" else st))
cfg = cfg.with_value("time.t_end", S * cfg.time.dt).with_value("output.populations_every", P)
k = seed
while True:
    tr = Tracker(cfg, cfg.output.populations)
    for s in range(k * P, S, P):
        tr(s * cfg.time.dt)
    k = 0
"""


def spinners(k):
    import subprocess
    procs = [subprocess.Popen([sys.executable, "-c", SPIN, path, str(N), st, str(P), str(S), str(16 * j)])
             for j in range(k)]
    time.sleep(3.0)                 # (their imports)
    return procs


def one(c, table, pipe=False, switch=None, load=0, small=False, file=False, null=False, task=None):
    procs = spinners(load) if load else []
    eigenpairs.Lookahead.__call__ = (lookup_after if small or null else lookup_file if file else
                                     lookup if table else shipped)
    eigenpairs._pairs = (pairs_free_small.pairs if small else pairs_free_small.null if null else
                         pairs_free_small.pairs_file if file else shipped_pairs)
    task_steps = eigenpairs.TASK_STEPS
    if task:
        eigenpairs.TASK_STEPS = task
    eigenpairs.Workers.submit = submit_file if file else submitted
    eigenpairs.Workers.__init__ = wider if pipe else opened
    was = sys.getswitchinterval()
    if switch:
        sys.setswitchinterval(switch)
    try:
        r = run(c, tempfile.mkdtemp(), backend=backend, force=True, allow_inaccurate=True)
    finally:
        eigenpairs.Lookahead.__call__ = shipped
        eigenpairs._pairs = shipped_pairs
        eigenpairs.Workers.submit = submitted
        eigenpairs.Workers.__init__ = opened
        eigenpairs.TASK_STEPS = task_steps
        sys.setswitchinterval(was)
        for q in procs:
            q.kill()
    with h5py.File(r.path) as f:
        at = readable_attrs(f)
    return float(at["wall_seconds"]), float(at.get("eigenpairs_wait_seconds", 0.0))


one(cfg.with_value("time.t_end", 200 * cfg.time.dt), False)          # warm
CASES = {"ends": (ends, False, {}), "every": (every, False, {}), "given": (given, True, {})}
for extra in (sys.argv[9].split(",") if len(sys.argv) > 9 else []):
    CASES[extra] = ((every, False, {"small": True}) if extra == "small" else
                    (every, False, {"null": True}) if extra == "null" else
                    (every, False, {"task": int(extra[4:])}) if extra.startswith("task") else
                    (every, False, {"file": True}) if extra == "file" else
                    (ends, False, {"load": int(extra[4:])}) if extra.startswith("load") else
                    (every, False, {"pipe": True}) if extra == "pipe" else
                    (every, False, {"switch": float(extra[2:]) * 1e-3}))
res = {k: [] for k in CASES}
for _ in range(R):
    for k, (c, table, kw) in CASES.items():
        res[k].append(one(c, table, **kw))
print(f"pipe sizes set: {sorted(set(PIPE))}; file: the loop found a task's states not yet read {FALLBACK[0]} times; "
      f"files left: {len(os.listdir(os.environ['PAIRS_DIR']))}")
print(f"{backend} {os.path.basename(path)} N = {N}, {st}, {S} steps, {method}, populations every {P}; medians of {R}")
e = np.median([r[0] for r in res["ends"]])
for k, rows in res.items():
    loop = np.median([r[0] for r in rows])
    print(f"{k:6s} loop {loop:.3f} s = {loop / S * 1e6:.2f} us/step (x{loop / e:.3f} of ends), "
          f"each {' '.join(f'{r[0]:.3f}' for r in rows)}, pairs' wait {np.median([r[1] for r in rows]):.3f} s")
