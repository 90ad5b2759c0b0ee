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
  /resume/U                       (N, N)     operator mode: U(t) at the last snapshot

Snapshots are appended and flushed as the run goes: a crash loses at most the last
interval.  ``complete`` turns true only when the run finishes; until then the file is
``<name>.h5.part`` (renamed on completion), which ``tdse resume`` continues.  The
attributes ``lib_*`` record the library versions (same versions + same input => the
same bits on the CPU).
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
    """Create (or reopen, to resume) a run file and append snapshots, flushing after each.

    A run writes ``<name>.h5.part`` and renames it to ``<name>.h5`` when it completes
    (:func:`part_path`); an interrupted run leaves the ``.part`` file, valid and
    resumable.  The attribute ``snapshots_complete`` is written before each flush, so a
    reader knows how many rows are whole even if the process died between two flushes."""

    def __init__(self, path, *, config, x, v0, energies, phi, attrs, force=False, extra=None,
                 reopen=False):
        from . import __version__
        path = os.fspath(path)
        self.path = path
        if reopen:
            self.f = h5py.File(path, "r+")
            self.count = int(self.f.attrs.get("snapshots_complete", 0))
            self.ds = {}
            for name, (group, _, _) in {**_SERIES, **(extra or {})}.items():
                ds = self.f[f"{group}/{name}"]
                ds.resize(self.count, axis=0)  # drop rows past the last whole snapshot
                self.ds[name] = ds
            self.f.attrs["complete"] = False
            for k, v in attrs.items():
                self.f.attrs[k] = _jsonable(v)
            self.f.flush()
            return
        if os.path.exists(path) and not force:
            raise OutputExists(path)
        self.f = h5py.File(path, "w")
        f = self.f
        base = {"format": FORMAT, "version": __version__, "units": UNITS,
                "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
                "input_toml": config.source, "name": config.name, "complete": False,
                "snapshots_complete": 0, **library_versions()}
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

    def append(self, state=None, **row):
        """One snapshot; ``state``: arrays that resuming needs beyond the row (operator
        mode: U(t)), overwritten in place (``/resume/<key>``)."""
        i = self.count
        for name, ds in self.ds.items():
            ds.resize(i + 1, axis=0)
            ds[i] = row[name]
        for key, arr in (state or {}).items():
            name = f"resume/{key}"
            if name not in self.f:
                self.f.create_dataset(name, data=arr)
            else:
                self.f[name][...] = arr
        self.count += 1
        self.f.attrs["snapshots_complete"] = self.count
        self.f.flush()

    def set_attrs(self, **attrs):
        for k, v in attrs.items():
            self.f.attrs[k] = _jsonable(v)

    def close(self, complete: bool):
        if self.f:
            self.f.attrs["complete"] = bool(complete)
            self.f.close()
            self.f = None


def part_path(final: str) -> str:
    return final + ".part"


def final_path(path: str) -> str:
    return path[:-5] if path.endswith(".part") else path


def library_versions() -> dict:
    """Versions of everything that can change the numbers (determinism record)."""
    import platform

    import h5py as _h5
    import scipy

    import mgemm
    out = {"lib_python": platform.python_version(), "lib_numpy": np.__version__,
           "lib_scipy": scipy.__version__, "lib_h5py": _h5.__version__,
           "lib_hdf5": _h5.version.hdf5_version, "lib_mgemm": mgemm.__version__}
    from mgemm.arrays import cupy_or_none
    cp = cupy_or_none()
    if cp is not None:
        out["lib_cupy"] = cp.__version__
    return out


class NotOurFile(ValueError):
    pass


def open_checked(path, mode="r"):
    """Open a run file, or raise :class:`NotOurFile` with one clear line."""
    try:
        f = h5py.File(path, mode)
    except FileNotFoundError:
        raise NotOurFile(f"{path}: no such file") from None
    except OSError as e:
        raise NotOurFile(f"{path}: not a readable HDF5 file (truncated or damaged?): "
                         f"{str(e).splitlines()[0][:120]}") from None
    fmt = f.attrs.get("format")
    if isinstance(fmt, bytes):
        fmt = fmt.decode(errors="replace")
    if fmt != FORMAT:
        f.close()
        other = isinstance(fmt, str) and fmt.startswith("tdse-h2plus/")
        raise NotOurFile(f"{path}: " + (f"written by another version of tdse (format {fmt!r}, "
                                        f"this version reads {FORMAT!r})" if other else
                                        f"not a tdse run file (format attribute {fmt!r}, "
                                        f"expected {FORMAT!r})"))
    return f


def resume_state(path) -> dict:
    """What resuming needs from a run file: the input text, the number of whole
    snapshots, the last step, psi and (operator mode) U(t); NotOurFile if unusable."""
    with open_checked(path) as f:
        if bool(f.attrs.get("complete", False)):
            raise NotOurFile(f"{path}: the run is already complete; nothing to resume")
        try:
            count = int(f.attrs.get("snapshots_complete", f["snapshots/step"].shape[0]))
            count = min([count] + [f[f"{g}/{k}"].shape[0] for g, (k) in
                                   (("snapshots", "step"), ("snapshots", "psi"),
                                    ("observables", "norm"))])
            if count < 1:
                raise NotOurFile(f"{path}: holds no whole snapshot to resume from")
            text = f.attrs["input_toml"]
            state = {"input_toml": text.decode() if isinstance(text, bytes) else str(text),
                     "count": count, "step": int(f["snapshots/step"][count - 1]),
                     "psi": f["snapshots/psi"][count - 1],
                     "U": f["resume/U"][...] if "resume/U" in f else None}
        except KeyError as e:
            raise NotOurFile(f"{path}: damaged run file (missing {e})") from None
    return state


def read(path) -> dict:
    """Read a whole run file into a dict of NumPy arrays + ``attrs`` (for plots/tests)."""
    f = open_checked(path)
    with f:
        out = {"attrs": {k: (v.decode() if isinstance(v, bytes) else v) for k, v in f.attrs.items()}}
        for group in ("grid", "potential", "states", "snapshots", "observables"):
            if group not in f:
                raise NotOurFile(f"{path}: missing group /{group}")
            for k, ds in f[group].items():
                out[f"{group}/{k}"] = ds[()]
        if "operator" in f:
            for k, ds in f["operator"].items():
                out[f"operator/{k}"] = ds[()]
    n = out["attrs"].get("snapshots_complete")
    if n is not None:  # a killed run may hold a partly written last row
        for k in out:
            if k.split("/")[0] in ("snapshots", "observables", "operator"):
                out[k] = out[k][:int(n)]
    return out
