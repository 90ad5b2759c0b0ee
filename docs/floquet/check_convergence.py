"""Convergence of the frequency scan's quasi-energies (docs/floquet/README.md): at a few
frequencies, the input's numerics against dt/2 (2M steps a period), dx/2 and a box 1.5x
as wide (atomic units).  Run: PYTHONPATH=. python docs/floquet/check_convergence.py"""
import dataclasses
import json
import math
import os
import sys
import time

from tdse import config as cfgmod
from tdse.studies.floquet import analyse, fold, floquet_config

HERE = os.path.dirname(os.path.abspath(__file__))
base = cfgmod.load(os.path.join(HERE, "..", "..", "inputs", "h2plus_moving.toml"))
base = dataclasses.replace(base, propagator=dataclasses.replace(base.propagator, method="auto"))
rows = []
for freq in [float(f) for f in (sys.argv[1:] or ["2.0", "3.5"])]:
    cfg = cfgmod.with_value(base, "potential.centres.frequency", freq)
    _, T, M, _ = floquet_config(cfg)
    g = cfg.grid
    variants = {"input": (cfg, M), "dt/2": (cfg, 2 * M),
                "dx/2": (cfgmod.with_value(cfg, "grid.dx", g.dx / 2), M),
                "box x1.5": (cfgmod.with_value(cfgmod.with_value(cfg, "grid.x_min", 1.5 * g.x_min),
                                               "grid.x_max", 1.5 * g.x_max), M)}
    res = {}
    for name, (c, m) in variants.items():
        t0 = time.perf_counter()
        r = analyse(c, steps=m, count=4, backend="numpy")
        res[name] = r
        print(f"freq {freq}: {name} N = {r['n']} M = {m} ({time.perf_counter() - t0:.1f} s, {r['method']})",
              file=sys.stderr)
    w = 2 * math.pi / T
    ref = res["input"]["states"]
    for name in ("dt/2", "dx/2", "box x1.5"):
        st = res[name]["states"]
        de = [abs((fold(a["quasi_energy"], T) - fold(b["quasi_energy"], T) + w / 2) % w - w / 2)
              for a, b in zip(ref, st)]
        do = [abs(a["overlap"] - b["overlap"]) for a, b in zip(ref, st)]
        rows.append({"frequency": freq, "period": T, "steps": M, "against": name,
                     "E_n": [a["E_n"] for a in ref],
                     "quasi_energy_change_hartree": de, "overlap_change": do})
        print(f"freq {freq} vs {name}: quasi-energy change per n {['%.1e' % v for v in de]} Ha, "
              f"overlap change {['%.1e' % v for v in do]}")
json.dump({"input": "inputs/h2plus_moving.toml", "units": "atomic units (hartree)",
           "states": "the Floquet states of the lowest 4 eigenstates of H(0)",
           "rows": rows}, open(os.path.join(HERE, "h2plus_moving_floquet_convergence.json"), "w"), indent=1)
