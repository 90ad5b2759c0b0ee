"""The input's sections as frozen dataclasses (atomic units: hbar = m_e = e = 1), made and
validated by :mod:`tdse.config` (which re-exports them) and read by every layer above.
:class:`tdse.config.Config` holds one of each."""
from __future__ import annotations

import functools
from dataclasses import dataclass

from . import expression

__all__ = ["Grid", "Centre", "Field", "Potential", "Absorber", "Initial", "Time", "Propagator", "Output",
           "Nuclei", "PROTON_MASS"]

#: the proton mass in electron masses (CODATA 2018)
PROTON_MASS = 1836.15267343


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
class Field:
    """A laser pulse E = E0 f(t) sin(omega t + phase) (or a formula for E(t) or A(t)); in the
    length gauge V gains + x E(t), in the velocity gauge H gains A(t) p + A(t)^2 / 2."""
    E0: float
    omega: float
    duration: float
    phase: float = 0.0
    envelope: str = "sin2"
    fwhm: float = 0.0        # gaussian envelope
    ramp: float = 0.0        # trapezoid envelope
    lab: tuple = ()          # the lab-unit keys as given, ((key, value), ...): intensity
                             # (W/cm^2), wavelength (nm), cycles -- E0, omega, duration hold
                             # their atomic-unit values
    E: str = ""              # kind = "expression": E(t) as a formula (envelope "expression")
    parameters: tuple = ()   # its parameters, ((name, value), ...)
    gauge: str = "length"    # "length": V gains x E(t); "velocity": H gains -i A(t) d/dx + A^2/2
    A: str = ""              # kind = "expression": A(t) as a formula instead of E (E = -dA/dt)


@dataclass(frozen=True)
class Potential:
    """The potential: ``kind`` "soft_core" (``a``, ``centres``), "expression" (``V`` a
    formula in x, t and the ``parameters``' names, ((name, value), ...)) or, from Python
    only, "callable" (``function`` V(x, t), ``V`` its name; :func:`tdse.with_potential`);
    the field."""
    a: float
    centres: tuple[Centre, ...]
    field: Field | None = None
    kind: str = "soft_core"
    V: str = ""
    parameters: tuple = ()
    function: object = None  # kind = "callable" (Python only): V(x, t), and whether it reads t
    moves: bool = False

    @property
    def static(self) -> bool:
        return not self.molecule_moves and self.field is None

    @property
    def molecule_moves(self) -> bool:
        """Whether the molecule's V (the field left out) changes in time: a centre moves, or
        the formula reads t."""
        if self.V:
            return self.depends_on_time
        return any(c.moving for c in self.centres)

    @property
    def depends_on_time(self) -> bool:
        """Whether the formula ``V`` reads t (an expression potential; a callable's ``moves``)."""
        if self.function is not None:
            return self.moves
        return bool(self.V) and _reads_t(self.V, self.parameters)


@functools.lru_cache(maxsize=64)
def _reads_t(V, parameters) -> bool:
    return "t" in expression.parse(V, ("x", "t") + tuple(k for k, _ in parameters), "potential.V").names()


@dataclass(frozen=True)
class Absorber:
    """-i W(x) with W = strength ((|x - x_in|)/width)^power inside the last ``width`` bohr."""
    width: float
    strength: float
    power: int = 2


@dataclass(frozen=True)
class Initial:
    """psi(0): eigenstate ``state`` of H(0), "gaussian" (x0, sigma, k0), "superposition"
    (``amplitudes`` and ``phases`` of the lowest eigenstates) or "file:PATH" (a run file's
    snapshot ``snapshot``)."""
    state: int | str = 0
    x0: float = 0.0
    sigma: float = 1.0
    k0: float = 0.0
    amplitudes: tuple = ()
    phases: tuple = ()
    snapshot: int = -1


@dataclass(frozen=True)
class Time:
    dt: float
    t_end: float
    tolerance: float | None = None   # adaptive steps (tdse.numerics.adaptive): dt the largest
    dt_min: float | None = None

    @property
    def steps(self) -> int:
        return int(round(self.t_end / self.dt))


@dataclass(frozen=True)
class Propagator:
    method: str = "auto"     # the exponential: "auto" (dense or chebyshev by cost: tdse.cost),
                             # "dense" (mgemm), "taylor" (dense, the source's) or "chebyshev"
    terms: int = 10
    tolerance: float = 1e-10
    operator: bool = False   # also accumulate U(t) and store P_mn(t) (one more GEMM a step)
    scheme: str = "midpoint"  # time scheme: "midpoint" (2nd order) or "cfm4" (4th order)
    error_window: int = 0    # steps at the start re-run at dt/2 to estimate the time error (0: none)
    time_error: str = "none"  # "companion" (the whole run at 2 dt), "window" or "none"


@dataclass(frozen=True)
class Output:
    every: int = 50
    populations: int = 4
    node_eps: float = 1e-2
    observables_every: int = 1
    populations_every: int = 0      # 0: with every observation
    flush_seconds: float = 2.0
    tsurff_radius: float = 0.0      # t-SURFF's surfaces at x = +-R (bohr); 0: none
    tsurff_k_max: float = 3.0       # its momenta in [-k_max, k_max] (hbar/bohr) ...
    tsurff_momenta: int = 401       # ... this many

    @property
    def populations_interval(self) -> int:
        """Steps between the populations in H(t)'s eigenstates (``populations_every``, or
        every observation)."""
        return self.populations_every or self.observables_every


@dataclass(frozen=True)
class Nuclei:
    """``[nuclei]``: the internuclear distance R as a quantum coordinate beside the electron's
    x (:mod:`tdse.model.nuclei`): R_j = R_min + j dR < R_max, the nuclei's ``mass`` (m_e),
    their repulsion 1/sqrt(R^2 + repulsion_a), psi(0) (``state``: the v-th eigenstate, or
    "franck_condon"), an absorber in R, and the regions the fractions are counted by."""
    R_min: float
    R_max: float
    dR: float
    mass: float = PROTON_MASS
    repulsion_a: float = 0.0
    state: int | str = 0
    absorber_width: float = 0.0
    absorber_strength: float = 0.0
    bound_radius: float = 5.0
    dissociated_R: float = 10.0

    @property
    def n(self) -> int:
        return int(round((self.R_max - self.R_min) / self.dR))
