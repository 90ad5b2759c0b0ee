"""The in-run estimates of the time-discretisation error, sinks of the loop.

**From the local errors** (:class:`LocalEstimate`, ``time_error = "estimate"``, the default
when H depends on t): at every
step the leading term of the step's local error L_j (:mod:`tdse.numerics.local_error`,
asymptotically correct: within 10 % of the measured one at the tests' dt,
``tests/test_local_error.py``), carried along as the linearised global error
e_(j+1) = S_j e_j + L_j (Kormann, Holmgren & Karlsson, Uppsala TR 2009-021: the global
error is the sum of the local ones each propagated to t; no assumption of how they add --
summed as norms they overstated it 6-80x, their phases cancel) by the carrier
(:mod:`tdse.numerics.carrier`: in the length gauge a split step -- on a GPU a piece of them
one kernel --, in the velocity gauge and a GPU scan's batch a midpoint Chebyshev step at
1e-6; e needs a few digits, and it is carried with an
O(dt^2) relative error), in
:class:`tdse.numerics.adaptive.EstimatingStepper`.  The stated error is SAFETY ||e||
with e's global-phase part i Im<psi, e> psi / ||psi||^2 taken out (a phase is no error of
the state), per snapshot and at t_end; the populations' P_n = |<phi_n|psi>|^2 by their
first-order change with e (an estimate, and the loose bound E implies:
:meth:`LocalEstimate.estimate`).

**Over the whole run** (:class:`CompanionEstimate`, ``time_error = "companion"``, opt-in; the
default is the estimate above): a companion psi is propagated beside the run with half its
step, dt/2 (two companion steps per step of the run), and compared with the run's psi at
every snapshot.  With e the run's error and e' the companion's, their distance
d = min_a ||psi_dt - e^(ia) psi_(dt/2)|| lies in [e - e', e + e'].  The stated error is
E = 2 d (``SAFETY``), which bounds e whenever e' <= e / 2 -- for a scheme of order p in
its asymptotic regime e' = e / 2^p (E = 2 (1 - 2^-p) e: 1.5 e for midpoint, 1.9 e for
cfm4), and also when the run's error is the exponentials' rounding noise rather than the
time discretisation (the companion's noise is then of the same size and independent:
E ~ 2-3 e), where Richardson's d / (2^p - 1) would understate it.  The companion's
exponentials are 100x tighter than the run's (measured on tiny.toml at the exponentials'
floor: with the run's own tolerance the two runs' truncation errors partly cancel and E was
0.8 e).  (A companion at 2 dt
costs less, but its distance to the run is 2^p e in the time-dominated regime and ~e in
the noise-dominated one, and no single factor turns both into a bound within 10x for
cfm4: measured on atom_hhg, docs/time_error/README.md.)  Stored per snapshot
(``/snapshots/time_error``) and at t_end, with the companion's measured cost.

**Over a window** (:class:`TimeErrorEstimate`, ``time_error = "window"``): ``error_window`` steps are also run
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
import time

import numpy as np

from mgemm.arrays import to_host

from ..config import Config
from ..numerics import schemes
from ..numerics import adaptive
from .loop import Sink, advance

__all__ = ["TimeErrorEstimate", "CompanionEstimate", "LocalEstimate", "BatchEstimate",
           "estimating_batch", "scan_estimates", "stated", "describe", "phase_blind_distance", "window_start",
           "companion_config", "SAFETY", "energy_band"]

#: E = SAFETY x the distance to the companion at dt/2, or x the carried error
SAFETY = adaptive.SAFETY


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


class TimeErrorEstimate(Sink):
    """Step doubling over ``window`` steps from step ``start`` (module docstring); a sink
    of the loop (its save points: the window's two ends) that stores its result in the run
    file when it is made."""

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

    def next_point(self, step, stop):
        if self.result is not None:
            return None
        for p in (self.start_step, self.start_step + self.window):
            if step < p <= stop:
                return p
        return None

    def begin(self, state):
        self.take(state.step, state.psi)

    def save(self, state):
        self.take(state.step, state.psi)
        if self.advance(state.step, state.psi) is not None and self.writer is not None:
            self.writer.set_attrs(time_error=self.result)

    def take(self, j, psi):
        """At step j: take psi(t_j) when the window starts here."""
        if self.result is None and self.psi is None and j == self.start_step:
            self.psi = self.xp.array(psi, copy=True)

    def advance(self, j, psi):
        """At step j (psi = psi(t_j)) the window's end: its steps at dt/2 taken, the
        estimate made (returned; else None)."""
        if self.result is not None or self.psi is None or j != self.start_step + self.window:
            return None
        self.psi = advance(self.half, self.psi, 2 * self.start_step, 2 * j)
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
            "error_at_window": err, "t_end": cfg.time.t_end,
            "meaning": "estimated error of psi (L2 distance up to a global phase) from the time "
                       "discretisation, by step doubling over a window of the run: it says "
                       "nothing about later times (time_error = \"companion\" covers the whole "
                       "run)"}
        self.psi = None
        return self.result


#: the companion's exponentials are this much tighter than the run's (down to COMPANION_FLOOR)
COMPANION_TIGHTER = 1e-2
COMPANION_FLOOR = 1e-15


def companion_config(config: Config) -> Config:
    """The companion's configuration: the run at dt/2 (no output or estimate of its own),
    with the run's method at a tolerance 100x tighter (down to 1e-15), so that its own
    error is at most half the run's in both regimes: the time discretisation (2^-p) and
    the exponentials' truncation (whose errors at dt and dt/2 are correlated, and would
    otherwise partly cancel in the distance)."""
    pr = config.propagator
    tol = max(pr.tolerance * COMPANION_TIGHTER, COMPANION_FLOOR)
    return dataclasses.replace(config, time=dataclasses.replace(config.time, dt=config.time.dt / 2),
                               propagator=dataclasses.replace(pr, time_error="none", error_window=0,
                                                              operator=False, tolerance=tol))


def _summary(points) -> dict:
    """The result's comparisons from the points (t, error, population error) of a sink."""
    nan3 = (math.nan, math.nan, math.nan)
    t_last, e_last, p_last = points[-1] if points else nan3
    t_max, e_max, _ = max(points, key=lambda q: q[1]) if points else nan3
    return {"error_at_t_end": e_last, "t_compared": t_last, "max_error": e_max,
            "t_max_error": t_max, "comparisons": len(points), "population_error_at_t_end": p_last,
            "max_population_error": max((q[2] for q in points), default=math.nan)}


