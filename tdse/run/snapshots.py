"""HDF5 output, one file per run: OUT/<name>.h5 (h5py).  Format ``tdse-h2plus/2``.

The file's layout (every dataset, its units and chunking): :mod:`tdse.run.layout`.

Rows are appended as the run goes and written in blocks: a snapshot waits in memory at
most ``output.flush_seconds`` of wall time (the first at once; 0: each at once), then the
ones held go to the file with the observations since, one slice a dataset, and the file
is flushed (sooner where the held snapshots' psi reach :data:`BLOCK_BYTES`) -- a hard
crash (SIGKILL, power) loses at most that much; an interrupt, an error or a full disk
writes what is held first, or closes the file at its last whole one.
``snapshots_complete`` / ``observables_complete`` count the whole
rows; ``complete`` turns true only when the run finishes; until then the file is
``<name>.h5.part`` (renamed on completion), which ``tdse resume`` continues.  Same
library versions (``lib_*``) + same input => the same bits on the CPU.
"""
from __future__ import annotations

import ctypes
import datetime as _dt
import errno
import json
import os
import shutil
import concurrent.futures
import time

import h5py
import numpy as np

from .layout import (OBSERVABLE_DATASETS, SNAPSHOT_DATASETS, UNITS, added_observable,  # noqa: F401
                     file_bytes, label, table_dataset)
from .runfile import (FORMAT, NotOurFile, final_path, observed_count, open_checked,  # noqa: F401
                      part_path, publish, read, readable_attrs, resumable_count, resume_name,
                      resume_state)


class OutputExists(FileExistsError):
    pass


#: the h5py files whose close failed on a full device, and their datasets, never freed
#: (SnapshotWriter._fail): the list holds a reference no one drops, so that not even the
#: interpreter's teardown frees them
_FAILED = []
ctypes.pythonapi.Py_IncRef(ctypes.py_object(_FAILED))

#: a block of snapshots holds at most this many bytes of psi: it is written once it does,
#: before flush_seconds (on a GPU run, in the background while the loop goes on), so what a
#: run holds is bounded (at 2 s of 20 us steps, every = 1, N = 8192: 12.5 GiB before) and
#: its two block arrays are reused.  A run of 1.5 s at N = 8192 (1600 snapshots, 200 MiB) had
#: held them all to its close: close and exit 0.26-0.38 s beyond the one-step run's, 0.10-0.15
#: with this (its loop as much slower: ``save_points_h200x1_20261130T1040.txt``); a choice
BLOCK_BYTES = 32 << 20


class StorageError(OSError):
    """A write of the run file failed or would fail (no space, quota, I/O error): the file
    holds ``count`` whole snapshots, closed valid and resumable once space is free.
    ``unclosed``: the device refused the file's close too (its h5py objects are kept in
    :data:`_FAILED`; HDF5's own exit handlers may still crash the process)."""

    unclosed = False

    def __init__(self, path, count, needed, free, cause):
        self.path, self.count, self.needed, self.free = path, count, needed, free
        self._given = (path, count, needed, free, cause)     # (pickled by these: __reduce__)
        super().__init__(errno.ENOSPC if free is not None and needed > free else errno.EIO,
                         f"cannot write {path}: {cause} (the next snapshot needs about "
                         f"{needed / 2**10:.0f} KiB, {'?' if free is None else f'{free / 2**10:.0f}'}"
                         f" KiB free); it holds {count} whole snapshots and is resumable: free "
                         f"some space, then `tdse resume {path}`")

    def __reduce__(self):            # (a scan's Dask worker writes its parts: as ConfigError)
        return type(self), self._given


def _jsonable(v):
    if isinstance(v, (dict, list, tuple)):
        return json.dumps(v, default=float)
    if v is None:
        return "none"
    return v


class HeldRows:
    """``count`` observation rows held as columns (name -> array, rows on the first axis)."""
    __slots__ = ("count", "cols")

    def __init__(self, count, cols):
        self.count, self.cols = count, cols


def _column(rows, name):
    """Dataset ``name``'s values of the held rows (:class:`HeldRows`), in order, one array."""
    parts = [np.asarray(r.cols[name])[:r.count] for r in rows]
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


def one_row(row, names):
    """A row (name -> value) as a block of one (:class:`HeldRows`)."""
    return HeldRows(1, {name: np.asarray(row[name])[None] for name in names})


