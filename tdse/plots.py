"""Pictures of a run, drawn from its HDF5 file (matplotlib, Agg; atomic units).

Files written next to each other, ``<name>_<what>.png``:
  spacetime   |psi(x, t)|^2 map with node positions as dots (as in the thesis' Fig. 6)
  nodes       node count against t
  populations populations of the lowest eigenstates of H(0) and of H(t) against t
  drift       norm and energy drift against t
  snapshots   Re psi, Im psi, |psi| over the potential at a few times
  transitions (operator mode) P_mn(t_end) heatmap and P_m0(t) against t
"""
from __future__ import annotations

import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from .observables import node_positions  # noqa: E402
from .snapshots import read  # noqa: E402


def plot_run(h5path, out_dir=None, node_eps=None) -> list[str]:
    d = read(h5path)
    name = d["attrs"].get("name", os.path.splitext(os.path.basename(h5path))[0])
    out_dir = out_dir or os.path.dirname(os.path.abspath(h5path))
    os.makedirs(out_dir, exist_ok=True)
    x, t, psi = d["grid/x"], d["snapshots/t"], d["snapshots/psi"]
    if t.size == 0:
        raise ValueError(f"{h5path}: holds no snapshots to plot")
    eps = node_eps if node_eps is not None else _eps_from(d)
    files = []

    def save(fig, what):
        p = os.path.join(out_dir, f"{name}_{what}.png")
        fig.savefig(p, dpi=110, bbox_inches="tight")
        plt.close(fig)
        files.append(p)

    # |psi|^2 space-time map with nodes
    fig, ax = plt.subplots(figsize=(8, 5))
    dens = np.abs(psi) ** 2
    tt = t if t.size > 1 else np.array([t[0], t[0] + 1e-9])
    im = ax.pcolormesh(x, tt, dens if t.size > 1 else np.vstack([dens, dens]),
                       shading="auto", cmap="magma")
    for ti, p in zip(t, psi):
        xs = node_positions(x, p, eps)
        ax.plot(xs, np.full(xs.size, ti), ".", color="cyan", ms=2)
    for c in range(d["snapshots/centres"].shape[1]):
        ax.plot(d["snapshots/centres"][:, c], t, "w--", lw=0.6)
    xmask = dens.max(axis=0) > 1e-4 * dens.max()
    if xmask.any():
        ax.set_xlim(x[xmask].min(), x[xmask].max())
    ax.set(xlabel="x (bohr)", ylabel="t (a.u.)", title=f"{name}: |psi(x,t)|^2, nodes (dots), centres (dashed)")
    fig.colorbar(im, ax=ax, label="|psi|^2")
    save(fig, "spacetime")

    fig, ax = plt.subplots(figsize=(7, 3))
    ax.step(t, d["observables/nodes"], where="mid")
    ax.set(xlabel="t (a.u.)", ylabel="node count", title=f"{name}: nodes of psi (eps = {eps:g})")
    save(fig, "nodes")

    fig, axs = plt.subplots(1, 2, figsize=(11, 3.5), sharey=True)
    for ax, key, title in ((axs[0], "populations_h0", "eigenstates of H(0)"),
                           (axs[1], "populations_ht", "eigenstates of H(t)")):
        P = d[f"observables/{key}"]
        for n in range(P.shape[1]):
            ax.plot(t, P[:, n], label=f"n = {n}")
        ax.set(xlabel="t (a.u.)", title=title, yscale="log", ylim=(1e-12, 2))
    axs[0].set_ylabel("population")
    axs[1].legend(fontsize=8)
    save(fig, "populations")

    fig, axs = plt.subplots(1, 2, figsize=(11, 3.5))
    axs[0].plot(t, d["observables/norm"] - 1.0)
    axs[0].set(xlabel="t (a.u.)", ylabel="norm - 1", title="norm drift")
    E = d["observables/energy"]
    axs[1].plot(t, E)
    axs[1].set(xlabel="t (a.u.)", ylabel="<H(t)> (hartree)", title="energy")
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
        ax.text(x[0], off + 0.5 * amp, f"t = {t[i]:.3g}", fontsize=8)
    if xmask.any():
        ax.set_xlim(x[xmask].min(), x[xmask].max())
    ax.set(xlabel="x (bohr)", ylabel="psi (offset per time)", title=f"{name}: snapshots")
    ax.legend(loc="upper right", fontsize=8)
    save(fig, "snapshots")
    if "operator/P" in d and len(d["operator/P"]):
        P = d["operator/P"]
        K = P.shape[1]
        fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 4.2))
        im = a1.imshow(np.log10(np.clip(P[-1], 1e-12, None)), origin="lower", cmap="viridis",
                       vmin=-12, vmax=0)
        a1.set_xlabel("initial state n")
        a1.set_ylabel("final state m")
        a1.set_title(f"log10 P_mn, P_mn = |<m|U(t)|n>|^2 at t = {t[-1]:.4g}", fontsize=9)
        fig.colorbar(im, ax=a1)
        for m in range(min(K, 8)):
            a2.plot(t, P[:, m, 0], label=f"m = {m}")
        a2.set_yscale("log")
        a2.set_ylim(max(1e-12, float(P[:, :, 0].min()) or 1e-12), 1.5)
        a2.set_xlabel("t (atomic units)")
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
