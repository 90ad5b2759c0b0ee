"""Propagation psi(t + dt) = exp(-i H(t + dt/2) dt) psi(t) with the mgemm matrix exponent.

Written once against the array module (NumPy or CuPy).  For a static potential U is
computed once and reused.  Each step's exponent is taken of A = -i dt (H - c I), c the
centre of H's Gershgorin interval (a phase e^(-i c dt) is multiplied back), so
theta = dt ||H - c I||_1 is about half of dt ||H||: this is what makes the source's
parameters (dt = 0.002, dx = 0.1, k = 10) pass a 1e-10 tolerance.

The time-step / grid-spacing condition (thesis summary: "Delta r ~ Delta t^2" or the
error grows): what matters is theta = dt ||H - c I||, and ||H|| ~ 2/dx^2 + max|V| for the
3-point stencil (8/(3 dx^2) for the 5-point one), so dt must shrink like dx^2.
:func:`precheck` computes theta (a rigorous bound over every step), the Taylor truncation
bound and the rounding estimate before any work.
"""
from __future__ import annotations

import math
import time as _time
from dataclasses import dataclass, field

import numpy as np

import mgemm
from mgemm._array import cupy_or_none, gpu_count, to_host, unit_roundoff
from mgemm.plan import ExpmPlan, plan_expm, taylor_remainder

from . import hamiltonian, observables
from .config import Config, ConfigError
from .grid import points
from .potential import bounds_over, centre_positions, soft_core
from .snapshots import SnapshotWriter

DTYPE = np.complex128


@dataclass(frozen=True)
class Precheck:
    theta: float              # max over steps of dt * ||H(t) - c(t) I||_1 (rigorous)
    radius: float             # max over steps of ||H - c I||_1
    spectrum: tuple           # Gershgorin interval of H over the whole run
    plan: ExpmPlan
    dt_max: float             # largest dt with truncation bound <= tolerance (taylor)
    ok: bool
    message: str
    warnings: tuple = field(default_factory=tuple)

    def attrs(self) -> dict:
        p = self.plan
        return {"theta": self.theta, "H_radius": self.radius,
                "H_spectrum_bounds": list(self.spectrum),
                "truncation_bound": p.truncation_bound, "rounding_estimate": p.rounding_estimate,
                "tolerance": p.tolerance, "dt_max_taylor": self.dt_max,
                "plan_method": p.method, "plan_path": p.path, "plan_degree": p.degree,
                "plan_squarings": p.squarings, "plan_products": p.products,
                "plan": p.as_dict()}


def step_times(config: Config) -> np.ndarray:
    """Midpoints t_j + dt/2 where H is evaluated (one point for a static potential)."""
    if config.potential.static:
        return np.array([0.0])
    return (np.arange(config.time.steps) + 0.5) * config.time.dt


def _largest_theta(k, tol):
    lo, hi = 0.0, 1.0
    while taylor_remainder(hi, k) <= tol and hi < 1e6:
        lo, hi = hi, 2 * hi
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if taylor_remainder(mid, k) <= tol else (lo, mid)
    return lo


def precheck(config: Config, dtype=DTYPE) -> Precheck:
    """The dt/dx condition, before any propagation (see the module docstring)."""
    g, p, pr = config.grid, config.potential, config.propagator
    u = unit_roundoff(dtype)
    x = points(g)
    vmin, vmax = bounds_over(p, x, step_times(config))
    lo, hi = hamiltonian.spectrum_bounds(g.stencil, g.dx, vmin, vmax)
    radius = 0.5 * (hi - lo)
    dt = config.time.dt
    theta = dt * radius
    if pr.tolerance < 4 * u:
        raise ConfigError("propagator.tolerance", pr.tolerance,
                          f"is below the precision of {np.dtype(dtype).name} (unit roundoff {u:.2g})")
    plan = plan_expm(theta, method=pr.method, tolerance=pr.tolerance, terms=pr.terms,
                     split=True, unitary=True, unit_roundoff=u)
    theta_max = _largest_theta(pr.terms, pr.tolerance)
    dt_max = theta_max / radius
    warn = []
    if g.dx > 0.5 * math.sqrt(p.a):
        warn.append(f"grid.dx = {g.dx} under-resolves the soft-core wells (width sqrt(a) = "
                    f"{math.sqrt(p.a):.3g}); dx <= {0.5 * math.sqrt(p.a):.3g} is advised")
    xs = centre_positions(p, step_times(config))
    if xs.min() < g.x_min or xs.max() > g.x_max - g.dx:
        warn.append(f"a potential centre leaves the box [{g.x_min}, {g.x_max}) during the run")
    ok, msg = True, plan.explain()
    if pr.method == "taylor" and not plan.meets_tolerance:
        ok = False
        worst = "truncation" if plan.truncation_bound >= plan.rounding_estimate else "rounding"
        msg = (f"Taylor with k = {pr.terms} terms misses the tolerance {pr.tolerance:.3g}: "
               f"dt = {dt}, dx = {g.dx}, theta = dt*||H - c|| = {theta:.4g}, truncation bound "
               f"{plan.truncation_bound:.3g}, rounding ~{plan.rounding_estimate:.3g} ({worst} "
               f"fails); the largest dt that passes is {dt_max:.4g} (or raise "
               f"propagator.terms, or use method = \"auto\"); --force runs anyway")
    return Precheck(theta, radius, (lo, hi), plan, dt_max, ok, msg, tuple(warn))


