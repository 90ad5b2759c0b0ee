"""docs/CLI.md, generated from the commands themselves (click's own help: every command,
argument and option with its default), so the reference cannot drift from the code:
`python -m tdse.ui.reference > docs/CLI.md` (a test checks the file is this text)."""
from __future__ import annotations

import click

from .cli import main

__all__ = ["cli_reference"]


def _commands(group, prefix):
    for name in sorted(group.commands):
        cmd = group.commands[name]
        yield f"{prefix} {name}", cmd
        if isinstance(cmd, click.Group):
            yield from _commands(cmd, f"{prefix} {name}")


def cli_reference() -> str:
    """Markdown: each `tdse` command's usage, help and options, as `tdse CMD --help` gives them."""
    out = ["# Command reference", "",
           "Generated from the code (`python -m tdse.ui.reference > docs/CLI.md`); a test fails when "
           "this file and the commands differ.  Atomic units throughout (hbar = m_e = e = 1).  Bad "
           "input is one line naming the key or option and its value, exit code 2.", ""]
    for path, cmd in _commands(main, "tdse"):
        ctx = click.Context(cmd, info_name=path, terminal_width=100, max_content_width=100)
        out += [f"## `{path}`", "", "```", cmd.get_help(ctx).rstrip(), "```", ""]
    return "\n".join(out)


if __name__ == "__main__":
    print(cli_reference(), end="")
