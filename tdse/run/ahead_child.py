"""The start of an eigenpairs worker process (:class:`tdse.run.eigenpairs.Lookahead`), in a
module that imports nothing at its top: the spawned process unpickles its initializer
(:func:`start`) before anything else of tdse, so CuPy can be shut out before NumPy, SciPy
and tdse are imported.  The worker computes H(t)'s pairs on the host alone; importing
CuPy (through mgemm) was most of its start-up on a GPU machine."""
import sys

#: the worker's BLAS limit, held for the process's life
_LIMIT = []


def start(threads):
    """Shut CuPy out of this process (``import cupy`` then fails: mgemm's CPU paths), import
    the solvers now (the worker is ready once they are); BLAS held to ``threads``; SIGINT
    ignored (an interrupt is the loop's: it stops the run, which stops asking)."""
    import signal
    sys.modules.setdefault("cupy", None)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _orphan_watch()
    from ..lazy import defer
    defer()                     # (numpy.f2py and numpy.testing: ~85 ms of its start on 2 CPUs)
    from threadpoolctl import threadpool_limits

    from ..model import states  # noqa: F401 -- imported before the first call, not at it
    _LIMIT.append(threadpool_limits(threads))


#: how often a worker looks whether the process that started it is still there (s)
ORPHAN_POLL = 0.5


def _orphan_watch():
    """End this worker once the run that started it is gone without closing it: a run
    whose file the full disk refused to close leaves at once (``os._exit``,
    :func:`tdse.ui.files.storage_exit`), as a SIGKILL does.  The workers then lived on,
    holding the run's stderr: ``tdse run`` under a pipe never saw its end (the full-disk
    test waited out its 300 s).  A daemon thread, every :data:`ORPHAN_POLL` s."""
    import os
    import threading
    import time
    parent = os.getppid()

    def watch():
        while os.getppid() == parent:
            time.sleep(ORPHAN_POLL)
        os._exit(0)
    threading.Thread(target=watch, name="tdse-orphan-watch", daemon=True).start()
