"""tdse: the 1D H2+ time-dependent Schrodinger equation propagated with the mgemm
matrix exponent.  Atomic units throughout (hbar = m_e = e = 1)."""
__version__ = "0.1.0"
