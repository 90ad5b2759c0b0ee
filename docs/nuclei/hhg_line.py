"""Where the "order 6" line of the shipped [nuclei] run's harmonic spectrum comes from
(docs/NUCLEI.md, "The electron's harmonic spectrum"; atomic units).

For each run file given: the harmonic spectrum of its acceleration
(:func:`tdse.studies.spectra.hhg`), the strongest peak between orders 5.3 and 6.7 (in
hartree and in orders of the run's omega), the odd harmonics 5 and 7 beside it, and the
internuclear distance R at which the model's charge-resonance gap E_1(R) - E_0(R) (the
Born-Oppenheimer curves, :func:`tdse.model.nuclei.born_oppenheimer`) equals that peak's
energy.  A harmonic stays at order 6 when the wavelength changes; a line at a fixed energy
(a transition) moves in order.  Writes one JSON (machine, date, command, rows)::

    python docs/nuclei/hhg_line.py OUT/a/h2plus_nuclei.h5 OUT/b/h2plus_nuclei.h5 --out hhg_line.json
"""
from __future__ import annotations

import argparse
import datetime
import json
import platform
import sys

import h5py
import numpy as np

from tdse.model import nuclei as nm
from tdse.studies import spectra


def analyse(path):
    with h5py.File(path) as f:
        text = f.attrs["input_toml"]
        t, acc = f["observables/t"][:], f["observables/acceleration"][:]
        omega = float(f.attrs["omega"])
        R_mean = f["observables/R_mean"][:]
    from tdse.config import loads
    cfg = loads(text)
    s = spectra.hhg(t, acc, omega)
    w, P = np.asarray(s["omega"]), np.asarray(s["power"])
    order = w / omega

    def strongest(lo, hi):
        i = np.flatnonzero((order >= lo) & (order <= hi))
        j = i[np.argmax(P[i])]
        return float(w[j]), float(order[j]), float(P[j])
    line = strongest(5.3, 6.7)
    h5, h7 = strongest(4.7, 5.3), strongest(6.7, 7.3)
    model = nm.Model(cfg)
    E, _ = nm.born_oppenheimer(model, 2)
    gap = E[:, 1] - E[:, 0]
    R = model.R
    # gap(R) falls with R past its largest value: where it equals the line's energy there
    top = int(np.argmax(gap))
    k = top + int(np.flatnonzero(gap[top:] <= line[0])[0])
    f = (gap[k - 1] - line[0]) / (gap[k - 1] - gap[k]) if k > top else 0.0
    R_at = float(R[k - 1] + f * (R[k] - R[k - 1])) if k > top else float(R[k])
    return {"file": path, "wavelength_nm": round(45.5633525 / omega, 1) if omega else None,
            "omega": omega, "state": cfg.nuclei.state, "resolution_hartree": s["resolution"],
            "line_hartree": line[0], "line_order": line[1], "line_power": line[2],
            "odd_5": {"order": h5[1], "power": h5[2]}, "odd_7": {"order": h7[1], "power": h7[2]},
            "gap_max_hartree": float(gap[top]), "gap_max_R": float(R[top]),
            "R_where_gap_equals_line": R_at, "R_mean_range": [float(R_mean.min()), float(R_mean.max())]}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("files", nargs="+")
    p.add_argument("--out", required=True)
    a = p.parse_args()
    rows = [analyse(f) for f in a.files]
    for r in rows:
        print(f"{r['wavelength_nm']} nm, v = {r['state']}: line at {r['line_hartree']:.4f} hartree = order "
              f"{r['line_order']:.2f} (power {r['line_power']:.2e}; odd 5: {r['odd_5']['power']:.2e}, odd 7: "
              f"{r['odd_7']['power']:.2e}); the gap E1 - E0 equals it at R = {r['R_where_gap_equals_line']:.2f} "
              f"bohr (gap max {r['gap_max_hartree']:.3f} at R = {r['gap_max_R']:.2f})")
    with open(a.out, "w") as f:
        json.dump({"kind": "hhg-line", "date": datetime.datetime.now(datetime.timezone.utc).isoformat(),
                   "machine": platform.node(), "command": " ".join(sys.argv), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
