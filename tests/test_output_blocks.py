"""A run's output in blocks (#23 item 3): the observables measured a block of states at a
time where psi lives (the same numbers as a row at a time), and the snapshots held up to
``output.flush_seconds`` and written in blocks (the same file, nothing lost on an
interrupt, a failed write or a resume)."""
from __future__ import annotations

import concurrent.futures
import dataclasses
import os

import numpy as np
import pytest

import tdse
from tdse import config as cfgmod
from tdse.run import observers
from tdse.run.driver import run
from tdse.run.loop import Observer, evolve
from tdse.run.snapshots import SnapshotWriter, read, resume_state


def _moving(inputs_dir, stencil, n=160, **values):
    """h2plus_moving on a coarse grid (moving centres), with a field and an absorber where
    asked: a short run whose rows change from step to step."""
    base = cfgmod.load(os.path.join(inputs_dir, "h2plus_moving.toml"))
    w = base.grid.x_max - base.grid.x_min
    cfg = dataclasses.replace(base, grid=dataclasses.replace(base.grid, dx=w / n, stencil=stencil))
    cfg = cfg.with_value("propagator.method", "chebyshev").with_value("time.t_end", 60 * cfg.time.dt)
    for k, v in values.items():
        cfg = cfg.with_value(k, v)
    return cfg


def _field_absorber(cfg, inputs_dir):
    """``cfg`` with atom_hhg's field kind (a sin^2 pulse over twice the run, E0 = 0.05,
    omega = 3) and a quadratic absorber in the last 3 bohr of each side."""
    hhg = cfgmod.load(os.path.join(inputs_dir, "atom_hhg.toml"))
    f = dataclasses.replace(hhg.potential.field, E0=0.05, omega=3.0, duration=2 * cfg.time.t_end)
    pot = dataclasses.replace(cfg.potential, field=f)
    return dataclasses.replace(cfg, potential=pot, absorber=dataclasses.replace(
        hhg.absorber, width=3.0, strength=2.0))


@pytest.mark.parametrize("stencil", [3, 5, "dvr"])
@pytest.mark.parametrize("driven", [False, True])
def test_block_rows_equal_the_row_at_a_time_measure(stencil, driven, inputs_dir, monkeypatch):
    """Every observable of a moving-centre run measured by blocks of states (BlockMeasure's
    NumPy sums, each column at its own time and centres) equals Measure's row at a time to
    1e-12 of its scale; NaN in the same places (populations_every = 3, rows not a multiple
    of the block)."""
    cfg = _moving(inputs_dir, stencil, **{"output.populations_every": 3})
    if driven:
        cfg = _field_absorber(cfg, inputs_dir)
    monkeypatch.setattr(observers, "TIME_BLOCK", 7)       # several blocks and a partial one
    block = tdse.simulate(cfg, backend="numpy")
    monkeypatch.setattr(observers, "BLOCK_OBSERVABLES", False)
    host = tdse.simulate(cfg, backend="numpy")
    assert set(block.observables) == set(host.observables)
    for k, ref in host.observables.items():
        got = np.asarray(block.observables[k])
        ref = np.asarray(ref)
        assert got.shape == ref.shape, k
        assert np.array_equal(np.isnan(got), np.isnan(ref)), k
        fin = np.isfinite(ref)
        scale = max(1.0, np.abs(ref[fin]).max()) if fin.any() else 1.0
        assert np.abs(got[fin] - ref[fin]).max() <= 1e-12 * scale, k
    if driven:                  # the rows do change: a test of equal constants would pass
        assert np.ptp(host.observables["field"]) > 0.01
    assert np.ptp(host.observables["x_mean"]) > 1e-3


def test_a_block_of_one_configuration_is_made_from_one_state(inputs_dir, rng):
    """BlockMeasure of M members of one configuration (a single run's time block) given
    psi(0) once as (N, 1), H(0)'s states as a broadcast view and the same config object M
    times (its absorbing layers computed once) measures the same bits as the block given
    every member's arrays in full and M equal but distinct configs."""
    from tdse.model.observables import BlockMeasure
    cfg = _field_absorber(_moving(inputs_dir, 3), inputs_dir)
    n, K, M = cfg.grid.n, 3, 6
    x = np.linspace(cfg.grid.x_min, cfg.grid.x_max, n, endpoint=False)
    phi0 = rng.standard_normal((K, n))
    psi0 = rng.standard_normal(n) + 1j * rng.standard_normal(n)
    X = rng.standard_normal((n, M)) + 1j * rng.standard_normal((n, M))
    times = rng.uniform(0.0, 2.0, M)
    full = BlockMeasure([dataclasses.replace(cfg) for _ in range(M)], x,
                        np.repeat(phi0[None], M, 0), np.repeat(psi0[:, None], M, 1))
    once = BlockMeasure([cfg] * M, x, np.broadcast_to(phi0[None], (M, K, n)), psi0[:, None])
    assert full.shared and once.shared and once.psi0.shape == (n, M)
    assert np.array_equal(once.layers, full.layers) and once.layers.any()
    a, b = full.raw(None, X, times=times), once.raw(None, X, times=times)
    for k in ("sums", "amps"):
        assert np.array_equal(a[k], b[k]), k


@pytest.mark.parametrize("own_states", [False, True])
def test_block_sums_at_their_own_times_equal_a_column_at_a_time(own_states, inputs_dir, rng):
    """BlockMeasure.raw on NumPy with each column at its own time: the nine sums equal those
    of a one-column block at that time (potential, gradient, field and centres per column,
    the centres' ramp under way: h2plus_moving_ramped), the norm near the walls equals
    edge_norm's, ``also`` is also @ X; members with their own eigenstates (``own_states``)
    get their own amplitudes."""
    from tdse.model.observables import BlockMeasure, edge_norm
    ramped = cfgmod.load(os.path.join(inputs_dir, "h2plus_moving_ramped.toml"))
    assert any(c.ramp > 0 for c in ramped.potential.centres)
    cfg = _field_absorber(_moving(inputs_dir, 5), inputs_dir)
    cfg = dataclasses.replace(cfg, potential=dataclasses.replace(
        ramped.potential, field=cfg.potential.field))
    x = np.linspace(cfg.grid.x_min, cfg.grid.x_max, cfg.grid.n, endpoint=False)
    K, M = 3, 5
    phi0 = rng.standard_normal((K, cfg.grid.n))
    psi0 = rng.standard_normal(cfg.grid.n) + 1j * rng.standard_normal(cfg.grid.n)
    X = rng.standard_normal((cfg.grid.n, M)) + 1j * rng.standard_normal((cfg.grid.n, M))
    ramp = max(c.ramp for c in cfg.potential.centres)
    times = rng.uniform(0.0, ramp, M)                     # inside the ramp
    phis = rng.standard_normal((M, K, cfg.grid.n)) if own_states else np.repeat(phi0[None], M, 0)
    many = BlockMeasure([cfg] * M, x, phis, np.repeat(psi0[:, None], M, 1))
    assert many.shared == (not own_states)
    also = rng.standard_normal((2, cfg.grid.n))
    got = many.raw(None, X, also=also, times=times)
    assert got["t"] is None and np.allclose(got["also"], also @ X, rtol=1e-14, atol=1e-12)
    for b, t in enumerate(times):
        one = BlockMeasure([cfg], x, phis[b][None], psi0[:, None])
        ref = one.raw(t, X[:, b:b + 1])
        assert ref["t"] == t
        assert np.isclose(got["sums"][8, b], edge_norm(X[:, b], 1.0), rtol=1e-14, atol=0)
        # the same terms summed in another order (a block's FFT and products): to 1e-12 of
        # the largest sum (sums of N ~ 1 terms cancel down to ~1 in Im <psi0|psi>)
        r = ref["sums"][:, 0]
        assert np.abs(got["sums"][:, b] - r).max() <= 1e-12 * np.abs(r).max()
        a = ref["amps"][:, 0]
        g = got["amps"][b] if own_states else got["amps"][:, b]     # (B, K) or (K, B)
        assert np.abs(g - a).max() <= 1e-12 * np.abs(a).max()
        assert 0 < r[1] < 0.5 * r[0]          # the layers hold part of the sum, not all
    assert np.ptp(got["sums"][3]) > 0        # the gradient sums differ between the times


