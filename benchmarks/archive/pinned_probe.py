"""#54: NumPy copies between pageable and CuPy pinned host arrays (128 KiB - 2 MiB), and
a pinned row read right after a D2H copy into it: whether the loop thread's row copies are
slow for the memory they touch.

    python benchmarks/archive/pinned_probe.py
"""
import time, numpy as np, cupy as cp, cupyx
def t(f, n=2000):
    f(); t0 = time.perf_counter()
    for _ in range(n): f()
    return (time.perf_counter() - t0) / n * 1e6
for nbytes in (131072, 262144, 2 << 20):
    n = nbytes // 8
    a = np.random.rand(n); b = np.empty(n)
    p = cupyx.empty_pinned(n, dtype=np.float64); p[:] = 1.0
    q = cupyx.empty_pinned(n, dtype=np.float64); q[:] = 1.0
    print(f"{nbytes >> 10} KiB: pageable->pageable {t(lambda: b.__setitem__(slice(None), a)):.1f} us, "
          f"pageable->pinned {t(lambda: p.__setitem__(slice(None), a)):.1f} us, pinned->pageable {t(lambda: b.__setitem__(slice(None), p)):.1f} us, "
          f"pinned->pinned {t(lambda: q.__setitem__(slice(None), p)):.1f} us")
# after a DMA write into pinned memory (as a snapshot's copy leaves it)
d = cp.random.rand(16384)
p = cupyx.empty_pinned(16384, dtype=np.float64); b = np.empty(16384)
ts = []
for _ in range(500):
    d.data.copy_to_host_async(p.ctypes.data, d.nbytes); cp.cuda.Device().synchronize()
    t0 = time.perf_counter(); b[:] = p; ts.append(time.perf_counter() - t0)
print(f"128 KiB read right after a D2H copy: median {np.median(ts)*1e6:.1f} us")
import os; print("cpus", os.cpu_count(), open("/proc/cpuinfo").read().split("model name")[1].split("\n")[0])
