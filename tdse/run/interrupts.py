"""Interrupts: SIGINT/SIGTERM stop a run with its file closed valid and resumable."""
from __future__ import annotations

import contextlib
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


@contextlib.contextmanager
def interruptible(writer, last_time, started=None):
    """Run the block with SIGINT/SIGTERM turned into :class:`Interrupted`: on a signal
    the writer is closed valid (not complete, ``wall_seconds`` since ``started``) and the
    exception names the file, its snapshots and ``last_time()``, the time of the last
    whole snapshot."""
    restore = signal_guard()
    try:
        yield
    except KeyboardInterrupt as e:
        sig = "SIGTERM" if str(e) == "SIGTERM" else "SIGINT"
        count = writer.count
        writer.set_attrs(interrupted_by=sig, **({} if started is None else
                                                {"wall_seconds": time.perf_counter() - started}))
        writer.close(False)
        raise Interrupted(sig, writer.path, count, last_time()) from None
    finally:
        restore()
