"""What a run writes besides its rows, as :class:`~tdse.run.loop.Sink` s of the evolve
loop: the snapshots (:class:`Snapshots`, every ``output.every`` steps and at the last) and
the progress bar (:class:`Progress`).  Each writes to a writer (:mod:`tdse.run.snapshots`:
the HDF5 file, or memory); computing and writing are apart.  Atomic units.
"""
from __future__ import annotations

import collections
import functools
import time

import numpy as np

from mgemm.arrays import to_host

from ..model.potential import centre_positions
from ..model.states import DTYPE
from .loop import Sink

__all__ = ["Snapshots", "Progress", "host_psi"]

#: psi on a GPU: at most this many snapshot copies (and SNAPSHOT_BYTES_IN_FLIGHT of them)
#: under way (:meth:`Snapshots.write`): the oldest is finished (waited for) when one more
#: would pass either; those whose copies have run are finished at each snapshot, in order.
#: One (finished at the next snapshot) cut the host's lead over the device to an interval
#: at every snapshot (25 steps of h2plus_moving_large: the loop waited there ~1 ms a
#: snapshot, one H100, N = 8192, benchmarks/archive/step_attrib.py)
SNAPSHOTS_IN_FLIGHT = 64
SNAPSHOT_BYTES_IN_FLIGHT = 64 << 20

#: a run's snapshots taken by its steps where psi lives (:meth:`Snapshots.tap`) go into a
#: ring of at most this many rows (and half of SNAPSHOT_BYTES_IN_FLIGHT), copied to the host
#: a ring at a time: a save point a ring, where one a snapshot had cost a GPU run's host
#: ~0.45 ms (psi copied out of and into the step graphs' buffer, a new segment of rows, a
#: pinned copy; ``git show aa99969:docs/RUN_OVERHEAD.md``)
SNAPSHOT_RING = 32

#: ... and spans at most this part of ``output.flush_seconds`` at the loop's pace (the
#: writer then holds a snapshot up to flush_seconds more: up to 1.5 x flush_seconds in all)
RING_SPAN = 0.5

#: the progress bar moves at least this many times a run (a save point each)
PROGRESS_POINTS = 1000


def host_psi(state):
    """psi of ``state`` on the host (copied once per state, shared by the sinks)."""
    h = getattr(state, "_host", None)
    if h is None:
        h = to_host(state.psi)
        state._host = h
    return h


