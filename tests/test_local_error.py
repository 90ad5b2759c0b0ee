"""The local error estimate (tdse.numerics.local_error) and the run's error from it
(time_error = "estimate", #56): the leading term against the Magnus expansion's and against
measured local errors (a step against 64 steps of dt/64), and the stated global error
against the distance to an independent run at dt/8 (Chebyshev at 1e-14) on four inputs made
here from random parameters -- an abrupt drive, a smoothly ramped one, a laser pulse with an
absorber, fast-moving centres."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import tdse
from benchmarks import drives
from tdse.config import with_value, with_values
from tdse.model.field import vector_potential
from tdse.numerics import schemes
from tdse.numerics.local_error import ABSORBER, LocalError, estimator_terms, leading_term
from tdse.run.loop import advance
from tdse.run.timeerror import phase_blind_distance


def test_midpoint_leading_term_is_the_magnus_expansions():
    """Exponential midpoint: L = h^3 (-a_2/24 + [a_0, a_1]/12) (Blanes et al., Phys. Rep.
    470, 151 (2009): Omega = h A + h^3 A''/24 - h^3 [A, A']/12 about the midpoint, the
    midpoint rule keeping h A; expanded about the start the leading term is the same)."""
    C = leading_term("midpoint")
    assert set(C) == {3}
    got = C[3]
    want = {(2,): -1 / 24, (0, 1): 1 / 12, (1, 0): -1 / 12}
    assert set(got) == set(want)
    for w, c in want.items():
        assert got[w] == pytest.approx(c, rel=1e-12)


def test_cfm4_is_fourth_order_and_a_wrong_table_is_caught():
    C = leading_term("cfm4")
    assert set(C) == {5} and len(C[5]) == 15
    # every coefficient a multiple of 1/8640 (the rationals of the 2-node Gauss scheme)
    assert all(abs(c * 8640 - round(c * 8640)) < 1e-8 for c in C[5].values())
    sc = schemes.get("cfm4")
    bad = dataclasses.replace(sc, factors=((sc.factors[0][0] + 1e-3, sc.factors[0][1]), sc.factors[1]))
    with pytest.raises(ValueError, match="not of order 4"):
        leading_term(bad)


def test_absorber_terms():
    """Masks (Strang) give an h^3 term with b for both schemes; inside the generator
    (dense) the scheme's order holds with b as part of a_0."""
    for name in ("midpoint", "cfm4"):
        masks = leading_term(name, "masks")
        assert min(masks) == 3 and all(ABSORBER in w for w in masks[3]) == (name == "cfm4")
        gen = leading_term(name, "generator")
        assert set(gen) == {schemes.get(name).order + 1}
    T = estimator_terms("cfm4", "masks")
    assert set(T) == {3, 5} and not any(ABSORBER in w for w in T[5])


@pytest.mark.parametrize("scheme,absorber,products", [
    ("midpoint", None, 2), ("midpoint", "masks", 4), ("cfm4", None, 6), ("cfm4", "masks", 8),
    ("cfm4", "generator", 6)])
def test_horner_plan_makes_every_word_with_fewer_products(scheme, absorber, products):
    """horner_plan (the length gauge's letters diagonal) against each word multiplied out as
    dense matrices: a random Hermitian H, random diagonal letters and absorber, a random u;
    and the products with H it takes (14 for cfm4's words one suffix at a time)."""
    from tdse.numerics.error_terms import horner_plan
    rng = np.random.default_rng()
    n = 12
    Hm = rng.normal(size=(n, n)) + 1j * rng.normal(size=(n, n))
    Hm = Hm + Hm.conj().T
    diag = {k: rng.normal(size=n) for k in range(1, 6)}
    W = rng.uniform(0.1, 1.0, n)
    u = rng.normal(size=n) + 1j * rng.normal(size=n)
    letter = {0: -1j * Hm, ABSORBER: np.diag(W), **{k: -1j * np.diag(d) for k, d in diag.items()}}
    terms = estimator_terms(scheme, absorber)
    ops, outs = horner_plan(terms)
    assert sum(1 for kind, _ in ops if kind == "H") == products
    # the plan run by hand
    vec = [u]
    for kind, arg in ops:
        if kind == "H":
            vec.append(letter[0] @ vec[arg])
        else:
            acc = np.zeros(n, complex)
            for c, d, i in arg:
                X = vec[i]
                for k in d:
                    X = letter[k] @ X
                acc += c * X
            vec.append(acc)
    for n_, s, i in outs:
        want = np.zeros(n, complex)
        for w, c in terms[n_].items():
            X = u
            for k in reversed(w):              # a_kn acts first
                X = letter[k] @ X
            want += c * X
        np.testing.assert_allclose(s * vec[i], want, rtol=0, atol=1e-11 * np.abs(want).max())


def test_local_error_plan_equals_the_suffixes():
    """LocalError's host estimate by the plan equals its estimate one suffix at a time (the
    velocity gauge's path) on a moving molecule with an absorber, to rounding."""
    cfg = drives.make("laser", np.random.default_rng())
    le = LocalError(cfg, np)
    rng = np.random.default_rng()
    u = rng.normal(size=cfg.grid.n) + 1j * rng.normal(size=cfg.grid.n)
    t, dt = rng.uniform(0, cfg.time.t_end), cfg.time.dt
    host, A = le.letters(t, dt)
    from tdse.model.hamiltonian import Operator
    H = Operator(cfg, 1.0, host[0], np)
    got = le._apply(u, dt, H, lambda k, X: host[k] * X, le.W)
    want = le._apply(u, dt, H, lambda k, X: host[k] * X, le.W, diagonal=False)
    for (n1, a), (n2, b) in zip(got, want):
        assert n1 == n2
        assert np.linalg.norm(a - b) <= 1e-9 * np.linalg.norm(b)


@pytest.mark.parametrize("kind, gauge", [("laser", "length"), ("laser", "velocity"),
                                         ("abrupt", "length"), ("fast", "length"), ("ramped", "length")])
def test_local_errors_of_a_block_of_steps_are_each_steps_own(kind, gauge):
    """LocalError.block (a run's S steps' estimates as one N x S block, each column with its
    own letters) against LocalError.vector step by step: a laser into an absorber (DVR, in
    either gauge), the 5-point and 3-point stencils, a ramped DVR drive; steps from an
    offset that is not a letters' chunk's start, psi random.  The same words and letters;
    a block's products (a GEMM, a sparse product of the block) round differently from one
    vector's: 1e-12 of the estimate's size."""
    rng = np.random.default_rng()
    cfg = drives.make(kind, rng)
    if gauge == "velocity":
        cfg = cfg.with_value("field.gauge", "velocity")
    le, dt, n = LocalError(cfg, np), cfg.time.dt, cfg.grid.n
    j0, S = int(rng.integers(1, 50)), 7
    U = rng.normal(size=(S, n)) + 1j * rng.normal(size=(S, n))
    got = le.block(U, j0, dt)
    assert got.shape == (S, n)
    for k in range(S):
        want = LocalError(cfg, np).vector(U[k], (j0 + k) * dt, dt, j0 + k)
        assert np.linalg.norm(got[k] - want) <= 1e-12 * np.linalg.norm(want), k


def _config(kind, rng, scheme="cfm4", method="chebyshev", dt=None):
    return drives.make(kind, rng, scheme, method, dt)


@pytest.mark.parametrize("name,gauge", [("atom_hhg.toml", "length"), ("h2plus_moving.toml", "length"),
                                        ("atom_hhg.toml", "velocity")])
def test_letters_of_a_chunk_of_steps_are_each_steps_own(name, gauge):
    """LocalError.letters with the step index: the letters of LETTERS_CHUNK steps made at
    once (a static molecule and a field, moving centres, the velocity gauge's A) against
    one step's alone: V itself the same bits and its derivatives within 1e-12 of their
    scale; A's k-th derivative within 64 eps max|A| sum_i |M_ki| dt^-k -- NumPy's vectorised
    sin rounds by the array's length (2e-19 in A), and the finite differences amplify it by
    that much; the chunks start at multiples of their length, so steps asked in another
    order (a resumed run) get the same bits."""
    cfg = tdse.load_config(f"inputs/{name}")
    if gauge == "velocity":
        cfg = cfg.with_value("field.gauge", "velocity")
    dt = cfg.time.dt
    a, b, c = (LocalError(cfg, np) for _ in range(3))
    C = a.chunk_steps                               # across chunks' ends, back and forth
    assert C > 1
    steps = [0, 1, C - 1, C, C + 1, 3 * C + 8, 2 * C + 2, 5]
    first = {j: a.letters(j * dt, dt, j) for j in steps}
    a_max = np.abs(vector_potential(cfg.potential.field, np.arange(max(steps) + 2) * dt)).max()
    for j in steps:
        V, A = b.letters(j * dt, dt)
        assert np.array_equal(first[j][0][0], V[0])
        assert np.abs(first[j][0] - V).max() <= 1e-12 * np.abs(V).max()
        amp = 64 * np.finfo(float).eps * a_max * np.abs(b.M).sum(axis=1) * dt ** -np.arange(b.P)
        assert (np.abs(first[j][1] - A) <= amp).all()
    for j in reversed(steps):
        V, A = c.letters(j * dt, dt, j)
        assert np.array_equal(V, first[j][0]) and np.array_equal(A, first[j][1])


@pytest.mark.parametrize("kind, scheme, method", [
    ("abrupt", "cfm4", "chebyshev"), ("abrupt", "midpoint", "chebyshev"),
    ("laser", "cfm4", "chebyshev"),
    pytest.param("laser", "midpoint", "dense", marks=pytest.mark.slow)])   # 17 s: dense N = 320
def test_local_estimate_is_asymptotically_correct(kind, scheme, method):
    """est / true near 1 (its error is O(dt) relative): within 25 % at 2 dt and 10 % at dt.  The laser's state is taken mid-pulse with electrons
    in the absorber (masks for Chebyshev, -i W in the generator for dense)."""
    rng = np.random.default_rng()
    c0 = _config(kind, rng, scheme, method)
    if method == "dense":             # N = 200 (the dense exponent's cost goes as N^3)
        c0 = with_values(c0, [("grid.x_min", -30.0), ("grid.x_max", 30.0), ("grid.dx", 0.3)])
    t_at = 20.0 if kind == "laser" else 0.5
    ratios = []
    # (the laser's h^3 absorber and h^5 interior terms cross near dt = 0.1: 8-21 % there,
    # 2 % at dt = 0.025 on four draws)
    # (dense: -i W inside the generator, no splitting term)
    for dt in ((c0.time.dt * 2, c0.time.dt) if kind != "laser" else
               (0.2, 0.1) if method == "dense" else (0.05, 0.025)):
        # (exponentials at 1e-14: at dt = 0.025 the local error is ~4e-13, and 1e-13 an
        # exponential would be a quarter of it)
        c = with_values(c0, [("time.dt", dt), ("propagator.tolerance", 1e-14)])
        plan = tdse.prepare(c, backend="numpy")
        st = plan.stepper()
        j = int(round(t_at / dt))
        psi = advance(st, plan.psi0.astype(complex), 0, j)
        one = st.step(psi, j)
        ref = advance(plan.stepper(with_value(c, "time.dt", dt / 64)), psi, 64 * j, 64 * j + 64)
        true = np.linalg.norm(one - ref) * np.sqrt(c.grid.dx)
        est = LocalError(c).norm(psi, j * dt, dt)
        ratios.append(est / true)
    assert abs(ratios[0] - 1) < 0.25 and abs(ratios[1] - 1) < 0.1, ratios


@pytest.mark.parametrize("kind, scheme", [(k, "cfm4") for k in drives.KINDS] +
                         [("abrupt", "midpoint"), ("laser", "midpoint"),
                          pytest.param("laser-velocity", "cfm4", marks=pytest.mark.slow)])
def test_stated_error_bounds_the_true_one(kind, scheme):
    """#56 'done when' 1: the stated error at t_end within 1-10x of the true one (it is
    2x the carried error, measured 1.0-1.5x the true one on hand-made versions of these);
    the populations' bound at or above their true error, their estimate near it.  Also the
    laser in the velocity gauge (#55: its estimate's letters carry A's derivatives; the
    reference is that gauge's own run at dt/8; 2.13-2.18x on four seeds, 100-103)."""
    rng = np.random.default_rng()
    c = _config(kind.split("-")[0], rng, scheme)
    if kind.endswith("velocity"):
        c = c.with_value("field.gauge", "velocity")
    res = tdse.simulate(c, backend="numpy")
    te = res.time_error
    assert te["kind"] == "estimate" and te["t_compared"] == pytest.approx(c.time.t_end)
    plan, ref = drives.reference(c)
    psi = res.psi[-1]
    true = phase_blind_distance(psi, ref, c.grid.dx)
    ratio = te["error_at_t_end"] / true
    assert 1.0 <= ratio <= 10.0, (kind, scheme, te["error_at_t_end"], true)
    phi = plan.states[:c.output.populations]
    P = np.abs(phi @ psi * c.grid.dx) ** 2
    Pref = np.abs(phi @ ref * c.grid.dx) ** 2
    assert te["population_bound_at_t_end"] >= np.abs(P - Pref).max()
    # the estimate: within 0.2-20x (not a bound: 0.5-10x measured on 32 draws) where the true
    # error is above 1e-8; below it, near the exponentials' own truncation, the estimate runs
    # low (LocalEstimate.estimate's docstring): CI at dc07de5 drew a "fast" cfm4 case with the
    # true 8.1e-10 and the estimate 0.09x of it -- there only its upper side is checked
    true_p = np.abs(P - Pref).max()
    est_p = te["population_error_at_t_end"] / true_p
    assert est_p <= 20 and (true_p <= 1e-8 or est_p >= 0.2), (kind, scheme, est_p, true_p)


@pytest.mark.parametrize("adaptive,stencil", [(False, 5), (True, 5), (False, "dvr")])
def test_estimate_is_stored_per_snapshot_and_resumes(tmp_path, interrupt_after, adaptive, stencil, monkeypatch):
    """Rows per snapshot; a run interrupted and resumed from its file holds the same bits in
    every time-error and step row as the run straight through (the carried error and the
    adaptive steps' count are kept in /resume) -- with fixed steps, pieces of 16 steps that
    span its snapshots (a 5-point stencil, the DVR by FFT: LocalError.columns_apart), the
    resumed run's first piece starting at its snapshot, inside one of the run's."""
    import tdse.numerics.adaptive as ad
    from tdse.run.driver import run
    from tdse.run.interrupts import Interrupted
    from tdse.run.snapshots import read, resume_state
    monkeypatch.setattr(ad, "PIECE_STEPS", 16)
    rng = np.random.default_rng()
    c = with_values(_config("abrupt", rng), [("grid.stencil", stencil)])
    if adaptive:
        c = with_values(c, [("time.dt", 0.1), ("output.every", 2), ("time.tolerance", 1e-7)])
    else:
        c = with_values(c, [("output.every", 5)])
        pieces = []
        make = ad.EstimatingStepper._make_piece
        monkeypatch.setattr(ad.EstimatingStepper, "_make_piece",
                            lambda self: (pieces.append(tuple(self._pending)), make(self))[1])
    ref = read(run(c, tmp_path / "ref", backend="numpy").path)
    if not adaptive:       # pieces of 16 (at multiples of 16), not ended at the snapshots
        assert pieces == [(k, min(k + 16, c.time.steps)) for k in range(0, c.time.steps, 16)]
    te = ref["snapshots/time_error"]
    assert te.shape == ref["snapshots/t"].shape and te[0] == 0 and np.all(te[1:] > 0)
    assert np.all(np.isfinite(ref["snapshots/time_error_populations"]))
    armed = interrupt_after(4, "SIGTERM")
    with pytest.raises(Interrupted):
        run(c, tmp_path / "cut", backend="numpy")
    armed.disarm()
    part = str(tmp_path / "cut" / f"{c.name}.h5.part")
    st = resume_state(part)
    assert st["error_vector"] is not None and 0 < st["step"] < c.time.steps
    assert adaptive or st["step"] % 16, st["step"]          # (inside one of the run's pieces)
    got = read(run(c, None, backend="numpy", resume=(st, part)).path)
    for k in ("snapshots/time_error", "snapshots/time_error_populations", "snapshots/psi",
              "snapshots/steps_taken", "snapshots/step_min"):
        assert np.array_equal(got[k], ref[k]), k
    if adaptive:
        assert ref["snapshots/steps_taken"][-1] > c.time.steps


def test_bad_time_error_kind_is_one_line():
    from tdse.errors import ConfigError
    rng = np.random.default_rng(1)
    c = _config("abrupt", rng)
    with pytest.raises(ConfigError, match="propagator.time_error"):
        with_value(c, "propagator.time_error", "guess")


# ------------------------------------------------------------------ adaptive steps (item 2)
def _adaptive(c, tol, **kw):
    pairs = [("time.tolerance", tol)] + [(f"time.{k}", v) for k, v in kw.items()]
    return with_values(c, pairs)


def test_adaptive_steps_meet_the_tolerance_and_land_on_output_times():
    """A pulse into an absorber and 20 a.u. of quiet, dt = 1 the largest step: the stated
    and the true error (dt = 1/40 reference) at t_end under the tolerance; steps smaller in
    some parts of the run than in others, fewer of them than the smallest all along; every
    snapshot at its multiple of dt; the steps and the smallest step per snapshot stored."""
    rng = np.random.default_rng()
    c = with_values(_config("laser", rng), [("time.dt", 1.0), ("output.every", 5)])
    tol = 1e-5     # (at 1e-6 the true error, ~1e-7, is near the dt/40 reference's own: up to 7e-8)
    res = tdse.simulate(_adaptive(c, tol), backend="numpy")
    te, d = res.time_error, res.arrays()
    _, ref = drives.reference(c, factor=40)
    true = phase_blind_distance(res.psi[-1], ref, c.grid.dx)
    assert te["error_at_t_end"] <= tol and true <= te["error_at_t_end"], (te["error_at_t_end"], true)
    assert np.array_equal(d["snapshots/t"], np.arange(0, 51, 5) * 1.0)
    hmin = d["snapshots/step_min"]
    assert hmin[1:].max() >= 2 * hmin[1:].min()           # the steps followed the drive
    # fewer steps than the smallest step all along would take
    assert 50 < d["snapshots/steps_taken"][-1] == te["steps_taken"] < 0.8 * 50 / hmin.min()


def test_a_large_ns_estimate_keeps_long_pieces(monkeypatch):
    """Where the letters' chunk is one step (a large N: LETTERS_CHUNK_BYTES), the pieces
    stay PIECE_STEPS long with an estimate a step (a piece of one step each had copied psi
    into and out of a GPU's graphs every step), and give the block path's psi bit for bit
    and its e to rounding; with chunks of many steps the pieces end at the chunks'
    multiples and the estimates are blocks."""
    import tdse.numerics.adaptive as ad
    import tdse.numerics.local_error as le
    cfg = drives.make("fast", np.random.default_rng())
    plan = tdse.prepare(cfg, backend="numpy")
    psi = np.asarray(plan.psi0, dtype=complex)
    runs = {}
    monkeypatch.setattr(ad, "PIECE_STEPS", 64)       # (the mechanism at these sizes)
    for chunk in (1, 64):
        monkeypatch.setattr(le, "LETTERS_CHUNK", chunk)
        st = ad.EstimatingStepper(cfg, plan.stepper, np)
        spans, blocks = [], []
        advance, block = st.base.advance, st.local.block
        st.base.advance = lambda X, j0, j1, **kw: (spans.append((j0, j1)), advance(X, j0, j1, **kw))[1]
        st.local.block = lambda U, j0, dt: (blocks.append(len(U)), block(U, j0, dt))[1]
        runs[chunk] = (st.advance(psi, 10, 150), st.e, spans, blocks)
    _, _, spans, blocks = runs[1]
    assert spans == [(10, 74), (74, 138), (138, 150)] and blocks == []
    _, _, spans, blocks = runs[64]
    assert spans == [(10, 64), (64, 128), (128, 150)] and blocks == [54, 64, 22]
    assert np.array_equal(runs[1][0], runs[64][0])
    assert np.linalg.norm(runs[1][1] - runs[64][1]) <= 1e-6 * np.linalg.norm(runs[1][1]) + 1e-15


def test_a_piece_spans_the_calls_until_e_is_read(monkeypatch):
    """A run's save points every step (H(t)'s populations) with e read every 10 steps (its
    snapshots): the steps' local errors are made as one block a piece of 10 (or to the
    chunk's end: chunks of 64 here), not a block of one a call, when e is read; psi bit for
    bit and e to rounding against one call over the range."""
    import tdse.numerics.adaptive as ad
    import tdse.numerics.local_error as le
    monkeypatch.setattr(ad, "PIECE_STEPS", 64)
    monkeypatch.setattr(le, "LETTERS_CHUNK", 64)
    cfg = drives.make("fast", np.random.default_rng())
    plan = tdse.prepare(cfg, backend="numpy")
    psi0 = np.asarray(plan.psi0, dtype=complex)
    st, whole = ad.EstimatingStepper(cfg, plan.stepper, np), ad.EstimatingStepper(cfg, plan.stepper, np)
    blocks, block = [], st.local.block
    st.local.block = lambda U, j0, dt: (blocks.append((j0, len(U))), block(U, j0, dt))[1]
    X, es = psi0, []
    for j in range(0, 75):
        X = st.advance(X, j, j + 1)
        if (j + 1) % 10 == 0:
            es.append(st.e.copy())
    Y = whole.advance(psi0, 0, 75)
    assert blocks == [(0, 10), (10, 10), (20, 10), (30, 10), (40, 10), (50, 10), (60, 4), (64, 6)]
    assert np.array_equal(X, Y) and st.substeps == whole.substeps == 75
    assert np.linalg.norm(st.e - whole.e) <= 1e-6 * np.linalg.norm(whole.e) + 1e-15
    assert len(es) == 7 and all(np.linalg.norm(e) > 0 for e in es)


def test_an_adaptive_dts_steps_as_one_block_equal_a_step_at_a_time():
    """EstimatingStepper._interval_block (a dt's n steps of psi first, their local errors as
    one block, then checked and carried) against _interval_steps (each estimate made and
    checked before its step): psi bit for bit, e within 1e-6 of its size + 1e-15 (the
    block's products round otherwise), the same steps counted; a dt whose share of the
    tolerance is below its estimates rejected by both, e left as it was."""
    import tdse.numerics.adaptive as ad
    rng = np.random.default_rng()
    c = _adaptive(with_values(_config("laser", rng), [("time.dt", 1.0)]), 1e-6)
    plan = tdse.prepare(c, backend="numpy")
    a, b = (ad.EstimatingStepper(c, plan.stepper, np, control=True) for _ in range(2))
    psi = np.asarray(plan.psi0, dtype=complex)
    for st in (a, b):
        st.tau = 1.0
    for j, n in ((0, 3), (7, 8), (20, 5)):       # (the pulse's rise and its peak)
        e0 = 1e-9 * (rng.standard_normal(psi.size) + 1j * rng.standard_normal(psi.size))
        p1, e1, ok1 = a._interval_block(psi, e0, j, n)
        p2, e2, ok2 = b._interval_steps(psi, e0, j, n)
        assert ok1 and ok2 and np.array_equal(p1, p2)
        assert np.linalg.norm(e1 - e2) <= 1e-6 * np.linalg.norm(e2) + 1e-15
        psi = p1
    assert a.substeps == b.substeps == 16
    for st in (a, b):
        st.tau = 0.0
    e0 = np.ones_like(psi)
    for got in (a._interval_block(psi, e0, 30, 4), b._interval_steps(psi, e0, 30, 4)):
        assert got[1] is e0 and got[2] is False


@pytest.mark.parametrize("stencil", [3, 5, "dvr"])
def test_a_blocks_rows_keep_their_bits_at_any_width_where_it_says_so(stencil):
    """LocalError.columns_apart: on the host a block's rows (the laser drive's field and
    absorber, fresh random states) have the same bits in blocks of other widths and starts
    -- what lets a piece span snapshots and a resumed run's piece start inside one: the
    stencils' sparse product, the DVR's kinetic energy by FFT (BlockOperator's by_fft; in
    one thread below ffts.FFT_THREADS_MIN_B columns, in all from it: the 40 here), where
    its GEMM's columns move with the width on OpenBLAS (the GEMM fails this test)."""
    rng = np.random.default_rng()
    c = with_values(_config("laser", rng), [("grid.stencil", stencil)])
    local = LocalError(c, np)
    assert local.columns_apart
    n, dt, S = c.grid.n, c.time.dt, 40
    U = rng.standard_normal((S, n)) + 1j * rng.standard_normal((S, n))
    j0 = int(rng.integers(0, 100))
    whole = local.block(U, j0, dt)
    for a, b in ((0, 1), (3, 4), (5, 17), (17, 40), (0, 39), (int(rng.integers(1, 20)), 40)):
        assert np.array_equal(local.block(U[a:b], j0 + a, dt), whole[a:b]), (a, b)


def test_only_a_runs_block_of_steps_forces_the_dvrs_fft(monkeypatch):
    """LocalError.block (a run's steps as columns, pieces spanning snapshots) takes the DVR's
    kinetic energy by FFT at any width; the block of a scan's members (_columns without
    by_fft) keeps the width's choice -- 16 columns at N = 320 the GEMM -- and both give the
    same local errors to rounding."""
    from tdse.model import hamiltonian as h
    made = []

    class Spy(h.BlockOperator):
        def __init__(self, *a, **k):
            super().__init__(*a, **k)
            made.append(self.T is not None)
    monkeypatch.setattr(h, "BlockOperator", Spy)
    rng = np.random.default_rng()
    c = _config("laser", rng)
    assert c.grid.stencil == "dvr" and c.grid.n <= h.DVR_HOST_GEMM_MAX_N
    local = LocalError(c, np)
    S, n, dt = 16, c.grid.n, c.time.dt
    U = rng.standard_normal((S, n)) + 1j * rng.standard_normal((S, n))
    by_fft = local.block(U, 3, dt)
    assert made == [False]
    vals, _ = local._rows(3, S, dt)
    der = np.ascontiguousarray(vals.transpose(1, 2, 0))
    parts = local._columns(np.ascontiguousarray(U.T), dt, der, None, local.W[:, None])
    assert made == [False, True]
    from tdse.numerics.local_error import _summed
    gemm = _summed(parts).T
    assert np.abs(gemm - by_fft).max() <= 1e-10 * np.abs(by_fft).max()


def test_a_dt_of_more_steps_than_a_block_goes_in_blocks(monkeypatch):
    """A dt of more steps than a block holds (_block_most: PIECE_STEPS here 3) taken by
    _interval in blocks of 3, 3 and 2 (LocalError.block three times, no step at a time,
    where it had gone a step at a time, a read of the device each), equal to _interval_steps:
    psi bit for bit, e within 1e-6 of its size + 1e-15, the same steps counted; rejected by
    both where its share of the tolerance is below its estimates."""
    import tdse.numerics.adaptive as ad
    monkeypatch.setattr(ad, "PIECE_STEPS", 3)
    rng = np.random.default_rng()
    c = _adaptive(with_values(_config("laser", rng), [("time.dt", 1.0)]), 1e-6)
    plan = tdse.prepare(c, backend="numpy")
    a, b = (ad.EstimatingStepper(c, plan.stepper, np, control=True) for _ in range(2))
    psi = np.asarray(plan.psi0, dtype=complex)
    blocks = []
    block = ad.LocalError.block
    monkeypatch.setattr(ad.LocalError, "block", lambda self, U, j0, *r, **k: (
        blocks.append((j0, len(U))), block(self, U, j0, *r, **k))[1])
    monkeypatch.setattr(a, "_interval_steps", None)          # (never a step at a time)
    for st in (a, b):
        st.tau = 1.0
    j = int(rng.integers(5, 25))                  # (within the pulse)
    e0 = 1e-9 * (rng.standard_normal(psi.size) + 1j * rng.standard_normal(psi.size))
    p1, e1, ok1 = a._interval(psi, e0, j, 8)
    assert blocks == [(8 * j, 3), (8 * j + 3, 3), (8 * j + 6, 2)]
    p2, e2, ok2 = b._interval_steps(psi, e0, j, 8)
    assert ok1 and ok2 and np.array_equal(p1, p2)
    assert np.linalg.norm(e1 - e2) <= 1e-6 * np.linalg.norm(e2) + 1e-15
    assert a.substeps == b.substeps == 8
    for st in (a, b):
        st.tau = 0.0
    e0 = np.ones_like(psi)
    assert a._interval(psi, e0, j, 8)[1:] == (e0, False)


def test_a_dts_choice_from_inner_products_equals_the_direct_norms():
    """EstimatingStepper._sizes (||e|| and every candidate's ||sum_n s^n part_n|| from one
    read of the inner products, _gram) against the norms made directly (_norm), on fresh
    random parts of orders 3, 4, 5 that partly cancel, a vector's and a batch's (its largest
    column): equal to 1e-10 of the parts' summed norms (rounding of the expansion)."""
    import tdse.numerics.adaptive as ad
    rng = np.random.default_rng()
    c = _adaptive(with_values(_config("laser", rng), [("time.dt", 1.0)]), 1e-6)
    plan = tdse.prepare(c, backend="numpy")
    st = ad.EstimatingStepper(c, plan.stepper, np, control=True)
    n = c.grid.n
    for shape in ((n,), (n, 5)):
        def z():
            return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
        base = z()
        parts = [(3, base + 1e-3 * z()), (4, -base + 1e-2 * z()), (5, z())]
        e = 1e-3 * z()
        e_norm, size = st._sizes(ad.to_host(st._gram(e, parts)), [o for o, _ in parts])
        assert e_norm == pytest.approx(st._norm([(0, e)]), rel=1e-12)
        scale = sum(st._norm([(0, v)]) for _, v in parts)
        for s in (1.0, 0.5, 1 / 3, 2.0, 1e-3):
            assert abs(size(s) - st._norm(parts, s)) <= 1e-10 * scale * max(1.0, s ** 5), s


def test_the_next_dts_terms_made_ahead_give_the_same_run(monkeypatch):
    """Adaptive steps with the next dt's terms and inner products made with this dt's
    acceptance (_interval_block: one read a dt) against the same run with them made at the
    dt's start (the ahead-made ones dropped): psi and the stated error bit for bit, the same
    steps; LocalError.parts called once a dt (not twice) where the dts are blocks -- but for
    a rejected dt's, whose next terms made ahead are dropped and made again after its retry
    (random inputs: seed 8 gives one rejection)."""
    import tdse.numerics.adaptive as ad
    rng = np.random.default_rng()
    c = _adaptive(with_values(_config("laser", rng), [("time.dt", 1.0), ("output.every", 5)]), 1e-6)
    runs = {}
    for ahead in (True, False):
        calls = []
        parts = ad.LocalError.parts
        monkeypatch.setattr(ad.LocalError, "parts", lambda self, *a: (calls.append(a[1]), parts(self, *a))[1])
        if not ahead:
            choose = ad.EstimatingStepper._choose
            monkeypatch.setattr(ad.EstimatingStepper, "_choose",
                                lambda self, psi, j: (setattr(self, "_next", None), choose(self, psi, j))[1])
        res = tdse.simulate(c, backend="numpy")
        runs[ahead] = (np.asarray(res.psi[-1]), res.time_error, calls)
        monkeypatch.undo()
    (p1, t1, c1), (p2, t2, c2) = runs[True], runs[False]
    assert np.array_equal(p1, p2) and t1["error_at_t_end"] == t2["error_at_t_end"]
    assert t1["steps_taken"] == t2["steps_taken"] > 50
    assert t1["rejected"] == t2["rejected"]
    assert sorted(set(c1)) == sorted(set(c2)) and len(c1) - len(set(c1)) <= t1["rejected"]
    assert len(c1) < len(c2)


def test_fixed_steps_stay_the_default_and_dt_min_stops_with_one_line():
    from tdse.numerics.adaptive import StepTooSmall
    rng = np.random.default_rng()
    c = _config("fast", rng)
    assert c.time.tolerance is None
    with pytest.raises(StepTooSmall, match="time.dt_min"):   # (a ConfigError: the CLI says it in one line)
        tdse.simulate(_adaptive(c, 1e-14, dt_min=c.time.dt / 4), backend="numpy")


@pytest.mark.parametrize("key, value, match", [
    ("time.tolerance", 0.0, "must be > 0"), ("time.tolerance", -1e-6, "must be > 0"),
    ("time.tolerance", 2.0, "must be < 1"), ("time.dt_min", 1.0, "must be <= time.dt")])
def test_bad_adaptive_values_are_one_line(key, value, match):
    from tdse.errors import ConfigError
    c = _config("abrupt", np.random.default_rng(2))
    pairs = [("time.tolerance", 1e-6), (key, value)] if key != "time.tolerance" else [(key, value)]
    with pytest.raises(ConfigError, match=match):
        with_values(c, pairs)


def test_adaptive_refusals_name_the_key(tmp_path):
    """dt_min without a tolerance; a tolerance with the companion or U(t); the CLI: exit 2."""
    from click.testing import CliRunner
    from tdse.errors import ConfigError
    from tdse.ui.cli import main
    c = _config("abrupt", np.random.default_rng(3))
    with pytest.raises(ConfigError, match="time.dt_min"):
        with_values(c, [("time.dt_min", 1e-3)])
    with pytest.raises(ConfigError, match="propagator.time_error"):
        with_values(c, [("time.tolerance", 1e-6), ("propagator.time_error", "companion")])
    path = tmp_path / "a.toml"
    path.write_text(c.source)
    r = CliRunner().invoke(main, ["run", str(path), "--set", "time.tolerance=-1", "--out", str(tmp_path)])
    assert r.exit_code == 2 and "time.tolerance" in r.output and "Traceback" not in r.output


def test_operator_mode_with_the_estimate_steps_u_as_without():
    """propagator.operator = true with time_error = "estimate": U(t) stepped by the run's own
    steps, the same bits as with no estimate (it had raised from the loop)."""
    c = _config("abrupt", np.random.default_rng(5))
    runs = {k: tdse.simulate(with_values(c, [("propagator.operator", True),
                                             ("propagator.time_error", k)]), backend="numpy")
            for k in ("estimate", "none")}
    a, b = (runs[k].arrays() for k in ("estimate", "none"))
    assert np.array_equal(a["operator/P"], b["operator/P"])
    assert np.array_equal(a["snapshots/psi"], b["snapshots/psi"])
    assert runs["estimate"].time_error["error_at_t_end"] > 0


def _short_laser(rng, **kw):
    """The laser kind, shorter (a 16 a.u. pulse, 4 a.u. after it) for the scans below."""
    c = _config("laser", rng, **kw)
    return with_values(c, [("field.duration", 16.0), ("time.t_end", 20.0)])


@pytest.mark.parametrize("kind", ["abrupt", "laser", pytest.param("laser-velocity", marks=pytest.mark.slow)])
def test_a_scans_members_state_their_own_time_errors(kind, tmp_path):
    """#56 item 4: a scan of an input with time_error = "estimate" states each member's time
    error -- the block's estimate (BatchLocalError: each member's own letters, field,
    absorber) carried with the block -- equal to its own serial run's at every row (1e-6
    relative, or 1e-5 of its largest: the carrier at 1e-6), and at t_end within 1-10x of the member's true error (its
    own dt/8 Chebyshev 1e-14 run; in the velocity gauge the serial run's bound is its own test's).  The scan file holds them, (key, t), with units."""
    rng = np.random.default_rng()
    if kind == "abrupt":
        c, key = _config("abrupt", rng), "potential.centres.frequency"
        values = np.sort(rng.uniform(1.5, 3.5, 3))
    else:
        c, key = _short_laser(rng, dt=0.2), "field.E0"
        values = np.sort(rng.uniform(0.05, 0.1, 2))
        if kind.endswith("velocity"):
            c = c.with_value("field.gauge", "velocity")
    from tdse.run import scanfile
    from tdse.studies.scan import scan
    res = scan(c, {key: list(values)})
    assert res["time_error"].shape == (len(values), len(res["t"]))
    assert res["batches"] == 1 and res["batch_steps_taken"] == [c.time.steps]
    for i, v in enumerate(values):
        m = c.with_value(key, float(v))
        own = tdse.simulate(m, backend="numpy")
        d = own.arrays()
        np.testing.assert_allclose(res["t"][::c.output.every], d["snapshots/t"])
        # (the carrier's 1e-6 is relative to e's largest so far: where e's parts cancel to a
        # fifth of it, 1.2e-6 relative was seen -- hence 1e-5 of the row's largest beside)
        te, tp = d["snapshots/time_error"], d["snapshots/time_error_populations"]
        np.testing.assert_allclose(res["time_error"][i, ::c.output.every], te, rtol=1e-6, atol=1e-5 * te.max())
        np.testing.assert_allclose(res["time_error_populations"][i, ::c.output.every], tp, rtol=1e-5,
                                   atol=1e-5 * tp.max())
        if kind.endswith("velocity"):    # (its run's own bound: test_stated_error_bounds_the_true_one)
            continue
        _, ref = drives.reference(m)
        true = phase_blind_distance(own.psi[-1], ref, c.grid.dx)
        assert 1.0 <= res["time_error"][i, -1] / true <= 10.0, (v, res["time_error"][i, -1], true)
    import h5py
    path = scanfile.write(str(tmp_path / "s_scan.h5"), res)
    with h5py.File(path) as f:
        np.testing.assert_array_equal(f["time_error"][()], res["time_error"])
        assert f["time_error"].attrs["units"] == "1" and list(f.attrs["batch_steps_taken"]) == [c.time.steps]
    if kind == "abrupt":                 # the command says the range, from the file's numbers
        from click.testing import CliRunner
        from tdse.config import to_toml
        from tdse.ui.cli import main
        (tmp_path / "in.toml").write_text(to_toml(c))
        out = CliRunner().invoke(main, ["scan", str(tmp_path / "in.toml"), "--set",
                                        f"{key}={','.join(repr(float(v)) for v in values)}",
                                        "--out", str(tmp_path / "cli"), "-q"])
        assert out.exit_code == 0, out.output
        with h5py.File(tmp_path / "cli" / f"{c.name}_scan.h5") as f:
            te = f["time_error"][()]                 # (--save final: at t_end)
        np.testing.assert_array_equal(te, res["time_error"][:, -1])
        assert f"{te.min():.2g} to {te.max():.2g}; steps taken {c.time.steps}-{c.time.steps}" in out.output


def test_an_adaptive_scan_shares_its_steps_at_the_largest_members_estimate():
    """#56 item 4: with time.tolerance a batch's members take one set of steps, chosen for
    the largest member's estimate: as many as the member that needs the most takes alone
    (within 10 %: its psi is the same, the others' estimates below it), every member's
    stated error within the tolerance and its true one (a dt/80 = 0.0125 run: ~1e-7 against
    the reference's own few 1e-9) within the stated."""
    rng = np.random.default_rng()
    c = with_values(_short_laser(rng), [("time.dt", 1.0), ("output.every", 2)])
    tol = 1e-6        # (at 1e-5 both members took 35-36 steps on some draws: dt = 1 nearly does)
    c = _adaptive(c, tol)
    values = [0.02, float(rng.uniform(0.08, 0.1))]       # a weak member and a strong one
    from tdse.studies.scan import scan
    res = scan(c, {"field.E0": values}, keep_psi=True)
    own = [tdse.simulate(c.with_value("field.E0", v), backend="numpy") for v in values]
    steps = [o.time_error["steps_taken"] for o in own]
    assert steps[0] < steps[1]                           # the strong member needs more
    assert abs(res["batch_steps_taken"][0] - steps[1]) <= 0.1 * steps[1], (res["batch_steps_taken"], steps)
    for i, v in enumerate(values):
        _, ref = drives.reference(c.with_value("field.E0", v), factor=80)
        true = phase_blind_distance(res["psi"][i], ref, c.grid.dx)
        assert true <= res["time_error"][i, -1] <= tol, (v, true, res["time_error"][i, -1])


@pytest.mark.parametrize("kind", ["laser", "fast"])
def test_estimating_steps_over_a_range_equal_a_step_at_a_time(kind):
    """EstimatingStepper.steps (pieces: psi by the run's steps, each psi(t_j) kept, the
    piece's local errors made as one block, then e by the carrier with each L added after its
    step) against e_(j+1) = S'_j e_j + L_j written out a step at a time (L_j by
    LocalError.vector from psi(t_j), S' the carrier's step): psi bit for bit, taps of psi
    filled as a plain stepper's, across more than one piece; and EstimatingStepper.step (a
    piece of one) likewise.  e within 1e-6 of its size + 1e-15: the block's products round
    otherwise than a vector's (LocalError.block's test), and a local error is a sum of words
    that cancel to far below their size (on the laser's quiet start by 1e-5 and more), so
    their rounding is relative to the words (1e-15 of psi, normalised), not to e."""
    import tdse.numerics.adaptive as ad
    from tdse.numerics.carrier import carrier
    cfg = drives.make(kind, np.random.default_rng())
    plan = tdse.prepare(cfg, backend="numpy")
    psi0 = np.asarray(plan.psi0, dtype=complex)
    one, many = (ad.EstimatingStepper(cfg, plan.stepper, np) for _ in range(2))
    dt, base, carry = cfg.time.dt, plan.stepper(), carrier(plan.stepper(ad.transport_config(cfg)))
    X, e = psi0, np.zeros_like(psi0)
    for j in range(0, 150):
        L = one.local.vector(X, j * dt, dt, j)
        X, e = base.step(X, j), carry.step(e, j) + L
    Xs = psi0
    for j in range(0, 150):
        Xs = one.step(Xs, j)
    def close(a, b):
        return np.linalg.norm(a - b) <= 1e-6 * np.linalg.norm(b) + 1e-15
    assert np.array_equal(X, Xs) and close(one.e, e)
    rows = {k: [np.empty_like(psi0)] for k in (1, 64, 65, 150)}
    old = ad.PIECE_STEPS
    try:
        ad.PIECE_STEPS = 40                          # 150 steps: four pieces
        Y = many.advance(psi0, 0, 100, taps={k: r for k, r in rows.items() if k <= 100})
        Y = many.advance(Y, 100, 150, taps={150: rows[150]})
    finally:
        ad.PIECE_STEPS = old
    assert np.array_equal(X, Y) and close(many.e, e) and close(many.e, one.e)
    assert many.substeps == one.substeps == 150
    st, Z = plan.stepper(), psi0
    for j in range(150):
        Z = st.step(Z, j)
        if j + 1 in rows:
            assert np.array_equal(rows[j + 1][0], Z)
