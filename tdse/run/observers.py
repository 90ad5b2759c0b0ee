"""What a run does each step besides stepping, as observers of :func:`tdse.run.loop.evolve`:
the observables (:class:`Observables`, every ``output.observables_every`` steps), the
snapshots (:class:`Snapshots`, every ``output.every`` steps and at the last), the
progress bar (:class:`Progress`).  Each writes to a writer (:mod:`tdse.run.snapshots`:
the HDF5 file, or memory); computing and writing are apart.  Atomic units.
"""
from __future__ import annotations

import collections
import concurrent.futures
import contextlib
import itertools
import os
import sys
import threading
import time
import warnings

import numpy as np

# cpu_count: the CPUs this process may run on, not less those busy (the load average lags
# by a minute and counts this run's own preparation; where another process keeps the spare
# CPU busy the worker shares it, costing the loop what the pairs would)
from mgemm.arrays import cpu_count, to_host

from ..options import blas_env
from ..model import observables, states
from ..model.potential import centre_positions
from ..model.states import DTYPE
from .loop import Observer

__all__ = ["Observables", "Snapshots", "Progress", "BoundaryWarning", "EDGE_NORM", "host_psi", "due"]

#: warn when more of the norm than this sits within 10 points of a wall (no absorber)
EDGE_NORM = 1e-6

#: psi on a GPU: a snapshot is written a few intervals later, from a copy started at its
#: step (:meth:`Snapshots.write`; False: each written at once -- a test's way to force that
#: branch)
DEFER_SNAPSHOTS = True

#: ... at most this many copies (and SNAPSHOT_BYTES_IN_FLIGHT of them) under way: the oldest
#: is finished (waited for) when one more would pass either; those whose copies have run are
#: finished at each snapshot, in order.  One (finished at the next snapshot) cut the host's
#: lead over the device to an interval at every snapshot (25 steps of h2plus_moving_large:
#: the loop waited there ~1 ms a snapshot, one H100, N = 8192,
#: benchmarks/archive/step_attrib.py); four, to 100 steps, where the stepper lets it run
#: ahead by up to graphs.RUN_AHEAD_SECONDS of the device's time (CUDA's queue stops it at
#: ~170 such steps)
SNAPSHOTS_IN_FLIGHT = 64
SNAPSHOT_BYTES_IN_FLIGHT = 64 << 20

#: the rows measured in blocks (:class:`_BlockRows`), and on a GPU the stepper writing psi
#: into its block's slot (:meth:`Observables.destination`): measured against the paths
#: without them and kept on; tests turn one off to check the paths agree
BLOCK_OBSERVABLES = STEP_INTO_ROWS = True

#: slots of the ring through which a GPU run's H(t) states are uploaded (:class:`_BlockRows`)
PAIRS_RING = 16

#: rows measured in blocks of up to this many states (:class:`_BlockRows`) on the CPU (a
#: row's cost there is its share of the block's passes, whatever the block's size)
TIME_BLOCK = 64

#: on a GPU, up to this many (a block's cost there is mostly its ~20 launches' host time,
#: ~1 ms on an H100's host: 15-19 us a row in blocks of 64), while the block's states stay
#: within TIME_BLOCK_BYTES
TIME_BLOCK_GPU = 512
TIME_BLOCK_BYTES = 1 << 26

#: H(t)'s eigenpairs go to a worker process (:class:`_Ahead`) when computing them in the
#: loop would take more than this many seconds of the run, on a machine of at least
#: AHEAD_MANY_CPUS CPUs (the process takes ~1.5 s to start on a GPU machine, on spare
#: CPUs, mostly while the run prepares (:func:`prewarm`); the loop computes them itself
#: meanwhile; a task then costs the loop ~0.2 ms).  On one H100's 16-core host (2026-11-26,
#: ``benchmarks/archive/cli_ahead_walls.py``, results in README) the 3-point N = 8192 run of
#: 10000 steps, populations every 250 -- 41 calls, 0.48 s in the loop, under the 0.5 s this
#: was -- took 4.71-4.96 s with the worker against 5.51-5.92 s without (5-point: 4.63-4.71
#: against 5.47-5.49 s)
AHEAD_MIN_SECONDS = 0.1

#: the same on a machine of fewer CPUs, where the worker's start and exit share the run's
#: cores: on 2 cores (N = 256, 3-point, populations every 10) a 4000-step run's eigenpairs,
#: 0.11 s in the loop, cost its wall 0.26 s more with the worker (1.80 s against 1.54 s);
#: 8000 steps (0.22 s) about broke even (2.64-2.70 s against 2.70-2.76 s)
AHEAD_MIN_SECONDS_FEW_CPUS = 0.5
AHEAD_MANY_CPUS = 4

#: the same for a thread (:func:`threaded`: the 3-point solver, LAPACK's dstemr called
#: without the GIL, :func:`tdse.model.states.stemr`), which costs nothing to start: the
#: loop then gives up only the solver's few NumPy calls a call (~30 us at N = 256)
AHEAD_MIN_SECONDS_THREAD = 0.02

#: the 3-point calls go to the thread only from this N; below it, as the other solvers'
#: calls, to worker processes on a machine of AHEAD_MANY_CPUS CPUs or more, and stay in the
#: loop on fewer (where they cost less than :func:`ahead_min_seconds`).  A window of calls
#: (:meth:`tdse.model.states.Tracker.window`) is ~15 NumPy calls on arrays of 16 x N x 4
#: between its GIL-free LAPACK calls, which wait for the loop's GIL.  N = 256, 3-point,
#: populations every 10 steps, 8000 steps in process with the windows
#: (``benchmarks/archive/observer_parts.py``): on 2 CPUs the observables took 1.75-1.79 s
#: with the pairs from a thread, 1.71-1.81 s from a process, 1.76-1.78 s in the loop (bare
#: 1.47-1.52 s; ``observer_parts_cpu2_20261126T0932.txt``); on an H100's 16-CPU host 3.61-3.67
#: / 3.30-3.36 / 3.37-3.38 s (bare 2.90-2.93 s; ``observer_parts_h100x1_20261126T0942.txt``).
#: At N = 8192 on GPU hosts the thread hides them (the loop waited 0.05 s for them against
#: 1.05 s in the loop: ``cli_ahead_walls``).  1024 between the two is a choice, not measured
THREAD_MIN_N = 1024

#: the thread's calls made together (Tracker.many; a window's calls are computed at its
#: first), between which it looks whether the run has ended
THREAD_BATCH = 4

#: tasks queued ahead in each worker
AHEAD_DEPTH = 4

#: worker processes at most for a stateless solver's calls (:func:`workers_for`): 3-point
#: at N = 8192 takes ~12-14 ms a call, more than 50 GPU steps of 0.16-0.19 ms.  Measured on
#: one H200's host (16 cores), populations every 50 steps, the loop's seconds with 1 / 2 /
#: 4 workers: 1.87 and 2.06 / 1.38 / 2.03, the machine's own noise larger than the effect
#: (benchmarks/results/ahead_probe_h200x1_20261124T1645_*): two, not more
AHEAD_WORKERS = 2

#: a task of the worker computes the pairs of this many seconds' calls at least (up to
#: AHEAD_CHUNK_MAX calls): a task costs the loop ~0.2 ms of its host time whatever it
#: computes (the executor's threads pickling and reading it; measured on 2 cores,
#: `benchmarks/archive/ipc_probe.py`), more than the tridiagonal solver at N = 256 (0.3 ms)
AHEAD_CHUNK_SECONDS = 0.005
AHEAD_CHUNK_MAX = 32


class BoundaryWarning(UserWarning):
    """psi reaches the box's walls, where it reflects (a run without an absorber)."""


def host_psi(state):
    """psi of ``state`` on the host (copied once per state, shared by the observers)."""
    h = getattr(state, "_host", None)
    if h is None:
        h = to_host(state.psi)
        state._host = h
    return h


def due(step, every, config):
    """Whether ``step`` is one to record at: every ``every`` steps, and the last."""
    return step % every == 0 or step == config.time.steps


