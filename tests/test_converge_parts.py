"""The convergence study's parts by value (tdse.studies.converge): Richardson's orders,
limits and stated errors on series with known answers (every branch: one level, two,
four, an exact finest pair, the order's clip), the spectral bound's formula, the box and
input errors, the recommendation's choice and its refusals, the verification loop with a
stand-in for the runs, the final psi's distances, and the printed table line by line.
Written for the survivors of a mutation run (benchmarks/results/mutation_cpu2_*T17*.json):
test_converge.py runs whole studies and checks what they conclude, not each number."""
from __future__ import annotations

import math
import os

import numpy as np
import pytest

from tdse import config as cfgmod
from tdse.studies import converge
from tdse.studies.converge import GROUPS, SAFETY, richardson

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _power(levels, p, limit, c=0.3, h0=0.2, width=3):
    """Q_l = limit + c (h0 / 2^l)^p for ``width`` quantities (the k-th scaled by k + 1)."""
    h = h0 / 2.0 ** np.arange(levels)
    k = np.arange(1, width + 1)
    return limit[None, :] + c * k[None, :] * (h[:, None] ** p), h


@pytest.mark.parametrize("p, nominal", [(2, 2), (4, 4), (2, 4), (3, 2)])
def test_richardson_on_four_levels_by_value(p, nominal, rng):
    """Four levels of a pure power h^p: the observed order from the last three levels, the
    order used min(p, nominal) (clipped to [1, 8]), the limit Q_3 + (Q_3 - Q_2)/(2^p' - 1),
    every level's stated error SAFETY |Q_l - limit| and the finest SAFETY d/(2^p' - 1)."""
    limit = rng.uniform(-1, 1, 3)
    Q, _ = _power(4, p, limit)
    r = richardson(Q, nominal)
    d = [float(np.abs(Q[i] - Q[i + 1]).max()) for i in range(3)]
    assert r["differences"] == pytest.approx(d, rel=1e-12)
    assert r["order"] == pytest.approx(p, abs=1e-9)               # exact for a pure power
    pu = min(p, nominal)
    assert r["order_used"] == pytest.approx(pu, abs=1e-9)
    assert r["order_kind"] == "algebraic" and r["nominal_order"] == nominal
    lim = Q[3] + (Q[3] - Q[2]) / (2.0 ** pu - 1)
    assert np.allclose(r["limit"], lim, rtol=0, atol=1e-14)
    if p <= nominal:                      # the limit is exact
        assert np.allclose(r["limit"], limit, rtol=0, atol=1e-13)
    want = [SAFETY * float(np.abs(Q[i] - lim).max()) for i in range(3)] + [SAFETY * d[-1] / (2.0 ** pu - 1)]
    assert r["errors"] == pytest.approx(want, rel=1e-10)


def test_richardson_one_and_two_levels():
    """One level: nothing is known (None, no differences).  Two: no order is observed, the
    nominal one is used."""
    one = richardson(np.array([[1.0, 2.0]]), 2)
    assert one == {"order": None, "order_used": None, "order_kind": None, "errors": [None],
                   "differences": []}
    Q = np.array([[1.0, 2.0], [1.3, 2.1]])
    two = richardson(Q, 4)
    assert two["order"] is None and two["order_used"] == 4 and two["differences"] == [pytest.approx(0.3)]
    assert two["errors"][1] == pytest.approx(SAFETY * 0.3 / 15)
    assert two["errors"][0] == pytest.approx(SAFETY * float(np.abs(Q[0] - (Q[1] + (Q[1] - Q[0]) / 15)).max()))


def test_richardson_exact_finest_pair_and_a_vanishing_difference():
    """The last two levels equal: the limit is the finest level, its error 0 and no order
    observed (log of 0), the coarser levels' errors their distance to it; the two before
    equal (d_(L-2) = 0): no order either, the nominal one used."""
    Q = np.array([[1.0], [1.5], [1.5]])
    r = richardson(Q, 2)
    assert r["order"] is None and r["order_used"] == 2 and r["limit"] == [1.5]
    assert r["errors"] == [pytest.approx(SAFETY * 0.5), 0.0, 0.0]
    Q = np.array([[1.5], [1.5], [1.6]])
    r = richardson(Q, 2)
    assert r["order"] is None and r["order_used"] == 2
    assert r["limit"] == [pytest.approx(1.6 + 0.1 / 3)]


