"""The input's one error type (STYLE.md item 5): every problem one line naming the key and
its actual value; the CLI prints it and exits with code 2."""
from __future__ import annotations

from typing import Any

__all__ = ["ConfigError"]


class ConfigError(ValueError):
    """Bad input: ``key``, its ``value`` and what is wrong, as one line."""

    def __init__(self, key: str, value: Any, problem: str):
        self.key, self.value, self.problem = key, value, problem
        shown = repr(value)
        if len(shown) > 60:
            shown = shown[:57] + "..."
        super().__init__(f"{key} = {shown}: {problem}" if key else problem)

    def __reduce__(self):
        # (its arguments, not its one-line message: an exception crosses processes by
        # pickle -- a scan's Dask worker -- and had failed to unpickle there, TypeError)
        return type(self), (self.key, self.value, self.problem)
