"""A batch's time loop in this process against the same in a Dask worker (one
single-threaded worker of a LocalCluster), with Dask's defaults less the profiler and with
tdse.studies.scan.WORKER_CONFIG (tick 1 s, system monitor 5 s, memory monitor 1 s): the
worker's main thread, woken by those every 20-500 ms, takes the interpreter lock from a
Python-driven loop.  A small atom_hhg batch (2 members, dx = 2, 600 steps: host-bound),
the best of 3 loops a task, configurations alternated.

    OMP_NUM_THREADS=1 python benchmarks/archive/worker_tick.py
"""
import os
import sys

import dask
from dask.distributed import Client, LocalCluster

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
from tdse import config as cfgmod  # noqa: E402
from tdse.studies.scan import WORKER_CONFIG, run_batch  # noqa: E402

INPUT = os.path.join(os.path.dirname(__file__), "..", "..", "inputs", "atom_hhg.toml")


def work():
    cfg = cfgmod.load(INPUT).with_value("propagator.time_error", "none").with_value(
        "time.t_end", 60.0).with_value("grid.dx", 2.0)
    cs = [cfg.with_value("field.E0", e) for e in (0.03, 0.05)]
    return min(run_batch(cs)["seconds"] for _ in range(3))


if __name__ == "__main__":
    print(f"in process: {work():.4f} {work():.4f} s")
    plain = {"distributed.worker.profile.enabled": False}
    for _ in range(3):
        for name, conf in (("profiler off, Dask's other defaults", plain),
                           ("WORKER_CONFIG", WORKER_CONFIG)):
            with dask.config.set(conf):
                with LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cl, Client(cl) as c:
                    c.submit(work, pure=False).result()
                    got = [c.submit(work, pure=False).result() for _ in range(2)]
            print(f"{name}: {got[0]:.4f} {got[1]:.4f} s")
    print(f"in process: {work():.4f} {work():.4f} s")
