"""The in-run estimate of the time-discretisation error, an observer of the loop.

**Time error estimate** (:class:`TimeErrorEstimate`): ``error_window`` steps are also run
at dt/2 (step doubling) -- the first ones, or with a laser field those around the pulse's
peak; for a scheme of order p,
err(dt) ~ min_a ||psi_dt - e^(ia) psi_(dt/2)|| 2^p / (2^p - 1) at the window's end (a
global phase is no error of the state), and assuming
linear growth in time, err(t_end) ~ err(window) t_end / t_window.  This is an estimate
of the solution's error from the time discretisation (it includes the exponentials'
own small errors); the exponentials' bounds of the precheck are per exponential, and
the grid's error is what ``tdse converge`` measures.
"""
from __future__ import annotations

import dataclasses
import json
import math

import numpy as np

from mgemm.arrays import to_host

from ..config import Config
from ..numerics import schemes
from .loop import Observer

__all__ = ["TimeErrorEstimate", "phase_blind_distance", "window_start"]


def phase_blind_distance(a, b, dx):
    """min over alpha of ||a - e^(i alpha) b|| (L2 with weight dx): a global phase is no
    error of the state.  Computed as the distance to the aligned b (no cancellation)."""
    ov = np.vdot(b, a)
    ph = ov / abs(ov) if abs(ov) > 0 else 1.0
    return math.sqrt(float(np.sum(np.abs(a - ph * b) ** 2)) * dx)


def window_start(config: Config) -> int:
    """First step of the time-error window: 0 (the start, where an abrupt drive kicks),
    or with a field the window centred on the pulse's peak (duration/2), within the run."""
    W, steps = config.propagator.error_window, config.time.steps
    fld = config.potential.field
    if fld is None:
        return 0
    mid = round(0.5 * min(fld.duration, config.time.t_end) / config.time.dt)
    return int(min(max(0, mid - W // 2), max(0, steps - W)))


class TimeErrorEstimate(Observer):
    """Step doubling over ``window`` steps from step ``start`` (module docstring); an
    observer of the loop that stores its result in the run file when it is made."""

    def __init__(self, plan, window: int, start=0, writer=None, stored=None, resumed_at=0):
        config = plan.config
        self.config, self.window, self.xp, self.start_step = config, window, plan.backend.xp, start
        self.writer = writer
        dt = config.time.dt
        half = dataclasses.replace(config, time=dataclasses.replace(
            config.time, dt=dt / 2, t_end=(start + window) * dt))
        self.half = plan.stepper(half)
        self.order = schemes.get(config.propagator.scheme).order
        self.psi = None
        self.result = None
        if stored not in (None, "none"):       # a resumed run that had its estimate
            self.result = json.loads(stored)
        elif resumed_at > self.start_step:     # resumed inside or after its window
            self.start_step = min(resumed_at, max(0, config.time.steps - window))

    def before(self, j, state):
        self.take(j, state.psi)

    def after(self, state):
        if self.advance(state.step - 1, state.psi) is not None and self.writer is not None:
            self.writer.set_attrs(time_error=self.result)

    def take(self, j, psi):
        """Before main step j: take psi(t_j) when the window starts here."""
        if self.result is None and self.psi is None and j == self.start_step:
            self.psi = self.xp.array(psi, copy=True)

    def advance(self, j, psi):
        """After main step j (psi = psi(t_(j+1))): two half steps; at the window's end the
        estimate is made (returns it then)."""
        if self.result is not None or self.psi is None:
            return None
        self.psi = self.half.step(self.half.step(self.psi, 2 * j), 2 * j + 1)
        if j + 1 < self.start_step + self.window:
            return None
        cfg, p = self.config, self.order
        a, b = to_host(psi), to_host(self.psi)
        l2 = math.sqrt(float(np.sum(np.abs(a - b) ** 2)) * cfg.grid.dx)
        diff = phase_blind_distance(a, b, cfg.grid.dx)
        err = diff * 2 ** p / (2 ** p - 1)
        t0, t1 = self.start_step * cfg.time.dt, (self.start_step + self.window) * cfg.time.dt
        self.result = {
            "scheme": cfg.propagator.scheme, "order": p, "dt": cfg.time.dt,
            "window_steps": self.window, "t_window_start": t0, "t_window": t1,
            "psi_diff_dt_vs_half": diff, "psi_l2_diff_with_phase": l2,
            "error_at_window": err, "error_at_t_end_linear": err * cfg.time.steps / self.window,
            "t_end": cfg.time.t_end,
            "meaning": "estimated error of psi (L2 distance up to a global phase) from the time "
                       "discretisation, by step doubling over a window of the run; extrapolated "
                       "to t_end assuming it grows linearly in time"}
        self.psi = None
        return self.result
