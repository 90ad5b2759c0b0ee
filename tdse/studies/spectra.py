"""Spectra of a run, from its observables (atomic units).

* ``hhg``: the harmonic spectrum |a(omega)|^2 of the dipole acceleration
  a(t) = <-dV/dx> (recorded every ``observables_every`` steps), windowed, against the
  harmonic order omega / omega_0 of the field's carrier (against omega without a field).
* ``photoelectron``: dP/dE of the last psi by the window operator
  (:mod:`tdse.studies.photoelectrons`).
* ``autocorrelation``: |S(E)|^2 with S(E) = sum_j C(t_j) w(t_j) e^(i E t_j) dt of
  C(t) = <psi(0)|psi(t)> = sum_n |c_n|^2 e^(-i E_n t) (a time-independent H): peaks at the
  eigenenergies E_n of the states psi(0) holds, each as wide as the resolution 2 pi / T.
  Under a periodic drive of frequency omega the peaks are the Floquet quasi-energies and
  their sidebands eps + k omega, not the eigenvalues of H(0) (which the picture marks as a
  reference only).

Windows: ``hann`` (default), ``blackman``, ``none`` (rectangular).
"""
from __future__ import annotations

import math

import numpy as np

WINDOWS = ("hann", "blackman", "none")
KINDS = ("hhg", "autocorrelation", "photoelectron")


def window(name: str, m: int) -> np.ndarray:
    if name == "hann":
        return np.hanning(m)
    if name == "blackman":
        return np.blackman(m)
    if name == "none":
        return np.ones(m)
    raise ValueError(f"window must be one of {WINDOWS}, got window={name!r}")


def _uniform_dt(t):
    d = np.diff(t)
    if t.size < 8 or not np.allclose(d, d[0], rtol=1e-9, atol=1e-12):
        raise ValueError("the observables are not sampled uniformly (or fewer than 8 samples)")
    return float(d[0])


def hhg_power(t, acceleration, win="hann"):
    """(omega, |a(omega)|^2) of the dipole acceleration sampled at ``t`` (one-sided, omega
    >= 0): ``acceleration`` (..., len(t)), each row windowed and transformed -- a scan's
    batch in one FFT (its members one by one, as lists, had made the scan of 1000 atom_hhg
    members on one H200 7.4-8.4 s against 6.2-6.7 s before ``--save``; 5.9-6.2 s after,
    ``scan_bisect_h200x1_20261130T1822.txt``)."""
    return _power(_uniform_dt(t), len(t), acceleration, win)


def _power(dt, n, acceleration, win):
    """:func:`hhg_power` of ``n`` samples ``dt`` apart (SciPy's FFT, one thread: a Dask
    worker's or a run's threads are theirs; NumPy's, the same bits, took a scan's 1000 x 4411
    samples 0.26 s against 0.08 on one core)."""
    import scipy.fft
    A = scipy.fft.rfft(np.asarray(acceleration) * window(win, n), axis=-1) * dt
    return 2 * math.pi * np.fft.rfftfreq(n, d=dt), np.abs(A) ** 2


def hhg(t, acceleration, omega0=None, win="hann") -> dict:
    """Harmonic spectrum of the dipole acceleration (one-sided, omega >= 0)."""
    dt = _uniform_dt(t)
    omega, power = _power(dt, len(t), acceleration, win)
    out = {"kind": "hhg", "window": win, "omega": omega.tolist(), "power": power.tolist(),
           "resolution": 2 * math.pi / (dt * len(t)), "units": "omega in E_h/hbar; power in a.u."}
    if omega0:
        out["omega0"] = omega0
        out["order"] = (omega / omega0).tolist()
    return out


