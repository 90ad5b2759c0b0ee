"""A run of the 1D + 1D H2+ model (``[nuclei]``, :mod:`tdse.model.nuclei`; atomic units).

:func:`prepare` refuses a grid that cannot fit (host or GPU memory, before any work) and
makes psi(0); :func:`run` steps it with the one loop (:func:`tdse.run.loop.evolve`, the
model's :class:`tdse.numerics.stepper.NucleiStepper`) and two sinks, the observables
every ``output.observables_every`` steps and psi every ``output.every``, into
OUT/<name>.h5 (format ``tdse-h2plus-nuclei/1``; written as OUT/<name>.h5.part, each
snapshot flushed, renamed when done), then the KER spectrum of psi(t_end).  Such a file is
not resumable (an interrupted run starts again); ``time_error`` is "none": docs/NUCLEI.md
gives the dt and grid convergence of the shipped input.
"""
from __future__ import annotations

import dataclasses
import json
import os
import time
from dataclasses import dataclass

import h5py
import numpy as np

from ..config import ConfigError
from ..model import nuclei as model_nuclei
from ..numerics.stepper import NucleiStepper
from ..options import available_memory
from ..version import __version__
from .backend import Backend, backend_for
from .loop import Sink, evolve
from .resources import check_space, free_on
from .runfile import NUCLEI_FORMAT
from .sinks import Progress, host_psi
from .snapshots import OutputExists, part_path, publish

__all__ = ["NucleiPlan", "prepare", "run", "NucleiResult", "memory_bytes", "FORMAT", "ROWS"]

FORMAT = NUCLEI_FORMAT
#: copies of Psi a step keeps: psi, the Chebyshev series' three terms and its sum, H Psi's
#: output and the masks' and potential's temporaries
WORK_ARRAYS = 8
#: the observation rows' scalars: (name, units, description)
ROWS = (("norm", "1", "int |psi|^2 dx dR"),
        ("energy", "hartree", "<H(t)> / norm"),
        ("x_mean", "bohr", "<x> / norm: the electron from the nuclei's centre of mass"),
        ("R_mean", "bohr", "<R> / norm: the internuclear distance"),
        ("acceleration", "bohr/(hbar/E_h)^2", "the electron's dipole acceleration <psi|-dV/dx - kappa E|psi>/mu_e "
         "(not divided by the norm: the emitted dipole; tdse spectrum --kind hhg)"),
        ("bound", "1", "the electron within bound_radius of a nucleus, R < dissociated_R"),
        ("dissociated", "1", "the electron within bound_radius of a nucleus, R >= dissociated_R (p + H)"),
        ("ionised", "1", "the electron beyond bound_radius of both nuclei"),
        ("absorbed_x", "1", "norm taken by the x absorber so far (ionisation)"),
        ("absorbed_R", "1", "norm taken by the R absorber so far (dissociation)"),
        ("field", "E_h/(e bohr)", "E(t)"))


def memory_bytes(config) -> int:
    """Bytes a run of ``config`` keeps where it steps: WORK_ARRAYS complex copies of Psi,
    the real arrays of V, dV/dx, the regions and absorber (6), T_x and T_R (T_R complex)."""
    n_x, n_R = config.grid.n, config.nuclei.n
    return 16 * WORK_ARRAYS * n_x * n_R + 8 * 6 * n_x * n_R + 8 * n_x * n_x + 16 * n_R * n_R


@dataclass(frozen=True)
class NucleiPlan:
    """What :func:`run` and :func:`tdse.evolve` step: the config, the backend, the model
    on its device, psi(0) on the host, and the set-up's seconds."""
    config: object
    backend: Backend
    model: object
    psi0: np.ndarray
    prepare_seconds: dict

    @property
    def steps(self) -> int:
        return self.config.time.steps

    def stepper(self):
        return NucleiStepper(self.model, self.backend.xp)