def _files_equal(a, b):
    for k, v in a.items():
        if k == "attrs":
            continue
        w = b[k]
        assert np.asarray(v).shape == np.asarray(w).shape, k
        assert np.array_equal(np.asarray(v), np.asarray(w), equal_nan=True), k


@pytest.mark.parametrize("time_error", ["none", "companion"])
def test_held_snapshots_make_the_same_file(time_error, tmp_path, inputs_dir, monkeypatch):
    """flush_seconds = 1e9 (every snapshot held to the end) and 0 (each at once) write the
    same file, bit for bit in every dataset, with the resume slot of the last snapshot
    (companion's psi: an even and an odd number held)."""
    cfg = _moving(inputs_dir, 3, **{"output.every": 5, "propagator.time_error": time_error})
    files, writes = {}, {}
    orig = SnapshotWriter.write

    def count(self, final=False):
        writes[self.flush_seconds] = writes.get(self.flush_seconds, 0) + bool(self._held)
        orig(self, final)
    monkeypatch.setattr(SnapshotWriter, "write", count)
    for fs in (0.0, 3600.0, 1e9):
        c = cfg.with_value("output.flush_seconds", fs)
        files[fs] = read(run(c, str(tmp_path / str(fs)), backend="numpy").path)
    _files_equal(files[0.0], files[1e9])
    _files_equal(files[0.0], files[3600.0])
    assert writes[0.0] == files[0.0]["attrs"]["snapshots_complete"] == 13
    assert writes[1e9] == writes[3600.0] == 2   # the first snapshot at once, the rest at the close
    if time_error == "companion":     # the slot of the last snapshot holds its companion
        import h5py
        from tdse.run.snapshots import resume_name
        slots = []
        for fs in (0.0, 1e9):
            with h5py.File(os.path.join(str(tmp_path / str(fs)), f"{cfg.name}.h5"), "r") as f:
                slots.append(f[resume_name("companion", 13)][...])
        assert np.array_equal(slots[0], slots[1]) and np.abs(slots[0]).max() > 0


@pytest.mark.parametrize("held", [3, 4])
def test_an_even_block_writes_the_slot_before_first(held, tmp_path, inputs_dir, monkeypatch):
    """A block whose new count has the parity of the file's last whole snapshot: the
    snapshot before it goes first into the other slot and is flushed (so the slot the file
    resumes from is never the one being written); an odd block writes one slot."""
    cfg = _moving(inputs_dir, 3, **{"output.every": 5, "propagator.time_error": "companion",
                                    "output.flush_seconds": 1e9})
    seen = []
    orig = SnapshotWriter._flush

    def flush(self):
        seen.append(int(self.f.attrs["snapshots_complete"]))
        orig(self)
    plan = tdse.prepare(cfg, backend="numpy", check_resolution=False)
    path = tmp_path / "f.h5"
    from tdse.model.potential import total
    w = SnapshotWriter(path, config=cfg, x=plan.x, v0=total(cfg.potential, plan.x, 0.0),
                       energies=plan.energies[:4], phi=plan.states[:4], attrs={})
    monkeypatch.setattr(SnapshotWriter, "_flush", flush)
    snaps = observers.Snapshots(plan, w)
    from tdse.run.timeerror import CompanionEstimate
    est = CompanionEstimate(plan, w, snaps, None)
    evolve(plan, plan.psi0.copy(), [est, snaps], stop=5 * held)
    assert w.count == 1 and len(w._held) == held     # the first written, the rest held
    seen.clear()
    w.write()
    assert seen == ([1 + held - 1, 1 + held] if (held % 2 == 0) else [1 + held]), seen
    w.close(False)
    st = resume_state(str(path))
    assert st["count"] == 1 + held and st["step"] == 5 * held


@pytest.mark.parametrize("stencil, n, warm, offload", [(3, None, False, "off"), (3, None, True, "off"),
                                                      ("dvr", 600, False, "off"), (5, None, True, "on"),
                                                      (5, None, True, "off")])
def test_an_interrupt_writes_the_held_snapshots(stencil, n, warm, offload, tmp_path, inputs_dir,
                                                monkeypatch):
    """KeyboardInterrupt at step 23 with every snapshot held: the file is closed valid with
    the snapshots up to step 20 (none lost), and resuming it gives the uninterrupted file,
    bit for bit -- with H(t)'s 3-point pairs by windows (``warm``: states.WARM_MIN_N = 0,
    the default) and each from scratch, and with the DVR's Davidson pairs beyond DVR_DENSE_MAX (the
    resumed run's first call has no earlier call to start from: each starts from its
    anchor's pairs); ``offload``: the rows measured by the observables' worker process
    (run.observer_process = "on": the interrupted run's rows up to the interrupt written)."""
    from tdse.model import states
    from tdse.run.interrupts import Interrupted
    if stencil == 3:                          # by windows, or each call from scratch
        monkeypatch.setattr(states, "WARM_MIN_N", 0 if warm else 10 ** 9)
    kw = {} if n is None else {"n": n}
    cfg = _moving(inputs_dir, stencil, **kw, **{"output.every": 5, "output.flush_seconds": 1e9,
                                                "run.eigen_workers": "off",   # the loop's pairs
                                                "run.observer_process": offload})
    assert states.Tracker(cfg, 4).iterative == (stencil == "dvr")
    ref = read(run(cfg, str(tmp_path / "ref"), backend="numpy").path)

    class Stop(Observer):
        def after(self, state):
            if state.step == 23:
                raise KeyboardInterrupt

    from tdse.run import driver
    orig = driver.Progress

    class Bar(orig):
        def after(self, state):
            super().after(state)
            Stop().after(state)
    driver.Progress = Bar
    try:
        with pytest.raises(Interrupted) as ei:
            run(cfg, str(tmp_path / "cut"), backend="numpy")
    finally:
        driver.Progress = orig
    part = str(tmp_path / "cut" / f"{cfg.name}.h5.part")
    assert ei.value.count == 5                    # steps 0, 5, 10, 15, 20
    st = resume_state(part)
    assert st["count"] == 5 and st["step"] == 20
    res = run(cfg, None, backend="numpy", resume=(st, part))
    _files_equal(ref, read(res.path))


