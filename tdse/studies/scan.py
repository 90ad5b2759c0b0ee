"""``tdse scan``: one input over a grid of parameter values, many runs at once (atomic units).

What runs: every member is the input with the scanned keys set (:func:`tdse.config.with_value`,
every value validated before any work); ``--set KEY=a:b:n`` (n values from a to b) or
``KEY=v1,v2,...``; several keys make a grid (their product), or with ``zip`` paired lists.

How: members that share grid, stencil, scheme, dt, t_end and output cadence form a batch;
a batch is psi as an N x B block through the one evolve loop (:func:`tdse.run.loop.evolve`)
with :class:`tdse.numerics.stepper.BatchStepper` -- every exponential a block Chebyshev
series, the kinetic energy one sparse product or GEMM for the whole block, each member's
own diagonal (field, centres, absorber) -- and :class:`tdse.model.observables.BlockMeasure`
recording each member's observables.  The batch size comes from the memory (``batch``
caps it).

Where (STYLE.md item 15: how many workers is a choice, not code): in this process by
default; ``workers = N`` starts a Dask LocalCluster of N single-threaded workers;
``scheduler = ADDRESS`` uses a running Dask cluster (a Slurm/PBS cluster through
dask-jobqueue: docs/SCANS.md).  A batch is a Dask task (retried when its worker dies);
each finished batch is written to ``OUT/<name>_scan.parts/`` at once, so an interrupted
scan run again with the same arguments computes only the batches it lacks.

The result is one file ``OUT/<name>_scan.h5`` (:mod:`tdse.run.scanfile`), readable by
xarray with named dimensions.
"""
from __future__ import annotations

import concurrent.futures
import dataclasses
import hashlib
import itertools
import json
import math
import os
import time
import tomllib

import numpy as np

from ..config import Config, ConfigError, to_toml, with_values
from ..options import environ_restore, environ_saved
from ..model import states
from ..model.grid import points
from ..model.initial import initial_state
from ..model.observables import BlockMeasure, skippable, stack_rows
from ..numerics import chebyshev, exponentials
from ..numerics.stepper import BatchStepper
from ..run.loop import Sink, evolve
from ..run.nuclei import scan as nuclei_scan
from ..run.plan import prepare
from ..run.timeerror import estimating_batch, scan_estimates
from ..run.tsurff import for_batch
from .scan_save import SERIES, parse_save, reduce_batch, save_text, spectra_of
from .workers import WORKER_CONFIG, connect, need_dask, need_dask_cuda, worker_yaml  # noqa: F401  (worker_yaml: docs/SCANS.md)

__all__ = ["parse_set", "members", "batches", "run_batch", "batch_task", "scan", "Scan", "spectra"]

MAX_BATCH = 1024   # members in one batch at most (the block's width)


def parse_set(text: str):
    """'KEY=a:b:n' (n values from a to b) or 'KEY=v1,v2,...' -> (KEY, [values]);
    ConfigError (one line) otherwise."""
    usage = "must be KEY=a:b:n (2 <= n <= 100000 values from a to b, a and b finite) or KEY=v1,v2,..."
    key, eq, rng = text.partition("=")
    key = key.strip()
    if not eq or not key or not rng.strip():
        raise ConfigError("--set", text, usage)
    try:
        if ":" in rng:
            a, b, n = rng.split(":")
            a, b, n = float(a), float(b), int(n)
            if not (math.isfinite(a) and math.isfinite(b)) or not 2 <= n <= 100_000:
                raise ValueError
            return key, np.linspace(a, b, n).tolist()
        vals = [float(v) for v in rng.split(",")]
        if all(math.isfinite(v) for v in vals):
            return key, vals
    except ValueError:
        words = [v.strip() for v in rng.split(",")]
        if ":" not in rng and all(words) and not all(_numeric(v) for v in words):
            raise ConfigError("--set", text, "a scan's values are numbers (one batch runs one grid "
                              f"and scheme); run each of {', '.join(words)} with `tdse run INPUT "
                              f"--set {key}=VALUE`") from None
    raise ConfigError("--set", text, usage)


def _numeric(text) -> bool:
    try:
        float(text)
        return True
    except ValueError:
        return False


