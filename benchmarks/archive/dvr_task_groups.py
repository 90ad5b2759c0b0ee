"""#54 / #59 item 5: the look-ahead's tasks of the DVR's dense solver grouped (a task as many
calls as span eigenpairs.TASK_STEPS steps, ``Lookahead.group``) against one call a task (as
before 2026-12-03), on the run-overhead suite's CPU DVR row: h2plus_moving's molecule and grid
(N = 256, the DVR, method auto), 8000 steps, populations every 10, one worker process; and the
same run with populations at its ends only (the base).  Fresh processes, alternating, each run
by ``tdse.simulate``: its wall, the main thread's CPU seconds, its voluntary context switches
(waits: for the GIL, among others), the workers' seconds.
Usage: python dvr_task_groups.py [repeats]"""
import dataclasses
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def one(kind, path, out):
    import resource
    import time

    import tdse
    from tdse.run import eigenpairs
    if kind == "one_call":
        made = eigenpairs.Lookahead.__init__

        def ungrouped(self, *a, **k):
            made(self, *a, **k)
            self.group = 1
        eigenpairs.Lookahead.__init__ = ungrouped
    t0, c0 = time.perf_counter(), time.thread_time()
    r = tdse.simulate(path, backend="numpy", out=out, force=True, allow_inaccurate=True,
                      options={"eigen_workers": "off" if kind == "base" else "on"})
    wall, cpu = time.perf_counter() - t0, time.thread_time() - c0
    waits = resource.getrusage(resource.RUSAGE_SELF).ru_nvcsw
    print(f"{kind:9s} wall {wall:5.2f} s  main thread cpu {cpu:5.2f} s  waits {waits:6d}  "
          f"pairs {r.attrs.get('eigenpairs_seconds', 0.0):5.2f} s")


def main():
    from tdse import config as cfgmod
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 4
    base = cfgmod.load(os.path.join(ROOT, "inputs", "h2plus_moving.toml"))
    width = base.grid.x_max - base.grid.x_min
    cfg = dataclasses.replace(base, grid=dataclasses.replace(base.grid, dx=width / 256, stencil="dvr"))
    cfg = (cfg.with_value("propagator.method", "auto").with_value("propagator.time_error", "none")
           .with_value("time.t_end", 8000 * cfg.time.dt))
    with tempfile.TemporaryDirectory() as d:
        paths = {}
        for kind, every in (("grouped", 10), ("one_call", 10), ("base", 8000)):
            paths[kind] = os.path.join(d, f"{kind}.toml")
            with open(paths[kind], "w") as f:
                f.write(cfgmod.to_toml(cfg.with_value("output.populations_every", every)))
        print(f"# DVR N = 256, 8000 steps, populations every 10 (base: at the ends), {repeats} x each")
        for _ in range(repeats):
            for kind in ("grouped", "one_call", "base"):
                subprocess.run([sys.executable, __file__, "--one", kind, paths[kind], d], check=True,
                               env={**os.environ, "PYTHONPATH": ROOT}, stderr=subprocess.DEVNULL)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--one"]:
        one(*sys.argv[2:5])
    else:
        main()
