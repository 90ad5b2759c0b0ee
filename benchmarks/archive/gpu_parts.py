"""What each observer costs a GPU run, in process (#23 item 3, one GPU at N = 8192): the same
prepared plan's `evolve` (synchronised at its end) with no observer, the progress bar, the
observables with H(t)'s populations only at the ends and every POP_EVERY steps, the
snapshots into memory and into an HDF5 file, all three into the file, and a whole
`run()` (the driver: interrupts, the file's set-up and close).  Alternated, REPEAT times;
seconds of the whole loop, and each over the bare loop.

    python benchmarks/archive/gpu_parts.py INPUT N STENCIL STEPS POP_EVERY [REPEAT]
"""
import os
import sys
import tempfile
import time
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.dirname(os.path.dirname(HERE))]

import tdse  # noqa: E402
from run_profile import case_config, observers_of  # noqa: E402  (the probes' case)
from tdse.run.driver import run  # noqa: E402
from tdse.run.loop import evolve  # noqa: E402
from tdse.run.snapshots import MemoryWriter, SnapshotWriter  # noqa: E402
from tdse.model.potential import total  # noqa: E402


CPU = {}


def main(inp, n, stencil, steps, pe, repeat=2):
    warnings.simplefilter("ignore")
    # a script's run is not spawn-safe by default (tdse.run.observers._spawn_safe): this
    # one is guarded, and its pairs go to the workers as the CLI's do
    os.environ.setdefault("TDSE_EIGENPAIRS_AHEAD", "1")
    steps, pe = int(steps), int(pe)
    cfg = case_config(inp, n, stencil, steps, pe)
    backend = os.environ.get("PROBE_BACKEND", "cupy")
    plans = {pe: tdse.prepare(cfg, backend=backend, check_resolution=False),
             steps: tdse.prepare(cfg.with_value("output.populations_every", steps),
                                 backend=backend, check_resolution=False)}
    xp = plans[pe].backend.xp

    def sync():
        if xp is not np:
            xp.cuda.Device().synchronize()
    d = tempfile.mkdtemp()

    def writer(plan, file):
        c = plan.config
        K = c.output.populations
        kw = dict(config=c, x=plan.x, v0=total(c.potential, plan.x, 0.0), energies=plan.energies[:K],
                  phi=plan.states[:K], attrs={})
        return SnapshotWriter(os.path.join(d, "p.h5"), force=True, **kw) if file else MemoryWriter(**kw)

    def go(plan, which, file=False):
        wr = writer(plan, file)
        obs = observers_of(plan, wr, which)
        st = plan.stepper()
        psi = xp.asarray(plan.psi0)
        sync()
        t, cpu = time.perf_counter(), time.thread_time()
        with plan.backend.limit():
            evolve(plan, psi, obs, stepper=st)
        if file:
            wr.close(True)
        sync()
        CPU[(which or "none") + (" file" if file else "")] = time.thread_time() - cpu
        return time.perf_counter() - t

    def whole(plan):
        sync()
        t, c = time.perf_counter(), time.thread_time()
        run(plan, d, force=True)
        CPU["run()"] = time.thread_time() - c
        return time.perf_counter() - t

    go(plans[pe], "OSP", True)            # warm: kernels, graphs, the workers
    print(f"# {inp}, N = {n}, {steps} steps, {stencil}-point, populations every {pe}; seconds "
          f"of evolve (one process, synchronised), and over the bare loop; then the loop thread's CPU seconds", flush=True)
    for _ in range(int(repeat)):
        row = {"none": go(plans[pe], "")}
        row["P"] = go(plans[pe], "P")
        row["O ends"] = go(plans[steps], "O")
        CPU["O ends"] = CPU.pop("O")
        row[f"O every {pe}"] = go(plans[pe], "O")
        row["S memory"] = go(plans[pe], "S")
        row["S file"] = go(plans[pe], "S", True)
        row["OSP file"] = go(plans[pe], "OSP", True)
        row["run()"] = whole(plans[pe])
        row["none again"] = go(plans[pe], "")
        base = 0.5 * (row["none"] + row["none again"])
        print("  ".join(f"{k}: {v:.3f} ({v / base:.3f})" for k, v in row.items()), flush=True)
        print("  the loop thread's CPU seconds: " + "  ".join(f"{k}: {v:.3f}" for k, v in CPU.items()),
              flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:7])