def test_richardson_clips_the_order():
    """An observed order below 1 is used as 1, above 8 as 8 (a nominal order of 10): both
    ends of P_CLIP, and the nominal order caps it."""
    slow = np.array([[0.0], [1.0], [1.0 + 2 ** -0.5]])       # d = 1, 0.707: p = 0.5
    r = richardson(slow, 2)
    assert r["order"] == pytest.approx(0.5) and r["order_used"] == 1.0
    assert r["limit"] == [pytest.approx(1.0 + 2 ** -0.5 + 2 ** -0.5 / 1.0)]
    fast = np.array([[0.0], [1.0], [1.0 + 2.0 ** -9]])       # p = 9
    r = richardson(fast, 10)
    assert r["order"] == pytest.approx(9) and r["order_used"] == 8.0
    assert r["errors"][-1] == pytest.approx(SAFETY * 2.0 ** -9 / 255)


def test_spectral_bound_by_its_formula():
    """d = (1, 0.1, 0.01): rho = 0.1, tail = d_2 rho^2 / (1 - rho); e_3 = SAFETY tail,
    e_l = SAFETY d_l + e_(l+1).  rho >= 1 (not converging): the tail is d_(L-1); two levels:
    rho = 1."""
    Q = np.array([[0.0], [1.0], [1.1], [1.11]])
    r = richardson(Q, None)
    tail = 0.01 * 0.01 / 0.9
    e3 = SAFETY * tail
    want = [SAFETY * 1.0 + SAFETY * 0.1 + SAFETY * 0.01 + e3, SAFETY * 0.1 + SAFETY * 0.01 + e3,
            SAFETY * 0.01 + e3, e3]
    assert r["errors"] == pytest.approx(want, rel=1e-9)
    assert r["order"] is None and r["order_used"] is None and r["nominal_order"] is None
    assert r["order_kind"] == "exponential (spectral)" and r["differences"] == pytest.approx([1.0, 0.1, 0.01])
    up = richardson(np.array([[0.0], [0.1], [0.3]]), None)          # d = 0.1, 0.2: rho = 2
    assert up["errors"] == pytest.approx([SAFETY * 0.1 + SAFETY * 0.4, SAFETY * 0.2 + SAFETY * 0.2,
                                          SAFETY * 0.2], rel=1e-9)
    two = richardson(np.array([[0.0], [0.25]]), None)
    assert two["errors"] == pytest.approx([SAFETY * 0.25 + SAFETY * 0.25, SAFETY * 0.25])


def test_psi_distances_by_value():
    """The final psi against the finest level's on the coarse points: infidelity 1 - |<a|b>|
    / (|a| |b|) (phase-blind) and the L2 distance sqrt(dx) |a - b|; the finest to itself 0."""
    b = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], dtype=complex)
    a = np.array([1.0, 3.0, 5.0]) * np.exp(0.3j)                     # b's every other point
    a2 = np.array([1.1, 3.0, 4.9], dtype=complex)
    runs = [{"psi": a, "dx": 0.2}, {"psi": a2, "dx": 0.2}, {"psi": b, "dx": 0.1}]
    out = converge._psi_distances(runs, [2, 2, 1])
    assert out[0]["infidelity"] == pytest.approx(0.0, abs=1e-15)
    bb = b[::2]
    fid = abs(np.vdot(a2, bb)) / (np.linalg.norm(a2) * np.linalg.norm(bb))
    assert out[1]["infidelity"] == pytest.approx(1 - fid, rel=1e-12) and out[1]["infidelity"] > 0
    assert out[1]["l2"] == pytest.approx(math.sqrt(0.2) * math.sqrt(0.01 + 0.01), rel=1e-12)
    assert out[0]["l2"] == pytest.approx(math.sqrt(0.2) * np.linalg.norm(a - bb), rel=1e-12)
    assert out[2] == {"infidelity": 0.0, "l2": 0.0}


