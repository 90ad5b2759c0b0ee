"""H(t)'s eigenpairs at the populations' save points, by one bounded look-ahead.

With moving centres the populations in the molecular H(t)'s eigenstates need H(t)'s lowest
pairs every ``output.populations_every`` steps.  Their times are known before the loop,
and a call's pairs depend on t alone (:class:`tdse.model.tracker.Tracker`: each from its
window's or anchor's pairs), so they can be computed ahead of the loop, by trackers of
their own, and come out bit for bit as the loop would compute them.  :class:`Lookahead`
does that over one :class:`concurrent.futures.ProcessPoolExecutor`, opened by the run's
entry (:func:`look_ahead`: before the run is prepared, so that the
processes start beside its set-up, and a run from step 0 has them begin its first windows
there, :meth:`Workers.prime`) and closed when it ends (never by ``prepare``).  Without that
head start a GPU loop at N = 8192 reached its next windows before the workers had them and
computed ~100-130 calls itself, 0.88-1.17 s of a 3 s loop; with it the loop waited 0.04 s
(one H200, ``benchmarks/results/lookahead_timeline_h200x1_20261130T0649.txt``).

Processes, spawned, not threads: a call is mostly NumPy and SciPy calls on N x K arrays
between LAPACK calls, each taking the GIL the loop's thread wants (one H200, N = 8192: the
5-point loop 1.31 its bare loop with a thread, 1.02 with processes;
``benchmarks/results/run-overhead_h200x1_20261128T07*.json``).  The same from the CLI, a script
and a notebook: the processes are started with ``__main__`` out of sight (:func:`_spawn`),
so a script is never run again in them, guarded by ``if __name__ == "__main__"`` or not --
they need nothing of it (their task and initializer are tdse's own).  A later run in the
same process forks them from a fork server that imported the solvers once (:func:`_context`),
ready within ~30 ms.

A task's states come back through a file, not the pool's pipe
(:class:`~tdse.run.ahead_child.Left`): the worker writes them to one file in the run's
folder in memory (``/dev/shm`` where there is one) and returns its name and the energies;
the pool's thread reads the file as the task is done and the loop takes what it read
(through the pipe, a window's 4 MB at N = 8192 in 64 kB pieces, the loop was x1.33 / 1.29
its run without populations, read this way x1.15 / 1.04: 3- / 5-point, one H200,
``pairs_free_*_h200x1_20261202T01*.txt``, ``states_file_cost_cpu2_20261202T0405.txt``).
"""
from __future__ import annotations

import collections
import concurrent.futures
import contextlib
import itertools
import os
import shutil
import sys
import threading
import time
import types
import warnings
import weakref

from ..config import ConfigError
from ..options import DVR_DENSE_MAX
from . import ahead_child
from .ahead_child import server_marker

__all__ = ["Lookahead", "Workers", "lookahead_wanted", "may_want", "seconds_guess", "workers_most"]

#: tasks in flight a worker: a task whole windows' calls (3-, 5-point, :data:`TASK_STEPS`),
#: a group of the dense solver's calls or one call
DEPTH = 2

#: the DVR's calls in flight a worker: DEPTH x TASK_STEPS / populations_every, at most DEPTH x
#: ONE_CALL_DEPTH (2 had kept a worker two calls ahead of a loop that asks for a block's
#: pairs at once, ``dvr_workers_cpu2_20261130T1615.txt``); also the most calls a task
ONE_CALL_DEPTH = 32

#: waits of the loop for a one-call task under way after which one worker and the loop share
#: the dense solver's calls every step (:class:`Lookahead`: the worker two of every three, the
#: loop the third; and groups caught under way after which a task is one call).  2 CPUs, the
#: DVR at N = 256 by Chebyshev steps (0.57 ms against a 1.34 ms call) waited 1195 times in
#: 2000 steps, the main job (~14 ms steps) never; sharing from the start cost the main job
#: 0.15-0.4 s of ~7 s and took the other x3.44 -> 2.30 (``share_after_waits_cpu2_20261130T2019.txt``);
#: a few waits, not one, so that a worker's slow first call does not decide it
SHARE_AFTER_WAITS = 4

