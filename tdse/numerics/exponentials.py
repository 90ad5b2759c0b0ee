"""The exponentials exp(-i dt G_k) of a step, registered by name (``[propagator] method``).

Each method is one class behind one interface (SciPy's ``integrate/_ivp`` ``METHODS``,
QuTiP's integrators by name): before a run, :meth:`Exponential.check` (what the precheck
says: its plan or its terms, and whether the tolerance is met), :meth:`~Exponential.estimate`
(seconds per step from timed kernels, for ``auto``), :meth:`~Exponential.host_matrices`
(dense N x N matrices it keeps) and :meth:`~Exponential.describe` (its own error bound,
as the run prints it); during a run :meth:`~Exponential.factor` returns one factor F_k of
a step, which applies to psi, to an N x B block of states, or to U(t).  Adding a method is
a class and a line in :data:`METHODS`; no loop changes.  :func:`get` is the only place a
method name is looked up, :func:`is_auto` the only place ``"auto"`` is recognised.

* ``dense`` / ``taylor``: the dense exponent U_k = exp(-i dt G_k) by :func:`mgemm.expm`
  with the precheck's fixed plan (``dense``: the fewest products for the tolerance;
  ``taylor``: the thesis' Taylor series, summary eqs. 2-3), every product a GEMM (one
  device, or column bands over G GPUs through :mod:`mgemm.dist`), then U_k X.  Each
  exponent is taken of -i dt (G_k - c_k I), c_k the centre of G_k's spectral bounds,
  and the phase e^(-i c_k dt) multiplied back (exact).  With an absorber G_k = s_k (T - i W)
  + diag(v_k) is not Hermitian: the general complex path, shifted by -i dt c - dt s W_max/2.
* ``chebyshev``: exp(-i dt G_k) X by :mod:`tdse.numerics.chebyshev`, applying G_k as the
  operator it is (:class:`tdse.model.hamiltonian.Operator`: banded O(N), the DVR by FFT
  O(N log N) per column), never forming a matrix.  The expansion needs a Hermitian
  generator, so with an absorber -i s_k W it applies M exp(-i dt G_k^h) M with the mask
  M = exp(-dt s_k W / 2) (Strang splitting: exact where W = 0, an O(dt^3) error confined
  to the absorbing layers).
* ``auto`` is not a method but a choice among the registered ones with ``auto_candidate``
  (:func:`tdse.numerics.cost.resolve`), made before a run.
"""
from __future__ import annotations

import math

import numpy as np

import mgemm
from mgemm.plan import taylor_remainder

from ..errors import ConfigError
from ..model import hamiltonian
from ..model.absorber import absorber_profile
from . import chebyshev

__all__ = ["Exponential", "Dense", "Taylor", "Chebyshev", "METHODS", "AUTO", "get",
           "is_auto", "candidates", "largest_theta", "chebyshev_terms"]

#: the name of the choice made by cost (not a registered method)
AUTO = "auto"


def _fmt(sec: float) -> str:
    return f"{sec * 1e3:.3g} ms" if sec < 1 else f"{sec:.3g} s"


