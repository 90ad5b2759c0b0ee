"""tdse: the 1D H2+ time-dependent Schrodinger equation propagated with the mgemm
matrix exponent.  Atomic units throughout (hbar = m_e = e = 1)."""
from .version import __version__

__all__ = ["__version__"]
