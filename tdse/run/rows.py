"""The observables of a run, a :class:`~tdse.run.loop.Sink` of the evolve loop
(:class:`Observables`): one row every ``output.observables_every`` steps -- norm, <H>, <x>,
<p>, acceleration, E(t), yield, autocorrelation, populations in the eigenstates of H(0)
and of the molecular H(t), <n> (:mod:`tdse.model.observables`) -- measured a block of rows
at a time where psi lives (:class:`_BlockRows`) and handed to the writer when it writes
(:mod:`tdse.run.snapshots`: the HDF5 file, or memory).  H(t)'s eigenpairs come from
:class:`tdse.run.eigenpairs.Lookahead`.  Atomic units.
"""
from __future__ import annotations

import math
import time
import warnings

import numpy as np

from ..model import observables, tracker
from ..model.potential import host_only
from .eigenpairs import Lookahead, lookahead_wanted, workers_most
from .loop import Sink
from .sinks import host_psi

__all__ = ["Observables", "BoundaryWarning", "EDGE_NORM"]

#: warn when more of the norm than this sits within 10 points of a wall (no absorber)
EDGE_NORM = 1e-6

#: the rows measured in blocks (:class:`_BlockRows`): measured against a row at a time and
#: kept on; a test turns it off to check the two paths agree
BLOCK_OBSERVABLES = True

#: rows filled by the steps where psi lives, a save point only where a row needs the host
#: (:meth:`Observables.tap`; measured against a save point a row and kept on: a test turns
#: it off to check the two paths agree)
TAP_ROWS = True

#: slots of the ring through which a GPU run's H(t) states are uploaded (:class:`_BlockRows`:
#: a block's at once, or a static molecule's once), each a pinned buffer of a block's states
#: (~2.6 MB at N = 8192, 10 rows of 4 states): 16 had cost a short run ~0.1 s of
#: cudaHostAlloc (``loop_sampler_h200x1_20261130T1033.txt``)
PAIRS_RING = 4

#: the most pinned bytes a slot of that ring is made with before the loop (:class:`_BlockRows`;
#: a choice, not measured: 4 slots of it stay pinned for the run, a larger ring grows as before)
PAIRS_RESERVE_BYTES = 1 << 23


