"""The Dask configuration of the workers a scan runs its batches on
(:func:`tdse.studies.scan.scan` with ``--workers`` or ``--scheduler``)."""
from __future__ import annotations

from ..config import ConfigError

__all__ = ["WORKER_CONFIG", "worker_yaml", "need_dask", "need_dask_cuda", "connect"]


#: the Dask configuration of the clusters a scan starts itself: nothing in a worker that
#: wakes its main thread often enough to take the interpreter lock from the batch's
#: Python-driven time loop -- no statistical profiler (a thread sampling the running task's
#: stack every 10 ms: on one H200 a 1000-member batch stepped 6.15 s in process, 8.97 s in
#: a worker with it, 7.53 s without; ``dask_gpus.sh``, 2026-11-24), and the event loop's
#: tick, the system monitor and the memory monitor at 1 s, 5 s, 1 s (Dask's defaults 20 ms,
#: 500 ms, 100 ms): a small host-bound CPU batch 7-17 % slower in a worker than in process
#: with the defaults, 1-4 % with these (``benchmarks/archive/worker_tick.py``) -- and glibc's
#: own heap trimming: a nanny starts its worker with MALLOC_TRIM_THRESHOLD_=65536 (Dask's
#: ``distributed.nanny.pre-spawn-environ``), which made a 1000-member GPU batch's loop
#: 5.41-5.48 s against 5.04-5.10 s without, in a worker or a plain child process alike
#: (one H200 of 4, 2026-11-26, ``worker_gpu_h200x4_20261126T0211.log``); the nanny's one
#: BLAS thread a worker is kept (without it each worker's host BLAS takes every core: a
#: batch's set-up 9.3-10.7 s instead of 0.2-0.5 s, ``dask_gpus_h200x4_20261126T0216.log``).
#: A cluster of one's own: :func:`worker_yaml`, docs/SCANS.md.
WORKER_CONFIG = {"distributed.worker.profile.enabled": False,
                 "distributed.admin.tick.interval": "1s",
                 "distributed.admin.system-monitor.interval": "5s",
                 "distributed.worker.memory.monitor-interval": "1s",
                 "distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": None}


def worker_yaml() -> str:
    """:data:`WORKER_CONFIG` as a Dask YAML file, for workers one starts oneself (``dask
    worker`` by hand, dask-jobqueue): ``DASK_CONFIG=FILE`` in their environment, or the
    file in ``~/.config/dask/``."""
    import yaml
    tree = {}
    for key, value in WORKER_CONFIG.items():
        *path, leaf = key.split(".")
        node = tree
        for p in path:
            node = node.setdefault(p, {})
        node[leaf] = value
    return ("# Dask configuration for the workers of a tdse scan (tdse.studies.workers.WORKER_CONFIG)\n"
            + yaml.safe_dump(tree, sort_keys=True))


def need_dask(option):
    """Dask's distributed scheduler, for a scan across processes (the ``cluster`` extra);
    a one-line ConfigError before any work where it is not installed."""
    try:
        import dask.distributed  # noqa: F401
    except ImportError:
        raise ConfigError(option, "given", "a scan across processes needs Dask (pip install -e "
                          "\".[cluster]\"); without it the scan runs in this process (no "
                          "--workers, no --scheduler)") from None


def need_dask_cuda():
    try:
        import dask_cuda  # noqa: F401
    except ImportError:
        raise ConfigError("--workers", "with --backend cupy", "one worker per GPU needs dask-cuda "
                          "(pip install -e \".[cuda-cluster]\"); or run in this process on one GPU "
                          "(no --workers)") from None


def connect(target, scheduler=None):
    """A dask.distributed Client of ``target`` (a cluster of this process's, or the address
    given as --scheduler): ConfigError (one line) where that address cannot be reached (Dask's
    OSError after its connect timeout had been a traceback)."""
    from dask.distributed import Client
    try:
        return Client(target)
    except (OSError, TimeoutError) as e:
        if scheduler is None:
            raise
        raise ConfigError("--scheduler", scheduler, f"cannot be reached: {e}") from None
