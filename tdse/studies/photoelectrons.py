"""Photoelectron spectra of a run's last psi by the window operator (Schafer & Kulander, PRA
42, 5794 (1990); Schafer, Comput. Phys. Commun. 63, 427 (1991)), atomic units.

The window of resolution gamma around an energy E (their eq. 2, n = 2):

    W_gamma(E) = gamma^4 / ((H0 - E)^4 + gamma^4),        P(E) = <psi| W_gamma(E) |psi>,

H0 the field-free molecular H at the last snapshot's time (no absorber).  Here W is
evaluated exactly in H0's eigenbasis on the grid, P(E) = sum_n |<n|psi>|^2 W_gamma(E_n - E)
over H0's continuum states E_n > 0 (the bound ones are no photoelectrons: their windows' tails
left out) (all N pairs by :func:`tdse.model.states.eigenstates`: O(N^2) for the 3-point
stencil, a dense solver's O(N^3) for the DVR), and divided by the window's area pi gamma / sqrt(2) it is the energy density
dP/dE, whose integral over E > 0 is the population of H0's continuum states.  Electrons
going left and right: the same with psi's free part (its bound states projected out)
restricted to x < 0 and x > 0 by a smooth step -- meaningful once the outgoing electrons are
far from the core, so the run must continue after the pulse until
they are (and stop before they reach the walls or an absorber, which takes them away: the
spectrum is of what the box still holds).

Marked: the above-threshold-ionisation comb E_n = n omega - I_p - U_p (I_p = -E_0 of
H(0), U_p = E0^2 / (4 omega^2)) and the classical edges 2 U_p (direct electrons) and
10 U_p (rescattered ones).
"""
from __future__ import annotations

import math

import numpy as np

from ..model.grid import points
from ..model.states import eigenstates
from ..run.tsurff import TSurff, spectrum_of

__all__ = ["window_spectrum", "from_file", "EV", "TSurff", "tsurff_record"]

#: one hartree in eV (CODATA 2018)
EV = 27.211386245988


#: the width (bohr) of the smooth step that splits the free part of psi at x = 0 into the
#: electrons going left and right (a sharp cut adds spurious fast electrons)
SPLIT_WIDTH = 2.0


def window_spectrum(config, psi, t, energies, gamma) -> dict:
    """dP/dE at ``energies`` (hartree) of ``psi`` at time ``t``: in all, and of its parts at
    x < 0 ("left") and x > 0 ("right"); the resolution ``gamma`` (hartree); and the
    continuum's population (the integral of dP/dE over E > 0 with an exact window).  The
    left and right parts are of psi without its bound states, split by a smooth step."""
    E_n, phi = eigenstates(config, t, config.grid.n)           # all of H0's pairs
    x, dx = points(config.grid), config.grid.dx
    E = np.asarray(energies, dtype=np.float64)
    W = gamma ** 4 / ((E_n[None, :] - E[:, None]) ** 4 + gamma ** 4)      # (energies, states)
    area = math.pi * gamma / math.sqrt(2.0)
    c = phi @ psi * dx
    bound = E_n <= 0
    free = psi - c[bound] @ phi[bound]                # psi without its bound part
    step = 0.5 * (1.0 + np.tanh(x / SPLIT_WIDTH))     # a smooth x > 0: no kink at x = 0
    out = {"all": W @ np.where(bound, 0.0, np.abs(c) ** 2) / area, "continuum": float(np.sum(np.abs(c[~bound]) ** 2)),
           "bound": float(np.sum(np.abs(c[bound]) ** 2))}
    for name, part in (("left", (1.0 - step) * free), ("right", step * free)):
        out[name] = W @ np.abs(phi @ part * dx) ** 2 / area
    return {"energy": E, **out, "gamma": gamma}


METHODS = ("window", "tsurff")