class CompanionEstimate(Sink):
    """The run's time error over the whole run, from a companion at dt/2 (module
    docstring).  ``snapshots``: the :class:`~tdse.run.sinks.Snapshots` sink, which
    stores each comparison in its row and the companion's psi for resuming."""

    def __init__(self, plan, writer=None, snapshots=None, resume=None):
        cfg = plan.config
        self.config, self.writer, self.snapshots = cfg, writer, snapshots
        self.companion = companion_config(cfg)
        self.stepper = plan.stepper(self.companion)
        self.order = schemes.get(cfg.propagator.scheme).order
        self.xp = plan.backend.xp
        self.psi2 = None
        self.every, self.last = cfg.output.every, cfg.time.steps   # at each snapshot: compared there
        self.at = 0                          # the step the companion has reached
        self.seconds, self.main_t0 = 0.0, None
        self.points = []          # (t, estimate, population estimate)
        self.resume = resume
        self.result = None
        self.phi0 = plan.states[:cfg.output.populations]

    def begin(self, state):
        self.main_t0 = time.perf_counter()
        self.at = state.step
        if self.resume is not None:
            if self.resume.get("companion") is None:   # a file without the companion's psi
                return
            self.psi2 = self.xp.asarray(self.resume["companion"])
            # the comparisons up to the resumed snapshot, from its rows (the attribute may
            # be past them, or unreadable where the disk filled); that snapshot is not
            # compared again: its row is in the file
            rows = self.resume.get("companion_rows")
            self.points = [tuple(float(v) for v in r) for r in rows] if rows is not None else []
            return
        self.psi2 = self.xp.array(state.psi, copy=True)
        self._offer(state)

    def save(self, state):
        if self.psi2 is None:
            return
        t0 = time.perf_counter()      # the companion's two half steps a main step, to here
        self.psi2 = advance(self.stepper, self.psi2, 2 * self.at, 2 * state.step)
        self.at = state.step
        self.seconds += time.perf_counter() - t0
        self._offer(state)

    def estimate(self, psi, psi2) -> float:
        """E = SAFETY d, d the phase-blind distance of psi_dt and psi_(dt/2)."""
        return SAFETY * phase_blind_distance(to_host(psi), to_host(psi2), self.config.grid.dx)

    def population_estimate(self, psi, psi2) -> float:
        """SAFETY max_n |P_n(psi_dt) - P_n(psi_(dt/2))|, P_n in the eigenstates of H(0): the
        populations' own time error (far below the bound 2 ||d psi||, which a phase error of
        psi that no population sees dominates)."""
        dx = self.config.grid.dx
        a = np.abs(self.phi0 @ to_host(psi) * dx) ** 2
        b = np.abs(self.phi0 @ to_host(psi2) * dx) ** 2
        return SAFETY * float(np.abs(a - b).max())

    def _offer(self, state):
        """At a snapshot: the comparison into its row, the companion's psi for resuming."""
        cfg = self.config
        if self.snapshots is None or not (state.step % cfg.output.every == 0 or state.step == 0
                                          or state.step == cfg.time.steps):
            return
        e = self.estimate(state.psi, self.psi2)
        ep = self.population_estimate(state.psi, self.psi2)
        self.points.append((state.t, e, ep))
        self.snapshots.row_extras.update(time_error=e, time_error_populations=ep)
        self.snapshots.resume_extras["companion"] = to_host(self.psi2)

    def end(self, state):
        cfg = self.config
        wall = time.perf_counter() - self.main_t0 if self.main_t0 else 0.0
        self.result = {
            "kind": "companion", "scheme": cfg.propagator.scheme, "order": self.order,
            "dt": cfg.time.dt, "companion_dt": self.companion.time.dt,
            "companion_method": self.companion.propagator.method, "safety": SAFETY,
            "t_end": cfg.time.t_end, **_summary(self.points),
            "companion_seconds": self.seconds,
            "companion_fraction": self.seconds / max(wall - self.seconds, 1e-12),
            "meaning": "estimated bound on the error of psi (L2 distance up to a global phase) "
                       "over the whole run: 2 x the distance to a companion run at dt/2; per "
                       "snapshot in /snapshots/time_error"}
        if self.writer is not None:
            self.writer.set_attrs(time_error=self.result)


