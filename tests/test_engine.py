"""The band engine: the emulated executor against NumPy, and the hazard checker.

Tolerances: results are compared with NumPy's matmul at rtol = 100 u of the dtype
(float32/complex64: 1e-4 absolute-relative on O(1) data with K <= 100; float64: 1e-12):
the band algorithm sums the same K products in the same order per tile, so differences
are only BLAS blocking rounding.
"""
import dataclasses

import numpy as np
import pytest

import mgemm
from mgemm.executors import REGISTRY
from mgemm.executors.emulated import EmulatedExecutor, HazardError, run_schedule
from mgemm.schedule import plan_gemm

TOL = {np.float32: 1e-4, np.complex64: 1e-4, np.float64: 1e-12, np.complex128: 1e-12}


def rand(rng, shape, dtype):
    x = rng.standard_normal(shape)
    if np.issubdtype(dtype, np.complexfloating):
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


SHAPES = [(1, 1, 1), (5, 3, 7), (33, 17, 40), (64, 64, 64), (70, 90, 20)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128])
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("devices", [1, 2, 3, 4])
@pytest.mark.parametrize("placement", ["one", "three"])
def test_emulated_matches_numpy(rng, dtype, shape, devices, placement):
    m, k, n = shape
    A, B, C = rand(rng, (m, k), dtype), rand(rng, (k, n), dtype), rand(rng, (m, n), dtype)
    alpha, beta = (0.7 - 0.2j, 1.3 + 0.5j) if np.iscomplexobj(A) else (0.7, -1.3)
    ref = alpha * (A.astype(np.complex128) @ B) + beta * C
    tile = int(rng.choice([1, 3, 8, 16, 64]))
    ex = EmulatedExecutor(seed=int(rng.integers(2**31)))
    out = ex.gemm(A, B, C.copy(), alpha, beta, devices=devices, tile=tile, placement=placement)
    scale = np.abs(ref).max() + 1
    assert np.abs(out - ref).max() <= TOL[dtype] * scale * max(k, 1) ** 0.5


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("devices", [1, 2, 3, 4])
@pytest.mark.parametrize("placement", ["one", "three"])
@pytest.mark.parametrize("beta", [0.0, 1.3 + 0.5j])
def test_emulated_3m_schedule_matches_numpy(rng, dtype, shape, devices, placement, beta):
    """3m fused into the schedule (split ops, three real GEMMs per tile, combine ops).
    Gauss' product adds O(u) error relative to (|Re A| + |Im A|)(|Re B| + |Im B|), a few
    times the native one on O(1) data: the native tolerance x 4."""
    m, k, n = shape
    A, B, C = rand(rng, (m, k), dtype), rand(rng, (k, n), dtype), rand(rng, (m, n), dtype)
    alpha = 0.7 - 0.2j
    ref = alpha * (A.astype(np.complex128) @ B) + beta * C
    tile = int(rng.choice([1, 3, 8, 16, 64]))
    ex = EmulatedExecutor(seed=int(rng.integers(2**31)))
    out = ex.gemm(A, B, C.copy(), alpha, beta, devices=devices, tile=tile, placement=placement,
                  method="3m")
    assert ex.last_schedule.method == "3m"
    assert out.dtype == dtype
    scale = np.abs(ref).max() + 1
    assert np.abs(out - ref).max() <= 4 * TOL[dtype] * scale * max(k, 1) ** 0.5


def test_3m_schedule_needs_complex(rng):
    A = rand(rng, (4, 4), np.float64)
    with pytest.raises(ValueError, match="complex"):
        EmulatedExecutor(seed=0).gemm(A, A, None, 1.0, 0.0, devices=2, tile=2, method="3m")
    with pytest.raises(ValueError, match="method"):
        plan_gemm(4, 4, 4, workers=[0], a_dev=0, b_dev=0, c_dev=0, tile=2, beta_zero=True,
                  method="5m")


