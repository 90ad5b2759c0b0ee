"""A run's output in blocks (#23 item 3): the observables measured a block of states at a
time where psi lives (the same numbers as a row at a time), and the snapshots held up to
``output.flush_seconds`` and written in blocks (the same file, nothing lost on an
interrupt, a failed write or a resume)."""
from __future__ import annotations

import dataclasses
import os

import numpy as np
import pytest

import tdse
from tdse.model import tracker
from tdse import config as cfgmod
from tdse.run import rows, sinks
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
    monkeypatch.setattr(rows, "TIME_BLOCK", 7)       # several blocks and a partial one
    block = tdse.simulate(cfg, backend="numpy")
    monkeypatch.setattr(rows, "BLOCK_OBSERVABLES", False)
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


@pytest.mark.parametrize("moving", [True, False])
def test_rows_filled_by_the_steps_equal_a_save_point_a_row(moving, inputs_dir, monkeypatch):
    """Rows tapped (rows.Observables.tap: psi copied into the block's slot by the steps,
    a save point only at a row with H(t)'s states, the block's last or the run's last)
    equal those of a save point a row, bit for bit: a moving molecule (populations every
    3, blocks of 7, snapshots every 4) and a static one (atom_hhg's, every row with H(0)'s
    populations); and the taps cut the loop's save points."""
    if moving:
        cfg = _moving(inputs_dir, 3, **{"output.populations_every": 3, "output.every": 4})
    else:
        cfg = cfgmod.load(os.path.join(inputs_dir, "atom_hhg.toml"))
        cfg = cfg.with_value("time.t_end", 61 * cfg.time.dt).with_value("output.every", 4)
    monkeypatch.setattr(rows, "TIME_BLOCK", 7)
    saves = []
    save = rows.Observables.save
    monkeypatch.setattr(rows.Observables, "save", lambda self, st: (saves.append(st.step), save(self, st)))
    tapped = tdse.simulate(cfg, backend="numpy")
    n_tapped, saves[:] = len(saves), []
    monkeypatch.setattr(rows, "TAP_ROWS", False)
    each = tdse.simulate(cfg, backend="numpy")
    assert len(saves) == cfg.time.steps and n_tapped < cfg.time.steps // 2
    assert set(tapped.observables) == set(each.observables)
    for k, ref in each.observables.items():
        got, ref = np.asarray(tapped.observables[k]), np.asarray(ref)
        assert got.shape == ref.shape and np.array_equal(got, ref, equal_nan=got.dtype.kind == "f"), k
    assert len(each.observables["t"]) == cfg.time.steps + 1
    assert np.ptp(each.observables["x_mean" if moving else "acceleration"]) > 1e-6


def test_an_interrupt_while_a_blocks_pairs_are_asked_keeps_them_asked(tmp_path, inputs_dir, monkeypatch):
    """An interrupt while the block's pairs are asked of the look-ahead (rows.
    _BlockRows.resolve, at the block's measure) leaves those rows' pairs to be asked again
    by the run's close: the run stops on the interrupt (not on a row without its states,
    the CI's SIGTERM test once), and every populations row the file holds has them, equal to
    the uninterrupted run's."""
    from tdse.run import eigenpairs
    cfg = _moving(inputs_dir, 3, **{"output.populations_every": 4, "propagator.time_error": "none",
                                    "run.eigen_workers": "off", "output.flush_seconds": 0.0})
    monkeypatch.setattr(rows, "TIME_BLOCK", 16)
    ref = read(run(cfg, str(tmp_path / "ref"), backend="numpy").path)
    call, calls = eigenpairs.Lookahead.__call__, [0]

    def interrupted(self, step, t):
        calls[0] += 1
        if calls[0] == 6:           # (the second block's measure: its first row's pairs)
            raise KeyboardInterrupt
        return call(self, step, t)
    monkeypatch.setattr(eigenpairs.Lookahead, "__call__", interrupted)
    with pytest.raises(BaseException) as got:
        run(cfg, str(tmp_path / "cut"), backend="numpy")
    assert not isinstance(got.value, ValueError), got.value
    cut = read(str(tmp_path / "cut" / (cfg.name + ".h5.part")))
    n = len(cut["observables/step"])
    assert 16 <= n < len(ref["observables/step"])
    pops = np.asarray(cut["observables/populations_ht"])
    assert np.isfinite(pops[::4]).all()
    assert np.array_equal(pops, np.asarray(ref["observables/populations_ht"])[:n], equal_nan=True)


def test_rows_tapped_past_a_failed_step_are_dropped(inputs_dir, monkeypatch):
    """A step that fails in the middle of an advance (the rows up to the next save point
    already reserved for the taps): the rows reach the writer up to the last state the loop
    had, the same as those of a run that went on, and none after it."""
    from tdse.numerics import propagators
    from tdse.run.memory import MemoryWriter
    cfg = _moving(inputs_dir, 3, **{"output.populations_every": 20, "output.every": 10})
    plan = tdse.prepare(cfg, backend="numpy", check_resolution=False)
    monkeypatch.setattr(rows, "TIME_BLOCK", 16)

    def go(fail_at=None):
        w = MemoryWriter(config=cfg, x=plan.x, v0=np.zeros(cfg.grid.n), energies=plan.energies,
                         phi=plan.states, attrs={})
        obs, snaps = rows.Observables(plan, w), sinks.Snapshots(plan, w)
        if fail_at is None:
            evolve(plan, plan.psi0.copy(), [obs, snaps])
        else:
            step = propagators.Launched.step

            def failing(self, X, j):
                if j == fail_at:
                    raise RuntimeError("boom")
                return step(self, X, j)
            monkeypatch.setattr(propagators.Launched, "step", failing)
            with pytest.raises(RuntimeError, match="boom"):
                evolve(plan, plan.psi0.copy(), [obs, snaps])
            monkeypatch.setattr(propagators.Launched, "step", step)
        return w.data()
    full, cut = go(), go(fail_at=25)
    assert list(cut["observables/step"]) == list(range(21))
    for k in cut:
        if k.startswith("observables/"):
            a, b = np.asarray(cut[k]), np.asarray(full[k])[:21]
            assert np.array_equal(a, b, equal_nan=a.dtype.kind == "f"), k


def test_static_centres_populations_by_a_product_a_block_equal_a_row_at_a_time(inputs_dir, monkeypatch):
    """A static molecule (atom_hhg's, its field and absorber, 61 rows in blocks of 7):
    its rows' amplitudes in H(t)'s states are one product for each run of rows with those
    states (rows._BlockRows._amplitudes: up to 7 rows here); the populations equal the row
    at a time's to 1e-12 (populations_every = 3 with moving centres: the test above)."""
    cfg = cfgmod.load(os.path.join(inputs_dir, "atom_hhg.toml"))
    cfg = cfg.with_value("time.t_end", 60 * cfg.time.dt)
    monkeypatch.setattr(rows, "TIME_BLOCK", 7)
    block = tdse.simulate(cfg, backend="numpy")
    monkeypatch.setattr(rows, "BLOCK_OBSERVABLES", False)
    host = tdse.simulate(cfg, backend="numpy")
    for k in ("populations_ht", "n_mean", "energies_ht"):
        got, ref = np.asarray(block.observables[k]), np.asarray(host.observables[k])
        assert np.isfinite(ref).all() and np.abs(got - ref).max() <= 1e-12, k
    P = np.asarray(host.observables["populations_ht"])
    assert P[-1, 0] > 0.5 and np.ptp(P[:, 1]) > 1e-9      # the rows do change


