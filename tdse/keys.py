"""Every input key (:data:`KEYS`): its dotted name, type, unit, default and meaning, in atomic
units (hbar = m_e = e = 1).  :mod:`tdse.config` allows the keys listed here and no others;
``tdse keys`` and docs/INPUT.md are generated from this table."""
from __future__ import annotations

from dataclasses import dataclass

from .options import OPTIONS

__all__ = ["Key", "KEYS"]


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
    Key("potential.kind", "\"soft_core\" | \"expression\"", "", "\"soft_core\"",
        "soft_core: the molecule of [[potential.centres]] (thesis eqs. 10-11); expression: V(x, t) "
        "given as potential.V"),
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
    Key("initial.state", "integer | \"gaussian\"", "", "0", "eigenstate index of H(0), or a Gaussian packet"),
    Key("initial.x0", "number", "bohr", "0", "packet centre (state = \"gaussian\" only)"),
    Key("initial.sigma", "number", "bohr", "1", "packet width: |psi|^2 ~ exp(-(x - x0)^2 / (2 sigma^2))"),
    Key("initial.k0", "number", "1/bohr", "0", "packet momentum"),
    Key("time.dt", "number", "hbar/E_h", "required", "time step; t_end/dt must be whole"),
    Key("time.t_end", "number", "hbar/E_h", "required", "end time (the run starts at t = 0)"),
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
    Key("propagator.time_error", "\"companion\" | \"window\" | \"none\"", "",
        "companion if H depends on t (window if error_window is given), else none",
        "the run's time-discretisation error: companion = the whole run also at dt/2, compared "
        "at every snapshot, 2 x the distance stated (a bound within 1-10x where checked; costs "
        "+63 % to +194 % of the stepping time on the shipped inputs; each run prints its own); window = error_window also "
        "at dt/2 (cheap; says nothing past the window); none"),
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
    Key("output.flush_seconds", "number", "s (wall)", "2", "a snapshot waits in memory at most this "
        "long before it is written to the file with the ones before it (one slice a dataset, "
        "then a flush; the first at once): a hard crash (SIGKILL, power) loses at most this "
        "much, an interrupt, an error or a full disk loses nothing held; 0 writes each at once"),
) + tuple(Key(f"run.{o.name}", "bool" if isinstance(o.default, bool) else
              " | ".join(f'"{c}"' for c in o.choices), "", _toml_default(o.default),
              o.meaning + " (a performance option, tdse.options: it changes no result)")
          for o in OPTIONS)
