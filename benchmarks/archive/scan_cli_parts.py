"""#59 item 1: `tdse scan` of 1000 atom_hhg members (Chebyshev, no time error) on a GPU by its
parts: the CLI's callees wrapped with perf_counter, in a new process (imports timed apart)."""
import os, sys, tempfile, time, collections
t00 = time.perf_counter()
sys.path.insert(0, os.getcwd())
from tdse import config as cfgmod
import tdse.ui.cli  # noqa: F401
t01 = time.perf_counter()
cfg = cfgmod.load("inputs/atom_hhg.toml").with_value("propagator.time_error", "none").with_value("propagator.method", "chebyshev")
d = tempfile.mkdtemp()
p = os.path.join(d, "scan.toml"); open(p, "w").write(cfgmod.to_toml(cfg))
save = sys.argv[1] if len(sys.argv) > 1 else "final"
T = collections.OrderedDict()
def wrap(mod, name):
    f = getattr(mod, name)
    def g(*a, **k):
        s = time.perf_counter()
        try:
            return f(*a, **k)
        finally:
            T[name] = T.get(name, 0.0) + time.perf_counter() - s
    setattr(mod, name, g)
from tdse.studies import scan as S
from tdse.run import scanfile, resources
for n in ("members", "scan", "spectra", "remove_parts", "scan_bytes"):
    wrap(S, n)
wrap(scanfile, "write"); wrap(resources, "check_space")
s0 = time.perf_counter()
import tdse.ui.plots as P
T["import plots"] = time.perf_counter() - s0
wrap(P, "plot_scan_map")
sys.argv = ["tdse", "scan", p, "--set", "field.E0=0.02:0.08:1000", "--backend", "cupy", "--save", save, "--out", os.path.join(d, "out"), "-q"]
from tdse.ui.cli import main
t0 = time.perf_counter()
main(standalone_mode=False)
w = time.perf_counter() - t0
print(f"end at {time.time():.3f}; --save {save}: imports {t01 - t00:.2f} s; the command {w:.2f} s: " + ", ".join(f"{k} {v:.2f}" for k, v in T.items()))
