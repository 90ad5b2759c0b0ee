"""Process start to 'ready': CuPy's import and CUDA's start in the main thread then tdse's
imports and an input parsed, against CuPy + CUDA in a thread meanwhile."""
import sys, time, threading
t0 = time.time()
mode = sys.argv[1]
def cuda():
    import cupy
    cupy.cuda.runtime.getDeviceCount()
    cupy.zeros(1)
if mode == "thread":
    th = threading.Thread(target=cuda, daemon=True); th.start()
else:
    cuda()
t1 = time.time()
import tdse.ui.cli  # noqa
import scipy.linalg, scipy.fft, h5py  # noqa
import tdse.run.driver  # noqa
from tdse.config import load
cfg = load("inputs/atom_hhg.toml")
import tdse
plan = tdse.prepare(cfg, backend="numpy")
t2 = time.time()
if mode == "thread":
    th.join()
import cupy
x = cupy.arange(10) * 2
t3 = time.time()
print(mode, f"cuda part {t1-t0:.3f} rest {t2-t1:.3f} join {t3-t2:.3f} total {t3-t0:.3f}")
