"""Propagation psi(t + dt) = exp(-i H(t + dt/2) dt) psi(t) with the mgemm matrix exponent.

Written once against the array module (NumPy or CuPy).  For a static potential U is
computed once and reused.  Each step's exponent is taken of A = -i dt (H - c I), c the
centre of H's Gershgorin interval (a phase e^(-i c dt) is multiplied back); the bounds
that make this accurate are :mod:`tdse.precheck`'s.

:func:`run` reads as the job: prepare (backend, output paths, eigenstates of H(0), the
file), check (the precheck's verdict, :mod:`tdse.resources`), loop (step, observe,
snapshot) under :mod:`tdse.interrupts`, finish (close, rename).
"""
from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass

import numpy as np

import mgemm
from mgemm.arrays import to_host
from mgemm.plan import ExpmPlan

from . import hamiltonian, observables
from .config import Config, ConfigError
from .grid import points
from .interrupts import interruptible
from .potential import centre_positions, soft_core
from .precheck import DTYPE, Precheck, precheck
from .resources import check_resources, resolve_backend
from .snapshots import OutputExists, SnapshotWriter, final_path, part_path

__all__ = ["DTYPE", "Propagator", "RunResult", "initial_state", "run", "step_gemm_opts"]


def initial_state(config: Config, x, phi0):
    """psi(0): an eigenstate of H(0) (index ``state``) or a normalised Gaussian packet."""
    ini = config.initial
    if ini.state == "gaussian":
        psi = np.exp(-((x - ini.x0) ** 2) / (4 * ini.sigma ** 2) + 1j * ini.k0 * x)
        return psi / math.sqrt(observables.norm(psi, config.grid.dx))
    return phi0[ini.state].astype(DTYPE)


def step_gemm_opts(backend: str, devices) -> dict:
    """mgemm.expm options for a propagation step: on several GPUs U stays in column bands
    (mgemm.dist) and is applied as per-GPU partial sums; otherwise plain expm."""
    if backend == "cupy" and devices and len(devices) > 1:
        return {"devices": list(devices), "layout": "bands", "output": "banded"}
    return {}


class Propagator:
    """Builds U_j = exp(-i H(t_j + dt/2) dt) with a fixed plan, on numpy or cupy."""

    def __init__(self, config: Config, plan: ExpmPlan, xp=np, gemm_opts=None):
        self.config, self.plan, self.xp = config, plan, xp
        self.x_host = points(config.grid)
        self.x = xp.asarray(self.x_host)
        self.gemm_opts = dict(gemm_opts or {})
        self._U = None

    def operator(self, t_mid: float):
        if self._U is not None and self.config.potential.static:
            return self._U
        g, dt = self.config.grid, self.config.time.dt
        v = soft_core(self.config.potential, self.x_host, t_mid)
        lo, hi = hamiltonian.spectrum_bounds(g.stencil, g.dx, float(v.min()), float(v.max()))
        c = 0.5 * (lo + hi)
        H = hamiltonian.dense(self.config, t_mid, self.xp, x=self.x)
        U = mgemm.expm(H * (-1j * dt), plan=self.plan, shift=-1j * dt * c, **self.gemm_opts)
        self._U = U
        return U

    def step_operator(self, Ut, step_index: int):
        """U(t + dt) = exp(-i H dt) U(t): one more product (banded on several GPUs)."""
        dt = self.config.time.dt
        U = self.operator((step_index + 0.5) * dt)
        if hasattr(U, "matvec"):
            if not hasattr(Ut, "matvec"):
                Ut = U.layout.scatter(Ut)
            return U.layout.mm(U, Ut)
        return mgemm.gemm(U, Ut)

    def step(self, psi, step_index: int):
        """psi(t_j + dt); on several GPUs U stays in column bands (mgemm.dist) and
        U psi is a sum of per-GPU partial products on GPU 0."""
        dt = self.config.time.dt
        U = self.operator((step_index + 0.5) * dt)
        return U.matvec(psi) if hasattr(U, "matvec") else U @ psi


@dataclass
class RunResult:
    path: str
    precheck: Precheck
    steps: int
    snapshots: int
    seconds: float
    backend: str


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
    extra = {"P": ("operator", np.float64, (K, K))} if config.propagator.operator else None
    if resume is None:
        return SnapshotWriter(work, config=config, x=x, v0=soft_core(config.potential, x, 0.0),
                              energies=E0[:K], phi=phi0[:K], attrs=attrs, force=True,
                              extra=extra)
    return SnapshotWriter(work, config=config, x=x, v0=None, energies=E0[:K], phi=None,
                          attrs={"resumed_at_step": resume[0]["step"], **attrs}, extra=extra,
                          reopen=True)


