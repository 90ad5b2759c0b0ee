"""tdse: the 1D H2+ time-dependent Schrodinger equation propagated with the mgemm
matrix exponent.  Atomic units throughout (hbar = m_e = e = 1).

Layers (docs/ARCHITECTURE.md; tests/test_structure.py enforces them):
``tdse.ui`` and ``tdse.api`` (interfaces) -> ``tdse.studies`` (converge, floquet, validate,
spectra) -> ``tdse.run`` (backend, plan, the evolve loop and its sinks, time error, snapshots,
interrupts) -> ``tdse.numerics`` (schemes, exponentials by name, Chebyshev, stepper,
precheck, cost) -> ``tdse.model`` (grid, potential, field, absorber, Hamiltonian, states,
observables) -> ``tdse.config`` (the one validation module).

Python API (docs/PYTHON.md): :func:`load_config`, :func:`simulate` (a :class:`Result`),
:func:`prepare` (a frozen :class:`RunPlan`) and :func:`evolve` (the one loop), :func:`scan`,
:func:`extend` (a finished run continued) and :func:`photoelectron_spectrum`."""
from .version import __version__

__all__ = ["__version__", "load_config", "simulate", "Result", "prepare", "evolve", "RunPlan",
           "Sink", "Observer", "State", "scan", "extend", "photoelectron_spectrum", "with_potential"]


def __getattr__(name):
    """The API is imported on first use (PEP 562): `tdse` on the command line starts without
    NumPy, SciPy and h5py, so even an interrupt during start-up is the CLI's to handle."""
    if name in __all__:
        from . import api
        return getattr(api, name)
    raise AttributeError(f"module 'tdse' has no attribute {name!r}")