def initial_state(config: Config, x, phi0):
    """psi(0): an eigenstate of H(0) (index ``state``) or a normalised Gaussian packet."""
    ini = config.initial
    if ini.state == "gaussian":
        psi = np.exp(-((x - ini.x0) ** 2) / (4 * ini.sigma ** 2) + 1j * ini.k0 * x)
        return psi / math.sqrt(observables.norm(psi, config.grid.dx))
    return phi0[ini.state].astype(DTYPE)


def resolve_backend(backend: str, devices=None):
    """'auto' -> 'cupy' when CuPy sees a GPU, else 'numpy'.  Returns (name, xp, devices)."""
    n = gpu_count()
    if backend == "auto":
        backend = "cupy" if n else "numpy"
    if backend == "numpy":
        return "numpy", np, None
    if backend != "cupy":
        raise ConfigError("--backend", backend, "must be auto, numpy or cupy")
    if cupy_or_none() is None:
        raise ConfigError("--backend", backend, "CuPy is not installed (pip install '.[gpu]')")
    if n == 0:
        raise ConfigError("--backend", backend, "no CUDA GPU found")
    devices = list(range(n)) if devices is None else list(devices)
    bad = [d for d in devices if not 0 <= d < n]
    if bad:
        raise ConfigError("--devices", devices, f"only GPUs 0..{n - 1} exist")
    return "cupy", cupy_or_none(), devices


@dataclass
class RunResult:
    path: str
    precheck: Precheck
    steps: int
    snapshots: int
    seconds: float
    backend: str


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


def run(config: Config, out_dir, *, backend="auto", devices=None, force=False,
        progress=False, precheck_result: Precheck | None = None) -> RunResult:
    """Propagate ``config`` and write OUT/<name>.h5; see :mod:`tdse.snapshots`."""
    import os

    from tqdm.auto import tqdm

    pc = precheck_result or precheck(config)
    if not pc.ok and not force:
        raise ConfigError("time.dt", config.time.dt, pc.message)
    name, xp, devices = resolve_backend(backend, devices)
    g, K = config.grid, config.output.populations
    x = points(g)
    n_need = max(K, config.initial.state + 1 if isinstance(config.initial.state, int) else 1)
    E0, phi0 = hamiltonian.eigenstates(config, 0.0, n_need)
    psi0 = initial_state(config, x, phi0)
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, f"{config.name}.h5")
    gemm_opts = ({"devices": devices, "layout": "bands", "output": "banded"}
                 if name == "cupy" and devices and len(devices) > 1 else {})
    attrs = {"backend": name, "devices": devices or [], "dtype": np.dtype(DTYPE).name,
             "propagator": "psi(t+dt) = exp(-i H(t+dt/2) dt) psi(t)",
             "forced": bool(force and not pc.ok), **pc.attrs()}
    op_mode = config.propagator.operator
    writer = SnapshotWriter(path, config=config, x=x, v0=soft_core(config.potential, x, 0.0),
                            energies=E0[:K], phi=phi0[:K], attrs=attrs, force=force,
                            extra={"P": ("operator", np.float64, (K, K))} if op_mode else None)
    # <m|U|n> = dx sum_x phi_m(x) (U phi_n)(x): columns phi_n of Phi, rows of PhiT
    Phi = xp.asarray(np.ascontiguousarray(phi0[:K].T.astype(DTYPE)))
    prop = Propagator(config, pc.plan, xp, gemm_opts)
    steps, every = config.time.steps, config.output.every

    def transition(Ut):
        UPhi = Ut.matvec(Phi) if hasattr(Ut, "matvec") else Ut @ Phi
        return np.abs(phi0[:K] @ to_host(UPhi) * g.dx) ** 2

    def snapshot(step, psi_dev, Ut=None):
        t = step * config.time.dt
        psi = to_host(psi_dev)
        extra = {"P": transition(Ut)} if op_mode else {}
        v = soft_core(config.potential, x, t)
        Et, phit = hamiltonian.eigenstates(config, t, K)
        writer.append(t=t, step=step, psi=psi, centres=centre_positions(config.potential, t),
                      norm=observables.norm(psi, g.dx),
                      energy=observables.energy(config, psi, v),
                      nodes=observables.node_count(x, psi, config.output.node_eps),
                      populations_h0=observables.populations(phi0[:K], psi, g.dx),
                      populations_ht=observables.populations(phit, psi, g.dx),
                      energies_ht=Et, **extra)

    t0 = _time.perf_counter()
    complete = False
    try:
        psi = xp.asarray(psi0)
        Ut = xp.eye(g.n, dtype=DTYPE) if op_mode else None
        snapshot(0, psi, Ut)
        with tqdm(total=steps, unit="step", desc=config.name, disable=not progress,
                  mininterval=0.5) as bar:
            for j in range(steps):
                psi = prop.step(psi, j)
                if op_mode:
                    Ut = prop.step_operator(Ut, j)
                if (j + 1) % every == 0 or j + 1 == steps:
                    snapshot(j + 1, psi, Ut)
                bar.update(1)
        complete = True
    finally:
        writer.set_attrs(wall_seconds=_time.perf_counter() - t0)
        writer.close(complete)
    return RunResult(path, pc, steps, writer.count, _time.perf_counter() - t0, name)
