"""A run: :func:`run` = set-up (:func:`tdse.run.plan.prepare`, once), the output file,
the sinks, :func:`tdse.run.loop.evolve` under :mod:`tdse.run.interrupts`, finish
(close, rename).  The result is one :class:`Result` (the run's numbers and its arrays).

With ``out_dir`` the run writes OUT/<name>.h5.part and renames it OUT/<name>.h5 when it
completes; without, nothing is written and the arrays stay in memory.  Atomic units.
"""
from __future__ import annotations

import contextlib
import json
import math
import os
import time
from dataclasses import dataclass, field

import numpy as np

from ..config import Config, ConfigError
from ..model.potential import total
from ..model.states import DTYPE
from ..numerics.precheck import Precheck
from .interrupts import Interrupts
from .loop import evolve
from .eigenpairs import look_ahead
from .rows import Observables
from .sinks import Progress, Snapshots
from .plan import RunPlan, prepare
from .resources import check_resources
from .memory import MemoryWriter
from .snapshots import OutputExists, SnapshotWriter, final_path, part_path, publish
from ..numerics.adaptive import EstimatingStepper
from .timeerror import CompanionEstimate, LocalEstimate, TimeErrorEstimate, window_start
from .tsurff import TSurff

__all__ = ["Result", "run"]


@dataclass
class Result:
    """One run: ``config`` (the configuration run, auto resolved), ``path`` (the HDF5 file,
    or None), ``precheck``, ``steps``, ``snapshots``, ``seconds`` (wall of the loop),
    ``backend``, ``time_error`` (the estimate, or None), ``exponentials``; and its arrays:
    ``t`` / ``psi`` (snapshot times and psi(t), (T, N)), ``x``, ``observables`` (name ->
    array over ``observables["t"]``; ``P`` in operator mode), ``energies`` / ``states``
    (the lowest eigenpairs of H(0)), ``attrs`` (the file's attributes) -- read from the
    file on first use when the run wrote one."""
    config: Config
    path: str | None = None
    precheck: Precheck | None = None
    steps: int = 0
    snapshots: int = 0
    seconds: float = 0.0
    backend: str = ""
    time_error: dict | None = None
    exponentials: int = 0
    data: dict | None = field(default=None, repr=False)
    notes: tuple = ()

    def arrays(self) -> dict:
        """The run's datasets and ``attrs`` as :func:`tdse.run.snapshots.read` returns them."""
        if self.data is None:
            from .snapshots import read
            self.data = read(self.path)
        return self.data

    @property
    def t(self):
        return self.arrays()["snapshots/t"]

    @property
    def x(self):
        return self.arrays()["grid/x"]

    @property
    def psi(self):
        return self.arrays()["snapshots/psi"]

    @property
    def energies(self):
        return self.arrays()["states/energies"]

    @property
    def states(self):
        return self.arrays()["states/phi"]

    @property
    def attrs(self):
        return self.arrays()["attrs"]

    @property
    def observables(self) -> dict:
        d = self.arrays()
        obs = {k.split("/", 1)[1]: v for k, v in d.items() if k.startswith("observables/")}
        if "operator/P" in d:
            obs["P"] = d["operator/P"]
        return obs

    @classmethod
    def from_file(cls, path):
        """A finished (or interrupted) run file."""
        from ..config import loads
        from .snapshots import read
        d = read(path)
        a = d["attrs"]
        te = a.get("time_error")
        import json
        return cls(loads(a.get("effective_toml") or a["input_toml"]), path,
                   snapshots=len(d["snapshots/t"]), steps=int(a.get("steps", 0)),
                   backend=a.get("backend", ""), data=d,
                   time_error=json.loads(te) if te not in (None, "none") else None)


