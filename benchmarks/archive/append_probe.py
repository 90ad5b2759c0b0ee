"""#54: a GPU run's loop thread in SnapshotWriter.append, PinnedUpload.put and
_BlockRows._amplitudes: wall and CPU (time.thread_time; CUDA's spinning waits count as CPU)
over two runs of INPUT in one process, and each append's CPU time (the calls over 100 us and
their indices).

    python benchmarks/archive/append_probe.py INPUT STEPS POP_EVERY [SWITCH_INTERVAL [BACKEND]]
"""
import sys, time, tempfile, warnings, collections
warnings.simplefilter("ignore")
import tdse
from tdse.run import snapshots, rows
from mgemm import arrays
path, steps, every = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
si = float(sys.argv[4]) if len(sys.argv) > 4 else None
if si: sys.setswitchinterval(si)
acc = collections.defaultdict(lambda: [0.0, 0.0, 0])
each = []
def wrap(owner, name, label):
    real = getattr(owner, name)
    def inner(*a, **k):
        w, c = time.perf_counter(), time.thread_time()
        try:
            return real(*a, **k)
        finally:
            r = acc[label]; r[0] += time.perf_counter() - w; r[1] += time.thread_time() - c; r[2] += 1
            if label == "SnapshotWriter.append": each.append(time.thread_time() - c)
    setattr(owner, name, inner)
wrap(snapshots.SnapshotWriter, "append", "SnapshotWriter.append")
wrap(arrays.PinnedUpload, "put", "PinnedUpload.put")
wrap(rows._BlockRows, "_amplitudes", "_BlockRows._amplitudes")
cfg = tdse.load_config(path)
cfg = (cfg.with_value("propagator.method", "auto").with_value("propagator.time_error", "none")
       .with_value("time.t_end", steps * cfg.time.dt).with_value("output.populations_every", every))
for r in range(2):
    acc.clear(); each.clear()
    t0 = time.perf_counter(); c0 = time.thread_time()
    res = tdse.simulate(cfg, backend=(sys.argv[5] if len(sys.argv) > 5 else "cupy"), out=tempfile.mkdtemp(), force=True)
    print(f"run {r} switchinterval {sys.getswitchinterval()}: loop {res.seconds:.3f} s, simulate wall {time.perf_counter()-t0:.3f} s, main thread CPU {time.thread_time()-c0:.3f} s")
    for k, (w, c, n) in sorted(acc.items(), key=lambda kv: -kv[1][0]):
        print(f"   {k:28s} calls {n:6d}  wall {w*1e3:8.1f} ms  thread CPU {c*1e3:8.1f} ms  ({w/n*1e6:.0f} / {c/n*1e6:.0f} us a call)")
    import numpy as np
    e = np.array(each) * 1e6
    print("   append CPU us: median %.1f, p90 %.1f, max %.0f; sum of calls > 100 us: %.1f ms in %d calls; their indices (first 20): %s" % (
        np.median(e), np.percentile(e, 90), e.max(), e[e > 100].sum() / 1e3, (e > 100).sum(), list(np.flatnonzero(e > 100)[:20])))
