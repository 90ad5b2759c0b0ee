"""The backend a run computes on, decided once: :class:`Backend` (the array module, its
GPUs, the GEMM options of a step, the host's BLAS threads)."""
from __future__ import annotations

import operator
import os
import statistics
import time
from dataclasses import dataclass

import numpy as np

from mgemm.arrays import cupy_or_none, gpu_count

from ..options import THREAD_ENV, blas_limit, env_threads  # noqa: F401 -- (THREAD_ENV, env_threads) re-exported
from ..config import Config, ConfigError

__all__ = ["Backend", "backend_for", "resolve_backend", "blas_threads", "usable_cpus",
           "gpu_count", "env_threads"]


@dataclass(frozen=True)
class Backend:
    """Where a run computes: ``name`` ("numpy" or "cupy"), ``xp`` the array module,
    ``devices`` the GPU ids (None on the CPU), ``threads`` the host's BLAS threads (on a
    GPU run too: its work on the CPU -- eigenpairs, initial states -- held to them)."""
    name: str
    xp: object
    devices: tuple | None = None
    threads: int | None = None

    @property
    def gpus(self) -> int:
        return len(self.devices) if self.devices else 0

    @property
    def gemm_opts(self) -> dict:
        """mgemm.expm options for a step: on several GPUs U stays in column bands
        (mgemm.dist) and is applied as per-GPU partial sums; otherwise plain expm."""
        if self.name == "cupy" and self.devices and len(self.devices) > 1:
            return {"devices": list(self.devices), "layout": "bands", "output": "banded"}
        return {}

    def limit(self):
        """A context holding the host's BLAS to ``threads``, on a GPU run as on the CPU:
        unheld, each GPU run's BLAS takes every core, and two runs on one machine's two
        GPUs (or two Dask workers) spin each other's threads (measured on 2 H200: a
        1000-member scan 7.5 s alone, 17.9 s beside another on the other GPU)."""
        return blas_limit(self.threads)

    def describe(self) -> str:
        if self.name == "numpy":
            return f"numpy, {self.threads} BLAS thread(s)"
        return f"cupy, GPU(s) {', '.join(map(str, self.devices))}"


def backend_for(config: Config, backend="auto", devices=None, threads=None) -> Backend:
    """The :class:`Backend` of a run of ``config`` (ConfigError naming the option); a
    Python function's V on the CPU unless "cupy" is asked for (it is evaluated on the host
    at every step: a GPU waits for it)."""
    from ..model.potential import host_only
    if backend == "auto" and host_only(config.potential):
        backend = "numpy"
    name, xp, devs = resolve_backend(backend, devices)
    return Backend(name, xp, tuple(devs) if devs else None, blas_threads(config, threads))


def resolve_backend(backend: str, devices=None):
    """'auto' -> 'cupy' when CuPy sees a GPU, else 'numpy'.  Returns (name, xp, devices).
    ``devices``: GPU ids, integers (checked on any machine: a string's characters had been
    taken for ids, a TypeError on a GPU machine)."""
    if devices is not None:
        try:
            devices = [operator.index(d) for d in devices]
        except TypeError:
            raise ConfigError("--devices", devices, "must be GPU ids, a list of integers, e.g. [0, 1]") from None
    n = gpu_count()
    if backend == "auto":
        backend = "cupy" if n else "numpy"
    if backend == "numpy":
        if devices:
            import warnings
            warnings.warn(f"--devices = {devices}: GPU ids, but this run is on the CPU ("
                          + ("no CUDA GPU found" if not n else "its backend is numpy") + "): they are not used",
                          RuntimeWarning, stacklevel=2)
        return "numpy", np, None
    if backend != "cupy":
        raise ConfigError("--backend", backend, "must be auto, numpy or cupy")
    if cupy_or_none() is None:
        raise ConfigError("--backend", backend, "CuPy is not installed (pip install '.[gpu]')")
    if n == 0:
        raise ConfigError("--backend", backend, "no CUDA GPU found")
    devices = list(range(n)) if devices is None else list(devices)
    bad = [d for d in devices if not 0 <= d < n]
    if bad:
        raise ConfigError("--devices", devices, f"only GPUs 0..{n - 1} exist")
    return "cupy", cupy_or_none(), devices


