"""`tdse run` of a ``[nuclei]`` input (the 1D + 1D H2+ model) and its pictures (atomic
units; matplotlib, Agg): the nuclear density |chi(R, t)|^2 = int |psi|^2 dx over time (log
colours) with <R>(t), the fractions by region and E(t) beside it, and the KER spectrum."""
from __future__ import annotations

import os
import signal

import click
import h5py
import matplotlib
import numpy as np

from ..config import ConfigError
from ..model.nuclei import HARTREE_EV
from ..run.snapshots import OutputExists

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

__all__ = ["run_nuclei", "plot_nuclei", "scan_nuclei", "plot_nuclei_scan"]


def run_nuclei(cfg, out_dir, error, *, backend, devices, force, threads, quiet, plots, **_):
    """Prepare and run ``cfg`` into ``out_dir`` from the command line; bad input and a
    grid that cannot fit raise ``error`` (one line, exit 2); an interrupt leaves the
    .part file (not resumable) and exits 130."""
    from ..run import nuclei
    say = (lambda m: None) if quiet else click.echo
    try:
        devs = None if devices in (None, "") else [int(d) for d in str(devices).split(",")]
    except ValueError:
        raise error(f"--devices = {devices!r}: must be comma-separated GPU ids, e.g. 0,1") from None
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
    if plots:
        for p in plot_nuclei(res.path):
            say(f"plot {p}")
    else:
        say(f"no pictures (`tdse plot {res.path}` draws them, or --plots)")
    return res


def plot_nuclei(path, out_dir=None, force=True):
    """The run file's two pictures (next to it, or in ``out_dir``): <name>_nuclei.png (the
    nuclear density map with <R>(t), the fractions and E(t)) and <name>_ker.png (the KER
    spectrum); without ``force`` a FileExistsError where one exists."""
    base = path[:-3] if out_dir is None else os.path.join(out_dir, os.path.basename(path)[:-3])
    for p in (base + "_nuclei.png", base + "_ker.png") if not force else ():
        if os.path.exists(p):
            raise FileExistsError(17, "exists", p)
    os.makedirs(os.path.dirname(os.path.abspath(base)), exist_ok=True)
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


def scan_nuclei(cfg, parsed, zipped, base, backend, batch, quiet, error, workers=None, scheduler=None,
                keep_psi=False, plots=False):
    """`tdse scan` of a ``[nuclei]`` input: the members stepped together
    (:func:`tdse.run.nuclei.scan`), then <base>.h5 and with ``plots`` <base>.png; bad input
    raises ``error``."""
    from ..run.nuclei import write_scan
    from ..studies.scan import scan
    os.makedirs(os.path.dirname(base) or ".", exist_ok=True)
    try:
        res = scan(cfg, parsed, zipped=zipped, workers=workers, scheduler=scheduler, keep_psi=keep_psi,
                   backend=backend, batch=batch, progress=not quiet)
    except ConfigError as e:
        raise error(f"{cfg.name}: {e}") from None
    write_scan(base + ".h5", res)
    if plots:
        plot_nuclei_scan(base + ".h5", base + ".png")
    n = len(res["scan"].configs)
    click.echo(f"{n} members in {res['batches']} batch(es), {res['seconds']:.1f} s ({res['seconds'] / n:.3g} s a "
               f"member); wrote {base}.h5" + (f", {base}.png" if plots else
                                              f" (its picture: `tdse plot {base}.h5`, or --plots)"))
    return res


def plot_nuclei_scan(h5path, path):
    """A ``[nuclei]`` scan's picture: the fractions at t_end against the (first) key, and the
    KER spectrum against it (two keys: the dissociated and ionised fractions over both)."""
    import json

    from ..config import key_unit
    with h5py.File(h5path, "r") as f:
        keys = json.loads(f.attrs["keys"])
        zipped = bool(f.attrs["zipped"])
        d = {k: f[k][()] for k in list(f.keys())}
    label = {k: f"{k} ({key_unit(k) or 'no unit'})" for k in keys}
    final = {k: d[k][..., -1] + (d["absorbed_R"][..., -1] if k == "dissociated" else
                                 d["absorbed_x"][..., -1] if k == "ionised" else 0)
             for k in ("bound", "dissociated", "ionised")}
    fig, axs = plt.subplots(1, 2, figsize=(12, 4.4))
    if len(keys) == 1 or zipped:
        v = d[keys[0]]
        for k, c in (("bound", "C0"), ("dissociated", "C1"), ("ionised", "C2")):
            axs[0].semilogy(v, np.clip(final[k], 1e-12, None), "o-", ms=3, color=c,
                            label=k + ("" if k == "bound" else " (+ absorbed)"))
        axs[0].set(xlabel=label[keys[0]], ylabel="fraction at t_end", title="fractions against the key")
        axs[0].legend(fontsize=8)
        E, P = d["ker_energy_eV"], d["ker"]
        keep = E > 0.05
        im = axs[1].pcolormesh(E[keep], v, P[:, keep], shading="auto", cmap="magma")
        axs[1].set(xlabel="kinetic energy release (eV)", ylabel=label[keys[0]],
                   title="KER spectrum at t_end (dP/dE, 1/hartree)")
        fig.colorbar(im, ax=axs[1])
    else:
        k1, k2 = keys[:2]
        for ax, k in zip(axs, ("dissociated", "ionised")):
            z = final[k]
            while z.ndim > 2:
                z = z[..., 0]
            im = ax.pcolormesh(d[k2], d[k1], z, shading="auto", cmap="viridis")
            ax.set(xlabel=label[k2], ylabel=label[k1], title=f"{k} (+ absorbed) at t_end")
            cb = fig.colorbar(im, ax=ax, label="fraction")
            cb.formatter.set_useOffset(False)       # (no offset text over the title)
            cb.update_ticks()
    fig.suptitle(f"{os.path.basename(h5path)}: the 1D + 1D H2+ model (atomic units)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
