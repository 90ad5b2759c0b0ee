"""Where a small GPU run's loop goes (#59 item 2: atom_hhg's loop 2.1 s on an H200 against
~0.45 s of stepping): `tdse run INPUT` as a user starts it, with the run's parts turned off
one at a time by input keys and options (the context switch, the time error, observables
every step, the file's snapshots), each run's wall and loop (its file's timeline), then one
default run under cProfile (the 45 functions of largest own time and of largest cumulative
time).  Writes OUT/small_run_parts.txt.

    python benchmarks/archive/small_run_parts.py INPUT BACKEND REPEAT OUT
"""
import cProfile
import io
import json
import os
import pstats
import subprocess
import sys
import tempfile
import time

import h5py

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path[:0] = [ROOT]

from benchmarks.suites import _cli_env  # noqa: E402

VARIANTS = (
    ("default", []),
    ("no context switch", ["--set", "run.context_switch=false"]),
    ("time_error none", ["--set", "propagator.time_error=none"]),
    ("observables every 100", ["--set", "output.observables_every=100"]),
    ("all three off", ["--set", "run.context_switch=false", "--set", "propagator.time_error=none",
                       "--set", "output.observables_every=100"]),
)


def one(inp, backend, extra, d):
    env = _cli_env()
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "tdse", "run", inp, "--out", d, "--backend", backend,
                        "--quiet", "--no-plots", "--force", *extra], env=env, capture_output=True,
                       text=True)
    wall = time.perf_counter() - t0
    if r.returncode:
        raise RuntimeError(r.stderr[-500:])
    name = os.path.splitext(os.path.basename(inp))[0]
    with h5py.File(os.path.join(d, f"{name}.h5")) as f:
        tl = json.loads(f.attrs["timeline"])
        te = f.attrs.get("time_error", "{}")
        cs = float(f.attrs.get("context_switch_seconds", 0.0))
    return wall, tl["loop_end"] - tl["loop"], cs, te


if __name__ == "__main__":
    inp, backend, repeat, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    os.makedirs(out, exist_ok=True)
    d = tempfile.mkdtemp()
    lines = [f"# python benchmarks/archive/small_run_parts.py {' '.join(sys.argv[1:4])} OUT "
             f"({time.strftime('%Y-%m-%dT%H:%M', time.gmtime())})"]
    one(inp, backend, [], d)                              # warm: CUDA's caches, the bytecode
    for label, extra in VARIANTS:
        runs = [one(inp, backend, extra, d) for _ in range(repeat)]
        best = min(runs, key=lambda r: r[1])
        lines.append(f"{label:24s} wall {min(r[0] for r in runs):6.3f}  loop {best[1]:6.3f}  "
                     f"(loops {' '.join(f'{r[1]:.3f}' for r in runs)})  switch {best[2]:.3f}")
    sys.argv = ["tdse", "run", inp, "--out", d, "--backend", backend, "--quiet", "--no-plots", "--force"]
    from tdse.ui.cli import main
    prof = cProfile.Profile()
    prof.enable()
    try:
        main(standalone_mode=False)
    finally:
        prof.disable()
    for key in ("tottime", "cumulative"):
        s = io.StringIO()
        pstats.Stats(prof, stream=s).sort_stats(key).print_stats(45)
        lines.append(f"\n## in-process default run under cProfile, by {key}\n" + s.getvalue())
    text = "\n".join(lines)
    with open(os.path.join(out, "small_run_parts.txt"), "w") as f:
        f.write(text + "\n")
    print(text[:6000])
