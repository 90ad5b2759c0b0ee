"""H(t)'s eigenpairs at the populations' save points, by one bounded look-ahead.

With moving centres the populations in the molecular H(t)'s eigenstates need H(t)'s lowest
pairs at every ``output.populations_every`` steps.  Their times are known before the loop,
and a call's pairs depend on t alone (:class:`tdse.model.states.Tracker`: each from its
window's or anchor's pairs), so they can be computed ahead of the loop, by a tracker of
their own, and come out bit for bit as the loop would compute them.  :class:`Lookahead`
does that on one thread of a :class:`concurrent.futures.ThreadPoolExecutor`, opened when
the run's loop begins and closed when it ends (never by ``prepare``): the same from the
CLI, a script and a notebook, nothing to spawn or pickle.

A thread, not a process: the 3-point solver calls LAPACK's dstemr without the GIL
(:func:`tdse.model.states.stemr`, through SciPy's own LAPACK: SciPy's
``eigh_tridiagonal(..., lapack_driver="stemr")`` holds the GIL for the call -- a Python
counter beside it ran 64x slower, 2 cores, N = 8192 -- so it does not serve here), and the
windows, Davidson and the banded solvers spend their time in NumPy and BLAS calls, which
let the GIL go.  The look-ahead runs where a CPU is spare beside the run's BLAS threads
(``run.eigen_workers = "auto"``; "on" always, "off" never): the 5-point and DVR solvers hold
the process's BLAS to one thread while they run (threadpoolctl's limit is the process's),
which a CPU run on more BLAS threads would feel.
"""
from __future__ import annotations

import collections
import concurrent.futures
import threading
import time

from ..model import states

__all__ = ["Lookahead", "lookahead_wanted"]

#: calls queued ahead at most: two windows of the 3- and 5-point trackers (a window's calls
#: are computed together, at its first), else this many
DEPTH = 4

#: the look-ahead thread only from this N ("auto"): below it a call is mostly Python and
#: small NumPy calls that hold the GIL, which the loop's thread wants as much -- measured
#: on 2 cores, N = 256, 4000 steps, populations every 10, the run's loop 3.34-3.65 s with the
#: thread against 3.04-3.16 s without (3-point; 5-point 3.62-3.94 against 3.52-3.61, the bare
#: loop 2.2-2.5 s), where one H200's run at N = 8192 leaves 4.4-4.8 s of pairs to it
LOOKAHEAD_MIN_N = 1024


def lookahead_wanted(config, backend) -> bool:
    """Whether a run of ``config`` on ``backend`` (:class:`tdse.run.backend.Backend`)
    computes H(t)'s pairs ahead in a thread: the option ``run.eigen_workers`` "on" always,
    "off" never, "auto" when a centre moves, N >= :data:`LOOKAHEAD_MIN_N` and a CPU is
    spare (:func:`tdse.run.backend.usable_cpus`): beside the loop's thread on a GPU, beside
    the run's BLAS threads on the CPU."""
    mode = config.run.eigen_workers
    if mode != "auto" or not any(c.moving for c in config.potential.centres) \
            or config.grid.n < LOOKAHEAD_MIN_N:
        return mode == "on"
    from .backend import usable_cpus
    return usable_cpus() > (1 if backend.devices or backend.name == "cupy" else backend.threads or 1)


def _pairs(tracker, times, stop):
    """The pairs at ``times`` by ``tracker`` in the thread, and their seconds; cut short
    once ``stop`` is set (the run has ended: the process's exit would wait for the task)."""
    t0 = time.perf_counter()
    out = []
    for t in times:
        if stop.is_set():
            break
        out.append(tracker(t))
    return out, time.perf_counter() - t0


class Lookahead:
    """H(t)'s pairs at the populations' steps of a run: ``__call__(step, t)`` gives them,
    computed ahead on one thread (``ahead``; else in the caller) by a tracker like
    ``tracker`` (the loop's, which computes a step not foreseen: the last, a resumed run's
    first).  At most :data:`DEPTH` steps -- two windows where the tracker has them -- are
    queued ahead.  ``seconds``: computing them; ``wait``: the caller's time in
    ``__call__``; ``calls``."""

    def __init__(self, tracker, dt, steps, interval, ahead=True):
        self.tracker, self.dt, self.steps, self.interval = tracker, dt, steps, interval
        self.seconds = self.wait = 0.0
        self.calls = 0
        self.pool = self.own = None
        span = tracker.window_steps
        self.depth = 2 * (span // interval) if span else DEPTH
        self.queue = collections.OrderedDict()       # step -> future, in step order
        self.next = 0                                # the next step to queue (None: none left)
        self.stop = threading.Event()
        if ahead:
            self.own = states.Tracker(tracker.config, tracker.K, **tracker.settings())
            self.pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="tdse-eigenpairs")

    def _following(self, s):
        """The populations' step after ``s`` (a multiple of the interval, or the last),
        None past the last."""
        return None if s >= self.steps else min((s // self.interval + 1) * self.interval, self.steps)

    def _fill(self, step):
        """Queue the due steps after ``step`` up to :attr:`depth` ahead."""
        if self.next is not None and self.next <= step:     # (None: none left to queue)
            self.next = self._following(step)
        while self.next is not None and len(self.queue) < self.depth:
            s = self.next
            self.queue[s] = self.pool.submit(_pairs, self.own, (s * self.dt,), self.stop)
            self.next = self._following(s)

    def __call__(self, step, t):
        """The pairs (E, phi) at ``step`` (time ``t``)."""
        t0 = time.perf_counter()
        self.calls += 1
        f = None
        if self.pool is not None:
            while self.queue and next(iter(self.queue)) < step:     # passed unasked
                self.queue.popitem(last=False)[1].cancel()
            f = self.queue.pop(step, None) if t == step * self.dt else None
        if f is not None:
            (out,), seconds = f.result()
            self.seconds += seconds
        else:    # in the caller: with the thread on, this call alone (Tracker.single: the
            # same bits, its window's anchor and its own member, not the whole window)
            out = self.tracker(t) if self.pool is None else self.tracker.single(t)
            self.seconds += time.perf_counter() - t0
        if self.pool is not None:
            self._fill(step)
        self.wait += time.perf_counter() - t0
        return out

    def close(self):
        """Stop: nothing queued is started, a call under way ends the task; the thread goes."""
        self.stop.set()
        if self.pool is not None:
            for f in self.queue.values():
                f.cancel()
            self.queue.clear()
            self.pool.shutdown(wait=False, cancel_futures=True)
            self.pool = None
