"""Where a `tdse run` process's wall goes, phase by phase, for a 1-step and an S-step run of
the same moving-centre case (#23 item 3: the S-step CLI run holds ~1 s more outside its
loop clock and start-up phases than the 1-step run; ``run-overhead_h100x1_20261126T185631``;
#54 on 2026-12-02: its close and exit 0.11 s longer, ``run-overhead_h200x1_20261202T030721``).

The parent spawns ``python cli_phases.py --child ...`` per run, which wraps the driver's
pieces with wall-clock stamps (``time.time()``, comparable across the two processes) and
then calls the CLI's ``main`` as ``python -m tdse run`` would:

    spawn -> child start -> imports -> prepare -> writer/observers set up -> loop (evolve:
    steps, then each observer's ``end``) -> _close (final block, close) -> run returned ->
    main returned -> threads joined (atexit, first) -> atexit last -> process gone (parent)

    python -m benchmarks.archive.cli_phases INPUT N STENCIL S POP_EVERY BACKEND REPEAT OUT
"""
import atexit
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

STAMPS = []


def stamp(name):
    STAMPS.append((name, time.time()))


def _wrap(owner, attr, label):
    f = getattr(owner, attr)

    def wrapped(*a, **k):
        stamp(label + ">")
        try:
            return f(*a, **k)
        finally:
            stamp(label + "<")
    setattr(owner, attr, wrapped)


def child(stamps_file, args):
    stamp("child_start")

    def last():
        stamp("atexit_last")
        with open(stamps_file, "w") as f:
            json.dump(STAMPS, f)
    atexit.register(last)          # registered first: runs last
    sys.path.insert(0, ROOT)
    import h5py

    from tdse.run import driver, eigenpairs, plan, rows, sinks, snapshots
    from tdse.ui import cli
    stamp("imported")
    _wrap(plan, "prepare", "prepare")
    _wrap(driver, "evolve", "evolve")
    _wrap(driver, "_close", "close")
    _wrap(driver, "run", "run")
    _wrap(driver, "check_resources", "resources")
    _wrap(driver, "_open_writer", "open_writer")
    _wrap(snapshots.SnapshotWriter, "close", "writer_close")
    for m in ("_wait", "_write_observations", "_settle_resume_slots"):
        _wrap(snapshots.SnapshotWriter, m, m)
    _wrap(h5py.File, "close", "h5close")
    _wrap(eigenpairs.Workers, "close", "workers_close")
    _wrap(eigenpairs.Lookahead, "close", "lookahead_close")
    _wrap(driver, "publish", "publish")     # the .part renamed to the run's file
    for c in (rows.Observables, sinks.Snapshots, sinks.Progress):
        if hasattr(c, "end"):
            _wrap(c, "end", c.__name__ + ".end")
    sys.argv = ["tdse", *args]
    try:
        cli.main()
    except SystemExit:
        pass
    stamp("main_returned")
    atexit.register(lambda: stamp("atexit_first"))   # registered last: runs first


def parent(inp, n, st, S, pe, backend, repeat, out):
    sys.path[:0] = [HERE, ROOT]
    import h5py
    from run_profile import case_config  # the probes' case
    from tdse import config as cfgmod
    os.makedirs(out, exist_ok=True)
    cfg = case_config(inp, n, st, 1, pe, method="auto")
    cfg = cfg.with_value("run.eigen_workers", "on")    # the 1-step run too, as the suite has it
    d = tempfile.mkdtemp()
    path = os.path.join(d, "in.toml")
    sf = os.path.join(d, "stamps.json")
    rows = []
    for steps in [1, int(S)] * int(repeat):
        c = cfg.with_value("time.t_end", steps * cfg.time.dt)
        with open(path, "w") as f:
            f.write(cfgmod.to_toml(c))
        t_spawn = time.time()
        r = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", sf, "run", path,
                            "--out", d, "--backend", backend, "--quiet", "--no-plots", "--force",
                            "--yes", "--allow-inaccurate"], capture_output=True, text=True,
                           env={**os.environ, "PYTHONPATH": ROOT})
        t_gone = time.time()
        with open(sf) as f:
            st_ = json.load(f)
        with h5py.File(os.path.join(d, f"{c.name}.h5")) as f:
            loop = float(f.attrs["wall_seconds"])
            prep = json.loads(f.attrs.get("prepare_seconds", "{}"))
        marks = [("spawn", t_spawn)] + [tuple(s) for s in st_] + [("gone", t_gone)]
        gaps = [(b[0], round(b[1] - a[1], 4)) for a, b in zip(marks, marks[1:])]
        if os.path.exists(os.path.join(d, f"{c.name}.h5")):
            os.remove(os.path.join(d, f"{c.name}.h5"))     # each run a new file, as the suite
        row = {"steps": steps, "rc": r.returncode, "wall": t_gone - t_spawn, "loop_clock": loop,
               "prepare_phases": prep, "gaps": gaps}
        rows.append(row)
        print(f"steps {steps:7d} wall {row['wall']:7.3f} loop {loop:7.3f} rc {r.returncode}", flush=True)
        print("   " + "  ".join(f"{k} {v:.3f}" for k, v in gaps if v >= 0.005), flush=True)
        if r.returncode:
            print(r.stderr[-1500:])
    with open(os.path.join(out, f"cli_phases_{n}_{st}_S{S}_pe{pe}_{backend}.json"), "w") as f:
        json.dump(rows, f, indent=1)


if __name__ == "__main__":
    if sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3:])
    else:
        parent(*sys.argv[1:9])
