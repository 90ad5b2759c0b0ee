"""#54 probe: a GPU run's loop as a timeline -- a CUDA event after each advance call (the
device's own time between them) and the host's clock there -- to see whether the run's loop
time over the bare steps is spread over the steps or a fixed cost in some part of the run.

    [REPS=2] [WORKERS=W] python benchmarks/archive/loop_timeline.py INPUT N STENCIL STEPS EVERY [KEY=VALUE ...]

INPUT at N points with STENCIL, Chebyshev, no time error, STEPS steps, populations every EVERY, a
file written (as `tdse run`), REPS runs in one process, KEY=VALUE set on the run beside the bare
loop of the plan (benchmarks._bare_steps); WORKERS: the look-ahead's processes at most beside a
GPU loop (tdse.run.eigenpairs.GPU_WORKERS)."""
import dataclasses, sys, tempfile, time
import numpy as np
sys.path.insert(0, ".")
import os
backend = os.environ.get("BACKEND", "cupy")       # numpy: the host's clock alone
cp = None
if backend == "cupy":
    import cupy as cp
import tdse
from tdse import config as cfgmod
from tdse.run import loop as _loop
from benchmarks.suites import _bare_steps

path, n, stencil, steps, every = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
slices = 15
extra = [kv.split("=") for kv in sys.argv[6:]]      # KEY=VALUE: the run's config beside the bare loop's
stencil = int(stencil) if stencil in ("3", "5") else stencil
base = cfgmod.load(path)
width = base.grid.x_max - base.grid.x_min
cfg = dataclasses.replace(base, grid=dataclasses.replace(base.grid, dx=width / n, stencil=stencil))
cfg = (cfg.with_value("propagator.method", "auto").with_value("propagator.time_error", "none")
       .with_value("time.t_end", steps * cfg.time.dt).with_value("output.populations_every", every))
plan = tdse.prepare(cfg, backend=backend, check_resolution=False)
for key, value in extra:
    cfg = cfg.with_value(key, int(value) if value.lstrip("-").isdigit() else value)
bare = float(np.median([_bare_steps(plan, 20000)[0] for _ in range(3)]))
print(f"# {path} N = {n} stencil {stencil}, {steps} steps, populations every {every} {extra}: bare {bare * 1e6:.2f} us a step")
marks = []
real = _loop.advance


def advance(stepper, X, j0, j1, **k):
    out = real(stepper, X, j0, j1, **k)
    ev = None
    if cp is not None:
        ev = cp.cuda.Event()
        ev.record()
    marks.append((j1, time.perf_counter(), ev))
    return out


_loop.advance = advance
import os
from tdse.run import eigenpairs
if os.environ.get("WORKERS"):       # the look-ahead's processes at most beside a GPU loop
    eigenpairs.GPU_WORKERS = int(os.environ["WORKERS"])
for rep in range(int(__import__('os').environ.get('REPS', '2'))):
    marks.clear()
    t0 = time.perf_counter()
    res = tdse.simulate(cfg, backend=backend, out=tempfile.mkdtemp())
    wall = time.perf_counter() - t0
    if cp is None:      # the host's clock between the advance calls' ends
        elapsed = lambda a, b: (b[1] - a[1]) * 1e3      # noqa: E731
    else:
        cp.cuda.Device().synchronize()
        elapsed = lambda a, b: cp.cuda.get_elapsed_time(a[2], b[2])      # noqa: E731
    j_first, h_first, e_first = marks[0]
    total_dev = elapsed(marks[0], marks[-1]) * 1e-3
    print(f"## run {rep}: first advance ends {h_first - t0:.3f} s after simulate starts; simulate {wall:.3f} s, loop (res.seconds) {res.seconds:.3f} s, {len(marks)} advance calls; "
          f"device from the first advance's end to the last's {total_dev:.3f} s for {marks[-1][0] - j_first} steps "
          f"= x{total_dev / ((marks[-1][0] - j_first) * bare):.3f} bare; workers at most {eigenpairs.GPU_WORKERS}, "
          f"pairs {float(res.attrs.get('eigenpairs_seconds', 0)):.2f} s, the loop's wait {float(res.attrs.get('eigenpairs_wait_seconds', 0)):.3f} s")
    print("slice | steps | device s | device us/step | x bare | host s | largest gap between two advances' ends (device, ms)")
    edges = np.linspace(0, len(marks) - 1, slices + 1).astype(int)
    for a, b in zip(edges[:-1], edges[1:]):
        ja, ha, ea = marks[a]; jb, hb, eb = marks[b]
        dev = elapsed(marks[a], marks[b]) * 1e-3
        gaps = [elapsed(marks[i], marks[i + 1]) - (marks[i + 1][0] - marks[i][0]) * bare * 1e3
                for i in range(a, b)]
        print(f"{ja:>6}-{jb:<6} | {jb - ja:6d} | {dev:.3f} | {dev / max(1, jb - ja) * 1e6:6.2f} | {dev / max(1, jb - ja) / bare:.3f} | "
              f"{hb - ha:.3f} | {max(gaps):.2f}")