class _Observer:
    """The observables of a snapshot, appended to the run file."""

    def __init__(self, config, x, phi0, writer):
        self.config, self.x, self.writer = config, x, writer
        self.phi0 = phi0[:config.output.populations]
        self.last_step = 0

    def transitions(self, U_host):  # P_mn = |<m|U|n>|^2 = |dx sum_x phi_m (U phi_n)|^2
        return np.abs(self.phi0 @ (U_host @ self.phi0.T.astype(DTYPE)) * self.config.grid.dx) ** 2

    def snapshot(self, step, psi_dev, Ut=None):
        cfg, dx = self.config, self.config.grid.dx
        t = step * cfg.time.dt
        psi = to_host(psi_dev)
        row, keep = {}, None
        if cfg.propagator.operator:
            U_host = to_host(Ut.to_array() if hasattr(Ut, "to_array") else Ut)
            row, keep = {"P": self.transitions(U_host)}, {"U": U_host}
        v = soft_core(cfg.potential, self.x, t)
        Et, phit = hamiltonian.eigenstates(cfg, t, cfg.output.populations)
        self.writer.append(state=keep, t=t, step=step, psi=psi,
                           centres=centre_positions(cfg.potential, t),
                           norm=observables.norm(psi, dx),
                           energy=observables.energy(cfg, psi, v),
                           nodes=observables.node_count(self.x, psi, cfg.output.node_eps),
                           populations_h0=observables.populations(self.phi0, psi, dx),
                           populations_ht=observables.populations(phit, psi, dx),
                           energies_ht=Et, **row)
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


def run(config: Config, out_dir, *, backend="auto", devices=None, force=False,
        progress=False, precheck_result: Precheck | None = None, resume=None) -> RunResult:
    """Propagate ``config`` and write OUT/<name>.h5 (see :mod:`tdse.snapshots`).

    The file is written as OUT/<name>.h5.part and renamed when the run completes.
    ``resume``: a :func:`tdse.snapshots.resume_state` dict and its file path, to continue
    an interrupted run from its last whole snapshot (the same steps follow, so the
    result is bit-identical on the CPU).  SIGINT/SIGTERM close the file valid and raise
    :class:`tdse.interrupts.Interrupted`."""
    from tqdm.auto import tqdm

    # prepare and check
    pc = precheck_result or precheck(config)
    if not pc.ok and not force:
        raise ConfigError("time.dt", config.time.dt, pc.message)
    name, xp, devices = resolve_backend(backend, devices)
    g, K = config.grid, config.output.populations
    x = points(g)
    n_need = max(K, config.initial.state + 1 if isinstance(config.initial.state, int) else 1)
    E0, phi0 = hamiltonian.eigenstates(config, 0.0, n_need)
    psi0 = initial_state(config, x, phi0)
    work, path = _output_paths(config, out_dir, resume, force)
    check_resources(config, name, devices, os.path.dirname(os.path.abspath(work)))
    gemm_opts = step_gemm_opts(name, devices)
    attrs = {"backend": name, "devices": devices or [], "dtype": np.dtype(DTYPE).name,
             "propagator": "psi(t+dt) = exp(-i H(t+dt/2) dt) psi(t)",
             "forced": bool(force and not pc.ok), **pc.attrs()}
    writer = _open_writer(config, work, x, E0, phi0, attrs, resume)
    prop = Propagator(config, pc.plan, xp, gemm_opts)
    observer = _Observer(config, x, phi0, writer)
    steps, every = config.time.steps, config.output.every

    # loop: step, observe, snapshot
    t0 = time.perf_counter()
    complete = False
    try:
        with interruptible(writer, lambda: observer.last_step * config.time.dt, t0):
            psi, Ut, start = _start_state(config, xp, psi0, resume, work)
            observer.last_step = start
            if resume is None:
                observer.snapshot(0, psi, Ut)
            with tqdm(total=steps, initial=start, unit="step", desc=config.name,
                      disable=not progress, mininterval=0.5) as bar:
                for j in range(start, steps):
                    psi = prop.step(psi, j)
                    if Ut is not None:
                        Ut = prop.step_operator(Ut, j)
                    if (j + 1) % every == 0 or j + 1 == steps:
                        observer.snapshot(j + 1, psi, Ut)
                    bar.update(1)
            complete = True
    finally:  # finish: a crash leaves the .part file valid, not complete
        if writer.f:
            writer.set_attrs(wall_seconds=time.perf_counter() - t0)
            writer.close(complete)
    if work != path:
        os.replace(work, path)
    return RunResult(path, pc, steps, writer.count, time.perf_counter() - t0, name)
