"""Shared by the schedule executors: their knobs and planning, placement roles, tile
choice, alpha/beta placeholders."""
from __future__ import annotations

from ..model import best_tile
from ..profile import hardware_from_profile, load_profile, shipped_tile, tuned_tile
from ..schedule import PLACEMENTS, auto_tile, plan_gemm


class ScheduleExecutor:
    """What the executors that run :mod:`mgemm.schedule` share: the schedule's knobs
    (set per executor instance, e.g. by ``mgemm bench``) and planning with them."""
    fused_3m = True
    #: issue order across workers (:func:`mgemm.schedule.plan_gemm`)
    interleave = "tile"
    #: 3m: which bands go as one copy per real plane
    plane_copies = "all"
    #: A band height when it should differ from the tile (None: the tile)
    row_tile = None
    #: 3m: a tile's three real GEMMs as one batched op (plan_gemm's batch_planes)
    batch_planes = True
    last_schedule = None

    def plan(self, m, k, n, **kw):
        """:func:`mgemm.schedule.plan_gemm` with this executor's knobs; remembered as
        ``last_schedule``."""
        self.last_schedule = plan_gemm(m, k, n, interleave=self.interleave,
                                       plane_copies=self.plane_copies, row_tile=self.row_tile,
                                       batch_planes=self.batch_planes, **kw)
        return self.last_schedule


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


def resolve_tile(tile, m, n, g, dtype=None, method="native", placement="three", gpu_name=None):
    """An explicit tile, or for ``None``/"auto": the tile ``mgemm tune --save`` measured
    best for this dtype, method, G, N and ``placement`` ("one" or "three"), else the
    tile measured on this GPU model (``gpu_name``; :func:`mgemm.profile.shipped_tile`),
    else the
    model's best tile for the saved machine profile (``mgemm probe``, :mod:`mgemm.profile`; :mod:`mgemm.model`,
    refined variant) where one exists and ``dtype`` is given, else the :func:`auto_tile`
    heuristic.  ``method``
    "3m": the fused 3m schedule, rated by the profile's 3m tile curve (or the real
    type's GEMM rate in profiles without one)."""
    if tile is None or tile == "auto":
        if dtype is not None and g > 1:
            try:
                prof = load_profile()
            except (OSError, ValueError):
                prof = None
            dt = str(dtype)
            if prof is not None:
                tuned = tuned_tile(prof, dt, method, g, max(m, n), placement)
                if tuned is not None:
                    return tuned
            shipped = shipped_tile(gpu_name, dt, method, g, max(m, n), placement)
            if shipped is not None:
                return min(shipped, max(m, n))
            if prof is not None:
                return best_tile(max(m, n), g, hardware_from_profile(prof, dt, method), dt,
                                 method)
        return auto_tile(m, n, g)
    if isinstance(tile, bool) or not isinstance(tile, int) or tile < 1:
        raise ValueError(f"tile must be a positive integer or 'auto', got tile={tile!r}")
    return tile


def resolve_beta(op_beta, beta):
    """Ops carry beta as 0.0 or the placeholder 'beta' (the call's value)."""
    return beta if isinstance(op_beta, str) else op_beta


def resolve_alpha(op_alpha, alpha):
    """Ops carry alpha as a number (3m's real GEMMs: 1) or the placeholder 'alpha'."""
    return alpha if isinstance(op_alpha, str) else op_alpha
