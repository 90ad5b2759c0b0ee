"""The Poschl-Teller well (G. Poschl and E. Teller, Z. Phys. 83, 143 (1933); Landau &
Lifshitz, Quantum Mechanics, section 23, problem 4), with m = hbar = 1:

    V(x) = -lam (lam + 1) alpha^2 / (2 cosh^2(alpha (x - x0))),

bound states E_n = -alpha^2 (lam - n)^2 / 2 for n = 0, 1, ... < lam: a short-range well with
an exact spectrum (reflectionless for whole lam), the model atom of strong-field studies
without a Coulomb tail."""
from . import Named, Parameter

KIND = Named(
    "poschl_teller",
    "-lam * (lam + 1) * alpha**2 / (2 * cosh(alpha * (x - x0))**2)",
    (Parameter("lam", 1.0, "1", "lambda: bound states n < lambda, E_n = -alpha^2 (lambda - n)^2 / 2",
               positive=True),
     Parameter("alpha", 1.0, "1/bohr", "inverse width", positive=True),
     Parameter("x0", 0.0, "bohr", "centre")),
    "Poschl-Teller well -lam (lam + 1) alpha^2 / (2 cosh^2(alpha (x - x0))), E_n = -alpha^2 "
    "(lam - n)^2 / 2 (Z. Phys. 83, 143 (1933))")
