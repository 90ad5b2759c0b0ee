"""Reading a run file (the layout: :mod:`tdse.run.snapshots`): opened with one clear line
when it is not one (:class:`NotOurFile`), its readable attributes (a file written as the disk
filled may hold unreadable ones), the whole snapshots it holds, what resuming needs, and the
whole file as arrays (plots, tests); a file's working and final names, and its publishing
under the final one."""
from __future__ import annotations

import os

import h5py
import numpy as np

#: the run file's layout version; a file of another is refused with one line
FORMAT = "tdse-h2plus/2"
#: a [nuclei] run's file (tdse.run.nuclei): read by :func:`read` (spectra), not resumable
NUCLEI_FORMAT = "tdse-h2plus-nuclei/1"


class NotOurFile(ValueError):
    pass


def open_checked(path, mode="r", nuclei=False):
    """Open a run file, or raise :class:`NotOurFile` with one clear line (a ``[nuclei]``
    run's file only where ``nuclei``)."""
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
    if fmt == NUCLEI_FORMAT and nuclei:
        return f
    if fmt == NUCLEI_FORMAT:
        f.close()
        raise NotOurFile(f"{path}: a [nuclei] run's file (the 1D + 1D model): `tdse spectrum --kind hhg` "
                         "reads it; it does not resume (run its input again)")
    if fmt != FORMAT:
        f.close()
        other = isinstance(fmt, str) and fmt.startswith("tdse-h2plus/")
        raise NotOurFile(f"{path}: " + (f"written by another version of tdse (format {fmt!r}, "
                                        f"this version reads {FORMAT!r})" if other else
                                        f"not a tdse run file (format attribute {fmt!r}, "
                                        f"expected {FORMAT!r})"))
    return f


def resumable_count(f) -> int:
    """The whole snapshots of open run file ``f`` that a resumed run keeps (it continues
    from the last): ``snapshots_complete``, no more than each snapshot dataset holds, less
    the last ones past the reach of the file's whole observation rows -- a GPU run's rows
    reach the file one write behind its snapshots, so a file cut by a hard crash may lack
    rows before its last snapshot, which a run resumed there would never measure
    (``benchmarks/archive/resume_gap.py``) -- except where resume arrays (operator mode's
    U(t), the companion's psi) tie it to the last whole snapshot."""
    attrs = readable_attrs(f)
    count = int(attrs.get("snapshots_complete", f["snapshots/step"].shape[0]))
    count = min([count] + [f[k].shape[0] for k in ("snapshots/step", "snapshots/psi", "snapshots/t")])
    # less the last rows the device never got though counted (a close the full disk refused:
    # HDF5's fill value, step 0 and psi 0, in a chunk it did not write -- a resume from "step
    # 0" appended the whole run again, 1 of ~16 runs of the full-disk test)
    count = _increasing(f["snapshots/step"], count)
    while count > 1 and not np.any(f["snapshots/psi"][count - 1]):
        count -= 1
    count = _written(f, count)
    whole = observed_count(f, attrs)
    if count <= 1 or whole < 1 or "resume" in f:
        return count
    every = max(1, int(attrs.get("observables_every", 1)))
    reach = int(f["observables/step"][whole - 1]) + every     # the next row due past them
    steps = f["snapshots/step"][:count]
    while count > 1 and int(steps[count - 1]) >= reach:
        count -= 1
    return count


def _written(f, count) -> int:
    """``count`` rows, less those from the first where a snapshot dataset still holds its
    unwritten value (:data:`tdse.run.layout.UNWRITTEN`, where the file's dataset has it as
    its fill value; an earlier file's have 0): a close the full disk refused can leave some
    datasets' chunks written and not others -- step and psi there, the node counts not
    (the full-disk test's resumed file differed from the uninterrupted one in
    snapshots/nodes once, CI at 6b8865e; not reproduced in ~20 runs here and the file not
    captured, so that this was its cause is a reading)."""
    from .layout import UNWRITTEN
    for name, fill in UNWRITTEN.items():
        ds = f.get(f"snapshots/{name}")
        if ds is None or count <= 1 or 0 in ds.shape[1:]:      # (no centres: no row to read)
            continue
        nan = isinstance(fill, float) and np.isnan(fill)
        fv = ds.fillvalue
        if not (np.isnan(fv) if nan else fv == fill):
            continue                                          # (an earlier file)
        rows = ds[:count]
        bad = np.isnan(rows) if nan else rows == fill
        bad = bad.reshape(count, -1).all(axis=1)
        if bad.any():
            count = max(1, int(np.argmax(bad)))
    return count


def observed_count(f, attrs=None) -> int:
    """The whole observation rows of open run file ``f``: ``observables_complete``, less
    the rows from the first whose step does not increase -- counted but never written (a
    close the full disk refused: HDF5's fill value 0, which a resumed writer's search for
    its last snapshot's step had read as sorted rows; tests/test_storage.py's constructed
    file kept 5 rows twice so, as CI at 5000bcb's file did)."""
    attrs = readable_attrs(f) if attrs is None else attrs
    return _increasing(f["observables/step"], int(attrs.get("observables_complete", 0)))


