"""`tdse run` as a user starts it, with and without H(t)'s eigenpairs worker
(TDSE_EIGENPAIRS_AHEAD = 0 / auto), for a 1-step and an S-step run of the probes' case:
the CLI's wall, the run's own loop clock (the file's wall_seconds) and the rest (start-up,
the worker's start and exit, the last writes), alternated, REPEAT times (#23 item 3: why
the CLI's S-step run carries more fixed cost than its 1-step run).

    python benchmarks/archive/cli_ahead_walls.py INPUT N STENCIL S POP_EVERY BACKEND REPEAT
"""
import os
import sys
import tempfile


HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.dirname(os.path.dirname(HERE))]

from run_profile import case_config, cli_run  # noqa: E402  (the probes' case, the CLI's run)
from tdse import config as cfgmod  # noqa: E402

if __name__ == "__main__":
    inp, n, st, S, pe, backend, rep = sys.argv[1:8]
    cfg = case_config(inp, n, st, 1, pe)
    d = tempfile.mkdtemp()
    path = os.path.join(d, "in.toml")
    env = {**os.environ, "PYTHONPATH": os.path.dirname(os.path.dirname(HERE))}
    for steps in (1, int(S)):
        c = cfg.with_value("time.t_end", steps * cfg.time.dt)
        with open(path, "w") as f:
            f.write(cfgmod.to_toml(c))
        for _ in range(int(rep)):
            for ah in ("0", "auto"):
                wall, loop, calls, waited, rc, _ = cli_run([sys.executable, "-m", "tdse"], path, d, c.name,
                                                         backend, {**env, "TDSE_EIGENPAIRS_AHEAD": ah})
                print(f"steps {steps:6d} ahead {ah:4s} wall {wall:6.2f} s  loop {loop:6.3f} s  rest "
                      f"{wall - loop:5.2f} s  pairs {calls} (loop waited {waited:.3f} s)  rc {rc}",
                      flush=True)
