"""The convergence study's parts by value (tdse.studies.converge): Richardson's orders,
limits and stated errors on series with known answers (every branch: one level, two,
four, an exact finest pair, the order's clip), the spectral bound's formula, the box and
input errors, the recommendation's choice and its refusals, the verification loop with a
stand-in for the runs, the final psi's distances, and the printed table line by line.
Written for the survivors of a mutation run (benchmarks/results/mutation_cpu2_*T17*.json):
test_converge.py runs whole studies and checks what they conclude, not each number."""
from __future__ import annotations

import dataclasses
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
    assert rec["steps"] == steps and rec["n"] == converge.with_numerics(cfg, dx=0.1).grid.n
    seen.clear()
    rec = converge._verify(cfg, doc, 1e-4, truns, run)                  # never met
    assert len(seen) == 3 and not rec["verified"] and not rec["found"]
    assert rec["dx"] == 0.05 and rec["dt"] == 0.0025
    assert rec["why"] == ("the recommended numerics, run, missed the target (measured 2.00e-04 + box "
                          "1.00e-05); refine further (--levels) or loosen --target")


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
        "the rule: the study's coarsest levels whose space and whose time error are each <= "
        "(target - box error)/2 = 4.9e-04",
        "coarsest meeting 0.001: stencil 3, dx = 0.2 (N = 100), cfm4 dt = 0.01 (100 steps, 200 "
        "exponentials); estimated errors: space 4.0e-04, time 2.0e-04, box 1.0e-05; run and checked "
        "against the finest levels: 3.3e-04 (+ box) meets the target",
    ]
    assert lines == want
    # #58 item 12: where the input meets the target but the per-half rule picks finer
    # levels, the line says the input's numerics need not change
    doc["recommendation"] = dict(doc["recommendation"], dx=0.1, n=200)
    assert converge.table(doc)[-2].endswith("(a looser rule: they need not change)")
    doc["input_numerics"]["meets_target"] = False
    doc["recommendation"] = {"found": False, "why": "the box alone exceeds the target"}
    doc["space"]["3"]["populations"]["order"] = None
    doc["space"]["3"]["energy"]["order"] = None
    lines = converge.table(doc)
    assert lines[6] == "           observed order (populations): n/a, used 2 (nominal 2); <H>: n/a; errors x2"
    assert lines[-3].endswith("(misses the target 0.001)")
    assert lines[-1] == "no recommendation: the box alone exceeds the target"
    del doc["box"]
    assert not any(line.startswith("box:") for line in converge.table(doc))


def test_richardson_edges_left_by_the_first_tests():
    """The default nominal order is 2; a difference of exactly 1 is extrapolated like any
    other; an exact finest pair on four levels takes the finest level (not the second);
    five levels read their order from the last three (a zero difference earlier does not
    matter); the spectral bound with d_(L-2) = 0 takes rho = 1."""
    Q, _ = _power(3, 3, np.zeros(1))
    assert richardson(Q)["order_used"] == 2 and richardson(Q)["nominal_order"] == 2
    r = richardson(np.array([[0.0], [3.0], [4.0]]), 2)              # d = 3, 1
    assert r["limit"] == [pytest.approx(4.0 + 1.0 / (2 ** math.log2(3) - 1))]
    r = richardson(np.array([[0.0], [1.0], [2.0], [2.0]]), 2)
    assert r["limit"] == [2.0]
    Q = np.array([[0.0], [0.0], [1.0], [1.25], [1.3125]])             # d = 0, 1, 0.25, 0.0625
    r = richardson(Q, 4)
    assert r["order"] == pytest.approx(2.0) and r["order_used"] == pytest.approx(2.0)
    s = richardson(np.array([[0.0], [0.0], [0.1]]), None)            # d = 0, 0.1
    assert s["errors"][-1] == pytest.approx(SAFETY * 0.1)


def test_recommend_at_the_budget_exactly():
    """An error equal to the budget fits (<=); a box equal to the target leaves no budget,
    even for levels whose error is 0; the no-level reason in full."""
    cfg = cfgmod.load(os.path.join(ROOT, "inputs", "tiny.toml"))
    doc = _doc(box=0.0, space3=(4e-4, 1e-4, 2.5e-5), time=(4e-4, 1e-4, 2e-5))
    r = converge._recommend(cfg, doc, 8e-4)                           # budget 4e-4
    assert r["found"] and r["dx"] == 0.2 and r["dt"] == 0.01 and r["box_error"] == 0.0
    doc = _doc(box=1e-3, space3=(0.0, 0.0, 0.0), time=(0.0, 0.0, 0.0))
    assert converge._recommend(cfg, doc, 1e-3)["found"] is False
    r = converge._recommend(cfg, _doc(), 3e-5)
    assert r["why"] == "no level meets the target: refine further (--levels) or loosen --target"


