"""Which exponential ``propagator.method = "auto"`` uses: the dense exponent
(:func:`mgemm.expm`: GEMMs, ``"dense"``) or the matrix-free Chebyshev expansion
(:mod:`tdse.chebyshev`), whichever is estimated to take less time per step of this run on
this machine (atomic units throughout; times in seconds).

Per step of a scheme with F exponentials (midpoint 1, cfm4 2), on G devices:

* dense: E exponentials (E = F when H depends on time; a static H's are computed once
  and spread over the steps), each the precheck's plan (its P products), plus applying
  them: F matrix-vector products for psi and, in operator mode, F products U_k U(t)::

      t_dense = E t_expm(n0) (N/n0)^3 / G + F t_mv(n0) (N/n0)^2
                [+ F t_zgemm(n0) (N/n0)^3 / G]

* chebyshev: F K terms (K: the rigorous tail bound at the precheck's theta,
  :func:`tdse.chebyshev.terms`), each one application of the generator and the
  recurrence's updates, on psi and, in operator mode, on the N/G columns of U(t) each
  device holds::

      t_cheb = F K (t_term(1) [+ t_term(m0) (N/G)/m0])

The t's are timed here, on device 0, once per process and shape (:func:`calibrate`): the
plan's own products on a random skew-Hermitian n0 x n0 matrix (n0 = min(N, 4096) on a
GPU, min(N, 512) on the CPU), a complex n0^3 GEMM and matrix-vector product, and
Chebyshev terms of the run's own generator at the run's N on one column and on m0 =
min(N/G, 256 on a GPU, 32 on the CPU) columns (a short expansion, tau r <= 4: a dozen
or two terms; the cost of a term does not depend on tau).  The dense exponent is timed only
where its lower bound (:data:`DENSE_OUT`, from n0 = :data:`DENSE_OUT_MIN_N`) leaves it a
candidate; else ``Timings.expm`` is that bound (``expm_timed`` False, said in the choice's reason).  Known simplifications:
the dense work on G GPUs is taken as divided perfectly (measured 0.79-1.06 of G x one
GPU's DGEMM rate at N = 8192-16384, benchmarks/README.md); the step-doubling window costs
both methods alike and is left out.

With an absorber both stay candidates: the dense exponent is exact for the complex
generator, the Chebyshev expansion applies the absorber as a mask (Strang splitting: an
O(dt^3) error confined to the absorbing layers, :mod:`tdse.numerics.exponentials`; ``tdse
converge``'s dt column measures it with the rest of the time error).  When ``auto`` takes
Chebyshev there, its reason says so (h2plus_ir_large at N = 8192 on one H200: dense 2.4 s
a step, Chebyshev ~0.6 ms; an earlier version took the dense exponent whatever it cost).
The choice, both estimates and the timings go to the run file (``method_choice``) and
to the precheck's notes.
"""
from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass

import numpy as np

from ..config import Config
from ..model import hamiltonian
from . import chebyshev, exponentials

__all__ = ["Timings", "calibrate", "estimate", "choose", "resolve"]

#: calibration sizes: the dense products at n0 = min(N, N_CAL), Chebyshev on m0 columns
N_CAL = {"cupy": 4096, "numpy": 512}
M_CAL = {"cupy": 256, "numpy": 32}
#: the calibration's short Chebyshev expansion: tau r at most this (a dozen or two terms)
CAL_R = 4.0
#: the dense exponent is not timed where its step, with the exponent at its lower bound
#: (the plan's products each a real n0^3 GEMM at 8x the timed complex GEMM's rate: a real
#: product has 1/4 of its flops, and one H200's DGEMM runs at 1.14x its ZGEMM's rate), is
#: estimated at more than this many times the best matrix-free method's: timing the exponent
#: at n0 = 4096 took ~0.5-0.8 s of a GPU run's start and, on mgemm's side streams, made the loop's
#: context switch (0.19 s; :func:`tdse.run.loop._settle`) -- h2plus_moving_large at N = 8192,
#: 3-point, on one H200: ruled out by its bound, the calibration 1.3-1.6 s against 2.1 s and
#: no context switch (``run-overhead_h200x1_20261130T130124.json`` against ``..._130059_before.json``)
DENSE_OUT = 10.0
#: ... and only where n0 is at least this: a smaller exponent is cheap to time, and a small
#: GEMM's timing is the host's noise under load (2 cores with a second test process: a 64 x
#: 64 ZGEMM timed at 8-16 ms, 1000x its time, which had ruled the dense exponent out)
DENSE_OUT_MIN_N = 512


