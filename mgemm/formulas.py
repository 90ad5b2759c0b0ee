"""Evaluation formulas for polynomial approximants of exp(X), written once against an
array namespace ``ns`` (NumPy, CuPy, :class:`mgemm.dist.Layout`) and a product ``mm``.

* Paterson-Stockmeyer (:func:`powers`, :func:`ps`): any polynomial, here the Taylor
  polynomial T_m; q - 1 + floor(m/q) products (:func:`mgemm.plan.ps_products`).
* Bader, Blanes & Casas, "Computing the matrix exponential with an optimized Taylor
  polynomial approximation", Mathematics 7 (2019) 1174: T_8 in 3 products, T_12 in 4,
  T_18 in 5 (:func:`bbc8`, :func:`bbc12`, :func:`bbc18`; torch.linalg.matrix_exp uses them).
* Sastre, Ibanez & Defez, "Boosting the computation of the matrix exponential", Appl.
  Math. Comput. 340 (2019) 206: "15+", a degree-16 polynomial equal to T_15 up to its
  coefficients' rounding, in 4 products (:func:`sastre16`).

The coefficients of BBC and Sastre come from solving nonlinear equations and are
published to ~16 digits, so the polynomial a formula really evaluates differs from T_m
in its low coefficients by ~1e-16 and above degree m by design.  :func:`realized`
therefore runs the *same formula code* on exact rational polynomials (:class:`Poly`) and
returns the coefficients it evaluates; :func:`mgemm.plan.formula_remainder` bounds
||exp(X) - p(X)|| <= sum_k |1/k! - c_k| theta^k from them -- a rigorous bound that does not
trust the formula's claimed degree.  :func:`real_gemms` counts what a formula would cost
in real GEMMs on the split path (X = iB, B real), for the planner's comparison.
"""
from __future__ import annotations

import math
from fractions import Fraction
from functools import lru_cache

__all__ = ["FORMULAS", "powers", "ps", "bbc8", "bbc12", "bbc18", "sastre16", "Poly",
           "realized", "real_gemms"]


def _eye(ns, X):
    return ns.eye(X.shape[0], dtype=X.dtype)


def powers(mm, eye, X, q):
    """[I, X, X^2, ..., X^q] (q - 1 products, X^k = X X^(k-1): the left operand is always
    X, so the band layout gathers it once)."""
    pows = [eye, X]
    for _ in range(2, q + 1):
        pows.append(mm(X, pows[-1]))
    return pows


def ps(mm, pows, coeffs):
    """Paterson-Stockmeyer: sum_k coeffs[k] X^k from pows = [I, X, ..., X^q], Horner in X^q."""
    m, q = len(coeffs) - 1, len(pows) - 1
    if m == 0 or q == 0:
        return coeffs[0] * pows[0]

    def block(j):
        out = coeffs[j * q] * pows[0]
        for i in range(1, q):
            if j * q + i <= m:
                out += coeffs[j * q + i] * pows[i]
        return out

    r = m // q
    if m % q == 0:  # the top block is coeffs[m] I: fold it in without a product
        Y = block(r - 1) + coeffs[m] * pows[q]
        start = r - 2
    else:
        Y = block(r)
        start = r - 1
    for j in range(start, -1, -1):
        Y = mm(pows[q], Y, block(j), 1.0, 1.0)
    return Y


def _combine(row, mats):
    out = row[0] * mats[0]
    for c, M in zip(row[1:], mats[1:]):
        if c:
            out += c * M
    return out


# -- Bader, Blanes & Casas (2019): closed form for m = 8 (note x7 = (89 - sqrt 177) /
# (5040 x3^2): a copy dividing by x3 once evaluates a polynomial only 4th-order accurate,
# which :func:`realized` exposes), solved coefficients for m = 12, 18
_S177 = math.sqrt(177.0)
_X3 = 2.0 / 3.0
_BBC8 = dict(x1=_X3 * (1 + _S177) / 88, x2=_X3 * (1 + _S177) / 352, x3=_X3,
             x4=(-271 + 29 * _S177) / (315 * _X3), x5=(-11 + 11 * _S177) / (1260 * _X3),
             x6=(-99 + 11 * _S177) / (5040 * _X3), x7=(89 - _S177) / (5040 * _X3 ** 2),
             y2=(857 - 58 * _S177) / 630)

