"""Reference arrays of every shipped input, made with the code *before* the run-path
refactor (issue #22, commit a130e73) and kept so that a test (tests/test_reference.py)
can show the refactored code gives the same HDF5 datasets to 1e-12 on the CPU.

Each input runs shortened (``CASES``: t_end, and for the N = 8192 GPU showcase a smaller
box) with its own numerics; ``method = "auto"`` is pinned to "dense" (auto's choice
depends on timings).  Run from the repository root:  python tests/data/make_reference.py
"""
from __future__ import annotations

import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

#: input -> changed keys (key, value); every other key as shipped
CASES = {
    "atom_hhg": [("propagator.error_window", 2.0), ("time.t_end", 20.0)],
    "h2plus_moving": [("propagator.error_window", 0.2), ("time.t_end", 1.0)],
    "h2plus_moving_large": [("grid.x_min", -6.4), ("grid.x_max", 6.4),
                            ("propagator.error_window", 0.01), ("time.t_end", 0.05)],
    "h2plus_moving_ramped": [("propagator.error_window", 0.2), ("time.t_end", 1.0)],
    "h2plus_static": [("time.t_end", 2.0), ("propagator.method", "dense")],
    "thesis_fig6": [("propagator.error_window", 0.02), ("time.t_end", 0.2)],
    "tiny": [("propagator.method", "dense")],
    "tiny_operator": [("propagator.method", "chebyshev"), ("propagator.operator", True),
                      ("propagator.error_window", 0.02), ("time.t_end", 0.2)],
}
#: attributes compared besides the datasets (the run's numerics)
ATTRS = ("theta", "truncation_bound", "plan_products", "chebyshev_terms", "method", "scheme",
         "n_points", "steps")


def config_of(case):
    import tdse
    from tdse.config import to_toml, with_value
    name = "tiny" if case == "tiny_operator" else case
    cfg = tdse.load_config(os.path.join(ROOT, "inputs", f"{name}.toml"))
    for key, value in CASES[case]:
        if key == "propagator.error_window" and "time_error" in to_toml(cfg):
            cfg = with_value(cfg, "propagator.time_error", "window")  # #24: a key added later
        cfg = with_value(cfg, key, value)
    return cfg


def arrays(res) -> dict:
    out = {"snapshots/t": res.t, "snapshots/psi": res.psi, "grid/x": res.x,
           "states/energies": res.energies, "states/phi": res.states}
    for k, v in res.observables.items():
        out[f"observables/{k}"] = v
    return out


def main():
    import tdse
    for case in CASES:
        res = tdse.simulate(config_of(case), backend="numpy")
        data = arrays(res)
        attrs = {k: res.attrs[k] for k in ATTRS if k in res.attrs}
        data["attrs"] = np.array(json.dumps(attrs, default=float))
        np.savez_compressed(os.path.join(HERE, f"reference_{case}.npz"), **data)
        print(case, res.x.size, len(res.t), {k: np.shape(v) for k, v in data.items()
                                            if k.startswith("observables/")}.get("observables/norm"))


if __name__ == "__main__":
    sys.exit(main())