#: a 3-/5-point task takes whole windows until it spans this many steps.  Each task costs
#: the loop's thread a few hand-overs of the GIL to the executor's thread (the task out,
#: its result back): 2 cores, N = 256, populations every step (a window 16 steps), 8000
#: steps, a task a window slowed the loop's steps from 0.455 to 0.540 ms (3-point; the run
#: x1.36 the run with populations at its ends only), whole windows spanning 128 steps 0.473
#: ms (x1.14); 5-point 0.561 / 0.536 ms against 0.492, x1.40 / 1.22
#: (``benchmarks/archive/lookahead_latency.py``, ``lookahead_latency_cpu2_20261129T1645.txt``)
TASK_STEPS = 128

#: worker processes at most: each call depends on t alone, so two may share them (one
#: H100, N = 8192, 5000 steps, populations every 50, ``benchmarks/archive/davidson_workers.py``:
#: the 5-point loop 2.18-2.20 s with two against 3.58-3.91 s with one)
WORKERS = 2
#: ... and beside a GPU's loop, up to this many (where the CPUs are there): its steps are
#: ~20 us at N = 8192 (3-point, one H200), so populations every 100 steps ask for a call
#: every 2 ms, and a call costs ~3.7 ms (:func:`seconds_guess`): with two workers the loop
#: waited 3.1 ms a call, 31 us a step (``run_attrib_h200x1_20261129T1852_large3.txt``)
GPU_WORKERS = 8
#: before Python 3.12, the longest a close waits for the pool's thread to see the shutdown
#: (:meth:`Workers.close`): a bound, not a cost -- the thread, woken by the shutdown, sees it
#: once it has read the result it may be reading (a window's pairs: ~0.3 MB at N = 8192)
SETTLE = 0.1

#: where a run's workers leave their tasks' states (:class:`~tdse.run.ahead_child.Left`):
#: a folder of the run's in this one where it exists (memory on Linux), else in the
#: system's temporary folder
STATES_ROOT = "/dev/shm"

#: "auto" computes the pairs ahead where computing them in the loop would take more than
#: this many seconds of the run (:func:`seconds_guess`) -- on fewer than MANY_CPUS CPUs
#: AHEAD_MIN_SECONDS_FEW_CPUS, where the worker's start (~0.3 s) shares the run's cores.
#: 2 cores, N = 256, 8000 steps, `tdse run` with a worker against none: populations every
#: 40 / 20 / 10 (guess 0.05-0.32 s) +0.07 / +0.05 / -0.05 s (3-point), +0.04 / 0.00 / -0.17
#: s (5-point) (``lookahead_threshold_cpu2_20261130T1400.txt``)
AHEAD_MIN_SECONDS = 0.1
AHEAD_MIN_SECONDS_FEW_CPUS = 0.15
MANY_CPUS = 4


def seconds_guess(config) -> float:
    """A guess of the seconds H(t)'s pairs of a run of ``config`` would take in its loop:
    the calls (``time.steps / populations_every + 1``) x one call on one core, as measured
    on 2 cores with populations every step (``lookahead_latency_cpu2_20261129T1645.txt``,
    N = 256 / 512 / 1024 / 2048): the windows, 3-point 0.25 / 0.26 / 0.43 / 0.97 ms (a
    floor of NumPy calls, then ~0.45 us x N), 5-point 0.41 / 0.51 / 0.91 / 1.68 ms; the
    DVR's dense solver up to N = 512 2.6 / 14 ms then (1.34 / 6.70 since
    :func:`states.dense_lowest`, ~2.5e-8 N^2 s: ``dense_lowest_cpu2_20261130T1945.txt``),
    Davidson beyond 9.4 / 12 ms (~6 us x N).  Calls further apart cost more (populations
    every 10: 0.31 / 0.52 ms at N = 256)."""
    o, n, g = config.output, config.grid.n, config.grid
    calls = config.time.steps // o.populations_interval + 1
    if g.stencil == 3:
        each = max(2.5e-4, 4.5e-7 * n)
    elif g.stencil == 5:
        each = max(4e-4, 8.5e-7 * n)
    else:               # (DVR_DENSE_MAX from tdse.options: no solver imported before the workers start)
        each = 2.5e-8 * n * n if n <= DVR_DENSE_MAX else 6e-6 * n
    return calls * each


