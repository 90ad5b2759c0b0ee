"""The local error's leading terms as words in the letters a_0, a_1, ... (the free algebra of
:mod:`tdse.numerics.local_error`'s docstring), and the order in which an estimate makes them.

:func:`leading_term` multiplies out the exact flow's Dyson series and the scheme's product of
exponentials (Blanes, Casas, Oteo & Ros, Phys. Rep. 470, 151 (2009)) and returns
C_(p+1) = S_(p+1) - E_(p+1) as {word: coefficient}; :func:`estimator_terms` the terms an
estimate evaluates where an absorber is applied as masks.  Two ways to make sum_w c_w w u:

- :func:`suffixes`: every suffix of every word, each a letter times a shorter one (the GPU's
  one-kernel estimate, :data:`tdse.backends.cupy.words.WORDS`, and the velocity gauge, whose
  letters a_k = -i (d^k V/dt^k + d^k A/dt^k p) do not commute);
- :func:`horner_plan`, where every letter but a_0 = -i H is diagonal (the length gauge: a_k =
  -i d^k V/dt^k, the absorber's b = -W), so that those letters commute: adjacent ones merge
  into one diagonal factor, and the sum is nested as a Horner scheme in H, sum_d D_d H(R_d u)
  (+ the words without H), each H(...) and each nested sum made once (kept up to a scalar
  factor).  cfm4's 15 words take 6 products with H instead of 14 (with an absorber's masks
  9 instead of 18); the same sums, added in another order.
"""
from __future__ import annotations

import math

from . import schemes

__all__ = ["leading_term", "estimator_terms", "suffixes", "horner_plan", "ABSORBER"]


def _mul(a, b):
    out = {}
    for wa, ca in a.items():
        for wb, cb in b.items():
            out[wa + wb] = out.get(wa + wb, 0.0) + ca * cb
    return out


def _add(a, b, s=1.0):
    out = dict(a)
    for w, c in b.items():
        out[w] = out.get(w, 0.0) + s * c
    return out


def _series_mul(X, Y, P):
    Z = [{} for _ in range(P + 1)]
    for i in range(P + 1):
        for j in range(P + 1 - i):
            if X[i] and Y[j]:
                Z[i + j] = _add(Z[i + j], _mul(X[i], Y[j]))
    return Z


def _series_exp(X, P):
    """exp(X) to h^P (X without an h^0 part)."""
    out = [{(): 1.0}] + [{} for _ in range(P)]
    term = [{(): 1.0}] + [{} for _ in range(P)]
    for n in range(1, P + 1):
        term = [{w: c / n for w, c in e.items()} for e in _series_mul(term, X, P)]
        out = [_add(o, t) for o, t in zip(out, term)]
    return out


#: the letter of the absorber, b = -W (constant in time, weight h)
ABSORBER = -1


def _exact(P, absorber):
    """E(h) to h^P: E_0 = 1, (n+1) E_(n+1) = sum_k a_k / k! E_(n-k) [+ b E_n]."""
    E = [{(): 1.0}] + [{} for _ in range(P)]
    for n in range(P):
        acc = {}
        for k in range(n + 1):
            acc = _add(acc, _mul({(k,): 1.0 / math.factorial(k)}, E[n - k]))
        if absorber:
            acc = _add(acc, _mul({(ABSORBER,): 1.0}, E[n]))
        E[n + 1] = {w: c / (n + 1) for w, c in acc.items()}
    return E


def _scheme(sc, P, absorber):
    """S(h) to h^P: exp(h B_K) ... exp(h B_1), the first factor acting first; an absorber
    ``"generator"`` adds h s_m b to each exponent, ``"masks"`` puts exp(h s_m b / 2) on both
    sides of each (:attr:`tdse.numerics.exponentials.Exponential.absorber_masks`)."""
    S = [{(): 1.0}] + [{} for _ in range(P)]
    for s_m, row in zip(sc.scales(), sc.factors):
        X = [{} for _ in range(P + 1)]
        for k in range(P):
            c = sum(w * cj ** k for w, cj in zip(row, sc.nodes)) / math.factorial(k)
            if c:
                X[k + 1] = {(k,): c}
        if absorber == "generator":
            X[1] = _add(X[1], {(ABSORBER,): s_m})
        F = _series_exp(X, P)
        if absorber == "masks":
            M = [{} for _ in range(P + 1)]
            M[1] = {(ABSORBER,): 0.5 * s_m}
            M = _series_exp(M, P)
            F = _series_mul(M, _series_mul(F, M, P), P)
        S = _series_mul(F, S, P)
    return S


#: coefficients below this are the series' rounding (the exact ones are multiples of 1/8640)
_ZERO = 1e-13


def leading_term(scheme, absorber=None) -> dict:
    """The local error's terms {n: C_n} of h^n, n <= p + 1 (module docstring), C_n as
    {word: coefficient}, a word (k_1, ..., k_n) the product a_k1 ... a_kn (a_kn acting
    first; the letter :data:`ABSORBER` is b = -W).  Without an absorber only n = p + 1;
    with one also the lower orders of its splitting (``absorber="masks"``: h^3).  Raises
    if a lower order without b does not vanish (the scheme's tables are wrong)."""
    sc = schemes.get(scheme) if isinstance(scheme, str) else scheme
    P = sc.order + 1
    E, S = _exact(P, absorber), _scheme(sc, P, absorber)
    out = {}
    for n in range(P + 1):
        C = {w: c for w, c in _add(S[n], E[n], -1.0).items() if abs(c) > _ZERO}
        if n < P and any(ABSORBER not in w for w in C):
            raise ValueError(f"scheme {sc.name!r} is not of order {sc.order}: its h^{n} terms differ")
        if C:
            out[n] = C
    return out