@dataclasses.dataclass
class Scan:
    """The members of a scan: ``axes`` [(key, values)] (grid) or the zipped lists,
    ``index`` each member's position (a tuple over the axes, or (i,) zipped), ``configs``."""
    base: Config
    axes: list
    zipped: bool
    index: list
    configs: list

    @property
    def shape(self):
        return (len(self.axes[0][1]),) if self.zipped else tuple(len(v) for _, v in self.axes)


def members(config: Config, sets, zipped=False) -> Scan:
    """Every member's config (validated before any work: ConfigError naming the key)."""
    axes = [(k, list(v)) for k, v in (sets.items() if isinstance(sets, dict) else sets)]
    if not axes:
        raise ConfigError("--set", None, "give at least one KEY=a:b:n")
    if zipped and len({len(v) for _, v in axes}) != 1:
        raise ConfigError("--zip", [len(v) for _, v in axes], "zipped keys need lists of one length")
    index = ([(i,) for i in range(len(axes[0][1]))] if zipped else
             list(itertools.product(*[range(len(v)) for _, v in axes])))
    source = tomllib.loads(to_toml(config))        # parsed once, each member a copy of it
    configs = [with_values(config, [(key, vals[idx[0] if zipped else idx[a]])
                                    for a, (key, vals) in enumerate(axes)], source)
               for idx in index]
    _one_time_axis(configs, axes)
    return Scan(config, axes, zipped, index, configs)


def _one_time_axis(configs, axes):
    """The members' rows share one time axis (the scan's arrays are (values..., t)): a key
    whose values change dt, t_end or observables_every is one line, before any work."""
    def axis(c):
        return (c.time.dt, c.time.steps, c.output.observables_every)
    if len({axis(c) for c in configs}) > 1:
        key, vals = next(((k, v) for k, v in axes if k.split(".")[0] in ("time", "output")), axes[0])
        raise ConfigError(key, vals, "changes the members' time axis (time.dt, time.t_end or "
                          "output.observables_every): a scan's members share one; run each "
                          f"with `tdse run INPUT --set {key}=VALUE`")


def _signature(cfg: Config):
    """Members with equal signatures share a batch: one grid, scheme, dt (and tolerance),
    length, output."""
    g, t, o, p = cfg.grid, cfg.time, cfg.output, cfg.propagator
    f = cfg.potential.field
    return (g.x_min, g.x_max, g.dx, str(g.stencil), t.dt, t.tolerance, t.dt_min, t.t_end, p.scheme,
            o.observables_every, o.populations, len(cfg.potential.centres), cfg.potential.V,
            None if f is None else (f.envelope, f.E))


