"""The one validation module: TOML (or a dict) -> frozen dataclasses, or a one-line ConfigError.

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
import math
import os
import re
import tomllib
from dataclasses import dataclass, field

from . import expression
from .errors import ConfigError
from .inputs import Absorber, Centre, Field, Grid, Initial, Nuclei, Output, Potential, Propagator, Time
from .keys import KEYS, Key, input_reference, key_unit, parse_assignment, to_toml  # noqa: F401  (re-exported)
from .options import RunOptions, available_memory, parse_options  # noqa: F401  (re-exported)

__all__ = ["ConfigError", "Config", "Grid", "Centre", "Potential", "Field", "Absorber",
           "Initial", "Time", "Propagator", "Output", "Nuclei", "load", "loads", "load_config", "parse",
           "to_toml", "input_reference", "parse_assignment", "KEYS", "available_memory",
           "STENCILS", "SCHEMES", "METHODS", "TIME_ERRORS", "ENVELOPES", "WHOLE_RTOL", "with_value", "key_unit"]

#: how close to a whole number (relative) a count such as (x_max - x_min)/dx must be
WHOLE_RTOL = 1e-9

#: kinetic-energy discretisations: 3- and 5-point finite differences, Colbert-Miller sinc-DVR
STENCILS = (3, 5, "dvr")
SCHEMES = ("midpoint", "cfm4")
METHODS = ("auto", "dense", "taylor", "chebyshev")
#: how a run estimates its time-discretisation error (tdse.run.timeerror)
TIME_ERRORS = ("estimate", "companion", "window", "none")
ENVELOPES = ("sin2", "gaussian", "trapezoid")
#: the absorber's default strength x width (hartree bohr): with the quadratic CAP this
#: absorbs packets up to 8 Ha (k = 4) to ~1e-6 on the round trip (measured, tests/test_toolkit.py)
ABSORBER_ETA_WIDTH = 40.0
#: below this width (bohr) a 0.5 Ha packet reflects more than 1e-4 (measured: 15 -> 7e-5)
ABSORBER_MIN_WIDTH = 15.0


# ---------------------------------------------------------------- the keys
SECTIONS = ("name", "grid", "potential", "field", "absorber", "nuclei", "initial", "time", "propagator",
            "output", "run")
_REQUIRED_SECTIONS = ("name", "grid", "potential", "time")


@functools.lru_cache(maxsize=None)
def _allowed(prefix):
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


def _keys(prefix, table, schema_prefix=None):
    """Reject keys that :data:`KEYS` does not list under the prefix; require the required."""
    spec = ([(s, s in _REQUIRED_SECTIONS) for s in SECTIONS] if prefix == "" else
            _allowed(schema_prefix or prefix))
    allowed = [k for k, _ in spec]
    for k in table:
        if k not in allowed:
            raise ConfigError(f"{prefix}{k}", table[k],
                              f"unknown key; allowed here: {', '.join(allowed)}")
    for k, required in spec:
        if required and k not in table:
            raise ConfigError("", None, f"missing key `{prefix}{k}`")


def _whole(key, value, ratio, what):
    n = round(ratio)
    if n < 1 or abs(ratio - n) > WHOLE_RTOL * max(1.0, abs(ratio)):
        raise ConfigError(key, value, f"{what} = {ratio:.6g} is not a whole number "
                          "(inputs are never re-rounded; choose values that divide exactly)")
    return int(n)


# ---------------------------------------------------------------- sections
def _grid(t):
    _keys("grid.", t)
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


#: the atomic unit of intensity (W/cm^2) and omega * lambda (E_h/hbar nm), CODATA 2018
INTENSITY_AU = 3.50944552e16
OMEGA_NM = 45.5633525


_LAB_PAIRS = {"E0": "intensity", "omega": "wavelength", "duration": "cycles"}
#: each of those keys' other form, both ways
_LAB_PARTNERS = {**_LAB_PAIRS, **{v: k for k, v in _LAB_PAIRS.items()}}


def _one_of(t, au, lab):
    """The key of a pair (a.u., lab units) the table gives: exactly one (one-line error)."""
    given = [k for k in (au, lab) if k in t]
    if len(given) != 1:
        raise ConfigError(f"field.{au}", t.get(au, t.get(lab)),
                          f"give exactly one of field.{au} and field.{lab}"
                          + (" (both given)" if len(given) == 2 else " (neither given)"))
    return given[0]


def _formula_with_parameters(prefix, key, variables, t):
    """(the parsed formula ``prefix.key``, its ``parameters`` as sorted (name, value) pairs),
    each parameter read by the formula (a name it does not read is a typo)."""
    pairs = _parameters(prefix, t)
    formula = expression.parse(t[key], variables + tuple(k for k, _ in pairs), f"{prefix}.{key}")
    for k, v in pairs:
        if k not in formula.names():
            raise ConfigError(f"{prefix}.parameters.{k}", v, f"is not read by {prefix}.{key} = {t[key]!r}")
    return formula, pairs


def _parameters(prefix, t):
    """A formula's ``parameters`` table as sorted (name, value) pairs: names other than x,
    t, pi and the functions, numbers."""
    params = _table(f"{prefix}.parameters", t.get("parameters", {}))
    for k, v in params.items():
        if not _IDENTIFIER.match(k) or k in ("x", "t") or k in expression.FUNCTIONS or k in expression.CONSTANTS:
            raise ConfigError(f"{prefix}.parameters.{k}", v, "must be a name other than x, t, pi "
                              "and the functions")
        _number(f"{prefix}.parameters.{k}", v)
    return tuple(sorted((k, float(v)) for k, v in params.items()))


def _expression_field(t, gauge):
    """[field] kind = "expression": E(t) (or A(t), E = -dA/dt) a formula in t, 0 <= t <= duration."""
    extra = [k for k in t if k not in ("kind", "E", "A", "parameters", "duration", "omega", "E0", "gauge")]
    if extra:
        raise ConfigError(f"field.{extra[0]}", t[extra[0]], "is not used with kind = \"expression\" "
                          "(E or A, parameters, duration, omega, E0, gauge are)")
    if ("E" in t) == ("A" in t):
        raise ConfigError("field.E", t.get("E", t.get("A")), "give exactly one of field.E and "
                          "field.A (kind = \"expression\")")
    if "duration" not in t:
        raise ConfigError("", None, "missing key `field.duration` (kind = \"expression\")")
    which = "E" if "E" in t else "A"
    formula, pairs = _formula_with_parameters("field", which, ("t",), t)
    if which == "A":                                  # E = -dA/dt (its peak below)
        formula = expression.derivative(formula, "t")
    duration = _number("field.duration", t["duration"], positive=True)
    import numpy as np
    samples = np.linspace(0.0, duration, 2001)       # E0's default: the formula's sampled peak
    peak = float(np.max(np.abs(expression.evaluate(formula, {**dict(pairs), "t": samples}))))
    return Field(_number("field.E0", t.get("E0", peak), nonneg=True),
                 _number("field.omega", t.get("omega", 0.0), nonneg=True), duration, 0.0,
                 "expression", 0.0, 0.0, (), t.get("E", ""), pairs, gauge, t.get("A", ""))


def _field(t):
    _keys("field.", t)
    kind = t.get("kind", "pulse")
    if kind not in ("pulse", "expression"):
        raise ConfigError("field.kind", kind, "must be \"pulse\" or \"expression\"")
    gauge = t.get("gauge", "length")
    if gauge not in ("length", "velocity"):
        raise ConfigError("field.gauge", gauge, "must be \"length\" or \"velocity\"")
    if kind == "expression":
        return _expression_field(t, gauge)
    for k in ("E", "A", "parameters"):
        if k in t:
            raise ConfigError(f"field.{k}", t[k], "is for kind = \"expression\"")
    if _one_of(t, "E0", "intensity") == "E0":
        E0 = _number("field.E0", t["E0"])
    else:
        E0 = math.sqrt(_number("field.intensity", t["intensity"], positive=True) / INTENSITY_AU)
    if _one_of(t, "omega", "wavelength") == "omega":
        omega = _number("field.omega", t["omega"], positive=True)
    else:
        omega = OMEGA_NM / _number("field.wavelength", t["wavelength"], positive=True)
    if _one_of(t, "duration", "cycles") == "duration":
        duration = _number("field.duration", t["duration"], positive=True)
    else:
        duration = _number("field.cycles", t["cycles"], positive=True) * 2 * math.pi / omega
    env = t.get("envelope", "sin2")
    if env not in ENVELOPES:
        raise ConfigError("field.envelope", env, "must be \"sin2\", \"gaussian\" or \"trapezoid\"")
    for k, used in (("fwhm", "gaussian"), ("ramp", "trapezoid")):
        if k in t and env != used:
            raise ConfigError(f"field.{k}", t[k], f"only used with envelope = \"{used}\"")
    fwhm = _number("field.fwhm", t.get("fwhm", duration / 4), positive=True) if env == "gaussian" else 0.0
    ramp = _number("field.ramp", t.get("ramp", duration / 4), positive=True) if env == "trapezoid" else 0.0
    if env == "trapezoid" and 2 * ramp > duration:
        raise ConfigError("field.ramp", ramp, f"must be <= duration/2 = {duration / 2}")
    lab = tuple((k, t[k]) for k in ("intensity", "wavelength", "cycles") if k in t)
    return Field(E0, omega, duration, _number("field.phase", t.get("phase", 0.0)), env, fwhm, ramp,
                 lab, gauge=gauge)


#: the potentials' kinds (tdse.model.potential.POTENTIALS implements each)
POTENTIAL_KINDS = ("soft_core", "expression")
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _expression_potential(t, fld):
    """[potential] kind = "expression": V parsed (a whitelist) with x, t and the parameters."""
    for k in ("a", "centres"):
        if k in t:
            raise ConfigError(f"potential.{k}", t[k], "is for kind = \"soft_core\"; an expression "
                              "potential reads potential.V and potential.parameters")
    if "V" not in t:
        raise ConfigError("", None, "missing key `potential.V` (kind = \"expression\")")
    _, pairs = _formula_with_parameters("potential", "V", ("x", "t"), t)
    return Potential(0.0, (), fld, "expression", t["V"], pairs)


def _potential(t, fld, nuclei=False):
    kind = t.get("kind", "soft_core")
    if nuclei and kind != "soft_core":
        raise ConfigError("potential.kind", kind, "with [nuclei] the potential is the soft-core "
                          "H2+ of tdse.model.nuclei (potential.a only)")
    if kind == "callable":
        raise ConfigError("potential.kind", kind, "is a Python function V(x, t): it is given from "
                          "Python (tdse.with_potential), not read from TOML (kind = \"expression\" is)")
    if kind not in POTENTIAL_KINDS:
        raise ConfigError("potential.kind", kind, "must be \"soft_core\" or \"expression\"")
    allowed = [k for k, _ in _allowed("potential.")]
    for k in t:
        if k not in allowed:
            raise ConfigError(f"potential.{k}", t[k], f"unknown key; allowed here: {', '.join(allowed)}")
    if kind == "expression":
        return _expression_potential(t, fld)
    for k in ("V", "parameters"):
        if k in t:
            raise ConfigError(f"potential.{k}", t[k], "is for kind = \"expression\"")
    for k in ("a",) if nuclei else ("a", "centres"):
        if k not in t:
            raise ConfigError("", None, f"missing key `potential.{k}`")
    a = _number("potential.a", t["a"], positive=True)
    if nuclei:
        if "centres" in t:
            raise ConfigError("potential.centres", t["centres"], "with [nuclei] the nuclei are "
                              "quantum, at x = +-R/2 on R's grid: drop the centres")
        return Potential(a, (), fld)
    cs = t["centres"]
    if not isinstance(cs, list) or not cs:
        raise ConfigError("potential.centres", cs, "must be a non-empty array of tables "
                          "([[potential.centres]])")
    centres = []
    for i, c in enumerate(cs):
        p = f"potential.centres[{i}]."
        _table(p[:-1], c)
        _keys(p, c, "potential.centres.")
        centres.append(Centre(
            _number(p + "x0", c["x0"]), _number(p + "Z", c["Z"]),
            _number(p + "amplitude", c.get("amplitude", 0.0)),
            _number(p + "frequency", c.get("frequency", 0.0), nonneg=True),
            _number(p + "phase", c.get("phase", 0.0)),
            _number(p + "ramp", c.get("ramp", 0.0), nonneg=True)))
    return Potential(a, tuple(centres), fld)


def _absorber(t, grid: Grid):
    _keys("absorber.", t)
    width = _number("absorber.width", t["width"], positive=True)
    if 2 * width >= grid.x_max - grid.x_min:
        raise ConfigError("absorber.width", width,
                          f"two layers must fit in the box of {grid.x_max - grid.x_min:g} bohr")
    if width < 4 * grid.dx:
        raise ConfigError("absorber.width", width, f"must span at least 4 grid points (4 dx = {4 * grid.dx:g})")
    power = _integer("absorber.power", t.get("power", 2), 1, 8)
    strength = _number("absorber.strength", t.get("strength", ABSORBER_ETA_WIDTH / width), positive=True)
    return Absorber(width, strength, power)


def _nuclei(t, grid: Grid):
    """[nuclei]: R's grid (grid.stencil too), the mass, the repulsion, psi(0), the R absorber
    and the regions (:class:`Nuclei`)."""
    _keys("nuclei.", t)
    num = {k: _number(f"nuclei.{k}", t[k], positive=k in ("dR", "mass", "bound_radius"), nonneg=True)
           for k in t if k != "state"}
    lo, hi, dR = num["R_min"], num["R_max"], num["dR"]
    if hi <= lo:
        raise ConfigError("nuclei.R_max", hi, f"must be > nuclei.R_min = {lo}")
    n = _whole("nuclei.R_max", hi, (hi - lo) / dR, "(R_max - R_min)/dR")
    if not 8 <= n <= 65536:
        raise ConfigError("nuclei.dR", dR, f"gives {n} points of R; 8..65536 allowed")
    if lo == 0 and num.get("repulsion_a", 0.0) == 0:
        raise ConfigError("nuclei.R_min", lo, "must be > 0 with the exact 1/R (repulsion_a = 0)")
    state = t.get("state", 0)
    if state != "franck_condon":
        state = _integer("nuclei.state", state, 0, 32)
    width = num.get("absorber_width", 0.0)
    if width and not 4 * dR <= width < (hi - lo) / 2:
        raise ConfigError("nuclei.absorber_width", width, "must span 4 dR and less than half of R's grid")
    num.setdefault("absorber_strength", ABSORBER_ETA_WIDTH / width if width else 0.0)
    return Nuclei(**{**num, "state": state})


def _initial(t, n):
    _keys("initial.", t)
    state = t.get("state", 0)
    used = {"gaussian": ("x0", "sigma", "k0"), "superposition": ("amplitudes", "phases"),
            "file": ("snapshot",)}
    kind = "file" if isinstance(state, str) and state.startswith("file:") else state
    if isinstance(state, str) and kind not in used:
        raise ConfigError("initial.state", state, "must be an eigenstate index (integer >= 0), "
                          "\"gaussian\", \"superposition\" or \"file:RUN.h5\"")
    if not isinstance(state, str):
        _integer("initial.state", state, 0, n - 1)
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
    return Initial(state, _number("initial.x0", t.get("x0", 0.0)),
                   _number("initial.sigma", t.get("sigma", 1.0), positive=True),
                   _number("initial.k0", t.get("k0", 0.0)), amps, phases,
                   _integer("initial.snapshot", t.get("snapshot", -1)))


def _numbers(key, v, lo, hi):
    """A list of lo..hi finite numbers, as a tuple of floats."""
    if not isinstance(v, list) or (v and not lo <= len(v) <= hi):
        raise ConfigError(key, v, f"must be a list of {lo}..{hi} numbers")
    return tuple(_number(f"{key}[{i}]", x) for i, x in enumerate(v))


def _time(t):
    _keys("time.", t)
    dt = _number("time.dt", t["dt"], positive=True)
    t_end = _number("time.t_end", t["t_end"], positive=True)
    steps = _whole("time.t_end", t_end, t_end / dt, "t_end/dt")
    if steps > 100_000_000:
        raise ConfigError("time.t_end", t_end, f"gives {steps} steps; at most 1e8")
    tol = t.get("tolerance")
    if tol is None:
        if "dt_min" in t:
            raise ConfigError("time.dt_min", t["dt_min"], "is for adaptive steps: set time.tolerance too")
        return Time(dt, t_end)
    tol = _number("time.tolerance", tol, positive=True)
    if tol >= 1:
        raise ConfigError("time.tolerance", tol, "must be < 1 (an error of psi at t_end)")
    dt_min = _number("time.dt_min", t.get("dt_min", dt / 1024), positive=True)
    if dt_min > dt:
        raise ConfigError("time.dt_min", dt_min, f"must be <= time.dt = {dt}")
    return Time(dt, t_end, tol, dt_min)


def _propagator(t, time: Time, time_dependent: bool, hermitian: bool):
    _keys("propagator.", t)
    method = t.get("method", "auto")
    if method not in METHODS:
        raise ConfigError("propagator.method", method,
                          "must be \"auto\", \"dense\", \"taylor\" or \"chebyshev\"")
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
    given = "error_window" in t and t["error_window"] != 0
    default = ("window" if given else "companion") if time_dependent else "none"
    if time.tolerance is not None:        # adaptive steps come from the estimate
        default = "estimate"
    kind = t.get("time_error", default)
    if kind not in TIME_ERRORS:
        raise ConfigError("propagator.time_error", kind,
                          "must be \"estimate\", \"companion\", \"window\" or \"none\"")
    if "error_window" in t:
        w = _number("propagator.error_window", t["error_window"], nonneg=True)
        if w > time.t_end * (1 + WHOLE_RTOL):
            raise ConfigError("propagator.error_window", w, f"must be <= time.t_end = {time.t_end}")
        window = 0 if w == 0 else _whole("propagator.error_window", w, w / time.dt,
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
    _keys("output.", t)
    every = _integer("output.every", t.get("every", 50), 1)
    obs = _integer("output.observables_every", t.get("observables_every", 1), 1)
    pops = _integer("output.populations", t.get("populations", 4), 1, n)
    eps = _number("output.node_eps", t.get("node_eps", 1e-2), positive=True)
    if eps >= 1:
        raise ConfigError("output.node_eps", eps, "must be < 1 (a fraction of max|psi|)")
    pe = 0
    if t.get("populations_every") is not None:
        pe = _integer("output.populations_every", t["populations_every"], 1)
        if pe % obs:
            raise ConfigError("output.populations_every", pe,
                              f"must be a multiple of output.observables_every = {obs}")
    flush = _number("output.flush_seconds", t.get("flush_seconds", 2.0), nonneg=True)
    return Output(every, pops, eps, obs, pe, flush,
                  _number("output.tsurff_radius", t.get("tsurff_radius", 0.0), nonneg=True),
                  _number("output.tsurff_k_max", t.get("tsurff_k_max", 3.0), positive=True),
                  _integer("output.tsurff_momenta", t.get("tsurff_momenta", 401), 3, 1001))


_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")


def parse(data: dict, source: str | None = None) -> Config:
    """Validate a dict of sections (as TOML gives); raise ConfigError (one line)."""
    if not isinstance(data, dict):
        raise ConfigError("input", type(data).__name__, "must be a table of sections")
    _keys("", data)
    name = data["name"]
    if not isinstance(name, str) or not _NAME.match(name):
        raise ConfigError("name", name, "must be 1-128 characters of letters, digits, '_', '.', '-'")
    sec = {k: _table(k, data.get(k, {})) for k in SECTIONS[1:]}
    grid = _grid(sec["grid"])
    fld = _field(sec["field"]) if "field" in data else None
    nuclei = _nuclei(sec["nuclei"], grid) if "nuclei" in data else None
    potential = _potential(sec["potential"], fld, nuclei is not None)
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
        partner = _LAB_PARTNERS.get(parts[-1])
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
