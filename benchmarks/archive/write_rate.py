"""#54: how fast this machine's file system takes a run's snapshot blocks: h5py writes of
32 MiB blocks of complex128 rows (N = 8192, 256 rows a block, a resized chunked dataset as
the run's writer makes it, flushed after each block) into a temporary directory, in the
main thread and in a second thread beside a Python loop (the loop's iterations a second
show how much the writes hold the GIL); then dd of 256 MiB with and without fdatasync.

    python benchmarks/archive/write_rate.py [DIR]
"""
import os, subprocess, sys, tempfile, threading, time
import h5py
import numpy as np

d = tempfile.mkdtemp(dir=sys.argv[1] if len(sys.argv) > 1 else None)
n, rows, blocks = 8192, 256, 8
data = np.random.default_rng(1).standard_normal((rows, n)) + 1j


def write(path):
    with h5py.File(path, "w") as f:
        ds = f.create_dataset("psi", (0, n), maxshape=(None, n), dtype=np.complex128, chunks=(1, n))
        t0 = time.perf_counter()
        for b in range(blocks):
            ds.resize((b + 1) * rows, axis=0)
            ds[b * rows:(b + 1) * rows] = data
            f.flush()
        return time.perf_counter() - t0


mib = blocks * rows * n * 16 / 2 ** 20
w = write(os.path.join(d, "a.h5"))
print(f"h5py, main thread: {mib:.0f} MiB in {w:.3f} s, {mib / w:.0f} MiB/s")
count, stop = [0], threading.Event()


def spin():
    while not stop.is_set():
        count[0] += 1


t0 = time.perf_counter()
th = threading.Thread(target=spin)
th.start()
time.sleep(0.3)
base = count[0] / (time.perf_counter() - t0)
count[0], t1 = 0, time.perf_counter()
out = []
wt = threading.Thread(target=lambda: out.append(write(os.path.join(d, "b.h5"))))
wt.start()
wt.join()
during = count[0] / (time.perf_counter() - t1)
stop.set()
th.join()
print(f"h5py in a thread: {mib / out[0]:.0f} MiB/s; a Python loop beside it ran {during / base:.2f} of its pace alone")
for flags in ("", "conv=fdatasync"):
    r = subprocess.run(f"dd if=/dev/zero of={d}/c bs=1M count=256 {flags}", shell=True, capture_output=True, text=True)
    print("dd", flags or "(page cache)", r.stderr.strip().splitlines()[-1])
subprocess.run(["rm", "-rf", d])
