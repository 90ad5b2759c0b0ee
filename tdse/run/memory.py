"""A run kept in memory (:func:`tdse.simulate` without ``out``): the writer's interface of
:class:`~tdse.run.snapshots.SnapshotWriter`, the same tables, no file."""
from __future__ import annotations

import numpy as np

from .layout import OBSERVABLE_DATASETS, SNAPSHOT_DATASETS, UNITS
from .snapshots import FORMAT, NodeCounter, library_versions, one_row

__all__ = ["MemoryWriter"]


class MemoryWriter:
    """The writer's interface kept in memory (:func:`tdse.simulate` without ``out``):
    :meth:`data` returns what :func:`read` would return for the same run."""

    path = None

    def __init__(self, *, config, x, v0, energies, phi, attrs, extra=None, **_):
        from ..config import to_toml
        from ..version import __version__
        self.f = True
        self.attrs = {"format": FORMAT, "version": __version__, "units": UNITS,
                      "input_toml": config.source, "effective_toml": to_toml(config),
                      "name": config.name, "complete": False, **library_versions(), **attrs}
        self.fixed = {"grid/x": np.asarray(x), "potential/V0": np.asarray(v0),
                      "potential/centre": np.arange(len(config.potential.centres)),
                      "states/n": np.arange(len(energies)), "states/energies": np.asarray(energies),
                      "states/phi": np.asarray(phi)}
        self.snap = {name: [] for name in {**SNAPSHOT_DATASETS, **(extra or {})}}
        self._nodes = NodeCounter(x, config)
        self.groups = {name: g for name, (g, *_) in {**SNAPSHOT_DATASETS, **(extra or {})}.items()}
        self.obs = {name: [] for name in OBSERVABLE_DATASETS}
        self.count = self.obs_count = self.appended = 0
        self.before_write = []

    def append(self, state=None, **row):
        row = {**row, "nodes": self._nodes([row["psi"]])[0]}
        for name in self.snap:
            self.snap[name].append(np.asarray(row[name]))
        self.count += 1
        self.appended += 1

    def observe(self, **row):
        self.observe_block(1, **one_row(row, self.obs).cols)

    def observe_block(self, count, **cols):
        for name in self.obs:
            self.obs[name].extend(np.asarray(cols[name])[:count])
        self.obs_count += count

    def set_attrs(self, **attrs):
        self.attrs.update(attrs)

    def close(self, complete: bool):
        for hook in self.before_write:
            hook(True)
        self.attrs["complete"] = bool(complete)
        self.f = None

    def data(self) -> dict:
        out = {"attrs": dict(self.attrs), **self.fixed}
        for name, rows in self.snap.items():
            out[f"{self.groups[name]}/{name}"] = np.array(rows)
        for name, rows in self.obs.items():
            out[f"observables/{name}"] = np.array(rows)
        out["attrs"]["snapshots_complete"] = self.count
        out["attrs"]["observables_complete"] = self.obs_count
        return out
