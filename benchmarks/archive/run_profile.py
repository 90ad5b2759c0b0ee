"""cProfile of one `tdse.run` in process (where a run's time goes besides its steps):
python benchmarks/archive/run_profile.py INPUT N STENCIL STEPS POP_EVERY BACKEND."""
import cProfile
import os
import dataclasses
import pstats
import sys
import tempfile
import time

from tdse import config as cfgmod
from tdse.run.driver import prepare, run


def per_call(f, reps=300):
    """Seconds a call of ``f()`` takes: the mean of ``reps`` after one warm call."""
    f()
    t0 = time.perf_counter()
    for _ in range(reps):
        f()
    return (time.perf_counter() - t0) / reps


def case_config(inp, n, st, steps, pe, method="chebyshev"):
    """The probes' case as a config: INPUT at N points with the STENCIL, ``method``, no
    time-error estimate, STEPS steps, H(t)'s populations every POP_EVERY (0: the input's)."""
    st = int(st) if st in ("3", "5") else st
    base = cfgmod.load(inp)
    w = base.grid.x_max - base.grid.x_min
    cfg = dataclasses.replace(base, grid=dataclasses.replace(base.grid, dx=w / int(n), stencil=st))
    cfg = cfg.with_value("propagator.method", method).with_value("propagator.time_error", "none")
    cfg = cfg.with_value("time.t_end", int(steps) * cfg.time.dt)
    if int(pe):
        cfg = cfg.with_value("output.populations_every", int(pe))
    return cfg


def cli_run(cmd, path, out, name, backend, env):
    """`tdse run` of the input at ``path`` (``cmd``: how the CLI is started, e.g.
    [python, "-m", "tdse"]) into ``out``, as a user starts it (quiet, no plots): (wall
    seconds, the file's loop clock, H(t)'s pair calls, the seconds the loop waited for
    them, the return code and the end of stderr)."""
    import subprocess

    import h5py
    t = time.perf_counter()
    r = subprocess.run(cmd + ["run", path, "--out", out, "--backend", backend, "--quiet",
                              "--no-plots", "--force", "--yes", "--allow-inaccurate"],
                       env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t
    with h5py.File(os.path.join(out, f"{name}.h5")) as f:
        a = f.attrs
        return (wall, float(a["wall_seconds"]), int(a["eigenpairs_calls"]),
                float(a["eigenpairs_wait_seconds"]), r.returncode, r.stderr.strip()[-200:])


def observers_of(plan, writer, which):
    """The run's observers named in ``which`` ("O" observables, "S" snapshots, "P" a
    disabled progress bar), in a run's order, writing to ``writer`` (the in-process probes')."""
    from tdse.run import observers as O
    c = plan.config
    obs = []
    if "O" in which:
        obs.append(O.Observables(plan, writer))
    if "S" in which:
        obs.append(O.Snapshots(plan, writer))
    if "P" in which:
        obs.append(O.Progress(c.time.steps, 0, c.name, disable=True))
    return obs


def case(inp, n, st, steps, pe, backend):
    """The probes' case (also :mod:`observer_cost`): :func:`case_config` with Chebyshev, and
    its prepared plan."""
    cfg = case_config(inp, n, st, steps, pe)
    return cfg, prepare(cfg, backend=backend, check_resolution=False)


def profiled(plan):
    """(pstats.Stats, wall seconds) of one `run()` of ``plan`` under cProfile, after a warm
    run (kernels, graphs, the worker)."""
    d = tempfile.mkdtemp()
    run(plan, d, force=True)
    t0 = time.perf_counter()
    pr = cProfile.Profile()
    pr.enable()
    run(plan, d, force=True)
    pr.disable()
    return pstats.Stats(pr), time.perf_counter() - t0


if __name__ == "__main__":
    cfg, plan = case(*sys.argv[1:7])
    s, wall = profiled(plan)
    print(f"wall {wall:.3f} s for {cfg.time.steps} steps")
    s.sort_stats("tottime").print_stats(45)
    s.sort_stats("cumulative").print_stats(30)
