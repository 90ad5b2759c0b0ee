"""method = "auto": dense or Chebyshev by the estimated cost (tdse.numerics.cost).

The estimate is checked against its formulas with made-up timings (so the choice cannot
depend on this machine's speed), the choice follows the smaller estimate in both
directions, an absorber keeps the dense exponent, and a run with ``auto`` records what it
chose and agrees with the same run by the explicit method (both meet the tolerance, so
psi agrees to a few times it).  Whether the choice is right on real machines is a
benchmark: ``python -m benchmarks step-cost`` (measured and predicted side by side).
"""
import dataclasses
import json
import math

import numpy as np
import pytest

from tdse import config as cfgmod
from tdse.numerics import cost
from tdse.numerics.precheck import precheck
from tdse.run.driver import run
from tdse.run.snapshots import read

BASE = """
name = "c"
[grid]
x_min = -8.0
x_max = 8.0
dx = 0.25
stencil = {stencil}
[potential]
a = 0.5
[[potential.centres]]
x0 = -1.0
Z = 2.0
amplitude = 0.3
frequency = 3.0
[[potential.centres]]
x0 = 1.0
Z = 2.0
amplitude = 0.3
frequency = 3.0
[time]
dt = 0.01
t_end = 0.2
[propagator]
method = "auto"
tolerance = 1e-12
operator = {op}
error_window = 0
[output]
every = 5
"""


def cfg(stencil='"dvr"', op="false"):
    return cfgmod.loads(BASE.format(stencil=stencil, op=op))


def timings(expm=1e-3, zgemm=1e-4, matvec=1e-6, term_vector=1e-5, term_block=1e-4, n0=64, m0=8):
    return cost.Timings(n0=n0, expm=expm, zgemm=zgemm, matvec=matvec, m0=m0,
                        term_vector=term_vector, term_block=term_block)


def test_estimate_is_its_formula():
    c = cfg(op="true")
    pc = precheck(c, check_resolution=False)
    t = timings(n0=32)
    n, F, K = c.grid.n, 2, pc.chebyshev_terms
    assert n == 64 and K > 0
    for G in (1, 4):
        e = cost.estimate(c, pc, t, gpus=G)
        dense = F * t.expm * 8 / G + F * t.matvec * 4 + F * t.zgemm * 8 / G
        cheb = F * K * (t.term_vector + t.term_block * (n / G) / t.m0)
        assert e["dense"] == pytest.approx(dense, rel=1e-12)
        assert e["chebyshev"] == pytest.approx(cheb, rel=1e-12)
    psi = cost.estimate(c, pc, t, operator=False)
    assert psi["dense"] == pytest.approx(F * t.expm * 8 + F * t.matvec * 4, rel=1e-12)
    assert psi["chebyshev"] == pytest.approx(F * K * t.term_vector, rel=1e-12)


def test_static_h_spreads_its_exponentials_over_the_steps():
    c = cfgmod.loads(BASE.format(stencil="3", op="false").replace("amplitude = 0.3", "amplitude = 0.0"))
    assert not c.time_dependent
    pc = precheck(c, check_resolution=False)
    t = timings(n0=64)
    e = cost.estimate(c, pc, t)
    F = 2 if c.propagator.scheme == "cfm4" else 1
    assert e["dense"] == pytest.approx(F * t.expm / c.time.steps + F * t.matvec, rel=1e-12)


@pytest.mark.parametrize("fast,expected", [("dense", "dense"), ("chebyshev", "chebyshev")])
def test_choice_follows_the_smaller_estimate(fast, expected):
    c = cfg()
    pc = precheck(c, check_resolution=False)
    t = timings(expm=1e-6, matvec=1e-9) if fast == "dense" else timings(expm=1.0, term_vector=1e-9)
    method, info = cost.choose(c, pc, "numpy", timings=t)
    assert method == expected and info["chosen"] == expected
    s = info["seconds_per_step"]
    assert (s["dense"] < s["chebyshev"]) == (expected == "dense")
    assert f"method auto -> {expected}" in info["why"]


