"""#59 item 2: `tdse run` atom_hhg on a GPU as a new process: plain exit against os._exit after the CLI returns (alternating); and a bare CuPy process's exit."""
import os, subprocess, sys, tempfile, time
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from benchmarks.suites import _cli_env
env = _cli_env()
d = tempfile.mkdtemp()
args = ["run", "inputs/atom_hhg.toml", "--out", d, "--backend", "cupy", "--quiet", "--no-plots", "--force", "--yes"]
fast = ("import os, sys\nfrom tdse.ui.cli import main\ntry:\n    main(standalone_mode=True)\n"
        "except SystemExit as e:\n    c = e.code\nelse:\n    c = 0\nsys.stdout.flush(); sys.stderr.flush(); os._exit(c or 0)\n")
bare = ("import time, cupy as cp\na = cp.ones(1 << 20); float(a.sum())\nimport sys; sys.stdout.write(repr(time.time())); sys.stdout.flush()\n")
def wall(cmd):
    t = time.perf_counter(); r = subprocess.run(cmd, env=env, capture_output=True, text=True); w = time.perf_counter() - t
    assert r.returncode == 0, r.stderr[-800:]
    return w, r.stdout
W = {"plain": [], "os._exit": []}
for i in range(5):
    W["plain"].append(wall([sys.executable, "-m", "tdse", *args])[0])
    W["os._exit"].append(wall([sys.executable, "-c", fast, *args])[0])
for k, v in W.items():
    print(k, " ".join(f"{x:.2f}" for x in v), f"median {sorted(v)[2]:.2f}")
for i in range(3):
    t = time.time(); r = subprocess.run([sys.executable, "-c", bare], env=env, capture_output=True, text=True); end = time.time()
    print(f"bare cupy: wall {end - t:.2f} s, exit after the print {end - float(r.stdout):.3f} s")
