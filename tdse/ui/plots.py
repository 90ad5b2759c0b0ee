"""Pictures of a run, drawn from its HDF5 file (matplotlib, Agg; atomic units).

Files written next to each other, ``<name>_<what>.png``:
  spacetime   |psi(x, t)|^2 map with node positions as dots (as in the thesis' Fig. 6)
  nodes       <n>(t) = sum_n n P_n(t) (smooth, converges) with the node count of Re psi
              at the snapshots (the thesis' dots; depends on eps and on the sampling)
  populations populations of the lowest eigenstates of H(0) and of H(t) against t
  drift       norm drift and energy <H(t)> against t
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

from ..model.observables import node_positions  # noqa: E402
from ..run.snapshots import read  # noqa: E402


def plot_run(h5path, out_dir=None, node_eps=None) -> list[str]:
    d = read(h5path)
    name = d["attrs"].get("name", os.path.splitext(os.path.basename(h5path))[0])
    out_dir = out_dir or os.path.dirname(os.path.abspath(h5path))
    os.makedirs(out_dir, exist_ok=True)
    x, t, psi = d["grid/x"], d["snapshots/t"], d["snapshots/psi"]
    if t.size == 0:
        raise ValueError(f"{h5path}: holds no snapshots to plot")
    to = d["observables/t"]
    eps = node_eps if node_eps is not None else _eps_from(d)
    files = []

    def save(fig, what):
        p = os.path.join(out_dir, f"{name}_{what}.png")
        fig.savefig(p, dpi=110, bbox_inches="tight")
        plt.close(fig)
        files.append(p)

    dens = np.abs(psi) ** 2
    xmask = dens.max(axis=0) > 1e-4 * dens.max()
    xlim = (x[xmask].min(), x[xmask].max()) if xmask.any() else (x[0], x[-1])

    # |psi|^2 space-time map with nodes
    fig, ax = plt.subplots(figsize=(8, 5))
    tt = t if t.size > 1 else np.array([t[0], t[0] + 1e-9])
    im = ax.pcolormesh(x, tt, dens if t.size > 1 else np.vstack([dens, dens]),
                       shading="auto", cmap="magma")
    for ti, p in zip(t, psi):
        xs = node_positions(x, p, eps)
        ax.plot(xs, np.full(xs.size, ti), ".", color="cyan", ms=2)
    for c in range(d["snapshots/centres"].shape[1]):
        ax.plot(d["snapshots/centres"][:, c], t, "w--", lw=0.6)
    ax.set_xlim(*xlim)
    ax.set(xlabel="x (bohr)", ylabel="t (a.u. of time)",
           title=f"{name}: |psi(x,t)|^2, nodes of Re psi (dots, eps = {eps:g}), centres (dashed)")
    fig.colorbar(im, ax=ax, label="|psi|^2 (bohr^-1)")
    save(fig, "spacetime")

    # <n>(t) and the node count
    fig, ax = plt.subplots(figsize=(8, 3.6))
    K = d["observables/populations_ht"].shape[1] if to.size else 0
    if to.size:
        ax.plot(to, d["observables/n_mean"], "C0", lw=1.2,
                label=f"<n> = sum n P_n, eigenstates of H(t), n < {K} (converges)")
    ax.plot(t, d["snapshots/nodes"], "o", color="C3", ms=3,
            label=f"node count of Re psi at snapshots (eps = {eps:g})")
    ax.set(xlabel="t (a.u. of time)", ylabel="nodes",
           title=f"{name}: population-weighted node number and node count")
    ax.text(0.01, 0.97, "the count of a driven complex psi changes with eps and with the time "
            "sampling;\n<n>(t) is the observable that converges with dx and dt",
            transform=ax.transAxes, fontsize=7, va="top", color="0.3")
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.18), ncol=2, frameon=False)
    save(fig, "nodes")

    fig, axs = plt.subplots(1, 2, figsize=(11, 3.5), sharey=True)
    for ax, key, title in ((axs[0], "populations_h0", "eigenstates of H(0)"),
                           (axs[1], "populations_ht", "eigenstates of H(t)")):
        P = d[f"observables/{key}"]
        for n in range(P.shape[1]):
            ax.plot(to, np.clip(P[:, n], 1e-16, None), label=f"n = {n}")
        ax.set(xlabel="t (a.u. of time)", title=title, yscale="log", ylim=(1e-12, 2))
    axs[0].set_ylabel("population P_n(t)")
    axs[1].legend(fontsize=8)
    save(fig, "populations")

    fig, axs = plt.subplots(1, 2, figsize=(11, 3.5))
    absorber = "[absorber]" in (d["attrs"].get("effective_toml") or "")
    if absorber:
        axs[0].plot(to, d["observables/yield"])
        axs[0].set(xlabel="t (a.u. of time)", ylabel="1 - norm",
                   title="ionisation yield (norm taken by the absorber)")
    else:
        axs[0].plot(to, d["observables/norm"] - 1.0)
        axs[0].set(xlabel="t (a.u. of time)", ylabel="norm - 1", title="norm drift")
    axs[1].plot(to, d["observables/energy"])
    axs[1].set(xlabel="t (a.u. of time)", ylabel="<H(t)> (hartree)",
               title="energy <T + V(t)> (with a field: + x E(t))")
    save(fig, "drift")

    fig, ax = plt.subplots(figsize=(8, 4))
    picks = sorted(set(np.linspace(0, t.size - 1, min(4, t.size)).astype(int)))
    amp = np.abs(psi).max()
    V0 = d["potential/V0"]
    ax2 = ax.twinx()
    ax2.plot(x, V0, color="0.6", lw=1)
    ax2.set_ylabel("V(x, 0) (hartree)", color="0.5")
    for k, i in enumerate(picks):
        off = 2.2 * amp * k
        ax.plot(x, psi[i].real + off, "C0", lw=1, label="Re psi" if k == 0 else None)
        ax.plot(x, psi[i].imag + off, "C1", lw=1, label="Im psi" if k == 0 else None)
        ax.plot(x, np.abs(psi[i]) + off, "k", lw=1, label="|psi|" if k == 0 else None)
        ax.text(xlim[0] + 0.02 * (xlim[1] - xlim[0]), off + 0.5 * amp, f"t = {t[i]:.3g}", fontsize=8)
    ax.set_xlim(*xlim)
    ax.set(xlabel="x (bohr)", ylabel="psi (bohr^-1/2), offset per time", title=f"{name}: snapshots")
    ax.legend(loc="upper right", fontsize=8)
    save(fig, "snapshots")
    if "operator/P" in d and len(d["operator/P"]):
        P = d["operator/P"]
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
        save(fig, "transitions")
    return files


def _eps_from(d) -> float:
    import tomllib
    try:
        return float(tomllib.loads(d["attrs"]["input_toml"]).get("output", {}).get("node_eps", 1e-2))
    except Exception:
        return 1e-2


def plot_converge(doc, path):
    """Error against dx (per stencil) and against dt, log-log, with the expected slopes."""
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 5.0))
    for k, (st, s) in enumerate(doc["space"].items()):
        dx = np.array(s["dx"])
        for g, mk in (("populations", "o-"), ("energy", "s--")):
            e = np.array([v if v else np.nan for v in s[g]["errors"]])
            a1.loglog(dx, np.clip(e, 1e-16, None), mk, color=f"C{k}",
                      label=f"{st}: {'populations' if g == 'populations' else '<H> (Ha)'}")
        p = {"3": 2, "5": 4}.get(st)
        if p:
            e0 = s["populations"]["errors"][0] or 1e-3
            a1.loglog(dx, e0 * (dx / dx[0]) ** p, ":", color=f"C{k}", lw=1, label=f"slope {p}")
    a1.axhline(doc["target"], color="k", lw=0.8, ls="--", label=f"target {doc['target']:g}")
    a1.set(xlabel="dx (bohr)", ylabel="estimated error",
           title=f"{doc['input']}: error vs dx (dt = {doc['input_numerics']['dt']:g})")
    a1.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=3, frameon=False)
    t = doc["time"]
    dts = np.array(t["dt"])
    for g, mk in (("populations", "o-"), ("energy", "s--")):
        e = np.array([v if v else np.nan for v in t[g]["errors"]])
        a2.loglog(dts, np.clip(e, 1e-16, None), mk, label="populations" if g == "populations" else "<H> (Ha)")
    order = 4 if doc["scheme"] == "cfm4" else 2
    e0 = t["populations"]["errors"][0] or 1e-3
    a2.loglog(dts, e0 * (dts / dts[0]) ** order, ":", color="k", lw=1, label=f"slope {order}")
    a2.axhline(doc["target"], color="k", lw=0.8, ls="--", label=f"target {doc['target']:g}")
    floor = doc.get("exponential_tolerance", 1e-12) * max(r["steps"] for r in t["runs"])
    a2.axhline(floor, color="0.6", lw=0.8, ls=":", label="exponentials' floor (tol x steps)")
    a2.set(xlabel="dt (a.u. of time)", ylabel="estimated error",
           title=f"error vs dt ({doc['scheme']}, {doc['input_numerics']['stencil']}, "
                 f"dx = {doc['input_numerics']['dx']:g})")
    a2.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=3, frameon=False)
    fig.tight_layout()
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return path


def plot_spectrum(res, path):
    """The harmonic spectrum (log power against harmonic order) or the autocorrelation
    spectrum (against energy, with H(0)'s eigenvalues marked)."""
    fig, ax = plt.subplots(figsize=(8, 4))
    p = np.asarray(res["power"])
    floor = max(p.max() * 1e-16, 1e-300)
    if res["kind"] == "hhg":
        x = np.asarray(res.get("order") or res["omega"])
        keep = x > 0
        ax.semilogy(x[keep], np.clip(p[keep], floor, None), lw=0.8)
        if "order" in res:
            ax.set_xlim(0, min(x.max(), 60))
            for k in range(1, 60, 2):
                ax.axvline(k, color="0.9", lw=0.5, zorder=0)
            ax.set_xlabel("harmonic order omega / omega_0")
        else:
            ax.set_xlabel("omega (E_h/hbar)")
        ax.set_ylabel("|a(omega)|^2 (a.u.)")
        ax.set_title(f"{res.get('name')}: harmonic spectrum of the dipole acceleration "
                     f"({res['window']} window)")
    else:
        E = np.asarray(res["energy"])
        ax.semilogy(E, np.clip(p, floor, None), lw=0.8, label="|S(E)|^2")
        for k, e in enumerate(res.get("eigenenergies_h0", [])):
            ax.axvline(e, color="C3", lw=0.6, ls="--", label="eigenvalues of H(0)" if k == 0 else None)
        lo = min(res.get("eigenenergies_h0", [E.min()]))
        ax.set_xlim(lo - 0.5, max(res.get("eigenenergies_h0", [0.0])) + 1.0)
        ax.set_xlabel("E (hartree)")
        ax.set_ylabel("|S(E)|^2 (a.u.)")
        ax.set_title(f"{res.get('name')}: spectrum of <psi(0)|psi(t)> ({res['window']} window, "
                     f"resolution {res['resolution']:.3g} Ha)")
        ax.legend(fontsize=8)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return path


def animate(h5path, out, fps=15):
    """|psi(x, t)|^2 and V(x, t) over the snapshots, one frame each: GIF (pillow) or MP4
    (ffmpeg, where installed)."""
    from matplotlib import animation

    from ..config import loads
    from ..model.potential import total
    d = read(h5path)
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
    if out.endswith(".gif"):
        writer = animation.PillowWriter(fps=fps)
    elif out.endswith(".mp4"):
        if not animation.writers.is_available("ffmpeg"):
            plt.close(fig)
            raise ValueError(f"--out = {out!r}: MP4 needs ffmpeg, which is not installed; use a .gif")
        writer = animation.FFMpegWriter(fps=fps)
    else:
        plt.close(fig)
        raise ValueError(f"--out = {out!r}: must end in .gif or .mp4")
    anim.save(out, writer=writer)
    plt.close(fig)
    return out


# ---------------------------------------------------------------- Floquet (tdse floquet)
def plot_floquet(res: dict, path: str):
    ph = np.asarray(res["phases"])
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(ph, np.zeros_like(ph), "|", color="0.6", ms=12, label="all Floquet phases")
    placed = []
    for s in res["states"]:
        ax.plot(s["phase"], s["overlap"], "o", ms=6)
        # stagger labels of nearby points so they do not overlap
        near = sum(1 for p, o in placed if abs(p - s["phase"]) < 0.25 and abs(o - s["overlap"]) < 0.08)
        ax.annotate(f"n={s['n']}", (s["phase"], s["overlap"]), textcoords="offset points",
                    xytext=(4, 4 + 9 * near), fontsize=7)
        placed.append((s["phase"], s["overlap"]))
    ax.set_xlim(0, 2 * math.pi)
    ax.set_ylim(-0.05, 1.08)
    ax.set_xlabel("phase eps T mod 2 pi of the Floquet state (rad)")
    ax.set_ylabel("|<F|n>|^2 with eigenstate n of H(0)")
    ax.set_title(f"{res['name']}: Floquet states, T = {res['period']:.5g} a.u., {res['steps']} steps")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_scan(res: dict, path: str):
    """The quasi-energy map over the scanned key (all states grey, the Floquet states
    of the lowest eigenstates of H(0) in colour, dot area ~ overlap) and the overlaps."""
    pts = res["points"]
    x = np.array([p["value"] for p in pts])
    fig, (ax, bx) = plt.subplots(2, 1, figsize=(8.5, 7), sharex=True,
                                 gridspec_kw={"height_ratios": [2.2, 1]})
    for p in pts:
        q = np.asarray(p["quasi_energies"])
        ax.plot(np.full(q.size, p["value"]), q, ".", color="0.75", ms=2, zorder=1)
    w = np.array([p["omega"] for p in pts])
    ax.plot(x, 0.5 * w, "--", color="0.4", lw=0.8)
    ax.plot(x, -0.5 * w, "--", color="0.4", lw=0.8, label="zone edges +-omega/2")
    K = len(pts[0]["states"]) if pts else 0
    colors = plt.cm.viridis(np.linspace(0, 0.9, max(K, 1)))
    marks = "os^vDP*X"
    for k in range(K):  # hollow odd n: a near-degenerate pair (n, n+1) stays visible
        e = np.array([p["states"][k]["quasi_energy"] for p in pts])
        o = np.array([p["states"][k]["overlap"] for p in pts])
        m, face = marks[k % len(marks)], (colors[k] if k % 2 == 0 else "none")
        ax.scatter(x, e, s=50 * o + 6, marker=m, facecolors=face, edgecolors=colors[k],
                   linewidths=1.2, zorder=3 + (k % 2), label=f"n = {k}")
        bx.plot(x, o, "-", marker=m, ms=4, mfc=face, color=colors[k], label=f"n = {k}")
        tied = np.array([bool(p["states"][k].get("shared_with")) for p in pts])
        if tied.any():  # an avoided crossing: two states of H(0) on one Floquet state
            ax.scatter(x[tied], e[tied], s=160, marker="o", facecolors="none", edgecolors="red",
                       linewidths=1.0, zorder=6,
                       label="shared Floquet state (avoided crossing)" if k == 0 or not
                       any(bool(p["states"][j].get("shared_with")) for j in range(k) for p in pts)
                       else None)
    unit = f" ({res['key_unit']})" if res.get("key_unit") else ""
    ax.set_ylabel("quasi-energy eps (hartree), folded into [-omega/2, omega/2)")
    ax.set_title(f"{res['name']}: Floquet quasi-energies over {res['key']} (N = {res['n']})")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    bx.set_ylabel("max_F |<F|n>|^2")
    bx.set_ylim(-0.05, 1.05)
    bx.set_xlabel(f"{res['key']}{unit}, atomic units")
    bx.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
