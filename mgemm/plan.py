"""Plans as plain data: what to compute, decided without touching any GPU.

Two kinds of plan live here (STYLE.md item 1):

* :class:`ExpmPlan` -- which polynomial, degree and number of squarings the matrix
  exponent uses, with its error bounds (:func:`plan_expm`);
* :class:`Schedule` -- the band-based multi-GPU GEMM of Choi, Nikolskiy & Stegailov
  (2020, Alg. 1-2, Fig. 3) as a list of operations per device and stream, with their
  dependencies (:func:`plan_gemm`, in :mod:`mgemm.schedule`).

Nothing in this module imports CuPy; it is testable and printable on any CPU.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from fractions import Fraction
from functools import lru_cache

from .formulas import FORMULAS, real_gemms, realized

__all__ = [
    "ExpmPlan",
    "plan_expm",
    "taylor_remainder",
    "ps_products",
    "split_products",
    "formula_remainder",
    "formula_table",
]

#: Highest degree / squarings the ``auto`` search considers.
_MAX_DEGREE = 40
_MAX_SQUARINGS = 64
#: ``auto`` scales A until ||A/2^s|| <= this: the Taylor terms then peak below e^2, so
#: rounding stays within ~8 u per evaluation (thesis summary Fig. 5 shows what happens
#: when they are allowed to grow).
_MAX_SCALED_NORM = 2.0


def taylor_remainder(theta: float, degree: int) -> float:
    """R_m(theta) = sum_{k>m} theta^k / k!  -- bounds ||exp(A) - T_m(A)|| for ||A|| <= theta.

    Summed term by term (all positive, no cancellation); used for eq. (2) of the thesis
    summary (the plain Taylor series truncated after the A^m term).
    """
    if theta < 0 or not math.isfinite(theta):
        raise ValueError(f"theta must be finite and >= 0, got theta={theta!r}")
    if theta == 0.0:
        return 0.0
    # first neglected term theta^(m+1)/(m+1)!, in logs to avoid overflow
    log_term = (degree + 1) * math.log(theta) - math.lgamma(degree + 2)
    if log_term < -745:
        return 0.0
    term = math.exp(log_term)
    total = 0.0
    k = degree + 1
    while term > 1e-300:
        total += term
        k += 1
        term *= theta / k
        if term < total * 1e-18:
            break
    return total


@lru_cache(maxsize=None)
def _formula_errors(name: str):
    """(|1/k! - c_k| for k <= d, d) of the polynomial formula ``name`` really evaluates."""
    c = realized(name)
    return tuple(float(abs(Fraction(1, math.factorial(k)) - ck)) for k, ck in enumerate(c)), len(c) - 1


def formula_remainder(theta: float, name: str) -> float:
    """Bound on ||exp(X) - p(X)|| for ||X|| <= theta, p the polynomial formula ``name``
    (:mod:`mgemm.formulas`) evaluates: sum_k |1/k! - c_k| theta^k over its realized
    coefficients plus the Taylor tail beyond its degree (exact algebra; the 1 + 1e-12
    covers rounding the exact rationals to floats)."""
    errs, d = _formula_errors(name)
    low = sum(e * theta ** k for k, e in enumerate(errs) if e)
    return (low + taylor_remainder(theta, d)) * (1 + 1e-12)


def ps_products(degree: int) -> tuple[int, int]:
    """Fewest products for a degree-``degree`` polynomial by Paterson-Stockmeyer.

    Powers X^2..X^q cost q-1 products; Horner in X^q over r = floor(m/q) blocks costs r
    products, one fewer when q divides m (the top block is a multiple of I).
    Returns ``(products, q)``.
    """
    if degree <= 1:
        return 0, 1
    best = None
    for q in range(1, degree + 1):
        r = degree // q
        p = (q - 1) + r - (1 if degree % q == 0 else 0)
        if best is None or p < best[0]:
            best = (p, q)
    return best


def split_products(degree: int) -> tuple[int, int]:
    """Real products for the cos/sin split of T_m(iB), B real (see :mod:`mgemm.expm`).

    C = B^2 (1 product); cos part: polynomial of degree floor(m/2) in C; sin part:
    B * (polynomial of degree floor((m-1)/2) in C), sharing the powers C^2..C^q.
    Returns ``(products, q)``.
    """
    if degree <= 1:
        return 0, 1  # I + iB
    dc, ds = degree // 2, (degree - 1) // 2
    best = None
    for q in range(1, max(dc, 1) + 1):
        horner = 0
        for d in (dc, ds):
            if d >= 1:
                horner += d // q - (1 if d % q == 0 else 0)
        # B^2, powers C^2..C^q, Horner steps, and B*S unless S is a multiple of I
        p = 1 + (q - 1) + horner + (1 if ds >= 1 else 0)
        if best is None or p < best[0]:
            best = (p, q)
    return best


@dataclass(frozen=True)
class ExpmPlan:
    """What :func:`mgemm.expm` will compute, and why it is accurate enough.

    ``path``: ``"complex"`` evaluates the polynomial in A itself (any dtype);
    ``"split"`` is used when A = iB with B real: every product is a real GEMM
    (cos/sin of B).  ``products`` counts GEMM calls of that path (real GEMMs for
    ``split``).  ``truncation_bound`` bounds the error of the result from truncating
    the series (after the squarings), in the 1-norm (2-norm for ``unitary``).
    """

    method: str
    path: str
    degree: int
    squarings: int
    ps_block: int
    products: int
    theta: float
    tolerance: float
    unitary: bool
    truncation_bound: float
    rounding_estimate: float
    formula: str = "ps"

    @property
    def meets_tolerance(self) -> bool:
        return max(self.truncation_bound, self.rounding_estimate) <= self.tolerance

    def as_dict(self) -> dict:
        d = asdict(self)
        d["meets_tolerance"] = self.meets_tolerance
        return d

    def explain(self) -> str:
        scaling = f", {self.squarings} squarings" if self.squarings else ""
        kind = "recurrence a_k = (1/k) A a_(k-1)" if self.method == "taylor" else (
            f"Paterson-Stockmeyer, block {self.ps_block}" if self.formula == "ps" else
            f"{_FORMULA_NAMES[self.formula]} formula")
        return (f"{self.method}: Taylor degree {self.degree}{scaling} ({kind}); "
                f"{self.products} {'real ' if self.path == 'split' else ''}GEMMs; "
                f"theta={self.theta:.4g}, truncation bound {self.truncation_bound:.3g}, "
                f"rounding ~{self.rounding_estimate:.3g}, tolerance {self.tolerance:.3g}")


_FORMULA_NAMES = {"bbc8": "Bader-Blanes-Casas T_8", "bbc12": "Bader-Blanes-Casas T_12",
                  "bbc18": "Bader-Blanes-Casas T_18", "sastre16": "Sastre-Ibanez-Defez 15+"}


def _squared_bound(theta: float, degree: int, s: int, unitary: bool, formula="ps") -> float:
    """Error bound of p(A/2^s)^(2^s) against exp(A) for ||A|| <= theta, p = T_m (``ps``)
    or the polynomial a formula evaluates (:func:`formula_remainder`).

    ||X^n - Y^n|| <= n ||X - Y|| max(||X||, ||Y||)^(n-1), n = 2^s.  In general
    ||X||, ||Y|| <= e^(theta/n); for skew-Hermitian A (``unitary``) X is unitary and
    ||Y||_2 <= 1 + R.  Computed in logs so large s does not overflow.
    """
    n = 2.0 ** s
    x = theta / n
    if x > 0 and math.log(n) + (degree + 1) * math.log(x) - math.lgamma(degree + 2) > 50:
        return math.inf  # the first neglected term alone is huge: skip the sum
    r = taylor_remainder(x, degree) if formula == "ps" else formula_remainder(x, formula)
    if r == 0.0:
        return 0.0
    log_growth = (n - 1) * (math.log1p(r) if unitary else theta / n)
    val = math.log(n) + math.log(r) + log_growth
    return math.exp(val) if val < 700 else math.inf


def _rounding_estimate(theta: float, s: int, u: float, unitary: bool) -> float:
    """Rounding: terms of the series peak near e^theta (thesis summary Fig. 5), and each
    squaring can double the error already present."""
    base = u * math.exp(min(theta / 2.0 ** s, 700.0))
    return base * (2.0 ** s) if s else base


def plan_expm(theta: float, *, method: str = "auto", tolerance: float, terms: int = 10,
              split: bool = False, unitary: bool = False, unit_roundoff: float,
              use_formulas: bool = True) -> ExpmPlan:
    """Choose the degree and squarings of the matrix exponent for ||A|| <= theta.

    ``taylor``: the thesis' algorithm (summary eqs. 2-3): T_k(A) with k = ``terms``,
    no scaling, k products by the recurrence a_k = (1/k) A a_(k-1).

    ``auto``: scaling and squaring of a truncated Taylor polynomial evaluated by
    Paterson-Stockmeyer; among all (degree, squarings) whose bound
    (:func:`_squared_bound`) meets ``tolerance``, the one with the fewest products
    (ties: the smaller bound).  On the complex path the candidates are Paterson-Stockmeyer
    for every degree and (``use_formulas``) the Bader-Blanes-Casas T_8/T_12/T_18 and
    Sastre 15+ formulas (:mod:`mgemm.formulas`), each bounded through the coefficients it
    really evaluates (:func:`formula_remainder`), not a table of precomputed thetas.  On
    the split path (A = iB, B real) the cos/sin Paterson-Stockmeyer in B^2 stays: the
    formulas mix real and imaginary parts and cost more real GEMMs there
    (:func:`formula_table` shows the comparison).
    """
    if not (theta >= 0 and math.isfinite(theta)):
        raise ValueError(f"theta must be finite and >= 0, got theta={theta!r}")
    if not (tolerance > 0 and math.isfinite(tolerance)):
        raise ValueError(f"tolerance must be finite and > 0, got tolerance={tolerance!r}")
    path = "split" if split else "complex"
    if method == "taylor":
        if not (isinstance(terms, int) and terms >= 1):
            raise ValueError(f"terms must be an integer >= 1, got terms={terms!r}")
        return ExpmPlan(method, path, terms, 0, 0, terms, theta, tolerance, unitary,
                        taylor_remainder(theta, terms),
                        _rounding_estimate(theta, 0, unit_roundoff, unitary))
    if method != "auto":
        raise ValueError(f"method must be 'taylor' or 'auto', got method={method!r}")
    cost_fn = split_products if split else ps_products
    per_squaring = 2 if split else 1
    formulas = () if split or not use_formulas else tuple(FORMULAS)
    best = None
    for s in range(_MAX_SQUARINGS + 1):
        if best is not None and s * per_squaring > best[0]:
            break
        if theta / 2.0 ** s > _MAX_SCALED_NORM:
            continue
        for m in range(1, _MAX_DEGREE + 1):
            bound = _squared_bound(theta, m, s, unitary)
            if bound <= tolerance:
                p, q = cost_fn(m)
                # a higher degree costs more, unless PS gives it for the same products
                while m < _MAX_DEGREE and cost_fn(m + 1)[0] == p:
                    m += 1
                    q = cost_fn(m)[1]
                    bound = _squared_bound(theta, m, s, unitary)
                cost = p + s * per_squaring
                if best is None or (cost, bound) < best[:2]:
                    best = (cost, bound, m, s, q, "ps")
                break
        for name in formulas:
            _, m, p = FORMULAS[name]
            bound = _squared_bound(theta, m, s, unitary, name)
            cost = p + s
            if bound <= tolerance and (best is None or (cost, bound) < best[:2]):
                best = (cost, bound, m, s, 0, name)
    if best is None:  # tolerance below what the search reaches: take the most accurate
        m, s = _MAX_DEGREE, max(0, math.ceil(math.log2(max(theta, 1e-300))) + 1)
        p, q = cost_fn(m)
        best = (p + s * per_squaring, _squared_bound(theta, m, s, unitary), m, s, q, "ps")
    cost, bound, m, s, q, name = best
    return ExpmPlan("auto", path, m, s, q, cost, theta, tolerance, unitary, bound,
                    _rounding_estimate(theta, s, unit_roundoff, unitary), name)


def formula_table(theta: float, *, tolerance: float, unitary: bool = True) -> list[dict]:
    """Every evaluation scheme's cheapest (squarings, products, bound) meeting
    ``tolerance`` for ||A|| <= theta, on both paths: Paterson-Stockmeyer and the formulas
    of :mod:`mgemm.formulas`.  Products are GEMM calls on the complex path and real GEMMs
    on the split path (A = iB; a formula there needs its products on real/imaginary
    parts, :func:`mgemm.formulas.real_gemms`: complex x complex by 3M).  The planner uses
    the cheapest of each path; this table is the comparison behind that choice."""
    rows = []
    for path in ("complex", "split"):
        per_sq = 2 if path == "split" else 1
        plan = plan_expm(theta, tolerance=tolerance, split=path == "split", unitary=unitary,
                         unit_roundoff=2.0 ** -53, use_formulas=False)
        rows.append(dict(path=path, scheme="ps", degree=plan.degree, squarings=plan.squarings,
                         products=plan.products, bound=plan.truncation_bound))
        for name, (_, m, p) in FORMULAS.items():
            cost_p = real_gemms(name) if path == "split" else p
            for s in range(_MAX_SQUARINGS + 1):
                if theta / 2.0 ** s > _MAX_SCALED_NORM:
                    continue
                bound = _squared_bound(theta, m, s, unitary, name)
                if bound <= tolerance:
                    rows.append(dict(path=path, scheme=name, degree=m, squarings=s,
                                     products=cost_p + per_sq * s, bound=bound))
                    break
    return rows
