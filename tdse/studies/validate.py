"""Self-validation against independent references (``tdse validate``).

Checks (each returns error, tolerance, passed):

1. ``expm``: mgemm.expm of A = -i dt H (finite-difference soft-core H, N = 16..256,
   both stencils) against scipy.linalg.expm, for both methods, complex128 and complex64,
   several dt.  Relative Frobenius error.  Tolerances:
   - auto, complex128: 1e-12 (the issue's requirement);
   - taylor: its own bound, truncation R_K(theta) + rounding (K+1) N u e^theta (the
     worst-case rounding of K products of norm <= e^theta, each with error <= N u);
   - auto, complex64: 100 u_32 sqrt(N) (rounding of ~10 products, error ~ sqrt(N) u each).
2. ``propagation``: a short moving-centre run against a reference that calls
   scipy.linalg.expm on every factor of every step (no shift, no split, the scheme's
   generators built from dense H): midpoint and cfm4, the dense exponent (auto, taylor)
   and the matrix-free Chebyshev exponential, 3-point and DVR kinetic energy (every run
   through :func:`tdse.run.loop.evolve`).  The
   per-exponential tolerance is 1e-13 so that <= 100 steps stay under 1e-10.
3. ``chebyshev_reference``: the dense exponent (cfm4) against the matrix-free
   Chebyshev exponential (an independent algorithm: no matrix function, no squaring) on the
   main job's grid (DVR, N = 256, Z = 30, a = 0.1) over 50 steps: 1e-10.
4. ``order``: the observed order of midpoint and cfm4 on a moving case, from the errors
   at dt, dt/2, dt/4 against dt/64 (Chebyshev exponentials at 1e-14): 2 and 4, +- 0.3.
5. ``static_phase``: a static run from the ground state (200 steps, per-step tolerance
   1e-14): <psi0|psi(t)> = e^(-i E0 t) to 1e-10.
6. ``dvr``: the sinc-DVR ground state of V = -1/sqrt(x^2 + 2) (a = 2) is -1/2 (the
   exact value) to 1e-10 at dx = 0.2.
7. ``nodes``: eigenstate n of a static soft-core H has n nodes, n = 0..5.
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np
import scipy.linalg

import mgemm
from mgemm.arrays import unit_roundoff

from ..config import loads
from ..model import hamiltonian, states
from ..model.observables import node_count
from ..numerics import schemes
from ..run.loop import evolve
from ..run.plan import prepare

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
scheme = "{scheme}"
error_window = 0
"""


def make_config(n=64, dx=0.1, stencil=3, a=0.1, Z=30.0, amp=0.5, dt=0.002, steps=50,
                method="dense", tol=1e-12, scheme="midpoint"):
    half = n * dx / 2
    st = '"dvr"' if stencil == "dvr" else stencil
    return loads(_BASE.format(x_min=-half, x_max=half, dx=dx, stencil=st, a=a, Z=Z,
                              amp=amp, dt=dt, t_end=dt * steps, method=method, tol=tol,
                              scheme=scheme))


def _rel(a, b):
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


#: mgemm.expm's methods and the tolerance each is held to (module docstring, check 1)
_EXPM_TOLERANCES = (
    ("auto", lambda plan, dtype, n, u: 1e-12 if dtype == np.complex128 else 100 * u * math.sqrt(n)),
    ("taylor", lambda plan, dtype, n, u: plan.truncation_bound + 11 * n * u * math.exp(plan.theta)),
)


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
                    for method, tol_of in _EXPM_TOLERANCES:
                        U, plan = mgemm.expm(A.astype(dtype), method=method, terms=10,
                                             return_plan=True)
                        err = _rel(U.astype(np.complex128), ref)
                        tol = tol_of(plan, dtype, n, u)
                        out.append(dict(check="expm", n=n, stencil=stencil, dt=dt,
                                        dtype=np.dtype(dtype).name, method=method,
                                        theta=plan.theta, error=err, tolerance=tol,
                                        passed=bool(err <= tol)))
    return out


def reference_step(cfg, psi, j):
    """One step of cfg's scheme with scipy.linalg.expm of every generator, built from
    dense H(t_i) (independent of tdse's generators, shifts, split path and bounds)."""
    sch = schemes.get(cfg.propagator.scheme)
    dt = cfg.time.dt
    Hs = [hamiltonian.dense(cfg, ti) for ti in sch.times(j * dt, dt)]
    for row in sch.factors:
        G = sum(w * H for w, H in zip(row, Hs))
        psi = scipy.linalg.expm(-1j * dt * G) @ psi
    return psi


def final_state(cfg, psi=None):
    """psi(t_end) of ``cfg`` on the CPU through the one evolve loop (from its psi(0), or
    from ``psi``)."""
    plan = prepare(cfg, backend="numpy", check_resolution=False)
    return evolve(plan, plan.psi0 if psi is None else psi).psi, plan


def reference_run(cfg, psi):
    """psi(t_end) by :func:`reference_step` (SciPy's expm of every factor of every step)."""
    for j in range(cfg.time.steps):
        psi = reference_step(cfg, psi, j)
    return psi


def check_propagation(steps=100):
    out = []
    cases = [("midpoint", "dense", 3), ("midpoint", "taylor", 3), ("cfm4", "dense", 3),
             ("cfm4", "chebyshev", 3), ("midpoint", "chebyshev", "dvr"), ("cfm4", "dense", "dvr")]
    for scheme, method, stencil in cases:
        n = 128 if stencil == 3 else 96
        cfg = make_config(n=n, dt=0.002, steps=steps, method=method, tol=1e-13, scheme=scheme,
                          stencil=stencil)
        psi, plan = final_state(cfg)
        err = _rel(psi, reference_run(cfg, plan.psi0.copy()))
        out.append(dict(check="propagation", method=f"{scheme} {method} {stencil}", steps=steps,
                        n=cfg.grid.n, error=err, tolerance=1e-10, passed=bool(err <= 1e-10)))
    return out