def running_others(samples=5, interval=0.002, cpus=None) -> float | None:
    """Threads of other jobs running now, the median of a few samples ``interval`` seconds
    apart; None where /proc does not say (not Linux).  On the whole machine (``cpus``
    None): /proc/stat's ``procs_running`` less this process's own threads in state R
    (/proc/self/task/*/stat) and its descendants' (:func:`descendants`) -- and where that
    leaves any, the threads in state R counted one by one (:func:`_running_on`), the
    kernel's own left out.  Confined to a set of CPUs (``cpus``: a cpuset, a Slurm
    allocation, taskset): those counted one by one whose last CPU (/proc/PID/task/TID/stat,
    field 39) is one of them -- the machine's other jobs run elsewhere and take none of ours.

    Not this process's descendants: they are its own work -- the look-ahead's fork server,
    started at a run's end for the next run's workers (:mod:`tdse.run.eigenpairs`), still
    importing when a script's next run starts.  Not the kernel's threads (kdamond, a
    kworker: a few ms of memory work after a run's end).  The median, not the mean: a job
    keeps its CPUs busy in most samples.  Each had counted as a busy CPU at a script's
    second run on 2 CPUs, which then had no look-ahead worker: its pairs all computed in its
    loop, which waited 0.11-0.12 s against 0.01 (``benchmarks/results/second_run_cpu2_20261201T0431.txt``)."""
    try:
        ours = descendants()
    except OSError:
        ours = set()
    count = (lambda: _running_now(ours)) if cpus is None else (lambda: _running_on(cpus, ours))
    got = _median_of(count, samples, interval)
    if got is not None and got > 0 and cpus is None:      # (a few ms of /proc only then)
        got = _median_of(lambda: _running_on(None, ours), samples, interval)
    return got


def _median_of(count, samples, interval):
    counts = []
    for i in range(samples):
        try:
            counts.append(count())
        except (OSError, StopIteration, ValueError, IndexError):
            return None
        if i + 1 < samples:
            time.sleep(interval)
    return float(statistics.median(counts))


def _task_fields(path):
    """The fields of a /proc stat file after the command name: [state, ppid, ...]."""
    with open(path) as f:
        return f.read().rsplit(")", 1)[1].split()


def _per_thread(pid, leaf, parse, strict=False) -> list:
    """``parse`` of /proc/PID/task/TID/``leaf`` for each thread of process ``pid`` (none
    where the process ended meanwhile, unless ``strict``; a thread that ended is left out)."""
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        if strict:
            raise
        return []
    out = []
    for tid in tasks:
        try:
            out.append(parse(f"/proc/{pid}/task/{tid}/{leaf}"))
        except (OSError, ValueError):
            pass
    return out


def _pids(path) -> list:
    with open(path) as f:
        return [int(k) for k in f.read().split()]


def descendants() -> set:
    """The PIDs of this process's children, theirs, and so on (Linux's
    /proc/PID/task/TID/children; an empty set where it does not say)."""
    out, todo = set(), [os.getpid()]
    while todo:
        for kids in _per_thread(todo.pop(), "children", _pids):
            for k in kids:
                if k not in out:
                    out.add(k)
                    todo.append(k)
    return out


def running_in(pids) -> int:
    """The threads in state R of the processes ``pids`` (/proc/PID/task/TID/stat)."""
    return sum(f[0] == "R" for pid in pids for f in _per_thread(pid, "stat", _task_fields))


def _running_now(ours=()) -> int:
    with open("/proc/stat") as f:
        running = next(int(line.split()[1]) for line in f if line.startswith("procs_running"))
    mine = sum(f[0] == "R" for f in _per_thread("self", "stat", _task_fields, strict=True))
    return max(0, running - max(mine, 1) - running_in(ours))


#: a kernel thread's flag in /proc/PID/stat (field 9; include/linux/sched.h)
PF_KTHREAD = 0x00200000