def test_a_rows_amplitudes_in_h_t_states_do_not_depend_on_its_runs_length(inputs_dir, rng):
    """A row's <phi_n(t)|psi> has the same bits whether its run of rows with those states
    (rows._BlockRows._amplitudes, one product a run) is the block or the row alone -- a
    flush or a block's end can leave one row alone, and a matrix-vector product (BLAS's
    gemv) gives it other bits than the same column of a matrix product (gemm)."""
    from tdse.model.observables import Measure
    cfg = cfgmod.load(os.path.join(inputs_dir, "atom_hhg.toml"))
    plan = tdse.prepare(cfg, backend="numpy")
    br = rows._BlockRows(plan, Measure(cfg, plan.x, plan.states[:2], np.asarray(plan.psi0)))
    M, n = br.M, cfg.grid.n
    br.buf[...] = rng.standard_normal((M, n)) + 1j * rng.standard_normal((M, n))
    P = rng.standard_normal((cfg.output.populations, n))         # (real, as a run's are on the CPU)
    br.phis = [P] * M
    whole = br._amplitudes(M)[0]
    for i in (0, 1, M // 2, M - 1):
        br.phis = [None] * i + [P] + [None] * (M - i - 1)
        alone = br._amplitudes(M)[0]
        assert alone.shape == (len(P), 1) and np.array_equal(alone[:, 0], whole[:, i]), i
        br.phis = [None] * i + [P] * (M - i)
        assert np.array_equal(br._amplitudes(M)[0], whole[:, i:]), i


@pytest.mark.parametrize("obs,pops,steps", [(1, 3, 61), (2, 4, 98), (1, 1, 40), (3, 6, 151)])
def test_the_rows_with_states_of_a_block_stay_within_the_gpu_rings_bound(inputs_dir, monkeypatch,
                                                                          obs, pops, steps):
    """rows.states_in_a_block (what a GPU run's ring of H(t)'s states is made for before its
    loop, rows._BlockRows) bounds the rows with H(t)'s states in each block, counted in a
    CPU run's blocks of 7 rows (the same rows and cadence on either backend; the last step
    off the cadence), and is no more than the first and last rows above what a block holds."""
    monkeypatch.setattr(rows, "TIME_BLOCK", 16)
    counts = []
    measure = rows._BlockRows._measure

    def counting(self):
        counts.append(sum(p is not None for p in self.phis[:self.cols]))
        return measure(self)
    monkeypatch.setattr(rows._BlockRows, "_measure", counting)
    cfg = _moving(inputs_dir, 3, **{"output.populations_every": pops, "output.observables_every": obs,
                                    "output.every": obs})
    cfg = cfg.with_value("time.t_end", steps * cfg.time.dt)
    tdse.simulate(cfg, backend="numpy")
    bound = rows.states_in_a_block(16, cfg.output)
    assert counts and max(counts) <= bound and max(counts) >= bound - 2, (counts, bound)


def test_a_taps_rows_with_states_are_those_of_the_cadence():
    """Observables._pops_in (the tapped rows with H(t)'s states, from the cadence) gives
    the rows _pops_at says have them, row by row, over random cadences, spans and last
    steps (observables every e, populations every P not a multiple of e among them)."""
    import random
    import types
    rng = random.Random(7)
    for _ in range(2000):
        e, P = rng.randint(1, 7), rng.randint(1, 40)
        me = types.SimpleNamespace(_pop_every=P, _last=rng.randint(0, 500))
        j0 = rng.randint(-1, 400)
        ks = range((j0 // e + 1) * e, j0 + rng.randint(0, 300), e)
        want = [i for i, k in enumerate(ks) if rows.Observables._pops_at(me, k)]
        assert rows.Observables._pops_in(me, ks) == want, (e, P, me._last, ks)


def test_merged_taps_keep_the_sinks_order_and_lists():
    """loop._taps: one sink's taps as they are; several merged with each step's arrays in
    the sinks' order (the largest copied, the others' steps made anew), no sink's list
    changed."""
    import types
    from tdse.run.loop import _taps
    c = object()
    big = {k: [("obs", k)] for k in range(1, 40)}
    small = {k: [("snap", k)] for k in range(5, 45, 5)}
    cb = {39: [c]}
    sinks_ = [types.SimpleNamespace(tap=lambda j, k, saved, t=t: t) for t in (small, big, cb, None)]
    frozen = {k: list(v) for k, v in big.items()}
    got = _taps(sinks_, [0, 1, 2, 3], 0, 39, [None] * 4)
    for k in range(1, 45):
        want = small.get(k, []) + big.get(k, []) + cb.get(k, [])
        assert got.get(k, []) == want, k
    assert big == frozen and small[5] == [("snap", 5)]
    assert _taps(sinks_, [1, 3], 0, 39, [None] * 4) is big
    assert _taps(sinks_, [3], 0, 39, [None] * 4) is None


def test_graph_tap_slots_are_each_steps_first_free_slot():
    """GraphStep._slots against its definition step by step: a step's rows of a tapped
    block take their block's slot where it is free, the rest (a second row of a block,
    another array, a callable, a step outside the chunk's) wait as late taps, over random
    tap sets (no GPU: the rows' slots given)."""
    import random
    import types
    from tdse.numerics.graphs import TAPS, GraphStep
    rng = random.Random(3)
    blocks = [np.zeros((64, 2), complex) for _ in range(TAPS)]
    for trial in range(300):
        me = types.SimpleNamespace(_slot_ids={id(v): (v, (t, i)) for t, blk in enumerate(blocks)
                                              for i, v in enumerate([blk[i] for i in range(64)])},
                                   _slot_of=lambda row: None)
        rows_ = [v for v, _ in me._slot_ids.values()]
        j = rng.randrange(0, 500)
        e = j + rng.randrange(1, 257)
        others = [np.zeros(2, complex), len]
        taps = {k: [rng.choice(rows_ + others) for _ in range(rng.randrange(1, 4))]
                for k in rng.sample(range(j - 10, e + 20), min(e - j + 30, rng.randrange(0, 80)))}
        flat, late = GraphStep._slots(me, taps, j, e)
        want, want_late = -np.ones((e - j, TAPS)), {}
        for k in range(j + 1, e + 1):
            for row in taps.get(k, ()):
                s = me._slot_ids.get(id(row))
                s = s[1] if s is not None and s[0] is row else None
                if s is not None and want[k - j - 1, s[0]] < 0:
                    want[k - j - 1, s[0]] = s[1]
                else:
                    want_late.setdefault(k, []).append(row)
        assert np.array_equal(flat, want), trial
        assert {k: [id(r) for r in v] for k, v in (late or {}).items()} == \
            {k: [id(r) for r in v] for k, v in want_late.items()}, trial


def _random_block(cfg, K, M, rng):
    """(x, K random states (K, N), psi(0) (N,), a block (N, M) of random complex states, M
    times in [0, 2)) on ``cfg``'s grid."""
    n = cfg.grid.n
    x = np.linspace(cfg.grid.x_min, cfg.grid.x_max, n, endpoint=False)
    psi0 = rng.standard_normal(n) + 1j * rng.standard_normal(n)
    return (x, rng.standard_normal((K, n)), psi0,
            rng.standard_normal((n, M)) + 1j * rng.standard_normal((n, M)), rng.uniform(0.0, 2.0, M))


def test_a_block_of_one_configuration_is_made_from_one_state(inputs_dir, rng):
    """BlockMeasure of M members of one configuration (a single run's time block) given
    psi(0) once as (N, 1), H(0)'s states as a broadcast view and the same config object M
    times (its absorbing layers computed once) measures the same bits as the block given
    every member's arrays in full and M equal but distinct configs."""
    from tdse.model.observables import BlockMeasure
    cfg = _field_absorber(_moving(inputs_dir, 3), inputs_dir)
    n, K, M = cfg.grid.n, 3, 6
    x, phi0, psi0, X, times = _random_block(cfg, K, M, rng)
    full = BlockMeasure([dataclasses.replace(cfg) for _ in range(M)], x,
                        np.repeat(phi0[None], M, 0), np.repeat(psi0[:, None], M, 1))
    once = BlockMeasure([cfg] * M, x, np.broadcast_to(phi0[None], (M, K, n)), psi0[:, None])
    assert full.shared and once.shared and once.psi0.shape == (n, M)
    assert np.array_equal(once.layers, full.layers) and once.layers.any()
    a, b = full.raw(None, X, times=times), once.raw(None, X, times=times)
    for k in ("sums", "amps"):
        assert np.array_equal(a[k], b[k]), k


@pytest.mark.parametrize("stencil", [3, 5, "dvr"])
@pytest.mark.parametrize("moving", [True, False])
def test_a_time_block_by_its_rows_layout(stencil, moving, inputs_dir, rng):
    """A single run's time block comes as the transpose of its (M, N) rows (each state's
    column contiguous) and is measured in that layout (BlockMeasure._host_raw, "F"):
    V and dV/dx in that order equal the (N, B) ones bit for bit (moving or static centres,
    the field's x E(t)); the sums equal the contiguous copy's to 1e-12 of the largest (the
    same terms summed along the columns in another order); and a state's sums and
    amplitudes are the same bits wherever in the block it is (the rows rolled: a resumed
    run's blocks start elsewhere), on an odd N (rows at every alignment), in a block as wide
    as _BlockRows makes one (a multiple of 8; 7 columns gave the DVR's GEMM's edge columns
    other bits in 2 of 400 draws)."""
    from tdse.model.observables import BlockMeasure
    cfg = _field_absorber(_moving(inputs_dir, stencil, n=159), inputs_dir)
    if not moving:
        cfg = dataclasses.replace(cfg, potential=dataclasses.replace(cfg.potential, centres=tuple(
            dataclasses.replace(c, amplitude=0.0) for c in cfg.potential.centres)))
    n, K, M = cfg.grid.n, 3, 8
    x, phi0, psi0, rows, times = _random_block(cfg, K, M, rng)
    rows = np.ascontiguousarray(rows.T)            # (M, N): the rows as _BlockRows holds them
    bm = BlockMeasure([cfg] * M, x, np.broadcast_to(phi0[None], (M, K, n)), psi0[:, None])
    assert bm.potential.moving == moving
    for grad in (True, False):
        (vc, gc), (vf, gf) = (bm.potential.host_fields(times, grad, o) for o in ("C", "F"))
        assert vf.flags.f_contiguous and np.array_equal(vc, vf) and np.abs(vc).min() > 0
        assert (gc is None and gf is None) if not grad else np.array_equal(gc, gf)
    got = bm.raw(None, rows.T, times=times)
    ref = bm.raw(None, np.ascontiguousarray(rows.T), times=times)
    scale = np.abs(ref["sums"]).max(axis=1, keepdims=True)
    assert np.all(np.abs(got["sums"] - ref["sums"]) <= 1e-12 * scale)
    assert np.allclose(got["amps"], ref["amps"], rtol=1e-13, atol=1e-13)
    for k in (1, 3):
        rolled = bm.raw(None, np.roll(rows, k, axis=0).T, times=np.roll(times, k))
        for key in ("sums", "amps"):
            assert np.array_equal(np.roll(got[key], k, axis=1), rolled[key]), (k, key)


@pytest.mark.parametrize("steps", [1, 5, 13, 62, 200])
def test_a_runs_blocks_are_a_multiple_of_8_rows_wide_under_the_cap(steps, inputs_dir):
    """_BlockRows' width: the run's rows rounded up to a multiple of 8, at most the cap
    (TIME_BLOCK): the widths test_a_time_block_by_its_rows_layout holds its bits for."""
    from tdse.model.observables import Measure
    cfg = _moving(inputs_dir, "dvr")
    cfg = cfg.with_value("time.t_end", steps * cfg.time.dt)
    plan = tdse.prepare(cfg, backend="numpy", check_resolution=False)
    M = rows._BlockRows(plan, Measure(cfg, plan.x, plan.states[:2], np.asarray(plan.psi0))).M
    assert M % 8 == 0 and M == min(rows.TIME_BLOCK, -(-(steps + 2) // 8) * 8), (steps, M)


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
    snaps = sinks.Snapshots(plan, w)
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


@pytest.mark.parametrize("stencil, n, warm, ahead", [(3, None, False, "off"), (3, None, True, "on"),
                                                    ("dvr", 600, False, "off"), (5, None, True, "on"),
                                                    (5, None, True, "off")])
def test_an_interrupt_writes_the_held_snapshots(stencil, n, warm, ahead, tmp_path, inputs_dir,
                                                monkeypatch):
    """KeyboardInterrupt at step 23 with every snapshot held: the file is closed valid with
    the snapshots up to step 20 (none lost), and resuming it gives the uninterrupted file,
    bit for bit -- with H(t)'s 3-point pairs by windows (``warm``: states.WARM_MIN_N = 0,
    the default) and each from scratch, and with the DVR's Davidson pairs beyond DVR_DENSE_MAX (the
    resumed run's first call has no earlier call to start from: each starts from its
    anchor's pairs); ``ahead``: the pairs computed ahead by the look-ahead's processes
    (run.eigen_workers = "on") in the runs that are cut and resumed, the reference's in
    the loop."""
    from tdse.model import states
    from tdse.run.interrupts import Interrupted
    if stencil == 3:                          # by windows, or each call from scratch
        monkeypatch.setattr(states, "WARM_MIN_N", 0 if warm else 10 ** 9)
    kw = {} if n is None else {"n": n}
    cfg = _moving(inputs_dir, stencil, **kw, **{"output.every": 5, "output.flush_seconds": 1e9,
                                                "run.eigen_workers": "off"})   # the loop's pairs
    assert tracker.Tracker(cfg, 4).iterative == (stencil == "dvr")
    ref = read(run(cfg, str(tmp_path / "ref"), backend="numpy").path)
    cfg = cfg.with_value("run.eigen_workers", ahead)

    from tdse.run import driver
    orig = driver.Progress

    class Bar(orig):           # the progress bar's sink, cut at step 23
        def next_point(self, step, stop):
            return step + 1

        def save(self, state):
            if state.step == 23:
                raise KeyboardInterrupt
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
    obs = rows.Observables(plan, w)
    snaps = sinks.Snapshots(plan, w)
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


def test_rows_by_blocks_and_one_at_a_time_reach_the_file_in_order(tmp_path, inputs_dir, rng):
    """The writer's two ways in for observation rows (``observe``: a row; ``observe_block``:
    rows as columns, what a measured block hands over), interleaved: the file and the
    in-memory writer hold every row in the order given, with the values given."""
    from tdse.model.potential import total
    from tdse.run.memory import MemoryWriter
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
             time_error=np.nan, time_error_populations=np.nan, steps_taken=-1, step_min=np.nan)
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
              time_error=np.nan, time_error_populations=np.nan, steps_taken=-1, step_min=np.nan)
    w2.close(True)
    got = read(str(tmp_path / "g.h5"))
    assert got["attrs"]["observables_complete"] == 9
    for n in names:
        assert np.array_equal(np.asarray(got[f"observables/{n}"]), np.stack([r[n] for r in rows])), n


def test_a_signal_while_a_pending_snapshots_copy_is_waited_for_leaves_no_gap(inputs_dir, monkeypatch):
    """A SIGTERM's KeyboardInterrupt while a deferred snapshot's copy is waited for (a GPU's
    HostCopy.result, here stood in for) stops the run with every snapshot taken written, in
    order, none missing: the one being written stays pending until the writer holds it
    (Snapshots._finish_one), where dropping it first had left a gap in the file."""
    import mgemm.arrays
    from tdse.run.memory import MemoryWriter
    cfg = _moving(inputs_dir, 3, **{"output.every": 3})
    plan = tdse.prepare(cfg, backend="numpy", check_resolution=False)
    made, cut = [], {"at": None}

    class HostCopy:                       # a device's copy: "run" for none until asked
        def __init__(self, arrays):
            self.host = {k: np.array(v) for k, v in arrays.items()}
            made.append(self)

        def done(self):
            return False

        def result(self):
            if len(made) == 9 and cut["at"] is None:     # once, at the 9th's start
                cut["at"] = self
                raise KeyboardInterrupt("SIGTERM")
            return self.host

    monkeypatch.setattr(mgemm.arrays, "HostCopy", HostCopy)
    monkeypatch.setattr(mgemm.arrays, "is_device_array", lambda a: True)
    monkeypatch.setattr(sinks, "SNAPSHOTS_IN_FLIGHT", 4)
    w = MemoryWriter(config=cfg, x=plan.x, v0=np.zeros(cfg.grid.n), energies=plan.energies,
                     phi=plan.states, attrs={})
    snaps = sinks.Snapshots(plan, w)
    with pytest.raises(BaseException) as ei:       # (a KeyboardInterrupt would end pytest)
        evolve(plan, plan.psi0.copy(), [snaps])
    assert isinstance(ei.value, KeyboardInterrupt) and cut["at"] is not None
    steps = list(w.data()["snapshots/step"])
    assert steps == list(range(0, 3 * len(steps), 3)) and len(steps) == len(made)


# ------------------------------------------------ the observables in a worker process (#23)


def test_snapshots_in_flight_write_the_same_rows_in_order(inputs_dir, monkeypatch):
    """Deferred snapshots (a GPU's: here the host's psi taken as a device's, its copy a
    pass-through that has "run" for some) are written once their copy has run (those before
    them first) or SNAPSHOTS_IN_FLIGHT later ones have started, never more under way; the
    rows are those written at once, bit for bit and in order; a run that fails mid-way
    writes every snapshot taken."""
    import mgemm.arrays
    from tdse.run.memory import MemoryWriter
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
    monkeypatch.setattr(sinks, "SNAPSHOTS_IN_FLIGHT", 5)

    def rows(defer, boom=False):
        monkeypatch.setattr(mgemm.arrays, "is_device_array", lambda a: defer)
        w = MemoryWriter(config=cfg, x=plan.x, v0=np.zeros(cfg.grid.n), energies=plan.energies,
                         phi=plan.states, attrs={})
        snaps = sinks.Snapshots(plan, w)
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


def _started(monkeypatch):
    """Lookaheads made from here on wait for their workers to start, and for the task holding
    a step asked for (a test's short run would end while they start, and outrun their
    windows: a real run computes those calls in the loop meanwhile); returns the list of
    those made, each with ``taken``: the steps the workers answered."""
    from tdse.run import eigenpairs
    made = []
    init, take = eigenpairs.Lookahead.__init__, eigenpairs.Lookahead._take

    def kept(self, *a, **k):
        init(self, *a, **k)
        if self.ready is not None:
            assert self.ready.result(timeout=120)
        self.taken = []
        made.append(self)

    def counted(self, step, t):      # (the task holding the step waited for: a run's loop
        for f, group, _ in list(self.tasks.values()):   # computes it itself meanwhile)
            if step in group:
                f.result(timeout=120)
        out = take(self, step, t)
        if out is not None:
            self.taken.append(step)
        return out
    monkeypatch.setattr(eigenpairs.Lookahead, "__init__", kept)
    monkeypatch.setattr(eigenpairs.Lookahead, "_take", counted)
    return made


@pytest.mark.parametrize("stencil, n", [(3, 160), (3, 1024), (5, 256), ("dvr", 160), ("dvr", 600)])
def test_eigenpairs_ahead_in_the_workers_equal_those_in_the_loop(stencil, n, inputs_dir, monkeypatch):
    """H(t)'s eigenpairs computed ahead by the look-ahead's worker processes
    (run.eigen_workers = "on") give the populations and energies computed in the loop
    ("off"): bit for bit where a call is LAPACK's (3-point, 5-point windows, the DVR's dense
    solver in a group of calls), to 1e-10 where it is Davidson's iteration (the DVR beyond N
    = 512, each call converged to its residual bound); every call answered by the workers
    (step 0's, primed before the run is prepared, and the last step's, off the cadence,
    too), the populations at their cadence and at the last step, NaN between."""
    made = _started(monkeypatch)
    cfg = _moving(inputs_dir, stencil, n=n, **{"output.populations_every": 4})
    cfg = cfg.with_value("time.t_end", 41 * cfg.time.dt)      # the last step off the cadence
    runs = {}
    for mode in ("on", "off"):
        runs[mode] = tdse.simulate(cfg, backend="numpy", options={"eigen_workers": mode}).observables
    assert [m.ready is not None for m in made] == [True, False]
    assert made[0].taken == [*range(0, 41, 4), 41] and made[1].taken == []
    assert made[0].calls == made[1].calls == 12 and made[0].pool is None    # closed
    assert made[0].group == (32 if stencil == "dvr" and n <= 512 else 1)   # (one task: 0..41)
    for k in ("populations_ht", "energies_ht", "n_mean"):
        a, b = np.asarray(runs["on"][k]), np.asarray(runs["off"][k])
        if stencil != "dvr" or n <= 512:
            assert np.array_equal(a, b, equal_nan=True), k
        else:
            assert np.array_equal(np.isnan(a), np.isnan(b)), k
            assert np.nanmax(np.abs(a - b)) < 1e-10 * max(1.0, np.nanmax(np.abs(b))), k
    P = np.asarray(runs["on"]["populations_ht"])
    assert np.isfinite(P[[0, 4, 40, 41]]).all() and np.isnan(P[[1, 2, 3, 5, 39]]).all()


def test_a_blocks_pairs_are_asked_of_the_workers_when_its_rows_are_tapped(inputs_dir, monkeypatch):
    """Rows 16 steps apart, each with populations: a block of TIME_BLOCK rows spans 1008
    steps and is measured at once at its last row.  The rows' tap tells the look-ahead that row's
    step before the steps run (Lookahead.foresee), and every due call up to it is then asked
    of the workers, past DEPTH tasks a worker (the 3-point's tasks span 128 steps: DEPTH
    alone reaches 256-512 steps ahead) -- a block had found ~DEPTH of its pairs ready and the
    loop computed the rest; the run's populations those of a run without workers."""
    from tdse.run import eigenpairs, rows
    made = _started(monkeypatch)
    seen, foresee = [], eigenpairs.Lookahead.foresee

    def spy(self, step):
        foresee(self, step)
        seen.append((step, max((s for t in self.tasks.values() for s in t[1]), default=-1)))
    monkeypatch.setattr(eigenpairs.Lookahead, "foresee", spy)
    cfg = _moving(inputs_dir, 3, n=160, **{"output.observables_every": 16, "output.populations_every": 16})
    cfg = cfg.with_value("time.t_end", 2400 * cfg.time.dt)
    on = tdse.simulate(cfg, backend="numpy", options={"eigen_workers": "on"}).observables
    assert made[0].ready is not None and made[0].workers >= 1
    far = [(k, top) for k, top in seen if k >= 16 * (rows.TIME_BLOCK - 1)]
    assert far and all(top >= k for k, top in far)
    assert far[0][0] > eigenpairs.DEPTH * made[0].workers * eigenpairs.TASK_STEPS
    off = tdse.simulate(cfg, backend="numpy", options={"eigen_workers": "off"}).observables
    assert np.array_equal(np.asarray(on["populations_ht"]), np.asarray(off["populations_ht"]), equal_nan=True)


def test_the_dense_dvr_pairs_every_step_shared_by_one_worker_and_the_loop(inputs_dir, monkeypatch):
    """The DVR's dense solver's pairs every step beside one worker, shared (Lookahead.alternate,
    set here from the start: the test's worker never falls behind): the worker answers two
    calls of every three (steps not a multiple of 3), the loop computes the others, and the
    populations, energies and <n> are those of a run without workers, bit for bit (the same
    LAPACK call on one BLAS thread either side)."""
    from tdse.run import eigenpairs
    made = _started(monkeypatch)
    started = eigenpairs.Lookahead.__init__

    def sharing(self, *a, **k):
        started(self, *a, **k)
        self.alternate = self.shares
    monkeypatch.setattr(eigenpairs.Lookahead, "__init__", sharing)
    monkeypatch.setattr(eigenpairs, "WORKERS", 1)
    cfg = _moving(inputs_dir, "dvr", n=160, **{"output.populations_every": 1})
    cfg = cfg.with_value("time.t_end", 20 * cfg.time.dt)
    runs = {mode: tdse.simulate(cfg, backend="numpy", options={"eigen_workers": mode}).observables
            for mode in ("on", "off")}
    assert made[0].alternate and made[0].taken == [s for s in range(1, 21) if s % 3]
    assert made[1].taken == [] and made[0].calls == made[1].calls == 21
    for k in ("populations_ht", "energies_ht", "n_mean"):
        a, b = np.asarray(runs["on"][k]), np.asarray(runs["off"][k])
        assert np.isfinite(a).all() and np.array_equal(a, b), k


class _StandIn:
    """A task's future as Lookahead._take sees it: running, done or not, its pairs given."""

    def __init__(self, done, pairs):
        self.finished, self.pairs = done, pairs

    def done(self):
        return self.finished

    def running(self):
        return True

    def result(self):
        self.finished = True
        return self.pairs, 0.0, []


def test_a_wait_for_a_one_call_task_under_way_is_counted(inputs_dir):
    """Lookahead._take: the caller's wait for a one-call task under way (a stand-in future:
    not done when asked, running) is counted towards SHARE_AFTER_WAITS, a done one's is
    not; the pairs are the task's."""
    from tdse.run import eigenpairs
    cfg = _moving(inputs_dir, "dvr", n=120, **{"output.populations_every": 1})
    dt, ref = cfg.time.dt, tracker.Tracker(cfg, 4)
    for done, waits in ((True, 0), (False, 1)):
        la = eigenpairs.Lookahead(tracker.Tracker(cfg, 4), dt, 40, 1, ahead=False)
        la.tasks[5] = [_StandIn(done, [ref(5 * dt)]), [5], None]      # (its pairs: none taken yet)
        assert np.array_equal(la._take(5, 5 * dt)[0], ref(5 * dt)[0]) and la.waits == waits
        assert not la.shares and not la.alternate and not la.tasks


def test_a_group_of_calls_under_way_is_not_waited_for_and_ends_the_grouping(inputs_dir):
    """Lookahead._take: a step whose group of the dense solver's calls is under way (a
    stand-in future: not done, running) is left to the caller (None: it computes the call
    alone, not waiting for the whole group); once the workers have served a group, after
    SHARE_AFTER_WAITS such steps the tasks asked from then on are one call each (the first
    group, under way while the loop starts, not counted); a done group's pairs are the task's."""
    from tdse.run import eigenpairs
    cfg = _moving(inputs_dir, "dvr", n=120, **{"output.populations_every": 2})
    dt, ref = cfg.time.dt, tracker.Tracker(cfg, 4)

    def Task(done):
        return _StandIn(done, [ref(2 * dt), ref(4 * dt)])
    la = eigenpairs.Lookahead(tracker.Tracker(cfg, 4), dt, 40, 2, ahead=False)
    la.group = 2
    la.tasks[2] = [Task(False), [2, 4], None]
    assert la._take(2, 2 * dt) is None and la.group == 2 and la.misses == 0 and la.waits == 0
    la.tasks[2][0].finished = True
    assert np.array_equal(la._take(4, 4 * dt)[1], ref(4 * dt)[1]) and not la.tasks and la.served
    for k in range(1, eigenpairs.SHARE_AFTER_WAITS + 1):
        la.tasks[2] = [Task(False), [2, 4], None]
        assert la._take(2, 2 * dt) is None and la.misses == k
        assert la.group == (1 if k == eigenpairs.SHARE_AFTER_WAITS else 2), k


def test_the_lookahead_keeps_a_bounded_depth_and_drops_steps_passed(inputs_dir, monkeypatch):
    """Lookahead: at most DEPTH tasks a worker in flight, in step order (whole windows a
    task for the 3-point tracker, as many as span TASK_STEPS steps; for the DVR's dense
    solver TASK_STEPS / interval calls a task, at most ONE_CALL_DEPTH, one a task at every
    step); a step the caller passes
    without asking is dropped; an unforeseen step (off the cadence) is computed by the
    caller's tracker, the same bits; after close nothing is in flight and the pool is gone."""
    from tdse.run import eigenpairs
    made = _started(monkeypatch)
    monkeypatch.setattr(eigenpairs, "DEPTH", 3)
    monkeypatch.setattr(eigenpairs, "WORKERS", 1)
    cfg = _moving(inputs_dir, "dvr", n=120, **{"output.populations_every": 2})
    dt = cfg.time.dt
    task_steps = eigenpairs.TASK_STEPS
    monkeypatch.setattr(eigenpairs, "TASK_STEPS", 2)     # one-call tasks: 3 x 2 / 2 in flight
    la = eigenpairs.Lookahead(tracker.Tracker(cfg, 4), dt, 40, 2, ahead=True)
    ref = tracker.Tracker(cfg, 4)
    la(0, 0.0)
    assert la.workers == 1 and list(la.tasks) == [2, 4, 6]
    E6, _ = la(6, 6 * dt)                           # 2 and 4 passed: dropped, 6 taken
    assert np.array_equal(E6, ref(6 * dt)[0]) and made[0].taken == [6]
    assert list(la.tasks) == [8, 10, 12]
    E7, _ = la(7, 7 * dt)                           # off the cadence: the caller's own
    assert np.array_equal(E7, ref(7 * dt)[0]) and made[0].taken == [6]
    assert la.calls == 3 and la.seconds > 0
    la.close()
    assert not la.tasks and la.pool is None
    monkeypatch.setattr(eigenpairs, "TASK_STEPS", 8)     # ... 3 x 8 / 2, 8 / 2 a task
    deep = eigenpairs.Lookahead(tracker.Tracker(cfg, 4), dt, 40, 2, ahead=True)
    deep(0, 0.0)
    assert [t[1] for t in deep.tasks.values()] == [[2, 4, 6, 8], [10, 12, 14, 16], [18, 20, 22, 24]]
    for s in (2, 4, 10):
        assert np.array_equal(deep(s, s * dt)[0], ref(s * dt)[0]), s
    assert made[-1] is deep and deep.taken == [2, 4, 10] and deep.group == 4
    deep.close()
    monkeypatch.setattr(eigenpairs, "ONE_CALL_DEPTH", 2)  # ... at most 3 x 2, 2 a task
    capped = eigenpairs.Lookahead(tracker.Tracker(cfg, 4), dt, 40, 2, ahead=True)
    capped(0, 0.0)
    assert [t[1] for t in capped.tasks.values()] == [[2, 4], [6, 8], [10, 12]]
    # a block of rows' pairs foreseen (Observables.tap): asked for up to its last step
    # past DEPTH, none beyond; a step before the last foreseen changes nothing
    capped.foresee(20)
    capped.foresee(6)
    assert [t[1] for t in capped.tasks.values()] == [[2, 4], [6, 8], [10, 12], [14, 16], [18, 20]]
    assert np.array_equal(capped(18, 18 * dt)[0], ref(18 * dt)[0])
    capped.close()
    monkeypatch.setattr(eigenpairs, "TASK_STEPS", task_steps)
    three = tracker.Tracker(_moving(inputs_dir, 3, n=160, **{"output.populations_every": 2}), 4)
    for task_steps in (1, eigenpairs.TASK_STEPS):   # whole windows a task, spanning TASK_STEPS
        monkeypatch.setattr(eigenpairs, "TASK_STEPS", task_steps)
        win = eigenpairs.Lookahead(three, dt, 800, 2, ahead=True)
        win(0, 0.0)
        calls = win.span // 2 * -(-task_steps // win.span)   # a window's calls x windows
        assert [len(t[1]) for t in win.tasks.values()][:2] == [calls - 1, calls]
        assert all(t[1][-1] % win.span == win.span - 2 for t in win.tasks.values())
        win.close()
    # populations every step, the dense solver's calls (the DVR up to DVR_DENSE_MAX), one
    # worker: it takes every call until the caller has waited SHARE_AFTER_WAITS times for
    # one under way, then two calls of every three, the caller the third itself (steps 0, 3,
    # 6, ...) -- the same bits either way; with two workers, every call whatever the waits
    monkeypatch.setattr(eigenpairs, "TASK_STEPS", 6)     # one-call tasks: 3 x 6 in flight
    monkeypatch.setattr(eigenpairs, "ONE_CALL_DEPTH", 32)
    every = eigenpairs.Lookahead(tracker.Tracker(cfg, 4), dt, 40, 1, ahead=True)
    assert every.shares and not every.alternate and not tracker.Tracker(cfg, 4).iterative
    for _ in range(eigenpairs.SHARE_AFTER_WAITS - 1):
        every._waited()
    assert not every.alternate
    every._waited()
    assert every.alternate and every.waits == eigenpairs.SHARE_AFTER_WAITS
    every(0, 0.0)
    assert list(every.tasks) == [s for s in range(1, 40) if s % 3][:18]
    for s in range(1, 8):
        assert np.array_equal(every(s, s * dt)[0], ref(s * dt)[0]), s
    assert made[-1] is every and every.taken == [1, 2, 4, 5, 7]
    every.close()
    monkeypatch.setattr(eigenpairs, "WORKERS", 2)
    from tdse.run import backend as bk
    monkeypatch.setattr(bk, "usable_cpus", lambda: 3)
    two = eigenpairs.Lookahead(tracker.Tracker(cfg, 4), dt, 40, 1, ahead=True)
    for _ in range(eigenpairs.SHARE_AFTER_WAITS):
        two._waited()
    assert two.workers == 2 and not two.shares and not two.alternate
    two(0, 0.0)
    assert list(two.tasks) == list(range(1, 37))              # 3 x 2 x 6
    two.close()
    off = eigenpairs.Lookahead(tracker.Tracker(cfg, 4), dt, 40, 2, ahead=False)
    assert np.array_equal(off(4, 4 * dt)[0], ref(4 * dt)[0]) and off.pool is None and not off.tasks


def test_the_workers_states_come_through_a_file_that_goes_once_read(inputs_dir, tmp_path):
    """A task's states come back as a file in the run's folder (ahead_child.Left; in
    memory, /dev/shm, where there is one), not through the pool's pipe: read by the pool's
    thread as the task is done (the file then removed), the pairs the loop takes are those
    read, the loop's tracker's bit for bit (3-point: LAPACK alone); the folder goes at the
    close; where the file cannot be written, the states come through the pipe."""
    import time

    from tdse.run import ahead_child, eigenpairs
    cfg = _moving(inputs_dir, 3, n=160, **{"output.populations_every": 2})
    dt = cfg.time.dt
    cfg = cfg.with_value("time.t_end", 400 * dt)
    la = eigenpairs.Lookahead(tracker.Tracker(cfg, 4), dt, 400, 2, ahead=True)
    ref = tracker.Tracker(cfg, 4)
    assert la.ready.result(timeout=120)
    folder = la.pool.folder
    assert os.path.isdir(folder) and os.path.basename(folder).startswith("tdse-pairs-")
    if os.path.isdir(eigenpairs.STATES_ROOT):
        assert os.path.dirname(folder) == eigenpairs.STATES_ROOT
    la(0, 0.0)
    (s0, t0), (s1, t1) = list(la.tasks.items())[:2]
    left = [t[0].result(timeout=120)[0] for t in (t0, t1)]
    assert all(isinstance(x, ahead_child.Left) and os.path.dirname(x.path) == folder for x in left)
    end = time.monotonic() + 30                         # (the callbacks: the pool's thread)
    while any(x.pairs is None for x in left) and time.monotonic() < end:
        time.sleep(0.01)
    assert not any(os.path.exists(x.path) for x in left)
    step = t0[1][1]
    E, phi = la(step, step * dt)                        # the states read from the first file
    e, q = ref(step * dt)
    assert np.array_equal(E, e) and np.array_equal(phi, q) and phi is left[0].pairs[1][1]
    la.close()
    assert not os.path.exists(folder)
    # no room for the file (here: no folder): the states through the pipe, the same
    gone = os.path.join(str(tmp_path), "gone")
    out = eigenpairs._pairs((os.getpid(), 77), (cfg, 4, ref.settings()), (2 * dt,), gone)[0]
    assert isinstance(out, list) and np.array_equal(out[0][1], ref(2 * dt)[1])


def test_a_script_without_a_main_guard_runs_once_with_the_workers(tmp_path):
    """A user's script that runs at its top level (no ``if __name__ == "__main__"``) with the
    look-ahead's worker processes: they are started with __main__ out of sight, so the
    script runs once, to its end, exit status 0 -- its second run's workers forked from the
    fork server the first run's close started (which imports tdse's module, not the script)."""
    import subprocess
    import sys
    script = tmp_path / "study.py"
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    script.write_text(
        "print('START')\nimport tdse\n"
        f"cfg = tdse.load_config({os.path.join(root, 'inputs', 'h2plus_moving.toml')!r})\n"
        "cfg = cfg.with_value('time.t_end', 200 * cfg.time.dt).with_value('propagator.method', 'chebyshev')\n"
        "cfg = cfg.with_value('propagator.time_error', 'none').with_value('output.populations_every', 5)\n"
        "for _ in range(2):\n"
        "    res = tdse.simulate(cfg, backend='numpy', options={'eigen_workers': 'on'})\n"
        "    print('RAN', len(res.t))\n")
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300,
                       cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.count("START") == 1 and r.stdout.count("RAN") == 2, r.stdout


def test_when_the_eigenpairs_go_ahead(inputs_dir, monkeypatch):
    """run.eigen_workers: "on" / "off" whatever; "auto" only with moving centres, a CPU spare
    (beside the loop's thread on a GPU, beside the BLAS threads on the CPU) and more of the
    pairs' guessed seconds than AHEAD_MIN_SECONDS (AHEAD_MIN_SECONDS_FEW_CPUS on fewer than
    MANY_CPUS); the same rule before the backend is made (may_want)."""
    from tdse.run import backend as bk
    from tdse.run import eigenpairs as ep
    moving = _moving(inputs_dir, 3)
    static = cfgmod.load(os.path.join(inputs_dir, "h2plus_static.toml"))
    assert not any(c.moving for c in static.potential.centres)
    cpu = lambda threads: bk.Backend("numpy", np, None, threads)    # noqa: E731
    gpu = bk.Backend("cupy", np, (0,), 16)
    few, many = ep.AHEAD_MIN_SECONDS_FEW_CPUS, ep.AHEAD_MIN_SECONDS
    from tdse.options import OPTIONS        # (the option's text states the thresholds)
    text = " ".join(next(o for o in OPTIONS if o.name == "eigen_workers").meaning.split())
    assert f"more than {many:g} s ({few:g} s on fewer than {ep.MANY_CPUS} CPUs)" in text, text
    for cpus, least in ((2, few), (ep.MANY_CPUS, many)):
        monkeypatch.setattr(bk, "usable_cpus", lambda: cpus)
        for guess, want in ((1.1 * least, True), (0.9 * least, False)):
            monkeypatch.setattr(ep, "seconds_guess", lambda c: guess)
            assert ep.lookahead_wanted(moving, cpu(1)) == want
            assert ep.lookahead_wanted(moving, cpu(cpus - 1)) == want
            assert not ep.lookahead_wanted(moving, cpu(cpus))          # no CPU spare
            assert ep.lookahead_wanted(moving, gpu) == want
            assert not ep.lookahead_wanted(static, cpu(1))
            assert ep.lookahead_wanted(moving.with_value("run.eigen_workers", "on"), cpu(cpus))
            assert ep.lookahead_wanted(static.with_value("run.eigen_workers", "on"), cpu(cpus))
            assert not ep.lookahead_wanted(moving.with_value("run.eigen_workers", "off"), gpu)
            monkeypatch.setattr(bk, "gpu_count", lambda: 1)             # auto: a GPU
            assert ep.may_want(moving) == want and ep.may_want(moving, "cupy") == want
            assert ep.may_want(moving, "numpy", threads=1) == want
            assert not ep.may_want(moving, "numpy", threads=cpus) and not ep.may_want(static)
            monkeypatch.setattr(bk, "gpu_count", lambda: 0)             # auto: the CPU
            assert ep.may_want(moving, threads=1) == want
    monkeypatch.setattr(bk, "usable_cpus", lambda: 1)
    monkeypatch.setattr(ep, "seconds_guess", lambda c: 100.0)
    assert not ep.lookahead_wanted(moving, gpu) and not ep.lookahead_wanted(moving, cpu(1))
    # a guess below both thresholds: none, without counting the busy CPUs (~10 ms of /proc samples)
    def counted():
        raise AssertionError("the busy CPUs counted")
    monkeypatch.setattr(bk, "usable_cpus", counted)
    monkeypatch.setattr(ep, "seconds_guess", lambda c: 0.5 * min(few, many))
    assert not ep.lookahead_wanted(moving, cpu(1)) and not ep.lookahead_wanted(moving, gpu)
    monkeypatch.setattr(ep, "seconds_guess", lambda c: 100.0)
    # a task of one call (the DVR's) with populations every step: auto's too, on any count
    # of CPUs (one worker then takes two calls of every three: Lookahead.alternate); "on" on
    from tdse.model.tracker import Tracker
    one = _moving(inputs_dir, "dvr", **{"output.populations_every": 1})
    from tdse.model.tracker import windowed
    for c in (moving, _moving(inputs_dir, 5), one):
        assert windowed(c.grid) == (Tracker(c, 4).window_steps is not None)
    assert windowed(moving.grid) and not windowed(one.grid)
    spaced = one.with_value("output.populations_every", 2)
    every = moving.with_value("output.populations_every", 1)
    for cpus in (2, ep.MANY_CPUS - 1, ep.MANY_CPUS):
        monkeypatch.setattr(bk, "usable_cpus", lambda: cpus)
        assert ep.lookahead_wanted(one, cpu(1)) and ep.lookahead_wanted(one, gpu)
        assert ep.lookahead_wanted(spaced, cpu(1)) and ep.lookahead_wanted(every, cpu(1))
        assert ep.lookahead_wanted(one.with_value("run.eigen_workers", "on"), cpu(1))
        assert not ep.lookahead_wanted(one.with_value("run.eigen_workers", "off"), cpu(1))
    monkeypatch.undo()
    # the guess: 801 calls of the DVR's dense solver at N = 256 (2.5e-8 N^2 s each), of the
    # 3-point windows (their floor, then 4.5e-7 N s)
    dvr = _moving(inputs_dir, "dvr", n=256, **{"output.populations_every": 10})
    dvr = dvr.with_value("time.t_end", 8000 * dvr.time.dt)
    assert ep.seconds_guess(dvr) == pytest.approx(801 * 2.5e-8 * dvr.grid.n ** 2)
    for n, each in ((256, 2.5e-4), (2048, 4.5e-7 * 2048)):
        fd = dvr.with_value("grid.stencil", 3).with_value("grid.dx", dvr.grid.dx * 256 / n)
        assert ep.seconds_guess(fd) == pytest.approx(801 * each)


def test_a_call_whose_task_is_under_way_is_computed_by_the_caller(inputs_dir, monkeypatch):
    """Lookahead: where the windows' task holding a step has not finished, the caller
    computes that call itself -- once the workers have started, alone (Tracker.single: no
    window kept), while they start, its whole window -- the same bits either way, and the
    task stays for its later steps.  A task of one call (the DVR's) under way in a worker
    is waited for, not computed again; one not yet begun is the caller's."""
    import concurrent.futures
    import threading

    from tdse.run import eigenpairs
    cfg = _moving(inputs_dir, 3, n=160, **{"output.populations_every": 2})
    dt = cfg.time.dt
    ref = tracker.Tracker(cfg, 4)
    for started in (False, True):
        la = eigenpairs.Lookahead(tracker.Tracker(cfg, 4), dt, 200, 2, ahead=False)
        la.pool, la.workers, la.ready = object(), 1, concurrent.futures.Future()
        if started:
            la.ready.set_result(True)
        la._fill = lambda step: None              # (no pool to ask)
        pending = concurrent.futures.Future()
        la.tasks[2] = [pending, [2, 4, 6], None]
        E4, _ = la(4, 4 * dt)                        # its task under way: computed here
        assert np.array_equal(E4, ref(4 * dt)[0]) and list(la.tasks) == [2]
        assert (la.tracker._window is None) == started     # alone, or its whole window
        E, phi = ref(6 * dt)
        pending.set_result(([ref(2 * dt), ref(4 * dt), (E + 1, phi)], 0.5, []))
        E6, _ = la(6, 6 * dt)                        # done now: the task's own (marked + 1)
        assert np.array_equal(E6, E + 1) and not la.tasks and la.seconds >= 0.5
        la.pool = None
    dvr = _moving(inputs_dir, "dvr", n=120, **{"output.populations_every": 2})
    la = eigenpairs.Lookahead(tracker.Tracker(dvr, 4), dt, 40, 2, ahead=False)
    la.pool, la.workers, la.ready = object(), 1, concurrent.futures.Future()
    la.ready.set_result(True)
    la._fill = lambda step: None
    running, queued = concurrent.futures.Future(), concurrent.futures.Future()
    assert running.set_running_or_notify_cancel()
    la.tasks[2], la.tasks[4] = [running, [2], None], [queued, [4], None]
    E2, phi2 = tracker.Tracker(dvr, 4)(2 * dt)
    threading.Timer(0.2, running.set_result, [([(E2 + 1, phi2)], 0.1, [])]).start()
    assert np.array_equal(la(2, 2 * dt)[0], E2 + 1)     # waited for: the worker's (marked)
    E4 = la(4, 4 * dt)[0]                               # not begun: the caller's own
    assert np.array_equal(E4, tracker.Tracker(dvr, 4)(4 * dt)[0]) and list(la.tasks) == [4]
    la.pool = None


def test_the_cli_and_simulate_open_the_workers_before_they_prepare(inputs_dir, tmp_path, monkeypatch):
    """The look-ahead's processes start before the run is prepared (their imports beside
    the set-up, not in the loop: tdse.run.eigenpairs.look_ahead), from the CLI and from
    tdse.simulate; the run uses them, and they are closed when it ends, or when the
    preparation refuses (one line, exit 2).  Where the run does not want them, none."""
    from click.testing import CliRunner

    from tdse.config import ConfigError
    from tdse.run import eigenpairs, plan as planmod
    from tdse.ui.cli import main
    opened, closed, at_prepare, refuse = [], [], [], []
    real_init, real_close, real_prepare = eigenpairs.Workers.__init__, eigenpairs.Workers.close, planmod.prepare

    def init(self, most=eigenpairs.WORKERS):
        real_init(self, most)
        opened.append(self)

    def close(self, serve=True):
        closed.append(self)
        real_close(self, serve)

    def prepare(*a, **k):
        at_prepare.append(len(opened) - len(closed))     # the workers open meanwhile
        if refuse:
            raise ConfigError("grid.dx", 0.1, "refused by the test")
        return real_prepare(*a, **k)
    monkeypatch.setattr(eigenpairs.Workers, "__init__", init)
    monkeypatch.setattr(eigenpairs.Workers, "close", close)
    monkeypatch.setattr("tdse.api.prepare", prepare)
    monkeypatch.setattr(planmod, "prepare", prepare)
    monkeypatch.setattr(eigenpairs, "may_want", lambda *a, **k: True)
    made = _started(monkeypatch)
    cfg = _moving(inputs_dir, 3, n=160, **{"output.populations_every": 4})
    tdse.simulate(cfg, backend="numpy")
    assert at_prepare == [1] and len(opened) == 1 and closed == opened
    assert made[-1].taken and made[-1].pool is None       # the run's look-ahead used them
    cli = ["run", os.path.join(inputs_dir, "h2plus_moving.toml"), "--out", str(tmp_path), "--backend",
           "numpy", "--quiet", "--no-plots", "--force", "--set", "grid.stencil=3", "--set", "grid.dx=0.16",
           "--set", "propagator.method=chebyshev", "--set", "time.t_end=1.2",
           "--set", "output.populations_every=4"]
    r = CliRunner().invoke(main, cli)
    assert r.exit_code == 0, r.output
    assert at_prepare == [1, 1] and len(opened) == 2 and closed == opened and made[-1].taken
    refuse.append(True)
    r = CliRunner().invoke(main, cli)
    assert r.exit_code == 2 and "refused by the test" in r.output and len(opened) == 3 and closed == opened
    refuse.clear()
    monkeypatch.setattr(eigenpairs, "may_want", lambda *a, **k: False)
    tdse.simulate(cfg, backend="numpy")
    assert len(opened) == 3 and at_prepare[-1] == 0


def test_the_workers_begin_a_new_runs_windows_before_it_is_prepared(inputs_dir, monkeypatch):
    """Workers.prime (tdse.run.eigenpairs.look_ahead, before the run is prepared): the first
    windows' tasks, from step 0, are queued at once, before the processes have started, and the run's
    look-ahead is that one (adopted: its tasks answer the loop's calls, the populations
    the same bits as computed in the loop); a resumed run's look-ahead does not prime; a
    primed look-ahead for other steps or another molecule is dropped, not adopted; a
    priming that fails leaves the workers without one (the run goes on)."""
    from tdse.run import driver, eigenpairs
    made = _started(monkeypatch)
    monkeypatch.setattr(eigenpairs, "may_want", lambda *a, **k: True)
    cfg = _moving(inputs_dir, 3, n=160, **{"output.populations_every": 4})
    cfg = cfg.with_value("time.t_end", 400 * cfg.time.dt)
    import tdse.api
    queued = []
    real_prepare = tdse.api.prepare

    def prepare(*a, **k):                # what the workers were given before the set-up
        queued.append([t[1] for t in made[0].tasks.values()])
        return real_prepare(*a, **k)
    monkeypatch.setattr(tdse.api, "prepare", prepare)
    on = tdse.simulate(cfg, backend="numpy").observables
    off = tdse.simulate(cfg, backend="numpy", options={"eigen_workers": "off"}).observables
    span = made[0].span // 4                       # a window's calls
    assert len(made) == 2 and queued[0][0][0] == 0 and len(queued[0]) >= 1      # from step 0
    assert made[0].taken[:3] == [0, 4, 8] and made[0].pool is None
    for k in ("populations_ht", "energies_ht"):
        assert np.array_equal(np.asarray(on[k]), np.asarray(off[k]), equal_nan=True), k
    assert span > 1
    with driver.look_ahead(cfg, "numpy", prime=False) as w:
        assert w.primed is None
    with driver.look_ahead(cfg, "numpy") as w:
        assert w.primed is not None and w.primed.tasks
        three = tracker.Tracker(cfg, 4)
        assert w.adopt(three, cfg.time.dt, 200, 4) is None and w.primed is None   # other steps
    with driver.look_ahead(cfg, "numpy") as w:
        other = cfg.with_value("potential.a", cfg.potential.a * 1.5)     # another molecule
        la = w.primed
        assert w.adopt(tracker.Tracker(other, 4), cfg.time.dt, cfg.time.steps, 4) is None
        assert la.pool is None and not la.tasks                                   # dropped
    def broken(self, step, early=False):
        raise RuntimeError("a priming that fails")
    with monkeypatch.context() as m:             # a failed priming: no head start, no failure
        m.setattr(eigenpairs.Lookahead, "_fill", broken)
        with driver.look_ahead(cfg, "numpy") as w:
            assert w is not None and w.primed is None
    with driver.look_ahead(cfg, "numpy") as w:
        mine = tracker.Tracker(cfg, 4)
        la = w.adopt(mine, cfg.time.dt, cfg.time.steps, 4)
        assert la is not None and la.tracker is mine and w.primed is None
        la.close()


def test_the_runs_workers_are_used_whatever_a_second_look_at_the_cpus_says(inputs_dir, monkeypatch):
    """The look-ahead's processes a run opened (its one decision, made before it prepares)
    are the ones its observables use, even where the spare CPUs seen later say no: never
    opened and left idle."""
    from tdse.run import eigenpairs, rows
    made = _started(monkeypatch)
    monkeypatch.setattr(eigenpairs, "may_want", lambda *a, **k: True)
    monkeypatch.setattr(rows, "lookahead_wanted", lambda *a, **k: False)
    cfg = _moving(inputs_dir, 3, n=160, **{"output.populations_every": 4})
    tdse.simulate(cfg, backend="numpy")
    assert len(made) == 1 and made[0].ready is not None and not made[0].own
    assert made[0].taken, "the run's workers answered no call"
    monkeypatch.setattr(eigenpairs, "may_want", lambda *a, **k: False)
    tdse.simulate(cfg, backend="numpy")
    assert made[1].ready is None          # no workers of the run: decided by the sink (no)


def test_the_lookahead_beside_a_gpu_may_take_more_workers(monkeypatch):
    """eigenpairs.workers_most: beside a GPU's loop (its steps ~20 us at N = 8192) up to
    GPU_WORKERS processes, beside the CPU's (whose BLAS threads hold the cores) WORKERS."""
    from tdse.run import backend, eigenpairs
    assert eigenpairs.workers_most("cupy") == eigenpairs.GPU_WORKERS > eigenpairs.WORKERS
    assert eigenpairs.workers_most("numpy") == eigenpairs.WORKERS
    monkeypatch.setattr(backend, "gpu_count", lambda: 0)
    assert eigenpairs.workers_most("auto") == eigenpairs.WORKERS
    monkeypatch.setattr(backend, "gpu_count", lambda: 2)
    assert eigenpairs.workers_most("auto") == eigenpairs.GPU_WORKERS


def test_pending_snapshots_wait_for_their_own_deferred_resume_arrays(inputs_dir, monkeypatch):
    """A GPU's snapshots wait for their copies (Snapshots.write's pending queue); a resume
    array that is deferred (the local estimate's e on a GPU's split carrier, DeferredE) holds
    its snapshot back until it is ready, or is made when the snapshot must be written; each
    snapshot keeps the value set for it, not a later snapshot's (the sink's resume_extras is
    set again for each).  Device arrays and their copies faked on the CPU."""
    import mgemm.arrays
    from tdse.run.loop import State

    class Dev(np.ndarray):
        pass

    class Copy:                              # a HostCopy whose copies have run
        def __init__(self, arrays):
            self.host = {k: np.array(v) for k, v in arrays.items()}

        def done(self):
            return True

        def result(self):
            return self.host

    class Deferred:
        def __init__(self, value):
            self.value, self.is_ready, self.made = value, False, False

        def ready(self):
            return self.is_ready

        def result(self):
            self.made = not self.is_ready
            return self.value

    class Writer:
        def __init__(self):
            self.rows, self.appended = [], 0

        def append(self, state=None, **row):
            self.rows.append((row["step"], state))
            self.appended += 1

        def set_attrs(self, **attrs):
            pass

    monkeypatch.setattr(mgemm.arrays, "is_device_array", lambda a: isinstance(a, Dev))
    monkeypatch.setattr(mgemm.arrays, "HostCopy", Copy)
    cfg = _moving(inputs_dir, 3, **{"output.every": 10})
    plan = tdse.prepare(cfg, backend="numpy")
    writer = Writer()
    snaps = sinks.Snapshots(plan, writer)
    rng = np.random.default_rng()
    psi = np.asarray(plan.psi0).view(Dev)
    made = {}
    for step in (10, 20, 30):
        made[step] = Deferred(rng.standard_normal(4))
        snaps.resume_extras["error_vector"] = made[step]
        snaps.resume_extras["counts"] = np.array([step])
        snaps.write(State(step, step * cfg.time.dt, psi))
    assert writer.rows == []                      # each waits for its deferred e
    made[10].is_ready = True
    made[40] = Deferred(rng.standard_normal(4))
    snaps.resume_extras["error_vector"] = made[40]
    snaps.resume_extras["counts"] = np.array([40])
    snaps.write(State(40, 40 * cfg.time.dt, psi))
    assert [s for s, _ in writer.rows] == [10]    # the ready one, in order; 20 not yet
    snaps.finish()
    assert [s for s, _ in writer.rows] == [10, 20, 30, 40]
    for step, keep in writer.rows:
        assert np.array_equal(keep["error_vector"], made[step].value)
        assert keep["counts"][0] == step
    assert not made[10].made and made[20].made and made[40].made


def test_a_device_rings_rows_are_written_after_the_next_advance_is_launched(tmp_path, inputs_dir,
                                                                          monkeypatch):
    """A ring whose copy to the host is asynchronous (a GPU's; here HostCopy stood in for on
    the CPU: a copy and an event) is not written at its save point: its rows go to the
    writer from the next advance's tap, after that advance's steps are launched -- no row
    between a ring's save and the next advance -- and the file equals the one written with a
    save point a snapshot, bit for bit."""
    import mgemm.arrays
    from tdse.run import loop, snapshots

    class Copy:                   # an asynchronous copy whose event has run
        def __init__(self, arrays):
            self.host, self.event = {k: np.array(v) for k, v in arrays.items()}, object()

        def done(self):
            return True

        def result(self):
            return self.host
    monkeypatch.setattr(mgemm.arrays, "HostCopy", Copy)
    monkeypatch.setattr(sinks, "SNAPSHOT_RING", 5)
    cfg = _moving(inputs_dir, 3, **{"output.every": 3, "propagator.time_error": "none",
                                    "output.flush_seconds": 1e9})
    log = []
    adv, save, append = loop.advance, sinks.Snapshots.save, snapshots.SnapshotWriter.append
    monkeypatch.setattr(loop, "advance", lambda st, X, j0, j1, **k: (log.append(("advance", j0)),
                                                                    adv(st, X, j0, j1, **k))[1])
    monkeypatch.setattr(sinks.Snapshots, "save", lambda self, state: (
        log.append(("save", state.step) if self.tapping else ("plain", state.step)), save(self, state))[1])
    monkeypatch.setattr(snapshots.SnapshotWriter, "append", lambda self, state=None, **row: (
        log.append(("append", row["step"])), append(self, state=state, **row))[1])
    got = read(run(cfg, str(tmp_path / "tap"), backend="numpy").path)
    ref = read(run(cfg.with_value("output.flush_seconds", 0.0), str(tmp_path / "each"), backend="numpy").path)
    _files_equal(ref, got)
    kinds = [k for k, _ in log]
    n_ring_saves = sum(1 for k, s in log if k == "save")
    assert n_ring_saves >= 3
    for i, (k, step) in enumerate(log):
        if k == "save" and step < cfg.time.steps:
            nxt = kinds.index("advance", i)
            assert "append" not in kinds[i + 1:nxt], (step, log[i:nxt + 1])
    first_ring = next(s for k, s in log if k == "save")     # its rows: written within the next advance
    i = log.index(("save", first_ring))
    assert ("append", first_ring) in log[kinds.index("advance", i):]


@pytest.mark.parametrize("ring", [2, 5, 32])
def test_snapshots_taken_by_the_steps_make_the_same_file(ring, tmp_path, inputs_dir, monkeypatch):
    """A run whose snapshots no other sink adds to (no time error, no t-SURFF) has the steps
    take them into a ring (Snapshots.tap), a save point a ring: the file equals the one
    written with a save point a snapshot (flush_seconds = 0) bit for bit, each snapshot's
    psi equals the loop's psi stopped at its step, and the snapshots' own save points are
    a ring's rows fewer (rings of 2, 5, 32 rows; a span of the whole run)."""
    cfg = _moving(inputs_dir, 3, **{"output.every": 3, "propagator.time_error": "none",
                                    "output.flush_seconds": 1e9})
    monkeypatch.setattr(sinks, "SNAPSHOT_RING", ring)
    saves = []
    orig = sinks.Snapshots.save

    def save(self, state):
        saves.append((self.tapping, state.step))
        orig(self, state)
    monkeypatch.setattr(sinks.Snapshots, "save", save)
    got = read(run(cfg, str(tmp_path / "tap"), backend="numpy").path)
    tapped = [s for t, s in saves if t]
    ref = read(run(cfg.with_value("output.flush_seconds", 0.0), str(tmp_path / "each"), backend="numpy").path)
    assert tapped and len(saves) == len(tapped) + cfg.time.steps // 3     # (the second run's)
    _files_equal(ref, got)
    steps = list(np.asarray(got["snapshots/step"]))
    assert steps == list(range(0, cfg.time.steps + 1, 3)) + ([cfg.time.steps] if cfg.time.steps % 3 else [])
    # (the first snapshot after step 0 saved, before a pace; then a save a ring)
    assert len(tapped) <= 2 + (len(steps) - 2) // ring < len(steps) - 1
    plan = tdse.prepare(cfg, backend="numpy")
    for i in (1, len(steps) // 2, len(steps) - 2):
        psi = evolve(plan, plan.psi0, stop=steps[i]).psi
        assert np.array_equal(np.asarray(got["snapshots/psi"][i]), psi), steps[i]


def test_populations_rows_are_taken_by_the_steps_their_pairs_asked_at_the_measure(
        tmp_path, inputs_dir, monkeypatch):
    """A moving molecule's rows with populations in H(t)'s states are taken by the steps,
    their pairs asked of the look-ahead when the block is measured
    (rows._BlockRows.reserve_later), in step order with the rows saved between: the file
    equals the run with a save point at each row, bit for bit, with a save point a block."""
    from tdse.run import eigenpairs
    cfg = _moving(inputs_dir, 3, **{"output.populations_every": 4, "propagator.time_error": "none",
                                    "run.eigen_workers": "off"})
    monkeypatch.setattr(rows, "TIME_BLOCK", 7)
    asked, saves = [], []
    call, save = eigenpairs.Lookahead.__call__, rows.Observables.save
    monkeypatch.setattr(eigenpairs.Lookahead, "__call__",
                        lambda self, step, t: (asked.append(step), call(self, step, t))[1])
    monkeypatch.setattr(rows.Observables, "save", lambda self, st: (saves.append(st.step), save(self, st))[1])
    got = read(run(cfg, str(tmp_path / "tap"), backend="numpy").path)
    tapped, n_saves = list(asked), len(saves)
    asked[:], saves[:] = [], []
    monkeypatch.setattr(rows, "TAP_ROWS", False)
    ref = read(run(cfg, str(tmp_path / "ref"), backend="numpy").path)
    _files_equal(ref, got)
    assert np.isfinite(np.asarray(got["observables/populations_ht"])[::4]).all()
    pops = list(range(0, cfg.time.steps + 1, 4)) + ([cfg.time.steps] if cfg.time.steps % 4 else [])
    assert tapped == asked == pops
    assert len(saves) == cfg.time.steps and n_saves <= cfg.time.steps // 6 + 1


def test_the_progress_bar_moves_by_taps_without_save_points(inputs_dir, monkeypatch):
    """The progress bar moves at every 1/PROGRESS_POINTS of the steps by the steps' taps
    (its one save point the loop's last step) where psi is stepped, and at save points of
    its own where U(t) alone is."""
    cfg = _moving(inputs_dir, 3)
    plan = tdse.prepare(cfg, backend="numpy")
    monkeypatch.setattr(sinks, "PROGRESS_POINTS", 20)
    moves, saves = [], []
    orig_to, orig_save = sinks.Progress._to, sinks.Progress.save
    monkeypatch.setattr(sinks.Progress, "_to", lambda self, step, X=None: (moves.append(step), orig_to(self, step)))
    monkeypatch.setattr(sinks.Progress, "save", lambda self, state: (saves.append(state.step), orig_save(self, state)))
    bar = sinks.Progress(plan.steps, disable=True)
    bar.move = 3                                  # (disabled: no tqdm output; moves all the same)
    evolve(plan, plan.psi0, [bar])
    assert saves == [plan.steps] and moves[:-1] == list(range(3, plan.steps + 1, 3))
    moves.clear(), saves.clear()
    bar = sinks.Progress(plan.steps, disable=True)
    bar.move = bar.every = 3
    evolve(plan, None, [bar], U0=np.eye(cfg.grid.n, dtype=complex))
    assert saves == list(range(3, plan.steps + 1, 3)) + ([plan.steps] if plan.steps % 3 else [])
