"""What the measuring tools share: timing, random operands, flop counts, freeing GPU
memory, the machine description and result files (one place, public names)."""
from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import sys
import time

import numpy as np

__all__ = ["time_call", "flops", "rand_matrix", "free_gpu_memory", "machine", "save_result"]


def flops(n, dtype):
    """Real flops of an N x N x N product: 2N^3 real, 8N^3 complex."""
    return (8 if np.dtype(dtype).kind == "c" else 2) * float(n) ** 3


def rand_matrix(cp, dev, n, dtype, seed):
    """A random N x N matrix of ``dtype`` on GPU ``dev`` (never zeros)."""
    with cp.cuda.Device(dev):
        r = cp.random.default_rng(seed)
        x = r.standard_normal((n, n), dtype=np.float64 if np.dtype(dtype).itemsize >= 8 else np.float32)
        if np.dtype(dtype).kind == "c":
            x = x + 1j * r.standard_normal((n, n), dtype=x.dtype)
        return x.astype(dtype)


def time_call(cp, f, repeat, devices):
    """Median wall time of ``repeat`` calls of ``f`` after one warm-up, each followed by
    a synchronisation of ``devices`` (so the wall time is the whole call)."""
    f()
    for d in devices:
        cp.cuda.Device(d).synchronize()
    ts = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        f()
        for d in devices:
            cp.cuda.Device(d).synchronize()
        ts.append(time.perf_counter() - t0)
    return float(np.median(ts))


class PeakMemory:
    """Peak bytes in use per GPU while active (CuPy's pool, through an allocator hook):
    ``with PeakMemory(cp) as peak: ...`` then ``peak.bytes`` = {device: bytes}."""

    def __init__(self, cp):
        self.cp, self.bytes = cp, {}

    def __enter__(self):
        cp, pool = self.cp, self.cp.get_default_memory_pool()

        def malloc(size):
            mem = pool.malloc(size)
            d = mem.device_id
            used = pool.used_bytes()  # the current (= allocating) device's pool
            if used > self.bytes.get(d, 0):
                self.bytes[d] = used
            return mem
        for d in range(cp.cuda.runtime.getDeviceCount()):
            with cp.cuda.Device(d):
                self.bytes[d] = pool.used_bytes()
        cp.cuda.set_allocator(malloc)
        return self

    def __exit__(self, *exc):
        self.cp.cuda.set_allocator(self.cp.get_default_memory_pool().malloc)
        return False


def free_gpu_memory(cp):
    """Drop mgemm's cached band buffers and give every GPU's unused pool blocks back
    (``MemoryPool.free_all_blocks`` frees the *current* device's pool only), so the
    next configuration or library (cuBLAS-XT, JAX) finds the memory free."""
    import gc

    from .. import executors
    executors.release_buffers()
    gc.collect()
    pool = cp.get_default_memory_pool()
    for d in range(cp.cuda.runtime.getDeviceCount()):
        with cp.cuda.Device(d):
            pool.free_all_blocks()


def _cpu_model():
    """The CPU's model name (Linux's /proc/cpuinfo), or None: the host's CPUs set a GPU run's
    host-bound rows (run-overhead: 1.16 on one H200 machine, 1.42 on another the same day)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def machine() -> dict:
    """Host, CPUs, library versions and GPU models of this machine (for result files)."""
    import scipy
    info = {"host": platform.node(), "platform": platform.platform(),
            "processor": platform.processor() or platform.machine(), "cpu_model": _cpu_model(),
            "cpus": os.cpu_count(), "python": platform.python_version(),
            "numpy": np.__version__, "scipy": scipy.__version__}
    try:
        import cupy
        n = cupy.cuda.runtime.getDeviceCount()
        info["cupy"] = cupy.__version__
        info["gpus"] = [cupy.cuda.runtime.getDeviceProperties(d)["name"].decode() for d in range(n)]
    except Exception:
        info["gpus"] = []
    return info


def save_result(path, kind, command, rows=None, **extra):
    """Write a result file: kind, date, command, machine, rows and ``extra`` (JSON)."""
    doc = {"kind": kind, "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
           "command": command, "machine": machine(), **({"rows": rows} if rows is not None else {}),
           **extra}
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1, default=float)
    os.replace(tmp, path)
    return path


def command_line() -> str:
    """This process's command line, for result files."""
    return " ".join([os.path.basename(sys.argv[0])] + sys.argv[1:])