class Observables(Observer):
    """One row of /observables every ``observables_every`` steps (and at the last step,
    and at step 0 of a new run): norm, <H>, <x>, <p>, acceleration, E(t), yield,
    autocorrelation, populations in the eigenstates of H(0) and of the molecular H(t),
    <n> (:class:`tdse.model.observables.Measure`)."""

    def __init__(self, plan, writer):
        cfg = plan.config
        K = cfg.output.populations
        self.config, self.writer = cfg, writer
        # the cadences as plain ints: after() runs every step (a config property each
        # recomputes a rounding: ~1 us a step at N = 256, where a step is ~0.2 ms)
        self._every, self._pop_every = cfg.output.observables_every, cfg.output.populations_interval
        self._last = cfg.time.steps
        self.measure = observables.Measure(cfg, plan.x, plan.states[:K], np.asarray(plan.psi0))
        self.moving = any(c.moving for c in cfg.potential.centres)
        self._static = None
        # moving centres: H(t)'s pairs tracked from one observation to the next (Davidson,
        # O(N K) a call, on the host: no synchronisation with the device's stepping); after
        # the first call, computed ahead in a worker process where that saves more than
        # AHEAD_MIN_SECONDS (:func:`ahead_wanted`, :class:`_Ahead`: the same pairs)
        self.tracker = states.Tracker(cfg, K) if self.moving else None
        self.ahead, self._ahead_asked = None, not self.moving
        # H(t)'s eigenpairs, for the closing note: seconds computing them, calls, and the
        # seconds the loop waited for them (all of the computing when not ahead)
        self.eigen_seconds, self.eigen_calls, self.eigen_wait = 0.0, 0, 0.0
        self.warned_edge = cfg.absorber is not None  # an absorber takes what reaches a wall
        # the rows measured TIME_BLOCK states at a time where psi lives (BlockMeasure, one
        # member; on a GPU kept there), handed to the writer when it writes to its file (its
        # before_write hook) and at the end: no synchronisation per observation, and a row
        # costs a share of a block's few array passes instead of a dozen calls of its own
        # (BLOCK_OBSERVABLES False, a test's switch: a row at a time by Measure, on the host)
        self.rows = None
        self._started = None           # the device rows whose copy to the host is under way
        # on the CPU, where a row costs a small step much (N = 256: 10-15 us against 0.2 ms),
        # the rows go to a worker process (:class:`_SharedRows`, :func:`offload_wanted`)
        self.remote, self._offloaded_rows, self._remote_stopped = None, 0, False
        self._offload_pool, self._plan = None, plan
        self.gpu = self._into = False
        if BLOCK_OBSERVABLES:
            self.rows = _BlockRows(plan, self.measure)
            self.gpu = self.rows.xp is not np
            # STEP_INTO_ROWS False (a test's switch): each psi copied into its slot
            self._into = self.gpu and STEP_INTO_ROWS
            hooks = getattr(writer, "before_write", None)
            if hooks is not None:
                hooks.append(self.hand_over)
            offload = getattr(plan, "observer_process", None)
            if offload is None:      # a plan not made by prepare(): decided here
                offload = offload_wanted(cfg, plan.backend.name, plan.backend.threads)
            if not self.gpu and offload:
                # the worker's task is sent at begin(): from there on the loop's end or
                # failure stops it (a task sent here and never stopped -- the run
                # interrupted before its loop -- held the process's exit, which waits for it)
                self._offload_pool = worker_pools(1)[0][0]
                self._ahead_asked = True       # the worker computes H(t)'s pairs itself

    def molecular_states(self, t):
        """Eigenpairs of the molecular H(t) (no field, no absorber); once when no centre
        moves."""
        cfg = self.config
        if self.moving:
            return self.tracker(t)
        if self._static is None:
            self._static = states.eigenstates(cfg, 0.0, cfg.output.populations)
        return self._static

    def begin(self, state):
        if self._offload_pool is not None and self.remote is None:
            try:
                self.remote = _SharedRows(self._plan, self.config.output.populations,
                                          self._offload_pool, self.tracker)
            except (OSError, concurrent.futures.BrokenExecutor) as e:
                # no shared memory to be had (/dev/shm full or absent), or the worker gone
                if isinstance(e, concurrent.futures.BrokenExecutor):
                    _drop_pool(self._offload_pool)            # the next run spawns another
                self._offload_pool = None
                why = "has no shared memory" if isinstance(e, OSError) else "cannot take the task"
                warnings.warn(f"the observables' worker process {why} ({e}): the run measures "
                              f"its observables itself", RuntimeWarning, stacklevel=3)
        if not state.resumed:
            self.record(state)

    def after(self, state):
        step = state.step
        if step % self._every == 0 or step == self._last:
            self.record(state)

    def destination(self, step):
        """Where psi(t_step) goes when its row is due and measured in a GPU's block
        (:class:`_BlockRows`): the block's next slot, which the step writes psi to -- one
        memcpy a step less (~3 us of a 130 us 3-point step at N = 8192 on an H100, the
        device's median time between steps with the copy, ``step_attrib_h100x1_*``)."""
        if self._into and (step % self._every == 0 or step == self._last):
            return self.rows.slots[self.rows.cols]
        return None

    def hand_over(self, final=False):
        """The writer is about to write to its file: the rows measured so far to it (on a
        GPU, unless ``final``, those whose copy began at its previous write, and the copy of
        the rest begun: the device is not waited for)."""
        self.flush(defer=self.gpu and not final, final=final)

    def with_populations(self, state) -> bool:
        """Whether this observation has the populations in H(t)'s eigenstates
        (``output.populations_every``; always at step 0, the first of a resumed run and
        the last)."""
        step = state.step
        return step % self._pop_every == 0 or step == self._last or state.resumed or step == 0

    def eigenpairs(self, state):
        """:meth:`molecular_states` at the state's time (from the worker when ahead), its
        seconds counted (:attr:`eigen_seconds`, :attr:`eigen_wait`).  After the first call
        (timed), the rest go to a worker process when :func:`ahead_wanted`."""
        t0 = time.perf_counter()
        solved = self.tracker.solved if self.tracker is not None else 0
        if self.ahead is not None:
            out = self.ahead(state.step, state.t)
            self.eigen_seconds = self.ahead.seconds
        elif not self._ahead_asked:      # (a moving run's: the others' is asked already)
            # the first call, before a worker may take the rest: t's own pairs alone (a
            # window's anchor and member: Tracker.single), not its whole window (the worker
            # computes windows; ~0.2 s of the loop at N = 8192)
            out = self.tracker.single(state.t)
            self.eigen_seconds += time.perf_counter() - t0
        else:
            out = self.molecular_states(state.t)
            self.eigen_seconds += time.perf_counter() - t0
        self.eigen_wait += time.perf_counter() - t0
        self.eigen_calls += 1
        if not self._ahead_asked:          # a call's seconds: the first's over the times it
            self._ahead_asked = True       # solved (a 3-point window: all of the window's)
            count = self.tracker.solved - solved if self.tracker is not None else 1
            self._maybe_ahead(state.step, (time.perf_counter() - t0) / max(1, count))
        return out

    def _maybe_ahead(self, step, seconds):
        """Start the worker for the calls after ``step`` when :func:`ahead_wanted` (the
        calls to come at ``seconds`` each)."""
        cfg = self.config
        every = cfg.output.populations_interval
        calls = (cfg.time.steps - step) // every + 1
        if calls > 1 and ahead_wanted(seconds * calls, threaded(self.tracker), cfg.run.eigen_workers):
            ahead = _Ahead(self.tracker, cfg.time.dt, cfg.time.steps, every)
            ahead.seconds, ahead.local_calls = self.eigen_seconds, max(self.eigen_calls, self.tracker.solved)
            ahead.start(ahead.following(step))
            self.ahead = ahead

    def end(self, state):
        self._close_ahead()
        try:
            self.flush()
        finally:
            self._close_remote()

    def fail(self, state, error):
        self._close_ahead()
        try:        # rows already measured reach the file, as they did one by one
            self.flush()
        except Exception:  # noqa: BLE001 -- the run's own error is the one to report
            pass
        finally:
            self._close_remote()

    def _close_ahead(self):
        if self.ahead is not None:
            self.ahead.close()
            self.eigen_seconds = self.ahead.seconds

    def _close_remote(self):
        """Stop the observables' worker; its H(t) pairs' seconds and calls counted."""
        if self.remote is not None:
            remote, self.remote = self.remote, None
            self._offloaded_rows += remote.rows
            stats = remote.close()
            if stats is not None:
                self.eigen_seconds += stats[0]
                self.eigen_calls += stats[1]
                for m in stats[2]:           # what the worker's tracker said, said here
                    warnings.warn(m, RuntimeWarning, stacklevel=3)

    def flush(self, defer=False, final=True):
        """The measured rows to the writer.  ``defer`` (a GPU): the rows whose copy began at
        the previous call are written and the copy of these only begun (no wait for the
        device: the snapshot observer writes a few intervals behind alike, :class:`Snapshots`)."""
        if self._started is not None:
            started, self._started = self._started, None
            self._write(self.rows.finish(started))
        if self.remote is not None and self.remote.pending:    # the worker's: the first rows
            try:
                cols = self.remote.take(self.rows, wait=final and not self._remote_stopped)
            except _WorkerStopped as e:
                self._take_over(e)
                cols = self.remote.take(self.rows, wait=False)
            self._write(cols)
        if self.rows is not None and self.rows.pending:        # the loop's (after a take-over)
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

    @property
    def offloaded_rows(self) -> int:
        """Rows measured by the observables' worker process (0: all in the loop)."""
        return self._offloaded_rows + (self.remote.rows if self.remote is not None else 0)

    def _take_over(self, error):
        """The observables' worker has stopped: said once; the rows it had not measured
        are measured here, as every row after them."""
        from .loop import State
        self._remote_stopped = True
        _drop_pool(self.remote.pool)          # the next run spawns another
        warnings.warn(f"{error}: the run measures its observables itself from here on",
                      RuntimeWarning, stacklevel=4)
        for step, t, psi, due_pairs in self.remote.rescue():
            st = State(step, t, psi)
            self.rows.record(step, t, psi, self.eigenpairs(st) if due_pairs else None)

    def record(self, state):
        cfg, t = self.config, state.t
        if self.remote is not None and not self._remote_stopped:
            try:
                self.remote.record(state.step, t, state.psi, self.with_populations(state))
                return
            except _WorkerStopped as e:
                self._take_over(e)
        molecular = self.eigenpairs(state) if self.with_populations(state) else None
        if self.rows is not None and self.rows.holds(state.psi):
            self.rows.record(state.step, t, state.psi, molecular)
            return
        psi = host_psi(state)
        self.writer.observe(step=state.step, **self.measure(t, psi, molecular))
        self._check_edge(observables.edge_norm(psi, cfg.grid.dx), t)

    def _check_edge(self, edge, t):
        if not self.warned_edge and edge > EDGE_NORM:
            self.warned_edge = True
            warnings.warn(f"at t = {t:.4g}, {edge:.3g} of the norm (more than {EDGE_NORM:g}) "
                          f"is within 10 grid points of a wall: it reflects there; `tdse "
                          f"converge` measures what a wider box changes (its box check); widen "
                          f"the box or add an [absorber]", BoundaryWarning, stacklevel=2)


