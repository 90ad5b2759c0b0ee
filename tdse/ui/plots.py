"""Pictures of a run, drawn from its HDF5 file (matplotlib, Agg; atomic units).

Files written next to each other, ``<name>_<what>.png``:
  spacetime   |psi(x, t)|^2 map with node positions as dots (as in the thesis' Fig. 6)
  nodes       <n>(t) = sum_n n P_n(t) (smooth, converges) with the node count of Re psi
              at the snapshots (the thesis' dots; depends on eps and on the sampling)
  populations populations of the lowest eigenstates of H(0) and of H(t) against t
  drift       norm drift (or the yield) and energy <H(t)> against t, <H> with its stated time
              error as bars at the snapshots (tdse.run.timeerror.energy_band)
  snapshots   Re psi, Im psi, |psi| over the potential at a few times
  transitions (operator mode) P_mn(t_end) heatmap and P_m0(t) against t
"""
from __future__ import annotations

import math
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from ..run.snapshots import read  # noqa: E402


#: the pictures of a run (OUT/<name>_<what>.png; transitions only in operator mode)
RUN_PICTURES = ("spacetime", "nodes", "populations", "drift", "snapshots", "transitions", "field")


def plot_run(h5path, out_dir=None, node_eps=None, force=True, log=True) -> list[str]:
    """Every picture of a run file (OUT/<name>_<what>.png); returns their paths.  Without
    ``force``, a FileExistsError (its ``filename``) before anything is drawn where one of
    them exists."""
    d = read(h5path)
    name = d["attrs"].get("name", os.path.splitext(os.path.basename(h5path))[0])
    out_dir = out_dir or os.path.dirname(os.path.abspath(h5path))
    if "grid/R" in d:                    # a [nuclei] run's file: its own two pictures
        from .nuclei import plot_nuclei
        return plot_nuclei(h5path, out_dir, force)
    if d["snapshots/t"].size == 0:
        raise ValueError(f"{h5path}: holds no snapshots to plot")
    for what in RUN_PICTURES if not force else ():
        p = os.path.join(out_dir, f"{name}_{what}.png")
        if os.path.exists(p):
            raise FileExistsError(17, "exists", p)
    os.makedirs(out_dir, exist_ok=True)
    eps = node_eps if node_eps is not None else _eps_from(d)
    files = []
    one_atom = d["snapshots/centres"].shape[1] == 1     # no molecule: no node picture
    figs = [("spacetime", spacetime_figure(d, name, log=log)),
            *([] if one_atom else [("nodes", nodes_figure(d, name, eps))]),
            ("populations", populations_figure(d, name, population_floor(d, out_dir))),
            ("drift", drift_figure(d)), ("snapshots", snapshots_figure(d, name))]
    if "operator/P" in d and len(d["operator/P"]):
        figs.append(("transitions", transitions_figure(d)))
    if _config(d).field is not None and d["observables/t"].size:
        figs.append(("field", field_figure(d, name)))
    for what, fig in figs:
        p = os.path.join(out_dir, f"{name}_{what}.png")
        fig.savefig(p, dpi=110, bbox_inches="tight")
        plt.close(fig)
        files.append(p)
    return files


def _xlim(d):
    x, dens = d["grid/x"], np.abs(d["snapshots/psi"]) ** 2
    xmask = dens.max(axis=0) > 1e-4 * dens.max()
    return (x[xmask].min(), x[xmask].max()) if xmask.any() else (x[0], x[-1])


def _config(d):
    from ..config import loads
    return loads(d["attrs"].get("effective_toml") or d["attrs"]["input_toml"])


#: the spacetime map's colour range in log scale: |psi|^2 from this fraction of its maximum
#: up (excitation and ionised flux, 1e-3 to 1e-6 of the peak, are invisible in linear)
LOG_RANGE = 1e-6


