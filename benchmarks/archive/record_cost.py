"""Host microseconds of the pieces of one observation row's record on a GPU (#23 item 3):
_BlockRows.record and what it does (the NaN row of energies, the flags check, the
device-to-device copy of psi into its row by CuPy's MemoryPointer or by the runtime's
memcpyAsync with the row's address made once), h2plus_moving_large at N = 8192.
python benchmarks/archive/record_cost.py"""
import sys
import time
import warnings

import numpy as np

from run_profile import case

warnings.simplefilter("ignore")
import cupy as cp  # noqa: E402

from tdse.model import observables  # noqa: E402
from tdse.run.observers import _BlockRows  # noqa: E402

cfg, plan = case("inputs/h2plus_moving_large.toml", 8192, "3", 100, 250, "cupy")
meas = observables.Measure(cfg, plan.x, plan.states[:4], np.asarray(plan.psi0))
br = _BlockRows(plan, meas)
psi = cp.asarray(plan.psi0, dtype=cp.complex128)
row = br.slots[0]
stream = cp.cuda.get_current_stream()
rt = cp.cuda.runtime
dst = int(row.data.ptr)
nb = row.nbytes


def us(f, n=20000):
    f()
    t0 = time.perf_counter()
    for _ in range(n):
        f()
    cp.cuda.Device().synchronize()
    return (time.perf_counter() - t0) / n * 1e6


out = {
    "np.full(K, nan)": us(lambda: np.full(4, np.nan)),
    "psi.flags.c_contiguous": us(lambda: psi.flags.c_contiguous),
    "psi.dtype == row.dtype": us(lambda: psi.dtype == row.dtype),
    "row.nbytes": us(lambda: row.nbytes),
    "row.data.copy_from_device_async(psi.data, nb)": us(lambda: row.data.copy_from_device_async(psi.data, nb)),
    "runtime.memcpyAsync(dst, psi.data.ptr, ...)": us(lambda: rt.memcpyAsync(dst, psi.data.ptr, nb, rt.memcpyDeviceToDevice, stream.ptr)),
    "get_current_stream().ptr": us(lambda: cp.cuda.get_current_stream().ptr),
    "holds(psi)": us(lambda: br.holds(psi)),
}


def rec():
    br.cols = 0
    br.ts, br.pending, br.also = [], [], []
    for j in range(br.M - 1):
        br.record(j, 0.1 * j, psi, None)


n = 300
rec()
t0 = time.perf_counter()
for _ in range(n):
    rec()
cp.cuda.Device().synchronize()
out["_BlockRows.record (no populations)"] = (time.perf_counter() - t0) / (n * (br.M - 1)) * 1e6
for k, v in out.items():
    print(f"{v:8.2f} us  {k}")
sys.stdout.flush()