def test_input_error_counts_a_missing_level_as_zero():
    cfg = cfgmod.load(os.path.join(ROOT, "inputs", "tiny.toml"))
    doc = _doc()
    doc["time"]["populations"]["errors"][0] = None
    doc["space"][str(cfg.grid.stencil)]["populations"]["errors"][0] = None
    assert converge._input_error(cfg, doc) == 1e-5


def test_table_with_two_target_groups_a_missing_group_and_no_order_kind():
    doc = _doc()
    doc["target_groups"] = ["populations", "energy"]
    doc["times"] = [1.0, 1.5, 2.0]
    del doc["space"]["3"]["acceleration"]
    del doc["time"]["populations"]["order_kind"]
    doc["input_numerics"] = {"stencil": 3, "dx": 0.2, "scheme": "cfm4", "dt": 0.01,
                             "estimated_error": 6.1e-4, "meets_target": True}
    doc["recommendation"] = {"found": True, "stencil": "3", "dx": 0.2, "n": 100, "scheme": "cfm4",
                             "dt": 0.01, "steps": 100, "exponentials": 200, "space_error": 4e-4,
                             "time_error": 2e-4, "box_error": 0.0, "measured_error": 3.3e-4}
    lines = converge.table(doc)
    assert lines[0] == ("made_up: convergence of P_n(t) in the eigenstates of H(0) and of H(t), "
                        "<H(t)> (hartree) at 3 times up to t = 2; exponentials: chebyshev")
    assert lines[3].split()[-3] == "nan"                # the acceleration column of space 3
    assert lines[-5].startswith("           observed order (populations): 2.00")   # the time rows'
    assert "box 0.0e+00;" in lines[-1]


def test_cost_and_summary_by_value():
    """_cost copies a run's cost; _summary is Richardson of every group at the given nominal
    order, and the final psi's distances."""
    r = {"n": 64, "steps": 200, "seconds": 1.5, "exponentials": 400, "chebyshev_terms": 5000, "psi": 0}
    assert converge._cost(r) == {"n": 64, "steps": 200, "seconds": 1.5, "exponentials": 400,
                                 "chebyshev_terms": 5000}
    runs = []
    for lv in range(3):
        h = 0.2 / 2 ** lv
        q = 0.5 + h ** 4
        runs.append({"P_h0": [[q, 1 - q]], "P_ht": [[q]], "n_mean": [q], "energy": [-q], "energies": [-1 - q],
                     "yield": [h ** 4], "acceleration": [2 * q], "dx": 0.1,
                     "psi": np.array([1.0, 2.0, 3.0, 4.0]) * (1 + h)})
    s = converge._summary(runs, [1, 1, 1], 4)
    assert set(s) == set(GROUPS) | {"final_psi"}
    for g in GROUPS:
        assert s[g]["order"] == pytest.approx(4.0) and s[g]["nominal_order"] == 4, g
    assert s["final_psi"][2] == {"infidelity": 0.0, "l2": 0.0} and s["final_psi"][0]["l2"] > 0


