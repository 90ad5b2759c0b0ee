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


class Interrupted(Exception):
    """A run stopped by SIGINT/SIGTERM; its file was closed valid and resumable."""

    def __init__(self, signame, path, count, t):
        self.signame, self.path, self.count, self.t = signame, path, count, t
        super().__init__(f"interrupted by {signame}: {path} holds {count} snapshots up to "
                         f"t = {t:.6g}; continue with: tdse resume {path}")


def _signal_guard():
    """Turn SIGTERM, and SIGINT, into KeyboardInterrupt in the main thread for the run;
    returns a restore function.  SIGINT is set explicitly: a process started in the
    background by a non-interactive shell inherits SIGINT *ignored*, and Python then
    never raises KeyboardInterrupt -- a `kill -INT` would be lost and the run go on."""
    import signal
    import threading
    if threading.current_thread() is not threading.main_thread():
        return lambda: None

    def on_term(signum, frame):
        raise KeyboardInterrupt("SIGTERM")
    old = signal.signal(signal.SIGTERM, on_term)
    old_int = signal.signal(signal.SIGINT, signal.default_int_handler)

    def restore():
        signal.signal(signal.SIGTERM, old)
        signal.signal(signal.SIGINT, old_int)
    return restore


def output_bytes(config: Config) -> int:
    """Expected size of the run file (snapshots dominate; operator mode adds P and U)."""
    n, K = config.grid.n, config.output.populations
    count = config.time.steps // config.output.every + 2
    row = 16 * n + 8 * (4 + 3 * K) + 8 * len(config.potential.centres)
    if config.propagator.operator:
        row += 8 * K * K
    return count * row + 16 * n * (K + 2) + (16 * n * n if config.propagator.operator else 0)


def run(config: Config, out_dir, *, backend="auto", devices=None, force=False,
        progress=False, precheck_result: Precheck | None = None, resume=None) -> RunResult:
    """Propagate ``config`` and write OUT/<name>.h5 (see :mod:`tdse.snapshots`).

    The file is written as OUT/<name>.h5.part and renamed when the run completes.
    ``resume``: a :func:`tdse.snapshots.resume_state` dict and its file path, to continue
    an interrupted run from its last whole snapshot (the same steps follow, so the
    result is bit-identical on the CPU).  SIGINT/SIGTERM close the file valid and raise
    :class:`Interrupted`."""
    import os

    from tqdm.auto import tqdm

    from .snapshots import OutputExists, final_path, part_path

    pc = precheck_result or precheck(config)
    if not pc.ok and not force:
        raise ConfigError("time.dt", config.time.dt, pc.message)
    name, xp, devices = resolve_backend(backend, devices)
    g, K = config.grid, config.output.populations
    x = points(g)
    n_need = max(K, config.initial.state + 1 if isinstance(config.initial.state, int) else 1)
    E0, phi0 = hamiltonian.eigenstates(config, 0.0, n_need)
    psi0 = initial_state(config, x, phi0)
    if resume is None:
        os.makedirs(out_dir, exist_ok=True)
        path = os.path.join(out_dir, f"{config.name}.h5")
        work = part_path(path)
        for p in (path, work):
            if os.path.exists(p) and not force:
                raise OutputExists(p)
    else:
        state, work = resume
        path = final_path(work)
        if path != work and os.path.exists(path) and not force:
            raise OutputExists(path)
    check_resources(config, name, devices, os.path.dirname(os.path.abspath(work)))
    gemm_opts = step_gemm_opts(name, devices)
    attrs = {"backend": name, "devices": devices or [], "dtype": np.dtype(DTYPE).name,
             "propagator": "psi(t+dt) = exp(-i H(t+dt/2) dt) psi(t)",
             "forced": bool(force and not pc.ok), **pc.attrs()}
    op_mode = config.propagator.operator
    extra = {"P": ("operator", np.float64, (K, K))} if op_mode else None
    if resume is None:
        writer = SnapshotWriter(work, config=config, x=x, v0=soft_core(config.potential, x, 0.0),
                                energies=E0[:K], phi=phi0[:K], attrs=attrs, force=True,
                                extra=extra)
    else:
        writer = SnapshotWriter(work, config=config, x=x, v0=None, energies=E0[:K], phi=None,
                                attrs={"resumed_at_step": state["step"], **attrs}, extra=extra,
                                reopen=True)
    prop = Propagator(config, pc.plan, xp, gemm_opts)
    steps, every = config.time.steps, config.output.every

    def transition(U_host):  # <m|U|n> = dx sum_x phi_m(x) (U phi_n)(x)
        return np.abs(phi0[:K] @ (U_host @ phi0[:K].T.astype(DTYPE)) * g.dx) ** 2

    last = {"step": resume[0]["step"] if resume else 0}

    def snapshot(step, psi_dev, Ut=None):
        t = step * config.time.dt
        psi = to_host(psi_dev)
        extra_row, keep = {}, None
        if op_mode:
            U_host = to_host(Ut.to_array() if hasattr(Ut, "to_array") else Ut)
            extra_row, keep = {"P": transition(U_host)}, {"U": U_host}
        v = soft_core(config.potential, x, t)
        Et, phit = hamiltonian.eigenstates(config, t, K)
        writer.append(state=keep, t=t, step=step, psi=psi,
                      centres=centre_positions(config.potential, t),
                      norm=observables.norm(psi, g.dx),
                      energy=observables.energy(config, psi, v),
                      nodes=observables.node_count(x, psi, config.output.node_eps),
                      populations_h0=observables.populations(phi0[:K], psi, g.dx),
                      populations_ht=observables.populations(phit, psi, g.dx),
                      energies_ht=Et, **extra_row)
        last["step"] = step

    t0 = _time.perf_counter()
    complete = False
    restore = _signal_guard()
    start = 0
    try:
        if resume is None:
            psi = xp.asarray(psi0)
            Ut = xp.eye(g.n, dtype=DTYPE) if op_mode else None
            snapshot(0, psi, Ut)
        else:
            start = state["step"]
            psi = xp.asarray(state["psi"])
            Ut = None
            if op_mode:
                if state["U"] is None:
                    raise ConfigError("--resume", work, "operator mode, but the file holds no U(t)")
                Ut = xp.asarray(state["U"])
        with tqdm(total=steps, initial=start, unit="step", desc=config.name,
                  disable=not progress, mininterval=0.5) as bar:
            for j in range(start, steps):
                psi = prop.step(psi, j)
                if op_mode:
                    Ut = prop.step_operator(Ut, j)
                if (j + 1) % every == 0 or j + 1 == steps:
                    snapshot(j + 1, psi, Ut)
                bar.update(1)
        complete = True
    except KeyboardInterrupt as e:
        sig = "SIGTERM" if str(e) == "SIGTERM" else "SIGINT"
        count = writer.count
        writer.set_attrs(wall_seconds=_time.perf_counter() - t0, interrupted_by=sig)
        writer.close(False)
        raise Interrupted(sig, work, count, last["step"] * config.time.dt) from None
    finally:
        restore()
        if writer.f:
            writer.set_attrs(wall_seconds=_time.perf_counter() - t0)
            writer.close(complete)
    if complete and work != path:
        os.replace(work, path)
    return RunResult(path, pc, steps, writer.count, _time.perf_counter() - t0, name)


