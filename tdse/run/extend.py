"""Runs that continue where a user wants (#55 item 4): a finished run file extended to a
later t_end in a new file, ``tdse run INPUT --continue RUN.h5 --t-end T``.

The new file starts as a copy of RUN.h5 (every snapshot and observation up to its t_end,
its resume slots: psi, the companion's psi, U(t) in operator mode, all settled at the last
snapshot when the run finished), named OUT/<name>_to_<T>.h5, its effective input the old
one with ``time.t_end = T``; it then continues as an interrupted run resumes, from the last
snapshot's step with the same numerics -- so it holds the bits a run of the input to T
would have written (tests/test_extend.py), where the old t_end was a snapshot of that run.
Anything but t_end that differs between INPUT and the run's stored input is refused in
one line naming the first differing key.

An interrupted run resumes with its file's input; one with adaptive steps may change their
control there (:func:`resumed`, ``tdse resume FILE.h5.part --set time.tolerance=1e-6``): a
run stopped because its tolerance needed steps under ``time.dt_min``
(:class:`~tdse.numerics.adaptive.StepTooSmall`) goes on from its last snapshot, the steps
before it as taken, the change recorded in the file (``resumed_with``)."""
from __future__ import annotations

import dataclasses
import json
import os
import shutil

import h5py

from ..config import Config, ConfigError, loads, parse_assignment, to_toml, with_value, with_values
from .snapshots import NotOurFile, open_checked, part_path, readable_attrs, resume_state

__all__ = ["differs", "extension", "resume_input", "resumed", "RESUME_KEYS"]

#: the keys a resumed run may change (:func:`resumed`): its adaptive steps' control
RESUME_KEYS = ("time.tolerance", "time.dt_min")


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


def resumed(work: str, stored: Config, sets, step: int) -> Config:
    """``stored`` (the input of the interrupted run in ``work``, resumed from ``step``) with
    ``sets`` ([(key, value)], keys of :data:`RESUME_KEYS` only) applied, the change written
    into ``work`` (its effective input, and a row of the JSON list ``resumed_with``: the
    step, the values set, the values they replace); ConfigError (one line, nothing written)
    where a key is another or the run has fixed steps."""
    if not sets:
        return stored
    for key, value in sets:
        if key not in RESUME_KEYS:
            raise ConfigError("--set", f"{key}={value}", "a resumed run changes only "
                              f"{' and '.join(RESUME_KEYS)}, its adaptive steps' control; "
                              "the rest is the file's own input")
    if stored.time.tolerance is None:
        raise ConfigError("--set", sets[0][0], "the run in the file has fixed steps (no "
                          "time.tolerance): it resumes as it was made")
    new = with_values(stored, sets)
    was = {k: getattr(stored.time, k.split(".")[1]) for k, _ in sets}
    with h5py.File(work, "r+") as f:
        log = json.loads(str(f.attrs.get("resumed_with", "[]")))
        log.append({"step": int(step), "set": {k: getattr(new.time, k.split(".")[1]) for k, _ in sets},
                    "was": was})
        f.attrs["resumed_with"] = json.dumps(log)
        f.attrs["effective_toml"] = to_toml(new)
    return new


def resume_input(h5file: str, given: Config | None = None, label=None, sets=()):
    """(config, resume state) of the interrupted run in ``h5file``: its own input -- which
    ``given`` (the input file ``label``, `tdse run INPUT --resume`) must be -- with ``sets``
    (KEY=VALUE texts) applied by :func:`resumed`; ConfigError (one line) where it cannot be."""
    try:
        state = resume_state(h5file)
    except NotOurFile as e:
        raise ConfigError("", h5file, str(e)) from None
    try:
        cfg = loads(state["input_toml"])
    except ConfigError as e:
        raise ConfigError("", h5file, f"{h5file}: its stored input is not valid any more: {e}") from None
    if given is not None and differs(given, cfg):   # auto: the method it chose
        raise ConfigError("--resume", h5file, f"the file was written for a different input than "
                          f"{label}; `tdse resume {h5file}` reads its own")
    try:
        return resumed(h5file, cfg, [parse_assignment(s) for s in sets], state["step"]), state
    except ConfigError as e:
        raise ConfigError("", h5file, f"{h5file}: {e}") from None