# ---------------------------------------------------------------- the parts of a run
def _output_paths(config, out_dir, resume, force):
    """(work file, final file): OUT/<name>.h5.part and OUT/<name>.h5, or the resumed file."""
    if resume is None:
        os.makedirs(out_dir, exist_ok=True)
        path = os.path.join(out_dir, f"{config.name}.h5")
        work = part_path(path)
        for p in (path, work):
            if os.path.exists(p) and not force:
                raise OutputExists(p)
        return work, path
    work = resume[1]
    path = final_path(work)
    if path != work and os.path.exists(path) and not force:
        raise OutputExists(path)
    return work, path


def _open_writer(plan, work, attrs, resume):
    config, x = plan.config, plan.x
    K = config.output.populations
    E0, phi0 = plan.energies, plan.states
    extra = ({"P": ("operator", np.float64, (K, K), "1",
                    "P_mn(t) = |<m|U(t)|n>|^2 between the lowest eigenstates of H(0)")}
             if config.propagator.operator else None)
    if work is None:  # in memory (tdse.simulate without out)
        return MemoryWriter(config=config, x=x, v0=total(config.potential, x, 0.0),
                            energies=E0[:K], phi=phi0[:K], attrs=attrs, extra=extra)
    background = background_writes(plan)
    if resume is None:
        return SnapshotWriter(work, config=config, x=x, v0=total(config.potential, x, 0.0),
                              energies=E0[:K], phi=phi0[:K], attrs=attrs, force=True,
                              extra=extra, background=background)
    return SnapshotWriter(work, config=config, x=x, v0=None, energies=E0[:K], phi=None,
                          attrs={"resumed_at_step": resume[0]["step"], **attrs}, extra=extra,
                          reopen=True, background=background)


def background_writes(plan) -> bool:
    """Whether the run file's blocks are written in a thread beside the loop
    (:class:`SnapshotWriter`'s ``background``): the option ``run.io_thread`` = "on" always,
    "off" never, "auto" (the default) where psi lives on a GPU -- there the loop's thread is what keeps
    the device fed, and a block held it 45-80 ms on an H100's host (N = 8192, 3-point:
    ``step_attrib_h100x1_20261126T1620_3point.txt``); on a CPU the block's calls would take
    a core from the run's BLAS threads."""
    mode = plan.config.run.io_thread
    return mode == "on" or (mode == "auto" and plan.backend.xp is not np)


def _start_state(plan, resume, work):
    config, xp, psi0 = plan.config, plan.backend.xp, plan.psi0
    """(psi, U(t) or None, first step) on the device: psi(0) and I, or the resumed state."""
    op_mode = config.propagator.operator
    if resume is None:
        return xp.asarray(psi0), (xp.eye(config.grid.n, dtype=DTYPE) if op_mode else None), 0
    state = resume[0]
    Ut = None
    if op_mode:
        if state["U"] is None:
            raise ConfigError("--resume", work, "operator mode, but the file holds no U(t)")
        Ut = xp.asarray(state["U"])
    return xp.asarray(state["psi"]), Ut, state["step"]


def _time_error(plan, stepper, writer, snaps, resume, start):
    """The sink that estimates the time-discretisation error (propagator.time_error)."""
    pr = plan.config.propagator
    if pr.time_error == "companion":
        return CompanionEstimate(plan, writer, snaps, resume[0] if resume else None)
    if pr.time_error == "estimate":
        return LocalEstimate(plan, stepper, writer, snaps, resume[0] if resume else None)
    if pr.time_error == "window" and pr.error_window:
        return TimeErrorEstimate(plan, pr.error_window, window_start(plan.config), writer,
                                 resume[0]["attrs"].get("time_error") if resume else None, start)
    return None