def _spawn_safe() -> bool:
    """Whether a worker process may be spawned without running the user's script again:
    the run was started by ``tdse`` (``python -m tdse``, the console script, whose module is
    guarded), by pytest or the benchmarks, or from an interactive session (no main file).
    A script that calls :func:`tdse.simulate` at its top level is not, unless it guards it
    (``if __name__ == "__main__"``) and asks with the option ``run.eigen_workers = "on"``.  Nor is a daemonic
    process (a Dask worker's: it may not have children)."""
    import multiprocessing
    if multiprocessing.current_process().daemon:
        return False
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    if spec is not None and spec.name.split(".")[0] in ("tdse", "benchmarks", "pytest"):
        return True
    path = getattr(main, "__file__", None)
    return path is None or os.path.basename(path) in ("tdse", "tdse.exe", "pytest")


def ahead_wanted(seconds_left: float, thread: bool = False, mode: str = "auto") -> bool:
    """Whether to compute H(t)'s eigenpairs ahead in a worker (:class:`_Ahead`; ``thread``:
    a thread of this process, :func:`threaded`, else a worker process):
    ``mode`` (the option ``run.eigen_workers``) "on" always, "off" never, "auto" when computing them in the
    loop would take more than :func:`ahead_min_seconds` (a thread:
    :data:`AHEAD_MIN_SECONDS_THREAD`) of what is left of the run (``seconds_left``: the
    first call's time x the calls to come), the process may use two CPUs (:func:`cpu_count`)
    and, for a process, may spawn one (:func:`_spawn_safe`)."""
    if mode != "auto":
        return mode == "on"
    if thread:
        return seconds_left > AHEAD_MIN_SECONDS_THREAD and cpu_count() >= 2
    return seconds_left > ahead_min_seconds() and cpu_count() >= 2 and _spawn_safe()


def threaded(tracker) -> bool:
    """Whether ``tracker``'s calls run in a thread beside the loop rather than a worker
    process or the loop: the 3-point solver's, whose LAPACK calls hold no GIL (where
    SciPy's LAPACK table is reachable) -- no process to spawn, no pickling -- from N =
    :data:`THREAD_MIN_N`, on a machine of fewer than :data:`AHEAD_MANY_CPUS` CPUs (where
    a worker process would take a CPU from the run's BLAS).  The other solvers' Python and
    f2py calls hold it; and on a GPU machine's many CPUs the windows' NumPy calls between
    the LAPACK calls cost the loop more in a thread than two processes do: one H100, N =
    8192, 40000 steps, populations every 50, the loop 6.75 / 7.09 s with the thread, 6.39 /
    6.51 s with the processes, bare 5.56 s
    (``benchmarks/results/pairs_where_h100x1_20261126T1231_3point.txt``; N = 256 on an H100
    host: 3.61-3.67 against 3.30-3.36 s, ``observer_parts_h100x1_20261126T0942.txt``)."""
    return (not getattr(tracker, "iterative", True) and tracker.config.grid.stencil == 3
            and states._stemr_function() is not None and tracker.config.grid.n >= THREAD_MIN_N
            and cpu_count() < AHEAD_MANY_CPUS)


def ahead_min_seconds() -> float:
    """The eigenpairs' seconds in the loop above which a worker computes them:
    :data:`AHEAD_MIN_SECONDS`, or :data:`AHEAD_MIN_SECONDS_FEW_CPUS` on a machine of fewer
    than :data:`AHEAD_MANY_CPUS` CPUs."""
    return AHEAD_MIN_SECONDS if cpu_count() >= AHEAD_MANY_CPUS else AHEAD_MIN_SECONDS_FEW_CPUS


def calls_guess(config) -> tuple:
    """(calls, seconds each): H(t)'s eigenpairs a run of ``config`` will ask for, and a
    low guess of one call's time on one core (measured on 2 cores: the windows, 3-point
    0.3-0.5 us x N, 5-point 0.5-1 us x N, ``window_pairs_cpu2_*``; the DVR's dense solver up
    to N = 512 ~4e-8 N^2 s, Davidson beyond 2.6-5 us x N)."""
    o, n = config.output, config.grid.n
    calls = config.time.steps // o.populations_interval + 1
    if config.grid.stencil in (3, 5):
        return calls, (3e-7 if config.grid.stencil == 3 else 5e-7) * n
    return calls, (1.5e-8 * n * n if n <= states.DVR_DENSE_MAX else 2.5e-6 * n)


def workers_for(tracker) -> int:
    """Worker processes for ``tracker``'s calls: up to :data:`AHEAD_WORKERS` (a CPU left to
    the loop), for every solver -- each call depends on t alone (Davidson's start from
    their anchor's block, :class:`tdse.model.states.Tracker`), so workers may share them
    and give the loop's bits.  One H100, N = 8192, 5000 steps, populations every 50
    (``benchmarks/archive/davidson_workers.py``): 5-point loop 2.18-2.20 s with two against
    3.58-3.91 s with one (Davidson's ~35 ms a call against 50 steps of 0.2 ms); DVR, whose
    steps leave time for the calls, 41-44 s either way."""
    return max(1, min(AHEAD_WORKERS, cpu_count() - 1))


