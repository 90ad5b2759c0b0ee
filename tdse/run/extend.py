"""Runs that continue where a user wants (#55 item 4): a finished run file extended to a
later t_end in a new file, ``tdse run INPUT --continue RUN.h5 --t-end T``.

The new file starts as a copy of RUN.h5 (every snapshot and observation up to its t_end,
its resume slots: psi, the companion's psi, U(t) in operator mode, all settled at the last
snapshot when the run finished), named OUT/<name>_to_<T>.h5, its effective input the old
one with ``time.t_end = T``; it then continues as an interrupted run resumes, from the last
snapshot's step with the same numerics -- so it holds the bits a run of the input to T
would have written (tests/test_extend.py), where the old t_end was a snapshot of that run.
Anything but t_end that differs between INPUT and the run's stored input is refused in
one line naming the first differing key."""
from __future__ import annotations

import dataclasses
import os
import shutil

import h5py

from ..config import Config, ConfigError, loads, to_toml, with_value
from .snapshots import NotOurFile, open_checked, part_path, readable_attrs, resume_state

__all__ = ["differs", "extension"]


def differs(given: Config, stored: Config) -> str | None:
    """The first line where ``given``'s effective input differs from ``stored``'s (None when
    they agree), a given ``method = "auto"`` taken as the method the stored run resolved."""
    from ..numerics.exponentials import is_auto
    if is_auto(given.propagator.method):
        given = dataclasses.replace(given, propagator=dataclasses.replace(
            given.propagator, method=stored.propagator.method))
    a, b = to_toml(given).splitlines(), to_toml(stored).splitlines()
    for x, y in zip(a, b):
        if x != y:
            return f"{x.strip()} here, {y.strip()} in the file"
    return None if len(a) == len(b) else "the inputs' tables differ"


def extension(h5file: str, given: Config | None, t_end: float, out_dir: str, force=False):
    """(config, resume state, work file): RUN.h5 (``h5file``, run from ``given``'s input
    but for ``time.t_end``; None: the file's own) copied to OUT/<name>_to_<t_end>.h5.part, set to continue to
    ``t_end``; ConfigError (one line) when it cannot be."""
    try:
        with open_checked(h5file) as f:
            attrs = readable_attrs(f)
    except (NotOurFile, OSError) as e:
        raise ConfigError("--continue", h5file, f"cannot be read ({e})") from None
    if not bool(attrs.get("complete", False)):
        raise ConfigError("--continue", h5file, "is not a finished run (`tdse resume` continues "
                          "an interrupted one)")
    stored = loads(str(attrs.get("effective_toml", attrs.get("input_toml"))))
    given = stored if given is None else given       # (the API: the file's own input)
    same_end = dataclasses.replace(given, name=stored.name, time=dataclasses.replace(
        given.time, t_end=stored.time.t_end))          # the name and t_end may differ
    diff = differs(same_end, stored)
    if diff:
        raise ConfigError("--continue", h5file, f"was run with other numerics than INPUT: {diff}")
    if not t_end > stored.time.t_end:
        raise ConfigError("--t-end", t_end, f"must be past the run's t_end = {stored.time.t_end}")
    name = f"{stored.name}_to_{t_end:g}".replace("+", "")
    new = with_value(dataclasses.replace(stored, name=name), "time.t_end", float(t_end))
    path = os.path.join(out_dir, f"{name}.h5")
    work = part_path(path)
    for p in (path, work):
        if os.path.exists(p) and not force:
            raise ConfigError("--continue", h5file, f"would write {p}, which exists (--force "
                              "overwrites it)")
    os.makedirs(out_dir, exist_ok=True)
    shutil.copyfile(h5file, work)
    with h5py.File(work, "r+") as f:
        f.attrs["complete"] = False
        f.attrs["effective_toml"] = to_toml(new)
        f.attrs["continued_from"] = os.path.abspath(h5file)
    return new, resume_state(work), work
