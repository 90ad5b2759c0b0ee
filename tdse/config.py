"""The one validation module: TOML text -> frozen dataclasses, or a one-line ConfigError.

Every error names the key and its actual value (STYLE.md item 5).  Unknown keys are
rejected before any work; nothing is re-rounded (a dt that does not divide t_end, or a dx
that does not divide the box, is an error, not a silent adjustment).
All quantities are in atomic units (hbar = m_e = e = 1).
"""
from __future__ import annotations

import math
import os
import re
import tomllib
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ConfigError", "Config", "Grid", "Centre", "Potential", "Initial", "Time",
           "Propagator", "Output", "load", "loads", "memory_estimate", "available_memory",
           "STENCILS", "SCHEMES", "METHODS", "WHOLE_RTOL"]

#: how close to a whole number (relative) a count such as (x_max - x_min)/dx must be
WHOLE_RTOL = 1e-9
#: dense N x N complex128 matrices alive at once during a step (H, A, powers, result)
_DENSE_MATRICES = 10


class ConfigError(ValueError):
    """Bad input: ``key``, its ``value`` and what is wrong, as one line."""

    def __init__(self, key: str, value: Any, problem: str):
        self.key, self.value, self.problem = key, value, problem
        shown = repr(value)
        if len(shown) > 60:
            shown = shown[:57] + "..."
        super().__init__(f"{key} = {shown}: {problem}" if key else problem)


#: kinetic-energy discretisations: 3- and 5-point finite differences, Colbert-Miller sinc-DVR
STENCILS = (3, 5, "dvr")
SCHEMES = ("midpoint", "cfm4")
METHODS = ("auto", "taylor", "chebyshev")


@dataclass(frozen=True)
class Grid:
    x_min: float
    x_max: float
    dx: float
    stencil: int | str = 3

    @property
    def n(self) -> int:
        return int(round((self.x_max - self.x_min) / self.dx))


@dataclass(frozen=True)
class Centre:
    x0: float
    Z: float
    amplitude: float = 0.0
    frequency: float = 0.0
    phase: float = 0.0
    ramp: float = 0.0        # T_r: the amplitude rises as sin^2(pi t / (2 T_r)) for t < T_r

    @property
    def moving(self) -> bool:
        return self.amplitude != 0.0 and self.frequency != 0.0


@dataclass(frozen=True)
class Potential:
    a: float
    centres: tuple[Centre, ...]

    @property
    def static(self) -> bool:
        return not any(c.moving for c in self.centres)


@dataclass(frozen=True)
class Initial:
    state: int | str = 0
    x0: float = 0.0
    sigma: float = 1.0
    k0: float = 0.0


@dataclass(frozen=True)
class Time:
    dt: float
    t_end: float

    @property
    def steps(self) -> int:
        return int(round(self.t_end / self.dt))


@dataclass(frozen=True)
class Propagator:
    method: str = "auto"     # the exponential: "auto", "taylor" (dense, mgemm) or "chebyshev"
    terms: int = 10
    tolerance: float = 1e-10
    operator: bool = False   # also accumulate U(t) and store P_mn(t) (one more GEMM a step)
    scheme: str = "midpoint"  # time scheme: "midpoint" (2nd order) or "cfm4" (4th order)
    error_window: int = 0    # steps at the start re-run at dt/2 to estimate the time error (0: none)


@dataclass(frozen=True)
class Output:
    every: int = 50
    populations: int = 4
    node_eps: float = 1e-2
    observables_every: int = 1


@dataclass(frozen=True)
class Config:
    name: str
    grid: Grid
    potential: Potential
    initial: Initial
    time: Time
    propagator: Propagator
    output: Output
    source: str = field(default="", repr=False, compare=False)

    @property
    def time_dependent(self) -> bool:
        """H depends on t (moving centres)."""
        return not self.potential.static


# ---------------------------------------------------------------- field checks
def _number(key, v, *, positive=False, nonneg=False):
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


def _integer(key, v, lo=None, hi=None):
    if isinstance(v, bool) or not isinstance(v, int):
        raise ConfigError(key, v, "must be an integer")
    if lo is not None and v < lo:
        raise ConfigError(key, v, f"must be >= {lo}")
    if hi is not None and v > hi:
        raise ConfigError(key, v, f"must be <= {hi}")
    return v


def _table(key, v):
    if not isinstance(v, dict):
        raise ConfigError(key, v, "must be a table")
    return v