def spacetime_figure(d, name, log=True):
    """|psi(x, t)|^2 over the snapshots on the whole box, symmetric about x = 0 (log colour
    from LOG_RANGE of the maximum by default; ``log=False``: linear), with the centres' paths
    where they move (bright dashed lines with a dark edge: visible on every colour of the
    map), the legend below the map, off the data."""
    import matplotlib.patheffects as pe
    from matplotlib.colors import LogNorm
    x, t, psi = d["grid/x"], d["snapshots/t"], d["snapshots/psi"]
    dens = np.abs(psi) ** 2
    fig, ax = plt.subplots(figsize=(8, 5.4))
    tt = t if t.size > 1 else np.array([t[0], t[0] + 1e-9])
    top = float(dens.max()) or 1.0
    norm = LogNorm(vmin=LOG_RANGE * top, vmax=top, clip=True) if log else None
    im = ax.pcolormesh(x, tt, dens if t.size > 1 else np.vstack([dens, dens]),
                       shading="auto", cmap="magma", norm=norm)
    centres = d["snapshots/centres"]
    moving = centres.size and float(np.ptp(centres, axis=0).max()) > 0
    for c in range(centres.shape[1] if moving else 0):
        ax.plot(centres[:, c], t, "--", color="deepskyblue", lw=1.4,
                path_effects=[pe.Stroke(linewidth=3, foreground="black"), pe.Normal()],
                label="nuclear centres X_c(t)" if c == 0 else None)
    half = max(abs(float(x[0])), abs(float(x[-1])))
    ax.set_xlim(-half, half)
    ax.set(xlabel="x (bohr)", ylabel="t (a.u. of time)",
           title=f"{name}: |psi(x,t)|^2" + (" and the centres" if moving else ""))
    if moving:
        ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.12), frameon=False)
    fig.colorbar(im, ax=ax, label="|psi|^2 (bohr^-1)" + (", log scale" if log else ""))
    return fig


def nodes_figure(d, name, eps):
    """<n>(t) -- the observable that converges -- on its own axis above the node count at
    the snapshots (small grey marks, with its noise explained): the count's jumps no longer
    squash <n> (#58 item 13)."""
    t, to = d["snapshots/t"], d["observables/t"]
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(8, 5), sharex=True,
                                      gridspec_kw={"height_ratios": [1.2, 1]})
    K = d["observables/populations_ht"].shape[1] if to.size else 0
    if to.size:
        ok = np.isfinite(d["observables/n_mean"])  # rows with H(t)'s populations (populations_every)
        top.plot(to[ok], d["observables/n_mean"][ok], "C0", lw=1.6)
    top.set(ylabel="<n>", title=f"{name}: population-weighted node number <n>(t) = sum n P_n(t), "
                                f"eigenstates of H(t), n < {K}")
    top.text(0.01, 0.95, "the signal: it converges (docs/convergence)", transform=top.transAxes,
             fontsize=7, va="top", color="0.3")
    bottom.plot(t, d["snapshots/nodes"], "x", color="0.55", ms=4)
    hi = float(np.max(d["snapshots/nodes"])) if t.size else 1.0
    bottom.set_ylim(-0.3, 1.35 * hi + 1.0)
    bottom.set(xlabel="t (a.u. of time)", ylabel="sign changes",
               title=f"sign changes of Re psi at the snapshots (eps = {eps:g}): not converged",
               )
    bottom.title.set_fontsize(9)
    bottom.text(0.01, 0.95, "a driven complex psi has no true nodes: this count changes with eps "
                "and the time sampling (it equals n only in an eigenstate n)",
                transform=bottom.transAxes, fontsize=7, va="top", color="0.3")
    fig.tight_layout()
    return fig


