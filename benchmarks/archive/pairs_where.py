"""Where H(t)'s eigenpairs are computed against a run's loop (#23 item 3), `tdse run` as a
user starts it: in the loop (TDSE_EIGENPAIRS_AHEAD=0), by default (3-point from N =
THREAD_MIN_N in a thread of the run's process on fewer than 4 CPUs -- the thread's
measurement at c5addc4's parent -- in worker processes on more), and in worker processes
(THREAD_MIN_N moved above N for that run); the file's loop clock and the seconds the loop waited for the pairs,
alternated, REPEAT times.

    python benchmarks/archive/pairs_where.py INPUT N STENCIL S POP_EVERY BACKEND REPEAT
"""
import os
import sys
import tempfile


HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path[:0] = [HERE, ROOT]

from run_profile import case_config, cli_run  # noqa: E402  (the probes' case, the CLI's run)
from tdse import config as cfgmod  # noqa: E402

#: the CLI with THREAD_MIN_N moved (the 3-point pairs to worker processes)
PROCESS = ("import sys; import tdse.run.observers as O; O.THREAD_MIN_N = 10 ** 9; "
           "from tdse.ui.cli import main; sys.argv[0] = 'tdse'; main()")

if __name__ == "__main__":
    inp, n, st, S, pe, backend, rep = sys.argv[1:8]
    cfg = case_config(inp, n, st, int(S), pe, method="auto")
    d = tempfile.mkdtemp()
    path = os.path.join(d, "in.toml")
    with open(path, "w") as f:
        f.write(cfgmod.to_toml(cfg))
    env = {**os.environ, "PYTHONPATH": ROOT}
    for _ in range(int(rep)):
        for where in ("loop", "default", "processes"):
            cmd = [sys.executable, "-c", PROCESS] if where == "processes" else [sys.executable, "-m", "tdse"]
            wall, loop, calls, waited, rc, err = cli_run(
                cmd, path, d, cfg.name, backend,
                {**env, "TDSE_EIGENPAIRS_AHEAD": "0" if where == "loop" else "auto"})
            print(f"{where:9s} wall {wall:6.2f} s  loop {loop:6.3f} s  pairs {calls} (loop waited "
                  f"{waited:.3f} s)  rc {rc} {err if rc else ''}", flush=True)