@pytest.mark.parametrize("complex_method", ["native", "4m", "3m"])
@pytest.mark.parametrize("beta", [0.0, 0.5])
def test_public_gemm_emulated_complex_methods(rng, complex_method, beta):
    A, B, C = (rand(rng, s, np.complex128) for s in ((40, 30), (30, 50), (40, 50)))
    ref = (0.3 + 1j) * A @ B + beta * C
    out = mgemm.gemm(A, B, C.copy(), 0.3 + 1j, beta, devices=3, tile=8,
                     complex_method=complex_method, placement="three")
    np.testing.assert_allclose(out, ref, rtol=1e-12, atol=1e-12)


def test_c_none_allocates(rng):
    A, B = rand(rng, (10, 6), np.float64), rand(rng, (6, 12), np.float64)
    out = mgemm.gemm(A, B, devices=2, tile=4)
    np.testing.assert_allclose(out, A @ B, rtol=1e-12)


@pytest.mark.parametrize("method", ["native", "3m"])
@pytest.mark.parametrize("beta", [0.0, 0.5])
def test_both_issue_orders(rng, method, beta):
    """interleave='band' and 'tile' issue the same ops (same streams, same dependencies)
    in another order; both run hazard-free and give the product."""
    dt = np.complex128 if method == "3m" else np.float64
    A, B, C = rand(rng, (40, 20), dt), rand(rng, (20, 44), dt), rand(rng, (40, 44), dt)
    scheds = {}
    for order in ("tile", "band"):
        sched = plan_gemm(40, 20, 44, workers=[0, 1, 2], a_dev=0, b_dev=1, c_dev=2, tile=8,
                          beta_zero=(beta == 0), method=method, interleave=order)
        for seed in range(10):
            Cw = C.copy()
            _run(sched, A, B, Cw, beta, seed)
            np.testing.assert_allclose(Cw, A @ B + beta * C, rtol=1e-12, atol=1e-12)
        scheds[order] = sorted((op.kind, op.dev, op.stream, op.label) for op in sched.ops)
    assert scheds["tile"] == scheds["band"]
    with pytest.raises(ValueError, match="interleave"):
        plan_gemm(4, 4, 4, workers=[0], a_dev=0, b_dev=0, c_dev=0, tile=2, beta_zero=True,
                  interleave="random")


@pytest.mark.parametrize("method, dtype, seeds, plane_copies, batch", [
    ("native", np.float64, 40, "all", True), ("3m", np.complex128, 30, "all", True),
    ("3m", np.complex128, 15, "all", False),
    ("3m", np.complex128, 15, "first", True), ("3m", np.complex128, 15, "none", True)])
def test_many_random_orders(rng, method, dtype, seeds, plane_copies, batch):
    A, B, C = rand(rng, (48, 20), dtype), rand(rng, (20, 44), dtype), rand(rng, (48, 44), dtype)
    ref = A @ B + 0.5 * C
    for seed in range(seeds):
        ex = EmulatedExecutor(seed=seed)
        ex.plane_copies = plane_copies
        ex.batch_planes = batch
        out = ex.gemm(A, B, C.copy(), 1.0, 0.5, devices=4, tile=8, placement="three",
                      method=method)
        np.testing.assert_allclose(out, ref, rtol=1e-12, atol=1e-12)


def _ancestors(sched, oid):
    prev, last = {}, {}
    for op in sched.ops:
        q = (op.dev, op.stream)
        prev[op.id] = last.get(q)
        last[q] = op.id
    seen, todo = set(), [oid]
    while todo:
        o = todo.pop()
        for p in (list(sched.ops[o].deps) + list(sched.ops[o].after)
                  + ([prev[o]] if prev[o] is not None else [])):
            if p not in seen:
                seen.add(p)
                todo.append(p)
    return seen


def without_dependency(sched, victim, d):
    """``sched`` with dependency ``d`` of op ``victim`` dropped; the other ops shared (the
    emulator only reads them: a deep copy per case was 58 % of these tests' time)."""
    ops = list(sched.ops)
    op = ops[victim]
    assert op.id == victim
    ops[victim] = dataclasses.replace(op, deps=op.deps[:d] + op.deps[d + 1:])
    return dataclasses.replace(sched, ops=ops)


def _run(sched, A, B, C, beta, seed):
    arrays = {("A", sched.a_dev): A, ("B", sched.b_dev): B, ("C", sched.c_dev): C}
    run_schedule(sched, arrays, 1.0, beta, np.random.default_rng(seed), A.dtype)


