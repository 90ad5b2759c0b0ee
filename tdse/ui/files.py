"""What the commands write besides the run files: JSON documents, atomically; where they
write, checked before any work (one-line errors, exit code 2)."""
from __future__ import annotations

import json
import os
import sys

import click

__all__ = ["write_json", "plain", "InputError", "check_out", "fresh_outputs", "save_outputs"]


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


class InputError(click.ClickException):
    """One-line error, exit code 2 (no traceback, no usage text)."""
    exit_code = 2

    def show(self, file=None):
        click.echo(f"error: {self.format_message()}", err=True)


def storage_exit(error):
    """A run's file the device refused (:class:`tdse.run.snapshots.StorageError`): its one
    line, exit 2.  Where the device refused the file's close too (``error.unclosed``), at
    once, past the interpreter's teardown, where HDF5's own exit handlers close what is
    still open: the process had died of SIGSEGV after the line about once in 15 runs of
    test_a_disk_filled_by_another_process_leaves_a_file_that_resumes (the writer's h5py
    objects kept from Python's teardown or not), taken to be those handlers on the file
    whose close failed -- 22 runs since, 1 of them unclosed, none crashed: evidence, not
    proof.  The file is as closed as the device let it be: resumable at its last whole
    snapshot."""
    if not error.unclosed:
        raise InputError(str(error.strerror)) from None
    click.echo(f"error: {error.strerror}", err=True)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(InputError.exit_code)


def check_out(out_dir, option="--out"):
    """``out_dir`` must be a folder we can write, or one we can create (one-line errors):
    a file made and removed in it, or in the nearest folder above it that exists (a
    read-only mount, /proc and permissions alike: os.access says yes to root on /proc)."""
    import tempfile
    probe = os.path.abspath(out_dir or ".")
    while not os.path.exists(probe):
        probe = os.path.dirname(probe)
    if not os.path.isdir(probe):
        raise InputError(f"{option} = {out_dir!r}: {probe} is not a folder")
    try:
        with tempfile.TemporaryFile(dir=probe, prefix=".tdse-probe-"):
            pass
    except OSError as e:
        raise InputError(f"{option} = {out_dir!r}: folder {probe} is not writable "
                         f"({e.strerror or e})") from None


#: what a command's JSON and PNG need on disk, at most: the recorded studies' are 0.1-0.4
#: MiB (docs/convergence/, docs/floquet/)
OUTPUTS_BYTES = 1 << 20


def fresh_outputs(out_dir, base, force, exts=(".json", ".png"), room=OUTPUTS_BYTES):
    """Refuse to overwrite BASE.<ext> without --force, an OUT that cannot be written, or one
    without ``room`` bytes free (0: the caller checks its own estimate, as a scan does);
    create OUT (one-line errors, before any work)."""
    from ..config import ConfigError
    from ..run.resources import check_space
    check_out(out_dir)
    try:
        check_space(out_dir, room, "writing " + ", ".join(f"{os.path.basename(base)}{e}"
                                                           for e in exts))
    except ConfigError as e:
        raise InputError(str(e)) from None
    for ext in exts:
        if os.path.exists(base + ext) and not force:
            raise InputError(f"output {base + ext!r} exists; pass --force to overwrite it")
    try:
        os.makedirs(out_dir, exist_ok=True)
    except OSError as e:
        raise InputError(f"--out = {out_dir!r}: cannot create the folder ({e.strerror})") from None


def save_outputs(base, doc, plot, as_json, shown=None) -> bool:
    """BASE.json and BASE.png (``plot(doc, path)``); with --json also print ``shown`` (the
    doc by default) and return True: the caller's table is then not printed."""
    write_json(base + ".json", doc)
    plot(doc, base + ".png")
    if as_json:
        click.echo(json.dumps(doc if shown is None else shown, indent=1, default=plain))
    return as_json
