"""psi(0) of a run (atomic units; ``[initial]``, docs/INPUT.md): an eigenstate of H(0), a
Gaussian packet, a superposition of H(0)'s lowest eigenstates, or psi at a snapshot of
an earlier run's file -- the file read here directly (its ``/x`` and ``/snapshots/psi``),
its grid checked against this run's."""
from __future__ import annotations

import math

import numpy as np

from ..errors import ConfigError
from .observables import norm
from .states import DTYPE

__all__ = ["initial_state", "states_needed"]


def states_needed(initial) -> int:
    """How many of H(0)'s lowest eigenstates psi(0) is made of."""
    if isinstance(initial.state, int):
        return initial.state + 1
    return len(initial.amplitudes) if initial.state == "superposition" else 1


def initial_state(config, x, phi0):
    """psi(0) (module docstring); ``phi0`` H(0)'s lowest eigenstates, (K, N)."""
    ini = config.initial
    if ini.state == "gaussian":
        psi = np.exp(-((x - ini.x0) ** 2) / (4 * ini.sigma ** 2) + 1j * ini.k0 * x)
        return psi / math.sqrt(norm(psi, config.grid.dx))
    if ini.state == "superposition":
        c = np.asarray(ini.amplitudes) * np.exp(1j * np.asarray(ini.phases))
        psi = c @ phi0[:len(c)].astype(DTYPE)
        return psi / math.sqrt(norm(psi, config.grid.dx))
    if isinstance(ini.state, str):
        return from_file(ini.state[len("file:"):], ini.snapshot, np.asarray(x), ini.state)
    return phi0[ini.state].astype(DTYPE)


def from_file(path, snapshot, x, value):
    """psi of snapshot ``snapshot`` of the run file at ``path``, whose grid must be ``x``;
    ConfigError naming initial.state / initial.snapshot otherwise."""
    import h5py
    try:
        with h5py.File(path, "r") as f:
            xf, snaps = f["x"][()], f["snapshots/psi"]
            if xf.shape != x.shape or not np.allclose(xf, x, rtol=0, atol=1e-12 * max(1.0, np.abs(x).max())):
                raise ConfigError("initial.state", value, f"the file's grid (N = {xf.size}, "
                                  f"x from {xf[0]:g} by {xf[1] - xf[0]:g}) is not this run's "
                                  f"(N = {x.size}, x from {x[0]:g} by {x[1] - x[0]:g})")
            if not -snaps.shape[0] <= snapshot < snaps.shape[0]:
                raise ConfigError("initial.snapshot", snapshot, f"the file holds {snaps.shape[0]} snapshots")
            return np.asarray(snaps[snapshot], dtype=DTYPE)
    except (OSError, KeyError) as e:
        raise ConfigError("initial.state", value, f"is not a readable run file ({e})") from None
