"""A run: psi(0) -> psi(t_end) by the chosen scheme and exponential (:mod:`tdse.stepper`),
with observables every ``output.observables_every`` steps, snapshots every
``output.every`` steps, and an estimate of the time-discretisation error.

:func:`run` reads as the job: prepare (backend, output paths, eigenstates of H(0), the
file), check (the precheck's verdict, :mod:`tdse.resources`), loop (step, observe,
snapshot) under :mod:`tdse.interrupts`, finish (close, rename).

**Time error estimate** (:class:`TimeErrorEstimate`): ``error_window`` steps are also run
at dt/2 (step doubling) -- the first ones, or with a laser field those around the pulse's
peak; for a scheme of order p,
err(dt) ~ min_a ||psi_dt - e^(ia) psi_(dt/2)|| 2^p / (2^p - 1) at the window's end (a
global phase is no error of the state), and assuming
linear growth in time, err(t_end) ~ err(window) t_end / t_window.  This is an estimate
of the solution's error from the time discretisation (it includes the exponentials'
own small errors); the exponentials' bounds of the precheck are per exponential, and
the grid's error is what ``tdse converge`` measures.
"""
from __future__ import annotations

import dataclasses
import json
import math
import os
import time
import warnings
from dataclasses import dataclass

import numpy as np

from mgemm.arrays import to_host

from . import cost, hamiltonian, observables, schemes
from .config import Config, ConfigError
from .grid import points
from .interrupts import interruptible
from .potential import centre_positions, total
from .precheck import DTYPE, Precheck, precheck
from .resources import blas_threads, check_resources, resolve_backend, thread_limit
from .snapshots import MemoryWriter, OutputExists, SnapshotWriter, final_path, part_path
from .stepper import Propagator, step_gemm_opts

__all__ = ["DTYPE", "Propagator", "RunResult", "TimeErrorEstimate", "initial_state", "run",
           "step_gemm_opts"]


def initial_state(config: Config, x, phi0):
    """psi(0): an eigenstate of H(0) (index ``state``) or a normalised Gaussian packet."""
    ini = config.initial
    if ini.state == "gaussian":
        psi = np.exp(-((x - ini.x0) ** 2) / (4 * ini.sigma ** 2) + 1j * ini.k0 * x)
        return psi / math.sqrt(observables.norm(psi, config.grid.dx))
    return phi0[ini.state].astype(DTYPE)


def phase_blind_distance(a, b, dx):
    """min over alpha of ||a - e^(i alpha) b|| (L2 with weight dx): a global phase is no
    error of the state.  Computed as the distance to the aligned b (no cancellation)."""
    ov = np.vdot(b, a)
    ph = ov / abs(ov) if abs(ov) > 0 else 1.0
    return math.sqrt(float(np.sum(np.abs(a - ph * b) ** 2)) * dx)


