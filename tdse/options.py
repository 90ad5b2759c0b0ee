"""Every performance knob of a run, declared once (JAX's ``jax/_src/config.py``; STYLE.md
item 16): :data:`OPTIONS` gives each its type, default, choices and what it does;
:class:`RunOptions` holds a run's values, frozen.  They change where and how the work is
done, never the numbers' meaning: a run file records them (its ``run_options`` attribute
and the ``[run]`` table of its effective input), so a timing can be traced to the options
that made it.

Set from the input (a ``[run]`` table), the command line (``tdse run INPUT --set
run.graphs=false``) or the API (``tdse.prepare(cfg, options={"graphs": False})``); a bad
value is one line naming ``run.<key>`` and the value (exit code 2).  This is also the one
module of ``tdse`` that reads the process's environment (:func:`env_threads`,
:func:`environ_saved`, :func:`blas_env`): a test greps the others.
"""
from __future__ import annotations

import contextlib
import dataclasses
import os
from dataclasses import dataclass

from .errors import ConfigError

__all__ = ["Option", "OPTIONS", "RunOptions", "parse_options", "THREAD_ENV", "env_threads", "available_memory",
           "environ_saved", "environ_restore", "blas_env", "blas_limit"]


@dataclass(frozen=True)
class Option:
    name: str
    choices: tuple      # allowed values (a bool option: (True, False))
    default: object
    meaning: str


#: the knobs, each once (the input reference's ``[run]`` rows are made from this table)
OPTIONS = (
    Option("graphs", (True, False), True,
           "on a GPU, each step is one CUDA graph launch where the method allows "
           "(tdse.numerics.graphs); false launches each kernel from Python (slower; for "
           "comparing the two paths)"),
    Option("io_thread", ("auto", "on", "off"), "auto",
           "the run file's blocks written in a thread beside the loop: auto = where psi lives "
           "on a GPU (a block held the loop 45-80 ms on an H100's host at N = 8192); on a CPU "
           "the thread would take a core from the run's BLAS"),
    Option("eigen_workers", ("auto", "on", "off"), "auto",
           "moving centres: H(t)'s eigenpairs for the populations computed ahead in worker "
           "processes beside the loop (tdse.run.eigenpairs): auto = where a CPU is spare (beside "
           "the loop on a GPU, beside the BLAS threads on the CPU) and they would take the "
           "loop more than 0.1 s (0.15 s on fewer than 4 CPUs); one worker that falls behind a "
           "loop asking for the DVR's pairs every step up to N = 512 (a dense solve a call) "
           "takes two calls of every three from then on, the loop the third"),
    Option("context_switch", (True, False), True,
           "a GPU loop of 1000 steps or more starts with a context switch on each GPU where "
           "this process ran work on a second stream (auto's calibration where it times the dense "
           "exponent), so that its steps "
           "are scheduled as before it (~0.2 s a GPU, recorded as context_switch_seconds)"),
)

_BY_NAME = {o.name: o for o in OPTIONS}


@dataclass(frozen=True)
class RunOptions:
    """A run's options (:data:`OPTIONS` says what each does); every field is validated by
    :func:`parse_options` and recorded in the run file."""
    graphs: bool = True
    io_thread: str = "auto"
    eigen_workers: str = "auto"
    context_switch: bool = True

    def replace(self, **values) -> "RunOptions":
        """These options with ``values`` set, validated (one-line ConfigError)."""
        return parse_options({**self.as_dict(), **values})

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


def _check(name, value):
    opt = _BY_NAME.get(name)
    if opt is None:
        raise ConfigError(f"run.{name}", value,
                          f"unknown key; allowed here: {', '.join(_BY_NAME)}")
    if isinstance(opt.default, bool):
        if not isinstance(value, bool):
            raise ConfigError(f"run.{name}", value, "must be true or false")
    elif not isinstance(value, str) or value not in opt.choices:
        raise ConfigError(f"run.{name}", value,
                          "must be " + ", ".join(f'"{c}"' for c in opt.choices[:-1])
                          + f' or "{opt.choices[-1]}"')
    return value


#: options that were and are gone: a ``[run]`` key of these (a run file written before,
#: resumed) is passed over
RETIRED = ("observer_process",)


def parse_options(table=None) -> RunOptions:
    """A :class:`RunOptions` from a ``[run]`` table (a dict; a RunOptions or None passes
    through as itself or the defaults); each key and value checked, one-line ConfigError
    (a :data:`RETIRED` key passed over)."""
    if table is None:
        return RunOptions()
    if isinstance(table, RunOptions):
        return table
    if not isinstance(table, dict):
            raise ConfigError("run", table, "must be a table of options")
    return RunOptions(**{k: _check(k, v) for k, v in table.items() if k not in RETIRED})


