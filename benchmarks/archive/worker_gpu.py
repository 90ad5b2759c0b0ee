"""Why a scan's batch steps slower in a Dask worker than in process on a GPU (#26): on 4 H200
(2026-11-26) a 1000-member atom_hhg batch's loop took 5.2-5.5 s in a worker against 4.9-5.0 s
in process, with Dask's profiler off and with or without the calm event loop of
tdse.studies.scan.WORKER_CONFIG (which closes the same gap on the CPU:
benchmarks/archive/worker_tick.py).  A Dask nanny starts its worker with
``distributed.nanny.pre-spawn-environ``: MALLOC_TRIM_THRESHOLD_=65536 (glibc then gives freed
heap back to the system at every free above 64 KiB) and OMP/MKL/OPENBLAS_NUM_THREADS=1.  One
GPU is enough: every variant runs the same batch on GPU 0, one at a time, alternated, the
loop's own seconds (run_batch's "seconds") printed:

  child                          a fresh python process, this environment
  child, nanny's environment     the same with the nanny's pre-spawn environment
  child, malloc trim only        ... MALLOC_TRIM_THRESHOLD_=65536 alone
  task                           a Dask task (LocalCluster, WORKER_CONFIG, Dask's nanny env)
  task, no pre-spawn environ     the same, the nanny's pre-spawn environment unset

Device probe:  PYTHONPATH=.:/tmp/site python benchmarks/archive/worker_gpu.py [members] [rounds]
(Dask's wheels as in dask_gpus.sh.)  A dry run on a CPU: BACKEND=numpy T_END=5 ... 4 1
"""
import os
import subprocess
import sys

INPUT = os.path.join(os.path.dirname(__file__), "..", "..", "inputs", "atom_hhg.toml")
BASE = dict(os.environ)      # a nanny writes its pre-spawn environment into this process's
NANNY_ENV = {"MALLOC_TRIM_THRESHOLD_": "65536", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
             "OPENBLAS_NUM_THREADS": "1"}


def batch(members):
    import numpy as np
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    from tdse import config as cfgmod
    from tdse.studies.scan import run_batch
    cfg = cfgmod.load(INPUT).with_value("propagator.time_error", "none").with_value(
        "propagator.method", "chebyshev")
    if os.environ.get("T_END"):
        cfg = cfg.with_value("time.t_end", float(os.environ["T_END"]))
    cfgs = [cfg.with_value("field.E0", float(e)) for e in np.linspace(0.02, 0.08, members)]
    return run_batch(cfgs, os.environ.get("BACKEND", "cupy"))["seconds"]


def child(members, env):
    code = (f"import sys; sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r}); "
            f"import worker_gpu as w; w.batch(2); print(w.batch({members}))")
    out = subprocess.run([sys.executable, "-c", code], env={**BASE, **env},
                         capture_output=True, text=True, check=True).stdout
    return float(out.split()[-1])


if __name__ == "__main__":
    import dask
    from dask.distributed import Client, LocalCluster
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
    from tdse.studies.scan import WORKER_CONFIG
    members = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    with dask.config.set(WORKER_CONFIG):
        # the cluster without the nanny's environment first: a nanny sets its pre-spawn
        # environment in this process's os.environ, where the next nanny would inherit it
        with dask.config.set({"distributed.nanny.pre-spawn-environ": {k: None for k in NANNY_ENV}}):
            cl2 = LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                               dashboard_address=None)
        c2 = Client(cl2)
        with LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                          dashboard_address=None) as cl, Client(cl) as c:
            env = c.run(lambda: {k: os.environ.get(k) for k in NANNY_ENV})
            env2 = c2.run(lambda: {k: os.environ.get(k) for k in NANNY_ENV})
            print("worker env:", env, "\nno-environ worker env:", env2, flush=True)
            c.submit(batch, 2, pure=False).result()            # warm the task threads
            c2.submit(batch, 2, pure=False).result()
            for r in range(rounds):
                rows = {"child": child(members, {}),
                        "task": c.submit(batch, members, pure=False).result(),
                        "child, nanny's environment": child(members, NANNY_ENV),
                        "task, no pre-spawn environ": c2.submit(batch, members, pure=False).result(),
                        "child, malloc trim only": child(members, {"MALLOC_TRIM_THRESHOLD_": "65536"})}
                for name, s in rows.items():
                    print(f"round {r}  {name:28s} {s:7.3f} s", flush=True)
            c2.close()
            cl2.close()
