"""A run's set-up, done once: :func:`prepare` -> :class:`RunPlan` (frozen), which every
way of running reads (``tdse run`` and ``resume``, :func:`tdse.simulate`, ``tdse
converge``, ``tdse floquet``, ``tdse validate``).

prepare = the precheck (theta of every exponential, the dense plan or the Chebyshev
terms, the resolution of H(0)'s ground state; :mod:`tdse.numerics.precheck`) ->
the backend (:class:`~tdse.run.backend.Backend`: array module, GPUs, GEMM options, BLAS
threads) -> ``method = "auto"`` resolved by timed kernels (:mod:`tdse.numerics.cost`) ->
the eigenstates of H(0) the run needs and psi(0).  Atomic units throughout.
"""
from __future__ import annotations

import dataclasses
import json
import time
from dataclasses import dataclass

import numpy as np

from ..config import Config, ConfigError
from ..model import states as model_states
from ..model.grid import points
from ..model.potential import host_only
from ..model.initial import initial_state, states_needed as initial_states_needed
from ..numerics import cost, exponentials, schemes
from ..numerics.precheck import Precheck, memory_check, precheck as run_precheck
from ..numerics.stepper import Stepper
from .backend import Backend, backend_for, blas_threads, gpu_count

__all__ = ["RunPlan", "prepare", "effective_attrs"]


@dataclass(frozen=True)
class RunPlan:
    """Everything a run reads and nothing it changes: ``config`` (``method = "auto"``
    resolved), ``precheck``, ``backend``, the grid ``x``, the lowest eigenpairs of H(0)
    (``energies``, ``states``: as many as the populations and psi(0) need), ``psi0``, and
    ``method_choice`` (auto's estimates, or None)."""
    config: Config
    precheck: Precheck
    backend: Backend
    x: np.ndarray
    energies: np.ndarray
    states: np.ndarray
    psi0: np.ndarray
    method_choice: dict | None = None
    backend_choice: dict | None = None
    #: seconds of each phase of :func:`prepare` (the run file's ``prepare_seconds``):
    #: eigenstates of H(0), the precheck, auto's calibration, the backends' timed steps
    prepare_seconds: dict | None = None
    #: (start, end) of :func:`prepare` in epoch seconds (``time.time()``): the run file's
    #: ``timeline`` places it between the process's start and the loop's
    prepare_window: tuple | None = None

    @property
    def steps(self) -> int:
        return self.config.time.steps

    @property
    def options(self):
        """The run's performance options (:class:`tdse.options.RunOptions`; the config's
        ``[run]`` table, or ``prepare(..., options=...)``)."""
        return self.config.run

    def stepper(self, config: Config | None = None) -> Stepper:
        """A :class:`~tdse.numerics.stepper.Stepper` on this plan's backend (for ``config``,
        e.g. the same run at dt/2; default the plan's own)."""
        cfg = self.config if config is None else config
        if cfg.time.tolerance is not None:     # adaptive steps (tdse.numerics.adaptive)
            from ..numerics.adaptive import EstimatingStepper
            return EstimatingStepper(cfg, self.stepper, self.backend.xp, control=True)
        plan = self.precheck.plan
        if cfg is not self.config and (cfg.time.dt != self.config.time.dt or
                                       cfg.propagator != self.config.propagator):
            # its own theta, tolerance (a dense method's ExpmPlan; Chebyshev needs none: the
            # precheck's bounds over every step of dt/n had cost an adaptive run ~15 ms for
            # each n it took, a third of the laser's at 1e-8 on one H200)
            plan = None if exponentials.get(cfg.propagator.method).matrix_free else \
                run_precheck(cfg, check_resolution=False).plan
        return Stepper(cfg, plan, self.backend.xp, self.backend.gemm_opts)

    def attrs(self, allow_inaccurate=False) -> dict:
        """The run file's attributes: backend, numerics, precheck, auto's choice."""
        cfg, pc, b = self.config, self.precheck, self.backend
        return {"backend": b.name, "devices": list(b.devices or []),
                "dtype": np.dtype(model_states.DTYPE).name,
                "propagator": f"{cfg.propagator.scheme} scheme ({schemes.__name__}), "
                              f"exponentials by {cfg.propagator.method}",
                "allow_inaccurate": bool(allow_inaccurate and not pc.ok),
                "blas_threads": b.threads, **effective_attrs(cfg), **pc.attrs(),
                "run_options": json.dumps(cfg.run.as_dict()),
                **({"method_choice": json.dumps(self.method_choice)} if self.method_choice else {}),
                **({"backend_choice": json.dumps(self.backend_choice)} if self.backend_choice else {}),
                **({"prepare_seconds": json.dumps(self.prepare_seconds)} if self.prepare_seconds else {})}


