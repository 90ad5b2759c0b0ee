"""Unequal rows per worker (``shares``): the partition, the schedule under the emulator's
race checks, and the rows a trace suggests (mgemm.balance).

Tolerances as in test_engine.py (the same K products per tile, BLAS rounding only)."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import mgemm
from mgemm.balance import lanes, shares_from_trace
from mgemm.tools.calibrate import calibrate
from mgemm.executors.emulated import EmulatedExecutor, HazardError, run_schedule
from mgemm.schedule import band_rows, plan_gemm

from test_engine import TOL, _ancestors, rand, without_dependency


@settings(max_examples=200, deadline=None)
@given(m=st.integers(1, 3000), tile=st.integers(1, 600), g=st.integers(1, 5), data=st.data())
def test_band_rows_cover_each_row_once(m, tile, g, data):
    w = data.draw(st.lists(st.floats(0, 10), min_size=g, max_size=g).filter(lambda x: sum(x) > 0.01))
    bands_of, band = band_rows(m, tile, g, w)
    # contiguous, in order, every row exactly once
    assert band[0][0] == 0 and band[-1][1] == m
    assert all(a[1] == b[0] for a, b in zip(band, band[1:])) and all(r1 > r0 for r0, r1 in band)
    assert sorted(i for b in bands_of for i in b) == list(range(len(band)))
    # each worker gets its share to within the row granule (8) and the rounding
    rows = [sum(band[i][1] - band[i][0] for i in b) for b in bands_of]
    q = 128 if m >= 512 * g else (8 if m >= 8 * g else 1)
    for r, x in zip(rows, w):
        assert abs(r - m * x / sum(w)) <= q + (m % q) + 1
    # a worker's bands have near-equal heights, about one tile each
    for b in bands_of:
        hs = [band[i][1] - band[i][0] for i in b]
        if len(hs) > 1:
            assert max(hs[:-1]) - min(hs[:-1]) <= q
            assert max(hs) <= 2 * tile + q


def test_band_rows_without_shares_is_the_sources_split():
    bands_of, band = band_rows(1000, 256, 4)
    assert band == [(0, 256), (256, 512), (512, 768), (768, 1000)]
    assert bands_of == [[0], [1], [2], [3]]
    bands_of, band = band_rows(32768, 2048, 4, [1.0, 0.94, 1.0, 1.02])
    rows = [sum(band[i][1] - band[i][0] for i in b) for b in bands_of]
    assert sum(rows) == 32768 and rows[1] < rows[0] < rows[3]
    assert [len(b) for b in bands_of] == [4, 4, 4, 4]
    # every band a whole number of 128-row GEMM blocks
    assert all((r1 - r0) % 128 == 0 for r0, r1 in band)


def test_row_tile_sets_the_a_band_height(rng):
    s = plan_gemm(64, 8, 64, workers=[0, 1], a_dev=0, b_dev=1, c_dev=0, tile=8,
                  beta_zero=True, row_tile=32)
    assert s.bands == [(0, 32), (32, 64)] and s.buffers[("bufA", 1)] == (64, 8)
    A, B = rand(rng, (64, 8), np.float64), rand(rng, (8, 64), np.float64)
    C = np.empty((64, 64))
    run_schedule(s, {("A", 0): A, ("B", 1): B, ("C", 0): C}, 1.0, 0.0,
                 np.random.default_rng(3), np.float64)
    np.testing.assert_allclose(C, A @ B, rtol=1e-12)
    with pytest.raises(ValueError, match="row_tile"):
        plan_gemm(8, 8, 8, workers=[0], a_dev=0, b_dev=0, c_dev=0, tile=4, beta_zero=True,
                  row_tile=0)


@pytest.mark.parametrize("shares", [[1, 2], [1, 0], "x", [1, float("nan"), 1], [0, 0, 0], [1, -1, 1]])
def test_bad_shares(shares):
    with pytest.raises(ValueError, match="shares"):
        plan_gemm(40, 8, 40, workers=[0, 1, 2], a_dev=0, b_dev=1, c_dev=2, tile=8,
                  beta_zero=True, shares=shares)


def test_a_zero_share_is_allowed_and_that_worker_is_idle(rng):
    A, B = rand(rng, (40, 8), np.float64), rand(rng, (8, 30), np.float64)
    out = EmulatedExecutor(seed=1).gemm(A, B, None, 1.0, 0.0, devices=3, tile=8,
                                        placement="three", shares=[1, 0, 1])
    np.testing.assert_allclose(out, A @ B, rtol=1e-12)


@pytest.mark.parametrize("method,dtype", [("native", np.float64), ("native", np.complex64),
                                          ("3m", np.complex128)])
@pytest.mark.parametrize("devices", [2, 3, 4])
@pytest.mark.parametrize("placement", ["one", "three"])
@pytest.mark.parametrize("beta", [0.0, 0.8 - 0.3j])
def test_emulated_with_shares_matches_numpy(rng, method, dtype, devices, placement, beta):
    m, k, n = (int(x) for x in rng.integers(1, 80, 3))
    if np.dtype(dtype).kind == "f":
        beta = beta.real
    A, B, C = rand(rng, (m, k), dtype), rand(rng, (k, n), dtype), rand(rng, (m, n), dtype)
    alpha = 0.7 - 0.2j if np.dtype(dtype).kind == "c" else 0.7
    ref = alpha * (A.astype(np.complex128) @ B) + beta * C
    shares = list(rng.uniform(0.2, 2.0, devices))
    tile = int(rng.choice([3, 8, 16, 32]))
    ex = mgemm.executors.get("emulated")
    ex.row_tile = int(rng.choice([4, 16, 24])) if rng.random() < 0.5 else None
    out = mgemm.gemm(A, B, C.copy(), alpha, beta, devices=devices, tile=tile, placement=placement,
                     executor="emulated", complex_method=method, shares=shares)
    ex.row_tile = None
    assert ex.last_schedule.shares == shares
    scale = np.abs(ref).max() + 1
    assert np.abs(out - ref).max() <= 4 * TOL[dtype] * scale * max(k, 1) ** 0.5


@pytest.mark.parametrize("method", ["native", pytest.param("3m", marks=pytest.mark.slow)])  # 3m: 20 s
def test_removed_dependency_is_caught_with_shares(rng, method):
    """Unequal band heights (tallest band sets the buffer slots): every dependency still
    matters and its removal is still caught."""
    dt = np.float64 if method == "native" else np.complex128
    A, B, C = rand(rng, (60, 16), dt), rand(rng, (16, 40), dt), rand(rng, (60, 40), dt)
    base = plan_gemm(60, 16, 40, workers=[0, 1, 2], a_dev=0, b_dev=1, c_dev=2, tile=8,
                     beta_zero=False, method=method, shares=[0.6, 1.0, 1.4])
    heights = {r1 - r0 for r0, r1 in base.bands}
    assert len(heights) > 1
    caught = 0
    for victim in [op.id for op in base.ops if op.deps]:
        for d in range(len(base.ops[victim].deps)):
            sched = without_dependency(base, victim, d)
            dropped = base.ops[victim].deps[d]
            if dropped in _ancestors(sched, victim):
                continue
            for seed in range(60):
                try:
                    run_schedule(sched, {("A", 0): A, ("B", 1): B, ("C", 2): C.copy()}, 1.0, 0.5,
                                 np.random.default_rng(seed), dt)
                except HazardError:
                    break
            else:
                pytest.fail(f"dropping dependency #{dropped} of {sched.ops[victim]} went unnoticed")
            caught += 1
    assert caught > 10


def _trace(lane_spec):
    """Trace rows: per device (start, end, n ops) evenly spaced compute ops, plus a copy."""
    rows = []
    for dev, (s, e, k) in lane_spec.items():
        step = (e - s) / k
        rows += [dict(dev=dev, stream="compute", kind="gemm", start_ms=s + i * step,
                      end_ms=s + (i + 1) * step) for i in range(k)]
        rows.append(dict(dev=dev, stream="push1", kind="copy", start_ms=0.0, end_ms=e + 50))
    return rows


def test_shares_from_trace_equalises_the_finish_analytically():
    """Worker 1 runs at 0.9 of the others' speed and worker 3 starts 20 ms late.  Rates:
    rows/ms = 8192/1000 (0, 2, 3), 8192/1111.1 (1); the rows returned must make
    s_w + r_w / v_w equal for all, and sum to M."""
    sched = plan_gemm(32768, 64, 64, workers=[0, 1, 2, 3], a_dev=0, b_dev=1, c_dev=2,
                      tile=2048, beta_zero=True)
    tr = _trace({0: (0.0, 1000.0, 64), 1: (0.0, 1000 / 0.9, 64), 2: (0.0, 1000.0, 64),
                 3: (20.0, 1020.0, 64)})
    ln = lanes(tr, [0, 1, 2, 3])
    assert ln[3][:2] == (20.0, 1020.0) and ln[0][2] == pytest.approx(1000.0)
    r = shares_from_trace(tr, sched)
    assert sum(r) == pytest.approx(32768)
    v = [8192 / 1000, 8192 / (1000 / 0.9), 8192 / 1000, 8192 / 1000]
    s = [0, 0, 0, 20]
    finish = [s_ + r_ / v_ for s_, r_, v_ in zip(s, r, v)]
    assert max(finish) - min(finish) < 1e-9
    assert r[1] < r[3] < r[0] == pytest.approx(r[2])
    # the suggested rows, planned: the slow worker gets fewer rows
    bands_of, band = band_rows(32768, 2048, 4, r)
    rows = [sum(band[i][1] - band[i][0] for i in b) for b in bands_of]
    assert rows[1] < rows[3] < rows[0]


def test_calibrate_feeds_each_rounds_shares_to_the_next():
    """Two rounds: equal rows first, then the suggested ones; a worker at 0.8 speed
    ends up with 0.8 of the others' rows (to the 128-row granule once planned)."""
    seen = []

    def run(shares):
        seen.append(shares)
        s = plan_gemm(8192, 64, 64, workers=[0, 1], a_dev=0, b_dev=0, c_dev=0, tile=1024,
                      beta_zero=True, shares=shares)
        r0, r1 = s.rows_per_worker()
        return _trace({0: (0.0, r0 / 8.0, 8), 1: (0.0, r1 / 6.4, 8)}), s

    sh = calibrate(run)
    assert seen[0] is None and seen[1] == pytest.approx([8192 / 1.8, 8192 * 0.8 / 1.8])
    assert sh[1] / sh[0] == pytest.approx(0.8, rel=0.03)


def test_shares_from_trace_needs_every_worker():
    sched = plan_gemm(64, 8, 8, workers=[0, 1], a_dev=0, b_dev=0, c_dev=0, tile=8,
                      beta_zero=True)
    with pytest.raises(ValueError, match="worker 1"):
        shares_from_trace(_trace({0: (0.0, 10.0, 4)}), sched)