class LocalEstimate(Sink):
    """The run's time error from its local errors, carried along by the run's
    :class:`~tdse.numerics.adaptive.EstimatingStepper` (module docstring), read at each
    snapshot.  ``snapshots``: the :class:`~tdse.run.sinks.Snapshots` sink, which stores
    each snapshot's estimate and steps in its row, and e and n for resuming."""

    def __init__(self, plan, stepper, writer=None, snapshots=None, resume=None):
        cfg = plan.config
        self.config, self.writer, self.snapshots, self.resume = cfg, writer, snapshots, resume
        self.stepper, self.order = stepper, stepper.local.order
        self.phi0 = plan.states[:cfg.output.populations]
        self.points = []          # (t, estimate, population estimate: NaN till its snapshot is written)
        self.bound = math.nan     # the populations' bound at the last snapshot
        self.main_t0, self.result, self.active = None, None, True
        self.every, self.last = cfg.output.every, cfg.time.steps

    def begin(self, state):
        self.main_t0 = time.perf_counter()
        r, st = self.resume, self.stepper
        if r is not None and r.get("error_vector") is not None:
            st.e = st.xp.asarray(r["error_vector"])
            if r.get("step_counts") is not None:
                st.n, st.substeps, st.rejected = (int(v) for v in r["step_counts"])
            rows = r.get("companion_rows")
            self.points = [tuple(float(v) for v in q) for q in rows] if rows is not None else []
            self.bound = self.estimate(state.psi, st.e)[2]   # (the resumed snapshot's)
        elif r is not None:           # a file without e: no estimate from here
            self.active = False
        else:
            st.e = st.xp.zeros_like(state.psi)
            self._offer(state)

    def save(self, state):
        if self.active:
            self._offer(state)

    def estimate(self, psi, e) -> tuple:
        """(E, dP, B) on the host: E = SAFETY ||e without its phase part||; dP = SAFETY
        max_n |2 Re(conj(<phi_n|psi>) <phi_n|e>)|, the populations' first-order change by e
        (an estimate: 0.5-10x the true error on 32 draws of the four kinds, under 1 for cfm4
        where the true one is 1e-8 or less, near the exponentials' own truncation); B =
        max_n (2 sqrt(P_n) E + E^2), the bound E implies (Cauchy-Schwarz; loose: where
        the error misses the populated states, 1e4 x dP on h2plus_moving_ramped)."""
        a, d = to_host(psi), to_host(e)
        err, dp, ca = stated(np, a[:, None], d[:, None], self.phi0[None], self.config.grid.dx)
        err, dp = float(err[0]), float(dp[0])
        if not ca.size:
            return err, math.nan, math.nan
        return err, dp, float((2.0 * np.abs(ca[0]) * err + err * err).max())

    def _offer(self, state):
        cfg, st = self.config, self.stepper
        if not (state.step % cfg.output.every == 0 or state.step == cfg.time.steps):
            return
        if self.snapshots is None:
            e, ep, self.bound = self.estimate(state.psi, st.e)
            self.points.append((state.t, e, ep))
        else:
            slot = len(self.points)
            self.points.append((state.t, math.nan, math.nan))

            def row(psi, keep):        # psi and e as the snapshot has them on the host
                e, ep, bound = self.estimate(psi, keep["error_vector"])
                self.points[slot] = (self.points[slot][0], e, ep)
                if slot == len(self.points) - 1:
                    self.bound = bound
                return {"time_error": e, "time_error_populations": ep}
            # the stated error made from the snapshot's own copies of psi and e when it is
            # written (on a GPU after their copies ran: no wait for the steps queued, where a
            # copy here had waited at every snapshot; e copied where it lives, as it goes on
            # in place)
            self.snapshots.row_extras.update(time_error=row, steps_taken=st.substeps, step_min=st.h_min)
            # (on a GPU's split carrier e after a piece that goes on past this snapshot,
            # read when the piece is made: DeferredE)
            self.snapshots.resume_extras["error_vector"] = st.deferred_e(state.step) or st.e.copy()
            self.snapshots.resume_extras["step_counts"] = np.array([st.n, st.substeps, st.rejected])
        st.h_min = cfg.time.dt              # the smallest step since this snapshot, next

    def end(self, state):
        cfg = self.config
        if self.snapshots is not None:
            self.snapshots.finish()      # (the snapshots' rows make the points: _offer)
        wall = time.perf_counter() - self.main_t0 if self.main_t0 else 0.0
        self.result = {
            "kind": "estimate", "scheme": cfg.propagator.scheme, "order": self.order,
            "dt": cfg.time.dt, "safety": SAFETY, "products_per_step": self.stepper.local.products(),
            "carried_by": self.stepper.carried_by,
            "tolerance": cfg.time.tolerance, "steps_taken": self.stepper.substeps,
            "rejected": self.stepper.rejected, "t_end": cfg.time.t_end, **_summary(self.points),
            "population_bound_at_t_end": self.bound,
            "estimate_seconds": self.stepper.seconds,
            "estimate_fraction": self.stepper.seconds / max(wall - self.stepper.seconds, 1e-12),
            "meaning": "estimated bound on the error of psi (L2 distance up to a global phase) "
                       "over the whole run: 2 x the norm of the local errors' leading terms, "
                       "each carried to t (tdse.numerics.local_error); per snapshot in "
                       "/snapshots/time_error"}
        if self.writer is not None:
            self.writer.set_attrs(time_error=self.result)


