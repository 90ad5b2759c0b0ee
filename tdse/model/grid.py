"""The uniform grid x_j = x_min + j*dx, j = 0..N-1, on [x_min, x_max); psi = 0 outside.
dx is the thesis' Delta r.  Atomic units."""
from __future__ import annotations

import numpy as np


def points(grid, xp=np):
    """Grid coordinates x_j (float64)."""
    return grid.x_min + grid.dx * xp.arange(grid.n, dtype=np.float64)