def prewarm(config, backend=None, threads=None):
    """Start the process's eigenpairs workers now (:func:`worker_pools`) when a run of
    ``config`` will want them (:func:`ahead_wanted` on :func:`calls_guess`), or one for its
    observables (:func:`offload_wanted` on ``backend``, "auto" taken as NumPy on a machine
    without GPUs): their start-up (~0.3 s on 2 cores, ~1.5 s on a GPU machine) then
    overlaps the run's preparation.  Whether the observables' worker is wanted (None where
    the backend is not known yet: ``auto`` on a GPU machine)."""
    if backend == "auto":
        from .backend import gpu_count
        backend = "numpy" if gpu_count() == 0 else None
    offload = None if backend is None else offload_start(config, backend, threads)
    if not offload and any(c.moving for c in config.potential.centres):
        calls, each = calls_guess(config)
        tracker = states.Tracker(config, config.output.populations)
        if calls > 1 and not threaded(tracker) and ahead_wanted(calls * each, False,
                                                                  config.run.eigen_workers):
            _prefetch(tracker, worker_pools(workers_for(tracker)))
    return offload


#: the first windows' pairs asked of the workers by :func:`prewarm`: [(key, run, tasks)]
_PREFETCH = []


def _prefetch_key(tracker, dt, steps, interval):
    c = tracker.config
    return (c.grid, c.potential, tracker.K, tuple(sorted(tracker.settings().items())), dt,
            steps, interval)


def _prefetch(tracker, pools):
    """Ask the workers, while the run prepares, for the pairs of its first windows (one a
    worker; the 3- and 5-point trackers': :attr:`tdse.model.states.Tracker.window_steps`)
    after step 0, which the loop computes itself: a window from scratch in a fresh worker
    took ~0.15 s at N = 8192 (5-point), which the loop waited for at its first due step.
    The run's :class:`_Ahead` takes them over (:func:`_take_prefetch`)."""
    span = tracker.window_steps
    c = tracker.config
    dt, steps, every = c.time.dt, c.time.steps, c.output.populations_interval
    if not span:
        return
    run = (os.getpid(), next(_RUN_IDS))
    begin = (c, tracker.K, tracker.settings())
    tasks = []
    for k, (pool, _) in enumerate(pools):
        group = [(s, s * dt) for s in range(max(every, k * span), min((k + 1) * span, steps), every)]
        if not group:
            break
        try:
            f = pool.submit(_worker_pairs, run, tuple(t for _, t in group), begin)
        except Exception:  # noqa: BLE001 -- a broken pool: the run's _Ahead finds it
            return
        tasks.append((k, group, f))
    _PREFETCH[:] = [(_prefetch_key(tracker, dt, steps, every), run, tasks)]


def _take_prefetch(tracker, dt, steps, interval):
    """The (run, tasks) :func:`_prefetch` asked for this run's tracker, once; else None."""
    if _PREFETCH and _PREFETCH[0][0] == _prefetch_key(tracker, dt, steps, interval):
        _, run, tasks = _PREFETCH.pop()
        return run, tasks
    _PREFETCH.clear()
    return None


def offload_start(config, backend, threads=None) -> bool:
    """:func:`offload_wanted`, and where it is, the worker started: whether it is."""
    if offload_wanted(config, backend, threads):
        worker_pools(1)
        return True
    return False


#: the process's eigenpairs workers: [(pool of one process, future done when it has started)]
_POOLS = []


def worker_pools(n=1):
    """The process's first ``n`` eigenpairs workers, each a pool of one spawned process
    (so that a run's tasks can be sent to a given one, which holds its tracker), spawned
    once and kept for the runs that follow in this process (a fresh one after a failure):
    [(pool, ready future)].  Each on one BLAS thread (the solvers' own count,
    :data:`tdse.model.states.EIGEN_BLAS_THREADS`: the same bits wherever a call runs)."""
    import multiprocessing

    from . import ahead_child
    from .interrupts import deferred
    while len(_POOLS) < n:
        # an interrupt is raised after the spawn, not in it: cut between the new process and
        # its start-up data, it left that process failing, its traceback on the terminal
        with deferred(), blas_env(states.EIGEN_BLAS_THREADS):
            pool = concurrent.futures.ProcessPoolExecutor(
                1, mp_context=multiprocessing.get_context("spawn"), initializer=ahead_child.start,
                initargs=(states.EIGEN_BLAS_THREADS,))
            _POOLS.append((pool, pool.submit(_worker_ready)))      # spawns the process now
        import atexit
        # at the exit, waited for: a process that exits while its worker is still starting
        # (a run interrupted during its set-up) left it failing on its queue, its traceback
        # on the terminal
        atexit.register(_drop_pool, pool, wait=True)     # before the interpreter's teardown
    return _POOLS[:n]


#: the process's eigenpairs thread: [(pool of one thread, a future already done)]
_THREADS = []


def thread_pool():
    """The process's eigenpairs thread (:func:`threaded` trackers), made at first use and
    kept for the runs that follow: [(pool, ready future)] as :func:`worker_pools` gives."""
    if not _THREADS:
        pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="tdse-eigenpairs")
        ready = concurrent.futures.Future()
        ready.set_result(True)
        _THREADS.append((pool, ready))
    return list(_THREADS)


def _thread_pairs(tracker, times, stop):
    """H(t)'s pairs by ``tracker`` (its own, not the loop's) at each of ``times`` in a
    thread: ([(E, phi), ...], seconds, no warnings -- the 3-point solver says none, and
    ``warnings.catch_warnings`` is not safe beside the loop's thread).  Cut short once
    ``stop`` is set (the run has ended: a task under way would hold up the process's exit,
    which waits for its threads: 0.35 s measured with 12 ms calls at N = 8192)."""
    t0 = time.perf_counter()
    pairs = []
    for i in range(0, len(times), THREAD_BATCH):    # a few calls at once (Tracker.many)
        if stop.is_set():
            break
        pairs += tracker.many(times[i:i + THREAD_BATCH])
    return pairs, time.perf_counter() - t0, []


def _drop_pool(pool, wait=False):
    """Forget a worker: a failed one (the next run spawns another), or all at the process's
    exit (``wait``: a task it is running finishes; those queued are dropped)."""
    _POOLS[:] = [e for e in _POOLS if e[0] is not pool]
    _THREADS[:] = [e for e in _THREADS if e[0] is not pool]
    pool.shutdown(wait=wait, cancel_futures=True)


#: the worker process's trackers (:func:`_worker_pairs`), one per
#: run (runs of one process, e.g. in threads, may share the worker), the newest kept
_WORKER = {}
WORKER_RUNS = 8
_RUN_IDS = itertools.count(1)


def _worker_ready():
    """Whether the worker has started, and without CuPy (:mod:`tdse.run.ahead_child`)."""
    return "cupy" not in sys.modules or sys.modules["cupy"] is None


def _worker_pairs(run, times, begin=None):
    """H(t)'s pairs in the worker for run ``run`` at each of ``times``, in order: ([(E,
    phi), ...], seconds, the warnings' texts).  ``begin`` (sent with the run's calls until
    one has come back; the first to arrive is used): (config, count, tracker settings) --
    the run's own :class:`tdse.model.states.Tracker` with the loop's
    settings, so that it computes the pairs the loop would (a call's pairs depend on t
    alone: the tracker's anchors)."""
    runs = _WORKER.setdefault("runs", {})          # run -> its tracker, the newest last
    if begin is not None and run not in runs:
        config, count, settings = begin
        tracker = states.Tracker(config, count, **settings)
        runs[run] = tracker
        while len(runs) > WORKER_RUNS:                 # the oldest runs' trackers dropped
            runs.pop(next(iter(runs)))
    if run not in runs:
        raise RuntimeError(f"the worker holds no tracker for run {run}")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t0 = time.perf_counter()
        pairs = [runs[run](t) for t in times]
        return pairs, time.perf_counter() - t0, [str(w.message) for w in caught]


