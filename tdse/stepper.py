"""One time step of the chosen scheme (:mod:`tdse.schemes`), each exponential by the
chosen method, for psi or for the whole propagator U(t); written once for NumPy/CuPy.

Methods (``[propagator] method``):
* ``dense`` / ``taylor``: the dense exponent U_k = exp(-i dt G_k) by :func:`mgemm.expm`
  (with an absorber G_k = s_k (T - i W) + diag(v_k) is not Hermitian: the general complex
  path, shifted by -i dt c - dt s W_max/2)
  with the precheck's fixed plan (every product a GEMM: one device, or column bands
  over G GPUs through :mod:`mgemm.dist`), then U_k psi or U_k U(t).  Each exponent is
  taken of -i dt (G_k - c_k I), c_k the centre of G_k's spectral bounds, and the phase
  e^(-i c_k dt) multiplied back (exact).  A time-independent H is exponentiated once.
* ``chebyshev``: exp(-i dt G_k) X by :mod:`tdse.chebyshev`, applying G_k as the operator
  it is (:class:`tdse.hamiltonian.Operator`: banded stencils O(N), the DVR's dense T by FFT
  O(N log N) per column), never forming a matrix: psi, or the N columns of U(t) as a
  block.  Its spectral bounds are the same rigorous ones.  The expansion needs a Hermitian
  generator, so with an absorber -i s_k W it applies M exp(-i dt G_k^h) M with the mask
  M = exp(-dt s_k W / 2) (Strang splitting: exact where W = 0, an O(dt^3) error confined
  to the absorbing layers; the dense methods take the exact non-Hermitian exponent).
* ``auto`` is resolved before a run (:func:`tdse.cost.resolve`: ``tdse.run``, ``tdse
  floquet``); a Propagator built directly with ``auto`` uses the dense exponent.
"""
from __future__ import annotations

import numpy as np

import mgemm
from mgemm.plan import ExpmPlan

from . import chebyshev, hamiltonian, schemes
from .config import Config
from .grid import points
from .potential import total

DTYPE = np.complex128

__all__ = ["DTYPE", "Propagator", "step_gemm_opts"]


def step_gemm_opts(backend: str, devices) -> dict:
    """mgemm.expm options for a propagation step: on several GPUs U stays in column bands
    (mgemm.dist) and is applied as per-GPU partial sums; otherwise plain expm."""
    if backend == "cupy" and devices and len(devices) > 1:
        return {"devices": list(devices), "layout": "bands", "output": "banded"}
    return {}


