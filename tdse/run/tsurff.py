"""t-SURFF in 1D (Tao & Scrinzi, New J. Phys. 14, 013021 (2012), eqs. (9)-(11)), atomic
units: the amplitudes of the electrons that cross x = +R (going right) and x = -R (going
left), accumulated step by step against Volkov waves,

    length gauge    chi_k(x, t) = (2 pi)^(-1/2) exp(i (k + A(t)) x - i Phi_k(t)),
                    b_R(k) = -(i/2) int dt chi_k*(R, t) [psi'(R, t) + i (k + A) psi(R, t)],
    velocity gauge  chi_k(x, t) = (2 pi)^(-1/2) exp(i k x - i Phi_k(t)),
                    b_R(k) = -(i/2) int dt chi_k*(R, t) [psi'(R, t) + i (k + 2 A) psi(R, t)],

    A(t) = -int_0^t E (:func:`tdse.model.field.vector_potential`),   Phi_k(t) = int_0^t (k + A)^2 / 2,

and b_L the same at -R with the opposite sign: the flux through each surface,
<chi_k| [H_Volkov, Theta] |psi>, the Wronskian with the covariant derivative d/dx + i A in
the velocity gauge (so both gauges give the same b: psi_v = e^(-iAx) psi_l, chi likewise).
The time integrals by the trapezoid rule over the run's steps, psi' by the 5-point
difference.  ``P(k) = |b(k)|^2`` once every electron has passed R: the spectrum of what has
left, for k > 0 through +R and k < 0 through -R.  Needs no absorber inside R (one beyond
it is what the method allows) and V ~ 0 beyond R.

An :class:`~tdse.run.loop.Observer` (every step; its steps' integrands are made
:data:`TSurff.BLOCK` at a time, where psi lives: on a GPU a step only keeps the state's
array, and a block's points are gathered by one kernel), for :func:`tdse.evolve` from t = 0, or a run's sink
from its input (``[output] tsurff_radius``): then its sums are kept at each snapshot for
resuming and its spectrum stored in the run file's ``photoelectrons_tsurff`` attribute
(``tdse spectrum FILE --kind photoelectron --method tsurff``).
"""
from __future__ import annotations

import math

import numpy as np

from ..errors import ConfigError
from ..model.field import vector_potential, velocity_gauge
from ..model.grid import points
from .loop import Observer

__all__ = ["TSurff", "spectrum_of", "for_batch"]


