"""Interrupts: SIGINT/SIGTERM stop a run with its file closed valid and resumable -- a
sink of the evolve loop (:class:`Interrupts`)."""
from __future__ import annotations

import contextlib
import time


class Interrupted(Exception):
    """A run stopped by SIGINT/SIGTERM; its file was closed valid and resumable."""

    def __init__(self, signame, path, count, t):
        self.signame, self.path, self.count, self.t = signame, path, count, t
        super().__init__(f"interrupted by {signame}: {path} holds {count} snapshots up to "
                         f"t = {t:.6g}; continue with: tdse resume {path}")

    def __reduce__(self):            # (pickled by its arguments, as ConfigError)
        return type(self), (self.signame, self.path, self.count, self.t)


#: signals delivered under :func:`signal_guard` and not yet acted on.  Python runs a
#: signal's handler between two bytecodes of the main thread, which may be inside a weakref
#: callback, a ``__del__`` or a finalizer of the garbage collector; a KeyboardInterrupt
#: raised there is printed ("Exception ignored in ...") and dropped, and the run would go
#: on to its end (seen: SIGINT 0.5 s into `tdse run`, during its set-up).  The loop
#: (:func:`tdse.run.loop.evolve`) raises it again at its next save point (:func:`check_pending`).
_PENDING = []


_DEFER = [0]       # > 0: inside :func:`deferred`


def _interrupt(name):
    return KeyboardInterrupt("SIGTERM") if name == "SIGTERM" else KeyboardInterrupt()


def _on_signal(signum, frame):
    """SIGINT / SIGTERM: noted (:data:`_PENDING`), then KeyboardInterrupt ("SIGTERM" for
    SIGTERM, as the run's messages tell them apart)."""
    import signal
    name = "SIGTERM" if signum == signal.SIGTERM else "SIGINT"
    _PENDING.append(name)
    if not _DEFER[0]:
        raise _interrupt(name)


@contextlib.contextmanager
def deferred():
    """A section an interrupt must not cut (a process being spawned): a signal that arrives
    in it is noted, and its KeyboardInterrupt raised when the section ends."""
    _DEFER[0] += 1
    try:
        yield
    finally:
        _DEFER[0] -= 1
    if not _DEFER[0]:
        check_pending()


def check_pending():
    """Raise the KeyboardInterrupt of a signal that arrived and was not acted on (its own
    was dropped where Python discards exceptions), once; nothing when there is none."""
    if _PENDING:
        name = _PENDING[-1]
        _PENDING.clear()
        raise _interrupt(name)


def acknowledge():
    """A KeyboardInterrupt was caught and is being acted on: nothing is pending, and
    CPython's own note of an unhandled one is cleared (:func:`_clear_unhandled_note`)."""
    _PENDING.clear()
    _clear_unhandled_note()


def _clear_unhandled_note():
    """CPython notes a KeyboardInterrupt that leaves code it runs through ``PyRun_*``
    (``_Py_UnhandledKeyboardInterrupt``: an extension module's import may, when SIGINT lands
    in `tdse run`'s start-up) and, at the exit of ``python -m ...``, kills the process with
    SIGINT (status -2) though the interrupt was caught and exit 130 asked for: 1 in 42
    SIGINTs 0.3-0.6 s into `python -m tdse.ui.cli run` before this, none in 28 after
    (benchmarks/archive/sigint_startup.py, benchmarks/results/sigint_startup_cpu2_20261126*).
    Each ``PyRun_*`` call clears the note first: an empty one clears it."""
    try:
        import ctypes
        ctypes.pythonapi.PyRun_SimpleString(b"pass")
    except Exception:  # noqa: BLE001 -- no ctypes or no Python API: the exit status may be -2
        pass


def _note(signum, frame):
    import signal
    _PENDING.append("SIGTERM" if signum == signal.SIGTERM else "SIGINT")


def accept_sigint(program=False):
    """The CLI's first act, before its imports: SIGINT inherited *ignored* (a background job
    of a non-interactive shell: CI, ``tdse run ... &`` in a script) is noted from here on
    (:data:`_PENDING`; not raised, so no import is cut) and acted on when the command's
    guard begins (:func:`check_pending`).  Until 2026-11-30 such a SIGINT during the
    command's imports was lost and the run went on to its end, exit 0 (1 in 9 CI runs:
    benchmarks/results/sigint_flake_cpu2_20261130T0830.txt).  With ``program`` (the process
    is the command: ``tdse``, ``python -m tdse``, ``python -m tdse.ui.cli``) SIGINT in
    Python's default state is noted the same way: raised in the imports it ended the process
    with a traceback and status -2 (CI on a busy 2-core box, 2026-12-01: the imports took
    over 0.5 s).  A module that merely imports the CLI (tests, a notebook) keeps Python's
    KeyboardInterrupt.  Main thread only."""
    import signal
    import threading
    if threading.current_thread() is not threading.main_thread():
        return
    now = signal.getsignal(signal.SIGINT)
    if now is signal.SIG_IGN or (program and now is signal.default_int_handler):
        signal.signal(signal.SIGINT, _note)


def signal_guard():
    """Turn SIGTERM, and SIGINT, into KeyboardInterrupt in the main thread for the run
    (each noted until acted on: :func:`check_pending`, which the loop calls at each save point); returns a restore function.  SIGINT
    is set explicitly: a process started in the background by a non-interactive shell
    inherits SIGINT *ignored*, and Python then never raises KeyboardInterrupt -- a
    `kill -INT` would be lost and the run go on."""
    import signal
    import sys
    import threading
    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    old = signal.signal(signal.SIGTERM, _on_signal)
    old_int = signal.signal(signal.SIGINT, _on_signal)
    old_hook = sys.unraisablehook

    def hook(u):     # a dropped interrupt is not printed as a traceback: it is raised again
        if not (_PENDING and isinstance(u.exc_value, KeyboardInterrupt)):
            old_hook(u)
    sys.unraisablehook = hook

    def restore():
        signal.signal(signal.SIGTERM, old)
        signal.signal(signal.SIGINT, old_int)
        sys.unraisablehook = old_hook
    return restore


class Interrupts:
    """The evolve loop's sink for signals (:class:`tdse.run.loop.Sink`'s methods; no save
    point of its own): SIGINT/SIGTERM become KeyboardInterrupt while
    the loop runs (:func:`signal_guard`), and when one stops it the writer is closed valid
    (not complete, ``wall_seconds`` since ``started``) and :class:`Interrupted` is raised in
    its place, naming the file, its snapshots and ``last_time()``."""

    def __init__(self, writer, last_time, started=None):
        self.writer, self.last_time, self.started = writer, last_time, started
        self.restore = None

    def begin(self, state):
        self.restore = signal_guard()
        check_pending()          # one that arrived during the set-up and was dropped

    def next_point(self, step, stop):
        return None              # (the loop looks for a dropped signal at every save point)

    def save(self, state):
        pass

    def end(self, state):
        self._restore()

    def fail(self, state, error):
        self._restore()
        if not isinstance(error, KeyboardInterrupt):
            return
        acknowledge()
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
