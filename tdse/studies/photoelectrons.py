"""Photoelectron spectra of a run's last psi by the window operator (Schafer & Kulander, PRA
42, 5794 (1990); Schafer, Comput. Phys. Commun. 63, 427 (1991)), atomic units.

The window of resolution gamma around an energy E (their eq. 2, n = 2):

    W_gamma(E) = gamma^4 / ((H0 - E)^4 + gamma^4),        P(E) = <psi| W_gamma(E) |psi>,

H0 the field-free molecular H at the last snapshot's time (no absorber).  Here W is
evaluated exactly in H0's eigenbasis on the grid, P(E) = sum_n |<n|psi>|^2 W_gamma(E_n - E)
over H0's continuum states E_n > 0 (the bound ones are no photoelectrons: their windows' tails
left out) (all N pairs by :func:`tdse.model.states.eigenstates`: O(N^2) for the 3-point
stencil, a dense solver's O(N^3) for the DVR), and divided by the window's area pi gamma / sqrt(2) it is the energy density
dP/dE, whose integral over E > 0 is the population of H0's continuum states.  Electrons
going left and right: the same with psi's free part (its bound states projected out)
restricted to x < 0 and x > 0 by a smooth step -- meaningful once the outgoing electrons are
far from the core, so the run must continue after the pulse until
they are (and stop before they reach the walls or an absorber, which takes them away: the
spectrum is of what the box still holds).

Marked: the above-threshold-ionisation comb E_n = n omega - I_p - U_p (I_p = -E_0 of
H(0), U_p = E0^2 / (4 omega^2)) and the classical edges 2 U_p (direct electrons) and
10 U_p (rescattered ones).
"""
from __future__ import annotations

import math

import numpy as np

from ..model.grid import points
from ..model.states import eigenstates
from ..run.loop import Observer

__all__ = ["window_spectrum", "from_file", "EV", "TSurff"]

#: one hartree in eV (CODATA 2018)
EV = 27.211386245988


#: the width (bohr) of the smooth step that splits the free part of psi at x = 0 into the
#: electrons going left and right (a sharp cut adds spurious fast electrons)
SPLIT_WIDTH = 2.0


def window_spectrum(config, psi, t, energies, gamma) -> dict:
    """dP/dE at ``energies`` (hartree) of ``psi`` at time ``t``: in all, and of its parts at
    x < 0 ("left") and x > 0 ("right"); the resolution ``gamma`` (hartree); and the
    continuum's population (the integral of dP/dE over E > 0 with an exact window).  The
    left and right parts are of psi without its bound states, split by a smooth step."""
    E_n, phi = eigenstates(config, t, config.grid.n)           # all of H0's pairs
    x, dx = points(config.grid), config.grid.dx
    E = np.asarray(energies, dtype=np.float64)
    W = gamma ** 4 / ((E_n[None, :] - E[:, None]) ** 4 + gamma ** 4)      # (energies, states)
    area = math.pi * gamma / math.sqrt(2.0)
    c = phi @ psi * dx
    bound = E_n <= 0
    free = psi - c[bound] @ phi[bound]                # psi without its bound part
    step = 0.5 * (1.0 + np.tanh(x / SPLIT_WIDTH))     # a smooth x > 0: no kink at x = 0
    out = {"all": W @ np.where(bound, 0.0, np.abs(c) ** 2) / area, "continuum": float(np.sum(np.abs(c[~bound]) ** 2)),
           "bound": float(np.sum(np.abs(c[bound]) ** 2))}
    for name, part in (("left", (1.0 - step) * free), ("right", step * free)):
        out[name] = W @ np.abs(phi @ part * dx) ** 2 / area
    return {"energy": E, **out, "gamma": gamma}