@dataclass(frozen=True)
class Timings:
    """Seconds of the building blocks on device 0 (module docstring)."""
    n0: int            # the dense blocks' size
    expm: float        # one exponent with the run's plan at n0
    zgemm: float       # one complex n0^3 GEMM
    matvec: float      # one complex n0 x n0 matrix-vector product
    m0: int            # columns of the timed Chebyshev block
    term_vector: float  # one Chebyshev term on one column at the run's N
    term_block: float  # one Chebyshev term on m0 columns at the run's N
    expm_timed: bool = True  # False: ``expm`` is its lower bound (:data:`DENSE_OUT`), not timed

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


_CACHE: dict = {}


def _shape(plan):
    """What of the dense plan its timing depends on -- its steps, not its theta (the timed
    matrix is scaled to theta, but the plan fixes the degree, products and squarings): two
    runs on one grid whose theta differs in its last digits (another t_end, another field)
    share the process's timings, and so their choice, where a new calibration had cost a
    GPU ~1.3-1.6 s and could choose otherwise on a loaded box (tests/test_extend.py's CI
    flake)."""
    return None if plan is None else (plan.method, plan.path, plan.degree, plan.squarings,
                                      plan.ps_block, plan.products, plan.formula, plan.unitary)


def _sync(xp):
    if xp is not np:
        xp.cuda.Device().synchronize()


def _best(f, xp, repeat=2) -> float:
    """The fastest of ``repeat`` timed calls after one warm-up."""
    f()
    _sync(xp)
    best = math.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        f()
        _sync(xp)
        best = min(best, time.perf_counter() - t0)
    return best


