"""#59 item 1: where `tdse scan` as a new process spends its wall beyond the in-process scan
(the scan suite's --cli row: 1000 atom_hhg members, E0 0.02:0.08, Chebyshev, no time error,
--save final): the CLI's wall twice, then a cProfile of one more (cumulative and own time).

    PYTHONPATH=. python benchmarks/archive/scan_cli_profile.py OUT_DIR [MEMBERS]
"""
import os, pstats, subprocess, sys, time
from tdse import config as cfgmod

out = sys.argv[1]
members = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
os.makedirs(out, exist_ok=True)
cfg = cfgmod.load("inputs/atom_hhg.toml")
cfg = cfg.with_value("propagator.time_error", "none").with_value("propagator.method", "chebyshev")
path = os.path.join(out, "scan.toml")
with open(path, "w") as f:
    f.write(cfgmod.to_toml(cfg))
args = ["scan", path, "--set", f"field.E0=0.02:0.08:{members}", "--backend", "cupy", "--save", "final",
        "--out", os.path.join(out, "o"), "-q", "--force"]
for i in range(2):
    t = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "tdse", *args], capture_output=True, text=True)
    print(f"wall {time.perf_counter() - t:.2f} s (rc {r.returncode})", r.stderr.strip()[-300:], flush=True)
prof = os.path.join(out, "scan.prof")
t = time.perf_counter()
subprocess.run([sys.executable, "-m", "cProfile", "-o", prof, "-m", "tdse", *args], capture_output=True)
print(f"profiled wall {time.perf_counter() - t:.2f} s")
st = pstats.Stats(prof)
st.sort_stats("cumulative").print_stats(45)
st.sort_stats("tottime").print_stats(25)