def test_with_numerics_by_value():
    """dx, dt, stencil and a box scale by hand (the box about the same centre, a whole
    number of points); the Chebyshev exponential at 1e-12, no error window, psi mode; a dx
    or dt that does not divide refused naming the key and value."""
    from tdse.config import ConfigError
    cfg = cfgmod.load(os.path.join(ROOT, "inputs", "tiny.toml"))          # [-6.4, 6.4], dx 0.2
    c = converge.with_numerics(cfg, dx=0.1, dt=0.0025, stencil=5)
    assert (c.grid.dx, c.grid.stencil, c.time.dt, c.grid.x_min, c.grid.x_max) == (0.1, 5, 0.0025, -6.4, 6.4)
    assert c.propagator.method == "chebyshev" and c.propagator.tolerance == 1e-12
    assert c.propagator.error_window == 0 and c.propagator.operator is False
    assert c.propagator.scheme == cfg.propagator.scheme and c.potential == cfg.potential
    same = converge.with_numerics(cfg)
    assert (same.grid.dx, same.grid.stencil, same.time.dt) == (0.2, 3, 0.005)
    wide = converge.with_numerics(cfg, box=1.5)             # 12.8 x 1.5 = 19.2 = 96 points
    assert wide.grid.x_min == pytest.approx(-9.6, abs=1e-12) and wide.grid.x_max == pytest.approx(9.6, abs=1e-12)
    assert wide.grid.n == 96 and wide.grid.dx == 0.2
    odd = converge.with_numerics(cfg, box=1.3)              # 16.64 -> 83 points: 16.6 wide
    assert odd.grid.n == 83 and odd.grid.x_max - odd.grid.x_min == pytest.approx(16.6, abs=1e-12)
    assert odd.grid.x_min + odd.grid.x_max == pytest.approx(0.0, abs=1e-12)
    shifted = dataclasses.replace(cfg, grid=dataclasses.replace(cfg.grid, x_min=-4.0, x_max=8.8))
    sw = converge.with_numerics(shifted, box=2.0)
    assert sw.grid.x_min == pytest.approx(-10.4, abs=1e-12) and sw.grid.x_max == pytest.approx(15.2, abs=1e-12)
    with pytest.raises(ConfigError) as e:
        converge.with_numerics(cfg, dx=0.3)
    assert str(e.value) == "grid.dx = 0.3: does not divide the box"
    with pytest.raises(ConfigError) as e:
        converge.with_numerics(cfg, dt=0.003)
    assert str(e.value) == "time.dt = 0.003: does not divide t_end"
    assert converge.with_numerics(cfg, dx=0.2 * (1 + 1e-13)).grid.n == 64     # within WHOLE_RTOL


def _fake_observe(asked, width_shift=0.0):
    """A stand-in for observe() recording what it was asked (stencil, dx, dt, N, sample
    times, backend): its quantities converge as known powers (dx^2 for 3-point, dx^4 for
    5-point, dt^4) plus a box term 1e-3 exp(-width/4); psi a Gaussian whose centre moves
    with the box's width by ``width_shift`` (a wider box's psi differs by a known amount)."""
    from tdse.model.grid import points

    def fake(c, times, K, progress=None, backend="numpy"):
        g = c.grid
        asked.append((g.stencil, g.dx, c.time.dt, g.n, tuple(times), backend))
        w = g.x_max - g.x_min
        e = 1e-2 * g.dx ** (2 if g.stencil == 3 else 4) + 1e-1 * c.time.dt ** 4 + 1e-3 * math.exp(-w / 4)
        q = [0.3 + e * (i + 1) for i in range(len(times))]
        x = points(g)
        psi = np.exp(-(x - 1.0 - width_shift * w) ** 2) * (1 + e) + 0j
        return {"energies": [-1.0] * K, "P_h0": [[v] * K for v in q], "P_ht": [[v] * K for v in q],
                "n_mean": q, "energy": q, "yield": [e] * len(times), "acceleration": q, "psi": psi,
                "x": x, "dx": g.dx, "n": g.n, "steps": c.time.steps, "seconds": 0.25,
                "chebyshev_terms": 7, "exponentials": 2 * c.time.steps}
    return fake