def test_auto_on_the_cpu_leaves_out_a_method_that_cannot_fit(monkeypatch):
    """#58 item 4: with less memory than the dense method's matrices need (but what the
    matrix-free one needs), auto takes Chebyshev even where dense is estimated faster."""
    from tdse import config as config_mod
    from tdse.numerics import exponentials
    from tdse.numerics.precheck import host_bytes
    c = cfg()
    pc = precheck(c, check_resolution=False)
    fast_dense = timings(expm=1e-6, matvec=1e-9)
    assert cost.choose(c, pc, "numpy", timings=fast_dense)[0] == "dense"
    n = c.grid.n
    monkeypatch.setattr(config_mod, "available_memory",
                        lambda: host_bytes(exponentials.Dense, n, False) - 1)
    method, info = cost.choose(c, pc, "numpy", timings=fast_dense)
    assert method == "chebyshev" and info["seconds_per_step"]["dense"] is None


@pytest.mark.parametrize("fast", ["dense", "chebyshev"])
def test_with_an_absorber_auto_takes_the_faster_and_says_the_mask(fast):
    """With an absorber both methods stay candidates (the dense exponent exact, Chebyshev
    with the absorber as a Strang mask); the faster is taken, and when that is Chebyshev
    the reason names the mask's splitting error."""
    text = BASE.format(stencil='"dvr"', op="false") + "[absorber]\nwidth = 2.0\nstrength = 0.5\n"
    c = cfgmod.loads(text)
    assert not c.hermitian
    pc = precheck(c, check_resolution=False)
    t = timings(expm=1e-6, matvec=1e-9) if fast == "dense" else timings(expm=1.0, term_vector=1e-9)
    method, info = cost.choose(c, pc, "numpy", timings=t)
    assert method == fast
    s = info["seconds_per_step"]
    assert (s["dense"] < s["chebyshev"]) == (fast == "dense")
    assert ("mask" in info["why"]) == (fast == "chebyshev")


def test_resolve_leaves_explicit_methods_alone():
    for m in ("dense", "taylor", "chebyshev"):
        c = cfgmod.loads(BASE.format(stencil='"dvr"', op="false").replace('"auto"', f'"{m}"'))
        pc = precheck(c, check_resolution=False)
        c2, pc2, info = cost.resolve(c, pc, "numpy")
        assert c2 is c and pc2 is pc and info is None


def test_calibrate_times_real_kernels_and_caches():
    c = cfg(op="true")
    pc = precheck(c, check_resolution=False)
    t = cost.calibrate(c, pc, np, gpus=1)
    assert t.n0 == 64 and t.m0 == min(64, cost.M_CAL["numpy"])
    for v in (t.expm, t.zgemm, t.matvec, t.term_vector, t.term_block):
        assert 0 < v < 10 and math.isfinite(v)
    assert cost.calibrate(c, pc, np, gpus=1) is t


def test_runs_whose_plans_differ_in_theta_alone_share_the_timings(monkeypatch):
    """calibrate's cache: a run to a later t_end (theta differs in its last digits: the
    potential's range over the run) takes the timings, and so the choice, of the first; a
    plan of other steps (a larger dt: more products) is timed anew."""
    monkeypatch.setattr(cost, "_CACHE", {})
    c = cfg(op="false")
    pc = precheck(c, check_resolution=False)
    t = cost.calibrate(c, pc, np, gpus=1)
    later = precheck(c.with_value("time.t_end", 0.5), check_resolution=False)
    assert later.plan.theta != pc.plan.theta and later.plan.products == pc.plan.products
    assert cost.calibrate(c, later, np, gpus=1) is t
    coarse = c.with_value("time.dt", 0.04)
    other = precheck(coarse, check_resolution=False)
    assert other.plan.products != pc.plan.products
    assert cost.calibrate(coarse, other, np, gpus=1) is not t


