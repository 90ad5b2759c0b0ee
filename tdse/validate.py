"""Self-validation against independent references (``tdse validate``).

Checks (each returns error, tolerance, passed):

1. ``expm``: mgemm.expm of A = -i dt H (finite-difference soft-core H, N = 16..256,
   both stencils) against scipy.linalg.expm, for both methods, complex128 and complex64,
   several dt.  Relative Frobenius error.  Tolerances:
   - auto, complex128: 1e-12 (the issue's requirement);
   - taylor: its own bound, truncation R_K(theta) + rounding (K+1) N u e^theta (the
     worst-case rounding of K products of norm <= e^theta, each with error <= N u);
   - auto, complex64: 100 u_32 sqrt(N) (rounding of ~10 products, error ~ sqrt(N) u each).
2. ``propagation``: a short moving-centre run (100 steps) against a reference that calls
   scipy.linalg.expm(-i H(t+dt/2) dt) every step (no shift, no split): <= 1e-10.  The
   per-step tolerance is 1e-13 so that 100 steps stay under 1e-10 by construction.
3. ``static_phase``: a static run from the ground state (200 steps, per-step tolerance
   1e-14): <psi0|psi(t)> = e^(-i E0 t) to 1e-10.
4. ``nodes``: eigenstate n of a static soft-core H has n nodes, n = 0..5.
"""
from __future__ import annotations

import math

import numpy as np
import scipy.linalg

import mgemm
from mgemm.arrays import unit_roundoff

from . import hamiltonian
from .config import loads
from .grid import points
from .observables import node_count
from .precheck import precheck
from .propagate import Propagator, initial_state

_BASE = """
name = "validate"
[grid]
x_min = {x_min}
x_max = {x_max}
dx = {dx}
stencil = {stencil}
[potential]
a = {a}
[[potential.centres]]
x0 = -1.0
Z = {Z}
amplitude = {amp}
frequency = 3.0
[[potential.centres]]
x0 = 1.0
Z = {Z}
amplitude = {amp}
frequency = 3.0
[time]
dt = {dt}
t_end = {t_end}
[propagator]
method = "{method}"
tolerance = {tol}
"""


def make_config(n=64, dx=0.1, stencil=3, a=0.1, Z=30.0, amp=0.5, dt=0.002, steps=50,
                method="auto", tol=1e-12):
    half = n * dx / 2
    return loads(_BASE.format(x_min=-half, x_max=half, dx=dx, stencil=stencil, a=a, Z=Z,
                              amp=amp, dt=dt, t_end=dt * steps, method=method, tol=tol))


def _rel(a, b):
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


def check_expm(sizes=(16, 32, 64, 128, 256), dts=(0.0005, 0.002, 0.005)):
    out = []
    for n in sizes:
        for stencil in (3, 5):
            for dt in dts:
                cfg = make_config(n=n, stencil=stencil, dt=dt)
                A = -1j * dt * hamiltonian.dense(cfg, 0.0)
                ref = scipy.linalg.expm(A)
                for dtype in (np.complex128, np.complex64):
                    u = unit_roundoff(dtype)
                    for method in ("auto", "taylor"):
                        U, plan = mgemm.expm(A.astype(dtype), method=method, terms=10,
                                             return_plan=True)
                        err = _rel(U.astype(np.complex128), ref)
                        if method == "taylor":
                            tol = plan.truncation_bound + 11 * n * u * math.exp(plan.theta)
                        elif dtype == np.complex128:
                            tol = 1e-12
                        else:
                            tol = 100 * u * math.sqrt(n)
                        out.append(dict(check="expm", n=n, stencil=stencil, dt=dt,
                                        dtype=np.dtype(dtype).name, method=method,
                                        theta=plan.theta, error=err, tolerance=tol,
                                        passed=bool(err <= tol)))
    return out


def check_propagation(steps=100):
    out = []
    for method in ("auto", "taylor"):
        cfg = make_config(n=128, dt=0.002, steps=steps, method=method, tol=1e-13)
        pc = precheck(cfg)
        _, phi = hamiltonian.eigenstates(cfg, 0.0, 1)
        psi = initial_state(cfg, points(cfg.grid), phi)
        ref = psi.copy()
        prop = Propagator(cfg, pc.plan)
        for j in range(steps):
            psi = prop.step(psi, j)
            H = hamiltonian.dense(cfg, (j + 0.5) * cfg.time.dt)
            ref = scipy.linalg.expm(-1j * cfg.time.dt * H) @ ref
        err = _rel(psi, ref)
        out.append(dict(check="propagation", method=method, steps=steps, n=cfg.grid.n,
                        error=err, tolerance=1e-10, passed=bool(err <= 1e-10)))
    return out


def check_static_phase(steps=200):
    cfg = make_config(n=128, dx=0.2, a=1.0, Z=1.0, amp=0.0, dt=0.01, steps=steps, tol=1e-14)
    x = points(cfg.grid)
    E, phi = hamiltonian.eigenstates(cfg, 0.0, 1)
    psi0 = initial_state(cfg, x, phi)
    pc = precheck(cfg)
    prop = Propagator(cfg, pc.plan)
    psi = psi0.copy()
    for j in range(steps):
        psi = prop.step(psi, j)
    t = steps * cfg.time.dt
    overlap = np.vdot(psi0, psi) * cfg.grid.dx
    err = float(abs(overlap - np.exp(-1j * E[0] * t)))
    return [dict(check="static_phase", t=t, E0=float(E[0]), error=err, tolerance=1e-10,
                 passed=bool(err <= 1e-10))]


def check_nodes(count=6):
    cfg = make_config(n=256, dx=0.1, a=1.0, Z=1.0, amp=0.0)
    x = points(cfg.grid)
    _, phi = hamiltonian.eigenstates(cfg, 0.0, count)
    found = [node_count(x, phi[k]) for k in range(count)]
    return [dict(check="nodes", expected=list(range(count)), found=found,
                 error=float(sum(abs(f - k) for k, f in enumerate(found))), tolerance=0.0,
                 passed=found == list(range(count)))]


def run_all(quick: bool = False) -> dict:
    """All checks; ``quick`` trims the expm grid (for the test suite)."""
    checks = []
    checks += check_expm(sizes=(16, 64, 256) if quick else (16, 32, 64, 128, 256),
                         dts=(0.002,) if quick else (0.0005, 0.002, 0.005))
    checks += check_propagation(steps=40 if quick else 100)
    checks += check_static_phase(steps=100 if quick else 200)
    checks += check_nodes()
    return {"passed": all(c["passed"] for c in checks), "checks": checks}


def summary_rows(result: dict):
    """Group the checks for a short table: (name, count, worst error/tolerance, passed)."""
    groups = {}
    for c in result["checks"]:
        key = c["check"] + (f" {c['method']} {c.get('dtype', '')}".rstrip() if "method" in c else "")
        g = groups.setdefault(key, dict(count=0, worst=0.0, passed=True))
        g["count"] += 1
        ratio = c["error"] / c["tolerance"] if c["tolerance"] else (0.0 if c["passed"] else math.inf)
        g["worst"] = max(g["worst"], ratio)
        g["passed"] &= c["passed"]
    return [(k, g["count"], g["worst"], g["passed"]) for k, g in groups.items()]


__all__ = ["run_all", "summary_rows", "make_config", "check_expm", "check_propagation",
           "check_static_phase", "check_nodes"]