def window_start(config: Config) -> int:
    """First step of the time-error window: 0 (the start, where an abrupt drive kicks),
    or with a field the window centred on the pulse's peak (duration/2), within the run."""
    W, steps = config.propagator.error_window, config.time.steps
    fld = config.potential.field
    if fld is None:
        return 0
    mid = round(0.5 * min(fld.duration, config.time.t_end) / config.time.dt)
    return int(min(max(0, mid - W // 2), max(0, steps - W)))


class TimeErrorEstimate:
    """Step doubling over ``window`` steps from step ``start`` (module docstring)."""

    def __init__(self, config: Config, window: int, xp, gemm_opts, start=0):
        self.config, self.window, self.xp, self.start_step = config, window, xp, start
        dt = config.time.dt
        half = dataclasses.replace(config, time=dataclasses.replace(
            config.time, dt=dt / 2, t_end=(start + window) * dt))
        plan = None if config.propagator.method == "chebyshev" else \
            precheck(half, check_resolution=False).plan
        self.half = Propagator(half, plan, xp, gemm_opts)
        self.order = schemes.get(config.propagator.scheme).order
        self.psi = None
        self.result = None

    def begin(self, j, psi):
        """Before main step j: take psi(t_j) when the window starts here."""
        if self.result is None and self.psi is None and j == self.start_step:
            self.psi = self.xp.array(psi, copy=True)

    def advance(self, j, psi):
        """After main step j (psi = psi(t_(j+1))): two half steps; at the window's end the
        estimate is made (returns it then)."""
        if self.result is not None or self.psi is None:
            return None
        self.psi = self.half.step(self.half.step(self.psi, 2 * j), 2 * j + 1)
        if j + 1 < self.start_step + self.window:
            return None
        cfg, p = self.config, self.order
        a, b = to_host(psi), to_host(self.psi)
        l2 = math.sqrt(float(np.sum(np.abs(a - b) ** 2)) * cfg.grid.dx)
        diff = phase_blind_distance(a, b, cfg.grid.dx)
        err = diff * 2 ** p / (2 ** p - 1)
        t0, t1 = self.start_step * cfg.time.dt, (self.start_step + self.window) * cfg.time.dt
        self.result = {
            "scheme": cfg.propagator.scheme, "order": p, "dt": cfg.time.dt,
            "window_steps": self.window, "t_window_start": t0, "t_window": t1,
            "psi_diff_dt_vs_half": diff, "psi_l2_diff_with_phase": l2,
            "error_at_window": err, "error_at_t_end_linear": err * cfg.time.steps / self.window,
            "t_end": cfg.time.t_end,
            "meaning": "estimated error of psi (L2 distance up to a global phase) from the time "
                       "discretisation, by step doubling over a window of the run; extrapolated "
                       "to t_end assuming it grows linearly in time"}
        self.psi = None
        return self.result


@dataclass
class RunResult:
    path: str
    precheck: Precheck
    steps: int
    snapshots: int
    seconds: float
    backend: str
    time_error: dict | None = None
    exponentials: int = 0
    data: dict | None = None   # the run's arrays when it wrote no file (out_dir=None)
    config: Config | None = None  # the configuration it ran (method "auto" resolved)


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


def _open_writer(config, work, x, E0, phi0, attrs, resume):
    K = config.output.populations
    extra = ({"P": ("operator", np.float64, (K, K), "1",
                    "P_mn(t) = |<m|U(t)|n>|^2 between the lowest eigenstates of H(0)")}
             if config.propagator.operator else None)
    if work is None:  # in memory (tdse.simulate without out)
        return MemoryWriter(config=config, x=x, v0=total(config.potential, x, 0.0),
                            energies=E0[:K], phi=phi0[:K], attrs=attrs, extra=extra)
    if resume is None:
        return SnapshotWriter(work, config=config, x=x, v0=total(config.potential, x, 0.0),
                              energies=E0[:K], phi=phi0[:K], attrs=attrs, force=True,
                              extra=extra)
    return SnapshotWriter(work, config=config, x=x, v0=None, energies=E0[:K], phi=None,
                          attrs={"resumed_at_step": resume[0]["step"], **attrs}, extra=extra,
                          reopen=True)


#: warn when more of the norm than this sits within 10 points of a wall (no absorber)
EDGE_NORM = 1e-6


class BoundaryWarning(UserWarning):
    """psi reaches the box's walls, where it reflects (a run without an absorber)."""


class _Recorder:
    """Observables every ``observables_every`` steps and snapshots every ``every`` steps
    (and both at the last step), appended to the run file."""

    def __init__(self, config, x, phi0, psi0, writer):
        self.config, self.x, self.writer = config, x, writer
        self.phi0 = phi0[:config.output.populations]
        self.psi0 = np.asarray(psi0)
        self.last_step = 0
        self.warned_edge = config.absorber is not None  # an absorber takes what reaches a wall
        self._states = None

    def molecular_states(self, t):
        """Eigenpairs of the molecular H(t) (no field, no absorber); computed once when no
        centre moves."""
        cfg = self.config
        if any(c.moving for c in cfg.potential.centres):
            return hamiltonian.eigenstates(cfg, t, cfg.output.populations)
        if self._states is None:
            self._states = hamiltonian.eigenstates(cfg, 0.0, cfg.output.populations)
        return self._states

    def transitions(self, U_host):  # P_mn = |<m|U|n>|^2 = |dx sum_x phi_m (U phi_n)|^2
        return np.abs(self.phi0 @ (U_host @ self.phi0.T.astype(DTYPE)) * self.config.grid.dx) ** 2

    def due(self, step):
        out, last = self.config.output, step == self.config.time.steps
        return (step % out.observables_every == 0 or last), (step % out.every == 0 or last)

    def record(self, step, psi_dev, Ut=None, force=False):
        obs_due, snap_due = self.due(step)
        if not (obs_due or snap_due or force):
            return
        cfg, dx = self.config, self.config.grid.dx
        t = step * cfg.time.dt
        psi = to_host(psi_dev)
        if obs_due or force:
            self.writer.observe(step=step, **observables.measure(
                cfg, self.x, t, psi, self.phi0, self.psi0, self.molecular_states(t)))
            edge = observables.edge_norm(psi, dx)
            if not self.warned_edge and edge > EDGE_NORM:
                self.warned_edge = True
                warnings.warn(f"at t = {t:.4g} more than {EDGE_NORM:g} of the norm ({edge:.2g}) "
                              f"is within 10 grid points of a wall: it reflects there; widen the "
                              f"box or add an [absorber]", BoundaryWarning, stacklevel=2)
        if snap_due or force:
            row, keep = {}, None
            if cfg.propagator.operator:
                U_host = to_host(Ut.to_array() if hasattr(Ut, "to_array") else Ut)
                row, keep = {"P": self.transitions(U_host)}, {"U": U_host}
            self.writer.append(state=keep, t=t, step=step, psi=psi,
                               centres=centre_positions(cfg.potential, t),
                               nodes=observables.node_count(self.x, psi, cfg.output.node_eps),
                               **row)
            self.last_step = step


def _start_state(config, xp, psi0, resume, work):
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


def effective_attrs(config: Config) -> dict:
    """The numerics a run used, with every default resolved (stored in the file)."""
    pr, g = config.propagator, config.grid
    return {"scheme": pr.scheme, "method": pr.method, "stencil": str(g.stencil), "dx": g.dx,
            "n_points": g.n, "dt": config.time.dt, "t_end": config.time.t_end,
            "steps": config.time.steps, "tolerance": pr.tolerance, "error_window": pr.error_window,
            "observables_every": config.output.observables_every, "every": config.output.every}


def run(config: Config, out_dir, *, backend="auto", devices=None, force=False,
        progress=False, precheck_result: Precheck | None = None, resume=None,
        allow_inaccurate=False, threads=None) -> RunResult:
    """Propagate ``config`` and write OUT/<name>.h5 (see :mod:`tdse.snapshots`); with
    ``out_dir=None`` nothing is written and the arrays come back in ``RunResult.data``.

    The file is written as OUT/<name>.h5.part and renamed when the run completes.
    ``resume``: a :func:`tdse.snapshots.resume_state` dict and its file path, to continue
    an interrupted run from its last whole snapshot (the same steps follow, so the
    result is bit-identical on the CPU).  SIGINT/SIGTERM close the file valid and raise
    :class:`tdse.interrupts.Interrupted`.  ``force``: overwrite an existing output;
    ``allow_inaccurate``: run although the exponential misses its tolerance (precheck);
    ``threads``: BLAS threads on the CPU (default :func:`tdse.resources.blas_threads`).
    ``method = "auto"`` is resolved first (:func:`tdse.cost.resolve`: dense or chebyshev by
    the estimated cost here; the choice is stored as ``method_choice``)."""
    from tqdm.auto import tqdm

    # prepare and check
    pc = precheck_result or precheck(config)
    if not pc.ok and not allow_inaccurate:
        raise ConfigError("time.dt", config.time.dt, pc.message)
    name, xp, devices = resolve_backend(backend, devices)
    nthreads = blas_threads(config, threads)
    choice = None
    if config.propagator.method == "auto":  # dense or chebyshev, by the estimated cost here
        with thread_limit(nthreads if name == "numpy" else None):
            config, pc, choice = cost.resolve(config, pc, name, devices, xp=xp)
    g, K = config.grid, config.output.populations
    x = points(g)
    n_need = max(K, config.initial.state + 1 if isinstance(config.initial.state, int) else 1)
    E0, phi0 = hamiltonian.eigenstates(config, 0.0, n_need)
    psi0 = initial_state(config, x, phi0)
    in_memory = out_dir is None and resume is None
    work, path = (None, None) if in_memory else _output_paths(config, out_dir, resume, force)
    check_resources(config, name, devices,
                    None if work is None else os.path.dirname(os.path.abspath(work)))
    gemm_opts = step_gemm_opts(name, devices)
    attrs = {"backend": name, "devices": devices or [], "dtype": np.dtype(DTYPE).name,
             "propagator": f"{config.propagator.scheme} scheme ({schemes.__name__}), "
                           f"exponentials by {config.propagator.method}",
             "allow_inaccurate": bool(allow_inaccurate and not pc.ok),
             "blas_threads": nthreads if name == "numpy" else None,
             **effective_attrs(config), **pc.attrs(),
             **({"method_choice": json.dumps(choice)} if choice else {})}
    writer = _open_writer(config, work, x, E0, phi0, attrs, resume)
    prop = Propagator(config, pc.plan, xp, gemm_opts)
    rec = _Recorder(config, x, phi0, psi0, writer)
    steps = config.time.steps
    window = config.propagator.error_window
    w0 = window_start(config)
    estimate = TimeErrorEstimate(config, window, xp, gemm_opts, w0) if window else None
    stored = resume[0]["attrs"].get("time_error") if resume else None

    # loop: step, observe, snapshot
    t0 = time.perf_counter()
    complete = False
    try:
        with interruptible(writer, lambda: rec.last_step * config.time.dt, t0), \
                thread_limit(nthreads if name == "numpy" else None):
            psi, Ut, start = _start_state(config, xp, psi0, resume, work)
            rec.last_step = start
            if resume is None:
                rec.record(0, psi, Ut, force=True)
            if estimate is not None:
                if stored not in (None, "none"):
                    estimate.result = json.loads(stored)
                elif start > estimate.start_step:  # resumed inside or after its window
                    estimate.start_step = min(start, max(0, steps - window))
            with tqdm(total=steps, initial=start, unit="step", desc=config.name,
                      disable=not progress, mininterval=0.5) as bar:
                for j in range(start, steps):
                    if estimate is not None:
                        estimate.begin(j, psi)
                    psi = prop.step(psi, j)
                    if Ut is not None:
                        Ut = prop.step_operator(Ut, j)
                    if estimate is not None and estimate.advance(j, psi) is not None:
                        writer.set_attrs(time_error=estimate.result)
                    rec.record(j + 1, psi, Ut)
                    bar.update(1)
            complete = True
    finally:  # finish: a crash leaves the .part file valid, not complete
        if writer.f:
            writer.set_attrs(wall_seconds=time.perf_counter() - t0,
                             exponentials=prop.exponentials, chebyshev_terms_applied=prop.cheb_terms)
            writer.close(complete)
    if work != path:
        os.replace(work, path)
    res = RunResult(path, pc, steps, writer.count, time.perf_counter() - t0, name,
                    estimate.result if estimate else None, prop.exponentials, config=config)
    if work is None:
        res.data = writer.data()
    return res
