"""Why a scan's batch steps slower in a Dask worker than in process on a GPU (#26): on 4 H200
(2026-11-26) a 1000-member atom_hhg batch's loop took 5.2-5.5 s in a worker against 4.9-5.0 s
in process, with Dask's profiler off and with or without the calm event loop of
tdse.studies.scan.WORKER_CONFIG (which closes the same gap on the CPU:
benchmarks/probes/worker_tick.py; the interpreter's garbage collector does not: a worker
holds about as many objects as this process).  One GPU is enough: every variant runs the
same batch on GPU 0, one at a time, alternated, the loop's own seconds (run_batch's
"seconds") printed:

  in process                      this process, its main thread
  task                            a Dask task (the worker's task thread), WORKER_CONFIG
  task, plan ahead off            the same, TDSE_PLAN_AHEAD=0 in the worker
  worker's main thread            Client.run: the worker's event-loop thread

Device probe:  PYTHONPATH=.:/tmp/site python benchmarks/probes/worker_gpu.py [members] [rounds]
(Dask's wheels as in dask_gpus.sh.)  A dry run on a CPU: BACKEND=numpy T_END=5 ... 4 1
"""
import os
import sys

import dask
from dask.distributed import Client, LocalCluster

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
from tdse import config as cfgmod  # noqa: E402
from tdse.studies.scan import WORKER_CONFIG, run_batch  # noqa: E402

INPUT = os.path.join(os.path.dirname(__file__), "..", "..", "inputs", "atom_hhg.toml")


def batch(members, plan_ahead="1"):
    import numpy as np
    os.environ["TDSE_PLAN_AHEAD"] = plan_ahead
    cfg = cfgmod.load(INPUT).with_value("propagator.time_error", "none").with_value(
        "propagator.method", "chebyshev")
    if os.environ.get("T_END"):
        cfg = cfg.with_value("time.t_end", float(os.environ["T_END"]))
    cfgs = [cfg.with_value("field.E0", float(e)) for e in np.linspace(0.02, 0.08, members)]
    return run_batch(cfgs, os.environ.get("BACKEND", "cupy"))["seconds"]


if __name__ == "__main__":
    members = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    batch(2)                                                   # warm this process
    with dask.config.set(WORKER_CONFIG):
        with LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                          dashboard_address=None) as cl, Client(cl) as c:
            c.submit(batch, 2, pure=False).result()            # warm the task thread
            c.run(batch, 2)                                    # and the event-loop thread
            for r in range(rounds):
                rows = {"in process": batch(members),
                        "task": c.submit(batch, members, pure=False).result(),
                        "task, plan ahead off": c.submit(batch, members, "0", pure=False).result(),
                        "worker's main thread": next(iter(c.run(batch, members).values()))}
                for name, s in rows.items():
                    print(f"round {r}  {name:24s} {s:7.3f} s", flush=True)
