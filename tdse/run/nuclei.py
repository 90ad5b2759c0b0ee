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

from mgemm.arrays import to_host, unit_roundoff

from ..config import ConfigError
from ..model import nuclei as model_nuclei
from ..numerics.stepper import NucleiStepper
from ..options import available_memory
from ..version import __version__
from .backend import Backend, backend_for
from .loop import Sink, evolve
from .resources import check_space, free_on
from .runfile import NUCLEI_FORMAT
from .scanfile import key_scales, put
from .sinks import Progress, host_psi
from .snapshots import OutputExists, part_path, publish

__all__ = ["NucleiPlan", "prepare", "split_devices", "run", "NucleiResult", "memory_bytes", "FORMAT", "ROWS", "scan",
           "write_scan", "SCAN_FORMAT"]

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


#: a run splits Psi's columns over its GPUs when each then holds at least this many R points
#: and the grid at least SPLIT_MIN_POINTS: measured on 2 H200 (``python -m benchmarks nuclei
#: --devices 0 1``, benchmarks/results/nuclei_h200x2_20261128T205918.json and …T210602), 2048
#: x 512 steps 1.28-1.63x faster on two than on one, 1024 x 512 2.7x slower (its terms are
#: bound by the host's CUDA calls: ~290-340 us a term on two against 108-123 on one)
SPLIT_MIN_COLUMNS = 128
SPLIT_MIN_POINTS = 2 ** 20


@dataclass(frozen=True)
class NucleiPlan:
    """What :func:`run` and :func:`tdse.evolve` step: the config, the backend (its
    ``devices`` those the run uses), the model on its (first) device, psi(0) on the host,
    the set-up's seconds and, on GPUs, the operator the series runs with: Psi's columns on
    them (:class:`tdse.backends.cupy.columns.ColumnOperator`; one GPU too, for its fused term)."""
    config: object
    backend: Backend
    model: object
    psi0: np.ndarray
    prepare_seconds: dict
    columns: object = None

    @property
    def steps(self) -> int:
        return self.config.time.steps

    def stepper(self):
        return NucleiStepper(self.model, self.backend.xp, columns=self.columns)


def split_devices(config, devices) -> list:
    """The GPUs of ``devices`` a run of ``config`` uses: all of them when each gets
    SPLIT_MIN_COLUMNS columns of R or more and the grid has SPLIT_MIN_POINTS, else the first."""
    n_x, n_R = config.grid.n, config.nuclei.n
    if len(devices) > 1 and n_R // len(devices) >= SPLIT_MIN_COLUMNS and n_x * n_R >= SPLIT_MIN_POINTS:
        return list(devices)
    return list(devices[:1])


def prepare(config, *, backend="auto", devices=None, threads=None) -> NucleiPlan:
    """The plan of a ``[nuclei]`` run on the CPU or on GPUs ("auto" takes them where there
    are): on one GPU, the first of ``devices``, or on all of them with Psi's columns split
    (:func:`split_devices`); ConfigError (one line) when the box cannot hold the fragments
    (:func:`tdse.model.nuclei.check_box`) or the grid cannot fit in memory (host, or each GPU)."""
    from ..backends.cupy.columns import bytes_per_gpu
    t0 = time.perf_counter()
    model_nuclei.check_box(config)
    be = backend_for(config, backend, devices, threads)
    n_x, n_R = config.grid.n, config.nuclei.n
    if be.name == "cupy":
        be = dataclasses.replace(be, devices=tuple(split_devices(config, be.devices)))
    need = memory_bytes(config)
    places = [("host", need, available_memory())] if be.name == "numpy" else [
        (f"GPU {d}", (need if i == 0 else 0) + bytes_per_gpu(n_x, n_R, be.gpus), free_on(be.xp, d))
        for i, d in enumerate(be.devices)]
    for where, b, free in places:
        if b > free:
            raise ConfigError("nuclei.dR", config.nuclei.dR, (
                f"gives a {n_x} x {n_R} grid (x by R); a run keeps about {b / 2**30:.2f} GiB on "
                f"the {where}, more than its {free / 2**30:.2f} GiB free: a coarser dx or dR, or a smaller box"))
    if be.name == "cupy":               # the model, psi and the observables: the first GPU
        be.xp.cuda.Device(be.devices[0]).use()
    columns = None
    with be.limit():
        t1 = time.perf_counter()
        host = model_nuclei.Model(config)
        _check_range(config, host)
        psi0 = model_nuclei.initial_state(host)
        t2 = time.perf_counter()
        model = host if be.name == "numpy" else model_nuclei.Model(config, be.xp)
        if be.name == "cupy":          # one GPU too: its fused term beats the model's apply
            from ..backends.cupy.columns import ColumnOperator
            columns = ColumnOperator(be.xp, be.devices, host.Tx_host, host.TR_host.astype(np.complex128),
                                     host.V_host, host.kappa * host.x[:, None])
    return NucleiPlan(config, be, model, psi0,
                      {"model": t1 - t0 + time.perf_counter() - t2, "initial_state": t2 - t1}, columns)