class _Ahead:
    """H(t)'s eigenpairs at the steps where the populations are due, computed ahead of the
    loop in worker processes (:func:`worker_pools`: :mod:`concurrent.futures`, spawned): they
    depend on t alone (the centres' paths are given; each call of a tracker starts from its
    anchor time's pairs, :class:`tdse.model.states.Tracker`), so a worker's tracker with the
    loop's settings gives the pairs the loop would compute, bit for bit, while the solver
    runs on a spare CPU beside the stepping.  Several workers share the calls
    (:func:`workers_for`).  A task computes the pairs of several due
    steps where one call is short (:data:`AHEAD_CHUNK_SECONDS`: a task's own cost to the
    loop is ~0.2 ms), and at most :data:`AHEAD_DEPTH` tasks a worker are queued, in step
    order (so the steps passed unasked are at the front); a step not foreseen is a task of
    its own, taken at once; while the worker starts (~0.3 s of imports on 2 cores, ~1.5 s
    on a GPU machine; :func:`prewarm` starts it during the run's preparation) the loop
    computes them itself.
    A process, not a thread, for Davidson and the dense and banded solvers: their Python
    and SciPy's f2py LAPACK calls hold the GIL (threads were measured no faster: H100,
    3-point N = 8192 with SciPy's tridiagonal solver, 4.15 / 1.97 s with them, 2.87 / 2.27
    without, populations every 50 / 250 steps).  The 3-point solver calls LAPACK without the
    GIL (:func:`tdse.model.states.stemr`): its calls go to a thread (:func:`threaded`), with
    a tracker of its own (its calls are independent of each other).  A worker that fails
    (its process killed) leaves the rest to the loop, said once."""

    def __init__(self, tracker, dt, steps, interval):
        self.tracker, self.dt, self.steps, self.interval = tracker, dt, steps, interval
        # a thread where the solver holds no GIL (:func:`threaded`), with a tracker of its own
        self.thread = states.Tracker(tracker.config, tracker.K, **tracker.settings()) \
            if threaded(tracker) else None
        self.stop = threading.Event()     # set by close(): the thread's task stops
        self.workers = thread_pool() if self.thread is not None else \
            worker_pools(workers_for(tracker))     # [(pool, ready)]
        self.run = (os.getpid(), next(_RUN_IDS))
        pre = None if self.thread is not None else _take_prefetch(tracker, dt, steps, interval)
        # the tracker's state goes with the calls until one has come back (a task: queued,
        # not written to the worker's pipe by the loop, which would block it while the
        # worker starts: 1.4 s measured on a GPU machine with it among the initargs)
        self.begin = (tracker.config, tracker.K, tracker.settings())
        self.answered = set()       # the workers that have answered (hold the tracker)
        self.worker_of = {}         # future -> the worker it went to
        self.futures = {}           # step -> (future, index in its task), in submission order
        self.waiting = {}           # future -> how many of its steps are in .futures
        self.results = {}           # future -> its task's pairs, once read
        self.next = None            # the next step to submit (None: none left)
        self.seconds = 0.0          # spent computing, in the worker
        self.local_calls = 0        # calls computed in the loop (their seconds in .seconds)
        self.chunk = 1              # calls a task (:meth:`_size`)
        self.broken = False
        self.from_worker = 0        # calls the worker answered
        if pre is not None:          # the first windows, asked for while the run prepared
            self.run, tasks = pre
            for k, group, f in tasks:
                self.worker_of[f] = k
                self.waiting[f] = len(group)
                for i, (s, _) in enumerate(group):
                    self.futures[s] = (f, i)

    @property
    def ready(self):
        """Whether a worker has started (a future: done, or its exception)."""
        done = [r for _, r in self.workers if r.done()]
        return done[0] if done else self.workers[0][1]

    def _submit(self, steps_times):
        """A task to the started worker with the fewest waiting."""
        k = min((i for i, (_, r) in enumerate(self.workers) if r.done()),
                key=lambda i: sum(w == i for w in self.worker_of.values()))
        times = tuple(t for _, t in steps_times)
        if self.thread is not None:
            f = self.workers[k][0].submit(_thread_pairs, self.thread, times, self.stop)
            self.worker_of[f] = k
            return f
        begin = None if k in self.answered else self.begin
        f = self.workers[k][0].submit(_worker_pairs, self.run, times, begin)
        self.worker_of[f] = k
        return f

    def _size(self, seconds, calls):
        """The calls a task, from ``calls`` calls that took ``seconds``."""
        if calls > 0:
            per_call = max(seconds / calls, 1e-9)
            self.chunk = int(min(AHEAD_CHUNK_MAX, max(1, np.ceil(AHEAD_CHUNK_SECONDS / per_call))))

    def following(self, s):
        """The first step after ``s`` with populations (a multiple of the interval, or the
        last), None past the last."""
        if s >= self.steps:
            return None
        return min((s // self.interval + 1) * self.interval, self.steps)

    def start(self, s):
        """Begin with step ``s`` (None: nothing to foresee; the steps asked for already,
        :func:`prewarm`'s, passed over)."""
        while s is not None and s in self.futures:
            s = self.following(s)
        self.next = s
        self._size(self.seconds, self.local_calls)

    def _fill(self, step):
        """Queue the due steps from ``step`` on, :attr:`chunk` a task, up to
        :data:`AHEAD_DEPTH` tasks (once the worker has started)."""
        if self.broken or not self.ready.done():
            return
        if self.ready.exception() is not None:
            return self._break(self.ready.exception())
        while self.next is not None and self.next < step:
            self.next = self.following(self.next)
        started = sum(r.done() and r.exception() is None for _, r in self.workers)
        span = self.tracker.window_steps      # a task ends at a window's end (None: anywhere)
        while self.next is not None and len(self.waiting) < AHEAD_DEPTH * started:
            group = []
            while self.next is not None and (len(group) < self.chunk or (
                    span and self.next // span == group[-1][0] // span)):
                group.append((self.next, self.next * self.dt))
                self.next = self.following(self.next)
            try:
                f = self._submit(group)
            except Exception as e:  # noqa: BLE001 -- the pool broke: the loop computes the rest
                return self._break(e)
            for i, (s, _) in enumerate(group):
                self.futures[s] = (f, i)
            self.waiting[f] = len(group)

    def _break(self, error):
        """The worker failed: said once, the rest computed in the loop."""
        if not self.broken:
            self.broken = True
            warnings.warn(f"the worker computing H(t)'s eigenpairs ahead failed ({type(error).__name__}: "
                          f"{str(error)[:120]}); the loop computes them", RuntimeWarning, stacklevel=4)
            self.close()
            for pool, _ in self.workers:
                _drop_pool(pool)

    def _local(self, t):
        """The pairs computed in the loop (the worker is starting, or failed): while it
        starts, the one call alone (:meth:`tdse.model.states.Tracker.single`: its window's
        anchor and its own member, the same bits -- the worker computes whole windows), after
        a failure by windows."""
        t0 = time.perf_counter()
        out = self.tracker(t) if self.broken else self.tracker.single(t)
        self.seconds += time.perf_counter() - t0
        self.local_calls += 1
        self._size(self.seconds, self.local_calls)
        return out

    def _read(self, f):
        """A task's pairs (waited for), its seconds and warnings taken once."""
        if f not in self.results:
            pairs, seconds, said = f.result()
            self.seconds += seconds
            self._size(seconds, len(pairs))
            for m in said:               # the worker's tracker says each thing once
                warnings.warn(m, RuntimeWarning, stacklevel=4)
            self.results[f] = pairs
            self.answered.add(self.worker_of.get(f))
        return self.results[f]

    def _drop(self, f):
        """One step of task ``f`` taken or passed; the task forgotten once no step waits on
        it (cancelled if not started)."""
        left = self.waiting.pop(f, 1) - 1
        if left > 0:
            self.waiting[f] = left
        else:
            self.results.pop(f, None)
            self.worker_of.pop(f, None)
            f.cancel()

    def __call__(self, step, t):
        """The pairs at ``step`` (time ``t``): the worker's result, waited for; computed in
        the loop while the worker is still starting (its imports: ~0.3 s)."""
        while self.futures and next(iter(self.futures)) < step:   # foreseen, not asked: dropped
            self._drop(self.futures.pop(next(iter(self.futures)))[0])
        self._fill(step)
        entry = self.futures.pop(step, None)
        if entry is None or t != step * self.dt:           # not foreseen, or not started
            if entry is not None:
                self._drop(entry[0])
            if self.broken or not self.ready.done():
                return self._local(t)
            try:
                entry = (self._submit([(step, t)]), 0)
                self.waiting[entry[0]] = 1
            except Exception as e:  # noqa: BLE001 -- the pool broke
                self._break(e)
                return self._local(t)
        f, i = entry
        try:
            E, phi = self._read(f)[i]
        except Exception as e:  # noqa: BLE001 -- a broken worker: the loop computes the rest
            self._break(e)
            return self._local(t)
        self._drop(f)
        self.from_worker += 1
        self._fill(step + 1)
        return E, phi

    def close(self):
        """Stop: nothing of this run's queued is started (a call under way finishes on its
        own; the worker stays for the process's next run; the thread's task stops at its
        next call)."""
        self.stop.set()
        for f, _ in self.futures.values():
            f.cancel()
        self.futures.clear()
        self.waiting.clear()
        self.results.clear()
        self.worker_of.clear()


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
            max(TIME_BLOCK, min(TIME_BLOCK_GPU, TIME_BLOCK_BYTES // (16 * cfg.grid.n)))
        self.M = max(1, min(cap, rows))
        self.tblock = observables.BlockMeasure(
            [cfg] * self.M, plan.x, np.broadcast_to(phi0[None], (self.M, *phi0.shape)),
            psi0[:, None], xp)
        # the states a row each (a contiguous copy a state: one memcpy on a GPU, where a
        # column of an N x M block took a strided-copy kernel and ~20 us of CuPy's indexing)
        # (zeros: the rows past those filled are measured with them, then dropped)
        self.buf = xp.zeros((self.M, cfg.grid.n), dtype=np.complex128)
        self.slots = [self.buf[i] for i in range(self.M)]     # the row views, made once
        self.cols, self.ts = 0, []     # rows of buf filled, and their times
        self.done = []                 # (sums (9, m), amps (K, m)) of measured blocks, on the device
        self.K = cfg.output.populations
        # H(t)'s states, a call's upload each: a slot is reused only after its copy ran, so
        # the ring bounds the host's lead over the device to ring x populations_every steps
        self.up = PinnedUpload(xp, ring=PAIRS_RING) if xp is not np else np.asarray
        self._phit = None            # (host array, device copy) of the last H(t) states
        self.pending, self.also = [], []   # (step, t, E_n(t)) per row; <phi_n(t)|psi> or None
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
        also = None
        if molecular is None:
            Et = self._no_energies
        else:
            Et, phi_all = molecular
            Et = np.asarray(Et[:self.K])
            if self._phit is None or self._phit[0] is not phi_all:  # new eigenpairs: one upload
                phit = np.ascontiguousarray(phi_all[:self.K])
                dev = self.up(phit.ravel()).reshape(phit.shape)
                # complex once an upload: the product with psi would convert them at each
                # row (what matmul does with real @ complex: the same values, the same bits),
                # ~0.17 ms of the loop's host time a row at N = 8192 on an H100's host
                self._phit = (phi_all, dev if self.xp is np else dev.astype(np.complex128))
            also = self._phit[1] @ psi
        row = self.slots[self.cols]
        if psi is row:
            pass               # the step wrote it here (Observables.destination): no copy
        elif self.xp is not np and psi.flags.c_contiguous and psi.dtype == row.dtype:
            row.data.copy_from_device_async(psi.data, row.nbytes)     # queued on the stream
        else:
            row[...] = psi
        self.cols += 1
        self.ts.append(t)
        self.pending.append((step, t, Et))
        self.also.append(also)
        if self.cols == self.M:
            self._measure()

    def _measure(self):
        """The filled rows of the block measured (as the columns of its transpose), each at
        its time (rows past them hold older states: measured and dropped)."""
        m = self.cols
        if not m:
            return
        ts = self.ts + [self.ts[-1]] * (self.M - m)
        r = self.tblock.raw(None, self.buf.T, times=ts)
        self.done.append((r["sums"][:, :m], r["amps"][:, :m]))
        self.cols, self.ts = 0, []

    def take(self):
        """The pending rows, finished on the host, in order."""
        return self.finish(self.start())

    def start(self):
        """The pending rows' sums concatenated on the device and their copy to the host
        started (no wait): a handle for :meth:`finish`."""
        from mgemm.arrays import HostCopy
        xp = self.xp
        self._measure()
        pend, self.pending = self.pending, []
        also, self.also = self.also, []
        done, self.done = self.done, []
        cols = {"sums": xp.concatenate([d[0] for d in done], axis=1),
                "amps": xp.concatenate([d[1] for d in done], axis=1)}
        due = [i for i, a in enumerate(also) if a is not None]
        if due:
            cols["also"] = xp.stack([also[i] for i in due])
        return pend, due, HostCopy(cols)

    def finish(self, handle):
        """The rows of a :meth:`start` handle, finished on the host, in order, as columns
        (name -> array, a row each along the first axis; "_edge": the norm near the walls)."""
        pend, due, copy = handle
        c = copy.result()
        return self.columns(pend, due, c)

    def columns(self, pend, due, c):
        """The columns of rows ``pend`` ((step, t, E_n(t)) each) from their host arrays ``c``:
        "sums" (9, S), "amps" (K, S) and, for the rows ``due`` (indices) with populations in
        H(t)'s states, "also" (len(due), K) -- :meth:`finish`'s, and the observables
        worker's (:class:`_SharedRows`)."""
        ts = [t for _, t, _ in pend]
        sums = np.ascontiguousarray(c["sums"].T)[:, :, None]               # (S, 9, 1)
        obs = self.block.finish(ts, {"sums": sums, "amps": c["amps"].T[:, :, None]})
        Pt = np.full((len(pend), self.K), np.nan)
        if due:
            Pt[due] = np.abs(c["also"] * self.dx) ** 2
        cols = {name: v[:, 0] for name, v in obs.items()}
        cols.update({"step": np.array([p[0] for p in pend]), "t": np.array(ts, dtype=float),
                     "populations_ht": Pt, "energies_ht": np.array([p[2] for p in pend]),
                     "n_mean": (Pt * np.arange(self.K)).sum(axis=1),
                     "_edge": sums[:, 8, 0] * self.dx})
        return cols


#: a CPU run's observables (the rows, H(t)'s pairs and populations) are measured in a
#: worker process beside the loop (:class:`_SharedRows`) when measuring them in the loop
#: would take more than this many seconds (:func:`offload_wanted`; a row ~6e-8 N s, a pair
#: :func:`calls_guess`'s).  On 2 cores at N = 256 (a 0.2 ms step, populations every 10
#: steps, 8000 steps) they cost the loop 17 / 22 / 33 % of its steps (3-point / 5-point /
#: DVR), against 4 / 6 / 0 % with the worker (``benchmarks/archive/observer_parts.py``); the
#: worker's start (~0.3 s of a spare CPU) overlaps the run's preparation and first steps,
#: whose rows the loop measures itself until it has begun
OFFLOAD_MIN_SECONDS = 0.1

#: ... only up to this N: beyond it the step outweighs a row by so much that the loop's
#: own measuring costs it a few per cent (N = 2048 on 2 cores: 1.04 x the bare step with
#: every observable each step, ``run-overhead_cpu2_20261126T095041.json``)
OFFLOAD_MAX_N = 1024

#: rows of the ring that the loop fills and the worker measures, in blocks of TIME_BLOCK
OFFLOAD_RING_BLOCKS = 4

#: rows wait in the loop's memory up to this many bytes while the worker starts (~0.3 s on
#: 2 cores, ~1.5 s on a GPU machine's host) or is behind
OFFLOAD_BACKLOG_BYTES = 1 << 28

# the ring's control words (int64): rows written by the loop, rows measured by the worker,
# the row up to which the loop asks it to measure now (a partial block), stop, and
# whether the worker has begun
_W, _D, _F, _STOP, _ALIVE = range(5)


def offload_wanted(config, backend, threads=None) -> bool:
    """Whether a run of ``config`` measures its observables in a worker process
    (:class:`_SharedRows`): the option ``run.observer_process`` "on" wherever it can (a
    script's run guarded by ``if __name__ == "__main__"``), "off" never; by default
    ("auto") on the CPU (``backend`` "numpy"), up to N = :data:`OFFLOAD_MAX_N`, when a CPU
    is spare beside the run's BLAS threads (:func:`tdse.run.backend.usable_cpus`), the
    process may spawn one (:func:`_spawn_safe`) and the rows and pairs would cost the loop
    more than :data:`OFFLOAD_MIN_SECONDS` (a row ~6e-8 N s, :func:`calls_guess` a pair).
    x86-64 only: the loop and the worker hand rows over by plain loads and stores to shared
    memory, whose order x86's memory model keeps (a weaker one, ARM's, would need fences
    that Python does not give)."""
    import platform
    mode = config.run.observer_process
    import multiprocessing
    if mode == "off" or backend != "numpy" or platform.machine().lower() not in ("x86_64", "amd64") \
            or multiprocessing.current_process().daemon:      # a daemon may have no children
        return False
    if mode == "on":
        return True
    if not _spawn_safe():
        return False
    from .backend import blas_threads, usable_cpus
    n, o = config.grid.n, config.output
    if n > OFFLOAD_MAX_N or usable_cpus() <= blas_threads(config, threads):
        return False
    rows = config.time.steps // o.observables_every + 1
    seconds = rows * 6e-8 * n
    if any(c.moving for c in config.potential.centres):
        calls, each = calls_guess(config)
        seconds += calls * each
    return seconds > OFFLOAD_MIN_SECONDS


class _SharedRows:
    """The loop's side of a run's observables measured in a worker process (one of
    :func:`worker_pools`, spawned during the run's preparation): a ring of R rows of psi in
    shared memory (:mod:`multiprocessing.shared_memory`), with each row's step, time and
    whether its populations in H(t)'s states are due; the worker (:func:`_observe_task`)
    measures them by the loop's own code (a :class:`_BlockRows`; H(t)'s pairs by a
    :class:`tdse.model.states.Tracker` with the loop's settings: they depend on t alone) a
    block of TIME_BLOCK rows at a time and writes each row's sums, amplitudes,
    <phi_n(t)|psi> and E_n(t) back beside it; the loop finishes them
    (:meth:`_BlockRows.columns`) when it writes.  A row costs the loop one copy of psi and
    two stores.  While the worker starts (or falls behind) and the ring is full, rows wait
    in the loop's memory (a backlog, up to :data:`OFFLOAD_BACKLOG_BYTES`; beyond, the loop
    waits); the loop waits for the worker only there and at the end.  A worker that stops
    (its process killed) stops the run with that error, its file resumable."""

    def __init__(self, plan, K, pool, tracker):
        from multiprocessing import shared_memory
        cfg = plan.config
        self.n, self.K, self.M = cfg.grid.n, K, TIME_BLOCK
        self.R = OFFLOAD_RING_BLOCKS * self.M
        sizes = _ring_sizes(self.R, self.n, K)
        self.shm = shared_memory.SharedMemory(create=True, size=int(sum(sizes)))
        import weakref
        self._gone = weakref.finalize(self, _unlink, self.shm)
        self.ctrl, self.meta, self.ring, self.out = _ring_views(self.shm.buf, self.R, self.n, K)
        self.ctrl[:] = 0
        self.written = self.taken = 0
        self.got = []                  # (meta, out) copies of the rows taken, in order
        self.backlog = collections.deque()    # (step, t, psi copy, due) not yet in the ring
        self.backlog_max = max(self.R, OFFLOAD_BACKLOG_BYTES // (16 * self.n))
        spec = (cfg, np.asarray(plan.x), np.asarray(plan.states[:K]), np.asarray(plan.psi0),
                K, self.R, None if tracker is None else tracker.settings())
        self.pool = pool
        self.future = pool.submit(_observe_task, self.shm.name, spec)

    def _check(self):
        if self.future.done():
            err = self.future.exception()
            raise _WorkerStopped("the observables' worker process stopped" +
                                 (f" ({err!r})" if err else " early"))

    def rescue(self) -> list:
        """The worker has stopped: the rows it had not measured, (step, t, psi, due) each,
        in order, taken back (those it had are kept for :meth:`take`)."""
        done = int(self.ctrl[_D])
        self._collect(done)
        rest = [(int(self.meta[r % self.R, 0]), float(self.meta[r % self.R, 1]),
                 self.ring[r % self.R].copy(), bool(self.meta[r % self.R, 2]))
                for r in range(done, self.written)] + list(self.backlog)
        self.written = done
        self.backlog.clear()
        return rest

    def _wait(self, upto):
        """Until the worker has measured the rows before ``upto`` (asked to, a partial block
        included)."""
        ctrl = self.ctrl
        if ctrl[_D] >= upto:
            return
        ctrl[_F] = max(int(ctrl[_F]), upto)
        while ctrl[_D] < upto:
            self._check()
            time.sleep(2e-5)

    def _put(self, step, t, psi, due_pairs):
        i = self.written % self.R
        self.ring[i] = psi
        self.meta[i] = (step, t, 1.0 if due_pairs else 0.0)
        self.written += 1
        self.ctrl[_W] = self.written                    # after the row (x86's store order)

    def _drain(self):
        """The rows the worker has measured copied out, and the backlog moved into the
        space that frees (no wait)."""
        self._collect(int(self.ctrl[_D]))
        while self.backlog and self.written - self.taken < self.R:
            self._put(*self.backlog.popleft())

    def record(self, step, t, psi, due_pairs):
        if self.backlog or self.written - self.taken >= self.R:
            self._drain()
            if self.backlog or self.written - self.taken >= self.R:
                self._check()                 # behind, or stopped
                if len(self.backlog) >= self.backlog_max:     # the worker's oldest block
                    self._collect(self.taken + self.M)
                    self._drain()
                self.backlog.append((step, t, np.array(psi), due_pairs))
                return
        self._put(step, t, psi, due_pairs)

    def _collect(self, upto):
        """The rows up to ``upto`` measured (waited for), copied out of the ring."""
        self._wait(upto)
        while self.taken < upto:
            i = self.taken % self.R
            j = min(upto - self.taken, self.R - i)
            self.got.append((self.meta[i:i + j].copy(), self.out[i:i + j].copy()))
            self.taken += j

    @property
    def rows(self) -> int:
        """Rows handed to the worker (or waiting for it)."""
        return self.written + len(self.backlog)

    @property
    def pending(self) -> bool:
        return self.written > self.taken or bool(self.got) or bool(self.backlog)

    def take(self, rows, wait=True):
        """The rows recorded so far (``wait``; else those the worker has measured), as
        ``rows``'s (a :class:`_BlockRows`) columns."""
        if wait:
            while self.backlog:
                self._collect(min(self.written, self.taken + self.M))
                self._drain()
            self._collect(self.written)
        else:
            self._drain()
        got, self.got = self.got, []
        if not got:
            return {"_edge": np.zeros(0)}
        meta = np.concatenate([g[0] for g in got])
        out = np.concatenate([g[1] for g in got])
        K = self.K
        pend = [(int(s), float(t), out[r, 9 + 4 * K:]) for r, (s, t, _) in enumerate(meta)]
        due = [int(r) for r in np.flatnonzero(meta[:, 2])]
        c = {"sums": out[:, :9].T, "amps": (out[:, 9:9 + K] + 1j * out[:, 9 + K:9 + 2 * K]).T}
        if due:
            a = out[due]
            c["also"] = a[:, 9 + 2 * K:9 + 3 * K] + 1j * a[:, 9 + 3 * K:9 + 4 * K]
        return rows.columns(pend, due, c)

    def close(self):
        """Stop the worker (its task ends: the process stays for the next run) and free the
        ring: its statistics (seconds of H(t)'s pairs, calls, warnings' texts), or None
        where it failed."""
        self.ctrl[_STOP] = 1
        try:
            return self.future.result(timeout=30)
        except Exception:  # noqa: BLE001 -- a failed worker has said so at its rows
            return None
        finally:
            self.ctrl = self.meta = self.ring = self.out = None     # the views, then the map
            self._gone()


class _WorkerStopped(RuntimeError):
    """The observables' worker process has stopped (killed, or failed)."""


def _ring_sizes(R, n, K):
    """Bytes of the ring's parts: control words, (step, t, due) a row, psi a row, a row's
    results (9 sums, Re/Im of K amplitudes and K <phi_n(t)|psi>, K energies)."""
    return [8 * 8, 8 * 3 * R, 16 * R * n, 8 * (9 + 5 * K) * R]


def _ring_views(buf, R, n, K):
    """(ctrl, meta, ring, out): the arrays on the shared buffer."""
    off = np.cumsum([0] + _ring_sizes(R, n, K))
    return (np.ndarray((8,), np.int64, buf, off[0]), np.ndarray((R, 3), np.float64, buf, off[1]),
            np.ndarray((R, n), np.complex128, buf, off[2]),
            np.ndarray((R, 9 + 5 * K), np.float64, buf, off[3]))


def _unlink(shm):
    """Unmap (where no view is left) and remove a run's ring."""
    try:
        shm.close()
    except BufferError:  # pragma: no cover -- a view still held: unmapped with it
        pass
    try:
        shm.unlink()
    except FileNotFoundError:  # pragma: no cover
        pass


def _observe_task(name, spec):
    """The worker's side of :class:`_SharedRows`: measure the ring's rows as the loop writes
    them, a block of TIME_BLOCK at a time (or fewer where the loop asks for them), until
    told to stop with none left: (seconds of H(t)'s pairs, their calls, the texts of the
    warnings it met: the run says them at its end)."""
    import types
    from multiprocessing import shared_memory
    # mapped, not owned: the loop's process unlinks it (a spawned worker shares that
    # process's resource tracker, where attaching registers the same name again)
    shm = shared_memory.SharedMemory(name=name)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            seconds, calls = _observe(shm, spec, types.SimpleNamespace)
        return seconds, calls, [str(w.message) for w in caught]
    finally:
        shm.close()


def _observe(shm, spec, ns):
    cfg, x, phi, psi0, K, R, settings = spec
    ctrl, meta, ring, out = _ring_views(shm.buf, R, cfg.grid.n, K)
    plan = ns(config=cfg, backend=ns(xp=np), x=x, psi0=psi0)
    rows = _BlockRows(plan, ns(phi0=phi))
    moving = any(c.moving for c in cfg.potential.centres)
    tracker = states.Tracker(cfg, K, **settings) if moving and settings is not None else None
    static = None
    seconds = calls = 0
    done, M = 0, rows.M
    ctrl[_ALIVE] = 1
    parent, idle = os.getppid(), 0
    while True:
        w, asked, stop = int(ctrl[_W]), int(ctrl[_F]), int(ctrl[_STOP])
        upto = done + (w - done) // M * M
        if asked > upto or stop:
            upto = max(upto, min(w, asked) if not stop else w)
        if upto <= done:
            if stop:
                break
            idle += 1
            if idle % 1000 == 0 and os.getppid() != parent:    # the loop's process is gone
                break
            time.sleep(2e-4)
            continue
        idle = 0
        idx = [r % R for r in range(done, upto)]
        for i in idx:
            step, t, due_pairs = meta[i]
            molecular = None
            if due_pairs:
                t0 = time.perf_counter()
                if tracker is not None:
                    molecular = tracker(float(t))
                else:
                    static = static or states.eigenstates(cfg, 0.0, K)
                    molecular = static
                seconds += time.perf_counter() - t0
                calls += 1
            rows.record(int(step), float(t), ring[i], molecular)
        pend, due, copy = rows.start()
        c = copy.result()
        o = out[idx]
        o[:, :9] = c["sums"].T
        o[:, 9:9 + K] = c["amps"].T.real
        o[:, 9 + K:9 + 2 * K] = c["amps"].T.imag
        o[:, 9 + 2 * K:9 + 4 * K] = np.nan
        if due:
            o[due, 9 + 2 * K:9 + 3 * K] = c["also"].real
            o[due, 9 + 3 * K:9 + 4 * K] = c["also"].imag
        o[:, 9 + 4 * K:] = [p[2] for p in pend]
        out[idx] = o
        done = upto
        ctrl[_D] = done                      # after the rows (x86's store order)
    return seconds, calls


class Snapshots(Observer):
    """psi, the centres and the node count every ``output.every`` steps (and at the last
    step, and at step 0 of a new run), each flushed; in operator mode also
    P_mn = |<m|U(t)|n>|^2 and U(t) for resuming.  ``last_step``: the last whole snapshot."""

    def __init__(self, plan, writer, start=0):
        cfg = plan.config
        self.config, self.writer, self.x = cfg, writer, plan.x
        self.phi0 = plan.states[:cfg.output.populations]
        self.last_step = start
        # what other observers add to the next snapshot: row values (e.g. time_error), arrays
        # kept for resuming (e.g. the time-error companion's psi), file attributes
        self.row_extras, self.resume_extras, self.attr_extras = {}, {}, {}
        self.pending = collections.deque()   # (step, t, HostCopy, extras): snapshots being copied

    def begin(self, state):
        if not state.resumed:
            self.write(state)

    def after(self, state):
        if due(state.step, self.config.output.every, self.config):
            self.write(state)

    def end(self, state):
        self.finish()

    def fail(self, state, error):
        try:        # the last snapshot taken is whole: it reaches the file
            self.finish()
        except Exception:  # noqa: BLE001 -- the run's own error is the one to report
            pass

    def transitions(self, U_host):  # P_mn = |<m|U|n>|^2 = |dx sum_x phi_m (U phi_n)|^2
        return np.abs(self.phi0 @ (U_host @ self.phi0.T.astype(DTYPE)) * self.config.grid.dx) ** 2

    def write(self, state):
        """A snapshot of ``state``.  psi on a GPU (no U): its copy to the host is started
        and the snapshot is written at a later snapshot once its copy has run, or when
        :data:`SNAPSHOTS_IN_FLIGHT` later ones have been started (or at the end), in order,
        so that the device never waits for the file and the host keeps its lead over the
        device (a copy at once waits for every step queued); the file's last whole
        snapshot is then a few intervals older while the run goes on.  Otherwise written
        now."""
        from mgemm.arrays import HostCopy, is_device_array
        extras = (self.row_extras, self.resume_extras, self.attr_extras)
        self.row_extras = {}
        if state.U is None and is_device_array(state.psi) and DEFER_SNAPSHOTS:
            pending = self.pending
            pending.append((state.step, state.t, HostCopy({"psi": state.psi}), extras))
            most = max(1, min(SNAPSHOTS_IN_FLIGHT, SNAPSHOT_BYTES_IN_FLIGHT // max(1, state.psi.nbytes)))
            while pending and (len(pending) > most or pending[0][2].done()):
                self._finish_one()
        else:
            self.finish()
            self._write(state.step, state.t, host_psi(state), state.U, extras)

    def finish(self):
        """Write the snapshots whose copies were started, in order (waits for those copies)."""
        while self.pending:
            self._finish_one()

    def _finish_one(self):
        (step, t, copy, extras) = self.pending.popleft()
        # psi out of the pinned buffer (which goes back to CuPy's pool for the next copy:
        # held by the writer until its next write, each snapshot took a new cudaHostAlloc,
        # ~0.3 ms of the host's time); a background writer copies it into its block itself
        psi = copy.result()["psi"]
        self._write(step, t, psi if getattr(self.writer, "background", False) else np.array(psi),
                    None, extras)

    def _write(self, step, t, psi, U, extras):
        cfg = self.config
        row_extras, resume_extras, attr_extras = extras
        row, keep = {}, None
        if U is not None:
            U_host = to_host(U.to_array() if hasattr(U, "to_array") else U)
            row, keep = {"P": self.transitions(U_host)}, {"U": U_host}
        keep = {**(keep or {}), **resume_extras} or None
        row = {"time_error": np.nan, "time_error_populations": np.nan, **row, **row_extras}
        if attr_extras:
            self.writer.set_attrs(**attr_extras)
        # (the node count: the writer's, from psi, when it writes: _NodeCounter)
        self.writer.append(state=keep, t=t, step=step, psi=psi,
                           centres=centre_positions(cfg.potential, t), **row)
        self.last_step = step


class Progress(Observer):
    """A tqdm progress bar over the steps (nothing when ``disable``)."""

    def __init__(self, total, initial=0, desc=None, disable=False, unit="step"):
        self.args = dict(total=total, initial=initial, desc=desc, disable=disable, unit=unit,
                         mininterval=0.5)
        self.bar = None

    def begin(self, state):
        from tqdm.auto import tqdm
        self.bar = tqdm(**self.args)

    def after(self, state):
        self.bar.update(1)

    def end(self, state):
        self.close()

    def close(self):
        if self.bar is not None:
            self.bar.close()
            self.bar = None