def _keys(prefix, table, allowed, required=()):
    for k in table:
        if k not in allowed:
            raise ConfigError(f"{prefix}{k}", table[k],
                              f"unknown key; allowed here: {', '.join(allowed)}")
    for k in required:
        if k not in table:
            raise ConfigError("", None, f"missing key `{prefix}{k}`")


def _whole(key, value, ratio, what):
    n = round(ratio)
    if n < 1 or abs(ratio - n) > WHOLE_RTOL * max(1.0, abs(ratio)):
        raise ConfigError(key, value, f"{what} = {ratio:.6g} is not a whole number "
                          "(inputs are never re-rounded; choose values that divide exactly)")
    return int(n)


# ---------------------------------------------------------------- sections
def _grid(t):
    _keys("grid.", t, ("x_min", "x_max", "dx", "stencil"), ("x_min", "x_max", "dx"))
    x_min = _number("grid.x_min", t["x_min"])
    x_max = _number("grid.x_max", t["x_max"])
    if x_min >= x_max:
        raise ConfigError("grid.x_min", x_min, f"must be < grid.x_max = {x_max}")
    dx = _number("grid.dx", t["dx"], positive=True)
    n = _whole("grid.dx", dx, (x_max - x_min) / dx, "(x_max - x_min)/dx")
    if n < 8:
        raise ConfigError("grid.dx", dx, f"gives {n} grid points; need at least 8")
    stencil = t.get("stencil", 3)
    if isinstance(stencil, bool) or stencil not in STENCILS:
        raise ConfigError("grid.stencil", stencil, "must be 3 or 5 (finite differences) or "
                          "\"dvr\" (sinc discrete variable representation)")
    return Grid(x_min, x_max, dx, stencil)


def _potential(t):
    _keys("potential.", t, ("a", "centres"), ("a", "centres"))
    a = _number("potential.a", t["a"], positive=True)
    cs = t["centres"]
    if not isinstance(cs, list) or not cs:
        raise ConfigError("potential.centres", cs, "must be a non-empty array of tables "
                          "([[potential.centres]])")
    centres = []
    for i, c in enumerate(cs):
        p = f"potential.centres[{i}]."
        _table(p[:-1], c)
        _keys(p, c, ("x0", "Z", "amplitude", "frequency", "phase", "ramp"), ("x0", "Z"))
        centres.append(Centre(
            _number(p + "x0", c["x0"]), _number(p + "Z", c["Z"]),
            _number(p + "amplitude", c.get("amplitude", 0.0)),
            _number(p + "frequency", c.get("frequency", 0.0), nonneg=True),
            _number(p + "phase", c.get("phase", 0.0)),
            _number(p + "ramp", c.get("ramp", 0.0), nonneg=True)))
    return Potential(a, tuple(centres))


def _initial(t, n):
    _keys("initial.", t, ("state", "x0", "sigma", "k0"))
    state = t.get("state", 0)
    if isinstance(state, str):
        if state != "gaussian":
            raise ConfigError("initial.state", state,
                              "must be an eigenstate index (integer >= 0) or \"gaussian\"")
    else:
        _integer("initial.state", state, 0, n - 1)
        extra = [k for k in ("x0", "sigma", "k0") if k in t]
        if extra:
            k = extra[0]
            raise ConfigError(f"initial.{k}", t[k], "only used with state = \"gaussian\"")
    return Initial(state, _number("initial.x0", t.get("x0", 0.0)),
                   _number("initial.sigma", t.get("sigma", 1.0), positive=True),
                   _number("initial.k0", t.get("k0", 0.0)))


def _time(t):
    _keys("time.", t, ("dt", "t_end"), ("dt", "t_end"))
    dt = _number("time.dt", t["dt"], positive=True)
    t_end = _number("time.t_end", t["t_end"], positive=True)
    steps = _whole("time.t_end", t_end, t_end / dt, "t_end/dt")
    if steps > 100_000_000:
        raise ConfigError("time.t_end", t_end, f"gives {steps} steps; at most 1e8")
    return Time(dt, t_end)


