"""Inputs made from random parameters, four kinds of drive, for the checks of the stated time
error (#56; tests/test_local_error.py and ``python -m benchmarks time-error``): an abrupt
drive (centres set moving at t = 0), a smoothly ramped one, a laser pulse into an absorber
with 20 a.u. of quiet after it, and fast-moving centres.  Atomic units."""
from __future__ import annotations

import dataclasses

import numpy as np

KINDS = ("abrupt", "ramped", "laser", "fast")


def make(kind, rng, scheme="cfm4", method="chebyshev", dt=None, time_error="estimate"):
    """A Config of one kind of drive (:data:`KINDS`) from random parameters drawn from
    ``rng``: inputs the estimate was not tuned on."""
    u = rng.uniform
    if kind == "abrupt":          # centres set moving at t = 0 (no ramp), out of phase
        grid = {"x_min": -8.0, "x_max": 8.0, "dx": 0.2, "stencil": 5}
        f = u(1.5, 3.5)
        pot = {"a": u(0.4, 1.0), "centres": [
            {"x0": -u(0.8, 1.4), "Z": u(1.0, 2.0), "amplitude": u(0.2, 0.5), "frequency": f},
            {"x0": u(0.8, 1.4), "Z": u(1.0, 2.0), "amplitude": u(0.2, 0.5), "frequency": f,
             "phase": u(0.5, 2.0)}]}
        extra, time = {}, {"dt": dt or 0.02, "t_end": 3.0}
    elif kind == "ramped":
        grid = {"x_min": -8.0, "x_max": 8.0, "dx": 0.1, "stencil": "dvr"}
        f, r = u(3.0, 5.0), u(1.0, 2.0)
        pot = {"a": u(0.2, 0.5), "centres": [
            {"x0": -1.0, "Z": u(3.0, 6.0), "amplitude": u(0.2, 0.4), "frequency": f, "ramp": r},
            {"x0": 1.0, "Z": u(3.0, 6.0), "amplitude": u(0.2, 0.4), "frequency": f, "ramp": r}]}
        extra, time = {}, {"dt": dt or 0.02, "t_end": 4.0}
    elif kind == "laser":         # a pulse that ionises into an absorber
        grid = {"x_min": -40.0, "x_max": 40.0, "dx": 0.25, "stencil": "dvr"}
        pot = {"a": u(1.2, 2.0), "centres": [{"x0": 0.0, "Z": 1.0}]}
        extra = {"field": {"E0": u(0.06, 0.1), "omega": u(0.2, 0.4), "duration": 30.0,
                           "envelope": "sin2"}, "absorber": {"width": 10.0}}
        time = {"dt": dt or 0.1, "t_end": 50.0}     # 20 a.u. after the pulse
    else:                          # fast: centres at several times the electron's frequency
        grid = {"x_min": -9.0, "x_max": 9.0, "dx": 0.15, "stencil": 3}
        f = u(7.0, 11.0)
        pot = {"a": 0.5, "centres": [
            {"x0": -1.0, "Z": 2.0, "amplitude": u(0.4, 0.7), "frequency": f},
            {"x0": 1.0, "Z": 2.0, "amplitude": u(0.4, 0.7), "frequency": f}]}
        extra, time = {}, {"dt": dt or 0.01, "t_end": 2.0}
    d = {"name": kind, "grid": grid, "potential": pot, "initial": {"state": 0}, "time": time,
         "propagator": {"method": method, "tolerance": 1e-13, "scheme": scheme,
                        "time_error": time_error},
         "output": {"every": 10, "populations": 3}}
    d.update(extra)
    from tdse.config import parse
    return parse(d)


def reference(config, factor=8):
    """(plan, psi(t_end)) at dt/factor, Chebyshev at 1e-14, no estimate: an independent run."""
    import tdse
    from tdse.config import with_value
    from tdse.run.loop import advance
    ref = with_value(with_value(with_value(config, "time.dt", config.time.dt / factor),
                                "propagator.method", "chebyshev"), "propagator.tolerance", 1e-14)
    ref = dataclasses.replace(ref, time=dataclasses.replace(ref.time, tolerance=None, dt_min=None),
                              propagator=dataclasses.replace(ref.propagator, time_error="none"))
    plan = tdse.prepare(ref, backend="numpy")
    return plan, advance(plan.stepper(), np.asarray(plan.psi0, dtype=complex), 0, ref.time.steps)
