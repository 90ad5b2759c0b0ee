"""The exp evaluation formulas (mgemm.formulas): what polynomial each really evaluates, its
cost, and the planner's choice against an eigendecomposition."""
import math
from fractions import Fraction

import numpy as np
import pytest
import scipy.linalg

import mgemm
from mgemm import formulas
from mgemm.plan import formula_remainder, formula_table, plan_expm

U = 2.0 ** -53


@pytest.mark.parametrize("name", list(formulas.FORMULAS))
def test_realized_polynomial_is_taylor_to_its_degree(name):
    """The exact coefficients the formula evaluates equal 1/k! up to its nominal degree,
    to the published coefficients' precision (a wrong constant -- e.g. x7 divided by x3
    once in BBC's T_8 -- gives errors of order 0.1 here)."""
    _, degree, _ = formulas.FORMULAS[name]
    c = formulas.realized(name)
    for k in range(degree + 1):
        rel = abs(c[k] - Fraction(1, math.factorial(k))) * math.factorial(k)
        assert rel < 2e-15, (k, float(rel))


@pytest.mark.parametrize("name", list(formulas.FORMULAS))
def test_formula_matrix_within_its_remainder(name, rng):
    """The formula on a matrix with ||X||_1 = theta is within formula_remainder(theta) of
    scipy's expm (plus rounding: a few hundred u, the coefficients reach 63)."""
    f, _, prods = formulas.FORMULAS[name]
    n = 40
    X = rng.standard_normal((n, n)) + 1j * rng.standard_normal((n, n))
    count = [0]

    def mm(A, B, C=None, alpha=1.0, beta=0.0):
        count[0] += 1
        P = alpha * (A @ B)
        return P + beta * C if C is not None and beta else P

    for theta in (0.1, 0.5, 1.5):
        Xs = X * (theta / np.abs(X).sum(axis=0).max())
        count[0] = 0
        P = f(np, mm, Xs)
        assert count[0] == prods
        err = np.abs(P - scipy.linalg.expm(Xs)).sum(axis=0).max()
        assert err <= formula_remainder(theta, name) + 500 * U * math.exp(theta)


def test_real_gemm_counts_on_the_split_path():
    # hand counts: X = iB imaginary, X^2 real: a real x complex product is 2 GEMMs,
    # complex x complex 3 (3M); T_8: X^2 (1), A4 = X^2 (x1 X + x2 X^2) (2), A8 (3)
    assert formulas.real_gemms("bbc8") == 6
    # T_18: X^2, X^3, X^6 (1 each), two complex x complex products (3 each)
    assert formulas.real_gemms("bbc18") == 9


def test_products_before_and_after_at_tolerance_1e14():
    """The issue's table: theta 5, 20, 50, tolerance 1e-14 (unitary).  Complex path:
    Paterson-Stockmeyer alone 9/11/12 products, with the formulas 7/9/11; split path: the
    cos/sin PS stays the cheapest (12/16/18 real GEMMs; the formulas need more)."""
    before = [plan_expm(t, tolerance=1e-14, unitary=True, unit_roundoff=U, use_formulas=False)
              .products for t in (5, 20, 50)]
    after = [plan_expm(t, tolerance=1e-14, unitary=True, unit_roundoff=U) for t in (5, 20, 50)]
    assert before == [9, 11, 12]
    assert [p.products for p in after] == [7, 9, 11]
    assert all(p.formula != "ps" for p in after)
    for t, n in zip((5, 20, 50), (12, 16, 18)):
        rows = formula_table(t, tolerance=1e-14)
        split = [r for r in rows if r["path"] == "split"]
        assert min(split, key=lambda r: r["products"])["scheme"] == "ps"
        assert [r["products"] for r in split if r["scheme"] == "ps"] == [n]
        assert plan_expm(t, tolerance=1e-14, split=True, unitary=True,
                         unit_roundoff=U).products == n


@pytest.mark.parametrize("theta", [5.0, 20.0, 50.0])
def test_expm_complex_path_against_eigendecomposition(theta, rng):
    """exp(A) for a skew-Hermitian A = Q diag(i lambda) Q^H (complex entries: the complex
    path; unitary, so the planner picks a Sastre/BBC formula) against Q diag(e^(i lambda)) Q^H."""
    n = 96
    Q, _ = np.linalg.qr(rng.standard_normal((n, n)) + 1j * rng.standard_normal((n, n)))
    lam = 1j * rng.uniform(-1, 1, n)
    scale = theta / np.abs((Q * lam) @ Q.conj().T).sum(axis=0).max()
    lam = lam * scale
    A = (Q * lam) @ Q.conj().T
    ref = (Q * np.exp(lam)) @ Q.conj().T
    E, plan = mgemm.expm(A, tolerance=1e-14, return_plan=True)
    assert plan.path == "complex" and plan.unitary and plan.formula != "ps"
    err = np.linalg.norm(E - ref, 2)
    # truncation <= tolerance; rounding ~ u * n * 2^s (each squaring doubles it)
    assert err <= 1e-14 + 4 * n * U * 2 ** plan.squarings, (plan.formula, err)
