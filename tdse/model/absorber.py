"""The complex absorbing potential -i W(x) of an ``[absorber]`` (atomic units)."""
from __future__ import annotations

import numpy as np

from .grid import points

__all__ = ["absorber_profile", "layer"]


def absorber_profile(config, x=None) -> np.ndarray:
    """W(x) >= 0 of the complex absorbing potential -i W: strength ((d)/width)^power at
    depth d into the layer of ``width`` bohr at each edge, 0 inside (a polynomial CAP,
    Riss & Meyer, J. Phys. B 26, 4503 (1993)); zeros without an [absorber]."""
    g = config.grid
    x = points(g) if x is None else x
    a = config.absorber
    if a is None:
        return np.zeros_like(x)
    left, right = g.x_min + a.width, g.x_max - g.dx - a.width
    return layer(np.maximum(left - x, x - right), a.width, a.strength, a.power)


def layer(depth, width, strength, power=2):
    """strength (depth/width)^power where depth > 0 (into a layer of ``width``), else 0."""
    return strength * (np.maximum(depth, 0.0) / width) ** power
