"""The model: what is simulated, in atomic units (hbar = m_e = e = 1).

grid (x_j), potential (the soft-core centres, thesis eqs. 10-11), field (the laser pulse,
length gauge), absorber (-i W), hamiltonian (kinetic energies, rigorous spectral bounds,
generators, the matrix-free Operator), states (eigenpairs of H(t), psi(0)), observables.
Imports only tdse.config below it."""

from . import formula  # noqa: F401,E402  (registers the "expression" potential)
from . import callable as _callable  # noqa: F401,E402  (registers the "callable" potential)
