"""The map of a scan's file (``tdse scan``: OUT/<name>_scan.png, matplotlib, Agg; atomic
units but for the keys' own), and :func:`plot_any`, the pictures of any tdse file (what
``tdse plot`` draws)."""
from __future__ import annotations

import os

import numpy as np

from .plots import plt, plot_run

__all__ = ["plot_any", "plot_scan_map"]


def plot_any(h5path, out_dir=None, force=True, log=True) -> list[str]:
    """The pictures of any tdse file: a scan's map (``tdse scan``'s file, a ``[nuclei]``
    scan's too: OUT/<name>_scan.png beside it or in ``out_dir``), else a run's
    (:func:`plot_run`).  Without ``force``, a FileExistsError where a picture exists."""
    import h5py
    from ..run.nuclei import SCAN_FORMAT
    from ..run.scanfile import FORMATS
    try:
        with h5py.File(h5path, "r") as f:
            fmt = f.attrs.get("format")
    except OSError:       # (no such file, not HDF5: plot_run says which, one line)
        fmt = None
    else:
        fmt = fmt.decode() if isinstance(fmt, bytes) else fmt
        if fmt in FORMATS or fmt == SCAN_FORMAT:
            out_dir = out_dir or os.path.dirname(os.path.abspath(h5path))
            p = os.path.join(out_dir, os.path.splitext(os.path.basename(h5path))[0] + ".png")
            if not force and os.path.exists(p):
                raise FileExistsError(17, "exists", p)
            os.makedirs(out_dir, exist_ok=True)
            if fmt == SCAN_FORMAT:
                from .nuclei import plot_nuclei_scan
                plot_nuclei_scan(h5path, p)
            else:
                plot_scan_map(h5path, p)
            return [p]
    return plot_run(h5path, out_dir, force=force, log=log)


def _text(v):
    return v.decode() if isinstance(v, bytes) else str(v)


def _scan_without_absorber(fig, axs, d, keys, label, zipped):
    """A scan without an absorber: 1 - norm is the exponentials' rounding (1e-10), so the
    picture shows what the members do -- the population left in H(0)'s ground state at
    t_end, 1 - P_0 (excitation, and ionisation where the box holds it), over the keys."""
    from ..run.scanfile import final
    P0 = final(d, "populations_h0")[..., 0]
    if len(keys) == 1 or zipped:
        v = d[keys[0]]
        axs[0].plot(v, 1.0 - P0, "o-", ms=3)
        axs[0].set(xlabel=label[keys[0]], ylabel="1 - P_0(t_end)",
                   title="left the ground state of H(0) by t_end")
        if "populations_h0" in d["saved_series"]:
            im = axs[1].pcolormesh(d["t"], v, 1.0 - d["populations_h0"][..., 0], shading="auto",
                                   cmap="magma")
            axs[1].set(xlabel="t (a.u. of time)", ylabel=label[keys[0]], title="1 - P_0(t)")
            fig.colorbar(im, ax=axs[1], label="1 - P_0")
        else:
            _not_saved(axs[1], "populations_h0")
    else:
        k1, k2 = keys[:2]
        y = 1.0 - P0
        while y.ndim > 2:
            y = y[..., 0]
        im = axs[0].pcolormesh(d[k2], d[k1], y, shading="auto", cmap="magma")
        axs[0].set(xlabel=label[k2], ylabel=label[k1], title="1 - P_0 at t_end")
        fig.colorbar(im, ax=axs[0], label="1 - P_0")
        axs[1].axis("off")


def _not_saved(ax, name):
    ax.text(0.5, 0.5, f"{name} over time not saved\n(tdse scan --save series:{name})",
            ha="center", va="center", transform=ax.transAxes)
    ax.axis("off")


def plot_scan_map(h5path, path):
    """A scan's picture: one scanned key -- the harmonic spectrum against the key and the
    harmonic order (with a [field]; else the yield over the key and time), and the final
    yield (1 - norm and as flux) against the key; two keys -- the final yield over both."""
    import json
    from ..run.scanfile import final, read as read_scan
    from ..config import key_unit, loads
    d = read_scan(h5path)
    keys = json.loads(d["attrs"]["keys"])
    zipped = bool(d["attrs"]["zipped"])
    base = loads(_text(d["attrs"]["input_toml"]))
    # each key in its own unit (W/cm^2, nm, ...: as the scan's values were given)
    label = {k: f"{k} ({key_unit(k) or 'no unit'})" for k in keys}
    fig, axs = plt.subplots(1, 2, figsize=(12, 4.4))
    if base.absorber is None:      # no absorber: 1 - norm is rounding, not a yield
        _scan_without_absorber(fig, axs, d, keys, label, zipped)
    elif len(keys) == 1 or zipped:
        key = keys[0]
        v = d[key]
        if "hhg_power" in d:
            order, P = d["hhg_order"], d["hhg_power"]
            keep = (order > 0) & (order <= 61)
            logp = np.log10(np.clip(P[:, keep], P.max() * 1e-14, None))
            im = axs[0].pcolormesh(order[keep], v, logp, shading="auto", cmap="viridis")
            axs[0].set(xlabel="harmonic order omega / omega_0", ylabel=label[key],
                       title="harmonic spectrum |a(omega)|^2 of each member")
            fig.colorbar(im, ax=axs[0], label="log10 power (a.u.)")
        elif "yield" in d["saved_series"]:
            im = axs[0].pcolormesh(d["t"], v, d["yield"], shading="auto", cmap="magma")
            axs[0].set(xlabel="t (a.u. of time)", ylabel=label[key],
                       title="1 - norm over time")
            fig.colorbar(im, ax=axs[0], label="1 - norm")
        else:
            _not_saved(axs[0], "yield")
        axs[1].plot(v, final(d, "yield"), "o-", ms=3, label="1 - norm at t_end")
        axs[1].plot(v, final(d, "yield_flux"), "s--", ms=3, label="flux into the layers at t_end")
        axs[1].set(xlabel=label[key], ylabel="yield", title="yield against the key")
        axs[1].legend(fontsize=8)
    else:
        k1, k2 = keys[:2]
        y = final(d, "yield_flux")
        while y.ndim > 2:
            y = y[..., 0]
        im = axs[0].pcolormesh(d[k2], d[k1], y, shading="auto", cmap="magma")
        axs[0].set(xlabel=label[k2], ylabel=label[k1],
                   title="yield (flux into the layers) at t_end")
        fig.colorbar(im, ax=axs[0], label="yield")
        norm = final(d, "norm")
        axs[1].plot(d[k2], norm[0] if norm.ndim >= 2 else norm, "o-")
        axs[1].set(xlabel=label[k2], ylabel="norm at t_end", title=f"{k1} = {d[k1][0]:g}")
    fig.suptitle(f"{os.path.basename(h5path)}: atomic units but for the keys' own", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
