"""#56: the time-error suite's adaptive laser row (its draw: seed 56 after the four drives,
dt = 1, output every 5) at one tolerance on this CPU for ladders of step counts a dt:
`now` (1, 2, 3, 4, 6, 8, 12, ...), `five` (and 5), `low` (every count to 8, then as now):
the adaptive run's wall (median of R), steps, true error (a dt/640 reference), and the
fixed-dt run just as accurate (steps from err ~ dt^p between two rungs, checked, its
estimate's wall a median of R) -- the suite's ratio for each ladder, alternating.

    PYTHONPATH=. python benchmarks/archive/adapt_ladder_ratio.py TOL R
"""
import sys
import numpy as np
import tdse
from benchmarks import drives
from tdse.config import with_values
from tdse.numerics import adaptive
from tdse.run.timeerror import phase_blind_distance

tol, R = float(sys.argv[1]), int(sys.argv[2])
rng = np.random.default_rng(56)
for k in drives.KINDS:
    drives.make(k, rng)
base = with_values(drives.make("laser", rng), [("time.dt", 1.0), ("output.every", 5)])
_, ref = drives.reference(base, factor=640)
orig = adaptive.EstimatingStepper.__init__
mode = {"m": "now"}


def init(self, *a, **k):
    orig(self, *a, **k)
    extra = {"now": set(), "five": {5}, "low": {5, 7}}[mode["m"]]
    self.ladder = sorted(set(self.ladder) | {n for n in extra if n <= self.n_max})


adaptive.EstimatingStepper.__init__ = init


def run(cfg):
    r = tdse.simulate(cfg, backend="numpy", progress=False)
    return r.seconds, phase_blind_distance(np.asarray(r.psi[-1]), ref, cfg.grid.dx), r


def fixed(steps, est=True):
    cfg = with_values(base, [("time.dt", base.time.t_end / steps), ("output.every", max(1, steps // 10))])
    if not est:
        cfg = with_values(cfg, [("propagator.time_error", "none")])
    return run(cfg)


lo, hi = 800, 1600                      # two rungs: err ~ dt^p between them
e_lo, e_hi = fixed(lo)[1], fixed(hi)[1]
p = np.log(e_lo / e_hi) / np.log(hi / lo)
rows = {}
for rnd in range(2):
    for m in ("now", "five", "low"):
        mode["m"] = m
        cfg = with_values(base, [("time.tolerance", tol)])
        walls, err, res = [], None, None
        for _ in range(R):
            w, err, res = run(cfg)
            walls.append(w)
        steps = int(np.ceil(lo * (e_lo / err) ** (1 / p) / 10) * 10)
        while fixed(steps)[1] > err:
            steps = int(np.ceil(steps * 1.02 / 10) * 10)
        fw = float(np.median([fixed(steps)[0] for _ in range(R)]))
        a = float(np.median(walls))
        print(f"round {rnd} ladder {m:4s}: adaptive {a:.3f} s, {res.time_error['steps_taken']} steps, "
              f"true {err:.3g}; fixed {steps} steps {fw:.3f} s; x{a / fw:.3f}", flush=True)
