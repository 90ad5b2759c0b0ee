"""Time schemes as plain data: which exponentials make one step psi(t) -> psi(t + dt).

A step is a product of exponentials exp(-i dt G_k) (the first factor acts first), each
generator a combination of the Hamiltonian at nodes t + c_j dt:

    G_k = sum_j w_kj H(t + c_j dt) = s_k T + diag(sum_j w_kj V(x, t + c_j dt)),
    s_k = sum_j w_kj.

* ``midpoint``: one factor, H(t + dt/2): the exponential midpoint rule, 2nd order (the
  thesis' propagator, summary eq. 2 applied at the midpoint).
* ``cfm4``: the two-exponential commutator-free Magnus scheme of order 4 (Blanes & Moan,
  Appl. Numer. Math. 56, 1519 (2006); "CF4:2" in Alvermann & Fehske, J. Comput. Phys. 230,
  5930 (2011)): nodes c_{1,2} = 1/2 -/+ sqrt(3)/6, weights a_1 = 1/4 - sqrt(3)/6,
  a_2 = 1/4 + sqrt(3)/6,

      psi(t + dt) = exp(-i dt (a_1 H_1 + a_2 H_2)) exp(-i dt (a_2 H_1 + a_1 H_2)) psi(t),

  the right factor acting first.  Each factor has s_k = 1/2, so its exponential has half
  the kinetic spread of a midpoint step's: two exponentials a step, each cheaper.
For a time-independent H both are exact (up to the exponentials' own error).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["Scheme", "SCHEMES", "get"]


@dataclass(frozen=True)
class Scheme:
    name: str
    order: int
    nodes: tuple          # c_j: H is evaluated at t + c_j dt
    factors: tuple        # weights w_kj, one row per exponential, in the order they act

    def scales(self):
        """s_k = sum_j w_kj: the kinetic factor of each generator."""
        return tuple(sum(row) for row in self.factors)

    def times(self, t, dt):
        return tuple(t + c * dt for c in self.nodes)

    @property
    def exponentials(self) -> int:
        return len(self.factors)


_R3 = math.sqrt(3.0)
_A1, _A2 = 0.25 - _R3 / 6.0, 0.25 + _R3 / 6.0

SCHEMES = {
    "midpoint": Scheme("midpoint", 2, (0.5,), ((1.0,),)),
    "cfm4": Scheme("cfm4", 4, (0.5 - _R3 / 6.0, 0.5 + _R3 / 6.0), ((_A2, _A1), (_A1, _A2))),
}


def get(name: str) -> Scheme:
    if name not in SCHEMES:
        raise ValueError(f"scheme must be one of {sorted(SCHEMES)}, got scheme={name!r}")
    return SCHEMES[name]
