"""Probe: the adaptive laser run's steps a dt (n), by ladder; steppers' build time."""
import sys, time, collections
import numpy as np
sys.path.insert(0, ".")
import tdse
from tdse.config import with_values
from tdse.run.timeerror import phase_blind_distance
from tdse.numerics import adaptive
from benchmarks import drives

rng = np.random.default_rng(int(sys.argv[1]) if len(sys.argv) > 1 else 56)
base = with_values(drives.make("laser", rng), [("time.dt", 1.0), ("output.every", 5)])
_, ref = drives.reference(base, factor=640)
mode = sys.argv[2] if len(sys.argv) > 2 else "now"
orig = adaptive.EstimatingStepper.__init__
hist = collections.Counter()
made = []
def init(self, *a, **k):
    orig(self, *a, **k)
    if mode == "ints":
        self.ladder = sorted(set(range(1, min(self.n_max, 64) + 1)) | set(self.ladder))
    elif mode == "fine":
        self.ladder = sorted({min(self.n_max, m * 2 ** kk) for kk in range(64) for m in (4, 5, 6, 7)
                              if m * 2 ** kk <= 2 * self.n_max} | {1, 2, 3, self.n_max})
    inner = self._choose
    def ch(psi, j):
        n = inner(psi, j); hist[n] += 1; return n
    self._choose = ch
    ms = self._stepper
    def st(n):
        new = n not in self._steps
        t = time.perf_counter(); s = ms(n)
        if new: made.append(time.perf_counter() - t)
        return s
    self._stepper = st
adaptive.EstimatingStepper.__init__ = init
for tol in (1e-6, 1e-7):
    cfg = with_values(base, [("time.tolerance", tol)])
    ts = []
    for r in range(3):
        hist.clear(); made.clear()
        res = tdse.simulate(cfg, backend="numpy"); ts.append(res.seconds)
    err = phase_blind_distance(np.asarray(res.psi[-1]), ref, cfg.grid.dx)
    print(f"{mode} tol {tol:g}: {np.median(ts):.3f} s steps {res.time_error['steps_taken']} rej {res.time_error['rejected']} "
          f"true {err:.3g} stated {res.time_error['error_at_t_end']:.3g} n {sorted(hist.items())} steppers {len(made)} {sum(made)*1e3:.0f} ms")
