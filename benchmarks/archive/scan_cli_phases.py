"""#59 item 1: `tdse scan`'s wall as a new process split into phases (1000 atom_hhg members
on a GPU: the CLI's wall x1.66 the in-process scan's, scan_h200x1_20261130T194302.json):
the interpreter's start, the CLI's imports, the set-up before the scan, the scan (its
batches), the spectra, the file, the map PNG, the rest up to the process's end.  Each CLI
run in a new process through this file's child mode (the CLI's functions wrapped with
clocks, time.time() as the parent's), after one warm-up process (CuPy's kernel cache).

    python benchmarks/archive/scan_cli_phases.py MEMBERS BACKEND [RUNS] [CLI_OPTIONS ...]
"""
import json
import os
import subprocess
import sys
import tempfile
import time

if len(sys.argv) > 1 and sys.argv[1] == "child":
    marks = {"interpreter": time.time()}
    import atexit

    def last():         # (the last atexit handler to run; SCAN_PROBE_EXIT=1: then os._exit)
        print(f"ATEXIT {time.time()!r}", flush=True)
        if os.environ.get("SCAN_PROBE_EXIT") == "1":
            sys.stderr.flush()
            os._exit(0)
    atexit.register(last)
    sys.path.insert(0, os.getcwd())
    import tdse.ui.cli as cli
    import tdse.run.scanfile as scanfile
    import tdse.studies.scan as studies
    wrap = [(studies, "scan"), (studies, "spectra"), (scanfile, "write")]
    if "--plots" in sys.argv:       # (the CLI imports them only then)
        import tdse.ui.plots as plots
        wrap.append((plots, "plot_scan_map"))
    marks["imports"] = time.time()
    for mod, name in wrap:
        real = getattr(mod, name)

        def wrapped(*a, _real=real, _name=name, **k):
            marks.setdefault(f"{_name}0", time.time())
            try:
                return _real(*a, **k)
            finally:
                marks[f"{_name}1"] = time.time()
        setattr(mod, name, wrapped)
    try:
        cli.main(sys.argv[2:], standalone_mode=False)
    finally:
        marks["end"] = time.time()
        print("MARKS " + json.dumps(marks))
    sys.exit(0)

members, backend = int(sys.argv[1]), sys.argv[2]
runs = int(sys.argv[3]) if len(sys.argv) > 3 else 3
extra = sys.argv[4:]
d = tempfile.mkdtemp(prefix="scan-cli-phases-")
sys.path.insert(0, os.getcwd())
from tdse import config as cfgmod    # noqa: E402

cfg = cfgmod.load("inputs/atom_hhg.toml").with_value("propagator.time_error", "none") \
    .with_value("propagator.method", "chebyshev")
path = os.path.join(d, "scan.toml")
with open(path, "w") as f:
    f.write(cfgmod.to_toml(cfg))
args = ["scan", path, "--set", f"field.E0=0.02:0.08:{members}", "--backend", backend,
        "--save", "final", "--out", os.path.join(d, "out"), "-q", "--force", *extra]
env = {**os.environ, "PYTHONPATH": os.getcwd()}
if env.get("PYTHONDONTWRITEBYTECODE"):   # (as benchmarks' _cli_env: tdse compiled once, not each run)
    env.pop("PYTHONDONTWRITEBYTECODE")
    env["PYTHONPYCACHEPREFIX"] = tempfile.mkdtemp(prefix="scan-cli-pycache-")
print(f"# {members} atom_hhg members, --backend {backend} {' '.join(extra)}: seconds by phase "
      f"(start: the interpreter's start and its first import; imports: tdse.ui.cli, the "
      f"studies (and with --plots the plots); set-up: up to the scan; end: the CLI's return to the "
      f"process's end)")
print("run | wall | start | imports | set-up | scan | spectra | file | png | between | end "
      "| (end: atexit | after it)")
for r in range(runs + 1):
    t0, e0 = time.perf_counter(), time.time()
    p = subprocess.run([sys.executable, __file__, "child", *args], capture_output=True, text=True, env=env)
    wall, e1 = time.perf_counter() - t0, time.time()
    line = [ln for ln in p.stdout.splitlines() if ln.startswith("MARKS ")]
    if p.returncode or not line:
        print(f"# run {r}: rc {p.returncode} {p.stderr[-400:]}")
        continue
    m = json.loads(line[0][6:])
    png = m.get("plot_scan_map1", m["write1"]) - m.get("plot_scan_map0", m["write1"])
    parts = [m["interpreter"] - e0, m["imports"] - m["interpreter"], m["scan0"] - m["imports"],
             m["scan1"] - m["scan0"], m["spectra1"] - m["spectra0"], m["write1"] - m["write0"], png]
    between = (m["end"] - m["scan1"]) - sum(parts[4:])
    last = [float(ln.split()[1]) for ln in p.stdout.splitlines() if ln.startswith("ATEXIT ")]
    parts += [between, e1 - m["end"]] + ([last[0] - m["end"], e1 - last[0]] if last else [])
    print(("warm-up" if r == 0 else str(r)) + f" | {wall:.2f} | " + " | ".join(f"{v:.2f}" for v in parts))