def states_in_a_block(M, output) -> int:
    """The most rows with H(t)'s states in a block of ``M`` rows (``output``: the run's
    :class:`~tdse.inputs.Output`): those at the populations' cadence among rows
    ``observables_every`` steps apart, and two off it (the run's first and last)."""
    return min(M, -(-M * output.observables_every // output.populations_interval) + 2)

#: rows measured in blocks of up to this many states (:class:`_BlockRows`) on the CPU (a
#: row's cost there is its share of the block's passes, whatever the block's size)
TIME_BLOCK = 64

#: on a GPU, up to this many (a block's cost there is mostly its ~20 launches' host time,
#: ~1 ms on an H100's host: 15-19 us a row in blocks of 64), while the block's states stay
#: within TIME_BLOCK_BYTES
TIME_BLOCK_GPU = 512
TIME_BLOCK_BYTES = 1 << 26


_LATER = object()       # a row's H(t) states, not yet asked for (_BlockRows.reserve_later)


class BoundaryWarning(UserWarning):
    """psi reaches the box's walls, where it reflects (a run without an absorber)."""


class Observables(Sink):
    """The run's rows of /observables: every ``observables_every`` steps, at the last step
    and at step 0 of a new run (a save point each); the populations in H(t)'s eigenstates
    every ``populations_every`` steps (and at the first and last)."""

    def __init__(self, plan, writer, workers=None):
        cfg = plan.config
        K = cfg.output.populations
        self.config, self.writer = cfg, writer
        self.every, self.last = cfg.output.observables_every, cfg.time.steps
        self._pop_every, self._last = cfg.output.populations_interval, cfg.time.steps
        self.measure = observables.Measure(cfg, plan.x, plan.states[:K], np.asarray(plan.psi0))
        self.moving = cfg.potential.molecule_moves
        # a static molecule's H(t) states are H(0)'s, which the plan has (not solved again)
        self._static = None if self.moving else (plan.energies[:K], plan.states[:K])
        self.tracker = tracker.Tracker(cfg, K) if self.moving else None
        # the run's look-ahead processes, if it opened them: its decision (one sample of the
        # spare CPUs a run -- a second one here found none where the first had found one,
        # and left the processes the run had started idle); else decided here
        self.workers = workers
        self.ahead = workers is not None or lookahead_wanted(cfg, plan.backend)
        self._most = workers_most(plan.backend.name)      # (processes of its own, if it opens them)
        self.pairs = None                  # the run's Lookahead (begin .. end)
        # H(t)'s eigenpairs, for the closing note: seconds computing them, calls, and the
        # seconds the loop waited for them (all of the computing when not ahead)
        self.eigen_seconds, self.eigen_calls, self.eigen_wait = 0.0, 0, 0.0
        self.warned_edge = cfg.absorber is not None  # an absorber takes what reaches a wall
        # the rows measured TIME_BLOCK states at a time where psi lives (on a GPU kept there),
        # handed to the writer when it writes to its file (its before_write hook) and at the
        # end: no synchronisation a row, and a row costs a share of a block's few array
        # passes instead of a dozen calls of its own
        self.rows = self._started = None   # (_started: the rows whose copy is under way)
        self.tapping = False               # (decided at begin: the rows tapped, :meth:`tap`)
        self.gpu = False
        # (a Python function's V on a GPU: a row at a time by Measure on the host -- the block's
        # sums are generated from formulas)
        if BLOCK_OBSERVABLES and (plan.backend.xp is np or not host_only(cfg.potential)):
            self.rows = _BlockRows(plan, self.measure)
            self.gpu = self.rows.xp is not np
            hooks = getattr(writer, "before_write", None)
            if hooks is not None:
                hooks.append(self.hand_over)

    def begin(self, state):
        if self.moving:
            cfg = self.config
            primed = None if self.workers is None or state.resumed else \
                self.workers.adopt(self.tracker, cfg.time.dt, cfg.time.steps, self._pop_every)
            self.pairs = primed or Lookahead(self.tracker, cfg.time.dt, cfg.time.steps, self._pop_every,
                                             ahead=self.ahead, workers=self.workers, most=self._most)
        # rows without H(t)'s states filled by the steps themselves (:meth:`tap`): a save
        # point only at a row that needs the host (:meth:`next_point`)
        self.tapping = TAP_ROWS and self.rows is not None and state.psi is not None \
            and self.rows.holds(state.psi)
        if not state.resumed:
            self.record(state)

    def next_point(self, step, stop):
        """The next row that needs the host: the one that fills the block, the run's last;
        the rows between are :meth:`tap` ped (a save point every row where they cannot be)."""
        p = super().next_point(step, stop)
        if p is None or not self.tapping:
            return p
        e = self.every
        host = min(self.last, p + (self.rows.M - self.rows.cols - 1) * e)
        return host if host <= stop else None

    def tap(self, j0, j1, saved):
        """The slots of the rows in (j0, j1] (but j1 where it is saved there), filled with
        psi by the steps (:meth:`_BlockRows.reserve`): rows without H(t)'s states, with a
        static molecule's, or with a moving one's -- asked of the look-ahead only when
        the block is measured (:meth:`_BlockRows.reserve_later`), its pairs' steps in order."""
        if not self.tapping:
            return None
        e, dt, rows = self.every, self.config.time.dt, self.rows
        ks = range((j0 // e + 1) * e, (j1 - 1 if saved else j1) + 1, e)
        if not ks:
            return None
        c, i = rows.cols, 0
        for p in self._pops_in(ks):     # the rows between two with H(t)'s states at once
            if p > i:
                rows.reserve_plain(ks[i:p], dt)
            k = ks[p]
            if self.pairs is not None:
                rows.reserve_later(k, k * dt, self.pairs)
            else:
                rows.reserve(k, k * dt, self._tapped_pairs(k))
            i = p + 1
        if i < len(ks):
            rows.reserve_plain(ks[i:], dt)
        if self.pairs is not None:       # (the block's pairs computed while it is stepped)
            self.pairs.foresee(ks[-1])
        # (each row's list made once with the block, the dict built at C speed: with the
        # merge's change, loop._taps 2.05 -> 1.35 us a step of a 2-CPU host, N = 256)
        return dict(zip(ks, rows.slot_lists[c:c + len(ks)]))

    def _pops_in(self, ks):
        """The indices in ``ks`` (a range) of the rows with H(t)'s states (:meth:`_pops_at`),
        ascending, from their cadence -- not a call a row."""
        a, e = ks.start, ks.step
        L = math.lcm(self._pop_every, e)
        at = set(range(-(-a // L) * L, ks.stop, L))
        at.update((0, self._last))
        return sorted((k - a) // e for k in at if k in ks)

    def _tapped_pairs(self, step):
        """H(t)'s pairs of a static molecule's tapped row (the plan's, as :meth:`eigenpairs`
        gives them)."""
        self.eigen_calls += 1
        return self._static

    def save(self, state):
        self.record(state)

    def end(self, state):
        try:        # (the look-ahead closed after: a tapped row's pairs are asked at the flush)
            self.flush()
        finally:
            self._close_pairs()

    def fail(self, state, error):
        if self.rows is not None:      # rows tapped for steps the run did not reach
            self.rows.drop_after(state.step)
        try:        # rows already measured reach the file, as they did one by one
            self.flush()
        except Exception:  # noqa: BLE001 -- the run's own error is the one to report
            pass
        finally:
            self._close_pairs()

    def _close_pairs(self):
        if self.pairs is not None:
            p, self.pairs = self.pairs, None
            p.close()
            self.eigen_seconds, self.eigen_calls, self.eigen_wait = p.seconds, p.calls, p.wait

    def molecular_states(self, t):
        """Eigenpairs of the molecular H(t) (no field, no absorber): where no centre moves,
        the plan's of H(0)."""
        if self.moving:
            return self.tracker(t)
        return self._static

    def with_populations(self, state) -> bool:
        """Whether this row has the populations in H(t)'s eigenstates
        (``output.populations_every``; always at step 0, the first of a resumed run and
        the last)."""
        return self._pops_at(state.step) or state.resumed

    def _pops_at(self, step) -> bool:
        return step % self._pop_every == 0 or step == self._last or step == 0

    def eigenpairs(self, state):
        """H(t)'s pairs at the state's time: from the look-ahead where a centre moves."""
        if self.pairs is not None:
            return self.pairs(state.step, state.t)
        t0 = time.perf_counter()
        out = self.molecular_states(state.t)
        dt = time.perf_counter() - t0
        self.eigen_seconds += dt
        self.eigen_wait += dt
        self.eigen_calls += 1
        return out

    def hand_over(self, final=False):
        """The writer is about to write to its file: the rows measured so far to it (on a
        GPU, unless ``final``, those whose copy began at its previous write, and the copy of
        the rest begun: the device is not waited for)."""
        self.flush(defer=self.gpu and not final)

    def flush(self, defer=False):
        """The measured rows to the writer.  ``defer`` (a GPU): the rows whose copy began at
        the previous call are written and the copy of these only begun (no wait for the
        device)."""
        if self._started is not None:
            started, self._started = self._started, None
            self._write(self.rows.finish(started))
        if self.rows is not None and self.rows.pending:
            if defer:
                self._started = self.rows.start()
            else:
                self._write(self.rows.take())

    def _write(self, cols):
        """A block of rows (:meth:`_BlockRows.finish`'s columns) to the writer."""
        edge = cols.pop("_edge")
        count = len(edge)
        if not count:
            return
        self.writer.observe_block(count, **cols)
        if not self.warned_edge:
            over = np.flatnonzero(edge > EDGE_NORM)
            if over.size:
                self._check_edge(float(edge[over[0]]), float(cols["t"][over[0]]))

    def record(self, state):
        t = state.t
        if self.rows is not None:       # (the pairs of the rows tapped before it first: in order)
            self.rows.resolve()
        molecular = self.eigenpairs(state) if self.with_populations(state) else None
        if self.rows is not None and self.rows.holds(state.psi):
            self.rows.record(state.step, t, state.psi, molecular)
            return
        psi = host_psi(state)
        self.writer.observe(step=state.step, **self.measure(t, psi, molecular))
        self._check_edge(observables.edge_norm(psi, self.config.grid.dx), t)

    def _check_edge(self, edge, t):
        if not self.warned_edge and edge > EDGE_NORM:
            self.warned_edge = True
            warnings.warn(f"at t = {t:.4g}, {edge:.3g} of the norm (more than {EDGE_NORM:g}) "
                          f"is within 10 grid points of a wall: it reflects there; `tdse "
                          f"converge` measures what a wider box changes (its box check); widen "
                          f"the box or add an [absorber]", BoundaryWarning, stacklevel=2)


class _BlockRows:
    """The observables of a single run's psi where it lives (NumPy or a GPU), a block of
    rows at a time: psi is copied into a column of an N x M block, and each full block (or
    what a write of the file finds) is measured at once -- :class:`BlockMeasure` with the M
    columns as members, each at its own time (one kinetic product, one FFT, one kernel or a
    few array passes for M rows, where a row at a time took a dozen launches or NumPy calls:
    ~0.3 ms of host time at N = 8192 on a GPU, 0.2 ms at N = 256 on the CPU, more than the
    step).  The populations in the molecular H(t)'s eigenstates: one product at the row (the
    eigenpairs from the host, uploaded when the centres move); <n> and the norm near the
    walls from the same sums.  Rows stay where psi is until :meth:`start` / :meth:`take`."""

    def __init__(self, plan, measure):
        from mgemm.arrays import PinnedUpload
        cfg = plan.config
        xp = self.xp = plan.backend.xp
        self.dx = cfg.grid.dx
        phi0, psi0 = np.asarray(measure.phi0), np.asarray(plan.psi0)
        self.block = observables.BlockMeasure([cfg], plan.x, phi0[None], psi0[:, None], xp)
        rows = cfg.time.steps // cfg.output.observables_every + 2      # rows of the whole run
        cap = TIME_BLOCK if xp is np else \
            max(TIME_BLOCK, min(TIME_BLOCK_GPU, TIME_BLOCK_BYTES // (16 * cfg.grid.n)) // 8 * 8)
        # a multiple of 8 columns (under the cap): the DVR's kinetic product is a GEMM, whose
        # edge tiles gave a state in the last columns of a 7-wide block other bits than
        # elsewhere -- a resumed run's rows sit elsewhere in their blocks (2 in 400 draws)
        self.M = max(1, min(cap, -(-rows // 8) * 8))
        self.tblock = observables.BlockMeasure(
            [cfg] * self.M, plan.x, np.broadcast_to(phi0[None], (self.M, *phi0.shape)),
            psi0[:, None], xp)
        # the states a row each (a contiguous copy a state: one memcpy on a GPU, where a
        # column of an N x M block took a strided-copy kernel and ~20 us of CuPy's indexing)
        # (zeros: the rows past those filled are measured with them, then dropped)
        self.buf = xp.zeros((self.M, cfg.grid.n), dtype=np.complex128)
        self.slots = [self.buf[i] for i in range(self.M)]     # the row views, made once
        self.slot_lists = [[row] for row in self.slots]        # ... and a tap's list of each (never changed)
        self.cols, self.ts = 0, []     # rows of buf filled, and their times
        self.done = []                 # (sums (9, m), amps (K, m)) of measured blocks, on the device
        self.K = cfg.output.populations
        # H(t)'s states, a block's upload each: a slot is reused only after its copy ran, so
        # the ring bounds the host's lead over the device to PAIRS_RING blocks
        self.up = PinnedUpload(xp, ring=PAIRS_RING) if xp is not np else np.asarray
        if xp is not np and self.K and cfg.potential.molecule_moves:
            # made now for a block's states at most, not grown in the loop (a wait for the
            # stream and fresh pinned buffers there); a larger bound grows as it is met
            most = states_in_a_block(self.M, cfg.output) * self.K * cfg.grid.n
            if most * np.dtype(np.float64).itemsize <= PAIRS_RESERVE_BYTES:
                self.up.reserve(most, np.float64)
        self._phit = None            # (host array, device copy) of the last H(t) states
        # phi @ rows.T of a run of rows, each row's sums in one order whatever the run's
        # length or place (_amplitudes): einsum on the host -- BLAS gave a row alone (gemv)
        # and runs of 2-32 / 33-64 rows (gemm, 2 threads) other bits, ~4 us more a run of
        # one, ~80 more a run of 64 (2 CPUs, K = 4, N = 500) --, a kernel of fixed order on
        # a GPU (cuBLAS: a row alone, 2-63 and 64 rows; amplitudes_bits_*_20261202*.txt)
        if xp is np:
            self._product = lambda phi, X: np.einsum("kn,rn->kr", phi, X)   # noqa: E731
        else:
            from ..backends.cupy.measure import amplitudes
            self._product = lambda phi, X: amplitudes(xp, phi, X)          # noqa: E731
        # per row since the last hand-over: its step, time, E_n(t) (the one NaN row where it has
        # none) and whether it has H(t)'s states -- parallel lists, made into columns at once
        # (tuples a row had cost the hand-over ~0.4 us a row on 2 CPUs in list comprehensions)
        self.pending, self.pending_t, self.pending_E, self.also = [], [], [], []
        self.phis = []                     # the device states of each row of the block, or None
        self.later = []                    # rows whose pairs are asked for at the measure (resolve)
        self._no_energies = np.full(self.K, np.nan)     # a row without H(t)'s (read only)
        self._no_energies.flags.writeable = False

    def holds(self, psi):
        """Whether ``psi`` is a vector on this device (else the host path measures it)."""
        xp = self.xp
        if xp is np:
            return isinstance(psi, np.ndarray) and psi.ndim == 1
        return isinstance(psi, xp.ndarray) and psi.ndim == 1 and \
            psi.data.device_id == xp.cuda.runtime.getDevice()

    def record(self, step, t, psi, molecular):
        """One row; ``molecular``: H(t)'s (E, phi), or None where this row has no
        populations in them (NaN)."""
        from ..numerics.graphs import copy_in
        copy_in(self.xp, self.reserve(step, t, molecular), psi)   # (a GPU's: on its stream)
        if self.cols == self.M:
            self._measure()

    def reserve(self, step, t, molecular=None):
        """The slot of the row at ``step`` (``molecular`` as :meth:`record` has it) that
        :meth:`record` or the steps (:meth:`Observables.tap`: never the block's last, a save
        point) fill with psi(t)."""
        phit = None
        if molecular is None:
            Et = self._no_energies
        else:
            Et, phi_all = molecular
            Et = np.asarray(Et[:self.K])
            if self._phit is None or self._phit[0] is not phi_all:  # new eigenpairs: one upload
                phit = np.ascontiguousarray(phi_all[:self.K])
                dev = self.up(phit.ravel()).reshape(phit.shape)
                # complex once an upload: the product with psi would convert them at each
                # product (what matmul does with real @ complex: the same values, the same bits)
                self._phit = (phi_all, dev if self.xp is np else dev.astype(np.complex128))
            phit = self._phit[1]
        return self._take([step], [t], Et, phit)[0]

    def reserve_later(self, step, t, pairs):
        """The slot of the row at ``step`` with H(t)'s states from ``pairs`` (the run's
        :class:`~tdse.run.eigenpairs.Lookahead`), asked for only when the block is measured
        (:meth:`resolve`): a tapped row then needs neither the pairs nor a save point where the
        look-ahead has not yet computed them, and a block's states go up in one upload."""
        self.later.append((len(self.pending), self.cols, step, t, pairs))
        return self._take([step], [t], None, _LATER)[0]

    def resolve(self):
        """The pairs of the rows :meth:`reserve_later` took, asked for in step order; their
        states uploaded at once (one copy a block, where one a row had cost a GPU run's host
        ~0.2-0.4 ms at N = 8192, ``git show aa99969:docs/RUN_OVERHEAD.md``); the rows' energies set."""
        later = self.later
        if not later:
            return
        got = [pairs(k, t) for _, _, k, t, pairs in later]      # (an interrupt here: kept)
        K = self.K
        if self.xp is np:
            states = [np.ascontiguousarray(phi[:K]) for _, phi in got]
        else:       # (complex once: as reserve's, the same values and products)
            parts = [np.asarray(phi[:K]) for _, phi in got]
            states = list(self.up(parts).reshape(len(parts), *parts[0].shape).astype(np.complex128))
        for (ip, ib, k, t, _), (E, _), phit in zip(later, got, states):
            self.pending_E[ip] = np.asarray(E[:K])
            self.phis[ib] = phit
        self.later = []

    def reserve_plain(self, steps, dt):
        """The slots of rows at ``steps`` (times step dt) without H(t)'s states, as
        :meth:`reserve` gives them one at a time; never the block's last (a save point:
        :meth:`Observables.next_point`)."""
        if self.cols + len(steps) >= self.M:
            raise RuntimeError(f"{len(steps)} rows tapped into a block with {self.M - self.cols} free")
        return self._take(steps, [k * dt for k in steps], self._no_energies, None)

    def _take(self, steps, ts, Et, phit):
        """The next slots, for rows at ``steps`` (times ``ts``), each with the energies
        ``Et`` and H(t)'s states ``phit`` (None: none)."""
        c, m = self.cols, len(steps)
        self.cols += m
        self.ts += ts
        self.pending += steps
        self.pending_t += ts
        self.pending_E += [Et] * m
        self.also += [phit is not None] * m
        self.phis += [phit] * m
        return self.slots[c:c + m]

    def drop_after(self, step):
        """The block's rows past ``step`` forgotten (reserved, never filled: a run that
        failed before it reached them)."""
        while self.cols and self.pending and self.pending[-1] > step:
            self.cols -= 1
            for rows in (self.ts, self.pending, self.pending_t, self.pending_E, self.also, self.phis):
                rows.pop()
        self.later = [r for r in self.later if r[0] < len(self.pending)]

    def _measure(self):
        """The filled rows of the block measured (as the columns of its transpose), each at
        its time (rows past them hold older states: measured and dropped); their
        amplitudes in H(t)'s states (:meth:`_amplitudes`)."""
        self.resolve()
        m = self.cols
        if not m:
            return
        ts = self.ts + [self.ts[-1]] * (self.M - m)
        r = self.tblock.raw(None, self.buf.T, times=ts)
        self.done.append((r["sums"][:, :m], r["amps"][:, :m], self._amplitudes(m)))
        self.cols, self.ts, self.phis = 0, [], []

    def _amplitudes(self, m):
        """<phi_n(t)|psi> (K x rows) of the block's first ``m`` rows that have H(t)'s states,
        in order: one product for each run of consecutive rows with the same states (a
        static molecule's: one a block, where a product a row cost ~60 us of a GPU loop's
        host time at N = 500, small_run_parts_h200x1_20261129T1429_atom_hhg.txt), by
        :attr:`_product`: a row's bits do not depend on its run's length or its place."""
        out, i, phis = [], 0, self.phis
        while i < m:
            k = i + 1
            while k < m and phis[k] is phis[i]:
                k += 1
            if phis[i] is not None:     # (a flush or a block's end decides the runs)
                out.append(self._product(phis[i], self.buf[i:k]))
            i = k
        return out

    def take(self):
        """The pending rows, finished on the host, in order."""
        return self.finish(self.start())

    def start(self):
        """The pending rows' sums concatenated on the device and their copy to the host
        started (no wait): a handle for :meth:`finish`."""
        from mgemm.arrays import HostCopy
        xp = self.xp
        self._measure()
        pend = (self.pending, self.pending_t, self.pending_E)
        self.pending, self.pending_t, self.pending_E = [], [], []
        also, self.also = self.also, []
        done, self.done = self.done, []
        cols = {"sums": xp.concatenate([d[0] for d in done], axis=1),
                "amps": xp.concatenate([d[1] for d in done], axis=1)}
        due = [i for i, a in enumerate(also) if a]
        if due:
            amps = xp.concatenate([a for d in done for a in d[2]], axis=1)     # K x rows
            cols["also"] = xp.ascontiguousarray(amps.T)
        return pend, due, HostCopy(cols)

    def finish(self, handle):
        """The rows of a :meth:`start` handle, finished on the host, in order, as columns
        (name -> array, a row each along the first axis; "_edge": the norm near the walls)."""
        pend, due, copy = handle
        c = copy.result()
        return self.columns(pend, due, c)

    def columns(self, pend, due, c):
        """The columns of rows ``pend`` (their steps, times and E_n(t), three lists) from their
        host arrays ``c``: "sums" (9, S), "amps" (K, S) and, for the rows ``due`` (indices)
        with populations in H(t)'s states, "also" (len(due), K) (:meth:`finish`'s)."""
        steps, ts, Es = pend
        sums = np.ascontiguousarray(c["sums"].T)[:, :, None]               # (S, 9, 1)
        obs = self.block.finish(ts, {"sums": sums, "amps": c["amps"].T[:, :, None]})
        Pt = np.full((len(steps), self.K), np.nan)
        if due:
            Pt[due] = np.abs(c["also"] * self.dx) ** 2
        E = np.full((len(steps), self.K), np.nan)       # (the NaN row where a row has none)
        has = [i for i, e in enumerate(Es) if e is not self._no_energies]
        if has:
            E[has] = np.array([Es[i] for i in has])
        cols = {name: v[:, 0] for name, v in obs.items()}
        cols.update({"step": np.array(steps), "t": np.array(ts, dtype=float),
                     "populations_ht": Pt, "energies_ht": E,
                     "n_mean": (Pt * np.arange(self.K)).sum(axis=1),
                     "_edge": sums[:, observables.SUM_INDEX["edge"], 0] * self.dx})
        return cols