def prepare(config, *, backend="auto", devices=None, threads=None) -> NucleiPlan:
    """The plan of a ``[nuclei]`` run; ConfigError (one line) when the box cannot hold the
    fragments (:func:`tdse.model.nuclei.check_box`) or the grid cannot fit in memory."""
    t0 = time.perf_counter()
    model_nuclei.check_box(config)
    be = backend_for(config, backend, devices, threads)
    need = memory_bytes(config)
    free = available_memory() if be.name == "numpy" else free_on(be.xp, be.devices[0])
    if need > free:
        raise ConfigError("nuclei.dR", config.nuclei.dR, (
            f"gives a {config.grid.n} x {config.nuclei.n} grid (x by R); a run keeps about "
            f"{need / 2**30:.2f} GiB there, more than the {free / 2**30:.2f} GiB free on the "
            f"{'host' if be.name == 'numpy' else 'GPU'}: a coarser dx or dR, or a smaller box"))
    with be.limit():
        t1 = time.perf_counter()
        host = model_nuclei.Model(config)
        psi0 = model_nuclei.initial_state(host)
        t2 = time.perf_counter()
        model = host if be.name == "numpy" else model_nuclei.Model(config, be.xp)
    return NucleiPlan(config, be, model, psi0,
                      {"model": t1 - t0 + time.perf_counter() - t2, "initial_state": t2 - t1})


class _Rows(Sink):
    """The observables every ``output.observables_every`` steps (and at the last), kept
    on the host in lists until the file takes them."""

    def __init__(self, plan, stepper):
        self.every, self.model, self.stepper = plan.config.output.observables_every, plan.model, stepper
        self.rows, self.densities = [], ([], [])

    def begin(self, state):
        self.save(state)

    def save(self, state):
        r = self.model.measure(state.psi, state.t, [float(a) for a in self.stepper.absorbed])
        r["field"] = self.model.field(state.t)
        self.rows.append([state.t, state.step] + [r[k] for k, *_ in ROWS])
        self.densities[0].append(r["nuclear_density"])
        self.densities[1].append(r["electron_density"])


class _File(Sink):
    """psi every ``output.every`` steps (and at the last) into the .part file, with the
    observation rows so far; each snapshot flushed."""

    def __init__(self, plan, f, rows):
        self.every, self.f, self.rows = plan.config.output.every, f, rows
        self.count = 0

    def begin(self, state):
        self.save(state)

    def save(self, state):
        psi = host_psi(state)
        _append(self.f, "snapshots/t", np.array([state.t]))
        _append(self.f, "snapshots/step", np.array([state.step]))
        _append(self.f, "snapshots/psi", psi[None].astype(np.complex128))
        self.count += 1
        self.flush_rows()

    def flush_rows(self):
        rows = np.array(self.rows.rows, dtype=np.float64)
        done = self.f["observables/t"].shape[0] if "observables/t" in self.f else 0
        if len(rows) > done:
            new = rows[done:]
            _append(self.f, "observables/t", new[:, 0])
            _append(self.f, "observables/step", new[:, 1].astype(np.int64))
            for i, (k, *_) in enumerate(ROWS):
                _append(self.f, f"observables/{k}", new[:, 2 + i])
            _append(self.f, "observables/nuclear_density", np.array(self.rows.densities[0][done:]))
            _append(self.f, "observables/electron_density", np.array(self.rows.densities[1][done:]))
        self.f.flush()


def _append(f, name, a):
    if name not in f:
        f.create_dataset(name, data=a, maxshape=(None,) + a.shape[1:], chunks=True)
        return
    ds = f[name]
    n = ds.shape[0]
    ds.resize(n + a.shape[0], axis=0)
    ds[n:] = a


def _label(f, model):
    units = {"t": ("hbar/E_h", "time"), "step": ("1", "step index")}
    for k, u, d in ROWS:
        units[k] = (u, d)
    units["nuclear_density"] = ("1/bohr", "int |psi(x, R, t)|^2 dx (rows: observation times; columns: /grid/R)")
    units["electron_density"] = ("1/bohr", "int |psi(x, R, t)|^2 dR (rows: observation times; columns: /grid/x)")
    for k, (u, d) in units.items():
        ds = f[f"observables/{k}"]
        ds.attrs["units"], ds.attrs["description"] = u, d
    f["snapshots/psi"].attrs["units"] = "1/bohr"
    f["snapshots/psi"].attrs["description"] = "psi(x, R) at /snapshots/t: axis 1 /grid/x, axis 2 /grid/R"


