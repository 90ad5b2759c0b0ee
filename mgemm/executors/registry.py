"""The executor registry (STYLE.md item 2): names -> factories, one instance per process.

Kept apart from the package's ``__init__`` so that the executor modules register
themselves without importing the package that imports them (no import circle).
"""
from __future__ import annotations

from typing import Callable, Dict

REGISTRY: Dict[str, Callable[[], object]] = {}
_INSTANCES: Dict[str, object] = {}


def register(name: str):
    def deco(factory):
        REGISTRY[name] = factory
        return factory
    return deco


def get(name: str):
    """The executor registered as ``name`` (one instance per process: the cupy executor
    keeps its streams and band buffers between calls)."""
    if name not in REGISTRY:
        raise ValueError(f"executor must be one of {sorted(REGISTRY)}, got executor={name!r}")
    if name not in _INSTANCES:
        _INSTANCES[name] = REGISTRY[name]()
    return _INSTANCES[name]


def existing(name: str):
    """The executor instance if one was made in this process, else None."""
    return _INSTANCES.get(name)


def last_trace(name: str = "cupy"):
    """Events recorded by the last ``gemm(..., trace=True)`` on that executor."""
    ex = _INSTANCES.get(name)
    return None if ex is None else getattr(ex, "last_trace", None)


def release_buffers():
    """Free the band buffers every executor instance keeps (those that keep any)."""
    for ex in _INSTANCES.values():
        release = getattr(ex, "release", None)
        if release is not None:
            release()