def test_flush_seconds_is_checked(inputs_dir):
    """output.flush_seconds: a number >= 0, else one line naming the key."""
    cfg = cfgmod.load(os.path.join(inputs_dir, "tiny.toml"))
    assert cfg.output.flush_seconds == 2.0
    assert cfg.with_value("output.flush_seconds", 0).output.flush_seconds == 0.0
    for bad in (-1, "soon", float("inf")):
        with pytest.raises(cfgmod.ConfigError, match="output.flush_seconds"):
            cfg.with_value("output.flush_seconds", bad)


def _worker_from_the_start(monkeypatch, kill=False):
    """The eigenpairs' worker used from its first call on (a test's short run would end
    while it starts; a real run computes in the loop meanwhile); ``kill``: its process
    killed once it has started.  Returns the list of the workers made."""
    made = []
    start, submit = observers._Ahead.start, observers._Ahead._submit

    def counted(self, steps_times):
        self.task_sizes.append(len(steps_times))
        return submit(self, steps_times)
    monkeypatch.setattr(observers._Ahead, "_submit", counted)

    def waiting(self, s):
        for pool, ready in self.workers:
            ready.result(timeout=120)
        if kill:
            for pool, _ in self.workers:
                for p in list(pool._processes.values()):
                    p.kill()
                    p.join()
        made.append(self)
        self.task_sizes = []
        start(self, s)
    monkeypatch.setattr(observers._Ahead, "start", waiting)
    # every call asked of the workers by the run's own _Ahead (none by prepare's prefetch:
    # test_the_first_windows_asked_for_while_the_run_prepares)
    monkeypatch.setattr(observers, "_prefetch", lambda *a: None)
    return made


@pytest.mark.parametrize("stencil, n, cpus", [(3, 160, 2), (3, 1024, 2), (3, 1024, 16), ("dvr", 600, 2)])
def test_eigenpairs_ahead_in_a_worker_equal_those_in_the_loop(stencil, n, cpus, inputs_dir, monkeypatch):
    """H(t)'s eigenpairs computed ahead (run.eigen_workers = "on": 3-point in a thread from N
    = THREAD_MIN_N on fewer than 4 CPUs, in a worker process below it or on more, the DVR's
    Davidson in a worker process) give
    the populations and energies computed in the loop: bit for bit where a call is one
    LAPACK solve (3-point), to 1e-10 where it is Davidson's iteration (the DVR beyond N =
    512, each call converged to its residual bound; the worker continues the loop's warm
    start); every call after the first answered by the worker, the populations at their
    cadence and at the last step, NaN between."""
    monkeypatch.setattr(observers, "cpu_count", lambda: cpus)
    made = _worker_from_the_start(monkeypatch)
    cfg = _moving(inputs_dir, stencil, n=n, **{"output.populations_every": 4})
    cfg = cfg.with_value("time.t_end", 41 * cfg.time.dt)      # the last step off the cadence
    thread = stencil == 3 and n >= observers.THREAD_MIN_N and cpus < observers.AHEAD_MANY_CPUS
    runs = {}
    for ahead in ("1", "0"):
        runs[ahead] = tdse.simulate(cfg, backend="numpy",
                                    options={"eigen_workers": {"1": "on", "0": "off"}[ahead]}).observables
    assert len(made) == 1 and made[0].from_worker == 11      # steps 4, 8, ..., 40 and 41
    # the 3-point windows (their LAPACK calls without the GIL) in a thread from THREAD_MIN_N,
    # else in a process, as Davidson
    assert (made[0].thread is not None) == thread
    assert isinstance(made[0].workers[0][0], concurrent.futures.ThreadPoolExecutor) == thread
    assert sum(made[0].task_sizes) >= 11
    if stencil == 3:        # ~0.1 ms a call, far below AHEAD_CHUNK_SECONDS: several a task
        assert len(made[0].task_sizes) < 11
    for k in ("populations_ht", "energies_ht", "n_mean"):
        a, b = np.asarray(runs["1"][k]), np.asarray(runs["0"][k])
        if stencil == 3:
            assert np.array_equal(a, b, equal_nan=True), k
        else:
            assert np.array_equal(np.isnan(a), np.isnan(b)), k
            assert np.nanmax(np.abs(a - b)) < 1e-10 * max(1.0, np.nanmax(np.abs(b))), k
    P = np.asarray(runs["1"]["populations_ht"])
    assert np.isfinite(P[[0, 4, 40, 41]]).all() and np.isnan(P[[1, 2, 3, 5, 39]]).all()


@pytest.mark.parametrize("stencil", [3, 5])
def test_the_first_windows_asked_for_while_the_run_prepares(stencil, inputs_dir, monkeypatch):
    """prepare() asks the workers for the pairs of the run's first windows (one a worker,
    after step 0: observers._prefetch); the run's _Ahead takes them over (its run id, every
    due step of them answered by them, none asked again) and the populations are the
    loop's own, bit for bit; run.eigen_workers = "off" asks for nothing."""
    from tdse.model import states
    monkeypatch.setattr(observers, "cpu_count", lambda: 16)        # worker processes
    made = []
    init = observers._Ahead.__init__

    def keep(self, *a, **k):
        init(self, *a, **k)
        made.append(self)
    monkeypatch.setattr(observers._Ahead, "__init__", keep)
    cfg = _moving(inputs_dir, stencil, n=256, **{"output.populations_every": 2,
                                                 "run.eigen_workers": "on"})
    cfg = cfg.with_value("time.t_end", 100 * cfg.time.dt)
    span = states.Tracker(cfg, 4).window_steps
    assert span == 32                               # 16 calls a window: steps 2, ..., 62 first
    plan = tdse.prepare(cfg, backend="numpy", check_resolution=False)
    (key, run_id, tasks), = observers._PREFETCH
    assert [[s for s, _ in g] for _, g, _ in tasks] == [list(range(2, 32, 2)), list(range(32, 64, 2))]
    submitted = []
    real_submit = observers._Ahead._submit
    monkeypatch.setattr(observers._Ahead, "_submit",
                        lambda self, group: submitted.append([s for s, _ in group]) or real_submit(self, group))
    a = run(plan, None).observables
    assert made[0].run == run_id and not observers._PREFETCH
    assert made[0].from_worker == 50                # steps 2, 4, ..., 100
    assert all(s >= 64 for g in submitted for s in g)       # nothing of the first two asked again
    b = tdse.simulate(cfg, backend="numpy", options={"eigen_workers": "off"}).observables
    for k in ("populations_ht", "energies_ht"):
        assert np.array_equal(np.asarray(a[k]), np.asarray(b[k]), equal_nan=True), k
    tdse.prepare(cfg, backend="numpy", check_resolution=False, options={"eigen_workers": "off"})
    assert not observers._PREFETCH