class Exponential:
    """One method of taking exp(-i dt G) of a step's generators G = s T + diag(v)."""
    name = ""
    #: mgemm.plan.plan_expm's method for the precheck's plan
    plan_method = "auto"
    #: whether ``auto`` may choose it
    auto_candidate = False
    #: dense N x N complex matrices it keeps alive (psi mode, operator mode): host memory
    matrices = (10, 12)
    #: applies G as an operator (no matrix, no ExpmPlan needed to step)
    matrix_free = False
    #: an absorber's -i W as masks exp(-dt s W / 2) around each exponential (Strang), not
    #: inside the generator: the local error estimate (tdse.numerics.local_error) follows it
    absorber_masks = False

    def __init__(self, config, plan, xp=np, gemm_opts=None, layout=None):
        self.config, self.plan, self.xp = config, plan, xp
        self.gemm_opts = dict(gemm_opts or {})
        self.layout = layout
        self.exponentials = 0      # exponentials evaluated so far
        self.cheb_terms = 0        # Chebyshev terms applied so far

    # ------------------------------------------------------------------ before a run
    @classmethod
    def check(cls, config, plan, theta):
        """(ok, message, chebyshev terms) for the precheck: does one exponential meet
        ``propagator.tolerance`` at ``theta``?"""
        return True, plan.explain(), 0

    @classmethod
    def estimate(cls, config, pc, timings, gpus=1, operator=False, steps=None) -> float:
        """Estimated seconds per step on ``gpus`` devices from ``timings``
        (:class:`tdse.numerics.cost.Timings`; formulas in that module's docstring)."""
        raise NotImplementedError

    @classmethod
    def host_matrices(cls, operator: bool) -> int:
        return cls.matrices[bool(operator)]

    @classmethod
    def describe(cls, pc) -> str:
        """Its own error, as a run prints it (per exponential, not the solution's)."""
        return (f"each exponential's own error (not the solution's): truncation bound "
                f"{pc.plan.truncation_bound:.2g}, rounding ~{pc.plan.rounding_estimate:.2g}")

    # ------------------------------------------------------------------ during a run
    def bounds(self, scale, v, a=0.0):
        g = self.config.grid
        return hamiltonian.spectrum_bounds(g.stencil, g.dx, float(v.min()), float(v.max()), scale, a)

    def factor(self, scale, v, a=0.0):
        """F = exp(-i dt (scale T + a p + diag(v))) (``a``: the velocity gauge's A, 0 in
        the length gauge) with ``apply(X)`` (a vector or an N x B block) and
        ``apply_operator(U)``."""
        raise NotImplementedError


# ---------------------------------------------------------------- dense (mgemm.expm)
class DenseFactor:
    """A dense exponential U_k on the device (or in column bands over G GPUs)."""

    def __init__(self, U):
        self.U = U
        self.banded = hasattr(U, "matvec")

    def apply(self, X):
        return self.U.matvec(X) if self.banded else self.U @ X

    def apply_operator(self, Ut):
        if self.banded:
            lay = self.U.layout
            if not hasattr(Ut, "matvec"):
                Ut = lay.scatter(Ut)
            return lay.mm(self.U, Ut)
        if hasattr(Ut, "to_array"):
            Ut = Ut.to_array(0)
        return mgemm.gemm(self.U, Ut)


class Dense(Exponential):
    """The mgemm matrix exponent with the fewest products for the tolerance."""
    name = "dense"
    auto_candidate = True

    @classmethod
    def estimate(cls, config, pc, timings, gpus=1, operator=False, steps=None) -> float:
        n, t, G = config.grid.n, timings, max(1, gpus)
        F = _per_step(config)
        steps = config.time.steps if steps is None else steps
        exps = F if config.time_dependent else F / max(1, steps)
        cube, square = (n / t.n0) ** 3, (n / t.n0) ** 2
        sec = exps * t.expm * cube / G + F * t.matvec * square
        if operator:
            sec += F * t.zgemm * cube / G
        return sec

    def factor(self, scale, v, a=0.0):
        cfg, xp, dt = self.config, self.xp, self.config.time.dt
        if self.layout is not None:  # each device builds its own column band of -i dt G_k
            lay = self.layout
            G = lay.from_columns(lambda c0, c1: hamiltonian.generator_columns(
                cfg, scale, v, c0, c1, lay.xp, a) * (-1j * dt))
        else:
            G = hamiltonian.generator_dense(cfg, scale, v, xp, a=a) * (-1j * dt)
        if cfg.hermitian:
            lo, hi = self.bounds(scale, v, a)
            shift = -1j * dt * 0.5 * (lo + hi)
        else:  # -i dt (G_h - c) - dt s (W - W_max/2): the 1-norm bound of the precheck
            c, _ = hamiltonian.onenorm_bounds(cfg.grid.stencil, cfg.grid.dx, float(v.min()),
                                              float(v.max()), scale)
            shift = -1j * dt * c - dt * scale * 0.5 * cfg.absorber.strength
        self.exponentials += 1
        if self.layout is not None:  # banded in, banded out, on the stepper's layout
            return DenseFactor(mgemm.expm(G, plan=self.plan, shift=shift))
        return DenseFactor(mgemm.expm(G, plan=self.plan, shift=shift, **self.gemm_opts))


