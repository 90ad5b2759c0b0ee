"""#59 item 2: where a GPU atom_hhg run's prepare, set-up and close go: driver's callees wrapped with
perf_counter, two in-process runs (the first pays kernel loads), and prepare's own parts."""
import time, tempfile, collections
t0 = time.perf_counter()
import numpy, scipy.linalg, h5py, cupy  # noqa: F401 -- their imports timed apart
t1 = time.perf_counter()
import tdse  # noqa: F401
from tdse.run import driver
from tdse.numerics import precheck as pc
from tdse.model import states
from tdse.config import load
print(f"imports: numpy/scipy/h5py/cupy {t1-t0:.3f} s, tdse {time.perf_counter()-t1:.3f} s")
T = collections.defaultdict(float); N = collections.Counter()
def wrap(mod, name):
    f = getattr(mod, name)
    def g(*a, **k):
        s = time.perf_counter()
        try:
            return f(*a, **k)
        finally:
            T[f"{mod.__name__.split('.')[-1]}.{name}"] += time.perf_counter() - s; N[f"{mod.__name__.split('.')[-1]}.{name}"] += 1
    setattr(mod, name, g)
for n in ("prepare", "_open_writer", "_start_state", "Snapshots", "Observables", "_time_error", "evolve", "_close", "check_resources", "look_ahead", "publish", "Progress"):
    wrap(driver, n)
for n in ("precheck", "resolution"):
    wrap(pc, n)
wrap(states, "eigenstates")
cfg = load("inputs/atom_hhg.toml")
for r in range(3):
    T.clear(); N.clear()
    d = tempfile.mkdtemp()
    s = time.perf_counter()
    res = driver.run(cfg, d, backend="cupy", force=True)
    w = time.perf_counter() - s
    print(f"run {r}: {w:.3f} s; " + ", ".join(f"{k} {v*1e3:.0f} ms/{N[k]}" for k, v in sorted(T.items(), key=lambda kv: -kv[1])))