# ---------------------------------------------------------------- the environment
#: the environment's thread counts, read in this order; the first positive integer caps
#: :func:`tdse.run.backend.usable_cpus` (a launcher's word: Dask's nanny sets them to 1 in
#: each worker)
THREAD_ENV = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def env_threads() -> int | None:
    """The thread count the environment sets (:data:`THREAD_ENV`), or None."""
    for key in THREAD_ENV:
        v = os.environ.get(key, "").strip()
        if v.isdigit() and int(v) > 0:
            return int(v)
    return None


def environ_saved() -> dict:
    """A copy of the process's environment, for :func:`environ_restore`."""
    return dict(os.environ)


def environ_restore(saved: dict):
    """The process's environment back to ``saved`` (what was set or changed since, undone:
    a Dask LocalCluster's nannies write OMP_NUM_THREADS=1 and the like into it)."""
    for k in [k for k in os.environ if k not in saved]:
        del os.environ[k]
    for k, v in saved.items():
        if os.environ.get(k) != v:
            os.environ[k] = v


#: BLAS threads of the direct and iterative eigensolvers wherever they run (the loop, a
#: look-ahead worker process of any thread count; :data:`tdse.model.states.EIGEN_BLAS_THREADS`):
#: LAPACK's and BLAS's results depend on their thread count (the order of their sums), so a
#: fixed count keeps a call's pairs the same bits wherever it is computed -- a GPU test found
#: two runs of one input 1e-12 apart in <n>, their calls split differently between the
#: loop (16 threads) and two workers (4 and 1).  Here, not in states, so that the run can
#: start its workers before it imports the solvers (:class:`tdse.run.eigenpairs.Workers`).
EIGEN_BLAS_THREADS = 1

#: the DVR's eigenpairs by the dense symmetric solver up to this N, iteratively beyond
#: (:func:`tdse.model.states.davidson` from the finite-difference pairs; measured on 2 cores
#: at N = 1024: dense 0.09 s, iterative 0.02 s); the Tracker's direct/iterative switch for
#: both the DVR and the 5-point H (up to it the direct solvers cost milliseconds).  Here, not
#: in states, for the same reason as EIGEN_BLAS_THREADS: the look-ahead's cost guess
#: (:func:`tdse.run.eigenpairs.seconds_guess`) reads it before the workers start, and its
#: import of the solvers (~0.2-0.3 s) had put a DVR run's workers' start after them
DVR_DENSE_MAX = 512

#: the variables that set the BLAS libraries' threads at their start (OpenBLAS, OpenMP, MKL)
BLAS_ENV = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


@contextlib.contextmanager
def blas_env(threads):
    """This process's environment, while a worker is spawned, set to start its BLAS with
    ``threads`` threads (the child inherits it; restored after): the spawned process
    imports NumPy before its initializer runs, and an OpenBLAS started with a thread per
    CPU spins them up at the import -- on one H100's 16-CPU host two workers were ready
    after 0.98 s, `import numpy, scipy.linalg` alone taking 0.88 s of wall and 4.6 s of CPU."""
    old = {k: os.environ.get(k) for k in BLAS_ENV}
    os.environ.update({k: str(threads) for k in BLAS_ENV})
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


#: this process's threadpoolctl controller (:func:`blas_limit`), made at its first use
_CONTROLLER = []


def blas_limit(threads, user_api=None):
    """A context holding this process's BLAS (``user_api`` None: and OpenMP) to ``threads``
    threads -- nothing for None, or where threadpoolctl is absent -- by one threadpoolctl
    controller made at the first call, after NumPy's and SciPy's linear algebra are imported
    so that it holds both OpenBLAS libraries (SciPy's wheels carry their own); a BLAS loaded
    after that call is not limited.  ``threadpool_limits`` makes a controller at each call,
    checking every loaded library's path: ~0.6 ms on a 2-CPU box, ~8.5 ms on a GPU host with
    CUDA's libraries loaded, twice a run (``estimate_prof_h200x1_20261203T1948.txt``); a made
    controller's limit ~15 us."""
    if threads is None:
        return contextlib.nullcontext()
    try:
        if not _CONTROLLER:
            import importlib
            for name in ("numpy", "scipy.linalg"):   # (their BLAS loaded before it looks)
                importlib.import_module(name)
            from threadpoolctl import ThreadpoolController
            _CONTROLLER.append(ThreadpoolController())
    except ImportError:  # pragma: no cover -- threadpoolctl is a dependency
        return contextlib.nullcontext()
    return _CONTROLLER[0].limit(limits=threads, user_api=user_api)


def available_memory() -> int:
    """Bytes of memory available now (MemAvailable), or total physical memory."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return 1 << 34