def from_file(d: dict, gamma=None, e_max=None, method="window") -> dict:
    """The photoelectron spectrum of a run file read by :func:`tdse.run.snapshots.read`:
    ``method`` "window", of its last snapshot's psi, or "tsurff", the flux the run recorded
    (``[output] tsurff_radius``; :mod:`tdse.run.tsurff`); energies from 0 to ``e_max``
    (default: 12 U_p + 5 omega with a field, else 2 Ha) every gamma / 4, gamma (default
    omega / 8 with a field, else 0.01 Ha; t-SURFF's own resolution is its momentum grid's)."""
    from ..config import loads
    if method not in METHODS:
        raise ValueError(f"--method must be one of {METHODS}, got {method!r}")
    config = loads(d["attrs"].get("effective_toml") or d["attrs"]["input_toml"])
    t, psi = float(d["snapshots/t"][-1]), d["snapshots/psi"][-1]
    field = config.potential.field
    res = {"kind": "photoelectron", "method": method, "t": t, "name": d["attrs"].get("name")}
    if field is not None and field.omega > 0:       # an expression field may name no carrier
        omega, up = float(field.omega), float(field.E0) ** 2 / (4 * float(field.omega) ** 2)
        ip = float(-d["states/energies"][0])
        res.update(omega=omega, up=up, ip=ip, edges={"2 U_p": 2 * up, "10 U_p": 10 * up})
        gamma = gamma or omega / 8
        e_max = e_max or 12 * up + 5 * omega
        n0 = math.ceil((ip + up) / omega)
        res["ati"] = [n * omega - ip - up for n in range(n0, n0 + int((e_max + ip + up) / omega))
                      if n * omega - ip - up <= e_max]
        if field.duration > t:
            res["note"] = f"the pulse lasts to t = {field.duration:.4g}, past the last snapshot"
    if config.absorber is not None:
        res["absorber_note"] = ("an absorber took what reached it: the spectrum is of the "
                                "electrons the box still holds")
    gamma = gamma or 0.01
    e_max = e_max or 2.0
    if not 0 < gamma <= e_max:          # (nan, inf and 1e300 had been arange's or pow's errors)
        raise ValueError(f"--gamma = {gamma!r}: the window's resolution must be a number > 0 and at "
                         f"most the spectrum's range, {e_max:.4g} Ha")
    energies = np.arange(0.0, e_max + gamma / 8, gamma / 4)
    if method == "tsurff":
        res.pop("absorber_note", None)             # (t-SURFF counts what crossed R before)
        res.update(tsurff_spectrum(d, energies))
        res["energy_ev"] = (np.asarray(res["energy"]) * EV).tolist()
        return res
    spec = window_spectrum(config, psi, t, energies, gamma)
    res.update({k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in spec.items()})
    res["energy_ev"] = (np.asarray(res["energy"]) * EV).tolist()
    res["units"] = "energy in hartree (energy_ev: eV), dP/dE in 1/hartree"
    return res


def tsurff_record(attrs) -> dict:
    """The t-SURFF amplitudes a run recorded (its ``photoelectrons_tsurff`` attribute: JSON
    in a file, a dict in memory) as a dict; ValueError where it recorded none."""
    rec = attrs.get("photoelectrons_tsurff")
    if rec is None:
        raise ValueError("the run recorded no t-SURFF amplitudes: set [output] tsurff_radius "
                         "(bohr) in its input, or use --method window")
    if isinstance(rec, str):
        import json
        rec = json.loads(rec)
    return rec


def tsurff_spectrum(d: dict, energies) -> dict:
    """dP/dE at ``energies`` (hartree) from a run file's t-SURFF amplitudes
    (:func:`tsurff_record`): P(k) / |k| at k = +-sqrt(2E), interpolated between the
    recorded momenta; "continuum": the integral of P(k) over the recorded k (what crossed
    either surface)."""
    rec = tsurff_record(d["attrs"])
    k = np.linspace(-rec["k_max"], rec["k_max"], rec["momenta"])
    s = spectrum_of(k, np.asarray(rec["P_right"]), np.asarray(rec["P_left"]))
    E = np.asarray(energies, dtype=np.float64)
    right = np.interp(E, s["energy_right"], s["dPdE_right"], right=np.nan)
    left = np.interp(E, s["energy_left"][::-1], s["dPdE_left"][::-1], right=np.nan)
    return {"energy": E, "right": right, "left": left, "all": right + left,
            "continuum": float(np.trapezoid(s["P_right"] + s["P_left"], k)), "radius": rec["radius"],
            "gauge": rec["gauge"], "t_flux": rec["t"], "k_max": rec["k_max"],
            "units": "energy in hartree (energy_ev: eV), dP/dE in 1/hartree; NaN past k_max"}