def effective_attrs(config: Config) -> dict:
    """The numerics a run used, with every default resolved (stored in the file)."""
    pr, g = config.propagator, config.grid
    return {"scheme": pr.scheme, "method": pr.method, "stencil": str(g.stencil), "dx": g.dx,
            "n_points": g.n, "dt": config.time.dt, "t_end": config.time.t_end,
            "steps": config.time.steps, "tolerance": pr.tolerance, "error_window": pr.error_window,
            "observables_every": config.output.observables_every, "every": config.output.every}


def states_needed(config: Config) -> int:
    """Eigenstates of H(0) a run needs: the populations' K and psi(0)'s index."""
    K = config.output.populations
    return max(K, initial_states_needed(config.initial))


#: ``backend = "auto"`` times the CPU's step only when the cost model expects it under this
CPU_TIMING_MAX_S = 5.0
#: steps timed per backend for the choice (after one warm-up step)
TIMED_STEPS = 2


def prepare(config: Config, *, backend="auto", devices=None, threads=None,
            allow_inaccurate=False, check_resolution=True, pc: Precheck | None = None,
            operator: bool | None = None, steps: int | None = None, options=None) -> RunPlan:
    """The :class:`RunPlan` of ``config`` (module docstring), or a ConfigError naming the
    key: a Taylor exponential that misses its tolerance is refused unless
    ``allow_inaccurate``.  ``pc``: a precheck already made for this config;
    ``operator``/``steps``: what auto's cost estimate assumes (default: the config's).
    ``backend = "auto"`` on a machine with GPUs takes the backend whose step of this very
    run is faster, timed here (:func:`fastest`); without GPUs it is NumPy.  ``options``: the
    performance options (:class:`tdse.options.RunOptions`, or a dict of some of its
    fields), set over the config's ``[run]`` table.  A ``[nuclei]`` config gets its own plan
    (:func:`tdse.run.nuclei.prepare`)."""
    if config.nuclei is not None:
        from . import nuclei
        return nuclei.prepare(config, backend=backend, devices=devices, threads=threads)
    t0, e0 = time.perf_counter(), time.time()
    if options is not None:
        config = with_options(config, options)
    memory_check(config)          # before any work: the method's matrices must fit
    x = points(config.grid)
    t1 = time.perf_counter()
    E, phi = model_states.eigenstates(config, 0.0, min(states_needed(config), config.grid.n))
    t2 = time.perf_counter()
    given = pc is not None
    pc = pc or run_precheck(config, check_resolution=check_resolution, E0=E[0])
    t3 = time.perf_counter()
    if not pc.ok and not allow_inaccurate:
        raise ConfigError("time.dt", config.time.dt, f"{pc.message}; allow_inaccurate "
                          f"(--allow-inaccurate) runs anyway")
    phases = {"memory_check": t1 - t0, "eigenstates_h0": t2 - t1,
              "precheck": 0.0 if given else t3 - t2}
    build = lambda name: _on(name, config, pc, x, E, phi, devices, threads, operator, steps)  # noqa: E731
    if backend == "auto" and gpu_count() > 0 and not host_only(config.potential):
        t4 = time.perf_counter()
        plan = fastest(build, config, pc, threads, operator)
        phases["backend_choice"] = time.perf_counter() - t4 - plan.prepare_seconds["calibration"]
    else:
        plan = build(backend)
    return dataclasses.replace(plan, prepare_seconds={**phases, **plan.prepare_seconds},
                               prepare_window=(e0, time.time()))


