"""The machine profile: what ``tile="auto"`` reads (bottom layer: no GPU import).

A profile is a JSON document (``kind = "mgemm-profile"``) written by ``mgemm probe``
(:mod:`mgemm.tools.probe`: GEMM rates per dtype and tile shape, memory and peer-copy
bandwidths, latency) and extended by ``mgemm tune --save`` (:mod:`mgemm.tools.tune`:
the measured best tile per dtype, complex method, GPU count, N and placement, the
``tuned`` list).  It lives at ``$MGEMM_PROFILE`` or ``~/.cache/mgemm/profile.json``.

Here: :func:`load_profile`, :func:`save_profile`, the tuned-tile lookup
(:func:`tuned_tile`, :func:`tuned_entries`) and the figures the tile model reads
(:func:`hardware_from_profile` -> :class:`mgemm.model.Hardware`).  The measuring tools
depend on this module, never the reverse.

Shipped tables (``mgemm/data/tiles.json``, package data): best tiles that ``mgemm tune``
measured on a GPU model (the file names the runs), so a fresh machine of that model gets
them without tuning; ``tile="auto"`` takes a user's own tuned tile first, then the
shipped one (the same dtype, method, GPU count and placement, the nearest N within a
factor 2), then the model.  :func:`choose_method` picks ``3m`` over ``native`` only where
the measured (or tuned) seconds say it is faster.
"""
from __future__ import annotations

import json
import math
import os

from .model import REAL_OF, Hardware

__all__ = ["PROFILE_ENV", "default_profile_path", "load_profile", "save_profile",
           "hardware_from_profile", "tuned_tile", "tuned_entries", "shipped_table",
           "shipped_tile", "measured_seconds", "choose_method"]

PROFILE_ENV = "MGEMM_PROFILE"


def default_profile_path() -> str:
    return os.environ.get(PROFILE_ENV) or os.path.join(
        os.path.expanduser("~"), ".cache", "mgemm", "profile.json")


def load_profile(path=None):
    """The saved profile, or None where there is none (a broken file is an error)."""
    path = path or default_profile_path()
    if not os.path.exists(path):
        return None
    with open(path) as f:
        doc = json.load(f)
    if doc.get("kind") != "mgemm-profile":
        raise ValueError(f"{path} is not an mgemm machine profile (kind={doc.get('kind')!r})")
    return doc


def save_profile(doc, path=None):
    """Write ``doc`` atomically (a temporary file, then a rename); returns the path."""
    path = path or default_profile_path()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1)
    os.replace(tmp, path)
    return path


def hardware_from_profile(doc, dtype, method="native") -> Hardware:
    """The model's Hardware for products of ``dtype``; ``method`` "3m" (complex dtype):
    rated by the 3m tile curve where the profile has one, else by the real type's."""
    if method == "3m" and dtype in doc.get("tile_rates_3m", {}):
        math_rate = doc["bw_math"][REAL_OF[dtype]]
        curve = doc["tile_rates_3m"][dtype]
    else:
        dt = REAL_OF.get(dtype, dtype) if method == "3m" else dtype
        math_rate = doc["bw_math"].get(dt) or doc["bw_math"][REAL_OF.get(dt, dt)]
        curve = (doc.get("tile_rates", {}).get(dt)
                 or doc.get("tile_rates", {}).get(REAL_OF.get(dt, "")))
    curve = tuple(sorted((int(t), float(r)) for t, r in (curve or {}).items()))
    return Hardware(bw_math=float(math_rate), bw_mem=float(doc["bw_mem"]),
                    bw_transfer=float(doc["bw_transfer"]), latency=float(doc.get("latency", 0.0)),
                    math_curve=curve)


def _key(e):
    return (e["dtype"], e["complex_method"], e["gpus"], e["n"], e["placement"])