def batch_limit(config: Config, memory=None) -> int:
    """Members a batch may hold in ``memory`` bytes (default: half the memory available):
    about 12 complex blocks of N x B (the Chebyshev recurrence, the FFT's padding, the
    potentials) and each member's eigenstates; with the time error, the carried e and the
    estimate's words (:meth:`tdse.numerics.local_error.LocalError.words`)."""
    from ..config import available_memory
    from ..numerics.local_error import LocalError
    n, K = config.grid.n, config.output.populations
    per = 16 * n * (12 + (LocalError.words(config) + 4 if scan_estimates(config) else 0)) + 8 * n * (K + 4)
    return max(1, min(MAX_BATCH, int((memory or available_memory() // 2) // per)))


def device_memory(backend="numpy"):
    """Bytes a batch may use: half the host's available memory, or of GPU 0's free memory."""
    if backend != "cupy":
        return None
    from mgemm.arrays import cupy_or_none
    cp = cupy_or_none()
    if cp is None:
        return None
    from ..run.resources import free_on
    return free_on(cp, 0) // 2


def batches(scan: Scan, limit=None, memory=None) -> list:
    """Lists of member numbers, each one batch: equal signatures, at most ``limit`` (and what
    ``memory`` bytes hold: :func:`batch_limit`)."""
    groups = {}
    for i, cfg in enumerate(scan.configs):
        groups.setdefault(_signature(cfg), []).append(i)
    out = []
    for idx in groups.values():
        cap = limit or batch_limit(scan.configs[idx[0]], memory)
        out += [idx[k:k + cap] for k in range(0, len(idx), cap)]
    return out


class _Recorder(Sink):
    """Each member's observables every ``observables_every`` steps (and the last): the grid
    sums (:meth:`BlockMeasure.raw`) finished on the host ``FLUSH`` rows at a time, kept as
    those blocks of columns; on a GPU a block's copy started without waiting (:class:`mgemm.
    arrays.HostCopy`) and finished on a thread while the steps go on (on the loop's thread the
    device stood ~35-40 ms a block of 1000 members, ~12 % of the scan: ``scan_trace_h200x1_20261201T0530.txt``)."""
    FLUSH = 256

    def __init__(self, measure, config, full=None):
        self.measure, self.config = measure, config
        # the costly parts of a row no kept series reads: skipped but at the last row
        self.skip = () if full is None else skippable(full)
        self.every, self.last = config.output.observables_every, config.time.steps
        self.t, self._blocks, self._pending = [], [], []
        self._pool = None           # (a GPU's: the thread finishing the blocks)

    def begin(self, state):
        self._record(state)

    def save(self, state):
        self._record(state)

    def _record(self, state):
        self.t.append(state.t)
        skip = self.skip if state.step < self.last else ()
        self._pending.append((state.t, self.measure.raw(state.t, state.psi, skip=skip)))
        if len(self._pending) >= self.FLUSH:
            self.flush()

    def end(self, state):
        self.flush()

    def flush(self):
        """The pending rows to the host (one copy per kind), finished there (a GPU's: a
        future of the finished block, the copy under way)."""
        if not self._pending:
            return
        ts, rows, xp = [t for t, _ in self._pending], [r for _, r in self._pending], self.measure.xp
        self._pending = []
        if xp is np:
            self._blocks.append(self.measure.finish(ts, stack_rows(rows, xp)))
            return
        from mgemm.arrays import HostCopy
        copy = HostCopy(stack_rows(rows, xp, copy=False))
        self._pool = self._pool or concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="tdse-rows")
        self._blocks.append(self._pool.submit(lambda: self.measure.finish(ts, copy.result())))

    def columns(self, full=None) -> dict:
        """name -> (B, S[, K]): each member's observables over time, C-ordered; those not in
        ``full`` (None: all) their last row alone (1000 members' whole record: ~0.5 GB copied)."""
        blocks = [b.result() if hasattr(b, "result") else b for b in self._blocks]
        if self._pool is not None:
            self._pool.shutdown()
        whole = [n for n in BlockMeasure.NAMES if full is None or n in full]
        return {n: np.ascontiguousarray(np.swapaxes(np.concatenate(
                    [np.asarray(b[n]) for b in blocks] if n in whole else [np.asarray(blocks[-1][n])[-1:]]), 0, 1))
                for n in BlockMeasure.NAMES}


def _molecule(cfg: Config) -> str:
    """What the molecular H(0) depends on (grid and centres at t = 0, or the formula and its
    parameters; not the field)."""
    from ..model.potential import centre_positions
    p = cfg.potential
    return json.dumps([cfg.grid.x_min, cfg.grid.x_max, cfg.grid.dx, str(cfg.grid.stencil), p.a,
                       [c.Z for c in p.centres], centre_positions(p, 0.0).tolist(), p.V,
                       list(p.parameters)])


def run_batch(configs, backend="numpy", devices=None, keep_psi=False, full=None) -> dict:
    """One batch: the members' observables over time ({"t": (S,), name: (B, S[, K])}; those
    not in ``full``, if given, their last row), with ``keep_psi`` their final psi (B, N)."""
    t_start = time.perf_counter()
    kind = "estimate" if scan_estimates(configs[0]) else "none"
    configs = [dataclasses.replace(c, propagator=dataclasses.replace(
        c.propagator, method=exponentials.Chebyshev.name, time_error=kind, error_window=0,
        operator=False)) for c in configs]
    from ..run.backend import resolve_backend, usable_cpus
    block = len(configs) > 1 and resolve_backend(backend, devices)[0] == "numpy"
    plan = prepare(configs[0], backend=backend, devices=devices, check_resolution=False,
                   threads=usable_cpus() if block else None)   # a CPU block: BLAS-3
    xp = plan.backend.xp
    x = points(configs[0].grid)
    K = configs[0].output.populations
    from ..run.plan import states_needed
    phi, psi0 = [], []
    solved = {(_molecule(configs[0]), states_needed(configs[0])): plan.states}   # prepare's
    for c in configs:
        need = states_needed(c)
        key = (_molecule(c), need)       # members with one molecular H(0) share its states
        if key not in solved:
            solved[key] = states.eigenstates(c, 0.0, need)[1]
        ph = solved[key]
        phi.append(ph[:K])
        psi0.append(initial_state(c, x, ph))
    X0 = np.stack(psi0, axis=1)
    rec = _Recorder(BlockMeasure(configs, x, np.stack(phi), X0, xp), configs[0], full)
    stepper = BatchStepper(configs, xp)
    sinks, ts, est = [rec], for_batch(configs, stepper), None
    if ts is not None:
        sinks.append(ts)
    if kind == "estimate":            # each member's time error (adaptive steps: shared)
        stepper, est = estimating_batch(stepper, configs, np.stack(phi), xp)
        sinks.append(est)
    t0 = time.perf_counter()
    final = evolve(plan, xp.asarray(X0), sinks, stepper=stepper)   # (with the plan's BLAS threads)
    t1 = time.perf_counter()
    out = {"t": np.asarray(rec.t), "seconds": t1 - t0,
           "exponentials": stepper.exponentials, "chebyshev_terms": stepper.cheb_terms,
           "blas_threads": plan.backend.threads or 0, **rec.columns(full)}   # (B, S[, K])
    if est is not None:
        out.update(est.columns(), steps_taken=stepper.substeps, rejected=stepper.rejected)
    # the batch's work outside its time loop: set-up (plan, states, the members' potentials)
    # and the columns' collection after it
    out["setup_seconds"], out["collect_seconds"] = t0 - t_start, time.perf_counter() - t1
    if keep_psi:
        from mgemm.arrays import to_host
        out["psi"] = to_host(final.psi).T
    if ts is not None:                  # t-SURFF's P(k): (B, K) each, and the momenta
        (out["tsurff_P_right"], out["tsurff_P_left"]), out["tsurff_k"] = ts.probabilities(), ts.k
    return out


def _fingerprint(scan: Scan, members_, series=SERIES) -> str:
    text = json.dumps([to_toml(scan.configs[i]) for i in members_] + [save_text(series)])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _parts_dir(out, name):
    return None if out is None else os.path.join(out, f"{name}_scan.parts")


def scan_bytes(sc: Scan, keep_psi=False, series=SERIES) -> int:
    """Bytes a scan writes at most: its file, and the same again in its parts folder while
    it runs -- a member's rows (120 + 8 K bytes a row, + 16 with the time errors; ~0.56 MB
    at 4411 rows and K = 4) where it keeps ``series``, else one row and its spectrum (8 bytes
    a row), its final psi with ``keep_psi`` -- and 256 KiB of metadata (a bound, compared
    with the files a scan writes in tests/test_scan.py)."""
    rows = max(c.time.steps // c.output.observables_every + 1 for c in sc.configs)
    K = max(c.output.populations for c in sc.configs)
    row = 120 + 8 * K + (16 if scan_estimates(sc.base) else 0)
    per = (rows * row if series else row + 8 * rows) + (16 * sc.base.grid.n if keep_psi else 0)
    return 2 * len(sc.configs) * per + (1 << 18)


def parts_kept(out, name):
    """(folder, count): a scan's finished batches kept in its parts folder."""
    folder = _parts_dir(os.path.abspath(out), name)
    return folder, (sum(1 for d in os.listdir(folder) if d.startswith("batch_") and
                        os.path.isdir(os.path.join(folder, d))) if os.path.isdir(folder) else 0)


def remove_parts(out, name):
    """The finished batches' folder of a scan removed, once its file is written (an
    interrupted scan keeps it: run again, it continues from there)."""
    import shutil
    folder = _parts_dir(os.path.abspath(out), name)
    shutil.rmtree(folder, ignore_errors=True)


def _load_part(folder, k, fp):
    """Batch ``k``'s part if written for these members (fingerprint ``fp``), else None; its
    arrays memory-mapped (read when the scan is assembled, not here)."""
    d = os.path.join(folder, f"batch_{k:05d}")
    try:
        with open(os.path.join(d, "fingerprint")) as f:
            if f.read() != fp:
                return None             # written for other members: run it again
        names = [n[:-4] for n in os.listdir(d) if n.endswith(".npy")]
    except OSError:
        return None
    return {n: np.load(os.path.join(d, n + ".npy"), mmap_mode="r", allow_pickle=False)
            for n in names}


def _save_part(folder, k, fp, res):
    """Batch ``k``'s arrays as ``batch_k/NAME.npy`` (a raw write each; a folder made aside
    and renamed into place when whole)."""
    import shutil
    final = os.path.join(folder, f"batch_{k:05d}")
    tmp = f"{final}.tmp{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    for name, v in res.items():
        np.save(os.path.join(tmp, name + ".npy"), np.asarray(v), allow_pickle=False)
    with open(os.path.join(tmp, "fingerprint"), "w") as f:
        f.write(fp)
    shutil.rmtree(final, ignore_errors=True)   # a part of other members
    os.replace(tmp, final)


#: the file in a scan's parts folder by which a Dask worker knows it sees the client's folder
MARK = ".scan-token"


def _mark(folder) -> str:
    """A fresh token in ``folder/MARK``: a worker that reads it back sees this folder."""
    os.makedirs(folder, exist_ok=True)
    token = os.urandom(8).hex()
    with open(os.path.join(folder, MARK), "w") as f:
        f.write(token)
    return token


def _sees(folder, token) -> bool:
    try:
        with open(os.path.join(folder, MARK)) as f:
            return f.read() == token
    except OSError:
        return False


def batch_task(configs, backend, devices, keep_psi, part=None, series=SERIES, spectra=None) -> dict:
    """A batch (a Dask task, or here) reduced to what the scan keeps (:func:`scan_save.reduce_batch`:
    the series it keeps and the spectra's acceleration whole, the rest at t_end).  ``part`` = (folder,
    k, fingerprint, token): a worker that sees the client's parts folder (the token in it) writes the
    batch there, returns its number and seconds (~0.6 GB for 1000 atom_hhg members never sent).  A
    ConfigError is returned ({"refused": it}), not raised (a cluster retried it, logging it)."""
    full = set(series) | ({"acceleration"} if spectra is not None else set())
    try:
        res = reduce_batch(run_batch(configs, backend, devices, keep_psi, full), series, spectra)
    except chebyshev.OutOfReach as e:       # (the plan prechecked the batch's first member alone)
        return {"refused": ConfigError("time.dt", configs[0].time.dt, f"a member's step needs dt ||H|| / 2 = "
                                       f"{e.R:.3g}, beyond the Chebyshev series: the scanned values make ||H|| too large")}
    except ConfigError as e:
        return {"refused": e}
    if part is not None and _sees(part[0], part[3]):
        t0 = time.perf_counter()
        _save_part(part[0], part[1], part[2], res)
        return {"part": part[1], "seconds": res["seconds"], "write_seconds": time.perf_counter() - t0}
    return res


def scan(config: Config, sets, *, zipped=False, out=None, workers=None, scheduler=None,
         backend="numpy", devices=None, batch=None, keep_psi=False, progress=False,
         on_submit=None, save="series") -> dict:
    """Run the scan (module docstring); returns {"scan": Scan, "t", name: array
    (shape..., S[, K]) -- at t_end (shape...[, K]) where ``save`` keeps no series of it
    (:mod:`tdse.studies.scan_save`: "final", "series" (this API's default: the whole
    record), "series:NAME,..."), "saved_series", "hhg_order" and "hhg_power" (shape..., F)
    with a [field], "psi" (shape..., N) with ``keep_psi``, "batches", "seconds"}.
    ``sets``: [(key, values)] or {key: values}, or the :class:`Scan` :func:`members` made
    of them (`tdse scan`'s, checked before any work: not made twice -- 1000 atom_hhg
    members 0.07-0.2 s a time).  ``on_submit(client)``: called once the batches are
    submitted to a Dask cluster (a hook for tests and monitoring)."""
    series = parse_save(save)
    from tqdm.auto import tqdm
    t_members = time.perf_counter()
    sc = sets if isinstance(sets, Scan) else members(config, sets, zipped)
    t_members = time.perf_counter() - t_members
    if config.nuclei is not None:               # the 1D + 1D model: its own batched steps
        return nuclei_scan(sc, workers, scheduler, keep_psi, backend, devices, batch, progress)
    if workers is not None or scheduler is not None:
        need_dask("--workers" if workers is not None else "--scheduler")
    if workers is not None and backend == "cupy":
        need_dask_cuda()
    groups = batches(sc, batch, device_memory(backend) if workers is None and scheduler is None else None)
    folder = _parts_dir(None if out is None else os.path.abspath(out), config.name)
    fps = [_fingerprint(sc, g, series) for g in groups]
    whole = _Assembly(sc, groups, keep_psi, series)
    for k, fp in enumerate(fps if folder else ()):
        part = _load_part(folder, k, fp)            # finished before: kept (unless it
        if part is not None and all(n in part for n in whole.names):   # lacks a final psi
            whole.place(k, part)
    todo = [k for k in range(len(groups)) if k not in whole.meta]
    t0 = time.perf_counter()
    bar = tqdm(total=len(groups), initial=len(groups) - len(todo), unit="batch",
               desc=f"scan {config.name}", disable=not progress)
    with concurrent.futures.ThreadPoolExecutor(1) as writer:   # a part written while the next batch runs
        saving, written = [], []            # (waited for at the exit: also on an interrupt)
        for k, res in _execute(sc, groups, todo, workers, scheduler, backend, devices, keep_psi,
                               on_submit, folder, fps, series):
            if "refused" in res:             # a member's one-line refusal (e.g. StepTooSmall)
                raise res["refused"]
            if "part" in res:                # the worker wrote it
                written.append(res.get("write_seconds", 0.0))
                res = _load_part(folder, k, fps[k])
            elif folder:
                saving.append(writer.submit(_save_part, folder, k, fps[k], res))
            whole.place(k, res)              # while the other batches still run
            bar.update(1)
        for f in saving:
            f.result()                       # a failed write raises here
    bar.close()
    result = whole.result()
    result["seconds"] = time.perf_counter() - t0
    # where the scan's time went outside the batches' loops: the client's own work (the
    # members, placing each batch), each batch's set-up and collection, the workers' writes
    meta = [whole.meta[k] for k in range(len(groups))]
    result["phases"] = {"members_seconds": t_members, "place_seconds": whole.seconds,
                        "batch_setup_seconds": [m.get("setup_seconds", np.nan) for m in meta],
                        "batch_collect_seconds": [m.get("collect_seconds", np.nan) for m in meta],
                        "worker_write_seconds": written}
    return result


def _execute(sc, groups, todo, workers, scheduler, backend, devices, keep_psi, on_submit=None,
             folder=None, fps=None, series=SERIES):
    """(batch number, result) as batches finish: here, or on a Dask cluster (a LocalCluster
    of ``workers``, or the one at ``scheduler``) where a batch whose worker dies is retried
    and a worker that sees ``folder`` writes its batch's part there (:func:`batch_task`)."""
    if not todo:
        return
    spectra = spectra_of(sc)
    if workers is None and scheduler is None:
        for k in todo:
            yield k, batch_task([sc.configs[i] for i in groups[k]], backend, devices, keep_psi,
                                None, series, spectra)
        return
    import dask
    from dask.distributed import LocalCluster, as_completed
    cluster = None
    # a LocalCluster's nannies run in this process and write their pre-spawn environment
    # (OMP_NUM_THREADS=1, ...) into its os.environ, where this process's later runs would
    # read one BLAS thread: put back as it was once they have started, and at the end
    saved = environ_saved()
    with dask.config.set(WORKER_CONFIG):   # the nannies pass it to their workers
        if scheduler is None and backend == "cupy":   # one worker per GPU (checked before any work)
            from dask_cuda import LocalCUDACluster
            cluster = LocalCUDACluster(n_workers=workers, threads_per_worker=1,
                                       dashboard_address=None)
        elif scheduler is None:
            cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                   dashboard_address=None)
    environ_restore(saved)
    client = connect(cluster if cluster is not None else scheduler, scheduler)
    token = _mark(folder) if folder else None
    try:
        futures = {client.submit(batch_task, [sc.configs[i] for i in groups[k]], backend, devices,
                                 keep_psi, folder and (folder, k, fps[k], token), series, spectra,
                                 key=f"tdse-batch-{k}-{fps[k]}", retries=3): k for k in todo}
        if on_submit is not None:
            on_submit(client)
        for fut in as_completed(futures):
            yield futures[fut], fut.result()
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
        environ_restore(saved)


class _Assembly:
    """The scan's arrays (shape..., S[, K]) filled a batch at a time as each arrives (its
    rows placed by one indexed assignment a quantity), so that the client holds each
    quantity once and, on a cluster, places a batch while the others still run."""

    def __init__(self, sc, groups, keep_psi, series=SERIES):
        self.sc, self.groups, self.series = sc, groups, series
        self.names = BlockMeasure.NAMES + (("psi",) if keep_psi else ()) + \
            (("tsurff_P_right", "tsurff_P_left") if sc.base.output.tsurff_radius else ()) + \
            (("time_error", "time_error_populations") if scan_estimates(sc.base) else ()) + \
            (("hhg_power",) if spectra_of(sc) else ())
        self.arrays, self.t, self.k, self.order, self.meta, self.seconds = None, None, None, None, {}, 0.0

    def place(self, k, res):
        t0 = time.perf_counter()
        sc = self.sc
        if self.arrays is None:
            self.t = np.array(res["t"])
            self.k, self.order = res.get("tsurff_k"), res.get("hhg_order")
            self.arrays = {n: np.empty((math.prod(sc.shape),) + res[n].shape[1:], res[n].dtype)
                           for n in self.names}
        rows = np.ravel_multi_index(np.array([sc.index[i] for i in self.groups[k]]).T, sc.shape)
        for n in self.names:
            self.arrays[n][rows] = res[n]
        self.meta[k] = {key: float(res[key]) for key in
                        ("seconds", "blas_threads", "setup_seconds", "collect_seconds",
                         "steps_taken", "rejected", "chebyshev_terms") if key in res}
        self.seconds += time.perf_counter() - t0

    def result(self) -> dict:
        sc, K = self.sc, range(len(self.groups))
        out = {"scan": sc, "t": self.t, "batches": len(self.groups), "saved_series": self.series,
               "batch_seconds": [self.meta[k]["seconds"] for k in K],
               "batch_blas_threads": [int(self.meta[k].get("blas_threads", 0)) for k in K],
               # each batch's members and block Chebyshev terms (a kinetic product of the
               # block each; None for a batch read back from an older part)
               "batch_members": [len(self.groups[k]) for k in K],
               "batch_chebyshev_terms": [int(self.meta[k]["chebyshev_terms"])
                                         if "chebyshev_terms" in self.meta[k] else None for k in K]}
        if "steps_taken" in self.meta[0]:       # the estimate's steps, each batch's
            out["batch_steps_taken"] = [int(self.meta[k]["steps_taken"]) for k in K]
            out["batch_rejected"] = [int(self.meta[k]["rejected"]) for k in K]
        for n, arr in self.arrays.items():
            out[n] = arr.reshape(sc.shape + arr.shape[1:])
        if self.k is not None:
            out["tsurff_k"] = self.k
        if self.order is not None:
            out["hhg_order"] = self.order
        return out


def spectra(res: dict):
    """The harmonic spectrum of every member's acceleration ({"order", "power" (shape...,
    F)}) that the scan kept (:func:`tdse.studies.scan_save.spectra_of`: with a [field] whose
    omega is not scanned), else None."""
    return {"order": res["hhg_order"], "power": res["hhg_power"]} if "hhg_power" in res else None