_BBC12 = (  # rows: B_0..B_3 as combinations of I, X, X^2, X^3
    (9.0198e-16, 0.46932117595418237389, -0.20099424927047284052, -0.04623946134063071740),
    (5.31597895759871264183, 1.19926790417132231573, 0.01179296240992997031,
     0.01108844528519167989),
    (0.18188869982170434744, 0.05502798439925399070, 0.09351590770535414968,
     0.00610700528898058230),
    (-2.0861320e-13, -0.13181061013830184015, -0.02027855540589259079,
     -0.00675951846863086359))

_BBC18 = (  # rows: B_0..B_4 as combinations of I, X, X^2, X^3, X^6
    (0.0, -1.00365581030144618291e-01, -8.02924648241156932449e-03,
     -8.92138498045729985177e-04, 0.0),
    (0.0, 3.97849749499645077844e-01, 1.36783778460411720168e+00,
     4.98289622525382669416e-01, -6.37898194594723280150e-04),
    (-1.09676396052962061844e+01, 1.68015813878906206114e+00, 5.71779846478865511061e-02,
     -6.98210122488052056106e-03, 3.34975017086070470649e-05),
    (-9.04316832390810593223e-02, -6.76404519071381882256e-02, 6.75961301770459654925e-02,
     2.95552570429315521194e-02, -1.39180257516060693404e-05),
    (0.0, 0.0, -9.23364619367118555360e-02, -1.69364939002081722752e-02,
     -1.40086798182036094347e-05))

# Sastre, Ibanez & Defez (2019), the "15+" approximant (c_1 .. c_16 of the paper)
_SASTRE16 = (4.018761610201036e-4, 2.945531440279683e-3, -8.709066576837676e-3,
             4.017568440673568e-1, 3.230762888122312e-2, 5.768988513026145e0,
             2.338576034271299e-2, 2.381070373870987e-1, 2.224209172496374e0,
             -5.792361707073261e0, -4.130276365929783e-2, 1.040801735231354e1,
             -6.331712455883370e1, 3.484665863364574e-1, 1.0, 1.0)


def bbc8(ns, mm, X):
    """T_8(X) in 3 products: A4 = X^2 (x1 X + x2 X^2), A8 = (x3 X^2 + A4)(x4 I + x5 X +
    x6 X^2 + x7 A4), T_8 = I + X + y2 X^2 + A8 (BBC 2019)."""
    c = _BBC8
    eye = _eye(ns, X)
    A2 = mm(X, X)
    A4 = mm(A2, c["x1"] * X + c["x2"] * A2)
    A8 = mm(c["x3"] * A2 + A4, _combine((c["x4"], c["x5"], c["x6"], c["x7"]), (eye, X, A2, A4)))
    return eye + X + c["y2"] * A2 + A8


def bbc12(ns, mm, X):
    """T_12(X) in 4 products: B_i from I, X, X^2, X^3; A6 = B_2 + B_3^2; B_0 + (B_1 + A6) A6."""
    P = powers(mm, _eye(ns, X), X, 3)
    B = [_combine(row, P) for row in _BBC12]
    A6 = mm(B[3], B[3], B[2], 1.0, 1.0)
    return mm(B[1] + A6, A6, B[0], 1.0, 1.0)


def bbc18(ns, mm, X):
    """T_18(X) in 5 products: B_i from I, X, X^2, X^3, X^6; A9 = B_0 B_4 + B_3;
    B_1 + (B_2 + A9) A9."""
    P = powers(mm, _eye(ns, X), X, 3)
    P.append(mm(P[3], P[3]))
    B = [_combine(row, P) for row in _BBC18]
    A9 = mm(B[0], B[4], B[3], 1.0, 1.0)
    return mm(B[2] + A9, A9, B[1], 1.0, 1.0)


