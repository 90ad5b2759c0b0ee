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
    from threadpoolctl import threadpool_limits

    from ..model import states  # noqa: F401 -- imported before the first call, not at it
    _LIMIT.append(threadpool_limits(threads))