def test_study_document_with_a_stand_in_for_the_runs(monkeypatch):
    """The study's orchestration with observe() replaced by a stand-in whose quantities
    converge as known powers (dx^2 for 3-point, dx^4 for 5-point, dt^4) plus a box term
    exp(-width/4): the runs asked for (levels, stencils, box scales, labels), the sample
    times, the orders and nominal orders, the box changes and errors by hand, the
    recommendation run and checked, the input's estimated error, the document's fields,
    and the refusals of bad levels and targets."""
    from tdse.config import ConfigError
    cfg = cfgmod.load(os.path.join(ROOT, "inputs", "tiny.toml"))
    asked, said = [], []

    monkeypatch.setattr(converge, "observe", _fake_observe(asked))
    doc = converge.study(cfg, levels=3, target=1e-3, stencils=[3, 5], samples=4, count=2,
                         box=1.5, progress=said.append)
    assert doc["times"] == [0.25, 0.5, 0.75, 1.0] and doc["count"] == 2 and doc["levels"] == 3
    assert doc["units"] == "atomic units (hbar = m_e = e = 1)" and doc["backend"] == "numpy"
    assert doc["exponential"] == "chebyshev, truncation <= 1e-12 per exponential"
    assert doc["target_groups"] == ["populations"] and set(doc["groups"]) == set(GROUPS)
    assert said[0] == "space 3 dx = 0.2: N = 64, 200 steps"
    assert said[3] == "space 5 dx = 0.2: N = 64, 200 steps" and said[6] == "time dt = 0.005: N = 64, 200 steps"
    assert said[9] == "box x 1.5: N = 96, 200 steps" and said[10] == "box x 2: N = 128, 200 steps"
    assert [a[:4] for a in asked[:3]] == [(3, 0.2, 0.005, 64), (3, 0.1, 0.005, 128), (3, 0.05, 0.005, 256)]
    assert all(a[4] == (0.25, 0.5, 0.75, 1.0) for a in asked)
    for st, p in (("3", 2), ("5", 4)):
        s = doc["space"][st]
        assert s["dx"] == [0.2, 0.1, 0.05] and s["stencil"] == int(st) and "_runs" not in s
        assert s["populations"]["order"] == pytest.approx(p, abs=1e-6) and s["populations"]["nominal_order"] == p
        assert s["runs"][1] == {"n": 128, "steps": 200, "seconds": 0.25, "exponentials": 400, "chebyshev_terms": 7}
        d = [4 * 1e-2 * (0.2 / 2 ** lv) ** p * (1 - 2.0 ** -p) for lv in range(2)]   # max over samples: x4
        assert s["populations"]["differences"] == pytest.approx(d, rel=1e-6)
    t = doc["time"]
    assert t["dt"] == [0.005, 0.0025, 0.00125] and t["populations"]["order"] == pytest.approx(4, abs=1e-3)
    assert t["populations"]["nominal_order"] == 4 and t["runs"][2]["steps"] == 800
    b = doc["box"]
    assert b["scales"] == [1.5, 2.0] and b["n"] == [96, 128] and b["seconds"] == 0.5
    ch = [4 * 1e-3 * (math.exp(-3.2) - math.exp(-w / 4)) for w in (19.2, 25.6)]
    assert [c["populations"] for c in b["changes"]] == pytest.approx(ch, rel=1e-9)
    assert b["errors"]["populations"] == pytest.approx(SAFETY * ch[1], rel=1e-9)
    assert b["differences"] == b["changes"][0] and b["final_psi_infidelity"] < 1e-12
    rec = doc["recommendation"]
    assert rec["found"] and rec["verified"] and rec["checks"][-1]["meets"]
    assert any(s.startswith("check stencil") for s in said)
    num = doc["input_numerics"]
    assert num["estimated_error"] == pytest.approx(converge._input_error(cfg, doc), rel=1e-15)
    assert num["meets_target"] == (num["estimated_error"] <= 1e-3) and num["n"] == 64 and num["steps"] == 200
    nobox = converge.study(cfg, levels=2, stencils=[3], samples=2, box=0)
    assert "box" not in nobox and nobox["times"] == [0.5, 1.0]
    with pytest.raises(ConfigError, match=r"^--levels = 1: must be >= 2$"):
        converge.study(cfg, levels=1)
    with pytest.raises(ConfigError, match=r"^--target = 0: must be > 0$"):
        converge.study(cfg, target=0)


def test_observe_equals_a_run_read_at_the_same_steps():
    """observe() (the study's one run) against tdse.simulate of the same numerics, read at
    the sample steps: the populations in H(0)'s and H(t)'s states, <n>, <H>, the yield, the
    acceleration and t at each sample (step 0 not asked: not recorded), the final psi, H(0)'s
    energies and the cost fields."""
    import tdse
    cfg = converge.with_numerics(cfgmod.load(os.path.join(ROOT, "inputs", "tiny.toml")))
    cfg = cfg.with_value("output.populations", 3)
    r = converge.observe(cfg, [0.25, 1.0], 3)
    ref = tdse.simulate(cfg, backend="numpy")
    o = {k: np.asarray(v) for k, v in ref.observables.items()}
    rows = [int(np.flatnonzero(o["step"] == s)[0]) for s in (50, 200)]
    for k, name in converge._AtTimes.NAMES.items():
        assert np.allclose(np.asarray(r[k], dtype=float), o[name][rows], rtol=0, atol=1e-12), k
    assert np.allclose(r["psi"], ref.psi[-1], rtol=0, atol=1e-13)      # ref.psi: the snapshots
    assert np.allclose(r["energies"], ref.energies[:3], rtol=0, atol=1e-13)
    assert (r["n"], r["steps"], r["dx"], r["exponentials"]) == (64, 200, 0.2, 400)
    assert r["chebyshev_terms"] > 400 and r["seconds"] > 0 and np.array_equal(r["x"], ref.x)
    assert r["backend"] == "numpy"
    r0 = converge.observe(cfg, [0.0, 1.0], 3)
    assert r0["t"] == [0.0, 1.0] and len(r0["P_h0"]) == 2


