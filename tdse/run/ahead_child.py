"""The start of an eigenpairs worker process (:func:`tdse.run.observers.worker_pools`), in a
module that imports nothing at its top: the spawned process unpickles its initializer
(:func:`start`) before anything else of tdse, so CuPy can be shut out before NumPy, SciPy
and tdse are imported.  The worker computes H(t)'s pairs on the host alone; importing
CuPy (through mgemm) was most of its start-up on a GPU machine."""
import sys


def start(threads):
    """Shut CuPy out of this process (``import cupy`` then fails: mgemm's CPU paths), import
    the solvers now (the worker is ready once they are), then the worker's own start."""
    sys.modules.setdefault("cupy", None)
    from . import observers
    from ..model import states  # noqa: F401 -- imported before the first call, not at it
    observers._worker_init(threads)
