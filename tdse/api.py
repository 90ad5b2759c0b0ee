"""The Python API for notebooks: :func:`load_config` and :func:`simulate` (atomic units).

    import tdse
    cfg = tdse.load_config("inputs/h2plus_moving.toml")        # or a dict of sections
    cfg = dataclasses.replace(cfg, time=dataclasses.replace(cfg.time, t_end=2.0))
    res = tdse.simulate(cfg)                                    # nothing written
    res.t, res.observables["populations_ht"], res.psi           # NumPy arrays
    res = tdse.simulate(cfg, out="runs")                        # also runs/<name>.h5

A run file records the *effective* configuration (every key with its value, ``method =
"auto"`` replaced by the method it chose), so a run started here with a changed config is
what ``tdse resume`` continues; ``Result.config`` is that configuration.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .config import Config, ConfigError, load_config

__all__ = ["load_config", "simulate", "Result"]


@dataclass
class Result:
    """Arrays of a run.  ``t`` / ``psi``: snapshot times and psi(t) (T, N); ``x``: grid;
    ``observables``: name -> array over ``observables["t"]`` (norm, energy, x_mean, p_mean,
    acceleration, field, yield, autocorrelation, populations_h0, populations_ht,
    energies_ht, n_mean); ``energies`` / ``states``: the lowest eigenpairs of H(0);
    ``attrs``: the file's attributes (numerics, precheck, time-error estimate); ``path``:
    the HDF5 file, or None."""
    config: Config
    t: np.ndarray
    x: np.ndarray
    psi: np.ndarray
    observables: dict
    energies: np.ndarray
    states: np.ndarray
    attrs: dict
    path: str | None = None
    time_error: dict | None = field(default=None)

    @classmethod
    def from_data(cls, config, d, path=None, time_error=None):
        obs = {k.split("/", 1)[1]: v for k, v in d.items() if k.startswith("observables/")}
        if "operator/P" in d:
            obs["P"] = d["operator/P"]
        return cls(config, d["snapshots/t"], d["grid/x"], d["snapshots/psi"], obs,
                   d["states/energies"], d["states/phi"], d["attrs"], path, time_error)

    @classmethod
    def from_file(cls, path):
        """A finished (or interrupted) run file."""
        from .config import loads
        from .snapshots import read
        d = read(path)
        a = d["attrs"]
        return cls.from_data(loads(a.get("effective_toml") or a["input_toml"]), d, path)


def simulate(config, *, backend="auto", devices=None, out=None, force=False,
             allow_inaccurate=False, progress=False) -> Result:
    """Run ``config`` (a Config, a TOML path or text, or a dict of sections).

    Writes ``out/<name>.h5`` only when ``out`` is given (never overwriting without
    ``force``); refuses a Taylor run whose exponential misses its tolerance unless
    ``allow_inaccurate``.  Bad input raises :class:`tdse.config.ConfigError` naming the key."""
    from .propagate import run
    from .snapshots import read
    cfg = load_config(config)
    if not isinstance(cfg, Config):  # pragma: no cover
        raise ConfigError("config", type(config).__name__, "must be a Config, path, TOML text or dict")
    res = run(cfg, out, backend=backend, devices=devices, force=force,
              allow_inaccurate=allow_inaccurate, progress=progress)
    d = res.data if res.data is not None else read(res.path)
    return Result.from_data(res.config, d, res.path, res.time_error)