@pytest.mark.parametrize("method, plane_copies", [  # the 3m cases 5-14 s each: CI's second stage
    ("native", "first"), pytest.param("3m", "first", marks=pytest.mark.slow),
    pytest.param("3m", "all", marks=pytest.mark.slow), pytest.param("3m", "none", marks=pytest.mark.slow)])
@pytest.mark.parametrize("beta", [0.0, 0.5])
def test_removed_dependency_is_caught(rng, beta, method, plane_copies):
    dt = np.float64 if method == "native" else np.complex128
    A, B = rand(rng, (48, 24), dt), rand(rng, (24, 48), dt)
    base = plan_gemm(48, 24, 48, workers=[0, 1, 2], a_dev=0, b_dev=1, c_dev=2, tile=8,
                     beta_zero=(beta == 0), method=method, plane_copies=plane_copies)
    with_deps = [op.id for op in base.ops if op.deps]
    caught = 0
    for victim in with_deps:
        for d in range(len(base.ops[victim].deps)):
            sched = without_dependency(base, victim, d)
            dropped = base.ops[victim].deps[d]
            # a dependency still implied by stream order and the other edges is not a bug
            if dropped in _ancestors(sched, victim):
                continue
            found = False
            for seed in range(60):
                try:
                    _run(sched, A, B, rand(rng, (48, 48), dt), beta, seed)
                except HazardError:
                    found = True
                    break
            assert found, f"dropping dependency #{dropped} of {sched.ops[victim]} went unnoticed"
            caught += 1
    assert caught > 10


def test_correct_schedule_never_flags(rng):
    A, B, C = rand(rng, (30, 16), np.float64), rand(rng, (16, 30), np.float64), rand(rng, (30, 30), np.float64)
    sched = plan_gemm(30, 16, 30, workers=[0, 1, 2, 3], a_dev=0, b_dev=0, c_dev=0, tile=4,
                      beta_zero=False)
    for seed in range(100):
        _run(sched, A, B, C.copy(), 0.5, seed)


def test_schedule_layout_and_double_buffers():
    s = plan_gemm(64, 32, 64, workers=[0, 1, 2, 3], a_dev=0, b_dev=1, c_dev=2, tile=8,
                  beta_zero=False)
    # every band copy is one contiguous block of rows (A) or one 2-D block (B)
    for op in s.ops:
        if op.kind == "copy" and op.stream == "copy_in":
            (src, _), = op.reads
            if src.buf == "A":
                assert src.c0 == 0 and src.c1 == 32
        assert all(d < op.id for d in op.deps)
    # two slots per operand on workers that do not hold it
    assert s.buffers[("bufA", 1)] == (16, 32) and s.buffers[("bufB", 0)] == (64, 8)
    assert ("bufA", 0) not in s.buffers and ("bufB", 1) not in s.buffers
    assert "tile 8" in s.explain()