def with_options(config: Config, options) -> Config:
    """``config`` with its ``[run]`` options replaced by ``options`` (a RunOptions, or a dict
    of fields over the config's own), validated (a ConfigError names ``run.<key>``)."""
    from ..options import RunOptions
    opts = options if isinstance(options, RunOptions) else config.run.replace(**dict(options))
    return dataclasses.replace(config, run=opts)


def _on(backend, config, pc, x, E, phi, devices, threads, operator, steps) -> RunPlan:
    """The plan on one backend (auto's method resolved for it; ``prepare_seconds`` holds the
    seconds of the backend's set-up and of the calibration)."""
    t0 = time.perf_counter()
    be = backend_for(config, backend, devices, threads)
    t1 = time.perf_counter()
    choice = None
    if pc.ok:
        with be.limit():
            config, pc, choice = cost.resolve(config, pc, be.name, list(be.devices or []),
                                              xp=be.xp, operator=operator, steps=steps)
        if choice is not None and threads is None and be.xp is np:   # auto's method known:
            be = dataclasses.replace(be, threads=blas_threads(config))   # its BLAS threads
    t2 = time.perf_counter()
    psi0 = initial_state(config, x, phi)
    return RunPlan(config, pc, be, x, E, phi, psi0, choice,
                   prepare_seconds={"backend": t1 - t0, "calibration": t2 - t1})


def step_seconds(plan: RunPlan, count: int = TIMED_STEPS, operator: bool | None = None) -> float:
    """Seconds per step of ``plan``'s own stepper on its backend (psi, or U(t) in operator
    mode or with ``operator``: what the caller will step), after one warm-up step."""
    import time
    xp, stepper = plan.backend.xp, plan.stepper()
    op = plan.config.propagator.operator if operator is None else operator
    X = xp.eye(plan.config.grid.n, dtype=model_states.DTYPE) if op else xp.asarray(plan.psi0)
    step = stepper.step_operator if op else stepper.step

    def sync():
        if xp is not np:
            xp.cuda.Device().synchronize()
    with plan.backend.limit():
        X = step(X, 0)
        sync()
        t0 = time.perf_counter()
        for j in range(1, count + 1):
            X = step(X, j)
        sync()
    return (time.perf_counter() - t0) / count


def choose_backend(seconds: dict) -> tuple[str, str]:
    """(name, why) of the fastest timed backend (``seconds``: name -> s/step or None when
    not timed)."""
    timed = {k: v for k, v in seconds.items() if v is not None}
    name = min(timed, key=timed.get)
    said = ", ".join(f"{k} {v * 1e3:.3g} ms" if v is not None else f"{k} not timed (its cost "
                     f"model expects over {CPU_TIMING_MAX_S:g} s)" for k, v in seconds.items())
    return name, (f"backend auto -> {name}: this run's step timed here: {said} a step; "
                  f"--backend numpy or cupy fixes it")


def fastest(build, config, pc, threads, operator=None) -> RunPlan:
    """``backend = "auto"`` with GPUs: the plan on the GPU(s) and, when the cost model
    expects a CPU step under CPU_TIMING_MAX_S, on the CPU; each runs a few of this run's
    steps; the faster is taken, the choice and both timings said and stored."""
    from .resources import cpu_seconds_estimate
    plans = {"cupy": build("cupy")}
    seconds = {"cupy": step_seconds(plans["cupy"], operator=operator)}
    cpu = build("numpy")
    per_step = cpu_seconds_estimate(cpu.config, cpu.precheck, cpu.backend.threads) / max(1, config.time.steps)
    seconds["numpy"] = step_seconds(cpu, operator=operator) if per_step <= CPU_TIMING_MAX_S else None
    plans["numpy"] = cpu
    name, why = choose_backend(seconds)
    plan = plans[name]
    info = {"chosen": name, "why": why, "seconds_per_step": seconds}
    pc = dataclasses.replace(plan.precheck, notes=plan.precheck.notes + (why,))
    return dataclasses.replace(plan, precheck=pc, backend_choice=info)
