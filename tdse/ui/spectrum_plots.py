"""Pictures of a run's spectra (matplotlib, Agg; atomic units): the harmonic and
autocorrelation spectra (:func:`tdse.ui.plots.plot_spectrum`) and the photoelectron
spectrum, dP/dE against energy in hartree (and eV) with the ATI comb and the 2 U_p / 10 U_p
edges marked."""
from __future__ import annotations

import numpy as np

from . import plots
from .plots import plt

__all__ = ["plot_spectrum", "plot_photoelectrons"]


def plot_spectrum(res, path):
    """The picture of any kind of spectrum."""
    if res["kind"] == "photoelectron":
        return plot_photoelectrons(res, path)
    return plots.plot_spectrum(res, path)


def plot_photoelectrons(res, path):
    E = np.asarray(res["energy"])
    fig, ax = plt.subplots(figsize=(8, 4.2))
    top = max(float(np.max(res["all"])), 1e-300)
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
    ax.set_title(f"{res.get('name')}: photoelectrons at t = {res['t']:.4g} (window, gamma = "
                 f"{res['gamma']:.3g} Ha; continuum {res['continuum']:.3g})", fontsize=9)
    ax.legend(fontsize=7, loc="upper right")
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return path