def population_floor(d, out_dir=None):
    """(floor over the observation times, what it is): the populations' stated error --
    the run's time error of the populations (/snapshots/time_error_populations), and the
    grid's error from a
    ``tdse converge`` study of this very input beside the file (its sha256 must match) or
    recorded in docs/convergence -- or (None, None) without either."""
    to = d["observables/t"]
    parts, floor = [], np.zeros(to.size)
    te = d.get("snapshots/time_error_populations")
    if te is not None and np.isfinite(te).any():
        ok = np.isfinite(te)
        floor = np.maximum(floor, np.interp(to, d["snapshots/t"][ok], te[ok]))
        parts.append("the run's time error")
    conv = _converge_error(d, out_dir)
    if conv is not None:
        floor = np.maximum(floor, conv)
        parts.append(f"the grid's error {conv:.1e} (tdse converge)")
    return (floor, " and ".join(parts)) if parts else (None, None)


def _converge_error(d, out_dir):
    import hashlib
    import json
    name = d["attrs"].get("name")
    sha = hashlib.sha256((d["attrs"].get("input_toml") or "").encode()).hexdigest()
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    for folder in (out_dir, os.path.join(here, "docs", "convergence")):
        p = os.path.join(folder or ".", f"{name}_converge.json")
        if os.path.exists(p):
            with open(p) as fh:
                doc = json.load(fh)
            if doc.get("input_sha256") == sha:
                return float(doc["input_numerics"]["estimated_error"])
    return None


def populations_figure(d, name, floor=(None, None)):
    """P_n(t) in the eigenstates of H(0) and of H(t) on a log axis, with the stated error
    drawn as a grey floor: a population below it is not resolved by this run."""
    to = d["observables/t"]
    band, what = floor
    fig, axs = plt.subplots(1, 2, figsize=(11, 3.8), sharey=True)
    for ax, key, title in ((axs[0], "populations_h0", "eigenstates of H(0)"),
                           (axs[1], "populations_ht", "eigenstates of H(t)")):
        P = d[f"observables/{key}"]
        ok = np.isfinite(P).all(axis=1)    # H(t)'s every output.populations_every steps
        for n in range(P.shape[1]):
            ax.plot(to[ok], np.clip(P[ok, n], 1e-16, None), label=f"n = {n}")
        if band is not None:
            ax.fill_between(to, 1e-12, np.clip(band, 1e-12, None), color="0.8", zorder=0,
                            label="below: within the stated error")
        ax.set(xlabel="t (a.u. of time)", title=title, yscale="log", ylim=(1e-12, 2))
    axs[0].set_ylabel("population P_n(t)")
    axs[1].legend(fontsize=8)
    if what:
        fig.suptitle(f"{name}: populations; grey: the stated error ({what})", fontsize=9)
    return fig


def field_figure(d, name):
    """A laser run: E(t) above the electron's response, <x>(t) and the dipole acceleration
    <-dV/dx> (what the harmonic spectrum is made of), on one time axis (#58 item 13)."""
    t = d["observables/t"]
    fig, axs = plt.subplots(3, 1, figsize=(8, 6.2), sharex=True)
    axs[0].plot(t, d["observables/field"], "C3", lw=1)
    axs[0].set(ylabel="E(t) (E_h/(e bohr))", title=f"{name}: the field and the electron's response")
    axs[1].plot(t, d["observables/x_mean"], "C0", lw=1)
    axs[1].set(ylabel="<x> (bohr)")
    axs[2].plot(t, d["observables/acceleration"], "C2", lw=0.8)
    axs[2].set(ylabel="<-dV/dx> (bohr/(hbar/E_h)^2)", xlabel="t (a.u. of time)")
    for ax in axs:
        ax.axhline(0, color="0.85", lw=0.5, zorder=0)
    fig.tight_layout()
    return fig


