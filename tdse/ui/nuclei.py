"""`tdse run` of a ``[nuclei]`` input (the 1D + 1D H2+ model) and its pictures (atomic
units; matplotlib, Agg): the nuclear density |chi(R, t)|^2 = int |psi|^2 dx over time (log
colours) with <R>(t), the fractions by region and E(t) beside it, and the KER spectrum."""
from __future__ import annotations

import os
import signal

import click
import h5py
import numpy as np

from ..config import ConfigError
from ..model.nuclei import HARTREE_EV
from ..run.snapshots import OutputExists
from .plots import plt

__all__ = ["run_nuclei", "plot_nuclei"]


def run_nuclei(cfg, out_dir, error, *, backend, devices, force, threads, quiet, no_plots, **_):
    """Prepare and run ``cfg`` into ``out_dir`` from the command line; bad input and a
    grid that cannot fit raise ``error`` (one line, exit 2); an interrupt leaves the
    .part file (not resumable) and exits 130."""
    from ..run import nuclei
    say = (lambda m: None) if quiet else click.echo
    devs = None if devices is None else [int(d) for d in str(devices).split(",")]
    try:
        plan = nuclei.prepare(cfg, backend=backend, devices=devs, threads=threads)
        nx, nr = plan.model.shape
        say(f"{cfg.name}: the 1D + 1D H2+ model, {nx} x {nr} points (x by R), {cfg.time.steps} "
            f"steps of {cfg.time.dt:g} ({cfg.propagator.scheme}, Chebyshev), {plan.backend.describe()}; "
            f"psi(0) in {plan.prepare_seconds['initial_state']:.1f} s")
        res = nuclei.run(plan, out_dir, force=force, progress=not quiet)
    except (ConfigError, OutputExists) as e:
        msg = (f"{e.args[0]} exists (use --force to overwrite)" if isinstance(e, OutputExists) else str(e))
        raise error(f"{cfg.name}: {msg}") from None
    except KeyboardInterrupt:
        click.echo(f"interrupted: {os.path.join(out_dir, cfg.name)}.h5.part holds the snapshots so far "
                   "([nuclei] runs do not resume)", err=True)
        raise SystemExit(128 + signal.SIGINT) from None
    o = res.observables
    say(f"wrote {res.path}: at t = {res.t[-1]:g} norm {o['norm'][-1]:.6f}, <R> {o['R_mean'][-1]:.3f} bohr; "
        f"bound {o['bound'][-1]:.4g}, dissociated {o['dissociated'][-1]:.3g} (+{o['absorbed_R'][-1]:.3g} "
        f"absorbed in R), ionised {o['ionised'][-1]:.3g} (+{o['absorbed_x'][-1]:.3g} absorbed in x); "
        f"loop {res.seconds['loop']:.1f} s")
    if not no_plots:
        for p in plot_nuclei(res.path):
            say(f"plot {p}")
    return res


def plot_nuclei(path):
    """The run file's two pictures next to it: <name>_nuclei.png (the nuclear density map
    with <R>(t), the fractions and E(t)) and <name>_ker.png (the KER spectrum)."""
    base = path[:-3]
    with h5py.File(path, "r") as f:
        t, R = f["observables/t"][:], f["grid/R"][:]
        rho = f["observables/nuclear_density"][:]
        obs = {k: f[f"observables/{k}"][:] for k in ("R_mean", "bound", "dissociated", "ionised",
                                                     "absorbed_x", "absorbed_R", "field", "norm")}
        ker = {k: f[f"ker/{k}"][:] for k in ("energy_eV", "probability")}
        ker_total = float(f["ker"].attrs["total"])
        lines = [(n, float(f["observables/energy"][0]) + n * f.attrs["omega"]
                  - f.attrs["dissociation_limit"]) for n in (1, 2, 3) if f.attrs["omega"]]
        name = os.path.basename(base)
    fig = plt.figure(figsize=(8.5, 7))
    grid = fig.add_gridspec(2, 2, width_ratios=(40, 1), height_ratios=(3, 2), hspace=0.08, wspace=0.03)
    a, cax = fig.add_subplot(grid[0, 0]), fig.add_subplot(grid[0, 1])
    b = fig.add_subplot(grid[1, 0], sharex=a)
    floor = max(rho.max() * 1e-6, 1e-300)
    im = a.pcolormesh(t, R, np.log10(np.clip(rho.T, floor, None)), shading="auto", cmap="magma")
    a.plot(t, obs["R_mean"], color="c", lw=1, label="<R>")
    a.set_ylabel("R (bohr)")
    a.set_title(f"{name}: nuclear density |chi(R, t)|^2 = int |psi|^2 dx (atomic units)", fontsize=10)
    a.legend(loc="upper left", fontsize=8)
    a.tick_params(labelbottom=False)
    fig.colorbar(im, cax=cax, label="log10 |chi|^2 (1/bohr)")
    for k, c in (("bound", "C0"), ("dissociated", "C1"), ("ionised", "C2")):
        extra = obs["absorbed_R"] if k == "dissociated" else obs["absorbed_x"] if k == "ionised" else 0
        b.semilogy(t, np.clip(obs[k] + extra, 1e-12, None), color=c,
                   label=k + ("" if k == "bound" else " (+ absorbed)"))
    b.set_ylim(1e-8, 2)
    b.set_xlabel("t (hbar/E_h)")
    b.set_ylabel("fraction of the norm")
    b.legend(loc="lower right", fontsize=8)
    e = b.twinx()
    e.plot(t, obs["field"], color="0.6", lw=0.6)
    e.set_ylabel("E(t) (E_h/(e bohr))", color="0.5")
    fig.subplots_adjust(left=0.09, right=0.9, top=0.95, bottom=0.08)
    p1 = base + "_nuclei.png"
    fig.savefig(p1, dpi=110)
    plt.close(fig)
    fig, ax = plt.subplots(figsize=(7, 3.5))
    E, P = ker["energy_eV"], ker["probability"]
    ax.plot(E, P, lw=1)
    above = P[E > 0.05]          # below 0.05 eV: P(k) mu_N / k of the region's edge and of the
    if above.size and above.max() > 0:    # highest bound levels reaching past dissociated_R
        ax.set_ylim(0, 1.15 * above.max())
        ax.axvspan(0, 0.05, color="0.92", zorder=0)
    for n, e in lines:
        if 0 < e * HARTREE_EV < 0.9 * ker["energy_eV"][-1]:
            ax.axvline(e * HARTREE_EV, color="C3", lw=0.8, ls="--")
            ax.text(e * HARTREE_EV, ax.get_ylim()[1] * 0.95, f" {n} photon{'s' if n > 1 else ''}",
                    color="C3", fontsize=8, va="top")
    ax.set_xlabel("kinetic energy release (eV); dashed: E(0) + n omega - E(p + H)")
    ax.set_ylabel("dP/dE (1/hartree)")
    ax.set_title(f"{name}: KER of the dissociating part (R >= dissociated_R), total {ker_total:.3g}", fontsize=10)
    fig.tight_layout()
    p2 = base + "_ker.png"
    fig.savefig(p2, dpi=110)
    plt.close(fig)
    return [p1, p2]
