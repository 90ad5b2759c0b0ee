"""The one validation module: TOML (or a dict) -> frozen dataclasses, or a one-line ConfigError
(:func:`parse`; its value checks in :mod:`tdse.checks`, the [field] and [potential] tables'
parsers in :mod:`tdse.sections`).

Every error names the key and its actual value (STYLE.md item 5).  Unknown keys are
rejected before any work; nothing is re-rounded (a dt that does not divide t_end, or a dx
that does not divide the box, is an error, not a silent adjustment).  :data:`KEYS` lists
every key with its type, unit, default and meaning: it decides which keys are allowed,
generates docs/INPUT.md (:func:`input_reference`), and :func:`to_toml` writes a Config
back with every default resolved (the *effective* input a run file records and a resumed
run continues).  All quantities are in atomic units (hbar = m_e = e = 1).
"""
from __future__ import annotations

import functools
import os
import re
import tomllib
from dataclasses import dataclass, field

from .errors import ConfigError
from .inputs import Absorber, Centre, Field, Grid, Initial, Nuclei, Output, Potential, Propagator, Time
from .keys import KEYS, Key, input_reference, key_unit, parse_assignment, to_toml  # noqa: F401  (re-exported)
from .options import RunOptions, available_memory, parse_options  # noqa: F401  (re-exported)
from .checks import SECTIONS, WHOLE_RTOL, check_keys, integer, number, table, whole  # noqa: F401
from .sections import (ENVELOPES, INTENSITY_AU, LAB_PARTNERS, OMEGA_NM, POTENTIAL_KINDS,  # noqa: F401  (re-exported)
                       check_finite, parse_field, parse_potential)

__all__ = ["ConfigError", "Config", "Grid", "Centre", "Potential", "Field", "Absorber",
           "Initial", "Time", "Propagator", "Output", "Nuclei", "load", "loads", "load_config", "parse",
           "to_toml", "input_reference", "parse_assignment", "KEYS", "available_memory",
           "STENCILS", "SCHEMES", "METHODS", "TIME_ERRORS", "ENVELOPES", "WHOLE_RTOL", "with_value", "key_unit"]

#: kinetic-energy discretisations: 3- and 5-point finite differences, Colbert-Miller sinc-DVR
STENCILS = (3, 5, "dvr")
SCHEMES = ("midpoint", "cfm4")
METHODS = ("auto", "dense", "taylor", "chebyshev")
#: how a run estimates its time-discretisation error (tdse.run.timeerror)
TIME_ERRORS = ("estimate", "companion", "window", "none")
#: the absorber's default strength x width (hartree bohr): with the quadratic CAP this
#: absorbs packets up to 8 Ha (k = 4) to ~1e-6 on the round trip (measured, tests/test_toolkit.py)
ABSORBER_ETA_WIDTH = 40.0
#: below this width (bohr) a 0.5 Ha packet reflects more than 1e-4 (measured: 15 -> 7e-5)
ABSORBER_MIN_WIDTH = 15.0


# ---------------------------------------------------------------- the dataclasses
@dataclass(frozen=True)
class Config:
    name: str
    grid: Grid
    potential: Potential
    initial: Initial
    time: Time
    propagator: Propagator
    output: Output
    absorber: Absorber | None = None
    nuclei: Nuclei | None = None       # [nuclei]: R a quantum coordinate (tdse.model.nuclei)
    source: str = field(default="", repr=False, compare=False)
    #: the performance options (:class:`tdse.options.RunOptions`, the ``[run]`` table): not
    #: compared, since they change no result (a scan's members batch whatever they say)
    run: RunOptions = field(default_factory=RunOptions, compare=False)

    @property
    def time_dependent(self) -> bool:
        """H depends on t (moving centres or a field)."""
        return not self.potential.static

    @property
    def hermitian(self) -> bool:
        """H is Hermitian (no absorber): the split/unitary path and Chebyshev apply."""
        return self.absorber is None

    @property
    def field(self):
        """The ``[field]`` table (a :class:`Field`, or None), as the TOML has it (it lives
        in ``potential.field``: V gains + x E(t))."""
        return self.potential.field

    def with_value(self, key: str, value) -> "Config":
        """This config with the input key ``key`` (dotted, as in the TOML: "field.E0",
        "time.dt", "potential.centres.frequency" on every centre) set to ``value``,
        validated again (:func:`with_value`): ``cfg.with_value("field.intensity", 2e14)``."""
        return with_value(self, key, value)


