"""Array-module helpers: one code path for NumPy and CuPy (CuPy is optional).

Every algorithm in mgemm is written once against ``xp = get_xp(x)``; nothing here
imports CuPy unless it is installed, so the CPU paths run without it.
"""
from __future__ import annotations

import numpy as np

try:  # CuPy is the optional ``gpu`` extra
    import cupy as _cupy  # type: ignore
except Exception:  # ImportError, or a CUDA library that fails to load
    _cupy = None


def cupy_or_none():
    """The cupy module, or None where it is not installed/usable."""
    return _cupy


def gpu_count() -> int:
    """Number of CUDA devices CuPy can see (0 without CuPy or GPUs)."""
    if _cupy is None:
        return 0
    try:
        return int(_cupy.cuda.runtime.getDeviceCount())
    except Exception:
        return 0


def get_xp(x):
    """The array module (numpy or cupy) that owns ``x``."""
    if _cupy is not None:
        return _cupy.get_array_module(x)
    return np


def is_device_array(x) -> bool:
    return _cupy is not None and isinstance(x, _cupy.ndarray)


def device_of(x):
    """CUDA device id of a CuPy array, None for host arrays."""
    return int(x.device.id) if is_device_array(x) else None


def to_host(x):
    return x.get() if is_device_array(x) else np.asarray(x)


def unit_roundoff(dtype) -> float:
    """u = eps/2 of the real type underlying ``dtype``."""
    return float(np.finfo(np.dtype(dtype)).eps) / 2.0
