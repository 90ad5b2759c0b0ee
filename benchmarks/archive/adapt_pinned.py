"""#56: the adaptive laser run's pinned host buffers on a GPU -- how many each in-process
run allocates anew (cupyx.empty_pinned calls reaching cudaHostAlloc: the pinned pool's
bytes grow) and its loop seconds, with the cyclic collector run before each run or not
(alternating), and cudaHostAlloc's own cost by size.  A run's rings die with its stepper, whose objects hold cycles: freed only by
a collection, and until then the pool has nothing to give the next run.

    python benchmarks/archive/adapt_pinned.py TOLERANCE REPEAT
"""
import gc, sys, time
import numpy as np
import cupy
import tdse
from benchmarks import drives
from tdse.config import with_values
base = with_values(drives.make("laser", np.random.default_rng(56)), [("time.dt", 1.0), ("output.every", 5)])
cfg = with_values(base, [("time.tolerance", float(sys.argv[1]))])
from cupy.cuda import pinned_memory
made, grown = [0], [0]
SIZES = []


def raw(n):          # the pool's own allocations (cudaHostAlloc)
    grown[0] += n
    return pinned_memory._malloc(n)


pool = cupy.cuda.PinnedMemoryPool(raw)


def counted(n):
    made[0] += 1
    SIZES.append(n)
    return pool.malloc(n)


cupy.cuda.set_pinned_memory_allocator(counted)
for _ in range(2):
    tdse.simulate(cfg, backend="cupy", progress=False)
rows = {"collected": [], "as is": []}
for _ in range(int(sys.argv[2])):
    for k in rows:
        if k == "collected":
            gc.collect()
        n0, b0, f0 = made[0], grown[0], pool.n_free_blocks()
        r = tdse.simulate(cfg, backend="cupy", progress=False)
        rows[k].append((r.seconds, made[0] - n0, grown[0] - b0, f0))
for k, v in rows.items():
    print(f"{k:9s} loop {np.median([x[0] for x in v]):.3f} s (each {' '.join(f'{x[0]:.3f}' for x in v)}); "
          f"empty_pinned calls a run {v[-1][1]}, the pool's bytes grew {np.median([x[2] for x in v]) / 2**20:.1f} MiB "
          f"a run, free blocks before {[x[3] for x in v]}")
sizes = np.array(SIZES[-v[-1][1]:]) if v[-1][1] else np.array([0])
print(f"the last run's empty_pinned sizes: {len(sizes)} calls, median {np.median(sizes) / 1024:.0f} kB, "
      f"max {sizes.max() / 1024:.0f} kB, total {sizes.sum() / 2**20:.1f} MiB")
# cudaHostAlloc's own cost by size (fresh allocations, outside the pool)
from cupy.cuda import runtime as rt
for nbytes in (4 << 10, 64 << 10, 512 << 10, 2 << 20, 8 << 20):
    ts = []
    for _ in range(20):
        t = time.perf_counter()
        p = rt.hostAlloc(nbytes, 0)
        ts.append(time.perf_counter() - t)
        rt.freeHost(p)
    print(f"cudaHostAlloc {nbytes >> 10:6d} kB: {np.median(ts) * 1e6:.0f} us (median of 20)")