def _runs_here(f, cpus) -> bool:
    """Whether a thread (its stat fields ``f``) is in state R, not the kernel's (field 9's
    flags), and with ``cpus`` last ran on one of them (field 39)."""
    return f[0] == "R" and not int(f[6]) & PF_KTHREAD and (cpus is None or int(f[36]) in cpus)


def _running_on(cpus, ours=()) -> int:
    """Other processes' threads that :func:`_runs_here`, not this process's nor ``ours``."""
    me = os.getpid()
    others = [pid for pid in os.listdir("/proc") if pid.isdigit() and int(pid) != me and int(pid) not in ours]
    return sum(_runs_here(f, cpus) for pid in others for f in _per_thread(pid, "stat", _task_fields))


#: (monotonic time, the busy count) of :func:`usable_cpus`' last look at the machine
_BUSY = [None]
#: :func:`usable_cpus` counts the busy CPUs again only after this many seconds: a run asks
#: up to 3 times while it starts (look-ahead or not, BLAS threads), ~10 ms of samples each
BUSY_SECONDS = 1.0


def usable_cpus() -> int:
    """CPUs this process may run on, less those other processes keep busy, at most
    :func:`env_threads` where the environment sets a count, at least 1.  Busy: the threads
    of others running now (:func:`running_others`, on this process's CPUs alone where it is
    confined to some; the 1-minute load average lags both ways: a job that ended half a
    minute ago would still hold its CPUs, one started just now would not yet), or where
    /proc does not say, the 1-minute load average; counted once within
    :data:`BUSY_SECONDS` (the same count for a run's start)."""
    try:
        mine = os.sched_getaffinity(0)
    except (AttributeError, OSError):  # pragma: no cover
        mine = set(range(os.cpu_count() or 1))
    n = min(len(mine), env_threads() or len(mine))
    cpus = mine if len(mine) < (os.cpu_count() or 0) else None
    last = _BUSY[0]
    if last is not None and last[1] == cpus and time.monotonic() - last[0] < BUSY_SECONDS:
        busy = last[2]
    else:
        busy = running_others(cpus=cpus)
        if busy is None:
            try:
                busy = os.getloadavg()[0]
            except OSError:  # pragma: no cover
                busy = 0.0
        _BUSY[0] = (time.monotonic(), cpus, busy)
    return max(1, n - int(busy + 0.5))


def blas_threads(config: Config, requested: int | None = None) -> int:
    """BLAS threads for a CPU run: ``requested``, else by matrix size -- one thread below
    N = 512 (the products are too small to share; measured on 2 cores: a 256^2 exponent
    runs as fast on 1 thread as on 2, and 10x slower when a second thread competes with
    another process), then one per 512 rows, up to the usable CPUs.  One for psi by
    Chebyshev (and by auto's choice on a 3- or 5-point grid, Chebyshev there): its products
    are band slices or the DVR's matrix-vector products, and a second BLAS thread won
    nothing -- h2plus_moving's molecule on 2 cores, populations at the ends: N = 1024
    3-point 2.49 s on 1 thread against 3.20 s on 2 (1000 steps), 5-point 2.97 / 3.49, the DVR
    9.72 / 9.84, N = 2048 9.25 / 10.00, 12.60 / 12.67, 45.6 / 45.6, the DVR at N = 4096
    28.5 / 29.5 (100 steps; ``blas_threads_cpu2_20261130T0125.txt``) -- and the other CPU is
    then free for H(t)'s eigenpairs ahead (:mod:`tdse.run.eigenpairs`).  ``auto`` elsewhere:
    by size until auto has chosen, then the chosen method's (:func:`tdse.run.plan.prepare`)."""
    if requested is not None:
        if requested < 1:
            raise ConfigError("--threads", requested, "must be >= 1")
        return requested
    from ..numerics import exponentials
    n, pr = config.grid.n, config.propagator
    if not pr.operator and (exponentials.get(pr.method).matrix_free
                            or (exponentials.is_auto(pr.method) and config.grid.stencil in (3, 5))):
        return 1
    return 1 if n < 512 else max(1, min(usable_cpus(), n // 512))

