"""The run file's layout: its datasets, their units, descriptions and chunking (format
``tdse-h2plus/2``; :mod:`tdse.run.snapshots` writes it, :mod:`tdse.run.runfile` reads it).

All quantities in atomic units (hbar = m_e = e = 1); every dataset carries ``units`` and
``description`` attributes, and the coordinates are HDF5 dimension scales attached to
the datasets they index (so h5netcdf/xarray show named coordinates):

  attrs: format, version, created, input_toml (as given), effective_toml (every key with
         its value: what a resumed run continues), the effective numerics (scheme, method,
         stencil, ...), backend, devices, precheck values (theta, truncation_bound, ...),
         the time-error estimate (time_error_*), units, complete, lib_* versions;
         continued_from (``tdse run --continue``), resumed_at_step, resumed_with (JSON: each
         resume that changed the adaptive steps' control, tdse.run.extend.resumed)
  /x, /state, /centre              (N,), (K,), (C,)  the shared coordinates (dimension scales)
  /potential/V0                    (N,)        V(x, 0)
  /states/n                        (K,)        scale "state" (index)
  /states/energies, /states/phi    (K,), (K, N)  lowest eigenpairs of H(0)
  /snapshots/t                     (T,)        scale "t" of the snapshots
  /snapshots/step, nodes           (T,)        nodes: sign changes of Re psi (output.node_eps)
  /snapshots/psi                   (T, N)      complex128
  /snapshots/centres               (T, C)      X_c(t)
  /observables/t                   (S,)        scale "t" of the observables: every
                                               output.observables_every steps
  /observables/step                (S,)        step index
  /observables/<name>              (S,), (S, K)  each of tdse.model.observables.OBSERVABLES
                                               (its unit, description, dims and dtype)
  /operator/P                      (T, K, K)   with [propagator] operator = true:
                                   P_mn(t) = |<m|U(t)|n>|^2, m, n the lowest K states of H(0)
  /resume/U_0, U_1                 (N, N)      operator mode: U(t) at the last snapshot (the
                                               slot of its count's parity; resume_name)
  /resume/companion_0, _1          (N,)        the time-error companion's psi, likewise
"""
from __future__ import annotations

import numpy as np

from ..model.observables import OBSERVABLES

UNITS = "atomic units (hbar = m_e = e = 1): lengths in bohr, times in hbar/E_h, energies in hartree"

#: name: (group, dtype, row shape key, units, description, dims of a row)
SNAPSHOT_DATASETS = {
    "t": ("snapshots", np.float64, None, "hbar/E_h", "time of the snapshot", ()),
    "step": ("snapshots", np.int64, None, "1", "step index of the snapshot", ()),
    "psi": ("snapshots", np.complex128, "n", "bohr^-1/2", "wavefunction psi(x, t)", ("x",)),
    "centres": ("snapshots", np.float64, "c", "bohr", "positions X_c(t) of the centres", ("centre",)),
    "time_error": ("snapshots", np.float64, None, "1", "estimated bound on psi's time-discretisation "
                   "error here (L2, up to a global phase): 2 x the carried local errors (time_error = "
                   "\"estimate\") or x the distance to a run at dt/2 (\"companion\"); else NaN", ()),
    "time_error_populations": ("snapshots", np.float64, None, "1", "estimated time-discretisation "
                               "error of the populations P_n in H(0)'s eigenstates: 2 max_n |dP_n|, dP_n "
                               "their change by the carried error (\"estimate\") or P_n - P_n at dt/2", ()),
    "steps_taken": ("snapshots", np.int64, None, "1", "time steps taken up to here (time.tolerance: adaptive)", ()),
    "step_min": ("snapshots", np.float64, None, "hbar/E_h", "smallest time step since the last one", ()),
    "nodes": ("snapshots", np.int64, None, "1",
              "sign changes of Re(psi e^(-i arg psi(x_max))) where |psi| > node_eps max|psi| "
              "(not converged for a driven complex psi; see n_mean)", ()),
}
#: what a snapshot dataset's rows hold in the file until written (its HDF5 fill value): no
#: written row holds it (steps and node counts >= 0, times and centres finite, errors >= 0
#: or NaN; psi's stays 0, a row of zeros), so that a row counted but whose chunk the disk
#: never got -- a close a full disk refused, the chunks of some datasets written and not
#: others -- is known (:func:`tdse.run.runfile.resumable_count`); h5netcdf and xarray
#: read the file as before (no _FillValue)
UNWRITTEN = {"t": np.nan, "step": -1, "centres": np.nan, "time_error": -1.0,
             "time_error_populations": -1.0, "steps_taken": -1, "step_min": -1.0, "nodes": -1}
