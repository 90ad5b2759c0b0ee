"""Floquet analysis of a periodically driven H2+ (atomic units).

For centres moving as X_c(t) = x0_c + alpha sin(beta t + phase), H(t) has period
T = 2 pi / beta.  The one-period propagator U(T), the product of M steps of the run's
scheme (dt = T / M; midpoint or cfm4, each exponential by the run's method; a centre's
``ramp`` is set to 0: Floquet states belong to the periodic drive), has eigenvalues
lambda_k = exp(-i eps_k T): eps_k are the quasi-energies, defined modulo omega = 2 pi / T.
**One convention** (``tdse floquet`` and ``--scan`` alike): eps_k = -arg(lambda_k) / T folded
into the first zone [-omega/2, omega/2); the phases phi_k = eps_k T mod 2 pi in [0, 2 pi)
are reported beside them, and for each eigenstate n of H(0) its quasi-energy's shift from
E_n(0), (eps - E_n) folded into [-omega/2, omega/2) (the AC Stark shift for a weak drive: a
smooth curve over a scan, where eps itself jumps by omega whenever E_n + shift crosses a
zone edge).  Reported too: the overlaps |<F_k|n>|^2 of the Floquet states F_k with the
lowest eigenstates n of H(0), and where two n share their Floquet state (``ties``).
For a static potential (any T) the Floquet states are the eigenstates and
phi_n = E_n T mod 2 pi -- the check in the tests.
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from mgemm.arrays import to_host

from ..config import Config, ConfigError, WHOLE_RTOL, key_unit, with_value
from ..model.nuclei import not_for
from ..model import states
from ..model.states import DTYPE
from ..run.loop import evolve
from ..run.sinks import Progress
from ..run.plan import prepare


def common_period(config: Config) -> float | None:
    """2 pi / beta when every moving centre has the same frequency beta; None if static."""
    freqs = {c.frequency for c in config.potential.centres if c.moving}
    if not freqs:
        return None
    if len(freqs) > 1:
        raise ConfigError("potential.centres.frequency", sorted(freqs),
                          "moving centres have different frequencies: no common period; "
                          "pass --period")
    return 2 * math.pi / abs(freqs.pop())


def floquet_config(config: Config, period=None, steps=None) -> tuple[Config, float, int, str]:
    """(config with t_end = T and dt = T/M, T, M, note).  With ``steps`` given, M is it;
    otherwise M is the whole number of steps nearest to T / time.dt, and when that
    changes dt the note says so (from what to what) -- it is never changed silently."""
    not_for(config, "Floquet analysis")
    if config.potential.field is not None:
        raise ConfigError("field", "[field]", "a pulse is not periodic: Floquet analysis needs "
                          "a periodic H (moving centres, no [field])")
    T = period if period is not None else common_period(config)
    if T is None:
        raise ConfigError("--period", None, "the potential is static: give the period T to use")
    if not (math.isfinite(T) and T > 0):
        raise ConfigError("--period", T, "must be a finite number > 0")
    note = ""
    if steps is not None:
        if steps < 1:
            raise ConfigError("--steps", steps, "must be >= 1")
        M, dt = int(steps), T / steps
    else:
        ratio = T / config.time.dt
        M = max(1, round(ratio))
        dt = T / M
        if abs(ratio - M) > WHOLE_RTOL * max(1.0, ratio):
            note = (f"T = {T:.12g} is {ratio:.6f} steps of time.dt = {config.time.dt:g}: using "
                    f"M = {M} steps of dt = T/M = {dt:.12g} (pass --steps to choose M)")
        else:
            dt = config.time.dt
    if M > 100_000_000:                 # (time.t_end's own limit: a step array had been 745 GiB)
        key, value = ("--steps", steps) if steps is not None else ("--period", T)
        raise ConfigError(key, value, f"gives {float(M):.3g} steps a period; at most 1e8")
    periodic = dataclasses.replace(config.potential, centres=tuple(
        dataclasses.replace(c, ramp=0.0) for c in config.potential.centres))
    if any(c.ramp for c in config.potential.centres):
        note = (note + "; " if note else "") + "centres' ramp set to 0 (the periodic drive)"
    cfg = dataclasses.replace(config, potential=periodic,
                              time=dataclasses.replace(config.time, dt=dt, t_end=M * dt))
    return cfg, T, M, note


def one_period_propagator(cfg: Config, M: int, *, backend="numpy", devices=None,
                          allow_inaccurate=False, progress=False):
    """(U(T) on the host, precheck, config run, auto's choice): M steps of the scheme on
    the identity through the one evolve loop."""
    plan = prepare(cfg, backend=backend, devices=devices, allow_inaccurate=allow_inaccurate,
                   operator=True, steps=M)
    xp = plan.backend.xp
    bar = Progress(M, desc="U(T)", disable=not progress)
    U = evolve(plan, None, [bar], U0=xp.eye(cfg.grid.n, dtype=DTYPE), stop=M).U   # (plan's BLAS threads)
    if hasattr(U, "to_array"):
        U = U.to_array(0)
    return to_host(U), plan.precheck, plan.config, plan.method_choice


#: two H(0) states are mixed where one Floquet state holds at least this much of each (a
#: two-level mixing whose weaker part is a quarter or more)
MIX_OVERLAP = 0.25


def _ties(best, ov=None) -> list:
    """Groups of H(0) states that share a Floquet state: whose largest overlap is with the
    same one, or each of which it holds at least MIX_OVERLAP of (an avoided crossing or
    strong mixing: the assignment n -> Floquet state is not one to one there, and each
    group's quasi-energy is one number, not one per state).  A resonant 50/50 mixing
    (overlaps 0.50 / 0.46 with two Floquet states) has different largest overlaps: the
    first rule alone missed it (#58 item 7)."""
    links = [{n for n, k2 in enumerate(best) if k2 == k} for k in set(int(k) for k in best)]
    if ov is not None:
        links += [set(np.flatnonzero(ov[:, k] >= MIX_OVERLAP).tolist()) for k in range(ov.shape[1])]
    groups = []
    for g in (s for s in links if len(s) > 1):
        for h in [h for h in groups if h & g]:
            groups.remove(h)
            g = g | h
        groups.append(g)
    return sorted(sorted(int(n) for n in g) for g in groups)


def analyse(config: Config, *, period=None, steps=None, count=8, backend="numpy", devices=None,
            allow_inaccurate=False, progress=False) -> dict:
    cfg, T, M, note = floquet_config(config, period, steps)
    U, pc, cfg, choice = one_period_propagator(cfg, M, backend=backend, devices=devices,
                                               allow_inaccurate=allow_inaccurate,
                                               progress=progress)
    return _analysis(cfg, T, M, note, U, pc.plan.as_dict(), choice, count)


def _analysis(cfg, T, M, note, U, plan, choice, count) -> dict:
    """Quasi-energies, Floquet states and their overlaps with H(0)'s eigenstates from U(T)."""
    lam, F = np.linalg.eig(U)
    phases = np.mod(-np.angle(lam), 2 * math.pi)
    eps = fold(phases / T, T)
    K = min(count, cfg.grid.n)
    E0, phi0 = states.eigenstates(cfg, 0.0, K)
    # phi0 rows are normalised with dx; F columns have unit 2-norm
    ov = np.abs((phi0 * math.sqrt(cfg.grid.dx)) @ F) ** 2          # (K, N)
    best = np.argmax(ov, axis=1)
    ties = _ties(best, ov)
    unitarity = float(np.linalg.norm(U.conj().T @ U - np.eye(cfg.grid.n)) / math.sqrt(cfg.grid.n))
    return {
        "name": cfg.name, "units": "atomic units (hbar = m_e = e = 1)",
        "period": T, "steps": M, "dt": cfg.time.dt, "dt_note": note, "n": cfg.grid.n,
        "scheme": cfg.propagator.scheme, "method": cfg.propagator.method,
        "plan": plan, "method_choice": choice, "unitarity": unitarity,
        "convention": "quasi-energy eps = -arg(lambda)/T folded into [-omega/2, omega/2), "
                      "omega = 2 pi/T; shift = (eps - E_n(0)) folded likewise",
        "omega": 2 * math.pi / T,
        "phases": phases.tolist(), "quasi_energies": eps.tolist(),
        "states": [{"n": int(n), "E_n": float(E0[n]), "E_n_T_mod_2pi": float(np.mod(E0[n] * T, 2 * math.pi)),
                    "floquet_index": int(best[n]), "overlap": float(ov[n, best[n]]),
                    "phase": float(phases[best[n]]),
                    "quasi_energy": float(eps[best[n]]),
                    "shift": float(fold(eps[best[n]] - E0[n], T)),
                    "shared_with": next((sorted(set(g) - {n}) for g in ties if n in g), [])}
                   for n in range(K)],
        "ties": ties,
        "overlaps": ov.tolist() if cfg.grid.n <= 512 else None,
    }


def batch_propagators(cfgs, M: int, *, backend="numpy", devices=None, progress=False):
    """U(T) of several members that share grid, scheme, dt and M, at once: the columns of
    every member's identity as one N x (N B) block through the batch stepper
    (:class:`tdse.numerics.stepper.BatchStepper`: block Chebyshev, one kinetic product per
    term for all columns, each column its member's potential; on a GPU each step one CUDA
    graph), the scans' machinery (#26).  Returns ([host U(T) of each member], the plan)."""
    from ..numerics import exponentials
    from ..numerics.stepper import BatchStepper
    n = cfgs[0].grid.n
    cheb = [dataclasses.replace(c, propagator=dataclasses.replace(
        c.propagator, method=exponentials.Chebyshev.name, time_error="none", error_window=0,
        operator=False)) for c in cfgs]
    plan = prepare(cheb[0], backend=backend, devices=devices, check_resolution=False,
                   steps=M)
    xp = plan.backend.xp
    stepper = BatchStepper([c for c in cheb for _ in range(n)], xp)   # member m: columns m n..
    X0 = xp.tile(xp.eye(n, dtype=DTYPE), (1, len(cfgs)))
    bar = Progress(M, desc=f"U(T) x {len(cfgs)}", disable=not progress)
    X = evolve(plan, X0, [bar], stop=M, stepper=stepper).psi   # (with the plan's BLAS threads)
    X = to_host(X)
    return [X[:, m * n:(m + 1) * n] for m in range(len(cfgs))], plan


def _floquet_batches(cfgs, Ms, memory):
    """Point numbers grouped by (grid, scheme, dt, M, centres), at most what ``memory``
    bytes hold (about 12 complex N x N blocks a member)."""
    groups = {}
    for i, (c, M) in enumerate(zip(cfgs, Ms)):
        g = c.grid
        key = (g.x_min, g.x_max, g.dx, str(g.stencil), c.propagator.scheme, c.time.dt, M,
               len(c.potential.centres))
        groups.setdefault(key, []).append(i)
    per = 12 * 16 * cfgs[0].grid.n ** 2
    cap = max(1, int(memory // per))
    return [idx[k:k + cap] for idx in groups.values() for k in range(0, len(idx), cap)]


# ---------------------------------------------------------------- quasi-energies over a parameter
def fold(eps, T):
    """Quasi-energies folded into the first zone [-omega/2, omega/2), omega = 2 pi / T."""
    w = 2 * math.pi / T
    return np.mod(np.asarray(eps) + 0.5 * w, w) - 0.5 * w


def scan(config: Config, key: str, values, *, period=None, steps=None, count=4,
         backend="numpy", devices=None, allow_inaccurate=False, progress=False,
         batched=True) -> dict:
    """:func:`analyse` for each value of the input key ``key`` (set with
    :func:`tdse.config.with_value`; ``potential.centres.*`` on every centre): the
    quasi-energy spectrum over a parameter grid, folded into [-omega/2, omega/2) (omega =
    2 pi / T, T of that point), and for each of the ``count`` lowest eigenstates n of H(0)
    the Floquet state that overlaps it most (its quasi-energy and |<F|n>|^2: a dip marks a
    resonance that mixes n with other states).  With ``--steps`` M is fixed; otherwise each
    point takes the M nearest T / time.dt (its note says so).  ``batched`` (default): the
    points that share grid, scheme, dt and M propagate their U(T) together
    (:func:`batch_propagators`, the block Chebyshev series of the scans, as many per batch
    as memory holds); otherwise one :func:`analyse` per point with the input's method."""
    from tqdm.auto import tqdm
    values = [float(v) for v in values]
    cfgs = [with_value(config, key, v) for v in values]   # every value checked before any work
    periodic = [floquet_config(cfg, period, steps) for cfg in cfgs]
    results = [None] * len(values)
    if batched:
        from .scan import device_memory
        from ..config import available_memory
        memory = device_memory(backend) or available_memory() // 2
        groups = _floquet_batches([p[0] for p in periodic], [p[2] for p in periodic], memory)
        for idx in tqdm(groups, unit="batch", desc=f"scan {key}", disable=not progress):
            Us, plan = batch_propagators([periodic[i][0] for i in idx], periodic[idx[0]][2],
                                         backend=backend, devices=devices)
            for i, U in zip(idx, Us):
                cfg, T, M, note = periodic[i]
                cfg = dataclasses.replace(cfg, propagator=plan.config.propagator)
                results[i] = _analysis(cfg, T, M, note, U, plan.precheck.plan.as_dict(),
                                       {"batched": len(idx)}, count)
    else:
        for i, cfg in enumerate(tqdm(cfgs, unit="point", desc=f"scan {key}", disable=not progress)):
            results[i] = analyse(cfg, period=period, steps=steps, count=count, backend=backend,
                                 devices=devices, allow_inaccurate=allow_inaccurate)
    points_ = []
    for val, res in zip(values, results):
        T = res["period"]
        points_.append({
            "value": float(val), "period": T, "omega": 2 * math.pi / T, "steps": res["steps"],
            "dt": res["dt"], "dt_note": res["dt_note"], "method": res["method"],
            "unitarity": res["unitarity"],
            "quasi_energies": res["quasi_energies"],
            "states": [{"n": s["n"], "E_n": s["E_n"], "overlap": s["overlap"],
                        "quasi_energy": s["quasi_energy"], "shift": s["shift"],
                        "shared_with": s["shared_with"]} for s in res["states"]],
            "ties": res["ties"]})
    unit = key_unit(key)
    return {"name": config.name, "key": key, "key_unit": unit,
            "units": "atomic units (hbar = m_e = e = 1): quasi-energies in hartree",
            "n": config.grid.n, "scheme": config.propagator.scheme, "backend": backend,
            "batched": bool(batched),
            "meaning": "quasi_energies: every eigenphase of the one-period U(T) as eps = phase/T "
                       "folded into [-omega/2, omega/2); states: for the lowest eigenstates n of "
                       "H(0), the Floquet state with the largest |<F|n>|^2",
            "points": points_}
