"""#54: where a GPU run's loop time goes, by wall-clock wrappers around the loop's parts (no
profiler): INPUT through tdse.simulate(out=...) twice (the second timed), each wrapped
function's seconds and calls; the loop's own clock from the file.

    python benchmarks/archive/run_attrib.py INPUT [KEY=INT ...]
"""
import sys, time, tempfile, json, collections
import numpy as np
import tdse
from tdse.run import loop, rows, sinks, snapshots, eigenpairs
from tdse.numerics import graphs
T = collections.defaultdict(lambda: [0.0, 0])
def wrap(obj, name, label):
    f = getattr(obj, name)
    def w(*a, **k):
        t0 = time.perf_counter()
        try:
            return f(*a, **k)
        finally:
            r = T[label]; r[0] += time.perf_counter() - t0; r[1] += 1
    setattr(obj, name, w)
for obj, name in ((loop, "advance"), (sinks.Snapshots, "save"), (rows.Observables, "save"),
                  (rows.Observables, "tap"), (snapshots.SnapshotWriter, "write"),
                  (snapshots.SnapshotWriter, "append"), (eigenpairs.Lookahead, "__call__"),
                  (rows._BlockRows, "_measure"), (rows._BlockRows, "reserve"), (rows.Observables, "hand_over"),
                  (sinks.Snapshots, "_finish_one"), (graphs.GraphStep, "_upload"), (graphs.GraphStep, "_slots"),
                  (graphs, "copy_out"), (loop, "check_pending"), (rows.Observables, "next_point"),
                  (sinks.Snapshots, "next_point")):
    wrap(obj, name, f"{getattr(obj, '__name__', '')}.{name}")
cfg = tdse.load_config(sys.argv[1])
for extra in sys.argv[2:]:
    k, v = extra.split("=")
    cfg = cfg.with_value(k, int(v))
for rep in range(2):
    T.clear()
    d = tempfile.mkdtemp()
    t0 = time.perf_counter()
    res = tdse.simulate(cfg, backend="cupy", out=d, force=True, allow_inaccurate=True)
    wall = time.perf_counter() - t0
import h5py, glob
with h5py.File(glob.glob(d + "/*.h5")[0]) as f:
    tl = json.loads(f.attrs["timeline"])
loop_s = tl["loop_end"] - tl["loop"]
print(f"# {sys.argv[1:]}: loop {loop_s:.3f} s ({loop_s / cfg.time.steps * 1e6:.1f} us/step), simulate wall {wall:.2f} s")
for k, (s, n) in sorted(T.items(), key=lambda kv: -kv[1][0]):
    print(f"{k:40s} {s:8.3f} s {n:7d} calls {s / max(n, 1) * 1e6:9.1f} us/call {s / cfg.time.steps * 1e6:7.2f} us/step")