def _propagator(t, time: Time, time_dependent: bool):
    _keys("propagator.", t, ("method", "terms", "tolerance", "operator", "scheme", "error_window"))
    method = t.get("method", "auto")
    if method not in METHODS:
        raise ConfigError("propagator.method", method,
                          "must be \"auto\", \"taylor\" or \"chebyshev\"")
    terms = _integer("propagator.terms", t.get("terms", 10), 1, 100)
    tol = _number("propagator.tolerance", t.get("tolerance", 1e-10), positive=True)
    if tol >= 1:
        raise ConfigError("propagator.tolerance", tol, "must be < 1 (an error per step)")
    op = t.get("operator", False)
    if not isinstance(op, bool):
        raise ConfigError("propagator.operator", op, "must be true or false")
    scheme = t.get("scheme", "cfm4" if time_dependent else "midpoint")
    if scheme not in SCHEMES:
        raise ConfigError("propagator.scheme", scheme, "must be \"midpoint\" or \"cfm4\"")
    if "error_window" in t:
        w = _number("propagator.error_window", t["error_window"], nonneg=True)
        if w > time.t_end * (1 + WHOLE_RTOL):
            raise ConfigError("propagator.error_window", w, f"must be <= time.t_end = {time.t_end}")
        window = 0 if w == 0 else _whole("propagator.error_window", w, w / time.dt,
                                         "error_window/dt")
    else:  # default: the first tenth of the run (at least one step)
        window = max(1, time.steps // 10) if time_dependent else 0
    return Propagator(method, terms, tol, op, scheme, window)


def _output(t, n):
    _keys("output.", t, ("every", "populations", "node_eps", "observables_every"))
    every = _integer("output.every", t.get("every", 50), 1)
    obs = _integer("output.observables_every", t.get("observables_every", 1), 1)
    pops = _integer("output.populations", t.get("populations", 4), 1, n)
    eps = _number("output.node_eps", t.get("node_eps", 1e-2), positive=True)
    if eps >= 1:
        raise ConfigError("output.node_eps", eps, "must be < 1 (a fraction of max|psi|)")
    return Output(every, pops, eps, obs)


def available_memory() -> int:
    """Bytes of memory available now (MemAvailable), or total physical memory."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return 1 << 34


def memory_estimate(n: int, operator: bool = False) -> int:
    """Host bytes a run with N grid points needs (dense complex128 matrices dominate;
    operator mode keeps U(t) and its update: two more)."""
    return (_DENSE_MATRICES + 2 * bool(operator)) * 16 * n * n + 64 * n * 1024


def _memory_check(grid: Grid, limit: int | None, operator: bool = False):
    limit = available_memory() if limit is None else limit
    need = memory_estimate(grid.n, operator)
    if need > limit:
        mats = _DENSE_MATRICES + 2 * bool(operator)
        n_fit = int(math.sqrt(max(limit - 64 * 1024 * 1024, 0) / (mats * 16)))
        raise ConfigError("grid.dx", grid.dx, (
            f"gives N = {grid.n} points, whose dense matrices need {need / 2**30:.1f} GiB, "
            f"more than the {limit / 2**30:.1f} GiB available; the largest N that fits is "
            f"about {n_fit} (dx >= {(grid.x_max - grid.x_min) / max(n_fit, 1):.4g})"))


_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")


def loads(text: str, *, memory_limit: int | None = None) -> Config:
    """Parse and validate TOML text; raise ConfigError (one line) on any problem."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError("", None, f"not valid TOML: {e}") from None
    _keys("", data, ("name", "grid", "potential", "initial", "time", "propagator", "output"),
          ("name", "grid", "potential", "time"))
    name = data["name"]
    if not isinstance(name, str) or not _NAME.match(name):
        raise ConfigError("name", name, "must be 1-128 characters of letters, digits, '_', '.', '-'")
    sec = {k: _table(k, data.get(k, {})) for k in
           ("grid", "potential", "initial", "time", "propagator", "output")}
    grid = _grid(sec["grid"])
    potential = _potential(sec["potential"])
    time = _time(sec["time"])
    prop = _propagator(sec["propagator"], time, not potential.static)
    _memory_check(grid, memory_limit, prop.operator)
    n = grid.n
    return Config(name, grid, potential, _initial(sec["initial"], n), time, prop,
                  _output(sec["output"], n), source=text)


def load(path, **kw) -> Config:
    """Read a TOML file: missing, unreadable or non-UTF-8 files are ConfigErrors too."""
    try:
        raw = open(path, "rb").read()
    except FileNotFoundError:
        raise ConfigError("input", str(path), "no such file") from None
    except OSError as e:
        raise ConfigError("input", str(path), f"cannot be read ({e.strerror})") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ConfigError("input", str(path), f"is not UTF-8 text (byte {e.start})") from None
    return loads(text, **kw)
