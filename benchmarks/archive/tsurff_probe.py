"""Where t-SURFF's cost goes on a GPU: the loop bare, with an empty per-step observer, with
one that only takes psi's 10 points, and with TSurff; then a cProfile of the TSurff loop."""
import cProfile, io, pstats, sys, time, json, os
import numpy as np
import cupy as cp
import tdse
from tdse.run.loop import Observer
from tdse.run.tsurff import TSurff

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 4000
cfg = tdse.load_config("inputs/atom_hhg.toml")
cfg = cfg.with_value("time.t_end", cfg.time.dt * steps).with_value("propagator.time_error", "none")
plan = tdse.prepare(cfg, backend="cupy")

class Empty(Observer):
    pass

class Take(Observer):
    def begin(self, state):
        self.idx = cp.asarray(np.arange(10))
        self.buf = cp.empty((128, 10), complex)
        self.n = 0
    def after(self, state):
        cp.take(state.psi, self.idx, axis=0, out=self.buf[self.n % 128])
        self.n += 1

def run(sinks):
    t0 = time.perf_counter()
    tdse.evolve(plan, plan.psi0, sinks)
    cp.cuda.Device().synchronize()
    return time.perf_counter() - t0

kinds = {"bare": lambda: [], "empty": lambda: [Empty()], "take": lambda: [Take()],
         "tsurff": lambda: [TSurff(cfg, 60.0)]}
res = {k: [] for k in kinds}
for _ in range(4):
    for k, f in kinds.items():
        res[k].append(run(f()))
med = {k: float(np.median(v[1:])) for k, v in res.items()}
pr = cProfile.Profile()
pr.enable(); run([TSurff(cfg, 60.0)]); pr.disable()
s = io.StringIO(); pstats.Stats(pr, stream=s).sort_stats("tottime").print_stats(25)
out = os.environ.get("OUT", ".")
open(os.path.join(out, "tsurff_probe_profile.txt"), "w").write(s.getvalue())
json.dump({"steps": steps, "seconds": res, "median": med}, open(os.path.join(out, "tsurff_probe.json"), "w"), indent=1)
print(s.getvalue()[:6000])
for k, v in med.items():
    print(f"{k:8s} {v:.3f} s  {v / med['bare']:.3f}x  {(v - med['bare']) / steps * 1e6:.1f} us/step")