@dataclass
class NucleiResult:
    """A finished ``[nuclei]`` run: its file (or None), the observation times and rows,
    the last psi (host), the KER spectrum and the seconds."""
    config: object
    path: str | None
    t: np.ndarray
    observables: dict
    psi: np.ndarray
    ker: dict
    seconds: dict = dataclasses.field(default_factory=dict)


def run(plan: NucleiPlan, out_dir=None, *, force=False, progress=False) -> NucleiResult:
    """Step ``plan`` to t_end; write OUT/<name>.h5 when ``out_dir`` is given (OutputExists
    unless ``force``; ConfigError naming --out when it cannot fit)."""
    cfg, model = plan.config, plan.model
    path = None if out_dir is None else os.path.join(out_dir, f"{cfg.name}.h5")
    if path is not None:
        if os.path.exists(path) and not force:
            raise OutputExists(path)
        snaps = cfg.time.steps // cfg.output.every + 2
        obs = cfg.time.steps // cfg.output.observables_every + 2
        size = 16 * snaps * model.shape[0] * model.shape[1] + 8 * obs * (len(ROWS) + 2 + sum(model.shape))
        check_space(out_dir, size + (1 << 20), "the run file")
        os.makedirs(out_dir, exist_ok=True)
    stepper = plan.stepper()
    rows = _Rows(plan, stepper)
    sinks = [rows, Progress(plan.steps, disable=not progress)]
    f = None
    if path is not None:
        work = part_path(path)
        f = h5py.File(work, "w")
        _attributes(f, plan)
        sinks.insert(1, _File(plan, f, rows))
    t0 = time.perf_counter()
    try:
        state = evolve(plan, plan.psi0, sinks, stepper=stepper, settle=False)
        loop = time.perf_counter() - t0
        psi = host_psi(state)
        ker = model_nuclei.ker_spectrum(model, psi)
        if f is not None:
            sinks[1].flush_rows()
            _label(f, model)
            for k in ("energy", "energy_eV", "probability"):
                f.create_dataset(f"ker/{k}", data=ker[k])
            f["ker/energy"].attrs["units"], f["ker/energy_eV"].attrs["units"] = "hartree", "eV"
            f["ker/probability"].attrs["units"] = "1/hartree"
            f["ker"].attrs["total"], f["ker"].attrs["incoming"] = ker["total"], ker["incoming"]
            f.attrs["loop_seconds"] = loop
            f.attrs["chebyshev_terms"] = stepper.cheb_terms
            f.close()
            f = None
            publish(work, path)
    finally:
        if f is not None:
            f.close()
    t = np.array([r[0] for r in rows.rows])
    table = np.array(rows.rows)
    obs = {k: table[:, 2 + i] for i, (k, *_) in enumerate(ROWS)}
    obs["nuclear_density"] = np.array(rows.densities[0])
    obs["electron_density"] = np.array(rows.densities[1])
    return NucleiResult(cfg, path, t, obs, psi, ker,
                        {**plan.prepare_seconds, "loop": loop, "chebyshev_terms": stepper.cheb_terms})


def _attributes(f, plan):
    cfg, m = plan.config, plan.model
    f.attrs.update({
        "format": FORMAT, "name": cfg.name, "version": __version__, "units": "atomic units (hbar = m_e = e = 1)",
        "input_toml": cfg.source, "backend": plan.backend.describe(),
        "mu_e": m.mu_e, "mu_N": m.mu_N, "kappa": m.kappa, "nuclear_mass": cfg.nuclei.mass,
        "model": "1D + 1D H2+: H = -d_R^2/(2 mu_N) - d_x^2/(2 mu_e) + V(x, R) + kappa x E(t) "
                 "(tdse.model.nuclei)",
        "prepare_seconds": json.dumps(plan.prepare_seconds),
        "dissociation_limit": model_nuclei.dissociation_limit(m),
        "omega": cfg.field.omega if cfg.field is not None else 0.0})
    for name, a, u in (("x", m.x, "bohr"), ("R", m.R, "bohr")):
        ds = f.create_dataset(f"grid/{name}", data=a)
        ds.attrs["units"] = u
    f.create_dataset("states/V", data=m.V_host).attrs["units"] = "hartree"
