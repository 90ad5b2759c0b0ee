"""The CREI figure and its numbers (docs/crei/README.md): `python docs/crei/make.py [--backend
cupy] [--out docs/crei]`.  The yield of crei.toml against R (a scan over
potential.parameters.R), the same at dx/2, dt/2 and in a box 1.5x wider for a few R (the
convergence of the curve), and the 1D molecule's equilibrium distance from E0(R) + 1/R.
Writes crei.json and crei.png; atomic units."""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))

import tdse  # noqa: E402
from tdse.model import states  # noqa: E402
from tdse.studies import scan  # noqa: E402


#: the molecular region (bohr): what lies beyond |x| = INNER at t_end, absorbed or in flight,
#: has ionised (the nuclei sit within |x| <= 8, their bound states within a few bohr more)
INNER = 25.0


def yields(cfg, R, backend):
    """1 - the norm within |x| < INNER at t_end, a member each R: the ionisation probability
    (the absorber's flux alone depends on when the electrons reach it: on the box)."""
    res = scan.scan(cfg, {"potential.parameters.R": list(R)}, backend=backend, keep_psi=True)
    from tdse.model.grid import points
    x = points(cfg.grid)
    inside = np.abs(np.asarray(res["psi"])[:, np.abs(x) < INNER]) ** 2
    return 1.0 - inside.sum(axis=1) * cfg.grid.dx


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--backend", default="numpy")
    p.add_argument("--out", default=HERE)
    a = p.parse_args()
    cfg = tdse.load_config(os.path.join(HERE, "crei.toml"))
    R = np.round(np.arange(1.0, 16.01, 0.5), 2)
    t0 = time.time()
    base = yields(cfg, R, a.backend)
    check = np.array([2.0, 4.0, 6.0, 7.0, 8.0, 10.0, 14.0])
    finer = {
        "dx/2": yields(cfg.with_value("grid.dx", cfg.grid.dx / 2), check, a.backend),
        "dt/2": yields(cfg.with_value("time.dt", cfg.time.dt / 2), check, a.backend),
        "box x1.5": yields(cfg.with_value("grid.x_min", 1.5 * cfg.grid.x_min)
                           .with_value("grid.x_max", 1.5 * cfg.grid.x_max), check, a.backend)}
    at = np.searchsorted(R, check)
    spread = {k: float(np.max(np.abs(v - base[at]) / np.maximum(base[at], 1e-6))) for k, v in finer.items()}
    # the 1D molecule's Born-Oppenheimer curve: E0(R) + 1/R (nuclei as point charges)
    Rs = np.linspace(1.0, 6.0, 51)
    mol = cfg.with_value("propagator.time_error", "none")
    e0 = [states.eigenstates(mol.with_value("potential.parameters.R", float(r)), 0.0, 1)[0][0] + 1 / r
          for r in Rs]
    R_eq = float(Rs[int(np.argmin(e0))])
    doc = {"input": "docs/crei/crei.toml", "backend": a.backend, "seconds": time.time() - t0,
           "R": R.tolist(), "ionisation": base.tolist(), "inner_bohr": INNER, "R_max": float(R[int(np.argmax(base))]),
           "R_eq": R_eq, "check_R": check.tolist(), "finer": {k: v.tolist() for k, v in finer.items()},
           "max_relative_change": spread,
           "units": "atomic units: R in bohr; ionisation = 1 - the norm within |x| < inner_bohr at t_end"}
    with open(os.path.join(a.out, "crei.json"), "w") as f:
        json.dump(doc, f, indent=1)
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 4.2))
    ax.semilogy(R, np.maximum(base, 1e-12), "o-", ms=3, label=f"1 - norm within |x| < {INNER:g} at t_end (dx = 0.2, dt = 0.1)")
    for (k, v), m in zip(finer.items(), "sx^"):
        ax.semilogy(check, np.maximum(v, 1e-12), m, ms=6, mfc="none", label=k)
    ax.axvline(R_eq, color="gray", ls=":", label=f"equilibrium R = {R_eq:.1f} (E0(R) + 1/R)")
    ax.axvspan(6, 10, color="tab:orange", alpha=0.12, label="R_c of CREI, 6-10 bohr (Zuo & Bandrauk 1995)")
    ax.set_xlabel("internuclear distance R (bohr)")
    ax.set_ylabel("ionisation probability")
    ax.set_title("1D H2+, 1064 nm, 1e14 W/cm^2, 4 cycles: enhanced ionisation")
    ax.set_ylim(1e-9, 1)
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(os.path.join(a.out, "crei.png"), dpi=120)
    print(json.dumps({k: doc[k] for k in ("R_max", "R_eq", "max_relative_change", "seconds")}))


if __name__ == "__main__":
    main()