class TSurff(Observer):
    """The t-SURFF amplitudes of a run of ``config`` through x = +-``radius`` (module
    docstring) at ``count`` momenta in [-k_max, k_max]; ``snapshots``: the run's
    :class:`~tdse.run.sinks.Snapshots` (its sums kept with each snapshot), ``writer``: the
    run file's (the spectrum stored at the end), ``resume``: a resumed run's state."""

    #: steps whose integrands are made together (one vectorised pass: the Python a step
    #: costs a few microseconds where a step's own evaluation cost ~160; on a GPU one
    #: kernel, the steps' arrays held until then: at most HELD_BYTES of them)
    BLOCK = 128
    HELD_BYTES = 256 << 20

    def __init__(self, config, radius, k_max=3.0, count=401, snapshots=None, writer=None, resume=None,
                 vector=None, members=1):
        g = config.grid
        x = points(g)
        w = config.absorber.width if config.absorber is not None else 0.0
        if not (0 < radius and radius + 3 * g.dx < g.x_max - w and -radius - 3 * g.dx > g.x_min + w):
            raise ConfigError("output.tsurff_radius", radius, "must lie inside the box, 3 dx before the "
                              f"absorber or the walls ({g.x_min + w:g} < -R, R < {g.x_max - w:g})")
        self.config, self.dx, self.dt = config, g.dx, config.time.dt
        self.field, self.velocity = config.field, velocity_gauge(config.field)
        self.iR, self.iL = int(np.argmin(np.abs(x - radius))), int(np.argmin(np.abs(x + radius)))
        self.xR, self.xL = float(x[self.iR]), float(x[self.iL])
        self.k = np.linspace(-k_max, k_max, count)
        self.k_max = k_max
        self.snapshots, self.writer, self.resume = snapshots, writer, resume
        self.every_snapshot, self.last = config.output.every, config.time.steps
        # B members (a scan's block of psi, N x B): ``vector(t)`` their A(t), (B,)
        self.B, self._vector = members, vector
        self.block = max(1, min(self.BLOCK, (1 << 21) // (2 * count * members)))
        self._sum = np.zeros((2, count, members), complex)     # b_R, b_L of each member
        self.phase, self.prev = np.zeros((count, members)), None

    def _A(self, t):
        """A at the times ``t`` (S,) of every member: (S, B)."""
        t = np.asarray(t, dtype=np.float64)
        if self._vector is not None:
            return np.stack([np.asarray(self._vector(ti), dtype=np.float64) for ti in t])
        return (np.asarray(vector_potential(self.field, t), dtype=np.float64) * np.ones(t.shape))[:, None]

    def _integrands(self, at, A, phase):
        """The right and left integrands (S, 2, K, B) from psi at the 5 points around +-R
        (``at``: (S, 2, 5, B)), A (S, B) and Phi (S, K, B)."""
        xp = self.xp
        d = xp.einsum("sipb,p->sib", at, self._stencil)        # psi'(+-R), (S, 2, B)
        k = self._k[None, :, None]
        wave = k if self.velocity else k + A[:, None, :]       # chi's wavenumber
        flux = k + (2.0 if self.velocity else 1.0) * A[:, None, :]
        arg = phase[:, None] - wave[:, None] * self._xs[None, :, None, None]
        chi = xp.empty(arg.shape, complex)                     # e^(i arg): cos and sin of a
        xp.cos(arg, out=chi.real)                              # real array, 1.7x np.exp's
        xp.sin(arg, out=chi.imag)                              # time on a complex one
        chi *= 1.0 / math.sqrt(2 * math.pi)
        return self._sign[None, :, :, None] * chi * (d[:, :, None, :] + 1j * flux[:, None] * at[:, :, 2, None, :])

    def begin(self, state):
        # where psi lives: on a GPU the points are gathered and the integrands made there (the
        # host only launches: the steps' graphs are not held back), copied at snapshots and the end
        xp = self.xp = np if not hasattr(state.psi, "get") else __import__("cupy")
        self._window = xp.asarray(np.array([np.arange(i - 2, i + 3) for i in (self.iR, self.iL)]))
        self._stencil = xp.asarray(np.array([1.0, -8.0, 0.0, 8.0, -1.0]) / (12 * self.dx))
        self._xs, self._sign = xp.asarray([self.xR, self.xL]), xp.asarray([[-0.5j], [0.5j]])
        self._k = xp.asarray(self.k)
        self._sum, self.phase = xp.asarray(self._sum), xp.asarray(self.phase)
        self._held, self._ptrs = ([], []), set()
        if xp is not np:         # a flush's A, h and addresses: one pinned upload
            from mgemm.arrays import PinnedUpload
            self._up, self._rows = PinnedUpload(xp), xp.ascontiguousarray(self._window.ravel())
            self.phase = xp.ascontiguousarray(self.phase)
            self.block = max(1, min(self.BLOCK, self.HELD_BYTES // max(1, state.psi.nbytes)))
        r = self.resume
        if state.step != 0:          # A(t) and the Volkov phases are integrated from t = 0
            if r is None or r.get("tsurff") is None:
                raise ValueError(f"TSurff follows a run from t = 0, not from step {state.step} "
                                 "(a resumed run's flux before it is not known)")
            sums, phase = xp.asarray(r["tsurff"]), np.asarray(r["tsurff_phase"])
            self._sum, f0 = sums[:2].copy(), sums[2:].copy()
            self.phase, t_prev = xp.asarray(phase[:-1].reshape(self.phase.shape)), float(phase[-1])
            self.prev = (t_prev, f0)
            return
        if xp is np:
            at = self._at(state.psi)[None]
            f0 = self._integrands(at, self._A(np.array([state.t])), self.phase[None])[0]
            self.prev = (state.t, f0)
        else:            # the first integrand by the block kernel: one step of length 0
            self.prev = (state.t, xp.zeros(self._sum.shape, complex))
            self._held = ([state.t], [xp.ascontiguousarray(state.psi)])
            self._flush()
        self._keep(state.step)

    def _at(self, psi):
        """psi at the 5 points around each surface, (2, 5, B), where psi lives."""
        return psi[self._window].reshape(2, 5, self.B)

    def after(self, state):
        ts, at = self._held
        ts.append(state.t)
        if self.xp is np:
            at.append(self._at(state.psi))
        else:            # the step's own array, kept until the flush gathers its points
            psi = state.psi  # (every stepper returns a new array a step: a repeat is refused)
            if not psi.flags.c_contiguous:
                psi = self.xp.ascontiguousarray(psi)
            if psi.data.ptr in self._ptrs:
                raise RuntimeError("TSurff: the stepper returned an array it had returned before; "
                                   "its points at the earlier step are lost")
            self._ptrs.add(psi.data.ptr)
            at.append(psi)
        snapshot = state.step % self.every_snapshot == 0 or state.step == self.last
        if len(ts) >= self.block or (snapshot and self.snapshots is not None):
            self._flush()
        if snapshot:
            self._keep(state.step)

    def _keep(self, step):
        """The sums and the trapezoid's last term, kept with the snapshot at ``step`` (the
        Snapshots sink comes after this one): a resumed run continues them bit for bit."""
        if self.snapshots is None:
            return
        t_prev, f0 = self.prev
        xp, extras = self.xp, self.snapshots.resume_extras
        extras["tsurff"] = xp.concatenate([self._sum, f0])   # (new arrays: the sums go on)
        if xp is np:
            extras["tsurff_phase"] = np.concatenate([self.phase.ravel(), [t_prev]])
        else:           # on the device, copied with the snapshot's psi (no wait for the steps)
            extras["tsurff_phase"] = keep = xp.empty(self.phase.size + 1)
            keep[:-1] = self.phase.ravel()
            keep[-1] = t_prev

    def end(self, state):
        self._flush()
        if self.writer is not None:
            self.writer.set_attrs(photoelectrons_tsurff=self.record())

    def _flush(self):
        """The held steps' integrands at once, summed by the trapezoid rule; Phi carried on
        (trapezoid rule too)."""
        ts, at = self._held
        if not ts:
            return
        t0, f0 = self.prev
        t = np.asarray(ts)
        tall = np.concatenate([[t0], t])
        xp, S, B = self.xp, len(ts), self.B
        if xp is not np:         # one upload (not from pageable memory: that would wait for
            # the steps) and one kernel (tdse.backends.cupy.tsurff: these operations)
            from ..backends.cupy.tsurff import tsurff_block
            ptrs = np.array([a.data.ptr for a in at], dtype=np.uint64).view(np.float64)
            dev = self._up(np.concatenate([self._A(tall).ravel(), np.diff(tall), ptrs]))
            f0 = xp.ascontiguousarray(f0)
            tsurff_block(xp, dev[(S + 1) * B + S:].view(np.uint64), self._rows,
                         dev[:(S + 1) * B], dev[(S + 1) * B:(S + 1) * B + S], self._k, self._xs,
                         self._stencil, self.velocity, self.phase, self._sum, f0)
            self.prev = (float(t[-1]), f0)
            self._held = ([], [])
            self._ptrs.clear()
            return
        Aall, h, at = self._A(tall), np.diff(tall), np.stack(at)      # A (S + 1, B)
        k = self._k[None, :, None]
        dphase = 0.25 * h[:, None, None] * ((k + Aall[:-1, None, :]) ** 2 + (k + Aall[1:, None, :]) ** 2)
        phase = self.phase[None] + xp.cumsum(dphase, axis=0)
        f = self._integrands(at, Aall[1:], phase)
        fall = xp.concatenate([f0[None], f])
        self._sum += xp.einsum("s,sikb->ikb", 0.5 * h, fall[:-1] + fall[1:])
        self.phase, self.prev = phase[-1], (float(t[-1]), f[-1])
        self._held = ([], [])

    def probabilities(self):
        """(P_right, P_left): |b(k)|^2 through +R and -R of each member, (B, K) each."""
        self._flush()
        s = _host(self._sum)
        return np.abs(s[0].T) ** 2, np.abs(s[1].T) ** 2

    def spectrum(self) -> dict:
        """k (a.u. of momentum), P(k) through each surface (1/momentum), and the energy
        density dP/dE = P(k) / |k| for the electrons going right (k > 0) and left (k < 0),
        at E = k^2 / 2 (hartree)."""
        right, left = self.probabilities()
        return spectrum_of(self.k, right[0], left[0], radius=self.xR,
                           A_end=float(self._A(np.array([self.prev[0]]))[0, 0]))

    def record(self) -> dict:
        """What the run file keeps (its ``photoelectrons_tsurff`` attribute, JSON)."""
        s = self.spectrum()
        return {"method": "tsurff", "radius": self.xR, "k_max": self.k_max, "momenta": int(self.k.size),
                "gauge": "velocity" if self.velocity else "length", "t": self.prev[0],
                "A_end": s["A_end"], "P_right": s["P_right"].tolist(), "P_left": s["P_left"].tolist(),
                "units": "k in hbar/bohr (atomic units), P(k) in bohr/hbar",
                "holds": "P(k) of the electrons that crossed x = +radius (k > 0) and -radius "
                         "(k < 0) by t; complete once every electron has passed radius"}


def _host(a):
    return a.get() if hasattr(a, "get") else a


def spectrum_of(k, P_right, P_left, **extra) -> dict:
    """The spectrum dict of :meth:`TSurff.spectrum` from P(k) through each surface."""
    right, left = k > 0, k < 0
    return {"k": k, "P_right": P_right, "P_left": P_left,
            "energy_right": k[right] ** 2 / 2, "dPdE_right": P_right[right] / k[right],
            "energy_left": k[left] ** 2 / 2, "dPdE_left": P_left[left] / -k[left], **extra}


def for_batch(configs, stepper):
    """The t-SURFF flux of a batch's members (a scan, ``[output] tsurff_radius``: one radius
    and momentum grid for all, each member's own A(t) from ``stepper``'s potential) as one
    observer of the N x B block, or None without a radius."""
    o = configs[0].output
    if not o.tsurff_radius:
        return None
    if len({(c.output.tsurff_radius, c.output.tsurff_k_max, c.output.tsurff_momenta) for c in configs}) > 1:
        raise ConfigError("output.tsurff_radius", o.tsurff_radius, "must be one for every member "
                          "(with tsurff_k_max and tsurff_momenta): t-SURFF's surfaces and momenta are the scan's")
    return TSurff(configs[0], o.tsurff_radius, o.tsurff_k_max, o.tsurff_momenta,
                  vector=stepper.potential.vector, members=len(configs))
