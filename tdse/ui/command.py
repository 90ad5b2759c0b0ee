"""The ``tdse`` command's entry point (``[project.scripts]``, ``python -m tdse``): SIGINT is
the command's from before the CLI's imports (:func:`tdse.run.interrupts.accept_sigint`), so
one that lands in them ends it with one line and exit code 130, not a traceback.

The process ends as soon as the command's work is done (:func:`_end_now`): after the
threads' joins and the exit functions, without the interpreter's own teardown, which frees
each module and object one by one -- work whose result nobody reads.  mypy's
``util.hard_exit`` does the same for its large heaps."""

#: the command's exit status, once it has one (SystemExit's); None: an uncaught exception
#: or not yet ended -- Python's own exit then
_STATUS = []


def main():
    import atexit
    atexit.register(_end_now)       # the first registered: the last to run
    from ..run.interrupts import accept_sigint
    accept_sigint(program=True)
    from .cli import main as cli
    try:
        return cli()
    except SystemExit as e:          # (click's standalone mode ends every command so)
        code = e.code
        _STATUS.append(0 if code is None else code if isinstance(code, int) else 1)
        raise


def _end_now():
    """``os._exit`` with the command's status, after Python has joined its threads and run
    every exit function registered since :func:`main` began (multiprocessing's, weakref
    finalizers, the look-ahead's folders; one registered before it -- none in ``tdse`` or
    ``python -m tdse`` -- would not run): what it leaves out is the interpreter's teardown,
    nothing a user reads.  A `tdse run`'s end after its work: 0.10 -> 0.008 s on 2 CPUs,
    0.30-0.32 -> 0.14 s on one H200 (the rest the CUDA context's end, in the driver, as the
    process ends; ``benchmarks/archive/exit_cost.py``, ``exit_cost_*_20261202T050*.txt``).
    Not taken where the command ended by an uncaught exception, where flushing stdout or
    stderr fails (Python's own exit reports it), or where an HDF5 file is still open
    (HDF5's own exit function would close it: the run's files are all closed by then)."""
    import os
    import sys
    if not _STATUS:
        return
    try:
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:
                stream.flush()
    except (OSError, ValueError):
        return
    h5py = sys.modules.get("h5py")
    if h5py is not None and h5py.h5f.get_obj_count(h5py.h5f.OBJ_ALL, h5py.h5f.OBJ_FILE):
        return
    os._exit(_STATUS[-1])