def estimator_terms(scheme, absorber=None) -> dict:
    """The terms :class:`LocalError` evaluates: :func:`leading_term`'s, where an absorber's
    masks make lower orders (their splitting error, h^3 for Strang) only the lowest order
    of the words with b and, at h^(p+1), the words without it (the scheme's own leading
    term, all of the error where W = 0): the higher orders of the absorbing layers' error
    left out (cfm4: 20 of 116 words)."""
    T = leading_term(scheme, absorber)
    if absorber != "masks":
        return T
    P, low = max(T), min(T)
    if low == P:              # midpoint: the splitting's order is the scheme's
        return T
    out = {low: T[low]}
    own = {w: c for w, c in T[P].items() if ABSORBER not in w}
    if own:
        out[P] = _add(out.get(P, {}), own)
    return out




def suffixes(terms) -> list:
    """Every suffix of the words of ``terms`` (:func:`estimator_terms`), shorter first: what
    an estimate makes, each a letter times a shorter one."""
    return sorted({w[i:] for C in terms.values() for w in C for i in range(len(w))}, key=len)




def _canonical(word) -> tuple:
    """``word`` with each run of diagonal letters (all but 0) merged into one sorted tuple."""
    out, run = [], []
    for k in word:
        if k == 0:
            if run:
                out.append(tuple(sorted(run)))
                run = []
            out.append(0)
        else:
            run.append(k)
    if run:
        out.append(tuple(sorted(run)))
    return tuple(out)


def _key(P) -> tuple:
    """(P up to a scalar: its words with coefficients over the first's, that scalar)."""
    items = sorted(P.items(), key=lambda t: repr(t[0]))
    c0 = items[0][1]
    return tuple((w, round(c / c0, 10)) for w, c in items), c0


class _Horner:
    def __init__(self, later=frozenset()):
        self.ops, self.memo = [], {}
        self.later = later      # single words whose a_0 w u a plan makes anyway (ev_h)

    def ev(self, P):
        """(i, s) with P u = s vec_i (vec_0 = u), the ops that make vec_i appended."""
        P = {w: c for w, c in P.items() if abs(c) > _ZERO}
        if set(P) == {()}:
            return 0, P[()]
        k, c0 = _key(P)
        if ("P", k) in self.memo:
            return self.memo[("P", k)], c0
        terms, groups = [], {}
        for w, c in P.items():
            if 0 not in w:                      # a diagonal factor of u (or u)
                terms.append((c, w[0] if w else (), 0))
                continue
            d, rest = ((), w[1:]) if w[0] == 0 else (w[0], w[2:])
            g = groups.setdefault(d, {})
            g[rest] = g.get(rest, 0.0) + c
        for d, R in groups.items():
            j, s = self.ev_h(R)
            terms.append((s, d, j))
        self.ops.append(("sum", [(c / c0, d, i) for c, d, i in terms]))
        self.memo[("P", k)] = len(self.ops)
        return len(self.ops), c0

    def ev_h(self, R):
        """(j, s) with a_0 R u = s vec_j."""
        R = {w: c for w, c in R.items() if abs(c) > _ZERO}
        if set(R) == {()}:
            k, c0 = (((), 1.0),), R[()]
        else:
            k, c0 = _key(R)
        if ("H", k) in self.memo:
            return self.memo[("H", k)], c0
        missing = [w for w in R if ("H", _key({w: 1.0})[0]) not in self.memo]
        if len(R) > 1 and len(missing) <= 1 and all(_key({w: 1.0})[0] in self.later for w in missing):
            # a_0 R u as the sum of its words' a_0 w u, all made already but one at most,
            # which a later word takes too: as many products as a_0 (R u) here, one fewer
            # later (cfm4 with an absorber's masks: 9 -> 8)
            parts = [self.ev_h({w: c}) for w, c in R.items()]
            self.ops.append(("sum", [(s / c0, (), j) for j, s in parts]))
            self.memo[("H", k)] = len(self.ops)
            return len(self.ops), c0
        i, s = self.ev(R)
        self.ops.append(("H", i))
        self.memo[("H", k)] = len(self.ops)
        return len(self.ops), s


def horner_plan(terms) -> tuple:
    """(ops, outs) that make each order's C_n u of ``terms`` (:func:`estimator_terms`) where
    every letter but 0 is diagonal (module docstring): ``ops`` in order, op i making vec_(i+1)
    from earlier ones (vec_0 = u): ("H", j) is a_0 vec_j; ("sum", [(c, d, j), ...]) is
    sum c D_d vec_j, D_d the product of the diagonal letters of the tuple d (() for 1); and
    ``outs`` [(n, s, i)] with C_n u = s vec_i."""
    def plan(later):
        h, outs = _Horner(later), []
        for n, C in terms.items():
            P = {}
            for w, c in C.items():
                cw = _canonical(w)
                P[cw] = P.get(cw, 0.0) + c
            i, s = h.ev(P)
            outs.append((n, s, i))
        return h, outs
    first, outs = plan(frozenset())
    # a product of a sum whose words' products the plan makes apart too: made as their sum
    later = frozenset(k[1] for k in first.memo if k[0] == "H" and len(k[1]) == 1)
    second, outs2 = plan(later)
    if sum(op == "H" for op, _ in second.ops) < sum(op == "H" for op, _ in first.ops):
        return second.ops, outs2
    return first.ops, outs
