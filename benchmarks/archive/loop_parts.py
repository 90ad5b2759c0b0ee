"""#54: a GPU run's loop thread by part -- functions of the loop's path wrapped with
perf_counter (inclusive seconds and calls, the loop's thread only; a part includes those it
calls), for INPUT with method auto, no time error, STEPS steps, populations every EVERY,
through tdse.simulate (a file written), once (run it again for a process whose kernels come
from CuPy's cache: a second run in one process starts the look-ahead's workers anew, and
waited ~0.9 s for H(t)'s pairs at N = 8192).  The writer's thread timed too ("[writer]").

    python benchmarks/archive/loop_parts.py INPUT STEPS EVERY [BACKEND [KEY=VALUE ...]]
"""
import collections
import functools
import sys
import tempfile
import threading
import time

import tdse
import tdse.run.driver as driver
from mgemm import arrays
from tdse.numerics import graph_plan, graphs
from tdse.run import eigenpairs, loop, rows, sinks, snapshots

path, steps, every = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
backend = sys.argv[4] if len(sys.argv) > 4 else "cupy"
cfg = tdse.load_config(path)
cfg = (cfg.with_value("propagator.method", "auto").with_value("propagator.time_error", "none")
       .with_value("time.t_end", steps * cfg.time.dt).with_value("output.populations_every", every))
for kv in sys.argv[5:]:
    key, value = kv.split("=")
    cfg = cfg.with_value(key, int(value) if value.isdigit() else
                         float(value) if value.replace(".", "", 1).isdigit() else value)
main = threading.main_thread().ident
acc, cnt = collections.Counter(), collections.Counter()


def wrap(owner, name, label=None, by_caller=False, any_thread=False):
    real = getattr(owner, name)
    label = label or f"{getattr(owner, '__name__', owner)}.{name}"

    @functools.wraps(real)
    def timed(*a, **k):
        other = threading.get_ident() != main
        if other and not any_thread:
            return real(*a, **k)
        key = ("[writer] " if other else "") + label + (
            f" < {sys._getframe(1).f_code.co_name}" if by_caller else "")
        t0 = time.perf_counter()
        try:
            return real(*a, **k)
        finally:
            acc[key] += time.perf_counter() - t0
            cnt[key] += 1
    setattr(owner, name, timed)


wrap(loop, "advance", "loop.advance (steps, taps)")
wrap(graphs.GraphStep, "advance")
wrap(graphs, "copy_in", by_caller=True)
wrap(graph_plan, "segment")
wrap(arrays.PinnedUpload, "put", by_caller=True)
wrap(arrays.HostCopy, "__init__", "HostCopy()", by_caller=True)
wrap(arrays.HostCopy, "result", by_caller=True)
for n in ("resolve", "_measure", "start", "finish", "columns", "_amplitudes", "reserve_later", "reserve_plain"):
    wrap(rows._BlockRows, n)
for n in ("tap", "save", "flush"):
    wrap(rows.Observables, n)
for n in ("tap", "save", "_write_ring", "_copy_ring", "_finish_copied", "_write"):
    wrap(sinks.Snapshots, n)
for n in ("append", "write", "observe_block", "_wait"):
    wrap(snapshots.SnapshotWriter, n)
for n in ("_block", "_write_rows", "_flush", "_write_observations"):
    wrap(snapshots.SnapshotWriter, n, any_thread=True)
wrap(eigenpairs.Lookahead, "__call__", "Lookahead()")
from tdse.model import hamiltonian, observables   # noqa: E402
for n in ("raw", "_pack_own", "_raw_out"):
    wrap(observables.BlockMeasure, n)
wrap(hamiltonian.BlockOperator, "_kinetic")
if backend == "cupy":
    import cupy   # noqa: E402
    wrap(cupy.fft, "fft", "cupy.fft.fft", by_caller=True)
    wrap(cupy, "concatenate", "cupy.concatenate", by_caller=True)
    wrap(cupy, "ascontiguousarray", "cupy.ascontiguousarray", by_caller=True)
wrap(snapshots.NodeCounter, "__call__", "NodeCounter()", any_thread=True)
real = driver.evolve
walls = []


def timed_evolve(*a, **k):
    acc.clear()
    cnt.clear()
    t0 = time.perf_counter()
    try:
        return real(*a, **k)
    finally:
        walls.append(time.perf_counter() - t0)


driver.evolve = timed_evolve
tdse.simulate(cfg, backend=backend, out=tempfile.mkdtemp(), force=True)
print(f"# {path}: {steps} steps, populations every {every}, {backend}: evolve {walls[-1]:.3f} s "
      f"({walls[-1] / steps * 1e6:.1f} us a step)")
print("ms (inclusive) | calls | us a call | part")
for k, v in acc.most_common():
    print(f"{v * 1e3:9.1f} | {cnt[k]:6d} | {v / cnt[k] * 1e6:8.1f} | {k}")