def _increasing(steps, n) -> int:
    """``n`` rows of dataset ``steps`` (at most its length), less those from the first whose
    step does not increase: the rows a run wrote, whose steps always do."""
    n = min(n, steps.shape[0])
    bad = np.flatnonzero(np.diff(steps[:n]) <= 0) if n > 1 else ()
    return int(bad[0]) + 1 if len(bad) else n


def readable_attrs(f) -> dict:
    """The attributes of open file ``f`` that can be read, decoded (one that was being
    written when the disk filled can point past the file's end: left out, not an error --
    what resuming needs is in the datasets and the attributes written with them)."""
    out = {}
    for k in list(f.attrs.keys()):
        try:
            v = f.attrs[k]
        except (OSError, RuntimeError):
            continue
        out[k] = v.decode() if isinstance(v, bytes) else v
    return out


def resume_state(path) -> dict:
    """What resuming needs from a run file: the effective input (``input_toml`` here: the
    file's effective_toml, so a run started with a changed config continues it), the number of whole
    snapshots, the last step, psi and (operator mode) U(t), the companion's psi and its
    rows (t, time_error, time_error_populations) up to there; NotOurFile if unusable.
    Attributes that cannot be read (written as the disk filled) are left out."""
    with open_checked(path) as f:
        attrs = readable_attrs(f)
        if bool(attrs.get("complete", False)):
            raise NotOurFile(f"{path}: the run is already complete; nothing to resume")
        try:
            count = resumable_count(f)
            if count < 1:
                raise NotOurFile(f"{path}: holds no whole snapshot to resume from")
            text = attrs["effective_toml"] if "effective_toml" in attrs else attrs["input_toml"]
            rows = ("snapshots/t", "snapshots/time_error", "snapshots/time_error_populations")
            state = {"input_toml": str(text),
                     "count": count, "step": int(f["snapshots/step"][count - 1]),
                     "psi": f["snapshots/psi"][count - 1],
                     "U": _resume_array(f, "U", count),
                     "companion": _resume_array(f, "companion", count),
                     "error_vector": _resume_array(f, "error_vector", count),
                     "step_counts": _resume_array(f, "step_counts", count),
                     "tsurff": _resume_array(f, "tsurff", count),
                     "tsurff_phase": _resume_array(f, "tsurff_phase", count),
                     "companion_rows": (np.stack([f[k][:count] for k in rows], axis=1)
                                        if all(k in f for k in rows) else None),
                     "attrs": attrs}
        except KeyError as e:
            raise NotOurFile(f"{path}: damaged run file (missing {e})") from None
    return state


def resume_name(key, count) -> str:
    """Where the arrays that resuming needs after ``count`` whole snapshots live: two slots
    by parity, so a snapshot that fails half-written never touches the last whole one's."""
    return f"resume/{key}_{count % 2}"


def _resume_array(f, key, count):
    for name in (resume_name(key, count), f"resume/{key}"):  # (a file of an earlier version)
        if name in f:
            return f[name][...]
    return None


def read(path) -> dict:
    """Read a whole run file into a dict of NumPy arrays + ``attrs`` (for plots/tests)."""
    f = open_checked(path, nuclei=True)
    with f:
        out = {"attrs": readable_attrs(f)}
        if out["attrs"].get("format") == NUCLEI_FORMAT:     # its groups as they are
            f.visititems(lambda k, ds: out.__setitem__(k, ds[()]) if isinstance(ds, h5py.Dataset) else None)
            return out
        for key, name in (("grid/x", "x"), ("states/n", "state"), ("potential/centre", "centre")):
            if name not in f:
                raise NotOurFile(f"{path}: missing /{name}")
            out[key] = f[name][()]
        for group in ("potential", "states", "snapshots", "observables"):
            if group not in f:
                raise NotOurFile(f"{path}: missing group /{group}")
            for k, ds in f[group].items():
                out[f"{group}/{k}"] = ds[()]
        if "operator" in f:
            for k, ds in f["operator"].items():
                out[f"operator/{k}"] = ds[()]
    n = out["attrs"].get("snapshots_complete")
    m = out["attrs"].get("observables_complete")
    for k in out:  # a killed run may hold partly written last rows
        group = k.split("/")[0]
        if group in ("snapshots", "operator") and n is not None:
            out[k] = out[k][:int(n)]
        elif group == "observables" and m is not None:
            out[k] = out[k][:int(m)]
    return out


def part_path(final: str) -> str:
    return final + ".part"


def final_path(path: str) -> str:
    return path[:-5] if path.endswith(".part") else path


def publish(work: str, path: str):
    """A finished file ``work`` renamed to its final name ``path``, an earlier file there
    (``--force``) removed just before: a rename over an existing file makes ext4 write the
    new file's data out before the rename returns (its ``auto_da_alloc`` heuristic), ~0.1 s
    for a 205 MB run file on an H100 machine's disk and growing with the file
    (``cli_phases_h100x2_20261126T2248.txt``), where a rename to a free name is a metadata
    update.  Between the two calls the new file, whole, still has its ``.part`` name."""
    if work == path:
        return
    if os.path.lexists(path):
        os.remove(path)
    os.replace(work, path)
