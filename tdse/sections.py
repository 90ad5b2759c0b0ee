"""The [field] and [potential] sections of an input: a laser pulse (a.u. or lab units) or
an E(t) / A(t) formula, and the soft-core centres or a V(x, t) formula (parsed by the
whitelist of :mod:`tdse.expression`, never ``eval``), each as its frozen dataclass
(:mod:`tdse.inputs`) or one :class:`tdse.errors.ConfigError` naming the key.  Atomic units
(hbar = m_e = e = 1)."""
from __future__ import annotations

import math
import re

from . import expression
from .checks import allowed_keys, check_keys, number, table
from .errors import ConfigError
from .inputs import Centre, Field, Potential
from .potentials import KINDS as NAMED

__all__ = ["INTENSITY_AU", "OMEGA_NM", "LAB_PAIRS", "LAB_PARTNERS", "ENVELOPES", "POTENTIAL_KINDS", "parse_field", "parse_potential"]

ENVELOPES = ("sin2", "gaussian", "trapezoid")

#: the atomic unit of intensity (W/cm^2) and omega * lambda (E_h/hbar nm), CODATA 2018
INTENSITY_AU = 3.50944552e16
OMEGA_NM = 45.5633525


LAB_PAIRS = {"E0": "intensity", "omega": "wavelength", "duration": "cycles"}
#: each of those keys' other form, both ways
LAB_PARTNERS = {**LAB_PAIRS, **{v: k for k, v in LAB_PAIRS.items()}}


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


def check_finite(potential, grid):
    """ConfigError (one line) where a formula's V (kind "expression" or a named kind) is not
    finite on the grid at t = 0 -- 1/x or log(x) on a grid through x <= 0 had been a LAPACK
    error's traceback in H(0)'s eigenstates (its values at later times: the precheck's bounds)."""
    if not potential.V or potential.function is not None:
        return
    import numpy as np
    f = expression.parse(potential.V, ("x", "t") + tuple(k for k, _ in potential.parameters), "potential.V")
    x = grid.x_min + grid.dx * np.arange(grid.n)
    with np.errstate(all="ignore"):
        try:
            v = expression.evaluate(f, {**dict(potential.parameters), "x": x, "t": np.float64(0.0)})
            v = np.broadcast_to(np.asarray(v, dtype=np.float64), x.shape)
        except (ArithmeticError, ValueError):      # (1/0 of two numbers: Python's, not NumPy's)
            v = np.full(x.shape, np.nan)
    bad = np.flatnonzero(~np.isfinite(v))
    if bad.size:
        key, value = (("potential.V", potential.V) if potential.kind == "expression" else
                      ("potential.parameters", dict(potential.parameters)))
        raise ConfigError(key, value, f"V is not finite at x = {x[bad[0]]:.6g}, t = 0 ({bad.size} of the "
                          f"{x.size} grid points): a formula finite on the grid from x_min to x_max is needed")


def _parameters(prefix, t):
    """A formula's ``parameters`` table as sorted (name, value) pairs: names other than x,
    t, pi and the functions, numbers."""
    params = table(f"{prefix}.parameters", t.get("parameters", {}))
    for k, v in params.items():
        if not _IDENTIFIER.match(k) or k in ("x", "t") or k in expression.FUNCTIONS or k in expression.CONSTANTS:
            raise ConfigError(f"{prefix}.parameters.{k}", v, "must be a name other than x, t, pi "
                              "and the functions")
        number(f"{prefix}.parameters.{k}", v)
    return tuple(sorted((k, float(v)) for k, v in params.items()))


def expression_field(t, gauge):
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
    given, pairs = _formula_with_parameters("field", which, ("t",), t)
    formula = expression.derivative(given, "t") if which == "A" else given     # E = -dA/dt
    duration = number("field.duration", t["duration"], positive=True)
    import numpy as np
    samples = np.linspace(0.0, duration, 2001)       # E0's default: the formula's sampled peak
    for f in ([given] if which == "A" else []) + [formula]:   # (finite where sampled: 1/t had
        # run on to NaN rows, exit 0; E's values last: its peak below)
        with np.errstate(all="ignore"):
            try:
                v = np.broadcast_to(expression.evaluate(f, {**dict(pairs), "t": samples}), samples.shape)
            except ZeroDivisionError:                # (1/0 of two numbers: Python's)
                v = np.full(samples.shape, np.nan)
        if not np.isfinite(v).all():
            raise ConfigError(f"field.{which}", t[which], f"is not finite at t = "
                              f"{samples[np.flatnonzero(~np.isfinite(v))[0]]:.6g} (of 2001 times from 0 "
                              f"to field.duration): a field finite over its duration is needed")
    peak = float(np.max(np.abs(v)))
    return Field(number("field.E0", t.get("E0", peak), nonneg=True),
                 number("field.omega", t.get("omega", 0.0), nonneg=True), duration, 0.0,
                 "expression", 0.0, 0.0, (), t.get("E", ""), pairs, gauge, t.get("A", ""))