def stated(xp, a, d, phi, dx):
    """(E, dP, <phi|a>) of states ``a`` with carried errors ``d`` (N x B each, on ``xp``) and
    each column's reference states ``phi`` (B x K x N): E = SAFETY ||d without its part
    along a's phase|| (i Im<a, d> a / ||a||^2: a phase is no error of the state), dP =
    SAFETY max_n |2 Re(conj(<phi_n|a>) <phi_n|d>)| (NaN without states), (B,) each."""
    beta = xp.sum(a.conj() * d, axis=0).imag / xp.maximum(xp.sum(xp.abs(a) ** 2, axis=0), 1e-300)
    err = SAFETY * xp.sqrt(xp.sum(xp.abs(d - 1j * beta[None, :] * a) ** 2, axis=0) * dx)
    if not phi.shape[1]:
        return err, xp.full_like(err, math.nan), xp.zeros((a.shape[1], 0), a.dtype)
    c = xp.matmul(phi, xp.stack([a.T, d.T], axis=2)) * dx      # (B, K, 2): <phi|a>, <phi|d>
    ca, cd = c[..., 0], c[..., 1]
    return err, SAFETY * xp.abs(2.0 * (ca.conj() * cd).real).max(axis=1), ca


def scan_estimates(config) -> bool:
    """Whether a scan states its members' time errors: where the input asks for the estimate
    (``time_error = "estimate"``, which ``time.tolerance`` implies).  The companion and the
    window are not run in a scan (docs/SCANS.md)."""
    return config.propagator.time_error == "estimate"


