"""The time-step / grid-spacing condition, checked before any propagation (atomic units).

The thesis summary: "Delta r ~ Delta t^2" or the error grows.  What matters is
theta = dt ||H - c I||, and ||H|| ~ 2/dx^2 + max|V| for the 3-point stencil (8/(3 dx^2)
for the 5-point one), so dt must shrink like dx^2.  :func:`precheck` computes theta (a
rigorous bound over every step), the exponential's truncation bound and rounding
estimate, and the largest dt the source's Taylor method would accept.

Each step's exponent is taken of A = -i dt (H - c I), c the centre of H's Gershgorin
interval (a phase e^(-i c dt) is multiplied back), so theta is about half of dt ||H||:
this is what makes the source's parameters (dt = 0.002, dx = 0.1, k = 10) pass a 1e-10
tolerance.  These bounds concern each exponential, not the error of the solution.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from mgemm.arrays import unit_roundoff
from mgemm.plan import ExpmPlan, plan_expm, taylor_remainder

from . import hamiltonian
from .config import Config, ConfigError
from .grid import points
from .potential import bounds_over, centre_positions

DTYPE = np.complex128


@dataclass(frozen=True)
class Precheck:
    theta: float              # max over steps of dt * ||H(t) - c(t) I||_1 (rigorous)
    radius: float             # max over steps of ||H - c I||_1
    spectrum: tuple           # Gershgorin interval of H over the whole run
    plan: ExpmPlan
    dt_max: float             # largest dt with truncation bound <= tolerance (taylor)
    ok: bool
    message: str
    warnings: tuple = field(default_factory=tuple)

    def attrs(self) -> dict:
        p = self.plan
        return {"theta": self.theta, "H_radius": self.radius,
                "H_spectrum_bounds": list(self.spectrum),
                "truncation_bound": p.truncation_bound, "rounding_estimate": p.rounding_estimate,
                "tolerance": p.tolerance, "dt_max_taylor": self.dt_max,
                "plan_method": p.method, "plan_path": p.path, "plan_degree": p.degree,
                "plan_squarings": p.squarings, "plan_products": p.products,
                "plan": p.as_dict()}


def step_times(config: Config) -> np.ndarray:
    """Midpoints t_j + dt/2 where H is evaluated (one point for a static potential)."""
    if config.potential.static:
        return np.array([0.0])
    return (np.arange(config.time.steps) + 0.5) * config.time.dt


def largest_theta(k, tol):
    """The largest theta whose Taylor remainder R_k(theta) stays within ``tol``."""
    lo, hi = 0.0, 1.0
    while taylor_remainder(hi, k) <= tol and hi < 1e6:
        lo, hi = hi, 2 * hi
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if taylor_remainder(mid, k) <= tol else (lo, mid)
    return lo


def precheck(config: Config, dtype=DTYPE) -> Precheck:
    """The dt/dx condition, before any propagation (see the module docstring)."""
    g, p, pr = config.grid, config.potential, config.propagator
    u = unit_roundoff(dtype)
    x = points(g)
    vmin, vmax = bounds_over(p, x, step_times(config))
    lo, hi = hamiltonian.spectrum_bounds(g.stencil, g.dx, vmin, vmax)
    radius = 0.5 * (hi - lo)
    dt = config.time.dt
    theta = dt * radius
    if pr.tolerance < 4 * u:
        raise ConfigError("propagator.tolerance", pr.tolerance,
                          f"is below the precision of {np.dtype(dtype).name} (unit roundoff {u:.2g})")
    plan = plan_expm(theta, method=pr.method, tolerance=pr.tolerance, terms=pr.terms,
                     split=True, unitary=True, unit_roundoff=u)
    theta_max = largest_theta(pr.terms, pr.tolerance)
    dt_max = theta_max / radius
    warn = []
    if g.dx > 0.5 * math.sqrt(p.a):
        warn.append(f"grid.dx = {g.dx} under-resolves the soft-core wells (width sqrt(a) = "
                    f"{math.sqrt(p.a):.3g}); dx <= {0.5 * math.sqrt(p.a):.3g} is advised")
    xs = centre_positions(p, step_times(config))
    if xs.min() < g.x_min or xs.max() > g.x_max - g.dx:
        warn.append(f"a potential centre leaves the box [{g.x_min}, {g.x_max}) during the run")
    ok, msg = True, plan.explain()
    if pr.method == "taylor" and not plan.meets_tolerance:
        ok = False
        worst = "truncation" if plan.truncation_bound >= plan.rounding_estimate else "rounding"
        msg = (f"Taylor with k = {pr.terms} terms misses the tolerance {pr.tolerance:.3g}: "
               f"dt = {dt}, dx = {g.dx}, theta = dt*||H - c|| = {theta:.4g}, truncation bound "
               f"{plan.truncation_bound:.3g}, rounding ~{plan.rounding_estimate:.3g} ({worst} "
               f"fails); the largest dt that passes is {dt_max:.4g} (or raise "
               f"propagator.terms, or use method = \"auto\"); --force runs anyway")
    return Precheck(theta, radius, (lo, hi), plan, dt_max, ok, msg, tuple(warn))