def _doc(box=1e-5, space3=(4e-4, 1e-4, 2.5e-5), space5=(3e-4, 2e-5, 1e-6), time=(2e-4, 5e-5, 1.2e-5)):
    """A study's document with made-up numbers: 3- and 5-point at dx 0.2, 0.1, 0.05 (N 100,
    200, 400), dt 0.01, 0.005, 0.0025."""
    def series(errs, key, hs, ns):
        s = {g: {"errors": [e * (k + 1) for e in errs]} for k, g in enumerate(GROUPS)}
        s["populations"].update(order=2.0, order_used=2.0, nominal_order=2, order_kind="algebraic")
        s["energy"]["order"] = 1.9
        s[key] = list(hs)
        s["runs"] = [{"n": n, "steps": st, "seconds": 0.5 * (i + 1)}
                     for i, (n, st) in enumerate(zip(ns, (100, 200, 400)))]
        s["final_psi"] = [{"infidelity": 1e-6 / 4 ** i, "l2": 0.0} for i in range(3)]
        return s
    space = {"3": series(space3, "dx", (0.2, 0.1, 0.05), (100, 200, 400)),
             "5": series(space5, "dx", (0.2, 0.1, 0.05), (100, 200, 400))}
    space["5"]["populations"].update(order=4.0, order_used=4.0, nominal_order=4)
    space["3"]["stencil"], space["5"]["stencil"] = 3, 5
    return {"input": "made_up", "groups": {g: w for g, (w, _, _) in GROUPS.items()},
            "target_groups": ["populations"], "times": [1.0, 2.0], "exponential": "chebyshev",
            "space": space, "time": series(time, "dt", (0.01, 0.005, 0.0025), (100, 100, 100)),
            "box": {"scales": [1.5, 2.0], "n": [150, 200],
                    "changes": [{"populations": 3e-6}, {"populations": box / SAFETY}],
                    "errors": {"populations": box, "energy": 2e-7}, "final_psi_infidelity": 3e-9},
            "target": 1e-3}


def test_recommend_the_coarsest_that_fits_and_its_refusals():
    """Budget (target - box)/2 for space and for time each: the stencil whose first level
    within it has the fewest points, the first dt within it; the box error passed on; no
    recommendation where the box alone exceeds the target or no level fits."""
    cfg = cfgmod.load(os.path.join(ROOT, "inputs", "tiny.toml"))
    doc = _doc()                         # budget (1e-3 - 1e-5) / 2 = 4.95e-4
    r = converge._recommend(cfg, doc, 1e-3)
    # 3-point fits at dx = 0.2 (4e-4), 5-point too (3e-4): both N = 100, the first kept
    assert r["found"] and r["stencil"] == "3" and r["dx"] == 0.2 and r["n"] == 100
    assert r["dt"] == 0.01 and r["time_error"] == 2e-4 and r["space_error"] == 4e-4
    steps = round(cfg.time.t_end / 0.01)
    assert r["steps"] == steps and r["box_error"] == 1e-5 and r["scheme"] == cfg.propagator.scheme
    per = {"midpoint": 1, "cfm4": 2}[cfg.propagator.scheme]
    assert r["exponentials"] == steps * per
    doc = _doc(space3=(6e-4, 1.5e-4, 4e-5))     # 3-point needs dx = 0.1 (N = 200): 5-point wins
    r = converge._recommend(cfg, doc, 1e-3)
    assert r["stencil"] == "5" and r["dx"] == 0.2 and r["space_error"] == 3e-4
    r = converge._recommend(cfg, _doc(time=(6e-4, 4e-4, 1e-4)), 1e-3)
    assert r["dt"] == 0.005 and r["time_error"] == 4e-4
    r = converge._recommend(cfg, _doc(time=(6e-4, 4e-4, 1e-4)), 8.1e-4)   # budget 4e-4: dt 0.0025
    assert r["dt"] == 0.0025
    assert converge._recommend(cfg, _doc(box=2e-3), 1e-3) == {"found": False,
                                                              "why": "the box alone exceeds the target"}
    r = converge._recommend(cfg, _doc(), 3e-5)        # budget 1e-5: the time levels miss it
    assert not r["found"] and r["why"].startswith("no level meets the target")
    assert converge._recommend(cfg, _doc(box=1e-3), 1e-3)["why"] == "the box alone exceeds the target"


