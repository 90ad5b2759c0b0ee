"""Named potentials: each module of this package is one ``[potential] kind``, a formula in
x (and t) with named parameters and their defaults (atomic units).  A new potential is one
file here defining ``KIND`` (a :class:`Named`): it is found by its name, its keys are
checked (``potential.parameters.NAME``, each a scan key), it is written back into the run
file's effective input, and it runs through :class:`tdse.model.formula.Formula` -- the
whitelist parser of :mod:`tdse.expression`, the symbolic dV/dx, exact spectral bounds on the
grid, and the GPU kernels generated from the same formula.  ``tdse keys`` and docs/INPUT.md
list them.  Data only: this package imports nothing of tdse."""
from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass

__all__ = ["Parameter", "Named", "KINDS"]


@dataclass(frozen=True)
class Parameter:
    """One parameter of a named potential: its name in the formula, default, unit, meaning,
    and whether it must be > 0."""
    name: str
    default: float
    unit: str
    meaning: str
    positive: bool = False


@dataclass(frozen=True)
class Named:
    """A potential V(x, t) = ``formula`` (without the field; Python's syntax, the names x, t
    and the parameters'), known by ``name``; ``source`` says what it is and where it comes
    from (one line, for the docs)."""
    name: str
    formula: str
    parameters: tuple
    source: str


def _kinds() -> dict:
    out = {}
    for m in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        kind = importlib.import_module(f"{__name__}.{m.name}").KIND
        out[kind.name] = kind
    return out


#: the named potentials by kind, one per module of this package
KINDS = _kinds()