# ---------------------------------------------------------------- sections
def _grid(t):
    check_keys("grid.", t)
    x_min = number("grid.x_min", t["x_min"])
    x_max = number("grid.x_max", t["x_max"])
    if x_min >= x_max:
        raise ConfigError("grid.x_min", x_min, f"must be < grid.x_max = {x_max}")
    dx = number("grid.dx", t["dx"], positive=True)
    n = whole("grid.dx", dx, (x_max - x_min) / dx, "(x_max - x_min)/dx")
    if n < 8:
        raise ConfigError("grid.dx", dx, f"gives {n} grid points; need at least 8")
    stencil = t.get("stencil", 3)
    if isinstance(stencil, bool) or stencil not in STENCILS:
        raise ConfigError("grid.stencil", stencil, "must be 3 or 5 (finite differences) or "
                          "\"dvr\" (sinc discrete variable representation)")
    return Grid(x_min, x_max, dx, stencil)


def _absorber(t, grid: Grid):
    check_keys("absorber.", t)
    width = number("absorber.width", t["width"], positive=True)
    if 2 * width >= grid.x_max - grid.x_min:
        raise ConfigError("absorber.width", width,
                          f"two layers must fit in the box of {grid.x_max - grid.x_min:g} bohr")
    if width < 4 * grid.dx:
        raise ConfigError("absorber.width", width, f"must span at least 4 grid points (4 dx = {4 * grid.dx:g})")
    power = integer("absorber.power", t.get("power", 2), 1, 8)
    strength = number("absorber.strength", t.get("strength", ABSORBER_ETA_WIDTH / width), positive=True)
    return Absorber(width, strength, power)


def _nuclei(t, grid: Grid):
    """[nuclei]: R's grid (grid.stencil too), the mass, the repulsion, psi(0), the R absorber
    and the regions (:class:`Nuclei`)."""
    check_keys("nuclei.", t)
    num = {k: number(f"nuclei.{k}", t[k], positive=k in ("dR", "mass", "bound_radius"), nonneg=True)
           for k in t if k != "state"}
    lo, hi, dR = num["R_min"], num["R_max"], num["dR"]
    if hi <= lo:
        raise ConfigError("nuclei.R_max", hi, f"must be > nuclei.R_min = {lo}")
    n = whole("nuclei.R_max", hi, (hi - lo) / dR, "(R_max - R_min)/dR")
    if not 8 <= n <= 65536:
        raise ConfigError("nuclei.dR", dR, f"gives {n} points of R; 8..65536 allowed")
    if lo * lo + num.get("repulsion_a", 0.0) == 0:      # (R_min^2 underflows below ~1e-162)
        raise ConfigError("nuclei.R_min", lo, "must be > 0 with the exact 1/R (repulsion_a = 0)" if lo == 0
                          else "1/R is infinite there in double precision (R_min^2 underflows): "
                               "a larger R_min or repulsion_a > 0")
    state = t.get("state", 0)
    if state != "franck_condon":
        state = integer("nuclei.state", state, 0, 32)
    width = num.get("absorber_width", 0.0)
    if width and not 4 * dR <= width < (hi - lo) / 2:
        raise ConfigError("nuclei.absorber_width", width, "must span 4 dR and less than half of R's grid")
    num.setdefault("absorber_strength", ABSORBER_ETA_WIDTH / width if width else 0.0)
    return Nuclei(**{**num, "state": state})