def run(config, out_dir, *, backend="auto", devices=None, force=False, progress=False,
        precheck_result: Precheck | None = None, resume=None, allow_inaccurate=False,
        threads=None, workers=None) -> Result:
    """Propagate ``config`` (a Config, or a :class:`RunPlan` already prepared) and write
    OUT/<name>.h5 (:mod:`tdse.run.snapshots`); with ``out_dir=None`` nothing is written
    and the arrays stay in the :class:`Result`.

    ``resume``: a :func:`tdse.run.snapshots.resume_state` dict and its file path, to
    continue an interrupted run from its last whole snapshot (the same steps follow, so
    the result is bit-identical on the CPU).  SIGINT/SIGTERM close the file valid and raise
    :class:`tdse.run.interrupts.Interrupted`.  ``force``: overwrite an existing output;
    ``allow_inaccurate``: run although the exponential misses its tolerance;
    ``threads``: the host's BLAS threads, on a GPU run too (default: :func:`tdse.run.backend.blas_threads`).

    ``workers``: the look-ahead's processes the caller opened (:func:`look_ahead`, before
    it prepared), used and left to it to close; without them they are opened here
    (:func:`look_ahead`: before the set-up, and before the preparation when ``config`` is a
    Config) and closed when the run ends."""
    entered = time.time()
    cfg = config.config if isinstance(config, RunPlan) else config
    with contextlib.nullcontext(workers) if workers is not None else \
            look_ahead(cfg, backend, threads, prime=resume is None) as w:
        return _run(config, out_dir, backend=backend, devices=devices, force=force,
                    progress=progress, precheck_result=precheck_result, resume=resume,
                    allow_inaccurate=allow_inaccurate, threads=threads, workers=w,
                    entered=entered)


def _run(config, out_dir, *, backend, devices, force, progress, precheck_result, resume,
         allow_inaccurate, threads, workers, entered) -> Result:
    plan = config if isinstance(config, RunPlan) else prepare(
        config, backend=backend, devices=devices, threads=threads,
        allow_inaccurate=allow_inaccurate, pc=precheck_result)
    config = plan.config
    in_memory = out_dir is None and resume is None
    work, path = (None, None) if in_memory else _output_paths(config, out_dir, resume, force)
    check_resources(config, plan.backend.name, list(plan.backend.devices or []),
                    None if work is None else os.path.dirname(os.path.abspath(work)),
                    existing=os.path.getsize(work) if resume else 0)
    writer, complete, bar, t0 = None, False, None, None
    timeline = _timeline(entered, plan)
    try:    # from here a failure closes the file (none is left without a whole snapshot)
        writer = _open_writer(plan, work, plan.attrs(allow_inaccurate), resume)
        stepper = plan.stepper()
        if config.propagator.time_error == "estimate" and not isinstance(stepper, EstimatingStepper):
            stepper = EstimatingStepper(config, plan.stepper, plan.backend.xp)   # fixed steps
        psi, Ut, start = _start_state(plan, resume, work)
        snaps = Snapshots(plan, writer, start)
        obs = Observables(plan, writer, workers)
        sinks = [obs, snaps]
        if config.output.tsurff_radius:    # (before snaps: its sums go with each snapshot)
            o = config.output
            sinks.insert(1, TSurff(config, o.tsurff_radius, o.tsurff_k_max, o.tsurff_momenta,
                                   snaps, writer, resume[0] if resume else None))
        estimate = _time_error(plan, stepper, writer, snaps, resume, start)
        if estimate is not None:
            sinks.insert(0, estimate)      # (its row values reach the snapshot's row)
        # (no sink adds to the snapshots' rows: the steps may take them, Snapshots.tap)
        snaps.alone = estimate is None and not config.output.tsurff_radius
        bar = Progress(config.time.steps, start, config.name, disable=not progress)
        t0, timeline["loop"] = time.perf_counter(), time.time()
        sinks += [bar, Interrupts(writer, lambda: snaps.last_step * config.time.dt, t0)]
        evolve(plan, psi, sinks, start=start, U0=Ut, resumed=resume is not None,
               stepper=stepper)           # (evolve holds the plan's BLAS threads)
        timeline["loop_end"] = time.time()
        complete = True
    finally:  # finish: a crash leaves the .part file valid, not complete
        if bar is not None:
            bar.close()
        if writer is not None:
            _close(writer, complete, None if t0 is None else (t0, stepper, obs),
                   None if resume else work, timeline)
        elif resume is None and work is not None and os.path.exists(work):
            os.remove(work)     # stopped while the new file was being made: nothing in it
    publish(work, path)     # (nothing where the run was resumed in place or kept in memory)
    return Result(config, path, plan.precheck, config.time.steps, writer.count,
                  time.perf_counter() - t0, plan.backend.name,
                  estimate.result if estimate else None, stepper.exponentials,
                  data=writer.data() if work is None else None,
                  notes=eigenpairs_note(config, obs.eigen_wait, obs.eigen_calls,
                                        time.perf_counter() - t0, config.time.steps - start))


