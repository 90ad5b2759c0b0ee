"""Shared helpers for benchmark scripts: machine description and result files.

Every result file records the machine, date, command and library versions
(STYLE.md item 12); benchmarks/README.md's tables are generated from these files by
``python benchmarks/make_tables.py``, never typed by hand.
"""
from __future__ import annotations

import datetime as dt
import json
import os
import platform
import sys


def machine() -> dict:
    import numpy
    import scipy
    info = {"host": platform.node(), "platform": platform.platform(),
            "processor": platform.processor() or platform.machine(),
            "cpus": os.cpu_count(), "python": platform.python_version(),
            "numpy": numpy.__version__, "scipy": scipy.__version__}
    try:
        import cupy
        n = cupy.cuda.runtime.getDeviceCount()
        info["cupy"] = cupy.__version__
        info["gpus"] = [cupy.cuda.runtime.getDeviceProperties(d)["name"].decode() for d in range(n)]
    except Exception:
        info["gpus"] = []
    return info


def save(kind: str, payload: dict, out_dir=None) -> str:
    out_dir = out_dir or os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
    os.makedirs(out_dir, exist_ok=True)
    now = dt.datetime.now(dt.timezone.utc)
    doc = {"kind": kind, "date": now.isoformat(timespec="seconds"),
           "command": " ".join([os.path.basename(sys.executable)] + sys.argv),
           "machine": machine(), **payload}
    path = os.path.join(out_dir, f"{kind}_{now.strftime('%Y%m%dT%H%M%S')}.json")
    with open(path, "w") as f:
        json.dump(doc, f, indent=1, default=float)
    return path
