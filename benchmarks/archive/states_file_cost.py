"""#54: what a look-ahead task's states (16 calls x 4 states x N float64, 4 MB at N = 8192)
cost to take from a file in /dev/shm, by step: mapped (open + mmap, reading every page,
the mapping's end with the file kept, the unlink after) against read (np.fromfile, the
unlink of a file no longer mapped, the array's free).  Medians of 30, in us.
Usage: python states_file_cost.py [N]"""
import mmap, os, sys, tempfile, time
import numpy as np

N = int(sys.argv[1]) if len(sys.argv) > 1 else 8192
d = tempfile.mkdtemp(dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
a = np.random.default_rng(1).random((16, 4, N))
T = {}


def tick(k, t0):
    t = time.perf_counter()
    T.setdefault(k, []).append(t - t0)
    return t


for r in range(30):
    p = os.path.join(d, str(r))
    a.tofile(p)
    t = time.perf_counter()
    with open(p, "rb") as f:
        m = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    t = tick("mapped: open + mmap", t)
    x = [np.frombuffer(m, dtype=np.float64, count=4 * N, offset=i * 4 * N * 8) for i in range(16)]
    s = sum(float(v.sum()) for v in x)
    t = tick("mapped: every page read", t)
    del x, m
    t = tick("mapped: the mapping's end (file kept)", t)
    os.remove(p)
    t = tick("mapped: the unlink after", t)
    a.tofile(p)
    t = time.perf_counter()
    z = np.fromfile(p)
    t = tick("read: np.fromfile", t)
    os.remove(p)
    t = tick("read: the unlink", t)
    del z
    t = tick("read: the array's free", t)
os.rmdir(d)
print(f"N = {N}, {a.nbytes / 2**20:.1f} MiB a task; medians of 30 (us)")
for k, v in T.items():
    print(f"  {k:40s} {np.median(v) * 1e6:8.1f}")
