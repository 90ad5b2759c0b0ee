"""Checks before any propagation (atomic units): the exponentials' accuracy, and whether
the grid resolves the wavefunction.

**The exponentials.**  The thesis summary: "Delta r ~ Delta t^2" or the error grows.
What matters is theta = dt ||G - c I||, G each exponential's generator
(:mod:`tdse.schemes`) and c the centre of its spectral bounds, which are rigorous
(:mod:`tdse.hamiltonian`: [min v, s T_max + max v], T_max ~ 1/dx^2), so dt must shrink
like dx^2 for a fixed cost per exponential.  :func:`precheck` bounds theta over every
factor of every step, and plans the dense exponent for it (degree, squarings, products,
truncation bound and rounding estimate: :func:`mgemm.plan.plan_expm`) or, for
``chebyshev``, the number of terms.  The source's Taylor method is refused when its
bound misses the tolerance, with the largest dt that would pass.  **These bounds concern
each exponential only, not the error of the solution**: that is the time scheme's
(estimated during the run, :mod:`tdse.propagate`) and the grid's (``tdse converge``).

**The grid.**  :func:`resolution` estimates the discretisation error of the ground-state
energy of H(0) from the computed states: for a finite-difference stencil against the
spectral (DVR) value on the same grid, for the DVR against a grid twice as fine; above
``RESOLUTION_TOL`` it warns and names the dx that would pass.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

import numpy as np

from mgemm.arrays import unit_roundoff
from mgemm.plan import ExpmPlan, plan_expm

from ..config import ABSORBER_MIN_WIDTH, Config, ConfigError, available_memory
from ..model import hamiltonian, states
from ..model.field import vector_potential, velocity_gauge
from ..model.grid import points
from ..model.potential import bounds_over, centre_positions
from ..model.states import DTYPE
from . import exponentials, schemes
from .exponentials import largest_theta
#: warn when the ground-state energy's discretisation error exceeds this (hartree)
RESOLUTION_TOL = 1e-3
#: the resolution check diagonalises dense matrices up to this N
RESOLUTION_MAX_N = 2048


@dataclass(frozen=True)
class Precheck:
    theta: float              # max over steps and factors of dt ||G - c I|| (rigorous; 2-norm,
                              # or the 1-norm with an absorber)
    radius: float             # max over steps and factors of ||G - c I||_2
    spectrum: tuple           # bounds containing every generator's spectrum over the run
    plan: ExpmPlan            # the dense exponent's plan (also reported for chebyshev)
    dt_max: float             # largest dt with truncation bound <= tolerance (taylor)
    ok: bool
    message: str
    warnings: tuple = field(default_factory=tuple)
    notes: tuple = field(default_factory=tuple)
    chebyshev_terms: int = 0  # terms per exponential at theta (method chebyshev)
    resolution: dict = field(default_factory=dict)

    def attrs(self) -> dict:
        p = self.plan
        return {"theta": self.theta, "H_radius": self.radius,
                "H_spectrum_bounds": list(self.spectrum),
                "truncation_bound": p.truncation_bound, "rounding_estimate": p.rounding_estimate,
                "tolerance": p.tolerance, "dt_max_taylor": self.dt_max,
                "plan_method": p.method, "plan_path": p.path, "plan_degree": p.degree,
                "plan_squarings": p.squarings, "plan_products": p.products,
                "plan": p.as_dict(), "chebyshev_terms": self.chebyshev_terms,
                "resolution": self.resolution,
                "bounds_meaning": "theta, truncation_bound, rounding_estimate and chebyshev "
                                  "bounds concern each exponential, not the solution's error"}


def step_times(config: Config) -> np.ndarray:
    """Start times t_j of the steps (one point for a time-independent H)."""
    if not config.time_dependent:
        return np.array([0.0])
    return np.arange(config.time.steps) * config.time.dt


def generator_bounds(config: Config):
    """[(s_k, vmin_k, vmax_k, amax_k)] per factor of the scheme: the range of its potential
    part over every step (rigorous: the exact min/max over grid and steps) and, in the
    velocity gauge, the largest |a_k| = |sum_i w_ki A(t_i)| (v_k's A^2/2 terms added to its
    range; 0 in the length gauge)."""
    sch = schemes.get(config.propagator.scheme)
    x, dt = points(config.grid), config.time.dt
    ts = step_times(config)
    offsets = tuple(c * dt for c in sch.nodes)
    A = None
    if velocity_gauge(config.field):
        A = vector_potential(config.field, ts[:, None] + np.asarray(offsets)[None, :])
    out = []
    bounds = bounds_over(config.potential, x, ts, rows=sch.factors, offsets=offsets)
    for s, row, (lo, hi) in zip(sch.scales(), sch.factors, bounds):
        amax = 0.0
        if A is not None:
            q = 0.5 * (A * A) @ np.asarray(row)
            lo, hi, amax = lo + float(q.min()), hi + float(q.max()), float(np.abs(A @ np.asarray(row)).max())
        out.append((s, lo, hi, amax))
    return out


def resolution(config: Config, E0=None) -> dict:
    """Estimated discretisation error of E_0 of H(0) and the dx that would pass (module
    docstring); {} when N > RESOLUTION_MAX_N (not checked).  ``E0``: the ground-state
    energy on this grid when the caller has it (no second eigensolve)."""
    g = config.grid
    if g.n > (RESOLUTION_MAX_N // 2 if g.stencil == "dvr" else RESOLUTION_MAX_N):
        return {}
    # the solves on states.EIGEN_BLAS_THREADS (N <= RESOLUTION_MAX_N: two were at most 2.2 ms
    # faster, at N = 512, on 2 CPUs); two threads beside a busy core (the look-ahead starting)
    # waited on each other: 167 ms instead of 3-19 ms in 1 of 5 `tdse run`s at N = 256 on
    # 2 CPUs (both in startup_ab_cpu2_20261130T1520.txt)
    with states.eigen_threads():
        E0 = float(states.eigenstates(config, 0.0, 1)[0][0] if E0 is None else E0)
        dvr = g.stencil == "dvr"      # the reference: the DVR at dx/2, else the DVR at dx
        ref_grid = dataclasses.replace(g, dx=g.dx / 2) if dvr else dataclasses.replace(g, stencil="dvr")
        ref = float(states.eigenstates(dataclasses.replace(config, grid=ref_grid), 0.0, 1)[0][0])
    err = abs(E0 - ref)
    if dvr:         # the DVR converges exponentially: the same box at dx/2 (2N points)
        how = f"dvr at dx = {g.dx:g} vs dx = {g.dx / 2:g}"
        dx_ok = g.dx if err <= RESOLUTION_TOL else g.dx / 2
    else:
        p = hamiltonian.order(g.stencil)
        how = f"{g.stencil}-point vs dvr at dx = {g.dx:g}"
        dx_ok = g.dx * min(1.0, (RESOLUTION_TOL / err) ** (1.0 / p)) if err > 0 else g.dx
    return {"E0": E0, "E0_reference": ref, "E0_error": err, "compared": how,
            "tolerance": RESOLUTION_TOL, "dx_that_passes": dx_ok}


#: a run's vectors of N besides its method's matrices (psi, the Chebyshev recurrence, the
#: observables' block of 64 states, H(0)'s eigenstates, the snapshots held before a write):
#: measured 5.5 KB a grid point (~343 complex vectors) on a Chebyshev 3-point run at N =
#: 80000 and 160000 on the CPU (peak RSS 514 / 953 MB; 2026-11-28, /usr/bin/time -v); 512
#: vectors with the margin
RUN_VECTORS = 512
#: the interpreter and its libraries (~75 MB measured in those runs), with the margin
BASE_BYTES = 128 << 20


def host_bytes(method, n: int, operator: bool) -> int:
    """Host bytes a run at N = ``n`` keeps with exponential ``method`` (a class of
    :mod:`tdse.numerics.exponentials`): its dense N x N complex matrices (none where it is
    matrix-free), :data:`RUN_VECTORS` vectors of N and :data:`BASE_BYTES`."""
    return method.host_matrices(operator) * 16 * n * n + RUN_VECTORS * 16 * n + BASE_BYTES


def _largest_n(method, operator, limit) -> int:
    """The largest N whose :func:`host_bytes` fit in ``limit``."""
    a, b, c = method.host_matrices(operator) * 16, RUN_VECTORS * 16, BASE_BYTES - limit
    if c >= 0:
        return 0
    return int(-c / b) if a == 0 else int((-b + math.sqrt(b * b - 4 * a * c)) / (2 * a))


def memory_check(config: Config, limit: int | None = None) -> int:
    """Host bytes a run of ``config`` keeps (:func:`host_bytes` of its method; ``auto``: of
    its candidate that needs least, which it then takes where the other cannot fit);
    ConfigError naming grid.dx when more than ``limit`` (default: the memory available
    now) -- before any work."""
    n, op = config.grid.n, config.propagator.operator
    name = config.propagator.method
    methods = exponentials.candidates() if exponentials.is_auto(name) else [exponentials.get(name)]
    method = min(methods, key=lambda m: host_bytes(m, n, op))
    need = host_bytes(method, n, op)
    limit = available_memory() if limit is None else limit
    if need > limit:
        g = config.grid
        mats = method.host_matrices(op)
        kept = (f"{mats} dense N x N complex matrices and" if mats else "no N x N matrix but")
        n_fit = _largest_n(method, op, limit)
        raise ConfigError("grid.dx", g.dx, (
            f"gives N = {n} points; the {method.name} exponential keeps {kept} about "
            f"{RUN_VECTORS} vectors of N there: {need / 2**30:.1f} GiB, more than the "
            f"{limit / 2**30:.1f} GiB available; the largest N that fits is about {n_fit} "
            f"(dx >= {(g.x_max - g.x_min) / max(n_fit, 1):.4g})"))
    return need


def precheck(config: Config, dtype=DTYPE, check_resolution=True, *, E0=None,
             memory_limit=None) -> Precheck:
    """The checks of the module docstring, before any propagation (``E0``: the ground-state
    energy of H(0) on this grid, when known; ``memory_limit``: host bytes allowed)."""
    g, p, pr = config.grid, config.potential, config.propagator
    memory_check(config, memory_limit)
    u = unit_roundoff(dtype)
    dt = config.time.dt
    if pr.tolerance < 4 * u:
        raise ConfigError("propagator.tolerance", pr.tolerance,
                          f"is below the precision of {np.dtype(dtype).name} (unit roundoff {u:.2g})")
    radius, lo_all, hi_all = 0.0, math.inf, -math.inf
    for s, vmin, vmax, amax in generator_bounds(config):
        if not (math.isfinite(vmin) and math.isfinite(vmax) and math.isfinite(amax)):
            raise ConfigError("potential", p.V or p.kind, f"V(x, t) is not finite on the grid at a step's "
                              f"time (its range [{vmin:.3g}, {vmax:.3g}] Ha over the run, the field's A "
                              f"{amax:.3g}): a potential and field finite from t = 0 to t_end are needed")
        lo, hi = hamiltonian.spectrum_bounds(g.stencil, g.dx, vmin, vmax, s, amax)
        if config.hermitian:
            r = 0.5 * (hi - lo)
        else:  # the 1-norm of -i(G_h - c) - s (W - W_max/2), G_h the Hermitian part
            r = hamiltonian.onenorm_bounds(g.stencil, g.dx, vmin, vmax, s, amax, g.n)[1] + \
                0.5 * s * config.absorber.strength
        radius = max(radius, r)
        lo_all, hi_all = min(lo_all, lo), max(hi_all, hi)
    theta = dt * radius
    if not theta * u < 1.0:     # (the step's phase has no digit left: no method, no plan)
        raise ConfigError("time.dt", dt, f"theta = dt ||H|| = {theta:.3g} is beyond double "
                          f"precision (||H|| <= {radius:.3g} Ha from the potential, field and "
                          f"absorber): lower dt or those values")
    herm = config.hermitian
    method = exponentials.get(pr.method)
    plan = plan_expm(theta, method=method.plan_method, tolerance=pr.tolerance, terms=pr.terms,
                     split=herm and not velocity_gauge(config.field),   # (-i dt G real: cos/sin)
                     unitary=herm, unit_roundoff=u)
    dt_max = largest_theta(pr.terms, pr.tolerance) / radius if radius else math.inf
    ok, msg, cheb = method.check(config, plan, theta)
    if exponentials.is_auto(pr.method):  # for tdse.numerics.cost's choice; 0 beyond its reach
        K = exponentials.chebyshev_terms(theta, pr.tolerance)
        cheb = K if math.isfinite(K) else 0
    warn, notes = [], []
    res = resolution(config, E0) if check_resolution else {}
    if res and res["E0_error"] > RESOLUTION_TOL:
        if g.stencil == "dvr":
            fix = f"dx <= {res['dx_that_passes']:.4g} is advised"
        else:
            fix = (f"dx <= {res['dx_that_passes']:.3g} would pass (error ~ dx^"
                   f"{hamiltonian.order(g.stencil)}), or stencil = 5 or \"dvr\"")
        warn.append(f"grid.dx = {g.dx} under-resolves the wavefunction: the ground-state energy "
                    f"moves by {res['E0_error']:.3g} Ha ({res['compared']}; warning above "
                    f"{RESOLUTION_TOL:g} Ha); {fix}")
    xs = centre_positions(p, step_times(config))
    if not xs.size:
        pass                       # no centres (an expression potential)
    elif xs.min() < g.x_min or xs.max() > g.x_max - g.dx:
        warn.append(f"a potential centre leaves the box [{g.x_min}, {g.x_max}) during the run")
    elif config.absorber is not None:
        w = config.absorber.width
        if xs.min() < g.x_min + w or xs.max() > g.x_max - g.dx - w:
            warn.append(f"a potential centre enters the absorbing layers (absorber.width = {w} "
                        f"bohr at each edge): the absorber eats bound states too")
    if config.absorber is not None and config.absorber.width < ABSORBER_MIN_WIDTH:
        warn.append(f"absorber.width = {config.absorber.width} is below {ABSORBER_MIN_WIDTH:g} bohr: "
                    f"a 0.5 Ha packet reflects more than 1e-4 of its norm (measured; README)")
    kicked = [i for i, c in enumerate(p.centres)
              if c.moving and c.ramp == 0 and abs(math.cos(c.phase)) > 1e-12]
    if kicked:
        c = p.centres[kicked[0]]
        notes.append(f"the centres start moving abruptly at t = 0 (velocity "
                     f"{abs(c.amplitude * c.frequency * math.cos(c.phase)):.3g} a.u.): part of the "
                     f"excitation is this kick; potential.centres.ramp = T_r starts them smoothly")
    return Precheck(theta, radius, (lo_all, hi_all), plan, dt_max, ok, msg, tuple(warn),
                    tuple(notes), cheb, res)
