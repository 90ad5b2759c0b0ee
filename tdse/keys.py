"""Every input key (:data:`KEYS`): its dotted name, type, unit, default and meaning, in atomic
units (hbar = m_e = e = 1).  :mod:`tdse.config` allows the keys listed here and no others;
``tdse keys`` and docs/INPUT.md are generated from this table (:func:`input_reference`), and
:func:`to_toml` writes a configuration back as TOML with every key's value (the effective
input a run file records)."""
from __future__ import annotations

import tomllib
from dataclasses import dataclass

from .errors import ConfigError
from .options import OPTIONS
from .potentials import KINDS as NAMED

__all__ = ["Key", "KEYS", "to_toml", "key_unit", "input_reference", "parse_assignment"]


def _toml_default(v) -> str:
    return ("true" if v else "false") if isinstance(v, bool) else f'"{v}"'


@dataclass(frozen=True)
class Key:
    name: str          # dotted: "grid.dx", "potential.centres.x0" (an array of tables)
    type: str
    unit: str
    default: str       # "required", or the default as written in TOML, or how it is derived
    meaning: str


KEYS = (
    Key("name", "string", "", "required", "run name: the output is OUT/<name>.h5 (letters, digits, _ . -)"),
    Key("grid.x_min", "number", "bohr", "required", "left end of the box"),
    Key("grid.x_max", "number", "bohr", "required", "right end of the box (exclusive): x_j = x_min + j dx"),
    Key("grid.dx", "number", "bohr", "required", "grid spacing; (x_max - x_min)/dx must be whole"),
    Key("grid.stencil", "3 | 5 | \"dvr\"", "", "3", "kinetic energy: 3- or 5-point finite differences (psi = 0 "
        "outside the box) or the Colbert-Miller sinc-DVR (dense, spectrally accurate)"),
    Key("potential.kind", " | ".join(f'"{k}"' for k in ("soft_core", "expression", *NAMED)), "",
        "\"soft_core\"", "soft_core: the molecule of [[potential.centres]] (thesis eqs. 10-11); "
        "expression: V(x, t) given as potential.V; " + "; ".join(
            f"{k.name}: the {k.source}, its potential.parameters {', '.join(q.name for q in k.parameters)}"
            for k in NAMED.values()) + " (the named potentials below)"),
    Key("potential.V", "string", "hartree", "required (expression)",
        "V(x, t) as a formula in x, t and potential.parameters' names: numbers, + - * / **, "
        "sqrt exp log sin cos tan sinh cosh tanh abs atan erf, pi; e.g. \"-1 / sqrt(x**2 + 2)\" "
        "(parsed by a whitelist, never evaluated as code; dV/dx by symbolic differentiation)"),
    Key("potential.parameters", "table", "", "{}",
        "names and numbers potential.V reads, e.g. {Z = 1.0, a = 2.0}; scan or --set them as "
        "potential.parameters.NAME"),
    Key("potential.a", "number", "bohr^2", "required (soft_core)", "soft-core parameter: V = -Z / sqrt((x - X)^2 + a) "
        "(thesis eq. 10; most papers' a^2)"),
    Key("potential.centres", "array of tables", "", "required (soft_core)", "the nuclei, [[potential.centres]] (one or more)"),
    Key("potential.centres.x0", "number", "bohr", "required", "rest position"),
    Key("potential.centres.Z", "number", "e", "required", "charge"),
    Key("potential.centres.amplitude", "number", "bohr", "0", "alpha: X(t) = x0 + alpha s(t) sin(beta t + phase)"),
    Key("potential.centres.frequency", "number", "1/(hbar/E_h)", "0", "beta (>= 0)"),
    Key("potential.centres.phase", "number", "rad", "0", "phase of the motion (pi/2: start at a turning point)"),
    Key("potential.centres.ramp", "number", "hbar/E_h", "0", "T_r: s(t) = sin^2(pi t / (2 T_r)) for t < T_r, "
        "else 1 (0: the abrupt start of the thesis)"),
    Key("field.kind", "\"pulse\" | \"expression\"", "", "\"pulse\"",
        "pulse: E0 f(t) sin(omega t + phase) with an envelope f; expression: E(t) given as "
        "field.E, or A(t) as field.A"),
    Key("field.gauge", "\"length\" | \"velocity\"", "", "\"length\"",
        "how the field couples: length, V gains x E(t); velocity, H gains A(t) p + A(t)^2/2 "
        "with p = -i d/dx by the grid's own derivative and A(t) = -int_0^t E (CPU, GPU and "
        "scans; on a GPU the Chebyshev steps are CUDA graphs up to the DVR's N = 4096)"),
    Key("field.A", "string", "hbar/(e bohr)", "instead of field.E (expression)",
        "A(t) as a formula in t and field.parameters' names, E = -dA/dt; A(t) - A(0) is "
        "applied for 0 <= t <= duration, constant after"),
    Key("field.E", "string", "E_h/(e bohr)", "required (expression)",
        "E(t) as a formula in t and field.parameters' names (the whitelist of potential.V), "
        "applied for 0 <= t <= duration, 0 after; e.g. \"F * sin(pi * t / T)**2 * sin(w * t)\""),
    Key("field.parameters", "table", "", "{}", "names and numbers field.E reads; scan or --set them "
        "as field.parameters.NAME"),
    Key("field.intensity", "number", "W/cm^2", "instead of E0",
        "peak intensity I (linear polarisation, cycle-averaged): E0 = sqrt(I / 3.50944552e16 W/cm^2) "
        "(the atomic unit of intensity, 1/2 eps0 c (5.14220675e11 V/m)^2; CODATA 2018)"),
    Key("field.wavelength", "number", "nm", "instead of omega",
        "carrier wavelength lambda: omega = 2 pi c / lambda = 45.5633525 / lambda[nm] E_h/hbar "
        "(c = 137.035999 a.u., bohr = 5.29177211e-2 nm; CODATA 2018)"),
    Key("field.cycles", "number", "", "instead of duration", "the pulse's length in optical cycles: "
        "duration = cycles 2 pi / omega"),
    Key("field.E0", "number", "E_h/(e bohr)", "this or intensity: one is required in [field]", "peak electric field; V gains + x E(t) "
        "(length gauge)"),
    Key("field.omega", "number", "E_h/hbar", "this or wavelength: one is required in [field]", "carrier frequency"),
    Key("field.phase", "number", "rad", "0", "carrier-envelope phase: E = E0 f(t) sin(omega t + phase)"),
    Key("field.duration", "number", "hbar/E_h", "this or cycles: one is required in [field]", "the pulse lasts 0 <= t <= duration; E = 0 after"),
    Key("field.envelope", "\"sin2\" | \"gaussian\" | \"trapezoid\"", "", "\"sin2\"",
        "f(t): sin^2(pi t/duration); exp(-4 ln2 (t - duration/2)^2 / fwhm^2); linear ramps of length "
        "`ramp` at both ends"),
    Key("field.fwhm", "number", "hbar/E_h", "duration/4", "gaussian envelope: full width at half maximum of f"),
    Key("field.ramp", "number", "hbar/E_h", "duration/4", "trapezoid envelope: rise and fall time"),
    Key("absorber.width", "number", "bohr", "required in [absorber]", "a complex absorbing potential -i W(x) "
        "in the last `width` bohr at each edge"),
    Key("absorber.strength", "number", "hartree", "40 / width", "eta: W = eta (depth/width)^power inside the "
        "layer; measured with the default and width >= 15 bohr: < 1e-4 of a packet with 0.5-8 Ha "
        "reflects (width 20: < 4e-6)"),
    Key("absorber.power", "integer", "", "2", "the polynomial's power (2: quadratic; Riss & Meyer 1993)"),
    Key("initial.state", "integer | \"gaussian\" | \"superposition\" | \"file:RUN.h5\"", "", "0",
        "eigenstate index of H(0); a Gaussian packet; a superposition of H(0)'s lowest "
        "eigenstates; or psi of a run file's snapshot (its grid must be this one's)"),
    Key("initial.amplitudes", "array of numbers", "1", "required (superposition)",
        "c_n of psi(0) = sum_n c_n e^(i phase_n) phi_n, n = 0, 1, ... (normalised after)"),
    Key("initial.phases", "array of numbers", "rad", "0 each", "phase_n of the superposition"),
    Key("initial.snapshot", "integer", "", "-1", "which snapshot of the file (-1: the last; "
        "psi as stored, not renormalised)"),
    Key("initial.x0", "number", "bohr", "0", "packet centre (state = \"gaussian\" only)"),
    Key("initial.sigma", "number", "bohr", "1", "packet width: |psi|^2 ~ exp(-(x - x0)^2 / (2 sigma^2))"),
    Key("initial.k0", "number", "1/bohr", "0", "packet momentum"),
    Key("nuclei.R_min", "number", "bohr", "required in [nuclei]", "[nuclei] makes R, the internuclear "
        "distance, a quantum coordinate (the 1D + 1D H2+ model; [potential] then takes only `a`): "
        "R's grid starts here (> 0 with the exact 1/R)"),
    Key("nuclei.R_max", "number", "bohr", "required in [nuclei]", "R's grid ends before this"),
    Key("nuclei.dR", "number", "bohr", "required in [nuclei]", "R's spacing; (R_max - R_min)/dR must be "
        "whole (grid.stencil for R too)"),
    Key("nuclei.mass", "number", "m_e", "1836.15267343", "each nucleus' mass (the proton's, CODATA 2018; "
        "e.g. 3670.48 for D2+)"),
    Key("nuclei.repulsion_a", "number", "bohr^2", "0", "the nuclei's repulsion 1/sqrt(R^2 + repulsion_a) "
        "(0: the exact 1/R)"),
    Key("nuclei.state", "integer | \"franck_condon\"", "", "0", "psi(0): the model's v-th eigenstate; or "
        "franck_condon, H2's v = 0 packet in R (a Gaussian at 1.4 bohr) on the ion's electronic "
        "ground state, as vertical ionisation leaves it"),
    Key("nuclei.absorber_width", "number", "bohr", "0 (none)", "-i W(R) in R's last `width` bohr "
        "(W as [absorber]'s: quadratic; strength 40/width by default)"),
    Key("nuclei.absorber_strength", "number", "hartree", "40 / absorber_width", "eta of the R absorber"),
    Key("nuclei.bound_radius", "number", "bohr", "5", "the electron counts as bound when it is within "
        "this of either nucleus (else ionised)"),
    Key("nuclei.dissociated_R", "number", "bohr", "10", "a bound electron with R beyond this counts as "
        "dissociated (p + H); the KER spectrum is of psi there at t_end"),
    Key("time.dt", "number", "hbar/E_h", "required", "time step; t_end/dt must be whole"),
    Key("time.t_end", "number", "hbar/E_h", "required", "end time (the run starts at t = 0)"),
    Key("time.tolerance", "number", "", "none (fixed steps of dt)",
        "adaptive steps: each dt split into 1, 2, 3, 4, 6, 8, 12, ... equal steps, as few as keep the stated "
        "time error of psi at t_end under this (the local errors' estimate, time_error = "
        "\"estimate\"); dt is the first and largest step, every output time is landed on"),
    Key("time.dt_min", "number", "hbar/E_h", "dt/1024 with time.tolerance",
        "the smallest step time.tolerance may take: a run that needs less stops with one line"),
    Key("propagator.scheme", "\"midpoint\" | \"cfm4\"", "", "cfm4 if H depends on t, else midpoint",
        "time scheme: exponential midpoint (order 2) or commutator-free Magnus (order 4, two exponentials)"),
    Key("propagator.method", "\"auto\" | \"dense\" | \"taylor\" | \"chebyshev\"", "", "\"auto\"",
        "each exponential: auto takes dense or chebyshev, whichever is estimated faster per step "
        "on this machine (kernels timed at the start; with an absorber too, saying so when "
        "Chebyshev's mask is taken); dense: mgemm's matrix exponent (fewest GEMMs; exact with "
        "an absorber too); the thesis' Taylor series; or the matrix-free Chebyshev expansion (with an absorber: of the Hermitian part, the "
        "absorber as a mask e^(-s W dt/2) on both sides)"),
    Key("propagator.terms", "integer", "", "10", "Taylor terms k (method = \"taylor\")"),
    Key("propagator.tolerance", "number", "", "1e-10", "error bound per exponential"),
    Key("propagator.operator", "bool", "", "false", "also accumulate U(t) and store P_mn(t) between the lowest "
        "states of H(0)"),
    Key("propagator.time_error", "\"estimate\" | \"companion\" | \"window\" | \"none\"", "",
        "estimate if H depends on t (window if error_window is given), else none",
        "the run's time-discretisation error: estimate = each step's local error (its leading "
        "term, from H's values) carried along the run, 2 x its norm stated per snapshot (1.3-4.7x "
        "the true error on four kinds of drive, tests/test_local_error.py; x1.00 the main job's "
        "stepping on 2 CPU cores, x1.1-1.4 small Chebyshev runs there, x1.00 a dense N = 8192 "
        "run on a GPU, x1.1-1.5 small Chebyshev runs on a GPU: the four drives and atom_hhg's "
        "steps on one H200); companion = the whole run also at dt/2, compared at every "
        "snapshot, 2 x the distance stated (a bound within 1-10x where checked; +63 % to +215 % "
        "of the stepping); window = error_window also at dt/2 (cheap; says nothing past the "
        "window); none"),
    Key("propagator.error_window", "number", "hbar/E_h", "t_end/10 with time_error = \"window\", else 0",
        "time_error = \"window\": this much of the run (from the start, or around a pulse's "
        "peak) also at dt/2"),
    Key("output.every", "integer", "steps", "50", "snapshot (psi, centres, node count) every this many steps"),
    Key("output.observables_every", "integer", "steps", "1", "observables (norm, <H>, <x>, <p>, acceleration, "
        "populations, <n>, autocorrelation) every this many steps"),
    Key("output.populations_every", "integer", "steps", "observables_every",
        "populations in H(t)'s eigenstates (and <n>) every this many steps, a multiple of "
        "observables_every (NaN in the rows between): with moving centres each needs H(t)'s "
        "eigenpairs, which can cost more than a step (the run's closing note says how much)"),
    Key("output.populations", "integer", "", "4", "K: populations of the lowest K eigenstates of H(0) and H(t)"),
    Key("output.node_eps", "number", "", "0.01", "node count: only points with |psi| > node_eps max|psi|"),
    Key("output.tsurff_radius", "number", "bohr", "0 (none)", "t-SURFF photoelectron spectra: the "
        "flux through x = +-R against Volkov waves, recorded during the run (tdse spectrum FILE "
        "--kind photoelectron --method tsurff); R inside the box, before any absorber"),
    Key("output.tsurff_k_max", "number", "hbar/bohr", "3", "t-SURFF's momenta span [-k_max, k_max]"),
    Key("output.tsurff_momenta", "integer", "", "401", "t-SURFF's number of momenta (3..1001)"),
    Key("output.flush_seconds", "number", "s (wall)", "2", "a snapshot waits in memory at most this "
        "long before it is written to the file with the ones before it (one slice a dataset, "
        "then a flush; the first at once; sooner once 32 MiB of psi are held): a hard crash "
        "(SIGKILL, power) loses at most this much, an interrupt, an error or a full disk "
        "loses nothing held; 0 writes each at once"),
) + tuple(Key(f"run.{o.name}", "bool" if isinstance(o.default, bool) else
              " | ".join(f'"{c}"' for c in o.choices), "", _toml_default(o.default),
              o.meaning + " (a performance option, tdse.options: it changes no result)")
          for o in OPTIONS)


