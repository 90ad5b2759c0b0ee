"""The file of a scan: ``OUT/<name>_scan.h5`` (h5py; format ``tdse-scan/2``), readable by
xarray with named dimensions (``xarray.open_dataset(path, engine="h5netcdf")``).

All quantities in atomic units (hbar = m_e = e = 1); every dataset carries ``units`` and
``description``; the coordinates are HDF5 dimension scales:

  /<key> for each scanned key (e.g. /field.E0)  the key's values (a grid: one dimension per
                                                key; zipped: coordinates along /member)
  /member                                       (zipped scans) the member index
  /t                                            observation times
  /state                                        eigenstate index of the populations
  /x                                            the grid (with the final psi)
  /<observable>                                 (key dims..., t) or (member, t) [, state]
                                                where saved as a series (``tdse scan --save
                                                series[:NAME,...]``), else its value at t_end
                                                (key dims... [, state]): attrs saved_series
  /psi_final                                    (key dims..., x), complex, when kept
  /time_error, /time_error_populations          (key dims..., t), or at t_end, with
                                                time_error = "estimate"
  /hhg_order, /hhg_power                        the harmonic spectrum of each member's
                                                acceleration (with a [field])
attrs: format, version, created, input_toml (the base input), keys, zipped, units, save
(the ``--save`` text), saved_series (JSON list).  ``tdse-scan/1`` (before #59's ``--save``)
kept every series; :func:`read` gives its saved_series as all of them.
"""
from __future__ import annotations

import datetime as _dt
import json

import h5py
import numpy as np

from ..config import key_unit, to_toml
from ..model.observables import OBSERVABLES as _REGISTRY, BlockMeasure
from ..version import __version__
from .snapshots import publish

FORMAT = "tdse-scan/2"
#: the formats :func:`read` reads
FORMATS = ("tdse-scan/1", FORMAT)

#: the quantities a scan's batch records over time: the observables, the stated time errors
#: (what ``tdse scan --save`` keeps as series or at t_end: tdse.studies.scan_save)
SERIES = BlockMeasure.NAMES + ("time_error", "time_error_populations")


def save_text(series) -> str:
    """The ``--save`` text of ``series`` (what a scan file records)."""
    series = tuple(series)
    return "final" if not series else "series" if series == SERIES else "series:" + ",".join(series)


def at_end(values, name, series, keys) -> np.ndarray:
    """``values`` of quantity ``name`` (an array with ``keys`` leading key dimensions) at
    t_end: the last time of a series (``name`` in ``series``), else itself."""
    return np.take(values, -1, axis=keys) if name in series else np.asarray(values)


#: observable: (units, description) of what a block measures (tdse.model.observables.OBSERVABLES)
OBSERVABLES = {o.name: (o.unit, o.description) for o in _REGISTRY if o.block}


def _label(ds, units, description):
    ds.attrs["units"] = units
    ds.attrs["description"] = description


def write(path, res: dict, spectra: dict | None = None) -> str:
    """Write the result of :func:`tdse.studies.scan.scan` (atomically: a temporary file,
    then a rename)."""
    sc = res["scan"]
    tmp = path + ".tmp"
    with h5py.File(tmp, "w") as f:
        f.attrs.update(format=FORMAT, version=__version__, input_toml=to_toml(sc.base),
                       keys=json.dumps([k for k, _ in sc.axes]), zipped=bool(sc.zipped),
                       created=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
                       units="atomic units (hbar = m_e = e = 1)", batches=int(res["batches"]),
                       seconds=float(res["seconds"]))
        series = tuple(res.get("saved_series", SERIES))
        f.attrs.update(save=save_text(series), saved_series=json.dumps(list(series)))

        def over_t(name):              # the time axis where the quantity is a series
            return [t] if name in series else []
        dims = key_scales(f, sc, key_unit)
        t = f.create_dataset("t", data=res["t"])
        _label(t, "hbar/E_h", "observation time")
        t.make_scale("t")
        K = res["populations_h0"].shape[-1]
        st = f.create_dataset("state", data=np.arange(K))
        _label(st, "1", "eigenstate index (n nodes)")
        st.make_scale("state")
        for name, (units, desc) in OBSERVABLES.items():
            extra = [st] if name == "populations_h0" else []
            put(f, name, res[name], dims + over_t(name) + extra, units,
                desc if name in series else f"{desc}, at t_end")
        if "psi" in res:
            x = f.create_dataset("x", data=points_of(sc.base))
            _label(x, "bohr", "grid points")
            x.make_scale("x")
            put(f, "psi_final", res["psi"], dims + [x], "bohr^-1/2", "psi(x, t_end) of each member")
        if "tsurff_P_right" in res:
            k = f.create_dataset("tsurff_k", data=res["tsurff_k"])
            _label(k, "hbar/bohr", "t-SURFF's momenta (k > 0 through +R, k < 0 through -R)")
            k.make_scale("tsurff_k")
            R = sc.base.output.tsurff_radius
            for side, sign in (("right", "+"), ("left", "-")):
                put(f, f"tsurff_P_{side}", res[f"tsurff_P_{side}"], dims + [k], "bohr/hbar",
                     f"|b(k)|^2 of the electrons that crossed x = {sign}{R:g} bohr by t_end "
                     "(t-SURFF, [output] tsurff_radius)")
        if "time_error" in res:         # time_error = "estimate" (tdse.run.timeerror.BatchEstimate)
            _time_errors(f, res, dims, over_t, series)
        if spectra:
            o = f.create_dataset("hhg_order", data=spectra["order"])
            _label(o, "1", "harmonic order omega / omega_0")
            o.make_scale("hhg_order")
            put(f, "hhg_power", spectra["power"], dims + [o], "a.u.",
                 "|FFT of the acceleration|^2 (hann window) of each member")
    publish(tmp, path)         # (an earlier file removed first: snapshots.publish)
    return path


