"""#59 item 2: a run file's close and its datasets' shrinking resizes (the observables grown ahead of their rows), timed without a profiler: a synthetic file of 18 datasets (4411 rows in a capacity of 8192, chunks of 64) and three atom_hhg runs in one process (tdse.simulate, BACKEND numpy or cupy).  Usage: PYTHONPATH=. python close_resize.py BACKEND"""
import sys, time, tempfile, os
import h5py, numpy as np
print("h5py", h5py.__version__, "hdf5", h5py.version.hdf5_version)
# 1) a synthetic file: 18 growing datasets as the run's, 4411 rows written into a capacity of 8192
d = tempfile.mkdtemp()
f = h5py.File(os.path.join(d, "x.h5"), "w")
dss = [f.create_dataset(f"o/{i}", shape=(0,), maxshape=(None,), dtype="f8", chunks=(64,)) for i in range(18)]
for ds in dss:
    ds.resize(8192, axis=0); ds[:4411] = np.random.rand(4411)
f.flush()
t0 = time.perf_counter()
for ds in dss:
    ds.resize(4411, axis=0)
print(f"synthetic: 18 shrinks {1e3 * (time.perf_counter() - t0):.1f} ms")
f.close()
# 2) the atom_hhg run's close, timed inside (no profiler)
import h5py._hl.dataset as hd
orig = hd.Dataset.resize
T = []
def resize(self, *a, **k):
    t = time.perf_counter(); r = orig(self, *a, **k); T.append(time.perf_counter() - t); return r
hd.Dataset.resize = resize
import tdse.run.driver as drv
oc = drv._close
C = []
def _close(*a, **k):
    t = time.perf_counter(); r = oc(*a, **k); C.append(time.perf_counter() - t); return r
drv._close = _close
import tdse
cfg = tdse.load_config("inputs/atom_hhg.toml")
for i in range(3):
    T.clear(); C.clear()
    t = time.perf_counter()
    tdse.simulate(cfg, backend=sys.argv[1], out=tempfile.mkdtemp(), force=True)
    print(f"run {i}: wall {time.perf_counter() - t:.3f} s, close {1e3 * C[0]:.1f} ms, resizes {len(T)} {1e3 * sum(T):.1f} ms")