def _toml_value(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(v, float):
        return repr(v)
    return str(v)


def to_toml(cfg) -> str:
    """The effective input: every key with its value (defaults resolved), as TOML that
    :func:`loads` reads back to an equal Config."""
    g, p, i, t, pr, o = cfg.grid, cfg.potential, cfg.initial, cfg.time, cfg.propagator, cfg.output
    lines = [f"name = {_toml_value(cfg.name)}", "", "[grid]",
             f"x_min = {g.x_min!r}", f"x_max = {g.x_max!r}", f"dx = {g.dx!r}",
             f"stencil = {_toml_value(g.stencil)}", "", "[potential]"]
    if p.kind in NAMED:
        lines += [f'kind = "{p.kind}"', "parameters = {" + ", ".join(
            f"{k} = {v!r}" for k, v in p.parameters) + "}"]
    elif p.V:
        lines += [f'kind = "{p.kind}"', f"V = {_toml_value(p.V)}"]
        if p.parameters and p.function is None:
            lines += ["parameters = {" + ", ".join(f"{k} = {v!r}" for k, v in p.parameters) + "}"]
    else:
        lines += [f"a = {p.a!r}"]
    for c in p.centres:
        lines += ["", "[[potential.centres]]", f"x0 = {c.x0!r}", f"Z = {c.Z!r}",
                  f"amplitude = {c.amplitude!r}", f"frequency = {c.frequency!r}",
                  f"phase = {c.phase!r}", f"ramp = {c.ramp!r}"]
    if p.field is not None:
        f = p.field
        lab = dict(f.lab)
        au = {"E0": ("intensity", f.E0), "omega": ("wavelength", f.omega),
              "duration": ("cycles", f.duration)}
        lines += ["", "[field]"]
        if f.gauge != "length":
            lines += [f"gauge = {_toml_value(f.gauge)}"]
        if f.E or f.A:
            lines += ['kind = "expression"', f"E = {_toml_value(f.E)}" if f.E else f"A = {_toml_value(f.A)}",
                      f"duration = {f.duration!r}", f"omega = {f.omega!r}", f"E0 = {f.E0!r}"]
            if f.parameters:
                lines += ["parameters = {" + ", ".join(f"{k} = {v!r}" for k, v in f.parameters) + "}"]
            au = {}
        for key, (other, value) in au.items():   # as given: the lab unit, or atomic units
            lines += ([f"{other} = {lab[other]!r}  # {key} = {value!r} (atomic units)"]
                      if other in lab else [f"{key} = {value!r}"])
        lines += [] if f.E or f.A else [f"phase = {f.phase!r}", f"envelope = {_toml_value(f.envelope)}"]
        if f.envelope == "gaussian":
            lines.append(f"fwhm = {f.fwhm!r}")
        if f.envelope == "trapezoid":
            lines.append(f"ramp = {f.ramp!r}")
    if cfg.absorber is not None:
        a = cfg.absorber
        lines += ["", "[absorber]", f"width = {a.width!r}", f"strength = {a.strength!r}",
                  f"power = {a.power}"]
    if cfg.nuclei is not None:
        lines += ["", "[nuclei]", *[f"{k} = {_toml_value(getattr(cfg.nuclei, k))}" for k in
                                    cfg.nuclei.__dataclass_fields__]]
    lines += [] if cfg.nuclei is not None else ["", "[initial]", f"state = {_toml_value(i.state)}"]
    if i.state == "gaussian":
        lines += [f"x0 = {i.x0!r}", f"sigma = {i.sigma!r}", f"k0 = {i.k0!r}"]
    if i.amplitudes:
        lines += [f"amplitudes = {list(i.amplitudes)!r}", f"phases = {list(i.phases)!r}"]
    if isinstance(i.state, str) and i.state.startswith("file:"):
        lines += [f"snapshot = {i.snapshot}"]
    lines += ["", "[time]", f"dt = {t.dt!r}", f"t_end = {t.t_end!r}"]
    if t.tolerance is not None:
        lines += [f"tolerance = {t.tolerance!r}", f"dt_min = {t.dt_min!r}"]
    lines += ["", "[propagator]",
              f"scheme = {_toml_value(pr.scheme)}", f"method = {_toml_value(pr.method)}",
              f"terms = {pr.terms}", f"tolerance = {pr.tolerance!r}",
              f"operator = {_toml_value(pr.operator)}",
              f"time_error = {_toml_value(pr.time_error)}",
              f"error_window = {pr.error_window * t.dt!r}", "", "[output]",
              f"every = {o.every}", f"observables_every = {o.observables_every}",
              *([f"populations_every = {o.populations_every}"] if o.populations_every else []),
              f"populations = {o.populations}", f"node_eps = {o.node_eps!r}",
              f"flush_seconds = {o.flush_seconds!r}",
              *([f"tsurff_radius = {o.tsurff_radius!r}", f"tsurff_k_max = {o.tsurff_k_max!r}",
                 f"tsurff_momenta = {o.tsurff_momenta}"] if o.tsurff_radius else []), "", "[run]",
              *[f"{k} = {_toml_value(v)}" for k, v in cfg.run.as_dict().items()], ""]
    return "\n".join(lines)


def key_unit(key: str) -> str:
    """The unit of an input key as KEYS states it ("" for none); a named potential's
    parameter (``potential.parameters.NAME``) has its kind's unit where every kind with
    that name agrees."""
    prefix = "potential.parameters."
    if key.startswith(prefix):
        units = {q.unit for k in NAMED.values() for q in k.parameters if q.name == key[len(prefix):]}
        return units.pop() if len(units) == 1 else ""
    return next((k.unit for k in KEYS if k.name == key), "")


def input_reference() -> str:
    """docs/INPUT.md: every key of :data:`KEYS` (a test checks the file is this text)."""
    out = ["# Input reference", "",
           "Generated from `tdse.config.KEYS` (`tdse keys --markdown > docs/INPUT.md`); a test fails "
           "when this file and the code differ.  TOML; atomic units throughout (hbar = m_e = e = 1: "
           "lengths in bohr, times in hbar/E_h, energies in hartree).  Unknown keys are refused, "
           "every bad value is one line naming the key and value (exit code 2), and nothing is "
           "re-rounded.", ""]
    section = None
    for k in KEYS:
        sec = k.name.split(".")[0] if "." in k.name else ""
        if sec != section:
            section = sec
            out += ["", f"## [{sec}]" if sec else "## top level", "",
                    "| key | type | unit | default | meaning |", "| --- | --- | --- | --- | --- |"]
        cells = [f"`{k.name}`", k.type, k.unit, k.default, k.meaning]
        out.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    out += ["", "## Named potentials", "",
            "`[potential] kind = NAME` with `parameters = {...}` (each optional: its default; a scan "
            "or `--set` key `potential.parameters.NAME`); one file each in `tdse/potentials/`.", "",
            "| kind | V(x) | parameter | unit | default | meaning |",
            "| --- | --- | --- | --- | --- | --- |"]
    for k in NAMED.values():
        for i, q in enumerate(k.parameters):
            cells = [f"`{k.name}`" if i == 0 else "", f"`{k.formula}`" if i == 0 else "",
                     f"`{q.name}`", q.unit, repr(q.default), q.meaning + (" (> 0)" if q.positive else "")]
            out.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    out.append("")
    return "\n".join(out)


def parse_assignment(text: str):
    """'KEY=VALUE' (``tdse run --set``) -> (KEY, value): the value as TOML reads it (a
    number, true/false, a quoted string), else the bare text as a string (``grid.stencil=dvr``);
    ConfigError (one line) for text that is not an assignment."""
    key, eq, raw = text.partition("=")
    key, raw = key.strip(), raw.strip()
    if not eq or not key or not raw:
        raise ConfigError("--set", text, "must be KEY=VALUE, e.g. time.dt=0.02 or run.graphs=false")
    try:
        value = tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        value = raw
    return key, value