def drift_figure(d):
    to = d["observables/t"]
    fig, axs = plt.subplots(1, 2, figsize=(11, 3.5))
    if "[absorber]" in (d["attrs"].get("effective_toml") or ""):
        axs[0].plot(to, d["observables/yield"], label="1 - norm")
        if "observables/yield_flux" in d:
            axs[0].plot(to, d["observables/yield_flux"], "--", label="flux into the layers")
        axs[0].set(xlabel="t (a.u. of time)", ylabel="yield",
                   title="ionisation yield (norm taken by the absorber)")
        axs[0].legend(fontsize=8)
    else:
        axs[0].plot(to, d["observables/norm"] - 1.0)
        axs[0].set(xlabel="t (a.u. of time)", ylabel="norm - 1", title="norm drift")
    cfg = _config(d)
    axs[1].plot(to, d["observables/energy"])
    band = None
    if "snapshots/time_error" in d:
        from ..run.timeerror import energy_band
        band = energy_band(cfg, d["grid/x"], d["snapshots/t"], d["snapshots/psi"], d["snapshots/time_error"])
    if band is not None:
        ts, e, half = band
        axs[1].errorbar(ts, e, yerr=half, fmt="none", ecolor="C1", elinewidth=1.5, capsize=0)
    what = "<T + V(t) + x E(t)>" if cfg.field is not None else "<T + V(t)>"
    axs[1].set(xlabel="t (a.u. of time)", ylabel="<H(t)> (hartree)",
               title=f"energy {what}" + (", per remaining norm" if cfg.absorber is not None else "")
               + ("" if band is None else f"\nits stated time error (bars, at the snapshots) <= {band[2].max():.1g} hartree"))
    return fig


def _between_points(x, cfg, xlim, per_point=4, most=2400):
    """Where psi is drawn: the grid itself for the stencils; for the sinc-DVR, its own
    interpolant between the points, psi(x) = sum_j psi_j sinc((x - x_j)/dx) (Colbert &
    Miller's basis: what the DVR's psi is between them; #58 item 13), on ``per_point`` x the
    points inside the view (at most ``most``), from the points within ``margin`` of it (the
    view holds all but 1e-4 of |psi|^2's peak, :func:`_xlim`): the basis is (view x view +
    2 margin) points, not the whole grid's N columns (157 MB at N = 8192).  (x, draw):
    ``draw(psi)`` is psi on x."""
    if cfg.grid.stencil != "dvr":
        return x, lambda f: f
    dx, margin = cfg.grid.dx, 64
    inside = (x >= xlim[0]) & (x <= xlim[1])
    n = int(min(most, max(2, per_point * inside.sum())))
    xs = np.linspace(xlim[0], xlim[1], n)
    near = (x >= xlim[0] - margin * dx) & (x <= xlim[1] + margin * dx)
    basis = np.sinc((xs[:, None] - x[None, near]) / dx)
    return xs, lambda f: basis @ f[near]


def snapshots_figure(d, name):
    """psi at up to four snapshots, one panel each, with V(x, t) at that snapshot's own
    time (the wells where they are then)."""
    from ..model.potential import total
    x, t, psi = d["grid/x"], d["snapshots/t"], d["snapshots/psi"]
    cfg = _config(d)
    picks = sorted(set(np.linspace(0, t.size - 1, min(4, t.size)).astype(int)))
    xlim = _xlim(d)
    fig, axs = plt.subplots(len(picks), 1, figsize=(8, 1.9 * len(picks) + 0.6), sharex=True,
                            squeeze=False)
    xs, draw = _between_points(x, cfg, xlim)
    for ax, i in zip(axs[:, 0], picks):
        f = draw(psi[i])
        ax.plot(xs, f.real, "C0", lw=1, label="Re psi")
        ax.plot(xs, f.imag, "C1", lw=1, label="Im psi")
        ax.plot(xs, np.abs(f), "k", lw=1, label="|psi|")
        ax2 = ax.twinx()
        ax2.plot(xs, total(cfg.potential, xs, float(t[i])), color="0.6", lw=1, label="V(x, t)")
        ax2.set_ylabel("V (Ha)", color="0.5", fontsize=8)
        ax.set_ylabel("psi (bohr^-1/2)", fontsize=8)
        ax.text(0.01, 0.85, f"t = {t[i]:.4g}", transform=ax.transAxes, fontsize=8)
    axs[0, 0].legend(loc="upper right", fontsize=7, ncol=3)
    axs[-1, 0].set_xlim(*xlim)
    axs[-1, 0].set_xlabel("x (bohr)")
    axs[0, 0].set_title(f"{name}: snapshots, with V(x, t) at each snapshot's time (grey)")
    return fig