def _timeline(entered, plan) -> dict:
    """The run's epoch marks so far (the file's ``timeline``, :func:`_close`): :func:`run`
    entered and, where the plan holds it, :func:`tdse.run.plan.prepare`'s [start, end]."""
    return {"run": entered, **({"prepare": list(plan.prepare_window)} if plan.prepare_window else {})}


def _close(writer, complete, ran, new_file, timeline=None):
    """Close the run's writer: the loop's counts when it ran (``ran``: (t0, stepper,
    observables), or None when it stopped while being set up); a new run file
    (``new_file``) that holds no snapshot is removed -- nothing to resume from.

    ``timeline``: epoch seconds (``time.time()``) of the run's marks, written as the JSON
    attribute ``timeline`` with "close" (now, before the last block's write and the file's
    close): "run" (:func:`run` entered), "prepare" ([start, end] of
    :func:`tdse.run.plan.prepare`), "loop" (the loop's clock started: the writer, stepper
    and sinks made), "loop_end" (the loop and its sinks' ends done) -- so that a
    caller who knows when the process started and ended (the run-overhead suite) can
    split its wall: imports, preparation, set-up, loop, close and exit."""
    if writer.f and ran:
        t0, stepper, obs = ran
        writer.set_attrs(timeline=json.dumps({**(timeline or {}), "close": time.time()}),
                         wall_seconds=time.perf_counter() - t0,
                         exponentials=stepper.exponentials,
                         chebyshev_terms_applied=stepper.cheb_terms,
                         context_switch_seconds=stepper.context_switch_seconds,
                         eigenpairs_seconds=obs.eigen_seconds, eigenpairs_calls=obs.eigen_calls,
                         eigenpairs_wait_seconds=obs.eigen_wait)
    if writer.f:
        writer.close(complete)
    if not complete and new_file and writer.count == 0 and os.path.exists(new_file):
        os.remove(new_file)


#: the closing note suggests ``output.populations_every`` when H(t)'s eigenpairs took more
#: than this fraction of the run's loop, and a cadence that brings them to about half of it
EIGENPAIRS_SHARE = 0.15


def eigenpairs_note(config, seconds, calls, wall, steps) -> tuple:
    """() or one line: the loop waited for H(t)'s eigenpairs (the populations' reference
    states; ``seconds``: the wait, computed ahead in a worker process, or all of them when not)
    more than :data:`EIGENPAIRS_SHARE` of the loop's ``wall``; the
    ``output.populations_every`` that would bring them to about half that share, a multiple
    of ``observables_every``."""
    if calls < 2 or wall <= 0 or seconds <= EIGENPAIRS_SHARE * wall:
        return ()
    o = config.output
    per, rest = seconds / calls, max(wall - seconds, 1e-9)
    want = per * steps / (0.5 * EIGENPAIRS_SHARE * rest)        # steps between calls
    every = o.observables_every * max(1, math.ceil(want / o.observables_every))
    return (f"waiting for H(t)'s eigenpairs (the populations' reference states) took {seconds:.3g} s of "
            f"the run's {wall:.3g} s ({calls} calls, {per * 1e3:.3g} ms each); "
            f"output.populations_every = {every} would make them ~{50 * EIGENPAIRS_SHARE:.0f} % "
            f"(the other observables stay every {o.observables_every} step(s))",)
