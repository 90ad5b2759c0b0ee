"""The harmonic oscillator, m = hbar = 1:

    V(x) = omega^2 (x - x0)^2 / 2,

E_n = omega (n + 1/2), and under a field E(t) its <x> follows the classical driven
oscillator exactly (Ehrenfest's theorem with a linear force): the analytic checks of a
driven run."""
from . import Named, Parameter

KIND = Named(
    "harmonic",
    "omega**2 * (x - x0)**2 / 2",
    (Parameter("omega", 1.0, "E_h/hbar", "angular frequency: E_n = omega (n + 1/2)", positive=True),
     Parameter("x0", 0.0, "bohr", "centre")),
    "harmonic oscillator omega^2 (x - x0)^2 / 2, E_n = omega (n + 1/2)")