def _auto(config, gpu, blas_threads) -> bool:
    """"auto": a centre moves, a CPU is spare (beside the loop's thread on a GPU, beside the
    run's BLAS threads on the CPU) and the pairs would cost the loop more than
    :data:`AHEAD_MIN_SECONDS` (:data:`AHEAD_MIN_SECONDS_FEW_CPUS` on fewer than
    :data:`MANY_CPUS` CPUs) -- also where a task is one call (the DVR's) with populations
    every step: once the worker falls behind, the loop takes every third of the dense
    solver's calls itself (:class:`Lookahead`, ``alternate``; :data:`SHARE_AFTER_WAITS`), and
    beyond N = :data:`tdse.options.DVR_DENSE_MAX` a Davidson call costs about a step or less.
    2 CPUs, h2plus_moving's molecule, the run with populations every step against at its
    ends, the loop alone / with a worker: N = 256 x3.44 / 2.30, 512 x6.04 / 3.73
    (``dvr_every_step_cpu2_20261130T1947.txt``), 768 x2.85 / 2.15, 1024 x1.94 / 1.21, 2048
    x1.24 / 1.03 (``dvr_every_step_cpu2_20261130T1930.txt``)."""
    guess = seconds_guess(config)
    if guess <= min(AHEAD_MIN_SECONDS, AHEAD_MIN_SECONDS_FEW_CPUS):
        return False        # (below both: the busy CPUs not counted, ~10 ms of /proc samples)
    from .backend import usable_cpus
    cpus = usable_cpus()
    least = AHEAD_MIN_SECONDS if cpus >= MANY_CPUS else AHEAD_MIN_SECONDS_FEW_CPUS
    return cpus > (1 if gpu else blas_threads) and guess > least


def lookahead_wanted(config, backend) -> bool:
    """Whether a run of ``config`` on ``backend`` (:class:`tdse.run.backend.Backend`)
    computes H(t)'s pairs ahead in worker processes: the option ``run.eigen_workers`` "on"
    always, "off" never, "auto" as :func:`_auto` says."""
    if config.potential.function is not None:   # (a Python function does not travel to
        return False                            # a process: a notebook's cannot be pickled)
    mode = config.run.eigen_workers
    if mode != "auto" or not config.potential.molecule_moves:
        return mode == "on"
    return _auto(config, bool(backend.devices) or backend.name == "cupy", backend.threads or 1)


def may_want(config, backend="auto", threads=None) -> bool:
    """Whether a run of ``config`` may want the look-ahead (:func:`lookahead_wanted` before
    its backend is made: ``backend`` the name asked for, "auto" a GPU where the machine has
    one; ``threads`` its BLAS threads asked for): :func:`tdse.run.driver.run` then opens the
    :class:`Workers` before it prepares, so that their start (~1.5 s of imports on a GPU
    host) overlaps the set-up."""
    if config.potential.function is not None:   # (a Python function does not travel to
        return False                            # a process: a notebook's cannot be pickled)
    mode = config.run.eigen_workers
    if mode != "auto" or not config.potential.molecule_moves:
        return mode == "on"
    from .backend import blas_threads
    return _auto(config, _gpu(backend), blas_threads(config, threads))


