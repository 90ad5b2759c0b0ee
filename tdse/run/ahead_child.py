"""The start of an eigenpairs worker process (:class:`tdse.run.eigenpairs.Lookahead`), in a
module that imports nothing at its top: a spawned process unpickles its initializer
(:func:`start`) before anything else of tdse, so CuPy can be shut out before NumPy, SciPy
and tdse are imported (the fork server likewise, :mod:`tdse.run.ahead_server`).  The
worker computes H(t)'s pairs on the host alone; importing CuPy (through mgemm) was most of
its start-up on a GPU machine.  Its results' states reach the run through a file
(:class:`Left`)."""
import itertools
import sys
import threading

#: the worker's BLAS limit, held for the process's life
_LIMIT = []

#: the run's folder of states (:class:`Left`), given at the worker's start: removed by the
#: watch of its run, once that run is gone without removing it (:func:`_orphan_watch`)
FOLDERS = set()
#: the files this worker has left (their names' counter)
_FILES = itertools.count()


def prepare():
    """Shut CuPy out of this process (``import cupy`` then fails: mgemm's CPU paths) and
    import the solvers now: a worker's start, or once in the fork server its workers are
    forked from (:mod:`tdse.run.ahead_server`), before which nothing of NumPy is imported."""
    sys.modules.setdefault("cupy", None)
    keep_memory()
    from ..lazy import defer
    defer()                     # (numpy.f2py and numpy.testing: ~85 ms of its start on 2 CPUs)
    import threadpoolctl  # noqa: F401

    from ..model import states  # noqa: F401 -- imported before the first call, not at it


def server_marker(pid) -> str:
    """The file the look-ahead's fork server started by process ``pid`` makes once it has
    imported the solvers (:mod:`tdse.run.ahead_server`; :func:`tdse.run.eigenpairs._context`)."""
    import os
    import tempfile
    return os.path.join(tempfile.gettempdir(), f"tdse-ahead-server-{pid}.ready")


#: glibc's mallopt parameters (malloc.h)
M_TRIM_THRESHOLD, M_TOP_PAD, M_MMAP_THRESHOLD = -1, -2, -3


def keep_memory():
    """glibc's malloc in this worker: arrays up to 32 MB (its most) from the heap, not each a
    fresh mapping, and freed memory kept for the next (not returned to the system): a
    window's solves make and drop arrays of a few MB at every iteration, whose pages' first
    touches had been a fifth of the window (h2plus_moving_large's molecule on one core, a
    window of 16 calls: 3-point N = 8192 39.6-42.0 -> 31.7-33.4 ms, 5-point 57-59 -> 50-52;
    at N <= 2048 within 10 %; the same bits: ``benchmarks/results/window_malloc_cpu2_20261201T0438.txt``).
    Whether the C library took all three settings (glibc's mallopt says 1 for each); None
    where it has no mallopt (nothing done)."""
    try:
        import ctypes
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return None
    return all([mallopt(M_MMAP_THRESHOLD, 32 << 20) == 1, mallopt(M_TRIM_THRESHOLD, 1 << 30) == 1,
                mallopt(M_TOP_PAD, 64 << 20) == 1])


def start(threads, folder=None):
    """A worker's start: :func:`prepare` (nothing left to import where the worker was forked
    from the fork server), BLAS held to ``threads``; SIGINT ignored (an interrupt is the
    loop's: it stops the run, which stops asking); the watch of its parent, which removes
    the run's ``folder`` of states (:class:`Left`) should the run go without removing it."""
    import signal
    if folder is not None:
        FOLDERS.add(folder)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _orphan_watch()
    prepare()
    from threadpoolctl import threadpool_limits
    _LIMIT.append(threadpool_limits(threads))


#: how often a worker looks whether the process that started it is still there (s)
ORPHAN_POLL = 0.5


def _orphan_watch():
    """End this worker once the run that started it is gone without closing it: a run
    whose file the full disk refused to close leaves at once (``os._exit``,
    :func:`tdse.ui.files.storage_exit`), as a SIGKILL does.  The workers then lived on,
    holding the run's stderr: ``tdse run`` under a pipe never saw its end (the full-disk
    test waited out its 300 s).  A daemon thread, every :data:`ORPHAN_POLL` s, watches the
    process that made the pool (multiprocessing's parent sentinel: a pipe only that
    process holds, at its end whether it was reaped or not) -- not the OS parent, which for
    a worker forked from the fork server is the server, and the server ends only once
    every worker has (each holds its "alive" pipe); the OS parent where there is no
    sentinel (a process not started by multiprocessing).  Before it ends, the worker removes
    the run's folder of states (:data:`FOLDERS`): a run killed leaves none in memory."""
    import multiprocessing
    import os
    import time
    run = multiprocessing.parent_process()
    parent = os.getppid()

    def alive():
        return run.is_alive() if run is not None else os.getppid() == parent

    def watch():
        while alive():
            time.sleep(ORPHAN_POLL)
        import shutil
        for folder in list(FOLDERS):
            shutil.rmtree(folder, ignore_errors=True)
        os._exit(0)
    threading.Thread(target=watch, name="tdse-orphan-watch", daemon=True).start()


class Left:
    """A task's pairs whose states a worker left in a file (:meth:`write`), read in the
    run's process (:meth:`take`: once, by the pool's thread as the task is done or by the
    loop, whichever comes first; the file then removed), so nothing of them passes the
    pool's pipe (why: :mod:`tdse.run.eigenpairs`).  The read and the removal leave the GIL
    (NumPy's fromfile, the unlink).  The run's folder goes at its close
    (:meth:`tdse.run.eigenpairs.Workers.close`), with the files of tasks it did not take;
    a worker whose run is gone removes the folders it wrote in (:func:`_orphan_watch`)."""

    def __init__(self, path, entries):
        self.path, self.entries = path, entries       # entries: (E, shape, dtype) a call
        self.pairs = None                             # (E, phi) a call, once read

    @classmethod
    def write(cls, out, into):
        import os

        import numpy as np
        path = os.path.join(into, f"{os.getpid()}-{next(_FILES)}")
        states = [np.ascontiguousarray(phi) for _, phi in out]
        try:
            with open(path, "wb") as f:
                for phi in states:
                    f.write(phi.data)
        except OSError:         # (no room -- a container's /dev/shm is 64 MB --: the caller
            try:                # sends them through the pipe)
                os.remove(path)
            except OSError:
                pass
            raise
        return cls(path, [(E, phi.shape, phi.dtype.str) for (E, _), phi in zip(out, states)])

    def take(self):
        """[(E, phi), ...]: the states read from the file (removed) at the first call."""
        import os

        import numpy as np
        with _READ:
            if self.pairs is None:
                try:
                    raw = np.fromfile(self.path, dtype=np.uint8)
                finally:
                    os.remove(self.path)
                out, at = [], 0
                for E, shape, dtype in self.entries:
                    dt = np.dtype(dtype)
                    n = int(np.prod(shape, dtype=np.int64)) * dt.itemsize
                    out.append((E, raw[at:at + n].view(dt).reshape(shape)))
                    at += n
                self.pairs = out
        return self.pairs


#: the lock of :meth:`Left.take` in the run's process (the pool's thread and the loop)
_READ = threading.Lock()


def read_left(future):
    """A done task's states read at once where it left them in a file (:meth:`Left.take`; a
    done-callback, run by the pool's thread)."""
    try:
        if future.cancelled() or future.exception() is not None:
            return
        left = future.result()[0]
        if isinstance(left, Left):
            left.take()
    except OSError:             # (the run's folder gone at its close: not wanted)
        pass
