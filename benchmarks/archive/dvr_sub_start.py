"""#59 item 5: a DVR Tracker call (h2plus_moving's molecule, 4 populations, calls 0.02 a.u.
apart as every step of the main job) with its pairs by Davidson from the dense pairs of the
sub-grid around the wells (tdse.model.states.sub_start) against the path without it (the
dense solver up to N = 512, Davidson from the anchor's block beyond), alternating in one
process; and the sub path's populations and energies against the dense solver's.

    PYTHONPATH=. python benchmarks/archive/dvr_sub_start.py N[,N...] [ROUNDS]
"""
import dataclasses
import os
import sys
import time

import numpy as np

from tdse import config as cfgmod
from tdse.model import states
from tdse.model.tracker import Tracker

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def calls(cfg, sub, ts):
    keep = states.SUB_MIN_N
    states.SUB_MIN_N = keep if sub else 10 ** 9
    try:
        tr = Tracker(cfg, 4)
        tr(ts[0])
        t0 = time.perf_counter()
        out = [tr(t) for t in ts[1:]]
        return (time.perf_counter() - t0) / (len(ts) - 1), tr, out
    finally:
        states.SUB_MIN_N = keep


if __name__ == "__main__":
    ns = [int(v) for v in sys.argv[1].split(",")]
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    base = cfgmod.load(os.path.join(ROOT, "inputs", "h2plus_moving.toml"))
    w = base.grid.x_max - base.grid.x_min
    ts = 0.5 + 0.02 * np.arange(41)
    rng = np.random.default_rng(59)
    print(f"# python benchmarks/archive/dvr_sub_start.py {' '.join(sys.argv[1:])} "
          f"({time.strftime('%Y-%m-%dT%H:%M', time.gmtime())}, {os.cpu_count()} CPUs)")
    print("| N | sub-grid margin (bohr) | sub path ms a call | without ms a call | ratio | iterations a call | "
          "max population diff vs dense | max energy diff vs dense (Ha) |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for n in ns:
        cfg = dataclasses.replace(base, grid=dataclasses.replace(base.grid, dx=w / n))
        a, b = [], []
        for _ in range(rounds):
            ta, tr, got = calls(cfg, True, ts)
            tb, _, _ = calls(cfg, False, ts)
            a.append(ta)
            b.append(tb)
        dP = dE = 0.0
        for t, (E, phi) in zip(ts[1::8], got[::8]):
            Ed, phid = states.eigenstates(cfg, t, 4, dense=True)
            psi = rng.standard_normal(n) + 1j * rng.standard_normal(n)
            psi /= np.sqrt(np.sum(np.abs(psi) ** 2) * cfg.grid.dx)
            dx = cfg.grid.dx
            P, Pd = np.abs(phi @ psi * dx) ** 2, np.abs(phid @ psi * dx) ** 2
            # (the near-degenerate pair's rotation is free: its summed population compared)
            pairs = [[i, i + 1] for i in range(3) if Ed[i + 1] - Ed[i] < 1e-8]
            for i, j in pairs:
                P[i], Pd[i], P[j], Pd[j] = P[i] + P[j], Pd[i] + Pd[j], 0.0, 0.0
            dP, dE = max(dP, np.abs(P - Pd).max()), max(dE, np.abs(E - Ed).max())
        print(f"| {n} | {tr._margin} | {np.median(a) * 1e3:.2f} | {np.median(b) * 1e3:.2f} | "
              f"{np.median(a) / np.median(b):.2f} | {tr.iterations / max(1, tr.calls):.1f} | {dP:.1e} | {dE:.1e} |")