def test_a_killed_worker_leaves_the_eigenpairs_to_the_loop(inputs_dir, monkeypatch):
    """The worker's process killed once started: said once (a RuntimeWarning), the loop
    computes the rest, the run's populations those of a run without the worker."""
    made = _worker_from_the_start(monkeypatch, kill=True)
    cfg = _moving(inputs_dir, 5, **{"output.populations_every": 4})     # a process's solver
    with pytest.warns(RuntimeWarning, match=r"the worker computing H\(t\)'s eigenpairs ahead failed") as rec:
        a = tdse.simulate(cfg, backend="numpy", options={"eigen_workers": "on"}).observables
    assert sum("eigenpairs ahead failed" in str(w.message) for w in rec) == 1
    assert made[0].broken and made[0].from_worker == 0
    b = tdse.simulate(cfg, backend="numpy", options={"eigen_workers": "off"}).observables
    assert np.array_equal(np.asarray(a["populations_ht"]), np.asarray(b["populations_ht"]), equal_nan=True)


def test_the_workers_warnings_reach_the_run(inputs_dir, monkeypatch):
    """What the worker's tracker says (here: Davidson held to 0 iterations, so each call
    falls back to the dense solver) is said in the run, with the worker's time in it (each
    call its own anchor: anchor_calls = 1, passed to the worker with the settings)."""
    from tdse.run.snapshots import MemoryWriter
    _worker_from_the_start(monkeypatch)
    cfg = _moving(inputs_dir, "dvr", n=600, **{"output.populations_every": 4,
                                               "run.eigen_workers": "on"})
    cfg = cfg.with_value("time.t_end", 12 * cfg.time.dt)
    plan = tdse.prepare(cfg, backend="numpy", check_resolution=False)
    w = MemoryWriter(config=cfg, x=plan.x, v0=np.zeros(cfg.grid.n), energies=plan.energies,
                     phi=plan.states, attrs={})
    obs = observers.Observables(plan, w)
    obs.tracker.maxiter = 0
    obs.tracker.anchor_calls = 1
    with pytest.warns(RuntimeWarning, match="did not reach its residual bound") as rec:
        evolve(plan, plan.psi0.copy(), [obs])
    said = [str(r.message) for r in rec if "residual bound" in str(r.message)]
    assert obs.ahead.from_worker == 3 and obs.eigen_calls == 4
    assert any(m.startswith("at t = 0:") or m.startswith("at t = 0 ") for m in said), said   # the loop's
    assert any(m.startswith(f"at t = {4 * cfg.time.dt:.4g} ") for m in said), said        # the worker's


def test_when_the_eigenpairs_go_ahead(monkeypatch):
    """run.eigen_workers: "on" always, "off" never, by default ("auto") when the loop would spend more
    than ahead_min_seconds() on them (AHEAD_MIN_SECONDS, or the larger one of a machine of
    few CPUs), two CPUs are there and a process may be spawned (the tdse command, pytest,
    an interactive session; not a script's unguarded top level)."""
    import sys
    import types

    few, many = observers.AHEAD_MIN_SECONDS_FEW_CPUS, observers.AHEAD_MIN_SECONDS
    assert many < few
    monkeypatch.setattr(observers, "_spawn_safe", lambda: True)
    monkeypatch.setattr(observers, "cpu_count", lambda: observers.AHEAD_MANY_CPUS)
    assert observers.ahead_wanted(0.5 * (few + many)) and not observers.ahead_wanted(0.9 * many)
    monkeypatch.setattr(observers, "cpu_count", lambda: observers.AHEAD_MANY_CPUS - 1)
    assert not observers.ahead_wanted(0.5 * (few + many)) and observers.ahead_wanted(1.1 * few)
    monkeypatch.undo()
    big, small = 10 * observers.AHEAD_MIN_SECONDS_FEW_CPUS, 0.5 * observers.AHEAD_MIN_SECONDS
    assert observers.ahead_wanted(0.0, mode="on")
    assert not observers.ahead_wanted(big, mode="off")
    monkeypatch.setattr(observers, "cpu_count", lambda: 2)
    monkeypatch.setattr(observers, "_spawn_safe", lambda: True)
    assert observers.ahead_wanted(big) and not observers.ahead_wanted(small)
    monkeypatch.setattr(observers, "cpu_count", lambda: 1)
    assert not observers.ahead_wanted(big)
    monkeypatch.setattr(observers, "cpu_count", lambda: 2)
    monkeypatch.setattr(observers, "_spawn_safe", lambda: False)
    assert not observers.ahead_wanted(big)
    monkeypatch.undo()

    def main(spec=None, **kw):
        m = types.SimpleNamespace(__spec__=spec and types.SimpleNamespace(name=spec), **kw)
        monkeypatch.setitem(sys.modules, "__main__", m)
        return observers._spawn_safe()
    assert main("tdse.__main__", __file__="/x/tdse/__main__.py")
    assert main(None, __file__="/venv/bin/tdse")
    assert main(None)                                   # an interactive session
    assert not main(None, __file__="/home/u/study.py")   # a script: it would run again
    assert not main("mypkg.run", __file__="/home/u/mypkg/run.py")


def test_a_failed_write_of_the_last_rows_at_the_close_says_so(tmp_path, inputs_dir, monkeypatch):
    """The rows handed over at the close, after the last snapshot was written, fail to
    write: StorageError naming the cause's first line (cut at 160 characters), the free
    space seen, nothing more needed, the whole snapshots kept."""
    from tdse.run.snapshots import StorageError
    cfg = _moving(inputs_dir, 3)
    plan = tdse.prepare(cfg, backend="numpy", check_resolution=False)
    from tdse.model.potential import total
    w = SnapshotWriter(tmp_path / "f.h5", config=cfg, x=plan.x, v0=total(cfg.potential, plan.x, 0.0),
                       energies=plan.energies[:4], phi=plan.states[:4], attrs={})
    obs = observers.Observables(plan, w)
    snaps = observers.Snapshots(plan, w)
    evolve(plan, plan.psi0.copy(), [obs, snaps], stop=3)      # one snapshot, at step 0
    assert w.count == 1 and not w._held and w.obs_count - w._obs_flushed == 3    # rows 1-3 in memory
    monkeypatch.setattr(SnapshotWriter, "_free", lambda self: 12345)

    def broken(self, ds, i0, values):
        raise OSError("quota " + "q" * 200 + "\nsecond line")
    monkeypatch.setattr(SnapshotWriter, "_write_rows", broken)
    with pytest.raises(StorageError) as e:
        w.close(False)
    assert e.value.count == 1 and e.value.needed == 0 and e.value.free == 12345
    assert ("quota " + "q" * 154) in str(e.value) and "q" * 155 not in str(e.value)