def test_3m_schedule_layout():
    k = 32
    s = plan_gemm(64, k, 64, workers=[0, 1, 2, 3], a_dev=0, b_dev=1, c_dev=2, tile=8,
                  beta_zero=True, method="3m", plane_copies="first")
    # B3 band-major: band j's stack is rows [3kj, 3k(j+1)) of an (8 x 3k) x T buffer
    assert s.buffers[("A3", 0)] == (64, 3 * k) and s.buffers[("B3", 1)] == (8 * 3 * k, 8)
    assert s.buffers[("bufA", 1)] == (16, 3 * k) and s.buffers[("bufB", 0)] == (6 * k, 8)
    assert s.buffers[("bufT", 3)] == (8, 24)
    assert s.real_buffers == {"A3", "B3", "bufA", "bufB", "bufT"}
    assert s.bytes_per_device(16)[3] == (16 * 3 * k + 6 * k * 8 + 8 * 24) * 8 + 16 * 64 * 16
    for op in s.ops:
        if op.kind == "copy" and op.stream == "copy_in":
            (src, _), = op.reads
            p = int(op.label[-1]) - 1 if "plane" in op.label else None
            if src.buf == "A3":     # a band: one contiguous block; a plane: one 2-D block
                assert (src.c0, src.c1) == ((0, 3 * k) if p is None else (p * k, (p + 1) * k))
            else:                   # B3: a band or a plane is one contiguous block
                j = int(op.label[1:].split("->")[0])
                lo = j * 3 * k + (0 if p is None else p * k)
                assert src.buf == "B3" and (src.c0, src.c1) == (0, 8)
                assert (src.r0, src.r1) == (lo, lo + (3 * k if p is None else k))
    # plane copies for each worker's first A band and the B bands of its first two tiles
    planes = [op.label for op in s.ops if "plane" in op.label]
    assert sorted({lab.split(" ")[0] for lab in planes}) == sorted(
        [f"A{w}->w{w}" for w in (1, 2, 3)] + [f"B{j}->w{w}" for j in (0, 1) for w in (0, 2, 3)])
    assert len(planes) == 3 * (3 + 6)
    # the first GEMM of a worker reads only plane 1 of its bands
    first = next(op for op in s.ops if op.kind == "gemm" and op.dev == 3)
    assert all(s.ops[d].label.endswith("plane 1") for d in first.deps)
    n_copies = {}
    for mode in ("none", "first", "all"):
        sm = plan_gemm(64, k, 64, workers=[0, 1, 2, 3], a_dev=0, b_dev=1, c_dev=2, tile=8,
                       beta_zero=True, method="3m", plane_copies=mode)
        n_copies[mode] = sum(op.kind == "copy" and op.stream == "copy_in" for op in sm.ops)
    bands = 3 * 2 + 3 * 16   # A bands (2 per worker) + B bands (8 tiles x 2 bands) per non-holder
    assert n_copies == {"none": bands, "first": bands + 2 * 9, "all": 3 * bands}
    default = plan_gemm(64, k, 64, workers=[0, 1, 2, 3], a_dev=0, b_dev=1, c_dev=2, tile=8,
                        beta_zero=True, method="3m")
    assert sum(op.kind == "copy" and op.stream == "copy_in" for op in default.ops) == 3 * bands
    with pytest.raises(ValueError, match="plane_copies"):
        plan_gemm(8, 8, 8, workers=[0], a_dev=0, b_dev=0, c_dev=0, tile=4, beta_zero=True,
                  method="3m", plane_copies="some")
    kinds = [op.kind for op in s.ops]
    assert kinds.count("split") == 8 + 8 and kinds.count("combine") == 64
    # splits are paced: B_j's waits for the first copy of B_(j-2) (never a correctness dep)
    first_copy = {}
    for op in s.ops:
        if op.kind == "copy" and op.label.startswith("B"):
            first_copy.setdefault(op.label.split("->")[0], op.id)
    for op in s.ops:
        if op.kind == "split" and op.label.startswith("split B"):
            j = int(op.label[len("split B"):])
            assert op.deps == [] and op.after == ([first_copy[f"B{j - 2}"]] if j >= 2 else [])
    # at the start the sources split first: the A source's own first band is split after
    # the other workers' first bands, and the B source's first GEMM waits for B_1's split
    a_splits = [op.label for op in s.ops if op.kind == "split" and op.label.startswith("split A")]
    assert a_splits[:4] == ["split A1", "split A2", "split A3", "split A0"]
    split_b1 = next(op.id for op in s.ops if op.label == "split B1")
    first_b_gemm = next(op for op in s.ops if op.kind == "gemm" and op.dev == 1)
    assert first_b_gemm.after == [split_b1] and split_b1 not in first_b_gemm.deps
    # the three real GEMMs of a tile are one batched op, but for each worker's first two
    # tiles (plane by plane as the planes arrive); the planes are equally spaced
    gemms = [op for op in s.ops if op.kind == "gemm"]
    assert sum(op.batch for op in gemms) == 3 * 64
    batched = [op for op in gemms if op.batch == 3]
    assert len(batched) == 64 - 4 * 2 and all(op.batch in (1, 3) for op in gemms)
    for op in batched:
        a0, b0 = op.reads[0][0], op.reads[1][0]
        assert [r.c0 - a0.c0 for r, _ in op.reads[0::2]] == [0, k, 2 * k]
        assert [r.r0 - b0.r0 for r, _ in op.reads[1::2]] == [0, k, 2 * k]
        assert [r.c0 for r in op.writes] == [0, 8, 16]
        assert set(op.deps) == {d for _, d in op.reads}
    single = plan_gemm(64, k, 64, workers=[0, 1, 2, 3], a_dev=0, b_dev=1, c_dev=2, tile=8,
                       beta_zero=True, method="3m", batch_planes=False)
    assert [op.batch for op in single.ops if op.kind == "gemm"] == [1] * (3 * 64)
    with pytest.raises(ValueError, match="batch_planes='yes'"):
        plan_gemm(8, 8, 8, workers=[0], a_dev=0, b_dev=0, c_dev=0, tile=4, beta_zero=True,
                  method="3m", batch_planes="yes")
    assert "(3m)" in s.explain()