def _check_range(config, model):
    """ConfigError (one line) where H's spectrum (without the field) has no finite bounds or
    dt times its half-width leaves no digit of a step's phase (u theta >= 1): a nucleus'
    mass or dR that make T_R beyond double precision, a repulsion at R_min that overflows --
    before the initial state's eigensolve, which had then failed with a traceback or run on
    for ever."""
    lo, hi = model.bounds()
    theta = config.time.dt * 0.5 * (hi - lo)
    if not theta * unit_roundoff(np.complex128) < 1.0:      # (as the precheck of a 1D run)
        raise ConfigError("time.dt", config.time.dt, (
            f"theta = dt ||H|| = {theta:.3g} is beyond double precision (H's spectrum in "
            f"[{lo:.3g}, {hi:.3g}] Ha from the kinetic energies -- nuclei.mass, nuclei.dR, "
            f"grid.dx -- and the potential at nuclei.R_min): lower dt or those values"))


class _Rows(Sink):
    """The observables of each member (a run's psi: one) every ``output.observables_every``
    steps (and at the last), kept on the host until the file takes them: ``t``, ``step``,
    ``rows`` (a time's: each member's ROWS values) and ``densities`` (a time's: each
    member's nuclear and electron densities)."""

    def __init__(self, model, stepper, every):
        self.every, self.model, self.stepper = every, model, stepper
        self.t, self.step, self.rows, self.densities = [], [], [], []

    def begin(self, state):
        self.save(state)

    def save(self, state):
        E = np.atleast_1d(self.stepper.field_at(state.t))
        ax, aR = (np.atleast_1d(to_host(a)) for a in self.stepper.absorbed)
        psi = state.psi if state.psi.ndim == 3 else state.psi[None]
        rows, dens = [], []
        for b in range(psi.shape[0]):
            r = self.model.measure(psi[b], state.t, (ax[b], aR[b]), E=float(E[b]))
            r["field"] = float(E[b])
            rows.append([r[k] for k, *_ in ROWS])
            dens.append((r["nuclear_density"], r["electron_density"]))
        self.t.append(state.t)
        self.step.append(state.step)
        self.rows.append(rows)
        self.densities.append(dens)


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
        r = self.rows
        done = self.f["observables/t"].shape[0] if "observables/t" in self.f else 0
        if len(r.t) > done:
            new = np.array([row[0] for row in r.rows[done:]], dtype=np.float64)
            _append(self.f, "observables/t", np.array(r.t[done:]))
            _append(self.f, "observables/step", np.array(r.step[done:], dtype=np.int64))
            for i, (k, *_) in enumerate(ROWS):
                _append(self.f, f"observables/{k}", new[:, i])
            for j, k in enumerate(("nuclear_density", "electron_density")):
                _append(self.f, f"observables/{k}", np.array([d[0][j] for d in r.densities[done:]]))
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
    rows = _Rows(model, stepper, cfg.output.observables_every)
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
    t = np.array(rows.t)
    table = np.array(rows.rows)[:, 0, :]
    obs = {k: table[:, i] for i, (k, *_) in enumerate(ROWS)}
    obs["nuclear_density"] = np.array([d[0][0] for d in rows.densities])
    obs["electron_density"] = np.array([d[0][1] for d in rows.densities])
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


# ---------------------------------------------------------------- scans over the field
SCAN_FORMAT = "tdse-nuclei-scan/1"


def _without_field(c):
    return dataclasses.replace(c, potential=dataclasses.replace(c.potential, field=None))