@pytest.mark.parametrize("envelope", ["sin2", "gaussian", "trapezoid"])
def test_a_members_own_time_is_its_field_and_centres_at_that_time(envelope, inputs_dir, rng):
    """BatchPotential.own: member b's field and centres at times[b] equal field(t) and
    centre_array(t) at that t, for each envelope kind (its fwhm and ramp in play)."""
    from tdse.model.potential import BatchPotential
    cfg = _field_absorber(_moving(inputs_dir, 3), inputs_dir)
    d = cfg.potential.field.duration
    f = dataclasses.replace(cfg.potential.field, envelope=envelope, fwhm=d / 4, ramp=d / 4)
    pot = dataclasses.replace(cfg.potential, field=f)
    x = np.linspace(cfg.grid.x_min, cfg.grid.x_max, cfg.grid.n, endpoint=False)
    M = 6
    bp = BatchPotential([pot] * M, x)
    times = np.concatenate([[0.1 * d, 0.5 * d], rng.uniform(0.0, d, M - 2)])  # in the ramp, the middle
    E, X = bp.own(times)
    for b, t in enumerate(times):
        assert E[b] == bp.field(t)[b] and np.array_equal(X[b], bp.centre_array(t)[b])
    assert np.ptp(E) > 1e-6
    # the parameters a device kernel reads for the block (BlockMeasure._pack_own): member b's
    # slot is pack([t_b])'s slot of member b, bit for bit; the field of many rows at once
    # (BlockMeasure.finish) is each row's
    from tdse.model.observables import BlockMeasure
    cfgs = [dataclasses.replace(cfg, potential=pot)] * M
    bm = BlockMeasure(cfgs, x, np.zeros((M, 2, x.size)), np.ones((x.size, M)))
    own, width = bm._pack_own(times), 1 + len(pot.centres)
    head = len(bp.header([1.0]))
    assert np.array_equal(own[:head], bp.header([1.0])) and own.size == head + M * width
    for b, t in enumerate(times):
        one = bp.pack([t], [1.0])
        assert np.array_equal(own[head + b * width:head + (b + 1) * width],
                              one[head + b * width:head + (b + 1) * width])
    rows = bp.field(times.reshape(-1, 1))
    assert rows.shape == (M, M) and all(np.array_equal(rows[i], bp.field(t)) for i, t in enumerate(times))


def _blas_env_of_the_worker():
    from tdse.options import BLAS_ENV
    return {k: os.environ.get(k) for k in BLAS_ENV}


def test_the_worker_process_starts_its_blas_on_one_thread(monkeypatch):
    """The worker is spawned with its BLAS's thread variables at EIGEN_BLAS_THREADS (its
    import does not start a thread per CPU), and this process's own are restored."""
    from tdse.model import states
    monkeypatch.setenv("OMP_NUM_THREADS", "7")
    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    for pool, _ in list(observers._POOLS):          # a fresh worker, spawned here
        observers._drop_pool(pool, wait=True)
    pool, ready = observers.worker_pools(1)[0]
    assert ready.result(timeout=60) is True
    got = pool.submit(_blas_env_of_the_worker).result(timeout=60)
    from tdse.options import BLAS_ENV
    assert got == {k: str(states.EIGEN_BLAS_THREADS) for k in BLAS_ENV}
    assert os.environ["OMP_NUM_THREADS"] == "7" and "OPENBLAS_NUM_THREADS" not in os.environ


def test_the_worker_process_starts_without_cupy():
    """The eigenpairs worker (host solvers only) shuts CuPy out before its imports
    (tdse.run.ahead_child): `import cupy` there fails whether or not CuPy is installed, and
    it is ready with the solvers imported."""
    pool, ready = observers.worker_pools(1)[0]
    assert ready.result(timeout=60) is True
    assert pool.submit(eval, "__import__('sys').modules.get('cupy', 'absent')").result(timeout=60) is None
    assert pool.submit(eval, "'tdse.model.states' in __import__('sys').modules").result(timeout=60)


def test_the_worker_keeps_each_runs_tracker_apart(inputs_dir, monkeypatch):
    """Runs of one process share its worker (e.g. in threads): each run's calls are
    answered by its own tracker (interleaved calls equal each run's calls in a loop of its
    own), a run the worker holds no tracker for is refused, and only the newest
    WORKER_RUNS trackers are kept."""
    from tdse.model import states
    monkeypatch.setattr(observers, "_WORKER", {})
    cfgs = {"a": _moving(inputs_dir, 3, n=160), "b": _moving(inputs_dir, 5, n=600)}
    begins = {r: (c, 4, states.Tracker(c, 4).settings()) for r, c in cfgs.items()}
    alone = {r: states.Tracker(c, 4) for r, c in cfgs.items()}
    for t in (0.0, 0.1, 0.2):
        for r in ("a", "b"):
            [(E, phi)], _, _ = observers._worker_pairs(r, (t,), begins[r] if t == 0.0 else None)
            E1, phi1 = alone[r](t)
            assert np.allclose(E, E1, rtol=0, atol=1e-12) and np.allclose(np.abs(phi), np.abs(phi1), atol=1e-10)
    with pytest.raises(RuntimeError, match="no tracker for run c"):
        observers._worker_pairs("c", (0.0,))
    monkeypatch.setattr(observers, "WORKER_RUNS", 2)
    observers._worker_pairs("c", (0.0,), begins["a"])
    assert list(observers._WORKER["runs"]) == ["b", "c"]


def test_the_worker_tasks_skipped_and_unforeseen_steps(inputs_dir, monkeypatch):
    """_Ahead's bookkeeping with a worker answering in this process (a thread pool running
    the worker's function): several due steps a task where a call is short; steps passed
    without being asked (the loop jumped ahead) dropped, their tasks forgotten; a step off
    the cadence answered by a task of its own; every answer the pairs of H(t) at its time
    (3-point: from its anchor's pairs, so equal bit for bit to a fresh tracker's call at
    that time alone, and to the solver from scratch within the residual bound); nothing
    left after close."""
    import concurrent.futures

    from tdse.model import states
    pool = concurrent.futures.ThreadPoolExecutor(1)
    ready = pool.submit(lambda: True)
    monkeypatch.setattr(observers, "worker_pools", lambda n=1: [(pool, ready)])
    monkeypatch.setattr(observers, "_WORKER", {})
    cfg = _moving(inputs_dir, 3)
    dt = cfg.time.dt
    ahead = observers._Ahead(states.Tracker(cfg, 4), dt, 40, 2)
    ahead.local_calls, ahead.seconds = 1, 1e-5          # a short call: the largest tasks
    sizes = []
    submit = ahead._submit
    ahead._submit = lambda group: sizes.append(len(group)) or submit(group)
    ahead.start(2)
    assert ahead.chunk == observers.AHEAD_CHUNK_MAX
    asked = [2, 4, 20, 22, 40]
    for s in asked:
        E, phi = ahead(s, s * dt)
        E1, phi1 = states.Tracker(cfg, 4)(s * dt)
        assert np.array_equal(E, E1) and np.array_equal(phi, phi1), s
        E2, phi2 = states.eigenstates(cfg, s * dt, 4)
        assert np.abs(E - E2).max() < 1e-9 and np.abs(np.abs(phi) - np.abs(phi2)).max() < 1e-8, s
    assert sizes[0] == 20                     # steps 2, 4, ..., 40: one task
    E, phi = ahead(40, 40 * dt + 0.5 * dt)    # not the step's time: a task of its own
    assert sizes[-1] == 1 and np.array_equal(E, states.Tracker(cfg, 4)(40.5 * dt)[0])
    assert ahead.from_worker == len(asked) + 1 and not ahead.futures and not ahead.waiting
    ahead.close()
    assert not ahead.results
    pool.shutdown()


