"""Host microseconds of the CuPy calls a GPU run's loop makes every step (#23 item 3: the
loop's host time, ~90 us a step at N = 8192 on an H100's host against ~180 us of device
time, leaves the observers little room): a device-to-device copy by CuPy's MemoryPointer
against the runtime's cudaMemcpyAsync called directly, cupy.empty_like against
cupy.ndarray, a PinnedUpload call against its put(), a CuPy reshape, and a graph-sized
event record.  Each the mean of REPS calls after a warm call; the stream synchronised
every 256 calls so that no queue limit is met.

    python benchmarks/archive/host_calls_gpu.py [N] [REPS]
"""
import sys
import time

import cupy as cp
import numpy as np

sys.path.insert(0, ".")
from mgemm.arrays import PinnedUpload  # noqa: E402


def copy_async(dst, src):
    """dst := src by the runtime's cudaMemcpyAsync on the current stream (no CuPy checks)."""
    rt = cp.cuda.runtime
    rt.memcpyAsync(dst.data.ptr, src.data.ptr, src.nbytes, rt.memcpyDeviceToDevice,
                   cp.cuda.get_current_stream().ptr)


def per_call(f, reps):
    f()
    cp.cuda.Device().synchronize()
    t0 = time.perf_counter()
    for i in range(reps):
        f()
        if i % 256 == 255:
            cp.cuda.get_current_stream().synchronize()
    t1 = time.perf_counter()
    cp.cuda.Device().synchronize()
    return (t1 - t0) / reps * 1e6


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 8192
    reps = int(sys.argv[2]) if len(sys.argv) > 2 else 20000
    a = cp.asarray(np.random.default_rng(1).standard_normal(n) + 1j)
    b = cp.empty_like(a)
    up = PinnedUpload(cp, ring=64)
    row = np.random.default_rng(2).standard_normal(900)
    rows = {
        "MemoryPointer.copy_from_device_async": lambda: b.data.copy_from_device_async(a.data, a.nbytes),
        "copy_async (cudaMemcpyAsync)": lambda: copy_async(b, a),
        "cupy.empty_like": lambda: cp.empty_like(a),
        "cupy.ndarray": lambda: cp.ndarray(a.shape, dtype=a.dtype),
        "PinnedUpload() (a view back)": lambda: up(row),
        "PinnedUpload.put": lambda: up.put(row),
        "a.reshape(-1, 1)": lambda: a.reshape(-1, 1),
        "a.device.id == Device().id": lambda: a.device.id == cp.cuda.Device().id,
        "a.data.device_id == getDevice()": lambda: a.data.device_id == cp.cuda.runtime.getDevice(),
    }
    print(f"# host us a call, N = {n}, {reps} calls each, {cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}")
    for _ in range(2):
        print("  ".join(f"{k}: {per_call(f, reps):.2f}" for k, f in rows.items()), flush=True)