OBSERVABLE_DATASETS = {
    "t": ("observables", np.float64, None, "hbar/E_h", "time of the observation", ()),
    "step": ("observables", np.int64, None, "1", "step index", ()),
    **{o.name: ("observables", o.dtype, "k" if o.dims else None, o.unit, o.description, o.dims)
       for o in OBSERVABLES},
}


def chunk_rows(key, dims):
    """Rows per chunk of a table's dataset (the writer's chunking)."""
    return 64 if key is None else max(1, min(256, 2**20 // (16 * max(1, dims[key]))))


def table_dataset(f, name, spec, dims, rows=0):
    """One growing dataset of :data:`SNAPSHOT_DATASETS` / :data:`OBSERVABLE_DATASETS`
    (``spec`` its entry; ``dims`` the sizes n, c, k), labelled, ``rows`` long (NaN, 0 for an
    integer, in those rows; a new snapshot dataset's rows :data:`UNWRITTEN` until written);
    its scales attached by the caller.  A row width of 0 (no
    centres: an expression potential) is chunked by 1."""
    group, dtype, key, units, desc, _ = spec
    shape = () if key is None else (dims[key],)
    fill = ({"fillvalue": np.nan if np.dtype(dtype).kind in "fc" else 0} if rows else
            {"fillvalue": UNWRITTEN[name]} if group == "snapshots" and name in UNWRITTEN else {})
    ds = f.create_dataset(f"{group}/{name}", shape=(rows, *shape), dtype=dtype,
                          maxshape=(None, *(s or None for s in shape)),
                          chunks=(chunk_rows(key, dims), *(max(1, s) for s in shape)), **fill)
    label(ds, units, desc)
    return ds


def added_observable(f, name):
    """An observable a file of an earlier version lacks (a later tdse measures more): made
    as the writer makes its tables (:func:`table_dataset`), NaN in the rows the file holds,
    so the run resumed there writes every observable."""
    spec = OBSERVABLE_DATASETS[name]
    ds = table_dataset(f, name, spec, {"k": f["state"].shape[0]}, f["observables/t"].shape[0])
    ds.dims[0].attach_scale(f["observables/t"])
    for i, d in enumerate(spec[5]):             # the row's own dims (the state index)
        ds.dims[i + 1].attach_scale(f[d])
    return ds


def file_bytes(n, c, k, snapshots, observations, extra=None, resume_bytes=0) -> int:
    """Bytes the run file takes with ``snapshots`` and ``observations`` rows: every dataset
    rounded up to whole chunks (HDF5 allocates chunk by chunk), the fixed datasets, what
    resuming keeps, and ~128 KiB of metadata and attributes."""
    dims = {"n": n, "c": c, "k": k}
    total = 131072 + 8 * n + 8 * k * (n + 1) + 8 * n + resume_bytes
    for table, rows in ((SNAPSHOT_DATASETS, snapshots), (OBSERVABLE_DATASETS, observations)):
        for group, dtype, key, *_ in table.values():
            width = np.dtype(dtype).itemsize * (1 if key is None else dims[key])
            per = chunk_rows(key, dims)
            total += -(-rows // per) * per * width
    for group, dtype, shape, *_ in (extra or {}).values():
        total += snapshots * np.dtype(dtype).itemsize * int(np.prod(shape))
    return int(total)


def label(ds, units, description):
    ds.attrs["units"] = units
    ds.attrs["description"] = description
