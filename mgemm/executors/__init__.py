"""Executors registered by name (STYLE.md item 2).

An executor runs real or complex products C = alpha*A@B + beta*C for one ``Request``.
``numpy`` is one device and a plain matmul; ``emulated`` runs the band schedule of
:mod:`mgemm.schedule` on K virtual CPU devices in a random dependency-respecting order
and checks buffer hazards; ``cupy`` runs the same schedule on real GPUs.
Tests loop over :data:`REGISTRY`.
"""
from __future__ import annotations

from typing import Callable, Dict

REGISTRY: Dict[str, Callable[[], object]] = {}


def register(name: str):
    def deco(factory):
        REGISTRY[name] = factory
        return factory
    return deco


_INSTANCES: Dict[str, object] = {}


def get(name: str):
    """The executor registered as ``name`` (one instance per process: the cupy executor
    keeps its streams and band buffers between calls)."""
    if name not in REGISTRY:
        raise ValueError(f"executor must be one of {sorted(REGISTRY)}, got executor={name!r}")
    if name not in _INSTANCES:
        _INSTANCES[name] = REGISTRY[name]()
    return _INSTANCES[name]


def last_trace(name: str = "cupy"):
    """Events recorded by the last ``gemm(..., trace=True)`` on that executor."""
    ex = _INSTANCES.get(name)
    return None if ex is None else getattr(ex, "last_trace", None)


from . import numpy_exec, emulated  # noqa: E402,F401  (register 'numpy', 'emulated')

try:  # registers 'cupy' where CuPy imports
    from . import cupy_exec  # noqa: F401
except ImportError:
    pass
