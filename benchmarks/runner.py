"""``python -m benchmarks``: one runner for every benchmark suite.

    python -m benchmarks list                         # the suites
    python -m benchmarks SUITE [options] [--out DIR]  # run one, write its JSON
    python -m benchmarks compare NEW.json OLD.json    # headline numbers side by side
    python -m benchmarks index                        # regenerate benchmarks/README.md's tables
    python -m benchmarks tiles TUNE.json ...          # the shipped tile table (mgemm/data)

Each run writes ``results/<suite>_<machine>_<date>.json`` (or into ``--out``) holding the
suite, the date, the exact command, the machine (host, CPUs, GPUs) and the library
versions next to the rows, so a number can be traced to how it was made.  The results
index in README.md is generated from those files, never typed by hand.
"""
from __future__ import annotations

import argparse
import datetime as dt
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.join(HERE, "results")


def machine_tag(m: dict) -> str:
    """A short machine name for file names: ``h200x4``, ``h100x1``, ``cpu2``."""
    gpus = m.get("gpus") or []
    if gpus:
        found = re.search(r"([A-Z]\d{2,4}[A-Za-z]*)", gpus[0].replace("NVIDIA", ""))
        model = (found.group(1) if found else gpus[0].split()[-1]).lower()
        return f"{model}x{len(gpus)}"
    return f"cpu{m.get('cpus') or 1}"


def versions() -> dict:
    """Versions of the project and of every library a suite may use."""
    import importlib
    out = {}
    for mod in ("tdse", "mgemm", "numpy", "scipy", "cupy", "torch", "jax", "h5py"):
        if mod in ("torch", "jax") and mod not in sys.modules:
            continue  # not imported by this suite: do not pay for the import
        try:
            out[mod] = importlib.import_module(mod).__version__
        except Exception:
            pass
    return out


def save(suite: str, rows, out_dir=None, argv=None, **extra) -> str:
    """Write ``<suite>_<machine>_<date>.json`` and return its path (``argv``: the
    runner's arguments, recorded as the command)."""
    from mgemm.tools.common import machine, save_result
    m = machine()
    now = dt.datetime.now(dt.timezone.utc)
    name = f"{suite}_{machine_tag(m)}_{now.strftime('%Y%m%dT%H%M%S')}.json"
    path = os.path.join(out_dir or RESULTS, name)
    command = "python -m benchmarks " + " ".join(sys.argv[1:] if argv is None else argv)
    return save_result(path, suite, command, rows, versions=versions(), **extra)


def main(argv=None):
    from . import index, suites
    ap = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="suite", required=True)
    sub.add_parser("list", help="the suites and what they measure")
    c = sub.add_parser("compare", help="headline numbers of two result files side by side")
    c.add_argument("new")
    c.add_argument("old")
    sub.add_parser("index", help="regenerate the tables of benchmarks/README.md")
    tl = sub.add_parser("tiles", help="merge tune results into mgemm/data/tiles.json "
                                      "(the measured best tiles shipped per GPU model)")
    tl.add_argument("files", nargs="+", help="tune result files (kind tune), newest last")
    for name, s in suites.SUITES.items():
        p = sub.add_parser(name, help=s.help, description=s.help)
        p.add_argument("--out", default=None, help="folder for the JSON (default benchmarks/results)")
        s.add_args(p)
    a = ap.parse_args(argv)
    if a.suite == "list":
        for name, s in suites.SUITES.items():
            print(f"{name:12s} {'GPU' if s.gpu else 'CPU'}  {s.help}")
        return 0
    if a.suite == "index":
        print(f"wrote {index.write_readme()}")
        print(f"wrote {index.write_results()}")
        return 0
    if a.suite == "tiles":
        print(f"wrote {index.write_tiles(a.files)}")
        return 0
    if a.suite == "compare":
        for line in index.compare(a.new, a.old):
            print(line)
        return 0
    s = suites.SUITES[a.suite]
    if s.gpu:
        from mgemm.arrays import gpu_count
        if gpu_count() == 0:
            print(f"error: suite {a.suite} needs CuPy and a GPU", file=sys.stderr)
            return 2
    from tdse.config import ConfigError
    try:
        rows, extra = s.run(a)
    except ConfigError as e:          # a bad value for an input key: one line, exit 2
        print(f"error: {e}", file=sys.stderr)
        return 2
    path = save(a.suite, rows, a.out, argv=argv, **extra)
    for line in index.render({"kind": a.suite, "rows": rows, **extra}):
        print(line)
    print(f"saved {path}")
    return 0