def transitions_figure(d):
    t, P = d["snapshots/t"], d["operator/P"]
    K = P.shape[1]
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 4.2))
    im = a1.imshow(np.log10(np.clip(P[-1], 1e-12, None)), origin="lower", cmap="viridis",
                   vmin=-12, vmax=0)
    a1.set_xticks(range(K))
    a1.set_yticks(range(K))
    a1.set_xlabel("initial state n")
    a1.set_ylabel("final state m")
    a1.set_title(f"P_mn = |<m|U(t)|n>|^2 at t = {t[-1]:.4g} a.u.", fontsize=9)
    fig.colorbar(im, ax=a1, label="log10 P_mn")
    for m in range(min(K, 8)):
        a2.plot(t, np.clip(P[:, m, 0], 1e-16, None), label=f"m = {m}")
    a2.set_yscale("log")
    a2.set_ylim(max(1e-12, float(P[:, :, 0].min()) or 1e-12), 1.5)
    a2.set_xlabel("t (a.u. of time)")
    a2.set_ylabel("P_m0(t)")
    a2.set_title("from the ground state of H(0)")
    a2.legend(fontsize=7, ncol=2)
    return fig


def _eps_from(d) -> float:
    import tomllib
    try:
        return float(tomllib.loads(d["attrs"]["input_toml"]).get("output", {}).get("node_eps", 1e-2))
    except Exception:
        return 1e-2