def test_stateless_calls_are_shared_by_several_workers(inputs_dir, monkeypatch):
    """Where the solver holds the GIL (5-point up to N = 512: the banded solver; beyond,
    and the DVR beyond: Davidson, each call from its anchor's block) the calls go to several
    worker processes, tasks to each, and the populations are those of the loop bit for bit;
    the 3-point windows' to the one thread from THREAD_MIN_N."""
    from tdse.model import states
    monkeypatch.setattr(observers, "cpu_count", lambda: 3)
    monkeypatch.setattr(observers, "AHEAD_WORKERS", 2)
    monkeypatch.setattr(observers, "AHEAD_CHUNK_MAX", 2)          # several tasks in a short run
    assert observers.workers_for(states.Tracker(_moving(inputs_dir, "dvr", n=600), 4)) == 2
    assert not observers.threaded(states.Tracker(_moving(inputs_dir, 5, n=160), 4))
    for cpus in (3, 16):              # the 3-point thread from N = 1024 on fewer than 4 CPUs
        monkeypatch.setattr(observers, "cpu_count", lambda: cpus)
        assert not observers.threaded(states.Tracker(_moving(inputs_dir, 3, n=160), 4))
        assert observers.threaded(states.Tracker(_moving(inputs_dir, 3, n=observers.THREAD_MIN_N), 4)) \
            == (cpus < observers.AHEAD_MANY_CPUS)
    monkeypatch.setattr(observers, "cpu_count", lambda: 3)
    made = _worker_from_the_start(monkeypatch)
    sent = []
    submit = observers._Ahead._submit

    def which(self, group):
        f = submit(self, group)
        sent.append(self.worker_of[f])
        return f
    monkeypatch.setattr(observers._Ahead, "_submit", which)
    for i, (st, n) in enumerate(((5, 160), ("dvr", 600))):
        cfg = _moving(inputs_dir, st, n=n, **{"output.populations_every": 2})
        assert states.Tracker(cfg, 4).iterative == (st == "dvr")
        runs = {}
        sent.clear()
        for ahead in ("1", "0"):
            runs[ahead] = tdse.simulate(cfg, backend="numpy",
                                        options={"eigen_workers": {"1": "on", "0": "off"}[ahead]}).observables
        assert len(made) == i + 1 and len(made[i].workers) == 2 and made[i].from_worker == 30
        assert set(sent) == {0, 1}
        for k in ("populations_ht", "energies_ht"):
            assert np.array_equal(np.asarray(runs["1"][k]), np.asarray(runs["0"][k]), equal_nan=True), (st, k)


def test_rows_by_blocks_and_one_at_a_time_reach_the_file_in_order(tmp_path, inputs_dir, rng):
    """The writer's two ways in for observation rows (``observe``: a row; ``observe_block``:
    rows as columns, what a measured block hands over), interleaved: the file and the
    in-memory writer hold every row in the order given, with the values given."""
    from tdse.model.potential import total
    from tdse.run.snapshots import MemoryWriter
    cfg = _moving(inputs_dir, 3)
    plan = tdse.prepare(cfg, backend="numpy", check_resolution=False)
    K = cfg.output.populations
    kw = dict(config=cfg, x=plan.x, v0=total(cfg.potential, plan.x, 0.0),
              energies=plan.energies[:K], phi=plan.states[:K], attrs={})
    w, m = SnapshotWriter(tmp_path / "f.h5", **kw), MemoryWriter(**kw)
    names = list(w.obs)
    assert set(names) == set(m.obs)

    def value(name, i):        # row i's value of dataset name, its shape and dtype
        shape, dtype = w.obs[name].shape[1:], w.obs[name].dtype
        v = rng.standard_normal(shape) + (1j * rng.standard_normal(shape) if dtype.kind == "c" else 0)
        return (np.asarray(v).astype(dtype) + i) if dtype.kind != "i" else np.full(shape, i, dtype)
    rows = [{n: value(n, i) for n in names} for i in range(9)]
    for lo, hi in ((0, 1), (1, 4), (4, 5), (5, 6), (6, 9)):
        for writer in (w, m):
            if hi - lo == 1 and lo % 2 == 0:
                writer.observe(**rows[lo])
            else:
                writer.observe_block(hi - lo, **{n: np.stack([r[n] for r in rows[lo:hi]]) for n in names})
    w.append(t=0.0, step=0, psi=plan.psi0, centres=np.zeros(len(cfg.potential.centres)),
             time_error=np.nan, time_error_populations=np.nan)
    w.close(True)
    m.close(True)
    got_file, got_mem = read(str(tmp_path / "f.h5")), m.data()
    for got in (got_file, got_mem):
        assert got["attrs"]["observables_complete"] == 9
        for n in names:
            assert np.array_equal(np.asarray(got[f"observables/{n}"]), np.stack([r[n] for r in rows])), n
    # blocks only, several held at one write (one array a dataset, concatenated)
    w2 = SnapshotWriter(tmp_path / "g.h5", **kw)
    for lo, hi in ((0, 4), (4, 9)):
        w2.observe_block(hi - lo, **{n: np.stack([r[n] for r in rows[lo:hi]]) for n in names})
    w2.append(t=0.0, step=0, psi=plan.psi0, centres=np.zeros(len(cfg.potential.centres)),
              time_error=np.nan, time_error_populations=np.nan)
    w2.close(True)
    got = read(str(tmp_path / "g.h5"))
    assert got["attrs"]["observables_complete"] == 9
    for n in names:
        assert np.array_equal(np.asarray(got[f"observables/{n}"]), np.stack([r[n] for r in rows])), n


def test_the_eigenpairs_thread_stops_its_task_when_the_run_ends(inputs_dir, monkeypatch):
    """The 3-point solver's thread task (observers._thread_pairs) computes the pairs of its
    times in order until the run's stop event is set, then returns what it has (a task under
    way would hold up the process's exit, which waits for its threads); _Ahead.close sets it.
    Its pairs are those of a fresh tracker called at each time alone, bit for bit (a call's
    pairs depend on t alone: its anchor's), and the solver's from scratch to rounding."""
    import threading

    from tdse.model import states
    cfg = _moving(inputs_dir, 3, n=160)
    tracker = states.Tracker(cfg, 4)
    stop = threading.Event()
    times = (0.0, 0.1, 0.2)
    pairs, seconds, said = observers._thread_pairs(tracker, times, stop)
    assert len(pairs) == 3 and seconds > 0 and said == []
    for (E, phi), t in zip(pairs, times):
        E2, phi2 = states.Tracker(cfg, 4)(t)
        assert np.array_equal(E, E2) and np.array_equal(phi, phi2)
    # Tracker.many (the thread's batches): the potentials of several times in one array pass,
    # the field left out as eigenstates() leaves it out -- the same bits, with a field too,
    # from scratch (warm_min above N) and by windows (warm_min=0; times on the populations
    # interval and off it), and in reverse order (no call depends on the one before)
    driven = _field_absorber(cfg, inputs_dir)
    ts = tuple(np.arange(7) * 0.13)
    assert states.WARM_MIN_N == 0
    for warm_min in (10 ** 9, 0):
        back = states.Tracker(driven, 4, warm_min=warm_min)
        rev = {t: back(t) for t in ts[::-1]}
        for (E, phi), t in zip(states.Tracker(driven, 4, warm_min=warm_min).many(ts), ts):
            E2, phi2 = states.Tracker(cfg, 4, warm_min=warm_min)(t)
            assert np.array_equal(E, E2) and np.array_equal(phi, phi2), t
            assert np.array_equal(E, rev[t][0]) and np.array_equal(phi, rev[t][1]), t
            if warm_min:
                E3, phi3 = states.eigenstates(cfg, t, 4)
                assert np.array_equal(E, E3) and np.array_equal(phi, phi3), t
    stop.set()
    assert observers._thread_pairs(tracker, times, stop)[0] == []
    ahead = observers._Ahead(states.Tracker(_moving(inputs_dir, 3, n=observers.THREAD_MIN_N), 4),
                             cfg.time.dt, 40, 4)
    assert ahead.thread is not None and not ahead.stop.is_set()
    ahead.close()
    assert ahead.stop.is_set()