def _gpu(backend) -> bool:
    """Whether a run asked for on ``backend`` steps on a GPU ("auto": where there is one)."""
    from .backend import gpu_count
    return backend == "cupy" or (backend == "auto" and gpu_count() > 0)


def workers_most(backend="auto") -> int:
    """The look-ahead's processes at most for a run on ``backend``: :data:`GPU_WORKERS`
    beside a GPU's loop, :data:`WORKERS` beside the CPU's (whose BLAS threads use the
    cores)."""
    return GPU_WORKERS if _gpu(backend) else WORKERS


_MAIN_LOCK = threading.Lock()


def _spawn(pool, fn, *args):
    """``pool.submit(fn, *args)`` with ``sys.modules["__main__"]`` a bare module while it
    may spawn a process: multiprocessing's spawn would import the user's script (or
    notebook kernel's main) again in the child, running its top level; the child needs
    nothing of it (kiln-ai's ``start_process_with_light_main`` does the same)."""
    from .interrupts import deferred
    # (an interrupt is raised after the spawn, not in it: cut between the new process and
    # its start-up data, it left that process failing, its traceback on the terminal)
    with _MAIN_LOCK, deferred():
        main = sys.modules.get("__main__")
        sys.modules["__main__"] = types.ModuleType("__main__")
        try:
            return pool.submit(fn, *args)
        finally:
            if main is not None:
                sys.modules["__main__"] = main


#: the worker's trackers, one a run (the newest kept)
_TRACKERS = collections.OrderedDict()
_RUNS = itertools.count(1)


def _pairs(run, begin, times, into=None):
    """In a worker: the pairs at ``times`` by run ``run``'s tracker (made from ``begin`` =
    (config, count, settings) at its first task, as the loop's) -- with their states in a
    file in the folder ``into`` (:class:`~tdse.run.ahead_child.Left`), where given --,
    their seconds, the warnings it gave (said again in the run)."""
    tracker = _TRACKERS.get(run)
    if tracker is None:
        from ..model.tracker import Tracker
        config, count, settings = begin
        tracker = _TRACKERS[run] = Tracker(config, count, **settings)
        while len(_TRACKERS) > 4:
            _TRACKERS.popitem(last=False)
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        t0 = time.perf_counter()
        out = [tracker(t) for t in times]
        if into is not None:
            try:
                out = ahead_child.Left.write(out, into)
            except OSError:
                pass                    # (the states through the pipe)
        return out, time.perf_counter() - t0, [str(w.message) for w in said]


def _ready():
    return True


#: whether this process has started the look-ahead's fork server (:func:`_start_server`)
_SERVER = []


def _context(multiprocessing):
    """The workers' start method: "forkserver" once this process's fork server
    (:func:`_start_server`, started after its first run with workers) has imported the
    solvers (:func:`tdse.run.ahead_child.server_marker`), else "spawn": forked workers are
    ready in ~30 ms, spawned ones import NumPy and SciPy again (0.2 s on 2 CPUs, ~1 s on a
    GPU host: ``second_run_h200x1_20261130T2335.txt``, ``second_run_cpu2_20261201T0451.txt``)."""
    ready = bool(_SERVER) and os.path.exists(server_marker(os.getpid()))
    return multiprocessing.get_context("forkserver" if ready else "spawn")


def _start_server():
    """Start the fork server (no wait: it imports the solvers while the process goes on,
    :mod:`tdse.run.ahead_server`, and then makes its file; its environment's BLAS on one
    thread, as the workers'), where the platform has one and this process has not yet; it
    lives as long as this process (a command line's ends at once with it) and holds no
    run's state; its file goes with this process.  Its preload list, a process-wide
    setting, is set to that module."""
    import atexit
    import multiprocessing
    if _SERVER or "forkserver" not in multiprocessing.get_all_start_methods():
        return
    from multiprocessing import forkserver

    from ..options import EIGEN_BLAS_THREADS, blas_env
    marker = server_marker(os.getpid())
    _remove(marker)                  # (left by an earlier process of this PID)
    multiprocessing.get_context("forkserver").set_forkserver_preload(["tdse.run.ahead_server"])
    with blas_env(EIGEN_BLAS_THREADS):
        forkserver.ensure_running()
    atexit.register(_remove, marker)
    _SERVER.append(True)


