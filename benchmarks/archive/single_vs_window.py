"""#59 item 5: a moving-centre run with populations every step (h2plus_moving at N = 256, S steps, STENCIL) on this CPU, the tracker's loop-side calls counted (windows, calls alone, all) with the look-ahead's worker, then with each call alone replaced by its whole window (Tracker.single as __call__), and the run without populations.  Tried on 2026-11-30, not adopted.

    PYTHONPATH=. python benchmarks/archive/single_vs_window.py S STENCIL
"""
import dataclasses, sys, time, warnings, collections
warnings.simplefilter("ignore")
import tdse
from tdse import config as cfgmod
from tdse.model import tracker as trk
S, n, st = int(sys.argv[1]), 256, int(sys.argv[2])
base = cfgmod.load("inputs/h2plus_moving.toml")
w = base.grid.x_max - base.grid.x_min
cfg = dataclasses.replace(base, grid=dataclasses.replace(base.grid, dx=w / n, stencil=st))
cfg = (cfg.with_value("propagator.method", "auto").with_value("propagator.time_error", "none")
       .with_value("time.t_end", S * cfg.time.dt).with_value("output.observables_every", 1).with_value("output.populations_every", 1))
cnt = collections.Counter(); tm = collections.Counter()
def wrap(owner, name):
    real = getattr(owner, name)
    def f(self, *a, **k):
        t = time.perf_counter()
        try: return real(self, *a, **k)
        finally:
            cnt[name] += 1; tm[name] += time.perf_counter() - t
    setattr(owner, name, f)
wrap(trk.Tracker, "single"); wrap(trk.Tracker, "window"); wrap(trk.Tracker, "__call__")
for k in range(3):
    cnt.clear(); tm.clear()
    t = time.perf_counter(); r = tdse.simulate(cfg, backend="numpy"); wall = time.perf_counter() - t
    print(f"wall {wall:.3f}", {k2: (cnt[k2], round(tm[k2] * 1e3, 1)) for k2 in cnt})
print("-- single -> whole window")
trk.Tracker.single = lambda self, t: self(t)
for k in range(3):
    cnt.clear(); tm.clear()
    t = time.perf_counter(); r = tdse.simulate(cfg, backend="numpy"); wall = time.perf_counter() - t
    print(f"wall {wall:.3f}", {k2: (cnt[k2], round(tm[k2] * 1e3, 1)) for k2 in cnt})
cfg0 = cfg.with_value("output.populations_every", S)
ws = []
for k in range(3):
    t = time.perf_counter(); tdse.simulate(cfg0, backend="numpy"); ws.append(time.perf_counter() - t)
print("without populations", [round(x, 3) for x in ws])
