"""HDF5 output, one file per run: OUT/<name>.h5 (h5py).

Layout (all quantities in atomic units, hbar = m_e = e = 1; the file's ``units``
attribute says so):

  attrs: format, version, created, input_toml, backend, devices, method details
         (plan_*), precheck values (theta, truncation_bound, ...), units, complete
  /grid/x                         (N,)
  /potential/V0                   (N,)   V(x, 0)
  /states/energies, /states/phi   (K,), (K, N)  lowest eigenpairs of H(0)
  /snapshots/t, /snapshots/step   (T,)
  /snapshots/psi                  (T, N) complex128
  /snapshots/centres              (T, n_centres)  X_c(t)
  /observables/norm, energy, nodes            (T,)
  /observables/populations_h0, populations_ht (T, K)
  /observables/energies_ht                    (T, K)
  /operator/P                     (T, K, K)  with [propagator] operator = true:
                                  P_mn(t) = |<m|U(t)|n>|^2, m, n the lowest K states of H(0)

Snapshots are appended and flushed as the run goes: a crash loses at most the last
interval.  ``complete`` turns true only when the run finishes.
"""
from __future__ import annotations

import datetime as _dt
import json
import os

import h5py
import numpy as np

FORMAT = "tdse-h2plus/1"
UNITS = "atomic units (hbar = m_e = e = 1): lengths in bohr, times in hbar/E_h, energies in hartree"

_SERIES = {  # name: (group, dtype, per-row shape key)
    "t": ("snapshots", np.float64, None),
    "step": ("snapshots", np.int64, None),
    "psi": ("snapshots", np.complex128, "n"),
    "centres": ("snapshots", np.float64, "c"),
    "norm": ("observables", np.float64, None),
    "energy": ("observables", np.float64, None),
    "nodes": ("observables", np.int64, None),
    "populations_h0": ("observables", np.float64, "k"),
    "populations_ht": ("observables", np.float64, "k"),
    "energies_ht": ("observables", np.float64, "k"),
}


class OutputExists(FileExistsError):
    pass


def _jsonable(v):
    if isinstance(v, (dict, list, tuple)):
        return json.dumps(v, default=float)
    if v is None:
        return "none"
    return v


class SnapshotWriter:
    """Create OUT/<name>.h5 and append snapshots, flushing after each."""

    def __init__(self, path, *, config, x, v0, energies, phi, attrs, force=False, extra=None):
        from . import __version__
        path = os.fspath(path)
        if os.path.exists(path) and not force:
            raise OutputExists(path)
        self.path = path
        self.f = h5py.File(path, "w")
        f = self.f
        base = {"format": FORMAT, "version": __version__, "units": UNITS,
                "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
                "input_toml": config.source, "name": config.name, "complete": False}
        for k, v in {**base, **attrs}.items():
            f.attrs[k] = _jsonable(v)
        f.create_dataset("grid/x", data=np.asarray(x))
        f.create_dataset("potential/V0", data=np.asarray(v0))
        f.create_dataset("states/energies", data=np.asarray(energies))
        f.create_dataset("states/phi", data=np.asarray(phi))
        dims = {"n": len(x), "c": len(config.potential.centres), "k": len(energies)}
        self.ds = {}
        for name, (group, dtype, key) in _SERIES.items():
            shape = (0,) if key is None else (0, dims[key])
            maxshape = (None,) if key is None else (None, dims[key])
            chunks = (64,) if key is None else (max(1, min(64, 2**20 // (16 * dims[key]))), dims[key])
            self.ds[name] = f.create_dataset(f"{group}/{name}", shape=shape, maxshape=maxshape,
                                             dtype=dtype, chunks=chunks)
        for name, (group, dtype, shape) in (extra or {}).items():  # e.g. operator/P (T, K, K)
            self.ds[name] = f.create_dataset(f"{group}/{name}", shape=(0, *shape),
                                             maxshape=(None, *shape), dtype=dtype,
                                             chunks=(1, *shape))
        f.flush()
        self.count = 0

    def append(self, **row):
        i = self.count
        for name, ds in self.ds.items():
            ds.resize(i + 1, axis=0)
            ds[i] = row[name]
        self.count += 1
        self.f.flush()

    def set_attrs(self, **attrs):
        for k, v in attrs.items():
            self.f.attrs[k] = _jsonable(v)

    def close(self, complete: bool):
        if self.f:
            self.f.attrs["complete"] = bool(complete)
            self.f.close()
            self.f = None


class NotOurFile(ValueError):
    pass


def read(path) -> dict:
    """Read a whole run file into a dict of NumPy arrays + ``attrs`` (for plots/tests)."""
    try:
        f = h5py.File(path, "r")
    except FileNotFoundError:
        raise NotOurFile(f"{path}: no such file") from None
    except OSError as e:
        raise NotOurFile(f"{path}: not a readable HDF5 file ({e})") from None
    with f:
        fmt = f.attrs.get("format")
        if fmt != FORMAT:
            raise NotOurFile(f"{path}: not a tdse run file (format attribute {fmt!r}, "
                             f"expected {FORMAT!r})")
        out = {"attrs": {k: (v.decode() if isinstance(v, bytes) else v) for k, v in f.attrs.items()}}
        for group in ("grid", "potential", "states", "snapshots", "observables"):
            if group not in f:
                raise NotOurFile(f"{path}: missing group /{group}")
            for k, ds in f[group].items():
                out[f"{group}/{k}"] = ds[()]
        if "operator" in f:
            for k, ds in f["operator"].items():
                out[f"operator/{k}"] = ds[()]
    return out
