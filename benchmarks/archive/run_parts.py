"""#54: where a GPU run's loop goes beyond its bare steps, by input keys: `tdse run INPUT` as
a user starts it (a new process each, best of 2 loops from the file's timeline) with the
observables every step or every 100, the snapshots, H(t)'s populations and the eigenpairs
workers each turned off, the writer's thread off, and the interpreter's switch interval set
(``sys.setswitchinterval`` before the CLI starts).  Prints the loop's seconds and us a step.

    python benchmarks/archive/run_parts.py INPUT [LABEL ...]   (on a GPU machine; INPUT e.g.
        archive/large3.toml; LABELs: those variants only)

Two calls of its first version (outputs/, each with part of these variants) are
``run_parts_h200x1_20261129T1741_large3.txt``.
"""
import json
import os
import subprocess
import sys
import tempfile
import time

import h5py

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.dirname(os.path.dirname(HERE))]
from benchmarks.suites import _cli_env  # noqa: E402

OBS100 = ["--set", "output.observables_every=100"]
NO_SNAPS = ["--set", "output.every=20000"]
NO_POPS = ["--set", "output.populations_every=20000"]
NO_WORKERS = ["--set", "run.eigen_workers=off"]
VARIANTS = (("default", [], None), ("default si 1e-3", [], "1e-3"), ("default si 2e-4", [], "2e-4"),
            ("obs100", OBS100, None), ("obs100 si 2e-4", OBS100, "2e-4"),
            ("obs100 snaps20000", OBS100 + NO_SNAPS, None),
            ("obs100 pops20000", OBS100 + NO_POPS, None),
            ("obs100 snaps20000 pops20000", OBS100 + NO_SNAPS + NO_POPS, None),
            ("obs100 snaps20000 pops20000 workers off", OBS100 + NO_SNAPS + NO_POPS + NO_WORKERS, None),
            ("obs100 snaps20000 workers off", OBS100 + NO_SNAPS + NO_WORKERS, None),
            ("default workers off", NO_WORKERS, None),
            ("default io_thread off", ["--set", "run.io_thread=off"], None))


def one(inp, d, extra, si=None):
    name = os.path.splitext(os.path.basename(inp))[0]
    head = [sys.executable, "-m", "tdse"] if si is None else [
        sys.executable, "-c", f"import sys; sys.setswitchinterval({si}); sys.argv[0] = 'tdse'; "
        "from tdse.ui.cli import main; main()"]
    t0 = time.perf_counter()
    r = subprocess.run([*head, "run", inp, "--out", d, "--backend", "cupy", "--quiet", "--no-plots",
                        "--force", *extra], env=_cli_env(), capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if r.returncode:
        return wall, float("nan"), r.stderr[-200:]
    with h5py.File(os.path.join(d, f"{name}.h5")) as f:
        tl = json.loads(f.attrs["timeline"])
        steps = int(f.attrs.get("steps", 20000)) if "steps" in f.attrs else 20000
    return wall, tl["loop_end"] - tl["loop"], steps


if __name__ == "__main__":
    inp, d = sys.argv[1], tempfile.mkdtemp()
    one(inp, d, [])                                   # warm: CUDA's caches, the bytecode
    print(f"# python benchmarks/archive/run_parts.py {inp} ({time.strftime('%Y-%m-%dT%H:%M', time.gmtime())}); "
          f"loop s, best of 2")
    for label, extra, si in VARIANTS:
        if sys.argv[2:] and label not in sys.argv[2:]:
            continue
        runs = [one(inp, d, extra, si) for _ in range(2)]
        loop = min(r[1] for r in runs)
        steps = runs[0][2] if isinstance(runs[0][2], int) else 20000
        print(f"{label:45s} loop {loop:6.3f}  us/step {loop / steps * 1e6:6.1f}  "
              f"wall {min(r[0] for r in runs):6.2f}", flush=True)