def check_chebyshev_reference(steps=50):
    out = []
    for scheme in ("cfm4", "midpoint"):
        cfg = make_config(n=256, dx=0.1, stencil="dvr", dt=0.01, steps=steps, method="dense",
                          tol=1e-13, scheme=scheme)
        ref_cfg = make_config(n=256, dx=0.1, stencil="dvr", dt=0.01, steps=steps,
                              method="chebyshev", tol=1e-14, scheme=scheme)
        psi, _ = final_state(cfg)
        ref, _ = final_state(ref_cfg)
        err = _rel(psi, ref)
        out.append(dict(check="chebyshev_reference", method=f"{scheme} dense vs chebyshev",
                        n=cfg.grid.n, steps=steps, error=err, tolerance=1e-10,
                        passed=bool(err <= 1e-10)))
    return out


def observed_order(scheme, dts=(0.05, 0.025, 0.0125), t_end=0.5, ref_div=64):
    """Errors of psi(t_end) at each dt against dt/ref_div (Chebyshev at 1e-14) and the
    orders log2(e(dt)/e(dt/2)) on a smooth moving case (N = 64, Z = 2, a = 0.5)."""
    def final(dt):
        return final_state(make_config(n=64, dx=0.2, a=0.5, Z=2.0, amp=0.3, dt=dt,
                                       steps=round(t_end / dt), method="chebyshev", tol=1e-14,
                                       scheme=scheme))[0]
    ref = final(dts[-1] / ref_div)
    errs = [float(np.linalg.norm(final(dt) - ref) * math.sqrt(0.2)) for dt in dts]
    return errs, [math.log2(errs[i] / errs[i + 1]) for i in range(len(errs) - 1)]


def check_order():
    out = []
    for scheme, p in (("midpoint", 2), ("cfm4", 4)):
        errs, orders = observed_order(scheme)
        worst = max(abs(o - p) for o in orders)
        out.append(dict(check="order", method=scheme, expected=p, orders=orders, errors=errs,
                        error=worst, tolerance=0.3, passed=bool(worst <= 0.3)))
    return out


def check_dvr():
    cfg = make_config(n=300, dx=0.2, stencil="dvr", a=2.0, Z=1.0, amp=0.0)
    one = dataclasses.replace(cfg.potential.centres[0], x0=0.0)
    cfg = dataclasses.replace(cfg, potential=dataclasses.replace(cfg.potential, centres=(one,)))
    E0 = float(states.eigenstates(cfg, 0.0, 1)[0][0])
    err = abs(E0 + 0.5)
    return [dict(check="dvr", E0=E0, exact=-0.5, error=err, tolerance=1e-10, passed=bool(err <= 1e-10))]


def check_static_phase(steps=200):
    cfg = make_config(n=128, dx=0.2, a=1.0, Z=1.0, amp=0.0, dt=0.01, steps=steps, tol=1e-14)
    psi, plan = final_state(cfg)
    t = steps * cfg.time.dt
    overlap = np.vdot(plan.psi0, psi) * cfg.grid.dx
    err = float(abs(overlap - np.exp(-1j * plan.energies[0] * t)))
    return [dict(check="static_phase", t=t, E0=float(plan.energies[0]), error=err,
                 tolerance=1e-10, passed=bool(err <= 1e-10))]


def check_nodes(count=6):
    cfg = make_config(n=256, dx=0.1, a=1.0, Z=1.0, amp=0.0)
    from ..model.grid import points
    x = points(cfg.grid)
    _, phi = states.eigenstates(cfg, 0.0, count)
    found = [node_count(x, phi[k]) for k in range(count)]
    return [dict(check="nodes", expected=list(range(count)), found=found,
                 error=float(sum(abs(f - k) for k, f in enumerate(found))), tolerance=0.0,
                 passed=found == list(range(count)))]


def run_all(quick: bool = False, progress: bool = False) -> dict:
    """All checks; ``quick`` trims the expm grid (for the test suite); ``progress``: a
    progress bar over the checks (tqdm, on stderr)."""
    from tqdm.auto import tqdm
    jobs = [
        ("expm vs scipy", lambda: check_expm(sizes=(16, 64, 256) if quick else (16, 32, 64, 128, 256),
                                             dts=(0.002,) if quick else (0.0005, 0.002, 0.005))),
        ("propagation vs scipy", lambda: check_propagation(steps=20 if quick else 100)),
        ("dense vs chebyshev", lambda: check_chebyshev_reference(steps=20 if quick else 50)),
        ("orders", check_order),
        ("static phase", lambda: check_static_phase(steps=100 if quick else 200)),
        ("dvr -1/2", check_dvr),
        ("nodes", check_nodes),
    ]
    checks = []
    # one BLAS thread: every matrix here is N <= 300, where more threads only contend (on a
    # busy 2-core box the quick checks took 2 minutes with them; #58 item 9)
    from threadpoolctl import threadpool_limits
    with threadpool_limits(1), tqdm(jobs, desc="validate", unit="check", disable=not progress) as bar:
        for label, job in bar:
            bar.set_postfix_str(label)
            checks += job()
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
           "check_order", "check_chebyshev_reference", "check_static_phase", "check_dvr",
           "check_nodes", "reference_step", "reference_run", "final_state", "observed_order"]