def test_input_and_box_errors():
    """The input's estimated error: its stencil's level 0 + time level 0 + box; a stencil
    the study did not run adds nothing; no box: 0."""
    cfg = cfgmod.load(os.path.join(ROOT, "inputs", "tiny.toml"))
    doc = _doc()
    own = doc["space"][str(cfg.grid.stencil)]["populations"]["errors"][0]
    assert converge._input_error(cfg, doc) == pytest.approx(own + 2e-4 + 1e-5, rel=1e-15)
    del doc["space"][str(cfg.grid.stencil)]
    assert converge._input_error(cfg, doc) == pytest.approx(2e-4 + 1e-5, rel=1e-15)
    assert converge._box_error(doc) == 1e-5 and converge._box_error(doc, "energy") == 2e-7
    del doc["box"]
    assert converge._box_error(doc) == 0.0
    assert converge._input_error(cfg, doc) == pytest.approx(2e-4, rel=1e-15)


def test_verify_walks_finer_until_the_measurement_meets_the_target():
    """_verify with a stand-in for the runs whose populations are Q_ref + a known error per
    (dx, dt): the measured error is that error, the walk goes one level finer in both dx
    and dt until measured + box meets the target, and says what it tried; at the finest
    levels it stops, unverified, and says why."""
    cfg = cfgmod.load(os.path.join(ROOT, "inputs", "tiny.toml"))
    f = GROUPS["populations"][1]
    n_pop = np.ravel(f({"P_h0": np.zeros((2, 2)), "P_ht": np.zeros((2, 2))})).size
    ref = np.linspace(0.1, 0.4, n_pop)

    def result(q):
        return {"P_h0": q[:4].reshape(2, 2), "P_ht": q[4:].reshape(2, 2)}
    doc = _doc()
    sp = doc["space"]["3"]
    sp["_runs"] = [result(np.zeros(n_pop))] * 2 + [result(ref + 0.05)]   # finest space: ref + 0.05
    truns = [result(np.full(n_pop, 0.02)), result(np.zeros(n_pop)), result(np.full(n_pop, 0.07))]
    # Q_ref = finest space + finest time - time level 0 = ref + 0.05 + 0.07 - 0.02 = ref + 0.1
    errors = {(0.2, 0.01): 8e-4, (0.1, 0.005): 3e-4, (0.05, 0.0025): 2e-4}
    seen = []

    def run(c, label):
        seen.append((c.grid.dx, c.time.dt, label))
        e = errors[(round(c.grid.dx, 12), round(c.time.dt, 12))]
        return result(ref + 0.1 + e * np.linspace(-1, 1, n_pop) ** 2)
    doc["recommendation"] = converge._recommend(cfg, doc, 1e-3)
    rec = converge._verify(cfg, doc, 5e-4, truns, run)
    assert [s[:2] for s in seen] == [pytest.approx((0.2, 0.01)), pytest.approx((0.1, 0.005))]
    assert seen[0][2] == "check stencil 3 dx = 0.2, dt = 0.01"
    assert rec["verified"] and rec["dx"] == 0.1 and rec["dt"] == 0.005
    assert rec["measured_error"] == pytest.approx(3e-4, rel=1e-9)
    assert [c["meets"] for c in rec["checks"]] == [False, True]
    assert rec["checks"][0]["measured_error"] == pytest.approx(8e-4, rel=1e-9)
    steps = round(cfg.time.t_end / 0.005)
    assert rec["steps"] == steps and rec["n"] == with_n(cfg, 0.1)
    seen.clear()
    rec = converge._verify(cfg, doc, 1e-4, truns, run)                  # never met
    assert len(seen) == 3 and not rec["verified"] and not rec["found"]
    assert rec["dx"] == 0.05 and rec["dt"] == 0.0025
    assert rec["why"] == ("the recommended numerics, run, missed the target (measured 2.00e-04 + box "
                          "1.00e-05); refine further (--levels) or loosen --target")


def with_n(cfg, dx):
    return converge.with_numerics(cfg, dx=dx).grid.n