def _initial(t, n):
    check_keys("initial.", t)
    state = t.get("state", 0)
    used = {"gaussian": ("x0", "sigma", "k0"), "superposition": ("amplitudes", "phases"),
            "file": ("snapshot",)}
    kind = "file" if isinstance(state, str) and state.startswith("file:") else state
    if isinstance(state, str) and kind not in used:
        raise ConfigError("initial.state", state, "must be an eigenstate index (integer >= 0), "
                          "\"gaussian\", \"superposition\" or \"file:RUN.h5\"")
    if not isinstance(state, str):
        integer("initial.state", state, 0, n - 1)
    for k in ("x0", "sigma", "k0", "amplitudes", "phases", "snapshot"):
        if k in t and k not in used.get(kind, ()):
            owner = next(o for o, ks in used.items() if k in ks)
            raise ConfigError(f"initial.{k}", t[k], f"only used with state = \"{owner}\"")
    amps = _numbers("initial.amplitudes", t.get("amplitudes", []), 1, n)
    if kind == "superposition" and not any(amps):
        raise ConfigError("initial.amplitudes", t.get("amplitudes"), "must hold a non-zero "
                          "amplitude for each of the lowest eigenstates, e.g. [1.0, 0.5]")
    phases = _numbers("initial.phases", t.get("phases", [0.0] * len(amps)), len(amps), len(amps))
    if kind == "file" and not os.path.isfile(state[5:]):
        raise ConfigError("initial.state", state, "names no file (a path from the folder the "
                          "command runs in)")
    return Initial(state, number("initial.x0", t.get("x0", 0.0)),
                   number("initial.sigma", t.get("sigma", 1.0), positive=True),
                   number("initial.k0", t.get("k0", 0.0)), amps, phases,
                   integer("initial.snapshot", t.get("snapshot", -1)))


def _numbers(key, v, lo, hi):
    """A list of lo..hi finite numbers, as a tuple of floats."""
    if not isinstance(v, list) or (v and not lo <= len(v) <= hi):
        raise ConfigError(key, v, f"must be a list of {lo}..{hi} numbers")
    return tuple(number(f"{key}[{i}]", x) for i, x in enumerate(v))


def _time(t):
    check_keys("time.", t)
    dt = number("time.dt", t["dt"], positive=True)
    t_end = number("time.t_end", t["t_end"], positive=True)
    steps = whole("time.t_end", t_end, t_end / dt, "t_end/dt")
    if steps > 100_000_000:
        raise ConfigError("time.t_end", t_end, f"gives {steps} steps; at most 1e8")
    tol = t.get("tolerance")
    if tol is None:
        if "dt_min" in t:
            raise ConfigError("time.dt_min", t["dt_min"], "is for adaptive steps: set time.tolerance too")
        return Time(dt, t_end)
    tol = number("time.tolerance", tol, positive=True)
    if tol >= 1:
        raise ConfigError("time.tolerance", tol, "must be < 1 (an error of psi at t_end)")
    dt_min = number("time.dt_min", t.get("dt_min", dt / 1024), positive=True)
    if dt_min > dt:
        raise ConfigError("time.dt_min", dt_min, f"must be <= time.dt = {dt}")
    return Time(dt, t_end, tol, dt_min)