def gpu_memory_estimate(n: int, devices: int, operator: bool = False) -> int:
    """Bytes on the busiest GPU (GPU 0), an estimate from what the step allocates: on one
    GPU H, A = -i dt H, its shifted copy (complex) and ~12 real work matrices plus U;
    on G GPUs GPU 0 also builds H, A and B = Im A, and every GPU holds ~5 real
    full-size replicas (the gathered left operands) and ~14 real bands of N x N/G.
    Operator mode adds U(t) and its update (and, on G GPUs, the gathered U)."""
    nn = n * n
    if devices <= 1:
        return (11 + 3 * bool(operator)) * 16 * nn
    g = devices
    return 56 * nn + 40 * nn + 112 * nn // g + bool(operator) * (16 * nn + 32 * nn // g)


def check_resources(config: Config, backend: str, devices, out_dir, free_gpu=None, free_disk=None):
    """Refuse a run that cannot fit on the GPUs (naming the largest N that fits); warn
    when the disk looks too small for the output."""
    import shutil
    import warnings
    n, op = config.grid.n, config.propagator.operator
    if backend == "cupy":
        g = len(devices or [0])
        if free_gpu is None:
            import cupy as cp
            free_gpu = min(_free_on(cp, d) for d in (devices or [0]))
        need = gpu_memory_estimate(n, g, op)
        if need > free_gpu:
            lo, hi = 1, n
            while lo < hi:
                mid = (lo + hi + 1) // 2
                lo, hi = (mid, hi) if gpu_memory_estimate(mid, g, op) <= free_gpu else (lo, mid - 1)
            raise ConfigError("grid.dx", config.grid.dx,
                              f"gives N = {n}, which needs about {need / 2**30:.1f} GiB per GPU on "
                              f"{g} GPU(s), more than the {free_gpu / 2**30:.1f} GiB free; the "
                              f"largest N that fits is about {lo}")
    if free_disk is None:
        free_disk = shutil.disk_usage(out_dir).free
    size = output_bytes(config)
    if size > 0.9 * free_disk:
        warnings.warn(f"the output needs about {size / 2**20:.0f} MiB but only "
                      f"{free_disk / 2**20:.0f} MiB are free in {out_dir}", ResourceWarning,
                      stacklevel=2)


def _free_on(cp, d):
    with cp.cuda.Device(d):
        return cp.cuda.runtime.memGetInfo()[0] + cp.get_default_memory_pool().free_bytes()