def _remove(path):
    try:
        os.remove(path)
    except OSError:
        pass


class Workers:
    """The look-ahead's worker processes: one :class:`concurrent.futures.ProcessPoolExecutor`
    of up to :data:`WORKERS` processes, spawned or, after this process's first run, forked
    from its fork server (:func:`_context`; BLAS on one thread, without CuPy:
    :mod:`tdse.run.ahead_child`), their start begun at once (``ready``: done once one has
    started).  Opened by a run and closed by it (:meth:`close`), never by ``prepare``."""

    def __init__(self, most=WORKERS):
        import multiprocessing
        import tempfile

        from ..options import EIGEN_BLAS_THREADS, blas_env
        from .backend import usable_cpus
        self.count = max(1, min(most, usable_cpus() - 1))
        # the folder the workers leave their tasks' states in (ahead_child.Left), gone at the
        # close (at the latest at this process's exit; a worker whose run is gone removes it)
        self.folder = tempfile.mkdtemp(prefix="tdse-pairs-",
                                       dir=STATES_ROOT if os.path.isdir(STATES_ROOT) else None)
        self._remove_folder = weakref.finalize(self, shutil.rmtree, self.folder, True)
        self.pool = concurrent.futures.ProcessPoolExecutor(
            self.count, mp_context=_context(multiprocessing),
            initializer=ahead_child.start, initargs=(EIGEN_BLAS_THREADS, self.folder))
        with blas_env(EIGEN_BLAS_THREADS):     # the children's BLAS from their start
            self.ready = _spawn(self.pool, _ready)
        self.primed = None      # a new run's look-ahead begun before it is prepared (prime)

    def prime(self, config):
        """Begin a new run's look-ahead before it is prepared: its first tasks (from step 0,
        :data:`DEPTH` a worker) queued at once, computed beside the set-up (~1-2 s on a GPU
        host; a window of 16 calls ~0.1 s of a worker at N = 8192) -- step 0's too, which
        the loop had computed itself (13-16 ms of a GPU run's loop at N = 8192, 3-point,
        ``lookahead_calls_h200x1_20261203T1917.txt``).  Adopted by the run (:meth:`adopt`)."""
        if config.potential.molecule_moves and config.output.populations:
            from ..model.tracker import Tracker
            o = config.output
            la = Lookahead(Tracker(config, o.populations), config.time.dt, config.time.steps,
                           o.populations_interval, workers=self)
            la._fill(-1, early=True)      # (from step 0: _fill asks for the steps after -1)
            self.primed = la

    def adopt(self, tracker, dt, steps, interval):
        """The look-ahead :meth:`prime` began, for a run stepping from step 0 whose pairs
        are those of ``tracker`` (the same grid, molecule, count and settings) at the same
        steps; else None (what it began is dropped)."""
        la, self.primed = self.primed, None
        if la is None:
            return None
        a, b = la.tracker, tracker
        same = (a.config.grid == b.config.grid and a.config.potential == b.config.potential
                and a.K == b.K and a.settings() == b.settings()
                and (la.dt, la.steps, la.interval) == (dt, steps, interval))
        if not same:
            la.close()
            return None
        la.tracker = tracker           # (the loop's own calls by the run's tracker)
        return la

    def submit(self, fn, *args):
        return _spawn(self.pool, fn, *args)

    def close(self, serve=True):
        """No more tasks: those queued are dropped and the processes ended now (SIGTERM:
        they hold nothing the run needs). A graceful shutdown had made the run's exit wait
        for each process to finish its task, or its start (~0.3 s of imports) in a short
        run, and then its interpreter's teardown.  ``serve``: the fork server started for
        this process's next runs (:func:`_start_server`; not by the command line, whose
        process makes one run)."""
        # (ProcessPoolExecutor.terminate_workers from Python 3.14; before, its processes,
        # taken before the shutdown forgets them)
        pool = self.pool
        procs = list((getattr(pool, "_processes", None) or {}).values())
        thread = getattr(pool, "_executor_manager_thread", None)
        results = getattr(pool, "_result_queue", None)
        pool.shutdown(wait=False, cancel_futures=True)
        try:
            if thread is not None and sys.version_info < (3, 12):
                # (before Python 3.12 the pool's thread raised InvalidStateError -- a
                # traceback printed after a run -- where it found a task a look-ahead had
                # cancelled still listed when the ended processes broke the pool, CPython
                # gh-107219: it drops them once it has seen the shutdown, waited for here)
                end = time.monotonic() + SETTLE
                while getattr(pool, "_cancel_pending_futures", False) and thread.is_alive() \
                        and time.monotonic() < end:
                    time.sleep(0.0002)
        finally:            # (an interrupt in that wait: the processes ended all the same)
            if results is not None:
                # (this process's end of the results' pipe, which it never writes: a
                # process ended while it wrote a result left the pool's thread reading the
                # rest for ever, and the interpreter's exit waiting for that thread; with
                # only the ended processes' ends it reads an end of file, the pool broken)
                results._writer.close()
            for p in procs:
                try:
                    p.terminate()
                except (OSError, ValueError, AttributeError):
                    pass
            self._remove_folder()       # (the states of tasks not taken)
        if serve:
            try:                # (the next run's workers from it: _context)
                _start_server()
            except (OSError, ValueError):
                pass


