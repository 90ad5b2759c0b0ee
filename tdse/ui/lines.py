"""The lines `tdse run` prints around a run: what it will do, the error estimates, the
absorber's yield with what it is worth, and the process's wall (atomic units)."""
from __future__ import annotations

import os
import time

__all__ = ["header", "yield_lines", "error_summary", "process_seconds"]

_IMPORTED = time.perf_counter()


def header(plan, resume_arg, out):
    """What the run will do: warnings, notes, numerics, the time-error estimate's cost."""
    cfg, pc = plan.config, plan.precheck
    for w in pc.warnings:
        out(f"warning: {w}", err=True)
    for note in pc.notes:
        out(f"note: {note}", err=True)
    if not pc.ok:
        out(f"warning: --allow-inaccurate: {pc.message}", err=True)
    what = f"resuming at step {resume_arg[0]['step']} of" if resume_arg else ""
    pr, t = cfg.propagator, cfg.time
    adaptive = f" (each split as time.tolerance = {t.tolerance:g} needs, down to dt_min = {t.dt_min:g})" \
        if t.tolerance is not None else ""
    out(f"{cfg.name}: N = {cfg.grid.n} ({cfg.grid.stencil}{'-point' if cfg.grid.stencil != 'dvr' else ''}"
        f" kinetic energy), {what} {t.steps} steps of dt = {t.dt:g}{adaptive}, "
        f"scheme {pr.scheme}; exponentials: {pc.message}".replace("  ", " "), err=True)
    if pr.time_error == "companion":
        out("note: time error: a companion run at dt/2 beside this one (propagator.time_error = "
            "\"companion\"): about 1.6-3x the stepping time; \"estimate\" (x1.2 the main job) or \"none\" less",
            err=True)


def yield_lines(cfg, res):
    """The absorber's yield, with what it is worth (#58 item 7): the exponentials' own norm
    error (tolerance each, summed) below which it is not resolved -- a weak field's yield
    of -1e-8 is that, not a negative probability -- and which observables are divided by
    the remaining norm."""
    if cfg.absorber is None:
        return []
    obs = res.observables
    drift = cfg.propagator.tolerance * max(res.exponentials, 1)
    y = float(obs["yield"][-1])
    resolved = (f"; below the exponentials' own norm error ({drift:.1g}: their tolerance "
                f"summed) it is not resolved" if abs(y) <= drift else "")
    return [f"yield at t = {obs['t'][-1]:.4g}: {y:.5g} as 1 - norm; "
            f"{obs['yield_flux'][-1]:.5g} as the flux into the absorbing layers "
            f"({obs['layer_norm'][-1]:.3g} of the norm is still inside them){resolved}; <H>, "
            f"<x>, <p> are divided by the remaining norm, the acceleration, the populations "
            f"and <n> are not (they are of psi as it is: the populations sum to the norm)"]


def error_summary(cfg, pc, time_error):
    """Lines saying which error estimate is which (atomic units)."""
    pr = cfg.propagator
    out = []
    e = time_error
    if e:
        from ..run.timeerror import describe
        out.append(describe(e))
    elif not cfg.time_dependent:
        out.append("time-discretisation error: none (H does not depend on time; the scheme is exact)")
    elif pr.time_error != "none":
        out.append("time-discretisation error: not estimated (the run resumed past its window)")
    else:
        out.append("time-discretisation error: not estimated (propagator.time_error = \"none\")")
    from ..numerics.exponentials import get
    out.append(get(pr.method).describe(pc))
    out.append("the grid's error (dx, stencil, box) is not estimated by a run: `tdse converge INPUT`")
    return out


def process_seconds() -> float:
    """Seconds since this process started (Linux: /proc/self/stat's start time against
    /proc/uptime; elsewhere since this module was imported)."""
    try:
        with open("/proc/self/stat") as f:
            ticks = int(f.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/uptime") as f:
            up = float(f.read().split()[0])
        return max(0.0, up - ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return time.perf_counter() - _IMPORTED
