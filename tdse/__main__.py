"""python -m tdse: the command line (tdse.ui.cli, entered through tdse.ui.command)."""
from .ui.command import main

main()