class Lookahead:
    """H(t)'s pairs at the populations' steps of a run: ``__call__(step, t)`` gives them,
    computed ahead by worker processes (``ahead``; else in the caller by ``tracker``, the loop's,
    which also computes a step not foreseen, those while the workers start, and a call whose
    window or group is under way).  In flight, in step order: :data:`DEPTH` tasks a worker,
    or more up to the step :meth:`foresee` was told.  ``seconds``:
    computing them (in the workers or here); ``wait``: the caller's time in ``__call__``;
    ``calls``."""

    def __init__(self, tracker, dt, steps, interval, ahead=True, workers=None, most=WORKERS):
        self.tracker, self.dt, self.steps, self.interval = tracker, dt, steps, interval
        self.seconds = self.wait = 0.0
        self.calls = 0
        self.span = tracker.window_steps        # a task: a window's steps (None: one step)
        self.tasks = collections.OrderedDict()  # first step -> [future, its steps, its pairs]
        self.next, self.until = 0, -1           # the next step to ask for (None: none left);
                                                # asked for up to until whatever DEPTH (foresee)
        self.pool = self.ready = None           # (pool: the Workers, while in use)
        self.broken = self.own = False
        if ahead:           # the run's workers, or (none given) this look-ahead's own
            self.own = workers is None
            self.pool = Workers(most) if workers is None else workers
            self.ready, self.workers = self.pool.ready, self.pool.count
            self.run = (os.getpid(), next(_RUNS))
            self.begin = (tracker.config, tracker.K, tracker.settings())
        # one-call tasks of the dense solver every step beside one worker (the DVR up to
        # DVR_DENSE_MAX on few CPUs): the worker takes every call while it keeps ahead of the
        # loop; once the loop has waited SHARE_AFTER_WAITS times for a call under way (a call
        # costs more than a step: the loop would go at the worker's pace), it takes two calls
        # of every three and the loop the third itself (steps 0, 3, 6, ...: ``alternate``)
        self.shares = (ahead and self.span is None and interval == 1 and not tracker.iterative
                       and self.workers == 1)
        self.alternate, self.waits, self.misses, self.served = False, 0, 0, False
        # the dense solver's calls every few steps, as many a task as span TASK_STEPS steps (a
        # task costs the loop ~12 waits for the GIL: ``dvr_task_groups_cpu2_20261203T1212.txt``);
        # one a task once the loop, served, caught up with groups under way (:meth:`_take`)
        self.group = (max(1, min(ONE_CALL_DEPTH, TASK_STEPS // interval)) if ahead and
                      self.span is None and not tracker.iterative and interval > 1 else 1)

    def _following(self, s):
        """The populations' step after ``s`` (a multiple of the interval, or the last),
        None past the last."""
        return None if s >= self.steps else min((s // self.interval + 1) * self.interval, self.steps)

    def _fill(self, step, early=False):
        """Ask for the due steps after ``step``, a task a window (or a step), up to
        :data:`DEPTH` tasks a worker in flight -- once the workers have started (``early``:
        queued before, :meth:`Workers.prime`)."""
        if self.broken or not (early or self.ready.done()):
            return
        if not early and self.ready.exception() is not None:
            return self._break(self.ready.exception())
        if self.next is not None and self.next <= step:
            self.next = self._following(step)
        # (one-call tasks: as many as a window's task spans steps, at most ONE_CALL_DEPTH)
        most = DEPTH * self.workers * (1 if self.span or self.group > 1 else
                                       max(1, min(ONE_CALL_DEPTH, TASK_STEPS // self.interval)))
        while self.next is not None and (len(self.tasks) < most or self.next <= self.until):
            if self.alternate and self.next % 3 == 0:       # the loop's own call
                self.next = self._following(self.next)
                continue
            group = [self.next]
            self.next = self._following(self.next)
            while (self.span and self.next is not None
                   and (self.next // self.span - group[0] // self.span) * self.span < TASK_STEPS):
                group.append(self.next)
                self.next = self._following(self.next)
            while len(group) < self.group and self.next is not None:
                group.append(self.next)
                self.next = self._following(self.next)
            try:
                f = self.pool.submit(_pairs, self.run, self.begin,
                                     tuple(s * self.dt for s in group), self.pool.folder)
                f.add_done_callback(ahead_child.read_left)   # (its states read as it is done)
            except Exception as e:  # noqa: BLE001 -- the pool broke: the loop computes the rest
                return self._break(e)
            self.tasks[group[0]] = [f, group, None]    # (future, its steps, its pairs once taken)

    def foresee(self, step):
        """The pairs up to ``step`` wanted at once (a block of rows, :meth:`tdse.run.rows.
        Observables.tap`): asked for now, past :data:`DEPTH` (``lookahead_foresee_cpu2_20261203T1720.txt``)."""
        if step > self.until:
            self.until = step
            if self.pool is not None:
                self._fill(-1)

    def _take(self, step, t):
        """The pairs of ``step`` from its task once it is done (its seconds and warnings
        counted once), or once the call under way in a worker is (a task of one call),
        else None -- no task holds it, or its windows' task is still under way (the caller
        computes that call alone rather than wait for whole windows; the workers, meanwhile,
        get ahead of the loop), or its one call is not yet begun; tasks whose steps all
        passed are dropped."""
        while self.tasks:
            first, task = next(iter(self.tasks.items()))
            f, group = task[0], task[1]
            if group[-1] < step:                  # passed (taken, or unasked): dropped
                self.tasks.popitem(last=False)
                f.cancel()
                continue
            if step not in group or t != step * self.dt:
                return None
            if not f.done() and (self.span or len(group) > 1 or not f.running()):
                if len(group) > 1 and not self.span and self.served:
                    self.misses += 1
                    if self.misses >= SHARE_AFTER_WAITS:
                        self.group = 1
                return None     # (a window's or group's task under way: the caller computes
                                # this call alone; a call's own task not yet begun: the caller's)
            # (a call's own task under way or next in a worker's queue: waited for, sooner done)
            if not f.done():
                self._waited()
            if task[2] is None:                   # (its seconds and warnings counted once)
                pairs, seconds, said = f.result()
                task[2] = pairs.take() if isinstance(pairs, ahead_child.Left) else pairs
                self.served = True
                self.seconds += seconds
                for m in said:
                    warnings.warn(m, RuntimeWarning, stacklevel=4)
            if step == group[-1]:
                self.tasks.popitem(last=False)
            return task[2][group.index(step)]
        return None

    def _waited(self):
        """The loop waits for a one-call task under way: after SHARE_AFTER_WAITS of them,
        where it :attr:`shares`, it takes every third call itself from the next asked on."""
        self.waits += 1
        if self.shares and self.waits >= SHARE_AFTER_WAITS:
            self.alternate = True

    def __call__(self, step, t):
        """The pairs (E, phi) at ``step`` (time ``t``)."""
        t0 = time.perf_counter()
        self.calls += 1
        out = None
        if self.pool is not None and not self.broken:
            try:
                out = self._take(step, t)
            except Exception as e:  # noqa: BLE001 -- a worker died: the loop computes the rest
                self._break(e)
        if out is None:
            # in the caller: with workers started, this call alone (Tracker.single: the same
            # bits, its window's anchor and its own member, not the whole window the workers
            # are computing); while they start, its whole window, as without them
            alone = self.pool is not None and not self.broken and self.ready.done()
            out = self.tracker.single(t) if alone else self.tracker(t)
            self.seconds += time.perf_counter() - t0
        if self.pool is not None:
            self._fill(step)
        self.wait += time.perf_counter() - t0
        return out

    def _break(self, error):
        """The workers failed: said once, the rest computed in the loop."""
        if not self.broken:
            self.broken = True
            warnings.warn(f"the processes computing H(t)'s eigenpairs ahead failed "
                          f"({type(error).__name__}: {str(error)[:120]}); the loop computes them",
                          RuntimeWarning, stacklevel=4)
            self.close()

    def close(self):
        """Stop: this run's tasks not started are dropped; its own workers closed (the run's
        are the run's to close)."""
        if self.pool is not None:
            for task in self.tasks.values():
                task[0].cancel()
            self.tasks.clear()
            if self.own or self.broken:
                self.pool.close()
            self.pool = None


@contextlib.contextmanager
def look_ahead(config, backend="auto", threads=None, prime=True, serve=True):
    """The look-ahead's :class:`Workers` where a run of ``config`` may want them
    (:func:`may_want`), else None, closed at the end: opened before the run is prepared
    (by the CLI, :func:`tdse.simulate` and :func:`tdse.run.driver.run` given a Config), so
    that their start goes beside its set-up, not into its loop (which computes the pairs
    itself until they have started); and before the solvers are imported (this module
    imports none): on 2 CPUs the CLI's loop waited 0.17 -> 0.06 s for its pairs (3-point,
    N = 256, 8000 steps, populations every 10), 0.32 -> 0.19 s (5-point;
    ``workers_early_cpu2_20261202T0545.txt``).  ``prime``: a run from step 0, whose first
    windows the workers begin at once (:meth:`Workers.prime`).  ``serve``: their close
    starts the fork server for a later run's workers (:meth:`Workers.close`; the command
    line, one run a process, passes False)."""
    try:
        want = may_want(config, backend, threads)
    except ConfigError:         # a bad value (e.g. threads = 0): prepare refuses it, one line
        want = False
    workers = Workers(workers_most(backend)) if want else None
    if workers is not None and prime:
        try:
            workers.prime(config)
        except Exception:  # noqa: BLE001 -- a head start, never a failure: the run computes
            workers.primed = None  # its pairs as it would have without it (prepare says
            #                        what is wrong with the input, in one line)
    try:
        yield workers
    finally:
        if workers is not None:
            workers.close(serve)