def _time_errors(f, res, dims, over_t, series):
    """The members' stated time errors (over t where saved as series, else at t_end) and
    the batches' steps."""
    put(f, "time_error", res["time_error"], dims + over_t("time_error"), "1",
        "stated time-discretisation error of psi (L2, up to a global phase): 2 x the "
        "norm of the member's local errors carried to t"
        + ("" if "time_error" in series else ", at t_end"))
    put(f, "time_error_populations", res["time_error_populations"],
        dims + over_t("time_error_populations"), "1",
        "estimated time error of the populations_h0 (their first-order change by the "
        "carried error, x 2)" + ("" if "time_error_populations" in series else ", at t_end"))
    f.attrs.update(batch_steps_taken=np.asarray(res["batch_steps_taken"]),
                   batch_rejected=np.asarray(res["batch_rejected"]))


def points_of(cfg):
    from ..model.grid import points
    return points(cfg.grid)


def key_scales(f, sc, key_unit):
    """The dimension scales of the scanned keys: one per key, or /member with the keys as
    coordinates along it (zipped)."""
    if sc.zipped:
        m = f.create_dataset("member", data=np.arange(len(sc.index)))
        _label(m, "1", "member index")
        m.make_scale("member")
        for key, vals in sc.axes:
            ds = f.create_dataset(key, data=np.asarray(vals, dtype=float))
            _label(ds, key_unit(key) or "1", f"input key {key} of each member")
            ds.dims[0].attach_scale(m)
        return [m]
    dims = []
    for key, vals in sc.axes:
        ds = f.create_dataset(key, data=np.asarray(vals, dtype=float))
        _label(ds, key_unit(key) or "1", f"scanned input key {key}")
        ds.make_scale(key)
        dims.append(ds)
    return dims


def put(f, name, data, scales, units, desc):
    """Dataset ``name`` of ``data``, labelled, its leading axes on ``scales``."""
    ds = f.create_dataset(name, data=data)
    _label(ds, units, desc)
    for i, s in enumerate(scales):
        ds.dims[i].attach_scale(s)
    return ds


def read(path) -> dict:
    """The scan file's datasets and attributes (NumPy arrays); ``saved_series``: the
    quantities kept over time (a tdse-scan/1 file: all)."""
    with h5py.File(path) as f:
        if f.attrs.get("format") not in FORMATS:
            raise ValueError(f"{path}: not a tdse scan file (format {f.attrs.get('format')!r})")
        out = {k: f[k][()] for k in f}
        out["attrs"] = dict(f.attrs)
    out["saved_series"] = tuple(json.loads(out["attrs"].get("saved_series", json.dumps(SERIES))))
    return out


def final(d, name):
    """Quantity ``name`` of a scan (a :func:`read` file or a scan's result) at t_end."""
    if "attrs" in d:
        keys = 1 if d["attrs"]["zipped"] else len(json.loads(d["attrs"]["keys"]))
    else:
        keys = len(d["scan"].shape)
    return at_end(d[name], name, d.get("saved_series", SERIES), keys)