class Taylor(Dense):
    """The thesis' Taylor series (summary eqs. 2-3): ``propagator.terms`` terms, no scaling;
    refused when its bound misses the tolerance (with the largest dt that passes)."""
    name = "taylor"
    plan_method = "taylor"
    auto_candidate = False

    @classmethod
    def check(cls, config, plan, theta):
        if plan.meets_tolerance:
            return True, plan.explain(), 0
        pr, g = config.propagator, config.grid
        worst = "truncation" if plan.truncation_bound >= plan.rounding_estimate else "rounding"
        radius = theta / config.time.dt if config.time.dt else 0.0
        dt_max = largest_theta(pr.terms, pr.tolerance) / radius if radius else math.inf
        return False, (
            f"Taylor with k = {pr.terms} terms misses the tolerance {pr.tolerance:.3g}: "
            f"dt = {config.time.dt}, dx = {g.dx}, theta = dt*||G - c|| = {theta:.4g}, truncation "
            f"bound {plan.truncation_bound:.3g}, rounding ~{plan.rounding_estimate:.3g} ({worst} "
            f"fails); the largest dt that passes is {dt_max:.4g} (or raise propagator.terms, or "
            f"use method = \"dense\")"), 0


# ---------------------------------------------------------------- Chebyshev (matrix-free)
class ChebyshevFactor:
    """exp(-i dt G_k) applied by the Chebyshev expansion, G_k never formed."""

    def __init__(self, method, scale, v, a=0.0, coef=None):
        self.method, self.scale, self.v, self.a, self.coef = method, scale, v, a, coef

    def apply(self, X):
        return self.method.apply(self.scale, self.v, X, self.a, self.coef)

    def apply_operator(self, Ut):
        lay = self.method.layout
        if lay is None:
            if hasattr(Ut, "to_array"):
                Ut = Ut.to_array(0)
            return self.apply(Ut)
        if not hasattr(Ut, "bands"):  # column bands: no communication at all
            Ut = lay.scatter(Ut)
        bands = []
        for i, b in enumerate(Ut.bands):
            with lay.ctx(i):
                bands.append(self.apply(b))
        from mgemm.dist import BandedMatrix
        return BandedMatrix(lay, bands)