def estimating_batch(stepper, configs, phi, xp=np):
    """A scan batch's steps with each member's time error (``time_error = "estimate"``): an
    :class:`~tdse.numerics.adaptive.EstimatingStepper` over ``stepper``'s kind of steps
    (:class:`~tdse.numerics.stepper.BatchStepper`) whose estimate is the block's
    (:class:`~tdse.numerics.local_error.BatchLocalError`), and the sink that reads each
    member's stated error (:class:`BatchEstimate`).  With ``time.tolerance`` the members
    share their steps, chosen for the largest estimate among them."""
    from ..numerics.local_error import BatchLocalError
    from ..numerics.stepper import BatchStepper

    def make(c):          # ``stepper`` itself, or the members at c's time and propagator (dt/n, the carrier's)
        return stepper if c is configs[0] else BatchStepper(
            [dataclasses.replace(m, time=c.time, propagator=c.propagator) for m in configs], xp)
    local = BatchLocalError(configs, stepper.potential, stepper.W, xp)
    est = adaptive.EstimatingStepper(configs[0], make, xp, control=configs[0].time.tolerance is not None,
                                     local=local)
    return est, BatchEstimate(est, phi, configs[0])


class BatchEstimate(Sink):
    """Each member's stated time error in a scan's batch (a column of the N x B block and of
    the carried e): as :meth:`LocalEstimate.estimate`'s E and dP, member by member on the
    block's device, every ``observables_every`` steps (the scan's rows)."""

    def __init__(self, stepper, phi, config):
        self.stepper, self.xp, self.dx = stepper, stepper.xp, config.grid.dx
        # (B, K, N): each member's H(0) states, complex once (stated's product with psi and e:
        # its einsums had cost a 64-member scan on one H200 1.4 ms a row, 0.68 s of a 1.75 s
        # loop: scan_estimate_profile_h200x1_20261129T2004.txt)
        self.phi = stepper.xp.asarray(phi, dtype=np.complex128)
        self.every, self.last = config.output.observables_every, config.time.steps
        self.rows = []

    def begin(self, state):
        self.stepper.e = self.xp.zeros_like(state.psi)
        self.save(state)

    def save(self, state):
        err, dp, _ = stated(self.xp, state.psi, self.stepper.e, self.phi, self.dx)
        self.rows.append(self.xp.stack([err, dp]))

    def columns(self) -> dict:
        """{"time_error", "time_error_populations"}: (B, S) each, on the host."""
        rows = to_host(self.xp.stack(self.rows))           # (S, 2, B)
        return {"time_error": np.ascontiguousarray(rows[:, 0].T),
                "time_error_populations": np.ascontiguousarray(rows[:, 1].T)}