def test_with_numerics_overrides_the_inputs_own_exponential_and_whole_counts(monkeypatch):
    """The input's own tolerance, error window and operator mode are replaced (the study's
    runs are psi-only Chebyshev at 1e-12 without a window), and 'whole' is relative: a
    count off by 1e-10 of itself passes (WHOLE_RTOL = 1e-9), one off by 1e-8 does not."""
    import dataclasses

    from tdse.config import ConfigError
    cfg = cfgmod.load(os.path.join(ROOT, "inputs", "tiny.toml"))
    own = dataclasses.replace(cfg, propagator=dataclasses.replace(
        cfg.propagator, tolerance=1e-8, error_window=20, operator=True))
    c = converge.with_numerics(own)
    assert (c.propagator.tolerance, c.propagator.error_window, c.propagator.operator) == (1e-12, 0, False)
    assert converge.with_numerics(cfg, dx=0.2 * (1 + 1e-10)).grid.n == 64
    assert converge.with_numerics(cfg, dt=0.005 * (1 + 1e-10)).time.dt == 0.005 * (1 + 1e-10)
    with pytest.raises(ConfigError):
        converge.with_numerics(cfg, dx=0.2 * (1 + 1e-8))
    with pytest.raises(ConfigError):
        converge.with_numerics(cfg, dt=0.005 * (1 + 1e-8))


def test_recommend_keeps_the_first_stencil_at_the_budget_exactly():
    cfg = cfgmod.load(os.path.join(ROOT, "inputs", "tiny.toml"))
    doc = _doc(box=0.0, space3=(4e-4, 1e-4, 2.5e-5), time=(4e-4, 1e-4, 2e-5))
    r = converge._recommend(cfg, doc, 8e-4)     # 3-point's 4e-4 is the budget: 3-point, N = 100
    assert r["stencil"] == "3" and r["space_error"] == 4e-4


def test_study_defaults_backend_an_off_centre_box_and_its_psi_infidelity(monkeypatch):
    """The study's defaults (3 levels, target 1e-3, 10 samples, boxes x1.5 and x2), the
    backend handed to every run, a sample index never 0, and the box's final psi compared
    point for point in a box not centred on 0 (the offset of the input's box in the wide
    one): its infidelity the one computed here from the two Gaussians."""
    import dataclasses
    cfg = cfgmod.load(os.path.join(ROOT, "inputs", "tiny.toml"))
    asked = []
    monkeypatch.setattr(converge, "observe", _fake_observe(asked))
    doc = converge.study(cfg, backend="stand-in")
    assert doc["levels"] == 3 and doc["target"] == 1e-3 and len(doc["times"]) == 10
    assert doc["box"]["scales"] == [1.5, 2.0] and doc["box"]["scale"] == 1.5
    assert doc["exponential_tolerance"] == 1e-12 and doc["input_numerics"]["scheme"] == cfg.propagator.scheme
    assert {a[5] for a in asked} == {"stand-in"}
    many = converge.study(cfg, levels=2, samples=500, box=0)        # 500 samples of 200 steps
    assert many["times"][0] == pytest.approx(0.005) and len(many["times"]) == 200
    off = dataclasses.replace(cfg, grid=dataclasses.replace(cfg.grid, x_min=-4.0, x_max=8.8))
    asked.clear()
    monkeypatch.setattr(converge, "observe", _fake_observe(asked, width_shift=0.01))
    doc = converge.study(off, levels=2, samples=2, box=1.5)
    from tdse.model.grid import points
    x = points(off.grid)
    a, b = np.exp(-(x - 1.0 - 0.01 * 12.8) ** 2), np.exp(-(x - 1.0 - 0.01 * 25.6) ** 2)   # x2: 25.6 wide
    fid = abs(np.vdot(a, b)) / (np.linalg.norm(a) * np.linalg.norm(b))
    assert doc["box"]["final_psi_infidelity"] == pytest.approx(1 - fid, rel=1e-9) and 1 - fid > 1e-4