def from_file(d: dict, gamma=None, e_max=None) -> dict:
    """The photoelectron spectrum of a run file read by :func:`tdse.run.snapshots.read`, at
    its last snapshot: energies from 0 to ``e_max`` (default: 12 U_p + 5 omega with a field,
    else 2 Ha) every gamma / 4, gamma (default omega / 8 with a field, else 0.01 Ha)."""
    from ..config import loads
    config = loads(d["attrs"].get("effective_toml") or d["attrs"]["input_toml"])
    t, psi = float(d["snapshots/t"][-1]), d["snapshots/psi"][-1]
    field = config.potential.field
    res = {"kind": "photoelectron", "method": "window", "t": t, "name": d["attrs"].get("name")}
    if field is not None and field.omega > 0:       # an expression field may name no carrier
        omega, up = float(field.omega), float(field.E0) ** 2 / (4 * float(field.omega) ** 2)
        ip = float(-d["states/energies"][0])
        res.update(omega=omega, up=up, ip=ip, edges={"2 U_p": 2 * up, "10 U_p": 10 * up})
        gamma = gamma or omega / 8
        e_max = e_max or 12 * up + 5 * omega
        n0 = math.ceil((ip + up) / omega)
        res["ati"] = [n * omega - ip - up for n in range(n0, n0 + int((e_max + ip + up) / omega))
                      if n * omega - ip - up <= e_max]
        if field.duration > t:
            res["note"] = f"the pulse lasts to t = {field.duration:.4g}, past the last snapshot"
    if config.absorber is not None:
        res["absorber_note"] = ("an absorber took what reached it: the spectrum is of the "
                                "electrons the box still holds")
    gamma = gamma or 0.01
    e_max = e_max or 2.0
    spec = window_spectrum(config, psi, t, np.arange(0.0, e_max + gamma / 8, gamma / 4), gamma)
    res.update({k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in spec.items()})
    res["energy_ev"] = (np.asarray(res["energy"]) * EV).tolist()
    res["units"] = "energy in hartree (energy_ev: eV), dP/dE in 1/hartree"
    return res