def describe(e: dict) -> str:
    """The line a run prints of its stored estimate ``e`` (any kind above; atomic units)."""
    head = f"time-discretisation error of psi ({e['scheme']}, order {e['order']}, dt = {e['dt']:g})"
    if e.get("kind") not in ("estimate", "companion"):
        return (f"{head}, estimated by step doubling over t = {e.get('t_window_start', 0.0):.4g}.."
                f"{e['t_window']:.4g} ({e['window_steps']} steps): {e['error_at_window']:.2g} there "
                f"(a window only: it says nothing about later times; time_error = \"estimate\" "
                f"covers the whole run)")
    how = ("each step's local error (its leading term) carried to t" if e["kind"] == "estimate"
           else "the distance to a companion run at dt/2")
    return (f"{head}: {e['error_at_t_end']:.2g} at t = {e['t_compared']:.4g}, largest "
            f"{e['max_error']:.2g} at t = {e['t_max_error']:.4g}; {e['safety']:g} x {how} over the "
            f"whole run (per snapshot in /snapshots/time_error), which cost "
            f"+{100 * e[e['kind'] + '_fraction']:.0f} % of the stepping time; of the populations in "
            f"H(0)'s eigenstates: {e['population_error_at_t_end']:.2g} at t_end, largest "
            f"{e['max_population_error']:.2g}")


def energy_band(cfg, x, ts, psis, err):
    """(t, <H>, half-width) at the snapshots where psi's time error E is stated (``err``:
    ``/snapshots/time_error``, NaN where none), or None: the largest change of
    <H> = <psi|H|psi>/<psi|psi> over every psi' within E of psi,
    (2 eps r + eps^2 w) / (1 - eps)^2 with eps = E / ||psi|| (both L2 with weight dx, as E
    is stated), r = ||(H - <H>) psi|| / ||psi||
    and w the farthest end of H's spectral bounds from <H> (<psi'|(H - <H>)|psi'> =
    2 Re<e|(H - <H>) psi> + <e|(H - <H>)|e>, Cauchy-Schwarz; ||psi'|| >= ||psi|| - ||e||).
    H(t) = T + V(t) + x E(t) as the energy observable has it (without the absorber); None in
    the velocity gauge, or where eps >= 1.  (The drift picture's error bars.)"""
    from ..model.field import velocity_gauge
    from ..model.hamiltonian import Operator, spectrum_bounds
    from ..model.potential import total
    err = np.asarray(err, dtype=np.float64)
    keep = np.isfinite(err)
    if velocity_gauge(cfg.field) or not keep.any():
        return None
    g, out = cfg.grid, []
    for t, E, psi in zip(np.asarray(ts)[keep], err[keep], np.asarray(psis)[keep]):
        v = total(cfg.potential, x, float(t))
        norm = math.sqrt(float(np.sum(np.abs(psi) ** 2)) * g.dx)    # E's norm: L2 with weight dx
        eps = E / norm
        if not eps < 1:
            return None
        Hpsi = Operator(cfg, 1.0, v)(psi)
        e = float(np.vdot(psi, Hpsi).real / np.vdot(psi, psi).real)
        r = float(np.linalg.norm(Hpsi - e * psi) / np.linalg.norm(psi))
        lo, hi = spectrum_bounds(g.stencil, g.dx, float(v.min()), float(v.max()))
        w = max(abs(lo - e), abs(hi - e))
        out.append((t, e, (2 * eps * r + eps * eps * w) / (1 - eps) ** 2))
    return tuple(np.array(c) for c in zip(*out))
