"""The ``tdse`` command's entry point (``[project.scripts]``, ``python -m tdse``): SIGINT is
the command's from before the CLI's imports (:func:`tdse.run.interrupts.accept_sigint`), so
one that lands in them ends it with one line and exit code 130, not a traceback."""


def main():
    from ..run.interrupts import accept_sigint
    accept_sigint(program=True)
    from .cli import main as cli
    return cli()
