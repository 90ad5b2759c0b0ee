"""mgemm.plan: the pure planning algebra (no arrays)."""
import math

import pytest

from mgemm.plan import plan_expm, ps_products, split_products, taylor_remainder

U = 2.0 ** -53


@pytest.mark.parametrize("theta", [1e-3, 0.1, 0.7, 3.0, 20.0])
@pytest.mark.parametrize("m", [1, 4, 10, 18])
def test_remainder_matches_exp_minus_partial_sum(theta, m):
    partial = sum(theta ** k / math.factorial(k) for k in range(m + 1))
    direct = math.exp(theta) - partial
    r = taylor_remainder(theta, m)
    # direct subtraction loses ~u e^theta absolute; compare within that
    assert abs(r - direct) <= 1e-13 * r + 8 * U * math.exp(theta)
    assert r >= theta ** (m + 1) / math.factorial(m + 1)


def _ps_brute(m):
    best = None
    for q in range(1, m + 1):
        # simulate the evaluation and count products
        prods = q - 1
        r = m // q
        prods += r - (1 if m % q == 0 else 0)
        best = prods if best is None else min(best, prods)
    return best


def test_ps_products_known_values():
    # Paterson-Stockmeyer: degree 4 in 2 products, 6 in 3, 9 in 4, 12 in 5, 16 in 6
    assert [ps_products(m)[0] for m in (2, 4, 6, 9, 12, 16)] == [1, 2, 3, 4, 5, 6]
    for m in range(2, 30):
        assert ps_products(m)[0] == _ps_brute(m)


def test_split_products_small_cases():
    assert split_products(1)[0] == 0      # I + iB
    assert split_products(2)[0] == 1      # B^2
    assert split_products(3)[0] == 2      # B^2, B*(I - B^2/6)


@pytest.mark.parametrize("split", [False, True])
@pytest.mark.parametrize("unitary", [False, True])
@pytest.mark.parametrize("theta", [1e-4, 0.3, 1.0, 5.0, 100.0])
@pytest.mark.parametrize("tol", [1e-6, 1e-10, U])
def test_auto_plan_meets_tolerance_and_is_minimal(split, unitary, theta, tol):
    p = plan_expm(theta, method="auto", tolerance=tol, split=split, unitary=unitary, unit_roundoff=U)
    assert p.truncation_bound <= tol
    assert theta / 2 ** p.squarings <= 2.0
    # brute force: no scheme (PS at any degree, or a formula on the complex path) at any
    # squarings meets the tolerance with fewer products
    from mgemm.formulas import FORMULAS
    from mgemm.plan import _squared_bound
    cost = split_products if split else ps_products
    per_sq = 2 if split else 1
    for s in range(0, 40):
        if theta / 2 ** s > 2.0 or s * per_sq >= p.products:
            continue
        for m in range(1, 41):
            if cost(m)[0] + s * per_sq < p.products:
                assert _squared_bound(theta, m, s, unitary) > tol, (m, s)
        if not split:
            for name, (_, m, prods) in FORMULAS.items():
                if prods + s < p.products:
                    assert _squared_bound(theta, m, s, unitary, name) > tol, (name, s)


def test_looser_tolerance_never_costs_more():
    costs = [plan_expm(2.0, method="auto", tolerance=t, unit_roundoff=U).products
             for t in (1e-4, 1e-8, 1e-12, U)]
    assert costs == sorted(costs)


def test_taylor_plan_reports_source_bound():
    p = plan_expm(0.31, method="taylor", terms=10, tolerance=1e-10, unit_roundoff=U)
    assert p.products == 10 and p.squarings == 0
    assert p.truncation_bound == pytest.approx(taylor_remainder(0.31, 10))
    assert p.meets_tolerance
    q = plan_expm(3.0, method="taylor", terms=10, tolerance=1e-10, unit_roundoff=U)
    assert not q.meets_tolerance


@pytest.mark.parametrize("kw,msg", [
    (dict(theta=-1.0), "theta"), (dict(theta=float("nan")), "theta"),
    (dict(tolerance=0.0), "tolerance"), (dict(method="pade"), "method"),
    (dict(method="taylor", terms=0), "terms"),
])
def test_bad_parameters_rejected(kw, msg):
    args = dict(theta=1.0, method="auto", tolerance=1e-8, unit_roundoff=U)
    args.update(kw)
    theta = args.pop("theta")
    with pytest.raises(ValueError, match=msg):
        plan_expm(theta, **args)


@pytest.mark.parametrize("tol", [1e-14, 1e-10, 1e-6])
@pytest.mark.parametrize("theta", [0.05, 0.5, 2.0, 5.0, 10.0, 20.0, 50.0])
def test_claimed_bound_holds_against_the_exact_exponential(theta, tol):
    """The plan's claim against the error measured: exp(i diag(lambda)) computed by mgemm's
    products (the split path's real GEMMs, the squarings) against the exact e^(i lambda),
    lambda spread over [-theta, theta].  A diagonal matrix is where the truncation bound is
    (nearly) attained, so a bound evaluated at the wrong argument -- e.g. at theta/2, one
    squaring too few, which made expm(2i I) claim 1e-16 and err by 6.5e-13 -- fails here.
    Tolerance: 1.5 x (truncation bound + rounding estimate) + 2 u (measured: 0.3-1.0 x)."""
    import numpy as np

    import mgemm
    lam = np.linspace(-theta, theta, 7)
    A = np.diag(1j * lam)
    Uc, plan = mgemm.expm(A, return_plan=True, tolerance=tol)
    err = float(np.abs(np.diag(Uc) - np.exp(1j * lam)).max())
    assert err <= 1.5 * (plan.truncation_bound + plan.rounding_estimate) + 2 * U, \
        (err, plan.truncation_bound, plan.rounding_estimate)
    assert err <= tol + 50 * U * max(1.0, theta)   # and so within what was asked
