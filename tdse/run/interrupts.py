"""Interrupts: SIGINT/SIGTERM stop a run with its file closed valid and resumable -- an
observer of the evolve loop (:class:`Interrupts`)."""
from __future__ import annotations

import time


class Interrupted(Exception):
    """A run stopped by SIGINT/SIGTERM; its file was closed valid and resumable."""

    def __init__(self, signame, path, count, t):
        self.signame, self.path, self.count, self.t = signame, path, count, t
        super().__init__(f"interrupted by {signame}: {path} holds {count} snapshots up to "
                         f"t = {t:.6g}; continue with: tdse resume {path}")


def signal_guard():
    """Turn SIGTERM, and SIGINT, into KeyboardInterrupt in the main thread for the run;
    returns a restore function.  SIGINT is set explicitly: a process started in the
    background by a non-interactive shell inherits SIGINT *ignored*, and Python then
    never raises KeyboardInterrupt -- a `kill -INT` would be lost and the run go on."""
    import signal
    import threading
    if threading.current_thread() is not threading.main_thread():
        return lambda: None

    def on_term(signum, frame):
        raise KeyboardInterrupt("SIGTERM")
    old = signal.signal(signal.SIGTERM, on_term)
    old_int = signal.signal(signal.SIGINT, signal.default_int_handler)

    def restore():
        signal.signal(signal.SIGTERM, old)
        signal.signal(signal.SIGINT, old_int)
    return restore


class Interrupts:
    """The evolve loop's observer for signals: SIGINT/SIGTERM become KeyboardInterrupt while
    the loop runs (:func:`signal_guard`), and when one stops it the writer is closed valid
    (not complete, ``wall_seconds`` since ``started``) and :class:`Interrupted` is raised in
    its place, naming the file, its snapshots and ``last_time()``."""

    def __init__(self, writer, last_time, started=None):
        self.writer, self.last_time, self.started = writer, last_time, started
        self.restore = None

    def begin(self, state):
        self.restore = signal_guard()

    def before(self, j, state):
        pass

    def after(self, state):
        pass

    def end(self, state):
        self._restore()

    def fail(self, state, error):
        self._restore()
        if not isinstance(error, KeyboardInterrupt):
            return
        sig = "SIGTERM" if str(error) == "SIGTERM" else "SIGINT"
        w = self.writer
        w.set_attrs(interrupted_by=sig, **({} if self.started is None else
                                           {"wall_seconds": time.perf_counter() - self.started}))
        w.close(False)          # writes the snapshots it held
        count = w.count
        if count == 0:          # stopped before the first snapshot: the run removes its
            return              # file; the KeyboardInterrupt goes on (the CLI: one line, 130/143)
        raise Interrupted(sig, w.path, count, self.last_time()) from None

    def _restore(self):
        if self.restore is not None:
            self.restore()
            self.restore = None