class Chebyshev(Exponential):
    """The matrix-free Chebyshev expansion with a rigorous truncation bound."""
    name = "chebyshev"
    auto_candidate = True
    matrices = (0, 6)      # no dense matrix, but U(t) and the recurrence's blocks
    matrix_free = True
    absorber_masks = True

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self._masks = {}

    @classmethod
    def check(cls, config, plan, theta):
        K = _terms(theta, config.propagator.tolerance)
        if not math.isfinite(K):        # (no step can be made: --allow-inaccurate cannot help)
            raise ConfigError("time.dt", config.time.dt,
                              f"theta = dt ||H|| = {theta:.3g} needs more than {chebyshev.MAX_TERMS} "
                              f"Chebyshev terms an exponential (||H|| <= {theta / config.time.dt:.3g} "
                              f"Ha from the potential, field and absorber): lower dt or those values")
        return True, cls.message(theta, K, config.propagator.tolerance), K

    @staticmethod
    def message(theta, K, tol):
        return (f"chebyshev: {K} terms per exponential at theta={theta:.4g} "
                f"(truncation bound <= {tol:.3g})")

    @classmethod
    def estimate(cls, config, pc, timings, gpus=1, operator=False, steps=None) -> float:
        K = cls.estimate_terms(config, pc)
        F, t = _per_step(config), timings
        sec = F * K * t.term_vector
        if operator:
            sec += F * K * t.term_block * (config.grid.n / max(1, gpus)) / t.m0
        return sec

    @classmethod
    def estimate_terms(cls, config, pc):
        """Terms per exponential at the precheck's theta (inf beyond the expansion's reach)."""
        return pc.chebyshev_terms or _terms(pc.theta, config.propagator.tolerance)

    @classmethod
    def describe(cls, pc) -> str:
        return (f"each exponential's own error (not the solution's): Chebyshev truncation "
                f"<= {pc.plan.tolerance:.2g} ({pc.chebyshev_terms} terms at theta = {pc.theta:.3g})")

    def factor(self, scale, v, a=0.0, coef=None):
        """``coef``: the expansion's coefficients where made already (:meth:`coefficients_many`)."""
        return ChebyshevFactor(self, scale, v, a, coef)

    def coefficients_many(self, scale, V):
        """The expansion's coefficients of exp(-i dt (scale T + diag(v))) for each row v of
        ``V`` (steps x N, the length gauge) as :meth:`apply` makes them a factor at a time
        (:func:`chebyshev.expm_apply`: the bounds from v's extremes, R, the term count,
        eps_k (-i)^k J_k(R)), every row's by one :func:`chebyshev.coefficients` call --
        element by element the same operations, the same bits (a step's two at N = 256 took
        37 us one at a time, ~2 in a chunk of 64 steps); None for a row whose interval is a
        point."""
        g, cfg = self.config.grid, self.config
        counts = chebyshev.term_counts(cfg.propagator.tolerance)
        R = np.array([cfg.time.dt * (0.5 * (hi - lo)) for lo, hi in
                      (hamiltonian.spectrum_bounds(g.stencil, g.dx, a, b, scale)
                       for a, b in zip(V.min(axis=1).tolist(), V.max(axis=1).tolist()))])
        K = np.array([counts(r) if r else 0 for r in R.tolist()])
        A = chebyshev.coefficients(R, K) if R.any() else None
        return [A[i, :k + 1] if r else None for i, (r, k) in enumerate(zip(R.tolist(), K.tolist()))]

    def _mask(self, scale):
        """exp(-dt s W / 2) as a column (the absorber's half step), or None."""
        cfg = self.config
        if cfg.hermitian:
            return None
        key = (scale, None if self.xp is np else self.xp.cuda.Device().id)
        if key not in self._masks:
            from ..model.grid import points
            m = np.exp(-0.5 * cfg.time.dt * scale * absorber_profile(cfg, points(cfg.grid)))
            self._masks[key] = self.xp.asarray(m)
        return self._masks[key]

    def apply(self, scale, v, X, a=0.0, coef=None):
        mask = self._mask(scale)
        if mask is not None:
            X = X * (mask if X.ndim == 1 else mask[:, None])
        lo, hi = self.bounds(scale, v, a)
        cfg = self.config
        Y, info = chebyshev.expm_apply(
            None, X, cfg.time.dt, lo, hi, cfg.propagator.tolerance, self.xp,
            scaled=lambda alpha, shift: hamiltonian.Operator(cfg, scale, v, self.xp, alpha, shift, a),
            coef=coef)
        self.cheb_terms += info["terms"]
        self.exponentials += 1
        if mask is not None:
            Y *= (mask if Y.ndim == 1 else mask[:, None])
        return Y


def largest_theta(k, tol):
    """The largest theta whose Taylor remainder R_k(theta) stays within ``tol``."""
    lo, hi = 0.0, 1.0
    while taylor_remainder(hi, k) <= tol and hi < 1e6:
        lo, hi = hi, 2 * hi
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if taylor_remainder(mid, k) <= tol else (lo, mid)
    return lo


def _per_step(config) -> int:
    from .schemes import get as scheme
    return scheme(config.propagator.scheme).exponentials


def chebyshev_terms(theta, tol):
    """Chebyshev terms per exponential at ``theta`` (inf beyond the expansion's reach)."""
    return _terms(theta, tol)


def _terms(theta, tol):
    try:
        return chebyshev.terms(theta, tol)
    except ValueError:  # more terms than the expansion allows: never chosen
        return math.inf


#: name -> class: the registry (config.METHODS lists the same names and "auto")
METHODS = {cls.name: cls for cls in (Dense, Taylor, Chebyshev)}


def is_auto(name: str) -> bool:
    """Whether ``name`` asks for the choice by cost (resolved before a run)."""
    return name == AUTO


def get(name: str) -> type[Exponential]:
    """The class registered as ``name``; ``auto`` is the dense exponent until resolved."""
    if is_auto(name):
        return Dense
    if name not in METHODS:
        raise ValueError(f"method must be one of {sorted(METHODS) + [AUTO]}, got method={name!r}")
    return METHODS[name]


def candidates() -> list[type[Exponential]]:
    """The methods ``auto`` chooses among."""
    return [cls for cls in METHODS.values() if cls.auto_candidate]