def scan(sc, workers=None, scheduler=None, keep_psi=False, backend="numpy", devices=None, batch=None,
         progress=False) -> dict:
    """A scan of a ``[nuclei]`` input over its field (``sc``: :func:`tdse.studies.scan.members`'
    members, which may differ in the field alone): psi(0) made once, the members stepped
    together as one B x N_x x N_R block (:class:`NucleiStepper` with their fields: one
    Chebyshev series a factor over the union of their intervals), ``batch`` members at a
    time (default: what the memory holds, at most 256).  Returns {"scan", "t", each row's
    name: (shape..., S), "ker_energy" (hartree), "ker" (shape..., E), "R",
    "nuclear_density" (shape..., N_R) at t_end, "batches", "seconds", "model": "nuclei"}."""
    t_start = time.perf_counter()
    for key, v in (("--workers", workers), ("--scheduler", scheduler), ("--keep-psi", keep_psi or None)):
        if v is not None:
            raise ConfigError(key, v, "is not for a [nuclei] scan (in this process, one device)")
    ref = _without_field(sc.base)
    for c in sc.configs:
        if _without_field(c) != ref:
            key, values = sc.axes[0] if len(sc.axes) == 1 else next(
                (a for a in sc.axes if not a[0].startswith("field.")), sc.axes[0])
            raise ConfigError(key, values, "changes more than the field: a [nuclei] scan's members "
                              "share the grid, the nuclei and psi(0) (scan field keys; run others one by one)")
    plan = prepare(sc.configs[0], backend=backend, devices=devices)
    model, xp = plan.model, plan.backend.xp
    per = 16 * WORK_ARRAYS * model.shape[0] * model.shape[1]
    free = available_memory() if plan.backend.name == "numpy" else free_on(xp, plan.backend.devices[0])
    limit = batch or max(1, min(256, int(0.5 * free // per)))
    n = len(sc.configs)
    groups = [list(range(i, min(n, i + limit))) for i in range(0, n, limit)]
    rows, finals = [None] * n, [None] * n
    t_axis = None
    for g in groups:
        stepper = NucleiStepper(model, xp, fields=[sc.configs[i].potential.field for i in g])
        sink = _Rows(model, stepper, plan.config.output.observables_every)
        X0 = xp.asarray(np.ascontiguousarray(np.broadcast_to(plan.psi0, (len(g),) + model.shape)))
        state = evolve(plan, X0, [sink, Progress(plan.steps, disable=not progress, desc=f"members {g[0]}-{g[-1]}")],
                       stepper=stepper, settle=False)
        psi = to_host(state.psi)
        t_axis = np.array(sink.t)
        table = np.array(sink.rows)                  # (S, B, rows)
        for j, i in enumerate(g):
            rows[i] = table[:, j, :]
            finals[i] = psi[j]
    kers = [model_nuclei.ker_spectrum(model, p) for p in finals]
    shape = sc.shape
    out = {"scan": sc, "t": t_axis, "model": "nuclei", "R": model.R, "ker_energy": kers[0]["energy"],
           "ker": np.array([k["probability"] for k in kers]).reshape(shape + (-1,)),
           "ker_total": np.array([k["total"] for k in kers]).reshape(shape),
           "nuclear_density": np.array([(abs(p) ** 2).sum(axis=0) * model.grid_x.dx
                                        for p in finals]).reshape(shape + (-1,)),
           "batches": len(groups), "seconds": time.perf_counter() - t_start}
    for c, (k, *_) in enumerate(ROWS):
        out[k] = np.array([r[:, c] for r in rows]).reshape(shape + (-1,))
    return out


def write_scan(path, res) -> str:
    """OUT/<name>_scan.h5 of a ``[nuclei]`` scan (format ``tdse-nuclei-scan/1``; the keys,
    /t, /R and /ker_energy_eV as dimension scales, so xarray reads it; written as a temporary
    file, then renamed)."""
    from ..config import key_unit
    sc = res["scan"]
    tmp = path + ".tmp"
    with h5py.File(tmp, "w") as f:
        f.attrs.update(format=SCAN_FORMAT, version=__version__, input_toml=sc.base.source,
                       keys=json.dumps([k for k, _ in sc.axes]), zipped=bool(sc.zipped),
                       units="atomic units (hbar = m_e = e = 1)", seconds=float(res["seconds"]))
        dims = key_scales(f, sc, key_unit)
        scales = {}
        for name, data, unit in (("t", res["t"], "hbar/E_h"), ("R", res["R"], "bohr"),
                                 ("ker_energy_eV", res["ker_energy"] * model_nuclei.HARTREE_EV, "eV")):
            scales[name] = f.create_dataset(name, data=data)
            scales[name].attrs["units"] = unit
            scales[name].make_scale(name)
        units = {k: (u, d) for k, u, d in ROWS}
        units.update(ker=("1/hartree", "the KER spectrum at t_end (tdse.model.nuclei.ker_spectrum)"),
                     nuclear_density=("1/bohr", "int |psi|^2 dx at t_end"),
                     ker_total=("1", "the KER spectrum's integral: the dissociated part at t_end"))
        for name, (u, d) in units.items():
            last = {"ker": "ker_energy_eV", "nuclear_density": "R", "ker_total": None}.get(name, "t")
            put(f, name, res[name], dims + ([scales[last]] if last else []), u, d)
    publish(tmp, path)
    return path
