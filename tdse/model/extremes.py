"""Where a static molecule's V in a dipole field can take its least and greatest values on
the grid: the columns :func:`tdse.model.potential.extreme_columns` gives the bounds of the
exponentials' spectra (the GPU planner's chunks, the precheck) for the strong-field inputs,
so that they look at a few dozen points instead of every one, with the same bits."""
from __future__ import annotations

import numpy as np

#: the hulls' heights of the last static molecule's V0 (hull_columns): [V0, max |V0|,
#: heights], keyed by V0 itself (potential._static_row's array, kept while its molecule and
#: grid are) and replaced whole (the planner's thread reads it too)
HULLS = [None, None, None]


def hull_columns(v, x, E, rows):
    """:func:`tdse.model.potential.extreme_columns` for a static molecule (its V0 ``v`` on
    ``x``) in a dipole field of |E(t)| <= ``E`` at the times asked for: V0's lower and upper
    hull heights h over x ascending (monotone chain, once a V0), and the columns with h
    within 32 ulps of the largest |V| (V0's and x E's) x sum_i |w_i| / |W| of the worst row
    -- more than the computed sums' rounding (a few ulps a term) could move a value by, so
    that the least and greatest computed values are among them: the same bits.  None where
    that is most of the grid."""
    v0, vmax, h = HULLS
    if v0 is not v:
        heights = []
        for sign in (1.0, -1.0):               # the lower hull, then the upper (of -V0)
            hull = []
            for i in range(x.size):
                while len(hull) >= 2:
                    a, b = hull[-2], hull[-1]
                    if (x[b] - x[a]) * (sign * v[i] - sign * v[a]) - \
                            (sign * v[b] - sign * v[a]) * (x[i] - x[a]) > 0:
                        break
                    hull.pop()
                hull.append(i)
            heights.append(sign * v - np.interp(x, x[hull], sign * v[hull]))
        vmax, h = np.abs(v).max(), np.maximum(np.minimum(*heights), 0.0)
        HULLS[:] = [v, vmax, h]
    W = [abs(sum(r)) for r in rows]
    if min(W) == 0.0:           # a row of the field alone: its extremes at the ends
        W = [w for w in W if w] or [1.0]
    reach = 32 * np.finfo(np.float64).eps * (vmax + E * np.abs(x).max()) * max(
        sum(abs(w) for w in r) for r in rows) / min(W)
    cols = np.flatnonzero(h <= reach)
    if 2 * cols.size >= x.size:
        return None
    return np.unique(np.concatenate([[0], cols, [x.size - 1]]))
