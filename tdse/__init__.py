"""tdse: the 1D H2+ time-dependent Schrodinger equation propagated with the mgemm
matrix exponent.  Atomic units throughout (hbar = m_e = e = 1).

Python API (docs/PYTHON.md): :func:`load_config` (a TOML path, TOML text or a dict of
sections) and :func:`simulate` (returns a :class:`Result` of NumPy arrays; writes
``out/<name>.h5`` only when ``out`` is given)."""
from .version import __version__
from .api import Result, load_config, simulate

__all__ = ["__version__", "load_config", "simulate", "Result"]