def calibrate(config: Config, pc, xp=np, gpus: int = 1, operator: bool | None = None) -> Timings:
    """Time the building blocks of both methods for ``config`` on device 0 of ``xp``
    (NumPy: this CPU under the caller's BLAS thread limit).  Cached per process."""
    import mgemm
    backend = "numpy" if xp is np else "cupy"
    n = config.grid.n
    op = config.propagator.operator if operator is None else operator
    n0 = min(n, N_CAL[backend])
    m0 = min(max(1, n // max(1, gpus)), M_CAL[backend]) if op else 1
    key = (backend, n, config.grid.stencil, config.grid.dx, n0, m0, _shape(pc.plan), gpus)
    out = _CACHE.get(key)
    if out is None:
        out = _CACHE[key] = _kernels(config, pc, xp, n, n0, m0, op)
    if out.expm_timed:
        return out
    # the dense exponent at its lower bound: timed only where that leaves it a candidate
    # (checked for each run: its Chebyshev terms follow its own theta)
    est = estimate(config, pc, out, gpus, op)
    free = min((v for k, v in est.items() if exponentials.get(k).matrix_free), default=math.inf)
    if n0 >= DENSE_OUT_MIN_N and min((v for k, v in est.items() if not exponentials.get(k).matrix_free),
                                     default=math.inf) > DENSE_OUT * free:
        return out
    # the plan's products on a random skew-Hermitian matrix of norm theta (drawn only
    # here, on the device that times it: _kernels)
    B = xp.random.default_rng(54321).standard_normal((n0, n0))
    B = (B + B.T) * (pc.plan.theta / (2.0 * math.sqrt(n0)) if pc.plan.theta else 1.0)
    A = 1j * B
    out = _CACHE[key] = dataclasses.replace(out, expm=_best(lambda: mgemm.expm(A, plan=pc.plan), xp),
                                            expm_timed=True)
    return out


def _kernels(config, pc, xp, n, n0, m0, op) -> Timings:
    """:func:`calibrate`'s timed kernels -- the complex GEMM and matrix-vector product at
    n0, Chebyshev terms of the run's generator on one and m0 columns -- with the dense
    exponent at its lower bound (``expm_timed`` False).  Its random matrices are drawn by
    ``xp``'s own generator, on the device that times them (on a GPU the n0 = 4096 complex
    matrix drawn on the host and copied had been most of a run's calibration)."""
    rng = xp.random.default_rng(12345)
    Z = rng.standard_normal((n0, n0)) + 1j * rng.standard_normal((n0, n0))
    t_zgemm = _best(lambda: Z @ Z, xp)
    z = Z[:, 0].copy()
    t_mv = _best(lambda: Z @ z, xp, repeat=5)
    Z = None             # (its memory back before the terms and the exponent)
    # Chebyshev terms of the run's first generator, at the run's N
    from .stepper import Stepper
    cheb = dataclasses.replace(config, propagator=dataclasses.replace(
        config.propagator, method=exponentials.Chebyshev.name))
    prop = Stepper(cheb, None, xp)
    s, v, a = prop.generators(0)[0]
    lo, hi = prop.bounds(s, v, a)
    r = 0.5 * (hi - lo)
    tau = min(config.time.dt, CAL_R / r) if r > 0 else config.time.dt
    tol = config.propagator.tolerance

    def term_seconds(m):
        X = rng.standard_normal((n, m)) + 1j * rng.standard_normal((n, m))
        X = X[:, 0].copy() if m == 1 else X
        info = {}

        def once():
            info.update(chebyshev.expm_apply(
                None, X, tau, lo, hi, tol, xp,
                scaled=lambda alpha, shift: hamiltonian.Operator(cheb, s, v, xp, alpha, shift, a))[1])
        sec = _best(once, xp)
        return sec / max(1, info["terms"])
    t_vec = term_seconds(1)
    t_blk = term_seconds(m0) if op else 0.0
    return Timings(n0, pc.plan.products * t_zgemm / 8.0, t_zgemm, t_mv, m0, t_vec, t_blk, False)


def estimate(config: Config, pc, timings: Timings, gpus: int = 1,
             operator: bool | None = None, steps: int | None = None) -> dict:
    """Estimated seconds per step of each method ``auto`` chooses among (module
    docstring's formulas, each the method's own :meth:`Exponential.estimate`)."""
    op = config.propagator.operator if operator is None else operator
    return {cls.name: cls.estimate(config, pc, timings, max(1, gpus), op, steps)
            for cls in exponentials.candidates()}


def choose(config: Config, pc, backend: str = "numpy", devices=None, *, xp=None,
           operator: bool | None = None, steps: int | None = None, timings: Timings | None = None):
    """(method, info): the registered candidate with the smallest estimated seconds per
    step for ``method = "auto"`` (module docstring); ``info`` holds every estimate, the
    timings and why."""
    gpus = len(devices) if backend == "cupy" and devices else 1
    if timings is None:
        if xp is None:
            import importlib
            xp = np if backend == "numpy" else importlib.import_module("cupy")
        timings = calibrate(config, pc, xp, gpus, operator)
    est = estimate(config, pc, timings, gpus, operator, steps)
    if backend == "numpy":      # a candidate whose matrices cannot fit in memory is out
        from ..config import available_memory
        from .precheck import host_bytes
        op = config.propagator.operator if operator is None else operator
        free = available_memory()
        est = {k: (v if host_bytes(exponentials.get(k), config.grid.n, op) <= free else math.inf)
               for k, v in est.items()}
    method = min(est, key=lambda name: est[name])
    terms = exponentials.Chebyshev.estimate_terms(config, pc)
    bounded = "" if timings.expm_timed else (
        f"; the dense exponent not timed: at its lower bound ({pc.plan.products} products as "
        f"real GEMMs at 8x the timed complex GEMM's rate) over {DENSE_OUT:g}x the matrix-free step")
    products = pc.plan.products
    where = f"{backend}, {gpus} GPU(s)" if backend == "cupy" else "numpy, this CPU"
    said = " vs ".join(f"{'' if timings.expm_timed or exponentials.get(name).matrix_free else 'at least '}"
                       f"{_fmt(sec)}/step by {name}" for name, sec in est.items())
    why = (f"method auto -> {method}: estimated {said} ({products} products a dense "
           f"exponential, {terms} Chebyshev terms), from kernels timed here ({where}); "
           f"method = \"dense\" or \"chebyshev\" fixes it{bounded}")
    if not config.hermitian and exponentials.get(method).matrix_free:
        why += ("; with the absorber as a mask exp(-dt s W / 2) on both sides (Strang "
                "splitting: an O(dt^3) error inside the absorbing layers only, in tdse "
                "converge's dt column), where the dense exponent is exact")

    def finite(x):
        return x if math.isfinite(x) else None
    return method, {"chosen": method, "why": why,
                    "seconds_per_step": {k: finite(v) for k, v in est.items()}, "gpus": gpus,
                    "backend": backend, "timings": timings.as_dict(),
                    "chebyshev_terms": finite(terms), "products": products}


def _fmt(sec: float) -> str:
    return f"{sec * 1e3:.3g} ms" if sec < 1 else f"{sec:.3g} s"


def resolve(config: Config, pc, backend: str = "numpy", devices=None, **kw):
    """(config, precheck, info) with ``method = "auto"`` replaced by the method
    :func:`choose` picks (others come back unchanged, info None); the precheck's message
    is the chosen method's and its notes say why (nothing is changed silently)."""
    if not exponentials.is_auto(config.propagator.method):
        return config, pc, None
    method, info = choose(config, pc, backend, devices, **kw)
    cfg = dataclasses.replace(config, propagator=dataclasses.replace(
        config.propagator, method=method))
    K = info.get("chebyshev_terms") or 0
    cls = exponentials.get(method)
    msg = pc.message if not cls.matrix_free else cls.message(pc.theta, K, config.propagator.tolerance)
    pc = dataclasses.replace(pc, message=msg, chebyshev_terms=K, notes=pc.notes + (info["why"],))
    return cfg, pc, info