# ------------------------------------------------ the observables in a worker process (#23)
def _file(cfg, path, mode, monkeypatch):
    """The run file of ``cfg`` with run.observer_process = ``mode``, and its rows measured
    by the worker (the file's ``observables_process``)."""
    res = run(cfg.with_value("run.observer_process", mode), str(path), backend="numpy")
    data = read(res.path)
    return data, int(data["attrs"]["observables_process"])


@pytest.mark.parametrize("stencil, n", [(3, 256), (5, 256), ("dvr", 200), ("static", 160)])
def test_observables_in_a_worker_process_equal_those_in_the_loop(stencil, n, tmp_path, inputs_dir,
                                                               monkeypatch):
    """run.observer_process = "on": every row measured by the worker process (through the ring in
    shared memory, a backlog while it starts; the file written every snapshot,
    flush_seconds = 0, so that the loop takes what the worker has measured many times), and
    the file the same as the loop's own rows, bit for bit in every dataset: the worker runs
    the loop's code on one BLAS thread, as the loop does at this N, and H(t)'s pairs depend
    on t alone.  Moving centres (3-, 5-point, DVR: H(t)'s populations every 4 steps and at
    the last step, off the cadence) and static ones."""
    monkeypatch.setattr(observers, "OFFLOAD_RING_BLOCKS", 2)      # a ring that wraps often
    monkeypatch.setattr(observers, "TIME_BLOCK", 16)
    st = 3 if stencil == "static" else stencil
    cfg = _moving(inputs_dir, st, n=n, **{"output.populations_every": 4, "output.every": 7,
                                          "output.flush_seconds": 0.0})
    cfg = cfg.with_value("time.t_end", 203 * cfg.time.dt)
    if stencil == "static":
        cfg = dataclasses.replace(cfg, potential=dataclasses.replace(cfg.potential, centres=tuple(
            dataclasses.replace(c, amplitude=0.0) for c in cfg.potential.centres)))
    a, rows_a = _file(cfg, tmp_path / "worker", "on", monkeypatch)
    b, rows_b = _file(cfg, tmp_path / "loop", "off", monkeypatch)
    assert rows_a == 204 and rows_b == 0
    _files_equal(a, b)
    assert np.isfinite(a["observables/populations_ht"][[0, 4, 200, 203]]).all()
    assert np.isnan(a["observables/populations_ht"][[1, 2, 3, 201, 202]]).all()
    assert a["attrs"]["eigenpairs_calls"] == b["attrs"]["eigenpairs_calls"] == 52


def test_the_ring_is_freed_after_the_run(tmp_path, inputs_dir, monkeypatch):
    """The ring's shared memory is removed at the run's end (and the worker's task has
    ended: its process takes the next run's)."""
    created = []
    init = observers._SharedRows.__init__

    def kept(self, *a, **kw):
        init(self, *a, **kw)
        created.append(self.shm.name)
    monkeypatch.setattr(observers._SharedRows, "__init__", kept)
    cfg = _moving(inputs_dir, 3, n=128)
    for k in range(2):
        _file(cfg, tmp_path / str(k), "on", monkeypatch)
    assert len(created) == 2
    from multiprocessing import shared_memory
    for name in created:
        with pytest.raises(FileNotFoundError):
            shared_memory.SharedMemory(name=name)


def test_a_killed_observables_worker_leaves_the_rows_to_the_loop(tmp_path, inputs_dir, monkeypatch):
    """The worker's process killed once it has begun: said once (a RuntimeWarning), the loop
    measures the rows the worker had not (from the ring and the backlog) and every row
    after; the file the same as the loop's own, bit for bit; the next run spawns a worker."""
    init = observers._SharedRows.__init__

    def killed(self, *a, **kw):
        init(self, *a, **kw)
        import time
        t0 = time.time()
        while not self.ctrl[observers._ALIVE]:
            assert time.time() - t0 < 120
            time.sleep(0.01)
        for p in list(self.pool._processes.values()):
            p.kill()
            p.join()
    monkeypatch.setattr(observers._SharedRows, "__init__", killed)
    cfg = _moving(inputs_dir, 5, n=256, **{"output.populations_every": 4})
    cfg = cfg.with_value("time.t_end", 150 * cfg.time.dt)
    with pytest.warns(RuntimeWarning, match="observables' worker process stopped") as rec:
        a, rows_a = _file(cfg, tmp_path / "killed", "on", monkeypatch)
    assert sum("observables' worker process stopped" in str(w.message) for w in rec) == 1
    monkeypatch.setattr(observers._SharedRows, "__init__", init)
    b, _ = _file(cfg, tmp_path / "loop", "off", monkeypatch)
    _files_equal(a, b)
    c, rows_c = _file(cfg, tmp_path / "again", "on", monkeypatch)     # a fresh worker
    assert rows_c == 151
    _files_equal(c, b)


def test_the_observables_workers_warnings_reach_the_run(inputs_dir, monkeypatch):
    """What the worker's tracker says (Davidson held to 0 iterations beyond the DVR's dense
    N: each call falls back to the dense solver) is said in the run, at its end."""
    from tdse.run.snapshots import MemoryWriter
    init = observers._SharedRows.__init__

    def held(self, plan, K, pool, tracker):
        tracker.maxiter = 0
        init(self, plan, K, pool, tracker)
    monkeypatch.setattr(observers._SharedRows, "__init__", held)
    cfg = _moving(inputs_dir, "dvr", n=600, **{"output.populations_every": 4})
    cfg = cfg.with_value("time.t_end", 12 * cfg.time.dt)
    plan = dataclasses.replace(tdse.prepare(cfg, backend="numpy", check_resolution=False),
                               observer_process=True)
    w = MemoryWriter(config=cfg, x=plan.x, v0=np.zeros(cfg.grid.n), energies=plan.energies,
                     phi=plan.states, attrs={})
    obs = observers.Observables(plan, w)
    with pytest.warns(RuntimeWarning, match="did not reach its residual bound"):
        evolve(plan, plan.psi0.copy(), [obs])
    assert obs.offloaded_rows == 13 and obs.eigen_calls == 4