class Snapshots(Sink):
    """psi, the centres and the node count every ``output.every`` steps (and at the last
    step, and at step 0 of a new run), each flushed; in operator mode also
    P_mn = |<m|U(t)|n>|^2 and U(t) for resuming.  ``last_step``: the last whole snapshot."""

    def __init__(self, plan, writer, start=0):
        cfg = plan.config
        self.every, self.last = cfg.output.every, cfg.time.steps
        self.config, self.writer, self.x = cfg, writer, plan.x
        self.phi0 = plan.states[:cfg.output.populations]
        self.last_step = start
        # what other sinks add to the next snapshot: row values (e.g. time_error; or a
        # callable f(psi, keep) -> {name: value} called when the row is written, with psi
        # and the arrays kept for resuming on the host: the local estimate's), arrays
        # kept for resuming (e.g. the time-error companion's psi; on a GPU they may stay
        # device arrays, left unchanged by their sink: copied with psi, without a wait),
        # file attributes
        self.row_extras, self.resume_extras, self.attr_extras = {}, {}, {}
        self.pending = collections.deque()   # (step, t, HostCopy, extras): snapshots being copied
        # ``alone``: no other sink adds to the rows (the driver says so), so that the steps may
        # take them (:meth:`tap`): into the ring's rows (``slots``), ``taken`` [(step, t)]
        # of those filled, copied out a ring at a time; ``span``: the steps a ring may span
        # (half of output.flush_seconds at the pace ``_pace`` measured), None before a pace
        self.alone, self.tapping = False, False
        self.ring, self.slots, self.taken, self.span, self._pace = None, [], [], None, None
        self._due = None        # a device ring's copy began: its rows' bytes, to finish (tap)

    def begin(self, state):
        psi = state.psi
        self.tapping = self.alone and self.config.output.flush_seconds > 0 and state.U is None \
            and psi is not None and psi.ndim == 1
        if self.tapping:
            from mgemm.arrays import get_xp
            rows = max(2, min(SNAPSHOT_RING, SNAPSHOT_BYTES_IN_FLIGHT // 2 // max(1, psi.nbytes)))
            ring = self.ring = get_xp(psi).empty((rows, psi.size), dtype=psi.dtype)
            self.slots = [ring[i] for i in range(rows)]       # the row views, made once
            self._pace = (state.step, time.perf_counter())
        if not state.resumed:
            self.write(state)

    def next_point(self, step, stop):
        """The next snapshot; where tapped (:meth:`tap`), the one that fills the ring or
        ends its span, or the run's last: the snapshots between are taken by the steps."""
        p = super().next_point(step, stop)
        if p is None or not self.tapping:
            return p
        e = self.every
        first = self.taken[0][0] if self.taken else p
        host = min(p + (len(self.slots) - len(self.taken) - 1) * e,
                   max(p, first + (self.span or 0) // e * e), self.last)
        return host if host <= stop else None

    def tap(self, j0, j1, saved):
        """Ring rows for the snapshots in (j0, j1] (but j1 where it is saved there), filled
        with psi by the steps; copied to the host with the ring at the next save point.
        After a device ring's copy began, the snapshots whose copies have run are written
        after the launch of the advance's last step (a callable at j1): the device has the
        advance's steps while the host writes (before them, 64 rows had left it idle 3.5-12
        ms at each ring, ``run_trace_h200x1_20261130T0925.txt``)."""
        if not self.tapping:
            return None
        e, dt, hi = self.every, self.config.time.dt, j1 - 1 if saved else j1
        ks = list(range((j0 // e + 1) * e, hi + 1, e))
        if j0 < self.last <= hi and self.last % e:
            ks.append(self.last)
        out = {}
        if ks:
            c = len(self.taken)
            if c + len(ks) >= len(self.slots):
                raise RuntimeError(f"{len(ks)} snapshots tapped into a ring with {len(self.slots) - c} free")
            self.taken += [(k, k * dt) for k in ks]
            out = {k: [self.slots[c + i]] for i, k in enumerate(ks)}
        if self._due is not None:
            nbytes, self._due = self._due, None
            out.setdefault(j1, []).append(lambda X=None: self._finish_copied(nbytes))
        return out or None

    def save(self, state):
        self.write(state)

    def end(self, state):
        self._copy_ring()
        self.finish()

    def fail(self, state, error):
        try:        # the last snapshot taken is whole: it reaches the file
            while self.taken and self.taken[-1][0] > state.step:
                self.taken.pop()        # tapped for steps the run did not reach
            self._copy_ring()
            self.finish()
        except Exception:  # noqa: BLE001 -- the run's own error is the one to report
            pass

    def transitions(self, U_host):  # P_mn = |<m|U|n>|^2 = |dx sum_x phi_m (U phi_n)|^2
        return np.abs(self.phi0 @ (U_host @ self.phi0.T.astype(DTYPE)) * self.config.grid.dx) ** 2

    def write(self, state):
        """A snapshot of ``state``.  psi on a GPU (no U): its copy to the host is started
        and the snapshot is written once that copy has run -- at a later save point, or when
        :data:`SNAPSHOTS_IN_FLIGHT` later ones have been started (or at the end), in order,
        so that the device never waits for the file and the host keeps its lead over the
        device (a copy waited for at once waits for every step queued); the file's last
        whole snapshot is then a few intervals older while the run goes on.  On the host
        the same where a resume array is not yet made (the estimate's e of a piece that
        spans this snapshot, :class:`~tdse.numerics.adaptive.DeferredE`).  Otherwise
        written now."""
        from mgemm.arrays import HostCopy, is_device_array
        if self.tapping:
            return self._write_ring(state)
        # (resume_extras as they are now: a sink sets its entries again for a later snapshot,
        # while this one may wait for its copies -- or a deferred entry, DeferredE)
        extras = (self.row_extras, dict(self.resume_extras), self.attr_extras)
        self.row_extras = {}
        on_device = is_device_array(state.psi)
        if state.U is None and (on_device or not _ready(extras[1])):
            # (resume arrays on the device copied with psi; a host psi copied: it goes on)
            dev = {f"keep:{k}": v for k, v in extras[1].items() if is_device_array(v)}
            psi = state.psi if on_device else np.array(state.psi)
            self.pending.append((state.step, state.t, HostCopy({"psi": psi, **dev}), extras))
            self._finish_copied(psi.nbytes)
        else:
            self.finish()
            self._write(state.step, state.t, host_psi(state), state.U, extras)

    def _write_ring(self, state):
        """A snapshot of ``state`` with the ring's rows tapped before it, their copy begun
        at once (:meth:`_copy_ring`); the ring's span from the pace since the last."""
        from mgemm.arrays import get_xp

        from ..numerics.graphs import copy_in
        copy_in(get_xp(state.psi), self.slots[len(self.taken)], state.psi)
        self.taken.append((state.step, state.t))
        self._copy_ring(later=True)
        step0, t0 = self._pace
        now = time.perf_counter()
        if state.step > step0 and now > t0:
            self.span = int(RING_SPAN * self.config.output.flush_seconds * (state.step - step0) / (now - t0))
        self._pace = (state.step, now)

    def _copy_ring(self, later=False):
        """The ring's filled rows: their copy to the host started (one copy), pending in
        order as :meth:`write` leaves a snapshot on a GPU; the ring free again (a device
        ring's copy is queued before the steps that fill it again; a host ring's rows are
        written, copied by the writer, before this returns).  ``later``: the snapshots whose
        copies have run are written by the next advance's tap (:meth:`tap`), not here."""
        from mgemm.arrays import HostCopy
        m = len(self.taken)
        if not m:
            return
        ring = self.ring[:m]
        copy = HostCopy({"psi": ring})
        for i, (k, t) in enumerate(self.taken):
            self.pending.append((k, t, _RingRow(copy, i), ({}, {}, {})))
        self.taken = []
        if copy.event is not None and later:    # (a device ring: written after the next launches)
            self._due = ring[0].nbytes
        else:
            self._finish_copied(ring[0].nbytes)

    def _finish_copied(self, nbytes):
        """The pending snapshots whose copies have run written, in order, and the oldest
        waited for while more than :data:`SNAPSHOTS_IN_FLIGHT` (or their bytes) are pending."""
        pending = self.pending
        most = max(1, min(SNAPSHOTS_IN_FLIGHT, SNAPSHOT_BYTES_IN_FLIGHT // max(1, nbytes)))
        while pending and (len(pending) > most or (pending[0][2].done() and _ready(pending[0][3][1]))):
            self._finish_one()

    def finish(self):
        """Write the snapshots whose copies were started, in order (waits for those copies)."""
        while self.pending:
            self._finish_one()

    def _finish_one(self):
        """The oldest pending snapshot written, and then dropped from :attr:`pending` -- once
        the writer holds it (``appended``): a signal while its copy is waited for leaves it
        to :meth:`fail`'s :meth:`finish`, where dropping it first had left a gap."""
        before = self.writer.appended
        try:
            self._write_pending(*self.pending[0])
        finally:
            if self.writer.appended > before:
                self.pending.popleft()

    def _write_pending(self, step, t, copy, extras):
        # psi out of the pinned buffer (which goes back to CuPy's pool for the next copy:
        # held by the writer until its next write, each snapshot took a new cudaHostAlloc,
        # ~0.3 ms of the host's time); a background writer copies it into its block itself
        got = copy.result()
        psi = got["psi"]
        if len(got) > 1:            # resume arrays that were on the device
            extras = (extras[0], {k: v if hasattr(v, "result") else np.array(got.get(f"keep:{k}", v))
                                  for k, v in extras[1].items()},             # (deferred: _write)
                      extras[2])
        self._write(step, t, psi if getattr(self.writer, "background", False) else np.array(psi),
                    None, extras)

    def _write(self, step, t, psi, U, extras):
        cfg = self.config
        row_extras, resume_extras, attr_extras = extras
        row, keep = {}, None
        if U is not None:
            U_host = to_host(U.to_array() if hasattr(U, "to_array") else U)
            row, keep = {"P": self.transitions(U_host)}, {"U": U_host}
        keep = {**(keep or {}), **{k: v.result() if hasattr(v, "result") else to_host(v)
                                   for k, v in resume_extras.items()}} or None
        row = {"time_error": np.nan, "time_error_populations": np.nan, "steps_taken": step,
               "step_min": cfg.time.dt, **row}                      # (fixed steps, unless told)
        for k, v in row_extras.items():  # a callable: row values from psi and keep, on the host
            row.update(v(psi, keep or {}) if callable(v) else {k: v})
        if attr_extras:
            self.writer.set_attrs(**attr_extras)
        # (the node count: the writer's, from psi, when it writes: NodeCounter)
        self.writer.append(state=keep, t=t, step=step, psi=psi,
                           centres=centre_positions(cfg.potential, t), **row)
        self.last_step = step


class _RingRow:
    """Row ``i`` of a ring's copy (:class:`mgemm.arrays.HostCopy` of its rows), as a
    snapshot's own copy is read: ``done()``, ``result()["psi"]``."""
    __slots__ = ("copy", "i")

    def __init__(self, copy, i):
        self.copy, self.i = copy, i

    def done(self):
        return self.copy.done()

    def result(self):
        return {"psi": self.copy.result()["psi"][self.i]}


def _ready(resume_extras) -> bool:
    """Whether a snapshot's deferred resume arrays (e.g. the local estimate's e after a
    piece not yet made, :class:`tdse.numerics.adaptive.DeferredE`) are on the host."""
    return all(v.ready() for v in resume_extras.values() if hasattr(v, "ready"))


class Progress(Sink):
    """A tqdm progress bar over the steps (nothing when ``disable``), moved at least every
    1/:data:`PROGRESS_POINTS` of the steps: by the steps' taps where psi is stepped (a
    callable run by the loop's thread after the step's launch: no save point of its own,
    where one a move had cost a GPU run's host ~0.3 ms in psi's copies and a new segment,
    ``git show aa99969:docs/RUN_OVERHEAD.md``), else (U(t) alone) at save points of its own."""

    def __init__(self, total, initial=0, desc=None, disable=False, unit="step"):
        self.args = dict(total=total, initial=initial, desc=desc, disable=disable, unit=unit,
                         mininterval=0.5)
        self.bar, self.at = None, initial
        self.move = None if disable else max(1, total // PROGRESS_POINTS)
        self.every = self.move
        self.tapping = False

    def begin(self, state):
        self.at = state.step
        self.tapping = self.move is not None and state.psi is not None
        if self.move is None:       # disabled: no bar (tqdm.auto's import, ~15 ms of a one-step
            return                  # run's loop on 2 CPUs: startup_ab_cpu2_20261130T1520.txt)
        from tqdm.auto import tqdm
        self.bar = tqdm(**self.args)
        if self.tapping:            # (its one save point: the loop's last step)
            self.every = None

    def tap(self, j0, j1, saved):
        """A move at each of its steps in (j0, j1]."""
        if not self.tapping:
            return None
        e = self.move
        return {k: [functools.partial(self._to, k)] for k in range((j0 // e + 1) * e, j1 + 1, e)} or None

    def _to(self, step, X=None):
        if self.bar is not None:
            self.bar.update(step - self.at)
        self.at = step

    def save(self, state):
        self._to(state.step)

    def end(self, state):
        if self.bar is not None and state.step > self.at:
            self.save(state)
        self.close()

    def close(self):
        if self.bar is not None:
            self.bar.close()
            self.bar = None