def test_registry_has_executors():
    assert {"numpy", "emulated"} <= set(REGISTRY)


@pytest.mark.parametrize("name", ["numpy", "emulated"])
def test_every_cpu_executor_matches_numpy(rng, name):
    A, B, C = rand(rng, (20, 10), np.complex128), rand(rng, (10, 15), np.complex128), rand(rng, (20, 15), np.complex128)
    out = mgemm.gemm(A, B, C.copy(), 2.0, 0.5, executor=name,
                     devices=2 if name == "emulated" else None, tile=4)
    np.testing.assert_allclose(out, 2 * A @ B + 0.5 * C, rtol=1e-12)


@pytest.mark.parametrize("args,exc,msg", [
    (dict(A=np.ones((3, 4)), B=np.ones((5, 2))), ValueError, "inner dimensions"),
    (dict(A=np.ones(3), B=np.ones((3, 2))), ValueError, "2-D"),
    (dict(A=np.ones((3, 3), int), B=np.ones((3, 3), int)), TypeError, "dtype"),
    (dict(A=np.ones((3, 3)), B=np.ones((3, 3), np.float32)), TypeError, "one dtype"),
    (dict(A=np.ones((3, 3)), B=np.ones((3, 3)), C=np.ones((2, 3))), ValueError, "C.shape"),
    (dict(A=np.ones((3, 3)), B=np.ones((3, 3)), beta=1.0), ValueError, "beta"),
    (dict(A=np.ones((3, 3)), B=np.ones((3, 3)), complex_method="5m"), ValueError, "complex_method"),
    (dict(A=np.ones((3, 3)), B=np.ones((3, 3)), executor="magic"), ValueError, "executor"),
    (dict(A=np.ones((3, 3)), B=np.ones((3, 3)), devices=2, tile=0), ValueError, "tile"),
    (dict(A=np.ones((3, 3)), B=np.ones((3, 3)), devices=2, placement="x"), ValueError, "placement"),
])
def test_gemm_bad_arguments(args, exc, msg):
    args = dict(args)          # the parameter is shared by every run of the test: left whole
    A, B = args.pop("A"), args.pop("B")
    C = args.pop("C", None)
    beta = args.pop("beta", 0.0)
    with pytest.raises(exc, match=msg):
        mgemm.gemm(A, B, C, 1.0, beta, **args)


def test_plan_cli_and_timeline_picture(tmp_path):
    """`mgemm plan` prints the fused 3m schedule; the timeline draws every op kind."""
    from click.testing import CliRunner

    from mgemm.cli import main as mgemm_cli
    from mgemm.tools.timeline import plot_timeline
    r = CliRunner().invoke(mgemm_cli, ["plan", "--n", "64", "--gpus", "3", "--tile", "16",
                                       "--complex-method", "3m", "--explain"])
    assert r.exit_code == 0, r.output
    assert "(3m)" in r.output and "split" in r.output and "combine" in r.output
    trace = [{"dev": d, "stream": st, "kind": k, "label": k, "start_ms": t, "end_ms": t + 1.0}
             for t, (d, st, k) in enumerate([(0, "split", "split"), (1, "push0", "copy"),
                                             (0, "compute", "gemm"), (0, "compute", "combine"),
                                             (2, "reduce0", "axpby")])]
    out = plot_timeline(trace, str(tmp_path / "t.png"), title="synthetic")
    assert (tmp_path / "t.png").stat().st_size > 1000 and out.endswith("t.png")