class TSurff(Observer):
    """t-SURFF in 1D (Tao & Scrinzi, New J. Phys. 14, 013021 (2012), eqs. (9)-(11); length
    gauge): the amplitudes of the electrons that cross x = +R (going right) and x = -R
    (going left), accumulated step by step against Volkov waves,

        chi_k(x, t) = (2 pi)^(-1/2) exp(i (k + A(t)) x - i Phi_k(t)),
        A(t) = -int_0^t E,   Phi_k(t) = int_0^t (k + A)^2 / 2,
        b_R(k) = -(i/2) int dt  chi_k*(R, t) [psi'(R, t) + i (k + A) psi(R, t)],

    and b_L the same at -R with the opposite sign (the flux through each surface,
    ``<chi_k| [H_Volkov, Theta] |psi>``; the time integral by the trapezoid rule over the run's
    steps, psi' by the 5-point difference).  ``P(k) = |b(k)|^2`` once every electron has
    passed R: the spectrum of what has left, for k > 0 through +R and k < 0 through -R.
    Needs no absorber inside R (an absorber beyond it is what the method allows) and V ~ 0
    beyond R.  An :class:`Observer` (every step: the CPU path; on a GPU it takes the run off
    its fast path; its steps' integrands are made :data:`BLOCK` at a time), for
    :func:`tdse.evolve` from t = 0 -- not yet a key of the input, nor in the run file:
    ``spectrum()`` gives the result."""

    def __init__(self, config, radius, k_max=3.0, count=401):
        from ..errors import ConfigError
        g = config.grid
        x = points(g)
        w = config.absorber.width if config.absorber is not None else 0.0
        if not (0 < radius and radius + 3 * g.dx < g.x_max - w and -radius - 3 * g.dx > g.x_min + w):
            raise ConfigError("tsurff radius", radius, "must lie inside the box, 3 dx before the "
                              f"absorber or the walls ({g.x_min + w:g} < -R, R < {g.x_max - w:g})")
        self.config, self.dx, self.dt = config, g.dx, config.time.dt
        self.iR, self.iL = int(np.argmin(np.abs(x - radius))), int(np.argmin(np.abs(x + radius)))
        self.xR, self.xL = float(x[self.iR]), float(x[self.iL])
        self.k = np.linspace(-k_max, k_max, count)
        self._sum = np.zeros((2, count), complex)              # b_R, b_L
        self.A, self.phase, self.prev = 0.0, np.zeros(count), None

    #: steps whose integrands are made together (one vectorised pass: the Python a step
    #: costs a few microseconds where a step's own evaluation cost ~160)
    BLOCK = 128

    def _fields(self, t):
        from ..model.field import field_value
        return np.asarray(field_value(self.config.potential.field, np.asarray(t, dtype=np.float64)),
                          dtype=np.float64) * np.ones(np.shape(t))

    def _integrands(self, at, kin, phase):
        """The right and left integrands (S, 2, K) from psi at the 5 points around +-R
        (``at``: (S, 2, 5)), k + A (S, K) and Phi (S, K)."""
        d = at @ self._stencil                                 # psi'(+-R), (S, 2)
        arg = phase[:, None, :] - kin[:, None, :] * self._xs[None, :, None]
        chi = np.empty(arg.shape, complex)                     # e^(i arg): cos and sin of a
        np.cos(arg, out=chi.real)                              # real array, 1.7x np.exp's
        np.sin(arg, out=chi.imag)                              # time on a complex one
        chi *= 1.0 / math.sqrt(2 * math.pi)
        return self._sign[None] * chi * (d[:, :, None] + 1j * kin[:, None, :] * at[:, :, 2:3])

    def begin(self, state):
        if state.step != 0:          # A(t) and the Volkov phases are integrated from t = 0
            raise ValueError(f"TSurff follows a run from t = 0, not from step {state.step} "
                             "(a resumed run's flux before it is not known)")
        self._window = np.array([np.arange(i - 2, i + 3) for i in (self.iR, self.iL)])
        self._stencil = np.array([1.0, -8.0, 0.0, 8.0, -1.0]) / (12 * self.dx)
        self._xs, self._sign = np.array([self.xR, self.xL]), np.array([[-0.5j], [0.5j]])
        at = np.asarray(state.psi)[self._window][None]
        f0 = self._integrands(at, (self.k + self.A)[None], self.phase[None])[0]
        self.prev = (state.t, float(self._fields(state.t)), f0)
        self._held = ([], [])

    def after(self, state):
        ts, at = self._held
        ts.append(state.t)
        at.append(np.asarray(state.psi)[self._window])
        if len(ts) >= self.BLOCK:
            self._flush()

    def end(self, state):
        self._flush()

    def _flush(self):
        """The held steps' integrands at once, summed by the trapezoid rule; A and Phi
        carried on (trapezoid rule too)."""
        ts, at = self._held
        if not ts:
            return
        t0, E0, f0 = self.prev
        t = np.asarray(ts)
        E = self._fields(t)
        h = np.diff(np.concatenate([[t0], t]))
        A = self.A - np.cumsum(0.5 * (np.concatenate([[E0], E[:-1]]) + E) * h)
        Aall = np.concatenate([[self.A], A])
        k = self.k[None, :]
        dphase = 0.25 * h[:, None] * ((k + Aall[:-1, None]) ** 2 + (k + Aall[1:, None]) ** 2)
        phase = self.phase[None, :] + np.cumsum(dphase, axis=0)
        f = self._integrands(np.asarray(at), k + A[:, None], phase)
        fall = np.concatenate([f0[None], f])
        self._sum += np.einsum("s,sik->ik", 0.5 * h, fall[:-1] + fall[1:])
        self.A, self.phase, self.prev = float(A[-1]), phase[-1], (float(t[-1]), float(E[-1]), f[-1])
        self._held = ([], [])

    def spectrum(self) -> dict:
        """k (a.u. of momentum), P(k) through each surface (1/momentum), and the energy
        density dP/dE = P(k) / |k| for the electrons going right (k > 0) and left (k < 0),
        at E = k^2 / 2 (hartree)."""
        self._flush()
        k = self.k
        P = {"right": np.abs(self._sum[0]) ** 2, "left": np.abs(self._sum[1]) ** 2}
        right, left = k > 0, k < 0
        return {"k": k, "P_right": P["right"], "P_left": P["left"],
                "energy_right": k[right] ** 2 / 2, "dPdE_right": P["right"][right] / k[right],
                "energy_left": k[left] ** 2 / 2, "dPdE_left": P["left"][left] / -k[left],
                "radius": self.xR, "A_end": self.A}