def sastre16(ns, mm, X):
    """Sastre-Ibanez-Defez "15+" in 4 products: y02 = X^2 (c1 X^2 + c2 X);
    y12 = (y02 + c3 X^2 + c4 X)(y02 + c5 X^2) + c6 y02 + c7 X^2;
    y22 = (y12 + c8 X^2 + c9 X)(y12 + c10 y02 + c11 X) + c12 y12 + c13 y02 + c14 X^2
    + c15 X + c16 I."""
    c = (None,) + _SASTRE16
    eye = _eye(ns, X)
    A2 = mm(X, X)
    y02 = mm(A2, c[1] * A2 + c[2] * X)
    y12 = mm(y02 + c[3] * A2 + c[4] * X, y02 + c[5] * A2, c[6] * y02 + c[7] * A2, 1.0, 1.0)
    rest = c[12] * y12 + c[13] * y02 + c[14] * A2 + c[15] * X + c[16] * eye
    return mm(y12 + c[8] * A2 + c[9] * X, y12 + c[10] * y02 + c[11] * X, rest, 1.0, 1.0)


#: name -> (formula, nominal Taylor degree, products)
FORMULAS = {"bbc8": (bbc8, 8, 3), "bbc12": (bbc12, 12, 4), "sastre16": (sastre16, 15, 4),
            "bbc18": (bbc18, 18, 5)}


# -- exact algebra of scalar polynomials, to see what a formula really evaluates
class Poly:
    """A polynomial in one variable with exact rational coefficients, supporting what the
    formulas do with matrices (+, -, scalar *, /, +=, shape/dtype)."""

    shape = (1, 1)
    dtype = None

    def __init__(self, coeffs):
        self.c = [Fraction(x) for x in coeffs]

    @staticmethod
    def _coerce(o):
        return o if isinstance(o, Poly) else Poly([o])

    def _add(self, o, sign):
        o = self._coerce(o)
        n = max(len(self.c), len(o.c))
        a = self.c + [Fraction(0)] * (n - len(self.c))
        b = o.c + [Fraction(0)] * (n - len(o.c))
        return Poly([x + sign * y for x, y in zip(a, b)])

    def __add__(self, o):
        return self._add(o, 1)

    __radd__ = __add__
    __iadd__ = __add__

    def __sub__(self, o):
        return self._add(o, -1)

    def __mul__(self, s):
        if isinstance(s, Poly):
            raise TypeError("use mm for products")
        return Poly([x * Fraction(s) for x in self.c])

    __rmul__ = __mul__

    def __truediv__(self, s):
        return Poly([x / Fraction(s) for x in self.c])

    def copy(self):
        return Poly(self.c)

    def times(self, o):
        out = [Fraction(0)] * (len(self.c) + len(o.c) - 1)
        for i, a in enumerate(self.c):
            if a:
                for j, b in enumerate(o.c):
                    out[i + j] += a * b
        return Poly(out)


class _PolyNS:
    @staticmethod
    def eye(n, dtype=None):
        return Poly([1])


def _poly_mm(X, Y, C=None, alpha=1.0, beta=0.0):
    P = X.times(Y) * alpha
    return P + C * beta if C is not None and beta else P


@lru_cache(maxsize=None)
def realized(name):
    """The exact coefficients (Fractions, degree 0 up) of the polynomial that formula
    ``name`` evaluates, with its floating-point coefficients taken as exact."""
    formula = FORMULAS[name][0]
    return tuple(formula(_PolyNS, _poly_mm, Poly([0, 1])).c)


class _Parts:
    """Which real parts a matrix of the split path has when X = iB: even powers of X are
    real, odd ones imaginary (B real).  Counts the real GEMMs of each product: one per
    pair of parts, three (3M) for complex times complex."""

    shape = (1, 1)
    dtype = None

    def __init__(self, parities, counter):
        self.p, self.n = frozenset(parities), counter

    def _add(self, o):
        return _Parts(self.p | o.p, self.n) if isinstance(o, _Parts) else self

    __add__ = __radd__ = __iadd__ = __sub__ = _add

    def __mul__(self, s):
        return _Parts(set() if s == 0 else self.p, self.n)

    __rmul__ = __truediv__ = __mul__


def real_gemms(name):
    """Real GEMMs formula ``name`` needs on the split path (X = iB, B real)."""
    counter = [0]

    class NS:
        @staticmethod
        def eye(n, dtype=None):
            return _Parts({0}, counter)

    def mm(X, Y, C=None, alpha=1.0, beta=0.0):
        counter[0] += 3 if len(X.p) == 2 and len(Y.p) == 2 else len(X.p) * len(Y.p)
        out = _Parts({(a + b) % 2 for a in X.p for b in Y.p}, counter)
        return out._add(C) if C is not None else out

    FORMULAS[name][0](NS, mm, _Parts({1}, counter))
    return counter[0]