def parse_field(t):
    check_keys("field.", t)
    kind = t.get("kind", "pulse")
    if kind not in ("pulse", "expression"):
        raise ConfigError("field.kind", kind, "must be \"pulse\" or \"expression\"")
    gauge = t.get("gauge", "length")
    if gauge not in ("length", "velocity"):
        raise ConfigError("field.gauge", gauge, "must be \"length\" or \"velocity\"")
    if kind == "expression":
        return expression_field(t, gauge)
    for k in ("E", "A", "parameters"):
        if k in t:
            raise ConfigError(f"field.{k}", t[k], "is for kind = \"expression\"")
    if _one_of(t, "E0", "intensity") == "E0":
        E0 = number("field.E0", t["E0"])
    else:
        E0 = math.sqrt(number("field.intensity", t["intensity"], positive=True) / INTENSITY_AU)
    if _one_of(t, "omega", "wavelength") == "omega":
        omega = number("field.omega", t["omega"], positive=True)
    else:
        omega = OMEGA_NM / number("field.wavelength", t["wavelength"], positive=True)
    if _one_of(t, "duration", "cycles") == "duration":
        duration = number("field.duration", t["duration"], positive=True)
    else:
        duration = number("field.cycles", t["cycles"], positive=True) * 2 * math.pi / omega
    env = t.get("envelope", "sin2")
    if env not in ENVELOPES:
        raise ConfigError("field.envelope", env, "must be \"sin2\", \"gaussian\" or \"trapezoid\"")
    for k, used in (("fwhm", "gaussian"), ("ramp", "trapezoid")):
        if k in t and env != used:
            raise ConfigError(f"field.{k}", t[k], f"only used with envelope = \"{used}\"")
    fwhm = number("field.fwhm", t.get("fwhm", duration / 4), positive=True) if env == "gaussian" else 0.0
    ramp = number("field.ramp", t.get("ramp", duration / 4), positive=True) if env == "trapezoid" else 0.0
    if env == "trapezoid" and 2 * ramp > duration:
        raise ConfigError("field.ramp", ramp, f"must be <= duration/2 = {duration / 2}")
    lab = tuple((k, t[k]) for k in ("intensity", "wavelength", "cycles") if k in t)
    return Field(E0, omega, duration, number("field.phase", t.get("phase", 0.0)), env, fwhm, ramp,
                 lab, gauge=gauge)


#: the potentials' kinds (tdse.model.potential.POTENTIALS implements each): the soft-core
#: molecule, a formula, and the named formulas of :mod:`tdse.potentials`
POTENTIAL_KINDS = ("soft_core", "expression") + tuple(NAMED)
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def expression_potential(t, fld):
    """[potential] kind = "expression": V parsed (a whitelist) with x, t and the parameters."""
    for k in ("a", "centres"):
        if k in t:
            raise ConfigError(f"potential.{k}", t[k], "is for kind = \"soft_core\"; an expression "
                              "potential reads potential.V and potential.parameters")
    if "V" not in t:
        raise ConfigError("", None, "missing key `potential.V` (kind = \"expression\")")
    _, pairs = _formula_with_parameters("potential", "V", ("x", "t"), t)
    return Potential(0.0, (), fld, "expression", t["V"], pairs)


def named_potential(t, fld):
    """A named potential of :mod:`tdse.potentials`: its formula with ``potential.parameters``
    (each known to the kind; those left out take the kind's defaults), in the kind's order."""
    kind = NAMED[t["kind"]]
    names = [q.name for q in kind.parameters]
    for k in t:
        if k not in ("kind", "parameters"):
            raise ConfigError(f"potential.{k}", t[k], f"is not read by kind = \"{kind.name}\" "
                              f"(it takes potential.parameters: {', '.join(names)})")
    given = table("potential.parameters", t.get("parameters", {}))
    for k in given:
        if k not in names:
            raise ConfigError(f"potential.parameters.{k}", given[k], f"unknown parameter of kind = "
                              f"\"{kind.name}\"; allowed: {', '.join(names)}")
    pairs = tuple((q.name, number(f"potential.parameters.{q.name}", given.get(q.name, q.default),
                                  positive=q.positive)) for q in kind.parameters)
    return Potential(0.0, (), fld, kind.name, kind.formula, pairs)


def parse_potential(t, fld, nuclei=False):
    kind = t.get("kind", "soft_core")
    if nuclei and kind != "soft_core":
        raise ConfigError("potential.kind", kind, "with [nuclei] the potential is the soft-core "
                          "H2+ of tdse.model.nuclei (potential.a only)")
    if kind == "callable":
        raise ConfigError("potential.kind", kind, "is a Python function V(x, t): it is given from "
                          "Python (tdse.with_potential), not read from TOML (kind = \"expression\" is)")
    if kind not in POTENTIAL_KINDS:
        raise ConfigError("potential.kind", kind, "must be one of " + ", ".join(
            f'"{k}"' for k in POTENTIAL_KINDS))
    if kind in NAMED:
        return named_potential(t, fld)
    allowed = [k for k, _ in allowed_keys("potential.")]
    for k in t:
        if k not in allowed:
            raise ConfigError(f"potential.{k}", t[k], f"unknown key; allowed here: {', '.join(allowed)}")
    if kind == "expression":
        return expression_potential(t, fld)
    for k in ("V", "parameters"):
        if k in t:
            raise ConfigError(f"potential.{k}", t[k], "is for kind = \"expression\"")
    for k in ("a",) if nuclei else ("a", "centres"):
        if k not in t:
            raise ConfigError("", None, f"missing key `potential.{k}`")
    a = number("potential.a", t["a"], positive=True)
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
        table(p[:-1], c)
        check_keys(p, c, "potential.centres.")
        centres.append(Centre(
            number(p + "x0", c["x0"]), number(p + "Z", c["Z"]),
            number(p + "amplitude", c.get("amplitude", 0.0)),
            number(p + "frequency", c.get("frequency", 0.0), nonneg=True),
            number(p + "phase", c.get("phase", 0.0)),
            number(p + "ramp", c.get("ramp", 0.0), nonneg=True)))
    return Potential(a, tuple(centres), fld)