class Propagator:
    """Steps psi(t_j) -> psi(t_j + dt) (and U(t_j) -> U(t_j + dt)) for ``config``.

    ``plan``: the :class:`mgemm.plan.ExpmPlan` every dense exponent uses (from
    :func:`tdse.precheck.precheck`; unused by ``chebyshev``)."""

    def __init__(self, config: Config, plan: ExpmPlan | None = None, xp=np, gemm_opts=None):
        self.config, self.plan, self.xp = config, plan, xp
        self.scheme = schemes.get(config.propagator.scheme)
        self.method = config.propagator.method
        if self.method != "chebyshev" and plan is None:
            raise ValueError(f"method {self.method!r} needs an ExpmPlan (tdse.precheck.precheck)")
        self.x_host = points(config.grid)
        self.gemm_opts = dict(gemm_opts or {})
        self.static = not config.time_dependent
        self._factors = None          # dense exponentials of a time-independent H
        self.cheb_terms = 0           # Chebyshev terms applied so far (work counter)
        self._masks = {}
        # Chebyshev on several devices: U(t)'s column bands, each propagated where it lives
        devs = self.gemm_opts.get("devices")
        self.layout = None
        many = (isinstance(devs, (list, tuple)) and len(devs) > 1) or \
            (isinstance(devs, int) and not isinstance(devs, bool) and devs > 1)
        if many and (self.method == "chebyshev" or self.gemm_opts.get("layout") == "bands"):
            from mgemm.dist import Layout
            self.layout = Layout(config.grid.n, devs, gpu=xp is not np)
        self.exponentials = 0         # exponentials evaluated so far

    # ------------------------------------------------------------------ generators
    def generators(self, j: int):
        """[(s_k, v_k)] of step j: G_k = s_k T + diag(v_k), in the order they act."""
        dt = self.config.time.dt
        t = 0.0 if self.static else j * dt
        pot = self.config.potential
        V = [total(pot, self.x_host, tj) for tj in self.scheme.times(t, dt)]
        return [(s, sum(w * v for w, v in zip(row, V) if w))
                for s, row in zip(self.scheme.scales(), self.scheme.factors)]

    def bounds(self, scale, v):
        g = self.config.grid
        return hamiltonian.spectrum_bounds(g.stencil, g.dx, float(v.min()), float(v.max()), scale)

    # ------------------------------------------------------------------ dense exponentials
    def _dense(self, scale, v):
        cfg, xp, dt = self.config, self.xp, self.config.time.dt
        if self.layout is not None:  # each device builds its own column band of -i dt G_k
            lay = self.layout
            G = lay.from_columns(lambda c0, c1: hamiltonian.generator_columns(
                cfg, scale, v, c0, c1, lay.xp) * (-1j * dt))
        else:
            G = hamiltonian.generator_dense(cfg, scale, v, xp) * (-1j * dt)
        if cfg.hermitian:
            lo, hi = self.bounds(scale, v)
            shift = -1j * dt * 0.5 * (lo + hi)
        else:  # -i dt (G_h - c) - dt s (W - W_max/2): the 1-norm bound of the precheck
            c, _ = hamiltonian.onenorm_bounds(cfg.grid.stencil, cfg.grid.dx, float(v.min()),
                                              float(v.max()), scale)
            shift = -1j * dt * c - dt * scale * 0.5 * cfg.absorber.strength
        self.exponentials += 1
        if self.layout is not None:  # banded in, banded out, on the propagator's layout
            return mgemm.expm(G, plan=self.plan, shift=shift)
        return mgemm.expm(G, plan=self.plan, shift=shift, **self.gemm_opts)

    def factors(self, j: int):
        """The dense exponentials [U_1, U_2, ...] of step j (computed once when H is static)."""
        if self.static and self._factors is not None:
            return self._factors
        gens = self.generators(j)
        if self.static and len(gens) > 1 and all(
                s == gens[0][0] and np.array_equal(v, gens[0][1]) for s, v in gens):
            U = self._dense(*gens[0])  # cfm4 with a static H: the same factor twice
            fs = [U] * len(gens)
        else:
            fs = [self._dense(s, v) for s, v in gens]
        if self.static:
            self._factors = fs
        return fs

    # ------------------------------------------------------------------ Chebyshev
    def _mask(self, scale):
        """exp(-dt s W / 2) as a column (the absorber's half step), or None."""
        cfg = self.config
        if cfg.hermitian:
            return None
        key = ("mask", scale, None if self.xp is np else self.xp.cuda.Device().id)
        if key not in self._masks:
            m = np.exp(-0.5 * cfg.time.dt * scale * hamiltonian.absorber_profile(cfg, self.x_host))
            self._masks[key] = self.xp.asarray(m)
        return self._masks[key]

    def _cheb(self, scale, v, X):
        mask = self._mask(scale)
        if mask is not None:
            X = X * (mask if X.ndim == 1 else mask[:, None])
        Y = self._cheb_h(scale, v, X)
        if mask is not None:
            Y *= (mask if Y.ndim == 1 else mask[:, None])
        return Y

    def _cheb_h(self, scale, v, X):
        lo, hi = self.bounds(scale, v)
        cfg = self.config
        Y, info = chebyshev.expm_apply(
            None, X, cfg.time.dt, lo, hi, cfg.propagator.tolerance, self.xp,
            scaled=lambda alpha, shift: hamiltonian.Operator(cfg, scale, v, self.xp, alpha, shift))
        self.cheb_terms += info["terms"]
        self.exponentials += 1
        return Y

    # ------------------------------------------------------------------ steps
    def step(self, psi, j: int):
        """psi(t_j + dt); on several GPUs each dense U stays in column bands (mgemm.dist)
        and U psi is a sum of per-GPU partial products on GPU 0."""
        if self.method == "chebyshev":
            for s, v in self.generators(j):
                psi = self._cheb(s, v, psi)
            return psi
        for U in self.factors(j):
            psi = U.matvec(psi) if hasattr(U, "matvec") else U @ psi
        return psi

    def step_operator(self, Ut, j: int):
        """U(t_j + dt) = F_K ... F_1 U(t_j): one more product per factor (banded on
        several GPUs), or the Chebyshev expansion applied to the N columns."""
        if self.method == "chebyshev":
            if self.layout is not None:  # column bands: no communication at all
                lay = self.layout
                if not hasattr(Ut, "bands"):
                    Ut = lay.scatter(Ut)
                gens = self.generators(j)
                bands = []
                for i, b in enumerate(Ut.bands):
                    with lay.ctx(i):
                        for s, v in gens:
                            b = self._cheb(s, v, b)
                    bands.append(b)
                from mgemm.dist import BandedMatrix
                return BandedMatrix(lay, bands)
            if hasattr(Ut, "to_array"):
                Ut = Ut.to_array(0)
            for s, v in self.generators(j):
                Ut = self._cheb(s, v, Ut)
            return Ut
        for U in self.factors(j):
            if hasattr(U, "matvec"):
                if not hasattr(Ut, "matvec"):
                    Ut = U.layout.scatter(Ut)
                Ut = U.layout.mm(U, Ut)
            else:
                Ut = mgemm.gemm(U, Ut)
        return Ut

    def operator(self, j: int):
        """The one-step propagator of step j as a dense matrix on the device."""
        eye = self.xp.eye(self.config.grid.n, dtype=DTYPE)
        U = self.step_operator(eye, j)
        return U.to_array(0) if hasattr(U, "to_array") else U
