"""What the commands write besides the run files: JSON documents, atomically."""
from __future__ import annotations

import json
import os

__all__ = ["write_json", "plain"]


def write_json(path, doc):
    """Write JSON atomically (a temporary file, then a rename): nothing half-written."""
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1, default=plain)
    os.replace(tmp, path)


def plain(o):
    """NumPy scalars and arrays as JSON numbers and lists (anything else: TypeError)."""
    import numpy as np
    if isinstance(o, (np.integer, np.floating, np.bool_)):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    raise TypeError(f"Object of type {type(o).__name__} is not JSON serializable")