def test_the_dense_exponent_is_not_timed_where_its_lower_bound_rules_it_out(monkeypatch):
    """calibrate: at N = 4096, 3-point, one column (the dense exponent's lower bound, its
    products as real GEMMs at 8x the timed complex GEMM's rate, is thousands of Chebyshev
    steps), mgemm.expm is not called and the timings say the bound is one; the choice is
    Chebyshev with the reason saying why.  At N = 64 (the DVR; n0 under DENSE_OUT_MIN_N) it
    is timed as before, whatever the timed GEMM (a test process beside this one has made a
    64 x 64 GEMM 1000x slower)."""
    import mgemm
    big = cfgmod.loads(BASE.format(stencil="3", op="false").replace("dx = 0.25", "dx = 0.00390625"))
    assert big.grid.n == 4096
    pc = precheck(big, check_resolution=False)
    real = mgemm.expm

    def refuse(*a, **k):
        raise AssertionError("the dense exponent was timed")
    monkeypatch.setattr(mgemm, "expm", refuse)
    monkeypatch.setattr(cost, "_CACHE", {})          # (timings cached per process)
    t = cost.calibrate(big, pc, np, gpus=1)
    assert not t.expm_timed and t.expm == pytest.approx(pc.plan.products * t.zgemm / 8)
    method, info = cost.choose(big, pc, "numpy", timings=t)
    assert method == "chebyshev" and "not timed" in info["why"] and info["timings"]["expm_timed"] is False
    assert "at least " in info["why"].split("by dense")[0] and "at least" not in info["why"].split("by dense")[1]
    assert info["seconds_per_step"]["dense"] > cost.DENSE_OUT * info["seconds_per_step"]["chebyshev"]
    calls = []
    monkeypatch.setattr(mgemm, "expm", lambda *a, **k: (calls.append(1), real(*a, **k))[1])
    small = cfg()
    t = cost.calibrate(small, precheck(small, check_resolution=False), np, gpus=1)
    assert t.expm_timed and calls
    # the bound is checked again for each run sharing the cached timings: where this run's
    # estimates (its own theta's Chebyshev terms) leave the dense exponent a candidate, it is
    # timed then -- once, the timed value cached for the runs after it
    calls.clear()
    cached = cost.calibrate(big, pc, np, gpus=1)
    assert not cached.expm_timed and not calls
    est = cost.estimate
    monkeypatch.setattr(cost, "estimate", lambda *a, **k: {n: (1.0 if n == "dense" else 2.0)
                                                            for n in est(*a, **k)})
    timed = cost.calibrate(big, pc, np, gpus=1)
    assert timed.expm_timed and len(calls) >= 1 and timed.zgemm == cached.zgemm
    calls.clear()
    assert cost.calibrate(big, pc, np, gpus=1) is timed and not calls


@pytest.mark.parametrize("stencil", ["3", '"dvr"'])
def test_run_with_auto_records_its_choice_and_agrees_with_that_method(tmp_path, stencil):
    c = cfg(stencil)
    res = run(c, tmp_path / "auto", backend="numpy")
    a = read(res.path)["attrs"]
    choice = json.loads(a["method_choice"])
    assert a["method"] == choice["chosen"] in ("dense", "chebyshev")
    assert set(choice["seconds_per_step"]) == {"dense", "chebyshev"}
    # the explicit method it chose, and the other one: psi agrees within a few tolerances
    psi = read(res.path)["snapshots/psi"][-1]
    for m in ("dense", "chebyshev"):
        other = dataclasses.replace(c, propagator=dataclasses.replace(c.propagator, method=m))
        r = run(other, tmp_path / m, backend="numpy")
        d = read(r.path)
        assert d["attrs"]["method"] == m and "method_choice" not in d["attrs"]
        assert np.abs(d["snapshots/psi"][-1] - psi).max() < 40 * c.propagator.tolerance * c.time.steps


def test_cli_says_what_auto_chose(tmp_path):
    from click.testing import CliRunner
    from tdse.ui.cli import main
    p = tmp_path / "in.toml"
    p.write_text(BASE.format(stencil='"dvr"', op="false"))
    r = CliRunner().invoke(main, ["run", str(p), "--out", str(tmp_path), "--backend", "numpy",
                                  "--no-plots"])
    assert r.exit_code == 0, r.output
    assert "method auto -> " in r.output and "ms/step" in r.output
