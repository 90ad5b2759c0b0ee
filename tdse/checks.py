"""The value checks every section parser uses (tdse.config, tdse.sections): a number, an
integer, a table, the keys a table may hold (from :data:`tdse.keys.KEYS`), a whole count;
each failure one :class:`tdse.errors.ConfigError` naming the key and its value."""
from __future__ import annotations

import functools
import math

from .errors import ConfigError
from .keys import KEYS

__all__ = ["WHOLE_RTOL", "SECTIONS", "REQUIRED_SECTIONS", "allowed_keys", "number", "integer", "table",
           "check_keys", "whole"]

#: how close to a whole number (relative) a count such as (x_max - x_min)/dx must be
WHOLE_RTOL = 1e-9

SECTIONS = ("name", "grid", "potential", "field", "absorber", "nuclei", "initial", "time", "propagator",
            "output", "run")
REQUIRED_SECTIONS = ("name", "grid", "potential", "time")


@functools.lru_cache(maxsize=None)
def allowed_keys(prefix):
    """Keys allowed directly under ``prefix`` ("grid.", "potential.centres.", ...), as
    (name, required) pairs (KEYS is fixed: found once a prefix)."""
    out = []
    for k in KEYS:
        if k.name.startswith(prefix):
            rest = k.name[len(prefix):]
            if "." not in rest:
                out.append((rest, k.default.startswith("required")
                            and not k.default.startswith("required (")))   # "(kind)": by kind
    return tuple(out)


def number(key, v, *, positive=False, nonneg=False):
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ConfigError(key, v, "must be a number")
    v = float(v)
    if not math.isfinite(v):
        raise ConfigError(key, v, "must be finite")
    if positive and v <= 0:
        raise ConfigError(key, v, "must be > 0")
    if nonneg and v < 0:
        raise ConfigError(key, v, "must be >= 0")
    return v


def integer(key, v, lo=None, hi=None):
    if isinstance(v, bool) or not isinstance(v, int):
        raise ConfigError(key, v, "must be an integer")
    if lo is not None and v < lo:
        raise ConfigError(key, v, f"must be >= {lo}")
    if hi is not None and v > hi:
        raise ConfigError(key, v, f"must be <= {hi}")
    return v


def table(key, v):
    if not isinstance(v, dict):
        raise ConfigError(key, v, "must be a table")
    return v


def check_keys(prefix, table, schema_prefix=None):
    """Reject keys that :data:`KEYS` does not list under the prefix; require the required."""
    spec = ([(s, s in REQUIRED_SECTIONS) for s in SECTIONS] if prefix == "" else
            allowed_keys(schema_prefix or prefix))
    allowed = [k for k, _ in spec]
    for k in table:
        if k not in allowed:
            raise ConfigError(f"{prefix}{k}", table[k],
                              f"unknown key; allowed here: {', '.join(allowed)}")
    for k, required in spec:
        if required and k not in table:
            raise ConfigError("", None, f"missing key `{prefix}{k}`")


def whole(key, value, ratio, what):
    n = round(ratio)
    if n < 1 or abs(ratio - n) > WHOLE_RTOL * max(1.0, abs(ratio)):
        raise ConfigError(key, value, f"{what} = {ratio:.6g} is not a whole number "
                          "(inputs are never re-rounded; choose values that divide exactly)")
    return int(n)