def _propagator(t, time: Time, time_dependent: bool, hermitian: bool):
    check_keys("propagator.", t)
    method = t.get("method", "auto")
    if method not in METHODS:
        raise ConfigError("propagator.method", method,
                          "must be \"auto\", \"dense\", \"taylor\" or \"chebyshev\"")
    terms = integer("propagator.terms", t.get("terms", 10), 1, 100)
    tol = number("propagator.tolerance", t.get("tolerance", 1e-10), positive=True)
    if tol >= 1:
        raise ConfigError("propagator.tolerance", tol, "must be < 1 (an error per step)")
    op = t.get("operator", False)
    if not isinstance(op, bool):
        raise ConfigError("propagator.operator", op, "must be true or false")
    scheme = t.get("scheme", "cfm4" if time_dependent else "midpoint")
    if scheme not in SCHEMES:
        raise ConfigError("propagator.scheme", scheme, "must be \"midpoint\" or \"cfm4\"")
    given = "error_window" in t and t["error_window"] != 0
    # (#56 item 3: the estimate, cheaper than the companion wherever measured on the CPU and
    # on a dense GPU run; on a small GPU run x2.1 against the companion's x1.6)
    default = ("window" if given else "estimate") if time_dependent else "none"
    if time.tolerance is not None:        # adaptive steps come from the estimate
        default = "estimate"
    kind = t.get("time_error", default)
    if kind not in TIME_ERRORS:
        raise ConfigError("propagator.time_error", kind,
                          "must be \"estimate\", \"companion\", \"window\" or \"none\"")
    if "error_window" in t:
        w = number("propagator.error_window", t["error_window"], nonneg=True)
        if w > time.t_end * (1 + WHOLE_RTOL):
            raise ConfigError("propagator.error_window", w, f"must be <= time.t_end = {time.t_end}")
        window = 0 if w == 0 else whole("propagator.error_window", w, w / time.dt,
                                         "error_window/dt")
        if window and kind != "window":
            raise ConfigError("propagator.error_window", w, f"is for time_error = \"window\" "
                              f"(time_error = {kind!r} here): drop it or set time_error = \"window\"")
    else:
        window = 0
    if time.tolerance is not None and (kind != "estimate" or op):
        key, val = ("propagator.operator", op) if op else ("propagator.time_error", kind)
        raise ConfigError(key, val, "cannot go with time.tolerance (adaptive steps): they need "
                          "time_error = \"estimate\" and operator = false")
    if kind == "window" and not window:  # default: the first tenth of the run (at least one step)
        window = max(1, time.steps // 10)
    return Propagator(method, terms, tol, op, scheme, window, kind)


def _output(t, n):
    check_keys("output.", t)
    every = integer("output.every", t.get("every", 50), 1)
    obs = integer("output.observables_every", t.get("observables_every", 1), 1)
    pops = integer("output.populations", t.get("populations", 4), 1, n)
    eps = number("output.node_eps", t.get("node_eps", 1e-2), positive=True)
    if eps >= 1:
        raise ConfigError("output.node_eps", eps, "must be < 1 (a fraction of max|psi|)")
    pe = 0
    if t.get("populations_every") is not None:
        pe = integer("output.populations_every", t["populations_every"], 1)
        if pe % obs:
            raise ConfigError("output.populations_every", pe,
                              f"must be a multiple of output.observables_every = {obs}")
    flush = number("output.flush_seconds", t.get("flush_seconds", 2.0), nonneg=True)
    return Output(every, pops, eps, obs, pe, flush,
                  number("output.tsurff_radius", t.get("tsurff_radius", 0.0), nonneg=True),
                  number("output.tsurff_k_max", t.get("tsurff_k_max", 3.0), positive=True),
                  integer("output.tsurff_momenta", t.get("tsurff_momenta", 401), 3, 1001))


_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")


def parse(data: dict, source: str | None = None) -> Config:
    """Validate a dict of sections (as TOML gives); raise ConfigError (one line)."""
    if not isinstance(data, dict):
        raise ConfigError("input", type(data).__name__, "must be a table of sections")
    check_keys("", data)
    name = data["name"]
    if not isinstance(name, str) or not _NAME.match(name):
        raise ConfigError("name", name, "must be 1-128 characters of letters, digits, '_', '.', '-'")
    sec = {k: table(k, data.get(k, {})) for k in SECTIONS[1:]}
    grid = _grid(sec["grid"])
    fld = parse_field(sec["field"]) if "field" in data else None
    nuclei = _nuclei(sec["nuclei"], grid) if "nuclei" in data else None
    potential = parse_potential(sec["potential"], fld, nuclei is not None)
    check_finite(potential, grid)
    absorber = _absorber(sec["absorber"], grid) if "absorber" in data else None
    time = _time(sec["time"])
    for key, bad in (("field.gauge", fld and fld.gauge != "length" and fld.gauge), ("initial", data.get("initial")),
                     ("output.tsurff_radius", sec["output"].get("tsurff_radius"))):
        if nuclei and bad:
            raise ConfigError(key, bad, "is not for [nuclei] runs (the length gauge; psi(0) is nuclei.state)")
    pt = {"time_error": "none", **sec["propagator"]} if nuclei else sec["propagator"]
    prop = _propagator(pt, time, not potential.static, absorber is None)
    if nuclei and (prop.time_error != "none" or prop.operator or prop.method in ("dense", "taylor")):
        key, v = (("propagator.method", prop.method) if prop.method in ("dense", "taylor") else
                  ("propagator.operator", True) if prop.operator else ("propagator.time_error", prop.time_error))
        raise ConfigError(f"{key}", v, "is not available with [nuclei] (Chebyshev steps, "
                          "time_error = \"none\": docs/NUCLEI.md, \"What a [nuclei] run does not do\", says why)")
    n, out = grid.n, _output(sec["output"], grid.n)
    w, R = (absorber.width if absorber else 0.0) + 3 * grid.dx, out.tsurff_radius
    if R and not (R < grid.x_max - w and -R > grid.x_min + w):
        raise ConfigError("output.tsurff_radius", R, f"must lie inside the box, 3 dx before the absorber "
                          f"or the walls ({grid.x_min + w:g} < -R, R < {grid.x_max - w:g})")
    cfg = Config(name, grid, potential, _initial(sec["initial"], n), time, prop, out, absorber,
                 nuclei, run=parse_options(sec["run"]))
    return with_source(cfg, source if source is not None else to_toml(cfg))


def with_source(cfg: Config, source: str) -> Config:
    """``cfg`` holding ``source`` as its input text (a frozen field set once, as parse does)."""
    object.__setattr__(cfg, "source", source)
    return cfg


def loads(text: str) -> Config:
    """Parse and validate TOML text; raise ConfigError (one line) on any problem."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError("", None, f"not valid TOML: {e}") from None
    return parse(data, text)


def load(path, **kw) -> Config:
    """Read a TOML file: missing, unreadable or non-UTF-8 files are ConfigErrors too."""
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except FileNotFoundError:
        raise ConfigError("input", str(path), "no such file") from None
    except OSError as e:
        raise ConfigError("input", str(path), f"cannot be read ({e.strerror})") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ConfigError("input", str(path), f"is not UTF-8 text (byte {e.start})") from None
    return loads(text, **kw)


def load_config(spec, **kw) -> Config:
    """A Config from a TOML file path, TOML text, or a dict of sections (notebooks)."""
    if isinstance(spec, Config):
        return spec
    if isinstance(spec, dict):
        return parse(spec, **kw)
    if isinstance(spec, str) and "\n" in spec and not os.path.exists(spec):
        return loads(spec, **kw)
    return load(spec, **kw)


# ---------------------------------------------------------------- writing back
def with_value(cfg: Config, key: str, value) -> Config:
    """``cfg`` with the input key ``key`` (dotted, as :data:`KEYS` names it) set to
    ``value`` and validated again; a key under ``potential.centres.`` is set on every
    centre.  ConfigError (one line) for a key that is not an input key, or a bad value."""
    return with_values(cfg, [(key, value)])


@functools.lru_cache(maxsize=None)
def _key_names() -> frozenset:
    """Every input key's dotted name (KEYS is fixed: found once)."""
    return frozenset(k.name for k in KEYS)


def _tables_copy(v):
    """A copy of parsed TOML: its tables and arrays new, its scalars shared (immutable)."""
    if isinstance(v, dict):
        return {k: _tables_copy(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_tables_copy(x) for x in v]
    return v


def with_values(cfg: Config, pairs, source: dict | None = None) -> Config:
    """``cfg`` with every (key, value) of ``pairs`` set (as :func:`with_value` sets one),
    validated once; ``source``: ``cfg``'s effective TOML already parsed (a scan's members
    share it: the round trip through TOML was most of a member's cost)."""
    names = _key_names()
    # the sections this member changes are copied; the others are shared with ``source``
    # (parse reads them, nothing writes them)
    data = dict(source) if source is not None else tomllib.loads(to_toml(cfg))
    copied = set()

    def section(name):
        if source is not None and name not in copied:
            copied.add(name)
            data[name] = _tables_copy(data.get(name, {}))
        return data.setdefault(name, {})

    for key, value in pairs:
        parts = key.split(".")
        if len(parts) == 3 and parts[0] in ("potential", "field") and parts[1] == "parameters":
            section(parts[0]).setdefault("parameters", {})[parts[2]] = value
            continue
        if key not in names or key in ("name", "potential.centres") or key.count(".") < 1:
            raise ConfigError(key, value, "is not an input key that takes a value (`tdse keys` lists them)")
        partner = LAB_PARTNERS.get(parts[-1])
        if parts[0] == "field" and partner and "field" in data:   # field.intensity replaces
            section("field").pop(partner, None)                     # field.E0, and back
        if key == "initial.state":       # another kind of state: the last one's keys go
            for k in ("x0", "sigma", "k0", "amplitudes", "phases", "snapshot"):
                section("initial").pop(k, None)
        if key.startswith("potential.centres."):
            for c in section("potential")["centres"]:
                c[parts[2]] = value
        else:
            section(parts[0])[parts[1]] = value
    return parse(data)          # its source: the effective TOML with the new values