def autocorrelation(t, C, win="hann") -> dict:
    """|S(E)|^2 of C(t) = <psi(0)|psi(t)>; peaks at the eigenenergies held by psi(0)."""
    dt = _uniform_dt(t)
    c = np.asarray(C) * window(win, len(t))
    m = len(t)
    # S(E_k) = sum_j c_j e^(+i E_k t_j) dt: numpy's ifft carries e^(+i...)/m
    S = np.fft.ifft(c) * m * dt
    E = 2 * math.pi * np.fft.fftfreq(m, d=dt)
    order = np.argsort(E)
    E, power = E[order], np.abs(S[order]) ** 2
    return {"kind": "autocorrelation", "window": win, "energy": E.tolist(), "power": power.tolist(),
            "resolution": 2 * math.pi / (dt * m), "units": "energy in hartree"}


def peaks(x, y, rel=1e-3, most=None):
    """x of the local maxima of y above rel * max(y), in increasing x; ``most``: only the
    strongest that many."""
    x, y = np.asarray(x), np.asarray(y)
    i = np.flatnonzero((y[1:-1] > y[:-2]) & (y[1:-1] >= y[2:]) & (y[1:-1] > rel * y.max())) + 1
    if most is not None and i.size > most:
        i = np.sort(i[np.argsort(y[i])[::-1][:most]])
    return x[i]


def cutoff(ip: float, E0: float, omega: float) -> dict:
    """The three-step model's harmonic cutoff I_p + 3.17 U_p, U_p = E0^2 / (4 omega^2)
    (Krause, Schafer & Kulander, PRL 68, 3535 (1992); Corkum, PRL 71, 1994 (1993)): I_p the
    ionisation potential (here -E_0 of H(0), whose continuum starts at 0), in hartree and in
    harmonic orders of omega."""
    up = E0 ** 2 / (4 * omega ** 2)
    return {"ip": ip, "up": up, "cutoff_energy": ip + 3.17 * up,
            "cutoff_order": (ip + 3.17 * up) / omega}


def drive_frequency(config) -> float | None:
    """The drive's angular frequency: the laser's omega, else the centres' common frequency
    (None for a static H, or centres moving at different frequencies)."""
    if config.potential.field is not None:
        return float(config.potential.field.omega) or None   # an expression field may name none
    freqs = {c.frequency for c in config.potential.centres if c.moving}
    return float(freqs.pop()) if len(freqs) == 1 else None


def from_file(d: dict, kind: str, win: str, gamma=None, method="window") -> dict:
    """The spectrum of a run file read by :func:`tdse.snapshots.read` (``gamma``, ``method``:
    the photoelectrons' window resolution and method, :mod:`tdse.studies.photoelectrons`)."""
    from ..config import loads
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got kind={kind!r}")
    if "grid/R" in d and kind != "hhg":
        raise ValueError(f"--kind {kind}: a [nuclei] run's file has the harmonic spectrum (--kind hhg); "
                         "its KER spectrum is in the file (/ker) and its picture")
    if kind == "photoelectron":
        from .photoelectrons import from_file as photoelectrons
        return photoelectrons(d, gamma, method=method)
    t = d["observables/t"]
    # the run's config parsed as a run reads it (a field given by wavelength has its omega
    # there, not as a key of the TOML: `error: 'omega'` when read as a key)
    config = loads(d["attrs"].get("effective_toml") or d["attrs"]["input_toml"])
    if kind == "hhg":
        field = config.potential.field
        field = field if field is not None and field.omega > 0 else None   # no carrier: no orders
        res = hhg(t, d["observables/acceleration"], None if field is None else float(field.omega), win)
        if field is not None and "states/energies" in d and len(d["states/energies"]):
            res.update(cutoff(float(-d["states/energies"][0]), float(field.E0), float(field.omega)))
    elif kind == "autocorrelation":
        res = autocorrelation(t, d["observables/autocorrelation"], win)
        res["eigenenergies_h0"] = d["states/energies"].tolist()
        res["drive_omega"] = drive_frequency(config)
        res["peaks"] = peaks(res["energy"], res["power"], most=12).tolist()
    else:
        raise ValueError(f"kind must be one of {KINDS}, got kind={kind!r}")
    res["name"] = d["attrs"].get("name")
    return res
