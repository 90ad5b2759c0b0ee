"""Executors registered by name (STYLE.md item 2).

An executor runs real or complex products C = alpha*A@B + beta*C for one ``Request``.
``numpy`` is one device and a plain matmul; ``emulated`` runs the band schedule of
:mod:`mgemm.schedule` on K virtual CPU devices in a random dependency-respecting order
and checks buffer hazards; ``cupy`` runs the same schedule on real GPUs.
Tests loop over :data:`REGISTRY`.
"""
from __future__ import annotations

from .registry import REGISTRY, existing, get, last_trace, register, release_buffers
from . import numpy_exec, emulated  # noqa: F401  (register 'numpy', 'emulated')

try:  # registers 'cupy' where CuPy imports
    from . import cupy_exec  # noqa: F401
except ImportError:
    pass

__all__ = ["REGISTRY", "register", "get", "existing", "last_trace", "release_buffers"]
