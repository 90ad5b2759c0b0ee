"""Does the time error a run states bound its true error?  (#24 item 1)

For each case: the run as shipped (its stated error at t_end: ``time_error = "companion"``)
and an independent fine run at dt/4 (the same scheme, the exponentials at tolerance 1e-14:
Chebyshev where H is Hermitian, else the run's method);
the true error is the phase-blind L2 distance of the two final psi.  Wanted: 1 <= stated /
true <= 10.  Cases: every shipped input that depends on time (the N = 8192 showcase in a
12.8 bohr box, as tests/data/make_reference.py), the Fig. 6 physical case with a smooth start
(h2plus_moving with ramp = 5 a.u., where the old linear extrapolation was 8x too small) and
the thesis' numerics with the same ramp, and a laser pulse on H2+ not used to design the
estimate.  Atomic units.

    python docs/time_error/check_time_error.py [--quick] [CASE ...]   # writes time_error_check.json
"""
from __future__ import annotations

import json
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, ROOT)

import tdse  # noqa: E402
from tdse.config import with_value  # noqa: E402
from tdse.run.timeerror import phase_blind_distance  # noqa: E402

PULSE_H2 = """
name = "h2plus_pulse"
[grid]
x_min = -40.0
x_max = 40.0
dx = 0.4
stencil = "dvr"
[potential]
a = 1.0
[[potential.centres]]
x0 = -1.0
Z = 1.0
[[potential.centres]]
x0 = 1.0
Z = 1.0
[field]
E0 = 0.05
omega = 0.3
duration = 40.0
envelope = "gaussian"
fwhm = 12.0
[absorber]
width = 15.0
[time]
dt = 0.1
t_end = 40.0
[propagator]
scheme = "cfm4"
method = "dense"
tolerance = 1e-12
[output]
every = 10
"""

#: name -> (input, [(key, value)])
CASES = {
    "atom_hhg": ("atom_hhg", []),
    "h2plus_moving": ("h2plus_moving", []),
    "h2plus_moving_ramped": ("h2plus_moving_ramped", []),
    "h2plus_moving_large_box12.8": ("h2plus_moving_large", [("grid.x_min", -6.4), ("grid.x_max", 6.4)]),
    "thesis_fig6": ("thesis_fig6", []),
    "thesis_fig6_ramp5": ("thesis_fig6", [("potential.centres.ramp", 5.0)]),
    "h2plus_moving_ramp5": ("h2plus_moving", [("potential.centres.ramp", 5.0)]),
    "tiny": ("tiny", [("propagator.method", "dense")]),
    "h2plus_pulse": (PULSE_H2, []),
}
#: shorter runs for --quick (t_end)
QUICK = {"atom_hhg": 60.0, "h2plus_moving": 3.0, "h2plus_moving_ramped": 3.0,
         "h2plus_moving_large_box12.8": 0.1, "thesis_fig6": 2.0, "thesis_fig6_ramp5": 6.0,
         "tiny": 1.0, "h2plus_pulse": 40.0, "h2plus_moving_ramp5": 6.0}


def config_of(case, quick=False):
    src, changes = CASES[case]
    cfg = tdse.load_config(src if "\n" in src else os.path.join(ROOT, "inputs", f"{src}.toml"))
    cfg = with_value(with_value(cfg, "propagator.error_window", 0.0), "propagator.time_error",
                     "companion")
    for k, v in changes + ([("time.t_end", QUICK[case])] if quick else []):
        cfg = with_value(cfg, k, v)
    return cfg


def check(case, quick=False) -> dict:
    cfg = config_of(case, quick)
    t0 = time.perf_counter()
    run = tdse.simulate(cfg, backend="numpy")
    wall = time.perf_counter() - t0
    # the fine reference: dt/4, exponentials at 1e-14 (the matrix-free Chebyshev expansion,
    # independent of the run's dense exponent; with an absorber the run's own method, so that
    # the reference has the same absorber treatment)
    fine = with_value(with_value(with_value(cfg, "time.dt", cfg.time.dt / 4),
                                 "propagator.time_error", "none"), "propagator.tolerance", 1e-14)
    if cfg.hermitian or fine.propagator.method == "taylor":
        fine = with_value(fine, "propagator.method", "chebyshev" if cfg.hermitian else "dense")
    ref = tdse.simulate(fine, backend="numpy")
    true = phase_blind_distance(run.psi[-1], ref.psi[-1], cfg.grid.dx)
    te = run.time_error
    stated = te["error_at_t_end"]
    return {"case": case, "t_end": cfg.time.t_end, "dt": cfg.time.dt, "scheme": cfg.propagator.scheme,
            "method": cfg.propagator.method, "n": cfg.grid.n, "stated": stated, "true": true,
            "ratio": stated / true if true > 0 else None, "max_stated": te["max_error"],
            "t_compared": te["t_compared"], "companion_fraction": te["companion_fraction"],
            "wall_seconds": wall, "bounds": bool(true <= stated <= 10 * true)}


def main(argv):
    quick = "--quick" in argv
    names = [a for a in argv if not a.startswith("--")] or list(CASES)
    rows = []
    for name in names:
        r = check(name, quick)
        rows.append(r)
        print(f"{name:28s} t_end {r['t_end']:7.4g} dt {r['dt']:<7.4g} stated {r['stated']:.3e} "
              f"true {r['true']:.3e} ratio {r['ratio']:.2f} companion +{100 * r['companion_fraction']:.0f}% "
              f"{'ok' if r['bounds'] else 'MISSES'}", flush=True)
    out = os.path.join(HERE, "time_error_check_quick.json" if quick else "time_error_check.json")
    old = json.load(open(out))["rows"] if os.path.exists(out) else []
    rows = [r for r in old if r["case"] not in names] + rows      # cases run now replace theirs
    with open(out, "w") as f:
        json.dump({"units": "atomic units; errors: L2 distance of psi up to a global phase",
                   "command": "python docs/time_error/check_time_error.py [--quick] [CASE ...]",
                   "date": time.strftime("%Y-%m-%d"), "rows": rows}, f, indent=1)
    print("wrote", out)


if __name__ == "__main__":
    main(sys.argv[1:])