def tuned_entries(profile, summary):
    """The profile's ``tuned`` list with a sweep's measured best tiles merged in (one
    entry per dtype, complex method, GPUs, N and placement; the newest wins)."""
    out = {_key(e): e for e in profile.get("tuned", [])}
    for s in summary:
        e = {"dtype": s["dtype"], "complex_method": s["complex_method"], "gpus": s["gpus"],
             "n": s["n"], "tile": s["measured_best_tile"], "placement": s["placement"],
             "seconds": s["measured_best_seconds"]}
        out[_key(e)] = e
    return sorted(out.values(), key=_key)


def tuned_tile(profile, dtype, method, gpus, n, placement="three"):
    """The measured best tile saved by ``mgemm tune --save`` for exactly this case
    (placement "one": A, B, C on one GPU, else "three"), or None.  Measured on 2 H200,
    3m, N = 32768: 16384 was best with A, B, C on three GPUs and 1.6 % slower than
    4096 with all on one, so the placement is part of the key."""
    for e in profile.get("tuned", []):
        if (e.get("dtype"), e.get("complex_method"), e.get("gpus"), e.get("n"),
                e.get("placement")) == (str(dtype), method, gpus, n, placement):
            return int(e["tile"])
    return None


# ---------------------------------------------------------------- shipped tables
_SHIPPED = None


def shipped_tables():
    """The measured tile tables shipped with mgemm (a list; [] if the file is absent)."""
    global _SHIPPED
    if _SHIPPED is None:
        path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "tiles.json")
        try:
            with open(path) as f:
                _SHIPPED = json.load(f).get("tables", [])
        except FileNotFoundError:
            _SHIPPED = []
    return _SHIPPED


def shipped_table(gpu_name):
    """The table measured on this GPU model (matched by the model's name), or None."""
    if not gpu_name:
        return None
    for t in shipped_tables():
        if t.get("gpu") and t["gpu"].lower() in str(gpu_name).lower():
            return t
    return None


def _nearest(entries, dtype, method, gpus, n, placement):
    """The entry for (dtype, method, gpus, placement) whose N is nearest n (log scale,
    within a factor 2), or None."""
    best = None
    for e in entries:
        if (e.get("dtype"), e.get("complex_method"), e.get("gpus"), e.get("placement")) != \
                (str(dtype), method, gpus, placement):
            continue
        d = abs(math.log2(e["n"] / n))
        if d <= 1.0 and (best is None or d < best[0]):
            best = (d, e)
    return None if best is None else best[1]


def shipped_tile(gpu_name, dtype, method, gpus, n, placement="three"):
    """The shipped measured tile for this GPU model and case, or None."""
    t = shipped_table(gpu_name)
    e = None if t is None else _nearest(t.get("tuned", []), dtype, method, gpus, n, placement)
    return None if e is None else int(e["tile"])


def measured_seconds(gpu_name, dtype, method, gpus, n, placement="three", profile=None):
    """Seconds of the best measured tile: the user's tuned entry (exact) or the shipped
    table's (nearest N, scaled by (n/N)^3); None without a measurement."""
    for e in (profile or {}).get("tuned", []):
        if (e.get("dtype"), e.get("complex_method"), e.get("gpus"), e.get("n"),
                e.get("placement")) == (str(dtype), method, gpus, n, placement) and "seconds" in e:
            return float(e["seconds"])
    t = shipped_table(gpu_name)
    e = None if t is None else _nearest(t.get("tuned", []), dtype, method, gpus, n, placement)
    return None if e is None or "seconds" not in e else float(e["seconds"]) * (n / e["n"]) ** 3


def choose_method(gpu_name, dtype, gpus, n, placement="three", profile=None):
    """``"3m"`` where measurements say it is faster than ``"native"`` for this case (complex
    dtypes), else ``"native"`` (also without measurements: no guess)."""
    if not str(dtype).startswith("complex"):
        return "native"
    nat = measured_seconds(gpu_name, dtype, "native", gpus, n, placement, profile)
    three = measured_seconds(gpu_name, dtype, "3m", gpus, n, placement, profile)
    return "3m" if nat is not None and three is not None and three < nat else "native"
