"""`tdse run` as a user starts it, under cProfile, for a 1-step and an S-step run of the
same moving-centre case (#23 item 3: where the S-step CLI run's extra fixed cost outside
its loop goes).  Writes, per run, the wall, the file's loop clock and the 40 functions of
largest cumulative time to OUT/cli_profile_S<steps>.txt.

    python benchmarks/archive/cli_profile.py INPUT N STENCIL S POP_EVERY BACKEND OUT
"""
import os
import subprocess
import sys
import tempfile
import time

import h5py

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path[:0] = [HERE, ROOT]

from run_profile import case_config  # noqa: E402  (the probes' case)
from tdse import config as cfgmod  # noqa: E402

if __name__ == "__main__":
    inp, n, st, S, pe, backend, out = sys.argv[1:8]
    os.makedirs(out, exist_ok=True)
    cfg = case_config(inp, n, st, 1, pe, method="auto")
    d = tempfile.mkdtemp()
    path = os.path.join(d, "in.toml")
    env = {**os.environ, "PYTHONPATH": ROOT}
    for steps in (1, int(S), 1, int(S)):
        c = cfg.with_value("time.t_end", steps * cfg.time.dt)
        with open(path, "w") as f:
            f.write(cfgmod.to_toml(c))
        prof = os.path.join(d, "p.out")
        t = time.perf_counter()
        r = subprocess.run([sys.executable, "-m", "cProfile", "-o", prof, "-m", "tdse", "run", path,
                            "--out", d, "--backend", backend, "--quiet", "--no-plots", "--force",
                            "--yes", "--allow-inaccurate"], env=env, capture_output=True, text=True)
        wall = time.perf_counter() - t
        with h5py.File(os.path.join(d, f"{c.name}.h5")) as f:
            loop = float(f.attrs["wall_seconds"])
        line = f"steps {steps:6d} wall {wall:6.2f} s  loop {loop:6.3f} s  rest {wall - loop:5.2f} s rc {r.returncode}"
        print(line, flush=True)
        import io
        import pstats
        s = io.StringIO()
        pstats.Stats(prof, stream=s).sort_stats("cumulative").print_stats(60)
        with open(os.path.join(out, f"cli_profile_S{steps}.txt"), "w") as f:
            f.write(line + "\n" + r.stderr[-2000:] + "\n" + s.getvalue())