#: the node counts of a block's rows made this many rows at a time (a few MB of
#: temporaries at N = 8192).  One process on 2 cores, ms a block: N = 8192, 230 rows, 5.6
#: (a row a call 5.3: the same work, but ~30x fewer calls to take the GIL on a writer's
#: thread); N = 256, 64 rows, 0.08 against 0.41 (``node_rows_cpu2_20261130T2149.txt``)
NODE_ROWS = 32


class NodeCounter:
    """A writer's node counts of the psi rows it writes (:func:`tdse.model.observables.node_counts`
    with ``output.node_eps``): the writer makes them, not the loop -- a GPU run's writer in
    its block's thread, where they took ~0.2 ms of the loop's host time every
    ``output.every`` steps at N = 8192 (5 % of its samples,
    ``spy_loop_h100x1_20261126T2110_3point.txt``) -- :data:`NODE_ROWS` rows at a time."""

    def __init__(self, x, config):
        self.x, self.eps = np.asarray(x), config.output.node_eps

    def __call__(self, rows):
        from ..model import observables
        rows = np.asarray(rows)
        return [int(c) for i in range(0, len(rows), NODE_ROWS)
                for c in observables.node_counts(self.x, rows[i:i + NODE_ROWS], self.eps)]


class SnapshotWriter:
    """Create (or reopen, to resume) a run file; append snapshots (:meth:`append`, held
    up to ``flush_seconds`` and written in blocks, each block flushed: :meth:`write`) and
    observations (:meth:`observe`).  ``before_write``: callables run before each write
    (``final`` True at close), where sinks hand over the rows they hold.

    A run writes ``<name>.h5.part`` and renames it to ``<name>.h5`` when it completes
    (:func:`part_path`); an interrupted run leaves the ``.part`` file, valid and
    resumable.  ``snapshots_complete`` and ``observables_complete`` are written before
    each flush, so a reader knows how many rows are whole even if the process died
    between two flushes."""

    def __init__(self, path, *, config, x, v0, energies, phi, attrs, force=False, extra=None,
                 reopen=False, background=False):
        from ..config import to_toml
        from ..version import __version__
        self.path = path = os.fspath(path)
        self.extra, self.flush_seconds = dict(extra or {}), config.output.flush_seconds
        self._held, self._held_since, self.appended = [], None, 0   # held; appends made
        self.before_write = []
        # background (a GPU run, whose loop's thread keeps the device fed): each block's HDF5
        # calls on the writer's one thread (:meth:`write`), psi's rows copied into one array as
        # they come (:meth:`append`), the attributes set with the next block (:meth:`set_attrs`)
        self.background = background
        self._job = None                 # the future of the block being written (background)
        self._writer = None              # the one thread that writes them, made at the first
        self._psi, self._psi_rows = None, 0     # psi's rows of the held snapshots (background), its rows
        self._writing = self._spare = None     # ... the block's being written; one written (append)
        self._attrs = {}                 # attributes waiting for the next block (background)
        self._nodes = NodeCounter(x, config)     # the node counts: made when written
        if reopen:
            self._reopen(attrs)
            return
        if os.path.exists(path) and not force:
            raise OutputExists(path)
        self.f = h5py.File(path, "w")
        f = self.f
        base = {"format": FORMAT, "version": __version__, "units": UNITS,
                "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
                "input_toml": config.source, "effective_toml": to_toml(config),
                "name": config.name, "complete": False,
                "snapshots_complete": 0, "observables_complete": 0, **library_versions()}
        for k, v in {**base, **attrs}.items():
            f.attrs[k] = _jsonable(v)
        _storage_error_room(f)
        n, c, k = len(x), len(config.potential.centres), len(energies)
        # the shared coordinates live in the root group: a netCDF reader (h5netcdf, xarray)
        # sees a dimension scale from its own group and the groups above it
        xs = f.create_dataset("x", data=np.asarray(x))
        label(xs, "bohr", "grid points x_j = x_min + j dx")
        cs = f.create_dataset("centre", data=np.arange(c))
        label(cs, "1", "centre index")
        ns = f.create_dataset("state", data=np.arange(k))
        label(ns, "1", "eigenstate index (n nodes)")
        scales = {"x": xs, "centre": cs, "state": ns}
        for name, ds in scales.items():
            ds.make_scale(name)
        v = f.create_dataset("potential/V0", data=np.asarray(v0))
        label(v, "hartree", "V(x, 0)")
        v.dims[0].attach_scale(xs)
        e = f.create_dataset("states/energies", data=np.asarray(energies))
        label(e, "hartree", "lowest eigenvalues of H(0)")
        e.dims[0].attach_scale(ns)
        p = f.create_dataset("states/phi", data=np.asarray(phi))
        label(p, "bohr^-1/2", "lowest eigenstates of H(0), sum phi^2 dx = 1")
        p.dims[0].attach_scale(ns)
        p.dims[1].attach_scale(xs)
        self._tables({"n": n, "c": c, "k": k}, {"x": xs, "centre": cs, "state": ns})
        f.flush()
        self.count, self.obs_count = 0, 0
        self._rows = []            # observations not yet written (see :meth:`observe`)
        self._shapes, self._obs_flushed = {}, 0   # dataset geometry; observation rows on disk

    def _tables(self, dims, scales):
        """The growing datasets of snapshots, observables and extras (e.g. operator/P),
        each labelled and attached to its dimension scales."""
        f, ns = self.f, scales["state"]
        self.snap, self.obs = {}, {}
        for table, target in ((SNAPSHOT_DATASETS, self.snap), (OBSERVABLE_DATASETS, self.obs)):
            for name, spec in table.items():
                target[name] = table_dataset(f, name, spec, dims)
            target["t"].make_scale("t")
            for name, (_, _, _, _, _, rowdims) in table.items():
                if name != "t":
                    target[name].dims[0].attach_scale(target["t"])
                for i, d in enumerate(rowdims):
                    target[name].dims[i + 1].attach_scale(scales[d])
        for name, (group, dtype, shape, units, desc) in self.extra.items():  # e.g. operator/P
            ds = f.create_dataset(f"{group}/{name}", shape=(0, *shape), maxshape=(None, *shape),
                                  dtype=dtype, chunks=(1, *shape))
            label(ds, units, desc)
            ds.dims[0].attach_scale(self.snap["t"])
            for i in range(len(shape)):
                ds.dims[i + 1].attach_scale(ns)
            self.snap[name] = ds

    def _reopen(self, attrs):
        self.f = h5py.File(self.path, "r+")
        f = self.f
        self.count = resumable_count(f)           # as resume_state's
        self.snap = {name: f[f"{g}/{name}"] for name, (g, *_) in {**SNAPSHOT_DATASETS, **self.extra}.items()
                     if f"{g}/{name}" in f}  # a file of an earlier version may lack a column
        self.obs = {name: f[f"observables/{name}"] if f"observables/{name}" in f
                    else added_observable(f, name) for name in OBSERVABLE_DATASETS}
        for ds in self.snap.values():
            ds.resize(self.count, axis=0)  # drop rows past the last whole snapshot
        last = int(self.snap["step"][self.count - 1]) if self.count else -1
        whole = observed_count(f)
        steps = self.obs["step"][:whole]
        self.obs_count = int(np.searchsorted(steps, last, side="right"))
        self._rows = []
        for ds in self.obs.values():
            ds.resize(self.obs_count, axis=0)  # observations after that snapshot follow again
        self._shapes, self._obs_flushed = {}, self.obs_count
        f.attrs["complete"] = False
        if "storage_error" in f.attrs:
            f.attrs.modify("storage_error", np.bytes_(b""))     # the resumed run has not failed
        for k, v in attrs.items():
            f.attrs[k] = _jsonable(v)
        f.flush()

    def append(self, state=None, **row):
        """One snapshot; ``state``: arrays that resuming needs beyond the row (operator mode:
        U(t); the time-error companion's psi), kept for the last two held snapshots and
        written in place (``/resume/<key>``).  Held in memory, and with the ones before it
        written (:meth:`write`) when the oldest held has waited ``flush_seconds`` (the
        file's first snapshot at once)."""
        held = self._held
        psi = np.asarray(row["psi"]) if "psi" in row else None
        nbytes = None if psi is None else psi.nbytes
        if self.background and psi is not None:    # its row copied now: no stacking later
            buf = self._psi
            if buf is None and self._spare is not None and self._spare.shape[1:] == psi.shape:
                # a written block's array filled again (its pages touched: a row a copy, where a
                # new array's first touch of its pages made a 128 KiB row 104-500 us on 2 cores)
                buf, self._spare = self._spare, None
                self._psi = buf
            elif buf is None or len(held) >= buf.shape[0] or buf.shape[1:] != psi.shape:
                # a block's rows: as many as the last block held (a copy of them all where
                # one more comes, doubling), the pages touched row by row as they come
                self._psi_rows = min(max(self._psi_rows, 16, 2 * len(held)), self._cap(nbytes))
                grown = np.empty((self._psi_rows, *psi.shape), dtype=np.complex128)
                if buf is not None and buf.shape[1:] == psi.shape:
                    grown[:len(held)] = buf[:len(held)]
                buf = self._psi = grown
            buf[len(held)] = psi
            row = {**row, "psi": None}
        held.append((row, state))
        self.appended += 1
        if len(held) > 2:
            held[-3] = (held[-3][0], None)      # a state is written only for the last two
        now = time.monotonic()
        if self._held_since is None:
            self._held_since = now
        if self.count == 0 or now - self._held_since >= self.flush_seconds \
                or (nbytes is not None and len(held) >= self._cap(nbytes)):
            self.write()

    @staticmethod
    def _cap(nbytes) -> int:
        """The snapshots a block holds at most (:data:`BLOCK_BYTES` of psi of ``nbytes``)."""
        return max(1, BLOCK_BYTES // max(1, nbytes))

    def write(self, final=False):
        """The held snapshots and the observations since the last write to the file, one
        slice a dataset, then a flush (the ``before_write`` callables first).  Checks the
        free space first and raises :class:`StorageError` (the file closed valid at its last
        whole snapshot) when the write cannot be made.  The resume arrays go to the slot of
        the new count's parity; where that is the slot of the file's last whole snapshot (an
        even number held), the snapshot before goes first into the other, flushed.

        ``background``: the block's HDF5 calls (which let the GIL go) run on the writer's one
        thread while the loop goes on, one block at a time -- the next write (or
        :meth:`close`) waits for it first and raises its error there; a block of ~400 snapshots at N = 8192 held the
        loop's thread 45-80 ms on an H100's host, which runs ~22 ms ahead of the device
        (``step_attrib_h100x1_20261126T1620_3point.txt``)."""
        self._wait()
        if self._writing is not None:           # (its block written: its array free again)
            self._spare, self._writing = self._writing, None
        for hook in self.before_write:
            hook(final)
        held = self._held
        if not held:
            return
        need = self.pending_bytes()
        free = self._free()
        if free is not None and need > free:
            self._fail(need, free, "no space left on the device")
        c0, c1 = self.count, self.count + len(held)
        stages = self._stages()
        cols = {name: ([r[name] for r, _ in held] if name != "psi" or self._psi is None
                       else self._psi[:len(held)]) for name in self.snap if name != "nodes"}
        rows, self._rows = self._rows, []
        attrs, self._attrs = self._attrs, {}
        obs = (rows, self.obs_count)
        self.count = c1
        self._obs_flushed = self.obs_count
        self._psi_rows = max(self._psi_rows, int(1.25 * len(held)))
        self._writing = self._psi
        self._held, self._held_since, self._psi = [], None, None
        args = (c0, c1, stages, held, cols, obs, attrs, need, free)
        if not (self.background and not final):
            return self._block(*args)
        if self._writer is None:
            self._writer = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="tdse-write")
        self._job = self._writer.submit(self._block, *args)   # (its error: raised by _wait)

    def _wait(self):
        """The block under way in the background written (its error raised here).  Forgotten
        only once joined: an interrupt during the join leaves it for the close to wait for
        (a block written beside the close's own could set a dataset's extent back)."""
        job = self._job
        if job is not None:
            concurrent.futures.wait([job])
            self._job = None
            job.result()

    def _block(self, c0, c1, stages, held, cols, obs, attrs, need, free):
        """A block of :meth:`write`: snapshots c0 .. c1 - 1 (their ``cols``), the
        observation rows ``obs`` (rows, the count after them), the attributes waiting, the
        resume arrays, the counts; flushed."""
        try:
            cols["nodes"] = self._nodes(cols["psi"])
            self._write_observations(*obs)
            for k, v in attrs.items():
                self.f.attrs[k] = _jsonable(v)
            for name, ds in self.snap.items():
                self._extent(ds, c1)
                self._write_rows(ds, c0, cols[name])
            for c in stages:
                for key, arr in (held[c - c0 - 1][1] or {}).items():
                    name = resume_name(key, c)
                    if name not in self.f:
                        ds = self.f.create_dataset(name, data=arr)
                        label(ds, "bohr^-1/2" if key in ("companion", "error_vector") else "1",
                               f"{key} at the last whole snapshot of this slot's parity: what "
                               f"resuming needs (tdse.run.snapshots.resume_name)")
                    else:
                        self.f[name][...] = arr
                self.f.attrs["snapshots_complete"] = c
                self.f.attrs["observables_complete"] = obs[1]
                self._flush()
        except (OSError, RuntimeError) as e:   # h5py reports a failed flush as either
            self._fail(need, free, str(e).splitlines()[0][:160], count=c0)

    def _stages(self):
        """The counts at which the next write flushes: the new count, preceded by the one
        before it where the held snapshots carry resume arrays and their number is even."""
        c1 = self.count + len(self._held)
        return [c1 - 1, c1] if len(self._held) % 2 == 0 and self._held[-1][1] else [c1]

    def pending_bytes(self) -> int:
        """Bytes the next write may allocate: a chunk of each dataset whose held rows start
        a new chunk (the held snapshots, and the observations since the last write), the
        resume arrays the first time each slot is made, and 64 KiB of metadata."""
        def chunks(ds, first, last):  # chunks newly touched by rows first..last
            _, shape, dtype, rows = self._geometry_of(ds)
            n = last // rows - (first - 1) // rows if last >= first else 0
            return n * rows * int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        need = 65536
        c0, held = self.count, self._held
        for c in self._stages() if held else []:
            for key, arr in (held[c - c0 - 1][1] or {}).items():
                if resume_name(key, c) not in self.f:
                    need += np.asarray(arr).nbytes
        for ds in self.snap.values():
            need += chunks(ds, c0, c0 + len(held) - 1)
        done = self._obs_flushed
        for ds in self.obs.values():
            need += chunks(ds, done, self.obs_count - 1)
        return int(need)

    def _free(self):
        try:
            return shutil.disk_usage(os.path.dirname(os.path.abspath(self.path))).free
        except OSError:  # pragma: no cover
            return None

    def _flush(self):
        self.f.flush()

    def _fail(self, need, free, cause, count=None):
        """Close the file at its last whole snapshot (``count``, default the count written)
        as far as the device lets us, and raise :class:`StorageError`."""
        count = self.count if count is None else count
        self.count = count
        try:
            for ds in self.snap.values():
                ds.resize(count, axis=0)
            self.f.attrs["snapshots_complete"] = count      # existing attributes, rewritten
            self.f.attrs.modify("storage_error",            # in place: nothing allocated
                                np.bytes_(cause.encode()[:STORAGE_ERROR_BYTES]))
            self.f.close()
        except Exception:  # noqa: BLE001 -- the device refuses: what is on disk stays
            # not closed again, and never freed: after a close that failed to write, HDF5
            # keeps the file's ids valid over state it freed, and closing or freeing them
            # again crashes the process (h5py issues #914, #1642) -- a `tdse run` on a disk
            # another process filled did so at its exit 5 times in 40 (closed again here,
            # freed at the exit), 3 in 40 (freed at the exit), 0 in 80 (never freed).  The
            # observables' datasets too.  The process still died of SIGSEGV after this
            # error's line at times (HDF5's own exit handlers: the CLI exits past them,
            # tdse.ui.files.storage_exit)
            _FAILED.append((self.f, self.snap, self.obs))
            self.f = None
            err = StorageError(self.path, count, need, free, cause)
            err.unclosed = True
            raise err
        self.f = None
        raise StorageError(self.path, count, need, free, cause)

    def observe(self, **row):
        """One row of observables, kept in memory and written with the next snapshot (one
        slice a dataset: a row at a time cost 1.4 ms of h5py calls at N = 256, more than the
        step); rows after the last whole snapshot are not yet on disk, as they were not
        whole before (a resumed run measures them again)."""
        self._rows.append(one_row(row, self.obs))
        self.obs_count += 1

    def observe_block(self, count, **cols):
        """``count`` rows at once: each value an array whose first axis is the rows (what
        a block of measured rows hands over: no dict a row)."""
        self._rows.append(HeldRows(count, cols))
        self.obs_count += count

    def _write_observations(self, rows=None, i1=None):
        """The rows kept since the last write (or ``rows``, the count after them ``i1``),
        one slice a dataset."""
        if rows is None:
            rows, self._rows, i1 = self._rows, [], self.obs_count
        if not rows:
            return
        i0 = i1 - sum(r.count for r in rows)
        for name, ds in self.obs.items():
            rows_now = self._geometry_of(ds)[0]
            if rows_now < i1:
                self._extent(ds, max(i1, 2 * rows_now))
            self._write_rows(ds, i0, _column(rows, name))

    def _geometry_of(self, ds):
        """[rows, row shape, dtype, chunk rows] of a growing dataset, read from h5py once (its
        properties cost ~10 us each) and kept up to date by :meth:`_extent`."""
        g = self._shapes.get(id(ds))          # by id: the datasets live as long as the writer
        if g is None:
            g = self._shapes[id(ds)] = [ds.shape[0], ds.shape[1:], ds.dtype, ds.chunks[0]]
        return g

    def _extent(self, ds, rows):
        """Resize ``ds`` to ``rows`` rows (h5py's resize, by its low-level call)."""
        g = self._geometry_of(ds)
        ds.id.set_extent((rows, *g[1]))
        g[0] = rows

    def _write_rows(self, ds, i0, values):
        """Rows i0, i0 + 1, ... of ``ds`` := ``values`` (a sequence of rows), by HDF5's
        low-level write: the same bytes as ``ds[i0:i1] = values`` without h5py's selection
        machinery (~50 us a call in Python; a snapshot with its observations made some 40
        such calls: 3x the time of the low-level ones, measured at N = 2048)."""
        _, shape, dtype, _ = self._geometry_of(ds)
        arr = np.ascontiguousarray(np.asarray(values, dtype=dtype).reshape((len(values), *shape)))
        fs = ds.id.get_space()
        fs.select_hyperslab((i0,) + (0,) * len(shape), arr.shape)
        ds.id.write(h5py.h5s.create_simple(arr.shape), fs, arr)

    def set_attrs(self, **attrs):
        """File attributes; ``background``: set with the next block (an h5py call while a
        block is being written would wait for it)."""
        if self.background:
            self._attrs.update(attrs)
            return
        for k, v in attrs.items():
            self.f.attrs[k] = _jsonable(v)

    def close(self, complete: bool):
        """Write what is held (:meth:`write`) and close; ``complete``: the run finished."""
        if self.f:
            self.write(final=True)
        self._wait()
        if self._writer is not None:          # (no block under way: the thread ends)
            self._writer.shutdown(wait=False)
            self._writer = None
        if self.f:
            for k, v in self._attrs.items():
                self.f.attrs[k] = _jsonable(v)
            self._attrs = {}
            try:
                self._write_observations()
            except (OSError, RuntimeError) as e:
                self._fail(0, self._free(), str(e).splitlines()[0][:160])
            for ds in self.obs.values():  # drop the capacity grown ahead of the rows
                ds.resize(self.obs_count, axis=0)
            if complete:
                self._settle_resume_slots()
            self.f.attrs["observables_complete"] = self.obs_count
            self.f.attrs["complete"] = bool(complete)
            self.f.close()
            self.f = None

    def _settle_resume_slots(self):
        """A finished run's resume slots both hold its last snapshot's arrays: the other
        parity's slot held whichever earlier snapshot the flush timing had last written
        there, so two identical runs differed in it (#58 item 5) -- now the same input gives
        the same bits in every dataset."""
        if "resume" not in self.f:
            return
        for name in list(self.f["resume"].keys()):
            key, _, parity = name.rpartition("_")
            last, other = resume_name(key, self.count), resume_name(key, self.count + 1)
            if parity in ("0", "1") and last in self.f and other in self.f:
                self.f[other][...] = self.f[last][...]


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


#: the room kept for the attribute ``storage_error`` (its cause, cut to this many bytes)
STORAGE_ERROR_BYTES = 160


def _storage_error_room(f):
    """The attribute ``storage_error`` (why the run stopped, if the disk filled) made empty
    at the file's start with room for STORAGE_ERROR_BYTES, so that saying it then allocates
    nothing: a new attribute written to a full disk pointed past the file's end, and the
    file read back with an error and did not resume (#58 item 1)."""
    f.attrs.create("storage_error", data=np.bytes_(b""), dtype=f"S{STORAGE_ERROR_BYTES}")
