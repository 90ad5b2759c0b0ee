"""Pictures of a run's spectra (matplotlib, Agg; atomic units): the harmonic and
autocorrelation spectra and the photoelectron
spectrum, dP/dE against energy in hartree (and eV) with the ATI comb and the 2 U_p / 10 U_p
edges marked."""
from __future__ import annotations

import numpy as np

from .plots import plt

__all__ = ["plot_spectrum", "plot_photoelectrons"]


def plot_spectrum(res, path):
    """The picture of any kind of spectrum: the harmonic spectrum (log power against harmonic
    order), the autocorrelation spectrum (against energy, with H(0)'s eigenvalues marked),
    or the photoelectrons' (:func:`plot_photoelectrons`)."""
    if res["kind"] == "photoelectron":
        return plot_photoelectrons(res, path)
    fig, ax = plt.subplots(figsize=(8, 4))
    p = np.asarray(res["power"])
    floor = max(p.max() * 1e-16, 1e-300)
    if res["kind"] == "hhg":
        x = np.asarray(res.get("order") or res["omega"])
        keep = x > 0
        ax.semilogy(x[keep], np.clip(p[keep], floor, None), lw=0.8)
        if "order" in res:
            right = min(x.max(), max(60, 1.6 * res.get("cutoff_order", 0)))
            ax.set_xlim(0, right)
            for k in range(1, int(right), 2):
                ax.axvline(k, color="0.9", lw=0.5, zorder=0)
            ax.set_xlabel("harmonic order omega / omega_0")
            if "cutoff_order" in res:
                ax.axvline(res["cutoff_order"], color="C3", lw=1, ls="--",
                           label=f"cutoff I_p + 3.17 U_p = {res['cutoff_energy']:.3g} Ha "
                                 f"(order {res['cutoff_order']:.1f}; I_p = {res['ip']:.3g}, "
                                 f"U_p = {res['up']:.3g} Ha)")
                ax.legend(fontsize=8, loc="upper right")
            # the decades below the noise floor past the cutoff are empty: cut them
            shown = p[keep & (x <= right)]
            if shown.size:
                ax.set_ylim(max(floor, 0.1 * float(shown.min())), 10 * float(shown.max()))
        else:
            ax.set_xlabel("omega (E_h/hbar)")
        ax.set_ylabel("|a(omega)|^2 (a.u.)")
        ax.set_title(f"{res.get('name')}: harmonic spectrum of the dipole acceleration "
                     f"({res['window']} window)")
    else:
        E = np.asarray(res["energy"])
        ax.semilogy(E, np.clip(p, floor, None), lw=0.8, label="|S(E)|^2")
        found = list(res.get("peaks", []))
        eig = list(res.get("eigenenergies_h0", []))
        w = res.get("drive_omega")
        span = found + (eig if not w else [])
        lo, hi = (min(span), max(span)) if span else (E.min(), E.max())
        pad = max(0.05 * (hi - lo), 3 * res["resolution"], 0.5)
        ax.set_xlim(lo - pad, hi + pad)    # every printed peak inside the picture
        for e in found:
            ax.plot([e], [np.interp(e, E, p)], "v", color="C0", ms=5)
        for k, e in enumerate(eig):
            ax.axvline(e, color="C3", lw=0.6, ls="--",
                       label=("eigenvalues of H(0) (a reference: a driven run's peaks are "
                              "quasi-energies)" if w else "eigenvalues of H(0)") if k == 0 else None)
        if w and found:   # the drive's sidebands around the strongest peak
            top = found[int(np.argmax([np.interp(e, E, p) for e in found]))]
            ks = [k for k in range(-40, 41) if lo - pad <= top + k * w <= hi + pad and k]
            for j, k in enumerate(ks):
                ax.axvline(top + k * w, color="C2", lw=0.6, ls=":",
                           label=f"sidebands of the strongest peak, +- k omega (omega = {w:.4g})"
                           if j == 0 else None)
        ax.set_xlabel("E (hartree)")
        ax.set_ylabel("|S(E)|^2 (a.u.)")
        ax.set_title(f"{res.get('name')}: spectrum of <psi(0)|psi(t)> ({res['window']} window, "
                     f"resolution {res['resolution']:.3g} Ha)")
        ax.legend(fontsize=8)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return path


def plot_photoelectrons(res, path):
    E = np.asarray(res["energy"])
    fig, ax = plt.subplots(figsize=(8, 4.2))
    top = max(float(np.nanmax(res["all"])), 1e-300)
    floor = top * 1e-10
    for key, style in (("all", "-"), ("left", "--"), ("right", ":")):
        ax.semilogy(E, np.clip(res[key], floor, None), style, lw=1.0,
                    label={"all": "dP/dE", "left": "x < 0 (going left)", "right": "x > 0 (going right)"}[key])
    for j, e in enumerate(res.get("ati", [])):
        ax.axvline(e, color="0.75", lw=0.6, zorder=0,
                   label="n omega - I_p - U_p (ATI)" if j == 0 else None)
    for (name, e), c in zip(res.get("edges", {}).items(), ("C3", "C4")):
        if e <= E.max():
            ax.axvline(e, color=c, lw=1, ls="-.", label=f"{name} = {e:.3g} Ha")
    ax.set_xlim(0, E.max())
    ax.set_ylim(floor, 3 * top)
    ax.set_xlabel("photoelectron energy (hartree)")
    ax.set_ylabel("dP/dE (1/hartree)")
    sec = ax.secondary_xaxis("top", functions=(lambda h: h * 27.211386245988, lambda v: v / 27.211386245988))
    sec.set_xlabel("eV")
    how = (f"t-SURFF through x = +-{res['radius']:.4g} bohr, {res['gauge']} gauge" if res["method"] == "tsurff"
           else f"window, gamma = {res['gamma']:.3g} Ha")
    ax.set_title(f"{res.get('name')}: photoelectrons at t = {res['t']:.4g} ({how}; "
                 f"{'crossed' if res['method'] == 'tsurff' else 'continuum'} {res['continuum']:.3g})", fontsize=9)
    ax.legend(fontsize=7, loc="upper right")
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return path