def plot_converge(doc, path):
    """Stated error against dx (per stencil) and against dt, log-log, with the expected
    slopes: the populations on one row, <H> (hartree) on its own below -- each against its
    own target where the study has one (--target is on the populations; #58 item 13: the
    two had shared an axis and the populations' target)."""
    groups = [("populations", "populations P_n (no unit)"), ("energy", "<H(t)> (hartree)")]
    fig, axs = plt.subplots(2, 2, figsize=(11, 8.2))
    targets = set(doc.get("target_groups", ["populations"]))
    for row, (g, what) in enumerate(groups):
        a1, a2 = axs[row]
        for k, (st, s) in enumerate(doc["space"].items()):
            dx = np.array(s["dx"])
            e = np.array([v if v else np.nan for v in s[g]["errors"]])
            a1.loglog(dx, np.clip(e, 1e-16, None), "o-", color=f"C{k}", label=f"stencil {st}")
            p = {"3": 2, "5": 4}.get(st)
            if p and row == 0:
                e0 = s[g]["errors"][0] or 1e-3
                a1.loglog(dx, e0 * (dx / dx[0]) ** p, ":", color=f"C{k}", lw=1, label=f"slope {p}")
        t = doc["time"]
        dts = np.array(t["dt"])
        e = np.array([v if v else np.nan for v in t[g]["errors"]])
        a2.loglog(dts, np.clip(e, 1e-16, None), "o-", color="C0", label=doc["scheme"])
        if row == 0:
            order = 4 if doc["scheme"] == "cfm4" else 2
            e0 = t[g]["errors"][0] or 1e-3
            a2.loglog(dts, e0 * (dts / dts[0]) ** order, ":", color="k", lw=1, label=f"slope {order}")
            floor = doc.get("exponential_tolerance", 1e-12) * max(r["steps"] for r in t["runs"])
            a2.axhline(floor, color="0.6", lw=0.8, ls=":", label="exponentials' floor (tol x steps)")
        for ax in (a1, a2):
            if g in targets:
                ax.axhline(doc["target"], color="k", lw=0.8, ls="--", label=f"target {doc['target']:g}")
            ax.set_ylabel(f"stated error of {what}", fontsize=8)
            ax.legend(fontsize=7, loc="best")
        none = "" if g in targets else ", no target"
        a1.set_title(f"{doc['input']}: {g} vs dx (dt = {doc['input_numerics']['dt']:g}{none})",
                     fontsize=10)
        a2.set_title(f"{g} vs dt ({doc['scheme']}, {doc['input_numerics']['stencil']}, "
                     f"dx = {doc['input_numerics']['dx']:g}{none})", fontsize=10)
    axs[1, 0].set_xlabel("dx (bohr)")
    axs[1, 1].set_xlabel("dt (a.u. of time)")
    fig.text(0.5, 0.005, "stated errors are bounds (x2 over Richardson, the order capped at the "
             "nominal one; the DVR from its differences); the target (--target) is on the "
             + ", ".join(sorted(targets)), ha="center", fontsize=8, color="0.3")
    fig.tight_layout(rect=(0, 0.02, 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def animate(h5path, out, fps=15):
    """|psi(x, t)|^2 and V(x, t) over the snapshots, one frame each: GIF (pillow) or MP4
    (ffmpeg, where installed)."""
    from matplotlib import animation

    from ..config import loads
    from ..model.potential import total
    # the format refused before anything is read or drawn (an animation made and dropped
    # unsaved makes matplotlib warn: the refusal was one line plus its warning)
    if out.endswith(".mp4"):
        if not animation.writers.is_available("ffmpeg"):
            raise ValueError(f"--out = {out!r}: MP4 needs ffmpeg, which is not installed; use a .gif")
        writer = animation.FFMpegWriter(fps=fps)
    elif out.endswith(".gif"):
        writer = animation.PillowWriter(fps=fps)
    else:
        raise ValueError(f"--out = {out!r}: must end in .gif or .mp4")
    d = read(h5path)
    if "grid/R" in d:
        raise ValueError(f"{h5path}: a [nuclei] run's file (psi over x and R): `tdse plot` draws its nuclear density")
    attrs = d["attrs"]
    cfg = loads(attrs.get("effective_toml") or attrs["input_toml"])
    x, t, psi = d["grid/x"], d["snapshots/t"], d["snapshots/psi"]
    if t.size == 0:
        raise ValueError(f"{h5path}: holds no snapshots to animate")
    dens = np.abs(psi) ** 2
    fig, ax = plt.subplots(figsize=(7, 4))
    ax2 = ax.twinx()
    line, = ax.plot(x, dens[0], "k", lw=1.2, label="|psi|^2")
    vline, = ax2.plot(x, total(cfg.potential, x, t[0]), color="C0", lw=0.8, alpha=0.7)
    vmin = min(float(total(cfg.potential, x, ti).min()) for ti in t[:: max(1, t.size // 20)])
    ax.set_ylim(0, 1.1 * dens.max())
    ax2.set_ylim(1.1 * vmin, 0.2 * abs(vmin))
    ax.set_xlabel("x (bohr)")
    ax.set_ylabel("|psi|^2 (bohr^-1)")
    ax2.set_ylabel("V(x, t) (hartree)", color="C0")
    title = ax.set_title("")

    def frame(i):
        line.set_ydata(dens[i])
        vline.set_ydata(total(cfg.potential, x, t[i]))
        title.set_text(f"{attrs.get('name')}: t = {t[i]:.3f} a.u. of time")
        return line, vline, title
    anim = animation.FuncAnimation(fig, frame, frames=t.size, blit=False)
    anim.save(out, writer=writer)
    plt.close(fig)
    return out


# ---------------------------------------------------------------- Floquet (tdse floquet)
def plot_floquet(res: dict, path: str):
    """The Floquet states' quasi-energies eps (hartree, folded into [-omega/2, omega/2): the
    table's numbers; #58 item 13 -- it drew phases in rad) against their overlaps with the
    eigenstates n of H(0), nearby labels staggered apart."""
    w = 2 * math.pi / res["period"]
    eps = np.asarray(res.get("quasi_energies", np.asarray(res["phases"]) / res["period"]))
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(eps, np.zeros_like(eps), "|", color="0.6", ms=12, label="all Floquet quasi-energies")
    placed = []
    for s in res["states"]:
        e = s.get("quasi_energy", s["phase"] / res["period"])
        ax.plot(e, s["overlap"], "o", ms=6)
        # stagger labels of nearby points so they do not overlap
        near = sum(1 for p, o in placed if abs(p - e) < 0.04 * w and abs(o - s["overlap"]) < 0.08)
        ax.annotate(f"n={s['n']}", (e, s["overlap"]), textcoords="offset points",
                    xytext=(4, 4 + 9 * near), fontsize=7)
        placed.append((e, s["overlap"]))
    ax.set_xlim(-0.5 * w, 0.5 * w)
    ax.set_ylim(-0.05, 1.08)
    ax.set_xlabel("quasi-energy eps (hartree), folded into [-omega/2, omega/2)")
    ax.set_ylabel("|<F|n>|^2 with eigenstate n of H(0)")
    ax.set_title(f"{res['name']}: Floquet states, T = {res['period']:.5g} a.u., {res['steps']} steps")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_scan(res: dict, path: str):
    """The quasi-energy map over the scanned key, read as physics: for each of the lowest
    eigenstates n of H(0), the shift of its Floquet state's quasi-energy from E_n(0),
    (eps - E_n) folded into [-omega/2, omega/2) -- a curve (the AC Stark shift) that runs
    smoothly where eps itself would jump by omega -- drawn as a line broken where it wraps;
    a red ring where two n share one Floquet state (an avoided crossing); the overlaps
    below.  Atomic units."""
    pts = res["points"]
    x = np.array([p["value"] for p in pts])
    fig, (ax, bx) = plt.subplots(2, 1, figsize=(8.5, 7), sharex=True,
                                 gridspec_kw={"height_ratios": [2.2, 1]})
    w = np.array([p["omega"] for p in pts])
    ax.plot(x, 0.5 * w, "--", color="0.4", lw=0.8)
    ax.plot(x, -0.5 * w, "--", color="0.4", lw=0.8, label="zone edges +-omega/2")
    K = len(pts[0]["states"]) if pts else 0
    colors = plt.cm.viridis(np.linspace(0, 0.9, max(K, 1)))
    marks = "os^vDP*X"
    ringed = False
    for k in range(K):  # hollow odd n: a near-degenerate pair (n, n+1) stays visible
        e = np.array([p["states"][k].get("shift", p["states"][k]["quasi_energy"]) for p in pts])
        o = np.array([p["states"][k]["overlap"] for p in pts])
        m, face = marks[k % len(marks)], (colors[k] if k % 2 == 0 else "none")
        line = e.copy()
        line[1:][np.abs(np.diff(e)) > 0.5 * w[1:]] = np.nan   # break the line where it wraps
        ax.plot(x, line, "-", color=colors[k], lw=1.0, zorder=2)
        ax.scatter(x, e, s=50 * o + 6, marker=m, facecolors=face, edgecolors=colors[k],
                   linewidths=1.2, zorder=3 + (k % 2), label=f"n = {k} (area ~ overlap)")
        bx.plot(x, o, "-", marker=m, ms=4, mfc=face, color=colors[k], label=f"n = {k}")
        tied = np.array([bool(p["states"][k].get("shared_with")) for p in pts])
        if tied.any():  # an avoided crossing: two states of H(0) on one Floquet state
            ax.scatter(x[tied], e[tied], s=170, marker="o", facecolors="none", edgecolors="red",
                       linewidths=1.0, zorder=6,
                       label=None if ringed else "shares its Floquet state (avoided crossing)")
            ringed = True
    unit = f" ({res['key_unit']})" if res.get("key_unit") else ""
    ax.set_ylabel("eps_n - E_n(0) (hartree),\nfolded into [-omega/2, omega/2)")
    ax.set_title(f"{res['name']}: Floquet quasi-energy shifts over {res['key']} (N = {res['n']})")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    bx.set_ylabel("max_F |<F|n>|^2")
    bx.set_ylim(-0.05, 1.05)
    bx.set_xlabel(f"{res['key']}{unit}, atomic units")
    bx.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
