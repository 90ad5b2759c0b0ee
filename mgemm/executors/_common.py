"""Shared by the schedule executors: placement roles, tile choice, beta placeholders."""
from __future__ import annotations

from ..schedule import PLACEMENTS, auto_tile


def roles(placement, devices):
    """(a_dev, b_dev, c_dev) for a placement over ``devices``.

    ``one`` (i): A, B, C on the first device.  ``three`` (ii): A, B, C on the first three
    devices (wrapping round when fewer), which spreads the sending load (the source found
    it faster)."""
    placement = placement or "one"
    if placement not in PLACEMENTS:
        raise ValueError(f"placement must be one of {PLACEMENTS}, got placement={placement!r}")
    d = list(devices)
    if placement == "one":
        return d[0], d[0], d[0]
    return d[0], d[1 % len(d)], d[2 % len(d)]


def resolve_tile(tile, m, n, g):
    if tile is None or tile == "auto":
        return auto_tile(m, n, g)
    if isinstance(tile, bool) or not isinstance(tile, int) or tile < 1:
        raise ValueError(f"tile must be a positive integer or 'auto', got tile={tile!r}")
    return tile


def resolve_beta(op_beta, beta):
    """Ops carry beta as 0.0 or the placeholder 'beta' (the call's value)."""
    return beta if isinstance(op_beta, str) else op_beta