def test_offload_wanted(inputs_dir, monkeypatch):
    """run.observer_process: "on" wherever it can (the CPU), "off" never, by default where the
    rows and pairs would cost the loop more than OFFLOAD_MIN_SECONDS up to OFFLOAD_MAX_N
    with a CPU spare beside the run's BLAS threads; a typo named in one line."""
    opt = lambda cfg, mode: cfg.with_value("run.observer_process", mode)  # noqa: E731
    from tdse.run import backend as be
    long = _moving(inputs_dir, 3, n=256).with_value("time.t_end", 8000 * 0.02)
    short = _moving(inputs_dir, 3, n=256)
    monkeypatch.setattr(be, "usable_cpus", lambda: 2)
    assert observers.offload_wanted(long, "numpy")
    assert not observers.offload_wanted(short, "numpy")                 # 61 rows
    assert not observers.offload_wanted(long, "cupy")                   # rows on the device
    big = long.with_value("grid.dx", 25.6 / (2 * observers.OFFLOAD_MAX_N))
    assert not observers.offload_wanted(big, "numpy")
    monkeypatch.setattr(be, "usable_cpus", lambda: 1)                   # no CPU spare
    assert not observers.offload_wanted(long, "numpy")
    assert observers.offload_wanted(opt(short, "on"), "numpy")
    assert not observers.offload_wanted(opt(short, "on"), "cupy")
    assert not observers.offload_wanted(opt(long, "off"), "numpy")
    with pytest.raises(cfgmod.ConfigError, match="run.observer_process = 'yes': must be"):
        opt(long, "yes")
    import multiprocessing                        # a daemonic process (a Dask worker's): never
    monkeypatch.setattr(multiprocessing.current_process(), "_config",
                        {**multiprocessing.current_process()._config, "daemon": True})
    for mode in ("on", "auto"):
        assert not observers.offload_wanted(opt(long, mode), "numpy")
    assert not observers._spawn_safe()


def test_a_run_stopped_before_its_loop_leaves_the_worker_free(tmp_path, inputs_dir, monkeypatch):
    """A run interrupted after its observers are made but before its loop (here: while the
    time-error estimate is set up) sends the observables' worker nothing: its process takes
    the next task at once (a task sent with the observers and never stopped had held the
    process's exit: `tdse run` hung after "interrupted by SIGINT during start-up")."""
    from tdse.run import driver
    from tdse.run.interrupts import Interrupted

    def cut(*a, **kw):
        raise KeyboardInterrupt
    monkeypatch.setattr(driver, "_time_error", cut)
    cfg = _moving(inputs_dir, 3, n=128, **{"run.observer_process": "on"})
    with pytest.raises((KeyboardInterrupt, Interrupted)):
        run(cfg, str(tmp_path / "o"), backend="numpy")
    pool, ready = observers.worker_pools(1)[0]
    assert pool.submit(observers._worker_ready).result(timeout=20) is True


def test_no_shared_memory_leaves_the_rows_to_the_loop(tmp_path, inputs_dir, monkeypatch):
    """Where no shared memory can be had (/dev/shm full or absent: an OSError), the run says
    so once and measures its rows itself: the file is the loop's."""
    from multiprocessing import shared_memory

    class NoShm:
        def __init__(self, *a, **kw):
            raise OSError(28, "No space left on device")
    cfg = _moving(inputs_dir, 3, n=128)
    b, _ = _file(cfg, tmp_path / "loop", "off", monkeypatch)
    monkeypatch.setattr(shared_memory, "SharedMemory", NoShm)
    with pytest.warns(RuntimeWarning, match="has no shared memory") as rec:
        a, rows = _file(cfg, tmp_path / "noshm", "on", monkeypatch)
    assert rows == 0 and sum("no shared memory" in str(w.message) for w in rec) == 1
    _files_equal(a, b)


def test_a_broken_pool_at_begin_leaves_the_rows_to_the_loop(tmp_path, inputs_dir, monkeypatch):
    """The worker's pool broken before the run's loop (its process killed between runs): the
    run says so once, measures its rows itself, and the next run spawns a fresh worker."""
    cfg = _moving(inputs_dir, 3, n=128)
    b, _ = _file(cfg, tmp_path / "loop", "off", monkeypatch)
    pool, ready = observers.worker_pools(1)[0]
    ready.result(timeout=60)
    for p in list(pool._processes.values()):
        p.kill()
        p.join()
    import time
    t0 = time.time()
    while not pool._broken and time.time() - t0 < 30:         # the pool notices
        time.sleep(0.05)
    with pytest.warns(RuntimeWarning, match="cannot take the task"):
        a, rows = _file(cfg, tmp_path / "broken", "on", monkeypatch)
    assert rows == 0
    _files_equal(a, b)
    c, rows_c = _file(cfg, tmp_path / "again", "on", monkeypatch)
    assert rows_c == 61
    _files_equal(c, b)


def test_snapshots_in_flight_write_the_same_rows_in_order(inputs_dir, monkeypatch):
    """Deferred snapshots (a GPU's: here the host's psi taken as a device's, its copy a
    pass-through that has "run" for some) are written once their copy has run (those before
    them first) or SNAPSHOTS_IN_FLIGHT later ones have started, never more under way; the
    rows are those written at once, bit for bit and in order; a run that fails mid-way
    writes every snapshot taken."""
    import mgemm.arrays
    from tdse.run.snapshots import MemoryWriter
    cfg = _moving(inputs_dir, 3, **{"output.every": 3})
    plan = tdse.prepare(cfg, backend="numpy", check_resolution=False)
    most = []

    class Count(Observer):
        def __init__(self, snaps):
            self.snaps = snaps

        def after(self, state):
            most.append(len(self.snaps.pending))

    class Boom(Observer):
        def after(self, state):
            if state.step == 40:
                raise RuntimeError("boom")

    made = []

    class HostCopy:           # a device's copy stood in for: the arrays kept as they were;
        def __init__(self, arrays):        # its copy "run" only for some of them (each 4th)
            self.host = {k: np.array(v) for k, v in arrays.items()}
            made.append(self)
            self.ran = len(made) % 4 == 0

        def done(self):
            return self.ran

        def result(self):
            return self.host

    monkeypatch.setattr(mgemm.arrays, "HostCopy", HostCopy)
    monkeypatch.setattr(observers, "SNAPSHOTS_IN_FLIGHT", 5)

    def rows(defer, boom=False):
        monkeypatch.setattr(observers, "DEFER_SNAPSHOTS", defer)
        monkeypatch.setattr(mgemm.arrays, "is_device_array", lambda a: defer)
        w = MemoryWriter(config=cfg, x=plan.x, v0=np.zeros(cfg.grid.n), energies=plan.energies,
                         phi=plan.states, attrs={})
        snaps = observers.Snapshots(plan, w)
        obs = [snaps, Count(snaps)] + ([Boom()] if boom else [])
        if boom:
            with pytest.raises(RuntimeError, match="boom"):
                evolve(plan, plan.psi0.copy(), obs)
        else:
            evolve(plan, plan.psi0.copy(), obs)
        return w.data(), snaps
    now, _ = rows(False)
    later, _ = rows(True)
    assert max(most) == 5 and len(now["snapshots/step"]) == 21
    # at the snapshots whose copy had run the pending ones up to it were written: fewer
    assert min(most[3 * 12 - 1:]) < 4 and any(m < most[i] for i, m in enumerate(most[1:]))
    for k in ("snapshots/step", "snapshots/t", "snapshots/psi", "snapshots/nodes", "snapshots/centres"):
        assert np.array_equal(np.asarray(now[k]), np.asarray(later[k])), k
    cut, snaps = rows(True, boom=True)
    assert list(cut["snapshots/step"]) == list(range(0, 40, 3)) and snaps.last_step == 39