def test_the_printed_table_line_by_line():
    """The study's text (what `tdse converge` prints), every line from the made-up document:
    the header, a row per level with each group's error, the order line (algebraic) or the
    spectral note, the box, the input's numerics and the recommendation (or why none)."""
    doc = _doc()
    doc["space"]["5"]["populations"]["order_kind"] = "exponential (spectral)"
    doc["input_numerics"] = {"stencil": 3, "dx": 0.2, "scheme": "cfm4", "dt": 0.01,
                             "estimated_error": 6.1e-4, "meets_target": True}
    doc["recommendation"] = {"found": True, "stencil": "3", "dx": 0.2, "n": 100, "scheme": "cfm4",
                             "dt": 0.01, "steps": 100, "exponentials": 200, "space_error": 4e-4,
                             "time_error": 2e-4, "box_error": 1e-5, "measured_error": 3.3e-4}
    lines = converge.table(doc)
    want = [
        "made_up: convergence of P_n(t) in the eigenstates of H(0) and of H(t) at 2 times up to "
        "t = 2; exponentials: chebyshev",
        "",
        "    series        level      N  steps     P err   <n> err   <H> err   E_n err yield err "
        "accel err   psi 1-F      s",
        "   space 3 dx=0.2          100    100  4.00e-04  8.00e-04  1.20e-03  1.60e-03  2.00e-03  "
        "2.40e-03  1.00e-06    0.5",
        "   space 3 dx=0.1          200    200  1.00e-04  2.00e-04  3.00e-04  4.00e-04  5.00e-04  "
        "6.00e-04  2.50e-07    1.0",
        "   space 3 dx=0.05         400    400  2.50e-05  5.00e-05  7.50e-05  1.00e-04  1.25e-04  "
        "1.50e-04  6.25e-08    1.5",
        "           observed order (populations): 2.00, used 2 (nominal 2); <H>: 1.90; errors x2",
        "   space 5 dx=0.2          100    100  3.00e-04  6.00e-04  9.00e-04  1.20e-03  1.50e-03  "
        "1.80e-03  1.00e-06    0.5",
        "   space 5 dx=0.1          200    200  2.00e-05  4.00e-05  6.00e-05  8.00e-05  1.00e-04  "
        "1.20e-04  2.50e-07    1.0",
        "   space 5 dx=0.05         400    400  1.00e-06  2.00e-06  3.00e-06  4.00e-06  5.00e-06  "
        "6.00e-06  6.25e-08    1.5",
        "           convergence: exponential (spectral) -- no algebraic order; errors bounded from "
        "the differences (x2)",
        "      time dt=0.01         100    100  2.00e-04  4.00e-04  6.00e-04  8.00e-04  1.00e-03  "
        "1.20e-03  1.00e-06    0.5",
        "      time dt=0.005        100    200  5.00e-05  1.00e-04  1.50e-04  2.00e-04  2.50e-04  "
        "3.00e-04  2.50e-07    1.0",
        "      time dt=0.0025       100    400  1.20e-05  2.40e-05  3.60e-05  4.80e-05  6.00e-05  "
        "7.20e-05  6.25e-08    1.5",
        "           observed order (populations): 2.00, used 2 (nominal 2); <H>: 1.90; errors x2",
        "box: populations change by x1.5 (N = 150) 3.00e-06, x2 (N = 200) 5.00e-06; stated box error "
        "1.00e-05 (x2 the larger), <H> 2.00e-07, final psi infidelity 3.00e-09",
        "input numerics (3, dx = 0.2, cfm4, dt = 0.01): estimated population error 6.10e-04 (meets "
        "the target 0.001)",
        "coarsest meeting 0.001: stencil 3, dx = 0.2 (N = 100), cfm4 dt = 0.01 (100 steps, 200 "
        "exponentials); estimated errors: space 4.0e-04, time 2.0e-04, box 1.0e-05; run and checked "
        "against the finest levels: 3.3e-04 (+ box) meets the target",
    ]
    assert lines == want
    doc["input_numerics"]["meets_target"] = False
    doc["recommendation"] = {"found": False, "why": "the box alone exceeds the target"}
    doc["space"]["3"]["populations"]["order"] = None
    doc["space"]["3"]["energy"]["order"] = None
    lines = converge.table(doc)
    assert lines[6] == "           observed order (populations): n/a, used 2 (nominal 2); <H>: n/a; errors x2"
    assert lines[-2].endswith("(misses the target 0.001)")
    assert lines[-1] == "no recommendation: the box alone exceeds the target"
    del doc["box"]
    assert not any(line.startswith("box:") for line in converge.table(doc))
