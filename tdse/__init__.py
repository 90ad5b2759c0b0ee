"""tdse: the 1D H2+ time-dependent Schrodinger equation propagated with the mgemm
matrix exponent.  Atomic units throughout (hbar = m_e = e = 1).

Layers (docs/ARCHITECTURE.md; tests/test_structure.py enforces them):
``tdse.ui`` and ``tdse.api`` (interfaces) -> ``tdse.studies`` (converge, floquet, validate,
spectra) -> ``tdse.run`` (backend, plan, the evolve loop, observers, time error, snapshots,
interrupts) -> ``tdse.numerics`` (schemes, exponentials by name, Chebyshev, stepper,
precheck, cost) -> ``tdse.model`` (grid, potential, field, absorber, Hamiltonian, states,
observables) -> ``tdse.config`` (the one validation module).

Python API (docs/PYTHON.md): :func:`load_config`, :func:`simulate` (a :class:`Result`),
:func:`prepare` (a frozen :class:`RunPlan`) and :func:`evolve` (the one loop)."""
from .version import __version__
from .api import Observer, Result, RunPlan, State, evolve, load_config, prepare, simulate

__all__ = ["__version__", "load_config", "simulate", "Result", "prepare", "evolve", "RunPlan",
           "Observer", "State"]