def test_verify_a_box_error_counts_the_stencil_and_the_walk_to_both_ends():
    """The box error adds to the measured error; the recommended stencil is the one run;
    each check's record by value; dx and dt walked until both are at their finest."""
    cfg = cfgmod.load(os.path.join(ROOT, "inputs", "tiny.toml"))
    f = GROUPS["populations"][1]
    n_pop = np.ravel(f({"P_h0": np.zeros((2, 2)), "P_ht": np.zeros((2, 2))})).size

    def result(q):
        return {"P_h0": q[:4].reshape(2, 2), "P_ht": q[4:].reshape(2, 2)}
    doc = _doc(box=1e-5)
    for st in ("3", "5"):
        doc["space"][st]["_runs"] = [result(np.zeros(n_pop))] * 3
    truns = [result(np.zeros(n_pop))] * 3
    seen = []

    def run(c, label):
        seen.append((c.grid.stencil, round(c.grid.dx, 12), round(c.time.dt, 12)))
        return result(np.full(n_pop, 3e-4))
    doc["recommendation"] = {"found": True, "stencil": "5", "dx": 0.2, "dt": 0.005}
    rec = converge._verify(cfg, doc, 3.05e-4, truns, run)       # 3e-4 + 1e-5 > 3.05e-4: never met
    assert seen == [(5, 0.2, 0.005), (5, 0.1, 0.0025), (5, 0.05, 0.0025)]
    assert not rec["verified"] and rec["checks"][0] == {"dx": 0.2, "dt": 0.005,
                                                        "measured_error": pytest.approx(3e-4), "meets": False}
    seen.clear()
    rec = converge._verify(cfg, doc, 3.2e-4, truns, run)
    assert rec["verified"] and len(seen) == 1


def test_observe_hands_over_count_and_lists(monkeypatch):
    """observe() asks for ``count`` states whatever the input says, records at the times
    asked (save points of the loop), times itself, and returns lists (JSON), not arrays."""
    import time as _time
    cfg = converge.with_numerics(cfgmod.load(os.path.join(ROOT, "inputs", "tiny.toml")))
    t0 = _time.perf_counter()
    r = converge.observe(cfg, [0.5, 1.0], 2)
    wall = _time.perf_counter() - t0
    assert r["t"] == [0.5, 1.0] and 0 < r["seconds"] <= wall
    assert len(r["energies"]) == 2 and all(len(p) == 2 for p in r["P_h0"])
    assert all(isinstance(v, list) for v in r["P_h0"]) and isinstance(r["P_ht"][0], list)


def test_verify_walks_dx_ahead_of_dt_and_records_the_cost():
    """dx one level ahead of dt: the walk stops dx at its finest while dt goes on; the
    result's exponentials are steps x the scheme's per step; a miss is found = False."""
    cfg = cfgmod.load(os.path.join(ROOT, "inputs", "tiny.toml"))
    f = GROUPS["populations"][1]
    n_pop = np.ravel(f({"P_h0": np.zeros((2, 2)), "P_ht": np.zeros((2, 2))})).size

    def result(q):
        return {"P_h0": q[:4].reshape(2, 2), "P_ht": q[4:].reshape(2, 2)}
    doc = _doc(box=0.0)
    doc["space"]["3"]["_runs"] = [result(np.zeros(n_pop))] * 3
    truns = [result(np.zeros(n_pop))] * 3
    seen = []

    def run(c, label):
        seen.append((round(c.grid.dx, 12), round(c.time.dt, 12)))
        return result(np.full(n_pop, 1e-3))
    doc["recommendation"] = {"found": True, "stencil": "3", "dx": 0.1, "dt": 0.01}
    rec = converge._verify(cfg, doc, 1e-4, truns, run)
    assert seen == [(0.1, 0.01), (0.05, 0.005), (0.05, 0.0025)]
    per = {"midpoint": 1, "cfm4": 2}[cfg.propagator.scheme]
    assert rec["found"] is False and rec["steps"] == 400 and rec["exponentials"] == 400 * per
    seen.clear()
    rec = converge._verify(cfg, doc, 1e-3, truns, run)       # measured 1e-3 + box 0 = the target
    assert rec["verified"] and seen == [(0.1, 0.01)]


def test_observe_more_states_than_the_input_asks_for():
    """count beyond the input's output.populations (4): the run is prepared with count
    states, so every sample has count populations."""
    cfg = converge.with_numerics(cfgmod.load(os.path.join(ROOT, "inputs", "tiny.toml")))
    r = converge.observe(cfg, [1.0], 6)
    assert len(r["energies"]) == 6 and len(r["P_h0"][0]) == 6 and len(r["P_ht"][0]) == 6
